/*
 * The control socket: mcvmctl's way in.  Mode 0600 (0660 with a configured
 * group).  Each connection's peer is identified by SO_PEERCRED: root, or a
 * member of the control group, is served; anyone else is told so and
 * dropped.  A malformed request costs its connection only.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hash.h"
#include "log.h"
#include "mcvmd.h"
#include "msg_ctl.h"
#include "vm.h"

#define CONTROL_BACKLOG		8
#define CONTROL_PEERGROUPS_MAX	64

struct ctl_conn {
	struct imsgev	 iev;
	uid_t		 uid;
	pid_t		 pid;
	int		 closing;	/* drop once the queue is flushed */
	int		 live;
	uint64_t	 serial;	/* which client this slot holds */
};

static struct ctl_conn	 conns[CONTROL_MAX_CLIENTS];
static uint64_t		 conn_serial;
static struct event	 ev_accept;
static int		 control_fd = -1;
static gid_t		 control_gid;
static int		 control_has_group;

static void	 control_accept(int, short, void *);
static void	 control_dispatch(int, short, void *);
static void	 control_close(struct ctl_conn *);
static void	 control_status_note(const char *, const char *, void *);
static int	 control_status_ws(const struct ws_entry *, void *);

/*
 * Creates the socket.  A stale socket from an earlier run is replaced; any
 * other kind of file in its place is left alone and refused.
 */
int
control_init(const struct mcvm_config *conf)
{
	struct sockaddr_un	 sun;
	struct stat		 st;
	struct group		*gr;
	mode_t			 old;
	int			 fd;

	if (conf->control_group[0] != '\0') {
		if ((gr = getgrnam(conf->control_group)) == NULL) {
			log_warnx("control: unknown group %s",
			    conf->control_group);
			return -1;
		}
		control_gid = gr->gr_gid;
		control_has_group = 1;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	(void)snprintf(sun.sun_path, sizeof(sun.sun_path), "%s",
	    conf->control_sock);

	if (lstat(conf->control_sock, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			log_warnx("control: %s exists and is not a socket",
			    conf->control_sock);
			return -1;
		}
		if (unlink(conf->control_sock) == -1) {
			log_warn("control: unlink %s", conf->control_sock);
			return -1;
		}
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1) {
		log_warn("control: socket");
		return -1;
	}
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		umask(old);
		log_warn("control: bind %s", conf->control_sock);
		close(fd);
		return -1;
	}
	umask(old);
	if (control_has_group && (chown(conf->control_sock, 0,
	    control_gid) == -1 || chmod(conf->control_sock, 0660) == -1)) {
		log_warn("control: %s", conf->control_sock);
		(void)unlink(conf->control_sock);
		close(fd);
		return -1;
	}
	if (listen(fd, CONTROL_BACKLOG) == -1) {
		log_warn("control: listen");
		(void)unlink(conf->control_sock);
		close(fd);
		return -1;
	}
	control_fd = fd;
	return 0;
}

void
control_listen(void)
{
	event_set(&ev_accept, control_fd, EV_READ | EV_PERSIST,
	    control_accept, NULL);
	event_add(&ev_accept, NULL);
}

void
control_cleanup(const struct mcvm_config *conf)
{
	size_t	 i;

	for (i = 0; i < CONTROL_MAX_CLIENTS; i++)
		if (conns[i].live)
			control_close(&conns[i]);
	if (control_fd != -1) {
		event_del(&ev_accept);
		close(control_fd);
		control_fd = -1;
		(void)unlink(conf->control_sock);
	}
}

/* Root always; a member of the control group when one is configured. */
static int
control_peer_allowed(int fd, const struct ucred *cred)
{
	gid_t		 groups[CONTROL_PEERGROUPS_MAX];
	socklen_t	 len = sizeof(groups);
	size_t		 i;

	if (cred->uid == 0)
		return 1;
	if (!control_has_group)
		return 0;
	if (cred->gid == control_gid)
		return 1;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == -1)
		return 0;
	for (i = 0; i < len / sizeof(gid_t); i++)
		if (groups[i] == control_gid)
			return 1;
	return 0;
}

