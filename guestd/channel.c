/*
 * The agent's requests: framing, dispatch and replies.  Bytes come in
 * and go out through port.c (the virtio-serial port); nothing here does
 * I/O of its own but through the job table and the guest_* calls, so
 * that the fuzzer links it as it is.
 *
 * Every HELLO starts a new session, as does every hangup of the host
 * side: buffered bytes in both directions belong to the old one and are
 * dropped.  A malformed frame costs the session: the agent says so once
 * and then skips input until it finds the header of a HELLO.  A request
 * that is well framed but wrong costs only itself: it is answered with
 * an error.
 */
#include <sys/fsuid.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "guestd.h"
#include "wsfile.h"

#define OUTQ_MAX	(2 * AGENT_FRAME_MAX)

static int		 session;	/* HELLO seen */
static int		 desync;	/* skipping to the next HELLO */
static int		 poweroff_pending;

static uint8_t		 inbuf[AGENT_FRAME_MAX];
static size_t		 in_len;
static uint8_t		 outq[OUTQ_MAX];
static size_t		 outq_off, outq_len;
static uint8_t		 frame[AGENT_FRAME_MAX];
static uint8_t		 filebuf[AGENT_FILE_CHUNK_MAX];
static struct ws_list	 listing;

_Static_assert(AGENT_LIST_BYTES_MAX <= AGENT_FILE_CHUNK_MAX,
    "a listing in filebuf");

/* JOB_READ requests with wait_ms, answered when their job ends. */
static struct job_wait {
	int			 used;
	uint64_t		 deadline;
	struct agent_msg	 req;	/* JOB_READ: no pointers */
} waits[GUESTD_WAITS_MAX];

void
chan_reset(void)
{
	session = 0;
	desync = 0;
	in_len = 0;
	outq_off = outq_len = 0;
	memset(waits, 0, sizeof(waits));	/* their asker is gone */
}

static void
outq_add(const uint8_t *p, size_t n)
{
	if (outq_off > 0) {
		memmove(outq, outq + outq_off, outq_len);
		outq_off = 0;
	}
	if (n > OUTQ_MAX - outq_len) {
		glog("reply queue full; dropping a %zu byte reply", n);
		return;
	}
	memcpy(outq + outq_len, p, n);
	outq_len += n;
}

static void __attribute__((format(printf, 4, 5)))
send_error(uint32_t id, uint32_t code, int err, const char *fmt, ...);

/* A reply that cannot be encoded is still answered, with an error. */
static void
send_msg(const struct agent_msg *m)
{
	int	 n;

	if ((n = agent_encode(m, frame, sizeof(frame))) == -1) {
		glog("cannot encode %s: %s", agent_type_name(m->type),
		    strerror(errno));
		if (m->type != AGENT_ERROR)
			send_error(m->id, AGENT_ERR_IO, errno, "the agent "
			    "could not encode its %s reply",
			    agent_type_name(m->type));
		return;
	}
	outq_add(frame, (size_t)n);
}

/* Client text in fmt's arguments is cut on a character boundary. */
static void
send_error(uint32_t id, uint32_t code, int err, const char *fmt, ...)
{
	struct agent_msg	 m;
	char			 msg[AGENT_ERRMSG_MAX];
	va_list			 ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gtext_fit(msg);
	memset(&m, 0, sizeof(m));
	m.type = AGENT_ERROR;
	m.id = id;
	m.u.error.code = code;
	m.u.error.sys_errno = err;
	m.u.error.message = msg;
	send_msg(&m);
}

static void
send_empty(const struct agent_msg *req)
{
	struct agent_msg	 m;

	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | req->type;
	m.id = req->id;
	send_msg(&m);
}

