/*
 * The monitor's op table (VMM_OP in vmm/vmm.h): exactly one entry per
 * IMSG_VMM_* request of the message list (a type with a reply), and none
 * for any other type; each entry complete, its getter the codec of its own
 * type.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "imsg.h"
#include "msg.h"
#include "proto.h"
#include "vmm.h"

static const struct {
	uint32_t	 type;
	const char	*name;
} all_types[] = {
#define ALL_TYPE(name, val, reply)	{ name, #name },
	IMSG_TYPES(ALL_TYPE)
#undef ALL_TYPE
};
#define ALL_TYPES_N	(sizeof(all_types) / sizeof(all_types[0]))

static int
is_vmm_request(size_t i)
{
	return strncmp(all_types[i].name, "IMSG_VMM_", 9) == 0 &&
	    imsg_reply_type(all_types[i].type) != IMSG_NONE;
}

static size_t
nops(void)
{
	const struct vmm_op *const	*p;
	size_t				 n = 0;

	LINKSET_FOREACH(vmm_ops, p)
		n++;
	return n;
}

Test(vmm_ops, one_entry_per_request)
{
	const struct vmm_op *const	*p;
	const struct vmm_op		*op;
	size_t				 i, requests = 0;

	for (i = 0; i < ALL_TYPES_N; i++) {
		op = vmm_op_find(all_types[i].type);
		if (!is_vmm_request(i)) {
			cr_expect_null(op, "%s has an op", all_types[i].name);
			continue;
		}
		requests++;
		cr_expect_not_null(op, "%s has no op", all_types[i].name);
		if (op != NULL)
			cr_expect_eq(op->type, all_types[i].type);
	}
	cr_expect_eq(nops(), requests, "%zu ops for %zu requests",
	    nops(), requests);
	/* No type twice: each entry is the one its type finds. */
	LINKSET_FOREACH(vmm_ops, p)
		cr_expect_eq(vmm_op_find((*p)->type), *p, "%s twice",
		    imsg_type_name((*p)->type));
	cr_expect_null(vmm_op_find(IMSG_VERBOSE));
	cr_expect_null(vmm_op_find(IMSG_NONE));
}

Test(vmm_ops, entries_complete)
{
	const struct vmm_op *const	*p;
	const struct vmm_op		*op;

	LINKSET_FOREACH(vmm_ops, p) {
		op = *p;
		cr_expect_not_null(op->name);
		cr_expect_not_null(op->get, "%s", op->name);
		cr_expect_not_null(op->start, "%s", op->name);
		cr_expect_gt(op->timeout_ms, 0, "%s", op->name);
		cr_expect(op->chan == VMM_CHAN_QMP ||
		    op->chan == VMM_CHAN_GUEST, "%s", op->name);
		/* Guest ops need the session; QMP ops never do. */
		cr_expect_eq(!!(op->flags & VMM_OP_GUEST_UP),
		    op->chan == VMM_CHAN_GUEST, "%s", op->name);
		cr_expect(!(op->flags & VMM_OP_QMP_UP) ||
		    op->chan == VMM_CHAN_QMP, "%s", op->name);
	}
	cr_expect(vmm_op_find(IMSG_VMM_CHECKPOINT)->flags & VMM_OP_FD);
	cr_expect(vmm_op_find(IMSG_VMM_QUIT)->flags & VMM_OP_EXITS);
}

/* Each getter reads its own type: an empty payload of another is refused. */
Test(vmm_ops, getters_check_the_type)
{
	const struct vmm_op *const	*i, *const *j;
	union vmm_args			 a;
	struct imsg			 imsg;

	LINKSET_FOREACH(vmm_ops, i) {
		LINKSET_FOREACH(vmm_ops, j) {
			if (i == j)
				continue;
			memset(&imsg, 0, sizeof(imsg));
			imsg.hdr.type = (*j)->type;
			imsg.hdr.len = IMSG_HDR_SIZE;
			imsg.fd = -1;
			cr_expect_eq((*i)->get(&imsg, &a), -1,
			    "%s read as %s", imsg_type_name((*j)->type),
			    (*i)->name);
		}
	}
}
