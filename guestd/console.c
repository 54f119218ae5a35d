/*
 * The console: a login shell for the workspace user on tty1 when the
 * guest has a display, started again whenever it exits, and the devices
 * that user is given at boot (tty1, ttyS0 and the input event devices).
 *
 * The shell runs in a cgroup of its own, GUESTD_CONSOLE_CGROUP, beneath
 * the jobs' subtree: it has a job's limits, freezing the jobs freezes it,
 * and the jobs' memory limit counts it, but it is no job.  While the jobs
 * are frozen it is not started again.  Its starts are at least
 * CONSOLE_RESTART_MS apart; one that ends sooner than CONSOLE_STEADY_MS
 * after its start doubles the wait before the next, up to
 * CONSOLE_BACKOFF_MAX_MS.
 */
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "guestd.h"
#include "rdfile.h"

#define CONSOLE_TTY		"/dev/tty1"
#define CONSOLE_SERIAL		"/dev/ttyS0"
#define CONSOLE_INPUT		"/dev/input"
#define CONSOLE_VTCONSOLE	"/sys/class/vtconsole"
#define CONSOLE_DEV_MODE	0600
#define CONSOLE_RESTART_MS	1000	/* between two starts, at least */
#define CONSOLE_STEADY_MS	10000	/* a shell that lived this long */
#define CONSOLE_BACKOFF_MAX_MS	30000
#define CONSOLE_FIRST_MS	1000	/* after the start: the agent first */

static int	 enabled;
static pid_t	 shell_pid;	/* 0: none */
static uint64_t	 started;	/* when shell_pid started */
static uint64_t	 due;		/* when to start the next */
static uint32_t	 backoff_ms = CONSOLE_RESTART_MS;

/* A job's environment (jobs.c), on a terminal that is a VT. */
static char *console_env[] = {
	GUESTD_ENV_USER,
	"TERM=linux",
	NULL,
};

/*
 * Gives the character device at path to the workspace user, never
 * through a symbolic link; one that is absent is left alone.  The node
 * is opened O_PATH, so that no driver sees an open.
 */
static void
dev_give(const char *path)
{
	struct stat	 st;
	char		 proc[64];
	int		 fd;

	if ((fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		if (errno != ENOENT)
			glog("%s: %s", path, strerror(errno));
		return;
	}
	if (fstat(fd, &st) == -1 || !S_ISCHR(st.st_mode)) {
		glog("%s: not a character device", path);
		close(fd);
		return;
	}
	/* No fchmod on an O_PATH descriptor: its /proc link is the node. */
	(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (fchownat(fd, "", AGENT_JOB_UID, AGENT_JOB_GID,
	    AT_EMPTY_PATH) == -1 || chmod(proc, CONSOLE_DEV_MODE) == -1)
		glog("%s: %s", path, strerror(errno));
	close(fd);
}

/*
 * At boot, before any job runs: the workspace user gets tty1, the
 * serial console and every input event device, owner and mode 0600.
 */
void
console_devices(void)
{
	char		 path[PATH_MAX];
	struct dirent	*de;
	DIR		*d;

	dev_give(CONSOLE_TTY);
	dev_give(CONSOLE_SERIAL);
	if ((d = opendir(CONSOLE_INPUT)) == NULL)
		return;		/* no input devices */
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "event", 5) != 0)
			continue;
		(void)snprintf(path, sizeof(path), CONSOLE_INPUT "/%s",
		    de->d_name);
		dev_give(path);
	}
	closedir(d);
}

/*
 * Whether the VT console is on a display: a console driver bound to the
 * VTs that found one.  sysfs names the driver after "(S) " or "(M) ".
 * Under QEMU, with -device VGA the VGA text console says "VGA+"; with no
 * display device it still binds and says "*CGA": its name begins with
 * '*' when the BIOS told it of no adapter (an assumed MDA or CGA).  The
 * kernel without any VT console driver has the "dummy device".
 */
static int
has_display(void)
{
	char		 path[PATH_MAX], buf[128], *name;
	struct dirent	*de;
	DIR		*d;
	int		 yes = 0;

	if ((d = opendir(CONSOLE_VTCONSOLE)) == NULL)
		return 0;
	while (!yes && (de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "vtcon", 5) != 0)
			continue;
		(void)snprintf(path, sizeof(path), CONSOLE_VTCONSOLE "/%s/bind",
		    de->d_name);
		if (read_small_file(path, buf, sizeof(buf)) == -1 ||
		    buf[0] != '1')
			continue;
		(void)snprintf(path, sizeof(path), CONSOLE_VTCONSOLE "/%s/name",
		    de->d_name);
		if (read_small_file(path, buf, sizeof(buf)) == -1)
			continue;
		buf[strcspn(buf, "\n")] = '\0';
		glog("console: %s is %s", de->d_name, buf);
		name = buf;
		if (name[0] == '(' && name[1] != '\0' && name[2] == ')' &&
		    name[3] == ' ')
			name += 4;
		if (name[0] != '*' && name[0] != '\0' &&
		    strcmp(name, "dummy device") != 0)
			yes = 1;
	}
	closedir(d);
	return yes;
}

