/*
 * The serial console (IMSG_VMM_SERIAL_READ).  QEMU keeps what the guest
 * writes in its ringbuf chardev, which overwrites its oldest bytes, so a
 * flood never blocks the guest; ringbuf-read takes bytes out of it.  The
 * monitor keeps its own ring of the last VMM_SERIAL_RING bytes, which
 * lives as long as the monitor (a paused VM's console stays readable;
 * mcvmd keeps a stopped one's end).  Each request drains QEMU's ring
 * into it, then answers with its end:
 *
 *	serial_start	ringbuf-read, base64		-> serial_got
 *	serial_got	append; a full chunk: read again, at most
 *			SERIAL_READS_MAX times (a guest that floods
 *			refills QEMU's ring as fast as it is read);
 *			then SERIAL_DATA
 *
 * base64, not utf8: QEMU's utf8 format drops NUL bytes and mangles
 * others.  The answer is decoded here, from the ring's raw bytes.
 */
#include <errno.h>
#include <string.h>

#include "log.h"
#include "qmp.h"
#include "utf8.h"
#include "vmm.h"

#define SERIAL_DEVICE		"serial0"	/* mcvmd's chardev id */
#define SERIAL_CHUNK		QMP_DATA_MAX	/* asked per read */
#define SERIAL_READS_MAX	(2 * VMM_SERIAL_RING / SERIAL_CHUNK + 1)
#define SERIAL_CHAR_MAX		4	/* bytes of a UTF-8 character */

static struct {
	uint8_t		 ring[VMM_SERIAL_RING];
	uint64_t	 total;		/* bytes ever appended */
	uint8_t		 raw[VMM_SERIAL_OUT_MAX + SERIAL_CHAR_MAX];
	char		 out[UTF8_DECODED_MAX(VMM_SERIAL_OUT_MAX +
			    SERIAL_CHAR_MAX)];
	int		 reads;		/* of this request */
} ser;

static void	 serial_read(struct vmm_req *);
static void	 serial_got(struct vmm_req *, const struct qmp_msg *);

static void
serial_append(const uint8_t *p, size_t n)
{
	size_t	 at, take;

	while (n > 0) {
		at = (size_t)(ser.total % VMM_SERIAL_RING);
		take = VMM_SERIAL_RING - at;
		if (take > n)
			take = n;
		memcpy(ser.ring + at, p, take);
		ser.total += take;
		p += take;
		n -= take;
	}
}

/* Skips the continuation bytes of a character cut at raw[start]. */
static size_t
serial_resync(const uint8_t *raw, size_t len, size_t start)
{
	size_t	 i;

	for (i = 0; i < SERIAL_CHAR_MAX - 1 && start < len &&
	    (raw[start] & 0xc0) == 0x80; i++)
		start++;
	return start;
}

/*
 * raw[start..len) decoded into out (room for UTF8_DECODED_MAX of it),
 * NUL bytes replaced too, as job output has them: mcvmd's text has none.
 * Returns the bytes consumed; *n is the text's length.
 */
static size_t
serial_decode(const uint8_t *raw, size_t len, size_t start, char *out,
    size_t *n, int *errs)
{
	size_t	 used, i, o, nul = 0;

	*errs = 0;
	used = utf8_decode(raw + start, len - start, 0, out, n, errs);
	for (i = 0; i < *n; i++)
		nul += out[i] == '\0';
	if (nul == 0)
		return used;
	/* Each NUL is a byte of input, so its 3 bytes fit: from the end. */
	o = *n + 2 * nul;
	for (i = *n; i-- > 0;) {
		if (out[i] != '\0') {
			out[--o] = out[i];
			continue;
		}
		o -= 3;
		memcpy(out + o, "\xef\xbf\xbd", 3);
	}
	*n += 2 * nul;
	*errs = 1;
	return used;
}

/*
 * The end of a stream's raw[0..len) as text of at most max bytes into out
 * (room for UTF8_DECODED_MAX(len)): invalid UTF-8 and NUL replaced
 * (*replaced set), a character cut at the end held back (it may be completed
 * later), one cut at the start dropped.  line_start says raw[0] begins
 * a line; if it does not, the text starts after the first newline, when
 * one is there with text after it.  *whole says the text begins a line.
 * Returns the text's length.
 */
