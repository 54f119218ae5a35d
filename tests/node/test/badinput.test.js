// The bad-input table: each malformed or hostile request, the precise HTTP
// status and JSON-RPC (or /v1) error it gets, and proof that frontd is
// still serving afterwards.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import * as env from '../lib/env.mjs';
import { raw, request, sleep } from '../lib/raw.mjs';

const host = new URL(env.url).host;
const hdr = {
	'Content-Type': 'application/json',
	Accept: 'application/json, text/event-stream',
	Authorization: `Bearer ${env.token}`,
};
const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
// 81 bytes: a cut at 64 falls inside the 32nd é.
const cutName = 'a' + '\u00e9'.repeat(40);
const longId = 'x'.repeat(300);
const rpc = (obj) => JSON.stringify({ jsonrpc: '2.0', ...obj });

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
	    '1999-01-01' }), 400, -32022],
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
	['string id over 128 bytes on tools/list', () => mcp({}, rpc({
	    id: longId, method: 'tools/list' })), 400, -32600],
	['string id over 128 bytes on ping', () => mcp({}, rpc({
	    id: longId, method: 'ping' })), 400, -32600],
	['progressToken over 128 bytes', () => mcp({}, rpc({ id: 1,
	    method: 'tools/call', params: { name: 'vm_list', arguments: {},
	    _meta: { progressToken: longId } } })), 200, -32602],
	['method name cut mid-character', () => mcp({}, rpc({ id: 1,
	    method: cutName })), 200, -32601],
	['tool name cut mid-character', () => mcp({}, rpc({ id: 1,
	    method: 'tools/call', params: { name: cutName } })), 200, -32602],
	// Still sending (and not reading) after the 431 was written: the
	// server must read on, not close into a reset that loses the 431.
	['over-long head still being sent (drained, not reset)', () =>
	    async (sock) => {
		sock.pause();
		sock.write(`POST /mcp HTTP/1.1\r\nHost: ${host}\r\nX-Pad: `);
		for (let i = 0; i < 12 && !sock.destroyed; i++) {
			await sleep(20);
			sock.write('a'.repeat(64 * 1024), () => {});
		}
		sock.resume();
	}, 431, -32000],
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
	['parameter name cut mid-character', JSON.stringify({
	    vm_id: 'vm-0123456789abcdef', [cutName]: 1 }), 'application/json',
	    400, 'invalid_argument'],
];

for (const [name, body, ctype, status, code] of v1table) {
	test(`bad input on /v1: ${name} -> ${status} ${code}`, async () => {
		const r = await raw(env.url, request('POST', '/v1/tools/vm_status',
		    host, { 'Content-Type': ctype,
		    Authorization: hdr.Authorization }, body));
		assert.equal(r.status, status, r.body);
		assert.ok(r.json, `a JSON body: ${r.body}`);
		assert.equal(r.json.error.code, code, r.body);
		assert.equal(typeof r.json.error.message, 'string');
	});
}

test('an over-long id is refused naming the limit; 128 bytes pass',
    async () => {
	let r = await raw(env.url, mcp({}, rpc({ id: longId,
	    method: 'tools/list' })));
	assert.equal(r.json.id, null);
	assert.match(r.json.error.message, /128 bytes/);
	const id = 'y'.repeat(128);
	r = await raw(env.url, mcp({}, rpc({ id, method: 'tools/list' })));
	assert.equal(r.status, 200, r.body);
	assert.equal(r.json.id, id);
	assert.ok(r.json.result.tools.length > 0);
});

test('a name cut mid-character is shown whole-charactered', async () => {
	const r = await raw(env.url, mcp({}, rpc({ id: 9, method: cutName })));
	assert.equal(r.status, 200, r.body);
	assert.ok(!r.body.includes('\ufffd'), r.body);
	assert.ok(r.json.error.message.includes('a' +
	    '\u00e9'.repeat(31)), r.json.error.message);
	const v = await raw(env.url, request('POST', '/v1/tools/vm_status',
	    host, { 'Content-Type': 'application/json',
	    Authorization: hdr.Authorization }, JSON.stringify({
	    vm_id: 'vm-0123456789abcdef', [cutName]: 1 })));
	assert.match(v.json.error.message, /unknown parameter/);
	assert.ok(v.json.error.message.includes('a' + '\u00e9'.repeat(31)));
});

