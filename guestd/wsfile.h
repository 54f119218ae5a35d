/*
 * File access beneath the workspace directory.  Every path is resolved
 * with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) against an open
 * directory, so neither ".." nor a symlink can lead outside it.
 *
 * Functions return -1 with errno set on failure: EXDEV for a path that
 * would escape, ELOOP for a symlink on the way, EINVAL for a malformed
 * path or offset, the system call's errno otherwise.
 */
#ifndef MCVM_GUESTD_WSFILE_H
#define MCVM_GUESTD_WSFILE_H

#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>

#define WS_TMP_TRIES	16		/* attempts at a unique temp name */
#define WS_FILE_MODE	0644		/* new files without a mode */
#define WS_DIR_MODE	0755		/* directories made by MKDIRS */
#define WS_OFFSET_MAX	(1ULL << 40)	/* furthest byte a write may reach */

struct ws_owner {
	uid_t	 uid;		/* (uid_t)-1: leave as created */
	gid_t	 gid;
};

const char	*ws_relpath(const char *, const char *);
int	 ws_open(int, const char *, int, mode_t);
int	 ws_open_dir(int, const char *);
ssize_t	 ws_read(int, const char *, uint64_t, void *, size_t, uint64_t *);
int	 ws_write(int, const char *, uint32_t, uint64_t, mode_t,
	    const void *, size_t, const struct ws_owner *, uint64_t *);

#endif
