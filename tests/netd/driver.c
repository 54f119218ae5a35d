/*
 * netd-driver: plays mcvmd to a real mcvm-netd.  It starts the binary
 * with a socketpair on fd 3 (exporting its pid as NETD_PID to the shell
 * commands it runs), then runs the commands on its command line in order
 * and prints one line per reply, for tests/suites/netd:
 *
 *	hello			wait for IMSG_HELLO
 *	preflight		IMSG_NET_PREFLIGHT
 *	setup VM SLOT on|off|inbound [HOST:GUEST ...]
 *				IMSG_NET_SETUP (HOST 0: auto); keeps the
 *				netns and tap fds, as QEMU would
 *	teardown VM SLOT	IMSG_NET_TEARDOWN
 *	list			IMSG_NET_LIST
 *	nsexec SLOT CMD		run a shell command in the slot's netns
 *	close SLOT		close the fds kept for the slot
 *	many N on|off|inbound	N rounds of setup and teardown, quietly;
 *				netd's open fds before and after
 *	bench N on|off|inbound	N rounds; the mean and worst setup time
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
#include "msg_net.h"
#include "peer.h"
#include "proto.h"

#define DRIVER_SLOTS		1024

static struct peer	 netd;
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

static void __attribute__((noreturn))
bad(const char *what)
{
	peer_die(&netd, what);
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

static uint32_t
print_result(struct imsg *imsg, int nfds)
{
	struct msg_net_result	 m;
	char			 fwd[NET_FWD_MAX * 12 + 1];
	uint32_t		 i;
	size_t			 off;

	if (msg_net_result_get(imsg, &m) == -1 || imsg->fd != -1)
		bad("NET_RESULT");
	fwd[0] = '\0';
	for (i = 0; i < m.nforwards; i++) {
		off = strlen(fwd);
		(void)snprintf(fwd + off, sizeof(fwd) - off, "%s%u:%u",
		    i ? "," : "", m.fwd[i].host, m.fwd[i].guest);
	}
	if (m.status != 0 && nfds != 0)
		bad("fds before a failed result");
	if (!quiet || m.status != 0)
		printf("result status=%s guest=%s gw=%s resolver=%s mac=%s "
		    "fwd=%s fds=%d text=%s\n", test_errname(m.status),
		    m.address, m.gateway, m.resolver, m.mac, fwd, nfds,
		    m.text);
	return m.status;
}

/* What came before a reply: the fds kept, or -1. */
struct held {
	int	 ns;
	int	 tap;
	int	 nfds;
};

static int
before_reply(struct imsg *imsg, void *arg)
{
	struct held		*h = arg;
	struct msg_net_entry	 e;
	struct msg_net_fd	 f;
	char			 kind[64];
	int			 fd;

	switch (imsg->hdr.type) {
	case IMSG_NET_FD:
		if (msg_net_fd_get(imsg, &f) == -1 ||
		    (fd = imsg_get_fd(imsg)) == -1)
			return test_fail("NET_FD");
		fd_kind(fd, kind, sizeof(kind));
		if (!quiet)
			printf("fd role=%s kind=%s\n",
			    f.role == NET_FD_NETNS ? "netns" :
			    f.role == NET_FD_TAP ? "tap" : "unknown", kind);
		h->nfds++;
		if (f.role == NET_FD_NETNS && h->ns == -1)
			h->ns = fd;
		else if (f.role == NET_FD_TAP && h->tap == -1)
			h->tap = fd;
		else {
			close(fd);
			return test_fail("NET_FD role");
		}
		return 0;
	case IMSG_NET_ENTRY:
		if (msg_net_entry_get(imsg, &e) == -1 || imsg->fd != -1)
			return test_fail("NET_ENTRY");
		printf("entry %s %u\n", e.vm_id, e.slot);
		return 0;
	}
	return test_fail("%s", imsg_type_name(imsg->hdr.type));
}

/*
 * Sends request b and reads the messages up to its reply; keeps the fds
 * of a SETUP that succeeded for slot.  Returns the reply's status.
 */
static uint32_t
call(struct ibuf *b, struct peer_call *c, uint32_t slot)
{
	struct msg_net_preflight_result	 pr;
	struct held			 h = { -1, -1, 0 };
	struct imsg			 imsg;
	uint32_t			 status;

	if (peer_call(&netd, b, c, before_reply, &h, &imsg) == -1)
		bad(test_why());
	if (imsg.hdr.type == IMSG_NET_PREFLIGHT_RESULT) {
		if (msg_net_preflight_result_get(&imsg, &pr) == -1)
			bad("PREFLIGHT_RESULT");
		printf("preflight problems=%u\n%s\n", pr.problems, pr.text);
		status = pr.problems;
	} else
		status = print_result(&imsg, h.nfds);
	imsg_free(&imsg);
	if (c->type == IMSG_NET_SETUP && status == 0)
		hold(slot, h.ns, h.tap);
	else {
		if (h.ns != -1)
			close(h.ns);
		if (h.tap != -1)
			close(h.tap);
	}
	return status;
}