/* IMSG_CTL_OK or CTL_FAIL with text, or CTL_END (text unused). */
static void
control_reply(struct ctl_conn *c, uint32_t type, uint32_t peerid,
    const char *text)
{
	struct msg_ctl_ok	 ok;
	struct msg_ctl_fail	 fail;
	struct ibuf		*b;

	if ((b = imsg_create(&c->iev.ibuf, type, peerid, 0,
	    strlen(text) + 8)) == NULL)
		goto fail;
	if (type == IMSG_CTL_OK) {
		ok.message = text;
		msg_ctl_ok_put(b, &ok);
	} else if (type == IMSG_CTL_FAIL) {
		fail.message = text;
		msg_ctl_fail_put(b, &fail);
	}
	if (imsgev_close(&c->iev, b) == 0)
		return;
fail:
	log_warn("control: reply");
	c->closing = 1;
}

static void
control_accept(int lfd, short event, void *arg)
{
	struct ucred	 cred;
	socklen_t	 len = sizeof(cred);
	struct ctl_conn	*c = NULL;
	size_t		 i;
	int		 fd;

	if ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) ==
	    -1) {
		if (errno != EAGAIN && errno != EINTR &&
		    errno != ECONNABORTED)
			log_warn("control: accept");
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1) {
		log_warn("control: SO_PEERCRED");
		close(fd);
		return;
	}
	for (i = 0; i < CONTROL_MAX_CLIENTS; i++) {
		if (!conns[i].live) {
			c = &conns[i];
			break;
		}
	}
	if (c == NULL) {
		log_warnx("control: too many clients, dropping uid %u",
		    (unsigned int)cred.uid);
		close(fd);
		return;
	}
	memset(c, 0, sizeof(*c));
	if (imsgev_init(&c->iev, fd, "control", control_dispatch, c) == -1) {
		log_warn("control: client");
		close(fd);
		return;
	}
	c->live = 1;
	c->serial = ++conn_serial;
	c->uid = cred.uid;
	c->pid = cred.pid;
	if (!control_peer_allowed(fd, &cred)) {
		log_warnx("control: uid %u (pid %d) refused",
		    (unsigned int)cred.uid, (int)cred.pid);
		control_reply(c, IMSG_CTL_FAIL, 0, "permission denied");
		c->closing = 1;
	}
}

static void
control_close(struct ctl_conn *c)
{
	int	 fd = c->iev.ibuf.fd;

	imsgev_clear(&c->iev);
	close(fd);
	c->live = 0;
}

/*
 * The answer to a request held by a ticket, if its client is still
 * connected; the ticket is spent.
 */
void
control_settle(struct ctl_ticket *t, int ok, const char *text)
{
	struct ctl_conn	*c;

	if (t->serial == 0)
		return;
	c = t->conn < CONTROL_MAX_CLIENTS ? &conns[t->conn] : NULL;
	if (c != NULL && c->live && c->serial == t->serial && !c->closing)
		control_reply(c, ok ? IMSG_CTL_OK : IMSG_CTL_FAIL, t->peerid,
		    text);
	t->serial = 0;
}

/* One line of /proc/PID/status, e.g. "CapEff:\t0000...". */
static int
proc_status_field(const char *text, const char *key, char *out,
    size_t outlen)
{
	const char	*p = text, *eol;
	size_t		 klen = strlen(key), n;

	while (p != NULL && *p != '\0') {
		if (strncmp(p, key, klen) == 0 && p[klen] == ':') {
			p += klen + 1;
			p += strspn(p, " \t");
			eol = strchr(p, '\n');
			n = eol != NULL ? (size_t)(eol - p) : strlen(p);
			if (n >= outlen)
				return -1;
			memcpy(out, p, n);
			out[n] = '\0';
			return 0;
		}
		if ((p = strchr(p, '\n')) != NULL)
			p++;
	}
	return -1;
}

