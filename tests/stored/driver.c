/*
 * stored-driver: plays mcvmd to a real mcvm-stored.  It starts the binary
 * with a socketpair on fd 3, then runs the commands on its command line
 * in order and prints one line per reply, for tests/suites/stored:
 *
 *	hello			wait for IMSG_HELLO
 *	status N		wait until N IMSG_STORE_IMAGE_STATUS came
 *	preflight		IMSG_STORE_PREFLIGHT
 *	create VM IMAGE		IMSG_STORE_DISK_CREATE
 *	open VM IMAGE		IMSG_STORE_DISK_OPEN
 *	delete VM		IMSG_STORE_DISK_DELETE
 *	list			IMSG_STORE_DISK_LIST
 *	checkpoint VM W		IMSG_STORE_CHECKPOINT, to write (W 1) or
 *				read (W 0)
 *	many N IMAGE		N times create, open and delete (quietly);
 *				prints stored's open fds before and after
 *	malformed		DISK_CREATE whose fields have the wrong type
 *	badid			DISK_CREATE with an id that is not one
 *	unknown			a message type stored does not take
 *	exit			wait for stored to exit; print how
 *	run CMD			run a shell command between requests
 *
 * Each received fd is checked and described: its role, access mode, file
 * type, size and first bytes.  At the end the driver closes the channel
 * and waits for stored, which must exit 0.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "imsg.h"
#include "msg.h"
#include "proto.h"
#include "daemon.h"

#define DRIVER_TIMEOUT_MS	(60 * 1000)
#define DRIVER_HEAD		8	/* first bytes shown of each fd */

static struct imsgbuf	 ib;
static pid_t		 stored_pid;
static uint32_t		 next_id = 1;
static int		 nstatus;
static int		 quiet;

/* The next message, or 0 at EOF; exits after DRIVER_TIMEOUT_MS. */
static int
next_msg(struct imsg *imsg)
{
	return test_daemon_next(&ib, stored_pid, DRIVER_TIMEOUT_MS, imsg);
}

static void
bad(const char *what)
{
	printf("bad %s\n", what);
	fflush(stdout);
	exit(1);
}

static void
print_status(struct imsg *imsg)
{
	struct mreader	 r;
	const char	*name, *text;
	uint32_t	 ok;
	uint64_t	 bytes;

	m_init(&r, imsg);
	if (m_get_str(&r, &name, 256) == -1 || m_get_u32(&r, &ok) == -1 ||
	    m_get_u64(&r, &bytes) == -1 || m_get_str(&r, &text, 4096) == -1 ||
	    m_end(&r) == -1 || imsg->hdr.peerid != 0)
		bad("IMAGE_STATUS");
	nstatus++;
	printf("status %s ok=%u bytes=%" PRIu64 " text=%s\n", name, ok, bytes,
	    text);
}

static const char *
role_name(uint32_t role)
{
	switch (role) {
	case STORE_FD_DISK:
		return "disk";
	case STORE_FD_BASE:
		return "base";
	case STORE_FD_KERNEL:
		return "kernel";
	case STORE_FD_INITRD:
		return "initrd";
	case STORE_FD_CHECKPOINT:
		return "checkpoint";
	}
	return "unknown";
}

static void
print_fd(uint32_t role, int fd)
{
	struct stat	 st;
	uint8_t		 head[DRIVER_HEAD];
	char		 hex[2 * DRIVER_HEAD + 1];
	ssize_t		 n, i;
	int		 fl, acc;

	if (fd == -1)
		bad("STORE_FD without an fd");
	if (fstat(fd, &st) == -1 || (fl = fcntl(fd, F_GETFL)) == -1)
		bad("fd");
	acc = fl & O_ACCMODE;
	n = pread(fd, head, sizeof(head), 0);
	hex[0] = '\0';
	for (i = 0; i < n; i++)
		(void)snprintf(hex + 2 * i, 3, "%02x", head[i]);
	if (!quiet)
		printf("fd role=%s mode=%s type=%s size=%lld dev=%lu ino=%lu "
		    "head=%s\n", role_name(role),
		    acc == O_RDWR ? "rw" : acc == O_RDONLY ? "ro" : "wo",
		    S_ISREG(st.st_mode) ? "reg" : "other",
		    (long long)st.st_size, (unsigned long)st.st_dev,
		    (unsigned long)st.st_ino, hex);
	close(fd);
}

/*
 * Reads the replies to request id up to its IMSG_STORE_RESULT.  Returns
 * the status; *fds counts the fds received.
 */
