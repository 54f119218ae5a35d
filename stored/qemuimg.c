/*
 * Running qemu-img: see qemuimg.h.
 *
 * stored's seccomp policy has neither fork nor execve (a compromised
 * stored could otherwise run anything its uid may).  So before that
 * policy is loaded, stored forks this helper: same uid, no capabilities,
 * no_new_privs, stored's empty network namespace, and nothing open but
 * its socketpair (on fd 3, where mcvmd's socket was).  The helper's own
 * filter (stored_helper_sandbox) holds for every process it starts.
 *
 * A job is one qemu-img.  stored makes a socketpair for it and passes
 * one end to the helper, which forks a job process owning that end; the
 * job reads its request there (argv, limits, the directory to run in and
 * at most one more fd), runs qemu-img, and answers there: progress, then
 * the result, and exits.  So stored's event loop never waits on qemu-img,
 * jobs run side by side, and each has a channel of its own: stored
 * cancels a job by closing its end, and the job, which watches it, kills
 * qemu-img.  The helper itself only forks.
 *
 * A malformed message on either channel is fatal to its reader: both
 * ends are stored's own code.  qemu-img's output is not: it is read
 * within bounds, cleaned to printable text, and its progress parsed.
 */
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "imsg.h"
#include "log.h"
#include "msg.h"
#include "proc.h"
#include "proto.h"
#include "qemuimg.h"

/* Private to stored, its helper and its jobs; never on mcvmd's channel. */
#define QI_HELPER_JOB	0x10001	/* the job's socket travels */
#define QI_JOB_FD	0x10002	/* u32 role (QI_FD_*); the fd travels */
#define QI_JOB_RUN	0x10003	/* u32 timeout, u64 fsize, u32 flags,
				   u32 argc, str argv[argc] */
#define QI_JOB_PROGRESS	0x10004	/* u32 permille */
#define QI_JOB_DONE	0x10005	/* u32 status, str text, bytes out */
#define QI_FD_DIR	0
#define QI_FD_EXTRA	1
#define QI_REQUEST_MS	(5 * 1000)	/* for a job's request to come */

struct qemuimg_job {
	struct imsgev		 iev;
	qemuimg_done_fn		 done;
	qemuimg_progress_fn	 progress;
	void			*arg;
};

static struct imsgev	 helper;
static unsigned int	 njobs;

static uint64_t
now_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
child_msg(const char *a, const char *b)
{
	(void)!write(STDERR_FILENO, a, strlen(a));
	(void)!write(STDERR_FILENO, b, strlen(b));
	(void)!write(STDERR_FILENO, "\n", 1);
}

static void
child_rlimit(int res, rlim_t v)
{
	struct rlimit	 rl = { v, v };

	if (setrlimit(res, &rl) == -1) {
		child_msg("setrlimit: ", strerror(errno));
		_exit(126);
	}
}

/*
 * In the forked child: qemu-img's whole world, then exec.  fds[0] and
 * fds[1] become its stdout and stderr; spec's xfd its QEMUIMG_XFD.
 */
