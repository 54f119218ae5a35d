/*
 * MCP tasks (see task.h).  A task is a row of state.db's tasks table,
 * owned by one workspace: a lookup always names the workspace too, so
 * another's task id answers exactly as a missing one.  Its call runs
 * through the dispatcher as any other, under a call id whose high half
 * is TASK_CALL_GEN; call_reply hands the answer here instead of to
 * frontd, so a task outlives the frontd that made it.  The work of a
 * task that was running when mcvmd stopped is lost with it: at start
 * such a task becomes failed, saying so.
 */
#include <sys/random.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <sqlite3.h>

#include "dispatch.h"
#include "log.h"
#include "mcvmd.h"
#include "msg_front.h"
#include "task.h"
#include "tools.h"

#define TASK_TIME_MAX	32	/* an ISO 8601 date */

static uint32_t	 task_seq;
static time_t	 task_swept;

static int64_t
now_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
iso_time(int64_t ms, char *buf, size_t len)
{
	time_t		 t = ms / 1000;
	struct tm	 tm;

	if (gmtime_r(&t, &tm) == NULL ||
	    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		(void)snprintf(buf, len, "1970-01-01T00:00:00Z");
}

int
task_call(uint64_t call)
{
	return (uint32_t)(call >> 32) == TASK_CALL_GEN;
}

/* Answers frontd's request peerid with st and text. */
static void
task_answer(struct imsgev *iev, uint32_t peerid, enum tool_status st,
    const char *text)
{
	struct msg_front_tool_result	 res;
	struct ibuf			*b;

	if ((b = imsg_create(&iev->ibuf, IMSG_FRONT_TOOL_RESULT, peerid, 0,
	    strlen(text) + 16)) == NULL)
		fatal("%s", __func__);
	res.status = st;
	res.json = text;
	msg_front_tool_result_put(b, &res);
	if (imsgev_close(iev, b) == -1)
		fatal("%s", __func__);
}

static void
task_answer_json(struct imsgev *iev, uint32_t peerid, json_t *j)
{
	char	*text;

	if (j == NULL || (text = json_dumps(j, JSON_COMPACT)) == NULL) {
		json_decref(j);
		task_answer(iev, peerid, TOOL_UNAVAILABLE, "the task could "
		    "not be encoded; retry later");
		return;
	}
	task_answer(iev, peerid, TOOL_OK, text);
	free(text);
	json_decref(j);
}

/*
 * The task id of workspace ws as JSON for frontd (which turns toolStatus
 * and toolResult into the tool's result), or NULL: none such, or past
 * its time to live.  *found is -1 on a database error.
 */
json_t *
task_json(int64_t ws, const char *id, int *found)
{
	sqlite3_stmt	*st;
	json_t		*j = NULL;
	const char	*status, *msg, *result;
	int64_t		 created, updated, ttl;
	char		 c[TASK_TIME_MAX], u[TASK_TIME_MAX];
	int		 rc;

	*found = 0;
	if (sqlite3_prepare_v2(state_db(), "SELECT status, message, result, "
	    "tool_status, created, updated, ttl_ms FROM tasks WHERE id = ?1 "
	    "AND workspace_id = ?2 AND created + ttl_ms > ?3", -1, &st,
	    NULL) != SQLITE_OK) {
		log_warnx("state: %s", sqlite3_errmsg(state_db()));
		*found = -1;
		return NULL;
	}
	(void)sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	(void)sqlite3_bind_int64(st, 2, ws);
	(void)sqlite3_bind_int64(st, 3, now_ms());
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		status = (const char *)sqlite3_column_text(st, 0);
		msg = (const char *)sqlite3_column_text(st, 1);
		result = (const char *)sqlite3_column_text(st, 2);
		created = sqlite3_column_int64(st, 4);
		updated = sqlite3_column_int64(st, 5);
		ttl = sqlite3_column_int64(st, 6);
		iso_time(created, c, sizeof(c));
		iso_time(updated, u, sizeof(u));
		j = json_pack("{s:s,s:s,s:s,s:s,s:I,s:i}", "taskId", id,
		    "status", status, "createdAt", c, "lastUpdatedAt", u,
		    "ttlMs", (json_int_t)ttl, "pollIntervalMs", TASK_POLL_MS);
		if (j != NULL && msg != NULL && msg[0] != '\0')
			json_object_set_new(j, "statusMessage",
			    json_string(msg));
		if (j != NULL && strcmp(status, "completed") == 0) {
			json_object_set_new(j, "toolStatus", json_integer(
			    sqlite3_column_int64(st, 3)));
			json_object_set_new(j, "toolResult",
			    json_string(result != NULL ? result : ""));
		}
		if (j != NULL && strcmp(status, "failed") == 0)
			json_object_set_new(j, "error", json_pack("{s:i,s:s}",
			    "code", -32603, "message", msg != NULL &&
			    msg[0] != '\0' ? msg : "the task failed"));
		*found = j != NULL ? 1 : -1;
	} else if (rc != SQLITE_DONE) {
		log_warnx("state: %s", sqlite3_errmsg(state_db()));
		*found = -1;
	}
	sqlite3_finalize(st);
	return j;
}

