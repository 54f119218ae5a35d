/*
 * libFuzzer target for mcvm-frontd's request path: one HTTP request (head
 * and body) through request.c, mcp.c and api.c to its answer, with the
 * real parser (httpparse.c), sessions, catalogue, peer table and
 * authentication cache.  What stands in for the rest:
 *
 *	the connection	(http.c) records the one answer it must get;
 *	mcvmd		(frontd.c's imsg peer) accepts every token for
 *			workspace "fuzz", and answers each tool call, after
 *			one progress step, with the result the input gives
 *			(or an echo of the tool's name); what frontd sends
 *			it must decode as mcvmd decodes it.
 *
 * Input: byte 0 holds flags (bit 0: the session speaks 2025-03-26, bit
 * 1: the peer is a unix socket); then the request (whose headers and
 * _meta may make it one of protocol 2026-07-28, which stateless.c
 * serves without the session; seeds v26-*); then optionally
 * "\n@@RESULT@@" and a status byte and the text of every tool result.
 * "@SID@" in the request stands for the id of the session made for the
 * run.  Aborts when a request is not answered exactly once, when an error
 * answer has no JSON body, when a JSON answer does not parse, or when a
 * batch answer holds anything but response objects.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "frontd.h"
#include "http.h"
#include "imsg.h"
#include "log.h"
#include "msg.h"
#include "msg_front.h"
#include "tools.h"

#define FUZZ_BODY_LIMIT		(64 * 1024)
#define FUZZ_HEADER_LIMIT	(16 * 1024)
#define FUZZ_OPS_MAX		64
#define RESULT_MARK		"\n@@RESULT@@"
#define SID_MARK		"@SID@"

static struct frontd	 fuzz_frontd;
struct frontd		*fenv = &fuzz_frontd;

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* The connection. */
struct http_conn {
	int		 replies;	/* http_reply or a stream's end */
	int		 streaming;
	int		 status;
	int		 head_only;
	char		*body;
	size_t		 bodylen;
	void		(*abort)(void *);
	void		*abort_arg;
	struct peer_key	 key;
	uint64_t	 clen;		/* the request's Content-Length */
};

/* What mcvmd has been asked and not yet answered. */
struct fuzz_op {
	int		 tool;		/* 0: an authentication */
	uint32_t	 peerid;
};

static struct fuzz_op	 ops[FUZZ_OPS_MAX];
static size_t		 nops;
static uint32_t		 next_peerid;
static const char	*result_text;
static uint32_t		 result_status;

void
http_add_header(struct http_conn *c, const char *name, const char *value)
{
	if (strchr(name, '\n') != NULL || strchr(value, '\n') != NULL ||
	    strchr(value, '\r') != NULL)
		abort();	/* header injection */
}

void
http_reply(struct http_conn *c, int status, const char *ctype,
    const void *body, size_t len)
{
	if (c->replies != 0 || c->streaming || status < 100 || status > 599)
		abort();
	c->replies++;
	c->status = status;
	if (body != NULL && len > 0) {
		if ((c->body = malloc(len + 1)) == NULL)
			abort();
		memcpy(c->body, body, len);
		c->body[len] = '\0';
		c->bodylen = len;
	}
}

void
http_stream_start(struct http_conn *c, int status, const char *ctype)
{
	if (c->replies != 0 || c->streaming)
		abort();
	c->streaming = 1;
	c->status = status;
}

void
http_stream_write(struct http_conn *c, const void *data, size_t len)
{
	const char	*p = data;
	json_t		*j;

	if (!c->streaming)
		abort();
	/* Each event is "event: message\ndata: JSON\n\n". */
	if (len < 22 || strncmp(p, "event: message\ndata: ", 21) != 0)
		abort();
	if ((j = json_loadb(p + 21, len - 21 - 2, 0, NULL)) == NULL)
		abort();
	json_decref(j);
}

void
http_stream_end(struct http_conn *c)
{
	if (!c->streaming || c->replies != 0)
		abort();
	c->streaming = 0;
	c->replies++;
}

void
http_set_abort(struct http_conn *c, void (*fn)(void *), void *arg)
{
	c->abort = fn;
	c->abort_arg = arg;
}

