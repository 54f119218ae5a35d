/*
 * The process framework shared by mcvmd and its children: the process
 * table, the common command-line flags, and imsg channels on libevent.
 */
#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "msg.h"
#include "msg_net.h"
#include "msg_proc.h"
#include "msg_store.h"
#include "proc.h"
#include "proto.h"

const struct proc_desc proc_table[PROC_MAX] = {
	[PROC_PARENT] =	{ PROC_PARENT,	"mcvmd",	"mcvmd" },
	[PROC_FRONTD] =	{ PROC_FRONTD,	"frontd",	"mcvm-frontd" },
	[PROC_NETD] =	{ PROC_NETD,	"netd",		"mcvm-netd" },
	[PROC_STORED] =	{ PROC_STORED,	"stored",	"mcvm-stored" },
};

/*
 * Parses the flags every daemon shares.  Returns 0, or -1 after printing
 * the usage line when the command line is wrong.
 */
int
proc_getopt(int argc, char **argv, struct proc_opts *o, const char *usage)
{
	return proc_getopt_ext(argc, argv, o, usage, "", NULL, NULL);
}

/*
 * The same, with extra options for one program: each option letter in
 * extra (getopt syntax) is handed to cb, which returns -1 to refuse it.
 */
int
proc_getopt_ext(int argc, char **argv, struct proc_opts *o,
    const char *usage, const char *extra,
    int (*cb)(int, const char *, void *), void *arg)
{
	char	 optstring[64];
	int	 ch;

	memset(o, 0, sizeof(*o));
	o->conffile = MCVM_CONF_DEFAULT;
	if (snprintf(optstring, sizeof(optstring), "D:df:hnSv%s", extra) >=
	    (int)sizeof(optstring))
		return -1;
	opterr = 0;
	while ((ch = getopt(argc, argv, optstring)) != -1) {
		if (ch != '?' && ch != ':' && strchr(extra, ch) != NULL) {
			if (cb(ch, optarg, arg) == -1) {
				fprintf(stderr, "usage: %s\n", usage);
				return -1;
			}
			continue;
		}
		switch (ch) {
		case 'h':
			printf("usage: %s\n", usage);
			exit(0);
		case 'D':
			if (o->ndefines == sizeof(o->defines) /
			    sizeof(o->defines[0])) {
				fprintf(stderr, "too many -D macros\n");
				return -1;
			}
			if (strchr(optarg, '=') == NULL ||
			    optarg[0] == '=') {
				fprintf(stderr, "-D %s: expected name=value\n",
				    optarg);
				return -1;
			}
			o->defines[o->ndefines++] = optarg;
			break;
		case 'd':
			o->foreground = 1;
			break;
		case 'f':
			o->conffile = optarg;
			break;
		case 'n':
			o->noaction = 1;
			break;
		case 'S':
			o->sandbox_debug = 1;
			break;
		case 'v':
			o->verbose++;
			break;
		default:
			if (optopt == 'D' || optopt == 'f' ||
			    (optopt != 0 && strchr(extra, optopt) != NULL))
				fprintf(stderr, "option -%c needs an argument\n",
				    optopt);
			else
				fprintf(stderr, "unknown option -%c\n", optopt);
			fprintf(stderr, "usage: %s\n", usage);
			return -1;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "unexpected argument: %s\nusage: %s\n",
		    argv[optind], usage);
		return -1;
	}
	return 0;
}

/* Defines the -D macros; they override assignments in the file. */
int
proc_apply_defines(const struct proc_opts *o)
{
	size_t	 i;

	for (i = 0; i < o->ndefines; i++) {
		if (config_define(o->defines[i]) == -1) {
			log_warnx("cannot define macro %s", o->defines[i]);
			return -1;
		}
	}
	return 0;
}

int
imsgev_init(struct imsgev *iev, int fd, const char *peer,
    void (*handler)(int, short, void *), void *data)
{
	if (imsgbuf_init(&iev->ibuf, fd) == -1)
		return -1;
	iev->handler = handler;
	iev->data = data;
	iev->peer = peer;
	iev->events = 0;
	imsgev_add(iev);
	return 0;
}

/* (Re)arms the channel's event: always readable, writable when queued. */
void
imsgev_add(struct imsgev *iev)
{
	short	 events = EV_READ;

	if (iev->ibuf.wqlen > 0)
		events |= EV_WRITE;
	if (iev->events != 0 && events == iev->events &&
	    event_pending(&iev->ev, EV_READ | EV_WRITE, NULL))
		return;
	if (iev->events != 0)
		event_del(&iev->ev);
	iev->events = events;
	event_set(&iev->ev, iev->ibuf.fd, events, iev->handler, iev);
	event_add(&iev->ev, NULL);
}

/* Stops the channel and frees its buffers; the caller closes the fd. */
void
imsgev_clear(struct imsgev *iev)
{
	if (iev->events != 0)
		event_del(&iev->ev);
	iev->events = 0;
	imsgbuf_clear(&iev->ibuf);
}

int
imsgev_compose(struct imsgev *iev, uint32_t type, uint32_t peerid,
    uint32_t pid, int fd, const void *data, size_t len)
{
	if (imsg_compose(&iev->ibuf, type, peerid, pid, fd, data, len) == -1)
		return -1;
	imsgev_add(iev);
	return 0;
}

int
imsgev_close(struct imsgev *iev, struct ibuf *b)
{
	if (imsg_close(&iev->ibuf, b) == -1)
		return -1;
	imsgev_add(iev);
	return 0;
}

/*
 * The common part of every channel handler: flush on EV_WRITE, fill the
 * read buffer on EV_READ.  Returns 0 when messages may be waiting, or -1
 * when the peer is gone or broken (errno says which: 0 for EOF).
 */
