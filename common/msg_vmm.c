/*
 * The monitor's messages: see msg_vmm.h for the rules.  Each getter
 * checks the imsg's type, every field's tag and bound, and that nothing
 * is left over.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "agent_proto.h"
#include "keys.h"
#include "msg.h"
#include "msg_vmm.h"
#include "proto.h"
#include "validate.h"

/* A string of at most max bytes that must be valid UTF-8. */
static int
get_text(struct mreader *r, const char **s, size_t max)
{
	if (m_get_str(r, s, max) == -1)
		return -1;
	if (!valid_utf8(*s, strlen(*s)))
		return m_fail();
	return 0;
}

static int
done(struct mreader *r)
{
	return m_end(r);
}

int
msg_vmm_error_code_valid(uint32_t code)
{
	return (code >= AGENT_ERR_PROTO && code < AGENT_ERR_MAX) ||
	    (code >= VMM_ERR_GUEST_DOWN && code <= VMM_ERR_BUSY);
}

void
msg_vmm_ready_put(struct ibuf *b, const struct msg_vmm_ready *m)
{
	m_add_str(b, m->agent_version);
	m_add_str(b, m->os);
	m_add_str(b, m->kernel);
}

int
msg_vmm_ready_get(struct imsg *imsg, struct msg_vmm_ready *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_READY) == -1 ||
	    get_text(&r, &m->agent_version, AGENT_INFO_STR_MAX - 1) == -1 ||
	    get_text(&r, &m->os, AGENT_INFO_STR_MAX - 1) == -1 ||
	    get_text(&r, &m->kernel, AGENT_INFO_STR_MAX - 1) == -1)
		return -1;
	return done(&r);
}

void
msg_vmm_event_put(struct ibuf *b, const struct msg_vmm_event *m)
{
	m_add_u32(b, m->event);
	m_add_str(b, m->detail);
}

int
msg_vmm_event_get(struct imsg *imsg, struct msg_vmm_event *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_EVENT) == -1 ||
	    m_get_u32(&r, &m->event) == -1 ||
	    m_get_str(&r, &m->detail, VMM_DETAIL_MAX) == -1)
		return -1;
	if (m->event < VMM_EV_STOP || m->event > VMM_EV_HELD)
		return m_fail();
	return done(&r);
}

void
msg_vmm_error_put(struct ibuf *b, const struct msg_vmm_error *m)
{
	m_add_u32(b, m->code);
	m_add_u32(b, m->sys_errno);
	m_add_str(b, m->message);
}

int
msg_vmm_error_get(struct imsg *imsg, struct msg_vmm_error *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_ERROR) == -1 ||
	    m_get_u32(&r, &m->code) == -1 ||
	    m_get_u32(&r, &m->sys_errno) == -1 ||
	    get_text(&r, &m->message, AGENT_ERRMSG_MAX - 1) == -1)
		return -1;
	if (!msg_vmm_error_code_valid(m->code))
		return m_fail();
	return done(&r);
}

void
msg_vmm_ok_put(struct ibuf *b, const struct msg_vmm_ok *m)
{
	m_add_u32(b, m->value);
}

int
msg_vmm_ok_get(struct imsg *imsg, struct msg_vmm_ok *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_OK) == -1 ||
	    m_get_u32(&r, &m->value) == -1)
		return -1;
	return done(&r);
}

int
msg_vmm_qmp_status_get(struct imsg *imsg)
{
	return m_empty(imsg, IMSG_VMM_QMP_STATUS);
}

void
msg_vmm_qmp_state_put(struct ibuf *b, const struct msg_vmm_qmp_state *m)
{
	m_add_str(b, m->status);
	m_add_u32(b, m->running);
}

int
msg_vmm_qmp_state_get(struct imsg *imsg, struct msg_vmm_qmp_state *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_QMP_STATE) == -1 ||
	    get_text(&r, &m->status, VMM_QMP_STATUS_MAX) == -1 ||
	    m_get_flag(&r, &m->running) == -1)
		return -1;
	return done(&r);
}

int
msg_vmm_pause_get(struct imsg *imsg)
{
	return m_empty(imsg, IMSG_VMM_PAUSE);
}

