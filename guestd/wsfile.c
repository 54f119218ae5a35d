/*
 * File access beneath the workspace (see wsfile.h).
 */
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent_proto.h"
#include "wsfile.h"

#define WS_RESOLVE	(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | \
	RESOLVE_NO_MAGICLINKS)
#define WS_COPY_BUF	65536

/*
 * The path relative to the workspace: a relative path as it is, an
 * absolute one only if it lies under ws (the prefix is removed).  Returns
 * NULL with errno EXDEV for any other absolute path, EINVAL for an empty
 * or oversized one.
 */
const char *
ws_relpath(const char *path, const char *ws)
{
	size_t	 n = strlen(ws);

	if (path[0] == '\0' || strlen(path) >= AGENT_PATH_MAX) {
		errno = EINVAL;
		return NULL;
	}
	if (path[0] != '/')
		return path;
	if (strncmp(path, ws, n) == 0 && (path[n] == '/' || path[n] == '\0')) {
		path += n;
		while (*path == '/')
			path++;
		return *path == '\0' ? "." : path;
	}
	errno = EXDEV;
	return NULL;
}

int
ws_open(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how	 how;
	long		 fd;

	memset(&how, 0, sizeof(how));
	how.flags = (uint64_t)(flags | O_CLOEXEC);
	if (flags & (O_CREAT | O_TMPFILE))
		how.mode = mode;
	how.resolve = WS_RESOLVE;
	fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	return (int)fd;
}

int
ws_open_dir(int dirfd, const char *path)
{
	return ws_open(dirfd, path, O_RDONLY | O_DIRECTORY, 0);
}

/*
 * Reads up to len bytes at offset from a regular file.  Returns the byte
 * count and the file's size in *sizep.
 */
ssize_t
ws_read(int root, const char *path, uint64_t offset, void *buf, size_t len,
    uint64_t *sizep)
{
	struct stat	 st;
	ssize_t		 n, got = 0;
	int		 fd, serrno;

	if (offset > WS_OFFSET_MAX) {
		errno = EINVAL;
		return -1;
	}
	/* O_NONBLOCK: opening a FIFO must not hang the agent. */
	if ((fd = ws_open(root, path, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0)) ==
	    -1)
		return -1;
	if (fstat(fd, &st) == -1)
		goto fail;
	if (S_ISDIR(st.st_mode)) {
		errno = EISDIR;
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		goto fail;
	}
	while ((size_t)got < len) {
		n = pread(fd, (char *)buf + got, len - (size_t)got,
		    (off_t)offset + got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			goto fail;
		if (n == 0)
			break;
		got += n;
	}
	/* The file's size, whatever the offset; it may have grown since. */
	*sizep = (uint64_t)st.st_size;
	if (got > 0 && (uint64_t)st.st_size < offset + (uint64_t)got)
		*sizep = offset + (uint64_t)got;
	close(fd);
	return got;
fail:
	serrno = errno;
	close(fd);
	errno = serrno;
	return -1;
}

/* By name, as agent_name_cmp() orders them. */
static int
entry_cmp(const void *a, const void *b)
{
	return agent_name_cmp(((const struct ws_entry *)a)->name,
	    ((const struct ws_entry *)b)->name);
}

static uint8_t
entry_type(mode_t mode)
{
	if (S_ISREG(mode))
		return AGENT_FTYPE_FILE;
	if (S_ISDIR(mode))
		return AGENT_FTYPE_DIR;
	if (S_ISLNK(mode))
		return AGENT_FTYPE_SYMLINK;
	return AGENT_FTYPE_OTHER;
}

/*
 * Adds the entries of the directory dfd, whose name relative to the
 * listing is prefix ("" for the listed one).  Returns -1 once the list
 * is full (truncated set).
 */
static int
list_dir(int dfd, const char *prefix, unsigned int depth, size_t max,
    struct ws_list *l)
{
	struct ws_entry	*e;
	struct dirent	*d;
	struct stat	 st;
	DIR		*dir;
	size_t		 plen = strlen(prefix), nlen, need;
	int		 rv = 0;

	if ((dir = fdopendir(dfd)) == NULL) {
		close(dfd);
		return 0;
	}
	while ((d = readdir(dir)) != NULL) {
		if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(dir), d->d_name, &st, AT_SYMLINK_NOFOLLOW) ==
		    -1)
			continue;	/* gone meanwhile */
		nlen = plen + (plen > 0) + strlen(d->d_name);
		need = AGENT_DIRENT_LEN(nlen);
		if (l->n >= max || nlen >= AGENT_PATH_MAX ||
		    need > AGENT_LIST_BYTES_MAX - l->bytes ||
		    nlen + 1 > sizeof(l->pool) - l->used) {
			l->truncated = 1;
			if (l->n >= max || need > AGENT_LIST_BYTES_MAX -
			    l->bytes) {
				rv = -1;
				break;
			}
			continue;	/* this name only */
		}
		e = &l->ents[l->n++];
		e->name = l->pool + l->used;
		(void)snprintf(l->pool + l->used, nlen + 1, "%s%s%s", prefix,
		    plen > 0 ? "/" : "", d->d_name);
		l->used += nlen + 1;
		l->bytes += need;
		e->type = entry_type(st.st_mode);
		e->depth = (uint8_t)depth;
		e->mode = (uint32_t)(st.st_mode & 07777);
		e->size = st.st_size < 0 ? 0 : (uint64_t)st.st_size;
		e->mtime = (int64_t)st.st_mtim.tv_sec;
	}
	closedir(dir);
	return rv;
}

