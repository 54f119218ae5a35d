/*
 * The file tools: vm_read_file, vm_write_file and vm_list_files (see
 * dispatch.h for their entries).  The guest's agent keeps paths beneath
 * /workspace; the monitor says which bytes are text, which go to the
 * caller as they are, the others in base64.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_proto.h"
#include "b64.h"
#include "dispatch.h"
#include "log.h"
#include "msg_vmm.h"
#include "proto.h"
#include "req.h"
#include "vm.h"

_Static_assert(TOOL_FILE_MAX == AGENT_FILE_CHUNK_MAX, "a file call's bytes");
/* The tools' path, for their one check. */
_Static_assert((int)P_VM_READ_FILE_PATH == (int)P_VM_WRITE_FILE_PATH &&
    (int)P_VM_READ_FILE_PATH == (int)P_VM_LIST_FILES_PATH, "one path index");
#define P_FILE_PATH	P_VM_READ_FILE_PATH

/* A listing's JSON: what an entry costs beside its name, at most. */
#define LIST_ENTRY_JSON	160

/* Before the state: the agent's bound on a path. */
static int
tool_file_check(struct tool_call *c)
{
	const char	*path = c->args->v[P_FILE_PATH].s;

	if (path == NULL)
		return 0;	/* vm_list_files: the workspace */
	if (strlen(path) >= AGENT_PATH_MAX) {
		call_reply(c->id, TOOL_ERROR, "the path is too long");
		return -1;
	}
	return 0;
}

/* vm_write_file: exactly one of its contents. */
static int
tool_write_check(struct tool_call *c)
{
	int	 text, bytes;

	if (c->args->v[P_FILE_PATH].s == NULL)
		fatalx("frontd: vm_write_file without a path");
	text = TOOL_ARG(c->args, VM_WRITE_FILE, CONTENT) != NULL;
	bytes = TOOL_ARG(c->args, VM_WRITE_FILE, CONTENT_BASE64) != NULL;
	if (text && bytes) {
		call_reply(c->id, TOOL_ERROR, "give either content (UTF-8 "
		    "text) or content_base64 (bytes), not both: drop one and "
		    "call again");
		return -1;
	}
	if (!text && !bytes) {
		call_reply(c->id, TOOL_ERROR, "no contents: pass the file's "
		    "text as content, or bytes that are not text as "
		    "content_base64 (\"\" writes an empty file)");
		return -1;
	}
	return tool_file_check(c);
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
	j = json_pack("{s:s, s:I, s:I, s:I, s:I, s:b, s:s}", "path", r->path,
	    "offset", (json_int_t)m.offset, "bytes", (json_int_t)m.len,
	    "next_offset", (json_int_t)(m.offset + m.len), "size",
	    (json_int_t)m.size, "eof", (int)m.eof, "encoding",
	    m.text ? "utf-8" : "base64");
	if (j == NULL)
		fatalx("%s: json_pack", __func__);
	if (m.text) {
		/* The codec checked it is UTF-8 without NUL. */
		if (json_object_set_new(j, "content", json_stringn(m.data,
		    m.len)) == -1)
			fatalx("%s: content", __func__);
	} else {
		if ((b64 = malloc(B64_ENCODED_LEN(m.len) + 1)) == NULL)
			fatal("%s", __func__);
		(void)b64_encode(m.data, m.len, b64);
		if (json_object_set_new(j, "content_base64",
		    json_string(b64)) == -1)
			fatalx("%s: content_base64", __func__);
		free(b64);
	}
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

/* The bytes of s in a JSON string, at most. */
static size_t
json_text_len(const char *s)
{
	size_t	 n = 2;

	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			n += 2;
		else if ((unsigned char)*s < 0x20)
			n += 6;
		else
			n++;
	}
	return n;
}

static const char *
ftype_name(uint32_t type)
{
	switch (type) {
	case AGENT_FTYPE_FILE:
		return "file";
	case AGENT_FTYPE_DIR:
		return "dir";
	case AGENT_FTYPE_SYMLINK:
		return "symlink";
	default:
		return "other";
	}
}

