/*
 * The mcvm agent's conversions (see agent_relay.h).  The codecs of
 * msg_vmm.c read and write the monitor's side; agent_proto.h's encoder
 * checks the agent's bounds again before a request leaves.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "agent_proto.h"
#include "agent_relay.h"
#include "b64.h"
#include "msg_vmm.h"
#include "proto.h"
#include "utf8.h"
#include "validate.h"
#include "vmm.h"

/* --- requests */

void
agent_req_exec(const struct msg_vmm_exec *x, struct agent_msg *m)
{
	uint32_t	 i;

	memset(m, 0, sizeof(*m));
	m->type = AGENT_EXEC;
	m->u.exec.flags = x->flags;
	m->u.exec.timeout_ms = x->timeout_ms;
	m->u.exec.cwd = x->cwd;
	m->u.exec.argc = x->argc;
	for (i = 0; i < x->argc && i < AGENT_ARGC_MAX; i++)
		m->u.exec.argv[i] = x->argv[i];
	m->u.exec.envc = x->envc;
	for (i = 0; i < x->envc && i < AGENT_ENVC_MAX; i++)
		m->u.exec.env[i] = x->env[i];
	m->u.exec.stdin_data = x->input;
	m->u.exec.stdin_len = (uint32_t)x->input_len;
}

void
agent_req_job_read(const struct msg_vmm_job_read *x, struct agent_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->type = AGENT_JOB_READ;
	m->u.job_read.job = x->job;
	m->u.job_read.out_cursor = x->out_cursor;
	m->u.job_read.err_cursor = x->err_cursor;
	m->u.job_read.out_max = x->out_max;
	m->u.job_read.err_max = x->err_max;
	m->u.job_read.wait_ms = x->wait_ms;
}

void
agent_req_file_read(const struct msg_vmm_file_read *x, struct agent_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->type = AGENT_FILE_READ;
	m->u.file_read.path = x->path;
	m->u.file_read.offset = x->offset;
	m->u.file_read.length = x->length;
}

void
agent_req_file_write(const struct msg_vmm_file_write *x, struct agent_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->type = AGENT_FILE_WRITE;
	m->u.file_write.path = x->path;
	m->u.file_write.flags = x->flags;
	m->u.file_write.offset = x->offset;
	m->u.file_write.mode = x->mode;
	m->u.file_write.data = x->data;
	m->u.file_write.len = (uint32_t)x->len;
}

void
agent_req_file_list(const struct msg_vmm_file_list *x, struct agent_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->type = AGENT_FILE_LIST;
	m->u.file_list.path = x->path;
	m->u.file_list.depth = x->depth;
	m->u.file_list.max = x->max;
}

void
agent_req_set_time(const struct msg_vmm_set_time *x, struct agent_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->type = AGENT_SET_TIME;
	m->u.set_time.sec = (int64_t)x->sec;
	m->u.set_time.nsec = x->nsec;
}

void
agent_req_net_config(const struct msg_vmm_net_config *x, struct agent_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->type = AGENT_NET_CONFIG;
	m->u.net_config.address = x->address;
	m->u.net_config.gateway = x->gateway;
	m->u.net_config.resolver = x->resolver;
	m->u.net_config.mac = x->mac;
}

/* --- replies */

static void
status_conv(const struct agent_job_status *a, struct msg_job_status *s)
{
	s->job = a->job;
	s->state = a->state;
	s->out_eof = a->out_eof;
	s->err_eof = a->err_eof;
	s->exit_code = a->exit_code;
	s->signal = a->signal;
	s->out_total = a->out_total;
	s->err_total = a->err_total;
	s->out_gap = a->out_gap;
	s->out_dropped = a->out_dropped;
	s->err_gap = a->err_gap;
	s->err_dropped = a->err_dropped;
	s->runtime_ms = a->runtime_ms;
}

/*
 * One stream's page as text mcvmd can use as it is: UTF-8 decoded here
 * (a character cut by the page end waits for the next read unless the
 * stream ends there; invalid bytes and NUL become U+FFFD and are counted
 * as decoding errors), or base64.  The cursor after it is the input used
 * from where the page starts (its cursor, past the gap if it skipped it).
 */
static int
page_conv(const struct agent_job_status *st, int stream, uint64_t cursor,
    const uint8_t *data, uint32_t len, uint32_t encoding, char *clean,
    uint64_t *next, uint32_t *errors)
{
	static char	 text[UTF8_DECODED_MAX(AGENT_PAGE_MAX) + 1];
	size_t		 used, tlen, i, o = 0;
	int		 errs = 0;

	if (len > AGENT_PAGE_MAX)
		return -1;
	if (encoding == VMM_ENC_BASE64) {
		(void)b64_encode(data, len, clean);
		*next = cursor + len;
		*errors = 0;
		return 0;
	}
	used = utf8_decode(data, len, agent_page_final(st, stream, cursor,
	    len), text, &tlen, &errs);
	for (i = 0; i < tlen; i++) {
		if (text[i] != '\0') {
			clean[o++] = text[i];
			continue;
		}
		memcpy(clean + o, "\xef\xbf\xbd", 3);
		o += 3;
		errs = 1;
	}
	clean[o] = '\0';
	*next = cursor + used;
	*errors = errs != 0;
	return 0;
}

