// Hibernation's figures through the MCP SDK client; prints them.
//	a 512 MiB guest hibernated (vm_suspend's call to its checkpoint
//	durable and its processes gone) and woken (vm_exec's call on the
//	hibernated VM to its command's output), p50 and max over
//	MCVM_BENCH_HIBERNATES, and the checkpoint's size;
//	the host's available memory with ten idle VMs running, and once they
//	are hibernated.
// MCVM_TOKEN_FILES: the token files of the workspaces the ten VMs are
// made in, a workspace holding four VMs at most.
import fs from 'node:fs';
import * as mcp from '../lib/client.mjs';

const RUNS = Number(process.env.MCVM_BENCH_HIBERNATES ?? 5);
const IDLE_VMS = 10;
const PER_WS = 4;
const GUEST_MIB = 512;

const files = (process.env.MCVM_TOKEN_FILES ?? '').split(',')
    .filter((f) => f !== '');
const clients = [];
for (const f of files)
	clients.push(await mcp.connect(fs.readFileSync(f, 'utf8').trim(),
	    'mcvm-hibernate-bench'));
if (clients.length * PER_WS < IDLE_VMS)
	throw new Error(`MCVM_TOKEN_FILES: ${IDLE_VMS} VMs need ` +
	    `${Math.ceil(IDLE_VMS / PER_WS)} workspaces`);
let seq = 0;
const rid = () => `hib-bench-${process.pid}-${++seq}`;

function pct(a, p) {
	const s = [...a].sort((x, y) => x - y);
	return s[Math.min(s.length - 1, Math.ceil(p / 100 * s.length) - 1)];
}
const ms = (t) => `${t.toFixed(0)} ms`;

function memAvailableMiB() {
	const m = /MemAvailable:\s+(\d+) kB/.exec(fs.readFileSync(
	    '/proc/meminfo', 'utf8'));
	return Number(m[1]) / 1024;
}

async function exec(c, vm, command) {
	const r = await mcp.call(c, 'vm_exec', { vm_id: vm, request_id: rid(),
	    command, wait_seconds: 50 });
	if (r.state !== 'completed')
		throw new Error(`${command}: ${JSON.stringify(r)}`);
	return r.stdout;
}

// One guest, hibernated and woken in turn.
const c0 = clients[0];
const vm = (await mcp.call(c0, 'vm_create', { request_id: rid() })).vm_id;
await exec(c0, vm, 'true');
const down = [], up = [];
let ckpt = 0;
for (let i = 0; i < RUNS; i++) {
	let t0 = performance.now();
	const s = await mcp.call(c0, 'vm_suspend', { vm_id: vm });
	down.push(performance.now() - t0);
	if (s.state !== 'hibernated')
		throw new Error(`vm_suspend: ${JSON.stringify(s)}`);
	ckpt = s.suspension.checkpoint_bytes;
	t0 = performance.now();
	if (await exec(c0, vm, 'echo back') !== 'back\n')
		throw new Error('no output after the wake');
	up.push(performance.now() - t0);
}
console.log(`hibernation of a ${GUEST_MIB} MiB guest (${RUNS} runs, a ` +
    `${(ckpt / 1048576).toFixed(0)} MiB checkpoint): to durable and its ` +
    `processes gone p50 ${ms(pct(down, 50))}, max ${ms(pct(down, 100))}; ` +
    `from vm_exec's call on it to the output p50 ${ms(pct(up, 50))}, max ` +
    `${ms(pct(up, 100))}`);
await mcp.call(c0, 'vm_destroy', { vm_id: vm });

// Ten idle VMs: the host's memory while they run, and hibernated.
const vms = [];
for (let i = 0; i < IDLE_VMS; i++) {
	const c = clients[Math.floor(i / PER_WS)];
	const v = (await mcp.call(c, 'vm_create', { request_id: rid() })).vm_id;
	await exec(c, v, 'true');
	vms.push([c, v]);
}
await mcp.sleep(5000);
const running = memAvailableMiB();
for (const [c, v] of vms)
	await mcp.call(c, 'vm_suspend', { vm_id: v });
await mcp.sleep(2000);
const hibernated = memAvailableMiB();
console.log(`host memory available with ${IDLE_VMS} idle VMs running: ` +
    `${running.toFixed(0)} MiB; once they are hibernated: ` +
    `${hibernated.toFixed(0)} MiB (${(hibernated - running).toFixed(0)} ` +
    `MiB back, ${((hibernated - running) / IDLE_VMS).toFixed(0)} MiB a VM)`);
for (const [c, v] of vms)
	await mcp.call(c, 'vm_destroy', { vm_id: v });
for (const c of clients)
	await c.close();
