/*
 * Results by descriptor: the codec of IMSG_FRONT_TOOL_RESULT_FD, and
 * frontd's streaming of a memfd or a pipe to real HTTP clients through
 * the real http.c on loopback, in one event loop.  Each answer is read
 * whole by its client and de-chunked: the body must be the head, the
 * descriptor's bytes in base64 and the tail, and end with its last
 * chunk; for text, the body must decode as JSON to the descriptor's
 * text.  A short, long or slow descriptor must cut its own answer only,
 * with the reason, while another answer in the same loop completes.
 */
#include <sys/mman.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "b64.h"
#include "http.h"
#include "imsg.h"
#include "msg.h"
#include "msg_front.h"
#include "payload.h"
#include "proto.h"
#include "tools.h"

#define HEAD		"{\"data\":\""
#define TAIL		"\"}"
#define CLIENTS_MAX	10		/* paths /0 to /9 */
#define ANSWER_MAX	(4 * 1024 * 1024)

/* The codec. */

static struct ibuf *
put(const struct msg_front_tool_result_fd *m)
{
	struct ibuf	*b;

	cr_assert_not_null(b = imsg_create(NULL, IMSG_FRONT_TOOL_RESULT_FD,
	    7, 0, 0));
	msg_front_tool_result_fd_put(b, m);
	cr_assert_eq(b->err, 0);
	return b;
}

/* The strings got point into b, which lives until the next get. */
static int
get(struct ibuf *b, uint32_t type, struct msg_front_tool_result_fd *m)
{
	static struct ibuf	*last;
	struct imsg		 imsg;

	if (last != NULL) {
		free(last->buf);
		free(last);
	}
	last = b;
	memset(&imsg, 0, sizeof(imsg));
	imsg.hdr.type = type;
	imsg.fd = -1;
	imsg.data = b->buf + IMSG_HDR_SIZE;
	imsg.datalen = b->size - IMSG_HDR_SIZE;
	return msg_front_tool_result_fd_get(&imsg, m);
}

Test(payload, codec_round_trip)
{
	struct msg_front_tool_result_fd	 m = { TOOL_OK, "{\"width\":640}",
	    TR_IMAGE, "image/png", 123456789012ULL }, back;
	char				*big;

	cr_assert_eq(get(put(&m), IMSG_FRONT_TOOL_RESULT_FD, &back), 0);
	cr_assert_eq(back.status, TOOL_OK);
	cr_assert_str_eq(back.json, m.json);
	cr_assert_eq(back.kind, TR_IMAGE);
	cr_assert_str_eq(back.mime, "image/png");
	cr_assert_eq(back.size, m.size);

	/* The largest JSON part fits in one message and comes back. */
	cr_assert_not_null(big = malloc(TOOL_RESULT_MAX + 1));
	memset(big, 'a', TOOL_RESULT_MAX);
	big[TOOL_RESULT_MAX] = '\0';
	m.json = big;
	cr_assert_eq(get(put(&m), IMSG_FRONT_TOOL_RESULT_FD, &back), 0);
	cr_assert_eq(strlen(back.json), TOOL_RESULT_MAX);
	free(big);

	/* One byte more is refused. */
	cr_assert_not_null(big = malloc(TOOL_RESULT_MAX + 2));
	memset(big, 'a', TOOL_RESULT_MAX + 1);
	big[TOOL_RESULT_MAX + 1] = '\0';
	m.json = big;
	cr_assert_eq(get(put(&m), IMSG_FRONT_TOOL_RESULT_FD, &back), -1);
	free(big);
}

