/*
 * The VM tools: vm_create, vm_list, vm_status, vm_start, vm_stop,
 * vm_suspend, vm_resume and vm_destroy (see dispatch.h for their
 * entries).  Their chains of monitor requests go on through named
 * continuations.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dispatch.h"
#include "log.h"
#include "msg_vmm.h"
#include "netslot.h"
#include "req.h"
#include "utf8.h"
#include "vm.h"

#define VM_IMAGE_WAITS_MAX	64	/* such calls at once */

/*
 * vm_create calls that came while their image was being verified: each is
 * a wait in the request table (RP_IMAGE, keyed by the image's name) with
 * its own copy of the arguments, and runs again once stored reports the
 * image, or fails after VM_IMAGE_WAIT seconds.  No receipt exists for
 * one yet: the same request_id may be sent again meanwhile.
 */
struct vm_image_wait {
	struct ws_auth		 auth;
	struct tool_args	 args;		/* every pointer owned */
};


static void
vm_image_wait_free(struct req *r)
{
	struct vm_image_wait	*w = r->ctx;

	r->ctx = NULL;
	call_args_free(&w->args);
	free(w);
}

/* stored reported the image: the creation runs, and cannot wait again. */
static void
vm_image_reported(struct req *r, struct imsg *imsg)
{
	struct vm_image_wait	*w = r->ctx;

	if (r->call != 0)
		(void)dispatch_run(r->call, &w->auth, &w->args);
	vm_image_wait_free(r);
}

/* Past its deadline, or its caller cancelled or went: nothing was done. */
static void
vm_image_wait_end(struct req *r, enum req_end why, const char *text)
{
	char	 msg[256];

	if (why == REQ_EXPIRED && r->call != 0) {
		(void)snprintf(msg, sizeof(msg), "image %s is still being "
		    "verified after %d s; nothing was done: retry later",
		    r->key, VM_IMAGE_WAIT);
		call_reply(r->call, TOOL_ERROR, msg);
	}
	vm_image_wait_free(r);
}

static void
vm_image_wait(uint64_t peerid, const struct ws_auth *auth,
    const struct tool_args *args, const char *image)
{
	struct vm_image_wait	*w;
	struct req		*r;
	char			 msg[256];

	if (req_count(NULL, RP_IMAGE) >= VM_IMAGE_WAITS_MAX ||
	    (w = calloc(1, sizeof(*w))) == NULL) {
		(void)snprintf(msg, sizeof(msg), "image %s is still being "
		    "verified after a service start; retry in a few seconds",
		    image);
		call_reply(peerid, TOOL_ERROR, msg);
		return;
	}
	if (call_args_copy(&w->args, args) == -1) {
		free(w);
		call_reply(peerid, TOOL_UNAVAILABLE, "out of memory; retry");
		return;
	}
	w->auth = *auth;
	r = req_await(RP_IMAGE, IMSG_STORE_IMAGE_STATUS, image,
	    vm_image_reported, vm_image_wait_end);
	r->call = peerid;
	r->what = args->tool->name;
	r->ctx = w;
	log_debug("workspace %s: vm_create waits for image %s", auth->name,
	    image);
	(void)snprintf(msg, sizeof(msg), "waiting for image %s to be "
	    "verified", image);
	call_progress(peerid, 0, 3, msg);
}

/* ---- vm_create ---------------------------------------------------------- */