int
msg_vmm_cont_get(struct imsg *imsg)
{
	return m_empty(imsg, IMSG_VMM_CONT);
}

int
msg_vmm_powerdown_get(struct imsg *imsg)
{
	return m_empty(imsg, IMSG_VMM_POWERDOWN);
}

int
msg_vmm_quit_get(struct imsg *imsg)
{
	return m_empty(imsg, IMSG_VMM_QUIT);
}

void
msg_vmm_exec_put(struct ibuf *b, const struct msg_vmm_exec *m)
{
	uint32_t	 i;

	if (m->argc > AGENT_ARGC_MAX || m->envc > AGENT_ENVC_MAX) {
		b->err = EMSGSIZE;
		return;
	}
	m_add_u32(b, m->flags);
	m_add_u32(b, m->timeout_ms);
	m_add_str(b, m->cwd);
	m_add_u32(b, m->argc);
	for (i = 0; i < m->argc; i++)
		m_add_str(b, m->argv[i]);
	m_add_u32(b, m->envc);
	for (i = 0; i < m->envc; i++)
		m_add_str(b, m->env[i]);
	m_add_bytes(b, m->input, m->input_len);
}

int
msg_vmm_exec_get(struct imsg *imsg, struct msg_vmm_exec *m)
{
	struct mreader	 r;
	size_t		 total = 0;
	uint32_t	 i;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_EXEC) == -1 ||
	    m_get_u32(&r, &m->flags) == -1 ||
	    m_get_u32(&r, &m->timeout_ms) == -1 ||
	    m_get_str(&r, &m->cwd, AGENT_PATH_MAX - 1) == -1 ||
	    m_get_u32(&r, &m->argc) == -1)
		return -1;
	if ((m->flags & ~AGENT_EXEC_FLAGS) != 0 ||
	    m->timeout_ms > AGENT_TIMEOUT_MAX_MS ||
	    m->argc < 1 || m->argc > AGENT_ARGC_MAX ||
	    ((m->flags & AGENT_EXEC_SHELL) && m->argc != 1))
		return m_fail();
	for (i = 0; i < m->argc; i++) {
		if (m_get_str(&r, &m->argv[i], AGENT_ARG_MAX - 1) == -1)
			return -1;
		total += strlen(m->argv[i]) + 1;
	}
	if (m_get_u32(&r, &m->envc) == -1)
		return -1;
	if (m->envc > AGENT_ENVC_MAX)
		return m_fail();
	for (i = 0; i < m->envc; i++) {
		if (m_get_str(&r, &m->env[i], AGENT_ARG_MAX - 1) == -1)
			return -1;
		total += strlen(m->env[i]) + 1;
	}
	if (total > AGENT_ARGS_TOTAL_MAX)
		return m_fail();
	if (m_get_bytes(&r, &m->input, &m->input_len, AGENT_STDIN_MAX) == -1)
		return -1;
	return done(&r);
}

void
msg_vmm_job_put(struct ibuf *b, const struct msg_vmm_job *m)
{
	m_add_u32(b, m->job);
}

int
msg_vmm_job_get(struct imsg *imsg, struct msg_vmm_job *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_JOB) == -1 ||
	    m_get_u32(&r, &m->job) == -1)
		return -1;
	return done(&r);
}

void
msg_vmm_job_status_put(struct ibuf *b, const struct msg_vmm_job_status *m)
{
	m_add_u32(b, m->job);
}

int
msg_vmm_job_status_get(struct imsg *imsg, struct msg_vmm_job_status *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_JOB_STATUS) == -1 ||
	    m_get_u32(&r, &m->job) == -1)
		return -1;
	return done(&r);
}

void
msg_vmm_job_cancel_put(struct ibuf *b, const struct msg_vmm_job_cancel *m)
{
	m_add_u32(b, m->job);
}

int
msg_vmm_job_cancel_get(struct imsg *imsg, struct msg_vmm_job_cancel *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_JOB_CANCEL) == -1 ||
	    m_get_u32(&r, &m->job) == -1)
		return -1;
	return done(&r);
}

