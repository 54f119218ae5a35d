/*
 * libFuzzer target for the VM monitor's QMP decoder: the bytes a
 * (possibly hostile) QEMU writes on its monitor socket.  The first input
 * byte chooses how the rest is split into reads, so that lines cut at
 * every place are exercised.  Every message the decoder hands out must
 * hold only bounded, printable text, and bytes within their bound.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qmp.h"

int	 LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct qmp_parser	 parser;

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
check(const struct qmp_msg *m, void *arg)
{
	(void)arg;
	if (m->kind < QMP_GREETING || m->kind > QMP_EVENT)
		abort();
	if (m->has_id && m->id == 0)
		abort();
	check_text(m->err_class, sizeof(m->err_class));
	check_text(m->err_desc, sizeof(m->err_desc));
	check_text(m->event, sizeof(m->event));
	check_text(m->detail, sizeof(m->detail));
	check_text(m->status, sizeof(m->status));
	if (m->kind == QMP_EVENT && m->event[0] == '\0')
		abort();
	if (m->has_status && m->status[0] == '\0')
		abort();
	if (m->data_len > sizeof(m->data) || (!m->has_data && m->data_len))
		abort();
	if (m->has_fdset && m->fdset > QMP_FDSET_MAX)
		abort();
	if (m->kind != QMP_RETURN && (m->has_data || m->has_fdset))
		abort();
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
	qmp_parser_init(&parser);
	for (off = 0; off < size; off += n) {
		n = size - off < chunk ? size - off : chunk;
		if (qmp_input(&parser, data + off, n, check, NULL) == -1) {
			if (!parser.broken || parser.error[0] == '\0')
				abort();
			break;
		}
		if (parser.len >= sizeof(parser.buf))
			abort();
	}
	return 0;
}