/*
 * Lists the directory path beneath root down to depth levels (1: its own
 * entries), breadth first, so that a cut list keeps the upper levels;
 * at most max entries, and at most AGENT_LIST_BYTES_MAX of them on the
 * wire.  Subdirectories are entered with the same resolution as every
 * path: never through a symlink.  One that cannot be opened is listed
 * without its contents.  The entries come out sorted by name.
 */
int
ws_list(int root, const char *path, unsigned int depth, size_t max,
    struct ws_list *l)
{
	struct stat	 st;
	size_t		 i;
	int		 top, fd, serrno;

	l->n = 0;
	l->truncated = 0;
	l->bytes = 0;
	l->used = 0;
	if (depth < 1 || depth > AGENT_LIST_DEPTH_MAX || max < 1 ||
	    max > AGENT_LIST_MAX) {
		errno = EINVAL;
		return -1;
	}
	if ((top = ws_open(root, path, O_RDONLY | O_NOCTTY | O_NONBLOCK,
	    0)) == -1)
		return -1;
	serrno = 0;
	if (fstat(top, &st) == -1)
		serrno = errno;
	else if (!S_ISDIR(st.st_mode))
		serrno = ENOTDIR;
	else if ((fd = fcntl(top, F_DUPFD_CLOEXEC, 0)) == -1)
		serrno = errno;
	if (serrno != 0) {
		close(top);
		errno = serrno;
		return -1;
	}
	if (list_dir(fd, "", 1, max, l) == 0) {
		/* l->n grows as the loop runs: each level after the last. */
		for (i = 0; i < l->n; i++) {
			if (l->ents[i].type != AGENT_FTYPE_DIR ||
			    l->ents[i].depth >= depth)
				continue;
			if ((fd = ws_open_dir(top, l->ents[i].name)) == -1)
				continue;
			if (list_dir(fd, l->ents[i].name, l->ents[i].depth + 1,
			    max, l) == -1)
				break;
		}
	}
	close(top);
	qsort(l->ents, l->n, sizeof(l->ents[0]), entry_cmp);
	return 0;
}

