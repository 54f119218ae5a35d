/*
 * Waking on work: a call that needs the guest, to a paused or hibernated
 * VM, waits with its own copy of the arguments while the VM resumes, and
 * then runs as if it had just come (dispatch_run); it never fails for
 * the suspension alone.  The first such call starts the resume, as
 * vm_resume would; later ones join it.  Each gets progress meanwhile.
 * A resume that fails, or a VM stopped or destroyed meanwhile, answers
 * every waiting call with why; a caller that goes takes its call off.
 *
 * Also the one copy of a call's arguments that outlives its message
 * (call_args_copy), which vm_create's wait for its image uses too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "log.h"
#include "vm.h"

#define VM_WAKE_WAITS_MAX	32	/* calls waiting on one VM */

struct vm_wake {
	TAILQ_ENTRY(vm_wake)	 entry;
	uint64_t		 call;
	struct ws_auth		 auth;
	struct tool_args	 args;		/* every pointer owned */
};

void
call_args_free(struct tool_args *a)
{
	size_t	 k, j;

	for (k = 0; k < TOOL_PARAMS_MAX; k++) {
		free((char *)a->v[k].s);
		free((void *)a->v[k].b);
		for (j = 0; j < a->v[k].nlist; j++)
			free((char *)a->v[k].list[j]);
	}
	memset(a, 0, sizeof(*a));
}

int
call_args_copy(struct tool_args *dst, const struct tool_args *src)
{
	const struct tool_value	*sv;
	struct tool_value	*dv;
	size_t			 k, j;

	memset(dst, 0, sizeof(*dst));
	dst->tool = src->tool;
	for (k = 0; k < src->tool->nparams && k < TOOL_PARAMS_MAX; k++) {
		sv = &src->v[k];
		dv = &dst->v[k];
		dv->present = sv->present;
		dv->i = sv->i;
		memcpy(dv->cursor, sv->cursor, sizeof(dv->cursor));
		if (sv->s != NULL && (dv->s = strdup(sv->s)) == NULL)
			goto fail;
		if (sv->b != NULL) {
			if ((dv->b = malloc(sv->blen > 0 ? sv->blen : 1)) ==
			    NULL)
				goto fail;
			memcpy((void *)dv->b, sv->b, sv->blen);
			dv->blen = sv->blen;
		}
		for (j = 0; j < sv->nlist && j < TOOL_LIST_MAX; j++) {
			if ((dv->list[j] = strdup(sv->list[j])) == NULL)
				goto fail;
			dv->nlist = j + 1;
		}
	}
	return 0;
fail:
	call_args_free(dst);
	return -1;
}

static void
wake_free(struct vm *vm, struct vm_wake *w)
{
	TAILQ_REMOVE(&vm->wakes, w, entry);
	vm->nwakes--;
	call_args_free(&w->args);
	free(w);
}

/* No wake comes: every waiting call is answered msg. */
static void
wake_fail_all(struct vm *vm, const char *msg)
{
	struct vm_wake	*w;

	while ((w = TAILQ_FIRST(&vm->wakes)) != NULL) {
		call_reply(w->call, TOOL_ERROR, msg);
		wake_free(vm, w);
	}
	vm->waking = 0;
}

/*
 * Whether call c needs its VM's guest: it wakes the VM, and counts as
 * activity (idle.c).  vm_status, vm_list and vm_job_status do not.
 */
int
vm_call_needs_guest(const struct tool_call *c)
{
	enum tool_target t = c->args->tool->target;

	return c->vm != NULL && (t == TT_VM_RUNNING || t == TT_VM_AGENT ||
	    t == TT_JOB) && c->args->tool->id != TOOL_VM_JOB_STATUS;
}

/*
 * Whether call c, to a VM in the wrong state for it, waits for the VM to
 * wake: 1 if it does (or was answered), 0 to go on as before.
 */
