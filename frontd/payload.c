/*
 * A result that came by descriptor, streamed to the client: the answer's
 * head (JSON up to the opening quote of the content block's data), the
 * descriptor's bytes in base64 as they are read, then its tail.  frontd
 * holds one piece at a time: the next is read only when the last has
 * gone to the client, a pipe is read only when it is readable, and
 * nothing waits on a descriptor in the event loop.
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

struct payload {
	struct http_conn	*conn;
	int			 fd;
	int			 is_pipe;
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
	uint8_t			 raw[PAYLOAD_CHUNK + 2];
	char			 b64[B64_ENCODED_LEN(PAYLOAD_CHUNK + 2) + 1];
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
payload_write(struct payload *p)
{
	size_t	 n, len;

	n = p->done == p->size ? p->nraw : p->nraw / 3 * 3;
	if (n == 0)
		return;
	len = b64_encode(p->raw, n, p->b64);
	http_stream_write(p->conn, p->b64, len);
	memmove(p->raw, p->raw + n, p->nraw - n);
	p->nraw -= n;
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
			want = sizeof(p->raw) - 2 - p->nraw;
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
		payload_write(p);
	}
}

/*
 * Writes head, fd's size bytes in base64, and tail to the stream c has
 * started, then calls cb.  Takes fd (checked by payload_check); head and
 * tail are copied.  A pipe must deliver its bytes within deadline_ms.
 * Returns NULL, with fd closed, if memory is short.
 */
struct payload *
payload_stream(struct event_base *base, struct http_conn *c, int fd,
    int is_pipe, uint64_t size, const char *head, size_t headlen,
    const char *tail, size_t taillen, unsigned int deadline_ms,
    payload_done_cb cb, void *arg)
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
