/*
 * libFuzzer target for mcvmd's readers of what it does not trust: the
 * messages of a VM monitor (monitor.c, the request table's callbacks in
 * tool-*.c) and
 * the requests of a control-socket client (control.c).  mcvmd's own
 * sources run here with a real state.db in a directory made once per
 * process; what stands in for the rest:
 *
 *	frontd		a socketpair; the target makes tool calls
 *			through dispatch_run() with arguments encoded and
 *			decoded by tools.c, and reads every answer as
 *			frontd does;
 *	stored, netd	socketpairs; stored's requests are answered as a
 *			well-behaved stored would (a disk delete and a
 *			checkpoint file succeed, a disk fails), netd's are
 *			read and dropped; the one image configured is never
 *			reported, so that a vm_create waits for it until it
 *			is cancelled or frontd goes;
 *	the monitor	a socketpair attached with vm_monitor_attach() to a
 *			VM the target puts in the list; the input is written
 *			to it as imsg frames;
 *	processes	none: the VM's QEMU and monitor are gone (pid 0) or
 *			have pids no process can have, whose exit the input
 *			reports through vm_reap(); mcvmd's children have pid
 *			0.  Nothing is forked, and no signal reaches anyone.
 *
 * Input: byte 0 picks the channel (bit 0: control, else monitor) and, for
 * the monitor, the VM's state before the first frame (bits 1-2: running,
 * booting, paused; bit 3: the guest is ready; bit 4: network on; bit 5:
 * a creation waits on the boot; bit 6: QEMU and the monitor run; bit 7:
 * it is the template, which the monitor checkpoints when it holds).  Then
 * a sequence of operations, each a byte and what it draws: a frame
 * (type, peerid biased to the calls in flight, payload either shaped as
 * the answer its type carries, typed fields, or raw bytes), a tool call,
 * a cancellation, a frontd restart, the exit of QEMU or the monitor, raw
 * bytes, or the end of the channel.
 *
 * Aborts when mcvmd reaches fatal() or fatalx(), when what it writes to
 * frontd does not decode as frontd decodes it (IMSG_FRONT_TOOL_RESULT: a
 * u32 status and a str of at most TOOL_RESULT_MAX bytes, valid UTF-8, a
 * JSON object when the status is TOOL_OK), when a call is answered twice
 * or an answer comes for no call, when the VM's state moves in a way no
 * step may move it (a destroyed VM coming back, a failed one running;
 * vm_fsm() makes any transition its table does not have fatal), or when
 * a control reply is not one mcvmctl reads.  ASan finds the rest.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event.h>
#include <jansson.h>

#include "fuzz_mcvmd.h"
#include "log.h"
#include "mcvmd.h"
#include "msg.h"
#include "msg_ctl.h"
#include "msg_front.h"
#include "msg_store.h"
#include "tools.h"
#include "utf8.h"
#include "dispatch.h"
#include "req.h"
#include "vm.h"

#define FZ_OPS_MAX		96
#define FZ_CALLS_MAX		256	/* frontd calls of one input */
#define FZ_PAYLOAD_MAX		(IMSG_MAX_PAYLOAD + 64)
#define FZ_JOBS			3
#define FZ_WS			"fuzz-vms"
#define FZ_IMAGE		"debian"	/* configured, not reported */
/* A VM's processes while they run: pids above any pid_max (at most
 * 2^22), which kill(2) finds nowhere. */
#define FZ_QEMU_PID		((pid_t)0x7ffffff0)
#define FZ_VMM_PID		((pid_t)0x7ffffff1)
/* What mcvmctl reads (ctl/mcvmctl.c). */

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* What the input still holds. */
struct in {
	const uint8_t	*p;
	size_t		 left;
};

/* A growing message payload. */
struct pay {
	uint8_t		*b;
	size_t		 len;
};

enum fz_call_state {
	FC_OUT = 1,		/* waits for its answer */
	FC_ANSWERED,
	FC_LOST,		/* its frontd instance is gone */
};

static FILE		*out;		/* the real stderr */
static void	 dir_remove(void);
static int		 verbose;	/* FUZZ_MCVMD_LOG: mcvmd's log too */
static char		 dir[PATH_MAX];
static struct ws_auth	 auth;
static struct vm	*vm;
static uint64_t		 vm_serial;
static uint64_t		 rid_serial;
static int		 mon = -1;	/* the monitor's end */
static int		 fz_end[PROC_MAX];	/* the children's ends */
static struct imsgbuf	 front_in, store_in, netd_in, ctl_in;
static uint8_t		 calls[FZ_CALLS_MAX + 1];	/* by peerid */
static uint32_t		 ncalls;		/* of this frontd */
static char		 job_ids[FZ_JOBS][ID_MAX + 1];
static const uint32_t	 job_guest[FZ_JOBS] = { 1, 2, UINT32_MAX };
static struct pay	 pay;
static int		 jobs_dirty;	/* an input ran vm_exec */
static int		 rids_dirty;	/* or used a request_id again */

static int	 vm_listed(void);
static void	 vm_exited(pid_t, int);

static void __attribute__((noreturn, format(printf, 1, 2)))
fz_fail(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	(void)fprintf(out, "fuzz-mcvmd: ");
	(void)vfprintf(out, fmt, ap);
	(void)fprintf(out, "\n");
	va_end(ap);
	(void)fflush(out);
	dir_remove();
	abort();
}

/* mcvmd never exits on what a monitor or a control client sends. */
static void
fz_fatal(void)
{
	fz_fail("mcvmd reached fatal() (its message is above)");
}

/* ---- reading the input -------------------------------------------------- */

static uint8_t
in_u8(struct in *in)
{
	if (in->left == 0)
		return 0;
	in->left--;
	return *in->p++;
}

static uint32_t
in_u32(struct in *in)
{
	uint32_t	 v = 0;
	int		 i;

	for (i = 0; i < 4; i++)
		v |= (uint32_t)in_u8(in) << (8 * i);
	return v;
}

static uint64_t
in_u64(struct in *in)
{
	return (uint64_t)in_u32(in) | (uint64_t)in_u32(in) << 32;
}

