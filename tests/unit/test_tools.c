/*
 * The shared tool catalogue: the table's consistency (one entry per tool,
 * parameter indices matching their arrays, descriptions rendered from the
 * constants and true to this build), the value checks, the readers by
 * index, and the wire codec, whose decoder must refuse anything frontd
 * would not have sent.
 */
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_proto.h"
#include "dispatch.h"
#include "imsg.h"
#include "msg.h"
#include "tools.h"
#include "validate.h"

static char	 err[TOOL_ERR_MAX];

/* Encodes args, then decodes them back into out. */
static int
roundtrip(const struct tool_args *a, struct tool_args *out,
    struct ibuf **keep)
{
	struct imsgbuf	 ib;
	struct mreader	 r;
	struct ibuf	*b;

	cr_assert_eq(imsgbuf_init(&ib, -1), 0);
	b = imsg_create(&ib, 1, 0, 0, 64);
	cr_assert_not_null(b);
	tool_args_encode(b, a);
	cr_assert_eq(b->err, 0);
	m_init_buf(&r, b->buf + IMSG_HDR_SIZE, b->size - IMSG_HDR_SIZE);
	*keep = b;
	imsgbuf_clear(&ib);
	return tool_args_decode(&r, a->tool, out, err, sizeof(err));
}

static void
ibuf_done(struct ibuf *b)
{
	free(b->buf);
	free(b);
}

static int
decode_bytes(const struct tool_desc *t, const uint8_t *p, size_t n)
{
	struct mreader		 r;
	struct tool_args	 out;

	m_init_buf(&r, p, n);
	return tool_args_decode(&r, t, &out, err, sizeof(err));
}

Test(tools, table_is_consistent)
{
	size_t	 i, k, m;

	cr_assert_eq(TOOL_COUNT, 38);
	for (i = 0; i < TOOL_COUNT; i++) {
		const struct tool_desc *t = &tool_table[i];

		cr_assert_eq(t->id, (enum tool_id)(i + 1), "%s", t->name);
		cr_assert_eq(tool_by_id(t->id), t);
		cr_assert_eq(tool_by_name(t->name), t);
		cr_assert_leq(t->nparams, TOOL_PARAMS_MAX, "%s", t->name);
		/* read-only tools are never destructive */
		cr_assert(!((t->flags & TF_READONLY) &&
		    (t->flags & TF_DESTRUCTIVE)), "%s", t->name);
		for (k = 0; k < t->nparams; k++) {
			cr_assert_not_null(t->params[k].doc);
			for (m = k + 1; m < t->nparams; m++)
				cr_assert_str_neq(t->params[k].name,
				    t->params[m].name, "%s", t->name);
		}
	}
	cr_assert_null(tool_by_id(0));
	cr_assert_null(tool_by_id(TOOL_ID_END));
	cr_assert_null(tool_by_name("vm_nope"));
}

