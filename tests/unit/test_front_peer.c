/*
 * frontd's peer table and authentication cache: a peer's budget of
 * unauthenticated requests runs out and refills, a refund gives one
 * back; a refused token is remembered for a few seconds, an accepted
 * one only noted, and the table stays bounded.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "frontd.h"

Test(front_peer, budget_runs_out_and_refills)
{
	struct peer_key	 k = { .family = AF_INET, .addr = { 192, 0, 2, 1 } };
	struct timespec	 now = { 100, 0 };
	unsigned int	 retry;
	int		 i;

	for (i = 0; i < 5; i++)
		cr_assert(peer_charge(&k, 2, 5, &now, &retry));
	cr_assert_not(peer_charge(&k, 2, 5, &now, &retry));
	cr_assert_eq(retry, 1);
	peer_refund(&k, 5);
	cr_assert(peer_charge(&k, 2, 5, &now, &retry), "refunded");
	cr_assert_not(peer_charge(&k, 2, 5, &now, &retry));
	now.tv_sec += 1;		/* two more at 2/s */
	cr_assert(peer_charge(&k, 2, 5, &now, &retry));
	cr_assert(peer_charge(&k, 2, 5, &now, &retry));
	cr_assert_not(peer_charge(&k, 2, 5, &now, &retry));
	/* Another peer has its own budget. */
	k.addr[3] = 2;
	cr_assert(peer_charge(&k, 2, 5, &now, &retry));
}

Test(front_peer, connections_counted_per_peer)
{
	struct peer_key	 a = { .family = AF_INET6, .addr = { 0x20, 0x01,
	    0x0d, 0xb8 } };
	struct peer	*p, *q;

	p = peer_attach(&a);
	q = peer_attach(&a);
	cr_assert_eq(p, q);
	cr_assert_eq(peer_conns(p), 2);
	cr_assert_str_eq(peer_name(p), "2001:db8::/64");
	peer_detach(q);
	cr_assert_eq(peer_conns(p), 1);
	peer_detach(p);
}

Test(front_authcache, refusals_remembered_briefly)
{
	uint8_t	 h[TOKEN_HASH_LEN], g[TOKEN_HASH_LEN];

	authcache_clear();
	memset(h, 0xaa, sizeof(h));
	memset(g, 0xbb, sizeof(g));
	cr_assert_eq(authcache_get(h, 10), -1);
	authcache_put(h, AUTH_REVOKED, 10);
	authcache_put(g, AUTH_OK, 10);
	cr_assert_eq(authcache_get(h, 10 + AUTH_NEG_TTL - 1), AUTH_REVOKED);
	cr_assert_eq(authcache_get(h, 10 + AUTH_NEG_TTL), -1, "expired");
	cr_assert_eq(authcache_get(g, 20), AUTH_OK);
	/* A later refusal replaces an acceptance. */
	authcache_put(g, AUTH_REVOKED, 20);
	cr_assert_eq(authcache_get(g, 20), AUTH_REVOKED);
	authcache_put(g, AUTH_UNAVAILABLE, 20);
	cr_assert_eq(authcache_get(g, 20), -1, "unavailable forgets");
}

Test(front_authcache, bounded)
{
	uint8_t	 h[TOKEN_HASH_LEN];
	int	 i, kept = 0;

	authcache_clear();
	/* Ten hashes of one set: at most its ways are kept. */
	for (i = 0; i < 10; i++) {
		memset(h, i, sizeof(h));
		h[0] = 7;
		h[1] = 0;
		authcache_put(h, AUTH_UNKNOWN, 100 + i);
	}
	for (i = 0; i < 10; i++) {
		memset(h, i, sizeof(h));
		h[0] = 7;
		h[1] = 0;
		kept += authcache_get(h, 101) == AUTH_UNKNOWN;
	}
	cr_assert_eq(kept, 4);
	/* The newest stay. */
	memset(h, 9, sizeof(h));
	h[0] = 7;
	h[1] = 0;
	cr_assert_eq(authcache_get(h, 101), AUTH_UNKNOWN);
}
