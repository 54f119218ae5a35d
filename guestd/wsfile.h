/*
 * File access beneath the workspace directory.  Every path is resolved
 * with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) against an open
 * directory, so neither ".." nor a symlink can lead outside it.
 *
 * Functions return -1 with errno set on failure: EXDEV for a path that
 * would escape, ELOOP for a symlink on the way, EINVAL for a malformed
 * path or offset, ENOTDIR for a listing of what is not a directory, the
 * system call's errno otherwise.
 */
#ifndef MCVM_GUESTD_WSFILE_H
#define MCVM_GUESTD_WSFILE_H

#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>

#include "agent_proto.h"

#define WS_TMP_TRIES	16		/* attempts at a unique temp name */
#define WS_FILE_MODE	0644		/* new files without a mode */
#define WS_DIR_MODE	0755		/* directories made by MKDIRS */
#define WS_OFFSET_MAX	(1ULL << 40)	/* furthest byte a write may reach */

/* A directory's entries, as ws_list() finds them. */
struct ws_entry {
	const char	*name;		/* relative to the listed directory */
	uint8_t		 type;		/* AGENT_FTYPE_* */
	uint8_t		 depth;		/* 1 for the directory's own */
	uint32_t	 mode;		/* permission bits */
	uint64_t	 size;
	int64_t		 mtime;
};

struct ws_list {
	struct ws_entry	 ents[AGENT_LIST_MAX];
	size_t		 n;
	int		 truncated;
	size_t		 bytes;		/* AGENT_DIRENT_LEN of each */
	char		 pool[AGENT_LIST_BYTES_MAX];
	size_t		 used;
};

struct ws_owner {
	uid_t	 uid;		/* (uid_t)-1: leave as created */
	gid_t	 gid;
};

const char	*ws_relpath(const char *, const char *);
int	 ws_open(int, const char *, int, mode_t);
int	 ws_open_dir(int, const char *);
ssize_t	 ws_read(int, const char *, uint64_t, void *, size_t, uint64_t *);
int	 ws_list(int, const char *, unsigned int, size_t, struct ws_list *);
int	 ws_write(int, const char *, uint32_t, uint64_t, mode_t,
	    const void *, size_t, const struct ws_owner *, uint64_t *);

#endif
