/*
 * The VM monitor's qemu-guest-agent decoder: answers split and joined
 * across reads, the 0xff that starts a line afresh (guest-sync-delimited),
 * an oversize answer reported once and dropped to its end with the next
 * one read whole, what is no answer, and the readers of each command's
 * return with crafted values: every type and bound checked.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "qga.h"

#define REPLIES_MAX	16

struct got {
	enum qga_kind	 kind;
	int		 has_id;
	uint32_t	 id;
	char		 ret[256];	/* the return, dumped */
	char		 desc[QGA_TEXT_MAX];
};

static struct got	 got[REPLIES_MAX];
static int		 ngot;
static struct qga_parser p;
static uint8_t		 out[QGA_DATA_MAX], err[QGA_DATA_MAX];

static void
collect(const struct qga_reply *m, void *arg)
{
	char	*s;

	(void)arg;
	cr_assert_lt(ngot, REPLIES_MAX);
	memset(&got[ngot], 0, sizeof(got[ngot]));
	got[ngot].kind = m->kind;
	got[ngot].has_id = m->has_id;
	got[ngot].id = m->id;
	snprintf(got[ngot].desc, sizeof(got[ngot].desc), "%s", m->err_desc);
	if (m->kind == QGA_RETURN) {
		s = json_dumps(m->ret, JSON_COMPACT | JSON_ENCODE_ANY);
		cr_assert_not_null(s);
		snprintf(got[ngot].ret, sizeof(got[ngot].ret), "%s", s);
		free(s);
	}
	ngot++;
}

static void
setup(void)
{
	ngot = 0;
	qga_parser_init(&p);
}

static void
feed(const void *s, size_t n)
{
	qga_input(&p, s, n, collect, NULL);
}

static void
feeds(const char *s)
{
	feed(s, strlen(s));
}

/* The return of line, parsed as the decoder would give it. */
static json_t *
ret_of(const char *line)
{
	json_t	*root = json_loads(line, 0, NULL), *ret;

	cr_assert_not_null(root, "%s", line);
	ret = json_incref(json_object_get(root, "return"));
	json_decref(root);
	cr_assert_not_null(ret, "%s", line);
	return ret;
}

TestSuite(qga, .init = setup);

Test(qga, return_and_error)
{
	feeds("{\"return\": {}, \"id\": 7}\n"
	    "{\"error\": {\"class\": \"GenericError\", \"desc\": \"no\x7f"
	    "pe\"}}\r\n");
	cr_assert_eq(ngot, 2);
	cr_assert_eq(got[0].kind, QGA_RETURN);
	cr_assert(got[0].has_id);
	cr_assert_eq(got[0].id, 7);
	cr_assert_str_eq(got[0].ret, "{}");
	cr_assert_eq(got[1].kind, QGA_ERROR);
	cr_assert(!got[1].has_id);
	/* The guest's text reaches logs and errors printable. */
	cr_assert_str_eq(got[1].desc, "no?pe");
}

Test(qga, split_and_joined)
{
	const char	*line = "{\"return\": 42}\n";
	size_t		 i;

	for (i = 0; i < strlen(line); i++)
		feed(line + i, 1);
	feeds("{\"return\": 1}\n{\"return\": 2}\n{\"ret");
	cr_assert_eq(ngot, 3);
	cr_assert_str_eq(got[0].ret, "42");
	cr_assert_str_eq(got[2].ret, "2");
	feeds("urn\": 3}\n");
	cr_assert_eq(ngot, 4);
	cr_assert_str_eq(got[3].ret, "3");
}

/* 0xff drops what came before it on its line: a sync's answer follows. */
Test(qga, delimiter_starts_afresh)
{
	static const char	 in[] = "{\"return\": \"half\xff{\"return\": 9}\n";

	feed(in, sizeof(in) - 1);
	cr_assert_eq(ngot, 1);
	cr_assert_str_eq(got[0].ret, "9");
	/* Blank lines (the agent's own resync) are nothing. */
	feeds("\n\r\n");
	cr_assert_eq(ngot, 1);
}

