// VMs end to end: the official MCP TypeScript SDK client drives a real
// suite, whose VMs boot the project's guest image under TCG.  Run through
// tests/suites/vms, which checks the host afterwards.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import * as env from '../lib/env.mjs';
import { connect, call, refused, sleep, collect, POLL_MS,
    JOB_WAIT_MS, CALL_TIMEOUT_MS } from '../lib/client.mjs';

let alice, bob, vm;

let execSeq = 0;
async function exec(command, extra = {}) {
	const r = await call(alice, 'vm_exec', {
		vm_id: vm, request_id: `exec-${process.pid}-${++execSeq}`,
		command, ...extra,
	});
	assert.match(r.job_id, /^job-[0-9a-f]{16}$/);
	return r.job_id;
}


async function run(command, extra) {
	return collect(alice, vm, await exec(command, extra));
}

async function waitState(job, pred) {
	const deadline = Date.now() + JOB_WAIT_MS;
	for (;;) {
		const s = await call(alice, 'vm_job_status',
		    { vm_id: vm, job_id: job });
		if (pred(s))
			return s;
		assert.ok(Date.now() < deadline, `job ${job}: ${s.state}`);
		await sleep(POLL_MS);
	}
}

before(async () => {
	alice = await connect(env.token);
	bob = await connect(env.tokenFrom('MCVM_TOKEN2_FILE'));
});

after(async () => {
	await alice?.close();
	await bob?.close();
});

test('vm_create boots a VM that answers', async () => {
	const r = await call(alice, 'vm_create', { request_id: 'create-1' });
	assert.match(r.vm_id, /^vm-[0-9a-f]{16}$/);
	assert.equal(r.state, 'running');
	assert.equal(r.network, 'off');
	assert.equal(r.memory_mib, 512);
	assert.equal(r.vcpus, 1);
	vm = r.vm_id;
	const list = await call(alice, 'vm_list', {});
	assert.deepEqual(list.vms.map((v) => v.vm_id), [vm]);
});

// The suite waited for the template: both VMs start from its checkpoint.
test('VMs from one checkpoint get the host clock and their own randomness',
    async () => {
	const r = await call(alice, 'vm_create', { request_id: 'create-twin',
	    name: 'twin_b.2' });
	try {
		await twins(r.vm_id);
	} finally {
		// A failed check leaves no VM behind for the next tests.
		await call(alice, 'vm_destroy', { vm_id: r.vm_id });
	}
});

async function twins(twin) {
	const probe = 'date +%s; od -An -N16 -tx1 /dev/urandom; ' +
	    'cat /proc/sys/kernel/random/boot_id; ' +
	    'cat /sys/devices/system/clocksource/clocksource0/' +
	    'current_clocksource; hostname; cat /etc/machine-id; ' +
	    'getent hosts "$(hostname)" | cut -d" " -f1; ' +
	    'echo "$HOSTNAME"; echo $RANDOM';
	const a = (await run(probe)).stdout.split('\n');
	const saved = vm;
	vm = twin;
	let b;
	try {
		b = (await run(probe)).stdout.split('\n');
	} finally {
		vm = saved;
	}
	const now = Date.now() / 1000;
	for (const o of [a, b])
		assert.ok(Math.abs(Number(o[0]) - now) < 30,
		    `guest clock ${o[0]}, host ${now}`);
	assert.notEqual(a[1], b[1], 'the two guests drew the same bytes');
	assert.notEqual(a[2], b[2], 'the two guests share a boot id');
	// Each its own name (a VM's name made a host name, else its id) and
	// machine id, and its name resolves.
	assert.equal(a[4], vm);
	assert.equal(b[4], 'twin-b-2');
	for (const o of [a, b]) {
		assert.match(o[5], /^[0-9a-f]{32}$/, `machine id ${o[5]}`);
		assert.equal(o[6], '127.0.1.1', `${o[4]} resolves to ${o[6]}`);
	}
	assert.notEqual(a[5], b[5], 'the two guests share a machine id');
	// The shell that ran it was started in the template (the guest's
	// spare shell): it took the host name and its seed with the command.
	for (const o of [a, b])
		assert.equal(o[7], o[4], `bash's HOSTNAME ${o[7]}`);
	assert.notEqual(a[8], b[8], 'the two shells drew the same $RANDOM');
	// A host with a constant TSC gives its rate to the guests, which
	// would otherwise often fall back to a 4 ms jiffies clock.
	const flags = fs.readFileSync('/proc/cpuinfo', 'utf8')
	    .match(/^flags\s*:(.*)$/m)?.[1] ?? '';
	if (/ constant_tsc\b/.test(flags) && / nonstop_tsc\b/.test(flags))
		for (const o of [a, b])
			assert.match(o[3], /^(tsc|kvm-clock)$/,
			    `guest clocksource ${o[3]}`);
}

