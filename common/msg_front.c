/* frontd's messages: see msg_front.h and, for the rules, msg_vmm.h. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "msg.h"
#include "msg_front.h"
#include "proto.h"
#include "tools.h"

void
msg_front_auth_put(struct ibuf *b, const struct msg_front_auth *m)
{
	m_add_bytes(b, m->hash, sizeof(m->hash));
}

int
msg_front_auth_get(struct imsg *imsg, struct msg_front_auth *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_FRONT_AUTH) == -1 ||
	    m_get_bytes_exact(&r, m->hash, sizeof(m->hash)) == -1)
		return -1;
	return m_end(&r);
}

void
msg_front_auth_result_put(struct ibuf *b,
    const struct msg_front_auth_result *m)
{
	m_add_u32(b, m->status);
	m_add_str(b, m->workspace);
	m_add_u32(b, m->expires_in);
}

int
msg_front_auth_result_get(struct imsg *imsg,
    struct msg_front_auth_result *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_FRONT_AUTH_RESULT) == -1 ||
	    m_get_u32(&r, &m->status) == -1 ||
	    m_get_str(&r, &m->workspace, TOOL_WS_NAME_MAX) == -1 ||
	    m_get_u32(&r, &m->expires_in) == -1)
		return -1;
	if (m->status > AUTH_UNAVAILABLE)
		return m_fail();
	return m_end(&r);
}

void
msg_front_tool_put(struct ibuf *b, const struct msg_front_tool *m)
{
	m_add_bytes(b, m->hash, sizeof(m->hash));
	m_add_u32(b, m->tool);
	if (m->args.tool == NULL) {
		b->err = EINVAL;
		return;
	}
	tool_args_encode(b, &m->args);
}

int
msg_front_tool_get(struct imsg *imsg, struct msg_front_tool *m)
{
	struct mreader		 r;
	const struct tool_desc	*t;
	char			 err[TOOL_ERR_MAX];

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_FRONT_TOOL) == -1 ||
	    m_get_bytes_exact(&r, m->hash, sizeof(m->hash)) == -1 ||
	    m_get_u32(&r, &m->tool) == -1)
		return -1;
	if ((t = tool_by_id(m->tool)) == NULL)
		return m_fail();
	/* Up to the end of the message. */
	if (tool_args_decode(&r, t, &m->args, err, sizeof(err)) == -1)
		return m_fail();
	return 0;
}

void
msg_front_task_put(struct ibuf *b, const struct msg_front_task *m)
{
	m_add_u64(b, m->ttl_ms);
	m_add_bytes(b, m->tool.hash, sizeof(m->tool.hash));
	m_add_u32(b, m->tool.tool);
	if (m->tool.args.tool == NULL) {
		b->err = EINVAL;
		return;
	}
	tool_args_encode(b, &m->tool.args);
}

int
msg_front_task_get(struct imsg *imsg, struct msg_front_task *m)
{
	struct mreader		 r;
	const struct tool_desc	*t;
	char			 err[TOOL_ERR_MAX];

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_FRONT_TASK) == -1 ||
	    m_get_u64(&r, &m->ttl_ms) == -1 ||
	    m_get_bytes_exact(&r, m->tool.hash, sizeof(m->tool.hash)) == -1 ||
	    m_get_u32(&r, &m->tool.tool) == -1)
		return -1;
	if (m->ttl_ms > TASK_TTL_MAX_MS)
		return m_fail();
	/* Only a long tool runs as a task. */
	if ((t = tool_by_id(m->tool.tool)) == NULL || !(t->flags & TF_LONG))
		return m_fail();
	if (tool_args_decode(&r, t, &m->tool.args, err, sizeof(err)) == -1)
		return m_fail();
	return 0;
}

/* A task's: IMSG_FRONT_TASK_STATUS's and IMSG_FRONT_TASK_CANCEL's. */
static void
task_ref_put(struct ibuf *b, const struct msg_front_task_status *m)
{
	m_add_bytes(b, m->hash, sizeof(m->hash));
	m_add_str(b, m->id);
}

static int
task_ref_get(struct imsg *imsg, uint32_t type,
    struct msg_front_task_status *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, type) == -1 ||
	    m_get_bytes_exact(&r, m->hash, sizeof(m->hash)) == -1 ||
	    m_get_str(&r, &m->id, TASK_ID_LEN) == -1)
		return -1;
	if (!task_id_valid(m->id))
		return m_fail();
	return m_end(&r);
}

void
msg_front_task_status_put(struct ibuf *b,
    const struct msg_front_task_status *m)
{
	task_ref_put(b, m);
}

int
msg_front_task_status_get(struct imsg *imsg, struct msg_front_task_status *m)
{
	return task_ref_get(imsg, IMSG_FRONT_TASK_STATUS, m);
}

void
msg_front_task_cancel_put(struct ibuf *b,
    const struct msg_front_task_cancel *m)
{
	task_ref_put(b, m);
}

int
msg_front_task_cancel_get(struct imsg *imsg, struct msg_front_task_cancel *m)
{
	return task_ref_get(imsg, IMSG_FRONT_TASK_CANCEL, m);
}

