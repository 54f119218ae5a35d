/*
 * The path of every HTTP request through frontd, whatever its route:
 *
 *	Host and Origin against the allowlist → no credentials in the URL →
 *	the peer's budget of unauthenticated requests → a well-formed Bearer
 *	token → its SHA-256, refused at once if mcvmd refused it moments ago
 *	(authcache.c), else to mcvmd, which answers with the workspace or a
 *	refusal → the workspace's rate limit → the route.
 *
 * Every request from a peer that does not carry a token known to be good
 * costs one of the peer's budget (unauthenticated rate and burst), given
 * back if the token proves good; a peer out of budget is answered 429
 * before anything reaches mcvmd.
 *
 * Nothing in the body is parsed before mcvmd has accepted the token.  The
 * token itself is hashed at once and never stored, logged or echoed.
 */
#include <ctype.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "frontd.h"
#include "hash.h"
#include "log.h"

#define PENDING_BUCKETS		1024
#define WWW_AUTH_MISSING	"Bearer realm=\"mcvm\""
#define WWW_AUTH_INVALID	"Bearer realm=\"mcvm\", error=\"invalid_token\""
#define WWW_AUTH_MALFORMED						\
	"Bearer realm=\"mcvm\", error=\"invalid_request\""

static struct fop	*pending[PENDING_BUCKETS];

static json_t	*error_body(enum route, int, const char *, const char *);
static void	 req_route(struct freq *);
static void	 req_authorized(struct freq *, const char *);

static const char *const localhost_names[] = {
	"localhost", "127.0.0.1", "[::1]",
};

/* Query parameter names that smell of credentials. */
static const char *const token_words[] = {
	"token", "access_token", "auth", "authorization", "bearer", "key",
	"api_key", "apikey", "secret", "password", "credential", "session",
};

static void
pending_add(struct fop *op)
{
	size_t	 b = op->peerid % PENDING_BUCKETS;

	op->hnext = pending[b];
	pending[b] = op;
}

/* The pending operation peerid names, left in the table; or NULL. */
static struct fop *
pending_peek(uint32_t peerid)
{
	struct fop	*op;

	for (op = pending[peerid % PENDING_BUCKETS]; op != NULL;
	    op = op->hnext)
		if (op->peerid == peerid)
			return op;
	return NULL;
}

static struct fop *
pending_take(uint32_t peerid)
{
	struct fop	**pp, *op;

	for (pp = &pending[peerid % PENDING_BUCKETS]; (op = *pp) != NULL;
	    pp = &op->hnext) {
		if (op->peerid == peerid) {
			*pp = op->hnext;
			op->hnext = NULL;
			return op;
		}
	}
	return NULL;
}

/* Calls fn for every pending operation of any request. */
static void
pending_foreach(void (*fn)(struct fop *, void *), void *arg)
{
	struct fop	*op, *nx;
	size_t		 i;

	for (i = 0; i < PENDING_BUCKETS; i++)
		for (op = pending[i]; op != NULL; op = nx) {
			nx = op->hnext;
			fn(op, arg);
		}
}

void
req_op_link(struct freq *fr, struct fop *op)
{
	op->peerid = front_peerid();
	op->req = fr;
	op->next = fr->ops;
	fr->ops = op;
	fr->waiting++;
	pending_add(op);
}

static void
req_op_unlink(struct fop *op)
{
	struct freq	*fr = op->req;
	struct fop	**pp;

	if (fr == NULL)
		return;
	for (pp = &fr->ops; *pp != NULL; pp = &(*pp)->next)
		if (*pp == op) {
			*pp = op->next;
			break;
		}
	op->next = NULL;
	op->req = NULL;
	fr->waiting--;
}

void
req_op_unlink_free(struct fop *op)
{
	pending_take(op->peerid);
	req_op_unlink(op);
	req_op_free(op);
}

void
req_op_free(struct fop *op)
{
	if (op == NULL)
		return;
	json_decref(op->rpc_id);
	json_decref(op->progress);
	free(op);
}

