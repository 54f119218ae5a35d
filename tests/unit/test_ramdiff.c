/*
 * The relative checkpoint's filter (vmm/ramdiff.c) on streams built here
 * in QEMU 7.2's format, against a RAM file of four pages: A, B, a hole
 * and D.  What it drops is exactly the continued records of pages the
 * file holds, none kept before; however the stream is cut into feeds;
 * and anything it does not understand passes whole.
 */
#include <string.h>

#include <criterion/criterion.h>

#include "ramdiff.h"

#define PG	RAMDIFF_PAGE

struct sb {
	uint8_t	 b[16 * PG];
	size_t	 n;
};

static uint8_t	 file[4 * PG];
static uint8_t	 page_x[PG];

static void
put(struct sb *s, const void *p, size_t n)
{
	cr_assert(s->n + n <= sizeof(s->b));
	memcpy(s->b + s->n, p, n);
	s->n += n;
}

static void
u8(struct sb *s, uint8_t v)
{
	put(s, &v, 1);
}

static void
be32(struct sb *s, uint32_t v)
{
	uint8_t	 b[4] = { v >> 24, v >> 16, v >> 8, v };

	put(s, b, 4);
}

static void
be64(struct sb *s, uint64_t v)
{
	be32(s, (uint32_t)(v >> 32));
	be32(s, (uint32_t)v);
}

static void
str(struct sb *s, const char *v)
{
	u8(s, (uint8_t)strlen(v));
	put(s, v, strlen(v));
}

/* Magic, version, the configuration (capabilities if cap is set). */
static void
header(struct sb *s, const char *cap)
{
	be32(s, 0x5145564d);
	be32(s, 3);
	u8(s, 0x07);
	be32(s, 10);
	put(s, "pc-q35-7.2", 10);
	if (cap != NULL) {
		u8(s, 0x05);
		str(s, "configuration/capabilities");
		be32(s, 1);
		be32(s, 1);
		str(s, cap);
	}
}

/* ram's start: pc.ram (the file's four pages) and another block. */
static void
ram_start(struct sb *s, uint64_t other_len)
{
	u8(s, 0x01);
	be32(s, 2);
	str(s, "ram");
	be32(s, 0);
	be32(s, 4);
	be64(s, (4 * PG + PG) | 0x04);
	str(s, "pc.ram");
	be64(s, 4 * PG);
	str(s, "other");
	be64(s, other_len);
	be64(s, 0x10);
	u8(s, 0x7e);
	be32(s, 2);
}

static void
section(struct sb *s, uint8_t type)
{
	u8(s, type);
	be32(s, 2);
}

static void
eos(struct sb *s)
{
	be64(s, 0x10);
	u8(s, 0x7e);
	be32(s, 2);
}

/*
 * A record: a page of content (or a zero record if page is NULL), named
 * for block, or continued if block is NULL.  Into out unless dropped.
 */
static void
rec(struct sb *in, struct sb *out, int dropped, uint64_t off,
    const char *block, const uint8_t *page)
{
	struct sb	*s[2] = { in, out };
	int		 i;

	for (i = 0; i < (dropped ? 1 : 2); i++) {
		be64(s[i], off | (page != NULL ? 0x08 : 0x02) |
		    (block == NULL ? 0x20 : 0));
		if (block != NULL)
			str(s[i], block);
		if (page != NULL)
			put(s[i], page, PG);
		else
			u8(s[i], 0);
	}
}

static void
both(struct sb *in, struct sb *out, void (*f)(struct sb *))
{
	f(in);
	f(out);
}

static void
part(struct sb *s)
{
	section(s, 0x02);
}

static void
end(struct sb *s)
{
	section(s, 0x03);
}

/* A device section after ram's, and the end of the stream. */
static void
tail(struct sb *s)
{
	u8(s, 0x04);
	be32(s, 3);
	str(s, "timer");
	be32(s, 0);
	be32(s, 2);
	put(s, "\x01\x02\x03\x7e\x00\x00\x00\x03", 8);
	u8(s, 0x00);
}

static int
sink(void *arg, const uint8_t *p, size_t n)
{
	put(arg, p, n);
	return 0;
}

static int
sink_fails(void *arg, const uint8_t *p, size_t n)
{
	return -1;
}

/* The stream through a new filter, in feeds of step bytes. */
static struct sb *
run(const struct sb *in, size_t step, uint64_t *dropped)
{
	static struct sb	 out;
	struct ramdiff		*rd;
	size_t			 at, n;

	memset(&out, 0, sizeof(out));
	cr_assert_not_null(rd = ramdiff_new(file, sizeof(file), "pc.ram"));
	ramdiff_data(rd, 0, 2 * PG);
	ramdiff_data(rd, 3 * PG, PG);
	for (at = 0; at < in->n; at += n) {
		n = in->n - at < step ? in->n - at : step;
		cr_assert_eq(ramdiff_feed(rd, in->b + at, n, sink, &out), 0);
	}
	cr_assert_eq(ramdiff_end(rd, sink, &out), 0);
	*dropped = ramdiff_dropped(rd);
	ramdiff_free(rd);
	return &out;
}

