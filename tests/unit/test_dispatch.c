/*
 * mcvmd's dispatch table (mcvmd/dispatch.h): which tools have an
 * implementation.  The list of those that do not is written out here, so
 * that adding an implementation, or losing one, fails until it is
 * updated.  And each entry is consistent with the catalogue.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "dispatch.h"
#include "tools.h"

static const enum tool_id unavailable[] = {
	TOOL_VM_SCREENSHOT, TOOL_VM_SEND_KEYS, TOOL_VM_TYPE_TEXT,
	TOOL_VM_CLICK, TOOL_VM_MOUSE_MOVE, TOOL_VM_SERIAL_READ,
	TOOL_VM_SNAPSHOT_CREATE, TOOL_VM_SNAPSHOT_RESTORE,
	TOOL_VM_SNAPSHOT_DELETE, TOOL_VM_SNAPSHOT_LIST, TOOL_IMAGE_LIST,
	TOOL_IMAGE_CREATE, TOOL_IMAGE_INFO, TOOL_IMAGE_CONVERT,
	TOOL_IMAGE_RESIZE, TOOL_IMAGE_DELETE, TOOL_IMAGE_SNAPSHOT_CREATE,
	TOOL_IMAGE_SNAPSHOT_APPLY, TOOL_IMAGE_SNAPSHOT_DELETE,
	TOOL_IMAGE_SNAPSHOT_LIST,
};

/* The table's columns, without linking the implementations. */
#define IMPL_COUNT(id, run, cancel, check, receipt, rid)	[id] = 1,
#define IMPL_RECEIPT(id, run, cancel, check, receipt, rid) [id] = receipt,
#define IMPL_RID(id, run, cancel, check, receipt, rid)	[id] = (rid) + 1,
static const int entries[TOOL_ID_END] = { TOOL_IMPLS(IMPL_COUNT) };
static const char *const receipts[TOOL_ID_END] = {
	TOOL_IMPLS(IMPL_RECEIPT)
};
static const int rids[TOOL_ID_END] = { TOOL_IMPLS(IMPL_RID) };

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
		cr_expect(entries[t->id] == !listed, "%s: %s", t->name,
		    listed ? "has an implementation: take it off the list" :
		    "has no implementation: list it as unavailable");
	}
}

Test(dispatch, a_receipt_for_each_request_id)
{
	const struct tool_desc	*t;
	size_t			 i;

	for (i = 0; i < TOOL_COUNT; i++) {
		t = &tool_table[i];
		if (!entries[t->id])
			continue;
		cr_expect((tool_param_index(t, "request_id") != -1) ==
		    (receipts[t->id] != NULL), "%s: a request_id %s", t->name,
		    receipts[t->id] != NULL ? "without a receipt" :
		    "without a parameter");
		/* The entry names the request_id by its index (+1 here). */
		cr_expect_eq(rids[t->id] - 1, tool_param_index(t,
		    "request_id"), "%s: the entry's request_id index", t->name);
	}
}
