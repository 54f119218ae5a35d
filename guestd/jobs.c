/*
 * Jobs: commands run as the workspace user, each in its own cgroup under
 * GUESTD_JOBS_CGROUP so that cancel and timeout reach every descendant,
 * including those that called setsid.  stdout and stderr are drained
 * independently into the job's retained output; the command never
 * blocks on them.
 *
 * The table holds AGENT_JOBS_TOTAL_MAX jobs.  Job ids only grow; when
 * the table is full, the job that ended first (and was reaped) makes
 * room, and its id then answers AGENT_ERR_EXPIRED.  A running job is
 * never evicted.  The processes and cgroups behind the jobs are
 * jobproc.c's: this file only keeps their table and their state.
 *
 * Times are CLOCK_MONOTONIC milliseconds.  While the jobs are frozen
 * their clocks stop: a job's active time excludes frozen time, and its
 * timeout is measured in active time.
 */
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "guestd.h"
#include "rdfile.h"
#include "wsfile.h"

#define JOB_STDIN	2		/* pollfd kind after the two streams */
#define JOB_ENV_BASE	8		/* entries of the default environment */

struct job {
	uint32_t	 id;
	uint8_t		 state;
	pid_t		 pid;		/* main process; 0 once reaped */
	int		 fd[OUT_NSTREAMS];	/* -1 after EOF */
	int		 wfd[OUT_NSTREAMS];	/* write ends, until the reap */
	int		 in_fd;		/* -1 once stdin is written */
	int		 cmd_fd;	/* the spare's command pipe, until
					   jobs_release writes cmd */
	char		*cmd;
	uint8_t		*in_data;
	size_t		 in_len;
	size_t		 in_off;
	struct outbuf	 out;
	int32_t		 exit_code;
	int32_t		 signal;
	uint64_t	 start;
	uint64_t	 end;
	uint64_t	 frozen_ms;	/* frozen time while running */
	uint32_t	 timeout_ms;	/* 0: none */
	char		 cgroup[GUESTD_CGROUP_LEN];
	int		 cgroup_live;
	int		 cgroup_killed;	/* all of it is dying */
};

static struct job	*jobs[AGENT_JOBS_TOTAL_MAX];	/* NULL: free */
static uint32_t		 njobs;		/* slots in use */
static uint32_t		 next_id = 1;
static int		 frozen;
static uint64_t		 frozen_since;
static int		 next_cgroup;	/* job next_id's cgroup exists */
static int		 tidy_due;	/* a job may have left its cgroup */

/* Cgroups of evicted jobs whose last processes were still dying. */
#define JOB_STALE_MAX	16
static char		 stale[JOB_STALE_MAX][GUESTD_CGROUP_LEN];
static size_t		 nstale;

static const char *const job_env_base[JOB_ENV_BASE] = {
	GUESTD_ENV_USER,
	"TERM=dumb",
	NULL,
};

struct job *
job_find(uint32_t id)
{
	uint32_t	 i;

	for (i = 0; i < AGENT_JOBS_TOTAL_MAX; i++)
		if (jobs[i] != NULL && jobs[i]->id == id)
			return jobs[i];
	return NULL;
}

/* Whether id was a job of this boot that was evicted since. */
int
job_expired(uint32_t id)
{
	return id != 0 && id < next_id && job_find(id) == NULL;
}

uint32_t
jobs_active(void)
{
	uint32_t	 i, n = 0;

	for (i = 0; i < AGENT_JOBS_TOTAL_MAX; i++)
		if (jobs[i] != NULL && jobs[i]->state == AGENT_JOB_RUNNING)
			n++;
	return n;
}

/*
 * The jobs running, and those whose processes live on after the job
 * ended (a daemon it left in its cgroup): what keeps the VM busy.  A
 * cgroup guestd killed is not: its processes are dying, however long
 * the kernel takes to see them out (the stale ones are all such).
 */
uint32_t
jobs_busy(void)
{
	uint32_t	 i, n = 0;

	for (i = 0; i < AGENT_JOBS_TOTAL_MAX; i++)
		if (jobs[i] != NULL && (jobs[i]->state == AGENT_JOB_RUNNING ||
		    (jobs[i]->cgroup_live && !jobs[i]->cgroup_killed &&
		    jobproc_cgroup_busy(jobs[i]->cgroup))))
			n++;
	return n;
}

/*
 * Each job in the table with its state, as INFO's job_states records
 * (recs holds AGENT_JOBS_TOTAL_MAX); returns how many, jobs_total().
 */
uint32_t
jobs_states(uint8_t *recs)
{
	uint32_t	 i, n = 0;

	for (i = 0; i < AGENT_JOBS_TOTAL_MAX; i++)
		if (jobs[i] != NULL)
			agent_jobstate_put(recs, n++, jobs[i]->id,
			    jobs[i]->state);
	return n;
}

