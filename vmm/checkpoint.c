/*
 * The checkpoint (IMSG_VMM_CHECKPOINT): QEMU migrates the VM's state to
 * the file descriptor that came with mcvmd's request.  Its steps, each a
 * QMP command whose reply continues with the next function:
 *
 *	ckpt_start	x-ignore-shared on or off, events on
 *							-> ckpt_capable
 *	ckpt_capable	getfd, with the fd		-> ckpt_got_fd
 *	ckpt_got_fd	migrate-set-parameters		-> ckpt_unthrottled
 *	ckpt_unthrottled migrate to fd:checkpoint	-> ckpt_migrating
 *	ckpt_migrating	ckpt_poll in 20 ms, or at QEMU's next
 *			MIGRATION event, whichever is first
 *	ckpt_poll	query-migrate			-> ckpt_polled
 *	ckpt_polled	done: fsync if durable, answer its MiB; failed: the
 *			capability off, then the error; or ckpt_poll in
 *			20 ms
 *
 * With x-ignore-shared (a request's shared), RAM QEMU maps shared from a
 * file (a shared template's: memory-backend-file share=on) stays out of
 * the stream, which then holds the device state alone.  The capability
 * changes the stream's format, so the load says the same as the write;
 * and it is on only while such a checkpoint is written or loaded, as
 * QEMU's internal snapshots (snapshot.c) would leave that RAM out too.
 *
 * The incoming op (IMSG_VMM_INCOMING) loads one, into a QEMU started with
 * "-incoming defer" and the checkpoint on QEMU_INCOMING_FD:
 *
 *	inc_start	x-ignore-shared on or off, events on
 *							-> inc_capable
 *	inc_capable	migrate-incoming fd:N		-> inc_started
 *	inc_started	inc_poll in 5 ms, or at the next MIGRATION
 *			event
 *	inc_poll	query-migrate			-> inc_polled
 *	inc_polled	done: the capability off	-> inc_done; failed;
 *			or inc_poll in 5 ms
 *
 * The op table entry gives the fd (r->fd, closed with the request), one
 * checkpoint at a time, QMP negotiated, and the deadline; the incoming
 * op, which mcvmd sends as soon as QEMU is spawned, has its first command
 * held until QMP is negotiated (vmm_qmp_send).  The monitor
 * keeps its copy of the fd to make the checkpoint durable once QEMU has
 * written it: a hibernated VM is only its files.  A QMP error at any step
 * has answered mcvmd before a continuation would run.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "qmp.h"
#include "vmm.h"

#define CKPT_FDNAME	"checkpoint"
#define CKPT_BANDWIDTH	1099511627776LL		/* bytes/s: unthrottled */
#define CKPT_POLL_MS	20
#define INC_POLL_MS	5

static void	 ckpt_got_fd(struct vmm_req *, const struct qmp_msg *);
static void	 ckpt_unthrottled(struct vmm_req *, const struct qmp_msg *);
static void	 ckpt_capable(struct vmm_req *, const struct qmp_msg *);
static void	 ckpt_migrating(struct vmm_req *, const struct qmp_msg *);
static void	 ckpt_poll(struct vmm_req *);
static void	 ckpt_polled(struct vmm_req *, const struct qmp_msg *);
static void	 ckpt_failed(struct vmm_req *, const struct qmp_msg *);
static void	 inc_capable(struct vmm_req *, const struct qmp_msg *);
static void	 inc_started(struct vmm_req *, const struct qmp_msg *);
static void	 inc_poll(struct vmm_req *);
static void	 inc_polled(struct vmm_req *, const struct qmp_msg *);
static void	 inc_done(struct vmm_req *, const struct qmp_msg *);

/*
 * x-ignore-shared on or off, then cont.  The migration's events are on
 * too: each change of its state hurries the poll (vmm_req_hurry).
 */
static void
ignore_shared(struct vmm_req *r, int on, vmm_qmp_cont cont)
{
	vmm_qmp_send(r, "migrate-set-capabilities", vmm_qmp_args(
	    "{s:[{s:s,s:b},{s:s,s:b}]}", "capabilities", "capability",
	    "x-ignore-shared", "state", on, "capability", "events", "state",
	    1), cont);
}

static void
ckpt_start(struct vmm_req *r, const union vmm_args *a)
{
	r->flag = a->checkpoint.durable;
	ignore_shared(r, (int)a->checkpoint.shared, ckpt_capable);
}

static void
ckpt_capable(struct vmm_req *r, const struct qmp_msg *m)
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
	vmm_req_poll(r, CKPT_POLL_MS, ckpt_poll);
}

