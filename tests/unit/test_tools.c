/*
 * The shared tool catalogue: the table's consistency, the value checks,
 * and the wire codec, whose decoder must refuse anything frontd would not
 * have sent.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

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

	cr_assert_eq(TOOL_COUNT, 34);
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
	a.v[tool_param_index(create, "request_id")] =
	    (struct tool_value){ .present = 1, .s = "create-1" };
	a.v[tool_param_index(create, "memory_mib")] =
	    (struct tool_value){ .present = 1, .i = 1024 };
	a.v[tool_param_index(create, "network")] =
	    (struct tool_value){ .present = 1, .i = 1 };
	a.v[tool_param_index(create, "port_forwards")] =
	    (struct tool_value){ .present = 1, .nlist = 2,
	    .list = { "auto:22", "8080:80" } };
	cr_assert_eq(roundtrip(&a, &b, &keep), 0, "%s", err);
	cr_assert_str_eq(tool_arg_str(&b, "request_id"), "create-1");
	cr_assert_eq(b.v[tool_param_index(create, "memory_mib")].i, 1024);
	cr_assert_eq(b.v[tool_param_index(create, "network")].i, 1);
	cr_assert_eq(b.v[tool_param_index(create, "port_forwards")].nlist, 2);
	cr_assert_str_eq(b.v[tool_param_index(create,
	    "port_forwards")].list[1], "8080:80");
	cr_assert(!b.v[tool_param_index(create, "vcpus")].present);
	ibuf_done(keep);

	memset(&a, 0, sizeof(a));
	a.tool = out;
	a.v[0] = (struct tool_value){ .present = 1,
	    .s = "vm-0123456789abcdef" };
	a.v[1] = (struct tool_value){ .present = 1,
	    .s = "job-0123456789abcdef" };
	a.v[2] = (struct tool_value){ .present = 1, .cursor = { 17, 4 } };
	cr_assert_eq(roundtrip(&a, &b, &keep), 0, "%s", err);
	cr_assert_eq(b.v[2].cursor[0], 17);
	cr_assert_eq(b.v[2].cursor[1], 4);
	ibuf_done(keep);

	memset(&a, 0, sizeof(a));
	a.tool = wr;
	a.v[0] = (struct tool_value){ .present = 1,
	    .s = "vm-0123456789abcdef" };
	a.v[1] = (struct tool_value){ .present = 1, .s = "dir/file.txt" };
	a.v[2] = (struct tool_value){ .present = 1, .b = data,
	    .blen = sizeof(data) };
	a.v[3] = (struct tool_value){ .present = 1, .i = 1 };
	cr_assert_eq(roundtrip(&a, &b, &keep), 0, "%s", err);
	cr_assert_eq(b.v[2].blen, sizeof(data));
	cr_assert_eq(memcmp(b.v[2].b, data, sizeof(data)), 0);
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
	const struct tool_param	*mem, *fw, *net;
	const struct tool_desc	*rf = tool_by_name("vm_read_file");
	const struct tool_desc	*keys = tool_by_name("vm_send_keys");
	const struct tool_desc	*img = tool_by_name("image_create");
	struct tool_value	 v;

	mem = &create->params[tool_param_index(create, "memory_mib")];
	fw = &create->params[tool_param_index(create, "port_forwards")];
	net = &create->params[tool_param_index(create, "network")];

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
	    "./x", "a..b", NULL }; *p; p++) {
		v.s = *p;
		cr_assert_eq(tool_value_check(&rf->params[1], &v, err,
		    sizeof(err)), 0, "%s", *p);
	}
	for (const char *const *p = (const char *const[]){ "/etc/passwd",
	    "..", "a/../../b", "a/..", "x\ny", "", "\xff", NULL }; *p; p++) {
		v.s = *p;
		cr_assert_eq(tool_value_check(&rf->params[1], &v, err,
		    sizeof(err)), -1, "%s", *p);
	}

	v = (struct tool_value){ .present = 1, .nlist = 1 };
	for (const char *const *p = (const char *const[]){ "ret",
	    "ctrl-alt-f2", "shift-a", NULL }; *p; p++) {
		v.list[0] = *p;
		cr_assert_eq(tool_value_check(&keys->params[1], &v, err,
		    sizeof(err)), 0, "%s", *p);
	}
	for (const char *const *p = (const char *const[]){ "ctrl-", "-a",
	    "a b", "Ret", NULL }; *p; p++) {
		v.list[0] = *p;
		cr_assert_eq(tool_value_check(&keys->params[1], &v, err,
		    sizeof(err)), -1, "%s", *p);
	}

	v = (struct tool_value){ .present = 1 };
	for (const char *const *p = (const char *const[]){ "20G", "+10G",
	    "512", "1T", NULL }; *p; p++) {
		v.s = *p;
		cr_assert_eq(tool_value_check(&img->params[1], &v, err,
		    sizeof(err)), 0, "%s", *p);
	}
	for (const char *const *p = (const char *const[]){ "G", "10GB",
	    "-1G", "1.5G", "9999999999999999G", NULL }; *p; p++) {
		v.s = *p;
		cr_assert_eq(tool_value_check(&img->params[1], &v, err,
		    sizeof(err)), -1, "%s", *p);
	}
}
