/*
 * HTTP/1.1 server for mcvm-frontd: see http.h.
 *
 * Timers: a new connection must deliver its first request head within
 * header_timeout; a kept-alive one waits idle_timeout for the first byte
 * of its next request, whose head must then arrive within header_timeout.
 * Each whole request (head and body) must arrive within request_timeout
 * of its start, however slowly it trickles in.  A reply that the client
 * does not read is dropped after request_timeout.
 *
 * Connections: at most peer_connections per peer (see peer.h), and at
 * most connections in all.  When all are taken, a new connection sheds
 * the oldest one that has not completed an authenticated request (one
 * closing first), so that a client holding connections without ever
 * authenticating cannot lock out those who do.
 *
 * Closing: after the last reply, the write side is shut down and what the
 * client still sends is read and dropped for a bounded time and size
 * (LINGER_*), so that unread input does not turn the close into a reset
 * that would destroy the reply (a 431 to an over-long head) in transit.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "http.h"
#include "log.h"
#include "peer.h"

#define HTTP_LISTENERS_MAX	16
#define HTTP_PEER_MAX		64
#define HTTP_WRITE_MAX		(256 * 1024)	/* bytes per write(2) */
#define HTTP_PEEK_MAX		64	/* path read from a broken request */
#define LINGER_SECS		2	/* reading after the last reply */
#define LINGER_BYTES		(1024 * 1024)
#define HTTP_SINK_BUF		(256 * 1024)	/* body held, streamed */
#define HTTP_READ_MAX		16384		/* libevent's own default */
#define HTTP_SPLICE_CHUNK	(1024 * 1024)	/* bytes per splice(2) */
#define HTTP_SPLICE_STEPS	16		/* splices per wakeup */
#define HTTP_SEND_BUF		(512 * 1024)	/* reply held, from an fd */
#define HTTP_SEND_CHUNK		(128 * 1024)	/* read(2) at a time */

enum conn_state {
	CS_HEAD = 0,		/* waiting for the request line and headers */
	CS_BODY,		/* waiting for Content-Length bytes */
	CS_BUSY,		/* the handler has the request */
	CS_STREAM,		/* a chunked response is being sent */
	CS_CLOSING,		/* flushing the last reply */
	CS_LINGER,		/* reply sent: reading until the client closes */
	CS_SINK,		/* a streamed body goes to a descriptor */
	CS_SEND,		/* a reply's body comes from a descriptor */
};

struct http_conn {
	TAILQ_ENTRY(http_conn)	 entry;		/* oldest first */
	struct bufferevent	*bev;
	struct event		*timer;
	struct event		*next;		/* serve a pipelined request */
	enum conn_state		 state;
	int			 started;	/* bytes of a request seen */
	int			 trusted;	/* an authenticated request */
	int			 eof;		/* the client stopped sending */
	int			 keepalive_wait; /* idle between requests */
	struct timespec		 t0;		/* the request's start */
	size_t			 lingered;	/* bytes dropped */
	struct peer		*pe;
	struct peer_key		 key;
	int			 keepalive;
	int			 head_only;
	size_t			 clen;
	struct http_request	 req;
	struct evbuffer		*hdrs;		/* extra reply headers */
	void			(*abort)(void *);
	void			*abort_arg;
	void			(*drain)(void *);	/* a stream's */
	void			*drain_arg;

	/* A body streamed to a descriptor, or a reply's from one. */
	int			 streamed;	/* its body is not read */
	int			 expect;	/* 100-continue owed */
	int			 xfd;
	uint64_t		 xleft;		/* bytes still to move */
	uint64_t		 xoff;		/* a reply's: where to read */
	struct event		*xev;		/* xfd writable */
	struct event		*xrev;		/* the socket readable */
	void			(*xdone)(void *, const char *);
	void			*xarg;
	char			 peer[HTTP_PEER_MAX];
	char			 peek[HTTP_PEEK_MAX];
};

static struct {
	struct event_base	*base;
	struct http_limits	 lim;
	int			(*stream)(const struct http_request *);
	uint64_t		 stream_max;
	http_handler_cb		 handler;
	http_error_cb		 error;
	void			*arg;
	SSL_CTX			*ssl;
	struct evconnlistener	*listeners[HTTP_LISTENERS_MAX];
	size_t			 nlisteners;
	TAILQ_HEAD(, http_conn)	 conns;
	unsigned int		 nconns;
	int			 paused;
} http;

