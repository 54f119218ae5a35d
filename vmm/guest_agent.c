/*
 * The guest side for mcvm-guestd's agent (agent_proto.h): framed binary
 * messages on the virtio-serial port.  The session is HELLO (repeated
 * while the guest boots), then the host's time, fresh randomness and
 * INFO; each request of mcvmd's is one agent request, and its reply is
 * converted back to the monitor's answer (agent_relay.c, which checks
 * every bound on the way).
 *
 * The guest is untrusted: a malformed frame header loses the channel; a
 * well framed message that makes no sense costs the request it answers,
 * or restarts the session if it belongs to the handshake.
 */
#include <sys/types.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <errno.h>
#include <event.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agent_proto.h"
#include "agent_relay.h"
#include "guest.h"
#include "log.h"
#include "proto.h"
#include "vmm.h"

enum ag_state {
	AG_S_HELLO,		/* HELLO sent, repeated while booting */
	AG_S_INFO,		/* INFO sent */
	AG_S_READY,
	AG_S_LOST,		/* malformed or closed: not read again */
};

static struct {
	struct vmm_io	 io;
	enum ag_state	 state;
	uint32_t	 hello_first, hello_last;
	uint32_t	 info_id, time_id, seed_id, identity_id;
	struct vmm_identity identity;
	struct event	 hello_timer;
	uint8_t		 rx[AGENT_FRAME_MAX];
	size_t		 rx_len;
	uint8_t		 frame[AGENT_FRAME_MAX];
} ag;

static void	 ag_hello_send(void);

static void
ag_queue(const struct agent_msg *m, struct vmm_req *r)
{
	int	 n;

	if ((n = agent_encode(m, ag.frame, sizeof(ag.frame))) == -1)
		fatal("%s: cannot encode %s", __func__,
		    agent_type_name(m->type));
	vmm_io_queue(&ag.io, ag.frame, (size_t)n, r);
}

/* --- the session */

static void
ag_hello_timer(int fd, short event, void *arg)
{
	ag_hello_send();
}

/*
 * HELLO is repeated until the agent answers: the guest may still be
 * booting, and until it opens its port what we send waits in QEMU.
 * Nothing new is queued while earlier bytes are still unsent.
 */
static void
ag_hello_send(void)
{
	struct timeval	 tv = { VMM_HELLO_RETRY_MS / 1000,
			    (VMM_HELLO_RETRY_MS % 1000) * 1000 };
	struct agent_msg m;

	if (ag.state != AG_S_HELLO)
		return;
	if (TAILQ_EMPTY(&ag.io.wq)) {
		memset(&m, 0, sizeof(m));
		m.type = AGENT_HELLO;
		m.id = vmm_wire_id();
		m.u.hello.version = AGENT_PROTO_VERSION;
		if (ag.hello_first == 0)
			ag.hello_first = m.id;
		ag.hello_last = m.id;
		ag_queue(&m, NULL);
	}
	evtimer_add(&ag.hello_timer, &tv);
}

static int
ag_is_hello_id(uint32_t id)
{
	return ag.hello_first != 0 && id >= ag.hello_first &&
	    id <= ag.hello_last;
}

/* Starts (or restarts) the session. */
static void
ag_start(void)
{
	ag.state = AG_S_HELLO;
	ag.hello_first = ag.hello_last = 0;
	ag.info_id = 0;
	ag_hello_send();
}

/* The guest rebooted: a new agent, a new session. */
static void
ag_resession(const char *why)
{
	if (ag.state == AG_S_LOST)
		return;
	vmm_req_fail_all(VMM_CHAN_GUEST, VMM_ERR_GUEST_DOWN, ECONNRESET, why);
	if (ag.state == AG_S_READY)
		vmm_event(VMM_EV_GUEST_LOST, why);
	evtimer_del(&ag.hello_timer);
	ag_start();
}

static void
ag_reset(const char *why)
{
	if (ag.state == AG_S_LOST)
		return;
	ag.rx_len = 0;
	ag_resession(why);
}

static void
ag_lost(const char *why)
{
	if (ag.state == AG_S_LOST)
		return;
	log_warnx("agent channel lost: %s", why);
	ag.state = AG_S_LOST;
	evtimer_del(&ag.hello_timer);
	vmm_io_stop_reading(&ag.io);
	vmm_io_drop_queue(&ag.io);
	vmm_req_fail_all(VMM_CHAN_GUEST, VMM_ERR_GUEST_DOWN, EPIPE, why);
	vmm_event(VMM_EV_GUEST_LOST, why);
}

