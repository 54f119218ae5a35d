/*
 * Hibernation: a VM's memory and devices go to a checkpoint file of its
 * own, and its processes and network go, so that it is only files until
 * it resumes.  The steps, each a request to the VM's monitor or stored:
 *
 *	vm_hibernate	running, its jobs frozen (tool-vm.c): VE_HIBERNATE
 *			PAUSE			-> hib_paused
 *			paused already: hib_checkpoint
 *	hib_checkpoint	stored: the checkpoint file, made empty
 *			(store.c, then the monitor's CHECKPOINT: QEMU
 *			migrates to it, the monitor fsyncs it)
 *	vm_hibernated	written: SIGTERM to QEMU; once both processes
 *			are gone (vm_processes_gone) and netd released the
 *			network, the state is hibernated.  Not written: the
 *			VM runs on as it was, its jobs thawed.
 *
 * vm_hibernate_resume starts the VM as vm_start does, but QEMU loads its
 * own checkpoint (-incoming) instead of booting, and its monitor starts
 * a new session with the guest agent, which sets the guest's clock;
 * then its jobs thaw.  A resume that fails marks the VM failed: the
 * checkpoint is never restored over a disk that ran since, as only the
 * hibernated state leads to it.
 */
#include <stdio.h>
#include <string.h>

#include "dispatch.h"
#include "log.h"
#include "msg_vmm.h"
#include "req.h"
#include "vm.h"

static void
hib_quiet(struct req *r, struct imsg *imsg)
{
}

static void
hib_quiet_cancel(struct req *r, enum req_end end, const char *why)
{
}

/* A request of the monitor's whose answer only logs. */
static void
hib_send(struct vm *vm, uint32_t type)
{
	struct req	*r;

	r = req_new(RP_MONITOR, vm, type, hib_quiet, hib_quiet_cancel);
	(void)req_send(r);
}

/* The vCPUs are stopped: the checkpoint next. */
static void
hib_checkpoint(struct vm *vm)
{
	vm_progress(vm, 1, 3, "writing the checkpoint");
	vm_store_checkpoint(vm, vm->row.id, 1);
}

static void
hib_paused(struct req *r, struct imsg *imsg)
{
	if (r->vm->state == VS_HIBERNATING)
		hib_checkpoint(r->vm);
}

static void
hib_pause_cancel(struct req *r, enum req_end end, const char *why)
{
	if (end != REQ_VM_GONE && r->vm->state == VS_HIBERNATING)
		vm_hibernated(r->vm, 0, 0, why != NULL ? why :
		    "the VM could not be paused");
}

/*
 * Hibernates vm, running or paused, whose jobs are frozen or none: why
 * says for vm_status who asked (the agent, idleness, mcvmd's stop).
 */
void
vm_hibernate(uint64_t call, struct vm *vm, const char *why)
{
	struct req	*r;
	int		 paused = vm->state == VS_PAUSED;

	vm_op_begin(vm, call, VO_HIBERNATE, NULL);
	vm->hib_paused = paused;
	vm_fsm(vm, VE_HIBERNATE, why);
	if (paused) {
		hib_checkpoint(vm);
		return;
	}
	r = req_new(RP_MONITOR, vm, IMSG_VMM_PAUSE, hib_paused,
	    hib_pause_cancel);
	(void)req_send(r);
}

/*
 * The monitor wrote the checkpoint (mib of it, fsynced) or could not
 * (why).  Written: QEMU ends, and vm_processes_gone finishes.  Not: the
 * VM goes back to what it was.
 */
void
vm_hibernated(struct vm *vm, int ok, uint32_t mib, const char *why)
{
	char	 msg[VM_MSG_MAX];

	if (vm->state != VS_HIBERNATING) {
		log_warnx("%s: checkpoint answered while %s", vm->row.id,
		    vm_state_name(vm->state));
		return;
	}
	if (ok) {
		vm->boot.checkpointed = 1;
		vm->row.checkpoint_bytes = (uint64_t)mib << 20;
		if (state_vm_checkpoint(vm->row.id,
		    vm->row.checkpoint_bytes) == -1)
			log_warnx("%s: checkpoint size not recorded",
			    vm->row.id);
		log_info("%s: checkpoint written (%u MiB)", vm->row.id, mib);
		vm_progress(vm, 2, 3, "stopping QEMU");
		vm_qemu_term(vm);
		return;
	}
	(void)snprintf(msg, sizeof(msg), "the checkpoint could not be "
	    "written (%s): nothing was hibernated, and the VM is %s as it "
	    "was", why, vm->hib_paused ? "paused" : "running");
	log_warnx("%s: %s", vm->row.id, msg);
	if (vm->hib_paused)
		vm_fsm(vm, VE_PAUSED, NULL);
	else {
		hib_send(vm, IMSG_VMM_CONT);
		if (vm->boot.agent)
			hib_send(vm, IMSG_VMM_THAW);
		vm_fsm(vm, VE_RESUMED, NULL);
	}
	vm_op_done(vm, 0, msg);
}

/* Resumes a hibernated VM from its checkpoint, as vm_start starts one. */
void
vm_hibernate_resume(uint64_t call, struct vm *vm)
{
	vm->boot.resume = 1;
	vm_start(call, vm);
}

static void
resume_thawed(struct req *r, struct imsg *imsg)
{
	struct vm	*vm = r->vm;

	if (vm->state != VS_BOOTING)
		return;
	vm->row.checkpoint_bytes = 0;
	if (state_vm_checkpoint(vm->row.id, 0) == -1)
		log_warnx("%s: checkpoint not recorded as used", vm->row.id);
	vm_guest_ready(vm);
}

static void
resume_thaw_cancel(struct req *r, enum req_end end, const char *why)
{
	if (end != REQ_VM_GONE && r->vm->state == VS_BOOTING)
		vm_fail(r->vm, why != NULL ? why : "its jobs did not thaw");
}

/*
 * The guest of a resumed VM is back (and has its clock): its jobs, which
 * hibernation froze, thaw before the VM counts as running.
 */
void
vm_hibernate_resumed(struct vm *vm)
{
	struct req	*r;

	vm->boot.resume = 0;
	r = req_new(RP_MONITOR, vm, IMSG_VMM_THAW, resume_thawed,
	    resume_thaw_cancel);
	(void)req_send(r);
}
