/*
 * The checkpoint (IMSG_VMM_CHECKPOINT): QEMU migrates the VM's state to
 * the file descriptor that came with mcvmd's request.  Its steps, each a
 * QMP command whose reply continues with the next function:
 *
 *	ckpt_start	getfd, with the fd		-> ckpt_got_fd
 *	ckpt_got_fd	migrate-set-parameters		-> ckpt_unthrottled
 *	ckpt_unthrottled migrate to fd:checkpoint	-> ckpt_migrating
 *	ckpt_migrating	ckpt_poll in 20 ms
 *	ckpt_poll	query-migrate			-> ckpt_polled
 *	ckpt_polled	done: fsync, answer its MiB; failed; or
 *			ckpt_poll in 20 ms
 *
 * The op table entry gives the fd (r->fd, closed with the request), one
 * checkpoint at a time, QMP negotiated, and the deadline.  The monitor
 * keeps its copy of the fd to make the checkpoint durable once QEMU has
 * written it: a hibernated VM is only its files.  A QMP error at any step
 * has answered mcvmd before a continuation would run.
 */
#include <sys/stat.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "qmp.h"
#include "vmm.h"

#define CKPT_FDNAME	"checkpoint"
#define CKPT_BANDWIDTH	1099511627776LL		/* bytes/s: unthrottled */
#define CKPT_POLL_MS	20

static void	 ckpt_got_fd(struct vmm_req *, const struct qmp_msg *);
static void	 ckpt_unthrottled(struct vmm_req *, const struct qmp_msg *);
static void	 ckpt_migrating(struct vmm_req *, const struct qmp_msg *);
static void	 ckpt_poll(struct vmm_req *);
static void	 ckpt_polled(struct vmm_req *, const struct qmp_msg *);

static void
ckpt_start(struct vmm_req *r, const union vmm_args *unused)
{
	if (vmm_qmp_send_fd(r, "getfd", vmm_qmp_args("{s:s}", "fdname",
	    CKPT_FDNAME), r->fd, ckpt_got_fd) == -1)
		vmm_fail(r, VMM_ERR_QMP, (uint32_t)errno,
		    "cannot hand QEMU the checkpoint");
}

static void
ckpt_got_fd(struct vmm_req *r, const struct qmp_msg *m)
{
	vmm_qmp_send(r, "migrate-set-parameters", vmm_qmp_args("{s:I}",
	    "max-bandwidth", (json_int_t)CKPT_BANDWIDTH), ckpt_unthrottled);
}

static void
ckpt_unthrottled(struct vmm_req *r, const struct qmp_msg *m)
{
	vmm_qmp_send(r, "migrate", vmm_qmp_args("{s:s}", "uri",
	    "fd:" CKPT_FDNAME), ckpt_migrating);
}

static void
ckpt_migrating(struct vmm_req *r, const struct qmp_msg *m)
{
	vmm_req_after(r, CKPT_POLL_MS, ckpt_poll);
}

static void
ckpt_poll(struct vmm_req *r)
{
	vmm_qmp_send(r, "query-migrate", NULL, ckpt_polled);
}

static void
ckpt_polled(struct vmm_req *r, const struct qmp_msg *m)
{
	struct stat	 st;
	uint64_t	 mib;

	if (!m->has_status) {
		vmm_fail(r, VMM_ERR_QMP, EBADMSG,
		    "query-migrate returned no status");
		return;
	}
	if (strcmp(m->status, "completed") == 0) {
		if (fsync(r->fd) == -1 || fstat(r->fd, &st) == -1) {
			vmm_fail(r, VMM_ERR_QMP, (uint32_t)errno,
			    "the checkpoint could not be made durable");
			return;
		}
		mib = ((uint64_t)st.st_size + (1 << 20) - 1) >> 20;
		log_info("checkpoint written, %llu MiB",
		    (unsigned long long)mib);
		vmm_ok(r, mib > UINT32_MAX ? UINT32_MAX : (uint32_t)mib);
		return;
	}
	if (strcmp(m->status, "failed") == 0 ||
	    strcmp(m->status, "cancelled") == 0) {
		vmm_fail(r, VMM_ERR_QMP, EIO,
		    "the migration to the checkpoint failed");
		return;
	}
	vmm_req_after(r, CKPT_POLL_MS, ckpt_poll);
}

VMM_GET_NONE(checkpoint)
VMM_OP(checkpoint, IMSG_VMM_CHECKPOINT, "checkpoint", VMM_CHAN_QMP,
    VMM_OP_QMP_UP | VMM_OP_FD | VMM_OP_ONE, VMM_REQ_TIMEOUT_MS,
    get_checkpoint, ckpt_start, NULL);