static uint32_t
replies(uint32_t id, uint32_t want_type, int *fds)
{
	struct imsg	 imsg;
	struct mreader	 r;
	const char	*text;
	uint32_t	 status, fmt, role, reflink;
	uint64_t	 bytes;

	*fds = 0;
	for (;;) {
		if (next_msg(&imsg) == 0)
			bad("EOF before the reply");
		if (imsg.hdr.type == IMSG_STORE_IMAGE_STATUS) {
			print_status(&imsg);
			imsg_free(&imsg);
			continue;
		}
		if (imsg.hdr.peerid != id)
			bad("peerid");
		m_init(&r, &imsg);
		switch (imsg.hdr.type) {
		case IMSG_STORE_PREFLIGHT_RESULT:
			if (want_type != IMSG_STORE_PREFLIGHT_RESULT ||
			    m_get_u32(&r, &reflink) == -1 ||
			    m_get_str(&r, &text, 4096) == -1 ||
			    m_end(&r) == -1)
				bad("PREFLIGHT_RESULT");
			printf("preflight reflink=%u text=%s\n", reflink,
			    text);
			imsg_free(&imsg);
			return 0;
		case IMSG_STORE_FD:
			if (m_get_u32(&r, &role) == -1 || m_end(&r) == -1)
				bad("STORE_FD");
			print_fd(role, imsg_get_fd(&imsg));
			(*fds)++;
			break;
		case IMSG_STORE_DISK_ENTRY:
			if (m_get_str(&r, &text, 256) == -1 ||
			    m_end(&r) == -1 || imsg.fd != -1)
				bad("DISK_ENTRY");
			printf("entry %s\n", text);
			break;
		case IMSG_STORE_RESULT:
			if (m_get_u32(&r, &status) == -1 ||
			    m_get_u32(&r, &fmt) == -1 ||
			    m_get_u64(&r, &bytes) == -1 ||
			    m_get_str(&r, &text, 4096) == -1 ||
			    m_end(&r) == -1 || imsg.fd != -1)
				bad("STORE_RESULT");
			if (status != 0 && *fds != 0)
				bad("fds before a failed result");
			if (!quiet || status != 0)
				printf("result status=%s format=%s bytes=%"
				    PRIu64 " fds=%d text=%s\n",
				    test_errname(status),
				    fmt == DISK_RAW ? "raw" : "qcow2", bytes,
				    *fds, text);
			imsg_free(&imsg);
			return status;
		default:
			bad(imsg_type_name(imsg.hdr.type));
		}
		imsg_free(&imsg);
	}
}

static uint32_t
request(uint32_t type, const char *vm, const char *image, int *fds)
{
	struct ibuf	*b;
	uint32_t	 id = next_id++;

	if ((b = imsg_create(&ib, type, id, 0, 128)) == NULL)
		err(1, "imsg_create");
	if (vm != NULL)
		m_add_str(b, vm);
	if (image != NULL)
		m_add_str(b, image);
	if (imsg_close(&ib, b) == -1 || imsgbuf_flush(&ib) == -1)
		err(1, "send");
	return replies(id, type == IMSG_STORE_PREFLIGHT ?
	    IMSG_STORE_PREFLIGHT_RESULT : IMSG_STORE_RESULT, fds);
}

static void
checkpoint(const char *vm, uint32_t write)
{
	struct ibuf	*b;
	uint32_t	 id = next_id++;
	int		 fds;

	if ((b = imsg_create(&ib, IMSG_STORE_CHECKPOINT, id, 0, 64)) == NULL)
		err(1, "imsg_create");
	m_add_str(b, vm);
	m_add_u32(b, write);
	if (imsg_close(&ib, b) == -1 || imsgbuf_flush(&ib) == -1)
		err(1, "send");
	(void)replies(id, IMSG_STORE_RESULT, &fds);
}

/* N rounds of create, open and delete; fds before and after. */
static void
many(int n, const char *image)
{
	char	 vm[32];
	int	 i, fds, before, after, failed = 0;

	before = test_daemon_fds(stored_pid);
	quiet = 1;
	for (i = 0; i < n; i++) {
		(void)snprintf(vm, sizeof(vm), "vm-%016x", 0xf00d0000 + i);
		if (request(IMSG_STORE_DISK_CREATE, vm, image, &fds) != 0 ||
		    request(IMSG_STORE_DISK_OPEN, vm, image, &fds) != 0 ||
		    request(IMSG_STORE_DISK_DELETE, vm, NULL, &fds) != 0)
			failed++;
	}
	quiet = 0;
	after = test_daemon_fds(stored_pid);
	printf("many n=%d failed=%d fds_before=%d fds_after=%d\n", n, failed,
	    before, after);
}

