/*
 * The codec of IMSG_FRONT_TOOL_RESULT_FD: see msg_payload.h.
 */
#include <errno.h>
#include <string.h>

#include "msg.h"
#include "msg_payload.h"
#include "proto.h"
#include "tools.h"

static int
bad(void)
{
	errno = EBADMSG;
	return -1;
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
	if (imsg->hdr.type != IMSG_FRONT_TOOL_RESULT_FD)
		return bad();
	m_init(&r, imsg);
	if (m_get_u32(&r, &m->status) == -1 ||
	    m_get_str(&r, &m->json, TOOL_RESULT_MAX) == -1 ||
	    m_get_u32(&r, &m->kind) == -1 ||
	    m_get_str(&r, &m->mime, PAYLOAD_MIME_MAX) == -1 ||
	    m_get_u64(&r, &m->size) == -1 || m_end(&r) == -1)
		return bad();
	if (m->status != TOOL_OK || (m->kind != TR_IMAGE &&
	    m->kind != TR_TEXT) || !payload_mime_valid(m->mime, m->kind) ||
	    m->size == 0)
		return bad();
	return 0;
}
