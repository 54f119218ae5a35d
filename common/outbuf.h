/*
 * Retained job output: of each stream, its first bytes (the head) and
 * its last bytes (the tail), each up to a bound.  What falls between
 * them is counted and dropped, never blocking the writer, and a reader
 * is told where and how much.
 */
#ifndef MCVM_OUTBUF_H
#define MCVM_OUTBUF_H

#include <stddef.h>
#include <stdint.h>

#define OUT_STDOUT	0
#define OUT_STDERR	1
#define OUT_NSTREAMS	2
#define OUT_CHUNK_MIN	4096	/* first allocation of a buffer */

struct outstream {
	uint8_t		*head;		/* the first head_len bytes */
	size_t		 head_len;
	size_t		 head_cap;
	int		 head_done;	/* bytes went past it: it is fixed */
	uint8_t		*tail;		/* a ring of the last tail_len bytes */
	size_t		 tail_len;
	size_t		 tail_cap;
	size_t		 tail_off;	/* the oldest byte's index */
	uint64_t	 total;		/* every byte the job wrote */
	int		 eof;
};

struct outbuf {
	struct outstream s[OUT_NSTREAMS];
	size_t		 head_max;	/* per stream */
	size_t		 tail_max;	/* per stream */
};

void	 outbuf_init(struct outbuf *, size_t, size_t);
void	 outbuf_free(struct outbuf *);
void	 outbuf_append(struct outbuf *, int, const uint8_t *, size_t);
void	 outbuf_gap(const struct outbuf *, int, uint64_t *, uint64_t *);
size_t	 outbuf_page(const struct outbuf *, int, uint64_t, size_t,
	    uint8_t *, uint64_t *);

#endif
