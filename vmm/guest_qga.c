/*
 * The guest side for qemu-guest-agent (QGA), on its virtio-serial port
 * org.qemu.guest_agent.0: for VMs from a workspace's own disks, whose
 * guests run no mcvm agent.  qga.c decodes its lines; this file maps the
 * monitor's requests onto its commands, one command in flight at a time
 * (the agent answers in order), each with its deadline.
 *
 * The session: 0xff and guest-sync-delimited, repeated until the agent
 * answers with that id (the guest may still be booting, or the agent not
 * installed); then guest-info and guest-get-osinfo, whose answers make
 * the guest up.  After a command's deadline, an answer that did not fit
 * or one that makes no sense, the session syncs again: the commands that
 * waited fail, and the guest is down until the agent answers.
 *
 * What QGA does not do as mcvm's agent does, said where it matters:
 *  - A job is guest-exec of /bin/sh -c under the guest's timeout(1),
 *    which puts it in a process group of its own: its timeout is
 *    timeout's, TERM then KILL, and a cancel kills that group (a
 *    descendant that left it with setsid lives on).  Its output comes
 *    only once it has exited, at most QGA_DATA_MAX bytes of both streams
 *    (more and the answer is refused: the job fails, its output lost);
 *    the monitor keeps of each what guestd keeps (outbuf.h).  Its state
 *    is polled (guest-exec-status), and the agent forgets a process once
 *    it has told its exit.  It runs as the agent's user (root), in
 *    /workspace if there is one (or its cwd), by /bin/sh, without a
 *    cgroup.
 *  - Files are guest-file-open/seek/read/write/close, a chunk per call;
 *    a write is not atomic, sets no mode and makes no directories, and
 *    symlinks are followed.  A listing is the guest's find(1), polled
 *    as a job is.  Paths are mcvm's: beneath /workspace, a relative one
 *    from there.
 *  - Jobs are not frozen: pausing stops the vCPUs, which stops them all.
 */
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <errno.h>
#include <event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "agent_proto.h"
#include "b64.h"
#include "guest.h"
#include "log.h"
#include "outbuf.h"
#include "proto.h"
#include "qga.h"
#include "qmp.h"
#include "vmm.h"

#define QGA_SYNC_RETRY_MS	1000	/* while the agent is silent */
#define QGA_CMD_TIMEOUT_MS	15000	/* a command's answer */
#define QGA_SHUTDOWN_WAIT_MS	3000	/* guest-shutdown answers only if
					   it failed */
#define QGA_POLL_MS		500	/* a running job's status */
#define QGA_QUEUE_MAX		64	/* commands waiting their turn */
#define QGA_QUEUE_BYTES_MAX	(2 * 1024 * 1024)	/* and their bytes */
#define QGA_JOBS_MAX		16	/* kept; the oldest ended go first */
#define QGA_KILL_GRACE		"5"	/* s from TERM to KILL, timeout -k */
#define QGA_TIMEOUT_EXIT	124	/* timeout(1): the command timed out */
#define QGA_KILLED_EXIT		137	/* ... and needed KILL */
#define QGA_DESC_SHOWN		120	/* of the agent's text, in ours */
#define QGA_MSG_MAX_TEXT	"512 KiB"	/* QGA_MSG_MAX, said */

_Static_assert(QGA_MSG_MAX == 512 * 1024, "QGA_MSG_MAX_TEXT");

_Static_assert(QGA_JOBS_MAX <= AGENT_JOBS_TOTAL_MAX, "INFO's job records");
_Static_assert(B64_ENCODED_LEN(AGENT_FILE_CHUNK_MAX) + 1024 <= QGA_CMD_MAX,
    "a file chunk's write does not fit a command");
_Static_assert(AGENT_FILE_CHUNK_MAX <= QGA_DATA_MAX,
    "a file chunk's read does not fit an answer");

enum qga_state {
	QGA_S_SYNC,		/* guest-sync-delimited sent, repeated */
	QGA_S_INFO,		/* guest-info, then guest-get-osinfo */
	QGA_S_READY,
	QGA_S_LOST,		/* closed: not read again */
};

struct qga_cmd;
typedef void	(*qga_cont)(struct qga_cmd *, const struct qga_reply *);

/* A command, queued or in flight; r is NULL once nobody waits. */
struct qga_cmd {
	TAILQ_ENTRY(qga_cmd)	 entry;
	uint32_t		 id;
	struct vmm_req		*r;
	qga_cont		 cont;
	void			*arg;
	uint32_t		 timeout_ms;
	int			 quiet;		/* success has no answer */
	size_t			 len;
	char			 line[];
};
TAILQ_HEAD(qga_cmdq, qga_cmd);

struct qga_job {
	uint32_t	 id;		/* the monitor's number, not 0 */
	int32_t		 pid;		/* the guest's */
	uint8_t		 state;		/* AGENT_JOB_* */
	int		 exited;
	int		 polling;	/* a guest-exec-status in flight */
	int32_t		 kill_pid;	/* its cancel's kill, until the agent
					   has told its exit and forgot it */
	int		 kill_polling;
	int		 grouped;	/* under timeout(1): its own group */
	int32_t		 exit_code;
	int32_t		 signal;
	uint32_t	 timeout_ms;	/* 0: none */
	uint64_t	 start_ms, end_ms;
	struct outbuf	 out;
};

/* A file call of several commands; data is the write's, copied. */
struct qga_file {
	struct vmm_req	*r;
	int		 step;		/* enum qga_file_step */
	int		 write;
	int64_t		 handle;	/* -1 until opened */
	uint32_t	 flags;
	uint64_t	 offset;
	uint64_t	 size;
	uint32_t	 length;
	uint32_t	 encoding;
	size_t		 written;
	uint8_t		*data;
	size_t		 len;
	uint8_t		 buf[AGENT_FILE_CHUNK_MAX];
	size_t		 got;
	int		 eof;
	char		 error[AGENT_ERRMSG_MAX];	/* once it failed */
	uint32_t	 code;		/* its AGENT_ERR_* */
};

/* A FILE_LIST's process in the guest, while r waits for it. */
struct qga_listing {
	struct vmm_req	*r;
	int32_t		 pid;		/* 0 until it has started */
	uint32_t	 max;		/* entries asked for */
};

/* A JOB_READ waiting for its job's end, or its wait's. */
struct qga_wait {
	struct vmm_req		*r;
	struct msg_vmm_job_read	 x;
};

static struct {
	struct vmm_io	 io;
	struct qga_parser parser;
	enum qga_state	 state;
	uint32_t	 sync_first, sync_last;
	struct event	 sync_timer;
	struct event	 cmd_timer;
	struct event	 poll_timer;
	struct qga_cmdq	 queue;
	size_t		 queued;
	size_t		 queued_bytes;
	struct qga_cmd	*inflight;
	char		 version[QGA_TEXT_MAX];
	char		 os[AGENT_INFO_STR_MAX];
	char		 kernel[AGENT_INFO_STR_MAX];
	struct qga_job	 jobs[QGA_JOBS_MAX];
	uint32_t	 next_job;
	struct qga_wait	 waits[VMM_REQ_MAX];
	struct qga_listing listings[VMM_REQ_MAX];
	uint8_t		 rx[VMM_READ_MAX];
	char		 line[QGA_CMD_MAX];
	uint8_t		 out[QGA_DATA_MAX];
	uint8_t		 err[QGA_DATA_MAX];
} qga;

static void	 qga_sync(const char *);
static void	 qga_next(void);
static void	 qga_poll_arm(void);

