/*
 * The guest agent codec: every message type round-trips field for field;
 * the header is little-endian byte for byte; truncated, oversized,
 * trailing and garbage frames are refused; unknown types are reported as
 * such; every bound is enforced on both sides.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent_proto.h"

static uint8_t	 buf[AGENT_FRAME_MAX];

/* Encodes m, checks the frame and decodes it into out. */
static int
roundtrip(const struct agent_msg *m, struct agent_msg *out)
{
	struct agent_hdr hdr;
	int		 n;

	n = agent_encode(m, buf, sizeof(buf));
	cr_assert_gt(n, 0, "encode %s: %s", agent_type_name(m->type),
	    strerror(errno));
	cr_assert_eq(agent_frame_check(buf, (size_t)n, &hdr), n);
	cr_assert_eq(hdr.type, m->type);
	cr_assert_eq(hdr.id, m->id);
	cr_assert_eq(hdr.len, (uint32_t)n - AGENT_HDR_LEN);
	cr_assert_eq(agent_decode(&hdr, buf + AGENT_HDR_LEN, out), 0,
	    "decode %s", agent_type_name(m->type));
	cr_assert_eq(out->type, m->type);
	cr_assert_eq(out->id, m->id);
	return n;
}

static struct agent_msg *
msg(uint16_t type)
{
	static struct agent_msg	 m;

	memset(&m, 0, sizeof(m));
	m.type = type;
	m.id = 0x01020304;
	return &m;
}

static void
status_fill(struct agent_job_status *st)
{
	st->job = 7;
	st->state = AGENT_JOB_COMPLETED;
	st->out_eof = 1;
	st->err_eof = 0;
	st->exit_code = -1;
	st->signal = 9;
	st->out_total = 5000000000ULL;
	st->err_total = 10;
	/* The gap widened by a cut character on each side. */
	st->out_gap = AGENT_JOB_HEAD_MAX - 1;
	st->out_dropped = st->out_total - AGENT_JOB_HEAD_MAX -
	    AGENT_JOB_TAIL_MAX + 3;
	st->runtime_ms = 123456789012ULL;
}

static void
status_eq(const struct agent_job_status *a, const struct agent_job_status *b)
{
	cr_assert_eq(a->job, b->job);
	cr_assert_eq(a->state, b->state);
	cr_assert_eq(a->out_eof, b->out_eof);
	cr_assert_eq(a->err_eof, b->err_eof);
	cr_assert_eq(a->exit_code, b->exit_code);
	cr_assert_eq(a->signal, b->signal);
	cr_assert_eq(a->out_total, b->out_total);
	cr_assert_eq(a->err_total, b->err_total);
	cr_assert_eq(a->out_gap, b->out_gap);
	cr_assert_eq(a->out_dropped, b->out_dropped);
	cr_assert_eq(a->err_gap, b->err_gap);
	cr_assert_eq(a->err_dropped, b->err_dropped);
	cr_assert_eq(a->runtime_ms, b->runtime_ms);
}

Test(agent, header_is_little_endian)
{
	static const uint8_t want[AGENT_HDR_LEN] = {
		'M', 'C', 'V', 'A', 0x02, 0x00, 0x00, 0x00,
		0x04, 0x03, 0x02, 0x01, 0x00, 0x00, 0x00, 0x00,
	};
	struct agent_msg *m = msg(AGENT_PING);

	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), AGENT_HDR_LEN);
	cr_assert_arr_eq(buf, want, AGENT_HDR_LEN);
}

Test(agent, payload_is_little_endian)
{
	struct agent_msg *m = msg(AGENT_JOB_STATUS);

	m->u.job.job = 0xa1b2c3d4;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), AGENT_HDR_LEN + 4);
	cr_assert_eq(buf[12], 4);
	cr_assert_eq(buf[16], 0xd4);
	cr_assert_eq(buf[19], 0xa1);
}

Test(agent, empty_messages)
{
	static const uint16_t types[] = {
		AGENT_PING, AGENT_REPLY | AGENT_PING, AGENT_INFO, AGENT_FREEZE,
		AGENT_THAW, AGENT_REPLY | AGENT_THAW,
		AGENT_REPLY | AGENT_SET_TIME, AGENT_POWEROFF,
		AGENT_REPLY | AGENT_POWEROFF, AGENT_REPLY | AGENT_NET_CONFIG,
		AGENT_REPLY | AGENT_SEED, AGENT_REPLY | AGENT_IDENTITY,
	};
	struct agent_msg out;
	size_t		 i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		cr_assert_eq(roundtrip(msg(types[i]), &out), AGENT_HDR_LEN);
}

