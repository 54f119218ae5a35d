/*
 * Idle suspension: a running VM that no call needed for its idle_seconds
 * (vm_create's; 0 turns it off) and that runs no managed job is
 * suspended as its idle_mode says, hibernated or paused.  A call that
 * needs the guest is activity (dispatch_run marks it, wake.c wakes a
 * suspended VM for it); vm_status, vm_list and vm_job_status are not.
 * Once a second, vm_idle_sweep asks the guest of each VM idle that long
 * how many jobs run: one or more keep it awake for another idle_seconds.
 */
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "msg_vmm.h"
#include "req.h"
#include "vm.h"

/* A call needed vm's guest: its idle time starts again. */
void
vm_idle_touch(struct vm *vm)
{
	vm->idle_since = vm_now();
}

static void
idle_paused(struct req *r, struct imsg *imsg)
{
	struct vm	*vm = r->vm;
	char		 why[64];

	if (vm->state != VS_RUNNING)
		return;
	(void)snprintf(why, sizeof(why), "paused after %u s idle",
	    vm->row.idle_seconds);
	vm_fsm(vm, VE_PAUSED, why);
}

static void
idle_cancel(struct req *r, enum req_end end, const char *why)
{
	r->vm->idle_asking = 0;
}

static void
idle_info(struct req *r, struct imsg *imsg)
{
	struct vm				*vm = r->vm;
	struct msg_vmm_guest_info_result	 m;
	char					 why[VM_MSG_MAX] = "";

	vm->idle_asking = 0;
	if (msg_vmm_guest_info_result_get(imsg, &m) == -1) {
		log_warnx("%s: malformed guest info", vm->row.id);
		return;
	}
	if (m.jobs_active > 0) {
		vm_idle_touch(vm);	/* its jobs keep it awake */
		return;
	}
	if (vm->state != VS_RUNNING || vm->op.pending || vm->waking ||
	    vm->forking ||
	    vm_now() - vm->idle_since < (time_t)vm->row.idle_seconds)
		return;
	log_info("%s: idle for %u s", vm->row.id, vm->row.idle_seconds);
	/* No room for its checkpoint: it keeps its memory, paused. */
	if (vm->row.idle_mode == IDLE_HIBERNATE &&
	    vm_admit_state(vm, "a checkpoint", why, sizeof(why)) == -1)
		log_warnx("%s: pauses instead: %s", vm->row.id, why);
	if (vm->row.idle_mode == IDLE_PAUSE || why[0] != '\0') {
		req_next(r, IMSG_VMM_PAUSE, idle_paused);
		(void)req_send(r);
		return;
	}
	(void)snprintf(why, sizeof(why), "hibernated after %u s idle",
	    vm->row.idle_seconds);
	vm_hibernate(0, vm, why);
}

/* Once a second: the VMs idle for their idle_seconds are asked. */
void
vm_idle_sweep(void)
{
	struct vm	*vm;
	struct req	*r;
	time_t		 now = vm_now();

	TAILQ_FOREACH(vm, &vms, entry) {
		if (vm->state != VS_RUNNING || vm_unowned(vm) ||
		    vm->row.idle_seconds == 0 || !vm->boot.agent ||
		    vm_own_disks(vm) || vm->op.pending || vm->waking ||
		    vm->idle_asking)
			continue;
		if (vm->idle_since == 0) {
			vm_idle_touch(vm);	/* it just started running */
			continue;
		}
		if (now - vm->idle_since < (time_t)vm->row.idle_seconds)
			continue;
		vm->idle_asking = 1;
		r = req_new(RP_MONITOR, vm, IMSG_VMM_GUEST_INFO, idle_info,
		    idle_cancel);
		(void)req_send(r);
	}
}
