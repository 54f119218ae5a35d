/*
 * Workspace path resolution and file access (guestd/wsfile.c), against a
 * temporary directory: paths stay beneath the root, symlinks are refused
 * anywhere on the way, writes replace atomically, patch at an offset or
 * append.
 */
#include <sys/stat.h>

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

#include "agent_proto.h"
#include "wsfile.h"

static char	 top[64];
static char	 ws[128];
static int	 root = -1;

static void
setup(void)
{
	char	 path[256];
	int	 fd;

	snprintf(top, sizeof(top), "/tmp/mcvm-ws.XXXXXX");
	cr_assert_not_null(mkdtemp(top));
	snprintf(ws, sizeof(ws), "%s/workspace", top);
	cr_assert_eq(mkdir(ws, 0755), 0);
	snprintf(path, sizeof(path), "%s/secret", top);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "secret\n", 7), 7);
	close(fd);
	snprintf(path, sizeof(path), "%s/sub", ws);
	cr_assert_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/sub/a.txt", ws);
	fd = open(path, O_WRONLY | O_CREAT, 0640);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "0123456789", 10), 10);
	close(fd);
	snprintf(path, sizeof(path), "%s/up", ws);
	cr_assert_eq(symlink("..", path), 0);
	snprintf(path, sizeof(path), "%s/abs", ws);
	cr_assert_eq(symlink("/etc", path), 0);
	snprintf(path, sizeof(path), "%s/inner", ws);
	cr_assert_eq(symlink("sub/a.txt", path), 0);
	root = open(ws, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(root, 0);
}

static void
teardown(void)
{
	char	 cmd[128];

	if (root != -1)
		close(root);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(path, .init = setup, .fini = teardown);

static uint8_t	 buf[256];

static ssize_t
rd(const char *path, uint64_t off, size_t len, uint64_t *size)
{
	uint64_t	 sz;

	memset(buf, 0, sizeof(buf));
	return ws_read(root, path, off, buf, len, size != NULL ? size : &sz);
}

Test(path, relpath)
{
	cr_assert_str_eq(ws_relpath("a/b", "/workspace"), "a/b");
	cr_assert_str_eq(ws_relpath("/workspace/a/b", "/workspace"), "a/b");
	cr_assert_str_eq(ws_relpath("/workspace//a", "/workspace"), "a");
	cr_assert_str_eq(ws_relpath("/workspace", "/workspace"), ".");
	cr_assert_str_eq(ws_relpath("/workspace/", "/workspace"), ".");
	cr_assert_null(ws_relpath("/workspacex/a", "/workspace"));
	cr_assert_eq(errno, EXDEV);
	cr_assert_null(ws_relpath("/etc/passwd", "/workspace"));
	cr_assert_eq(errno, EXDEV);
	cr_assert_null(ws_relpath("", "/workspace"));
	cr_assert_eq(errno, EINVAL);
}

Test(path, read_inside)
{
	uint64_t	 size;

	cr_assert_eq(rd("sub/a.txt", 0, 100, &size), 10);
	cr_assert_eq(size, 10);
	cr_assert_str_eq((char *)buf, "0123456789");
	cr_assert_eq(rd("sub/a.txt", 7, 100, NULL), 3);
	cr_assert_str_eq((char *)buf, "789");
	cr_assert_eq(rd("sub/a.txt", 20, 100, NULL), 0);
	cr_assert_eq(rd("sub/../sub/./a.txt", 0, 2, NULL), 2);
	cr_assert_str_eq((char *)buf, "01");
}

Test(path, escapes_refused)
{
	cr_assert_eq(rd("../secret", 0, 10, NULL), -1);
	cr_assert_eq(errno, EXDEV);
	cr_assert_eq(rd("sub/../../secret", 0, 10, NULL), -1);
	cr_assert_eq(errno, EXDEV);
	cr_assert_eq(rd("/etc/passwd", 0, 10, NULL), -1);
	cr_assert_eq(errno, EXDEV);
	cr_assert_eq(rd("up/secret", 0, 10, NULL), -1);
	cr_assert_eq(errno, ELOOP);
	cr_assert_eq(rd("abs/passwd", 0, 10, NULL), -1);
	cr_assert_eq(errno, ELOOP);
	/* Even a symlink that stays inside is refused. */
	cr_assert_eq(rd("inner", 0, 10, NULL), -1);
	cr_assert_eq(errno, ELOOP);
}

Test(path, not_regular)
{
	char	 path[256];

	cr_assert_eq(rd("sub", 0, 10, NULL), -1);
	cr_assert_eq(errno, EISDIR);
	snprintf(path, sizeof(path), "%s/fifo", ws);
	cr_assert_eq(mkfifo(path, 0644), 0);
	cr_assert_eq(rd("fifo", 0, 10, NULL), -1);	/* and no hang */
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rd("missing", 0, 10, NULL), -1);
	cr_assert_eq(errno, ENOENT);
}

