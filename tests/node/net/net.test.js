// Networking end to end: the official MCP TypeScript SDK client drives a
// real suite whose VMs boot the guest image under TCG, inside the test
// network of tests/network/netns.sh.  Run through tests/suites/network,
// which makes that network, runs this inside its "host" namespace, and
// exports the NET_* addresses used here.
//
// Source spoofing is not tested here: forging a source address needs root
// in the guest, and jobs run as uid 1000.  tests/suites/netd covers it with
// a fake guest that has root in its namespace.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import fs from 'node:fs';
import netmod from 'node:net';
import { execFileSync } from 'node:child_process';
import * as env from '../lib/env.mjs';
import { connect, call, refused, collect } from '../lib/client.mjs';

function need(name) {
	const v = process.env[name];
	if (!v)
		throw new Error(`${name} is not set: run these tests through ` +
		    'tests/suites/network');
	return v;
}

const INET = need('NET_INET_ADDR');		// the "internet" web server
const INET_NS = need('NET_INET');		// its namespace
const PRIVATE = need('NET_PRIVATE');		// a private host
const METADATA = need('NET_METADATA');		// 169.254.169.254
const RESOLVER = need('NET_RESOLVER');
const UPLINK_ADDR = need('NET_UPLINK_ADDR');	// the host's uplink address
const HOST_PRIV_ADDR = need('NET_HOST_PRIV_ADDR');
const HOST_PORT = Number(need('NET_HOST_PORT'));	// host's web server
const NET_T = need('NET_T');
const FWD_PORT = Number(need('MCVM_NET_FWD_PORT'));	// explicit forward
const SUITE_PORT = Number(need('MCVM_SUITE_PORT'));	// frontd
const GUEST_PORT = 8000;

let net, nonet;
const vms = {};		// name -> vm_create's result, and ws: its client

// The VMs an earlier test made, or a clear failure instead of a TypeError.
function have(...names) {
	for (const n of names)
		assert.ok(vms[n], `no VM ${n}: an earlier test failed`);
}

// The helpers below act as the net workspace unless given a client.
let execSeq = 0;
async function exec(vm, command, c = net) {
	const r = await call(c, 'vm_exec', { vm_id: vm,
	    request_id: `net-${process.pid}-${++execSeq}`, command });
	return r.job_id;
}

async function run(vm, command, c = net) {
	const o = await collect(c, vm, await exec(vm, command, c));
	assert.equal(o.last.exit_code, 0,
	    `${command}: exit ${o.last.exit_code}: ${o.stderr}`);
	return o;
}

// The guest's view: a JSON line from a python3 script run in the guest
// (the image has no curl, nc or ip).
async function guestPyAs(c, vm, script, ...args) {
	await call(c, 'vm_write_file', { vm_id: vm, path: 'net-probe.py',
	    content_base64: Buffer.from(script).toString('base64') });
	const o = await run(vm, ['python3', 'net-probe.py', ...args]
	    .map((a) => `'${a}'`).join(' '), c);
	return JSON.parse(o.stdout);
}
const guestPy = (vm, script, ...args) => guestPyAs(net, vm, script, ...args);

// TCP connections to HOST:PORT targets, all at once, 3 s each: for each,
// "connected" or why not (an errno name or "timeout").  A udp: prefix
// sends a datagram instead and waits for an answer or an ICMP error.
const PROBE = `
import errno, json, socket, sys, threading
res = {}
def probe(t):
    h, p = t.rsplit(':', 1)
    udp = h.startswith('udp:')
    if udp:
        h = h[4:]
    s = socket.socket(socket.AF_INET,
        socket.SOCK_DGRAM if udp else socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect((h, int(p)))
        if udp:
            s.send(b'from the guest')
            s.recv(100)
            res[t] = 'answered'
        else:
            res[t] = 'connected'
    except socket.timeout:
        res[t] = 'timeout'
    except OSError as e:
        res[t] = errno.errorcode.get(e.errno, str(e))
    finally:
        s.close()
ts = [threading.Thread(target=probe, args=(t,)) for t in sys.argv[1:]]
for t in ts: t.start()
for t in ts: t.join()
print(json.dumps(res))
`;