/* The new VM's row as the arguments and the defaults make it. */
static void
create_row(const struct tool_call *c, struct vm_row *row, const char **name,
    const char **image)
{
	const struct tool_args	*a = c->args;
	const struct tool_value	*v;
	const char		*iso;
	size_t			 i, len;

	memset(row, 0, sizeof(*row));
	row->ws_id = c->auth->id;
	(void)snprintf(row->ws, sizeof(row->ws), "%s", c->auth->name);
	row->memory_mib = (uint32_t)TOOL_INT(a, VM_CREATE, MEMORY_MIB,
	    env->conf.vm_memory >> 20);
	row->vcpus = (uint32_t)TOOL_INT(a, VM_CREATE, VCPUS,
	    env->conf.vm_vcpus);
	row->idle_seconds = (uint32_t)TOOL_INT(a, VM_CREATE, IDLE_SECONDS,
	    env->conf.vm_idle_seconds);
	row->idle_mode = (uint32_t)TOOL_INT(a, VM_CREATE, IDLE_MODE,
	    env->conf.vm_idle_mode);
	row->network = (uint32_t)TOOL_INT(a, VM_CREATE, NETWORK, 0);
	row->display = (uint32_t)TOOL_INT(a, VM_CREATE, DISPLAY, 1);
	*name = TOOL_STR(a, VM_CREATE, NAME);
	*image = TOOL_STR(a, VM_CREATE, IMAGE);
	if ((v = TOOL_ARG(a, VM_CREATE, DISKS)) != NULL)
		for (i = 0; i < v->nlist && i < VM_DISKS_MAX; i++) {
			len = strlen(row->disks);
			(void)snprintf(row->disks + len, sizeof(row->disks) -
			    len, "%s%s", i > 0 ? "," : "", v->list[i]);
		}
	if ((iso = TOOL_STR(a, VM_CREATE, ISO)) != NULL) {
		(void)snprintf(row->iso, sizeof(row->iso), "%s", iso);
		row->install = VM_INSTALL_PENDING;
	}
	row->firmware = (uint32_t)TOOL_INT(a, VM_CREATE, FIRMWARE, FW_BIOS);
	row->machine = (uint32_t)TOOL_INT(a, VM_CREATE, MACHINE, MACH_Q35);
	row->persistent = (uint32_t)TOOL_INT(a, VM_CREATE, PERSISTENT, 0);
	if (*image == NULL && row->disks[0] == '\0' && env->conf.nimages > 0)
		*image = env->conf.images[0].name;
}

/* Before the receipt: what frontd checked, and the image's verification. */
static int
tool_vm_create_check(struct tool_call *c)
{
	const struct tool_value	*v;
	struct vm_row		 row;
	const char		*rid, *name, *image;
	size_t			 i;

	rid = TOOL_STR(c->args, VM_CREATE, REQUEST_ID);
	create_row(c, &row, &name, &image);
	/* Re-validate what frontd checked: mcvmd trusts no peer. */
	v = TOOL_ARG(c->args, VM_CREATE, DISKS);
	for (i = 0; v != NULL && i < v->nlist; i++)
		if (v->nlist > VM_DISKS_MAX || !valid_object_name(v->list[i]))
			fatalx("frontd: vm_create disks out of range");
	if (rid == NULL || !valid_request_id(rid) ||
	    (name != NULL && !valid_object_name(name)) ||
	    (row.iso[0] != '\0' && !valid_object_name(row.iso)) ||
	    row.firmware > FW_UEFI || row.machine > MACH_PC ||
	    !valid_range_u64(row.memory_mib, VM_MEMORY_MIN_MIB,
	    VM_MEMORY_MAX_MIB) || !valid_range_u64(row.vcpus, 1, VM_VCPUS_MAX))
		fatalx("frontd: vm_create arguments out of range");
	if (image != NULL && vm_image_pending(image)) {
		vm_image_wait(c->id, c->auth, c->args, image);
		return 1;
	}
	return 0;
}

static void
create_fail(struct tool_call *c, enum tool_status st, const char *msg)
{
	receipt_fail(c->auth->id, c->rid, "", c->id, st, msg);
}

/*
 * The parameters of a VM from its own disks go together: disks, and
 * with them iso, firmware, machine and persistent, never image.  -1
 * with err saying what to pass instead.
 */
static int
create_own_check(const struct tool_call *c, const struct vm_row *row,
    const char *image, char *err, size_t len)
{
	const struct tool_value	*v = TOOL_ARG(c->args, VM_CREATE, DISKS);
	size_t			 i, j;

	if (v == NULL || v->nlist == 0) {
		if (row->iso[0] != '\0' ||
		    TOOL_ARG(c->args, VM_CREATE, FIRMWARE) != NULL ||
		    TOOL_ARG(c->args, VM_CREATE, MACHINE) != NULL ||
		    TOOL_ARG(c->args, VM_CREATE, PERSISTENT) != NULL) {
			(void)snprintf(err, len, "iso, firmware, machine and "
			    "persistent go with disks: pass the images to "
			    "boot in disks (for an install, an empty one "
			    "made with image_create), or leave them out");
			return -1;
		}
		return 0;
	}
	if (TOOL_STR(c->args, VM_CREATE, IMAGE) != NULL) {
		(void)snprintf(err, len, "image and disks exclude each other: "
		    "a VM boots a catalogue image, or your own disks");
		return -1;
	}
	for (i = 0; i < v->nlist; i++)
		for (j = 0; j < i; j++)
			if (strcmp(v->list[i], v->list[j]) == 0) {
				(void)snprintf(err, len, "disks: image %s is "
				    "named twice; give each disk once",
				    v->list[i]);
				return -1;
			}
	return 0;
}

