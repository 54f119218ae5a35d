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

export const POLL_MS = 200;
export const JOB_WAIT_MS = 120000;

// Pages a job's output until it has ended and every byte was read:
// { stdout, stderr, pages, last }, strings in UTF-8, Buffers in base64.
export async function collect(client, vm, job, encoding = 'utf-8') {
	const out = { stdout: [], stderr: [], pages: [], last: null };
	let cursor;
	const deadline = Date.now() + JOB_WAIT_MS;
	for (;;) {
		const args = { vm_id: vm, job_id: job, encoding };
		if (cursor)
			args.cursor = cursor;
		const r = await call(client, 'vm_job_output', args);
		out.pages.push(r);
		if (encoding === 'utf-8') {
			out.stdout.push(r.stdout);
			out.stderr.push(r.stderr);
		} else {
			out.stdout.push(Buffer.from(r.stdout_base64, 'base64'));
			out.stderr.push(Buffer.from(r.stderr_base64, 'base64'));
		}
		const moved = !cursor ||
		    r.next_cursor.stdout !== cursor.stdout ||
		    r.next_cursor.stderr !== cursor.stderr;
		cursor = r.next_cursor;
		out.last = r;
		if (r.state !== 'running' && !moved)
			break;
		if (r.state === 'running' && !moved)
			await sleep(POLL_MS);
		assert.ok(Date.now() < deadline, `job ${job} did not end`);
	}
	if (encoding === 'utf-8') {
		out.stdout = out.stdout.join('');
		out.stderr = out.stderr.join('');
	} else {
		out.stdout = Buffer.concat(out.stdout);
		out.stderr = Buffer.concat(out.stderr);
	}
	return out;
}