static void
setup(void)
{
	memset(file, 'A', PG);
	memset(file + PG, 'B', PG);
	memset(file + 2 * PG, 0, PG);
	memset(file + 3 * PG, 'D', PG);
	memset(page_x, 'X', PG);
}

static void
expect(const struct sb *in, const struct sb *want, uint64_t ndropped)
{
	static const size_t	 steps[] = { 1, 7, 4096, 4097, 1 << 20 };
	const struct sb		*out;
	uint64_t		 dropped;
	size_t			 i;

	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		out = run(in, steps[i], &dropped);
		cr_assert_eq(out->n, want->n, "feeds of %zu: %zu bytes, not "
		    "%zu", steps[i], out->n, want->n);
		cr_assert(memcmp(out->b, want->b, want->n) == 0,
		    "feeds of %zu: other bytes", steps[i]);
		cr_assert_eq(dropped, ndropped, "feeds of %zu", steps[i]);
	}
}

Test(ramdiff, drops_what_the_file_holds_once, .init = setup)
{
	static struct sb	 in, out;

	header(&in, NULL);
	header(&out, NULL);
	ram_start(&in, PG);
	ram_start(&out, PG);
	both(&in, &out, part);
	rec(&in, &out, 0, 0, "pc.ram", file);		/* names: kept */
	rec(&in, &out, 1, PG, NULL, file + PG);		/* the file's */
	rec(&in, &out, 0, 3 * PG, NULL, page_x);	/* changed */
	rec(&in, &out, 1, 2 * PG, NULL, NULL);		/* zero, a hole */
	rec(&in, &out, 0, PG, "other", file + PG);	/* another block */
	rec(&in, &out, 0, 0, NULL, file);		/* other's, so kept */
	rec(&in, &out, 0, PG, "pc.ram", NULL);		/* zero, data */
	both(&in, &out, eos);
	both(&in, &out, end);
	rec(&in, &out, 0, 3 * PG, NULL, file + 3 * PG);	/* kept before */
	rec(&in, &out, 0, 0, NULL, file);		/* kept before */
	rec(&in, &out, 1, 2 * PG, NULL, NULL);		/* a hole, again */
	both(&in, &out, eos);
	both(&in, &out, tail);
	expect(&in, &out, 3);
}

/* Two pages the file holds, after what makes the filter give up. */
static void
pages_pass_whole(struct sb *in)
{
	part(in);
	rec(in, NULL, 1, 0, "pc.ram", file);
	rec(in, NULL, 1, PG, NULL, file + PG);
	eos(in);
	tail(in);
	expect(in, in, 0);
}

Test(ramdiff, x_ignore_shared_passes_whole, .init = setup)
{
	static struct sb	 in;

	header(&in, "x-ignore-shared");
	ram_start(&in, PG);
	pages_pass_whole(&in);
}

Test(ramdiff, an_unknown_record_passes_the_rest, .init = setup)
{
	static struct sb	 in, out;

	header(&in, "postcopy-ram");
	header(&out, "postcopy-ram");
	ram_start(&in, PG);
	ram_start(&out, PG);
	both(&in, &out, part);
	rec(&in, &out, 0, 0, "pc.ram", file);
	rec(&in, &out, 1, PG, NULL, file + PG);
	/* XBZRLE: not understood, so neither is anything after it. */
	be64(&in, 3 * PG | 0x40 | 0x20);
	be64(&out, 3 * PG | 0x40 | 0x20);
	rec(&in, &out, 0, PG, NULL, file + PG);
	both(&in, &out, eos);
	both(&in, &out, tail);
	expect(&in, &out, 1);
}

Test(ramdiff, blocks_that_do_not_add_up_pass_whole, .init = setup)
{
	static struct sb	 in;

	header(&in, NULL);
	ram_start(&in, 2 * PG);		/* longer than the size says */
	pages_pass_whole(&in);
}

Test(ramdiff, not_a_stream_passes_whole, .init = setup)
{
	static struct sb	 in;

	put(&in, "QEVM\0\0\0\2", 8);
	rec(&in, NULL, 1, PG, NULL, file + PG);
	expect(&in, &in, 0);
}

Test(ramdiff, a_failing_sink_fails_the_feed, .init = setup)
{
	static struct sb	 in;
	struct ramdiff		*rd;

	header(&in, NULL);
	cr_assert_not_null(rd = ramdiff_new(file, sizeof(file), "pc.ram"));
	cr_assert_eq(ramdiff_feed(rd, in.b, in.n, sink_fails, NULL), -1);
	ramdiff_free(rd);
	cr_assert_null(ramdiff_new(file, 100, "pc.ram"));
	cr_assert_null(ramdiff_new(file, 0, "pc.ram"));
}