static void	conn_read(struct bufferevent *, void *);
static void	conn_write(struct bufferevent *, void *);
static void	conn_event(struct bufferevent *, short, void *);
static void	conn_timeout(evutil_socket_t, short, void *);
static void	conn_next(evutil_socket_t, short, void *);
static void	conn_free(struct http_conn *);
static void	conn_fail(struct http_conn *, int, const char *);
static void	conn_linger(struct http_conn *);
static void	sink_pump(struct http_conn *);
static void	send_pump(struct http_conn *);
static void	xfer_end(struct http_conn *, const char *);

const char *
http_status_text(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 406: return "Not Acceptable";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 411: return "Length Required";
	case 413: return "Content Too Large";
	case 415: return "Unsupported Media Type";
	case 417: return "Expectation Failed";
	case 422: return "Unprocessable Content";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	}
	return "Unknown";
}

static void
http_pause(int pause)
{
	size_t	 i;

	if (pause == http.paused)
		return;
	for (i = 0; i < http.nlisteners; i++) {
		if (pause)
			evconnlistener_disable(http.listeners[i]);
		else
			evconnlistener_enable(http.listeners[i]);
	}
	http.paused = pause;
}

static void
peer_format(const struct sockaddr *sa, char *buf, size_t len)
{
	char	 a[INET6_ADDRSTRLEN];

	switch (sa->sa_family) {
	case AF_INET:
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr,
		    a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, ntohs(((const struct
		    sockaddr_in *)sa)->sin_port));
		break;
	case AF_INET6:
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->
		    sin6_addr, a, sizeof(a));
		snprintf(buf, len, "[%s]:%u", a, ntohs(((const struct
		    sockaddr_in6 *)sa)->sin6_port));
		break;
	default:
		snprintf(buf, len, "unix");
		break;
	}
}

static void
timer_arm(struct http_conn *c, unsigned int seconds)
{
	struct timeval	 tv = { .tv_sec = seconds, .tv_usec = 0 };

	evtimer_add(c->timer, &tv);
}

/* A request starts: its head is due within header_timeout. */
static void
request_start(struct http_conn *c)
{
	unsigned int	 t = http.lim.header_timeout;

	clock_gettime(CLOCK_MONOTONIC, &c->t0);
	if (t == 0 || t > http.lim.request_timeout)
		t = http.lim.request_timeout;
	timer_arm(c, t);
}

/* The head has come: the body is due by request_timeout from the start. */
static void
request_head_done(struct http_conn *c)
{
	struct timespec	 now;
	struct timeval	 tv;
	long long	 ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (long long)http.lim.request_timeout * 1000 -
	    ((long long)(now.tv_sec - c->t0.tv_sec) * 1000 +
	    (now.tv_nsec - c->t0.tv_nsec) / 1000000);
	if (ms < 0)
		ms = 0;
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(c->timer, &tv);
}

/*
 * The connection to close so that a new one fits: one lingering after
 * its last reply, else the oldest unauthenticated one waiting for its
 * request, else the oldest unauthenticated one at all.
 */
static struct http_conn *
conn_victim(void)
{
	struct http_conn	*c, *idle = NULL, *any = NULL;

	TAILQ_FOREACH(c, &http.conns, entry) {
		if (c->state == CS_LINGER)
			return c;
		if (c->trusted)
			continue;
		if (idle == NULL && (c->state == CS_HEAD ||
		    c->state == CS_BODY))
			idle = c;
		if (any == NULL && c->state != CS_CLOSING)
			any = c;
	}
	return idle != NULL ? idle : any;
}

static void
request_clear(struct http_request *r)
{
	if (r->hbuf != NULL) {
		/* the block held the bearer token */
		explicit_bzero(r->hbuf, r->hlen);
		free(r->hbuf);
	}
	free(r->body);
	memset(r, 0, sizeof(*r));
}

