/*
 * MCP over Streamable HTTP at /mcp: JSON-RPC 2.0 with sessions, for
 * protocol versions 2025-03-26, 2025-06-18 and 2025-11-25.  A request of
 * revision 2026-07-28, which has no sessions, is handed to stateless.c
 * (stateless_wanted); the methods both serve are answered here.
 *
 * A POST carries one message (or, on 2025-03-26, a batch).  Requests are
 * answered with application/json, except a tools/call of a long-running
 * tool that carries a progressToken: that one is answered over an SSE
 * stream, with notifications/progress until the result.  Notifications
 * and responses alone get 202.  GET is refused with 405: there is no
 * server-initiated stream, since mcvm sends no requests to clients.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "frontd.h"
#include "log.h"
#include "utf8.h"

#define VERSION_BATCH	"2025-03-26"
#define MCP_INSTRUCTIONS						\
	"mcvm runs virtual machines for you, scoped to your workspace. "\
	"Start with vm_create (give a request_id and a name, which works "\
	"wherever vm_id does), then vm_exec to run bash commands (with "\
	"wait_seconds, a short one's result comes in the same call) and "\
	"vm_job_output to read their output; vm_write_file and "	\
	"vm_read_file move text or bytes, and vm_list_files looks "	\
	"around. vm_screenshot shows the display, where tty1 runs a "	\
	"shell; vm_type_text, vm_send_keys, vm_click and vm_mouse_move "\
	"drive it, and vm_serial_read reads the serial console. Destroy "\
	"VMs when done (vm_destroy). Tools whose back end is not "	\
	"available say so in their result."

/* Newest first: the first is offered when the client's is unknown. */
static const char *const mcp_versions[] = {
	"2025-11-25", "2025-06-18", "2025-03-26",
};

int
mcp_version_supported(const char *v)
{
	size_t	 i;

	for (i = 0; i < sizeof(mcp_versions) / sizeof(mcp_versions[0]); i++)
		if (strcmp(v, mcp_versions[i]) == 0)
			return 1;
	return 0;
}

/* The i-th session version served, newest first; NULL past the last. */
const char *
mcp_version(size_t i)
{
	if (i >= sizeof(mcp_versions) / sizeof(mcp_versions[0]))
		return NULL;
	return mcp_versions[i];
}

const char *
mcp_instructions(void)
{
	return MCP_INSTRUCTIONS;
}

/*
 * {"jsonrpc":"2.0","id":id,"error":{...}}; takes id's reference.  A
 * message that cannot be encoded (not UTF-8) is replaced, so that every
 * request gets its error.
 */
json_t *
mcp_error(json_t *id, int code, const char *msg)
{
	json_t	*e;

	if (id == NULL)
		id = json_null();
	e = json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id,
	    "error", "code", code, "message", msg);
	if (e == NULL) {
		log_warnx("%s: cannot encode the message of error %d",
		    __func__, code);
		e = json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id",
		    id, "error", "code", code, "message",
		    "the error message could not be encoded");
	}
	json_decref(id);
	return e;
}

/* Takes the references of id and result; result NULL is a failure. */
json_t *
mcp_result(json_t *id, json_t *result)
{
	json_t	*r;

	if (result == NULL)
		return mcp_error(id, JSONRPC_INTERNAL_ERROR, "internal error: "
		    "the result could not be encoded");
	r = json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "result",
	    result);
	json_decref(id);
	return r;
}

/* Is a media range's q parameter zero ("not acceptable")? */
static int
range_refused(const char *params, size_t len)
{
	const char	*p = params, *end = params + len;

	while (p < end) {
		while (p < end && (*p == ';' || *p == ' ' || *p == '\t'))
			p++;
		if (end - p >= 2 && (p[0] == 'q' || p[0] == 'Q') &&
		    p[1] == '=') {
			p += 2;
			if (p < end && *p == '0') {
				p++;
				if (p < end && *p == '.')
					for (p++; p < end && *p == '0'; p++)
						;
				return p == end || *p == ';' || *p == ' ';
			}
			return 0;
		}
		while (p < end && *p != ';')
			p++;
	}
	return 0;
}