static void __attribute__((noreturn))
qemuimg_child(pid_t ppid, const struct qemuimg_spec *spec, int outfd,
    int errfd)
{
	static char *const envp[] = {
		"PATH=/usr/bin:/bin", "LC_ALL=C", NULL
	};
	sigset_t	 ss;
	int		 nullfd, xfd = -1, sig;

	for (sig = 1; sig < NSIG; sig++)
		(void)signal(sig, SIG_DFL);
	sigemptyset(&ss);
	(void)sigprocmask(SIG_SETMASK, &ss, NULL);
	/* It dies with its job; a job already gone leaves no orphan. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1 ||
	    getppid() != ppid)
		_exit(126);
	/* Above every fd the dup2s below overwrite. */
	if (spec->xfd != -1 &&
	    (xfd = fcntl(spec->xfd, F_DUPFD, QEMUIMG_XFD + 8)) == -1)
		_exit(126);
	if (dup2(errfd, STDERR_FILENO) == -1)
		_exit(126);
	if ((nullfd = open("/dev/null", O_RDWR | O_CLOEXEC)) == -1 ||
	    dup2(nullfd, STDIN_FILENO) == -1 ||
	    dup2(outfd != -1 ? outfd : nullfd, STDOUT_FILENO) == -1) {
		child_msg("/dev/null: ", strerror(errno));
		_exit(126);
	}
	if (spec->dirfd != -1 && fchdir(spec->dirfd) == -1) {
		child_msg("fchdir: ", strerror(errno));
		_exit(126);
	}
	if (xfd != -1 && dup2(xfd, QEMUIMG_XFD) == -1)
		_exit(126);
	if (close_range(xfd != -1 ? QEMUIMG_XFD + 1 : STDERR_FILENO + 1, ~0U,
	    0) == -1) {
		child_msg("close_range: ", strerror(errno));
		_exit(126);
	}
	child_rlimit(RLIMIT_AS, QEMUIMG_AS_MAX);
	child_rlimit(RLIMIT_FSIZE, spec->fsize_max);
	child_rlimit(RLIMIT_NOFILE, QEMUIMG_NOFILE_MAX);
	child_rlimit(RLIMIT_CPU, spec->timeout_ms / 1000 + 1);
	child_rlimit(RLIMIT_CORE, 0);
	(void)umask(077);
	execve(QEMUIMG_PATH, (char *const *)spec->argv, envp);
	child_msg("exec " QEMUIMG_PATH ": ", strerror(errno));
	_exit(127);
}

/* qemu-img's words, on one line, printable, within the buffer. */
static void
qemuimg_clean_text(char *s)
{
	size_t	 len;
	char	*p;

	for (p = s; *p != '\0'; p++)
		if (*p == '\n' || *p == '\t' || *p == '\r')
			*p = ' ';
		else if ((unsigned char)*p < ' ' || (unsigned char)*p >= 0x7f)
			*p = '?';
	len = strlen(s);
	while (len > 0 && s[len - 1] == ' ')
		s[--len] = '\0';
}

/*
 * The last "(P/100%)" of -p's output in buf, in permille; -1 if none.
 * qemu-img prints P as %4.2f, overwriting the line with \r.
 */
static int
qemuimg_progress_parse(const char *buf, size_t len)
{
	const char	*p, *end = buf + len;
	int		 best = -1, v, dec;

	for (p = buf; p < end; p++) {
		const char *q = p + 1;

		if (*p != '(')
			continue;
		for (v = 0; q < end && *q >= '0' && *q <= '9' && v <= 100; q++)
			v = v * 10 + (*q - '0');
		if (q == p + 1 || q >= end || *q != '.' || ++q >= end ||
		    *q < '0' || *q > '9')
			continue;
		dec = *q - '0';
		while (q < end && *q >= '0' && *q <= '9')
			q++;
		if (end - q >= 6 && memcmp(q, "/100%)", 6) == 0 && v <= 100)
			best = v == 100 ? 1000 : v * 10 + dec;
	}
	return best;
}

int
qemuimg_argv_check(const char *const *argv)
{
	size_t	 i;

	if (argv[0] == NULL || strcmp(argv[0], "qemu-img") != 0)
		return -1;
	for (i = 0; argv[i] != NULL; i++)
		if (i >= QEMUIMG_ARGV_MAX || strlen(argv[i]) > QEMUIMG_ARG_MAX)
			return -1;
	return 0;
}

/*
 * Runs one qemu-img as spec says, until it exits, its deadline passes
 * (then it is killed: ETIMEDOUT), or cancelfd (if not -1) hangs up or
 * becomes readable (killed: ECANCELED).  0 when it exited 0, else EIO or
 * the errno of what failed here, with qemu-img's stderr or why in text.
 * With QEMUIMG_STDOUT its stdout is kept in out (*outlen bytes, at most
 * its size - 1, NUL-terminated; more is EFBIG); with QEMUIMG_PROGRESS,
 * progress gets each new permille.
 */
