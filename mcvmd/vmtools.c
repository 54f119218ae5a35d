/*
 * The VM tools: what each one asks of the VM monitor, and the JSON result
 * mcvmd builds from the monitor's typed answer.  mcvmd builds JSON; it
 * never parses any.  Text from the guest reaches it already decoded by
 * the monitor and is checked again here (valid UTF-8) before use.
 */
#include <sys/random.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_proto.h"
#include "b64.h"
#include "hash.h"
#include "log.h"
#include "msg.h"
#include "utf8.h"
#include "vm.h"
#include "vmm_relay.h"

#define VM_MSG_MAX		512
#define VM_FILE_B64_MAX		B64_ENCODED_LEN(TOOL_FILE_MAX)
#define VM_TEXT_MAX		(3 * VM_JOB_PAGE_MAX)	/* decoded page */
#define VM_TEXT_B64_MAX		B64_ENCODED_LEN(VM_JOB_PAGE_MAX)

static const char *const job_states[] = {
	[AGENT_JOB_RUNNING] = "running",
	[AGENT_JOB_COMPLETED] = "completed",
	[AGENT_JOB_CANCELLED] = "cancelled",
	[AGENT_JOB_TIMED_OUT] = "timed_out",
	[AGENT_JOB_FAILED] = "failed",
};


const struct tool_value *
vm_arg(const struct tool_args *a, const char *name)
{
	int	 i = tool_param_index(a->tool, name);

	if (i == -1 || !a->v[i].present)
		return NULL;
	return &a->v[i];
}

/* Arguments in their canonical typed encoding, hashed: a receipt's key. */
int
vm_args_hash(const struct tool_args *a, uint8_t out[SHA256_LEN])
{
	struct ibuf	*b;
	int		 rc;

	if ((b = imsg_create(NULL, 0, 0, 0, 512)) == NULL)
		return -1;
	tool_args_encode(b, a);
	rc = b->err ? -1 : sha256(b->buf + IMSG_HDR_SIZE,
	    b->size - IMSG_HDR_SIZE, out);
	imsg_discard(b);
	return rc;
}

void
vm_call_fail(struct vm_call *c, const char *why)
{
	struct vm	*vm = c->vm;
	struct vm_call	*x;

	TAILQ_FOREACH(x, &vm->calls, entry) {
		if (x == c) {
			TAILQ_REMOVE(&vm->calls, c, entry);
			vm->ncalls--;
			break;
		}
	}
	if (c->rid[0] != '\0' && state_receipt_end(vm->row.ws_id, c->rid, 0,
	    vm->row.id, why) == -1)
		log_warnx("%s: receipt not settled", vm->row.id);
	vm_reply(c->peerid, TOOL_ERROR, why);
	vm_call_free(c);
}


_Static_assert(TOOL_WAIT_MAX * 1000 <= AGENT_WAIT_MAX_MS,
    "wait_seconds beyond what the agent waits");

/* wait_seconds, which the catalogue bounds by TOOL_WAIT_MAX. */
static uint32_t
tool_wait_ms(const struct tool_args *args)
{
	int64_t	 s = 0;

	(void)tool_arg_int(args, "wait_seconds", &s);
	return (uint32_t)s * 1000;
}

static json_t *
job_json(const struct vm_call *c, const struct agent_job_status *s)
{
	json_t	*j;

	j = json_pack("{s:s, s:s, s:s, s:b, s:b, s:I, s:I, s:I}",
	    "vm_id", c->vm->row.id, "job_id", c->job_id,
	    "state", job_states[s->state],
	    "truncated", (int)s->truncated,
	    "timed_out", s->state == AGENT_JOB_TIMED_OUT,
	    "stdout_bytes", (json_int_t)s->out_total,
	    "stderr_bytes", (json_int_t)s->err_total,
	    "runtime_ms", (json_int_t)s->runtime_ms);
	if (j == NULL)
		fatalx("%s: json_pack", __func__);
	if (s->state == AGENT_JOB_RUNNING || s->signal != 0)
		json_object_set_new(j, "exit_code", json_null());
	else
		json_object_set_new(j, "exit_code",
		    json_integer(s->exit_code));
	if (s->signal != 0)
		json_object_set_new(j, "signal", json_integer(s->signal));
	return j;
}