/* Does a media range of an Accept header cover type/subtype? */
static int
accept_covers(const char *accept, const char *type, const char *sub)
{
	const char	*p = accept, *e;
	size_t		 n, mlen, len, tl = strlen(type), sl = strlen(sub);

	while (*p != '\0') {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		n = strcspn(p, ",");		/* the whole range */
		mlen = strcspn(p, ",;");	/* its media type */
		e = p + mlen;
		while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		len = (size_t)(e - p);
		if (!range_refused(p + mlen, n - mlen) &&
		    ((len == 3 && strncmp(p, "*/*", 3) == 0) ||
		    (len == tl + 2 && strncasecmp(p, type, tl) == 0 &&
		    strncmp(p + tl, "/*", 2) == 0) ||
		    (len == tl + 1 + sl && strncasecmp(p, type, tl) == 0 &&
		    p[tl] == '/' && strncasecmp(p + tl + 1, sub, sl) == 0)))
			return 1;
		p += n;
	}
	return 0;
}

static int
content_type_json(const char *ct)
{
	size_t	 n = strlen("application/json");

	if (ct == NULL || strncasecmp(ct, "application/json", n) != 0)
		return 0;
	return ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ';
}

#define MSG_INVALID	"Invalid Request: not a JSON-RPC 2.0 message"
#define ID_TOO_LONG	"Invalid Request: a string id may have at most " \
	RPC_ID_MAX_TEXT " bytes"

/* A request id or progress token: a string of bounded length, or an integer. */
static int
rpc_id_ok(json_t *v)
{
	return json_is_integer(v) || (json_is_string(v) &&
	    json_string_length(v) <= RPC_ID_MAX);
}

/* The id of a message, if it has one an answer can carry; or NULL. */
json_t *
mcp_readable_id(json_t *m)
{
	json_t	*id;

	if (!json_is_object(m) || (id = json_object_get(m, "id")) == NULL ||
	    !rpc_id_ok(id))
		return NULL;
	return id;
}

/*
 * The id of the request's single message, for its error answers: the
 * body is read here if the answer came before it was (a wrong
 * Content-Type).  NULL when there is none to read.
 */
json_t *
mcp_body_id(struct freq *fr)
{
	if (fr->body == NULL && fr->http != NULL && fr->http->bodylen > 0)
		fr->body = json_loadb(fr->http->body, fr->http->bodylen,
		    JSON_REJECT_DUPLICATES, NULL);
	return mcp_readable_id(fr->body);
}

/*
 * Sorts one message.  JSON-RPC 2.0 as MCP uses it: "jsonrpc": "2.0", an id
 * that is a string (of at most RPC_ID_MAX bytes) or an integer, params
 * that are an object, and no other members.  *why says what is wrong with
 * an invalid one.
 */
enum msg_kind
msg_classify(json_t *m, json_t **id, const char **method, json_t **params,
    const char **why)
{
	const char	*key;
	json_t		*v, *jr;

	*id = NULL;
	*method = NULL;
	*params = NULL;
	*why = MSG_INVALID;
	if (!json_is_object(m))
		return MK_INVALID;
	json_object_foreach(m, key, v) {
		if (strcmp(key, "jsonrpc") != 0 && strcmp(key, "id") != 0 &&
		    strcmp(key, "method") != 0 && strcmp(key, "params") != 0 &&
		    strcmp(key, "result") != 0 && strcmp(key, "error") != 0)
			return MK_INVALID;
	}
	jr = json_object_get(m, "jsonrpc");
	if (!json_is_string(jr) || strcmp(json_string_value(jr), "2.0") != 0)
		return MK_INVALID;
	if ((v = json_object_get(m, "id")) != NULL) {
		if (!json_is_string(v) && !json_is_integer(v))
			return MK_INVALID;
		if (!rpc_id_ok(v)) {
			*why = ID_TOO_LONG;
			return MK_INVALID;
		}
		*id = v;
	}
	if ((v = json_object_get(m, "method")) != NULL) {
		if (!json_is_string(v) || json_object_get(m, "result") ||
		    json_object_get(m, "error"))
			return MK_INVALID;
		*method = json_string_value(v);
		if ((v = json_object_get(m, "params")) != NULL) {
			if (!json_is_object(v))
				return MK_INVALID;
			*params = v;
		}
		return *id != NULL ? MK_REQUEST : MK_NOTIFICATION;
	}
	if (*id != NULL && (json_object_get(m, "result") != NULL) !=
	    (json_object_get(m, "error") != NULL) &&
	    json_object_get(m, "params") == NULL)
		return MK_RESPONSE;
	return MK_INVALID;
}