static void
http_accept(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct http_conn	*c, *victim;
	struct peer_key		 key;
	struct peer		*p;
	struct timeval		 wtv;
	SSL			*ssl;
	int			 one = 1;

	if (peer_key_of(fd, sa, &key) == -1 ||
	    (p = peer_attach(&key)) == NULL) {
		log_warn("%s: no peer for a connection", __func__);
		evutil_closesocket(fd);
		return;
	}
	if (http.lim.peer_connections > 0 &&
	    peer_conns(p) > http.lim.peer_connections) {
		log_debug("%s: %s holds %u connections: refused", __func__,
		    peer_name(p), http.lim.peer_connections);
		peer_detach(p);
		evutil_closesocket(fd);
		return;
	}
	if (http.nconns >= http.lim.connections) {
		if ((victim = conn_victim()) == NULL) {
			/* Every connection is authenticated: wait. */
			peer_detach(p);
			evutil_closesocket(fd);
			http_pause(1);
			return;
		}
		log_debug("%s: %u connections: closing one of %s", __func__,
		    http.nconns, victim->peer);
		conn_free(victim);
	}
	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    (c->hdrs = evbuffer_new()) == NULL) {
		log_warn("%s: calloc", __func__);
		free(c);
		peer_detach(p);
		evutil_closesocket(fd);
		return;
	}
	c->pe = p;
	c->key = key;
	peer_format(sa, c->peer, sizeof(c->peer));
	/* Replies are written whole: Nagle would only hold back their tail. */
	if (sa->sa_family != AF_UNIX && setsockopt(fd, IPPROTO_TCP,
	    TCP_NODELAY, &one, sizeof(one)) == -1)
		log_warn("%s: TCP_NODELAY", __func__);
	if (http.ssl != NULL) {
		if ((ssl = SSL_new(http.ssl)) == NULL)
			goto fail;
		c->bev = bufferevent_openssl_socket_new(http.base, fd, ssl,
		    BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
		if (c->bev == NULL) {
			SSL_free(ssl);
			goto fail;
		}
		bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
	} else
		c->bev = bufferevent_socket_new(http.base, fd,
		    BEV_OPT_CLOSE_ON_FREE);
	if (c->bev == NULL)
		goto fail;
	http.nconns++;
	TAILQ_INSERT_TAIL(&http.conns, c, entry);
	if ((c->timer = evtimer_new(http.base, conn_timeout, c)) == NULL ||
	    (c->next = event_new(http.base, -1, 0, conn_next, c)) == NULL) {
		log_warnx("%s: cannot set up a connection", __func__);
		conn_free(c);
		return;
	}
	wtv.tv_sec = http.lim.request_timeout;
	wtv.tv_usec = 0;
	bufferevent_set_timeouts(c->bev, NULL, &wtv);
	bufferevent_set_max_single_write(c->bev, HTTP_WRITE_MAX);
	bufferevent_setcb(c->bev, conn_read, conn_write, conn_event, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	request_start(c);
	log_debug("%s: connection from %s", __func__, c->peer);
	return;
 fail:
	log_warnx("%s: cannot set up a connection", __func__);
	evbuffer_free(c->hdrs);
	free(c);
	peer_detach(p);
	evutil_closesocket(fd);
}

static void
http_accept_error(struct evconnlistener *l, void *arg)
{
	int	 e = EVUTIL_SOCKET_ERROR();

	/* EMFILE and friends: back off rather than spin. */
	log_warnx("%s: accept: %s", __func__, evutil_socket_error_to_string(e));
}

int
http_init(struct event_base *base, const struct http_limits *lim,
    http_handler_cb handler, http_error_cb error, void *arg, SSL_CTX *ssl)
{
	memset(&http, 0, sizeof(http));
	TAILQ_INIT(&http.conns);
	http.base = base;
	http.lim = *lim;
	http.handler = handler;
	http.error = error;
	http.arg = arg;
	http.ssl = ssl;
	return 0;
}

/* Takes a bound, listening socket. */
int
http_listen(int fd)
{
	struct evconnlistener	*l;

	if (http.nlisteners >= HTTP_LISTENERS_MAX) {
		errno = ENOSPC;
		return -1;
	}
	l = evconnlistener_new(http.base, http_accept, NULL,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, fd);
	if (l == NULL)
		return -1;
	evconnlistener_set_error_cb(l, http_accept_error);
	http.listeners[http.nlisteners++] = l;
	return 0;
}

void
http_shutdown(void)
{
	size_t	 i;

	for (i = 0; i < http.nlisteners; i++)
		evconnlistener_free(http.listeners[i]);
	http.nlisteners = 0;
}

unsigned int
http_nconns(void)
{
	return http.nconns;
}

static void
conn_free(struct http_conn *c)
{
	void	(*abort)(void *) = c->abort;

	c->abort = NULL;
	c->xdone = NULL;
	if (c->xev != NULL)
		event_free(c->xev);
	if (c->xrev != NULL)
		event_free(c->xrev);
	if (abort != NULL)
		abort(c->abort_arg);
	if (c->bev != NULL)
		bufferevent_free(c->bev);
	if (c->timer != NULL)
		event_free(c->timer);
	if (c->next != NULL)
		event_free(c->next);
	evbuffer_free(c->hdrs);
	request_clear(&c->req);
	peer_detach(c->pe);
	TAILQ_REMOVE(&http.conns, c, entry);
	free(c);
	http.nconns--;
	if (http.nconns < http.lim.connections)
		http_pause(0);
}

const char *
http_peer(const struct http_conn *c)
{
	return c->peer;
}

void
http_set_abort(struct http_conn *c, void (*abort)(void *), void *arg)
{
	c->abort = abort;
	c->abort_arg = arg;
}

/*
 * While a stream is sent, drain is called each time all that was written
 * has gone to the client, so that a producer writes its next piece only
 * then and holds one piece at a time.
 */
void
http_set_drain(struct http_conn *c, void (*drain)(void *), void *arg)
{
	c->drain = drain;
	c->drain_arg = arg;
}

/* Bytes written to the connection and not yet sent. */
size_t
http_pending(const struct http_conn *c)
{
	return evbuffer_get_length(bufferevent_get_output(c->bev));
}

/*
 * Closes the connection now, whatever is still unsent: a stream that
 * cannot be completed ends without its last chunk, so that the client
 * sees a broken answer, never a short one that looks whole.  The abort
 * callback runs.
 */
void
http_abort(struct http_conn *c)
{
	conn_free(c);
}

void
http_set_close(struct http_conn *c)
{
	c->keepalive = 0;
}

/* The connection carried an authenticated request: it is not shed. */
void
http_set_trusted(struct http_conn *c)
{
	c->trusted = 1;
}

const struct peer_key *
http_peer_key(const struct http_conn *c)
{
	return &c->key;
}

void
http_add_header(struct http_conn *c, const char *name, const char *value)
{
	evbuffer_add_printf(c->hdrs, "%s: %s\r\n", name, value);
}

static void
reply_head(struct http_conn *c, int status, const char *ctype)
{
	struct evbuffer	*out = bufferevent_get_output(c->bev);

	evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\n", status,
	    http_status_text(status));
	if (ctype != NULL)
		evbuffer_add_printf(out, "Content-Type: %s\r\n", ctype);
	evbuffer_add_printf(out, "Cache-Control: no-store\r\n"
	    "X-Content-Type-Options: nosniff\r\n"
	    "Connection: %s\r\n", c->keepalive ? "keep-alive" : "close");
	evbuffer_add_buffer(out, c->hdrs);
}

