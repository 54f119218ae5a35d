/* frontd's messages, for test_codec.c. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "msg_front.h"
#include "proto.h"
#include "tools.h"
#include "codec_table.h"

CODEC_WRAP(front_auth)
CODEC_WRAP(front_auth_result)
CODEC_WRAP(front_tool)
CODEC_WRAP(front_tool_result)
CODEC_WRAP(front_progress)
CODEC_WRAP(front_tool_result_fd)
CODEC_WRAP(front_image)
CODEC_WRAP(front_task)
CODEC_WRAP(front_task_status)
CODEC_WRAP(front_task_cancel)

static void
fill_auth(void *p)
{
	memcpy(((struct msg_front_auth *)p)->hash,
	    codec_bytes(TOKEN_HASH_LEN), TOKEN_HASH_LEN);
}

static void
fill_auth_result(void *p)
{
	struct msg_front_auth_result	*m = p;

	m->status = AUTH_UNAVAILABLE;
	m->workspace = codec_str(TOOL_WS_NAME_MAX);
	m->expires_in = UINT32_MAX;
}

static int
over_auth_result(void *p, int i)
{
	struct msg_front_auth_result	*m = p;

	switch (i) {
	case 0: m->workspace = codec_str(TOOL_WS_NAME_MAX + 1); break;
	case 1: m->status = AUTH_UNAVAILABLE + 1; break;
	default: return -1;
	}
	return 0;
}

/* vm_exec, the largest arguments: every string at its longest. */
static void
fill_tool(void *p)
{
	struct msg_front_tool		*m = p;
	const struct tool_desc		*t = tool_by_name("vm_exec");
	const struct tool_param		*pp;
	struct tool_value		*v;
	size_t				 i;
	char				 err[TOOL_ERR_MAX];

	cr_assert_not_null(t);
	memcpy(m->hash, codec_bytes(TOKEN_HASH_LEN), TOKEN_HASH_LEN);
	m->tool = t->id;
	m->args.tool = t;
	for (i = 0; i < t->nparams; i++) {
		pp = &t->params[i];
		v = &m->args.v[i];
		v->present = 1;
		if (pp->type == TP_INT)
			v->i = pp->max;
		else {
			cr_assert_eq(pp->type, TP_STRING);
			v->s = codec_str(pp->maxlen);
		}
	}
	cr_assert_eq(tool_args_check(&m->args, err, sizeof(err)), 0, "%s",
	    err);
}

static int
over_tool(void *p, int i)
{
	struct msg_front_tool	*m = p;
	const struct tool_desc	*t = m->args.tool;
	int			 k;

	switch (i) {
	case 0:
		/* Another tool's id: vm_exec's arguments do not fit it. */
		m->tool = tool_by_name("vm_list")->id;
		break;
	case 3:
		m->tool = TOOL_COUNT + 1;
		break;
	case 1:
		k = tool_param_index(t, "command");
		m->args.v[k].s = codec_str(t->params[k].maxlen + 1);
		break;
	case 2:
		k = tool_param_index(t, "vm_id");
		m->args.v[k].s = "-vm";	/* neither an id nor a name */
		break;
	default:
		return -1;
	}
	return 0;
}

static void
fill_tool_result(void *p)
{
	struct msg_front_tool_result	*m = p;

	m->status = TOOL_UNAVAILABLE;
	m->json = codec_str(TOOL_RESULT_MAX);
}

static int
over_tool_result(void *p, int i)
{
	struct msg_front_tool_result	*m = p;

	switch (i) {
	case 0: m->json = codec_str(TOOL_RESULT_MAX + 1); break;
	case 1: m->status = TOOL_UNAVAILABLE + 1; break;
	default: return -1;
	}
	return 0;
}

static void
fill_progress(void *p)
{
	struct msg_front_progress	*m = p;

	m->progress = m->total = UINT64_MAX;
	m->message = codec_str(TOOL_PROGRESS_MAX);
}

static int
over_progress(void *p, int i)
{
	if (i > 0)
		return -1;
	((struct msg_front_progress *)p)->message =
	    codec_str(TOOL_PROGRESS_MAX + 1);
	return 0;
}

static void
fill_result_fd(void *p)
{
	struct msg_front_tool_result_fd	*m = p;
	static char			 mime[PAYLOAD_MIME_MAX + 1];

	memset(mime, 'a', PAYLOAD_MIME_MAX);
	memcpy(mime, "image/", 6);
	mime[PAYLOAD_MIME_MAX] = '\0';
	m->status = TOOL_OK;
	m->json = codec_str(TOOL_RESULT_MAX);
	m->kind = TR_IMAGE;
	m->mime = mime;
	m->size = UINT64_MAX;
}

