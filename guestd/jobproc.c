/*
 * The processes and cgroups behind the jobs (jobs.c keeps their table):
 * starting a job's command in its own cgroup under GUESTD_JOBS_CGROUP,
 * killing every process of a job, freezing them all, reaping, and the
 * limits each job's cgroup gets so that no job can starve the agent.
 *
 * The agent stays in the root cgroup.  The job subtree as a whole has the
 * CPU weight of one of its tasks (the cpu controller), and memory.max:
 * the guest's memory less a reserve for the agent and the kernel.  Each
 * job gets pids.max and the same memory.max, with
 * memory.oom.group, so that running out ends the whole job at once.
 * Defaults are built in; the kernel command line may set them
 * (mcvm.job_pids_max=N, mcvm.job_memory_max_mib=N).
 */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "guestd.h"
#include "rdfile.h"

#define CGROUP_PATH_MAX		(GUESTD_CGROUP_LEN + 32)

static uint32_t		 pids_max = GUESTD_JOB_PIDS_MAX;
static uint64_t		 memory_max;	/* bytes; 0: none */

/*
 * The stack jobs' children start on.  They share our memory (CLONE_VM)
 * while we are suspended (CLONE_VFORK) until they exec, so one stack
 * serves them all; a guard page lies below it.  The deepest use is
 * execvp's: a path buffer of at most PATH_MAX + NAME_MAX bytes, and for
 * a script without "#!" an argv of at most AGENT_ARGC_MAX + 2 pointers.
 */
#define JOB_STACK_SIZE	(64 * 1024)
static uint8_t		*job_stack_top;

