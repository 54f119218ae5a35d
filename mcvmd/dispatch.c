/*
 * The dispatcher (see dispatch.h): every tool call from frontd, from its
 * authentication to its last answer.  frontd is inside the suite, so a
 * malformed message from it is fatal here.
 *
 * Every tool call carries the token hash again and is authenticated
 * afresh: a token revoked between frontd's check and the call is refused.
 * The arguments are decoded with the shared catalogue (common/tools.c),
 * which re-applies every bound frontd applied.
 *
 * A call is known by its frontd instance and request id together (see
 * call_id): when frontd restarts, the calls of the old one lose their
 * caller, and nothing meant for them reaches the new one.
 */
#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dispatch.h"
#include "jschema.h"
#include "log.h"
#include "req.h"
#include "task.h"
#include "vm.h"

/* The calls in flight: which tool each is, for its budget and cancel. */
struct inflight {
	TAILQ_ENTRY(inflight)	 entry;
	uint64_t		 id;
	const struct tool_desc	*tool;
};
static TAILQ_HEAD(, inflight) inflight = TAILQ_HEAD_INITIALIZER(inflight);

/*
 * The implementation of tool id, or NULL: it is not available.  The
 * entries are few (one per tool), and the first one found is the one:
 * the unit test proves there is no second.
 */
const struct tool_impl *
dispatch_impl(enum tool_id id)
{
	const struct tool_impl *const	*p;

	LINKSET_FOREACH(tool_impls, p)
		if ((*p)->id == id)
			return *p;
	return NULL;
}

/*
 * A frontd call as mcvmd holds it: frontd's request id (the imsg peerid)
 * in the low 32 bits, and in the high 32 the instance of frontd it came
 * from, which counts frontd's starts.  0 stands for no caller.
 */
uint64_t
call_id(uint32_t peerid)
{
	return (uint64_t)child_by_id(PROC_FRONTD)->gen << 32 | peerid;
}

static struct inflight *
call_find(uint64_t id)
{
	struct inflight	*f;

	TAILQ_FOREACH(f, &inflight, entry)
		if (f->id == id)
			return f;
	return NULL;
}

/* Call id of tool is in flight until it is answered or cancelled. */
void
call_begin(uint64_t id, enum tool_id tool)
{
	struct inflight	*f;

	if (id == 0 || call_find(id) != NULL)
		return;
	if ((f = calloc(1, sizeof(*f))) == NULL)
		fatal("%s", __func__);
	f->id = id;
	f->tool = tool_by_id(tool);
	TAILQ_INSERT_TAIL(&inflight, f, entry);
}

static void
call_end(struct inflight *f)
{
	TAILQ_REMOVE(&inflight, f, entry);
	free(f);
}

/*
 * The frontd a call came from, if it still runs: an answer for an
 * earlier instance is dropped, never matched to a request of the new one
 * that happens to have the same number.
 */
static struct child *
call_front(uint64_t call)
{
	struct child	*c = child_by_id(PROC_FRONTD);

	if (call == 0)
		return NULL;
	if (call >> 32 != c->gen || !c->iev_live ||
	    c->state != CHILD_RUNNING) {
		log_debug("answer to call %u of frontd instance %u dropped",
		    (uint32_t)call, (uint32_t)(call >> 32));
		return NULL;
	}
	return c;
}

/*
 * Answers a frontd call.  A result over its tool's budget is refused for
 * that call alone: the caller is told to ask for less.
 */
