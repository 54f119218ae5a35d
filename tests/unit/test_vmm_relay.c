/*
 * The VM monitor's relay between mcvmd's IMSG_VMM_* fields and agent
 * messages: every request and reply survives the round trip unchanged
 * (compared as encoded agent frames), and values out of the agent
 * protocol's bounds are refused on either side.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "agent_proto.h"
#include "imsg.h"
#include "msg.h"
#include "proto.h"
#include "vmm_relay.h"

static uint8_t	 fa[AGENT_FRAME_MAX], fb[AGENT_FRAME_MAX];

static struct ibuf *
newbuf(uint32_t type)
{
	struct ibuf	*b = imsg_create(NULL, type, 1, 0, 0);

	cr_assert_not_null(b);
	return b;
}

static void
freebuf(struct ibuf *b)
{
	free(b->buf);
	free(b);
}

static void
reader(struct mreader *r, struct ibuf *b)
{
	m_init_buf(r, b->buf + IMSG_HDR_SIZE, b->size - IMSG_HDR_SIZE);
}

static void
assert_same_frame(const struct agent_msg *a, const struct agent_msg *b)
{
	int	 na, nb;

	na = agent_encode(a, fa, sizeof(fa));
	nb = agent_encode(b, fb, sizeof(fb));
	cr_assert_gt(na, 0, "original does not encode");
	cr_assert_eq(na, nb);
	cr_assert_eq(memcmp(fa, fb, (size_t)na), 0, "%s differs",
	    agent_type_name(a->type));
}

static void
req_roundtrip(const struct agent_msg *m)
{
	struct agent_msg back;
	struct mreader	 r;
	uint32_t	 type = vmm_req_imsg_type(m->type), enc;
	struct ibuf	*b;

	cr_assert_neq(type, IMSG_NONE);
	cr_assert_eq(vmm_req_agent_type(type), m->type);
	b = newbuf(type);
	cr_assert_eq(vmm_req_put(b, m, VMM_ENC_BASE64), 0);
	reader(&r, b);
	cr_assert_eq(vmm_req_get(type, &r, &back, &enc), 0, "%s refused",
	    imsg_type_name(type));
	cr_assert_eq(enc, m->type == AGENT_JOB_READ ? VMM_ENC_BASE64 :
	    VMM_ENC_UTF8);
	back.id = m->id;
	assert_same_frame(m, &back);
	freebuf(b);
}

static int
req_accepted(const struct agent_msg *m)
{
	struct agent_msg back;
	struct mreader	 r;
	uint32_t	 type = vmm_req_imsg_type(m->type);
	struct ibuf	*b = newbuf(type);
	uint32_t	 enc;
	int		 rv;

	if (vmm_req_put(b, m, VMM_ENC_UTF8) == -1) {
		freebuf(b);
		return 0;
	}
	reader(&r, b);
	rv = vmm_req_get(type, &r, &back, &enc);
	freebuf(b);
	return rv == 0;
}

Test(vmm_relay, requests_roundtrip)
{
	static uint8_t		 data[AGENT_FILE_CHUNK_MAX];
	struct agent_msg	 m;

	memset(data, 0x5a, sizeof(data));
	memset(&m, 0, sizeof(m));
	m.type = AGENT_EXEC;
	m.u.exec.flags = 0;
	m.u.exec.timeout_ms = 5000;
	m.u.exec.cwd = "src";
	m.u.exec.argc = 3;
	m.u.exec.argv[0] = "python3";
	m.u.exec.argv[1] = "-c";
	m.u.exec.argv[2] = "print(2+2)";
	m.u.exec.envc = 1;
	m.u.exec.env[0] = "LANG=C.UTF-8";
	m.u.exec.stdin_data = (const uint8_t *)"input";
	m.u.exec.stdin_len = 5;
	req_roundtrip(&m);

	memset(&m, 0, sizeof(m));
	m.type = AGENT_JOB_STATUS;
	m.u.job.job = 17;
	req_roundtrip(&m);
	m.type = AGENT_JOB_CANCEL;
	req_roundtrip(&m);

	memset(&m, 0, sizeof(m));
	m.type = AGENT_JOB_READ;
	m.u.job_read.job = 3;
	m.u.job_read.out_cursor = 1ULL << 40;
	m.u.job_read.err_cursor = 12;
	m.u.job_read.out_max = AGENT_PAGE_MAX;
	m.u.job_read.err_max = 0;
	m.u.job_read.wait_ms = 1500;
	req_roundtrip(&m);

	memset(&m, 0, sizeof(m));
	m.type = AGENT_FILE_READ;
	m.u.file_read.path = "a/b.txt";
	m.u.file_read.offset = 99;
	m.u.file_read.length = AGENT_FILE_CHUNK_MAX;
	req_roundtrip(&m);

	memset(&m, 0, sizeof(m));
	m.type = AGENT_FILE_WRITE;
	m.u.file_write.path = "out.bin";
	m.u.file_write.flags = AGENT_WRITE_MKDIRS | AGENT_WRITE_AT_OFFSET;
	m.u.file_write.offset = 4096;
	m.u.file_write.mode = 0755;
	m.u.file_write.data = data;
	m.u.file_write.len = sizeof(data);
	req_roundtrip(&m);

	memset(&m, 0, sizeof(m));
	m.type = AGENT_SET_TIME;
	m.u.set_time.sec = 1700000000;
	m.u.set_time.nsec = 999999999;
	req_roundtrip(&m);

	memset(&m, 0, sizeof(m));
	m.type = AGENT_INFO;
	req_roundtrip(&m);
	m.type = AGENT_FREEZE;
	req_roundtrip(&m);
	m.type = AGENT_THAW;
	req_roundtrip(&m);
	m.type = AGENT_POWEROFF;
	req_roundtrip(&m);
}

Test(vmm_relay, requests_out_of_range_refused)
{
	static char		 longpath[AGENT_PATH_MAX + 1];
	struct agent_msg	 m;

	memset(&m, 0, sizeof(m));
	m.type = AGENT_EXEC;
	m.u.exec.cwd = "";
	m.u.exec.argc = 1;
	m.u.exec.argv[0] = "true";
	cr_assert(req_accepted(&m));
	m.u.exec.flags = 0x80;
	cr_assert_not(req_accepted(&m));
	m.u.exec.flags = AGENT_EXEC_SHELL;
	m.u.exec.argc = 2;
	m.u.exec.argv[1] = "x";
	cr_assert_not(req_accepted(&m));
	m.u.exec.flags = 0;
	m.u.exec.argc = 0;
	cr_assert_not(req_accepted(&m));
	m.u.exec.argc = 1;
	m.u.exec.timeout_ms = AGENT_TIMEOUT_MAX_MS + 1;
	cr_assert_not(req_accepted(&m));
	m.u.exec.timeout_ms = 0;
	memset(longpath, 'p', sizeof(longpath) - 1);
	m.u.exec.cwd = longpath;
	cr_assert_not(req_accepted(&m));

	memset(&m, 0, sizeof(m));
	m.type = AGENT_JOB_READ;
	m.u.job_read.out_max = AGENT_PAGE_MAX + 1;
	cr_assert_not(req_accepted(&m));
	m.u.job_read.out_max = 0;
	m.u.job_read.wait_ms = AGENT_WAIT_MAX_MS + 1;
	cr_assert_not(req_accepted(&m));

	memset(&m, 0, sizeof(m));
	m.type = AGENT_FILE_READ;
	m.u.file_read.path = "x";
	m.u.file_read.length = AGENT_FILE_CHUNK_MAX + 1;
	cr_assert_not(req_accepted(&m));
	m.u.file_read.length = 1;
	m.u.file_read.path = longpath;
	cr_assert_not(req_accepted(&m));

	memset(&m, 0, sizeof(m));
	m.type = AGENT_FILE_WRITE;
	m.u.file_write.path = "x";
	m.u.file_write.mode = 010000;
	cr_assert_not(req_accepted(&m));
	m.u.file_write.mode = 0;
	m.u.file_write.flags = 0x100;
	cr_assert_not(req_accepted(&m));

	memset(&m, 0, sizeof(m));
	m.type = AGENT_SET_TIME;
	m.u.set_time.nsec = 1000000000U;
	cr_assert_not(req_accepted(&m));
	m.u.set_time.nsec = 0;
	m.u.set_time.sec = -1;
	cr_assert_not(req_accepted(&m));
}

Test(vmm_relay, requests_malformed_fields_refused)
{
	struct agent_msg m;
	struct mreader	 r;
	struct ibuf	*b;
	uint32_t	 enc;

	/* A trailing field. */
	b = newbuf(IMSG_VMM_JOB_STATUS);
	m_add_u32(b, 1);
	m_add_u32(b, 2);
	reader(&r, b);
	cr_assert_eq(vmm_req_get(IMSG_VMM_JOB_STATUS, &r, &m, &enc), -1);
	freebuf(b);
	/* A wrong field type. */
	b = newbuf(IMSG_VMM_JOB_STATUS);
	m_add_u64(b, 1);
	reader(&r, b);
	cr_assert_eq(vmm_req_get(IMSG_VMM_JOB_STATUS, &r, &m, &enc), -1);
	freebuf(b);
	/* A missing field. */
	b = newbuf(IMSG_VMM_JOB_STATUS);
	reader(&r, b);
	cr_assert_eq(vmm_req_get(IMSG_VMM_JOB_STATUS, &r, &m, &enc), -1);
	freebuf(b);
	/* argc larger than the strings that follow. */
	b = newbuf(IMSG_VMM_EXEC);
	m_add_u32(b, 0);
	m_add_u32(b, 0);
	m_add_str(b, "");
	m_add_u32(b, 5);
	m_add_str(b, "true");
	reader(&r, b);
	cr_assert_eq(vmm_req_get(IMSG_VMM_EXEC, &r, &m, &enc), -1);
	freebuf(b);
	/* Not an agent request. */
	b = newbuf(IMSG_VMM_PAUSE);
	reader(&r, b);
	cr_assert_eq(vmm_req_get(IMSG_VMM_PAUSE, &r, &m, &enc), -1);
	freebuf(b);
}

