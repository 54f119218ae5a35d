/*
 * vm_fork: new VMs from a running VM's state at one instant.
 *
 * The source's vCPUs stop only while its state is saved, into a fork
 * directory of the fork's own (F: a VM id that state.db does not hold,
 * stored's, like a template's):
 *
 *	tool_vm_fork	the new VMs' rows, admitted as vm_create's are (all
 *			or none), each creating and waiting for F;
 *			monitor: PAUSE
 *	fork_paused	stored: DISK_COPY, the source's disk into F (a
 *			reflink clone, or the overlay's bytes)
 *	fork_copied	stored: F's checkpoint file, to write
 *	fork_opened	monitor: CHECKPOINT, the RAM and devices into it
 *	fork_saved	monitor: CONT, and the source runs on
 *
 * Then F becomes a shared template (template.c, vm_template_fork): a
 * QEMU of its own loads the checkpoint into F's RAM file and checkpoints
 * the device state alone, so that the new VMs map that file copy-on-write
 * and the pages none of them writes are in the page cache once.  Then
 * each new VM, as a VM of its own: stored copies F's disk into its
 * directory (clone_copied), and it starts as a hibernated VM resumes
 * (hibernate.c), from F's checkpoint and RAM file; its monitor's new
 * session gives the guest its host name, machine id, clock and fresh
 * randomness.  F goes with the last of them to stop.  A fork of one VM,
 * or one whose shared template cannot be made (templates stream, or no
 * room), loads F's checkpoint whole, and F goes once each has it open.  The jobs of
 * the source's boot are its new VMs' too, under the same ids: the
 * processes behind them run on there.
 *
 * A fork is all or nothing: if a new VM fails, all of them are destroyed
 * and the call fails with that reason; its receipt keeps the outcome.  A
 * source whose save fails after its PAUSE runs on (CONT).  While its
 * state is being saved, the tools that would change the source wait
 * their turn (vm_busy_text).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dispatch.h"
#include "log.h"
#include "msg_store.h"
#include "msg_vmm.h"
#include "req.h"
#include "validate.h"
#include "vm.h"

#define FORKS_MAX	16	/* forks under way at once */

static struct fork {
	int		 used;
	uint64_t	 call;
	int64_t		 ws;
	char		 rid[REQUEST_ID_MAX + 1];
	char		 src[ID_MAX + 1];
	char		 dir[ID_MAX + 1];	/* F; "" once deleted */
	int		 dir_made;		/* stored may hold it */
	int		 tpl;			/* F's shared template, 1-based */
	int		 saving;		/* the source's steps run */
	int		 failed;		/* and end it after */
	char		 vms[VM_FORK_MAX][ID_MAX + 1];
	unsigned int	 n;
	unsigned int	 ready;			/* new VMs running */
	unsigned int	 readers;		/* yet to open F's checkpoint */
	struct timespec	 paused;		/* PAUSE asked */
	int64_t		 paused_ms;
} forks[FORKS_MAX];

static int64_t
ms_since(const struct timespec *t)
{
	struct timespec	 now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)(now.tv_sec - t->tv_sec) * 1000 +
	    (now.tv_nsec - t->tv_nsec) / 1000000;
}

static struct fork *
fork_of(const struct vm *vm)
{
	return vm->fork > 0 && vm->fork <= FORKS_MAX &&
	    forks[vm->fork - 1].used ? &forks[vm->fork - 1] : NULL;
}

static void
fork_dir_delete(struct fork *f)
{
	if (f->dir_made && f->dir[0] != '\0')
		vm_store_delete_unowned(f->dir);
	f->dir[0] = '\0';
}

/*
 * The fork failed (why): its new VMs are destroyed, F deleted, and the
 * caller told.  The entry is free after, or once the source's steps end.
 */