void
call_reply(uint64_t id, enum tool_status st, const char *text)
{
	struct msg_front_tool_result res;
	struct inflight	*f;
	struct child	*c;
	struct ibuf	*b;
	size_t		 len = strlen(text), budget = TOOL_RESULT_MAX;
	char		 msg[TOOL_MESSAGE_MAX];

	if ((f = call_find(id)) != NULL) {
		if (f->tool != NULL && f->tool->budget < budget)
			budget = f->tool->budget;
		call_end(f);
	}
	if (task_call(id)) {
		task_finish(id, st, text);
		return;
	}
	if ((c = call_front(id)) == NULL)
		return;
	if (len > budget) {
		log_warnx("call %u: a %zu-byte result is over the budget of "
		    "%zu bytes; refused", (uint32_t)id, len, budget);
		(void)snprintf(msg, sizeof(msg), "the result would be %zu "
		    "bytes, over the %zu KiB one call may return; nothing was "
		    "lost: ask for less at a time", len, budget / 1024);
		st = TOOL_ERROR;
		text = msg;
		len = strlen(msg);
	}
	if ((b = imsg_create(&c->iev.ibuf, IMSG_FRONT_TOOL_RESULT,
	    (uint32_t)id, 0, len + 16)) == NULL)
		fatal("%s", __func__);
	res.status = st;
	res.json = text;
	msg_front_tool_result_put(b, &res);
	if (imsgev_close(&c->iev, b) == -1)
		fatal("%s", __func__);
}

/*
 * Answers a frontd call with a result whose bytes are in fd (a memfd,
 * a file or a pipe's read end, which this takes), passed on to frontd
 * without being read: they never go through mcvmd's heap.  frontd checks
 * the descriptor itself and streams it to the client.  Returns -1, with
 * nothing sent and fd closed, when m or fd would not make a well-formed
 * message or the result is over the tool's budget: the caller then
 * answers the call with an error.
 */
int
call_reply_fd(uint64_t id, const struct msg_front_tool_result_fd *m, int fd)
{
	struct inflight	*f;
	struct child	*c;
	struct ibuf	*b;
	struct stat	 sb;
	size_t		 budget = TOOL_RESULT_MAX;

	if ((f = call_find(id)) != NULL && f->tool != NULL)
		budget = f->tool->budget;
	if (task_call(id)) {
		/* A task keeps JSON only: the caller is told. */
		if (fd != -1)
			close(fd);
		return -1;
	}
	if (fd == -1 || fstat(fd, &sb) == -1 ||
	    !(S_ISREG(sb.st_mode) || S_ISFIFO(sb.st_mode)) ||
	    m->status != TOOL_OK || m->json == NULL ||
	    strlen(m->json) > TOOL_RESULT_MAX || m->mime == NULL ||
	    !payload_mime_valid(m->mime, m->kind) || m->size == 0 ||
	    m->size > budget) {
		log_warnx("call %u: a result by descriptor refused: %s",
		    (uint32_t)id, fd == -1 ? "no descriptor" :
		    "a bad header, descriptor or size");
		if (fd != -1)
			close(fd);
		return -1;
	}
	if (f != NULL)
		call_end(f);
	if ((c = call_front(id)) == NULL) {
		close(fd);
		return 0;
	}
	if ((b = imsg_create(&c->iev.ibuf, IMSG_FRONT_TOOL_RESULT_FD,
	    (uint32_t)id, 0, strlen(m->json) + 128)) == NULL)
		fatal("%s", __func__);
	msg_front_tool_result_fd_put(b, m);
	imsg_set_fd(b, fd);
	if (imsgev_close(&c->iev, b) == -1)
		fatal("%s", __func__);
	return 0;
}

/*
 * Sends a JSON result mcvmd built, and frees it.  A result that cannot be
 * encoded (NULL from a failed json_pack, or text that is not UTF-8) fails
 * the call, not mcvmd.
 */
/*
 * Every result is checked against its tool's output schema, which must
 * list everything a result carries.  A mismatch is mcvmd's bug, not the
 * caller's: it is logged (the suites fail on it) and the result sent.
 */
static void
call_check_schema(uint64_t id, const json_t *j)
{
	static json_t		*schemas[TOOL_ID_END];
	const struct inflight	*f;
	const struct tool_desc	*t;
	char			 err[JSCHEMA_WHERE_MAX + 64];

	if ((f = call_find(id)) == NULL || (t = f->tool) == NULL)
		return;
	if (schemas[t->id] == NULL &&
	    (schemas[t->id] = jschema_load(t->output)) == NULL)
		fatalx("%s: the output schema of %s", __func__, t->name);
	if (jschema_check(schemas[t->id], j, err, sizeof(err)) == -1)
		log_warnx("bug: a result of %s does not match its output "
		    "schema: %s", t->name, err);
}

