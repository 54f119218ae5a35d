/*
 * QEMU's jail.  Run in the child mcvmd forks for QEMU, before exec:
 *
 *	new session, the VM's cgroups
 *	the VM's network namespace (netd's), new mount, IPC and UTS ones
 *	a tmpfs root holding read-only binds of /usr (and the /lib, /bin
 *	links or dirs that point into it), /dev/null, zero, urandom, kvm,
 *	and the VM's kernel and initrd, bound from the fds stored verified
 *	(and a template's RAM file, writable: see below)
 *	pivot_root into it; the host's tree is detached
 *	the VM's uid and gid, no supplementary groups, no capabilities,
 *	an empty bounding set, no_new_privs
 *	exec QEMU with its fds on fixed numbers
 *
 * QEMU therefore never runs as root and sees no host path but the system's
 * programs and libraries.  This replaces QEMU 7.2's -chroot and -runas,
 * which cannot be used with -sandbox elevateprivileges=deny: QEMU loads
 * its seccomp filter before it switches uid and is killed doing so.
 *
 * QEMU 7.2 opens a memory-backend-file's mem-path read-write even to map
 * it copy-on-write, so a template's RAM file is bound writable, and made
 * the group's of the template's QEMU and its clones' (one workspace's:
 * template.c), mode 0660 as stored made it.
 *
 * Any failure writes one line to the log fd and exits 127; nothing here
 * returns.
 */
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include <cap-ng.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "jail.h"

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE		1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC	O_CLOEXEC
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH	0x00000004
#endif

#define JAIL_TMPFS_OPTS		"size=64k,nr_inodes=64,mode=0755"
#define JAIL_FD_BASE		64	/* above every fd we place */

static const char *const jail_devs[] = {
	"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random",
};

/* Top-level host entries QEMU's libraries may be reached through. */
static const char *const jail_sys[] = { "/lib", "/lib64", "/bin", "/sbin" };

static int	 jail_log = STDERR_FILENO;

static void __attribute__((noreturn, format(printf, 1, 2)))
jail_fail(const char *fmt, ...)
{
	char	 buf[256];
	va_list	 ap;
	int	 n, saved = errno;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 64, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof(buf) - 64)
		n = (int)(sizeof(buf) - 64);
	n += snprintf(buf + n, 64, ": %s\n", strerror(saved));
	(void)!write(jail_log, "mcvmd jail: ", 12);
	(void)!write(jail_log, buf, (size_t)n);
	_exit(127);
}

static void
jail_join_cgroups(const struct jail *j)
{
	size_t	 i;
	int	 fd;

	for (i = 0; i < j->ncgroups; i++) {
		if ((fd = open(j->cgroup_procs[i], O_WRONLY | O_CLOEXEC)) ==
		    -1 || write(fd, "0", 1) != 1)
			jail_fail("join %s", j->cgroup_procs[i]);
		close(fd);
	}
}

static int
jail_open_tree(int fd)
{
	int	 t;

	if ((t = (int)syscall(SYS_open_tree, fd, "", OPEN_TREE_CLONE |
	    OPEN_TREE_CLOEXEC | AT_EMPTY_PATH)) == -1)
		jail_fail("open_tree");
	return t;
}

/* Makes an empty file or directory at path, as a mountpoint. */
static void
jail_mountpoint(const char *path, int dir)
{
	int	 fd;

	if (dir) {
		if (mkdir(path, 0755) == -1)
			jail_fail("mkdir %s", path);
		return;
	}
	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0444)) == -1)
		jail_fail("create %s", path);
	close(fd);
}

static void
jail_remount_ro(const char *path, unsigned long extra)
{
	if (mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY |
	    MS_NOSUID | extra, NULL) == -1)
		jail_fail("remount %s read-only", path);
}

static void
jail_bind(const char *src, const char *dst, int dir, unsigned long extra)
{
	jail_mountpoint(dst, dir);
	if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) == -1)
		jail_fail("bind %s", src);
	jail_remount_ro(dst, extra);
}

/* Attaches a detached tree (from jail_open_tree) at dst, read-only
 * unless writable. */
