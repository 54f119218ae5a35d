/*
 * Typed fields: each type round-trips; a wrong tag, a truncated value, a
 * string without its NUL or with one inside, and leftovers are refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "imsg.h"
#include "msg.h"

static struct imsgbuf	 ib;

static void
setup(void)
{
	cr_assert_eq(imsgbuf_init(&ib, -1), 0);
}

static void
teardown(void)
{
	imsgbuf_clear(&ib);
}

TestSuite(msg, .init = setup, .fini = teardown);

/* The payload of a built message, without its header. */
static struct ibuf *
build(void)
{
	struct ibuf	*b = imsg_create(&ib, 1, 0, 0, 0);

	cr_assert_not_null(b);
	return b;
}

static void
reader(struct mreader *r, struct ibuf *b)
{
	m_init_buf(r, b->buf + IMSG_HDR_SIZE, b->size - IMSG_HDR_SIZE);
}

static void
done(struct ibuf *b)
{
	cr_assert_eq(imsg_close(&ib, b), 0);
}

Test(msg, roundtrip_all_types)
{
	struct ibuf	*b = build();
	struct mreader	 r;
	uint32_t	 u32;
	uint64_t	 u64;
	const char	*s;
	const void	*p;
	size_t		 len;
	uint8_t		 exact[4];

	m_add_u32(b, 0xdeadbeef);
	m_add_u64(b, 0x0123456789abcdefULL);
	m_add_str(b, "workspace");
	m_add_str(b, "");
	m_add_bytes(b, "\0\1\2", 3);
	m_add_bytes(b, "abcd", 4);
	reader(&r, b);
	cr_assert_eq(m_get_u32(&r, &u32), 0);
	cr_assert_eq(u32, 0xdeadbeef);
	cr_assert_eq(m_get_u64(&r, &u64), 0);
	cr_assert_eq(u64, 0x0123456789abcdefULL);
	cr_assert_eq(m_get_str(&r, &s, 64), 0);
	cr_assert_str_eq(s, "workspace");
	cr_assert_eq(m_get_str(&r, &s, 64), 0);
	cr_assert_str_eq(s, "");
	cr_assert_eq(m_get_bytes(&r, &p, &len, 16), 0);
	cr_assert_eq(len, 3);
	cr_assert_eq(memcmp(p, "\0\1\2", 3), 0);
	cr_assert_eq(m_get_bytes_exact(&r, exact, 4), 0);
	cr_assert_eq(memcmp(exact, "abcd", 4), 0);
	cr_assert_eq(m_end(&r), 0);
	done(b);
}

/* Little-endian on the wire, whatever the host. */
Test(msg, encoding_is_little_endian)
{
	struct ibuf	*b = build();
	const uint8_t	*p;

	m_add_u32(b, 0x01020304);
	p = b->buf + IMSG_HDR_SIZE;
	cr_assert_eq(p[0], MF_U32);
	cr_assert_eq(p[1], 0x04);
	cr_assert_eq(p[4], 0x01);
	done(b);
}

Test(msg, wrong_type)
{
	struct ibuf	*b = build();
	struct mreader	 r;
	uint64_t	 u64;
	const char	*s;

	m_add_u32(b, 1);
	reader(&r, b);
	cr_assert_eq(m_get_u64(&r, &u64), -1);
	cr_assert_eq(errno, EBADMSG);
	cr_assert_eq(m_get_str(&r, &s, 10), -1);
	/* A failed read consumes nothing. */
	cr_assert_eq(r.left, 5);
	done(b);
}

Test(msg, truncated)
{
	struct ibuf	*b = build();
	struct mreader	 r;
	uint32_t	 u32;
	const char	*s;

	m_add_u32(b, 1);
	m_add_str(b, "hello");
	m_init_buf(&r, b->buf + IMSG_HDR_SIZE, 4);
	cr_assert_eq(m_get_u32(&r, &u32), -1);
	/* The string's length claims more than the payload holds. */
	m_init_buf(&r, b->buf + IMSG_HDR_SIZE + 5, 5 + 3);
	cr_assert_eq(m_get_str(&r, &s, 64), -1);
	m_init_buf(&r, b->buf + IMSG_HDR_SIZE + 5, 3);
	cr_assert_eq(m_get_str(&r, &s, 64), -1);
	done(b);
}

Test(msg, string_without_nul)
{
	struct ibuf	*b = build();
	struct mreader	 r;
	const char	*s;

	m_add_bytes(b, "abc", 3);
	/* Same layout as a string, with the tag changed. */
	b->buf[IMSG_HDR_SIZE] = MF_STR;
	reader(&r, b);
	cr_assert_eq(m_get_str(&r, &s, 64), -1);
	cr_assert_eq(r.left, 8);
	done(b);
}

Test(msg, string_with_inner_nul)
{
	struct ibuf	*b = build();
	struct mreader	 r;
	const char	*s;

	m_add_bytes(b, "ab\0c\0", 5);
	b->buf[IMSG_HDR_SIZE] = MF_STR;
	reader(&r, b);
	cr_assert_eq(m_get_str(&r, &s, 64), -1);
	done(b);
}

Test(msg, empty_string_field_refused)
{
	struct ibuf	*b = build();
	struct mreader	 r;
	const char	*s;

	m_add_bytes(b, "", 0);
	b->buf[IMSG_HDR_SIZE] = MF_STR;
	reader(&r, b);
	cr_assert_eq(m_get_str(&r, &s, 64), -1);
	done(b);
}

Test(msg, string_over_max)
{
	struct ibuf	*b = build();
	struct mreader	 r;
	const char	*s;

	m_add_str(b, "0123456789");
	reader(&r, b);
	cr_assert_eq(m_get_str(&r, &s, 9), -1);
	cr_assert_eq(m_get_str(&r, &s, 10), 0);
	done(b);
}

Test(msg, bytes_exact_length)
{
	struct ibuf	*b = build();
	struct mreader	 r;
	uint8_t		 out[4];

	m_add_bytes(b, "abc", 3);
	reader(&r, b);
	cr_assert_eq(m_get_bytes_exact(&r, out, 4), -1);
	cr_assert_eq(m_get_bytes_exact(&r, out, 2), -1);
	cr_assert_eq(m_get_bytes_exact(&r, out, 3), 0);
	done(b);
}

Test(msg, leftovers)
{
	struct ibuf	*b = build();
	struct mreader	 r;
	uint32_t	 u32;

	m_add_u32(b, 1);
	m_add_u32(b, 2);
	reader(&r, b);
	cr_assert_eq(m_get_u32(&r, &u32), 0);
	cr_assert_eq(m_end(&r), -1);
	cr_assert_eq(m_get_u32(&r, &u32), 0);
	cr_assert_eq(m_end(&r), 0);
	done(b);
}

Test(msg, empty_payload)
{
	struct mreader	 r;
	uint32_t	 u32;

	m_init_buf(&r, NULL, 0);
	cr_assert_eq(m_get_u32(&r, &u32), -1);
	cr_assert_eq(m_end(&r), 0);
}