void
call_reply_json(uint64_t id, json_t *j)
{
	char	*text;

	if (j == NULL || (text = json_dumps(j, JSON_COMPACT)) == NULL) {
		log_warnx("call %u: the result could not be encoded",
		    (uint32_t)id);
		call_reply(id, TOOL_ERROR, "internal error: the result "
		    "could not be encoded; nothing was changed by it");
		json_decref(j);
		return;
	}
	call_check_schema(id, j);
	call_reply(id, TOOL_OK, text);
	free(text);
	json_decref(j);
}

/* Hands call's frontd a descriptor of type, with no fields; takes fd. */
void
call_send_fd(uint64_t id, uint32_t type, int fd)
{
	struct child	*c;
	struct ibuf	*b;

	if ((c = call_front(id)) == NULL) {
		close(fd);
		return;
	}
	if ((b = imsg_create(&c->iev.ibuf, type, (uint32_t)id, 0, 0)) ==
	    NULL) {
		close(fd);
		fatal("%s", __func__);
	}
	imsg_set_fd(b, fd);
	if (imsgev_close(&c->iev, b) == -1)
		fatal("%s", __func__);
}

/* Tells a long call's caller how far it got (MCP progress). */
void
call_progress(uint64_t id, uint64_t done, uint64_t total, const char *what)
{
	struct msg_front_progress p;
	struct child	*c;
	struct ibuf	*b;

	if ((c = call_front(id)) == NULL)
		return;
	if ((b = imsg_create(&c->iev.ibuf, IMSG_FRONT_PROGRESS,
	    (uint32_t)id, 0, 64 + strlen(what))) == NULL)
		fatal("%s", __func__);
	p.progress = done;
	p.total = total;
	p.message = what;
	msg_front_progress_put(b, &p);
	if (imsgev_close(&c->iev, b) == -1)
		fatal("%s", __func__);
}

#define NOTHING_RUN	" (nothing was run)"

/* Why vm is not in the state a tool needs, with what to do about it. */
static void
state_refusal(const struct vm *vm, char *msg, size_t size)
{
	switch (vm->state) {
	case VS_PAUSED:
		(void)snprintf(msg, size, "%s is paused: call vm_resume "
		    "first", vm->row.id);
		break;
	case VS_STOPPED:
		(void)snprintf(msg, size, "%s is stopped: call vm_start "
		    "first", vm->row.id);
		break;
	case VS_HIBERNATED:
		(void)snprintf(msg, size, "%s is hibernated: call vm_resume "
		    "first", vm->row.id);
		break;
	case VS_FAILED:
		(void)snprintf(msg, size, "%s failed (%s): destroy it with "
		    "vm_destroy, or try vm_start", vm->row.id,
		    vm->row.reason);
		break;
	default:
		(void)snprintf(msg, size, "%s is %s: retry in a few seconds",
		    vm->row.id, vm_state_name(vm->state));
		break;
	}
}

/* Why vm is not in the state a tool needs, as the call's error. */
void
call_refuse_state(uint64_t id, const struct vm *vm)
{
	char	 msg[VM_MSG_MAX];

	state_refusal(vm, msg, sizeof(msg));
	call_reply(id, TOOL_ERROR, msg);
}

/* ---- target, state ------------------------------------------------------ */

