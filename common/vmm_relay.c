/*
 * Conversions between mcvmd's IMSG_VMM_* fields and agent messages, one
 * to one (proto.h gives the field order).  Both directions check every
 * bound of agent_proto.h: the monitor before it writes to the guest, and
 * mcvmd (or a test) when it reads what the monitor relayed.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "agent_proto.h"
#include "b64.h"
#include "msg.h"
#include "proto.h"
#include "utf8.h"
#include "vmm_relay.h"

#define NSEC_PER_SEC	1000000000U

static const struct {
	uint32_t	 imsg;
	uint16_t	 agent;
	uint32_t	 reply;
} vmm_map[] = {
	{ IMSG_VMM_EXEC, AGENT_EXEC,
	    IMSG_VMM_JOB },
	{ IMSG_VMM_JOB_STATUS, AGENT_JOB_STATUS,
	    IMSG_VMM_JOB_STATE },
	{ IMSG_VMM_JOB_CANCEL, AGENT_JOB_CANCEL,
	    IMSG_VMM_JOB_STATE },
	{ IMSG_VMM_JOB_READ, AGENT_JOB_READ,
	    IMSG_VMM_JOB_OUTPUT },
	{ IMSG_VMM_FILE_READ, AGENT_FILE_READ,
	    IMSG_VMM_FILE_DATA },
	{ IMSG_VMM_FILE_WRITE, AGENT_FILE_WRITE,
	    IMSG_VMM_FILE_WRITTEN },
	{ IMSG_VMM_GUEST_INFO, AGENT_INFO,
	    IMSG_VMM_GUEST_INFO_RESULT },
	{ IMSG_VMM_FREEZE, AGENT_FREEZE,
	    IMSG_VMM_OK },
	{ IMSG_VMM_THAW, AGENT_THAW,
	    IMSG_VMM_OK },
	{ IMSG_VMM_SET_TIME, AGENT_SET_TIME,
	    IMSG_VMM_OK },
	{ IMSG_VMM_GUEST_POWEROFF, AGENT_POWEROFF,
	    IMSG_VMM_OK },
	{ IMSG_VMM_NET_CONFIG, AGENT_NET_CONFIG,
	    IMSG_VMM_OK },
};

#define VMM_MAP_N	(sizeof(vmm_map) / sizeof(vmm_map[0]))

int
vmm_req_agent_type(uint32_t type)
{
	size_t	 i;

	for (i = 0; i < VMM_MAP_N; i++)
		if (vmm_map[i].imsg == type)
			return vmm_map[i].agent;
	return -1;
}

uint32_t
vmm_req_imsg_type(uint16_t agent)
{
	size_t	 i;

	for (i = 0; i < VMM_MAP_N; i++)
		if (vmm_map[i].agent == agent)
			return vmm_map[i].imsg;
	return IMSG_NONE;
}

/* The imsg that carries an agent reply; IMSG_NONE for none we relay. */
uint32_t
vmm_reply_imsg_type(uint16_t agent)
{
	size_t	 i;

	if (agent == AGENT_ERROR)
		return IMSG_VMM_ERROR;
	if (!(agent & AGENT_REPLY))
		return IMSG_NONE;
	for (i = 0; i < VMM_MAP_N; i++)
		if (vmm_map[i].agent == (agent & ~AGENT_REPLY))
			return vmm_map[i].reply;
	return IMSG_NONE;
}

int
vmm_error_valid(uint32_t code)
{
	return (code >= AGENT_ERR_PROTO && code < AGENT_ERR_MAX) ||
	    (code >= VMM_ERR_GUEST_DOWN && code <= VMM_ERR_BUSY);
}

/* Empty byte ranges go out as "" so that no NULL reaches memcpy. */
static void
put_bytes(struct ibuf *b, const void *p, size_t n)
{
	m_add_bytes(b, n > 0 ? p : "", n);
}

static int
get_bytes32(struct mreader *r, const uint8_t **p, uint32_t *n, size_t max)
{
	const void	*data;
	size_t		 len;

	if (m_get_bytes(r, &data, &len, max) == -1)
		return -1;
	*p = data;
	*n = (uint32_t)len;
	return 0;
}

/* --- requests */

