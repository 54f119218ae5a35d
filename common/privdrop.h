/*
 * Privilege drop, in the order ARCHITECTURE.md gives: chroot, then
 * setgroups/setresgid/setresuid, then capabilities (libcap-ng).  seccomp
 * comes last, from sandbox.h.  Every failure is fatal.
 */
#ifndef MCVM_PRIVDROP_H
#define MCVM_PRIVDROP_H

#include <sys/types.h>
#include <stddef.h>

struct privdrop {
	const char	*user;		/* by name; NULL: see uid */
	uid_t		 uid;		/* with user NULL: 0 keeps uid 0 */
	gid_t		 gid;
	const char	*chroot;	/* NULL: no chroot */
	const int	*caps;		/* capabilities kept (CAP_*) */
	size_t		 ncaps;
};

void	 privdrop(const struct privdrop *);

#endif
