/*
 * Running qemu-img: see qemuimg.h.
 *
 * stored's seccomp policy has neither fork nor execve (a compromised
 * stored could otherwise run anything its uid may).  So before that
 * policy is loaded, stored forks this helper: same uid, no capabilities,
 * no_new_privs, stored's empty network namespace, and nothing open but
 * its socketpair (on fd 3, where mcvmd's socket was).  The helper does
 * one thing: on request it runs
 *
 *	qemu-img create -q -f qcow2 -F raw -b mcvm-catalog:IMAGE -u FILE SIZE
 *
 * in a directory stored passes as an fd, and answers with the status and
 * the first QEMUIMG_OUTPUT_MAX bytes of qemu-img's stderr.  The helper's
 * own filter (stored_helper_sandbox) is a deny list, since qemu-img's
 * needs are wide: no namespaces, no ptrace, no sockets but AF_UNIX, no
 * kernel keyring, bpf or module calls.
 */
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "imsg.h"
#include "log.h"
#include "msg.h"
#include "proto.h"
#include "qemuimg.h"
#include "validate.h"

/* Private to stored and its helper; never on mcvmd's channel. */
#define QEMUIMG_REQ_OVERLAY	0x10001	/* str file, str image, u64 bytes;
					   the directory fd travels */
#define QEMUIMG_REP		0x10002	/* u32 status, str text */
#define QEMUIMG_FILE_MAX	64
#define QEMUIMG_REPLY_SLACK_MS	(5 * 1000)

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