#define CREATE_DB_ERROR	"state database error: nothing was created; " \
			"retry, or ask the operator if it persists"

/*
 * vm, a warm clone (warm.c), becomes the VM row asks for in its
 * workspace, named name or by its id: its row is recorded as it runs.
 * -1 if it is not, and the call failed.
 */
static int
create_taken(struct tool_call *c, struct vm *vm, const struct vm_row *row,
    const char *name)
{
	struct vm_row	 r = vm->row;

	r.ws_id = row->ws_id;
	(void)snprintf(r.ws, sizeof(r.ws), "%s", row->ws);
	(void)snprintf(r.name, sizeof(r.name), "%s", name != NULL ? name :
	    r.id);
	r.idle_seconds = row->idle_seconds;
	r.idle_mode = row->idle_mode;
	r.created = r.updated = (int64_t)time(NULL);
	r.reason[0] = '\0';
	if (state_vm_insert(&r) == -1) {
		create_fail(c, TOOL_ERROR, CREATE_DB_ERROR);
		return -1;	/* it stays warm */
	}
	vm->row = r;
	vm_warm_taken(vm);
	vm_idle_touch(vm);
	return 0;
}

/*
 * The new VM row asks for, named name or by its id, restored from a
 * template of its configuration if one is ready: NULL if the call failed.
 */
static struct vm *
create_new(struct tool_call *c, struct vm_row *row, const char *name,
    uint64_t disk, const struct fwd_spec *fwd, size_t nfwd)
{
	struct vm	*vm;
	size_t		 i;

	if (vm_slot_alloc(&row->slot) == -1) {
		create_fail(c, TOOL_ERROR, "every VM slot on this host is "
		    "taken; try again later");
		return NULL;
	}
	vm_random_id("vm-", row->id, sizeof(row->id));
	row->uid = env->conf.vm_uid_first + row->slot;
	(void)snprintf(row->name, sizeof(row->name), "%s",
	    name != NULL ? name : row->id);
	(void)snprintf(row->state, sizeof(row->state), "%s",
	    vm_state_name(VS_CREATING));
	(void)snprintf(row->intent, sizeof(row->intent), "%s",
	    vm_op_name(VO_CREATE));
	row->disk_bytes = disk;
	row->created = (int64_t)time(NULL);
	if (state_vm_insert(row) == -1) {
		create_fail(c, TOOL_ERROR, CREATE_DB_ERROR);
		return NULL;
	}
	vm = vm_new(row);
	for (i = 0; i < nfwd; i++) {
		vm->fwd[i].host = fwd[i].host;
		vm->fwd[i].guest = fwd[i].guest;
	}
	vm->nfwd = nfwd;
	vm->boot.restore = vm_template_fits(vm);
	if (vm->boot.restore)
		vm_template_share(vm);
	/* One a warm clone could have served: its template's is wanted. */
	if (vm->boot.restore && nfwd == 0)
		vm_template_wanted(vm);
	return vm;
}

