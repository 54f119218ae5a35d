/*
 * mcvm-vmm: the monitor of one VM.  mcvmd starts it as root with its imsg
 * socket on fd 3, a socket connected to QEMU's QMP monitor on fd 4 and one
 * connected to the guest agent's virtio-serial chardev on fd 5.  It drops
 * to the VM's uid in the empty directory, loads its seccomp filter, then
 * speaks QMP and the agent protocol and relays typed results to mcvmd.
 *
 * QEMU and the guest are untrusted: a malformed message from either costs
 * that channel (and is reported), never the monitor's sanity.  mcvmd is
 * trusted: a malformed message from it is fatal.
 */
#include <sys/types.h>
#include <sys/queue.h>
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
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "agent_proto.h"
#include "config.h"
#include "log.h"
#include "msg.h"
#include "privdrop.h"
#include "proc.h"
#include "proto.h"
#include "qmp.h"
#include "validate.h"
#include "vmm.h"
#include "vmm_relay.h"

#define VMM_USAGE	"mcvm-vmm [-dhSv] [-D macro=value] [-f file] " \
			"[-m hold | restore] -i vm-id -u uid -g gid"

/*
 * A template's guest agent holds once it is up, before its root filesystem
 * is writable, reading the agent port (mcvm.hold): -m hold says nothing to
 * it and reports VMM_EV_HELD once the port is open, and the VM is then
 * checkpointed.  A VM restored from that checkpoint is released by one
 * newline (-m restore), and its agent serves on.
 */
enum vmm_mode {
	VMM_MODE_BOOT,
	VMM_MODE_HOLD,
	VMM_MODE_RESTORE,
};

/* The checkpoint: migration to a file descriptor QEMU gets over QMP. */
#define VMM_CKPT_FDNAME		"checkpoint"
#define VMM_CKPT_BANDWIDTH	"{\"max-bandwidth\": 1099511627776}"
#define VMM_CKPT_POLL_MS	20
enum ckpt_step {
	CKPT_GETFD = 1,
	CKPT_BANDWIDTH,
	CKPT_MIGRATE,
	CKPT_POLL,
};

enum vmm_chan {
	CHAN_QMP = 1,
	CHAN_AGENT,
};

struct outbuf {
	TAILQ_ENTRY(outbuf)	 entry;
	struct vmm_req		*owner;	/* NULL: abandoned */
	size_t			 len;
	size_t			 off;
	uint8_t			 data[];
};
TAILQ_HEAD(outq, outbuf);

struct vmm_req {
	int		 used;
	uint32_t	 peerid;		/* mcvmd's request id */
	uint32_t	 type;			/* its IMSG_VMM_* */
	enum vmm_chan	 chan;
	uint32_t	 wire_id;		/* QMP or agent id */
	uint16_t	 agent_type;
	uint32_t	 encoding;		/* JOB_READ: VMM_ENC_* */
	const char	*qmp_cmd;
	enum ckpt_step	 step;			/* IMSG_VMM_CHECKPOINT */
	int		 unsent;		/* QMP not negotiated yet */
	struct outbuf	*out;		/* its frame, while queued */
	struct event	 timer;
};

struct chan {
	const char	*name;
	int		 fd;
	struct event	 rev;
	struct event	 wev;
	int		 reading;
	int		 writing;
	struct outq	 wq;
	size_t		 wqlen;
};

enum qmp_state {
	QMP_S_GREETING,		/* waiting for QEMU's greeting */
	QMP_S_CAPS,		/* qmp_capabilities sent */
	QMP_S_READY,
	QMP_S_BROKEN,		/* protocol error: bytes are discarded */
};

enum agent_state {
	AG_S_HELLO,		/* HELLO sent, repeated while booting */
	AG_S_INFO,		/* INFO sent */
	AG_S_READY,
	AG_S_LOST,		/* malformed or closed: not read again */
};

static struct {
	struct mcvm_config	 conf;
	struct proc_opts	 opts;
	const char		*vmid;
	enum vmm_mode		 mode;
	int			 held_sent;
	int			 ckpt_fd;		/* until QEMU has it */
	struct event		 ckpt_timer;
	long long		 uid, gid;
	pid_t			 pid;

	struct imsgev		 parent;
	struct chan		 qmp;
	struct chan		 agent;

	enum qmp_state		 qmp_state;
	uint32_t		 qmp_caps_id;
	struct qmp_parser	 qp;

	enum agent_state	 ag_state;
	uint32_t		 hello_first, hello_last;
	uint32_t		 info_id, time_id, seed_id;
	struct event		 hello_timer;
	int			 ready_sent;
	char			 ag_version[AGENT_INFO_STR_MAX];
	char			 ag_os[AGENT_INFO_STR_MAX];
	char			 ag_kernel[AGENT_INFO_STR_MAX];
	uint8_t			 arx[AGENT_FRAME_MAX];
	size_t			 arx_len;

	int			 shutdown_sent;
	uint32_t		 next_id;
	struct vmm_req		 reqs[VMM_REQ_MAX];
	uint8_t			 frame[AGENT_FRAME_MAX];
} vmm;

static void	 chan_arm(struct chan *);
static void	 agent_lost(const char *);
static void	 agent_hello_send(void);

/* --- replies and events to mcvmd */