Test(agent, seed)
{
	struct agent_msg *m = msg(AGENT_SEED), out;
	uint8_t		 seed[AGENT_SEED_LEN];
	size_t		 i;

	for (i = 0; i < sizeof(seed); i++)
		seed[i] = (uint8_t)(i * 7 + 1);
	m->u.seed.data = seed;
	cr_assert_eq(roundtrip(m, &out), AGENT_HDR_LEN + 4 + AGENT_SEED_LEN);
	cr_assert_eq(memcmp(out.u.seed.data, seed, sizeof(seed)), 0);
	/* Only exactly AGENT_SEED_LEN bytes: fewer is malformed. */
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)),
	    AGENT_HDR_LEN + 4 + AGENT_SEED_LEN);
	{
		struct agent_hdr hdr;

		buf[12] = 4 + AGENT_SEED_LEN - 1;
		buf[16] = AGENT_SEED_LEN - 1;
		cr_assert_gt(agent_frame_check(buf, sizeof(buf), &hdr), 0);
		cr_assert_eq(agent_decode(&hdr, buf + AGENT_HDR_LEN, &out),
		    -1);
	}
}

Test(agent, identity)
{
	struct agent_msg *m = msg(AGENT_IDENTITY), out;
	char		 host[AGENT_HOSTNAME_MAX + 1];

	m->u.identity.hostname = "build-1";
	m->u.identity.machine_id = "0123456789abcdef0123456789abcdef";
	cr_assert_gt(roundtrip(m, &out), AGENT_HDR_LEN);
	cr_assert_str_eq(out.u.identity.hostname, "build-1");
	cr_assert_str_eq(out.u.identity.machine_id,
	    "0123456789abcdef0123456789abcdef");
	/* Neither is sent unless valid. */
	m->u.identity.hostname = "-build";
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	m->u.identity.hostname = "build";
	m->u.identity.machine_id = "0123456789ABCDEF0123456789abcdef";
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	m->u.identity.machine_id = "0123456789abcdef0123456789abcde";
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	m->u.identity.hostname = NULL;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	cr_assert(agent_valid_hostname("a"));
	cr_assert_not(agent_valid_hostname(""));
	cr_assert_not(agent_valid_hostname("a.b"));
	cr_assert_not(agent_valid_hostname("ab-"));
	/* A VM's name made one. */
	agent_hostname_from("My_Build.VM-", "vm-00", host);
	cr_assert_str_eq(host, "my-build-vm");
	agent_hostname_from("__", "vm-00", host);
	cr_assert_str_eq(host, "vm-00");
	agent_hostname_from("0123456789012345678901234567890123456789012345"
	    "6789012345678901234567890", "vm-00", host);
	cr_assert_eq(strlen(host), AGENT_HOSTNAME_MAX);
	cr_assert(agent_valid_hostname(host));
}

Test(agent, hello)
{
	struct agent_msg *m = msg(AGENT_HELLO), out;

	m->u.hello.version = AGENT_PROTO_VERSION;
	roundtrip(m, &out);
	cr_assert_eq(out.u.hello.version, AGENT_PROTO_VERSION);
	m = msg(AGENT_REPLY | AGENT_HELLO);
	m->u.hello.version = 3;
	m->u.hello.agent_version = "1.2.3";
	roundtrip(m, &out);
	cr_assert_eq(out.u.hello.version, 3);
	cr_assert_str_eq(out.u.hello.agent_version, "1.2.3");
}

Test(agent, info)
{
	struct agent_msg *m = msg(AGENT_REPLY | AGENT_INFO), out;
	static uint8_t	 states[AGENT_JOBS_TOTAL_MAX * AGENT_JOBSTATE_LEN];
	uint32_t	 i, job;
	uint8_t		 st, buf[AGENT_FRAME_MAX];

	m->u.info.os = "Debian GNU/Linux 12 (bookworm)";
	m->u.info.kernel = "Linux 6.1";
	m->u.info.agent_version = "0.1.0";
	m->u.info.uptime_ms = 1ULL << 40;
	m->u.info.jobs_active = 2;
	m->u.info.jobs_total = 200;
	m->u.info.jobs_active_max = AGENT_JOBS_ACTIVE_MAX;
	m->u.info.jobs_total_max = AGENT_JOBS_TOTAL_MAX;
	m->u.info.frozen = 1;
	for (i = 0; i < 200; i++)
		agent_jobstate_put(states, i, 1000 + i,
		    AGENT_JOB_RUNNING + i % 5);
	m->u.info.job_states = states;
	roundtrip(m, &out);
	for (i = 0; i < 200; i++) {
		agent_jobstate_get(out.u.info.job_states, i, &job, &st);
		cr_assert_eq(job, 1000 + i);
		cr_assert_eq(st, AGENT_JOB_RUNNING + i % 5);
	}
	cr_assert_str_eq(out.u.info.os, m->u.info.os);
	cr_assert_str_eq(out.u.info.kernel, m->u.info.kernel);
	cr_assert_str_eq(out.u.info.agent_version, "0.1.0");
	cr_assert_eq(out.u.info.uptime_ms, 1ULL << 40);
	cr_assert_eq(out.u.info.jobs_active, 2);
	cr_assert_eq(out.u.info.jobs_total, 200);
	cr_assert_eq(out.u.info.jobs_active_max, AGENT_JOBS_ACTIVE_MAX);
	cr_assert_eq(out.u.info.jobs_total_max, AGENT_JOBS_TOTAL_MAX);
	cr_assert_eq(out.u.info.frozen, 1);

	/* A state that is none, or job 0, does not encode. */
	agent_jobstate_put(states, 7, 1007, AGENT_JOB_STATE_MAX);
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	agent_jobstate_put(states, 7, 0, AGENT_JOB_RUNNING);
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
}

