/*
 * libFuzzer target for the guest agent's request handling: guestd's own
 * channel.c (framing, dispatch, replies), jobs.c (the job table: ids,
 * eviction, cursors, states) and wsfile.c (file calls, in a scratch
 * directory), as they are linked into mcvm-guestd.  Below them, this
 * file stands in for what has effects on the machine: processes and
 * cgroups (jobproc.c), the clock, the random pool and the network.
 * A job's "process" writes to its real pipes when spawned and exits
 * when the input says so; SIGKILL ends it at its next reap.
 *
 * The input is a list of steps: bytes from the host (raw, or a frame
 * whose header this builds), a process exit, time passing.  Every reply
 * the agent sends must decode as the VM monitor decodes it.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_proto.h"
#include "guestd.h"
#include "netcfg.h"

int	 LLVMFuzzerTestOneInput(const uint8_t *, size_t);
int	 LLVMFuzzerInitialize(int *, char ***);

#define FAKE_PROCS	64
#define SCRATCH_EVERY	512	/* inputs between scratch clean-ups */

int		 ws_root = -1;
static char	 scratch[64];
static uint64_t	 clock_ms = 1000;
static unsigned	 runs;

static struct fake {
	pid_t	 pid;
	int	 killed;
	int	 exited;	/* ready to reap */
	int	 status;
} procs[FAKE_PROCS];
static pid_t	 next_pid = 1000;

/* --- what main.c provides */

void
glog(const char *fmt, ...)
{
}

uint64_t
now_ms(void)
{
	return clock_ms;
}

void
guest_info(struct agent_msg *m)
{
	m->u.info.os = "fuzz";
	m->u.info.kernel = "fuzz";
	m->u.info.agent_version = GUESTD_VERSION;
	m->u.info.jobs_active = jobs_active();
	m->u.info.jobs_total = jobs_total();
	m->u.info.jobs_active_max = AGENT_JOBS_ACTIVE_MAX;
	m->u.info.jobs_total_max = AGENT_JOBS_TOTAL_MAX;
	m->u.info.frozen = jobs_frozen() ? 1 : 0;
}

void
guest_poweroff(void)
{
	abort();	/* only serve() calls it */
}

int
guest_set_time(int64_t sec, uint32_t nsec)
{
	return sec & 1 ? (errno = EPERM, -1) : 0;
}

int
guest_seed(const uint8_t *seed)
{
	return seed[0] == 0xff ? (errno = EIO, -1) : 0;
}

int
guest_set_identity(const char *hostname, const char *machine_id)
{
	return machine_id[0] == 'f' ? (errno = EROFS, -1) : 0;
}

int
guest_net_config(const struct agent_msg *req, char *err, size_t len)
{
	struct netcfg	 nc;

	if (netcfg_parse(req->u.net_config.address,
	    req->u.net_config.gateway, req->u.net_config.resolver,
	    req->u.net_config.mac, &nc) == -1) {
		snprintf(err, len, "bad network configuration");
		return AGENT_ERR_INVAL;
	}
	return 0;
}

int
cmdline_value(const char *key, char *out, size_t len)
{
	return -1;
}

/* --- what jobproc.c provides */

int
jobproc_init(void)
{
	return 0;
}

int
jobproc_cgroup_make(const char *cgroup)
{
	return 0;
}

int
jobproc_cgroup_remove(const char *cgroup)
{
	return cgroup[strlen(cgroup) - 1] == '7' && (clock_ms & 1) ?
	    (errno = EBUSY, -1) : 0;
}

/* As busy as the removal above says. */
int
jobproc_cgroup_busy(const char *cgroup)
{
	return cgroup[strlen(cgroup) - 1] == '7' && (clock_ms & 1);
}

/* The spare shell's move into its job's cgroup fails now and then. */
int
jobproc_cgroup_move(const char *cgroup, pid_t pid)
{
	return (clock_ms & 6) == 6 ? (errno = ESRCH, -1) : 0;
}

size_t
jobproc_note(const char *cgroup, char *buf, size_t len)
{
	return (size_t)snprintf(buf, len, "%s\n", cgroup) % len;
}

void
jobproc_kill(pid_t pid, const char *cgroup, int live)
{
	size_t	 i;

	for (i = 0; i < FAKE_PROCS; i++)
		if (procs[i].pid == pid && pid > 0)
			procs[i].killed = 1;
}

pid_t
jobproc_spawn(struct child_args *s, char **envp)
{
	size_t	 i, n;

	for (i = 0; i < FAKE_PROCS; i++)
		if (procs[i].pid == 0)
			break;
	if (i == FAKE_PROCS) {
		errno = EAGAIN;
		return -1;
	}
	n = strlen(s->argv[0]);
	/* What a command writes at once; the rest it would block on. */
	(void)fcntl(s->pout, F_SETFL, O_NONBLOCK);
	(void)fcntl(s->perr, F_SETFL, O_NONBLOCK);
	if (write(s->pout, s->argv[0], n) == -1 ||
	    write(s->perr, envp[0], strlen(envp[0])) == -1)
		;	/* a full pipe is the command's business */
	(void)fcntl(s->pout, F_SETFL, 0);
	(void)fcntl(s->perr, F_SETFL, 0);
	s->err = s->argv[0][0] == '!' ? ENOENT : 0;
	memset(&procs[i], 0, sizeof(procs[i]));
	procs[i].pid = next_pid++;
	if (s->err != 0) {
		procs[i].exited = 1;
		procs[i].status = 127 << 8;
	}
	return procs[i].pid;
}

