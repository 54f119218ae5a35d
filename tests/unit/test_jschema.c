/*
 * The output schemas (common/jschema.c): every tool's loads and uses only
 * what the check knows; the check refuses what a schema does not say;
 * and mcvmd's VM object, in each of its shapes, is what the VM tools'
 * schemas say.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "jschema.h"
#include "tools.h"
#include "vm.h"

static json_t *
schema_of(const char *tool)
{
	const struct tool_desc	*t = tool_by_name(tool);
	json_t			*s;

	cr_assert_not_null(t, "%s", tool);
	cr_assert_not_null(s = jschema_load(t->output), "%s", tool);
	return s;
}

static int
check(json_t *schema, const char *value, char *err, size_t errlen)
{
	json_error_t	 jerr;
	json_t		*v;
	int		 rc;

	cr_assert_not_null(v = json_loads(value, 0, &jerr), "%s", value);
	rc = jschema_check(schema, v, err, errlen);
	json_decref(v);
	return rc;
}

Test(jschema, every_output_schema_is_known)
{
	json_t	*s;
	char	 err[256];
	size_t	 i;

	for (i = 0; i < TOOL_COUNT; i++) {
		s = jschema_load(tool_table[i].output);
		cr_assert_not_null(s, "%s: not JSON", tool_table[i].name);
		cr_expect_eq(jschema_known(s, err, sizeof(err)), 0, "%s: %s",
		    tool_table[i].name, err);
		cr_expect(json_is_object(json_object_get(s, "properties")),
		    "%s: no properties", tool_table[i].name);
		json_decref(s);
	}
}

Test(jschema, refuses_what_the_schema_does_not_say)
{
	json_t	*s = jschema_load("{'type':'object','properties':{'a':{"
	    "'type':'integer','minimum':0},'b':{'type':'array','items':{"
	    "'type':'object','properties':{'c':{'type':'string','enum':["
	    "'x','y']}}}},'d':{'type':['string','null']}},'required':["
	    "'a']}");
	char	 err[256];

	cr_assert_not_null(s);
	cr_expect_eq(check(s, "{\"a\":1,\"b\":[{\"c\":\"x\"}],\"d\":null}",
	    err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(check(s, "{\"a\":1,\"d\":\"s\"}", err, sizeof(err)), 0);

	cr_expect_eq(check(s, "{\"b\":[]}", err, sizeof(err)), -1);
	cr_expect_str_eq(err, "the result: lacks the required a");
	cr_expect_eq(check(s, "{\"a\":\"1\"}", err, sizeof(err)), -1);
	cr_expect_str_eq(err, "a: has the wrong type");
	cr_expect_eq(check(s, "{\"a\":-1}", err, sizeof(err)), -1);
	cr_expect_str_eq(err, "a: is below its minimum");
	cr_expect_eq(check(s, "{\"a\":1,\"e\":1}", err, sizeof(err)), -1);
	cr_expect_str_eq(err, "e: is not in the schema");
	cr_expect_eq(check(s, "{\"a\":1,\"b\":[{\"c\":\"x\"},{\"c\":\"z\"}]}",
	    err, sizeof(err)), -1);
	cr_expect_str_eq(err, "b[1].c: is none of its enum");
	cr_expect_eq(check(s, "{\"a\":1,\"b\":[{\"f\":1}]}", err,
	    sizeof(err)), -1);
	cr_expect_str_eq(err, "b[0].f: is not in the schema");
	cr_expect_eq(check(s, "{\"a\":1,\"d\":2}", err, sizeof(err)), -1);
	cr_expect_str_eq(err, "d: has the wrong type");
	cr_expect_eq(check(s, "[]", err, sizeof(err)), -1);
	json_decref(s);
}

Test(jschema, unknown_keywords_are_refused)
{
	json_t	*s = jschema_load("{'type':'object','properties':{'a':{"
	    "'type':'string','pattern':'^x$'}}}");
	char	 err[256];

	cr_assert_not_null(s);
	cr_expect_eq(jschema_known(s, err, sizeof(err)), -1);
	cr_expect_str_eq(err, "keyword pattern");
	json_decref(s);
	cr_expect_null(jschema_load("{'a':"));
}

/* The VM object of vm_list and vm_status, with and without a network. */
Test(jschema, the_vm_object_is_described)
{
	struct vm_row	 row;
	struct vm	*vm;
	json_t		*list, *status, *j, *l;
	char		 err[256];

	memset(&row, 0, sizeof(row));
	(void)strcpy(row.id, "vm-0123456789abcdef");
	(void)strcpy(row.name, "web");
	(void)strcpy(row.state, "running");
	(void)strcpy(row.image, "debian");
	(void)strcpy(row.reason, "a reason");
	row.memory_mib = 512;
	row.vcpus = 1;
	vm = vm_new(&row);
	list = schema_of("vm_list");
	status = schema_of("vm_status");

	j = vm_json(vm);
	cr_expect_eq(jschema_check(status, j, err, sizeof(err)), 0, "%s",
	    err);
	l = json_pack("{s:[O]}", "vms", j);
	cr_expect_eq(jschema_check(list, l, err, sizeof(err)), 0, "%s", err);
	json_decref(l);
	json_decref(j);

	(void)strcpy(vm->address, "10.77.0.2");
	(void)strcpy(vm->gateway, "10.77.0.1");
	(void)strcpy(vm->mac, "52:54:00:00:00:02");
	vm->fwd[0].host = 20022;
	vm->fwd[0].guest = 22;
	vm->nfwd = 1;
	j = vm_json(vm);
	cr_expect_eq(jschema_check(status, j, err, sizeof(err)), 0, "%s",
	    err);
	json_decref(j);
	json_decref(list);
	json_decref(status);
}