/*
 * How many of a file's bytes are text to mcvmd: UTF-8 without NUL, a
 * character cut at the end (by the length read, not the file's end:
 * !final) left for the next read.  0 when they are not (nothing is left
 * as text then, so the caller answers with the bytes).
 */
static size_t
file_text_len(const uint8_t *p, size_t len, int final)
{
	size_t	 cut = len, start, need;

	if (!final && len > 0) {
		/* The last character's lead byte, within 4 of the end. */
		start = len;
		while (start > 0 && len - start < 4) {
			start--;
			if ((p[start] & 0xc0) != 0x80)
				break;
		}
		need = p[start] >= 0xf0 ? 4 : p[start] >= 0xe0 ? 3 :
		    p[start] >= 0xc0 ? 2 : 1;
		if ((p[start] & 0xc0) != 0x80 && start + need > len)
			cut = start;
	}
	if (cut == 0 || !valid_utf8((const char *)p, cut))
		return 0;
	return cut;
}

static void
file_data_put(struct ibuf *b, const struct agent_msg *m, uint32_t encoding)
{
	struct msg_vmm_file_data d;
	size_t			 tlen = 0;

	d.offset = m->u.file_data.offset;
	d.size = m->u.file_data.size;
	d.eof = m->u.file_data.eof != 0;
	d.data = m->u.file_data.len > 0 ?
	    (const void *)m->u.file_data.data : "";
	d.len = m->u.file_data.len;
	d.text = 0;
	if (encoding == VMM_ENC_UTF8 && d.len > 0)
		tlen = file_text_len(m->u.file_data.data, d.len, d.eof);
	if (tlen > 0) {
		d.text = 1;
		if (tlen < d.len)
			d.eof = 0;	/* the rest of a character follows */
		d.len = tlen;
	} else if (encoding == VMM_ENC_UTF8 && d.len == 0)
		d.text = 1;		/* nothing read: empty text */
	msg_vmm_file_data_put(b, &d);
}

/* A listing's answer, names decoded, fits one message. */
_Static_assert(UTF8_DECODED_MAX(AGENT_LIST_BYTES_MAX) + AGENT_LIST_MAX * 64 <
    IMSG_MAX_PAYLOAD, "a listing's answer");

/*
 * A listing's names as text (bytes that are not UTF-8 become U+FFFD), in
 * the monitor's pool until the answer is written.
 */
static int
file_entries_put(struct ibuf *b, const struct agent_msg *m)
{
	static struct msg_vmm_file_entries e;
	static char	 pool[UTF8_DECODED_MAX(AGENT_LIST_BYTES_MAX)];
	struct agent_dirent d;
	const uint8_t	*p = m->u.file_entries.entries;
	size_t		 left = m->u.file_entries.len, used = 0, n, tlen;
	uint32_t	 i;
	int		 errors;

	if (m->u.file_entries.count > AGENT_LIST_MAX)
		return -1;
	e.truncated = m->u.file_entries.truncated != 0;
	e.count = m->u.file_entries.count;
	for (i = 0; i < e.count; i++) {
		if (agent_dirent_next(&p, &left, &d) == -1)
			return -1;
		n = strlen(d.name);
		/* Each name is under its entry's bytes: the pool holds all. */
		if (UTF8_DECODED_MAX(n) + 1 > sizeof(pool) - used)
			return -1;
		(void)utf8_decode((const uint8_t *)d.name, n, 1, pool + used,
		    &tlen, &errors);
		pool[used + tlen] = '\0';
		e.ents[i].name = pool + used;
		used += tlen + 1;
		e.ents[i].type = d.type;
		e.ents[i].mode = d.mode;
		e.ents[i].size = d.size;
		e.ents[i].mtime = d.mtime;
	}
	if (left != 0)
		return -1;
	msg_vmm_file_entries_put(b, &e);
	return 0;
}

static int
output_put(struct ibuf *b, const struct agent_msg *m, uint32_t encoding)
{
	static char	 out[UTF8_DECODED_MAX(AGENT_PAGE_MAX) + 1];
	static char	 err[UTF8_DECODED_MAX(AGENT_PAGE_MAX) + 1];
	struct msg_vmm_job_output o;

	memset(&o, 0, sizeof(o));
	status_conv(&m->u.output.st, &o.st);
	o.out_skipped = m->u.output.out_skipped;
	o.err_skipped = m->u.output.err_skipped;
	/* The decoder checked the skips: within the stream, in the gap. */
	if (page_conv(&m->u.output.st, 0, m->u.output.out_cursor +
	    o.out_skipped, m->u.output.out, m->u.output.out_len, encoding,
	    out, &o.out_next, &o.out_errors) == -1 ||
	    page_conv(&m->u.output.st, 1, m->u.output.err_cursor +
	    o.err_skipped, m->u.output.err, m->u.output.err_len, encoding,
	    err, &o.err_next, &o.err_errors) == -1)
		return -1;
	/* mcvmd reads on from there: within the stream. */
	if (o.out_next > o.st.out_total || o.err_next > o.st.err_total)
		return -1;
	o.out = out;
	o.err = err;
	msg_vmm_job_output_put(b, &o);
	return 0;
}

