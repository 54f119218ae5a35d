// An agent's first try: the task an LLM agent is given (write a small
// Python package, test it, read the output, fetch a file), played through
// the official MCP SDK client with only what the tool descriptions say,
// and the mistakes an agent makes on the way, each answered with its fix.
// Run through tests/suites/vms; a network-off VM's port forwards, which
// reach nothing outward, are in the network suite (tests/network), which
// has the namespaces for it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as env from '../lib/env.mjs';
import { connect, call, refused, collect } from '../lib/client.mjs';

const NAME = 'agent-task';
let agent;

before(async () => {
	agent = await connect(env.token, 'mcvm-agent-test');
});

after(async () => {
	await agent?.close();
});

test('image_list shows the catalogue vm_create boots from', async () => {
	const r = await call(agent, 'image_list', {});
	assert.ok(r.images.length >= 1);
	const def = r.images.filter((i) => i.default);
	assert.equal(def.length, 1);
	assert.equal(def[0].catalog, true);
	assert.equal(def[0].state, 'ready');
	assert.match(def[0].digest, /^sha256:[0-9a-f]{64}$/);
	assert.ok(def[0].disk_size > 0);
});

test('a missing image lists the images there are', async () => {
	const names = (await call(agent, 'image_list', {})).images
	    .map((i) => i.name);
	const msg = await refused(agent, 'vm_create',
	    { request_id: 'agent-badimage', image: 'ubuntu' });
	assert.match(msg, /^no image named ubuntu; the images are /);
	for (const n of names)
		assert.ok(msg.includes(n), `${msg} names ${n}`);
	assert.match(msg, /see image_list/);
});

test('a VM created by name answers to its name', async () => {
	const r = await call(agent, 'vm_create',
	    { request_id: 'agent-create', name: NAME });
	assert.equal(r.name, NAME);
	const s = await call(agent, 'vm_status', { vm_id: NAME });
	assert.equal(s.vm_id, r.vm_id);
	// An unknown name, or one that is not a name, points at vm_list.
	assert.equal(await refused(agent, 'vm_status', { vm_id: 'nosuchvm' }),
	    'no VM nosuchvm in this workspace: see vm_list');
	assert.match(await refused(agent, 'vm_status', { vm_id: 'Bad Name' }),
	    /see vm_list/);
	// A second VM may not take the name, nor any VM an id's form.
	assert.match(await refused(agent, 'vm_create',
	    { request_id: 'agent-dup', name: NAME }),
	    /already has a VM named agent-task .*choose another name/);
	assert.match(await refused(agent, 'vm_create',
	    { request_id: 'agent-idname', name: 'vm-0123456789abcdef' }),
	    /may not have the form of a VM id/);
});

test('a paused VM wakes for work; a stopped one says which tool to call',
    async () => {
	await call(agent, 'vm_suspend', { vm_id: NAME, mode: 'pause' });
	const e = await call(agent, 'vm_exec', { vm_id: NAME,
	    request_id: 'agent-paused', command: 'echo woke',
	    wait_seconds: 30 });
	assert.equal(e.stdout, 'woke\n');
	assert.equal((await call(agent, 'vm_status', { vm_id: NAME })).state,
	    'running');
	await call(agent, 'vm_stop', { vm_id: NAME });
	assert.match(await refused(agent, 'vm_exec', { vm_id: NAME,
	    request_id: 'agent-stopped', command: 'true' }),
	    /is stopped: call vm_start/);
	const r = await call(agent, 'vm_start', { vm_id: NAME });
	assert.equal(r.state, 'running');
});

test('bash runs the commands', async () => {
	const r = await call(agent, 'vm_exec', { vm_id: NAME,
	    request_id: 'agent-bash', wait_seconds: 30,
	    command: 'set -o pipefail; a=(x y z); [[ ${#a[@]} == 3 ]] && ' +
	    "echo {1..3} ${a[1]} $'t\\x41b'" });
	const out = await collect(agent, NAME, r.job_id);
	assert.equal(out.last.exit_code, 0, out.stderr);
	assert.equal(out.stdout, '1 2 3 y tAb\n');
});

// The task: a small Python package, written as text into directories
// that do not exist yet, tested with unittest from a bash command line.
const FILES = {
	'pkg/calc/__init__.py': 'from .ops import add, mean\n',
	'/workspace/pkg/calc/ops.py': 'def add(a, b):\n    return a + b\n\n' +
	    'def mean(xs):\n    return sum(xs) / len(xs)\n',
	'pkg/tests/test_ops.py': 'import unittest\nfrom calc import add, ' +
	    'mean\n\nclass T(unittest.TestCase):\n    def test_add(self):\n' +
	    '        self.assertEqual(add(2, 3), 5)\n\n    def test_mean(self):' +
	    '\n        self.assertEqual(mean([1, 2, 3]), 2)\n',
	'pkg/README.md': '# calc \u00e9t\u00e9 \u2014 \u2713\n',
};

test('text files go into directories that did not exist', async () => {
	for (const [path, content] of Object.entries(FILES)) {
		const r = await call(agent, 'vm_write_file',
		    { vm_id: NAME, path, content });
		assert.equal(r.written, Buffer.byteLength(content));
		assert.equal(r.size, r.written);
	}
	// Exactly one of content and content_base64, said how to fix.
	assert.match(await refused(agent, 'vm_write_file',
	    { vm_id: NAME, path: 'x', content: 'a', content_base64: 'YQ==' }),
	    /not both/);
	assert.match(await refused(agent, 'vm_write_file',
	    { vm_id: NAME, path: 'x' }), /content/);
	// Outside /workspace is refused, with where paths may go.
	assert.match(await refused(agent, 'vm_write_file',
	    { vm_id: NAME, path: '/etc/passwd', content: 'x' }),
	    /\/workspace/);
});

