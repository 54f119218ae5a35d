/*
 * The monitor's QMP session: QEMU's greeting, qmp_capabilities, then
 * commands with their arguments (jansson objects, serialized by
 * qmp_encode_command) and replies matched to the request that awaits
 * them by id.  A reply continues its op with the continuation named when
 * the command was sent; a QMP error answers mcvmd here, so that a
 * continuation only ever sees a return.
 *
 * QEMU is untrusted: a line that is not QMP breaks the session (mcvmd is
 * told, unasked, and should stop the VM); QEMU's exit ends the monitor.
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "guest.h"
#include "log.h"
#include "qmp.h"
#include "vmm.h"

static struct {
	enum vmm_mode		 mode;
	enum vmm_qmp_state	 state;
	uint32_t		 caps_id;
	struct qmp_parser	 parser;
	struct vmm_io		 io;
	int			 held_sent;
} qc;

enum vmm_qmp_state
vmm_qmp_state(void)
{
	return qc.state;
}

/* Nothing is waiting to be written: an fd may go first. */
int
vmm_qmp_idle(void)
{
	return TAILQ_EMPTY(&qc.io.wq);
}

/* A command's arguments, as json_pack(3) builds them; fatal if it fails. */
json_t *
vmm_qmp_args(const char *fmt, ...)
{
	json_error_t	 jerr;
	json_t		*j;
	va_list		 ap;

	va_start(ap, fmt);
	j = json_vpack_ex(&jerr, 0, fmt, ap);
	va_end(ap);
	if (j == NULL)
		fatalx("%s: %s", __func__, jerr.text);
	return j;
}

static int
encode(char *buf, size_t len, const char *cmd, json_t *args, uint32_t id)
{
	int	 n;

	if ((n = qmp_encode_command(buf, len, cmd, args, id)) == -1)
		fatalx("cannot encode QMP %s", cmd);
	return n;
}

static void
send_command(const char *cmd, json_t *args, uint32_t id)
{
	char	 buf[QMP_CMD_MAX];
	int	 n;

	n = encode(buf, sizeof(buf), cmd, args, id);
	vmm_io_queue(&qc.io, buf, (size_t)n, NULL);
}

/*
 * Sends cmd with args (NULL: none; taken, and released here) for r; the
 * reply continues with cont.  Before QMP is negotiated it is held, and
 * sent right after qmp_capabilities.  r may be answered before this
 * returns: it is the caller's last act.
 */
void
vmm_qmp_send(struct vmm_req *r, const char *cmd, json_t *args,
    vmm_qmp_cont cont)
{
	if (qc.state == VMM_QMP_BROKEN) {
		json_decref(args);
		vmm_fail(r, VMM_ERR_QMP, EBADMSG, "the QMP channel is broken");
		return;
	}
	r->wire_id = vmm_wire_id();
	r->qmp_cont = cont;
	if (qc.state == VMM_QMP_GREETING) {
		if (r->qmp_held_cmd != NULL)
			fatalx("%s: %s while %s is held", __func__, cmd,
			    r->qmp_held_cmd);
		r->qmp_held_cmd = cmd;
		r->qmp_held_args = args;
		return;
	}
	send_command(cmd, args, r->wire_id);
	json_decref(args);
}

/*
 * Sends cmd and fd in one sendmsg(2), so that QEMU reads the fd with it
 * (getfd, add-fd): QMP must be negotiated and nothing queued before it.
 * fd stays the caller's.  Returns 0, or -1 with errno set and r not
 * answered.
 */
int
vmm_qmp_send_fd(struct vmm_req *r, const char *cmd, json_t *args, int fd,
    vmm_qmp_cont cont)
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

	if (qc.state != VMM_QMP_READY || !vmm_qmp_idle()) {
		json_decref(args);
		errno = EBUSY;
		return -1;
	}
	r->wire_id = vmm_wire_id();
	r->qmp_cont = cont;
	n = encode(buf, sizeof(buf), cmd, args, r->wire_id);
	json_decref(args);
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
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	do
		w = sendmsg(qc.io.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (w == -1 && errno == EINTR);
	if (w == -1)
		return -1;
	/* The fd went with the first byte; the rest is ordinary. */
	if (w < n)
		vmm_io_queue(&qc.io, buf + w, (size_t)(n - w), NULL);
	return 0;
}

/* r ends: a command still held is dropped. */
void
vmm_qmp_forget(struct vmm_req *r)
{
	json_decref(r->qmp_held_args);
	r->qmp_held_args = NULL;
	r->qmp_held_cmd = NULL;
	r->qmp_cont = NULL;
}

