// The official MCP SDK client as the VM and network tests use it: one
// connection per token, and tool calls that must succeed or must fail.
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from
    '@modelcontextprotocol/sdk/client/streamableHttp.js';
import * as env from './env.mjs';

export const CALL_TIMEOUT_MS = 300000;	// vm_create boots a VM

export async function connect(token, name = 'mcvm-test') {
	const client = new Client({ name, version: '1.0.0' });
	const transport = new StreamableHTTPClientTransport(
	    new URL(env.mcpUrl),
	    { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
	await client.connect(transport);
	return client;
}

// A tool call that must succeed; returns its structured result.
export async function call(client, name, args) {
	const r = await client.callTool({ name, arguments: args }, undefined,
	    { timeout: CALL_TIMEOUT_MS });
	assert.ok(!r.isError, `${name}: ${r.content?.[0]?.text}`);
	assert.ok(r.structuredContent, `${name}: structuredContent`);
	return r.structuredContent;
}

// A tool call that must fail as a tool error; returns its message.
export async function refused(client, name, args) {
	const r = await client.callTool({ name, arguments: args }, undefined,
	    { timeout: CALL_TIMEOUT_MS });
	assert.equal(r.isError, true, `${name} should fail: ` +
	    JSON.stringify(r.structuredContent ?? r.content));
	return r.content[0].text;
}

export const sleep = (ms) => new Promise((res) => setTimeout(res, ms));
