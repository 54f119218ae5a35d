// See and drive a VM through the official MCP SDK client: screenshots of
// its display, typing on its console's shell, keys, the tablet and the
// mouse as the guest's input devices see them, and the serial console.
// Run through tests/suites/vms, with a real guest under TCG.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import * as env from '../lib/env.mjs';
import { connect, call, refused, collect, sleep, CALL_TIMEOUT_MS } from
    '../lib/client.mjs';

const NAME = 'display-test';
const DEADLINE_MS = 60000;
let agent;

before(async () => {
	agent = await connect(env.token, 'mcvm-display-test');
	await call(agent, 'vm_create', { request_id: 'display-create',
	    name: NAME });
});

after(async () => {
	if (agent) {
		await agent.callTool({ name: 'vm_destroy',
		    arguments: { vm_id: NAME } }, undefined,
		    { timeout: CALL_TIMEOUT_MS });
		await agent.close();
	}
});

// A screenshot as the client gets it: the PNG and the structured part.
async function screenshot(client = agent) {
	const r = await client.callTool({ name: 'vm_screenshot',
	    arguments: { vm_id: NAME } }, undefined,
	    { timeout: CALL_TIMEOUT_MS });
	assert.ok(!r.isError, `vm_screenshot: ${r.content?.[0]?.text}`);
	const img = r.content.find((c) => c.type === 'image');
	assert.ok(img, JSON.stringify(r.content.map((c) => c.type)));
	assert.equal(img.mimeType, 'image/png');
	const png = Buffer.from(img.data, 'base64');
	return { png, s: r.structuredContent };
}