Test(qga, not_answers)
{
	feeds("garbage\n");
	feeds("[1, 2]\n");
	feeds("{\"return\": 1, \"error\": {}}\n");
	feeds("{\"event\": \"X\"}\n");
	feeds("{\"return\": 1, \"id\": \"7\"}\n");
	feeds("{\"return\": 1, \"id\": 0}\n");
	feeds("{\"return\": 1, \"id\": 4294967296}\n");
	feeds("{\"error\": {\"class\": 1, \"desc\": \"x\"}}\n");
	feeds("{\"return\": 1, \"return\": 2}\n");
	feeds("{\"return\": \"\xc3\x28\"}\n");	/* not UTF-8 */
	cr_assert_eq(ngot, 10);
	for (int i = 0; i < ngot; i++)
		cr_assert_eq(got[i].kind, QGA_BAD, "line %d", i);
	/* Each costs only itself. */
	feeds("{\"return\": 5}\n");
	cr_assert_eq(ngot, 11);
	cr_assert_eq(got[10].kind, QGA_RETURN);
}

/* An answer too long: once reported, dropped to its newline. */
Test(qga, oversize_then_resync)
{
	char	*big;
	size_t	 n = QGA_MSG_MAX + 1000, i;

	big = malloc(n);
	cr_assert_not_null(big);
	memset(big, 'a', n);
	memcpy(big, "{\"return\": \"", 12);
	for (i = 0; i < n; i += 4096)
		feed(big + i, n - i < 4096 ? n - i : 4096);
	cr_assert_eq(ngot, 1);
	cr_assert_eq(got[0].kind, QGA_OVERSIZE);
	/* The rest of it, however long, is dropped. */
	feed(big, n);
	feeds("\"}\n{\"return\": 11}\n");
	cr_assert_eq(ngot, 2);
	cr_assert_str_eq(got[1].ret, "11");

	/* A 0xff ends the dropping too: the sync's answer is read. */
	feed(big, n);
	cr_assert_eq(ngot, 3);
	cr_assert_eq(got[2].kind, QGA_OVERSIZE);
	feed("\xff", 1);
	feeds("{\"return\": 12}\n");
	cr_assert_eq(ngot, 4);
	cr_assert_str_eq(got[3].ret, "12");
	free(big);
}

/* The longest line that fits is read whole. */
Test(qga, longest_line)
{
	char	*line;
	size_t	 n = QGA_MSG_MAX - 1, b;

	line = malloc(n + 1);
	cr_assert_not_null(line);
	memcpy(line, "{\"return\": \"", 12);
	b = n - 12 - 2;
	memset(line + 12, 'b', b);
	memcpy(line + 12 + b, "\"}", 2);
	line[n] = '\n';
	feed(line, n + 1);
	cr_assert_eq(ngot, 1);
	cr_assert_eq(got[0].kind, QGA_RETURN);
	free(line);
}

Test(qga, ret_int)
{
	int64_t	 v;
	json_t	*j;

	j = json_integer(5);
	cr_assert_eq(qga_ret_int(j, 1, 10, &v), 0);
	cr_assert_eq(v, 5);
	cr_assert_eq(qga_ret_int(j, 6, 10, &v), -1);
	json_decref(j);
	j = json_string("5");
	cr_assert_eq(qga_ret_int(j, 1, 10, &v), -1);
	json_decref(j);
}

Test(qga, ret_exec)
{
	int32_t	 pid;
	json_t	*j;

	j = ret_of("{\"return\": {\"pid\": 812}}");
	cr_assert_eq(qga_ret_exec(j, &pid), 0);
	cr_assert_eq(pid, 812);
	json_decref(j);
	j = ret_of("{\"return\": {\"pid\": 0}}");
	cr_assert_eq(qga_ret_exec(j, &pid), -1);
	json_decref(j);
	j = ret_of("{\"return\": {\"pid\": 2147483648}}");
	cr_assert_eq(qga_ret_exec(j, &pid), -1);
	json_decref(j);
	j = ret_of("{\"return\": [812]}");
	cr_assert_eq(qga_ret_exec(j, &pid), -1);
	json_decref(j);
}

Test(qga, ret_exec_status)
{
	struct qga_exec_status	 st;
	json_t			*j;

	j = ret_of("{\"return\": {\"exited\": false}}");
	cr_assert_eq(qga_ret_exec_status(j, &st, out, err), 0);
	cr_assert(!st.exited);
	json_decref(j);

	/* out "hi\n", err "oops" */
	j = ret_of("{\"return\": {\"exited\": true, \"exitcode\": 3, "
	    "\"out-data\": \"aGkK\", \"err-data\": \"b29wcw==\", "
	    "\"err-truncated\": true}}");
	cr_assert_eq(qga_ret_exec_status(j, &st, out, err), 0);
	cr_assert(st.exited);
	cr_assert(st.has_code && !st.has_signal);
	cr_assert_eq(st.code, 3);
	cr_assert_eq(st.out_len, 3);
	cr_assert_eq(memcmp(out, "hi\n", 3), 0);
	cr_assert_eq(st.err_len, 4);
	cr_assert_eq(memcmp(err, "oops", 4), 0);
	cr_assert(!st.out_truncated && st.err_truncated);
	json_decref(j);

	j = ret_of("{\"return\": {\"exited\": true, \"signal\": 9}}");
	cr_assert_eq(qga_ret_exec_status(j, &st, out, err), 0);
	cr_assert(st.has_signal && st.signal == 9 && st.out_len == 0);
	json_decref(j);
}