const FETCH = `
import json, sys, urllib.request
try:
    b = urllib.request.urlopen(sys.argv[1], timeout=5).read().decode()
    print(json.dumps({'body': b.strip()}))
except Exception as e:
    print(json.dumps({'error': type(e).__name__ + ': ' + str(e)}))
`;

const NICS = `
import json, os, socket
nics = sorted(os.listdir('/sys/class/net'))
mac = {n: open('/sys/class/net/%s/address' % n).read().strip() for n in nics}
gw = None
for line in open('/proc/net/route').read().splitlines()[1:]:
    f = line.split()
    if f[1] == '00000000':
        gw = socket.inet_ntoa(bytes.fromhex(f[2])[::-1])
src = None
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect(('${INET}', 80))
    src = s.getsockname()[0]
except OSError:
    pass
try:
    resolv = open('/etc/resolv.conf').read()
except OSError:
    resolv = ''
print(json.dumps({'nics': nics, 'mac': mac, 'gw': gw, 'src': src,
    'resolv': resolv}))
`;

// Waits until a TCP server listens on PORT inside the guest.
const WAIT_LISTEN = `
import json, socket, sys, time
for i in range(100):
    try:
        socket.create_connection(('127.0.0.1', int(sys.argv[1])), 1).close()
        print(json.dumps({'up': True}))
        break
    except OSError:
        time.sleep(0.1)
else:
    print(json.dumps({'up': False}))
`;

function sh(cmd, args) {
	return execFileSync(cmd, args, { encoding: 'utf8',
	    stdio: ['ignore', 'pipe', 'pipe'] });
}

// A host template for guests with a NIC is made on the first vm_create
// that asks for one, and a workspace's shared template of it on the next,
// each with a network of its own until it is checkpointed; and that
// shared template keeps a warm clone with its network (mcvm.conf(5)'s
// warm), mcvmd's own until a vm_create takes it.  The host's links and
// tables are counted once no template or warm clone is being made, and
// without the ready warm clones' slots': the slots of the tests' VMs.
const CTL = need('MCVM_CTL').split(' ');
function settled() {
	for (const end = Date.now() + 120000; Date.now() < end;) {
		const st = execFileSync(CTL[0], [...CTL.slice(1), 'status'],
		    { encoding: 'utf8' });
		if (!/^template[ 0-9]*: .*being made/m.test(st) &&
		    !/^warm clone: .*being made/m.test(st))
			return new Set([...st.matchAll(
			    /^warm clone: vm-\S+ of .*, slot (\d+), ready$/mg)]
			    .map((m) => m[1]));
		execFileSync('sleep', ['0.2']);
	}
	throw new Error('a template or a warm clone is still being made');
}
// The names list() gives once settled, but the ready warm clones'.
function butWarm(list) {
	const warm = settled();
	return list().filter((n) => !warm.has(n.match(/^mcvm_?(\d+)/)?.[1]));
}
const mcvmLinks = () => butWarm(() => sh('ip', ['-o', 'link', 'show'])
    .split('\n').map((l) => l.split(': ')[1])
    .filter((n) => n?.startsWith('mcvm')).map((n) => n.replace(/@.*/, '')));
const mcvmTables = () => butWarm(() => sh('nft', ['list', 'tables'])
    .split('\n').map((l) => l.split(' ')[2])
    .filter((n) => n?.startsWith('mcvm_')));
const listeners = (port) => sh('ss', ['-ltnH']).split('\n')
    .map((l) => l.trim().split(/\s+/)[3]).filter((a) => a &&
    a.endsWith(`:${port}`)).sort();
const qemuPid = (vm) => Number(sh('pgrep', ['-f', `guest=${vm}`]).trim()
    .split('\n')[0]);
const qemuLinks = (vm) => sh('nsenter', ['-t', String(qemuPid(vm)), '-n',
    'ip', '-o', 'link', 'show']).split('\n').map((l) => l.split(': ')[1])
    .filter(Boolean).map((n) => n.replace(/@.*/, '')).sort();

// A connection from the host namespace (or another one): "connected" or
// the error's code.
function hostConnect(host, port, ns) {
	const script = `
import errno, socket, sys
s = socket.socket()
s.settimeout(3)
try:
    s.connect((sys.argv[1], int(sys.argv[2])))
    print('connected')
except socket.timeout:
    print('timeout')
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e)))
`;
	const argv = ['python3', '-c', script, host, String(port)];
	return ns ? sh('nsenter', [`--net=/run/netns/${ns}`, ...argv]).trim() :
	    sh(argv[0], argv.slice(1)).trim();
}

