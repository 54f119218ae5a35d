/*
 * /v1/images/{name}: an image's bytes in (PUT) and out (GET, HEAD).
 *
 * frontd asks mcvmd (IMSG_FRONT_IMAGE), which authorizes the workspace
 * and asks stored; stored answers with a descriptor that mcvmd passes on
 * untouched (IMSG_FRONT_IMAGE_FD): for an upload, a pipe whose other end
 * stored writes to a new file, counting every byte against what was
 * announced; for a download, the image opened read-only.  The bytes go
 * between the client and that descriptor, never through mcvmd, and no
 * more than a bounded buffer of them is held here (http_sink,
 * http_send_fd).  The final answer (IMSG_FRONT_TOOL_RESULT) comes once
 * stored has checked what it got.
 *
 * An upload needs Content-Length; the quota and the free space are
 * checked before any byte is read, and a client that sent
 * "Expect: 100-continue" is told to send the body only then.
 */
#include <sys/stat.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontd.h"
#include "log.h"
#include "validate.h"

#define IMAGE_PREFIX	"/v1/images/"

/* Whether r is an upload, whose body is streamed, not buffered. */
int
image_streams(const struct http_request *r)
{
	return strcmp(r->method, "PUT") == 0 && r->path != NULL &&
	    strncmp(r->path, IMAGE_PREFIX, strlen(IMAGE_PREFIX)) == 0;
}

/* The name in /v1/images/{name}, or NULL. */
const char *
image_route_name(const char *path)
{
	if (strncmp(path, IMAGE_PREFIX, strlen(IMAGE_PREFIX)) != 0)
		return NULL;
	return path + strlen(IMAGE_PREFIX);
}

/*
 * The queries an image route takes: overwrite=true (or false), or the
 * ticket of a URL image_upload_url or image_download_url gave, copied
 * into ticket (IMAGE_TICKET_LEN + 1 bytes; "" for none).
 */
int
image_query_ok(const char *query, int *overwrite, char *ticket)
{
	const size_t	 tlen = strlen("ticket=");

	*overwrite = 0;
	ticket[0] = '\0';
	if (query == NULL || strcmp(query, "overwrite=false") == 0)
		return 1;
	if (strcmp(query, "overwrite=true") == 0) {
		*overwrite = 1;
		return 1;
	}
	if (strncmp(query, "ticket=", tlen) == 0 &&
	    image_ticket_valid(query + tlen)) {
		memcpy(ticket, query + tlen, IMAGE_TICKET_LEN + 1);
		return 1;
	}
	return 0;
}

void
image_route(struct freq *fr)
{
	struct http_request	*r = fr->http;
	struct msg_front_image	 f;
	struct fop		*op;
	const char		*m = r->method;
	uint64_t		 bytes = 0;
	int			 write, overwrite;

	write = strcmp(m, "PUT") == 0;
	if (!write && strcmp(m, "GET") != 0 && strcmp(m, "HEAD") != 0) {
		http_add_header(fr->conn, "Allow", "GET, HEAD, PUT");
		req_reply_error(fr, 405, "method_not_allowed", "PUT an image "
		    "to /v1/images/{name}, or GET it");
		return;
	}
	if (!valid_object_name(fr->tool_name)) {
		req_reply_error(fr, 400, "bad_request", "an image name is "
		    "lower-case letters, digits, '.', '_' and '-', starting "
		    "with a letter or digit");
		return;
	}
	if (!image_query_ok(r->query, &overwrite, fr->ticket)) {
		req_reply_error(fr, 400, "bad_request", "the queries an "
		    "image takes are overwrite=true and an image URL's "
		    "ticket");
		return;
	}
	if (write) {
		if (http_header(r, "Content-Length") == NULL) {
			req_reply_error(fr, 411, "length_required", "an "
			    "upload needs Content-Length: the quota is "
			    "checked before its first byte");
			return;
		}
		if ((bytes = http_body_length(fr->conn)) == 0) {
			req_reply_error(fr, 400, "bad_request", "the image "
			    "is empty");
			return;
		}
	} else
		overwrite = 0;
	if ((op = calloc(1, sizeof(*op))) == NULL) {
		req_reply_error(fr, 503, "unavailable", "out of memory");
		return;
	}
	req_op_link(fr, op);
	fr->image_write = write;
	memcpy(f.hash, fr->hash, sizeof(f.hash));
	f.ticket = fr->ticket;
	f.name = fr->tool_name;
	f.write = write;
	f.overwrite = overwrite;
	f.bytes = bytes;
	front_send_image(op, &f);
}

/* The body is in the pipe, or could not all be: stored says which. */
static void
image_sink_done(void *arg, const char *err)
{
	struct freq	*fr = arg;

	if (err != NULL)
		log_debug("%s: %s", __func__, err);
	if (fr->image_fd != -1) {
		close(fr->image_fd);
		fr->image_fd = -1;
	}
	fr->image_sunk = 1;
}

/* stored's descriptor for a pending transfer. */
void
image_op_fd(struct fop *op, int fd)
{
	struct freq	*fr = op->req;

	if (fr == NULL || fr->conn == NULL || fr->image_fd != -1) {
		close(fd);
		return;
	}
	fr->image_fd = fd;
	if (!fr->image_write)
		return;		/* sent once the answer says it may be */
	if (http_sink(fr->conn, fd, image_sink_done, fr) == -1) {
		close(fd);
		fr->image_fd = -1;
		http_sink_cancel(fr->conn);
	}
}

static void
image_send_done(void *arg, const char *err)
{
	struct freq	*fr = arg;

	if (err != NULL)
		log_info("%s: download cut short: %s", __func__, err);
	close(fr->image_fd);
	fr->image_fd = -1;
	/* The connection went on (or went) by itself. */
	if (fr->conn != NULL)
		http_set_abort(fr->conn, NULL, NULL);
	req_finish(fr);
}

void
image_op_done(struct fop *op, uint32_t status, const char *json)
{
	struct freq	*fr = op->req;
	struct stat	 st;

	/* An answer before the whole body: the rest is not read. */
	if (fr->image_write && !fr->image_sunk) {
		http_sink_cancel(fr->conn);
		http_set_close(fr->conn);
		if (fr->image_fd != -1) {
			close(fr->image_fd);
			fr->image_fd = -1;
		}
	}
	if (status != TOOL_OK) {
		api_op_done(op, status, json);
		return;
	}
	if (fr->image_write) {
		json_t	*obj = json_loads(json, JSON_REJECT_DUPLICATES, NULL);

		req_op_unlink_free(op);
		if (!json_is_object(obj)) {
			json_decref(obj);
			req_reply_error(fr, 500, "internal", "the service "
			    "produced an invalid result");
			return;
		}
		req_reply_json(fr, 201, obj);
		return;
	}
	req_op_unlink_free(op);
	if (fr->image_fd == -1 || fstat(fr->image_fd, &st) == -1 ||
	    !S_ISREG(st.st_mode)) {
		req_reply_error(fr, 500, "internal", "the image could not be "
		    "opened");
		return;
	}
	if (http_send_fd(fr->conn, 200, "application/octet-stream",
	    fr->image_fd, (uint64_t)st.st_size, image_send_done, fr) == -1)
		req_reply_error(fr, 500, "internal", "the image could not be "
		    "sent");
}
