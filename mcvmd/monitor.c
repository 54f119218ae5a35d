/*
 * The channel to a VM's monitor.  The monitor is a process of mcvm's, but
 * it runs as the VM's uid next to QEMU: a message it should not send
 * costs that VM, not mcvmd.  Its answers are matched to requests through
 * the request table, and read by the codecs of msg_vmm.h (an IMSG_VMM_OK
 * here, the others by the request's callback); READY and EVENT are its
 * own news.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent_proto.h"
#include "log.h"
#include "msg_proc.h"
#include "msg_vmm.h"
#include "req.h"
#include "vm.h"

_Static_assert(VM_GUEST_STR_MAX == AGENT_INFO_STR_MAX, "the guest's names");

/*
 * fd is mcvmd's end of a new monitor's channel: from now on the monitor's
 * messages are read by vm_vmm_dispatch.  The guest is not ready until the
 * monitor says so.
 */
static void	 vm_vmm_dispatch(int, short, void *);

void
vm_monitor_attach(struct vm *vm, int fd)
{
	if (fcntl(fd, F_SETFL, O_NONBLOCK) == -1 ||
	    imsgev_init(&vm->vmm, fd, vm->row.id, vm_vmm_dispatch, vm) == -1)
		fatal("%s", __func__);
	vm->vmm_live = 1;
	if (++vm->vmm_gen == 0)
		vm->vmm_gen = 1;
	vm->boot.agent = 0;
	vm->boot.poweroff = 0;
	vm->boot.guest_end = 0;
	vm->boot.guest_ended = 0;
	vm->boot.checkpointed = 0;
	vm->boot.shot_w = vm->boot.shot_h = 0;
}

/* The channel closes (its requests end with the processes). */
void
vm_monitor_close(struct vm *vm)
{
	int	 fd;

	if (!vm->vmm_live)
		return;
	fd = vm->vmm.ibuf.fd;
	imsgev_clear(&vm->vmm);
	close(fd);
	vm->vmm_live = 0;
}

/* The guest took its network configuration (or not): booting is over. */
static void
vm_net_configured(struct vm *vm, int ok)
{
	if (vm->state != VS_BOOTING)
		return;
	if (!ok) {
		vm_fail(vm, "the guest did not take its network configuration");
		return;
	}
	vm_guest_ready(vm);
}

static void
net_config_done(struct req *r, struct imsg *imsg)
{
	vm_net_configured(r->vm, 1);
}

/* Refused or cut off by the VM's end: nothing more to do. */
static void
net_config_cancel(struct req *r, enum req_end why, const char *text)
{
	if (why == REQ_EXPIRED || why == REQ_ERROR || why == REQ_BAD_REPLY)
		vm_net_configured(r->vm, 0);
}

/* The checkpoint is written (its MiB), for the template or a VM's own. */
static void
checkpoint_done(struct req *r, struct imsg *imsg)
{
	struct msg_vmm_ok	 m;

	if (msg_vmm_ok_get(imsg, &m) == -1) {
		vm_fail(r->vm, "malformed OK from the VM monitor");
		return;
	}
	if (r->vm->tpl)
		vm_checkpointed(r->vm, 1);
	else
		vm_hibernated(r->vm, 1, m.value, NULL);
}

static void
checkpoint_cancel(struct req *r, enum req_end why, const char *text)
{
	if (why != REQ_EXPIRED && why != REQ_ERROR && why != REQ_BAD_REPLY)
		return;
	if (r->vm->tpl)
		vm_checkpointed(r->vm, 0);
	else
		vm_hibernated(r->vm, 0, 0, text != NULL ? text :
		    "the monitor did not answer in time");
}

/* QEMU loaded the checkpoint it was started with. */
static void
incoming_done(struct req *r, struct imsg *imsg)
{
	struct msg_vmm_ok	 m;

	if (msg_vmm_ok_get(imsg, &m) == -1) {
		vm_fail(r->vm, "malformed OK from the VM monitor");
		return;
	}
	log_debug("%s: checkpoint loaded", r->vm->row.id);
	vm_template_loaded(r->vm);
}

static void
incoming_cancel(struct req *r, enum req_end why, const char *text)
{
	char	 msg[400];

	if (why != REQ_EXPIRED && why != REQ_ERROR && why != REQ_BAD_REPLY)
		return;
	(void)snprintf(msg, sizeof(msg), "the checkpoint could not be "
	    "loaded: %.300s", text != NULL ? text : "no answer in time");
	vm_fail(r->vm, msg);
}

