/*
 * The VM state machine: one table of what each event does in each state,
 * and vm_fsm(), the one function that changes a VM's state.  An event a
 * state has no entry for is a bug in mcvmd, and fatal.
 *
 * state.db records, beside the state, the intent: the operation under way
 * (create, start, stop, pause, resume, destroy), written before mcvmd
 * acts on it and cleared once it is done, so that a crash leaves a
 * visible marker that start-up reconciliation turns into "failed".
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "vm.h"

/* What a transition does to the intent. */
enum {
	FI_NONE = 0,		/* no transition: illegal */
	FI_KEEP,		/* the operation goes on */
	FI_BEGIN,		/* the event's operation begins */
	FI_DONE,		/* the operation is over */
};

struct fsm_cell {
	unsigned char	 intent;
	unsigned char	 next;
};

#define T(to, i)	{ FI_##i, VS_##to }

static const struct fsm_cell fsm[VS_NSTATES][VE_NEVENTS] = {
	[VS_CREATING] = {
		[VE_DISK_READY] =	T(CREATING, KEEP),
		[VE_NET_READY] =	T(CREATING, KEEP),
		[VE_SPAWNED] =		T(BOOTING, KEEP),
		[VE_FAIL] =		T(FAILED, DONE),
		[VE_SHUTDOWN] =		T(STOPPED, DONE),
		[VE_DESTROY] =		T(DESTROYING, BEGIN),
	},
	[VS_BOOTING] = {
		[VE_AGENT_READY] =	T(RUNNING, DONE),
		[VE_STOP] =		T(STOPPING, BEGIN),
		[VE_GUEST_POWEROFF] =	T(STOPPED, DONE),
		[VE_FAIL] =		T(FAILED, DONE),
		[VE_SHUTDOWN] =		T(STOPPED, DONE),
		[VE_DESTROY] =		T(DESTROYING, BEGIN),
	},
	[VS_RUNNING] = {
		[VE_PAUSED] =		T(PAUSED, DONE),
		[VE_STOP] =		T(STOPPING, BEGIN),
		[VE_GUEST_POWEROFF] =	T(STOPPED, DONE),
		[VE_FAIL] =		T(FAILED, DONE),
		[VE_SHUTDOWN] =		T(STOPPED, DONE),
		[VE_DESTROY] =		T(DESTROYING, BEGIN),
		[VE_HIBERNATE] =	T(HIBERNATING, BEGIN),
	},
	[VS_PAUSED] = {
		[VE_RESUMED] =		T(RUNNING, DONE),
		[VE_STOP] =		T(STOPPING, BEGIN),
		[VE_GUEST_POWEROFF] =	T(STOPPED, DONE),
		[VE_FAIL] =		T(FAILED, DONE),
		[VE_SHUTDOWN] =		T(STOPPED, DONE),
		[VE_DESTROY] =		T(DESTROYING, BEGIN),
		[VE_HIBERNATE] =	T(HIBERNATING, BEGIN),
	},
	[VS_STOPPING] = {
		[VE_STOP_TIMEOUT] =	T(RUNNING, DONE),
		[VE_PROCESSES_GONE] =	T(STOPPED, DONE),
		[VE_FAIL] =		T(FAILED, DONE),
		[VE_SHUTDOWN] =		T(STOPPED, DONE),
		[VE_DESTROY] =		T(DESTROYING, BEGIN),
	},
	[VS_STOPPED] = {
		[VE_START] =		T(CREATING, BEGIN),
		[VE_SHUTDOWN] =		T(STOPPED, DONE),
		[VE_DESTROY] =		T(DESTROYING, BEGIN),
	},
	[VS_FAILED] = {
		[VE_START] =		T(CREATING, BEGIN),
		[VE_FAIL] =		T(FAILED, DONE),
		[VE_DESTROY] =		T(DESTROYING, BEGIN),
	},
	[VS_DESTROYING] = {
		[VE_DESTROY] =		T(DESTROYING, KEEP),
	},
	/*
	 * A failed checkpoint leaves the VM running; an interrupted one
	 * (mcvmd stopping) fails it, never a silent step back.
	 */
	[VS_HIBERNATING] = {
		[VE_PAUSED] =		T(PAUSED, DONE),
		[VE_RESUMED] =		T(RUNNING, DONE),
		[VE_PROCESSES_GONE] =	T(HIBERNATED, DONE),
		[VE_FAIL] =		T(FAILED, DONE),
		[VE_SHUTDOWN] =		T(FAILED, DONE),
		[VE_DESTROY] =		T(DESTROYING, BEGIN),
	},
	/* vm_start resumes it; vm_stop discards its checkpoint. */
	[VS_HIBERNATED] = {
		[VE_START] =		T(CREATING, BEGIN),
		[VE_STOP] =		T(STOPPED, DONE),
		[VE_FAIL] =		T(FAILED, DONE),
		[VE_SHUTDOWN] =		T(HIBERNATED, DONE),
		[VE_DESTROY] =		T(DESTROYING, BEGIN),
	},
};