static int
target_vm(struct tool_call *c)
{
	const char	*id = c->args->v[P_TARGET].s;
	char		 msg[VM_MSG_MAX];

	if (id == NULL || !(valid_id(id, VM_ID_PREFIX) ||
	    valid_object_name(id)))
		fatalx("frontd: %s without a valid vm_id",
		    c->args->tool->name);
	/* A foreign VM gets the same answer as a missing one. */
	if ((c->vm = vm_find_ref(id, c->auth->id)) == NULL) {
		/* vm_destroy is idempotent: its own VM, destroyed before,
		 * answers as destroyed (the audit log remembers it). */
		if (c->args->tool->id == TOOL_VM_DESTROY &&
		    valid_id(id, VM_ID_PREFIX) &&
		    state_vm_destroyed(id, c->auth->id) == 1) {
			call_reply_json(c->id, json_pack("{s:s, s:b}",
			    "vm_id", id, "destroyed", 1));
			return -1;
		}
		(void)snprintf(msg, sizeof(msg), "no VM %s in this workspace: "
		    "see vm_list", id);
		call_reply(c->id, TOOL_NOT_FOUND, msg);
		return -1;
	}
	return 0;
}

static int
target_job(struct tool_call *c)
{
	const char	*id = c->args->v[P_TARGET_SUB].s;
	char		 msg[VM_MSG_MAX];
	int		 rc;

	if (id == NULL || !valid_id(id, "job-"))
		fatalx("frontd: %s without a valid job_id",
		    c->args->tool->name);
	if ((rc = state_job_lookup(id, c->vm->row.id, &c->job)) != 1) {
		if (rc == 0)
			(void)snprintf(msg, sizeof(msg), "no job %s on %s (a "
			    "VM remembers its newest %d jobs of this boot): "
			    "see vm_status for its jobs", id, c->vm->row.id,
			    STATE_JOBS_MAX);
		else
			(void)snprintf(msg, sizeof(msg), "state database "
			    "error");
		call_reply(c->id, rc == 0 ? TOOL_NOT_FOUND : TOOL_ERROR, msg);
		return -1;
	}
	(void)snprintf(c->job_id, sizeof(c->job_id), "%s", id);
	return 0;
}

/* What the tool acts on, and its owner: -1 if the call was answered. */
static int
dispatch_target(struct tool_call *c)
{
	char	 msg[TOOL_MESSAGE_MAX];

	switch (c->args->tool->target) {
	case TT_NONE:
		return 0;
	case TT_VM:
	case TT_VM_LIVE:
	case TT_VM_RUNNING:
	case TT_VM_AGENT:
		return target_vm(c);
	case TT_JOB:
		return target_vm(c) == -1 ? -1 : target_job(c);
	case TT_IMAGE:
		/* The workspace's store finds it, or says it has none. */
		return 0;
	default:
		(void)snprintf(msg, sizeof(msg), "%s is not available yet: "
		    "this mcvm build cannot find its target. Nothing was "
		    "done.", c->args->tool->name);
		call_reply(c->id, TOOL_UNAVAILABLE, msg);
		return -1;
	}
}

/* Whether the tool needs the guest agent (own disks' QGA, if it runs). */
static int
dispatch_agent_tool(const struct tool_call *c)
{
	switch (c->args->tool->id) {
	case TOOL_VM_EXEC:
	case TOOL_VM_READ_FILE:
	case TOOL_VM_WRITE_FILE:
	case TOOL_VM_LIST_FILES:
		return 1;
	default:
		return c->args->tool->target == TT_VM_AGENT ||
		    c->args->tool->target == TT_JOB;
	}
}

/* Whether the tool needs mcvm to own the VM's QEMU: not an attached one. */
static int
dispatch_owner_tool(const struct tool_call *c)
{
	switch (c->args->tool->id) {
	case TOOL_VM_STOP:
	case TOOL_VM_START:
	case TOOL_VM_DESTROY:
	case TOOL_VM_FORK:
		return 1;
	default:
		return 0;
	}
}

/* A call refused before it ran: its receipt, if any, keeps why. */
static void
dispatch_refuse(struct tool_call *c, const char *msg)
{
	if (c->rid != NULL)
		receipt_fail(c->auth->id, c->rid, c->vm->row.id, c->id,
		    TOOL_ERROR, msg);
	else
		call_reply(c->id, TOOL_ERROR, msg);
}