static struct ibuf *
msg_create(uint32_t type, uint32_t peerid)
{
	struct ibuf	*b;

	if ((b = imsg_create(&vmm.parent.ibuf, type, peerid,
	    (uint32_t)vmm.pid, 0)) == NULL)
		fatal("%s", __func__);
	return b;
}

static void
msg_close(struct ibuf *b)
{
	if (imsgev_close(&vmm.parent, b) == -1)
		fatal("%s: %s", __func__, strerror(b->err ? b->err : errno));
}

static void
send_error(uint32_t peerid, uint32_t code, uint32_t err, const char *text)
{
	struct ibuf	*b = msg_create(IMSG_VMM_ERROR, peerid);

	vmm_error_put(b, code, err, text);
	msg_close(b);
}

static void
send_ok(uint32_t peerid, uint32_t value)
{
	struct ibuf	*b = msg_create(IMSG_VMM_OK, peerid);

	m_add_u32(b, value);
	msg_close(b);
}

static void
send_event(enum vmm_event ev, const char *detail)
{
	struct ibuf	*b = msg_create(IMSG_VMM_EVENT, 0);

	log_debug("event %d: %s", ev, detail);
	m_add_u32(b, ev);
	m_add_str(b, detail);
	msg_close(b);
}

/* --- requests in flight */

static uint32_t
next_wire_id(void)
{
	if (++vmm.next_id == 0)
		vmm.next_id = 1;
	return vmm.next_id;
}

static void	req_timeout(int, short, void *);

/* An answer is due within ms. */
static void
req_arm(struct vmm_req *r, uint32_t ms)
{
	struct timeval	 tv = { ms / 1000, (ms % 1000) * 1000 };

	evtimer_add(&r->timer, &tv);
}

/* The checkpoint's fd, until QEMU took its own copy or it was given up. */
static void
ckpt_close_fd(void)
{
	if (vmm.ckpt_fd != -1)
		close(vmm.ckpt_fd);
	vmm.ckpt_fd = -1;
}

static struct vmm_req *
req_new(uint32_t peerid, uint32_t type, enum vmm_chan chan)
{
	struct vmm_req	*r;
	size_t		 i;

	for (i = 0; i < VMM_REQ_MAX; i++) {
		r = &vmm.reqs[i];
		if (r->used)
			continue;
		memset(r, 0, sizeof(*r));
		r->used = 1;
		r->peerid = peerid;
		r->type = type;
		r->chan = chan;
		r->wire_id = next_wire_id();
		evtimer_set(&r->timer, req_timeout, r);
		req_arm(r, VMM_REQ_TIMEOUT_MS);
		return r;
	}
	return NULL;
}

static void
req_free(struct vmm_req *r)
{
	evtimer_del(&r->timer);
	if (r->type == IMSG_VMM_CHECKPOINT) {
		evtimer_del(&vmm.ckpt_timer);
		ckpt_close_fd();
	}
	if (r->out != NULL) {
		if (r->out->off == 0) {
			/* Never started: the guest will not see it. */
			TAILQ_REMOVE(&vmm.agent.wq, r->out, entry);
			vmm.agent.wqlen -= r->out->len;
			free(r->out);
		} else
			r->out->owner = NULL;
	}
	r->out = NULL;
	r->used = 0;
}

static struct vmm_req *
req_find(enum vmm_chan chan, uint32_t wire_id)
{
	size_t	 i;

	for (i = 0; i < VMM_REQ_MAX; i++)
		if (vmm.reqs[i].used && vmm.reqs[i].chan == chan &&
		    vmm.reqs[i].wire_id == wire_id)
			return &vmm.reqs[i];
	return NULL;
}

/* Answers every request on chan with an error. */
static void
req_fail_all(enum vmm_chan chan, uint32_t code, uint32_t err,
    const char *text)
{
	size_t	 i;

	for (i = 0; i < VMM_REQ_MAX; i++) {
		if (!vmm.reqs[i].used || vmm.reqs[i].chan != chan)
			continue;
		send_error(vmm.reqs[i].peerid, code, err, text);
		req_free(&vmm.reqs[i]);
	}
}

static void
req_timeout(int fd, short event, void *arg)
{
	struct vmm_req	*r = arg;

	log_warnx("%s to the %s timed out", imsg_type_name(r->type),
	    r->chan == CHAN_QMP ? "QMP monitor" : "agent");
	send_error(r->peerid, VMM_ERR_TIMEOUT, ETIMEDOUT, "no answer in time");
	req_free(r);
}

/* --- channels to QEMU */

static void
chan_queue(struct chan *c, const void *data, size_t len, struct vmm_req *r)
{
	struct outbuf	*o;

	if ((o = malloc(sizeof(*o) + len)) == NULL)
		fatal("%s", __func__);
	o->owner = r;
	o->len = len;
	o->off = 0;
	memcpy(o->data, data, len);
	TAILQ_INSERT_TAIL(&c->wq, o, entry);
	c->wqlen += len;
	if (r != NULL)
		r->out = o;
	chan_arm(c);
}

static void
chan_drop_queue(struct chan *c)
{
	struct outbuf	*o;

	while ((o = TAILQ_FIRST(&c->wq)) != NULL) {
		TAILQ_REMOVE(&c->wq, o, entry);
		if (o->owner != NULL)
			o->owner->out = NULL;
		free(o);
	}
	c->wqlen = 0;
}

