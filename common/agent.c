/*
 * Codec for the guest agent protocol (agent_proto.h), shared by
 * mcvm-guestd and the host.  Pure functions over byte buffers: no
 * allocation, no I/O, libc only, so that the guest links it statically
 * and the fuzzer can drive the decoder directly.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "agent_proto.h"

struct awriter {
	uint8_t		*p;
	size_t		 len;
	size_t		 cap;
	int		 err;
};

struct areader {
	const uint8_t	*p;
	size_t		 left;
	int		 err;
};

static void
put_le(uint8_t *p, uint64_t v, size_t n)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t
get_le(const uint8_t *p, size_t n)
{
	uint64_t v = 0;
	size_t	 i;

	for (i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void
w_raw(struct awriter *w, const void *data, size_t n)
{
	if (w->err)
		return;
	if (n > w->cap - w->len || w->len + n > AGENT_FRAME_MAX) {
		w->err = EMSGSIZE;
		return;
	}
	if (n > 0)
		memcpy(w->p + w->len, data, n);
	w->len += n;
}

static void
w_int(struct awriter *w, uint64_t v, size_t n)
{
	uint8_t	 b[8];

	put_le(b, v, n);
	w_raw(w, b, n);
}

#define w_u8(w, v)	w_int((w), (uint8_t)(v), 1)
#define w_u32(w, v)	w_int((w), (uint32_t)(v), 4)
#define w_u64(w, v)	w_int((w), (uint64_t)(v), 8)

static void
w_bytes(struct awriter *w, const void *data, size_t n, size_t max)
{
	if (n > max || (n > 0 && data == NULL)) {
		w->err = EINVAL;
		return;
	}
	w_u32(w, n);
	w_raw(w, data, n);
}

static void
w_str(struct awriter *w, const char *s, size_t max)
{
	size_t	 n;

	if (s == NULL) {
		w->err = EINVAL;
		return;
	}
	n = strnlen(s, max);
	if (n >= max) {
		w->err = EINVAL;
		return;
	}
	w_bytes(w, s, n + 1, max);
}

static void
w_check(struct awriter *w, int ok)
{
	if (!ok && !w->err)
		w->err = EINVAL;
}

static const uint8_t *
r_raw(struct areader *r, size_t n)
{
	const uint8_t	*p;

	if (r->err || n > r->left) {
		r->err = 1;
		return NULL;
	}
	p = r->p;
	r->p += n;
	r->left -= n;
	return p;
}

static uint64_t
r_int(struct areader *r, size_t n)
{
	const uint8_t	*p;

	if ((p = r_raw(r, n)) == NULL)
		return 0;
	return get_le(p, n);
}

#define r_u8(r)		((uint8_t)r_int((r), 1))
#define r_u32(r)	((uint32_t)r_int((r), 4))
#define r_u64(r)	(r_int((r), 8))

static const uint8_t *
r_bytes(struct areader *r, uint32_t *lenp, size_t max)
{
	uint32_t	 n;
	const uint8_t	*p;

	*lenp = 0;
	n = r_u32(r);
	if (r->err)
		return NULL;
	if (n > max) {
		r->err = 1;
		return NULL;
	}
	if ((p = r_raw(r, n)) == NULL)
		return NULL;
	*lenp = n;
	return p;
}

static const char *
r_str(struct areader *r, size_t max)
{
	const uint8_t	*p;
	uint32_t	 n;

	if ((p = r_bytes(r, &n, max)) == NULL)
		return "";
	if (n == 0 || p[n - 1] != '\0' || memchr(p, '\0', n - 1) != NULL) {
		r->err = 1;
		return "";
	}
	return (const char *)p;
}

static void
r_check(struct areader *r, int ok)
{
	if (!ok)
		r->err = 1;
}

/* A host name's one label: 1 to 63 of a-z, 0-9 and '-', not at an end. */
int
agent_valid_hostname(const char *s)
{
	size_t	 i, n;

	if (s == NULL)
		return 0;
	n = strlen(s);
	if (n == 0 || n > AGENT_HOSTNAME_MAX || s[0] == '-' || s[n - 1] == '-')
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return 0;
	return 1;
}

/*
 * A host name made of a VM's name: lower case, each character that no
 * host name has a '-', the ends' '-' trimmed, at most AGENT_HOSTNAME_MAX;
 * fallback (valid) if nothing is left.  out holds AGENT_HOSTNAME_MAX + 1.
 */