/* The state the target must be in: -1 if the call was answered. */
static int
dispatch_state(struct tool_call *c)
{
	struct vm	*vm = c->vm;
	enum tool_target t = c->args->tool->target;
	char		 msg[VM_MSG_MAX];
	size_t		 len;

	if (vm != NULL && vm_attached(vm) && dispatch_owner_tool(c)) {
		vm_attached_refusal(vm, c->args->tool->name, msg, sizeof(msg));
		dispatch_refuse(c, msg);
		return -1;
	}
	if (vm != NULL && vm_speaks_qga(vm) && !vm->boot.agent &&
	    dispatch_agent_tool(c)) {
		vm_no_agent_text(vm, msg, sizeof(msg));
		dispatch_refuse(c, msg);
		return -1;
	}
	/* A fork saves its state: what would change it waits its turn. */
	if (vm != NULL && vm->forking &&
	    !(c->args->tool->flags & TF_READONLY)) {
		(void)snprintf(msg, sizeof(msg), "%s is being forked: its "
		    "state is being saved, which takes a moment; nothing was "
		    "done: retry in a second", vm->row.id);
		dispatch_refuse(c, msg);
		return -1;
	}
	if (t != TT_VM_LIVE && t != TT_VM_RUNNING && t != TT_VM_AGENT &&
	    t != TT_JOB)
		return 0;
	if (t == TT_VM_LIVE ? vm_live(vm) : (vm->state == VS_RUNNING &&
	    vm->vmm_live && (t != TT_VM_AGENT || vm->boot.agent)))
		return 0;
	if (c->rid != NULL) {
		/* The receipt keeps that nothing was run. */
		state_refusal(vm, msg, sizeof(msg) - strlen(NOTHING_RUN));
		len = strlen(msg);
		(void)snprintf(msg + len, sizeof(msg) - len, NOTHING_RUN);
		receipt_fail(c->auth->id, c->rid, vm->row.id, c->id,
		    TOOL_ERROR, msg);
		return -1;
	}
	if (vm->state == VS_RUNNING && vm->vmm_live) {
		(void)snprintf(msg, sizeof(msg), "the guest agent of %s is "
		    "not answering: retry in a few seconds", vm->row.id);
		call_reply(c->id, TOOL_ERROR, msg);
		return -1;
	}
	call_refuse_state(c->id, vm);
	return -1;
}

/*
 * A tool call, authenticated: to its implementation.  Returns 0 if the
 * tool has none (the caller was told so), 1 otherwise (answered now, or
 * later).
 */
int
dispatch_run(uint64_t id, const struct ws_auth *auth,
    const struct tool_args *args)
{
	const struct tool_impl	*impl = dispatch_impl(args->tool->id);
	struct tool_call	 c;
	char			 msg[TOOL_MESSAGE_MAX];

	if (impl == NULL) {
		/* No back end for this tool yet: say so plainly, never fake
		 * one. */
		(void)snprintf(msg, sizeof(msg), "%s is not available yet: "
		    "this mcvm build has no back end for it. Nothing was "
		    "done.", args->tool->name);
		call_reply(id, TOOL_UNAVAILABLE, msg);
		return 0;
	}
	if (vm_draining()) {
		call_reply(id, TOOL_UNAVAILABLE, "mcvm is stopping: its VMs "
		    "are being hibernated; nothing was done. Retry once it is "
		    "back: work wakes them");
		return 1;
	}
	memset(&c, 0, sizeof(c));
	c.id = id;
	c.impl = impl;
	c.auth = auth;
	c.args = args;
	call_begin(id, args->tool->id);
	if (dispatch_target(&c) == -1)
		return 1;
	if (impl->check != NULL && impl->check(&c) != 0)
		return 1;
	/* A suspended VM wakes first (wake.c); the call then runs anew. */
	if (vm_wake_call(&c))
		return 1;
	if (vm_call_needs_guest(&c))
		vm_idle_touch(c.vm);
	if (impl->receipt != NULL) {
		c.rid = impl->rid >= 0 ? args->v[impl->rid].s : NULL;
		if (c.rid == NULL || !valid_request_id(c.rid))
			fatalx("frontd: %s without a valid request_id",
			    args->tool->name);
		if (receipt_begin(id, auth->id, c.rid, args, c.vm != NULL ?
		    c.vm->row.id : "", impl->receipt) != 0)
			return 1;
	}
	if (dispatch_state(&c) == -1)
		return 1;
	impl->run(&c);
	return 1;
}

