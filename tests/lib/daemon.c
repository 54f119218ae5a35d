/*
 * For test drivers that play mcvmd: starts a daemon with its end of a
 * socketpair on PROC_PARENT_SOCK_FILENO, as mcvmd would.
 */
#include <sys/socket.h>
#include <sys/wait.h>

#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon.h"
#include "imsg.h"
#include "proto.h"

#define DAEMON_ARGS_MAX		64

/* Returns the daemon's pid; *fd is the driver's end of the channel. */
pid_t
test_daemon_start(const char *bin, const char *const argv[], int *fd)
{
	const char	*asan;
	char		 opts[512];
	int		 sv[2];
	pid_t		 pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1)
		err(1, "socketpair");
	if ((pid = fork()) == -1)
		err(1, "fork");
	if (pid == 0) {
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
	*fd = sv[0];
	return pid;
}

static uint64_t
test_now_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * The daemon's next message, or 0 at EOF.  After timeout_ms without one
 * the daemon is killed and the driver exits: a hung daemon fails the test.
 */
int
test_daemon_next(struct imsgbuf *ib, pid_t pid, int timeout_ms,
    struct imsg *imsg)
{
	struct pollfd	 pfd = { .fd = ib->fd, .events = POLLIN };
	uint64_t	 deadline = test_now_ms() + (uint64_t)timeout_ms;
	ssize_t		 n;
	int		 r;

	for (;;) {
		if ((r = imsg_get(ib, imsg)) == -1)
			errx(1, "bad framing from the daemon");
		if (r == 1)
			return 1;
		if (test_now_ms() >= deadline) {
			printf("timeout\n");
			(void)kill(pid, SIGKILL);
			exit(1);
		}
		if (poll(&pfd, 1, (int)(deadline - test_now_ms())) == -1 &&
		    errno != EINTR)
			err(1, "poll");
		n = imsgbuf_read(ib);
		if (n == 0)
			return 0;
		if (n == -1 && errno != EAGAIN && errno != EINTR) {
			if (errno == ECONNRESET)
				return 0;
			err(1, "read");
		}
	}
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

/*
 * Starts the daemon a driver's options name, -s binary -f conf, passing
 * -D macro=value, -S and -v on; name is its argv[0], and it runs in the
 * foreground (-d).  Bad options call usage.  Returns its pid; *fd is the
 * driver's end of the channel, *argi the index of the first command.
 */
pid_t
test_daemon_run(int argc, char *argv[], const char *name,
    void (*usage)(void), int *fd, int *argi)
{
	const char	*dargv[DAEMON_ARGS_MAX];
	const char	*bin = NULL, *conf = NULL;
	int		 n = 0, ch;

	dargv[n++] = name;
	dargv[n++] = "-d";
	while ((ch = getopt(argc, argv, "D:f:s:Sv")) != -1) {
		if (n + 3 >= DAEMON_ARGS_MAX)
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
	return test_daemon_start(bin, dargv, fd);
}

/* Waits for the daemon and prints how it ended: "exit code=N|signal=N". */
void
test_daemon_reap(pid_t pid)
{
	int	 status;

	if (waitpid(pid, &status, 0) == -1)
		err(1, "waitpid");
	if (WIFEXITED(status))
		printf("exit code=%d\n", WEXITSTATUS(status));
	else
		printf("exit signal=%d\n", WTERMSIG(status));
}

/* How many fds the daemon holds open. */
int
test_daemon_fds(pid_t pid)
{
	char		 path[64];
	struct dirent	*de;
	DIR		*d;
	int		 n = 0;

	(void)snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	if ((d = opendir(path)) == NULL)
		err(1, "%s", path);
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}
