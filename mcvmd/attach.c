/*
 * Attached VMs (mcvmctl attach-vm, forget-vm): a QEMU the operator
 * started, joined to a workspace by its QMP socket, and by its
 * qemu-guest-agent's socket if it has one.  mcvmd, as root, checks what
 * each socket is and who listens on it, connects, and hands the
 * connected descriptors to a monitor of the VM's own, which runs
 * unprivileged and under seccomp like every other: QMP and QGA are
 * parsed there and nowhere else.
 *
 * The checks: each path is a unix socket itself (not a link to one);
 * something listens on it now (connecting tells, a stale file does not);
 * the listener (SO_PEERCRED) is a QEMU, the pid the operator named if
 * any, whose command line names that QMP socket; the QGA socket's
 * listener is the same process; no other VM has that socket or pid.
 *
 * mcvmd never started that QEMU and never ends it: vm_stop, vm_start,
 * vm_destroy, vm_fork and hibernation refuse an attached VM, and
 * forget-vm takes it out of the registry, its QEMU left running.  Its
 * row stays across mcvmd's restarts; the next mcvmd attaches it again
 * if the same QEMU still listens, and marks it failed otherwise.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "rdfile.h"
#include "vm.h"

#define ATTACH_CMDLINE_MAX	65536	/* /proc/PID/cmdline read */

int
vm_attached(const struct vm *vm)
{
	return vm->row.attach_qmp[0] != '\0';
}

/*
 * Connects to the unix socket at path; returns the descriptor and the
 * listener's pid, or -1 with why in msg.
 */
static int
attach_connect(const char *path, const char *what, pid_t *pid, char *msg,
    size_t len)
{
	struct sockaddr_un	 sun;
	struct ucred		 cred;
	struct stat		 st;
	socklen_t		 clen = sizeof(cred);
	int			 fd, rc, missing;

	rc = lstat(path, &st);
	missing = rc == -1 && errno == ENOENT;
	if (rc == -1 || !S_ISSOCK(st.st_mode)) {
		(void)snprintf(msg, len, "%s %s is not a unix socket%s: give "
		    "the path QEMU listens on", what, path, missing ?
		    " (it does not exist)" : "");
		return -1;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path) >=
	    (int)sizeof(sun.sun_path)) {
		(void)snprintf(msg, len, "%s path is too long", what);
		return -1;
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0)) == -1) {
		(void)snprintf(msg, len, "socket: %s", strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		(void)snprintf(msg, len, "nothing listens on %s %s (%s): is "
		    "its QEMU running, with that socket as a server?", what,
		    path, strerror(errno));
		close(fd);
		return -1;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == -1 ||
	    cred.pid <= 0) {
		(void)snprintf(msg, len, "cannot tell who listens on %s", path);
		close(fd);
		return -1;
	}
	*pid = cred.pid;
	return fd;
}

/*
 * Whether pid is a QEMU whose command line names the QMP socket qmp: 0,
 * or -1 with why in msg.
 */
static int
attach_check_pid(pid_t pid, const char *qmp, char *msg, size_t len)
{
	static char	 cmd[ATTACH_CMDLINE_MAX];
	char		 path[64], exe[PATH_MAX];
	const char	*base;
	ssize_t		 n;
	size_t		 i, got;

	(void)snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if ((n = readlink(path, exe, sizeof(exe) - 1)) == -1) {
		(void)snprintf(msg, len, "pid %d is gone", (int)pid);
		return -1;
	}
	exe[n] = '\0';
	base = strrchr(exe, '/') != NULL ? strrchr(exe, '/') + 1 : exe;
	if (strncmp(base, "qemu-system-", strlen("qemu-system-")) != 0) {
		(void)snprintf(msg, len, "pid %d is not QEMU: it runs %s",
		    (int)pid, exe);
		return -1;
	}
	(void)snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	if ((n = read_small_file(path, cmd, sizeof(cmd))) == -1) {
		(void)snprintf(msg, len, "cannot read %s: %s", path,
		    strerror(errno));
		return -1;
	}
	got = (size_t)n;
	for (i = 0; i < got; i++)
		if (cmd[i] == '\0')
			cmd[i] = ' ';
	if (strstr(cmd, qmp) == NULL) {
		(void)snprintf(msg, len, "pid %d's command line does not name "
		    "%s: it is another VM's QEMU", (int)pid, qmp);
		return -1;
	}
	return 0;
}

