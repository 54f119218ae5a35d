/*
 * mcvm-netd: VM network namespaces, links and nftables tables.  It keeps
 * uid 0 but only CAP_NET_ADMIN and CAP_SYS_ADMIN (for setns), chrooted to
 * an empty directory.  Its one peer is mcvmd.
 */
#include <sys/types.h>

#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "msg.h"
#include "netd.h"
#include "privdrop.h"
#include "proc.h"
#include "proto.h"

#define NETD_USAGE	"mcvm-netd [-dhnSv] [-D macro=value] [-f file]"

static struct mcvm_config	 conf;
static struct imsgev		 iev_parent;

/* Everything comes from mcvmd; anything unexpected means it is broken. */
static void
netd_dispatch(int fd, short event, void *arg)
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

int
main(int argc, char *argv[])
{
	static const int	 caps[] = { CAP_NET_ADMIN, CAP_SYS_ADMIN };
	struct proc_opts	 opts;
	char			 empty[PATH_MAX];

	proc_child_setup(argc, argv, "netd", NETD_USAGE, &opts, &conf);
	if (snprintf(empty, sizeof(empty), "%s/%s", conf.rundir,
	    MCVM_EMPTY_DIR) >= (int)sizeof(empty))
		fatalx("run directory path too long");

	privdrop(&(struct privdrop){
		.chroot = empty,
		.caps = caps,
		.ncaps = sizeof(caps) / sizeof(caps[0]),
	});
	netd_sandbox(opts.sandbox_debug);
	proc_child_run(&iev_parent, netd_dispatch);
	return 1;
}
