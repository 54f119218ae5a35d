/*
 * The agent channel: the virtio-serial port org.mcvm.agent.0, its framing
 * and the dispatch of requests.
 *
 * The port stays open for the life of the agent.  While no host is
 * connected the kernel reports POLLHUP continuously, so after a hangup the
 * port is left out of poll for GUESTD_PORT_RETRY_MS.  Every hangup, and
 * every HELLO, starts a new session: buffered bytes in both directions
 * belong to the old one and are dropped.  A malformed frame costs the
 * session: the agent says so once and then skips input until it finds the
 * header of a HELLO.
 */
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <linux/random.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "guestd.h"
#include "netcfg.h"
#include "rdfile.h"
#include "wsfile.h"

#define VPORT_SYSFS	"/sys/class/virtio-ports"
#define OUTQ_MAX	(2 * AGENT_FRAME_MAX)

static int		 port_fd = -1;
static uint64_t		 port_retry_at;	/* 0: port is polled */
static int		 session;	/* HELLO seen */
static int		 desync;	/* skipping to the next HELLO */
static int		 poweroff_pending;

static uint8_t		 inbuf[AGENT_FRAME_MAX];
static size_t		 in_len;
static uint8_t		 outq[OUTQ_MAX];
static size_t		 outq_off, outq_len;
static uint8_t		 frame[AGENT_FRAME_MAX];
static uint8_t		 filebuf[AGENT_FILE_CHUNK_MAX];

/* JOB_READ requests with wait_ms, answered when their job ends. */
static struct job_wait {
	int			 used;
	uint64_t		 deadline;
	struct agent_msg	 req;	/* JOB_READ: no pointers */
} waits[GUESTD_WAITS_MAX];

/* Finds the port by name; returns its fd or -1. */
int
chan_open(void)
{
	char		 path[PATH_MAX], name[64];
	struct dirent	*de;
	DIR		*d;

	if ((d = opendir(VPORT_SYSFS)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), VPORT_SYSFS "/%s/name",
		    de->d_name);
		if (read_small_file(path, name, sizeof(name)) == -1)
			continue;
		name[strcspn(name, "\n")] = '\0';
		if (strcmp(name, AGENT_PORT_NAME) != 0)
			continue;
		snprintf(path, sizeof(path), "/dev/%s", de->d_name);
		closedir(d);
		port_fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC |
		    O_NOCTTY);
		if (port_fd == -1)
			glog("open %s: %s", path, strerror(errno));
		return port_fd;
	}
	closedir(d);
	errno = ENOENT;
	return -1;
}

static void
session_reset(void)
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

static void
send_msg(const struct agent_msg *m)
{
	int	 n;

	if ((n = agent_encode(m, frame, sizeof(frame))) == -1) {
		glog("cannot encode %s: %s", agent_type_name(m->type),
		    strerror(errno));
		return;
	}
	outq_add(frame, (size_t)n);
}