int
task_count(int64_t ws)
{
	sqlite3_stmt	*st;
	int		 n = -1;

	if (sqlite3_prepare_v2(state_db(), "SELECT count(*) FROM tasks "
	    "WHERE workspace_id = ?1 AND created + ttl_ms > ?2", -1, &st,
	    NULL) != SQLITE_OK)
		return -1;
	(void)sqlite3_bind_int64(st, 1, ws);
	(void)sqlite3_bind_int64(st, 2, now_ms());
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return n;
}

static int
task_insert(const char *id, int64_t ws, uint64_t call, const char *tool,
    int64_t ttl)
{
	sqlite3_stmt	*st;
	int64_t		 now = now_ms();
	int		 rc;

	if (sqlite3_prepare_v2(state_db(), "INSERT INTO tasks (id, "
	    "workspace_id, call, tool, status, message, created, updated, "
	    "ttl_ms) VALUES (?1, ?2, ?3, ?4, 'working', ?5, ?6, ?6, ?7)", -1,
	    &st, NULL) != SQLITE_OK) {
		log_warnx("state: %s", sqlite3_errmsg(state_db()));
		return -1;
	}
	(void)sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	(void)sqlite3_bind_int64(st, 2, ws);
	(void)sqlite3_bind_int64(st, 3, (int64_t)call);
	(void)sqlite3_bind_text(st, 4, tool, -1, SQLITE_STATIC);
	(void)sqlite3_bind_text(st, 5, "the call is running", -1,
	    SQLITE_STATIC);
	(void)sqlite3_bind_int64(st, 6, now);
	(void)sqlite3_bind_int64(st, 7, ttl);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		log_warnx("state: %s", sqlite3_errmsg(state_db()));
		return -1;
	}
	return 0;
}

/*
 * Moves the working task of call (0: of id in ws) to status, with msg
 * and a tool result.  A task already ended stays as it ended.
 */
static int
task_set(uint64_t call, int64_t ws, const char *id, const char *status,
    const char *msg, enum tool_status tst, const char *result)
{
	sqlite3_stmt	*st;
	int		 rc;

	if (sqlite3_prepare_v2(state_db(), call != 0 ?
	    "UPDATE tasks SET status = ?1, message = ?2, result = ?3, "
	    "tool_status = ?4, updated = ?5 WHERE call = ?6 AND "
	    "status = 'working'" :
	    "UPDATE tasks SET status = ?1, message = ?2, result = ?3, "
	    "tool_status = ?4, updated = ?5 WHERE id = ?7 AND "
	    "workspace_id = ?6 AND status = 'working'", -1, &st, NULL) !=
	    SQLITE_OK) {
		log_warnx("state: %s", sqlite3_errmsg(state_db()));
		return -1;
	}
	(void)sqlite3_bind_text(st, 1, status, -1, SQLITE_STATIC);
	(void)sqlite3_bind_text(st, 2, msg, -1, SQLITE_STATIC);
	(void)sqlite3_bind_text(st, 3, result, -1, SQLITE_STATIC);
	(void)sqlite3_bind_int64(st, 4, tst);
	(void)sqlite3_bind_int64(st, 5, now_ms());
	(void)sqlite3_bind_int64(st, 6, call != 0 ? (int64_t)call : ws);
	if (call == 0)
		(void)sqlite3_bind_text(st, 7, id, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		log_warnx("state: %s", sqlite3_errmsg(state_db()));
		return -1;
	}
	return sqlite3_changes(state_db());
}

/* The answer to a task's call, from call_reply: the task completes. */
void
task_finish(uint64_t call, enum tool_status st, const char *text)
{
	char	 msg[TOOL_MESSAGE_MAX];

	if (strlen(text) > TASK_STORED_MAX) {
		(void)snprintf(msg, sizeof(msg), "the result is %zu bytes, "
		    "over the %u KiB a task keeps; the call was done: call "
		    "the tool without a task, or ask for less",
		    strlen(text), TASK_STORED_MAX / 1024);
		st = TOOL_ERROR;
		text = msg;
	}
	if (task_set(call, 0, NULL, "completed", st == TOOL_OK ?
	    "the call is done" : "the call failed", st, text) == -1)
		log_warnx("task call %u: its result could not be kept",
		    (uint32_t)call);
}