test('python3 prints 4', async () => {
	const o = await run("python3 -c 'print(2+2)'");
	assert.equal(o.stdout, '4\n');
	assert.equal(o.stderr, '');
	assert.equal(o.last.state, 'completed');
	assert.equal(o.last.exit_code, 0);
});

test('vm_exec with wait_seconds answers with the result', async () => {
	const r = await call(alice, 'vm_exec', { vm_id: vm,
	    request_id: `wait-${process.pid}-1`, wait_seconds: 50,
	    command: "python3 -c 'print(2+2)'; echo oops >&2; exit 5" });
	assert.equal(r.vm_id, vm);
	assert.match(r.job_id, /^job-[0-9a-f]{16}$/);
	assert.equal(r.state, 'completed');
	assert.equal(r.exit_code, 5);
	assert.equal(r.stdout, '4\n');
	assert.equal(r.stderr, 'oops\n');
	assert.deepEqual(r.next_cursor, { stdout: 2, stderr: 5 });
	// A command that outlasts the wait is answered running.
	const s = await call(alice, 'vm_exec', { vm_id: vm,
	    request_id: `wait-${process.pid}-2`, wait_seconds: 1,
	    command: 'sleep 5; echo late' });
	assert.equal(s.state, 'running');
	assert.equal(s.stdout, '');
	// vm_job_output waits for it to end.
	const o = await call(alice, 'vm_job_output', { vm_id: vm,
	    job_id: s.job_id, wait_seconds: 50 });
	assert.equal(o.state, 'completed');
	assert.equal(o.stdout, 'late\n');
	const msg = await refused(alice, 'vm_exec', { vm_id: vm,
	    request_id: `wait-${process.pid}-3`, command: 'true',
	    wait_seconds: 51 });
	assert.match(msg, /wait_seconds/);
});

test('a Fibonacci script written as a file', async () => {
	const src = 'a, b = 0, 1\nseq = []\nfor _ in range(10):\n' +
	    '    seq.append(a)\n    a, b = b, a + b\n' +
	    'print(", ".join(map(str, seq)))\n';
	const w = await call(alice, 'vm_write_file', { vm_id: vm,
	    path: 'fib.py', content_base64: Buffer.from(src).toString(
	    'base64') });
	assert.equal(w.size, src.length);
	const o = await run('python3 fib.py');
	assert.equal(o.stdout, '0, 1, 1, 2, 3, 5, 8, 13, 21, 34\n');
});

test('stdout and stderr are separate, exit codes reported', async () => {
	const o = await run('echo to-out; echo to-err >&2; exit 3');
	assert.equal(o.stdout, 'to-out\n');
	assert.equal(o.stderr, 'to-err\n');
	assert.equal(o.last.exit_code, 3);
});

test('UTF-8 output cut mid-character across pages', async () => {
	// 8000 three-byte characters: the 16 KiB page ends inside one.
	const o = await run("python3 -c \"print('\u20ac' * 8000)\"");
	assert.equal(o.stdout, '\u20ac'.repeat(8000) + '\n');
	const first = o.pages[0];
	assert.equal(first.next_cursor.stdout % 3, 0,
	    'the page boundary waits for the whole character');
	assert.ok(o.pages.length >= 2, 'more than one page');
	for (const p of o.pages)
		assert.equal(p.decoding_errors.stdout, false);
});

test('invalid UTF-8 becomes U+FFFD and is flagged', async () => {
	const o = await run("printf 'a\\377b\\n'");
	assert.equal(o.stdout, 'a\ufffdb\n');
	assert.ok(o.pages.some((p) => p.decoding_errors.stdout));
});

test('binary output in base64 is exact', async () => {
	const job = await exec("printf '\\000\\377\\200abc'");
	const o = await collect(alice, vm, job, 'base64');
	assert.deepEqual([...o.stdout], [0, 255, 128, 97, 98, 99]);
});

// 1 MiB on stdout, then the error on stderr: of each stream its first and
// last 64 KiB are kept, and the gap is said where it is.
const KEEP = 64 * 1024;
const FLOOD = 'head -c 1048576 /dev/zero | tr "\\0" a; echo "the tail"; ' +
    'echo "error: it broke" >&2; exit 2';

