/*
 * qemu-guest-agent's lines and returns, for the VM monitor (see qga.h).
 * jansson parses each line, rejecting what is not UTF-8; the shape checks
 * that follow are the monitor's own.
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "b64.h"
#include "qga.h"

/* A chunk of file or output bytes fits a line, in base64. */
_Static_assert(B64_ENCODED_LEN(QGA_DATA_MAX) <= QGA_MSG_MAX,
    "a return's bytes do not fit a line");
_Static_assert(QGA_DATA_MAX == QGA_OUTPUT_MAX, "the output tools.c names");

void
qga_parser_init(struct qga_parser *p)
{
	p->len = 0;
	p->skipping = 0;
}

/* The guest's text as printable ASCII, cut to fit. */
static void
qga_copy_text(char *dst, size_t dstlen, const char *src)
{
	size_t	 i;

	for (i = 0; i + 1 < dstlen && src[i] != '\0'; i++)
		dst[i] = (src[i] >= 0x20 && src[i] <= 0x7e) ? src[i] : '?';
	dst[i] = '\0';
}

static void
qga_bad(struct qga_reply *m, const char *why)
{
	m->kind = QGA_BAD;
	m->ret = NULL;
	(void)snprintf(m->err_desc, sizeof(m->err_desc), "%s", why);
}

static int
qga_decode_error(json_t *err, struct qga_reply *m)
{
	json_t	*cls, *desc;

	if (!json_is_object(err) ||
	    !json_is_string(cls = json_object_get(err, "class")) ||
	    !json_is_string(desc = json_object_get(err, "desc")))
		return -1;
	qga_copy_text(m->err_class, sizeof(m->err_class),
	    json_string_value(cls));
	qga_copy_text(m->err_desc, sizeof(m->err_desc),
	    json_string_value(desc));
	return 0;
}

/* One line, without its newline, to cb: root lives through the call. */
static void
qga_line(const char *line, size_t len, qga_cb cb, void *arg)
{
	struct qga_reply m;
	json_t		*root, *ret, *err;
	json_error_t	 jerr;

	memset(&m, 0, sizeof(m));
	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len == 0)
		return;		/* the agent's own resync sends blank lines */
	if ((root = json_loadb(line, len, JSON_REJECT_DUPLICATES,
	    &jerr)) == NULL) {
		qga_bad(&m, "not JSON");
		cb(&m, arg);
		return;
	}
	ret = json_object_get(root, "return");
	err = json_object_get(root, "error");
	if (!json_is_object(root) || (ret == NULL) == (err == NULL) ||
	    qmp_json_id(root, &m.has_id, &m.id) == -1)
		qga_bad(&m, "not an answer of qemu-guest-agent");
	else if (ret != NULL) {
		m.kind = QGA_RETURN;
		m.ret = ret;
	} else if (qga_decode_error(err, &m) == 0)
		m.kind = QGA_ERROR;
	else
		qga_bad(&m, "a malformed error");
	cb(&m, arg);
	json_decref(root);
}

void
qga_input(struct qga_parser *p, const void *data, size_t n, qga_cb cb,
    void *arg)
{
	const uint8_t	*src = data;
	struct qga_reply m;
	size_t		 i;
	uint8_t		 c;

	for (i = 0; i < n; i++) {
		c = src[i];
		if (c == QGA_DELIM) {
			p->len = 0;
			p->skipping = 0;
			continue;
		}
		if (p->skipping) {
			if (c == '\n')
				p->skipping = 0;
			continue;
		}
		if (c == '\n') {
			qga_line(p->buf, p->len, cb, arg);
			p->len = 0;
			continue;
		}
		if (p->len == sizeof(p->buf) - 1) {
			memset(&m, 0, sizeof(m));
			m.kind = QGA_OVERSIZE;
			(void)snprintf(m.err_desc, sizeof(m.err_desc),
			    "an answer longer than %d bytes", QGA_MSG_MAX);
			p->len = 0;
			p->skipping = 1;
			cb(&m, arg);
			continue;
		}
		p->buf[p->len++] = (char)c;
	}
}

/* --- the returns */

static int
qga_get_int(json_t *obj, const char *key, int64_t min, int64_t max,
    int64_t *v)
{
	json_t		*j = json_object_get(obj, key);
	json_int_t	 n;

	if (!json_is_integer(j))
		return -1;
	n = json_integer_value(j);
	if (n < min || n > max)
		return -1;
	*v = n;
	return 0;
}

