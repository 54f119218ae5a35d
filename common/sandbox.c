/*
 * seccomp filters: kill by default, an architecture check (libseccomp adds
 * the native architecture only, so a call through another ABI is killed),
 * named allow lists, errno for harmless probes, and argument-narrowed rules.
 *
 * Debug mode (-S) traps instead of killing.  The SIGSYS handler names the
 * call from a table built before the filter was loaded, with write(2) only.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "sandbox.h"

#define SANDBOX_NAMES_MAX	512

static char	*sandbox_names[SANDBOX_NAMES_MAX];

/* Calls every daemon makes once it runs: I/O, memory, time, exit. */
static const char *const sandbox_common[] = {
	"brk", "clock_gettime", "clock_nanosleep", "close", "epoll_ctl",
	"epoll_pwait", "epoll_wait", "exit", "exit_group", "fstat",
	"futex", "getpid", "getrandom", "gettimeofday", "lseek", "madvise",
	"mmap", "mremap", "munmap", "nanosleep", "newfstatat", "read",
	"readv", "recvfrom", "recvmsg", "restart_syscall", "rt_sigaction",
	"rt_sigprocmask", "rt_sigreturn", "sendmsg", "sendto", "time",
	"write", "writev",
#ifdef MCVM_SANITIZE
	/* The sanitizer runtimes' own bookkeeping. */
	"getppid", "gettid", "mprotect", "prctl", "sched_yield",
	"sigaltstack", "tgkill",
#endif
};

static void
sandbox_sigsys(int sig, siginfo_t *info, void *ctx)
{
	static const char	 pre[] = "sandbox: forbidden system call ";
	const char		*name = "unknown";
	char			 num[16];
	int			 nr = info->si_syscall, i = sizeof(num);
	unsigned int		 n = nr < 0 ? 0 : (unsigned int)nr;

	(void)sig;
	(void)ctx;
	if (nr >= 0 && nr < SANDBOX_NAMES_MAX && sandbox_names[nr] != NULL)
		name = sandbox_names[nr];
	num[--i] = '\n';
	num[--i] = ')';
	do {
		num[--i] = '0' + n % 10;
		n /= 10;
	} while (n != 0 && i > 1);
	num[--i] = '(';
	(void)!write(STDERR_FILENO, pre, sizeof(pre) - 1);
	(void)!write(STDERR_FILENO, name, strlen(name));
	(void)!write(STDERR_FILENO, " ", 1);
	(void)!write(STDERR_FILENO, num + i, sizeof(num) - i);
	_exit(128 + SIGSYS);
}

static void
sandbox_debug_init(void)
{
	struct sigaction	 sa;
	int			 nr;

	for (nr = 0; nr < SANDBOX_NAMES_MAX; nr++)
		sandbox_names[nr] = seccomp_syscall_resolve_num_arch(
		    SCMP_ARCH_NATIVE, nr);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sandbox_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL) == -1)
		fatal("%s: sigaction", __func__);
}

scmp_filter_ctx
sandbox_new(int debug)
{
	scmp_filter_ctx	 ctx;

	if (debug)
		sandbox_debug_init();
	if ((ctx = seccomp_init(debug ? SCMP_ACT_TRAP :
	    SCMP_ACT_KILL_PROCESS)) == NULL)
		fatalx("%s: seccomp_init", __func__);
	/* The filter itself sets no_new_privs; privdrop already did. */
	return ctx;
}

static int
sandbox_resolve(const char *name)
{
	int	 nr;

	if ((nr = seccomp_syscall_resolve_name(name)) == __NR_SCMP_ERROR)
		fatalx("sandbox: unknown system call %s", name);
	return nr;
}

void
sandbox_allow(scmp_filter_ctx ctx, const char *const *names, size_t n)
{
	size_t	 i;
	int	 rc;

	for (i = 0; i < n; i++) {
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW,
		    sandbox_resolve(names[i]), 0);
		if (rc != 0)
			fatalx("sandbox: allow %s: %s", names[i],
			    strerror(-rc));
	}
}

/* Calls that fail harmlessly (probes) get an errno instead of death. */
void
sandbox_errno(scmp_filter_ctx ctx, const char *const *names, size_t n,
    int err)
{
	size_t	 i;
	int	 rc;

	for (i = 0; i < n; i++) {
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err),
		    sandbox_resolve(names[i]), 0);
		if (rc != 0)
			fatalx("sandbox: errno %s: %s", names[i],
			    strerror(-rc));
	}
}

/* An allow rule narrowed by argument comparisons. */
void
sandbox_rule(scmp_filter_ctx ctx, const char *name, unsigned int narg,
    const struct scmp_arg_cmp *args)
{
	int	 rc;

	rc = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW,
	    sandbox_resolve(name), narg, args);
	if (rc != 0)
		fatalx("sandbox: rule %s: %s", name, strerror(-rc));
}

void
sandbox_allow_common(scmp_filter_ctx ctx)
{
	sandbox_allow(ctx, sandbox_common, SANDBOX_N(sandbox_common));
}

void
sandbox_load(scmp_filter_ctx ctx)
{
	int	 rc;

	if ((rc = seccomp_load(ctx)) != 0)
		fatalx("sandbox: seccomp_load: %s", strerror(-rc));
	seccomp_release(ctx);
}