int
qemuimg_run(const struct qemuimg_spec *spec, int cancelfd,
    void (*progress)(uint32_t, void *), void *arg, char *text,
    size_t textlen, char *out, size_t *outlen)
{
	struct pollfd	 pfd[3];
	char		 scratch[512], tail[256];
	uint64_t	 deadline;
	size_t		 used = 0, oused = 0, tlen = 0, cap;
	ssize_t		 n;
	pid_t		 pid, self = getpid();
	int		 ep[2], op[2] = { -1, -1 }, status, killed = 0;
	int		 timeout, rc, last = -1, pc, big = 0, i;
	struct timespec	 nap = { 0, QEMUIMG_POLL_MS * 1000000L };

	if (textlen == 0 || qemuimg_argv_check(spec->argv) == -1)
		return EINVAL;
	text[0] = '\0';
	cap = (spec->flags & QEMUIMG_STDOUT) && out != NULL ? *outlen : 0;
	if (outlen != NULL)
		*outlen = 0;
	if (pipe2(ep, O_CLOEXEC) == -1 || ((spec->flags &
	    (QEMUIMG_STDOUT | QEMUIMG_PROGRESS)) && pipe2(op, O_CLOEXEC) ==
	    -1)) {
		rc = errno;
		(void)snprintf(text, textlen, "pipe: %s", strerror(rc));
		return rc;
	}
	deadline = now_ms() + spec->timeout_ms;
	if ((pid = fork()) == -1) {
		rc = errno;
		close(ep[0]);
		close(ep[1]);
		if (op[0] != -1) {
			close(op[0]);
			close(op[1]);
		}
		(void)snprintf(text, textlen, "fork: %s", strerror(rc));
		return rc;
	}
	if (pid == 0)
		qemuimg_child(self, spec, op[1], ep[1]);
	close(ep[1]);
	if (op[1] != -1)
		close(op[1]);

	/* Its output, until EOF, the deadline or a cancel. */
	pfd[0].fd = ep[0];
	pfd[1].fd = op[0];
	pfd[2].fd = cancelfd;
	for (i = 0; i < 3; i++)
		pfd[i].events = POLLIN;
	while (!killed && (pfd[0].fd != -1 || pfd[1].fd != -1)) {
		uint64_t t = now_ms();

		if (t >= deadline) {
			(void)kill(pid, SIGKILL);
			killed = ETIMEDOUT;
			break;
		}
		timeout = (int)(deadline - t);
		if (poll(pfd, 3, timeout) == -1) {
			if (errno == EINTR)
				continue;
			(void)kill(pid, SIGKILL);
			killed = errno;
			break;
		}
		if (pfd[2].fd != -1 && pfd[2].revents != 0) {
			(void)kill(pid, SIGKILL);
			killed = ECANCELED;
			break;
		}
		if (pfd[0].fd != -1 && pfd[0].revents != 0) {
			if (used + 1 < textlen) {
				n = read(ep[0], text + used,
				    textlen - 1 - used);
				if (n > 0) {
					used += (size_t)n;
					text[used] = '\0';
				}
			} else
				n = read(ep[0], scratch, sizeof(scratch));
			if (n == 0 || (n == -1 && errno != EINTR &&
			    errno != EAGAIN))
				pfd[0].fd = -1;
		}
		if (pfd[1].fd != -1 && pfd[1].revents != 0) {
			if (cap > 0 && oused + 1 < cap)
				n = read(op[0], out + oused, cap - 1 - oused);
			else
				n = read(op[0], scratch, sizeof(scratch));
			if (n > 0 && cap > 0) {
				if (oused + 1 < cap)
					oused += (size_t)n;
				else
					big = 1;
			} else if (n > 0 && progress != NULL) {
				if (tlen + (size_t)n > sizeof(tail)) {
					/* Keep the newest bytes only. */
					size_t keep = sizeof(tail) / 2;

					if (tlen > keep) {
						memmove(tail, tail + tlen -
						    keep, keep);
						tlen = keep;
					}
				}
				if ((size_t)n > sizeof(tail) - tlen)
					n = (ssize_t)(sizeof(tail) - tlen);
				memcpy(tail + tlen, scratch, (size_t)n);
				tlen += (size_t)n;
				pc = qemuimg_progress_parse(tail, tlen);
				if (pc != -1 && pc != last) {
					last = pc;
					progress((uint32_t)pc, arg);
				}
			}
			if (n == 0 || (n == -1 && errno != EINTR &&
			    errno != EAGAIN))
				pfd[1].fd = -1;
		}
	}
	close(ep[0]);
	if (op[0] != -1)
		close(op[0]);

	/* qemu-img may close its output and linger: reap within the
	 * deadline. */
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			break;
		if (r == -1 && errno != EINTR) {
			rc = errno;
			(void)snprintf(text, textlen, "waitpid: %s",
			    strerror(rc));
			return rc;
		}
		if (!killed && now_ms() >= deadline) {
			(void)kill(pid, SIGKILL);
			killed = ETIMEDOUT;
		}
		(void)nanosleep(&nap, NULL);
	}
	qemuimg_clean_text(text);
	if (cap > 0) {
		out[oused] = '\0';
		*outlen = oused;
	}
	if (killed == ETIMEDOUT) {
		(void)snprintf(text, textlen, "qemu-img did not finish within "
		    "%u s and was killed", spec->timeout_ms / 1000);
		return ETIMEDOUT;
	}
	if (killed == ECANCELED) {
		(void)snprintf(text, textlen, "cancelled");
		return ECANCELED;
	}
	if (killed != 0) {
		(void)snprintf(text, textlen, "poll: %s", strerror(killed));
		return killed;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		if (big) {
			(void)snprintf(text, textlen, "qemu-img wrote more "
			    "than %zu bytes", cap - 1);
			return EFBIG;
		}
		return 0;
	}
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXFSZ) {
		(void)snprintf(text, textlen, "qemu-img would write a file "
		    "over %" PRIu64 " MiB, the limit of this operation",
		    spec->fsize_max >> 20);
		return EFBIG;
	}
	if (text[0] == '\0') {
		if (WIFEXITED(status))
			(void)snprintf(text, textlen, "qemu-img exited with "
			    "status %d", WEXITSTATUS(status));
		else
			(void)snprintf(text, textlen, "qemu-img killed by "
			    "signal %d", WIFSIGNALED(status) ?
			    WTERMSIG(status) : 0);
	}
	return EIO;
}

