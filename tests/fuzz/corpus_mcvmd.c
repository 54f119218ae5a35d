/*
 * Writes the seed corpus of fuzz-mcvmd into the directory given: one
 * input per tool's round trip through the monitor, the answers a hostile
 * monitor gives, and control-socket sessions.  The input format is
 * fuzz_mcvmd.c's.  Every message the monitor sends is written by its
 * codec (msg_vmm.h, msg_proc.h), then spelt in that format field by field,
 * so a seed's frames are what the monitor writes; what is not a monitor's
 * message (the VM's state, tool calls, exits, bad frames, control
 * sessions) is spelt directly:
 *
 *	byte 0	0x08 a running VM with a ready guest, 0x0c paused,
 *		0x32 booting with network and a creation waiting, 0x48
 *		and 0x4c running and paused with QEMU and the monitor
 *		up, 0xc2 the template booting, 0x01 the control socket
 *	CALL(t)	a tool call: 0x00, the index of the tool in vm_tools[],
 *		then for each parameter a presence byte (bit 0 set: left
 *		out) and its value
 *	frames	0x07, then the type (0x01 the one the oldest call in
 *		flight wants, 0x21 its IMSG_VMM_ERROR, 0x0c one given as a
 *		u32 after the mode), the peerid (0x00 the oldest call, 0xe0
 *		none), the mode (0x00 the fields in the shape of the type,
 *		0x02 a count and each field's kind), the fields
 *	fields	u32/u64: one byte below 0x40 is the value, 0xc0 and the
 *		value in 4 or 8 bytes; str/bytes: a length byte below 0x40
 *		and the bytes, or 0x80 | pattern << 4 | length index for a
 *		run (FZ_RUN_PATTERNS, FZ_RUN_LENGTHS)
 */
#include <err.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_mcvmd.h"
#include "imsg.h"
#include "msg.h"
#include "msg_proc.h"
#include "msg_vmm.h"
#include "proto.h"

#define SEED_MAX	1024

#define RUN	"\x08"
#define PAUSED	"\x0c"
#define ALIVE	"\x48"		/* running, QEMU and monitor up */
#define ALIVE_PAUSED "\x4c"
#define TEMPLATE "\xc2"		/* the template, booting, processes up */
#define BOOTING	"\x32"
#define VMID	"\x00"			/* vm_id present */
#define SKIP	"\x01"		/* an optional parameter left out */

#define C_STATUS	"\x00\x00" VMID
#define C_EXEC(cmd, n)	"\x00\x01" VMID "\x02" "\x00" n cmd SKIP SKIP SKIP
#define C_OUTPUT	"\x00\x02" VMID "\x00"
#define C_READ		"\x00\x03" VMID "\x00\x05" "a.txt" SKIP SKIP SKIP
#define C_WRITE		"\x00\x06" VMID "\x00\x05" "a.txt" SKIP "\x00\x02" \
			SKIP
#define C_WRITE_TEXT	"\x00\x06" VMID "\x00\x05" "a.txt" "\x00\x05" \
			"hello" SKIP SKIP
#define C_LIST		"\x00\x11" VMID SKIP SKIP
#define C_SUSPEND	"\x00\x07" VMID "\x02" "\x02"	/* pause, force */
#define C_RESUME	"\x00\x08" VMID
#define C_STOP		"\x00\x09" VMID SKIP SKIP
#define C_JSTATUS	"\x00\x04" VMID "\x00"
#define C_DESTROY	"\x00\x0c" VMID
#define C_STOP_FORCE	"\x00\x09" VMID "\x02" SKIP
#define C_SNAP(i, tag)	"\x00" i VMID "\x00\x05" tag
#define C_SNAP_CREATE	C_SNAP("\x12", "first")
#define C_SNAP_RESTORE	C_SNAP("\x13", "first")
#define C_SNAP_DELETE	C_SNAP("\x14", "first")
#define C_SNAP_LIST	"\x00\x15" VMID
/* The image is fuzz_mcvmd.c's, never reported: the creation waits. */
#define C_CREATE(image)	"\x00\x10" "\x02" SKIP image SKIP SKIP SKIP SKIP \
			SKIP SKIP
