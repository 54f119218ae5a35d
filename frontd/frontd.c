/*
 * mcvm-frontd: the only process that faces the network.
 *
 * main: flags and config → the socket to mcvmd → listeners and TLS → drop
 * to the frontd user in an empty chroot → seccomp → event loop.  Its only
 * peer is mcvmd, over the socketpair on PROC_PARENT_SOCK_FILENO.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "frontd.h"
#include "hash.h"
#include "log.h"
#include "msg_front.h"
#include "msg_proc.h"
#include "privdrop.h"

#define FRONTD_USAGE	"mcvm-frontd [-dhnSv] [-D macro=value] [-f file]"
#define LISTEN_BACKLOG	128

static struct frontd	 frontd;
struct frontd		*fenv = &frontd;

static uint32_t		 next_peerid;

static void	 frontd_dispatch(int, short, void *);

uint32_t
front_peerid(void)
{
	if (++next_peerid == 0)
		next_peerid = 1;
	return next_peerid;
}

void
front_send_auth(struct fop *op)
{
	struct msg_front_auth	 m;
	struct ibuf		*b;

	memcpy(m.hash, op->req->hash, sizeof(m.hash));
	if ((b = imsg_create(&fenv->iev.ibuf, IMSG_FRONT_AUTH, op->peerid, 0,
	    TOKEN_HASH_LEN + 8)) == NULL)
		fatal("%s", __func__);
	msg_front_auth_put(b, &m);
	if (imsgev_close(&fenv->iev, b) == -1)
		fatal("%s", __func__);
}

/* Sends b to mcvmd; -1 (b freed) if what was put in it did not fit. */
static int
front_close(struct ibuf *b)
{
	if (b->err != 0) {
		free(b->buf);
		free(b);
		return -1;
	}
	if (imsgev_close(&fenv->iev, b) == -1)
		fatal("%s", __func__);
	return 0;
}

/* Returns -1 when the arguments do not fit in one message. */
int
front_send_tool(struct fop *op, const struct tool_args *args)
{
	struct msg_front_tool		 m;
	struct ibuf			*b;

	memcpy(m.hash, op->req->hash, sizeof(m.hash));
	m.tool = op->tool->id;
	m.args = *args;
	if ((b = imsg_create(&fenv->iev.ibuf, IMSG_FRONT_TOOL, op->peerid, 0,
	    1024)) == NULL)
		fatal("%s", __func__);
	msg_front_tool_put(b, &m);
	return front_close(b);
}

/* A long tool call made a task (task.c); -1: args too large. */
int
front_send_task(struct fop *op, const struct tool_args *args,
    uint64_t ttl_ms)
{
	struct msg_front_task		 m;
	struct ibuf			*b;

	m.ttl_ms = ttl_ms;
	memcpy(m.tool.hash, op->req->hash, sizeof(m.tool.hash));
	m.tool.tool = op->tool->id;
	m.tool.args = *args;
	if ((b = imsg_create(&fenv->iev.ibuf, IMSG_FRONT_TASK, op->peerid, 0,
	    1024)) == NULL)
		fatal("%s", __func__);
	msg_front_task_put(b, &m);
	return front_close(b);
}

/* tasks/get or tasks/cancel: type is IMSG_FRONT_TASK_STATUS or _CANCEL. */
void
front_send_task_ref(struct fop *op, uint32_t type, const char *id)
{
	struct msg_front_task_status	 m;
	struct ibuf			*b;

	memcpy(m.hash, op->req->hash, sizeof(m.hash));
	m.id = id;
	if ((b = imsg_create(&fenv->iev.ibuf, type, op->peerid, 0, 128)) ==
	    NULL)
		fatal("%s", __func__);
	if (type == IMSG_FRONT_TASK_STATUS)
		msg_front_task_status_put(b, &m);
	else
		msg_front_task_cancel_put(b, &m);
	if (imsgev_close(&fenv->iev, b) == -1)
		fatal("%s", __func__);
}

void
front_send_image(struct fop *op, const struct msg_front_image *m)
{
	struct ibuf	*b;

	if ((b = imsg_create(&fenv->iev.ibuf, IMSG_FRONT_IMAGE, op->peerid, 0,
	    128)) == NULL)
		fatal("%s", __func__);
	msg_front_image_put(b, m);
	if (imsgev_close(&fenv->iev, b) == -1)
		fatal("%s", __func__);
}

void
front_send_cancel(uint32_t peerid)
{
	if (imsgev_compose(&fenv->iev, IMSG_FRONT_CANCEL, peerid, 0, -1,
	    NULL, 0) == -1)
		fatal("%s", __func__);
}