/* Results by descriptor (payload.c): an answer cut short is an answer. */
void
http_set_drain(struct http_conn *c, void (*fn)(void *), void *arg)
{
}

size_t
http_pending(const struct http_conn *c)
{
	return 0;
}

void
http_abort(struct http_conn *c)
{
	void	(*fn)(void *) = c->abort;

	if (c->replies != 0)
		abort();
	c->streaming = 0;
	c->replies++;
	c->abort = NULL;
	if (fn != NULL)
		fn(c->abort_arg);
}

void
http_set_close(struct http_conn *c)
{
}

void
http_set_trusted(struct http_conn *c)
{
}

const char *
http_peer(const struct http_conn *c)
{
	return "fuzz";
}

/* Bodies are whole here: no request is streamed, so none is sunk. */
uint64_t
http_body_length(const struct http_conn *c)
{
	return c->clen;
}

int
http_sink(struct http_conn *c, int fd, void (*done)(void *, const char *),
    void *arg)
{
	abort();	/* the fake mcvmd sends no descriptor */
}

void
http_sink_cancel(struct http_conn *c)
{
}

int
http_send_fd(struct http_conn *c, int status, const char *ctype, int fd,
    uint64_t size, void (*done)(void *, const char *), void *arg)
{
	abort();	/* the fake mcvmd sends no descriptor */
}

const struct peer_key *
http_peer_key(const struct http_conn *c)
{
	return &c->key;
}

/* The imsg peer. */
uint32_t
front_peerid(void)
{
	if (++next_peerid == 0)
		next_peerid = 1;
	return next_peerid;
}

static void
op_queue(int tool, uint32_t peerid)
{
	if (nops == FUZZ_OPS_MAX)
		abort();	/* more calls than a batch can make */
	ops[nops].tool = tool;
	ops[nops].peerid = peerid;
	nops++;
}

void
front_send_auth(struct fop *op)
{
	op_queue(0, op->peerid);
}

/* Encodes as frontd does, then decodes as mcvmd does. */
int
front_send_tool(struct fop *op, const struct tool_args *args)
{
	static struct msg_front_tool	 m, back;
	struct imsg			 imsg;
	struct ibuf			*b;

	memcpy(m.hash, op->req->hash, sizeof(m.hash));
	m.tool = op->tool->id;
	m.args = *args;
	if ((b = imsg_create(NULL, IMSG_FRONT_TOOL, op->peerid, 0,
	    1024)) == NULL)
		abort();
	msg_front_tool_put(b, &m);
	if (b->err != 0) {
		imsg_discard(b);
		return -1;
	}
	memset(&imsg, 0, sizeof(imsg));
	imsg.hdr.type = IMSG_FRONT_TOOL;
	imsg.fd = -1;
	imsg.data = b->buf + IMSG_HDR_SIZE;
	imsg.datalen = b->size - IMSG_HDR_SIZE;
	if (msg_front_tool_get(&imsg, &back) == -1 ||
	    back.tool != op->tool->id) {
		fprintf(stderr, "mcvmd would refuse %s\n", op->tool->name);
		abort();
	}
	imsg_discard(b);
	op_queue(1, op->peerid);
	return 0;
}

/* A task: encoded and decoded as the real pair does. */
int
front_send_task(struct fop *op, const struct tool_args *args,
    uint64_t ttl_ms)
{
	static struct msg_front_task	 m, back;
	struct imsg			 imsg;
	struct ibuf			*b;

	m.ttl_ms = ttl_ms;
	memcpy(m.tool.hash, op->req->hash, sizeof(m.tool.hash));
	m.tool.tool = op->tool->id;
	m.tool.args = *args;
	if ((b = imsg_create(NULL, IMSG_FRONT_TASK, op->peerid, 0,
	    1024)) == NULL)
		abort();
	msg_front_task_put(b, &m);
	if (b->err != 0) {
		imsg_discard(b);
		return -1;
	}
	memset(&imsg, 0, sizeof(imsg));
	imsg.hdr.type = IMSG_FRONT_TASK;
	imsg.fd = -1;
	imsg.data = b->buf + IMSG_HDR_SIZE;
	imsg.datalen = b->size - IMSG_HDR_SIZE;
	if (msg_front_task_get(&imsg, &back) == -1 ||
	    back.tool.tool != op->tool->id) {
		fprintf(stderr, "mcvmd would refuse task %s\n",
		    op->tool->name);
		abort();
	}
	imsg_discard(b);
	op_queue(1, op->peerid);
	return 0;
}

