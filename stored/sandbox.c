/*
 * mcvm-stored's seccomp policies.
 *
 * stored itself: kill by default.  No sockets beyond the one it inherited
 * from mcvmd and the one to its qemu-img helper, no fork, no exec, no
 * signals to other processes.  It may open, create, rename and remove
 * files (its uid and the 0700 store confine where), clone files with
 * FICLONE and no other ioctl, and read directories.
 *
 * The qemu-img helper: it must fork and exec qemu-img, whose needs are
 * wide and change between QEMU releases, so its policy is a deny list of
 * what neither of them ever needs: new namespaces (the kernel's largest
 * attack surface for an unprivileged process), ptrace and cross-process
 * memory access, network sockets, io_uring, the kernel keyring, bpf,
 * perf and module loading.
 */
#include <sys/socket.h>

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
	"statfs", "pipe2", "splice",
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
	size_t		 i;
	int		 rc;

	if ((ctx = seccomp_init(SCMP_ACT_ALLOW)) == NULL)
		fatalx("%s: seccomp_init", __func__);
	for (i = 0; i < SANDBOX_N(helper_deny); i++)
		helper_rule(ctx, SCMP_ACT_KILL_PROCESS, helper_deny[i], 0,
		    NULL);
	for (i = 0; i < SANDBOX_N(helper_clone_deny); i++)
		helper_rule(ctx, SCMP_ACT_KILL_PROCESS, "clone", 1,
		    (struct scmp_arg_cmp[]){ SCMP_A0(SCMP_CMP_MASKED_EQ,
		    helper_clone_deny[i], helper_clone_deny[i]) });
	/* clone3 passes its flags in memory a filter cannot read: make
	 * the C library fall back to clone(2), which is checked above. */
	helper_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL);
	/* QEMU's event loop probes io_uring and falls back to epoll. */
	helper_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "io_uring_setup", 0, NULL);
	helper_rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), "socket", 1,
	    (struct scmp_arg_cmp[]){ SCMP_A0(SCMP_CMP_NE, AF_UNIX) });
	if ((rc = seccomp_load(ctx)) != 0)
		fatalx("%s: seccomp_load: %s", __func__, strerror(-rc));
	seccomp_release(ctx);
}