static void
tool_vm_create(struct tool_call *c)
{
	const struct tool_value	*v;
	struct vm_row		 row;
	struct vm		*vm;
	const char		*name, *image;
	struct fwd_spec		 fwd[VM_FORWARDS_MAX];
	char			 err[320], audit[640];
	uint64_t		 disk = 0;
	uint32_t		 vlimit;
	size_t			 nfwd;
	int64_t			 i, j;
	int			 configured;

	create_row(c, &row, &name, &image);
	if (row.vcpus > (vlimit = vm_vcpus_limit(&configured))) {
		(void)snprintf(err, sizeof(err), "vcpus %u is over this "
		    "host's limit of %u per VM (%s); ask for fewer", row.vcpus,
		    vlimit, configured ? "its vcpus limit" : "its CPU count");
		create_fail(c, TOOL_ERROR, err);
		return;
	}
	v = TOOL_ARG(c->args, VM_CREATE, PORT_FORWARDS);
	if (row.network != 0 && env->conf.uplink[0] == '\0') {
		create_fail(c, TOOL_ERROR, env->conf.pool_set ?
		    "this host offers no outbound network (it has no uplink): "
		    "create the VM with network \"off\"; port_forwards still "
		    "work with it, inbound only" :
		    "this host offers no network: create the VM with network "
		    "\"off\" and without port_forwards");
		return;
	}
	if (row.network != 0 && !(c->auth->flags & WS_ALLOW_NETWORK)) {
		create_fail(c, TOOL_ERROR, "this workspace may not use the "
		    "network: create the VM with network \"off\" "
		    "(port_forwards still work with it, inbound only), or ask "
		    "the operator for a workspace with network access");
		return;
	}
	if (v != NULL && v->nlist > 0 && !env->conf.pool_set) {
		create_fail(c, TOOL_ERROR, "this host has no addresses for "
		    "VM NICs, so it offers no port forwards: create the VM "
		    "without port_forwards");
		return;
	}
	if (v != NULL && v->nlist > VM_FORWARDS_MAX)
		fatalx("frontd: %zu port forwards", v->nlist);
	for (i = 0; v != NULL && (size_t)i < v->nlist; i++) {
		if (fwd_spec_parse(v->list[i], &fwd[i]) == -1)
			fatalx("frontd: bad port forward %s", v->list[i]);
		for (j = 0; j < i; j++)
			if (fwd[i].host != 0 && fwd[j].host == fwd[i].host) {
				(void)snprintf(err, sizeof(err), "host port "
				    "%u is forwarded twice: give each forward "
				    "its own host port, or \"auto:%u\" to "
				    "have one chosen", fwd[i].host,
				    fwd[i].guest);
				create_fail(c, TOOL_ERROR, err);
				return;
			}
	}
	if (create_own_check(c, &row, image, err, sizeof(err)) == -1) {
		create_fail(c, TOOL_ERROR, err);
		return;
	}
	if (!vm_cgroups_ok()) {
		create_fail(c, TOOL_UNAVAILABLE, "this host cannot confine VMs "
		    "with cgroups: the operator must fix it (mcvmd's log says "
		    "why)");
		return;
	}
	if (image == NULL && row.disks[0] == '\0') {
		create_fail(c, TOOL_ERROR, "no image is configured on this "
		    "host");
		return;
	}
	/* Own disks: their images count in the store already. */
	if ((image != NULL && vm_image_find(image, &disk, err,
	    sizeof(err)) == -1) ||
	    vm_admit(c->auth->id, row.memory_mib, row.vcpus, disk, err,
	    sizeof(err)) == -1) {
		create_fail(c, TOOL_ERROR, err);
		return;
	}
	if (name != NULL && valid_id(name, VM_ID_PREFIX)) {
		create_fail(c, TOOL_ERROR, "name: a name may not have the "
		    "form of a VM id (\"vm-\" and 16 hex digits): choose "
		    "another");
		return;
	}
	if (name != NULL && (vm = vm_find_name(name, c->auth->id)) != NULL) {
		(void)snprintf(err, sizeof(err), "the workspace already has a "
		    "VM named %s (%s): choose another name, or use that VM",
		    name, vm->row.id);
		create_fail(c, TOOL_ERROR, err);
		return;
	}
	(void)snprintf(row.image, sizeof(row.image), "%s",
	    image != NULL ? image : "");
	/* A warm clone of the workspace's template, if one fits. */
	nfwd = v != NULL ? v->nlist : 0;
	if (nfwd == 0 && (vm = vm_warm_take(&row)) != NULL) {
		if (create_taken(c, vm, &row, name) == -1)
			return;
	} else if ((vm = create_new(c, &row, name, disk, fwd, nfwd)) == NULL)
		return;
	vm_op_begin(vm, c->id, VO_CREATE, c->rid);
	(void)snprintf(audit, sizeof(audit), "workspace %s: vm %s (%s%s%s, "
	    "%u MiB)", c->auth->name, vm->row.id, image != NULL ? image :
	    "disks ", row.disks, row.iso[0] != '\0' ? ", iso" : "",
	    row.memory_mib);
	(void)state_audit("mcvmd", "vm-create", audit);
	if (vm->state == VS_RUNNING)
		vm_warm_give(vm);
	/* Restored: its disk is the template's as it was checkpointed. */
	else if (vm->boot.restore)
		vm_store_disk_copy(vm, vm_template_disk(vm));
	else
		vm_store_disk(vm, IMSG_STORE_DISK_CREATE);
}