int
vmm_req_get(uint32_t type, struct mreader *r, struct agent_msg *m,
    uint32_t *encoding)
{
	uint64_t	 u64;
	size_t		 total = 0;
	uint32_t	 i;
	int		 agent;

	memset(m, 0, sizeof(*m));
	*encoding = VMM_ENC_UTF8;
	if ((agent = vmm_req_agent_type(type)) == -1)
		return -1;
	m->type = (uint16_t)agent;
	switch (agent) {
	case AGENT_EXEC:
		if (m_get_u32(r, &m->u.exec.flags) == -1 ||
		    m_get_u32(r, &m->u.exec.timeout_ms) == -1 ||
		    m_get_str(r, &m->u.exec.cwd, AGENT_PATH_MAX - 1) == -1 ||
		    m_get_u32(r, &m->u.exec.argc) == -1)
			return -1;
		if ((m->u.exec.flags & ~AGENT_EXEC_FLAGS) != 0 ||
		    m->u.exec.timeout_ms > AGENT_TIMEOUT_MAX_MS ||
		    m->u.exec.argc < 1 || m->u.exec.argc > AGENT_ARGC_MAX ||
		    ((m->u.exec.flags & AGENT_EXEC_SHELL) &&
		    m->u.exec.argc != 1))
			return -1;
		for (i = 0; i < m->u.exec.argc; i++) {
			if (m_get_str(r, &m->u.exec.argv[i],
			    AGENT_ARG_MAX - 1) == -1)
				return -1;
			total += strlen(m->u.exec.argv[i]) + 1;
		}
		if (m_get_u32(r, &m->u.exec.envc) == -1 ||
		    m->u.exec.envc > AGENT_ENVC_MAX)
			return -1;
		for (i = 0; i < m->u.exec.envc; i++) {
			if (m_get_str(r, &m->u.exec.env[i],
			    AGENT_ARG_MAX - 1) == -1)
				return -1;
			total += strlen(m->u.exec.env[i]) + 1;
		}
		if (total > AGENT_ARGS_TOTAL_MAX ||
		    get_bytes32(r, &m->u.exec.stdin_data,
		    &m->u.exec.stdin_len, AGENT_STDIN_MAX) == -1)
			return -1;
		break;
	case AGENT_JOB_STATUS:
	case AGENT_JOB_CANCEL:
		if (m_get_u32(r, &m->u.job.job) == -1)
			return -1;
		break;
	case AGENT_JOB_READ:
		if (m_get_u32(r, &m->u.job_read.job) == -1 ||
		    m_get_u64(r, &m->u.job_read.out_cursor) == -1 ||
		    m_get_u64(r, &m->u.job_read.err_cursor) == -1 ||
		    m_get_u32(r, &m->u.job_read.out_max) == -1 ||
		    m_get_u32(r, &m->u.job_read.err_max) == -1 ||
		    m_get_u32(r, encoding) == -1 ||
		    m_get_u32(r, &m->u.job_read.wait_ms) == -1 ||
		    m->u.job_read.out_max > AGENT_PAGE_MAX ||
		    m->u.job_read.err_max > AGENT_PAGE_MAX ||
		    m->u.job_read.wait_ms > AGENT_WAIT_MAX_MS ||
		    (*encoding != VMM_ENC_UTF8 && *encoding != VMM_ENC_BASE64))
			return -1;
		break;
	case AGENT_FILE_READ:
		if (m_get_str(r, &m->u.file_read.path,
		    AGENT_PATH_MAX - 1) == -1 ||
		    m_get_u64(r, &m->u.file_read.offset) == -1 ||
		    m_get_u32(r, &m->u.file_read.length) == -1 ||
		    m->u.file_read.length > AGENT_FILE_CHUNK_MAX)
			return -1;
		break;
	case AGENT_FILE_WRITE:
		if (m_get_str(r, &m->u.file_write.path,
		    AGENT_PATH_MAX - 1) == -1 ||
		    m_get_u32(r, &m->u.file_write.flags) == -1 ||
		    m_get_u64(r, &m->u.file_write.offset) == -1 ||
		    m_get_u32(r, &m->u.file_write.mode) == -1 ||
		    get_bytes32(r, &m->u.file_write.data,
		    &m->u.file_write.len, AGENT_FILE_CHUNK_MAX) == -1)
			return -1;
		if ((m->u.file_write.flags & ~AGENT_WRITE_FLAGS) != 0 ||
		    m->u.file_write.mode > 07777)
			return -1;
		break;
	case AGENT_SET_TIME:
		if (m_get_u64(r, &u64) == -1 ||
		    m_get_u32(r, &m->u.set_time.nsec) == -1 ||
		    u64 > INT64_MAX || m->u.set_time.nsec >= NSEC_PER_SEC)
			return -1;
		m->u.set_time.sec = (int64_t)u64;
		break;
	case AGENT_NET_CONFIG:
		if (m_get_str(r, &m->u.net_config.address,
		    AGENT_NET_STR_MAX - 1) == -1 ||
		    m_get_str(r, &m->u.net_config.gateway,
		    AGENT_NET_STR_MAX - 1) == -1 ||
		    m_get_str(r, &m->u.net_config.resolver,
		    AGENT_NET_STR_MAX - 1) == -1 ||
		    m_get_str(r, &m->u.net_config.mac,
		    AGENT_NET_STR_MAX - 1) == -1)
			return -1;
		break;
	case AGENT_INFO:
	case AGENT_FREEZE:
	case AGENT_THAW:
	case AGENT_POWEROFF:
		break;
	default:
		return -1;
	}
	if (m_end(r) == -1) {
		errno = EBADMSG;
		return -1;
	}
	return 0;
}