/*
 * QEMU waits (-incoming defer) for the monitor to load the checkpoint on
 * QEMU_INCOMING_FD, with the capabilities it was written with.
 */
void
vm_incoming(struct vm *vm)
{
	struct msg_vmm_incoming	 m = { vm->wtpl_using };
	struct req		*r;

	r = req_new(RP_MONITOR, vm, IMSG_VMM_INCOMING, incoming_done,
	    incoming_cancel);
	msg_vmm_incoming_put(r->msg, &m);
	(void)req_send(r);
}

/* The monitor writes the VM's checkpoint to fd. */
void
vm_checkpoint_write(struct vm *vm, int fd)
{
	struct msg_vmm_checkpoint	 m = { vm->tpl == TPL_SHARED, 1,
					    !vm->tpl && vm->ram_cow };
	struct req			*r;

	r = req_new(RP_MONITOR, vm, IMSG_VMM_CHECKPOINT, checkpoint_done,
	    checkpoint_cancel);
	msg_vmm_checkpoint_put(r->msg, &m);
	imsg_set_fd(r->msg, fd);
	(void)req_send(r);
}

static void
vm_vmm_ready(struct vm *vm, struct imsg *imsg)
{
	struct msg_vmm_ready		 m;
	struct msg_vmm_net_config	 nc;
	struct req			*r;

	if (msg_vmm_ready_get(imsg, &m) == -1) {
		vm_fail(vm, "malformed READY from the VM monitor");
		return;
	}
	(void)snprintf(vm->agent, sizeof(vm->agent), "%s", m.agent_version);
	(void)snprintf(vm->os, sizeof(vm->os), "%s", m.os);
	(void)snprintf(vm->kernel, sizeof(vm->kernel), "%s", m.kernel);
	vm->boot.agent = 1;
	if (vm->state != VS_BOOTING)
		return;
	vm->boot.restore = 0;	/* a later start boots */
	if (vm_net_has_nic(vm)) {
		/* The creator is answered once the guest has its address. */
		r = req_new(RP_MONITOR, vm, IMSG_VMM_NET_CONFIG,
		    net_config_done, net_config_cancel);
		nc.address = vm->address;
		nc.gateway = vm->gateway;
		nc.resolver = vm->resolver;
		nc.mac = vm->mac;
		msg_vmm_net_config_put(r->msg, &nc);
		(void)req_send(r);
		return;
	}
	vm_guest_ready(vm);
}

static void
vm_vmm_event(struct vm *vm, struct imsg *imsg)
{
	struct msg_vmm_event	 m;

	if (msg_vmm_event_get(imsg, &m) == -1) {
		vm_fail(vm, "malformed event from the VM monitor");
		return;
	}
	log_debug("%s: event %u (%s)", vm->row.id, m.event, m.detail);
	switch (m.event) {
	case VMM_EV_SHUTDOWN:
		/* A guest-initiated power-off is a stop, not a crash. */
		vm->boot.poweroff = 1;
		/* QMP's reason: the guest's own reset (which -no-reboot
		 * makes an exit) or shutdown, not QEMU's end. */
		if (strcmp(m.detail, "guest-shutdown") == 0 ||
		    strcmp(m.detail, "guest-reset") == 0) {
			vm->boot.guest_end = 1;
			vm_guest_end(vm);
		}
		break;
	case VMM_EV_GUEST_LOST:
		vm->boot.agent = 0;
		log_warnx("%s: guest agent lost: %s", vm->row.id, m.detail);
		break;
	case VMM_EV_GUEST_BACK:
		vm->boot.agent = 1;
		break;
	case VMM_EV_HELD:
		if (!vm->tpl) {
			vm_fail(vm, "the VM monitor reported a hold");
			return;
		}
		vm_template_held(vm);
		break;
	default:
		break;
	}
}