static void
reply_roundtrip(uint16_t req, const struct agent_msg *m)
{
	struct agent_msg back;
	struct mreader	 r;
	uint32_t	 type = vmm_reply_imsg_type(m->type);
	struct ibuf	*b;

	cr_assert_neq(type, IMSG_NONE);
	b = newbuf(type);
	cr_assert_eq(vmm_reply_put(b, m, VMM_ENC_UTF8), 0);
	reader(&r, b);
	cr_assert_eq(vmm_reply_get(req, type, &r, &back), 0, "%s refused",
	    imsg_type_name(type));
	back.id = m->id;
	if (m->type == (AGENT_REPLY | AGENT_INFO)) {
		/* The imsg leaves out the agent's own limits. */
		back.u.info.jobs_active_max = m->u.info.jobs_active_max;
		back.u.info.jobs_total_max = m->u.info.jobs_total_max;
	}
	assert_same_frame(m, &back);
	freebuf(b);
}

static struct agent_job_status
status_sample(void)
{
	struct agent_job_status	 st;

	memset(&st, 0, sizeof(st));
	st.job = 9;
	st.state = AGENT_JOB_COMPLETED;
	st.truncated = 1;
	st.out_eof = 1;
	st.err_eof = 1;
	st.exit_code = -3;
	st.signal = 9;
	st.out_total = 1 << 20;
	st.err_total = 10;
	st.out_retained = AGENT_JOB_RETAIN_MAX - 10;
	st.err_retained = 10;
	st.runtime_ms = 1234;
	return st;
}

