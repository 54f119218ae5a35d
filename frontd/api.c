/*
 * The plain JSON tool API: POST /v1/tools/{name} with the arguments as a
 * JSON object, answered with the tool's result object, or with a non-2xx
 * status and {"error": {"code": "...", "message": "..."}}.  The arguments
 * go through the same conversion and checks as MCP's tools/call.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "frontd.h"
#include "log.h"

static int
api_content_type_json(const char *ct)
{
	size_t	 n = strlen("application/json");

	return ct != NULL && strncasecmp(ct, "application/json", n) == 0 &&
	    (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

void
api_call(struct freq *fr)
{
	struct http_request	*r = fr->http;
	const struct tool_desc	*tool;
	struct tool_args	 args;
	struct fop		*op;
	json_error_t		 jerr;
	void			*scratch = NULL;
	char			 err[TOOL_ERR_MAX + 64];

	if ((tool = tool_by_name(fr->tool_name)) == NULL) {
		req_reply_error(fr, 404, "unknown_tool", "no such tool; GET "
		    "/v1/tools lists them");
		return;
	}
	if (r->bodylen == 0)
		fr->body = json_object();
	else {
		if (!api_content_type_json(http_header(r, "Content-Type"))) {
			req_reply_error(fr, 415, "unsupported_media_type",
			    "Content-Type must be application/json");
			return;
		}
		fr->body = json_loadb(r->body, r->bodylen,
		    JSON_REJECT_DUPLICATES, &jerr);
		if (fr->body == NULL) {
			snprintf(err, sizeof(err), "the body is not valid "
			    "JSON (line %d, column %d)", jerr.line,
			    jerr.column);
			req_reply_error(fr, 400, "invalid_json", err);
			return;
		}
	}
	if (!json_is_object(fr->body)) {
		req_reply_error(fr, 400, "invalid_argument",
		    "the body must be a JSON object of arguments");
		return;
	}
	if (catalog_args(tool, fr->body, &args, &scratch, err,
	    sizeof(err)) == -1) {
		free(scratch);
		req_reply_error(fr, 400, "invalid_argument", err);
		return;
	}
	if ((op = calloc(1, sizeof(*op))) == NULL) {
		log_warn("%s: calloc", __func__);
		free(scratch);
		req_reply_error(fr, 503, "unavailable", "out of memory; retry "
		    "later");
		return;
	}
	op->tool = tool;
	req_op_link(fr, op);
	if (front_send_tool(op, &args) == -1) {
		req_op_unlink_free(op);
		free(scratch);
		req_reply_error(fr, 413, "body_too_large",
		    "the arguments are too large");
		return;
	}
	free(scratch);
}

void
api_op_done(struct fop *op, uint32_t status, const char *json)
{
	struct freq	*fr = op->req;
	json_t		*obj;

	req_op_unlink_free(op);
	switch (status) {
	case TOOL_OK:
		obj = json_loads(json, JSON_REJECT_DUPLICATES, NULL);
		if (obj == NULL || !json_is_object(obj)) {
			json_decref(obj);
			log_warnx("%s: mcvmd sent a result that is not a JSON "
			    "object", __func__);
			req_reply_error(fr, 500, "internal",
			    "the service produced an invalid result");
			return;
		}
		req_reply_json(fr, 200, obj);
		break;
	case TOOL_DENIED:
		http_add_header(fr->conn, "WWW-Authenticate",
		    "Bearer realm=\"mcvm\", error=\"invalid_token\"");
		req_reply_error(fr, 401, "unauthorized", json);
		break;
	case TOOL_NOT_FOUND:
		req_reply_error(fr, 404, "not_found", json);
		break;
	case TOOL_UNAVAILABLE:
		req_reply_error(fr, 501, "unavailable", json);
		break;
	default:
		req_reply_error(fr, 422, "tool_error", json);
		break;
	}
}