/* The monitor's or the guest's refusal, as the tool's error text. */
static void
mon_error_text(struct imsg *imsg, char *msg, size_t len)
{
	struct msg_vmm_error	 m;
	const char		*text;

	if (msg_vmm_error_get(imsg, &m) == -1) {
		(void)snprintf(msg, len, "malformed error from the VM monitor");
		return;
	}
	text = m.message;
	switch (m.code) {
	case AGENT_ERR_NOJOB:
		(void)snprintf(msg, len, "the guest has no such job: %s",
		    text);
		break;
	case AGENT_ERR_LIMIT:
		(void)snprintf(msg, len, "%s: at most %d jobs run at once; "
		    "wait for one to finish, or cancel it", text,
		    AGENT_JOBS_ACTIVE_MAX);
		break;
	case AGENT_ERR_EXPIRED:
		(void)snprintf(msg, len, "the job has expired: %s", text);
		break;
	case AGENT_ERR_PATH:
		(void)snprintf(msg, len, "refused: %s (paths stay beneath "
		    "/workspace and may not use symlinks)", text);
		break;
	case VMM_ERR_GUEST_DOWN:
		(void)snprintf(msg, len, "the guest agent is not answering: "
		    "%s", text);
		break;
	case VMM_ERR_TIMEOUT:
		(void)snprintf(msg, len, "the VM did not answer in time: %s",
		    text);
		break;
	default:
		(void)snprintf(msg, len, "%s", text);
		break;
	}
}

/* An answer of the monitor's, to the request it names. */
static void
vm_vmm_answer(struct vm *vm, struct imsg *imsg)
{
	struct msg_vmm_ok	 ok;
	struct req		*r;
	char			 msg[VM_MSG_MAX];

	/*
	 * An unasked error (peerid 0: QMP broke) ends no request: the
	 * monitor has failed those it held on that channel already, and
	 * fails the next ones at once; the VM's state is the monitor's and
	 * QEMU's to report by events or by ending.  It is only logged.
	 */
	if (imsg->hdr.peerid == 0 && imsg->hdr.type == IMSG_VMM_ERROR) {
		mon_error_text(imsg, msg, sizeof(msg));
		log_warnx("%s: the VM monitor reports: %s", vm->row.id, msg);
		return;
	}
	if ((r = req_find(RP_MONITOR, vm, imsg->hdr.peerid)) == NULL) {
		log_warnx("%s: %s for no request", vm->row.id,
		    imsg_type_name(imsg->hdr.type));
		return;
	}
	if (imsg->hdr.type == r->want && r->want == IMSG_VMM_OK &&
	    msg_vmm_ok_get(imsg, &ok) == -1)
		req_end(r, REQ_BAD_REPLY, "malformed answer from the VM "
		    "monitor");
	else if (imsg->hdr.type == r->want)
		req_reply(r, imsg);
	else if (imsg->hdr.type == IMSG_VMM_ERROR) {
		mon_error_text(imsg, msg, sizeof(msg));
		req_end(r, REQ_ERROR, msg);
	} else
		req_end(r, REQ_BAD_REPLY,
		    "unexpected answer from the VM monitor");
}

static void
vm_vmm_dispatch(int fd, short event, void *arg)
{
	struct imsgev		*iev = arg;
	struct vm		*vm = iev->data;
	struct imsg		 imsg;
	struct msg_hello	 h;
	int			 n;

	if (imsgev_read(iev, event) == -1) {
		vm_monitor_close(vm);
		/* Not when mcvmd ends QEMU after its guest's own end. */
		if ((vm->state == VS_BOOTING || vm->state == VS_RUNNING ||
		    vm->state == VS_PAUSED) && !vm->boot.guest_ended)
			vm_fail(vm, vm_attached(vm) ? VM_ATTACHED_GONE :
			    vm->boot.poweroff ? "QEMU exited" :
			    "the VM monitor closed its channel");
		return;
	}
	for (;;) {
		if ((n = imsg_get(&iev->ibuf, &imsg)) == -1) {
			vm_fail(vm, "bad framing from the VM monitor");
			return;
		}
		if (n == 0)
			break;
		switch (imsg.hdr.type) {
		case IMSG_HELLO:
			if (msg_hello_get(&imsg, &h) == -1 ||
			    h.version != MCVM_PROTO_VERSION)
				vm_fail(vm, "the VM monitor speaks another "
				    "protocol version");
			break;
		case IMSG_VMM_READY:
			vm_vmm_ready(vm, &imsg);
			break;
		case IMSG_VMM_EVENT:
			vm_vmm_event(vm, &imsg);
			break;
		default:
			vm_vmm_answer(vm, &imsg);
			break;
		}
		imsg_free(&imsg);
		if (!vm->vmm_live)
			return;
	}
}