static void
send_raw(uint32_t type, int bad_field, const char *vm)
{
	struct ibuf	*b;

	if ((b = imsg_create(&ib, type, next_id++, 0, 64)) == NULL)
		err(1, "imsg_create");
	if (bad_field)
		m_add_u32(b, 42);
	else if (vm != NULL) {
		m_add_str(b, vm);
		m_add_str(b, "img");
	}
	if (imsg_close(&ib, b) == -1 || imsgbuf_flush(&ib) == -1)
		err(1, "send");
}

static void
wait_exit(void)
{
	struct imsg	 imsg;

	while (next_msg(&imsg) == 1) {
		if (imsg.hdr.type == IMSG_STORE_IMAGE_STATUS)
			print_status(&imsg);
		imsg_free(&imsg);
	}
	test_daemon_reap(stored_pid);
	stored_pid = -1;
}

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: stored-driver -s mcvm-stored -f conf "
	    "[-D macro=value] [-S] [-v] command ...\n");
	exit(2);
}

int
main(int argc, char *argv[])
{
	struct imsg	 imsg;
	int		 sv[2], fds, i, n;

	stored_pid = test_daemon_run(argc, argv, "mcvm-stored", usage,
	    &sv[0], &i);
	argc -= i;
	argv += i;
	if (imsgbuf_init(&ib, sv[0]) == -1)
		err(1, "imsgbuf_init");

	for (i = 0; i < argc; i++) {
		const char *cmd = argv[i];

#define ARG(k)	(i + (k) < argc ? argv[i + (k)] : (usage(), ""))
		if (strcmp(cmd, "hello") == 0) {
			if (next_msg(&imsg) == 0 ||
			    imsg.hdr.type != IMSG_HELLO)
				bad("HELLO");
			printf("hello\n");
			imsg_free(&imsg);
		} else if (strcmp(cmd, "status") == 0) {
			n = atoi(ARG(1));
			i++;
			while (nstatus < n) {
				if (next_msg(&imsg) == 0)
					bad("EOF before the statuses");
				if (imsg.hdr.type != IMSG_STORE_IMAGE_STATUS)
					bad(imsg_type_name(imsg.hdr.type));
				print_status(&imsg);
				imsg_free(&imsg);
			}
		} else if (strcmp(cmd, "preflight") == 0)
			(void)request(IMSG_STORE_PREFLIGHT, NULL, NULL, &fds);
		else if (strcmp(cmd, "create") == 0) {
			(void)request(IMSG_STORE_DISK_CREATE, ARG(1), ARG(2),
			    &fds);
			i += 2;
		} else if (strcmp(cmd, "open") == 0) {
			(void)request(IMSG_STORE_DISK_OPEN, ARG(1), ARG(2),
			    &fds);
			i += 2;
		} else if (strcmp(cmd, "delete") == 0) {
			(void)request(IMSG_STORE_DISK_DELETE, ARG(1), NULL,
			    &fds);
			i++;
		} else if (strcmp(cmd, "checkpoint") == 0) {
			checkpoint(ARG(1), (uint32_t)atoi(ARG(2)));
			i += 2;
		} else if (strcmp(cmd, "list") == 0)
			(void)request(IMSG_STORE_DISK_LIST, NULL, NULL, &fds);
		else if (strcmp(cmd, "many") == 0) {
			many(atoi(ARG(1)), ARG(2));
			i += 2;
		} else if (strcmp(cmd, "malformed") == 0)
			send_raw(IMSG_STORE_DISK_CREATE, 1, NULL);
		else if (strcmp(cmd, "badid") == 0)
			send_raw(IMSG_STORE_DISK_CREATE, 0, "vm-../../../etc/x");
		else if (strcmp(cmd, "unknown") == 0)
			send_raw(IMSG_CTL_STATUS, 0, NULL);
		else if (strcmp(cmd, "exit") == 0)
			wait_exit();
		else if (strcmp(cmd, "run") == 0) {
			if ((n = system(ARG(1))) != 0)
				printf("run rc=%d\n", n);
			i++;
		}
		else
			usage();
#undef ARG
	}
	if (stored_pid != -1) {
		shutdown(ib.fd, SHUT_WR);
		wait_exit();
	}
	return 0;
}
