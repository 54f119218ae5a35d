/*
 * Retained job output (common/outbuf.c): of each stream the head and
 * the tail are kept, the bytes between them counted and dropped; the gap
 * is widened to UTF-8 character boundaries; cursor reads are bounded,
 * never span the gap, and say what they skipped.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "agent_proto.h"
#include "outbuf.h"

static struct outbuf	 ob;
static uint8_t		 page[AGENT_PAGE_MAX];

static void
teardown(void)
{
	outbuf_free(&ob);
}

TestSuite(ring, .fini = teardown);

static void
put(int stream, const char *s)
{
	outbuf_append(&ob, stream, (const uint8_t *)s, strlen(s));
}

/* The byte a patterned stream holds at offset k. */
static uint8_t
pattern(uint64_t k)
{
	return (uint8_t)(k % 251);
}

Test(ring, append_and_page)
{
	uint64_t	 skipped, gap, dropped;

	outbuf_init(&ob, 8, 8);
	put(OUT_STDOUT, "hello");
	put(OUT_STDERR, "err");
	put(OUT_STDOUT, " world");
	/* Head and tail are one run while nothing was dropped. */
	cr_assert_eq(outbuf_page(&ob, OUT_STDOUT, 0, 100, page, &skipped), 11);
	cr_assert_arr_eq(page, "hello world", 11);
	cr_assert_eq(skipped, 0);
	cr_assert_eq(outbuf_page(&ob, OUT_STDOUT, 6, 3, page, &skipped), 3);
	cr_assert_arr_eq(page, "wor", 3);
	/* Reading does not consume. */
	cr_assert_eq(outbuf_page(&ob, OUT_STDOUT, 6, 3, page, &skipped), 3);
	cr_assert_arr_eq(page, "wor", 3);
	cr_assert_eq(outbuf_page(&ob, OUT_STDERR, 0, 100, page, &skipped), 3);
	cr_assert_arr_eq(page, "err", 3);
	/* At or past the end: nothing. */
	cr_assert_eq(outbuf_page(&ob, OUT_STDOUT, 11, 100, page, &skipped), 0);
	cr_assert_eq(outbuf_page(&ob, OUT_STDOUT, 1ULL << 40, 100, page,
	    &skipped), 0);
	outbuf_gap(&ob, OUT_STDOUT, &gap, &dropped);
	cr_assert_eq(gap, 0);
	cr_assert_eq(dropped, 0);
}

Test(ring, exact_fit_drops_nothing)
{
	uint64_t	 gap, dropped;

	outbuf_init(&ob, 4, 4);
	put(OUT_STDOUT, "abcdefgh");
	outbuf_gap(&ob, OUT_STDOUT, &gap, &dropped);
	cr_assert_eq(dropped, 0);
	put(OUT_STDOUT, "i");
	outbuf_gap(&ob, OUT_STDOUT, &gap, &dropped);
	cr_assert_eq(gap, 4);
	cr_assert_eq(dropped, 1);
	cr_assert_eq(outbuf_page(&ob, OUT_STDOUT, 0, 100, page, &dropped), 4);
	cr_assert_arr_eq(page, "abcd", 4);
	cr_assert_eq(outbuf_page(&ob, OUT_STDOUT, 4, 100, page, &dropped), 4);
	cr_assert_arr_eq(page, "fghi", 4);
	cr_assert_eq(dropped, 1);
}

/*
 * 1 MiB on stdout, then an error on stderr: the error is all there, and
 * of stdout its head and its tail, paged through with the gap said once.
 */
Test(ring, flood_keeps_the_other_stream_and_the_tail)
{
	static uint8_t	 chunk[65536 + 7];
	uint64_t	 cursor = 0, total = 0, skipped, gap, dropped, seen = 0;
	size_t		 i, n, gaps = 0;

	outbuf_init(&ob, AGENT_JOB_HEAD_MAX, AGENT_JOB_TAIL_MAX);
	while (total < 1048576) {
		n = sizeof(chunk);
		if (n > 1048576 - total)
			n = 1048576 - total;
		for (i = 0; i < n; i++)
			chunk[i] = 'a' + (char)((total + i) % 26);
		chunk[n - 1] = '\n';
		outbuf_append(&ob, OUT_STDOUT, chunk, n);
		total += n;
	}
	put(OUT_STDERR, "error: it broke\n");
	cr_assert_eq(outbuf_page(&ob, OUT_STDERR, 0, AGENT_PAGE_MAX, page,
	    &skipped), 16);
	cr_assert_arr_eq(page, "error: it broke\n", 16);
	outbuf_gap(&ob, OUT_STDERR, &gap, &dropped);
	cr_assert_eq(dropped, 0);
	outbuf_gap(&ob, OUT_STDOUT, &gap, &dropped);
	cr_assert_eq(gap, AGENT_JOB_HEAD_MAX);
	cr_assert_eq(dropped, 1048576 - AGENT_JOB_HEAD_MAX -
	    AGENT_JOB_TAIL_MAX);
	cr_assert_leq(ob.s[OUT_STDOUT].head_cap + ob.s[OUT_STDOUT].tail_cap,
	    AGENT_JOB_HEAD_MAX + AGENT_JOB_TAIL_MAX);
	while ((n = outbuf_page(&ob, OUT_STDOUT, cursor, AGENT_PAGE_MAX, page,
	    &skipped)) > 0) {
		cr_assert_leq(n, AGENT_PAGE_MAX);
		if (skipped > 0) {
			cr_assert_eq(cursor, gap);
			cr_assert_eq(skipped, dropped);
			gaps++;
		}
		cursor += skipped;
		cr_assert(cursor + n <= gap || cursor >= gap + dropped,
		    "a page spans the gap");
		for (i = 0; i < n; i++)
			cr_assert_eq(page[i], cursor + i == 1048576 - 1 ||
			    (cursor + i + 1) % sizeof(chunk) == 0 ? '\n' :
			    'a' + (char)((cursor + i) % 26));
		cursor += n;
		seen += n;
	}
	cr_assert_eq(gaps, 1);
	cr_assert_eq(cursor, 1048576);
	cr_assert_eq(seen, AGENT_JOB_HEAD_MAX + AGENT_JOB_TAIL_MAX);
}