static void
frontd_auth_result(struct imsg *imsg)
{
	struct msg_front_auth_result	 m;

	if (msg_front_auth_result_get(imsg, &m) == -1)
		fatalx("%s: malformed message from mcvmd", __func__);
	req_auth_result(imsg->hdr.peerid, m.status, m.workspace,
	    m.expires_in);
}

/* A workspace was revoked or rotated: no acceptance outlives it. */
static void
frontd_auth_flush(struct imsg *imsg)
{
	if (msg_front_auth_flush_get(imsg) == -1)
		fatalx("%s: malformed message from mcvmd", __func__);
	authcache_flush();
	if (imsgev_compose(&fenv->iev, IMSG_FRONT_AUTH_FLUSHED,
	    imsg->hdr.peerid, 0, -1, NULL, 0) == -1)
		fatal("%s", __func__);
}

static void
frontd_tool_result(struct imsg *imsg)
{
	struct msg_front_tool_result	 m;

	if (msg_front_tool_result_get(imsg, &m) == -1)
		fatalx("%s: malformed message from mcvmd", __func__);
	req_tool_result(imsg->hdr.peerid, m.status, m.json);
}

/* A result whose bytes come by descriptor; a bad one is mcvmd's bug. */
static void
frontd_tool_result_fd(struct imsg *imsg)
{
	struct msg_front_tool_result_fd	 m;
	int				 fd = imsg_get_fd(imsg);

	if (fd == -1 || msg_front_tool_result_fd_get(imsg, &m) == -1)
		fatalx("%s: malformed message from mcvmd", __func__);
	req_tool_result_fd(imsg->hdr.peerid, &m, fd);
}

static void
frontd_progress(struct imsg *imsg)
{
	struct msg_front_progress	 m;

	if (msg_front_progress_get(imsg, &m) == -1)
		fatalx("%s: malformed message from mcvmd", __func__);
	req_progress(imsg->hdr.peerid, m.progress, m.total, m.message);
}

static void
frontd_dispatch(int fd, short event, void *arg)
{
	struct imsgev		*iev = arg;
	struct imsg		 imsg;
	struct msg_verbose	 verbose;
	int			 n;

	if (imsgev_read(iev, event) == -1)
		fatalx("lost mcvmd");
	for (;;) {
		if ((n = imsg_get(&iev->ibuf, &imsg)) == -1)
			fatal("%s: imsg_get", __func__);
		if (n == 0)
			break;
		switch (imsg.hdr.type) {
		case IMSG_FRONT_AUTH_RESULT:
			frontd_auth_result(&imsg);
			break;
		case IMSG_FRONT_AUTH_FLUSH:
			frontd_auth_flush(&imsg);
			break;
		case IMSG_FRONT_TOOL_RESULT:
			frontd_tool_result(&imsg);
			break;
		case IMSG_FRONT_PROGRESS:
			frontd_progress(&imsg);
			break;
		case IMSG_FRONT_TOOL_RESULT_FD:
			frontd_tool_result_fd(&imsg);
			break;
		case IMSG_FRONT_IMAGE_FD:
			if (imsg.fd == -1 ||
			    msg_front_image_fd_get(&imsg) == -1)
				fatalx("%s: malformed image fd", __func__);
			req_image_fd(imsg.hdr.peerid, imsg_get_fd(&imsg));
			break;
		case IMSG_VERBOSE:
			if (msg_verbose_get(&imsg, &verbose) == -1)
				fatalx("%s: malformed verbose", __func__);
			log_setverbose((int)verbose.level);
			break;
		default:
			fatalx("%s: unexpected %s from mcvmd", __func__,
			    imsg_type_name(imsg.hdr.type));
		}
		imsg_free(&imsg);
	}
}

/* Binds one configured address, as root, before the chroot. */
static int
frontd_bind(const struct listen_addr *la)
{
	const struct sockaddr_un *sun = (const struct sockaddr_un *)&la->ss;
	struct stat	 st;
	int		 fd, on = 1;

	if ((fd = socket(la->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) == -1)
		fatal("socket for %s", la->text);
	if (la->is_unix) {
		/* Replace a stale socket, never any other file. */
		if (lstat(sun->sun_path, &st) == 0) {
			if (!S_ISSOCK(st.st_mode))
				fatalx("%s exists and is not a socket",
				    sun->sun_path);
			if (unlink(sun->sun_path) == -1)
				fatal("unlink %s", sun->sun_path);
		}
	} else if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on,
	    sizeof(on)) == -1)
		fatal("setsockopt SO_REUSEADDR");
	if (bind(fd, (const struct sockaddr *)&la->ss, la->sslen) == -1)
		fatal("bind %s", la->text);
	if (la->is_unix && chmod(sun->sun_path, 0666) == -1)
		fatal("chmod %s", sun->sun_path);
	if (listen(fd, LISTEN_BACKLOG) == -1)
		fatal("listen %s", la->text);
	log_info("listening on %s%s", la->text,
	    fenv->conf.tls_cert[0] != '\0' ? " (TLS)" : "");
	return fd;
}

