// Images in and out of a workspace's store: PUT and GET /v1/images/{name}
// against the real frontd and stored.  A 2 GiB image goes up and comes
// back with its SHA-256 kept while both daemons' resident memory stays
// flat; an upload over the quota is refused before its body is sent.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import { execFileSync } from 'node:child_process';
import * as env from '../lib/env.mjs';
import { connect, call, refused } from '../lib/client.mjs';

const MiB = 1024 * 1024;
const BIG = 2048 * MiB;
const RSS_SLACK = 48 * MiB;	// what either daemon may grow by
let alice, bob;

before(async () => {
	alice = await connect(env.token);
	bob = await connect(env.tokenFrom('MCVM_TOKEN2_FILE'));
});

after(async () => {
	for (const n of ['up-raw', 'up-qcow2', 'up-iso', 'up-big'])
		await alice?.callTool({ name: 'image_delete',
		    arguments: { name: n } });
	await alice?.close();
	await bob?.close();
});

// One request with full control of its framing: { status, body, sawContinue }.
function request(method, name, { token = env.token, length, body, expect,
    query = '', path } = {}) {
	const url = new URL(path ?? `/v1/images/${name}${query}`, env.url);
	return new Promise((resolve, reject) => {
		const headers = token ?
		    { Authorization: `Bearer ${token}` } : {};
		if (length !== undefined)
			headers['Content-Length'] = String(length);
		if (expect)
			headers.Expect = '100-continue';
		const req = http.request(url, { method, headers });
		let sawContinue = false;
		req.on('continue', () => {
			sawContinue = true;
			if (body)
				body(req);
		});
		req.on('response', (res) => {
			const h = crypto.createHash('sha256');
			let n = 0;
			const small = [];
			res.on('data', (d) => {
				h.update(d);
				n += d.length;
				if (n <= 65536)
					small.push(d);
			});
			res.on('end', () => resolve({ status: res.statusCode,
			    headers: res.headers, bytes: n,
			    sha: h.digest('hex'), sawContinue,
			    text: Buffer.concat(small).toString() }));
			res.on('error', reject);
		});
		req.on('error', reject);
		if (!expect) {
			if (body)
				body(req);
			else
				req.end();
		}
	});
}

// Writes size bytes of a seeded stream into w with backpressure; the
// stream's SHA-256 is returned by the promise.
function pour(w, size, seed) {
	const block = crypto.createHash('sha512').update(seed).digest();
	const chunk = Buffer.alloc(MiB);
	for (let i = 0; i < MiB; i += block.length)
		block.copy(chunk, i);
	const h = crypto.createHash('sha256');
	let left = size, round = 0;
	return new Promise((resolve) => {
		const next = () => {
			while (left > 0) {
				const c = Buffer.from(chunk.subarray(0,
				    Math.min(MiB, left)));
				c.writeUInt32LE(round++, 0);
				left -= c.length;
				h.update(c);
				if (!w.write(c)) {
					w.once('drain', next);
					return;
				}
			}
			w.end();
			resolve(h.digest('hex'));
		};
		next();
	});
}

// The pids of this suite's frontd (it listens on env.url's port) and of
// the stored beside it.
function daemons() {
	const port = Number(new URL(env.url).port);
	const hex = port.toString(16).toUpperCase().padStart(4, '0');
	const inodes = new Set();
	for (const f of ['/proc/net/tcp', '/proc/net/tcp6'])
		for (const l of fs.readFileSync(f, 'utf8').split('\n')
		    .slice(1)) {
			const c = l.trim().split(/\s+/);
			if (c.length > 9 && c[1].endsWith(`:${hex}`) &&
			    c[3] === '0A')
				inodes.add(c[9]);
		}
	let frontd;
	for (const p of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)))
		try {
			for (const fd of fs.readdirSync(`/proc/${p}/fd`)) {
				const t = fs.readlinkSync(
				    `/proc/${p}/fd/${fd}`);
				const m = /^socket:\[(\d+)\]$/.exec(t);
				if (m && inodes.has(m[1]))
					frontd = p;
			}
		} catch { /* gone, or not ours to read */ }
	assert.ok(frontd, 'frontd found by its port');
	const ppid = stat(frontd).ppid;
	const stored = fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))
	    .find((p) => {
		try {
			return stat(p).ppid === ppid &&
			    fs.readFileSync(`/proc/${p}/comm`, 'utf8')
			    .startsWith('mcvm-stored');
		} catch { return false; }
	    });
	assert.ok(stored, 'stored found beside frontd');
	return { frontd, stored };
}

