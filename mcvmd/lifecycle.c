/*
 * A VM's lifecycle operations: start, stop, destroy and failure, and what
 * the operation under way owes its caller.  The state moves only through
 * vm_fsm() (fsm.c).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dispatch.h"
#include "log.h"
#include "msg.h"
#include "msg_vmm.h"
#include "req.h"
#include "vm.h"

time_t
vm_now(void)
{
	struct timespec	 ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) == -1)
		fatal("clock_gettime");
	return ts.tv_sec;
}

/* The VM's one timer: its boot, its stop, or QEMU's SIGTERM grace. */
void
vm_timer_start(struct vm *vm, int seconds, void (*cb)(int, short, void *))
{
	struct timeval	 tv = { seconds, 0 };

	vm_timer_clear(vm);
	evtimer_set(&vm->timer, cb, vm);
	evtimer_add(&vm->timer, &tv);
}

void
vm_timer_clear(struct vm *vm)
{
	if (evtimer_initialized(&vm->timer) &&
	    evtimer_pending(&vm->timer, NULL))
		evtimer_del(&vm->timer);
}

/* An operation of the caller's (call 0: none) begins. */
void
vm_op_begin(struct vm *vm, uint64_t call, enum vm_opkind kind,
    const char *rid)
{
	vm->op.pending = 1;
	vm->op.peerid = call;
	vm->op.kind = kind;
	vm->op.disk_gone = 0;
	(void)snprintf(vm->op.rid, sizeof(vm->op.rid), "%s",
	    rid != NULL ? rid : "");
}

/* Tells a long operation's caller how far it got (MCP progress). */
void
vm_progress(const struct vm *vm, uint64_t done, uint64_t total,
    const char *what)
{
	if (vm->op.pending)
		call_progress(vm->op.peerid, done, total, what);
}

/*
 * Tells the caller of the pending lifecycle operation how it ended, and
 * settles its receipt.
 */
void
vm_op_done(struct vm *vm, int ok, const char *msg)
{
	char	*text;
	json_t	*j;

	if (vm->ctl.serial != 0)
		vm_attach_settle(vm, ok, msg);
	if (!vm->op.pending)
		return;
	vm->op.pending = 0;
	if (vm->fork) {		/* the fork answers for all its VMs */
		vm_fork_done(vm, ok, msg);
		return;
	}
	if (!ok) {
		receipt_fail(vm->row.ws_id, vm->op.rid, "", vm->op.peerid,
		    TOOL_ERROR, msg);
		return;
	}
	j = vm_json(vm);
	if (vm->os[0] != '\0')
		json_object_set_new(j, "guest", json_pack("{s:s, s:s, s:s, "
		    "s:s}", "agent", vm_agent_kind(vm), "os", vm->os,
		    "kernel", vm->kernel, "agent_version", vm->agent));
	if ((text = json_dumps(j, JSON_COMPACT)) == NULL)
		fatalx("%s: json_dumps", __func__);
	json_decref(j);
	receipt_done(vm->row.ws_id, vm->op.rid, vm->row.id, text);
	call_reply(vm->op.peerid, TOOL_OK, text);
	free(text);
}

/* The guest is up (and has its network): booting is over. */
void
vm_guest_ready(struct vm *vm)
{
	if (vm->boot.resume) {
		vm_hibernate_resumed(vm);	/* then here again */
		return;
	}
	vm_timer_clear(vm);
	vm_fsm(vm, VE_AGENT_READY, NULL);
	if (vm->warm) {
		vm_warm_ready(vm);
		return;
	}
	vm_op_done(vm, 1, NULL);
	vm_wake_settle(vm, 1);
}

/* ---- the guest's own end, on its own disks ------------------------------- */

static void	 vm_term_timeout(int, short, void *);

/* QEMU ends: SIGTERM, and SIGKILL to what is left after the grace. */
void
vm_qemu_term(struct vm *vm)
{
	if (vm->qemu_pid > 0)
		(void)kill(vm->qemu_pid, SIGTERM);
	vm_timer_start(vm, VM_TERM_GRACE, vm_term_timeout);
	if (vm->qemu_pid <= 0 && vm->vmm_pid <= 0)
		vm_processes_gone(vm);
}

/* The boot's console is kept; QEMU, paused, ends now. */
static void
install_end_qemu(struct vm *vm)
{
	vm->boot.guest_ended = 1;
	vm_qemu_term(vm);
}

/* Keeps the console the monitor sent, for vm_serial_read. */
static void
console_keep(struct req *r, struct imsg *imsg)
{
	struct msg_vmm_serial_data	 m;

	if (msg_vmm_serial_data_get(imsg, &m) == -1)
		log_warnx("%s: malformed serial data from the monitor",
		    r->vm->row.id);
	else
		vm_console_keep(r->vm, &m);
}

static void
install_console_done(struct req *r, struct imsg *imsg)
{
	console_keep(r, imsg);
	install_end_qemu(r->vm);
}

