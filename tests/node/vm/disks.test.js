// VMs from your own disks, end to end through the official MCP SDK
// client: an operating system installed from an ISO onto an empty disk
// of the workspace's store (tests/lib/mkiso.sh builds the installer,
// uploaded through image_upload_url's URL),
// the installed disk booting alone, persistent and overlay disks, UEFI,
// and the refusals: no agent, images in use, what a VM cannot boot.
// Run through tests/suites/vms, with real guests under TCG.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as env from '../lib/env.mjs';
import { connect, call, refused, sleep, CALL_TIMEOUT_MS } from
    '../lib/client.mjs';

const MARKER = 'mcvm-marker: mcvm installed this disk';
const DONE = 'mcvm-install: done';
const BOOT_MS = 600000;		// against a hang only: TCG boots are slow
const MiB = 1024 * 1024;
let alice, bob, work;

before(async () => {
	alice = await connect(env.token, 'mcvm-disks-test');
	bob = await connect(env.tokenFrom('MCVM_TOKEN2_FILE'));
	work = fs.mkdtempSync(path.join(os.tmpdir(), 'mcvm-disks-'));
	execFileSync('../lib/mkiso.sh', [work], { stdio: 'ignore' });
});

after(async () => {
	for (const vm of ['inst-vm', 'ovl-vm', 'efi-vm', 'snap-vm',
	    'snap-raw-vm'])
		await alice?.callTool({ name: 'vm_destroy',
		    arguments: { vm_id: vm } }, undefined,
		    { timeout: CALL_TIMEOUT_MS });
	// The overlay before its base.
	for (const n of ['inst-ovl', 'inst-vmdk', 'big-disk', 'inst-disk',
	    'inst-iso', 'efi-disk', 'snap-a', 'snap-b', 'snap-raw'])
		await alice?.callTool({ name: 'image_delete',
		    arguments: { name: n } });
	await alice?.close();
	await bob?.close();
	if (work)
		fs.rmSync(work, { recursive: true, force: true });
});

// Uploads install.iso as image name, through the URL an MCP client gets.
async function uploadIso(name) {
	const u = await call(alice, 'image_upload_url', { name });
	const data = fs.readFileSync(path.join(work, 'install.iso'));
	const r = await fetch(new URL(u.path, env.url), { method: 'PUT',
	    headers: { 'Content-Length': String(data.length) }, body: data });
	assert.equal(r.status, 201, await r.clone().text());
	return r.json();
}

async function serial(vm) {
	return (await call(alice, 'vm_serial_read', { vm_id: vm,
	    tail_lines: 2000 })).lines;
}

// Polls the VM until pred(status, lines) holds; fails on a failed VM or
// an init's failure line.
// Whether a console line holds s: the kernel's own messages share the
// console and may land on the same line as the guest's.
function seen(lines, s) {
	return lines.some((l) => l.includes(s));
}

async function until(vm, what, pred) {
	const deadline = Date.now() + BOOT_MS;
	for (;;) {
		const s = await call(alice, 'vm_status', { vm_id: vm });
		const lines = await serial(vm);
		assert.notEqual(s.state, 'failed', `${vm}: ${s.reason}`);
		const bad = lines.find((l) => /mcvm-[a-z]+: failed/.test(l));
		assert.equal(bad, undefined, lines.slice(-15).join('\n'));
		if (pred(s, lines))
			return { s, lines };
		assert.ok(Date.now() < deadline, `${vm}: ${what}: not seen ` +
		    `in time; state ${s.state}; console:\n` +
		    lines.slice(-15).join('\n'));
		await sleep(1000);
	}
}

