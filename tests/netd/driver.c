/*
 * netd-driver: plays mcvmd to a real mcvm-netd.  It starts the binary
 * with a socketpair on fd 3 (exporting its pid as NETD_PID to the shell
 * commands it runs), then runs the commands on its command line in order
 * and prints one line per reply, for tests/suites/netd:
 *
 *	hello			wait for IMSG_HELLO
 *	preflight		IMSG_NET_PREFLIGHT
 *	setup VM SLOT on|off [HOST:GUEST ...]
 *				IMSG_NET_SETUP (HOST 0: auto); keeps the
 *				netns and tap fds, as QEMU would
 *	teardown VM SLOT	IMSG_NET_TEARDOWN
 *	list			IMSG_NET_LIST
 *	nsexec SLOT CMD		run a shell command in the slot's netns
 *	close SLOT		close the fds kept for the slot
 *	many N on|off		N rounds of setup and teardown, quietly;
 *				netd's open fds before and after
 *	bench N on|off		N rounds; the mean and worst setup time
 *	malformed		NET_SETUP whose fields have the wrong type
 *	badid			NET_SETUP with an id that is not one
 *	badslot			NET_SETUP with a slot beyond the pool
 *	unknown			a message type netd does not take
 *	kill			SIGKILL netd and reap it
 *	exit			wait for netd to exit; print how
 *	run CMD			run a shell command between requests
 *
 * At the end the driver closes the channel and waits for netd, which must
 * exit 0.
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
#include <sched.h>
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
#define DRIVER_SLOTS		1024
#define DRIVER_FWD_MAX		16
#define DRIVER_TEXT_MAX		8192

static struct imsgbuf	 ib;
static pid_t		 netd_pid;
static uint32_t		 next_id = 1;
static int		 quiet;
static int		 held_ns[DRIVER_SLOTS];
static int		 held_tap[DRIVER_SLOTS];

static uint64_t
now_us(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}


static int
next_msg(struct imsg *imsg)
{
	return test_daemon_next(&ib, netd_pid, DRIVER_TIMEOUT_MS, imsg);
}

static void
bad(const char *what)
{
	printf("bad %s\n", what);
	fflush(stdout);
	exit(1);
}

static void
hold(uint32_t slot, int ns, int tap)
{
	if (held_ns[slot] != -1)
		close(held_ns[slot]);
	if (held_tap[slot] != -1)
		close(held_tap[slot]);
	held_ns[slot] = ns;
	held_tap[slot] = tap;
}

/* The type of an fd as /proc shows it: "net:[...]" or "/dev/net/tun". */
static void
fd_kind(int fd, char *buf, size_t len)
{
	char	 path[64];
	ssize_t	 n;

	(void)snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if ((n = readlink(path, buf, len - 1)) == -1)
		n = 0;
	buf[n] = '\0';
	if (strncmp(buf, "net:", 4) == 0)
		buf[3] = '\0';
}

/* Reads the replies to a request up to its IMSG_NET_RESULT. */
static uint32_t
replies(uint32_t id, uint32_t slot, int keep)
{
	struct imsg	 imsg;
	struct mreader	 r;
	const char	*guest, *gw, *res, *mac, *text;
	char		 fwd[DRIVER_TEXT_MAX], kind[64];
	uint32_t	 status, role, nfwd, i, hp, gp, entry_slot, n;
	int		 ns = -1, tap = -1, fd, nfds = 0;
	size_t		 off;

	for (;;) {
		if (next_msg(&imsg) == 0)
			bad("EOF before the reply");
		if (imsg.hdr.peerid != id)
			bad("peerid");
		m_init(&r, &imsg);
		switch (imsg.hdr.type) {
		case IMSG_NET_PREFLIGHT_RESULT:
			if (m_get_u32(&r, &n) == -1 ||
			    m_get_str(&r, &text, DRIVER_TEXT_MAX) == -1 ||
			    m_end(&r) == -1)
				bad("PREFLIGHT_RESULT");
			printf("preflight problems=%u\n%s\n", n, text);
			imsg_free(&imsg);
			return n;
		case IMSG_NET_FD:
			if (m_get_u32(&r, &role) == -1 || m_end(&r) == -1 ||
			    (fd = imsg_get_fd(&imsg)) == -1)
				bad("NET_FD");
			fd_kind(fd, kind, sizeof(kind));
			if (!quiet)
				printf("fd role=%s kind=%s\n",
				    role == NET_FD_NETNS ? "netns" :
				    role == NET_FD_TAP ? "tap" : "unknown",
				    kind);
			if (role == NET_FD_NETNS && ns == -1)
				ns = fd;
			else if (role == NET_FD_TAP && tap == -1)
				tap = fd;
			else
				bad("NET_FD role");
			nfds++;
			break;
		case IMSG_NET_ENTRY:
			if (m_get_str(&r, &text, 256) == -1 ||
			    m_get_u32(&r, &entry_slot) == -1 ||
			    m_end(&r) == -1 || imsg.fd != -1)
				bad("NET_ENTRY");
			printf("entry %s %u\n", text, entry_slot);
			break;
		case IMSG_NET_RESULT:
			if (m_get_u32(&r, &status) == -1 ||
			    m_get_str(&r, &guest, 64) == -1 ||
			    m_get_str(&r, &gw, 64) == -1 ||
			    m_get_str(&r, &res, 64) == -1 ||
			    m_get_str(&r, &mac, 64) == -1 ||
			    m_get_u32(&r, &nfwd) == -1 ||
			    nfwd > DRIVER_FWD_MAX)
				bad("NET_RESULT");
			fwd[0] = '\0';
			for (i = 0; i < nfwd; i++) {
				if (m_get_u32(&r, &hp) == -1 ||
				    m_get_u32(&r, &gp) == -1)
					bad("NET_RESULT forward");
				off = strlen(fwd);
				(void)snprintf(fwd + off, sizeof(fwd) - off,
				    "%s%u:%u", i ? "," : "", hp, gp);
			}
			if (m_get_str(&r, &text, DRIVER_TEXT_MAX) == -1 ||
			    m_end(&r) == -1 || imsg.fd != -1)
				bad("NET_RESULT");
			if (status != 0 && nfds != 0)
				bad("fds before a failed result");
			if (!quiet || status != 0)
				printf("result status=%s guest=%s gw=%s "
				    "resolver=%s mac=%s fwd=%s fds=%d "
				    "text=%s\n", test_errname(status), guest, gw,
				    res, mac, fwd, nfds, text);
			if (keep && status == 0)
				hold(slot, ns, tap);
			else {
				if (ns != -1)
					close(ns);
				if (tap != -1)
					close(tap);
			}
			imsg_free(&imsg);
			return status;
		default:
			bad(imsg_type_name(imsg.hdr.type));
		}
		imsg_free(&imsg);
	}
}

