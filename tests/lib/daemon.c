/*
 * For test drivers that play mcvmd: starts a daemon with its end of a
 * socketpair on PROC_PARENT_SOCK_FILENO, as mcvmd would.
 */
#include <sys/socket.h>

#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon.h"
#include "proto.h"

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