static SSL_CTX *
frontd_tls(const struct mcvm_config *conf)
{
	SSL_CTX	*ctx;

	if (conf->tls_cert[0] == '\0')
		return NULL;
	if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL)
		fatalx("SSL_CTX_new failed");
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1)
		fatalx("cannot require TLS 1.2");
	SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION |
	    SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	/* No session tickets: their keys would outlive nothing useful. */
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	if (SSL_CTX_use_certificate_chain_file(ctx, conf->tls_cert) != 1)
		fatalx("cannot load TLS certificate %s", conf->tls_cert);
	if (SSL_CTX_use_PrivateKey_file(ctx, conf->tls_key,
	    SSL_FILETYPE_PEM) != 1)
		fatalx("cannot load TLS key %s", conf->tls_key);
	if (SSL_CTX_check_private_key(ctx) != 1)
		fatalx("TLS key does not match the certificate");
	return ctx;
}

/* libevent's current base, created by proc_child_setup(). */
static struct event_base *
frontd_base(void)
{
	struct event	 probe;

	event_set(&probe, -1, 0, NULL, NULL);
	return event_get_base(&probe);
}

static void
frontd_sweep(int fd, short event, void *arg)
{
	struct event	*ev = arg;
	struct timeval	 tv = { SESSION_SWEEP_INTERVAL, 0 };

	session_sweep(time(NULL));
	evtimer_add(ev, &tv);
}

int
main(int argc, char *argv[])
{
	static struct event	 ev_sweep;
	struct mcvm_config	*conf = &fenv->conf;
	struct http_limits	 lim;
	struct timeval		 tv = { SESSION_SWEEP_INTERVAL, 0 };
	char			 empty[PATH_MAX];
	int			 fds[CONF_MAX_LISTEN];
	uint8_t			 warm[SHA256_LEN];
	SSL_CTX			*ssl;
	size_t			 i;

	proc_child_setup(argc, argv, "frontd", FRONTD_USAGE, &fenv->opts,
	    conf);
	fenv->base = frontd_base();
	if (snprintf(empty, sizeof(empty), "%s/%s", conf->rundir,
	    MCVM_EMPTY_DIR) >= (int)sizeof(empty))
		fatalx("run directory path too long");
	if (conf->nlisten == 0)
		fatalx("no listen address");

	for (i = 0; i < conf->nlisten; i++)
		fds[i] = frontd_bind(&conf->listen[i]);
	ssl = frontd_tls(conf);
	/*
	 * Warm up what would otherwise open files later, inside the
	 * sandbox: libcrypto reads its configuration on first use, and
	 * jansson seeds its hash function from /dev/urandom.
	 */
	if (sha256("", 0, warm) == -1)
		fatalx("libcrypto does not work");
	json_object_seed(0);
	if (catalog_init() == -1)
		fatalx("cannot build the tool catalogue");

	privdrop(&(struct privdrop){
		.user = conf->frontd_user,
		.chroot = empty,
	});

	lim.body = conf->body_limit;
	lim.header = conf->header_limit;
	lim.connections = conf->max_connections;
	lim.peer_connections = conf->peer_connections;
	lim.idle_timeout = conf->idle_timeout;
	lim.header_timeout = conf->header_timeout;
	lim.request_timeout = conf->request_timeout;
	if (http_init(fenv->base, &lim, req_handle, req_http_error, NULL,
	    ssl) == -1)
		fatal("http_init");
	http_stream_bodies(image_streams, FRONT_UPLOAD_MAX);
	for (i = 0; i < conf->nlisten; i++)
		if (http_listen(fds[i]) == -1)
			fatal("listener for %s", conf->listen[i].text);
	evtimer_set(&ev_sweep, frontd_sweep, &ev_sweep);
	evtimer_add(&ev_sweep, &tv);

	frontd_sandbox(fenv->opts.sandbox_debug);
	proc_child_run(&fenv->iev, frontd_dispatch);
	return 1;
}
