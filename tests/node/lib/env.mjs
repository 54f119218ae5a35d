// What the suite script tells the node tests about the running suite.
import fs from 'node:fs';

function need(name) {
	const v = process.env[name];
	if (!v)
		throw new Error(`${name} is not set: run these tests through ` +
		    'tests/suites/mcp');
	return v;
}

export const url = need('MCVM_URL');		// http://127.0.0.1:PORT
export const mcpUrl = `${url}/mcp`;
export const token = fs.readFileSync(need('MCVM_TOKEN_FILE'), 'utf8').trim();

export function tokenFrom(name) {
	return fs.readFileSync(need(name), 'utf8').trim();
}

export const bodyLimit = Number(process.env.MCVM_BODY_LIMIT ?? 65536);
export const headerLimit = Number(process.env.MCVM_HEADER_LIMIT ?? 8192);

export const baseHeaders = {
	'content-type': 'application/json',
	accept: 'application/json, text/event-stream',
};

export function auth(t = token) {
	return { authorization: `Bearer ${t}` };
}

// A raw POST to /mcp; returns { status, headers, text, json }.
export async function post(body, headers = {}, path = '/mcp') {
	const res = await fetch(`${url}${path}`, {
		method: 'POST',
		headers: { ...baseHeaders, ...auth(), ...headers },
		body: typeof body === 'string' ? body : JSON.stringify(body),
	});
	const text = await res.text();
	let json;
	try {
		json = JSON.parse(text);
	} catch {
		json = undefined;
	}
	return { status: res.status, headers: res.headers, text, json };
}

export const initBody = (version = '2025-11-25', id = 1) => ({
	jsonrpc: '2.0', id, method: 'initialize',
	params: {
		protocolVersion: version, capabilities: {},
		clientInfo: { name: 'mcvm-test', version: '1' },
	},
});

// A fresh session; returns its id and negotiated version.
export async function session(version = '2025-11-25', t = token) {
	const r = await post(initBody(version), auth(t));
	if (r.status !== 200)
		throw new Error(`initialize: ${r.status} ${r.text}`);
	const sid = r.headers.get('mcp-session-id');
	await post({ jsonrpc: '2.0', method: 'notifications/initialized' },
	    { ...auth(t), 'mcp-session-id': sid, 'mcp-protocol-version':
	    r.json.result.protocolVersion });
	return { sid, version: r.json.result.protocolVersion };
}
