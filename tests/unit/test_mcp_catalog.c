/*
 * frontd's side of the catalogue: the generated schemas, the conversion of
 * JSON arguments into typed ones, the rendering of results, and the
 * session table.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "frontd.h"

static struct frontd	 test_frontd;
struct frontd		*fenv = &test_frontd;

static char	 err[TOOL_ERR_MAX];

static int
convert(const char *tool, const char *json)
{
	struct tool_args	 a;
	json_t			*j;
	void			*scratch = NULL;
	int			 rc;

	j = json_loads(json, 0, NULL);
	cr_assert_not_null(j, "%s", json);
	rc = catalog_args(tool_by_name(tool), j, &a, &scratch, err,
	    sizeof(err));
	free(scratch);
	json_decref(j);
	return rc;
}

Test(catalog, builds_every_tool)
{
	json_t	*tools, *t;
	size_t	 i;

	cr_assert_eq(catalog_init(), 0);
	tools = json_object_get(fenv->tools_list, "tools");
	cr_assert_eq(json_array_size(tools), TOOL_COUNT);
	json_array_foreach(tools, i, t) {
		cr_assert(json_is_object(json_object_get(t, "inputSchema")));
		cr_assert(json_is_object(json_object_get(t, "outputSchema")));
		cr_assert(json_is_object(json_object_get(t, "annotations")));
	}
	cr_assert_eq(strlen(fenv->tools_list_text), fenv->tools_list_len);
}

/* What frontd lists is the table, rendered: nothing of frontd's own. */
Test(catalog, lists_the_table_rendered)
{
	json_t		*tools, *t, *props, *ann;
	const char	*d;
	char		 want[64];
	size_t		 i, k;

	cr_assert_eq(catalog_init(), 0);
	tools = json_object_get(fenv->tools_list, "tools");
	json_array_foreach(tools, i, t) {
		const struct tool_desc *td = &tool_table[i];

		cr_assert_str_eq(json_string_value(json_object_get(t, "name")),
		    td->name);
		cr_assert_str_eq(json_string_value(json_object_get(t,
		    "title")), td->title);
		d = json_string_value(json_object_get(t, "description"));
		cr_assert_not_null(d, "%s", td->name);
		cr_assert_null(strchr(d, '$'), "%s: %s", td->name, d);
		props = json_object_get(json_object_get(t, "inputSchema"),
		    "properties");
		cr_assert_eq(json_object_size(props), td->nparams);
		for (k = 0; k < td->nparams; k++) {
			json_t *p = json_object_get(props, td->params[k].name);

			cr_assert_not_null(p, "%s", td->params[k].name);
			cr_assert_null(strchr(json_string_value(
			    json_object_get(p, "description")), '$'));
		}
		ann = json_object_get(t, "annotations");
		cr_assert_eq(json_is_true(json_object_get(ann,
		    "readOnlyHint")), (td->flags & TF_READONLY) != 0);
		cr_assert_eq(json_is_true(json_object_get(ann,
		    "destructiveHint")), (td->flags & TF_DESTRUCTIVE) != 0);
		cr_assert_str_eq(json_string_value(json_object_get(
		    json_object_get(t, "outputSchema"), "type")), "object");
	}
	t = json_array_get(tools, TOOL_VM_READ_FILE - 1);
	(void)snprintf(want, sizeof(want), "%d KiB", TOOL_FILE_MAX / 1024);
	cr_assert(strstr(json_string_value(json_object_get(t,
	    "description")), want) != NULL);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(
	    json_object_get(json_object_get(t, "inputSchema"), "properties"),
	    "max_bytes"), "default")), TOOL_FILE_MAX);
	t = json_array_get(tools, TOOL_VM_EXEC - 1);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(
	    json_object_get(json_object_get(t, "inputSchema"), "properties"),
	    "timeout_seconds"), "default")), TOOL_EXEC_TIMEOUT_DEFAULT);
	/* a default the operator sets is not advertised as a number */
	t = json_array_get(tools, TOOL_VM_CREATE - 1);
	cr_assert_null(json_object_get(json_object_get(json_object_get(
	    json_object_get(t, "inputSchema"), "properties"),
	    "idle_seconds"), "default"));
}

