/*
 * Spawning and reaping: a VM's cgroups, QEMU in its jail and the VM
 * monitor, connected by socketpairs that mcvmd makes and hands out; and
 * what is released once both processes have exited.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent_proto.h"
#include "cgroup.h"
#include "hash.h"
#include "jail.h"
#include "log.h"
#include "qemu.h"
#include "req.h"
#include "validate.h"
#include "vm.h"

static struct cgroups	 cgroups;
static enum accel_choice accel;
static uint32_t		 tsc_khz;	/* TCG guests' TSC, 0 unknown */
static char		 vmsdir[PATH_MAX];	/* rundir/vms: jail roots */

static void
vm_instance_name(char *out, size_t len)
{
	uint8_t	 h[SHA256_LEN];
	char	 hex[2 * SHA256_LEN + 1];

	if (sha256(env->conf.statedir, strlen(env->conf.statedir), h) == -1)
		fatalx("%s: sha256", __func__);
	hex_encode(h, 4, hex);
	hex[8] = '\0';
	if (strlen(hex) >= len)
		fatalx("%s: buffer", __func__);
	memcpy(out, hex, strlen(hex) + 1);
}

static void
vm_kill_leftover(const char *id, void *arg)
{
	log_warnx("%s: killing the processes left in its cgroup", id);
	if (cgroup_vm_kill(&cgroups, id) == -1 ||
	    cgroup_vm_destroy(&cgroups, id) == -1)
		log_warn("%s: leftover cgroup", id);
}

void
vm_close_store_fds(struct vm *vm)
{
	int	 i;

	for (i = 0; i <= STORE_FD_MAX; i++) {
		if (vm->store_fds[i] != -1)
			close(vm->store_fds[i]);
		vm->store_fds[i] = -1;
	}
	for (i = 0; i <= NET_FD_TAP; i++) {
		if (vm->net_fds[i] != -1)
			close(vm->net_fds[i]);
		vm->net_fds[i] = -1;
	}
}

static void
vm_boot_timeout(int fd, short event, void *arg)
{
	struct vm	*vm = arg;
	char		 msg[128];

	(void)snprintf(msg, sizeof(msg), "the guest agent did not answer "
	    "within %d s of QEMU starting", VM_BOOT_TIMEOUT);
	vm_fail(vm, msg);
}

static int
vm_jail_dir(const struct vm *vm, char *path, size_t len)
{
	return snprintf(path, len, "%s/%s", vmsdir, vm->row.id) >= (int)len ?
	    -1 : 0;
}