test('a stdout flood keeps the error on stderr and the stdout tail',
    async () => {
	const total = 1048576 + 9;
	const dropped = total - 2 * KEEP;
	const r = await call(alice, 'vm_exec', { vm_id: vm,
	    request_id: `flood-${process.pid}`, command: FLOOD,
	    wait_seconds: 50 });
	assert.equal(r.state, 'completed');
	assert.equal(r.exit_code, 2);
	assert.equal(r.stderr, 'error: it broke\n');
	assert.equal(r.stdout_bytes, total);
	assert.deepEqual(r.truncated,
	    { stdout: { offset: KEEP, dropped_bytes: dropped } });
	const s = await call(alice, 'vm_job_status',
	    { vm_id: vm, job_id: r.job_id });
	assert.deepEqual(s.truncated, r.truncated);

	// Paged through: the head, the mark of the gap, the tail.
	const o = await collect(alice, vm, r.job_id);
	assert.equal(o.stderr, 'error: it broke\n');
	assert.equal(o.stdout, 'a'.repeat(KEEP) +
	    `[mcvm: ${dropped} bytes dropped here]\n` +
	    'a'.repeat(KEEP - 9) + 'the tail\n');
	const skips = o.pages.filter((p) => p.skipped_bytes);
	assert.equal(skips.length, 1, 'one page skips the gap');
	assert.deepEqual(skips[0].skipped_bytes,
	    { stdout: dropped, stderr: 0 });
	assert.equal(o.last.next_cursor.stdout, total);

	// The tail at once, from the cursor the description gives.
	const t = await call(alice, 'vm_job_output', { vm_id: vm,
	    job_id: r.job_id, cursor: { stdout: total - KEEP, stderr: 0 } });
	assert.equal(t.skipped_bytes, undefined);
	assert.equal(t.stdout.length, 16 * 1024);
	assert.equal(t.next_cursor.stdout, total - KEEP + 16 * 1024);

	// In base64 the bytes are exact: the skip is said, not marked.
	const b = await call(alice, 'vm_job_output', { vm_id: vm,
	    job_id: r.job_id, encoding: 'base64',
	    cursor: { stdout: KEEP + 5, stderr: 0 } });
	assert.deepEqual(b.skipped_bytes, { stdout: dropped - 5, stderr: 0 });
	assert.equal(Buffer.from(b.stdout_base64, 'base64').toString(),
	    'a'.repeat(16 * 1024));
});

test('a character cut at the gap does not make invalid text', async () => {
	// 'a' then two-byte characters: both ends of the gap cut one.
	const o = await run("python3 -c \"import sys; sys.stdout.write('a' + " +
	    "'\\u00e9' * 300000 + 'z')\"");
	for (const p of o.pages)
		assert.equal(p.decoding_errors.stdout, false);
	assert.ok(!o.stdout.includes('\ufffd'));
	const dropped = 600002 - 2 * (KEEP - 1);
	assert.deepEqual(o.last.truncated,
	    { stdout: { offset: KEEP - 1, dropped_bytes: dropped } });
	assert.equal(o.stdout, 'a' + '\u00e9'.repeat((KEEP - 2) / 2) +
	    `[mcvm: ${dropped} bytes dropped here]\n` +
	    '\u00e9'.repeat((KEEP - 2) / 2) + 'z');
});

// A wait with a progressToken hears how much output there is, at least
// every 5 s.
test('waiting calls report the bytes of output so far', async () => {
	const seen = [];
	const r = await alice.callTool({ name: 'vm_exec', arguments: {
	    vm_id: vm, request_id: `progress-${process.pid}-1`,
	    command: 'echo hello; sleep 12; echo x', wait_seconds: 20 } },
	    undefined, { timeout: CALL_TIMEOUT_MS,
	    onprogress: (p) => seen.push(p) });
	assert.ok(!r.isError, JSON.stringify(r.content));
	assert.equal(r.structuredContent.state, 'completed');
	assert.equal(r.structuredContent.stdout, 'hello\nx\n');
	const told = seen.filter((p) => /bytes of output so far/.test(
	    p.message));
	assert.ok(told.length >= 2, JSON.stringify(seen));
	assert.ok(told.some((p) => /, 6 bytes of output/.test(p.message)),
	    JSON.stringify(told));
	for (let i = 1; i < seen.length; i++)
		assert.ok(seen[i].progress >= seen[i - 1].progress,
		    JSON.stringify(seen));

	// vm_job_output's wait likewise.
	const job = await exec('sleep 9; echo y');
	const more = [];
	const o = await alice.callTool({ name: 'vm_job_output', arguments: {
	    vm_id: vm, job_id: job, wait_seconds: 20 } }, undefined,
	    { timeout: CALL_TIMEOUT_MS, onprogress: (p) => more.push(p) });
	assert.ok(!o.isError, JSON.stringify(o.content));
	assert.equal(o.structuredContent.stdout, 'y\n');
	assert.ok(more.some((p) => /bytes of output so far/.test(p.message)),
	    JSON.stringify(more));
});

