/*
 * The request table (see req.h): one list of what mcvmd asked of stored,
 * netd and the VM monitors and of what it waits for them to report, one
 * way of matching their answers, and one sweep of the deadlines.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "msg.h"
#include "req.h"
#include "task.h"

#define REQ_ID_FIRST	1

static TAILQ_HEAD(, req) reqs = TAILQ_HEAD_INITIALIZER(reqs);
static uint32_t		 req_id_next = REQ_ID_FIRST;

static const enum proc_id peer_proc[RP_NPEERS] = {
	[RP_STORED] = PROC_STORED,
	[RP_NETD] = PROC_NETD,
	[RP_MONITOR] = PROC_PARENT,	/* none: the VM's monitor */
	[RP_IMAGE] = PROC_STORED,
};

static const int peer_timeout[RP_NPEERS] = {
	[RP_STORED] = VM_STORE_TIMEOUT,
	[RP_NETD] = VM_NET_TIMEOUT,
	[RP_MONITOR] = VM_CALL_TIMEOUT,
	[RP_IMAGE] = VM_IMAGE_WAIT,
};

/* A request id: never 0, which stands for none. */
static uint32_t
req_id(void)
{
	uint32_t	 id = req_id_next++;

	if (req_id_next == 0)
		req_id_next = REQ_ID_FIRST;
	return id;
}

/* A wait outlasts stored's restarts: the next stored reports again. */
static uint32_t
req_gen(enum req_peer peer, const struct vm *vm)
{
	if (peer == RP_IMAGE)
		return 0;
	return peer == RP_MONITOR ? vm->vmm_gen :
	    child_by_id(peer_proc[peer])->gen;
}

static void
req_msg(struct req *r)
{
	r->id = req_id();
	if ((r->want = imsg_reply_type(r->type)) == IMSG_NONE)
		fatalx("%s: %s is not a request", __func__,
		    imsg_type_name(r->type));
	if ((r->msg = imsg_create(NULL, r->type, r->id, 0, 256)) == NULL)
		fatal("%s", __func__);
}

static struct req *
req_alloc(enum req_peer peer, struct vm *vm, req_done_fn done,
    req_cancel_fn cancel)
{
	struct req	*r;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		fatal("%s", __func__);
	r->peer = peer;
	r->vm = vm;
	r->done = done;
	r->cancel = cancel;
	r->keep_fd = -1;
	return r;
}

/* A request of vm's (or NULL) to peer: fill r->msg, then req_send. */
struct req *
req_new(enum req_peer peer, struct vm *vm, uint32_t type, req_done_fn done,
    req_cancel_fn cancel)
{
	struct req	*r;

	if (peer == RP_MONITOR && vm == NULL)
		fatalx("%s: a monitor request without a VM", __func__);
	if (peer == RP_IMAGE)
		fatalx("%s: a wait is not sent", __func__);
	r = req_alloc(peer, vm, done, cancel);
	r->type = type;
	req_msg(r);
	return r;
}

/* A chain's next step: the same request, a new message and answer. */
void
req_next(struct req *r, uint32_t type, req_done_fn done)
{
	req_next_to(r, r->peer, type, done);
}

/* The same, to another peer (not a wait), for a VM's request. */
void
req_next_to(struct req *r, enum req_peer peer, uint32_t type,
    req_done_fn done)
{
	if (r->live || r->msg != NULL)
		fatalx("%s: request %u is in flight", __func__, r->id);
	if (peer == RP_IMAGE || (peer == RP_MONITOR && r->vm == NULL))
		fatalx("%s: no such next step", __func__);
	r->peer = peer;
	r->type = type;
	r->done = done;
	req_msg(r);
}

static void
req_free(struct req *r)
{
	if (r->live)
		fatalx("%s: request %u is in flight", __func__, r->id);
	if (r->msg != NULL)
		imsg_discard(r->msg);
	if (r->acc != NULL)
		json_decref(r->acc);
	free(r->command);
	if (r->keep_fd != -1)
		close(r->keep_fd);
	free(r);
}

static void
req_unlink(struct req *r)
{
	if (!r->live)
		return;
	TAILQ_REMOVE(&reqs, r, entry);
	r->live = 0;
}

static void
req_enter(struct req *r)
{
	r->gen = req_gen(r->peer, r->vm);
	r->deadline = vm_now() + r->wait_ms / 1000 + peer_timeout[r->peer];
	TAILQ_INSERT_TAIL(&reqs, r, entry);
	r->live = 1;
}

/* Runs r's cancel once r is out of the table, then frees it. */
void
req_end(struct req *r, enum req_end why, const char *text)
{
	req_unlink(r);
	r->busy++;
	if (r->cancel != NULL)
		r->cancel(r, why, text);
	if (--r->busy == 0 && !r->live)
		req_free(r);
}

