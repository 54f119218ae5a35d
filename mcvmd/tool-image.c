/*
 * The image tools.  The operator's catalogue (store.c holds what stored
 * found of each image) is every workspace's, read-only; each workspace
 * has a store of its own in stored, which every other tool here asks
 * (IMSG_STORE_IMAGE).  mcvmd says what the workspace's images may hold:
 * its storage quota less its VMs' disks, and its image count limit;
 * stored checks both, and the real free space, before it writes.  What
 * they hold afterwards is kept in state.db, for vm_create's admission.
 */
#include <sys/random.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "dispatch.h"
#include "hash.h"
#include "log.h"
#include "msg_front.h"
#include "msg_store.h"
#include "req.h"
#include "vm.h"

/* A long conversion may take this long; then stored kills qemu-img. */
#define IMAGE_LONG_WAIT_MS	(30U * 60 * 1000)
#define IMAGE_TICKETS_MAX	256	/* URLs not yet used, in all */

/*
 * The URLs image_upload_url and image_download_url hand out: each is
 * the permission for one transfer of one image of one workspace, for
 * IMAGE_TICKET_SECS.  Only the SHA-256 of a ticket is kept, in memory:
 * a restart forgets them all.
 */
static struct image_ticket {
	uint8_t		 hash[TOKEN_HASH_LEN];
	int64_t		 ws;
	char		 name[OBJ_NAME_MAX + 1];
	int		 write;
	int		 overwrite;
	time_t		 expires;	/* vm_now(); 0: free */
} tickets[IMAGE_TICKETS_MAX];

/* stored ends a stalled upload itself; this is its whole length. */
#define IMAGE_UPLOAD_WAIT_MS	(6U * 60 * 60 * 1000)

static const char *
image_arg(const struct tool_call *c, int idx)
{
	const char	*s = c->args->v[idx].s;

	return s != NULL ? s : "";
}

/* What a tool error from stored's status is, for the client. */
static enum tool_status
image_status(uint32_t e)
{
	return e == ENOENT ? TOOL_NOT_FOUND : TOOL_ERROR;
}

static json_t *
image_entry_json(const struct msg_store_image_entry *m)
{
	json_t	*j;

	j = json_pack("{s:s, s:s, s:I, s:b, s:b}", "name", m->name,
	    "format", image_format_name((enum image_format)m->format),
	    "disk_size", (json_int_t)m->disk_bytes, "catalog",
	    m->catalog != 0, "in_use", m->users != 0);
	if (j == NULL)
		return NULL;
	/* vmdk, vdi and vhdx: only image_info asks qemu-img. */
	if (m->virtual_bytes != 0)
		json_object_set_new(j, "virtual_size",
		    json_integer((json_int_t)m->virtual_bytes));
	if (!m->catalog)
		json_object_set_new(j, "base", m->backing[0] != '\0' ?
		    json_string(m->backing) : json_null());
	if (m->backing[0] != '\0')
		json_object_set_new(j, "base_catalog",
		    json_boolean(m->backing_catalog != 0));
	return j;
}

