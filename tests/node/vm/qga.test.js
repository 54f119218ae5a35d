// A VM from a workspace's own disk whose guest runs qemu-guest-agent and
// no mcvm agent, end to end through the official MCP SDK client: the
// test guest (tests/image-qga, make image) uploaded as a workspace
// image, its agent named in vm_status, commands with their output, exit
// code and timeout, a cancel, files written, read back and listed, what
// QGA cannot do said plainly, the agent channel synced again after an answer
// too large for the monitor, and vm_stop through guest-shutdown.
// Run through tests/suites/vms, with a real guest under TCG.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as env from '../lib/env.mjs';
import { connect, call, refused, sleep, collect, CALL_TIMEOUT_MS } from
    '../lib/client.mjs';

const IMAGE = fileURLToPath(new URL('../../../build/image-qga/qga.qcow2',
    import.meta.url));
const UP_MS = 300000;		// against a hang only: TCG boots are slow
const VM = 'qga-vm';
let alice;

before(async () => {
	assert.ok(fs.existsSync(IMAGE), `${IMAGE} missing: make image`);
	alice = await connect(env.token, 'mcvm-qga-test');
});

after(async () => {
	await alice?.callTool({ name: 'vm_destroy',
	    arguments: { vm_id: VM } }, undefined,
	    { timeout: CALL_TIMEOUT_MS });
	await alice?.callTool({ name: 'image_delete',
	    arguments: { name: 'qga-disk' } });
	await alice?.close();
});

// Until f() answers without throwing (the agent may not answer yet).
async function until(what, f) {
	const deadline = Date.now() + UP_MS;
	for (;;) {
		try {
			return await f();
		} catch (e) {
			assert.ok(Date.now() < deadline, `${what}: ${e.message}`);
		}
		await sleep(1000);
	}
}

async function exec(command, more = {}) {
	return call(alice, 'vm_exec', { vm_id: VM, request_id:
	    `qga-${Math.random().toString(16).slice(2)}`, command,
	    wait_seconds: 45, ...more });
}

test('the test guest, a workspace image, boots with its agent named',
    async () => {
	const u = await call(alice, 'image_upload_url', { name: 'qga-disk' });
	const data = fs.readFileSync(IMAGE);
	const r = await fetch(new URL(u.path, env.url), { method: 'PUT',
	    headers: { 'Content-Length': String(data.length) }, body: data });
	assert.equal(r.status, 201, await r.clone().text());
	assert.equal((await r.json()).format, 'qcow2');

	const v = await call(alice, 'vm_create', { request_id: 'qga-create',
	    name: VM, disks: ['qga-disk'], memory_mib: 256 });
	assert.equal(v.state, 'running');
	assert.deepEqual(v.disks, ['qga-disk']);

	// Running before its agent answers; then vm_status names it.
	const s = await until('qemu-guest-agent answers', async () => {
		const st = await call(alice, 'vm_status', { vm_id: VM });
		if (st.guest === undefined)
			throw new Error(`no guest yet: ${JSON.stringify(st)}`);
		return st;
	});
	assert.equal(s.agent, true);
	assert.equal(s.guest.agent, 'qga');
	assert.match(s.guest.agent_version, /^qemu-guest-agent \d+\.\d+/);
	assert.match(s.guest.os, /^Debian GNU\/Linux/);
	assert.match(s.guest.kernel, /cloud-amd64$/);
	assert.equal(s.qmp.running, true);
});

test('vm_exec through qemu-guest-agent: output, stderr, exit code',
    async () => {
	const u = await exec('uname -a');
	assert.equal(u.state, 'completed');
	assert.equal(u.exit_code, 0);
	assert.match(u.stdout, /^Linux qga-guest .* x86_64 GNU\/Linux\n$/);
	assert.equal(u.stderr, '');

	const e = await exec('pwd; echo out; echo err >&2; exit 7');
	assert.equal(e.state, 'completed');
	assert.equal(e.exit_code, 7);
	assert.equal(e.stdout, '/workspace\nout\n');
	assert.equal(e.stderr, 'err\n');
	assert.equal(e.stdout_bytes, 15);
	assert.equal(e.stderr_bytes, 4);

	// cwd, stdin, and a job read later with vm_job_output.
	await exec('mkdir -p /workspace/sub');
	const j = await call(alice, 'vm_exec', { vm_id: VM,
	    request_id: 'qga-later', command: 'pwd; cat', cwd: 'sub',
	    stdin: 'from stdin\n' });
	assert.equal(j.state, 'running');
	const out = await collect(alice, VM, j.job_id);
	assert.equal(out.last.state, 'completed');
	assert.equal(out.stdout, '/workspace/sub\nfrom stdin\n');
	const st = await call(alice, 'vm_job_status',
	    { vm_id: VM, job_id: j.job_id });
	assert.equal(st.exit_code, 0);
});