/* Maps a failed file call to the error the host sees. */
static void
send_path_error(uint32_t id, const char *path, int err)
{
	int	 n = (int)gtext_cut(path, 200);

	switch (err) {
	case EXDEV:
		send_error(id, AGENT_ERR_PATH, err, "%.*s: outside "
		    AGENT_WORKSPACE, n, path);
		break;
	case ELOOP:
		send_error(id, AGENT_ERR_PATH, err, "%.*s: symbolic links "
		    "are not followed", n, path);
		break;
	case ENOENT:
		send_error(id, AGENT_ERR_NOENT, err, "%.*s: no such file "
		    "or directory", n, path);
		break;
	case EINVAL:
		send_error(id, AGENT_ERR_INVAL, err, "%.*s: not a regular "
		    "file or invalid path", n, path);
		break;
	case ENOTDIR:
		send_error(id, AGENT_ERR_INVAL, err, "%.*s: not a directory",
		    n, path);
		break;
	case EISDIR:
		send_error(id, AGENT_ERR_INVAL, err, "%.*s: is a directory",
		    n, path);
		break;
	default:
		send_error(id, AGENT_ERR_IO, err, "%.*s: %s", n, path,
		    strerror(err));
		break;
	}
}

/*
 * File calls run with the workspace user's filesystem identity, so the
 * agent can do nothing there the user could not.
 */
static void
as_user(int on)
{
	if (on) {
		(void)setfsgid(AGENT_JOB_GID);
		(void)setfsuid(AGENT_JOB_UID);
	} else {
		(void)setfsuid(0);
		(void)setfsgid(0);
	}
}

static void
do_file_read(const struct agent_msg *req)
{
	struct agent_msg	 m;
	const char		*rel;
	uint64_t		 size;
	ssize_t			 n;

	if ((rel = ws_relpath(req->u.file_read.path, AGENT_WORKSPACE)) ==
	    NULL) {
		send_path_error(req->id, req->u.file_read.path, errno);
		return;
	}
	as_user(1);
	n = ws_read(ws_root, rel, req->u.file_read.offset, filebuf,
	    req->u.file_read.length, &size);
	as_user(0);
	if (n == -1) {
		send_path_error(req->id, req->u.file_read.path, errno);
		return;
	}
	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_FILE_READ;
	m.id = req->id;
	m.u.file_data.offset = req->u.file_read.offset;
	m.u.file_data.size = size;
	m.u.file_data.eof = req->u.file_read.offset + (uint64_t)n >= size;
	m.u.file_data.data = filebuf;
	m.u.file_data.len = (uint32_t)n;
	send_msg(&m);
}

static void
do_file_write(const struct agent_msg *req)
{
	struct agent_msg	 m;
	const char		*rel;
	uint64_t		 size;
	int			 rv;

	if ((rel = ws_relpath(req->u.file_write.path, AGENT_WORKSPACE)) ==
	    NULL) {
		send_path_error(req->id, req->u.file_write.path, errno);
		return;
	}
	as_user(1);
	rv = ws_write(ws_root, rel, req->u.file_write.flags,
	    req->u.file_write.offset, req->u.file_write.mode,
	    req->u.file_write.data, req->u.file_write.len, NULL, &size);
	as_user(0);
	if (rv == -1) {
		send_path_error(req->id, req->u.file_write.path, errno);
		return;
	}
	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_FILE_WRITE;
	m.id = req->id;
	m.u.file_written.size = size;
	m.u.file_written.written = req->u.file_write.len;
	send_msg(&m);
}

static void
do_file_list(const struct agent_msg *req)
{
	struct agent_msg	 m;
	struct agent_dirent	 d;
	const char		*rel;
	size_t			 i, len = 0;
	int			 rv;

	if ((rel = ws_relpath(req->u.file_list.path, AGENT_WORKSPACE)) ==
	    NULL) {
		send_path_error(req->id, req->u.file_list.path, errno);
		return;
	}
	as_user(1);
	rv = ws_list(ws_root, rel, req->u.file_list.depth,
	    req->u.file_list.max, &listing);
	as_user(0);
	if (rv == -1) {
		send_path_error(req->id, req->u.file_list.path, errno);
		return;
	}
	/* ws_list kept within AGENT_LIST_BYTES_MAX: filebuf holds them. */
	for (i = 0; i < listing.n; i++) {
		d.name = listing.ents[i].name;
		d.type = listing.ents[i].type;
		d.mode = listing.ents[i].mode;
		d.size = listing.ents[i].size;
		d.mtime = listing.ents[i].mtime;
		if (agent_dirent_put(filebuf, AGENT_LIST_BYTES_MAX, &len,
		    &d) == -1) {
			send_error(req->id, AGENT_ERR_IO, errno, "cannot "
			    "encode the listing");
			return;
		}
	}
	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_FILE_LIST;
	m.id = req->id;
	m.u.file_entries.truncated = listing.truncated != 0;
	m.u.file_entries.count = (uint32_t)listing.n;
	m.u.file_entries.entries = filebuf;
	m.u.file_entries.len = (uint32_t)len;
	send_msg(&m);
}

