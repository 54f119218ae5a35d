#ifndef MCVMD_JAIL_H
#define MCVMD_JAIL_H

#include <sys/types.h>

#include "qemu.h"

#define JAIL_CGROUPS_MAX	4	/* cgroup.procs files to join */

struct jail {
	const char	*root;		/* per-VM mountpoint, root-owned */
	uid_t		 uid;
	gid_t		 gid;
	int		 kvm;		/* expose /dev/kvm */
	int		 kernel_fd;	/* -1: none (a restored guest) */
	int		 initrd_fd;	/* -1: none */
	int		 ram_fd;	/* a template's RAM file; -1: none */
	int		 log_fd;	/* QEMU's stdout and stderr */
	int		 netns_fd;	/* the VM's netns from netd; -1: new */
	int		 fds[QEMU_FD_MAX + 1];	/* placed at their index */
	const char	*cgroup_procs[JAIL_CGROUPS_MAX];
	size_t		 ncgroups;
	pid_t		 parent;	/* mcvmd: QEMU dies with it */
};

void	 jail_exec(const struct jail *, char *const [])
	    __attribute__((noreturn));

#endif
