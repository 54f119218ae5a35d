/*
 * What mcvmd last said of a token hash, kept briefly in frontd so that a
 * token it refused is not looked up again at once (each lookup is a query
 * of the root process's database).
 *
 * A refusal is remembered for AUTH_NEG_TTL seconds and answered from
 * here.  An acceptance never is: every request with a good token still
 * goes to mcvmd, so that a revocation takes effect at once.  It is only
 * noted (AUTH_GOOD_TTL) so that the token's requests are not counted
 * against its peer's budget of unauthenticated requests.
 *
 * The table is bounded: AUTHCACHE_SETS sets of AUTHCACHE_WAYS entries,
 * picked by the hash; a full set reuses its entry that expires first.
 */
#include <string.h>

#include "frontd.h"

#define AUTHCACHE_SETS		256
#define AUTHCACHE_WAYS		4

struct auth_entry {
	uint8_t		 hash[TOKEN_HASH_LEN];
	uint32_t	 status;		/* AUTH_* */
	time_t		 expires;		/* monotonic seconds; 0 free */
};

static struct auth_entry	 cache[AUTHCACHE_SETS][AUTHCACHE_WAYS];

static struct auth_entry *
auth_set(const uint8_t *hash)
{
	return cache[(hash[0] | hash[1] << 8) % AUTHCACHE_SETS];
}

/* The status remembered for hash, or -1. */
int
authcache_get(const uint8_t *hash, time_t now)
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
		return (int)set[i].status;
	}
	return -1;
}

/* Remembers mcvmd's answer for hash; AUTH_UNAVAILABLE forgets it. */
void
authcache_put(const uint8_t *hash, uint32_t status, time_t now)
{
	struct auth_entry	*set = auth_set(hash), *e = NULL;
	size_t			 i;

	for (i = 0; i < AUTHCACHE_WAYS; i++)
		if (set[i].expires != 0 && memcmp(set[i].hash, hash,
		    TOKEN_HASH_LEN) == 0) {
			e = &set[i];
			break;
		}
	if (status == AUTH_UNAVAILABLE) {
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
	memcpy(e->hash, hash, TOKEN_HASH_LEN);
	e->status = status;
	e->expires = now + (status == AUTH_OK ? AUTH_GOOD_TTL : AUTH_NEG_TTL);
}

void
authcache_clear(void)
{
	explicit_bzero(cache, sizeof(cache));
}
