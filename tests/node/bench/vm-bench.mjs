// Benchmarks of the VM path through the MCP SDK client; prints figures.
//	vm_create -> first exec output: a workspace's first VM, restored
//	from the host's template's full stream, in each workspace of
//	MCVM_TOKEN_FILES; then (p50, p95 over MCVM_BENCH_CREATES) warm
//	clones of the workspace's shared template, which that first VM had
//	made, each once one is ready (MCVM_CTL: mcvmctl with its -s), and
//	clones of it back to back
//	exec round-trip over MCP on a running VM (p50, p99): a vm_exec, to
//	its running job's handle; and to the command's result, through the
//	SDK client and as plain keep-alive HTTP in the same session (the
//	SDK's own share), and with 50 ms between calls; a vm_list for the part that is the client's,
//	frontd's and mcvmd's
//	a screenshot's latency (p50, p99) and vm_type_text's characters per
//	second
//	host memory per idle VM beyond its guest RAM (resident, anonymous, and
//	the proportional share of each of several idle VMs)
//	a live snapshot of a running guest of 512 MiB: its create, restore
//	and delete (p50, max over MCVM_BENCH_SNAPSHOTS) and its saved state
import fs from 'node:fs';
import http from 'node:http';
import { execFileSync } from 'node:child_process';
import * as env from '../lib/env.mjs';
import * as mcp from '../lib/client.mjs';
import { warmReady } from '../lib/ctl.mjs';

const CREATES = Number(process.env.MCVM_BENCH_CREATES ?? 10);
const EXECS = Number(process.env.MCVM_BENCH_EXECS ?? 100);
const SHOTS = Number(process.env.MCVM_BENCH_SHOTS ?? 30);
const SNAPSHOTS = Number(process.env.MCVM_BENCH_SNAPSHOTS ?? 5);
const KEEP = Math.min(CREATES, 4);	// idle VMs kept for the memory figures
const GUEST_MIB = 512;

const client = await mcp.connect(env.token, 'mcvm-bench');
const call = (name, args) => mcp.call(client, name, args);

function pct(a, p) {
	const s = [...a].sort((x, y) => x - y);
	return s[Math.min(s.length - 1, Math.ceil(p / 100 * s.length) - 1)];
}

const ms = (t) => `${t.toFixed(1)} ms`;
let seq = 0;

// Runs a command and waits for its first output byte.
async function firstOutput(c, vm, command) {
	const { job_id } = await mcp.call(c, 'vm_exec', { vm_id: vm,
	    request_id: `bench-${process.pid}-${++seq}`, command });
	for (;;) {
		const o = await mcp.call(c, 'vm_job_output', { vm_id: vm,
		    job_id });
		if (o.stdout.length > 0 || o.state !== 'running')
			return o;
	}
}

// Creation to first output: each workspace's first VM (the full stream),
// then, its shared template made meanwhile, clones of it.
async function created(c, i) {
	const t0 = performance.now();
	const r = await mcp.call(c, 'vm_create', { request_id:
	    `bench-create-${process.pid}-${i}` });
	const out = await firstOutput(c, r.vm_id, 'echo ready');
	if (out.stdout !== 'ready\n')
		throw new Error(`unexpected output ${out.stdout}`);
	return { vm: r.vm_id, ms: performance.now() - t0 };
}
const firsts = [];
const files = (process.env.MCVM_TOKEN_FILES ?? '').split(',')
    .filter((f) => f !== '');
for (const f of files) {
	const c = await mcp.connect(fs.readFileSync(f, 'utf8').trim(),
	    'mcvm-bench-first');
	const r = await created(c, `first-${firsts.length}`);
	firsts.push(r.ms);
	await mcp.call(c, 'vm_destroy', { vm_id: r.vm });
	await c.close();
}
if (firsts.length > 0)
	console.log(`vm_create -> first exec output, a workspace's first VM ` +
	    `(the host template's full stream; ${firsts.length} ` +
	    `workspaces): p50 ${ms(pct(firsts, 50))}, max ` +
	    `${ms(pct(firsts, 100))}`);
