/*
 * The VM monitor's QMP decoder: greeting, return, error and event lines,
 * split and concatenated reads, and the input it refuses (oversize lines,
 * garbage, valid JSON of the wrong shape).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "qmp.h"

#define MSGS_MAX	16

static struct qmp_msg	 got[MSGS_MAX];
static int		 ngot;
static struct qmp_parser p;

static void
collect(const struct qmp_msg *m, void *arg)
{
	(void)arg;
	cr_assert_lt(ngot, MSGS_MAX);
	got[ngot++] = *m;
}

static void
setup(void)
{
	ngot = 0;
	qmp_parser_init(&p);
}

static int
feed(const char *s)
{
	return qmp_input(&p, s, strlen(s), collect, NULL);
}

static const char greeting[] = "{\"QMP\": {\"version\": {\"qemu\": "
	"{\"micro\": 22, \"minor\": 2, \"major\": 7}, \"package\": "
	"\"Debian 1:7.2+dfsg-7\"}, \"capabilities\": [\"oob\"]}}\r\n";

static void	 assert_rejected(const char *);

TestSuite(qmp, .init = setup);

Test(qmp, greeting)
{
	cr_assert_eq(feed(greeting), 0);
	cr_assert_eq(ngot, 1);
	cr_assert_eq(got[0].kind, QMP_GREETING);
	cr_assert_eq(got[0].major, 7);
	cr_assert_eq(got[0].minor, 2);
	cr_assert_eq(got[0].micro, 22);
}

Test(qmp, return_with_id)
{
	cr_assert_eq(feed("{\"return\": {}, \"id\": 7}\r\n"), 0);
	cr_assert_eq(ngot, 1);
	cr_assert_eq(got[0].kind, QMP_RETURN);
	cr_assert(got[0].has_id);
	cr_assert_eq(got[0].id, 7);
	cr_assert_not(got[0].has_status);
}

Test(qmp, query_status)
{
	cr_assert_eq(feed("{\"return\": {\"status\": \"paused\", "
	    "\"singlestep\": false, \"running\": false}, \"id\": 4294967295}"
	    "\n"), 0);
	cr_assert_eq(ngot, 1);
	cr_assert(got[0].has_status);
	cr_assert_str_eq(got[0].status, "paused");
	cr_assert(got[0].has_running);
	cr_assert_eq(got[0].running, 0);
	cr_assert_eq(got[0].id, 4294967295U);
}

Test(qmp, query_migrate_and_port_event)
{
	cr_assert_eq(feed("{\"return\": {\"status\": \"completed\", "
	    "\"total-time\": 120}, \"id\": 9}\n"
	    "{\"event\": \"VSERPORT_CHANGE\", \"data\": {\"id\": \"agent0\", "
	    "\"open\": true}, \"timestamp\": {\"seconds\": 1, "
	    "\"microseconds\": 2}}\n"), 0);
	cr_assert_eq(ngot, 2);
	cr_assert(got[0].has_status);
	cr_assert_not(got[0].has_running);
	cr_assert_str_eq(got[0].status, "completed");
	cr_assert_eq(got[1].kind, QMP_EVENT);
	cr_assert_str_eq(got[1].event, "VSERPORT_CHANGE");
	cr_assert(got[1].has_open);
	cr_assert(got[1].open);
}

Test(qmp, add_fd_return)
{
	cr_assert_eq(feed("{\"return\": {\"fd\": 11, \"fdset-id\": 0}, "
	    "\"id\": 5}\r\n"), 0);
	cr_assert_eq(ngot, 1);
	cr_assert(got[0].has_fdset);
	cr_assert_eq(got[0].fdset, 0);
	cr_assert_eq(feed("{\"return\": {\"fdset-id\": 2147483647}, "
	    "\"id\": 6}\n"), 0);
	cr_assert_eq(got[1].fdset, 2147483647U);
	cr_assert_eq(feed("{\"return\": {}, \"id\": 7}\n"), 0);
	cr_assert_not(got[2].has_fdset);
	assert_rejected("{\"return\": {\"fdset-id\": -1}, \"id\": 1}\n");
	assert_rejected("{\"return\": {\"fdset-id\": 2147483648}, "
	    "\"id\": 1}\n");
	assert_rejected("{\"return\": {\"fdset-id\": \"0\"}, \"id\": 1}\n");
}

/* query-jobs: the monitor's job alone, with its error if it failed. */
Test(qmp, query_jobs_return)
{
	cr_assert_eq(feed("{\"return\": [], \"id\": 3}\n"), 0);
	cr_assert_not(got[0].has_job);
	cr_assert_eq(feed("{\"return\": [{\"id\": \"other\", \"type\": "
	    "\"backup\", \"status\": \"running\", \"current-progress\": 1, "
	    "\"total-progress\": 2}, {\"id\": \"" QMP_JOB_ID "\", \"type\": "
	    "\"snapshot-save\", \"status\": \"running\", "
	    "\"current-progress\": 0, \"total-progress\": 1}], \"id\": 4}\n"),
	    0);
	cr_assert(got[1].has_job);
	cr_assert_str_eq(got[1].job_status, "running");
	cr_assert_not(got[1].has_job_error);
	cr_assert_eq(feed("{\"return\": [{\"id\": \"" QMP_JOB_ID "\", "
	    "\"type\": \"snapshot-load\", \"status\": \"concluded\", "
	    "\"error\": \"Snapshot 'x' does not exist\\n\\u0001\"}], "
	    "\"id\": 5}\n"), 0);
	cr_assert(got[2].has_job);
	cr_assert_str_eq(got[2].job_status, "concluded");
	cr_assert(got[2].has_job_error);
	/* QEMU's text, printable ASCII only. */
	cr_assert_str_eq(got[2].job_error, "Snapshot 'x' does not exist??");
	/* The job twice, a status not a name, an error not a string, an
	 * element not an object: not a QMP answer the monitor takes. */
	assert_rejected("{\"return\": [{\"id\": \"" QMP_JOB_ID "\", "
	    "\"status\": \"running\"}, {\"id\": \"" QMP_JOB_ID "\", "
	    "\"status\": \"running\"}], \"id\": 1}\n");
	assert_rejected("{\"return\": [{\"id\": \"" QMP_JOB_ID "\", "
	    "\"status\": \"Running!\"}], \"id\": 1}\n");
	assert_rejected("{\"return\": [{\"id\": \"" QMP_JOB_ID "\", "
	    "\"status\": \"concluded\", \"error\": 5}], \"id\": 1}\n");
	assert_rejected("{\"return\": [{\"id\": \"" QMP_JOB_ID "\"}], "
	    "\"id\": 1}\n");
	assert_rejected("{\"return\": [{\"id\": 7}], \"id\": 1}\n");
	assert_rejected("{\"return\": [1], \"id\": 1}\n");
}

