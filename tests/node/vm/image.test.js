// The workspace image store, end to end through the official MCP SDK
// client: images made, inspected, chained, converted, resized and
// snapshotted by the real stored and qemu-img, and every refusal that
// keeps an image in use or the workspace within its quota.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as env from '../lib/env.mjs';
import { connect, call, refused } from '../lib/client.mjs';

let alice, bob;
const GiB = 1024 ** 3;

before(async () => {
	alice = await connect(env.token);
	bob = await connect(env.tokenFrom('MCVM_TOKEN2_FILE'));
});

after(async () => {
	for (const n of ['img-over', 'img-flat', 'img-vmdk', 'img-base',
	    'img-cat', 'img-raw'])
		await alice?.callTool({ name: 'image_delete',
		    arguments: { name: n } });
	await alice?.close();
	await bob?.close();
});

function mine(list) {
	return list.images.filter((i) => !i.catalog).map((i) => i.name)
	    .sort();
}

test('images are made, chained and listed per workspace', async () => {
	const a = await call(alice, 'image_create',
	    { name: 'img-base', size: '1G' });
	assert.equal(a.format, 'qcow2');
	assert.equal(a.virtual_size, GiB);
	assert.equal(a.base, null);
	const b = await call(alice, 'image_create',
	    { name: 'img-over', base: 'img-base' });
	assert.equal(b.base, 'img-base');
	assert.equal(b.virtual_size, GiB, 'an overlay takes its base\'s size');
	const c = await call(alice, 'image_create',
	    { name: 'img-cat', base: 'debian' });
	assert.equal(c.base, 'debian');
	assert.equal(c.base_catalog, true);
	const r = await call(alice, 'image_create',
	    { name: 'img-raw', size: '64M', format: 'raw' });
	assert.equal(r.format, 'raw');
	assert.equal(r.virtual_size, 64 * 1024 * 1024);

	const list = await call(alice, 'image_list', {});
	assert.deepEqual(mine(list),
	    ['img-base', 'img-cat', 'img-over', 'img-raw']);
	assert.equal(list.images.find((i) => i.name === 'img-base').in_use,
	    true);
	assert.ok(list.images.some((i) => i.catalog && i.name === 'debian'));
	// Another workspace sees only the catalogue.
	assert.deepEqual(mine(await call(bob, 'image_list', {})), []);
	assert.match(await refused(bob, 'image_info', { name: 'img-base' }),
	    /no image img-base/);
	assert.match(await refused(bob, 'image_delete', { name: 'img-base' }),
	    /no image img-base/);
});

test('image_info shows the backing chain down to the catalogue',
    async () => {
	const i = await call(alice, 'image_info',
	    { name: 'img-cat', backing_chain: true });
	assert.deepEqual(i.backing_chain.map((x) => [x.name, x.catalog]),
	    [['img-cat', false], ['debian', true]]);
	const j = await call(alice, 'image_info',
	    { name: 'img-over', backing_chain: true });
	assert.deepEqual(j.backing_chain.map((x) => x.name),
	    ['img-over', 'img-base']);
	assert.deepEqual(j.snapshots, []);
	const cat = await call(alice, 'image_info', { name: 'debian' });
	assert.equal(cat.catalog, true);
	assert.equal(cat.format, 'raw');
});

test('convert flattens the chain into a standalone image', async () => {
	const f = await call(alice, 'image_convert',
	    { source: 'img-cat', dest: 'img-flat', format: 'raw' });
	assert.equal(f.format, 'raw');
	assert.equal(f.base, null);
	const cat = await call(alice, 'image_info', { name: 'debian' });
	assert.equal(f.virtual_size, cat.virtual_size);
	assert.ok(f.disk_size > 1024 * 1024, 'the catalogue\'s data was read');
	const v = await call(alice, 'image_convert',
	    { source: 'img-over', dest: 'img-vmdk', format: 'vmdk' });
	assert.equal(v.format, 'vmdk');
	assert.equal(v.virtual_size, GiB);
	assert.match(await refused(alice, 'image_convert',
	    { source: 'img-over', dest: 'img-flat' }), /exists.*overwrite/);
	assert.match(await refused(alice, 'image_convert',
	    { source: 'img-over', dest: 'x', format: 'raw', compress: true }),
	    /compress works with format qcow2 only/);
	assert.match(await refused(alice, 'image_convert',
	    { source: 'nosuch', dest: 'x' }), /no image nosuch/);
});

test('resize grows, and shrinking needs shrink', async () => {
	const g = await call(alice, 'image_resize',
	    { name: 'img-over', size: '+1G' });
	assert.equal(g.virtual_size, 2 * GiB);
	assert.match(await refused(alice, 'image_resize',
	    { name: 'img-over', size: '512M' }), /pass shrink=true/);
	const s = await call(alice, 'image_resize',
	    { name: 'img-raw', size: '32M', shrink: true });
	assert.equal(s.virtual_size, 32 * 1024 * 1024);
});

