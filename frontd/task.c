/*
 * MCP tasks: a tools/call of a long tool (TF_LONG) answered at once with
 * a task, and the methods that follow one up.  mcvmd keeps the tasks
 * (mcvmd/task.c); this file only speaks their two forms:
 *
 *  - the tasks extension (io.modelcontextprotocol/tasks), which the
 *    server applies when the request's client capabilities name it:
 *    CreateTaskResult (resultType "task"), tasks/get with the result
 *    inline once the task ends, tasks/cancel;
 *  - 2025-11-25's experimental tasks, asked for per request by
 *    params.task: CreateTaskResult {task}, tasks/get, tasks/result and
 *    tasks/cancel.
 *
 * task_wanted() alone decides whether a call becomes a task.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "frontd.h"
#include "log.h"
#include "msg_front.h"
#include "tools.h"

#define TASKS_V1_VERSION	"2025-11-25"

/* The session's protocol is 2025-11-25's. */
static int
task_session_v1(struct freq *fr)
{
	struct session	*s;

	if (fr->session[0] == '\0' ||
	    (s = session_find(fr->session, fr->workspace)) == NULL)
		return 0;
	return strcmp(session_version(s), TASKS_V1_VERSION) == 0;
}

/*
 * Whether a tools/call with params becomes a task, and in which form:
 * FOP_TOOL (no), FOP_TASK_CREATE or FOP_TASK_CREATE_V1.  The caller
 * checked the tool is a long one.
 */
/* The request's client capabilities name the tasks extension. */
static int
task_extension(json_t *params)
{
	return stateless_caps_tasks(json_object_get(json_object_get(params,
	    "_meta"), STATELESS_META_CAPS));
}

int
task_wanted(struct freq *fr, json_t *params)
{
	/* 2026-07-28: what this request's capabilities say, and no more. */
	if (fr->rev2026)
		return fr->caps_tasks ? FOP_TASK_CREATE : FOP_TOOL;
	if (task_extension(params))
		return FOP_TASK_CREATE;
	if (json_is_object(json_object_get(params, "task")) &&
	    task_session_v1(fr))
		return FOP_TASK_CREATE_V1;
	return FOP_TOOL;
}

/*
 * The time to live a call asks for (2025-11-25's params.task.ttl), held
 * within mcvm's bounds; 0: the default.
 */
static uint64_t
task_ttl(json_t *params)
{
	json_t		*ttl;
	json_int_t	 v;

	ttl = json_object_get(json_object_get(params, "task"), "ttl");
	if (!json_is_integer(ttl) || (v = json_integer_value(ttl)) <= 0)
		return 0;
	if ((uint64_t)v < TASK_TTL_MIN_MS)
		return TASK_TTL_MIN_MS;
	if ((uint64_t)v > TASK_TTL_MAX_MS)
		return TASK_TTL_MAX_MS;
	return (uint64_t)v;
}

/*
 * Sends op's call (op->task set by task_wanted) as a task.  Returns -1
 * when the arguments are too large to send.
 */
int
task_send(struct fop *op, json_t *params, const struct tool_args *args)
{
	return front_send_task(op, args, op->task == FOP_TASK_CREATE_V1 ?
	    task_ttl(params) : 0);
}

static json_t *
rpc_result(json_t *id, json_t *result)
{
	if (result == NULL)
		return mcp_error(json_incref(id), JSONRPC_INTERNAL_ERROR,
		    "internal error: the result could not be encoded");
	return json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id,
	    "result", result);
}

/* tasks/get, tasks/result, tasks/cancel: sent to mcvmd, or refused. */
json_t *
task_request(struct freq *fr, json_t *id, const char *method,
    json_t *params, size_t slot)
{
	struct fop	*op;
	json_t		*tid;
	uint32_t	 type = IMSG_FRONT_TASK_STATUS;
	int		 form, v1;
	char		 err[TOOL_ERR_MAX];

	/* The extension's form when the request names it. */
	v1 = !fr->rev2026 && !task_extension(params) && task_session_v1(fr);
	if (strcmp(method, "tasks/get") == 0)
		form = v1 ? FOP_TASK_GET_V1 : FOP_TASK_GET;
	else if (strcmp(method, "tasks/result") == 0 && v1)
		form = FOP_TASK_RESULT_V1;
	else if (strcmp(method, "tasks/cancel") == 0) {
		form = v1 ? FOP_TASK_CANCEL_V1 : FOP_TASK_CANCEL;
		type = IMSG_FRONT_TASK_CANCEL;
	} else {
		(void)snprintf(err, sizeof(err), "Method not found: %s%s",
		    method, strcmp(method, "tasks/list") == 0 ? " (mcvm "
		    "does not list tasks: keep the ids tools/call gave)" :
		    "");
		return mcp_error(json_incref(id), JSONRPC_METHOD_NOT_FOUND,
		    err);
	}
	if (!json_is_string(tid = json_object_get(params, "taskId")) ||
	    !task_id_valid(json_string_value(tid)))
		return mcp_error(json_incref(id), JSONRPC_INVALID_PARAMS,
		    "params.taskId must be a task id a tools/call returned "
		    "(32 lower-case hex digits)");
	if ((op = calloc(1, sizeof(*op))) == NULL) {
		log_warn("%s: calloc", __func__);
		return mcp_error(json_incref(id), JSONRPC_SERVER_ERROR,
		    "out of memory; retry later");
	}
	op->tool = tool_by_name("vm_status");	/* only named in logs */
	op->rpc_id = json_incref(id);
	op->slot = slot;
	op->task = form;
	req_op_link(fr, op);
	front_send_task_ref(op, type, json_string_value(tid));
	return NULL;
}

