/*
 * mcvm-stored: the image store.  It runs as its own user, the owner of the
 * store, with no capabilities, in a network namespace of its own (it never
 * reaches the network).  It is not chrooted: it will run qemu-img, which
 * needs the system's libraries; its seccomp policy and its uid confine it
 * instead.  Its one peer is mcvmd.
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <pwd.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "msg.h"
#include "privdrop.h"
#include "proc.h"
#include "proto.h"
#include "stored.h"

#define STORED_USAGE	"mcvm-stored [-dhnSv] [-D macro=value] [-f file]"
#define STORE_DIR	"images"

static struct mcvm_config	 conf;
static struct imsgev		 iev_parent;

static void
stored_dispatch(int fd, short event, void *arg)
{
	struct imsgev	*iev = arg;
	struct imsg	 imsg;
	int		 n;

	if (imsgev_read(iev, event) == -1) {
		log_debug("mcvmd went away");
		exit(0);
	}
	for (;;) {
		if ((n = imsg_get(&iev->ibuf, &imsg)) == -1)
			fatalx("bad framing from mcvmd");
		if (n == 0)
			break;
		switch (imsg.hdr.type) {
		default:
			fatalx("unexpected %s from mcvmd",
			    imsg_type_name(imsg.hdr.type));
		}
		imsg_free(&imsg);
	}
}

/* The store belongs to the store user, and to no one else. */
static void
stored_open_store(const char *dir, const char *user)
{
	struct passwd	*pw;
	struct stat	 st;

	if ((pw = getpwnam(user)) == NULL)
		fatalx("unknown user %s", user);
	if (mkdir(dir, 0700) == -1 && errno != EEXIST)
		fatal("mkdir %s", dir);
	if (lstat(dir, &st) == -1)
		fatal("%s", dir);
	if (!S_ISDIR(st.st_mode))
		fatalx("%s is not a directory", dir);
	if ((st.st_uid != pw->pw_uid || st.st_gid != pw->pw_gid) &&
	    chown(dir, pw->pw_uid, pw->pw_gid) == -1)
		fatal("chown %s", dir);
	if ((st.st_mode & 07777) != 0700 && chmod(dir, 0700) == -1)
		fatal("chmod %s", dir);
	if (chdir(dir) == -1)
		fatal("chdir %s", dir);
}

int
main(int argc, char *argv[])
{
	struct proc_opts	 opts;
	char			 store[PATH_MAX];

	proc_child_setup(argc, argv, "stored", STORED_USAGE, &opts, &conf);
	if (snprintf(store, sizeof(store), "%s/%s", conf.statedir,
	    STORE_DIR) >= (int)sizeof(store))
		fatalx("state directory path too long");
	stored_open_store(store, conf.stored_user);
	if (unshare(CLONE_NEWNET) == -1)
		fatal("unshare(CLONE_NEWNET)");

	privdrop(&(struct privdrop){ .user = conf.stored_user });
	stored_sandbox(opts.sandbox_debug);
	proc_child_run(&iev_parent, stored_dispatch);
	return 1;
}