static uint64_t
qga_now_ms(void)
{
	struct timespec	 ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) == -1)
		fatal("clock_gettime");
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * A path as the guest takes it, as mcvm's agent does: a relative one
 * from /workspace (mcvmd lets no other through).
 */
static void
qga_path(const char *path, char *out, size_t len)
{
	if (path[0] == '/')
		(void)snprintf(out, len, "%s", path);
	else
		(void)snprintf(out, len, "%s/%s", AGENT_WORKSPACE, path);
}

static void
qga_timer_add(struct event *ev, uint32_t ms)
{
	struct timeval	 tv = { ms / 1000, (ms % 1000) * 1000 };

	evtimer_add(ev, &tv);
}

/* --- commands */

/*
 * Queues cmd with args (taken, NULL for none), for r or for nobody.
 * Returns 0, or -1 if it cannot be encoded or too many wait: r is then
 * the caller's still.
 */
static int
qga_cmd(struct vmm_req *r, const char *cmd, json_t *args, qga_cont cont,
    void *arg)
{
	struct qga_cmd	*c;
	uint32_t	 id = vmm_wire_id();
	int		 n;

	n = qmp_encode_command(qga.line, sizeof(qga.line), cmd, args, id);
	json_decref(args);
	if (n == -1 || qga.queued >= QGA_QUEUE_MAX ||
	    qga.queued_bytes + (size_t)n > QGA_QUEUE_BYTES_MAX)
		return -1;
	if ((c = malloc(sizeof(*c) + (size_t)n)) == NULL)
		fatal("%s", __func__);
	c->id = id;
	c->r = r;
	c->cont = cont;
	c->arg = arg;
	c->timeout_ms = QGA_CMD_TIMEOUT_MS;
	c->quiet = 0;
	c->len = (size_t)n;
	memcpy(c->line, qga.line, (size_t)n);
	TAILQ_INSERT_TAIL(&qga.queue, c, entry);
	qga.queued++;
	qga.queued_bytes += c->len;
	qga_next();
	return 0;
}

/* The next command goes once the agent is synced and none is out. */
static void
qga_next(void)
{
	struct qga_cmd	*c;

	if (qga.inflight != NULL || (qga.state != QGA_S_READY &&
	    qga.state != QGA_S_INFO) ||
	    (c = TAILQ_FIRST(&qga.queue)) == NULL)
		return;
	TAILQ_REMOVE(&qga.queue, c, entry);
	qga.queued--;
	qga.queued_bytes -= c->len;
	qga.inflight = c;
	vmm_io_queue(&qga.io, c->line, c->len, NULL);
	qga_timer_add(&qga.cmd_timer, c->timeout_ms);
}

/* What a command gets that has no answer: why, as QGA_BAD. */
static void
qga_no_answer(struct qga_reply *rep, const char *why)
{
	memset(rep, 0, sizeof(*rep));
	rep->kind = QGA_BAD;
	(void)snprintf(rep->err_desc, sizeof(rep->err_desc), "%s", why);
}

/* The command in flight is answered (or given up on): its turn ends. */
static void
qga_done(const struct qga_reply *rep)
{
	struct qga_cmd	*c = qga.inflight;

	evtimer_del(&qga.cmd_timer);
	qga.inflight = NULL;
	c->cont(c, rep);
	free(c);
}

/* Every waiting command fails with why (its continuation may queue). */
static void
qga_fail_queued(const char *why)
{
	struct qga_cmdq	 q;
	struct qga_cmd	*c;
	struct qga_reply rep;

	qga_no_answer(&rep, why);
	TAILQ_INIT(&q);
	TAILQ_CONCAT(&q, &qga.queue, entry);
	qga.queued = qga.queued_bytes = 0;
	while ((c = TAILQ_FIRST(&q)) != NULL) {
		TAILQ_REMOVE(&q, c, entry);
		c->cont(c, &rep);
		free(c);
	}
}

static void
qga_cmd_timeout(int fd, short event, void *arg)
{
	struct qga_reply rep;
	char		 why[64];

	memset(&rep, 0, sizeof(rep));
	if (qga.inflight->quiet) {
		rep.kind = QGA_RETURN;	/* no answer: it went ahead */
		qga_done(&rep);
		qga_next();
		return;
	}
	(void)snprintf(why, sizeof(why), "qemu-guest-agent did not answer "
	    "within %u s", qga.inflight->timeout_ms / 1000);
	qga_no_answer(&rep, why);
	log_warnx("%s", rep.err_desc);
	qga_done(&rep);
	qga_sync("qemu-guest-agent stopped answering");
}

/* A failure's text for r: the agent's error, or why there was none. */
static void
qga_fail(struct vmm_req *r, const struct qga_reply *rep, const char *what)
{
	char	 text[AGENT_ERRMSG_MAX];

	(void)snprintf(text, sizeof(text), "qemu-guest-agent could not %s: "
	    "%.*s", what, QGA_DESC_SHOWN, rep->err_desc[0] != '\0' ?
	    rep->err_desc : "its answer makes no sense");
	vmm_fail(r, rep->kind == QGA_ERROR ? AGENT_ERR_IO : AGENT_ERR_PROTO,
	    rep->kind == QGA_ERROR ? EIO : EBADMSG, text);
}

/* --- the session */

static int
qga_is_sync_id(uint32_t id)
{
	return qga.sync_first != 0 && id >= qga.sync_first &&
	    id <= qga.sync_last;
}

static void
qga_sync_send(void)
{
	static const uint8_t	 delim = QGA_DELIM;
	uint32_t		 id;
	int			 n;

	if (qga.state != QGA_S_SYNC)
		return;
	/* Nothing new is queued while the last is still unsent. */
	if (TAILQ_EMPTY(&qga.io.wq)) {
		id = vmm_wire_id();
		n = qmp_encode_command(qga.line, sizeof(qga.line),
		    "guest-sync-delimited", json_pack("{s:I}", "id",
		    (json_int_t)id), id);
		if (n == -1)
			fatalx("%s: cannot encode guest-sync-delimited",
			    __func__);
		if (qga.sync_first == 0)
			qga.sync_first = id;
		qga.sync_last = id;
		/* 0xff first: the agent drops what it had of a line. */
		vmm_io_queue(&qga.io, &delim, 1, NULL);
		vmm_io_queue(&qga.io, qga.line, (size_t)n, NULL);
	}
	qga_timer_add(&qga.sync_timer, QGA_SYNC_RETRY_MS);
}

static void
qga_sync_timer(int fd, short event, void *arg)
{
	qga_sync_send();
}

/*
 * The session starts over: the commands that waited fail, and the guest
 * is down until the agent answers a new sync.  A handshake that failed
 * is tried again a retry later, so that an agent that always fails it
 * does not keep the monitor busy.
 */
static void
qga_sync(const char *why)
{
	enum qga_state	 was = qga.state;

	if (was == QGA_S_LOST)
		return;
	if (was == QGA_S_READY) {
		log_warnx("qemu-guest-agent: %s; syncing again", why);
		vmm_event(VMM_EV_GUEST_LOST, why);
	}
	qga.state = QGA_S_SYNC;
	qga.sync_first = qga.sync_last = 0;
	evtimer_del(&qga.sync_timer);
	qga_fail_queued(why);
	if (was == QGA_S_INFO)
		qga_timer_add(&qga.sync_timer, QGA_SYNC_RETRY_MS);
	else
		qga_sync_send();
}