Test(agent, exec)
{
	struct agent_msg *m = msg(AGENT_EXEC), out;
	static const uint8_t in[] = { 0, 1, 2, 0xff };

	m->u.exec.flags = 0;
	m->u.exec.timeout_ms = 30000;
	m->u.exec.cwd = "src/app";
	m->u.exec.argc = 3;
	m->u.exec.argv[0] = "python3";
	m->u.exec.argv[1] = "-c";
	m->u.exec.argv[2] = "print(2+2)";
	m->u.exec.envc = 2;
	m->u.exec.env[0] = "A=1";
	m->u.exec.env[1] = "B=";
	m->u.exec.stdin_data = in;
	m->u.exec.stdin_len = sizeof(in);
	roundtrip(m, &out);
	cr_assert_eq(out.u.exec.timeout_ms, 30000);
	cr_assert_str_eq(out.u.exec.cwd, "src/app");
	cr_assert_eq(out.u.exec.argc, 3);
	cr_assert_str_eq(out.u.exec.argv[0], "python3");
	cr_assert_str_eq(out.u.exec.argv[2], "print(2+2)");
	cr_assert_eq(out.u.exec.envc, 2);
	cr_assert_str_eq(out.u.exec.env[1], "B=");
	cr_assert_eq(out.u.exec.stdin_len, sizeof(in));
	cr_assert_arr_eq(out.u.exec.stdin_data, in, sizeof(in));

	m->u.exec.flags = AGENT_EXEC_SHELL;
	m->u.exec.argc = 1;
	m->u.exec.envc = 0;
	m->u.exec.stdin_len = 0;
	m->u.exec.stdin_data = NULL;
	roundtrip(m, &out);
	cr_assert_eq(out.u.exec.flags, AGENT_EXEC_SHELL);
	cr_assert_eq(out.u.exec.stdin_len, 0);
}

Test(agent, exec_bounds)
{
	struct agent_msg *m = msg(AGENT_EXEC);
	static char	 big[AGENT_ARG_MAX + 1];
	uint32_t	 i;

	m->u.exec.cwd = "";
	m->u.exec.argc = 0;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	m->u.exec.argc = 2;
	m->u.exec.flags = AGENT_EXEC_SHELL;
	m->u.exec.argv[0] = m->u.exec.argv[1] = "x";
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	m->u.exec.flags = 0x80;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	m->u.exec.flags = 0;
	m->u.exec.timeout_ms = AGENT_TIMEOUT_MAX_MS + 1;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	m->u.exec.timeout_ms = 0;
	m->u.exec.argc = AGENT_ARGC_MAX + 1;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	memset(big, 'a', sizeof(big) - 1);
	m->u.exec.argc = 1;
	m->u.exec.argv[0] = big;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	cr_assert_eq(errno, EINVAL);
	/* Many strings, each fine, too many bytes together. */
	big[AGENT_ARG_MAX / 2] = '\0';
	m->u.exec.argc = 8;
	for (i = 0; i < 8; i++)
		m->u.exec.argv[i] = big;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	m->u.exec.argc = 1;
	m->u.exec.stdin_data = (const uint8_t *)buf;
	m->u.exec.stdin_len = AGENT_STDIN_MAX + 1;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
}

Test(agent, jobs)
{
	struct agent_msg *m, out;
	static const uint16_t types[] = {
		AGENT_REPLY | AGENT_EXEC, AGENT_JOB_STATUS, AGENT_JOB_CANCEL,
	};
	size_t		 i;

	for (i = 0; i < 3; i++) {
		m = msg(types[i]);
		m->u.job.job = 255;
		roundtrip(m, &out);
		cr_assert_eq(out.u.job.job, 255);
	}
	m = msg(AGENT_JOB_READ);
	m->u.job_read.job = 3;
	m->u.job_read.out_cursor = 1ULL << 33;
	m->u.job_read.err_cursor = 17;
	m->u.job_read.out_max = AGENT_PAGE_MAX;
	m->u.job_read.err_max = 1;
	m->u.job_read.wait_ms = AGENT_WAIT_MAX_MS;
	roundtrip(m, &out);
	cr_assert_eq(out.u.job_read.out_cursor, 1ULL << 33);
	cr_assert_eq(out.u.job_read.err_cursor, 17);
	cr_assert_eq(out.u.job_read.out_max, AGENT_PAGE_MAX);
	cr_assert_eq(out.u.job_read.wait_ms, AGENT_WAIT_MAX_MS);
	m->u.job_read.wait_ms = AGENT_WAIT_MAX_MS + 1;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	m->u.job_read.wait_ms = 0;
	m->u.job_read.out_max = AGENT_PAGE_MAX + 1;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
}