/* A snapshot node as query-named-block-nodes lists it. */
#define NODE(name, drv)	"\"node-name\": \"" name "\", \"drv\": \"" drv "\""
#define QNODE		NODE(QMP_SNAP_NODE, "qcow2")

/*
 * query-named-block-nodes: the qcow2 nodes that may hold a VM's
 * snapshots (the overlay, the state node, a VM's own disks), and the
 * snapshots of each.
 */
Test(qmp, block_node_snapshots)
{
	char	 line[QMP_MSG_MAX], *p;
	int	 i;

	cr_assert_eq(feed("{\"return\": [{" NODE("base", "raw") ", "
	    "\"image\": {\"snapshots\": [{\"name\": \"b\", "
	    "\"vm-state-size\": 1}]}}, {" QNODE ", "
	    "\"image\": {\"format\": \"qcow2\"}}], \"id\": 2}\n"), 0);
	cr_assert_eq(got[0].nnodes, 1);
	cr_assert_str_eq(got[0].nodes[0].name, QMP_SNAP_NODE);
	cr_assert_eq(got[0].nodes[0].nsnaps, 0);
	cr_assert_eq(feed("{\"return\": [{\"node-name\": \"base\"}], "
	    "\"id\": 3}\n"), 0);
	cr_assert_eq(got[1].nnodes, 0);
	cr_assert_eq(feed("{\"return\": [{" QNODE ", "
	    "\"image\": {\"snapshots\": [{\"id\": \"1\", \"name\": "
	    "\"first\", \"vm-state-size\": 123456789, \"date-sec\": 1}, "
	    "{\"id\": \"2\", \"name\": \"Not A Tag\", \"vm-state-size\": "
	    "5}, {\"id\": \"3\", \"name\": \"disk-only\", "
	    "\"vm-state-size\": 0}]}}], \"id\": 4}\n"), 0);
	cr_assert_eq(got[2].nodes[0].nsnaps, 2);
	cr_assert_str_eq(got[2].nodes[0].snaps[0].name, "first");
	cr_assert_eq(got[2].nodes[0].snaps[0].vm_size, 123456789);
	cr_assert_str_eq(got[2].nodes[0].snaps[1].name, "disk-only");
	cr_assert_eq(got[2].nodes[0].snaps[1].vm_size, 0);

	/* More than it looks at: the first QMP_SNAPS_MAX. */
	p = line + snprintf(line, sizeof(line), "{\"return\": [{" QNODE ", "
	    "\"image\": {\"snapshots\": [");
	for (i = 0; i < QMP_SNAPS_MAX + 3; i++)
		p += snprintf(p, sizeof(line) - (size_t)(p - line),
		    "%s{\"name\": \"s%d\", \"vm-state-size\": %d}",
		    i > 0 ? ", " : "", i, i);
	(void)snprintf(p, sizeof(line) - (size_t)(p - line),
	    "]}}], \"id\": 5}\n");
	cr_assert_eq(feed(line), 0);
	cr_assert_eq(got[3].nodes[0].nsnaps, QMP_SNAPS_MAX);
	cr_assert_str_eq(got[3].nodes[0].snaps[QMP_SNAPS_MAX - 1].name,
	    "s31");

	/* A raw disk: its node is skipped, its state node's are the ones. */
	cr_assert_eq(feed("{\"return\": [{" NODE(QMP_SNAP_NODE, "raw") ", "
	    "\"image\": {}}, {" NODE(QMP_STATE_NODE, "qcow2") ", "
	    "\"image\": {\"snapshots\": [{\"name\": \"t\", "
	    "\"vm-state-size\": 7}]}}], \"id\": 6}\n"), 0);
	cr_assert_eq(got[4].nnodes, 1);
	cr_assert_str_eq(got[4].nodes[0].name, QMP_STATE_NODE);
	cr_assert_eq(got[4].nodes[0].snaps[0].vm_size, 7);

	/* A VM's own disks, the raw one, the UEFI variables and bases not. */
	cr_assert_eq(feed("{\"return\": [{" NODE("disk1", "qcow2") "}, {"
	    NODE("disk0", "qcow2") "}, {" NODE("disk2", "raw") "}, {"
	    NODE("vars", "raw") "}, {" NODE("base0", "qcow2") "}, {"
	    NODE("disk4", "qcow2") "}, {" NODE("disk00", "qcow2") "}], "
	    "\"id\": 7}\n"), 0);
	cr_assert_eq(got[5].nnodes, 2);
	cr_assert_str_eq(got[5].nodes[0].name, "disk1");
	cr_assert_str_eq(got[5].nodes[1].name, "disk0");

	assert_rejected("{\"return\": [{" QNODE "}, {" QNODE "}], "
	    "\"id\": 1}\n");
	assert_rejected("{\"return\": [{\"node-name\": \"" QMP_SNAP_NODE
	    "\"}], \"id\": 1}\n");
	assert_rejected("{\"return\": [{" QNODE ", \"image\": "
	    "{\"snapshots\": [{\"name\": \"a\", \"vm-state-size\": -1}]}}], "
	    "\"id\": 1}\n");
	assert_rejected("{\"return\": [{" QNODE ", \"image\": "
	    "{\"snapshots\": [{\"name\": \"a\"}]}}], \"id\": 1}\n");
	assert_rejected("{\"return\": [{" QNODE ", \"image\": "
	    "{\"snapshots\": {}}}], \"id\": 1}\n");
	assert_rejected("{\"return\": [{" QNODE ", \"image\": []}], "
	    "\"id\": 1}\n");
	assert_rejected("{\"return\": [{\"node-name\": 3}], \"id\": 1}\n");
}