/*
 * A creation cancelled while still under way is undone, as if it had
 * never been asked for: its receipt goes too, so that the same
 * request_id may be sent again.
 */
static void
tool_vm_create_cancel(uint64_t call)
{
	struct vm_image_wait	*w;
	struct req		*r;
	struct vm		*vm;
	char			 msg[160];

	if ((r = req_match(RP_IMAGE, call, NULL)) != NULL) {
		w = r->ctx;
		log_info("workspace %s: vm_create cancelled while it waited "
		    "for image %s", w->auth.name, r->key);
		req_end(r, REQ_CANCELLED, NULL);
		return;
	}
	TAILQ_FOREACH(vm, &vms, entry) {
		if (!vm->op.pending || vm->op.peerid != call)
			continue;
		vm->op.peerid = 0;
		if (vm->op.kind != VO_CREATE || vm->state == VS_RUNNING)
			return;
		vm->op.pending = 0;
		if (state_receipt_forget(vm->row.ws_id, vm->op.rid) == -1)
			log_warnx("%s: receipt %s not removed", vm->row.id,
			    vm->op.rid);
		(void)snprintf(msg, sizeof(msg), "workspace %s: vm %s",
		    vm->row.ws, vm->row.id);
		(void)state_audit("mcvmd", "vm-create-cancelled", msg);
		log_info("%s: creation cancelled by its caller; undoing it",
		    vm->row.id);
		vm_destroy(0, vm);
		return;
	}
}

/* frontd died: a creation that waits for its image has done nothing. */
void
tool_vm_create_lost(void)
{
	struct req	*r;

	/* A task's waits are not frontd's: they go on. */
	while ((r = req_match_front(RP_IMAGE)) != NULL)
		req_end(r, REQ_CANCELLED, NULL);
}

/* ---- vm_list, vm_status ------------------------------------------------- */

static void
tool_vm_list(struct tool_call *c)
{
	struct vm	*vm;
	json_t		*a = json_array();

	TAILQ_FOREACH(vm, &vms, entry)
		if (vm->row.ws_id == c->auth->id &&
		    vm->state != VS_DESTROYING)
			json_array_append_new(a, vm_json(vm));
	call_reply_json(c->id, json_pack("{s:o}", "vms", a));
}

/* The jobs vm_status lists, with the guest's states when it answered. */
struct status_jobs {
	json_t					*jobs;
	const struct msg_vmm_guest_info_result	*guest;	/* or NULL */
};

/*
 * vm_status lists a VM's newest jobs, each command cut to a short prefix:
 * the answer stays small however many jobs ran or how long they were.
 * Each has its state as the guest told it just now; one the guest no
 * longer keeps has expired.  vm_job_status tells the rest of a job.
 */
static int
jobs_json_add(const char *id, uint32_t guest_job, const char *command,
    int64_t created, void *arg)
{
	struct status_jobs	*sj = arg;
	size_t			 len = strlen(command), i;
	size_t			 cut = utf8_prefix(command, len,
				    VM_STATUS_COMMAND_MAX);
	const char		*state = "expired";
	json_t			*j;

	j = json_pack("{s:s, s:s%, s:I}", "job_id", id, "command", command,
	    cut, "created", (json_int_t)created);
	if (j == NULL)
		return -1;
	if (cut < len)
		json_object_set_new(j, "command_truncated", json_true());
	if (sj->guest != NULL) {
		for (i = 0; i < sj->guest->njobs; i++)
			if (sj->guest->jobs[i].job == guest_job)
				state = agent_job_state_name(
				    sj->guest->jobs[i].state);
		json_object_set_new(j, "state", json_string(state));
	}
	json_array_append_new(sj->jobs, j);
	return 0;
}

static void
status_reply(uint64_t call, struct vm *vm, json_t *acc,
    const struct msg_vmm_guest_info_result *guest)
{
	json_t			*j = vm_json(vm), *jobs = json_array();
	struct status_jobs	 sj = { jobs, guest };

	if (acc != NULL)
		json_object_update(j, acc);
	if (state_job_each(vm->row.id, VM_STATUS_JOBS_MAX + 1, jobs_json_add,
	    &sj) == -1)
		log_warnx("%s: jobs not listed", vm->row.id);
	json_object_set_new(j, "jobs_truncated",
	    json_boolean(json_array_size(jobs) > VM_STATUS_JOBS_MAX));
	if (json_array_size(jobs) > VM_STATUS_JOBS_MAX)
		(void)json_array_remove(jobs, VM_STATUS_JOBS_MAX);
	json_object_set_new(j, "jobs", jobs);
	call_reply_json(call, j);
}