/* The answer r waited for (or IMSG_VMM_ERROR, which cancel gets). */
void
req_reply(struct req *r, struct imsg *imsg)
{
	req_unlink(r);
	r->busy++;
	r->done(r, imsg);
	if (--r->busy == 0 && !r->live)
		req_free(r);
}

/*
 * Sends the request and enters it in the table.  A monitor that is not
 * there, or has VM_CALLS_MAX requests already, refuses it at once: cancel
 * runs and -1 is returned.  A child that is down gets nothing, and the
 * request waits for its restart (req_peer_lost) or its deadline.
 */
int
req_send(struct req *r)
{
	struct vm	*vm = r->vm;
	struct ibuf	*b = r->msg;
	const char	*why = NULL;

	r->msg = NULL;
	if (r->peer == RP_MONITOR) {
		if (!vm->vmm_live)
			why = "the VM is not running";
		else if (req_count(vm, RP_MONITOR) >= VM_CALLS_MAX)
			why = "too many requests to this VM at once; retry";
		if (why != NULL) {
			imsg_discard(b);
			r->busy++;
			if (r->cancel != NULL)
				r->cancel(r, REQ_REFUSED, why);
			if (--r->busy == 0 && !r->live)
				req_free(r);
			return -1;
		}
		if (imsgev_close(&vm->vmm, b) == -1)
			fatal("%s", __func__);
	} else
		req_notice(r->peer, r->type, b);
	req_enter(r);
	return 0;
}

/*
 * A wait for peer's unasked report of type want about key: nothing is
 * sent.  It is in the table at once; done runs when req_match finds it
 * for the report, cancel at its deadline or when its caller ends it.
 */
struct req *
req_await(enum req_peer peer, uint32_t want, const char *key,
    req_done_fn done, req_cancel_fn cancel)
{
	struct req	*r;

	if (peer != RP_IMAGE)
		fatalx("%s: peer %d is asked, not awaited", __func__, peer);
	r = req_alloc(peer, NULL, done, cancel);
	r->want = want;
	r->id = req_id();
	(void)snprintf(r->key, sizeof(r->key), "%s", key);
	req_enter(r);
	return r;
}

/* A message to stored or netd whose answer no request waits for. */
struct ibuf *
req_notice_msg(enum req_peer peer, uint32_t type, int numbered)
{
	struct ibuf	*b;

	if ((b = imsg_create(NULL, type, numbered ? req_id() : 0, 0,
	    128)) == NULL)
		fatal("%s", __func__);
	return b;
}

/* Sends b to stored or netd; a child that is down gets nothing. */
void
req_notice(enum req_peer peer, uint32_t type, struct ibuf *b)
{
	struct child	*c = child_by_id(peer_proc[peer]);

	if (peer == RP_MONITOR)
		fatalx("%s: a notice to a monitor", __func__);
	if (!c->iev_live) {
		log_debug("%s is down: %s not sent", c->desc->title,
		    imsg_type_name(type));
		imsg_discard(b);
		return;
	}
	if (imsgev_close(&c->iev, b) == -1)
		fatal("%s", __func__);
}

/* The request an answer of peer's (of vm's monitor) names, or NULL. */
struct req *
req_find(enum req_peer peer, const struct vm *vm, uint32_t id)
{
	struct req	*r;

	if (id == 0)
		return NULL;
	TAILQ_FOREACH(r, &reqs, entry)
		if (r->id == id && r->peer == peer &&
		    (peer != RP_MONITOR || r->vm == vm) &&
		    r->gen == req_gen(peer, r->vm))
			return r;
	return NULL;
}

/* The first wait on peer of call's (0: any) about key (NULL: any). */
struct req *
req_match(enum req_peer peer, uint64_t call, const char *key)
{
	struct req	*r;

	TAILQ_FOREACH(r, &reqs, entry)
		if (r->peer == peer && (call == 0 || r->call == call) &&
		    (key == NULL || strcmp(r->key, key) == 0))
			return r;
	return NULL;
}

/* The first wait on peer that is not a task's, or NULL. */
struct req *
req_match_front(enum req_peer peer)
{
	struct req	*r;

	TAILQ_FOREACH(r, &reqs, entry)
		if (r->peer == peer && !task_call(r->call))
			return r;
	return NULL;
}

/* vm's first request to peer in flight, or NULL. */
struct req *
req_pending(const struct vm *vm, enum req_peer peer)
{
	struct req	*r;

	TAILQ_FOREACH(r, &reqs, entry)
		if (r->vm == vm && r->peer == peer)
			return r;
	return NULL;
}