static json_t *
mcp_initialize_result(const char *version)
{
	json_t	*r;

	r = json_pack("{s:s,s:{s:{s:b}},s:{s:s,s:s,s:s},s:s}",
	    "protocolVersion", version,
	    "capabilities", "tools", "listChanged", 0,
	    "serverInfo", "name", FRONTD_NAME, "title", "mcvm virtual "
	    "machines", "version", FRONTD_VERSION,
	    "instructions", MCP_INSTRUCTIONS);
	/* 2025-11-25's tasks: tools/call may be one, and cancelled. */
	if (r != NULL && strcmp(version, "2025-11-25") == 0)
		json_object_set_new(json_object_get(r, "capabilities"),
		    "tasks", json_pack("{s:{},s:{s:{s:{}}}}", "cancel",
		    "requests", "tools", "call"));
	return r;
}

static void
sse_event(struct freq *fr, json_t *msg)
{
	char	*text, *ev;
	int	 n;

	if (fr->conn == NULL)
		return;
	if (msg == NULL || (text = json_dumps(msg, JSON_COMPACT)) == NULL) {
		log_warnx("%s: an event could not be encoded", __func__);
		return;
	}
	if ((n = asprintf(&ev, "event: message\ndata: %s\n\n", text)) == -1) {
		log_warn("%s: asprintf", __func__);
		free(text);
		return;
	}
	http_stream_write(fr->conn, ev, (size_t)n);
	free(ev);
	free(text);
}

/*
 * One notifications/progress event.  Progress must grow with every event:
 * frontd's heartbeats and mcvmd's steps share one counter, which takes
 * mcvmd's value when that is larger.
 */
static void
mcp_progress_send(struct freq *fr, struct fop *op, uint64_t value,
    uint64_t total, const char *msg)
{
	json_t	*n;

	if (fr->progress_n > 0 && value <= fr->progress_last)
		value = fr->progress_last + 1;
	fr->progress_last = value;
	fr->progress_n++;
	n = json_pack("{s:s,s:s,s:{s:O,s:I,s:s}}", "jsonrpc", "2.0",
	    "method", "notifications/progress", "params",
	    "progressToken", op->progress, "progress", (json_int_t)value,
	    "message", msg);
	if (n == NULL)		/* a message that is not UTF-8: none */
		n = json_pack("{s:s,s:s,s:{s:O,s:I}}", "jsonrpc", "2.0",
		    "method", "notifications/progress", "params",
		    "progressToken", op->progress, "progress",
		    (json_int_t)value);
	if (n != NULL && total >= value && total > 0)
		json_object_set_new(json_object_get(n, "params"), "total",
		    json_integer((json_int_t)total));
	sse_event(fr, n);
	json_decref(n);
}

static void
mcp_progress_tick(int fd, short ev, void *arg)
{
	struct freq	*fr = arg;
	struct timeval	 tv = { PROGRESS_INTERVAL, 0 };
	char		 msg[TOOL_PROGRESS_MAX];

	if (fr->ops == NULL || fr->ops->progress == NULL)
		return;
	fr->progress_secs += PROGRESS_INTERVAL;
	snprintf(msg, sizeof(msg), "%s still running after %u s",
	    fr->ops->tool->name, fr->progress_secs);
	mcp_progress_send(fr, fr->ops, 0, 0, msg);
	evtimer_add(fr->progress_ev, &tv);
}

