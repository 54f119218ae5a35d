/*
 * mcvmd's children: it fork+execs frontd, netd and stored, each with its
 * end of a socketpair on PROC_PARENT_SOCK_FILENO.  A crashed child is
 * restarted with a rate limit; past it, a crash loop of netd or stored
 * stops the suite (mcvmd exits non-zero), and frontd is restarted after a
 * pause.  mcvmd_shutdown() stops the VMs and every child.  main() is in
 * main.c.
 */
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "mcvmd.h"
#include "msg_proc.h"
#include "vm.h"

struct mcvmd	*env;

static void	 child_dispatch(int, short, void *);

struct child *
child_by_id(enum proc_id id)
{
	return &env->children[id];
}

static struct child *
child_by_pid(pid_t pid)
{
	int	 id;

	for (id = PROC_PARENT + 1; id < PROC_MAX; id++)
		if (env->children[id].pid == pid)
			return &env->children[id];
	return NULL;
}

void
child_path(const struct child *c, char *path, size_t size)
{
	int	 n;

	n = snprintf(path, size, "%s/%s", env->bindir, c->desc->binary);
	if (n < 0 || (size_t)n >= size)
		fatalx("%s: path too long", c->desc->binary);
}

/*
 * The environment of every child.  Sanitized builds turn off the leak
 * scan at exit: it clones and ptraces, which the children's seccomp
 * filters rightly kill.
 */
char *const child_envp[] = {
	"PATH=/usr/sbin:/usr/bin:/sbin:/bin",
#ifdef MCVM_SANITIZE
	"ASAN_OPTIONS=detect_leaks=0",
#endif
	NULL
};

/*
 * The arguments every child is started with: mcvmd's own config file and
 * macros, and its -d, -v and -S.  argv has room for CHILD_ARGV_MAX; the
 * caller may add its own and the NULL.  Returns the count.
 */
int
child_argv(const char *binary, char **argv)
{
	size_t	 d;
	int	 argc = 0, i;

	argv[argc++] = (char *)binary;
	argv[argc++] = "-f";
	argv[argc++] = env->conf.conffile;
	for (d = 0; d < env->opts.ndefines; d++) {
		argv[argc++] = "-D";
		argv[argc++] = (char *)env->opts.defines[d];
	}
	if (env->opts.foreground)
		argv[argc++] = "-d";
	for (i = 0; i < env->opts.verbose && i < 2; i++)
		argv[argc++] = "-v";
	if (env->opts.sandbox_debug)
		argv[argc++] = "-S";
	return argc;
}

void
child_start(struct child *c)
{
	char		 path[PATH_MAX], *argv[CHILD_ARGV_MAX];
	int		 sp[2], argc;
	pid_t		 pid;

	child_path(c, path, sizeof(path));
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == -1)
		fatal("%s: socketpair", __func__);

	argc = child_argv(c->desc->binary, argv);
	argv[argc] = NULL;

	switch (pid = fork()) {
	case -1:
		fatal("%s: fork", __func__);
	case 0:
		if (dup2(sp[1], PROC_PARENT_SOCK_FILENO) == -1)
			_exit(127);
		if (close_range(PROC_PARENT_SOCK_FILENO + 1, ~0U, 0) == -1)
			_exit(127);
		execve(path, argv, child_envp);
		_exit(127);
	}
	close(sp[1]);
	if (fcntl(sp[0], F_SETFL, O_NONBLOCK) == -1)
		fatal("%s: fcntl", __func__);
	c->pid = pid;
	c->state = CHILD_STARTING;
	if (++c->gen == 0)
		c->gen = 1;
	if (imsgev_init(&c->iev, sp[0], c->desc->title, child_dispatch,
	    c) == -1)
		fatal("%s", __func__);
	c->iev_live = 1;
	log_debug("started %s, pid %d", c->desc->title, (int)pid);
}

static void
child_channel_close(struct child *c)
{
	int	 fd;

	if (!c->iev_live)
		return;
	fd = c->iev.ibuf.fd;
	imsgev_clear(&c->iev);
	close(fd);
	c->iev_live = 0;
}