/* Keeps a JOB_READ for when its job ends; 0 if every slot is taken. */
static int
wait_park(const struct agent_msg *req, uint64_t now)
{
	size_t	 i;

	for (i = 0; i < GUESTD_WAITS_MAX; i++) {
		if (waits[i].used)
			continue;
		waits[i].used = 1;
		waits[i].deadline = now + req->u.job_read.wait_ms;
		waits[i].req = *req;
		waits[i].req.u.job_read.wait_ms = 0;	/* answer it then */
		return 1;
	}
	return 0;
}

/*
 * Refuses a JOB_READ whose cursor lies past the end of its stream (the
 * end only grows, so no answer ever gave it); 1 if it did.
 */
static int
cursor_refused(const struct agent_msg *req, const struct agent_job_status *st)
{
	if (req->u.job_read.out_cursor > st->out_total) {
		send_error(req->id, AGENT_ERR_INVAL, 0, "stdout cursor %" PRIu64
		    " is past the end of the output: valid cursors are 0 to %"
		    PRIu64, req->u.job_read.out_cursor, st->out_total);
		return 1;
	}
	if (req->u.job_read.err_cursor > st->err_total) {
		send_error(req->id, AGENT_ERR_INVAL, 0, "stderr cursor %" PRIu64
		    " is past the end of the output: valid cursors are 0 to %"
		    PRIu64, req->u.job_read.err_cursor, st->err_total);
		return 1;
	}
	return 0;
}

static void
do_job(const struct agent_msg *req, uint64_t now)
{
	static uint8_t		 page[OUT_NSTREAMS][AGENT_PAGE_MAX];
	struct agent_msg	 m;
	struct job		*j;
	uint32_t		 jid = req->type == AGENT_JOB_READ ?
	    req->u.job_read.job : req->u.job.job;

	if ((j = job_find(jid)) == NULL) {
		if (job_expired(jid))
			send_error(req->id, AGENT_ERR_EXPIRED, 0, "job %u has "
			    "expired: the oldest ended jobs make room for new "
			    "ones once %d are kept", jid,
			    AGENT_JOBS_TOTAL_MAX);
		else
			send_error(req->id, AGENT_ERR_NOJOB, 0, "no job %u",
			    jid);
		return;
	}
	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | req->type;
	m.id = req->id;
	switch (req->type) {
	case AGENT_JOB_CANCEL:
		job_cancel(j);
		/* FALLTHROUGH */
	case AGENT_JOB_STATUS:
		job_status(j, &m.u.status.st, now);
		break;
	case AGENT_JOB_READ:
		job_status(j, &m.u.output.st, now);
		/* A cursor comes from an answer: it never passes the end. */
		if (cursor_refused(req, &m.u.output.st))
			return;
		/* With no slot free, the job's state now is the answer. */
		if (m.u.output.st.state == AGENT_JOB_RUNNING &&
		    req->u.job_read.wait_ms > 0 && wait_park(req, now))
			return;
		m.u.output.out_cursor = req->u.job_read.out_cursor;
		m.u.output.out_len = (uint32_t)job_page(j, OUT_STDOUT,
		    req->u.job_read.out_cursor, req->u.job_read.out_max,
		    page[OUT_STDOUT], &m.u.output.out_skipped);
		m.u.output.out = page[OUT_STDOUT];
		m.u.output.err_cursor = req->u.job_read.err_cursor;
		m.u.output.err_len = (uint32_t)job_page(j, OUT_STDERR,
		    req->u.job_read.err_cursor, req->u.job_read.err_max,
		    page[OUT_STDERR], &m.u.output.err_skipped);
		m.u.output.err = page[OUT_STDERR];
		break;
	}
	send_msg(&m);
}

static void
chan_seed(const struct agent_msg *req)
{
	if (guest_seed(req->u.seed.data) == -1)
		send_error(req->id, AGENT_ERR_IO, errno,
		    "cannot seed the random generator: %s", strerror(errno));
	else
		send_empty(req);
}