Test(qga, ret_exec_status_refused)
{
	static const char *const bad[] = {
		"{\"return\": {}}",
		"{\"return\": {\"exited\": 1}}",
		/* a running process has no status and no output */
		"{\"return\": {\"exited\": false, \"exitcode\": 0}}",
		"{\"return\": {\"exited\": false, \"out-data\": \"\"}}",
		/* exited: exactly one of code and signal, in range */
		"{\"return\": {\"exited\": true}}",
		"{\"return\": {\"exited\": true, \"exitcode\": 0, "
		    "\"signal\": 9}}",
		"{\"return\": {\"exited\": true, \"exitcode\": 256}}",
		"{\"return\": {\"exited\": true, \"exitcode\": -1}}",
		"{\"return\": {\"exited\": true, \"signal\": 0}}",
		"{\"return\": {\"exited\": true, \"signal\": 128}}",
		/* base64 that is not, or not canonical */
		"{\"return\": {\"exited\": true, \"exitcode\": 0, "
		    "\"out-data\": \"aGk\"}}",
		"{\"return\": {\"exited\": true, \"exitcode\": 0, "
		    "\"out-data\": \"a G k=\"}}",
		"{\"return\": {\"exited\": true, \"exitcode\": 0, "
		    "\"err-data\": 5}}",
		"{\"return\": {\"exited\": true, \"exitcode\": 0, "
		    "\"out-truncated\": \"yes\"}}",
	};
	struct qga_exec_status	 st;
	json_t			*j;
	size_t			 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		j = ret_of(bad[i]);
		cr_assert_eq(qga_ret_exec_status(j, &st, out, err), -1,
		    "%s", bad[i]);
		json_decref(j);
	}
}

Test(qga, ret_files)
{
	uint8_t		 buf[16];
	uint64_t	 n;
	size_t		 len;
	int		 eof;
	json_t		*j;

	j = ret_of("{\"return\": {\"count\": 2, \"buf-b64\": \"aGk=\", "
	    "\"eof\": true}}");
	cr_assert_eq(qga_ret_file_read(j, buf, sizeof(buf), &len, &eof), 0);
	cr_assert_eq(len, 2);
	cr_assert(eof);
	cr_assert_eq(memcmp(buf, "hi", 2), 0);
	/* More than asked for, a count that lies, no eof: refused. */
	cr_assert_eq(qga_ret_file_read(j, buf, 1, &len, &eof), -1);
	json_decref(j);
	j = ret_of("{\"return\": {\"count\": 3, \"buf-b64\": \"aGk=\", "
	    "\"eof\": true}}");
	cr_assert_eq(qga_ret_file_read(j, buf, sizeof(buf), &len, &eof), -1);
	json_decref(j);
	j = ret_of("{\"return\": {\"count\": 2, \"buf-b64\": \"aGk=\"}}");
	cr_assert_eq(qga_ret_file_read(j, buf, sizeof(buf), &len, &eof), -1);
	json_decref(j);

	j = ret_of("{\"return\": {\"count\": 5, \"eof\": false}}");
	cr_assert_eq(qga_ret_file_write(j, &n), 0);
	cr_assert_eq(n, 5);
	json_decref(j);
	j = ret_of("{\"return\": {\"count\": -5, \"eof\": false}}");
	cr_assert_eq(qga_ret_file_write(j, &n), -1);
	json_decref(j);

	j = ret_of("{\"return\": {\"position\": 4096, \"eof\": false}}");
	cr_assert_eq(qga_ret_file_seek(j, &n), 0);
	cr_assert_eq(n, 4096);
	json_decref(j);
	j = ret_of("{\"return\": {\"position\": 1.5}}");
	cr_assert_eq(qga_ret_file_seek(j, &n), -1);
	json_decref(j);
}