void
front_send_task_ref(struct fop *op, uint32_t type, const char *id)
{
	static struct msg_front_task_status	 m, back;
	struct imsg				 imsg;
	struct ibuf				*b;

	memcpy(m.hash, op->req->hash, sizeof(m.hash));
	m.id = id;
	if ((b = imsg_create(NULL, type, op->peerid, 0, 128)) == NULL)
		abort();
	if (type == IMSG_FRONT_TASK_STATUS)
		msg_front_task_status_put(b, &m);
	else
		msg_front_task_cancel_put(b, &m);
	memset(&imsg, 0, sizeof(imsg));
	imsg.hdr.type = type;
	imsg.fd = -1;
	imsg.data = b->buf + IMSG_HDR_SIZE;
	imsg.datalen = b->size - IMSG_HDR_SIZE;
	if (b->err != 0 || (type == IMSG_FRONT_TASK_STATUS ?
	    msg_front_task_status_get(&imsg, &back) :
	    msg_front_task_cancel_get(&imsg, &back)) == -1) {
		fprintf(stderr, "mcvmd would refuse a task reference\n");
		abort();
	}
	imsg_discard(b);
	op_queue(1, op->peerid);
}

/* An image transfer: encoded and decoded as the real pair does. */
void
front_send_image(struct fop *op, const struct msg_front_image *m)
{
	struct msg_front_image	 back;
	struct imsg		 imsg;
	struct ibuf		*b;

	if ((b = imsg_create(NULL, IMSG_FRONT_IMAGE, op->peerid, 0,
	    128)) == NULL)
		abort();
	msg_front_image_put(b, m);
	memset(&imsg, 0, sizeof(imsg));
	imsg.hdr.type = IMSG_FRONT_IMAGE;
	imsg.fd = -1;
	imsg.data = b->buf + IMSG_HDR_SIZE;
	imsg.datalen = b->size - IMSG_HDR_SIZE;
	if (msg_front_image_get(&imsg, &back) == -1) {
		fprintf(stderr, "mcvmd would refuse an image request\n");
		abort();
	}
	imsg_discard(b);
	op_queue(1, op->peerid);
}

void
front_send_cancel(uint32_t peerid)
{
}

/* Answers every call, oldest first, until none is left. */
static void
fake_mcvmd(void)
{
	struct fuzz_op	 op;
	char		 echo[128];

	while (nops > 0) {
		op = ops[0];
		memmove(ops, ops + 1, --nops * sizeof(ops[0]));
		if (!op.tool) {
			req_auth_result(op.peerid, AUTH_OK, "fuzz", 0);
			continue;
		}
		req_progress(op.peerid, 1, 2, result_text != NULL ?
		    result_text : "step");
		if (result_text != NULL)
			req_tool_result(op.peerid, result_status, result_text);
		else {
			snprintf(echo, sizeof(echo), "{\"peerid\":%u}",
			    op.peerid);
			req_tool_result(op.peerid, TOOL_OK, echo);
		}
	}
}

/* The answer must be one, and say what it says in JSON. */
static void
check_answer(const struct http_conn *c, int batch)
{
	json_t	*j, *m;
	size_t	 i;

	if (c->replies != 1)
		abort();
	if (c->body == NULL) {
		if (c->status >= 400 && !c->head_only)
			abort();	/* an error must say what to fix */
		return;
	}
	if (c->status == 200 && c->streaming)
		return;
	if ((j = json_loads(c->body, 0, NULL)) == NULL) {
		fprintf(stderr, "not JSON: %s\n", c->body);
		abort();
	}
	if (json_is_array(j)) {
		if (!batch || json_array_size(j) == 0)
			abort();
		json_array_foreach(j, i, m)
			if (!json_is_object(m) || (json_object_get(m,
			    "result") == NULL) == (json_object_get(m,
			    "error") == NULL))
				abort();
	} else if (!json_is_object(j))
		abort();
	json_decref(j);
}