static void
date_string(uint64_t t, char *buf, size_t len)
{
	time_t		 tt = (time_t)t;
	struct tm	 tm;

	if (gmtime_r(&tt, &tm) == NULL ||
	    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		(void)snprintf(buf, len, "1970-01-01T00:00:00Z");
}

/* stored's report of one image, or snapshot, or progress, for a call. */
void
vm_store_image_part(struct imsg *imsg)
{
	struct msg_store_image_entry	 e;
	struct msg_store_image_snap	 s;
	struct msg_store_progress	 p;
	struct req			*r;
	json_t				*a, *j;
	char				 date[32];

	r = req_find(RP_STORED, NULL, imsg->hdr.peerid);
	switch (imsg->hdr.type) {
	case IMSG_STORE_IMAGE_ENTRY:
		if (msg_store_image_entry_get(imsg, &e) == -1)
			fatalx("stored: malformed IMAGE_ENTRY");
		if (r == NULL || r->acc == NULL)
			return;
		a = json_object_get(r->acc, "images");
		if ((j = image_entry_json(&e)) != NULL)
			json_array_append_new(a, j);
		return;
	case IMSG_STORE_IMAGE_SNAP:
		if (msg_store_image_snap_get(imsg, &s) == -1)
			fatalx("stored: malformed IMAGE_SNAP");
		if (r == NULL || r->acc == NULL)
			return;
		date_string(s.date, date, sizeof(date));
		a = json_object_get(r->acc, "snapshots");
		if ((j = json_pack("{s:s, s:I, s:s}", "tag", s.tag, "vm_size",
		    (json_int_t)s.vm_bytes, "date", date)) != NULL)
			json_array_append_new(a, j);
		return;
	default:
		if (msg_store_progress_get(imsg, &p) == -1)
			fatalx("stored: malformed PROGRESS");
		if (r != NULL && r->call != 0)
			call_progress(r->call, p.permille, 1000, r->what);
		return;
	}
}

/* The answer to a call, from what stored sent before its RESULT. */
static void
image_done(struct req *r, struct imsg *imsg)
{
	struct msg_store_result	 m;
	json_t			*images, *snaps, *out = NULL;
	enum tool_id		 id = r->tool;

	vm_store_result(imsg, &m);
	if (m.status == 0 || m.status == ECANCELED)
		(void)state_ws_image_bytes_set(r->ws, m.disk_bytes);
	if (r->call == 0)
		return;
	if (m.status != 0) {
		call_reply(r->call, image_status(m.status), m.text);
		return;
	}
	images = json_object_get(r->acc, "images");
	snaps = json_object_get(r->acc, "snapshots");
	switch (id) {
	case TOOL_IMAGE_LIST:
		out = vm_images_json();
		if (out != NULL)
			json_array_extend(out, images);
		out = json_pack("{s:o*}", "images", out);
		break;
	case TOOL_IMAGE_DELETE:
		out = json_pack("{s:s, s:b}", "name", r->key, "deleted", 1);
		break;
	case TOOL_IMAGE_SNAPSHOT_LIST:
		out = json_pack("{s:O}", "snapshots", snaps);
		break;
	case TOOL_IMAGE_SNAPSHOT_CREATE:
	case TOOL_IMAGE_SNAPSHOT_APPLY:
	case TOOL_IMAGE_SNAPSHOT_DELETE:
		out = json_pack("{s:s, s:s, s:s}", "name", r->key, "tag",
		    r->job_id, "message", m.text);
		break;
	case TOOL_NONE:
		/* A download's image: a catalogue one sends no entry. */
		if (r->image_op == SIO_DOWNLOAD &&
		    json_array_size(images) == 0) {
			out = json_pack("{s:s, s:b}", "name", r->key,
			    "catalog", 1);
			break;
		}
		/* FALLTHROUGH */
	default:
		/* The image, then its chain below it. */
		if (json_array_size(images) == 0) {
			call_reply(r->call, TOOL_ERROR, "the store reported "
			    "no image");
			return;
		}
		out = json_deep_copy(json_array_get(images, 0));
		if (out != NULL && id == TOOL_IMAGE_INFO) {
			json_object_set(out, "snapshots", snaps);
			if (json_array_size(images) > 1 || json_is_true(
			    json_object_get(r->acc, "chain"))) {
				json_t *chain = json_array();

				json_array_extend(chain, images);
				json_object_set_new(out, "backing_chain",
				    chain);
			}
		}
		break;
	}
	call_reply_json(r->call, out);
}

static void
image_cancel(struct req *r, enum req_end why, const char *text)
{
	if (r->call != 0)
		call_reply(r->call, TOOL_UNAVAILABLE, why == REQ_PEER_LOST ?
		    "the storage daemon restarted during the operation; "
		    "check with image_info and retry" : "the storage daemon "
		    "did not answer in time; retry");
}

/* Sends call's operation on workspace ws's store to stored. */
static void
image_send(uint64_t call, int64_t ws, enum tool_id tool, const char *what,
    struct msg_store_image *m)
{
	struct limits		 w;
	struct req		*r;
	uint64_t		 vmdisk = 0, mem, cpus;
	uint32_t		 n;

	if (!vm_store_is_up()) {
		call_reply(call, TOOL_UNAVAILABLE, "the storage daemon is "
		    "starting; retry in a few seconds");
		return;
	}
	if (vm_ws_limits(ws, &w, NULL) == -1 ||
	    state_usage(ws, &n, &mem, &vmdisk, &cpus) == -1) {
		call_reply(call, TOOL_ERROR, "state database error");
		return;
	}
	m->ws = (uint64_t)ws;
	m->budget = vmdisk < w.max_storage ? w.max_storage - vmdisk : 0;
	m->max_images = w.max_images;
	r = req_new(RP_STORED, NULL, IMSG_STORE_IMAGE, image_done,
	    image_cancel);
	r->call = call;
	r->what = what;
	r->tool = tool;
	r->ws = ws;
	r->image_op = m->op;
	(void)snprintf(r->key, sizeof(r->key), "%s", m->name);
	(void)snprintf(r->job_id, sizeof(r->job_id), "%s", m->tag);
	if (m->op == SIO_CONVERT)
		r->wait_ms = IMAGE_LONG_WAIT_MS;
	else if (m->op == SIO_UPLOAD)
		r->wait_ms = IMAGE_UPLOAD_WAIT_MS;
	r->acc = json_pack("{s:[], s:[], s:b}", "images", "snapshots",
	    "chain", (m->flags & SIF_CHAIN) != 0);
	msg_store_image_put(r->msg, m);
	(void)req_send(r);
}

static void
image_request(struct tool_call *c, struct msg_store_image *m)
{
	image_send(c->id, c->auth->id, c->args->tool->id,
	    c->args->tool->name, m);
}

/* The ticket of URL hex for name, taken (it works once), or NULL. */
static struct image_ticket *
ticket_take(const char *hex, const char *name, int write)
{
	uint8_t		 h[TOKEN_HASH_LEN];
	time_t		 now = vm_now();
	size_t		 i;

	if (sha256(hex, strlen(hex), h) == -1)
		fatalx("%s: sha256", __func__);
	for (i = 0; i < IMAGE_TICKETS_MAX; i++) {
		if (tickets[i].expires == 0 ||
		    memcmp(tickets[i].hash, h, sizeof(h)) != 0)
			continue;
		if (tickets[i].expires < now || tickets[i].write != write ||
		    strcmp(tickets[i].name, name) != 0)
			return NULL;
		tickets[i].expires = 0;
		return &tickets[i];
	}
	return NULL;
}

/*
 * frontd's PUT or GET of /v1/images/{name}: the bytes go between frontd
 * and stored on the descriptor stored makes, never through mcvmd.  The
 * workspace is the token's, or the URL ticket's.
 */
void
image_front(struct imsg *imsg)
{
	struct msg_front_image	 f;
	struct msg_store_image	 m = { .dest = "", .base = "", .tag = "" };
	struct image_ticket	*t;
	struct ws_auth		 auth;
	uint64_t		 id = call_id(imsg->hdr.peerid);

	if (msg_front_image_get(imsg, &f) == -1)
		fatalx("frontd: malformed %s", imsg_type_name(imsg->hdr.type));
	if (f.ticket[0] != '\0') {
		if ((t = ticket_take(f.ticket, f.name, f.write)) == NULL) {
			call_reply(id, TOOL_DENIED, "this image URL is not "
			    "valid: it was used, has expired, or is for "
			    "another image; ask for a new one");
			return;
		}
		m.op = f.write ? SIO_UPLOAD : SIO_DOWNLOAD;
		m.name = f.name;
		m.bytes = f.bytes;
		if (t->overwrite)
			m.flags |= SIF_OVERWRITE;
		image_send(id, t->ws, TOOL_NONE, f.write ? "image upload" :
		    "image download", &m);
		return;
	}
	if (state_token_auth(f.hash, &auth) == -1) {
		call_reply(id, TOOL_UNAVAILABLE, "authentication is "
		    "unavailable; retry later");
		return;
	}
	if (auth.status != AUTH_OK) {
		call_reply(id, TOOL_DENIED, "the token is not valid "
		    "(unknown, expired or revoked)");
		return;
	}
	m.op = f.write ? SIO_UPLOAD : SIO_DOWNLOAD;
	m.name = f.name;
	m.bytes = f.bytes;
	if (f.overwrite)
		m.flags |= SIF_OVERWRITE;
	log_debug("%s: workspace %s: %s image %s", __func__, auth.name,
	    f.write ? "upload" : "download", f.name);
	image_send(id, auth.id, TOOL_NONE, f.write ? "image upload" :
	    "image download", &m);
}

/* A caller gone: stored stops what it does for it. */
static void
image_call_cancel(uint64_t call)
{
	struct req	*r;
	struct ibuf	*b;

	if ((r = req_for_call(RP_STORED, call)) == NULL)
		return;
	r->call = 0;
	if ((b = imsg_create(NULL, IMSG_STORE_CANCEL, r->id, 0, 0)) == NULL)
		fatal("%s", __func__);
	req_notice(RP_STORED, IMSG_STORE_CANCEL, b);
}

/* "20G", or "+10G" when grow may be set; -1 if it does not parse. */
static int
image_size(const char *s, uint64_t *bytes, int *grow)
{
	*grow = 0;
	if (s[0] == '+') {
		if (grow == NULL)
			return -1;
		*grow = 1;
		s++;
	}
	return size_parse(s, bytes) == -1 || *bytes == 0 ? -1 : 0;
}

static void
tool_image_list(struct tool_call *c)
{
	struct msg_store_image	 m = { .op = SIO_LIST, .name = "",
				    .dest = "", .base = "", .tag = "" };

	image_request(c, &m);
}

static void
tool_image_create(struct tool_call *c)
{
	struct msg_store_image	 m = { .op = SIO_CREATE, .dest = "",
				    .tag = "" };
	const char		*size;
	int			 grow;

	m.name = image_arg(c, P_IMAGE_CREATE_NAME);
	m.base = image_arg(c, P_IMAGE_CREATE_BASE);
	m.format = (uint32_t)c->args->v[P_IMAGE_CREATE_FORMAT].i;
	size = image_arg(c, P_IMAGE_CREATE_SIZE);
	if (size[0] != '\0' && image_size(size, &m.bytes, &grow) == -1) {
		call_reply(c->id, TOOL_ERROR, "size must be digits with an "
		    "optional K, M, G or T suffix, e.g. \"20G\"");
		return;
	}
	if (m.base[0] != '\0' && vm_catalog_image(m.base))
		m.flags |= SIF_BASE_CATALOG;
	if (c->args->v[P_IMAGE_CREATE_OVERWRITE].i)
		m.flags |= SIF_OVERWRITE;
	image_request(c, &m);
}

static void
tool_image_info(struct tool_call *c)
{
	struct msg_store_image	 m = { .op = SIO_INFO, .dest = "",
				    .base = "", .tag = "" };

	m.name = image_arg(c, P_IMAGE_INFO_NAME);
	if (c->args->v[P_IMAGE_INFO_BACKING_CHAIN].i)
		m.flags |= SIF_CHAIN;
	image_request(c, &m);
}

static void
tool_image_convert(struct tool_call *c)
{
	struct msg_store_image	 m = { .op = SIO_CONVERT, .base = "",
				    .tag = "" };

	m.name = image_arg(c, P_IMAGE_CONVERT_SOURCE);
	m.dest = image_arg(c, P_IMAGE_CONVERT_DEST);
	m.format = (uint32_t)c->args->v[P_IMAGE_CONVERT_FORMAT].i;
	if (c->args->v[P_IMAGE_CONVERT_COMPRESS].i)
		m.flags |= SIF_COMPRESS;
	if (c->args->v[P_IMAGE_CONVERT_OVERWRITE].i)
		m.flags |= SIF_OVERWRITE;
	image_request(c, &m);
}

static void
tool_image_resize(struct tool_call *c)
{
	struct msg_store_image	 m = { .op = SIO_RESIZE, .dest = "",
				    .base = "", .tag = "" };
	int			 grow;

	m.name = image_arg(c, P_IMAGE_RESIZE_NAME);
	if (image_size(image_arg(c, P_IMAGE_RESIZE_SIZE), &m.bytes,
	    &grow) == -1) {
		call_reply(c->id, TOOL_ERROR, "size must be like \"30G\" "
		    "or, to grow, \"+10G\"");
		return;
	}
	if (grow)
		m.flags |= SIF_GROW;
	if (c->args->v[P_IMAGE_RESIZE_SHRINK].i)
		m.flags |= SIF_SHRINK;
	image_request(c, &m);
}

static void
tool_image_delete(struct tool_call *c)
{
	struct msg_store_image	 m = { .op = SIO_DELETE, .dest = "",
				    .base = "", .tag = "" };

	m.name = image_arg(c, P_IMAGE_DELETE_NAME);
	image_request(c, &m);
}

/* The four snapshot tools: the name and tag are their first two. */
static void
tool_image_snapshot(struct tool_call *c)
{
	struct msg_store_image	 m = { .dest = "", .base = "" };

	switch (c->args->tool->id) {
	case TOOL_IMAGE_SNAPSHOT_CREATE:
		m.op = SIO_SNAP_CREATE;
		break;
	case TOOL_IMAGE_SNAPSHOT_APPLY:
		m.op = SIO_SNAP_APPLY;
		break;
	case TOOL_IMAGE_SNAPSHOT_DELETE:
		m.op = SIO_SNAP_DELETE;
		break;
	default:
		m.op = SIO_SNAP_LIST;
		break;
	}
	m.name = image_arg(c, 0);
	m.tag = m.op == SIO_SNAP_LIST ? "" : image_arg(c, 1);
	image_request(c, &m);
}

/* image_upload_url and image_download_url: a ticket, and its URL. */
static void
tool_image_url(struct tool_call *c)
{
	const struct listen_addr *la = env->conf.nlisten > 0 ?
				    &env->conf.listen[0] : NULL;
	struct image_ticket	*t = NULL;
	uint8_t			 raw[IMAGE_TICKET_LEN / 2];
	char			 hex[IMAGE_TICKET_LEN + 1], path[192];
	char			 url[sizeof(path) + CONF_STR_MAX + 16];
	time_t			 now = vm_now();
	size_t			 i;
	int			 write;

	write = c->args->tool->id == TOOL_IMAGE_UPLOAD_URL;
	for (i = 0; i < IMAGE_TICKETS_MAX && t == NULL; i++)
		if (tickets[i].expires < now)
			t = &tickets[i];
	if (t == NULL) {
		call_reply(c->id, TOOL_ERROR, "too many image URLs are "
		    "waiting to be used; retry in a few minutes");
		return;
	}
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		fatal("getrandom");
	for (i = 0; i < sizeof(raw); i++)
		(void)snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	if (sha256(hex, strlen(hex), t->hash) == -1)
		fatalx("%s: sha256", __func__);
	explicit_bzero(raw, sizeof(raw));
	t->ws = c->auth->id;
	(void)snprintf(t->name, sizeof(t->name), "%s", image_arg(c, 0));
	t->write = write;
	t->overwrite = write && c->args->v[P_IMAGE_UPLOAD_URL_OVERWRITE].i;
	t->expires = now + IMAGE_TICKET_SECS;
	(void)snprintf(path, sizeof(path), "/v1/images/%s?ticket=%s",
	    t->name, hex);
	if (la != NULL && !la->is_unix)
		(void)snprintf(url, sizeof(url), "%s://%s%s",
		    env->conf.tls_cert[0] != '\0' ? "https" : "http", la->text,
		    path);
	else
		(void)snprintf(url, sizeof(url), "%s", path);
	call_reply_json(c->id, json_pack("{s:s, s:s, s:s, s:i}", "url", url,
	    "path", path, "method", write ? "PUT" : "GET", "expires_in",
	    IMAGE_TICKET_SECS));
	explicit_bzero(hex, sizeof(hex));
}

/* The tools of this file (see TOOL_IMPL in dispatch.h). */
TOOL_IMPL(TOOL_IMAGE_UPLOAD_URL, tool_image_url, NULL, NULL, NULL, -1);
TOOL_IMPL(TOOL_IMAGE_DOWNLOAD_URL, tool_image_url, NULL, NULL, NULL, -1);
TOOL_IMPL(TOOL_IMAGE_LIST, tool_image_list, image_call_cancel, NULL, NULL,
    -1);
TOOL_IMPL(TOOL_IMAGE_CREATE, tool_image_create, image_call_cancel, NULL,
    NULL, -1);
TOOL_IMPL(TOOL_IMAGE_INFO, tool_image_info, image_call_cancel, NULL, NULL,
    -1);
TOOL_IMPL(TOOL_IMAGE_CONVERT, tool_image_convert, image_call_cancel, NULL,
    NULL, -1);
TOOL_IMPL(TOOL_IMAGE_RESIZE, tool_image_resize, image_call_cancel, NULL,
    NULL, -1);
TOOL_IMPL(TOOL_IMAGE_DELETE, tool_image_delete, image_call_cancel, NULL,
    NULL, -1);
TOOL_IMPL(TOOL_IMAGE_SNAPSHOT_CREATE, tool_image_snapshot,
    image_call_cancel, NULL, NULL, -1);
TOOL_IMPL(TOOL_IMAGE_SNAPSHOT_APPLY, tool_image_snapshot,
    image_call_cancel, NULL, NULL, -1);
TOOL_IMPL(TOOL_IMAGE_SNAPSHOT_DELETE, tool_image_snapshot,
    image_call_cancel, NULL, NULL, -1);
TOOL_IMPL(TOOL_IMAGE_SNAPSHOT_LIST, tool_image_snapshot,
    image_call_cancel, NULL, NULL, -1);
