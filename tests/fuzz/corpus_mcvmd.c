/*
 * Writes the seed corpus of fuzz-mcvmd into the directory given: one
 * input per tool's round trip through the monitor, the answers a hostile
 * monitor gives, and control-socket sessions.  The input format is
 * fuzz_mcvmd.c's; the bytes below follow it:
 *
 *	byte 0	0x08 a running VM with a ready guest, 0x0c paused,
 *		0x32 booting with network and a creation waiting, 0x48
 *		and 0x4c running and paused with QEMU and the monitor
 *		up, 0xc2 the template booting, 0x01 the control socket
 *	CALL(t)	a tool call: 0x00, the index of the tool in vm_tools[],
 *		then for each parameter a presence byte (bit 0 set: left
 *		out) and its value
 *	ANS	an answer to the oldest call in flight, of the type it
 *		wants, its fields shaped (0x07 0x01 0x00 0x00)
 *	fields	u32/u64: one byte below 0x40 is the value, 0x40-0x7f
 *		takes a second byte (value (b0 & 0x3f) << 10 | b1);
 *		str/bytes: a length byte below 0x40 and the bytes, or
 *		0x80 | pattern << 4 | length index for a long run
 */
#include <err.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define RUN	"\x08"
#define PAUSED	"\x0c"
#define ALIVE	"\x48"		/* running, QEMU and monitor up */
#define ALIVE_PAUSED "\x4c"
#define TEMPLATE "\xc2"		/* the template, booting, processes up */
#define ANS	"\x07\x01\x00\x00"
#define ANS_ERR	"\x07\x21\x00\x00"	/* the oldest call fails */
#define VMID	"\x00"			/* vm_id present */
#define SKIP	"\x01"		/* an optional parameter left out */

#define C_STATUS	"\x00\x00" VMID
#define C_EXEC(cmd, n)	"\x00\x01" VMID "\x02" "\x00" n cmd SKIP SKIP SKIP
#define C_OUTPUT	"\x00\x02" VMID "\x00"
#define C_READ		"\x00\x03" VMID "\x00\x05" "a.txt" SKIP SKIP
#define C_WRITE		"\x00\x06" VMID "\x00\x05" "a.txt" "\x00\x02" \
			SKIP
#define C_SUSPEND	"\x00\x07" VMID "\x02" "\x02"	/* pause, force */
#define C_RESUME	"\x00\x08" VMID
#define C_STOP		"\x00\x09" VMID SKIP SKIP
#define C_JSTATUS	"\x00\x04" VMID "\x00"
#define C_DESTROY	"\x00\x0c" VMID
#define C_STOP_FORCE	"\x00\x09" VMID "\x02" SKIP
#define EXITED		"\x04\x01\x04\x02"	/* QEMU, then monitor */
#define HELD		"\x07\xa0\x00\x00" "\x07" "\x00"	/* event HELD */

/* A job status: job 5, completed, every stream at 6 bytes. */
#define STATUS(state)	"\x05" state "\x00\x01\x01\x00\x00" \
			"\x06\x06\x06\x06\x01"
#define GUEST_INFO	"\x05" "Linux" "\x01" "6" "\x03" "1.0" \
			"\x05\x00\x00\x00"