static pid_t
vm_fork_monitor(struct vm *vm, char procs[][PATH_MAX], size_t nprocs,
    int sp, int qmp, int agent, int ram)
{
	char		 path[PATH_MAX], uid[16], gid[16], *argv[CHILD_ARGV_MAX];
	char		 host[AGENT_HOSTNAME_MAX + 1];
	char		 machine[AGENT_MACHINE_ID_LEN + 1];
	uint8_t		 digest[SHA256_LEN];
	int		 argc, i, fd, fds[4] = { sp, qmp, agent, ram };
	int		 nfds = ram != -1 ? 4 : 3;
	size_t		 d;
	pid_t		 pid;

	if (snprintf(path, sizeof(path), "%s/%s", env->bindir,
	    VM_VMM_BINARY) >= (int)sizeof(path))
		return -1;
	(void)snprintf(uid, sizeof(uid), "%u", vm->row.uid);
	(void)snprintf(gid, sizeof(gid), "%u", vm->row.uid);
	argc = child_argv(VM_VMM_BINARY, argv);
	/* A workspace's own disks run no mcvm agent: qemu-guest-agent may,
	 * and so may an attached QEMU's guest. */
	if (vm_speaks_qga(vm)) {
		argv[argc++] = "-a";
		argv[argc++] = "qga";
	}
	/* A resumed VM's guest is no template's: a new session serves it. */
	if (vm->tpl || vm->boot.restore) {
		argv[argc++] = "-m";
		argv[argc++] = vm->tpl ? "hold" : "restore";
	}
	/* Its guest's name, and a machine id of its own for all its life. */
	agent_hostname_from(vm->row.name, vm->row.id, host);
	if (sha256(vm->row.id, strlen(vm->row.id), digest) == -1)
		return -1;
	hex_encode(digest, AGENT_MACHINE_ID_LEN / 2, machine);
	argv[argc++] = "-H";
	argv[argc++] = host;
	argv[argc++] = "-M";
	argv[argc++] = machine;
	argv[argc++] = "-i";
	argv[argc++] = vm->row.id;
	argv[argc++] = "-u";
	argv[argc++] = uid;
	argv[argc++] = "-g";
	argv[argc++] = gid;
	/* The RAM file QEMU maps copy-on-write: its checkpoints are
	 * relative to it. */
	if (ram != -1)
		argv[argc++] = "-R";
	argv[argc] = NULL;

	if ((pid = fork()) != 0)
		return pid;
	for (d = 0; d < nprocs; d++) {
		if ((fd = open(procs[d], O_WRONLY | O_CLOEXEC)) == -1 ||
		    write(fd, "0", 1) != 1)
			_exit(127);
		close(fd);
	}
	/* 3: mcvmd, 4: QMP, 5: agent, 6: the RAM file; via high numbers
	 * to avoid clashes. */
	for (i = 0; i < nfds; i++)
		if ((fds[i] = fcntl(fds[i], F_DUPFD, 64)) == -1)
			_exit(127);
	for (i = 0; i < nfds; i++)
		if (dup2(fds[i], PROC_PARENT_SOCK_FILENO + i) == -1)
			_exit(127);
	if (close_range(PROC_PARENT_SOCK_FILENO + nfds, ~0U, 0) == -1)
		_exit(127);
	execve(path, argv, child_envp);
	_exit(127);
}

/* Where QEMU's output of vm goes: 0, or -1 if the path does not fit. */
static int
vm_qemu_log_path(const struct vm *vm, char *path, size_t len)
{
	return snprintf(path, len, "%s/%s.log", vmsdir, vm->row.id) <
	    (int)len ? 0 : -1;
}

static int
vm_qemu_log(const struct vm *vm)
{
	char	 path[PATH_MAX];

	if (vm_qemu_log_path(vm, path, sizeof(path)) == -1)
		return -1;
	return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
	    O_NOFOLLOW, 0600);
}

static void
vm_qemu_log_remove(const struct vm *vm)
{
	char	 path[PATH_MAX];

	if (vm_qemu_log_path(vm, path, sizeof(path)) == 0)
		(void)unlink(path);
}

/*
 * The end of QEMU's log, into mcvmd's, for a VM whose log goes with it:
 * one that failed while being created.  Bytes outside printable ASCII
 * are shown as '?'.
 */