static void
qga_lost(const char *why)
{
	struct qga_reply rep;

	if (qga.state == QGA_S_LOST)
		return;
	log_warnx("qemu-guest-agent channel lost: %s", why);
	if (qga.state == QGA_S_READY)
		vmm_event(VMM_EV_GUEST_LOST, why);
	qga.state = QGA_S_LOST;
	evtimer_del(&qga.sync_timer);
	evtimer_del(&qga.poll_timer);
	vmm_io_stop_reading(&qga.io);
	vmm_io_drop_queue(&qga.io);
	qga_fail_queued(why);
	if (qga.inflight != NULL) {
		qga_no_answer(&rep, why);
		qga_done(&rep);
	}
	vmm_req_fail_all(VMM_CHAN_GUEST, VMM_ERR_GUEST_DOWN, EPIPE, why);
}

static void
qga_got_osinfo(struct qga_cmd *c, const struct qga_reply *rep)
{
	/* An agent without guest-get-osinfo (before 2.10) names no OS. */
	qga.os[0] = qga.kernel[0] = '\0';
	if (rep->kind == QGA_RETURN && rep->ret != NULL)
		(void)qga_ret_osinfo(rep->ret, qga.os, sizeof(qga.os),
		    qga.kernel, sizeof(qga.kernel));
	else if (rep->kind == QGA_BAD)
		return;		/* the session syncs again */
	qga.state = QGA_S_READY;
	vmm_guest_up(qga.version, qga.os, qga.kernel);
	qga_poll_arm();
}

static void
qga_got_info(struct qga_cmd *c, const struct qga_reply *rep)
{
	char	 version[QGA_TEXT_MAX];

	if (rep->kind != QGA_RETURN || qga_ret_info(rep->ret, version,
	    sizeof(version)) == -1) {
		if (rep->kind != QGA_BAD)
			qga_sync("its guest-info makes no sense");
		return;
	}
	(void)snprintf(qga.version, sizeof(qga.version),
	    "qemu-guest-agent %.*s", QGA_DESC_SHOWN, version);
	if (qga_cmd(NULL, "guest-get-osinfo", NULL, qga_got_osinfo,
	    NULL) == -1)
		fatalx("%s: cannot queue guest-get-osinfo", __func__);
}

/* The agent answered a sync: the session begins. */
static void
qga_synced(void)
{
	evtimer_del(&qga.sync_timer);
	qga.state = QGA_S_INFO;
	log_debug("qemu-guest-agent synced");
	if (qga_cmd(NULL, "guest-info", NULL, qga_got_info, NULL) == -1)
		fatalx("%s: cannot queue guest-info", __func__);
}

static int
qga_up(const char **why)
{
	if (qga.state == QGA_S_READY)
		return 1;
	if (why != NULL)
		*why = qga.state == QGA_S_LOST ? "the qemu-guest-agent "
		    "channel is lost" : "qemu-guest-agent is not answering: "
		    "install and start qemu-guest-agent in the guest (on "
		    "its port " QGA_PORT_NAME ")";
	return 0;
}

/* One line from the agent. */
static void
qga_reply(const struct qga_reply *rep, void *arg)
{
	int64_t	 id;

	if (qga.state == QGA_S_LOST)
		return;
	if (qga.state == QGA_S_SYNC) {
		/*
		 * Only the sync's answer counts, the id it was given back
		 * (and its own, if echoed): the rest is stale.
		 */
		if (rep->kind == QGA_RETURN && qga_ret_int(rep->ret, 1,
		    UINT32_MAX, &id) == 0 && qga_is_sync_id((uint32_t)id) &&
		    (!rep->has_id || rep->id == (uint32_t)id))
			qga_synced();
		return;
	}
	if (rep->kind == QGA_OVERSIZE || rep->kind == QGA_BAD) {
		log_warnx("qemu-guest-agent: %s", rep->err_desc);
		if (qga.inflight != NULL)
			qga_done(rep);
		qga_sync(rep->err_desc);
		return;
	}
	/* The agent gives each answer its command's id back. */
	if (qga.inflight == NULL || !rep->has_id ||
	    rep->id != qga.inflight->id) {
		log_debug("qemu-guest-agent: an answer to no command in "
		    "flight");
		return;
	}
	qga_done(rep);
	qga_next();
}

static void
qga_read(int fd, short event, void *arg)
{
	ssize_t	 n;

	n = recv(fd, qga.rx, sizeof(qga.rx), MSG_DONTWAIT);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		qga_lost(n == 0 || errno == ECONNRESET ?
		    "agent channel closed" : "agent channel failed");
		return;
	}
	qga_input(&qga.parser, qga.rx, (size_t)n, qga_reply, NULL);
}

static void
qga_write(int fd, short event, void *arg)
{
	if (vmm_io_flush(&qga.io) == -1)
		qga_lost("agent channel closed");
}

/* --- jobs */

static struct qga_job *
qga_job_find(uint32_t id)
{
	size_t	 i;

	for (i = 0; i < QGA_JOBS_MAX; i++)
		if (qga.jobs[i].id == id && id != 0)
			return &qga.jobs[i];
	return NULL;
}

static size_t
qga_jobs_running(void)
{
	size_t	 i, n = 0;

	for (i = 0; i < QGA_JOBS_MAX; i++)
		if (qga.jobs[i].id != 0 && !qga.jobs[i].exited)
			n++;
	return n;
}

/* A free slot, or the one of the job that ended first. */
static struct qga_job *
qga_job_slot(void)
{
	struct qga_job	*j, *old = NULL;
	size_t		 i;

	for (i = 0; i < QGA_JOBS_MAX; i++) {
		j = &qga.jobs[i];
		if (j->id == 0)
			return j;
		if (j->exited && j->kill_pid == 0 && (old == NULL ||
		    j->end_ms < old->end_ms))
			old = j;
	}
	if (old != NULL)
		outbuf_free(&old->out);
	return old;
}

static void
qga_job_status(const struct qga_job *j, struct agent_job_status *st)
{
	uint64_t	 end = j->exited ? j->end_ms : qga_now_ms();

	memset(st, 0, sizeof(*st));
	st->job = j->id;
	st->state = j->state;
	st->out_eof = st->err_eof = j->exited ? 1 : 0;
	st->exit_code = j->exit_code;
	st->signal = j->signal;
	st->out_total = j->out.s[OUT_STDOUT].total;
	st->err_total = j->out.s[OUT_STDERR].total;
	outbuf_gap(&j->out, OUT_STDOUT, &st->out_gap, &st->out_dropped);
	outbuf_gap(&j->out, OUT_STDERR, &st->err_gap, &st->err_dropped);
	st->runtime_ms = end - j->start_ms;
}

/* A job unknown: never given, or evicted since. */
static void
qga_no_job(struct vmm_req *r, uint32_t id)
{
	if (id != 0 && id <= qga.next_job)
		vmm_fail(r, AGENT_ERR_EXPIRED, ENOENT, "the job ended and "
		    "was evicted by newer ones");
	else
		vmm_fail(r, AGENT_ERR_NOJOB, ENOENT, "no such job");
}

/* A note of the monitor's at the end of the job's stderr. */
static void
qga_job_note(struct qga_job *j, const char *note)
{
	outbuf_append(&j->out, OUT_STDERR, (const uint8_t *)note,
	    strlen(note));
}

