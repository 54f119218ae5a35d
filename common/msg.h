/*
 * Typed payload fields for imsg messages, in the manner of OpenSMTPD's
 * mproc: writers append a tag and a value, readers check the tag and the
 * exact length, and no payload is ever cast to a struct.
 *
 * Encoding (little-endian): u8 tag, then
 *	MF_U32	 4 bytes
 *	MF_U64	 8 bytes
 *	MF_STR	 u32 length (terminating NUL included), bytes; the last byte
 *		 must be the only NUL
 *	MF_BYTES u32 length, bytes
 */
#ifndef MCVM_MSG_H
#define MCVM_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "imsg.h"

enum mfield_tag {
	MF_U32 = 1,
	MF_U64,
	MF_STR,
	MF_BYTES,
};

struct mreader {
	const uint8_t	*p;
	size_t		 left;
};

void	 m_add_u32(struct ibuf *, uint32_t);
void	 m_add_u64(struct ibuf *, uint64_t);
void	 m_add_str(struct ibuf *, const char *);
void	 m_add_bytes(struct ibuf *, const void *, size_t);

void	 m_init(struct mreader *, const struct imsg *);
void	 m_init_buf(struct mreader *, const void *, size_t);
int	 m_get_u32(struct mreader *, uint32_t *);
int	 m_get_u64(struct mreader *, uint64_t *);
int	 m_get_str(struct mreader *, const char **, size_t);
int	 m_get_bytes(struct mreader *, const void **, size_t *, size_t);
int	 m_get_bytes_exact(struct mreader *, void *, size_t);
int	 m_end(const struct mreader *);

/* For the codecs (msg_*.c): the imsg's type checked first. */
int	 m_open(struct mreader *, const struct imsg *, uint32_t);
int	 m_empty(const struct imsg *, uint32_t);
int	 m_get_flag(struct mreader *, uint32_t *);
int	 m_get_vm_id(struct mreader *, const char **);
int	 m_fail(void);

static inline void
le32_put(uint8_t *p, uint32_t v)
{
	p[0] = v & 0xff;
	p[1] = (v >> 8) & 0xff;
	p[2] = (v >> 16) & 0xff;
	p[3] = (v >> 24) & 0xff;
}

static inline uint32_t
le32_get(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static inline void
le64_put(uint8_t *p, uint64_t v)
{
	le32_put(p, (uint32_t)v);
	le32_put(p + 4, (uint32_t)(v >> 32));
}

static inline uint64_t
le64_get(const uint8_t *p)
{
	return (uint64_t)le32_get(p) | (uint64_t)le32_get(p + 4) << 32;
}

#endif