static void
child_restart(int fd, short event, void *arg)
{
	struct child	*c = arg;

	if (env->shutting_down)
		return;
	c->restart_times[c->restarts % CHILD_RESTART_MAX] = time(NULL);
	c->restarts++;
	log_warnx("restarting %s (restart %u)", c->desc->title, c->restarts);
	child_start(c);
}

/*
 * A child died.  It is restarted at once unless it died too often within
 * the window.  Past that, netd and stored, whose crash loop means the
 * suite cannot be trusted to run, stop the suite.  frontd holds no VM and
 * is the process clients can reach: the VMs keep running, and frontd is
 * started again after a pause that doubles while it keeps dying.
 */
static void
child_exited(struct child *c, int status)
{
	struct timeval	 tv = { 0, 0 };
	time_t		 now = time(NULL);
	size_t		 i, recent = 0;

	if (WIFSIGNALED(status))
		log_warnx("%s (pid %d) killed by signal %d", c->desc->title,
		    (int)c->pid, WTERMSIG(status));
	else
		log_warnx("%s (pid %d) exited with status %d", c->desc->title,
		    (int)c->pid, WEXITSTATUS(status));
	child_channel_close(c);
	c->pid = 0;
	c->state = CHILD_DOWN;
	if (c->desc->id == PROC_FRONTD) {
		vm_front_lost();
		front_flush_lost();
	}
	if (env->shutting_down)
		return;

	for (i = 0; i < CHILD_RESTART_MAX; i++)
		if (c->restart_times[i] != 0 &&
		    now - c->restart_times[i] < CHILD_RESTART_WINDOW)
			recent++;
	if (recent < CHILD_RESTART_MAX)
		c->backoff = 0;
	else if (c->desc->id != PROC_FRONTD) {
		log_warnx("%s died %d times within %d s; stopping the suite",
		    c->desc->title, CHILD_RESTART_MAX, CHILD_RESTART_WINDOW);
		mcvmd_shutdown(1);
	} else {
		tv.tv_sec = CHILD_BACKOFF_MIN;
		for (i = 0; i < c->backoff && tv.tv_sec < CHILD_BACKOFF_MAX;
		    i++)
			tv.tv_sec *= 2;
		if (tv.tv_sec > CHILD_BACKOFF_MAX)
			tv.tv_sec = CHILD_BACKOFF_MAX;
		c->backoff++;
		log_warnx("%s died %d times within %d s; the VMs keep "
		    "running, and it is started again in %lld s",
		    c->desc->title, CHILD_RESTART_MAX, CHILD_RESTART_WINDOW,
		    (long long)tv.tv_sec);
	}
	evtimer_set(&c->restart_ev, child_restart, c);
	evtimer_add(&c->restart_ev, &tv);
}

static void
child_hello(struct child *c, struct imsg *imsg)
{
	struct msg_hello	 m;

	if (msg_hello_get(imsg, &m) == -1)
		fatalx("%s: malformed IMSG_HELLO", c->desc->title);
	if (m.version != MCVM_PROTO_VERSION)
		fatalx("%s speaks protocol %u, mcvmd %u: mixed installation",
		    c->desc->title, m.version, MCVM_PROTO_VERSION);
	if (c->state != CHILD_STARTING)
		fatalx("%s: second IMSG_HELLO", c->desc->title);
	c->state = CHILD_RUNNING;
	log_info("%s running, pid %d", c->desc->title, (int)c->pid);
}

/*
 * Everything a child sends.  The child is part of the suite: a message it
 * should not send means it is broken or compromised, and mcvmd stops.
 */