/* The guest's view, after QMP's. */
static void
status_guest(struct req *r, struct imsg *imsg)
{
	static struct msg_vmm_guest_info_result	 m;	/* 2 KiB of jobs */

	if (msg_vmm_guest_info_result_get(imsg, &m) == -1) {
		call_req_fail(r, "malformed guest info");
		return;
	}
	json_object_set_new(r->acc, "guest", json_pack("{s:s, s:s, s:s, "
	    "s:s, s:I, s:i, s:i, s:b}", "agent", vm_agent_kind(r->vm), "os",
	    m.os, "kernel", m.kernel, "agent_version", m.agent_version,
	    "uptime_ms",
	    (json_int_t)m.uptime_ms, "jobs_active", (int)m.jobs_active,
	    "jobs_total", (int)m.jobs_total, "frozen", m.frozen != 0));
	status_reply(r->call, r->vm, r->acc, &m);
}

/* QMP's view; the guest's next, if it answers. */
static void
status_qmp(struct req *r, struct imsg *imsg)
{
	struct msg_vmm_qmp_state	 m;

	if (msg_vmm_qmp_state_get(imsg, &m) == -1) {
		call_req_fail(r, "malformed QMP status");
		return;
	}
	r->acc = json_pack("{s:{s:s, s:b}}", "qmp", "status", m.status,
	    "running", m.running != 0);
	if (m.running && r->vm->boot.agent) {
		req_next(r, IMSG_VMM_GUEST_INFO, status_guest);
		(void)req_send(r);
		return;
	}
	status_reply(r->call, r->vm, r->acc, NULL);
}

/* vm_status: QMP's view, then the guest's, both live. */
static void
tool_vm_status(struct tool_call *c)
{
	struct vm	*vm = c->vm;

	/* Never wakes a suspended VM: QMP answers while paused. */
	if ((vm->state == VS_RUNNING || vm->state == VS_PAUSED) &&
	    vm->vmm_live) {
		(void)req_send(call_req(c, IMSG_VMM_QMP_STATUS, status_qmp));
		return;
	}
	status_reply(c->id, vm, NULL, NULL);
}

/* ---- vm_start, vm_stop, vm_destroy -------------------------------------- */

static void
tool_vm_stop(struct tool_call *c)
{
	struct vm	*vm = c->vm;
	int64_t		 force = TOOL_INT(c->args, VM_STOP, FORCE, 0);
	int64_t		 timeout = TOOL_INT(c->args, VM_STOP, TIMEOUT_SECONDS,
			    TOOL_STOP_TIMEOUT_DEFAULT);

	switch (vm_stop_request(c->id, vm, force != 0, (uint32_t)timeout)) {
	case 1:
		call_reply_json(c->id, vm_json(vm));
		break;
	case -1:
		call_refuse_state(c->id, vm);
		break;
	}
}

static void
tool_vm_start(struct tool_call *c)
{
	struct vm	*vm = c->vm;
	char		 msg[VM_MSG_MAX];

	if (vm->state == VS_RUNNING) {
		call_reply_json(c->id, vm_json(vm));
		return;
	}
	if (vm->state != VS_STOPPED && vm->state != VS_FAILED &&
	    vm->state != VS_HIBERNATED) {
		call_refuse_state(c->id, vm);
		return;
	}
	if (vm->qemu_pid > 0 || vm->vmm_pid > 0 || vm->op.pending) {
		call_reply(c->id, TOOL_ERROR, "the VM's processes are still "
		    "stopping; retry in a moment");
		return;
	}
	if (vm->state != VS_HIBERNATED)
		vm_start(c->id, vm);
	else if (vm_hibernate_resume(c->id, vm, msg, sizeof(msg)) == -1)
		call_reply(c->id, TOOL_ERROR, msg);
}

static void
tool_vm_destroy(struct tool_call *c)
{
	vm_destroy(c->id, c->vm);
}

/* ---- vm_suspend, vm_resume ---------------------------------------------- */

/* The chain's operation ended without moving the VM. */
static void
chain_intent_clear(struct vm *vm, enum vm_opkind op)
{
	if (strcmp(vm->row.intent, vm_op_name(op)) == 0)
		vm_intent(vm, VO_NONE);
}