Test(path, write_replaces_atomically)
{
	struct stat	 st;
	uint64_t	 size;
	char		 path[256];
	DIR		*d;
	struct dirent	*de;

	cr_assert_eq(ws_write(root, "sub/a.txt", 0, 0, 0, "new", 3, NULL,
	    &size), 0);
	cr_assert_eq(size, 3);
	cr_assert_eq(rd("sub/a.txt", 0, 100, NULL), 3);
	cr_assert_str_eq((char *)buf, "new");
	snprintf(path, sizeof(path), "%s/sub/a.txt", ws);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0640, "the mode is kept");
	/* No temporary file is left behind. */
	snprintf(path, sizeof(path), "%s/sub", ws);
	d = opendir(path);
	cr_assert_not_null(d);
	while ((de = readdir(d)) != NULL)
		cr_assert(de->d_name[0] != '.' ||
		    strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0, "left %s", de->d_name);
	closedir(d);
}

Test(path, write_new_file_with_mode_and_owner)
{
	struct ws_owner	 own = { 1234, 4321 };
	struct stat	 st;
	uint64_t	 size;
	char		 path[256];

	cr_assert_eq(ws_write(root, "n.sh", 0, 0, 0750, "#!/bin/sh\n", 10,
	    geteuid() == 0 ? &own : NULL, &size), 0);
	snprintf(path, sizeof(path), "%s/n.sh", ws);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0750);
	if (geteuid() == 0) {
		cr_assert_eq(st.st_uid, 1234);
		cr_assert_eq(st.st_gid, 4321);
	}
	cr_assert_eq(ws_write(root, "plain", 0, 0, 0, "", 0, NULL, &size), 0);
	snprintf(path, sizeof(path), "%s/plain", ws);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 07777, WS_FILE_MODE);
	cr_assert_eq(size, 0);
}