static void
req_free(struct freq *fr)
{
	struct fop	*op;

	/* Operations still at mcvmd are orphaned; their answers dropped. */
	while ((op = fr->ops) != NULL) {
		req_op_unlink(op);
		if (op->tool != NULL && !op->cancelled) {
			op->cancelled = 1;
			front_send_cancel(op->peerid);
		}
	}
	if (fr->progress_ev != NULL)
		event_free(fr->progress_ev);
	payload_cancel(fr->payload);
	if (fr->image_fd != -1)
		close(fr->image_fd);
	json_decref(fr->body);
	json_decref(fr->replies);
	explicit_bzero(fr->hash, sizeof(fr->hash));
	free(fr);
}

/* The client went away before its answer. */
static void
req_conn_gone(void *arg)
{
	struct freq	*fr = arg;

	fr->conn = NULL;
	req_free(fr);
}

/* The answer has been written: the request is over. */
void
req_finish(struct freq *fr)
{
	req_free(fr);
}

/*
 * What is sent when an answer cannot be encoded: nothing a client sent
 * may cost more than its own request.
 */
static const char *
fallback_body(enum route route)
{
	if (route == ROUTE_MCP)
		return "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":"
		    "-32603,\"message\":\"internal error: the answer could "
		    "not be encoded; retry, or report it\"}}";
	return "{\"error\":{\"code\":\"internal\",\"message\":\"internal "
	    "error: the answer could not be encoded; retry, or report "
	    "it\"}}";
}

/*
 * Answers with j (taking its reference), or without a body when j is
 * NULL on a success.  An error without a body, or a body that cannot be
 * encoded, becomes a 500 with the fallback body.
 */
void
req_reply_json(struct freq *fr, int status, json_t *j)
{
	struct http_conn	*c = fr->conn;
	const char		*body;
	char			*text = NULL;

	if (c == NULL) {
		json_decref(j);
		return;
	}
	http_set_abort(c, NULL, NULL);
	if (j == NULL && status < 400) {
		http_reply(c, status, NULL, NULL, 0);
	} else {
		if (j == NULL || (text = json_dumps(j, JSON_COMPACT |
		    JSON_ENCODE_ANY)) == NULL) {
			log_warnx("%s: an answer could not be encoded",
			    __func__);
			status = 500;
			body = fallback_body(fr->route);
		} else
			body = text;
		http_reply(c, status, "application/json", body, strlen(body));
		free(text);
		json_decref(j);
	}
	req_finish(fr);
}

/* An answer already serialized, in up to three pieces. */
void
req_reply_text(struct freq *fr, int status, const char *a, const char *b,
    size_t blen, const char *c)
{
	struct http_conn	*conn = fr->conn;
	char			*text;
	size_t			 alen = strlen(a), clen = strlen(c);

	if (conn == NULL)
		return;
	if ((text = malloc(alen + blen + clen)) == NULL) {
		log_warn("%s: malloc", __func__);
		req_reply_json(fr, 503, error_body(fr->route, 503,
		    "unavailable", "out of memory; retry later"));
		return;
	}
	memcpy(text, a, alen);
	memcpy(text + alen, b, blen);
	memcpy(text + alen + blen, c, clen);
	http_set_abort(conn, NULL, NULL);
	http_reply(conn, status, "application/json", text, alen + blen + clen);
	free(text);
	req_finish(fr);
}

/*
 * An error answer in the shape of the route: JSON-RPC for /mcp, the
 * {"error": {"code", "message"}} object for /v1.
 */
static json_t *
error_body(enum route route, int status, const char *code, const char *msg)
{
	json_t	*j;
	int	 rpc;

	if (route == ROUTE_MCP) {
		switch (status) {
		case 404:
			rpc = JSONRPC_NO_SESSION;
			break;
		case 400:
		case 413:
		case 431:
			rpc = code != NULL && strcmp(code, "parse_error") == 0 ?
			    JSONRPC_PARSE_ERROR : JSONRPC_SERVER_ERROR;
			break;
		default:
			rpc = JSONRPC_SERVER_ERROR;
			break;
		}
		return mcp_error(json_null(), rpc, msg);
	}
	if ((j = json_pack("{s:{s:s,s:s}}", "error", "code", code, "message",
	    msg)) == NULL)
		j = json_pack("{s:{s:s,s:s}}", "error", "code", code,
		    "message", "the error message could not be encoded");
	return j;
}

/*
 * Past authentication (a workspace is known), the body of an MCP
 * request may be read, and its error names the request's id.
 */