/* The monitor's or the guest's refusal, as the tool's error. */
static void
vm_call_error(struct vm_call *c, struct imsg *imsg)
{
	struct mreader	 r;
	const char	*text;
	uint32_t	 code, err;
	char		 msg[VM_MSG_MAX];

	m_init(&r, imsg);
	if (m_get_u32(&r, &code) == -1 || m_get_u32(&r, &err) == -1 ||
	    m_get_str(&r, &text, AGENT_ERRMSG_MAX) == -1 || m_end(&r) == -1 ||
	    !valid_utf8(text, strlen(text))) {
		vm_call_fail(c, "malformed error from the VM monitor");
		return;
	}
	switch (code) {
	case AGENT_ERR_NOJOB:
		(void)snprintf(msg, sizeof(msg), "the guest has no such job: "
		    "%s", text);
		break;
	case AGENT_ERR_LIMIT:
		(void)snprintf(msg, sizeof(msg), "%s: at most %d jobs run at "
		    "once; wait for one to finish, or cancel it", text,
		    AGENT_JOBS_ACTIVE_MAX);
		break;
	case AGENT_ERR_EXPIRED:
		(void)snprintf(msg, sizeof(msg), "the job has expired: %s",
		    text);
		break;
	case AGENT_ERR_PATH:
		(void)snprintf(msg, sizeof(msg), "refused: %s (paths stay "
		    "beneath /workspace and may not use symlinks)", text);
		break;
	case VMM_ERR_GUEST_DOWN:
		(void)snprintf(msg, sizeof(msg), "the guest agent is not "
		    "answering: %s", text);
		break;
	case VMM_ERR_TIMEOUT:
		(void)snprintf(msg, sizeof(msg), "the VM did not answer in "
		    "time: %s", text);
		break;
	default:
		(void)snprintf(msg, sizeof(msg), "%s", text);
		break;
	}
	vm_call_fail(c, msg);
}

static void
vm_random_job_id(char *out, size_t len)
{
	uint8_t	 raw[ID_HEX_LEN / 2];
	char	 hex[ID_HEX_LEN + 1];

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		fatal("getrandom");
	hex_encode(raw, sizeof(raw), hex);
	(void)snprintf(out, len, "job-%s", hex);
}

/*
 * Asks for a page of each stream from cursor (NULL: the start).  Returns
 * -1 if it could not be sent; the call has failed then.
 */
static int
job_read(struct vm_call *c, uint32_t job, const struct tool_value *cursor)
{
	struct ibuf	*b = vm_call_msg(c->vm, IMSG_VMM_JOB_READ, c);

	m_add_u32(b, job);
	m_add_u64(b, cursor != NULL ? cursor->cursor[0] : 0);
	m_add_u64(b, cursor != NULL ? cursor->cursor[1] : 0);
	m_add_u32(b, VM_JOB_PAGE_MAX);
	m_add_u32(b, VM_JOB_PAGE_MAX);
	m_add_u32(b, c->encoding);
	m_add_u32(b, c->wait_ms);
	return vm_call(c->vm, c, b);
}

static void
exec_done(struct vm_call *c, struct imsg *imsg)
{
	struct vm	*vm = c->vm;
	struct mreader	 r;
	uint32_t	 job;
	char		 id[ID_MAX + 1], *text;
	json_t		*j;

	m_init(&r, imsg);
	if (m_get_u32(&r, &job) == -1 || m_end(&r) == -1) {
		vm_call_fail(c, "malformed answer from the VM monitor");
		return;
	}
	vm_random_job_id(id, sizeof(id));
	j = json_pack("{s:s, s:s, s:s}", "vm_id", vm->row.id, "job_id", id,
	    "state", "running");
	if (j == NULL || (text = json_dumps(j, JSON_COMPACT)) == NULL)
		fatalx("%s: json", __func__);
	json_decref(j);
	if (c->wait_ms > 0) {
		/*
		 * The job's end and output are this answer's; a replay gives
		 * the above.  The read goes out before the job row is
		 * written, so that the guest answers it meanwhile.
		 */
		(void)snprintf(c->job_id, sizeof(c->job_id), "%s", id);
		c->step = 1;
		if (job_read(c, job, NULL) == -1) {
			/* Only if the monitor is gone (this call's slot is
			 * free), which fails the VM. */
			free(text);
			return;
		}
		/* A failure shows again in the monitor's event handler. */
		(void)imsgbuf_write(&vm->vmm.ibuf);
		imsgev_add(&vm->vmm);
	}
	if (state_job_start(id, vm->row.id, job, c->command, vm->row.ws_id,
	    c->rid, text) == -1) {
		free(text);
		vm_call_fail(c, "state database error");
		return;
	}
	if (c->wait_ms > 0) {
		free(text);
		return;
	}
	vm_reply(c->peerid, TOOL_OK, text);
	free(text);
	vm_call_free(c);
}

static void
job_state_done(struct vm_call *c, struct imsg *imsg)
{
	struct mreader		 r;
	struct agent_job_status	 s;

	m_init(&r, imsg);
	if (vmm_status_get(&r, &s) == -1 || m_end(&r) == -1) {
		vm_call_fail(c, "malformed job status from the VM monitor");
		return;
	}
	vm_reply_json(c->peerid, job_json(c, &s));
	vm_call_free(c);
}