static void
chan_arm(struct chan *c)
{
	int	 want = !TAILQ_EMPTY(&c->wq);

	if (want && !c->writing)
		event_add(&c->wev, NULL);
	else if (!want && c->writing)
		event_del(&c->wev);
	c->writing = want;
}

static void
chan_stop_reading(struct chan *c)
{
	if (c->reading)
		event_del(&c->rev);
	c->reading = 0;
}

/* Writes what is queued; returns -1 if the peer is gone. */
static int
chan_flush(struct chan *c)
{
	struct outbuf	*o;
	ssize_t		 n;

	while ((o = TAILQ_FIRST(&c->wq)) != NULL) {
		n = send(c->fd, o->data + o->off, o->len - o->off,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n == -1) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			return -1;
		}
		o->off += (size_t)n;
		if (o->off < o->len)
			break;
		TAILQ_REMOVE(&c->wq, o, entry);
		c->wqlen -= o->len;
		if (o->owner != NULL)
			o->owner->out = NULL;
		free(o);
	}
	chan_arm(c);
	return 0;
}

/* --- QEMU gone */

static void __attribute__((noreturn))
vmm_exit_qemu_gone(const char *why)
{
	size_t	 i;

	log_info("QEMU is gone: %s", why);
	for (i = 0; i < VMM_REQ_MAX; i++) {
		if (!vmm.reqs[i].used)
			continue;
		if (vmm.reqs[i].type == IMSG_VMM_QUIT)
			send_ok(vmm.reqs[i].peerid, 0);
		else if (vmm.reqs[i].chan == CHAN_QMP)
			send_error(vmm.reqs[i].peerid, VMM_ERR_QMP, EPIPE,
			    "QEMU exited");
		else
			send_error(vmm.reqs[i].peerid, VMM_ERR_GUEST_DOWN,
			    EPIPE, "QEMU exited");
		req_free(&vmm.reqs[i]);
	}
	if (!vmm.shutdown_sent)
		send_event(VMM_EV_SHUTDOWN, why);
	if (imsgbuf_flush(&vmm.parent.ibuf) == -1)
		log_warn("%s: flush to mcvmd", __func__);
	exit(0);
}

/* --- QMP */

static void
qmp_send_command(const char *cmd, const char *args, uint32_t id)
{
	char	 buf[QMP_CMD_MAX];
	int	 n;

	if ((n = qmp_encode_command(buf, sizeof(buf), cmd, args, id)) == -1)
		fatalx("%s: cannot encode %s", __func__, cmd);
	chan_queue(&vmm.qmp, buf, (size_t)n, NULL);
}

/* QEMU spoke nonsense: QMP is given up on, and mcvmd told so. */
static void
qmp_broken(const char *why)
{
	char	 text[QMP_TEXT_MAX + 32];

	log_warnx("QMP protocol error: %s", why);
	vmm.qmp_state = QMP_S_BROKEN;
	chan_drop_queue(&vmm.qmp);
	chan_arm(&vmm.qmp);
	snprintf(text, sizeof(text), "QMP protocol error: %s", why);
	req_fail_all(CHAN_QMP, VMM_ERR_QMP, EBADMSG, text);
	/* Unasked (peerid 0): mcvmd should stop this VM. */
	send_error(0, VMM_ERR_QMP, EBADMSG, text);
}

/* READY once QMP is negotiated and the agent answered HELLO and INFO. */
static void
vmm_check_ready(void)
{
	struct ibuf	*b;

	if (vmm.ready_sent || vmm.qmp_state != QMP_S_READY ||
	    vmm.ag_state != AG_S_READY)
		return;
	b = msg_create(IMSG_VMM_READY, 0);
	m_add_str(b, vmm.ag_version);
	m_add_str(b, vmm.ag_os);
	m_add_str(b, vmm.ag_kernel);
	msg_close(b);
	vmm.ready_sent = 1;
}

static void
qmp_ready(void)
{
	size_t	 i;

	for (i = 0; i < VMM_REQ_MAX; i++) {
		if (vmm.reqs[i].used && vmm.reqs[i].chan == CHAN_QMP &&
		    vmm.reqs[i].unsent) {
			vmm.reqs[i].unsent = 0;
			qmp_send_command(vmm.reqs[i].qmp_cmd, NULL,
			    vmm.reqs[i].wire_id);
		}
	}
}

/* --- the checkpoint */

static void
ckpt_send(struct vmm_req *r, enum ckpt_step step, const char *cmd,
    const char *args)
{
	r->step = step;
	r->wire_id = next_wire_id();
	qmp_send_command(cmd, args, r->wire_id);
}

static void
ckpt_poll(int fd, short event, void *arg)
{
	ckpt_send(arg, CKPT_POLL, "query-migrate", NULL);
}

/*
 * getfd: the command and the checkpoint fd in one sendmsg(2), so that
 * QEMU reads the fd with it.  Nothing may be queued before it.
 */