/* A step reported by mcvmd for a call answered over SSE. */
void
mcp_op_progress(struct fop *op, uint64_t value, uint64_t total,
    const char *msg)
{
	struct freq	*fr = op->req;

	if (!fr->sse || op->progress == NULL || fr->conn == NULL)
		return;
	mcp_progress_send(fr, op, value, total, msg);
}

static void
mcp_sse_start(struct freq *fr, struct fop *op)
{
	struct timeval	 tv = { PROGRESS_INTERVAL, 0 };
	char		 msg[TOOL_PROGRESS_MAX];

	fr->sse = 1;
	if (fr->session[0] != '\0')
		http_add_header(fr->conn, "Mcp-Session-Id", fr->session);
	http_stream_start(fr->conn, 200, "text/event-stream");
	snprintf(msg, sizeof(msg), "%s started", op->tool->name);
	mcp_progress_send(fr, op, 0, 0, msg);
	/* Without a timer, the stream only lacks its heartbeats. */
	if ((fr->progress_ev = evtimer_new(fenv->base, mcp_progress_tick,
	    fr)) == NULL)
		log_warnx("%s: evtimer_new", __func__);
	else
		evtimer_add(fr->progress_ev, &tv);
}

/* A tool failure the model can act on: a result with isError. */
static json_t *
tool_error_result(const char *text)
{
	return json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text",
	    "text", text, "isError", 1);
}

/*
 * tools/call.  Returns the reply, or NULL when it went to mcvmd and the
 * reply will come later.
 */
static json_t *
mcp_tools_call(struct freq *fr, json_t *id, json_t *params, size_t slot)
{
	const struct tool_desc	*tool;
	struct tool_args	 args;
	struct fop		*op;
	json_t			*name, *jargs, *meta, *token = NULL;
	void			*scratch = NULL;
	char			 err[TOOL_ERR_MAX];
	char			 text[TOOL_ERR_MAX * 2];
	char			 shown[SHOWN_MAX + 1];
	json_t			*empty = NULL, *reply;
	int			 rc;

	if (params == NULL || !json_is_string(name = json_object_get(params,
	    "name")))
		return mcp_error(json_incref(id), JSONRPC_INVALID_PARAMS,
		    "tools/call needs params.name, a string");
	if ((tool = tool_by_name(json_string_value(name))) == NULL) {
		utf8_snprintf(shown, sizeof(shown), "%s",
		    json_string_value(name));
		utf8_snprintf(err, sizeof(err), "Unknown tool: %s; tools/list "
		    "gives the available tools", shown);
		return mcp_error(json_incref(id), JSONRPC_INVALID_PARAMS, err);
	}
	jargs = json_object_get(params, "arguments");
	if (jargs == NULL || json_is_null(jargs))
		jargs = empty = json_object();
	else if (!json_is_object(jargs))
		return mcp_error(json_incref(id), JSONRPC_INVALID_PARAMS,
		    "params.arguments must be an object");
	if ((meta = json_object_get(params, "_meta")) != NULL) {
		if (!json_is_object(meta)) {
			json_decref(empty);
			return mcp_error(json_incref(id),
			    JSONRPC_INVALID_PARAMS,
			    "params._meta must be an object");
		}
		token = json_object_get(meta, "progressToken");
		if (token != NULL && !rpc_id_ok(token)) {
			json_decref(empty);
			return mcp_error(json_incref(id),
			    JSONRPC_INVALID_PARAMS, "progressToken must be an "
			    "integer or a string of at most " RPC_ID_MAX_TEXT
			    " bytes");
		}
	}
	if (catalog_args(tool, jargs, &args, &scratch, err,
	    sizeof(err)) == -1) {
		json_decref(empty);
		free(scratch);
		utf8_snprintf(text, sizeof(text), "Invalid arguments for %s: "
		    "%s. Fix them as the tool's inputSchema describes and "
		    "call again.", tool->name, err);
		return mcp_result(json_incref(id), tool_error_result(text));
	}
	if ((op = calloc(1, sizeof(*op))) == NULL) {
		log_warn("%s: calloc", __func__);
		json_decref(empty);
		free(scratch);
		return mcp_error(json_incref(id), JSONRPC_SERVER_ERROR,
		    "out of memory; retry later");
	}
	op->tool = tool;
	op->rpc_id = json_incref(id);
	op->progress = json_incref(token);
	op->slot = slot;
	req_op_link(fr, op);
	if ((tool->flags & TF_LONG) &&
	    (op->task = task_wanted(fr, params)) != FOP_TOOL)
		rc = task_send(op, params, &args);
	else
		rc = front_send_tool(op, &args);
	if (rc == -1) {
		req_op_unlink_free(op);
		snprintf(text, sizeof(text), "The arguments for %s are too "
		    "large to send.", tool->name);
		reply = mcp_result(json_incref(id), tool_error_result(text));
	} else
		reply = NULL;
	json_decref(empty);
	free(scratch);
	if (reply == NULL && !fr->batch && token != NULL &&
	    (tool->flags & TF_LONG) && op->task == FOP_TOOL)
		mcp_sse_start(fr, op);
	return reply;
}

