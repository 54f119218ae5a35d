// Protocol revision 2026-07-28 on /mcp, with raw fetch: every request
// stands alone (no initialize, no session), declares its version in a
// header and in _meta, and mirrors its method and name in headers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as env from '../lib/env.mjs';

const V = '2026-07-28';
const PV = 'io.modelcontextprotocol/protocolVersion';
const CAPS = 'io.modelcontextprotocol/clientCapabilities';
const INFO = 'io.modelcontextprotocol/serverInfo';
const meta = (extra = {}) => ({ [PV]: V, [CAPS]: {},
    'io.modelcontextprotocol/clientInfo': { name: 'mcvm-test',
    version: '1' }, ...extra });

let nextId = 1;

// A request of the revision; headers are derived from the body unless
// given (a header set to undefined is left out).
function call(method, params = {}, headers = {}, t = env.token) {
	const id = nextId++;
	const h = { 'mcp-protocol-version': V, 'mcp-method': method,
	    ...env.auth(t) };
	if (typeof params.name === 'string')
		h['mcp-name'] = params.name;
	for (const [k, v] of Object.entries(headers)) {
		if (v === undefined)
			delete h[k];
		else
			h[k] = v;
	}
	for (const k of Object.keys(h))
		if (h[k] === undefined)
			delete h[k];
	const body = { jsonrpc: '2.0', id, method,
	    params: { _meta: meta(), ...params } };
	return env.post(body, h).then((r) => ({ ...r, id }));
}

function isComplete(r) {
	assert.equal(r.status, 200, r.text);
	assert.equal(r.json.result.resultType, 'complete', r.text);
	assert.equal(r.json.result._meta[INFO].name, 'mcvm', r.text);
	assert.equal(typeof r.json.result._meta[INFO].version, 'string');
}

test('any request may come first: tools/call with no session',
    async () => {
	const r = await call('tools/call', { name: 'vm_list', arguments: {} });
	isComplete(r);
	assert.equal(r.json.id, r.id);
	assert.ok(Array.isArray(r.json.result.structuredContent.vms));
	assert.equal(r.headers.get('mcp-session-id'), null);
});

test('a session id sent is ignored and none is minted', async () => {
	const r = await call('tools/list', {}, { 'mcp-session-id':
	    '0123456789abcdef0123456789abcdef' });
	isComplete(r);
	assert.equal(r.headers.get('mcp-session-id'), null);
});

test('server/discover: versions, capabilities, identity, instructions',
    async () => {
	const r = await call('server/discover');
	isComplete(r);
	const res = r.json.result;
	assert.deepEqual(res.supportedVersions,
	    [V, '2025-11-25', '2025-06-18', '2025-03-26']);
	assert.ok(res.capabilities.tools, r.text);
	assert.deepEqual(res.capabilities.extensions,
	    { 'io.modelcontextprotocol/tasks': {} }, r.text);
	assert.match(res.instructions, /vm_create/);
	assert.equal(typeof res.ttlMs, 'number');
	assert.ok(['public', 'private'].includes(res.cacheScope));
});

test('tools/list carries caching hints, private to the workspace',
    async () => {
	const r = await call('tools/list');
	isComplete(r);
	assert.ok(r.json.result.tools.length > 0);
	assert.ok(Number.isInteger(r.json.result.ttlMs));
	assert.ok(r.json.result.ttlMs >= 0);
	assert.equal(r.json.result.cacheScope, 'private');
	// The session revisions' catalogue is left as it was.
	const s = await env.session();
	const old = await env.post({ jsonrpc: '2.0', id: 2,
	    method: 'tools/list' }, { 'mcp-session-id': s.sid,
	    'mcp-protocol-version': '2025-11-25' });
	assert.equal(old.status, 200, old.text);
	assert.equal(old.json.result.ttlMs, undefined);
	assert.equal(old.json.result.resultType, undefined);
	assert.equal(old.json.result.tools.length,
	    r.json.result.tools.length);
});

test('a tool error is a complete result with isError', async () => {
	const r = await call('tools/call', { name: 'vm_status',
	    arguments: { vm_id: 'nope' } });
	isComplete(r);
	assert.equal(r.json.result.isError, true);
});

test('Mcp-Method and Mcp-Name are required and must match the body',
    async () => {
	const cases = [
		['tools/list', {}, { 'mcp-method': undefined }],
		['tools/list', {}, { 'mcp-method': 'tools/call' }],
		['tools/list', {}, { 'mcp-method': 'TOOLS/LIST' }],
		['tools/call', { name: 'vm_list', arguments: {} },
		    { 'mcp-name': undefined }],
		['tools/call', { name: 'vm_list', arguments: {} },
		    { 'mcp-name': 'vm_status' }],
		['tools/call', { name: 'vm_list', arguments: {} },
		    { 'mcp-name': '=?base64?not base64?=' }],
		['server/discover', {}, { 'mcp-protocol-version': undefined }],
	];
	for (const [m, p, h] of cases) {
		const r = await call(m, p, h);
		assert.equal(r.status, 400, `${m} ${JSON.stringify(h)}: ` +
		    r.text);
		assert.equal(r.json.error.code, -32020, r.text);
		assert.equal(r.json.id, r.id, r.text);
		assert.match(r.json.error.message, /Header mismatch/);
	}
	// The base64 form of Mcp-Name is decoded before it is compared.
	const b = Buffer.from('vm_list').toString('base64');
	const ok = await call('tools/call', { name: 'vm_list',
	    arguments: {} }, { 'mcp-name': `=?base64?${b}?=` });
	isComplete(ok);
});