Test(qga, ret_info_and_osinfo)
{
	char	 v[16], os[32], k[32];
	json_t	*j;

	j = ret_of("{\"return\": {\"version\": \"7.2.0\", "
	    "\"supported_commands\": []}}");
	cr_assert_eq(qga_ret_info(j, v, sizeof(v)), 0);
	cr_assert_str_eq(v, "7.2.0");
	json_decref(j);
	j = ret_of("{\"return\": {\"version\": \"\"}}");
	cr_assert_eq(qga_ret_info(j, v, sizeof(v)), -1);
	json_decref(j);
	/* Cut to fit, control characters made printable. */
	j = ret_of("{\"return\": {\"version\": \"1.2.3.4.5.6.7.8.9\\n\"}}");
	cr_assert_eq(qga_ret_info(j, v, sizeof(v)), 0);
	cr_assert_str_eq(v, "1.2.3.4.5.6.7.8");
	json_decref(j);

	j = ret_of("{\"return\": {\"pretty-name\": \"Debian GNU/Linux 12 "
	    "(bookworm)\", \"kernel-release\": \"6.1.0-40-cloud-amd64\"}}");
	cr_assert_eq(qga_ret_osinfo(j, os, sizeof(os), k, sizeof(k)), 0);
	cr_assert_str_eq(os, "Debian GNU/Linux 12 (bookworm)");
	cr_assert_str_eq(k, "6.1.0-40-cloud-amd64");
	json_decref(j);
	j = ret_of("{\"return\": {\"name\": \"Debian\", \"pretty-name\": 5}}");
	cr_assert_eq(qga_ret_osinfo(j, os, sizeof(os), k, sizeof(k)), 0);
	cr_assert_str_eq(os, "Debian");
	cr_assert_str_eq(k, "");
	json_decref(j);
}

/* find's records, as the guest writes them for a listing. */
Test(qga, list_parse)
{
	static struct qga_list	 l;
	static const char	 recs[] =
	    "1 d 755 4096 1700000000.1234567890 sub\0"
	    "1 f 644 10 1700000001.5 a.txt\0"
	    "2 l 777 5 -3.25 sub/link\0"
	    "2 p 600 0 1700000002 sub/fifo\0"
	    "1 f 644 3 1700000003.0 cut";

	cr_assert_eq(qga_list_parse((const uint8_t *)recs, sizeof(recs) - 1,
	    AGENT_LIST_MAX, &l), 0);
	cr_assert_eq(l.n, 4);
	cr_assert(l.truncated, "a record cut at the end");
	cr_assert_str_eq(l.ents[0].name, "sub");
	cr_assert_eq(l.ents[0].type, AGENT_FTYPE_DIR);
	cr_assert_eq(l.ents[0].mode, 0755);
	cr_assert_eq(l.ents[0].size, 4096);
	cr_assert_eq(l.ents[0].mtime, 1700000000);
	cr_assert_eq(l.ents[1].type, AGENT_FTYPE_FILE);
	cr_assert_eq(l.ents[2].type, AGENT_FTYPE_SYMLINK);
	cr_assert_eq(l.ents[2].mtime, -3);
	cr_assert_eq(l.ents[3].type, AGENT_FTYPE_OTHER);
	cr_assert_str_eq(l.ents[3].name, "sub/fifo");

	/* At most max, the rest said to be left out. */
	cr_assert_eq(qga_list_parse((const uint8_t *)recs, sizeof(recs) - 1,
	    2, &l), 0);
	cr_assert_eq(l.n, 2);
	cr_assert(l.truncated);
	cr_assert_eq(qga_list_parse((const uint8_t *)"", 0, 2, &l), 0);
	cr_assert_eq(l.n, 0);
	cr_assert(!l.truncated);
}

Test(qga, list_parse_refused)
{
	static struct qga_list	 l;
	static const char *const bad[] = {
		"0 f 644 1 1 a",		/* depth 0 */
		"5 f 644 1 1 a",		/* deeper than asked for */
		"1 f 10000 1 1 a",		/* mode beyond 07777 */
		"1 f 648 1 1 a",		/* not octal */
		"1 f 644 -1 1 a",		/* a negative size */
		"1 f 644 99999999999999999999 1 a",
		"1 f 644 1 x a",		/* not a time */
		"1 f 644 1 1 ",			/* no name */
		"1 f 644 1 1 /abs",		/* not relative */
		"1 ff 644 1 1 a",
		"1f 644 1 1 a",
		"",
	};
	char	 rec[64];
	size_t	 i, n;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		n = (size_t)snprintf(rec, sizeof(rec), "%s", bad[i]) + 1;
		cr_assert_eq(qga_list_parse((const uint8_t *)rec, n,
		    AGENT_LIST_MAX, &l), -1, "%s", bad[i]);
	}
}
