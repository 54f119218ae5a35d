/*
 * mcvmd's task store (mcvmd/task.c) against a real state.db: a task is
 * its workspace's alone, its call's answer completes it once, a result
 * over the bound is kept as an error saying so, and a task working when
 * mcvmd stopped is failed at the next start.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "mcvmd.h"
#include "statedb.h"
#include "task.h"

static const char *
field(json_t *j, const char *k)
{
	return json_string_value(json_object_get(j, k));
}

TestSuite(task, .init = statedb_setup, .fini = statedb_teardown);

Test(task, owned_by_its_workspace)
{
	int64_t		 a = statedb_workspace("alice", 1);
	int64_t		 b = statedb_workspace("bob", 2);
	char		 id[TASK_ID_LEN + 1];
	uint64_t	 call;
	int		 found;
	json_t		*j;

	call = task_add(a, "vm_create", 0, id);
	cr_assert(task_call(call));
	cr_assert(task_id_valid(id));
	cr_assert_null(task_json(b, id, &found));
	cr_assert_eq(found, 0);
	cr_assert_not_null(j = task_json(a, id, &found));
	cr_assert_eq(found, 1);
	cr_assert_str_eq(field(j, "status"), "working");
	cr_assert_eq(json_integer_value(json_object_get(j, "ttlMs")),
	    (json_int_t)TASK_TTL_DEFAULT_MS);
	json_decref(j);
	cr_assert_eq(task_count(a), 1);
	cr_assert_eq(task_count(b), 0);
}

Test(task, completes_once)
{
	int64_t		 a = statedb_workspace("alice", 1);
	char		 id[TASK_ID_LEN + 1];
	uint64_t	 call;
	int		 found;
	json_t		*j;

	call = task_add(a, "vm_create", TASK_TTL_MAX_MS * 2, id);
	task_finish(call, TOOL_OK, "{\"vm\":1}");
	task_finish(call, TOOL_ERROR, "late");
	cr_assert_not_null(j = task_json(a, id, &found));
	cr_assert_str_eq(field(j, "status"), "completed");
	cr_assert_str_eq(field(j, "toolResult"), "{\"vm\":1}");
	cr_assert_eq(json_integer_value(json_object_get(j, "toolStatus")),
	    TOOL_OK);
	cr_assert_eq(json_integer_value(json_object_get(j, "ttlMs")),
	    (json_int_t)TASK_TTL_MAX_MS);
	json_decref(j);
}

Test(task, result_bounded)
{
	int64_t		 a = statedb_workspace("alice", 1);
	char		 id[TASK_ID_LEN + 1], *big;
	uint64_t	 call;
	int		 found;
	json_t		*j;

	cr_assert_not_null(big = malloc(TASK_STORED_MAX + 2));
	memset(big, 'x', TASK_STORED_MAX + 1);
	big[TASK_STORED_MAX + 1] = '\0';
	call = task_add(a, "vm_exec", 0, id);
	task_finish(call, TOOL_OK, big);
	free(big);
	cr_assert_not_null(j = task_json(a, id, &found));
	cr_assert_eq(json_integer_value(json_object_get(j, "toolStatus")),
	    TOOL_ERROR);
	cr_assert(strstr(field(j, "toolResult"), "without a task") != NULL);
	json_decref(j);
}

Test(task, failed_after_a_restart)
{
	int64_t		 a = statedb_workspace("alice", 1);
	char		 id[TASK_ID_LEN + 1];
	int		 found;
	json_t		*j;

	cr_assert_neq(task_add(a, "vm_snapshot_create", 0, id), 0);
	state_close();
	cr_assert_eq(state_open(statedb_dir), 0);
	cr_assert_eq(task_recover(), 0);
	cr_assert_not_null(j = task_json(a, id, &found));
	cr_assert_str_eq(field(j, "status"), "failed");
	cr_assert(strstr(json_string_value(json_object_get(json_object_get(j,
	    "error"), "message")), "mcvmd restarted") != NULL);
	json_decref(j);
}