/* The request has been answered: close, or wait for the next one. */
static void
conn_done(struct http_conn *c)
{
	c->abort = NULL;
	request_clear(&c->req);
	c->started = 0;
	c->clen = 0;
	if (!c->keepalive) {
		c->state = CS_CLOSING;
		evtimer_del(c->timer);
		if (!c->eof)
			bufferevent_enable(c->bev, EV_READ);
		if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
			conn_linger(c);
		return;
	}
	c->state = CS_HEAD;
	c->keepalive_wait = 1;
	bufferevent_enable(c->bev, EV_READ);
	timer_arm(c, http.lim.idle_timeout);
	if (evbuffer_get_length(bufferevent_get_input(c->bev)) > 0)
		event_active(c->next, 0, 0);
}

void
http_reply(struct http_conn *c, int status, const char *ctype,
    const void *body, size_t len)
{
	struct evbuffer	*out = bufferevent_get_output(c->bev);

	if (c->state != CS_BUSY) {
		log_warnx("%s: reply in state %d", __func__, c->state);
		return;
	}
	reply_head(c, status, body != NULL ? ctype : NULL);
	evbuffer_add_printf(out, "Content-Length: %zu\r\n\r\n", len);
	if (body != NULL && len > 0 && !c->head_only)
		evbuffer_add(out, body, len);
	conn_done(c);
}

void
http_stream_start(struct http_conn *c, int status, const char *ctype)
{
	if (c->state != CS_BUSY)
		return;
	reply_head(c, status, ctype);
	evbuffer_add_printf(bufferevent_get_output(c->bev),
	    "Transfer-Encoding: chunked\r\n\r\n");
	c->state = CS_STREAM;
}

void
http_stream_write(struct http_conn *c, const void *data, size_t len)
{
	struct evbuffer	*out = bufferevent_get_output(c->bev);

	if (c->state != CS_STREAM || len == 0)
		return;
	evbuffer_add_printf(out, "%zx\r\n", len);
	evbuffer_add(out, data, len);
	evbuffer_add(out, "\r\n", 2);
}

void
http_stream_end(struct http_conn *c)
{
	if (c->state != CS_STREAM)
		return;
	c->drain = NULL;
	evbuffer_add(bufferevent_get_output(c->bev), "0\r\n\r\n", 5);
	conn_done(c);
}

