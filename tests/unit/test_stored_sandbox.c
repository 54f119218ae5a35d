/*
 * stored's two filters beyond what test_sandbox.c checks: stored itself
 * may FICLONE and no other ioctl; its qemu-img helper may fork but not
 * make namespaces, makes no socket, and fails what its list lacks.
 */
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/fs.h>

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <termios.h>
#include <unistd.h>

#include "stored.h"

static void
stored_policy(void)
{
	stored_sandbox(0);
}

/* Runs action after policy in a child; returns its wait status. */
static int
run_under(void (*policy)(void), void (*action)(void))
{
	pid_t	 pid;
	int	 status;

	if ((pid = fork()) == 0) {
		policy();
		action();
		_exit(0);
	}
	cr_assert_gt(pid, 0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return status;
}

static void
assert_sigsys(int status)
{
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS,
	    "status %d", status);
}

static void
assert_ok(int status)
{
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "status %d", status);
}

static void
do_ficlone(void)
{
	/* Fails (bad fds), but the filter lets it through. */
	(void)ioctl(-1, FICLONE, -1);
}

static void
do_other_ioctl(void)
{
	struct winsize	 ws;

	(void)ioctl(0, TIOCGWINSZ, &ws);
}

static void
do_files(void)
{
	int	 fd;

	if ((fd = openat(AT_FDCWD, "/", O_RDONLY | O_DIRECTORY)) == -1)
		_exit(2);
	if (fcntl(fd, F_DUPFD_CLOEXEC, 0) == -1)
		_exit(3);
	close(fd);
}

static void
do_unshare_user(void)
{
	(void)unshare(CLONE_NEWUSER);
}

static void
do_fork_exec(void)
{
	pid_t	 pid;
	int	 status;

	if ((pid = fork()) == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	if (pid == -1 || waitpid(pid, &status, 0) != pid ||
	    !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		_exit(2);
}

static void
do_socket(void)
{
	if (socket(AF_INET, SOCK_STREAM, 0) != -1 || errno != ENOSYS ||
	    socket(AF_UNIX, SOCK_STREAM, 0) != -1 || errno != ENOSYS)
		_exit(2);
}

/* A call off the helper's list fails, and the process goes on. */
static void
do_unlisted(void)
{
	if (syscall(SYS_getpgid, 0) != -1 || errno != ENOSYS)
		_exit(2);
}

Test(stored_sandbox, ficlone_allowed)
{
	assert_ok(run_under(stored_policy, do_ficlone));
}

Test(stored_sandbox, other_ioctl_kills)
{
	assert_sigsys(run_under(stored_policy, do_other_ioctl));
}

Test(stored_sandbox, opens_files_relative_to_dirfds)
{
	assert_ok(run_under(stored_policy, do_files));
}

Test(stored_sandbox, helper_forks_and_execs)
{
	assert_ok(run_under(stored_helper_sandbox, do_fork_exec));
}

Test(stored_sandbox, helper_no_user_namespace)
{
	assert_sigsys(run_under(stored_helper_sandbox, do_unshare_user));
}

Test(stored_sandbox, helper_no_socket)
{
	assert_ok(run_under(stored_helper_sandbox, do_socket));
}

Test(stored_sandbox, helper_allows_only_its_list)
{
	assert_ok(run_under(stored_helper_sandbox, do_unlisted));
}