static void
install_console_cancel(struct req *r, enum req_end end, const char *why)
{
	if (end != REQ_VM_GONE)
		install_end_qemu(r->vm);
}

/*
 * The guest of a VM from its own disks reset or powered off, which
 * paused QEMU (-no-shutdown): its console is kept (nothing may have
 * asked for it before), then QEMU ends.  The VM is stopped, or after
 * its install CD's boot starts again from its disks alone
 * (vm_processes_gone).  A guest that vm_stop had its qemu-guest-agent
 * power off has its console kept already: QEMU ends.
 */
void
vm_guest_end(struct vm *vm)
{
	struct req	*r;

	if (vm_own_disks(vm) && vm->state == VS_STOPPING) {
		log_info("%s: the guest powered off: ending QEMU", vm->row.id);
		vm_qemu_term(vm);
		return;
	}
	if (!vm_own_disks(vm) || vm->state != VS_RUNNING ||
	    vm->boot.guest_ended)
		return;
	log_info("%s: the guest %s", vm->row.id,
	    vm->row.install == VM_INSTALL_PENDING ?
	    "of the install CD's boot ended" : "powered off or reset");
	r = req_new(RP_MONITOR, vm, IMSG_VMM_SERIAL_READ,
	    install_console_done, install_console_cancel);
	(void)req_send(r);
}

/*
 * The VM failed: its processes are killed, the state says why, and the
 * pending operation fails.  A VM that failed while being created is
 * removed again, so that nothing of it stays behind.
 */
void
vm_fail(struct vm *vm, const char *why)
{
	int	 creating = vm->op.pending && vm->op.kind == VO_CREATE;
	char	 msg[400], resume[340];

	vm_timer_clear(vm);
	vm_kill(vm);
	if (vm->state == VS_DESTROYING)
		return;
	if (vm->boot.resume && (vm->state == VS_CREATING ||
	    vm->state == VS_BOOTING)) {
		(void)snprintf(resume, sizeof(resume), "resuming from its "
		    "checkpoint failed: %.300s", why);
		vm->boot.resume = 0;
		why = resume;
	}
	if (vm->boot.restore && vm->state == VS_BOOTING && !vm->tpl) {
		/* QEMU ran from the checkpoint, and the guest never
		 * answered. */
		(void)snprintf(msg, sizeof(msg), "%s, restored from it, "
		    "failed: %s", vm->row.id, why);
		if (vm->wtpl_using)
			vm_template_retire_shared(vm, msg);
		else
			vm_template_retire(vm, msg);
	}
	if (vm->tpl)
		vm_template_failed(vm, why);
	else if (vm->warm)
		vm_warm_failed(vm, why);
	if (vm_unowned(vm)) {
		vm_destroy(0, vm);
		return;
	}
	vm_fsm(vm, VE_FAIL, why);
	if (creating) {
		vm_qemu_log_note(vm);
		(void)snprintf(msg, sizeof(msg), "the VM could not be "
		    "%s: %s. Nothing was kept.", vm_attached(vm) ? "attached" :
		    "created", why);
		vm_op_done(vm, 0, msg);
		vm_destroy(0, vm);
		return;
	}
	vm_op_done(vm, 0, why);
	if (vm->qemu_pid <= 0 && vm->vmm_pid <= 0)
		vm_processes_gone(vm);
}

/* ---- stop, start, destroy ----------------------------------------------- */

static void
vm_stop_timeout(int fd, short event, void *arg)
{
	struct vm	*vm = arg;

	if (vm->state != VS_STOPPING)
		return;
	vm_fsm(vm, VE_STOP_TIMEOUT, NULL);
	vm_op_done(vm, 0, "the guest did not shut down in time; it keeps "
	    "running: retry vm_stop with force=true to power it off at once");
}

static void
vm_term_timeout(int fd, short event, void *arg)
{
	struct vm	*vm = arg;

	if (vm->qemu_pid > 0 || vm->vmm_pid > 0) {
		log_warnx("%s: QEMU did not exit on SIGTERM; killing it",
		    vm->row.id);
		vm_kill(vm);
	}
}

/* The guest's power-off request: its answer says nothing more. */
static void
vm_poweroff_done(struct req *r, struct imsg *imsg)
{
}

static void
vm_poweroff(struct vm *vm)
{
	struct req	*r;

	if (vm->state != VS_STOPPING)
		return;		/* forced, destroyed or timed out meanwhile */
	r = req_new(RP_MONITOR, vm, IMSG_VMM_GUEST_POWEROFF,
	    vm_poweroff_done, NULL);
	(void)req_send(r);
}

void
vm_console_keep(struct vm *vm, const struct msg_vmm_serial_data *m)
{
	vm_console_forget(vm);
	if ((vm->console = malloc(sizeof(*vm->console) + m->len)) == NULL)
		fatal("%s", __func__);
	vm->console->m = *m;
	memcpy(vm->console->data, m->data, m->len);
	vm->console->m.data = vm->console->data;
}