void
msg_job_status_put(struct ibuf *b, const struct msg_job_status *st)
{
	m_add_u32(b, st->job);
	m_add_u32(b, st->state);
	m_add_u32(b, st->out_eof);
	m_add_u32(b, st->err_eof);
	m_add_u32(b, (uint32_t)st->exit_code);
	m_add_u32(b, (uint32_t)st->signal);
	m_add_u64(b, st->out_total);
	m_add_u64(b, st->err_total);
	m_add_u64(b, st->out_gap);
	m_add_u64(b, st->out_dropped);
	m_add_u64(b, st->err_gap);
	m_add_u64(b, st->err_dropped);
	m_add_u64(b, st->runtime_ms);
}

int
msg_job_status_get(struct mreader *r, struct msg_job_status *st)
{
	uint32_t	 code, sig;

	if (m_get_u32(r, &st->job) == -1 || m_get_u32(r, &st->state) == -1 ||
	    m_get_flag(r, &st->out_eof) == -1 ||
	    m_get_flag(r, &st->err_eof) == -1 ||
	    m_get_u32(r, &code) == -1 || m_get_u32(r, &sig) == -1 ||
	    m_get_u64(r, &st->out_total) == -1 ||
	    m_get_u64(r, &st->err_total) == -1 ||
	    m_get_u64(r, &st->out_gap) == -1 ||
	    m_get_u64(r, &st->out_dropped) == -1 ||
	    m_get_u64(r, &st->err_gap) == -1 ||
	    m_get_u64(r, &st->err_dropped) == -1 ||
	    m_get_u64(r, &st->runtime_ms) == -1)
		return -1;
	if (st->state < AGENT_JOB_RUNNING || st->state >= AGENT_JOB_STATE_MAX ||
	    !agent_stream_ok(st->out_total, st->out_gap, st->out_dropped) ||
	    !agent_stream_ok(st->err_total, st->err_gap, st->err_dropped))
		return m_fail();
	st->exit_code = (int32_t)code;
	st->signal = (int32_t)sig;
	return 0;
}

void
msg_vmm_job_state_put(struct ibuf *b, const struct msg_vmm_job_state *m)
{
	msg_job_status_put(b, &m->st);
}

int
msg_vmm_job_state_get(struct imsg *imsg, struct msg_vmm_job_state *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_JOB_STATE) == -1 ||
	    msg_job_status_get(&r, &m->st) == -1)
		return -1;
	return done(&r);
}

void
msg_vmm_job_read_put(struct ibuf *b, const struct msg_vmm_job_read *m)
{
	m_add_u32(b, m->job);
	m_add_u64(b, m->out_cursor);
	m_add_u64(b, m->err_cursor);
	m_add_u32(b, m->out_max);
	m_add_u32(b, m->err_max);
	m_add_u32(b, m->encoding);
	m_add_u32(b, m->wait_ms);
}

int
msg_vmm_job_read_get(struct imsg *imsg, struct msg_vmm_job_read *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_JOB_READ) == -1 ||
	    m_get_u32(&r, &m->job) == -1 ||
	    m_get_u64(&r, &m->out_cursor) == -1 ||
	    m_get_u64(&r, &m->err_cursor) == -1 ||
	    m_get_u32(&r, &m->out_max) == -1 ||
	    m_get_u32(&r, &m->err_max) == -1 ||
	    m_get_u32(&r, &m->encoding) == -1 ||
	    m_get_u32(&r, &m->wait_ms) == -1)
		return -1;
	if (m->out_max > AGENT_PAGE_MAX || m->err_max > AGENT_PAGE_MAX ||
	    m->wait_ms > AGENT_WAIT_MAX_MS ||
	    (m->encoding != VMM_ENC_UTF8 && m->encoding != VMM_ENC_BASE64))
		return m_fail();
	return done(&r);
}

void
msg_vmm_job_output_put(struct ibuf *b, const struct msg_vmm_job_output *m)
{
	msg_job_status_put(b, &m->st);
	m_add_u64(b, m->out_skipped);
	m_add_u64(b, m->out_next);
	m_add_str(b, m->out);
	m_add_u32(b, m->out_errors);
	m_add_u64(b, m->err_skipped);
	m_add_u64(b, m->err_next);
	m_add_str(b, m->err);
	m_add_u32(b, m->err_errors);
}