Test(tools, roundtrip_every_type)
{
	const struct tool_desc	*create = tool_by_name("vm_create");
	const struct tool_desc	*out = tool_by_name("vm_job_output");
	const struct tool_desc	*wr = tool_by_name("vm_write_file");
	struct tool_args	 a, b;
	struct ibuf		*keep;
	static const uint8_t	 data[] = { 0, 1, 2, 0xff };

	memset(&a, 0, sizeof(a));
	a.tool = create;
	a.v[P_VM_CREATE_REQUEST_ID] =
	    (struct tool_value){ .present = 1, .s = "create-1" };
	a.v[P_VM_CREATE_MEMORY_MIB] =
	    (struct tool_value){ .present = 1, .i = 1024 };
	a.v[P_VM_CREATE_NETWORK] =
	    (struct tool_value){ .present = 1, .i = 1 };
	a.v[P_VM_CREATE_PORT_FORWARDS] =
	    (struct tool_value){ .present = 1, .nlist = 2,
	    .list = { "auto:22", "8080:80" } };
	cr_assert_eq(roundtrip(&a, &b, &keep), 0, "%s", err);
	cr_assert_str_eq(TOOL_STR(&b, VM_CREATE, REQUEST_ID), "create-1");
	cr_assert_eq(TOOL_INT(&b, VM_CREATE, MEMORY_MIB, 0), 1024);
	cr_assert_eq(TOOL_INT(&b, VM_CREATE, NETWORK, 0), 1);
	cr_assert_eq(TOOL_ARG(&b, VM_CREATE, PORT_FORWARDS)->nlist, 2);
	cr_assert_str_eq(TOOL_ARG(&b, VM_CREATE, PORT_FORWARDS)->list[1],
	    "8080:80");
	cr_assert_null(TOOL_ARG(&b, VM_CREATE, VCPUS));
	cr_assert_eq(TOOL_INT(&b, VM_CREATE, VCPUS, 3), 3);
	cr_assert_null(TOOL_STR(&b, VM_CREATE, NAME));
	/* frontd's lookup by name finds the same index */
	cr_assert_eq(tool_param_index(create, "port_forwards"),
	    P_VM_CREATE_PORT_FORWARDS);
	ibuf_done(keep);

	memset(&a, 0, sizeof(a));
	a.tool = out;
	a.v[P_VM_JOB_OUTPUT_VM_ID] = (struct tool_value){ .present = 1,
	    .s = "vm-0123456789abcdef" };
	a.v[P_VM_JOB_OUTPUT_JOB_ID] = (struct tool_value){ .present = 1,
	    .s = "job-0123456789abcdef" };
	a.v[P_VM_JOB_OUTPUT_CURSOR] = (struct tool_value){ .present = 1,
	    .cursor = { 17, 4 } };
	cr_assert_eq(roundtrip(&a, &b, &keep), 0, "%s", err);
	cr_assert_eq(TOOL_ARG(&b, VM_JOB_OUTPUT, CURSOR)->cursor[0], 17);
	cr_assert_eq(TOOL_ARG(&b, VM_JOB_OUTPUT, CURSOR)->cursor[1], 4);
	cr_assert_str_eq(TOOL_STR(&b, VM_JOB_OUTPUT, JOB_ID),
	    "job-0123456789abcdef");
	ibuf_done(keep);

	memset(&a, 0, sizeof(a));
	a.tool = wr;
	a.v[P_VM_WRITE_FILE_VM_ID] = (struct tool_value){ .present = 1,
	    .s = "vm-0123456789abcdef" };
	a.v[P_VM_WRITE_FILE_PATH] = (struct tool_value){ .present = 1,
	    .s = "dir/file.txt" };
	a.v[P_VM_WRITE_FILE_CONTENT_BASE64] = (struct tool_value){
	    .present = 1, .b = data, .blen = sizeof(data) };
	a.v[P_VM_WRITE_FILE_APPEND] = (struct tool_value){ .present = 1,
	    .i = 1 };
	cr_assert_eq(roundtrip(&a, &b, &keep), 0, "%s", err);
	cr_assert_eq(b.v[P_VM_WRITE_FILE_CONTENT_BASE64].blen, sizeof(data));
	cr_assert_eq(memcmp(b.v[P_VM_WRITE_FILE_CONTENT_BASE64].b, data,
	    sizeof(data)), 0);
	cr_assert_eq(TOOL_INT(&b, VM_WRITE_FILE, APPEND, 0), 1);
	ibuf_done(keep);
}