static void
control_status_proc(struct ctl_conn *c, uint32_t peerid, const char *title,
    pid_t pid, unsigned int restarts, const char *state)
{
	struct msg_ctl_status_proc	 m;
	char				 path[64], text[4096], val[128];
	struct ibuf			*b;
	uint64_t			 capeff = 0, capprm = 0;
	uint32_t			 uid = UINT32_MAX, seccomp = 0, nnp = 0;
	ssize_t				 n = -1;
	int				 fd;

	if (pid > 0) {
		(void)snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) != -1) {
			n = read(fd, text, sizeof(text) - 1);
			close(fd);
		}
	}
	if (n > 0) {
		text[n] = '\0';
		if (proc_status_field(text, "Uid", val, sizeof(val)) == 0)
			uid = (uint32_t)strtoul(val, NULL, 10);
		if (proc_status_field(text, "CapEff", val, sizeof(val)) == 0)
			capeff = strtoull(val, NULL, 16);
		if (proc_status_field(text, "CapPrm", val, sizeof(val)) == 0)
			capprm = strtoull(val, NULL, 16);
		if (proc_status_field(text, "Seccomp", val, sizeof(val)) == 0)
			seccomp = (uint32_t)strtoul(val, NULL, 10);
		if (proc_status_field(text, "NoNewPrivs", val,
		    sizeof(val)) == 0)
			nnp = (uint32_t)strtoul(val, NULL, 10);
	} else {
		pid = 0;
		state = "down";
	}
	if ((b = imsg_create(&c->iev.ibuf, IMSG_CTL_STATUS_PROC, peerid, 0,
	    128)) == NULL) {
		c->closing = 1;
		return;
	}
	m.title = title;
	m.pid = (uint32_t)pid;
	m.uid = uid;
	m.capeff = capeff;
	m.capprm = capprm;
	m.seccomp = seccomp;
	m.nonewprivs = nnp;
	m.restarts = restarts;
	m.state = state;
	msg_ctl_status_proc_put(b, &m);
	if (imsgev_close(&c->iev, b) == -1)
		c->closing = 1;
}

static void
control_status(struct ctl_conn *c, uint32_t peerid)
{
	static const char *const states[] = {
		[CHILD_DOWN] = "down",
		[CHILD_STARTING] = "starting",
		[CHILD_RUNNING] = "running",
	};
	struct child	*ch;
	int		 id;

	control_status_proc(c, peerid, proc_table[PROC_PARENT].title,
	    getpid(), 0, "running");
	for (id = PROC_PARENT + 1; id < PROC_MAX; id++) {
		ch = child_by_id(id);
		control_status_proc(c, peerid, ch->desc->title, ch->pid,
		    ch->restarts, states[ch->state]);
	}
	if (state_ws_list(control_status_ws, c) == -1) {
		control_reply(c, IMSG_CTL_FAIL, peerid,
		    "state database error");
		return;
	}
	vm_status_notes(control_status_note, c);
	control_reply(c, IMSG_CTL_END, peerid, "");
}

/* A workspace's use against its limits, for status. */
static int
control_status_ws(const struct ws_entry *e, void *arg)
{
	struct msg_ctl_status_ws	 m;
	struct ctl_conn			*c = arg;
	struct limits			 l;
	struct ibuf			*b;
	uint64_t			 mem, cpus, storage;
	uint32_t			 n, set;

	if (vm_ws_limits(e->id, &l, &set) == -1 ||
	    vm_usage(e->id, &n, &mem, &cpus, &storage) == -1)
		return -1;
	m.workspace = e->name;
	m.quota = set;
	m.vms = n;
	m.max_vms = l.max_vms;
	m.memory = mem << 20;
	m.max_memory = l.max_memory;
	m.vcpus = cpus > UINT32_MAX ? UINT32_MAX : (uint32_t)cpus;
	m.max_vcpus = l.max_vcpus;
	m.storage = storage;
	m.max_storage = l.max_storage;
	if ((b = imsg_create(&c->iev.ibuf, IMSG_CTL_STATUS_WS, 0, 0,
	    160)) == NULL)
		return -1;
	msg_ctl_status_ws_put(b, &m);
	return imsgev_close(&c->iev, b);
}