int
msg_vmm_job_output_get(struct imsg *imsg, struct msg_vmm_job_output *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_JOB_OUTPUT) == -1 ||
	    msg_job_status_get(&r, &m->st) == -1 ||
	    m_get_u64(&r, &m->out_skipped) == -1 ||
	    m_get_u64(&r, &m->out_next) == -1 ||
	    get_text(&r, &m->out, VMM_TEXT_MAX) == -1 ||
	    m_get_flag(&r, &m->out_errors) == -1 ||
	    m_get_u64(&r, &m->err_skipped) == -1 ||
	    m_get_u64(&r, &m->err_next) == -1 ||
	    get_text(&r, &m->err, VMM_TEXT_MAX) == -1 ||
	    m_get_flag(&r, &m->err_errors) == -1)
		return -1;
	if (m->out_next > m->st.out_total || m->err_next > m->st.err_total ||
	    m->out_skipped > m->st.out_dropped ||
	    m->err_skipped > m->st.err_dropped)
		return m_fail();
	return done(&r);
}

void
msg_vmm_file_read_put(struct ibuf *b, const struct msg_vmm_file_read *m)
{
	m_add_str(b, m->path);
	m_add_u64(b, m->offset);
	m_add_u32(b, m->length);
	m_add_u32(b, m->encoding);
}

int
msg_vmm_file_read_get(struct imsg *imsg, struct msg_vmm_file_read *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_FILE_READ) == -1 ||
	    m_get_str(&r, &m->path, AGENT_PATH_MAX - 1) == -1 ||
	    m_get_u64(&r, &m->offset) == -1 ||
	    m_get_u32(&r, &m->length) == -1 ||
	    m_get_u32(&r, &m->encoding) == -1)
		return -1;
	if (m->length > AGENT_FILE_CHUNK_MAX ||
	    (m->encoding != VMM_ENC_UTF8 && m->encoding != VMM_ENC_BASE64))
		return m_fail();
	return done(&r);
}

void
msg_vmm_file_data_put(struct ibuf *b, const struct msg_vmm_file_data *m)
{
	m_add_u64(b, m->offset);
	m_add_u64(b, m->size);
	m_add_u32(b, m->eof);
	m_add_u32(b, m->text);
	m_add_bytes(b, m->data, m->len);
}

int
msg_vmm_file_data_get(struct imsg *imsg, struct msg_vmm_file_data *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_FILE_DATA) == -1 ||
	    m_get_u64(&r, &m->offset) == -1 ||
	    m_get_u64(&r, &m->size) == -1 ||
	    m_get_flag(&r, &m->eof) == -1 ||
	    m_get_flag(&r, &m->text) == -1 ||
	    m_get_bytes(&r, &m->data, &m->len, AGENT_FILE_CHUNK_MAX) == -1)
		return -1;
	if (m->text && !valid_utf8(m->data, m->len))
		return m_fail();
	return done(&r);
}

void
msg_vmm_file_write_put(struct ibuf *b, const struct msg_vmm_file_write *m)
{
	m_add_str(b, m->path);
	m_add_u32(b, m->flags);
	m_add_u64(b, m->offset);
	m_add_u32(b, m->mode);
	m_add_bytes(b, m->data, m->len);
}

int
msg_vmm_file_write_get(struct imsg *imsg, struct msg_vmm_file_write *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_FILE_WRITE) == -1 ||
	    m_get_str(&r, &m->path, AGENT_PATH_MAX - 1) == -1 ||
	    m_get_u32(&r, &m->flags) == -1 ||
	    m_get_u64(&r, &m->offset) == -1 ||
	    m_get_u32(&r, &m->mode) == -1 ||
	    m_get_bytes(&r, &m->data, &m->len, AGENT_FILE_CHUNK_MAX) == -1)
		return -1;
	if ((m->flags & ~AGENT_WRITE_FLAGS) != 0 || m->mode > 07777)
		return m_fail();
	return done(&r);
}

