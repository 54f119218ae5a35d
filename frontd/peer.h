/*
 * The peers of mcvm-frontd: who holds connections and who fails to
 * authenticate.  A peer is an IPv4 address, an IPv6 /64 (one host's
 * share of a network), or a uid on a unix socket.  The table is bounded:
 * peers holding connections stay (there are at most as many as
 * connections), and at most PEER_IDLE_MAX others are remembered, the
 * least recently seen forgotten first.
 */
#ifndef MCVM_FRONTD_PEER_H
#define MCVM_FRONTD_PEER_H

#include <sys/types.h>
#include <sys/socket.h>

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define PEER_IDLE_MAX		4096	/* peers without connections */
#define PEER_NAME_MAX		64

struct peer;

struct peer_key {
	int		 family;	/* AF_INET, AF_INET6 or AF_UNIX */
	uint8_t		 addr[16];	/* address, /64 prefix, or uid */
};

/* The key of a connected socket's peer; -1 if it has none. */
int	 peer_key_of(int, const struct sockaddr *, struct peer_key *);

/* Finds or creates the peer of a key and counts one connection of it. */
struct peer *peer_attach(const struct peer_key *);
void	 peer_detach(struct peer *);
unsigned int peer_conns(const struct peer *);
const char *peer_name(const struct peer *);

/*
 * The budget of requests a peer may send that are not known to carry a
 * good token: rate a second, burst at most.  peer_charge takes one
 * (returns 0 when none is left, with *retry the seconds until one is);
 * peer_refund gives one back when the token proved good.  Both find the
 * peer by its key, since a request may outlive its connection.
 */
int	 peer_charge(const struct peer_key *, uint32_t, uint32_t,
	    const struct timespec *, unsigned int *);
void	 peer_refund(const struct peer_key *, uint32_t);

size_t	 peer_count(void);

#endif