static int
write_file(const char *path, const char *s)
{
	int	 fd, serrno;
	ssize_t	 n;

	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return -1;
	n = write(fd, s, strlen(s));
	serrno = errno;
	close(fd);
	errno = serrno;
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

static int
cg_write(const char *cgroup, const char *file, const char *value)
{
	char	 path[CGROUP_PATH_MAX];

	(void)snprintf(path, sizeof(path), "%s/%s", cgroup, file);
	return write_file(path, value);
}

/* The value of "key N" in a cgroup's flat keyed file; 0 if absent. */
static uint64_t
cg_key(const char *cgroup, const char *file, const char *key)
{
	char	 path[CGROUP_PATH_MAX], buf[1024], *p;
	size_t	 n = strlen(key);

	(void)snprintf(path, sizeof(path), "%s/%s", cgroup, file);
	if (read_small_file(path, buf, sizeof(buf)) == -1)
		return 0;
	for (p = buf; p != NULL && *p != '\0'; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		if (strncmp(p, key, n) == 0 && p[n] == ' ')
			return strtoull(p + n + 1, NULL, 10);
	}
	return 0;
}

/* MemTotal of /proc/meminfo in bytes; 0 if unknown. */
static uint64_t
mem_total(void)
{
	char		 buf[4096], *p;

	if (read_small_file("/proc/meminfo", buf, sizeof(buf)) == -1 ||
	    (p = strstr(buf, "MemTotal:")) == NULL)
		return 0;
	return strtoull(p + 9, NULL, 10) * 1024;
}

static void
limits_init(void)
{
	char		 v[32];
	uint64_t	 total, reserve;
	unsigned long long n;

	if (cmdline_value("mcvm.job_pids_max", v, sizeof(v)) == 0 &&
	    (n = strtoull(v, NULL, 10)) >= 1 && n <= GUESTD_JOB_PIDS_LIMIT)
		pids_max = (uint32_t)n;
	total = mem_total();
	reserve = total / GUESTD_AGENT_RESERVE_DIV;
	if (reserve < GUESTD_AGENT_RESERVE_MIN)
		reserve = GUESTD_AGENT_RESERVE_MIN;
	if (total > reserve)
		memory_max = total - reserve;
	if (cmdline_value("mcvm.job_memory_max_mib", v, sizeof(v)) == 0 &&
	    (n = strtoull(v, NULL, 10)) >= 1 && n <= (1ULL << 32))
		memory_max = (uint64_t)n << 20;
	/*
	 * Every job at its limit at once still leaves pids and tasks to the
	 * agent (the tasks' memory is the jobs' memory.max).
	 */
	(void)snprintf(v, sizeof(v), "%u", GUESTD_PID_MAX);
	(void)write_file("/proc/sys/kernel/pid_max", v);
	(void)snprintf(v, sizeof(v), "%u", AGENT_JOBS_ACTIVE_MAX * pids_max +
	    GUESTD_AGENT_TASKS);
	if (write_file("/proc/sys/kernel/threads-max", v) == -1)
		glog("kernel.threads-max: %s", strerror(errno));
	if (write_file(GUESTD_CGROUP_ROOT "/cgroup.subtree_control",
	    "+pids") == -1 ||
	    write_file(GUESTD_JOBS_CGROUP "/cgroup.subtree_control",
	    "+pids") == -1)
		glog("no pids controller for the jobs: %s", strerror(errno));
	if (write_file(GUESTD_CGROUP_ROOT "/cgroup.subtree_control",
	    "+memory") == -1 ||
	    write_file(GUESTD_JOBS_CGROUP "/cgroup.subtree_control",
	    "+memory") == -1) {
		glog("no memory controller for the jobs: %s", strerror(errno));
		memory_max = 0;
	}
	/* The jobs together weigh as much as one task of the agent's. */
	if (write_file(GUESTD_CGROUP_ROOT "/cgroup.subtree_control",
	    "+cpu") == -1 ||
	    write_file(GUESTD_JOBS_CGROUP "/cgroup.subtree_control",
	    "+cpu") == -1)
		glog("no cpu controller for the jobs: %s", strerror(errno));
	if (memory_max != 0) {
		(void)snprintf(v, sizeof(v), "%" PRIu64, memory_max);
		if (cg_write(GUESTD_JOBS_CGROUP, "memory.max", v) == -1)
			glog("jobs' memory.max: %s", strerror(errno));
	}
	glog("job limits: %u processes, %" PRIu64 " MiB", pids_max,
	    memory_max >> 20);
}

int
jobproc_init(void)
{
	long	 page = sysconf(_SC_PAGESIZE);
	uint8_t	*p;

	if (page <= 0)
		page = 4096;
	p = mmap(NULL, JOB_STACK_SIZE + (size_t)page, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (p == MAP_FAILED || mprotect(p, (size_t)page, PROT_NONE) == -1) {
		glog("job stack: %s", strerror(errno));
		return -1;
	}
	job_stack_top = p + (size_t)page + JOB_STACK_SIZE;
	if (mkdir(GUESTD_JOBS_CGROUP, 0755) == -1 && errno != EEXIST) {
		glog("mkdir %s: %s", GUESTD_JOBS_CGROUP, strerror(errno));
		return -1;
	}
	limits_init();
	return 0;
}

/* Moves a process into a cgroup (the spare shell into its job's). */
int
jobproc_cgroup_move(const char *cgroup, pid_t pid)
{
	char	 v[16];

	(void)snprintf(v, sizeof(v), "%ld", (long)pid);
	return cg_write(cgroup, "cgroup.procs", v);
}

/* A job's cgroup, with its limits; one made already is left as it is. */
int
jobproc_cgroup_make(const char *cgroup)
{
	char	 v[32];

	if (mkdir(cgroup, 0755) == -1)
		return errno == EEXIST ? 0 : -1;
	(void)snprintf(v, sizeof(v), "%u", pids_max);
	if (cg_write(cgroup, "pids.max", v) == -1)
		glog("%s pids.max: %s", cgroup, strerror(errno));
	if (memory_max != 0) {
		(void)snprintf(v, sizeof(v), "%" PRIu64, memory_max);
		if (cg_write(cgroup, "memory.max", v) == -1 ||
		    cg_write(cgroup, "memory.oom.group", "1") == -1)
			glog("%s memory limit: %s", cgroup, strerror(errno));
	}
	return 0;
}

int
jobproc_cgroup_remove(const char *cgroup)
{
	return rmdir(cgroup);
}

/* Whether a process lives in the cgroup or below it. */
int
jobproc_cgroup_busy(const char *cgroup)
{
	return cg_key(cgroup, "cgroup.events", "populated") > 0;
}

/*
 * What limits of its cgroup a job ran into, as a line for its stderr;
 * returns its length (0: none).
 */
size_t
jobproc_note(const char *cgroup, char *buf, size_t len)
{
	uint64_t	 oom, forks;
	int		 n = 0, m;

	if ((oom = cg_key(cgroup, "memory.events", "oom_kill")) > 0)
		n = snprintf(buf, len, "mcvm: the job ran out of memory (its "
		    "limit is %" PRIu64 " MiB): the kernel killed it\n",
		    memory_max >> 20);
	if (n < 0 || (size_t)n >= len)
		return 0;
	if ((forks = cg_key(cgroup, "pids.events", "max")) > 0) {
		m = snprintf(buf + n, len - (size_t)n, "mcvm: the job reached "
		    "its limit of %u processes and threads: %" PRIu64
		    " forks failed\n", pids_max, forks);
		if (m < 0 || (size_t)m >= len - (size_t)n)
			return (size_t)n;
		n += m;
	}
	return (size_t)n;
}

/* Every process in the job's cgroup gets SIGKILL. */
void
jobproc_kill(pid_t pid, const char *cgroup, int live)
{
	char	 path[CGROUP_PATH_MAX], buf[4096], *p, *nl;
	FILE	*f;
	pid_t	 k;

	if (pid > 0)
		kill(pid, SIGKILL);
	if (!live)
		return;
	if (cg_write(cgroup, "cgroup.kill", "1") == 0)
		return;
	/* No cgroup.kill (before Linux 5.14): freeze, kill each, thaw. */
	(void)cg_write(cgroup, "cgroup.freeze", "1");
	snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
	if ((f = fopen(path, "re")) != NULL) {
		while (fgets(buf, sizeof(buf), f) != NULL) {
			for (p = buf; *p != '\0'; p = nl + 1) {
				k = (pid_t)strtol(p, &nl, 10);
				if (k > 1)
					kill(k, SIGKILL);
				if (*nl == '\0')
					break;
			}
		}
		fclose(f);
	}
	(void)cg_write(cgroup, "cgroup.freeze", "0");
}

/*
 * The child, on job_stack_top and in our memory until it execs: only
 * system calls, nothing that allocates or takes a lock.  Signal handlers
 * are its own (no CLONE_SIGHAND), so it resets them before unblocking.
 * It joins the job's cgroup, takes the pipes (or the console's terminal,
 * as its controlling terminal) as 0-2, becomes the workspace user and
 * runs the command with the environ its caller set for it.  If it
 * cannot, it leaves the errno in s->err.
 */
static int
job_child(void *arg)
{
	struct child_args	*s = arg;
	struct rlimit		 nproc = { RLIM_INFINITY, RLIM_INFINITY };
	sigset_t		 mask;
	int			 sig;

	for (sig = 1; sig < NSIG; sig++)
		(void)signal(sig, SIG_DFL);
	sigemptyset(&mask);
	sigprocmask(SIG_SETMASK, &mask, NULL);
	if (write_file(s->procs, "0") == -1 || setsid() == -1)
		goto fail;
	if (dup2(s->pin, 0) == -1 || dup2(s->pout, 1) == -1 ||
	    dup2(s->perr, 2) == -1)
		goto fail;
	/* Taken from any session that still has it, while we are root. */
	if (s->ctty && ioctl(0, TIOCSCTTY, 1) == -1)
		goto fail;
	if (fchdir(s->cwdfd) == -1)
		goto fail;
	/* The fd table is the child's own: the rest closes on exec. */
	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == -1)
		goto fail;
	/* dup2 clears close-on-exec, but not onto the same descriptor. */
	if (s->cmdfd != -1 && (s->cmdfd == 3 ? fcntl(3, F_SETFD, 0) :
	    dup2(s->cmdfd, 3)) == -1)
		goto fail;
	/*
	 * The job's cgroup counts its processes: the kernel's count per
	 * user (RLIMIT_NPROC) would let one job's fork bomb stop the
	 * others, which run as the same user.
	 */
	if (setrlimit(RLIMIT_NPROC, &nproc) == -1 ||
	    setgroups(0, NULL) == -1 ||
	    setresgid(AGENT_JOB_GID, AGENT_JOB_GID, AGENT_JOB_GID) == -1 ||
	    setresuid(AGENT_JOB_UID, AGENT_JOB_UID, AGENT_JOB_UID) == -1)
		goto fail;
	execvp(s->file != NULL ? s->file : s->argv[0], s->argv);
fail:
	s->err = errno;
	_exit(127);
}

/*
 * Starts the child as vfork(2) does, CLONE_VM | CLONE_VFORK, so that it
 * copies neither our memory nor our page tables: under TCG, from the
 * clone to the exec of `sh -c true` took 4.7 ms with the copy (fork, or
 * clone3 into the cgroup) and 2.8 ms without.  We stay suspended until
 * it execs or exits, so it may use environ, which we point at the job's
 * for the time (execvp searches the job's PATH), and leave its errno in
 * s.  It moves itself into the job's cgroup by writing cgroup.procs,
 * which the cgroup2 mount's favordynmods keeps from waiting for an RCU
 * grace period (about 8 ms under TCG without it).  Returns the pid, or
 * -1 with errno.
 */
pid_t
jobproc_spawn(struct child_args *s, char **envp)
{
	char	**saved = environ;
	pid_t	 pid;
	int	 serrno;

	if (job_stack_top == NULL) {
		errno = ENOMEM;
		return -1;
	}
	s->err = 0;
	environ = envp;
	pid = clone(job_child, job_stack_top, CLONE_VM | CLONE_VFORK | SIGCHLD,
	    s);
	serrno = errno;
	environ = saved;
	errno = serrno;
	return pid;
}

/*
 * Reaps every child: our jobs, tty1's shell and any orphan reparented to
 * PID 1.
 */
void
jobs_reap(void)
{
	pid_t	 pid;
	int	 status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		if (!console_reaped(pid, status))
			job_reaped(pid, status);
}

static int
cgroup_wait_frozen(int want)
{
	char		 buf[512], *p;
	uint64_t	 deadline = now_ms() + GUESTD_FREEZE_WAIT_MS;
	struct timespec	 step = { 0, GUESTD_POLL_STEP_MS * 1000000L };

	for (;;) {
		if (read_small_file(GUESTD_JOBS_CGROUP "/cgroup.events", buf,
		    sizeof(buf)) == -1)
			return -1;
		if ((p = strstr(buf, "frozen ")) != NULL &&
		    (p[7] == '1') == want)
			return 0;
		if (now_ms() >= deadline) {
			errno = ETIMEDOUT;
			return -1;
		}
		nanosleep(&step, NULL);
	}
}

/* Freezes (on) or thaws the whole job subtree, waiting until it is. */
int
jobproc_freeze(int on)
{
	if (write_file(GUESTD_JOBS_CGROUP "/cgroup.freeze", on ? "1" : "0") ==
	    -1)
		return -1;
	if (cgroup_wait_frozen(on) == -1) {
		if (on)
			(void)write_file(GUESTD_JOBS_CGROUP "/cgroup.freeze",
			    "0");
		return -1;
	}
	return 0;
}