test('generated C compiles with gcc and runs', async () => {
	const src = '#include <stdio.h>\nint main(void) {\n' +
	    '\tlong s = 0;\n\tfor (int i = 1; i <= 100; i++) s += i;\n' +
	    '\tprintf("sum=%ld\\n", s);\n\treturn 0;\n}\n';
	await call(alice, 'vm_write_file', { vm_id: vm, path: 'sum.c',
	    content_base64: Buffer.from(src).toString('base64') });
	const o = await run('gcc -O2 -o sum sum.c && ./sum');
	assert.equal(o.stderr, '');
	assert.equal(o.stdout, 'sum=5050\n');
});

// Counts the guest's "sleep 7777" and "sleep 8888" processes from /proc.
const COUNT_SLEEPS = "for p in /proc/[0-9]*; do tr '\\0' ' ' " +
    "< $p/cmdline 2>/dev/null; echo; done | grep -cE '^sleep (7777|8888) $'" +
    ' || true';

test('cancel kills setsid descendants too', async () => {
	const job = await exec('setsid sleep 7777 & sleep 8888');
	await sleep(1500);
	const before = await run(COUNT_SLEEPS);
	assert.equal(before.stdout.trim(), '2');
	const c = await call(alice, 'vm_job_cancel', { vm_id: vm,
	    job_id: job });
	assert.ok(['cancelled', 'running'].includes(c.state));
	await waitState(job, (s) => s.state === 'cancelled');
	const left = await run(COUNT_SLEEPS);
	assert.equal(left.stdout.trim(), '0');
});

test('a job timeout kills the job', async () => {
	const job = await exec('sleep 60', { timeout_seconds: 2 });
	const s = await waitState(job, (x) => x.state !== 'running');
	assert.equal(s.state, 'timed_out');
	assert.equal(s.timed_out, true);
});

test('files round-trip byte for byte', async () => {
	const data = Buffer.alloc(4096);
	for (let i = 0; i < data.length; i++)
		data[i] = (i * 7 + 3) & 0xff;
	await call(alice, 'vm_write_file', { vm_id: vm, path: 'dir-less.bin',
	    content_base64: data.toString('base64') });
	const r = await call(alice, 'vm_read_file', { vm_id: vm,
	    path: 'dir-less.bin' });
	assert.equal(r.eof, true);
	assert.deepEqual(Buffer.from(r.content_base64, 'base64'), data);
	await call(alice, 'vm_write_file', { vm_id: vm, path: 'dir-less.bin',
	    content_base64: Buffer.from('tail').toString('base64'),
	    append: true });
	const r2 = await call(alice, 'vm_read_file', { vm_id: vm,
	    path: 'dir-less.bin', offset: 4096 });
	assert.equal(r2.encoding, 'utf-8');
	assert.equal(r2.content, 'tail');
	assert.equal(r2.size, 4100, 'the whole file, read at any offset');
	assert.equal(r.encoding, 'base64');
	assert.equal(r.content, undefined);
});

