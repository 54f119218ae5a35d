/*
 * mcvm-guestd: PID 1 of an mcvm guest.  Mounts the kernel filesystems,
 * brings up the network interfaces, reaps every orphan and serves the
 * agent protocol on the virtio-serial port org.mcvm.agent.0.
 */
#include <sys/ioctl.h>
#include <linux/random.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/utsname.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "guestd.h"
#include "netcfg.h"
#include "rdfile.h"

#define OS_RELEASE	"/etc/os-release"
#define PORT_WAIT_MS	10000	/* for the agent port to appear at boot */

int		 ws_root = -1;
static int	 log_fd = -1;
static int	 console_fd = -1;	/* /dev/console, non-blocking */
static char	 os_name[AGENT_INFO_STR_MAX];
static char	 kernel_name[AGENT_INFO_STR_MAX];

void
glog(const char *fmt, ...)
{
	char	 buf[GUESTD_LOG_MAX];
	va_list	 ap;
	ssize_t	 w;
	int	 n, m;

	n = snprintf(buf, sizeof(buf), "mcvm-guestd: ");
	va_start(ap, fmt);
	m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	n += m;
	if ((size_t)n > sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	/* A line that fails is lost: there is nowhere left to say it. */
	w = write(log_fd != -1 ? log_fd : STDERR_FILENO, buf, (size_t)n);
	/* And so is one the console has no room for now. */
	if (console_fd != -1)
		w = write(console_fd, buf, (size_t)n);
	(void)w;
}

uint64_t
now_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
mount_one(const char *src, const char *dst, const char *type,
    unsigned long flags, const char *data)
{
	(void)mkdir(dst, 0755);
	if (mount(src, dst, type, flags, data) == -1 && errno != EBUSY)
		glog("mount %s on %s: %s", type, dst, strerror(errno));
}

static void
link_one(const char *target, const char *path)
{
	if (symlink(target, path) == -1 && errno != EEXIST)
		glog("symlink %s: %s", path, strerror(errno));
}

static void
mount_all(void)
{
	const unsigned long nosuid = MS_NOSUID | MS_NODEV | MS_NOEXEC;

	mount_one("proc", "/proc", "proc", nosuid, NULL);
	mount_one("sysfs", "/sys", "sysfs", nosuid, NULL);
	mount_one("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755");
	mount_one("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
	    "mode=0620,ptmxmode=0666");
	mount_one("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
	    "mode=1777");
	/* favordynmods (Linux 6.0): a job's child joins its cgroup at once. */
	(void)mkdir(GUESTD_CGROUP_ROOT, 0755);
	if (mount("cgroup2", GUESTD_CGROUP_ROOT, "cgroup2", nosuid,
	    "nsdelegate,favordynmods") == -1)
		mount_one("cgroup2", GUESTD_CGROUP_ROOT, "cgroup2", nosuid,
		    "nsdelegate");
	mount_one("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
	mount_one("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");
	link_one("/proc/self/fd", "/dev/fd");
	link_one("/proc/self/fd/0", "/dev/stdin");
	link_one("/proc/self/fd/1", "/dev/stdout");
	link_one("/proc/self/fd/2", "/dev/stderr");
}

static void
sysctl_set(const char *path, const char *value)
{
	int	 fd;

	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return;
	if (write(fd, value, strlen(value)) == -1)
		glog("%s: %s", path, strerror(errno));
	close(fd);
}

/* Hardening the kernel would otherwise leave to an init system. */
static void
sysctls(void)
{
	sysctl_set("/proc/sys/fs/protected_hardlinks", "1");
	sysctl_set("/proc/sys/fs/protected_symlinks", "1");
	sysctl_set("/proc/sys/fs/protected_fifos", "1");
	sysctl_set("/proc/sys/fs/protected_regular", "2");
	sysctl_set("/proc/sys/kernel/dmesg_restrict", "1");
	sysctl_set("/proc/sys/kernel/kptr_restrict", "1");
}

static void
set_hostname(void)
{
	char	 name[HOST_NAME_MAX + 1];
	FILE	*f;

	strcpy(name, GUESTD_HOSTNAME);
	if ((f = fopen("/etc/hostname", "re")) != NULL) {
		if (fgets(name, sizeof(name), f) == NULL)
			strcpy(name, GUESTD_HOSTNAME);
		fclose(f);
	}
	name[strcspn(name, " \t\n")] = '\0';
	if (name[0] == '\0')
		strcpy(name, GUESTD_HOSTNAME);
	if (sethostname(name, strlen(name)) == -1)
		glog("sethostname: %s", strerror(errno));
}

static void
link_up(int s, const char *name)
{
	struct ifreq	 ifr;

	memset(&ifr, 0, sizeof(ifr));
	if (strlen(name) >= sizeof(ifr.ifr_name))
		return;
	strcpy(ifr.ifr_name, name);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == -1) {
		glog("SIOCGIFFLAGS %s: %s", name, strerror(errno));
		return;
	}
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) == -1)
		glog("SIOCSIFFLAGS %s: %s", name, strerror(errno));
}