#define EXITED		"\x04\x01\x04\x02"	/* QEMU, then monitor */
#define RESTART		"\x04\x00"		/* frontd starts again */
#define CANCEL		"\x03\x00"		/* frontd cancels call 1 */

/* How a frame's type is chosen. */
#define T_WANTED	0x01	/* the one the oldest call wants */
#define T_ERROR		0x21	/* the oldest call fails */
#define T_GIVEN		0x0c	/* a u32 after the mode */

static const char *const pats[] = FZ_RUN_PATTERNS;
static const size_t	 longs[] = FZ_RUN_LENGTHS;
static const struct {
	uint32_t	 type;
	const char	*shape;
} answers[] = FZ_ANSWERS;

/* The seed being written. */
static uint8_t		 seed[SEED_MAX];
static size_t		 seedlen;
static const char	*seedname;

static void
raw(const void *p, size_t n)
{
	if (n > sizeof(seed) - seedlen)
		errx(1, "seed-%s: too long", seedname);
	memcpy(seed + seedlen, p, n);
	seedlen += n;
}

#define RAW(s)		raw(s, sizeof(s) - 1)

static void
byte(uint8_t b)
{
	raw(&b, 1);
}

static void
val(uint64_t v, size_t size)
{
	uint8_t	 b[8];

	if (v < 0x40) {
		byte((uint8_t)v);
		return;
	}
	byte(0xc0);
	le64_put(b, v);
	raw(b, size);
}

/* A str (its NUL not counted) or bytes field's value. */
static void
text(const uint8_t *p, size_t len, int str)
{
	size_t	 i, j, pl;

	if (len < 0x40 && (!str || memchr(p, '\0', len) == NULL)) {
		byte((uint8_t)len);
		raw(p, len);
		return;
	}
	for (i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
		pl = strlen(pats[i]);
		for (j = 0; j < sizeof(longs) / sizeof(longs[0]); j++) {
			if (len != longs[j] - longs[j] % pl)
				continue;
			if (len > 0 && (memcmp(p, pats[i], pl) != 0 ||
			    memcmp(p, p + pl, len - pl) != 0))
				continue;
			byte((uint8_t)(0x80 | i << 4 | j));
			return;
		}
	}
	errx(1, "seed-%s: a field of %zu bytes the format cannot spell",
	    seedname, len);
}

static const char *
shape_of(uint32_t type)
{
	size_t	 i;

	for (i = 0; i < sizeof(answers) / sizeof(answers[0]); i++)
		if (answers[i].type == type)
			return answers[i].shape;
	errx(1, "no shape for %s", imsg_type_name(type));
}

/*
 * The frame b of type, which its codec wrote: in the type's shape, which
 * must be the codec's, when it has more fields than a count can say.
 */
static void
frame(uint8_t how, uint32_t type, struct ibuf *b)
{
	const uint8_t	*p = b->buf + IMSG_HDR_SIZE, *end = b->buf + b->size;
	const char	*shape = shape_of(type);
	uint8_t		 t;
	uint32_t	 len;
	size_t		 n, i;

	if (b->err)
		errx(1, "seed-%s: %s: %s", seedname, imsg_type_name(type),
		    strerror(b->err));
	n = strlen(shape);
	byte(0x07);
	byte(how);
	byte(how == T_GIVEN ? 0xe0 : 0x00);
	byte(n > 11 ? 0x00 : 0x02);
	if (how == T_GIVEN) {
		uint8_t	 tb[4];

		le32_put(tb, type);
		raw(tb, sizeof(tb));
	}
	if (n <= 11)
		byte((uint8_t)n);
	for (i = 0; p < end; i++) {
		t = *p++;
		if (i >= n || "uUsb"[t - MF_U32] != shape[i])
			errx(1, "%s: the codec's field %zu is not the "
			    "shape's %s", imsg_type_name(type), i, shape);
		if (n <= 11)
			byte(t - MF_U32);
		switch (t) {
		case MF_U32:
			val(le32_get(p), 4);
			p += 4;
			break;
		case MF_U64:
			val(le64_get(p), 8);
			p += 8;
			break;
		default:
			len = le32_get(p);
			p += 4;
			text(p, t == MF_STR ? len - 1 : len, t == MF_STR);
			p += len;
			break;
		}
	}
	if (i != n)
		errx(1, "%s: %zu fields, the shape has %zu",
		    imsg_type_name(type), i, n);
	imsg_discard(b);
}