static void
jail_attach(int tree, const char *dst, int writable)
{
	jail_mountpoint(dst, 0);
	if (syscall(SYS_move_mount, tree, "", AT_FDCWD, dst,
	    MOVE_MOUNT_F_EMPTY_PATH) == -1)
		jail_fail("move_mount %s", dst);
	close(tree);
	if (!writable)
		jail_remount_ro(dst, MS_NODEV | MS_NOEXEC);
	else if (mount(NULL, dst, NULL, MS_REMOUNT | MS_BIND | MS_NOSUID |
	    MS_NODEV | MS_NOEXEC, NULL) == -1)
		jail_fail("remount %s", dst);
}

static void
jail_path(char *buf, size_t len, const char *root, const char *sub)
{
	if (snprintf(buf, len, "%s%s", root, sub) >= (int)len) {
		errno = ENAMETOOLONG;
		jail_fail("%s", sub);
	}
}

/* /lib and friends: a symlink into /usr is copied, a directory bound. */
static void
jail_sys_entry(const char *root, const char *entry)
{
	char		 dst[PATH_MAX], target[PATH_MAX];
	struct stat	 st;
	ssize_t		 n;

	if (lstat(entry, &st) == -1)
		return;
	jail_path(dst, sizeof(dst), root, entry);
	if (S_ISLNK(st.st_mode)) {
		if ((n = readlink(entry, target, sizeof(target) - 1)) == -1)
			jail_fail("readlink %s", entry);
		target[n] = '\0';
		if (symlink(target, dst) == -1)
			jail_fail("symlink %s", dst);
	} else if (S_ISDIR(st.st_mode))
		jail_bind(entry, dst, 1, MS_NODEV);
}

static void
jail_build_root(const struct jail *j, int kernel_tree, int initrd_tree,
    int ram_tree)
{
	char	 path[PATH_MAX];
	size_t	 i;

	if (mount("mcvm-jail", j->root, "tmpfs", MS_NOSUID | MS_NODEV,
	    JAIL_TMPFS_OPTS) == -1)
		jail_fail("mount tmpfs on %s", j->root);
	jail_path(path, sizeof(path), j->root, "/usr");
	jail_bind("/usr", path, 1, MS_NODEV);
	for (i = 0; i < sizeof(jail_sys) / sizeof(jail_sys[0]); i++)
		jail_sys_entry(j->root, jail_sys[i]);

	jail_path(path, sizeof(path), j->root, "/dev");
	jail_mountpoint(path, 1);
	for (i = 0; i < sizeof(jail_devs) / sizeof(jail_devs[0]); i++) {
		jail_path(path, sizeof(path), j->root, jail_devs[i]);
		jail_bind(jail_devs[i], path, 0, MS_NOEXEC);
	}
	if (j->kvm) {
		jail_path(path, sizeof(path), j->root, "/dev/kvm");
		jail_bind("/dev/kvm", path, 0, MS_NOEXEC);
	}
	if (kernel_tree != -1) {
		jail_path(path, sizeof(path), j->root, QEMU_JAIL_KERNEL);
		jail_attach(kernel_tree, path, 0);
	}
	if (initrd_tree != -1) {
		jail_path(path, sizeof(path), j->root, QEMU_JAIL_INITRD);
		jail_attach(initrd_tree, path, 0);
	}
	if (ram_tree != -1) {
		jail_path(path, sizeof(path), j->root, QEMU_JAIL_RAM);
		jail_attach(ram_tree, path, 1);
	}
	jail_path(path, sizeof(path), j->root, "/old");
	jail_mountpoint(path, 1);
}

static void
jail_pivot(const struct jail *j)
{
	char	 old[PATH_MAX];

	jail_path(old, sizeof(old), j->root, "/old");
	if (syscall(SYS_pivot_root, j->root, old) == -1)
		jail_fail("pivot_root");
	if (chdir("/") == -1)
		jail_fail("chdir /");
	if (umount2("/old", MNT_DETACH) == -1)
		jail_fail("umount the host tree");
	if (rmdir("/old") == -1)
		jail_fail("rmdir /old");
	if (mount(NULL, "/", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID |
	    MS_NODEV, JAIL_TMPFS_OPTS) == -1)
		jail_fail("remount / read-only");
}