/* A u32 as fields mostly are: small, or an edge, or anything. */
static uint32_t
in_val32(struct in *in)
{
	uint8_t	 k = in_u8(in);

	switch (k >> 6) {
	case 0:
	case 1:
		return k & 0x3f;
	case 2:
		return (k & 1) ? UINT32_MAX : (uint32_t)in_u8(in) << 8 |
		    in_u8(in);
	default:
		return in_u32(in);
	}
}

static uint64_t
in_val64(struct in *in)
{
	uint8_t	 k = in_u8(in);

	switch (k >> 6) {
	case 0:
		return k & 0x3f;
	case 1:
		return (uint64_t)(k & 0x3f) << 10 | in_u8(in);
	case 2:
		return (k & 1) ? UINT64_MAX : (uint64_t)in_u32(in);
	default:
		return in_u64(in);
	}
}

/* ---- building payloads -------------------------------------------------- */

static void
pay_raw(const void *p, size_t n)
{
	if (pay.len + n > FZ_PAYLOAD_MAX)
		n = FZ_PAYLOAD_MAX - pay.len;
	memcpy(pay.b + pay.len, p, n);
	pay.len += n;
}

static void
pay_tagged(uint8_t tag, const void *p, size_t n)
{
	uint8_t	 h[5];

	h[0] = tag;
	le32_put(h + 1, (uint32_t)n);
	if (tag == MF_U32 || tag == MF_U64)
		pay_raw(h, 1);
	else
		pay_raw(h, sizeof(h));
	pay_raw(p, n);
}

static void
pay_u32(uint32_t v)
{
	uint8_t	 b[4];

	le32_put(b, v);
	pay_tagged(MF_U32, b, 4);
}

static void
pay_u64(uint64_t v)
{
	uint8_t	 b[8];

	le64_put(b, v);
	pay_tagged(MF_U64, b, 8);
}

/* Long runs of a few patterns, made once. */
static const char *const pats[] = FZ_RUN_PATTERNS;
#define NPATS		(sizeof(pats) / sizeof(pats[0]))
static uint8_t		*runs[NPATS];

static void
runs_make(void)
{
	size_t	 i, j, pl;

	for (i = 0; i < NPATS; i++) {
		if ((runs[i] = malloc(FZ_LONG_MAX)) == NULL)
			abort();
		pl = strlen(pats[i]);
		for (j = 0; j < FZ_LONG_MAX; j++)
			runs[i][j] = (uint8_t)pats[i][j % pl];
	}
}

/*
 * A str or bytes field: short text from the input, or a long run of one
 * pattern (lengths around the bounds mcvmd applies), NUL-terminated for a
 * str unless the input says otherwise.
 */
static void
pay_text(struct in *in, uint8_t tag)
{
	static const size_t	 longs[] = FZ_RUN_LENGTHS;
	uint8_t		 buf[64], h[5], k = in_u8(in);
	const uint8_t	*p;
	size_t		 len, i, pl;
	int		 nul = tag == MF_STR;

	if ((k & 0x80) == 0) {
		len = k & 0x3f;
		len = len < in->left ? len : in->left;
		memcpy(buf, in->p, len);
		in->p += len;
		in->left -= len;
		/* The reader wants exactly one NUL, the last byte. */
		for (i = 0; i < len && nul && (k & 0x40) == 0; i++)
			if (buf[i] == '\0')
				buf[i] = '0';
		if (k & 0x40)
			nul = 0;
		p = buf;
	} else {
		len = longs[k & 0x0f];
		p = runs[(k >> 4) & 7];
		pl = strlen(pats[(k >> 4) & 7]);
		len -= len % pl;
	}
	h[0] = tag;
	le32_put(h + 1, (uint32_t)(len + nul));
	pay_raw(h, sizeof(h));
	pay_raw(p, len);
	if (nul)
		pay_raw("", 1);
}

/* Fields in the shape a message type carries: u, U, s, b. */
static void
pay_shape(struct in *in, const char *shape)
{
	for (; *shape != '\0'; shape++) {
		switch (*shape) {
		case 'u':
			pay_u32(in_val32(in));
			break;
		case 'U':
			pay_u64(in_val64(in));
			break;
		case 's':
			pay_text(in, MF_STR);
			break;
		case 'b':
			pay_text(in, MF_BYTES);
			break;
		}
	}
}

/* ---- the monitor's side ------------------------------------------------- */

static const struct {
	uint32_t	 type;
	const char	*shape;
} answers[] = FZ_ANSWERS;
#define NANSWERS	(sizeof(answers) / sizeof(answers[0]))

static const char *
shape_of(uint32_t type)
{
	size_t	 i;

	for (i = 0; i < NANSWERS; i++)
		if (answers[i].type == type)
			return answers[i].shape;
	return "";
}

/* Reads and drops what mcvmd sent the monitor. */
static void
monitor_drain(void)
{
	static uint8_t	 sink[65536];

	if (vm_listed() && vm->vmm_live && vm->vmm.ibuf.wqlen > 0 &&
	    imsgbuf_write(&vm->vmm.ibuf) == -1 && errno != EAGAIN)
		fz_fail("cannot write to the monitor: %s", strerror(errno));
	while (mon != -1 && read(mon, sink, sizeof(sink)) > 0)
		;
}

/* ---- frontd's side ------------------------------------------------------ */