/* QEMU spoke nonsense: QMP is given up on, and mcvmd told so. */
static void
qmp_broken(const char *why)
{
	char	 text[QMP_TEXT_MAX + 32];

	log_warnx("QMP protocol error: %s", why);
	qc.state = VMM_QMP_BROKEN;
	vmm_io_drop_queue(&qc.io);
	snprintf(text, sizeof(text), "QMP protocol error: %s", why);
	vmm_req_fail_all(VMM_CHAN_QMP, VMM_ERR_QMP, EBADMSG, text);
	vmm_error_unasked(VMM_ERR_QMP, EBADMSG, text);
}

/* Greeted: what was held goes out, after qmp_capabilities. */
static void
qmp_send_held(void)
{
	struct vmm_req	*r = NULL;

	while ((r = vmm_req_next(r)) != NULL) {
		if (r->qmp_held_cmd == NULL)
			continue;
		send_command(r->qmp_held_cmd, r->qmp_held_args, r->wire_id);
		json_decref(r->qmp_held_args);
		r->qmp_held_args = NULL;
		r->qmp_held_cmd = NULL;
	}
}

static void
qmp_event(const struct qmp_msg *m)
{
	if (strcmp(m->event, "STOP") == 0)
		vmm_event(VMM_EV_STOP, m->detail);
	else if (strcmp(m->event, "RESUME") == 0)
		vmm_event(VMM_EV_RESUME, m->detail);
	else if (strcmp(m->event, "SHUTDOWN") == 0)
		vmm_event(VMM_EV_SHUTDOWN, m->detail);
	else if (strcmp(m->event, "RESET") == 0) {
		vmm_event(VMM_EV_RESET, m->detail);
		vmm_guest->reset("guest reset");
	} else if (strcmp(m->event, "VSERPORT_CHANGE") == 0) {
		if (qc.mode == VMM_MODE_HOLD && m->has_open && m->open &&
		    !qc.held_sent) {
			qc.held_sent = 1;
			vmm_event(VMM_EV_HELD, "the guest holds");
		}
	} else if (strcmp(m->event, "MIGRATION") == 0 ||
	    strcmp(m->event, "JOB_STATUS_CHANGE") == 0)
		vmm_req_hurry();
	else
		log_debug("QMP event %s ignored", m->event);
}

static void
qmp_reply(struct vmm_req *r, const struct qmp_msg *m)
{
	char	 text[QMP_NAME_MAX + QMP_TEXT_MAX + 4];

	if (m->kind == QMP_ERROR) {
		snprintf(text, sizeof(text), "%s: %s", m->err_class,
		    m->err_desc);
		vmm_fail(r, VMM_ERR_QMP, 0, text);
		return;
	}
	r->qmp_cont(r, m);
}

static void
qmp_message(const struct qmp_msg *m, void *arg)
{
	struct vmm_req	*r;

	if (qc.state == VMM_QMP_BROKEN)
		return;
	switch (m->kind) {
	case QMP_GREETING:
		if (qc.state != VMM_QMP_GREETING) {
			qmp_broken("second greeting");
			return;
		}
		log_debug("QEMU %u.%u.%u", m->major, m->minor, m->micro);
		qc.caps_id = vmm_wire_id();
		send_command("qmp_capabilities", NULL, qc.caps_id);
		qc.state = VMM_QMP_CAPS;
		qmp_send_held();
		break;
	case QMP_RETURN:
	case QMP_ERROR:
		if (qc.state == VMM_QMP_GREETING) {
			qmp_broken("reply before the greeting");
			return;
		}
		if (qc.state == VMM_QMP_CAPS && m->has_id &&
		    m->id == qc.caps_id) {
			if (m->kind == QMP_ERROR) {
				qmp_broken("qmp_capabilities refused");
				return;
			}
			qc.state = VMM_QMP_READY;
			vmm_check_ready();
			return;
		}
		if (!m->has_id ||
		    (r = vmm_req_find(VMM_CHAN_QMP, m->id)) == NULL ||
		    r->qmp_cont == NULL) {
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
	if (qc.state == VMM_QMP_BROKEN)
		return;
	if (qmp_input(&qc.parser, buf, (size_t)n, qmp_message, NULL) == -1 &&
	    qc.state != VMM_QMP_BROKEN)
		qmp_broken(qc.parser.error);
}

static void
qmp_write(int fd, short event, void *arg)
{
	if (vmm_io_flush(&qc.io) == -1)
		vmm_exit_qemu_gone("QMP channel closed");
}

void
vmm_qmp_init(int fd, enum vmm_mode mode)
{
	qc.mode = mode;
	qc.state = VMM_QMP_GREETING;
	qmp_parser_init(&qc.parser);
	vmm_io_init(&qc.io, "qmp", fd, qmp_read, qmp_write);
}
