/*
 * mcvm-vmm: the monitor of one VM.  mcvmd starts it as root with its imsg
 * socket on fd 3, a socket connected to QEMU's QMP monitor on fd 4 and one
 * connected to the guest agent's virtio-serial chardev on fd 5, and with
 * -R the RAM file QEMU maps copy-on-write on fd 6 (read-only: relative
 * checkpoints leave out what it holds).  It drops
 * to the VM's uid in the empty directory, loads its seccomp filter, then
 * speaks QMP and the agent protocol (mcvm's, or with -a qga
 * qemu-guest-agent's) and relays typed results to mcvmd.
 *
 * QEMU and the guest are untrusted: a malformed message from either costs
 * that channel (and is reported), never the monitor's sanity.  mcvmd is
 * trusted: a malformed message from it is fatal.
 */
#include <sys/types.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <event.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "guest.h"
#include "log.h"
#include "privdrop.h"
#include "proc.h"
#include "validate.h"
#include "vmm.h"

#define VMM_USAGE	"mcvm-vmm [-dhSv] [-a mcvm | qga] [-D macro=value] " \
			"[-f file] [-H hostname -M machine-id] " \
			"[-m hold | restore] [-R] -i vm-id -u uid -g gid"

static struct {
	struct mcvm_config	 conf;
	struct proc_opts	 opts;
	const char		*vmid;
	const char		*hostname;
	const char		*machine_id;
	enum vmm_mode		 mode;
	long long		 uid, gid;
	int			 ram;
} start;

static int
vmm_parse_id(const char *s, long long *v)
{
	char		*end;
	unsigned long	 n;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	n = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || n == 0 || n > UINT32_MAX - 1)
		return -1;
	*v = (long long)n;
	return 0;
}

static int
vmm_option(int ch, const char *arg, void *unused)
{
	switch (ch) {
	case 'a':
		if (strcmp(arg, "mcvm") == 0)
			vmm_guest = &vmm_guest_agent;
		else if (strcmp(arg, "qga") == 0)
			vmm_guest = &vmm_guest_qga;
		else
			return -1;
		return 0;
	case 'i':
		if (!valid_id(arg, "vm-"))
			return -1;
		start.vmid = arg;
		return 0;
	case 'H':
		if (!agent_valid_hostname(arg))
			return -1;
		start.hostname = arg;
		return 0;
	case 'M':
		if (!agent_valid_machine_id(arg))
			return -1;
		start.machine_id = arg;
		return 0;
	case 'u':
		return vmm_parse_id(arg, &start.uid);
	case 'g':
		return vmm_parse_id(arg, &start.gid);
	case 'R':
		start.ram = 1;
		return 0;
	case 'm':
		if (strcmp(arg, "hold") == 0)
			start.mode = VMM_MODE_HOLD;
		else if (strcmp(arg, "restore") == 0)
			start.mode = VMM_MODE_RESTORE;
		else
			return -1;
		return 0;
	}
	return -1;
}

static void
vmm_check_fd(int fd, const char *what)
{
	struct stat	 st;
	int		 type;
	socklen_t	 len = sizeof(type);

	if (fstat(fd, &st) == -1 || !S_ISSOCK(st.st_mode) ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == -1 ||
	    type != SOCK_STREAM)
		fatalx("no %s socket on fd %d", what, fd);
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) == -1 ||
	    fcntl(fd, F_SETFL, O_NONBLOCK) == -1)
		fatal("%s: fcntl", __func__);
}

static void
vmm_signal(int sig, short event, void *arg)
{
	log_debug("signal %d, exiting", sig);
	exit(0);
}

int
main(int argc, char *argv[])
{
	static struct event	 ev_term, ev_int;
	struct vmm_identity	 identity;
	char			 empty[PATH_MAX];
	size_t			 seed;

	proc_child_setup_ext(argc, argv, "vmm", VMM_USAGE, &start.opts,
	    &start.conf, "a:H:M:i:m:Ru:g:", vmm_option, NULL);
	if (start.vmid == NULL || start.uid == 0 || start.gid == 0)
		fatalx("-i, -u and -g are required; usage: %s", VMM_USAGE);
	if (start.uid < start.conf.vm_uid_first ||
	    start.uid > start.conf.vm_uid_last)
		fatalx("uid %lld is outside the VM range %u-%u", start.uid,
		    start.conf.vm_uid_first, start.conf.vm_uid_last);
	log_procinit(start.vmid);
	memset(&identity, 0, sizeof(identity));
	if ((start.hostname == NULL) != (start.machine_id == NULL))
		fatalx("-H and -M go together; usage: %s", VMM_USAGE);
	if (start.hostname != NULL) {
		(void)snprintf(identity.hostname, sizeof(identity.hostname),
		    "%s", start.hostname);
		(void)snprintf(identity.machine_id,
		    sizeof(identity.machine_id), "%s", start.machine_id);
	}
	vmm_check_fd(VMM_QMP_FILENO, "QMP");
	vmm_check_fd(VMM_AGENT_FILENO, "agent");
	if (start.ram)
		vmm_ram_init(VMM_RAM_FILENO);
	if (snprintf(empty, sizeof(empty), "%s/%s", start.conf.rundir,
	    MCVM_EMPTY_DIR) >= (int)sizeof(empty))
		fatalx("run directory path too long");

	/* jansson would read /dev/urandom for its hash seed later. */
	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		fatal("getrandom");
	json_object_seed(seed | 1);
	/* Its write-only open needs /proc, outside the empty directory. */
	vmm_screenshot_init();

	privdrop(&(struct privdrop){
		.uid = (uid_t)start.uid,
		.gid = (gid_t)start.gid,
		.chroot = empty,
	});
	vmm_sandbox(start.opts.sandbox_debug);

	signal_set(&ev_term, SIGTERM, vmm_signal, NULL);
	signal_set(&ev_int, SIGINT, vmm_signal, NULL);
	signal_add(&ev_term, NULL);
	signal_add(&ev_int, NULL);
	(void)signal(SIGPIPE, SIG_IGN);
	(void)signal(SIGHUP, SIG_IGN);
	vmm_parent_init();
	vmm_qmp_init(VMM_QMP_FILENO, start.mode);
	vmm_guest->init(VMM_AGENT_FILENO, start.mode, &identity);

	event_dispatch();
	fatalx("event loop ended");
}
