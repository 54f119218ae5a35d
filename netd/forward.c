/*
 * Port forwards.  netd listens on the host end (127.0.0.1, or each
 * `forward bind` address of the config) in the netns it runs in, and
 * relays each connection to the guest's address over the VM's veth.  It
 * copies bytes and parses none.  Each forward holds at most
 * FWD_CONNS_MAX connections, and each direction at most FWD_BUF_MAX bytes
 * in flight: past that netd stops reading from the sender.
 */
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/event_compat.h>
#include <event2/event_struct.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "netd.h"
#include "forward.h"

#define FWD_CONNS_MAX	32		/* per forward */
#define FWD_BUF_MAX	(64 * 1024)	/* per direction */
#define FWD_BACKLOG	16

struct fwd;

struct fwd_conn {
	TAILQ_ENTRY(fwd_conn)	 entry;
	struct fwd		*f;
	struct bufferevent	*side[2];	/* 0: client, 1: guest */
	int			 closing;
};

struct fwd {
	TAILQ_ENTRY(fwd)	 entry;
	uint32_t		 slot;
	uint16_t		 host;
	uint16_t		 guest;
	struct sockaddr_in	 dst;
	int			 lfd[CONF_MAX_BIND];
	struct event		 lev[CONF_MAX_BIND];
	size_t			 nl;
	TAILQ_HEAD(, fwd_conn)	 conns;
	int			 nconns;
};

static TAILQ_HEAD(, fwd)	 fwds = TAILQ_HEAD_INITIALIZER(fwds);
static struct event_base	*fwd_base;
static const struct mcvm_config	*fwd_conf;
static struct port_alloc	 ports;

void
netd_fwd_init(struct event_base *base, const struct mcvm_config *conf)
{
	fwd_base = base;
	fwd_conf = conf;
	port_alloc_init(&ports);
}

static void
conn_free(struct fwd_conn *c)
{
	TAILQ_REMOVE(&c->f->conns, c, entry);
	c->f->nconns--;
	if (c->side[0] != NULL)
		bufferevent_free(c->side[0]);
	if (c->side[1] != NULL)
		bufferevent_free(c->side[1]);
	free(c);
}

static int
side_of(struct fwd_conn *c, struct bufferevent *bev)
{
	return bev == c->side[0] ? 0 : 1;
}

/* Moves what one side sent to the other, within FWD_BUF_MAX. */
static void
conn_read(struct bufferevent *bev, void *arg)
{
	struct fwd_conn	*c = arg;
	struct bufferevent *peer = c->side[!side_of(c, bev)];
	struct evbuffer	*out = bufferevent_get_output(peer);
	size_t		 room;

	if (c->closing)
		return;
	if (evbuffer_get_length(out) >= FWD_BUF_MAX) {
		bufferevent_disable(bev, EV_READ);
		return;
	}
	room = FWD_BUF_MAX - evbuffer_get_length(out);
	(void)evbuffer_remove_buffer(bufferevent_get_input(bev), out, room);
	if (evbuffer_get_length(bufferevent_get_input(bev)) > 0)
		bufferevent_disable(bev, EV_READ);
}

/* A side drained its output: the other may send again. */
static void
conn_write(struct bufferevent *bev, void *arg)
{
	struct fwd_conn	*c = arg;
	struct bufferevent *peer = c->side[!side_of(c, bev)];

	if (c->closing) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			conn_free(c);
		return;
	}
	conn_read(peer, c);
	if (evbuffer_get_length(bufferevent_get_input(peer)) == 0)
		bufferevent_enable(peer, EV_READ);
}

static void
conn_event(struct bufferevent *bev, short what, void *arg)
{
	struct fwd_conn	*c = arg;
	int		 s = side_of(c, bev);
	struct bufferevent *peer = c->side[!s];

	if (what & BEV_EVENT_CONNECTED) {
		bufferevent_enable(c->side[0], EV_READ);
		return;
	}
	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	if (c->closing || peer == NULL) {
		conn_free(c);
		return;
	}
	/* Deliver what the closed side sent, then close both. */
	if (what & BEV_EVENT_EOF)
		(void)evbuffer_add_buffer(bufferevent_get_output(peer),
		    bufferevent_get_input(bev));
	bufferevent_free(bev);
	c->side[s] = NULL;
	if (evbuffer_get_length(bufferevent_get_output(peer)) == 0) {
		conn_free(c);
		return;
	}
	c->closing = 1;
	bufferevent_disable(peer, EV_READ);
}