static void
front_check(struct imsg *imsg)
{
	struct msg_front_tool_result	 res;
	struct msg_front_progress	 prog;
	struct imsg			 a;
	const char			*text;
	uint32_t			 st, id = imsg->hdr.peerid;
	json_t				*j;

	switch (imsg->hdr.type) {
	case IMSG_FRONT_TOOL_RESULT:
		if (msg_front_tool_result_get(imsg, &res) == -1)
			fz_fail("a tool result frontd cannot read (%zu bytes)",
			    imsg->datalen);
		st = res.status;
		text = res.json;
		if (!valid_utf8(text, strlen(text)))
			fz_fail("a tool result that is not UTF-8: %.200s",
			    text);
		if (st == TOOL_OK) {
			if ((j = json_loads(text, JSON_REJECT_DUPLICATES,
			    NULL)) == NULL || !json_is_object(j))
				fz_fail("a result that is no JSON object: "
				    "%.200s", text);
			json_decref(j);
		}
		if (id == 0 || id > ncalls || calls[id] != FC_OUT)
			fz_fail("an answer to call %u, which is %s", id,
			    id == 0 || id > ncalls ? "no call" :
			    calls[id] == FC_ANSWERED ? "answered already" :
			    "of an earlier frontd");
		calls[id] = FC_ANSWERED;
		if (verbose)
			(void)fprintf(out, "call %u: status %u: %.300s\n", id,
			    st, text);
		break;
	case IMSG_FRONT_PROGRESS:
		if (msg_front_progress_get(imsg, &prog) == -1)
			fz_fail("a progress message frontd cannot read");
		if (id == 0 || id > ncalls || calls[id] != FC_OUT)
			fz_fail("progress of call %u, which is not waiting",
			    id);
		break;
	case IMSG_FRONT_AUTH_FLUSH:
		/* A revocation: frontd forgets its tokens and says so. */
		if (msg_front_auth_flush_get(imsg) == -1)
			fz_fail("a flush frontd cannot read");
		memset(&a, 0, sizeof(a));
		a.hdr.type = IMSG_FRONT_AUTH_FLUSHED;
		a.hdr.peerid = id;
		a.hdr.len = IMSG_HDR_SIZE;
		a.fd = -1;
		front_imsg(&child_by_id(PROC_FRONTD)->iev, &a);
		break;
	default:
		fz_fail("frontd was sent %s", imsg_type_name(imsg->hdr.type));
	}
}

static void
channel_flush(enum proc_id id)
{
	struct child	*c = child_by_id(id);

	if (c->iev.ibuf.wqlen > 0 && imsgbuf_write(&c->iev.ibuf) == -1 &&
	    errno != EAGAIN)
		fz_fail("cannot write to %s: %s", c->desc->title,
		    strerror(errno));
}

/* Reads every complete message from a child's end of its channel. */
static void
channel_read(enum proc_id id, struct imsgbuf *ib, void (*cb)(struct imsg *))
{
	struct child	*c = child_by_id(id);
	struct imsg	 imsg;
	ssize_t		 n;
	int		 got;

	/* Every byte mcvmd sent was read; it sends only when flushed. */
	if (c->iev.ibuf.wqlen == 0)
		return;
	do {
		channel_flush(id);
		n = imsgbuf_read(ib);
		if (n == 0 || (n == -1 && errno != EAGAIN))
			fz_fail("%s's channel broke", c->desc->title);
		while ((got = imsg_get(ib, &imsg)) == 1) {
			cb(&imsg);
			imsg_free(&imsg);
		}
		if (got == -1)
			fz_fail("bad framing to %s", c->desc->title);
	} while (n > 0 || c->iev.ibuf.wqlen > 0);
}

/* A frontd call: its number on this instance, as frontd counts them. */
static uint64_t
call_new(void)
{
	if (ncalls >= FZ_CALLS_MAX)
		return 0;
	calls[++ncalls] = FC_OUT;
	return call_id(ncalls);
}

/* frontd's notifications/cancelled: a vm_create stops its wait. */
static void
call_cancel(uint64_t call)
{
	unsigned int	 n = req_count(NULL, RP_IMAGE);
	int		 waits = req_match(RP_IMAGE, call, NULL) != NULL;

	dispatch_cancel(call);
	if (waits && req_count(NULL, RP_IMAGE) != n - 1)
		fz_fail("a cancelled vm_create still waits for its image");
}

/* frontd restarts (as child_exited has it): its calls lose their caller. */
static void
front_restart(void)
{
	struct child	*c = child_by_id(PROC_FRONTD);
	uint32_t	 i;

	vm_front_lost();
	if (req_match(RP_IMAGE, 0, NULL) != NULL)
		fz_fail("a vm_create waits for its image after frontd went");
	if (++c->gen == 0)
		c->gen = 1;
	for (i = 1; i <= ncalls; i++)
		calls[i] = 0;
	ncalls = 0;
}

/* ---- stored's side ------------------------------------------------------ */

/* A message of stored's to mcvmd, written with its codec. */
static void
store_reply(struct ibuf *b, uint32_t type, uint32_t peerid, int fd)
{
	struct imsg	 a;

	if (b->err)
		fz_fail("a %s not encoded", imsg_type_name(type));
	memset(&a, 0, sizeof(a));
	a.hdr.type = type;
	a.hdr.peerid = peerid;
	a.hdr.len = (uint32_t)b->size;
	a.hdr.flags = fd != -1 ? IMSGF_HASFD : 0;
	a.fd = fd;
	a.data = b->buf + IMSG_HDR_SIZE;
	a.datalen = b->size - IMSG_HDR_SIZE;
	vm_store_imsg(&a);
	imsg_discard(b);
}

/*
 * A request to stored, answered as stored would: a disk delete goes
 * well, and so does the template's checkpoint file (/dev/null); opening
 * or making a disk fails.
 */
static void
store_answer(struct imsg *req)
{
	struct msg_store_result	 res;
	struct msg_store_fd	 sfd;
	struct ibuf		*b;
	const char		*text = "gone";
	uint32_t		 status = 0;
	int			 fd;

	switch (req->hdr.type) {
	case IMSG_STORE_DISK_DELETE:
		if (req->hdr.peerid == 0)
			return;
		break;
	case IMSG_STORE_CHECKPOINT:
		if ((fd = open("/dev/null", O_RDWR | O_CLOEXEC)) == -1)
			fz_fail("/dev/null: %s", strerror(errno));
		sfd.role = STORE_FD_CHECKPOINT;
		if ((b = imsg_create(NULL, IMSG_STORE_FD, 0, 0, 16)) == NULL)
			fz_fail("imsg_create");
		msg_store_fd_put(b, &sfd);
		store_reply(b, IMSG_STORE_FD, req->hdr.peerid, fd);
		text = "checkpoint file";
		break;
	case IMSG_STORE_DISK_OPEN:
	case IMSG_STORE_DISK_CREATE:
		status = ENOSPC;
		text = "no space left on the disk";
		break;
	default:
		return;
	}
	memset(&res, 0, sizeof(res));
	res.status = status;
	res.format = DISK_RAW;
	res.text = text;
	if ((b = imsg_create(NULL, IMSG_STORE_RESULT, 0, 0, 64)) == NULL)
		fz_fail("imsg_create");
	msg_store_result_put(b, &res);
	store_reply(b, IMSG_STORE_RESULT, req->hdr.peerid, -1);
}