static void
ckpt_poll(struct vmm_req *r)
{
	vmm_qmp_send(r, "query-migrate", NULL, ckpt_polled);
}

enum mig_state {
	MIG_RUNNING,
	MIG_DONE,
	MIG_FAILED,
	MIG_UNSAID,	/* no status: QEMU broke the protocol */
};

/* Where query-migrate's answer says the migration is. */
static enum mig_state
migrate_state(const struct qmp_msg *m)
{
	if (!m->has_status)
		return MIG_UNSAID;
	if (strcmp(m->status, "completed") == 0)
		return MIG_DONE;
	if (strcmp(m->status, "failed") == 0 ||
	    strcmp(m->status, "cancelled") == 0)
		return MIG_FAILED;
	return MIG_RUNNING;
}

static void
ckpt_polled(struct vmm_req *r, const struct qmp_msg *m)
{
	struct stat	 st;
	uint64_t	 mib;

	switch (migrate_state(m)) {
	case MIG_UNSAID:
		vmm_fail(r, VMM_ERR_QMP, EBADMSG,
		    "query-migrate returned no status");
		return;
	case MIG_RUNNING:
		vmm_req_poll(r, CKPT_POLL_MS, ckpt_poll);
		return;
	case MIG_FAILED:
		ignore_shared(r, 0, ckpt_failed);
		return;
	case MIG_DONE:
		break;
	}
	if ((r->flag && fsync(r->fd) == -1) || fstat(r->fd, &st) == -1) {
		vmm_fail(r, VMM_ERR_QMP, (uint32_t)errno,
		    "the checkpoint could not be made durable");
		return;
	}
	mib = ((uint64_t)st.st_size + (1 << 20) - 1) >> 20;
	log_info("checkpoint written, %llu MiB", (unsigned long long)mib);
	vmm_ok(r, mib > UINT32_MAX ? UINT32_MAX : (uint32_t)mib);
}

/* The VM runs on: its snapshots must hold all of its RAM again. */
static void
ckpt_failed(struct vmm_req *r, const struct qmp_msg *m)
{
	vmm_fail(r, VMM_ERR_QMP, EIO, "the migration to the checkpoint failed");
}

VMM_GET_ARGS(checkpoint)
VMM_OP(checkpoint, IMSG_VMM_CHECKPOINT, "checkpoint", VMM_CHAN_QMP,
    VMM_OP_QMP_UP | VMM_OP_FD | VMM_OP_ONE, VMM_REQ_TIMEOUT_MS,
    get_checkpoint, ckpt_start, NULL);

static void
inc_start(struct vmm_req *r, const union vmm_args *a)
{
	ignore_shared(r, (int)a->incoming.shared, inc_capable);
}

static void
inc_capable(struct vmm_req *r, const struct qmp_msg *m)
{
	char	 uri[16];

	(void)snprintf(uri, sizeof(uri), "fd:%d", QEMU_INCOMING_FD);
	vmm_qmp_send(r, "migrate-incoming", vmm_qmp_args("{s:s}", "uri", uri),
	    inc_started);
}

static void
inc_started(struct vmm_req *r, const struct qmp_msg *m)
{
	vmm_req_poll(r, INC_POLL_MS, inc_poll);
}

static void
inc_poll(struct vmm_req *r)
{
	vmm_qmp_send(r, "query-migrate", NULL, inc_polled);
}

static void
inc_polled(struct vmm_req *r, const struct qmp_msg *m)
{
	switch (migrate_state(m)) {
	case MIG_UNSAID:
		vmm_fail(r, VMM_ERR_QMP, EBADMSG,
		    "query-migrate returned no status");
		return;
	case MIG_RUNNING:
		vmm_req_poll(r, INC_POLL_MS, inc_poll);
		return;
	case MIG_FAILED:
		vmm_fail(r, VMM_ERR_QMP, EIO,
		    "the checkpoint could not be loaded");
		return;
	case MIG_DONE:
		ignore_shared(r, 0, inc_done);
		return;
	}
}

static void
inc_done(struct vmm_req *r, const struct qmp_msg *m)
{
	log_debug("checkpoint loaded");
	vmm_ok(r, 0);
}

VMM_GET_ARGS(incoming)
VMM_OP(incoming, IMSG_VMM_INCOMING, "checkpoint load", VMM_CHAN_QMP,
    VMM_OP_ONE, VMM_REQ_TIMEOUT_MS, get_incoming,
    inc_start, NULL);
