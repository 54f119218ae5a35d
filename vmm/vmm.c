/*
 * The monitor's side towards mcvmd: requests come in, are dispatched
 * through the op table (ops.c) and are answered once each, by the op, by
 * its timeout or by the loss of its channel.  The byte channels to QEMU
 * (QMP and the guest's port) are here too, shared by qmp_chan.c and the
 * guest implementation.
 *
 * mcvmd is trusted: a malformed message from it is fatal.
 */
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <errno.h>
#include <event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guest.h"
#include "log.h"
#include "msg.h"
#include "proc.h"
#include "proto.h"
#include "vmm.h"
#include "msg_proc.h"
#include "msg_vmm.h"
#include "utf8.h"

/* The guest side: the mcvm agent, unless -a names another. */
const struct vmm_guest	*vmm_guest = &vmm_guest_agent;

static struct {
	struct imsgev	 parent;
	pid_t		 pid;
	uint32_t	 next_id;
	int		 shutdown_sent;
	int		 ready_sent;
	char		 g_version[AGENT_INFO_STR_MAX];
	char		 g_os[AGENT_INFO_STR_MAX];
	char		 g_kernel[AGENT_INFO_STR_MAX];
	struct vmm_req	 reqs[VMM_REQ_MAX];
	uint64_t	 req_seq;	/* requests made, for their turns */
} vmm;

/* --- answers and events to mcvmd */

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

/*
 * A text as mcvmd's codecs take it: valid UTF-8 (what is not becomes
 * U+FFFD), cut on a character boundary to fit size.  A guest's string
 * may be anything its decoder let through.
 */
void
vmm_text(const char *in, char *text, size_t size)
{
	static char	 dec[UTF8_DECODED_MAX(VMM_TEXT_IN_MAX)];
	size_t		 n, len;
	int		 errors = 0;

	if (size == 0)
		return;
	if (in == NULL)
		in = "";
	n = strnlen(in, VMM_TEXT_IN_MAX);
	(void)utf8_decode((const uint8_t *)in, n, 1, dec, &len, &errors);
	if (len > size - 1) {
		len = size - 1;
		while (len > 0 && ((unsigned char)dec[len] & 0xc0) == 0x80)
			len--;
	}
	memcpy(text, dec, len);
	text[len] = '\0';
}

static void
send_error(uint32_t peerid, uint32_t code, uint32_t err, const char *text)
{
	struct ibuf		*b = msg_create(IMSG_VMM_ERROR, peerid);
	struct msg_vmm_error	 e;
	char			 clean[AGENT_ERRMSG_MAX];

	vmm_text(text, clean, sizeof(clean));
	e.code = code;
	e.sys_errno = err;
	e.message = clean;
	msg_vmm_error_put(b, &e);
	msg_close(b);
}

static void
send_ok(uint32_t peerid, uint32_t value)
{
	struct ibuf		*b = msg_create(IMSG_VMM_OK, peerid);
	struct msg_vmm_ok	 ok = { .value = value };

	msg_vmm_ok_put(b, &ok);
	msg_close(b);
}

void
vmm_fail(struct vmm_req *r, uint32_t code, uint32_t err, const char *text)
{
	send_error(r->peerid, code, err, text);
	vmm_req_free(r);
}

void
vmm_ok(struct vmm_req *r, uint32_t value)
{
	send_ok(r->peerid, value);
	vmm_req_free(r);
}

/* The answer of the given type to r: its fields, then vmm_answer_end. */
struct ibuf *
vmm_answer_begin(struct vmm_req *r, uint32_t type)
{
	return msg_create(type, r->peerid);
}

void
vmm_answer_end(struct vmm_req *r, struct ibuf *b)
{
	msg_close(b);
	vmm_req_free(r);
}

void
vmm_event(enum vmm_event ev, const char *detail)
{
	struct ibuf		*b = msg_create(IMSG_VMM_EVENT, 0);
	struct msg_vmm_event	 e;
	char			 clean[VMM_DETAIL_MAX + 1];

	log_debug("event %d: %s", ev, detail);
	if (ev == VMM_EV_SHUTDOWN)
		vmm.shutdown_sent = 1;
	vmm_text(detail, clean, sizeof(clean));
	e.event = ev;
	e.detail = clean;
	msg_vmm_event_put(b, &e);
	msg_close(b);
}

/*
 * Unasked (peerid 0): the QMP channel broke.  The requests it held have
 * failed already, and the next ones fail at once; mcvmd logs this.
 */
void
vmm_error_unasked(uint32_t code, uint32_t err, const char *text)
{
	send_error(0, code, err, text);
}