static void
send_msg(struct ibuf *b)
{
	if (imsg_close(&ib, b) == -1 || imsgbuf_flush(&ib) == -1)
		err(1, "send");
}

static uint32_t
setup(const char *vm, uint32_t slot, int on, char **fwds, int nfwd)
{
	struct ibuf	*b;
	uint32_t	 id = next_id++;
	unsigned int	 hp, gp;
	int		 i;

	if ((b = imsg_create(&ib, IMSG_NET_SETUP, id, 0, 256)) == NULL)
		err(1, "imsg_create");
	m_add_str(b, vm);
	m_add_u32(b, slot);
	m_add_u32(b, on);
	m_add_u32(b, (uint32_t)nfwd);
	for (i = 0; i < nfwd; i++) {
		if (sscanf(fwds[i], "%u:%u", &hp, &gp) != 2)
			errx(2, "forward %s", fwds[i]);
		m_add_u32(b, hp);
		m_add_u32(b, gp);
	}
	send_msg(b);
	return replies(id, slot, 1);
}

static uint32_t
teardown(const char *vm, uint32_t slot)
{
	struct ibuf	*b;
	uint32_t	 id = next_id++;

	if ((b = imsg_create(&ib, IMSG_NET_TEARDOWN, id, 0, 64)) == NULL)
		err(1, "imsg_create");
	m_add_str(b, vm);
	m_add_u32(b, slot);
	send_msg(b);
	return replies(id, slot, 0);
}

static void
simple(uint32_t type)
{
	struct ibuf	*b;
	uint32_t	 id = next_id++;

	if ((b = imsg_create(&ib, type, id, 0, 0)) == NULL)
		err(1, "imsg_create");
	send_msg(b);
	(void)replies(id, 0, 0);
}

static void
nsexec(uint32_t slot, const char *cmd)
{
	pid_t	 pid;
	int	 status;

	if (held_ns[slot] == -1)
		errx(1, "no netns held for slot %u", slot);
	fflush(stdout);
	if ((pid = fork()) == -1)
		err(1, "fork");
	if (pid == 0) {
		if (setns(held_ns[slot], CLONE_NEWNET) == -1)
			_exit(126);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) == -1)
		err(1, "waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		printf("nsexec rc=%d\n", WIFEXITED(status) ?
		    WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

/* N rounds of setup and teardown; returns failures, times in us. */
static int
rounds(int n, int on, uint64_t *total, uint64_t *worst)
{
	char		 vm[32], fwd[] = "0:22", *fwds[] = { fwd };
	uint64_t	 t0, t;
	int		 i, failed = 0;

	*total = *worst = 0;
	quiet = 1;
	for (i = 0; i < n; i++) {
		(void)snprintf(vm, sizeof(vm), "vm-%016x", 0xbe0c0000 + i);
		t0 = now_us();
		if (setup(vm, 7, on, fwds, on ? 1 : 0) != 0)
			failed++;
		t = now_us() - t0;
		*total += t;
		if (t > *worst)
			*worst = t;
		hold(7, -1, -1);
		if (teardown(vm, 7) != 0)
			failed++;
	}
	quiet = 0;
	return failed;
}

static void
send_bad(int kind)
{
	struct ibuf	*b;

	if ((b = imsg_create(&ib, kind == 3 ? IMSG_CTL_STATUS :
	    IMSG_NET_SETUP, next_id++, 0, 64)) == NULL)
		err(1, "imsg_create");
	if (kind == 0)
		m_add_u32(b, 42);
	else if (kind == 1 || kind == 2) {
		m_add_str(b, kind == 1 ? "vm-../../etc/passwd" :
		    "vm-0123456789abcdef");
		m_add_u32(b, kind == 1 ? 0 : 1000000);
		m_add_u32(b, 0);
		m_add_u32(b, 0);
	}
	send_msg(b);
}

static void
wait_exit(void)
{
	struct imsg	 imsg;

	while (next_msg(&imsg) == 1)
		imsg_free(&imsg);
	test_daemon_reap(netd_pid);
	netd_pid = -1;
}

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: netd-driver -s mcvm-netd -f conf "
	    "[-D macro=value] [-S] [-v] command ...\n");
	exit(2);
}

