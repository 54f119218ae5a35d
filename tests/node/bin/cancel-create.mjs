// Starts a vm_create over MCP with the official SDK client and cancels it
// (notifications/cancelled) after the given milliseconds.  Prints
// "cancelled" if the call ended by the cancellation, else its result.
//
//	MCVM_URL=... MCVM_TOKEN_FILE=... node bin/cancel-create.mjs RID MS
import { connect } from '../lib/client.mjs';
import * as env from '../lib/env.mjs';

const [rid, ms] = process.argv.slice(2);
const client = await connect(env.token);
const ac = new AbortController();
setTimeout(() => ac.abort('the test cancels it'), Number(ms));
try {
	const r = await client.callTool({ name: 'vm_create',
	    arguments: { request_id: rid, name: rid } }, undefined,
	    { signal: ac.signal, timeout: 120000 });
	console.log(JSON.stringify(r.structuredContent ?? r.content));
} catch (e) {
	console.log(ac.signal.aborted ? 'cancelled' : `error: ${e.message}`);
}
// The SDK sends notifications/cancelled without waiting for it: closing
// at once would abort that POST too.
await new Promise((res) => setTimeout(res, 1000));
await client.close();