static void
netd_drop(struct imsg *req)
{
}

static void
pump(void)
{
	monitor_drain();
	channel_read(PROC_STORED, &store_in, store_answer);
	channel_read(PROC_NETD, &netd_in, netd_drop);
	channel_read(PROC_FRONTD, &front_in, front_check);
	monitor_drain();
}

/* ---- tool calls --------------------------------------------------------- */

static const enum tool_id vm_tools[] = {
	TOOL_VM_STATUS, TOOL_VM_EXEC, TOOL_VM_JOB_OUTPUT, TOOL_VM_READ_FILE,
	TOOL_VM_JOB_STATUS, TOOL_VM_JOB_CANCEL, TOOL_VM_WRITE_FILE,
	TOOL_VM_SUSPEND, TOOL_VM_RESUME, TOOL_VM_STOP, TOOL_VM_LIST,
	TOOL_VM_START, TOOL_VM_DESTROY, TOOL_VM_EXEC, TOOL_VM_JOB_OUTPUT,
	TOOL_VM_STATUS, TOOL_VM_CREATE, TOOL_VM_LIST_FILES,
	TOOL_VM_SNAPSHOT_CREATE, TOOL_VM_SNAPSHOT_RESTORE,
	TOOL_VM_SNAPSHOT_DELETE, TOOL_VM_SNAPSHOT_LIST,
};

/*
 * A call as frontd makes it: arguments from the input, checked as frontd
 * checks them, encoded, decoded as dispatch.c decodes them, to
 * dispatch_run().
 */
static void
tool_call(struct in *in)
{
	const struct tool_desc	*t;
	const struct tool_param	*p;
	struct tool_args	 a;
	struct tool_value	*v;
	struct ibuf		*b;
	struct mreader		 r;
	struct tool_args	 d;
	static char		 strs[TOOL_PARAMS_MAX][512];
	static uint8_t		 bytes[4096];
	char			 err[TOOL_ERR_MAX];
	uint64_t		 call, range, u;
	size_t			 i, n, nv;
	uint8_t			 k;

	if (!vm_listed())
		return;
	t = tool_by_id(vm_tools[in_u8(in) % (sizeof(vm_tools) /
	    sizeof(vm_tools[0]))]);
	memset(&a, 0, sizeof(a));
	a.tool = t;
	for (i = 0; i < t->nparams; i++) {
		p = &t->params[i];
		v = &a.v[i];
		k = in_u8(in);
		if (!p->required && (k & 1))
			continue;
		v->present = 1;
		switch (p->type) {
		case TP_STRING:
			if (strcmp(p->name, "vm_id") == 0)
				v->s = vm->row.id;
			else if (strcmp(p->name, "image") == 0)
				v->s = FZ_IMAGE;	/* never verified */
			else if (strcmp(p->name, "job_id") == 0)
				v->s = job_ids[(k >> 1) % FZ_JOBS];
			else if (strcmp(p->name, "request_id") == 0) {
				if (k & 2)
					(void)snprintf(strs[i],
					    sizeof(strs[i]), "fz-%llu",
					    (unsigned long long)++rid_serial);
				else {
					(void)snprintf(strs[i],
					    sizeof(strs[i]), "fz-again-%u",
					    (k >> 2) & 3);
					rids_dirty = 1;
				}
				v->s = strs[i];
			} else {
				n = in_u8(in) % 64;
				n = n < in->left ? n : in->left;
				memcpy(strs[i], in->p, n);
				strs[i][n] = '\0';
				in->p += n;
				in->left -= n;
				v->s = strs[i];
			}
			break;
		case TP_INT:
			range = (uint64_t)p->max - (uint64_t)p->min;
			u = in_val64(in);
			if (range != UINT64_MAX)
				u %= range + 1;
			v->i = (int64_t)((uint64_t)p->min + u);
			break;
		case TP_BOOL:
			v->i = (k >> 1) & 1;
			break;
		case TP_ENUM:
			for (n = 0; p->values[n] != NULL; n++)
				;
			v->i = (k >> 1) % n;
			break;
		case TP_CURSOR:
			v->cursor[0] = in_val64(in);
			v->cursor[1] = in_val64(in);
			break;
		case TP_BYTES:
			n = in_u8(in) * 16;
			for (nv = 0; nv < n; nv++)
				bytes[nv] = (uint8_t)nv;
			v->b = bytes;
			v->blen = n;
			break;
		default:
			v->present = 0;
			break;
		}
	}
	if (tool_args_check(&a, err, sizeof(err)) == -1)
		return;		/* frontd refuses it */
	if ((call = call_new()) == 0)
		return;
	if (t->id == TOOL_VM_EXEC)
		jobs_dirty = 1;
	if ((b = imsg_create(NULL, IMSG_FRONT_TOOL, 0, 0, 512)) == NULL)
		fz_fail("imsg_create");
	tool_args_encode(b, &a);
	if (b->err)
		fz_fail("arguments not encoded");
	m_init_buf(&r, b->buf + IMSG_HDR_SIZE, b->size - IMSG_HDR_SIZE);
	if (tool_args_decode(&r, t, &d, err, sizeof(err)) == -1)
		fz_fail("mcvmd would refuse what frontd sends: %s", err);
	if (!dispatch_run(call, &auth, &d))
		fz_fail("%s is no VM tool", t->name);
	imsg_discard(b);
}