static void
control_status_note(const char *topic, const char *text, void *arg)
{
	struct msg_ctl_status_note	 m;
	struct ctl_conn			*c = arg;
	struct ibuf			*b;

	m.topic = topic;
	m.text = text;
	if ((b = imsg_create(&c->iev.ibuf, IMSG_CTL_STATUS_NOTE, 0, 0,
	    strlen(topic) + strlen(text) + 16)) == NULL) {
		c->closing = 1;
		return;
	}
	msg_ctl_status_note_put(b, &m);
	if (imsgev_close(&c->iev, b) == -1)
		c->closing = 1;
}

static int
control_ws_entry(const struct ws_entry *e, void *arg)
{
	struct msg_ctl_ws_entry	 m;
	struct ctl_conn		*c = arg;
	struct ibuf		*b;

	m.workspace = e->name;
	m.flags = e->flags;
	m.created = (uint64_t)e->created;
	m.revoked = (uint64_t)e->revoked;
	m.live_tokens = e->live_tokens;
	m.next_expiry = (uint64_t)e->next_expiry;
	if ((b = imsg_create(&c->iev.ibuf, IMSG_CTL_WS_ENTRY, 0, 0,
	    128)) == NULL)
		return -1;
	msg_ctl_ws_entry_put(b, &m);
	return imsgev_close(&c->iev, b);
}

/*
 * Every VM of every workspace; a template or a warm clone, mcvmd's own, is
 * not one (status counts the warm clones).
 */
static void
control_vm_list(struct ctl_conn *c, uint32_t peerid)
{
	struct msg_ctl_vm_entry	 m;
	struct ibuf		*b;
	struct vm		*vm;
	time_t			 now = vm_now();

	TAILQ_FOREACH(vm, &vms, entry) {
		if (vm_unowned(vm))
			continue;
		m.id = vm->row.id;
		m.name = vm->row.name;
		m.workspace = vm->row.ws;
		m.state = vm_state_name(vm->state);
		m.uid = vm->row.uid;
		m.qemu_pid = vm->qemu_pid > 0 ? (uint32_t)vm->qemu_pid :
		    vm_attached(vm) && vm->vmm_live ? vm->row.attach_pid : 0;
		m.memory_mib = vm->row.memory_mib;
		m.vcpus = vm->row.vcpus;
		m.uptime = m.qemu_pid > 0 && now >= vm->started ?
		    (uint64_t)(now - vm->started) : 0;
		if ((b = imsg_create(&c->iev.ibuf, IMSG_CTL_VM_ENTRY, peerid, 0,
		    160)) == NULL) {
			c->closing = 1;
			return;
		}
		msg_ctl_vm_entry_put(b, &m);
		if (imsgev_close(&c->iev, b) == -1) {
			c->closing = 1;
			return;
		}
	}
	control_reply(c, IMSG_CTL_END, peerid, "");
}

/*
 * The VM id names, or NULL with msg saying so; with owned, one whose
 * QEMU mcvm started (not an attached one).
 */
static struct vm *
control_vm_find(const char *id, int owned, char *msg, size_t len)
{
	struct vm	*vm;

	if ((vm = vm_find(id, 0)) == NULL || vm_unowned(vm)) {
		(void)snprintf(msg, len, "no VM %s: see list-vms", id);
		return NULL;
	}
	if (owned && vm_attached(vm)) {
		(void)snprintf(msg, len, "%s is attached: mcvm did not start "
		    "its QEMU and neither stops nor ends it; forget-vm %s takes "
		    "it out of mcvm", id, id);
		return NULL;
	}
	return vm;
}