static void
job_output_done(struct vm_call *c, struct imsg *imsg)
{
	struct mreader		 r;
	struct agent_job_status	 s;
	const char		*out, *err;
	uint64_t		 onext, enext;
	uint32_t		 oerr, eerr;
	size_t			 max = c->encoding == VMM_ENC_UTF8 ?
				    VM_TEXT_MAX : VM_TEXT_B64_MAX;
	json_t			*j;

	m_init(&r, imsg);
	if (vmm_status_get(&r, &s) == -1 || m_get_u64(&r, &onext) == -1 ||
	    m_get_str(&r, &out, max) == -1 || m_get_u32(&r, &oerr) == -1 ||
	    m_get_u64(&r, &enext) == -1 || m_get_str(&r, &err, max) == -1 ||
	    m_get_u32(&r, &eerr) == -1 || m_end(&r) == -1 ||
	    !valid_utf8(out, strlen(out)) || !valid_utf8(err, strlen(err)) ||
	    onext > s.out_retained || enext > s.err_retained) {
		vm_call_fail(c, "malformed job output from the VM monitor");
		return;
	}
	j = job_json(c, &s);
	json_object_set_new(j, "encoding", json_string(c->encoding ==
	    VMM_ENC_UTF8 ? "utf-8" : "base64"));
	if (c->encoding == VMM_ENC_UTF8) {
		json_object_set_new(j, "stdout", json_string(out));
		json_object_set_new(j, "stderr", json_string(err));
		json_object_set_new(j, "decoding_errors", json_pack(
		    "{s:b, s:b}", "stdout", oerr != 0, "stderr", eerr != 0));
	} else {
		json_object_set_new(j, "stdout_base64", json_string(out));
		json_object_set_new(j, "stderr_base64", json_string(err));
	}
	json_object_set_new(j, "next_cursor", json_pack("{s:I, s:I}",
	    "stdout", (json_int_t)onext, "stderr", (json_int_t)enext));
	vm_reply_json(c->peerid, j);
	vm_call_free(c);
}

static void
file_data_done(struct vm_call *c, struct imsg *imsg)
{
	struct mreader	 r;
	const void	*data;
	size_t		 len;
	uint64_t	 offset, size;
	uint32_t	 eof;
	char		*b64;
	json_t		*j;

	m_init(&r, imsg);
	if (m_get_u64(&r, &offset) == -1 || m_get_u64(&r, &size) == -1 ||
	    m_get_u32(&r, &eof) == -1 ||
	    m_get_bytes(&r, &data, &len, TOOL_FILE_MAX) == -1 ||
	    m_end(&r) == -1 || eof > 1) {
		vm_call_fail(c, "malformed file data from the VM monitor");
		return;
	}
	if ((b64 = malloc(B64_ENCODED_LEN(len) + 1)) == NULL)
		fatal("%s", __func__);
	(void)b64_encode(data, len, b64);
	j = json_pack("{s:s, s:I, s:I, s:I, s:b, s:s}", "path", c->path,
	    "offset", (json_int_t)offset, "bytes", (json_int_t)len,
	    "size", (json_int_t)size, "eof", (int)eof, "content_base64", b64);
	free(b64);
	if (j == NULL)
		fatalx("%s: json_pack", __func__);
	vm_reply_json(c->peerid, j);
	vm_call_free(c);
}

static void
file_written_done(struct vm_call *c, struct imsg *imsg)
{
	struct mreader	 r;
	uint64_t	 size;
	uint32_t	 written;

	m_init(&r, imsg);
	if (m_get_u64(&r, &size) == -1 || m_get_u32(&r, &written) == -1 ||
	    m_end(&r) == -1) {
		vm_call_fail(c, "malformed answer from the VM monitor");
		return;
	}
	vm_reply_json(c->peerid, json_pack("{s:s, s:I, s:I}", "path",
	    c->path, "size", (json_int_t)size, "written",
	    (json_int_t)written));
	vm_call_free(c);
}

/*
 * vm_status lists a VM's newest jobs, each command cut to a short prefix:
 * the answer stays small however many jobs ran or how long they were.
 * vm_job_status tells the rest of a job.
 */
static int
jobs_json_add(const char *id, uint32_t guest_job, const char *command,
    int64_t created, void *arg)
{
	size_t	 len = strlen(command);
	size_t	 cut = utf8_prefix(command, len, VM_STATUS_COMMAND_MAX);
	json_t	*j;

	j = json_pack("{s:s, s:s%, s:I}", "job_id", id, "command", command,
	    cut, "created", (json_int_t)created);
	if (j == NULL)
		return -1;
	if (cut < len)
		json_object_set_new(j, "command_truncated", json_true());
	json_array_append_new(arg, j);
	return 0;
}

static void
status_reply(struct vm_call *c)
{
	struct vm	*vm = c->vm;
	json_t		*j = vm_json(vm), *jobs = json_array();

	if (c->acc != NULL)
		json_object_update(j, c->acc);
	if (state_job_each(vm->row.id, VM_STATUS_JOBS_MAX + 1, jobs_json_add,
	    jobs) == -1)
		log_warnx("%s: jobs not listed", vm->row.id);
	json_object_set_new(j, "jobs_truncated",
	    json_boolean(json_array_size(jobs) > VM_STATUS_JOBS_MAX));
	if (json_array_size(jobs) > VM_STATUS_JOBS_MAX)
		(void)json_array_remove(jobs, VM_STATUS_JOBS_MAX);
	json_object_set_new(j, "jobs", jobs);
	vm_reply_json(c->peerid, j);
	vm_call_free(c);
}