test('a 2025-03-26 batch answers each request with an id, no null',
    async () => {
	const old = await env.session('2025-03-26');
	const batch = [
		{ jsonrpc: '2.0', id: 1, method: 'ping' },
		{ jsonrpc: '2.0', method: 'notifications/initialized' },
		{ jsonrpc: '2.0', id: longId, method: 'tools/list' },
		{ jsonrpc: '2.0', id: 3, method: cutName },
		{ jsonrpc: '2.0', id: 4, method: 'tools/call',
		    params: { name: cutName } },
		{ jsonrpc: '2.0', id: 5, method: 'tools/call',
		    params: { name: 'vm_status', arguments: {
		    vm_id: 'vm-0123456789abcdef', [cutName]: 1 } } },
		{ jsonrpc: '2.0', id: 6, method: 'tools/list' },
	];
	const r = await env.post(batch, { 'mcp-session-id': old.sid,
	    'mcp-protocol-version': '2025-03-26' });
	assert.equal(r.status, 200, r.text);
	assert.ok(Array.isArray(r.json), r.text);
	assert.equal(r.json.length, 6, r.text);
	for (const m of r.json) {
		assert.equal(typeof m, 'object', r.text);
		assert.notEqual(m, null, r.text);
		assert.equal(m.jsonrpc, '2.0');
		assert.ok(('result' in m) !== ('error' in m), r.text);
	}
	assert.deepEqual(r.json.map((m) => m.id), [1, null, 3, 4, 5, 6]);
	assert.equal(r.json[1].error.code, -32600);
	assert.equal(r.json[2].error.code, -32601);
	assert.equal(r.json[3].error.code, -32602);
	assert.equal(r.json[4].result.isError, true);
	assert.ok(r.json[5].result.tools.length > 0);
});

// The whole answer to a request, read until the server closes.
function rawAll(bytes, from) {
	return new Promise((resolve, reject) => {
		const u = new URL(env.url);
		const sock = net.connect({ port: Number(u.port),
		    host: u.hostname, localAddress: from });
		const parts = [];
		sock.on('data', (d) => parts.push(d));
		sock.on('error', reject);
		sock.on('close', () => resolve(Buffer.concat(parts)));
		sock.on('connect', () => sock.write(bytes));
	});
}

test('HEAD on a GET route is GET without the body', async () => {
	const h = { Authorization: hdr.Authorization };
	const get = await raw(env.url, request('GET', '/v1/tools', host, h));
	assert.equal(get.status, 200);
	const all = await rawAll(request('HEAD', '/v1/tools', host, h));
	const end = all.indexOf('\r\n\r\n');
	const head = all.subarray(0, end).toString('latin1');
	assert.match(head, /^HTTP\/1\.1 200 /, head);
	assert.match(head, new RegExp('\r\nContent-Length: ' +
	    get.headers['content-length'] + '(\r\n|$)', 'i'), head);
	assert.equal(all.length, end + 4, 'no body after the head');
	const post = await rawAll(request('HEAD', '/v1/tools/vm_list', host,
	    h));
	assert.match(post.toString('latin1'), /^HTTP\/1\.1 405 /);
});

// Opens n connections from a local address and sends nothing.  Resolves
// once each is connected, or closed by the server.
async function idle(n, from) {
	const u = new URL(env.url);
	const socks = [];
	await Promise.all(Array.from({ length: n }, () => new Promise((res) => {
		const s = net.connect({ port: Number(u.port), host: u.hostname,
		    localAddress: from });
		s.gone = false;
		s.on('connect', res);
		s.on('error', () => {});
		s.on('close', () => {
			s.gone = true;
			res();
		});
		socks.push(s);
	})));
	return socks;
}

const open = (socks) => socks.filter((s) => !s.gone).length;

// A request must be answered, but a hung server must not hang the suite.
function within(ms, p) {
	return Promise.race([p, sleep(ms).then(() => {
		throw new Error(`no answer in ${ms} ms`);
	})]);
}

test('one peer gets at most its share of connections; others are served',
    async () => {
	// frontd-test.conf: peer connections 40.
	const socks = await idle(50, '127.0.0.2');
	try {
		const r = await within(10000, env.post(JSON.parse(ping),
		    { 'mcp-session-id': sid }));
		assert.equal(r.status, 200);
		assert.ok(open(socks) >= 40, 'the idle ones are still open');
		// Every connection asks; only the peer's share is answered.
		const answers = await Promise.all(socks.map((s) =>
		    new Promise((res) => {
			let got = '';
			s.on('data', (d) => { got += d.toString('latin1'); });
			s.on('close', () => res(got));
			if (s.gone)
				res('');
			else
				s.write(request('GET', '/v1/tools', host, {}),
				    () => {});
		})));
		const served = answers.filter((a) => a.startsWith('HTTP/1.1 '));
		assert.equal(served.length, 40, `served ${served.length}`);
	} finally {
		socks.forEach((s) => s.destroy());
	}
});