async function hostFetch(url) {
	const r = await fetch(url, { signal: AbortSignal.timeout(5000) });
	return (await r.text()).trim();
}

// Starts a web server in the guest's /workspace saying NAME on GUEST_PORT.
async function guestServer(vm, name, c = net) {
	await call(c, 'vm_write_file', { vm_id: vm, path: 'index.html',
	    content_base64: Buffer.from(`hello from ${name}\n`)
	    .toString('base64') });
	await exec(vm, `python3 -m http.server ${GUEST_PORT} --bind 0.0.0.0`,
	    c);
	const w = await guestPyAs(c, vm, WAIT_LISTEN, String(GUEST_PORT));
	assert.ok(w.up, `the web server in ${name} listens`);
}

// Listeners in the host namespace that count what reaches them: a TCP
// server's connections and a UDP socket's datagrams, on free ports.
async function countingListeners() {
	const l = { tcp: 0, udp: 0 };
	l.server = netmod.createServer((sock) => {
		l.tcp++;
		sock.destroy();
	});
	await new Promise((res) => l.server.listen(0, '0.0.0.0', res));
	l.tcpPort = l.server.address().port;
	l.sock = dgram.createSocket('udp4');
	l.sock.on('message', () => l.udp++);
	await new Promise((res) => l.sock.bind(0, '0.0.0.0', res));
	l.udpPort = l.sock.address().port;
	l.close = () => {
		l.server.close();
		l.sock.close();
	};
	return l;
}

before(async () => {
	net = await connect(env.token);
	nonet = await connect(env.tokenFrom('MCVM_TOKEN_NONET_FILE'));
});

after(async () => {
	for (const v of Object.values(vms)) {
		try {
			await (v.ws ?? net).callTool({ name: 'vm_destroy',
			    arguments: { vm_id: v.vm_id } });
		} catch {
			// already gone
		}
	}
	await net?.close();
	await nonet?.close();
});

test('network off: the guest has no NIC, QEMU\'s netns only lo', async () => {
	const r = await call(net, 'vm_create', { request_id: 'off-1' });
	vms.off = r;
	assert.equal(r.state, 'running');
	assert.equal(r.network, 'off');
	assert.ok(!r.address, `no address: ${r.address}`);
	assert.deepEqual(r.port_forwards ?? [], []);
	const g = await guestPy(r.vm_id, NICS);
	assert.deepEqual(g.nics, ['lo']);
	assert.equal(g.gw, null, 'no default route');
	assert.deepEqual(qemuLinks(r.vm_id), ['lo']);
	assert.deepEqual(mcvmTables(), [], 'no nftables table for it');
	assert.deepEqual(mcvmLinks(), [], 'no host link for it');
	const d = await call(net, 'vm_destroy', { vm_id: r.vm_id });
	assert.equal(d.destroyed, true);
	delete vms.off;
});

test('a workspace without network permission is refused network "on"',
    async () => {
	const msg = await refused(nonet, 'vm_create',
	    { request_id: 'nonet-1', network: 'on' });
	assert.match(msg, /may not use the network/);
	assert.match(msg, /network "off"/, 'it says what to do');
	const msg2 = await refused(nonet, 'vm_create', { request_id: 'nonet-2',
	    network: 'on', port_forwards: ['auto:22'] });
	assert.match(msg2, /may not use the network/);
	assert.deepEqual((await call(nonet, 'vm_list', {})).vms, []);
	assert.deepEqual(mcvmLinks(), []);
});