// The shared template is made in about a second.
await new Promise((r) => setTimeout(r, 3000));
// Each vm_create once the workspace's template keeps a warm clone ready
// again (mcvm.conf(5)'s warm; it makes one 2 s after its last
// vm_create), as an agent's creations come: each takes the warm clone.
const warms = [];
for (let i = 0; i < CREATES; i++) {
	await warmReady('bench');
	const r = await created(client, `warm-${i}`);
	warms.push(r.ms);
	await call('vm_destroy', { vm_id: r.vm });
}
console.log(`vm_create -> first exec output, a warm clone of the ` +
    `workspace's shared template each (${CREATES} new VMs): p50 ` +
    `${ms(pct(warms, 50))}, p95 ${ms(pct(warms, 95))}`);
// Back to back: the first takes the warm clone, the others restore from
// the template on demand.
await warmReady('bench');
const creates = [], kept = [];
let vm;
for (let i = 0; i < CREATES; i++) {
	const r = await created(client, i);
	creates.push(r.ms);
	if (i >= CREATES - KEEP)
		kept.push(r.vm);
	else
		await call('vm_destroy', { vm_id: r.vm });
	vm = r.vm;
}
console.log(`vm_create -> first exec output, clones of the workspace's ` +
    `shared template back to back (${CREATES} new VMs; the first takes ` +
    `the warm clone, the others restore on demand): p50 ` +
    `${ms(pct(creates, 50))}, p95 ${ms(pct(creates, 95))}`);

// Exec round-trip: a vm_exec of `true`, to its running job's handle, then
// vm_job_status until it is completed; and one vm_exec of `true` that
// waits for its result.
const rtts = [], polled = [], handles = [], jobs = [];
for (let i = 0; i < EXECS; i++) {
	let t0 = performance.now();
	const r = await call('vm_exec', { vm_id: vm, wait_seconds: 10,
	    request_id: `bench-rtt-${process.pid}-${i}`, command: 'true' });
	rtts.push(performance.now() - t0);
	if (r.state !== 'completed' || r.exit_code !== 0)
		throw new Error(`true: ${JSON.stringify(r)}`);
	jobs.push(r.runtime_ms);
	t0 = performance.now();
	const { job_id } = await call('vm_exec', { vm_id: vm,
	    request_id: `bench-poll-${process.pid}-${i}`, command: 'true' });
	handles.push(performance.now() - t0);
	for (;;) {
		const s = await call('vm_job_status', { vm_id: vm, job_id });
		if (s.state !== 'running')
			break;
	}
	polled.push(performance.now() - t0);
}
// The same vm_exec as JSON-RPC POSTed to /mcp by node:http on one
// keep-alive connection, in the SDK client's session: the round-trip
// without the SDK client's own work.  On another of the kept VMs: a VM
// runs at most 256 jobs.
const plainVm = kept.find((v) => v !== vm) ?? vm;
const keep = new http.Agent({ keepAlive: true, maxSockets: 1 });
const mcpUrl = new URL(env.mcpUrl);
function plainExec(i) {
	const args = { vm_id: plainVm, wait_seconds: 10,
	    request_id: `bench-plain-${process.pid}-${i}`, command: 'true' };
	const body = JSON.stringify({ jsonrpc: '2.0', id: i,
	    method: 'tools/call',
	    params: { name: 'vm_exec', arguments: args } });
	return new Promise((resolve, reject) => {
		const req = http.request({ host: mcpUrl.hostname,
		    port: mcpUrl.port, path: mcpUrl.pathname, method: 'POST', agent: keep, headers: {
		    'content-type': 'application/json',
		    accept: 'application/json, text/event-stream',
		    authorization: `Bearer ${env.token}`,
		    'mcp-session-id': client.transport.sessionId,
		    'mcp-protocol-version': client.transport.protocolVersion,
		    'content-length': Buffer.byteLength(body) } }, (res) => {
			const parts = [];
			res.on('data', (d) => parts.push(d));
			res.on('end', () => resolve(JSON.parse(
			    Buffer.concat(parts).toString()).result));
		});
		req.on('error', reject);
		req.end(body);
	});
}
const plain = [];
for (let i = 0; i < EXECS; i++) {
	const t0 = performance.now();
	const r = await plainExec(i);
	plain.push(performance.now() - t0);
	if (r?.structuredContent?.exit_code !== 0)
		throw new Error(`plain true: ${JSON.stringify(r)}`);
}
keep.destroy();
// The same vm_exec through the SDK client with a pause before each, as an
// agent's calls come (its model's time between them): the guest's spare
// shell (see mcvm-guestd(8)) is then started before the call.  Back to
// back, as above, each call's shell starts while the call waits.
const spaced = [], spacedJobs = [];
for (let i = 0; i < EXECS; i++) {
	await new Promise((resolve) => setTimeout(resolve, 50));
	const t0 = performance.now();
	const r = await call('vm_exec', { vm_id: plainVm, wait_seconds: 10,
	    request_id: `bench-spaced-${process.pid}-${i}`, command: 'true' });
	spaced.push(performance.now() - t0);
	if (r.state !== 'completed' || r.exit_code !== 0)
		throw new Error(`spaced true: ${JSON.stringify(r)}`);
	spacedJobs.push(r.runtime_ms);
}
// The part of every call that is not the guest's: vm_list through the
// same client (the HTTP request, the SDK, frontd and mcvmd).
const lists = [];
for (let i = 0; i < EXECS; i++) {
	const t0 = performance.now();
	await call('vm_list', {});
	lists.push(performance.now() - t0);
}
console.log(`exec round-trip over MCP (${EXECS} runs): a vm_exec of ` +
    `true, to the handle of its running job: p50 ` +
    `${ms(pct(handles, 50))}, p99 ${ms(pct(handles, 99))}`);