/* The answer to a JOB_READ: a page of each stream from its cursors. */
static void
qga_read_answer(struct vmm_req *r, const struct msg_vmm_job_read *x)
{
	static uint8_t		 out[AGENT_PAGE_MAX], err[AGENT_PAGE_MAX];
	struct qga_job		*j;
	struct agent_msg	 m;

	if ((j = qga_job_find(x->job)) == NULL) {
		qga_no_job(r, x->job);
		return;
	}
	if (x->out_cursor > j->out.s[OUT_STDOUT].total ||
	    x->err_cursor > j->out.s[OUT_STDERR].total) {
		vmm_fail(r, AGENT_ERR_INVAL, EINVAL, "a cursor beyond the "
		    "output");
		return;
	}
	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_JOB_READ;
	qga_job_status(j, &m.u.output.st);
	m.u.output.out_cursor = x->out_cursor;
	m.u.output.err_cursor = x->err_cursor;
	m.u.output.out_len = (uint32_t)outbuf_page(&j->out, OUT_STDOUT,
	    x->out_cursor, x->out_max, out, &m.u.output.out_skipped);
	m.u.output.err_len = (uint32_t)outbuf_page(&j->out, OUT_STDERR,
	    x->err_cursor, x->err_max, err, &m.u.output.err_skipped);
	m.u.output.out = out;
	m.u.output.err = err;
	r->g_kind = AGENT_JOB_READ;
	vmm_guest_answer(r, &m);
}

static struct qga_wait *
qga_wait_find(const struct vmm_req *r)
{
	size_t	 i;

	for (i = 0; i < VMM_REQ_MAX; i++)
		if (qga.waits[i].r == r)
			return &qga.waits[i];
	return NULL;
}

/* A read's wait is over: it answers with what there is. */
static void
qga_wait_over(struct vmm_req *r)
{
	struct qga_wait		*w = qga_wait_find(r);
	struct msg_vmm_job_read	 x;

	if (w == NULL)
		fatalx("%s: a wait not kept", __func__);
	x = w->x;
	w->r = NULL;
	qga_read_answer(r, &x);
}

/* The job ended: the reads that wait for it answer now. */
static void
qga_job_ended(struct qga_job *j)
{
	size_t	 i;

	j->end_ms = qga_now_ms();
	j->exited = 1;
	for (i = 0; i < VMM_REQ_MAX; i++)
		if (qga.waits[i].r != NULL && qga.waits[i].x.job == j->id)
			qga_wait_over(qga.waits[i].r);
}

/* How it ended, as guestd would say: timeout(1)'s codes are its own. */
static void
qga_job_exit(struct qga_job *j, const struct qga_exec_status *st)
{
	uint64_t	 ran = qga_now_ms() - j->start_ms;
	int		 timed_out;

	timed_out = j->grouped && st->has_code &&
	    (st->code == QGA_TIMEOUT_EXIT || st->code == QGA_KILLED_EXIT) &&
	    ran + QGA_POLL_MS >= j->timeout_ms;
	if (j->state == AGENT_JOB_RUNNING && timed_out) {
		j->state = AGENT_JOB_TIMED_OUT;
		j->exit_code = -1;
		j->signal = st->code == QGA_TIMEOUT_EXIT ? SIGTERM : SIGKILL;
	} else if (j->state == AGENT_JOB_RUNNING) {
		j->state = AGENT_JOB_COMPLETED;
		j->exit_code = st->has_code ? st->code : -1;
		j->signal = st->has_signal ? st->signal : 0;
	}
	outbuf_append(&j->out, OUT_STDOUT, qga.out, st->out_len);
	outbuf_append(&j->out, OUT_STDERR, qga.err, st->err_len);
	if (st->out_truncated || st->err_truncated)
		qga_job_note(j, "\n[mcvm: qemu-guest-agent kept only the "
		    "first part of this job's output]\n");
	j->out.s[OUT_STDOUT].eof = j->out.s[OUT_STDERR].eof = 1;
	qga_job_ended(j);
}

/* A job whose status is lost: what is known of it, and why. */
static void
qga_job_lost(struct qga_job *j, const char *why)
{
	char	 note[AGENT_ERRMSG_MAX + 64];

	if (j->exited)
		return;
	if (j->state == AGENT_JOB_RUNNING)
		j->state = AGENT_JOB_FAILED;
	j->exit_code = -1;
	(void)snprintf(note, sizeof(note), "\n[mcvm: %s]\n", why);
	qga_job_note(j, note);
	j->out.s[OUT_STDOUT].eof = j->out.s[OUT_STDERR].eof = 1;
	qga_job_ended(j);
}

static void
qga_got_exec_status(struct qga_cmd *c, const struct qga_reply *rep)
{
	struct qga_job		*j = qga_job_find((uint32_t)(uintptr_t)c->arg);
	struct qga_exec_status	 st;

	if (j == NULL)
		return;
	j->polling = 0;
	if (rep->kind == QGA_OVERSIZE) {
		/* The agent told the exit with it, and forgot the process. */
		qga_job_lost(j, "its output was more than the monitor takes "
		    "from qemu-guest-agent (an answer of at most "
		    QGA_MSG_MAX_TEXT " of base64): it is lost with its exit "
		    "status; redirect it to a file in the guest and read "
		    "that with vm_read_file");
		return;
	}
	if (rep->kind == QGA_BAD)
		return;		/* polled again once synced */
	if (rep->kind == QGA_ERROR) {
		qga_job_lost(j, "qemu-guest-agent no longer knows the "
		    "process (the guest or its agent restarted): its exit "
		    "status and output are lost");
		return;
	}
	if (qga_ret_exec_status(rep->ret, &st, qga.out, qga.err) == -1) {
		qga_job_lost(j, "qemu-guest-agent's guest-exec-status made "
		    "no sense");
		qga_sync("a guest-exec-status that makes no sense");
		return;
	}
	if (st.exited)
		qga_job_exit(j, &st);
}

/* A cancel's kill has exited, or the agent knows it no more. */
static void
qga_got_kill_status(struct qga_cmd *c, const struct qga_reply *rep)
{
	struct qga_job		*j = qga_job_find((uint32_t)(uintptr_t)c->arg);
	struct qga_exec_status	 st;

	if (j == NULL)
		return;
	j->kill_polling = 0;
	if (rep->kind == QGA_ERROR || (rep->kind == QGA_RETURN &&
	    qga_ret_exec_status(rep->ret, &st, qga.out, qga.err) == 0 &&
	    st.exited))
		j->kill_pid = 0;
}

/* Whether a job has a process the agent keeps for us. */
static int
qga_job_polled(const struct qga_job *j)
{
	return j->id != 0 && ((j->pid != 0 && !j->exited) ||
	    j->kill_pid != 0);
}

static void
qga_poll(int fd, short event, void *arg)
{
	struct qga_job	*j;
	size_t		 i;

	if (qga.state != QGA_S_READY)
		return;		/* armed again once synced */
	for (i = 0; i < QGA_JOBS_MAX; i++) {
		j = &qga.jobs[i];
		if (j->id == 0)
			continue;
		if (j->pid != 0 && !j->exited && !j->polling &&
		    qga_cmd(NULL, "guest-exec-status", json_pack("{s:i}",
		    "pid", (int)j->pid), qga_got_exec_status,
		    (void *)(uintptr_t)j->id) == 0)
			j->polling = 1;
		if (j->kill_pid != 0 && !j->kill_polling &&
		    qga_cmd(NULL, "guest-exec-status", json_pack("{s:i}",
		    "pid", (int)j->kill_pid), qga_got_kill_status,
		    (void *)(uintptr_t)j->id) == 0)
			j->kill_polling = 1;
	}
	qga_poll_arm();
}

static void
qga_poll_arm(void)
{
	size_t	 i;

	if (evtimer_pending(&qga.poll_timer, NULL))
		return;
	for (i = 0; i < QGA_JOBS_MAX; i++)
		if (qga_job_polled(&qga.jobs[i])) {
			qga_timer_add(&qga.poll_timer, QGA_POLL_MS);
			return;
		}
}