static void
vm_next(struct vm_call *c, uint32_t type)
{
	struct ibuf	*b = vm_call_msg(c->vm, type, c);

	(void)vm_call(c->vm, c, b);
}

/* vm_status: QMP's view, then the guest's, both live. */
static void
status_step(struct vm_call *c, struct imsg *imsg)
{
	struct mreader	 r;
	const char	*status, *os, *kernel, *agent;
	uint64_t	 uptime;
	uint32_t	 running, active, total, frozen;

	m_init(&r, imsg);
	if (c->step == 0) {
		if (m_get_str(&r, &status, 64) == -1 ||
		    m_get_u32(&r, &running) == -1 || m_end(&r) == -1 ||
		    !valid_utf8(status, strlen(status))) {
			vm_call_fail(c, "malformed QMP status");
			return;
		}
		c->acc = json_pack("{s:{s:s, s:b}}", "qmp", "status", status,
		    "running", running != 0);
		if (running && c->vm->ready) {
			c->step = 1;
			vm_next(c, IMSG_VMM_GUEST_INFO);
			return;
		}
		status_reply(c);
		return;
	}
	if (m_get_str(&r, &os, VM_GUEST_STR_MAX - 1) == -1 ||
	    m_get_str(&r, &kernel, VM_GUEST_STR_MAX - 1) == -1 ||
	    m_get_str(&r, &agent, VM_GUEST_STR_MAX - 1) == -1 ||
	    m_get_u64(&r, &uptime) == -1 || m_get_u32(&r, &active) == -1 ||
	    m_get_u32(&r, &total) == -1 || m_get_u32(&r, &frozen) == -1 ||
	    m_end(&r) == -1 || !valid_utf8(os, strlen(os)) ||
	    !valid_utf8(kernel, strlen(kernel)) ||
	    !valid_utf8(agent, strlen(agent))) {
		vm_call_fail(c, "malformed guest info");
		return;
	}
	json_object_set_new(c->acc, "guest", json_pack("{s:s, s:s, s:s, "
	    "s:I, s:i, s:i, s:b}", "os", os, "kernel", kernel,
	    "agent_version", agent, "uptime_ms", (json_int_t)uptime,
	    "jobs_active", (int)active, "jobs_total", (int)total,
	    "frozen", frozen != 0));
	status_reply(c);
}

/*
 * A chain that moves the VM (vm_suspend, vm_resume) goes on only while
 * the VM is in the state the chain left it in: a stop, a destroy or a
 * failure meanwhile owns the VM, and an answer the monitor sends after
 * it must not undo that.  Otherwise the call fails, and 0 is returned.
 */
static int
vm_chain_holds(struct vm_call *c, enum vm_state want)
{
	struct vm	*vm = c->vm;
	char		 msg[VM_MSG_MAX];

	if (vm->state == want)
		return 1;
	(void)snprintf(msg, sizeof(msg), "%s is %s now: %s did not finish",
	    vm->row.id, vm_state_name(vm->state), c->tool == TOOL_VM_SUSPEND ?
	    "vm_suspend" : "vm_resume");
	vm_call_fail(c, msg);
	return 0;
}

/* vm_suspend (pause): check jobs, freeze them, stop the vCPUs. */
static void
suspend_step(struct vm_call *c, struct imsg *imsg)
{
	struct vm	*vm = c->vm;
	struct mreader	 r;
	const char	*s;
	uint64_t	 u64;
	uint32_t	 active, u32;
	char		 msg[VM_MSG_MAX];

	if (!vm_chain_holds(c, VS_RUNNING))
		return;
	m_init(&r, imsg);
	switch (c->step) {
	case 0:		/* GUEST_INFO */
		if (m_get_str(&r, &s, VM_GUEST_STR_MAX - 1) == -1 ||
		    m_get_str(&r, &s, VM_GUEST_STR_MAX - 1) == -1 ||
		    m_get_str(&r, &s, VM_GUEST_STR_MAX - 1) == -1 ||
		    m_get_u64(&r, &u64) == -1 || m_get_u32(&r, &active) == -1 ||
		    m_get_u32(&r, &u32) == -1 || m_get_u32(&r, &u32) == -1 ||
		    m_end(&r) == -1) {
			vm_call_fail(c, "malformed guest info");
			return;
		}
		if (active > 0 && !c->force) {
			(void)snprintf(msg, sizeof(msg), "%u job%s still "
			    "running: wait, cancel them, or pass force=true "
			    "to freeze them until vm_resume", active,
			    active == 1 ? " is" : "s are");
			vm_call_fail(c, msg);
			return;
		}
		c->step = 1;
		vm_next(c, IMSG_VMM_FREEZE);
		return;
	case 1:		/* FREEZE */
		c->step = 2;
		vm_next(c, IMSG_VMM_PAUSE);
		return;
	default:	/* PAUSE */
		vm_set_state(vm, VS_PAUSED, NULL);
		vm_reply_json(c->peerid, vm_json(vm));
		vm_call_free(c);
		return;
	}
}