/* ---- the VM ------------------------------------------------------------- */

/*
 * The jobs of the VM's boot, the same for every input: what an earlier
 * input's vm_exec added goes, as at a new boot, with the receipts of the
 * request_ids inputs may use again.
 */
static void
jobs_make(void)
{
	char	 id[REQUEST_ID_MAX + 1];
	size_t	 i;

	if (state_jobs_forget(vm->row.id) == -1)
		fz_fail("state_jobs_forget");
	for (i = 0; i < 4 && rids_dirty; i++) {
		(void)snprintf(id, sizeof(id), "fz-again-%zu", i);
		if (state_receipt_forget(auth.id, id) == -1)
			fz_fail("state_receipt_forget");
	}
	rids_dirty = 0;
	for (i = 0; i < FZ_JOBS; i++) {
		(void)snprintf(job_ids[i], sizeof(job_ids[i]),
		    "job-%08llx%08zx", (unsigned long long)vm_serial, i);
		if (state_job_start(job_ids[i], vm->row.id, job_guest[i],
		    "sleep 1", auth.id, "", "{}") == -1)
			fz_fail("state_job_start");
	}
	jobs_dirty = 0;
}

/* A VM as state.db and mcvmd hold it, with a few jobs of this boot. */
static void
vm_make(void)
{
	static char	 last[ID_MAX + 1];
	struct vm_row	 row;

	/* A template is freed with its row (it should have none). */
	if (last[0] != '\0' && state_vm_delete(last) == -1)
		fz_fail("state_vm_delete");
	memset(&row, 0, sizeof(row));
	vm_serial++;
	(void)snprintf(row.id, sizeof(row.id), "vm-%016llx",
	    (unsigned long long)vm_serial);
	row.ws_id = auth.id;
	(void)snprintf(row.ws, sizeof(row.ws), "%s", FZ_WS);
	(void)snprintf(row.name, sizeof(row.name), "fuzz");
	(void)snprintf(row.state, sizeof(row.state), "stopped");
	(void)snprintf(row.image, sizeof(row.image), "debian");
	row.slot = 1;
	row.uid = 60001;
	row.memory_mib = 512;
	row.vcpus = 1;
	row.created = (int64_t)time(NULL);
	row.idle_seconds = 300;
	if (state_vm_insert(&row) == -1)
		fz_fail("state_vm_insert");
	vm = vm_new(&row);
	vm->disk_format = DISK_QCOW2;	/* it can have live snapshots */
	(void)snprintf(last, sizeof(last), "%s", vm->row.id);
	jobs_make();
}

/* Whether the VM is still in the list (a destroy frees it). */
static int
vm_listed(void)
{
	struct vm	*v;

	TAILQ_FOREACH(v, &vms, entry)
		if (v == vm)
			return 1;
	vm = NULL;
	return 0;
}

/*
 * After an input: the monitor's channel ends; a VM that is not settled
 * then (calls in flight, stopping, being made) is destroyed, which the
 * fake stored completes.  The next input starts from a quiet VM.
 */
static void
vm_settle(void)
{
	if (mon != -1) {
		close(mon);
		mon = -1;
	}
	if (vm_listed() && vm->vmm_live)
		vm->vmm.handler(vm->vmm.ibuf.fd, EV_READ, &vm->vmm);
	pump();
	vm_exited(FZ_QEMU_PID, 0);
	vm_exited(FZ_VMM_PID, 0);
	if (vm_listed() && (vm->vmm_live || req_count(vm, RP_MONITOR) > 0 ||
	    (vm->state != VS_STOPPED && vm->state != VS_FAILED) ||
	    vm->op.pending || req_pending(vm, RP_STORED) != NULL))
		vm_destroy(0, vm);
	pump();
	if (vm_listed() && vm->state == VS_DESTROYING)
		fz_fail("%s was not destroyed", vm->row.id);
	if (vm != NULL) {
		if (vm->vmm_live || req_count(vm, RP_MONITOR) > 0)
			fz_fail("%s kept its calls", vm->row.id);
		vm_timer_clear(vm);
	}
	front_restart();
}

/*
 * Whether a VM may go from state a to b within one step.  Only vm_start
 * leaves stopped or failed; a VM being stopped stops, fails or keeps
 * running; one being destroyed is destroyed.  No answer of a monitor
 * undoes any of these.
 */
static int
state_follows(enum vm_state a, enum vm_state b)
{
	if (a == b || b == VS_DESTROYING || b == VS_FAILED)
		return 1;
	switch (a) {
	case VS_DESTROYING:
		return 0;
	case VS_STOPPED:
	case VS_FAILED:
		return b == VS_CREATING || b == VS_STOPPED;
	case VS_STOPPING:
		return b == VS_STOPPED || b == VS_RUNNING;
	default:
		return 1;
	}
}

/* The VM's QEMU or monitor exited, as mcvmd's reaper tells vm.c. */
static void
vm_exited(pid_t pid, int code)
{
	if (!vm_listed() || (vm->qemu_pid != pid && vm->vmm_pid != pid))
		return;
	(void)vm_reap(pid, code == 31 ? SIGKILL : (code & 0xff) << 8);
	pump();
}

/* A frame to the monitor's end: written whole, mcvmd reading meanwhile. */
static void
monitor_write(const void *p, size_t len)
{
	const uint8_t	*b = p;
	ssize_t		 n;

	while (len > 0 && mon != -1) {
		if ((n = write(mon, b, len)) == -1) {
			if (errno != EAGAIN)
				return;	/* mcvmd closed it */
			n = 0;
		}
		b += n;
		len -= (size_t)n;
		if (vm_listed() && vm->vmm_live)
			vm->vmm.handler(vm->vmm.ibuf.fd, EV_READ, &vm->vmm);
		else
			return;
		pump();
	}
}