function stat(p) {
	const s = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
	const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
	return { ppid: f[1] };
}

function rss(p) {
	const m = /VmRSS:\s+(\d+) kB/.exec(
	    fs.readFileSync(`/proc/${p}/status`, 'utf8'));
	return Number(m[1]) * 1024;
}

test('an image goes up and comes back byte for byte', async () => {
	const data = crypto.randomBytes(3 * MiB + 17);
	const sha = crypto.createHash('sha256').update(data).digest('hex');
	const up = await request('PUT', 'up-raw', { length: data.length,
	    body: (r) => r.end(data) });
	assert.equal(up.status, 201, up.text);
	const img = JSON.parse(up.text);
	assert.equal(img.name, 'up-raw');
	assert.equal(img.format, 'raw');
	assert.equal(img.virtual_size, data.length);
	const down = await request('GET', 'up-raw');
	assert.equal(down.status, 200);
	assert.equal(down.headers['content-length'], String(data.length));
	assert.equal(down.sha, sha);
	const head = await request('HEAD', 'up-raw');
	assert.equal(head.status, 200);
	assert.equal(head.headers['content-length'], String(data.length));
	assert.equal(head.bytes, 0);
	// Another workspace neither sees nor reads it.
	const other = await request('GET', 'up-raw', {
	    token: env.tokenFrom('MCVM_TOKEN2_FILE') });
	assert.equal(other.status, 404);
	assert.match(JSON.parse(other.text).error.message, /no image up-raw/);
	// The same name again needs overwrite=true.
	const again = await request('PUT', 'up-raw', { length: 4,
	    body: (r) => r.end('abcd') });
	assert.equal(again.status, 422);
	assert.match(again.text, /overwrite=true/);
	const over = await request('PUT', 'up-raw', { length: 4,
	    query: '?overwrite=true', body: (r) => r.end('abcd') });
	assert.equal(over.status, 201, over.text);
	assert.equal(JSON.parse(over.text).virtual_size, 4);
});

test('the format is probed, and a backing file refused', async () => {
	const dir = fs.mkdtempSync('/tmp/mcvm-transfer-');
	try {
		execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2',
		    `${dir}/a.qcow2`, '64M']);
		execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', '-F',
		    'qcow2', '-b', `${dir}/a.qcow2`, `${dir}/b.qcow2`]);
		for (const [name, file, want] of [
		    ['up-qcow2', 'a.qcow2', 201],
		    ['up-backed', 'b.qcow2', 422]]) {
			const data = fs.readFileSync(`${dir}/${file}`);
			const r = await request('PUT', name, {
			    length: data.length, body: (q) => q.end(data) });
			assert.equal(r.status, want, r.text);
			if (want === 201) {
				assert.equal(JSON.parse(r.text).format,
				    'qcow2');
				assert.equal(JSON.parse(r.text).virtual_size,
				    64 * MiB);
			} else
				assert.match(r.text, /refers to another file/);
		}
	} finally {
		fs.rmSync(dir, { recursive: true, force: true });
	}
	// An ISO 9660 volume descriptor makes it an iso.
	const iso = Buffer.alloc(64 * 1024);
	iso.write('\x01CD001', 0x8000, 'latin1');
	const r = await request('PUT', 'up-iso', { length: iso.length,
	    body: (q) => q.end(iso) });
	assert.equal(r.status, 201, r.text);
	assert.equal(JSON.parse(r.text).format, 'iso');
	const names = (await call(alice, 'image_list', {})).images
	    .filter((i) => !i.catalog).map((i) => i.name).sort();
	assert.deepEqual(names, ['up-iso', 'up-qcow2', 'up-raw']);
});