int
vmm_req_put(struct ibuf *b, const struct agent_msg *m, uint32_t encoding)
{
	uint32_t	 i;

	switch (m->type) {
	case AGENT_EXEC:
		if (m->u.exec.argc > AGENT_ARGC_MAX ||
		    m->u.exec.envc > AGENT_ENVC_MAX)
			return -1;
		m_add_u32(b, m->u.exec.flags);
		m_add_u32(b, m->u.exec.timeout_ms);
		m_add_str(b, m->u.exec.cwd);
		m_add_u32(b, m->u.exec.argc);
		for (i = 0; i < m->u.exec.argc; i++)
			m_add_str(b, m->u.exec.argv[i]);
		m_add_u32(b, m->u.exec.envc);
		for (i = 0; i < m->u.exec.envc; i++)
			m_add_str(b, m->u.exec.env[i]);
		put_bytes(b, m->u.exec.stdin_data, m->u.exec.stdin_len);
		break;
	case AGENT_JOB_STATUS:
	case AGENT_JOB_CANCEL:
		m_add_u32(b, m->u.job.job);
		break;
	case AGENT_JOB_READ:
		m_add_u32(b, m->u.job_read.job);
		m_add_u64(b, m->u.job_read.out_cursor);
		m_add_u64(b, m->u.job_read.err_cursor);
		m_add_u32(b, m->u.job_read.out_max);
		m_add_u32(b, m->u.job_read.err_max);
		m_add_u32(b, encoding);
		m_add_u32(b, m->u.job_read.wait_ms);
		break;
	case AGENT_FILE_READ:
		m_add_str(b, m->u.file_read.path);
		m_add_u64(b, m->u.file_read.offset);
		m_add_u32(b, m->u.file_read.length);
		break;
	case AGENT_FILE_WRITE:
		m_add_str(b, m->u.file_write.path);
		m_add_u32(b, m->u.file_write.flags);
		m_add_u64(b, m->u.file_write.offset);
		m_add_u32(b, m->u.file_write.mode);
		put_bytes(b, m->u.file_write.data, m->u.file_write.len);
		break;
	case AGENT_SET_TIME:
		m_add_u64(b, (uint64_t)m->u.set_time.sec);
		m_add_u32(b, m->u.set_time.nsec);
		break;
	case AGENT_NET_CONFIG:
		m_add_str(b, m->u.net_config.address);
		m_add_str(b, m->u.net_config.gateway);
		m_add_str(b, m->u.net_config.resolver);
		m_add_str(b, m->u.net_config.mac);
		break;
	case AGENT_INFO:
	case AGENT_FREEZE:
	case AGENT_THAW:
	case AGENT_POWEROFF:
		break;
	default:
		return -1;
	}
	return b->err ? -1 : 0;
}

