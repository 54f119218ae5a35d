/*
 * A result that came by descriptor, streamed to the client: the answer's
 * head (JSON up to the opening quote of the content block's data or
 * text), the descriptor's bytes as they are read, in base64 or as the
 * body of a JSON string, then its tail.  frontd holds one piece at a
 * time: the next is read only when the last has gone to the client, a
 * pipe is read only when it is readable, and nothing waits on a
 * descriptor in the event loop.
 *
 * Text is UTF-8, decoded as it is read (utf8_decode): a character cut at
 * the end of a piece is carried to the next, and bytes that are not
 * UTF-8 (or a character cut by the result's end) each become U+FFFD, as
 * in a job's output, so that the answer is always valid JSON.  Whether
 * text is valid cannot be known before the answer starts without
 * reading a pipe whole, so it is replaced, not refused.  Quotes,
 * backslashes and control characters are escaped (RFC 8259).
 *
 * What can be checked before the answer starts is (payload_check): the
 * tool's budget, a descriptor that is readable, a file that holds exactly
 * the bytes announced, or a pipe.  What only shows later (a file or pipe
 * that ends early or goes on past its size, a pipe that is too slow)
 * ends that connection without the answer's last chunk, so that the
 * client sees a broken answer for that call, never a short one that
 * looks whole.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "b64.h"
#include "log.h"
#include "payload.h"
#include "utf8.h"

/* Escaped text goes out in pieces of this; one escape is at most 6 bytes. */
#define PAYLOAD_ESC_MAX		(16 * 1024)

struct payload {
	struct http_conn	*conn;
	int			 fd;
	int			 is_pipe;
	enum payload_enc	 enc;
	size_t			 chunk;		/* bytes read at a time */
	int			 replaced;	/* text was not UTF-8 */
	uint64_t		 size;
	uint64_t		 done;		/* bytes read */
	char			*tail;
	size_t			 taillen;
	struct event		*rev;		/* a pipe's readability */
	struct event		*timer;		/* a pipe's deadline */
	struct event		*kick;		/* the first piece */
	payload_done_cb		 cb;
	void			*arg;
	size_t			 nraw;		/* read, not yet encoded */
	uint8_t			 raw[PAYLOAD_CHUNK];
	union {
		char		 b64[B64_ENCODED_LEN(PAYLOAD_CHUNK) + 1];
		struct {
			char	 dec[UTF8_DECODED_MAX(PAYLOAD_TEXT_CHUNK)];
			char	 esc[PAYLOAD_ESC_MAX];
		}		 text;
	}			 out;
};

static void	payload_pump(struct payload *);

/*
 * Checks a result's descriptor before its answer starts: size within the
 * tool's budget, readable, and a regular file (a memfd) of exactly size
 * bytes, rewound, or a pipe, made non-blocking (*is_pipe).  Returns 0,
 * or -1 with the reason in err, for the client.
 */
int
payload_check(int fd, uint64_t size, size_t budget, int *is_pipe,
    char *err, size_t errlen)
{
	struct stat	 st;
	int		 fl;

	*is_pipe = 0;
	if (size > budget) {
		(void)snprintf(err, errlen, "the result is %" PRIu64 " bytes, "
		    "over the %zu bytes this tool may return", size, budget);
		return -1;
	}
	if (fstat(fd, &st) == -1 || (fl = fcntl(fd, F_GETFL)) == -1 ||
	    (fl & O_ACCMODE) == O_WRONLY) {
		(void)snprintf(err, errlen, "internal error: the result "
		    "cannot be read");
		return -1;
	}
	if (S_ISREG(st.st_mode)) {
		if ((uint64_t)st.st_size != size) {
			(void)snprintf(err, errlen, "internal error: the "
			    "result holds %jd bytes, not the %" PRIu64
			    " announced", (intmax_t)st.st_size, size);
			return -1;
		}
		if (lseek(fd, 0, SEEK_SET) == -1) {
			(void)snprintf(err, errlen, "internal error: the "
			    "result cannot be read from its start");
			return -1;
		}
		return 0;
	}
	if (S_ISFIFO(st.st_mode)) {
		if (fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1) {
			(void)snprintf(err, errlen, "internal error: the "
			    "result's pipe cannot be read");
			return -1;
		}
		*is_pipe = 1;
		return 0;
	}
	(void)snprintf(err, errlen, "internal error: the result is neither "
	    "a file nor a pipe");
	return -1;
}