/* Puts a JOB_READ reply as the monitor sends it, and reads it back. */
static int
output_get(const struct agent_msg *m, uint32_t enc, struct agent_msg *back)
{
	static struct ibuf *b;
	struct mreader	 r;

	if (b != NULL)
		freebuf(b);
	b = newbuf(IMSG_VMM_JOB_OUTPUT);
	cr_assert_eq(vmm_reply_put(b, m, enc), 0);
	reader(&r, b);
	return vmm_reply_get(AGENT_JOB_READ, IMSG_VMM_JOB_OUTPUT, &r, back);
}

static struct agent_msg
output_msg(const char *out, size_t len, int final)
{
	struct agent_msg	 m;

	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_JOB_READ;
	m.u.output.st.state = final ? AGENT_JOB_COMPLETED : AGENT_JOB_RUNNING;
	m.u.output.st.out_eof = final;
	m.u.output.st.err_eof = final;
	m.u.output.st.out_total = m.u.output.st.out_retained = len;
	m.u.output.out = (const uint8_t *)out;
	m.u.output.out_len = (uint32_t)len;
	return m;
}

/* A character cut by the page end waits for the next read... */
Test(vmm_relay, output_utf8_waits_for_a_cut_character)
{
	struct agent_msg	 m = output_msg("a\xe2\x82", 3, 0), back;

	cr_assert_eq(output_get(&m, VMM_ENC_UTF8, &back), 0);
	cr_assert_eq(back.u.output.out_len, 1);
	cr_assert_eq(back.u.output.out[0], 'a');
	cr_assert_eq(back.u.output.out_cursor, 1);
}

