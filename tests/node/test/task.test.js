// MCP tasks: a long tool's call made a task, in the tasks extension's
// form (client capabilities in _meta) and in 2025-11-25's (params.task);
// tasks/get, tasks/cancel and tasks/result; one workspace's task is
// missing to another.  None needs a VM: the suite's vm_create fails.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as env from '../lib/env.mjs';

const ext = 'io.modelcontextprotocol/tasks';
const caps = { 'io.modelcontextprotocol/clientCapabilities':
    { extensions: { [ext]: {} } } };
const token2 = env.tokenFrom('MCVM_TOKEN2_FILE');
let sid, sid2;
let rid = 0;

test.before(async () => {
	sid = (await env.session()).sid;
	sid2 = (await env.session('2025-11-25', token2)).sid;
});

function call(method, params, t = env.token, s = sid) {
	return env.post({ jsonrpc: '2.0', id: ++rid, method, params },
	    { ...env.auth(t), 'mcp-session-id': s,
	    'mcp-protocol-version': '2025-11-25' });
}

async function poll(taskId, t, s) {
	for (let i = 0; i < 100; i++) {
		const r = await call('tasks/get', { taskId, _meta: caps }, t, s);
		assert.equal(r.status, 200, r.text);
		if (r.json.result.status !== 'working')
			return r.json.result;
		await new Promise((ok) => setTimeout(ok, 200));
	}
	throw new Error('the task never ended');
}

test('initialize on 2025-11-25 offers tasks of tools/call', async () => {
	const r = await env.post(env.initBody('2025-11-25'));
	assert.deepEqual(r.json.result.capabilities.tasks,
	    { cancel: {}, requests: { tools: { call: {} } } });
});

test('a long tool with the extension returns a task, then its result',
    async () => {
	const r = await call('tools/call', { name: 'vm_create',
	    arguments: { request_id: 'task-1' }, _meta: caps });
	assert.equal(r.status, 200, r.text);
	const t = r.json.result;
	assert.equal(t.resultType, 'task', r.text);
	assert.match(t.taskId, /^[0-9a-f]{32}$/);
	assert.equal(t.status, 'working');
	assert.equal(t.ttlMs, 3600000);
	assert.equal(typeof t.pollIntervalMs, 'number');
	assert.ok(!Number.isNaN(Date.parse(t.createdAt)));
	const done = await poll(t.taskId);
	assert.equal(done.resultType, 'complete');
	assert.equal(done.status, 'completed', JSON.stringify(done));
	assert.ok(Array.isArray(done.result.content), JSON.stringify(done));
});

test('a short tool, or a call without the extension, is answered as ever',
    async () => {
	const a = await call('tools/call', { name: 'vm_list', arguments: {},
	    _meta: caps });
	assert.ok(Array.isArray(a.json.result.content), a.text);
	assert.equal(a.json.result.resultType, undefined);
	const b = await call('tools/call', { name: 'vm_create',
	    arguments: { request_id: 'task-plain' } });
	assert.ok(Array.isArray(b.json.result.content), b.text);
});

test('another workspace\'s task answers as a missing one', async () => {
	const r = await call('tools/call', { name: 'vm_create',
	    arguments: { request_id: 'task-2' }, _meta: caps });
	const id = r.json.result.taskId;
	const other = await call('tasks/get', { taskId: id }, token2, sid2);
	const none = await call('tasks/get', { taskId: 'f'.repeat(32) },
	    token2, sid2);
	assert.equal(other.json.error.code, -32602);
	assert.deepEqual(other.json.error, none.json.error);
	const c = await call('tasks/cancel', { taskId: id }, token2, sid2);
	assert.deepEqual(c.json.error, none.json.error);
	assert.equal((await poll(id)).status, 'completed');
});

test('a bad task id names the fix', async () => {
	const r = await call('tasks/get', { taskId: '../x' });
	assert.equal(r.json.error.code, -32602);
	assert.match(r.json.error.message, /32 lower-case hex digits/);
	const l = await call('tasks/list', {});
	assert.equal(l.json.error.code, -32601);
});

test('2025-11-25: params.task makes a task; tasks/result gives the result',
    async () => {
	const r = await call('tools/call', { name: 'vm_create',
	    arguments: { request_id: 'task-v1' }, task: { ttl: 60000 } });
	const t = r.json.result.task;
	assert.ok(t, r.text);
	assert.equal(t.status, 'working');
	assert.equal(t.ttl, 60000);
	await poll(t.taskId);
	const g = await call('tasks/get', { taskId: t.taskId });
	assert.equal(g.json.result.taskId, t.taskId);
	assert.equal(g.json.result.resultType, undefined);
	assert.equal(g.json.result.status, 'completed');
	const res = await call('tasks/result', { taskId: t.taskId });
	assert.ok(Array.isArray(res.json.result.content), res.text);
	assert.equal(res.json.result._meta[
	    'io.modelcontextprotocol/related-task'].taskId, t.taskId);
});

test('tasks/cancel of an ended task acknowledges, and it stays ended',
    async () => {
	const r = await call('tools/call', { name: 'vm_create',
	    arguments: { request_id: 'task-3' }, _meta: caps });
	const id = r.json.result.taskId;
	await poll(id);
	const c = await call('tasks/cancel', { taskId: id, _meta: caps });
	assert.equal(c.json.result.resultType, 'complete', c.text);
	assert.equal((await poll(id)).status, 'completed');
});

test('a task expires after its time to live', async () => {
	const r = await call('tools/call', { name: 'vm_create',
	    arguments: { request_id: 'task-ttl' }, task: { ttl: 1000 } });
	const id = r.json.result.task.taskId;
	await new Promise((ok) => setTimeout(ok, 1500));
	const g = await call('tasks/get', { taskId: id });
	assert.equal(g.json.error.code, -32602, g.text);
	assert.match(g.json.error.message, /expired/);
});