static void
info_put(struct ibuf *b, const struct agent_msg *m)
{
	static char	 os[AGENT_INFO_STR_MAX], kernel[AGENT_INFO_STR_MAX];
	static char	 version[AGENT_INFO_STR_MAX];
	static struct msg_vmm_guest_info_result i;	/* 2 KiB of jobs */
	uint32_t	 n, job;
	uint8_t		 state;

	vmm_text(m->u.info.os, os, sizeof(os));
	vmm_text(m->u.info.kernel, kernel, sizeof(kernel));
	vmm_text(m->u.info.agent_version, version, sizeof(version));
	memset(&i, 0, sizeof(i));
	i.os = os;
	i.kernel = kernel;
	i.agent_version = version;
	i.uptime_ms = m->u.info.uptime_ms;
	i.jobs_active = m->u.info.jobs_active;
	i.jobs_total = m->u.info.jobs_total;
	i.frozen = m->u.info.frozen != 0;
	/* The decoder checked the records: jobs_total of them. */
	i.njobs = m->u.info.job_states != NULL &&
	    m->u.info.jobs_total <= AGENT_JOBS_TOTAL_MAX ?
	    m->u.info.jobs_total : 0;
	for (n = 0; n < i.njobs; n++) {
		agent_jobstate_get(m->u.info.job_states, n, &job, &state);
		i.jobs[n].job = job;
		i.jobs[n].state = state;
	}
	msg_vmm_guest_info_result_put(b, &i);
}

int
agent_reply_put(struct ibuf *b, uint32_t type, const struct agent_msg *m,
    uint32_t encoding)
{
	char			 text[AGENT_ERRMSG_MAX];
	struct msg_vmm_error	 e;
	struct msg_vmm_job	 j;
	struct msg_vmm_job_state s;
	struct msg_vmm_file_written w;
	struct msg_vmm_ok	 ok;

	if (m->type == AGENT_ERROR) {
		if (type != IMSG_VMM_ERROR ||
		    !msg_vmm_error_code_valid(m->u.error.code))
			return -1;
		vmm_text(m->u.error.message, text, sizeof(text));
		e.code = m->u.error.code;
		e.sys_errno = (uint32_t)m->u.error.sys_errno;
		e.message = text;
		msg_vmm_error_put(b, &e);
		return b->err ? -1 : 0;
	}
	switch (type) {
	case IMSG_VMM_JOB:
		if (m->type != (AGENT_REPLY | AGENT_EXEC))
			return -1;
		j.job = m->u.job.job;
		msg_vmm_job_put(b, &j);
		break;
	case IMSG_VMM_JOB_STATE:
		if (m->type != (AGENT_REPLY | AGENT_JOB_STATUS) &&
		    m->type != (AGENT_REPLY | AGENT_JOB_CANCEL))
			return -1;
		status_conv(&m->u.status.st, &s.st);
		msg_vmm_job_state_put(b, &s);
		break;
	case IMSG_VMM_JOB_OUTPUT:
		if (m->type != (AGENT_REPLY | AGENT_JOB_READ) ||
		    output_put(b, m, encoding) == -1)
			return -1;
		break;
	case IMSG_VMM_FILE_DATA:
		if (m->type != (AGENT_REPLY | AGENT_FILE_READ) ||
		    m->u.file_data.len > AGENT_FILE_CHUNK_MAX)
			return -1;
		file_data_put(b, m, encoding);
		break;
	case IMSG_VMM_FILE_ENTRIES:
		if (m->type != (AGENT_REPLY | AGENT_FILE_LIST) ||
		    file_entries_put(b, m) == -1)
			return -1;
		break;
	case IMSG_VMM_FILE_WRITTEN:
		if (m->type != (AGENT_REPLY | AGENT_FILE_WRITE) ||
		    m->u.file_written.written > AGENT_FILE_CHUNK_MAX)
			return -1;
		w.size = m->u.file_written.size;
		w.written = m->u.file_written.written;
		msg_vmm_file_written_put(b, &w);
		break;
	case IMSG_VMM_GUEST_INFO_RESULT:
		if (m->type != (AGENT_REPLY | AGENT_INFO))
			return -1;
		info_put(b, m);
		break;
	case IMSG_VMM_OK:
		switch (m->type) {
		case AGENT_REPLY | AGENT_FREEZE:
			ok.value = m->u.frozen.jobs_frozen;
			break;
		case AGENT_REPLY | AGENT_THAW:
		case AGENT_REPLY | AGENT_SET_TIME:
		case AGENT_REPLY | AGENT_IDENTITY:
		case AGENT_REPLY | AGENT_POWEROFF:
		case AGENT_REPLY | AGENT_NET_CONFIG:
			ok.value = 0;
			break;
		default:
			return -1;
		}
		msg_vmm_ok_put(b, &ok);
		break;
	default:
		return -1;
	}
	return b->err ? -1 : 0;
}