void
req_reply_error(struct freq *fr, int status, const char *code,
    const char *msg)
{
	json_t	*j, *id;

	j = error_body(fr->route, status, code, msg);
	if (fr->route == ROUTE_MCP && fr->workspace[0] != '\0' && j != NULL &&
	    (id = mcp_body_id(fr)) != NULL)
		json_object_set(j, "id", id);
	req_reply_json(fr, status, j);
}

static enum route
route_of(const char *path, const char **tool)
{
	*tool = NULL;
	if (path == NULL)
		return ROUTE_NONE;
	if (strcmp(path, "/mcp") == 0)
		return ROUTE_MCP;
	if (strcmp(path, "/v1/tools") == 0)
		return ROUTE_TOOLS;
	if (strncmp(path, "/v1/tools/", 10) == 0 && path[10] != '\0') {
		*tool = path + 10;
		return ROUTE_TOOL;
	}
	if ((*tool = image_route_name(path)) != NULL)
		return ROUTE_IMAGE;
	return ROUTE_NONE;
}

static const char *
status_code_name(int status)
{
	switch (status) {
	case 400: return "bad_request";
	case 401: return "unauthorized";
	case 403: return "forbidden";
	case 404: return "not_found";
	case 405: return "method_not_allowed";
	case 406: return "not_acceptable";
	case 408: return "request_timeout";
	case 413: return "body_too_large";
	case 415: return "unsupported_media_type";
	case 417: return "expectation_failed";
	case 429: return "rate_limited";
	case 431: return "headers_too_large";
	case 501: return "not_implemented";
	case 503: return "unavailable";
	case 505: return "http_version_not_supported";
	}
	return "error";
}

/* The HTTP layer refused a request before the handler saw it. */
void
req_http_error(struct http_conn *c, const char *path, int status,
    const char *msg, void *arg)
{
	const char	*tool, *body;
	enum route	 route = route_of(path, &tool);
	json_t		*j;
	char		*text = NULL;

	j = error_body(route, status, status_code_name(status), msg);
	if (j == NULL || (text = json_dumps(j, JSON_COMPACT)) == NULL)
		body = fallback_body(route);
	else
		body = text;
	http_reply(c, status, "application/json", body, strlen(body));
	free(text);
	json_decref(j);
}

/*
 * host[:port] against an allowlist entry: an entry without a port
 * allows every port.
 */
static int
host_match(const char *host, const char *entry)
{
	size_t		 n = strlen(entry), k;
	const char	*p;
	int		 has_port;

	if (strncasecmp(host, entry, n) != 0)
		return 0;
	p = host + n;
	if (*p == '\0')
		return 1;
	has_port = entry[0] == '[' ? strstr(entry, "]:") != NULL :
	    strchr(entry, ':') != NULL;
	if (has_port || *p != ':')
		return 0;
	for (k = 1; p[k] != '\0'; k++)
		if (!isdigit((unsigned char)p[k]))
			return 0;
	return k >= 2 && k <= 6;
}

int
host_allowed(const struct mcvm_config *conf, const char *host)
{
	size_t	 i;

	if (host == NULL || *host == '\0')
		return 0;
	if (conf->nallow_host == 0) {
		for (i = 0; i < sizeof(localhost_names) /
		    sizeof(localhost_names[0]); i++)
			if (host_match(host, localhost_names[i]))
				return 1;
		return 0;
	}
	for (i = 0; i < conf->nallow_host; i++)
		if (host_match(host, conf->allow_host[i]))
			return 1;
	return 0;
}

/*
 * A browser's Origin: absent is fine (not a browser); present, it must be
 * listed, or be a loopback origin when no list is configured.
 */
int
origin_allowed(const struct mcvm_config *conf, const char *origin)
{
	const char	*host;
	size_t		 i;

	if (origin == NULL)
		return 1;
	if (conf->nallow_origin > 0) {
		for (i = 0; i < conf->nallow_origin; i++)
			if (strcasecmp(origin, conf->allow_origin[i]) == 0)
				return 1;
		return 0;
	}
	if (strncasecmp(origin, "http://", 7) == 0)
		host = origin + 7;
	else if (strncasecmp(origin, "https://", 8) == 0)
		host = origin + 8;
	else
		return 0;
	if (strchr(host, '/') != NULL)
		return 0;
	for (i = 0; i < sizeof(localhost_names) / sizeof(localhost_names[0]);
	    i++)
		if (host_match(host, localhost_names[i]))
			return 1;
	return 0;
}