test('text files: new directories, absolute paths, cut characters',
    async () => {
	const w = await call(alice, 'vm_write_file', { vm_id: vm,
	    path: '/workspace/pkg/src/mod/a.py',
	    content: 'print("h\u00e9 \u20ac")\n' });
	assert.equal(w.written, 17);
	assert.equal(w.size, 17);
	const o = await run('python3 pkg/src/mod/a.py && ' +
	    'stat -c %u pkg pkg/src pkg/src/mod/a.py');
	assert.equal(o.stdout, 'h\u00e9 \u20ac\n1000\n1000\n1000\n');
	const r = await call(alice, 'vm_read_file', { vm_id: vm,
	    path: 'pkg/src/mod/a.py' });
	assert.equal(r.encoding, 'utf-8');
	assert.equal(r.content, 'print("h\u00e9 \u20ac")\n');
	assert.equal(r.eof, true);
	assert.equal(r.next_offset, 17);
	// 13 bytes end inside the euro sign: it waits for the next call.
	const c1 = await call(alice, 'vm_read_file', { vm_id: vm,
	    path: 'pkg/src/mod/a.py', max_bytes: 13 });
	assert.equal(c1.content, 'print("h\u00e9 ');
	assert.equal(c1.bytes, 11);
	assert.equal(c1.next_offset, 11);
	assert.equal(c1.eof, false);
	assert.equal(c1.size, 17);
	const c2 = await call(alice, 'vm_read_file', { vm_id: vm,
	    path: 'pkg/src/mod/a.py', offset: c1.next_offset });
	assert.equal(c2.content, '\u20ac")\n');
	assert.equal(c2.eof, true);
	const b = await call(alice, 'vm_read_file', { vm_id: vm,
	    path: '/workspace/pkg/src/mod/a.py', encoding: 'base64' });
	assert.equal(b.encoding, 'base64');
	assert.equal(Buffer.from(b.content_base64, 'base64').toString(),
	    r.content);
	// An empty file is text too.
	await call(alice, 'vm_write_file', { vm_id: vm,
	    path: 'pkg/src/__init__.py', content: '' });
	const e = await call(alice, 'vm_read_file', { vm_id: vm,
	    path: 'pkg/src/__init__.py' });
	assert.equal(e.content, '');
	assert.equal(e.size, 0);
	assert.equal(e.eof, true);
});

test('vm_write_file takes exactly one of content and content_base64',
    async () => {
	const both = await refused(alice, 'vm_write_file', { vm_id: vm,
	    path: 'x.txt', content: 'x', content_base64: 'eA==' });
	assert.match(both, /not both/);
	const none = await refused(alice, 'vm_write_file', { vm_id: vm,
	    path: 'x.txt' });
	assert.match(none, /content_base64/);
	const o = await run('test -e x.txt || echo none');
	assert.equal(o.stdout, 'none\n');
});

test('vm_list_files shows a tree without a shell', async () => {
	await run('mkdir -p pkg/tests && chmod 700 pkg/tests && ' +
	    'ln -s /etc pkg/etc');
	const l = await call(alice, 'vm_list_files', { vm_id: vm,
	    path: 'pkg', depth: 3 });
	assert.equal(l.truncated, false);
	assert.deepEqual(l.entries.map((e) => [e.name, e.type]), [
		['etc', 'symlink'], ['src', 'dir'], ['src/__init__.py', 'file'],
		['src/mod', 'dir'], ['src/mod/a.py', 'file'], ['tests', 'dir'],
	]);
	const a = l.entries.find((e) => e.name === 'src/mod/a.py');
	assert.equal(a.size, 17);
	assert.equal(a.mode, '0644');
	assert.ok(Math.abs(a.mtime - Date.now() / 1000) < 3600, 'mtime');
	assert.equal(l.entries.find((e) => e.name === 'tests').mode, '0700');
	const top = await call(alice, 'vm_list_files', { vm_id: vm });
	assert.equal(top.path, '.');
	assert.ok(top.entries.some((e) => e.name === 'pkg' &&
	    e.type === 'dir'));
	assert.ok(!top.entries.some((e) => e.name.includes('/')));
	const abs = await call(alice, 'vm_list_files', { vm_id: vm,
	    path: '/workspace/pkg/src', depth: 1 });
	assert.deepEqual(abs.entries.map((e) => e.name),
	    ['__init__.py', 'mod']);
	const link = await refused(alice, 'vm_list_files', { vm_id: vm,
	    path: 'pkg/etc' });
	assert.match(link, /symbolic link/);
	const file = await refused(alice, 'vm_list_files', { vm_id: vm,
	    path: 'pkg/src/mod/a.py' });
	assert.match(file, /not a directory/);
});

test('a symlink out of /workspace is refused', async () => {
	await run('ln -sf /etc/passwd escape');
	const msg = await refused(alice, 'vm_read_file', { vm_id: vm,
	    path: 'escape' });
	assert.match(msg, /refused/);
	const msg2 = await refused(alice, 'vm_write_file', { vm_id: vm,
	    path: 'escape', content_base64: 'eA==' });
	assert.match(msg2, /refused/);
});