static struct ibuf *
msg(uint32_t type)
{
	struct ibuf	*b;

	if ((b = imsg_create(NULL, type, 0, 0, 0)) == NULL)
		err(1, "imsg_create");
	return b;
}

static void
ok(void)
{
	struct msg_vmm_ok	 m = { 0 };
	struct ibuf		*b = msg(IMSG_VMM_OK);

	msg_vmm_ok_put(b, &m);
	frame(T_WANTED, IMSG_VMM_OK, b);
}

static void
qmp_state(const char *status, uint32_t running)
{
	struct msg_vmm_qmp_state m = { .status = status, .running = running };
	struct ibuf		*b = msg(IMSG_VMM_QMP_STATE);

	msg_vmm_qmp_state_put(b, &m);
	frame(T_WANTED, IMSG_VMM_QMP_STATE, b);
}

static void
guest_info(void)
{
	static struct msg_vmm_guest_info_result m = { .os = "Linux",
	    .kernel = "6", .agent_version = "1.0", .uptime_ms = 5,
	    .jobs_total = 1, .njobs = 1, .jobs = { { 1, AGENT_JOB_COMPLETED } } };
	struct ibuf		*b = msg(IMSG_VMM_GUEST_INFO_RESULT);

	msg_vmm_guest_info_result_put(b, &m);
	frame(T_WANTED, IMSG_VMM_GUEST_INFO_RESULT, b);
}

static void
job(uint32_t id)
{
	struct msg_vmm_job	 m = { .job = id };
	struct ibuf		*b = msg(IMSG_VMM_JOB);

	msg_vmm_job_put(b, &m);
	frame(T_WANTED, IMSG_VMM_JOB, b);
}

/* Job 5 in state, both streams ended at 6 bytes. */
static struct msg_job_status
status(uint32_t state)
{
	struct msg_job_status	 st = { .job = 5, .state = state,
	    .out_eof = 1, .err_eof = 1, .out_total = 6, .err_total = 6,
	    .runtime_ms = 1 };

	return st;
}

static void
snapshot_done(uint64_t vm_size, uint32_t found)
{
	struct msg_vmm_snapshot_done m = { .vm_size = vm_size,
	    .found = found };
	struct ibuf		*b = msg(IMSG_VMM_SNAPSHOT_DONE);

	msg_vmm_snapshot_done_put(b, &m);
	frame(T_WANTED, IMSG_VMM_SNAPSHOT_DONE, b);
}

static void
job_state(uint32_t state)
{
	struct msg_vmm_job_state m = { .st = status(state) };
	struct ibuf		*b = msg(IMSG_VMM_JOB_STATE);

	msg_vmm_job_state_put(b, &m);
	frame(T_WANTED, IMSG_VMM_JOB_STATE, b);
}

static void
job_output(const struct msg_vmm_job_output *m)
{
	struct ibuf	*b = msg(IMSG_VMM_JOB_OUTPUT);

	msg_vmm_job_output_put(b, m);
	frame(T_WANTED, IMSG_VMM_JOB_OUTPUT, b);
}

/* Job 5's output, running: out up to out_next, nothing on stderr. */
static void
hello_output(uint64_t out_next, const char *out)
{
	struct msg_vmm_job_output m = { .st = status(AGENT_JOB_RUNNING),
	    .out_next = out_next, .out = out, .err = "" };

	job_output(&m);
}

