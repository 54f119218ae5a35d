/*
 * The VM state machine's table (mcvmd/fsm.c): exactly the transitions
 * listed here are legal, each to the state listed; every other event in
 * every state is refused (vm_fsm() makes it fatal).  And the intent each
 * transition leaves.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "vm.h"

static const struct {
	enum vm_state	 from;
	enum vm_event	 ev;
	enum vm_state	 to;
} legal[] = {
	{ VS_CREATING, VE_DISK_READY, VS_CREATING },
	{ VS_CREATING, VE_NET_READY, VS_CREATING },
	{ VS_CREATING, VE_SPAWNED, VS_BOOTING },
	{ VS_CREATING, VE_FAIL, VS_FAILED },
	{ VS_CREATING, VE_SHUTDOWN, VS_STOPPED },
	{ VS_CREATING, VE_DESTROY, VS_DESTROYING },
	{ VS_BOOTING, VE_AGENT_READY, VS_RUNNING },
	{ VS_BOOTING, VE_STOP, VS_STOPPING },
	{ VS_BOOTING, VE_GUEST_POWEROFF, VS_STOPPED },
	{ VS_BOOTING, VE_FAIL, VS_FAILED },
	{ VS_BOOTING, VE_SHUTDOWN, VS_STOPPED },
	{ VS_BOOTING, VE_DESTROY, VS_DESTROYING },
	{ VS_RUNNING, VE_PAUSED, VS_PAUSED },
	{ VS_RUNNING, VE_STOP, VS_STOPPING },
	{ VS_RUNNING, VE_GUEST_POWEROFF, VS_STOPPED },
	{ VS_RUNNING, VE_FAIL, VS_FAILED },
	{ VS_RUNNING, VE_SHUTDOWN, VS_STOPPED },
	{ VS_RUNNING, VE_DESTROY, VS_DESTROYING },
	{ VS_RUNNING, VE_HIBERNATE, VS_HIBERNATING },
	{ VS_PAUSED, VE_RESUMED, VS_RUNNING },
	{ VS_PAUSED, VE_STOP, VS_STOPPING },
	{ VS_PAUSED, VE_GUEST_POWEROFF, VS_STOPPED },
	{ VS_PAUSED, VE_FAIL, VS_FAILED },
	{ VS_PAUSED, VE_SHUTDOWN, VS_STOPPED },
	{ VS_PAUSED, VE_DESTROY, VS_DESTROYING },
	{ VS_PAUSED, VE_HIBERNATE, VS_HIBERNATING },
	{ VS_STOPPING, VE_STOP_TIMEOUT, VS_RUNNING },
	{ VS_STOPPING, VE_PROCESSES_GONE, VS_STOPPED },
	{ VS_STOPPING, VE_FAIL, VS_FAILED },
	{ VS_STOPPING, VE_SHUTDOWN, VS_STOPPED },
	{ VS_STOPPING, VE_DESTROY, VS_DESTROYING },
	{ VS_STOPPED, VE_START, VS_CREATING },
	{ VS_STOPPED, VE_SHUTDOWN, VS_STOPPED },
	{ VS_STOPPED, VE_DESTROY, VS_DESTROYING },
	{ VS_FAILED, VE_START, VS_CREATING },
	{ VS_FAILED, VE_FAIL, VS_FAILED },
	{ VS_FAILED, VE_DESTROY, VS_DESTROYING },
	{ VS_DESTROYING, VE_DESTROY, VS_DESTROYING },
	{ VS_HIBERNATING, VE_PAUSED, VS_PAUSED },
	{ VS_HIBERNATING, VE_RESUMED, VS_RUNNING },
	{ VS_HIBERNATING, VE_PROCESSES_GONE, VS_HIBERNATED },
	{ VS_HIBERNATING, VE_FAIL, VS_FAILED },
	{ VS_HIBERNATING, VE_SHUTDOWN, VS_FAILED },
	{ VS_HIBERNATING, VE_DESTROY, VS_DESTROYING },
	{ VS_HIBERNATED, VE_START, VS_CREATING },
	{ VS_HIBERNATED, VE_STOP, VS_STOPPED },
	{ VS_HIBERNATED, VE_FAIL, VS_FAILED },
	{ VS_HIBERNATED, VE_SHUTDOWN, VS_HIBERNATED },
	{ VS_HIBERNATED, VE_DESTROY, VS_DESTROYING },
};
#define NLEGAL	(sizeof(legal) / sizeof(legal[0]))

Test(fsm, exactly_the_listed_transitions)
{
	enum vm_state	 s, to;
	enum vm_event	 e;
	size_t		 i, n = 0;
	int		 want;

	for (s = 0; s < VS_NSTATES; s++)
		for (e = 0; e < VE_NEVENTS; e++) {
			want = 0;
			for (i = 0; i < NLEGAL; i++)
				if (legal[i].from == s && legal[i].ev == e)
					want = 1;
			to = VS_NSTATES;
			cr_expect_eq(vm_fsm_next(s, e, &to), want,
			    "%s in %s: %s", vm_event_name(e),
			    vm_state_name(s), want ? "refused" :
			    "accepted");
			n += want;
			for (i = 0; i < NLEGAL; i++)
				if (legal[i].from == s && legal[i].ev == e)
					cr_expect_eq(to, legal[i].to,
					    "%s in %s goes to %s",
					    vm_event_name(e),
					    vm_state_name(s),
					    vm_state_name(to));
		}
	cr_expect_eq(n, NLEGAL, "a transition is listed twice");
	cr_expect_eq(vm_fsm_next(VS_NSTATES, VE_FAIL, &to), 0);
	cr_expect_eq(vm_fsm_next(VS_RUNNING, VE_NEVENTS, &to), 0);
}

Test(fsm, names)
{
	enum vm_state	 s;
	enum vm_event	 e;

	for (s = 0; s < VS_NSTATES; s++)
		cr_expect_eq(vm_state_parse(vm_state_name(s)), s);
	for (e = 0; e < VE_NEVENTS; e++)
		cr_expect(vm_event_name(e) != NULL &&
		    strcmp(vm_event_name(e), "unknown") != 0);
}

/* A template's VM: it has no rows, so nothing goes to state.db. */
static void
vm_at(struct vm *vm, enum vm_state s)
{
	memset(vm, 0, sizeof(*vm));
	vm->tpl = 1;
	(void)snprintf(vm->row.id, sizeof(vm->row.id), "vm-0000000000000001");
	vm->state = s;
}

