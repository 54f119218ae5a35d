// An agent's first try: the task an LLM agent is given (write a small
// Python package, test it, read the output, fetch a file), played through
// the official MCP SDK client with only what the tool descriptions say,
// and the mistakes an agent makes on the way, each answered with its fix.
// Run through tests/suites/vms; the network-off port forward is in
// tests/node/net (the network suite), which has the namespaces for it.
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

test('a paused or stopped VM says which tool to call', async () => {
	await call(agent, 'vm_suspend', { vm_id: NAME, mode: 'pause' });
	assert.match(await refused(agent, 'vm_exec', { vm_id: NAME,
	    request_id: 'agent-paused', command: 'true' }),
	    /is paused: call vm_resume/);
	await call(agent, 'vm_resume', { vm_id: NAME });
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
