/*
 * The live snapshot tools: vm_snapshot_create, vm_snapshot_restore,
 * vm_snapshot_delete and vm_snapshot_list.  A snapshot is the VM's RAM,
 * devices and disk at one instant, saved by QEMU's snapshot jobs, which
 * the VM's monitor runs (vmm/snapshot.c); QEMU pauses the vCPUs while it
 * saves or loads.  state.db records each one (vm_snapshots: tag, bytes
 * of state, date), which counts against the workspace's storage and
 * goes with the VM, as do its bytes, in the VM's directory, which
 * vm_destroy deletes.
 *
 * A qcow2 overlay holds its snapshots whole.  A raw reflink clone (a
 * store on XFS or Btrfs) keeps the RAM and devices in its state node and
 * the disk as a reflink clone that stored makes, both while the vCPUs
 * stay stopped:
 *
 *	create	monitor: stop, save to the state node	(held)
 *		stored: clone the disk to the snapshot's
 *		monitor: cont
 *	restore	monitor: stop, load from the state node	(held)
 *		stored: clone the snapshot's disk back
 *		monitor: cont, then the guest's clock
 *	delete	monitor: delete from the state node
 *		stored: delete the snapshot's disk
 *
 * A save that fails resumes the VM as it was.  A restore that fails
 * after the load began leaves the VM paused, as QEMU does, and says so.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dispatch.h"
#include "log.h"
#include "msg_store.h"
#include "msg_vmm.h"
#include "proto.h"
#include "req.h"
#include "validate.h"
#include "vm.h"

#define SNAP_DATE_MAX		32	/* RFC 3339, UTC */

_Static_assert(VMM_SNAP_TIMEOUT_MS % 1000 == 0, "whole seconds");

