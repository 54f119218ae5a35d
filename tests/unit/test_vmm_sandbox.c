/*
 * mcvm-vmm's seccomp policy (vmm/vmm_sandbox.c), loaded in a forked
 * child: what the monitor must never do kills it with SIGSYS, and what
 * its loop does survives.
 */
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <criterion/criterion.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "vmm.h"

static int	 vmm_pipe[2];

static int
vmm_sandboxed(void (*action)(void))
{
	pid_t	 pid;
	int	 status;

	cr_assert_eq(pipe(vmm_pipe), 0);
	if ((pid = fork()) == 0) {
		vmm_sandbox(0);
		action();
		_exit(0);
	}
	cr_assert_gt(pid, 0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	close(vmm_pipe[0]);
	close(vmm_pipe[1]);
	return status;
}

static void
vmm_assert_killed(int status)
{
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS,
	    "not killed by SIGSYS (status %#x)", status);
}

static void
vmm_do_execve(void)
{
	char *const argv[] = { "true", NULL };

	execve("/bin/true", argv, NULL);
}

static void
vmm_do_open(void)
{
	(void)open("/etc/passwd", O_RDONLY);
}

static void
vmm_do_socket(void)
{
	(void)socket(AF_UNIX, SOCK_STREAM, 0);
}

static void
vmm_do_connect(void)
{
	struct sockaddr	 sa = { .sa_family = AF_UNIX };

	(void)connect(vmm_pipe[0], &sa, sizeof(sa));
}

static void
vmm_do_fork(void)
{
	(void)fork();
}

static void
vmm_do_kill(void)
{
	(void)kill(1, 0);
}

/* The monitor's loop: reads, writes, sends, polls, time and memory. */
static void
vmm_do_loop(void)
{
	struct pollfd	 pfd = { .events = POLLIN };
	struct timespec	 ts;
	char		 c = 'x';
	void		*p;

	if (write(vmm_pipe[1], &c, 1) != 1 || read(vmm_pipe[0], &c, 1) != 1)
		_exit(2);
	pfd.fd = vmm_pipe[0];
	if (poll(&pfd, 1, 0) != 0)
		_exit(3);
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		_exit(4);
	if ((p = malloc(1 << 20)) == NULL)
		_exit(5);
	free(p);
	(void)getpid();
}

Test(vmm_sandbox, kills_execve)
{
	vmm_assert_killed(vmm_sandboxed(vmm_do_execve));
}

Test(vmm_sandbox, kills_open)
{
	vmm_assert_killed(vmm_sandboxed(vmm_do_open));
}

Test(vmm_sandbox, kills_socket)
{
	vmm_assert_killed(vmm_sandboxed(vmm_do_socket));
}

Test(vmm_sandbox, kills_connect)
{
	vmm_assert_killed(vmm_sandboxed(vmm_do_connect));
}

Test(vmm_sandbox, kills_fork)
{
	vmm_assert_killed(vmm_sandboxed(vmm_do_fork));
}

Test(vmm_sandbox, kills_kill)
{
	vmm_assert_killed(vmm_sandboxed(vmm_do_kill));
}

Test(vmm_sandbox, allows_its_loop)
{
	int	 status = vmm_sandboxed(vmm_do_loop);

	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "the loop died (status %#x)", status);
}

static int	 vmm_memfd = -1;

/* A screenshot: read the buffer at an offset, empty it, write mcvmd's. */
static void
vmm_do_screenshot(void)
{
	char	 c = 'x';

	if (pwrite(vmm_memfd, &c, 1, 0) != 1 ||
	    pread(vmm_memfd, &c, 1, 0) != 1 || ftruncate(vmm_memfd, 0) != 0 ||
	    lseek(vmm_memfd, 0, SEEK_SET) != 0)
		_exit(2);
}

/* A new memfd is refused: the screenshot buffer is made before. */
static void
vmm_do_memfd(void)
{
	(void)memfd_create("x", 0);
}

Test(vmm_sandbox, allows_screenshots)
{
	int	 status;

	cr_assert_neq(vmm_memfd = memfd_create("shot", MFD_CLOEXEC), -1);
	status = vmm_sandboxed(vmm_do_screenshot);
	close(vmm_memfd);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "a screenshot's calls died (status %#x)", status);
}

Test(vmm_sandbox, kills_memfd_create)
{
	vmm_assert_killed(vmm_sandboxed(vmm_do_memfd));
}
