/*
 * The harness of the drivers that play mcvmd to a real peer (peer.h):
 * the peer starts with its end of a socketpair on PROC_PARENT_SOCK_FILENO,
 * as mcvmd starts it.
 */
#include <sys/socket.h>
#include <sys/wait.h>

#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <stdlib.h>
#include <unistd.h>

#include "imsg.h"
#include "msg_proc.h"
#include "peer.h"
#include "proto.h"

#define PEER_ARGS_MAX		64
#define PEER_TIMEOUT_MS		(60 * 1000)

static char	 why[512];
static int	 passed, failed;

/* The peer runs bin with argv; p is ready for requests. */
void
peer_start(struct peer *p, const char *bin, const char *const argv[])
{
	const char	*asan;
	char		 opts[512];
	int		 sv[2];

	memset(p, 0, sizeof(*p));
	p->next_id = 1;
	p->timeout_ms = PEER_TIMEOUT_MS;
	p->error_type = IMSG_NONE;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1)
		err(1, "socketpair");
	if ((p->pid = fork()) == -1)
		err(1, "fork");
	if (p->pid == 0) {
		/* LeakSanitizer's exit-time scan clones and ptraces, which
		 * the daemons' filters kill; leaks are the unit tests'. */
		asan = getenv("ASAN_OPTIONS");
		(void)snprintf(opts, sizeof(opts), "%s%sdetect_leaks=0",
		    asan != NULL ? asan : "", asan != NULL ? ":" : "");
		(void)setenv("ASAN_OPTIONS", opts, 1);
		if (dup2(sv[1], PROC_PARENT_SOCK_FILENO) == -1)
			_exit(127);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	close(sv[1]);
	if (imsgbuf_init(&p->ib, sv[0]) == -1)
		err(1, "imsgbuf_init");
}

/*
 * Starts the daemon a driver's options name, -s binary -f conf, passing
 * -D macro=value, -S and -v on; name is its argv[0], and it runs in the
 * foreground (-d).  Bad options call usage.  *argi is the index of the
 * first command.
 */
void
peer_run(struct peer *p, int argc, char *argv[], const char *name,
    void (*usage)(void), int *argi)
{
	const char	*dargv[PEER_ARGS_MAX];
	const char	*bin = NULL, *conf = NULL;
	int		 n = 0, ch;

	dargv[n++] = name;
	dargv[n++] = "-d";
	while ((ch = getopt(argc, argv, "D:f:s:Sv")) != -1) {
		if (n + 3 >= PEER_ARGS_MAX)
			usage();
		switch (ch) {
		case 'D':
			dargv[n++] = "-D";
			dargv[n++] = optarg;
			break;
		case 'f':
			conf = optarg;
			break;
		case 's':
			bin = optarg;
			break;
		case 'S':
			dargv[n++] = "-S";
			break;
		case 'v':
			dargv[n++] = "-v";
			break;
		default:
			usage();
		}
	}
	if (bin == NULL || conf == NULL)
		usage();
	dargv[n++] = "-f";
	dargv[n++] = conf;
	dargv[n] = NULL;
	*argi = optind;
	setvbuf(stdout, NULL, _IOLBF, 0);
	peer_start(p, bin, dargv);
}

uint64_t
test_now_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * The peer's next message: 1, or 0 at the end of the channel, or -1 with
 * errno ETIMEDOUT once the deadline (test_now_ms()) is past, or EBADMSG
 * for bad framing (test_why()).
 */
int
peer_next(struct peer *p, uint64_t deadline, struct imsg *imsg)
{
	struct pollfd	 pfd = { .fd = p->ib.fd, .events = POLLIN };
	uint64_t	 now;
	ssize_t		 n;
	int		 r;

	for (;;) {
		if ((r = imsg_get(&p->ib, imsg)) == -1) {
			(void)test_fail("bad framing from the peer");
			errno = EBADMSG;
			return -1;
		}
		if (r == 1)
			return 1;
		if ((now = test_now_ms()) >= deadline) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (poll(&pfd, 1, (int)(deadline - now)) == -1 &&
		    errno != EINTR)
			err(1, "poll");
		n = imsgbuf_read(&p->ib);
		if (n == 0)
			return 0;
		if (n == -1 && errno != EAGAIN && errno != EINTR) {
			if (errno == ECONNRESET)
				return 0;
			err(1, "read");
		}
	}
}

/* peer_next()'s -1 as a failure: what did not come within ms. */
static int
next_fail(const char *what, uint32_t id, int ms)
{
	if (errno != ETIMEDOUT)
		return -1;
	if (id != 0)
		return test_fail("%s %u within %d ms", what, id, ms);
	return test_fail("%s within %d ms", what, ms);
}