static int
ckpt_send_fd(struct vmm_req *r)
{
	char		 buf[QMP_CMD_MAX];
	union {
		struct cmsghdr	 hdr;
		char		 buf[CMSG_SPACE(sizeof(int))];
	}		 cm;
	struct msghdr	 msg;
	struct iovec	 iov;
	struct cmsghdr	*c;
	ssize_t		 w;
	int		 n;

	if (!TAILQ_EMPTY(&vmm.qmp.wq)) {
		errno = EBUSY;
		return -1;
	}
	r->step = CKPT_GETFD;
	if ((n = qmp_encode_command(buf, sizeof(buf), "getfd",
	    "{\"fdname\": \"" VMM_CKPT_FDNAME "\"}", r->wire_id)) == -1)
		fatalx("%s: cannot encode getfd", __func__);
	memset(&msg, 0, sizeof(msg));
	memset(&cm, 0, sizeof(cm));
	iov.iov_base = buf;
	iov.iov_len = (size_t)n;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cm.buf;
	msg.msg_controllen = sizeof(cm.buf);
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &vmm.ckpt_fd, sizeof(int));
	do
		w = sendmsg(vmm.qmp.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (w == -1 && errno == EINTR);
	if (w == -1)
		return -1;
	/* The fd went with the first byte; the rest is ordinary. */
	if (w < n)
		chan_queue(&vmm.qmp, buf + w, (size_t)(n - w), NULL);
	return 0;
}

/* One QMP answer on the way to a checkpoint: the next step, or done. */
static void
ckpt_step(struct vmm_req *r, const struct qmp_msg *m)
{
	struct timeval	 tv = { 0, VMM_CKPT_POLL_MS * 1000 };

	switch (r->step) {
	case CKPT_GETFD:
		ckpt_close_fd();	/* QEMU holds it now */
		ckpt_send(r, CKPT_BANDWIDTH, "migrate-set-parameters",
		    VMM_CKPT_BANDWIDTH);
		return;
	case CKPT_BANDWIDTH:
		ckpt_send(r, CKPT_MIGRATE, "migrate",
		    "{\"uri\": \"fd:" VMM_CKPT_FDNAME "\"}");
		return;
	case CKPT_MIGRATE:
		break;
	case CKPT_POLL:
		if (!m->has_status) {
			send_error(r->peerid, VMM_ERR_QMP, EBADMSG,
			    "query-migrate returned no status");
			req_free(r);
			return;
		}
		if (strcmp(m->status, "completed") == 0) {
			log_info("checkpoint written");
			send_ok(r->peerid, 0);
			req_free(r);
			return;
		}
		if (strcmp(m->status, "failed") == 0 ||
		    strcmp(m->status, "cancelled") == 0) {
			send_error(r->peerid, VMM_ERR_QMP, EIO,
			    "the migration to the checkpoint failed");
			req_free(r);
			return;
		}
		break;
	}
	evtimer_set(&vmm.ckpt_timer, ckpt_poll, r);
	evtimer_add(&vmm.ckpt_timer, &tv);
}

static void
ckpt_start(uint32_t peerid, int fd)
{
	struct vmm_req	*r;

	if (vmm.ckpt_fd != -1 || vmm.qmp_state != QMP_S_READY) {
		close(fd);
		send_error(peerid, VMM_ERR_BUSY, EBUSY, vmm.ckpt_fd != -1 ?
		    "a checkpoint is already being written" :
		    "QMP is not ready");
		return;
	}
	if ((r = req_new(peerid, IMSG_VMM_CHECKPOINT, CHAN_QMP)) == NULL) {
		close(fd);
		send_error(peerid, VMM_ERR_BUSY, EBUSY,
		    "too many requests in flight");
		return;
	}
	vmm.ckpt_fd = fd;
	if (ckpt_send_fd(r) == -1) {
		send_error(peerid, VMM_ERR_QMP, (uint32_t)errno,
		    "cannot hand QEMU the checkpoint");
		ckpt_close_fd();
		req_free(r);
	}
}

static void
qmp_reply(struct vmm_req *r, const struct qmp_msg *m)
{
	struct ibuf	*b;
	char		 text[QMP_NAME_MAX + QMP_TEXT_MAX + 4];

	if (m->kind == QMP_ERROR) {
		snprintf(text, sizeof(text), "%s: %s", m->err_class,
		    m->err_desc);
		send_error(r->peerid, VMM_ERR_QMP, 0, text);
	} else if (r->type == IMSG_VMM_CHECKPOINT) {
		ckpt_step(r, m);
		return;
	} else if (r->type == IMSG_VMM_QMP_STATUS) {
		if (!m->has_status || !m->has_running)
			send_error(r->peerid, VMM_ERR_QMP, EBADMSG,
			    "query-status returned no status");
		else {
			b = msg_create(IMSG_VMM_QMP_STATE, r->peerid);
			m_add_str(b, m->status);
			m_add_u32(b, m->running ? 1 : 0);
			msg_close(b);
		}
	} else
		send_ok(r->peerid, 0);
	req_free(r);
}

static void	agent_restart(const char *);

static void
qmp_event(const struct qmp_msg *m)
{
	if (strcmp(m->event, "STOP") == 0)
		send_event(VMM_EV_STOP, m->detail);
	else if (strcmp(m->event, "RESUME") == 0)
		send_event(VMM_EV_RESUME, m->detail);
	else if (strcmp(m->event, "SHUTDOWN") == 0) {
		send_event(VMM_EV_SHUTDOWN, m->detail);
		vmm.shutdown_sent = 1;
	} else if (strcmp(m->event, "RESET") == 0) {
		send_event(VMM_EV_RESET, m->detail);
		agent_restart("guest reset");
	} else if (strcmp(m->event, "VSERPORT_CHANGE") == 0) {
		if (vmm.mode == VMM_MODE_HOLD && m->has_open && m->open &&
		    !vmm.held_sent) {
			vmm.held_sent = 1;
			send_event(VMM_EV_HELD, "the guest holds");
		}
	} else
		log_debug("QMP event %s ignored", m->event);
}

