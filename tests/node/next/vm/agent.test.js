// An agent on the TypeScript SDK v2 client (@modelcontextprotocol/client),
// speaking protocol 2026-07-28 to a real VM: no session, every request
// on its own; a long job run as a task through the tasks extension's
// client (@modelcontextprotocol/ext-tasks), which polls tasks/get.  Run
// by tests/suites/vms on this tree's Node.js 22, after the 1.x suite.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { Client, StreamableHTTPClientTransport } from
    '@modelcontextprotocol/client';
import { createTaskSessionFromClient, resultFromTaskOutcome } from
    '@modelcontextprotocol/ext-tasks/client';

const V = '2026-07-28';
const url = new URL('/mcp', process.env.MCVM_URL);
const token = fs.readFileSync(process.env.MCVM_TOKEN_FILE, 'utf8').trim();
const info = { name: 'mcvm-v2-test', version: '1.0.0' };
const caps = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
let client, session, vm, rid = 0;

// The tasks client's requests, framed and sent as the revision says.
async function rawDispatch(request) {
	const body = { jsonrpc: '2.0', id: `raw-${++rid}`, ...request };
	const headers = { authorization: `Bearer ${token}`,
	    'content-type': 'application/json',
	    accept: 'application/json, text/event-stream',
	    'mcp-protocol-version': V, 'mcp-method': body.method };
	if (typeof body.params?.name === 'string')
		headers['mcp-name'] = body.params.name;
	const r = await fetch(url, { method: 'POST', headers,
	    body: JSON.stringify(body) });
	return r.json();
}

async function call(name, args) {
	const r = await client.callTool({ name, arguments: args });
	assert.equal(r.isError, false, JSON.stringify(r));
	return r.structuredContent;
}

before(async () => {
	// Its own calls declare no tasks: they are answered whole.  The
	// tasks client's requests declare the extension (caps).
	client = new Client(info, { versionNegotiation: { mode: { pin: V } } });
	await client.connect(new StreamableHTTPClientTransport(url,
	    { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
	session = createTaskSessionFromClient(client, { endpointId: 'mcvm',
	    rawDispatch, v2RequestFraming: { protocolVersion: V,
	    clientInfo: info, clientCapabilities: caps } });
});

after(async () => {
	if (vm)
		await client.callTool({ name: 'vm_destroy',
		    arguments: { vm_id: vm } });
	await session?.close();
	await client?.close();
});

test('the v2 client speaks 2026-07-28 without a session', async () => {
	const { tools } = await client.listTools();
	assert.ok(tools.some((t) => t.name === 'vm_exec'));
	const r = await client.callTool({ name: 'vm_list', arguments: {} });
	assert.ok(Array.isArray(r.structuredContent.vms));
	assert.equal(r._meta['io.modelcontextprotocol/serverInfo'].name,
	    'mcvm');
});

test('a VM made, a file written and read, a command run', async () => {
	vm = (await call('vm_create',
	    { request_id: `v2-create-${process.pid}` })).vm_id;
	assert.match(vm, /^vm-[0-9a-f]{16}$/);
	await call('vm_write_file', { vm_id: vm, path: 'v2.txt',
	    content: 'from the v2 client\n' });
	const f = await call('vm_read_file', { vm_id: vm, path: 'v2.txt' });
	assert.equal(f.content, 'from the v2 client\n');
	const x = await call('vm_exec', { vm_id: vm, wait_seconds: 30,
	    request_id: `v2-exec-${process.pid}`,
	    command: 'cat /workspace/v2.txt' });
	assert.equal(x.stdout, 'from the v2 client\n');
});

test('a long job as a task: settled by the tasks client with its exit ' +
    'and output', async () => {
	const ex = await session.callTool('vm_exec', { vm_id: vm,
	    request_id: `v2-task-${process.pid}`, timeout_seconds: 300,
	    command: 'sleep 40; echo done; exit 4' });
	const { outcome } = await ex.settle();
	assert.equal(outcome.status, 'completed', JSON.stringify(outcome));
	const r = resultFromTaskOutcome(outcome);
	assert.equal(r.structuredContent.state, 'completed');
	assert.equal(r.structuredContent.exit_code, 4);
	assert.equal(r.structuredContent.stdout, 'done\n');
});