static void
chain_fail(struct req *r, enum vm_opkind op, const char *why)
{
	chain_intent_clear(r->vm, op);
	call_req_fail(r, why);
}

static void
suspend_cancel(struct req *r, enum req_end end, const char *why)
{
	chain_intent_clear(r->vm, r->hibernate ? VO_HIBERNATE : VO_PAUSE);
	call_req_cancel(r, end, why);
}

static void
resume_cancel(struct req *r, enum req_end end, const char *why)
{
	chain_intent_clear(r->vm, VO_RESUME);
	call_req_cancel(r, end, why);
	if (end != REQ_VM_GONE)
		vm_wake_settle(r->vm, 0);
}

/*
 * A chain that moves the VM (vm_suspend, vm_resume) goes on only while
 * the VM is in the state the chain left it in: a stop, a destroy or a
 * failure meanwhile owns the VM, and an answer the monitor sends after
 * it must not undo that.  Otherwise the call fails, and 0 is returned.
 */
static int
chain_holds(struct req *r, enum vm_state want)
{
	struct vm	*vm = r->vm;
	char		 msg[VM_MSG_MAX];

	if (vm->state == want)
		return 1;
	(void)snprintf(msg, sizeof(msg), "%s is %s now: %s did not finish",
	    vm->row.id, vm_state_name(vm->state), r->what);
	call_req_fail(r, msg);
	return 0;
}

static void
suspend_paused(struct req *r, struct imsg *imsg)
{
	if (!chain_holds(r, VS_RUNNING))
		return;
	vm_fsm(r->vm, VE_PAUSED, NULL);
	call_reply_json(r->call, vm_json(r->vm));
}

static void
suspend_frozen(struct req *r, struct imsg *imsg)
{
	if (!chain_holds(r, VS_RUNNING))
		return;
	if (r->hibernate) {
		vm_hibernate(r->call, r->vm, "hibernated by vm_suspend");
		return;
	}
	req_next(r, IMSG_VMM_PAUSE, suspend_paused);
	(void)req_send(r);
}

/* The guest's jobs: none running, or force, and they are frozen. */
static void
suspend_info(struct req *r, struct imsg *imsg)
{
	struct msg_vmm_guest_info_result	 m;
	uint32_t				 active;
	char					 msg[VM_MSG_MAX];

	if (!chain_holds(r, VS_RUNNING))
		return;
	if (msg_vmm_guest_info_result_get(imsg, &m) == -1) {
		chain_fail(r, r->hibernate ? VO_HIBERNATE : VO_PAUSE,
		    "malformed guest info");
		return;
	}
	active = m.jobs_active;
	if (active > 0 && !r->force) {
		(void)snprintf(msg, sizeof(msg), "%u job%s still running: "
		    "wait, cancel them, or pass force=true to freeze them "
		    "until vm_resume", active, active == 1 ? " is" : "s are");
		chain_fail(r, r->hibernate ? VO_HIBERNATE : VO_PAUSE, msg);
		return;
	}
	req_next(r, IMSG_VMM_FREEZE, suspend_frozen);
	(void)req_send(r);
}

/* vm_suspend (pause): check jobs, freeze them, stop the vCPUs. */
static void
tool_vm_suspend(struct tool_call *c)
{
	struct vm	*vm = c->vm;
	struct req	*r;
	char		 msg[VM_MSG_MAX];
	int64_t		 mode = TOOL_INT(c->args, VM_SUSPEND, MODE, 0);
	int64_t		 force = TOOL_INT(c->args, VM_SUSPEND, FORCE, 0);

	if ((mode == 0 && vm->state == VS_HIBERNATED) ||
	    (mode != 0 && vm->state == VS_PAUSED)) {
		call_reply_json(c->id, vm_json(vm));
		return;
	}
	if (mode == 0 && vm_attached(vm)) {
		vm_attached_refusal(vm, "hibernation", msg, sizeof(msg));
		call_reply(c->id, TOOL_ERROR, msg);
		return;
	}
	if (mode == 0 && vm_own_disks(vm)) {
		call_reply(c->id, TOOL_UNAVAILABLE, "a VM from your own disks "
		    "cannot hibernate in this mcvm build: use mode \"pause\", "
		    "which keeps its memory in QEMU");
		return;
	}
	if (vm->op.pending || (vm->state != VS_RUNNING &&
	    vm->state != VS_PAUSED) || !vm->vmm_live) {
		call_refuse_state(c->id, vm);
		return;
	}
	if (mode == 0 && vm_admit_state(vm, "a checkpoint", msg,
	    sizeof(msg)) == -1) {
		call_reply(c->id, TOOL_ERROR, msg);
		return;
	}
	/* Paused, its jobs are frozen already (or there were none). */
	if (vm->state == VS_PAUSED) {
		vm_hibernate(c->id, vm, "hibernated by vm_suspend");
		return;
	}
	if (vm->boot.agent)
		r = call_req(c, IMSG_VMM_GUEST_INFO, suspend_info);
	else
		r = call_req(c, IMSG_VMM_PAUSE, suspend_paused);
	r->cancel = suspend_cancel;
	r->force = force != 0;
	r->hibernate = mode == 0;
	vm_intent(vm, r->hibernate ? VO_HIBERNATE : VO_PAUSE);
	(void)req_send(r);
}