test('an OS is installed from an ISO onto an empty disk, which then ' +
    'boots alone', async () => {
	const d = await call(alice, 'image_create',
	    { name: 'inst-disk', size: '64M', format: 'raw' });
	assert.equal(d.virtual_size, 64 * MiB);
	assert.equal((await uploadIso('inst-iso')).format, 'iso');
	const list = await call(alice, 'image_list', {});
	assert.equal(list.images.find((i) => i.name === 'inst-iso')?.format,
	    'iso');

	const v = await call(alice, 'vm_create', { request_id: 'inst-1',
	    name: 'inst-vm', disks: ['inst-disk'], iso: 'inst-iso',
	    persistent: true, memory_mib: 256 });
	// Running once QEMU runs: no agent is waited for.
	assert.equal(v.state, 'running');
	assert.deepEqual(v.disks, ['inst-disk']);
	assert.equal(v.iso, 'inst-iso');
	assert.equal(v.install, 'pending');
	assert.equal(v.persistent, true);
	assert.equal(v.firmware, 'bios');
	assert.equal(v.machine, 'q35');
	assert.equal(v.agent, false);
	assert.equal(v.guest, undefined);

	// The display works without an agent.
	const shot = await alice.callTool({ name: 'vm_screenshot',
	    arguments: { vm_id: 'inst-vm' } }, undefined,
	    { timeout: CALL_TIMEOUT_MS });
	assert.ok(!shot.isError, shot.content?.[0]?.text);
	const png = Buffer.from(shot.content.find((c) => c.type === 'image')
	    .data, 'base64');
	assert.equal(png.subarray(1, 4).toString('latin1'), 'PNG');

	// The installer says so on the serial console, and powers off.
	await until('inst-vm', DONE, (s, l) => seen(l, DONE));
	// The VM starts again from the disk alone: its own grub, kernel
	// and initramfs show the marker, then power off.
	const { s, lines } = await until('inst-vm', 'the marker',
	    (st, l) => st.install === 'done' && st.state === 'stopped' &&
	    seen(l, MARKER));
	assert.equal(s.reason, 'the guest powered off');
	assert.ok(lines.some((l) => l.includes('mcvm installed disk')),
	    'it booted through the disk\'s own grub');

	// The image is the VM's disk: in use while the VM exists.
	const l = await call(alice, 'image_list', {});
	assert.equal(l.images.find((i) => i.name === 'inst-disk').in_use, true);
	assert.equal(l.images.find((i) => i.name === 'inst-iso').in_use, false);
	assert.match(await refused(alice, 'image_delete',
	    { name: 'inst-disk' }), /in use by a VM.*vm_destroy it first/);
	assert.match(await refused(alice, 'image_resize',
	    { name: 'inst-disk', size: '+1M' }), /in use by a VM/);
	const info = await call(alice, 'image_info', { name: 'inst-disk' });
	assert.equal(info.virtual_size, 64 * MiB);
});

test('a VM whose guest runs no agent says how to get one, and what ' +
    'works meanwhile', async () => {
	for (const [tool, args] of [
	    ['vm_exec', { request_id: 'inst-exec', command: 'true' }],
	    ['vm_read_file', { path: 'a' }],
	    ['vm_write_file', { path: 'a', content: 'x' }],
	    ['vm_list_files', { path: '.' }]]) {
		const m = await refused(alice, tool,
		    { vm_id: 'inst-vm', ...args });
		assert.match(m, new RegExp('boots its own disks and no ' +
		    'qemu-guest-agent answers in its guest: install and ' +
		    'start qemu-guest-agent in the guest'), tool);
		assert.match(m, /vm_screenshot.*vm_serial_read.*snapshot/s,
		    tool);
	}
	// Another workspace sees no such VM.
	assert.match(await refused(bob, 'vm_status', { vm_id: 'inst-vm' }),
	    /no VM|not found|unknown/i);
});