/* ... unless the stream ends there: then it is U+FFFD. */
Test(vmm_relay, output_utf8_final_cut_is_replaced)
{
	struct agent_msg	 m = output_msg("a\xe2\x82", 3, 1), back;

	cr_assert_eq(output_get(&m, VMM_ENC_UTF8, &back), 0);
	cr_assert_eq(back.u.output.out_len, 4);
	cr_assert_eq(memcmp(back.u.output.out, "a\xef\xbf\xbd", 4), 0);
	cr_assert_eq(back.u.output.out_cursor, 3);
}

/* NUL cannot travel in a string field: it reads as U+FFFD. */
Test(vmm_relay, output_nul_becomes_replacement)
{
	struct agent_msg	 m = output_msg("x\0y", 3, 1), back;

	cr_assert_eq(output_get(&m, VMM_ENC_UTF8, &back), 0);
	cr_assert_eq(back.u.output.out_len, 5);
	cr_assert_eq(memcmp(back.u.output.out, "x\xef\xbf\xbdy", 5), 0);
}

Test(vmm_relay, output_base64_is_exact)
{
	struct agent_msg	 m = output_msg("\0\xff\x80", 3, 0), back;

	cr_assert_eq(output_get(&m, VMM_ENC_BASE64, &back), 0);
	cr_assert_eq(back.u.output.out_len, 4);
	cr_assert_eq(memcmp(back.u.output.out, "AP+A", 4), 0);
	cr_assert_eq(back.u.output.out_cursor, 3);
}