test('offline snapshots are made, listed, applied and deleted',
    async () => {
	await call(alice, 'image_snapshot_create',
	    { name: 'img-over', tag: 'before' });
	assert.match(await refused(alice, 'image_snapshot_create',
	    { name: 'img-over', tag: 'before' }), /already has a snapshot/);
	await call(alice, 'image_resize', { name: 'img-over', size: '+1G' });
	const l = await call(alice, 'image_snapshot_list',
	    { name: 'img-over' });
	assert.deepEqual(l.snapshots.map((s) => s.tag), ['before']);
	assert.match(l.snapshots[0].date, /^\d{4}-\d\d-\d\dT/);
	await call(alice, 'image_snapshot_apply',
	    { name: 'img-over', tag: 'before' });
	assert.match(await refused(alice, 'image_snapshot_apply',
	    { name: 'img-over', tag: 'nosuch' }), /no snapshot nosuch/);
	assert.match(await refused(alice, 'image_snapshot_create',
	    { name: 'img-raw', tag: 't' }), /only qcow2 images/);
	await call(alice, 'image_snapshot_delete',
	    { name: 'img-over', tag: 'before' });
	assert.deepEqual((await call(alice, 'image_snapshot_list',
	    { name: 'img-over' })).snapshots, []);
});

test('an image in use, the catalogue and the quota are refused',
    async () => {
	for (const [tool, args] of [
	    ['image_delete', { name: 'img-base' }],
	    ['image_resize', { name: 'img-base', size: '+1G' }],
	    ['image_snapshot_create', { name: 'img-base', tag: 't' }],
	    ['image_create', { name: 'img-base', size: '1G',
		overwrite: true }]])
		assert.match(await refused(alice, tool, args),
		    /backing of 1 image/, tool);
	assert.match(await refused(alice, 'image_delete', { name: 'debian' }),
	    /catalog image, which is read-only/);
	assert.match(await refused(alice, 'image_create',
	    { name: 'debian', size: '1G' }), /name of a catalog image/);
	assert.match(await refused(alice, 'image_create',
	    { name: 'img-base', size: '1G' }), /exists.*overwrite=true/);
	assert.match(await refused(alice, 'image_create',
	    { name: 'huge', size: '15T' }), /storage quota/);
	assert.match(await refused(alice, 'image_create',
	    { name: 'nosize' }), /size is required/);
	assert.match(await refused(alice, 'image_create',
	    { name: 'x', base: 'x' }), /no image x/);
	assert.match(await refused(alice, 'image_create',
	    { name: 'img-base2', base: 'img-raw', format: 'raw' }),
	    /only a qcow2 image can have a backing/);
	assert.deepEqual(mine(await call(alice, 'image_list', {})),
	    ['img-base', 'img-cat', 'img-flat', 'img-over', 'img-raw',
	    'img-vmdk']);
});

test('a conversion reports its progress, and a cancelled one leaves nothing',
    async () => {
	const seen = [];
	const r = await alice.callTool({ name: 'image_convert', arguments: {
	    source: 'debian', dest: 'img-prog', format: 'qcow2' } }, undefined,
	    { timeout: 600000, onprogress: (p) => seen.push(p) });
	assert.ok(!r.isError, r.content?.[0]?.text);
	const steps = seen.filter((p) => p.total === 1000);
	assert.ok(steps.length >= 1,
	    `no step reported: ${JSON.stringify(seen)}`);
	assert.ok(steps.every((p) => p.progress <= 1000));
	await call(alice, 'image_delete', { name: 'img-prog' });
	// A caller that goes away stops qemu-img: no image is left.
	const ac = new AbortController();
	const gone = alice.callTool({ name: 'image_convert', arguments: {
	    source: 'debian', dest: 'img-gone', format: 'qcow2',
	    compress: true } }, undefined, { signal: ac.signal,
	    timeout: 600000 }).catch((e) => e);
	await new Promise((res) => setTimeout(res, 500));
	ac.abort();
	await gone;
	let names = [];
	for (let i = 0; i < 50; i++) {
		names = (await call(alice, 'image_list', {})).images
		    .map((x) => x.name);
		const busy = await alice.callTool({ name: 'image_create',
		    arguments: { name: 'img-gone', size: '1M' } });
		if (!busy.isError) {
			await call(alice, 'image_delete', { name: 'img-gone' });
			break;
		}
		assert.match(busy.content[0].text, /busy/);
		await new Promise((res) => setTimeout(res, 200));
	}
	assert.ok(!names.includes('img-gone'), 'a cancelled convert was kept');
});

test('deleting the overlay frees its base', async () => {
	const d = await call(alice, 'image_delete', { name: 'img-over' });
	assert.deepEqual(d, { name: 'img-over', deleted: true });
	assert.equal((await call(alice, 'image_info', { name: 'img-base' }))
	    .in_use, false);
	await call(alice, 'image_delete', { name: 'img-base' });
	assert.match(await refused(alice, 'image_delete', { name: 'img-base' }),
	    /no image img-base/);
});