void
msg_vmm_file_written_put(struct ibuf *b,
    const struct msg_vmm_file_written *m)
{
	m_add_u64(b, m->size);
	m_add_u32(b, m->written);
}

int
msg_vmm_file_written_get(struct imsg *imsg, struct msg_vmm_file_written *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_FILE_WRITTEN) == -1 ||
	    m_get_u64(&r, &m->size) == -1 ||
	    m_get_u32(&r, &m->written) == -1)
		return -1;
	if (m->written > AGENT_FILE_CHUNK_MAX)
		return m_fail();
	return done(&r);
}

void
msg_vmm_file_list_put(struct ibuf *b, const struct msg_vmm_file_list *m)
{
	m_add_str(b, m->path);
	m_add_u32(b, m->depth);
	m_add_u32(b, m->max);
}

int
msg_vmm_file_list_get(struct imsg *imsg, struct msg_vmm_file_list *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_FILE_LIST) == -1 ||
	    m_get_str(&r, &m->path, AGENT_PATH_MAX - 1) == -1 ||
	    m_get_u32(&r, &m->depth) == -1 ||
	    m_get_u32(&r, &m->max) == -1)
		return -1;
	if (m->depth < 1 || m->depth > AGENT_LIST_DEPTH_MAX || m->max < 1 ||
	    m->max > AGENT_LIST_MAX)
		return m_fail();
	return done(&r);
}

void
msg_vmm_file_entries_put(struct ibuf *b,
    const struct msg_vmm_file_entries *m)
{
	uint32_t	 i;

	if (m->count > AGENT_LIST_MAX) {
		b->err = EMSGSIZE;
		return;
	}
	m_add_u32(b, m->truncated);
	m_add_u32(b, m->count);
	for (i = 0; i < m->count; i++) {
		m_add_str(b, m->ents[i].name);
		m_add_u32(b, m->ents[i].type);
		m_add_u32(b, m->ents[i].mode);
		m_add_u64(b, m->ents[i].size);
		m_add_u64(b, (uint64_t)m->ents[i].mtime);
	}
}

int
msg_vmm_file_entries_get(struct imsg *imsg, struct msg_vmm_file_entries *m)
{
	struct msg_vmm_dirent	*e;
	struct mreader		 r;
	uint64_t		 mtime;
	size_t			 names = 0;
	uint32_t		 i;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_FILE_ENTRIES) == -1 ||
	    m_get_flag(&r, &m->truncated) == -1 ||
	    m_get_u32(&r, &m->count) == -1)
		return -1;
	if (m->count > AGENT_LIST_MAX)
		return m_fail();
	for (i = 0; i < m->count; i++) {
		e = &m->ents[i];
		if (get_text(&r, &e->name, VMM_NAME_MAX) == -1 ||
		    m_get_u32(&r, &e->type) == -1 ||
		    m_get_u32(&r, &e->mode) == -1 ||
		    m_get_u64(&r, &e->size) == -1 ||
		    m_get_u64(&r, &mtime) == -1)
			return -1;
		e->mtime = (int64_t)mtime;
		names += strlen(e->name);
		if (e->name[0] == '\0' || names > VMM_NAMES_MAX ||
		    e->type < AGENT_FTYPE_FILE ||
		    e->type >= AGENT_FTYPE_MAX || e->mode > 07777)
			return m_fail();
	}
	return done(&r);
}

int
msg_vmm_guest_info_get(struct imsg *imsg)
{
	return m_empty(imsg, IMSG_VMM_GUEST_INFO);
}

void
msg_vmm_guest_info_result_put(struct ibuf *b,
    const struct msg_vmm_guest_info_result *m)
{
	uint32_t	 i;

	m_add_str(b, m->os);
	m_add_str(b, m->kernel);
	m_add_str(b, m->agent_version);
	m_add_u64(b, m->uptime_ms);
	m_add_u32(b, m->jobs_active);
	m_add_u32(b, m->jobs_total);
	m_add_u32(b, m->frozen);
	if (m->njobs > AGENT_JOBS_TOTAL_MAX) {
		b->err = EMSGSIZE;
		return;
	}
	m_add_u32(b, m->njobs);
	for (i = 0; i < m->njobs; i++) {
		m_add_u32(b, m->jobs[i].job);
		m_add_u32(b, m->jobs[i].state);
	}
}