static void
qmp_message(const struct qmp_msg *m, void *arg)
{
	struct vmm_req	*r;

	if (vmm.qmp_state == QMP_S_BROKEN)
		return;
	switch (m->kind) {
	case QMP_GREETING:
		if (vmm.qmp_state != QMP_S_GREETING) {
			qmp_broken("second greeting");
			return;
		}
		log_debug("QEMU %u.%u.%u", m->major, m->minor, m->micro);
		vmm.qmp_caps_id = next_wire_id();
		qmp_send_command("qmp_capabilities", NULL, vmm.qmp_caps_id);
		vmm.qmp_state = QMP_S_CAPS;
		qmp_ready();
		break;
	case QMP_RETURN:
	case QMP_ERROR:
		if (vmm.qmp_state == QMP_S_GREETING) {
			qmp_broken("reply before the greeting");
			return;
		}
		if (vmm.qmp_state == QMP_S_CAPS && m->has_id &&
		    m->id == vmm.qmp_caps_id) {
			if (m->kind == QMP_ERROR) {
				qmp_broken("qmp_capabilities refused");
				return;
			}
			vmm.qmp_state = QMP_S_READY;
			vmm_check_ready();
			return;
		}
		if (!m->has_id || (r = req_find(CHAN_QMP, m->id)) == NULL) {
			log_debug("QMP reply to no request in flight");
			return;
		}
		qmp_reply(r, m);
		break;
	case QMP_EVENT:
		qmp_event(m);
		break;
	}
}

static void
qmp_read(int fd, short event, void *arg)
{
	uint8_t	 buf[VMM_READ_MAX];
	ssize_t	 n;

	n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == -1 && errno != ECONNRESET)
		log_warn("%s: recv", __func__);
	if (n <= 0)
		vmm_exit_qemu_gone("QMP channel closed");
	/* A broken stream is only drained, to see QEMU go. */
	if (vmm.qmp_state == QMP_S_BROKEN)
		return;
	if (qmp_input(&vmm.qp, buf, (size_t)n, qmp_message, NULL) == -1 &&
	    vmm.qmp_state != QMP_S_BROKEN)
		qmp_broken(vmm.qp.error);
}

static void
qmp_write(int fd, short event, void *arg)
{
	if (chan_flush(&vmm.qmp) == -1)
		vmm_exit_qemu_gone("QMP channel closed");
}

static void
qmp_request(uint32_t peerid, uint32_t type, const char *cmd)
{
	struct vmm_req	*r;

	if (vmm.qmp_state == QMP_S_BROKEN) {
		send_error(peerid, VMM_ERR_QMP, EBADMSG,
		    "the QMP channel is broken");
		return;
	}
	if ((r = req_new(peerid, type, CHAN_QMP)) == NULL) {
		send_error(peerid, VMM_ERR_BUSY, EBUSY,
		    "too many requests in flight");
		return;
	}
	r->qmp_cmd = cmd;
	if (vmm.qmp_state == QMP_S_GREETING)
		r->unsent = 1;
	else
		qmp_send_command(cmd, NULL, r->wire_id);
}

/* --- the guest agent */

static void
agent_queue(const struct agent_msg *m, struct vmm_req *r)
{
	int	 n;

	if ((n = agent_encode(m, vmm.frame, sizeof(vmm.frame))) == -1)
		fatal("%s: cannot encode %s", __func__,
		    agent_type_name(m->type));
	chan_queue(&vmm.agent, vmm.frame, (size_t)n, r);
}

static void
agent_hello_timer(int fd, short event, void *arg)
{
	agent_hello_send();
}

/*
 * HELLO is repeated until the agent answers: the guest may still be
 * booting, and until it opens its port what we send waits in QEMU.
 * Nothing new is queued while earlier bytes are still unsent.
 */
static void
agent_hello_send(void)
{
	struct timeval	 tv = { VMM_HELLO_RETRY_MS / 1000,
			    (VMM_HELLO_RETRY_MS % 1000) * 1000 };
	struct agent_msg m;

	if (vmm.ag_state != AG_S_HELLO)
		return;
	if (TAILQ_EMPTY(&vmm.agent.wq)) {
		memset(&m, 0, sizeof(m));
		m.type = AGENT_HELLO;
		m.id = next_wire_id();
		m.u.hello.version = AGENT_PROTO_VERSION;
		if (vmm.hello_first == 0)
			vmm.hello_first = m.id;
		vmm.hello_last = m.id;
		agent_queue(&m, NULL);
	}
	evtimer_add(&vmm.hello_timer, &tv);
}

static int
agent_is_hello_id(uint32_t id)
{
	return vmm.hello_first != 0 && id >= vmm.hello_first &&
	    id <= vmm.hello_last;
}

/* Starts (or restarts) the agent session. */
static void
agent_start(void)
{
	vmm.ag_state = AG_S_HELLO;
	vmm.hello_first = vmm.hello_last = 0;
	vmm.info_id = 0;
	agent_hello_send();
}