Test(payload, codec_refuses_bad_headers)
{
	struct msg_front_tool_result_fd	 good = { TOOL_OK, "{}", TR_IMAGE,
	    "image/png", 10 }, m, back;
	char				 mime[PAYLOAD_MIME_MAX + 2];

	cr_assert_eq(get(put(&good), IMSG_FRONT_TOOL_RESULT, &back), -1);
	cr_assert_eq(errno, EBADMSG);
	m = good;
	m.status = TOOL_ERROR;
	cr_assert_eq(get(put(&m), IMSG_FRONT_TOOL_RESULT_FD, &back), -1);
	m = good;
	m.kind = TR_JSON;
	cr_assert_eq(get(put(&m), IMSG_FRONT_TOOL_RESULT_FD, &back), -1);
	m = good;
	m.size = 0;
	cr_assert_eq(get(put(&m), IMSG_FRONT_TOOL_RESULT_FD, &back), -1);
	m = good;
	m.mime = "text/plain";		/* not an image */
	cr_assert_eq(get(put(&m), IMSG_FRONT_TOOL_RESULT_FD, &back), -1);
	m.mime = "image/png\"x";
	cr_assert_eq(get(put(&m), IMSG_FRONT_TOOL_RESULT_FD, &back), -1);
	m.mime = "Image/PNG";
	cr_assert_eq(get(put(&m), IMSG_FRONT_TOOL_RESULT_FD, &back), -1);
	memset(mime, 'a', sizeof(mime) - 1);
	memcpy(mime, "image/", 6);
	mime[sizeof(mime) - 1] = '\0';
	m.mime = mime;
	cr_assert_eq(get(put(&m), IMSG_FRONT_TOOL_RESULT_FD, &back), -1);
	m = good;
	m.kind = TR_TEXT;
	m.mime = "text/plain";
	cr_assert_eq(get(put(&m), IMSG_FRONT_TOOL_RESULT_FD, &back), 0);
}

/* The checks made before an answer starts. */

static int
memfd_with(const uint8_t *data, size_t len)
{
	int	 fd;

	cr_assert_neq(fd = memfd_create("payload", MFD_CLOEXEC), -1);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	return fd;
}

Test(payload, check_refuses_before_the_answer)
{
	uint8_t	 data[100] = { 1, 2, 3 };
	char	 err[PAYLOAD_ERR_MAX];
	int	 fd, p[2], is_pipe;

	fd = memfd_with(data, sizeof(data));
	cr_assert_eq(payload_check(fd, 100, 1000, &is_pipe, err,
	    sizeof(err)), 0);
	cr_assert_eq(is_pipe, 0);
	cr_assert_eq(lseek(fd, 0, SEEK_CUR), 0, "not rewound");
	cr_assert_eq(payload_check(fd, 101, 1000, &is_pipe, err,
	    sizeof(err)), -1);
	cr_assert_not_null(strstr(err, "holds 100 bytes, not the 101"), "%s",
	    err);
	cr_assert_eq(payload_check(fd, 99, 1000, &is_pipe, err,
	    sizeof(err)), -1);
	cr_assert_eq(payload_check(fd, 100, 99, &is_pipe, err,
	    sizeof(err)), -1);
	cr_assert_not_null(strstr(err, "over the 99 bytes"), "%s", err);
	close(fd);

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	cr_assert_eq(payload_check(p[1], 10, 1000, &is_pipe, err,
	    sizeof(err)), -1, "a write end is not readable");
	cr_assert_eq(payload_check(p[0], 10, 1000, &is_pipe, err,
	    sizeof(err)), 0);
	cr_assert_eq(is_pipe, 1);
	cr_assert(fcntl(p[0], F_GETFL) & O_NONBLOCK);
	close(p[0]);
	close(p[1]);

	cr_assert_neq(fd = socket(AF_UNIX, SOCK_STREAM, 0), -1);
	cr_assert_eq(payload_check(fd, 10, 1000, &is_pipe, err,
	    sizeof(err)), -1, "a socket is neither a file nor a pipe");
	close(fd);
}

/* Streaming, through http.c to clients on loopback. */