Test(fsm, the_intent_is_the_operation_until_it_is_done)
{
	struct vm	 vm;

	vm_at(&vm, VS_STOPPED);
	vm_fsm(&vm, VE_START, NULL);
	cr_expect_eq(vm.state, VS_CREATING);
	cr_expect_str_eq(vm.row.intent, "start");
	vm_fsm(&vm, VE_DISK_READY, NULL);
	vm_fsm(&vm, VE_NET_READY, NULL);
	vm_fsm(&vm, VE_SPAWNED, NULL);
	cr_expect_eq(vm.state, VS_BOOTING);
	cr_expect_str_eq(vm.row.intent, "start");
	vm_fsm(&vm, VE_AGENT_READY, NULL);
	cr_expect_eq(vm.state, VS_RUNNING);
	cr_expect_str_eq(vm.row.intent, "");
	vm_intent(&vm, VO_PAUSE);
	cr_expect_str_eq(vm.row.intent, "pause");
	vm_fsm(&vm, VE_PAUSED, NULL);
	cr_expect_str_eq(vm.row.intent, "");
	vm_fsm(&vm, VE_STOP, NULL);
	cr_expect_str_eq(vm.row.intent, "stop");
	vm_fsm(&vm, VE_PROCESSES_GONE, NULL);
	cr_expect_eq(vm.state, VS_STOPPED);
	cr_expect_str_eq(vm.row.intent, "");
	vm_fsm(&vm, VE_DESTROY, NULL);
	cr_expect_str_eq(vm.row.intent, "destroy");
	vm_fsm(&vm, VE_DESTROY, NULL);
	cr_expect_str_eq(vm.row.intent, "destroy");

	vm_at(&vm, VS_RUNNING);
	vm_fsm(&vm, VE_FAIL, "it broke");
	cr_expect_eq(vm.state, VS_FAILED);
	cr_expect_str_eq(vm.row.reason, "it broke");
	cr_expect_str_eq(vm.row.state, "failed");
}

Test(fsm, an_illegal_transition_is_fatal, .exit_code = 1)
{
	struct vm	 vm;

	vm_at(&vm, VS_STOPPED);
	vm_fsm(&vm, VE_AGENT_READY, NULL);
}