/* The jobs in the table; ended ones are evicted to make room. */
uint32_t
jobs_total(void)
{
	return njobs;
}

int
jobs_frozen(void)
{
	return frozen;
}

static uint64_t
job_active_ms(const struct job *j, uint64_t now)
{
	uint64_t	 end = j->state == AGENT_JOB_RUNNING ? now : j->end;
	uint64_t	 spent = j->frozen_ms;

	if (frozen && j->state == AGENT_JOB_RUNNING)
		spent += now - (frozen_since > j->start ? frozen_since :
		    j->start);
	if (end < j->start + spent)
		return 0;
	return end - j->start - spent;
}

static void
job_kill(struct job *j)
{
	jobproc_kill(j->pid, j->cgroup, j->cgroup_live);
	j->cgroup_killed = j->cgroup_live;
}

static void
job_cgroup_remove(struct job *j)
{
	if (j->cgroup_live && jobproc_cgroup_remove(j->cgroup) == 0)
		j->cgroup_live = 0;
}

/* Closes what is still open of n descriptors, leaving each -1. */
static void
fds_close(int *fd, size_t n)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (fd[i] != -1) {
			close(fd[i]);
			fd[i] = -1;
		}
}

/*
 * We hold the write ends of a job's stream pipes until its main process
 * is reaped, so that its exit wakes us once, with SIGCHLD, and not once
 * more for each pipe it closes on the way (each wake-up a few tenths of
 * a millisecond of a one-vCPU guest under TCG, while the job exits).
 * They are close-on-exec: no other job inherits them.
 */
static void
job_close_wfds(struct job *j)
{
	fds_close(j->wfd, OUT_NSTREAMS);
}

static void
job_close_fds(struct job *j)
{
	int	 i;

	job_close_wfds(j);
	fds_close(j->fd, OUT_NSTREAMS);
	for (i = 0; i < OUT_NSTREAMS; i++)
		j->out.s[i].eof = 1;
	fds_close(&j->in_fd, 1);
	fds_close(&j->cmd_fd, 1);
}

/* Reads what is in a stream pipe now; closes it at EOF. */
static void
job_drain(struct job *j, int stream, int until_empty)
{
	static uint8_t	 buf[GUESTD_READ_CHUNK];
	ssize_t		 n;

	while (j->fd[stream] != -1) {
		n = read(j->fd[stream], buf, sizeof(buf));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return;
		if (n <= 0) {
			close(j->fd[stream]);
			j->fd[stream] = -1;
			j->out.s[stream].eof = 1;
			return;
		}
		outbuf_append(&j->out, stream, buf, (size_t)n);
		if (!until_empty)
			return;
	}
}