test('vm_list_files shows the package without a shell', async () => {
	const r = await call(agent, 'vm_list_files',
	    { vm_id: NAME, path: 'pkg', depth: 2 });
	assert.equal(r.truncated, false);
	const byName = Object.fromEntries(r.entries.map((e) => [e.name, e]));
	assert.equal(byName.calc.type, 'dir');
	assert.equal(byName['calc/ops.py'].type, 'file');
	assert.equal(byName['calc/ops.py'].size,
	    Buffer.byteLength(FILES['/workspace/pkg/calc/ops.py']));
	assert.equal(byName['tests/test_ops.py'].mode, '0644');
	assert.ok(byName['README.md'].mtime > 1700000000);
});

test('the unittest run, with bash features in the command', async () => {
	const r = await call(agent, 'vm_exec', { vm_id: NAME,
	    request_id: 'agent-unittest', wait_seconds: 45,
	    command: 'set -o pipefail; cd pkg && [[ -d tests ]] && ' +
	    'python3 -m unittest discover -s tests -v 2>&1 | tee ' +
	    'log.txt; echo "status ${PIPESTATUS[0]}"' });
	const out = await collect(agent, NAME, r.job_id);
	assert.equal(out.last.exit_code, 0, out.stdout);
	assert.match(out.stdout, /test_add .* ok/);
	assert.match(out.stdout, /Ran 2 tests/);
	assert.match(out.stdout, /status 0\n$/);
});

test('a noisy build keeps its error through a 1 MiB stdout flood',
    async () => {
	// ~1.2 MiB of progress lines, then the compiler's error on stderr.
	const r = await call(agent, 'vm_exec', { vm_id: NAME,
	    request_id: 'agent-build', wait_seconds: 45,
	    command: 'for i in {1..40000}; do echo "compiling unit $i of ' +
	    '40000"; done; echo "main.c:3:1: error: expected \';\'" >&2; ' +
	    'exit 1' });
	assert.equal(r.state, 'completed');
	assert.equal(r.exit_code, 1);
	assert.ok(r.stdout_bytes > 1024 * 1024);
	assert.ok(r.truncated.stdout.dropped_bytes > 0);
	assert.equal(r.truncated.stderr, undefined);
	// Paging reaches the error and the last lines of stdout.
	const out = await collect(agent, NAME, r.job_id);
	assert.equal(out.stderr, "main.c:3:1: error: expected ';'\n");
	assert.match(out.stdout, /\[mcvm: \d+ bytes dropped here\]\n/);
	assert.match(out.stdout, /compiling unit 40000 of 40000\n$/);
	assert.ok(out.pages.length > 2, 'paged');
});

test('a file fetched back as text and as base64', async () => {
	const path = 'pkg/README.md';
	const want = FILES[path];
	const t = await call(agent, 'vm_read_file', { vm_id: NAME, path });
	assert.equal(t.encoding, 'utf-8');
	assert.equal(t.content, want);
	assert.equal(t.eof, true);
	assert.equal(t.size, Buffer.byteLength(want));
	const b = await call(agent, 'vm_read_file',
	    { vm_id: NAME, path: '/workspace/' + path, encoding: 'base64' });
	assert.equal(b.encoding, 'base64');
	assert.equal(Buffer.from(b.content_base64, 'base64').toString(), want);
	// A read that would cut a character holds it back for the next.
	const cut = want.indexOf('\u00e9') + 1;	// inside the first é
	const p = await call(agent, 'vm_read_file',
	    { vm_id: NAME, path, max_bytes: cut });
	assert.equal(p.content, want.slice(0, cut - 1));
	assert.equal(p.next_offset, cut - 1);
	assert.equal(p.size, Buffer.byteLength(want));
	// What the unittest run wrote, read back as text.
	const log = await call(agent, 'vm_read_file',
	    { vm_id: NAME, path: 'pkg/log.txt' });
	assert.match(log.content, /Ran 2 tests/);
});

test('vm_status lists the jobs with their states', async () => {
	const s = await call(agent, 'vm_status', { vm_id: NAME });
	const build = s.jobs.find((j) => j.command.startsWith('for i in'));
	assert.ok(build, JSON.stringify(s.jobs));
	assert.equal(build.state, 'completed');
	assert.ok(s.jobs.every((j) => j.state === 'completed'),
	    JSON.stringify(s.jobs));
});

test('vm_destroy by name, then again by id: destroyed both times',
    async () => {
	const id = (await call(agent, 'vm_status', { vm_id: NAME })).vm_id;
	const r = await call(agent, 'vm_destroy', { vm_id: NAME });
	assert.equal(r.destroyed, true);
	const again = await call(agent, 'vm_destroy', { vm_id: id });
	assert.deepEqual(again, { vm_id: id, destroyed: true });
	// Another workspace learns nothing of it.
	const bob = await connect(env.tokenFrom('MCVM_TOKEN2_FILE'));
	try {
		assert.equal(await refused(bob, 'vm_destroy', { vm_id: id }),
		    `no VM ${id} in this workspace: see vm_list`);
	} finally {
		await bob.close();
	}
});