int
msg_vmm_guest_info_result_get(struct imsg *imsg,
    struct msg_vmm_guest_info_result *m)
{
	struct msg_vmm_guest_job *j;
	struct mreader	 r;
	uint32_t	 i;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_GUEST_INFO_RESULT) == -1 ||
	    get_text(&r, &m->os, AGENT_INFO_STR_MAX - 1) == -1 ||
	    get_text(&r, &m->kernel, AGENT_INFO_STR_MAX - 1) == -1 ||
	    get_text(&r, &m->agent_version, AGENT_INFO_STR_MAX - 1) == -1 ||
	    m_get_u64(&r, &m->uptime_ms) == -1 ||
	    m_get_u32(&r, &m->jobs_active) == -1 ||
	    m_get_u32(&r, &m->jobs_total) == -1 ||
	    m_get_flag(&r, &m->frozen) == -1 ||
	    m_get_u32(&r, &m->njobs) == -1)
		return -1;
	if (m->njobs > AGENT_JOBS_TOTAL_MAX)
		return m_fail();
	for (i = 0; i < m->njobs; i++) {
		j = &m->jobs[i];
		if (m_get_u32(&r, &j->job) == -1 ||
		    m_get_u32(&r, &j->state) == -1)
			return -1;
		if (j->job == 0 || j->state < AGENT_JOB_RUNNING ||
		    j->state >= AGENT_JOB_STATE_MAX)
			return m_fail();
	}
	return done(&r);
}

int
msg_vmm_freeze_get(struct imsg *imsg)
{
	return m_empty(imsg, IMSG_VMM_FREEZE);
}

int
msg_vmm_thaw_get(struct imsg *imsg)
{
	return m_empty(imsg, IMSG_VMM_THAW);
}

void
msg_vmm_set_time_put(struct ibuf *b, const struct msg_vmm_set_time *m)
{
	m_add_u64(b, m->sec);
	m_add_u32(b, m->nsec);
}

int
msg_vmm_set_time_get(struct imsg *imsg, struct msg_vmm_set_time *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_SET_TIME) == -1 ||
	    m_get_u64(&r, &m->sec) == -1 || m_get_u32(&r, &m->nsec) == -1)
		return -1;
	if (m->sec > INT64_MAX || m->nsec > VMM_NSEC_MAX)
		return m_fail();
	return done(&r);
}

void
msg_vmm_identity_put(struct ibuf *b, const struct msg_vmm_identity *m)
{
	m_add_str(b, m->hostname);
}

int
msg_vmm_identity_get(struct imsg *imsg, struct msg_vmm_identity *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_IDENTITY) == -1 ||
	    m_get_str(&r, &m->hostname, AGENT_HOSTNAME_MAX) == -1)
		return -1;
	if (!agent_valid_hostname(m->hostname))
		return m_fail();
	return done(&r);
}

int
msg_vmm_guest_poweroff_get(struct imsg *imsg)
{
	return m_empty(imsg, IMSG_VMM_GUEST_POWEROFF);
}

void
msg_vmm_net_config_put(struct ibuf *b, const struct msg_vmm_net_config *m)
{
	m_add_str(b, m->address);
	m_add_str(b, m->gateway);
	m_add_str(b, m->resolver);
	m_add_str(b, m->mac);
}

int
msg_vmm_net_config_get(struct imsg *imsg, struct msg_vmm_net_config *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_NET_CONFIG) == -1 ||
	    m_get_str(&r, &m->address, AGENT_NET_STR_MAX - 1) == -1 ||
	    m_get_str(&r, &m->gateway, AGENT_NET_STR_MAX - 1) == -1 ||
	    m_get_str(&r, &m->resolver, AGENT_NET_STR_MAX - 1) == -1 ||
	    m_get_str(&r, &m->mac, AGENT_NET_STR_MAX - 1) == -1)
		return -1;
	return done(&r);
}