int
main(int argc, char *argv[])
{
	struct imsg	 imsg;
	char		 pidbuf[16];
	uint64_t	 total, worst;
	int		 sv[2], i, n, k, on, before;

	for (i = 0; i < DRIVER_SLOTS; i++)
		held_ns[i] = held_tap[i] = -1;
	netd_pid = test_daemon_run(argc, argv, "mcvm-netd", usage, &sv[0],
	    &i);
	argc -= i;
	argv += i;
	(void)snprintf(pidbuf, sizeof(pidbuf), "%d", (int)netd_pid);
	(void)setenv("NETD_PID", pidbuf, 1);
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
		} else if (strcmp(cmd, "preflight") == 0)
			simple(IMSG_NET_PREFLIGHT);
		else if (strcmp(cmd, "setup") == 0) {
			const char *vm = ARG(1);
			uint32_t slot = (uint32_t)atoi(ARG(2));

			on = strcmp(ARG(3), "on") == 0;
			for (k = i + 4; k < argc && strchr(argv[k], ':') &&
			    strncmp(argv[k], "vm-", 3) != 0 &&
			    k - (i + 4) < DRIVER_FWD_MAX; k++)
				;
			if (slot >= DRIVER_SLOTS)
				slot = DRIVER_SLOTS - 1;
			(void)setup(vm, slot, on, argv + i + 4, k - (i + 4));
			i = k - 1;
		} else if (strcmp(cmd, "teardown") == 0) {
			(void)teardown(ARG(1), (uint32_t)atoi(ARG(2)));
			i += 2;
		} else if (strcmp(cmd, "list") == 0)
			simple(IMSG_NET_LIST);
		else if (strcmp(cmd, "nsexec") == 0) {
			nsexec((uint32_t)atoi(ARG(1)) % DRIVER_SLOTS, ARG(2));
			i += 2;
		} else if (strcmp(cmd, "close") == 0) {
			hold((uint32_t)atoi(ARG(1)) % DRIVER_SLOTS, -1, -1);
			i++;
		} else if (strcmp(cmd, "many") == 0) {
			n = atoi(ARG(1));
			on = strcmp(ARG(2), "on") == 0;
			before = test_daemon_fds(netd_pid);
			k = rounds(n, on, &total, &worst);
			printf("many n=%d failed=%d fds_before=%d "
			    "fds_after=%d\n", n, k, before,
			    test_daemon_fds(netd_pid));
			i += 2;
		} else if (strcmp(cmd, "bench") == 0) {
			n = atoi(ARG(1));
			on = strcmp(ARG(2), "on") == 0;
			k = rounds(n, on, &total, &worst);
			printf("NET_SETUP network %s: n=%d failed=%d "
			    "mean=%.2f ms worst=%.2f ms\n", on ? "on" : "off",
			    n, k, n ? (double)total / n / 1000.0 : 0.0,
			    (double)worst / 1000.0);
			i += 2;
		} else if (strcmp(cmd, "malformed") == 0)
			send_bad(0);
		else if (strcmp(cmd, "badid") == 0)
			send_bad(1);
		else if (strcmp(cmd, "badslot") == 0)
			send_bad(2);
		else if (strcmp(cmd, "unknown") == 0)
			send_bad(3);
		else if (strcmp(cmd, "kill") == 0) {
			(void)kill(netd_pid, SIGKILL);
			wait_exit();
		} else if (strcmp(cmd, "exit") == 0)
			wait_exit();
		else if (strcmp(cmd, "run") == 0) {
			fflush(stdout);
			if ((n = system(ARG(1))) != 0)
				printf("run rc=%d\n", WIFEXITED(n) ?
				    WEXITSTATUS(n) : n);
			i++;
		} else
			usage();
#undef ARG
	}
	if (netd_pid != -1) {
		shutdown(ib.fd, SHUT_WR);
		wait_exit();
	}
	return 0;
}