test('the installed disk boots again from an overlay of it',
    async () => {
	await call(alice, 'vm_destroy', { vm_id: 'inst-vm' });
	const v = await call(alice, 'vm_create', { request_id: 'ovl-1',
	    name: 'ovl-vm', disks: ['inst-disk'], memory_mib: 256 });
	assert.equal(v.persistent, false);
	assert.equal(v.install, undefined);
	// The base of a VM's disk is in use too, and persistent is refused.
	assert.match(await refused(alice, 'image_delete',
	    { name: 'inst-disk' }), /in use by a VM/);
	assert.match(await refused(alice, 'vm_create', { request_id: 'ovl-2',
	    disks: ['inst-disk'], persistent: true }),
	    /base of vm vm-[0-9a-f]+'s disk/);
	await until('ovl-vm', 'the marker', (s, l) => s.state === 'stopped' &&
	    seen(l, MARKER));
	// vm_start keeps the disk; vm_destroy deletes the overlay only.
	const again = await call(alice, 'vm_start', { vm_id: 'ovl-vm' });
	assert.equal(again.state, 'running');
	await until('ovl-vm', 'the marker again', (s, l) =>
	    s.state === 'stopped' && seen(l, MARKER));
	await call(alice, 'vm_destroy', { vm_id: 'ovl-vm' });
	const info = await call(alice, 'image_info', { name: 'inst-disk' });
	assert.equal(info.virtual_size, 64 * MiB);
});

test('UEFI: the ISO boots by OVMF and installs', async () => {
	await call(alice, 'image_create',
	    { name: 'efi-disk', size: '64M', format: 'qcow2' });
	const v = await call(alice, 'vm_create', { request_id: 'efi-1',
	    name: 'efi-vm', disks: ['efi-disk'], iso: 'inst-iso',
	    firmware: 'uefi', memory_mib: 256 });
	assert.equal(v.firmware, 'uefi');
	await until('efi-vm', DONE, (s, l) => seen(l, DONE));
	// Then the VM starts again from the disk alone (whose BIOS boot
	// sector OVMF does not boot): the install is done.
	await until('efi-vm', 'the install done', (s) =>
	    s.install === 'done');
	await call(alice, 'vm_destroy', { vm_id: 'efi-vm' });
});

test('a VM from its own qcow2 disks has live snapshots; one with a raw ' +
    'disk is refused', async () => {
	await call(alice, 'image_create',
	    { name: 'snap-a', size: '16M', format: 'qcow2' });
	await call(alice, 'image_create',
	    { name: 'snap-b', size: '8M', format: 'qcow2' });
	// No OS on them: SeaBIOS finds nothing to boot and the VM runs on.
	await call(alice, 'vm_create', { request_id: 'snap-1',
	    name: 'snap-vm', disks: ['snap-a', 'snap-b'], memory_mib: 256 });
	const t = await call(alice, 'vm_snapshot_create',
	    { vm_id: 'snap-vm', tag: 'one' });
	assert.equal(t.tag, 'one');
	assert.ok(t.vm_size > 0, 'its RAM and devices were saved');
	const l = await call(alice, 'vm_snapshot_list', { vm_id: 'snap-vm' });
	assert.deepEqual(l.snapshots.map((x) => x.tag), ['one']);
	assert.match(await refused(alice, 'vm_snapshot_create',
	    { vm_id: 'snap-vm', tag: 'one' }), /already/);
	const r = await call(alice, 'vm_snapshot_restore',
	    { vm_id: 'snap-vm', tag: 'one' });
	assert.equal(r.tag, 'one');
	assert.equal((await call(alice, 'vm_status',
	    { vm_id: 'snap-vm' })).state, 'running');
	assert.match(await refused(alice, 'vm_snapshot_restore',
	    { vm_id: 'snap-vm', tag: 'two' }), /no snapshot two/);
	assert.equal((await call(alice, 'vm_snapshot_delete',
	    { vm_id: 'snap-vm', tag: 'one' })).deleted, true);
	assert.deepEqual((await call(alice, 'vm_snapshot_list',
	    { vm_id: 'snap-vm' })).snapshots, []);
	await call(alice, 'vm_destroy', { vm_id: 'snap-vm' });

	// A persistent raw image is the VM's disk: no snapshots in it.
	await call(alice, 'image_create',
	    { name: 'snap-raw', size: '8M', format: 'raw' });
	await call(alice, 'vm_create', { request_id: 'snap-2',
	    name: 'snap-raw-vm', disks: ['snap-raw'], persistent: true,
	    memory_mib: 256 });
	assert.match(await refused(alice, 'vm_snapshot_create',
	    { vm_id: 'snap-raw-vm', tag: 'one' }),
	    /disk snap-raw is raw.*image_convert format qcow2/s);
	await call(alice, 'vm_destroy', { vm_id: 'snap-raw-vm' });
	for (const n of ['snap-a', 'snap-b', 'snap-raw'])
		await call(alice, 'image_delete', { name: n });
});

test('what a VM cannot boot is refused with the fix', async () => {
	await call(alice, 'image_convert',
	    { source: 'inst-disk', dest: 'inst-vmdk', format: 'vmdk' });
	assert.match(await refused(alice, 'vm_create', { request_id: 'bad-1',
	    disks: ['inst-vmdk'] }), /image_convert it to qcow2/);
	await call(alice, 'image_create',
	    { name: 'inst-ovl', base: 'inst-disk' });
	assert.match(await refused(alice, 'vm_create', { request_id: 'bad-2',
	    disks: ['inst-ovl'] }), /has a backing image.*image_convert/);
	assert.match(await refused(alice, 'vm_create', { request_id: 'bad-3',
	    disks: ['inst-iso'] }), /is an ISO: pass it as iso/);
	assert.match(await refused(alice, 'vm_create', { request_id: 'bad-4',
	    disks: ['nosuch'] }), /no image nosuch/);
	assert.match(await refused(alice, 'vm_create', { request_id: 'bad-5',
	    disks: ['inst-disk'], iso: 'nosuch' }), /no image nosuch of format/);
	assert.match(await refused(alice, 'vm_create', { request_id: 'bad-6',
	    iso: 'inst-iso' }), /go with disks/);
	assert.match(await refused(alice, 'vm_create', { request_id: 'bad-7',
	    disks: ['inst-disk', 'inst-disk'] }), /named twice/);
	assert.match(await refused(alice, 'vm_create', { request_id: 'bad-8',
	    disks: ['inst-disk'], image: 'debian' }), /exclude each other/);
	assert.match(await refused(alice, 'vm_create', { request_id: 'bad-9',
	    disks: ['a', 'b', 'c', 'd', 'e'] }), /disks/);
	assert.match(await refused(alice, 'vm_create', { request_id: 'bad-10',
	    disks: ['inst-disk'], firmware: 'coreboot' }), /firmware/);
	// A VM's own copy may grow to its image's size: that counts
	// against the storage quota (40 GiB) with the image itself.
	await call(alice, 'image_create', { name: 'big-disk', size: '25G' });
	assert.match(await refused(alice, 'vm_create', { request_id: 'bad-12',
	    disks: ['big-disk'] }), /may grow to 25600 MiB.*storage limit/);
	// Another workspace's images are not there for it.
	assert.match(await refused(bob, 'vm_create', { request_id: 'bad-11',
	    disks: ['inst-disk'] }), /no image|no images/);
	// Nothing was left of the refused creations.
	const vms = (await call(alice, 'vm_list', {})).vms;
	assert.deepEqual(vms.map((x) => x.name), []);
	// And what the file made goes: an overlay first, then its base.
	for (const n of ['inst-ovl', 'inst-vmdk', 'big-disk', 'inst-disk',
	    'inst-iso', 'efi-disk'])
		await call(alice, 'image_delete', { name: n });
	const left = (await call(alice, 'image_list', {})).images
	    .filter((i) => !i.catalog);
	assert.deepEqual(left.map((i) => i.name), []);
});