Test(tools, decoder_refuses_what_frontd_never_sends)
{
	const struct tool_desc	*st = tool_by_name("vm_status");
	/* count 1, param id 1, str "vm-0123456789abcdef" */
	uint8_t	 good[] = { MF_U32, 1, 0, 0, 0, MF_U32, 1, 0, 0, 0,
	    MF_STR, 20, 0, 0, 0, 'v', 'm', '-', '0', '1', '2', '3', '4', '5',
	    '6', '7', '8', '9', 'a', 'b', 'c', 'd', 'e', 'f', 0 };
	uint8_t	 buf[sizeof(good) + 1];

	cr_assert_eq(decode_bytes(st, good, sizeof(good)), 0, "%s", err);
	/* unknown parameter id */
	memcpy(buf, good, sizeof(good));
	buf[6] = 2;
	cr_assert_eq(decode_bytes(st, buf, sizeof(good)), -1);
	/* wrong tag for the value */
	memcpy(buf, good, sizeof(good));
	buf[10] = MF_BYTES;
	cr_assert_eq(decode_bytes(st, buf, sizeof(good)), -1);
	/* trailing byte */
	memcpy(buf, good, sizeof(good));
	buf[sizeof(good)] = 0;
	cr_assert_eq(decode_bytes(st, buf, sizeof(buf)), -1);
	/* a value that fails the id check */
	memcpy(buf, good, sizeof(good));
	buf[15] = 'V';
	cr_assert_eq(decode_bytes(st, buf, sizeof(good)), -1);
	/* count larger than the parameters */
	memcpy(buf, good, sizeof(good));
	buf[1] = 2;
	cr_assert_eq(decode_bytes(st, buf, sizeof(good)), -1);
	/* missing required parameter */
	memset(buf, 0, 5);
	buf[0] = MF_U32;
	cr_assert_eq(decode_bytes(st, buf, 5), -1);
	cr_assert(strstr(err, "vm_id is required") != NULL, "%s", err);
}

Test(tools, decoder_refuses_repeats_and_out_of_range)
{
	const struct tool_desc	*rd = tool_by_name("vm_serial_read");
	uint8_t	 buf[64];
	size_t	 n = 0;

	/* count 2: tail_lines twice, after a valid vm_id is not present */
	buf[n++] = MF_U32; buf[n++] = 2; buf[n++] = 0; buf[n++] = 0;
	buf[n++] = 0;
	buf[n++] = MF_U32; buf[n++] = 2; buf[n++] = 0; buf[n++] = 0;
	buf[n++] = 0;
	buf[n++] = MF_U64; memset(buf + n, 0, 8); buf[n] = 5; n += 8;
	buf[n++] = MF_U32; buf[n++] = 2; buf[n++] = 0; buf[n++] = 0;
	buf[n++] = 0;
	buf[n++] = MF_U64; memset(buf + n, 0, 8); buf[n] = 5; n += 8;
	cr_assert_eq(decode_bytes(rd, buf, n), -1);
	cr_assert(strstr(err, "parameter id") != NULL, "%s", err);
}