/* The guest rebooted: a new agent, a new session. */
static void
agent_resession(const char *why)
{
	if (vmm.ag_state == AG_S_LOST)
		return;
	req_fail_all(CHAN_AGENT, VMM_ERR_GUEST_DOWN, ECONNRESET, why);
	if (vmm.ag_state == AG_S_READY)
		send_event(VMM_EV_GUEST_LOST, why);
	evtimer_del(&vmm.hello_timer);
	agent_start();
}

static void
agent_restart(const char *why)
{
	if (vmm.ag_state == AG_S_LOST)
		return;
	vmm.arx_len = 0;
	agent_resession(why);
}

static void
agent_lost(const char *why)
{
	if (vmm.ag_state == AG_S_LOST)
		return;
	log_warnx("agent channel lost: %s", why);
	vmm.ag_state = AG_S_LOST;
	evtimer_del(&vmm.hello_timer);
	chan_stop_reading(&vmm.agent);
	chan_drop_queue(&vmm.agent);
	chan_arm(&vmm.agent);
	req_fail_all(CHAN_AGENT, VMM_ERR_GUEST_DOWN, EPIPE, why);
	send_event(VMM_EV_GUEST_LOST, why);
}

static void
agent_session_ready(const struct agent_msg *m)
{
	/* The decoder bounded them by AGENT_INFO_STR_MAX. */
	snprintf(vmm.ag_version, sizeof(vmm.ag_version), "%s",
	    m->u.info.agent_version);
	snprintf(vmm.ag_os, sizeof(vmm.ag_os), "%s", m->u.info.os);
	snprintf(vmm.ag_kernel, sizeof(vmm.ag_kernel), "%s",
	    m->u.info.kernel);
	vmm.ag_state = AG_S_READY;
	log_debug("guest agent %s: %s, %s", vmm.ag_version, vmm.ag_os,
	    vmm.ag_kernel);
	if (vmm.ready_sent)
		send_event(VMM_EV_GUEST_BACK, vmm.ag_version);
	else
		vmm_check_ready();
}

/*
 * A new session: the host's time and fresh randomness first (a guest
 * restored from a checkpoint has the checkpoint's clock and random
 * state), then INFO, whose answer makes the guest ready.
 */
static void
agent_session_start(void)
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
	req.id = vmm.time_id = next_wire_id();
	req.u.set_time.sec = now.tv_sec;
	req.u.set_time.nsec = (uint32_t)now.tv_nsec;
	agent_queue(&req, NULL);
	memset(&req, 0, sizeof(req));
	req.type = AGENT_SEED;
	req.id = vmm.seed_id = next_wire_id();
	req.u.seed.data = seed;
	agent_queue(&req, NULL);
	explicit_bzero(seed, sizeof(seed));
	memset(&req, 0, sizeof(req));
	req.type = AGENT_INFO;
	req.id = vmm.info_id = next_wire_id();
	agent_queue(&req, NULL);
	vmm.ag_state = AG_S_INFO;
}

/*
 * A reply the guest framed well but that makes no sense as the answer to
 * its request fails that request alone; the channel goes on.
 */
static void
agent_bad_reply(struct vmm_req *r, uint16_t type, const char *why)
{
	char	 text[AGENT_ERRMSG_MAX];

	log_warnx("agent %s %u: %s", agent_type_name(type), r->wire_id, why);
	(void)snprintf(text, sizeof(text), "the guest agent's answer to %s "
	    "was refused: %s", agent_type_name(r->agent_type), why);
	send_error(r->peerid, AGENT_ERR_PROTO, EBADMSG, text);
	req_free(r);
}

static void
agent_reply(struct vmm_req *r, const struct agent_msg *m)
{
	struct ibuf	*b;
	uint32_t	 type;

	type = vmm_reply_imsg_type(m->type);
	b = msg_create(type, r->peerid);
	if (vmm_reply_put(b, m, r->encoding) == -1) {
		imsg_discard(b);
		agent_bad_reply(r, m->type, "it cannot be relayed");
		return;
	}
	msg_close(b);
	req_free(r);
}

/* A handshake request's answer made no sense: the session starts over. */
static int
agent_handshake_id(uint32_t id)
{
	return (vmm.ag_state == AG_S_HELLO && agent_is_hello_id(id)) ||
	    (vmm.ag_state == AG_S_INFO && (id == vmm.time_id ||
	    id == vmm.seed_id || id == vmm.info_id));
}

/*
 * A well framed frame that did not decode: it costs the request it
 * answers, if any, or the handshake it belongs to, never the channel.
 */
static void
agent_undecodable(const struct agent_hdr *hdr)
{
	struct vmm_req	*r;

	if (agent_handshake_id(hdr->id)) {
		log_warnx("malformed %s from the guest during the handshake",
		    agent_type_name(hdr->type));
		/* What follows is of the same session: kept, and ignored
		 * unless it answers the new HELLO. */
		agent_resession("malformed handshake answer from the guest");
		return;
	}
	if ((r = req_find(CHAN_AGENT, hdr->id)) == NULL) {
		log_debug("malformed agent %s %u answers no request in flight",
		    agent_type_name(hdr->type), hdr->id);
		return;
	}
	agent_bad_reply(r, hdr->type, "malformed message");
}