test('a job timeout and a cancel, through the guest\'s timeout and kill',
    async () => {
	const t = await exec('echo started; sleep 60', { timeout_seconds: 2,
	    wait_seconds: 30 });
	assert.equal(t.state, 'timed_out');
	assert.equal(t.timed_out, true);
	assert.equal(t.exit_code, null);
	assert.equal(t.stdout, 'started\n');
	assert.ok(t.runtime_ms >= 2000 && t.runtime_ms < 30000,
	    `${t.runtime_ms} ms`);

	const j = await call(alice, 'vm_exec', { vm_id: VM,
	    request_id: 'qga-cancel', command: 'sleep 60' });
	const c = await call(alice, 'vm_job_cancel',
	    { vm_id: VM, job_id: j.job_id });
	assert.equal(c.state, 'cancelled');
	const out = await collect(alice, VM, j.job_id);
	assert.equal(out.last.state, 'cancelled');
	assert.ok(out.last.runtime_ms < 30000, `${out.last.runtime_ms} ms`);
});

test('files written and read back through guest-file-*', async () => {
	const w = await call(alice, 'vm_write_file', { vm_id: VM,
	    path: 'a.txt', content: 'hello qga\n' });
	assert.equal(w.written, 10);
	assert.equal(w.size, 10);
	const a = await call(alice, 'vm_write_file', { vm_id: VM,
	    path: '/workspace/a.txt', content: 'more\n', append: true });
	assert.equal(a.size, 15);
	const r = await call(alice, 'vm_read_file', { vm_id: VM,
	    path: 'a.txt' });
	assert.equal(r.content, 'hello qga\nmore\n');
	assert.equal(r.encoding, 'utf-8');
	assert.equal(r.size, 15);
	assert.equal(r.eof, true);
	const part = await call(alice, 'vm_read_file', { vm_id: VM,
	    path: 'a.txt', offset: 6, max_bytes: 3 });
	assert.equal(part.content, 'qga');
	assert.equal(part.eof, false);
	assert.equal(part.next_offset, 9);

	const bytes = Buffer.from([0, 1, 2, 255, 254]);
	await call(alice, 'vm_write_file', { vm_id: VM, path: 'b.bin',
	    content_base64: bytes.toString('base64') });
	const b = await call(alice, 'vm_read_file', { vm_id: VM,
	    path: 'b.bin' });
	assert.equal(b.encoding, 'base64');
	assert.deepEqual(Buffer.from(b.content_base64, 'base64'), bytes);
	// The guest sees what was written.
	assert.equal((await exec('cat /workspace/a.txt')).stdout,
	    'hello qga\nmore\n');

	// What qemu-guest-agent cannot do is said, with what to do instead.
	assert.match(await refused(alice, 'vm_read_file', { vm_id: VM,
	    path: 'missing.txt' }), /No such file/);
	assert.match(await refused(alice, 'vm_write_file', { vm_id: VM,
	    path: 'no/dir/c.txt', content: 'x' }), /mkdir -p/);

	// A listing, by the guest's find: sorted by name, level by level.
	await exec('mkdir -p /workspace/d/e && ln -sf a.txt /workspace/l && ' +
	    'echo x > /workspace/d/e/f');
	const l = await call(alice, 'vm_list_files', { vm_id: VM });
	assert.equal(l.truncated, false);
	const names = l.entries.map((e) => e.name);
	assert.deepEqual(names, ['a.txt', 'b.bin', 'd', 'l', 'sub']);
	const at = l.entries.find((e) => e.name === 'a.txt');
	assert.equal(at.type, 'file');
	assert.equal(at.size, 15);
	assert.equal(l.entries.find((e) => e.name === 'l').type, 'symlink');
	assert.equal(l.entries.find((e) => e.name === 'd').type, 'dir');
	const deep = await call(alice, 'vm_list_files', { vm_id: VM,
	    path: 'd', depth: 3 });
	assert.deepEqual(deep.entries.map((e) => e.name),
	    ['e', 'e/f']);
	assert.match(await refused(alice, 'vm_list_files', { vm_id: VM,
	    path: 'nowhere' }), /cannot list the directory.*nowhere/);
});

test('an answer too large for the monitor: the job fails, the channel ' +
    'syncs again', async () => {
	// 600 KB of output: 800 KB of base64 in one guest-exec-status.
	const big = await exec('head -c 600000 /dev/zero | tr "\\0" a');
	assert.equal(big.state, 'failed');
	assert.match(big.stderr, /more than the monitor takes from /);
	// The agent answers again once synced.
	const again = await until('the agent after its resync', () =>
	    exec('echo back'));
	assert.equal(again.stdout, 'back\n');
	const s = await call(alice, 'vm_status', { vm_id: VM });
	assert.equal(s.guest.agent, 'qga');
	assert.ok(s.jobs.some((j) => j.state === 'failed'));
});

test('vm_stop powers the guest off through guest-shutdown', async () => {
	const r = await call(alice, 'vm_stop', { vm_id: VM });
	assert.equal(r.state, 'stopped');
	const s = await call(alice, 'vm_status', { vm_id: VM });
	assert.equal(s.state, 'stopped');
	assert.equal(s.agent, false);
});