size_t
vmm_serial_tail(const uint8_t *raw, size_t len, int line_start, char *out,
    size_t max, uint32_t *whole, uint32_t *replaced)
{
	const uint8_t	*nl;
	size_t		 start = 0, used, n, over;
	int		 errs;

	if (!line_start)
		start = serial_resync(raw, len, 0);
	for (;;) {
		used = serial_decode(raw, len, start, out, &n, &errs);
		if (n <= max)
			break;
		/* A byte dropped takes at most 3 from the text: never drop
		 * more than must go. */
		over = n - max;
		start = serial_resync(raw, len, start + (over + 2) / 3);
		line_start = 0;
	}
	*whole = line_start && start == 0;
	if (!*whole && (nl = memchr(raw + start, '\n', used)) != NULL &&
	    (size_t)(nl - raw) + 1 < start + used) {
		start = (size_t)(nl - raw) + 1;
		(void)serial_decode(raw, len, start, out, &n, &errs);
		*whole = 1;
	}
	*replaced = errs != 0;
	return n;
}

static void
serial_start(struct vmm_req *r, const union vmm_args *unused)
{
	ser.reads = 0;
	serial_read(r);
}

static void
serial_read(struct vmm_req *r)
{
	ser.reads++;
	vmm_qmp_send(r, "ringbuf-read", vmm_qmp_args("{s:s, s:i, s:s}",
	    "device", SERIAL_DEVICE, "size", SERIAL_CHUNK, "format",
	    "base64"), serial_got);
}

static void
serial_answer(struct vmm_req *r)
{
	struct msg_vmm_serial_data	 d;
	struct ibuf			*b;
	uint64_t			 kept, from, at;
	size_t				 len, first;
	int				 line_start;

	/* The last raw bytes kept, in order. */
	kept = ser.total < VMM_SERIAL_RING ? ser.total : VMM_SERIAL_RING;
	len = kept < sizeof(ser.raw) ? (size_t)kept : sizeof(ser.raw);
	from = ser.total - len;
	at = from % VMM_SERIAL_RING;
	first = VMM_SERIAL_RING - (size_t)at;
	if (first > len)
		first = len;
	memcpy(ser.raw, ser.ring + at, first);
	memcpy(ser.raw + first, ser.ring, len - first);
	/* The byte before them is kept too: len is well below the ring. */
	line_start = from == 0 ||
	    ser.ring[(from - 1) % VMM_SERIAL_RING] == '\n';

	memset(&d, 0, sizeof(d));
	d.total = ser.total;
	d.len = vmm_serial_tail(ser.raw, len, line_start, ser.out,
	    VMM_SERIAL_OUT_MAX, &d.whole, &d.replaced);
	d.data = ser.out;
	b = vmm_answer_begin(r, IMSG_VMM_SERIAL_DATA);
	msg_vmm_serial_data_put(b, &d);
	vmm_answer_end(r, b);
}

static void
serial_got(struct vmm_req *r, const struct qmp_msg *m)
{
	if (!m->has_data) {
		vmm_fail(r, VMM_ERR_QMP, EBADMSG,
		    "ringbuf-read returned no data");
		return;
	}
	if (m->data_len > SERIAL_CHUNK) {
		vmm_fail(r, VMM_ERR_QMP, EBADMSG,
		    "ringbuf-read returned more than asked");
		return;
	}
	serial_append(m->data, m->data_len);
	if (m->data_len == SERIAL_CHUNK && ser.reads < SERIAL_READS_MAX) {
		serial_read(r);
		return;
	}
	if (m->data_len == SERIAL_CHUNK)
		log_debug("serial console: still more after %d reads",
		    ser.reads);
	serial_answer(r);
}

VMM_GET_NONE(serial_read)
VMM_OP(serial_read, IMSG_VMM_SERIAL_READ, "serial read", VMM_CHAN_QMP,
    VMM_OP_QMP_UP | VMM_OP_QUEUE, VMM_REQ_TIMEOUT_MS, get_serial_read,
    serial_start, NULL);