test('network off with a forward, in a workspace without the network: ' +
    'an inbound-only NIC', async () => {
	const r = await call(nonet, 'vm_create', { request_id: 'in-1',
	    port_forwards: [`auto:${GUEST_PORT}`] });
	vms.in = { ...r, ws: nonet };
	assert.equal(r.state, 'running');
	assert.equal(r.network, 'off');
	assert.match(r.address ?? '', /^10\.231\.0\.\d+\/30$/, 'address');
	assert.equal(r.gateway, undefined, 'no gateway');
	assert.match(r.mac ?? '', /^52:54:00(:[0-9a-f]{2}){3}$/, 'mac');
	assert.equal(r.port_forwards?.length, 1, JSON.stringify(r));
	const [f] = r.port_forwards;
	assert.equal(f.host_address, '127.0.0.1');
	assert.equal(f.guest_port, GUEST_PORT);
	assert.ok(f.host_port > 0 && f.host_port < 65536, `port ${f.host_port}`);
	const s = await call(nonet, 'vm_status', { vm_id: r.vm_id });
	for (const k of ['network', 'address', 'gateway', 'mac'])
		assert.equal(s[k], r[k], `vm_status ${k}`);
	assert.deepEqual(s.port_forwards, r.port_forwards, 'vm_status forwards');

	// The guest: a NIC with its address, no default route, no resolver.
	const g = await guestPyAs(nonet, r.vm_id, NICS);
	assert.equal(g.nics.length, 2, `NICs: ${g.nics}`);
	assert.equal(g.mac[g.nics.find((n) => n !== 'lo')], r.mac);
	assert.equal(g.gw, null, 'no default route');
	assert.equal(g.src, null, 'no route to the internet');
	assert.doesNotMatch(g.resolv, new RegExp(RESOLVER.replace(/\./g, '\\.')),
	    'no resolver');

	// The host's side: the links and the table, as with the network on.
	const links = mcvmLinks();
	assert.equal(links.length, 1, `host links: ${links}`);
	const slot = links[0].match(/^mcvm(\d+)h$/)?.[1];
	assert.deepEqual(mcvmTables(), [`mcvm_${slot}`]);
	assert.deepEqual(qemuLinks(r.vm_id), ['lo', `mcvm${slot}b`,
	    `mcvm${slot}g`, `mcvm${slot}t`]);

	// The forward reaches the guest's server.
	await guestServer(r.vm_id, 'I', nonet);
	assert.equal(await hostFetch(`http://127.0.0.1:${f.host_port}/`),
	    'hello from I', 'the forward');
	assert.deepEqual(listeners(f.host_port), [`127.0.0.1:${f.host_port}`]);
});

test('an inbound-only guest reaches nothing: not the uplink, the ' +
    'internet, the resolver, the gateway nor the host', async () => {
	have('in');
	const r = vms.in;
	const [a] = r.address.split('/');
	const gw = a.replace(/\d+$/, (n) => String(Number(n) - 1));
	const l = await countingListeners();
	try {
		// Each listener counts what the host itself sends it.
		await new Promise((res, rej) => {
			const c = netmod.connect(l.tcpPort, '127.0.0.1', () => {
				c.end();
				res();
			});
			c.on('error', rej);
		});
		const u = dgram.createSocket('udp4');
		await new Promise((res) => u.send('control', l.udpPort,
		    '127.0.0.1', res));
		u.close();
		for (let i = 0; i < 100 && (l.tcp < 1 || l.udp < 1); i++)
			await new Promise((res) => setTimeout(res, 50));
		assert.deepEqual([l.tcp, l.udp], [1, 1], 'the listeners work');

		const inetLog = `${NET_T}/www-${INET}-80.log`;
		const inetBefore = fs.readFileSync(inetLog, 'utf8');
		// The host's own addresses refuse the guest at once (a reset,
		// or an ICMP error for UDP); anything further has no route.
		const fwdPort = r.port_forwards[0].host_port;
		const onLink = [`${gw}:${l.tcpPort}`, `${gw}:${HOST_PORT}`,
		    `${gw}:${SUITE_PORT}`, `${gw}:${fwdPort}`];
		const offLink = [`${UPLINK_ADDR}:${l.tcpPort}`, `${INET}:80`,
		    `${RESOLVER}:53`, `${PRIVATE}:80`, `${METADATA}:80`,
		    `${HOST_PRIV_ADDR}:${HOST_PORT}`];
		const udp = `udp:${gw}:${l.udpPort}`;
		const g = await guestPyAs(nonet, r.vm_id, PROBE, ...onLink,
		    ...offLink, udp, `udp:${RESOLVER}:53`);
		for (const t of onLink)
			assert.equal(g[t], 'ECONNREFUSED', `${t}: ` +
			    JSON.stringify(g));
		for (const t of offLink)
			assert.equal(g[t], 'ENETUNREACH', `${t}: ` +
			    JSON.stringify(g));
		assert.equal(g[udp], 'EHOSTUNREACH', JSON.stringify(g));
		assert.equal(g[`udp:${RESOLVER}:53`], 'ENETUNREACH');
		// Every attempt has failed in the guest, so nothing is on its
		// way: the listeners still hold only the host's own.
		assert.deepEqual([l.tcp, l.udp], [1, 1], 'none from the guest');
		assert.equal(fs.readFileSync(inetLog, 'utf8'), inetBefore,
		    'nothing reached the internet host');
		// The host namespace itself reaches what the guest cannot.
		assert.equal(hostConnect(INET, 80), 'connected');
		assert.equal(hostConnect(gw, HOST_PORT), 'connected');
	} finally {
		l.close();
	}
});