json_t *
mcp_request(struct freq *fr, json_t *id, const char *method, json_t *params,
    size_t slot)
{
	json_t	*cursor;
	char	 err[TOOL_ERR_MAX], shown[SHOWN_MAX + 1];

	if (strcmp(method, "ping") == 0)
		return mcp_result(json_incref(id), json_object());
	if (strcmp(method, "tools/list") == 0) {
		cursor = params != NULL ? json_object_get(params, "cursor") :
		    NULL;
		if (cursor != NULL && !json_is_string(cursor))
			return mcp_error(json_incref(id),
			    JSONRPC_INVALID_PARAMS, "cursor must be a string");
		if (cursor != NULL)
			return mcp_error(json_incref(id),
			    JSONRPC_INVALID_PARAMS, "unknown cursor: the tool "
			    "list has a single page");
		return mcp_result(json_incref(id),
		    json_incref(fenv->tools_list));
	}
	if (strcmp(method, "tools/call") == 0)
		return mcp_tools_call(fr, id, params, slot);
	if (strncmp(method, "tasks/", 6) == 0)
		return task_request(fr, id, method, params, slot);
	if (strcmp(method, "initialize") == 0)
		return mcp_error(json_incref(id), JSONRPC_INVALID_REQUEST,
		    "initialize must be sent alone, to start a session");
	utf8_snprintf(shown, sizeof(shown), "%s", method);
	utf8_snprintf(err, sizeof(err), "Method not found: %s", shown);
	return mcp_error(json_incref(id), JSONRPC_METHOD_NOT_FOUND, err);
}

static void
mcp_cancelled(struct freq *fr, json_t *params)
{
	struct fop	*op;
	struct freq	*owner;
	json_t		*rid;
	size_t		 slot;

	if (params == NULL || ((rid = json_object_get(params, "requestId")) ==
	    NULL) || (!json_is_string(rid) && !json_is_integer(rid)))
		return;
	if ((op = req_find_op(fr->session, rid)) == NULL)
		return;
	owner = op->req;
	slot = op->slot;
	log_debug("%s: %s cancelled by the client", __func__, op->tool->name);
	json_array_set_new(owner->replies, slot, mcp_error(
	    json_incref(op->rpc_id), JSONRPC_CANCELLED, "request cancelled"));
	req_op_cancel(op);
	if (owner->waiting == 0 && owner != fr)
		mcp_send(owner);
}

void
mcp_send(struct freq *fr)
{
	json_t	*out;
	int	 status = 200;

	out = fr->batch ? fr->replies : json_array_get(fr->replies, 0);
	if (fr->rev2026)
		status = stateless_finish(out);
	if (fr->sse) {
		if (fr->conn != NULL) {
			sse_event(fr, out);
			http_set_abort(fr->conn, NULL, NULL);
			http_stream_end(fr->conn);
		}
		req_finish(fr);
		return;
	}
	if (fr->conn != NULL && fr->session[0] != '\0')
		http_add_header(fr->conn, "Mcp-Session-Id", fr->session);
	req_reply_json(fr, status, json_incref(out));
}