/* vm_resume: run the vCPUs, set the guest's clock, thaw its jobs. */
static void
resume_step(struct vm_call *c, struct imsg *imsg)
{
	struct vm	*vm = c->vm;
	struct timespec	 ts;
	struct ibuf	*b;

	if (!vm_chain_holds(c, c->step == 0 ? VS_PAUSED : VS_RUNNING))
		return;
	switch (c->step) {
	case 0:		/* CONT */
		c->step = 1;
		vm_set_state(vm, VS_RUNNING, NULL);
		if (!vm->ready) {
			vm_reply_json(c->peerid, vm_json(vm));
			vm_call_free(c);
			return;
		}
		(void)clock_gettime(CLOCK_REALTIME, &ts);
		b = vm_call_msg(vm, IMSG_VMM_SET_TIME, c);
		m_add_u64(b, (uint64_t)ts.tv_sec);
		m_add_u32(b, (uint32_t)ts.tv_nsec);
		(void)vm_call(vm, c, b);
		return;
	case 1:		/* SET_TIME */
		c->step = 2;
		vm_next(c, IMSG_VMM_THAW);
		return;
	default:	/* THAW */
		vm_reply_json(c->peerid, vm_json(vm));
		vm_call_free(c);
		return;
	}
}

/* A step of the VM's own lifecycle ended (ok or not): it goes on. */
static int
vm_call_lifecycle(struct vm_call *c, int ok)
{
	struct vm	*vm = c->vm;
	uint32_t	 type = c->type;

	if (type != IMSG_VMM_NET_CONFIG && type != IMSG_VMM_CHECKPOINT)
		return 0;
	vm_call_free(c);
	if (type == IMSG_VMM_NET_CONFIG)
		vm_net_configured(vm, ok);
	else
		vm_checkpointed(vm, ok);
	return 1;
}

/* The monitor did not answer call c, already off the VM's list, in time. */
void
vm_call_expired(struct vm_call *c)
{
	log_warnx("%s: the monitor did not answer %s in time", c->vm->row.id,
	    imsg_type_name(c->type));
	if (!vm_call_lifecycle(c, 0))
		vm_call_fail(c, "the VM monitor did not answer in time; retry");
}

/* The monitor answered call c. */
void
vm_call_done(struct vm_call *c, struct imsg *imsg)
{
	uint32_t	 want;

	if (vm_call_lifecycle(c, imsg->hdr.type == IMSG_VMM_OK))
		return;
	if (imsg->hdr.type == IMSG_VMM_ERROR) {
		vm_call_error(c, imsg);
		return;
	}
	switch (c->type) {
	case IMSG_VMM_EXEC:
		want = IMSG_VMM_JOB;
		break;
	case IMSG_VMM_JOB_STATUS:
	case IMSG_VMM_JOB_CANCEL:
		want = IMSG_VMM_JOB_STATE;
		break;
	case IMSG_VMM_JOB_READ:
		want = IMSG_VMM_JOB_OUTPUT;
		break;
	case IMSG_VMM_FILE_READ:
		want = IMSG_VMM_FILE_DATA;
		break;
	case IMSG_VMM_FILE_WRITE:
		want = IMSG_VMM_FILE_WRITTEN;
		break;
	case IMSG_VMM_QMP_STATUS:
		want = IMSG_VMM_QMP_STATE;
		break;
	case IMSG_VMM_GUEST_INFO:
		want = IMSG_VMM_GUEST_INFO_RESULT;
		break;
	default:
		want = IMSG_VMM_OK;
		break;
	}
	if (imsg->hdr.type != want) {
		vm_call_fail(c, "unexpected answer from the VM monitor");
		return;
	}
	switch (c->tool) {
	case TOOL_VM_EXEC:
		if (c->step == 0)
			exec_done(c, imsg);
		else
			job_output_done(c, imsg);
		break;
	case TOOL_VM_JOB_STATUS:
	case TOOL_VM_JOB_CANCEL:
		job_state_done(c, imsg);
		break;
	case TOOL_VM_JOB_OUTPUT:
		job_output_done(c, imsg);
		break;
	case TOOL_VM_READ_FILE:
		file_data_done(c, imsg);
		break;
	case TOOL_VM_WRITE_FILE:
		file_written_done(c, imsg);
		break;
	case TOOL_VM_STATUS:
		status_step(c, imsg);
		break;
	case TOOL_VM_SUSPEND:
		suspend_step(c, imsg);
		break;
	case TOOL_VM_RESUME:
		resume_step(c, imsg);
		break;
	default:
		/* Internal calls (vm_stop's power-off): nothing to say. */
		vm_call_free(c);
		break;
	}
}