static const struct seed {
	const char	*name;
	const char	*bytes;
	size_t		 len;
} seeds[] = {
#define SEED(n, b)	{ n, b, sizeof(b) - 1 }
	SEED("status", RUN C_STATUS ANS "\x07running" "\x01" ANS GUEST_INFO),
	SEED("status-paused", PAUSED C_STATUS ANS "\x06paused" "\x00"),
	SEED("exec", RUN C_EXEC("true", "\x04") SKIP ANS "\x05"),
	/* wait_seconds 5: the job's output is this call's answer. */
	SEED("exec-wait", RUN C_EXEC("true", "\x04") "\x00\x05" ANS "\x05"
	    ANS STATUS("\x01") "\x06" "\x06hello\n" "\x00" "\x00" "\x00"
	    "\x00"),
	/* Two streams of 48 KiB of \x01, ~576 KiB once escaped: over the
	 * result budget, which the call alone must pay for. */
	SEED("exec-wait-huge", RUN C_EXEC("true", "\x04") "\x00\x05" ANS
	    "\x05" ANS "\x05\x01\x00\x01\x01\x00\x00" "\x70\x00\x70\x00"
	    "\x70\x00\x70\x00\x01" "\x70\x00" "\x9a" "\x00" "\x70\x00" "\x9a"
	    "\x00"),
	SEED("exec-restart", RUN C_EXEC("sleep 9", "\x07") "\x00\x05" ANS
	    "\x05" "\x04\x00" ANS STATUS("\x01") "\x06" "\x06hello\n" "\x00"
	    "\x00" "\x00" "\x00"),
	SEED("exec-cancel", RUN C_EXEC("sleep 9", "\x07") "\x00\x05" ANS
	    "\x05" "\x03\x00" ANS STATUS("\x00") "\x00" "\x00" "\x00" "\x00"
	    "\x00" "\x00"),
	/* A cursor past what the job retains fails the call alone. */
	SEED("output", RUN C_OUTPUT "\x00\x10\x10" SKIP SKIP ANS
	    STATUS("\x01") "\x07" "\x06hello\n" "\x00" "\x00" "\x00" "\x00"),
	SEED("output-base64", RUN C_OUTPUT SKIP "\x02" SKIP ANS
	    STATUS("\x01") "\x06" "\x08" "aGVsbG8K" "\x00" "\x00" "\x00"
	    "\x00"),
	SEED("job-status", RUN C_JSTATUS ANS STATUS("\x02")),
	SEED("read", RUN C_READ ANS "\x00\x05\x01" "\x05hello"),
	SEED("read-big", RUN C_READ ANS "\x00\x40\x80\x01" "\x8d"),
	SEED("write", RUN C_WRITE ANS "\x20\x20"),
	SEED("suspend", RUN C_SUSPEND ANS GUEST_INFO ANS "\x00" ANS "\x00"),
	SEED("resume", PAUSED C_RESUME ANS "\x00" ANS "\x00" ANS "\x00"),
	SEED("stop", RUN C_STOP ANS "\x00"),
	SEED("stop-alive", ALIVE C_STOP ANS "\x00" EXITED),
	/* A pause the monitor confirms after the VM was destroyed (or
	 * stopped) must not bring the VM back as paused. */
	SEED("suspend-destroy", ALIVE C_SUSPEND ANS GUEST_INFO ANS "\x00"
	    C_DESTROY ANS "\x00" EXITED),
	SEED("suspend-stop", ALIVE C_SUSPEND ANS GUEST_INFO ANS "\x00"
	    C_STOP_FORCE ANS "\x00" EXITED),
	SEED("resume-destroy", ALIVE_PAUSED C_RESUME C_DESTROY ANS "\x00"
	    EXITED),
	/* The template holds, and its monitor writes the checkpoint. */
	SEED("template", TEMPLATE HELD ANS "\x00" EXITED),
	/* It fails (a HELLO of another protocol) while the checkpoint is
	 * written: the late answer must not make it a template again. */
	SEED("template-fail", TEMPLATE HELD "\x07\xb0\x00\x00" "\x3f" ANS
	    "\x00" EXITED),
	SEED("monitor-dies", ALIVE C_STATUS "\x04\x02" ANS "\x07running"
	    "\x01" "\x04\x01"),
	SEED("boot", "\x32" "\x07\x90\x00\x00" "\x01" "1" "\x05" "Linux"
	    "\x01" "6"
	    ANS "\x00"),
	/* An error whose text is 255 bytes of two-byte characters. */
	SEED("error-text", RUN C_STATUS ANS_ERR "\x05\x00" "\xa2"),
	SEED("event", RUN "\x07\xa0\x00\x00" "\x03\x00" C_STATUS ANS
	    "\x07running" "\x01"),
	SEED("bad-framing", RUN C_STATUS "\x05\x08" "\x01\x02\x03\x04\x05"
	    "\x06\x07\x08"),
	SEED("eof", RUN C_STATUS C_EXEC("true", "\x04") SKIP "\x06\x00"),
	SEED("control", "\x01" "\x00\x07" "\x03\x02" "\x01\x01"
	    "0123456789abcdef0123456789abcdef" "\x00\x3f\x00\x00\x03"
	    "\x03\x04" "\x02\x01\x05"),
	SEED("control-bad", "\x01" "\x30\x99\x00\x00\x00\x01"),
#undef SEED
};

int
main(int argc, char *argv[])
{
	char	 path[4096];
	size_t	 i;
	int	 fd;

	if (argc != 2)
		errx(1, "usage: %s directory", argv[0]);
	for (i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		(void)snprintf(path, sizeof(path), "%s/seed-%s", argv[1],
		    seeds[i].name);
		if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) ==
		    -1)
			err(1, "%s", path);
		if (write(fd, seeds[i].bytes, seeds[i].len) !=
		    (ssize_t)seeds[i].len)
			err(1, "%s", path);
		close(fd);
	}
	return 0;
}