/* A request whose one field is a flag: an incoming checkpoint's shared. */
static int
flag_get(struct imsg *imsg, uint32_t type, uint32_t *flag)
{
	struct mreader	 r;

	*flag = 0;
	if (m_open(&r, imsg, type) == -1 || m_get_flag(&r, flag) == -1)
		return -1;
	return done(&r);
}

/* The migration stream's fd travels with it; the caller takes it. */
void
msg_vmm_checkpoint_put(struct ibuf *b, const struct msg_vmm_checkpoint *m)
{
	m_add_u32(b, m->shared);
	m_add_u32(b, m->durable);
	m_add_u32(b, m->relative);
}

int
msg_vmm_checkpoint_get(struct imsg *imsg, struct msg_vmm_checkpoint *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_CHECKPOINT) == -1 ||
	    m_get_flag(&r, &m->shared) == -1 ||
	    m_get_flag(&r, &m->durable) == -1 ||
	    m_get_flag(&r, &m->relative) == -1)
		return -1;
	return done(&r);
}

/* QEMU has the checkpoint on QEMU_INCOMING_FD already. */
void
msg_vmm_incoming_put(struct ibuf *b, const struct msg_vmm_incoming *m)
{
	m_add_u32(b, m->shared);
}

int
msg_vmm_incoming_get(struct imsg *imsg, struct msg_vmm_incoming *m)
{
	return flag_get(imsg, IMSG_VMM_INCOMING, &m->shared);
}

int
msg_vmm_screenshot_get(struct imsg *imsg)
{
	return m_empty(imsg, IMSG_VMM_SCREENSHOT);
}

void
msg_vmm_screenshot_done_put(struct ibuf *b,
    const struct msg_vmm_screenshot_done *m)
{
	m_add_u32(b, m->width);
	m_add_u32(b, m->height);
	m_add_u64(b, m->bytes);
}

int
msg_vmm_screenshot_done_get(struct imsg *imsg,
    struct msg_vmm_screenshot_done *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_SCREENSHOT_DONE) == -1 ||
	    m_get_u32(&r, &m->width) == -1 ||
	    m_get_u32(&r, &m->height) == -1 ||
	    m_get_u64(&r, &m->bytes) == -1)
		return -1;
	if (m->width == 0 || m->width > VMM_DISPLAY_MAX || m->height == 0 ||
	    m->height > VMM_DISPLAY_MAX || m->bytes == 0 ||
	    m->bytes > VMM_SCREENSHOT_MAX)
		return m_fail();
	return done(&r);
}

/* An event on the wire: kind, down, code (LE16), value (LE32). */
void
msg_vmm_input_pack(const struct vmm_input *e, uint8_t *w)
{
	w[0] = e->kind;
	w[1] = e->down;
	w[2] = (uint8_t)(e->code & 0xff);
	w[3] = (uint8_t)(e->code >> 8);
	le32_put(w + 4, (uint32_t)e->value);
}

void
msg_vmm_input_event(const struct msg_vmm_input *m, size_t i,
    struct vmm_input *e)
{
	const uint8_t	*w = (const uint8_t *)m->wire + i * VMM_INPUT_LEN;

	e->kind = w[0];
	e->down = w[1];
	e->code = (uint16_t)(w[2] | (w[3] << 8));
	e->value = (int32_t)le32_get(w + 4);
}

void
msg_vmm_input_put(struct ibuf *b, const struct msg_vmm_input *m)
{
	if (m->n > VMM_INPUT_MAX) {
		b->err = EMSGSIZE;
		return;
	}
	m_add_bytes(b, m->wire, m->n * VMM_INPUT_LEN);
}

static int
input_valid(const struct vmm_input *e)
{
	switch (e->kind) {
	case VMM_IN_KEY:
		return e->down <= 1 && e->code < key_count && e->value == 0;
	case VMM_IN_BTN:
		return e->down <= 1 && e->code < VMM_BTN_COUNT &&
		    e->value == 0;
	case VMM_IN_ABS:
		return e->down == 0 && e->code <= VMM_AXIS_Y &&
		    e->value >= 0 && e->value <= VMM_ABS_MAX;
	case VMM_IN_REL:
		return e->down == 0 && e->code <= VMM_AXIS_Y &&
		    e->value >= -VMM_REL_MAX && e->value <= VMM_REL_MAX;
	case VMM_IN_WAIT:
		return e->down == 0 && e->code == 0 && e->value >= 0 &&
		    e->value <= VMM_INPUT_WAIT_MAX;
	}
	return 0;
}

