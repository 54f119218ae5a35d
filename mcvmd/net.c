/*
 * mcvmd's client of netd: each VM's network namespace (and with network
 * on, its tap, address and port forwards), set up and torn down through
 * the request table.  A VM with network off and port forwards gets a NIC
 * too, inbound only: netd lets it answer the forwarded connections and
 * nothing else, and gives it no gateway or resolver.  netd is inside the
 * suite: a malformed message from it is fatal here.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "msg_net.h"
#include "qemu.h"
#include "req.h"
#include "vm.h"

_Static_assert(VM_FORWARDS_MAX == NET_FWD_MAX, "a VM's forwards");
_Static_assert(VM_NET_STR_MAX == NET_STR_MAX + 1, "netd's strings");

static char		 net_preflight[NET_PREFLIGHT_TEXT_MAX + 1];

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

/* What netd is asked for: NET_OFF, NET_ON or NET_INBOUND. */
static uint32_t
vm_net_mode(const struct vm *vm)
{
	if (vm->row.network)
		return NET_ON;
	return vm->nfwd > 0 ? NET_INBOUND : NET_OFF;
}

/* Whether the guest has a NIC: network on, or inbound only. */
int
vm_net_has_nic(const struct vm *vm)
{
	return vm_net_mode(vm) != NET_OFF;
}

/*
 * Every VM gets its own network namespace from netd; with a NIC, a tap
 * in it, an address and its port forwards.
 */
void
vm_net_setup(struct vm *vm)
{
	struct msg_net_setup	 m;
	struct req		*r;
	size_t			 i;

	if (!vm_net_is_up()) {
		vm_fail(vm, "the network daemon is not up");
		return;
	}
	memset(&m, 0, sizeof(m));
	m.vm_id = vm->row.id;
	m.slot = vm->row.slot;
	m.network = vm_net_mode(vm);
	m.nforwards = (uint32_t)vm->nfwd;
	for (i = 0; i < vm->nfwd; i++) {
		m.fwd[i].host = vm->fwd[i].host;
		m.fwd[i].guest = vm->fwd[i].guest;
	}
	r = req_new(RP_NETD, vm, IMSG_NET_SETUP, net_setup_done,
	    net_setup_cancel);
	msg_net_setup_put(r->msg, &m);
	(void)req_send(r);
	vm->net_live = 1;
}

/* What netd holds for vm goes (if netd is there to ask). */
void
vm_net_teardown(struct vm *vm)
{
	struct msg_net_teardown	 m = { vm->row.id, vm->row.slot };
	struct req		*r;

	vm->net_live = 0;
	if (!vm_net_is_up())
		return;
	r = req_new(RP_NETD, vm, IMSG_NET_TEARDOWN, net_teardown_done,
	    net_teardown_cancel);
	msg_net_teardown_put(r->msg, &m);
	(void)req_send(r);
}

/* A teardown no VM waits for: of what netd holds for no running VM. */
static void
net_teardown_unowned(const char *id, uint32_t slot)
{
	struct msg_net_teardown	 m = { id, slot };
	struct ibuf		*b;

	if (!vm_net_is_up())
		return;
	b = req_notice_msg(RP_NETD, IMSG_NET_TEARDOWN, 1);
	msg_net_teardown_put(b, &m);
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

static void
net_setup_done(struct req *q, struct imsg *imsg)
{
	struct vm		*vm = q->vm;
	struct msg_net_result	 m;
	uint32_t		 i;
	char			 msg[NET_TEXT_MAX + 64];

	if (msg_net_result_get(imsg, &m) == -1)
		fatalx("netd: malformed IMSG_NET_RESULT");
	if (m.status == 0 && m.nforwards != vm->nfwd)
		fatalx("netd: %u forwards for %zu asked", m.nforwards,
		    vm->nfwd);
	for (i = 0; i < m.nforwards; i++) {
		if (m.fwd[i].guest != vm->fwd[i].guest ||
		    (vm->fwd[i].host != 0 && m.fwd[i].host != vm->fwd[i].host))
			fatalx("netd: bad forward in IMSG_NET_RESULT");
		vm->fwd[i].host = (uint16_t)m.fwd[i].host;
	}
	(void)snprintf(vm->address, sizeof(vm->address), "%s", m.address);
	(void)snprintf(vm->gateway, sizeof(vm->gateway), "%s", m.gateway);
	(void)snprintf(vm->resolver, sizeof(vm->resolver), "%s", m.resolver);
	(void)snprintf(vm->mac, sizeof(vm->mac), "%s", m.mac);
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
	if (m.status != 0) {
		vm->address[0] = '\0';
		(void)snprintf(msg, sizeof(msg), "the network could not be "
		    "set up: %s", m.text);
		vm_close_store_fds(vm);
		vm_fail(vm, msg);
		return;
	}
	if (vm->net_fds[NET_FD_NETNS] == -1 || (vm_net_has_nic(vm) &&
	    (vm->net_fds[NET_FD_TAP] == -1 || !qemu_valid_mac(vm->mac))))
		fatalx("netd: network set up without its fds or MAC");
	if (!vm->row.network && (vm->gateway[0] != '\0' ||
	    vm->resolver[0] != '\0'))
		fatalx("netd: a gateway for a VM without the network");
	if (!vm_net_has_nic(vm))
		vm->address[0] = '\0';
	vm_fsm(vm, VE_NET_READY, NULL);
	vm_spawn(vm);
}

void
vm_net_imsg(struct imsg *imsg)
{
	struct msg_net_fd		 f;
	struct msg_net_entry		 e;
	struct msg_net_preflight_result	 p;
	struct req			*q;
	struct vm			*vm;
	int				 fd;

	switch (imsg->hdr.type) {
	case IMSG_NET_FD:
		if (msg_net_fd_get(imsg, &f) == -1 || imsg->fd == -1)
			fatalx("netd: malformed IMSG_NET_FD");
		fd = imsg_get_fd(imsg);
		if ((q = req_find(RP_NETD, NULL, imsg->hdr.peerid)) == NULL ||
		    q->vm == NULL) {
			close(fd);
			return;
		}
		if (q->vm->net_fds[f.role] != -1)
			fatalx("netd: fd role %u sent twice", f.role);
		q->vm->net_fds[f.role] = fd;
		return;
	case IMSG_NET_RESULT:
		if ((q = req_find(RP_NETD, NULL, imsg->hdr.peerid)) == NULL)
			return;
		req_reply(q, imsg);
		return;
	case IMSG_NET_ENTRY:
		/* What netd holds for a VM that is not running goes. */
		if (msg_net_entry_get(imsg, &e) == -1)
			fatalx("netd: malformed IMSG_NET_ENTRY");
		vm = vm_find(e.vm_id, 0);
		if (vm == NULL || (vm->qemu_pid <= 0 &&
		    req_pending(vm, RP_NETD) == NULL)) {
			log_info("%s: tearing down its leftover network",
			    e.vm_id);
			net_teardown_unowned(e.vm_id, e.slot);
			if (vm != NULL)
				vm->net_live = 0;
		}
		return;
	case IMSG_NET_PREFLIGHT_RESULT:
		if (msg_net_preflight_result_get(imsg, &p) == -1)
			fatalx("netd: malformed IMSG_NET_PREFLIGHT_RESULT");
		(void)snprintf(net_preflight, sizeof(net_preflight), "%s",
		    p.text);
		if (p.problems > 0)
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
