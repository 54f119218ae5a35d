/*
 * Per-VM cgroups.  mcvmd makes one subtree, "mcvm-<instance>", beneath its
 * own cgroup in each hierarchy it uses, and one child per VM in it.  It
 * touches nothing outside that subtree.
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "log.h"
#include "rdfile.h"
#include "validate.h"

#define CG_KILL_TRIES		50	/* x CG_KILL_WAIT_MS */
#define CG_KILL_WAIT_MS		20

static const char *const cg_names[CG_NCTL] = {
	[CG_MEMORY] = "memory",
	[CG_CPU] = "cpu",
	[CG_PIDS] = "pids",
	[CG_FREEZER] = "freezer",
};

/* Whether word is one of the comma-separated tokens of list. */
static int
cg_has_token(const char *list, const char *word)
{
	size_t	 wlen = strlen(word);
	const char *p = list;

	while (p != NULL && *p != '\0') {
		if (strncmp(p, word, wlen) == 0 &&
		    (p[wlen] == ',' || p[wlen] == '\0'))
			return 1;
		if ((p = strchr(p, ',')) != NULL)
			p++;
	}
	return 0;
}

static void
cg_copy(char *dst, const char *src, size_t len)
{
	if (strlen(src) >= PATH_MAX) {
		dst[0] = '\0';
		return;
	}
	memcpy(dst, src, len);
	dst[len] = '\0';
}

/*
 * /proc/self/mountinfo: "id parent maj:min root mountpoint opts... -
 * fstype source superopts".  Records where each hierarchy is mounted.
 */
int
cg_parse_mountinfo(const char *text, struct cg_mounts *m)
{
	char		 line[1024], *f[6], *dash, *fstype, *super, *save;
	const char	*p = text, *eol;
	size_t		 n, i;
	int		 c;

	memset(m, 0, sizeof(*m));
	while (*p != '\0') {
		eol = strchr(p, '\n');
		n = eol != NULL ? (size_t)(eol - p) : strlen(p);
		if (n < sizeof(line)) {
			memcpy(line, p, n);
			line[n] = '\0';
			if ((dash = strstr(line, " - ")) != NULL) {
				*dash = '\0';
				fstype = strtok_r(dash + 3, " ", &save);
				(void)strtok_r(NULL, " ", &save);
				super = strtok_r(NULL, " ", &save);
				f[0] = strtok_r(line, " ", &save);
				for (i = 1; i < 5 && f[i - 1] != NULL; i++)
					f[i] = strtok_r(NULL, " ", &save);
				if (fstype != NULL && super != NULL &&
				    i == 5 && f[4] != NULL) {
					if (strcmp(fstype, "cgroup2") == 0 &&
					    m->v2[0] == '\0')
						cg_copy(m->v2, f[4],
						    strlen(f[4]));
					for (c = 0; c < CG_NCTL &&
					    strcmp(fstype, "cgroup") == 0;
					    c++)
						if (cg_has_token(super,
						    cg_names[c]) &&
						    m->v1[c][0] == '\0')
							cg_copy(m->v1[c], f[4],
							    strlen(f[4]));
				}
			}
		}
		p += n;
		if (*p == '\n')
			p++;
	}
	return 0;
}

/* /proc/self/cgroup: "N:controllers:path", and "0::path" for v2. */
int
cg_parse_self(const char *text, struct cg_self *s)
{
	char		 line[PATH_MAX + 256], *c1, *c2;
	const char	*p = text, *eol;
	size_t		 n;
	int		 c;

	memset(s, 0, sizeof(*s));
	while (*p != '\0') {
		eol = strchr(p, '\n');
		n = eol != NULL ? (size_t)(eol - p) : strlen(p);
		if (n < sizeof(line)) {
			memcpy(line, p, n);
			line[n] = '\0';
			if ((c1 = strchr(line, ':')) != NULL &&
			    (c2 = strchr(c1 + 1, ':')) != NULL) {
				*c2++ = '\0';
				*c1++ = '\0';
				if (*c1 == '\0' && strcmp(line, "0") == 0) {
					cg_copy(s->v2, c2, strlen(c2));
					s->has_v2 = 1;
				}
				for (c = 0; c < CG_NCTL; c++)
					if (cg_has_token(c1, cg_names[c]))
						cg_copy(s->v1[c], c2,
						    strlen(c2));
			}
		}
		p += n;
		if (*p == '\n')
			p++;
	}
	return 0;
}

