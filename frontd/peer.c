/*
 * The peer table of mcvm-frontd: see peer.h.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peer.h"

#define PEER_BUCKETS	1024

struct peer {
	TAILQ_ENTRY(peer)	 idle;		/* when conns == 0 */
	struct peer		*hnext;
	struct peer_key		 key;
	unsigned int		 conns;
	double			 tokens;	/* unvouched requests left */
	struct timespec		 last;		/* of the budget */
	int			 charged;	/* the budget was ever used */
	char			 name[PEER_NAME_MAX];
};

static struct peer		*peer_hash[PEER_BUCKETS];
static TAILQ_HEAD(, peer)	 peer_idle = TAILQ_HEAD_INITIALIZER(peer_idle);
static size_t			 npeers, nidle;

int
peer_key_of(int fd, const struct sockaddr *sa, struct peer_key *k)
{
	const struct sockaddr_in6	*sin6;
	struct ucred			 cred;
	socklen_t			 len = sizeof(cred);
	static const uint8_t		 mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0,
	    0, 0, 0xff, 0xff };

	memset(k, 0, sizeof(*k));
	switch (sa->sa_family) {
	case AF_INET:
		k->family = AF_INET;
		memcpy(k->addr, &((const struct sockaddr_in *)sa)->sin_addr,
		    4);
		return 0;
	case AF_INET6:
		sin6 = (const struct sockaddr_in6 *)sa;
		if (memcmp(sin6->sin6_addr.s6_addr, mapped,
		    sizeof(mapped)) == 0) {
			k->family = AF_INET;
			memcpy(k->addr, sin6->sin6_addr.s6_addr + 12, 4);
		} else {
			k->family = AF_INET6;
			memcpy(k->addr, sin6->sin6_addr.s6_addr, 8);
		}
		return 0;
	case AF_UNIX:
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred,
		    &len) == -1)
			return -1;
		k->family = AF_UNIX;
		memcpy(k->addr, &cred.uid, sizeof(cred.uid));
		return 0;
	}
	return -1;
}

static size_t
key_bucket(const struct peer_key *k)
{
	uint32_t	 h = 2166136261u ^ (uint32_t)k->family;
	size_t		 i;

	for (i = 0; i < sizeof(k->addr); i++)
		h = (h ^ k->addr[i]) * 16777619u;
	return h % PEER_BUCKETS;
}

static void
key_name(const struct peer_key *k, char *buf, size_t len)
{
	char	 a[INET6_ADDRSTRLEN];
	uint8_t	 full[16];
	uid_t	 uid;

	switch (k->family) {
	case AF_INET:
		inet_ntop(AF_INET, k->addr, a, sizeof(a));
		snprintf(buf, len, "%s", a);
		break;
	case AF_INET6:
		memset(full, 0, sizeof(full));
		memcpy(full, k->addr, 8);
		inet_ntop(AF_INET6, full, a, sizeof(a));
		snprintf(buf, len, "%s/64", a);
		break;
	default:
		memcpy(&uid, k->addr, sizeof(uid));
		snprintf(buf, len, "uid %u", (unsigned int)uid);
		break;
	}
}

static struct peer **
peer_slot(const struct peer_key *k)
{
	struct peer	**pp;

	for (pp = &peer_hash[key_bucket(k)]; *pp != NULL;
	    pp = &(*pp)->hnext)
		if ((*pp)->key.family == k->family &&
		    memcmp((*pp)->key.addr, k->addr, sizeof(k->addr)) == 0)
			break;
	return pp;
}

static void
peer_free(struct peer *p)
{
	struct peer	**pp = peer_slot(&p->key);

	if (*pp == p)
		*pp = p->hnext;
	TAILQ_REMOVE(&peer_idle, p, idle);
	nidle--;
	npeers--;
	free(p);
}

/* The peer of a key, created idle if need be; NULL without memory. */
static struct peer *
peer_get(const struct peer_key *k)
{
	struct peer	**pp = peer_slot(k), *p;

	if ((p = *pp) != NULL)
		return p;
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	p->key = *k;
	key_name(k, p->name, sizeof(p->name));
	*pp = p;
	TAILQ_INSERT_TAIL(&peer_idle, p, idle);
	nidle++;
	npeers++;
	while (nidle > PEER_IDLE_MAX)
		peer_free(TAILQ_FIRST(&peer_idle));
	return p;
}

/* A peer used again goes to the end of the idle list. */
static void
peer_seen(struct peer *p)
{
	if (p->conns == 0) {
		TAILQ_REMOVE(&peer_idle, p, idle);
		TAILQ_INSERT_TAIL(&peer_idle, p, idle);
	}
}

struct peer *
peer_attach(const struct peer_key *k)
{
	struct peer	*p;

	/* Created last, it is not the one an overfull idle list drops. */
	if ((p = peer_get(k)) == NULL)
		return NULL;
	if (p->conns++ == 0) {
		TAILQ_REMOVE(&peer_idle, p, idle);
		nidle--;
	}
	return p;
}

void
peer_detach(struct peer *p)
{
	if (p == NULL || p->conns == 0)
		return;
	if (--p->conns > 0)
		return;
	TAILQ_INSERT_TAIL(&peer_idle, p, idle);
	nidle++;
	/* Nothing to remember: forget it now. */
	if (!p->charged)
		peer_free(p);
	else
		while (nidle > PEER_IDLE_MAX)
			peer_free(TAILQ_FIRST(&peer_idle));
}

unsigned int
peer_conns(const struct peer *p)
{
	return p->conns;
}

const char *
peer_name(const struct peer *p)
{
	return p->name;
}

static double
ts_diff(const struct timespec *a, const struct timespec *b)
{
	return (double)(a->tv_sec - b->tv_sec) +
	    (double)(a->tv_nsec - b->tv_nsec) / 1e9;
}

static void
peer_refill(struct peer *p, uint32_t rate, uint32_t burst,
    const struct timespec *now)
{
	double	 dt;

	if (!p->charged) {
		p->charged = 1;
		p->tokens = burst;
		p->last = *now;
	}
	if ((dt = ts_diff(now, &p->last)) > 0) {
		p->tokens += dt * rate;
		if (p->tokens > burst)
			p->tokens = burst;
	}
	p->last = *now;
}

int
peer_charge(const struct peer_key *k, uint32_t rate, uint32_t burst,
    const struct timespec *now, unsigned int *retry)
{
	struct peer	*p;
	double		 wait;

	*retry = 1;
	if (rate == 0)
		return 1;
	/* Without memory for the table, refuse: this path is the cheap one. */
	if ((p = peer_get(k)) == NULL)
		return 0;
	peer_seen(p);
	peer_refill(p, rate, burst, now);
	if (p->tokens >= 1.0) {
		p->tokens -= 1.0;
		return 1;
	}
	wait = (1.0 - p->tokens) / rate;
	*retry = wait < 1.0 ? 1 : (unsigned int)wait + 1;
	return 0;
}

void
peer_refund(const struct peer_key *k, uint32_t burst)
{
	struct peer	*p = *peer_slot(k);

	if (p == NULL || !p->charged)
		return;
	if ((p->tokens += 1.0) > burst)
		p->tokens = burst;
}

size_t
peer_count(void)
{
	return npeers;
}