static int
write_all(int fd, const void *buf, size_t len, off_t off, int positioned)
{
	const char	*p = buf;
	ssize_t		 n;

	while (len > 0) {
		n = positioned ? pwrite(fd, p, len, off) : write(fd, p, len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return -1;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

static int
copy_contents(int from, int to)
{
	char	 buf[WS_COPY_BUF];
	ssize_t	 n;

	for (;;) {
		n = read(from, buf, sizeof(buf));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return -1;
		if (n == 0)
			return 0;
		if (write_all(to, buf, (size_t)n, 0, 0) == -1)
			return -1;
	}
}

/*
 * Splits path into its directory, opened beneath root (and created one
 * level at a time if mkdirs), and its last component, which must be a
 * plain name.  Returns the directory fd.
 */
static int
open_parent(int root, const char *path, int mkdirs,
    const struct ws_owner *owner, char *base, size_t baselen)
{
	char	 dir[AGENT_PATH_MAX], *slash, *comp, *next;
	int	 dfd, nfd, serrno;
	size_t	 n;

	n = strlen(path);
	if (n == 0 || n >= sizeof(dir) || path[n - 1] == '/') {
		errno = EINVAL;
		return -1;
	}
	memcpy(dir, path, n + 1);
	if ((slash = strrchr(dir, '/')) != NULL) {
		*slash = '\0';
		comp = slash + 1;
	} else
		comp = dir;
	if (strlen(comp) >= baselen || strcmp(comp, ".") == 0 ||
	    strcmp(comp, "..") == 0) {
		errno = EINVAL;
		return -1;
	}
	memcpy(base, comp, strlen(comp) + 1);
	if (slash == NULL || dir[0] == '\0')
		return ws_open_dir(root, slash == NULL ? "." : "/");
	dfd = ws_open_dir(root, dir);
	if (dfd != -1 || !mkdirs || errno != ENOENT)
		return dfd;

	/* Walk down, creating what is missing. */
	if ((dfd = ws_open_dir(root, ".")) == -1)
		return -1;
	for (comp = dir; comp != NULL; comp = next) {
		if ((next = strchr(comp, '/')) != NULL)
			*next++ = '\0';
		if (*comp == '\0')
			continue;
		if (strcmp(comp, "..") != 0 && strcmp(comp, ".") != 0) {
			if (mkdirat(dfd, comp, WS_DIR_MODE) == 0) {
				if (owner != NULL && owner->uid != (uid_t)-1 &&
				    fchownat(dfd, comp, owner->uid, owner->gid,
				    AT_SYMLINK_NOFOLLOW) == -1)
					goto fail;
			} else if (errno != EEXIST)
				goto fail;
		}
		/* Each step is resolved beneath root again. */
		nfd = ws_open_dir(dfd, comp);
		if (nfd == -1)
			goto fail;
		close(dfd);
		dfd = nfd;
	}
	return dfd;
fail:
	serrno = errno;
	close(dfd);
	errno = serrno;
	return -1;
}

static void
tmp_name(char *buf, size_t len, const char *base, unsigned int attempt)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(buf, len, ".%.*s.mcvm-%ld-%lx-%u", 64, base, (long)getpid(),
	    (unsigned long)ts.tv_nsec, attempt);
}

/*
 * Writes data to path: replacing the file (flags 0), patching it at
 * offset (AGENT_WRITE_AT_OFFSET) or appending (AGENT_WRITE_APPEND).  All
 * but appends go to a temporary file renamed over the target, so readers
 * see the old or the new contents, never a mix.  *sizep gets the new size.
 */
int
ws_write(int root, const char *path, uint32_t flags, uint64_t offset,
    mode_t mode, const void *data, size_t len, const struct ws_owner *owner,
    uint64_t *sizep)
{
	char		 base[NAME_MAX + 1], tmp[NAME_MAX + 1];
	struct stat	 st;
	int		 dfd, fd = -1, src = -1, serrno, created = 0, exists;
	unsigned int	 i;

	if ((flags & ~AGENT_WRITE_FLAGS) != 0 ||
	    ((flags & AGENT_WRITE_APPEND) && (flags & AGENT_WRITE_AT_OFFSET)) ||
	    offset > WS_OFFSET_MAX || (mode & ~07777) != 0 ||
	    (!(flags & AGENT_WRITE_AT_OFFSET) && offset != 0)) {
		errno = EINVAL;
		return -1;
	}
	if ((dfd = open_parent(root, path, flags & AGENT_WRITE_MKDIRS, owner,
	    base, sizeof(base))) == -1)
		return -1;

	exists = fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (exists && S_ISLNK(st.st_mode)) {
		errno = ELOOP;
		goto fail;
	}
	if (exists && !S_ISREG(st.st_mode)) {
		errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		goto fail;
	}
	if (mode == 0)
		mode = exists ? (st.st_mode & 07777) : WS_FILE_MODE;

	if (flags & AGENT_WRITE_APPEND) {
		fd = ws_open(dfd, base, O_WRONLY | O_APPEND | O_CREAT |
		    O_NOCTTY | O_NONBLOCK, mode);
		if (fd == -1)
			goto fail;
		if (fstat(fd, &st) == -1)
			goto fail;
		if (!S_ISREG(st.st_mode)) {
			errno = EINVAL;
			goto fail;
		}
		if (st.st_size == 0 && owner != NULL &&
		    owner->uid != (uid_t)-1 &&
		    fchown(fd, owner->uid, owner->gid) == -1)
			goto fail;
		if (write_all(fd, data, len, 0, 0) == -1)
			goto fail;
		if (fstat(fd, &st) == -1)
			goto fail;
		goto done;
	}

	for (i = 0; i < WS_TMP_TRIES; i++) {
		tmp_name(tmp, sizeof(tmp), base, i);
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
		if (fd != -1 || errno != EEXIST)
			break;
	}
	if (fd == -1)
		goto fail;
	created = 1;
	if (flags & AGENT_WRITE_AT_OFFSET) {
		src = ws_open(dfd, base, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0);
		if (src == -1 && errno != ENOENT)
			goto fail;
		if (src != -1) {
			if (fstat(src, &st) == -1)
				goto fail;
			if (!S_ISREG(st.st_mode)) {
				errno = EINVAL;
				goto fail;
			}
			if (copy_contents(src, fd) == -1)
				goto fail;
			close(src);
			src = -1;
		}
	}
	if (write_all(fd, data, len, (off_t)offset, 1) == -1)
		goto fail;
	if (owner != NULL && owner->uid != (uid_t)-1 &&
	    fchown(fd, owner->uid, owner->gid) == -1)
		goto fail;
	if (fchmod(fd, mode) == -1 || fsync(fd) == -1)
		goto fail;
	if (fstat(fd, &st) == -1)
		goto fail;
	if (renameat(dfd, tmp, dfd, base) == -1)
		goto fail;
	created = 0;
	(void)fsync(dfd);
done:
	*sizep = (uint64_t)st.st_size;
	close(fd);
	close(dfd);
	return 0;
fail:
	serrno = errno;
	if (src != -1)
		close(src);
	if (fd != -1)
		close(fd);
	if (created)
		(void)unlinkat(dfd, tmp, 0);
	close(dfd);
	errno = serrno;
	return -1;
}
