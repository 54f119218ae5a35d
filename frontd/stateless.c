/*
 * MCP revision 2026-07-28 at /mcp, served statelessly beside the session
 * revisions of mcp.c.  A request of this revision carries all that is
 * needed to serve it: no initialize comes first, no session is made and
 * no Mcp-Session-Id is read or sent.  The client's capabilities are read
 * from that request's _meta alone, never from an earlier request.  The
 * bearer token is still resolved by mcvmd on every request; frontd keeps
 * nothing of a workspace between such requests but its rate limit.
 *
 * A POST is of this revision when its MCP-Protocol-Version header names
 * no session revision, or its _meta names a protocol version that is not
 * one (stateless_wanted).  It is then checked in this order, and every
 * error carries the request's id when the body has one to read:
 *
 *	one JSON-RPC message (no batch)				-32600, 400
 *	MCP-Protocol-Version, if sent, a version served		-32022, 400
 *	a request (no response)					-32600, 400
 *	Mcp-Method equal to method; Mcp-Name to params.name	-32020, 400
 *	params._meta with protocolVersion, clientCapabilities	-32602, 400
 *	one MCP-Protocol-Version header, equal to _meta's	-32020, 400
 *	that version served					-32022, 400
 *	a method of this revision				-32601, 404
 *
 * A notification is accepted with 202 and has no effect: on Streamable
 * HTTP this revision cancels a request by closing its stream, which
 * frontd already takes as cancellation (request.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "frontd.h"
#include "log.h"
#include "utf8.h"

#define META_VERSION	"io.modelcontextprotocol/protocolVersion"
#define META_CAPS	STATELESS_META_CAPS
#define META_SERVER	"io.modelcontextprotocol/serverInfo"
#define SERVER_TITLE	"mcvm virtual machines"

/*
 * Caching hints (CacheableResult).  The catalogue is fixed for the life
 * of a frontd, but an upgrade may change it: an hour.  tools/list is
 * "private" because a workspace's view of its tools is its own;
 * server/discover says nothing of any workspace.
 */
#define TOOLS_LIST_TTL_MS	(3600 * 1000)
#define DISCOVER_TTL_MS		(3600 * 1000)

/* Bytes of a decoded Mcp-Name; a tool name is far shorter. */
#define MCP_NAME_MAX		1024
#define B64_PREFIX		"=?base64?"
#define B64_SUFFIX		"?="

/* Methods earlier revisions had and this one removed. */
static const char *const removed_methods[] = {
	"ping", "logging/setLevel", "resources/subscribe",
	"resources/unsubscribe", "notifications/initialized",
};

/* What every result carries after its own members (stateless_finish). */
#define RESULT_MEMBERS							\
	",\"resultType\":\"complete\",\"_meta\":{\"" META_SERVER	\
	"\":{\"name\":\"" FRONTD_NAME "\",\"title\":\"" SERVER_TITLE	\
	"\",\"version\":\"" FRONTD_VERSION "\"}}"

const char *
stateless_result_members(void)
{
	return RESULT_MEMBERS;
}

/* _meta["io.modelcontextprotocol/protocolVersion"] of a message, or NULL. */
static json_t *
meta_version(json_t *m)
{
	json_t	*params, *meta;

	if (!json_is_object(m) ||
	    !json_is_object(params = json_object_get(m, "params")) ||
	    !json_is_object(meta = json_object_get(params, "_meta")))
		return NULL;
	return json_object_get(meta, META_VERSION);
}

/*
 * Is this POST of revision 2026-07-28 (or of a version unknown to
 * frontd, which only this revision's error can name)?  A session
 * revision's request has neither a header of another version nor such
 * a _meta; one with two headers is left to mcp.c, which refuses it.
 */
int
stateless_wanted(const struct http_request *r, json_t *body)
{
	const char	*pv = http_header(r, "MCP-Protocol-Version");
	json_t		*mv;

	if (http_header_count(r, "MCP-Protocol-Version") > 1)
		return 0;
	if (pv != NULL && !mcp_version_supported(pv))
		return 1;
	if ((mv = meta_version(body)) == NULL)
		return 0;
	return !json_is_string(mv) ||
	    !mcp_version_supported(json_string_value(mv));
}