static uint64_t
task_next_call(void)
{
	if (++task_seq == 0)
		task_seq = 1;
	return (uint64_t)TASK_CALL_GEN << 32 | task_seq;
}

/*
 * A new working task of workspace ws for tool, living ttl_ms (0: the
 * default), its id written to id; returns its call id, or 0 when it
 * could not be stored.
 */
uint64_t
task_add(int64_t ws, const char *tool, uint64_t ttl_ms,
    char id[TASK_ID_LEN + 1])
{
	uint8_t		 raw[TASK_ID_LEN / 2];
	uint64_t	 call, ttl;
	size_t		 i;

	ttl = ttl_ms == 0 ? TASK_TTL_DEFAULT_MS : ttl_ms;
	if (ttl < TASK_TTL_MIN_MS)
		ttl = TASK_TTL_MIN_MS;
	if (ttl > TASK_TTL_MAX_MS)
		ttl = TASK_TTL_MAX_MS;
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		fatal("getrandom");
	for (i = 0; i < sizeof(raw); i++)
		(void)snprintf(id + 2 * i, 3, "%02x", raw[i]);
	call = task_next_call();
	if (task_insert(id, ws, call, tool, (int64_t)ttl) == -1)
		return 0;
	return call;
}

/* The token's workspace in auth, or -1 with frontd's request answered. */
static int
task_auth(struct imsgev *iev, uint32_t peerid, const uint8_t *hash,
    struct ws_auth *auth)
{
	if (state_token_auth(hash, auth) == -1) {
		task_answer(iev, peerid, TOOL_UNAVAILABLE,
		    "authentication is unavailable; retry later");
		return -1;
	}
	if (auth->status != AUTH_OK) {
		task_answer(iev, peerid, TOOL_DENIED,
		    "the token is not valid (unknown, expired or revoked)");
		return -1;
	}
	return 0;
}

/* IMSG_FRONT_TASK: the call, as IMSG_FRONT_TOOL's, made a task. */
static void
task_create(struct imsgev *iev, struct imsg *imsg)
{
	struct msg_front_task	 m;
	struct ws_auth		 auth;
	char			 id[TASK_ID_LEN + 1], err[TOOL_MESSAGE_MAX];
	uint64_t		 call;
	int			 n, found;
	json_t			*j;

	if (msg_front_task_get(imsg, &m) == -1)
		fatalx("frontd: malformed %s", imsg_type_name(imsg->hdr.type));
	if (task_auth(iev, imsg->hdr.peerid, m.tool.hash, &auth) == -1)
		return;
	if ((n = task_count(auth.id)) == -1) {
		task_answer(iev, imsg->hdr.peerid, TOOL_UNAVAILABLE,
		    "the task store is unavailable; retry later");
		return;
	}
	if (n >= TASK_PER_WS_MAX) {
		(void)snprintf(err, sizeof(err), "this workspace has %d "
		    "unexpired tasks, the most it may keep; nothing was run. "
		    "Wait for some to expire, or call without a task", n);
		task_answer(iev, imsg->hdr.peerid, TOOL_ERROR, err);
		return;
	}
	if ((call = task_add(auth.id, m.tool.args.tool->name, m.ttl_ms,
	    id)) == 0) {
		task_answer(iev, imsg->hdr.peerid, TOOL_UNAVAILABLE,
		    "the task could not be stored; nothing was run. Retry "
		    "later");
		return;
	}
	/* Durable before it is told: a tasks/get of it finds it. */
	j = task_json(auth.id, id, &found);
	task_answer_json(iev, imsg->hdr.peerid, j);
	log_debug("%s: workspace %s: %s as task %s", __func__, auth.name,
	    m.tool.args.tool->name, id);
	(void)dispatch_run(call, &auth, &m.tool.args);
}

/* The working task's call, or 0. */
static uint64_t
task_working_call(int64_t ws, const char *id)
{
	sqlite3_stmt	*st;
	uint64_t	 call = 0;

	if (sqlite3_prepare_v2(state_db(), "SELECT call FROM tasks WHERE "
	    "id = ?1 AND workspace_id = ?2 AND status = 'working'", -1, &st,
	    NULL) != SQLITE_OK)
		return 0;
	(void)sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	(void)sqlite3_bind_int64(st, 2, ws);
	if (sqlite3_step(st) == SQLITE_ROW)
		call = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return task_call(call) ? call : 0;
}