int
jobproc_freeze(int on)
{
	return 0;
}

void
jobs_reap(void)
{
	size_t	 i;
	pid_t	 pid;
	int	 status;

	for (i = 0; i < FAKE_PROCS; i++) {
		if (procs[i].pid == 0)
			continue;
		if (procs[i].killed && !jobs_frozen()) {
			procs[i].exited = 1;
			procs[i].status = SIGKILL;
		}
		if (!procs[i].exited)
			continue;
		pid = procs[i].pid;
		status = procs[i].status;
		memset(&procs[i], 0, sizeof(procs[i]));
		job_reaped(pid, status);
	}
}

/* --- the harness */

/* Every reply must decode as the host decodes it. */
static void
drain(void)
{
	static uint8_t		 buf[4 * AGENT_FRAME_MAX];
	static size_t		 have;
	struct agent_hdr	 hdr;
	struct agent_msg	 m;
	const uint8_t		*p;
	size_t			 n, off;
	int			 len;

	while ((n = chan_out(&p)) > 0) {
		if (n > sizeof(buf) - have)
			n = sizeof(buf) - have;
		memcpy(buf + have, p, n);
		have += n;
		chan_out_done(n);
		off = 0;
		for (;;) {
			len = agent_frame_check(buf + off, have - off, &hdr);
			if (len == -1)
				abort();	/* a malformed frame header */
			if (len == 0)
				break;
			if (!(hdr.type & AGENT_REPLY) ||
			    agent_decode(&hdr, buf + off + AGENT_HDR_LEN,
			    &m) == -1)
				abort();	/* the monitor would refuse it */
			off += (size_t)len;
		}
		memmove(buf, buf + off, have - off);
		have -= off;
	}
}

static void
feed(const uint8_t *p, size_t n)
{
	uint8_t	*in;
	size_t	 room;

	while (n > 0) {
		drain();
		if ((room = chan_in_room(&in)) == 0) {
			chan_reset();	/* as a hangup would */
			continue;
		}
		if (room > n)
			room = n;
		memcpy(in, p, room);
		chan_input(room, clock_ms);
		p += room;
		n -= room;
		drain();
	}
}

static void
hello(uint32_t id)
{
	struct agent_msg	 m;
	uint8_t			 f[AGENT_HDR_LEN + 4];

	memset(&m, 0, sizeof(m));
	m.type = AGENT_HELLO;
	m.id = id;
	m.u.hello.version = AGENT_PROTO_VERSION;
	if (agent_encode(&m, f, sizeof(f)) != (int)sizeof(f))
		abort();
	feed(f, sizeof(f));
}

static void
tick(void)
{
	int	 answered;

	jobs_reap();
	(void)jobs_timeout(clock_ms);
	(void)chan_waits(clock_ms, &answered);
	jobs_tidy();
	drain();
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	if (f->level > 0)
		(void)remove(path);
	return 0;
}

static void
scratch_clean(void)
{
	(void)nftw(scratch, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void
scratch_remove(void)
{
	scratch_clean();
	(void)rmdir(scratch);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	snprintf(scratch, sizeof(scratch), "/tmp/fuzz-guestd.XXXXXX");
	if (mkdtemp(scratch) == NULL || chmod(scratch, 0777) == -1 ||
	    (ws_root = open(scratch, O_PATH | O_DIRECTORY)) == -1) {
		perror("scratch directory");
		exit(1);
	}
	atexit(scratch_remove);
	signal(SIGPIPE, SIG_IGN);
	(void)jobproc_init();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t	 frame[AGENT_FRAME_MAX];
	size_t		 off = 0, n;
	uint32_t	 len;
	uint8_t		 op;

	if (++runs % SCRATCH_EVERY == 0)
		scratch_clean();
	/* Each input starts a session, with no job running. */
	jobs_kill_all();
	(void)jobs_thaw(clock_ms);
	tick();
	chan_reset();
	hello(1);
	while (off < size) {
		op = data[off++];
		switch (op % 5) {
		case 0:		/* a frame: type, id, length, payload */
			if (size - off < 5)
				return 0;
			len = (uint32_t)data[off + 3] |
			    (uint32_t)data[off + 4] << 8;
			n = size - off - 5;
			if (len > n)
				len = (uint32_t)n;
			agent_hdr_put(frame, data[off] % (AGENT_TYPE_MAX + 1),
			    (uint32_t)data[off + 1] | (uint32_t)op << 8,
			    len);
			memcpy(frame + AGENT_HDR_LEN, data + off + 5, len);
			off += 5 + len;
			feed(frame, AGENT_HDR_LEN + len);
			break;
		case 1:		/* raw bytes */
			if (size - off < 2)
				return 0;
			len = (uint32_t)data[off] | (uint32_t)data[off + 1] << 8;
			off += 2;
			if (len > size - off)
				len = (uint32_t)(size - off);
			feed(data + off, len);
			off += len;
			break;
		case 2:		/* a process exits */
			if (off < size) {
				n = data[off++] % FAKE_PROCS;
				if (procs[n].pid != 0) {
					procs[n].exited = 1;
					procs[n].status = (op >> 3) & 1 ?
					    SIGSEGV : (op >> 4) << 8;
				}
			}
			tick();
			break;
		case 3:		/* time passes */
			if (off < size)
				clock_ms += (uint64_t)data[off++] * 250;
			tick();
			break;
		case 4:		/* a new session */
			hello((uint32_t)op << 4);
			break;
		}
	}
	tick();
	return 0;
}