/* ---- the tools ---------------------------------------------------------- */

static struct vm *
vm_lookup(uint64_t peerid, const struct ws_auth *auth,
    const struct tool_args *args)
{
	const char	*id = tool_arg_str(args, "vm_id");
	struct vm	*vm;
	char		 msg[VM_MSG_MAX];

	if (id == NULL || !valid_id(id, "vm-"))
		fatalx("frontd: %s without a valid vm_id", args->tool->name);
	/* A foreign VM gets the same answer as a missing one. */
	if ((vm = vm_find(id, auth->id)) == NULL ||
	    vm->state == VS_DESTROYING) {
		(void)snprintf(msg, sizeof(msg), "no VM %s in this workspace: "
		    "see vm_list", id);
		vm_reply(peerid, TOOL_NOT_FOUND, msg);
		return NULL;
	}
	return vm;
}

/* The VM must be running, with its guest agent up, to do this. */
static int
vm_require_running(uint64_t peerid, struct vm *vm)
{
	char	 msg[VM_MSG_MAX];

	if (vm->state == VS_RUNNING && vm->vmm_live)
		return 0;
	switch (vm->state) {
	case VS_PAUSED:
		(void)snprintf(msg, sizeof(msg), "%s is paused: call vm_resume "
		    "first", vm->row.id);
		break;
	case VS_STOPPED:
		(void)snprintf(msg, sizeof(msg), "%s is stopped: call "
		    "vm_start first", vm->row.id);
		break;
	case VS_FAILED:
		(void)snprintf(msg, sizeof(msg), "%s failed (%s): destroy it "
		    "with vm_destroy, or try vm_start", vm->row.id,
		    vm->row.reason);
		break;
	default:
		(void)snprintf(msg, sizeof(msg), "%s is %s: retry in a few "
		    "seconds", vm->row.id, vm_state_name(vm->state));
		break;
	}
	vm_reply(peerid, TOOL_ERROR, msg);
	return -1;
}

static void
tool_list(uint64_t peerid, const struct ws_auth *auth)
{
	struct vm	*vm;
	json_t		*a = json_array();

	TAILQ_FOREACH(vm, &vms, entry)
		if (vm->row.ws_id == auth->id && vm->state != VS_DESTROYING)
			json_array_append_new(a, vm_json(vm));
	vm_reply_json(peerid, json_pack("{s:o}", "vms", a));
}

static void
tool_status(uint64_t peerid, struct vm *vm)
{
	struct vm_call	*c = vm_call_new(vm, peerid, TOOL_VM_STATUS);

	/* Never wakes a suspended VM: QMP answers while paused. */
	if ((vm->state == VS_RUNNING || vm->state == VS_PAUSED) &&
	    vm->vmm_live) {
		vm_next(c, IMSG_VMM_QMP_STATUS);
		return;
	}
	status_reply(c);
}

static void
tool_exec(uint64_t peerid, const struct ws_auth *auth, struct vm *vm,
    const struct tool_args *args)
{
	const char		*rid = tool_arg_str(args, "request_id");
	const char		*cmd = tool_arg_str(args, "command");
	const char		*cwd = tool_arg_str(args, "cwd");
	const char		*in = tool_arg_str(args, "stdin");
	struct vm_call		*c;
	struct ibuf		*b;
	int64_t			 timeout = 600;

	if (rid == NULL || cmd == NULL || !valid_request_id(rid))
		fatalx("frontd: vm_exec without request_id or command");
	(void)tool_arg_int(args, "timeout_seconds", &timeout);
	/* The agent's own bounds, which the catalogue's are wider than. */
	if (strlen(cmd) >= AGENT_ARG_MAX || (in != NULL &&
	    strlen(in) > AGENT_STDIN_MAX) || (cwd != NULL &&
	    strlen(cwd) >= AGENT_PATH_MAX) || timeout <= 0 ||
	    (uint64_t)timeout * 1000 > AGENT_TIMEOUT_MAX_MS) {
		vm_reply(peerid, TOOL_ERROR, "the command, its stdin or its "
		    "cwd is too long for the guest agent (command under 32 "
		    "KiB, stdin at most 64 KiB): write a script with "
		    "vm_write_file and run that");
		return;
	}
	if (vm_receipt_begin(peerid, auth->id, rid, args, vm->row.id,
	    "vm_status's jobs") != 0)
		return;
	c = vm_call_new(vm, peerid, TOOL_VM_EXEC);
	(void)snprintf(c->rid, sizeof(c->rid), "%s", rid);
	if (vm_require_running(0, vm) == -1) {
		char msg[VM_MSG_MAX];

		(void)snprintf(msg, sizeof(msg), "%s is %s, not running: "
		    "nothing was run", vm->row.id, vm_state_name(vm->state));
		vm_call_fail(c, msg);
		return;
	}
	if ((c->command = strdup(cmd)) == NULL)
		fatal("%s", __func__);
	c->encoding = VMM_ENC_UTF8;
	c->wait_ms = tool_wait_ms(args);
	if (cwd == NULL || strcmp(cwd, ".") == 0)
		cwd = "";
	b = vm_call_msg(vm, IMSG_VMM_EXEC, c);
	m_add_u32(b, AGENT_EXEC_SHELL);
	m_add_u32(b, (uint32_t)(timeout * 1000));
	m_add_str(b, cwd);
	m_add_u32(b, 1);
	m_add_str(b, cmd);
	m_add_u32(b, 0);
	m_add_bytes(b, in != NULL ? in : "", in != NULL ? strlen(in) : 0);
	(void)vm_call(vm, c, b);
}