/* Does a query string carry a parameter whose name suggests a secret? */
int
query_has_token(const char *query)
{
	const char	*p = query, *eq;
	size_t		 n, i;

	while (p != NULL && *p != '\0') {
		n = strcspn(p, "&;");
		eq = memchr(p, '=', n);
		if (eq != NULL)
			n = (size_t)(eq - p);
		for (i = 0; i < sizeof(token_words) / sizeof(token_words[0]);
		    i++)
			if (n >= 3 && strncasecmp(p, token_words[i], n) == 0 &&
			    token_words[i][n] == '\0')
				return 1;
		for (i = 0; i < n; i++)
			if (strncasecmp(p + i, "token", 5) == 0 && i + 5 <= n)
				return 1;
		p += strcspn(p, "&;");
		if (*p != '\0')
			p++;
	}
	return 0;
}

/*
 * "Bearer" 1*SP b64token (RFC 6750).  Returns 0 with the token, or -1 if
 * the header is malformed.
 */
int
bearer_parse(const char *h, const char **tok, size_t *len)
{
	const char	*p;
	size_t		 n;

	if (strncasecmp(h, "Bearer ", 7) != 0)
		return -1;
	for (p = h + 7; *p == ' '; p++)
		;
	for (n = 0; p[n] != '\0'; n++) {
		if (!isalnum((unsigned char)p[n]) &&
		    strchr("-._~+/", p[n]) == NULL)
			break;
	}
	while (p[n] == '=')
		n++;
	if (p[n] != '\0' || n < BEARER_TOKEN_MIN || n > BEARER_TOKEN_MAX)
		return -1;
	*tok = p;
	*len = n;
	return 0;
}

/* The peer's budget is spent: 429, before anything reaches mcvmd. */
static void
reply_unauth_limited(struct freq *fr, unsigned int retry)
{
	char	 secs[16];

	log_debug("%s: %s: unauthenticated requests limited", __func__,
	    http_peer(fr->conn));
	snprintf(secs, sizeof(secs), "%u", retry);
	http_add_header(fr->conn, "Retry-After", secs);
	req_reply_error(fr, 429, "rate_limited", "too many requests without "
	    "a valid token from this address; send a valid Authorization: "
	    "Bearer token after Retry-After seconds");
}

static const char *
refusal_text(uint32_t status)
{
	return status == AUTH_EXPIRED ? "the token has expired" : status ==
	    AUTH_REVOKED ? "the token has been revoked" :
	    "the token is not valid";
}

static void
reply_unauthorized(struct freq *fr, const char *www, const char *msg)
{
	if (fr->conn != NULL)
		http_add_header(fr->conn, "WWW-Authenticate", www);
	req_reply_error(fr, 401, "unauthorized", msg);
}