static void
file_entries_done(struct req *r, struct imsg *imsg)
{
	static struct msg_vmm_file_entries	 m;
	const struct msg_vmm_dirent		*e;
	json_t					*j, *ents, *o;
	char					 mode[8];
	size_t					 budget, cost;
	uint32_t				 i;
	int					 truncated;

	if (msg_vmm_file_entries_get(imsg, &m) == -1) {
		call_req_fail(r, "malformed listing from the VM monitor");
		return;
	}
	if ((ents = json_array()) == NULL)
		fatalx("%s: json_array", __func__);
	truncated = m.truncated != 0;
	budget = TOOL_RESULT_MAX - 256 - json_text_len(r->path);
	for (i = 0; i < m.count; i++) {
		e = &m.ents[i];
		cost = LIST_ENTRY_JSON + json_text_len(e->name);
		if (cost > budget) {
			truncated = 1;
			break;
		}
		budget -= cost;
		(void)snprintf(mode, sizeof(mode), "%04o",
		    (unsigned int)e->mode);
		if ((o = json_pack("{s:s, s:s, s:I, s:s, s:I}", "name",
		    e->name, "type", ftype_name(e->type), "size",
		    (json_int_t)(e->size > INT64_MAX ? INT64_MAX : e->size),
		    "mode", mode, "mtime", (json_int_t)e->mtime)) == NULL ||
		    json_array_append_new(ents, o) == -1)
			fatalx("%s: json_pack", __func__);
	}
	j = json_pack("{s:s, s:o, s:b}", "path", r->path, "entries", ents,
	    "truncated", truncated);
	if (j == NULL)
		fatalx("%s: json_pack", __func__);
	call_reply_json(r->call, j);
}

static void
tool_vm_read_file(struct tool_call *c)
{
	struct msg_vmm_file_read	 m;
	struct req			*r;

	memset(&m, 0, sizeof(m));
	m.path = TOOL_STR(c->args, VM_READ_FILE, PATH);
	m.offset = (uint64_t)TOOL_INT(c->args, VM_READ_FILE, OFFSET, 0);
	m.length = (uint32_t)TOOL_INT(c->args, VM_READ_FILE, MAX_BYTES,
	    TOOL_FILE_MAX);
	/* The enum's values are utf-8 (0) and base64 (1), as VMM_ENC_*. */
	m.encoding = TOOL_INT(c->args, VM_READ_FILE, ENCODING, 0) == 1 ?
	    VMM_ENC_BASE64 : VMM_ENC_UTF8;
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

	memset(&m, 0, sizeof(m));
	m.path = TOOL_STR(c->args, VM_WRITE_FILE, PATH);
	m.flags = AGENT_WRITE_MKDIRS;
	if (TOOL_INT(c->args, VM_WRITE_FILE, APPEND, 0))
		m.flags |= AGENT_WRITE_APPEND;
	if ((data = TOOL_ARG(c->args, VM_WRITE_FILE, CONTENT)) != NULL) {
		m.data = data->s;
		m.len = strlen(data->s);
	} else if ((data = TOOL_ARG(c->args, VM_WRITE_FILE,
	    CONTENT_BASE64)) != NULL) {
		m.data = data->b;
		m.len = data->blen;
	} else
		fatalx("frontd: vm_write_file without content");
	r = call_req(c, IMSG_VMM_FILE_WRITE, file_written_done);
	(void)snprintf(r->path, sizeof(r->path), "%s", m.path);
	msg_vmm_file_write_put(r->msg, &m);
	(void)req_send(r);
}

static void
tool_vm_list_files(struct tool_call *c)
{
	struct msg_vmm_file_list	 m;
	struct req			*r;

	memset(&m, 0, sizeof(m));
	if ((m.path = TOOL_STR(c->args, VM_LIST_FILES, PATH)) == NULL)
		m.path = ".";
	m.depth = (uint32_t)TOOL_INT(c->args, VM_LIST_FILES, DEPTH, 1);
	m.max = AGENT_LIST_MAX;
	r = call_req(c, IMSG_VMM_FILE_LIST, file_entries_done);
	(void)snprintf(r->path, sizeof(r->path), "%s", m.path);
	msg_vmm_file_list_put(r->msg, &m);
	(void)req_send(r);
}

/* The tools of this file (see TOOL_IMPL in dispatch.h). */
TOOL_IMPL(TOOL_VM_READ_FILE, tool_vm_read_file, NULL,
    tool_file_check, NULL, -1);
TOOL_IMPL(TOOL_VM_WRITE_FILE, tool_vm_write_file, NULL,
    tool_write_check, NULL, -1);
TOOL_IMPL(TOOL_VM_LIST_FILES, tool_vm_list_files, NULL,
    tool_file_check, NULL, -1);