test('bad uploads are refused and leave nothing', async () => {
	// Over the quota: refused before a byte of the body is asked for.
	const big = await request('PUT', 'up-huge', { length: 1024 ** 4,
	    expect: true, body: (r) => r.end('x') });
	assert.equal(big.status, 422);
	assert.equal(big.sawContinue, false, 'the body was asked for');
	assert.match(big.text, /storage quota/);
	// No Content-Length.
	const nolen = await new Promise((resolve, reject) => {
		const req = http.request(new URL(`${env.url}/v1/images/x`), {
		    method: 'PUT', headers: {
		    Authorization: `Bearer ${env.token}`,
		    'Transfer-Encoding': 'chunked' } });
		req.on('response', (res) => {
			res.resume();
			resolve(res.statusCode);
		});
		req.on('error', reject);
		req.end('abc');
	});
	assert.ok(nolen === 411 || nolen === 501, `status ${nolen}`);
	// A body cut short: the connection closes after half.
	await new Promise((resolve) => {
		const req = http.request(new URL(`${env.url}/v1/images/up-cut`),
		    { method: 'PUT', headers: {
		    Authorization: `Bearer ${env.token}`,
		    'Content-Length': String(8 * MiB) } });
		req.on('error', () => resolve());
		req.on('response', (res) => { res.resume(); resolve(); });
		req.write(Buffer.alloc(4 * MiB), () =>
		    setTimeout(() => req.destroy(), 500));
	});
	const names = (await call(alice, 'image_list', {})).images
	    .map((i) => i.name);
	assert.ok(!names.includes('up-cut'), 'a cut upload was kept');
	assert.ok(!names.includes('up-huge'));
	assert.match(await refused(alice, 'image_info', { name: 'up-cut' }),
	    /no image up-cut/);
});

test('an MCP client gets single-use URLs for the same', async () => {
	const u = await call(alice, 'image_upload_url', { name: 'up-url' });
	assert.equal(u.method, 'PUT');
	assert.match(u.path, /^\/v1\/images\/up-url\?ticket=[0-9a-f]{64}$/);
	assert.ok(u.url.endsWith(u.path));
	assert.ok(u.expires_in > 0);
	const data = crypto.randomBytes(MiB);
	const up = await request('PUT', null, { token: null, path: u.path,
	    length: data.length, body: (r) => r.end(data) });
	assert.equal(up.status, 201, up.text);
	// Used once: a second PUT, or a GET, with it is refused.
	const again = await request('PUT', null, { token: null, path: u.path,
	    length: 4, body: (r) => r.end('abcd') });
	assert.equal(again.status, 401);
	assert.match(again.text, /used, has expired/);
	const d = await call(alice, 'image_download_url', { name: 'up-url' });
	assert.equal(d.method, 'GET');
	// Its ticket is for this image alone.
	const other = await request('GET', null, { token: null,
	    path: d.path.replace('up-url', 'up-raw') });
	assert.equal(other.status, 401);
	const d2 = await call(alice, 'image_download_url', { name: 'up-url' });
	const down = await request('GET', null, { token: null, path: d2.path });
	assert.equal(down.status, 200);
	assert.equal(down.sha,
	    crypto.createHash('sha256').update(data).digest('hex'));
	// bob's URL for the same name reaches bob's store, not alice's.
	const b = await call(bob, 'image_download_url', { name: 'up-url' });
	const bd = await request('GET', null, { token: null, path: b.path });
	assert.equal(bd.status, 404);
	// A made-up ticket.
	const fake = await request('GET', null, { token: null,
	    path: `/v1/images/up-url?ticket=${'0'.repeat(64)}` });
	assert.equal(fake.status, 401);
	await call(alice, 'image_delete', { name: 'up-url' });
});

test('2 GiB up and down, checksum kept, daemons flat', async () => {
	const { frontd, stored } = daemons();
	const base = { frontd: rss(frontd), stored: rss(stored) };
	const peak = { ...base };
	const sample = setInterval(() => {
		peak.frontd = Math.max(peak.frontd, rss(frontd));
		peak.stored = Math.max(peak.stored, rss(stored));
	}, 100);
	try {
		let sha;
		const up = await request('PUT', 'up-big', { length: BIG,
		    body: (r) => { sha = pour(r, BIG, 'mcvm'); } });
		assert.equal(up.status, 201, up.text);
		assert.equal(JSON.parse(up.text).virtual_size, BIG);
		const down = await request('GET', 'up-big');
		assert.equal(down.status, 200);
		assert.equal(down.bytes, BIG);
		assert.equal(down.sha, await sha);
	} finally {
		clearInterval(sample);
	}
	for (const d of ['frontd', 'stored'])
		assert.ok(peak[d] - base[d] < RSS_SLACK,
		    `${d} grew from ${base[d] >> 20} to ${peak[d] >> 20} MiB`);
	await call(alice, 'image_delete', { name: 'up-big' });
});
