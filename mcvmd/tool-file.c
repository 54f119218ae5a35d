/*
 * The file tools: vm_read_file and vm_write_file (see dispatch.h for
 * their entries).  The guest's agent keeps paths beneath /workspace; its
 * bytes go to the caller in base64.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_proto.h"
#include "b64.h"
#include "dispatch.h"
#include "log.h"
#include "msg.h"
#include "req.h"
#include "vm.h"

/* Before the state: the agent's bound on a path. */
int
tool_file_check(struct tool_call *c)
{
	const char	*path = tool_arg_str(c->args, "path");

	if (path == NULL)
		fatalx("frontd: %s without a path", c->args->tool->name);
	if (strlen(path) >= AGENT_PATH_MAX) {
		call_reply(c->id, TOOL_ERROR, "the path is too long");
		return -1;
	}
	return 0;
}

static void
file_data_done(struct req *r, struct imsg *imsg)
{
	struct mreader	 m;
	const void	*data;
	size_t		 len;
	uint64_t	 offset, size;
	uint32_t	 eof;
	char		*b64;
	json_t		*j;

	m_init(&m, imsg);
	if (m_get_u64(&m, &offset) == -1 || m_get_u64(&m, &size) == -1 ||
	    m_get_u32(&m, &eof) == -1 ||
	    m_get_bytes(&m, &data, &len, TOOL_FILE_MAX) == -1 ||
	    m_end(&m) == -1 || eof > 1) {
		call_req_fail(r, "malformed file data from the VM monitor");
		return;
	}
	if ((b64 = malloc(B64_ENCODED_LEN(len) + 1)) == NULL)
		fatal("%s", __func__);
	(void)b64_encode(data, len, b64);
	j = json_pack("{s:s, s:I, s:I, s:I, s:b, s:s}", "path", r->path,
	    "offset", (json_int_t)offset, "bytes", (json_int_t)len,
	    "size", (json_int_t)size, "eof", (int)eof, "content_base64", b64);
	free(b64);
	if (j == NULL)
		fatalx("%s: json_pack", __func__);
	call_reply_json(r->call, j);
}

static void
file_written_done(struct req *r, struct imsg *imsg)
{
	struct mreader	 m;
	uint64_t	 size;
	uint32_t	 written;

	m_init(&m, imsg);
	if (m_get_u64(&m, &size) == -1 || m_get_u32(&m, &written) == -1 ||
	    m_end(&m) == -1) {
		call_req_fail(r, "malformed answer from the VM monitor");
		return;
	}
	call_reply_json(r->call, json_pack("{s:s, s:I, s:I}", "path",
	    r->path, "size", (json_int_t)size, "written",
	    (json_int_t)written));
}

void
tool_vm_read_file(struct tool_call *c)
{
	const char	*path = tool_arg_str(c->args, "path");
	struct req	*r = call_req(c, IMSG_VMM_FILE_READ, file_data_done);
	int64_t		 offset = 0, max = TOOL_FILE_MAX;

	(void)snprintf(r->path, sizeof(r->path), "%s", path);
	(void)tool_arg_int(c->args, "offset", &offset);
	(void)tool_arg_int(c->args, "max_bytes", &max);
	m_add_str(r->msg, path);
	m_add_u64(r->msg, (uint64_t)offset);
	m_add_u32(r->msg, (uint32_t)max);
	(void)req_send(r);
}

void
tool_vm_write_file(struct tool_call *c)
{
	const char		*path = tool_arg_str(c->args, "path");
	const struct tool_value	*data;
	struct req		*r;
	int64_t			 append = 0;

	if ((data = tool_arg(c->args, "content_base64")) == NULL)
		fatalx("frontd: vm_write_file without content");
	(void)tool_arg_int(c->args, "append", &append);
	r = call_req(c, IMSG_VMM_FILE_WRITE, file_written_done);
	(void)snprintf(r->path, sizeof(r->path), "%s", path);
	m_add_str(r->msg, path);
	m_add_u32(r->msg, append ? AGENT_WRITE_APPEND : 0);
	m_add_u64(r->msg, 0);
	m_add_u32(r->msg, 0);
	m_add_bytes(r->msg, data->b, data->blen);
	(void)req_send(r);
}