static void
fork_fail(struct fork *f, const char *why)
{
	struct vm	*vm;
	char		 msg[VM_MSG_MAX];
	unsigned int	 i;
	int		 idx = (int)(f - forks) + 1;

	if (f->failed)
		return;
	if (f->tpl) {
		i = (unsigned int)f->tpl;
		f->tpl = 0;
		vm_template_fork_end((int)i);
	}
	(void)snprintf(msg, sizeof(msg), "vm_fork of %s failed: %s. No new VM "
	    "was kept, and the source runs on as it was.", f->src, why);
	log_warnx("%s", msg);
	for (i = 0; i < f->n; i++) {
		if ((vm = vm_find(f->vms[i], f->ws)) == NULL || vm->fork != idx)
			continue;
		vm->fork = 0;
		vm_destroy(0, vm);
	}
	receipt_fail(f->ws, f->rid, f->src, f->call, TOOL_ERROR, msg);
	f->failed = 1;
	if (f->saving)
		return;
	fork_dir_delete(f);
	memset(f, 0, sizeof(*f));
}

/* Every new VM runs: the answer. */
static void
fork_reply(struct fork *f)
{
	struct vm	*vm;
	json_t		*j, *a;
	char		*text;
	unsigned int	 i;

	if ((a = json_array()) == NULL)
		fatalx("%s: json", __func__);
	for (i = 0; i < f->n; i++)
		if ((vm = vm_find(f->vms[i], f->ws)) != NULL) {
			vm->fork = 0;
			json_array_append_new(a, vm_json(vm));
		}
	if ((j = json_pack("{s:s, s:I, s:o}", "source_vm_id", f->src,
	    "paused_ms", (json_int_t)f->paused_ms, "vms", a)) == NULL ||
	    (text = json_dumps(j, JSON_COMPACT)) == NULL)
		fatalx("%s: json", __func__);
	json_decref(j);
	log_info("%s: forked into %u VMs, paused %lld ms", f->src, f->n,
	    (long long)f->paused_ms);
	vm_template_fork_end(f->tpl);
	fork_dir_delete(f);
	receipt_done(f->ws, f->rid, f->src, text);
	call_reply(f->call, TOOL_OK, text);
	free(text);
	memset(f, 0, sizeof(*f));
}

/* ---- the new VMs -------------------------------------------------------- */

static void
clone_start(struct fork *f, struct vm *vm)
{
	vm->wtpl = f->tpl;	/* its RAM file, if F has one */
	vm_progress(vm, 1, 3, "copying the disk");
	vm_store_disk_copy(vm, f->dir);
}

/* The new VMs start once their fork's own shared template is ready. */
static void
fork_start(struct fork *f)
{
	struct vm	*vm;
	unsigned int	 i;
	int		 idx = (int)(f - forks) + 1;

	for (i = 0; i < f->n; i++)
		if ((vm = vm_find(f->vms[i], f->ws)) != NULL &&
		    vm->fork == idx)
			clone_start(f, vm);
}

/*
 * The directory vm resumes from: its shared template's (which it maps
 * until its QEMU ends), its fork's, or its own.
 */
const char *
vm_fork_dir(struct vm *vm)
{
	const struct fork	*f = fork_of(vm);

	if (vm->wtpl)
		return vm_template_source(vm);
	return f != NULL && f->dir[0] != '\0' ? f->dir : vm->row.id;
}

/* Fork directory dir's shared template is ready, or failed (why). */
void
vm_fork_template(const char *dir, const char *why)
{
	char	 msg[VM_MSG_MAX];
	size_t	 k;

	for (k = 0; k < FORKS_MAX; k++)
		if (forks[k].used && forks[k].tpl &&
		    strcmp(forks[k].dir, dir) == 0)
			break;
	if (k == FORKS_MAX)
		return;
	if (why != NULL) {
		forks[k].tpl = 0;	/* its destruction deleted F */
		(void)snprintf(msg, sizeof(msg), "its memory could not be "
		    "loaded: %s", why);
		fork_fail(&forks[k], msg);
		return;
	}
	fork_start(&forks[k]);
}

/* Whether directory id is a fork's, which no VM owns. */
int
vm_fork_owns(const char *id)
{
	size_t	 k;

	for (k = 0; k < FORKS_MAX; k++)
		if (forks[k].used && forks[k].dir_made &&
		    strcmp(forks[k].dir, id) == 0)
			return 1;
	return 0;
}

/* vm has F's checkpoint open, or will not: F goes after the last. */
void
vm_fork_read(struct vm *vm)
{
	struct fork	*f = fork_of(vm);

	if (f == NULL || !vm->fork_reading)
		return;
	vm->fork_reading = 0;
	if (--f->readers == 0)
		fork_dir_delete(f);
}

