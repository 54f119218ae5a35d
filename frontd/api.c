/*
 * The plain JSON tool API: POST /v1/tools/{name} with the arguments as a
 * JSON object, answered with the tool's result object, or with a non-2xx
 * status and {"error": {"code": "...", "message": "..."}}.  The arguments
 * go through the same conversion and checks as MCP's tools/call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

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

/*
 * A result that came by descriptor: the tool's result object with a
 * "content" array holding the image or text block, as MCP's (an image's
 * data is the descriptor's bytes in base64, a text's text is those
 * bytes), written as they are read (payload.c).
 */
void
api_op_done_fd(struct fop *op, const struct msg_front_tool_result_fd *m,
    int fd)
{
	struct freq	*fr = op->req;
	json_t		*obj = NULL;
	char		*otext = NULL, *head = NULL, *tail = NULL;
	char		 err[PAYLOAD_ERR_MAX + 64];
	int		 is_pipe, hn = -1, tn = -1;

	if ((obj = req_fd_result(op, m, fd, &is_pipe, err, sizeof(err))) ==
	    NULL)
		goto fail;
	json_object_del(obj, "content");
	if ((otext = json_dumps(obj, JSON_COMPACT)) == NULL ||
	    (hn = m->kind == TR_TEXT ? asprintf(&head, "{\"content\":"
	    "[{\"type\":\"text\",\"text\":\"") : asprintf(&head,
	    "{\"content\":[{\"type\":\"image\",\"mimeType\":\"%s\","
	    "\"data\":\"", m->mime)) == -1) {
		(void)snprintf(err, sizeof(err), "internal error: the result "
		    "could not be encoded");
		goto fail;
	}
	/* The tail closes the block and goes on with the object's members. */
	if (strcmp(otext, "{}") == 0)
		otext[0] = '\0';
	else
		otext[0] = ',';
	if ((tn = asprintf(&tail, "\"}]%s%s", otext, otext[0] == '\0' ?
	    "}" : "")) == -1) {
		(void)snprintf(err, sizeof(err), "internal error: the result "
		    "could not be encoded");
		goto fail;
	}
	req_op_unlink_free(op);
	http_stream_start(fr->conn, 200, "application/json");
	req_stream_fd(fr, fd, is_pipe, m->kind, m->size, head, (size_t)hn,
	    tail, (size_t)tn);
	goto done;
fail:
	close(fd);
	api_op_done(op, TOOL_ERROR, err);
done:
	json_decref(obj);
	free(otext);
	if (hn != -1)
		free(head);
	if (tn != -1)
		free(tail);
}