static int
job_find(uint64_t peerid, struct vm *vm, const struct tool_args *args,
    char *job_id, uint32_t *guest_job)
{
	const char	*id = tool_arg_str(args, "job_id");
	char		 msg[VM_MSG_MAX];
	int		 rc;

	if (id == NULL || !valid_id(id, "job-"))
		fatalx("frontd: %s without a valid job_id", args->tool->name);
	if ((rc = state_job_lookup(id, vm->row.id, guest_job)) != 1) {
		if (rc == 0)
			(void)snprintf(msg, sizeof(msg), "no job %s on %s (a "
			    "VM remembers its newest %d jobs of this boot): "
			    "see vm_status for its jobs", id, vm->row.id,
			    STATE_JOBS_MAX);
		else
			(void)snprintf(msg, sizeof(msg), "state database "
			    "error");
		vm_reply(peerid, rc == 0 ? TOOL_NOT_FOUND : TOOL_ERROR, msg);
		return -1;
	}
	(void)snprintf(job_id, ID_MAX + 1, "%s", id);
	return 0;
}

static void
tool_job(uint64_t peerid, struct vm *vm, const struct tool_args *args)
{
	struct vm_call		*c;
	struct ibuf		*b;
	uint32_t		 job;
	int64_t			 enc = 0;
	char			 id[ID_MAX + 1];

	if (job_find(peerid, vm, args, id, &job) == -1 ||
	    vm_require_running(peerid, vm) == -1)
		return;
	c = vm_call_new(vm, peerid, args->tool->id);
	(void)snprintf(c->job_id, sizeof(c->job_id), "%s", id);
	switch (args->tool->id) {
	case TOOL_VM_JOB_STATUS:
		b = vm_call_msg(vm, IMSG_VMM_JOB_STATUS, c);
		m_add_u32(b, job);
		break;
	case TOOL_VM_JOB_CANCEL:
		b = vm_call_msg(vm, IMSG_VMM_JOB_CANCEL, c);
		m_add_u32(b, job);
		break;
	default:
		(void)tool_arg_int(args, "encoding", &enc);
		c->encoding = enc == 1 ? VMM_ENC_BASE64 : VMM_ENC_UTF8;
		c->wait_ms = tool_wait_ms(args);
		(void)job_read(c, job, vm_arg(args, "cursor"));
		return;
	}
	(void)vm_call(vm, c, b);
}

static void
tool_file(uint64_t peerid, struct vm *vm, const struct tool_args *args)
{
	const char		*path = tool_arg_str(args, "path");
	const struct tool_value	*data;
	struct vm_call		*c;
	struct ibuf		*b;
	int64_t			 offset = 0, max = TOOL_FILE_MAX, append = 0;

	if (path == NULL)
		fatalx("frontd: %s without a path", args->tool->name);
	if (strlen(path) >= AGENT_PATH_MAX) {
		vm_reply(peerid, TOOL_ERROR, "the path is too long");
		return;
	}
	if (vm_require_running(peerid, vm) == -1)
		return;
	c = vm_call_new(vm, peerid, args->tool->id);
	(void)snprintf(c->path, sizeof(c->path), "%s", path);
	if (args->tool->id == TOOL_VM_READ_FILE) {
		(void)tool_arg_int(args, "offset", &offset);
		(void)tool_arg_int(args, "max_bytes", &max);
		b = vm_call_msg(vm, IMSG_VMM_FILE_READ, c);
		m_add_str(b, path);
		m_add_u64(b, (uint64_t)offset);
		m_add_u32(b, (uint32_t)max);
	} else {
		if ((data = vm_arg(args, "content_base64")) == NULL)
			fatalx("frontd: vm_write_file without content");
		(void)tool_arg_int(args, "append", &append);
		b = vm_call_msg(vm, IMSG_VMM_FILE_WRITE, c);
		m_add_str(b, path);
		m_add_u32(b, append ? AGENT_WRITE_APPEND : 0);
		m_add_u64(b, 0);
		m_add_u32(b, 0);
		m_add_bytes(b, data->b, data->blen);
	}
	(void)vm_call(vm, c, b);
}