void
mcp_op_done(struct fop *op, uint32_t status, const char *json)
{
	struct freq	*fr = op->req;

	if (op->task != FOP_TOOL)
		json_array_set_new(fr->replies, op->slot,
		    task_result(op, status, json));
	else
		json_array_set_new(fr->replies, op->slot, mcp_result(
		    json_incref(op->rpc_id), catalog_result(status, json)));
	req_op_unlink_free(op);
	if (fr->waiting == 0)
		mcp_send(fr);
}

/*
 * A result that came by descriptor: an image content block whose data is
 * the descriptor's bytes in base64, or a text content block whose text
 * they are, then the JSON part as text and as structuredContent, written
 * as it is read (payload.c).  What can be
 * checked first fails the call with an isError result; a batch cannot
 * hold it.  Over SSE it is the stream's last event.
 */
void
mcp_op_done_fd(struct fop *op, const struct msg_front_tool_result_fd *m,
    int fd)
{
	struct freq	*fr = op->req;
	json_t		*obj = NULL, *text = NULL;
	char		*id = NULL, *jtext = NULL, *otext = NULL;
	char		*head = NULL, *tail = NULL;
	char		 block[PAYLOAD_MIME_MAX + 48];
	char		 err[PAYLOAD_ERR_MAX + 64];
	int		 is_pipe, hn = -1, tn = -1;

	if (fr->batch) {
		(void)snprintf(err, sizeof(err), "%s returns %s, which "
		    "cannot be part of a batch: call it alone",
		    op->tool->name, m->kind == TR_TEXT ? "a streamed text" :
		    "an image");
		goto fail;
	}
	if ((obj = req_fd_result(op, m, fd, &is_pipe, err, sizeof(err))) ==
	    NULL)
		goto fail;
	/* The mime type was checked as a token (payload_mime_valid). */
	if (m->kind == TR_TEXT)
		(void)snprintf(block, sizeof(block), "\"type\":\"text\","
		    "\"text\"");
	else
		(void)snprintf(block, sizeof(block), "\"type\":\"image\","
		    "\"mimeType\":\"%s\",\"data\"", m->mime);
	if ((text = json_string(m->json)) == NULL ||
	    (id = json_dumps(op->rpc_id, JSON_COMPACT | JSON_ENCODE_ANY)) ==
	    NULL || (jtext = json_dumps(text, JSON_COMPACT |
	    JSON_ENCODE_ANY)) == NULL || (otext = json_dumps(obj,
	    JSON_COMPACT)) == NULL ||
	    (hn = asprintf(&head, "%s{\"jsonrpc\":\"2.0\",\"id\":%s,"
	    "\"result\":{\"content\":[{%s:\"", fr->sse ?
	    "event: message\ndata: " : "", id, block)) == -1 ||
	    (tn = asprintf(&tail, "\"},{\"type\":\"text\",\"text\":%s}],"
	    "\"structuredContent\":%s,\"isError\":false%s}}%s", jtext, otext,
	    fr->rev2026 ? stateless_result_members() : "",
	    fr->sse ? "\n\n" : "")) == -1) {
		(void)snprintf(err, sizeof(err), "internal error: the result "
		    "could not be encoded");
		goto fail;
	}
	req_op_unlink_free(op);
	if (!fr->sse) {
		if (fr->session[0] != '\0')
			http_add_header(fr->conn, "Mcp-Session-Id",
			    fr->session);
		http_stream_start(fr->conn, 200, "application/json");
	}
	req_stream_fd(fr, fd, is_pipe, m->kind, m->size, head, (size_t)hn,
	    tail, (size_t)tn);
	goto done;
fail:
	close(fd);
	mcp_op_done(op, TOOL_ERROR, err);
done:
	json_decref(obj);
	json_decref(text);
	free(id);
	free(jtext);
	free(otext);
	if (hn != -1)
		free(head);
	if (tn != -1)
		free(tail);
}

/*
 * tools/list alone: the catalogue's text is spliced in, not re-encoded.
 * The id was bounded by msg_classify; its encoding is not.
 */