/* READY, once: when QMP is negotiated and the guest is up. */
void
vmm_check_ready(void)
{
	struct ibuf		*b;
	struct msg_vmm_ready	 m;

	if (vmm.ready_sent || vmm_qmp_state() != VMM_QMP_READY ||
	    !vmm_guest->up(NULL))
		return;
	m.agent_version = vmm.g_version;
	m.os = vmm.g_os;
	m.kernel = vmm.g_kernel;
	b = msg_create(IMSG_VMM_READY, 0);
	msg_vmm_ready_put(b, &m);
	msg_close(b);
	vmm.ready_sent = 1;
}

/* The guest's session is up (again): what it said it is, made text. */
void
vmm_guest_up(const char *version, const char *os, const char *kernel)
{
	vmm_text(version, vmm.g_version, sizeof(vmm.g_version));
	vmm_text(os, vmm.g_os, sizeof(vmm.g_os));
	vmm_text(kernel, vmm.g_kernel, sizeof(vmm.g_kernel));
	log_debug("guest %s: %s, %s", vmm.g_version, vmm.g_os,
	    vmm.g_kernel);
	if (vmm.ready_sent)
		vmm_event(VMM_EV_GUEST_BACK, vmm.g_version);
	else
		vmm_check_ready();
}

/* --- requests in flight */

uint32_t
vmm_wire_id(void)
{
	if (++vmm.next_id == 0)
		vmm.next_id = 1;
	return vmm.next_id;
}

static void
req_timeout(int fd, short event, void *arg)
{
	struct vmm_req	*r = arg;

	log_warnx("%s to the %s timed out", imsg_type_name(r->op->type),
	    r->op->chan == VMM_CHAN_QMP ? "QMP monitor" : "guest");
	vmm_fail(r, VMM_ERR_TIMEOUT, ETIMEDOUT, "no answer in time");
}

/* An answer is due within ms from now. */
void
vmm_req_arm(struct vmm_req *r, uint32_t ms)
{
	struct timeval	 tv = { ms / 1000, (ms % 1000) * 1000 };

	evtimer_add(&r->timer, &tv);
}

static void
req_after_fire(int fd, short event, void *arg)
{
	struct vmm_req	*r = arg;

	r->polling = 0;
	r->after_cont(r);
}

/* The op goes on with cont in ms, unless it ends first. */
void
vmm_req_after(struct vmm_req *r, uint32_t ms, vmm_req_cont cont)
{
	struct timeval	 tv = { ms / 1000, (ms % 1000) * 1000 };

	r->polling = 0;
	r->after_cont = cont;
	evtimer_add(&r->after, &tv);
}

/*
 * As vmm_req_after, for a step that asks QEMU how far something is: an
 * event saying it moved on (vmm_req_hurry) runs the step at once.
 */
void
vmm_req_poll(struct vmm_req *r, uint32_t ms, vmm_req_cont cont)
{
	vmm_req_after(r, ms, cont);
	r->polling = 1;
}

/*
 * QEMU said that a migration or a job changed state: every request
 * waiting to poll QMP polls now.  Its poll asks QEMU again, so the event
 * decides nothing, and one poll is in flight per request at most however
 * many events come.
 */
void
vmm_req_hurry(void)
{
	struct vmm_req	*r;
	size_t		 i;

	for (i = 0; i < VMM_REQ_MAX; i++) {
		r = &vmm.reqs[i];
		if (!r->used || !r->polling || r->op->chan != VMM_CHAN_QMP ||
		    !evtimer_pending(&r->after, NULL))
			continue;
		evtimer_del(&r->after);
		req_after_fire(-1, 0, r);
	}
}

static struct vmm_req *
req_new(const struct vmm_op *op, uint32_t peerid)
{
	struct vmm_req	*r;
	size_t		 i;

	for (i = 0; i < VMM_REQ_MAX; i++) {
		r = &vmm.reqs[i];
		if (r->used)
			continue;
		memset(r, 0, sizeof(*r));
		r->used = 1;
		r->op = op;
		r->peerid = peerid;
		r->fd = -1;
		r->wire_id = vmm_wire_id();
		r->seq = ++vmm.req_seq;
		evtimer_set(&r->timer, req_timeout, r);
		evtimer_set(&r->after, req_after_fire, r);
		vmm_req_arm(r, op->timeout_ms);
		return r;
	}
	return NULL;
}

/* The request of op that has waited longest for its turn, or NULL. */
static struct vmm_req *
req_next_turn(const struct vmm_op *op)
{
	struct vmm_req	*r, *first = NULL;
	size_t		 i;

	for (i = 0; i < VMM_REQ_MAX; i++) {
		r = &vmm.reqs[i];
		if (r->used && r->op == op && r->queued &&
		    (first == NULL || r->seq < first->seq))
			first = r;
	}
	return first;
}