/* Through vm_stop's own path; the operator's waits for no answer. */
static void
control_vm_stop(struct ctl_conn *c, uint32_t peerid,
    const struct msg_ctl_vm_stop *m)
{
	struct vm	*vm;
	char		 msg[CONTROL_MSG_MAX];
	int		 rc;

	if ((vm = control_vm_find(m->id, 1, msg, sizeof(msg))) == NULL) {
		control_reply(c, IMSG_CTL_FAIL, peerid, msg);
		return;
	}
	if ((rc = vm_stop_request(0, vm, (int)m->force,
	    TOOL_STOP_TIMEOUT_DEFAULT)) == -1) {
		(void)snprintf(msg, sizeof(msg), "%s is %s%s: retry stop-vm "
		    "in a few seconds", vm->row.id, vm_state_name(vm->state),
		    vm->op.pending ? ", under another operation" : "");
		control_reply(c, IMSG_CTL_FAIL, peerid, msg);
		return;
	}
	(void)snprintf(msg, sizeof(msg), "%s %s (%s) of workspace %s",
	    rc == 1 ? "stopped" : m->force ? "powering off" : "stopping",
	    vm->row.id, vm->row.name, vm->row.ws);
	if (rc == 0) {
		log_info("control: uid %u: %s", (unsigned int)c->uid, msg);
		(void)state_audit("mcvmctl", "vm-stop", msg);
	}
	control_reply(c, IMSG_CTL_OK, peerid, msg);
}

/* Through vm_destroy, as the tool's. */
static void
control_vm_destroy(struct ctl_conn *c, uint32_t peerid,
    const struct msg_ctl_vm_destroy *m)
{
	struct vm	*vm;
	char		 msg[CONTROL_MSG_MAX];

	if ((vm = control_vm_find(m->id, 1, msg, sizeof(msg))) == NULL) {
		control_reply(c, IMSG_CTL_FAIL, peerid, msg);
		return;
	}
	(void)snprintf(msg, sizeof(msg), "destroying %s (%s) of workspace %s",
	    vm->row.id, vm->row.name, vm->row.ws);
	if (vm->state != VS_DESTROYING) {
		log_info("control: uid %u: %s", (unsigned int)c->uid, msg);
		vm_destroy(0, vm);
	}
	control_reply(c, IMSG_CTL_OK, peerid, msg);
}

/*
 * attach-vm: answered once the VM's monitor speaks to that QEMU (or it
 * could not), through the VM's ticket.
 */
static void
control_vm_attach(struct ctl_conn *c, uint32_t peerid,
    const struct msg_ctl_vm_attach *m)
{
	struct vm	*vm;
	char		 msg[CONTROL_MSG_MAX];
	int64_t		 ws_id;
	int		 rc, revoked = 0;

	if ((rc = state_ws_id(m->workspace, &ws_id, &revoked)) != 1 ||
	    revoked) {
		(void)snprintf(msg, sizeof(msg), rc == -1 ? "state database "
		    "error" : revoked ? "workspace %s is revoked" : "workspace "
		    "%s does not exist: issue-token makes it", m->workspace);
		control_reply(c, IMSG_CTL_FAIL, peerid, msg);
		return;
	}
	if ((vm = vm_attach(m, ws_id, msg, sizeof(msg))) == NULL) {
		log_info("control: uid %u: attach-vm %s refused: %s",
		    (unsigned int)c->uid, m->qmp, msg);
		control_reply(c, IMSG_CTL_FAIL, peerid, msg);
		return;
	}
	(void)snprintf(msg, sizeof(msg), "%s (%s) of workspace %s: QEMU pid "
	    "%u at %s", vm->row.id, vm->row.name, vm->row.ws,
	    vm->row.attach_pid, vm->row.attach_qmp);
	log_info("control: uid %u: attaching %s", (unsigned int)c->uid, msg);
	(void)state_audit("mcvmctl", "vm-attach", msg);
	vm->ctl.serial = c->serial;
	vm->ctl.conn = (uint32_t)(c - conns);
	vm->ctl.peerid = peerid;
}

