/*
 * The job tools: vm_exec, vm_job_status, vm_job_output and vm_job_cancel
 * (see dispatch.h for their entries).  mcvmd builds JSON; it never
 * parses any.  Text from the guest reaches it already decoded by the
 * monitor and is checked again here (valid UTF-8) before use.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_proto.h"
#include "b64.h"
#include "dispatch.h"
#include "log.h"
#include "msg_vmm.h"
#include "req.h"
#include "task.h"
#include "vm.h"

#define VM_TEXT_B64_MAX		B64_ENCODED_LEN(AGENT_PAGE_MAX)
/*
 * A wait for a job's end is asked of the guest this much at a time, so
 * that the caller hears how much output there is at least this often.
 */
#define JOB_WAIT_SLICE_MS	4000
#define JOB_GAP_MARK_MAX	64	/* "[mcvm: N bytes dropped here]\n" */

_Static_assert(TOOL_EXEC_TIMEOUT_MAX * 1000ULL + TASK_EXEC_GRACE_MS <=
    UINT32_MAX, "a vm_exec task's wait");
_Static_assert(TOOL_WAIT_MAX * 1000 <= AGENT_WAIT_MAX_MS,
    "wait_seconds beyond what the agent waits");

/* wait_seconds, which the catalogue bounds by TOOL_WAIT_MAX. */
static uint32_t
wait_ms(int64_t seconds)
{
	return (uint32_t)seconds * 1000;
}

/* What a stream lost: the bytes from offset on, to truncated. */
static void
job_truncated(json_t *t, const char *stream, uint64_t gap, uint64_t dropped)
{
	json_t	*d;

	if (dropped == 0)
		return;
	if ((d = json_pack("{s:I, s:I}", "offset", (json_int_t)gap,
	    "dropped_bytes", (json_int_t)dropped)) == NULL)
		fatalx("%s: json_pack", __func__);
	json_object_set_new(t, stream, d);
}