/* Whether another VM has that QMP socket or QEMU pid: 0, or -1. */
static int
attach_check_unique(const struct vm *self, const char *qmp, pid_t pid,
    char *msg, size_t len)
{
	struct vm	*vm;

	TAILQ_FOREACH(vm, &vms, entry) {
		if (vm == self)
			continue;
		if ((vm_attached(vm) && strcmp(vm->row.attach_qmp, qmp) == 0) ||
		    (pid > 0 && (vm->qemu_pid == pid ||
		    (pid_t)vm->row.attach_pid == pid))) {
			(void)snprintf(msg, len, "that QEMU is %s already (%s "
			    "in workspace %s): see list-vms", vm->row.id,
			    vm->row.name, vm->row.ws);
			return -1;
		}
	}
	return 0;
}

/*
 * Checks and connects vm's sockets, and starts its monitor on them:
 * 0, or -1 with why in msg (nothing started).
 */
static int
attach_start(struct vm *vm, char *msg, size_t len)
{
	pid_t	 pid, qpid;
	int	 qmp, qga = -1, none[2] = { -1, -1 };

	if ((qmp = attach_connect(vm->row.attach_qmp, "QMP socket", &pid, msg,
	    len)) == -1)
		return -1;
	if ((vm->row.attach_pid != 0 && pid != (pid_t)vm->row.attach_pid)) {
		(void)snprintf(msg, len, "the QEMU listening on %s is pid %d, "
		    "not %u", vm->row.attach_qmp, (int)pid,
		    vm->row.attach_pid);
		goto fail;
	}
	if (attach_check_pid(pid, vm->row.attach_qmp, msg, len) == -1 ||
	    attach_check_unique(vm, vm->row.attach_qmp, pid, msg, len) == -1)
		goto fail;
	if (vm->row.attach_qga[0] != '\0') {
		if ((qga = attach_connect(vm->row.attach_qga, "QGA socket",
		    &qpid, msg, len)) == -1)
			goto fail;
		if (qpid != pid) {
			(void)snprintf(msg, len, "%s's listener is pid %d, not "
			    "that QEMU (%d): give the QGA socket of the same "
			    "QEMU", vm->row.attach_qga, (int)qpid, (int)pid);
			goto fail;
		}
	} else {
		/* No agent: a channel that is closed at once. */
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
		    none) == -1) {
			(void)snprintf(msg, len, "socketpair: %s",
			    strerror(errno));
			goto fail;
		}
		close(none[1]);
		qga = none[0];
	}
	vm->row.attach_pid = (uint32_t)pid;
	if (vm_spawn_monitor(vm, qmp, qga, msg, len) == -1)
		goto fail;
	close(qmp);
	close(qga);
	log_info("%s: attached QEMU pid %d at %s%s%s", vm->row.id, (int)pid,
	    vm->row.attach_qmp, vm->row.attach_qga[0] != '\0' ? ", its agent "
	    "at " : "", vm->row.attach_qga);
	return 0;
fail:
	close(qmp);
	if (qga != -1)
		close(qga);
	return -1;
}

/*
 * mcvmctl attach-vm: a new VM of workspace ws_id, named m->name, for
 * the QEMU at m->qmp.  Returns the VM, booting until its monitor
 * answers, or NULL with why in msg.
 */