static void
mcp_tools_list_text(struct freq *fr, json_t *id)
{
	char	*idtext, *head;

	if ((idtext = json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY)) ==
	    NULL) {
		req_reply_json(fr, 500, mcp_error(NULL, JSONRPC_INTERNAL_ERROR,
		    "internal error: the id could not be encoded"));
		return;
	}
	if (asprintf(&head, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":",
	    idtext) == -1) {
		free(idtext);
		req_reply_json(fr, 503, mcp_error(json_incref(id),
		    JSONRPC_SERVER_ERROR, "out of memory; retry later"));
		return;
	}
	free(idtext);
	http_add_header(fr->conn, "Mcp-Session-Id", fr->session);
	req_reply_text(fr, 200, head, fenv->tools_list_text,
	    fenv->tools_list_len, "}");
	free(head);
}

/* An error for the whole POST, with its message's id if it can be read. */
static void
mcp_fail(struct freq *fr, int status, int code, const char *msg)
{
	req_reply_json(fr, status, mcp_error(json_incref(mcp_body_id(fr)),
	    code, msg));
}

static void
mcp_initialize(struct freq *fr, json_t *id, json_t *params)
{
	struct session	*s;
	json_t		*pv;
	const char	*version;

	if (params == NULL || !json_is_string(pv = json_object_get(params,
	    "protocolVersion"))) {
		req_reply_json(fr, 200, mcp_error(json_incref(id),
		    JSONRPC_INVALID_PARAMS,
		    "initialize needs params.protocolVersion"));
		return;
	}
	version = json_string_value(pv);
	if (!mcp_version_supported(version))
		version = mcp_versions[0];
	if ((s = session_new(fr->workspace, version)) == NULL) {
		mcp_fail(fr, 503, JSONRPC_SERVER_ERROR,
		    "too many sessions; retry later");
		return;
	}
	log_debug("%s: workspace %s: session for protocol %s", __func__,
	    fr->workspace, version);
	http_add_header(fr->conn, "Mcp-Session-Id", session_id(s));
	req_reply_json(fr, 200, mcp_result(json_incref(id),
	    mcp_initialize_result(version)));
}