static void
file_data(uint64_t size, const void *data, size_t len)
{
	struct msg_vmm_file_data m = { .offset = 0, .size = size, .eof = 1,
	    .text = 1, .data = data, .len = len };
	struct ibuf		*b = msg(IMSG_VMM_FILE_DATA);

	msg_vmm_file_data_put(b, &m);
	frame(T_WANTED, IMSG_VMM_FILE_DATA, b);
}

static void
file_entries(const char *name)
{
	static struct msg_vmm_file_entries m;
	struct ibuf		*b = msg(IMSG_VMM_FILE_ENTRIES);

	m.truncated = 0;
	m.count = 1;
	m.ents[0].name = name;
	m.ents[0].type = AGENT_FTYPE_FILE;
	m.ents[0].mode = 0644;
	m.ents[0].size = 5;
	m.ents[0].mtime = 1700000000;
	msg_vmm_file_entries_put(b, &m);
	frame(T_WANTED, IMSG_VMM_FILE_ENTRIES, b);
}

static void
file_written(uint64_t size, uint32_t written)
{
	struct msg_vmm_file_written m = { .size = size, .written = written };
	struct ibuf		*b = msg(IMSG_VMM_FILE_WRITTEN);

	msg_vmm_file_written_put(b, &m);
	frame(T_WANTED, IMSG_VMM_FILE_WRITTEN, b);
}

static void
error(uint32_t code, const char *message)
{
	struct msg_vmm_error	 m = { .code = code, .message = message };
	struct ibuf		*b = msg(IMSG_VMM_ERROR);

	msg_vmm_error_put(b, &m);
	frame(T_ERROR, IMSG_VMM_ERROR, b);
}

static void
event(uint32_t ev)
{
	struct msg_vmm_event	 m = { .event = ev, .detail = "" };
	struct ibuf		*b = msg(IMSG_VMM_EVENT);

	msg_vmm_event_put(b, &m);
	frame(T_GIVEN, IMSG_VMM_EVENT, b);
}

static void
ready(void)
{
	struct msg_vmm_ready	 m = { .agent_version = "1", .os = "Linux",
	    .kernel = "6" };
	struct ibuf		*b = msg(IMSG_VMM_READY);

	msg_vmm_ready_put(b, &m);
	frame(T_GIVEN, IMSG_VMM_READY, b);
}

static void
hello(uint32_t version)
{
	struct msg_hello	 m = { .version = version };
	struct ibuf		*b = msg(IMSG_HELLO);

	msg_hello_put(b, &m);
	frame(T_GIVEN, IMSG_HELLO, b);
}

/* n bytes of pattern p (FZ_RUN_PATTERNS), NUL-terminated. */
static char *
run(size_t p, size_t n)
{
	size_t	 pl = strlen(pats[p]), i;
	char	*s;

	if ((s = malloc(n + 1)) == NULL)
		err(1, NULL);
	for (i = 0; i < n; i++)
		s[i] = pats[p][i % pl];
	s[n] = '\0';
	return s;
}

static void
write_seed(const char *dir)
{
	char	 path[4096];
	int	 fd;

	(void)snprintf(path, sizeof(path), "%s/seed-%s", dir, seedname);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1)
		err(1, "%s", path);
	if (write(fd, seed, seedlen) != (ssize_t)seedlen)
		err(1, "%s", path);
	close(fd);
}

static void
begin(const char *name)
{
	seedname = name;
	seedlen = 0;
}

