/*
 * mcvmd: the root parent.  It reads the config, owns state.db, serves the
 * control socket, and fork+execs frontd, netd and stored, each with its end
 * of a socketpair on PROC_PARENT_SOCK_FILENO.  A crashed child is restarted
 * with a rate limit; past it, a crash loop of netd or stored stops the
 * suite (mcvmd exits non-zero), and frontd is restarted after a pause.
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

#define MCVMD_USAGE	"mcvmd [-dhnSv] [-D macro=value] [-f file]"
#define MCVMD_LOCK	"mcvmd.lock"	/* in the state directory */

struct mcvmd	*env;

static struct event	 ev_sigterm, ev_sigint, ev_sigchld, ev_sighup;

static void	 child_start(struct child *);
static void	 child_dispatch(int, short, void *);
static void	 mcvmd_shutdown(int);

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

/* Children are executed from the directory mcvmd itself runs from. */
static void
mcvmd_bindir(void)
{
	char	 self[PATH_MAX];
	ssize_t	 n;

	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) == -1)
		fatal("readlink /proc/self/exe");
	self[n] = '\0';
	(void)snprintf(env->bindir, sizeof(env->bindir), "%s", dirname(self));
}

/* Creates path (and missing parents, 0755) as a root-owned directory. */
static void
mcvmd_mkdir(const char *path, mode_t mode)
{
	struct stat	 st;
	char		 parent[PATH_MAX], *p;

	(void)snprintf(parent, sizeof(parent), "%s", path);
	for (p = parent + 1; (p = strchr(p, '/')) != NULL; p++) {
		*p = '\0';
		if (mkdir(parent, 0755) == -1 && errno != EEXIST)
			fatal("mkdir %s", parent);
		*p = '/';
	}
	if (mkdir(path, mode) == -1 && errno != EEXIST)
		fatal("mkdir %s", path);
	if (lstat(path, &st) == -1)
		fatal("%s", path);
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0)
		fatalx("%s must be a directory owned by root", path);
	if ((st.st_mode & 07777) != mode && chmod(path, mode) == -1)
		fatal("chmod %s", path);
}

/*
 * One mcvmd per state directory: an exclusive lock on a file in it, held
 * for the life of the process (flock follows the open file, so it
 * survives daemon(3); O_CLOEXEC keeps it from every exec'd child).  The
 * file holds the owner's pid, for the message a second mcvmd prints.
 */
static int
mcvmd_lock(const char *statedir)
{
	char	 path[PATH_MAX], buf[32];
	ssize_t	 n;
	int	 fd;

	if (snprintf(path, sizeof(path), "%s/%s", statedir, MCVMD_LOCK) >=
	    (int)sizeof(path))
		fatalx("state directory path too long");
	if ((fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC |
	    O_NOCTTY, 0600)) == -1)
		fatal("%s", path);
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return fd;
	if (errno != EWOULDBLOCK)
		fatal("flock %s", path);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (n > 0 && buf[0] != '\0' && strspn(buf, "0123456789") ==
	    strlen(buf))
		log_warnx("another mcvmd (pid %s) runs on state directory %s; "
		    "stop it first", buf, statedir);
	else
		log_warnx("another mcvmd runs on state directory %s (it holds "
		    "%s); stop it first", statedir, path);
	close(fd);
	return -1;
}

/* Records the pid that holds the lock (again after daemon(3)). */
static void
mcvmd_lock_pid(int fd)
{
	char	 buf[32];
	int	 n;

	n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) == -1 || pwrite(fd, buf, (size_t)n, 0) != n)
		log_warn("%s: cannot record the pid", MCVMD_LOCK);
}

/* Users named in the config must exist before anything starts. */
static int
mcvmd_check_users(const struct mcvm_config *conf)
{
	const char	*users[] = { conf->frontd_user, conf->stored_user };
	struct passwd	*pw;
	size_t		 i;
	int		 bad = 0;

	for (i = 0; i < sizeof(users) / sizeof(users[0]); i++) {
		if ((pw = getpwnam(users[i])) == NULL) {
			log_warnx("user %s does not exist (make install, or "
			    "etc/mcvm-users.sh, creates it)", users[i]);
			bad = 1;
		} else if (pw->pw_uid == 0) {
			log_warnx("user %s must not be root", users[i]);
			bad = 1;
		}
	}
	if (conf->control_group[0] != '\0' &&
	    getgrnam(conf->control_group) == NULL) {
		log_warnx("control group %s does not exist",
		    conf->control_group);
		bad = 1;
	}
	return bad ? -1 : 0;
}

