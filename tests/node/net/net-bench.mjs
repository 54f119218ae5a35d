// The cost of network setup in vm_create, through the MCP SDK client:
// vm_create's latency with the network off, on, and on with a port
// forward.  A configuration's first VM boots, and has the configuration's
// template made (its memory size, other than the default's, keeps the VMs
// with the network off from the default template); once the templates
// are made, MCVM_NET_BENCH_RUNS (3) VMs of each kind restore from them,
// interleaved so that drift hits all alike.  Each VM is destroyed before
// the next is made.  That on a suite without warm clones
// (MCVM_NET_BENCH_PART setup); with them (warm), vm_create to the first
// output of `echo ready`, network off and on, once a warm clone of that
// configuration (a memory size other than the default's) is ready each
// time.  Run through tests/bench/network, inside its test network;
// MCVM_CTL is mcvmctl with its -s.
import * as env from '../lib/env.mjs';
import * as mcp from '../lib/client.mjs';
import { status, warmReady } from '../lib/ctl.mjs';

const RUNS = Number(process.env.MCVM_NET_BENCH_RUNS ?? 3);

const client = await mcp.connect(env.token, 'mcvm-net-bench');
const call = (name, args) => mcp.call(client, name, args);

const OWN = { memory_mib: 576 };
const kinds = {
	off: { ...OWN },
	on: { ...OWN, network: 'on' },
	'on, 1 forward': { ...OWN, network: 'on', port_forwards: ['auto:22'] },
};
let seq = 0;

async function create(args) {
	const t0 = performance.now();
	const c = await call('vm_create', { request_id:
	    `netbench-${process.pid}-${++seq}`, ...args });
	const t = performance.now() - t0;
	await call('vm_destroy', { vm_id: c.vm_id });
	return t;
}

// Until no template, the host's or a workspace's, is being made.
async function settled() {
	for (const end = Date.now() + 120000; Date.now() < end;) {
		if (!/^template[ 0-9]*: .*being made/m.test(status()))
			return;
		await mcp.sleep(200);
	}
	throw new Error('a template is still being made');
}

const median = (a) => {
	const s = [...a].sort((x, y) => x - y);
	return s.length % 2 ? s[(s.length - 1) / 2] :
	    (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const ms = (t) => `${t.toFixed(1)} ms`;

async function firstOutput(args) {
	const t0 = performance.now();
	const c = await call('vm_create', { request_id:
	    `netbench-${process.pid}-${++seq}`, ...args });
	const { job_id } = await call('vm_exec', { vm_id: c.vm_id,
	    request_id: `netbench-${process.pid}-${++seq}`,
	    command: 'echo ready' });
	for (;;) {
		const o = await call('vm_job_output', { vm_id: c.vm_id,
		    job_id });
		if (o.stdout.length > 0 || o.state !== 'running')
			break;
	}
	const t = performance.now() - t0;
	await call('vm_destroy', { vm_id: c.vm_id });
	return t;
}

if (process.env.MCVM_NET_BENCH_PART === 'warm') {
	const warm = { off: kinds.off, on: kinds.on };
	// Each configuration's first VM boots, its second restores from the
	// host's template and has the workspace's made, which makes a warm
	// clone.
	for (const args of Object.values(warm)) {
		await create(args);
		await settled();
		await create(args);
		await settled();
	}
	const t = { off: [], on: [] };
	for (let i = 0; i < RUNS; i++)
		for (const [k, args] of Object.entries(warm)) {
			await warmReady('bench', 2, 120);
			t[k].push(await firstOutput(args));
		}
	for (const [k, a] of Object.entries(t))
		console.log(`vm_create -> first exec output, a warm clone, ` +
		    `${OWN.memory_mib} MiB, network ${k} (${RUNS} runs): ` +
		    `median ${ms(median(a))}, max ${ms(Math.max(...a))}`);
	await client.close();
	process.exit(0);
}

const booted = {};
for (const [k, args] of Object.entries(kinds)) {
	booted[k] = await create(args);
	await settled();
}
const times = Object.fromEntries(Object.keys(kinds).map((k) => [k, []]));
for (let i = 0; i < RUNS; i++)
	for (const [k, args] of Object.entries(kinds)) {
		times[k].push(await create(args));
		await settled();
	}

for (const [k, a] of Object.entries(times))
	console.log(`vm_create, network ${k}: the configuration's first VM ` +
	    `(booted) ${ms(booted[k])}; restored from its template ` +
	    `(${RUNS} runs): median ${ms(median(a))}, min ` +
	    `${ms(Math.min(...a))}, max ${ms(Math.max(...a))}`);
for (const k of Object.keys(kinds).filter((x) => x !== 'off'))
	console.log(`network setup adds to a restored vm_create (${k} vs ` +
	    `off): median ${ms(median(times[k]) - median(times.off))}`);
await client.close();