/* --- a job process ------------------------------------------------------ */

static void
job_send(struct imsgbuf *ib, uint32_t type, const void *a, size_t alen,
    uint32_t status, const char *text)
{
	struct ibuf	*b;

	if ((b = imsg_create(ib, type, 0, 0, 64 + alen +
	    (text != NULL ? strlen(text) : 0))) == NULL)
		_exit(1);
	if (type == QI_JOB_PROGRESS)
		m_add_u32(b, status);
	else {
		m_add_u32(b, status);
		m_add_str(b, text);
		m_add_bytes(b, a, alen);
	}
	if (imsg_close(ib, b) == -1 || imsgbuf_flush(ib) == -1)
		_exit(1);
}

static void
job_progress(uint32_t permille, void *arg)
{
	job_send(arg, QI_JOB_PROGRESS, NULL, 0, permille, NULL);
}

/* The next message of a job's request, within its deadline. */
static void
job_get(struct imsgbuf *ib, struct imsg *imsg, uint64_t deadline)
{
	struct pollfd	 pfd = { ib->fd, POLLIN, 0 };
	ssize_t		 n;

	for (;;) {
		if ((n = imsg_get(ib, imsg)) == -1)
			_exit(1);
		if (n == 1)
			return;
		if (now_ms() >= deadline ||
		    poll(&pfd, 1, (int)(deadline - now_ms())) == 0)
			_exit(1);
		if ((n = imsgbuf_read(ib)) == 0 ||
		    (n == -1 && errno != EAGAIN && errno != EINTR))
			_exit(1);
	}
}

