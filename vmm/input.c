/*
 * Input events (IMSG_VMM_INPUT): keys, buttons and pointer motion for
 * QEMU to give the guest's devices, in the order mcvmd sent them.  The
 * codec has checked every event, and that at most VMM_INPUT_FRAME_MAX
 * come between two waits.  The events are copied into the request's
 * state (the imsg is gone once the op has started); then, in turn:
 *
 *	in_next		the events up to the next wait, as one
 *			input-send-event			-> in_sent
 *	in_sent		the wait, with vmm_req_after		-> in_next
 *	in_next		nothing left: OK with the number of events sent
 *
 * The deadline is the ordinary one plus the waits.  QEMU refuses input
 * while the VM is not running ("VM not running"), an error like any.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "log.h"
#include "qmp.h"
#include "vmm.h"

struct in_state {
	size_t		 n;		/* events */
	size_t		 next;		/* the first not yet sent */
	size_t		 batch;		/* in flight */
	uint32_t	 sent;
	struct vmm_input ev[];
};

static void	 in_next(struct vmm_req *);
static void	 in_sent(struct vmm_req *, const struct qmp_msg *);

static const char *const in_buttons[VMM_BTN_COUNT] = {
	[VMM_BTN_LEFT] = "left",
	[VMM_BTN_RIGHT] = "right",
	[VMM_BTN_MIDDLE] = "middle",
};

/* One event as input-send-event takes it (InputEvent, qapi/ui.json). */
static json_t *
in_event(const struct vmm_input *e)
{
	const char	*axis = e->code == VMM_AXIS_Y ? "y" : "x";

	switch (e->kind) {
	case VMM_IN_KEY:
		return vmm_qmp_args("{s:s, s:{s:b, s:{s:s, s:s}}}", "type",
		    "key", "data", "down", e->down, "key", "type", "qcode",
		    "data", key_names[e->code]);
	case VMM_IN_BTN:
		return vmm_qmp_args("{s:s, s:{s:b, s:s}}", "type", "btn",
		    "data", "down", e->down, "button", in_buttons[e->code]);
	case VMM_IN_ABS:
		return vmm_qmp_args("{s:s, s:{s:s, s:i}}", "type", "abs",
		    "data", "axis", axis, "value", (int)e->value);
	case VMM_IN_REL:
		return vmm_qmp_args("{s:s, s:{s:s, s:i}}", "type", "rel",
		    "data", "axis", axis, "value", (int)e->value);
	}
	fatalx("%s: event of kind %u", __func__, e->kind);
}

/*
 * The arguments of input-send-event for n events, none a wait: at most
 * VMM_INPUT_FRAME_MAX, as the codec let through.  Fatal if it fails.
 */
json_t *
vmm_input_batch(const struct vmm_input *ev, size_t n)
{
	json_t	*events;
	size_t	 i;

	if (n == 0 || n > VMM_INPUT_FRAME_MAX)
		fatalx("%s: %zu events", __func__, n);
	if ((events = json_array()) == NULL)
		fatalx("%s: json_array", __func__);
	for (i = 0; i < n; i++)
		if (json_array_append_new(events, in_event(&ev[i])) == -1)
			fatalx("%s: json_array_append", __func__);
	return vmm_qmp_args("{s:o}", "events", events);
}

static void
in_start(struct vmm_req *r, const union vmm_args *a)
{
	const struct msg_vmm_input	*m = &a->input;
	struct in_state			*st;
	size_t				 i;

	if ((st = calloc(1, sizeof(*st) + m->n * sizeof(st->ev[0]))) ==
	    NULL)
		fatal("%s", __func__);
	st->n = m->n;
	for (i = 0; i < m->n; i++)
		msg_vmm_input_event(m, i, &st->ev[i]);
	r->state = st;
	/* The waits are part of the op. */
	vmm_req_arm(r, r->op->timeout_ms + m->wait_ms);
	in_next(r);
}

/* Waits of 0 go by; a longer one pauses; then the next batch goes. */
static void
in_next(struct vmm_req *r)
{
	struct in_state	*st = r->state;
	size_t		 n;
	int32_t		 ms;

	while (st->next < st->n && st->ev[st->next].kind == VMM_IN_WAIT) {
		ms = st->ev[st->next++].value;
		if (ms > 0) {
			vmm_req_after(r, (uint32_t)ms, in_next);
			return;
		}
	}
	if (st->next == st->n) {
		vmm_ok(r, st->sent);
		return;
	}
	for (n = 0; st->next + n < st->n &&
	    st->ev[st->next + n].kind != VMM_IN_WAIT; n++)
		;
	st->batch = n;
	vmm_qmp_send(r, "input-send-event", vmm_input_batch(st->ev +
	    st->next, n), in_sent);
}

static void
in_sent(struct vmm_req *r, const struct qmp_msg *m)
{
	struct in_state	*st = r->state;

	st->next += st->batch;
	st->sent += (uint32_t)st->batch;
	st->batch = 0;
	in_next(r);
}

static void
in_end(struct vmm_req *r)
{
	free(r->state);
}

VMM_GET_ARGS(input)
VMM_OP(input, IMSG_VMM_INPUT, "batch of input", VMM_CHAN_QMP,
    VMM_OP_QMP_UP | VMM_OP_ONE, VMM_REQ_TIMEOUT_MS, get_input, in_start,
    in_end);