void
vmm_req_free(struct vmm_req *r)
{
	const struct vmm_op	*op = r->op;
	static const union vmm_args none;
	int			 turn = r->queued == 0 && op->flags & VMM_OP_QUEUE;

	/* One that never started has nothing of the op's to release. */
	if (op->end != NULL && !r->queued)
		op->end(r);
	r->state = NULL;
	evtimer_del(&r->timer);
	evtimer_del(&r->after);
	if (r->fd != -1)
		close(r->fd);
	r->fd = -1;
	if (r->op->chan == VMM_CHAN_QMP)
		vmm_qmp_forget(r);
	else
		vmm_guest->forget(r);
	r->used = 0;
	/* The next in line starts (its deadline has run since it came). */
	if (turn && (r = req_next_turn(op)) != NULL) {
		r->queued = 0;
		op->start(r, &none);
	}
}

struct vmm_req *
vmm_req_find(enum vmm_chan chan, uint32_t wire_id)
{
	size_t	 i;

	for (i = 0; i < VMM_REQ_MAX; i++)
		if (vmm.reqs[i].used && vmm.reqs[i].op->chan == chan &&
		    vmm.reqs[i].wire_id == wire_id)
			return &vmm.reqs[i];
	return NULL;
}

/* The request in flight after r (the first with NULL), or NULL. */
struct vmm_req *
vmm_req_next(struct vmm_req *r)
{
	size_t	 i = r == NULL ? 0 : (size_t)(r - vmm.reqs) + 1;

	for (; i < VMM_REQ_MAX; i++)
		if (vmm.reqs[i].used)
			return &vmm.reqs[i];
	return NULL;
}

/* Answers every request on chan with an error. */
void
vmm_req_fail_all(enum vmm_chan chan, uint32_t code, uint32_t err,
    const char *text)
{
	size_t	 i;

	for (i = 0; i < VMM_REQ_MAX; i++)
		if (vmm.reqs[i].used && vmm.reqs[i].op->chan == chan)
			vmm_fail(&vmm.reqs[i], code, err, text);
}

static int
req_running(const struct vmm_op *op)
{
	size_t	 i;

	for (i = 0; i < VMM_REQ_MAX; i++)
		if (vmm.reqs[i].used && vmm.reqs[i].op == op &&
		    !vmm.reqs[i].queued)
			return 1;
	return 0;
}

/* --- QEMU gone */

void
vmm_exit_qemu_gone(const char *why)
{
	size_t	 i;

	log_info("QEMU is gone: %s", why);
	for (i = 0; i < VMM_REQ_MAX; i++) {
		if (!vmm.reqs[i].used)
			continue;
		if (vmm.reqs[i].op->flags & VMM_OP_EXITS)
			vmm_ok(&vmm.reqs[i], 0);
		else if (vmm.reqs[i].op->chan == VMM_CHAN_QMP)
			vmm_fail(&vmm.reqs[i], VMM_ERR_QMP, EPIPE,
			    "QEMU exited");
		else
			vmm_fail(&vmm.reqs[i], VMM_ERR_GUEST_DOWN, EPIPE,
			    "QEMU exited");
	}
	if (!vmm.shutdown_sent)
		vmm_event(VMM_EV_SHUTDOWN, why);
	if (imsgbuf_flush(&vmm.parent.ibuf) == -1)
		log_warn("%s: flush to mcvmd", __func__);
	exit(0);
}

/* --- the byte channels to QEMU */

static void
io_arm(struct vmm_io *c)
{
	int	 want = !TAILQ_EMPTY(&c->wq);

	if (want && !c->writing)
		event_add(&c->wev, NULL);
	else if (!want && c->writing)
		event_del(&c->wev);
	c->writing = want;
}

