/*
 * The checkpoint (IMSG_VMM_CHECKPOINT): QEMU migrates the VM's state to
 * the file descriptor that came with mcvmd's request.  Its steps, each a
 * QMP command whose reply continues with the next function:
 *
 *	ckpt_start	x-ignore-shared on or off, events on
 *							-> ckpt_capable
 *	ckpt_capable	getfd, with the fd (relative: a pipe's)
 *							-> ckpt_got_fd
 *	ckpt_got_fd	migrate-set-parameters		-> ckpt_unthrottled
 *	ckpt_unthrottled migrate to fd:checkpoint	-> ckpt_migrating
 *	ckpt_migrating	ckpt_poll in 20 ms, or at QEMU's next
 *			MIGRATION event, whichever is first
 *	ckpt_poll	query-migrate			-> ckpt_polled
 *	ckpt_polled	done: ckpt_settle; failed: the capability
 *			off, then the error; or ckpt_poll in 20 ms
 *	ckpt_settle	query-status			-> ckpt_settled
 *	ckpt_settled	still finish-migrate: ckpt_settle in 1 ms;
 *			else ckpt_written
 *	ckpt_written	fsync if durable, answer its MiB
 *
 * QEMU says the migration completed before it leaves the finish-migrate
 * run state, in which it refuses cont: the answer waits for that, so
 * that mcvmd may go on with the VM (a fork's source runs on).
 *
 * With x-ignore-shared (a request's shared), RAM QEMU maps shared from a
 * file (a shared template's: memory-backend-file share=on) stays out of
 * the stream, which then holds the device state alone.  The capability
 * changes the stream's format, so the load says the same as the write;
 * and it is on only while such a checkpoint is written or loaded, as
 * QEMU's internal snapshots (snapshot.c) would leave that RAM out too.
 *
 * A relative checkpoint (a request's relative, vmm/ramdiff.h) leaves out
 * the pages QEMU would write as the RAM file it maps copy-on-write has
 * them: mcvmd gave the monitor that file (-R, VMM_RAM_FILENO), mapped
 * read-only at start.  QEMU then migrates to a pipe's end instead, and
 * the monitor reads the other (ckpt_pipe_read) through the filter into
 * the checkpoint; it is written once QEMU said the migration completed
 * and closed its end, whichever is last.
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
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "qmp.h"
#include "ramdiff.h"
#include "vmm.h"

#define CKPT_FDNAME	"checkpoint"
#define CKPT_EXTENTS_MAX 65536		/* of the RAM file's data, looked up */
#define CKPT_PIPE_BYTES	(1024 * 1024)	/* fs.pipe-max-size's default */
#define CKPT_BANDWIDTH	1099511627776LL		/* bytes/s: unthrottled */
#define CKPT_POLL_MS	20
#define CKPT_SETTLE_MS	1
#define INC_POLL_MS	5

/* The RAM file QEMU maps copy-on-write, if mcvmd gave one (-R). */
static struct {
	int		 fd;
	const uint8_t	*map;
	uint64_t	 len;
} ram = { -1, NULL, 0 };

/* A relative checkpoint's own, in r->state. */
struct ckpt_rel {
	struct ramdiff	*rd;
	int		 pipe[2];	/* QEMU writes [1], the monitor reads */
	struct event	 ev;
	int		 reading;
	int		 eof;		/* QEMU closed its end */
	int		 done;		/* and said the migration completed */
	uint64_t	 in;		/* bytes QEMU wrote */
};

static uint8_t		 ckpt_buf[CKPT_PIPE_BYTES];

static void	 ckpt_got_fd(struct vmm_req *, const struct qmp_msg *);
static void	 ckpt_settle(struct vmm_req *);
static void	 ckpt_settled(struct vmm_req *, const struct qmp_msg *);
static void	 ckpt_written(struct vmm_req *);
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