static void
job_feed(struct job *j)
{
	ssize_t	 n;

	while (j->in_fd != -1 && j->in_off < j->in_len) {
		n = write(j->in_fd, j->in_data + j->in_off,
		    j->in_len - j->in_off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return;
		if (n == -1)
			break;		/* EPIPE: the command did not want it */
		j->in_off += (size_t)n;
	}
	if (j->in_fd != -1)
		close(j->in_fd);
	j->in_fd = -1;
	free(j->in_data);
	j->in_data = NULL;
}

static int
env_valid(const char *s)
{
	const char	*eq = strchr(s, '=');

	return eq != NULL && eq != s;
}

/*
 * Builds the environment: the defaults, each replaced or extended by the
 * request's NAME=VALUE entries.
 */
static char **
job_env(const struct agent_msg *m)
{
	char		**env;
	size_t		 n = 0, i, k, len;

	env = calloc(JOB_ENV_BASE + m->u.exec.envc + 1, sizeof(*env));
	if (env == NULL)
		return NULL;
	for (i = 0; job_env_base[i] != NULL; i++)
		env[n++] = (char *)job_env_base[i];
	for (i = 0; i < m->u.exec.envc; i++) {
		len = strchr(m->u.exec.env[i], '=') - m->u.exec.env[i] + 1;
		for (k = 0; k < n; k++)
			if (strncmp(env[k], m->u.exec.env[i], len) == 0)
				break;
		env[k] = (char *)m->u.exec.env[i];
		if (k == n)
			n++;
	}
	env[n] = NULL;
	return env;
}

static void
job_cgroup_path(char *path, size_t len, uint32_t id)
{
	(void)snprintf(path, len, "%s/job-%u", GUESTD_JOBS_CGROUP, id);
}

static struct job *
job_new(uint32_t timeout_ms)
{
	struct job	*j;

	if ((j = calloc(1, sizeof(*j))) == NULL)
		return NULL;
	j->id = next_id;
	j->state = AGENT_JOB_RUNNING;
	j->fd[0] = j->fd[1] = j->in_fd = j->cmd_fd = -1;
	j->wfd[0] = j->wfd[1] = -1;
	j->timeout_ms = timeout_ms;
	j->start = now_ms();
	outbuf_init(&j->out, AGENT_JOB_HEAD_MAX, AGENT_JOB_TAIL_MAX);
	job_cgroup_path(j->cgroup, sizeof(j->cgroup), j->id);
	return j;
}

/* Frees an ended job's slot; its leftover processes are killed. */
static void
job_free(struct job *j)
{
	if (j->cgroup_live) {
		job_kill(j);
		job_cgroup_remove(j);
		if (j->cgroup_live)	/* still dying: removed when dead */
			memcpy(stale[nstale++], j->cgroup, sizeof(j->cgroup));
	}
	job_close_fds(j);
	free(j->in_data);
	free(j->cmd);
	outbuf_free(&j->out);
	free(j);
}

/*
 * A free slot, made by evicting the job that ended first if need be.
 * Returns its index, or -1 if every job in the table is still running
 * or being reaped.
 */
static int
job_slot(void)
{
	struct job	*j, *oldest = NULL;
	int		 i, at = -1;

	for (i = 0; i < AGENT_JOBS_TOTAL_MAX; i++) {
		if ((j = jobs[i]) == NULL)
			return i;
		if (j->state == AGENT_JOB_RUNNING || j->pid != 0 ||
		    (j->cgroup_live && nstale == JOB_STALE_MAX))
			continue;
		if (oldest == NULL || j->id < oldest->id) {
			oldest = j;
			at = i;
		}
	}
	if (oldest == NULL)
		return -1;
	job_free(oldest);
	jobs[at] = NULL;
	njobs--;
	return at;
}

/* Enters a started job in the table, in its free slot. */
static void
jobs_add(struct job *j, int slot)
{
	jobs[slot] = j;
	njobs++;
	next_id++;
}

/* A job that could not start: its reason goes to its stderr. */
static void
job_failed(struct job *j, const char *what, int err)
{
	char	 msg[GUESTD_LOG_MAX];
	int	 n;

	n = snprintf(msg, sizeof(msg), "mcvm: %.*s: %s\n",
	    (int)gtext_cut(what, 200), what, strerror(err));
	if (n > 0)
		outbuf_append(&j->out, OUT_STDERR, (const uint8_t *)msg,
		    (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
	job_close_fds(j);
	free(j->in_data);
	j->in_data = NULL;
	j->state = AGENT_JOB_FAILED;
	j->exit_code = 127;
	j->end = now_ms();
	tidy_due = 1;		/* no child to reap if it was never made */
}

/*
 * The spare shell: bash started ahead of the next plain command (one
 * with no environment, stdin or cwd of its own), with --command-fd 3
 * (mcvm's patch to the image's bash), waiting in its own cgroup until
 * it reads the command from its pipe.  Such a command then costs only
 * its own parsing and running: the shell's exec and start-up, most of
 * a job's time under TCG, were paid while no job waited.  It waits in
 * the cgroup of the next job, which a plain command takes as it is; the
 * command is written once the EXEC is answered (jobs_release).  A job of
 * another kind that comes first moves it out to GUESTD_SPARE_CGROUP,
 * and a later take moves it back in: moving a process costs about a
 * millisecond under TCG.  A spare that dies
 * before it is taken (an old image's bash refuses the option; a job
 * may kill it) is made again, SPARE_DEATHS_MAX times in a boot.
 */
#define SPARE_DEATHS_MAX	3
#define SPARE_DELAY_MS		500	/* after a start, while jobs run */
#define SPARE_REST_MS		10	/* after an end, while none runs */

struct spare {
	pid_t		 pid;		/* 0: none */
	uint32_t	 id;		/* the job whose cgroup it is in; 0: in
					   GUESTD_SPARE_CGROUP */
	int		 cmd;		/* write end of its command pipe */
	int		 fd[OUT_NSTREAMS];	/* its stdout and stderr */
	int		 wfd[OUT_NSTREAMS];	/* their write ends */
};
static struct spare	 spare = { 0, 0, -1, { -1, -1 }, { -1, -1 } };
static int		 spare_deaths;
static uint64_t		 last_start;	/* the latest job's, ms */
static uint64_t		 last_end;	/* the latest reap of a job's */
static int		 release_due;	/* a spare taken, its command unsent */

static void
spare_close(void)
{
	fds_close(&spare.cmd, 1);
	fds_close(spare.fd, OUT_NSTREAMS);
	fds_close(spare.wfd, OUT_NSTREAMS);
	spare.pid = 0;
	spare.id = 0;
}

/*
 * In how many ms a spare is due (0: now), or -1 while none will be: there
 * is one, the jobs are frozen, or spares died too often.  While jobs run,
 * it waits SPARE_DELAY_MS from the latest start; while none runs,
 * SPARE_REST_MS from the latest end, so that the shell's start (some
 * 10 ms of the vCPU under TCG) does not take the host's CPUs while the
 * job's answer is on its way through the host's daemons.
 */
static int64_t
spare_wait(uint64_t now)
{
	uint64_t	 due;

	if (spare.pid != 0 || frozen || spare_deaths >= SPARE_DEATHS_MAX)
		return -1;
	due = jobs_active() == 0 ? last_end + SPARE_REST_MS :
	    last_start + SPARE_DELAY_MS;
	return now >= due ? 0 : (int64_t)(due - now);
}

static void
spare_start(void)
{
	struct child_args	 sp;
	char			 cgroup[GUESTD_CGROUP_LEN];
	char			*argv[] = { "/bin/bash", "--command-fd", "3",
				    NULL };
	int			 pcmd[2] = { -1, -1 }, pout[2] = { -1, -1 };
	int			 perr[2] = { -1, -1 }, nul = -1, cwdfd = -1;
	int			 i;
	pid_t			 pid;

	job_cgroup_path(cgroup, sizeof(cgroup), next_id);
	if (jobproc_cgroup_make(cgroup) == -1 ||
	    pipe2(pcmd, O_CLOEXEC) == -1 || pipe2(pout, O_CLOEXEC) == -1 ||
	    pipe2(perr, O_CLOEXEC) == -1 ||
	    fchown(pout[1], AGENT_JOB_UID, AGENT_JOB_GID) == -1 ||
	    fchown(perr[1], AGENT_JOB_UID, AGENT_JOB_GID) == -1 ||
	    (nul = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1 ||
	    (cwdfd = ws_open(ws_root, ".", O_PATH | O_DIRECTORY, 0)) == -1) {
		glog("spare shell: %s", strerror(errno));
		spare_deaths++;
		goto out;
	}
	next_cgroup = 1;
	sp = (struct child_args){ .pin = nul, .pout = pout[1],
	    .perr = perr[1], .cwdfd = cwdfd, .argv = argv, .cmdfd = pcmd[0] };
	(void)snprintf(sp.procs, sizeof(sp.procs), "%s/cgroup.procs", cgroup);
	if ((pid = jobproc_spawn(&sp, (char **)job_env_base)) == -1) {
		glog("spare shell: clone: %s", strerror(errno));
		spare_deaths++;
		goto out;
	}
	/* One that could not exec is reaped as a death. */
	spare.pid = pid;
	spare.id = next_id;
	spare.cmd = pcmd[1];
	spare.fd[OUT_STDOUT] = pout[0];
	spare.fd[OUT_STDERR] = perr[0];
	spare.wfd[OUT_STDOUT] = pout[1];
	spare.wfd[OUT_STDERR] = perr[1];
	pcmd[1] = pout[0] = perr[0] = pout[1] = perr[1] = -1;
	for (i = 0; i < OUT_NSTREAMS; i++)
		(void)fcntl(spare.fd[i], F_SETFL, O_NONBLOCK);
	(void)fcntl(spare.cmd, F_SETFL, O_NONBLOCK);
out:
	fds_close(pcmd, 2);
	fds_close(pout, 2);
	fds_close(perr, 2);
	if (nul != -1)
		close(nul);
	if (cwdfd != -1)
		close(cwdfd);
}

/* The spare reaped before it was taken: pid was its. */
static void
spare_died(int status)
{
	spare_close();
	if (++spare_deaths == SPARE_DEATHS_MAX)
		glog("spare shell: died %d times (the last %s %d): commands "
		    "start their own shell from now on", SPARE_DEATHS_MAX,
		    WIFSIGNALED(status) ? "by signal" : "with status",
		    WIFSIGNALED(status) ? WTERMSIG(status) :
		    WEXITSTATUS(status));
}

/*
 * Makes the spare shell if none is there, and waits at most ms until it
 * sleeps, reading its pipe, its start-up done: a template is
 * checkpointed with it so, and so are the VMs restored from it.
 */
void
jobs_spare_settle(uint32_t ms)
{
	char		 path[32], buf[512], *p;
	uint64_t	 deadline = now_ms() + ms;
	struct timespec	 step = { 0, GUESTD_POLL_STEP_MS * 1000000L };

	jobs_tidy();
	while (spare.pid != 0 && now_ms() < deadline) {
		(void)snprintf(path, sizeof(path), "/proc/%ld/stat",
		    (long)spare.pid);
		if (read_small_file(path, buf, sizeof(buf)) == -1 ||
		    (p = strrchr(buf, ')')) == NULL)
			return;
		if (p[1] == ' ' && p[2] == 'S')
			return;
		nanosleep(&step, NULL);
		jobs_reap();
	}
}

/* A spare that cannot be moved or given its command: reaped as an orphan. */
static void
spare_drop(const char *why)
{
	glog("spare shell: %s: %s", why, strerror(errno));
	jobproc_kill(spare.pid, NULL, 0);
	spare_close();
}

/* Job j takes its own cgroup: a spare waiting there leaves it. */
static void
spare_evict(const struct job *j)
{
	if (spare.pid == 0 || spare.id != j->id)
		return;
	if (jobproc_cgroup_make(GUESTD_SPARE_CGROUP) == -1 ||
	    jobproc_cgroup_move(GUESTD_SPARE_CGROUP, spare.pid) == -1)
		spare_drop("not moved");
	spare.id = 0;
}

/*
 * Gives the spare to job j, in j's cgroup; jobs_release writes it the
 * command.  Returns 0, or -1 if there was none or it could not be given
 * (then it is killed, and j starts its own shell).
 */
static int
spare_take(struct job *j, const char *command)
{
	int	 i;

	if (spare.pid == 0)
		return -1;
	if ((spare.id != j->id && jobproc_cgroup_move(j->cgroup,
	    spare.pid) == -1) || (j->cmd = strdup(command)) == NULL) {
		spare_drop("not taken");
		return -1;
	}
	j->cmd_fd = spare.cmd;
	spare.cmd = -1;
	release_due = 1;
	j->pid = spare.pid;
	for (i = 0; i < OUT_NSTREAMS; i++) {
		j->fd[i] = spare.fd[i];
		j->wfd[i] = spare.wfd[i];
		spare.fd[i] = spare.wfd[i] = -1;
	}
	spare_close();
	return 0;
}

/*
 * Gives each spare shell a job took its command, whole (at most
 * AGENT_ARG_MAX bytes, which an empty pipe holds), and closes its pipe:
 * the end of file it runs the command at.  Called once the answers to
 * the requests read are written: a shell woken by its command would
 * otherwise run before the EXEC's answer leaves, on one vCPU, and the
 * host's read of the job would wait for it.  A spare that died before
 * it was given the command leaves its job ended, saying so on stderr.
 */
void
jobs_release(void)
{
	static const char	 why[] = "mcvm: the shell the command was "
				    "given to exited before reading it: run "
				    "it again\n";
	struct job		*j;
	size_t			 len;
	uint32_t		 i;
	int			 killed;

	if (!release_due)
		return;
	release_due = 0;
	for (i = 0; i < AGENT_JOBS_TOTAL_MAX; i++) {
		if ((j = jobs[i]) == NULL || j->cmd_fd == -1)
			continue;
		len = strlen(j->cmd);
		/* A job cancelled meanwhile needs no word. */
		killed = j->state == AGENT_JOB_CANCELLED ||
		    j->state == AGENT_JOB_TIMED_OUT;
		if (!killed && (j->state != AGENT_JOB_RUNNING || j->pid == 0 ||
		    write(j->cmd_fd, j->cmd, len) != (ssize_t)len)) {
			glog("job %u: the spare shell took no command",
			    j->id);
			outbuf_append(&j->out, OUT_STDERR, (const uint8_t *)why,
			    sizeof(why) - 1);
			if (j->pid != 0)
				jobproc_kill(j->pid, NULL, 0);
		}
		fds_close(&j->cmd_fd, 1);
		free(j->cmd);
		j->cmd = NULL;
	}
}

/*
 * Starts the command of an EXEC request.  Returns 0 and the job id (the
 * job may be in state failed if the command could not be executed), or an
 * AGENT_ERR_* code with a message when no job was created.
 */
int
job_start(const struct agent_msg *m, uint32_t *idp, char *err, size_t errlen)
{
	struct job		*j;
	struct child_args	 sp;
	const char		*cwd;
	char			*shargv[4], **argv = NULL, **envp = NULL;
	int			 pin[2] = { -1, -1 }, pout[2] = { -1, -1 };
	int			 perr[2] = { -1, -1 };
	int			 cwdfd = -1, serrno, code, slot;
	uint32_t		 i;
	pid_t			 pid;

	if (frozen) {
		snprintf(err, errlen, "jobs are frozen; thaw first");
		return AGENT_ERR_STATE;
	}
	if (jobs_active() >= AGENT_JOBS_ACTIVE_MAX) {
		snprintf(err, errlen, "%d jobs are already running, the most "
		    "allowed at once", AGENT_JOBS_ACTIVE_MAX);
		return AGENT_ERR_LIMIT;
	}
	if (next_id == UINT32_MAX) {
		snprintf(err, errlen, "job ids are used up; reboot the VM");
		return AGENT_ERR_LIMIT;
	}
	for (i = 0; i < m->u.exec.envc; i++)
		if (!env_valid(m->u.exec.env[i])) {
			snprintf(err, errlen, "environment entry %u is not "
			    "NAME=VALUE", i);
			return AGENT_ERR_INVAL;
		}
	if (!(m->u.exec.flags & AGENT_EXEC_SHELL) && m->u.exec.argv[0][0] ==
	    '\0') {
		snprintf(err, errlen, "empty command");
		return AGENT_ERR_INVAL;
	}
	cwd = m->u.exec.cwd[0] == '\0' ? "." :
	    ws_relpath(m->u.exec.cwd, AGENT_WORKSPACE);
	if (cwd == NULL || (cwdfd = ws_open(ws_root, cwd, O_PATH |
	    O_DIRECTORY, 0)) == -1) {
		code = errno == EXDEV || errno == ELOOP ? AGENT_ERR_PATH :
		    errno == ENOENT ? AGENT_ERR_NOENT : AGENT_ERR_INVAL;
		snprintf(err, errlen, "cwd %.*s: %s",
		    (int)gtext_cut(m->u.exec.cwd, 200), m->u.exec.cwd,
		    errno == EXDEV ? "outside " AGENT_WORKSPACE :
		    errno == ELOOP ? "symbolic links are not followed" :
		    strerror(errno));
		return code;
	}

	if ((slot = job_slot()) == -1) {
		close(cwdfd);
		snprintf(err, errlen, "all %d job slots hold running jobs; wait "
		    "for one to finish, or cancel one", AGENT_JOBS_TOTAL_MAX);
		return AGENT_ERR_LIMIT;
	}
	if ((j = job_new(m->u.exec.timeout_ms)) == NULL)
		goto syserr;
	/* Usually made already, by jobs_tidy. */
	if (jobproc_cgroup_make(j->cgroup) == -1)
		goto syserr_job;
	j->cgroup_live = 1;
	next_cgroup = 0;
	last_start = j->start;
	if ((m->u.exec.flags & AGENT_EXEC_SHELL) && m->u.exec.envc == 0 &&
	    m->u.exec.stdin_len == 0 && strcmp(cwd, ".") == 0 &&
	    spare_take(j, m->u.exec.argv[0]) == 0) {
		jobs_add(j, slot);
		goto done;
	}
	spare_evict(j);
	if (m->u.exec.flags & AGENT_EXEC_SHELL) {
		/* Non-interactive: bash reads no startup file. */
		shargv[0] = "/bin/bash";
		shargv[1] = "-c";
		shargv[2] = (char *)m->u.exec.argv[0];
		shargv[3] = NULL;
		argv = shargv;
	} else {
		if ((argv = calloc(m->u.exec.argc + 1, sizeof(*argv))) == NULL)
			goto syserr_job;
		for (i = 0; i < m->u.exec.argc; i++)
			argv[i] = (char *)m->u.exec.argv[i];
	}
	if ((envp = job_env(m)) == NULL)
		goto syserr_job;
	if (m->u.exec.stdin_len > 0) {
		if ((j->in_data = malloc(m->u.exec.stdin_len)) == NULL)
			goto syserr_job;
		memcpy(j->in_data, m->u.exec.stdin_data, m->u.exec.stdin_len);
		j->in_len = m->u.exec.stdin_len;
		if (pipe2(pin, O_CLOEXEC) == -1)
			goto syserr_job;
	} else if ((pin[0] = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1)
		goto syserr_job;
	if (pipe2(pout, O_CLOEXEC) == -1 || pipe2(perr, O_CLOEXEC) == -1)
		goto syserr_job;
	/*
	 * The job runs as the workspace user: its ends of the pipes are
	 * its own, so that it can open /dev/stdout or /dev/stderr (which
	 * reopen the pipe through /proc) as well as write to them.  A
	 * pipe's two ends are one inode.
	 */
	if (fchown(pout[1], AGENT_JOB_UID, AGENT_JOB_GID) == -1 ||
	    fchown(perr[1], AGENT_JOB_UID, AGENT_JOB_GID) == -1 ||
	    (j->in_len > 0 && fchown(pin[0], AGENT_JOB_UID,
	    AGENT_JOB_GID) == -1))
		goto syserr_job;

	jobs_add(j, slot);
	sp = (struct child_args){ .pin = pin[0], .pout = pout[1],
	    .perr = perr[1], .cwdfd = cwdfd, .argv = argv, .cmdfd = -1 };
	(void)snprintf(sp.procs, sizeof(sp.procs), "%s/cgroup.procs",
	    j->cgroup);
	if ((pid = jobproc_spawn(&sp, envp)) == -1) {
		job_failed(j, "clone", errno);
		goto done;
	}
	j->pid = pid;
	if (sp.err != 0) {
		job_failed(j, argv[0], sp.err);
		goto done;
	}
	j->fd[OUT_STDOUT] = pout[0];
	j->fd[OUT_STDERR] = perr[0];
	j->wfd[OUT_STDOUT] = pout[1];
	j->wfd[OUT_STDERR] = perr[1];
	pout[0] = perr[0] = pout[1] = perr[1] = -1;
	(void)fcntl(j->fd[OUT_STDOUT], F_SETFL, O_NONBLOCK);
	(void)fcntl(j->fd[OUT_STDERR], F_SETFL, O_NONBLOCK);
	if (j->in_data != NULL) {
		j->in_fd = pin[1];
		pin[1] = -1;
		(void)fcntl(j->in_fd, F_SETFL, O_NONBLOCK);
		job_feed(j);
	}
done:
	*idp = j->id;
	code = 0;
	goto out;
syserr_job:
	serrno = errno;
	outbuf_free(&j->out);
	free(j->in_data);
	if (j->cgroup_live)
		(void)jobproc_cgroup_remove(j->cgroup);
	free(j);
	errno = serrno;
syserr:
	snprintf(err, errlen, "cannot start the job: %s", strerror(errno));
	code = AGENT_ERR_IO;
out:
	fds_close(pin, 2);
	fds_close(pout, 2);
	fds_close(perr, 2);
	if (cwdfd != -1)
		close(cwdfd);
	if (argv != shargv)
		free(argv);
	free(envp);
	return code;
}

void
job_status(const struct job *j, struct agent_job_status *st, uint64_t now)
{
	memset(st, 0, sizeof(*st));
	st->job = j->id;
	st->state = j->state;
	st->out_eof = j->out.s[OUT_STDOUT].eof ? 1 : 0;
	st->err_eof = j->out.s[OUT_STDERR].eof ? 1 : 0;
	st->exit_code = j->exit_code;
	st->signal = j->signal;
	st->out_total = j->out.s[OUT_STDOUT].total;
	st->err_total = j->out.s[OUT_STDERR].total;
	outbuf_gap(&j->out, OUT_STDOUT, &st->out_gap, &st->out_dropped);
	outbuf_gap(&j->out, OUT_STDERR, &st->err_gap, &st->err_dropped);
	st->runtime_ms = job_active_ms(j, now);
}

size_t
job_page(const struct job *j, int stream, uint64_t cursor, size_t max,
    uint8_t *dst, uint64_t *skipped)
{
	return outbuf_page(&j->out, stream, cursor, max, dst, skipped);
}

/*
 * A running job we killed: from now on it says so, with SIGKILL and no
 * exit code, whatever its reap says later (nothing but SIGKILL can end
 * it once it was sent, short of an exit that crossed it).
 */
static void
job_killed(struct job *j, uint8_t state, uint64_t now)
{
	j->state = state;
	j->exit_code = -1;
	j->signal = SIGKILL;
	j->end = now;
}

/*
 * Kills every process of the job.  A running job becomes cancelled; a
 * finished one keeps its state (its leftover daemons die).
 */
int
job_cancel(struct job *j)
{
	/* One that exited already is reaped: it completed, as it says. */
	if (j->state == AGENT_JOB_RUNNING)
		jobs_reap();
	job_kill(j);
	if (j->state == AGENT_JOB_RUNNING) {
		job_killed(j, AGENT_JOB_CANCELLED, now_ms());
		if (frozen)
			j->frozen_ms += j->end - (frozen_since > j->start ?
			    frozen_since : j->start);
	}
	return 0;
}

/*
 * One child reaped (jobproc.c's jobs_reap): a job's main process, or an
 * orphan reparented to PID 1.
 */
void
job_reaped(pid_t pid, int status)
{
	struct job	*j = NULL;
	char		 note[GUESTD_LOG_MAX];
	size_t		 n;
	uint32_t	 i;
	int		 k;

	tidy_due = 1;
	if (pid == spare.pid) {
		spare_died(status);
		return;
	}
	for (i = 0; i < AGENT_JOBS_TOTAL_MAX && j == NULL; i++)
		if (jobs[i] != NULL && jobs[i]->pid == pid)
			j = jobs[i];
	if (j == NULL)
		return;
	j->pid = 0;
	/* A job we killed keeps what it said from the kill on. */
	if (j->state == AGENT_JOB_RUNNING && WIFEXITED(status))
		j->exit_code = WEXITSTATUS(status);
	else if (j->state == AGENT_JOB_RUNNING && WIFSIGNALED(status)) {
		j->exit_code = -1;
		j->signal = WTERMSIG(status);
	}
	/*
	 * What the command wrote before exiting is in the pipes; they end
	 * there unless a process it left holds them.
	 */
	job_close_wfds(j);
	for (k = 0; k < OUT_NSTREAMS; k++)
		job_drain(j, k, 1);
	/* A limit it ran into is said on its stderr. */
	if (j->cgroup_live && (n = jobproc_note(j->cgroup, note,
	    sizeof(note))) > 0)
		outbuf_append(&j->out, OUT_STDERR, (const uint8_t *)note, n);
	if (j->state == AGENT_JOB_RUNNING) {
		j->state = AGENT_JOB_COMPLETED;
		j->end = now_ms();
	}
	last_end = now_ms();
}

/*
 * Between requests, after the waiting reads were answered: removes the
 * cgroups of the jobs that ended, and, while none runs, makes the next
 * job's.  Each is about half a millisecond under TCG that neither a
 * job's answer nor its start waits for, nor, on one vCPU, a running job.
 * Then the spare shell, if one is due: while no job runs, or a while
 * after the last start (the start of a shell costs a job on one vCPU
 * a few milliseconds).
 */
void
jobs_tidy(void)
{
	char		 path[GUESTD_CGROUP_LEN];
	uint32_t	 i;

	/* Only after a reap: a cgroup still busy is tried at the next. */
	for (i = 0; tidy_due && i < AGENT_JOBS_TOTAL_MAX; i++)
		if (jobs[i] != NULL && jobs[i]->state != AGENT_JOB_RUNNING &&
		    jobs[i]->pid == 0)
			job_cgroup_remove(jobs[i]);
	for (i = 0; tidy_due && i < nstale; i++) {
		if (jobproc_cgroup_remove(stale[i]) == -1)
			continue;
		memcpy(stale[i], stale[--nstale], sizeof(stale[i]));
		i--;
	}
	tidy_due = 0;
	if (!next_cgroup && jobs_active() == 0) {
		job_cgroup_path(path, sizeof(path), next_id);
		if (jobproc_cgroup_make(path) == 0)
			next_cgroup = 1;
	}
	if (spare_wait(now_ms()) == 0)
		spare_start();
}

size_t
jobs_pollfds(struct pollfd *pfd, size_t space, struct job **who, int *kind)
{
	size_t		 n = 0;
	uint32_t	 i;
	int		 k;

	for (i = 0; i < AGENT_JOBS_TOTAL_MAX; i++) {
		if (jobs[i] == NULL)
			continue;
		for (k = 0; k < OUT_NSTREAMS; k++) {
			if (jobs[i]->fd[k] == -1 || n == space)
				continue;
			pfd[n].fd = jobs[i]->fd[k];
			pfd[n].events = POLLIN;
			who[n] = jobs[i];
			kind[n++] = k;
		}
		if (jobs[i]->in_fd != -1 && n < space) {
			pfd[n].fd = jobs[i]->in_fd;
			pfd[n].events = POLLOUT;
			who[n] = jobs[i];
			kind[n++] = JOB_STDIN;
		}
	}
	return n;
}

void
jobs_event(struct job *j, int kind, short revents)
{
	if (kind == JOB_STDIN)
		job_feed(j);
	else
		job_drain(j, kind, 0);
}

/*
 * Ends the jobs whose time is up.  Returns the milliseconds until the
 * next deadline, or -1 if there is none.
 */
int
jobs_timeout(uint64_t now)
{
	uint64_t	 active, left, next = UINT64_MAX;
	int64_t		 wait;
	uint32_t	 i;
	struct job	*j;

	if (frozen)
		return -1;
	for (i = 0; i < AGENT_JOBS_TOTAL_MAX; i++) {
		j = jobs[i];
		if (j == NULL || j->state != AGENT_JOB_RUNNING ||
		    j->timeout_ms == 0)
			continue;
		active = job_active_ms(j, now);
		if (active >= j->timeout_ms) {
			job_kill(j);
			job_killed(j, AGENT_JOB_TIMED_OUT, now);
			continue;
		}
		left = j->timeout_ms - active;
		if (left < next)
			next = left;
	}
	/* jobs_tidy starts a spare when it is due. */
	if ((wait = spare_wait(now)) >= 0 && (uint64_t)wait < next)
		next = (uint64_t)wait;
	return next == UINT64_MAX ? -1 : (int)next;
}

/*
 * Freezes the whole job subtree and stops the jobs' clocks.  Returns 0
 * and the number of running jobs, or -1.
 */
int
jobs_freeze(uint32_t *nfrozen)
{
	if (jobproc_freeze(1) == -1)
		return -1;
	if (!frozen) {
		frozen = 1;
		frozen_since = now_ms();
	}
	*nfrozen = jobs_active();
	return 0;
}

int
jobs_thaw(uint64_t now)
{
	uint32_t	 i;
	struct job	*j;

	if (!frozen)
		return jobproc_freeze(0);
	for (i = 0; i < AGENT_JOBS_TOTAL_MAX; i++) {
		j = jobs[i];
		if (j != NULL && j->state == AGENT_JOB_RUNNING)
			j->frozen_ms += now - (frozen_since > j->start ?
			    frozen_since : j->start);
	}
	frozen = 0;
	return jobproc_freeze(0);
}

void
jobs_kill_all(void)
{
	uint32_t	 i;

	for (i = 0; i < AGENT_JOBS_TOTAL_MAX; i++)
		if (jobs[i] != NULL)
			job_kill(jobs[i]);
}
