// Live snapshots of a VM (its disk a qcow2 overlay in tests/suites/vms,
// a raw reflink clone in tests/suites/reflink), through the official MCP
// SDK client: a file in /workspace and a counter process
// are changed after a snapshot and are as they were once it is
// restored, the counter going on from the value it held.  The counter
// counts only when told to (a tick file), so that every value it holds
// is the test's doing.  Run through tests/suites/vms, with a real guest
// under TCG.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as env from '../lib/env.mjs';
import { connect, call, refused, sleep, CALL_TIMEOUT_MS } from
    '../lib/client.mjs';

const NAME = 'snapshot-test';
const DEADLINE_MS = 60000;
const NOTE = '/workspace/note.txt';
const COUNT = '/workspace/count';
const TICK = '/workspace/tick';
let agent, counter;

before(async () => {
	agent = await connect(env.token, 'mcvm-snapshot-test');
	await call(agent, 'vm_create', { request_id: 'snapshot-create',
	    name: NAME });
});

after(async () => {
	if (agent) {
		await agent.callTool({ name: 'vm_destroy',
		    arguments: { vm_id: NAME } }, undefined,
		    { timeout: CALL_TIMEOUT_MS });
		await agent.close();
	}
});

async function read(path) {
	return (await call(agent, 'vm_read_file', { vm_id: NAME,
	    path })).content;
}

async function write(path, content) {
	await call(agent, 'vm_write_file', { vm_id: NAME, path, content });
}

// Whether path is there yet (a short wait when it is not).
async function exists(path) {
	const r = await agent.callTool({ name: 'vm_read_file',
	    arguments: { vm_id: NAME, path } }, undefined,
	    { timeout: CALL_TIMEOUT_MS });
	if (r.isError)
		await sleep(200);
	return !r.isError;
}

// One tick: the counter counts once and says so in COUNT.  A read
// between the shell's truncation of COUNT and its write finds it empty,
// which is no count.
async function tick() {
	const was = await read(COUNT);
	await write(TICK, '');
	const deadline = Date.now() + DEADLINE_MS;
	for (;;) {
		const n = await read(COUNT);
		if (n !== was && /^\d+\n$/.test(n))
			return Number(n);
		assert.ok(Date.now() < deadline, 'the counter did not count');
		await sleep(200);
	}
}