/* ringbuf-read's return: a string, base64, decoded into the message. */
Test(qmp, string_return_decoded)
{
	cr_assert_eq(feed("{\"return\": \"aGVsbG8ACv8=\", \"id\": 9}\r\n"),
	    0);
	cr_assert_eq(ngot, 1);
	cr_assert_eq(got[0].kind, QMP_RETURN);
	cr_assert(got[0].has_data);
	cr_assert_eq(got[0].data_len, 8);
	cr_assert_eq(memcmp(got[0].data, "hello\0\n\xff", 8), 0);
	cr_assert_eq(feed("{\"return\": \"\", \"id\": 10}\n"), 0);
	cr_assert(got[1].has_data);
	cr_assert_eq(got[1].data_len, 0);
	cr_assert_eq(feed("{\"return\": {}, \"id\": 11}\n"), 0);
	cr_assert_not(got[2].has_data);
}

Test(qmp, string_return_invalid_rejected)
{
	assert_rejected("{\"return\": \"aGVsbG8\", \"id\": 1}\n");
	assert_rejected("{\"return\": \"aGVs bG8=\", \"id\": 1}\n");
	assert_rejected("{\"return\": \"aGVsbG8=\\n\", \"id\": 1}\n");
	assert_rejected("{\"return\": \"=aGVsbG8\", \"id\": 1}\n");
	assert_rejected("{\"return\": \"aGVsbG9=\", \"id\": 1}\n");
	assert_rejected("{\"return\": \"hello, world\", \"id\": 1}\n");
	cr_assert_str_eq(p.error, "bad return");
}

