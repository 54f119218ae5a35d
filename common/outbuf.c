/*
 * Retained job output.  Of each stream the first head_max bytes are
 * kept (the head), and then the last tail_max bytes, in a ring (the
 * tail); bytes pushed out of the ring only count towards the stream's
 * total.  Reading is by byte offset in the stream as the job wrote it,
 * and never consumes anything.
 *
 * Once bytes were dropped the stream has a gap: from the head's end to
 * the tail's start.  The gap is widened to UTF-8 character boundaries,
 * so that text read on either side of it decodes: an incomplete
 * character at the head's end and continuation bytes at the tail's start
 * (at most OUT_CUT_MAX of each) count as dropped.  A page never spans
 * the gap; a cursor inside it reads from the gap's end, and the reader
 * is told how many bytes it skipped.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "outbuf.h"

#define OUT_CUT_MAX	3	/* bytes of a UTF-8 character but one */

void
outbuf_init(struct outbuf *ob, size_t head_max, size_t tail_max)
{
	memset(ob, 0, sizeof(*ob));
	ob->head_max = head_max;
	ob->tail_max = tail_max;
}

void
outbuf_free(struct outbuf *ob)
{
	int	 i;

	for (i = 0; i < OUT_NSTREAMS; i++) {
		free(ob->s[i].head);
		free(ob->s[i].tail);
		memset(&ob->s[i], 0, sizeof(ob->s[i]));
	}
}

/*
 * Grows a buffer to hold at least need bytes, geometrically but never
 * past max.  Returns 0, or -1 if memory ran out.
 */
static int
reserve(uint8_t **data, size_t *capp, size_t need, size_t max)
{
	size_t	 cap;
	uint8_t	*p;

	if (need <= *capp)
		return 0;
	cap = *capp ? *capp : OUT_CHUNK_MIN;
	while (cap < need)
		cap *= 2;
	if (cap > max)
		cap = max;
	if ((p = realloc(*data, cap)) == NULL)
		return -1;
	*data = p;
	*capp = cap;
	return 0;
}

/*
 * Puts n bytes at the ring's end, pushing out its oldest when it is
 * full.  The ring grows while it has not wrapped; if it cannot, it keeps
 * what its buffer holds.
 */
static void
tail_put(struct outstream *s, const uint8_t *p, size_t n, size_t max)
{
	size_t	 cap, w, k, over;

	if (n >= max) {
		p += n - max;
		n = max;
	}
	if (s->tail_off == 0)
		(void)reserve(&s->tail, &s->tail_cap, s->tail_len + n, max);
	if ((cap = s->tail_cap) == 0) {
		s->tail_len = 0;	/* all dropped */
		return;
	}
	if (n > cap) {
		p += n - cap;
		n = cap;
	}
	w = (s->tail_off + s->tail_len) % cap;
	k = cap - w < n ? cap - w : n;
	memcpy(s->tail + w, p, k);
	memcpy(s->tail, p + k, n - k);
	if (s->tail_len + n > cap) {
		over = s->tail_len + n - cap;
		s->tail_off = (s->tail_off + over) % cap;
		s->tail_len = cap;
	} else
		s->tail_len += n;
}

/* Records n bytes written to a stream: kept in the head, or the tail. */
void
outbuf_append(struct outbuf *ob, int stream, const uint8_t *p, size_t n)
{
	struct outstream *s = &ob->s[stream];
	size_t	 k = 0;

	s->total += n;
	if (!s->head_done) {
		k = ob->head_max - s->head_len;
		if (k > n)
			k = n;
		if (k > 0 && reserve(&s->head, &s->head_cap, s->head_len + k,
		    ob->head_max) == -1)
			k = 0;
		if (k > 0) {
			memcpy(s->head + s->head_len, p, k);
			s->head_len += k;
		}
		if (k < n)
			s->head_done = 1;
	}
	if (k < n)
		tail_put(s, p + k, n - k, ob->tail_max);
}

static uint8_t
tail_byte(const struct outstream *s, size_t i)
{
	return s->tail[(s->tail_off + i) % s->tail_cap];
}

/* Bytes of an incomplete UTF-8 character at the end of p[0..n). */
static size_t
cut_at_end(const uint8_t *p, size_t n)
{
	size_t	 k, want;
	uint8_t	 c;

	for (k = 1; k <= OUT_CUT_MAX + 1 && k <= n; k++) {
		c = p[n - k];
		if ((c & 0xc0) == 0x80)
			continue;
		want = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 :
		    c >= 0xc2 ? 2 : 1;
		if (c >= 0xf5)
			want = 1;
		return want > k ? k : 0;
	}
	return 0;
}

/*
 * Where a stream's gap starts and how many bytes it holds (0 and 0 while
 * nothing was dropped).
 */
void
outbuf_gap(const struct outbuf *ob, int stream, uint64_t *gapp,
    uint64_t *droppedp)
{
	const struct outstream *s = &ob->s[stream];
	uint64_t	 dropped;
	size_t		 head, skip;

	*gapp = *droppedp = 0;
	dropped = s->total - s->head_len - s->tail_len;
	if (dropped == 0)
		return;
	head = s->head_len - cut_at_end(s->head, s->head_len);
	for (skip = 0; skip < OUT_CUT_MAX && skip < s->tail_len &&
	    (tail_byte(s, skip) & 0xc0) == 0x80; skip++)
		;
	*gapp = head;
	*droppedp = dropped + (s->head_len - head) + skip;
}

/*
 * Copies the retained bytes of a stream from cursor on, at most max of
 * them, to dst.  A cursor inside the gap reads from its end, and
 * *skipped says how far that is; one at or past the end gives nothing.
 */
size_t
outbuf_page(const struct outbuf *ob, int stream, uint64_t cursor, size_t max,
    uint8_t *dst, uint64_t *skipped)
{
	const struct outstream *s = &ob->s[stream];
	uint64_t	 gap, dropped, tail_start;
	size_t		 n = 0, k, i, at;

	*skipped = 0;
	if (cursor >= s->total)
		return 0;
	outbuf_gap(ob, stream, &gap, &dropped);
	if (dropped > 0 && cursor >= gap && cursor < gap + dropped) {
		*skipped = gap + dropped - cursor;
		cursor = gap + dropped;
	}
	if (cursor < s->head_len && (dropped == 0 || cursor < gap)) {
		k = (dropped > 0 ? gap : s->head_len) - (size_t)cursor;
		if (k > max)
			k = max;
		memcpy(dst, s->head + cursor, k);
		n = k;
		cursor += k;
		if (dropped > 0)
			return n;
	}
	tail_start = s->total - s->tail_len;
	if (n < max && cursor >= tail_start && cursor < s->total) {
		i = (size_t)(cursor - tail_start);
		k = s->tail_len - i;
		if (k > max - n)
			k = max - n;
		at = (s->tail_off + i) % s->tail_cap;
		if (k > s->tail_cap - at) {
			memcpy(dst + n, s->tail + at, s->tail_cap - at);
			memcpy(dst + n + (s->tail_cap - at), s->tail,
			    k - (s->tail_cap - at));
		} else
			memcpy(dst + n, s->tail + at, k);
		n += k;
	}
	return n;
}