test('with every connection taken, unauthenticated ones make way',
    async () => {
	// A client that has authenticated keeps its connection.
	const u = new URL(env.url);
	const keep = net.connect(Number(u.port), u.hostname);
	let got = '';
	keep.on('data', (d) => { got += d.toString('latin1'); });
	await new Promise((res) => keep.on('connect', res));
	const ka = request('GET', '/v1/tools', host,
	    { Authorization: hdr.Authorization }).toString('latin1')
	    .replace('Connection: close\r\n', '');
	keep.write(ka);
	while (!/\r\n\r\n/.test(got))
		await sleep(20);
	assert.match(got, /^HTTP\/1\.1 200 /);
	// 160 idle connections from four peers: over the 128 in all.
	const socks = [];
	try {
		for (const a of ['127.0.0.10', '127.0.0.11', '127.0.0.12',
		    '127.0.0.13'])
			socks.push(...await idle(40, a));
		const r = await within(10000, env.post(JSON.parse(ping),
		    { 'mcp-session-id': sid }));
		assert.equal(r.status, 200);
		// Answered by shedding, not by waiting for timeouts.
		assert.ok(open(socks) >= 100, `${open(socks)} still open`);
		got = '';
		keep.write(ka);
		await within(10000, (async () => {
			while (!/\r\n\r\n/.test(got))
				await sleep(20);
		})());
		assert.match(got, /^HTTP\/1\.1 200 /, 'the kept connection');
	} finally {
		socks.forEach((s) => s.destroy());
		keep.destroy();
	}
});

test('a head must arrive within the header timeout', async () => {
	// A head trickling in (header timeout 2) and a body trickling in
	// (request timeout 3) are told apart.
	const head = await raw(env.url, async (sock) => {
		sock.write(`GET /v1/tools HTTP/1.1\r\nHost: ${host}\r\n`);
		for (let i = 0; i < 40 && !sock.destroyed; i++) {
			await sleep(250);
			if (!sock.destroyed)
				sock.write(`X-Slow-${i}: x\r\n`);
		}
	});
	assert.equal(head.status, 408);
	assert.match(head.json.error.message, /head/);
	const body = await raw(env.url, async (sock) => {
		sock.write(request('POST', '/mcp', host, { ...hdr,
		    'Mcp-Session-Id': sid, 'Content-Length': '100' }));
		for (let i = 0; i < 40 && !sock.destroyed; i++) {
			await sleep(250);
			if (!sock.destroyed)
				sock.write(' ');
		}
	});
	assert.equal(body.status, 408);
	assert.doesNotMatch(body.json.error.message, /head/);
});

// The token-refused lines frontd logs for a peer: one per answer of
// mcvmd to an authentication.
function refusals(from) {
	const log = fs.readFileSync(process.env.MCVM_LOG, 'utf8');
	return log.split('\n').filter((l) => l.includes('token refused') &&
	    l.includes(` ${from}:`)).length;
}

const badToken = () => 'Bearer ' + crypto.randomBytes(32)
    .toString('base64url');

test('a refused token is not looked up again at once', async () => {
	const auth = badToken();
	for (let i = 0; i < 30; i++) {
		const r = await raw(env.url, request('POST', '/mcp', host,
		    { ...hdr, Authorization: auth, 'Mcp-Session-Id': sid },
		    ping), '127.0.0.4');
		assert.equal(r.status, 401, r.body);
		assert.match(r.headers['www-authenticate'], /invalid_token/);
	}
	// One lookup per AUTH_NEG_TTL (5 s) at most: 30 requests take far
	// less than the minute it would take to need 12.
	const n = refusals('127.0.0.4');
	assert.ok(n >= 1 && n < 12, `${n} lookups reached mcvmd`);
});

test('bad tokens from one peer are limited before they reach mcvmd',
    async () => {
	// frontd-test.conf: unauthenticated rate 10 burst 100.
	const t0 = Date.now();
	const codes = [];
	let retry;
	for (let round = 0; round < 10; round++) {
		const rs = await Promise.all(Array.from({ length: 30 }, () =>
		    raw(env.url, request('GET', '/v1/tools', host,
		    { Authorization: badToken() }), '127.0.0.5')));
		for (const r of rs) {
			codes.push(r.status);
			if (r.status === 429) {
				retry = r.headers['retry-after'];
				assert.equal(r.json.error.code, 'rate_limited');
			}
		}
	}
	const secs = (Date.now() - t0) / 1000;
	assert.ok(codes.includes(429), 'some requests were limited');
	assert.match(retry, /^[1-9][0-9]*$/);
	assert.ok(codes.every((c) => c === 401 || c === 429), `${codes}`);
	// What reached mcvmd is what the budget allows, whatever the speed.
	const n = refusals('127.0.0.5');
	assert.ok(n <= 100 + 10 * Math.ceil(secs) + 10,
	    `${n} of ${codes.length} lookups reached mcvmd in ${secs} s`);
	assert.equal(n, codes.filter((c) => c === 401).length);
	// A good token from that same peer is still served.
	const ok = await raw(env.url, request('GET', '/v1/tools', host,
	    { Authorization: hdr.Authorization }), '127.0.0.5');
	assert.notEqual(ok.status, 401);
});

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