static void
qga_exec_started(struct qga_cmd *c, const struct qga_reply *rep)
{
	struct qga_job		*j = c->arg;
	struct agent_msg	 m;
	int32_t			 pid;

	if (rep->kind != QGA_RETURN || qga_ret_exec(rep->ret, &pid) == -1) {
		j->id = 0;
		outbuf_free(&j->out);
		if (c->r != NULL)
			qga_fail(c->r, rep, "start the command");
		return;
	}
	j->pid = pid;
	j->start_ms = qga_now_ms();
	qga_poll_arm();
	if (c->r == NULL)
		return;		/* it runs, and is kept, unasked */
	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_EXEC;
	m.u.job.job = j->id;
	c->r->g_kind = AGENT_EXEC;
	vmm_guest_answer(c->r, &m);
}

/*
 * The command line: /bin/sh -c, in its cwd (beneath /workspace), or in
 * /workspace if the guest has one, under the guest's timeout(1) if it
 * has a timeout.  A shell before it changes directory, as guest-exec
 * cannot.
 */
static json_t *
qga_exec_args(const struct msg_vmm_exec *x, int grouped)
{
	json_t		*a = json_array(), *env = json_array(), *args;
	char		 secs[16], cwd[AGENT_PATH_MAX + sizeof(AGENT_WORKSPACE)];
	uint32_t	 i;

	if (a == NULL || env == NULL)
		fatalx("%s: json", __func__);
	if (grouped) {
		(void)snprintf(secs, sizeof(secs), "%u",
		    (x->timeout_ms + 999) / 1000);
		json_array_append_new(a, json_string("-k"));
		json_array_append_new(a, json_string(QGA_KILL_GRACE));
		json_array_append_new(a, json_string(secs));
		json_array_append_new(a, json_string("/bin/sh"));
	}
	json_array_append_new(a, json_string("-c"));
	if (x->cwd[0] != '\0') {
		qga_path(x->cwd, cwd, sizeof(cwd));
		json_array_append_new(a, json_string("cd -- \"$1\" || exit; "
		    "exec /bin/sh -c \"$2\""));
	} else {
		(void)snprintf(cwd, sizeof(cwd), "%s", AGENT_WORKSPACE);
		json_array_append_new(a, json_string("cd -- \"$1\" "
		    "2>/dev/null; exec /bin/sh -c \"$2\""));
	}
	json_array_append_new(a, json_string("mcvm-exec"));
	json_array_append_new(a, json_string(cwd));
	json_array_append_new(a, json_string(x->argv[0]));
	args = json_pack("{s:s, s:o, s:b}", "path", grouped ? "timeout" :
	    "/bin/sh", "arg", a, "capture-output", 1);
	if (args == NULL)
		fatalx("%s: json_pack", __func__);
	/* Given, it is all the environment: the agent's is not kept. */
	for (i = 0; i < x->envc && i < AGENT_ENVC_MAX; i++)
		json_array_append_new(env, json_string(x->env[i]));
	if (x->envc > 0)
		json_object_set_new(args, "env", env);
	else
		json_decref(env);
	return args;
}

static void
qga_exec(struct vmm_req *r, const struct msg_vmm_exec *x)
{
	static char		 b64[B64_ENCODED_LEN(AGENT_STDIN_MAX) + 1];
	struct qga_job		*j;
	json_t			*args;

	if (!(x->flags & AGENT_EXEC_SHELL) || x->argc != 1) {
		vmm_fail(r, AGENT_ERR_INVAL, EINVAL, "qemu-guest-agent runs "
		    "shell commands only");
		return;
	}
	if (qga_jobs_running() >= AGENT_JOBS_ACTIVE_MAX ||
	    (j = qga_job_slot()) == NULL) {
		vmm_fail(r, AGENT_ERR_LIMIT, EBUSY, "too many jobs running");
		return;
	}
	memset(j, 0, sizeof(*j));
	if (++qga.next_job == 0)
		qga.next_job = 1;
	j->id = qga.next_job;
	j->state = AGENT_JOB_RUNNING;
	j->timeout_ms = x->timeout_ms;
	j->grouped = x->timeout_ms > 0;
	outbuf_init(&j->out, AGENT_JOB_HEAD_MAX, AGENT_JOB_TAIL_MAX);
	args = qga_exec_args(x, j->grouped);
	if (x->input_len > 0) {
		(void)b64_encode(x->input, x->input_len, b64);
		json_object_set_new(args, "input-data", json_string(b64));
	}
	if (qga_cmd(r, "guest-exec", args, qga_exec_started, j) == -1) {
		j->id = 0;
		outbuf_free(&j->out);
		vmm_fail(r, VMM_ERR_BUSY, EBUSY, "the command does not fit "
		    "qemu-guest-agent's channel, or too many requests wait");
	}
}

static void
qga_job_answer(struct vmm_req *r, const struct qga_job *j)
{
	struct agent_msg	 m;

	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_JOB_STATUS;
	qga_job_status(j, &m.u.status.st);
	r->g_kind = AGENT_JOB_STATUS;
	vmm_guest_answer(r, &m);
}

static void
qga_job_status_op(struct vmm_req *r, uint32_t id)
{
	struct qga_job	*j;

	if ((j = qga_job_find(id)) == NULL || j->pid == 0) {
		qga_no_job(r, id);
		return;
	}
	qga_job_answer(r, j);
}

static void
qga_killed(struct qga_cmd *c, const struct qga_reply *rep)
{
	struct qga_job	*j = qga_job_find((uint32_t)(uintptr_t)c->arg);
	int32_t		 pid;

	if (rep->kind != QGA_RETURN || qga_ret_exec(rep->ret, &pid) == -1) {
		/* Not killed: it runs on, as it says. */
		if (j != NULL && !j->exited) {
			j->state = AGENT_JOB_RUNNING;
			j->exit_code = j->signal = 0;
		}
		if (c->r != NULL)
			qga_fail(c->r, rep, "kill the job");
		return;
	}
	/* Polled too, so that the agent forgets it. */
	if (j != NULL) {
		j->kill_pid = pid;
		qga_poll_arm();
	}
	if (c->r == NULL)
		return;
	if (j == NULL)
		qga_no_job(c->r, (uint32_t)(uintptr_t)c->arg);
	else
		qga_job_answer(c->r, j);
}

/*
 * A cancel: SIGKILL to the job's process group (timeout(1) made one),
 * or to its process alone, by the guest's kill, as the agent has no
 * such command.  Its end is polled as any other.
 */
static void
qga_job_cancel(struct vmm_req *r, uint32_t id)
{
	struct qga_job	*j;
	char		 cmd[64];
	json_t		*args;

	if ((j = qga_job_find(id)) == NULL || j->pid == 0) {
		qga_no_job(r, id);
		return;
	}
	if (j->exited || j->state != AGENT_JOB_RUNNING) {
		qga_job_answer(r, j);
		return;
	}
	(void)snprintf(cmd, sizeof(cmd), "kill -s KILL -- %s%d",
	    j->grouped ? "-" : "", (int)j->pid);
	args = json_pack("{s:s, s:[s, s], s:b}", "path", "/bin/sh", "arg",
	    "-c", cmd, "capture-output", 0);
	if (qga_cmd(r, "guest-exec", args, qga_killed,
	    (void *)(uintptr_t)j->id) == -1) {
		vmm_fail(r, VMM_ERR_BUSY, EBUSY, "too many requests wait");
		return;
	}
	j->state = AGENT_JOB_CANCELLED;
	j->exit_code = -1;
	j->signal = SIGKILL;
}

