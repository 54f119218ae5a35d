#include <criterion/criterion.h>
#include <string.h>

#include "validate.h"

Test(validate, workspace_names)
{
	char	 longname[WS_NAME_MAX + 2];

	cr_assert(valid_workspace_name("alice"));
	cr_assert(valid_workspace_name("demo-1.team_b"));
	cr_assert(valid_workspace_name("9lives"));
	cr_assert_not(valid_workspace_name(""));
	cr_assert_not(valid_workspace_name(NULL));
	cr_assert_not(valid_workspace_name("Alice"));
	cr_assert_not(valid_workspace_name("-x"));
	cr_assert_not(valid_workspace_name(".hidden"));
	cr_assert_not(valid_workspace_name("a/b"));
	cr_assert_not(valid_workspace_name("a b"));
	cr_assert_not(valid_workspace_name("caf\xc3\xa9"));
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	cr_assert_not(valid_workspace_name(longname));
	longname[WS_NAME_MAX] = '\0';
	cr_assert(valid_workspace_name(longname));
}

Test(validate, object_names)
{
	cr_assert(valid_object_name("debian-12"));
	cr_assert_not(valid_object_name(".."));
	cr_assert_not(valid_object_name("a,b"));
	cr_assert_not(valid_object_name("x\n"));
}

Test(validate, snapshot_tags)
{
	char	 longtag[OBJ_NAME_MAX + 2];

	cr_assert(valid_snapshot_tag("first"));
	cr_assert(valid_snapshot_tag("2026-12-01"));
	cr_assert(valid_snapshot_tag("v1.2_rc-3"));
	cr_assert(valid_snapshot_tag("0x"));
	/* QEMU may take digits alone for a snapshot's id. */
	cr_assert_not(valid_snapshot_tag("1"));
	cr_assert_not(valid_snapshot_tag("0042"));
	cr_assert_not(valid_snapshot_tag(""));
	cr_assert_not(valid_snapshot_tag(NULL));
	cr_assert_not(valid_snapshot_tag("Tag"));
	cr_assert_not(valid_snapshot_tag("-x"));
	cr_assert_not(valid_snapshot_tag("a b"));
	cr_assert_not(valid_snapshot_tag("a,b"));
	memset(longtag, 'a', sizeof(longtag) - 1);
	longtag[sizeof(longtag) - 1] = '\0';
	cr_assert_not(valid_snapshot_tag(longtag));
	longtag[OBJ_NAME_MAX] = '\0';
	cr_assert(valid_snapshot_tag(longtag));
}

Test(validate, request_ids)
{
	char	 longid[REQUEST_ID_MAX + 2];

	cr_assert(valid_request_id("create-1"));
	cr_assert(valid_request_id("A:b/c.d_e-f"));
	cr_assert_not(valid_request_id(""));
	cr_assert_not(valid_request_id("has space"));
	cr_assert_not(valid_request_id("quote\""));
	cr_assert_not(valid_request_id("tab\t"));
	cr_assert_not(valid_request_id("\x7f"));
	memset(longid, 'x', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	cr_assert_not(valid_request_id(longid));
}

Test(validate, ids)
{
	cr_assert(valid_id("vm-0123456789abcdef", "vm-"));
	cr_assert_not(valid_id("vm-0123456789ABCDEF", "vm-"));
	cr_assert_not(valid_id("vm-0123456789abcde", "vm-"));
	cr_assert_not(valid_id("vm-0123456789abcdef0", "vm-"));
	cr_assert_not(valid_id("job-0123456789abcdef", "vm-"));
	cr_assert_not(valid_id("vm-0123456789abcdeg", "vm-"));
}

Test(validate, ranges)
{
	cr_assert(valid_range_u64(5, 1, 10));
	cr_assert(valid_range_u64(1, 1, 10));
	cr_assert(valid_range_u64(10, 1, 10));
	cr_assert_not(valid_range_u64(0, 1, 10));
	cr_assert_not(valid_range_u64(11, 1, 10));
}

Test(validate, utf8)
{
	cr_assert(valid_utf8("plain", 5));
	cr_assert(valid_utf8("caf\xc3\xa9", 5));
	cr_assert(valid_utf8("\xf0\x9f\x98\x80", 4));
	cr_assert(valid_utf8("", 0));
	cr_assert_not(valid_utf8("\xc3", 1));		/* truncated */
	cr_assert_not(valid_utf8("\xc0\xaf", 2));	/* overlong */
	cr_assert_not(valid_utf8("\xe0\x80\xaf", 3));	/* overlong */
	cr_assert_not(valid_utf8("\xed\xa0\x80", 3));	/* surrogate */
	cr_assert_not(valid_utf8("\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
	cr_assert_not(valid_utf8("\xff", 1));
	cr_assert_not(valid_utf8("a\0b", 3));
	cr_assert_not(valid_utf8("\x80", 1));
}
