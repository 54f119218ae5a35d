/*
 * libFuzzer target for the VM monitor's qemu-guest-agent decoder: the
 * bytes a (possibly hostile) guest writes on its agent port.  The first
 * input byte chooses how the rest is split into reads, so that lines cut
 * at every place are exercised.  Every answer the decoder hands out must
 * hold only bounded, printable text, and each return is read by every
 * reader of the backend, whose values must stay within their bounds; an
 * exited process's output is read as a listing too.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qga.h"

int	 LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct qga_parser	 parser;
static uint8_t			 out[QGA_DATA_MAX], err[QGA_DATA_MAX];
static uint8_t			 buf[128 * 1024];
static struct qga_list		 list;

/* A listing's entries: within their bounds, their names in the pool. */
static void
check_list(const struct qga_list *l)
{
	size_t	 i, n;

	if (l->n > AGENT_LIST_MAX || l->used > sizeof(l->pool))
		abort();
	for (i = 0; i < l->n; i++) {
		n = strlen(l->ents[i].name);
		if (n == 0 || n >= AGENT_PATH_MAX ||
		    l->ents[i].name < l->pool ||
		    l->ents[i].name + n >= l->pool + l->used ||
		    l->ents[i].mode > 07777 ||
		    l->ents[i].type >= AGENT_FTYPE_MAX)
			abort();
	}
}

static void
check_text(const char *s, size_t max)
{
	size_t	 i, n = strnlen(s, max);

	if (n >= max)
		abort();
	for (i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			abort();
}

static void
check_returns(json_t *ret)
{
	struct qga_exec_status	 st;
	char			 a[64], b[64];
	int64_t			 v;
	int32_t			 pid;
	uint64_t		 n;
	size_t			 len;
	int			 eof;

	if (qga_ret_int(ret, 1, UINT32_MAX, &v) == 0 &&
	    (v < 1 || v > UINT32_MAX))
		abort();
	if (qga_ret_exec(ret, &pid) == 0 && pid < 1)
		abort();
	if (qga_ret_exec_status(ret, &st, out, err) == 0 && st.exited &&
	    qga_list_parse(out, st.out_len, AGENT_LIST_MAX, &list) == 0)
		check_list(&list);
	if (qga_ret_exec_status(ret, &st, out, err) == 0 &&
	    (st.out_len > QGA_DATA_MAX || st.err_len > QGA_DATA_MAX ||
	    (st.exited && st.has_code == st.has_signal) ||
	    (st.has_code && (st.code < 0 || st.code > 255)) ||
	    (st.has_signal && (st.signal < 1 || st.signal > 127))))
		abort();
	if (qga_ret_file_read(ret, buf, sizeof(buf), &len, &eof) == 0 &&
	    len > sizeof(buf))
		abort();
	(void)qga_ret_file_write(ret, &n);
	(void)qga_ret_file_seek(ret, &n);
	if (qga_ret_info(ret, a, sizeof(a)) == 0)
		check_text(a, sizeof(a));
	if (qga_ret_osinfo(ret, a, sizeof(a), b, sizeof(b)) == 0) {
		check_text(a, sizeof(a));
		check_text(b, sizeof(b));
	}
}

static void
check(const struct qga_reply *m, void *arg)
{
	(void)arg;
	if (m->kind < QGA_RETURN || m->kind > QGA_OVERSIZE)
		abort();
	if (m->has_id && m->id == 0)
		abort();
	check_text(m->err_class, sizeof(m->err_class));
	check_text(m->err_desc, sizeof(m->err_desc));
	if ((m->kind == QGA_RETURN) != (m->ret != NULL))
		abort();
	if (m->kind == QGA_RETURN)
		check_returns(m->ret);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t	 chunk, off, n;

	if (size == 0)
		return 0;
	chunk = (size_t)data[0] + 1;
	data++;
	size--;
	qga_parser_init(&parser);
	for (off = 0; off < size; off += n) {
		n = size - off < chunk ? size - off : chunk;
		qga_input(&parser, data + off, n, check, NULL);
		if (parser.len >= sizeof(parser.buf))
			abort();
	}
	return 0;
}
