// Hibernation through the official MCP SDK client: a VM whose memory and
// devices go to its checkpoint, with nothing of it left running on the
// host, and that comes back, on vm_resume or on the first call that
// needs it, with its processes, its /tmp, the host's clock and its jobs'
// remaining timeouts.  Run through tests/suites/vms,
// with a real guest under TCG.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as env from '../lib/env.mjs';
import { connect, call, refused, sleep, CALL_TIMEOUT_MS } from
    '../lib/client.mjs';

const NAME = 'hibernate-test';
const COUNTER = 'i=0; while :; do i=$((i+1)); echo $i >/tmp/count; ' +
    'sleep 0.2; done';
let alice, bob, vm, runs = 0;

before(async () => {
	alice = await connect(env.token, 'mcvm-hibernate-test');
	bob = await connect(env.tokenFrom('MCVM_TOKEN2_FILE'));
	vm = (await call(alice, 'vm_create', { request_id: 'hib-create',
	    name: NAME })).vm_id;
});

after(async () => {
	await alice?.callTool({ name: 'vm_destroy',
	    arguments: { vm_id: NAME } }, undefined,
	    { timeout: CALL_TIMEOUT_MS });
	await alice?.close();
	await bob?.close();
});

async function run(command) {
	const r = await call(alice, 'vm_exec', { vm_id: NAME, command,
	    request_id: `hib-run-${++runs}`, wait_seconds: 50 });
	assert.equal(r.state, 'completed', JSON.stringify(r));
	return r.stdout;
}

// The host's processes of the VM: its QEMU and its monitor.
function processes() {
	try {
		return execFileSync('pgrep', ['-f', `guest=${vm}|-i ${vm}`],
		    { encoding: 'utf8' }).trim();
	} catch {
		return '';	// pgrep found none
	}
}

// The guest's wall clock and uptime, and the host's clock then.
async function clocks() {
	const out = await run('date +%s.%N; cut -d" " -f1 /proc/uptime');
	const host = Date.now() / 1000;
	const [wall, up] = out.trim().split('\n').map(Number);
	return { wall, up, host };
}

// vm_status of vm, polled until it is in state (which vm_status does not
// change), or fails after ms.
async function untilState(id, state, ms) {
	let s;
	for (const end = Date.now() + ms; Date.now() < end;) {
		await sleep(500);
		s = await call(alice, 'vm_status', { vm_id: id });
		if (s.state === state)
			break;
	}
	assert.equal(s.state, state);
	return s;
}

async function hibernate(args = {}) {
	const s = await call(alice, 'vm_suspend', { vm_id: NAME, ...args });
	assert.equal(s.state, 'hibernated');
	return s;
}

test('a hibernated VM keeps its processes and /tmp, and nothing of it ' +
    'runs on the host', async () => {
	await run('echo kept >/tmp/note');
	const counter = await call(alice, 'vm_exec', { vm_id: NAME,
	    request_id: 'hib-counter', command: COUNTER });
	await sleep(1000);
	assert.match(await refused(alice, 'vm_suspend', { vm_id: NAME }),
	    /1 job is still running.*force=true/);
	assert.notEqual(processes(), '', 'QEMU and its monitor run');

	const s = await hibernate({ force: true });
	assert.equal(s.suspension.mode, 'hibernate');
	assert.match(s.suspension.why, /vm_suspend/);
	assert.ok(s.suspension.checkpoint_bytes > 0);
	assert.equal(processes(), '', 'no QEMU and no monitor are left');
	const st = await call(alice, 'vm_status', { vm_id: NAME });
	assert.equal(st.state, 'hibernated');
	assert.equal(st.suspension.checkpoint_bytes,
	    s.suspension.checkpoint_bytes);
	// Suspending it again changes nothing; another workspace sees none.
	assert.equal((await hibernate()).state, 'hibernated');
	assert.match(await refused(bob, 'vm_resume', { vm_id: NAME }),
	    /no VM|not found|unknown/i);
	// Looking at it does not wake it.
	const l = await call(alice, 'vm_list', {});
	assert.equal(l.vms.find((x) => x.vm_id === vm).state, 'hibernated');
	assert.match(await refused(alice, 'vm_job_status', { vm_id: NAME,
	    job_id: counter.job_id }), /hibernated: call vm_resume/);
	assert.equal((await call(alice, 'vm_status', { vm_id: NAME })).state,
	    'hibernated');
	assert.equal(processes(), '', 'still nothing runs');

	// Work wakes it: the call runs once the VM is back.
	assert.equal(await run('cat /tmp/note'), 'kept\n');
	const r = await call(alice, 'vm_status', { vm_id: NAME });
	assert.equal(r.state, 'running');
	assert.equal(r.suspension, undefined);
	const j = await call(alice, 'vm_job_status', { vm_id: NAME,
	    job_id: counter.job_id });
	assert.equal(j.state, 'running', 'the counter came back');
	const a = Number(await run('cat /tmp/count'));
	await sleep(1000);
	const b = Number(await run('cat /tmp/count'));
	assert.ok(b > a, `it counts on: ${a} then ${b}`);
	await call(alice, 'vm_job_cancel', { vm_id: NAME,
	    job_id: counter.job_id });
});