test('an inbound-only guest takes no connection from the uplink side',
    async () => {
	have('in');
	const r = vms.in;
	const [a] = r.address.split('/');
	assert.notEqual(hostConnect(a, GUEST_PORT, INET_NS), 'connected',
	    'from the uplink side');
	const d = await call(nonet, 'vm_destroy', { vm_id: r.vm_id });
	assert.equal(d.destroyed, true);
	delete vms.in;
	assert.deepEqual(mcvmLinks(), [], 'no host link left');
	assert.deepEqual(mcvmTables(), [], 'no table left');
	assert.deepEqual(listeners(r.port_forwards[0].host_port), []);
});

// The guest took r's MAC, address and route, and fetches from the
// internet host.
async function guestOnNet(r) {
	const g = await guestPy(r.vm_id, NICS);
	const nic = g.nics.find((n) => n !== 'lo');
	assert.equal(g.mac[nic], r.mac);
	assert.equal(g.gw, r.gateway);
	assert.equal(g.src, r.address.split('/')[0]);
	assert.deepEqual(await guestPy(r.vm_id, FETCH, `http://${INET}/`),
	    { body: `hello from ${INET}:80` });
}

function checkNet(r, label) {
	assert.equal(r.network, 'on', `${label}: network`);
	assert.match(r.address ?? '', /^10\.231\.0\.\d+\/30$/,
	    `${label}: address`);
	const [a] = r.address.split('/');
	const last = Number(a.split('.')[3]);
	assert.equal(last % 4, 2, `${label}: the guest is +2 of its /30`);
	assert.equal(r.gateway, `10.231.0.${last - 1}`, `${label}: gateway`);
	assert.match(r.mac ?? '', /^52:54:00(:[0-9a-f]{2}){3}$/,
	    `${label}: mac`);
}

test('network on: address, gateway, MAC and port forwards reported',
    async () => {
	const r = await call(net, 'vm_create', { request_id: 'on-a',
	    network: 'on', port_forwards: ['auto:8000', `${FWD_PORT}:8000`] });
	vms.a = r;
	assert.equal(r.state, 'running');
	checkNet(r, 'vm_create');
	assert.equal(r.port_forwards?.length, 2, JSON.stringify(r));
	for (const f of r.port_forwards) {
		assert.equal(f.host_address, '127.0.0.1');
		assert.equal(f.guest_port, GUEST_PORT);
	}
	const ports = r.port_forwards.map((f) => f.host_port);
	assert.ok(ports.includes(FWD_PORT), `explicit port ${FWD_PORT}: ` +
	    JSON.stringify(ports));
	const auto = ports.find((p) => p !== FWD_PORT);
	assert.ok(auto > 0 && auto < 65536, `auto port ${auto}`);
	vms.a.auto = auto;

	const s = await call(net, 'vm_status', { vm_id: r.vm_id });
	for (const k of ['network', 'address', 'gateway', 'mac'])
		assert.equal(s[k], r[k], `vm_status ${k}`);
	assert.deepEqual(s.port_forwards, r.port_forwards, 'vm_status forwards');
	const l = (await call(net, 'vm_list', {})).vms
	    .find((v) => v.vm_id === r.vm_id);
	for (const k of ['network', 'address', 'gateway', 'mac'])
		assert.equal(l?.[k], r[k], `vm_list ${k}`);
	assert.deepEqual(l.port_forwards, r.port_forwards, 'vm_list forwards');

	// The host's side: one link with the gateway, one table.
	const links = mcvmLinks();
	assert.equal(links.length, 1, `host links: ${links}`);
	const slot = links[0].match(/^mcvm(\d+)h$/)?.[1];
	assert.ok(slot, `host link name ${links[0]}`);
	const addr = sh('ip', ['-o', '-4', 'addr', 'show', 'dev', links[0]]);
	assert.match(addr, new RegExp(`inet ${r.gateway.replace(/\./g,
	    '\\.')}/30 `));
	assert.deepEqual(mcvmTables(), [`mcvm_${slot}`]);
	assert.deepEqual(qemuLinks(r.vm_id), ['lo', `mcvm${slot}b`,
	    `mcvm${slot}g`, `mcvm${slot}t`]);
});