/* An optional boolean: absent is false. */
static int
qga_get_bool(json_t *obj, const char *key, int *v)
{
	json_t	*j = json_object_get(obj, key);

	if (j == NULL) {
		*v = 0;
		return 0;
	}
	if (!json_is_boolean(j))
		return -1;
	*v = json_is_true(j);
	return 0;
}

/* Optional base64 bytes, into buf of cap bytes. */
static int
qga_get_b64(json_t *obj, const char *key, uint8_t *buf, size_t cap,
    size_t *len)
{
	json_t	*j = json_object_get(obj, key);
	size_t	 n;
	long	 d;

	*len = 0;
	if (j == NULL)
		return 0;
	if (!json_is_string(j))
		return -1;
	n = json_string_length(j);
	if (B64_DECODED_MAX(n) > cap ||
	    (d = b64_decode(json_string_value(j), n, buf)) == -1)
		return -1;
	*len = (size_t)d;
	return 0;
}

int
qga_ret_int(json_t *ret, int64_t min, int64_t max, int64_t *v)
{
	json_int_t	 n;

	if (!json_is_integer(ret))
		return -1;
	n = json_integer_value(ret);
	if (n < min || n > max)
		return -1;
	*v = n;
	return 0;
}

int
qga_ret_exec(json_t *ret, int32_t *pid)
{
	int64_t	 n;

	if (!json_is_object(ret) ||
	    qga_get_int(ret, "pid", 1, QGA_PID_MAX, &n) == -1)
		return -1;
	*pid = (int32_t)n;
	return 0;
}

int
qga_ret_exec_status(json_t *ret, struct qga_exec_status *st, uint8_t *out,
    uint8_t *err)
{
	int64_t	 n;

	memset(st, 0, sizeof(*st));
	if (!json_is_object(ret) ||
	    qga_get_bool(ret, "exited", &st->exited) == -1 ||
	    json_object_get(ret, "exited") == NULL)
		return -1;
	if (json_object_get(ret, "exitcode") != NULL) {
		if (qga_get_int(ret, "exitcode", 0, 255, &n) == -1)
			return -1;
		st->has_code = 1;
		st->code = (int32_t)n;
	}
	if (json_object_get(ret, "signal") != NULL) {
		if (qga_get_int(ret, "signal", 1, 127, &n) == -1)
			return -1;
		st->has_signal = 1;
		st->signal = (int32_t)n;
	}
	/* A process still running has no status and no output yet. */
	if (!st->exited)
		return st->has_code || st->has_signal ||
		    json_object_get(ret, "out-data") != NULL ||
		    json_object_get(ret, "err-data") != NULL ? -1 : 0;
	if (st->has_code == st->has_signal)
		return -1;
	if (qga_get_b64(ret, "out-data", out, QGA_DATA_MAX,
	    &st->out_len) == -1 ||
	    qga_get_b64(ret, "err-data", err, QGA_DATA_MAX,
	    &st->err_len) == -1 ||
	    qga_get_bool(ret, "out-truncated", &st->out_truncated) == -1 ||
	    qga_get_bool(ret, "err-truncated", &st->err_truncated) == -1)
		return -1;
	return 0;
}

int
qga_ret_file_read(json_t *ret, uint8_t *buf, size_t cap, size_t *len,
    int *eof)
{
	int64_t	 count;

	if (!json_is_object(ret) ||
	    qga_get_int(ret, "count", 0, (int64_t)cap, &count) == -1 ||
	    !json_is_string(json_object_get(ret, "buf-b64")) ||
	    qga_get_b64(ret, "buf-b64", buf, cap, len) == -1 ||
	    *len != (size_t)count ||
	    !json_is_boolean(json_object_get(ret, "eof")))
		return -1;
	return qga_get_bool(ret, "eof", eof);
}

int
qga_ret_file_write(json_t *ret, uint64_t *count)
{
	int64_t	 n;

	if (!json_is_object(ret) ||
	    qga_get_int(ret, "count", 0, INT64_MAX, &n) == -1)
		return -1;
	*count = (uint64_t)n;
	return 0;
}

int
qga_ret_file_seek(json_t *ret, uint64_t *pos)
{
	int64_t	 n;

	if (!json_is_object(ret) ||
	    qga_get_int(ret, "position", 0, INT64_MAX, &n) == -1)
		return -1;
	*pos = (uint64_t)n;
	return 0;
}

/* --- a listing */