/* --- replies */

void
vmm_status_put(struct ibuf *b, const struct agent_job_status *st)
{
	m_add_u32(b, st->job);
	m_add_u32(b, st->state);
	m_add_u32(b, st->truncated);
	m_add_u32(b, st->out_eof);
	m_add_u32(b, st->err_eof);
	m_add_u32(b, (uint32_t)st->exit_code);
	m_add_u32(b, (uint32_t)st->signal);
	m_add_u64(b, st->out_total);
	m_add_u64(b, st->err_total);
	m_add_u64(b, st->out_retained);
	m_add_u64(b, st->err_retained);
	m_add_u64(b, st->runtime_ms);
}

int
vmm_status_get(struct mreader *r, struct agent_job_status *st)
{
	uint32_t	 state, trunc, oeof, eeof, code, sig;

	if (m_get_u32(r, &st->job) == -1 || m_get_u32(r, &state) == -1 ||
	    m_get_u32(r, &trunc) == -1 || m_get_u32(r, &oeof) == -1 ||
	    m_get_u32(r, &eeof) == -1 || m_get_u32(r, &code) == -1 ||
	    m_get_u32(r, &sig) == -1 || m_get_u64(r, &st->out_total) == -1 ||
	    m_get_u64(r, &st->err_total) == -1 ||
	    m_get_u64(r, &st->out_retained) == -1 ||
	    m_get_u64(r, &st->err_retained) == -1 ||
	    m_get_u64(r, &st->runtime_ms) == -1)
		return -1;
	if (state < AGENT_JOB_RUNNING || state >= AGENT_JOB_STATE_MAX ||
	    trunc > 1 || oeof > 1 || eeof > 1 ||
	    st->out_retained > st->out_total ||
	    st->err_retained > st->err_total ||
	    st->out_retained > AGENT_JOB_RETAIN_MAX ||
	    st->err_retained > AGENT_JOB_RETAIN_MAX - st->out_retained)
		return -1;
	st->state = (uint8_t)state;
	st->truncated = (uint8_t)trunc;
	st->out_eof = (uint8_t)oeof;
	st->err_eof = (uint8_t)eeof;
	st->exit_code = (int32_t)code;
	st->signal = (int32_t)sig;
	return 0;
}

/*
 * The text of an error as mcvmd takes it: valid UTF-8 (what is not
 * becomes U+FFFD), cut on a character boundary to fit AGENT_ERRMSG_MAX.
 * A guest's message may be anything its decoder let through.
 */
void
vmm_error_text(const char *msg, char *text, size_t size)
{
	static char	 dec[UTF8_DECODED_MAX(VMM_ERRTEXT_IN_MAX)];
	size_t		 n, len;
	int		 errors = 0;

	if (size == 0)
		return;
	n = strnlen(msg != NULL ? msg : "", VMM_ERRTEXT_IN_MAX);
	(void)utf8_decode((const uint8_t *)(msg != NULL ? msg : ""), n, 1,
	    dec, &len, &errors);
	if (len > size - 1) {
		len = size - 1;
		while (len > 0 && ((unsigned char)dec[len] & 0xc0) == 0x80)
			len--;
	}
	memcpy(text, dec, len);
	text[len] = '\0';
}

void
vmm_error_put(struct ibuf *b, uint32_t code, uint32_t err, const char *msg)
{
	char	 text[AGENT_ERRMSG_MAX];

	/* The message is the agent's or ours; either way, bounded. */
	vmm_error_text(msg, text, sizeof(text));
	m_add_u32(b, code);
	m_add_u32(b, err);
	m_add_str(b, text);
}

/*
 * One stream's page as text mcvmd can use as it is: UTF-8 decoded here
 * (a character cut by the page end waits for the next read unless the
 * stream ends there; invalid bytes and NUL become U+FFFD and are counted
 * as decoding errors), or base64.  The cursor after it is the input used.
 */