test('a restore brings back a file and a process as they were',
    async () => {
	await write(NOTE, 'before');
	// The count lives in the shell's memory; the file only shows it.
	const job = await call(agent, 'vm_exec', { vm_id: NAME,
	    request_id: 'snapshot-counter', wait_seconds: 0,
	    command: `i=0; echo $i > ${COUNT}; while :; do ` +
	    `if [ -e ${TICK} ]; then rm -f ${TICK}; i=$((i + 1)); ` +
	    `echo $i > ${COUNT}; fi; sleep 0.1; done` });
	counter = job.job_id;
	const deadline = Date.now() + DEADLINE_MS;
	while (!(await exists(COUNT)))
		assert.ok(Date.now() < deadline, 'the counter did not start');
	for (let i = 1; i <= 3; i++)
		assert.equal(await tick(), i);

	const s = await call(agent, 'vm_snapshot_create', { vm_id: NAME,
	    tag: 'first' });
	assert.equal(s.tag, 'first');
	assert.ok(Number.isInteger(s.vm_size) && s.vm_size > 0,
	    `vm_size ${s.vm_size}`);
	assert.match(s.date, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
	assert.ok(Math.abs(Date.parse(s.date) - Date.now()) < 3600000,
	    s.date);
	let st = await call(agent, 'vm_status', { vm_id: NAME });
	assert.equal(st.state, 'running');

	await write(NOTE, 'after');
	assert.equal(await tick(), 4);
	assert.equal(await tick(), 5);

	const r = await call(agent, 'vm_snapshot_restore', { vm_id: NAME,
	    tag: 'first' });
	assert.equal(r.tag, 'first');
	assert.equal(r.vm_size, s.vm_size);
	st = await call(agent, 'vm_status', { vm_id: NAME });
	assert.equal(st.state, 'running');
	assert.equal(await read(NOTE), 'before');
	assert.equal(Number(await read(COUNT)), 3);
	// The same process counts on from its own 3, not from the file.
	await write(COUNT, '100');
	assert.equal(await tick(), 4);
	const js = await call(agent, 'vm_job_status', { vm_id: NAME,
	    job_id: counter });
	assert.equal(js.state, 'running');
	// The guest works as before: a new job runs, the clock is now's.
	const d = await call(agent, 'vm_exec', { vm_id: NAME,
	    request_id: 'snapshot-date', wait_seconds: 30,
	    command: 'date +%s' });
	assert.equal(d.exit_code, 0);
	assert.ok(Math.abs(Number(d.stdout.trim()) - Date.now() / 1000) < 600,
	    `guest clock ${d.stdout}`);
});

test('vm_snapshot_list shows tag, vm_size and date', async () => {
	const l = await call(agent, 'vm_snapshot_list', { vm_id: NAME });
	assert.equal(l.snapshots.length, 1);
	const [s] = l.snapshots;
	assert.equal(s.tag, 'first');
	assert.ok(s.vm_size > 0);
	assert.match(s.date, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
});

test('a duplicate tag and a bad tag are refused', async () => {
	assert.match(await refused(agent, 'vm_snapshot_create',
	    { vm_id: NAME, tag: 'first' }),
	    /has a snapshot first already: choose another tag/);
	assert.match(await refused(agent, 'vm_snapshot_create',
	    { vm_id: NAME, tag: '123' }), /not all digits/);
	assert.match(await refused(agent, 'vm_snapshot_create',
	    { vm_id: NAME, tag: 'No/Way' }), /tag/);
	const l = await call(agent, 'vm_snapshot_list', { vm_id: NAME });
	assert.deepEqual(l.snapshots.map((s) => s.tag), ['first']);
});

test('a missing tag is refused, and the VM runs on as it was', async () => {
	const before = Number(await read(COUNT));
	await write(NOTE, 'unchanged');
	assert.match(await refused(agent, 'vm_snapshot_restore',
	    { vm_id: NAME, tag: 'nope' }),
	    /has no snapshot nope: nothing was done, and the VM runs on/);
	const st = await call(agent, 'vm_status', { vm_id: NAME });
	assert.equal(st.state, 'running');
	assert.equal(await read(NOTE), 'unchanged');
	assert.equal(await tick(), before + 1);
});

test('another workspace cannot list, restore or delete it', async () => {
	const bob = await connect(env.tokenFrom('MCVM_TOKEN2_FILE'));
	try {
		for (const [tool, args] of [['vm_snapshot_list', {}],
		    ['vm_snapshot_restore', { tag: 'first' }],
		    ['vm_snapshot_delete', { tag: 'first' }],
		    ['vm_snapshot_create', { tag: 'bobs' }]])
			assert.match(await refused(bob, tool,
			    { vm_id: NAME, ...args }),
			    /no VM snapshot-test in this workspace/);
	} finally {
		await bob.close();
	}
	const l = await call(agent, 'vm_snapshot_list', { vm_id: NAME });
	assert.deepEqual(l.snapshots.map((s) => s.tag), ['first']);
});

test('a snapshot outlives a stop and a start, and restores on the new boot',
    async () => {
	const counted = await read(COUNT);
	await call(agent, 'vm_stop', { vm_id: NAME });
	let l = await call(agent, 'vm_snapshot_list', { vm_id: NAME });
	assert.deepEqual(l.snapshots.map((s) => s.tag), ['first']);
	assert.match(await refused(agent, 'vm_snapshot_restore',
	    { vm_id: NAME, tag: 'first' }), /is stopped: call vm_start/);
	const st = await call(agent, 'vm_start', { vm_id: NAME });
	assert.equal(st.state, 'running');
	await write(NOTE, 'rebooted');
	assert.equal(await read(COUNT), counted);
	await call(agent, 'vm_snapshot_restore', { vm_id: NAME, tag: 'first' });
	assert.equal(await read(NOTE), 'before');
	assert.equal(Number(await read(COUNT)), 3);
	// The process of the snapshot is back, counting from its 3.
	await write(COUNT, '100');
	assert.equal(await tick(), 4);
	l = await call(agent, 'vm_snapshot_list', { vm_id: NAME });
	assert.deepEqual(l.snapshots.map((s) => s.tag), ['first']);
});

test('a deleted snapshot is gone, and the VM runs on', async () => {
	const d = await call(agent, 'vm_snapshot_delete', { vm_id: NAME,
	    tag: 'first' });
	assert.deepEqual(d, { tag: 'first', deleted: true });
	const l = await call(agent, 'vm_snapshot_list', { vm_id: NAME });
	assert.deepEqual(l.snapshots, []);
	assert.match(await refused(agent, 'vm_snapshot_restore',
	    { vm_id: NAME, tag: 'first' }), /has no snapshot first/);
	assert.match(await refused(agent, 'vm_snapshot_delete',
	    { vm_id: NAME, tag: 'first' }), /has no snapshot first/);
	const before = Number(await read(COUNT));
	assert.equal(await tick(), before + 1);
	// The tag is free again.
	const s = await call(agent, 'vm_snapshot_create', { vm_id: NAME,
	    tag: 'first' });
	assert.equal(s.tag, 'first');
	const st = await call(agent, 'vm_status', { vm_id: NAME });
	assert.equal(st.state, 'running');
});