/* In the forked child: qemu-img's whole world, then exec. */
static void __attribute__((noreturn))
qemuimg_child(pid_t ppid, int dirfd, int errfd, char *const argv[])
{
	static char *const envp[] = {
		"PATH=/usr/bin:/bin", "LC_ALL=C", NULL
	};
	sigset_t	 ss;
	int		 nullfd, sig;

	for (sig = 1; sig < NSIG; sig++)
		(void)signal(sig, SIG_DFL);
	sigemptyset(&ss);
	(void)sigprocmask(SIG_SETMASK, &ss, NULL);
	/* It dies with the helper; a helper already gone leaves no orphan. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1 ||
	    getppid() != ppid)
		_exit(126);
	if (dup2(errfd, STDERR_FILENO) == -1)
		_exit(126);
	if ((nullfd = open("/dev/null", O_RDWR | O_CLOEXEC)) == -1 ||
	    dup2(nullfd, STDIN_FILENO) == -1 ||
	    dup2(nullfd, STDOUT_FILENO) == -1) {
		child_msg("/dev/null: ", strerror(errno));
		_exit(126);
	}
	if (dirfd != -1 && fchdir(dirfd) == -1) {
		child_msg("fchdir: ", strerror(errno));
		_exit(126);
	}
	if (close_range(STDERR_FILENO + 1, ~0U, 0) == -1) {
		child_msg("close_range: ", strerror(errno));
		_exit(126);
	}
	child_rlimit(RLIMIT_AS, QEMUIMG_AS_MAX);
	child_rlimit(RLIMIT_FSIZE, QEMUIMG_FSIZE_MAX);
	child_rlimit(RLIMIT_NOFILE, QEMUIMG_NOFILE_MAX);
	child_rlimit(RLIMIT_CPU, QEMUIMG_CPU_SEC);
	child_rlimit(RLIMIT_CORE, 0);
	(void)umask(077);
	execve(QEMUIMG_PATH, argv, envp);
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
		if (*p == '\n' || *p == '\t')
			*p = ' ';
		else if ((unsigned char)*p < ' ' || (unsigned char)*p >= 0x7f)
			*p = '?';
	len = strlen(s);
	while (len > 0 && s[len - 1] == ' ')
		s[--len] = '\0';
}

/*
 * Runs QEMUIMG_PATH with argv in directory dirfd (-1: the current one).
 * Returns 0 when it exited 0; otherwise ETIMEDOUT (killed after
 * QEMUIMG_TIMEOUT_MS), EIO (it failed) or the errno of what failed
 * here, with qemu-img's stderr or an explanation in out.
 */
int
qemuimg_run(int dirfd, char *const argv[], char *out, size_t outlen)
{
	struct pollfd	 pfd;
	char		 scratch[512];
	uint64_t	 deadline;
	size_t		 used = 0;
	ssize_t		 n;
	pid_t		 pid, self = getpid();
	int		 p[2], status, killed = 0, timeout, rc;
	struct timespec	 nap = { 0, QEMUIMG_POLL_MS * 1000000L };

	if (outlen == 0)
		return EINVAL;
	out[0] = '\0';
	if (pipe2(p, O_CLOEXEC) == -1) {
		rc = errno;
		(void)snprintf(out, outlen, "pipe: %s", strerror(rc));
		return rc;
	}
	deadline = now_ms() + QEMUIMG_TIMEOUT_MS;
	if ((pid = fork()) == -1) {
		rc = errno;
		close(p[0]);
		close(p[1]);
		(void)snprintf(out, outlen, "fork: %s", strerror(rc));
		return rc;
	}
	if (pid == 0)
		qemuimg_child(self, dirfd, p[1], argv);
	close(p[1]);

	/* stderr, until EOF or the deadline; beyond outlen it is dropped. */
	pfd.fd = p[0];
	pfd.events = POLLIN;
	for (;;) {
		uint64_t t = now_ms();

		if (t >= deadline) {
			(void)kill(pid, SIGKILL);
			killed = 1;
			break;
		}
		timeout = (int)(deadline - t);
		if (poll(&pfd, 1, timeout) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (used + 1 < outlen) {
			n = read(p[0], out + used, outlen - 1 - used);
			if (n > 0) {
				used += (size_t)n;
				out[used] = '\0';
			}
		} else
			n = read(p[0], scratch, sizeof(scratch));
		if (n == -1 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
	}
	close(p[0]);

	/* qemu-img may close stderr and linger: reap within the deadline. */
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			break;
		if (r == -1 && errno != EINTR) {
			rc = errno;
			(void)snprintf(out, outlen, "waitpid: %s",
			    strerror(rc));
			return rc;
		}
		if (!killed && now_ms() >= deadline) {
			(void)kill(pid, SIGKILL);
			killed = 1;
		}
		(void)nanosleep(&nap, NULL);
	}
	qemuimg_clean_text(out);
	if (killed) {
		(void)snprintf(out, outlen, "qemu-img did not finish within "
		    "%d s and was killed", QEMUIMG_TIMEOUT_MS / 1000);
		return ETIMEDOUT;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (out[0] == '\0') {
		if (WIFEXITED(status))
			(void)snprintf(out, outlen, "qemu-img exited with "
			    "status %d", WEXITSTATUS(status));
		else
			(void)snprintf(out, outlen, "qemu-img killed by "
			    "signal %d", WIFSIGNALED(status) ?
			    WTERMSIG(status) : 0);
	}
	return EIO;
}

/*
 * Creates file in dirfd: a qcow2 overlay of bytes whose backing, raw, is
 * recorded as mcvm-catalog:IMAGE and never opened (-u).  QEMU is given
 * the base as an explicit backing node from an fd, never this name.
 */
int
qemuimg_overlay(int dirfd, const char *file, const char *image,
    uint64_t bytes, char *out, size_t outlen)
{
	char	 backing[sizeof(CATALOG_BACKING_PREFIX) + CONF_NAME_MAX];
	char	 size[32];
	char	*argv[QEMUIMG_ARGV_MAX];
	int	 i = 0;

	if (!valid_object_name(image) || strchr(file, '/') != NULL ||
	    strchr(file, ':') != NULL || file[0] == '\0' || file[0] == '-' ||
	    bytes == 0) {
		(void)snprintf(out, outlen, "invalid overlay request");
		return EINVAL;
	}
	(void)snprintf(backing, sizeof(backing), "%s%s",
	    CATALOG_BACKING_PREFIX, image);
	(void)snprintf(size, sizeof(size), "%" PRIu64, bytes);
	argv[i++] = "qemu-img";
	argv[i++] = "create";
	argv[i++] = "-q";
	argv[i++] = "-f";
	argv[i++] = "qcow2";
	argv[i++] = "-F";
	argv[i++] = "raw";
	argv[i++] = "-b";
	argv[i++] = backing;
	argv[i++] = "-u";
	argv[i++] = (char *)file;
	argv[i++] = size;
	argv[i] = NULL;
	return qemuimg_run(dirfd, argv, out, outlen);
}

static void
helper_reply(struct imsgbuf *ib, uint32_t id, int status, const char *text)
{
	struct ibuf	*b;

	if ((b = imsg_create(ib, QEMUIMG_REP, id, 0, 64 + strlen(text))) ==
	    NULL)
		_exit(1);
	m_add_u32(b, (uint32_t)status);
	m_add_str(b, text);
	if (imsg_close(ib, b) == -1 || imsgbuf_flush(ib) == -1)
		_exit(1);
}

static void __attribute__((noreturn))
helper_main(int sock)
{
	struct imsgbuf	 ib;
	struct imsg	 imsg;
	struct mreader	 r;
	const char	*file, *image;
	char		 out[QEMUIMG_OUTPUT_MAX];
	uint64_t	 bytes;
	ssize_t		 n;
	int		 dirfd, rc;

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
			if (imsg.hdr.type != QEMUIMG_REQ_OVERLAY ||
			    m_get_str(&r, &file, QEMUIMG_FILE_MAX) == -1 ||
			    m_get_str(&r, &image, CONF_NAME_MAX) == -1 ||
			    m_get_u64(&r, &bytes) == -1 || m_end(&r) == -1 ||
			    (dirfd = imsg_get_fd(&imsg)) == -1)
				_exit(1);
			rc = qemuimg_overlay(dirfd, file, image, bytes, out,
			    sizeof(out));
			close(dirfd);
			helper_reply(&ib, imsg.hdr.peerid, rc, out);
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

/*
 * Asks the helper for an overlay (see qemuimg_overlay).  A helper that
 * breaks the protocol or does not answer in time is fatal: it is part of
 * stored.
 */
int
qemuimg_helper_overlay(struct imsgbuf *ib, int dirfd, const char *file,
    const char *image, uint64_t bytes, char *out, size_t outlen)
{
	static uint32_t	 seq;
	struct ibuf	*b;
	struct imsg	 imsg;
	struct mreader	 r;
	struct pollfd	 pfd;
	const char	*text;
	uint64_t	 deadline;
	uint32_t	 status;
	ssize_t		 n;
	int		 fd;

	if ((fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0)) == -1) {
		(void)snprintf(out, outlen, "dup: %s", strerror(errno));
		return errno;
	}
	seq++;
	if ((b = imsg_create(ib, QEMUIMG_REQ_OVERLAY, seq, 0,
	    64 + strlen(file) + strlen(image))) == NULL) {
		close(fd);
		fatal("%s: imsg_create", __func__);
	}
	m_add_str(b, file);
	m_add_str(b, image);
	m_add_u64(b, bytes);
	imsg_set_fd(b, fd);
	if (imsg_close(ib, b) == -1 || imsgbuf_flush(ib) == -1)
		fatal("%s: qemu-img helper", __func__);

	deadline = now_ms() + QEMUIMG_TIMEOUT_MS + QEMUIMG_REPLY_SLACK_MS;
	for (;;) {
		if ((n = imsg_get(ib, &imsg)) == -1)
			fatalx("%s: bad framing from the qemu-img helper",
			    __func__);
		if (n == 1)
			break;
		pfd.fd = ib->fd;
		pfd.events = POLLIN;
		if (now_ms() >= deadline)
			fatalx("%s: the qemu-img helper does not answer",
			    __func__);
		if (poll(&pfd, 1, (int)(deadline - now_ms())) == -1 &&
		    errno != EINTR)
			fatal("%s: poll", __func__);
		if ((n = imsgbuf_read(ib)) == 0)
			fatalx("%s: the qemu-img helper died", __func__);
		if (n == -1 && errno != EAGAIN && errno != EINTR)
			fatal("%s: qemu-img helper", __func__);
	}
	m_init(&r, &imsg);
	if (imsg.hdr.type != QEMUIMG_REP || imsg.hdr.peerid != seq ||
	    imsg.fd != -1 || m_get_u32(&r, &status) == -1 ||
	    m_get_str(&r, &text, QEMUIMG_OUTPUT_MAX) == -1 || m_end(&r) == -1)
		fatalx("%s: bad reply from the qemu-img helper", __func__);
	(void)snprintf(out, outlen, "%s", text);
	imsg_free(&imsg);
	return (int)status;
}