static json_t *
job_json(const struct req *r, const struct msg_job_status *s)
{
	json_t	*j, *t;

	j = json_pack("{s:s, s:s, s:s, s:b, s:I, s:I, s:I}",
	    "vm_id", r->vm->row.id, "job_id", r->job_id,
	    "state", agent_job_state_name(s->state),
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
	if (s->out_dropped > 0 || s->err_dropped > 0) {
		if ((t = json_object()) == NULL)
			fatalx("%s: json_object", __func__);
		job_truncated(t, "stdout", s->out_gap, s->out_dropped);
		job_truncated(t, "stderr", s->err_gap, s->err_dropped);
		json_object_set_new(j, "truncated", t);
	}
	return j;
}

/*
 * A page of each stream from r->cursor to r->msg, waiting for the job's
 * end for what is left of the wait, a slice at a time.
 */
static void
job_read_args(struct req *r, uint32_t job)
{
	struct msg_vmm_job_read	 m;

	m.job = job;
	r->guest_job = job;
	r->has_job = 1;
	m.out_cursor = r->cursor[0];
	m.err_cursor = r->cursor[1];
	m.out_max = AGENT_PAGE_MAX;
	m.err_max = AGENT_PAGE_MAX;
	m.encoding = r->encoding;
	r->wait_ms = r->wait_left_ms < JOB_WAIT_SLICE_MS ? r->wait_left_ms :
	    JOB_WAIT_SLICE_MS;
	r->wait_left_ms -= r->wait_ms;
	m.wait_ms = r->wait_ms;
	msg_vmm_job_read_put(r->msg, &m);
}

/*
 * A page's text, after the mark of the bytes it skipped over the gap,
 * if it did.
 */
static json_t *
job_text(const char *text, uint64_t skipped)
{
	json_t	*s;
	char	*buf;
	size_t	 len;

	if (skipped == 0)
		return json_string(text);
	len = strlen(text) + JOB_GAP_MARK_MAX;
	if ((buf = malloc(len)) == NULL)
		fatal("%s", __func__);
	(void)snprintf(buf, len, "[mcvm: %llu bytes dropped here]\n%s",
	    (unsigned long long)skipped, text);
	s = json_string(buf);
	free(buf);
	return s;
}

static void
job_output_done(struct req *r, struct imsg *imsg)
{
	struct msg_vmm_job_output	 m;
	json_t				*j;
	char				 msg[TOOL_PROGRESS_MAX];

	if (msg_vmm_job_output_get(imsg, &m) == -1 ||
	    (r->encoding == VMM_ENC_BASE64 && (strlen(m.out) >
	    VM_TEXT_B64_MAX || strlen(m.err) > VM_TEXT_B64_MAX))) {
		call_req_fail(r, "malformed job output from the VM monitor");
		return;
	}
	/* Still running with time left to wait: say so, and wait on. */
	if (m.st.state == AGENT_JOB_RUNNING && r->wait_left_ms > 0) {
		(void)snprintf(msg, sizeof(msg), "%s: the job has run for "
		    "%llu s, %llu bytes of output so far", r->what,
		    (unsigned long long)(m.st.runtime_ms / 1000),
		    (unsigned long long)(m.st.out_total + m.st.err_total));
		call_progress(r->call, m.st.out_total + m.st.err_total, 0,
		    msg);
		req_next(r, IMSG_VMM_JOB_READ, r->done);
		job_read_args(r, m.st.job);
		(void)req_send(r);
		return;
	}
	j = job_json(r, &m.st);
	json_object_set_new(j, "encoding", json_string(r->encoding ==
	    VMM_ENC_UTF8 ? "utf-8" : "base64"));
	if (m.out_skipped > 0 || m.err_skipped > 0) {
		json_object_set_new(j, "skipped_bytes", json_pack("{s:I, s:I}",
		    "stdout", (json_int_t)m.out_skipped,
		    "stderr", (json_int_t)m.err_skipped));
	}
	if (r->encoding == VMM_ENC_UTF8) {
		json_object_set_new(j, "stdout", job_text(m.out,
		    m.out_skipped));
		json_object_set_new(j, "stderr", job_text(m.err,
		    m.err_skipped));
		json_object_set_new(j, "decoding_errors", json_pack(
		    "{s:b, s:b}", "stdout", m.out_errors != 0, "stderr",
		    m.err_errors != 0));
	} else {
		json_object_set_new(j, "stdout_base64", json_string(m.out));
		json_object_set_new(j, "stderr_base64", json_string(m.err));
	}
	json_object_set_new(j, "next_cursor", json_pack("{s:I, s:I}",
	    "stdout", (json_int_t)m.out_next, "stderr",
	    (json_int_t)m.err_next));
	call_reply_json(r->call, j);
}

/* vm_exec with wait_seconds: the job's end and first page answer it. */
static void
exec_first_page(struct req *r, struct imsg *imsg)
{
	job_output_done(r, imsg);
}

/* The guest started the job: its row, and the answer or the first read. */
static void
exec_started(struct req *r, struct imsg *imsg)
{
	struct vm		*vm = r->vm;
	struct msg_vmm_job	 m;
	char			 id[ID_MAX + 1], *text;
	json_t			*j;

	if (msg_vmm_job_get(imsg, &m) == -1) {
		call_req_fail(r, "malformed answer from the VM monitor");
		return;
	}
	vm_random_id(JOB_ID_PREFIX, id, sizeof(id));
	j = json_pack("{s:s, s:s, s:s}", "vm_id", vm->row.id, "job_id", id,
	    "state", "running");
	if (j == NULL || (text = json_dumps(j, JSON_COMPACT)) == NULL)
		fatalx("%s: json", __func__);
	json_decref(j);
	if (r->wait_left_ms > 0) {
		/*
		 * The job's end and output are this answer's; a replay gives
		 * the above.  The read goes out before the job row is
		 * written, so that the guest answers it meanwhile.
		 */
		(void)snprintf(r->job_id, sizeof(r->job_id), "%s", id);
		req_next(r, IMSG_VMM_JOB_READ, exec_first_page);
		job_read_args(r, m.job);
		if (req_send(r) == -1) {
			/* Only if the monitor is gone (this call's slot is
			 * free), which fails the VM. */
			free(text);
			return;
		}
		/* A failure shows again in the monitor's event handler. */
		(void)imsgbuf_write(&vm->vmm.ibuf);
		imsgev_add(&vm->vmm);
	}
	if (state_job_start(id, vm->row.id, m.job, r->command, vm->row.ws_id,
	    r->rid, text) == -1) {
		free(text);
		req_end(r, REQ_ERROR, "state database error");
		return;
	}
	if (r->wait_ms > 0 || r->wait_left_ms > 0) {
		free(text);
		return;
	}
	call_reply(r->call, TOOL_OK, text);
	free(text);
}

/* Before the receipt: the agent's own bounds, wider in the catalogue. */
static int
tool_vm_exec_check(struct tool_call *c)
{
	const char	*rid = TOOL_STR(c->args, VM_EXEC, REQUEST_ID);
	const char	*cmd = TOOL_STR(c->args, VM_EXEC, COMMAND);
	const char	*cwd = TOOL_STR(c->args, VM_EXEC, CWD);
	const char	*in = TOOL_STR(c->args, VM_EXEC, STDIN);
	int64_t		 timeout = TOOL_INT(c->args, VM_EXEC, TIMEOUT_SECONDS,
			    TOOL_EXEC_TIMEOUT_DEFAULT);

	if (rid == NULL || cmd == NULL || !valid_request_id(rid))
		fatalx("frontd: vm_exec without request_id or command");
	if (strlen(cmd) >= AGENT_ARG_MAX || (in != NULL &&
	    strlen(in) > AGENT_STDIN_MAX) || (cwd != NULL &&
	    strlen(cwd) >= AGENT_PATH_MAX) || timeout <= 0 ||
	    (uint64_t)timeout * 1000 > AGENT_TIMEOUT_MAX_MS) {
		call_reply(c->id, TOOL_ERROR, "the command, its stdin or its "
		    "cwd is too long for the guest agent (command under 32 "
		    "KiB, stdin at most 64 KiB): write a script with "
		    "vm_write_file and run that");
		return -1;
	}
	return 0;
}

static void
tool_vm_exec(struct tool_call *c)
{
	const char		*cmd = TOOL_STR(c->args, VM_EXEC, COMMAND);
	const char		*cwd = TOOL_STR(c->args, VM_EXEC, CWD);
	const char		*in = TOOL_STR(c->args, VM_EXEC, STDIN);
	int64_t			 timeout = TOOL_INT(c->args, VM_EXEC,
				    TIMEOUT_SECONDS, TOOL_EXEC_TIMEOUT_DEFAULT);
	struct msg_vmm_exec	 m;
	struct req		*r;

	r = call_req(c, IMSG_VMM_EXEC, exec_started);
	(void)snprintf(r->rid, sizeof(r->rid), "%s", c->rid);
	if ((r->command = strdup(cmd)) == NULL)
		fatal("%s", __func__);
	r->encoding = VMM_ENC_UTF8;
	r->wait_left_ms = wait_ms(TOOL_INT(c->args, VM_EXEC, WAIT_SECONDS,
	    0));
	/*
	 * A task's vm_exec waits for its job to end, which the job's own
	 * timeout bounds (and the task's time to live): its result is the
	 * job's exit and first page of output, with no vm_job_output.
	 */
	if (task_call(c->id))
		r->wait_left_ms = (uint32_t)(timeout * 1000) +
		    TASK_EXEC_GRACE_MS;
	if (cwd == NULL || strcmp(cwd, ".") == 0)
		cwd = "";
	memset(&m, 0, sizeof(m));
	m.flags = AGENT_EXEC_SHELL;
	m.timeout_ms = (uint32_t)(timeout * 1000);
	m.cwd = cwd;
	m.argc = 1;
	m.argv[0] = cmd;
	m.input = in != NULL ? in : "";
	m.input_len = in != NULL ? strlen(in) : 0;
	msg_vmm_exec_put(r->msg, &m);
	(void)req_send(r);
}

static void
exec_kill_done(struct req *r, struct imsg *imsg)
{
	log_debug("%s: job %u of %s cancelled with its task", __func__,
	    r->guest_job, r->vm->row.id);
}

static void
exec_kill_cancel(struct req *r, enum req_end end, const char *why)
{
	log_warnx("%s: job %u of %s: %s", __func__, r->guest_job,
	    r->vm->row.id, why != NULL ? why : "not cancelled");
}

/*
 * A vm_exec task cancelled (tasks/cancel, or its time to live ran out):
 * its job is cancelled as vm_job_cancel would, once the job runs.  A
 * plain call's cancel leaves the job running, as vm_job_* show it.
 */
static void
exec_cancel(uint64_t call)
{
	struct msg_vmm_job_cancel	 m;
	struct req			*r, *k;

	if (!task_call(call) || (r = req_for_call(RP_MONITOR, call)) ==
	    NULL || !r->has_job)
		return;
	k = req_new(RP_MONITOR, r->vm, IMSG_VMM_JOB_CANCEL, exec_kill_done,
	    exec_kill_cancel);
	k->guest_job = r->guest_job;
	m.job = r->guest_job;
	msg_vmm_job_cancel_put(k->msg, &m);
	(void)req_send(k);
}

static void
job_state_done(struct req *r, struct imsg *imsg)
{
	struct msg_vmm_job_state	 m;

	if (msg_vmm_job_state_get(imsg, &m) == -1) {
		call_req_fail(r, "malformed job status from the VM monitor");
		return;
	}
	call_reply_json(r->call, job_json(r, &m.st));
}

/* JOB_STATUS or JOB_CANCEL of the call's job: both answer JOB_STATE. */
static void
job_request(struct tool_call *c, uint32_t type)
{
	struct msg_vmm_job_status	 st = { c->job };
	struct msg_vmm_job_cancel	 cancel = { c->job };
	struct req			*r = call_req(c, type, job_state_done);

	(void)snprintf(r->job_id, sizeof(r->job_id), "%s", c->job_id);
	if (type == IMSG_VMM_JOB_STATUS)
		msg_vmm_job_status_put(r->msg, &st);
	else
		msg_vmm_job_cancel_put(r->msg, &cancel);
	(void)req_send(r);
}

static void
tool_vm_job_status(struct tool_call *c)
{
	job_request(c, IMSG_VMM_JOB_STATUS);
}

static void
tool_vm_job_cancel(struct tool_call *c)
{
	job_request(c, IMSG_VMM_JOB_CANCEL);
}

static void
tool_vm_job_output(struct tool_call *c)
{
	const struct tool_value	*cursor = TOOL_ARG(c->args, VM_JOB_OUTPUT,
				    CURSOR);
	struct req		*r = call_req(c, IMSG_VMM_JOB_READ,
				    job_output_done);
	int64_t			 enc = TOOL_INT(c->args, VM_JOB_OUTPUT,
				    ENCODING, 0);

	(void)snprintf(r->job_id, sizeof(r->job_id), "%s", c->job_id);
	r->encoding = enc == 1 ? VMM_ENC_BASE64 : VMM_ENC_UTF8;
	r->wait_left_ms = wait_ms(TOOL_INT(c->args, VM_JOB_OUTPUT,
	    WAIT_SECONDS, 0));
	if (cursor != NULL) {
		r->cursor[0] = cursor->cursor[0];
		r->cursor[1] = cursor->cursor[1];
	}
	job_read_args(r, c->job);
	(void)req_send(r);
}

/* The tools of this file (see TOOL_IMPL in dispatch.h). */
TOOL_IMPL(TOOL_VM_EXEC, tool_vm_exec, exec_cancel,
    tool_vm_exec_check, "vm_status's jobs", P_VM_EXEC_REQUEST_ID);
TOOL_IMPL(TOOL_VM_JOB_STATUS, tool_vm_job_status, NULL, NULL, NULL, -1);
TOOL_IMPL(TOOL_VM_JOB_OUTPUT, tool_vm_job_output, NULL, NULL, NULL, -1);
TOOL_IMPL(TOOL_VM_JOB_CANCEL, tool_vm_job_cancel, NULL, NULL, NULL, -1);