/* One decoded frame from the guest. */
static void
agent_message(const struct agent_msg *m)
{
	struct vmm_req		*r;

	if (!(m->type & AGENT_REPLY)) {
		log_debug("agent sent a request (%s); ignored",
		    agent_type_name(m->type));
		return;		/* the guest asks nothing */
	}
	if (vmm.ag_state == AG_S_HELLO && agent_is_hello_id(m->id)) {
		if (m->type != (AGENT_REPLY | AGENT_HELLO) ||
		    m->u.hello.version != AGENT_PROTO_VERSION) {
			agent_lost("the agent refused our protocol version");
			return;
		}
		evtimer_del(&vmm.hello_timer);
		agent_session_start();
		return;
	}
	if (vmm.ag_state == AG_S_INFO && (m->id == vmm.time_id ||
	    m->id == vmm.seed_id)) {
		if (m->type == AGENT_ERROR && m->id == vmm.seed_id) {
			agent_lost("the guest could not seed its random "
			    "generator");
			return;
		}
		if (m->type == AGENT_ERROR)
			log_warnx("the guest did not take the time: %s",
			    m->u.error.message);
		return;
	}
	if (vmm.ag_state == AG_S_INFO && m->id == vmm.info_id) {
		if (m->type != (AGENT_REPLY | AGENT_INFO)) {
			agent_lost("the agent refused INFO");
			return;
		}
		agent_session_ready(m);
		return;
	}
	if ((r = req_find(CHAN_AGENT, m->id)) == NULL) {
		/* A late answer to a request given up on, or a stale HELLO. */
		log_debug("agent %s %u answers no request in flight",
		    agent_type_name(m->type), m->id);
		return;
	}
	if (m->type != AGENT_ERROR &&
	    m->type != (AGENT_REPLY | r->agent_type)) {
		agent_bad_reply(r, m->type, "a reply of the wrong type");
		return;
	}
	agent_reply(r, m);
}

static void
agent_read(int fd, short event, void *arg)
{
	struct agent_hdr	 hdr;
	struct agent_msg	 m;
	ssize_t			 n;
	size_t			 off;
	int			 len;

	n = recv(fd, vmm.arx + vmm.arx_len, sizeof(vmm.arx) - vmm.arx_len,
	    MSG_DONTWAIT);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		agent_lost(n == 0 || errno == ECONNRESET ?
		    "agent channel closed" : "agent channel failed");
		return;
	}
	vmm.arx_len += (size_t)n;
	off = 0;
	while (vmm.ag_state != AG_S_LOST) {
		len = agent_frame_check(vmm.arx + off, vmm.arx_len - off, &hdr);
		if (len == 0)
			break;
		if (len == -1) {
			agent_lost("malformed frame header from the guest");
			return;
		}
		if (agent_decode(&hdr, vmm.arx + off + AGENT_HDR_LEN,
		    &m) == -1)
			agent_undecodable(&hdr);
		else
			agent_message(&m);
		off += (size_t)len;
	}
	if (vmm.ag_state == AG_S_LOST)
		return;
	if (off > 0) {
		memmove(vmm.arx, vmm.arx + off, vmm.arx_len - off);
		vmm.arx_len -= off;
	}
}

static void
agent_write(int fd, short event, void *arg)
{
	if (chan_flush(&vmm.agent) == -1)
		agent_lost("agent channel closed");
}

static void
agent_request(uint32_t peerid, uint32_t type, struct agent_msg *m,
    uint32_t encoding)
{
	struct vmm_req	*r;

	if (vmm.ag_state != AG_S_READY) {
		send_error(peerid, VMM_ERR_GUEST_DOWN, ENOTCONN,
		    vmm.ag_state == AG_S_LOST ? "the agent channel is lost" :
		    "the agent has not answered yet");
		return;
	}
	if (vmm.agent.wqlen > VMM_AGENT_WQ_MAX ||
	    (r = req_new(peerid, type, CHAN_AGENT)) == NULL) {
		log_debug("%s %u refused: busy", imsg_type_name(type), peerid);
		send_error(peerid, VMM_ERR_BUSY, EBUSY,
		    "too many requests in flight");
		return;
	}
	r->agent_type = m->type;
	r->encoding = encoding;
	if (m->type == AGENT_JOB_READ)	/* the guest may wait for the job */
		req_arm(r, VMM_REQ_TIMEOUT_MS + m->u.job_read.wait_ms);
	m->id = r->wire_id;
	agent_queue(m, r);
}

/* --- mcvmd */