/* "on", "inbound" or anything else for off */
static int
net_mode(const char *s)
{
	if (strcmp(s, "on") == 0)
		return NET_ON;
	return strcmp(s, "inbound") == 0 ? NET_INBOUND : NET_OFF;
}

static uint32_t
setup(const char *vm, uint32_t slot, int on, char **fwds, int nfwd)
{
	struct msg_net_setup	 m;
	struct peer_call	 c;
	struct ibuf		*b;
	unsigned int		 hp, gp;
	int			 i;

	memset(&m, 0, sizeof(m));
	m.vm_id = vm;
	m.slot = slot;
	m.network = (uint32_t)on;
	m.nforwards = (uint32_t)nfwd;
	for (i = 0; i < nfwd; i++) {
		if (sscanf(fwds[i], "%u:%u", &hp, &gp) != 2)
			errx(2, "forward %s", fwds[i]);
		m.fwd[i].host = hp;
		m.fwd[i].guest = gp;
	}
	b = peer_request(&netd, IMSG_NET_SETUP, &c);
	msg_net_setup_put(b, &m);
	return call(b, &c, slot);
}

static uint32_t
teardown(const char *vm, uint32_t slot)
{
	struct msg_net_teardown	 m = { .vm_id = vm, .slot = slot };
	struct peer_call	 c;
	struct ibuf		*b;

	b = peer_request(&netd, IMSG_NET_TEARDOWN, &c);
	msg_net_teardown_put(b, &m);
	return call(b, &c, slot);
}

/* PREFLIGHT and LIST have no fields. */
static void
simple(uint32_t type)
{
	struct peer_call	 c;
	struct ibuf		*b;

	b = peer_request(&netd, type, &c);
	(void)call(b, &c, 0);
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

/*
 * Requests netd must refuse by exiting: kind 0 a NET_SETUP whose fields
 * have the wrong type (crafted by hand on purpose: no codec writes it),
 * 1 one whose VM id is not one, 2 one whose slot is beyond the pool,
 * 3 a type netd does not take.  No reply is read.
 */
static void
send_bad(int kind)
{
	struct msg_net_setup	 m;
	struct peer_call	 c;
	struct ibuf		*b;

	memset(&m, 0, sizeof(m));
	b = peer_request(&netd, kind == 3 ? IMSG_CTL_STATUS : IMSG_NET_SETUP,
	    &c);
	if (kind == 0)
		m_add_u32(b, 42);
	else if (kind == 1 || kind == 2) {
		m.vm_id = kind == 1 ? "vm-../../etc/passwd" :
		    "vm-0123456789abcdef";
		m.slot = kind == 1 ? 0 : 1000000;
		msg_net_setup_put(b, &m);
	}
	if (peer_send(&netd, b, &c) == -1)
		bad(test_why());
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
	char		 pidbuf[16];
	uint64_t	 total, worst;
	int		 i, n, k, on, before;

	for (i = 0; i < DRIVER_SLOTS; i++)
		held_ns[i] = held_tap[i] = -1;
	peer_run(&netd, argc, argv, "mcvm-netd", usage, &i);
	argc -= i;
	argv += i;
	(void)snprintf(pidbuf, sizeof(pidbuf), "%d", (int)netd.pid);
	(void)setenv("NETD_PID", pidbuf, 1);

	for (i = 0; i < argc; i++) {
		const char *cmd = argv[i];

#define ARG(k)	(i + (k) < argc ? argv[i + (k)] : (usage(), ""))
		if (strcmp(cmd, "hello") == 0) {
			if (peer_hello(&netd) == -1)
				bad(test_why());
			printf("hello\n");
		} else if (strcmp(cmd, "preflight") == 0)
			simple(IMSG_NET_PREFLIGHT);
		else if (strcmp(cmd, "setup") == 0) {
			const char *vm = ARG(1);
			uint32_t slot = (uint32_t)atoi(ARG(2));

			on = net_mode(ARG(3));
			for (k = i + 4; k < argc && strchr(argv[k], ':') &&
			    strncmp(argv[k], "vm-", 3) != 0 &&
			    k - (i + 4) < NET_FWD_MAX; k++)
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
			on = net_mode(ARG(2));
			before = peer_fds(&netd);
			k = rounds(n, on, &total, &worst);
			printf("many n=%d failed=%d fds_before=%d "
			    "fds_after=%d\n", n, k, before,
			    peer_fds(&netd));
			i += 2;
		} else if (strcmp(cmd, "bench") == 0) {
			n = atoi(ARG(1));
			on = net_mode(ARG(2));
			k = rounds(n, on, &total, &worst);
			printf("NET_SETUP network %s: n=%d failed=%d "
			    "mean=%.2f ms worst=%.2f ms\n", ARG(2),
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
			(void)kill(netd.pid, SIGKILL);
			peer_finish(&netd);
		} else if (strcmp(cmd, "exit") == 0)
			peer_finish(&netd);
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
	if (netd.pid != -1) {
		shutdown(netd.ib.fd, SHUT_WR);
		peer_finish(&netd);
	}
	return 0;
}