void
vm_qemu_log_note(const struct vm *vm)
{
	char	 path[PATH_MAX], buf[1024], *line, *nl;
	off_t	 end;
	ssize_t	 n, i;
	int	 fd;

	if (vm_qemu_log_path(vm, path, sizeof(path)) == -1 ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return;
	end = lseek(fd, 0, SEEK_END);
	n = end > (off_t)sizeof(buf) - 1 ? (off_t)sizeof(buf) - 1 : end;
	if (end == -1 || (n = pread(fd, buf, (size_t)n, end - n)) <= 0) {
		close(fd);
		return;
	}
	close(fd);
	buf[n] = '\0';
	for (i = 0; i < n; i++)
		if (buf[i] != '\n' && (buf[i] < 0x20 || buf[i] > 0x7e))
			buf[i] = '?';
	line = buf;
	if (n == (ssize_t)sizeof(buf) - 1 && (nl = strchr(buf, '\n')) != NULL)
		line = nl + 1;		/* from the first whole line */
	for (; *line != '\0'; line = nl + 1) {
		if ((nl = strchr(line, '\n')) != NULL)
			*nl = '\0';
		if (*line != '\0')
			log_warnx("%s: qemu: %s", vm->row.id, line);
		if (nl == NULL)
			break;
	}
}

/* A VM from its own disks: QMP answers, so it runs. */
static void
own_qmp_up(struct req *r, struct imsg *imsg)
{
	if (r->vm->state == VS_BOOTING)
		vm_guest_ready(r->vm);
}

static void
own_qmp_fail(struct req *r, enum req_end end, const char *why)
{
	if (end != REQ_VM_GONE && r->vm->state == VS_BOOTING)
		vm_fail(r->vm, "QEMU's monitor did not answer");
}

/*
 * An attached VM's monitor (attach.c), on the QMP and agent channels
 * connected to the operator's QEMU: 0, or -1 with why in msg.  The VM
 * runs once QMP answers.
 */
int
vm_spawn_monitor(struct vm *vm, int qmp, int agent, char *msg, size_t len)
{
	int	 sp[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == -1) {
		(void)snprintf(msg, len, "socketpair: %s", strerror(errno));
		return -1;
	}
	if ((vm->vmm_pid = vm_fork_monitor(vm, NULL, 0, sp[1], qmp,
	    agent, -1)) == -1) {
		vm->vmm_pid = 0;
		close(sp[0]);
		close(sp[1]);
		(void)snprintf(msg, len, "cannot start the VM monitor");
		return -1;
	}
	close(sp[1]);
	vm->started = vm_now();
	vm_monitor_attach(vm, sp[0]);
	vm_fsm(vm, VE_SPAWNED, NULL);
	log_info("%s: monitor pid %d, uid %u", vm->row.id, (int)vm->vmm_pid,
	    vm->row.uid);
	(void)req_send(req_new(RP_MONITOR, vm, IMSG_VMM_QMP_STATUS,
	    own_qmp_up, own_qmp_fail));
	return 0;
}

/*
 * Starts the VM's processes: its cgroups, QEMU in the jail and the
 * monitor, connected by socketpairs that mcvmd makes and hands out.
 */
void
vm_spawn(struct vm *vm)
{
	struct qemu_argv	*qa;
	struct qemu_spec	 spec;
	struct jail		 jail;
	struct stat		 st;
	char			 root[PATH_MAX];
	char			 procs[JAIL_CGROUPS_MAX][PATH_MAX];
	size_t			 nprocs = 0, i;
	int			 qmp[2] = { -1, -1 }, agent[2] = { -1, -1 };
	int			 sp[2] = { -1, -1 }, log = -1, ram_fd = -1;
	uint32_t		 gid = vm->row.uid;
	const char		*why = NULL;

	memset(&spec, 0, sizeof(spec));
	spec.vm_id = vm->row.id;
	spec.accel = accel;
	spec.tsc_khz = tsc_khz;
	spec.memory_mib = vm->row.memory_mib;
	spec.vcpus = vm->row.vcpus;
	spec.disk_format = vm->disk_format;
	spec.has_initrd = vm->store_fds[STORE_FD_INITRD] != -1;
	spec.mac = vm_net_has_nic(vm) ? vm->mac : NULL;
	spec.hold = vm->tpl == TPL_HOST;
	spec.display = vm->row.display != 0;
	spec.restore = vm->boot.restore || vm->boot.resume;
	spec.paused = vm->tpl == TPL_SHARED;
	/*
	 * A template's RAM file, and its group; or, resuming, the VM's base
	 * (a link of the template's file it hibernated from, the same
	 * group's) if it has one; or neither.
	 */
	if (spec.restore && vm_template_use(vm, &ram_fd, &gid,
	    &spec.ram) == -1 && vm->boot.resume &&
	    vm->store_fds[STORE_FD_RAM] != -1 &&
	    fstat(vm->store_fds[STORE_FD_RAM], &st) == 0) {
		ram_fd = vm->store_fds[STORE_FD_RAM];
		gid = st.st_gid;
		spec.ram = QEMU_RAM_PRIVATE;
	}
	vm->ram_cow = spec.ram == QEMU_RAM_PRIVATE;
	if (vm_own_disks(vm)) {
		spec.ndisks = vm->nvdisk;
		for (i = 0; i < vm->nvdisk && i < VM_DISKS_MAX; i++) {
			spec.disks[i].format = vm->vdisk[i].format;
			spec.disks[i].has_base = vm->vdisk[i].has_base;
			spec.disks[i].base_format = vm->vdisk[i].base_format;
		}
		spec.cd = vm->store_fds[STORE_FD_CD] != -1;
		spec.firmware = vm->row.firmware;
		spec.machine = vm->row.machine;
		spec.has_initrd = 0;
	}
	if ((qa = calloc(1, sizeof(*qa))) == NULL)
		fatal("%s", __func__);
	if (qemu_build_argv(&spec, qa) == -1) {
		why = "internal error building QEMU's command line";
		goto fail;
	}
	if (vm_jail_dir(vm, root, sizeof(root)) == -1 ||
	    (mkdir(root, 0755) == -1 && errno != EEXIST)) {
		why = "cannot make the jail directory";
		goto fail;
	}
	if (cgroup_vm_create(&cgroups, vm->row.id,
	    (uint64_t)vm->row.memory_mib << 20, vm->row.vcpus, procs,
	    &nprocs) == -1) {
		why = "cannot create the VM's cgroups";
		goto fail;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, qmp) == -1 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, agent) == -1 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == -1 ||
	    (log = vm_qemu_log(vm)) == -1) {
		why = "cannot create the VM's channels";
		goto fail;
	}

	memset(&jail, 0, sizeof(jail));
	jail.root = root;
	jail.uid = vm->row.uid;
	jail.gid = gid;		/* a template's file's group, or its own */
	jail.ram_fd = ram_fd;
	jail.kvm = accel == ACCEL_USE_KVM;
	/* A restored guest has its kernel in the checkpoint. */
	jail.kernel_fd = spec.restore ? -1 : vm->store_fds[STORE_FD_KERNEL];
	jail.initrd_fd = spec.restore ? -1 : vm->store_fds[STORE_FD_INITRD];
	jail.log_fd = log;
	jail.netns_fd = vm->net_fds[NET_FD_NETNS];
	for (i = 0; i <= QEMU_FD_MAX; i++)
		jail.fds[i] = -1;
	jail.fds[QEMU_FD_TAP] = vm->net_fds[NET_FD_TAP];
	jail.fds[QEMU_FD_QMP] = qmp[0];
	jail.fds[QEMU_FD_AGENT] = agent[0];
	jail.fds[QEMU_FD_DISK] = vm->store_fds[STORE_FD_DISK];
	jail.fds[QEMU_FD_CHECKPOINT] = vm->store_fds[STORE_FD_CHECKPOINT];
	if (vm->disk_format == DISK_QCOW2 && !vm_own_disks(vm))
		jail.fds[QEMU_FD_BASE] = vm->store_fds[STORE_FD_BASE];
	if (vm->disk_format == DISK_RAW && !vm_own_disks(vm))
		jail.fds[QEMU_FD_STATE] = vm->store_fds[STORE_FD_STATE];
	for (i = 0; vm_own_disks(vm) && i < spec.ndisks; i++) {
		jail.fds[QEMU_FD_DISK_N(i)] = vm->store_fds[STORE_FD_DISK_N(i)];
		if (spec.disks[i].has_base)
			jail.fds[QEMU_FD_BASE_N(i)] =
			    vm->store_fds[STORE_FD_BASE_N(i)];
	}
	if (vm_own_disks(vm)) {
		jail.kernel_fd = jail.initrd_fd = -1;
		jail.fds[QEMU_FD_CD] = vm->store_fds[STORE_FD_CD];
		jail.fds[QEMU_FD_CODE] = vm->store_fds[STORE_FD_CODE];
		jail.fds[QEMU_FD_VARS] = vm->store_fds[STORE_FD_VARS];
	}
	for (i = 0; i < nprocs; i++)
		jail.cgroup_procs[i] = procs[i];
	jail.ncgroups = nprocs;
	jail.parent = getpid();

	switch (vm->qemu_pid = fork()) {
	case -1:
		why = "cannot fork QEMU";
		goto fail;
	case 0:
		jail_exec(&jail, qa->argv);
	}
	vm->qemu_status = 0;
	vm->started = vm_now();
	if ((vm->vmm_pid = vm_fork_monitor(vm, procs, nprocs, sp[1], qmp[1],
	    agent[1], vm->ram_cow ? ram_fd : -1)) == -1) {
		why = "cannot start the VM monitor";
		goto fail;
	}
	close(qmp[0]);
	close(qmp[1]);
	close(agent[0]);
	close(agent[1]);
	close(sp[1]);
	close(log);
	vm_close_store_fds(vm);
	free(qa);
	vm_monitor_attach(vm, sp[0]);
	/* A new boot: the jobs of the last one are gone with it (a
	 * resumed VM's are not: they come back with its memory). */
	if (!vm->boot.resume && state_jobs_forget(vm->row.id) == -1)
		log_warnx("%s: old jobs not forgotten", vm->row.id);
	vm_fsm(vm, VE_SPAWNED, NULL);
	vm_progress(vm, 2, 3, spec.restore ? "restoring" : "booting");
	if (spec.restore)
		vm_incoming(vm);
	log_info("%s: qemu pid %d, monitor pid %d, uid %u", vm->row.id,
	    (int)vm->qemu_pid, (int)vm->vmm_pid, vm->row.uid);
	/* No agent will answer: the VM runs once QEMU's monitor does. */
	if (vm_own_disks(vm)) {
		log_info("%s: boots its own disks%s", vm->row.id,
		    spec.cd ? ", the install CD first" : "");
		(void)req_send(req_new(RP_MONITOR, vm, IMSG_VMM_QMP_STATUS,
		    own_qmp_up, own_qmp_fail));
		return;
	}
	vm_timer_start(vm, VM_BOOT_TIMEOUT, vm_boot_timeout);
	return;