/* The peer's first message: IMSG_HELLO of this protocol's version. */
int
peer_hello(struct peer *p)
{
	struct msg_hello	 m;
	struct imsg		 imsg;
	int			 r;

	r = peer_next(p, test_now_ms() + (uint64_t)p->timeout_ms, &imsg);
	if (r == -1)
		return next_fail("no HELLO", 0, p->timeout_ms);
	if (r == 0)
		return test_fail("EOF before HELLO");
	if (msg_hello_get(&imsg, &m) == -1) {
		r = test_fail("HELLO: first message is %s",
		    imsg_type_name(imsg.hdr.type));
	} else if (m.version != MCVM_PROTO_VERSION)
		r = test_fail("HELLO: version %u", m.version);
	else
		r = 0;
	imsg_free(&imsg);
	return r;
}

/* A request of type with the next id; the caller puts its fields. */
struct ibuf *
peer_request(struct peer *p, uint32_t type, struct peer_call *c)
{
	struct ibuf	*b;

	c->id = p->next_id++;
	c->type = type;
	c->reply = imsg_reply_type(type);
	c->deadline = 0;
	c->timeout_ms = p->timeout_ms;
	if ((b = imsg_create(&p->ib, type, c->id, 0, 0)) == NULL)
		err(1, "imsg_create");
	return b;
}

/* Sends b; the request's deadline starts now. */
int
peer_send(struct peer *p, struct ibuf *b, struct peer_call *c)
{
	if (imsg_close(&p->ib, b) == -1)
		return test_fail("%s: %s", imsg_type_name(c->type),
		    strerror(errno));
	if (imsgbuf_flush(&p->ib) == -1)
		return test_fail("send %s: %s", imsg_type_name(c->type),
		    strerror(errno));
	peer_rearm(c, p->timeout_ms);
	return 0;
}

/* Request c's deadline is ms from now, for one sent earlier too. */
void
peer_rearm(struct peer_call *c, int ms)
{
	c->timeout_ms = ms;
	c->deadline = test_now_ms() + (uint64_t)ms;
}

/*
 * A message that does not end request id (0: none is waited for): one
 * with peerid 0 goes to p->unasked; a reply to an earlier request is
 * skipped with p->late_ok; any other fails.  imsg is freed.
 */
static int
peer_other(struct peer *p, uint32_t id, struct imsg *imsg)
{
	uint32_t	 peerid = imsg->hdr.peerid;
	int		 r;

	if (peerid == 0 && p->unasked != NULL)
		r = p->unasked(p, imsg);
	else if (peerid != 0 && peerid < (id != 0 ? id : p->next_id) &&
	    p->late_ok) {
		printf("# reply %s to earlier request %u\n",
		    imsg_type_name(imsg->hdr.type), peerid);
		r = 0;
	} else if (id != 0)
		r = test_fail("peerid %u (%s) while waiting for %u", peerid,
		    imsg_type_name(imsg->hdr.type), id);
	else
		r = test_fail("peerid %u (%s) unasked", peerid,
		    imsg_type_name(imsg->hdr.type));
	imsg_free(imsg);
	return r;
}

/*
 * The next message of request c: 1 for the one that ends it (its reply
 * type or p->error_type), 0 for one before it, which the caller checks.
 * On the way, peerid 0 goes to p->unasked and, with p->late_ok, replies
 * to earlier requests are skipped.  -1 on the end of the channel, the
 * deadline (c->timeout_ms; peer_rearm() moves it), bad framing, or a
 * message of another request.
 */
int
peer_wait(struct peer *p, struct peer_call *c, struct imsg *imsg)
{
	char	 what[64];
	int	 r;

	for (;;) {
		if ((r = peer_next(p, c->deadline, imsg)) == -1) {
			(void)snprintf(what, sizeof(what), "no reply to %s",
			    imsg_type_name(c->type));
			return next_fail(what, c->id, c->timeout_ms);
		}
		if (r == 0)
			return test_fail("EOF before the reply");
		if (imsg->hdr.peerid == c->id)
			break;
		if (peer_other(p, c->id, imsg) == -1)
			return -1;
	}
	if (imsg->hdr.type == c->reply || (p->error_type != IMSG_NONE &&
	    imsg->hdr.type == p->error_type))
		return 1;
	return 0;
}

/*
 * Sends request b and reads its messages: those before the reply go to
 * each (which returns 0, or -1 for one it does not expect), and *imsg
 * is the reply, which the caller frees.  0, or -1 (test_why()).
 */
