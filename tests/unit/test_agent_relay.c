/*
 * The mcvm agent's conversions in the monitor (vmm/agent_relay.c): each
 * request read by its codec at its largest sizes is an agent request the
 * agent's encoder accepts and decodes back the same; each agent reply
 * becomes an answer mcvmd's codec reads back, with the guest's strings
 * made valid UTF-8 within their bounds, and a reply that cannot be
 * relayed is refused.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "agent_proto.h"
#include "agent_relay.h"
#include "imsg.h"
#include "msg.h"
#include "msg_vmm.h"
#include "proto.h"
#include "utf8.h"

static uint8_t		 frame[AGENT_FRAME_MAX];
static struct ibuf	*cur;
static struct imsg	 cur_imsg;

static void
teardown(void)
{
	if (cur != NULL) {
		free(cur->buf);
		free(cur);
	}
	cur = NULL;
}

TestSuite(agent_relay, .fini = teardown);

/* The agent frame of m, decoded again into back. */
static void
agent_roundtrip(const struct agent_msg *m, struct agent_msg *back)
{
	struct agent_hdr	 hdr;
	int			 n;

	n = agent_encode(m, frame, sizeof(frame));
	cr_assert_gt(n, 0, "%s does not encode", agent_type_name(m->type));
	cr_assert_eq(agent_frame_check(frame, (size_t)n, &hdr), n);
	cr_assert_eq(agent_decode(&hdr, frame + AGENT_HDR_LEN, back), 0);
}

/* m relayed as an answer of type; 0 and cur_imsg set, or -1. */
static int
relay(uint32_t type, const struct agent_msg *m, uint32_t enc)
{
	teardown();
	cr_assert_not_null(cur = imsg_create(NULL, type, 1, 0, 0));
	if (agent_reply_put(cur, type, m, enc) == -1)
		return -1;
	cr_assert_leq(cur->size, IMSG_MAX_SIZE, "%s too large",
	    imsg_type_name(type));
	memset(&cur_imsg, 0, sizeof(cur_imsg));
	cur_imsg.hdr.type = type;
	cur_imsg.hdr.len = (uint32_t)cur->size;
	cur_imsg.fd = -1;
	cur_imsg.data = cur->buf + IMSG_HDR_SIZE;
	cur_imsg.datalen = cur->size - IMSG_HDR_SIZE;
	return 0;
}

