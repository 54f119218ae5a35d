/*
 * Streaming a result that came by descriptor (msg_front.h) to an HTTP
 * client, encoded as it is read (base64, or text as a JSON string's
 * body), one bounded piece at a time.
 */
#ifndef MCVM_FRONTD_PAYLOAD_H
#define MCVM_FRONTD_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "http.h"

#define PAYLOAD_CHUNK		(48 * 1024)	/* bytes read at a time */
#define PAYLOAD_TEXT_CHUNK	(8 * 1024)	/* the same, for text */
#define PAYLOAD_PIPE_MS		(30 * 1000)	/* a pipe's whole result */
#define PAYLOAD_ERR_MAX		160

/* How the descriptor's bytes are written. */
enum payload_enc {
	PAYLOAD_BASE64,		/* base64 */
	PAYLOAD_TEXT		/* UTF-8 text, escaped for a JSON string */
};

struct payload;

/* err is NULL when the whole result was written, else why not. */
typedef void	(*payload_done_cb)(void *, const char *err);

int	 payload_check(int, uint64_t, size_t, int *, char *, size_t);
struct payload *payload_stream(struct event_base *, struct http_conn *,
	    int, int, enum payload_enc, uint64_t, const char *, size_t,
	    const char *, size_t, unsigned int, payload_done_cb, void *);
void	 payload_cancel(struct payload *);

#endif