test('_meta must carry the version and the client capabilities',
    async () => {
	for (const drop of [PV, CAPS]) {
		const m = meta();
		delete m[drop];
		const id = nextId++;
		const r = await env.post({ jsonrpc: '2.0', id,
		    method: 'server/discover', params: { _meta: m } },
		    { 'mcp-protocol-version': V,
		    'mcp-method': 'server/discover' });
		assert.equal(r.status, 400, r.text);
		assert.equal(r.json.error.code, -32602, r.text);
		assert.equal(r.json.id, id);
		assert.ok(r.json.error.message.includes(drop), r.text);
	}
});

test('removed methods and unknown ones get 404 and -32601, with the id',
    async () => {
	for (const m of ['initialize', 'ping', 'logging/setLevel',
	    'resources/subscribe', 'resources/list', 'no/such']) {
		const r = await call(m);
		assert.equal(r.status, 404, `${m}: ${r.text}`);
		assert.equal(r.json.error.code, -32601, r.text);
		assert.equal(r.json.id, r.id);
	}
	const r = await call('initialize');
	assert.match(r.json.error.message, /2025-11-25/);
});

test('DELETE and GET, which this revision removed, get 405', async () => {
	for (const method of ['DELETE', 'GET']) {
		const res = await fetch(env.mcpUrl, { method, headers: {
		    ...env.auth(), 'mcp-protocol-version': V,
		    accept: 'application/json, text/event-stream' } });
		assert.equal(res.status, 405, method);
		const j = await res.json();
		assert.equal(typeof j.error.code, 'number');
	}
});

test('an unsupported version lists those served, with the id',
    async () => {
	const id = nextId++;
	const r = await env.post({ jsonrpc: '2.0', id,
	    method: 'server/discover', params: { _meta:
	    meta({ [PV]: '2099-01-01' }) } }, { 'mcp-protocol-version':
	    '2099-01-01', 'mcp-method': 'server/discover' });
	assert.equal(r.status, 400, r.text);
	assert.equal(r.json.id, id);
	assert.equal(r.json.error.code, -32022);
	assert.equal(r.json.error.data.requested, '2099-01-01');
	assert.ok(r.json.error.data.supported.includes(V));
	assert.ok(r.json.error.data.supported.includes('2025-11-25'));
	// The header and _meta disagreeing is a header mismatch.
	const m = await call('server/discover', { _meta: meta({
	    [PV]: '2099-01-01' }) });
	assert.equal(m.status, 400, m.text);
	assert.equal(m.json.error.code, -32020);
	assert.equal(m.json.id, m.id);
});

test('errors carry the request id wherever the body could be read',
    async () => {
	// 2026: a batch, and a response, both refused.
	let r = await env.post([{ jsonrpc: '2.0', id: 5,
	    method: 'tools/list' }], { 'mcp-protocol-version': V,
	    'mcp-method': 'tools/list' });
	assert.equal(r.status, 400, r.text);
	assert.equal(r.json.error.code, -32600);
	r = await env.post({ jsonrpc: '2.0', id: 'r1', result: {} },
	    { 'mcp-protocol-version': V });
	assert.equal(r.status, 400, r.text);
	assert.equal(r.json.id, 'r1');
	// A wrong Content-Type is refused before the body, whose id is
	// still readable.
	const res = await fetch(env.mcpUrl, { method: 'POST', headers: {
	    ...env.auth(), 'content-type': 'text/plain',
	    accept: 'application/json, text/event-stream',
	    'mcp-protocol-version': V }, body: JSON.stringify({
	    jsonrpc: '2.0', id: 'ct', method: 'tools/list' }) });
	assert.equal(res.status, 415);
	assert.equal((await res.json()).id, 'ct');
	// The session revisions too: no session, an unknown session, and an
	// invalid message whose id is readable.
	r = await env.post({ jsonrpc: '2.0', id: 41, method: 'tools/list' });
	assert.equal(r.status, 400, r.text);
	assert.equal(r.json.id, 41);
	r = await env.post({ jsonrpc: '2.0', id: 42, method: 'tools/list' },
	    { 'mcp-session-id': '0123456789abcdef0123456789abcdef' });
	assert.equal(r.status, 404, r.text);
	assert.equal(r.json.id, 42);
	const s = await env.session();
	r = await env.post({ jsonrpc: '2.0', id: 43, method: 'tools/list',
	    extra: 1 }, { 'mcp-session-id': s.sid });
	assert.equal(r.status, 400, r.text);
	assert.equal(r.json.error.code, -32600);
	assert.equal(r.json.id, 43);
	// Unreadable ids stay null.
	r = await env.post('{"jsonrpc":"2.0","id":1,', { 'mcp-session-id':
	    s.sid });
	assert.equal(r.status, 400);
	assert.equal(r.json.id, null);
});

