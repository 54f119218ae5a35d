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
	char	 ws[TOOL_WS_NAME_MAX + 1];

	authcache_clear();
	memset(h, 0xaa, sizeof(h));
	memset(g, 0xbb, sizeof(g));
	cr_assert_eq(authcache_get(h, 10, ws), -1);
	authcache_put(h, AUTH_REVOKED, "", 0, 10);
	authcache_put(g, AUTH_OK, "alice", 0, 10);
	cr_assert_eq(authcache_get(h, 10 + AUTH_NEG_TTL - 1, ws),
	    AUTH_REVOKED);
	cr_assert_eq(authcache_get(h, 10 + AUTH_NEG_TTL, ws), -1, "expired");
	cr_assert_eq(authcache_get(g, 20, ws), AUTH_OK);
	cr_assert_str_eq(ws, "alice");
	/* A later refusal replaces an acceptance. */
	authcache_put(g, AUTH_REVOKED, "", 0, 20);
	cr_assert_eq(authcache_get(g, 20, ws), AUTH_REVOKED);
	authcache_put(g, AUTH_UNAVAILABLE, "", 0, 20);
	cr_assert_eq(authcache_get(g, 20, ws), -1, "unavailable forgets");
}

/*
 * An acceptance is kept AUTH_GOOD_TTL seconds and never up to the token's
 * end; a flush (a revocation) drops every acceptance and no refusal.
 */
Test(front_authcache, acceptances_bounded_and_flushed)
{
	uint8_t	 a[TOKEN_HASH_LEN], b[TOKEN_HASH_LEN], r[TOKEN_HASH_LEN];
	char	 ws[TOOL_WS_NAME_MAX + 1];

	authcache_clear();
	memset(a, 0x11, sizeof(a));
	memset(b, 0x22, sizeof(b));
	memset(r, 0x33, sizeof(r));
	authcache_put(a, AUTH_OK, "alice", 0, 100);
	cr_assert_eq(authcache_get(a, 100 + AUTH_GOOD_TTL - 1, ws), AUTH_OK);
	cr_assert_eq(authcache_get(a, 100 + AUTH_GOOD_TTL, ws), -1);
	/* A token with 10 s left is kept 9: never past its end. */
	authcache_put(b, AUTH_OK, "bob", 10, 100);
	cr_assert_eq(authcache_get(b, 108, ws), AUTH_OK);
	cr_assert_str_eq(ws, "bob");
	cr_assert_eq(authcache_get(b, 109, ws), -1);
	/* One with a second left is not kept at all. */
	authcache_put(b, AUTH_OK, "bob", 1, 200);
	cr_assert_eq(authcache_get(b, 200, ws), -1);

	authcache_put(a, AUTH_OK, "alice", 0, 300);
	authcache_put(b, AUTH_OK, "bob", 0, 300);
	authcache_put(r, AUTH_REVOKED, "", 0, 300);
	authcache_flush();
	cr_assert_eq(authcache_get(a, 300, ws), -1);
	cr_assert_eq(authcache_get(b, 300, ws), -1);
	cr_assert_eq(authcache_get(r, 300, ws), AUTH_REVOKED);
}

Test(front_authcache, bounded)
{
	uint8_t	 h[TOKEN_HASH_LEN];
	char	 ws[TOOL_WS_NAME_MAX + 1];
	int	 i, kept = 0;

	authcache_clear();
	/* Ten hashes of one set: at most its ways are kept. */
	for (i = 0; i < 10; i++) {
		memset(h, i, sizeof(h));
		h[0] = 7;
		h[1] = 0;
		authcache_put(h, AUTH_UNKNOWN, "", 0, 100 + i);
	}
	for (i = 0; i < 10; i++) {
		memset(h, i, sizeof(h));
		h[0] = 7;
		h[1] = 0;
		kept += authcache_get(h, 101, ws) == AUTH_UNKNOWN;
	}
	cr_assert_eq(kept, 4);
	/* The newest stay. */
	memset(h, 9, sizeof(h));
	h[0] = 7;
	h[1] = 0;
	cr_assert_eq(authcache_get(h, 101, ws), AUTH_UNKNOWN);
}