/* A string return of exactly QMP_DATA_MAX bytes fits; a byte more not. */
static void
feed_data(size_t n, int want)
{
	static uint8_t	 data[QMP_DATA_MAX + 3];
	static char	 line[QMP_MSG_MAX + 64];
	size_t		 i, len;

	for (i = 0; i < n; i++)
		data[i] = (uint8_t)(i * 31 + 7);
	setup();
	len = (size_t)snprintf(line, sizeof(line), "{\"return\": \"");
	len += b64_encode(data, n, line + len);
	len += (size_t)snprintf(line + len, sizeof(line) - len,
	    "\", \"id\": 4294967295}\r\n");
	cr_assert_eq(qmp_input(&p, line, len, collect, NULL), want,
	    "%zu bytes", n);
	if (want == 0) {
		cr_assert_eq(ngot, 1);
		cr_assert_eq(got[0].data_len, n);
		cr_assert_eq(memcmp(got[0].data, data, n), 0);
	} else
		cr_assert_eq(ngot, 0);
}

Test(qmp, string_return_bounded)
{
	feed_data(QMP_DATA_MAX, 0);
	feed_data(QMP_DATA_MAX - 1, 0);
	feed_data(QMP_DATA_MAX + 1, -1);
	feed_data(QMP_DATA_MAX + 3, -1);
}

Test(qmp, error)
{
	cr_assert_eq(feed("{\"error\": {\"class\": \"GenericError\", "
	    "\"desc\": \"bad\\u0007 thing\"}, \"id\": 3}\n"), 0);
	cr_assert_eq(ngot, 1);
	cr_assert_eq(got[0].kind, QMP_ERROR);
	cr_assert_str_eq(got[0].err_class, "GenericError");
	/* Control characters from QEMU never reach a log or mcvmd. */
	cr_assert_str_eq(got[0].err_desc, "bad? thing");
}

Test(qmp, long_error_description_is_cut)
{
	char	 line[2048];

	memset(line, 0, sizeof(line));
	strcpy(line, "{\"error\": {\"class\": \"X\", \"desc\": \"");
	memset(line + strlen(line), 'd', 1000);
	strcat(line, "\"}}\n");
	cr_assert_eq(feed(line), 0);
	cr_assert_eq(strlen(got[0].err_desc), QMP_TEXT_MAX - 1);
}

Test(qmp, events)
{
	cr_assert_eq(feed("{\"timestamp\": {\"seconds\": 1, \"microseconds\": "
	    "2}, \"event\": \"SHUTDOWN\", \"data\": {\"guest\": false, "
	    "\"reason\": \"host-qmp-quit\"}}\r\n{\"timestamp\": {\"seconds\": "
	    "1, \"microseconds\": 3}, \"event\": \"STOP\"}\r\n"), 0);
	cr_assert_eq(ngot, 2);
	cr_assert_eq(got[0].kind, QMP_EVENT);
	cr_assert_str_eq(got[0].event, "SHUTDOWN");
	cr_assert_str_eq(got[0].detail, "host-qmp-quit");
	cr_assert_str_eq(got[1].event, "STOP");
	cr_assert_str_eq(got[1].detail, "");
}