Test(vmm_relay, replies_roundtrip)
{
	static uint8_t		 page[AGENT_PAGE_MAX];
	static uint8_t		 chunk[AGENT_FILE_CHUNK_MAX];
	struct agent_msg	 m, back;

	memset(page, 'o', sizeof(page));
	memset(chunk, 0xee, sizeof(chunk));

	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_EXEC;
	m.u.job.job = 77;
	reply_roundtrip(AGENT_EXEC, &m);

	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_JOB_STATUS;
	m.u.status.st = status_sample();
	reply_roundtrip(AGENT_JOB_STATUS, &m);
	m.type = AGENT_REPLY | AGENT_JOB_CANCEL;
	reply_roundtrip(AGENT_JOB_CANCEL, &m);

	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_JOB_READ;
	m.u.output.st = status_sample();
	m.u.output.out_cursor = 100;
	m.u.output.out = page;
	m.u.output.out_len = sizeof(page);
	m.u.output.err_cursor = 10;
	m.u.output.err_len = 0;
	cr_assert_eq(output_get(&m, VMM_ENC_UTF8, &back), 0);
	cr_assert_eq(back.u.output.out_len, sizeof(page));
	cr_assert_eq(memcmp(back.u.output.out, page, sizeof(page)), 0);
	cr_assert_eq(back.u.output.out_cursor, 100 + sizeof(page));
	cr_assert_eq(back.u.output.err_cursor, 10);

	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_FILE_READ;
	m.u.file_data.offset = 5;
	m.u.file_data.size = 1ULL << 33;
	m.u.file_data.eof = 1;
	m.u.file_data.data = chunk;
	m.u.file_data.len = sizeof(chunk);
	reply_roundtrip(AGENT_FILE_READ, &m);

	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_FILE_WRITE;
	m.u.file_written.size = 99;
	m.u.file_written.written = AGENT_FILE_CHUNK_MAX;
	reply_roundtrip(AGENT_FILE_WRITE, &m);

	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_INFO;
	m.u.info.os = "Debian GNU/Linux 12 (bookworm)";
	m.u.info.kernel = "Linux 6.1.0";
	m.u.info.agent_version = "0.1.0";
	m.u.info.uptime_ms = 4242;
	m.u.info.jobs_active = 1;
	m.u.info.jobs_total = 3;
	m.u.info.frozen = 1;
	reply_roundtrip(AGENT_INFO, &m);

	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_FREEZE;
	m.u.frozen.jobs_frozen = 4;
	reply_roundtrip(AGENT_FREEZE, &m);

	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_THAW;
	reply_roundtrip(AGENT_THAW, &m);
	m.type = AGENT_REPLY | AGENT_SET_TIME;
	reply_roundtrip(AGENT_SET_TIME, &m);
	m.type = AGENT_REPLY | AGENT_POWEROFF;
	reply_roundtrip(AGENT_POWEROFF, &m);

	memset(&m, 0, sizeof(m));
	m.type = AGENT_ERROR;
	m.u.error.code = AGENT_ERR_PATH;
	m.u.error.sys_errno = 40;
	m.u.error.message = "symlink";
	reply_roundtrip(AGENT_FILE_READ, &m);
}

/* Builds a JOB_STATE payload with the given raw fields and reads it. */
static int
status_accepted(uint32_t state, uint32_t trunc, uint64_t out_total,
    uint64_t out_retained, uint64_t err_retained)
{
	struct agent_msg m;
	struct mreader	 r;
	struct ibuf	*b = newbuf(IMSG_VMM_JOB_STATE);
	int		 rv;

	m_add_u32(b, 1);
	m_add_u32(b, state);
	m_add_u32(b, trunc);
	m_add_u32(b, 0);
	m_add_u32(b, 0);
	m_add_u32(b, 0);
	m_add_u32(b, 0);
	m_add_u64(b, out_total);
	m_add_u64(b, err_retained);
	m_add_u64(b, out_retained);
	m_add_u64(b, err_retained);
	m_add_u64(b, 0);
	reader(&r, b);
	rv = vmm_reply_get(AGENT_JOB_STATUS, IMSG_VMM_JOB_STATE, &r, &m);
	freebuf(b);
	return rv == 0;
}

