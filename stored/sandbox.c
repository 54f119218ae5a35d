/*
 * mcvm-stored's seccomp policies.
 *
 * stored itself: kill by default.  No sockets beyond the one it inherited
 * from mcvmd and the one to its qemu-img helper, no fork, no exec, no
 * signals to other processes.  It may open, create, rename and remove
 * files and link them (its uid and the 0700 store confine where), clone
 * files with FICLONE and no other ioctl, and read directories.
 *
 * The qemu-img helper, its jobs and every qemu-img they run share one
 * filter, an allow-list: what the helper needs to fork jobs, what a job
 * needs to run and watch one qemu-img, and what qemu-img itself was seen
 * to need for every operation stored asks of it (create, info, convert
 * to each format, resize, snapshot; strace -f), with the usual runtime
 * calls around them.  Anything else fails with ENOSYS, which qemu-img
 * and the C library take as "not here" (clone3, io_uring and
 * copy_file_range have fallbacks); what no part of it ever needs (new
 * namespaces, ptrace, bpf, the keyring, module loading) kills the
 * process.  ioctl is only the terminal query and the xattr calls QEMU
 * makes on image files; clone(2) never makes a namespace.
 */
#include <sys/socket.h>

#include <sys/ioctl.h>

#include <linux/fs.h>

#include <errno.h>
#include <sched.h>
#include <string.h>

#include "log.h"
#include "sandbox.h"
#include "stored.h"

static const char *const stored_allow[] = {
	"fcntl", "dup", "openat", "mkdirat", "unlinkat", "getdents64",
	"fstatfs", "pread64", "fsync", "poll", "ppoll", "renameat",
	"renameat2", "socketpair", "newfstatat", "fstat", "lseek",
	"statfs", "pipe2", "splice", "pwrite64", "ftruncate", "fchmod",
	"copy_file_range", "linkat",
};

void
stored_sandbox(int debug)
{
	scmp_filter_ctx	 ctx = sandbox_new(debug);

	sandbox_allow_common(ctx);
	sandbox_allow(ctx, stored_allow, SANDBOX_N(stored_allow));
	/* FICLONE, and no other ioctl. */
	sandbox_rule(ctx, "ioctl", 1, (struct scmp_arg_cmp[]){
	    SCMP_A1(SCMP_CMP_EQ, FICLONE) });
	sandbox_load(ctx);
}

static const char *const helper_allow[] = {
	/* the helper and its jobs */
	"execve", "wait4", "kill", "dup2", "dup3", "close_range",
	"fchdir", "umask", "pipe2", "poll", "recvmsg", "sendmsg",
	"getppid", "prctl", "prlimit64",
	/* qemu-img, and the runtime around it */
	"access", "arch_prctl", "brk", "clock_gettime", "clock_nanosleep",
	"nanosleep", "close", "eventfd2", "exit", "exit_group", "fallocate",
	"fcntl", "fdatasync", "fsync", "ftruncate", "futex",
	"get_mempolicy", "set_mempolicy", "getdents64", "getrandom",
	"getcwd", "gettid", "getpid", "getuid", "geteuid", "getgid",
	"getegid", "lseek", "madvise", "mmap", "mprotect", "mremap",
	"munmap", "newfstatat", "fstat", "statx", "fstatfs", "statfs",
	"openat", "ppoll", "pread64", "pwrite64", "preadv", "pwritev",
	"preadv2", "pwritev2", "read", "readv", "write", "writev",
	"readlink", "readlinkat", "rseq", "rt_sigaction", "rt_sigprocmask",
	"rt_sigreturn", "sigaltstack", "sched_getaffinity", "sched_yield",
	"set_robust_list", "set_tid_address", "signalfd4", "tgkill",
	"uname", "sysinfo", "unlink", "unlinkat", "fadvise64",
	"epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait",
	"membarrier",
};

/* The ioctls qemu-img makes on its files and its standard output. */
static const unsigned long helper_ioctls[] = {
	TCGETS, FS_IOC_FSGETXATTR, FS_IOC_FSSETXATTR,
};

static const char *const helper_deny[] = {
	"ptrace", "process_vm_readv", "process_vm_writev", "mount",
	"umount2", "pivot_root", "chroot", "unshare", "setns", "bpf",
	"perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
	"kexec_load", "init_module", "finit_module", "delete_module",
	"open_by_handle_at", "fanotify_init", "swapon",
	"swapoff", "reboot", "acct", "quotactl",
};

/* The namespace flags clone(2) must not carry. */
static const unsigned long helper_clone_deny[] = {
	CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET, CLONE_NEWPID,
	CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWCGROUP,
};

static void
helper_rule(scmp_filter_ctx ctx, uint32_t action, const char *name,
    unsigned int narg, const struct scmp_arg_cmp *args)
{
	int	 rc, nr;

	if ((nr = seccomp_syscall_resolve_name(name)) == __NR_SCMP_ERROR)
		fatalx("sandbox: unknown system call %s", name);
	if ((rc = seccomp_rule_add_array(ctx, action, nr, narg, args)) != 0)
		fatalx("sandbox: helper rule %s: %s", name, strerror(-rc));
}

void
stored_helper_sandbox(void)
{
	scmp_filter_ctx	 ctx;
	unsigned long	 ns;
	size_t		 i;
	int		 rc;

	if ((ctx = seccomp_init(SCMP_ACT_ERRNO(ENOSYS))) == NULL)
		fatalx("%s: seccomp_init", __func__);
	for (i = 0; i < SANDBOX_N(helper_allow); i++)
		helper_rule(ctx, SCMP_ACT_ALLOW, helper_allow[i], 0, NULL);
	for (i = 0; i < SANDBOX_N(helper_ioctls); i++)
		helper_rule(ctx, SCMP_ACT_ALLOW, "ioctl", 1,
		    (struct scmp_arg_cmp[]){ SCMP_A1(SCMP_CMP_EQ,
		    helper_ioctls[i]) });
	for (i = 0; i < SANDBOX_N(helper_deny); i++)
		helper_rule(ctx, SCMP_ACT_KILL_PROCESS, helper_deny[i], 0,
		    NULL);
	/* clone(2) for processes and threads, never a new namespace. */
	for (i = 0, ns = 0; i < SANDBOX_N(helper_clone_deny); i++) {
		ns |= helper_clone_deny[i];
		helper_rule(ctx, SCMP_ACT_KILL_PROCESS, "clone", 1,
		    (struct scmp_arg_cmp[]){ SCMP_A0(SCMP_CMP_MASKED_EQ,
		    helper_clone_deny[i], helper_clone_deny[i]) });
	}
	helper_rule(ctx, SCMP_ACT_ALLOW, "clone", 1,
	    (struct scmp_arg_cmp[]){ SCMP_A0(SCMP_CMP_MASKED_EQ, ns, 0) });
	/* clone3 passes its flags in memory a filter cannot read: ENOSYS
	 * makes the C library fall back to clone(2), checked above; QEMU's
	 * event loop probes io_uring and falls back to ppoll. */
	if ((rc = seccomp_load(ctx)) != 0)
		fatalx("%s: seccomp_load: %s", __func__, strerror(-rc));
	seccomp_release(ctx);
}