/* forget-vm: an attached VM leaves; its QEMU runs on. */
static void
control_vm_forget(struct ctl_conn *c, uint32_t peerid,
    const struct msg_ctl_vm_forget *m)
{
	struct vm	*vm;
	char		 msg[CONTROL_MSG_MAX];

	if ((vm = control_vm_find(m->id, 0, msg, sizeof(msg))) == NULL) {
		control_reply(c, IMSG_CTL_FAIL, peerid, msg);
		return;
	}
	if (!vm_attached(vm)) {
		(void)snprintf(msg, sizeof(msg), "%s was started by mcvm, not "
		    "attached: forgetting it would leave its QEMU unmanaged; "
		    "destroy-vm ends it", vm->row.id);
		control_reply(c, IMSG_CTL_FAIL, peerid, msg);
		return;
	}
	(void)snprintf(msg, sizeof(msg), "forgot %s (%s) of workspace %s; its "
	    "QEMU, pid %u, runs on", vm->row.id, vm->row.name, vm->row.ws,
	    vm->row.attach_pid);
	if (vm->state != VS_DESTROYING) {
		log_info("control: uid %u: %s", (unsigned int)c->uid, msg);
		vm_destroy(0, vm);
	}
	control_reply(c, IMSG_CTL_OK, peerid, msg);
}

#define FLUSH_BUSY	"too many revocations are waiting for frontd to " \
			"forget their tokens; nothing was changed: retry in " \
			"a moment"

/*
 * A revocation's answer, once frontd has forgotten the tokens it took as
 * good: a request after it is refused (front.c).
 */
static void
control_reply_flushed(struct ctl_conn *c, uint32_t peerid, const char *msg)
{
	struct ctl_ticket	 t = { c->serial, (uint32_t)(c - conns),
				    peerid };

	front_flush(&t, msg);
}

/*
 * Revocation: with CTL_REVOKE_STOP, the workspace's VMs that run, are
 * paused or boot power off at once, since no one may use them any more;
 * with CTL_REVOKE_HIBERNATE, those that can hibernate do (their jobs
 * frozen), and the others power off.  A hibernated one keeps its
 * checkpoint.  One under another operation (being created, suspended) is
 * counted, for the operator to stop.
 */
static void
control_ws_revoke(struct ctl_conn *c, uint32_t peerid,
    const struct msg_ctl_ws_revoke *m)
{
	struct vm	*vm;
	char		 msg[CONTROL_MSG_MAX], why[VM_MSG_MAX];
	size_t		 len;
	unsigned int	 stopping = 0, hibernating = 0, busy = 0, attached = 0;
	int64_t		 ws_id;
	int		 rc, revoked;

	if (!front_flush_room()) {
		control_reply(c, IMSG_CTL_FAIL, peerid, FLUSH_BUSY);
		return;
	}
	rc = state_ws_revoke(m->workspace, c->uid, msg, sizeof(msg));
	if (rc != 0) {
		control_reply(c, IMSG_CTL_FAIL, peerid,
		    rc == -1 ? "state database error" : msg);
		return;
	}
	log_info("control: uid %u: %s", (unsigned int)c->uid, msg);
	/* Its warm clones are no one's VMs: they go in any case. */
	if (state_ws_id(m->workspace, &ws_id, &revoked) == 1)
		vm_warm_drain(ws_id, "its workspace was revoked");
	if (m->vms == CTL_REVOKE_KEEP) {
		control_reply_flushed(c, peerid, msg);
		return;
	}
	TAILQ_FOREACH(vm, &vms, entry) {
		if (vm_unowned(vm) || strcmp(vm->row.ws, m->workspace) != 0 ||
		    vm->state == VS_STOPPED || vm->state == VS_FAILED ||
		    vm->state == VS_STOPPING || vm->state == VS_HIBERNATED ||
		    vm->state == VS_DESTROYING)
			continue;
		if (vm_attached(vm)) {
			attached++;
			continue;
		}
		if (m->vms == CTL_REVOKE_HIBERNATE) {
			if (vm_hibernate_freeze(vm, "hibernated as its "
			    "workspace was revoked", why, sizeof(why)) == 0) {
				hibernating++;
				continue;
			}
			log_info("%s: powered off, not hibernated: %s",
			    vm->row.id, why);
		}
		if (vm_stop_request(0, vm, 1, TOOL_STOP_TIMEOUT_DEFAULT) == 0)
			stopping++;
		else
			busy++;
	}
	len = strlen(msg);
	if (m->vms == CTL_REVOKE_HIBERNATE)
		(void)snprintf(msg + len, sizeof(msg) - len, "; hibernating "
		    "%u VM%s", hibernating, hibernating == 1 ? "" : "s");
	len = strlen(msg);
	(void)snprintf(msg + len, sizeof(msg) - len, "; powering off %u VM%s",
	    stopping, stopping == 1 ? "" : "s");
	len = strlen(msg);
	if (busy > 0)
		(void)snprintf(msg + len, sizeof(msg) - len, "; %u VM%s under "
		    "another operation: stop %s with stop-vm (see list-vms)",
		    busy, busy == 1 ? " is" : "s are", busy == 1 ? "it" :
		    "them");
	len = strlen(msg);
	if (attached > 0)
		(void)snprintf(msg + len, sizeof(msg) - len, "; %u attached "
		    "VM%s run%s on, unreachable: forget-vm %s", attached,
		    attached == 1 ? "" : "s", attached == 1 ? "s" : "",
		    attached == 1 ? "it" : "them");
	log_info("control: workspace %s: %u VMs hibernating, %u powering off, "
	    "%u busy", m->workspace, hibernating, stopping, busy);
	control_reply_flushed(c, peerid, msg);
}