void
mcp_post(struct freq *fr)
{
	struct http_request	*r = fr->http;
	struct session		*s;
	json_error_t		 jerr;
	json_t			*m, *id, *params;
	const char		*pv, *sid, *method, *accept, *why;
	enum msg_kind		 kind;
	size_t			 i, n, nreq = 0;
	int			 fast_list = 0;
	char			 err[TOOL_ERR_MAX];

	if (!content_type_json(http_header(r, "Content-Type"))) {
		mcp_fail(fr, 415, JSONRPC_SERVER_ERROR,
		    "Unsupported Media Type: Content-Type must be "
		    "application/json");
		return;
	}
	accept = http_header(r, "Accept");
	if (accept == NULL || !accept_covers(accept, "application",
	    "json") || !accept_covers(accept, "text", "event-stream")) {
		mcp_fail(fr, 406, JSONRPC_SERVER_ERROR,
		    "Not Acceptable: Accept must list application/json and "
		    "text/event-stream");
		return;
	}
	fr->body = json_loadb(r->body, r->bodylen, JSON_REJECT_DUPLICATES |
	    JSON_DECODE_ANY, &jerr);
	if (fr->body == NULL) {
		snprintf(err, sizeof(err), "Parse error: the body is not "
		    "valid JSON (line %d, column %d)", jerr.line, jerr.column);
		mcp_fail(fr, 400, JSONRPC_PARSE_ERROR, err);
		return;
	}
	if (stateless_wanted(r, fr->body)) {
		stateless_post(fr);
		return;
	}
	pv = http_header(r, "MCP-Protocol-Version");
	if (http_header_count(r, "MCP-Protocol-Version") > 1 ||
	    (pv != NULL && !mcp_version_supported(pv))) {
		snprintf(err, sizeof(err), "Bad Request: send one "
		    "MCP-Protocol-Version header (supported: %s, %s, %s, %s)",
		    STATELESS_VERSION, mcp_versions[0], mcp_versions[1],
		    mcp_versions[2]);
		mcp_fail(fr, 400, JSONRPC_SERVER_ERROR, err);
		return;
	}
	if (json_is_array(fr->body)) {
		fr->batch = 1;
		n = json_array_size(fr->body);
		if (n == 0 || n > BATCH_MAX) {
			mcp_fail(fr, 400, JSONRPC_INVALID_REQUEST, n == 0 ?
			    "Invalid Request: empty batch" :
			    "Invalid Request: batch too large");
			return;
		}
	} else
		n = 1;

	/* initialize, alone, is the one message that needs no session. */
	if (!fr->batch) {
		kind = msg_classify(fr->body, &id, &method, &params, &why);
		if (kind == MK_INVALID) {
			mcp_fail(fr, 400, JSONRPC_INVALID_REQUEST, why);
			return;
		}
		if (kind == MK_REQUEST && strcmp(method, "initialize") == 0) {
			mcp_initialize(fr, id, params);
			return;
		}
		fast_list = kind == MK_REQUEST && params == NULL &&
		    strcmp(method, "tools/list") == 0;
	}
	if ((sid = http_header(r, "Mcp-Session-Id")) == NULL) {
		mcp_fail(fr, 400, JSONRPC_SERVER_ERROR, "Bad Request: "
		    "Mcp-Session-Id header is required; call initialize "
		    "first");
		return;
	}
	if ((s = session_find(sid, fr->workspace)) == NULL) {
		mcp_fail(fr, 404, JSONRPC_NO_SESSION, "Session not found: it "
		    "ended or never existed; initialize a new session");
		return;
	}
	session_touch(s);
	snprintf(fr->session, sizeof(fr->session), "%s", session_id(s));
	if (fr->batch && strcmp(session_version(s), VERSION_BATCH) != 0) {
		mcp_fail(fr, 400, JSONRPC_INVALID_REQUEST, "Invalid Request: "
		    "JSON-RPC batches are accepted only on protocol version "
		    VERSION_BATCH);
		return;
	}

	if (fast_list) {
		mcp_tools_list_text(fr, id);
		return;
	}
	if ((fr->replies = json_array()) == NULL) {
		mcp_fail(fr, 503, JSONRPC_SERVER_ERROR,
		    "out of memory; retry later");
		return;
	}
	for (i = 0; i < n; i++) {
		m = fr->batch ? json_array_get(fr->body, i) : fr->body;
		kind = msg_classify(m, &id, &method, &params, &why);
		switch (kind) {
		case MK_INVALID:
			json_array_append_new(fr->replies, mcp_error(
			    json_incref(mcp_readable_id(m)),
			    JSONRPC_INVALID_REQUEST, why));
			nreq++;
			break;
		case MK_REQUEST:
			json_array_append_new(fr->replies, json_null());
			m = mcp_request(fr, id, method, params, nreq);
			if (m != NULL)
				json_array_set_new(fr->replies, nreq, m);
			nreq++;
			break;
		case MK_NOTIFICATION:
			if (strcmp(method, "notifications/cancelled") == 0)
				mcp_cancelled(fr, params);
			break;
		case MK_RESPONSE:
			/* mcvm sends no requests; nothing to match. */
			break;
		}
	}
	if (nreq == 0) {
		req_reply_json(fr, 202, NULL);
		return;
	}
	if (fr->waiting == 0)
		mcp_send(fr);
}

void
mcp_delete(struct freq *fr)
{
	struct session	*s;
	const char	*sid;

	if (stateless_delete(fr))
		return;
	if ((sid = http_header(fr->http, "Mcp-Session-Id")) == NULL) {
		mcp_fail(fr, 400, JSONRPC_SERVER_ERROR,
		    "Bad Request: Mcp-Session-Id header is required");
		return;
	}
	if ((s = session_find(sid, fr->workspace)) == NULL) {
		mcp_fail(fr, 404, JSONRPC_NO_SESSION, "Session not found");
		return;
	}
	session_end(s);
	req_reply_json(fr, 200, NULL);
}