Test(agent, status_and_output)
{
	struct agent_msg *m, out;
	static uint8_t	 page[AGENT_PAGE_MAX];

	m = msg(AGENT_REPLY | AGENT_JOB_STATUS);
	status_fill(&m->u.status.st);
	roundtrip(m, &out);
	status_eq(&out.u.status.st, &m->u.status.st);

	m = msg(AGENT_REPLY | AGENT_JOB_READ);
	status_fill(&m->u.output.st);
	memset(page, 'p', sizeof(page));
	m->u.output.out_cursor = 100;
	m->u.output.out = page;
	m->u.output.out_len = AGENT_PAGE_MAX;
	m->u.output.err_cursor = 10;
	m->u.output.err = page;
	m->u.output.err_len = 0;
	roundtrip(m, &out);
	status_eq(&out.u.output.st, &m->u.output.st);
	cr_assert_eq(out.u.output.out_cursor, 100);
	cr_assert_eq(out.u.output.out_len, AGENT_PAGE_MAX);
	cr_assert_arr_eq(out.u.output.out, page, AGENT_PAGE_MAX);
	cr_assert_eq(out.u.output.err_cursor, 10);
	cr_assert_eq(out.u.output.err_len, 0);
}

Test(agent, status_bounds)
{
	struct agent_msg *m = msg(AGENT_REPLY | AGENT_JOB_STATUS);

	status_fill(&m->u.status.st);
	m->u.status.st.state = 0;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	m->u.status.st.state = AGENT_JOB_STATE_MAX;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	status_fill(&m->u.status.st);
	m->u.status.st.out_dropped -= 4;	/* keeps too much */
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	status_fill(&m->u.status.st);
	m->u.status.st.err_total = AGENT_JOB_HEAD_MAX + AGENT_JOB_TAIL_MAX + 1;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	status_fill(&m->u.status.st);
	m->u.status.st.out_gap = AGENT_JOB_HEAD_MAX + 1;	/* past it */
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	status_fill(&m->u.status.st);
	m->u.status.st.err_gap = 1;		/* a gap with nothing dropped */
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	status_fill(&m->u.status.st);
	m->u.status.st.out_dropped = m->u.status.st.out_total + 1;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
}

/* Whether m, encoded, decodes: the decoder checks what pages hold. */
static int
decodes(const struct agent_msg *m)
{
	struct agent_msg out;
	struct agent_hdr hdr;
	int		 n;

	n = agent_encode(m, buf, sizeof(buf));
	cr_assert_gt(n, 0);
	cr_assert_eq(agent_frame_check(buf, (size_t)n, &hdr), n);
	if (agent_decode(&hdr, buf + AGENT_HDR_LEN, &out) == 0)
		return 1;
	cr_assert_eq(errno, EBADMSG);
	return 0;
}

/* A cursor inside the gap reads from its end, and says how far that is. */
Test(agent, output_skips_the_gap)
{
	struct agent_msg *m = msg(AGENT_REPLY | AGENT_JOB_READ), out;
	static uint8_t	 page[100];
	uint64_t	 gap, dropped;

	status_fill(&m->u.output.st);
	gap = m->u.output.st.out_gap;
	dropped = m->u.output.st.out_dropped;
	m->u.output.out_cursor = gap + 5;
	m->u.output.out_skipped = dropped - 5;
	m->u.output.out = page;
	m->u.output.out_len = sizeof(page);
	m->u.output.err = page;
	roundtrip(m, &out);
	cr_assert_eq(out.u.output.out_cursor, gap + 5);
	cr_assert_eq(out.u.output.out_skipped, dropped - 5);
	cr_assert_eq(out.u.output.out_len, sizeof(page));

	/* A skip that ends inside the gap, or past it. */
	m->u.output.out_skipped = dropped - 6;
	cr_assert_not(decodes(m));
	m->u.output.out_skipped = dropped - 4;
	cr_assert_not(decodes(m));
	/* One from before the gap, or without a gap. */
	m->u.output.out_cursor = gap - 200;
	m->u.output.out_skipped = dropped + 200;
	cr_assert_not(decodes(m));
	m->u.output.err_cursor = 1;
	m->u.output.err_skipped = 1;
	m->u.output.out_cursor = 0;
	m->u.output.out_skipped = 0;
	m->u.output.err_len = 0;
	cr_assert_not(decodes(m));
	m->u.output.err_skipped = 0;
	cr_assert(decodes(m));
	/* A page across the gap, and one just up to it. */
	m->u.output.out_cursor = gap - 10;
	cr_assert_not(decodes(m));
	m->u.output.out_cursor = gap - sizeof(page);
	cr_assert(decodes(m));
	/* One from inside the gap that does not skip. */
	m->u.output.out_cursor = gap + 1;
	cr_assert_not(decodes(m));
}

