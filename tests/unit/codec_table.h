/*
 * One entry per message type for test_codec.c, in tables per peer group
 * (codec_*.c).  fill sets every field at its largest size; over sets
 * the i-th bound of a filled message one past it and returns -1 when
 * there is no i-th; check, when set, looks at what was read back.
 */
#ifndef MCVM_TEST_CODEC_TABLE_H
#define MCVM_TEST_CODEC_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "imsg.h"

struct codec {
	uint32_t	 type;
	size_t		 size;		/* of the struct; 0: no fields */
	void		(*fill)(void *);
	void		(*put)(struct ibuf *, const void *);
	int		(*get)(struct imsg *, void *);
	int		(*get0)(struct imsg *);
	int		(*over)(void *, int);
	void		(*check)(const void *);
};

#define CODEC_WRAP(name)						\
static void								\
put_##name(struct ibuf *b, const void *m)				\
{									\
	msg_##name##_put(b, m);						\
}									\
static int								\
get_##name(struct imsg *imsg, void *m)					\
{									\
	return msg_##name##_get(imsg, m);				\
}

#define CODEC(type, name, fill, over)					\
	{ type, sizeof(struct msg_##name), fill, put_##name, get_##name,\
	    NULL, over, NULL }
#define CODEC0(type, name)						\
	{ type, 0, NULL, NULL, NULL, msg_##name##_get, NULL, NULL }
#define CODEC_END	{ IMSG_NONE, 0, NULL, NULL, NULL, NULL, NULL, NULL }

const char	*codec_str(size_t);
const void	*codec_bytes(size_t);

extern const struct codec	 codec_vmm[];
extern const struct codec	*const codec_tables[];

#endif
