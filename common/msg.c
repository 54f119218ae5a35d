/*
 * Typed payload fields: see msg.h.  Every reader returns -1 with errno
 * EBADMSG on a wrong tag, a short payload or a malformed value, and leaves
 * the reader unchanged, so callers decide whether that is fatal.
 */
#include <errno.h>
#include <string.h>

#include "msg.h"
#include "validate.h"

void
m_add_u32(struct ibuf *b, uint32_t v)
{
	uint8_t	 buf[5];

	buf[0] = MF_U32;
	le32_put(buf + 1, v);
	imsg_add(b, buf, sizeof(buf));
}

void
m_add_u64(struct ibuf *b, uint64_t v)
{
	uint8_t	 buf[9];

	buf[0] = MF_U64;
	le64_put(buf + 1, v);
	imsg_add(b, buf, sizeof(buf));
}

static void
m_add_blob(struct ibuf *b, uint8_t tag, const void *data, size_t len)
{
	uint8_t	 buf[5];

	if (len > IMSG_MAX_PAYLOAD) {
		b->err = EMSGSIZE;
		return;
	}
	buf[0] = tag;
	le32_put(buf + 1, (uint32_t)len);
	imsg_add(b, buf, sizeof(buf));
	imsg_add(b, data, len);
}

/* NULL goes out as "". */
void
m_add_str(struct ibuf *b, const char *s)
{
	if (s == NULL)
		s = "";
	m_add_blob(b, MF_STR, s, strlen(s) + 1);
}

void
m_add_bytes(struct ibuf *b, const void *data, size_t len)
{
	m_add_blob(b, MF_BYTES, data, len);
}

void
m_init(struct mreader *r, const struct imsg *imsg)
{
	m_init_buf(r, imsg->data, imsg->datalen);
}

void
m_init_buf(struct mreader *r, const void *data, size_t len)
{
	r->p = data;
	r->left = data != NULL ? len : 0;
}

/* A malformed field: -1, errno EBADMSG. */
int
m_fail(void)
{
	errno = EBADMSG;
	return -1;
}

static int
m_get_fixed(struct mreader *r, uint8_t tag, const uint8_t **val, size_t len)
{
	if (r->left < 1 + len || r->p[0] != tag)
		return m_fail();
	*val = r->p + 1;
	r->p += 1 + len;
	r->left -= 1 + len;
	return 0;
}

int
m_get_u32(struct mreader *r, uint32_t *v)
{
	const uint8_t	*p;

	if (m_get_fixed(r, MF_U32, &p, 4) == -1)
		return -1;
	*v = le32_get(p);
	return 0;
}

int
m_get_u64(struct mreader *r, uint64_t *v)
{
	const uint8_t	*p;

	if (m_get_fixed(r, MF_U64, &p, 8) == -1)
		return -1;
	*v = le64_get(p);
	return 0;
}

static int
m_get_blob(struct mreader *r, uint8_t tag, const uint8_t **data,
    size_t *len, size_t max)
{
	size_t	 n;

	if (r->left < 5 || r->p[0] != tag)
		return m_fail();
	n = le32_get(r->p + 1);
	if (n > r->left - 5 || n > max)
		return m_fail();
	*data = r->p + 5;
	*len = n;
	r->p += 5 + n;
	r->left -= 5 + n;
	return 0;
}

/*
 * A string of at most max bytes before its NUL.  The pointer refers into
 * the message and lives as long as it does.
 */
int
m_get_str(struct mreader *r, const char **s, size_t max)
{
	struct mreader	 saved = *r;
	const uint8_t	*p;
	size_t		 len;

	if (m_get_blob(r, MF_STR, &p, &len, max + 1) == -1)
		return -1;
	if (len == 0 || p[len - 1] != '\0' || memchr(p, '\0', len - 1)) {
		*r = saved;
		return m_fail();
	}
	*s = (const char *)p;
	return 0;
}

int
m_get_bytes(struct mreader *r, const void **data, size_t *len, size_t max)
{
	const uint8_t	*p;

	if (m_get_blob(r, MF_BYTES, &p, len, max) == -1)
		return -1;
	*data = p;
	return 0;
}

/* Bytes whose length must be exactly len, copied out. */
int
m_get_bytes_exact(struct mreader *r, void *dst, size_t len)
{
	struct mreader	 saved = *r;
	const void	*p;
	size_t		 n;

	if (m_get_bytes(r, &p, &n, len) == -1)
		return -1;
	if (n != len) {
		*r = saved;
		return m_fail();
	}
	memcpy(dst, p, len);
	return 0;
}

/* 0 when the whole payload was consumed, -1 when bytes are left over. */
int
m_end(const struct mreader *r)
{
	if (r->left != 0)
		return m_fail();
	return 0;
}

/* A reader over an imsg that must be of the given type. */
int
m_open(struct mreader *r, const struct imsg *imsg, uint32_t type)
{
	if (imsg->hdr.type != type) {
		m_init_buf(r, NULL, 0);
		return m_fail();
	}
	m_init(r, imsg);
	return 0;
}

/* 0 for an imsg of the given type without payload. */
int
m_empty(const struct imsg *imsg, uint32_t type)
{
	if (imsg->hdr.type != type || imsg->datalen != 0)
		return m_fail();
	return 0;
}

/* A u32 that must be 0 or 1. */
int
m_get_flag(struct mreader *r, uint32_t *v)
{
	struct mreader	 saved = *r;

	if (m_get_u32(r, v) == -1)
		return -1;
	if (*v > 1) {
		*r = saved;
		return m_fail();
	}
	return 0;
}

/* A VM id ("vm-" and ID_HEX_LEN hex digits), pointing into the message. */
int
m_get_vm_id(struct mreader *r, const char **id)
{
	if (m_get_str(r, id, ID_MAX) == -1)
		return -1;
	if (!valid_id(*id, VM_ID_PREFIX))
		return m_fail();
	return 0;
}