/* A reply's page must lie within the stream its status describes. */
Test(agent, output_outside_retained)
{
	struct agent_msg *m = msg(AGENT_REPLY | AGENT_JOB_READ);
	static uint8_t	 page[16];

	status_fill(&m->u.output.st);
	m->u.output.st.err_total = 10;
	m->u.output.err_cursor = 5;
	m->u.output.err = page;
	m->u.output.err_len = 6;
	m->u.output.out = page;
	cr_assert_not(decodes(m));
	m->u.output.err_len = 5;
	cr_assert(decodes(m));
}

Test(agent, files)
{
	struct agent_msg *m, out;
	static uint8_t	 data[AGENT_FILE_CHUNK_MAX];

	m = msg(AGENT_FILE_READ);
	m->u.file_read.path = "dir/file.txt";
	m->u.file_read.offset = 1ULL << 35;
	m->u.file_read.length = AGENT_FILE_CHUNK_MAX;
	roundtrip(m, &out);
	cr_assert_str_eq(out.u.file_read.path, "dir/file.txt");
	cr_assert_eq(out.u.file_read.offset, 1ULL << 35);
	cr_assert_eq(out.u.file_read.length, AGENT_FILE_CHUNK_MAX);
	m->u.file_read.length = AGENT_FILE_CHUNK_MAX + 1;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);

	memset(data, 0xee, sizeof(data));
	m = msg(AGENT_REPLY | AGENT_FILE_READ);
	m->u.file_data.offset = 5;
	m->u.file_data.size = 1ULL << 40;
	m->u.file_data.eof = 1;
	m->u.file_data.data = data;
	m->u.file_data.len = AGENT_FILE_CHUNK_MAX;
	roundtrip(m, &out);
	cr_assert_eq(out.u.file_data.size, 1ULL << 40);
	cr_assert_eq(out.u.file_data.eof, 1);
	cr_assert_arr_eq(out.u.file_data.data, data, AGENT_FILE_CHUNK_MAX);

	m = msg(AGENT_FILE_WRITE);
	m->u.file_write.path = "a/b";
	m->u.file_write.flags = AGENT_WRITE_APPEND | AGENT_WRITE_MKDIRS;
	m->u.file_write.offset = 0;
	m->u.file_write.mode = 0755;
	m->u.file_write.data = data;
	m->u.file_write.len = AGENT_FILE_CHUNK_MAX;
	roundtrip(m, &out);
	cr_assert_eq(out.u.file_write.flags, AGENT_WRITE_APPEND |
	    AGENT_WRITE_MKDIRS);
	cr_assert_eq(out.u.file_write.mode, 0755);
	cr_assert_eq(out.u.file_write.len, AGENT_FILE_CHUNK_MAX);
	m->u.file_write.len = AGENT_FILE_CHUNK_MAX + 1;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	m->u.file_write.len = 1;
	m->u.file_write.mode = 010000;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);

	m = msg(AGENT_REPLY | AGENT_FILE_WRITE);
	m->u.file_written.size = 77;
	m->u.file_written.written = 7;
	roundtrip(m, &out);
	cr_assert_eq(out.u.file_written.size, 77);
	cr_assert_eq(out.u.file_written.written, 7);
}