static void
fwd_accept(int lfd, short event, void *arg)
{
	struct fwd	*f = arg;
	struct fwd_conn	*c;
	int		 cfd, gfd;

	if ((cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK |
	    SOCK_CLOEXEC)) == -1) {
		if (errno != EAGAIN && errno != EINTR &&
		    errno != ECONNABORTED)
			log_warn("forward %u: accept", f->host);
		return;
	}
	if (f->nconns >= FWD_CONNS_MAX) {
		log_warnx("forward %u: %d connections, refusing", f->host,
		    FWD_CONNS_MAX);
		close(cfd);
		return;
	}
	if ((gfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) == -1) {
		log_warn("forward %u: socket", f->host);
		close(cfd);
		return;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    (c->side[0] = bufferevent_socket_new(fwd_base, cfd,
	    BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		log_warn("forward %u", f->host);
		free(c);
		close(cfd);
		close(gfd);
		return;
	}
	if ((c->side[1] = bufferevent_socket_new(fwd_base, gfd,
	    BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		bufferevent_free(c->side[0]);
		free(c);
		close(gfd);
		return;
	}
	c->f = f;
	TAILQ_INSERT_TAIL(&f->conns, c, entry);
	f->nconns++;
	bufferevent_setcb(c->side[0], conn_read, conn_write, conn_event, c);
	bufferevent_setcb(c->side[1], conn_read, conn_write, conn_event, c);
	bufferevent_setwatermark(c->side[0], EV_READ, 0, FWD_BUF_MAX);
	bufferevent_setwatermark(c->side[1], EV_READ, 0, FWD_BUF_MAX);
	bufferevent_enable(c->side[1], EV_READ);
	if (bufferevent_socket_connect(c->side[1],
	    (struct sockaddr *)&f->dst, sizeof(f->dst)) == -1) {
		log_warnx("forward %u: connect to the guest failed", f->host);
		conn_free(c);
	}
}

static void
fwd_unlisten(struct fwd *f)
{
	size_t	 i;

	for (i = 0; i < f->nl; i++) {
		event_del(&f->lev[i]);
		close(f->lfd[i]);
	}
	f->nl = 0;
}

/* Listens on every bind address; 0 or an errno, nothing left open. */
static int
fwd_listen(struct fwd *f, uint16_t port)
{
	struct sockaddr_storage	 ss;
	const struct cidr	 loopback = { AF_INET, { 127, 0, 0, 1 }, 32 };
	const struct cidr	*b;
	size_t			 i, n;
	socklen_t		 sl;
	int			 fd, on = 1, e;

	n = fwd_conf->nforward_bind > 0 ? fwd_conf->nforward_bind : 1;
	for (i = 0; i < n; i++) {
		b = fwd_conf->nforward_bind > 0 ? &fwd_conf->forward_bind[i] :
		    &loopback;
		memset(&ss, 0, sizeof(ss));
		if (b->family == AF_INET) {
			struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

			sin->sin_family = AF_INET;
			sin->sin_port = htons(port);
			memcpy(&sin->sin_addr, b->addr, 4);
			sl = sizeof(*sin);
		} else {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

			s6->sin6_family = AF_INET6;
			s6->sin6_port = htons(port);
			memcpy(&s6->sin6_addr, b->addr, 16);
			sl = sizeof(*s6);
		}
		if ((fd = socket(b->family, SOCK_STREAM | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, 0)) == -1)
			goto fail;
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on,
		    sizeof(on));
		if (b->family == AF_INET6)
			(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on,
			    sizeof(on));
		if (bind(fd, (struct sockaddr *)&ss, sl) == -1 ||
		    listen(fd, FWD_BACKLOG) == -1) {
			e = errno;
			close(fd);
			errno = e;
			goto fail;
		}
		f->lfd[f->nl] = fd;
		event_set(&f->lev[f->nl], fd, EV_READ | EV_PERSIST,
		    fwd_accept, f);
		event_base_set(fwd_base, &f->lev[f->nl]);
		event_add(&f->lev[f->nl], NULL);
		f->nl++;
	}
	return 0;
 fail:
	e = errno;
	fwd_unlisten(f);
	return e;
}

/*
 * Opens a forward of a slot to guest:guest_port; host 0 picks an auto
 * port.  Returns 0 with *chosen set, or an errno with err explaining.
 */
int
netd_fwd_open(uint32_t slot, uint32_t guest_ip, uint16_t host,
    uint16_t guest, uint16_t *chosen, char *err, size_t errlen)
{
	struct fwd	*f;
	uint16_t	 p;
	unsigned int	 tries;
	int		 e = 0;

	if ((f = calloc(1, sizeof(*f))) == NULL) {
		(void)snprintf(err, errlen, "out of memory");
		return ENOMEM;
	}
	TAILQ_INIT(&f->conns);
	f->slot = slot;
	f->guest = guest;
	f->dst.sin_family = AF_INET;
	f->dst.sin_port = htons(guest);
	f->dst.sin_addr.s_addr = htonl(guest_ip);
	if (host != 0) {
		if (port_alloc_used(&ports, host) ||
		    (e = fwd_listen(f, host)) != 0) {
			if (e == 0 || e == EADDRINUSE) {
				(void)snprintf(err, errlen, "host port %u "
				    "is in use: forward another one, or "
				    "auto:%u for a free one", host, guest);
				e = EADDRINUSE;
			} else
				(void)snprintf(err, errlen, "port %u: %s",
				    host, strerror(e));
			free(f);
			return e;
		}
		p = host;
	} else {
		for (tries = 0;; tries++) {
			if (tries == NETD_AUTO_PORT_LAST -
			    NETD_AUTO_PORT_FIRST + 1 ||
			    port_alloc_next(&ports, &p) == -1) {
				(void)snprintf(err, errlen, "no free host "
				    "port in %u-%u: forward an explicit one, "
				    "or destroy VMs whose forwards are done",
				    NETD_AUTO_PORT_FIRST, NETD_AUTO_PORT_LAST);
				free(f);
				return EADDRINUSE;
			}
			if ((e = fwd_listen(f, p)) == 0)
				break;
			if (e != EADDRINUSE) {
				(void)snprintf(err, errlen, "port %u: %s", p,
				    strerror(e));
				free(f);
				return e;
			}
		}
	}
	(void)port_alloc_take(&ports, p);
	f->host = p;
	*chosen = p;
	TAILQ_INSERT_TAIL(&fwds, f, entry);
	return 0;
}

void
netd_fwd_close_slot(uint32_t slot)
{
	struct fwd	*f, *t;

	for (f = TAILQ_FIRST(&fwds); f != NULL; f = t) {
		t = TAILQ_NEXT(f, entry);
		if (f->slot != slot)
			continue;
		TAILQ_REMOVE(&fwds, f, entry);
		fwd_unlisten(f);
		while (!TAILQ_EMPTY(&f->conns))
			conn_free(TAILQ_FIRST(&f->conns));
		port_alloc_release(&ports, f->host);
		free(f);
	}
}