static void __attribute__((noreturn))
job_main(int sock)
{
	static char		 out[QEMUIMG_STDOUT_MAX];
	struct qemuimg_spec	 spec;
	struct imsgbuf		 ib;
	struct imsg		 imsg;
	struct mreader		 r;
	const char		*s;
	char			 text[QEMUIMG_OUTPUT_MAX];
	uint64_t		 deadline = now_ms() + QI_REQUEST_MS;
	uint32_t		 role, argc, i;
	size_t			 outlen = sizeof(out);
	int			 rc, nfds = 0;

	(void)signal(SIGCHLD, SIG_DFL);
	if (imsgbuf_init(&ib, sock) == -1)
		_exit(1);
	memset(&spec, 0, sizeof(spec));
	spec.dirfd = spec.xfd = -1;
	for (;;) {
		job_get(&ib, &imsg, deadline);
		m_init(&r, &imsg);
		if (imsg.hdr.type == QI_JOB_RUN)
			break;
		if (imsg.hdr.type != QI_JOB_FD || nfds++ == 2 ||
		    m_get_u32(&r, &role) == -1 || m_end(&r) == -1 ||
		    imsg.fd == -1 || role > QI_FD_EXTRA)
			_exit(1);
		if (role == QI_FD_DIR)
			spec.dirfd = imsg_get_fd(&imsg);
		else
			spec.xfd = imsg_get_fd(&imsg);
		imsg_free(&imsg);
	}
	if (spec.dirfd == -1 || imsg.fd != -1 ||
	    m_get_u32(&r, &spec.timeout_ms) == -1 ||
	    m_get_u64(&r, &spec.fsize_max) == -1 ||
	    m_get_u32(&r, &spec.flags) == -1 ||
	    m_get_u32(&r, &argc) == -1 || argc == 0 ||
	    argc > QEMUIMG_ARGV_MAX)
		_exit(1);
	for (i = 0; i < argc; i++) {
		if (m_get_str(&r, &s, QEMUIMG_ARG_MAX) == -1)
			_exit(1);
		spec.argv[i] = s;
	}
	spec.argv[argc] = NULL;
	if (m_end(&r) == -1 || spec.timeout_ms == 0 || spec.fsize_max == 0)
		_exit(1);
	rc = qemuimg_run(&spec, sock, job_progress, &ib, text, sizeof(text),
	    out, &outlen);
	/* The strings of argv are the request's: it is never freed. */
	job_send(&ib, QI_JOB_DONE, out, (spec.flags & QEMUIMG_STDOUT) ?
	    outlen : 0, (uint32_t)rc, text);
	_exit(0);
}

/* --- the helper ---------------------------------------------------------- */

static void __attribute__((noreturn))
helper_main(int sock)
{
	struct imsgbuf	 ib;
	struct imsg	 imsg;
	struct mreader	 r;
	ssize_t		 n;
	pid_t		 pid;
	int		 fd;

	/* Its jobs are reaped by the kernel. */
	(void)signal(SIGCHLD, SIG_IGN);
	if (imsgbuf_init(&ib, sock) == -1)
		_exit(1);
	for (;;) {
		n = imsgbuf_read(&ib);
		if (n == 0)
			_exit(0);	/* stored is gone */
		if (n == -1) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			_exit(1);
		}
		for (;;) {
			if ((n = imsg_get(&ib, &imsg)) == -1)
				_exit(1);
			if (n == 0)
				break;
			m_init(&r, &imsg);
			if (imsg.hdr.type != QI_HELPER_JOB ||
			    m_end(&r) == -1 || (fd = imsg_get_fd(&imsg)) == -1)
				_exit(1);
			if ((pid = fork()) == 0) {
				close(sock);
				if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0,
				    0) == -1)
					_exit(1);
				job_main(fd);
			}
			/* A job that cannot start: stored sees its end
			 * hang up. */
			close(fd);
			imsg_free(&imsg);
		}
	}
}