static void
qga_job_read(struct vmm_req *r, const struct msg_vmm_job_read *x)
{
	struct qga_job	*j;
	struct qga_wait	*w;

	if ((j = qga_job_find(x->job)) == NULL || j->pid == 0) {
		qga_no_job(r, x->job);
		return;
	}
	if (j->exited || x->wait_ms == 0) {
		qga_read_answer(r, x);
		return;
	}
	if ((w = qga_wait_find(NULL)) == NULL)
		fatalx("%s: more waits than requests", __func__);
	w->r = r;
	w->x = *x;
	vmm_req_after(r, x->wait_ms, qga_wait_over);
}

/* --- files */

static void	 qga_file_step(struct qga_file *, const struct qga_reply *);

static struct qga_file *
qga_file_new(struct vmm_req *r)
{
	struct qga_file	*f;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		fatal("%s", __func__);
	f->r = r;
	f->handle = -1;
	return f;
}

static void
qga_file_cont(struct qga_cmd *c, const struct qga_reply *rep)
{
	struct qga_file	*f = c->arg;

	f->r = c->r;
	qga_file_step(f, rep);
}

/* The call is over: its answer, or its failure, to r if it still waits. */
static void
qga_file_end(struct qga_file *f)
{
	struct agent_msg	 m;

	if (f->r != NULL && f->error[0] != '\0')
		vmm_fail(f->r, f->code, f->code == AGENT_ERR_IO ? EIO :
		    EBADMSG, f->error);
	else if (f->r != NULL) {
		memset(&m, 0, sizeof(m));
		if (f->write) {
			m.type = AGENT_REPLY | AGENT_FILE_WRITE;
			m.u.file_written.size = f->size;
			m.u.file_written.written = (uint32_t)f->written;
			f->r->g_kind = AGENT_FILE_WRITE;
		} else {
			m.type = AGENT_REPLY | AGENT_FILE_READ;
			m.u.file_data.offset = f->offset;
			m.u.file_data.size = f->size;
			m.u.file_data.eof = f->eof ||
			    f->offset + f->got >= f->size;
			m.u.file_data.data = f->buf;
			m.u.file_data.len = (uint32_t)f->got;
			f->r->g_kind = AGENT_FILE_READ;
			f->r->g_enc = f->encoding;
		}
		vmm_guest_answer(f->r, &m);
	}
	free(f->data);
	free(f);
}

/*
 * The call failed at what: kept as its answer, after its handle is
 * closed, if it has one (the agent keeps a handle until it is).
 */
static void
qga_file_fail(struct qga_file *f, const struct qga_reply *rep,
    const char *what)
{
	int	 notfound;

	notfound = rep->kind == QGA_ERROR &&
	    strstr(rep->err_desc, "No such file") != NULL;
	f->code = rep->kind == QGA_ERROR ? (notfound ? AGENT_ERR_NOENT :
	    AGENT_ERR_IO) : AGENT_ERR_PROTO;
	(void)snprintf(f->error, sizeof(f->error), "qemu-guest-agent could "
	    "not %s: %.*s%s", what, QGA_DESC_SHOWN, rep->err_desc[0] != '\0' ?
	    rep->err_desc :
	    "its answer makes no sense", notfound && f->write ? " (it makes "
	    "no directories: make them with vm_exec and mkdir -p)" : "");
	if (f->handle != -1 && qga.state != QGA_S_LOST &&
	    qga_cmd(f->r, "guest-file-close", json_pack("{s:I}", "handle",
	    (json_int_t)f->handle), qga_file_cont, f) == 0) {
		f->handle = -1;
		return;
	}
	qga_file_end(f);
}

/* The call's next command. */
static void
qga_file_next(struct qga_file *f, const char *cmd, json_t *args)
{
	struct qga_reply busy;

	if (args == NULL)
		fatalx("%s: json_pack", __func__);
	if (qga_cmd(f->r, cmd, args, qga_file_cont, f) == 0)
		return;
	qga_no_answer(&busy, "too many requests wait");
	qga_file_fail(f, &busy, cmd);
}

/*
 * The steps of a file call, each the answer to the one before: open,
 * seek to the end (the size); for a read a seek to the offset and the
 * read; for a write (at an offset, after a seek there) the write and a
 * seek to the end again; then close, and the answer.
 */
enum qga_file_step {
	QF_OPEN,		/* guest-file-open sent */
	QF_SIZE,		/* the seek to the end */
	QF_SEEK,		/* the seek to the offset */
	QF_DATA,		/* the read, or the write */
	QF_END,			/* the write's seek to the end */
	QF_CLOSE,
};

static json_t *
qga_file_seek(const struct qga_file *f, uint64_t offset, const char *whence)
{
	return json_pack("{s:I, s:I, s:s}", "handle", (json_int_t)f->handle,
	    "offset", (json_int_t)offset, "whence", whence);
}

/* The write, or for no bytes the close: the size is the file's then. */
static void
qga_file_put(struct qga_file *f)
{
	static char	 b64[B64_ENCODED_LEN(AGENT_FILE_CHUNK_MAX) + 1];

	if (f->len == 0) {
		f->step = QF_CLOSE;
		qga_file_next(f, "guest-file-close", json_pack("{s:I}",
		    "handle", (json_int_t)f->handle));
		return;
	}
	(void)b64_encode(f->data, f->len, b64);
	f->step = QF_DATA;
	qga_file_next(f, "guest-file-write", json_pack("{s:I, s:s}",
	    "handle", (json_int_t)f->handle, "buf-b64", b64));
}

static void
qga_file_step(struct qga_file *f, const struct qga_reply *rep)
{
	static const char *const what[] = { "open the file", "find the "
	    "file's size", "seek in the file", "read or write the file",
	    "find the file's size", "close the file" };
	int64_t		 h;
	uint64_t	 n;
	int		 bad = rep->kind != QGA_RETURN;

	if (f->error[0] != '\0') {
		/* The close after a failure: the failure answers. */
		qga_file_end(f);
		return;
	}
	switch (f->step) {
	case QF_OPEN:
		if (bad || qga_ret_int(rep->ret, 0, QGA_HANDLE_MAX, &h) == -1)
			break;
		f->handle = h;
		f->step = QF_SIZE;
		qga_file_next(f, "guest-file-seek", qga_file_seek(f, 0,
		    "end"));
		return;
	case QF_SIZE:
		if (bad || qga_ret_file_seek(rep->ret, &f->size) == -1)
			break;
		/* Appended, or written anew: where it ends. */
		if (f->write && !(f->flags & AGENT_WRITE_AT_OFFSET)) {
			qga_file_put(f);
			return;
		}
		f->step = QF_SEEK;
		qga_file_next(f, "guest-file-seek", qga_file_seek(f,
		    f->offset, "set"));
		return;
	case QF_SEEK:
		if (bad || qga_ret_file_seek(rep->ret, &n) == -1 ||
		    n != f->offset)
			break;
		if (f->write) {
			qga_file_put(f);
			return;
		}
		f->step = QF_DATA;
		qga_file_next(f, "guest-file-read", json_pack("{s:I, s:i}",
		    "handle", (json_int_t)f->handle, "count",
		    (int)f->length));
		return;
	case QF_DATA:
		if (bad)
			break;
		if (f->write) {
			if (qga_ret_file_write(rep->ret, &n) == -1 ||
			    n > f->len)
				break;
			f->written = (size_t)n;
			f->step = QF_END;
			qga_file_next(f, "guest-file-seek", qga_file_seek(f,
			    0, "end"));
			return;
		}
		if (qga_ret_file_read(rep->ret, f->buf, f->length, &f->got,
		    &f->eof) == -1)
			break;
		f->step = QF_CLOSE;
		qga_file_next(f, "guest-file-close", json_pack("{s:I}",
		    "handle", (json_int_t)f->handle));
		return;
	case QF_END:
		if (bad || qga_ret_file_seek(rep->ret, &f->size) == -1)
			break;
		f->step = QF_CLOSE;
		qga_file_next(f, "guest-file-close", json_pack("{s:I}",
		    "handle", (json_int_t)f->handle));
		return;
	case QF_CLOSE:
		if (bad)
			break;
		f->handle = -1;
		qga_file_end(f);
		return;
	}
	qga_file_fail(f, rep, what[f->step]);
}