static void
resume_thawed(struct req *r, struct imsg *imsg)
{
	if (!chain_holds(r, VS_RUNNING))
		return;
	call_reply_json(r->call, vm_json(r->vm));
	vm_wake_settle(r->vm, 1);
}

static void
resume_time_set(struct req *r, struct imsg *imsg)
{
	if (!chain_holds(r, VS_RUNNING))
		return;
	req_next(r, IMSG_VMM_THAW, resume_thawed);
	(void)req_send(r);
}

/* The vCPUs run: the guest's clock, then its jobs thaw. */
static void
resume_cont(struct req *r, struct imsg *imsg)
{
	struct vm		*vm = r->vm;

	if (!chain_holds(r, VS_PAUSED))
		return;
	vm_fsm(vm, VE_RESUMED, NULL);
	if (!vm->boot.agent) {
		call_reply_json(r->call, vm_json(vm));
		vm_wake_settle(vm, 1);
		return;
	}
	req_next_set_time(r, resume_time_set);
	(void)req_send(r);
}

/* vm_resume: run the vCPUs, set the guest's clock, thaw its jobs. */
static void
tool_vm_resume(struct tool_call *c)
{
	struct vm	*vm = c->vm;
	char		 msg[VM_MSG_MAX];

	if (vm->state == VS_RUNNING) {
		call_reply_json(c->id, vm_json(vm));
		return;
	}
	if (vm->state == VS_HIBERNATED && !vm->op.pending) {
		if (vm_hibernate_resume(c->id, vm, msg, sizeof(msg)) == -1)
			call_reply(c->id, TOOL_ERROR, msg);
		return;
	}
	if (vm->state != VS_PAUSED || !vm->vmm_live) {
		call_refuse_state(c->id, vm);
		return;
	}
	vm_resume_paused(c->id, vm);
}

/* Resumes a paused VM for call (0: for the calls that woke it). */
void
vm_resume_paused(uint64_t call, struct vm *vm)
{
	struct req	*r;

	r = req_new(RP_MONITOR, vm, IMSG_VMM_CONT, resume_cont,
	    resume_cancel);
	r->call = call;
	r->what = "vm_resume";
	vm_intent(vm, VO_RESUME);
	(void)req_send(r);
}

/* The tools of this file (see TOOL_IMPL in dispatch.h). */
TOOL_IMPL(TOOL_VM_CREATE, tool_vm_create, tool_vm_create_cancel,
    tool_vm_create_check, "vm_list", P_VM_CREATE_REQUEST_ID);
TOOL_IMPL(TOOL_VM_LIST, tool_vm_list, NULL, NULL, NULL, -1);
TOOL_IMPL(TOOL_VM_STATUS, tool_vm_status, NULL, NULL, NULL, -1);
TOOL_IMPL(TOOL_VM_STOP, tool_vm_stop, NULL, NULL, NULL, -1);
TOOL_IMPL(TOOL_VM_START, tool_vm_start, NULL, NULL, NULL, -1);
TOOL_IMPL(TOOL_VM_SUSPEND, tool_vm_suspend, NULL, NULL, NULL, -1);
TOOL_IMPL(TOOL_VM_RESUME, tool_vm_resume, NULL, NULL, NULL, -1);
TOOL_IMPL(TOOL_VM_DESTROY, tool_vm_destroy, NULL, NULL, NULL, -1);