/*
 * Requests whose body the handler streams (http_sink) rather than
 * receives whole, of up to max bytes.
 */
void
http_stream_bodies(int (*pred)(const struct http_request *), uint64_t max)
{
	http.stream = pred;
	http.stream_max = max;
}

uint64_t
http_body_length(const struct http_conn *c)
{
	return c->clen;
}

/* A transfer ends: its callback runs once, with err NULL if it is whole. */
static void
xfer_end(struct http_conn *c, const char *err)
{
	void	(*done)(void *, const char *) = c->xdone;

	c->xdone = NULL;
	if (c->xev != NULL) {
		event_free(c->xev);
		c->xev = NULL;
	}
	if (c->xrev != NULL) {
		event_free(c->xrev);
		c->xrev = NULL;
	}
	c->xfd = -1;
	if (done != NULL)
		done(c->xarg, err);
}

/* The whole body is in the descriptor. */
static void
sink_done(struct http_conn *c)
{
	evtimer_del(c->timer);
	bufferevent_setwatermark(c->bev, EV_READ, 0, 0);
	bufferevent_set_max_single_read(c->bev, HTTP_READ_MAX);
	bufferevent_enable(c->bev, EV_READ);
	c->state = CS_BUSY;
	xfer_end(c, NULL);
}

static void
sink_readable(evutil_socket_t fd, short ev, void *arg)
{
	sink_pump(arg);
}

/*
 * Without TLS the body's bytes need not pass through here at all: once
 * what libevent read is written, they are spliced from the socket into
 * the descriptor (a pipe) in the kernel.  Returns when either would
 * block, with the event armed that says it can go on.
 */
static void
sink_splice(struct http_conn *c)
{
	struct pollfd	 p[2];
	evutil_socket_t	 sock = bufferevent_getfd(c->bev);
	size_t		 want;
	ssize_t		 n;
	int		 i;

	bufferevent_disable(c->bev, EV_READ);
	for (i = 0; i < HTTP_SPLICE_STEPS && c->xleft > 0; i++) {
		want = c->xleft < HTTP_SPLICE_CHUNK ? (size_t)c->xleft :
		    HTTP_SPLICE_CHUNK;
		n = splice(sock, NULL, c->xfd, NULL, want, SPLICE_F_MOVE |
		    SPLICE_F_NONBLOCK);
		if (n > 0) {
			c->xleft -= (uint64_t)n;
			c->clen -= (size_t)n;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN) {
			/* Which of the two would block? */
			p[0].fd = sock;
			p[0].events = POLLIN;
			p[1].fd = c->xfd;
			p[1].events = POLLOUT;
			if (poll(p, 2, 0) == -1 || (p[1].revents & POLLOUT))
				event_add(c->xrev, NULL);
			else
				event_add(c->xev, NULL);
			timer_arm(c, http.lim.request_timeout);
			return;
		}
		c->state = CS_BUSY;
		c->keepalive = 0;
		if (n == 0) {
			log_debug("%s: %s: closed mid-body", __func__,
			    c->peer);
			xfer_end(c, "the client closed mid-body");
			conn_free(c);
			return;
		}
		xfer_end(c, "the store stopped taking the body");
		return;
	}
	timer_arm(c, http.lim.request_timeout);
	if (c->xleft == 0)
		sink_done(c);
	else
		event_add(c->xrev, NULL);
}

static void
sink_writable(evutil_socket_t fd, short ev, void *arg)
{
	sink_pump(arg);
}

/* Moves what has come of the body to the descriptor, as it takes it. */
static void
sink_pump(struct http_conn *c)
{
	struct evbuffer	*in = bufferevent_get_input(c->bev);
	size_t		 avail;
	int		 n;

	while (c->xleft > 0 && (avail = evbuffer_get_length(in)) > 0) {
		if (avail > c->xleft)
			avail = (size_t)c->xleft;
		if (avail > HTTP_SINK_BUF)
			avail = HTTP_SINK_BUF;
		if ((n = evbuffer_write_atmost(in, c->xfd,
		    (ev_ssize_t)avail)) == -1) {
			if (errno == EAGAIN || errno == EINTR) {
				event_add(c->xev, NULL);
				return;
			}
			c->state = CS_BUSY;
			c->keepalive = 0;
			xfer_end(c, "the store stopped taking the body");
			return;
		}
		c->xleft -= (uint64_t)n;
		c->clen -= (size_t)n;
	}
	if (c->xleft > 0 && c->xrev != NULL) {
		sink_splice(c);
		return;
	}
	timer_arm(c, http.lim.request_timeout);
	if (c->xleft == 0)
		sink_done(c);
}