static void
monitor_frame(struct in *in)
{
	static uint8_t	 frame[IMSG_HDR_SIZE + FZ_PAYLOAD_MAX];
	struct req	*c;
	uint32_t	 type, peerid = 0;
	uint8_t		 k, sel, mode;
	unsigned int	 i, n;

	k = in_u8(in);
	sel = in_u8(in);
	mode = in_u8(in);
	/* The peerid: mostly a call in flight. */
	c = NULL;
	if (vm_listed() && (n = req_count(vm, RP_MONITOR)) > 0 && sel < 224) {
		c = req_nth(vm, RP_MONITOR, sel % n);
		peerid = c->id;
	} else if (sel >= 240)
		peerid = in_u32(in);
	else
		peerid = sel & 7;
	/* The type: what the call wants, another answer, or any. */
	if (c != NULL && (k & 3) != 0)
		type = imsg_reply_type(c->type);
	else if ((k & 0x0c) == 0x0c)
		type = in_u32(in);
	else
		type = answers[(k >> 4) % NANSWERS].type;
	if ((k & 3) == 1 && c != NULL && (k & 0x20))
		type = IMSG_VMM_ERROR;
	pay.len = 0;
	switch (mode & 3) {
	case 0:
	case 1:
		pay_shape(in, shape_of(type));
		break;
	case 2:
		for (i = in_u8(in) % 12; i > 0; i--) {
			switch (in_u8(in) % 5) {
			case 0:
				pay_u32(in_val32(in));
				break;
			case 1:
				pay_u64(in_val64(in));
				break;
			case 2:
				pay_text(in, MF_STR);
				break;
			case 3:
				pay_text(in, MF_BYTES);
				break;
			default:
				pay_u32(in_u8(in));
				pay.b[pay.len - 5] = in_u8(in);	/* tag */
				break;
			}
		}
		break;
	default:
		i = in_u8(in) % 32;
		i = i < in->left ? i : (unsigned int)in->left;
		pay_raw(in->p, i);
		in->p += i;
		in->left -= i;
		break;
	}
	if (pay.len > IMSG_MAX_PAYLOAD)
		pay.len = IMSG_MAX_PAYLOAD;
	le32_put(frame, type);
	le32_put(frame + 4, (uint32_t)(IMSG_HDR_SIZE + pay.len));
	le32_put(frame + 8, 0);
	le32_put(frame + 12, peerid);
	le32_put(frame + 16, 0);
	memcpy(frame + IMSG_HDR_SIZE, pay.b, pay.len);
	monitor_write(frame, IMSG_HDR_SIZE + pay.len);
}

static void
monitor_run(uint8_t flags, struct in *in)
{
	static const enum vm_state states[] = { VS_RUNNING, VS_BOOTING,
	    VS_PAUSED, VS_RUNNING };
	enum vm_state	 was;
	uint8_t		 raw[64], b;
	int		 sp[2], ops, i, n;

	if (vm == NULL)
		vm_make();
	else if (jobs_dirty)
		jobs_make();
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == -1)
		fz_fail("socketpair: %s", strerror(errno));
	vm_monitor_attach(vm, sp[0]);
	mon = sp[1];
	if (fcntl(mon, F_SETFL, O_NONBLOCK) == -1)
		fz_fail("fcntl");
	/* As if it had booted (state.db keeps what it last recorded). */
	vm->row.network = (flags >> 4) & 1;
	vm->state = states[(flags >> 1) & 3];
	(void)snprintf(vm->row.state, sizeof(vm->row.state), "%s",
	    vm_state_name(vm->state));
	vm->boot.agent = vm->state != VS_BOOTING && ((flags >> 3) & 1);
	vm->tpl = (flags & 0x80) != 0;
	vm->qemu_pid = (flags & 0x40) ? FZ_QEMU_PID : 0;
	vm->vmm_pid = (flags & 0x40) ? FZ_VMM_PID : 0;
	if (vm->state == VS_BOOTING && (flags & 0x20) &&
	    (vm->op.peerid = call_new()) != 0) {
		vm_op_begin(vm, vm->op.peerid, VO_CREATE, NULL);
		call_begin(vm->op.peerid, TOOL_VM_CREATE);
	}
	for (ops = 0; ops < FZ_OPS_MAX && in->left > 0; ops++) {
		was = vm->state;
		switch (in_u8(in) % 16) {
		case 0:
		case 1:
		case 2:
			tool_call(in);
			break;
		case 3:
			/* frontd's notifications/cancelled for a call. */
			if (ncalls > 0)
				call_cancel(call_id(1 + in_u8(in) % ncalls));
			break;
		case 4:
			b = in_u8(in);
			if ((b & 7) == 0)
				front_restart();
			else if ((b & 7) == 1)
				vm_exited(FZ_QEMU_PID, b >> 3);
			else if ((b & 7) == 2)
				vm_exited(FZ_VMM_PID, b >> 3);
			break;
		case 5:
			n = in_u8(in) % (int)sizeof(raw);
			for (i = 0; i < n; i++)
				raw[i] = in_u8(in);
			monitor_write(raw, (size_t)n);
			break;
		case 6:
			if ((in_u8(in) & 7) == 0 && mon != -1) {
				close(mon);
				mon = -1;
				if (vm_listed() && vm->vmm_live)
					vm->vmm.handler(vm->vmm.ibuf.fd,
					    EV_READ, &vm->vmm);
			}
			break;
		default:
			monitor_frame(in);
			break;
		}
		pump();
		if (!vm_listed())
			break;
		if (!state_follows(was, vm->state))
			fz_fail("%s went from %s to %s", vm->row.id,
			    vm_state_name(was), vm_state_name(vm->state));
		/* mcvmd's own bound on what is in flight. */
		if (req_count(vm, RP_MONITOR) > VM_CALLS_MAX)
			fz_fail("%u calls in flight",
			    req_count(vm, RP_MONITOR));
	}
	vm_settle();
}

/* ---- the control socket ------------------------------------------------- */