/* Each value set is checked as the config's would be; 0 unsets. */
static void
control_quota_set(struct ctl_conn *c, uint32_t peerid,
    const struct msg_ctl_quota_set *m)
{
	const struct {
		uint32_t		 bit;
		enum limit_field	 field;
		uint64_t		 v;
	} vals[] = {
		{ QUOTA_VMS, LIMIT_VMS, m->vms },
		{ QUOTA_MEMORY, LIMIT_MEMORY, m->memory },
		{ QUOTA_VCPUS, LIMIT_VCPUS, m->vcpus },
		{ QUOTA_STORAGE, LIMIT_STORAGE, m->storage },
	};
	struct limits	 q;
	char		 msg[CONTROL_MSG_MAX];
	size_t		 i;
	int		 rc;

	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
		if ((m->set & vals[i].bit) != 0 && vals[i].v != 0 &&
		    limit_check(vals[i].field, vals[i].v, msg,
		    sizeof(msg)) == -1) {
			control_reply(c, IMSG_CTL_FAIL, peerid, msg);
			return;
		}
	memset(&q, 0, sizeof(q));
	q.max_vms = m->vms;
	q.max_memory = m->memory;
	q.max_vcpus = m->vcpus;
	q.max_storage = m->storage;
	rc = state_ws_quota_set(m->workspace, m->set, &q, c->uid, msg,
	    sizeof(msg));
	if (rc == 0)
		log_info("control: uid %u: %s", (unsigned int)c->uid, msg);
	control_reply(c, rc == 0 ? IMSG_CTL_OK : IMSG_CTL_FAIL, peerid,
	    rc == -1 ? "state database error" : msg);
}