Test(catalog, arguments)
{
	cr_assert_eq(convert("vm_create", "{\"request_id\":\"r1\","
	    "\"network\":\"on\",\"memory_mib\":1024,\"port_forwards\":"
	    "[\"auto:22\"]}"), 0, "%s", err);
	cr_assert_eq(convert("vm_create", "{}"), -1);
	cr_assert_str_eq(err, "request_id is required");
	cr_assert_eq(convert("vm_create", "{\"request_id\":\"r1\","
	    "\"bogus\":1}"), -1);
	cr_assert(strstr(err, "unknown parameter") != NULL);
	cr_assert_eq(convert("vm_create", "{\"request_id\":5}"), -1);
	cr_assert_eq(convert("vm_create", "{\"request_id\":\"r\","
	    "\"memory_mib\":1.5}"), -1);
	cr_assert_eq(convert("vm_create", "{\"request_id\":\"r\","
	    "\"memory_mib\":\"1024\"}"), -1);
	cr_assert_eq(convert("vm_create", "{\"request_id\":\"r\","
	    "\"network\":\"maybe\"}"), -1);
	cr_assert(strstr(err, "\"off\", \"on\"") != NULL, "%s", err);
	/* null stands for an omitted optional parameter */
	cr_assert_eq(convert("vm_create", "{\"request_id\":\"r\","
	    "\"name\":null}"), 0, "%s", err);
	cr_assert_eq(convert("vm_create", "{\"request_id\":null}"), -1);
	cr_assert_eq(convert("vm_job_output", "{\"vm_id\":"
	    "\"vm-0123456789abcdef\",\"job_id\":\"job-0123456789abcdef\","
	    "\"cursor\":{\"stdout\":3}}"), 0, "%s", err);
	cr_assert_eq(convert("vm_job_output", "{\"vm_id\":"
	    "\"vm-0123456789abcdef\",\"job_id\":\"job-0123456789abcdef\","
	    "\"cursor\":{\"stdin\":3}}"), -1);
	cr_assert_eq(convert("vm_job_output", "{\"vm_id\":"
	    "\"vm-0123456789abcdef\",\"job_id\":\"job-0123456789abcdef\","
	    "\"cursor\":{\"stdout\":-1}}"), -1);
	cr_assert_eq(convert("vm_write_file", "{\"vm_id\":"
	    "\"vm-0123456789abcdef\",\"path\":\"a\",\"content_base64\":"
	    "\"aGVsbG8=\"}"), 0, "%s", err);
	cr_assert_eq(convert("vm_write_file", "{\"vm_id\":"
	    "\"vm-0123456789abcdef\",\"path\":\"a\",\"content_base64\":"
	    "\"aGVsbG8\"}"), -1);
	cr_assert_eq(convert("vm_send_keys", "{\"vm_id\":"
	    "\"vm-0123456789abcdef\",\"keys\":[]}"), -1);
	cr_assert_eq(convert("vm_send_keys", "{\"vm_id\":"
	    "\"vm-0123456789abcdef\",\"keys\":[\"ret\", 5]}"), -1);
}

Test(catalog, results)
{
	json_t	*r;

	r = catalog_result(TOOL_OK, "{\"vms\":[]}");
	cr_assert(json_is_false(json_object_get(r, "isError")));
	cr_assert(json_is_array(json_object_get(json_object_get(r,
	    "structuredContent"), "vms")));
	json_decref(r);
	r = catalog_result(TOOL_OK, "[1]");
	cr_assert(json_is_true(json_object_get(r, "isError")));
	json_decref(r);
	r = catalog_result(TOOL_UNAVAILABLE, "not built");
	cr_assert(json_is_true(json_object_get(r, "isError")));
	cr_assert_null(json_object_get(r, "structuredContent"));
	json_decref(r);
}

Test(session, lifecycle_and_workspace_binding)
{
	struct session	*s, *t;
	char		 id[SESSION_ID_LEN + 1];
	size_t		 i;

	s = session_new("alice", "2025-06-18");
	cr_assert_not_null(s);
	snprintf(id, sizeof(id), "%s", session_id(s));
	cr_assert_eq(strlen(id), SESSION_ID_LEN);
	cr_assert_eq(session_find(id, "alice"), s);
	cr_assert_null(session_find(id, "bob"));
	cr_assert_str_eq(session_version(s), "2025-06-18");
	session_end(s);
	cr_assert_null(session_find(id, "alice"));

	/* a workspace keeps at most SESSIONS_PER_WS: the oldest goes */
	t = session_new("carol", "2025-11-25");
	snprintf(id, sizeof(id), "%s", session_id(t));
	for (i = 0; i < SESSIONS_PER_WS; i++)
		cr_assert_not_null(session_new("carol", "2025-11-25"));
	cr_assert_null(session_find(id, "carol"));
	session_sweep(time(NULL) + SESSION_IDLE_MAX + 1);
	cr_assert_eq(session_count(), 0);
}

Test(session, rate_limit)
{
	struct timespec	 now = { 1000, 0 };
	int		 i, ok = 0;

	for (i = 0; i < 20; i++)
		ok += rate_allow("dave", 5, 10, &now);
	cr_assert_eq(ok, 10);
	now.tv_sec += 1;
	ok = 0;
	for (i = 0; i < 20; i++)
		ok += rate_allow("dave", 5, 10, &now);
	cr_assert_eq(ok, 5);
	cr_assert_eq(rate_allow("erin", 5, 10, &now), 1);
	cr_assert_eq(rate_allow("anyone", 0, 0, &now), 1);
}