Test(vmm_relay, replies_out_of_range_refused)
{
	struct agent_msg m;
	struct mreader	 r;
	struct ibuf	*b;

	cr_assert(status_accepted(AGENT_JOB_RUNNING, 0, 10, 10, 0));
	cr_assert_not(status_accepted(0, 0, 0, 0, 0));
	cr_assert_not(status_accepted(AGENT_JOB_STATE_MAX, 0, 0, 0, 0));
	cr_assert_not(status_accepted(AGENT_JOB_RUNNING, 2, 0, 0, 0));
	cr_assert_not(status_accepted(AGENT_JOB_RUNNING, 0, 5, 6, 0));
	cr_assert_not(status_accepted(AGENT_JOB_RUNNING, 0,
	    AGENT_JOB_RETAIN_MAX, AGENT_JOB_RETAIN_MAX, 1));

	/* A page beyond what the job retained. */
	b = newbuf(IMSG_VMM_JOB_OUTPUT);
	{
		struct agent_job_status	 st;

		memset(&st, 0, sizeof(st));
		st.state = AGENT_JOB_RUNNING;
		st.out_total = st.out_retained = 4;
		vmm_status_put(b, &st);
	}
	m_add_u64(b, 5);
	m_add_str(b, "abc");
	m_add_u32(b, 0);
	m_add_u64(b, 0);
	m_add_str(b, "");
	m_add_u32(b, 0);
	reader(&r, b);
	cr_assert_eq(vmm_reply_get(AGENT_JOB_READ, IMSG_VMM_JOB_OUTPUT, &r,
	    &m), -1);
	freebuf(b);

	/* An error code nobody defined. */
	b = newbuf(IMSG_VMM_ERROR);
	vmm_error_put(b, 77, 0, "x");
	reader(&r, b);
	cr_assert_eq(vmm_reply_get(AGENT_INFO, IMSG_VMM_ERROR, &r, &m), -1);
	freebuf(b);
	b = newbuf(IMSG_VMM_ERROR);
	vmm_error_put(b, VMM_ERR_BUSY, 16, "busy");
	reader(&r, b);
	cr_assert_eq(vmm_reply_get(AGENT_INFO, IMSG_VMM_ERROR, &r, &m), 0);
	cr_assert_eq(m.u.error.code, VMM_ERR_BUSY);
	freebuf(b);

	/* OK carries 0 except for FREEZE. */
	b = newbuf(IMSG_VMM_OK);
	m_add_u32(b, 1);
	reader(&r, b);
	cr_assert_eq(vmm_reply_get(AGENT_THAW, IMSG_VMM_OK, &r, &m), -1);
	freebuf(b);

	/* The wrong result type for the request. */
	b = newbuf(IMSG_VMM_JOB);
	m_add_u32(b, 1);
	reader(&r, b);
	cr_assert_eq(vmm_reply_get(AGENT_FILE_READ, IMSG_VMM_JOB, &r, &m), -1);
	freebuf(b);

	/* frozen is a boolean. */
	b = newbuf(IMSG_VMM_GUEST_INFO_RESULT);
	m_add_str(b, "os");
	m_add_str(b, "k");
	m_add_str(b, "v");
	m_add_u64(b, 1);
	m_add_u32(b, 0);
	m_add_u32(b, 0);
	m_add_u32(b, 2);
	reader(&r, b);
	cr_assert_eq(vmm_reply_get(AGENT_INFO, IMSG_VMM_GUEST_INFO_RESULT, &r,
	    &m), -1);
	freebuf(b);

	/* No agent type we do not relay. */
	cr_assert_eq(vmm_reply_imsg_type(AGENT_REPLY | AGENT_PING), IMSG_NONE);
	cr_assert_eq(vmm_reply_imsg_type(AGENT_EXEC), IMSG_NONE);
}

/* Error text from a guest reaches mcvmd as valid UTF-8, cut whole. */
Test(vmm_relay, error_text_made_utf8_and_cut_on_a_boundary)
{
	char	 in[600], out[AGENT_ERRMSG_MAX];
	size_t	 i;

	vmm_error_text("cut \xc3", out, sizeof(out));
	cr_assert_str_eq(out, "cut \xef\xbf\xbd");
	vmm_error_text("bad \xff\xfe ok \xc3\xa9", out, sizeof(out));
	cr_assert_str_eq(out, "bad \xef\xbf\xbd\xef\xbf\xbd ok \xc3\xa9");
	/* 300 invalid bytes: 900 bytes replaced, cut to whole U+FFFDs. */
	memset(in, 0xff, 300);
	in[300] = '\0';
	vmm_error_text(in, out, sizeof(out));
	cr_assert_eq(strlen(out), 255);
	for (i = 0; i < 255; i += 3)
		cr_assert(memcmp(out + i, "\xef\xbf\xbd", 3) == 0);
	/* One character past the end is dropped whole. */
	memset(in, 'a', 254);
	memcpy(in + 254, "\xc3\xa9", 3);
	vmm_error_text(in, out, sizeof(out));
	cr_assert_eq(strlen(out), 254);
	vmm_error_text(NULL, out, sizeof(out));
	cr_assert_str_eq(out, "");
}
