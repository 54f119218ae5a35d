/*
 * mcvmd's start and its signals: it reads the config, checks the users it
 * runs children as, takes the state directory's lock, opens state.db and
 * the control socket, starts the children (mcvmd.c) and serves events
 * until a signal or a fatal error stops the suite.
 */
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>

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
#include <unistd.h>

#include "log.h"
#include "mcvmd.h"
#include "vm.h"
#include "task.h"

#define MCVMD_USAGE	"mcvmd [-dhnSv] [-D macro=value] [-f file]"
#define MCVMD_LOCK	"mcvmd.lock"	/* in the state directory */

static struct event	 ev_sigterm, ev_sigint, ev_sigchld, ev_sighup;

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
		/* The VMs hibernate first; a second signal does not wait. */
		if (!vm_draining() && vm_hibernate_all() > 0) {
			log_info("received signal %d: hibernating the VMs, "
			    "then stopping", sig);
			break;
		}
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
	if (task_recover() == -1)
		fatalx("cannot settle the tasks of the last run");
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
	vm_attach_reload();	/* its monitors are this process's children */
	control_listen();

	event_dispatch();
	mcvmd_shutdown(1);
	return 1;
}