/*
 * Streams the body of a request (see http_stream_bodies) into fd, which
 * stays the caller's: done runs when it is all written, or with why not.
 * A body stalled for request_timeout ends the connection.
 */
int
http_sink(struct http_conn *c, int fd, void (*done)(void *, const char *),
    void *arg)
{
	if (c->state != CS_BUSY || !c->streamed || c->xdone != NULL)
		return -1;
	if ((c->xev = event_new(http.base, fd, EV_WRITE, sink_writable,
	    c)) == NULL)
		return -1;
	/* Without TLS the socket's bytes are spliced (sink_splice). */
	if (http.ssl == NULL && (c->xrev = event_new(http.base,
	    bufferevent_getfd(c->bev), EV_READ, sink_readable, c)) == NULL) {
		event_free(c->xev);
		c->xev = NULL;
		return -1;
	}
	c->xfd = fd;
	c->xleft = c->clen;
	c->xdone = done;
	c->xarg = arg;
	c->state = CS_SINK;
	/* Fewer, larger reads: the body is all there is to read now. */
	bufferevent_set_max_single_read(c->bev, HTTP_SINK_BUF);
	if (c->expect) {
		c->expect = 0;
		evbuffer_add_printf(bufferevent_get_output(c->bev),
		    "HTTP/1.1 100 Continue\r\n\r\n");
	}
	bufferevent_enable(c->bev, EV_READ);
	sink_pump(c);
	return 0;
}

/* Stops a sink: the body's rest is not read, and the connection closes. */
void
http_sink_cancel(struct http_conn *c)
{
	if (c->state == CS_SINK) {
		c->xdone = NULL;
		xfer_end(c, NULL);
		c->state = CS_BUSY;
	}
	if (c->streamed && c->clen > 0)
		c->keepalive = 0;
}

/* Refills the reply from the descriptor as the socket drains. */
static void
send_pump(struct http_conn *c)
{
	struct evbuffer		*out = bufferevent_get_output(c->bev);
	struct evbuffer_iovec	 v;
	size_t			 want;
	ssize_t			 n;

	while (c->xleft > 0 && evbuffer_get_length(out) < HTTP_SEND_BUF) {
		want = c->xleft < HTTP_SEND_CHUNK ? (size_t)c->xleft :
		    HTTP_SEND_CHUNK;
		if (evbuffer_reserve_space(out, (ev_ssize_t)want, &v, 1) < 1) {
			c->keepalive = 0;
			xfer_end(c, "out of memory");
			conn_free(c);
			return;
		}
		if ((n = pread(c->xfd, v.iov_base, want, (off_t)c->xoff)) <=
		    0) {
			if (n == -1 && errno == EINTR)
				continue;
			/* The answer is cut short: the client sees it. */
			xfer_end(c, n == 0 ? "the image is shorter than it "
			    "was" : "cannot read the image");
			conn_free(c);
			return;
		}
		v.iov_len = (size_t)n;
		evbuffer_commit_space(out, &v, 1);
		c->xleft -= (uint64_t)n;
		c->xoff += (uint64_t)n;
	}
	if (c->xleft == 0 && evbuffer_get_length(out) == 0) {
		bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
		c->state = CS_BUSY;
		xfer_end(c, NULL);
		conn_done(c);
	}
}

/*
 * Answers with size bytes read from fd (the caller's, until done runs),
 * sent as the connection drains: never more than HTTP_SEND_BUF held.
 */
int
http_send_fd(struct http_conn *c, int status, const char *ctype, int fd,
    uint64_t size, void (*done)(void *, const char *), void *arg)
{
	if (c->state != CS_BUSY || c->xdone != NULL)
		return -1;
	reply_head(c, status, ctype);
	evbuffer_add_printf(bufferevent_get_output(c->bev),
	    "Content-Length: %llu\r\n\r\n", (unsigned long long)size);
	c->xfd = fd;
	c->xoff = 0;
	c->xleft = c->head_only ? 0 : size;
	c->xdone = done;
	c->xarg = arg;
	c->state = CS_SEND;
	bufferevent_setwatermark(c->bev, EV_WRITE, HTTP_SEND_BUF / 2, 0);
	send_pump(c);
	return 0;
}

/*
 * The path of a request whose head could not be parsed, read from the
 * start of its request line, so that the error can take the route's shape.
 */