test('pause and resume keep a process alive', async () => {
	const job = await exec("python3 -u -c 'import time\n" +
	    "for i in range(100000):\n print(i)\n time.sleep(0.2)'");
	await sleep(2000);
	const p = await call(alice, 'vm_suspend', { vm_id: vm,
	    mode: 'pause', force: true });
	assert.equal(p.state, 'paused');
	const st = await call(alice, 'vm_status', { vm_id: vm });
	assert.equal(st.state, 'paused');
	assert.equal(st.qmp.status, 'paused');
	const bytes = (await call(alice, 'vm_list', {})).vms[0].state;
	assert.equal(bytes, 'paused');
	// vm_job_status does not wake it.
	assert.match(await refused(alice, 'vm_job_status', { vm_id: vm,
	    job_id: job }), /paused: call vm_resume/);
	const r = await call(alice, 'vm_resume', { vm_id: vm });
	assert.equal(r.state, 'running');
	const before = await call(alice, 'vm_job_status', { vm_id: vm,
	    job_id: job });
	assert.equal(before.state, 'running');
	await sleep(1500);
	const later = await call(alice, 'vm_job_status', { vm_id: vm,
	    job_id: job });
	assert.equal(later.state, 'running');
	assert.ok(later.stdout_bytes > before.stdout_bytes,
	    'the process went on after resume');
	await call(alice, 'vm_job_cancel', { vm_id: vm, job_id: job });
});

test('a request_id replays its result, and conflicts are refused',
    async () => {
	const args = { vm_id: vm, request_id: 'replay-1',
	    command: 'echo once >> replay.txt' };
	const a = await call(alice, 'vm_exec', args);
	const b = await call(alice, 'vm_exec', args);
	assert.equal(b.job_id, a.job_id);
	await waitState(a.job_id, (s) => s.state !== 'running');
	const o = await run('cat replay.txt');
	assert.equal(o.stdout, 'once\n', 'the command ran once');
	const msg = await refused(alice, 'vm_exec', { ...args,
	    command: 'echo twice' });
	assert.match(msg, /other arguments/);
	const c = await call(alice, 'vm_create', { request_id: 'create-1' });
	assert.equal(c.vm_id, vm, 'vm_create replays too');
	const msg2 = await refused(alice, 'vm_create',
	    { request_id: 'create-1', memory_mib: 256 });
	assert.match(msg2, /other arguments/);
});

test('another workspace cannot reach the VM through any tool', async () => {
	const status = await call(alice, 'vm_status', { vm_id: vm });
	const job = status.jobs[0].job_id;
	const ghost = 'vm-0000000000000000';
	const tools = {
		vm_status: {}, vm_stop: {}, vm_start: {}, vm_destroy: {},
		vm_suspend: { mode: 'pause' }, vm_resume: {},
		vm_exec: { request_id: 'steal-1', command: 'id' },
		vm_job_status: { job_id: job }, vm_job_output: { job_id: job },
		vm_job_cancel: { job_id: job },
		vm_read_file: { path: 'fib.py' },
		vm_write_file: { path: 'x', content_base64: 'eA==' },
		vm_list_files: {},
	};
	for (const [name, extra] of Object.entries(tools)) {
		const theirs = await refused(bob, name, { vm_id: vm, ...extra });
		const none = await refused(bob, name, { vm_id: ghost,
		    ...extra });
		assert.equal(theirs.replace(vm, 'ID'), none.replace(ghost, 'ID'),
		    `${name}: a foreign VM looks like a missing one`);
	}
	assert.deepEqual((await call(bob, 'vm_list', {})).vms, []);
	const still = await call(alice, 'vm_status', { vm_id: vm });
	assert.equal(still.state, 'running');
});

test('vm_stop and vm_start keep the disk', async () => {
	await call(alice, 'vm_write_file', { vm_id: vm, path: 'keep.txt',
	    content_base64: Buffer.from('kept').toString('base64') });
	await run('sync');
	const s = await call(alice, 'vm_stop', { vm_id: vm });
	assert.equal(s.state, 'stopped');
	const r = await call(alice, 'vm_start', { vm_id: vm });
	assert.equal(r.state, 'running');
	const o = await run('cat keep.txt');
	assert.equal(o.stdout, 'kept');
});

test('vm_destroy removes the VM', async () => {
	const d = await call(alice, 'vm_destroy', { vm_id: vm });
	assert.equal(d.destroyed, true);
	assert.deepEqual((await call(alice, 'vm_list', {})).vms, []);
	const msg = await refused(alice, 'vm_status', { vm_id: vm });
	assert.match(msg, /no VM/);
});