test('the guest\'s NIC, route and resolver are set', async () => {
	have('a');
	const r = vms.a;
	const g = await guestPy(r.vm_id, NICS);
	assert.equal(g.nics.length, 2, `NICs: ${g.nics}`);
	const nic = g.nics.find((n) => n !== 'lo');
	assert.equal(g.mac[nic], r.mac);
	assert.equal(g.gw, r.gateway);
	assert.equal(g.src, r.address.split('/')[0]);
	assert.match(g.resolv, new RegExp(`^nameserver ${RESOLVER
	    .replace(/\./g, '\\.')}$`, 'm'));
});

test('the guest fetches from the TEST-NET internet host, NATed',
    async () => {
	have('a');
	const g = await guestPy(vms.a.vm_id, FETCH, `http://${INET}/`);
	assert.deepEqual(g, { body: `hello from ${INET}:80` });
	// python's http.server logs each request's client address.
	const log = fs.readFileSync(`${NET_T}/www-${INET}-80.log`, 'utf8')
	    .trim().split('\n');
	assert.ok(log.at(-1).startsWith(`${UPLINK_ADDR} `),
	    `the internet sees the uplink's address: ${log.at(-1)}`);
});

test('a second VM with networking, servers in both guests', async () => {
	have('a');
	const r = await call(net, 'vm_create', { request_id: 'on-b',
	    network: 'on' });
	vms.b = r;
	checkNet(r, 'second VM');
	assert.notEqual(r.address, vms.a.address);
	assert.deepEqual(r.port_forwards ?? [], []);
	await guestServer(vms.a.vm_id, 'A');
	await guestServer(vms.b.vm_id, 'B');
});

test('the guest reaches nothing private, local or of the host', async () => {
	have('a', 'b');
	const a = vms.a, b = vms.b;
	const bAddr = b.address.split('/')[0];
	const denied = [
		`${PRIVATE}:80`,		// the private host
		`${METADATA}:80`,		// the metadata service
		`${a.gateway}:${HOST_PORT}`,	// the host, by the gateway
		`${a.gateway}:${SUITE_PORT}`,	// the suite's HTTP port
		`${UPLINK_ADDR}:${HOST_PORT}`,	// the host's uplink address
		`${HOST_PRIV_ADDR}:${HOST_PORT}`, // the host's private address
		`${b.gateway}:${HOST_PORT}`,	// the other VM's gateway
		`${bAddr}:${GUEST_PORT}`,	// the other VM
	];
	const g = await guestPy(a.vm_id, PROBE, `${INET}:80`, ...denied);
	assert.equal(g[`${INET}:80`], 'connected', 'the internet host answers');
	for (const t of denied)
		assert.notEqual(g[t], 'connected', `${t} is reachable: ` +
		    JSON.stringify(g));
	// And the other way round.
	const aAddr = a.address.split('/')[0];
	const h = await guestPy(b.vm_id, PROBE, `127.0.0.1:${GUEST_PORT}`,
	    `${aAddr}:${GUEST_PORT}`, `${PRIVATE}:80`);
	assert.equal(h[`127.0.0.1:${GUEST_PORT}`], 'connected',
	    'its own server answers');
	assert.notEqual(h[`${aAddr}:${GUEST_PORT}`], 'connected',
	    'the other VM is reachable');
	assert.notEqual(h[`${PRIVATE}:80`], 'connected');
	// The host namespace itself reaches the private host and metadata
	// service: only mcvm's rules keep the guests away.
	assert.equal(hostConnect(PRIVATE, 80), 'connected');
	assert.equal(hostConnect(METADATA, 80), 'connected');
});