console.log(`exec to its result over MCP (true, back to back, ` +
    `${EXECS} runs): one ` +
    `vm_exec with wait_seconds: p50 ${ms(pct(rtts, 50))}, p99 ` +
    `${ms(pct(rtts, 99))}, of which the job itself in the guest (its ` +
    `runtime_ms) p50 ${ms(pct(jobs, 50))}; the same without the SDK ` +
    `client (JSON-RPC POSTs by node:http, keep-alive): p50 ` +
    `${ms(pct(plain, 50))}, p99 ${ms(pct(plain, 99))}; vm_exec, then ` +
    `vm_job_status until completed: p50 ${ms(pct(polled, 50))}, p99 ` +
    `${ms(pct(polled, 99))}`);
console.log(`exec to its result over MCP, 50 ms between calls (true, ` +
    `${EXECS} runs): p50 ${ms(pct(spaced, 50))}, p99 ` +
    `${ms(pct(spaced, 99))}, of which the job itself p50 ` +
    `${ms(pct(spacedJobs, 50))}`);
console.log(`a vm_list, which reaches no guest (${EXECS} runs): p50 ` +
    `${ms(pct(lists, 50))}`);


// Memory: all the VM's processes' RSS, less the guest RAM mapping's; and
// of that, the anonymous memory, which is this VM's alone (the rest is
// QEMU's binary and libraries in the page cache, shared by every VM).
await new Promise((r) => setTimeout(r, 5000));
const TB_MIB = 64;	// mcvmd/qemu.h QEMU_TCG_TB_MIB: the translation cache
function rssKiB(pid, skipGuest) {
	const r = { total: 0, anon: 0, guest: 0, tb: 0, files: 0, pss: 0 };
	let size = 0, name = '', guest = false;
	for (const line of fs.readFileSync(`/proc/${pid}/smaps`, 'utf8')
	    .split('\n')) {
		let m = line.match(/^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/);
		if (m) {
			name = m[1];
			continue;
		}
		m = line.match(/^Size:\s+(\d+) kB/);
		if (m) {
			size = Number(m[1]);
			guest = skipGuest && size === GUEST_MIB * 1024;
		}
		m = line.match(/^Rss:\s+(\d+) kB/);
		if (m) {
			r.total += Number(m[1]);
			if (guest)
				r.guest += Number(m[1]);
		}
		m = line.match(/^Pss:\s+(\d+) kB/);
		if (m && !guest)
			r.pss += Number(m[1]);
		m = line.match(/^Anonymous:\s+(\d+) kB/);
		if (m && !guest) {
			const k = Number(m[1]);
			r.anon += k;
			if (name === '' && size > (TB_MIB - 1) * 1024 &&
			    size <= TB_MIB * 1024)
				r.tb += k;
			else if (name.startsWith('/'))
				r.files += k;
		}
	}
	return r;
}
const pids = (pat) => execFileSync('pgrep', ['-f', pat]).toString().trim()
    .split('\n').map(Number);