static int
cg_write(const char *dir, const char *file, const char *val)
{
	char	 path[PATH_MAX];
	ssize_t	 n;
	int	 fd;

	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >=
	    (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return -1;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : -1;
}

static int
cg_join_path(char *dst, const char *a, const char *b, const char *c)
{
	int	 n;

	/* Own path "/" must not double the slash. */
	if (strcmp(b, "/") == 0)
		b = "";
	n = snprintf(dst, PATH_MAX, "%s%s/%s", a, b, c);
	return (n < 0 || n >= PATH_MAX) ? -1 : 0;
}

static int
cg_mkdir(const char *path)
{
	if (mkdir(path, 0755) == -1 && errno != EEXIST)
		return -1;
	return 0;
}

/* v2 has no internal processes: mcvmd moves itself into a leaf first. */
static int
cg_v2_prepare(const char *own, const char *base)
{
	char	 leaf[PATH_MAX], pid[32];

	if (cg_join_path(leaf, own, "", "mcvmd") == -1 ||
	    cg_mkdir(leaf) == -1)
		return -1;
	(void)snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (cg_write(leaf, "cgroup.procs", pid) == -1 ||
	    cg_write(own, "cgroup.subtree_control",
	    "+memory +cpu +pids") == -1 ||
	    cg_mkdir(base) == -1 ||
	    cg_write(base, "cgroup.subtree_control",
	    "+memory +cpu +pids") == -1)
		return -1;
	return 0;
}

/*
 * Finds the hierarchies and makes mcvmd's subtree, named after instance.
 * A host where limits cannot be set leaves cg->ok 0 and cg->why saying
 * why: VMs are then refused, never run unconfined.
 */
int
cgroup_init(struct cgroups *cg, const char *instance)
{
	static char	 mounts[CG_MOUNTINFO_MAX];
	struct cg_mounts m;
	struct cg_self	 s;
	char		 text[CG_TEXT_MAX], own[PATH_MAX], sub[64], path[PATH_MAX];
	int		 c, v1 = 1;

	memset(cg, 0, sizeof(*cg));
	(void)snprintf(sub, sizeof(sub), "mcvm-%s", instance);
	if (read_small_file("/proc/self/mountinfo", mounts,
	    sizeof(mounts)) == -1 ||
	    cg_parse_mountinfo(mounts, &m) == -1 ||
	    read_small_file("/proc/self/cgroup", text, sizeof(text)) == -1 ||
	    cg_parse_self(text, &s) == -1) {
		(void)snprintf(cg->why, sizeof(cg->why), "cannot read /proc: "
		    "%s", strerror(errno));
		return -1;
	}
	for (c = 0; c < CG_NCTL; c++)
		if (m.v1[c][0] == '\0' || s.v1[c][0] == '\0')
			v1 = 0;
	if (v1) {
		for (c = 0; c < CG_NCTL; c++) {
			if (cg_join_path(cg->base[c], m.v1[c], s.v1[c],
			    sub) == -1 || cg_mkdir(cg->base[c]) == -1) {
				(void)snprintf(cg->why, sizeof(cg->why),
				    "%s: %s", cg->base[c], strerror(errno));
				return -1;
			}
		}
		(void)snprintf(cg->why, sizeof(cg->why), "cgroup v1: memory, "
		    "cpu, pids and freezer under %s", sub);
		cg->ok = 1;
		return 0;
	}
	if (m.v2[0] == '\0' || !s.has_v2) {
		(void)snprintf(cg->why, sizeof(cg->why), "no cgroup v2 mount "
		    "and no complete v1 layout (memory, cpu, pids, freezer)");
		return -1;
	}
	if (cg_join_path(own, m.v2, s.v2, "") == -1 ||
	    snprintf(path, sizeof(path), "%scgroup.controllers", own) >=
	    (int)sizeof(path) ||
	    read_small_file(path, text, sizeof(text)) == -1 ||
	    !(strstr(text, "memory") && strstr(text, "cpu") &&
	    strstr(text, "pids"))) {
		(void)snprintf(cg->why, sizeof(cg->why), "cgroup v2 without "
		    "the memory, cpu and pids controllers delegated to %s",
		    own);
		return -1;
	}
	own[strlen(own) - 1] = '\0';	/* the trailing slash */
	if (cg_join_path(cg->base[0], own, "", sub) == -1 ||
	    cg_v2_prepare(own, cg->base[0]) == -1) {
		(void)snprintf(cg->why, sizeof(cg->why), "cgroup v2 under "
		    "%s: %s", own, strerror(errno));
		return -1;
	}
	cg->v2 = 1;
	cg->ok = 1;
	(void)snprintf(cg->why, sizeof(cg->why), "cgroup v2 under %s",
	    cg->base[0]);
	return 0;
}

static int
cg_vm_dir(const struct cgroups *cg, int c, const char *vm, char *out)
{
	if (!valid_id(vm, "vm-"))
		return -1;
	return cg_join_path(out, cg->base[c], "", vm);
}

#define CG_EACH(cg, c)	for ((c) = 0; (c) < ((cg)->v2 ? 1 : CG_NCTL); (c)++)

/*
 * Makes the VM's cgroups with their limits, and returns the cgroup.procs
 * files a process writes "0" to in order to join them.
 */
int
cgroup_vm_create(const struct cgroups *cg, const char *vm,
    uint64_t mem_bytes, uint32_t vcpus, char procs[][PATH_MAX],
    size_t *nprocs)
{
	char		 dir[PATH_MAX], val[64];
	uint64_t	 limit = mem_bytes + CG_MEM_OVERHEAD;
	uint64_t	 quota = (uint64_t)(vcpus + 1) * CG_CPU_PERIOD_US;
	int		 c;

	*nprocs = 0;
	if (!cg->ok)
		return -1;
	CG_EACH(cg, c) {
		if (cg_vm_dir(cg, c, vm, dir) == -1 || mkdir(dir, 0755) == -1)
			goto fail;
		if (snprintf(procs[*nprocs], PATH_MAX, "%s/cgroup.procs",
		    dir) >= PATH_MAX)
			goto fail;
		(*nprocs)++;
	}
	if (cg->v2) {
		(void)cg_vm_dir(cg, 0, vm, dir);
		(void)snprintf(val, sizeof(val), "%llu",
		    (unsigned long long)limit);
		if (cg_write(dir, "memory.max", val) == -1 ||
		    cg_write(dir, "memory.swap.max", "0") == -1)
			goto fail;
		(void)snprintf(val, sizeof(val), "%llu %d",
		    (unsigned long long)quota, CG_CPU_PERIOD_US);
		if (cg_write(dir, "cpu.max", val) == -1)
			goto fail;
		(void)snprintf(val, sizeof(val), "%d", CG_PIDS_MAX);
		if (cg_write(dir, "pids.max", val) == -1)
			goto fail;
		return 0;
	}
	(void)cg_vm_dir(cg, CG_MEMORY, vm, dir);
	(void)snprintf(val, sizeof(val), "%llu", (unsigned long long)limit);
	if (cg_write(dir, "memory.limit_in_bytes", val) == -1)
		goto fail;
	(void)cg_vm_dir(cg, CG_CPU, vm, dir);
	(void)snprintf(val, sizeof(val), "%d", CG_CPU_PERIOD_US);
	if (cg_write(dir, "cpu.cfs_period_us", val) == -1)
		goto fail;
	(void)snprintf(val, sizeof(val), "%llu", (unsigned long long)quota);
	if (cg_write(dir, "cpu.cfs_quota_us", val) == -1)
		goto fail;
	(void)cg_vm_dir(cg, CG_PIDS, vm, dir);
	(void)snprintf(val, sizeof(val), "%d", CG_PIDS_MAX);
	if (cg_write(dir, "pids.max", val) == -1)
		goto fail;
	return 0;
fail:
	log_warn("cgroup: %s", vm);
	(void)cgroup_vm_destroy(cg, vm);
	return -1;
}

/* The pids in the VM's cgroup: the freezer's (v1) or the one (v2). */
static int
cg_procs(const struct cgroups *cg, const char *vm, pid_t *pids, size_t max,
    size_t *n)
{
	char		 dir[PATH_MAX], path[PATH_MAX], text[CG_TEXT_MAX], *p, *e;
	long		 v;

	*n = 0;
	if (cg_vm_dir(cg, cg->v2 ? 0 : CG_FREEZER, vm, dir) == -1 ||
	    snprintf(path, sizeof(path), "%s/cgroup.procs", dir) >=
	    (int)sizeof(path))
		return -1;
	if (read_small_file(path, text, sizeof(text)) == -1)
		return errno == ENOENT ? 0 : -1;
	for (p = text; *p != '\0' && *n < max; p = e) {
		v = strtol(p, &e, 10);
		if (e == p)
			break;
		if (v > 0)
			pids[(*n)++] = (pid_t)v;
		while (*e == '\n')
			e++;
	}
	return 0;
}

static void
cg_sleep_ms(long ms)
{
	struct timespec	 ts = { 0, ms * 1000 * 1000 };

	(void)nanosleep(&ts, NULL);
}

/*
 * Kills every process of the VM: frozen first so that none can fork away
 * (v1 freezer, v2 cgroup.freeze or cgroup.kill), then SIGKILL.
 */
int
cgroup_vm_kill(const struct cgroups *cg, const char *vm)
{
	char	 dir[PATH_MAX];
	pid_t	 pids[CG_PIDS_MAX];
	size_t	 n, i;
	int	 try;

	if (!cg->ok || cg_vm_dir(cg, cg->v2 ? 0 : CG_FREEZER, vm, dir) == -1)
		return -1;
	if (access(dir, F_OK) == -1)
		return 0;
	if (cg->v2 && cg_write(dir, "cgroup.kill", "1") == 0)
		goto wait;
	(void)cg_write(dir, cg->v2 ? "cgroup.freeze" : "freezer.state",
	    cg->v2 ? "1" : "FROZEN");
	if (cg_procs(cg, vm, pids, CG_PIDS_MAX, &n) == -1)
		return -1;
	for (i = 0; i < n; i++)
		(void)kill(pids[i], SIGKILL);
	(void)cg_write(dir, cg->v2 ? "cgroup.freeze" : "freezer.state",
	    cg->v2 ? "0" : "THAWED");
wait:
	for (try = 0; try < CG_KILL_TRIES; try++) {
		if (cg_procs(cg, vm, pids, CG_PIDS_MAX, &n) == -1)
			return -1;
		if (n == 0)
			return 0;
		for (i = 0; i < n; i++)
			(void)kill(pids[i], SIGKILL);
		cg_sleep_ms(CG_KILL_WAIT_MS);
	}
	errno = EBUSY;
	return -1;
}

/* Removes the VM's cgroups; they must be empty (cgroup_vm_kill). */
int
cgroup_vm_destroy(const struct cgroups *cg, const char *vm)
{
	char	 dir[PATH_MAX];
	int	 c, rc = 0, try;

	CG_EACH(cg, c) {
		if (cg_vm_dir(cg, c, vm, dir) == -1)
			return -1;
		for (try = 0; try < CG_KILL_TRIES; try++) {
			if (rmdir(dir) == 0 || errno == ENOENT)
				break;
			if (errno != EBUSY)
				break;
			cg_sleep_ms(CG_KILL_WAIT_MS);
		}
		if (access(dir, F_OK) == 0) {
			log_warn("cgroup: rmdir %s", dir);
			rc = -1;
		}
	}
	return rc;
}

int
cgroup_vm_exists(const struct cgroups *cg, const char *vm)
{
	char	 dir[PATH_MAX];

	return cg->ok && cg_vm_dir(cg, 0, vm, dir) == 0 &&
	    access(dir, F_OK) == 0;
}

/* Calls cb for each VM cgroup found: what reconciliation starts from. */
int
cgroup_vm_list(const struct cgroups *cg, void (*cb)(const char *, void *),
    void *arg)
{
	struct dirent	*de;
	DIR		*d;

	if (!cg->ok || (d = opendir(cg->base[0])) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		if (de->d_type == DT_DIR && valid_id(de->d_name, "vm-"))
			cb(de->d_name, arg);
	closedir(d);
	return 0;
}

/* Memory charged to the VM's cgroup, in bytes (0 if unknown). */
uint64_t
cgroup_vm_memory(const struct cgroups *cg, const char *vm)
{
	char	 dir[PATH_MAX], path[PATH_MAX], text[64];

	if (cg_vm_dir(cg, cg->v2 ? 0 : CG_MEMORY, vm, dir) == -1 ||
	    snprintf(path, sizeof(path), "%s/%s", dir, cg->v2 ?
	    "memory.current" : "memory.usage_in_bytes") >= (int)sizeof(path) ||
	    read_small_file(path, text, sizeof(text)) == -1)
		return 0;
	return strtoull(text, NULL, 10);
}

/* mcvmd is stopping: its subtree goes too, once its VMs' cgroups have. */
void
cgroup_fini(const struct cgroups *cg)
{
	int	 c;

	if (!cg->ok)
		return;
	CG_EACH(cg, c)
		if (rmdir(cg->base[c]) == -1 && errno != ENOENT)
			log_warn("cgroup: rmdir %s", cg->base[c]);
}