fail:
	free(qa);
	for (i = 0; i < 2; i++) {
		if (qmp[i] != -1)
			close(qmp[i]);
		if (agent[i] != -1)
			close(agent[i]);
		if (sp[i] != -1)
			close(sp[i]);
	}
	if (log != -1)
		close(log);
	vm_close_store_fds(vm);
	vm_fail(vm, why);
}

void
vm_kill(struct vm *vm)
{
	if (vm->qemu_pid > 0)
		(void)kill(vm->qemu_pid, SIGKILL);
	if (vm->vmm_pid > 0)
		(void)kill(vm->vmm_pid, SIGKILL);
	if (cgroups.ok && !vm_attached(vm) &&
	    cgroup_vm_kill(&cgroups, vm->row.id) == -1)
		log_warn("%s: cgroup kill", vm->row.id);
}

/*
 * The install CD's boot ended as the guest asked (a reset or a
 * power-off, see vm_guest_end): the install is done, recorded as
 * such, and the VM starts again from its disks alone, the install's
 * console kept for vm_serial_read.  0 if that is not what happened (a
 * crash stays one).
 */
static int
vm_install_booted(struct vm *vm)
{
	struct vm_console	*k;

	if (!vm_own_disks(vm) || vm->row.install != VM_INSTALL_PENDING ||
	    !vm->boot.guest_ended || vm->state != VS_RUNNING)
		return 0;
	if (state_vm_install_done(vm->row.id) == -1) {
		log_warnx("%s: the install's end not recorded", vm->row.id);
		return 0;
	}
	vm->row.install = VM_INSTALL_DONE;
	log_info("%s: the install CD's boot ended; starting again from the "
	    "disks alone", vm->row.id);
	vm_fsm(vm, VE_GUEST_POWEROFF, "the install CD's boot ended");
	k = vm->console;
	vm->console = NULL;
	vm_start(0, vm);
	if (vm->console == NULL)
		vm->console = k;
	else
		free(k);
	return 1;
}