/* vm's creation ended (vm_op_done): running (ok), or not (why). */
void
vm_fork_done(struct vm *vm, int ok, const char *why)
{
	struct fork	*f = fork_of(vm);

	if (f == NULL)
		return;
	if (!ok) {
		vm->fork = 0;	/* its own failure destroys it */
		fork_fail(f, why);
		return;
	}
	if (++f->ready == f->n)
		fork_reply(f);
}

/* vm is freed: a fork still making it fails. */
void
vm_fork_gone(struct vm *vm)
{
	struct fork	*f = fork_of(vm);

	if (f == NULL)
		return;
	vm->fork = 0;
	fork_fail(f, "a new VM was destroyed while it was being made");
}

/* ---- the source --------------------------------------------------------- */

/*
 * The source's steps end, and it runs on.  Failed (why, or before):
 * the fork fails, and its entry is free.  0, or -1 if it failed.
 */
static int
fork_src_end(struct req *r, int gone, const char *why)
{
	struct fork	*f = r->ctx;

	f->saving = 0;
	r->vm->forking = 0;
	if (why == NULL && !f->failed)
		return 0;
	if (!gone && r->vm->vmm_live && r->vm->state == VS_RUNNING)
		req_send_quiet(r->vm, IMSG_VMM_CONT);
	fork_fail(f, why != NULL ? why : "");
	fork_dir_delete(f);
	memset(f, 0, sizeof(*f));
	return -1;
}

/* A step of the source's failed, or the fork did meanwhile: -1. */
static int
fork_src_failed(struct req *r, const char *why)
{
	struct fork	*f = r->ctx;

	return why != NULL || f->failed ? fork_src_end(r, 0, why) : 0;
}

static void
fork_src_cancel(struct req *r, enum req_end end, const char *why)
{
	(void)fork_src_end(r, end == REQ_VM_GONE, end == REQ_VM_GONE ?
	    "the source VM stopped meanwhile" : why != NULL ? why :
	    "the source's monitor or stored did not answer");
}

static void
fork_resumed(struct req *r, struct imsg *imsg)
{
	struct fork	*f = r->ctx;

	f->paused_ms = ms_since(&f->paused);
	if (fork_src_end(r, 0, NULL) == -1)
		return;
	log_info("%s: state saved for its fork (paused %lld ms)", f->src,
	    (long long)f->paused_ms);
	/*
	 * Two or more new VMs share F's memory: its shared template owns F
	 * from now on, and deletes it.  One shares it with none, and loads
	 * the checkpoint whole, which is quicker.
	 */
	if (f->n > 1 &&
	    (f->tpl = vm_template_fork(&r->vm->row, f->dir)) != 0) {
		f->dir_made = 0;
		return;
	}
	fork_start(f);
}

static void
fork_saved(struct req *r, struct imsg *imsg)
{
	struct msg_vmm_ok	 m;

	if (fork_src_failed(r, msg_vmm_ok_get(imsg, &m) == -1 ?
	    "malformed OK from the VM monitor" : NULL) == -1)
		return;
	req_next(r, IMSG_VMM_CONT, fork_resumed);
	(void)req_send(r);
}

static void
fork_opened(struct req *r, struct imsg *imsg)
{
	struct msg_vmm_checkpoint	 c = { 0 };
	struct msg_store_result		 m;
	int				 fd;

	vm_store_result(imsg, &m);
	fd = r->vm->store_fds[STORE_FD_CHECKPOINT];
	r->vm->store_fds[STORE_FD_CHECKPOINT] = -1;
	if (fork_src_failed(r, m.status != 0 ? m.text : fd == -1 ?
	    "no checkpoint descriptor" : NULL) == -1) {
		if (fd != -1)
			close(fd);
		return;
	}
	req_next_to(r, RP_MONITOR, IMSG_VMM_CHECKPOINT, fork_saved);
	msg_vmm_checkpoint_put(r->msg, &c);
	imsg_set_fd(r->msg, fd);
	(void)req_send(r);
}