int
peer_call(struct peer *p, struct ibuf *b, struct peer_call *c,
    int (*each)(struct imsg *, void *), void *arg, struct imsg *imsg)
{
	int	 r;

	if (peer_send(p, b, c) == -1)
		return -1;
	while ((r = peer_wait(p, c, imsg)) == 0) {
		r = each != NULL ? each(imsg, arg) : test_fail("%s before "
		    "the reply", imsg_type_name(imsg->hdr.type));
		imsg_free(imsg);
		if (r == -1)
			return -1;
	}
	return r == 1 ? 0 : -1;
}

/*
 * Reads one message while no request is waited for, within timeout_ms:
 * one with peerid 0 goes to p->unasked, a reply to an earlier request is
 * skipped with p->late_ok.  0, or -1 (test_why()).
 */
int
peer_pump(struct peer *p, int timeout_ms)
{
	struct imsg	 imsg;
	int		 r;

	r = peer_next(p, test_now_ms() + (uint64_t)timeout_ms, &imsg);
	if (r == -1)
		return next_fail("no message", 0, timeout_ms);
	if (r == 0)
		return test_fail("EOF from the peer");
	return peer_other(p, 0, &imsg);
}

/*
 * Reads up to the end of the channel, within p->timeout_ms: messages
 * with peerid 0 go to p->unasked, others are dropped.
 */
int
peer_drain(struct peer *p)
{
	struct imsg	 imsg;
	uint64_t	 deadline = test_now_ms() + (uint64_t)p->timeout_ms;
	int		 r;

	while ((r = peer_next(p, deadline, &imsg)) == 1) {
		r = 0;
		if (imsg.hdr.peerid == 0 && p->unasked != NULL)
			r = p->unasked(p, &imsg);
		imsg_free(&imsg);
		if (r == -1)
			return -1;
	}
	if (r == -1)
		return next_fail("no EOF", 0, p->timeout_ms);
	return 0;
}

/* Waits for the peer and prints how it ended: "exit code=N|signal=N". */
void
peer_reap(struct peer *p)
{
	int	 status;

	if (waitpid(p->pid, &status, 0) == -1)
		err(1, "waitpid");
	if (WIFEXITED(status))
		printf("exit code=%d\n", WEXITSTATUS(status));
	else
		printf("exit signal=%d\n", WTERMSIG(status));
	p->pid = -1;
}

/* The peer's end: peer_drain(), then peer_reap(); peer_die() on failure. */
void
peer_finish(struct peer *p)
{
	if (peer_drain(p) == -1)
		peer_die(p, test_why());
	peer_reap(p);
}

/* Prints "bad what", kills the peer and exits 1: the test failed. */
void
peer_die(struct peer *p, const char *what)
{
	printf("bad %s\n", what);
	fflush(stdout);
	if (p->pid > 0)
		(void)kill(p->pid, SIGKILL);
	exit(1);
}

/* How many fds the peer holds open. */
int
peer_fds(const struct peer *p)
{
	char		 path[64];
	struct dirent	*de;
	DIR		*d;
	int		 n = 0;

	(void)snprintf(path, sizeof(path), "/proc/%d/fd", (int)p->pid);
	if ((d = opendir(path)) == NULL)
		err(1, "%s", path);
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* Records why a test failed, for test_report(); returns -1. */
int
test_fail(const char *fmt, ...)
{
	char	 buf[sizeof(why)];
	va_list	 ap;

	/* Through buf: the reason may quote test_why(). */
	va_start(ap, fmt);
	(void)vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	memcpy(why, buf, sizeof(why));
	return -1;
}

const char *
test_why(void)
{
	return why;
}

/* "ok - name", or "not ok - name: why" after rv -1; counts it. */
void
test_report(const char *name, int rv)
{
	if (rv == 0) {
		printf("ok - %s\n", name);
		passed++;
	} else {
		printf("not ok - %s: %s\n", name, why);
		failed++;
	}
	fflush(stdout);
}

/* How many tests failed so far. */
int
test_failures(void)
{
	return failed;
}

/* Prints "N passed, N failed"; returns the exit status, 1 if any failed. */
int
test_summary(void)
{
	printf("%d passed, %d failed\n", passed, failed);
	fflush(stdout);
	return failed ? 1 : 0;
}

/* An errno value by its name, for test output ("0" for none). */
const char *
test_errname(uint32_t e)
{
	const char	*s;

	if (e == 0)
		return "0";
	if ((s = strerrorname_np((int)e)) == NULL)
		return "unknown";
	return s;
}