struct client {
	int		 fd;
	struct event	*ev;
	char		*buf;
	size_t		 len;
	int		 closed;
	/* what the server streams to it */
	int		 src;		/* the descriptor */
	int		 is_pipe;
	enum payload_enc enc;
	uint64_t	 size;
	unsigned int	 deadline_ms;
	int		 done;		/* payload's callback ran */
	char		 err[PAYLOAD_ERR_MAX];
	struct payload	*p;
	struct http_conn *conn;
	/* a pipe's writer */
	int		 wfd;
	struct event	*wev;
	const uint8_t	*wdata;
	size_t		 wlen, woff;
	int		 whold;		/* keep the pipe open when done */
};

static struct event_base	*base;
static struct client		 clients[CLIENTS_MAX];
static size_t			 nclients, nserved;

static void
stream_done(void *arg, const char *err)
{
	struct client	*cl = arg;

	cl->done = 1;
	cl->p = NULL;
	http_set_abort(cl->conn, NULL, NULL);
	if (err != NULL) {
		(void)snprintf(cl->err, sizeof(cl->err), "%s", err);
		http_abort(cl->conn);
	} else
		http_stream_end(cl->conn);
}

static void
conn_gone(void *arg)
{
	struct client	*cl = arg;

	payload_cancel(cl->p);
	cl->p = NULL;
}

/* The path names the client: /0, /1... */
static void
handler(struct http_conn *c, struct http_request *r, void *arg)
{
	struct client	*cl;

	cr_assert(r->path[0] == '/' && r->path[1] >= '0' &&
	    (size_t)(r->path[1] - '0') < nclients);
	cl = &clients[r->path[1] - '0'];
	nserved++;

	cl->conn = c;
	http_set_abort(c, conn_gone, cl);
	http_stream_start(c, 200, "application/json");
	cl->p = payload_stream(base, c, cl->src, cl->is_pipe, cl->enc,
	    cl->size, HEAD, strlen(HEAD), TAIL, strlen(TAIL), cl->deadline_ms,
	    stream_done, cl);
	cr_assert_not_null(cl->p);
}

static void
http_error(struct http_conn *c, const char *path, int status,
    const char *msg, void *arg)
{
	cr_assert_fail("http.c refused the request: %d %s", status, msg);
}

static void
client_read(evutil_socket_t fd, short ev, void *arg)
{
	struct client	*cl = arg;
	ssize_t		 n;
	size_t		 i;

	n = read(fd, cl->buf + cl->len, ANSWER_MAX - cl->len);
	if (n == -1 && errno == EAGAIN)
		return;
	cr_assert(n != -1 || errno == ECONNRESET, "read: %s",
	    strerror(errno));
	if (n > 0) {
		cl->len += (size_t)n;
		cr_assert_lt(cl->len, ANSWER_MAX, "an answer without end");
		return;
	}
	cl->closed = 1;
	event_del(cl->ev);
	for (i = 0; i < nclients; i++)
		if (!clients[i].closed)
			return;
	event_base_loopbreak(base);
}

static void
writer_ready(evutil_socket_t fd, short ev, void *arg)
{
	struct client	*cl = arg;
	size_t		 len = cl->wlen - cl->woff;
	ssize_t		 n;

	/* Small pieces, so that the reader meets an empty pipe. */
	if (len > 7000)
		len = 7000;
	if (len > 0) {
		n = write(fd, cl->wdata + cl->woff, len);
		if (n == -1 && errno == EAGAIN)
			return;
		cr_assert_gt(n, 0);
		cl->woff += (size_t)n;
	}
	if (cl->woff == cl->wlen) {
		event_del(cl->wev);
		if (!cl->whold) {
			close(cl->wfd);
			cl->wfd = -1;
		}
	}
}

static void
setup(void)
{
	struct http_limits	 lim = { 1 << 20, 16 << 10, 16, 16, 10, 10,
	    10 };

	cr_assert_not_null(base = event_base_new());
	cr_assert_eq(http_init(base, &lim, handler, http_error, NULL, NULL),
	    0);
	nclients = nserved = 0;
	memset(clients, 0, sizeof(clients));
}