/* Writes of every size wrap the ring; each kept byte is where it was. */
Test(ring, ring_wraps_and_keeps_offsets)
{
	static uint8_t	 chunk[64];
	uint64_t	 total = 0, cursor, skipped, gap, dropped;
	unsigned int	 seed = 7;
	size_t		 i, n, round;

	outbuf_init(&ob, 5, 13);
	for (round = 0; round < 500; round++) {
		n = (size_t)rand_r(&seed) % sizeof(chunk);
		for (i = 0; i < n; i++)
			chunk[i] = pattern(total + i);
		outbuf_append(&ob, OUT_STDOUT, chunk, n);
		total += n;
		outbuf_gap(&ob, OUT_STDOUT, &gap, &dropped);
		if (total <= 18) {
			cr_assert_eq(dropped, 0);
			continue;
		}
		/* pattern() bytes are below 0xc0 or lead bytes: a cut may
		 * widen the gap, by at most 3 bytes a side. */
		cr_assert_leq(gap, 5);
		cr_assert_geq(gap + 3, 5);
		cr_assert_geq(dropped, total - 18);
		cr_assert_leq(dropped, total - 18 + 6);
		for (cursor = 0; cursor < total; cursor += n + skipped) {
			n = outbuf_page(&ob, OUT_STDOUT, cursor, 4, page,
			    &skipped);
			cr_assert_gt(n, 0);
			cr_assert_leq(n, 4);
			for (i = 0; i < n; i++)
				cr_assert_eq(page[i], pattern(cursor +
				    skipped + i));
		}
		cr_assert_eq(cursor, total);
	}
}

/* A character cut at either side of the gap is dropped with it. */
Test(ring, utf8_cut_at_the_gap)
{
	uint64_t	 gap, dropped, skipped;
	int		 i;

	outbuf_init(&ob, 8, 8);
	put(OUT_STDOUT, "abcdefg");
	for (i = 0; i < 11; i++)
		put(OUT_STDOUT, "\xc3\xa9");	/* é */
	put(OUT_STDOUT, "x");		/* 30 bytes; the tail from 22 */
	outbuf_gap(&ob, OUT_STDOUT, &gap, &dropped);
	cr_assert_eq(gap, 7);		/* not after the é's first byte */
	cr_assert_eq(dropped, 30 - 7 - 7);	/* nor from its second */
	cr_assert_eq(outbuf_page(&ob, OUT_STDOUT, 0, 100, page, &skipped), 7);
	cr_assert_arr_eq(page, "abcdefg", 7);
	cr_assert_eq(outbuf_page(&ob, OUT_STDOUT, 7, 100, page, &skipped), 7);
	cr_assert_eq(skipped, 16);
	cr_assert_arr_eq(page, "\xc3\xa9\xc3\xa9\xc3\xa9x", 7);
	/* From inside the gap, the skip is what is left of it. */
	cr_assert_eq(outbuf_page(&ob, OUT_STDOUT, 20, 2, page, &skipped), 2);
	cr_assert_eq(skipped, 3);
	cr_assert_arr_eq(page, "\xc3\xa9", 2);
	/* From inside the tail, none. */
	cr_assert_eq(outbuf_page(&ob, OUT_STDOUT, 25, 100, page, &skipped), 5);
	cr_assert_eq(skipped, 0);
}

/* Binary bytes that are no UTF-8 lead are not cut. */
Test(ring, no_cut_without_a_character)
{
	uint64_t	 gap, dropped;

	outbuf_init(&ob, 4, 4);
	put(OUT_STDOUT, "abc\xff" "0123456789");
	outbuf_gap(&ob, OUT_STDOUT, &gap, &dropped);
	cr_assert_eq(gap, 4);
	cr_assert_eq(dropped, 6);
}