Test(tools, value_checks)
{
	const struct tool_desc	*create = tool_by_name("vm_create");
	const struct tool_param	*mem, *fw, *net, *path, *key, *size;
	const struct tool_desc	*rf = tool_by_name("vm_read_file");
	const struct tool_desc	*keys = tool_by_name("vm_send_keys");
	const struct tool_desc	*img = tool_by_name("image_create");
	struct tool_value	 v;

	mem = &create->params[P_VM_CREATE_MEMORY_MIB];
	fw = &create->params[P_VM_CREATE_PORT_FORWARDS];
	net = &create->params[P_VM_CREATE_NETWORK];
	path = &rf->params[P_VM_READ_FILE_PATH];
	key = &keys->params[P_VM_SEND_KEYS_KEYS];
	size = &img->params[P_IMAGE_CREATE_SIZE];

	v = (struct tool_value){ .present = 1, .i = VM_MEMORY_MIN_MIB - 1 };
	cr_assert_eq(tool_value_check(mem, &v, err, sizeof(err)), -1);
	v.i = VM_MEMORY_MAX_MIB;
	cr_assert_eq(tool_value_check(mem, &v, err, sizeof(err)), 0);
	v = (struct tool_value){ .present = 1, .i = 2 };
	cr_assert_eq(tool_value_check(net, &v, err, sizeof(err)), -1);

	v = (struct tool_value){ .present = 1, .nlist = 1,
	    .list = { "auto:22" } };
	cr_assert_eq(tool_value_check(fw, &v, err, sizeof(err)), 0);
	for (const char *const *p = (const char *const[]){ "0", "70000",
	    "auto:", ":22", "x:22", "22:", "1:2:3", NULL }; *p; p++) {
		v.list[0] = *p;
		cr_assert_eq(tool_value_check(fw, &v, err, sizeof(err)), -1,
		    "%s", *p);
	}

	v = (struct tool_value){ .present = 1 };
	for (const char *const *p = (const char *const[]){ "a", "a/b.txt",
	    "./x", "a..b", "/workspace", "/workspace/", "/workspace/src/a.py",
	    NULL }; *p; p++) {
		v.s = *p;
		cr_assert_eq(tool_value_check(path, &v, err,
		    sizeof(err)), 0, "%s", *p);
	}
	for (const char *const *p = (const char *const[]){ "/etc/passwd",
	    "..", "a/../../b", "a/..", "x\ny", "", "\xff", "/workspacex/a",
	    "/workspace/../etc", "/", "/work", NULL }; *p; p++) {
		v.s = *p;
		cr_assert_eq(tool_value_check(path, &v, err,
		    sizeof(err)), -1, "%s", *p);
	}

	v = (struct tool_value){ .present = 1, .nlist = 1 };
	for (const char *const *p = (const char *const[]){ "ret",
	    "ctrl-alt-f2", "shift-a", NULL }; *p; p++) {
		v.list[0] = *p;
		cr_assert_eq(tool_value_check(key, &v, err,
		    sizeof(err)), 0, "%s", *p);
	}
	for (const char *const *p = (const char *const[]){ "ctrl-", "-a",
	    "a b", "Ret", NULL }; *p; p++) {
		v.list[0] = *p;
		cr_assert_eq(tool_value_check(key, &v, err,
		    sizeof(err)), -1, "%s", *p);
	}

	v = (struct tool_value){ .present = 1 };
	for (const char *const *p = (const char *const[]){ "20G", "+10G",
	    "512", "1T", NULL }; *p; p++) {
		v.s = *p;
		cr_assert_eq(tool_value_check(size, &v, err,
		    sizeof(err)), 0, "%s", *p);
	}
	for (const char *const *p = (const char *const[]){ "G", "10GB",
	    "-1G", "1.5G", "9999999999999999G", NULL }; *p; p++) {
		v.s = *p;
		cr_assert_eq(tool_value_check(size, &v, err,
		    sizeof(err)), -1, "%s", *p);
	}
}

/* Every tool of TOOL_LIST has exactly one entry, at its place. */
Test(tools, one_entry_per_tool_in_list_order)
{
	size_t	 i, n, seen = 0;

#define ENTRY(e, v, str)						\
	do {								\
		cr_assert_eq(tool_table[(v) - 1].id, (e), "%s", str);	\
		cr_assert_str_eq(tool_table[(v) - 1].name, str);	\
		for (i = 0, n = 0; i < TOOL_COUNT; i++)			\
			if (strcmp(tool_table[i].name, str) == 0)	\
				n++;					\
		cr_assert_eq(n, 1, "%s: %zu entries", str, n);	\
		cr_assert_eq((size_t)(v), ++seen, "%s", str);		\
	} while (0);
	TOOL_LIST(ENTRY)
#undef ENTRY
	cr_assert_eq(seen, TOOL_COUNT);
}

/*
 * Each parameter enum matches its tool's array: the same count, and the
 * parameter at P_<TOOL>_<NAME> is called <name>.  TOOL_PARAMS lists the
 * tools in table order.
 */
static size_t	 param_tool;	/* TOOL_PARAMS position */
static size_t	 param_seen;	/* parameters of the tool checked */

static void
param_check(enum tool_id id, int index, const char *upper)
{
	const struct tool_desc	*t = tool_by_id(id);
	char			 lower[64];
	size_t			 i;

	cr_assert_not_null(t);
	cr_assert_lt((size_t)index, t->nparams, "%s %s", t->name, upper);
	cr_assert_lt(strlen(upper), sizeof(lower));
	for (i = 0; upper[i] != '\0'; i++)
		lower[i] = (char)tolower((unsigned char)upper[i]);
	lower[i] = '\0';
	cr_assert_not_null(t->params[index].name, "%s: a hole at %d",
	    t->name, index);
	cr_assert_str_eq(t->params[index].name, lower, "%s[%d]", t->name,
	    index);
	cr_assert_eq((size_t)index, param_seen, "%s %s", t->name, upper);
	param_seen++;
}

