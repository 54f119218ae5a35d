/*
 * The message codecs (common/msg_*.h), as one table over the message
 * list: each message is filled at its largest field sizes, put, checked
 * to fit one imsg, read back and put again to the same bytes.  Each
 * getter refuses the payload cut short, with a field more, under another
 * type, and with a field past its bound.  A type of IMSG_TYPES without
 * an entry here fails the completeness test.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "imsg.h"
#include "msg.h"
#include "msg_vmm.h"
#include "proto.h"
#include "tools.h"
#include "codec_table.h"

const struct codec	*const codec_tables[] = {
	codec_vmm,
	NULL
};

#define POOL_MAX	(TOOL_RESULT_MAX + 1)

static char		 pool[POOL_MAX + 1];
static uint8_t		 bytes[POOL_MAX];

/* A string of n bytes; all share the pool's end. */
const char *
codec_str(size_t n)
{
	cr_assert_leq(n, POOL_MAX);
	return pool + POOL_MAX - n;
}

const void *
codec_bytes(size_t n)
{
	cr_assert_leq(n, sizeof(bytes));
	return bytes;
}

static void
pool_init(void)
{
	size_t	 i;

	if (pool[0] != '\0')
		return;
	memset(pool, 'a', POOL_MAX);
	pool[POOL_MAX] = '\0';
	for (i = 0; i < sizeof(bytes); i++)
		bytes[i] = (uint8_t)(i * 7 + 1);
}

static const struct codec *
codec_find(uint32_t type)
{
	const struct codec	*const *t;
	const struct codec	*c;

	for (t = codec_tables; *t != NULL; t++)
		for (c = *t; c->type != IMSG_NONE; c++)
			if (c->type == type)
				return c;
	return NULL;
}

static const uint32_t	 all_types[] = {
#define ALL_TYPE(name, val, reply)	name,
	IMSG_TYPES(ALL_TYPE)
#undef ALL_TYPE
};
#define ALL_TYPES_N	(sizeof(all_types) / sizeof(all_types[0]))

static struct imsgbuf	 ib;

static void
setup(void)
{
	pool_init();
	cr_assert_eq(imsgbuf_init(&ib, -1), 0);
}

static void
teardown(void)
{
	imsgbuf_clear(&ib);
}

TestSuite(codec, .init = setup, .fini = teardown);

/* Puts m as c's message; extra adds a u32 after it. */
static struct ibuf *
encode(const struct codec *c, const void *m, int extra)
{
	struct ibuf	*b;

	cr_assert_not_null(b = imsg_create(&ib, c->type, 0, 0, 0));
	if (c->put != NULL)
		c->put(b, m);
	if (extra)
		m_add_u32(b, 0);
	return b;
}

static void
as_imsg(struct imsg *imsg, struct ibuf *b, uint32_t type, size_t cut)
{
	memset(imsg, 0, sizeof(*imsg));
	imsg->hdr.type = type;
	imsg->fd = -1;
	imsg->data = b->buf + IMSG_HDR_SIZE;
	imsg->datalen = b->size - IMSG_HDR_SIZE - cut;
	imsg->hdr.len = (uint32_t)(IMSG_HDR_SIZE + imsg->datalen);
}

static int
decode(const struct codec *c, struct imsg *imsg, void *out)
{
	errno = 0;
	if (c->size == 0)
		return c->get0(imsg);
	return c->get(imsg, out);
}

static void *
filled(const struct codec *c)
{
	void	*m = NULL;

	if (c->size != 0) {
		cr_assert_not_null(m = calloc(1, c->size));
		c->fill(m);
	}
	return m;
}

static void
check_roundtrip(const struct codec *c)
{
	struct ibuf	*b, *b2;
	struct imsg	 imsg;
	void		*m = filled(c), *back = NULL;
	const char	*name = imsg_type_name(c->type);

	b = encode(c, m, 0);
	cr_assert_eq(b->err, 0, "%s: put failed", name);
	cr_assert_leq(b->size - IMSG_HDR_SIZE, IMSG_MAX_PAYLOAD,
	    "%s: %zu bytes do not fit", name, b->size - IMSG_HDR_SIZE);
	if (c->size != 0)
		cr_assert_not_null(back = calloc(1, c->size));
	as_imsg(&imsg, b, c->type, 0);
	cr_assert_eq(decode(c, &imsg, back), 0, "%s: get refused", name);
	b2 = encode(c, back, 0);
	cr_assert_eq(b2->size, b->size, "%s: sizes differ", name);
	cr_assert_eq(memcmp(b2->buf + IMSG_HDR_SIZE, b->buf + IMSG_HDR_SIZE,
	    b->size - IMSG_HDR_SIZE), 0, "%s: bytes differ", name);
	if (c->check != NULL)
		c->check(back);
	imsg_discard(b2);

	/* Trailing bytes; another type. */
	b2 = encode(c, m, 1);
	as_imsg(&imsg, b2, c->type, 0);
	cr_assert_eq(decode(c, &imsg, back), -1, "%s: leftovers", name);
	cr_assert_eq(errno, EBADMSG);
	imsg_discard(b2);
	as_imsg(&imsg, b, c->type == IMSG_HELLO ? IMSG_VERBOSE : IMSG_HELLO,
	    0);
	cr_assert_eq(decode(c, &imsg, back), -1, "%s: wrong type", name);

	imsg_discard(b);
	free(back);
	free(m);
}