static void
ctl_check(struct imsg *imsg)
{
	union {
		struct msg_ctl_ok		 ok;
		struct msg_ctl_fail		 fail;
		struct msg_ctl_status_proc	 proc;
		struct msg_ctl_status_note	 note;
		struct msg_ctl_ws_entry		 entry;
		struct msg_ctl_status_ws	 ws;
		struct msg_ctl_vm_entry		 vm;
	} m;
	int	 rc;

	switch (imsg->hdr.type) {
	case IMSG_CTL_OK:
		rc = msg_ctl_ok_get(imsg, &m.ok);
		break;
	case IMSG_CTL_FAIL:
		rc = msg_ctl_fail_get(imsg, &m.fail);
		break;
	case IMSG_CTL_END:
		rc = msg_ctl_end_get(imsg);
		break;
	case IMSG_CTL_STATUS_PROC:
		rc = msg_ctl_status_proc_get(imsg, &m.proc);
		break;
	case IMSG_CTL_STATUS_NOTE:
		rc = msg_ctl_status_note_get(imsg, &m.note);
		break;
	case IMSG_CTL_WS_ENTRY:
		rc = msg_ctl_ws_entry_get(imsg, &m.entry);
		break;
	case IMSG_CTL_STATUS_WS:
		rc = msg_ctl_status_ws_get(imsg, &m.ws);
		break;
	case IMSG_CTL_VM_ENTRY:
		rc = msg_ctl_vm_entry_get(imsg, &m.vm);
		break;
	default:
		fz_fail("the control client was sent %s",
		    imsg_type_name(imsg->hdr.type));
	}
	if (rc == -1)
		fz_fail("a malformed %s to the control client",
		    imsg_type_name(imsg->hdr.type));
}

/* Runs mcvmd's events until the client has read all there is. */
static int
ctl_turn(int fd)
{
	struct imsg	 imsg;
	ssize_t		 n;
	int		 got, eof = 0, i;

	for (i = 0; i < 64; i++) {
		(void)event_loop(EVLOOP_NONBLOCK);
		n = imsgbuf_read(&ctl_in);
		if (n == 0)
			eof = 1;
		while ((got = imsg_get(&ctl_in, &imsg)) == 1) {
			ctl_check(&imsg);
			imsg_free(&imsg);
		}
		if (got == -1)
			fz_fail("bad framing to the control client");
		if (n <= 0)
			break;
	}
	return eof;
}

static void
control_run(struct in *in)
{
	static uint8_t	 frame[IMSG_HDR_SIZE + FZ_PAYLOAD_MAX];
	static const char *const names[] = { "fuzz", "ws-a", "b", FZ_WS };
	static const uint32_t types[] = { IMSG_CTL_STATUS,
	    IMSG_CTL_TOKEN_ISSUE, IMSG_CTL_WS_REVOKE };
	static const uint32_t more[] = { IMSG_CTL_WS_LIST, IMSG_CTL_VM_LIST,
	    IMSG_CTL_VM_STOP, IMSG_CTL_VM_DESTROY, IMSG_CTL_QUOTA_SET,
	    IMSG_CTL_VM_FORGET };
	static const char *const ids[] = { "vm-0123456789abcdef",
	    "vm-0123456789abcdeF", "vm-", "" };
	struct sockaddr_un sun;
	const char	*name;
	uint8_t		 hash[TOKEN_HASH_LEN], k;
	uint32_t	 type;
	size_t		 off, len;
	ssize_t		 n;
	int		 fd, ops, i, eof = 0;

	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		fz_fail("socket: %s", strerror(errno));
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	(void)snprintf(sun.sun_path, sizeof(sun.sun_path), "%s",
	    env->conf.control_sock);
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1)
		fz_fail("connect %s: %s", sun.sun_path, strerror(errno));
	if (fcntl(fd, F_SETFL, O_NONBLOCK) == -1 ||
	    imsgbuf_init(&ctl_in, fd) == -1)
		fz_fail("client");
	(void)ctl_turn(fd);
	for (ops = 0; ops < FZ_OPS_MAX && in->left > 0 && !eof; ops++) {
		k = in_u8(in);
		if ((k & 0x30) == 0x30)
			type = in_u32(in);
		else if ((k & 3) == 3)
			type = more[in_u8(in) % (sizeof(more) /
			    sizeof(more[0]))];
		else
			type = types[k & 3];
		pay.len = 0;
		if ((k & 0xc0) == 0xc0) {
			for (i = in_u8(in) % 8; i > 0; i--)
				pay_text(in, in_u8(in) & 1 ? MF_STR :
				    MF_BYTES);
		} else if (type == IMSG_CTL_VM_STOP ||
		    type == IMSG_CTL_VM_DESTROY || type == IMSG_CTL_VM_FORGET) {
			if (k & 0x40)
				pay_text(in, MF_STR);
			else {
				name = ids[in_u8(in) & 3];
				pay_tagged(MF_STR, name, strlen(name) + 1);
			}
			if (type == IMSG_CTL_VM_STOP)
				pay_u32(in_val32(in) % 3);
		} else if (type == IMSG_CTL_TOKEN_ISSUE ||
		    type == IMSG_CTL_WS_REVOKE || type == IMSG_CTL_QUOTA_SET) {
			if (k & 0x40)
				pay_text(in, MF_STR);
			else {
				name = names[in_u8(in) & 3];
				pay_tagged(MF_STR, name, strlen(name) + 1);
			}
			if (type == IMSG_CTL_TOKEN_ISSUE) {
				for (i = 0; i < TOKEN_HASH_LEN; i++)
					hash[i] = in_u8(in);
				pay_tagged(MF_BYTES, hash, sizeof(hash) -
				    (in_u8(in) == 0xff));
				pay_u64(in_val64(in));
				pay_u32(in_val32(in));
				pay_u32(in_val32(in) & 1);
			} else if (type == IMSG_CTL_WS_REVOKE)
				pay_u32(in_val32(in) % 3);
			else {
				pay_u32(in_val32(in) & 0x1f);
				pay_u32(in_val32(in));
				pay_u64(in_val64(in));
				pay_u32(in_val32(in));
				pay_u64(in_val64(in));
			}
		}
		le32_put(frame, type);
		le32_put(frame + 4, (uint32_t)(IMSG_HDR_SIZE + pay.len));
		le32_put(frame + 8, 0);
		le32_put(frame + 12, in_u8(in));
		le32_put(frame + 16, 0);
		memcpy(frame + IMSG_HDR_SIZE, pay.b, pay.len);
		len = IMSG_HDR_SIZE + pay.len;
		if ((k & 0x0c) == 0x0c)	/* a cut or lying frame */
			le32_put(frame + 4, in_u32(in));
		for (off = 0; off < len && !eof; off += (size_t)n) {
			if ((n = write(fd, frame + off, len - off)) == -1) {
				if (errno != EAGAIN)
					eof = 1;
				n = 0;
			}
			eof = ctl_turn(fd) || eof;
		}
	}
	imsgbuf_clear(&ctl_in);
	close(fd);
	(void)event_loop(EVLOOP_NONBLOCK);
	(void)event_loop(EVLOOP_NONBLOCK);
}