static const char *
conn_peek_path(struct http_conn *c)
{
	struct evbuffer	*in = bufferevent_get_input(c->bev);
	const char	*line, *sp;
	size_t		 len, n;

	if (c->req.hbuf != NULL) {
		line = c->req.hbuf;
		len = c->req.hlen;
	} else {
		len = evbuffer_get_length(in);
		if (len > sizeof(c->peek) - 1)
			len = sizeof(c->peek) - 1;
		if ((line = (const char *)evbuffer_pullup(in,
		    (ssize_t)len)) == NULL)
			return NULL;
	}
	if ((sp = memchr(line, ' ', len)) == NULL)
		return NULL;
	sp++;
	len -= (size_t)(sp - line);
	for (n = 0; n < len && n < sizeof(c->peek) - 1; n++) {
		if (sp[n] == ' ' || sp[n] == '?' || sp[n] == '\r' ||
		    sp[n] == '\0')
			break;
		c->peek[n] = sp[n];
	}
	c->peek[n] = '\0';
	return c->peek[0] == '/' ? c->peek : NULL;
}

/* The server refuses the request itself; the connection closes after. */
static void
conn_fail(struct http_conn *c, int status, const char *msg)
{
	const char	*path = c->req.path;

	log_debug("%s: %s: %d %s", __func__, c->peer, status, msg);
	if (path == NULL)
		path = conn_peek_path(c);
	c->keepalive = 0;
	c->state = CS_BUSY;
	evbuffer_drain(c->hdrs, evbuffer_get_length(c->hdrs));
	evtimer_del(c->timer);
	http.error(c, path, status, msg, http.arg);
}

/* Checks the framing and applies it to the connection. */
static int
check_framing(struct http_conn *c, const char **msg)
{
	struct http_framing	 f;
	int			 status;

	c->streamed = http.stream != NULL && http.stream(&c->req);
	if ((status = http_parse_framing(&c->req, c->streamed ?
	    (size_t)http.stream_max : http.lim.body, &f, msg)) != 0)
		return status;
	c->clen = f.clen;
	c->keepalive = f.keepalive;
	c->head_only = f.head_only;
	/* A streamed body is asked for only once it has somewhere to go. */
	if (f.expect_continue && c->clen > 0 && c->streamed)
		c->expect = 1;
	else if (f.expect_continue && c->clen > 0)
		evbuffer_add_printf(bufferevent_get_output(c->bev),
		    "HTTP/1.1 100 Continue\r\n\r\n");
	return 0;
}

static void
conn_dispatch(struct http_conn *c)
{
	evtimer_del(c->timer);
	c->state = CS_BUSY;
	http.handler(c, &c->req, http.arg);
}

static void
conn_process(struct http_conn *c)
{
	struct evbuffer		*in = bufferevent_get_input(c->bev);
	struct evbuffer_ptr	 p;
	const char		*msg = NULL;
	size_t			 avail;
	int			 status;

	if (c->state == CS_HEAD) {
		avail = evbuffer_get_length(in);
		if (avail == 0)
			return;
		if (!c->started) {
			c->started = 1;
			if (c->keepalive_wait)
				request_start(c);
			c->keepalive_wait = 0;
		}
		p = evbuffer_search(in, "\r\n\r\n", 4, NULL);
		if (p.pos == -1) {
			if (avail > http.lim.header)
				conn_fail(c, 431, "request head too large");
			return;
		}
		if ((size_t)p.pos + 4 > http.lim.header) {
			conn_fail(c, 431, "request head too large");
			return;
		}
		c->req.hlen = (size_t)p.pos;
		if ((c->req.hbuf = malloc(c->req.hlen + 1)) == NULL) {
			conn_fail(c, 503, "out of memory");
			return;
		}
		evbuffer_remove(in, c->req.hbuf, c->req.hlen);
		evbuffer_drain(in, 4);
		c->req.hbuf[c->req.hlen] = '\0';
		if ((status = http_parse_head(&c->req, &msg)) != 0 ||
		    (status = check_framing(c, &msg)) != 0) {
			conn_fail(c, status, msg);
			return;
		}
		if (c->streamed) {
			/* The handler takes the body (http_sink), or not;
			 * meanwhile only HTTP_SINK_BUF of it is read. */
			bufferevent_setwatermark(c->bev, EV_READ, 0,
			    HTTP_SINK_BUF);
			conn_dispatch(c);
			return;
		}
		c->state = CS_BODY;
		request_head_done(c);
	}
	if (c->state == CS_BODY) {
		if (evbuffer_get_length(in) < c->clen)
			return;
		if ((c->req.body = malloc(c->clen + 1)) == NULL) {
			conn_fail(c, 503, "out of memory");
			return;
		}
		evbuffer_remove(in, c->req.body, c->clen);
		c->req.body[c->clen] = '\0';
		c->req.bodylen = c->clen;
		conn_dispatch(c);
	}
}