static void
check_truncated(const struct codec *c)
{
	struct ibuf	*b;
	struct imsg	 imsg;
	void		*m = filled(c), *back = NULL;
	size_t		 len, cut, step;

	b = encode(c, m, 0);
	len = b->size - IMSG_HDR_SIZE;
	if (c->size != 0)
		cr_assert_not_null(back = calloc(1, c->size));
	step = len / 97 + 1;
	for (cut = 1; cut <= len; cut = cut < 9 ? cut + 1 : cut + step) {
		as_imsg(&imsg, b, c->type, cut);
		cr_assert_eq(decode(c, &imsg, back), -1,
		    "%s: %zu of %zu bytes accepted", imsg_type_name(c->type),
		    len - cut, len);
	}
	imsg_discard(b);
	free(back);
	free(m);
}

static void
check_over(const struct codec *c)
{
	struct ibuf	*b;
	struct imsg	 imsg;
	void		*m, *back;
	int		 i;

	for (i = 0; c->over != NULL; i++) {
		m = filled(c);
		if (c->over(m, i) == -1) {
			free(m);
			break;
		}
		b = encode(c, m, 0);
		cr_assert_not_null(back = calloc(1, c->size));
		if (b->err == 0) {
			as_imsg(&imsg, b, c->type, 0);
			cr_assert_eq(decode(c, &imsg, back), -1,
			    "%s: bound %d not checked",
			    imsg_type_name(c->type), i);
		}
		imsg_discard(b);
		free(back);
		free(m);
	}
}

Test(codec, every_type_has_an_entry)
{
	size_t	 i;

	for (i = 0; i < ALL_TYPES_N; i++)
		if (all_types[i] >= IMSG_VMM_READY)
		cr_expect_not_null(codec_find(all_types[i]),
		    "%s has no codec entry", imsg_type_name(all_types[i]));
}

Test(codec, entries_are_messages)
{
	const struct codec	*const *t;
	const struct codec	*c;
	size_t			 i;

	for (t = codec_tables; *t != NULL; t++)
		for (c = *t; c->type != IMSG_NONE; c++) {
			for (i = 0; i < ALL_TYPES_N; i++)
				if (all_types[i] == c->type)
					break;
			cr_assert_lt(i, ALL_TYPES_N, "%u is no type", c->type);
			cr_assert(c->size == 0 ? c->get0 != NULL :
			    c->get != NULL && c->put != NULL &&
			    c->fill != NULL);
		}
}

Test(codec, roundtrip_at_largest)
{
	const struct codec	*const *t;
	const struct codec	*c;

	for (t = codec_tables; *t != NULL; t++)
		for (c = *t; c->type != IMSG_NONE; c++)
			check_roundtrip(c);
}

Test(codec, truncated_refused)
{
	const struct codec	*const *t;
	const struct codec	*c;

	for (t = codec_tables; *t != NULL; t++)
		for (c = *t; c->type != IMSG_NONE; c++)
			check_truncated(c);
}

Test(codec, over_bound_refused)
{
	const struct codec	*const *t;
	const struct codec	*c;

	for (t = codec_tables; *t != NULL; t++)
		for (c = *t; c->type != IMSG_NONE; c++)
			check_over(c);
}

/* Each request's reply is a type of the list; no reply is a request. */
Test(codec, reply_types)
{
	size_t		 i;
	uint32_t	 reply;

	cr_assert_eq(imsg_reply_type(IMSG_VMM_EXEC), IMSG_VMM_JOB);
	cr_assert_eq(imsg_reply_type(IMSG_VMM_JOB), IMSG_NONE);
	cr_assert_eq(imsg_reply_type(99999), IMSG_NONE);
	for (i = 0; i < ALL_TYPES_N; i++) {
		if ((reply = imsg_reply_type(all_types[i])) == IMSG_NONE)
			continue;
		cr_assert_neq(strcmp(imsg_type_name(reply), "IMSG_UNKNOWN"),
		    0);
		cr_assert_eq(imsg_reply_type(reply), IMSG_NONE, "%s",
		    imsg_type_name(reply));
	}
}