Test(tools, parameter_indices_match_the_arrays)
{
	param_tool = 0;
#define PARAM(t, p)	param_check(TOOL_##t, P_##t##_##p, #p);
#define TOOL(t)								\
	do {								\
		param_seen = 0;						\
		cr_assert_eq(TOOL_##t, (enum tool_id)++param_tool, #t);	\
		PARAMS_##t(PARAM, t)					\
		cr_assert_eq(param_seen, P_##t##_NPARAMS, #t);		\
		cr_assert_eq(tool_by_id(TOOL_##t)->nparams,		\
		    (size_t)P_##t##_NPARAMS, #t);				\
		cr_assert_eq(tool_by_id(TOOL_##t)->params == NULL,	\
		    P_##t##_NPARAMS == 0, #t);				\
	} while (0);
	TOOL_PARAMS(TOOL)
#undef TOOL
#undef PARAM
	cr_assert_eq(param_tool, TOOL_COUNT);
	cr_assert_eq(P_VM_EXEC_COMMAND, 2);
	cr_assert_eq(P_VM_CREATE_NPARAMS, 15);
	cr_assert_eq(P_VM_LIST_NPARAMS, 0);
}

/* The target's parameters come first, as P_TARGET and P_TARGET_SUB. */
Test(tools, target_parameters_come_first)
{
	const struct tool_desc	*t;
	const char		*first, *second;
	size_t			 i;

	for (i = 0; i < TOOL_COUNT; i++) {
		t = &tool_table[i];
		first = t->nparams > P_TARGET ? t->params[P_TARGET].name :
		    NULL;
		second = t->nparams > P_TARGET_SUB ?
		    t->params[P_TARGET_SUB].name : NULL;
		switch (t->target) {
		case TT_NONE:
			break;
		case TT_VM:
		case TT_VM_LIVE:
		case TT_VM_RUNNING:
		case TT_VM_AGENT:
			cr_assert_str_eq(first, "vm_id", "%s", t->name);
			break;
		case TT_JOB:
			cr_assert_str_eq(first, "vm_id", "%s", t->name);
			cr_assert_str_eq(second, "job_id", "%s", t->name);
			break;
		case TT_IMAGE:
			cr_assert_not_null(first, "%s", t->name);
			cr_assert(strcmp(first, "name") == 0 ||
			    strcmp(first, "source") == 0, "%s", t->name);
			break;
		case TT_SNAPSHOT:
			cr_assert_not_null(first, "%s", t->name);
			cr_assert(strcmp(first, "vm_id") == 0 ||
			    strcmp(first, "name") == 0, "%s", t->name);
			cr_assert_str_eq(second, "tag", "%s", t->name);
			break;
		default:
			cr_assert_fail("%s: target %d", t->name, t->target);
		}
	}
}

/* A table text, rendered; it must render and leave no placeholder. */
static const char *
render(const char *what, const char *text)
{
	static char	 buf[TOOL_DOC_MAX];

	cr_assert_not_null(text, "%s", what);
	cr_assert_eq(tool_render(text, buf, sizeof(buf)), 0, "%s: %s", what,
	    text);
	cr_assert_null(strstr(buf, "${"), "%s: %s", what, buf);
	cr_assert_null(strchr(buf, '$'), "%s: %s", what, buf);
	return buf;
}

Test(tools, every_tool_has_its_texts)
{
	const struct tool_desc	*t;
	const struct tool_param	*p;
	size_t			 i, k;

	for (i = 0; i < TOOL_COUNT; i++) {
		t = &tool_table[i];
		cr_assert_not_null(t->title, "%s", t->name);
		cr_assert_gt(strlen(render(t->name, t->description)), 40,
		    "%s", t->name);
		cr_assert_not_null(t->output, "%s", t->name);
		cr_assert_eq(t->output[0], '{', "%s", t->name);
		cr_assert_gt(t->budget, 0, "%s", t->name);
		for (k = 0; k < t->nparams; k++) {
			p = &t->params[k];
			cr_assert_gt(strlen(render(p->name, p->doc)), 0);
			if (p->defval != NULL)
				(void)render(p->name, p->defval);
		}
	}
}

/* Whether text holds before, the number n, then after. */
static int
mentions(const char *text, const char *before, long long n,
    const char *after)
{
	char	 want[64];

	(void)snprintf(want, sizeof(want), "%s%lld%s", before, n, after);
	return strstr(text, want) != NULL;
}

static const char *
described(const char *tool)
{
	return render(tool, tool_by_name(tool)->description);
}

Test(tools, descriptions_quote_the_constants)
{
	const struct tool_desc	*t;

	cr_assert(mentions(described("vm_read_file"), "(at most ",
	    TOOL_FILE_MAX / 1024, " KiB)"));
	cr_assert(mentions(described("vm_write_file"), "at most ",
	    TOOL_FILE_MAX / 1024, " KiB"));
	cr_assert(mentions(described("vm_list_files"), "At most ",
	    AGENT_LIST_MAX, " entries"));
	cr_assert(mentions(described("vm_list_files"), "(at most ",
	    AGENT_LIST_DEPTH_MAX, ")"));
	cr_assert(mentions(described("vm_status"), "at most ",
	    VM_STATUS_JOBS_MAX, ", newest first"));
	cr_assert(mentions(described("vm_status"), "cut to ",
	    VM_STATUS_COMMAND_MAX, " bytes"));
	cr_assert(mentions(described("vm_exec"), "At most ",
	    AGENT_JOBS_ACTIVE_MAX, " jobs run at once"));
	cr_assert(mentions(described("vm_exec"), "keeps the last ",
	    AGENT_JOBS_TOTAL_MAX, "."));
	cr_assert(mentions(described("vm_exec"), "(",
	    TOOL_EXEC_TIMEOUT_DEFAULT, " by default)"));
	cr_assert(mentions(described("vm_exec"), "as uid ", AGENT_JOB_UID,
	    " "));
	cr_assert(mentions(described("vm_exec"), "under ",
	    AGENT_ARG_MAX / 1024, " KiB"));
	cr_assert(mentions(described("vm_stop"), "(",
	    TOOL_STOP_TIMEOUT_DEFAULT, " by default)"));
	cr_assert(mentions(described("vm_job_output"), "Up to ",
	    AGENT_PAGE_MAX / 1024, " KiB per stream"));
	cr_assert(mentions(described("vm_job_output"), "the first ",
	    AGENT_JOB_HEAD_MAX / 1024, " KiB and the "));
	cr_assert(mentions(described("vm_job_output"), "last ",
	    AGENT_JOB_TAIL_MAX / 1024, " KiB are kept"));
	cr_assert(mentions(described("vm_job_output"), "minus ",
	    AGENT_JOB_TAIL_MAX, ". "));
	cr_assert(mentions(described("vm_job_status"), "the first ",
	    AGENT_JOB_HEAD_MAX / 1024, " KiB"));
	cr_assert(mentions(described("vm_type_text"), "; ",
	    TOOL_TYPE_TEXT_MAX, " characters"));

	/* parameter docs and defaults too */
	t = tool_by_name("vm_exec");
	cr_assert(mentions(render("wait",
	    t->params[P_VM_EXEC_WAIT_SECONDS].doc), "(at most ",
	    TOOL_WAIT_MAX, ")"));
	cr_assert(mentions(render("timeout",
	    t->params[P_VM_EXEC_TIMEOUT_SECONDS].defval), "",
	    TOOL_EXEC_TIMEOUT_DEFAULT, ""));
	t = tool_by_name("vm_read_file");
	cr_assert_str_eq(render("max_bytes",
	    t->params[P_VM_READ_FILE_MAX_BYTES].defval), "131072");
	cr_assert_eq(TOOL_FILE_MAX, 131072);
	cr_assert_eq(t->params[P_VM_READ_FILE_MAX_BYTES].max, TOOL_FILE_MAX);
	t = tool_by_name("vm_stop");
	cr_assert(mentions(render("timeout",
	    t->params[P_VM_STOP_TIMEOUT_SECONDS].defval), "",
	    TOOL_STOP_TIMEOUT_DEFAULT, ""));
}

Test(tools, render_refuses_what_it_cannot_fill)
{
	char	 buf[32];

	cr_assert_eq(tool_render("${TOOL_WAIT_MAX} s", buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "50 s");
	cr_assert_eq(tool_render("$ and {} stay", buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "$ and {} stay");
	cr_assert_eq(tool_render("${NO_SUCH}", buf, sizeof(buf)), -1);
	cr_assert_eq(tool_render("${TOOL_WAIT_MAX", buf, sizeof(buf)), -1);
	cr_assert_eq(tool_render("${TOOL_WAIT}", buf, sizeof(buf)), -1);
	cr_assert_eq(tool_render("${TOOL_FILE_MAX}", buf, 6), -1);
	cr_assert_eq(tool_render("${TOOL_FILE_MAX}", buf, 7), 0);
	cr_assert_str_eq(buf, "131072");
	cr_assert_eq(tool_render("0123456789", buf, 10), -1);
}

/*
 * The descriptions promise nothing this build lacks: the tools without an
 * implementation in mcvmd (test_dispatch.c lists them) say so first, and
 * no description claims an ACPI shutdown; hibernation is vm_suspend's
 * default, and vm_create's idle_mode's.
 */
Test(tools, descriptions_tell_what_is_built)
{
	static const char *const untrue[] = {
		"ACPI",
		"(512)", "(1)", NULL
	};
	const char	*d;
	size_t		 i, k;
	int		 listed;

	for (i = 0; i < TOOL_COUNT; i++) {
		d = render(tool_table[i].name, tool_table[i].description);
		listed = dispatch_impl(tool_table[i].id) == NULL;
		cr_assert_eq(strncmp(d, "Not available in this build yet",
		    31) == 0, listed, "%s: %s", tool_table[i].name, d);
		for (k = 0; untrue[k] != NULL; k++)
			cr_assert_null(strstr(d, untrue[k]), "%s: %s",
			    tool_table[i].name, untrue[k]);
		for (k = 0; k < tool_table[i].nparams; k++)
			cr_assert_null(strstr(tool_table[i].params[k].doc,
			    "(512)"), "%s", tool_table[i].name);
	}
	d = described("vm_suspend");
	cr_assert(strstr(d, "mode=\"hibernate\" (the default)") != NULL);
	d = described("vm_create");
	cr_assert(strstr(d, "is suspended, and woken") != NULL);
}

/* A reader asked for another tool's parameter is a bug: fatal. */
Test(tools, reader_of_another_tool_is_fatal, .exit_code = 1)
{
	struct tool_args	 a;

	memset(&a, 0, sizeof(a));
	a.tool = tool_by_id(TOOL_VM_STATUS);
	(void)TOOL_STR(&a, VM_EXEC, VM_ID);
}

Test(tools, reader_of_the_wrong_type_is_fatal, .exit_code = 1)
{
	struct tool_args	 a;

	memset(&a, 0, sizeof(a));
	a.tool = tool_by_id(TOOL_VM_EXEC);
	(void)TOOL_INT(&a, VM_EXEC, COMMAND, 0);
}

/*
 * A description writes no number itself: outside quoted examples
 * ("20G") and names (f2, content_base64), digits come from ${NAME}.
 */
Test(tools, descriptions_take_numbers_from_constants)
{
	const char	*d, *p;
	size_t		 i;
	int		 quoted, placeholder;

	for (i = 0; i < TOOL_COUNT; i++) {
		d = tool_table[i].description;
		quoted = placeholder = 0;
		for (p = d; *p != '\0'; p++) {
			if (*p == '"')
				quoted = !quoted;
			else if (p[0] == '$' && p[1] == '{')
				placeholder = 1;
			else if (*p == '}')
				placeholder = 0;
			else if (isdigit((unsigned char)*p) && !quoted &&
			    !placeholder && (p == d ||
			    !isalnum((unsigned char)p[-1])))
				cr_assert_fail("%s: a number written out at "
				    "\"%.20s\"", tool_table[i].name, p);
		}
	}
	cr_assert(strstr(tool_by_name("vm_read_file")->description,
	    "${TOOL_FILE_MAX_KIB} KiB") != NULL);
}