static void
teardown(void)
{
	size_t	 i;

	for (i = 0; i < nclients; i++) {
		if (clients[i].ev != NULL)
			event_free(clients[i].ev);
		if (clients[i].wev != NULL)
			event_free(clients[i].wev);
		if (clients[i].wfd > 0)
			close(clients[i].wfd);
		if (clients[i].fd > 0)
			close(clients[i].fd);
		free(clients[i].buf);
	}
	http_shutdown();
	event_base_free(base);
}

/* A listener on 127.0.0.1 for http.c; returns its port. */
static int
listen_loopback(void)
{
	struct sockaddr_in	 sin;
	socklen_t		 len = sizeof(sin);
	int			 fd;

	cr_assert_neq(fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0), -1);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	cr_assert_eq(listen(fd, 8), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	cr_assert_eq(http_listen(fd), 0);
	return ntohs(sin.sin_port);
}

/* A client whose answer is streamed from src. */
static struct client *
client_new(int port, int src, int is_pipe, uint64_t size)
{
	struct client		*cl = &clients[nclients];
	struct sockaddr_in	 sin;
	char			 req[128];
	int			 n;

	n = snprintf(req, sizeof(req), "POST /%zu HTTP/1.1\r\nHost: h\r\n"
	    "Content-Length: 0\r\nConnection: close\r\n\r\n", nclients++);

	cl->src = src;
	cl->is_pipe = is_pipe;
	cl->size = size;
	cl->deadline_ms = 10000;
	cl->wfd = -1;
	cr_assert_not_null(cl->buf = malloc(ANSWER_MAX));
	cr_assert_neq(cl->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC,
	    0), -1);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(port);
	cr_assert_eq(connect(cl->fd, (struct sockaddr *)&sin, sizeof(sin)),
	    0);
	cr_assert_eq(write(cl->fd, req, (size_t)n), n);
	cr_assert_neq(fcntl(cl->fd, F_SETFL, O_NONBLOCK), -1);
	cr_assert_not_null(cl->ev = event_new(base, cl->fd,
	    EV_READ | EV_PERSIST, client_read, cl));
	event_add(cl->ev, NULL);
	return cl;
}

/* The answer's src is a pipe that this writes data to, in pieces. */
static struct client *
client_pipe(int port, const uint8_t *data, size_t len, uint64_t size,
    int hold)
{
	struct client	*cl;
	int		 p[2], is_pipe;
	char		 err[PAYLOAD_ERR_MAX];

	cr_assert_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	cr_assert_eq(payload_check(p[0], size, ANSWER_MAX, &is_pipe, err,
	    sizeof(err)), 0, "%s", err);
	cl = client_new(port, p[0], 1, size);
	cl->wfd = p[1];
	cl->wdata = data;
	cl->wlen = len;
	cl->whold = hold;
	cr_assert_not_null(cl->wev = event_new(base, p[1],
	    EV_WRITE | EV_PERSIST, writer_ready, cl));
	event_add(cl->wev, NULL);
	return cl;
}

static void
run(void)
{
	struct timeval	 guard = { 60, 0 };	/* against a hang only */

	event_base_loopexit(base, &guard);
	cr_assert_eq(event_base_dispatch(base), 0);
	cr_assert_eq(nserved, nclients);
}

/*
 * De-chunks the client's answer into body; returns 1 when it ended with
 * its last chunk, 0 when it was cut.
 */