/* The date of a snapshot, RFC 3339 in UTC. */
static void
snap_date(int64_t t, char *buf, size_t size)
{
	struct tm	 tm;
	time_t		 tt = (time_t)t;

	if (gmtime_r(&tt, &tm) == NULL ||
	    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		(void)snprintf(buf, size, "1970-01-01T00:00:00Z");
}

static json_t *
snap_json(const char *tag, uint64_t vm_size, int64_t created)
{
	char	 date[SNAP_DATE_MAX];

	snap_date(created, date, sizeof(date));
	return json_pack("{s:s, s:I, s:s}", "tag", tag, "vm_size",
	    (json_int_t)vm_size, "date", date);
}

/*
 * A VM from its own disks keeps its snapshots in its qcow2 disks (each
 * an overlay of an image, or a persistent qcow2 image), its state in
 * the first: a raw one (a reflink clone, or a persistent raw image)
 * cannot.  1 with why in msg if one is raw.
 */
static int
snap_own_raw(const struct vm *vm, char *msg, size_t len)
{
	char		 names[VM_DISKS_MAX][OBJ_NAME_MAX + 1];
	unsigned int	 i, n;

	n = vm_disk_names(&vm->row, names);
	for (i = 0; i < vm->nvdisk; i++)
		if (vm->vdisk[i].format != IMG_QCOW2)
			break;
	if (i == vm->nvdisk)
		return 0;
	(void)snprintf(msg, len, "%s's disk %s is raw (%s), and live "
	    "snapshots of a VM from your own disks are kept in qcow2 disks; "
	    "nothing was done. Make the VM from a qcow2 image "
	    "(image_convert format qcow2), or stop it and copy the image",
	    vm->row.id, i < n ? names[i] : "?", vm->row.persistent ?
	    "the image itself" : "a reflink clone of the image");
	return 1;
}

/*
 * The checks every tool of a snapshot makes: the tag is one, and the
 * VM's disks can hold snapshots.  0 to go on; otherwise answered.
 */
static int
snap_check(struct tool_call *c, const char *tag)
{
	char	 msg[VM_MSG_MAX];

	if (tag == NULL || !valid_snapshot_tag(tag)) {
		call_reply(c->id, TOOL_ERROR, "tag must be 1-64 lower-case "
		    "letters, digits, '.', '_' or '-', beginning with a letter "
		    "or digit, and not all digits");
		return -1;
	}
	if (vm_own_disks(c->vm) && snap_own_raw(c->vm, msg, sizeof(msg))) {
		call_reply(c->id, TOOL_ERROR, msg);
		return -1;
	}
	return 0;
}

/* A snapshot of vm with this tag, as state.db has it: -1 answered. */
static int
snap_lookup(struct tool_call *c, const char *tag, uint64_t *vm_size,
    int64_t *created)
{
	char	 msg[VM_MSG_MAX];
	int	 rc;

	if ((rc = state_snapshot_find(c->vm->row.id, tag, vm_size,
	    created)) == 1)
		return 0;
	if (rc == -1) {
		call_reply(c->id, TOOL_ERROR, "state database error");
		return -1;
	}
	(void)snprintf(msg, sizeof(msg), "%s has no snapshot %s: nothing was "
	    "done, and the VM runs on as it was; see vm_snapshot_list",
	    c->vm->row.id, tag);
	call_reply(c->id, TOOL_NOT_FOUND, msg);
	return -1;
}

/*
 * Whether vm's disk is a raw reflink clone of a catalogue image: its
 * snapshots are held, their disk half stored's.
 */
static int
snap_raw(const struct vm *vm)
{
	return !vm_own_disks(vm) && !vm_attached(vm) &&
	    vm->disk_format == DISK_RAW;
}

static struct req *
snap_req(struct tool_call *c, uint32_t op, const char *tag,
    void (*done)(struct req *, struct imsg *))
{
	struct msg_vmm_snapshot	 m;
	struct req		*r;

	r = call_req(c, IMSG_VMM_SNAPSHOT, done);
	/* The monitor's deadline, and a margin beyond it for mcvmd's. */
	r->wait_ms = VMM_SNAP_TIMEOUT_MS;
	(void)snprintf(r->tag, sizeof(r->tag), "%s", tag);
	m.op = op;
	m.tag = r->tag;
	m.hold = snap_raw(c->vm) && op != VMM_SNAP_DELETE;
	msg_vmm_snapshot_put(r->msg, &m);
	return r;
}

/* A raw disk's next step: stored's half of the snapshot (SVS_*). */
static void
snap_disk(struct req *r, uint32_t op, req_done_fn done)
{
	struct msg_store_vm_snapshot	 m = { r->vm->row.id, op, r->tag };

	r->wait_ms = 0;
	req_next_to(r, RP_STORED, IMSG_STORE_VM_SNAPSHOT, done);
	msg_store_vm_snapshot_put(r->msg, &m);
	(void)req_send(r);
}

/*
 * stored's answer: 0 when its half is done, or -1 with why in r->acc,
 * whose text it is.
 */
static int
snap_disk_result(struct req *r, struct imsg *imsg)
{
	struct msg_store_result	 m;

	vm_store_result(imsg, &m);
	if (m.status == 0)
		return 0;
	log_warnx("%s: %s", r->vm->row.id, m.text);
	if ((r->acc = json_string(m.text)) == NULL)
		fatalx("%s: json", __func__);
	return -1;
}

/* After a held step: the vCPUs run again if the VM was running. */
static void
snap_cont(struct req *r, req_done_fn done)
{
	if (r->vm->state != VS_RUNNING) {
		done(r, NULL);
		return;
	}
	req_next_to(r, RP_MONITOR, IMSG_VMM_CONT, done);
	(void)req_send(r);
}

/* A held save failed after the stop: resume what was running. */
static void
snap_resume(struct vm *vm)
{
	if (vm->state == VS_RUNNING && vm->vmm_live)
		req_send_quiet(vm, IMSG_VMM_CONT);
}

/* ---- vm_snapshot_create */

struct snap_count {
	unsigned int	 n;
};

static int
snap_count_one(const char *tag, uint64_t size, int64_t created, void *arg)
{
	struct snap_count	*k = arg;

	k->n++;
	return 0;
}

/*
 * Room for one more snapshot of vm: its count under VMM_SNAP_PER_VM_MAX,
 * and up to the VM's memory of state more (what a save may write), as
 * vm_admit_state counts it.
 */
static int
snap_admit(struct tool_call *c)
{
	struct snap_count	 k = { 0 };
	char			 msg[VM_MSG_MAX];

	if (state_snapshot_each(c->vm->row.id, snap_count_one, &k) == -1) {
		call_reply(c->id, TOOL_ERROR, "state database error");
		return -1;
	}
	if (k.n >= VMM_SNAP_PER_VM_MAX) {
		(void)snprintf(msg, sizeof(msg), "%s has %u live snapshots, "
		    "the most a VM keeps: vm_snapshot_delete one first",
		    c->vm->row.id, k.n);
		call_reply(c->id, TOOL_ERROR, msg);
		return -1;
	}
	if (vm_admit_state(c->vm, "a snapshot", msg, sizeof(msg)) == -1) {
		call_reply(c->id, TOOL_ERROR, msg);
		return -1;
	}
	return 0;
}

/* The snapshot is whole: recorded, and answered. */
static void
create_record(struct req *r, struct imsg *imsg)
{
	int64_t		 now = (int64_t)time(NULL);

	if (state_snapshot_insert(r->vm->row.id, r->tag, r->snap_size,
	    now) == -1) {
		call_req_fail(r, "state database error: the snapshot was "
		    "taken but not recorded");
		return;
	}
	log_info("%s: snapshot %s taken, %llu bytes of state", r->vm->row.id,
	    r->tag, (unsigned long long)r->snap_size);
	call_reply_json(r->call, snap_json(r->tag, r->snap_size, now));
}

/* A raw disk's clone failed: its RAM half goes too, then the answer. */
static void
create_undone(struct req *r, struct imsg *imsg)
{
	char	 msg[VM_MSG_MAX];

	(void)snprintf(msg, sizeof(msg), "the snapshot's disk could not be "
	    "kept (%s): nothing was kept, and the VM runs on as it was",
	    json_string_value(r->acc));
	call_req_fail(r, msg);
}

static void
create_unsaved(struct req *r, struct imsg *imsg)
{
	struct msg_vmm_snapshot	 m = { VMM_SNAP_DELETE, r->tag, 0 };

	r->wait_ms = VMM_SNAP_TIMEOUT_MS;
	req_next_to(r, RP_MONITOR, IMSG_VMM_SNAPSHOT, create_undone);
	r->cancel = call_req_cancel;
	msg_vmm_snapshot_put(r->msg, &m);
	(void)req_send(r);
}

static void
create_cloned(struct req *r, struct imsg *imsg)
{
	snap_cont(r, snap_disk_result(r, imsg) == 0 ? create_record :
	    create_unsaved);
}

static void
create_done(struct req *r, struct imsg *imsg)
{
	struct msg_vmm_snapshot_done	 m;

	if (msg_vmm_snapshot_done_get(imsg, &m) == -1) {
		call_req_fail(r, "malformed answer from the VM monitor");
		if (snap_raw(r->vm))
			snap_resume(r->vm);
		return;
	}
	r->snap_size = m.vm_size;
	if (snap_raw(r->vm))
		snap_disk(r, SVS_SAVE, create_cloned);
	else
		create_record(r, imsg);
}

/* A held save that failed: the VM runs on as it was. */
static void
create_cancel(struct req *r, enum req_end end, const char *why)
{
	call_req_cancel(r, end, why);
	if (end != REQ_VM_GONE && snap_raw(r->vm))
		snap_resume(r->vm);
}

static void
tool_vm_snapshot_create(struct tool_call *c)
{
	const char	*tag = TOOL_STR(c->args, VM_SNAPSHOT_CREATE, TAG);
	uint64_t	 size;
	int64_t		 created;
	struct req	*r;
	char		 msg[VM_MSG_MAX];
	int		 rc;

	if (snap_check(c, tag) == -1)
		return;
	if ((rc = state_snapshot_find(c->vm->row.id, tag, &size,
	    &created)) != 0) {
		if (rc == -1)
			call_reply(c->id, TOOL_ERROR, "state database error");
		else {
			(void)snprintf(msg, sizeof(msg), "%s has a snapshot "
			    "%s already: choose another tag, or "
			    "vm_snapshot_delete it first", c->vm->row.id, tag);
			call_reply(c->id, TOOL_ERROR, msg);
		}
		return;
	}
	if (snap_admit(c) == -1)
		return;
	r = snap_req(c, VMM_SNAP_SAVE, tag, create_done);
	r->cancel = create_cancel;
	(void)req_send(r);
}

/* ---- vm_snapshot_restore */

static void
restore_reply(struct req *r)
{
	uint64_t	 size = 0;
	int64_t		 created = r->since;

	(void)state_snapshot_find(r->vm->row.id, r->tag, &size, &created);
	call_reply_json(r->call, snap_json(r->tag, size, created));
}

static void
restore_time_set(struct req *r, struct imsg *imsg)
{
	restore_reply(r);
}

/* The guest runs its snapshot's clock: set it to now. */
static void
restore_done(struct req *r, struct imsg *imsg)
{
	struct vm		*vm = r->vm;

	log_info("%s: restored to snapshot %s", vm->row.id, r->tag);
	if (state_jobs_forget_since(vm->row.id, r->since) == -1)
		log_warnx("%s: the jobs after snapshot %s stay listed",
		    vm->row.id, r->tag);
	if (vm->state != VS_RUNNING || !vm->boot.agent) {
		restore_reply(r);
		return;
	}
	r->cancel = call_req_cancel;
	r->wait_ms = 0;
	req_next_set_time(r, restore_time_set);
	(void)req_send(r);
}

static void
restore_status(struct req *r, struct imsg *imsg)
{
	struct msg_vmm_qmp_state	 m;

	if (msg_vmm_qmp_state_get(imsg, &m) == -1 || m.running ||
	    r->vm->state != VS_RUNNING)
		return;
	log_warnx("%s: a failed snapshot load left the VM paused",
	    r->vm->row.id);
	vm_fsm(r->vm, VE_PAUSED, NULL);
}

static void
restore_status_cancel(struct req *r, enum req_end end, const char *why)
{
}

/*
 * A restore that failed: QEMU 7.2 leaves the vCPUs stopped when a load
 * fails after it began; the VM's state follows what QEMU says.
 */
static void
restore_cancel(struct req *r, enum req_end end, const char *why)
{
	struct vm	*vm = r->vm;
	struct req	*s;

	call_req_fail(r, why != NULL ? why : "the restore failed");
	if (end == REQ_VM_GONE || vm->state != VS_RUNNING || !vm->vmm_live)
		return;
	s = req_new(RP_MONITOR, vm, IMSG_VMM_QMP_STATUS, restore_status,
	    restore_status_cancel);
	(void)req_send(s);
}

/*
 * A raw disk's snapshot disk could not be put back: the guest has the
 * snapshot's memory over the disk it had, and must not run so.
 */
static void
restore_cloned(struct req *r, struct imsg *imsg)
{
	struct vm	*vm = r->vm;
	char		 msg[VM_MSG_MAX];

	if (snap_disk_result(r, imsg) == 0) {
		snap_cont(r, restore_done);
		return;
	}
	(void)snprintf(msg, sizeof(msg), "%s has snapshot %s's memory but "
	    "its disk could not be put back (%s): the VM is paused and must "
	    "not run so; vm_snapshot_restore again, or vm_destroy it",
	    vm->row.id, r->tag, json_string_value(r->acc));
	call_req_fail(r, msg);
	if (vm->state == VS_RUNNING)
		vm_fsm(vm, VE_PAUSED, NULL);
}

/* Loaded: a raw disk's own half next, else done. */
static void
restore_loaded(struct req *r, struct imsg *imsg)
{
	if (snap_raw(r->vm))
		snap_disk(r, SVS_RESTORE, restore_cloned);
	else
		restore_done(r, imsg);
}

static void
tool_vm_snapshot_restore(struct tool_call *c)
{
	const char	*tag = TOOL_STR(c->args, VM_SNAPSHOT_RESTORE, TAG);
	uint64_t	 size;
	int64_t		 created;
	struct req	*r;

	if (snap_check(c, tag) == -1 ||
	    snap_lookup(c, tag, &size, &created) == -1)
		return;
	r = snap_req(c, VMM_SNAP_LOAD, tag, restore_loaded);
	r->cancel = restore_cancel;
	r->since = created;
	(void)req_send(r);
}

/* ---- vm_snapshot_delete */

static void
delete_record(struct req *r)
{
	if (state_snapshot_delete(r->vm->row.id, r->tag) == -1) {
		call_req_fail(r, "state database error: the snapshot was "
		    "deleted from the disk but is still listed");
		return;
	}
	log_info("%s: snapshot %s deleted%s", r->vm->row.id, r->tag,
	    r->since == -1 ? " (it was on the disk alone)" : "");
	call_reply_json(r->call, json_pack("{s:s, s:b}", "tag", r->tag,
	    "deleted", 1));
}

/* A raw disk's snapshot: its disk clone went too, or could not. */
static void
delete_cloned(struct req *r, struct imsg *imsg)
{
	if (snap_disk_result(r, imsg) == -1)
		call_req_fail(r, json_string_value(r->acc));
	else
		delete_record(r);
}

static void
delete_done(struct req *r, struct imsg *imsg)
{
	struct msg_vmm_snapshot_done	 m;
	char				 msg[VM_MSG_MAX];

	if (msg_vmm_snapshot_done_get(imsg, &m) == -1) {
		call_req_fail(r, "malformed answer from the VM monitor");
		return;
	}
	if (r->since == -1 && !m.found) {
		(void)snprintf(msg, sizeof(msg), "%s has no snapshot %s: "
		    "nothing was done, and the VM runs on as it was; see "
		    "vm_snapshot_list", r->vm->row.id, r->tag);
		call_reply(r->call, TOOL_NOT_FOUND, msg);
		return;
	}
	if (snap_raw(r->vm))
		snap_disk(r, SVS_DELETE, delete_cloned);
	else
		delete_record(r);
}

/*
 * The disk is asked even for a tag state.db does not list: a save whose
 * answer was lost (its deadline passed) may have left one there.
 */
static void
tool_vm_snapshot_delete(struct tool_call *c)
{
	const char	*tag = TOOL_STR(c->args, VM_SNAPSHOT_DELETE, TAG);
	uint64_t	 size;
	int64_t		 created;
	struct req	*r;
	int		 rc;

	if (snap_check(c, tag) == -1)
		return;
	if ((rc = state_snapshot_find(c->vm->row.id, tag, &size,
	    &created)) == -1) {
		call_reply(c->id, TOOL_ERROR, "state database error");
		return;
	}
	r = snap_req(c, VMM_SNAP_DELETE, tag, delete_done);
	r->since = rc == 1 ? created : -1;
	(void)req_send(r);
}

/* ---- vm_snapshot_list */

static int
list_one(const char *tag, uint64_t size, int64_t created, void *arg)
{
	json_t	*a = arg, *o;

	if ((o = snap_json(tag, size, created)) == NULL ||
	    json_array_append_new(a, o) == -1)
		fatalx("%s: json", __func__);
	return 0;
}

static void
tool_vm_snapshot_list(struct tool_call *c)
{
	json_t	*a;

	if ((a = json_array()) == NULL)
		fatalx("%s: json_array", __func__);
	if (state_snapshot_each(c->vm->row.id, list_one, a) == -1) {
		json_decref(a);
		call_reply(c->id, TOOL_ERROR, "state database error");
		return;
	}
	call_reply_json(c->id, json_pack("{s:o}", "snapshots", a));
}

/* The tools of this file (see TOOL_IMPL in dispatch.h). */
TOOL_IMPL(TOOL_VM_SNAPSHOT_CREATE, tool_vm_snapshot_create, NULL, NULL,
    NULL, -1);
TOOL_IMPL(TOOL_VM_SNAPSHOT_RESTORE, tool_vm_snapshot_restore, NULL, NULL,
    NULL, -1);
TOOL_IMPL(TOOL_VM_SNAPSHOT_DELETE, tool_vm_snapshot_delete, NULL, NULL,
    NULL, -1);
TOOL_IMPL(TOOL_VM_SNAPSHOT_LIST, tool_vm_snapshot_list, NULL, NULL, NULL,
    -1);