void
vm_processes_gone(struct vm *vm)
{
	char	 root[PATH_MAX];

	vm_monitor_close(vm);
	vm->boot.agent = 0;
	vm_template_unuse(vm);
	req_vm_gone(vm, 0, "the VM stopped");
	if (cgroups.ok && cgroup_vm_exists(&cgroups, vm->row.id) &&
	    (cgroup_vm_kill(&cgroups, vm->row.id) == -1 ||
	    cgroup_vm_destroy(&cgroups, vm->row.id) == -1))
		log_warn("%s: cgroup not removed", vm->row.id);
	if (vm_jail_dir(vm, root, sizeof(root)) == 0)
		(void)rmdir(root);
	vm_timer_clear(vm);
	if (vm->state == VS_DESTROYING)
		vm_qemu_log_remove(vm);
	if (vm->net_live && req_pending(vm, RP_NETD) == NULL)
		vm_net_teardown(vm);

	switch (vm->state) {
	case VS_HIBERNATING:
		if (!vm->boot.checkpointed) {
			vm_fail(vm, "QEMU exited before its checkpoint was "
			    "written");
			break;
		}
		vm->boot.checkpointed = 0;
		vm_fsm(vm, VE_PROCESSES_GONE, NULL);
		vm_op_done(vm, 1, NULL);
		break;
	case VS_STOPPING:
		if (vm->tpl) {
			/* Only its directory, with the checkpoint, stays. */
			vm_template_gone(vm);
			vm_qemu_log_remove(vm);
			vm_free(vm);
			return;
		}
		vm_fsm(vm, VE_PROCESSES_GONE, NULL);
		vm_op_done(vm, 1, NULL);
		break;
	case VS_DESTROYING:
		if (vm_attached(vm)) {		/* it has no disk of ours */
			vm->op.disk_gone = 1;
			vm_destroy_finish(vm);
		} else if (req_pending(vm, RP_STORED) == NULL &&
		    vm_store_is_up())
			vm_store_disk(vm, IMSG_STORE_DISK_DELETE);
		break;
	case VS_FAILED:
	case VS_STOPPED:
		break;
	default:
		if (vm_install_booted(vm))
			break;
		if (vm->boot.poweroff && vm->state != VS_CREATING) {
			vm_fsm(vm, VE_GUEST_POWEROFF,
			    "the guest powered off");
			vm_op_done(vm, 0, "the guest powered off");
		} else
			vm_fail(vm, vm_attached(vm) ? VM_ATTACHED_GONE :
			    "QEMU exited unexpectedly");
		break;
	}
}

