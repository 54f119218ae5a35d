/*
 * The monitor's ops of a single step, and their entries in the op table
 * (see VMM_OP in vmm.h).  An op of several steps has its own file, with
 * its own entry (checkpoint.c).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "guest.h"
#include "log.h"
#include "msg_vmm.h"
#include "proto.h"
#include "qmp.h"
#include "vmm.h"

/* What QEMU may name fits the answers' codecs. */
_Static_assert(QMP_NAME_MAX - 1 <= VMM_QMP_STATUS_MAX,
    "a QMP status longer than QMP_STATE carries");
_Static_assert(QMP_TEXT_MAX - 1 <= VMM_DETAIL_MAX,
    "a QMP event detail longer than EVENT carries");

/* --- QMP commands of one step, without arguments */

static void
qmp_done(struct vmm_req *r, const struct qmp_msg *m)
{
	vmm_ok(r, 0);
}

static void
qmp_got_status(struct vmm_req *r, const struct qmp_msg *m)
{
	struct msg_vmm_qmp_state st;
	struct ibuf		*b;

	if (!m->has_status || !m->has_running) {
		vmm_fail(r, VMM_ERR_QMP, EBADMSG,
		    "query-status returned no status");
		return;
	}
	st.status = m->status;
	st.running = m->running ? 1 : 0;
	b = vmm_answer_begin(r, IMSG_VMM_QMP_STATE);
	msg_vmm_qmp_state_put(b, &st);
	vmm_answer_end(r, b);
}

static void
op_qmp_status(struct vmm_req *r, const union vmm_args *a)
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

/* --- the guest's requests, through the guest interface */

static void
op_exec(struct vmm_req *r, const union vmm_args *a)
{
	vmm_guest->exec(r, &a->exec);
}

static void
op_job_status(struct vmm_req *r, const union vmm_args *a)
{
	vmm_guest->job_status(r, a->job_status.job);
}

static void
op_job_cancel(struct vmm_req *r, const union vmm_args *a)
{
	vmm_guest->job_cancel(r, a->job_cancel.job);
}

static void
op_job_read(struct vmm_req *r, const union vmm_args *a)
{
	/* The guest may wait for the job before it answers. */
	vmm_req_arm(r, r->op->timeout_ms + a->job_read.wait_ms);
	vmm_guest->job_read(r, &a->job_read);
}

static void
op_file_read(struct vmm_req *r, const union vmm_args *a)
{
	vmm_guest->file_read(r, &a->file_read);
}

static void
op_file_write(struct vmm_req *r, const union vmm_args *a)
{
	vmm_guest->file_write(r, &a->file_write);
}

static void
op_file_list(struct vmm_req *r, const union vmm_args *a)
{
	vmm_guest->file_list(r, &a->file_list);
}

static void
op_guest_info(struct vmm_req *r, const union vmm_args *a)
{
	vmm_guest->info(r);
}

static void
op_freeze(struct vmm_req *r, const union vmm_args *a)
{
	vmm_guest->freeze(r);
}

static void
op_thaw(struct vmm_req *r, const union vmm_args *a)
{
	vmm_guest->thaw(r);
}

static void
op_set_time(struct vmm_req *r, const union vmm_args *a)
{
	vmm_guest->set_time(r, &a->set_time);
}

static void
op_identity(struct vmm_req *r, const union vmm_args *a)
{
	vmm_guest->identity(r, &a->identity);
}

static void
op_guest_poweroff(struct vmm_req *r, const union vmm_args *a)
{
	vmm_guest->poweroff(r);
}

static void
op_net_config(struct vmm_req *r, const union vmm_args *a)
{
	vmm_guest->net_config(r, &a->net_config);
}

/* --- the codecs, as the table's get column */

VMM_GET_NONE(qmp_status)
VMM_GET_NONE(pause)
VMM_GET_NONE(cont)
VMM_GET_NONE(powerdown)
VMM_GET_NONE(quit)
VMM_GET_ARGS(exec)
VMM_GET_ARGS(job_status)
VMM_GET_ARGS(job_cancel)
VMM_GET_ARGS(job_read)
VMM_GET_ARGS(file_read)
VMM_GET_ARGS(file_write)
VMM_GET_ARGS(file_list)
VMM_GET_NONE(guest_info)
VMM_GET_NONE(freeze)
VMM_GET_NONE(thaw)
VMM_GET_ARGS(set_time)
VMM_GET_ARGS(identity)
VMM_GET_NONE(guest_poweroff)
VMM_GET_ARGS(net_config)

/* The entry of request type, or NULL; the unit test proves there is one
 * per request and no second. */
const struct vmm_op *
vmm_op_find(uint32_t type)
{
	const struct vmm_op *const	*p;

	LINKSET_FOREACH(vmm_ops, p)
		if ((*p)->type == type)
			return *p;
	return NULL;
}

#define QMP_OP(t, n, f, fn)						\
	VMM_OP(fn, IMSG_VMM_##t, n, VMM_CHAN_QMP, f, VMM_REQ_TIMEOUT_MS,	\
	    get_##fn, op_##fn, NULL)
#define GUEST_OP(t, n, fn)						\
	VMM_OP(fn, IMSG_VMM_##t, n, VMM_CHAN_GUEST, VMM_OP_GUEST_UP,	\
	    VMM_REQ_TIMEOUT_MS, get_##fn, op_##fn, NULL)

QMP_OP(QMP_STATUS, "status", 0, qmp_status);
QMP_OP(PAUSE, "pause", 0, pause);
QMP_OP(CONT, "cont", 0, cont);
QMP_OP(POWERDOWN, "powerdown", 0, powerdown);
QMP_OP(QUIT, "quit", VMM_OP_EXITS, quit);
GUEST_OP(EXEC, "exec", exec);
GUEST_OP(JOB_STATUS, "job status", job_status);
GUEST_OP(JOB_CANCEL, "job cancel", job_cancel);
GUEST_OP(JOB_READ, "job read", job_read);
GUEST_OP(FILE_READ, "file read", file_read);
GUEST_OP(FILE_WRITE, "file write", file_write);
GUEST_OP(FILE_LIST, "file list", file_list);
GUEST_OP(GUEST_INFO, "guest info", guest_info);
GUEST_OP(FREEZE, "freeze", freeze);
GUEST_OP(THAW, "thaw", thaw);
GUEST_OP(SET_TIME, "set time", set_time);
GUEST_OP(IDENTITY, "identity", identity);
GUEST_OP(GUEST_POWEROFF, "guest poweroff", guest_poweroff);
GUEST_OP(NET_CONFIG, "net config", net_config);