// Width and height from a PNG's IHDR, which must come first.
function pngSize(png) {
	assert.deepEqual([...png.subarray(0, 8)],
	    [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
	assert.equal(png.readUInt32BE(8), 13);
	assert.equal(png.subarray(12, 16).toString('latin1'), 'IHDR');
	return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

async function sh(command, wait = 30) {
	const r = await call(agent, 'vm_exec', { vm_id: NAME,
	    request_id: `display-${randomBytes(6).toString('hex')}`,
	    command, wait_seconds: wait });
	return r;
}

// Polls a shell test in the guest until it succeeds.
async function until(command, what) {
	const deadline = Date.now() + DEADLINE_MS;
	for (;;) {
		if ((await sh(command)).exit_code === 0)
			return;
		assert.ok(Date.now() < deadline, `${what}: not seen in time`);
		await sleep(300);
	}
}

test('a screenshot is a PNG of the text console', async () => {
	const { png, s } = await screenshot();
	assert.equal(s.bytes, png.length);
	assert.deepEqual(pngSize(png), { width: s.width, height: s.height });
	// VGA text mode: 80x25 characters of 9x16 pixels.
	assert.deepEqual([s.width, s.height], [720, 400]);
});

test('typed text runs on the console shell, and the screen changes',
    async () => {
	await until('pgrep -u 1000 -t tty1 -x bash >/dev/null',
	    'the console shell');
	const before = (await screenshot()).png;
	const file = `typed-${randomBytes(4).toString('hex')}`;
	const r = await call(agent, 'vm_type_text', { vm_id: NAME,
	    text: `touch /workspace/${file}`, enter: true });
	assert.ok(r.events > 0);
	await until(`test -e /workspace/${file}`, file);
	// The file is the console user's, made in its shell.
	assert.equal((await sh(`stat -c %u /workspace/${file}`)).stdout,
	    '1000\n');
	const after = (await screenshot()).png;
	assert.notDeepEqual(after, before);
});

test('ctrl-c interrupts a command typed on tty1', async () => {
	await call(agent, 'vm_type_text', { vm_id: NAME,
	    text: 'sleep 1000', enter: true });
	await until('pgrep -t tty1 -x sleep >/dev/null', 'sleep on tty1');
	await call(agent, 'vm_send_keys', { vm_id: NAME, keys: ['ctrl-c'] });
	await until('! pgrep -t tty1 -x sleep >/dev/null', 'sleep gone');
});

test('keys and text are checked before anything is sent', async () => {
	const msg = await refused(agent, 'vm_send_keys', { vm_id: NAME,
	    keys: ['ret', 'ctrl-nosuchkey'] });
	assert.match(msg, /keys\[1\] "ctrl-nosuchkey": nosuchkey is not a key/);
	for (const k of ['ret', 'esc', 'f12', 'ctrl', 'enter', 'space'])
		assert.match(msg, new RegExp(`[ :]${k}(,|$)`), k);
	const t = await refused(agent, 'vm_type_text', { vm_id: NAME,
	    text: 'caf\u00e9' });
	assert.match(t, /character 3 \(from 0\) cannot be typed/);
	assert.match(t, /vm_write_file/);
	const c = await refused(agent, 'vm_click', { vm_id: NAME, x: 720,
	    y: 10 });
	assert.match(c, /outside the display, which is 720x400/);
	// 2,000 characters 30 ms apart take a minute: over a call's time.
	assert.match(await refused(agent, 'vm_type_text', { vm_id: NAME,
	    text: 'a'.repeat(2000) }),
	    /would take longer than a call may \(50 s.*lower delay_ms/);
});

// Reads every input device, one JSON line per event, until the right
// button's release (the last event the test sends) or a time limit.
const READER = `
import json, os, select, struct, sys, time
fds = {}
for n in sorted(os.listdir('/dev/input')):
    if n.startswith('event'):
        fds[os.open('/dev/input/' + n, os.O_RDONLY | os.O_NONBLOCK)] = n
print(json.dumps({'ready': len(fds)}), flush=True)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    r, _, _ = select.select(list(fds), [], [], 0.2)
    for fd in r:
        while True:
            try:
                b = os.read(fd, 24 * 64)
            except BlockingIOError:
                break
            if not b:
                break
            for i in range(0, len(b) - 23, 24):
                _, _, t, c, v = struct.unpack('qqHHi', b[i:i + 24])
                if t != 0:
                    print(json.dumps([fds[fd], t, c, v]), flush=True)
                if (t, c, v) == (1, 0x111, 0):
                    sys.exit(0)
`;

const EV_KEY = 1, EV_REL = 2, EV_ABS = 3;
const BTN_LEFT = 0x110, BTN_RIGHT = 0x111;

test('clicks and motion reach the guest\'s input devices', async () => {
	await call(agent, 'vm_write_file', { vm_id: NAME, path: 'events.py',
	    content: READER });
	const { job_id } = await call(agent, 'vm_exec', { vm_id: NAME,
	    request_id: 'display-reader', command: 'python3 events.py 25' });
	// Wait until it has opened the devices.
	const deadline = Date.now() + DEADLINE_MS;
	for (;;) {
		const o = await call(agent, 'vm_job_output', { vm_id: NAME,
		    job_id, wait_seconds: 5 });
		if (o.stdout.includes('ready'))
			break;
		assert.equal(o.state, 'running', o.stderr);
		assert.ok(Date.now() < deadline, 'the reader did not start');
	}
	const { s } = await screenshot();
	const [x, y] = [300, 120];
	await call(agent, 'vm_click', { vm_id: NAME, x, y });
	await call(agent, 'vm_mouse_move', { vm_id: NAME, dx: 10, dy: -5,
	    click: 'right' });
	// The guest may see the last events after the call has returned:
	// the reader ends on the last one.
	const out = await collect(agent, NAME, job_id);
	assert.equal(out.last.exit_code, 0,
	    `the reader did not see the release: ${out.stdout}`);
	const ev = out.stdout.split('\n').filter((l) => l.startsWith('['))
	    .map((l) => JSON.parse(l));
	const want = (t, c, v) => ev.some((e) => e[1] === t && e[2] === c &&
	    e[3] === v);
	const absX = Math.round(x * 32767 / (s.width - 1));
	const absY = Math.round(y * 32767 / (s.height - 1));
	assert.ok(want(EV_ABS, 0, absX), `ABS_X ${absX}: ${out.stdout}`);
	assert.ok(want(EV_ABS, 1, absY), `ABS_Y ${absY}: ${out.stdout}`);
	assert.ok(want(EV_KEY, BTN_LEFT, 1) && want(EV_KEY, BTN_LEFT, 0),
	    'left press and release');
	const rel = (c) => ev.filter((e) => e[1] === EV_REL && e[2] === c)
	    .reduce((a, e) => a + e[3], 0);
	assert.equal(rel(0), 10, out.stdout);
	assert.equal(rel(1), -5, out.stdout);
	assert.ok(want(EV_KEY, BTN_RIGHT, 1) && want(EV_KEY, BTN_RIGHT, 0),
	    'right press and release');
});

test('the serial console shows the kernel and what was written to it',
    async () => {
	const mark = `mcvm-serial-${randomBytes(4).toString('hex')}`;
	assert.equal((await sh(`echo ${mark} > /dev/ttyS0`)).exit_code, 0);
	const r = await call(agent, 'vm_serial_read', { vm_id: NAME,
	    tail_lines: 2000 });
	assert.ok(r.lines.some((l) => /Linux version \d/.test(l)),
	    r.lines.slice(0, 20).join('\n'));
	assert.ok(r.lines.some((l) => l === mark), r.lines.slice(-20)
	    .join('\n'));
	const t = await call(agent, 'vm_serial_read', { vm_id: NAME,
	    tail_lines: 1 });
	assert.equal(t.lines.length, 1);
});

test('a flood of the console stays bounded and the VM responsive',
    async () => {
	const { job_id } = await call(agent, 'vm_exec', { vm_id: NAME,
	    request_id: 'display-flood', command: 'yes ' +
	    'mcvm-flood-0123456789abcdef | head -c 104857600 > /dev/ttyS0' });
	try {
		const deadline = Date.now() + 120000;
		let r;
		for (;;) {
			r = await call(agent, 'vm_serial_read', { vm_id: NAME,
			    tail_lines: 2000 });
			if (r.total_bytes > 2 * 256 * 1024)
				break;
			assert.ok(Date.now() < deadline,
			    `only ${r.total_bytes} bytes`);
			await sleep(500);
		}
		// The guest still answers, and the answer is the ring's end:
		// whole lines of the flood but the last, which it is writing.
		assert.equal((await sh('echo alive')).stdout, 'alive\n');
		assert.equal(r.truncated, true);
		assert.ok(r.lines.length > 100 && r.lines.length <= 2000);
		assert.ok(Buffer.byteLength(r.lines.join('\n')) <= 64 * 1024);
		assert.ok(r.lines.slice(0, -1).every((l) =>
		    l === 'mcvm-flood-0123456789abcdef'),
		    r.lines.slice(-3).join('|'));
	} finally {
		await call(agent, 'vm_job_cancel', { vm_id: NAME, job_id });
	}
	// Later reads are bounded all the same.
	const r = await call(agent, 'vm_serial_read', { vm_id: NAME,
	    tail_lines: 2000 });
	assert.ok(Buffer.byteLength(r.lines.join('\n')) <= 64 * 1024);
});

test('two screenshots at once each return a whole frame', async () => {
	const [a, b] = await Promise.all([screenshot(), screenshot()]);
	for (const { png, s } of [a, b]) {
		assert.equal(s.bytes, png.length);
		assert.deepEqual(pngSize(png), { width: 720, height: 400 });
	}
});

test('a paused VM: screenshots and the console leave it paused, input ' +
    'wakes it', async () => {
	await call(agent, 'vm_suspend', { vm_id: NAME, mode: 'pause' });
	try {
		const { png, s } = await screenshot();
		assert.equal(s.bytes, png.length);
		const r = await call(agent, 'vm_serial_read', { vm_id: NAME });
		assert.ok(r.lines.length > 0);
		assert.equal((await call(agent, 'vm_status',
		    { vm_id: NAME })).state, 'paused');
		const k = await call(agent, 'vm_send_keys',
		    { vm_id: NAME, keys: ['shift'] });
		assert.equal(k.events, 2);
		assert.equal((await call(agent, 'vm_status',
		    { vm_id: NAME })).state, 'running');
	} finally {
		await call(agent, 'vm_resume', { vm_id: NAME });
	}
});

test('a VM without a display says so', async () => {
	const r = await call(agent, 'vm_create', { request_id:
	    'display-none', name: 'display-none', display: false });
	try {
		assert.equal(r.display, false);
		assert.match(await refused(agent, 'vm_screenshot',
		    { vm_id: 'display-none' }),
		    /has no display.*display true/);
		assert.match(await refused(agent, 'vm_type_text',
		    { vm_id: 'display-none', text: 'x' }), /has no display/);
		// Its serial console is there all the same.
		const s = await call(agent, 'vm_serial_read',
		    { vm_id: 'display-none' });
		assert.ok(Array.isArray(s.lines));
	} finally {
		await call(agent, 'vm_destroy', { vm_id: 'display-none' });
	}
});

test('another workspace cannot see or drive the VM', async () => {
	const bob = await connect(env.tokenFrom('MCVM_TOKEN2_FILE'));
	try {
		for (const [tool, args] of [['vm_screenshot', {}],
		    ['vm_type_text', { text: 'x' }], ['vm_serial_read', {}],
		    ['vm_click', { x: 1, y: 1 }]])
			assert.match(await refused(bob, tool,
			    { vm_id: NAME, ...args }),
			    /no VM display-test in this workspace/);
	} finally {
		await bob.close();
	}
});

test('a stopped VM\'s console stays readable until it starts again',
    async () => {
	const mark = `mcvm-stop-${randomBytes(4).toString('hex')}`;
	// On a line of its own: the flood's last line had no end.
	assert.equal((await sh(`printf '\\n%s\\n' ${mark} > /dev/ttyS0`))
	    .exit_code, 0);
	await call(agent, 'vm_stop', { vm_id: NAME });
	const r = await call(agent, 'vm_serial_read', { vm_id: NAME,
	    tail_lines: 2000 });
	assert.ok(r.lines.includes(mark), r.lines.slice(-5).join('\n'));
	// Input needs it running, and says so.
	assert.match(await refused(agent, 'vm_send_keys',
	    { vm_id: NAME, keys: ['a'] }), /is stopped: call vm_start/);
	await call(agent, 'vm_start', { vm_id: NAME });
	const s = await call(agent, 'vm_serial_read', { vm_id: NAME,
	    tail_lines: 2000 });
	assert.ok(!s.lines.includes(mark), 'the new boot has its own console');
});