/* The seeds whose monitor speaks. */
static void
monitor_seeds(const char *dir)
{
	struct msg_vmm_job_output	 huge;
	char				*s;

	begin("status");
	RAW(RUN C_STATUS);
	qmp_state("running", 1);
	guest_info();
	write_seed(dir);

	begin("status-paused");
	RAW(PAUSED C_STATUS);
	qmp_state("paused", 0);
	write_seed(dir);

	begin("exec");
	RAW(RUN C_EXEC("true", "\x04") SKIP);
	job(5);
	write_seed(dir);

	/* wait_seconds 5: the job's output is this call's answer. */
	begin("exec-wait");
	RAW(RUN C_EXEC("true", "\x04") "\x00\x05");
	job(5);
	hello_output(6, "hello\n");
	write_seed(dir);

	/* Two streams of 48 KiB of \x01, ~576 KiB once escaped: over the
	 * result budget, which the call alone must pay for. */
	begin("exec-wait-huge");
	s = run(1, 49151);
	huge = (struct msg_vmm_job_output){ .st = status(
	    AGENT_JOB_RUNNING), .out_next = 49152, .out = s,
	    .err_next = 49152, .err = s };
	huge.st.out_total = huge.st.err_total = 49152;
	RAW(RUN C_EXEC("true", "\x04") "\x00\x05");
	job(5);
	job_output(&huge);
	free(s);
	write_seed(dir);

	begin("create-wait-cancel");
	RAW(RUN C_CREATE("\x00") CANCEL);
	write_seed(dir);

	begin("create-wait-restart");
	RAW(RUN C_CREATE(SKIP) C_CREATE("\x00") RESTART);
	write_seed(dir);

	begin("exec-restart");
	RAW(RUN C_EXEC("sleep 9", "\x07") "\x00\x05");
	job(5);
	RAW(RESTART);
	hello_output(6, "hello\n");
	write_seed(dir);

	begin("exec-cancel");
	RAW(RUN C_EXEC("sleep 9", "\x07") "\x00\x05");
	job(5);
	RAW(CANCEL);
	/* In state 0, none at all, and no output. */
	huge = (struct msg_vmm_job_output){ .st = status(0), .out = "",
	    .err = "" };
	job_output(&huge);
	write_seed(dir);

	/* A cursor past what the job retains fails the call alone. */
	begin("output");
	RAW(RUN C_OUTPUT "\x00\x10\x10" SKIP SKIP);
	hello_output(7, "hello\n");
	write_seed(dir);

	begin("output-base64");
	RAW(RUN C_OUTPUT SKIP "\x02" SKIP);
	hello_output(6, "aGVsbG8K");
	write_seed(dir);

	begin("job-status");
	RAW(RUN C_JSTATUS);
	job_state(AGENT_JOB_COMPLETED);
	write_seed(dir);

	begin("read");
	RAW(RUN C_READ);
	file_data(5, "hello", 5);
	write_seed(dir);

	begin("read-big");
	s = run(0, 65536);
	RAW(RUN C_READ);
	file_data(128, s, 65536);
	free(s);
	write_seed(dir);

	begin("write");
	RAW(RUN C_WRITE);
	file_written(32, 32);
	write_seed(dir);

	begin("write-text");
	RAW(RUN C_WRITE_TEXT);
	file_written(5, 5);
	write_seed(dir);

	begin("list");
	RAW(RUN C_LIST);
	file_entries("a.txt");
	write_seed(dir);

	begin("suspend");
	RAW(RUN C_SUSPEND);
	guest_info();
	ok();
	ok();
	write_seed(dir);

	begin("resume");
	RAW(PAUSED C_RESUME);
	ok();
	ok();
	ok();
	write_seed(dir);

	begin("stop");
	RAW(RUN C_STOP);
	ok();
	write_seed(dir);

	begin("stop-alive");
	RAW(ALIVE C_STOP);
	ok();
	RAW(EXITED);
	write_seed(dir);

	/* A pause the monitor confirms after the VM was destroyed (or
	 * stopped) must not bring the VM back as paused. */
	begin("suspend-destroy");
	RAW(ALIVE C_SUSPEND);
	guest_info();
	ok();
	RAW(C_DESTROY);
	ok();
	RAW(EXITED);
	write_seed(dir);

	begin("suspend-stop");
	RAW(ALIVE C_SUSPEND);
	guest_info();
	ok();
	RAW(C_STOP_FORCE);
	ok();
	RAW(EXITED);
	write_seed(dir);

	begin("resume-destroy");
	RAW(ALIVE_PAUSED C_RESUME C_DESTROY);
	ok();
	RAW(EXITED);
	write_seed(dir);

	/* The template holds, and its monitor writes the checkpoint. */
	begin("template");
	RAW(TEMPLATE);
	event(VMM_EV_HELD);
	ok();
	RAW(EXITED);
	write_seed(dir);

	/* It fails (a HELLO of another protocol) while the checkpoint is
	 * written: the late answer must not make it a template again. */
	begin("template-fail");
	RAW(TEMPLATE);
	event(VMM_EV_HELD);
	hello(63);
	ok();
	RAW(EXITED);
	write_seed(dir);

	begin("monitor-dies");
	RAW(ALIVE C_STATUS "\x04\x02");
	qmp_state("running", 1);
	RAW("\x04\x01");
	write_seed(dir);

	begin("boot");
	RAW(BOOTING);
	ready();
	ok();
	write_seed(dir);

	/* An error whose text is 254 bytes of two-byte characters. */
	begin("error-text");
	s = run(2, 254);
	RAW(RUN C_STATUS);
	error(5, s);
	free(s);
	write_seed(dir);

	/* Live snapshots: taken, listed, restored (the clock set after),
	 * deleted, deleted again (none on the disk). */
	begin("snapshot");
	RAW(ALIVE C_SNAP_CREATE);
	snapshot_done(123456789, 1);
	RAW(C_SNAP_LIST C_SNAP_RESTORE);
	snapshot_done(0, 1);
	ok();
	RAW(C_SNAP_DELETE);
	snapshot_done(0, 1);
	RAW(C_SNAP_DELETE);
	snapshot_done(0, 0);
	write_seed(dir);

	/* A load that fails leaves QEMU stopped: the VM follows. */
	begin("snapshot-restore-fails");
	RAW(ALIVE C_SNAP_CREATE);
	snapshot_done(5, 1);
	RAW(C_SNAP_RESTORE);
	error(VMM_ERR_QMP, "QEMU's snapshot load failed");
	qmp_state("restore-vm", 0);
	RAW(C_STATUS);
	write_seed(dir);

	/* The VM stops while the snapshot is taken. */
	begin("snapshot-stop");
	RAW(ALIVE C_SNAP_CREATE C_STOP_FORCE);
	ok();
	snapshot_done(5, 1);
	RAW(EXITED);
	write_seed(dir);

	begin("event");
	RAW(RUN);
	event(VMM_EV_SHUTDOWN);
	RAW(C_STATUS);
	qmp_state("running", 1);
	write_seed(dir);
}