void
req_handle(struct http_conn *c, struct http_request *r, void *arg)
{
	struct freq	*fr;
	struct fop	*op;
	struct timespec	 now;
	const char	*auth, *tok;
	size_t		 toklen;
	unsigned int	 retry;
	int		 known, overwrite;
	char		 ws[TOOL_WS_NAME_MAX + 1];

	if ((fr = calloc(1, sizeof(*fr))) == NULL) {
		log_warn("%s: calloc", __func__);
		http_set_close(c);
		http_reply(c, 503, NULL, NULL, 0);
		return;
	}
	fr->conn = c;
	fr->http = r;
	fr->image_fd = -1;
	fr->route = route_of(r->path, &fr->tool_name);
	http_set_abort(c, req_conn_gone, fr);

	if (!host_allowed(&fenv->conf, http_header(r, "Host"))) {
		req_reply_error(fr, 403, "forbidden", "Host is not allowed");
		return;
	}
	if (http_header_count(r, "Origin") > 1 ||
	    !origin_allowed(&fenv->conf, http_header(r, "Origin"))) {
		req_reply_error(fr, 403, "forbidden", "Origin is not allowed");
		return;
	}
	if (r->query != NULL && !(fr->route == ROUTE_IMAGE &&
	    image_query_ok(r->query, &overwrite, fr->ticket))) {
		req_reply_error(fr, 400, "bad_request",
		    query_has_token(r->query) ? "credentials in the URL are "
		    "refused; send them in the Authorization header" :
		    "query parameters are not accepted");
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	fr->peer = *http_peer_key(c);
	auth = http_header(r, "Authorization");
	/* An image URL's ticket is its permission: mcvmd checks it. */
	if (fr->route == ROUTE_IMAGE && fr->ticket[0] != '\0' &&
	    auth == NULL) {
		if (!peer_charge(&fr->peer, fenv->conf.unauth_rate,
		    fenv->conf.unauth_burst, &now, &retry)) {
			reply_unauth_limited(fr, retry);
			return;
		}
		fr->charged = 1;
		req_route(fr);
		return;
	}
	known = -1;
	if (auth != NULL && http_header_count(r, "Authorization") == 1 &&
	    bearer_parse(auth, &tok, &toklen) == 0) {
		if (sha256(tok, toklen, fr->hash) == -1)
			fatalx("%s: sha256", __func__);
		known = authcache_get(fr->hash, now.tv_sec, ws);
	}
	if (known != AUTH_OK) {
		if (!peer_charge(&fr->peer, fenv->conf.unauth_rate,
		    fenv->conf.unauth_burst, &now, &retry)) {
			reply_unauth_limited(fr, retry);
			return;
		}
		fr->charged = 1;
	}
	if (auth == NULL) {
		reply_unauthorized(fr, WWW_AUTH_MISSING,
		    "authentication required: send Authorization: Bearer "
		    "<token>");
		return;
	}
	if (http_header_count(r, "Authorization") != 1 ||
	    bearer_parse(auth, &tok, &toklen) == -1) {
		reply_unauthorized(fr, WWW_AUTH_MALFORMED,
		    "malformed Authorization header: expected Bearer "
		    "<token>");
		return;
	}
	if (known != -1 && known != AUTH_OK) {
		log_debug("%s: %s: token refused moments ago", __func__,
		    http_peer(c));
		reply_unauthorized(fr, WWW_AUTH_INVALID,
		    refusal_text((uint32_t)known));
		return;
	}
	if (known == AUTH_OK) {
		req_authorized(fr, ws);
		return;
	}

	if ((op = calloc(1, sizeof(*op))) == NULL) {
		req_reply_error(fr, 503, "unavailable", "out of memory");
		return;
	}
	req_op_link(fr, op);
	front_send_auth(op);
}

static void
req_route(struct freq *fr)
{
	const char	*m = fr->http->method;

	switch (fr->route) {
	case ROUTE_MCP:
		if (strcmp(m, "POST") == 0)
			mcp_post(fr);
		else if (strcmp(m, "DELETE") == 0)
			mcp_delete(fr);
		else {
			http_add_header(fr->conn, "Allow", "POST, DELETE");
			req_reply_error(fr, 405, "method_not_allowed",
			    "this server offers no SSE stream on GET; POST "
			    "JSON-RPC messages to /mcp");
		}
		break;
	case ROUTE_TOOLS:
		/* HEAD is GET without the body (http_reply drops it). */
		if (strcmp(m, "GET") != 0 && strcmp(m, "HEAD") != 0) {
			http_add_header(fr->conn, "Allow", "GET, HEAD");
			req_reply_error(fr, 405, "method_not_allowed",
			    "use GET /v1/tools to list the tools");
			break;
		}
		req_reply_text(fr, 200, "", fenv->tools_list_text,
		    fenv->tools_list_len, "");
		break;
	case ROUTE_TOOL:
		if (strcmp(m, "POST") != 0) {
			http_add_header(fr->conn, "Allow", "POST");
			req_reply_error(fr, 405, "method_not_allowed",
			    "use POST /v1/tools/{name} with a JSON object of "
			    "arguments");
			break;
		}
		api_call(fr);
		break;
	case ROUTE_IMAGE:
		image_route(fr);
		break;
	default:
		req_reply_error(fr, 404, "not_found", "no such route; MCP is "
		    "served at /mcp, tools at /v1/tools, images at "
		    "/v1/images/{name}");
		break;
	}
}

void
req_auth_result(uint32_t peerid, uint32_t status, const char *ws,
    uint32_t expires_in)
{
	struct fop	*op;
	struct freq	*fr;
	struct timespec	 now;

	if ((op = pending_take(peerid)) == NULL) {
		log_warnx("%s: answer for unknown request %u", __func__,
		    peerid);
		return;
	}
	fr = op->req;
	req_op_unlink(op);
	req_op_free(op);
	if (fr == NULL)
		return;
	if (status == AUTH_OK && !valid_workspace_name(ws))
		fatalx("%s: mcvmd sent a bad workspace name", __func__);
	clock_gettime(CLOCK_MONOTONIC, &now);
	switch (status) {
	case AUTH_OK:
	case AUTH_UNKNOWN:
	case AUTH_EXPIRED:
	case AUTH_REVOKED:
		authcache_put(fr->hash, status, ws, expires_in, now.tv_sec);
		break;
	default:
		authcache_put(fr->hash, AUTH_UNAVAILABLE, "", 0, now.tv_sec);
		break;
	}
	/* Only a refusal keeps its charge: it was the peer's failure. */
	if (fr->charged && (status == AUTH_OK || status == AUTH_UNAVAILABLE ||
	    status > AUTH_UNAVAILABLE))
		peer_refund(&fr->peer, fenv->conf.unauth_burst);
	if (fr->conn == NULL)
		return;
	switch (status) {
	case AUTH_OK:
		req_authorized(fr, ws);
		return;
	case AUTH_UNKNOWN:
	case AUTH_EXPIRED:
	case AUTH_REVOKED:
		log_info("%s: %s: token refused (%s)", __func__,
		    http_peer(fr->conn), status == AUTH_EXPIRED ? "expired" :
		    status == AUTH_REVOKED ? "revoked" : "unknown");
		reply_unauthorized(fr, WWW_AUTH_INVALID, refusal_text(status));
		return;
	case AUTH_UNAVAILABLE:
	default:
		req_reply_error(fr, 503, "unavailable",
		    "authentication is unavailable; retry later");
		return;
	}
}

/* The request's token is ws's: its rate, then its route. */
static void
req_authorized(struct freq *fr, const char *ws)
{
	struct timespec	 now;

	http_set_trusted(fr->conn);
	snprintf(fr->workspace, sizeof(fr->workspace), "%s", ws);
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!rate_allow(fr->workspace, fenv->conf.rate, fenv->conf.rate_burst,
	    &now)) {
		http_add_header(fr->conn, "Retry-After", "1");
		req_reply_error(fr, 429, "rate_limited", "too many requests "
		    "for this workspace; retry after a second");
		return;
	}
	req_route(fr);
}

