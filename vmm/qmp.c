/*
 * QMP decoding and encoding for the VM monitor (see qmp.h).  jansson
 * parses each line; the shape checks that follow are the monitor's own.
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "b64.h"
#include "qmp.h"

#define QMP_VERSION_PART_MAX	65535

/* A string return's base64, on one line with the rest of its message. */
_Static_assert(QMP_DATA_MAX % 3 == 0, "base64 of QMP_DATA_MAX is padded");
_Static_assert(B64_ENCODED_LEN(QMP_DATA_MAX) + 64 <= QMP_MSG_MAX,
    "a string return of QMP_DATA_MAX bytes does not fit a line");

void
qmp_parser_init(struct qmp_parser *p)
{
	p->len = 0;
	p->broken = 0;
	p->error[0] = '\0';
}

/* Copies QEMU's text as printable ASCII, cut to fit. */
static void
qmp_copy_text(char *dst, size_t dstlen, const char *src)
{
	size_t	 i;

	for (i = 0; i + 1 < dstlen && src[i] != '\0'; i++)
		dst[i] = (src[i] >= 0x20 && src[i] <= 0x7e) ? src[i] : '?';
	dst[i] = '\0';
}

/* A name made only of the characters in set, 1 to QMP_NAME_MAX-1 long. */
static int
qmp_copy_name(char *dst, const char *src, const char *set)
{
	size_t	 n = strlen(src);

	if (n == 0 || n >= QMP_NAME_MAX || strspn(src, set) != n)
		return -1;
	memcpy(dst, src, n + 1);
	return 0;
}

static int
qmp_fail(char *why, size_t whylen, const char *what)
{
	if (why != NULL && whylen > 0)
		snprintf(why, whylen, "%s", what);
	return -1;
}

static int
qmp_get_part(json_t *obj, const char *key, unsigned int *v)
{
	json_t		*j = json_object_get(obj, key);
	json_int_t	 n;

	if (!json_is_integer(j))
		return -1;
	n = json_integer_value(j);
	if (n < 0 || n > QMP_VERSION_PART_MAX)
		return -1;
	*v = (unsigned int)n;
	return 0;
}

static int
qmp_decode_greeting(json_t *qmp, struct qmp_msg *m)
{
	json_t	*ver, *qemu;

	if (!json_is_object(qmp) ||
	    !json_is_object(ver = json_object_get(qmp, "version")) ||
	    !json_is_object(qemu = json_object_get(ver, "qemu")) ||
	    !json_is_array(json_object_get(qmp, "capabilities")))
		return -1;
	if (qmp_get_part(qemu, "major", &m->major) == -1 ||
	    qmp_get_part(qemu, "minor", &m->minor) == -1 ||
	    qmp_get_part(qemu, "micro", &m->micro) == -1)
		return -1;
	return 0;
}

/*
 * A reply's "id": the monitor sends small positive integers, which QMP
 * and the guest agent echo.  Returns 0, with *has_id set if there is one,
 * or -1 if it is anything else.
 */
int
qmp_json_id(json_t *root, int *has_id, uint32_t *id)
{
	json_t		*v = json_object_get(root, "id");
	json_int_t	 n;

	if (v == NULL)
		return 0;
	if (!json_is_integer(v))
		return -1;
	n = json_integer_value(v);
	if (n < 1 || n > (json_int_t)UINT32_MAX)
		return -1;
	*has_id = 1;
	*id = (uint32_t)n;
	return 0;
}

/* A string return: base64, of at most QMP_DATA_MAX bytes decoded. */
static int
qmp_decode_data(json_t *ret, struct qmp_msg *m)
{
	size_t	 len = json_string_length(ret);
	long	 n;

	if (len > B64_ENCODED_LEN(QMP_DATA_MAX))
		return -1;
	if ((n = b64_decode(json_string_value(ret), len, m->data)) == -1)
		return -1;
	m->data_len = (size_t)n;
	m->has_data = 1;
	return 0;
}

/* A tag as the monitor names its snapshots: [a-z0-9._-], 1 to 64. */
static int
qmp_snap_name(char *dst, const char *src)
{
	size_t	 n = strlen(src);

	if (n == 0 || n >= QMP_SNAP_TAG_MAX ||
	    strspn(src, "abcdefghijklmnopqrstuvwxyz0123456789._-") != n)
		return -1;
	memcpy(dst, src, n + 1);
	return 0;
}

/* Whether a node's name is one that may hold a VM's snapshots. */
static int
qmp_snap_node_name(const char *s)
{
	return strcmp(s, QMP_SNAP_NODE) == 0 ||
	    strcmp(s, QMP_STATE_NODE) == 0 ||
	    (strncmp(s, QMP_SNAP_NODE, sizeof(QMP_SNAP_NODE) - 1) == 0 &&
	    s[sizeof(QMP_SNAP_NODE) - 1] >= '0' &&
	    s[sizeof(QMP_SNAP_NODE) - 1] < '0' + VM_DISKS_MAX &&
	    s[sizeof(QMP_SNAP_NODE)] == '\0');
}