static int
dechunk(const struct client *cl, char **body, size_t *blen)
{
	const char	*p, *end = cl->buf + cl->len;
	char		*e;
	unsigned long	 n;

	cr_assert_not_null(*body = malloc(cl->len + 1));
	*blen = 0;
	cr_assert_gt(cl->len, 12);
	cr_assert_eq(strncmp(cl->buf, "HTTP/1.1 200 ", 13), 0);
	cr_assert_not_null(p = memmem(cl->buf, cl->len, "\r\n\r\n", 4));
	p += 4;
	for (;;) {
		if (memchr(p, '\n', (size_t)(end - p)) == NULL)
			return 0;
		n = strtoul(p, &e, 16);
		cr_assert_eq(strncmp(e, "\r\n", 2), 0, "bad chunk line");
		p = e + 2;
		if (n == 0)
			return end - p == 2 && strncmp(p, "\r\n", 2) == 0;
		if ((size_t)(end - p) < n + 2) {
			memcpy(*body + *blen, p, (size_t)(end - p));
			*blen += (size_t)(end - p);
			return 0;
		}
		memcpy(*body + *blen, p, n);
		*blen += n;
		p += n + 2;
	}
}

/* The answer is whole: head, exactly data in base64, tail. */
static void
assert_whole(const struct client *cl, const uint8_t *data, size_t len)
{
	char	*body, *want;
	size_t	 blen, wlen;

	cr_assert(cl->done, "the stream did not end");
	cr_assert_eq(cl->err[0], '\0', "failed: %s", cl->err);
	cr_assert_eq(dechunk(cl, &body, &blen), 1, "the answer was cut");
	cr_assert_not_null(want = malloc(B64_ENCODED_LEN(len) + 64));
	strcpy(want, HEAD);
	wlen = strlen(HEAD) + b64_encode(data, len, want + strlen(HEAD));
	strcpy(want + wlen, TAIL);
	wlen += strlen(TAIL);
	cr_assert_eq(blen, wlen, "%zu bytes, not %zu", blen, wlen);
	cr_assert_eq(memcmp(body, want, wlen), 0, "the body differs");
	free(body);
	free(want);
}

/* The answer was cut for the reason given, never ended as whole. */
static void
assert_cut(const struct client *cl, const char *why)
{
	char	*body;
	size_t	 blen;

	cr_assert(cl->done);
	cr_assert_not_null(strstr(cl->err, why), "error \"%s\", not \"%s\"",
	    cl->err, why);
	cr_assert(cl->closed);
	cr_assert_eq(dechunk(cl, &body, &blen), 0, "a cut answer ended "
	    "with its last chunk");
	free(body);
}

static uint8_t *
random_bytes(size_t len)
{
	uint8_t	*d;
	size_t	 i;

	cr_assert_not_null(d = malloc(len));
	srandom(7);
	for (i = 0; i < len; i++)
		d[i] = (uint8_t)random();
	return d;
}

Test(payload, memfd_streams_exactly, .init = setup, .fini = teardown)
{
	size_t		 len = 3 * PAYLOAD_CHUNK + 2;	/* not 3 * n */
	uint8_t		*data = random_bytes(len);
	char		 err[PAYLOAD_ERR_MAX];
	int		 port = listen_loopback(), fd, is_pipe;
	struct client	*cl;

	fd = memfd_with(data, len);
	cr_assert_eq(payload_check(fd, len, len, &is_pipe, err, sizeof(err)),
	    0, "%s", err);
	cl = client_new(port, fd, 0, len);
	run();
	assert_whole(cl, data, len);
	free(data);
}

Test(payload, pipe_streams_exactly, .init = setup, .fini = teardown)
{
	size_t		 len = 200001;
	uint8_t		*data = random_bytes(len);
	struct client	*cl;

	cl = client_pipe(listen_loopback(), data, len, len, 0);
	run();
	assert_whole(cl, data, len);
	free(data);
}

/*
 * The failures, for each encoding: the data is text for PAYLOAD_TEXT, so
 * that only the descriptor's length is wrong.
 */

static void	assert_text(const struct client *, const char *, size_t);

static uint8_t *
some_bytes(enum payload_enc enc, size_t len)
{
	uint8_t	*d;

	if (enc == PAYLOAD_BASE64)
		return random_bytes(len);
	cr_assert_not_null(d = malloc(len));
	memset(d, 'a', len);
	return d;
}