int
imsgev_read(struct imsgev *iev, short event)
{
	ssize_t	 n;

	if (event & EV_WRITE) {
		if (imsgbuf_write(&iev->ibuf) == -1) {
			if (errno == EPIPE || errno == ECONNRESET)
				errno = 0;
			return -1;
		}
	}
	if (event & EV_READ) {
		n = imsgbuf_read(&iev->ibuf);
		if (n == 0) {
			errno = 0;
			return -1;
		}
		if (n == -1 && errno != EAGAIN) {
			if (errno == ECONNRESET)
				errno = 0;
			return -1;
		}
	}
	imsgev_add(iev);
	return 0;
}

/*
 * The start every child shares: flags, logging, macros, config, and the
 * check that mcvmd started it.  Exits on any error (or after -n).
 */
void
proc_child_setup(int argc, char **argv, const char *name, const char *usage,
    struct proc_opts *opts, struct mcvm_config *conf)
{
	proc_child_setup_ext(argc, argv, name, usage, opts, conf, "", NULL,
	    NULL);
}

void
proc_child_setup_ext(int argc, char **argv, const char *name,
    const char *usage, struct proc_opts *opts, struct mcvm_config *conf,
    const char *extra, int (*cb)(int, const char *, void *), void *arg)
{
	if (proc_getopt_ext(argc, argv, opts, usage, extra, cb, arg) == -1)
		exit(1);
	log_procinit(name);
	log_setverbose(opts->verbose);
	if (!opts->noaction)
		proc_child_check_socket();
	log_init(opts->foreground || opts->noaction, LOG_DAEMON);
	config_defaults(conf);
	if (proc_apply_defines(opts) == -1 ||
	    config_parse(opts->conffile, conf) == -1)
		exit(1);
	if (opts->noaction) {
		fprintf(stderr, "configuration OK\n");
		exit(0);
	}
	if (fcntl(PROC_PARENT_SOCK_FILENO, F_SETFD, FD_CLOEXEC) == -1 ||
	    fcntl(PROC_PARENT_SOCK_FILENO, F_SETFL, O_NONBLOCK) == -1)
		fatal("%s: fcntl", __func__);
	/* libevent's base must exist before the sandbox is loaded. */
	event_init();
}

static void
proc_child_sig(int sig, short event, void *arg)
{
	log_debug("signal %d, exiting", sig);
	exit(0);
}

/*
 * Arms the channel to mcvmd and the exit signals, says hello, and runs the
 * event loop.  Called after privdrop and the sandbox.
 */
void
proc_child_run(struct imsgev *iev, void (*dispatch)(int, short, void *))
{
	static struct event	 ev_term, ev_int;

	signal_set(&ev_term, SIGTERM, proc_child_sig, NULL);
	signal_set(&ev_int, SIGINT, proc_child_sig, NULL);
	signal_add(&ev_term, NULL);
	signal_add(&ev_int, NULL);
	(void)signal(SIGPIPE, SIG_IGN);
	(void)signal(SIGHUP, SIG_IGN);
	if (imsgev_init(iev, PROC_PARENT_SOCK_FILENO, "mcvmd", dispatch,
	    NULL) == -1)
		fatal("%s", __func__);
	proc_child_hello(iev);
	event_dispatch();
	fatalx("event loop ended");
}

/*
 * The loop of a child's channel to mcvmd: a peer gone means mcvmd is, so
 * the child exits; broken framing means a broken peer, which is fatal.
 * Each message goes to handle, then is freed.
 */
void
proc_child_dispatch(struct imsgev *iev, short event,
    void (*handle)(struct imsg *))
{
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
		handle(&imsg);
		imsg_free(&imsg);
	}
}

/* Sends fd as IMSG_NET_FD or IMSG_STORE_FD of role; the message owns fd. */
void
imsgev_send_fd(struct imsgev *iev, uint32_t type, uint32_t peerid,
    uint32_t role, int fd)
{
	struct msg_net_fd	 nf;
	struct msg_store_fd	 sf;
	struct ibuf		*b;

	if ((b = imsg_create(&iev->ibuf, type, peerid, 0, 8)) == NULL) {
		close(fd);
		fatal("%s", __func__);
	}
	if (type == IMSG_NET_FD) {
		nf.role = role;
		msg_net_fd_put(b, &nf);
	} else if (type == IMSG_STORE_FD) {
		sf.role = role;
		msg_store_fd_put(b, &sf);
	} else
		fatalx("%s: %s carries no fd", __func__, imsg_type_name(type));
	imsg_set_fd(b, fd);
	if (imsgev_close(iev, b) == -1)
		fatal("%s", __func__);
}

/* A child refuses to run unless mcvmd gave it a socket on its fixed fd. */
void
proc_child_check_socket(void)
{
	struct stat	 st;
	int		 type;
	socklen_t	 len = sizeof(type);

	if (fstat(PROC_PARENT_SOCK_FILENO, &st) == -1 || !S_ISSOCK(st.st_mode) ||
	    getsockopt(PROC_PARENT_SOCK_FILENO, SOL_SOCKET, SO_TYPE, &type,
	    &len) == -1 || type != SOCK_STREAM)
		fatalx("no socket on fd %d: this program is started by mcvmd",
		    PROC_PARENT_SOCK_FILENO);
}

void
proc_child_hello(struct imsgev *iev)
{
	struct msg_hello	 m = { MCVM_PROTO_VERSION };
	struct ibuf		*b;

	if ((b = imsg_create(&iev->ibuf, IMSG_HELLO, 0, getpid(), 8)) == NULL)
		fatal("%s", __func__);
	msg_hello_put(b, &m);
	if (imsgev_close(iev, b) == -1)
		fatal("%s", __func__);
}
