// The cost of network setup in vm_create, through the MCP SDK client:
// vm_create's latency with the network off, on, and on with a port
// forward, every VM booted, MCVM_NET_BENCH_RUNS (3) runs each,
// interleaved so that drift hits all alike.  Each VM is destroyed before the next is made.  Run
// through tests/bench/network, inside its test network.
import * as env from '../lib/env.mjs';
import * as mcp from '../lib/client.mjs';

const RUNS = Number(process.env.MCVM_NET_BENCH_RUNS ?? 3);

const client = await mcp.connect(env.token, 'mcvm-net-bench');
const call = (name, args) => mcp.call(client, name, args);

// Every kind boots: a memory size other than the default keeps the VMs
// with the network off from starting from the template, which would
// compare a restore with a boot.
const BOOT = { memory_mib: 576 };
const kinds = {
	off: { ...BOOT },
	on: { ...BOOT, network: 'on' },
	'on, 1 forward': { ...BOOT, network: 'on', port_forwards: ['auto:22'] },
};
const times = Object.fromEntries(Object.keys(kinds).map((k) => [k, []]));
let seq = 0;
for (let i = 0; i < RUNS; i++) {
	for (const [k, args] of Object.entries(kinds)) {
		const t0 = performance.now();
		const c = await call('vm_create', { request_id:
		    `netbench-${process.pid}-${++seq}`, ...args });
		times[k].push(performance.now() - t0);
		await call('vm_destroy', { vm_id: c.vm_id });
	}
}

const mean = (a) => a.reduce((x, y) => x + y, 0) / a.length;
const median = (a) => {
	const s = [...a].sort((x, y) => x - y);
	return s.length % 2 ? s[(s.length - 1) / 2] :
	    (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const ms = (t) => `${t.toFixed(1)} ms`;
for (const [k, a] of Object.entries(times))
	console.log(`vm_create, network ${k} (${RUNS} runs): mean ` +
	    `${ms(mean(a))}, median ${ms(median(a))}, min ${ms(Math.min(...a))}` +
	    `, max ${ms(Math.max(...a))}`);
for (const k of Object.keys(kinds).filter((x) => x !== 'off'))
	console.log(`network setup adds to vm_create (${k} vs off): mean ` +
	    `${ms(mean(times[k]) - mean(times.off))}, median ` +
	    `${ms(median(times[k]) - median(times.off))}`);
await client.close();