/* lo and every NIC go up; their addresses come from the host later. */
static void
network_up(void)
{
	struct dirent	*de;
	DIR		*d;
	int		 s;

	if ((s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1) {
		glog("socket: %s", strerror(errno));
		return;
	}
	link_up(s, "lo");
	if ((d = opendir("/sys/class/net")) != NULL) {
		while ((de = readdir(d)) != NULL)
			if (de->d_name[0] != '.' &&
			    strcmp(de->d_name, "lo") != 0)
				link_up(s, de->d_name);
		closedir(d);
	}
	close(s);
}

static void
read_os_release(void)
{
	char	 line[512], *v;
	size_t	 n;
	FILE	*f;

	snprintf(os_name, sizeof(os_name), "unknown");
	if ((f = fopen(OS_RELEASE, "re")) == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "PRETTY_NAME=", 12) != 0)
			continue;
		v = line + 12;
		v[strcspn(v, "\n")] = '\0';
		n = strlen(v);
		if (n >= 2 && (v[0] == '"' || v[0] == '\'') &&
		    v[n - 1] == v[0]) {
			v[n - 1] = '\0';
			v++;
		}
		snprintf(os_name, sizeof(os_name), "%.255s", v);
		break;
	}
	fclose(f);
}

void
guest_info(struct agent_msg *m)
{
	static uint8_t	 states[AGENT_JOBS_TOTAL_MAX * AGENT_JOBSTATE_LEN];
	struct timespec	 ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	m->u.info.os = os_name;
	m->u.info.kernel = kernel_name;
	m->u.info.agent_version = GUESTD_VERSION;
	m->u.info.uptime_ms = (uint64_t)ts.tv_sec * 1000 +
	    (uint64_t)ts.tv_nsec / 1000000;
	m->u.info.jobs_active = jobs_busy();
	m->u.info.jobs_total = jobs_states(states);
	m->u.info.job_states = states;
	m->u.info.jobs_active_max = AGENT_JOBS_ACTIVE_MAX;
	m->u.info.jobs_total_max = AGENT_JOBS_TOTAL_MAX;
	m->u.info.frozen = jobs_frozen() ? 1 : 0;
}

void
guest_poweroff(void)
{
	glog("powering off");
	jobs_kill_all();
	sync();
	(void)umount2("/", MS_RDONLY);
	/*
	 * A reset, not a power-off: the guest runs without ACPI, and mcvm
	 * runs QEMU with -no-reboot, so a reset ends the VM.
	 */
	reboot(RB_AUTOBOOT);
	glog("reboot: %s", strerror(errno));
	for (;;)
		pause();
}

static int
signals_init(void)
{
	sigset_t	 mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGPWR);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGUSR2);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
}

