/*
 * Retained job output (guestd/outbuf.c): the first bytes across both
 * streams are kept up to the budget, the rest counted and dropped with
 * truncated set; cursor reads are bounded and non-destructive.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "agent_proto.h"
#include "outbuf.h"

static struct outbuf	 ob;

static void
teardown(void)
{
	outbuf_free(&ob);
}

TestSuite(ring, .fini = teardown);

Test(ring, append_and_page)
{
	const uint8_t	*p;

	outbuf_init(&ob, 100);
	cr_assert_eq(outbuf_append(&ob, OUT_STDOUT, (const uint8_t *)"hello",
	    5), 5);
	cr_assert_eq(outbuf_append(&ob, OUT_STDERR, (const uint8_t *)"err", 3),
	    3);
	cr_assert_eq(outbuf_append(&ob, OUT_STDOUT, (const uint8_t *)" world",
	    6), 6);
	cr_assert_eq(outbuf_page(&ob, OUT_STDOUT, 0, 100, &p), 11);
	cr_assert_arr_eq(p, "hello world", 11);
	cr_assert_eq(outbuf_page(&ob, OUT_STDOUT, 6, 3, &p), 3);
	cr_assert_arr_eq(p, "wor", 3);
	/* Reading does not consume. */
	cr_assert_eq(outbuf_page(&ob, OUT_STDOUT, 6, 3, &p), 3);
	cr_assert_arr_eq(p, "wor", 3);
	cr_assert_eq(outbuf_page(&ob, OUT_STDERR, 0, 100, &p), 3);
	cr_assert_arr_eq(p, "err", 3);
	/* At or past the end: nothing. */
	cr_assert_eq(outbuf_page(&ob, OUT_STDOUT, 11, 100, &p), 0);
	cr_assert_null(p);
	cr_assert_eq(outbuf_page(&ob, OUT_STDOUT, 1ULL << 40, 100, &p), 0);
	cr_assert_eq(ob.truncated, 0);
	cr_assert_eq(outbuf_retained(&ob), 14);
}

Test(ring, budget_shared_by_streams)
{
	uint8_t		 chunk[1000];
	const uint8_t	*p;
	size_t		 kept = 0, i;

	outbuf_init(&ob, AGENT_JOB_RETAIN_MAX);
	memset(chunk, 'o', sizeof(chunk));
	for (i = 0; i < 200; i++)
		kept += outbuf_append(&ob, OUT_STDOUT, chunk, sizeof(chunk));
	memset(chunk, 'e', sizeof(chunk));
	for (i = 0; i < 200; i++)
		kept += outbuf_append(&ob, OUT_STDERR, chunk, sizeof(chunk));
	cr_assert_eq(kept, AGENT_JOB_RETAIN_MAX);
	cr_assert_eq(outbuf_retained(&ob), AGENT_JOB_RETAIN_MAX);
	cr_assert_eq(ob.s[OUT_STDOUT].len, 200000);
	cr_assert_eq(ob.s[OUT_STDERR].len, AGENT_JOB_RETAIN_MAX - 200000);
	cr_assert_eq(ob.s[OUT_STDOUT].total, 200000);
	cr_assert_eq(ob.s[OUT_STDERR].total, 200000);
	cr_assert_eq(ob.truncated, 1);
	cr_assert_leq(ob.s[OUT_STDOUT].cap + ob.s[OUT_STDERR].cap,
	    2 * AGENT_JOB_RETAIN_MAX);
	cr_assert_eq(outbuf_page(&ob, OUT_STDERR, AGENT_JOB_RETAIN_MAX -
	    200000 - 1, AGENT_PAGE_MAX, &p), 1);
	cr_assert_eq(*p, 'e');
}

Test(ring, one_mebibyte_keeps_the_first_256k)
{
	static uint8_t	 chunk[65536];
	const uint8_t	*p;
	uint64_t	 cursor = 0;
	size_t		 i, n, pages = 0;

	outbuf_init(&ob, AGENT_JOB_RETAIN_MAX);
	for (i = 0; i < 16; i++) {
		memset(chunk, 'a' + (int)i, sizeof(chunk));
		outbuf_append(&ob, OUT_STDOUT, chunk, sizeof(chunk));
	}
	cr_assert_eq(ob.s[OUT_STDOUT].total, 1048576);
	cr_assert_eq(ob.s[OUT_STDOUT].len, AGENT_JOB_RETAIN_MAX);
	cr_assert(ob.truncated);
	while ((n = outbuf_page(&ob, OUT_STDOUT, cursor, AGENT_PAGE_MAX,
	    &p)) > 0) {
		cr_assert_leq(n, AGENT_PAGE_MAX);
		cr_assert_eq(p[0], 'a' + (int)(cursor / 65536));
		cursor += n;
		pages++;
	}
	cr_assert_eq(cursor, AGENT_JOB_RETAIN_MAX);
	cr_assert_eq(pages, AGENT_JOB_RETAIN_MAX / AGENT_PAGE_MAX);
}

Test(ring, exact_fit_is_not_truncated)
{
	uint8_t	 b[10];

	outbuf_init(&ob, 10);
	memset(b, 'x', sizeof(b));
	cr_assert_eq(outbuf_append(&ob, OUT_STDOUT, b, 10), 10);
	cr_assert_eq(ob.truncated, 0);
	cr_assert_eq(outbuf_append(&ob, OUT_STDERR, b, 0), 0);
	cr_assert_eq(ob.truncated, 0);
	cr_assert_eq(outbuf_append(&ob, OUT_STDERR, b, 1), 0);
	cr_assert_eq(ob.truncated, 1);
	cr_assert_eq(ob.s[OUT_STDERR].total, 1);
}

Test(ring, partial_append_at_the_limit)
{
	uint8_t	 b[10];

	outbuf_init(&ob, 15);
	memset(b, 'y', sizeof(b));
	cr_assert_eq(outbuf_append(&ob, OUT_STDOUT, b, 10), 10);
	cr_assert_eq(outbuf_append(&ob, OUT_STDOUT, b, 10), 5);
	cr_assert_eq(ob.s[OUT_STDOUT].len, 15);
	cr_assert_eq(ob.s[OUT_STDOUT].total, 20);
	cr_assert_eq(ob.truncated, 1);
}