int
msg_vmm_input_get(struct imsg *imsg, struct msg_vmm_input *m)
{
	struct mreader	 r;
	struct vmm_input e;
	size_t		 i, len, frame = 0;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_INPUT) == -1 ||
	    m_get_bytes(&r, &m->wire, &len, VMM_INPUT_MAX * VMM_INPUT_LEN) ==
	    -1)
		return -1;
	if (len == 0 || len % VMM_INPUT_LEN != 0)
		return m_fail();
	m->n = len / VMM_INPUT_LEN;
	for (i = 0; i < m->n; i++) {
		msg_vmm_input_event(m, i, &e);
		if (!input_valid(&e))
			return m_fail();
		if (e.kind == VMM_IN_WAIT) {
			frame = 0;
			m->wait_ms += (uint32_t)e.value;
			if (m->wait_ms > VMM_INPUT_TIME_MAX)
				return m_fail();
		} else if (++frame > VMM_INPUT_FRAME_MAX)
			return m_fail();
	}
	return done(&r);
}

int
msg_vmm_serial_read_get(struct imsg *imsg)
{
	return m_empty(imsg, IMSG_VMM_SERIAL_READ);
}

void
msg_vmm_serial_data_put(struct ibuf *b, const struct msg_vmm_serial_data *m)
{
	m_add_u64(b, m->total);
	m_add_u32(b, m->whole);
	m_add_u32(b, m->replaced);
	m_add_bytes(b, m->data, m->len);
}

int
msg_vmm_serial_data_get(struct imsg *imsg, struct msg_vmm_serial_data *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_SERIAL_DATA) == -1 ||
	    m_get_u64(&r, &m->total) == -1 ||
	    m_get_flag(&r, &m->whole) == -1 ||
	    m_get_flag(&r, &m->replaced) == -1 ||
	    m_get_bytes(&r, &m->data, &m->len, VMM_SERIAL_OUT_MAX) == -1)
		return -1;
	/* Each byte seen is at most 3 of text (U+FFFD for invalid). */
	if (!valid_utf8(m->data, m->len) ||
	    (m->total <= UINT64_MAX / 3 && m->len > m->total * 3))
		return m_fail();
	return done(&r);
}

void
msg_vmm_snapshot_put(struct ibuf *b, const struct msg_vmm_snapshot *m)
{
	m_add_u32(b, m->op);
	m_add_str(b, m->tag);
	m_add_u32(b, m->hold);
}

int
msg_vmm_snapshot_get(struct imsg *imsg, struct msg_vmm_snapshot *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_SNAPSHOT) == -1 ||
	    m_get_u32(&r, &m->op) == -1 ||
	    m_get_str(&r, &m->tag, OBJ_NAME_MAX) == -1 ||
	    m_get_flag(&r, &m->hold) == -1)
		return -1;
	if (m->op < VMM_SNAP_SAVE || m->op > VMM_SNAP_DELETE ||
	    !valid_snapshot_tag(m->tag))
		return m_fail();
	return done(&r);
}

void
msg_vmm_snapshot_done_put(struct ibuf *b,
    const struct msg_vmm_snapshot_done *m)
{
	m_add_u64(b, m->vm_size);
	m_add_u32(b, m->found);
}

int
msg_vmm_snapshot_done_get(struct imsg *imsg,
    struct msg_vmm_snapshot_done *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VMM_SNAPSHOT_DONE) == -1 ||
	    m_get_u64(&r, &m->vm_size) == -1 ||
	    m_get_u32(&r, &m->found) == -1)
		return -1;
	if (m->vm_size > VMM_SNAP_SIZE_MAX || m->found > 1)
		return m_fail();
	return done(&r);
}