test('after 10 s hibernated, and 10 s paused, the guest has the host\'s ' +
    'clock and its uptime did not jump', async () => {
	for (const mode of ['hibernate', 'pause']) {
		const before = await clocks();
		const s = await call(alice, 'vm_suspend', { vm_id: NAME,
		    mode });
		assert.equal(s.state, mode === 'pause' ? 'paused' :
		    'hibernated');
		await sleep(10000);
		await call(alice, 'vm_resume', { vm_id: NAME });
		const now = await clocks();
		assert.ok(Math.abs(now.wall - now.host) < 1, `${mode}: ` +
		    `guest ${now.wall}, host ${now.host}`);
		const up = now.up - before.up;
		assert.ok(up >= 0 && up < now.host - before.host - 8,
		    `${mode}: the uptime went on by ${up} s in ` +
		    `${now.host - before.host} s`);
	}
});

test('a job with a 3 s timeout, frozen 10 s, still runs its remaining ' +
    'time, then times out', async () => {
	const j = await call(alice, 'vm_exec', { vm_id: NAME,
	    request_id: 'hib-timeout', command: 'sleep 60',
	    timeout_seconds: 3 });
	await sleep(1000);
	await hibernate({ force: true });
	await sleep(10000);
	await call(alice, 'vm_resume', { vm_id: NAME });
	const resumed = Date.now();
	const st = await call(alice, 'vm_job_status', { vm_id: NAME,
	    job_id: j.job_id });
	assert.equal(st.state, 'running', 'it had time left');
	const out = await call(alice, 'vm_job_output', { vm_id: NAME,
	    job_id: j.job_id, wait_seconds: 30 });
	assert.equal(out.state, 'timed_out');
	const left = (Date.now() - resumed) / 1000;
	assert.ok(left < 3, `it ran ${left} s more, within its budget`);
});

test('pause then hibernate; vm_start resumes; vm_stop discards the ' +
    'checkpoint', async () => {
	assert.equal((await call(alice, 'vm_suspend', { vm_id: NAME,
	    mode: 'pause' })).state, 'paused');
	await hibernate();
	assert.equal(processes(), '');
	const r = await call(alice, 'vm_start', { vm_id: NAME });
	assert.equal(r.state, 'running');
	assert.equal(await run('cat /tmp/note'), 'kept\n');
	await hibernate();
	const s = await call(alice, 'vm_stop', { vm_id: NAME });
	assert.equal(s.state, 'stopped');
	assert.match(s.reason, /checkpoint was discarded/);
	const b = await call(alice, 'vm_start', { vm_id: NAME });
	assert.equal(b.state, 'running');
	assert.equal(await run('cat /tmp/note 2>/dev/null || echo gone'),
	    'gone\n', 'it booted afresh: /tmp is empty');
});

test('work wakes a paused VM too, and cancelling a frozen job wakes it ' +
    'first', async () => {
	const j = await call(alice, 'vm_exec', { vm_id: NAME,
	    request_id: 'hib-frozen', command: 'sleep 300' });
	assert.equal((await call(alice, 'vm_suspend', { vm_id: NAME,
	    mode: 'pause', force: true })).state, 'paused');
	await call(alice, 'vm_write_file', { vm_id: NAME, path: 'woke.txt',
	    content: 'awake' });
	assert.equal((await call(alice, 'vm_status', { vm_id: NAME })).state,
	    'running');
	await hibernate({ force: true });
	const c = await call(alice, 'vm_job_cancel', { vm_id: NAME,
	    job_id: j.job_id });
	assert.equal(c.state, 'cancelled', JSON.stringify(c));
	assert.equal(await run('cat /workspace/woke.txt'), 'awake');
});

test('idle_seconds: 5 hibernates an idle VM and not one whose job left a ' +
    'process; vm_status does not wake it, vm_exec does', async () => {
	const idle = await call(alice, 'vm_create', { request_id: 'hib-idle',
	    name: 'idle-test', idle_seconds: 5 });
	assert.equal(idle.idle_seconds, 5);
	const busy = await call(alice, 'vm_create', { request_id: 'hib-busy',
	    name: 'busy-test', idle_seconds: 5, idle_mode: 'pause' });
	try {
		// The job ends at once; the process it left runs 12 s more
		// in its cgroup, and keeps the VM awake.
		const left = await call(alice, 'vm_exec', { vm_id: 'busy-test',
		    request_id: 'hib-busy-job', wait_seconds: 30, command:
		    'setsid sleep 12 </dev/null >/dev/null 2>&1 & echo left' });
		assert.equal(left.state, 'completed');
		let s = await untilState('idle-test', 'hibernated', 30000);
		assert.match(s.suspension.why, /after 5 s idle/);
		const b = await call(alice, 'vm_status',
		    { vm_id: 'busy-test' });
		assert.equal(b.state, 'running',
		    'the process its job left keeps it awake');
		assert.equal(b.guest.jobs_active, 1);
		await sleep(2000);
		assert.equal((await call(alice, 'vm_status',
		    { vm_id: 'idle-test' })).state, 'hibernated',
		    'vm_status did not wake it');
		const r = await call(alice, 'vm_exec', { vm_id: 'idle-test',
		    request_id: 'hib-idle-wake', command: 'echo awake',
		    wait_seconds: 50 });
		assert.equal(r.stdout, 'awake\n');
		// The process the busy VM's job left ends: it pauses once idle.
		s = await untilState('busy-test', 'paused', 40000);
		assert.match(s.suspension.why, /paused after 5 s idle/);
	} finally {
		for (const n of [idle.vm_id, busy.vm_id])
			await call(alice, 'vm_destroy', { vm_id: n });
	}
});