static void
fork_copied(struct req *r, struct imsg *imsg)
{
	struct fork			*f = r->ctx;
	struct msg_store_checkpoint	 c = { f->dir, 1, NULL };
	struct msg_store_result		 m;

	vm_store_result(imsg, &m);
	if (fork_src_failed(r, m.status != 0 ? m.text : NULL) == -1)
		return;
	req_next_to(r, RP_STORED, IMSG_STORE_CHECKPOINT, fork_opened);
	msg_store_checkpoint_put(r->msg, &c);
	(void)req_send(r);
}

static void
fork_paused(struct req *r, struct imsg *imsg)
{
	struct fork			*f = r->ctx;
	struct msg_store_disk_copy	 m = { f->dir, f->src };

	if (fork_src_failed(r, NULL) == -1)
		return;
	f->dir_made = 1;
	req_next_to(r, RP_STORED, IMSG_STORE_DISK_COPY, fork_copied);
	msg_store_disk_copy_put(r->msg, &m);
	(void)req_send(r);
}

/* ---- the call ----------------------------------------------------------- */

/* Why src cannot be forked by c: NULL if it can. */
static const char *
fork_refusal(const struct tool_call *c, const struct vm *src)
{
	if (vm_own_disks(src))
		return "it boots its own disks, which vm_fork does not copy "
		    "yet: fork a VM of a catalogue image";
	/* Its new VMs' devices are its own: a NIC with its network alone. */
	if (src->row.network == 0 && vm_net_has_nic(src))
		return "its NIC carries port forwards alone, which its new VMs "
		    "would not have: fork a VM with network \"on\", or "
		    "without port_forwards";
	if (src->row.network != 0 && !(c->auth->flags & WS_ALLOW_NETWORK))
		return "it has a network, which this workspace may no longer "
		    "use";
	if (src->forking)
		return "another vm_fork of it is saving its state: retry in "
		    "a few seconds";
	if (!src->boot.agent)
		return "its guest agent is not answering yet: retry in a few "
		    "seconds";
	return NULL;
}

/*
 * Checks the names the new VMs are to have: 0, or -1 with err saying
 * which to change.
 */
static int
fork_names(const struct tool_call *c, unsigned int n, char *err, size_t len)
{
	const struct tool_value	*v = TOOL_ARG(c->args, VM_FORK, NAMES);
	struct vm		*vm;
	size_t			 i, j;

	if (v == NULL)
		return 0;
	if (v->nlist != n) {
		(void)snprintf(err, len, "names: %zu given for count %u: give "
		    "one name per new VM, or none", v->nlist, n);
		return -1;
	}
	for (i = 0; i < v->nlist; i++) {
		if (!valid_object_name(v->list[i]))
			fatalx("frontd: vm_fork name out of range");
		if (valid_id(v->list[i], VM_ID_PREFIX)) {
			(void)snprintf(err, len, "names: %s has the form of a "
			    "VM id (\"vm-\" and 16 hex digits): choose "
			    "another", v->list[i]);
			return -1;
		}
		if ((vm = vm_find_name(v->list[i], c->auth->id)) != NULL) {
			(void)snprintf(err, len, "names: the workspace already "
			    "has a VM named %s (%s): choose another name",
			    v->list[i], vm->row.id);
			return -1;
		}
		for (j = 0; j < i; j++)
			if (strcmp(v->list[i], v->list[j]) == 0) {
				(void)snprintf(err, len, "names: %s is given "
				    "twice: give each new VM its own",
				    v->list[i]);
				return -1;
			}
	}
	return 0;
}

/*
 * One new VM's row, admitted and inserted: its VM, creating, or NULL with
 * err saying why not.
 */