static int
over_result_fd(void *p, int i)
{
	struct msg_front_tool_result_fd	*m = p;
	static char			 mime[PAYLOAD_MIME_MAX + 2];

	switch (i) {
	case 0: m->json = codec_str(TOOL_RESULT_MAX + 1); break;
	case 1:
		memset(mime, 'a', PAYLOAD_MIME_MAX + 1);
		memcpy(mime, "image/", 6);
		mime[PAYLOAD_MIME_MAX + 1] = '\0';
		m->mime = mime;
		break;
	case 2: m->kind = TR_TEXT + 1; break;
	case 3: m->status = TOOL_ERROR; break;
	case 4: m->size = 0; break;
	default: return -1;
	}
	return 0;
}

static void
fill_image(void *p)
{
	struct msg_front_image	*m = p;

	memcpy(m->hash, codec_bytes(TOKEN_HASH_LEN), TOKEN_HASH_LEN);
	m->ticket = "";
	m->name = "disk.iso";
	m->write = 1;
	m->overwrite = 1;
	m->bytes = FRONT_UPLOAD_MAX;
}

static int
over_image(void *p, int i)
{
	struct msg_front_image	*m = p;

	switch (i) {
	case 0: m->name = "../x"; break;
	case 1: m->bytes = 0; break;
	case 2: m->bytes = FRONT_UPLOAD_MAX + 1; break;
	case 3: m->write = 2; break;
	case 4: m->write = 0; break;	/* a download with bytes */
	case 5: m->ticket = "ABCD"; break;
	default: return -1;
	}
	return 0;
}

/* A task of vm_exec (a long tool) at its longest life. */
static void
fill_task(void *p)
{
	struct msg_front_task	*m = p;

	fill_tool(&m->tool);
	m->ttl_ms = TASK_TTL_MAX_MS;
}

static int
over_task(void *p, int i)
{
	struct msg_front_task	*m = p;
	const struct tool_desc	*t = tool_by_name("vm_list");

	switch (i) {
	case 0: m->ttl_ms = TASK_TTL_MAX_MS + 1; break;
	case 1:
		/* A tool that is not long is never a task. */
		cr_assert_not_null(t);
		cr_assert_eq(t->flags & TF_LONG, 0);
		memset(&m->tool.args, 0, sizeof(m->tool.args));
		m->tool.args.tool = t;
		m->tool.tool = t->id;
		break;
	default:
		return over_tool(&m->tool, i - 2);
	}
	return 0;
}

static void
fill_task_status(void *p)
{
	struct msg_front_task_status	*m = p;

	memcpy(m->hash, codec_bytes(TOKEN_HASH_LEN), TOKEN_HASH_LEN);
	m->id = "0123456789abcdef0123456789abcdef";
}

static int
over_task_status(void *p, int i)
{
	struct msg_front_task_status	*m = p;

	switch (i) {
	case 0: m->id = "0123456789abcdef0123456789abcdef0"; break;
	case 1: m->id = "0123456789abcdef0123456789abcdeF"; break;
	case 2: m->id = "../x"; break;
	case 3: m->id = ""; break;
	default: return -1;
	}
	return 0;
}

const struct codec codec_front[] = {
	CODEC(IMSG_FRONT_AUTH, front_auth, fill_auth, NULL),
	CODEC(IMSG_FRONT_AUTH_RESULT, front_auth_result, fill_auth_result,
	    over_auth_result),
	CODEC(IMSG_FRONT_TOOL, front_tool, fill_tool, over_tool),
	CODEC(IMSG_FRONT_TOOL_RESULT, front_tool_result, fill_tool_result,
	    over_tool_result),
	CODEC0(IMSG_FRONT_CANCEL, front_cancel),
	CODEC0(IMSG_FRONT_AUTH_FLUSH, front_auth_flush),
	CODEC0(IMSG_FRONT_AUTH_FLUSHED, front_auth_flushed),
	CODEC(IMSG_FRONT_PROGRESS, front_progress, fill_progress,
	    over_progress),
	CODEC(IMSG_FRONT_TOOL_RESULT_FD, front_tool_result_fd,
	    fill_result_fd, over_result_fd),
	CODEC(IMSG_FRONT_IMAGE, front_image, fill_image, over_image),
	CODEC0(IMSG_FRONT_IMAGE_FD, front_image_fd),
	CODEC(IMSG_FRONT_TASK, front_task, fill_task, over_task),
	CODEC(IMSG_FRONT_TASK_STATUS, front_task_status, fill_task_status,
	    over_task_status),
	CODEC(IMSG_FRONT_TASK_CANCEL, front_task_cancel, fill_task_status,
	    over_task_status),
	CODEC_END
};