static void
signal_event(int sfd)
{
	struct signalfd_siginfo	 si;

	while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGCHLD:
			break;
		case SIGPWR:
		case SIGINT:	/* ctrl-alt-del */
			guest_poweroff();
		default:
			break;
		}
	}
	jobs_reap();
}

static void
stdio_init(void)
{
	int	 fd;

	log_fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
	/*
	 * The log goes to the serial console too, which the kernel's rate
	 * limit on /dev/kmsg and its quiet log level do not reach.  Opened
	 * as /dev/console, it survives a hangup of ttyS0 (a session that
	 * made ttyS0 its terminal ending), which only opens of ttyS0 see.
	 */
	console_fd = open("/dev/console", O_WRONLY | O_NOCTTY | O_NONBLOCK |
	    O_CLOEXEC);
	if ((fd = open("/dev/null", O_RDWR)) == -1)
		return;
	dup2(fd, STDIN_FILENO);
	if (fcntl(STDOUT_FILENO, F_GETFD) == -1)
		dup2(fd, STDOUT_FILENO);
	if (fcntl(STDERR_FILENO, F_GETFD) == -1)
		dup2(fd, STDERR_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
}

static void
wait_for_port(void)
{
	struct timespec	 step = { 0, GUESTD_POLL_STEP_MS * 1000000L };
	uint64_t	 deadline = now_ms() + PORT_WAIT_MS;

	while (port_open() == -1) {
		if (now_ms() >= deadline) {
			glog("no virtio port named " AGENT_PORT_NAME);
			return;
		}
		nanosleep(&step, NULL);
	}
}

/* Whether the kernel command line holds the word w. */
static int
cmdline_has(const char *w)
{
	char	 buf[4096], *p, *save;

	if (read_small_file("/proc/cmdline", buf, sizeof(buf)) == -1)
		return 0;
	for (p = strtok_r(buf, " \n", &save); p != NULL;
	    p = strtok_r(NULL, " \n", &save))
		if (strcmp(p, w) == 0)
			return 1;
	return 0;
}

/* The value of key=value on the kernel command line; -1 if absent. */
int
cmdline_value(const char *key, char *out, size_t len)
{
	char	 buf[4096], *p, *save;
	size_t	 n = strlen(key);

	if (read_small_file("/proc/cmdline", buf, sizeof(buf)) == -1)
		return -1;
	for (p = strtok_r(buf, " \n", &save); p != NULL;
	    p = strtok_r(NULL, " \n", &save))
		if (strncmp(p, key, n) == 0 && p[n] == '=' &&
		    strlen(p + n + 1) < len) {
			strcpy(out, p + n + 1);
			return 0;
		}
	return -1;
}

/*
 * The VM's host name and machine id, where they differ from the guest's:
 * a VM restored from a template has the template's, a VM booted afresh
 * the image's.  They live in GUESTD_IDENTITY_DIR, a tmpfs the image's
 * /etc/hostname, /etc/machine-id and /etc/hosts link into, as they are
 * the host's to give at each start, and as a restored guest's first
 * write to its disk costs a tenth of a second of code translated afresh
 * under emulation.  The hosts file follows the name while it is the one
 * written here (GUESTD_HOSTS); one the guest changed is left alone.
 */
int
guest_set_identity(const char *hostname, const char *machine_id)
{
	char	 now[HOST_NAME_MAX + 1], text[256], old[256];

	if (mkdir(GUESTD_IDENTITY_DIR, 0755) == -1 && errno != EEXIST)
		return -1;
	if (gethostname(now, sizeof(now)) == -1)
		now[0] = '\0';
	now[sizeof(now) - 1] = '\0';
	if (strcmp(now, hostname) != 0) {
		(void)snprintf(old, sizeof(old), GUESTD_HOSTS, now);
		if (read_small_file(GUESTD_IDENTITY_DIR "/hosts", text,
		    sizeof(text)) == -1 || strcmp(text, old) == 0) {
			(void)snprintf(text, sizeof(text), GUESTD_HOSTS,
			    hostname);
			if (guest_file_replace(GUESTD_IDENTITY_DIR "/hosts",
			    text) == -1)
				return -1;
		}
		(void)snprintf(text, sizeof(text), "%s\n", hostname);
		if (sethostname(hostname, strlen(hostname)) == -1 ||
		    guest_file_replace(GUESTD_IDENTITY_DIR "/hostname",
		    text) == -1)
			return -1;
	}
	(void)snprintf(text, sizeof(text), "%s\n", machine_id);
	if (read_small_file(GUESTD_IDENTITY_DIR "/machine-id", old,
	    sizeof(old)) == -1 || strcmp(old, text) != 0)
		return guest_file_replace(GUESTD_IDENTITY_DIR "/machine-id",
		    text);
	return 0;
}

int
guest_set_time(int64_t sec, uint32_t nsec)
{
	struct timespec	 ts;

	ts.tv_sec = (time_t)sec;
	ts.tv_nsec = (long)nsec;
	return clock_settime(CLOCK_REALTIME, &ts);
}

/*
 * Credits the host's random bytes to the kernel's input pool and reseeds
 * its generator from it at once: VMs restored from one checkpoint would
 * otherwise share the generator's state until its next scheduled reseed.
 */
int
guest_seed(const uint8_t *seed)
{
	struct {
		struct rand_pool_info	 info;
		uint8_t			 buf[AGENT_SEED_LEN];
	} e;
	int	 fd, err = 0;

	e.info.entropy_count = AGENT_SEED_LEN * 8;
	e.info.buf_size = AGENT_SEED_LEN;
	memcpy(e.buf, seed, AGENT_SEED_LEN);
	if ((fd = open("/dev/urandom", O_WRONLY | O_CLOEXEC)) == -1)
		err = errno;
	else {
		if (ioctl(fd, RNDADDENTROPY, &e.info) == -1 ||
		    ioctl(fd, RNDRESEEDCRNG) == -1)
			err = errno;
		close(fd);
	}
	explicit_bzero(&e, sizeof(e));
	errno = err;
	return err != 0 ? -1 : 0;
}

/*
 * Applies a NET_CONFIG request.  Returns 0, or an AGENT_ERR_* code with
 * a message (and errno).
 */
int
guest_net_config(const struct agent_msg *req, char *err, size_t len)
{
	struct netcfg	 nc;
	char		 why[NETCFG_ERR_MAX];

	if (netcfg_parse(req->u.net_config.address,
	    req->u.net_config.gateway, req->u.net_config.resolver,
	    req->u.net_config.mac, &nc) == -1) {
		snprintf(err, len, "bad network configuration");
		errno = 0;
		return AGENT_ERR_INVAL;
	}
	if (netcfg_apply(&nc, why, sizeof(why)) == -1) {
		snprintf(err, len, "%s", why);
		return AGENT_ERR_IO;
	}
	return 0;
}

/*
 * A template (mcvm.hold) holds here: the host sees the agent port open
 * and checkpoints the guest.  Each VM restored from the checkpoint has
 * its own disk, a copy of the template's as it was then, and is released
 * by one line on the port.  A root still mounted read-only (an image of
 * before) becomes writable then.
 */
static void
hold(void)
{
	struct statvfs	 sv;

	/*
	 * The spare shell is checkpointed waiting for its command, and the
	 * page cache with the shell's files: each VM restored would start
	 * the shell itself otherwise, through code translated afresh.
	 */
	jobs_spare_settle(GUESTD_SPARE_SETTLE_MS);
	glog("holding for a checkpoint");
	if (port_hold() == -1) {
		glog("holding on the agent port: %s", strerror(errno));
		guest_poweroff();
	}
	if (statvfs("/", &sv) == 0 && (sv.f_flag & ST_RDONLY) &&
	    mount(NULL, "/", NULL, MS_REMOUNT, NULL) == -1) {
		glog("remount / read-write: %s", strerror(errno));
		guest_poweroff();
	}
}

static void
serve(int sfd)
{
	static struct pollfd	 pfd[GUESTD_POLLFDS_MAX];
	static struct job	*who[GUESTD_POLLFDS_MAX];
	static int		 kind[GUESTD_POLLFDS_MAX];
	uint64_t		 now, retry;
	size_t			 n, i, first_job;
	int			 wait, tmo, port, rv, answered;

	for (;;) {
		now = now_ms();
		if (chan_poweroff_pending())
			guest_poweroff();
		wait = jobs_timeout(now);
		if ((tmo = console_timeout(now)) != -1 &&
		    (wait == -1 || tmo < wait))
			wait = tmo;
		tmo = chan_waits(now, &answered);
		/* Sent now, before the ended jobs' cgroups are removed. */
		if (answered)
			port_send(now);
		jobs_tidy();
		if (tmo != -1 && (wait == -1 || tmo < wait))
			wait = tmo;
		n = 0;
		pfd[n].fd = sfd;
		pfd[n++].events = POLLIN;
		port = port_pollfd(&pfd[n], now);
		if (port)
			n++;
		else if ((retry = port_retry_at_ms()) != 0) {
			tmo = retry > now ? (int)(retry - now) : 0;
			if (wait == -1 || tmo < wait)
				wait = tmo;
		}
		first_job = n;
		n += jobs_pollfds(pfd + n, GUESTD_POLLFDS_MAX - n, who + n,
		    kind + n);
		rv = poll(pfd, n, wait);
		if (rv == -1 && errno != EINTR) {
			glog("poll: %s", strerror(errno));
			continue;
		}
		if (rv <= 0)
			continue;
		now = now_ms();
		for (i = first_job; i < n; i++)
			if (pfd[i].revents)
				jobs_event(who[i], kind[i], pfd[i].revents);
		if (pfd[0].revents)
			signal_event(sfd);
		if (port && pfd[1].revents)
			port_event(pfd[1].revents, now);
		/* After the answers: the spares' commands. */
		jobs_release();
	}
}

int
main(int argc, char *argv[])
{
	struct utsname	 u;
	char		 banner[512];
	int		 sfd;

	if (getpid() != 1) {
		fprintf(stderr, "usage: %s runs as PID 1 of an mcvm guest\n",
		    argv[0]);
		return 1;
	}
	umask(022);
	mount_all();
	stdio_init();
	glog("version %s starting", GUESTD_VERSION);
	sysctls();
	console_devices();
	set_hostname();
	network_up();
	read_os_release();
	if (uname(&u) == 0)
		snprintf(kernel_name, sizeof(kernel_name), "%s %s %s",
		    u.sysname, u.release, u.version);
	if (setenv("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", 1) == -1)
		glog("setenv: %s", strerror(errno));
	if ((sfd = signals_init()) == -1)
		glog("signalfd: %s", strerror(errno));
	if (jobproc_init() == -1)
		glog("jobs will not be contained");
	if ((ws_root = open(AGENT_WORKSPACE, O_PATH | O_DIRECTORY |
	    O_CLOEXEC)) == -1)
		glog("open " AGENT_WORKSPACE ": %s", strerror(errno));
	wait_for_port();
	if (cmdline_has("mcvm.hold"))
		hold();
	/* Not before: a template's checkpoint holds no half-started shell. */
	console_init();
	/*
	 * The kernel's banner, on the serial console of every VM: one
	 * restored from a template never printed its own there.
	 */
	if (read_small_file("/proc/version", banner, sizeof(banner)) != -1) {
		banner[strcspn(banner, "\n")] = '\0';
		glog("kernel: %s", banner);
	}
	glog("ready");
	serve(sfd);
	return 0;
}