/* Copies in to a new buffer with every SID_MARK replaced by sid. */
static char *
with_sid(const uint8_t *in, size_t len, const char *sid, size_t *outlen)
{
	size_t	 ml = strlen(SID_MARK), sl = strlen(sid), i, o = 0;
	char	*out;

	if ((out = malloc(len / ml * sl + len + 1)) == NULL)
		abort();
	for (i = 0; i < len; ) {
		if (len - i >= ml && memcmp(in + i, SID_MARK, ml) == 0) {
			memcpy(out + o, sid, sl);
			o += sl;
			i += ml;
		} else
			out[o++] = (char)in[i++];
	}
	out[o] = '\0';
	*outlen = o;
	return out;
}

static void
fuzz_setup(void)
{
	static int	 done;

	if (done)
		return;
	done = 1;
	log_init(1, 0);
	config_defaults(&fenv->conf);
	fenv->conf.rate = 0;		/* no per-workspace limit */
	fenv->conf.unauth_rate = 1000000;
	fenv->conf.unauth_burst = 1000000;
	if ((fenv->base = event_base_new()) == NULL)
		abort();
	json_object_seed(1);
	if (catalog_init() == -1)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct http_conn	 c;
	struct http_request	 r;
	struct http_framing	 f;
	struct session		*s;
	const uint8_t		*mark;
	const char		*msg, *end;
	char			*req, *text = NULL;
	size_t			 reqlen, hlen;
	uint8_t			 flags;
	int			 status;

	fuzz_setup();
	if (len < 1)
		return 0;
	flags = data[0];
	data++;
	len--;
	result_text = NULL;
	if ((mark = memmem(data, len, RESULT_MARK,
	    strlen(RESULT_MARK))) != NULL) {
		size_t	 off = (size_t)(mark - data) + strlen(RESULT_MARK);

		if (off < len) {
			result_status = data[off] % 6;
			if ((text = strndup((const char *)data + off + 1,
			    len - off - 1)) == NULL)
				abort();
			result_text = text;
		}
		len = (size_t)(mark - data);
	}
	if ((s = session_new("fuzz", flags & 1 ? "2025-03-26" :
	    "2025-11-25")) == NULL)
		abort();
	req = with_sid(data, len, session_id(s), &reqlen);

	memset(&c, 0, sizeof(c));
	memset(&r, 0, sizeof(r));
	c.key.family = flags & 2 ? AF_UNIX : AF_INET;
	c.key.addr[0] = 127;
	if ((end = memmem(req, reqlen, "\r\n\r\n", 4)) == NULL ||
	    (hlen = (size_t)(end - req)) + 4 > FUZZ_HEADER_LIMIT)
		goto out;
	if ((r.hbuf = strndup(req, hlen)) == NULL)
		abort();
	r.hlen = hlen;
	if (strlen(r.hbuf) != hlen)	/* NUL: the other target's */
		goto out;
	if ((status = http_parse_head(&r, &msg)) != 0 ||
	    (status = http_parse_framing(&r, FUZZ_BODY_LIMIT, &f,
	    &msg)) != 0) {
		/* The server refuses it itself, in the route's shape. */
		req_http_error(&c, r.path, status, msg, NULL);
		check_answer(&c, 0);
		goto out;
	}
	if (reqlen - hlen - 4 < f.clen)
		goto out;
	if ((r.body = malloc(f.clen + 1)) == NULL)
		abort();
	memcpy(r.body, end + 4, f.clen);
	r.body[f.clen] = '\0';
	r.bodylen = f.clen;
	c.head_only = f.head_only;
	c.clen = f.clen;

	req_handle(&c, &r, NULL);
	fake_mcvmd();
	if (c.replies == 0 && c.abort != NULL) {
		fprintf(stderr, "a request is left unanswered\n");
		abort();
	}
	check_answer(&c, r.body[0] != '\0' && memchr(r.body, '[',
	    r.bodylen) != NULL);
 out:
	if (c.abort != NULL)
		c.abort(c.abort_arg);
	free(c.body);
	free(r.hbuf);
	free(r.body);
	free(req);
	free(text);
	nops = 0;
	/* Every session ends with the run, and so does what was cached. */
	session_sweep(time(NULL) + SESSION_IDLE_MAX + 1);
	authcache_clear();
	return 0;
}