static void
payload_free(struct payload *p)
{
	if (p->rev != NULL)
		event_free(p->rev);
	if (p->timer != NULL)
		event_free(p->timer);
	if (p->kick != NULL)
		event_free(p->kick);
	if (p->conn != NULL)
		http_set_drain(p->conn, NULL, NULL);
	close(p->fd);
	free(p->tail);
	free(p);
}

/* The end, either way: the caller finishes or aborts the answer. */
static void
payload_end(struct payload *p, const char *err)
{
	payload_done_cb	 cb = p->cb;
	void		*arg = p->arg;

	payload_free(p);
	cb(arg, err);
}

static void
payload_fail(struct payload *p, const char *why)
{
	char	 err[PAYLOAD_ERR_MAX];

	(void)snprintf(err, sizeof(err), "%s after %" PRIu64 " of its %"
	    PRIu64 " bytes", why, p->done, p->size);
	log_warnx("a result by descriptor failed: %s", err);
	payload_end(p, err);
}

static void
payload_drained(void *arg)
{
	payload_pump(arg);
}

static void
payload_readable(evutil_socket_t fd, short ev, void *arg)
{
	payload_pump(arg);
}

static void
payload_deadline(evutil_socket_t fd, short ev, void *arg)
{
	struct payload	*p = arg;

	payload_fail(p, "the result did not arrive in time");
}

/* Encodes what was read, keeping up to two bytes for the next piece. */
static void
payload_write_b64(struct payload *p)
{
	size_t	 n, len;

	n = p->done == p->size ? p->nraw : p->nraw / 3 * 3;
	if (n == 0)
		return;
	len = b64_encode(p->raw, n, p->out.b64);
	http_stream_write(p->conn, p->out.b64, len);
	memmove(p->raw, p->raw + n, p->nraw - n);
	p->nraw -= n;
}

/* Writes s[0..len), valid UTF-8, escaped for the inside of a string. */
static void
payload_write_escaped(struct payload *p, const char *s, size_t len)
{
	static const char	 hex[] = "0123456789abcdef";
	char			*e = p->out.text.esc;
	size_t			 i, o = 0;
	uint8_t			 c;

	for (i = 0; i < len; i++) {
		if (o > sizeof(p->out.text.esc) - 6) {
			http_stream_write(p->conn, e, o);
			o = 0;
		}
		c = (uint8_t)s[i];
		if (c == '"' || c == '\\') {
			e[o++] = '\\';
			e[o++] = (char)c;
		} else if (c >= 0x20)
			e[o++] = (char)c;
		else {
			e[o++] = '\\';
			switch (c) {
			case '\b':
				e[o++] = 'b';
				break;
			case '\f':
				e[o++] = 'f';
				break;
			case '\n':
				e[o++] = 'n';
				break;
			case '\r':
				e[o++] = 'r';
				break;
			case '\t':
				e[o++] = 't';
				break;
			default:
				memcpy(e + o, "u00", 3);
				e[o + 3] = hex[c >> 4];
				e[o + 4] = hex[c & 0xf];
				o += 5;
				break;
			}
		}
	}
	if (o > 0)
		http_stream_write(p->conn, e, o);
}

/*
 * Decodes and writes what was read as text, keeping a character cut at
 * the piece's end (at most 3 bytes) for the next piece, unless the
 * result ends here.
 */
static void
payload_write_text(struct payload *p)
{
	size_t	 used, len;

	used = utf8_decode(p->raw, p->nraw, p->done == p->size,
	    p->out.text.dec, &len, &p->replaced);
	payload_write_escaped(p, p->out.text.dec, len);
	memmove(p->raw, p->raw + used, p->nraw - used);
	p->nraw -= used;
}

