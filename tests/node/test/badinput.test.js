// The bad-input table: each malformed or hostile request, the precise HTTP
// status and JSON-RPC (or /v1) error it gets, and proof that frontd is
// still serving afterwards.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as env from '../lib/env.mjs';
import { raw, request, sleep } from '../lib/raw.mjs';

const host = new URL(env.url).host;
const hdr = {
	'Content-Type': 'application/json',
	Accept: 'application/json, text/event-stream',
	Authorization: `Bearer ${env.token}`,
};
const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });

let sid;
test.before(async () => {
	sid = (await env.session()).sid;
});

function mcp(extra = {}, body = ping, method = 'POST') {
	return request(method, '/mcp', host,
	    { ...hdr, 'Mcp-Session-Id': sid, ...extra }, body);
}

// name, request (bytes or a function of the socket), status, JSON-RPC code
const table = [
	['malformed JSON', () => mcp({}, '{"jsonrpc": "2.0", "id": 1,'),
	    400, -32700],
	['invalid UTF-8 in a string', () => mcp({}, Buffer.concat([
	    Buffer.from('{"jsonrpc":"2.0","id":1,"method":"'),
	    Buffer.from([0xff, 0xfe]), Buffer.from('"}')])), 400, -32700],
	['JSON that is not an object', () => mcp({}, '42'), 400, -32600],
	['empty batch', () => mcp({}, '[]'), 400, -32600],
	['NUL escaped in a string', () => mcp({}, '{"jsonrpc":"2.0","id":1,' +
	    '"method":"tools/call","params":{"name":"vm_status","arguments":' +
	    '{"vm_id":"vm-0123456789abcdef\\u0000"}}}'), 400, -32700],
	['duplicate keys', () => mcp({},
	    '{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}'), 400, -32700],
	['body over the limit', () => request('POST', '/mcp', host,
	    { ...hdr, 'Content-Length': String(env.bodyLimit + 1) }),
	    413, -32000],
	['huge header', () => mcp({ 'X-Pad': 'a'.repeat(env.headerLimit) }),
	    431, -32000],
	['too many header fields', () => mcp(Object.fromEntries(
	    Array.from({ length: 70 }, (_, i) => [`X-H${i}`, 'v']))),
	    431, -32000],
	['unknown method', () => mcp({}, JSON.stringify({ jsonrpc: '2.0',
	    id: 1, method: 'resources/list' })), 200, -32601],
	['wrong type: id is an object', () => mcp({}, JSON.stringify({
	    jsonrpc: '2.0', id: {}, method: 'ping' })), 400, -32600],
	['wrong type: method is a number', () => mcp({}, JSON.stringify({
	    jsonrpc: '2.0', id: 1, method: 5 })), 400, -32600],
	['wrong type: params is an array', () => mcp({}, JSON.stringify({
	    jsonrpc: '2.0', id: 1, method: 'tools/list', params: [] })),
	    400, -32600],
	['wrong type: tool name is a number', () => mcp({}, JSON.stringify({
	    jsonrpc: '2.0', id: 1, method: 'tools/call',
	    params: { name: 5 } })), 200, -32602],
	['wrong type: arguments is a string', () => mcp({}, JSON.stringify({
	    jsonrpc: '2.0', id: 1, method: 'tools/call',
	    params: { name: 'vm_list', arguments: 'x' } })), 200, -32602],
	['extra envelope field', () => mcp({}, JSON.stringify({
	    jsonrpc: '2.0', id: 1, method: 'ping', extra: true })),
	    400, -32600],
	['missing jsonrpc member', () => mcp({}, JSON.stringify({ id: 1,
	    method: 'ping' })), 400, -32600],
	['wrong jsonrpc version', () => mcp({}, JSON.stringify({
	    jsonrpc: '1.0', id: 1, method: 'ping' })), 400, -32600],
	['missing tool name', () => mcp({}, JSON.stringify({ jsonrpc: '2.0',
	    id: 1, method: 'tools/call', params: {} })), 200, -32602],
	['wrong Content-Type', () => mcp({ 'Content-Type': 'text/plain' }),
	    415, -32000],
	['missing Accept', () => request('POST', '/mcp', host,
	    { 'Content-Type': 'application/json',
	    Authorization: hdr.Authorization, 'Mcp-Session-Id': sid }, ping),
	    406, -32000],
	['Accept without text/event-stream', () => mcp({ Accept:
	    'application/json' }), 406, -32000],
	['Accept refusing text/event-stream with q=0', () => mcp({ Accept:
	    'application/json, text/event-stream;q=0' }), 406, -32000],
	['unknown session', () => mcp({ 'Mcp-Session-Id':
	    '0123456789abcdef0123456789abcdef' }), 404, -32001],
	['missing session', () => request('POST', '/mcp', host, hdr, ping),
	    400, -32000],
	['bad Origin', () => mcp({ Origin: 'http://evil.example.com' }),
	    403, -32000],
	['bad Host', () => request('POST', '/mcp', 'evil.example.com',
	    { ...hdr, 'Mcp-Session-Id': sid }, ping), 403, -32000],
	['bad MCP-Protocol-Version', () => mcp({ 'MCP-Protocol-Version':
	    '1999-01-01' }), 400, -32000],
	['token in the query', () => request('POST',
	    `/mcp?access_token=${env.token}`, host,
	    { ...hdr, 'Mcp-Session-Id': sid }, ping), 400, -32000],
	['token-like query parameter', () => request('POST',
	    '/mcp?api_key=abc', host, { ...hdr, 'Mcp-Session-Id': sid },
	    ping), 400, -32000],
	['no token', () => request('POST', '/mcp', host,
	    { 'Content-Type': hdr['Content-Type'], Accept: hdr.Accept }, ping),
	    401, -32000],
	['not a Bearer token', () => mcp({ Authorization: 'Basic YWxhZGRpbg=='
	    }), 401, -32000],
	['unknown token', () => mcp({ Authorization:
	    'Bearer AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }), 401, -32000],
	['revoked token', () => mcp({ Authorization:
	    `Bearer ${env.tokenFrom('MCVM_REVOKED_FILE')}` }), 401, -32000],
	['expired token', () => mcp({ Authorization:
	    `Bearer ${env.tokenFrom('MCVM_EXPIRED_FILE')}` }), 401, -32000],
	['GET /mcp (no SSE stream offered)', () => mcp({}, '', 'GET'),
	    405, -32000],
	['chunked request body', () => mcp({ 'Transfer-Encoding': 'chunked' },
	    ''), 501, -32000],
	['HTTP/2.0 request line', () => Buffer.from('POST /mcp HTTP/2.0\r\n' +
	    `Host: ${host}\r\n\r\n`), 505, -32000],
	['NUL byte in a header', () => Buffer.from('POST /mcp HTTP/1.1\r\n' +
	    `Host: ${host}\r\nX-A: a\0b\r\n\r\n`, 'latin1'), 400, -32000],
	['folded header line', () => Buffer.from('POST /mcp HTTP/1.1\r\n' +
	    `Host: ${host}\r\nX-A: a\r\n  b\r\n\r\n`), 400, -32000],
	['conflicting Content-Length', () => Buffer.from('POST /mcp HTTP/1.1\r\n' +
	    `Host: ${host}\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n`),
	    400, -32000],
	['missing Host', () => Buffer.from('POST /mcp HTTP/1.1\r\n' +
	    'Content-Length: 0\r\n\r\n'), 400, -32000],
];

for (const [name, make, status, code] of table) {
	test(`bad input: ${name} -> ${status} ${code}`, async () => {
		const r = await raw(env.url, make());
		assert.equal(r.status, status, r.body);
		assert.ok(r.json, `a JSON body: ${r.body}`);
		assert.equal(r.json.jsonrpc, '2.0');
		assert.equal(r.json.error.code, code, r.body);
		assert.equal(typeof r.json.error.message, 'string');
		assert.ok(!r.body.includes(env.token), 'no token in the answer');
		if (status === 401)
			assert.match(r.headers['www-authenticate'], /^Bearer/);
	});
}

// The same inputs on the /v1 API get its error shape.
const v1table = [
	['malformed JSON', '{"vm_id":', 'application/json', 400,
	    'invalid_json'],
	['wrong type', '{"vm_id": 5}', 'application/json', 400,
	    'invalid_argument'],
	['extra field', '{"vm_id":"vm-0123456789abcdef","x":1}',
	    'application/json', 400, 'invalid_argument'],
	['missing required', '{}', 'application/json', 400,
	    'invalid_argument'],
	['wrong Content-Type', '{}', 'text/plain', 415,
	    'unsupported_media_type'],
	['not an object', '[]', 'application/json', 400, 'invalid_argument'],
];

for (const [name, body, ctype, status, code] of v1table) {
	test(`bad input on /v1: ${name} -> ${status} ${code}`, async () => {
		const r = await raw(env.url, request('POST', '/v1/tools/vm_status',
		    host, { 'Content-Type': ctype,
		    Authorization: hdr.Authorization }, body));
		assert.equal(r.status, status, r.body);
		assert.equal(r.json.error.code, code, r.body);
	});
}

test('tool argument errors are isError results on MCP', async () => {
	for (const args of [{ vm_id: 5 }, { vm_id: 'vm-0123456789abcdef',
	    extra: 1 }, {}, { vm_id: 'VM-0123456789ABCDEF' },
	    { vm_id: 'vm-0123456789abcdef', zzz: null }]) {
		const r = await env.post({ jsonrpc: '2.0', id: 3,
		    method: 'tools/call',
		    params: { name: 'vm_status', arguments: args } },
		    { 'mcp-session-id': sid });
		assert.equal(r.status, 200);
		assert.equal(r.json.result.isError, true, JSON.stringify(args));
	}
});

test('the v1 API wants a token too', async () => {
	const r = await fetch(`${env.url}/v1/tools`);
	assert.equal(r.status, 401);
	assert.match(r.headers.get('www-authenticate'), /^Bearer/);
	const body = await r.json();
	assert.equal(body.error.code, 'unauthorized');
});

test('slowloris: a request trickling in times out with 408', async () => {
	const r = await raw(env.url, async (sock) => {
		sock.write(`POST /mcp HTTP/1.1\r\nHost: ${host}\r\n`);
		// One header line every half second, never finishing.
		for (let i = 0; i < 200 && !sock.destroyed; i++) {
			await sleep(500);
			if (!sock.destroyed)
				sock.write(`X-Slow-${i}: x\r\n`);
		}
	});
	assert.equal(r.status, 408);
	assert.equal(r.json.error.code, -32000);
	assert.equal(r.headers.connection, 'close');
});

test('an idle connection is closed', async () => {
	const r = await raw(env.url, () => {});
	assert.equal(r.closed, true);
	assert.equal(r.status, 0);
});

test('frontd still serves after all of the above', async () => {
	const r = await env.post(JSON.parse(ping), { 'mcp-session-id': sid });
	assert.equal(r.status, 200);
	assert.deepEqual(r.json.result, {});
});