static void
short_pipe(enum payload_enc enc)
{
	uint8_t		*data = some_bytes(enc, 1000);
	struct client	*cl;

	cl = client_pipe(listen_loopback(), data, 1000, 5000, 0);
	cl->enc = enc;
	run();
	assert_cut(cl, "the result ended after 1000 of its 5000 bytes");
	free(data);
}

static void
long_pipe(enum payload_enc enc)
{
	uint8_t		*data = some_bytes(enc, 5001);
	struct client	*cl;

	cl = client_pipe(listen_loopback(), data, 5001, 5000, 0);
	cl->enc = enc;
	run();
	assert_cut(cl, "went on past its end after 5000 of its 5000 bytes");
	free(data);
}

static void
short_memfd(enum payload_enc enc)
{
	uint8_t		*data = some_bytes(enc, 4000);
	char		 err[PAYLOAD_ERR_MAX];
	int		 port = listen_loopback(), fd, is_pipe;
	struct client	*cl;

	/* Checked whole, then shrunk under frontd by its producer. */
	fd = memfd_with(data, 4000);
	cr_assert_eq(payload_check(fd, 4000, 4000, &is_pipe, err,
	    sizeof(err)), 0);
	cr_assert_eq(ftruncate(fd, 3000), 0);
	cl = client_new(port, fd, 0, 4000);
	cl->enc = enc;
	run();
	assert_cut(cl, "the result ended after 3000 of its 4000 bytes");
	free(data);
}

/* A slow pipe fails its own call; the other answer completes. */
static void
slow_pipe(enum payload_enc enc)
{
	size_t		 len = 100000;
	uint8_t		*data = some_bytes(enc, len);
	char		 err[PAYLOAD_ERR_MAX];
	int		 port = listen_loopback(), fd, is_pipe;
	struct client	*slow, *fast;

	slow = client_pipe(port, data, 20000, len, 1);
	slow->deadline_ms = 300;
	slow->enc = enc;
	fd = memfd_with(data, len);
	cr_assert_eq(payload_check(fd, len, len, &is_pipe, err, sizeof(err)),
	    0);
	fast = client_new(port, fd, 0, len);
	fast->enc = enc;
	run();
	assert_cut(slow, "did not arrive in time after 20000 of its 100000");
	if (enc == PAYLOAD_BASE64)
		assert_whole(fast, data, len);
	else
		assert_text(fast, (const char *)data, len);
	free(data);
}

Test(payload, short_pipe_cuts_its_answer, .init = setup, .fini = teardown)
{
	short_pipe(PAYLOAD_BASE64);
}

Test(payload, long_pipe_cuts_its_answer, .init = setup, .fini = teardown)
{
	long_pipe(PAYLOAD_BASE64);
}

Test(payload, short_memfd_cuts_its_answer, .init = setup, .fini = teardown)
{
	short_memfd(PAYLOAD_BASE64);
}

Test(payload, slow_pipe_fails_alone, .init = setup, .fini = teardown)
{
	slow_pipe(PAYLOAD_BASE64);
}

Test(payload, text_short_pipe_cuts_its_answer, .init = setup,
    .fini = teardown)
{
	short_pipe(PAYLOAD_TEXT);
}

Test(payload, text_long_pipe_cuts_its_answer, .init = setup,
    .fini = teardown)
{
	long_pipe(PAYLOAD_TEXT);
}

Test(payload, text_short_memfd_cuts_its_answer, .init = setup,
    .fini = teardown)
{
	short_memfd(PAYLOAD_TEXT);
}

Test(payload, text_slow_pipe_fails_alone, .init = setup, .fini = teardown)
{
	slow_pipe(PAYLOAD_TEXT);
}

/* Text: the answer decodes as JSON to the descriptor's text. */

/* Characters of every length, and every byte JSON must escape. */
static const char *const pieces[] = {
	"a", "text ", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
	"\xf4\x8f\xbf\xbf", "\"", "\\", "\\u0041", "/", "\n", "\r\n", "\t",
	"\b", "\f", "\x01", "\x1f", "\x7f", "\0"
};