void
agent_hostname_from(const char *name, const char *fallback, char *out)
{
	size_t	 i, n = 0;
	char	 c;

	for (i = 0; name[i] != '\0' && n < AGENT_HOSTNAME_MAX; i++) {
		c = name[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
			c = '-';
		if (c == '-' && n == 0)
			continue;
		out[n++] = c;
	}
	while (n > 0 && out[n - 1] == '-')
		n--;
	if (n == 0)
		for (; fallback[n] != '\0' && n < AGENT_HOSTNAME_MAX; n++)
			out[n] = fallback[n];
	out[n] = '\0';
}

/* AGENT_MACHINE_ID_LEN lower-case hex digits. */
int
agent_valid_machine_id(const char *s)
{
	size_t	 i;

	if (s == NULL)
		return 0;
	for (i = 0; i < AGENT_MACHINE_ID_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[i] == '\0';
}

void
agent_hdr_put(uint8_t *p, uint16_t type, uint32_t id, uint32_t len)
{
	put_le(p, AGENT_MAGIC, 4);
	put_le(p + 4, type, 2);
	put_le(p + 6, 0, 2);
	put_le(p + 8, id, 4);
	put_le(p + 12, len, 4);
}

/*
 * Looks at the start of a byte stream.  Returns 0 if more bytes are needed
 * for a whole frame, the frame's length once it is all there, or -1 if the
 * header is malformed (wrong magic, reserved bits, oversized payload);
 * the header is filled in as soon as it is complete and valid.
 */
int
agent_frame_check(const uint8_t *p, size_t n, struct agent_hdr *hdr)
{
	size_t	 i, m;

	/* Reject a wrong magic as early as its first byte. */
	m = n < 4 ? n : 4;
	for (i = 0; i < m; i++)
		if (p[i] != (uint8_t)(AGENT_MAGIC >> (8 * i)))
			return -1;
	if (n < AGENT_HDR_LEN)
		return 0;
	if (get_le(p + 6, 2) != 0)
		return -1;
	hdr->type = (uint16_t)get_le(p + 4, 2);
	hdr->id = (uint32_t)get_le(p + 8, 4);
	hdr->len = (uint32_t)get_le(p + 12, 4);
	if (hdr->len > AGENT_PAYLOAD_MAX)
		return -1;
	if (n < AGENT_HDR_LEN + (size_t)hdr->len)
		return 0;
	return AGENT_HDR_LEN + (int)hdr->len;
}

int
agent_stream_ok(uint64_t total, uint64_t gap, uint64_t dropped)
{
	if (dropped == 0)
		return gap == 0 && total <= AGENT_JOB_HEAD_MAX +
		    AGENT_JOB_TAIL_MAX;
	return gap <= AGENT_JOB_HEAD_MAX && dropped <= total &&
	    gap <= total - dropped &&
	    total - dropped <= AGENT_JOB_HEAD_MAX + AGENT_JOB_TAIL_MAX;
}

void
agent_jobstate_get(const uint8_t *recs, uint32_t i, uint32_t *job,
    uint8_t *state)
{
	const uint8_t	*p = recs + (size_t)i * AGENT_JOBSTATE_LEN;

	*job = (uint32_t)get_le(p, 4);
	*state = p[4];
}

void
agent_jobstate_put(uint8_t *recs, uint32_t i, uint32_t job, uint8_t state)
{
	uint8_t	*p = recs + (size_t)i * AGENT_JOBSTATE_LEN;

	put_le(p, job, 4);
	p[4] = state;
}

/* n records of INFO's job_states: real jobs in real states. */
static int
jobstates_ok(const uint8_t *recs, uint32_t n)
{
	uint32_t	 i, job;
	uint8_t		 state;

	if (recs == NULL)
		return n == 0;
	for (i = 0; i < n; i++) {
		agent_jobstate_get(recs, i, &job, &state);
		if (job == 0 || state < AGENT_JOB_RUNNING ||
		    state >= AGENT_JOB_STATE_MAX)
			return 0;
	}
	return 1;
}

static int
status_ok(const struct agent_job_status *st)
{
	return st->state >= AGENT_JOB_RUNNING &&
	    st->state < AGENT_JOB_STATE_MAX &&
	    st->out_eof <= 1 && st->err_eof <= 1 &&
	    agent_stream_ok(st->out_total, st->out_gap, st->out_dropped) &&
	    agent_stream_ok(st->err_total, st->err_gap, st->err_dropped);
}

static void
w_status(struct awriter *w, const struct agent_job_status *st)
{
	w_check(w, status_ok(st));
	w_u32(w, st->job);
	w_u8(w, st->state);
	w_u8(w, st->out_eof);
	w_u8(w, st->err_eof);
	w_u32(w, (uint32_t)st->exit_code);
	w_u32(w, (uint32_t)st->signal);
	w_u64(w, st->out_total);
	w_u64(w, st->err_total);
	w_u64(w, st->out_gap);
	w_u64(w, st->out_dropped);
	w_u64(w, st->err_gap);
	w_u64(w, st->err_dropped);
	w_u64(w, st->runtime_ms);
}

static void
r_status(struct areader *r, struct agent_job_status *st)
{
	st->job = r_u32(r);
	st->state = r_u8(r);
	st->out_eof = r_u8(r);
	st->err_eof = r_u8(r);
	st->exit_code = (int32_t)r_u32(r);
	st->signal = (int32_t)r_u32(r);
	st->out_total = r_u64(r);
	st->err_total = r_u64(r);
	st->out_gap = r_u64(r);
	st->out_dropped = r_u64(r);
	st->err_gap = r_u64(r);
	st->err_dropped = r_u64(r);
	st->runtime_ms = r_u64(r);
	r_check(r, status_ok(st));
}

/*
 * Whether a page read at cursor, skipping skipped bytes, of len bytes,
 * is one the agent can give of a stream with these counts: the skip
 * from inside the gap to its end, the page within the kept bytes.
 */
static int
page_ok(uint64_t total, uint64_t gap, uint64_t dropped, uint64_t cursor,
    uint64_t skipped, uint32_t len)
{
	uint64_t	 start;

	if (cursor > total || skipped > total - cursor)
		return 0;
	start = cursor + skipped;
	if (len > total - start)
		return 0;
	if (skipped > 0 && (dropped == 0 || cursor < gap ||
	    start != gap + dropped))
		return 0;
	return dropped == 0 || start + len <= gap || start >= gap + dropped;
}

static int
dirent_ok(const struct agent_dirent *e)
{
	return e->type >= AGENT_FTYPE_FILE && e->type < AGENT_FTYPE_MAX &&
	    e->mode <= 07777;
}

int
agent_dirent_put(uint8_t *buf, size_t cap, size_t *len,
    const struct agent_dirent *e)
{
	struct awriter	 w;

	if (e->name == NULL || e->name[0] == '\0' || !dirent_ok(e)) {
		errno = EINVAL;
		return -1;
	}
	w.p = buf;
	w.len = *len;
	w.cap = cap;
	w.err = 0;
	w_str(&w, e->name, AGENT_PATH_MAX);
	w_u8(&w, e->type);
	w_u32(&w, e->mode);
	w_u64(&w, e->size);
	w_u64(&w, (uint64_t)e->mtime);
	if (w.err) {
		errno = w.err;
		return -1;
	}
	*len = w.len;
	return 0;
}

int
agent_name_cmp(const char *a, const char *b)
{
	const unsigned char	*p = (const unsigned char *)a;
	const unsigned char	*q = (const unsigned char *)b;
	int			 x, y;

	while (*p != '\0' && *p == *q) {
		p++;
		q++;
	}
	x = *p == '/' ? 1 : *p == '\0' ? 0 : *p + 1;
	y = *q == '/' ? 1 : *q == '\0' ? 0 : *q + 1;
	return x - y;
}

int
agent_dirent_next(const uint8_t **p, size_t *left, struct agent_dirent *e)
{
	struct areader	 r;

	r.p = *p;
	r.left = *left;
	r.err = 0;
	e->name = r_str(&r, AGENT_PATH_MAX);
	e->type = r_u8(&r);
	e->mode = r_u32(&r);
	e->size = r_u64(&r);
	e->mtime = (int64_t)r_u64(&r);
	r_check(&r, dirent_ok(e) && e->name[0] != '\0');
	if (r.err)
		return -1;
	*p = r.p;
	*left = r.left;
	return 0;
}

/* Exactly count well-formed entries fill entries[0..len). */
static int
entries_ok(const uint8_t *entries, size_t len, uint32_t count)
{
	struct agent_dirent	 e;
	uint32_t		 i;

	if (count > AGENT_LIST_MAX || (len > 0 && entries == NULL))
		return 0;
	for (i = 0; i < count; i++)
		if (agent_dirent_next(&entries, &len, &e) == -1)
			return 0;
	return len == 0;
}

static void
encode_payload(struct awriter *w, const struct agent_msg *m)
{
	uint32_t	 i, total;

	switch (m->type) {
	case AGENT_HELLO:
		w_u32(w, m->u.hello.version);
		break;
	case AGENT_REPLY | AGENT_HELLO:
		w_u32(w, m->u.hello.version);
		w_str(w, m->u.hello.agent_version, AGENT_INFO_STR_MAX);
		break;
	case AGENT_PING:
	case AGENT_REPLY | AGENT_PING:
	case AGENT_INFO:
	case AGENT_FREEZE:
	case AGENT_THAW:
	case AGENT_REPLY | AGENT_THAW:
	case AGENT_REPLY | AGENT_SET_TIME:
	case AGENT_POWEROFF:
	case AGENT_REPLY | AGENT_POWEROFF:
	case AGENT_REPLY | AGENT_NET_CONFIG:
	case AGENT_REPLY | AGENT_SEED:
	case AGENT_REPLY | AGENT_IDENTITY:
		break;
	case AGENT_REPLY | AGENT_INFO:
		w_str(w, m->u.info.os, AGENT_INFO_STR_MAX);
		w_str(w, m->u.info.kernel, AGENT_INFO_STR_MAX);
		w_str(w, m->u.info.agent_version, AGENT_INFO_STR_MAX);
		w_u64(w, m->u.info.uptime_ms);
		w_u32(w, m->u.info.jobs_active);
		w_u32(w, m->u.info.jobs_total);
		w_u32(w, m->u.info.jobs_active_max);
		w_u32(w, m->u.info.jobs_total_max);
		w_check(w, m->u.info.frozen <= 1);
		w_u8(w, m->u.info.frozen);
		w_check(w, m->u.info.jobs_total <= AGENT_JOBS_TOTAL_MAX &&
		    jobstates_ok(m->u.info.job_states, m->u.info.jobs_total));
		w_bytes(w, m->u.info.job_states, (size_t)m->u.info.jobs_total *
		    AGENT_JOBSTATE_LEN, AGENT_JOBS_TOTAL_MAX *
		    AGENT_JOBSTATE_LEN);
		break;
	case AGENT_EXEC:
		w_check(w, (m->u.exec.flags & ~AGENT_EXEC_FLAGS) == 0 &&
		    m->u.exec.timeout_ms <= AGENT_TIMEOUT_MAX_MS &&
		    m->u.exec.argc >= 1 && m->u.exec.argc <= AGENT_ARGC_MAX &&
		    m->u.exec.envc <= AGENT_ENVC_MAX &&
		    (!(m->u.exec.flags & AGENT_EXEC_SHELL) ||
		    m->u.exec.argc == 1));
		if (w->err)
			break;
		w_u32(w, m->u.exec.flags);
		w_u32(w, m->u.exec.timeout_ms);
		w_str(w, m->u.exec.cwd, AGENT_PATH_MAX);
		total = 0;
		w_u32(w, m->u.exec.argc);
		for (i = 0; i < m->u.exec.argc && !w->err; i++) {
			w_str(w, m->u.exec.argv[i], AGENT_ARG_MAX);
			total += strlen(m->u.exec.argv[i]) + 1;
		}
		w_u32(w, m->u.exec.envc);
		for (i = 0; i < m->u.exec.envc && !w->err; i++) {
			w_str(w, m->u.exec.env[i], AGENT_ARG_MAX);
			total += strlen(m->u.exec.env[i]) + 1;
		}
		w_check(w, total <= AGENT_ARGS_TOTAL_MAX);
		w_bytes(w, m->u.exec.stdin_data, m->u.exec.stdin_len,
		    AGENT_STDIN_MAX);
		break;
	case AGENT_REPLY | AGENT_EXEC:
	case AGENT_JOB_STATUS:
	case AGENT_JOB_CANCEL:
		w_u32(w, m->u.job.job);
		break;
	case AGENT_JOB_READ:
		w_check(w, m->u.job_read.out_max <= AGENT_PAGE_MAX &&
		    m->u.job_read.err_max <= AGENT_PAGE_MAX &&
		    m->u.job_read.wait_ms <= AGENT_WAIT_MAX_MS);
		w_u32(w, m->u.job_read.job);
		w_u64(w, m->u.job_read.out_cursor);
		w_u64(w, m->u.job_read.err_cursor);
		w_u32(w, m->u.job_read.out_max);
		w_u32(w, m->u.job_read.err_max);
		w_u32(w, m->u.job_read.wait_ms);
		break;
	case AGENT_REPLY | AGENT_JOB_STATUS:
	case AGENT_REPLY | AGENT_JOB_CANCEL:
		w_status(w, &m->u.status.st);
		break;
	case AGENT_REPLY | AGENT_JOB_READ:
		w_status(w, &m->u.output.st);
		w_u64(w, m->u.output.out_cursor);
		w_u64(w, m->u.output.out_skipped);
		w_bytes(w, m->u.output.out, m->u.output.out_len,
		    AGENT_PAGE_MAX);
		w_u64(w, m->u.output.err_cursor);
		w_u64(w, m->u.output.err_skipped);
		w_bytes(w, m->u.output.err, m->u.output.err_len,
		    AGENT_PAGE_MAX);
		break;
	case AGENT_FILE_READ:
		w_check(w, m->u.file_read.length <= AGENT_FILE_CHUNK_MAX);
		w_str(w, m->u.file_read.path, AGENT_PATH_MAX);
		w_u64(w, m->u.file_read.offset);
		w_u32(w, m->u.file_read.length);
		break;
	case AGENT_REPLY | AGENT_FILE_READ:
		w_check(w, m->u.file_data.eof <= 1);
		w_u64(w, m->u.file_data.offset);
		w_u64(w, m->u.file_data.size);
		w_u8(w, m->u.file_data.eof);
		w_bytes(w, m->u.file_data.data, m->u.file_data.len,
		    AGENT_FILE_CHUNK_MAX);
		break;
	case AGENT_FILE_WRITE:
		w_check(w, (m->u.file_write.flags & ~AGENT_WRITE_FLAGS) == 0 &&
		    m->u.file_write.mode <= 07777);
		w_str(w, m->u.file_write.path, AGENT_PATH_MAX);
		w_u32(w, m->u.file_write.flags);
		w_u64(w, m->u.file_write.offset);
		w_u32(w, m->u.file_write.mode);
		w_bytes(w, m->u.file_write.data, m->u.file_write.len,
		    AGENT_FILE_CHUNK_MAX);
		break;
	case AGENT_REPLY | AGENT_FILE_WRITE:
		w_check(w, m->u.file_written.written <= AGENT_FILE_CHUNK_MAX);
		w_u64(w, m->u.file_written.size);
		w_u32(w, m->u.file_written.written);
		break;
	case AGENT_FILE_LIST:
		w_check(w, m->u.file_list.depth >= 1 &&
		    m->u.file_list.depth <= AGENT_LIST_DEPTH_MAX &&
		    m->u.file_list.max >= 1 &&
		    m->u.file_list.max <= AGENT_LIST_MAX);
		w_str(w, m->u.file_list.path, AGENT_PATH_MAX);
		w_u32(w, m->u.file_list.depth);
		w_u32(w, m->u.file_list.max);
		break;
	case AGENT_REPLY | AGENT_FILE_LIST:
		w_check(w, m->u.file_entries.truncated <= 1 &&
		    entries_ok(m->u.file_entries.entries,
		    m->u.file_entries.len, m->u.file_entries.count));
		w_u8(w, m->u.file_entries.truncated);
		w_u32(w, m->u.file_entries.count);
		w_bytes(w, m->u.file_entries.entries, m->u.file_entries.len,
		    AGENT_LIST_BYTES_MAX);
		break;
	case AGENT_REPLY | AGENT_FREEZE:
		w_u32(w, m->u.frozen.jobs_frozen);
		break;
	case AGENT_SET_TIME:
		w_check(w, m->u.set_time.sec >= 0 &&
		    m->u.set_time.nsec < 1000000000U);
		w_u64(w, (uint64_t)m->u.set_time.sec);
		w_u32(w, m->u.set_time.nsec);
		break;
	case AGENT_SEED:
		w_bytes(w, m->u.seed.data, AGENT_SEED_LEN, AGENT_SEED_LEN);
		break;
	case AGENT_IDENTITY:
		w_check(w, agent_valid_hostname(m->u.identity.hostname) &&
		    agent_valid_machine_id(m->u.identity.machine_id));
		w_str(w, m->u.identity.hostname, AGENT_HOSTNAME_MAX + 1);
		w_str(w, m->u.identity.machine_id, AGENT_MACHINE_ID_LEN + 1);
		break;
	case AGENT_NET_CONFIG:
		w_str(w, m->u.net_config.address, AGENT_NET_STR_MAX);
		w_str(w, m->u.net_config.gateway, AGENT_NET_STR_MAX);
		w_str(w, m->u.net_config.resolver, AGENT_NET_STR_MAX);
		w_str(w, m->u.net_config.mac, AGENT_NET_STR_MAX);
		break;
	case AGENT_ERROR:
		w_check(w, m->u.error.code >= AGENT_ERR_PROTO &&
		    m->u.error.code < AGENT_ERR_MAX);
		w_u32(w, m->u.error.code);
		w_u32(w, (uint32_t)m->u.error.sys_errno);
		w_str(w, m->u.error.message, AGENT_ERRMSG_MAX);
		break;
	default:
		w->err = EINVAL;
		break;
	}
}

int
agent_encode(const struct agent_msg *m, uint8_t *buf, size_t cap)
{
	struct awriter	 w;

	if (cap < AGENT_HDR_LEN) {
		errno = EMSGSIZE;
		return -1;
	}
	w.p = buf;
	w.len = AGENT_HDR_LEN;
	w.cap = cap;
	w.err = 0;
	encode_payload(&w, m);
	if (w.err == 0 && w.len - AGENT_HDR_LEN > AGENT_PAYLOAD_MAX)
		w.err = EMSGSIZE;
	if (w.err) {
		errno = w.err;
		return -1;
	}
	agent_hdr_put(buf, m->type, m->id, (uint32_t)(w.len - AGENT_HDR_LEN));
	return (int)w.len;
}

int
agent_decode(const struct agent_hdr *hdr, const uint8_t *payload,
    struct agent_msg *m)
{
	struct areader	 r;
	uint32_t	 i, total, n = 0;

	memset(m, 0, sizeof(*m));
	m->type = hdr->type;
	m->id = hdr->id;
	r.p = payload;
	r.left = hdr->len;
	r.err = 0;

	switch (hdr->type) {
	case AGENT_HELLO:
		m->u.hello.version = r_u32(&r);
		break;
	case AGENT_REPLY | AGENT_HELLO:
		m->u.hello.version = r_u32(&r);
		m->u.hello.agent_version = r_str(&r, AGENT_INFO_STR_MAX);
		break;
	case AGENT_PING:
	case AGENT_REPLY | AGENT_PING:
	case AGENT_INFO:
	case AGENT_FREEZE:
	case AGENT_THAW:
	case AGENT_REPLY | AGENT_THAW:
	case AGENT_REPLY | AGENT_SET_TIME:
	case AGENT_POWEROFF:
	case AGENT_REPLY | AGENT_POWEROFF:
	case AGENT_REPLY | AGENT_NET_CONFIG:
	case AGENT_REPLY | AGENT_SEED:
	case AGENT_REPLY | AGENT_IDENTITY:
		break;
	case AGENT_REPLY | AGENT_INFO:
		m->u.info.os = r_str(&r, AGENT_INFO_STR_MAX);
		m->u.info.kernel = r_str(&r, AGENT_INFO_STR_MAX);
		m->u.info.agent_version = r_str(&r, AGENT_INFO_STR_MAX);
		m->u.info.uptime_ms = r_u64(&r);
		m->u.info.jobs_active = r_u32(&r);
		m->u.info.jobs_total = r_u32(&r);
		m->u.info.jobs_active_max = r_u32(&r);
		m->u.info.jobs_total_max = r_u32(&r);
		m->u.info.frozen = r_u8(&r);
		r_check(&r, m->u.info.frozen <= 1);
		m->u.info.job_states = r_bytes(&r, &n, AGENT_JOBS_TOTAL_MAX *
		    AGENT_JOBSTATE_LEN);
		r_check(&r, m->u.info.jobs_total <= AGENT_JOBS_TOTAL_MAX &&
		    n == m->u.info.jobs_total * AGENT_JOBSTATE_LEN &&
		    jobstates_ok(m->u.info.job_states, m->u.info.jobs_total));
		break;
	case AGENT_EXEC:
		m->u.exec.flags = r_u32(&r);
		m->u.exec.timeout_ms = r_u32(&r);
		r_check(&r, (m->u.exec.flags & ~AGENT_EXEC_FLAGS) == 0 &&
		    m->u.exec.timeout_ms <= AGENT_TIMEOUT_MAX_MS);
		m->u.exec.cwd = r_str(&r, AGENT_PATH_MAX);
		m->u.exec.argc = r_u32(&r);
		r_check(&r, m->u.exec.argc >= 1 &&
		    m->u.exec.argc <= AGENT_ARGC_MAX &&
		    (!(m->u.exec.flags & AGENT_EXEC_SHELL) ||
		    m->u.exec.argc == 1));
		total = 0;
		for (i = 0; i < m->u.exec.argc && !r.err; i++) {
			m->u.exec.argv[i] = r_str(&r, AGENT_ARG_MAX);
			total += strlen(m->u.exec.argv[i]) + 1;
		}
		m->u.exec.envc = r_u32(&r);
		r_check(&r, m->u.exec.envc <= AGENT_ENVC_MAX);
		for (i = 0; i < m->u.exec.envc && !r.err; i++) {
			m->u.exec.env[i] = r_str(&r, AGENT_ARG_MAX);
			total += strlen(m->u.exec.env[i]) + 1;
		}
		r_check(&r, total <= AGENT_ARGS_TOTAL_MAX);
		m->u.exec.stdin_data = r_bytes(&r, &m->u.exec.stdin_len,
		    AGENT_STDIN_MAX);
		break;
	case AGENT_REPLY | AGENT_EXEC:
	case AGENT_JOB_STATUS:
	case AGENT_JOB_CANCEL:
		m->u.job.job = r_u32(&r);
		break;
	case AGENT_JOB_READ:
		m->u.job_read.job = r_u32(&r);
		m->u.job_read.out_cursor = r_u64(&r);
		m->u.job_read.err_cursor = r_u64(&r);
		m->u.job_read.out_max = r_u32(&r);
		m->u.job_read.err_max = r_u32(&r);
		m->u.job_read.wait_ms = r_u32(&r);
		r_check(&r, m->u.job_read.out_max <= AGENT_PAGE_MAX &&
		    m->u.job_read.err_max <= AGENT_PAGE_MAX &&
		    m->u.job_read.wait_ms <= AGENT_WAIT_MAX_MS);
		break;
	case AGENT_REPLY | AGENT_JOB_STATUS:
	case AGENT_REPLY | AGENT_JOB_CANCEL:
		r_status(&r, &m->u.status.st);
		break;
	case AGENT_REPLY | AGENT_JOB_READ:
		r_status(&r, &m->u.output.st);
		m->u.output.out_cursor = r_u64(&r);
		m->u.output.out_skipped = r_u64(&r);
		m->u.output.out = r_bytes(&r, &m->u.output.out_len,
		    AGENT_PAGE_MAX);
		m->u.output.err_cursor = r_u64(&r);
		m->u.output.err_skipped = r_u64(&r);
		m->u.output.err = r_bytes(&r, &m->u.output.err_len,
		    AGENT_PAGE_MAX);
		/* What is returned lies within what is kept. */
		r_check(&r, page_ok(m->u.output.st.out_total,
		    m->u.output.st.out_gap, m->u.output.st.out_dropped,
		    m->u.output.out_cursor, m->u.output.out_skipped,
		    m->u.output.out_len) &&
		    page_ok(m->u.output.st.err_total,
		    m->u.output.st.err_gap, m->u.output.st.err_dropped,
		    m->u.output.err_cursor, m->u.output.err_skipped,
		    m->u.output.err_len));
		break;
	case AGENT_FILE_READ:
		m->u.file_read.path = r_str(&r, AGENT_PATH_MAX);
		m->u.file_read.offset = r_u64(&r);
		m->u.file_read.length = r_u32(&r);
		r_check(&r, m->u.file_read.length <= AGENT_FILE_CHUNK_MAX);
		break;
	case AGENT_REPLY | AGENT_FILE_READ:
		m->u.file_data.offset = r_u64(&r);
		m->u.file_data.size = r_u64(&r);
		m->u.file_data.eof = r_u8(&r);
		m->u.file_data.data = r_bytes(&r, &m->u.file_data.len,
		    AGENT_FILE_CHUNK_MAX);
		r_check(&r, m->u.file_data.eof <= 1);
		break;
	case AGENT_FILE_WRITE:
		m->u.file_write.path = r_str(&r, AGENT_PATH_MAX);
		m->u.file_write.flags = r_u32(&r);
		m->u.file_write.offset = r_u64(&r);
		m->u.file_write.mode = r_u32(&r);
		m->u.file_write.data = r_bytes(&r, &m->u.file_write.len,
		    AGENT_FILE_CHUNK_MAX);
		r_check(&r, (m->u.file_write.flags & ~AGENT_WRITE_FLAGS) == 0 &&
		    m->u.file_write.mode <= 07777);
		break;
	case AGENT_REPLY | AGENT_FILE_WRITE:
		m->u.file_written.size = r_u64(&r);
		m->u.file_written.written = r_u32(&r);
		r_check(&r, m->u.file_written.written <= AGENT_FILE_CHUNK_MAX);
		break;
	case AGENT_FILE_LIST:
		m->u.file_list.path = r_str(&r, AGENT_PATH_MAX);
		m->u.file_list.depth = r_u32(&r);
		m->u.file_list.max = r_u32(&r);
		r_check(&r, m->u.file_list.depth >= 1 &&
		    m->u.file_list.depth <= AGENT_LIST_DEPTH_MAX &&
		    m->u.file_list.max >= 1 &&
		    m->u.file_list.max <= AGENT_LIST_MAX);
		break;
	case AGENT_REPLY | AGENT_FILE_LIST:
		m->u.file_entries.truncated = r_u8(&r);
		m->u.file_entries.count = r_u32(&r);
		m->u.file_entries.entries = r_bytes(&r,
		    &m->u.file_entries.len, AGENT_LIST_BYTES_MAX);
		r_check(&r, m->u.file_entries.truncated <= 1 &&
		    (r.err || entries_ok(m->u.file_entries.entries,
		    m->u.file_entries.len, m->u.file_entries.count)));
		break;
	case AGENT_REPLY | AGENT_FREEZE:
		m->u.frozen.jobs_frozen = r_u32(&r);
		break;
	case AGENT_SET_TIME:
		m->u.set_time.sec = (int64_t)r_u64(&r);
		m->u.set_time.nsec = r_u32(&r);
		r_check(&r, m->u.set_time.sec >= 0 &&
		    m->u.set_time.nsec < 1000000000U);
		break;
	case AGENT_SEED:
		m->u.seed.data = r_bytes(&r, &total, AGENT_SEED_LEN);
		r_check(&r, total == AGENT_SEED_LEN);
		break;
	case AGENT_IDENTITY:
		m->u.identity.hostname = r_str(&r, AGENT_HOSTNAME_MAX + 1);
		m->u.identity.machine_id = r_str(&r, AGENT_MACHINE_ID_LEN + 1);
		r_check(&r, r.err || (agent_valid_hostname(
		    m->u.identity.hostname) &&
		    agent_valid_machine_id(m->u.identity.machine_id)));
		break;
	case AGENT_NET_CONFIG:
		m->u.net_config.address = r_str(&r, AGENT_NET_STR_MAX);
		m->u.net_config.gateway = r_str(&r, AGENT_NET_STR_MAX);
		m->u.net_config.resolver = r_str(&r, AGENT_NET_STR_MAX);
		m->u.net_config.mac = r_str(&r, AGENT_NET_STR_MAX);
		break;
	case AGENT_ERROR:
		m->u.error.code = r_u32(&r);
		m->u.error.sys_errno = (int32_t)r_u32(&r);
		m->u.error.message = r_str(&r, AGENT_ERRMSG_MAX);
		r_check(&r, m->u.error.code >= AGENT_ERR_PROTO &&
		    m->u.error.code < AGENT_ERR_MAX);
		break;
	default:
		errno = ENOTSUP;
		return -1;
	}
	if (r.err || r.left != 0) {
		errno = EBADMSG;
		return -1;
	}
	return 0;
}

int
agent_page_final(const struct agent_job_status *st, int stream,
    uint64_t start, uint32_t len)
{
	uint64_t	 total, gap, dropped;
	int		 eof;

	total = stream == 0 ? st->out_total : st->err_total;
	gap = stream == 0 ? st->out_gap : st->err_gap;
	dropped = stream == 0 ? st->out_dropped : st->err_dropped;
	eof = stream == 0 ? st->out_eof : st->err_eof;
	if (start > total || len > total - start)
		return 0;
	if (dropped > 0 && start + len == gap)
		return 1;
	return eof && start + len == total;
}

static const char *const agent_type_names[AGENT_TYPE_MAX] = {
	[AGENT_HELLO] = "hello",
	[AGENT_PING] = "ping",
	[AGENT_INFO] = "info",
	[AGENT_EXEC] = "exec",
	[AGENT_JOB_STATUS] = "job_status",
	[AGENT_JOB_READ] = "job_read",
	[AGENT_JOB_CANCEL] = "job_cancel",
	[AGENT_FILE_READ] = "file_read",
	[AGENT_FILE_WRITE] = "file_write",
	[AGENT_FREEZE] = "freeze",
	[AGENT_THAW] = "thaw",
	[AGENT_SET_TIME] = "set_time",
	[AGENT_POWEROFF] = "poweroff",
	[AGENT_NET_CONFIG] = "net_config",
	[AGENT_SEED] = "seed",
	[AGENT_FILE_LIST] = "file_list",
	[AGENT_IDENTITY] = "identity",
};

const char *
agent_type_name(uint16_t type)
{
	uint16_t	 base = type & ~AGENT_REPLY;

	if (type == AGENT_ERROR)
		return "error";
	if (base == 0 || base >= AGENT_TYPE_MAX)
		return "unknown";
	return agent_type_names[base];
}

static const char *const agent_err_names[AGENT_ERR_MAX] = {
	[AGENT_ERR_PROTO] = "protocol error",
	[AGENT_ERR_VERSION] = "unsupported protocol version",
	[AGENT_ERR_HANDSHAKE] = "no handshake",
	[AGENT_ERR_UNKNOWN] = "unknown request",
	[AGENT_ERR_INVAL] = "invalid argument",
	[AGENT_ERR_NOJOB] = "no such job",
	[AGENT_ERR_LIMIT] = "job limit reached",
	[AGENT_ERR_PATH] = "path refused",
	[AGENT_ERR_NOENT] = "no such file or directory",
	[AGENT_ERR_IO] = "i/o error",
	[AGENT_ERR_STATE] = "wrong state",
	[AGENT_ERR_EXPIRED] = "job expired",
};

const char *
agent_err_name(uint32_t code)
{
	if (code == 0 || code >= AGENT_ERR_MAX)
		return "unknown error";
	return agent_err_names[code];
}

static const char *const agent_job_state_names[AGENT_JOB_STATE_MAX] = {
	[AGENT_JOB_RUNNING] = "running",
	[AGENT_JOB_COMPLETED] = "completed",
	[AGENT_JOB_CANCELLED] = "cancelled",
	[AGENT_JOB_TIMED_OUT] = "timed_out",
	[AGENT_JOB_FAILED] = "failed",
};

const char *
agent_job_state_name(uint8_t state)
{
	if (state == 0 || state >= AGENT_JOB_STATE_MAX)
		return "unknown";
	return agent_job_state_names[state];
}