/* The NIC's address, default route and resolver, from the host. */
static void
chan_net_config(const struct agent_msg *req)
{
	char	 err[AGENT_ERRMSG_MAX];
	int	 code;

	if ((code = guest_net_config(req, err, sizeof(err))) != 0) {
		send_error(req->id, (uint32_t)code, errno, "%s", err);
		return;
	}
	send_empty(req);
}

static void
dispatch(const struct agent_msg *req, uint64_t now)
{
	struct agent_msg	 m;
	char			 err[AGENT_ERRMSG_MAX];
	uint32_t		 id;
	int			 code;

	if (req->type == AGENT_HELLO) {
		if (req->u.hello.version != AGENT_PROTO_VERSION) {
			send_error(req->id, AGENT_ERR_VERSION, 0,
			    "protocol version %u is not supported; this agent "
			    "speaks %u", req->u.hello.version,
			    AGENT_PROTO_VERSION);
			return;
		}
		session = 1;
		memset(&m, 0, sizeof(m));
		m.type = AGENT_REPLY | AGENT_HELLO;
		m.id = req->id;
		m.u.hello.version = AGENT_PROTO_VERSION;
		m.u.hello.agent_version = GUESTD_VERSION;
		send_msg(&m);
		return;
	}
	if (!session) {
		send_error(req->id, AGENT_ERR_HANDSHAKE, 0,
		    "hello first");
		return;
	}
	switch (req->type) {
	case AGENT_PING:
		send_empty(req);
		break;
	case AGENT_INFO:
		memset(&m, 0, sizeof(m));
		m.type = AGENT_REPLY | AGENT_INFO;
		m.id = req->id;
		guest_info(&m);
		send_msg(&m);
		break;
	case AGENT_EXEC:
		if ((code = job_start(req, &id, err, sizeof(err))) != 0) {
			send_error(req->id, (uint32_t)code, 0, "%s", err);
			break;
		}
		memset(&m, 0, sizeof(m));
		m.type = AGENT_REPLY | AGENT_EXEC;
		m.id = req->id;
		m.u.job.job = id;
		send_msg(&m);
		break;
	case AGENT_JOB_STATUS:
	case AGENT_JOB_READ:
	case AGENT_JOB_CANCEL:
		do_job(req, now);
		break;
	case AGENT_FILE_READ:
		do_file_read(req);
		break;
	case AGENT_FILE_WRITE:
		do_file_write(req);
		break;
	case AGENT_FILE_LIST:
		do_file_list(req);
		break;
	case AGENT_FREEZE:
		memset(&m, 0, sizeof(m));
		m.type = AGENT_REPLY | AGENT_FREEZE;
		m.id = req->id;
		if (jobs_freeze(&m.u.frozen.jobs_frozen) == -1) {
			send_error(req->id, AGENT_ERR_IO, errno,
			    "cannot freeze the jobs: %s", strerror(errno));
			break;
		}
		send_msg(&m);
		break;
	case AGENT_THAW:
		if (jobs_thaw(now) == -1) {
			send_error(req->id, AGENT_ERR_IO, errno,
			    "cannot thaw the jobs: %s", strerror(errno));
			break;
		}
		send_empty(req);
		break;
	case AGENT_SET_TIME:
		if (guest_set_time(req->u.set_time.sec,
		    req->u.set_time.nsec) == -1) {
			send_error(req->id, AGENT_ERR_IO, errno,
			    "cannot set the clock: %s", strerror(errno));
			break;
		}
		send_empty(req);
		break;
	case AGENT_POWEROFF:
		send_empty(req);
		poweroff_pending = 1;
		break;
	case AGENT_NET_CONFIG:
		chan_net_config(req);
		break;
	case AGENT_SEED:
		chan_seed(req);
		break;
	case AGENT_IDENTITY:
		if (guest_set_identity(req->u.identity.hostname,
		    req->u.identity.machine_id) == -1) {
			send_error(req->id, AGENT_ERR_IO, errno,
			    "cannot take the VM's name and machine id: %s",
			    strerror(errno));
			break;
		}
		send_empty(req);
		break;
	default:
		send_error(req->id, AGENT_ERR_UNKNOWN, 0,
		    "unknown request type %u", req->type);
		break;
	}
}