/* len bytes of valid UTF-8 text, cut to len on a character boundary. */
static uint8_t *
text_bytes(size_t len)
{
	uint8_t	*d;
	size_t	 o = 0, n, k;

	cr_assert_not_null(d = malloc(len));
	srandom(11);
	while (o < len) {
		k = (size_t)random() % (sizeof(pieces) / sizeof(pieces[0]));
		n = pieces[k][0] == '\0' ? 1 : strlen(pieces[k]);
		if (n > len - o) {
			n = 1;
			k = 0;
		}
		memcpy(d + o, pieces[k], n);
		o += n;
	}
	return d;
}

/* The whole answer is JSON whose "data" is exactly want[0..wlen). */
static void
assert_text(const struct client *cl, const char *want, size_t wlen)
{
	json_t		*j, *data;
	json_error_t	 jerr;
	char		*body;
	size_t		 blen, i;

	cr_assert(cl->done, "the stream did not end");
	cr_assert_eq(cl->err[0], '\0', "failed: %s", cl->err);
	cr_assert_eq(dechunk(cl, &body, &blen), 1, "the answer was cut");
	j = json_loadb(body, blen, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES,
	    &jerr);
	cr_assert_not_null(j, "not JSON: %s at %d", jerr.text, jerr.position);
	cr_assert(json_is_object(j) && json_object_size(j) == 1);
	cr_assert(json_is_string(data = json_object_get(j, "data")));
	for (i = 0; i < wlen && i < json_string_length(data); i++)
		if (json_string_value(data)[i] != want[i])
			break;
	cr_assert_eq(i, wlen, "the text differs at byte %zu", i);
	cr_assert_eq(json_string_length(data), wlen, "%zu bytes, not %zu",
	    json_string_length(data), wlen);
	json_decref(j);
	free(body);
}

/* A client for text from a memfd of data[0..len). */
static struct client *
client_text(int port, const void *data, size_t len)
{
	struct client	*cl;
	char		 err[PAYLOAD_ERR_MAX];
	int		 fd, is_pipe;

	fd = memfd_with(data, len);
	cr_assert_eq(payload_check(fd, len, len, &is_pipe, err, sizeof(err)),
	    0, "%s", err);
	cl = client_new(port, fd, 0, len);
	cl->enc = PAYLOAD_TEXT;
	return cl;
}

Test(payload, text_memfd_streams_exactly, .init = setup, .fini = teardown)
{
	size_t		 len = 3 * PAYLOAD_TEXT_CHUNK + 1001;
	uint8_t		*data = text_bytes(len);
	struct client	*cl;

	cl = client_text(listen_loopback(), data, len);
	run();
	assert_text(cl, (const char *)data, len);
	free(data);
}

Test(payload, text_pipe_streams_exactly, .init = setup, .fini = teardown)
{
	size_t		 len = 200001;
	uint8_t		*data = text_bytes(len);
	struct client	*cl;

	cl = client_pipe(listen_loopback(), data, len, len, 0);
	cl->enc = PAYLOAD_TEXT;
	run();
	assert_text(cl, (const char *)data, len);
	free(data);
}

/*
 * A character of 2, 3 and 4 bytes cut by the end of the first piece
 * read at each place it can be, each in its own answer.  A second one
 * falls across the second piece's end: that piece starts with the bytes
 * carried, so it ends cut bytes earlier than a whole piece would.
 */
