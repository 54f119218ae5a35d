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
 *	rebase VM FROM		IMSG_STORE_CHECKPOINT to write, FROM's RAM
 *				file made VM's base first
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
#include "msg_store.h"
#include "peer.h"
#include "proto.h"

#define DRIVER_HEAD		8	/* first bytes shown of each fd */

static struct peer	 stored;
static int		 nstatus;
static int		 quiet;

static void __attribute__((noreturn))
bad(const char *what)
{
	peer_die(&stored, what);
}

/* An IMAGE_STATUS, the one message with peerid 0. */
static int
print_status(struct peer *p, struct imsg *imsg)
{
	struct msg_store_image_status	 m;

	if (imsg->hdr.type != IMSG_STORE_IMAGE_STATUS)
		return test_fail("unasked %s", imsg_type_name(imsg->hdr.type));
	if (msg_store_image_status_get(imsg, &m) == -1)
		return test_fail("IMAGE_STATUS");
	nstatus++;
	printf("status %s ok=%u bytes=%" PRIu64 " text=%s\n", m.image, m.ok,
	    m.disk_bytes, m.text);
	return 0;
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
	case STORE_FD_CD:
		return "cd";
	case STORE_FD_CODE:
		return "code";
	case STORE_FD_VARS:
		return "vars";
	case STORE_FD_DISK2:
	case STORE_FD_DISK3:
	case STORE_FD_DISK4:
		return "diskN";
	case STORE_FD_BASE2:
	case STORE_FD_BASE3:
	case STORE_FD_BASE4:
		return "baseN";
	case STORE_FD_STATE:
		return "state";
	case STORE_FD_RAM:
		return "ram";
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

/* What comes before a reply; *arg counts the fds. */
static int
before_reply(struct imsg *imsg, void *arg)
{
	struct msg_store_disk_entry	 e;
	struct msg_store_fd		 f;
	struct msg_store_vm_disk	 d;
	int				*fds = arg;

	switch (imsg->hdr.type) {
	case IMSG_STORE_VM_DISK:
		if (msg_store_vm_disk_get(imsg, &d) == -1 || imsg->fd != -1)
			return test_fail("VM_DISK");
		printf("vmdisk index=%u format=%s base=%s\n", d.index,
		    image_format_name(d.format), d.has_base ?
		    image_format_name(d.base_format) : "none");
		return 0;
	case IMSG_STORE_FD:
		if (msg_store_fd_get(imsg, &f) == -1)
			return test_fail("STORE_FD");
		print_fd(f.role, imsg_get_fd(imsg));
		(*fds)++;
		return 0;
	case IMSG_STORE_DISK_ENTRY:
		if (msg_store_disk_entry_get(imsg, &e) == -1 ||
		    imsg->fd != -1)
			return test_fail("DISK_ENTRY");
		printf("entry %s\n", e.vm_id);
		return 0;
	}
	return test_fail("%s", imsg_type_name(imsg->hdr.type));
}

/*
 * Sends request b and reads the messages up to its reply.  Returns the
 * status; *fds counts the fds received.
 */
static uint32_t
call(struct ibuf *b, struct peer_call *c, int *fds)
{
	struct msg_store_preflight_result	 pr;
	struct msg_store_result			 res;
	struct imsg				 imsg;

	*fds = 0;
	if (peer_call(&stored, b, c, before_reply, fds, &imsg) == -1)
		bad(test_why());
	if (imsg.hdr.type == IMSG_STORE_PREFLIGHT_RESULT) {
		if (msg_store_preflight_result_get(&imsg, &pr) == -1)
			bad("PREFLIGHT_RESULT");
		printf("preflight reflink=%u text=%s\n", pr.reflink, pr.text);
		imsg_free(&imsg);
		return 0;
	}
	if (msg_store_result_get(&imsg, &res) == -1 || imsg.fd != -1)
		bad("STORE_RESULT");
	if (res.status != 0 && *fds != 0)
		bad("fds before a failed result");
	if (!quiet || res.status != 0)
		printf("result status=%s format=%s bytes=%" PRIu64 " fds=%d "
		    "text=%s\n", test_errname(res.status),
		    res.format == DISK_RAW ? "raw" : "qcow2", res.disk_bytes,
		    *fds, res.text);
	imsg_free(&imsg);
	return res.status;
}

/* A request with the VM's id and the image's name, those it has. */
static uint32_t
request(uint32_t type, const char *vm, const char *image, int *fds)
{
	struct msg_store_disk_create	 cr = { .vm_id = vm, .image = image };
	struct msg_store_disk_open	 op = { .vm_id = vm, .image = image };
	struct msg_store_disk_delete	 del = { .vm_id = vm };
	struct peer_call		 c;
	struct ibuf			*b;

	b = peer_request(&stored, type, &c);
	switch (type) {
	case IMSG_STORE_DISK_CREATE:
		msg_store_disk_create_put(b, &cr);
		break;
	case IMSG_STORE_DISK_OPEN:
		msg_store_disk_open_put(b, &op);
		break;
	case IMSG_STORE_DISK_DELETE:
		msg_store_disk_delete_put(b, &del);
		break;
	default:
		break;		/* PREFLIGHT and DISK_LIST have no fields */
	}
	return call(b, &c, fds);
}

static void
checkpoint(const char *vm, uint32_t write, const char *base)
{
	struct msg_store_checkpoint	 m = { .vm_id = vm, .write = write,
					    .base = base };
	struct peer_call		 c;
	struct ibuf			*b;
	int				 fds;

	b = peer_request(&stored, IMSG_STORE_CHECKPOINT, &c);
	msg_store_checkpoint_put(b, &m);
	(void)call(b, &c, &fds);
}

/*
 * IMSG_STORE_VM_DISKS: a VM from workspace ws's images, disks a
 * comma-separated list, iso "-" for none; flags a string of c (create),
 * p (persistent) and u (UEFI), or "-".
 */
static void
vmdisks(const char *vm, const char *ws, const char *flags, const char *disks,
    const char *iso)
{
	struct msg_store_vm_disks	 m;
	struct peer_call		 c;
	struct ibuf			*b;
	static char			 list[256];
	char				*p, *q;
	int				 fds;

	memset(&m, 0, sizeof(m));
	m.vm_id = vm;
	m.ws = strtoull(ws, NULL, 10);
	m.create = strchr(flags, 'c') != NULL;
	m.persistent = strchr(flags, 'p') != NULL;
	m.firmware = strchr(flags, 'u') != NULL ? FW_UEFI : FW_BIOS;
	(void)snprintf(list, sizeof(list), "%s", disks);
	for (p = list; p != NULL && m.ndisks < VM_DISKS_MAX; p = q) {
		if ((q = strchr(p, ',')) != NULL)
			*q++ = '\0';
		m.disks[m.ndisks++] = p;
	}
	m.iso = strcmp(iso, "-") == 0 ? "" : iso;
	b = peer_request(&stored, IMSG_STORE_VM_DISKS, &c);
	msg_store_vm_disks_put(b, &m);
	(void)call(b, &c, &fds);
}

/* N rounds of create, open and delete; fds before and after. */
static void
many(int n, const char *image)
{
	char	 vm[32];
	int	 i, fds, before, after, failed = 0;

	before = peer_fds(&stored);
	quiet = 1;
	for (i = 0; i < n; i++) {
		(void)snprintf(vm, sizeof(vm), "vm-%016x", 0xf00d0000 + i);
		if (request(IMSG_STORE_DISK_CREATE, vm, image, &fds) != 0 ||
		    request(IMSG_STORE_DISK_OPEN, vm, image, &fds) != 0 ||
		    request(IMSG_STORE_DISK_DELETE, vm, NULL, &fds) != 0)
			failed++;
	}
	quiet = 0;
	after = peer_fds(&stored);
	printf("many n=%d failed=%d fds_before=%d fds_after=%d\n", n, failed,
	    before, after);
}

/*
 * Requests stored must refuse by exiting; no reply is read.  A
 * DISK_CREATE whose field has the wrong type is crafted by hand on
 * purpose: no codec writes it.
 */
static void
send_malformed(void)
{
	struct peer_call	 c;
	struct ibuf		*b;

	b = peer_request(&stored, IMSG_STORE_DISK_CREATE, &c);
	m_add_u32(b, 42);
	if (peer_send(&stored, b, &c) == -1)
		bad(test_why());
}

/* A DISK_CREATE whose VM id is not one. */
static void
send_badid(void)
{
	struct msg_store_disk_create	 m = { .vm_id = "vm-../../../etc/x",
	    .image = "img" };
	struct peer_call		 c;
	struct ibuf			*b;

	b = peer_request(&stored, IMSG_STORE_DISK_CREATE, &c);
	msg_store_disk_create_put(b, &m);
	if (peer_send(&stored, b, &c) == -1)
		bad(test_why());
}

/* A type stored does not take. */
static void
send_unknown(void)
{
	struct peer_call	 c;
	struct ibuf		*b;

	b = peer_request(&stored, IMSG_CTL_STATUS, &c);
	if (peer_send(&stored, b, &c) == -1)
		bad(test_why());
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
	int		 fds, i, n;

	peer_run(&stored, argc, argv, "mcvm-stored", usage, &i);
	stored.unasked = print_status;
	argc -= i;
	argv += i;

	for (i = 0; i < argc; i++) {
		const char *cmd = argv[i];

#define ARG(k)	(i + (k) < argc ? argv[i + (k)] : (usage(), ""))
		if (strcmp(cmd, "hello") == 0) {
			if (peer_hello(&stored) == -1)
				bad(test_why());
			printf("hello\n");
		} else if (strcmp(cmd, "status") == 0) {
			n = atoi(ARG(1));
			i++;
			while (nstatus < n)
				if (peer_pump(&stored, stored.timeout_ms) == -1)
					bad(test_why());
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
		} else if (strcmp(cmd, "vmdisks") == 0) {
			vmdisks(ARG(1), ARG(2), ARG(3), ARG(4), ARG(5));
			i += 5;
		} else if (strcmp(cmd, "checkpoint") == 0) {
			checkpoint(ARG(1), (uint32_t)atoi(ARG(2)), NULL);
			i += 2;
		} else if (strcmp(cmd, "rebase") == 0) {
			checkpoint(ARG(1), 1, ARG(2));
			i += 2;
		} else if (strcmp(cmd, "list") == 0)
			(void)request(IMSG_STORE_DISK_LIST, NULL, NULL, &fds);
		else if (strcmp(cmd, "many") == 0) {
			many(atoi(ARG(1)), ARG(2));
			i += 2;
		} else if (strcmp(cmd, "malformed") == 0)
			send_malformed();
		else if (strcmp(cmd, "badid") == 0)
			send_badid();
		else if (strcmp(cmd, "unknown") == 0)
			send_unknown();
		else if (strcmp(cmd, "exit") == 0)
			peer_finish(&stored);
		else if (strcmp(cmd, "run") == 0) {
			if ((n = system(ARG(1))) != 0)
				printf("run rc=%d\n", n);
			i++;
		}
		else
			usage();
#undef ARG
	}
	if (stored.pid != -1) {
		shutdown(stored.ib.fd, SHUT_WR);
		peer_finish(&stored);
	}
	return 0;
}