static char *
filled(size_t n, char c)
{
	char	*s = malloc(n + 1);

	cr_assert_not_null(s);
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

/* --- requests */

Test(agent_relay, exec_at_its_bounds)
{
	struct msg_vmm_exec	 x;
	struct agent_msg	 m, back;
	static uint8_t		 input[AGENT_STDIN_MAX];
	size_t			 each;
	char			*arg, *cwd;
	uint32_t		 i;

	memset(&x, 0, sizeof(x));
	/* argv and env share AGENT_ARGS_TOTAL_MAX, NULs included. */
	each = AGENT_ARGS_TOTAL_MAX / (AGENT_ARGC_MAX + AGENT_ENVC_MAX) - 1;
	if (each > AGENT_ARG_MAX - 1)
		each = AGENT_ARG_MAX - 1;
	arg = filled(each, 'a');
	cwd = filled(AGENT_PATH_MAX - 1, 'c');
	x.flags = AGENT_EXEC_FLAGS & ~AGENT_EXEC_SHELL;
	x.timeout_ms = AGENT_TIMEOUT_MAX_MS;
	x.cwd = cwd;
	x.argc = AGENT_ARGC_MAX;
	for (i = 0; i < x.argc; i++)
		x.argv[i] = arg;
	x.envc = AGENT_ENVC_MAX;
	for (i = 0; i < x.envc; i++)
		x.env[i] = arg;
	memset(input, 0xa5, sizeof(input));
	x.input = input;
	x.input_len = sizeof(input);
	agent_req_exec(&x, &m);
	cr_assert_eq(m.type, AGENT_EXEC);
	agent_roundtrip(&m, &back);
	cr_assert_eq(back.u.exec.flags, x.flags);
	cr_assert_eq(back.u.exec.timeout_ms, x.timeout_ms);
	cr_assert_str_eq(back.u.exec.cwd, cwd);
	cr_assert_eq(back.u.exec.argc, AGENT_ARGC_MAX);
	cr_assert_eq(back.u.exec.envc, AGENT_ENVC_MAX);
	cr_assert_str_eq(back.u.exec.argv[AGENT_ARGC_MAX - 1], arg);
	cr_assert_str_eq(back.u.exec.env[AGENT_ENVC_MAX - 1], arg);
	cr_assert_eq(back.u.exec.stdin_len, sizeof(input));
	cr_assert_eq(memcmp(back.u.exec.stdin_data, input, sizeof(input)), 0);
	free(arg);
	free(cwd);
}

Test(agent_relay, other_requests_at_their_bounds)
{
	static uint8_t		 data[AGENT_FILE_CHUNK_MAX];
	struct msg_vmm_job_read	 jr = { 7, 1, 2, AGENT_PAGE_MAX,
				    AGENT_PAGE_MAX, VMM_ENC_BASE64,
				    AGENT_WAIT_MAX_MS };
	struct msg_vmm_file_read fr;
	struct msg_vmm_file_write fw;
	struct msg_vmm_file_list fl;
	struct msg_vmm_set_time	 st = { INT64_MAX, VMM_NSEC_MAX };
	struct msg_vmm_net_config nc;
	struct agent_msg	 m, back;
	char			*path, *net;

	path = filled(AGENT_PATH_MAX - 1, 'p');
	net = filled(AGENT_NET_STR_MAX - 1, '1');

	agent_req_job_read(&jr, &m);
	agent_roundtrip(&m, &back);
	cr_assert_eq(back.type, AGENT_JOB_READ);
	cr_assert_eq(back.u.job_read.job, 7);
	cr_assert_eq(back.u.job_read.err_cursor, 2);
	cr_assert_eq(back.u.job_read.out_max, AGENT_PAGE_MAX);
	cr_assert_eq(back.u.job_read.wait_ms, AGENT_WAIT_MAX_MS);

	fr.path = path;
	fr.offset = UINT64_MAX;
	fr.length = AGENT_FILE_CHUNK_MAX;
	fr.encoding = VMM_ENC_BASE64;
	agent_req_file_read(&fr, &m);
	agent_roundtrip(&m, &back);
	cr_assert_str_eq(back.u.file_read.path, path);
	cr_assert_eq(back.u.file_read.length, AGENT_FILE_CHUNK_MAX);

	memset(data, 0x5a, sizeof(data));
	fw.path = path;
	fw.flags = AGENT_WRITE_FLAGS;
	fw.offset = 9;
	fw.mode = 07777;
	fw.data = data;
	fw.len = sizeof(data);
	agent_req_file_write(&fw, &m);
	agent_roundtrip(&m, &back);
	cr_assert_eq(back.u.file_write.flags, AGENT_WRITE_FLAGS);
	cr_assert_eq(back.u.file_write.mode, 07777);
	cr_assert_eq(back.u.file_write.len, sizeof(data));

	fl.path = path;
	fl.depth = AGENT_LIST_DEPTH_MAX;
	fl.max = AGENT_LIST_MAX;
	agent_req_file_list(&fl, &m);
	agent_roundtrip(&m, &back);
	cr_assert_eq(back.type, AGENT_FILE_LIST);
	cr_assert_str_eq(back.u.file_list.path, path);
	cr_assert_eq(back.u.file_list.depth, AGENT_LIST_DEPTH_MAX);
	cr_assert_eq(back.u.file_list.max, AGENT_LIST_MAX);

	agent_req_set_time(&st, &m);
	agent_roundtrip(&m, &back);
	cr_assert_eq(back.u.set_time.sec, INT64_MAX);
	cr_assert_eq(back.u.set_time.nsec, VMM_NSEC_MAX);

	nc.address = nc.gateway = nc.resolver = nc.mac = net;
	agent_req_net_config(&nc, &m);
	agent_roundtrip(&m, &back);
	cr_assert_str_eq(back.u.net_config.mac, net);
	free(path);
	free(net);
}

/* --- replies */

static struct agent_job_status
status_sample(void)
{
	struct agent_job_status	 st;

	memset(&st, 0, sizeof(st));
	st.job = 7;
	st.state = AGENT_JOB_COMPLETED;
	st.out_eof = st.err_eof = 1;
	st.exit_code = -3;
	st.signal = 9;
	st.out_total = 6;
	st.err_total = 10;
	st.err_gap = 2;
	st.err_dropped = 6;
	st.runtime_ms = 1234;
	return st;
}

Test(agent_relay, job_replies)
{
	struct msg_vmm_job	 j;
	struct msg_vmm_job_state s;
	struct agent_msg	 m;

	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_EXEC;
	m.u.job.job = 42;
	cr_assert_eq(relay(IMSG_VMM_JOB, &m, 0), 0);
	cr_assert_eq(msg_vmm_job_get(&cur_imsg, &j), 0);
	cr_assert_eq(j.job, 42);

	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_JOB_CANCEL;
	m.u.status.st = status_sample();
	cr_assert_eq(relay(IMSG_VMM_JOB_STATE, &m, 0), 0);
	cr_assert_eq(msg_vmm_job_state_get(&cur_imsg, &s), 0);
	cr_assert_eq(s.st.job, 7);
	cr_assert_eq(s.st.exit_code, -3);
	cr_assert_eq(s.st.err_gap, 2);
	cr_assert_eq(s.st.err_dropped, 6);
	cr_assert_eq(s.st.runtime_ms, 1234);

	/* A reply of another request than the answer's. */
	m.type = AGENT_REPLY | AGENT_FILE_WRITE;
	cr_assert_eq(relay(IMSG_VMM_JOB_STATE, &m, 0), -1);
	m.type = AGENT_REPLY | AGENT_JOB_STATUS;
	cr_assert_eq(relay(IMSG_VMM_JOB, &m, 0), -1);
	cr_assert_eq(relay(IMSG_VMM_OK, &m, 0), -1);
}

static struct agent_msg
output_msg(const uint8_t *out, uint32_t len, uint64_t retained, int eof)
{
	struct agent_msg	 m;

	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_JOB_READ;
	m.u.output.st = status_sample();
	m.u.output.st.out_total = retained;
	m.u.output.st.out_eof = (uint8_t)eof;
	m.u.output.st.err_total = 0;
	m.u.output.st.err_gap = m.u.output.st.err_dropped = 0;
	m.u.output.out = out;
	m.u.output.out_len = len;
	return m;
}

Test(agent_relay, output_decoded_as_text)
{
	static const uint8_t	 bad[] = "a\0b\xff" "c\xc3";
	struct msg_vmm_job_output o;
	struct agent_msg	 m;

	/* NUL and an invalid byte become U+FFFD; the cut character waits. */
	m = output_msg(bad, 6, 100, 0);
	cr_assert_eq(relay(IMSG_VMM_JOB_OUTPUT, &m, VMM_ENC_UTF8), 0);
	cr_assert_eq(msg_vmm_job_output_get(&cur_imsg, &o), 0);
	cr_assert_str_eq(o.out, "a\xef\xbf\xbd" "b\xef\xbf\xbd" "c");
	cr_assert_eq(o.out_next, 5);
	cr_assert_eq(o.out_errors, 1);
	cr_assert_str_eq(o.err, "");
	cr_assert_eq(o.err_errors, 0);

	/* At the stream's end the cut character is an error, consumed. */
	m = output_msg(bad, 6, 6, 1);
	cr_assert_eq(relay(IMSG_VMM_JOB_OUTPUT, &m, VMM_ENC_UTF8), 0);
	cr_assert_eq(msg_vmm_job_output_get(&cur_imsg, &o), 0);
	cr_assert_eq(o.out_next, 6);

	m = output_msg(bad, 6, 6, 1);
	cr_assert_eq(relay(IMSG_VMM_JOB_OUTPUT, &m, VMM_ENC_BASE64), 0);
	cr_assert_eq(msg_vmm_job_output_get(&cur_imsg, &o), 0);
	cr_assert_str_eq(o.out, "YQBi/2PD");
	cr_assert_eq(o.out_next, 6);
}

/* A full page of the worst bytes still fits the answer and its codec. */
Test(agent_relay, output_largest_page)
{
	static uint8_t		 page[AGENT_PAGE_MAX];
	struct msg_vmm_job_output o;
	struct agent_msg	 m;

	memset(page, 0xff, sizeof(page));
	m = output_msg(page, AGENT_PAGE_MAX, AGENT_PAGE_MAX, 1);
	m.u.output.err = page;
	m.u.output.err_len = AGENT_PAGE_MAX;
	m.u.output.st.err_total = AGENT_PAGE_MAX;
	m.u.output.st.err_eof = 1;
	cr_assert_eq(relay(IMSG_VMM_JOB_OUTPUT, &m, VMM_ENC_UTF8), 0);
	cr_assert_eq(msg_vmm_job_output_get(&cur_imsg, &o), 0);
	cr_assert_eq(strlen(o.out), 3 * AGENT_PAGE_MAX);
	cr_assert_eq(strlen(o.err), 3 * AGENT_PAGE_MAX);
}

/*
 * Around the gap: a page that ends where it starts is final (its cut
 * character does not wait), and one that skipped it says so and reads
 * on from after it.
 */
Test(agent_relay, output_around_the_gap)
{
	struct msg_vmm_job_output o;
	struct agent_msg	 m;

	m = output_msg((const uint8_t *)"a\xc3", 2, 200000, 0);
	m.u.output.st.out_gap = 100;
	m.u.output.st.out_dropped = 200000 - 100 - 1000;
	m.u.output.out_cursor = 98;
	cr_assert_eq(relay(IMSG_VMM_JOB_OUTPUT, &m, VMM_ENC_UTF8), 0);
	cr_assert_eq(msg_vmm_job_output_get(&cur_imsg, &o), 0);
	cr_assert_eq(o.out_next, 100);
	cr_assert_eq(o.out_skipped, 0);
	cr_assert_eq(o.out_errors, 1);

	m = output_msg((const uint8_t *)"xyz", 3, 200000, 0);
	m.u.output.st.out_gap = 100;
	m.u.output.st.out_dropped = 200000 - 100 - 1000;
	m.u.output.out_cursor = 150;
	m.u.output.out_skipped = 200000 - 1000 - 150;
	cr_assert_eq(relay(IMSG_VMM_JOB_OUTPUT, &m, VMM_ENC_UTF8), 0);
	cr_assert_eq(msg_vmm_job_output_get(&cur_imsg, &o), 0);
	cr_assert_str_eq(o.out, "xyz");
	cr_assert_eq(o.out_skipped, 200000 - 1000 - 150);
	cr_assert_eq(o.out_next, 200000 - 1000 + 3);
}

Test(agent_relay, output_past_what_is_retained_refused)
{
	struct agent_msg	 m;

	m = output_msg((const uint8_t *)"abc", 3, 6, 1);
	m.u.output.out_cursor = 4;	/* 4 + 3 > 6 */
	cr_assert_eq(relay(IMSG_VMM_JOB_OUTPUT, &m, VMM_ENC_UTF8), -1);
	m.u.output.out_cursor = 3;
	cr_assert_eq(relay(IMSG_VMM_JOB_OUTPUT, &m, VMM_ENC_UTF8), 0);
}

Test(agent_relay, file_replies)
{
	static uint8_t		 data[AGENT_FILE_CHUNK_MAX];
	struct msg_vmm_file_data d;
	struct msg_vmm_file_written w;
	struct agent_msg	 m;

	memset(data, 0x33, sizeof(data));
	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_FILE_READ;
	m.u.file_data.offset = 5;
	m.u.file_data.size = UINT64_MAX;
	m.u.file_data.eof = 1;
	m.u.file_data.data = data;
	m.u.file_data.len = sizeof(data);
	cr_assert_eq(relay(IMSG_VMM_FILE_DATA, &m, 0), 0);
	cr_assert_eq(msg_vmm_file_data_get(&cur_imsg, &d), 0);
	cr_assert_eq(d.len, sizeof(data));
	cr_assert_eq(d.eof, 1);
	cr_assert_eq(memcmp(d.data, data, sizeof(data)), 0);
	m.u.file_data.len = 0;
	m.u.file_data.data = NULL;
	cr_assert_eq(relay(IMSG_VMM_FILE_DATA, &m, 0), 0);
	cr_assert_eq(msg_vmm_file_data_get(&cur_imsg, &d), 0);
	cr_assert_eq(d.len, 0);

	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_FILE_WRITE;
	m.u.file_written.size = 77;
	m.u.file_written.written = AGENT_FILE_CHUNK_MAX;
	cr_assert_eq(relay(IMSG_VMM_FILE_WRITTEN, &m, 0), 0);
	cr_assert_eq(msg_vmm_file_written_get(&cur_imsg, &w), 0);
	cr_assert_eq(w.written, AGENT_FILE_CHUNK_MAX);
	m.u.file_written.written = AGENT_FILE_CHUNK_MAX + 1;
	cr_assert_eq(relay(IMSG_VMM_FILE_WRITTEN, &m, 0), -1);
}

/* The file data of bytes p[0..len) as relayed with enc. */
static struct msg_vmm_file_data
file_relayed(const char *p, size_t len, int eof, uint32_t enc)
{
	struct msg_vmm_file_data d;
	struct agent_msg	 m;

	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_FILE_READ;
	m.u.file_data.offset = 10;
	m.u.file_data.size = 100;
	m.u.file_data.eof = eof;
	m.u.file_data.data = (const uint8_t *)p;
	m.u.file_data.len = (uint32_t)len;
	cr_assert_eq(relay(IMSG_VMM_FILE_DATA, &m, enc), 0);
	cr_assert_eq(msg_vmm_file_data_get(&cur_imsg, &d), 0);
	return d;
}

Test(agent_relay, file_text_or_bytes)
{
	struct msg_vmm_file_data d;

	d = file_relayed("h\xc3\xa9 \xe2\x82\xac", 7, 1, VMM_ENC_UTF8);
	cr_assert_eq(d.text, 1);
	cr_assert_eq(d.len, 7);
	cr_assert_eq(d.eof, 1);
	/* Asked for base64: the bytes, whatever they are. */
	d = file_relayed("abc", 3, 1, VMM_ENC_BASE64);
	cr_assert_eq(d.text, 0);
	cr_assert_eq(d.len, 3);
	/* A character cut by the length read waits for the next read. */
	d = file_relayed("ab\xe2\x82", 4, 0, VMM_ENC_UTF8);
	cr_assert_eq(d.text, 1);
	cr_assert_eq(d.len, 2);
	cr_assert_eq(d.eof, 0);
	d = file_relayed("ab\xf0\x9f\x98", 5, 0, VMM_ENC_UTF8);
	cr_assert_eq(d.text, 1);
	cr_assert_eq(d.len, 2);
	d = file_relayed("ab\xc3", 3, 0, VMM_ENC_UTF8);
	cr_assert_eq(d.len, 2);
	/* Cut by the file's end, it is no text. */
	d = file_relayed("ab\xe2\x82", 4, 1, VMM_ENC_UTF8);
	cr_assert_eq(d.text, 0);
	cr_assert_eq(d.len, 4);
	/* Only part of a character read: the bytes, so the caller moves
	   on. */
	d = file_relayed("\xe2\x82", 2, 0, VMM_ENC_UTF8);
	cr_assert_eq(d.text, 0);
	cr_assert_eq(d.len, 2);
	/* Not UTF-8, or NUL: bytes. */
	d = file_relayed("ab\xff" "cd", 5, 1, VMM_ENC_UTF8);
	cr_assert_eq(d.text, 0);
	d = file_relayed("ab\0cd", 5, 1, VMM_ENC_UTF8);
	cr_assert_eq(d.text, 0);
	d = file_relayed("\xed\xa0\x80", 3, 0, VMM_ENC_UTF8);
	cr_assert_eq(d.text, 0);	/* a surrogate */
	/* A whole character at the end is kept. */
	d = file_relayed("ab\xe2\x82\xac", 5, 0, VMM_ENC_UTF8);
	cr_assert_eq(d.text, 1);
	cr_assert_eq(d.len, 5);
	d = file_relayed("", 0, 1, VMM_ENC_UTF8);
	cr_assert_eq(d.text, 1);
	cr_assert_eq(d.len, 0);
}

Test(agent_relay, file_entries)
{
	static uint8_t			 ents[AGENT_LIST_BYTES_MAX];
	static struct msg_vmm_file_entries e;
	static char			 name[AGENT_PATH_MAX];
	struct agent_dirent		 d;
	struct agent_msg		 m;
	size_t				 len = 0, n, i;

	memset(&d, 0, sizeof(d));
	d.name = "ok/\xff\xfe.txt";
	d.type = AGENT_FTYPE_SYMLINK;
	d.mode = 0777;
	d.size = 12;
	d.mtime = 1700000000;
	cr_assert_eq(agent_dirent_put(ents, sizeof(ents), &len, &d), 0);
	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_FILE_LIST;
	m.u.file_entries.count = 1;
	m.u.file_entries.truncated = 1;
	m.u.file_entries.entries = ents;
	m.u.file_entries.len = (uint32_t)len;
	cr_assert_eq(relay(IMSG_VMM_FILE_ENTRIES, &m, 0), 0);
	cr_assert_eq(msg_vmm_file_entries_get(&cur_imsg, &e), 0);
	cr_assert_eq(e.count, 1);
	cr_assert_eq(e.truncated, 1);
	cr_assert_str_eq(e.ents[0].name,
	    "ok/\xef\xbf\xbd\xef\xbf\xbd.txt");
	cr_assert_eq(e.ents[0].type, AGENT_FTYPE_SYMLINK);
	cr_assert_eq(e.ents[0].mode, 0777);
	cr_assert_eq(e.ents[0].size, 12);
	cr_assert_eq(e.ents[0].mtime, 1700000000);

	/* A count the entries do not fill. */
	m.u.file_entries.count = 2;
	cr_assert_eq(relay(IMSG_VMM_FILE_ENTRIES, &m, 0), -1);
	/* The answer to another request. */
	m.u.file_entries.count = 1;
	cr_assert_eq(relay(IMSG_VMM_FILE_DATA, &m, 0), -1);

	/* The largest listing, every name's byte made U+FFFD, fits. */
	memset(name, 0xff, sizeof(name));
	n = AGENT_LIST_BYTES_MAX / AGENT_LIST_MAX - AGENT_DIRENT_LEN(0);
	name[n] = '\0';
	len = 0;
	d.name = name;
	for (i = 0; i < AGENT_LIST_MAX; i++)
		cr_assert_eq(agent_dirent_put(ents, sizeof(ents), &len, &d),
		    0);
	m.u.file_entries.count = AGENT_LIST_MAX;
	m.u.file_entries.len = (uint32_t)len;
	cr_assert_eq(relay(IMSG_VMM_FILE_ENTRIES, &m, 0), 0);
	cr_assert_eq(msg_vmm_file_entries_get(&cur_imsg, &e), 0);
	cr_assert_eq(e.count, AGENT_LIST_MAX);
	cr_assert_eq(strlen(e.ents[AGENT_LIST_MAX - 1].name), 3 * n);
}

/* The guest's strings, whatever they hold, reach mcvmd as UTF-8. */
Test(agent_relay, info_made_text)
{
	static struct msg_vmm_guest_info_result i;
	struct agent_msg	 m;
	uint8_t			 states[3 * AGENT_JOBSTATE_LEN];
	char			*os;

	os = filled(AGENT_INFO_STR_MAX - 1, (char)0xff);
	agent_jobstate_put(states, 0, 7, AGENT_JOB_RUNNING);
	agent_jobstate_put(states, 1, 8, AGENT_JOB_COMPLETED);
	agent_jobstate_put(states, 2, 9, AGENT_JOB_TIMED_OUT);
	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_INFO;
	m.u.info.os = os;
	m.u.info.kernel = "Linux \xc3";
	m.u.info.agent_version = "1";
	m.u.info.uptime_ms = 5;
	m.u.info.jobs_total = 3;
	m.u.info.frozen = 1;
	m.u.info.job_states = states;
	cr_assert_eq(relay(IMSG_VMM_GUEST_INFO_RESULT, &m, 0), 0);
	cr_assert_eq(msg_vmm_guest_info_result_get(&cur_imsg, &i), 0);
	cr_assert_eq(i.njobs, 3);
	cr_assert_eq(i.jobs[1].job, 8);
	cr_assert_eq(i.jobs[1].state, AGENT_JOB_COMPLETED);
	cr_assert_eq(i.jobs[2].state, AGENT_JOB_TIMED_OUT);
	cr_assert_eq(strncmp(i.os, "\xef\xbf\xbd", 3), 0);
	cr_assert_lt(strlen(i.os), AGENT_INFO_STR_MAX);
	cr_assert_str_eq(i.kernel, "Linux \xef\xbf\xbd");
	cr_assert_eq(i.jobs_total, 3);
	cr_assert_eq(i.frozen, 1);
	free(os);
}

Test(agent_relay, ok_replies)
{
	static const uint16_t	 zero[] = { AGENT_THAW, AGENT_SET_TIME,
				    AGENT_POWEROFF, AGENT_NET_CONFIG,
				    AGENT_IDENTITY };
	struct msg_vmm_ok	 ok;
	struct agent_msg	 m;
	size_t			 i;

	memset(&m, 0, sizeof(m));
	m.type = AGENT_REPLY | AGENT_FREEZE;
	m.u.frozen.jobs_frozen = 4;
	cr_assert_eq(relay(IMSG_VMM_OK, &m, 0), 0);
	cr_assert_eq(msg_vmm_ok_get(&cur_imsg, &ok), 0);
	cr_assert_eq(ok.value, 4);
	for (i = 0; i < sizeof(zero) / sizeof(zero[0]); i++) {
		memset(&m, 0, sizeof(m));
		m.type = AGENT_REPLY | zero[i];
		cr_assert_eq(relay(IMSG_VMM_OK, &m, 0), 0);
		cr_assert_eq(msg_vmm_ok_get(&cur_imsg, &ok), 0);
		cr_assert_eq(ok.value, 0);
	}
	m.type = AGENT_REPLY | AGENT_PING;
	cr_assert_eq(relay(IMSG_VMM_OK, &m, 0), -1);
}

Test(agent_relay, errors)
{
	struct msg_vmm_error	 e;
	struct agent_msg	 m;
	char			*msg;

	msg = filled(AGENT_ERRMSG_MAX - 1, (char)0xc3);
	memset(&m, 0, sizeof(m));
	m.type = AGENT_ERROR;
	m.u.error.code = AGENT_ERR_NOENT;
	m.u.error.sys_errno = 2;
	m.u.error.message = msg;
	cr_assert_eq(relay(IMSG_VMM_ERROR, &m, 0), 0);
	cr_assert_eq(msg_vmm_error_get(&cur_imsg, &e), 0);
	cr_assert_eq(e.code, AGENT_ERR_NOENT);
	cr_assert_eq(e.sys_errno, 2);
	cr_assert_lt(strlen(e.message), AGENT_ERRMSG_MAX);
	cr_assert_eq(strncmp(e.message, "\xef\xbf\xbd", 3), 0);
	/* An error only as IMSG_VMM_ERROR, with a code mcvmd knows. */
	cr_assert_eq(relay(IMSG_VMM_OK, &m, 0), -1);
	m.u.error.code = AGENT_ERR_MAX;
	cr_assert_eq(relay(IMSG_VMM_ERROR, &m, 0), -1);
	free(msg);
}