void
req_tool_result(uint32_t peerid, uint32_t status, const char *json)
{
	struct fop	*op;

	if ((op = pending_take(peerid)) == NULL) {
		log_warnx("%s: answer for unknown request %u", __func__,
		    peerid);
		return;
	}
	if (op->req == NULL || op->cancelled) {
		req_op_unlink(op);
		req_op_free(op);
		return;
	}
	if (op->req->route == ROUTE_MCP)
		mcp_op_done(op, status, json);
	else if (op->req->route == ROUTE_IMAGE)
		image_op_done(op, status, json);
	else
		api_op_done(op, status, json);
}

/* stored's descriptor for a pending image transfer; fd is ours. */
void
req_image_fd(uint32_t peerid, int fd)
{
	struct fop	*op = pending_peek(peerid);

	if (op == NULL || op->req == NULL || op->cancelled ||
	    op->req->route != ROUTE_IMAGE) {
		close(fd);
		return;
	}
	image_op_fd(op, fd);
}

/*
 * A result whose bytes come by descriptor (msg_front.h); fd is ours.
 * The route writes the answer from it (mcp_op_done_fd, api_op_done_fd).
 */
void
req_tool_result_fd(uint32_t peerid, const struct msg_front_tool_result_fd *m,
    int fd)
{
	struct fop	*op;

	if ((op = pending_take(peerid)) == NULL) {
		log_warnx("%s: answer for unknown request %u", __func__,
		    peerid);
		close(fd);
		return;
	}
	if (op->req == NULL || op->cancelled || op->tool == NULL) {
		req_op_unlink(op);
		req_op_free(op);
		close(fd);
		return;
	}
	if (op->req->route == ROUTE_MCP)
		mcp_op_done_fd(op, m, fd);
	else
		api_op_done_fd(op, m, fd);
}

