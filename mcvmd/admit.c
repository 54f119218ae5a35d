/*
 * Admission: whether a new VM fits its workspace's quotas, the host's,
 * and what the host has free; and the VM slots (a uid and, in netd, a
 * network each).
 */
#include <sys/statvfs.h>

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "netslot.h"
#include "rdfile.h"
#include "vm.h"

#define VM_HOST_MEM_RESERVE	(256ULL << 20)	/* kept free for the host */
#define VM_HOST_DISK_RESERVE	(1ULL << 30)

/* A slot is a uid and, in netd, a network: the fewer bounds. */
static uint32_t
slots(void)
{
	uint32_t	 n = env->conf.vm_uid_last - env->conf.vm_uid_first + 1;

	return n > slot_count(&env->conf) ? slot_count(&env->conf) : n;
}

static int
slot_used(uint32_t s)
{
	const struct vm	*vm;

	TAILQ_FOREACH(vm, &vms, entry)
		if (vm->row.slot == s)
			return 1;
	/* A shared template's file's group is its slot's uid. */
	return vm_template_holds_slot(s);
}

int
vm_slot_alloc(uint32_t *slot)
{
	uint32_t	 s;

	for (s = 0; s < slots(); s++)
		if (!slot_used(s)) {
			*slot = s;
			return 0;
		}
	return -1;
}

uint32_t
vm_slots_free(void)
{
	uint32_t	 s, n = 0;

	for (s = 0; s < slots(); s++)
		if (!slot_used(s))
			n++;
	return n;
}

static uint64_t
host_mem_available(void)
{
	char		 buf[8192], *p;

	if (read_small_file("/proc/meminfo", buf, sizeof(buf)) == -1 ||
	    (p = strstr(buf, "MemAvailable:")) == NULL)
		return 0;
	return strtoull(p + strlen("MemAvailable:"), NULL, 10) << 10;
}

/*
 * The most vCPUs one VM may have: the config's "vcpus limit", else the
 * CPUs this process may run on (what the host really has for it).
 */
uint32_t
vm_vcpus_limit(int *configured)
{
	cpu_set_t	 set;
	long		 n;

	*configured = env->conf.vm_vcpus_limit != 0;
	if (*configured)
		return env->conf.vm_vcpus_limit;
	if (sched_getaffinity(0, sizeof(set), &set) == 0 &&
	    (n = CPU_COUNT(&set)) > 0)
		return (uint32_t)n;
	if ((n = sysconf(_SC_NPROCESSORS_ONLN)) > 0)
		return (uint32_t)n;
	return 1;
}

/*
 * Workspace ws's limits: the config's workspace limits, except those
 * mcvmctl set-quota set for it; set, if not NULL, says which (QUOTA_*).
 */
int
vm_ws_limits(int64_t ws, struct limits *l, uint32_t *set)
{
	struct limits	 q;
	uint32_t	 s = 0;

	*l = env->conf.ws_limits;
	if (state_ws_quota(ws, &q) == -1)
		return -1;
	if (q.max_vms != 0) {
		l->max_vms = q.max_vms;
		s |= QUOTA_VMS;
	}
	if (q.max_memory != 0) {
		l->max_memory = q.max_memory;
		s |= QUOTA_MEMORY;
	}
	if (q.max_vcpus != 0) {
		l->max_vcpus = q.max_vcpus;
		s |= QUOTA_VCPUS;
	}
	if (q.max_storage != 0) {
		l->max_storage = q.max_storage;
		s |= QUOTA_STORAGE;
	}
	if (set != NULL)
		*set = s;
	return 0;
}

/*
 * What workspace ws (0: the whole host) holds: its VMs, their memory in
 * MiB and vCPUs, and its storage (disks, saved states and images).
 */
int
vm_usage(int64_t ws, uint32_t *vms, uint64_t *mem_mib, uint64_t *vcpus,
    uint64_t *storage)
{
	uint64_t	 img;

	if (state_usage(ws, vms, mem_mib, storage, vcpus) == -1 ||
	    state_ws_image_bytes(ws, &img) == -1)
		return -1;
	*storage += img;
	return 0;
}