Test(path, write_at_offset_and_append)
{
	uint64_t	 size;

	cr_assert_eq(ws_write(root, "sub/a.txt", AGENT_WRITE_AT_OFFSET, 2,
	    0, "AB", 2, NULL, &size), 0);
	cr_assert_eq(size, 10);
	cr_assert_eq(rd("sub/a.txt", 0, 100, NULL), 10);
	cr_assert_str_eq((char *)buf, "01AB456789");
	cr_assert_eq(ws_write(root, "sub/a.txt", AGENT_WRITE_AT_OFFSET, 12,
	    0, "Z", 1, NULL, &size), 0);
	cr_assert_eq(size, 13);
	cr_assert_eq(ws_write(root, "sub/a.txt", AGENT_WRITE_APPEND, 0, 0,
	    "++", 2, NULL, &size), 0);
	cr_assert_eq(size, 15);
	cr_assert_eq(rd("sub/a.txt", 10, 100, NULL), 5);
	cr_assert_arr_eq(buf, "\0\0Z++", 5);
	/* Append creates. */
	cr_assert_eq(ws_write(root, "log", AGENT_WRITE_APPEND, 0, 0, "x", 1,
	    NULL, &size), 0);
	cr_assert_eq(size, 1);
	/* An offset only with AT_OFFSET; not both modes at once. */
	cr_assert_eq(ws_write(root, "log", 0, 5, 0, "x", 1, NULL, &size), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(ws_write(root, "log", AGENT_WRITE_APPEND |
	    AGENT_WRITE_AT_OFFSET, 0, 0, "x", 1, NULL, &size), -1);
	cr_assert_eq(errno, EINVAL);
}

Test(path, write_escapes_refused)
{
	uint64_t	 size;
	char		 path[256];
	struct stat	 st;

	cr_assert_eq(ws_write(root, "../evil", 0, 0, 0, "x", 1, NULL, &size),
	    -1);
	cr_assert_eq(errno, EXDEV);
	cr_assert_eq(ws_write(root, "up/evil", 0, 0, 0, "x", 1, NULL, &size),
	    -1);
	cr_assert_eq(errno, ELOOP);
	cr_assert_eq(ws_write(root, "up/evil", AGENT_WRITE_MKDIRS, 0, 0, "x", 1,
	    NULL, &size), -1);
	cr_assert_eq(ws_write(root, "inner", 0, 0, 0, "x", 1, NULL, &size), -1);
	cr_assert_eq(errno, ELOOP);
	cr_assert_eq(ws_write(root, "inner", AGENT_WRITE_APPEND, 0, 0, "x", 1,
	    NULL, &size), -1);
	cr_assert_eq(errno, ELOOP);
	cr_assert_eq(ws_write(root, "abs/x/y", AGENT_WRITE_MKDIRS, 0, 0, "x",
	    1, NULL, &size), -1);
	snprintf(path, sizeof(path), "%s/evil", top);
	cr_assert_eq(stat(path, &st), -1);
	/* The symlink itself is untouched. */
	cr_assert_eq(rd("sub/a.txt", 0, 100, NULL), 10);
}

Test(path, bad_names)
{
	uint64_t	 size;

	cr_assert_eq(ws_write(root, "sub/", 0, 0, 0, "x", 1, NULL, &size), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(ws_write(root, "sub/..", 0, 0, 0, "x", 1, NULL, &size),
	    -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(ws_write(root, ".", 0, 0, 0, "x", 1, NULL, &size), -1);
	cr_assert_eq(ws_write(root, "sub", 0, 0, 0, "x", 1, NULL, &size), -1);
	cr_assert_eq(errno, EISDIR);
	cr_assert_eq(ws_write(root, "a", 0x100, 0, 0, "x", 1, NULL, &size), -1);
	cr_assert_eq(errno, EINVAL);
}

Test(path, mkdirs)
{
	uint64_t	 size;
	struct stat	 st;
	char		 path[256];

	cr_assert_eq(ws_write(root, "x/y/z.txt", 0, 0, 0, "z", 1, NULL, &size),
	    -1);
	cr_assert_eq(errno, ENOENT);
	cr_assert_eq(ws_write(root, "x/y/z.txt", AGENT_WRITE_MKDIRS, 0, 0, "z",
	    1, NULL, &size), 0);
	snprintf(path, sizeof(path), "%s/x/y", ws);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert(S_ISDIR(st.st_mode));
	cr_assert_eq(rd("x/y/z.txt", 0, 10, NULL), 1);
	/* Existing directories are fine. */
	cr_assert_eq(ws_write(root, "x/y/w", AGENT_WRITE_MKDIRS, 0, 0, "w", 1,
	    NULL, &size), 0);
}

/* A parent on the way that is a symlink is never created through. */
Test(path, mkdirs_never_through_a_symlink)
{
	uint64_t	 size;
	struct stat	 st;
	char		 path[256];

	cr_assert_eq(ws_write(root, "up/x/new.txt", AGENT_WRITE_MKDIRS, 0, 0,
	    "z", 1, NULL, &size), -1);
	cr_assert_eq(errno, ELOOP);
	snprintf(path, sizeof(path), "%s/x", top);
	cr_assert_eq(stat(path, &st), -1);
	cr_assert_eq(ws_write(root, "sub/../up/y/n", AGENT_WRITE_MKDIRS, 0, 0,
	    "z", 1, NULL, &size), -1);
	snprintf(path, sizeof(path), "%s/y", top);
	cr_assert_eq(stat(path, &st), -1);
	cr_assert_eq(ws_write(root, "abs/mcvm-x/n", AGENT_WRITE_MKDIRS, 0, 0,
	    "z", 1, NULL, &size), -1);
	cr_assert_eq(errno, ELOOP);
	cr_assert_eq(stat("/etc/mcvm-x", &st), -1);
	/* A file where a directory would be made is no directory. */
	cr_assert_eq(ws_write(root, "sub/a.txt/b", AGENT_WRITE_MKDIRS, 0, 0,
	    "z", 1, NULL, &size), -1);
	cr_assert_eq(errno, ENOTDIR);
}

/* The size is the file's, whatever the offset read from. */
Test(path, size_for_any_offset)
{
	uint64_t	 size = 0;

	cr_assert_eq(rd("sub/a.txt", 4, 2, &size), 2);
	cr_assert_eq(size, 10);
	cr_assert_eq(rd("sub/a.txt", 10, 2, &size), 0);
	cr_assert_eq(size, 10);
	cr_assert_eq(rd("sub/a.txt", 1000, 2, &size), 0);
	cr_assert_eq(size, 10);
}

static struct ws_list	 lst;

static const struct ws_entry *
entry(const char *name)
{
	size_t	 i;

	for (i = 0; i < lst.n; i++)
		if (strcmp(lst.ents[i].name, name) == 0)
			return &lst.ents[i];
	return NULL;
}

Test(path, list_one_level)
{
	const struct ws_entry	*e;

	cr_assert_eq(ws_list(root, ".", 1, AGENT_LIST_MAX, &lst), 0);
	cr_assert_eq(lst.n, 4);		/* sub, up, abs, inner */
	cr_assert_eq(lst.truncated, 0);
	cr_assert_str_eq(lst.ents[0].name, "abs");	/* sorted */
	cr_assert_str_eq(lst.ents[3].name, "up");
	cr_assert_not_null(e = entry("sub"));
	cr_assert_eq(e->type, AGENT_FTYPE_DIR);
	cr_assert_eq(e->mode, 0755);
	cr_assert_not_null(e = entry("up"));
	cr_assert_eq(e->type, AGENT_FTYPE_SYMLINK);
	cr_assert_null(entry("sub/a.txt"));
	cr_assert_null(entry("up/secret"));
}

Test(path, list_deeper_never_follows_symlinks)
{
	const struct ws_entry	*e;
	char			 path[256];

	snprintf(path, sizeof(path), "%s/sub/deeper", ws);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/sub/deeper/fifo", ws);
	cr_assert_eq(mkfifo(path, 0600), 0);
	cr_assert_eq(ws_list(root, ".", AGENT_LIST_DEPTH_MAX, AGENT_LIST_MAX,
	    &lst), 0);
	cr_assert_eq(lst.n, 7);
	cr_assert_not_null(e = entry("sub/a.txt"));
	cr_assert_eq(e->type, AGENT_FTYPE_FILE);
	cr_assert_eq(e->size, 10);
	cr_assert_eq(e->mode, 0640);
	cr_assert_gt(e->mtime, 0);
	cr_assert_not_null(e = entry("sub/deeper/fifo"));
	cr_assert_eq(e->type, AGENT_FTYPE_OTHER);
	/* '/' sorts first: a directory's entries follow it at once. */
	cr_assert_str_eq(lst.ents[2].name, "sub");
	cr_assert_str_eq(lst.ents[3].name, "sub/a.txt");
	cr_assert_str_eq(lst.ents[4].name, "sub/deeper");
	cr_assert_str_eq(lst.ents[5].name, "sub/deeper/fifo");
	cr_assert_str_eq(lst.ents[6].name, "up");
	/* Not through up (..) nor abs (/etc). */
	for (size_t i = 0; i < lst.n; i++)
		cr_assert_eq(strncmp(lst.ents[i].name, "up/", 3) != 0 &&
		    strncmp(lst.ents[i].name, "abs/", 4) != 0, 1, "%s",
		    lst.ents[i].name);

	/* Depth 2 stops above sub/deeper's entries. */
	cr_assert_eq(ws_list(root, ".", 2, AGENT_LIST_MAX, &lst), 0);
	cr_assert_eq(lst.n, 6);
	cr_assert_null(entry("sub/deeper/fifo"));

	/* A subdirectory, named as the agent gets it. */
	cr_assert_eq(ws_list(root, ws_relpath("/workspace/sub",
	    "/workspace"), 1, AGENT_LIST_MAX, &lst), 0);
	cr_assert_eq(lst.n, 2);
	cr_assert_str_eq(lst.ents[0].name, "a.txt");
}

Test(path, list_bounded_and_refused)
{
	cr_assert_eq(ws_list(root, ".", AGENT_LIST_DEPTH_MAX, 2, &lst), 0);
	cr_assert_eq(lst.n, 2);
	cr_assert_eq(lst.truncated, 1);
	/* The upper level first: a cut list keeps it. */
	cr_assert_null(entry("sub/a.txt"));

	cr_assert_eq(ws_list(root, "up", 1, AGENT_LIST_MAX, &lst), -1);
	cr_assert_eq(errno, ELOOP);
	cr_assert_eq(ws_list(root, "../", 1, AGENT_LIST_MAX, &lst), -1);
	cr_assert_eq(errno, EXDEV);
	cr_assert_eq(ws_list(root, "sub/a.txt", 1, AGENT_LIST_MAX, &lst), -1);
	cr_assert_eq(errno, ENOTDIR);
	cr_assert_eq(ws_list(root, "missing", 1, AGENT_LIST_MAX, &lst), -1);
	cr_assert_eq(errno, ENOENT);
	cr_assert_eq(ws_list(root, ".", 0, AGENT_LIST_MAX, &lst), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(ws_list(root, ".", AGENT_LIST_DEPTH_MAX + 1,
	    AGENT_LIST_MAX, &lst), -1);
	cr_assert_eq(ws_list(root, ".", 1, AGENT_LIST_MAX + 1, &lst), -1);
}

/* Many entries: the count bound holds, and they fit the wire bound. */
Test(path, list_full_directory)
{
	char	 path[256];
	size_t	 i;
	int	 fd;

	for (i = 0; i < AGENT_LIST_MAX + 10; i++) {
		snprintf(path, sizeof(path), "%s/sub/f%04zu", ws, i);
		fd = open(path, O_WRONLY | O_CREAT, 0600);
		cr_assert_geq(fd, 0);
		close(fd);
	}
	cr_assert_eq(ws_list(root, "sub", 1, AGENT_LIST_MAX, &lst), 0);
	cr_assert_eq(lst.n, AGENT_LIST_MAX);
	cr_assert_eq(lst.truncated, 1);
	cr_assert_leq(lst.bytes, AGENT_LIST_BYTES_MAX);
}