void
vmm_io_init(struct vmm_io *c, const char *name, int fd,
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

/* Queues bytes; with r, the request knows them until they leave. */
void
vmm_io_queue(struct vmm_io *c, const void *data, size_t len,
    struct vmm_req *r)
{
	struct vmm_outbuf	*o;

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
	io_arm(c);
}

/* A request ends: bytes of it not begun are taken back. */
void
vmm_io_unqueue(struct vmm_io *c, struct vmm_req *r)
{
	struct vmm_outbuf	*o = r->out;

	if (o == NULL)
		return;
	r->out = NULL;
	if (o->off != 0) {
		o->owner = NULL;
		return;
	}
	TAILQ_REMOVE(&c->wq, o, entry);
	c->wqlen -= o->len;
	free(o);
	io_arm(c);
}

void
vmm_io_drop_queue(struct vmm_io *c)
{
	struct vmm_outbuf	*o;

	while ((o = TAILQ_FIRST(&c->wq)) != NULL) {
		TAILQ_REMOVE(&c->wq, o, entry);
		if (o->owner != NULL)
			o->owner->out = NULL;
		free(o);
	}
	c->wqlen = 0;
	io_arm(c);
}

void
vmm_io_stop_reading(struct vmm_io *c)
{
	if (c->reading)
		event_del(&c->rev);
	c->reading = 0;
}

/* Writes what is queued; returns -1 if the peer is gone. */
int
vmm_io_flush(struct vmm_io *c)
{
	struct vmm_outbuf	*o;
	ssize_t			 n;

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
	io_arm(c);
	return 0;
}

/* --- mcvmd's requests, through the op table */

static void __attribute__((noreturn))
parent_malformed(uint32_t type)
{
	fatalx("malformed %s from mcvmd", imsg_type_name(type));
}

/*
 * What the entry asks for, before the op starts: NULL if it may, or why
 * not, with its error code.
 */
static const char *
op_refused(const struct vmm_op *op, uint32_t *code, uint32_t *err)
{
	static char	 text[64];
	const char	*why = NULL;

	*code = VMM_ERR_BUSY;
	*err = EBUSY;
	if (op->flags & VMM_OP_ONE && req_running(op)) {
		(void)snprintf(text, sizeof(text), "a %s is already in "
		    "progress", op->name);
		return text;
	}
	if (op->chan == VMM_CHAN_QMP) {
		if (op->flags & VMM_OP_QMP_UP &&
		    vmm_qmp_state() != VMM_QMP_READY)
			return "QMP is not ready";
		if (vmm_qmp_state() == VMM_QMP_BROKEN) {
			*code = VMM_ERR_QMP;
			*err = EBADMSG;
			return "the QMP channel is broken";
		}
	}
	if (op->flags & VMM_OP_GUEST_UP && !vmm_guest->up(&why)) {
		*code = VMM_ERR_GUEST_DOWN;
		*err = ENOTCONN;
		return why;
	}
	return NULL;
}

void
vmm_dispatch(struct imsg *imsg)
{
	static union vmm_args	 args;
	const struct vmm_op	*op;
	struct vmm_req		*r;
	struct msg_verbose	 verbose;
	uint32_t		 type = imsg->hdr.type, code, err;
	const char		*why;
	int			 fd = -1, wait;

	if (type == IMSG_VERBOSE) {
		if (msg_verbose_get(imsg, &verbose) == -1)
			parent_malformed(type);
		log_setverbose((int)verbose.level);
		return;
	}
	if ((op = vmm_op_find(type)) == NULL)
		fatalx("unexpected %s from mcvmd", imsg_type_name(type));
	if (imsg->hdr.peerid == 0)
		fatalx("%s from mcvmd without a request id",
		    imsg_type_name(type));
	memset(&args, 0, sizeof(args));
	if (op->get(imsg, &args) == -1)
		parent_malformed(type);
	if (op->flags & VMM_OP_FD && (fd = imsg_get_fd(imsg)) == -1)
		parent_malformed(type);

	if ((why = op_refused(op, &code, &err)) != NULL) {
		log_debug("%s %u refused: %s", op->name, imsg->hdr.peerid,
		    why);
		if (fd != -1)
			close(fd);
		send_error(imsg->hdr.peerid, code, err, why);
		return;
	}
	wait = op->flags & VMM_OP_QUEUE && req_running(op);
	if ((r = req_new(op, imsg->hdr.peerid)) == NULL) {
		log_debug("%s %u refused: busy", op->name, imsg->hdr.peerid);
		if (fd != -1)
			close(fd);
		send_error(imsg->hdr.peerid, VMM_ERR_BUSY, EBUSY,
		    "too many requests in flight");
		return;
	}
	r->fd = fd;
	if (wait) {
		r->queued = 1;
		return;
	}
	op->start(r, &args);
}

/* When mcvmd is gone, the monitor goes; QEMU is then mcvmd's business. */
static void
parent_read(int fd, short event, void *arg)
{
	proc_child_dispatch(arg, event, vmm_dispatch);
}

void
vmm_parent_init(void)
{
	vmm.pid = getpid();
	if (imsgev_init(&vmm.parent, PROC_PARENT_SOCK_FILENO, "mcvmd",
	    parent_read, NULL) == -1)
		fatal("imsgev_init");
	proc_child_hello(&vmm.parent);
}
