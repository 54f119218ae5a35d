// A long vm_exec as an MCP task (the tasks extension's form): answered at
// once, its task completes when the job ends, past any wait_seconds, with
// the job's exit and output; a cancelled task's job is cancelled.  Run
// through tests/suites/vms.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as env from '../lib/env.mjs';
import { connect, call, sleep } from '../lib/client.mjs';

const caps = { 'io.modelcontextprotocol/clientCapabilities':
    { extensions: { 'io.modelcontextprotocol/tasks': {} } } };
let alice, vm, sid, rid = 0;

before(async () => {
	alice = await connect(env.token, 'mcvm-task-test');
	vm = (await call(alice, 'vm_create',
	    { request_id: `task-vm-${process.pid}` })).vm_id;
	sid = (await env.session()).sid;
});

after(async () => {
	if (vm)
		await call(alice, 'vm_destroy', { vm_id: vm });
	await alice?.close();
});

function rpc(method, params) {
	return env.post({ jsonrpc: '2.0', id: ++rid, method,
	    params: { ...params, _meta: caps } },
	    { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' });
}

async function until_ended(taskId, ms) {
	const end = Date.now() + ms;
	while (Date.now() < end) {
		const r = await rpc('tasks/get', { taskId });
		assert.equal(r.status, 200, r.text);
		if (r.json.result.status !== 'working')
			return r.json.result;
		await sleep(r.json.result.pollIntervalMs);
	}
	throw new Error(`task ${taskId} still working after ${ms} ms`);
}

test('a vm_exec task ends with its job, past the longest wait', async () => {
	const r = await rpc('tools/call', { name: 'vm_exec', arguments: {
	    vm_id: vm, request_id: `task-exec-${process.pid}`,
	    timeout_seconds: 300,
	    command: 'sleep 60; echo done; echo warn >&2; exit 3' } });
	assert.equal(r.json.result.resultType, 'task', r.text);
	const t = await until_ended(r.json.result.taskId, 240000);
	assert.equal(t.status, 'completed', JSON.stringify(t));
	const s = t.result.structuredContent;
	assert.equal(s.state, 'completed', JSON.stringify(s));
	assert.equal(s.exit_code, 3);
	assert.equal(s.stdout, 'done\n');
	assert.equal(s.stderr, 'warn\n');
});

test('cancelling a vm_exec task cancels its job', async () => {
	const r = await rpc('tools/call', { name: 'vm_exec', arguments: {
	    vm_id: vm, request_id: `task-cancel-${process.pid}`,
	    command: 'echo started; sleep 600' } });
	const id = r.json.result.taskId;
	await sleep(3000);
	const c = await rpc('tasks/cancel', { taskId: id });
	assert.equal(c.json.result.resultType, 'complete', c.text);
	assert.equal((await until_ended(id, 10000)).status, 'cancelled');
	// The job is no longer running.
	let running = true;
	for (let i = 0; i < 50 && running; i++) {
		const s = await call(alice, 'vm_status', { vm_id: vm });
		running = (s.jobs ?? []).some((j) => j.state === 'running');
		if (running)
			await sleep(200);
	}
	assert.equal(running, false);
});