/* Whether n VMs of mem MiB, cpus vCPUs and dsk bytes fit the host's limits. */
static int
host_fits(uint32_t n, uint64_t mem, uint64_t cpus, uint64_t dsk)
{
	const struct limits	*h = &env->conf.host_limits;

	return n <= h->max_vms && mem << 20 <= h->max_memory &&
	    dsk <= h->max_storage && cpus <= h->max_vcpus;
}

/*
 * Whether a warm clone of mem_mib, vcpus and disk bytes may be made: the
 * host's limits hold it beside its VMs and warm clones, and it leaves
 * room for another VM its size in memory and on disk.
 */
int
vm_warm_admit(uint32_t mem_mib, uint32_t vcpus, uint64_t disk)
{
	struct statvfs	 sv;
	uint64_t	 mem, dsk, cpus, wmem, wcpus, wcharged;
	uint64_t	 need = ((uint64_t)mem_mib << 20) + CG_MEM_OVERHEAD;
	uint32_t	 n, wn;

	if (vm_usage(0, &n, &mem, &cpus, &dsk) == -1)
		return -1;
	vm_warm_usage(&wn, &wmem, &wcpus, &wcharged);
	if (!host_fits(n + wn + 2, mem + wmem + 2 * mem_mib,
	    cpus + wcpus + vcpus, dsk + 2 * disk) ||
	    statvfs(env->conf.statedir, &sv) == -1 ||
	    (uint64_t)sv.f_bavail * sv.f_frsize < 2 * disk +
	    VM_HOST_DISK_RESERVE ||
	    host_mem_available() < 2 * need + VM_HOST_MEM_RESERVE)
		return -1;
	return 0;
}

int
vm_admit(int64_t ws, uint32_t mem_mib, uint32_t vcpus, uint64_t disk,
    char *err, size_t errlen)
{
	struct limits		 w;
	struct statvfs		 sv;
	uint64_t		 mem, dsk, avail, cpus, wmem, wcpus, wcharged;
	uint64_t		 need = ((uint64_t)mem_mib << 20) +
				    CG_MEM_OVERHEAD + VM_HOST_MEM_RESERVE;
	uint32_t		 n, wn;

	if (vm_ws_limits(ws, &w, NULL) == -1 ||
	    vm_usage(ws, &n, &mem, &cpus, &dsk) == -1)
		goto dberr;
	if (n + 1 > w.max_vms) {
		(void)snprintf(err, errlen, "the workspace has %u VMs, its "
		    "limit: destroy one first", n);
		return -1;
	}
	if ((mem + mem_mib) << 20 > w.max_memory) {
		(void)snprintf(err, errlen, "the workspace's VMs would have "
		    "%llu MiB of memory, over its limit of %llu MiB",
		    (unsigned long long)(mem + mem_mib),
		    (unsigned long long)(w.max_memory >> 20));
		return -1;
	}
	if (cpus + vcpus > w.max_vcpus) {
		(void)snprintf(err, errlen, "the workspace's VMs would have "
		    "%llu vCPUs, over its limit of %u: use fewer vcpus or "
		    "destroy a VM first", (unsigned long long)(cpus + vcpus),
		    w.max_vcpus);
		return -1;
	}
	if (dsk + disk > w.max_storage) {
		(void)snprintf(err, errlen, "the workspace's disks and "
		    "images would exceed its storage limit of %llu MiB",
		    (unsigned long long)(w.max_storage >> 20));
		return -1;
	}
	if (vm_usage(0, &n, &mem, &cpus, &dsk) == -1)
		goto dberr;
	if (!host_fits(n + 1, mem + mem_mib, cpus + vcpus, dsk + disk)) {
		(void)snprintf(err, errlen, "the host is at its VM, memory, "
		    "vCPU or storage limit; try again later");
		return -1;
	}
	/* Warm clones give way to VMs. */
	vm_warm_usage(&wn, &wmem, &wcpus, &wcharged);
	if (!host_fits(n + wn + 1, mem + wmem + mem_mib, cpus + wcpus + vcpus,
	    dsk + disk))
		vm_warm_drain(0, "room for a VM within the host's limits");
	if (statvfs(env->conf.statedir, &sv) == 0 &&
	    (uint64_t)sv.f_bavail * sv.f_frsize < disk + VM_HOST_DISK_RESERVE) {
		(void)snprintf(err, errlen, "the host has %llu MiB of disk "
		    "free, not enough for another %llu MiB disk; try later",
		    (unsigned long long)((uint64_t)sv.f_bavail *
		    sv.f_frsize >> 20), (unsigned long long)(disk >> 20));
		return -1;
	}
	avail = host_mem_available();
	if (avail < need && wn > 0 && avail + wcharged >= need)
		vm_warm_drain(0, "memory for a VM");
	else if (avail < need) {
		(void)snprintf(err, errlen, "the host has %llu MiB of memory "
		    "available, not enough for %u MiB; try a smaller VM or "
		    "later", (unsigned long long)(avail >> 20), mem_mib);
		return -1;
	}
	return 0;
dberr:
	(void)snprintf(err, errlen, "state database error");
	return -1;
}