static int
ag_up(const char **why)
{
	if (ag.state == AG_S_READY)
		return 1;
	if (why != NULL)
		*why = ag.state == AG_S_LOST ? "the agent channel is lost" :
		    "the agent has not answered yet";
	return 0;
}

/*
 * A new session: the host's time and fresh randomness first (a guest
 * restored from a checkpoint has the checkpoint's clock and random
 * state), then INFO, whose answer makes the guest ready.
 */
static void
ag_session_start(void)
{
	struct agent_msg	 req;
	struct timespec		 now;
	uint8_t			 seed[AGENT_SEED_LEN];

	if (clock_gettime(CLOCK_REALTIME, &now) == -1)
		fatal("clock_gettime");
	if (getrandom(seed, sizeof(seed), 0) != (ssize_t)sizeof(seed))
		fatal("getrandom");
	memset(&req, 0, sizeof(req));
	req.type = AGENT_SET_TIME;
	req.id = ag.time_id = vmm_wire_id();
	req.u.set_time.sec = now.tv_sec;
	req.u.set_time.nsec = (uint32_t)now.tv_nsec;
	ag_queue(&req, NULL);
	memset(&req, 0, sizeof(req));
	req.type = AGENT_SEED;
	req.id = ag.seed_id = vmm_wire_id();
	req.u.seed.data = seed;
	ag_queue(&req, NULL);
	explicit_bzero(seed, sizeof(seed));
	ag.identity_id = 0;
	if (ag.identity.hostname[0] != '\0') {
		memset(&req, 0, sizeof(req));
		req.type = AGENT_IDENTITY;
		req.id = ag.identity_id = vmm_wire_id();
		req.u.identity.hostname = ag.identity.hostname;
		req.u.identity.machine_id = ag.identity.machine_id;
		ag_queue(&req, NULL);
	}
	memset(&req, 0, sizeof(req));
	req.type = AGENT_INFO;
	req.id = ag.info_id = vmm_wire_id();
	ag_queue(&req, NULL);
	ag.state = AG_S_INFO;
}

/* INFO answered: the decoder bounded its strings by AGENT_INFO_STR_MAX. */
static void
ag_session_ready(const struct agent_msg *m)
{
	ag.state = AG_S_READY;
	vmm_guest_up(m->u.info.agent_version, m->u.info.os,
	    m->u.info.kernel);
}

/* A handshake request's answer made no sense: the session starts over. */
static int
ag_handshake_id(uint32_t id)
{
	return (ag.state == AG_S_HELLO && ag_is_hello_id(id)) ||
	    (ag.state == AG_S_INFO && (id == ag.time_id ||
	    id == ag.seed_id || id == ag.identity_id || id == ag.info_id));
}

/* An answer of the handshake; 0 if m is none. */
static int
ag_handshake(const struct agent_msg *m)
{
	if (ag.state == AG_S_HELLO && ag_is_hello_id(m->id)) {
		if (m->type != (AGENT_REPLY | AGENT_HELLO) ||
		    m->u.hello.version != AGENT_PROTO_VERSION) {
			ag_lost("the agent refused our protocol version");
			return 1;
		}
		evtimer_del(&ag.hello_timer);
		ag_session_start();
		return 1;
	}
	if (ag.state == AG_S_INFO && (m->id == ag.time_id ||
	    m->id == ag.seed_id || m->id == ag.identity_id)) {
		if (m->type == AGENT_ERROR && m->id == ag.seed_id) {
			ag_lost("the guest could not seed its random "
			    "generator");
			return 1;
		}
		if (m->type == AGENT_ERROR)
			log_warnx("the guest did not take %s: %s",
			    m->id == ag.time_id ? "the time" : "its identity",
			    m->u.error.message);
		return 1;
	}
	if (ag.state == AG_S_INFO && m->id == ag.info_id) {
		if (m->type != (AGENT_REPLY | AGENT_INFO)) {
			ag_lost("the agent refused INFO");
			return 1;
		}
		ag_session_ready(m);
		return 1;
	}
	return 0;
}

/* --- requests and their replies */

/*
 * A reply the guest framed well but that makes no sense as the answer to
 * its request fails that request alone; the channel goes on.
 */
static void
ag_bad_reply(struct vmm_req *r, uint16_t type, const char *why)
{
	char	 text[AGENT_ERRMSG_MAX];

	log_warnx("agent %s %u: %s", agent_type_name(type), r->wire_id, why);
	(void)snprintf(text, sizeof(text), "the guest agent's answer to %s "
	    "was refused: %s", agent_type_name((uint16_t)r->g_kind), why);
	vmm_fail(r, AGENT_ERR_PROTO, EBADMSG, text);
}