static void
parent_request(struct imsg *imsg)
{
	static struct agent_msg	 m;
	struct mreader		 r;
	uint32_t		 type = imsg->hdr.type, v, encoding;
	const char		*cmd = NULL;

	m_init(&r, imsg);
	switch (type) {
	case IMSG_VERBOSE:
		if (m_get_u32(&r, &v) == -1 || m_end(&r) == -1)
			fatalx("malformed %s from mcvmd", imsg_type_name(type));
		log_setverbose((int)v);
		return;
	case IMSG_VMM_QMP_STATUS:
		cmd = "query-status";
		break;
	case IMSG_VMM_PAUSE:
		cmd = "stop";
		break;
	case IMSG_VMM_CONT:
		cmd = "cont";
		break;
	case IMSG_VMM_POWERDOWN:
		cmd = "system_powerdown";
		break;
	case IMSG_VMM_QUIT:
		cmd = "quit";
		break;
	case IMSG_VMM_CHECKPOINT:
		if (imsg->hdr.peerid == 0 || m_end(&r) == -1 ||
		    (v = (uint32_t)imsg_get_fd(imsg)) == (uint32_t)-1)
			fatalx("malformed %s from mcvmd", imsg_type_name(type));
		ckpt_start(imsg->hdr.peerid, (int)v);
		return;
	default:
		if (vmm_req_agent_type(type) == -1)
			fatalx("unexpected %s from mcvmd",
			    imsg_type_name(type));
		break;
	}
	if (imsg->hdr.peerid == 0)
		fatalx("%s from mcvmd without a request id",
		    imsg_type_name(type));
	if (cmd != NULL) {
		if (m_end(&r) == -1)
			fatalx("malformed %s from mcvmd", imsg_type_name(type));
		qmp_request(imsg->hdr.peerid, type, cmd);
		return;
	}
	if (vmm_req_get(type, &r, &m, &encoding) == -1)
		fatalx("malformed %s from mcvmd", imsg_type_name(type));
	agent_request(imsg->hdr.peerid, type, &m, encoding);
}

/* When mcvmd is gone, the monitor goes; QEMU is then mcvmd's business. */
static void
parent_dispatch(int fd, short event, void *arg)
{
	proc_child_dispatch(arg, event, parent_request);
}

/* --- start */

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
	case 'i':
		if (!valid_id(arg, "vm-"))
			return -1;
		vmm.vmid = arg;
		return 0;
	case 'u':
		return vmm_parse_id(arg, &vmm.uid);
	case 'g':
		return vmm_parse_id(arg, &vmm.gid);
	case 'm':
		if (strcmp(arg, "hold") == 0)
			vmm.mode = VMM_MODE_HOLD;
		else if (strcmp(arg, "restore") == 0)
			vmm.mode = VMM_MODE_RESTORE;
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
chan_init(struct chan *c, const char *name, int fd,
    void (*rd)(int, short, void *), void (*wr)(int, short, void *))
{
	c->name = name;
	c->fd = fd;
	TAILQ_INIT(&c->wq);
	c->wqlen = 0;
	event_set(&c->rev, fd, EV_READ | EV_PERSIST, rd, c);
	event_set(&c->wev, fd, EV_WRITE | EV_PERSIST, wr, c);
	event_add(&c->rev, NULL);
	c->reading = 1;
	c->writing = 0;
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
	char			 empty[PATH_MAX];
	size_t			 seed;

	proc_child_setup_ext(argc, argv, "vmm", VMM_USAGE, &vmm.opts,
	    &vmm.conf, "i:m:u:g:", vmm_option, NULL);
	if (vmm.vmid == NULL || vmm.uid == 0 || vmm.gid == 0)
		fatalx("-i, -u and -g are required; usage: %s", VMM_USAGE);
	if (vmm.uid < vmm.conf.vm_uid_first || vmm.uid > vmm.conf.vm_uid_last)
		fatalx("uid %lld is outside the VM range %u-%u", vmm.uid,
		    vmm.conf.vm_uid_first, vmm.conf.vm_uid_last);
	log_procinit(vmm.vmid);
	vmm_check_fd(VMM_QMP_FILENO, "QMP");
	vmm_check_fd(VMM_AGENT_FILENO, "agent");
	if (snprintf(empty, sizeof(empty), "%s/%s", vmm.conf.rundir,
	    MCVM_EMPTY_DIR) >= (int)sizeof(empty))
		fatalx("run directory path too long");

	/* jansson would read /dev/urandom for its hash seed later. */
	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		fatal("getrandom");
	json_object_seed(seed | 1);

	privdrop(&(struct privdrop){
		.uid = (uid_t)vmm.uid,
		.gid = (gid_t)vmm.gid,
		.chroot = empty,
	});
	vmm_sandbox(vmm.opts.sandbox_debug);

	vmm.pid = getpid();
	signal_set(&ev_term, SIGTERM, vmm_signal, NULL);
	signal_set(&ev_int, SIGINT, vmm_signal, NULL);
	signal_add(&ev_term, NULL);
	signal_add(&ev_int, NULL);
	(void)signal(SIGPIPE, SIG_IGN);
	(void)signal(SIGHUP, SIG_IGN);
	if (imsgev_init(&vmm.parent, PROC_PARENT_SOCK_FILENO, "mcvmd",
	    parent_dispatch, NULL) == -1)
		fatal("imsgev_init");
	proc_child_hello(&vmm.parent);

	qmp_parser_init(&vmm.qp);
	vmm.qmp_state = QMP_S_GREETING;
	chan_init(&vmm.qmp, "qmp", VMM_QMP_FILENO, qmp_read, qmp_write);
	chan_init(&vmm.agent, "agent", VMM_AGENT_FILENO, agent_read,
	    agent_write);
	evtimer_set(&vmm.hello_timer, agent_hello_timer, NULL);
	vmm.ckpt_fd = -1;
	if (vmm.mode == VMM_MODE_RESTORE)
		chan_queue(&vmm.agent, "\n", 1, NULL);
	if (vmm.mode != VMM_MODE_HOLD)
		agent_start();

	event_dispatch();
	fatalx("event loop ended");
}