/*
 * Once the root file system is writable (after a template's hold): with
 * a display, tty1's shell starts CONSOLE_FIRST_MS later, from the serve
 * loop, so that its fork and exec (a tenth of a second under emulation)
 * do not delay the agent's first answer.
 */
void
console_init(void)
{
	if (!has_display()) {
		glog("console: no display, no shell on " CONSOLE_TTY);
		return;
	}
	if (ws_root == -1 || jobproc_cgroup_make(GUESTD_CONSOLE_CGROUP) == -1) {
		glog("console: no shell on " CONSOLE_TTY ": %s",
		    ws_root == -1 ? "no " AGENT_WORKSPACE : strerror(errno));
		return;
	}
	enabled = 1;
	due = now_ms() + CONSOLE_FIRST_MS;
}

/* The terminal as a login would find it: the user's, in canonical mode. */
static int
tty_open(void)
{
	struct termios	 t;
	int		 fd;

	if ((fd = open(CONSOLE_TTY, O_RDWR | O_NOCTTY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return -1;
	if (!isatty(fd) || fchown(fd, AGENT_JOB_UID, AGENT_JOB_GID) == -1 ||
	    fchmod(fd, CONSOLE_DEV_MODE) == -1) {
		close(fd);
		errno = ENOTTY;
		return -1;
	}
	if (tcgetattr(fd, &t) == 0) {
		t.c_iflag |= ICRNL | IXON;
		t.c_oflag |= OPOST | ONLCR;
		t.c_lflag |= ICANON | ECHO | ECHOE | ECHOK | ISIG | IEXTEN;
		(void)tcsetattr(fd, TCSANOW, &t);
	}
	return fd;
}

static void
backoff_grow(void)
{
	if (backoff_ms < CONSOLE_BACKOFF_MAX_MS / 2)
		backoff_ms *= 2;
	else
		backoff_ms = CONSOLE_BACKOFF_MAX_MS;
}

static void
shell_start(uint64_t now)
{
	struct child_args	 sp;
	char			*argv[] = { "-bash", NULL };
	int			 fd;
	pid_t			 pid;

	started = now;
	if ((fd = tty_open()) == -1) {
		glog("console: " CONSOLE_TTY ": %s", strerror(errno));
		goto retry;
	}
	memset(&sp, 0, sizeof(sp));
	(void)snprintf(sp.procs, sizeof(sp.procs), "%s/cgroup.procs",
	    GUESTD_CONSOLE_CGROUP);
	sp.pin = sp.pout = sp.perr = fd;
	sp.cwdfd = ws_root;
	sp.ctty = 1;
	sp.file = "/bin/bash";
	sp.argv = argv;
	sp.cmdfd = -1;
	pid = jobproc_spawn(&sp, console_env);
	close(fd);
	if (pid == -1) {
		glog("console: clone: %s", strerror(errno));
		goto retry;
	}
	shell_pid = pid;	/* one that failed to exec is reaped too */
	if (sp.err != 0)
		glog("console: /bin/bash: %s", strerror(sp.err));
	return;
retry:
	due = now + backoff_ms;
	backoff_grow();
}

/*
 * Starts tty1's shell when it is due.  Returns the milliseconds until
 * the next start, or -1 if none is waiting.
 */
int
console_timeout(uint64_t now)
{
	if (!enabled || shell_pid != 0 || jobs_frozen())
		return -1;
	if (now < due)
		return (int)(due - now);
	shell_start(now);
	if (shell_pid != 0)
		return -1;
	return (int)(due - now);
}

/* Whether pid was tty1's shell; if so its next start is set. */
int
console_reaped(pid_t pid, int status)
{
	uint64_t	 now, lived;

	if (shell_pid == 0 || pid != shell_pid)
		return 0;
	shell_pid = 0;
	now = now_ms();
	lived = now - started;
	if (lived >= CONSOLE_STEADY_MS)
		backoff_ms = CONSOLE_RESTART_MS;
	due = started + backoff_ms;
	if (due < now)
		due = now;
	if (WIFSIGNALED(status))
		glog("console: the shell on " CONSOLE_TTY " was killed by "
		    "signal %d after %llu ms; it starts again in %llu ms",
		    WTERMSIG(status), (unsigned long long)lived,
		    (unsigned long long)(due - now));
	else
		glog("console: the shell on " CONSOLE_TTY " exited with %d "
		    "after %llu ms; it starts again in %llu ms",
		    WEXITSTATUS(status), (unsigned long long)lived,
		    (unsigned long long)(due - now));
	if (lived < CONSOLE_STEADY_MS)
		backoff_grow();
	return 1;
}
