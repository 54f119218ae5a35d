/*
 * The monitor's op table: one entry per IMSG_VMM_* request, what it needs
 * and how it starts (see struct vmm_op in vmm.h), and the ops of a single
 * step.  An op of several steps has its own file (checkpoint.c).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "guest.h"
#include "log.h"
#include "msg.h"
#include "proto.h"
#include "qmp.h"
#include "vmm.h"
#include "vmm_relay.h"

/* --- QMP commands of one step, without arguments */

static void
qmp_done(struct vmm_req *r, const struct qmp_msg *m)
{
	vmm_ok(r, 0);
}

static void
qmp_got_status(struct vmm_req *r, const struct qmp_msg *m)
{
	struct ibuf	*b;

	if (!m->has_status || !m->has_running) {
		vmm_fail(r, VMM_ERR_QMP, EBADMSG,
		    "query-status returned no status");
		return;
	}
	b = vmm_answer_begin(r, IMSG_VMM_QMP_STATE);
	m_add_str(b, m->status);
	m_add_u32(b, m->running ? 1 : 0);
	vmm_answer_end(r, b);
}

static void
op_status(struct vmm_req *r, const union vmm_args *a)
{
	vmm_qmp_send(r, "query-status", NULL, qmp_got_status);
}

static void
op_pause(struct vmm_req *r, const union vmm_args *a)
{
	vmm_qmp_send(r, "stop", NULL, qmp_done);
}

static void
op_cont(struct vmm_req *r, const union vmm_args *a)
{
	vmm_qmp_send(r, "cont", NULL, qmp_done);
}

static void
op_powerdown(struct vmm_req *r, const union vmm_args *a)
{
	vmm_qmp_send(r, "system_powerdown", NULL, qmp_done);
}

static void
op_quit(struct vmm_req *r, const union vmm_args *a)
{
	vmm_qmp_send(r, "quit", NULL, qmp_done);
}

/* --- the guest's requests */

static int
get_guest(struct imsg *imsg, union vmm_args *a)
{
	struct mreader	 mr;

	m_init(&mr, imsg);
	return vmm_req_get(imsg->hdr.type, &mr, &a->guest.m, &a->guest.enc);
}

static void
op_guest(struct vmm_req *r, const union vmm_args *a)
{
	/* The guest may wait for the job before it answers. */
	if (a->guest.m.type == AGENT_JOB_READ)
		vmm_req_arm(r, r->op->timeout_ms +
		    a->guest.m.u.job_read.wait_ms);
	vmm_guest->request(r, a);
}

#define QMP_OP(t, n, f, fn)	\
	{ IMSG_VMM_##t, n, VMM_CHAN_QMP, f, VMM_REQ_TIMEOUT_MS, NULL, fn }
#define GUEST_OP(t, n)		\
	{ IMSG_VMM_##t, n, VMM_CHAN_GUEST, VMM_OP_GUEST_UP, \
	    VMM_REQ_TIMEOUT_MS, get_guest, op_guest }

const struct vmm_op vmm_ops[] = {
	QMP_OP(QMP_STATUS, "status", 0, op_status),
	QMP_OP(PAUSE, "pause", 0, op_pause),
	QMP_OP(CONT, "cont", 0, op_cont),
	QMP_OP(POWERDOWN, "powerdown", 0, op_powerdown),
	QMP_OP(QUIT, "quit", VMM_OP_EXITS, op_quit),
	QMP_OP(CHECKPOINT, "checkpoint",
	    VMM_OP_QMP_UP | VMM_OP_FD | VMM_OP_ONE, ckpt_start),
	GUEST_OP(EXEC, "exec"),
	GUEST_OP(JOB_STATUS, "job status"),
	GUEST_OP(JOB_CANCEL, "job cancel"),
	GUEST_OP(JOB_READ, "job read"),
	GUEST_OP(FILE_READ, "file read"),
	GUEST_OP(FILE_WRITE, "file write"),
	GUEST_OP(GUEST_INFO, "guest info"),
	GUEST_OP(FREEZE, "freeze"),
	GUEST_OP(THAW, "thaw"),
	GUEST_OP(SET_TIME, "set time"),
	GUEST_OP(GUEST_POWEROFF, "guest poweroff"),
	GUEST_OP(NET_CONFIG, "net config"),
};

const size_t	vmm_nops = sizeof(vmm_ops) / sizeof(vmm_ops[0]);

const struct vmm_op *
vmm_op_find(uint32_t type)
{
	size_t	 i;

	for (i = 0; i < vmm_nops; i++)
		if (vmm_ops[i].type == type)
			return &vmm_ops[i];
	return NULL;
}