/* Moves each fd to its fixed number and closes every other. */
static void
jail_place_fds(const struct jail *j)
{
	int	 i, null, tmp[QEMU_FD_MAX + 1];

	for (i = 0; i <= QEMU_FD_MAX; i++) {
		tmp[i] = -1;
		if (j->fds[i] == -1)
			continue;
		if ((tmp[i] = fcntl(j->fds[i], F_DUPFD, JAIL_FD_BASE)) == -1)
			jail_fail("dup fd %d", i);
	}
	if (dup2(j->log_fd, STDOUT_FILENO) == -1 ||
	    dup2(j->log_fd, STDERR_FILENO) == -1)
		jail_fail("dup log");
	jail_log = STDERR_FILENO;
	if ((null = open("/dev/null", O_RDONLY)) == -1 ||
	    dup2(null, STDIN_FILENO) == -1)
		jail_fail("stdin");
	for (i = STDERR_FILENO + 1; i <= QEMU_FD_MAX; i++) {
		if (tmp[i] == -1)
			continue;
		if (dup2(tmp[i], i) == -1)
			jail_fail("place fd %d", i);
	}
	if (close_range(QEMU_FD_MAX + 1, ~0U, 0) == -1)
		jail_fail("close_range");
}

static void
jail_drop(const struct jail *j)
{
	if (j->uid == 0 || j->gid == 0) {
		errno = EPERM;
		jail_fail("refusing to run QEMU as root");
	}
	capng_clear(CAPNG_SELECT_ALL);
	if (capng_change_id((int)j->uid, (int)j->gid, CAPNG_DROP_SUPP_GRP |
	    CAPNG_CLEAR_BOUNDING | CAPNG_CLEAR_AMBIENT) != 0)
		jail_fail("become uid %u", (unsigned int)j->uid);
	if (setuid(0) != -1) {
		errno = EPERM;
		jail_fail("root could be regained");
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		jail_fail("no_new_privs");
	/*
	 * Huge pages would fault QEMU's translation cache, and the guest RAM
	 * it touches, in 2 MiB at a time: memory the VM holds but never used.
	 */
	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) == -1)
		jail_fail("thp_disable");
}

void
jail_exec(const struct jail *j, char *const argv[])
{
	/* Few malloc arenas: each would cost QEMU's threads host memory. */
	char *const	 envp[] = { "PATH=/usr/bin", "MALLOC_ARENA_MAX=2",
			    NULL };
	int		 kernel_tree = -1, initrd_tree = -1, ram_tree = -1;

	jail_log = j->log_fd;
	if (setsid() == -1)
		jail_fail("setsid");
	jail_join_cgroups(j);
	/* Clone the trees while the fds' mounts are still in our ns. */
	if (j->kernel_fd != -1)
		kernel_tree = jail_open_tree(j->kernel_fd);
	if (j->initrd_fd != -1)
		initrd_tree = jail_open_tree(j->initrd_fd);
	if (j->ram_fd != -1) {
		if (fchown(j->ram_fd, (uid_t)-1, j->gid) == -1)
			jail_fail("chgrp the RAM file");
		ram_tree = jail_open_tree(j->ram_fd);
	}
	/* The VM's own network namespace: netd's, or an empty new one. */
	if (j->netns_fd != -1) {
		if (setns(j->netns_fd, CLONE_NEWNET) == -1)
			jail_fail("setns");
	} else if (unshare(CLONE_NEWNET) == -1)
		jail_fail("unshare net");
	if (unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS) == -1)
		jail_fail("unshare");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1)
		jail_fail("make / private");
	jail_build_root(j, kernel_tree, initrd_tree, ram_tree);
	jail_pivot(j);
	jail_place_fds(j);
	jail_drop(j);
	/*
	 * QEMU dies with mcvmd: set after the credentials changed, which
	 * clears it, and kept across the exec of a binary without setuid
	 * bits or file capabilities.
	 */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1)
		jail_fail("pdeathsig");
	if (getppid() != j->parent)
		jail_fail("mcvmd exited");
	execve(argv[0], argv, envp);
	jail_fail("exec %s", argv[0]);
}