/* 2025-11-25's Task from mcvmd's task t. */
static json_t *
task_v1(json_t *t)
{
	json_t	*j, *msg;

	j = json_pack("{s:O,s:O,s:O,s:O,s:O,s:O}",
	    "taskId", json_object_get(t, "taskId"),
	    "status", json_object_get(t, "status"),
	    "createdAt", json_object_get(t, "createdAt"),
	    "lastUpdatedAt", json_object_get(t, "lastUpdatedAt"),
	    "ttl", json_object_get(t, "ttlMs"),
	    "pollInterval", json_object_get(t, "pollIntervalMs"));
	if (j != NULL && (msg = json_object_get(t, "statusMessage")) != NULL)
		json_object_set(j, "statusMessage", msg);
	return j;
}

/* The tool result a completed task t holds, as tools/call gives it. */
static json_t *
task_tool_result(json_t *t)
{
	json_t	*st = json_object_get(t, "toolStatus");
	json_t	*res = json_object_get(t, "toolResult");

	if (!json_is_integer(st) || !json_is_string(res))
		return NULL;
	return catalog_result((uint32_t)json_integer_value(st),
	    json_string_value(res));
}

/*
 * The reply to op, a task's, from mcvmd's answer: status and text, which
 * on TOOL_OK is the task as mcvmd keeps it.
 */
json_t *
task_result(struct fop *op, uint32_t status, const char *text)
{
	json_t		*t, *r = NULL, *e, *res;
	json_error_t	 jerr;
	const char	*st;
	char		 msg[TOOL_MESSAGE_MAX + 1];

	if (status != TOOL_OK) {
		/* A call refused before it ran is the tool's error. */
		if (op->task == FOP_TASK_CREATE ||
		    op->task == FOP_TASK_CREATE_V1)
			return rpc_result(op->rpc_id,
			    catalog_result(status, text));
		(void)snprintf(msg, sizeof(msg), "%s", text);
		return mcp_error(json_incref(op->rpc_id),
		    status == TOOL_NOT_FOUND ? JSONRPC_INVALID_PARAMS :
		    JSONRPC_INTERNAL_ERROR, msg);
	}
	if ((t = json_loads(text, JSON_REJECT_DUPLICATES, &jerr)) == NULL ||
	    !json_is_object(t) ||
	    !json_is_string(json_object_get(t, "status"))) {
		json_decref(t);
		log_warnx("%s: mcvmd sent a task that is not one", __func__);
		return mcp_error(json_incref(op->rpc_id),
		    JSONRPC_INTERNAL_ERROR, "internal error: the service "
		    "produced an invalid task");
	}
	st = json_string_value(json_object_get(t, "status"));
	switch (op->task) {
	case FOP_TASK_CREATE:
	case FOP_TASK_GET:
		r = json_deep_copy(t);
		json_object_del(r, "toolStatus");
		json_object_del(r, "toolResult");
		json_object_set_new(r, "resultType", json_string(
		    op->task == FOP_TASK_CREATE ? "task" : "complete"));
		if (op->task == FOP_TASK_CREATE)
			json_object_del(r, "error");
		else if (strcmp(st, "completed") == 0 &&
		    (res = task_tool_result(t)) != NULL) {
			/* What tools/call would have answered, complete. */
			json_object_set_new(res, "resultType",
			    json_string("complete"));
			json_object_set_new(r, "result", res);
		}
		break;
	case FOP_TASK_CANCEL:
		r = json_pack("{s:s}", "resultType", "complete");
		break;
	case FOP_TASK_CREATE_V1:
		r = json_pack("{s:o}", "task", task_v1(t));
		break;
	case FOP_TASK_GET_V1:
	case FOP_TASK_CANCEL_V1:
		r = task_v1(t);
		break;
	case FOP_TASK_RESULT_V1:
		if (strcmp(st, "completed") == 0) {
			r = task_tool_result(t);
			if (r != NULL)
				json_object_set_new(r, "_meta", json_pack(
				    "{s:{s:O}}", "io.modelcontextprotocol/"
				    "related-task", "taskId",
				    json_object_get(t, "taskId")));
			break;
		}
		if (strcmp(st, "failed") == 0 &&
		    (e = json_object_get(t, "error")) != NULL &&
		    json_is_string(json_object_get(e, "message")))
			(void)snprintf(msg, sizeof(msg), "%s",
			    json_string_value(json_object_get(e, "message")));
		else
			(void)snprintf(msg, sizeof(msg), "the task is %s: %s",
			    st, strcmp(st, "working") == 0 ? "poll tasks/get "
			    "until its status is completed, then ask again" :
			    "it has no result");
		json_decref(t);
		return mcp_error(json_incref(op->rpc_id),
		    strcmp(st, "working") == 0 ? JSONRPC_INVALID_PARAMS :
		    JSONRPC_INTERNAL_ERROR, msg);
	}
	json_decref(t);
	return rpc_result(op->rpc_id, r);
}
