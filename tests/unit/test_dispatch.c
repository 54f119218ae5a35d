/*
 * mcvmd's dispatch table (TOOL_IMPL in mcvmd/dispatch.h), as linked into
 * mcvmd: which tools have an implementation.  The list of those that do
 * not is written out here, so that adding an implementation, or losing
 * one, fails until it is updated.  No tool has two entries, and each entry
 * is consistent with the catalogue.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "dispatch.h"
#include "tools.h"

static const enum tool_id unavailable[] = {
	TOOL_NONE,	/* none: every tool has its back end */
};

Test(dispatch, one_entry_per_tool)
{
	const struct tool_impl *const	*p, *const *q;

	LINKSET_FOREACH(tool_impls, p) {
		cr_expect((*p)->id > TOOL_NONE && (*p)->id < TOOL_ID_END,
		    "an entry for tool %d, which is none", (int)(*p)->id);
		cr_expect_not_null((*p)->run, "%s: no run",
		    tool_by_id((*p)->id)->name);
		LINKSET_FOREACH(tool_impls, q)
			cr_expect(p == q || (*p)->id != (*q)->id,
			    "%s: two entries", tool_by_id((*p)->id)->name);
	}
}

Test(dispatch, exactly_these_tools_are_unavailable)
{
	const struct tool_desc	*t;
	size_t			 i;
	int			 listed;

	for (i = 0; i < TOOL_COUNT; i++) {
		t = &tool_table[i];
		listed = 0;
		for (size_t k = 0; k < sizeof(unavailable) /
		    sizeof(unavailable[0]); k++)
			if (unavailable[k] == t->id)
				listed = 1;
		cr_expect((dispatch_impl(t->id) != NULL) == !listed,
		    "%s: %s", t->name,
		    listed ? "has an implementation: take it off the list" :
		    "has no implementation: list it as unavailable");
	}
}

Test(dispatch, a_receipt_for_each_request_id)
{
	const struct tool_desc	*t;
	const struct tool_impl	*impl;
	size_t			 i;

	for (i = 0; i < TOOL_COUNT; i++) {
		t = &tool_table[i];
		if ((impl = dispatch_impl(t->id)) == NULL)
			continue;
		cr_expect((tool_param_index(t, "request_id") != -1) ==
		    (impl->receipt != NULL), "%s: a request_id %s", t->name,
		    impl->receipt != NULL ? "without a receipt" :
		    "without a parameter");
		/* The entry names the request_id by its index. */
		cr_expect_eq(impl->rid, tool_param_index(t, "request_id"),
		    "%s: the entry's request_id index", t->name);
	}
}