/* One BlockDeviceInfo: a qcow2 node of those names, and its snapshots. */
static int
qmp_decode_node(json_t *node, json_t *name, struct qmp_msg *m)
{
	json_t		*image, *snaps, *sn, *sname, *size, *drv;
	json_int_t	 n;
	size_t		 i;
	const char	*s;
	struct qmp_node	*q;

	if (!json_is_string(name))
		return -1;
	s = json_string_value(name);
	if (!qmp_snap_node_name(s))
		return 0;
	if (!json_is_string(drv = json_object_get(node, "drv")))
		return -1;
	if (strcmp(json_string_value(drv), "qcow2") != 0)
		return 0;
	for (i = 0; i < m->nnodes; i++)
		if (strcmp(m->nodes[i].name, s) == 0)
			return -1;		/* the node listed twice */
	if (m->nnodes == QMP_NODES_MAX)
		return -1;			/* cannot be: names differ */
	q = &m->nodes[m->nnodes++];
	(void)snprintf(q->name, sizeof(q->name), "%s", s);
	if ((image = json_object_get(node, "image")) == NULL)
		return 0;
	if (!json_is_object(image))
		return -1;
	if ((snaps = json_object_get(image, "snapshots")) == NULL)
		return 0;
	if (!json_is_array(snaps))
		return -1;
	json_array_foreach(snaps, i, sn) {
		if (!json_is_object(sn) ||
		    !json_is_string(sname = json_object_get(sn, "name")) ||
		    !json_is_integer(size = json_object_get(sn,
		    "vm-state-size")))
			return -1;
		if ((n = json_integer_value(size)) < 0)
			return -1;
		if (q->nsnaps == QMP_SNAPS_MAX ||
		    qmp_snap_name(q->snaps[q->nsnaps].name,
		    json_string_value(sname)) == -1)
			continue;
		q->snaps[q->nsnaps++].vm_size = (uint64_t)n;
	}
	return 0;
}

/* One JobInfo: the monitor's job, if it is that. */
static int
qmp_decode_job(json_t *job, json_t *id, struct qmp_msg *m)
{
	json_t	*status, *err;

	if (!json_is_string(id))
		return -1;
	if (strcmp(json_string_value(id), QMP_JOB_ID) != 0)
		return 0;
	if (m->has_job ||
	    !json_is_string(status = json_object_get(job, "status")) ||
	    qmp_copy_name(m->job_status, json_string_value(status),
	    "abcdefghijklmnopqrstuvwxyz-") == -1)
		return -1;
	m->has_job = 1;
	if ((err = json_object_get(job, "error")) != NULL) {
		if (!json_is_string(err))
			return -1;
		qmp_copy_text(m->job_error, sizeof(m->job_error),
		    json_string_value(err));
		m->has_job_error = 1;
	}
	return 0;
}

/* An array return: of objects only, each a job or a block node. */
static int
qmp_decode_list(json_t *ret, struct qmp_msg *m)
{
	json_t	*e, *v;
	size_t	 i;

	json_array_foreach(ret, i, e) {
		if (!json_is_object(e))
			return -1;
		if ((v = json_object_get(e, "node-name")) != NULL) {
			if (qmp_decode_node(e, v, m) == -1)
				return -1;
		} else if ((v = json_object_get(e, "id")) != NULL) {
			if (qmp_decode_job(e, v, m) == -1)
				return -1;
		}
	}
	return 0;
}

static int
qmp_decode_return(json_t *ret, struct qmp_msg *m)
{
	json_t		*status, *running, *fdset;
	json_int_t	 n;

	if (json_is_string(ret))
		return qmp_decode_data(ret, m);
	if (json_is_array(ret))
		return qmp_decode_list(ret, m);
	if (!json_is_object(ret))
		return 0;
	if ((fdset = json_object_get(ret, "fdset-id")) != NULL) {
		if (!json_is_integer(fdset))
			return -1;
		n = json_integer_value(fdset);
		if (n < 0 || n > QMP_FDSET_MAX)
			return -1;
		m->fdset = (uint32_t)n;
		m->has_fdset = 1;
	}
	if ((status = json_object_get(ret, "status")) != NULL) {
		if (!json_is_string(status) || qmp_copy_name(m->status,
		    json_string_value(status), "abcdefghijklmnopqrstuvwxyz-") ==
		    -1)
			return -1;
		m->has_status = 1;
	}
	if ((running = json_object_get(ret, "running")) != NULL) {
		if (!json_is_boolean(running))
			return -1;
		m->running = json_is_true(running);
		m->has_running = 1;
	}
	return 0;
}