/* The memory vm's cgroup is charged, in bytes (0 if unknown). */
uint64_t
vm_memory_charged(const struct vm *vm)
{
	return cgroups.ok ? cgroup_vm_memory(&cgroups, vm->row.id) : 0;
}

/* "signal N" or "status N", for a wait status. */
static const char *
exit_text(int status, char *buf, size_t len)
{
	if (WIFSIGNALED(status))
		(void)snprintf(buf, len, "signal %d", WTERMSIG(status));
	else
		(void)snprintf(buf, len, "status %d", WEXITSTATUS(status));
	return buf;
}

int
vm_reap(pid_t pid, int status)
{
	struct vm	*vm;
	char		 how[32];

	TAILQ_FOREACH(vm, &vms, entry) {
		if (pid == vm->qemu_pid) {
			vm->qemu_pid = 0;
			vm->qemu_status = status;
			log_info("%s: qemu exited (%s); its output is in "
			    "%s/%s.log", vm->row.id, exit_text(status, how,
			    sizeof(how)), vmsdir, vm->row.id);
		} else if (pid == vm->vmm_pid) {
			vm->vmm_pid = 0;
			log_info("%s: monitor exited (%s)", vm->row.id,
			    exit_text(status, how, sizeof(how)));
			if (vm->qemu_pid > 0 && vm->state != VS_STOPPING &&
			    vm->state != VS_DESTROYING &&
			    vm->state != VS_FAILED && !vm->boot.guest_ended &&
			    !vm->boot.checkpointed)
				vm_fail(vm, "the VM monitor died");
		} else
			continue;
		if (vm->qemu_pid <= 0 && vm->vmm_pid <= 0)
			vm_processes_gone(vm);
		return 1;
	}
	return 0;
}

/*
 * mcvmd is stopping: every VM's processes are killed and the VM is marked
 * stopped (its disk stays), so that vm_start boots it again later.
 */