static void
qga_file_open(struct qga_file *f, const char *path, const char *mode)
{
	char	 p[AGENT_PATH_MAX + sizeof(AGENT_WORKSPACE)];

	qga_path(path, p, sizeof(p));
	f->step = QF_OPEN;
	qga_file_next(f, "guest-file-open", json_pack("{s:s, s:s}", "path",
	    p, "mode", mode));
}

static void
qga_file_read(struct vmm_req *r, const struct msg_vmm_file_read *x)
{
	struct qga_file	*f = qga_file_new(r);

	f->offset = x->offset;
	f->length = x->length;
	f->encoding = x->encoding;
	qga_file_open(f, x->path, "r");
}

static void
qga_file_write(struct vmm_req *r, const struct msg_vmm_file_write *x)
{
	struct qga_file	*f = qga_file_new(r);

	f->write = 1;
	f->flags = x->flags & AGENT_WRITE_FLAGS;
	f->offset = x->offset;
	if (x->len > 0) {
		if ((f->data = malloc(x->len)) == NULL)
			fatal("%s", __func__);
		memcpy(f->data, x->data, x->len);
	}
	f->len = x->len;
	qga_file_open(f, x->path, f->flags & AGENT_WRITE_APPEND ? "a" :
	    f->flags & AGENT_WRITE_AT_OFFSET ? "r+" : "w");
}

/*
 * A listing: the agent has no command for one, so the guest's find(1)
 * writes it, shallowest first (sort -s by depth, so that a cut list
 * keeps the upper levels), cut to one entry more than asked for and to
 * QGA_LIST_OUT_MAX bytes, and the monitor polls its end, reads it
 * (qga_list_parse) and sorts it by name.  Symlinks are listed, never
 * followed.
 */
#define QGA_LIST_SCRIPT							\
	"cd -- \"$1\" || exit 2; find . -mindepth 1 -maxdepth \"$2\" "	\
	"-printf '%d %y %m %s %T@ %P\\0' 2>/dev/null | "		\
	"sort -z -s -n -k1,1 | head -z -n \"$3\" | head -c \"$4\""
#define QGA_LIST_OUT_MAX	(256 * 1024)	/* bytes of find's records */

_Static_assert(QGA_LIST_OUT_MAX <= QGA_DATA_MAX, "a listing's answer");

static void	 qga_list_poll(struct vmm_req *);

static struct qga_listing *
qga_listing_find(const struct vmm_req *r)
{
	size_t	 i;

	for (i = 0; i < VMM_REQ_MAX; i++)
		if (qga.listings[i].r == r)
			return &qga.listings[i];
	return NULL;
}

static int
qga_list_entry_cmp(const void *a, const void *b)
{
	return agent_name_cmp(((const struct agent_dirent *)a)->name,
	    ((const struct agent_dirent *)b)->name);
}

/* find's records as FILE_LIST's answer. */
static void
qga_list_answer(struct vmm_req *r, struct qga_listing *ls, size_t len)
{
	static struct qga_list	 l;
	static uint8_t		 ents[AGENT_LIST_BYTES_MAX];
	struct agent_msg	 m;
	size_t			 n = 0, i;

	if (qga_list_parse(qga.out, len, ls->max, &l) == -1) {
		vmm_fail(r, AGENT_ERR_PROTO, EBADMSG, "the guest's listing "
		    "makes no sense");
		return;
	}
	qsort(l.ents, l.n, sizeof(l.ents[0]), qga_list_entry_cmp);
	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_FILE_LIST;
	m.u.file_entries.truncated = l.truncated;
	for (i = 0; i < l.n; i++) {
		if (agent_dirent_put(ents, sizeof(ents), &n, &l.ents[i]) ==
		    -1) {
			m.u.file_entries.truncated = 1;
			break;
		}
	}
	m.u.file_entries.count = (uint32_t)i;
	m.u.file_entries.entries = ents;
	m.u.file_entries.len = (uint32_t)n;
	r->g_kind = AGENT_FILE_LIST;
	vmm_guest_answer(r, &m);
}

static void
qga_list_status(struct qga_cmd *c, const struct qga_reply *rep)
{
	struct qga_exec_status	 st;
	struct qga_listing	*ls;
	char			 text[AGENT_ERRMSG_MAX];
	size_t			 n;

	if (c->r == NULL || (ls = qga_listing_find(c->r)) == NULL)
		return;
	if (rep->kind != QGA_RETURN ||
	    qga_ret_exec_status(rep->ret, &st, qga.out, qga.err) == -1) {
		qga_fail(c->r, rep, "tell the listing's end");
		return;
	}
	if (!st.exited) {
		vmm_req_after(c->r, QGA_POLL_MS, qga_list_poll);
		return;
	}
	if (!st.has_code || st.code != 0) {
		/* cd's complaint, without its newline. */
		for (n = 0; n < st.err_len && n < QGA_DESC_SHOWN &&
		    qga.err[n] != '\n'; n++)
			;
		(void)snprintf(text, sizeof(text), "the guest cannot list "
		    "the directory: %.*s", (int)n, (const char *)qga.err);
		vmm_fail(c->r, AGENT_ERR_NOENT, ENOENT, text);
		return;
	}
	qga_list_answer(c->r, ls, st.out_len);
}

/* The listing's process, polled until it has exited. */
static void
qga_list_poll(struct vmm_req *r)
{
	struct qga_listing	*ls = qga_listing_find(r);

	if (ls == NULL)
		fatalx("%s: a listing not kept", __func__);
	if (qga_cmd(r, "guest-exec-status", json_pack("{s:i}", "pid",
	    (int)ls->pid), qga_list_status, NULL) == -1)
		vmm_fail(r, VMM_ERR_BUSY, EBUSY, "too many requests wait");
}

static void
qga_list_started(struct qga_cmd *c, const struct qga_reply *rep)
{
	struct qga_listing	*ls;
	int32_t			 pid;

	if (c->r == NULL || (ls = qga_listing_find(c->r)) == NULL)
		return;
	if (rep->kind != QGA_RETURN || qga_ret_exec(rep->ret, &pid) == -1) {
		qga_fail(c->r, rep, "start the listing");
		return;
	}
	ls->pid = pid;
	vmm_req_after(c->r, QGA_POLL_MS, qga_list_poll);
}

static void
qga_file_list(struct vmm_req *r, const struct msg_vmm_file_list *x)
{
	char			 dir[AGENT_PATH_MAX + sizeof(AGENT_WORKSPACE)];
	char			 depth[16], count[16], bytes[16];
	struct qga_listing	*ls;
	json_t			*args;

	if ((ls = qga_listing_find(NULL)) == NULL)
		fatalx("%s: more listings than requests", __func__);
	qga_path(x->path, dir, sizeof(dir));
	(void)snprintf(depth, sizeof(depth), "%u", x->depth);
	(void)snprintf(count, sizeof(count), "%u", x->max + 1);
	(void)snprintf(bytes, sizeof(bytes), "%d", QGA_LIST_OUT_MAX);
	args = json_pack("{s:s, s:[s, s, s, s, s, s, s], s:b}", "path",
	    "/bin/sh", "arg", "-c", QGA_LIST_SCRIPT, "mcvm-list", dir, depth,
	    count, bytes, "capture-output", 1);
	if (args == NULL)
		fatalx("%s: json_pack", __func__);
	ls->r = r;
	ls->pid = 0;
	ls->max = x->max;
	if (qga_cmd(r, "guest-exec", args, qga_list_started, NULL) == -1) {
		ls->r = NULL;
		vmm_fail(r, VMM_ERR_BUSY, EBUSY, "too many requests wait");
	}
}