static void
vmm_page_put(struct ibuf *b, const struct agent_job_status *st, int stream,
    uint64_t cursor, const uint8_t *data, uint32_t len, uint32_t encoding)
{
	static char	 text[UTF8_DECODED_MAX(AGENT_PAGE_MAX) + 1];
	static char	 clean[UTF8_DECODED_MAX(AGENT_PAGE_MAX) + 1];
	size_t		 used, tlen, i, o = 0;
	int		 errors = 0;

	if (len > AGENT_PAGE_MAX) {
		b->err = EMSGSIZE;
		return;
	}
	if (encoding == VMM_ENC_BASE64) {
		(void)b64_encode(data, len, text);
		m_add_u64(b, cursor + len);
		m_add_str(b, text);
		m_add_u32(b, 0);
		return;
	}
	used = utf8_decode(data, len, agent_page_final(st, stream, cursor,
	    len), text, &tlen, &errors);
	for (i = 0; i < tlen; i++) {
		if (text[i] != '\0') {
			clean[o++] = text[i];
			continue;
		}
		memcpy(clean + o, "\xef\xbf\xbd", 3);
		o += 3;
		errors = 1;
	}
	clean[o] = '\0';
	m_add_u64(b, cursor + used);
	m_add_str(b, clean);
	m_add_u32(b, errors != 0);
}

int
vmm_reply_put(struct ibuf *b, const struct agent_msg *m, uint32_t encoding)
{
	switch (m->type) {
	case AGENT_ERROR:
		vmm_error_put(b, m->u.error.code,
		    (uint32_t)m->u.error.sys_errno, m->u.error.message);
		break;
	case AGENT_REPLY | AGENT_EXEC:
		m_add_u32(b, m->u.job.job);
		break;
	case AGENT_REPLY | AGENT_JOB_STATUS:
	case AGENT_REPLY | AGENT_JOB_CANCEL:
		vmm_status_put(b, &m->u.status.st);
		break;
	case AGENT_REPLY | AGENT_JOB_READ:
		vmm_status_put(b, &m->u.output.st);
		vmm_page_put(b, &m->u.output.st, 0, m->u.output.out_cursor,
		    m->u.output.out, m->u.output.out_len, encoding);
		vmm_page_put(b, &m->u.output.st, 1, m->u.output.err_cursor,
		    m->u.output.err, m->u.output.err_len, encoding);
		break;
	case AGENT_REPLY | AGENT_FILE_READ:
		m_add_u64(b, m->u.file_data.offset);
		m_add_u64(b, m->u.file_data.size);
		m_add_u32(b, m->u.file_data.eof);
		put_bytes(b, m->u.file_data.data, m->u.file_data.len);
		break;
	case AGENT_REPLY | AGENT_FILE_WRITE:
		m_add_u64(b, m->u.file_written.size);
		m_add_u32(b, m->u.file_written.written);
		break;
	case AGENT_REPLY | AGENT_INFO:
		m_add_str(b, m->u.info.os);
		m_add_str(b, m->u.info.kernel);
		m_add_str(b, m->u.info.agent_version);
		m_add_u64(b, m->u.info.uptime_ms);
		m_add_u32(b, m->u.info.jobs_active);
		m_add_u32(b, m->u.info.jobs_total);
		m_add_u32(b, m->u.info.frozen);
		break;
	case AGENT_REPLY | AGENT_FREEZE:
		m_add_u32(b, m->u.frozen.jobs_frozen);
		break;
	case AGENT_REPLY | AGENT_THAW:
	case AGENT_REPLY | AGENT_SET_TIME:
	case AGENT_REPLY | AGENT_POWEROFF:
	case AGENT_REPLY | AGENT_NET_CONFIG:
		m_add_u32(b, 0);
		break;
	default:
		return -1;
	}
	return b->err ? -1 : 0;
}

static int
page_get(struct mreader *r, uint64_t *next, const uint8_t **text,
    uint32_t *len)
{
	const char	*s;
	uint32_t	 errors;

	if (m_get_u64(r, next) == -1 || m_get_str(r, &s,
	    UTF8_DECODED_MAX(AGENT_PAGE_MAX)) == -1 ||
	    m_get_u32(r, &errors) == -1 || errors > 1)
		return -1;
	*text = (const uint8_t *)s;
	*len = (uint32_t)strlen(s);
	return 0;
}