Test(agent, file_list)
{
	struct agent_msg	*m, out;
	struct agent_dirent	 d, back;
	static uint8_t		 ents[AGENT_LIST_BYTES_MAX];
	const uint8_t		*p;
	size_t			 len = 0, left;

	m = msg(AGENT_FILE_LIST);
	m->u.file_list.path = "src";
	m->u.file_list.depth = AGENT_LIST_DEPTH_MAX;
	m->u.file_list.max = AGENT_LIST_MAX;
	roundtrip(m, &out);
	cr_assert_str_eq(out.u.file_list.path, "src");
	cr_assert_eq(out.u.file_list.depth, AGENT_LIST_DEPTH_MAX);
	cr_assert_eq(out.u.file_list.max, AGENT_LIST_MAX);
	m->u.file_list.depth = AGENT_LIST_DEPTH_MAX + 1;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	m->u.file_list.depth = 0;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	m->u.file_list.depth = 1;
	m->u.file_list.max = AGENT_LIST_MAX + 1;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);

	d.name = "src/a.py";
	d.type = AGENT_FTYPE_FILE;
	d.mode = 0644;
	d.size = 1ULL << 40;
	d.mtime = -5;
	cr_assert_eq(agent_dirent_put(ents, sizeof(ents), &len, &d), 0);
	cr_assert_eq(len, AGENT_DIRENT_LEN(strlen(d.name)));
	d.name = "src";
	d.type = AGENT_FTYPE_DIR;
	cr_assert_eq(agent_dirent_put(ents, sizeof(ents), &len, &d), 0);
	m = msg(AGENT_REPLY | AGENT_FILE_LIST);
	m->u.file_entries.truncated = 1;
	m->u.file_entries.count = 2;
	m->u.file_entries.entries = ents;
	m->u.file_entries.len = (uint32_t)len;
	roundtrip(m, &out);
	cr_assert_eq(out.u.file_entries.truncated, 1);
	cr_assert_eq(out.u.file_entries.count, 2);
	p = out.u.file_entries.entries;
	left = out.u.file_entries.len;
	cr_assert_eq(agent_dirent_next(&p, &left, &back), 0);
	cr_assert_str_eq(back.name, "src/a.py");
	cr_assert_eq(back.type, AGENT_FTYPE_FILE);
	cr_assert_eq(back.mode, 0644);
	cr_assert_eq(back.size, 1ULL << 40);
	cr_assert_eq(back.mtime, -5);
	cr_assert_eq(agent_dirent_next(&p, &left, &back), 0);
	cr_assert_str_eq(back.name, "src");
	cr_assert_eq(left, 0);
	cr_assert_eq(agent_dirent_next(&p, &left, &back), -1);

	/* The count must be the entries'; each entry well formed. */
	m->u.file_entries.count = 3;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	m->u.file_entries.count = 1;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	m->u.file_entries.count = 2;
	m->u.file_entries.truncated = 2;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	d.type = AGENT_FTYPE_MAX;
	cr_assert_eq(agent_dirent_put(ents, sizeof(ents), &len, &d), -1);
	d.type = AGENT_FTYPE_DIR;
	d.mode = 010000;
	cr_assert_eq(agent_dirent_put(ents, sizeof(ents), &len, &d), -1);
	d.mode = 0;
	d.name = "";
	cr_assert_eq(agent_dirent_put(ents, sizeof(ents), &len, &d), -1);
	d.name = "x";
	len = sizeof(ents) - 3;
	cr_assert_eq(agent_dirent_put(ents, sizeof(ents), &len, &d), -1);
	cr_assert_eq(errno, EMSGSIZE);
	cr_assert_eq(len, sizeof(ents) - 3);

	/* A decoded reply whose entry lies is refused. */
	len = 0;
	d.name = "a";
	cr_assert_eq(agent_dirent_put(ents, sizeof(ents), &len, &d), 0);
	m->u.file_entries.count = 1;
	m->u.file_entries.truncated = 0;
	m->u.file_entries.len = (uint32_t)len;
	cr_assert_gt(agent_encode(m, buf, sizeof(buf)), 0);
	/* The entry's type byte, after the header, the reply's u8 and
	   u32, the bytes' u32 and the name's u32 and two bytes. */
	buf[AGENT_HDR_LEN + 1 + 4 + 4 + 4 + 2] = AGENT_FTYPE_MAX;
	{
		struct agent_hdr	 hdr;
		int			 n = agent_frame_check(buf,
					    sizeof(buf), &hdr);

		cr_assert_gt(n, 0);
		cr_assert_eq(agent_decode(&hdr, buf + AGENT_HDR_LEN, &out),
		    -1);
		cr_assert_eq(errno, EBADMSG);
	}
}

Test(agent, lifecycle)
{
	struct agent_msg *m, out;

	m = msg(AGENT_REPLY | AGENT_FREEZE);
	m->u.frozen.jobs_frozen = 4;
	roundtrip(m, &out);
	cr_assert_eq(out.u.frozen.jobs_frozen, 4);
	m = msg(AGENT_SET_TIME);
	m->u.set_time.sec = 1893456000;
	m->u.set_time.nsec = 999999999;
	roundtrip(m, &out);
	cr_assert_eq(out.u.set_time.sec, 1893456000);
	cr_assert_eq(out.u.set_time.nsec, 999999999);
	m->u.set_time.nsec = 1000000000;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	m->u.set_time.nsec = 0;
	m->u.set_time.sec = -1;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
}

Test(agent, net_config)
{
	struct agent_msg *m = msg(AGENT_NET_CONFIG), out;
	char		 big[AGENT_NET_STR_MAX + 1];

	m->u.net_config.address = "10.231.0.22/30";
	m->u.net_config.gateway = "10.231.0.21";
	m->u.net_config.resolver = "";
	m->u.net_config.mac = "52:54:00:6d:00:05";
	roundtrip(m, &out);
	cr_assert_str_eq(out.u.net_config.address, "10.231.0.22/30");
	cr_assert_str_eq(out.u.net_config.gateway, "10.231.0.21");
	cr_assert_str_eq(out.u.net_config.resolver, "");
	cr_assert_str_eq(out.u.net_config.mac, "52:54:00:6d:00:05");
	cr_assert_str_eq(agent_type_name(AGENT_NET_CONFIG), "net_config");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	m->u.net_config.resolver = big;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
	m->u.net_config.resolver = NULL;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
}