/* Where need bytes more stand against ws's storage limit and the host's. */
enum fit {
	FIT_OK = 0,
	FIT_DB,			/* state database error */
	FIT_WS,			/* over the workspace's limit */
	FIT_HOST,		/* over the host's */
};

/* limit gets the workspace's storage limit. */
static enum fit
storage_fit(int64_t ws, uint64_t need, uint64_t *limit)
{
	struct limits	 w;
	uint64_t	 mem, dsk, cpus;
	uint32_t	 n;

	if (vm_ws_limits(ws, &w, NULL) == -1 ||
	    vm_usage(ws, &n, &mem, &cpus, &dsk) == -1)
		return FIT_DB;
	*limit = w.max_storage;
	if (dsk + need > w.max_storage)
		return FIT_WS;
	if (vm_usage(0, &n, &mem, &cpus, &dsk) == -1)
		return FIT_DB;
	if (dsk + need > env->conf.host_limits.max_storage)
		return FIT_HOST;
	return FIT_OK;
}

static void
fit_text(enum fit f, char *err, size_t errlen)
{
	(void)snprintf(err, errlen, "%s", f == FIT_DB ? "state database "
	    "error" : "the host is at its storage limit; try again later");
}

/*
 * The disks of a VM from its own disks, once stored said what its own
 * copies may grow to: within the workspace's storage limit and the
 * host's, with the VMs and images there are.
 */
int
vm_admit_storage(int64_t ws, uint64_t disk, char *err, size_t errlen)
{
	uint64_t	 limit = 0;
	enum fit	 f;

	if ((f = storage_fit(ws, disk, &limit)) == FIT_OK)
		return 0;
	if (f == FIT_WS)
		(void)snprintf(err, errlen, "its disks may grow to %llu MiB, "
		    "which with the workspace's disks and images exceeds its "
		    "storage limit of %llu MiB: use persistent disks, smaller "
		    "images, or free space first",
		    (unsigned long long)(disk >> 20),
		    (unsigned long long)(limit >> 20));
	else
		fit_text(f, err, errlen);
	return -1;
}

/*
 * Room for up to vm's memory of saved state more (a live snapshot, or a
 * hibernation's checkpoint, what): within the workspace's storage limit
 * and the host's, with the VMs and images there are, and that much free
 * on the host's disk beside its reserve.  0, or -1 with err.
 */
int
vm_admit_state(const struct vm *vm, const char *what, char *err,
    size_t errlen)
{
	struct statvfs	 sv;
	uint64_t	 need = (uint64_t)vm->row.memory_mib << 20, freeb;
	uint64_t	 limit = 0;
	enum fit	 f;

	if ((f = storage_fit(vm->row.ws_id, need, &limit)) == FIT_WS) {
		(void)snprintf(err, errlen, "%s of %s may take up to its %u "
		    "MiB of memory, and the workspace's disks, images and "
		    "saved states would then exceed its storage limit of %llu "
		    "MiB: delete a snapshot, an image or a VM first", what,
		    vm->row.id, vm->row.memory_mib,
		    (unsigned long long)(limit >> 20));
		return -1;
	}
	if (f != FIT_OK) {
		fit_text(f, err, errlen);
		return -1;
	}
	if (statvfs(env->conf.statedir, &sv) == 0 &&
	    (freeb = (uint64_t)sv.f_bavail * sv.f_frsize) <
	    need + VM_HOST_DISK_RESERVE) {
		(void)snprintf(err, errlen, "the host has %llu MiB of disk "
		    "free, not enough for %s of up to %u MiB; try later",
		    (unsigned long long)(freeb >> 20), what,
		    vm->row.memory_mib);
		return -1;
	}
	return 0;
}