struct vm *
vm_attach(const struct msg_ctl_vm_attach *m, int64_t ws_id, char *msg,
    size_t len)
{
	struct vm_row	 row;
	struct vm	*vm;

	if (valid_id(m->name, VM_ID_PREFIX)) {
		(void)snprintf(msg, len, "a name may not have the form of a VM "
		    "id: choose another");
		return NULL;
	}
	if (vm_find_name(m->name, ws_id) != NULL) {
		(void)snprintf(msg, len, "workspace %s has a VM named %s: "
		    "choose another name", m->workspace, m->name);
		return NULL;
	}
	memset(&row, 0, sizeof(row));
	vm_random_id(VM_ID_PREFIX, row.id, sizeof(row.id));
	row.ws_id = ws_id;
	(void)snprintf(row.ws, sizeof(row.ws), "%s", m->workspace);
	(void)snprintf(row.name, sizeof(row.name), "%s", m->name);
	(void)snprintf(row.state, sizeof(row.state), "%s",
	    vm_state_name(VS_CREATING));
	(void)snprintf(row.attach_qmp, sizeof(row.attach_qmp), "%s", m->qmp);
	(void)snprintf(row.attach_qga, sizeof(row.attach_qga), "%s", m->qga);
	row.attach_pid = m->pid;
	row.display = 1;	/* QEMU says if it has none */
	if (vm_slot_alloc(&row.slot) == -1) {
		(void)snprintf(msg, len, "every VM slot is in use: destroy "
		    "or forget a VM first");
		return NULL;
	}
	row.uid = env->conf.vm_uid_first + row.slot;
	row.created = (int64_t)time(NULL);
	if (state_vm_insert(&row) == -1) {
		(void)snprintf(msg, len, "state database error");
		return NULL;
	}
	vm = vm_new(&row);
	vm_op_begin(vm, 0, VO_CREATE, NULL);
	if (attach_start(vm, msg, len) == -1) {
		if (state_vm_delete(row.id) == -1)
			log_warnx("%s: row not deleted", row.id);
		vm_free(vm);
		return NULL;
	}
	if (state_vm_attach_pid(vm->row.id, vm->row.attach_pid) == -1)
		log_warnx("%s: its QEMU's pid not recorded", vm->row.id);
	return vm;
}

/*
 * At mcvmd's start, after the rows are loaded (stopped by the last
 * mcvmd's stop, or failed by its end): each attached VM whose QEMU
 * still listens is attached again.
 */
void
vm_attach_reload(void)
{
	struct vm	*vm;
	char		 why[VM_MSG_MAX], reason[VM_MSG_MAX + 128];

	TAILQ_FOREACH(vm, &vms, entry) {
		if (!vm_attached(vm) || (vm->state != VS_FAILED &&
		    vm->state != VS_STOPPED))
			continue;
		vm_fsm(vm, VE_START, NULL);
		vm_op_begin(vm, 0, VO_START, NULL);
		if (attach_start(vm, why, sizeof(why)) == 0)
			continue;
		(void)snprintf(reason, sizeof(reason), "not attached again at "
		    "mcvmd's start: %.400s; forget-vm it", why);
		log_warnx("%s: %s", vm->row.id, reason);
		vm_fsm(vm, VE_FAIL, reason);
		vm_op_done(vm, 0, reason);
	}
}

/* What an attached VM's lifecycle tools answer: nothing was done. */
void
vm_attached_refusal(const struct vm *vm, const char *tool, char *msg,
    size_t len)
{
	(void)snprintf(msg, len, "%s is attached by the operator: mcvm did "
	    "not start its QEMU, so %s cannot act on it and nothing was "
	    "done; the display, snapshot, vm_suspend (pause) and "
	    "vm_resume tools work, and the operator detaches it with "
	    "mcvmctl forget-vm", vm->row.id, tool);
}

/* attach-vm's answer, once the VM runs or could not be attached. */
void
vm_attach_settle(struct vm *vm, int ok, const char *why)
{
	char	 msg[VM_MSG_MAX + 64];

	if (ok)
		(void)snprintf(msg, sizeof(msg), "attached %s (%s) to "
		    "workspace %s: QEMU pid %u", vm->row.id, vm->row.name,
		    vm->row.ws, vm->row.attach_pid);
	else
		(void)snprintf(msg, sizeof(msg), "%s", why != NULL ? why :
		    "the VM could not be attached");
	control_settle(&vm->ctl, ok, msg);
}
