// vm_fork's figures through the MCP SDK client; prints them.
//	a fork of FORK_VMS new VMs from a running 512 MiB guest that has
//	written 100 MiB of its memory: from the call to every new VM's
//	first output of `echo ready` (each asked as soon as the fork
//	answers), the source's pause, and each new VM's QEMU's
//	proportional share of memory (PSS: the pages of the fork's RAM
//	file count once among those that map them); p50 and max over
//	MCVM_BENCH_FORKS runs;
//	the same for a fork of one VM, which loads the checkpoint whole.
// MCVM_TOKEN_FILE's workspace must be allowed 1 + FORK_VMS VMs.
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import * as mcp from '../lib/client.mjs';
import * as env from '../lib/env.mjs';

const RUNS = Number(process.env.MCVM_BENCH_FORKS ?? 3);
const FORK_VMS = 4;

const c = await mcp.connect(env.token, 'mcvm-fork-bench');
let seq = 0;
const rid = () => `fork-bench-${process.pid}-${++seq}`;

function pct(a, p) {
	const s = [...a].sort((x, y) => x - y);
	return s[Math.min(s.length - 1, Math.ceil(p / 100 * s.length) - 1)];
}
const ms = (t) => `${t.toFixed(0)} ms`;
const p50max = (a) => `p50 ${ms(pct(a, 50))}, max ${ms(pct(a, 100))}`;

// A VM's QEMU's PSS in MiB.
function pssMiB(vm) {
	const pid = execFileSync('pgrep', ['-f', `guest=${vm}`],
	    { encoding: 'utf8' }).trim();
	const m = /^Pss:\s+(\d+) kB/m.exec(fs.readFileSync(
	    `/proc/${pid}/smaps_rollup`, 'utf8'));
	return Number(m[1]) / 1024;
}

async function exec(vm, command) {
	const r = await mcp.call(c, 'vm_exec', { vm_id: vm, request_id: rid(),
	    command, wait_seconds: 50 });
	if (r.state !== 'completed')
		throw new Error(`${command}: ${JSON.stringify(r)}`);
	return r.stdout;
}

const src = (await mcp.call(c, 'vm_create', { request_id: rid() })).vm_id;
await exec(src, 'head -c 100m /dev/urandom >/dev/shm/fill');

async function forks(n) {
	const first = [], paused = [], mem = [];
	for (let i = 0; i < RUNS; i++) {
		await mcp.sleep(2000);
		const t0 = performance.now();
		const f = await mcp.call(c, 'vm_fork', { vm_id: src, count: n,
		    request_id: rid() });
		const outs = await Promise.all(f.vms.map(async (v) => {
			if (await exec(v.vm_id, 'echo ready') !== 'ready\n')
				throw new Error(`${v.vm_id}: no output`);
			return performance.now() - t0;
		}));
		first.push(Math.max(...outs));
		paused.push(f.paused_ms);
		await mcp.sleep(3000);
		for (const v of f.vms)
			mem.push(pssMiB(v.vm_id));
		for (const v of f.vms)
			await mcp.call(c, 'vm_destroy', { vm_id: v.vm_id });
	}
	console.log(`vm_fork of ${n} from a running 512 MiB guest with 100 ` +
	    `MiB written (${RUNS} runs): the call to the last new VM's first ` +
	    `output ${p50max(first)}; the source paused ${p50max(paused)}; ` +
	    `each new VM's QEMU, idle: PSS p50 ${pct(mem, 50).toFixed(0)} ` +
	    `MiB`);
}

await forks(FORK_VMS);
await forks(1);
await mcp.call(c, 'vm_destroy', { vm_id: src });
await c.close();
