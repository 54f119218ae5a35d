/*
 * Finding the cgroup hierarchies: a v1/v2 hybrid like this project's
 * build hosts, and a plain v2 host.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "cgroup.h"

static const char hybrid_mounts[] =
    "22 1 0:21 / / rw - ext4 /dev/vda rw\n"
    "30 22 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n"
    "31 30 0:27 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
    "32 30 0:28 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct\n"
    "33 30 0:29 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
    "34 30 0:30 / /sys/fs/cgroup/freezer rw - cgroup cgroup rw,freezer\n"
    "35 30 0:31 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n"
    "36 30 0:32 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";

static const char hybrid_self[] =
    "9:name=systemd:/\n"
    "8:pids:/\n"
    "6:freezer:/\n"
    "4:memory:/process_api/b3fa\n"
    "2:cpuacct:/\n"
    "1:cpu:/\n"
    "0::/\n";

Test(cgroup, hybrid_layout)
{
	struct cg_mounts	 m;
	struct cg_self		 s;

	cr_assert_eq(cg_parse_mountinfo(hybrid_mounts, &m), 0);
	cr_assert_str_eq(m.v1[CG_MEMORY], "/sys/fs/cgroup/memory");
	/* "cpuacct" is not "cpu". */
	cr_assert_str_eq(m.v1[CG_CPU], "/sys/fs/cgroup/cpu");
	cr_assert_str_eq(m.v1[CG_PIDS], "/sys/fs/cgroup/pids");
	cr_assert_str_eq(m.v1[CG_FREEZER], "/sys/fs/cgroup/freezer");
	cr_assert_str_eq(m.v2, "/sys/fs/cgroup/unified");
	cr_assert_eq(cg_parse_self(hybrid_self, &s), 0);
	cr_assert_str_eq(s.v1[CG_MEMORY], "/process_api/b3fa");
	cr_assert_str_eq(s.v1[CG_CPU], "/");
	cr_assert(s.has_v2);
	cr_assert_str_eq(s.v2, "/");
}

Test(cgroup, plain_v2)
{
	struct cg_mounts	 m;
	struct cg_self		 s;

	cr_assert_eq(cg_parse_mountinfo("25 1 0:22 / /sys/fs/cgroup rw - "
	    "cgroup2 cgroup2 rw,nsdelegate\n", &m), 0);
	cr_assert_str_eq(m.v2, "/sys/fs/cgroup");
	cr_assert_str_eq(m.v1[CG_MEMORY], "");
	cr_assert_eq(cg_parse_self("0::/system.slice/mcvmd.service\n", &s),
	    0);
	cr_assert_str_eq(s.v2, "/system.slice/mcvmd.service");
	cr_assert_str_eq(s.v1[CG_MEMORY], "");
}

Test(cgroup, garbage_is_harmless)
{
	struct cg_mounts	 m;
	struct cg_self		 s;

	cr_assert_eq(cg_parse_mountinfo("no dash here\n - \n\n- cgroup\n",
	    &m), 0);
	cr_assert_str_eq(m.v2, "");
	cr_assert_eq(cg_parse_self("x\n::\n1:memory\n", &s), 0);
	cr_assert_str_eq(s.v1[CG_MEMORY], "");
}