/*
 * An agent reply as the monitor's answer to r, whichever guest side made
 * it: r->g_kind names the request it answers.
 */
void
vmm_guest_answer(struct vmm_req *r, const struct agent_msg *m)
{
	struct ibuf	*b;
	uint32_t	 type;

	if (m->type != AGENT_ERROR &&
	    m->type != (AGENT_REPLY | (uint16_t)r->g_kind)) {
		ag_bad_reply(r, m->type, "a reply of the wrong type");
		return;
	}
	type = m->type == AGENT_ERROR ? IMSG_VMM_ERROR :
	    imsg_reply_type(r->op->type);
	b = vmm_answer_begin(r, type);
	if (agent_reply_put(b, type, m, r->g_enc) == -1) {
		imsg_discard(b);
		ag_bad_reply(r, m->type, "it cannot be relayed");
		return;
	}
	vmm_answer_end(r, b);
}

/*
 * A well framed frame that did not decode: it costs the request it
 * answers, if any, or the handshake it belongs to, never the channel.
 */
static void
ag_undecodable(const struct agent_hdr *hdr)
{
	struct vmm_req	*r;

	if (ag_handshake_id(hdr->id)) {
		log_warnx("malformed %s from the guest during the handshake",
		    agent_type_name(hdr->type));
		/* What follows is of the same session: kept, and ignored
		 * unless it answers the new HELLO. */
		ag_resession("malformed handshake answer from the guest");
		return;
	}
	if ((r = vmm_req_find(VMM_CHAN_GUEST, hdr->id)) == NULL) {
		log_debug("malformed agent %s %u answers no request in flight",
		    agent_type_name(hdr->type), hdr->id);
		return;
	}
	ag_bad_reply(r, hdr->type, "malformed message");
}

/* One decoded frame from the guest. */
static void
ag_message(const struct agent_msg *m)
{
	struct vmm_req	*r;

	if (!(m->type & AGENT_REPLY)) {
		log_debug("agent sent a request (%s); ignored",
		    agent_type_name(m->type));
		return;		/* the guest asks nothing */
	}
	if (ag_handshake(m))
		return;
	if ((r = vmm_req_find(VMM_CHAN_GUEST, m->id)) == NULL) {
		/* A late answer to a request given up on, or a stale HELLO. */
		log_debug("agent %s %u answers no request in flight",
		    agent_type_name(m->type), m->id);
		return;
	}
	vmm_guest_answer(r, m);
}

static void
ag_read(int fd, short event, void *arg)
{
	struct agent_hdr	 hdr;
	struct agent_msg	 m;
	ssize_t			 n;
	size_t			 off;
	int			 len;

	n = recv(fd, ag.rx + ag.rx_len, sizeof(ag.rx) - ag.rx_len,
	    MSG_DONTWAIT);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		ag_lost(n == 0 || errno == ECONNRESET ?
		    "agent channel closed" : "agent channel failed");
		return;
	}
	ag.rx_len += (size_t)n;
	off = 0;
	while (ag.state != AG_S_LOST) {
		len = agent_frame_check(ag.rx + off, ag.rx_len - off, &hdr);
		if (len == 0)
			break;
		if (len == -1) {
			ag_lost("malformed frame header from the guest");
			return;
		}
		if (agent_decode(&hdr, ag.rx + off + AGENT_HDR_LEN, &m) == -1)
			ag_undecodable(&hdr);
		else
			ag_message(&m);
		off += (size_t)len;
	}
	if (ag.state == AG_S_LOST)
		return;
	if (off > 0) {
		memmove(ag.rx, ag.rx + off, ag.rx_len - off);
		ag.rx_len -= off;
	}
}

static void
ag_write(int fd, short event, void *arg)
{
	if (vmm_io_flush(&ag.io) == -1)
		ag_lost("agent channel closed");
}

/* One agent request for r; its reply answers r. */
static void
ag_send(struct vmm_req *r, struct agent_msg *m)
{
	if (ag.io.wqlen > VMM_AGENT_WQ_MAX) {
		log_debug("%s %u refused: busy", r->op->name, r->peerid);
		vmm_fail(r, VMM_ERR_BUSY, EBUSY, "too many requests in flight");
		return;
	}
	r->g_kind = m->type;
	m->id = r->wire_id;
	ag_queue(m, r);
}

static void
ag_exec(struct vmm_req *r, const struct msg_vmm_exec *x)
{
	struct agent_msg	 m;

	agent_req_exec(x, &m);
	ag_send(r, &m);
}

