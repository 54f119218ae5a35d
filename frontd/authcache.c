/*
 * What mcvmd last said of a token hash, kept briefly in frontd, so that
 * a request with a token it knows costs no question to the root process
 * (each is a query of its database).
 *
 * A refusal is remembered for AUTH_NEG_TTL seconds.  An acceptance, with
 * its workspace, for AUTH_GOOD_TTL seconds and never past the token's own
 * end; mcvmd makes frontd forget every acceptance (authcache_flush) when
 * it revokes a workspace or rotates its tokens, and answers the operator
 * only once frontd has, so that a revocation takes effect at once.  Tool
 * calls are authenticated again by mcvmd in any case.
 *
 * The table is bounded: AUTHCACHE_SETS sets of AUTHCACHE_WAYS entries,
 * picked by the hash; a full set reuses its entry that expires first.
 */
#include <stdio.h>
#include <string.h>

#include "frontd.h"

#define AUTHCACHE_SETS		256
#define AUTHCACHE_WAYS		4

struct auth_entry {
	uint8_t		 hash[TOKEN_HASH_LEN];
	uint32_t	 status;		/* AUTH_* */
	time_t		 expires;		/* monotonic seconds; 0 free */
	char		 ws[TOOL_WS_NAME_MAX + 1];	/* AUTH_OK's */
};

static struct auth_entry	 cache[AUTHCACHE_SETS][AUTHCACHE_WAYS];

static struct auth_entry *
auth_set(const uint8_t *hash)
{
	return cache[(hash[0] | hash[1] << 8) % AUTHCACHE_SETS];
}

/* The status remembered for hash, or -1; ws gets an acceptance's. */
int
authcache_get(const uint8_t *hash, time_t now, char ws[TOOL_WS_NAME_MAX + 1])
{
	struct auth_entry	*set = auth_set(hash);
	size_t			 i;

	for (i = 0; i < AUTHCACHE_WAYS; i++) {
		if (set[i].expires == 0 || memcmp(set[i].hash, hash,
		    TOKEN_HASH_LEN) != 0)
			continue;
		if (set[i].expires <= now) {
			explicit_bzero(&set[i], sizeof(set[i]));
			return -1;
		}
		memcpy(ws, set[i].ws, sizeof(set[i].ws));
		return (int)set[i].status;
	}
	return -1;
}

/*
 * Remembers mcvmd's answer for hash: a refusal, or an acceptance of ws's
 * token with expires_in seconds left (0: no end).  AUTH_UNAVAILABLE, or
 * a token about to end, forgets it.
 */
void
authcache_put(const uint8_t *hash, uint32_t status, const char *ws,
    uint32_t expires_in, time_t now)
{
	struct auth_entry	*set = auth_set(hash), *e = NULL;
	time_t			 keep = status == AUTH_OK ? AUTH_GOOD_TTL :
				    AUTH_NEG_TTL;
	size_t			 i;

	/* Seconds are whole on both sides: one less is never past it. */
	if (status == AUTH_OK && expires_in != 0 && expires_in - 1 < keep)
		keep = expires_in - 1;
	for (i = 0; i < AUTHCACHE_WAYS; i++)
		if (set[i].expires != 0 && memcmp(set[i].hash, hash,
		    TOKEN_HASH_LEN) == 0) {
			e = &set[i];
			break;
		}
	if (status == AUTH_UNAVAILABLE || keep == 0) {
		if (e != NULL)
			explicit_bzero(e, sizeof(*e));
		return;
	}
	if (e == NULL) {
		e = &set[0];
		for (i = 0; i < AUTHCACHE_WAYS; i++) {
			if (set[i].expires <= now) {
				e = &set[i];
				break;
			}
			if (set[i].expires < e->expires)
				e = &set[i];
		}
	}
	explicit_bzero(e, sizeof(*e));
	memcpy(e->hash, hash, TOKEN_HASH_LEN);
	e->status = status;
	e->expires = now + keep;
	if (status == AUTH_OK)
		(void)snprintf(e->ws, sizeof(e->ws), "%s", ws);
}

/* Every acceptance goes; refusals stay. */
void
authcache_flush(void)
{
	size_t	 i, j;

	for (i = 0; i < AUTHCACHE_SETS; i++)
		for (j = 0; j < AUTHCACHE_WAYS; j++)
			if (cache[i][j].expires != 0 &&
			    cache[i][j].status == AUTH_OK)
				explicit_bzero(&cache[i][j],
				    sizeof(cache[i][j]));
}

void
authcache_clear(void)
{
	explicit_bzero(cache, sizeof(cache));
}