/* Decimal (or octal) digits and the space after them, at most max. */
static int
qga_field(const char **p, const char *end, int base, uint64_t max,
    uint64_t *v)
{
	const char	*s = *p;
	uint64_t	 n = 0;
	unsigned int	 d;

	if (s == end || *s < '0' || *s > '0' + base - 1)
		return -1;
	while (s < end && *s >= '0' && *s <= '0' + base - 1) {
		d = (unsigned int)(*s - '0');
		if (d > max || n > (max - d) / (uint64_t)base)
			return -1;
		n = n * (uint64_t)base + d;
		s++;
	}
	if (s == end || *s != ' ')
		return -1;
	*p = s + 1;
	*v = n;
	return 0;
}

/* %T@: seconds, perhaps negative, with a fraction, which is dropped. */
static int
qga_field_time(const char **p, const char *end, int64_t *t)
{
	const char	*s = *p;
	uint64_t	 n;
	int		 neg = 0;

	if (s < end && *s == '-') {
		neg = 1;
		s++;
	}
	n = 0;
	while (s < end && *s >= '0' && *s <= '9') {
		if (n > (uint64_t)INT64_MAX / 10 - 1)
			return -1;
		n = n * 10 + (uint64_t)(*s++ - '0');
	}
	if (s < end && *s == '.')
		for (s++; s < end && *s >= '0' && *s <= '9'; s++)
			;
	if (s == *p + neg || s == end || *s != ' ')
		return -1;
	*p = s + 1;
	*t = neg ? -(int64_t)n : (int64_t)n;
	return 0;
}

static uint8_t
qga_ftype(char c)
{
	switch (c) {
	case 'f':
		return AGENT_FTYPE_FILE;
	case 'd':
		return AGENT_FTYPE_DIR;
	case 'l':
		return AGENT_FTYPE_SYMLINK;
	default:
		return AGENT_FTYPE_OTHER;
	}
}

int
qga_list_parse(const uint8_t *buf, size_t len, size_t max, struct qga_list *l)
{
	const char		*p = (const char *)buf, *end = p + len, *rec;
	const char		*nul;
	struct agent_dirent	*e;
	uint64_t		 depth, mode, size;
	int64_t			 mtime;
	size_t			 nlen;
	char			 type;

	l->n = 0;
	l->truncated = 0;
	l->used = 0;
	while (p < end) {
		if ((nul = memchr(p, '\0', (size_t)(end - p))) == NULL) {
			l->truncated = 1;	/* cut by the guest's bound */
			break;
		}
		rec = p;
		p = nul + 1;
		if (qga_field(&rec, nul, 10, AGENT_LIST_DEPTH_MAX,
		    &depth) == -1 || depth == 0 || nul - rec < 2 ||
		    rec[1] != ' ')
			return -1;
		type = rec[0];
		rec += 2;
		if (qga_field(&rec, nul, 8, 07777, &mode) == -1 ||
		    qga_field(&rec, nul, 10, INT64_MAX, &size) == -1 ||
		    qga_field_time(&rec, nul, &mtime) == -1)
			return -1;
		nlen = (size_t)(nul - rec);
		if (nlen == 0 || nlen >= AGENT_PATH_MAX || rec[0] == '/')
			return -1;
		if (l->n == max || nlen + 1 > sizeof(l->pool) - l->used) {
			l->truncated = 1;
			break;
		}
		e = &l->ents[l->n++];
		memcpy(l->pool + l->used, rec, nlen + 1);
		e->name = l->pool + l->used;
		l->used += nlen + 1;
		e->type = qga_ftype(type);
		e->mode = (uint32_t)mode;
		e->size = size;
		e->mtime = mtime;
	}
	return 0;
}

/* An optional string: absent or not a string is empty. */
static void
qga_get_text(json_t *obj, const char *key, char *dst, size_t len)
{
	json_t	*j = json_object_get(obj, key);

	dst[0] = '\0';
	if (json_is_string(j))
		qga_copy_text(dst, len, json_string_value(j));
}

int
qga_ret_info(json_t *ret, char *version, size_t len)
{
	if (!json_is_object(ret) ||
	    !json_is_string(json_object_get(ret, "version")))
		return -1;
	qga_get_text(ret, "version", version, len);
	return version[0] == '\0' ? -1 : 0;
}

int
qga_ret_osinfo(json_t *ret, char *os, size_t oslen, char *kernel,
    size_t klen)
{
	if (!json_is_object(ret))
		return -1;
	qga_get_text(ret, "pretty-name", os, oslen);
	if (os[0] == '\0')
		qga_get_text(ret, "name", os, oslen);
	qga_get_text(ret, "kernel-release", kernel, klen);
	return 0;
}