/* IMSG_FRONT_TOOL: token hash, tool id, arguments. */
void
dispatch_tool(struct imsgev *iev, struct imsg *imsg)
{
	struct msg_front_tool	 m;
	struct ws_auth		 auth;
	uint64_t		 id = call_id(imsg->hdr.peerid);

	if (msg_front_tool_get(imsg, &m) == -1)
		fatalx("frontd: malformed %s", imsg_type_name(imsg->hdr.type));
	if (state_token_auth(m.hash, &auth) == -1) {
		call_reply(id, TOOL_UNAVAILABLE,
		    "authentication is unavailable; retry later");
		return;
	}
	if (auth.status != AUTH_OK) {
		call_reply(id, TOOL_DENIED,
		    "the token is not valid (unknown, expired or revoked)");
		return;
	}
	log_debug("%s: workspace %s: %s", __func__, auth.name,
	    m.args.tool->name);
	(void)dispatch_run(id, &auth, &m.args);
}

/* A call loses its caller: its work goes on, unanswered. */
static void
call_lose(uint64_t id)
{
	struct vm	*vm;

	req_lose_caller(id);
	vm_wake_forget(id);
	TAILQ_FOREACH(vm, &vms, entry)
		if (vm->op.peerid == id)
			vm->op.peerid = 0;
}

/*
 * The caller cancelled a call (MCP notifications/cancelled, or it went
 * away).  A tool with a cancel undoes what it can (vm_create); any other
 * call only loses its caller: what it started (a job, a write) has been
 * done or goes on, and the tools that show it still do.
 */
void
dispatch_cancel(uint64_t id)
{
	struct inflight		*f;
	const struct tool_impl	*impl;

	if ((f = call_find(id)) == NULL)
		return;		/* answered already */
	if (f->tool != NULL && (impl = dispatch_impl(f->tool->id)) != NULL &&
	    impl->cancel != NULL)
		impl->cancel(id);
	call_lose(id);
	if ((f = call_find(id)) != NULL)
		call_end(f);
}

/*
 * frontd died: its calls have lost their caller.  Their work goes on (a
 * creation finishes, and its receipt lets a retry find it), but nothing
 * is answered for them, on this frontd or the next.
 */
void
vm_front_lost(void)
{
	struct inflight	*f;
	struct vm	*vm;
	unsigned int	 n = 0;

	struct inflight	*next;

	/* A task's call is mcvmd's own: it goes on, and is answered. */
	tool_vm_create_lost();
	for (f = TAILQ_FIRST(&inflight); f != NULL; f = next) {
		next = TAILQ_NEXT(f, entry);
		if (task_call(f->id))
			continue;
		call_end(f);
		n++;
	}
	TAILQ_FOREACH(vm, &vms, entry)
		if (!task_call(vm->op.peerid))
			vm->op.peerid = 0;
	(void)req_lose_callers();
	if (n > 0)
		log_info("frontd's calls in flight lost their caller: %u", n);
}

/* ---- requests of tools to the monitor ----------------------------------- */

/* A request of call c's to its VM's monitor, answered by done. */
struct req *
call_req(struct tool_call *c, uint32_t type,
    void (*done)(struct req *, struct imsg *))
{
	struct req	*r;

	r = req_new(RP_MONITOR, c->vm, type, done, call_req_cancel);
	r->call = c->id;
	r->what = c->args->tool->name;
	return r;
}

/* A tool's request failed: its receipt, if any, keeps why. */
void
call_req_fail(struct req *r, const char *why)
{
	receipt_fail(r->vm->row.ws_id, r->rid, r->vm->row.id, r->call,
	    TOOL_ERROR, why);
}

void
call_req_cancel(struct req *r, enum req_end end, const char *why)
{
	call_req_fail(r, why != NULL ? why : "the request failed");
}