/* The whole result was written, or it failed after its answer began. */
static void
req_stream_done(void *arg, const char *err)
{
	struct freq	*fr = arg;

	fr->payload = NULL;
	if (fr->conn == NULL) {
		req_finish(fr);
		return;
	}
	if (err != NULL) {
		/* The answer is cut short: the connection goes, and fr. */
		http_abort(fr->conn);
		return;
	}
	http_set_abort(fr->conn, NULL, NULL);
	http_stream_end(fr->conn);
	req_finish(fr);
}

/*
 * What both front ends check of a result by descriptor before its answer
 * starts: that it is of the tool's kind (an image or text), that fd
 * holds what it says within the tool's budget (payload_check), and that
 * its JSON part is an object.  Returns that object, or NULL with the
 * reason in err: the call then fails alone.
 */
json_t *
req_fd_result(const struct fop *op, const struct msg_front_tool_result_fd *m,
    int fd, int *is_pipe, char *err, size_t errlen)
{
	json_t	*obj;

	if (m->kind != op->tool->result ||
	    (m->kind != TR_IMAGE && m->kind != TR_TEXT)) {
		(void)snprintf(err, errlen, "internal error: %s returned a "
		    "result of another kind", op->tool->name);
		return NULL;
	}
	if (payload_check(fd, m->size, op->tool->budget, is_pipe, err,
	    errlen) == -1)
		return NULL;
	if ((obj = json_loads(m->json, JSON_REJECT_DUPLICATES, NULL)) ==
	    NULL || !json_is_object(obj)) {
		json_decref(obj);
		(void)snprintf(err, errlen, "internal error: the service "
		    "produced an invalid result");
		return NULL;
	}
	return obj;
}

/*
 * Streams the answer of fr from fd, checked by payload_check, into the
 * stream already started: head, the bytes (in base64 for an image,
 * escaped as a JSON string's body for text: payload.c), tail.  Takes fd.
 * If it cannot start, the answer is cut.
 */
void
req_stream_fd(struct freq *fr, int fd, int is_pipe, uint32_t kind,
    uint64_t size, const char *head, size_t headlen, const char *tail,
    size_t taillen)
{
	fr->payload = payload_stream(fenv->base, fr->conn, fd, is_pipe,
	    kind == TR_TEXT ? PAYLOAD_TEXT : PAYLOAD_BASE64, size, head,
	    headlen, tail, taillen, PAYLOAD_PIPE_MS, req_stream_done, fr);
	if (fr->payload == NULL)
		http_abort(fr->conn);
}

/* mcvmd reports a step of a pending call; the call stays pending. */
void
req_progress(uint32_t peerid, uint64_t value, uint64_t total,
    const char *msg)
{
	struct fop	*op = pending_peek(peerid);

	if (op == NULL || op->req == NULL || op->cancelled ||
	    op->tool == NULL || op->req->route != ROUTE_MCP)
		return;
	mcp_op_progress(op, value, total, msg);
}

struct cancel_match {
	const char	*session;
	json_t		*rpc_id;
	struct fop	*found;
};

static void
cancel_find(struct fop *op, void *arg)
{
	struct cancel_match	*m = arg;

	if (m->found == NULL && op->req != NULL && op->tool != NULL &&
	    !op->cancelled && op->rpc_id != NULL &&
	    strcmp(op->req->session, m->session) == 0 &&
	    json_equal(op->rpc_id, m->rpc_id))
		m->found = op;
}

/* The pending tool call of a session with that JSON-RPC id, if any. */
struct fop *
req_find_op(const char *session, json_t *rpc_id)
{
	struct cancel_match	 m = { session, rpc_id, NULL };

	pending_foreach(cancel_find, &m);
	return m.found;
}

/* Detaches a cancelled operation; mcvmd's eventual answer is dropped. */
void
req_op_cancel(struct fop *op)
{
	op->cancelled = 1;
	front_send_cancel(op->peerid);
	req_op_unlink(op);
}
