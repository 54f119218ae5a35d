// vm_fork through the official MCP SDK client: new VMs from a running
// VM's state at one instant, which see its files and its running
// processes (and their jobs) as they were, each with its own identity,
// and which then diverge from it and from each other.  All or nothing
// within the workspace's quotas; a foreign VM is not found.  Run through
// tests/suites/vms, with a real guest under TCG.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as env from '../lib/env.mjs';
import { connect, call, refused, sleep, CALL_TIMEOUT_MS } from
    '../lib/client.mjs';

const SRC = 'fork-src';
const NAMES = ['fork-a', 'fork-b'];
const COUNTER = 'i=0; while :; do i=$((i+1)); echo $i >/tmp/count; ' +
    'sleep 0.1; done';
let alice, bob, src, job, runs = 0, forked;

before(async () => {
	alice = await connect(env.token, 'mcvm-fork-test');
	bob = await connect(env.tokenFrom('MCVM_TOKEN2_FILE'));
	src = (await call(alice, 'vm_create', { request_id: 'fork-create',
	    name: SRC })).vm_id;
});

after(async () => {
	for (const vm of [SRC, ...NAMES])
		await alice?.callTool({ name: 'vm_destroy',
		    arguments: { vm_id: vm } }, undefined,
		    { timeout: CALL_TIMEOUT_MS });
	await alice?.close();
	await bob?.close();
});

async function run(vm, command) {
	const r = await call(alice, 'vm_exec', { vm_id: vm, command,
	    request_id: `fork-run-${++runs}`, wait_seconds: 50 });
	assert.equal(r.state, 'completed', JSON.stringify(r));
	return r.stdout;
}

const count = async (vm) => Number(await run(vm, 'cat /tmp/count'));

// The workspace's VMs, once no creation or destruction is under way.
async function settled() {
	let l;
	for (const end = Date.now() + 30000; Date.now() < end;) {
		l = (await call(alice, 'vm_list', {})).vms;
		if (l.every((v) => v.state === 'running'))
			break;
		await sleep(300);
	}
	return l.map((v) => v.name).sort();
}

test('a fork\'s VMs start from the source\'s files, processes and jobs ' +
    'at the fork', async () => {
	await call(alice, 'vm_write_file', { vm_id: SRC, path: 'before.txt',
	    content: 'written before the fork\n' });
	job = (await call(alice, 'vm_exec', { vm_id: SRC, command: COUNTER,
	    request_id: 'fork-counter' })).job_id;
	await sleep(1500);
	const atFork = await count(SRC);
	assert.ok(atFork > 0);
	forked = await call(alice, 'vm_fork', { vm_id: SRC, count: 2,
	    names: NAMES, request_id: 'fork-1' });
	assert.equal(forked.source_vm_id, src);
	assert.equal(typeof forked.paused_ms, 'number');
	assert.deepEqual(forked.vms.map((v) => v.name), NAMES);
	for (const v of forked.vms) {
		assert.equal(v.state, 'running');
		assert.notEqual(v.vm_id, src);
		assert.equal(v.memory_mib, (await call(alice, 'vm_status',
		    { vm_id: SRC })).memory_mib);
	}
	for (const name of NAMES) {
		const r = await call(alice, 'vm_read_file', { vm_id: name,
		    path: 'before.txt' });
		assert.equal(r.content, 'written before the fork\n');
		// The counter ran on from where it was, not from 1.
		const a = await count(name);
		assert.ok(a >= atFork, `${name}: ${a} < ${atFork}`);
		await sleep(600);
		assert.ok(await count(name) > a, `${name}: its counter stopped`);
		// Its job is the source's, under the same id, still running.
		const s = await call(alice, 'vm_job_status', { vm_id: name,
		    job_id: job });
		assert.equal(s.state, 'running', JSON.stringify(s));
	}
	assert.equal((await call(alice, 'vm_job_status', { vm_id: SRC,
	    job_id: job })).state, 'running');
	// A retry with the request_id is the first result.
	const again = await call(alice, 'vm_fork', { vm_id: SRC, count: 2,
	    names: NAMES, request_id: 'fork-1' });
	assert.deepEqual(again.vms.map((v) => v.vm_id),
	    forked.vms.map((v) => v.vm_id));
});

test('a fork\'s VMs each have their own identity, disk and memory',
    async () => {
	const ids = {}, seen = new Set();
	for (const vm of [SRC, ...NAMES]) {
		const [host, mid, rnd] = (await run(vm, 'hostname; cat ' +
		    '/etc/machine-id; head -c 16 /dev/urandom | od -An -tx1 | ' +
		    'tr -d " \\n"')).trim().split('\n');
		ids[vm] = { host, mid, rnd };
		for (const k of [mid, rnd]) {
			assert.ok(!seen.has(k), `${vm}: ${k} seen before`);
			seen.add(k);
		}
	}
	assert.deepEqual(NAMES.map((n) => ids[n].host), NAMES);
	assert.equal(ids[SRC].host, SRC);
	// What each writes, on its disk or in its memory, is its own.
	for (const vm of [SRC, ...NAMES])
		await run(vm, `echo ${vm} >/workspace/mine; echo ${vm} >/tmp/mine`);
	for (const vm of [SRC, ...NAMES])
		assert.equal(await run(vm, 'cat /workspace/mine /tmp/mine'),
		    `${vm}\n${vm}\n`);
	// One maps the fork's RAM file copy-on-write: it hibernates relative
	// to it (a few MiB, not its whole RAM), and wakes with its memory.
	const h = await call(alice, 'vm_suspend', { vm_id: NAMES[1],
	    force: true });
	assert.equal(h.state, 'hibernated', JSON.stringify(h));
	assert.ok(h.suspension.checkpoint_bytes < 32 * 2 ** 20,
	    JSON.stringify(h.suspension));
	assert.equal(await run(NAMES[1], 'cat /workspace/mine /tmp/mine'),
	    `${NAMES[1]}\n${NAMES[1]}\n`);
	await call(alice, 'vm_job_cancel', { vm_id: NAMES[0], job_id: job });
	await sleep(500);
	assert.equal((await call(alice, 'vm_job_status', { vm_id: SRC,
	    job_id: job })).state, 'running', 'a clone cancelled the source\'s');
});

test('vm_fork refuses what it cannot do, and keeps nothing of it',
    async () => {
	const before = await settled();
	let msg = await refused(alice, 'vm_fork', { vm_id: SRC, count: 2,
	    names: ['only-one'], request_id: 'fork-bad-1' });
	assert.match(msg, /one name per new VM/);
	msg = await refused(alice, 'vm_fork', { vm_id: SRC, count: 1,
	    names: [NAMES[0]], request_id: 'fork-bad-2' });
	assert.match(msg, /already has a VM named fork-a/);
	// Over the workspace's VM quota: none of the new VMs is kept.
	msg = await refused(alice, 'vm_fork', { vm_id: SRC, count: 8,
	    request_id: 'fork-bad-3' });
	assert.match(msg, /limit/);
	assert.match(msg, /No new VM was kept/);
	assert.deepEqual(await settled(), before);
	// Another workspace's VM is not found.
	msg = await refused(bob, 'vm_fork', { vm_id: src,
	    request_id: 'fork-bob' });
	assert.match(msg, /no VM|not found/i);
});