Test(qmp, split_reads)
{
	size_t	 i;

	/* One byte at a time. */
	for (i = 0; greeting[i] != '\0'; i++) {
		cr_assert_eq(qmp_input(&p, greeting + i, 1, collect, NULL), 0);
		cr_assert_eq(ngot, greeting[i + 1] == '\0' ? 1 : 0);
	}
	cr_assert_eq(got[0].kind, QMP_GREETING);
}

Test(qmp, concatenated_and_split)
{
	const char	*s = "{\"return\": {}, \"id\": 1}\n{\"return\": {}, "
			    "\"id\": 2}\n{\"retu";

	cr_assert_eq(feed(s), 0);
	cr_assert_eq(ngot, 2);
	cr_assert_eq(feed("rn\": {}, \"id\": 3}\n"), 0);
	cr_assert_eq(ngot, 3);
	cr_assert_eq(got[2].id, 3);
}

Test(qmp, largest_line_accepted)
{
	char	*line = malloc(QMP_MSG_MAX);
	size_t	 head;

	cr_assert_not_null(line);
	strcpy(line, "{\"return\": {\"x\": \"");
	head = strlen(line);
	memset(line + head, 'a', QMP_MSG_MAX - head - 5);
	memcpy(line + QMP_MSG_MAX - 5, "\"}}\r\n", 5);
	cr_assert_eq(qmp_input(&p, line, QMP_MSG_MAX, collect, NULL), 0);
	cr_assert_eq(ngot, 1);
	free(line);
}

Test(qmp, oversize_rejected)
{
	char	*junk = malloc(QMP_MSG_MAX + 1);

	cr_assert_not_null(junk);
	memset(junk, ' ', QMP_MSG_MAX + 1);
	cr_assert_eq(qmp_input(&p, junk, QMP_MSG_MAX + 1, collect, NULL), -1);
	cr_assert(p.broken);
	cr_assert(strstr(p.error, "longer") != NULL);
	/* A broken stream stays broken. */
	cr_assert_eq(feed("{\"return\": {}}\n"), -1);
	cr_assert_eq(ngot, 0);
	free(junk);
}

static void
assert_rejected(const char *line)
{
	setup();
	cr_assert_eq(feed(line), -1, "accepted: %s", line);
	cr_assert_eq(ngot, 0);
	cr_assert(p.broken);
}

Test(qmp, garbage_rejected)
{
	assert_rejected("garbage\n");
	assert_rejected("\n");
	assert_rejected("\r\n");
	assert_rejected("[1, 2]\n");
	assert_rejected("\"str\"\n");
	assert_rejected("{\"return\": {}\n");
	assert_rejected("{\"return\": {}, \"return\": {}}\n");
	assert_rejected("{\"return\": {}, \"error\": {\"class\": \"A\", "
	    "\"desc\": \"b\"}}\n");
	assert_rejected("{}\n");
	assert_rejected("{\"other\": 1}\n");
	assert_rejected("{\"return\": {}, \"id\": \"1\"}\n");
	assert_rejected("{\"return\": {}, \"id\": 0}\n");
	assert_rejected("{\"return\": {}, \"id\": -5}\n");
	assert_rejected("{\"return\": {}, \"id\": 4294967296}\n");
	assert_rejected("{\"return\": {}, \"id\": 1.5}\n");
	assert_rejected("{\"return\": {\"status\": \"active\", "
	    "\"running\": 1}}\n");
	assert_rejected("{\"return\": {\"status\": 1, \"running\": true}}\n");
	assert_rejected("{\"return\": {\"status\": \"Run ning\", "
	    "\"running\": true}}\n");
	assert_rejected("{\"error\": \"x\"}\n");
	assert_rejected("{\"error\": {\"class\": \"A b\", \"desc\": \"\"}}\n");
	assert_rejected("{\"error\": {\"desc\": \"d\"}}\n");
	assert_rejected("{\"event\": 5}\n");
	assert_rejected("{\"event\": \"lower\"}\n");
	assert_rejected("{\"event\": \"\"}\n");
	assert_rejected("{\"event\": \"STOP\", \"data\": []}\n");
	assert_rejected("{\"event\": \"RESET\", \"data\": {\"reason\": 1}}\n");
	assert_rejected("{\"QMP\": {}}\n");
	assert_rejected("{\"QMP\": {\"version\": {\"qemu\": {\"major\": 7, "
	    "\"minor\": 2, \"micro\": 99999}}, \"capabilities\": []}}\n");
}