unsigned int
req_count(const struct vm *vm, enum req_peer peer)
{
	struct req	*r;
	unsigned int	 n = 0;

	TAILQ_FOREACH(r, &reqs, entry)
		if (r->vm == vm && r->peer == peer)
			n++;
	return n;
}

struct req *
req_nth(const struct vm *vm, enum req_peer peer, unsigned int i)
{
	struct req	*r;

	TAILQ_FOREACH(r, &reqs, entry)
		if (r->vm == vm && r->peer == peer && i-- == 0)
			return r;
	return NULL;
}

/*
 * stored or netd (re)started: what the old instance held died with it.
 * Each cancel may end other requests, so the walk starts over.
 */
void
req_peer_lost(enum req_peer peer)
{
	struct req	*r;
	uint32_t	 gen = child_by_id(peer_proc[peer])->gen;

again:
	TAILQ_FOREACH(r, &reqs, entry) {
		if (r->peer != peer || r->gen == gen)
			continue;
		req_end(r, REQ_PEER_LOST, NULL);
		goto again;
	}
}

/*
 * vm's requests end: those to its monitor (all: every peer's) with why.
 * A request of stored's or netd's is only forgotten: its answer, if it
 * comes, finds no request.
 */
void
req_vm_gone(struct vm *vm, int all, const char *why)
{
	struct req	*r;

again:
	TAILQ_FOREACH(r, &reqs, entry) {
		if (r->vm != vm || (!all && r->peer != RP_MONITOR))
			continue;
		req_end(r, REQ_VM_GONE, why);
		goto again;
	}
}

/* A frontd call lost its caller: nothing is answered for it. */
void
req_lose_caller(uint64_t call)
{
	struct req	*r;

	TAILQ_FOREACH(r, &reqs, entry)
		if (r->call == call)
			r->call = 0;
}

/* The request of peer's that answers frontd call, or NULL. */
struct req *
req_for_call(enum req_peer peer, uint64_t call)
{
	struct req	*r;

	TAILQ_FOREACH(r, &reqs, entry)
		if (r->peer == peer && r->call == call && call != 0)
			return r;
	return NULL;
}

unsigned int
req_lose_callers(void)
{
	struct req	*r;
	unsigned int	 n = 0;

	TAILQ_FOREACH(r, &reqs, entry)
		if (r->call != 0 && !task_call(r->call)) {
			r->call = 0;
			n++;
		}
	return n;
}

/*
 * Once a second: every request past its deadline ends.  A child that
 * missed one is hung: it is killed, and its restart settles what else
 * waited for it, as after a crash.
 */
void
req_sweep(void)
{
	struct req	*r;
	struct child	*c;
	time_t		 now = vm_now();
	int		 hung[RP_NPEERS] = { 0 }, p;

again:
	TAILQ_FOREACH(r, &reqs, entry) {
		if (now < r->deadline)
			continue;
		hung[r->peer] = 1;
		if (r->peer == RP_MONITOR)
			log_warnx("%s: the monitor did not answer %s in time",
			    r->vm->row.id, imsg_type_name(r->type));
		req_end(r, REQ_EXPIRED, r->peer == RP_MONITOR ?
		    "the VM monitor did not answer in time; retry" : NULL);
		goto again;
	}
	for (p = RP_STORED; p <= RP_NETD; p++) {
		c = child_by_id(peer_proc[p]);
		if (!hung[p] || c->pid <= 0)
			continue;
		log_warnx("%s (pid %d) missed a deadline; killing it",
		    c->desc->title, (int)c->pid);
		(void)kill(c->pid, SIGKILL);
	}
}

static void
req_quiet_done(struct req *r, struct imsg *imsg)
{
}

static void
req_quiet_cancel(struct req *r, enum req_end end, const char *why)
{
	if (end != REQ_VM_GONE)
		log_warnx("%s: %s: %s", r->vm->row.id, imsg_type_name(r->type),
		    why != NULL ? why : "no answer");
}

/*
 * r's next step, to r's VM's monitor: the guest's clock set to the host's
 * time now (IMSG_VMM_SET_TIME), then done.  The caller sends it.
 */
void
req_next_set_time(struct req *r, req_done_fn done)
{
	struct msg_vmm_set_time	 m;
	struct timespec		 ts;

	(void)clock_gettime(CLOCK_REALTIME, &ts);
	req_next_to(r, RP_MONITOR, IMSG_VMM_SET_TIME, done);
	m.sec = (uint64_t)ts.tv_sec;
	m.nsec = (uint32_t)ts.tv_nsec;
	msg_vmm_set_time_put(r->msg, &m);
}

/* A request to vm's monitor without arguments, whose answer only logs. */
void
req_send_quiet(struct vm *vm, uint32_t type)
{
	(void)req_send(req_new(RP_MONITOR, vm, type, req_quiet_done,
	    req_quiet_cancel));
}