/* Every version served, this revision first, as a JSON array. */
static json_t *
versions_array(void)
{
	json_t		*a;
	const char	*v;
	size_t		 i;

	if ((a = json_array()) == NULL)
		return NULL;
	if (json_array_append_new(a, json_string(STATELESS_VERSION)) == -1) {
		json_decref(a);
		return NULL;
	}
	for (i = 0; (v = mcp_version(i)) != NULL; i++)
		if (json_array_append_new(a, json_string(v)) == -1) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* The HTTP status of an error answer, as the revision assigns them. */
static int
error_status(json_t *msg)
{
	json_t	*code;

	code = json_object_get(json_object_get(msg, "error"), "code");
	switch (json_integer_value(code)) {
	case JSONRPC_METHOD_NOT_FOUND:
		return 404;
	case JSONRPC_PARSE_ERROR:
	case JSONRPC_INVALID_REQUEST:
	case JSONRPC_INVALID_PARAMS:
	case MCP_HEADER_MISMATCH:
	case MCP_MISSING_CLIENT_CAPABILITY:
	case MCP_UNSUPPORTED_VERSION:
		return 400;
	case JSONRPC_INTERNAL_ERROR:
		return 500;
	case JSONRPC_SERVER_ERROR:
		return 503;
	}
	return 200;
}

/*
 * The last step of every answer of this revision (mcp_send): a result
 * gets resultType and the server's identity in its _meta.  The result
 * is copied first, since it may be shared (the catalogue).  Returns the
 * answer's HTTP status.
 */
int
stateless_finish(json_t *msg)
{
	json_t	*res, *copy, *meta, *info;

	if (!json_is_object(msg))
		return 500;
	if (json_object_get(msg, "error") != NULL)
		return error_status(msg);
	if ((res = json_object_get(msg, "result")) == NULL ||
	    !json_is_object(res))
		return 200;
	info = json_pack("{s:s,s:s,s:s}", "name", FRONTD_NAME, "title",
	    SERVER_TITLE, "version", FRONTD_VERSION);
	if ((copy = json_copy(res)) == NULL || info == NULL)
		goto fail;
	meta = json_object_get(copy, "_meta");
	if (json_is_object(meta)) {
		if ((meta = json_copy(meta)) == NULL)
			goto fail;
	} else if ((meta = json_object()) == NULL)
		goto fail;
	if (json_object_set_new(meta, META_SERVER, info) == -1) {
		info = NULL;
		json_decref(meta);
		goto fail;
	}
	info = NULL;
	/* A task's is "task"; every other result is complete. */
	if (json_object_set_new(copy, "_meta", meta) == -1 ||
	    (json_object_get(copy, "resultType") == NULL &&
	    json_object_set_new(copy, "resultType",
	    json_string("complete")) == -1) ||
	    json_object_set_new(msg, "result", copy) == -1) {
		copy = NULL;
		goto fail;
	}
	return 200;
fail:
	log_warnx("%s: a result could not be completed", __func__);
	json_decref(info);
	json_decref(copy);
	json_object_del(msg, "result");
	json_object_set_new(msg, "error", json_pack("{s:i,s:s}", "code",
	    JSONRPC_INTERNAL_ERROR, "message", "internal error: the result "
	    "could not be encoded"));
	return 500;
}

/* Answers one message (taking it) through mcp_send, as a tool's is. */
static void
reply(struct freq *fr, json_t *msg)
{
	if (fr->replies == NULL && (fr->replies = json_array()) == NULL) {
		json_decref(msg);
		req_reply_json(fr, 503, mcp_error(json_incref(mcp_body_id(fr)),
		    JSONRPC_SERVER_ERROR, "out of memory; retry later"));
		return;
	}
	if (json_array_size(fr->replies) == 0)
		json_array_append_new(fr->replies, msg);
	else
		json_array_set_new(fr->replies, 0, msg);
	mcp_send(fr);
}

static void
fail(struct freq *fr, json_t *id, int code, const char *msg)
{
	reply(fr, mcp_error(json_incref(id), code, msg));
}

/* A header value may hold visible ASCII, spaces and tabs only. */
static int
header_value_ok(const char *v)
{
	for (; *v != '\0'; v++)
		if ((*v < 0x20 || *v > 0x7e) && *v != '\t')
			return 0;
	return 1;
}

/*
 * Mcp-Name against the body's value: equal after the header is decoded
 * if it is in the sentinel form =?base64?...?=.  Returns 0, or -1 with
 * the reason in err.
 */
static int
name_matches(const char *hv, json_t *want, char *err, size_t errlen)
{
	uint8_t		 buf[B64_DECODED_MAX(B64_ENCODED_LEN(MCP_NAME_MAX))];
	const char	*p = hv;
	size_t		 n = strlen(hv), pl = strlen(B64_PREFIX);
	size_t		 sl = strlen(B64_SUFFIX);
	long		 dl;

	if (n >= pl + sl && strncmp(hv, B64_PREFIX, pl) == 0 &&
	    strcmp(hv + n - sl, B64_SUFFIX) == 0) {
		if (n - pl - sl > B64_ENCODED_LEN(MCP_NAME_MAX)) {
			(void)snprintf(err, errlen, "Header mismatch: "
			    "Mcp-Name is too long (at most %d bytes decoded)",
			    MCP_NAME_MAX);
			return -1;
		}
		if ((dl = b64_decode(hv + pl, n - pl - sl, buf)) < 0) {
			(void)snprintf(err, errlen, "Header mismatch: "
			    "Mcp-Name is not valid padded base64 between "
			    B64_PREFIX " and " B64_SUFFIX);
			return -1;
		}
		p = (const char *)buf;
		n = (size_t)dl;
	}
	if (!json_is_string(want) || json_string_length(want) != n ||
	    memcmp(json_string_value(want), p, n) != 0) {
		(void)snprintf(err, errlen, "Header mismatch: Mcp-Name does "
		    "not match the body's %s", json_is_string(want) ?
		    "value" : "value, which is not a string");
		return -1;
	}
	return 0;
}

/*
 * Mcp-Method and Mcp-Name against the body.  Returns 0, or -1 with the
 * reason in err.
 */
static int
headers_match(const struct http_request *r, const char *method,
    json_t *params, char *err, size_t errlen)
{
	const char	*hm, *hn, *key = NULL;
	char		 shown[SHOWN_MAX + 1];

	if (http_header_count(r, "Mcp-Method") != 1 ||
	    (hm = http_header(r, "Mcp-Method")) == NULL) {
		(void)snprintf(err, errlen, "Header mismatch: send one "
		    "Mcp-Method header, equal to the body's method");
		return -1;
	}
	if (!header_value_ok(hm) || strcmp(hm, method) != 0) {
		utf8_snprintf(shown, sizeof(shown), "%s", method);
		(void)snprintf(err, errlen, "Header mismatch: Mcp-Method "
		    "does not match the body's method '%s'", shown);
		return -1;
	}
	if (strcmp(method, "tools/call") == 0 ||
	    strcmp(method, "prompts/get") == 0)
		key = "name";
	else if (strcmp(method, "resources/read") == 0)
		key = "uri";
	hn = http_header(r, "Mcp-Name");
	if (key == NULL) {
		if (hn != NULL && !header_value_ok(hn)) {
			(void)snprintf(err, errlen, "Header mismatch: "
			    "Mcp-Name holds characters a header may not");
			return -1;
		}
		return 0;
	}
	if (http_header_count(r, "Mcp-Name") != 1 || hn == NULL) {
		(void)snprintf(err, errlen, "Header mismatch: %s needs one "
		    "Mcp-Name header, equal to params.%s", method, key);
		return -1;
	}
	if (!header_value_ok(hn)) {
		(void)snprintf(err, errlen, "Header mismatch: Mcp-Name holds "
		    "characters a header may not; send them as "
		    B64_PREFIX "BASE64" B64_SUFFIX);
		return -1;
	}
	return name_matches(hn, params != NULL ? json_object_get(params,
	    key) : NULL, err, errlen);
}

/* Does this request's clientCapabilities declare the tasks extension? */
int
stateless_caps_tasks(json_t *caps)
{
	json_t	*ext = json_object_get(caps, "extensions");

	return json_is_object(ext) &&
	    json_is_object(json_object_get(ext, STATELESS_EXT_TASKS));
}

static json_t *
unsupported_version(json_t *id, const char *requested)
{
	json_t	*e, *versions;
	char	 shown[PROTO_VERSION_MAX * 4 + 1];
	char	 msg[TOOL_ERR_MAX];

	utf8_snprintf(shown, sizeof(shown), "%s", requested);
	(void)snprintf(msg, sizeof(msg), "Unsupported protocol version "
	    "'%s': use one of error.data.supported (server/discover lists "
	    "them too)", shown);
	if ((versions = versions_array()) == NULL ||
	    (e = json_pack("{s:s,s:O,s:{s:i,s:s,s:{s:o,s:s}}}", "jsonrpc",
	    "2.0", "id", id != NULL ? id : json_null(), "error", "code",
	    MCP_UNSUPPORTED_VERSION, "message", msg, "data", "supported",
	    versions, "requested", shown)) == NULL)
		return mcp_error(json_incref(id), JSONRPC_SERVER_ERROR,
		    "out of memory; retry later");
	return e;
}

static json_t *
discover_result(void)
{
	json_t	*caps, *versions;

	if ((versions = versions_array()) == NULL)
		return NULL;
	if ((caps = json_pack("{s:{s:b}}", "tools", "listChanged", 0)) ==
	    NULL) {
		json_decref(versions);
		return NULL;
	}
	if (STATELESS_TASKS_OFFERED && json_object_set_new(caps,
	    "extensions", json_pack("{s:{}}", STATELESS_EXT_TASKS)) == -1) {
		json_decref(versions);
		json_decref(caps);
		return NULL;
	}
	return json_pack("{s:o,s:o,s:s,s:i,s:s}", "supportedVersions",
	    versions, "capabilities", caps, "instructions",
	    mcp_instructions(), "ttlMs", DISCOVER_TTL_MS, "cacheScope",
	    "public");
}

/* tools/list's result, shared with mcp.c's, gets the caching hints. */
static json_t *
tools_list_cacheable(json_t *msg)
{
	json_t	*res, *copy;

	if (!json_is_object(res = json_object_get(msg, "result")))
		return msg;
	if ((copy = json_copy(res)) == NULL ||
	    json_object_set_new(copy, "ttlMs",
	    json_integer(TOOLS_LIST_TTL_MS)) == -1 ||
	    json_object_set_new(copy, "cacheScope",
	    json_string("private")) == -1 ||
	    json_object_set(msg, "result", copy) == -1) {
		json_decref(copy);
		json_object_del(msg, "result");
		json_object_set_new(msg, "error", json_pack("{s:i,s:s}",
		    "code", JSONRPC_INTERNAL_ERROR, "message", "internal "
		    "error: the result could not be encoded"));
		return msg;
	}
	json_decref(copy);
	return msg;
}

static void
dispatch(struct freq *fr, json_t *id, const char *method, json_t *params)
{
	json_t	*m;
	char	 err[TOOL_ERR_MAX], shown[SHOWN_MAX + 1];
	size_t	 i;

	if (strcmp(method, "server/discover") == 0) {
		reply(fr, mcp_result(json_incref(id), discover_result()));
		return;
	}
	/* The tasks extension's tasks/get and tasks/cancel are task.c's. */
	if (strcmp(method, "tools/list") == 0 ||
	    strcmp(method, "tools/call") == 0 ||
	    strcmp(method, "tasks/get") == 0 ||
	    strcmp(method, "tasks/cancel") == 0) {
		if (fr->replies == NULL &&
		    ((fr->replies = json_array()) == NULL ||
		    json_array_append_new(fr->replies, json_null()) == -1)) {
			fail(fr, id, JSONRPC_SERVER_ERROR,
			    "out of memory; retry later");
			return;
		}
		if ((m = mcp_request(fr, id, method, params, 0)) == NULL)
			return;		/* at mcvmd; mcp_send answers */
		if (strcmp(method, "tools/list") == 0)
			m = tools_list_cacheable(m);
		reply(fr, m);
		return;
	}
	utf8_snprintf(shown, sizeof(shown), "%s", method);
	if (strcmp(method, "initialize") == 0) {
		(void)snprintf(err, sizeof(err), "Method not found: "
		    "initialize is not part of protocol " STATELESS_VERSION
		    ", which needs no handshake: send each request with its "
		    "_meta (server/discover lists the versions served), or "
		    "use a session version (%s) with MCP-Protocol-Version "
		    "set to it", mcp_version(0));
		fail(fr, id, JSONRPC_METHOD_NOT_FOUND, err);
		return;
	}
	for (i = 0; i < sizeof(removed_methods) / sizeof(removed_methods[0]);
	    i++)
		if (strcmp(method, removed_methods[i]) == 0) {
			(void)snprintf(err, sizeof(err), "Method not found: "
			    "%s was removed in protocol " STATELESS_VERSION,
			    shown);
			fail(fr, id, JSONRPC_METHOD_NOT_FOUND, err);
			return;
		}
	utf8_snprintf(err, sizeof(err), "Method not found: %s; "
	    "server/discover gives the capabilities served", shown);
	fail(fr, id, JSONRPC_METHOD_NOT_FOUND, err);
}

void
stateless_post(struct freq *fr)
{
	struct http_request	*r = fr->http;
	json_t			*id, *params, *meta, *mv, *caps;
	const char		*method, *why, *pv;
	char			 err[TOOL_ERR_MAX];
	enum msg_kind		 kind;

	fr->rev2026 = 1;
	if (json_is_array(fr->body)) {
		fail(fr, NULL, JSONRPC_INVALID_REQUEST, "Invalid Request: "
		    "protocol " STATELESS_VERSION " has no batches; send "
		    "each message in its own POST");
		return;
	}
	kind = msg_classify(fr->body, &id, &method, &params, &why);
	if (kind == MK_INVALID) {
		fail(fr, mcp_readable_id(fr->body), JSONRPC_INVALID_REQUEST,
		    why);
		return;
	}
	pv = http_header(r, "MCP-Protocol-Version");
	if (pv != NULL && strcmp(pv, STATELESS_VERSION) != 0) {
		reply(fr, unsupported_version(id, pv));
		return;
	}
	switch (kind) {
	case MK_INVALID:
		break;
	case MK_RESPONSE:
		fail(fr, id, JSONRPC_INVALID_REQUEST, "Invalid Request: "
		    "mcvm sends no requests, so a client sends no responses");
		return;
	case MK_NOTIFICATION:
		req_reply_json(fr, 202, NULL);
		return;
	case MK_REQUEST:
		break;
	}
	if (headers_match(r, method, params, err, sizeof(err)) == -1) {
		fail(fr, id, MCP_HEADER_MISMATCH, err);
		return;
	}
	meta = params != NULL ? json_object_get(params, "_meta") : NULL;
	if (!json_is_object(meta)) {
		fail(fr, id, JSONRPC_INVALID_PARAMS, "Invalid params: "
		    "protocol " STATELESS_VERSION " needs params._meta, an "
		    "object with " META_VERSION " and " META_CAPS);
		return;
	}
	if (!json_is_string(mv = json_object_get(meta, META_VERSION))) {
		fail(fr, id, JSONRPC_INVALID_PARAMS, "Invalid params: "
		    "params._meta needs " META_VERSION ", a string");
		return;
	}
	if (!json_is_object(caps = json_object_get(meta, META_CAPS))) {
		fail(fr, id, JSONRPC_INVALID_PARAMS, "Invalid params: "
		    "params._meta needs " META_CAPS ", an object (it may be "
		    "empty)");
		return;
	}
	if (pv == NULL || strcmp(pv, json_string_value(mv)) != 0 ||
	    strlen(pv) != json_string_length(mv)) {
		fail(fr, id, MCP_HEADER_MISMATCH, pv == NULL ?
		    "Header mismatch: the MCP-Protocol-Version header is "
		    "required, equal to _meta's " META_VERSION :
		    "Header mismatch: MCP-Protocol-Version does not match "
		    "_meta's " META_VERSION);
		return;
	}
	if (strcmp(pv, STATELESS_VERSION) != 0) {
		reply(fr, unsupported_version(id, pv));
		return;
	}
	fr->caps_tasks = stateless_caps_tasks(caps);
	log_debug("%s: workspace %s: %s%s", __func__, fr->workspace, method,
	    fr->caps_tasks ? " (client has tasks)" : "");
	dispatch(fr, id, method, params);
}

/*
 * DELETE ends a session, which this revision does not have: 405, as
 * the revision asks.  Returns 1 when it answered.
 */
int
stateless_delete(struct freq *fr)
{
	const char	*pv = http_header(fr->http, "MCP-Protocol-Version");

	if (pv == NULL || http_header_count(fr->http,
	    "MCP-Protocol-Version") != 1 || mcp_version_supported(pv))
		return 0;
	fr->rev2026 = 1;
	http_add_header(fr->conn, "Allow", "POST");
	req_reply_json(fr, 405, mcp_error(NULL, JSONRPC_INVALID_REQUEST,
	    "Method Not Allowed: protocol " STATELESS_VERSION " has no "
	    "sessions to end; POST each request to /mcp"));
	return 1;
}