/*
 * Forks the helper.  Call after the privilege drop and before stored's
 * own seccomp filter; sandbox, if not NULL, is the helper's filter.
 * Returns the helper's pid and its socket in *sock.
 */
pid_t
qemuimg_helper_start(int *sock, void (*sandbox)(void))
{
	pid_t	 ppid = getpid(), pid;
	int	 sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1)
		fatal("%s: socketpair", __func__);
	if ((pid = fork()) == -1)
		fatal("%s: fork", __func__);
	if (pid == 0) {
		/* Its channel replaces mcvmd's on fd 3; nothing else. */
		if (dup2(sv[1], PROC_PARENT_SOCK_FILENO) == -1 ||
		    close_range(PROC_PARENT_SOCK_FILENO + 1, ~0U, 0) == -1)
			_exit(1);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1 ||
		    getppid() != ppid)
			_exit(1);
		(void)signal(SIGTERM, SIG_DFL);
		(void)signal(SIGINT, SIG_IGN);
		if (sandbox != NULL)
			sandbox();
		helper_main(PROC_PARENT_SOCK_FILENO);
	}
	close(sv[1]);
	*sock = sv[0];
	return pid;
}

/* --- stored's side ------------------------------------------------------- */

static void
helper_dispatch(int fd, short event, void *arg)
{
	struct imsg	 imsg;

	if (imsgev_read(&helper, event) == -1)
		fatalx("the qemu-img helper died");
	/* It never sends anything. */
	if (imsg_get(&helper.ibuf, &imsg) != 0)
		fatalx("the qemu-img helper broke its protocol");
}

/* The helper's channel, driven by stored's event loop. */
void
qemuimg_init(int sock)
{
	if (imsgev_init(&helper, sock, "qemu-img helper", helper_dispatch,
	    NULL) == -1)
		fatal("%s", __func__);
}

unsigned int
qemuimg_running(void)
{
	return njobs;
}

static void
job_free(struct qemuimg_job *j)
{
	event_del(&j->iev.ev);
	imsgbuf_clear(&j->iev.ibuf);
	close(j->iev.ibuf.fd);
	free(j);
	njobs--;
}

/* Ends a job without its callback: qemu-img is killed. */
void
qemuimg_cancel(struct qemuimg_job *j)
{
	if (j != NULL)
		job_free(j);
}

static void
job_end(struct qemuimg_job *j, int status, const char *text,
    const char *out, size_t outlen)
{
	struct qemuimg_result	 res = { status, text, out, outlen };
	qemuimg_done_fn		 done = j->done;
	void			*arg = j->arg;

	job_free(j);
	done(&res, arg);
}

static void
job_dispatch(int fd, short event, void *arg)
{
	struct qemuimg_job	*j = arg;
	struct imsg		 imsg;
	struct mreader		 r;
	const char		*text;
	const void		*out;
	static char		 copy[QEMUIMG_STDOUT_MAX];
	char			 why[QEMUIMG_OUTPUT_MAX + 1];
	size_t			 outlen;
	uint32_t		 v;
	ssize_t			 n;

	if (imsgev_read(&j->iev, event) == -1) {
		job_end(j, EIO, "the qemu-img job ended without a result",
		    "", 0);
		return;
	}
	for (;;) {
		if ((n = imsg_get(&j->iev.ibuf, &imsg)) == -1)
			fatalx("bad framing from a qemu-img job");
		if (n == 0)
			return;
		m_init(&r, &imsg);
		if (imsg.fd != -1 || m_get_u32(&r, &v) == -1)
			fatalx("malformed message from a qemu-img job");
		if (imsg.hdr.type == QI_JOB_PROGRESS) {
			if (m_end(&r) == -1 || v > 1000)
				fatalx("malformed progress from a qemu-img "
				    "job");
			if (j->progress != NULL)
				j->progress(v, j->arg);
			imsg_free(&imsg);
			continue;
		}
		if (imsg.hdr.type != QI_JOB_DONE ||
		    m_get_str(&r, &text, QEMUIMG_OUTPUT_MAX) == -1 ||
		    m_get_bytes(&r, &out, &outlen, QEMUIMG_STDOUT_MAX - 1) ==
		    -1 || m_end(&r) == -1)
			fatalx("malformed result from a qemu-img job");
		/* The result outlives the message, and job_end frees j. */
		memcpy(copy, out, outlen);
		copy[outlen] = '\0';
		(void)snprintf(why, sizeof(why), "%s", text);
		imsg_free(&imsg);
		job_end(j, (int)v, why, copy, outlen);
		return;
	}
}