static void __attribute__((format(printf, 4, 5)))
send_error(uint32_t id, uint32_t code, int err, const char *fmt, ...)
{
	struct agent_msg	 m;
	char			 msg[AGENT_ERRMSG_MAX];
	va_list			 ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
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
	switch (err) {
	case EXDEV:
		send_error(id, AGENT_ERR_PATH, err, "%.200s: outside "
		    AGENT_WORKSPACE, path);
		break;
	case ELOOP:
		send_error(id, AGENT_ERR_PATH, err, "%.200s: symbolic links "
		    "are not followed", path);
		break;
	case ENOENT:
		send_error(id, AGENT_ERR_NOENT, err, "%.200s: no such file "
		    "or directory", path);
		break;
	case EINVAL:
		send_error(id, AGENT_ERR_INVAL, err, "%.200s: not a regular "
		    "file or invalid path", path);
		break;
	default:
		send_error(id, AGENT_ERR_IO, err, "%.200s: %s", path,
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

static void
do_job(const struct agent_msg *req, uint64_t now)
{
	struct agent_msg	 m;
	struct job		*j;
	uint32_t		 jid = req->type == AGENT_JOB_READ ?
	    req->u.job_read.job : req->u.job.job;

	if ((j = job_find(jid)) == NULL) {
		send_error(req->id, AGENT_ERR_NOJOB, 0, "no job %u", jid);
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
		/* With no slot free, the job's state now is the answer. */
		if (m.u.output.st.state == AGENT_JOB_RUNNING &&
		    req->u.job_read.wait_ms > 0 && wait_park(req, now))
			return;
		m.u.output.out_cursor = req->u.job_read.out_cursor;
		m.u.output.out_len = (uint32_t)job_page(j, OUT_STDOUT,
		    req->u.job_read.out_cursor, req->u.job_read.out_max,
		    &m.u.output.out);
		m.u.output.err_cursor = req->u.job_read.err_cursor;
		m.u.output.err_len = (uint32_t)job_page(j, OUT_STDERR,
		    req->u.job_read.err_cursor, req->u.job_read.err_max,
		    &m.u.output.err);
		break;
	}
	send_msg(&m);
}

/*
 * Credits the host's random bytes to the kernel's input pool and reseeds
 * its generator from it at once: VMs restored from one checkpoint would
 * otherwise share the generator's state until its next scheduled reseed.
 */
static void
chan_seed(const struct agent_msg *req)
{
	struct {
		struct rand_pool_info	 info;
		uint8_t			 buf[AGENT_SEED_LEN];
	} e;
	int	 fd, err = 0;

	e.info.entropy_count = AGENT_SEED_LEN * 8;
	e.info.buf_size = AGENT_SEED_LEN;
	memcpy(e.buf, req->u.seed.data, AGENT_SEED_LEN);
	if ((fd = open("/dev/urandom", O_WRONLY | O_CLOEXEC)) == -1)
		err = errno;
	else {
		if (ioctl(fd, RNDADDENTROPY, &e.info) == -1 ||
		    ioctl(fd, RNDRESEEDCRNG) == -1)
			err = errno;
		close(fd);
	}
	explicit_bzero(&e, sizeof(e));
	if (err != 0)
		send_error(req->id, AGENT_ERR_IO, err,
		    "cannot seed the random generator: %s", strerror(err));
	else
		send_empty(req);
}

/* The NIC's address, default route and resolver, from the host. */
static void
chan_net_config(const struct agent_msg *req)
{
	struct netcfg	 nc;
	char		 err[NETCFG_ERR_MAX];

	if (netcfg_parse(req->u.net_config.address,
	    req->u.net_config.gateway, req->u.net_config.resolver,
	    req->u.net_config.mac, &nc) == -1) {
		send_error(req->id, AGENT_ERR_INVAL, 0,
		    "bad network configuration");
		return;
	}
	if (netcfg_apply(&nc, err, sizeof(err)) == -1) {
		send_error(req->id, AGENT_ERR_IO, errno, "%s", err);
		return;
	}
	send_empty(req);
}

static void
dispatch(const struct agent_msg *req, uint64_t now)
{
	struct agent_msg	 m;
	char			 err[AGENT_ERRMSG_MAX];
	struct timespec		 ts;
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
		ts.tv_sec = (time_t)req->u.set_time.sec;
		ts.tv_nsec = (long)req->u.set_time.nsec;
		if (clock_settime(CLOCK_REALTIME, &ts) == -1) {
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

/*
 * Fills in the port's pollfd; returns 0 if the port is not to be polled
 * now.  *wait (ms) is lowered to the time until the next retry.
 */
int
chan_pollfd(struct pollfd *pfd, uint64_t now)
{
	if (port_fd == -1)
		return 0;
	if (port_retry_at != 0) {
		if (now < port_retry_at)
			return 0;
		port_retry_at = 0;
	}
	pfd->fd = port_fd;
	pfd->events = 0;
	if (in_len < sizeof(inbuf))
		pfd->events |= POLLIN;
	if (outq_len > 0)
		pfd->events |= POLLOUT;
	return 1;
}

uint64_t
chan_retry_at(void)
{
	return port_retry_at;
}

static int
flush_some(void)
{
	ssize_t	 n;

	while (outq_len > 0) {
		n = write(port_fd, outq + outq_off, outq_len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return errno == EAGAIN ? 0 : -1;
		outq_off += (size_t)n;
		outq_len -= (size_t)n;
	}
	outq_off = 0;
	return 0;
}

static void
hangup(uint64_t now)
{
	if (session || in_len > 0 || outq_len > 0)
		glog("host side of the agent port closed");
	session_reset();
	port_retry_at = now + GUESTD_PORT_RETRY_MS;
}

void
chan_event(short revents, uint64_t now)
{
	ssize_t	 n;

	if (revents & POLLIN) {
		n = read(port_fd, inbuf + in_len, sizeof(inbuf) - in_len);
		if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR)) {
			hangup(now);
			return;
		}
		if (n > 0) {
			in_len += (size_t)n;
			process_input(now);
		}
	}
	if (revents & (POLLHUP | POLLERR)) {
		hangup(now);
		return;
	}
	if (outq_len > 0 && flush_some() == -1)
		hangup(now);
	/* A full reply queue may have held requests back. */
	if (in_len > 0 && !desync && OUTQ_MAX - outq_len >= AGENT_FRAME_MAX)
		process_input(now);
}

/*
 * Answers the waiting JOB_READs whose job ended or whose time is up, as
 * the reply queue has room.  Returns the milliseconds until the next
 * deadline, or -1 if there is none.
 */
int
chan_waits(uint64_t now)
{
	struct agent_job_status	 st;
	struct job		*j;
	uint64_t		 next = UINT64_MAX;
	size_t			 i;
	int			 answered = 0;

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
		answered = 1;
	}
	/* Sent now, before the ended jobs' cgroups are removed. */
	if (answered && port_fd != -1 && flush_some() == -1)
		hangup(now);
	return next == UINT64_MAX ? -1 : (int)next;
}

int
chan_poweroff_pending(void)
{
	return poweroff_pending && outq_len == 0;
}

/* Writes out queued replies, waiting up to timeout_ms. */
void
chan_flush(int timeout_ms)
{
	struct pollfd	 pfd;
	uint64_t	 deadline = now_ms() + (uint64_t)timeout_ms;

	while (port_fd != -1 && outq_len > 0 && now_ms() < deadline) {
		if (flush_some() == -1)
			return;
		if (outq_len == 0)
			return;
		pfd.fd = port_fd;
		pfd.events = POLLOUT;
		if (poll(&pfd, 1, (int)(deadline - now_ms())) <= 0 ||
		    (pfd.revents & (POLLHUP | POLLERR)))
			return;
	}
}

/*
 * Blocks until the host writes a line on the port, reading it a byte at a
 * time so that what follows it stays for the session.  The host side may
 * come and go meanwhile (a checkpoint is taken, a restored VM's monitor
 * connects): a hangup is waited out.
 */
int
chan_hold(void)
{
	struct timespec	 step = { 0, GUESTD_PORT_RETRY_MS * 1000000L };
	struct pollfd	 pfd;
	ssize_t		 n;
	char		 c;

	if (port_fd == -1)
		return -1;
	for (;;) {
		pfd.fd = port_fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, -1) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		n = read(port_fd, &c, 1);
		if (n == 1 && c == '\n')
			return 0;
		if (n == 1 || (n == -1 && (errno == EAGAIN || errno == EINTR)))
			continue;
		if (n == -1 && errno != EPIPE && errno != ENOTCONN)
			return -1;
		nanosleep(&step, NULL);		/* no host side just now */
	}
}