static int
reply_get_error(struct mreader *r, struct agent_msg *m)
{
	uint32_t	 err;

	m->type = AGENT_ERROR;
	if (m_get_u32(r, &m->u.error.code) == -1 ||
	    m_get_u32(r, &err) == -1 ||
	    m_get_str(r, &m->u.error.message, AGENT_ERRMSG_MAX - 1) == -1 ||
	    !vmm_error_valid(m->u.error.code))
		return -1;
	m->u.error.sys_errno = (int32_t)err;
	return 0;
}

/*
 * Reads the reply to a request of agent type req, carried by an imsg of
 * the given type: its result type, or IMSG_VMM_ERROR.
 */
int
vmm_reply_get(uint16_t req, uint32_t type, struct mreader *r,
    struct agent_msg *m)
{
	uint32_t	 v;
	int		 rv = 0;

	memset(m, 0, sizeof(*m));
	if (type == IMSG_VMM_ERROR)
		rv = reply_get_error(r, m);
	else if (vmm_req_imsg_type(req) == IMSG_NONE ||
	    vmm_reply_imsg_type(AGENT_REPLY | req) != type)
		return -1;
	else {
		m->type = AGENT_REPLY | req;
		switch (req) {
		case AGENT_EXEC:
			rv = m_get_u32(r, &m->u.job.job);
			break;
		case AGENT_JOB_STATUS:
		case AGENT_JOB_CANCEL:
			rv = vmm_status_get(r, &m->u.status.st);
			break;
		case AGENT_JOB_READ:
			/* Text: out and err hold it, the cursors are the
			 * next ones (see vmm_page_put). */
			if (vmm_status_get(r, &m->u.output.st) == -1 ||
			    page_get(r, &m->u.output.out_cursor,
			    &m->u.output.out, &m->u.output.out_len) == -1 ||
			    page_get(r, &m->u.output.err_cursor,
			    &m->u.output.err, &m->u.output.err_len) == -1)
				return -1;
			/* The next cursors lie within what is retained. */
			if (m->u.output.out_cursor > m->u.output.st.out_retained
			    || m->u.output.err_cursor >
			    m->u.output.st.err_retained)
				return -1;
			break;
		case AGENT_FILE_READ:
			if (m_get_u64(r, &m->u.file_data.offset) == -1 ||
			    m_get_u64(r, &m->u.file_data.size) == -1 ||
			    m_get_u32(r, &v) == -1 || v > 1 ||
			    get_bytes32(r, &m->u.file_data.data,
			    &m->u.file_data.len, AGENT_FILE_CHUNK_MAX) == -1)
				return -1;
			m->u.file_data.eof = (uint8_t)v;
			break;
		case AGENT_FILE_WRITE:
			if (m_get_u64(r, &m->u.file_written.size) == -1 ||
			    m_get_u32(r, &m->u.file_written.written) == -1 ||
			    m->u.file_written.written > AGENT_FILE_CHUNK_MAX)
				return -1;
			break;
		case AGENT_INFO:
			if (m_get_str(r, &m->u.info.os,
			    AGENT_INFO_STR_MAX - 1) == -1 ||
			    m_get_str(r, &m->u.info.kernel,
			    AGENT_INFO_STR_MAX - 1) == -1 ||
			    m_get_str(r, &m->u.info.agent_version,
			    AGENT_INFO_STR_MAX - 1) == -1 ||
			    m_get_u64(r, &m->u.info.uptime_ms) == -1 ||
			    m_get_u32(r, &m->u.info.jobs_active) == -1 ||
			    m_get_u32(r, &m->u.info.jobs_total) == -1 ||
			    m_get_u32(r, &v) == -1 || v > 1)
				return -1;
			m->u.info.frozen = (uint8_t)v;
			break;
		case AGENT_FREEZE:
			rv = m_get_u32(r, &m->u.frozen.jobs_frozen);
			break;
		case AGENT_THAW:
		case AGENT_SET_TIME:
		case AGENT_POWEROFF:
		case AGENT_NET_CONFIG:
			if (m_get_u32(r, &v) == -1 || v != 0)
				return -1;
			break;
		default:
			return -1;
		}
	}
	if (rv == -1 || m_end(r) == -1)
		return -1;
	return 0;
}