static int
qmp_decode_error(json_t *err, struct qmp_msg *m)
{
	json_t	*class, *desc;

	if (!json_is_object(err) ||
	    !json_is_string(class = json_object_get(err, "class")) ||
	    !json_is_string(desc = json_object_get(err, "desc")))
		return -1;
	if (qmp_copy_name(m->err_class, json_string_value(class),
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
	    == -1)
		return -1;
	qmp_copy_text(m->err_desc, sizeof(m->err_desc),
	    json_string_value(desc));
	return 0;
}

static int
qmp_decode_event(json_t *root, json_t *ev, struct qmp_msg *m)
{
	json_t	*data, *reason, *open;

	if (!json_is_string(ev) || qmp_copy_name(m->event,
	    json_string_value(ev), "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") ==
	    -1)
		return -1;
	data = json_object_get(root, "data");
	if (data == NULL)
		return 0;
	if (!json_is_object(data))
		return -1;
	if ((open = json_object_get(data, "open")) != NULL) {
		if (!json_is_boolean(open))
			return -1;
		m->open = json_is_true(open);
		m->has_open = 1;
	}
	reason = json_object_get(data, "reason");
	if (reason != NULL) {
		if (!json_is_string(reason))
			return -1;
		qmp_copy_text(m->detail, sizeof(m->detail),
		    json_string_value(reason));
	}
	return 0;
}

int
qmp_decode_line(const char *line, size_t len, struct qmp_msg *m, char *why,
    size_t whylen)
{
	json_t		*root, *greeting, *ret, *err, *ev;
	json_error_t	 jerr;
	int		 kinds, rv = -1;
	const char	*what = "not a QMP message";

	memset(m, 0, sizeof(*m));
	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len == 0)
		return qmp_fail(why, whylen, "empty line");
	root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL)
		return qmp_fail(why, whylen, "not JSON");
	if (!json_is_object(root)) {
		json_decref(root);
		return qmp_fail(why, whylen, "not a JSON object");
	}
	greeting = json_object_get(root, "QMP");
	ret = json_object_get(root, "return");
	err = json_object_get(root, "error");
	ev = json_object_get(root, "event");
	kinds = (greeting != NULL) + (ret != NULL) + (err != NULL) +
	    (ev != NULL);
	if (kinds != 1)
		goto out;
	if (greeting != NULL) {
		m->kind = QMP_GREETING;
		what = "bad greeting";
		rv = qmp_decode_greeting(greeting, m);
	} else if (ret != NULL) {
		m->kind = QMP_RETURN;
		what = "bad return";
		rv = qmp_json_id(root, &m->has_id, &m->id);
		if (rv == 0)
			rv = qmp_decode_return(ret, m);
	} else if (err != NULL) {
		m->kind = QMP_ERROR;
		what = "bad error";
		rv = qmp_json_id(root, &m->has_id, &m->id);
		if (rv == 0)
			rv = qmp_decode_error(err, m);
	} else {
		m->kind = QMP_EVENT;
		what = "bad event";
		rv = qmp_decode_event(root, ev, m);
	}
 out:
	json_decref(root);
	if (rv == -1)
		return qmp_fail(why, whylen, what);
	return 0;
}

int
qmp_input(struct qmp_parser *p, const void *data, size_t n, qmp_cb cb,
    void *arg)
{
	const char	*src = data;
	struct qmp_msg	 m;
	char		*nl;
	size_t		 take, start, linelen;

	if (p->broken)
		return -1;
	while (n > 0) {
		take = sizeof(p->buf) - p->len;
		if (take > n)
			take = n;
		memcpy(p->buf + p->len, src, take);
		p->len += take;
		src += take;
		n -= take;

		start = 0;
		while ((nl = memchr(p->buf + start, '\n', p->len - start)) !=
		    NULL) {
			linelen = (size_t)(nl - (p->buf + start));
			if (qmp_decode_line(p->buf + start, linelen, &m,
			    p->error, sizeof(p->error)) == -1) {
				p->broken = 1;
				return -1;
			}
			start += linelen + 1;
			cb(&m, arg);
		}
		if (start > 0) {
			memmove(p->buf, p->buf + start, p->len - start);
			p->len -= start;
		}
		if (p->len == sizeof(p->buf)) {
			snprintf(p->error, sizeof(p->error),
			    "message longer than %d bytes", QMP_MSG_MAX);
			p->broken = 1;
			return -1;
		}
	}
	return 0;
}

int
qmp_encode_command(char *buf, size_t cap, const char *cmd, json_t *args,
    uint32_t id)
{
	json_t	*root;
	size_t	 n = strlen(cmd);

	if (n == 0 || n >= QMP_NAME_MAX ||
	    strspn(cmd, "abcdefghijklmnopqrstuvwxyz_-") != n || id == 0 ||
	    (args != NULL && !json_is_object(args)) || cap < 2)
		return -1;
	if ((root = json_object()) == NULL)
		return -1;
	if (json_object_set_new(root, "execute", json_string(cmd)) == -1 ||
	    (args != NULL && json_object_set(root, "arguments", args) == -1) ||
	    json_object_set_new(root, "id", json_integer(id)) == -1) {
		json_decref(root);
		return -1;
	}
	/* Room for the newline and a NUL after it. */
	n = json_dumpb(root, buf, cap - 2, 0);
	json_decref(root);
	if (n == 0 || n > cap - 2)
		return -1;
	buf[n++] = '\n';
	buf[n] = '\0';
	return (int)n;
}
