/*
 * MCP sessions and per-workspace rate limits.
 *
 * A session id is 128 bits from getrandom(2), in hex.  It names a session
 * but grants nothing: every request still carries a token, and a session
 * is found only for the workspace that created it, so another workspace's
 * session id is simply "not found".  Sessions end on DELETE, after
 * SESSION_IDLE_MAX idle seconds, or when their workspace opens more than
 * SESSIONS_PER_WS (the least recently used goes).
 */
#include <sys/queue.h>
#include <sys/random.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "frontd.h"
#include "hash.h"
#include "log.h"

#define SESSION_BUCKETS		1024
#define RATE_BUCKETS		256

struct session {
	TAILQ_ENTRY(session)	 lru;		/* least recently used first */
	struct session		*hnext;
	char			 id[SESSION_ID_LEN + 1];
	char			 workspace[TOOL_WS_NAME_MAX + 1];
	char			 version[PROTO_VERSION_MAX];
	time_t			 used;
};

static TAILQ_HEAD(, session)	 session_lru =
    TAILQ_HEAD_INITIALIZER(session_lru);
static struct session		*session_hash[SESSION_BUCKETS];
static size_t			 nsessions;

static size_t
str_hash(const char *s, size_t buckets)
{
	uint32_t	 h = 2166136261u;

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h % buckets;
}

static struct session **
session_slot(const char *id)
{
	struct session	**pp;

	for (pp = &session_hash[str_hash(id, SESSION_BUCKETS)]; *pp != NULL;
	    pp = &(*pp)->hnext)
		if (strcmp((*pp)->id, id) == 0)
			break;
	return pp;
}

void
session_end(struct session *s)
{
	struct session	**pp = session_slot(s->id);

	if (*pp == s)
		*pp = s->hnext;
	TAILQ_REMOVE(&session_lru, s, lru);
	nsessions--;
	free(s);
}

struct session *
session_new(const char *workspace, const char *version)
{
	struct session	*s, *old = NULL, *it;
	uint8_t		 rnd[SESSION_ID_BYTES];
	size_t		 n = 0;

	TAILQ_FOREACH(it, &session_lru, lru) {
		if (strcmp(it->workspace, workspace) == 0) {
			if (old == NULL)
				old = it;
			n++;
		}
	}
	if (n >= SESSIONS_PER_WS && old != NULL)
		session_end(old);
	else if (nsessions >= SESSIONS_MAX)
		session_end(TAILQ_FIRST(&session_lru));
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	do {
		if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
			fatal("%s: getrandom", __func__);
		hex_encode(rnd, sizeof(rnd), s->id);
	} while (*session_slot(s->id) != NULL);
	snprintf(s->workspace, sizeof(s->workspace), "%s", workspace);
	snprintf(s->version, sizeof(s->version), "%s", version);
	s->used = time(NULL);
	s->hnext = NULL;
	*session_slot(s->id) = s;
	TAILQ_INSERT_TAIL(&session_lru, s, lru);
	nsessions++;
	return s;
}

struct session *
session_find(const char *id, const char *workspace)
{
	struct session	*s;

	if (strlen(id) != SESSION_ID_LEN)
		return NULL;
	s = *session_slot(id);
	if (s == NULL || strcmp(s->workspace, workspace) != 0)
		return NULL;
	return s;
}

void
session_touch(struct session *s)
{
	s->used = time(NULL);
	TAILQ_REMOVE(&session_lru, s, lru);
	TAILQ_INSERT_TAIL(&session_lru, s, lru);
}

const char *
session_id(const struct session *s)
{
	return s->id;
}

const char *
session_version(const struct session *s)
{
	return s->version;
}

size_t
session_count(void)
{
	return nsessions;
}

void
session_sweep(time_t now)
{
	struct session	*s;

	while ((s = TAILQ_FIRST(&session_lru)) != NULL &&
	    now - s->used > SESSION_IDLE_MAX)
		session_end(s);
}

/*
 * Token buckets, one per workspace: rate tokens a second, at most burst.
 * The table is bounded; when full, the bucket idle the longest is reused
 * (it would have refilled anyway unless it was hammered moments ago).
 */
struct bucket {
	char		 workspace[TOOL_WS_NAME_MAX + 1];
	double		 tokens;
	struct timespec	 last;
	int		 used;
};

static struct bucket	 buckets[RATE_TABLE_MAX];

static double
ts_diff(const struct timespec *a, const struct timespec *b)
{
	return (double)(a->tv_sec - b->tv_sec) +
	    (double)(a->tv_nsec - b->tv_nsec) / 1e9;
}

int
rate_allow(const char *workspace, uint32_t rate, uint32_t burst,
    const struct timespec *now)
{
	struct bucket	*b = NULL, *oldest = &buckets[0];
	size_t		 i;
	double		 dt;

	if (rate == 0)
		return 1;
	for (i = 0; i < RATE_TABLE_MAX; i++) {
		if (buckets[i].used &&
		    strcmp(buckets[i].workspace, workspace) == 0) {
			b = &buckets[i];
			break;
		}
		if (!buckets[i].used || (oldest->used &&
		    ts_diff(&buckets[i].last, &oldest->last) < 0))
			oldest = &buckets[i];
	}
	if (b == NULL) {
		b = oldest;
		snprintf(b->workspace, sizeof(b->workspace), "%s", workspace);
		b->tokens = burst;
		b->last = *now;
		b->used = 1;
	}
	dt = ts_diff(now, &b->last);
	if (dt > 0) {
		b->tokens += dt * rate;
		if (b->tokens > burst)
			b->tokens = burst;
	}
	b->last = *now;
	if (b->tokens < 1.0)
		return 0;
	b->tokens -= 1.0;
	return 1;
}