Test(agent, net_config_truncated)
{
	struct agent_msg *m = msg(AGENT_NET_CONFIG), out;
	struct agent_hdr hdr;
	int		 n, k;

	m->u.net_config.address = "10.231.0.22/30";
	m->u.net_config.gateway = "10.231.0.21";
	m->u.net_config.resolver = "192.0.2.53";
	m->u.net_config.mac = "52:54:00:6d:00:05";
	n = agent_encode(m, buf, sizeof(buf));
	cr_assert_gt(n, AGENT_HDR_LEN);
	/* Every shorter payload, with the header's length to match, fails. */
	for (k = AGENT_HDR_LEN; k < n; k++) {
		agent_hdr_put(buf, AGENT_NET_CONFIG, 1,
		    (uint32_t)(k - AGENT_HDR_LEN));
		cr_assert_eq(agent_frame_check(buf, (size_t)k, &hdr), k);
		cr_assert_eq(agent_decode(&hdr, buf + AGENT_HDR_LEN, &out), -1,
		    "%d", k);
	}
}

Test(agent, error)
{
	struct agent_msg *m = msg(AGENT_ERROR), out;

	m->u.error.code = AGENT_ERR_PATH;
	m->u.error.sys_errno = -5;
	m->u.error.message = "x: outside /workspace";
	roundtrip(m, &out);
	cr_assert_eq(out.u.error.code, AGENT_ERR_PATH);
	cr_assert_eq(out.u.error.sys_errno, -5);
	cr_assert_str_eq(out.u.error.message, "x: outside /workspace");
	m->u.error.code = AGENT_ERR_MAX;
	cr_assert_eq(agent_encode(m, buf, sizeof(buf)), -1);
}

Test(agent, unknown_type)
{
	struct agent_hdr hdr;
	struct agent_msg out;
	uint8_t		 f[AGENT_HDR_LEN];

	agent_hdr_put(f, 99, 1, 0);
	cr_assert_eq(agent_frame_check(f, sizeof(f), &hdr), AGENT_HDR_LEN);
	cr_assert_eq(agent_decode(&hdr, f + AGENT_HDR_LEN, &out), -1);
	cr_assert_eq(errno, ENOTSUP);
	cr_assert_eq(agent_encode(msg(99), buf, sizeof(buf)), -1);
	cr_assert_str_eq(agent_type_name(99), "unknown");
	cr_assert_str_eq(agent_type_name(AGENT_REPLY | AGENT_EXEC), "exec");
	cr_assert_str_eq(agent_type_name(AGENT_ERROR), "error");
}

Test(agent, truncated_frames_wait)
{
	struct agent_msg *m = msg(AGENT_HELLO);
	struct agent_hdr hdr;
	int		 n, i;

	m->u.hello.version = 1;
	n = agent_encode(m, buf, sizeof(buf));
	for (i = 0; i < n; i++)
		cr_assert_eq(agent_frame_check(buf, (size_t)i, &hdr), 0,
		    "prefix of %d", i);
	cr_assert_eq(agent_frame_check(buf, (size_t)n, &hdr), n);
}

Test(agent, bad_headers)
{
	struct agent_hdr hdr;
	uint8_t		 f[AGENT_HDR_LEN];

	agent_hdr_put(f, AGENT_PING, 1, 0);
	f[0] = 'X';
	cr_assert_eq(agent_frame_check(f, 1, &hdr), -1);
	agent_hdr_put(f, AGENT_PING, 1, 0);
	f[3] = 0;
	cr_assert_eq(agent_frame_check(f, 4, &hdr), -1);
	agent_hdr_put(f, AGENT_PING, 1, 0);
	f[7] = 1;				/* reserved */
	cr_assert_eq(agent_frame_check(f, sizeof(f), &hdr), -1);
	agent_hdr_put(f, AGENT_PING, 1, AGENT_PAYLOAD_MAX + 1);
	cr_assert_eq(agent_frame_check(f, sizeof(f), &hdr), -1);
	agent_hdr_put(f, AGENT_PING, 1, 0xffffffffU);
	cr_assert_eq(agent_frame_check(f, sizeof(f), &hdr), -1);
}