static void
conn_read(struct bufferevent *bev, void *arg)
{
	struct http_conn	*c = arg;
	struct evbuffer		*in = bufferevent_get_input(bev);
	size_t			 avail;

	if (c->state == CS_HEAD || c->state == CS_BODY) {
		conn_process(c);
		return;
	}
	if (c->state == CS_SINK) {
		sink_pump(c);
		return;
	}
	if (c->state == CS_CLOSING || c->state == CS_LINGER) {
		avail = evbuffer_get_length(in);
		evbuffer_drain(in, avail);
		c->lingered += avail;
		if (c->lingered > LINGER_BYTES) {
			if (c->state == CS_LINGER)
				conn_free(c);
			else
				bufferevent_disable(bev, EV_READ);
		}
		return;
	}
	/* Busy: keep what was pipelined, within bounds. */
	avail = evbuffer_get_length(bufferevent_get_input(bev));
	if (avail > http.lim.header + http.lim.body)
		bufferevent_disable(bev, EV_READ);
}

static void
conn_next(evutil_socket_t fd, short ev, void *arg)
{
	struct http_conn	*c = arg;

	if (c->state == CS_HEAD)
		conn_process(c);
}

static void
conn_write(struct bufferevent *bev, void *arg)
{
	struct http_conn	*c = arg;

	if (c->state == CS_SEND) {
		send_pump(c);
		return;
	}
	if (c->state == CS_STREAM && c->drain != NULL &&
	    evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
		c->drain(c->drain_arg);
		return;
	}
	if (c->state == CS_CLOSING &&
	    evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		conn_linger(c);
}

/*
 * The last reply is written: send FIN, and read what the client still
 * sends until it closes, for LINGER_SECS and LINGER_BYTES at most.
 */
static void
conn_linger(struct http_conn *c)
{
	evutil_socket_t	 fd = bufferevent_getfd(c->bev);

	if (c->eof || c->lingered > LINGER_BYTES || fd == -1 ||
	    shutdown(fd, SHUT_WR) == -1) {
		conn_free(c);
		return;
	}
	c->state = CS_LINGER;
	bufferevent_disable(c->bev, EV_WRITE);
	bufferevent_enable(c->bev, EV_READ);
	timer_arm(c, LINGER_SECS);
}

static void
conn_event(struct bufferevent *bev, short what, void *arg)
{
	struct http_conn	*c = arg;

	/* The TLS handshake completed. */
	if (what == BEV_EVENT_CONNECTED)
		return;
	if (what & BEV_EVENT_EOF) {
		/* A half-closed client may still wait for our answer. */
		if ((c->state == CS_BUSY || c->state == CS_STREAM ||
		    c->state == CS_CLOSING) && !(what & BEV_EVENT_ERROR) &&
		    !(c->streamed && c->xleft > 0)) {
			c->keepalive = 0;
			c->eof = 1;
			bufferevent_disable(bev, EV_READ);
			return;
		}
		if (c->state == CS_BODY || (c->state == CS_HEAD &&
		    c->started))
			log_debug("%s: %s: closed mid-request", __func__,
			    c->peer);
	} else if (what & BEV_EVENT_TIMEOUT)
		log_debug("%s: %s: write timeout", __func__, c->peer);
	else if (what & BEV_EVENT_ERROR)
		log_debug("%s: %s: connection error", __func__, c->peer);
	conn_free(c);
}

static void
conn_timeout(evutil_socket_t fd, short ev, void *arg)
{
	struct http_conn	*c = arg;

	if (c->state == CS_LINGER) {
		conn_free(c);
		return;
	}
	if (c->state == CS_SINK) {
		log_debug("%s: %s: the body stalled", __func__, c->peer);
		xfer_end(c, "the request body stalled");
		conn_free(c);
		return;
	}
	if ((c->state == CS_HEAD && c->started) || c->state == CS_BODY) {
		log_debug("%s: %s: request not received in time", __func__,
		    c->peer);
		conn_fail(c, 408, c->state == CS_HEAD ? "request head not "
		    "received in time" : "request not received in time");
		return;
	}
	if (c->state == CS_HEAD) {
		conn_free(c);
		return;
	}
}
