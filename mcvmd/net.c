/*
 * mcvmd's client of netd: each VM's network namespace (and with network
 * on, its tap, address and port forwards), set up and torn down through
 * the request table.  netd is inside the suite: a malformed message from
 * it is fatal here.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "msg.h"
#include "qemu.h"
#include "req.h"
#include "vm.h"

#define NET_TEXT_MAX	1023

static char		 net_preflight[2048];

static void	 net_setup_done(struct req *, struct imsg *);
static void	 net_setup_cancel(struct req *, enum req_end, const char *);
static void	 net_teardown_done(struct req *, struct imsg *);
static void	 net_teardown_cancel(struct req *, enum req_end,
		    const char *);

int
vm_net_is_up(void)
{
	struct child	*c = child_by_id(PROC_NETD);

	return c->iev_live && c->state == CHILD_RUNNING;
}

const char *
vm_net_preflight(void)
{
	return net_preflight[0] != '\0' ? net_preflight : "not checked yet";
}

/*
 * Every VM gets its own network namespace from netd; with network on, a
 * tap in it, an address and its port forwards.
 */
void
vm_net_setup(struct vm *vm)
{
	struct req	*r;
	size_t		 i;

	if (!vm_net_is_up()) {
		vm_fail(vm, "the network daemon is not up");
		return;
	}
	r = req_new(RP_NETD, vm, IMSG_NET_SETUP, net_setup_done,
	    net_setup_cancel);
	m_add_str(r->msg, vm->row.id);
	m_add_u32(r->msg, vm->row.slot);
	m_add_u32(r->msg, vm->row.network);
	m_add_u32(r->msg, (uint32_t)vm->nfwd);
	for (i = 0; i < vm->nfwd; i++) {
		m_add_u32(r->msg, vm->fwd[i].host);
		m_add_u32(r->msg, vm->fwd[i].guest);
	}
	(void)req_send(r);
	vm->net_live = 1;
}

/* What netd holds for vm goes (if netd is there to ask). */
void
vm_net_teardown(struct vm *vm)
{
	struct req	*r;

	vm->net_live = 0;
	if (!vm_net_is_up())
		return;
	r = req_new(RP_NETD, vm, IMSG_NET_TEARDOWN, net_teardown_done,
	    net_teardown_cancel);
	m_add_str(r->msg, vm->row.id);
	m_add_u32(r->msg, vm->row.slot);
	(void)req_send(r);
}

/* A teardown no VM waits for: of what netd holds for no running VM. */
static void
net_teardown_unowned(const char *id, uint32_t slot)
{
	struct ibuf	*b;

	if (!vm_net_is_up())
		return;
	b = req_notice_msg(RP_NETD, IMSG_NET_TEARDOWN, 1);
	m_add_str(b, id);
	m_add_u32(b, slot);
	req_notice(RP_NETD, IMSG_NET_TEARDOWN, b);
}

static void
net_setup_cancel(struct req *r, enum req_end why, const char *text)
{
	struct vm	*vm = r->vm;
	char		 msg[128];

	if (why == REQ_VM_GONE)
		return;
	vm_close_store_fds(vm);
	if (why == REQ_PEER_LOST) {
		/* The old netd died with this request. */
		vm_fail(vm, "the network daemon restarted");
		return;
	}
	(void)snprintf(msg, sizeof(msg), "the network daemon did not answer "
	    "within %d s", VM_NET_TIMEOUT);
	vm_fail(vm, msg);
}

/* A teardown's answer: what it says is netd's to log. */
static void
net_teardown_done(struct req *r, struct imsg *imsg)
{
	if (r->vm->state == VS_DESTROYING)
		vm_destroy_finish(r->vm);
}

/* Late, or netd restarted: its restart lists what the teardown left. */
static void
net_teardown_cancel(struct req *r, enum req_end why, const char *text)
{
	if (why != REQ_VM_GONE && r->vm->state == VS_DESTROYING)
		vm_destroy_finish(r->vm);
}

static int
vm_net_str(struct mreader *r, char *dst)
{
	const char	*s;

	if (m_get_str(r, &s, VM_NET_STR_MAX - 1) == -1)
		return -1;
	memcpy(dst, s, strlen(s) + 1);
	return 0;
}

