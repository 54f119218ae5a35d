// The official MCP TypeScript SDK client against a running mcvm suite.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from
    '@modelcontextprotocol/sdk/client/streamableHttp.js';
import * as env from '../lib/env.mjs';

const CATALOGUE = [
	'vm_create', 'vm_list', 'vm_status', 'vm_stop', 'vm_start',
	'vm_suspend', 'vm_resume', 'vm_destroy', 'vm_exec', 'vm_job_status',
	'vm_job_output', 'vm_job_cancel', 'vm_read_file', 'vm_write_file',
	'vm_screenshot', 'vm_send_keys', 'vm_type_text', 'vm_click',
	'vm_mouse_move', 'vm_serial_read', 'vm_snapshot_create',
	'vm_snapshot_restore', 'vm_snapshot_delete', 'vm_snapshot_list',
	'image_list', 'image_create', 'image_info', 'image_convert',
	'image_resize', 'image_delete', 'image_snapshot_create',
	'image_snapshot_apply', 'image_snapshot_delete', 'image_snapshot_list',
	'vm_list_files', 'image_upload_url', 'image_download_url', 'vm_fork',
];

async function connect(token = env.token) {
	const client = new Client({ name: 'mcvm-sdk-test', version: '1.0.0' });
	const transport = new StreamableHTTPClientTransport(
	    new URL(env.mcpUrl),
	    { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
	await client.connect(transport);
	return { client, transport };
}

test('SDK client connects with a bearer token and initializes', async () => {
	const { client, transport } = await connect();
	assert.ok(transport.sessionId, 'a session id');
	assert.match(transport.sessionId, /^[0-9a-f]{32}$/);
	const info = client.getServerVersion();
	assert.equal(info.name, 'mcvm');
	assert.ok(client.getServerCapabilities().tools);
	assert.ok(client.getInstructions().includes('vm_create'));
	await client.close();
});

test('SDK client lists the whole catalogue with schemas', async () => {
	const { client } = await connect();
	const { tools } = await client.listTools();
	assert.deepEqual(tools.map((t) => t.name).sort(),
	    [...CATALOGUE].sort());
	for (const t of tools) {
		assert.equal(t.inputSchema.type, 'object', t.name);
		assert.equal(t.inputSchema.additionalProperties, false, t.name);
		assert.equal(t.outputSchema.type, 'object', t.name);
		assert.ok(t.description.length > 40, t.name);
		for (const h of ['readOnlyHint', 'destructiveHint',
		    'idempotentHint', 'openWorldHint'])
			assert.equal(typeof t.annotations[h], 'boolean',
			    `${t.name}.${h}`);
	}
	const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
	assert.equal(byName.vm_list.annotations.readOnlyHint, true);
	assert.equal(byName.vm_destroy.annotations.destructiveHint, true);
	assert.equal(byName.vm_exec.annotations.openWorldHint, true);
	assert.deepEqual(byName.vm_create.inputSchema.required,
	    ['request_id']);
	assert.deepEqual(byName.vm_create.inputSchema.properties.network.enum,
	    ['off', 'on']);
	await client.close();
});

test('the file tools say what they take and give', async () => {
	const { client } = await connect();
	const { tools } = await client.listTools();
	const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
	const rd = byName.vm_read_file, wr = byName.vm_write_file;
	const ls = byName.vm_list_files;
	assert.deepEqual(rd.inputSchema.properties.encoding.enum,
	    ['utf-8', 'base64']);
	assert.deepEqual(Object.keys(rd.outputSchema.properties).sort(),
	    ['bytes', 'content', 'content_base64', 'encoding', 'eof',
	    'next_offset', 'offset', 'path', 'size']);
	assert.deepEqual(rd.outputSchema.required.sort(), ['bytes',
	    'encoding', 'eof', 'next_offset', 'offset', 'path', 'size']);
	// Either contents, neither required by the schema: one, said in
	// their docs and checked by the server.
	assert.deepEqual(wr.inputSchema.required.sort(), ['path', 'vm_id']);
	assert.equal(wr.inputSchema.properties.content.type, 'string');
	assert.match(wr.inputSchema.properties.content.description,
	    /not both/);
	assert.match(wr.description, /exactly one/);
	assert.match(wr.description, /parent directories are created/);
	assert.deepEqual(Object.keys(wr.outputSchema.properties).sort(),
	    ['path', 'size', 'written']);
	assert.equal(ls.annotations.readOnlyHint, true);
	assert.deepEqual(ls.inputSchema.required, ['vm_id']);
	assert.equal(ls.inputSchema.properties.depth.minimum, 1);
	assert.equal(ls.inputSchema.properties.depth.maximum, 4);
	assert.match(ls.description, /At most 512 entries/);
	const item = ls.outputSchema.properties.entries.items;
	assert.deepEqual(Object.keys(item.properties).sort(),
	    ['mode', 'mtime', 'name', 'size', 'type']);
	assert.deepEqual(item.properties.type.enum,
	    ['file', 'dir', 'symlink', 'other']);
	assert.deepEqual(ls.outputSchema.required.sort(),
	    ['entries', 'path', 'truncated']);
	// A path outside /workspace is refused before anything runs.
	for (const path of ['/etc', '../x', '/workspacex']) {
		let text;
		try {
			const r = await client.callTool({ name: 'vm_list_files',
			    arguments: { vm_id: 'vm-0000000000000000', path } });
			assert.ok(r.isError, path);
			text = r.content[0].text;
		} catch (e) {
			text = e.message;	/* invalid params */
		}
		assert.match(text, /relative to \/workspace/, path);
	}
	await client.close();
});

// The schema's pattern for paths says what the validator enforces: each
// sample is accepted by both or refused by both.
test('the path pattern agrees with the path check', async () => {
	const { client } = await connect();
	const { tools } = await client.listTools();
	const rd = tools.find((t) => t.name === 'vm_read_file');
	const re = new RegExp(rd.inputSchema.properties.path.pattern);
	const samples = ['a.py', 'src/a.py', '/workspace', '/workspace/',
	    '/workspace/src/a.py', 'a/..b', '.hidden', './a', '/etc/passwd',
	    '/workspacex', '/', '..', '../x', 'a/../b', 'a/..', '/workspace/..',
	    'tab\there', 'del\x7f'];
	for (const path of samples) {
		const r = await client.callTool({ name: 'vm_read_file',
		    arguments: { vm_id: 'vm-0000000000000000', path } });
		const text = r.content[0].text;
		const accepted = /^no VM vm-0000000000000000/.test(text);
		assert.ok(accepted || /path must be a path/.test(text), text);
		assert.equal(re.test(path), accepted, `${path}: ${text}`);
	}
	await client.close();
});

test('SDK client calls a tool and gets structured content', async () => {
	const { client } = await connect();
	// The SDK checks structuredContent against the tool's outputSchema.
	const r = await client.callTool({ name: 'vm_list', arguments: {} });
	assert.ok(!r.isError, JSON.stringify(r));
	assert.ok(Array.isArray(r.structuredContent.vms));
	assert.deepEqual(JSON.parse(r.content[0].text), r.structuredContent);
	await client.close();
});

test('a tool that finds nothing is a tool error, not a fake result',
    async () => {
	const { client } = await connect();
	const r = await client.callTool({ name: 'image_snapshot_list',
	    arguments: { name: 'nope' } });
	assert.equal(r.isError, true);
	assert.match(r.content[0].text, /no image nope/);
	assert.equal(r.structuredContent, undefined);
	await client.close();
});

test('an unknown VM is a tool error', async () => {
	const { client } = await connect();
	const r = await client.callTool({ name: 'vm_status',
	    arguments: { vm_id: 'vm-0123456789abcdef' } });
	assert.equal(r.isError, true);
	assert.ok(r.content[0].text.length > 0);
	await client.close();
});

test('invalid arguments are a tool error the model can act on', async () => {
	const { client } = await connect();
	const r = await client.callTool({ name: 'vm_status',
	    arguments: { vm_id: 'No VM!' } });
	assert.equal(r.isError, true);
	assert.match(r.content[0].text,
	    /vm_id is neither a VM id .* nor a VM name .*: see vm_list/);
	// A name is looked up like an id, and a missing one points at vm_list.
	const n = await client.callTool({ name: 'vm_status',
	    arguments: { vm_id: 'nope' } });
	assert.equal(n.isError, true);
	assert.equal(n.content[0].text,
	    'no VM nope in this workspace: see vm_list');
	const r2 = await client.callTool({ name: 'vm_create', arguments: {} });
	assert.equal(r2.isError, true);
	assert.match(r2.content[0].text, /request_id is required/);
	await client.close();
});

test('an unknown tool is a JSON-RPC error', async () => {
	const { client } = await connect();
	await assert.rejects(client.callTool({ name: 'no_such_tool',
	    arguments: {} }), /Unknown tool/);
	await client.close();
});

test('a long-running tool with a progressToken reports progress over SSE',
    async () => {
	const { client } = await connect();
	const seen = [];
	const r = await client.callTool({ name: 'vm_create',
	    arguments: { request_id: 'progress-1' } }, undefined,
	    { onprogress: (p) => seen.push(p) });
	assert.ok(Array.isArray(r.content), JSON.stringify(r));
	assert.ok(seen.length >= 1, 'at least one progress notification');
	assert.equal(typeof seen[0].progress, 'number');
	await client.close();
});

test('ping works', async () => {
	const { client } = await connect();
	assert.deepEqual(await client.ping(), {});
	await client.close();
});

test('terminating the session ends it: later use gets 404', async () => {
	const { client, transport } = await connect();
	const sid = transport.sessionId;
	await transport.terminateSession();
	const r = await env.post({ jsonrpc: '2.0', id: 5, method: 'ping' },
	    { 'mcp-session-id': sid });
	assert.equal(r.status, 404);
	assert.equal(r.json.error.code, -32001);
	await client.close();
});

test('each supported protocol version is negotiated as asked', async () => {
	for (const v of ['2025-03-26', '2025-06-18', '2025-11-25']) {
		const r = await env.post(env.initBody(v));
		assert.equal(r.status, 200);
		assert.equal(r.json.result.protocolVersion, v);
	}
	const r = await env.post(env.initBody('2024-01-01'));
	assert.equal(r.json.result.protocolVersion, '2025-11-25');
});

test('batches are accepted on 2025-03-26 only', async () => {
	const old = await env.session('2025-03-26');
	const batch = [
		{ jsonrpc: '2.0', id: 1, method: 'ping' },
		{ jsonrpc: '2.0', id: 2, method: 'tools/call',
		    params: { name: 'vm_list', arguments: {} } },
		{ jsonrpc: '2.0', method: 'notifications/initialized' },
	];
	let r = await env.post(batch, { 'mcp-session-id': old.sid,
	    'mcp-protocol-version': '2025-03-26' });
	assert.equal(r.status, 200);
	assert.equal(r.json.length, 2);
	assert.deepEqual(r.json.map((m) => m.id), [1, 2]);
	assert.ok(Array.isArray(r.json[1].result.structuredContent.vms));
	const cur = await env.session('2025-06-18');
	r = await env.post(batch, { 'mcp-session-id': cur.sid,
	    'mcp-protocol-version': '2025-06-18' });
	assert.equal(r.status, 400);
	assert.equal(r.json.error.code, -32600);
});

test('Accept wildcards are understood', async () => {
	const s = await env.session();
	for (const accept of ['*/*', 'application/*, text/*',
	    'text/event-stream; q=0.5, application/json']) {
		const r = await env.post({ jsonrpc: '2.0', id: 1,
		    method: 'ping' }, { 'mcp-session-id': s.sid, accept });
		assert.equal(r.status, 200, accept);
	}
});

test('notifications and responses alone get 202', async () => {
	const s = await env.session();
	const r = await env.post({ jsonrpc: '2.0',
	    method: 'notifications/cancelled',
	    params: { requestId: 99, reason: 'test' } },
	    { 'mcp-session-id': s.sid });
	assert.equal(r.status, 202);
	assert.equal(r.text, '');
	const r2 = await env.post({ jsonrpc: '2.0', id: 7, result: {} },
	    { 'mcp-session-id': s.sid });
	assert.equal(r2.status, 202);
});

test('a session belongs to its workspace', async () => {
	const s = await env.session();
	const other = env.tokenFrom('MCVM_TOKEN2_FILE');
	const r = await env.post({ jsonrpc: '2.0', id: 1, method: 'ping' },
	    { ...env.auth(other), 'mcp-session-id': s.sid });
	assert.equal(r.status, 404);
});

test('GET /v1/tools lists the same schemas; POST /v1/tools/{name} calls',
    async () => {
	let res = await fetch(`${env.url}/v1/tools`, { headers: env.auth() });
	assert.equal(res.status, 200);
	const body = await res.json();
	assert.equal(body.tools.length, CATALOGUE.length);
	res = await fetch(`${env.url}/v1/tools/vm_list`, { method: 'POST',
	    headers: { ...env.auth(), 'content-type': 'application/json' },
	    body: '{}' });
	assert.equal(res.status, 200);
	assert.ok(Array.isArray((await res.json()).vms));
	res = await fetch(`${env.url}/v1/tools/image_snapshot_list`, {
	    method: 'POST', headers: { ...env.auth(),
	    'content-type': 'application/json' },
	    body: JSON.stringify({ name: 'nope' }) });
	assert.equal(res.status, 404);
	const err = await res.json();
	assert.equal(err.error.code, 'not_found');
	assert.match(err.error.message, /no image nope/);
	res = await fetch(`${env.url}/v1/tools/vm_status`, { method: 'POST',
	    headers: { ...env.auth(), 'content-type': 'application/json' },
	    body: JSON.stringify({ vm_id: 'vm-0123456789abcdef', x: 1 }) });
	assert.equal(res.status, 400);
	assert.equal((await res.json()).error.code, 'invalid_argument');
	res = await fetch(`${env.url}/v1/tools/vm_status`, { method: 'POST',
	    headers: { ...env.auth(), 'content-type': 'application/json' },
	    body: JSON.stringify({ vm_id: 'vm-0123456789abcdef' }) });
	assert.equal(res.status, 404);
	assert.equal((await res.json()).error.code, 'not_found');
	res = await fetch(`${env.url}/v1/tools/nope`, { method: 'POST',
	    headers: { ...env.auth(), 'content-type': 'application/json' },
	    body: '{}' });
	assert.equal(res.status, 404);
	assert.equal((await res.json()).error.code, 'unknown_tool');
});