static void
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

static void
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
	if (c->desc->id == PROC_FRONTD)
		vm_front_lost();
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

static void
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
static void
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

/* A fatal error stops the VMs and the suite as SIGTERM does. */
static void
mcvmd_fatal(void)
{
	if (env->shutting_down || getpid() != env->pid)
		return;
	log_warnx("fatal error: stopping the VMs and the suite");
	mcvmd_shutdown(1);
}

static void
mcvmd_sig(int sig, short event, void *arg)
{
	switch (sig) {
	case SIGTERM:
	case SIGINT:
		log_info("received signal %d, stopping", sig);
		mcvmd_shutdown(0);
		break;
	case SIGCHLD:
		mcvmd_reap();
		break;
	case SIGHUP:
		log_info("SIGHUP: configuration reload is not supported; "
		    "restart mcvmd");
		break;
	}
}

int
main(int argc, char *argv[])
{
	static struct mcvmd	 mcvmd;
	char			 path[PATH_MAX];
	int			 id, lockfd;

	env = &mcvmd;
	if (proc_getopt(argc, argv, &env->opts, MCVMD_USAGE) == -1)
		exit(1);
	log_init(1, LOG_DAEMON);
	log_procinit("mcvmd");
	log_setverbose(env->opts.verbose);

	config_defaults(&env->conf);
	if (proc_apply_defines(&env->opts) == -1 ||
	    config_parse(env->opts.conffile, &env->conf) == -1)
		exit(1);
	if (mcvmd_check_users(&env->conf) == -1)
		exit(1);
	if (env->opts.noaction) {
		fprintf(stderr, "configuration OK\n");
		exit(0);
	}
	if (geteuid() != 0)
		fatalx("need root privileges");

	mcvmd_bindir();
	for (id = PROC_PARENT + 1; id < PROC_MAX; id++) {
		env->children[id].desc = &proc_table[id];
		child_path(&env->children[id], path, sizeof(path));
		if (access(path, X_OK) == -1)
			fatal("%s", path);
	}
	/* The lock first: a second mcvmd touches nothing of the first's. */
	mcvmd_mkdir(env->conf.statedir, 0711);
	if ((lockfd = mcvmd_lock(env->conf.statedir)) == -1)
		exit(1);
	mcvmd_lock_pid(lockfd);
	mcvmd_mkdir(env->conf.rundir, 0755);
	if (snprintf(env->emptydir, sizeof(env->emptydir), "%s/%s",
	    env->conf.rundir, MCVM_EMPTY_DIR) >= (int)sizeof(env->emptydir))
		fatalx("run directory path too long");
	mcvmd_mkdir(env->emptydir, 0555);

	if (state_open(env->conf.statedir) == -1)
		fatalx("cannot open the state database");
	vm_init();
	if (control_init(&env->conf) == -1)
		fatalx("cannot create the control socket");

	if (!env->opts.foreground) {
		if (daemon(0, 0) == -1)
			fatal("daemon");
		log_init(0, LOG_DAEMON);
		mcvmd_lock_pid(lockfd);
	}
	/* Orphans of the suite (a helper whose parent died) come to mcvmd,
	 * which waits for every one before it exits. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == -1)
		fatal("prctl(PR_SET_CHILD_SUBREAPER)");
	log_info("starting (schema %d, protocol %d)", state_schema_version(),
	    MCVM_PROTO_VERSION);

	event_init();
	env->pid = getpid();
	log_fatal_hook(mcvmd_fatal);
	signal_set(&ev_sigterm, SIGTERM, mcvmd_sig, NULL);
	signal_set(&ev_sigint, SIGINT, mcvmd_sig, NULL);
	signal_set(&ev_sigchld, SIGCHLD, mcvmd_sig, NULL);
	signal_set(&ev_sighup, SIGHUP, mcvmd_sig, NULL);
	signal_add(&ev_sigterm, NULL);
	signal_add(&ev_sigint, NULL);
	signal_add(&ev_sigchld, NULL);
	signal_add(&ev_sighup, NULL);
	(void)signal(SIGPIPE, SIG_IGN);

	vm_timers_init();
	for (id = PROC_PARENT + 1; id < PROC_MAX; id++)
		child_start(&env->children[id]);
	control_listen();

	event_dispatch();
	mcvmd_shutdown(1);
	return 1;
}