void
vm_console_forget(struct vm *vm)
{
	free(vm->console);
	vm->console = NULL;
}

/*
 * Before the guest powers off, the end of its serial console, which goes
 * with the monitor, is kept for vm_serial_read until the VM starts again
 * (what the shutdown itself prints is not).  Whatever the answer, the
 * stop goes on.
 */
static void
vm_stop_console_done(struct req *r, struct imsg *imsg)
{
	console_keep(r, imsg);
	vm_poweroff(r->vm);
}

static void
vm_stop_console_cancel(struct req *r, enum req_end end, const char *why)
{
	if (end != REQ_VM_GONE)
		vm_poweroff(r->vm);
}

/* Asks the guest's agent to power off, or stops QEMU. */
void
vm_stop(uint64_t call, struct vm *vm, int force, uint32_t timeout)
{
	struct req	*r;

	vm_op_begin(vm, call, VO_STOP, NULL);
	vm_fsm(vm, VE_STOP, NULL);
	/*
	 * Forced, or without the agent (the guest has no ACPI, see
	 * AGENT_KERNEL_APPEND): SIGTERM to QEMU, and SIGKILL to what is
	 * left in the cgroup after VM_TERM_GRACE.
	 */
	if (force || !vm->vmm_live || !vm->boot.agent) {
		vm_qemu_term(vm);
		return;
	}
	vm_timer_start(vm, (int)timeout, vm_stop_timeout);
	r = req_new(RP_MONITOR, vm, IMSG_VMM_SERIAL_READ,
	    vm_stop_console_done, vm_stop_console_cancel);
	(void)req_send(r);
}

/*
 * A stop asked for by vm_stop or by the operator: 1 if the VM is
 * stopped already (a hibernated one now is, its checkpoint discarded),
 * 0 if its stop began, -1 if its state refuses one.
 */
int
vm_stop_request(uint64_t call, struct vm *vm, int force, uint32_t timeout)
{
	if (vm->state == VS_STOPPED || vm->state == VS_FAILED)
		return 1;
	/* Its memory goes: it will boot again. */
	if (vm->state == VS_HIBERNATED && !vm->op.pending) {
		vm->row.checkpoint_bytes = 0;
		vm->row.checkpoint_profile[0] = '\0';
		(void)state_vm_checkpoint(vm->row.id, 0, "");
		vm_fsm(vm, VE_STOP, "stopped while hibernated: its checkpoint "
		    "was discarded");
		return 1;
	}
	if (vm->op.pending || (vm->state != VS_RUNNING &&
	    vm->state != VS_PAUSED && vm->state != VS_BOOTING))
		return -1;
	vm_stop(call, vm, force || vm->state == VS_PAUSED, timeout);
	return 0;
}

void
vm_start(uint64_t call, struct vm *vm)
{
	vm_op_begin(vm, call, VO_START, NULL);
	vm_fsm(vm, VE_START, NULL);
	vm_console_forget(vm);
	if (!vm_store_is_up()) {
		vm_fail(vm, "the storage daemon is not up");
		return;
	}
	vm_store_disk(vm, IMSG_STORE_DISK_OPEN);
}

/*
 * Removes every trace: processes, cgroups, the jail directory, the disk
 * (through stored) and the rows, except the audit log.  call 0: no one
 * waits for the answer.
 */
void
vm_destroy(uint64_t call, struct vm *vm)
{
	if (vm->op.pending && vm->op.peerid != call)
		vm_op_done(vm, 0, "the VM was destroyed");
	vm_op_begin(vm, call, VO_DESTROY, NULL);
	vm->op.pending = call != 0;
	vm_fsm(vm, VE_DESTROY, NULL);
	vm_kill(vm);
	if (vm->qemu_pid <= 0 && vm->vmm_pid <= 0)
		vm_processes_gone(vm);
}

/*
 * The last step of a destroy, once the disk is deleted and netd has torn
 * the network down: the rows go (the audit log stays), and the caller is
 * told.
 */
void
vm_destroy_finish(struct vm *vm)
{
	json_t	*j;
	char	 detail[ID_MAX + 64];

	if (!vm->op.disk_gone || req_pending(vm, RP_NETD) != NULL)
		return;
	if (!vm_unowned(vm)) {	/* no row: a template, a warm clone */
		if (state_vm_delete(vm->row.id) == -1)
			log_warnx("%s: rows not deleted", vm->row.id);
		state_vm_destroyed_detail(vm->row.id, vm->row.ws_id, detail,
		    sizeof(detail));
		(void)state_audit("mcvmd", vm_attached(vm) ? "vm-forget" :
		    "vm-destroy", detail);
	}
	log_info("%s: %s", vm->row.id, vm_attached(vm) ? "forgotten" :
	    "destroyed");
	if (vm->op.pending) {
		j = json_pack("{s:s, s:b}", "vm_id", vm->row.id, "destroyed",
		    1);
		vm->op.pending = 0;
		call_reply_json(vm->op.peerid, j);
	}
	vm_free(vm);
}