static void
net_setup_done(struct req *q, struct imsg *imsg)
{
	struct vm	*vm = q->vm;
	struct mreader	 r;
	const char	*text;
	uint32_t	 status, n, host, guest, i;
	char		 msg[NET_TEXT_MAX + 64];

	m_init(&r, imsg);
	if (m_get_u32(&r, &status) == -1 || vm_net_str(&r, vm->address) ==
	    -1 || vm_net_str(&r, vm->gateway) == -1 ||
	    vm_net_str(&r, vm->resolver) == -1 || vm_net_str(&r, vm->mac) ==
	    -1 || m_get_u32(&r, &n) == -1)
		fatalx("netd: malformed IMSG_NET_RESULT");
	if (status == 0 && n != vm->nfwd)
		fatalx("netd: %u forwards for %zu asked", n, vm->nfwd);
	for (i = 0; i < n; i++) {
		if (m_get_u32(&r, &host) == -1 || m_get_u32(&r, &guest) == -1 ||
		    host == 0 || host > 65535 || guest != vm->fwd[i].guest ||
		    (vm->fwd[i].host != 0 && host != vm->fwd[i].host))
			fatalx("netd: bad forward in IMSG_NET_RESULT");
		vm->fwd[i].host = (uint16_t)host;
	}
	if (m_get_str(&r, &text, NET_TEXT_MAX) == -1 || m_end(&r) == -1)
		fatalx("netd: malformed IMSG_NET_RESULT");
	if (vm->state == VS_DESTROYING) {
		/* Destroyed while netd worked: undo what it set up. */
		vm_close_store_fds(vm);
		vm_processes_gone(vm);
		return;
	}
	if (vm->state != VS_CREATING) {
		/* It failed meanwhile: nothing starts. */
		vm_close_store_fds(vm);
		vm_net_teardown(vm);
		return;
	}
	if (status != 0) {
		vm->address[0] = '\0';
		(void)snprintf(msg, sizeof(msg), "the network could not be "
		    "set up: %s", text);
		vm_close_store_fds(vm);
		vm_fail(vm, msg);
		return;
	}
	if (vm->net_fds[NET_FD_NETNS] == -1 || (vm->row.network &&
	    (vm->net_fds[NET_FD_TAP] == -1 || !qemu_valid_mac(vm->mac))))
		fatalx("netd: network set up without its fds or MAC");
	if (!vm->row.network)
		vm->address[0] = '\0';
	vm_fsm(vm, VE_NET_READY, NULL);
	vm_spawn(vm);
}

void
vm_net_imsg(struct imsg *imsg)
{
	struct mreader	 r;
	struct req	*q;
	struct vm	*vm;
	const char	*id;
	uint32_t	 role, slot;
	int		 fd;

	switch (imsg->hdr.type) {
	case IMSG_NET_FD:
		m_init(&r, imsg);
		if (m_get_u32(&r, &role) == -1 || m_end(&r) == -1 ||
		    role < NET_FD_NETNS || role > NET_FD_TAP || imsg->fd == -1)
			fatalx("netd: malformed IMSG_NET_FD");
		fd = imsg_get_fd(imsg);
		if ((q = req_find(RP_NETD, NULL, imsg->hdr.peerid)) == NULL ||
		    q->vm == NULL) {
			close(fd);
			return;
		}
		if (q->vm->net_fds[role] != -1)
			fatalx("netd: fd role %u sent twice", role);
		q->vm->net_fds[role] = fd;
		return;
	case IMSG_NET_RESULT:
		if ((q = req_find(RP_NETD, NULL, imsg->hdr.peerid)) == NULL)
			return;
		req_reply(q, imsg);
		return;
	case IMSG_NET_ENTRY:
		/* What netd holds for a VM that is not running goes. */
		m_init(&r, imsg);
		if (m_get_str(&r, &id, ID_MAX) == -1 ||
		    m_get_u32(&r, &slot) == -1 || m_end(&r) == -1)
			fatalx("netd: malformed IMSG_NET_ENTRY");
		vm = vm_find(id, 0);
		if (vm == NULL || (vm->qemu_pid <= 0 &&
		    req_pending(vm, RP_NETD) == NULL)) {
			log_info("%s: tearing down its leftover network", id);
			net_teardown_unowned(id, slot);
			if (vm != NULL)
				vm->net_live = 0;
		}
		return;
	case IMSG_NET_PREFLIGHT_RESULT:
		m_init(&r, imsg);
		if (m_get_u32(&r, &slot) == -1 || m_get_str(&r, &id,
		    sizeof(net_preflight) - 1) == -1 || m_end(&r) == -1)
			fatalx("netd: malformed IMSG_NET_PREFLIGHT_RESULT");
		memcpy(net_preflight, id, strlen(id) + 1);
		if (slot > 0)
			log_warnx("network: %s", net_preflight);
		else
			log_info("network: %s", net_preflight);
		return;
	default:
		fatalx("netd: unexpected %s", imsg_type_name(imsg->hdr.type));
	}
}

/* netd (re)started: what it holds for VMs that do not run goes. */
void
vm_net_up(void)
{
	struct vm	*vm, *next;

	/* What the old netd was asked died with it (see the cancels). */
	req_peer_lost(RP_NETD);
	for (vm = TAILQ_FIRST(&vms); vm != NULL; vm = next) {
		next = TAILQ_NEXT(vm, entry);
		if (vm->nfwd > 0 && vm->qemu_pid > 0 &&
		    vm->state != VS_DESTROYING && vm->state != VS_FAILED) {
			/*
			 * netd relayed its forwards itself: they are gone.
			 * Failing the VM says so; a silent half-working VM
			 * would not.
			 */
			vm_fail(vm, "its port forwards ended when the network "
			    "daemon restarted; destroy it and create it again");
		}
	}
	req_notice(RP_NETD, IMSG_NET_LIST,
	    req_notice_msg(RP_NETD, IMSG_NET_LIST, 1));
	req_notice(RP_NETD, IMSG_NET_PREFLIGHT,
	    req_notice_msg(RP_NETD, IMSG_NET_PREFLIGHT, 1));
	vm_template_build();
}