const q = rssKiB(pids(`guest=${vm}`)[0], true);
const mon = rssKiB(pids(`mcvm-vmm .* -i ${vm}`)[0], false);
const mib = (k) => (k / 1024).toFixed(1);
console.log(`host memory per idle VM beyond guest RAM: ` +
    `${mib(q.total - q.guest + mon.total)} MiB resident (QEMU ` +
    `${mib(q.total - q.guest)} MiB besides ${mib(q.guest)} MiB of guest ` +
    `RAM touched, monitor ${mib(mon.total)} MiB), of which ` +
    `${mib(q.anon + mon.anon)} MiB anonymous, this VM's own (QEMU's ` +
    `translation cache ${mib(q.tb)} MiB, its programs' relocated data ` +
    `${mib(q.files)} MiB); the rest is program files in the page cache, ` +
    `shared by every VM`);
// What each of several idle VMs costs the host: its proportional share
// (PSS) of QEMU's and the monitor's memory, the guest RAM left out.
let pss = 0;
for (const v of kept)
	pss += rssKiB(pids(`guest=${v}`)[0], true).pss +
	    rssKiB(pids(`mcvm-vmm .* -i ${v}`)[0], false).pss;
console.log(`host memory per idle VM beyond guest RAM, ${kept.length} ` +
    `idle VMs: ${mib(pss / kept.length)} MiB proportional share (PSS) ` +
    `each`);
// The display, after the memory figures (typing runs the console's
// shell): a screenshot (QEMU's screendump, through the monitor and
// frontd as a PNG), beside the vm_list above as the path's own share;
// and typing on the console at vm_type_text's default pace and with no
// pause between characters.
const shots = [];
let shotBytes = 0;
for (let i = 0; i < SHOTS; i++) {
	const t0 = performance.now();
	const r = await client.callTool({ name: 'vm_screenshot',
	    arguments: { vm_id: vm } }, undefined,
	    { timeout: mcp.CALL_TIMEOUT_MS });
	shots.push(performance.now() - t0);
	if (r.isError)
		throw new Error(`vm_screenshot: ${r.content?.[0]?.text}`);
	shotBytes = r.structuredContent.bytes;
}
const TYPED = '# ' + 'abcdefghij'.repeat(20);
const cps = [];
for (const delay_ms of [30, 0]) {
	const t0 = performance.now();
	await call('vm_type_text', { vm_id: vm, text: TYPED, enter: true,
	    delay_ms });
	cps.push(TYPED.length / ((performance.now() - t0) / 1000));
}
console.log(`vm_screenshot (${SHOTS} runs, ${shotBytes} bytes of PNG): ` +
    `p50 ${ms(pct(shots, 50))}, p99 ${ms(pct(shots, 99))}, beside ` +
    `vm_list's p50 ${ms(pct(lists, 50))}`);
console.log(`vm_type_text (${TYPED.length} characters): ` +
    `${cps[0].toFixed(0)} characters/s at the default delay_ms 30, ` +
    `${cps[1].toFixed(0)} characters/s at delay_ms 0`);

// Live snapshots of the guest as the typing left it: each taken,
// restored and deleted in turn.
const snaps = { create: [], restore: [], delete: [] };
let state = 0;
for (let i = 0; i < SNAPSHOTS; i++) {
	const tag = `bench-${i}`;
	let t0 = performance.now();
	const c = await call('vm_snapshot_create', { vm_id: vm, tag });
	snaps.create.push(performance.now() - t0);
	state = c.vm_size;
	t0 = performance.now();
	await call('vm_snapshot_restore', { vm_id: vm, tag });
	snaps.restore.push(performance.now() - t0);
	t0 = performance.now();
	await call('vm_snapshot_delete', { vm_id: vm, tag });
	snaps.delete.push(performance.now() - t0);
}
if (SNAPSHOTS > 0)
	console.log(`live snapshot of a ${GUEST_MIB} MiB guest (${SNAPSHOTS} ` +
	    `runs, ${(state / 1048576).toFixed(1)} MiB of state): create p50 ` +
	    `${ms(pct(snaps.create, 50))}, max ${ms(pct(snaps.create, 100))}; ` +
	    `restore p50 ${ms(pct(snaps.restore, 50))}, max ` +
	    `${ms(pct(snaps.restore, 100))}; delete p50 ` +
	    `${ms(pct(snaps.delete, 50))}`);

for (const v of kept)
	await call('vm_destroy', { vm_id: v });
await client.close();