static void
ag_job(struct vmm_req *r, uint16_t type, uint32_t job)
{
	struct agent_msg	 m;

	memset(&m, 0, sizeof(m));
	m.type = type;
	m.u.job.job = job;
	ag_send(r, &m);
}

static void
ag_job_status(struct vmm_req *r, uint32_t job)
{
	ag_job(r, AGENT_JOB_STATUS, job);
}

static void
ag_job_cancel(struct vmm_req *r, uint32_t job)
{
	ag_job(r, AGENT_JOB_CANCEL, job);
}

static void
ag_job_read(struct vmm_req *r, const struct msg_vmm_job_read *x)
{
	struct agent_msg	 m;

	agent_req_job_read(x, &m);
	r->g_enc = x->encoding;
	ag_send(r, &m);
}

static void
ag_file_read(struct vmm_req *r, const struct msg_vmm_file_read *x)
{
	struct agent_msg	 m;

	agent_req_file_read(x, &m);
	r->g_enc = x->encoding;
	ag_send(r, &m);
}

static void
ag_file_write(struct vmm_req *r, const struct msg_vmm_file_write *x)
{
	struct agent_msg	 m;

	agent_req_file_write(x, &m);
	ag_send(r, &m);
}

static void
ag_file_list(struct vmm_req *r, const struct msg_vmm_file_list *x)
{
	struct agent_msg	 m;

	agent_req_file_list(x, &m);
	ag_send(r, &m);
}

/* A request without fields. */
static void
ag_simple(struct vmm_req *r, uint16_t type)
{
	struct agent_msg	 m;

	memset(&m, 0, sizeof(m));
	m.type = type;
	ag_send(r, &m);
}

static void
ag_info(struct vmm_req *r)
{
	ag_simple(r, AGENT_INFO);
}

static void
ag_freeze(struct vmm_req *r)
{
	ag_simple(r, AGENT_FREEZE);
}

static void
ag_thaw(struct vmm_req *r)
{
	ag_simple(r, AGENT_THAW);
}

static void
ag_poweroff(struct vmm_req *r)
{
	ag_simple(r, AGENT_POWEROFF);
}

static void
ag_set_time(struct vmm_req *r, const struct msg_vmm_set_time *x)
{
	struct agent_msg	 m;

	agent_req_set_time(x, &m);
	ag_send(r, &m);
}

/*
 * The VM's new name: this session's, and each next one's.  A monitor
 * started without an identity (-H, -M) has no machine id to send with it.
 */
static void
ag_identity(struct vmm_req *r, const struct msg_vmm_identity *x)
{
	struct agent_msg	 m;

	if (ag.identity.machine_id[0] == '\0') {
		vmm_fail(r, AGENT_ERR_STATE, EINVAL, "the monitor has no "
		    "identity to change");
		return;
	}
	(void)snprintf(ag.identity.hostname, sizeof(ag.identity.hostname),
	    "%s", x->hostname);
	memset(&m, 0, sizeof(m));
	m.type = AGENT_IDENTITY;
	m.u.identity.hostname = ag.identity.hostname;
	m.u.identity.machine_id = ag.identity.machine_id;
	ag_send(r, &m);
}

static void
ag_net_config(struct vmm_req *r, const struct msg_vmm_net_config *x)
{
	struct agent_msg	 m;

	agent_req_net_config(x, &m);
	ag_send(r, &m);
}

static void
ag_forget(struct vmm_req *r)
{
	vmm_io_unqueue(&ag.io, r);
}

static void
ag_init(int fd, enum vmm_mode mode, const struct vmm_identity *id)
{
	ag.identity = *id;
	vmm_io_init(&ag.io, "agent", fd, ag_read, ag_write);
	evtimer_set(&ag.hello_timer, ag_hello_timer, NULL);
	if (mode == VMM_MODE_RESTORE)
		vmm_io_queue(&ag.io, "\n", 1, NULL);
	if (mode != VMM_MODE_HOLD)
		ag_start();
}

const struct vmm_guest vmm_guest_agent = {
	.name = "mcvm agent",
	.init = ag_init,
	.up = ag_up,
	.reset = ag_reset,
	.exec = ag_exec,
	.job_status = ag_job_status,
	.job_cancel = ag_job_cancel,
	.job_read = ag_job_read,
	.file_read = ag_file_read,
	.file_write = ag_file_write,
	.file_list = ag_file_list,
	.info = ag_info,
	.freeze = ag_freeze,
	.thaw = ag_thaw,
	.set_time = ag_set_time,
	.identity = ag_identity,
	.poweroff = ag_poweroff,
	.net_config = ag_net_config,
	.forget = ag_forget,
};