/* ---- set-up ------------------------------------------------------------- */

/* mcvmd's side of a child's channel: it writes there, and never reads. */
static void
child_flush(int fd, short event, void *arg)
{
	struct imsgev	*iev = arg;

	if (imsgev_read(iev, event & EV_WRITE) == -1)
		fz_fail("%s's channel broke", iev->peer);
}

static void
child_fake(enum proc_id id, struct imsgbuf *in_buf)
{
	struct child	*c = child_by_id(id);
	int		 sp[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == -1 ||
	    fcntl(sp[0], F_SETFL, O_NONBLOCK) == -1 ||
	    fcntl(sp[1], F_SETFL, O_NONBLOCK) == -1)
		fz_fail("socketpair: %s", strerror(errno));
	if (imsgev_init(&c->iev, sp[0], c->desc->title, child_flush,
	    &c->iev) == -1 || (in_buf != NULL &&
	    imsgbuf_init(in_buf, sp[1]) == -1))
		fz_fail("imsgev_init");
	c->iev_live = 1;
	c->state = CHILD_RUNNING;
	c->gen = 1;
	c->pid = 0;		/* no process: nothing to kill */
	fz_end[id] = sp[1];
}

static void
mkdir_or_fail(const char *path)
{
	if (mkdir(path, 0700) == -1)
		fz_fail("mkdir %s: %s", path, strerror(errno));
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)remove(path);
	return 0;
}

/* The directory of state.db and the control socket goes with the run. */
static void
dir_remove(void)
{
	if (dir[0] == '/')
		(void)nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	dir[0] = '\0';
}

static void
cleanup(void)
{
	state_close();
	control_cleanup(&env->conf);
	dir_remove();
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static struct mcvmd	 mcvmd;
	struct stat		 st;
	const char		*base = "/dev/shm";
	uint8_t			 hash[TOKEN_HASH_LEN];
	char			 msg[256], path[PATH_MAX];
	int			 id, fd;

	if ((fd = dup(STDERR_FILENO)) == -1 || (out = fdopen(fd, "w")) ==
	    NULL)
		abort();
	/* mcvmd's log says much about every input: only on request. */
	verbose = getenv("FUZZ_MCVMD_LOG") != NULL;
	if (!verbose && (stderr = fopen("/dev/null", "w")) == NULL)
		abort();
	log_init(1, 0);
	log_procinit("mcvmd");
	log_fatal_hook(fz_fatal);
	if ((pay.b = malloc(FZ_PAYLOAD_MAX)) == NULL)
		abort();
	runs_make();

	env = &mcvmd;
	env->pid = getpid();
	config_defaults(&env->conf);
	/* $TMPDIR, else tmpfs: state.db syncs every transaction. */
	if (getenv("TMPDIR") != NULL)
		base = getenv("TMPDIR");
	else if (stat(base, &st) == -1 || !S_ISDIR(st.st_mode))
		base = "/tmp";
	(void)snprintf(dir, sizeof(dir), "%s/fuzz-mcvmd.XXXXXX", base);
	if (mkdtemp(dir) == NULL)
		fz_fail("mkdtemp %s: %s", dir, strerror(errno));
	atexit(cleanup);
	(void)snprintf(env->conf.statedir, sizeof(env->conf.statedir),
	    "%s/state", dir);
	(void)snprintf(env->conf.rundir, sizeof(env->conf.rundir), "%s/run",
	    dir);
	(void)snprintf(env->conf.control_sock, sizeof(env->conf.control_sock),
	    "%s/control.sock", dir);
	env->conf.control_group[0] = '\0';
	(void)snprintf(env->conf.images[0].name,
	    sizeof(env->conf.images[0].name), "%s", FZ_IMAGE);
	env->conf.nimages = 1;
	mkdir_or_fail(env->conf.statedir);
	mkdir_or_fail(env->conf.rundir);
	(void)snprintf(path, sizeof(path), "%s/vms", env->conf.rundir);
	mkdir_or_fail(path);

	event_init();
	(void)signal(SIGPIPE, SIG_IGN);		/* as mcvmd's main() */
	for (id = PROC_PARENT + 1; id < PROC_MAX; id++)
		env->children[id].desc = &proc_table[id];
	child_fake(PROC_FRONTD, &front_in);
	child_fake(PROC_STORED, &store_in);
	child_fake(PROC_NETD, &netd_in);

	if (state_open(env->conf.statedir) == -1)
		fz_fail("state_open %s", env->conf.statedir);
	memset(hash, 0x5a, sizeof(hash));
	if (state_token_issue(FZ_WS, hash, 0, WS_ALLOW_NETWORK, 0, 0, msg,
	    sizeof(msg)) != 0 || state_token_auth(hash, &auth) == -1 ||
	    auth.status != AUTH_OK)
		fz_fail("no workspace: %s", msg);
	vm_store_up();
	if (control_init(&env->conf) == -1)
		fz_fail("control_init");
	control_listen();
	pump();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in	 in = { data, size };
	uint8_t		 flags;

	if (size == 0)
		return 0;
	flags = in_u8(&in);
	if (flags & 1)
		control_run(&in);
	else
		monitor_run(flags, &in);
	return 0;
}