Test(payload, text_characters_cut_at_piece_ends, .init = setup,
    .fini = teardown)
{
	static const char *const chars[] = { "\xc3\xa9", "\xe2\x82\xac",
	    "\xf0\x9f\x98\x80" };
	uint8_t		*data[6];
	struct client	*cl[6];
	size_t		 len = 2 * PAYLOAD_TEXT_CHUNK + 100, n, at, k, cut;
	size_t		 i = 0;
	int		 port = listen_loopback();

	for (k = 0; k < 3; k++) {
		n = strlen(chars[k]);
		for (cut = 1; cut < n; cut++, i++) {
			cr_assert_not_null(data[i] = malloc(len));
			memset(data[i], 'x', len);
			at = PAYLOAD_TEXT_CHUNK - cut;
			memcpy(data[i] + at, chars[k], n);
			at = 2 * PAYLOAD_TEXT_CHUNK - cut - cut;
			memcpy(data[i] + at, chars[k], n);
			cl[i] = client_text(port, data[i], len);
		}
	}
	cr_assert_eq(i, 6);
	run();
	for (i = 0; i < 6; i++) {
		assert_text(cl[i], (const char *)data[i], len);
		free(data[i]);
	}
}

/*
 * Bytes that are not UTF-8 become U+FFFD, one per maximal invalid
 * subpart, also when a piece's end or the result's end falls among
 * them, and the answer stays JSON.
 */
#define FFFD	"\xef\xbf\xbd"
Test(payload, text_invalid_bytes_are_replaced, .init = setup,
    .fini = teardown)
{
	static const char	 bad[] = "ok\xff" "a\xc3" "b\xe2\x82" "c"
	    "\xed\xa0\x80" "d\xc0\xaf" "e\x80\xbf" "f\xf5" "\"";
	static const char	 good[] = "ok" FFFD "a" FFFD "b" FFFD "c"
	    FFFD FFFD FFFD "d" FFFD FFFD "e" FFFD FFFD "f" FFFD "\"";
	static const char	 end[] = "end\xf0\x9f\x98";
	char			*d0, *w1;
	size_t			 l0, l1, at = PAYLOAD_TEXT_CHUNK - 1;
	struct client		*c0, *c1, *c2;
	int			 port = listen_loopback();

	c0 = client_text(port, bad, sizeof(bad) - 1);

	/* A lead byte ends the first piece; the next byte is no tail. */
	l0 = 2 * PAYLOAD_TEXT_CHUNK;
	cr_assert_not_null(d0 = malloc(l0));
	memset(d0, 'x', l0);
	memcpy(d0 + at, "\xe2" "A", 2);
	c1 = client_text(port, d0, l0);

	/* A character cut by the result's end. */
	c2 = client_text(port, end, sizeof(end) - 1);
	run();

	assert_text(c0, good, sizeof(good) - 1);
	l1 = l0 + 2;
	cr_assert_not_null(w1 = malloc(l1));
	memcpy(w1, d0, at);
	memcpy(w1 + at, FFFD "A", 4);
	memset(w1 + at + 4, 'x', l1 - at - 4);
	assert_text(c1, w1, l1);
	assert_text(c2, "end" FFFD, 6);
	free(d0);
	free(w1);
}

/* What the answer holds, as bytes: escapes as RFC 8259 names them. */
Test(payload, text_escapes_as_json, .init = setup, .fini = teardown)
{
	static const char	 text[] = "\"q\" \\ / \b\f\n\r\t\x01\x1f\x7f"
	    "\xc3\xa9";
	static const char	 want[] = HEAD "\\\"q\\\" \\\\ / \\b\\f\\n"
	    "\\r\\t\\u0001\\u001f\x7f\xc3\xa9" TAIL;
	struct client		*cl;
	char			*body;
	size_t			 blen;

	cl = client_text(listen_loopback(), text, sizeof(text) - 1);
	run();
	cr_assert_eq(cl->err[0], '\0', "failed: %s", cl->err);
	cr_assert_eq(dechunk(cl, &body, &blen), 1);
	cr_assert_eq(blen, sizeof(want) - 1, "%.*s", (int)blen, body);
	cr_assert_eq(memcmp(body, want, blen), 0, "%.*s", (int)blen, body);
	free(body);
	assert_text(cl, text, sizeof(text) - 1);
}