#undef T

static const char *const state_names[VS_NSTATES] = {
	[VS_CREATING] = "creating",
	[VS_BOOTING] = "booting",
	[VS_RUNNING] = "running",
	[VS_PAUSED] = "paused",
	[VS_STOPPING] = "stopping",
	[VS_STOPPED] = "stopped",
	[VS_FAILED] = "failed",
	[VS_DESTROYING] = "destroying",
	[VS_HIBERNATING] = "hibernating",
	[VS_HIBERNATED] = "hibernated",
};

static const char *const event_names[VE_NEVENTS] = {
#define VM_EVENT_NAME(e, n)	[e] = n,
	VM_EVENTS(VM_EVENT_NAME)
#undef VM_EVENT_NAME
};

static const char *const op_names[] = {
	[VO_NONE] = "",
	[VO_CREATE] = "create",
	[VO_START] = "start",
	[VO_STOP] = "stop",
	[VO_PAUSE] = "pause",
	[VO_RESUME] = "resume",
	[VO_DESTROY] = "destroy",
	[VO_HIBERNATE] = "hibernate",
};

/* The operation an event that begins one begins. */
static const enum vm_opkind event_op[VE_NEVENTS] = {
	[VE_START] = VO_START,
	[VE_STOP] = VO_STOP,
	[VE_DESTROY] = VO_DESTROY,
	[VE_HIBERNATE] = VO_HIBERNATE,
};

const char *
vm_state_name(enum vm_state s)
{
	return s < VS_NSTATES ? state_names[s] : "unknown";
}

enum vm_state
vm_state_parse(const char *s)
{
	int	 i;

	for (i = 0; i < VS_NSTATES; i++)
		if (strcmp(state_names[i], s) == 0)
			return i;
	return VS_FAILED;
}

const char *
vm_event_name(enum vm_event e)
{
	return e < VE_NEVENTS ? event_names[e] : "unknown";
}

const char *
vm_op_name(enum vm_opkind op)
{
	return op <= VO_HIBERNATE ? op_names[op] : "unknown";
}

/* Whether event is legal in state s: 1 and the next state, or 0. */
int
vm_fsm_next(enum vm_state s, enum vm_event e, enum vm_state *next)
{
	if (s >= VS_NSTATES || e >= VE_NEVENTS ||
	    fsm[s][e].intent == FI_NONE)
		return 0;
	*next = fsm[s][e].next;
	return 1;
}

static void
vm_record(struct vm *vm, const char *reason)
{
	if (!vm_unowned(vm) && state_vm_set(vm->row.id, vm->row.state,
	    vm->row.intent, vm->state == VS_RUNNING ? "" : reason) == -1)
		log_warnx("%s: state not recorded", vm->row.id);
}

/*
 * Event e happened to vm: its new state, and the intent, go to memory and
 * state.db (a template or a warm clone has no rows).  reason, if not
 * NULL, says why.
 */
void
vm_fsm(struct vm *vm, enum vm_event e, const char *reason)
{
	enum vm_state	 from = vm->state, to;
	const char	*intent = vm->row.intent;

	if (!vm_fsm_next(from, e, &to))
		fatalx("%s: event %s in state %s", vm->row.id,
		    vm_event_name(e), vm_state_name(from));
	switch (fsm[from][e].intent) {
	case FI_BEGIN:
		intent = vm_op_name(event_op[e]);
		break;
	case FI_DONE:
		intent = "";
		break;
	default:
		break;
	}
	log_info("%s: %s -> %s (%s)%s%s", vm->row.id, vm_state_name(from),
	    vm_state_name(to), vm_event_name(e), reason != NULL ? ": " : "",
	    reason != NULL ? reason : "");
	vm->state = to;
	vm->row.updated = (int64_t)time(NULL);
	(void)snprintf(vm->row.state, sizeof(vm->row.state), "%s",
	    vm_state_name(to));
	if (intent != vm->row.intent)
		(void)snprintf(vm->row.intent, sizeof(vm->row.intent), "%s",
		    intent);
	if (reason != NULL)
		(void)snprintf(vm->row.reason, sizeof(vm->row.reason), "%s",
		    reason);
	else if (to == VS_RUNNING)
		vm->row.reason[0] = '\0';
	if (to == VS_RUNNING)
		vm->idle_since = 0;	/* idle from its next sweep */
	vm_record(vm, reason);
	vm_wake_check(vm);
	vm_drain_check();
}

/*
 * An operation that moves the VM only at its end (pause, resume) is
 * recorded before it acts; VO_NONE: it ended without a move.
 */
void
vm_intent(struct vm *vm, enum vm_opkind op)
{
	(void)snprintf(vm->row.intent, sizeof(vm->row.intent), "%s",
	    vm_op_name(op));
	vm_record(vm, NULL);
}
