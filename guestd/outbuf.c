/*
 * Retained job output.  The first outbuf.budget bytes the job writes,
 * across both streams in arrival order, are kept; later bytes only count
 * towards the stream's total and set truncated.  Reading is by byte
 * cursor per stream and never consumes anything.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "outbuf.h"

void
outbuf_init(struct outbuf *ob, size_t budget)
{
	memset(ob, 0, sizeof(*ob));
	ob->budget = budget;
}

void
outbuf_free(struct outbuf *ob)
{
	int	 i;

	for (i = 0; i < OUT_NSTREAMS; i++) {
		free(ob->s[i].data);
		ob->s[i].data = NULL;
		ob->s[i].len = ob->s[i].cap = 0;
	}
}

size_t
outbuf_retained(const struct outbuf *ob)
{
	return ob->s[OUT_STDOUT].len + ob->s[OUT_STDERR].len;
}

/*
 * Grows a stream's buffer to hold at least need bytes, geometrically but
 * never past the budget.  Returns 0, or -1 if memory ran out.
 */
static int
outstream_reserve(struct outstream *s, size_t need, size_t budget)
{
	size_t	 cap;
	uint8_t	*p;

	if (need <= s->cap)
		return 0;
	cap = s->cap ? s->cap : OUT_CHUNK_MIN;
	while (cap < need)
		cap *= 2;
	if (cap > budget)
		cap = budget;
	if ((p = realloc(s->data, cap)) == NULL)
		return -1;
	s->data = p;
	s->cap = cap;
	return 0;
}

/*
 * Records n bytes written to a stream.  Returns how many were retained;
 * the rest are dropped and the output marked truncated.
 */
size_t
outbuf_append(struct outbuf *ob, int stream, const uint8_t *p, size_t n)
{
	struct outstream *s = &ob->s[stream];
	size_t	 room, keep;

	s->total += n;
	room = ob->budget - outbuf_retained(ob);
	keep = n < room ? n : room;
	if (keep > 0 && outstream_reserve(s, s->len + keep, ob->budget) == -1)
		keep = 0;
	if (keep < n)
		ob->truncated = 1;
	if (keep > 0) {
		memcpy(s->data + s->len, p, keep);
		s->len += keep;
	}
	return keep;
}

/*
 * The retained bytes of a stream from cursor on, at most max of them.
 * A cursor at or past the retained end gives nothing.
 */
size_t
outbuf_page(const struct outbuf *ob, int stream, uint64_t cursor, size_t max,
    const uint8_t **pp)
{
	const struct outstream *s = &ob->s[stream];
	size_t	 n;

	*pp = NULL;
	if (cursor >= s->len)
		return 0;
	n = s->len - (size_t)cursor;
	if (n > max)
		n = max;
	*pp = s->data + cursor;
	return n;
}