/* Drops input up to the next plausible HELLO header. */
static void
resync(void)
{
	struct agent_hdr hdr;
	size_t		 i;
	int		 rv;

	for (i = 0; i < in_len; i++) {
		rv = agent_frame_check(inbuf + i, in_len - i, &hdr);
		if (rv == -1)
			continue;
		if (rv == 0 && in_len - i < AGENT_HDR_LEN)
			break;		/* a header may be starting */
		if (hdr.type == AGENT_HELLO) {
			desync = 0;
			break;
		}
	}
	memmove(inbuf, inbuf + i, in_len - i);
	in_len -= i;
}

static void
process_input(uint64_t now)
{
	static struct agent_msg	 req;
	struct agent_hdr	 hdr;
	size_t			 off = 0;
	int			 rv;

	for (;;) {
		if (desync) {
			if (off > 0) {
				memmove(inbuf, inbuf + off, in_len - off);
				in_len -= off;
				off = 0;
			}
			resync();
			if (desync)
				return;
		}
		/* Room for the largest reply before taking a request. */
		if (OUTQ_MAX - outq_len < AGENT_FRAME_MAX || poweroff_pending)
			break;
		rv = agent_frame_check(inbuf + off, in_len - off, &hdr);
		if (rv == 0)
			break;
		if (rv == -1) {
			glog("malformed frame from the host; resynchronizing");
			send_error(0, AGENT_ERR_PROTO, 0, "malformed frame; "
			    "send hello");
			session = 0;
			desync = 1;
			continue;
		}
		if (agent_decode(&hdr, inbuf + off + AGENT_HDR_LEN, &req) ==
		    -1) {
			if (errno == ENOTSUP)
				send_error(hdr.id, AGENT_ERR_UNKNOWN, 0,
				    "unknown request type %u", hdr.type);
			else
				send_error(hdr.id, AGENT_ERR_PROTO, 0,
				    "malformed %s request",
				    agent_type_name(hdr.type));
		} else
			dispatch(&req, now);
		off += (size_t)rv;
	}
	if (off > 0) {
		memmove(inbuf, inbuf + off, in_len - off);
		in_len -= off;
	}
}

/* Where bytes from the host go next; the room there. */
size_t
chan_in_room(uint8_t **p)
{
	*p = inbuf + in_len;
	return sizeof(inbuf) - in_len;
}

/* n bytes from the host arrived where chan_in_room said. */
void
chan_input(size_t n, uint64_t now)
{
	in_len += n;
	process_input(now);
}

/* After replies went out: input a full reply queue held back. */
void
chan_resume(uint64_t now)
{
	if (in_len > 0 && !desync && OUTQ_MAX - outq_len >= AGENT_FRAME_MAX)
		process_input(now);
}

/* The replies waiting to go out; 0 if none. */
size_t
chan_out(const uint8_t **p)
{
	*p = outq + outq_off;
	return outq_len;
}

/* n bytes of them went out. */
void
chan_out_done(size_t n)
{
	outq_off += n;
	outq_len -= n;
	if (outq_len == 0)
		outq_off = 0;
}

int
chan_in_pending(void)
{
	return session || in_len > 0 || outq_len > 0;
}

/*
 * Answers the waiting JOB_READs whose job ended or whose time is up, as
 * the reply queue has room.  Returns the milliseconds until the next
 * deadline, or -1 if there is none; *answered is set if any was.
 */
int
chan_waits(uint64_t now, int *answered)
{
	struct agent_job_status	 st;
	struct job		*j;
	uint64_t		 next = UINT64_MAX;
	size_t			 i;

	*answered = 0;
	for (i = 0; i < GUESTD_WAITS_MAX; i++) {
		if (!waits[i].used)
			continue;
		j = job_find(waits[i].req.u.job_read.job);
		if (j != NULL && now < waits[i].deadline) {
			job_status(j, &st, now);
			if (st.state == AGENT_JOB_RUNNING) {
				if (waits[i].deadline - now < next)
					next = waits[i].deadline - now;
				continue;
			}
		}
		if (OUTQ_MAX - outq_len < AGENT_FRAME_MAX)
			continue;	/* when the queue drains (POLLOUT) */
		waits[i].used = 0;
		do_job(&waits[i].req, now);
		*answered = 1;
	}
	return next == UINT64_MAX ? -1 : (int)next;
}

int
chan_poweroff_pending(void)
{
	return poweroff_pending && outq_len == 0;
}