Test(qmp, nul_byte_rejected)
{
	static const char line[] = "{\"return\": \"a\0b\"}\n";

	cr_assert_eq(qmp_input(&p, line, sizeof(line) - 1, collect, NULL), -1);
	cr_assert_eq(ngot, 0);
}

Test(qmp, garbage_after_good_lines)
{
	cr_assert_eq(feed("{\"return\": {}, \"id\": 1}\nnot json\n"
	    "{\"return\": {}, \"id\": 2}\n"), -1);
	cr_assert_eq(ngot, 1);
	cr_assert_str_eq(p.error, "not JSON");
}

Test(qmp, encode_command)
{
	char	 buf[QMP_CMD_MAX];
	json_t	*args, *arr;
	int	 n;

	n = qmp_encode_command(buf, sizeof(buf), "query-status", NULL, 12);
	cr_assert_gt(n, 0);
	cr_assert_str_eq(buf, "{\"execute\": \"query-status\", \"id\": 12}\n");
	cr_assert_eq((size_t)n, strlen(buf));
	args = json_pack("{s:s}", "fdname", "x");
	cr_assert_not_null(args);
	n = qmp_encode_command(buf, sizeof(buf), "getfd", args, 3);
	cr_assert_str_eq(buf, "{\"execute\": \"getfd\", \"arguments\": "
	    "{\"fdname\": \"x\"}, \"id\": 3}\n");
	cr_assert_eq((size_t)n, strlen(buf));
	/* The arguments stay the caller's. */
	cr_assert_eq(args->refcount, 1);
	cr_assert_eq(qmp_encode_command(buf, sizeof(buf), "bad\"name", NULL,
	    1), -1);
	cr_assert_eq(qmp_encode_command(buf, sizeof(buf), "", NULL, 1), -1);
	cr_assert_eq(qmp_encode_command(buf, sizeof(buf), "quit", NULL, 0),
	    -1);
	arr = json_array();
	cr_assert_eq(qmp_encode_command(buf, sizeof(buf), "quit", arr, 1), -1);
	json_decref(arr);
	cr_assert_eq(qmp_encode_command(buf, 10, "quit", NULL, 1), -1);
	cr_assert_eq(qmp_encode_command(buf, 10, "getfd", args, 1), -1);
	json_decref(args);
}

/* An argument is one JSON string whatever it holds: nothing is pasted. */
Test(qmp, encode_arguments_escaped)
{
	static const char	 hostile[] = "x\"}, \"execute\": \"quit\n\\";
	char			 buf[QMP_CMD_MAX];
	json_t			*args, *root, *a;
	json_error_t		 jerr;
	int			 n;

	args = json_pack("{s:s, s:I}", "uri", hostile, "max", 1099511627776LL);
	cr_assert_not_null(args);
	n = qmp_encode_command(buf, sizeof(buf), "migrate", args, 9);
	json_decref(args);
	cr_assert_gt(n, 0);
	/* One line: the newline in the argument was escaped. */
	cr_assert_eq(memchr(buf, '\n', (size_t)n), buf + n - 1);
	root = json_loadb(buf, (size_t)n - 1, JSON_REJECT_DUPLICATES, &jerr);
	cr_assert_not_null(root);
	cr_assert_eq(json_object_size(root), 3);
	cr_assert_str_eq(json_string_value(json_object_get(root, "execute")),
	    "migrate");
	cr_assert_eq(json_integer_value(json_object_get(root, "id")), 9);
	a = json_object_get(root, "arguments");
	cr_assert_eq(json_object_size(a), 2);
	cr_assert_str_eq(json_string_value(json_object_get(a, "uri")),
	    hostile);
	cr_assert_eq(json_integer_value(json_object_get(a, "max")),
	    1099511627776LL);
	json_decref(root);
}