/*
 * Reads and writes the next piece when the last one has gone, until the
 * whole result is written and the descriptor is seen to end there.
 */
static void
payload_pump(struct payload *p)
{
	uint64_t	 want;
	ssize_t		 n;
	uint8_t		 extra;

	while (http_pending(p->conn) == 0) {
		if (p->done < p->size) {
			want = p->chunk - p->nraw;
			if (want > p->size - p->done)
				want = p->size - p->done;
			n = read(p->fd, p->raw + p->nraw, (size_t)want);
		} else
			n = read(p->fd, &extra, 1);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN && p->is_pipe) {
			event_add(p->rev, NULL);
			return;
		}
		if (n == -1) {
			payload_fail(p, "the result could not be read");
			return;
		}
		if (p->done == p->size) {
			if (n > 0) {
				payload_fail(p,
				    "the result went on past its end");
				return;
			}
			if (p->replaced)
				log_debug("a text result was not all UTF-8: "
				    "replaced");
			http_stream_write(p->conn, p->tail, p->taillen);
			payload_end(p, NULL);
			return;
		}
		if (n == 0) {
			payload_fail(p, "the result ended");
			return;
		}
		p->done += (uint64_t)n;
		p->nraw += (size_t)n;
		if (p->enc == PAYLOAD_TEXT)
			payload_write_text(p);
		else
			payload_write_b64(p);
	}
}

/*
 * Writes head, fd's size bytes encoded as enc says, and tail to the
 * stream c has started, then calls cb.  Takes fd (checked by
 * payload_check); head and tail are copied.  A pipe must deliver its bytes within deadline_ms.
 * Returns NULL, with fd closed, if memory is short.
 */
struct payload *
payload_stream(struct event_base *base, struct http_conn *c, int fd,
    int is_pipe, enum payload_enc enc, uint64_t size, const char *head,
    size_t headlen, const char *tail, size_t taillen,
    unsigned int deadline_ms, payload_done_cb cb, void *arg)
{
	struct payload	*p;
	struct timeval	 tv;

	if ((p = calloc(1, sizeof(*p))) == NULL ||
	    (p->tail = malloc(taillen + 1)) == NULL) {
		log_warn("%s", __func__);
		free(p);
		close(fd);
		return NULL;
	}
	p->conn = c;
	p->fd = fd;
	p->is_pipe = is_pipe;
	p->enc = enc;
	p->chunk = enc == PAYLOAD_TEXT ? PAYLOAD_TEXT_CHUNK : PAYLOAD_CHUNK;
	p->size = size;
	memcpy(p->tail, tail, taillen);
	p->taillen = taillen;
	p->cb = cb;
	p->arg = arg;
	if ((p->kick = evtimer_new(base, payload_readable, p)) == NULL) {
		log_warnx("%s: evtimer_new", __func__);
		p->conn = NULL;
		payload_free(p);
		return NULL;
	}
	if (is_pipe) {
		tv.tv_sec = deadline_ms / 1000;
		tv.tv_usec = (deadline_ms % 1000) * 1000;
		if ((p->rev = event_new(base, fd, EV_READ, payload_readable,
		    p)) == NULL || (p->timer = evtimer_new(base,
		    payload_deadline, p)) == NULL) {
			log_warnx("%s: event_new", __func__);
			p->conn = NULL;
			payload_free(p);
			return NULL;
		}
		evtimer_add(p->timer, &tv);
	}
	http_set_drain(c, payload_drained, p);
	http_stream_write(c, head, headlen);
	tv.tv_sec = 0;
	tv.tv_usec = 0;
	evtimer_add(p->kick, &tv);
	return p;
}

/* The client went away: the descriptor is closed, cb not called. */
void
payload_cancel(struct payload *p)
{
	if (p == NULL)
		return;
	p->conn = NULL;
	payload_free(p);
}
