/*
 * Retained job output: the first bytes of stdout and stderr, up to a
 * budget shared by both streams.  Bytes past the budget are counted and
 * dropped, never blocking the writer.
 */
#ifndef MCVM_GUESTD_OUTBUF_H
#define MCVM_GUESTD_OUTBUF_H

#include <stddef.h>
#include <stdint.h>

#define OUT_STDOUT	0
#define OUT_STDERR	1
#define OUT_NSTREAMS	2
#define OUT_CHUNK_MIN	4096	/* first allocation of a stream */

struct outstream {
	uint8_t		*data;
	size_t		 len;		/* retained */
	size_t		 cap;
	uint64_t	 total;		/* every byte the job wrote */
	int		 eof;
};

struct outbuf {
	struct outstream s[OUT_NSTREAMS];
	size_t		 budget;	/* bytes retained across streams */
	int		 truncated;
};

void	 outbuf_init(struct outbuf *, size_t);
void	 outbuf_free(struct outbuf *);
size_t	 outbuf_append(struct outbuf *, int, const uint8_t *, size_t);
size_t	 outbuf_retained(const struct outbuf *);
size_t	 outbuf_page(const struct outbuf *, int, uint64_t, size_t,
	    const uint8_t **);

#endif
