/*
 * One cgroup per VM, beneath mcvmd's own: memory, CPU and pids limits, and
 * a reliable way to kill every process of a VM.  cgroup v2, or the v1
 * layout (memory, cpu, pids and freezer hierarchies) of hybrid hosts.
 */
#ifndef MCVMD_CGROUP_H
#define MCVMD_CGROUP_H

#include <sys/types.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

enum cg_ctl {
	CG_MEMORY = 0,
	CG_CPU,
	CG_PIDS,
	CG_FREEZER,		/* v1 only; v2 has cgroup.freeze */
	CG_NCTL,
};

#define CG_CPU_PERIOD_US	100000
#define CG_PIDS_MAX		256	/* QEMU's threads and the monitor */
#define CG_MEM_OVERHEAD		(256ULL << 20)	/* QEMU beyond guest RAM */
#define CG_TEXT_MAX		8192	/* what we read of a cgroup file */
#define CG_MOUNTINFO_MAX	(512 * 1024)

struct cgroups {
	int		 ok;		/* usable: limits can be enforced */
	int		 v2;
	char		 base[CG_NCTL][PATH_MAX];	/* v2: [0] only */
	char		 why[PATH_MAX + 128];	/* layout, or why unusable */
};

struct cg_mounts {
	char		 v1[CG_NCTL][PATH_MAX];	/* "" = not mounted */
	char		 v2[PATH_MAX];
};

struct cg_self {
	char		 v1[CG_NCTL][PATH_MAX];	/* own path per controller */
	char		 v2[PATH_MAX];
	int		 has_v2;
};

int	 cg_parse_mountinfo(const char *, struct cg_mounts *);
int	 cg_parse_self(const char *, struct cg_self *);
int	 cgroup_init(struct cgroups *, const char *);
void	 cgroup_fini(const struct cgroups *);
int	 cgroup_vm_create(const struct cgroups *, const char *, uint64_t,
	    uint32_t, char [][PATH_MAX], size_t *);
int	 cgroup_vm_kill(const struct cgroups *, const char *);
int	 cgroup_vm_destroy(const struct cgroups *, const char *);
int	 cgroup_vm_exists(const struct cgroups *, const char *);
int	 cgroup_vm_list(const struct cgroups *,
	    void (*)(const char *, void *), void *);
uint64_t cgroup_vm_memory(const struct cgroups *, const char *);

#endif