/*
 * At start, before the sandbox: the RAM file on fd, mapped read-only for
 * the relative checkpoints to compare with.  Its size is fixed while
 * clones map it; a QEMU of the same workspace that cut it short (QEMU
 * 7.2 opens it read-write) would fault this monitor, and that
 * workspace's clones, not another's.
 */
void
vmm_ram_init(int fd)
{
	struct stat	 st;
	void		*p;

	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    st.st_size % RAMDIFF_PAGE != 0)
		fatalx("fd %d is no RAM file", fd);
	if ((p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd,
	    0)) == MAP_FAILED)
		fatal("mmap the RAM file");
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) == -1)
		fatal("%s: fcntl", __func__);
	ram.fd = fd;
	ram.map = p;
	ram.len = (uint64_t)st.st_size;
}

/* Writes all of p to the checkpoint (ramdiff's sink). */
static int
ckpt_sink(void *arg, const uint8_t *p, size_t n)
{
	struct vmm_req	*r = arg;
	ssize_t		 w;

	while (n > 0) {
		if ((w = write(r->fd, p, n)) == -1 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/*
 * A filter against the RAM file as it is now: where it has data (a hole
 * reads as zeros; reading it would fill the page cache).  NULL if out of
 * memory.  Past CKPT_EXTENTS_MAX extents the rest counts as data, which
 * costs only reads.
 */
static struct ramdiff *
ckpt_filter(void)
{
	struct ramdiff	*rd;
	off_t		 at = 0, data, hole;
	int		 n;

	if ((rd = ramdiff_new(ram.map, ram.len, QEMU_RAM_ID)) == NULL)
		return NULL;
	for (n = 0; (uint64_t)at < ram.len; n++) {
		if (n == CKPT_EXTENTS_MAX) {
			ramdiff_data(rd, (uint64_t)at, ram.len - (uint64_t)at);
			break;
		}
		if ((data = lseek(ram.fd, at, SEEK_DATA)) == -1)
			break;		/* ENXIO: holes to the end */
		if ((hole = lseek(ram.fd, data, SEEK_HOLE)) == -1)
			hole = (off_t)ram.len;
		ramdiff_data(rd, (uint64_t)data, (uint64_t)(hole - data));
		at = hole;
	}
	return rd;
}

static void
ckpt_fail_write(struct vmm_req *r)
{
	vmm_fail(r, VMM_ERR_QMP, (uint32_t)(errno != 0 ? errno : EIO),
	    "the checkpoint could not be written");
}

/* QEMU wrote to the pipe, or closed it: through the filter it goes. */
static void
ckpt_pipe_read(int fd, short event, void *arg)
{
	struct vmm_req	*r = arg;
	struct ckpt_rel	*rel = r->state;
	ssize_t		 n;

	if ((n = read(fd, ckpt_buf, sizeof(ckpt_buf))) == -1) {
		if (errno == EINTR || errno == EAGAIN)
			return;
		ckpt_fail_write(r);
		return;
	}
	errno = 0;
	if (n > 0) {
		rel->in += (uint64_t)n;
		if (ramdiff_feed(rel->rd, ckpt_buf, (size_t)n, ckpt_sink,
		    r) == -1)
			ckpt_fail_write(r);
		return;
	}
	event_del(&rel->ev);
	rel->reading = 0;
	rel->eof = 1;
	if (ramdiff_end(rel->rd, ckpt_sink, r) == -1) {
		ckpt_fail_write(r);
		return;
	}
	if (rel->done)
		ckpt_written(r);
}

static void
ckpt_end(struct vmm_req *r)
{
	struct ckpt_rel	*rel = r->state;

	if (rel == NULL)
		return;
	if (rel->reading)
		event_del(&rel->ev);
	if (rel->pipe[0] != -1)
		close(rel->pipe[0]);
	if (rel->pipe[1] != -1)
		close(rel->pipe[1]);
	ramdiff_free(rel->rd);
	free(rel);
	r->state = NULL;
}

static void
ckpt_start(struct vmm_req *r, const union vmm_args *a)
{
	struct ckpt_rel	*rel;

	r->flag = a->checkpoint.durable;
	if (a->checkpoint.relative) {
		if (ram.map == NULL || a->checkpoint.shared) {
			vmm_fail(r, VMM_ERR_QMP, EINVAL, "a relative "
			    "checkpoint needs the RAM file QEMU maps "
			    "copy-on-write, and no x-ignore-shared");
			return;
		}
		if ((rel = calloc(1, sizeof(*rel))) == NULL)
			fatal("%s", __func__);
		rel->pipe[0] = rel->pipe[1] = -1;
		r->state = rel;
		if ((rel->rd = ckpt_filter()) == NULL)
			fatal("%s", __func__);
		if (pipe2(rel->pipe, O_CLOEXEC) == -1) {
			vmm_fail(r, VMM_ERR_QMP, (uint32_t)errno,
			    "cannot make the checkpoint's pipe");
			return;
		}
		/* Fewer turns between QEMU and the monitor; the default
		 * size works too, slower. */
		(void)fcntl(rel->pipe[1], F_SETPIPE_SZ, CKPT_PIPE_BYTES);
		event_set(&rel->ev, rel->pipe[0], EV_READ | EV_PERSIST,
		    ckpt_pipe_read, r);
	}
	ignore_shared(r, (int)a->checkpoint.shared, ckpt_capable);
}

static void
ckpt_capable(struct vmm_req *r, const struct qmp_msg *m)
{
	struct ckpt_rel	*rel = r->state;

	if (vmm_qmp_send_fd(r, "getfd", vmm_qmp_args("{s:s}", "fdname",
	    CKPT_FDNAME), rel != NULL ? rel->pipe[1] : r->fd,
	    ckpt_got_fd) == -1) {
		vmm_fail(r, VMM_ERR_QMP, (uint32_t)errno,
		    "cannot hand QEMU the checkpoint");
		return;
	}
	/* QEMU has its end: its close is the stream's end. */
	if (rel != NULL) {
		close(rel->pipe[1]);
		rel->pipe[1] = -1;
		event_add(&rel->ev, NULL);
		rel->reading = 1;
	}
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
	ckpt_settle(r);
}

static void
ckpt_settle(struct vmm_req *r)
{
	vmm_qmp_send(r, "query-status", NULL, ckpt_settled);
}

static void
ckpt_settled(struct vmm_req *r, const struct qmp_msg *m)
{
	struct ckpt_rel	*rel = r->state;

	if (!m->has_status) {
		vmm_fail(r, VMM_ERR_QMP, EBADMSG,
		    "query-status returned no status");
		return;
	}
	if (strcmp(m->status, "finish-migrate") == 0) {
		vmm_req_after(r, CKPT_SETTLE_MS, ckpt_settle);
		return;
	}
	/* The stream's end is QEMU's close of its pipe: then written. */
	if (rel != NULL && !rel->eof) {
		rel->done = 1;
		return;
	}
	ckpt_written(r);
}

static void
ckpt_written(struct vmm_req *r)
{
	struct ckpt_rel	*rel = r->state;
	struct stat	 st;
	uint64_t	 mib;

	if ((r->flag && fsync(r->fd) == -1) || fstat(r->fd, &st) == -1) {
		vmm_fail(r, VMM_ERR_QMP, (uint32_t)errno,
		    "the checkpoint could not be made durable");
		return;
	}
	mib = ((uint64_t)st.st_size + (1 << 20) - 1) >> 20;
	if (rel != NULL)
		log_info("checkpoint written, %llu MiB of the %llu QEMU "
		    "wrote: %llu pages the RAM file holds left out",
		    (unsigned long long)mib,
		    (unsigned long long)((rel->in + (1 << 20) - 1) >> 20),
		    (unsigned long long)ramdiff_dropped(rel->rd));
	else
		log_info("checkpoint written, %llu MiB",
		    (unsigned long long)mib);
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
    get_checkpoint, ckpt_start, ckpt_end);

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