static struct vm *
clone_new(const struct tool_call *c, const struct vm *src, const char *name,
    char *err, size_t len)
{
	struct vm_row	 row;
	struct vm	*vm;

	if (vm_admit(c->auth->id, src->row.memory_mib, src->row.vcpus,
	    src->row.disk_bytes, err, len) == -1)
		return NULL;
	memset(&row, 0, sizeof(row));
	if (vm_slot_alloc(&row.slot) == -1) {
		(void)snprintf(err, len, "every VM slot on this host is "
		    "taken; try again later");
		return NULL;
	}
	row.ws_id = src->row.ws_id;
	(void)snprintf(row.ws, sizeof(row.ws), "%s", src->row.ws);
	vm_random_id("vm-", row.id, sizeof(row.id));
	row.uid = env->conf.vm_uid_first + row.slot;
	(void)snprintf(row.name, sizeof(row.name), "%s",
	    name != NULL ? name : row.id);
	(void)snprintf(row.image, sizeof(row.image), "%s", src->row.image);
	row.memory_mib = src->row.memory_mib;
	row.vcpus = src->row.vcpus;
	row.display = src->row.display;
	row.network = src->row.network;
	row.idle_seconds = src->row.idle_seconds;
	row.idle_mode = src->row.idle_mode;
	row.disk_bytes = src->row.disk_bytes;
	(void)snprintf(row.state, sizeof(row.state), "%s",
	    vm_state_name(VS_CREATING));
	(void)snprintf(row.intent, sizeof(row.intent), "%s",
	    vm_op_name(VO_CREATE));
	row.created = (int64_t)time(NULL);
	if (state_vm_insert(&row) == -1 ||
	    state_jobs_copy(src->row.id, row.id) == -1) {
		(void)state_vm_delete(row.id);
		(void)snprintf(err, len, "state database error");
		return NULL;
	}
	vm = vm_new(&row);
	vm->boot.resume = 1;
	vm->fork_reading = 1;
	vm_op_begin(vm, 0, VO_CREATE, NULL);
	return vm;
}

static void
tool_vm_fork(struct tool_call *c)
{
	const struct tool_value	*names = TOOL_ARG(c->args, VM_FORK, NAMES);
	struct vm		*src = c->vm, *vm;
	struct fork		*f = NULL;
	struct req		*r;
	const char		*why;
	char			 err[VM_MSG_MAX], audit[320];
	unsigned int		 n, i;
	size_t			 k;

	n = (unsigned int)TOOL_INT(c->args, VM_FORK, COUNT, 1);
	if (n < 1 || n > VM_FORK_MAX)
		fatalx("frontd: vm_fork count %u out of range", n);
	if ((why = fork_refusal(c, src)) != NULL) {
		(void)snprintf(err, sizeof(err), "%s cannot be forked: %s. "
		    "Nothing was done.", src->row.id, why);
		receipt_fail(c->auth->id, c->rid, src->row.id, c->id,
		    TOOL_ERROR, err);
		return;
	}
	if (fork_names(c, n, err, sizeof(err)) == -1) {
		receipt_fail(c->auth->id, c->rid, src->row.id, c->id,
		    TOOL_ERROR, err);
		return;
	}
	for (k = 0; k < FORKS_MAX && f == NULL; k++)
		if (!forks[k].used)
			f = &forks[k];
	if (f == NULL) {
		receipt_fail(c->auth->id, c->rid, src->row.id, c->id,
		    TOOL_UNAVAILABLE, "this host is making as many forks as "
		    "it makes at once: retry in a few seconds");
		return;
	}
	memset(f, 0, sizeof(*f));
	f->used = 1;
	f->call = c->id;
	f->ws = c->auth->id;
	(void)snprintf(f->rid, sizeof(f->rid), "%s", c->rid);
	(void)snprintf(f->src, sizeof(f->src), "%s", src->row.id);
	vm_random_id("vm-", f->dir, sizeof(f->dir));
	for (i = 0; i < n; i++) {
		if ((vm = clone_new(c, src, names != NULL ? names->list[i] :
		    NULL, err, sizeof(err))) == NULL) {
			fork_fail(f, err);
			return;
		}
		vm->fork = (int)(f - forks) + 1;
		(void)snprintf(f->vms[f->n++], sizeof(f->vms[0]), "%s",
		    vm->row.id);
		f->readers++;
	}
	(void)snprintf(audit, sizeof(audit), "workspace %s: vm %s into %u",
	    c->auth->name, src->row.id, n);
	(void)state_audit("mcvmd", "vm-fork", audit);
	src->forking = 1;
	f->saving = 1;
	clock_gettime(CLOCK_MONOTONIC, &f->paused);
	r = req_new(RP_MONITOR, src, IMSG_VMM_PAUSE, fork_paused,
	    fork_src_cancel);
	r->ctx = f;
	(void)req_send(r);
}

TOOL_IMPL(TOOL_VM_FORK, tool_vm_fork, NULL, NULL, "vm_list",
    P_VM_FORK_REQUEST_ID);