test('an inbound connection from the uplink side is refused', async () => {
	have('a');
	const aAddr = vms.a.address.split('/')[0];
	const r = hostConnect(aAddr, GUEST_PORT, INET_NS);
	assert.notEqual(r, 'connected', `the internet reached ${aAddr}`);
	assert.equal(hostConnect(INET, 80, INET_NS), 'connected');
});

test('port forwards reach the guest from 127.0.0.1 and bind nothing else',
    async () => {
	have('a');
	const a = vms.a;
	for (const p of [a.auto, FWD_PORT]) {
		assert.equal(await hostFetch(`http://127.0.0.1:${p}/`),
		    'hello from A', `forward ${p}`);
		assert.deepEqual(listeners(p), [`127.0.0.1:${p}`],
		    `port ${p} listens on 127.0.0.1 only`);
		for (const addr of [UPLINK_ADDR, HOST_PRIV_ADDR, a.gateway])
			assert.notEqual(hostConnect(addr, p), 'connected',
			    `forward ${p} answers on ${addr}`);
	}
	assert.notEqual(hostConnect(UPLINK_ADDR, FWD_PORT, INET_NS),
	    'connected', 'the forward answers the internet');
});

test('a fork of a VM with networking: each new VM its own address, MAC ' +
    'and route, and the internet', async () => {
	have('b');
	const f = await call(net, 'vm_fork', { vm_id: vms.b.vm_id, count: 2,
	    request_id: 'on-fork' });
	assert.equal(f.vms.length, 2);
	const seen = new Set([vms.b.address, vms.b.mac]);
	for (const r of f.vms) {
		checkNet(r, 'a fork\'s VM');
		assert.deepEqual(r.port_forwards ?? [], []);
		for (const k of [r.address, r.mac]) {
			assert.ok(!seen.has(k), `${k} seen before`);
			seen.add(k);
		}
		await guestOnNet(r);
	}
	// The source's network is its own still.
	assert.deepEqual(await guestPy(vms.b.vm_id, FETCH, `http://${INET}/`),
	    { body: `hello from ${INET}:80` });
	for (const r of f.vms)
		assert.equal((await call(net, 'vm_destroy', { vm_id: r.vm_id }))
		    .destroyed, true);
});

test('a warm clone with networking, taken: its own address, MAC and ' +
    'route, and the internet', async () => {
	// b, the workspace's second VM with a NIC, had its shared template
	// made, which keeps a warm clone.
	let warm;
	for (const end = Date.now() + 120000; !warm && Date.now() < end;) {
		settled();
		warm = execFileSync(CTL[0], [...CTL.slice(1), 'status'],
		    { encoding: 'utf8' }).match(new RegExp('^warm clone: ' +
		    '(vm-[0-9a-f]+) of workspace netws, slot \\d+, ready$',
		    'm'))?.[1];
		if (!warm)
			execFileSync('sleep', ['0.2']);
	}
	assert.ok(warm, 'the workspace\'s template keeps a warm clone');
	const r = await call(net, 'vm_create', { request_id: 'on-warm',
	    network: 'on' });
	assert.equal(r.vm_id, warm, 'vm_create takes it');
	checkNet(r, 'a warm clone');
	for (const v of [vms.a, vms.b])
		assert.notEqual(r.address, v.address);
	await guestOnNet(r);
	assert.equal((await call(net, 'vm_destroy', { vm_id: r.vm_id }))
	    .destroyed, true);
});

test('vm_destroy leaves no link, table, listener or QEMU', async () => {
	have('a', 'b');
	for (const k of ['a', 'b']) {
		const d = await call(net, 'vm_destroy', { vm_id: vms[k].vm_id });
		assert.equal(d.destroyed, true);
	}
	assert.deepEqual(mcvmLinks(), []);
	assert.deepEqual(mcvmTables(), []);
	assert.deepEqual(listeners(vms.a.auto), []);
	assert.deepEqual(listeners(FWD_PORT), []);
	for (const k of ['a', 'b'])
		assert.throws(() => qemuPid(vms[k].vm_id), 'QEMU is gone');
	assert.deepEqual((await call(net, 'vm_list', {})).vms, []);
	delete vms.a;
	delete vms.b;
});
