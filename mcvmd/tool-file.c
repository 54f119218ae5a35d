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
#include "msg_vmm.h"
#include "req.h"
#include "vm.h"

_Static_assert(TOOL_FILE_MAX == AGENT_FILE_CHUNK_MAX, "a file call's bytes");
/* Both tools' path, for their one check. */
_Static_assert((int)P_VM_READ_FILE_PATH == (int)P_VM_WRITE_FILE_PATH,
    "one path index");
#define P_FILE_PATH	P_VM_READ_FILE_PATH

/* Before the state: the agent's bound on a path. */
static int
tool_file_check(struct tool_call *c)
{
	const char	*path = c->args->v[P_FILE_PATH].s;

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
	struct msg_vmm_file_data	 m;
	char				*b64;
	json_t				*j;

	if (msg_vmm_file_data_get(imsg, &m) == -1) {
		call_req_fail(r, "malformed file data from the VM monitor");
		return;
	}
	if ((b64 = malloc(B64_ENCODED_LEN(m.len) + 1)) == NULL)
		fatal("%s", __func__);
	(void)b64_encode(m.data, m.len, b64);
	j = json_pack("{s:s, s:I, s:I, s:I, s:b, s:s}", "path", r->path,
	    "offset", (json_int_t)m.offset, "bytes", (json_int_t)m.len,
	    "size", (json_int_t)m.size, "eof", (int)m.eof, "content_base64",
	    b64);
	free(b64);
	if (j == NULL)
		fatalx("%s: json_pack", __func__);
	call_reply_json(r->call, j);
}

static void
file_written_done(struct req *r, struct imsg *imsg)
{
	struct msg_vmm_file_written	 m;

	if (msg_vmm_file_written_get(imsg, &m) == -1) {
		call_req_fail(r, "malformed answer from the VM monitor");
		return;
	}
	call_reply_json(r->call, json_pack("{s:s, s:I, s:I}", "path",
	    r->path, "size", (json_int_t)m.size, "written",
	    (json_int_t)m.written));
}

static void
tool_vm_read_file(struct tool_call *c)
{
	struct msg_vmm_file_read	 m;
	struct req			*r;

	m.path = TOOL_STR(c->args, VM_READ_FILE, PATH);
	m.offset = (uint64_t)TOOL_INT(c->args, VM_READ_FILE, OFFSET, 0);
	m.length = (uint32_t)TOOL_INT(c->args, VM_READ_FILE, MAX_BYTES,
	    TOOL_FILE_MAX);
	r = call_req(c, IMSG_VMM_FILE_READ, file_data_done);
	(void)snprintf(r->path, sizeof(r->path), "%s", m.path);
	msg_vmm_file_read_put(r->msg, &m);
	(void)req_send(r);
}

static void
tool_vm_write_file(struct tool_call *c)
{
	const struct tool_value		*data;
	struct msg_vmm_file_write	 m;
	struct req			*r;

	if ((data = TOOL_ARG(c->args, VM_WRITE_FILE, CONTENT_BASE64)) == NULL)
		fatalx("frontd: vm_write_file without content");
	memset(&m, 0, sizeof(m));
	m.path = TOOL_STR(c->args, VM_WRITE_FILE, PATH);
	if (TOOL_INT(c->args, VM_WRITE_FILE, APPEND, 0))
		m.flags = AGENT_WRITE_APPEND;
	m.data = data->b;
	m.len = data->blen;
	r = call_req(c, IMSG_VMM_FILE_WRITE, file_written_done);
	(void)snprintf(r->path, sizeof(r->path), "%s", m.path);
	msg_vmm_file_write_put(r->msg, &m);
	(void)req_send(r);
}

/* The tools of this file (see TOOL_IMPL in dispatch.h). */
TOOL_IMPL(TOOL_VM_READ_FILE, tool_vm_read_file, NULL,
    tool_file_check, NULL, -1);
TOOL_IMPL(TOOL_VM_WRITE_FILE, tool_vm_write_file, NULL,
    tool_file_check, NULL, -1);