/* Returns -1 when the request was malformed. */
static int
control_request(struct ctl_conn *c, struct imsg *imsg)
{
	struct msg_ctl_token_issue	 ti;
	struct msg_ctl_ws_revoke	 wr;
	struct msg_ctl_vm_stop		 vs;
	struct msg_ctl_vm_destroy	 vd;
	struct msg_ctl_quota_set	 qs;
	struct msg_ctl_vm_attach	 va;
	struct msg_ctl_vm_forget	 vf;
	const char			*ws;
	uint32_t			 id = imsg->hdr.peerid;
	char				 msg[CONTROL_MSG_MAX];
	int				 rc;

	switch (imsg->hdr.type) {
	case IMSG_CTL_STATUS:
		if (msg_ctl_status_get(imsg) == -1)
			return -1;
		control_status(c, id);
		return 0;
	case IMSG_CTL_TOKEN_ISSUE:
		if (msg_ctl_token_issue_get(imsg, &ti) == -1)
			return -1;
		ws = ti.workspace;
		if (!valid_workspace_name(ws)) {
			control_reply(c, IMSG_CTL_FAIL, id,
			    "invalid workspace name");
			return 0;
		}
		if (ti.ttl > TOKEN_TTL_MAX ||
		    (ti.flags & ~WS_ALLOW_NETWORK) != 0 || ti.rotate > 1) {
			control_reply(c, IMSG_CTL_FAIL, id,
			    "invalid ttl or flags");
			return 0;
		}
		if (ti.rotate && !front_flush_room()) {
			control_reply(c, IMSG_CTL_FAIL, id, FLUSH_BUSY);
			return 0;
		}
		rc = state_token_issue(ws, ti.hash, ti.ttl, ti.flags,
		    (int)ti.rotate, c->uid, msg, sizeof(msg));
		if (rc == 0)
			log_info("control: uid %u: %s", (unsigned int)c->uid,
			    msg);
		if (rc == 0 && ti.rotate)
			control_reply_flushed(c, id, msg);
		else
			control_reply(c, rc == 0 ? IMSG_CTL_OK : IMSG_CTL_FAIL,
			    id, rc == -1 ? "state database error" : msg);
		return 0;
	case IMSG_CTL_WS_REVOKE:
		if (msg_ctl_ws_revoke_get(imsg, &wr) == -1)
			return -1;
		if (!valid_workspace_name(wr.workspace)) {
			control_reply(c, IMSG_CTL_FAIL, id,
			    "invalid workspace name");
			return 0;
		}
		control_ws_revoke(c, id, &wr);
		return 0;
	case IMSG_CTL_WS_LIST:
		if (msg_ctl_ws_list_get(imsg) == -1)
			return -1;
		if (state_ws_list(control_ws_entry, c) == -1)
			control_reply(c, IMSG_CTL_FAIL, id,
			    "state database error");
		else
			control_reply(c, IMSG_CTL_END, id, "");
		return 0;
	case IMSG_CTL_VM_LIST:
		if (msg_ctl_vm_list_get(imsg) == -1)
			return -1;
		control_vm_list(c, id);
		return 0;
	case IMSG_CTL_VM_STOP:
		if (msg_ctl_vm_stop_get(imsg, &vs) == -1)
			return -1;
		control_vm_stop(c, id, &vs);
		return 0;
	case IMSG_CTL_VM_DESTROY:
		if (msg_ctl_vm_destroy_get(imsg, &vd) == -1)
			return -1;
		control_vm_destroy(c, id, &vd);
		return 0;
	case IMSG_CTL_VM_ATTACH:
		if (msg_ctl_vm_attach_get(imsg, &va) == -1)
			return -1;
		control_vm_attach(c, id, &va);
		return 0;
	case IMSG_CTL_VM_FORGET:
		if (msg_ctl_vm_forget_get(imsg, &vf) == -1)
			return -1;
		control_vm_forget(c, id, &vf);
		return 0;
	case IMSG_CTL_QUOTA_SET:
		if (msg_ctl_quota_set_get(imsg, &qs) == -1)
			return -1;
		if (!valid_workspace_name(qs.workspace)) {
			control_reply(c, IMSG_CTL_FAIL, id,
			    "invalid workspace name");
			return 0;
		}
		control_quota_set(c, id, &qs);
		return 0;
	default:
		return -1;
	}
}

static void
control_dispatch(int fd, short event, void *arg)
{
	struct imsgev	*iev = arg;
	struct ctl_conn	*c = iev->data;
	struct imsg	 imsg;
	int		 n;

	if (imsgev_read(iev, event) == -1) {
		control_close(c);
		return;
	}
	while (!c->closing) {
		if ((n = imsg_get(&iev->ibuf, &imsg)) == -1) {
			log_warnx("control: uid %u: bad framing, dropped",
			    (unsigned int)c->uid);
			control_close(c);
			return;
		}
		if (n == 0)
			break;
		if (control_request(c, &imsg) == -1) {
			log_warnx("control: uid %u: malformed %s, dropped",
			    (unsigned int)c->uid,
			    imsg_type_name(imsg.hdr.type));
			control_reply(c, IMSG_CTL_FAIL, imsg.hdr.peerid,
			    "malformed request");
			c->closing = 1;
		}
		imsg_free(&imsg);
	}
	if (c->closing && iev->ibuf.wqlen == 0)
		control_close(c);
}