/* What no codec writes: bad frames, the channel's end, control. */
static const struct seed {
	const char	*name;
	const char	*bytes;
	size_t		 len;
} seeds[] = {
#define RAWSEED(n, b)	{ n, b, sizeof(b) - 1 }
	RAWSEED("bad-framing", RUN C_STATUS "\x05\x08" "\x01\x02\x03\x04"
	    "\x05\x06\x07\x08"),
	RAWSEED("eof", RUN C_STATUS C_EXEC("true", "\x04") SKIP "\x06\x00"),
	RAWSEED("control", "\x01" "\x00\x07" "\x03\x02" "\x01\x01"
	    "0123456789abcdef0123456789abcdef" "\x00\x3f\x00\x00\x03"
	    "\x03\x04" "\x02\x01\x05"),
	RAWSEED("control-bad", "\x01" "\x30\x99\x00\x00\x00\x01"),
#undef RAWSEED
};

int
main(int argc, char *argv[])
{
	const char	*dir;
	size_t		 i;

	if (argc != 2)
		errx(1, "usage: %s directory", argv[0]);
	dir = argv[1];
	monitor_seeds(dir);
	for (i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		seedname = seeds[i].name;
		seedlen = 0;
		raw(seeds[i].bytes, seeds[i].len);
		write_seed(dir);
	}
	return 0;
}