/* IMSG_FRONT_TASK_STATUS, IMSG_FRONT_TASK_CANCEL */
static void
task_ref(struct imsgev *iev, struct imsg *imsg)
{
	struct msg_front_task_status	 m;
	struct ws_auth			 auth;
	uint64_t			 call;
	int				 found;
	json_t				*j;

	if ((imsg->hdr.type == IMSG_FRONT_TASK_STATUS ?
	    msg_front_task_status_get(imsg, &m) :
	    msg_front_task_cancel_get(imsg, &m)) == -1)
		fatalx("frontd: malformed %s", imsg_type_name(imsg->hdr.type));
	if (task_auth(iev, imsg->hdr.peerid, m.hash, &auth) == -1)
		return;
	if (imsg->hdr.type == IMSG_FRONT_TASK_CANCEL &&
	    (call = task_working_call(auth.id, m.id)) != 0) {
		/* First the status: the cancel's answer is dropped. */
		if (task_set(0, auth.id, m.id, "cancelled", "cancelled by "
		    "the client; what the call had done stays done", TOOL_OK,
		    "") > 0) {
			log_debug("%s: task %s cancelled", __func__, m.id);
			dispatch_cancel(call);
		}
	}
	j = task_json(auth.id, m.id, &found);
	if (found == 0) {
		task_answer(iev, imsg->hdr.peerid, TOOL_NOT_FOUND, "no such "
		    "task: it is not this workspace's, or it expired");
		return;
	}
	if (found == -1) {
		json_decref(j);
		task_answer(iev, imsg->hdr.peerid, TOOL_UNAVAILABLE,
		    "the task store is unavailable; retry later");
		return;
	}
	task_answer_json(iev, imsg->hdr.peerid, j);
}

void
task_front(struct imsgev *iev, struct imsg *imsg)
{
	if (imsg->hdr.type == IMSG_FRONT_TASK)
		task_create(iev, imsg);
	else
		task_ref(iev, imsg);
}

/*
 * At start: a task that was working ran in the mcvmd that stopped, and
 * its work with it.
 */
int
task_recover(void)
{
	sqlite3_stmt	*st;
	int		 rc;

	if (sqlite3_prepare_v2(state_db(), "UPDATE tasks SET status = "
	    "'failed', message = 'mcvmd restarted while the task ran; "
	    "what it had done may be partly done: check with vm_list or "
	    "vm_status, then call again', updated = ?1 WHERE status = "
	    "'working'", -1, &st, NULL) != SQLITE_OK) {
		log_warnx("state: %s", sqlite3_errmsg(state_db()));
		return -1;
	}
	(void)sqlite3_bind_int64(st, 1, now_ms());
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		log_warnx("state: %s", sqlite3_errmsg(state_db()));
		return -1;
	}
	if (sqlite3_changes(state_db()) > 0)
		log_info("tasks lost with the last mcvmd: %d",
		    sqlite3_changes(state_db()));
	return 0;
}

/*
 * Every TASK_SWEEP_SECS: expired tasks go, their calls cancelled if they
 * still run.
 */
void
task_sweep(void)
{
	sqlite3_stmt	*st;
	struct timespec	 ts;
	uint64_t	 calls[TASK_PER_WS_MAX];
	size_t		 i, n = 0;
	int64_t		 now = now_ms();

	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (ts.tv_sec - task_swept < TASK_SWEEP_SECS)
		return;
	task_swept = ts.tv_sec;
	if (sqlite3_prepare_v2(state_db(), "SELECT call FROM tasks WHERE "
	    "status = 'working' AND created + ttl_ms <= ?1", -1, &st,
	    NULL) != SQLITE_OK)
		return;
	(void)sqlite3_bind_int64(st, 1, now);
	/* The rest at the next sweep: a cancel may write to the table. */
	while (n < TASK_PER_WS_MAX && sqlite3_step(st) == SQLITE_ROW)
		calls[n++] = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	for (i = 0; i < n; i++)
		if (task_call(calls[i]) && task_set(calls[i], 0, NULL,
		    "failed", "the task outlived its time to live; what its "
		    "call had done stays done", TOOL_ERROR, "") > 0)
			dispatch_cancel(calls[i]);
	if (sqlite3_prepare_v2(state_db(), "DELETE FROM tasks WHERE "
	    "created + ttl_ms <= ?1", -1, &st, NULL) != SQLITE_OK)
		return;
	(void)sqlite3_bind_int64(st, 1, now);
	if (sqlite3_step(st) != SQLITE_DONE)
		log_warnx("state: %s", sqlite3_errmsg(state_db()));
	sqlite3_finalize(st);
}