/* TASK_ID_LEN lower-case hex digits. */
int
task_id_valid(const char *s)
{
	size_t	 i;

	for (i = 0; i < TASK_ID_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[i] == '\0';
}

void
msg_front_tool_result_put(struct ibuf *b,
    const struct msg_front_tool_result *m)
{
	m_add_u32(b, m->status);
	m_add_str(b, m->json);
}

int
msg_front_tool_result_get(struct imsg *imsg,
    struct msg_front_tool_result *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_FRONT_TOOL_RESULT) == -1 ||
	    m_get_u32(&r, &m->status) == -1 ||
	    m_get_str(&r, &m->json, TOOL_RESULT_MAX) == -1)
		return -1;
	if (m->status > TOOL_UNAVAILABLE)
		return m_fail();
	return m_end(&r);
}

/* IMAGE_TICKET_LEN lower-case hex digits. */
int
image_ticket_valid(const char *s)
{
	size_t	 i;

	for (i = 0; i < IMAGE_TICKET_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[i] == '\0';
}

void
msg_front_image_put(struct ibuf *b, const struct msg_front_image *m)
{
	m_add_bytes(b, m->hash, sizeof(m->hash));
	m_add_str(b, m->ticket);
	m_add_str(b, m->name);
	m_add_u32(b, m->write);
	m_add_u32(b, m->overwrite);
	m_add_u64(b, m->bytes);
}

int
msg_front_image_get(struct imsg *imsg, struct msg_front_image *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_FRONT_IMAGE) == -1 ||
	    m_get_bytes_exact(&r, m->hash, sizeof(m->hash)) == -1 ||
	    m_get_str(&r, &m->ticket, IMAGE_TICKET_LEN) == -1 ||
	    m_get_str(&r, &m->name, OBJ_NAME_MAX) == -1 ||
	    m_get_flag(&r, &m->write) == -1 ||
	    m_get_flag(&r, &m->overwrite) == -1 ||
	    m_get_u64(&r, &m->bytes) == -1)
		return -1;
	if ((m->ticket[0] != '\0' && !image_ticket_valid(m->ticket)) ||
	    !valid_object_name(m->name) || (m->write && (m->bytes == 0 ||
	    m->bytes > FRONT_UPLOAD_MAX)) || (!m->write && (m->bytes != 0 ||
	    m->overwrite)))
		return m_fail();
	return m_end(&r);
}

/* The fd travels with it; the message has no fields. */
int
msg_front_image_fd_get(struct imsg *imsg)
{
	return m_empty(imsg, IMSG_FRONT_IMAGE_FD);
}

int
msg_front_cancel_get(struct imsg *imsg)
{
	return m_empty(imsg, IMSG_FRONT_CANCEL);
}

int
msg_front_auth_flush_get(struct imsg *imsg)
{
	return m_empty(imsg, IMSG_FRONT_AUTH_FLUSH);
}

int
msg_front_auth_flushed_get(struct imsg *imsg)
{
	return m_empty(imsg, IMSG_FRONT_AUTH_FLUSHED);
}

void
msg_front_progress_put(struct ibuf *b, const struct msg_front_progress *m)
{
	m_add_u64(b, m->progress);
	m_add_u64(b, m->total);
	m_add_str(b, m->message);
}

int
msg_front_progress_get(struct imsg *imsg, struct msg_front_progress *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_FRONT_PROGRESS) == -1 ||
	    m_get_u64(&r, &m->progress) == -1 ||
	    m_get_u64(&r, &m->total) == -1 ||
	    m_get_str(&r, &m->message, TOOL_PROGRESS_MAX) == -1)
		return -1;
	return m_end(&r);
}

/* A token of RFC 6838's restricted names, lower case. */
static int
mime_token(const char *s, size_t n)
{
	size_t	 i;

	if (n == 0 || n > 127)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9') ||
		    (i > 0 && strchr("!#$&-^_.+", s[i]) != NULL)))
			return 0;
	return 1;
}

/*
 * "type/subtype" in lower case, without parameters, of at most
 * PAYLOAD_MIME_MAX bytes; an image's type is image/.
 */
int
payload_mime_valid(const char *mime, uint32_t kind)
{
	const char	*slash;
	size_t		 len = strlen(mime);

	if (len > PAYLOAD_MIME_MAX || (slash = strchr(mime, '/')) == NULL)
		return 0;
	if (!mime_token(mime, (size_t)(slash - mime)) ||
	    !mime_token(slash + 1, len - (size_t)(slash - mime) - 1))
		return 0;
	if (kind == TR_IMAGE)
		return strncmp(mime, "image/", 6) == 0;
	return kind == TR_TEXT;
}

void
msg_front_tool_result_fd_put(struct ibuf *b,
    const struct msg_front_tool_result_fd *m)
{
	m_add_u32(b, m->status);
	m_add_str(b, m->json != NULL ? m->json : "");
	m_add_u32(b, m->kind);
	m_add_str(b, m->mime != NULL ? m->mime : "");
	m_add_u64(b, m->size);
}

int
msg_front_tool_result_fd_get(struct imsg *imsg,
    struct msg_front_tool_result_fd *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_FRONT_TOOL_RESULT_FD) == -1 ||
	    m_get_u32(&r, &m->status) == -1 ||
	    m_get_str(&r, &m->json, TOOL_RESULT_MAX) == -1 ||
	    m_get_u32(&r, &m->kind) == -1 ||
	    m_get_str(&r, &m->mime, PAYLOAD_MIME_MAX) == -1 ||
	    m_get_u64(&r, &m->size) == -1 || m_end(&r) == -1)
		return m_fail();
	if (m->status != TOOL_OK || (m->kind != TR_IMAGE &&
	    m->kind != TR_TEXT) || !payload_mime_valid(m->mime, m->kind) ||
	    m->size == 0)
		return m_fail();
	return 0;
}