static void
child_dispatch(int fd, short event, void *arg)
{
	struct imsgev	*iev = arg;
	struct child	*c = iev->data;
	struct imsg	 imsg;
	int		 n;

	if (imsgev_read(iev, event) == -1) {
		if (errno != 0)
			log_warn("%s: channel", c->desc->title);
		/* The reaper restarts it; make sure it does die. */
		child_channel_close(c);
		if (c->pid > 0)
			(void)kill(c->pid, SIGKILL);
		return;
	}
	for (;;) {
		if ((n = imsg_get(&iev->ibuf, &imsg)) == -1)
			fatalx("%s: bad framing", c->desc->title);
		if (n == 0)
			break;
		log_debug("%s: %s", c->desc->title,
		    imsg_type_name(imsg.hdr.type));
		if (imsg.hdr.type == IMSG_HELLO) {
			child_hello(c, &imsg);
			if (c->desc->id == PROC_STORED)
				vm_store_up();
			else if (c->desc->id == PROC_NETD)
				vm_net_up();
		} else if (c->state != CHILD_RUNNING)
			fatalx("%s: %s before IMSG_HELLO", c->desc->title,
			    imsg_type_name(imsg.hdr.type));
		else if (c->desc->id == PROC_FRONTD)
			front_imsg(iev, &imsg);
		else if (c->desc->id == PROC_STORED)
			vm_store_imsg(&imsg);
		else if (c->desc->id == PROC_NETD)
			vm_net_imsg(&imsg);
		else
			fatalx("%s: unexpected %s", c->desc->title,
			    imsg_type_name(imsg.hdr.type));
		imsg_free(&imsg);
		if (!c->iev_live)
			return;
	}
}

void
mcvmd_reap(void)
{
	struct child	*c;
	pid_t		 pid;
	int		 status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if ((c = child_by_pid(pid)) != NULL)
			child_exited(c, status);
		else if (!vm_reap(pid, status))
			log_debug("reaped process %d", (int)pid);
	}
}

/*
 * SIGKILL to every process that is mcvmd's child now, its own or one
 * reparented to it; the kernel lists them in /proc.
 */
static void
mcvmd_kill_children(void)
{
	char	 path[64], buf[4096], *p, *ep;
	long	 pid;
	ssize_t	 n;
	int	 fd;

	(void)snprintf(path, sizeof(path), "/proc/self/task/%d/children",
	    (int)getpid());
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		log_warn("%s", path);
		return;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	for (p = buf; *p != '\0'; p = ep) {
		pid = strtol(p, &ep, 10);
		if (ep == p)
			break;
		if (pid > 1) {
			log_warnx("process %ld did not stop; killing it", pid);
			(void)kill((pid_t)pid, SIGKILL);
		}
	}
}

/*
 * Waits until mcvmd has no child left: the suite's processes, and every
 * descendant reparented to it (mcvmd is their subreaper, so a helper
 * whose parent died is waited for too).  After CHILD_STOP_TIMEOUT
 * seconds what is left gets SIGKILL, again every second; after as long
 * again mcvmd gives up on a process it cannot kill.
 */
static void
mcvmd_wait_children(void)
{
	struct timespec	 step = { 0, 50 * 1000 * 1000 };
	struct child	*c;
	pid_t		 pid;
	int		 status, tries;

	for (tries = 0; tries < CHILD_STOP_TIMEOUT * 20 * 2; tries++) {
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
			if ((c = child_by_pid(pid)) != NULL)
				c->pid = 0;
			else
				log_debug("reaped process %d", (int)pid);
		}
		if (pid == -1 && errno == ECHILD)
			return;
		if (pid == -1 && errno != EINTR) {
			log_warn("waitpid");
			return;
		}
		if (tries >= CHILD_STOP_TIMEOUT * 20 &&
		    (tries - CHILD_STOP_TIMEOUT * 20) % 20 == 0)
			mcvmd_kill_children();
		(void)nanosleep(&step, NULL);
	}
	log_warnx("a process of the suite could not be stopped");
}

/*
 * Stops every child: SIGTERM, a grace period, then SIGKILL, and reaps
 * every process before it goes on.  Removes the control socket and the
 * empty chroot directory, and exits.
 */
void
mcvmd_shutdown(int code)
{
	struct child	*c;
	int		 id;

	env->shutting_down = 1;
	vm_shutdown();
	for (id = PROC_PARENT + 1; id < PROC_MAX; id++) {
		c = child_by_id(id);
		if (c->pid > 0)
			(void)kill(c->pid, SIGTERM);
	}
	mcvmd_wait_children();
	for (id = PROC_PARENT + 1; id < PROC_MAX; id++) {
		c = child_by_id(id);
		if (c->pid > 0)
			log_warnx("%s (pid %d) could not be stopped",
			    c->desc->title, (int)c->pid);
		c->pid = 0;
		child_channel_close(c);
	}
	control_cleanup(&env->conf);
	state_close();
	(void)rmdir(env->emptydir);
	log_info("stopped");
	exit(code);
}