int
vm_wake_call(struct tool_call *c)
{
	struct vm	*vm = c->vm;
	struct vm_wake	*w;
	char		 msg[VM_MSG_MAX];

	if (!vm_call_needs_guest(c))
		return 0;
	if (!vm->waking && ((vm->state != VS_PAUSED &&
	    vm->state != VS_HIBERNATED) || vm->op.pending))
		return 0;
	if (vm->nwakes >= VM_WAKE_WAITS_MAX ||
	    (w = calloc(1, sizeof(*w))) == NULL) {
		(void)snprintf(msg, sizeof(msg), "%s is waking, and %d calls "
		    "wait for it already: retry in a few seconds", vm->row.id,
		    VM_WAKE_WAITS_MAX);
		call_reply(c->id, TOOL_ERROR, msg);
		return 1;
	}
	if (call_args_copy(&w->args, c->args) == -1) {
		free(w);
		call_reply(c->id, TOOL_UNAVAILABLE, "out of memory; retry");
		return 1;
	}
	w->call = c->id;
	w->auth = *c->auth;
	TAILQ_INSERT_TAIL(&vm->wakes, w, entry);
	vm->nwakes++;
	(void)snprintf(msg, sizeof(msg), "waking %s from %s", vm->row.id,
	    vm->waking ? "its suspension" : vm->state == VS_HIBERNATED ?
	    "hibernation" : "its pause");
	call_progress(c->id, 0, 2, msg);
	if (vm->waking)
		return 1;
	vm->waking = 1;
	log_info("%s: woken by %s", vm->row.id, c->args->tool->name);
	if (vm->state != VS_HIBERNATED)
		vm_resume_paused(0, vm);
	else if (vm_hibernate_resume(0, vm, msg, sizeof(msg)) == -1)
		wake_fail_all(vm, msg);
	return 1;
}

/*
 * The wake is over: awake (running, its jobs thawed: ok), the waiting
 * calls run; otherwise they are answered why.
 */
void
vm_wake_settle(struct vm *vm, int ok)
{
	TAILQ_HEAD(, vm_wake)	 list = TAILQ_HEAD_INITIALIZER(list);
	struct vm_wake		*w;
	char			 msg[VM_MSG_MAX];

	if (!vm->waking && vm->nwakes == 0)
		return;
	if (!ok) {
		(void)snprintf(msg, sizeof(msg), "%s did not wake: it is %s "
		    "(%s); nothing was run", vm->row.id,
		    vm_state_name(vm->state), vm->row.reason[0] != '\0' ?
		    vm->row.reason : "no reason given");
		wake_fail_all(vm, msg);
		return;
	}
	/* Each runs on its own copy, off the VM's list. */
	TAILQ_CONCAT(&list, &vm->wakes, entry);
	vm->nwakes = 0;
	vm->waking = 0;
	while ((w = TAILQ_FIRST(&list)) != NULL) {
		TAILQ_REMOVE(&list, w, entry);
		call_progress(w->call, 1, 2, "awake");
		(void)dispatch_run(w->call, &w->auth, &w->args);
		call_args_free(&w->args);
		free(w);
	}
}

/* A new state (vm_fsm): failed, stopped or destroyed, no wake comes. */
void
vm_wake_check(struct vm *vm)
{
	if ((vm->waking || vm->nwakes > 0) && (vm->state == VS_FAILED ||
	    vm->state == VS_STOPPED || vm->state == VS_STOPPING ||
	    vm->state == VS_DESTROYING))
		vm_wake_settle(vm, 0);
}

/* A caller went: its waiting call is no more. */
void
vm_wake_forget(uint64_t call)
{
	struct vm	*vm;
	struct vm_wake	*w, *next;

	TAILQ_FOREACH(vm, &vms, entry)
		for (w = TAILQ_FIRST(&vm->wakes); w != NULL; w = next) {
			next = TAILQ_NEXT(w, entry);
			if (w->call == call)
				wake_free(vm, w);
		}
}

/* The VM is freed: what waits on it is answered. */
void
vm_wake_drop(struct vm *vm)
{
	char	 msg[VM_MSG_MAX];

	(void)snprintf(msg, sizeof(msg), "%s is gone; nothing was run",
	    vm->row.id);
	wake_fail_all(vm, msg);
}