static void
job_send_fd(struct qemuimg_job *j, uint32_t role, int fd)
{
	struct ibuf	*b;
	int		 dup;

	if ((dup = fcntl(fd, F_DUPFD_CLOEXEC, 0)) == -1)
		fatal("%s: dup", __func__);
	if ((b = imsg_create(&j->iev.ibuf, QI_JOB_FD, 0, 0, 8)) == NULL)
		fatal("%s", __func__);
	m_add_u32(b, role);
	imsg_set_fd(b, dup);
	if (imsgev_close(&j->iev, b) == -1)
		fatal("%s", __func__);
}

/*
 * Starts a job; done runs once when it ends (never from within this
 * call), unless it is cancelled.  0 with *jp set, or an errno value with
 * why in text: EBUSY when QEMUIMG_JOBS_MAX run.
 */
int
qemuimg_start(const struct qemuimg_spec *spec, qemuimg_done_fn done,
    qemuimg_progress_fn progress, void *arg, struct qemuimg_job **jp,
    char *text, size_t len)
{
	struct qemuimg_job	*j;
	struct ibuf		*b;
	size_t			 i, argc, need = 64;
	int			 sv[2];

	if (qemuimg_argv_check(spec->argv) == -1)
		fatalx("%s: a bad argv", __func__);
	if (njobs >= QEMUIMG_JOBS_MAX) {
		(void)snprintf(text, len, "the store runs %u image "
		    "operations already; retry when one has ended", njobs);
		return EBUSY;
	}
	if ((j = calloc(1, sizeof(*j))) == NULL ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1) {
		int e = errno;

		free(j);
		(void)snprintf(text, len, "cannot start qemu-img: %s",
		    strerror(e));
		return e;
	}
	j->done = done;
	j->progress = progress;
	j->arg = arg;
	if (imsgev_init(&j->iev, sv[0], "qemu-img job", job_dispatch, j) ==
	    -1)
		fatal("%s", __func__);
	njobs++;
	/* The helper forks the job with the other end. */
	if ((b = imsg_create(&helper.ibuf, QI_HELPER_JOB, 0, 0, 0)) == NULL)
		fatal("%s", __func__);
	imsg_set_fd(b, sv[1]);
	if (imsgev_close(&helper, b) == -1)
		fatal("%s", __func__);

	job_send_fd(j, QI_FD_DIR, spec->dirfd);
	if (spec->xfd != -1)
		job_send_fd(j, QI_FD_EXTRA, spec->xfd);
	for (argc = 0; spec->argv[argc] != NULL; argc++)
		need += 8 + strlen(spec->argv[argc]);
	if ((b = imsg_create(&j->iev.ibuf, QI_JOB_RUN, 0, 0, need)) == NULL)
		fatal("%s", __func__);
	m_add_u32(b, spec->timeout_ms);
	m_add_u64(b, spec->fsize_max);
	m_add_u32(b, spec->flags);
	m_add_u32(b, (uint32_t)argc);
	for (i = 0; i < argc; i++)
		m_add_str(b, spec->argv[i]);
	if (imsgev_close(&j->iev, b) == -1)
		fatal("%s", __func__);
	*jp = j;
	return 0;
}