void
vm_shutdown(void)
{
	struct vm	*vm;
	int		 status;

	struct timespec	 step = { 0, 50 * 1000 * 1000 };
	int		 tries, left;

	/* SIGTERM to every QEMU, a grace period, then SIGKILL. */
	TAILQ_FOREACH(vm, &vms, entry)
		if (vm->qemu_pid > 0)
			(void)kill(vm->qemu_pid, SIGTERM);
	for (tries = 0; tries < VM_TERM_GRACE * 20; tries++) {
		left = 0;
		TAILQ_FOREACH(vm, &vms, entry) {
			if (vm->qemu_pid > 0 && waitpid(vm->qemu_pid, &status,
			    WNOHANG) == vm->qemu_pid)
				vm->qemu_pid = 0;
			if (vm->qemu_pid > 0)
				left++;
		}
		if (left == 0)
			break;
		(void)nanosleep(&step, NULL);
	}
	TAILQ_FOREACH(vm, &vms, entry) {
		if (vm->qemu_pid <= 0 && vm->vmm_pid <= 0 &&
		    !cgroup_vm_exists(&cgroups, vm->row.id))
			continue;
		vm_kill(vm);
		if (vm->qemu_pid > 0)
			(void)waitpid(vm->qemu_pid, &status, 0);
		if (vm->vmm_pid > 0)
			(void)waitpid(vm->vmm_pid, &status, 0);
		vm->qemu_pid = vm->vmm_pid = 0;
		if (vm->state != VS_DESTROYING && vm->state != VS_FAILED)
			vm_fsm(vm, VE_SHUTDOWN, "mcvmd stopped");
		if (cgroups.ok)
			(void)cgroup_vm_destroy(&cgroups, vm->row.id);
	}
	cgroup_fini(&cgroups);
}

/* The cgroups, the accelerator and the jails' directory. */
void
vm_spawn_init(void)
{
	char	 why[256], instance[16];

	vm_instance_name(instance, sizeof(instance));
	if (cgroup_init(&cgroups, instance) == -1)
		log_warnx("VMs disabled: %s", cgroups.why);
	else
		log_info("%s", cgroups.why);
	accel = accel_choose(env->conf.accel, "", why, sizeof(why));
	log_info("accelerator %s", why);
	if (accel == ACCEL_USE_TCG && (tsc_khz = qemu_tsc_khz()) != 0)
		log_info("guests are told the host's TSC runs at %u kHz",
		    tsc_khz);
	if (snprintf(vmsdir, sizeof(vmsdir), "%s/vms", env->conf.rundir) >=
	    (int)sizeof(vmsdir))
		fatalx("run directory path too long");
	if (mkdir(vmsdir, 0755) == -1 && errno != EEXIST)
		fatal("mkdir %s", vmsdir);
}

/* Whatever processes the previous mcvmd left in VM cgroups are killed. */
void
vm_spawn_leftovers(void)
{
	struct dirent	*de;
	struct vm	*vm;
	DIR		*d;
	char		 id[ID_MAX + 1];
	size_t		 n;

	if (cgroups.ok)
		(void)cgroup_vm_list(&cgroups, vm_kill_leftover, NULL);
	/*
	 * The jail roots and QEMU logs of VMs state.db does not hold (a
	 * template, or a VM half made, when the last mcvmd died): gone.
	 */
	if ((d = opendir(vmsdir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		n = strcspn(de->d_name, ".");
		if (n > ID_MAX || (de->d_name[n] != '\0' &&
		    strcmp(de->d_name + n, ".log") != 0))
			continue;
		memcpy(id, de->d_name, n);
		id[n] = '\0';
		if (!valid_id(id, VM_ID_PREFIX))
			continue;
		TAILQ_FOREACH(vm, &vms, entry)
			if (strcmp(vm->row.id, id) == 0)
				break;
		if (vm != NULL)
			continue;
		if (unlinkat(dirfd(d), de->d_name, de->d_name[n] == '\0' ?
		    AT_REMOVEDIR : 0) == -1)
			log_warn("%s/%s: not removed", vmsdir, de->d_name);
	}
	closedir(d);
}

int
vm_cgroups_ok(void)
{
	return cgroups.ok;
}

const char *
vm_cgroups_why(void)
{
	return cgroups.why;
}