/* A payload cut anywhere, or with a byte more, is refused. */
Test(agent, truncated_and_trailing_payloads)
{
	struct agent_msg *m = msg(AGENT_EXEC), out;
	struct agent_hdr hdr;
	int		 n, len;

	m->u.exec.cwd = "w";
	m->u.exec.argc = 2;
	m->u.exec.argv[0] = "ls";
	m->u.exec.argv[1] = "-l";
	m->u.exec.envc = 1;
	m->u.exec.env[0] = "X=y";
	m->u.exec.stdin_data = (const uint8_t *)"in";
	m->u.exec.stdin_len = 2;
	n = agent_encode(m, buf, sizeof(buf) - 1);
	cr_assert_gt(n, 0);
	cr_assert_eq(agent_frame_check(buf, (size_t)n, &hdr), n);
	for (len = 0; len < n - AGENT_HDR_LEN; len++) {
		hdr.len = (uint32_t)len;
		cr_assert_eq(agent_decode(&hdr, buf + AGENT_HDR_LEN, &out), -1,
		    "cut at %d", len);
		cr_assert_eq(errno, EBADMSG);
	}
	buf[n] = 0;
	hdr.len = (uint32_t)(n - AGENT_HDR_LEN + 1);
	cr_assert_eq(agent_decode(&hdr, buf + AGENT_HDR_LEN, &out), -1);
}

Test(agent, strings_checked)
{
	struct agent_msg *m = msg(AGENT_FILE_READ), out;
	struct agent_hdr hdr;
	int		 n;

	m->u.file_read.path = "abc";
	n = agent_encode(m, buf, sizeof(buf));
	cr_assert_eq(agent_frame_check(buf, (size_t)n, &hdr), n);
	/* The string's bytes start after its u32 length. */
	buf[AGENT_HDR_LEN + 4 + 1] = '\0';	/* a NUL inside */
	cr_assert_eq(agent_decode(&hdr, buf + AGENT_HDR_LEN, &out), -1);
	buf[AGENT_HDR_LEN + 4 + 1] = 'b';
	buf[AGENT_HDR_LEN + 4 + 3] = 'x';	/* no terminating NUL */
	cr_assert_eq(agent_decode(&hdr, buf + AGENT_HDR_LEN, &out), -1);
	buf[AGENT_HDR_LEN + 4 + 3] = '\0';
	cr_assert_eq(agent_decode(&hdr, buf + AGENT_HDR_LEN, &out), 0);
	/* A zero-length string has no NUL either. */
	buf[AGENT_HDR_LEN] = 0;
	cr_assert_eq(agent_decode(&hdr, buf + AGENT_HDR_LEN, &out), -1);
}

Test(agent, small_buffer)
{
	struct agent_msg *m = msg(AGENT_REPLY | AGENT_HELLO);

	m->u.hello.agent_version = "0.1.0";
	cr_assert_eq(agent_encode(m, buf, AGENT_HDR_LEN + 8), -1);
	cr_assert_eq(errno, EMSGSIZE);
	cr_assert_eq(agent_encode(m, buf, 3), -1);
}

/* Random bytes never crash the decoder and rarely form a frame. */
Test(agent, garbage)
{
	struct agent_hdr hdr;
	struct agent_msg out;
	static uint8_t	 junk[4096];
	unsigned int	 seed = 12345, i, k;
	int		 n;

	for (k = 0; k < 2000; k++) {
		for (i = 0; i < sizeof(junk); i++)
			junk[i] = (uint8_t)rand_r(&seed);
		/* Half the time with a valid header for a known type. */
		if (k & 1)
			agent_hdr_put(junk, (uint16_t)(k % 20) |
			    (k & 2 ? AGENT_REPLY : 0), k,
			    (uint32_t)(rand_r(&seed) % 200));
		n = agent_frame_check(junk, sizeof(junk), &hdr);
		if (n > 0)
			(void)agent_decode(&hdr, junk + AGENT_HDR_LEN, &out);
	}
}

Test(agent, page_final)
{
	struct agent_job_status st;

	memset(&st, 0, sizeof(st));
	st.state = AGENT_JOB_RUNNING;
	st.out_total = 100;
	cr_assert_eq(agent_page_final(&st, 0, 90, 10), 0);	/* open */
	st.out_eof = 1;
	cr_assert_eq(agent_page_final(&st, 0, 90, 10), 1);
	cr_assert_eq(agent_page_final(&st, 0, 80, 10), 0);	/* not at end */
	st.out_eof = 0;
	st.out_total = 200000;
	st.out_gap = 100;				/* the head's end */
	st.out_dropped = 200000 - 100 - 1000;
	cr_assert_eq(agent_page_final(&st, 0, 90, 10), 1);
	cr_assert_eq(agent_page_final(&st, 0, 80, 10), 0);
	cr_assert_eq(agent_page_final(&st, 0, 199990, 10), 0);	/* tail open */
	cr_assert_eq(agent_page_final(&st, 1, 0, 0), 0);
	cr_assert_eq(agent_page_final(&st, 0, 200001, 0), 0);
}
