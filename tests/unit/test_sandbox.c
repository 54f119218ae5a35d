/*
 * Each daemon's seccomp policy, loaded in a forked child: a call the
 * policy forbids kills the process with SIGSYS, and the calls it needs
 * still work.  The policies are the daemons' own sandbox.c files.
 */
#include <sys/socket.h>
#include <sys/wait.h>

#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "netd.h"
#include "stored.h"

/* Weak, so that a missing policy fails its tests instead of the link. */
void	 frontd_sandbox(int) __attribute__((weak));

static int	 pipefd[2];

/* Runs action under policy in a child; returns its wait status. */
static int
sandboxed(void (*policy)(int), void (*action)(void))
{
	pid_t	 pid;
	int	 status;

	cr_assert_not_null(policy, "no sandbox policy linked");
	cr_assert_eq(pipe(pipefd), 0);
	if ((pid = fork()) == 0) {
		policy(0);
		action();
		_exit(0);
	}
	cr_assert_gt(pid, 0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	close(pipefd[0]);
	close(pipefd[1]);
	return status;
}

static void
assert_killed(int status)
{
	cr_assert(WIFSIGNALED(status), "child was not killed (status %d)",
	    status);
	cr_assert_eq(WTERMSIG(status), SIGSYS, "killed by signal %d",
	    WTERMSIG(status));
}

static void
assert_survived(int status)
{
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "child died (status %d)", status);
}

static void
do_execve(void)
{
	char *const argv[] = { "true", NULL };

	execve("/bin/true", argv, NULL);
}

static void
do_open(void)
{
	(void)open("/etc/passwd", O_RDONLY);
}

static void
do_inet_socket(void)
{
	(void)socket(AF_INET, SOCK_STREAM, 0);
}

static void
do_unix_socket(void)
{
	(void)socket(AF_UNIX, SOCK_STREAM, 0);
}

static void
do_fork(void)
{
	(void)fork();
}

static void
do_ptrace(void)
{
	(void)getppid();
	(void)kill(getppid(), 0);
}

/* What every daemon's loop does: read, write, time, memory. */
static void
do_allowed(void)
{
	struct timespec	 ts;
	char		 c = 'x';
	void		*p;

	if (write(pipefd[1], &c, 1) != 1 || read(pipefd[0], &c, 1) != 1)
		_exit(2);
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		_exit(3);
	if ((p = malloc(1 << 20)) == NULL)
		_exit(4);
	free(p);
	(void)getpid();
}

Test(sandbox, frontd_kills_execve)
{
	assert_killed(sandboxed(frontd_sandbox, do_execve));
}

Test(sandbox, frontd_kills_open)
{
	assert_killed(sandboxed(frontd_sandbox, do_open));
}

Test(sandbox, frontd_kills_socket)
{
	assert_killed(sandboxed(frontd_sandbox, do_unix_socket));
}

Test(sandbox, frontd_kills_fork)
{
	assert_killed(sandboxed(frontd_sandbox, do_fork));
}

Test(sandbox, frontd_allows_its_loop)
{
	assert_survived(sandboxed(frontd_sandbox, do_allowed));
}

Test(sandbox, netd_kills_execve)
{
	assert_killed(sandboxed(netd_sandbox, do_execve));
}

static void
do_udp_socket(void)
{
	(void)socket(AF_INET, SOCK_DGRAM, 0);
}

/* netd may open TCP sockets (port forwards), never UDP, raw or unix. */
Test(sandbox, netd_kills_udp_socket)
{
	assert_killed(sandboxed(netd_sandbox, do_udp_socket));
}

Test(sandbox, netd_kills_unix_socket)
{
	assert_killed(sandboxed(netd_sandbox, do_unix_socket));
}

Test(sandbox, netd_kills_open)
{
	assert_killed(sandboxed(netd_sandbox, do_open));
}

Test(sandbox, netd_allows_its_loop)
{
	assert_survived(sandboxed(netd_sandbox, do_allowed));
}

Test(sandbox, stored_kills_execve)
{
	assert_killed(sandboxed(stored_sandbox, do_execve));
}

Test(sandbox, stored_kills_socket)
{
	assert_killed(sandboxed(stored_sandbox, do_unix_socket));
}

Test(sandbox, stored_kills_inet_socket)
{
	assert_killed(sandboxed(stored_sandbox, do_inet_socket));
}

Test(sandbox, stored_kills_kill)
{
	assert_killed(sandboxed(stored_sandbox, do_ptrace));
}

Test(sandbox, stored_allows_its_loop)
{
	assert_survived(sandboxed(stored_sandbox, do_allowed));
}