test('a notification is accepted with 202', async () => {
	const r = await env.post({ jsonrpc: '2.0',
	    method: 'notifications/cancelled', params: { requestId: 1,
	    _meta: meta() } }, { 'mcp-protocol-version': V,
	    'mcp-method': 'notifications/cancelled' });
	assert.equal(r.status, 202, r.text);
});

test('client capabilities are read per request, never remembered',
    async () => {
	// A request declaring tasks, then one that does not: each is served
	// on its own (discover's answer does not depend on either).
	const a = await call('server/discover', { _meta: meta({ [CAPS]: {
	    extensions: { 'io.modelcontextprotocol/tasks': {} } } }) });
	isComplete(a);
	const b = await call('server/discover');
	isComplete(b);
	assert.deepEqual(a.json.result.capabilities,
	    b.json.result.capabilities);
	const bad = await call('server/discover', { _meta: meta({
	    [CAPS]: 'tasks' }) });
	assert.equal(bad.status, 400, bad.text);
	assert.equal(bad.json.error.code, -32602);
});

test('authentication is per request and workspaces stay apart',
    async () => {
	const r = await env.post({ jsonrpc: '2.0', id: 1,
	    method: 'server/discover', params: { _meta: meta() } },
	    { 'mcp-protocol-version': V, 'mcp-method': 'server/discover',
	    authorization: '' });
	assert.equal(r.status, 401, r.text);
	// A token refused moments ago stays refused.
	const bad = await call('tools/list', {}, {}, 'A'.repeat(43));
	assert.equal(bad.status, 401, bad.text);
	// One workspace's image is not another's.
	const other = env.tokenFrom('MCVM_TOKEN2_FILE');
	const name = `st26-${process.pid}`;
	const made = await call('tools/call', { name: 'image_create',
	    arguments: { name, size: '1M' } });
	isComplete(made);
	assert.ok(!made.json.result.isError, made.text);
	const mine = await call('tools/call', { name: 'image_info',
	    arguments: { name } });
	isComplete(mine);
	assert.ok(!mine.json.result.isError, mine.text);
	const theirs = await call('tools/call', { name: 'image_info',
	    arguments: { name } }, {}, other);
	isComplete(theirs);
	assert.equal(theirs.json.result.isError, true, theirs.text);
	const list = await call('tools/call', { name: 'image_list',
	    arguments: {} }, {}, other);
	isComplete(list);
	assert.ok(!list.text.includes(name), list.text);
	// A session of one workspace does not lend itself to the other, in
	// either revision.
	const s = await env.session();
	const cross = await call('tools/call', { name: 'image_info',
	    arguments: { name } }, { 'mcp-session-id': s.sid }, other);
	assert.equal(cross.json.result.isError, true, cross.text);
	const del = await call('tools/call', { name: 'image_delete',
	    arguments: { name } });
	isComplete(del);
	assert.ok(!del.json.result.isError, del.text);
});

test('a long call whose request declares tasks is a task, polled with ' +
    'tasks/get; one that does not is answered whole', async () => {
	const tasks = meta({ [CAPS]: { extensions:
	    { 'io.modelcontextprotocol/tasks': {} } } });
	const r = await call('tools/call', { name: 'vm_create',
	    arguments: { request_id: 'st-task-1' }, _meta: tasks });
	assert.equal(r.status, 200, r.text);
	assert.equal(r.json.result.resultType, 'task', r.text);
	assert.match(r.json.result.taskId, /^[0-9a-f]{32}$/);
	let got;
	for (let i = 0; i < 100; i++) {
		got = await call('tasks/get', { taskId: r.json.result.taskId,
		    _meta: tasks });
		assert.equal(got.status, 200, got.text);
		if (got.json.result.status !== 'working')
			break;
		await new Promise((ok) => setTimeout(ok, 200));
	}
	assert.equal(got.json.result.resultType, 'complete', got.text);
	assert.equal(got.json.result.status, 'completed', got.text);
	assert.ok(Array.isArray(got.json.result.result.content), got.text);
	// The same call without the capability is not made a task.
	const plain = await call('tools/call', { name: 'vm_create',
	    arguments: { request_id: 'st-task-2' } });
	isComplete(plain);
	assert.equal(plain.json.result.taskId, undefined, plain.text);
});