/* --- the rest of the guest's requests */

static void
qga_got_ping(struct qga_cmd *c, const struct qga_reply *rep)
{
	static uint8_t		 states[QGA_JOBS_MAX * AGENT_JOBSTATE_LEN];
	struct agent_msg	 m;
	char			 version[QGA_TEXT_MAX];
	uint32_t		 n = 0;
	size_t			 i;

	if (c->r == NULL)
		return;
	if (rep->kind != QGA_RETURN || qga_ret_info(rep->ret, version,
	    sizeof(version)) == -1) {
		qga_fail(c->r, rep, "answer guest-info");
		return;
	}
	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_INFO;
	m.u.info.os = qga.os;
	m.u.info.kernel = qga.kernel;
	m.u.info.agent_version = qga.version;
	for (i = 0; i < QGA_JOBS_MAX; i++) {
		if (qga.jobs[i].id == 0 || qga.jobs[i].pid == 0)
			continue;
		agent_jobstate_put(states, n++, qga.jobs[i].id,
		    qga.jobs[i].state);
	}
	m.u.info.jobs_total = n;
	m.u.info.jobs_active = (uint32_t)qga_jobs_running();
	m.u.info.job_states = states;
	c->r->g_kind = AGENT_INFO;
	vmm_guest_answer(c->r, &m);
}

/* guest-info, live: the agent answers, or the request says it does not. */
static void
qga_info(struct vmm_req *r)
{
	if (qga_cmd(r, "guest-info", NULL, qga_got_ping, NULL) == -1)
		vmm_fail(r, VMM_ERR_BUSY, EBUSY, "too many requests wait");
}

/* No jobs are frozen: the VM's pause stops them with the vCPUs. */
static void
qga_freeze(struct vmm_req *r)
{
	vmm_ok(r, 0);
}

static void
qga_thaw(struct vmm_req *r)
{
	vmm_ok(r, 0);
}

static void
qga_got_ok(struct qga_cmd *c, const struct qga_reply *rep)
{
	if (c->r == NULL)
		return;
	if (rep->kind != QGA_RETURN)
		qga_fail(c->r, rep, (const char *)c->arg);
	else
		vmm_ok(c->r, 0);
}

static void
qga_set_time(struct vmm_req *r, const struct msg_vmm_set_time *x)
{
	json_t	*args;

	/* The codec bounds sec by INT64_MAX: in ns, by 2^63 ns. */
	if (x->sec > INT64_MAX / 1000000000 - 1) {
		vmm_fail(r, AGENT_ERR_INVAL, EINVAL, "a time past 2262");
		return;
	}
	args = json_pack("{s:I}", "time", (json_int_t)(x->sec * 1000000000 +
	    x->nsec));
	if (qga_cmd(r, "guest-set-time", args, qga_got_ok,
	    "set the guest's clock") == -1)
		vmm_fail(r, VMM_ERR_BUSY, EBUSY, "too many requests wait");
}

/*
 * guest-shutdown answers only when it fails: no answer within
 * QGA_SHUTDOWN_WAIT_MS is its success (the guest's init is on it).
 */
static void
qga_poweroff(struct vmm_req *r)
{
	struct qga_cmd	*c;

	if (qga_cmd(r, "guest-shutdown", json_pack("{s:s}", "mode",
	    "powerdown"), qga_got_ok, "power the guest off") == -1) {
		vmm_fail(r, VMM_ERR_BUSY, EBUSY, "too many requests wait");
		return;
	}
	c = qga.inflight != NULL && qga.inflight->r == r ? qga.inflight :
	    TAILQ_LAST(&qga.queue, qga_cmdq);
	c->quiet = 1;
	c->timeout_ms = QGA_SHUTDOWN_WAIT_MS;
	if (c == qga.inflight) {
		evtimer_del(&qga.cmd_timer);
		qga_timer_add(&qga.cmd_timer, c->timeout_ms);
	}
}

static void
qga_net_config(struct vmm_req *r, const struct msg_vmm_net_config *x)
{
	vmm_fail(r, AGENT_ERR_STATE, ENOTSUP, "qemu-guest-agent does not "
	    "configure the guest's network");
}

static void
qga_identity(struct vmm_req *r, const struct msg_vmm_identity *x)
{
	vmm_fail(r, AGENT_ERR_STATE, ENOTSUP, "qemu-guest-agent does not "
	    "name the guest");
}

/* r ends: what it waits for goes on without it (a file is closed). */
static void
qga_forget(struct vmm_req *r)
{
	struct qga_listing *ls;
	struct qga_cmd	*c;
	struct qga_wait	*w;

	if (qga.inflight != NULL && qga.inflight->r == r)
		qga.inflight->r = NULL;
	TAILQ_FOREACH(c, &qga.queue, entry)
		if (c->r == r)
			c->r = NULL;
	if ((w = qga_wait_find(r)) != NULL)
		w->r = NULL;
	if ((ls = qga_listing_find(r)) != NULL)
		ls->r = NULL;
}

/* The guest was reset: its processes are gone, and so is its agent. */
static void
qga_reset(const char *why)
{
	struct qga_reply rep;
	size_t		 i;

	if (qga.state == QGA_S_LOST)
		return;
	for (i = 0; i < QGA_JOBS_MAX; i++) {
		if (qga.jobs[i].id != 0 && qga.jobs[i].pid != 0)
			qga_job_lost(&qga.jobs[i], "the guest was reset");
		qga.jobs[i].kill_pid = 0;
	}
	qga_parser_init(&qga.parser);
	if (qga.inflight != NULL) {
		qga_no_answer(&rep, why);
		qga_done(&rep);
	}
	qga_sync(why);
}

static void
qga_init(int fd, enum vmm_mode mode, const struct vmm_identity *id)
{
	TAILQ_INIT(&qga.queue);
	qga_parser_init(&qga.parser);
	vmm_io_init(&qga.io, "qemu-guest-agent", fd, qga_read, qga_write);
	evtimer_set(&qga.sync_timer, qga_sync_timer, NULL);
	evtimer_set(&qga.cmd_timer, qga_cmd_timeout, NULL);
	evtimer_set(&qga.poll_timer, qga_poll, NULL);
	qga.state = QGA_S_SYNC;
	qga_sync_send();
}

const struct vmm_guest vmm_guest_qga = {
	.name = "qemu-guest-agent",
	.init = qga_init,
	.up = qga_up,
	.reset = qga_reset,
	.exec = qga_exec,
	.job_status = qga_job_status_op,
	.job_cancel = qga_job_cancel,
	.job_read = qga_job_read,
	.file_read = qga_file_read,
	.file_write = qga_file_write,
	.file_list = qga_file_list,
	.info = qga_info,
	.freeze = qga_freeze,
	.thaw = qga_thaw,
	.set_time = qga_set_time,
	.poweroff = qga_poweroff,
	.net_config = qga_net_config,
	.identity = qga_identity,
	.forget = qga_forget,
};