static void
tool_suspend(uint64_t peerid, struct vm *vm, const struct tool_args *args)
{
	struct vm_call	*c;
	int64_t		 mode = 0, force = 0;

	(void)tool_arg_int(args, "mode", &mode);
	(void)tool_arg_int(args, "force", &force);
	if (mode == 0) {
		vm_reply(peerid, TOOL_UNAVAILABLE, "hibernation is not "
		    "available in this mcvm build yet: use mode \"pause\", "
		    "which keeps the VM's memory");
		return;
	}
	if (vm->state == VS_PAUSED) {
		vm_reply_json(peerid, vm_json(vm));
		return;
	}
	if (vm_require_running(peerid, vm) == -1)
		return;
	c = vm_call_new(vm, peerid, TOOL_VM_SUSPEND);
	c->force = force != 0;
	if (vm->ready)
		vm_next(c, IMSG_VMM_GUEST_INFO);
	else {
		c->step = 2;
		vm_next(c, IMSG_VMM_PAUSE);
	}
}

static void
tool_resume(uint64_t peerid, struct vm *vm)
{
	if (vm->state == VS_RUNNING) {
		vm_reply_json(peerid, vm_json(vm));
		return;
	}
	if (vm->state != VS_PAUSED || !vm->vmm_live) {
		(void)vm_require_running(peerid, vm);
		return;
	}
	vm_next(vm_call_new(vm, peerid, TOOL_VM_RESUME), IMSG_VMM_CONT);
}

static void
tool_stop(uint64_t peerid, struct vm *vm, const struct tool_args *args)
{
	int64_t	 force = 0, timeout = 30;

	(void)tool_arg_int(args, "force", &force);
	(void)tool_arg_int(args, "timeout_seconds", &timeout);
	if (vm->state == VS_STOPPED || vm->state == VS_FAILED) {
		vm_reply_json(peerid, vm_json(vm));
		return;
	}
	if (vm->op.pending || (vm->state != VS_RUNNING &&
	    vm->state != VS_PAUSED && vm->state != VS_BOOTING)) {
		vm_require_running(peerid, vm);
		return;
	}
	vm_stop(peerid, vm, force != 0 || vm->state == VS_PAUSED,
	    (uint32_t)timeout);
}

static void
tool_start(uint64_t peerid, struct vm *vm)
{
	if (vm->state == VS_RUNNING) {
		vm_reply_json(peerid, vm_json(vm));
		return;
	}
	if (vm->state != VS_STOPPED && vm->state != VS_FAILED) {
		vm_require_running(peerid, vm);
		return;
	}
	if (vm->qemu_pid > 0 || vm->vmm_pid > 0) {
		vm_reply(peerid, TOOL_ERROR, "the VM's processes are still "
		    "stopping; retry in a moment");
		return;
	}
	vm_start(peerid, vm);
}

/*
 * A tool call from frontd, already authenticated.  Returns 1 when the
 * tool is one of the VM tools (answered now or later), 0 otherwise.
 */
int
vm_tool(uint64_t peerid, const struct ws_auth *auth,
    const struct tool_args *args)
{
	struct vm	*vm;

	switch (args->tool->id) {
	case TOOL_VM_CREATE:
		vm_create(peerid, auth, args);
		return 1;
	case TOOL_VM_LIST:
		tool_list(peerid, auth);
		return 1;
	case TOOL_VM_STATUS:
	case TOOL_VM_STOP:
	case TOOL_VM_START:
	case TOOL_VM_SUSPEND:
	case TOOL_VM_RESUME:
	case TOOL_VM_DESTROY:
	case TOOL_VM_EXEC:
	case TOOL_VM_JOB_STATUS:
	case TOOL_VM_JOB_OUTPUT:
	case TOOL_VM_JOB_CANCEL:
	case TOOL_VM_READ_FILE:
	case TOOL_VM_WRITE_FILE:
		break;
	default:
		return 0;
	}
	if ((vm = vm_lookup(peerid, auth, args)) == NULL)
		return 1;
	switch (args->tool->id) {
	case TOOL_VM_STATUS:
		tool_status(peerid, vm);
		break;
	case TOOL_VM_STOP:
		tool_stop(peerid, vm, args);
		break;
	case TOOL_VM_START:
		tool_start(peerid, vm);
		break;
	case TOOL_VM_SUSPEND:
		tool_suspend(peerid, vm, args);
		break;
	case TOOL_VM_RESUME:
		tool_resume(peerid, vm);
		break;
	case TOOL_VM_DESTROY:
		vm_destroy(peerid, vm);
		break;
	case TOOL_VM_EXEC:
		tool_exec(peerid, auth, vm, args);
		break;
	case TOOL_VM_JOB_STATUS:
	case TOOL_VM_JOB_OUTPUT:
	case TOOL_VM_JOB_CANCEL:
		tool_job(peerid, vm, args);
		break;
	default:
		tool_file(peerid, vm, args);
		break;
	}
	return 1;
}
