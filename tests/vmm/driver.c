/*
 * vmm-driver: plays mcvmd for one mcvm-vmm, with real QEMU (TCG, no NIC)
 * and the real guest image, or with this program standing in for QEMU or
 * the guest where a test needs them to misbehave.
 *
 *	vmm-driver [-w workdir] builddir imagedir
 *
 * Run as root.  Prints one line per test and "N passed, N failed".  QEMU
 * and the monitors are killed by the pids this program started; the work
 * directory is removed unless a test failed.
 */
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent_proto.h"
#include "bytes.h"
#include "imsg.h"
#include "keys.h"
#include "msg.h"
#include "msg_proc.h"
#include "msg_vmm.h"
#include "peer.h"
#include "proto.h"
#include "utf8.h"
#include "vmm.h"

#define QEMU_BIN		"qemu-system-x86_64"
#define GUEST_MEM_MIB		"1024"
#define GUEST_CPUS		"2"
/* The kernel's notices too, so that its banner is on the console. */
#define GUEST_APPEND	AGENT_KERNEL_APPEND_TCG " loglevel=6"
#define VM_ID			"vm-0123456789abcdef"
#define VM_UID			"2000100"
#define VM_UID_N		2000100
#define BOOT_TIMEOUT_MS		180000
#define CALL_TIMEOUT_MS		(VMM_REQ_TIMEOUT_MS + 15000)
#define SHORT_TIMEOUT_MS	10000
#define EXIT_TIMEOUT_MS		20000
#define JOB_TIMEOUT_MS		60000
#define EVENTS_MAX		64

struct vmm_run {
	pid_t		 qemu;
	pid_t		 vmm;
	int		 vmm_status;
	struct peer	 p;		/* the monitor, as mcvmd sees it */
	int		 p_ok;
	int		 fake_agent;	/* our end, as the guest */
	int		 fake_qmp;	/* our end, when we are QEMU */
	struct {
		uint32_t ev;
		char	 detail[AGENT_INFO_STR_MAX];
	}		 events[EVENTS_MAX];
	size_t		 nevents;
	int		 unasked_errors;
	char		 ready_os[AGENT_INFO_STR_MAX];
	int		 ready;
	struct imsg	 cur;		/* the last reply, kept */
	int		 cur_ok;
};

/* A reply, as its codec read it. */
union reply {
	struct msg_vmm_job		 job;
	struct msg_vmm_job_state	 state;
	struct msg_vmm_job_output	 output;
	struct msg_vmm_file_data	 data;
	struct msg_vmm_file_written	 written;
	struct msg_vmm_file_entries	 entries;
	struct msg_vmm_guest_info_result info;
	struct msg_vmm_qmp_state	 qmp;
	struct msg_vmm_ok		 ok;
	struct msg_vmm_error		 error;
	struct msg_vmm_screenshot_done	 shot;
	struct msg_vmm_serial_data	 serial;
};

static struct vmm_run	 run;
static const char	*builddir, *imagedir;
static const char	*guest_kind;	/* -a for the monitor, or NULL */
static char		 workdir[256];

static int	 note_unasked(struct peer *, struct imsg *);

/* --- processes */

/* Moves fd to at least 10, so that dup2 onto 3..5 cannot clobber it. */
static int
fd_high(int fd)
{
	int	 n;

	if ((n = fcntl(fd, F_DUPFD, 10)) == -1) {
		perror("F_DUPFD");
		_exit(127);
	}
	return n;
}

static void
child_fds(const int *fds, int n, const char *log)
{
	int	 high[8], i, null, lfd;

	for (i = 0; i < n; i++)
		high[i] = fd_high(fds[i]);
	for (i = 0; i < n; i++)
		if (dup2(high[i], 3 + i) == -1)
			_exit(127);
	null = open("/dev/null", O_RDWR);
	lfd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
	if (null == -1 || lfd == -1)
		_exit(127);
	dup2(null, 0);
	dup2(lfd, 1);
	dup2(lfd, 2);
	close_range(3 + n, ~0U, 0);
}

/*
 * QEMU with its QMP monitor on the socket qmp and, with a guest, the
 * agent port on agent: booted from the image (guest = 1), or an empty
 * machine stopped before it starts (guest = 0).
 */
static pid_t
qemu_start(int qmp, int agent, int guest)
{
	char	 kernel[PATH_MAX], initrd[PATH_MAX], drive[PATH_MAX + 64];
	char	 log[PATH_MAX];
	pid_t	 pid;
	int	 fds[2] = { qmp, agent };

	snprintf(kernel, sizeof(kernel), "%s/vmlinuz", imagedir);
	snprintf(initrd, sizeof(initrd), "%s/initrd.img", imagedir);
	snprintf(drive, sizeof(drive), "file=%s/rootfs.ext4,format=raw,"
	    "if=none,id=root,snapshot=on,cache=unsafe", imagedir);
	snprintf(log, sizeof(log), "%s/qemu.log", workdir);
	if ((pid = fork()) == -1) {
		perror("fork");
		exit(1);
	}
	if (pid != 0)
		return pid;
	child_fds(fds, guest ? 2 : 1, log);
	if (guest)
		execlp(QEMU_BIN, QEMU_BIN, "-nodefaults", "-no-user-config",
		    "-accel", "tcg", "-machine", "q35", "-cpu", "qemu64",
		    "-m", GUEST_MEM_MIB, "-smp", GUEST_CPUS,
		    "-display", "none", "-no-reboot", "-nic", "none",
		    "-chardev", "socket,id=qmp,fd=3",
		    "-mon", "chardev=qmp,mode=control",
		    "-kernel", kernel, "-initrd", initrd,
		    "-append", GUEST_APPEND,
		    "-drive", drive, "-device", "virtio-blk-pci,drive=root",
		    "-device", "virtio-serial-pci",
		    "-chardev", "socket,id=agent,fd=4",
		    "-device", "virtserialport,chardev=agent,"
		    "name=" AGENT_PORT_NAME,
		    "-device", "virtio-rng-pci",
		    "-device", "VGA", "-device", "virtio-tablet-pci",
		    "-device", "virtio-mouse-pci",
		    "-chardev", "ringbuf,id=serial0,size=256K",
		    "-serial", "chardev:serial0", (char *)NULL);
	else
		execlp(QEMU_BIN, QEMU_BIN, "-nodefaults", "-no-user-config",
		    "-accel", "tcg", "-display", "none", "-nic", "none", "-S",
		    "-chardev", "socket,id=qmp,fd=3",
		    "-mon", "chardev=qmp,mode=control", (char *)NULL);
	_exit(127);
}

static pid_t
vmm_start(int parent, int qmp, int agent)
{
	char	 bin[PATH_MAX], conf[PATH_MAX], log[PATH_MAX];
	pid_t	 pid;
	int	 fds[3] = { parent, qmp, agent };

	snprintf(bin, sizeof(bin), "%s/mcvm-vmm", builddir);
	snprintf(conf, sizeof(conf), "%s/mcvm.conf", workdir);
	snprintf(log, sizeof(log), "%s/vmm.log", workdir);
	if ((pid = fork()) == -1) {
		perror("fork");
		exit(1);
	}
	if (pid != 0)
		return pid;
	child_fds(fds, 3, log);
	{
		/* LeakSanitizer's exit-time scan clones and ptraces, which
		 * the monitor's filter kills (SAN=1 builds only). */
		const char	*asan = getenv("ASAN_OPTIONS");
		char		 opts[512];

		(void)snprintf(opts, sizeof(opts), "%s%sdetect_leaks=0",
		    asan != NULL ? asan : "", asan != NULL ? ":" : "");
		(void)setenv("ASAN_OPTIONS", opts, 1);
	}
	if (guest_kind != NULL)
		execl(bin, "mcvm-vmm", "-d", "-v", "-f", conf, "-i", VM_ID,
		    "-u", VM_UID, "-g", VM_UID, "-a", guest_kind,
		    (char *)NULL);
	else
		execl(bin, "mcvm-vmm", "-d", "-v", "-f", conf, "-i", VM_ID,
		    "-u", VM_UID, "-g", VM_UID, (char *)NULL);
	_exit(127);
}

/* Waits for pid; 0 and its status if it exited in time, else -1. */
static int
wait_exit(pid_t pid, int timeout_ms, int *status)
{
	uint64_t	 deadline = test_now_ms() + (uint64_t)timeout_ms;
	struct timespec	 ts = { 0, 20 * 1000000L };

	while (test_now_ms() < deadline) {
		if (waitpid(pid, status, WNOHANG) == pid)
			return 0;
		nanosleep(&ts, NULL);
	}
	return -1;
}

static void
kill_wait(pid_t *pid)
{
	if (*pid <= 0)
		return;
	kill(*pid, SIGKILL);
	waitpid(*pid, NULL, 0);
	*pid = -1;
}

/*
 * Starts a monitor.  mode 0: QEMU boots the guest; 1: QEMU without a
 * guest, this program is the agent; 2: this program is QEMU's QMP and
 * there is no QEMU.
 */
static void
run_start(int mode)
{
	int	 sp[2], qp[2], ap[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == -1 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, qp) == -1 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ap) == -1) {
		perror("socketpair");
		exit(1);
	}
	memset(&run, 0, sizeof(run));
	run.qemu = run.vmm = -1;
	run.fake_agent = run.fake_qmp = -1;
	if (mode == 0)
		run.qemu = qemu_start(qp[1], ap[1], 1);
	else if (mode == 1)
		run.qemu = qemu_start(qp[1], -1, 0);
	run.vmm = vmm_start(sp[1], qp[0], ap[0]);
	close(sp[1]);
	close(qp[0]);
	close(ap[0]);
	if (mode == 2)
		run.fake_qmp = qp[1];
	else
		close(qp[1]);
	if (mode == 0)
		close(ap[1]);
	else
		run.fake_agent = ap[1];
	/* The monitor has three fds, so not peer_start(). */
	if (imsgbuf_init(&run.p.ib, sp[0]) == -1) {
		perror("imsgbuf_init");
		exit(1);
	}
	run.p.pid = run.vmm;
	run.p.next_id = 1;
	run.p.timeout_ms = CALL_TIMEOUT_MS;
	run.p.error_type = IMSG_VMM_ERROR;
	run.p.late_ok = 1;	/* earlier requests fail with their channel */
	run.p.unasked = note_unasked;
	run.p_ok = 1;
}

static void
run_stop(void)
{
	kill_wait(&run.qemu);
	kill_wait(&run.vmm);
	if (run.cur_ok)
		imsg_free(&run.cur);
	run.cur_ok = 0;
	if (run.p_ok) {
		close(run.p.ib.fd);
		imsgbuf_clear(&run.p.ib);
	}
	run.p_ok = 0;
	if (run.fake_agent != -1)
		close(run.fake_agent);
	if (run.fake_qmp != -1)
		close(run.fake_qmp);
	run.fake_agent = run.fake_qmp = -1;
}

/* --- the imsg channel, as mcvmd sees it */

/* An event, READY or error with peerid 0, recorded; 0, or -1. */
static int
note_unasked(struct peer *p, struct imsg *im)
{
	struct msg_vmm_event	 ev;
	struct msg_vmm_ready	 ready;
	struct msg_vmm_error	 err;

	(void)p;
	switch (im->hdr.type) {
	case IMSG_VMM_EVENT:
		if (msg_vmm_event_get(im, &ev) == -1)
			break;
		if (run.nevents < EVENTS_MAX) {
			run.events[run.nevents].ev = ev.event;
			snprintf(run.events[run.nevents].detail,
			    sizeof(run.events[0].detail), "%s", ev.detail);
			run.nevents++;
		}
		printf("# event %u: %s\n", ev.event, ev.detail);
		return 0;
	case IMSG_VMM_READY:
		if (msg_vmm_ready_get(im, &ready) == -1)
			break;
		snprintf(run.ready_os, sizeof(run.ready_os), "%s", ready.os);
		run.ready = 1;
		printf("# ready: agent %s, %s, %s\n", ready.agent_version,
		    ready.os, ready.kernel);
		return 0;
	case IMSG_VMM_ERROR:
		if (msg_vmm_error_get(im, &err) == -1)
			break;
		printf("# unasked error %u: %s\n", err.code, err.message);
		run.unasked_errors++;
		return 0;
	default:
		return test_fail("unasked %s", imsg_type_name(im->hdr.type));
	}
	return test_fail("malformed unasked %s", imsg_type_name(im->hdr.type));
}

static int
have_event(uint32_t ev)
{
	size_t	 i;

	for (i = 0; i < run.nevents; i++)
		if (run.events[i].ev == ev)
			return 1;
	return 0;
}

static int
wait_event(uint32_t ev, int timeout_ms)
{
	uint64_t	 deadline = test_now_ms() + (uint64_t)timeout_ms, now;

	while (!have_event(ev)) {
		now = test_now_ms();
		if (now >= deadline ||
		    peer_pump(&run.p, (int)(deadline - now)) == -1)
			return test_fail("no event %u", ev);
	}
	return 0;
}

/* The SHUTDOWN event, then the monitor's exit with status 0. */
static int
shutdown_exit(void)
{
	int	 st;

	if (wait_event(VMM_EV_SHUTDOWN, SHORT_TIMEOUT_MS) == -1)
		return -1;
	if (wait_exit(run.vmm, EXIT_TIMEOUT_MS, &st) == -1)
		return test_fail("the monitor did not exit");
	run.vmm = -1;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return test_fail("the monitor ended with status %#x", st);
	return 0;
}

/* A request with its fields (NULL: none), written by its codec. */
static int
send_req(uint32_t type, const union vmm_args *a, struct peer_call *c)
{
	struct ibuf	*b;

	b = peer_request(&run.p, type, c);
	switch (type) {
	case IMSG_VMM_EXEC:
		msg_vmm_exec_put(b, &a->exec);
		break;
	case IMSG_VMM_JOB_STATUS:
		msg_vmm_job_status_put(b, &a->job_status);
		break;
	case IMSG_VMM_JOB_CANCEL:
		msg_vmm_job_cancel_put(b, &a->job_cancel);
		break;
	case IMSG_VMM_JOB_READ:
		msg_vmm_job_read_put(b, &a->job_read);
		break;
	case IMSG_VMM_FILE_READ:
		msg_vmm_file_read_put(b, &a->file_read);
		break;
	case IMSG_VMM_FILE_WRITE:
		msg_vmm_file_write_put(b, &a->file_write);
		break;
	case IMSG_VMM_FILE_LIST:
		msg_vmm_file_list_put(b, &a->file_list);
		break;
	case IMSG_VMM_SET_TIME:
		msg_vmm_set_time_put(b, &a->set_time);
		break;
	case IMSG_VMM_NET_CONFIG:
		msg_vmm_net_config_put(b, &a->net_config);
		break;
	case IMSG_VMM_INPUT:
		msg_vmm_input_put(b, &a->input);
		break;
	}
	return peer_send(&run.p, b, c);
}

/*
 * Waits up to timeout_ms for the reply to c, kept in run.cur; unasked
 * messages are noted on the way.
 */
static int
wait_reply(struct peer_call *c, int timeout_ms)
{
	if (run.cur_ok)
		imsg_free(&run.cur);
	run.cur_ok = 0;
	peer_rearm(c, timeout_ms);
	if (peer_wait(&run.p, c, &run.cur) == -1)
		return -1;
	run.cur_ok = 1;
	return 0;
}

/* The current reply, read by the codec of its type; -1 if malformed. */
static int
cur_get(union reply *rep)
{
	struct imsg	*im = &run.cur;

	memset(rep, 0, sizeof(*rep));
	switch (im->hdr.type) {
	case IMSG_VMM_JOB:
		return msg_vmm_job_get(im, &rep->job);
	case IMSG_VMM_JOB_STATE:
		return msg_vmm_job_state_get(im, &rep->state);
	case IMSG_VMM_JOB_OUTPUT:
		return msg_vmm_job_output_get(im, &rep->output);
	case IMSG_VMM_FILE_DATA:
		return msg_vmm_file_data_get(im, &rep->data);
	case IMSG_VMM_FILE_WRITTEN:
		return msg_vmm_file_written_get(im, &rep->written);
	case IMSG_VMM_FILE_ENTRIES:
		return msg_vmm_file_entries_get(im, &rep->entries);
	case IMSG_VMM_GUEST_INFO_RESULT:
		return msg_vmm_guest_info_result_get(im, &rep->info);
	case IMSG_VMM_QMP_STATE:
		return msg_vmm_qmp_state_get(im, &rep->qmp);
	case IMSG_VMM_OK:
		return msg_vmm_ok_get(im, &rep->ok);
	case IMSG_VMM_ERROR:
		return msg_vmm_error_get(im, &rep->error);
	case IMSG_VMM_SCREENSHOT_DONE:
		return msg_vmm_screenshot_done_get(im, &rep->shot);
	case IMSG_VMM_SERIAL_DATA:
		return msg_vmm_serial_data_get(im, &rep->serial);
	}
	return -1;
}

/*
 * A request (fields NULL: none) and its reply, of the type the message
 * list gives (pointers valid until the next call); an error fails.
 */
static int
call(uint32_t type, const union vmm_args *a, union reply *rep)
{
	struct peer_call	 c;

	if (send_req(type, a, &c) == -1 ||
	    wait_reply(&c, CALL_TIMEOUT_MS) == -1)
		return -1;
	if (cur_get(rep) == -1)
		return test_fail("malformed %s for %s",
		    imsg_type_name(run.cur.hdr.type), imsg_type_name(type));
	if (run.cur.hdr.type == IMSG_VMM_ERROR)
		return test_fail("%s: error %u: %s", imsg_type_name(type),
		    rep->error.code, rep->error.message);
	if (run.cur.hdr.type != imsg_reply_type(type))
		return test_fail("%s answered with %s", imsg_type_name(type),
		    imsg_type_name(run.cur.hdr.type));
	return 0;
}

/* A QMP request without fields; QMP_STATUS's state into status. */
static int
call_qmp(uint32_t type, char *status, size_t len, uint32_t *running)
{
	union reply	 rep;

	if (call(type, NULL, &rep) == -1)
		return -1;
	if (type == IMSG_VMM_QMP_STATUS) {
		snprintf(status, len, "%s", rep.qmp.status);
		*running = rep.qmp.running;
	} else if (rep.ok.value != 0)
		return test_fail("OK %u", rep.ok.value);
	return 0;
}

/* The error code of the current reply, or 0. */
static uint32_t
cur_error(void)
{
	struct msg_vmm_error	 e;

	if (!run.cur_ok || msg_vmm_error_get(&run.cur, &e) == -1)
		return 0;
	return e.code;
}

/* --- tests with the real guest */

static int
t_hello(void)
{
	return peer_hello(&run.p);
}

static int
t_ready(void)
{
	uint64_t	 t0 = test_now_ms();

	while (!run.ready)
		if (peer_pump(&run.p, BOOT_TIMEOUT_MS) == -1)
			return test_fail("no READY: %s", test_why());
	printf("# READY %llu ms after the monitor started\n",
	    (unsigned long long)(test_now_ms() - t0));
	if (strstr(run.ready_os, "Debian") == NULL)
		return test_fail("os \"%s\"", run.ready_os);
	return 0;
}

static int
expect_status(const char *want, uint32_t want_running)
{
	char		 status[64];
	uint32_t	 running;

	if (call_qmp(IMSG_VMM_QMP_STATUS, status, sizeof(status),
	    &running) == -1)
		return -1;
	if (strcmp(status, want) != 0 || running != want_running)
		return test_fail("status %s running %u, expected %s %u", status,
		    running, want, want_running);
	return 0;
}

static int
t_status_running(void)
{
	return expect_status("running", 1);
}

static int
t_proc(void)
{
	char		 path[64], line[256];
	char		 root[PATH_MAX], want[PATH_MAX];
	FILE		*f;
	ssize_t		 n;
	int		 uid_ok = 0, gid_ok = 0, sec_ok = 0, nnp_ok = 0;
	int		 caps = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)run.vmm);
	if ((f = fopen(path, "r")) == NULL)
		return test_fail("%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strcmp(line, "Uid:\t" VM_UID "\t" VM_UID "\t" VM_UID "\t"
		    VM_UID "\n") == 0)
			uid_ok = 1;
		if (strcmp(line, "Gid:\t" VM_UID "\t" VM_UID "\t" VM_UID "\t"
		    VM_UID "\n") == 0)
			gid_ok = 1;
		if (strcmp(line, "Seccomp:\t2\n") == 0)
			sec_ok = 1;
		if (strcmp(line, "NoNewPrivs:\t1\n") == 0)
			nnp_ok = 1;
		if ((strncmp(line, "CapEff:", 7) == 0 ||
		    strncmp(line, "CapPrm:", 7) == 0 ||
		    strncmp(line, "CapInh:", 7) == 0 ||
		    strncmp(line, "CapAmb:", 7) == 0 ||
		    strncmp(line, "CapBnd:", 7) == 0) &&
		    strcmp(line + 7, "\t0000000000000000\n") == 0)
			caps++;
	}
	fclose(f);
	if (!uid_ok || !gid_ok)
		return test_fail("not running as uid/gid " VM_UID);
	if (!sec_ok || !nnp_ok)
		return test_fail("seccomp mode or no_new_privs not set");
	if (caps != 5)
		return test_fail("capabilities left (%d of 5 sets empty)",
		    caps);
	snprintf(path, sizeof(path), "/proc/%d/root", (int)run.vmm);
	if ((n = readlink(path, root, sizeof(root) - 1)) == -1)
		return test_fail("%s: %s", path, strerror(errno));
	root[n] = '\0';
	snprintf(want, sizeof(want), "%s/run/empty", workdir);
	if (strcmp(root, want) != 0)
		return test_fail("root is %s, expected %s", root, want);
	return 0;
}

static int
job_read_all(uint32_t job, char *out, size_t outlen,
    struct msg_job_status *st)
{
	union vmm_args		 req;
	union reply		 rep;
	uint64_t		 deadline = test_now_ms() + JOB_TIMEOUT_MS;
	size_t			 len = 0, n;

	for (;;) {
		memset(&req, 0, sizeof(req));
		req.job_read.job = job;
		req.job_read.out_cursor = len;
		req.job_read.out_max = AGENT_PAGE_MAX;
		req.job_read.encoding = VMM_ENC_UTF8;
		if (call(IMSG_VMM_JOB_READ, &req, &rep) == -1)
			return -1;
		n = strlen(rep.output.out);
		if (n >= outlen - len)
			return test_fail("output too long");
		memcpy(out + len, rep.output.out, n);
		len += n;
		out[len] = '\0';
		*st = rep.output.st;
		if (st->state != AGENT_JOB_RUNNING && st->out_eof &&
		    len == st->out_total)
			return 0;
		if (test_now_ms() > deadline)
			return test_fail("job %u still running", job);
		usleep(50000);
	}
}

static int
t_exec(void)
{
	union vmm_args		 req;
	union reply		 rep;
	struct msg_job_status	 st;
	char			 out[256];

	memset(&st, 0, sizeof(st));
	memset(&req, 0, sizeof(req));
	req.exec.flags = AGENT_EXEC_SHELL;
	req.exec.cwd = "";
	req.exec.argc = 1;
	req.exec.argv[0] = "python3 -c 'print(2+2)'";
	if (call(IMSG_VMM_EXEC, &req, &rep) == -1)
		return -1;
	if (job_read_all(rep.job.job, out, sizeof(out), &st) == -1)
		return -1;
	if (st.state != AGENT_JOB_COMPLETED || st.exit_code != 0)
		return test_fail("state %s exit %d",
		    agent_job_state_name((uint8_t)st.state), st.exit_code);
	if (strcmp(out, "4\n") != 0)
		return test_fail("stdout \"%s\"", out);
	return 0;
}

static int
t_files(void)
{
	static uint8_t		 data[AGENT_FILE_CHUNK_MAX];
	union vmm_args		 req;
	union reply		 rep;
	size_t			 i;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 3);
	memset(&req, 0, sizeof(req));
	req.file_write.path = "vmm-test/data.bin";
	req.file_write.flags = AGENT_WRITE_MKDIRS;
	req.file_write.data = data;
	req.file_write.len = sizeof(data);
	if (call(IMSG_VMM_FILE_WRITE, &req, &rep) == -1)
		return -1;
	if (rep.written.written != sizeof(data) ||
	    rep.written.size != sizeof(data))
		return test_fail("wrote %u, size %llu", rep.written.written,
		    (unsigned long long)rep.written.size);
	memset(&req, 0, sizeof(req));
	req.file_read.path = "vmm-test/data.bin";
	req.file_read.length = AGENT_FILE_CHUNK_MAX;
	if (call(IMSG_VMM_FILE_READ, &req, &rep) == -1)
		return -1;
	if (rep.data.len != sizeof(data) ||
	    memcmp(rep.data.data, data, sizeof(data)) != 0)
		return test_fail("read back %zu bytes, differing",
		    rep.data.len);
	if (rep.data.text)
		return test_fail("bytes that are not UTF-8 given as text");
	return 0;
}

/* The monitor tells text from bytes, and holds a cut character back. */
static int
t_file_text(void)
{
	static const char	 text[] = "h\xc3\xa9 \xe2\x82\xac\n";
	union vmm_args		 req;
	union reply		 rep;

	memset(&req, 0, sizeof(req));
	req.file_write.path = "/workspace/vmm-test/text/t.txt";
	req.file_write.flags = AGENT_WRITE_MKDIRS;
	req.file_write.data = text;
	req.file_write.len = sizeof(text) - 1;
	if (call(IMSG_VMM_FILE_WRITE, &req, &rep) == -1)
		return -1;
	memset(&req, 0, sizeof(req));
	req.file_read.path = "vmm-test/text/t.txt";
	req.file_read.length = AGENT_FILE_CHUNK_MAX;
	req.file_read.encoding = VMM_ENC_UTF8;
	if (call(IMSG_VMM_FILE_READ, &req, &rep) == -1)
		return -1;
	if (!rep.data.text || rep.data.len != sizeof(text) - 1 ||
	    !rep.data.eof || memcmp(rep.data.data, text, rep.data.len) != 0)
		return test_fail("whole: text %u, %zu bytes, eof %u",
		    rep.data.text, rep.data.len, rep.data.eof);
	/* 6 bytes end inside the euro sign: 4 come back. */
	req.file_read.length = 6;
	if (call(IMSG_VMM_FILE_READ, &req, &rep) == -1)
		return -1;
	if (!rep.data.text || rep.data.len != 4 || rep.data.eof ||
	    rep.data.size != sizeof(text) - 1)
		return test_fail("cut: text %u, %zu bytes, eof %u, size %llu",
		    rep.data.text, rep.data.len, rep.data.eof,
		    (unsigned long long)rep.data.size);
	req.file_read.offset = 4;
	req.file_read.length = AGENT_FILE_CHUNK_MAX;
	if (call(IMSG_VMM_FILE_READ, &req, &rep) == -1)
		return -1;
	if (!rep.data.text || rep.data.len != 4 || !rep.data.eof ||
	    memcmp(rep.data.data, "\xe2\x82\xac\n", 4) != 0)
		return test_fail("rest: text %u, %zu bytes", rep.data.text,
		    rep.data.len);
	/* base64 asked: bytes, whatever they are. */
	req.file_read.offset = 0;
	req.file_read.encoding = VMM_ENC_BASE64;
	if (call(IMSG_VMM_FILE_READ, &req, &rep) == -1)
		return -1;
	if (rep.data.text || rep.data.len != sizeof(text) - 1)
		return test_fail("base64: text %u, %zu bytes", rep.data.text,
		    rep.data.len);
	return 0;
}

static int
t_file_list(void)
{
	union vmm_args		 req;
	union reply		 rep;

	memset(&req, 0, sizeof(req));
	req.file_list.path = "/workspace/vmm-test";
	req.file_list.depth = 2;
	req.file_list.max = AGENT_LIST_MAX;
	if (call(IMSG_VMM_FILE_LIST, &req, &rep) == -1)
		return -1;
	if (rep.entries.count != 3 || rep.entries.truncated)
		return test_fail("%u entries", rep.entries.count);
	if (strcmp(rep.entries.ents[0].name, "data.bin") != 0 ||
	    rep.entries.ents[0].type != AGENT_FTYPE_FILE ||
	    rep.entries.ents[0].size != AGENT_FILE_CHUNK_MAX ||
	    strcmp(rep.entries.ents[1].name, "text") != 0 ||
	    rep.entries.ents[1].type != AGENT_FTYPE_DIR ||
	    strcmp(rep.entries.ents[2].name, "text/t.txt") != 0)
		return test_fail("entries %s, %s, %s",
		    rep.entries.ents[0].name, rep.entries.ents[1].name,
		    rep.entries.ents[2].name);
	req.file_list.path = "vmm-test/data.bin";
	if (call(IMSG_VMM_FILE_LIST, &req, &rep) == 0)
		return test_fail("a file listed as a directory");
	if (cur_error() != AGENT_ERR_INVAL)
		return test_fail("error %u, expected INVAL", cur_error());
	return 0;
}

static int
t_agent_error(void)
{
	union vmm_args		 req;
	union reply		 rep;

	memset(&req, 0, sizeof(req));
	req.job_status.job = 999999;
	if (call(IMSG_VMM_JOB_STATUS, &req, &rep) == 0)
		return test_fail("status of a job that does not exist");
	if (cur_error() != AGENT_ERR_NOJOB)
		return test_fail("error %u, expected NOJOB", cur_error());
	return 0;
}

static int
t_info(void)
{
	union reply		 rep;

	if (call(IMSG_VMM_GUEST_INFO, NULL, &rep) == -1)
		return -1;
	if (strncmp(rep.info.kernel, "Linux ", 6) != 0)
		return test_fail("kernel \"%s\"", rep.info.kernel);
	return 0;
}

static int
t_pause(void)
{
	char		 status[64];
	uint32_t	 running;

	run.nevents = 0;
	if (call_qmp(IMSG_VMM_PAUSE, status, sizeof(status), &running) == -1)
		return -1;
	if (wait_event(VMM_EV_STOP, SHORT_TIMEOUT_MS) == -1)
		return -1;
	if (expect_status("paused", 0) == -1)
		return -1;
	if (call_qmp(IMSG_VMM_CONT, status, sizeof(status), &running) == -1)
		return -1;
	if (wait_event(VMM_EV_RESUME, SHORT_TIMEOUT_MS) == -1)
		return -1;
	return expect_status("running", 1);
}

/*
 * With the vCPUs stopped the agent answers nothing: VMM_REQ_MAX requests
 * wait, one more is refused as busy, and all time out; after cont, their
 * late answers are dropped and new requests work.
 */
static int
t_busy_timeout(void)
{
	union reply		 rep;
	struct msg_vmm_error	 e;
	char			 status[64];
	struct peer_call	 c;
	uint32_t		 running, first;
	struct imsg		 im;
	int			 i, r, timeouts = 0;
	uint64_t		 t0;

	if (call_qmp(IMSG_VMM_PAUSE, status, sizeof(status), &running) == -1)
		return -1;
	first = run.p.next_id;
	t0 = test_now_ms();
	for (i = 0; i <= VMM_REQ_MAX; i++)
		if (send_req(IMSG_VMM_GUEST_INFO, NULL, &c) == -1)
			return -1;
	if (wait_reply(&c, SHORT_TIMEOUT_MS) == -1)
		return test_fail("request %d: %s", VMM_REQ_MAX + 1,
		    test_why());
	if (cur_error() != VMM_ERR_BUSY)
		return test_fail("request %d: error %u, expected BUSY",
		    VMM_REQ_MAX + 1, cur_error());
	/* The timeouts fire in no particular order. */
	for (i = 0; i < VMM_REQ_MAX; i++) {
		r = peer_next(&run.p, test_now_ms() + CALL_TIMEOUT_MS, &im);
		if (r != 1)
			return test_fail("%d replies of %d", i, VMM_REQ_MAX);
		if (im.hdr.peerid == 0) {
			r = note_unasked(&run.p, &im);
			imsg_free(&im);
			if (r == -1)
				return -1;
			i--;
			continue;
		}
		if (im.hdr.peerid >= first && im.hdr.peerid < c.id &&
		    msg_vmm_error_get(&im, &e) == 0 &&
		    e.code == VMM_ERR_TIMEOUT)
			timeouts++;
		imsg_free(&im);
	}
	if (timeouts != VMM_REQ_MAX)
		return test_fail("%d of %d timed out", timeouts, VMM_REQ_MAX);
	printf("# %d requests timed out after %llu ms\n", timeouts,
	    (unsigned long long)(test_now_ms() - t0));
	if (call_qmp(IMSG_VMM_CONT, status, sizeof(status), &running) == -1)
		return -1;
	return call(IMSG_VMM_GUEST_INFO, NULL, &rep);
}

/* --- the display, input and the serial console */

/*
 * A screenshot into a memfd of ours, as mcvmd makes it: the answer's
 * size is the memfd's, its bytes a PNG of the size announced.
 */
static int
screenshot(struct msg_vmm_screenshot_done *d)
{
	static const uint8_t	 sig[8] = {
		0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'
	};
	union reply		 rep;
	struct peer_call	 c;
	struct ibuf		*b;
	struct stat		 st;
	uint8_t			 head[24];
	int			 fd, give, r = -1;

	if ((fd = memfd_create("shot", MFD_CLOEXEC | MFD_ALLOW_SEALING)) ==
	    -1 || (give = dup(fd)) == -1)
		return test_fail("memfd: %s", strerror(errno));
	b = peer_request(&run.p, IMSG_VMM_SCREENSHOT, &c);
	imsg_set_fd(b, give);
	if (peer_send(&run.p, b, &c) == -1 ||
	    wait_reply(&c, CALL_TIMEOUT_MS) == -1)
		goto out;
	if (cur_get(&rep) == -1) {
		test_fail("malformed %s", imsg_type_name(run.cur.hdr.type));
		goto out;
	}
	if (run.cur.hdr.type != IMSG_VMM_SCREENSHOT_DONE) {
		test_fail("screenshot: %s %u: %s",
		    imsg_type_name(run.cur.hdr.type), rep.error.code,
		    rep.error.message);
		goto out;
	}
	*d = rep.shot;
	if (fstat(fd, &st) == -1 || (uint64_t)st.st_size != d->bytes) {
		test_fail("the memfd holds %lld bytes, the answer says %llu",
		    (long long)st.st_size, (unsigned long long)d->bytes);
		goto out;
	}
	if (pread(fd, head, sizeof(head), 0) != (ssize_t)sizeof(head) ||
	    memcmp(head, sig, sizeof(sig)) != 0 ||
	    memcmp(head + 12, "IHDR", 4) != 0 ||
	    be32_get(head + 16) != d->width || be32_get(head + 20) != d->height) {
		test_fail("the memfd holds no PNG of %ux%u", d->width,
		    d->height);
		goto out;
	}
	r = 0;
 out:
	close(fd);
	return r;
}

/* The VGA text console is 720x400. */
static int
t_screenshot(void)
{
	struct msg_vmm_screenshot_done	 d;
	uint64_t			 t0 = test_now_ms();

	if (screenshot(&d) == -1)
		return -1;
	printf("# screenshot %ux%u, %llu bytes, %llu ms\n", d.width, d.height,
	    (unsigned long long)d.bytes,
	    (unsigned long long)(test_now_ms() - t0));
	if (d.width != 720 || d.height != 400)
		return test_fail("%ux%u, expected 720x400", d.width, d.height);
	return 0;
}

/* Events as the codec packs them. */
static uint8_t	 in_wire[64 * VMM_INPUT_LEN];

static void
in_put(size_t i, uint8_t kind, uint8_t down, uint16_t code, int32_t v)
{
	struct vmm_input	 e = { kind, down, code, v };

	msg_vmm_input_pack(&e, in_wire + i * VMM_INPUT_LEN);
}

static int
input(size_t n, uint32_t *sent)
{
	union vmm_args		 req;
	union reply		 rep;

	memset(&req, 0, sizeof(req));
	req.input.wire = in_wire;
	req.input.n = n;
	if (call(IMSG_VMM_INPUT, &req, &rep) == -1)
		return -1;
	*sent = rep.ok.value;
	return 0;
}

/*
 * Keys (shift, a), the tablet, the mouse and its buttons, with waits
 * between: OK with the number of events sent.  Events the codec refuses
 * never reach the monitor (tests/unit/codec_vmm.c).
 */
static int
t_input(void)
{
	uint32_t	 sent;
	size_t		 n = 0;
	int		 shift = key_lookup("shift"), a = key_lookup("a");

	if (shift < 0 || a < 0)
		return test_fail("no key shift or a");
	in_put(n++, VMM_IN_KEY, 1, (uint16_t)shift, 0);
	in_put(n++, VMM_IN_KEY, 1, (uint16_t)a, 0);
	in_put(n++, VMM_IN_WAIT, 0, 0, 50);
	in_put(n++, VMM_IN_KEY, 0, (uint16_t)a, 0);
	in_put(n++, VMM_IN_KEY, 0, (uint16_t)shift, 0);
	in_put(n++, VMM_IN_WAIT, 0, 0, 0);
	in_put(n++, VMM_IN_ABS, 0, VMM_AXIS_X, VMM_ABS_MAX / 2);
	in_put(n++, VMM_IN_ABS, 0, VMM_AXIS_Y, VMM_ABS_MAX);
	in_put(n++, VMM_IN_BTN, 1, VMM_BTN_LEFT, 0);
	in_put(n++, VMM_IN_WAIT, 0, 0, 20);
	in_put(n++, VMM_IN_BTN, 0, VMM_BTN_LEFT, 0);
	in_put(n++, VMM_IN_REL, 0, VMM_AXIS_X, -VMM_REL_MAX);
	in_put(n++, VMM_IN_REL, 0, VMM_AXIS_Y, VMM_REL_MAX);
	in_put(n++, VMM_IN_BTN, 1, VMM_BTN_MIDDLE, 0);
	in_put(n++, VMM_IN_BTN, 0, VMM_BTN_MIDDLE, 0);
	in_put(n++, VMM_IN_BTN, 1, VMM_BTN_RIGHT, 0);
	in_put(n++, VMM_IN_BTN, 0, VMM_BTN_RIGHT, 0);
	in_put(n++, VMM_IN_WAIT, 0, 0, 10);
	if (input(n, &sent) == -1)
		return -1;
	if (sent != n - 4)
		return test_fail("%u events sent of %zu", sent, n - 4);
	return 0;
}

/*
 * Paused: two screenshots in a row, each its own PNG; input is QEMU's
 * error ("VM not running"), and the monitor serves on.
 */
static int
t_paused_display(void)
{
	struct msg_vmm_screenshot_done	 d1, d2;
	char				 status[64];
	uint32_t			 running, sent;
	int				 r = 0;

	if (call_qmp(IMSG_VMM_PAUSE, status, sizeof(status), &running) == -1)
		return -1;
	if (screenshot(&d1) == -1 || screenshot(&d2) == -1)
		r = -1;
	else if (d1.width != 720 || d2.height != 400 || d1.bytes != d2.bytes)
		r = test_fail("paused: %ux%u %llu bytes, then %ux%u %llu",
		    d1.width, d1.height, (unsigned long long)d1.bytes,
		    d2.width, d2.height, (unsigned long long)d2.bytes);
	in_put(0, VMM_IN_KEY, 1, 0, 0);
	if (r == 0 && input(1, &sent) == 0)
		r = test_fail("input accepted while paused");
	else if (r == 0 && cur_error() != VMM_ERR_QMP)
		r = test_fail("input while paused: error %u", cur_error());
	if (call_qmp(IMSG_VMM_CONT, status, sizeof(status), &running) == -1)
		return -1;
	return r;
}

static int
serial_read(struct msg_vmm_serial_data *d)
{
	union reply	 rep;

	if (call(IMSG_VMM_SERIAL_READ, NULL, &rep) == -1)
		return -1;
	*d = rep.serial;
	return 0;
}

/* The kernel's console, as the monitor keeps it; it survives a pause. */
static int
t_serial(void)
{
	struct msg_vmm_serial_data	 d;
	char				 status[64];
	uint32_t			 running;
	uint64_t			 total;

	if (serial_read(&d) == -1)
		return -1;
	printf("# serial: %llu bytes seen, %zu given, whole %u: %.60s\n",
	    (unsigned long long)d.total, d.len, d.whole,
	    (const char *)d.data);
	if (d.len > VMM_SERIAL_OUT_MAX)
		return test_fail("%zu bytes", d.len);
	if (memmem(d.data, d.len, "Linux version", 13) == NULL)
		return test_fail("no kernel banner in the console");
	total = d.total;
	if (call_qmp(IMSG_VMM_PAUSE, status, sizeof(status), &running) == -1)
		return -1;
	if (serial_read(&d) == -1)
		return -1;
	if (d.total < total ||
	    memmem(d.data, d.len, "Linux version", 13) == NULL)
		return test_fail("paused: %llu bytes seen, before %llu",
		    (unsigned long long)d.total, (unsigned long long)total);
	return call_qmp(IMSG_VMM_CONT, status, sizeof(status), &running);
}

static int
t_quit(void)
{
	char		 status[64];
	uint32_t	 running;
	int		 st;

	run.nevents = 0;
	if (call_qmp(IMSG_VMM_QUIT, status, sizeof(status), &running) == -1)
		return -1;
	if (shutdown_exit() == -1)
		return -1;
	if (wait_exit(run.qemu, EXIT_TIMEOUT_MS, &st) == -1)
		return test_fail("QEMU did not exit");
	run.qemu = -1;
	return 0;
}

/* --- this program as the guest: a real QEMU with no guest */

static uint8_t	 fa_rx[2 * AGENT_FRAME_MAX];
static size_t	 fa_len;

/* Reads one frame the monitor sent to the guest. */
static int
fake_agent_recv(struct agent_msg *m, int timeout_ms)
{
	static uint8_t	 cur[AGENT_FRAME_MAX];
	struct agent_hdr hdr;
	struct pollfd	 pfd;
	ssize_t		 n;
	int		 len;

	for (;;) {
		len = agent_frame_check(fa_rx, fa_len, &hdr);
		if (len == -1)
			return test_fail("malformed frame from the monitor");
		if (len > 0) {
			memcpy(cur, fa_rx, (size_t)len);
			memmove(fa_rx, fa_rx + len, fa_len - (size_t)len);
			fa_len -= (size_t)len;
			if (agent_decode(&hdr, cur + AGENT_HDR_LEN, m) == -1)
				return test_fail("undecodable frame from the "
				    "monitor");
			return 0;
		}
		pfd.fd = run.fake_agent;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, timeout_ms) <= 0)
			return test_fail("nothing from the monitor");
		n = recv(run.fake_agent, fa_rx + fa_len,
		    sizeof(fa_rx) - fa_len, 0);
		if (n <= 0)
			return test_fail("agent channel closed");
		fa_len += (size_t)n;
	}
}

static int
fake_agent_send(struct agent_msg *m)
{
	static uint8_t	 buf[AGENT_FRAME_MAX];
	int		 n;

	if ((n = agent_encode(m, buf, sizeof(buf))) == -1)
		return test_fail("agent_encode");
	if (write(run.fake_agent, buf, (size_t)n) != n)
		return test_fail("write to the monitor");
	return 0;
}

/* Answers m with an empty reply; m becomes the next frame. */
static int
fake_agent_ack(struct agent_msg *m)
{
	struct agent_msg	 rep;

	memset(&rep, 0, sizeof(rep));
	rep.type = AGENT_REPLY | m->type;
	rep.id = m->id;
	if (fake_agent_send(&rep) == -1)
		return -1;
	return fake_agent_recv(m, SHORT_TIMEOUT_MS);
}

static int
t_fake_handshake(void)
{
	struct agent_msg	 m, rep;
	int			 i;

	fa_len = 0;
	if (t_hello() == -1 || fake_agent_recv(&m, SHORT_TIMEOUT_MS) == -1)
		return -1;
	if (m.type != AGENT_HELLO || m.u.hello.version != AGENT_PROTO_VERSION)
		return test_fail("first frame is %s", agent_type_name(m.type));
	memset(&rep, 0, sizeof(rep));
	rep.type = AGENT_REPLY | AGENT_HELLO;
	rep.id = m.id;
	rep.u.hello.version = AGENT_PROTO_VERSION;
	rep.u.hello.agent_version = "fake-1";
	if (fake_agent_send(&rep) == -1)
		return -1;
	/* Skip repeated HELLOs up to the time, the seed and INFO. */
	do {
		if (fake_agent_recv(&m, SHORT_TIMEOUT_MS) == -1)
			return -1;
	} while (m.type == AGENT_HELLO);
	if (m.type != AGENT_SET_TIME || m.u.set_time.sec < time(NULL) - 60 ||
	    m.u.set_time.sec > time(NULL) + 60)
		return test_fail("then %s (%lld)", agent_type_name(m.type),
		    (long long)m.u.set_time.sec);
	if (fake_agent_ack(&m) == -1)
		return -1;
	if (m.type != AGENT_SEED)
		return test_fail("then %s", agent_type_name(m.type));
	for (i = 0; i < AGENT_SEED_LEN && m.u.seed.data[i] == 0; i++)
		;
	if (i == AGENT_SEED_LEN)
		return test_fail("a seed of zeros");
	if (fake_agent_ack(&m) == -1)
		return -1;
	if (m.type != AGENT_INFO)
		return test_fail("then %s", agent_type_name(m.type));
	memset(&rep, 0, sizeof(rep));
	rep.type = AGENT_REPLY | AGENT_INFO;
	rep.id = m.id;
	rep.u.info.os = "Fake OS";
	rep.u.info.kernel = "Linux fake";
	rep.u.info.agent_version = "fake-1";
	if (fake_agent_send(&rep) == -1)
		return -1;
	while (!run.ready)
		if (peer_pump(&run.p, SHORT_TIMEOUT_MS) == -1)
			return test_fail("no READY: %s", test_why());
	if (strcmp(run.ready_os, "Fake OS") != 0)
		return test_fail("os \"%s\"", run.ready_os);
	return 0;
}

/* The guest reads requests but answers only one, out of order. */
static int
t_fake_busy(void)
{
	union vmm_args		 req;
	struct agent_msg	 m, rep;
	struct peer_call	 calls[VMM_REQ_MAX], c;
	uint32_t		 ids[VMM_REQ_MAX];
	int			 i;

	memset(&req, 0, sizeof(req));
	for (i = 0; i < VMM_REQ_MAX; i++) {
		req.job_status.job = (uint32_t)i;
		if (send_req(IMSG_VMM_JOB_STATUS, &req, &calls[i]) == -1)
			return -1;
	}
	if (send_req(IMSG_VMM_JOB_STATUS, &req, &c) == -1 ||
	    wait_reply(&c, SHORT_TIMEOUT_MS) == -1)
		return -1;
	if (cur_error() != VMM_ERR_BUSY)
		return test_fail("error %u, expected BUSY", cur_error());
	for (i = 0; i < VMM_REQ_MAX; i++) {
		do {
			if (fake_agent_recv(&m, SHORT_TIMEOUT_MS) == -1)
				return -1;
		} while (m.type == AGENT_HELLO);
		if (m.type != AGENT_JOB_STATUS || m.u.job.job != (uint32_t)i)
			return test_fail("frame %d is %s", i,
			    agent_type_name(m.type));
		ids[i] = m.id;
	}
	/* Answer the last one only. */
	memset(&rep, 0, sizeof(rep));
	rep.type = AGENT_ERROR;
	rep.id = ids[VMM_REQ_MAX - 1];
	rep.u.error.code = AGENT_ERR_NOJOB;
	rep.u.error.message = "no such job";
	if (fake_agent_send(&rep) == -1)
		return -1;
	if (wait_reply(&calls[VMM_REQ_MAX - 1], SHORT_TIMEOUT_MS) == -1)
		return -1;
	if (cur_error() != AGENT_ERR_NOJOB)
		return test_fail("error %u, expected NOJOB", cur_error());
	return 0;
}

/* The next request the monitor sends to the guest (HELLOs skipped). */
static int
fake_agent_next(struct agent_msg *m, uint16_t type)
{
	do {
		if (fake_agent_recv(m, SHORT_TIMEOUT_MS) == -1)
			return -1;
	} while (m->type == AGENT_HELLO);
	if (m->type != type)
		return test_fail("the monitor sent %s",
		    agent_type_name(m->type));
	return 0;
}

/* Sends req through the monitor as c; *m is the frame the guest gets. */
static int
fake_ask(uint16_t type, uint32_t job, struct agent_msg *m,
    struct peer_call *c)
{
	union vmm_args		 req;
	int			 r;

	memset(&req, 0, sizeof(req));
	switch (type) {
	case AGENT_JOB_READ:
		req.job_read.job = job;
		req.job_read.out_max = AGENT_PAGE_MAX;
		req.job_read.err_max = AGENT_PAGE_MAX;
		req.job_read.encoding = VMM_ENC_UTF8;
		r = send_req(IMSG_VMM_JOB_READ, &req, c);
		break;
	case AGENT_JOB_CANCEL:
		req.job_cancel.job = job;
		r = send_req(IMSG_VMM_JOB_CANCEL, &req, c);
		break;
	default:
		req.job_status.job = job;
		r = send_req(IMSG_VMM_JOB_STATUS, &req, c);
		break;
	}
	if (r == -1)
		return -1;
	return fake_agent_next(m, type);
}

/* A JOB_STATUS answered as it should be: the channel still serves. */
static int
fake_status_ok(void)
{
	struct agent_msg	 m, rep;
	union reply		 back;
	struct peer_call	 c;

	if (fake_ask(AGENT_JOB_STATUS, 7, &m, &c) == -1)
		return -1;
	memset(&rep, 0, sizeof(rep));
	rep.type = AGENT_REPLY | AGENT_JOB_STATUS;
	rep.id = m.id;
	rep.u.status.st.job = 7;
	rep.u.status.st.state = AGENT_JOB_COMPLETED;
	if (fake_agent_send(&rep) == -1 ||
	    wait_reply(&c, SHORT_TIMEOUT_MS) == -1)
		return -1;
	if (run.cur.hdr.type != IMSG_VMM_JOB_STATE || cur_get(&back) == -1 ||
	    back.state.st.job != 7)
		return test_fail("JOB_STATUS answered with %s",
		    imsg_type_name(run.cur.hdr.type));
	return 0;
}

/* The text of the current reply's error, checked to be UTF-8. */
static int
cur_error_text(const char **text)
{
	static char		 dec[UTF8_DECODED_MAX(AGENT_ERRMSG_MAX)];
	struct msg_vmm_error	 e;
	size_t			 len;
	int			 errs = 0;

	if (msg_vmm_error_get(&run.cur, &e) == -1)
		return test_fail("%s, not a well formed error",
		    imsg_type_name(run.cur.hdr.type));
	(void)utf8_decode((const uint8_t *)e.message, strlen(e.message), 1,
	    dec, &len, &errs);
	if (errs)
		return test_fail("error text is not UTF-8: %s", e.message);
	*text = e.message;
	return 0;
}

/*
 * Well framed replies that make no sense fail the request they answer,
 * and nothing else: a cursor past what is retained, a reply of the wrong
 * type, a request from the guest; error text that is not UTF-8 is made
 * so.  The channel serves on, and the guest is never reported lost.
 */
static int
t_fake_bad_reply(void)
{
	struct agent_msg	 m, rep;
	const char		*text;
	char			 msg[AGENT_ERRMSG_MAX];
	struct peer_call	 c;
	size_t			 i;

	run.nevents = 0;
	if (fake_ask(AGENT_JOB_READ, 7, &m, &c) == -1)
		return -1;
	memset(&rep, 0, sizeof(rep));
	rep.type = AGENT_REPLY | AGENT_JOB_READ;
	rep.id = m.id;
	rep.u.output.st.job = 7;
	rep.u.output.st.state = AGENT_JOB_COMPLETED;
	rep.u.output.st.out_total = 6;
	rep.u.output.out_cursor = 1000;		/* past the end */
	if (fake_agent_send(&rep) == -1 ||
	    wait_reply(&c, SHORT_TIMEOUT_MS) == -1)
		return -1;
	if (cur_error() != AGENT_ERR_PROTO || cur_error_text(&text) == -1)
		return test_fail("cursor past the end: error %u", cur_error());
	if (fake_status_ok() == -1)
		return -1;
	/* The wrong type of reply. */
	if (fake_ask(AGENT_JOB_CANCEL, 7, &m, &c) == -1)
		return -1;
	memset(&rep, 0, sizeof(rep));
	rep.type = AGENT_REPLY | AGENT_FILE_WRITE;
	rep.id = m.id;
	if (fake_agent_send(&rep) == -1 ||
	    wait_reply(&c, SHORT_TIMEOUT_MS) == -1)
		return -1;
	if (cur_error() != AGENT_ERR_PROTO)
		return test_fail("wrong reply type: error %u", cur_error());
	/* A request from the guest, then a reply to nothing in flight. */
	memset(&rep, 0, sizeof(rep));
	rep.type = AGENT_PING;
	rep.id = 99999;
	if (fake_agent_send(&rep) == -1)
		return -1;
	rep.type = AGENT_REPLY | AGENT_PING;
	if (fake_agent_send(&rep) == -1 || fake_status_ok() == -1)
		return -1;
	/* An error whose text is cut inside a character, and worse. */
	if (fake_ask(AGENT_JOB_STATUS, 7, &m, &c) == -1)
		return -1;
	for (i = 0; i < sizeof(msg) - 2; i += 2) {
		msg[i] = (char)0xff;
		msg[i + 1] = i < 100 ? 'x' : (char)0xc3;
	}
	msg[i] = '\0';
	memset(&rep, 0, sizeof(rep));
	rep.type = AGENT_ERROR;
	rep.id = m.id;
	rep.u.error.code = AGENT_ERR_NOENT;
	rep.u.error.message = msg;
	if (fake_agent_send(&rep) == -1 ||
	    wait_reply(&c, SHORT_TIMEOUT_MS) == -1)
		return -1;
	if (cur_error() != AGENT_ERR_NOENT || cur_error_text(&text) == -1)
		return -1;
	if (strncmp(text, "\xef\xbf\xbdx", 4) != 0)
		return test_fail("error text \"%.40s\"", text);
	if (fake_status_ok() == -1)
		return -1;
	(void)peer_pump(&run.p, 100);
	if (have_event(VMM_EV_GUEST_LOST))
		return test_fail("the guest was reported lost");
	return 0;
}

static int
t_fake_garbage(void)
{
	union reply		 rep;
	static const uint8_t	 junk[] =
	    "MCVA\x01\x80\x00\x00garbage frame";

	run.nevents = 0;
	if (write(run.fake_agent, junk, sizeof(junk) - 1) !=
	    (ssize_t)sizeof(junk) - 1)
		return test_fail("write");
	if (wait_event(VMM_EV_GUEST_LOST, SHORT_TIMEOUT_MS) == -1)
		return -1;
	/* QMP is still served. */
	if (expect_status("prelaunch", 0) == -1)
		return -1;
	if (call(IMSG_VMM_GUEST_INFO, NULL, &rep) == 0)
		return test_fail("agent request served after the channel "
		    "was lost");
	if (cur_error() != VMM_ERR_GUEST_DOWN)
		return test_fail("error %u, expected GUEST_DOWN", cur_error());
	return 0;
}

static int
t_kill_qemu(void)
{
	run.nevents = 0;
	kill(run.qemu, SIGKILL);
	waitpid(run.qemu, NULL, 0);
	run.qemu = -1;
	return shutdown_exit();
}

/* --- this program as qemu-guest-agent (-a qga) */

#define FQ_OVERSIZE	(600 * 1024)	/* bytes of an answer too long */

static char	 fq_rx[64 * 1024];
static size_t	 fq_len;

/*
 * The next line the monitor wrote to the agent, without its newline;
 * *delim says whether a 0xff came before it.
 */
static int
fake_qga_line(char *line, size_t len, int *delim, int timeout_ms)
{
	struct pollfd	 pfd;
	ssize_t		 n;
	size_t		 i, o = 0;
	char		*nl;

	*delim = 0;
	for (;;) {
		if ((nl = memchr(fq_rx, '\n', fq_len)) != NULL) {
			for (i = 0; fq_rx + i < nl; i++) {
				if ((unsigned char)fq_rx[i] == 0xff) {
					*delim = 1;
					o = 0;
				} else if (o + 1 < len)
					line[o++] = fq_rx[i];
			}
			line[o] = '\0';
			i = (size_t)(nl - fq_rx) + 1;
			memmove(fq_rx, fq_rx + i, fq_len - i);
			fq_len -= i;
			return 0;
		}
		if (fq_len == sizeof(fq_rx))
			return test_fail("a line longer than %zu from the "
			    "monitor", sizeof(fq_rx));
		pfd.fd = run.fake_agent;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, timeout_ms) <= 0)
			return test_fail("nothing from the monitor");
		if ((n = recv(run.fake_agent, fq_rx + fq_len,
		    sizeof(fq_rx) - fq_len, 0)) <= 0)
			return test_fail("agent channel closed");
		fq_len += (size_t)n;
	}
}

static int
fake_qga_say(const char *s, size_t len)
{
	size_t	 off = 0;
	ssize_t	 n;

	while (off < len) {
		if ((n = write(run.fake_agent, s + off, len - off)) <= 0)
			return test_fail("write to the monitor");
		off += (size_t)n;
	}
	return 0;
}

/*
 * The next command, which must be cmd (repeated syncs skipped unless
 * cmd is the sync): its id, its line in line, and whether 0xff came
 * before it.
 */
static int
fake_qga_cmd(const char *cmd, unsigned int *id, char *line, size_t len,
    int *delim, int timeout_ms)
{
	char	 want[96];
	char	*p;

	snprintf(want, sizeof(want), "{\"execute\": \"%s\"", cmd);
	do {
		if (fake_qga_line(line, len, delim, timeout_ms) == -1)
			return -1;
	} while (strcmp(cmd, "guest-sync-delimited") != 0 &&
	    strncmp(line, "{\"execute\": \"guest-sync-delimited\"", 34) ==
	    0);
	if (strncmp(line, want, strlen(want)) != 0)
		return test_fail("expected %s, got %.200s", cmd, line);
	if ((p = strstr(line, "\"id\": ")) == NULL ||
	    sscanf(strrchr(line, '"') + 3, "%u}", id) != 1 || *id == 0)
		return test_fail("%s without an id: %.200s", cmd, line);
	return 0;
}

/* A sync answered after stale bytes, then guest-info and osinfo. */
static int
fake_qga_session(void)
{
	static const char	 stale[] = "{\"return\": \"half a line";
	static const char	 perr[] = "{\"error\": {\"class\": "
	    "\"GenericError\", \"desc\": \"JSON parse error, stray "
	    "'\\ufffd'\"}}\n";
	char			 line[4096], say[512];
	unsigned int		 id;
	int			 delim;

	if (fake_qga_cmd("guest-sync-delimited", &id, line, sizeof(line),
	    &delim, SHORT_TIMEOUT_MS) == -1)
		return -1;
	if (!delim)
		return test_fail("guest-sync-delimited without 0xff before "
		    "it");
	snprintf(say, sizeof(say), "%s%s\xff{\"return\": %u}\n", stale,
	    perr, id);
	if (fake_qga_say(say, strlen(say)) == -1 ||
	    fake_qga_cmd("guest-info", &id, line, sizeof(line), &delim,
	    SHORT_TIMEOUT_MS) == -1)
		return -1;
	snprintf(say, sizeof(say), "{\"return\": {\"version\": \"7.2.0\", "
	    "\"supported_commands\": []}, \"id\": %u}\n", id);
	if (fake_qga_say(say, strlen(say)) == -1 ||
	    fake_qga_cmd("guest-get-osinfo", &id, line, sizeof(line),
	    &delim, SHORT_TIMEOUT_MS) == -1)
		return -1;
	snprintf(say, sizeof(say), "{\"return\": {\"pretty-name\": "
	    "\"Fake QGA OS\", \"kernel-release\": \"6.1.0-fake\"}, "
	    "\"id\": %u}\n", id);
	return fake_qga_say(say, strlen(say));
}

/* An exec of command, started as pid in the guest: its job. */
static int
fake_qga_exec(const char *command, int pid, uint32_t *job)
{
	union vmm_args	 a;
	union reply	 rep;
	struct peer_call c;
	char		 line[4096], say[256];
	unsigned int	 id;
	int		 delim;

	memset(&a, 0, sizeof(a));
	a.exec.flags = AGENT_EXEC_SHELL;
	a.exec.timeout_ms = 5000;
	a.exec.cwd = "";
	a.exec.argc = 1;
	a.exec.argv[0] = command;
	a.exec.input = "";
	if (send_req(IMSG_VMM_EXEC, &a, &c) == -1 ||
	    fake_qga_cmd("guest-exec", &id, line, sizeof(line), &delim,
	    SHORT_TIMEOUT_MS) == -1)
		return -1;
	if (strstr(line, "\"path\": \"timeout\"") == NULL ||
	    strstr(line, command) == NULL)
		return test_fail("guest-exec: %.300s", line);
	snprintf(say, sizeof(say), "{\"return\": {\"pid\": %d}, "
	    "\"id\": %u}\n", pid, id);
	if (fake_qga_say(say, strlen(say)) == -1 ||
	    wait_reply(&c, SHORT_TIMEOUT_MS) == -1)
		return -1;
	if (cur_get(&rep) == -1 || run.cur.hdr.type != IMSG_VMM_JOB)
		return test_fail("EXEC answered with %s",
		    imsg_type_name(run.cur.hdr.type));
	*job = rep.job.job;
	return 0;
}

/*
 * The session after 0xff, a stale line and the agent's parse error;
 * a job polled to its end with its output; an answer too long, which
 * fails its job and syncs the channel again; a command unanswered past
 * its deadline, which does the same.
 */
static int
t_fake_qga(void)
{
	static char	 big[FQ_OVERSIZE + 128];
	union vmm_args	 a;
	union reply	 rep;
	struct peer_call c;
	char		 line[4096], say[512];
	unsigned int	 id;
	uint32_t	 job;
	int		 delim, n;

	fq_len = 0;
	run.nevents = 0;
	if (t_hello() == -1 || fake_qga_session() == -1)
		return -1;
	while (!run.ready)
		if (peer_pump(&run.p, SHORT_TIMEOUT_MS) == -1)
			return test_fail("no READY: %s", test_why());
	if (strcmp(run.ready_os, "Fake QGA OS") != 0)
		return test_fail("os \"%s\"", run.ready_os);

	/* A job, polled until it has exited, with its output. */
	if (fake_qga_exec("echo hi", 42, &job) == -1 ||
	    fake_qga_cmd("guest-exec-status", &id, line, sizeof(line),
	    &delim, SHORT_TIMEOUT_MS) == -1)
		return -1;
	if (strstr(line, "\"pid\": 42") == NULL)
		return test_fail("guest-exec-status: %s", line);
	snprintf(say, sizeof(say), "{\"return\": {\"exited\": true, "
	    "\"exitcode\": 3, \"out-data\": \"aGkK\"}, \"id\": %u}\n", id);
	if (fake_qga_say(say, strlen(say)) == -1)
		return -1;
	memset(&a, 0, sizeof(a));
	a.job_read.job = job;
	a.job_read.out_max = a.job_read.err_max = AGENT_PAGE_MAX;
	a.job_read.encoding = VMM_ENC_UTF8;
	a.job_read.wait_ms = 5000;
	if (call(IMSG_VMM_JOB_READ, &a, &rep) == -1)
		return -1;
	if (rep.output.st.state != AGENT_JOB_COMPLETED ||
	    rep.output.st.exit_code != 3 || strcmp(rep.output.out, "hi\n") !=
	    0 || !rep.output.st.out_eof)
		return test_fail("job: state %u, exit %d, out \"%s\"",
		    rep.output.st.state, rep.output.st.exit_code,
		    rep.output.out);

	/* An answer too long: the job fails, the channel syncs again. */
	if (fake_qga_exec("yes", 43, &job) == -1 ||
	    fake_qga_cmd("guest-exec-status", &id, line, sizeof(line),
	    &delim, SHORT_TIMEOUT_MS) == -1)
		return -1;
	n = snprintf(big, sizeof(big), "{\"return\": {\"exited\": true, "
	    "\"exitcode\": 0, \"out-data\": \"");
	memset(big + n, 'A', FQ_OVERSIZE);
	n += FQ_OVERSIZE;
	n += snprintf(big + n, sizeof(big) - (size_t)n, "\"}, \"id\": %u}\n",
	    id);
	if (fake_qga_say(big, (size_t)n) == -1 ||
	    wait_event(VMM_EV_GUEST_LOST, SHORT_TIMEOUT_MS) == -1 ||
	    fake_qga_session() == -1 ||
	    wait_event(VMM_EV_GUEST_BACK, SHORT_TIMEOUT_MS) == -1)
		return -1;
	memset(&a, 0, sizeof(a));
	a.job_status.job = job;
	if (call(IMSG_VMM_JOB_STATUS, &a, &rep) == -1)
		return -1;
	if (rep.state.st.state != AGENT_JOB_FAILED)
		return test_fail("the job of an answer too long is in state "
		    "%u", rep.state.st.state);

	/* No answer past the command's deadline: the same. */
	run.nevents = 0;
	memset(&a, 0, sizeof(a));
	a.file_read.path = "a.txt";
	a.file_read.length = 16;
	a.file_read.encoding = VMM_ENC_UTF8;
	if (send_req(IMSG_VMM_FILE_READ, &a, &c) == -1 ||
	    fake_qga_cmd("guest-file-open", &id, line, sizeof(line), &delim,
	    SHORT_TIMEOUT_MS) == -1)
		return -1;
	if (strstr(line, "\"path\": \"/workspace/a.txt\"") == NULL)
		return test_fail("guest-file-open: %s", line);
	if (wait_reply(&c, CALL_TIMEOUT_MS) == -1)
		return -1;
	if (cur_error() != AGENT_ERR_PROTO)
		return test_fail("unanswered: error %u", cur_error());
	if (wait_event(VMM_EV_GUEST_LOST, SHORT_TIMEOUT_MS) == -1 ||
	    fake_qga_session() == -1 ||
	    wait_event(VMM_EV_GUEST_BACK, SHORT_TIMEOUT_MS) == -1)
		return -1;
	return 0;
}

/* --- this program as QEMU */

static int
fake_qmp_line(char *buf, size_t len, int timeout_ms)
{
	struct pollfd	 pfd;
	size_t		 n = 0;

	while (n + 1 < len) {
		pfd.fd = run.fake_qmp;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, timeout_ms) <= 0)
			return test_fail("no QMP command");
		if (read(run.fake_qmp, buf + n, 1) != 1)
			return test_fail("QMP closed");
		if (buf[n++] == '\n')
			break;
	}
	buf[n] = '\0';
	return 0;
}

static int
fake_qmp_say(const char *s)
{
	if (write(run.fake_qmp, s, strlen(s)) != (ssize_t)strlen(s))
		return test_fail("write");
	return 0;
}

static int	 fake_qmp_negotiate(void);

static int
t_fake_qmp(void)
{
	struct peer_call c;
	char		 line[256], reply[128];
	unsigned int	 id;

	if (t_hello() == -1)
		return -1;
	/* A request before the greeting waits for the negotiation. */
	if (send_req(IMSG_VMM_QMP_STATUS, NULL, &c) == -1 ||
	    fake_qmp_negotiate() == -1 ||
	    fake_qmp_line(line, sizeof(line), SHORT_TIMEOUT_MS) == -1)
		return -1;
	if (sscanf(line, "{\"execute\": \"query-status\", \"id\": %u}",
	    &id) != 1)
		return test_fail("expected query-status, got %s", line);
	/* The reply arrives split in two writes. */
	snprintf(reply, sizeof(reply), "{\"return\": {\"status\": \"running\""
	    ", \"singlestep\": false, \"running\": true}, \"id\": %u}\r\n", id);
	if (write(run.fake_qmp, reply, 10) != 10)
		return test_fail("write");
	usleep(100000);
	if (fake_qmp_say(reply + 10) == -1)
		return -1;
	if (wait_reply(&c, SHORT_TIMEOUT_MS) == -1)
		return -1;
	if (run.cur.hdr.type != IMSG_VMM_QMP_STATE)
		return test_fail("QMP_STATUS answered with %s",
		    imsg_type_name(run.cur.hdr.type));
	/* Garbage from QEMU: reported, not fatal; EOF ends the monitor. */
	if (fake_qmp_say("{\"return\": {}, \"id\": \"x\"}\r\n") == -1)
		return -1;
	while (run.unasked_errors == 0)
		if (peer_pump(&run.p, SHORT_TIMEOUT_MS) == -1)
			return test_fail("garbage not reported");
	close(run.fake_qmp);
	run.fake_qmp = -1;
	return shutdown_exit();
}

/* The greeting and qmp_capabilities, as QEMU 7.2 says them. */
static int
fake_qmp_negotiate(void)
{
	char		 line[256], reply[128];
	unsigned int	 id;

	if (fake_qmp_say("{\"QMP\": {\"version\": {\"qemu\": {\"micro\": 0, "
	    "\"minor\": 2, \"major\": 7}, \"package\": \"\"}, "
	    "\"capabilities\": []}}\r\n") == -1 ||
	    fake_qmp_line(line, sizeof(line), SHORT_TIMEOUT_MS) == -1)
		return -1;
	if (sscanf(line, "{\"execute\": \"qmp_capabilities\", \"id\": %u}",
	    &id) != 1)
		return test_fail("expected qmp_capabilities, got %s", line);
	snprintf(reply, sizeof(reply), "{\"return\": {}, \"id\": %u}\r\n", id);
	return fake_qmp_say(reply);
}

/* The next command must be ringbuf-read of serial0, base64; its id. */
static int
fake_qmp_ringbuf_read(unsigned int *id)
{
	char	 line[256];
	int	 size;

	if (fake_qmp_line(line, sizeof(line), SHORT_TIMEOUT_MS) == -1)
		return -1;
	if (sscanf(line, "{\"execute\": \"ringbuf-read\", \"arguments\": "
	    "{\"device\": \"serial0\", \"size\": %d, \"format\": \"base64\"}, "
	    "\"id\": %u}", &size, id) != 2 || size <= 0)
		return test_fail("expected ringbuf-read, got %s", line);
	return 0;
}

/*
 * QEMU's console bytes, NUL (replaced) and a cut character (held back)
 * among them, make the answer; then junk for ringbuf-read's return breaks QMP (reported),
 * fails that read, and the monitor serves on until QEMU goes.
 */
static int
t_fake_serial(void)
{
	union reply	 rep;
	struct peer_call c;
	char		 reply[128];
	unsigned int	 id;
	uint32_t	 running;
	char		 status[64];

	if (t_hello() == -1 || fake_qmp_negotiate() == -1)
		return -1;
	/* "one\0\ntwo\n" and the first byte of a euro sign */
	if (send_req(IMSG_VMM_SERIAL_READ, NULL, &c) == -1 ||
	    fake_qmp_ringbuf_read(&id) == -1)
		return -1;
	snprintf(reply, sizeof(reply), "{\"return\": \"b25lAAp0d28K4g==\", "
	    "\"id\": %u}\r\n", id);
	if (fake_qmp_say(reply) == -1 || wait_reply(&c, SHORT_TIMEOUT_MS) ==
	    -1)
		return -1;
	if (cur_get(&rep) == -1 || run.cur.hdr.type != IMSG_VMM_SERIAL_DATA)
		return test_fail("SERIAL_READ answered with %s",
		    imsg_type_name(run.cur.hdr.type));
	if (rep.serial.total != 10 || rep.serial.len != 11 ||
	    !rep.serial.whole || !rep.serial.replaced ||
	    memcmp(rep.serial.data, "one\xef\xbf\xbd\ntwo\n", 11) != 0)
		return test_fail("total %llu, %zu bytes, whole %u, replaced %u",
		    (unsigned long long)rep.serial.total, rep.serial.len,
		    rep.serial.whole, rep.serial.replaced);
	/* Junk: not base64. */
	if (send_req(IMSG_VMM_SERIAL_READ, NULL, &c) == -1 ||
	    fake_qmp_ringbuf_read(&id) == -1)
		return -1;
	snprintf(reply, sizeof(reply), "{\"return\": \"<junk>\", \"id\": %u}"
	    "\r\n", id);
	if (fake_qmp_say(reply) == -1 || wait_reply(&c, SHORT_TIMEOUT_MS) ==
	    -1)
		return -1;
	if (cur_error() != VMM_ERR_QMP)
		return test_fail("junk: error %u, expected QMP", cur_error());
	while (run.unasked_errors == 0)
		if (peer_pump(&run.p, SHORT_TIMEOUT_MS) == -1)
			return test_fail("junk not reported");
	/* Still alive: the next request is refused, not ignored. */
	if (call_qmp(IMSG_VMM_QMP_STATUS, status, sizeof(status),
	    &running) == 0)
		return test_fail("QMP served after junk");
	if (cur_error() != VMM_ERR_QMP)
		return test_fail("after junk: error %u", cur_error());
	close(run.fake_qmp);
	run.fake_qmp = -1;
	return shutdown_exit();
}

/* --- setup */

static void
cleanup(void)
{
	char	 cmd[PATH_MAX + 32];

	run_stop();
	if (test_failures()) {
		printf("# logs kept in %s\n", workdir);
		return;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", workdir);
	(void)!system(cmd);
}

static void
on_signal(int sig)
{
	if (run.qemu > 0)
		kill(run.qemu, SIGKILL);
	if (run.vmm > 0)
		kill(run.vmm, SIGKILL);
	_exit(128 + sig);
}

static void
setup_workdir(const char *base)
{
	char	 path[PATH_MAX];
	FILE	*f;

	snprintf(workdir, sizeof(workdir), "%s/mcvm-vmm.XXXXXX", base);
	if (mkdtemp(workdir) == NULL) {
		perror("mkdtemp");
		exit(1);
	}
	chmod(workdir, 0755);
	snprintf(path, sizeof(path), "%s/run", workdir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/run/empty", workdir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/state", workdir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/mcvm.conf", workdir);
	if ((f = fopen(path, "w")) == NULL) {
		perror(path);
		exit(1);
	}
	fprintf(f, "state directory \"%s/state\"\n"
	    "run directory \"%s/run\"\n", workdir, workdir);
	fclose(f);
}

int
main(int argc, char *argv[])
{
	const char	*base = "/tmp";
	int		 ch;

	while ((ch = getopt(argc, argv, "w:")) != -1) {
		switch (ch) {
		case 'w':
			base = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (argc - optind != 2)
		goto usage;
	builddir = argv[optind];
	imagedir = argv[optind + 1];
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	setup_workdir(base);

	/* This program as QEMU: no QEMU at all. */
	run_start(2);
	test_report("fake QEMU: negotiation, split reply, garbage reported, "
	    "EOF ends the monitor", t_fake_qmp());
	run_stop();
	run_start(2);
	test_report("fake QEMU: the serial console's bytes; junk for "
	    "ringbuf-read breaks QMP, not the monitor", t_fake_serial());
	run_stop();

	/* Real QEMU with no guest; this program as the agent. */
	run_start(1);
	test_report("fake guest: HELLO, the time, a seed and INFO, then READY",
	    t_fake_handshake());
	test_report("fake guest: 33rd request busy, answers matched by id",
	    t_fake_busy());
	test_report("fake guest: bad replies fail their calls, not the channel",
	    t_fake_bad_reply());
	test_report("fake guest: malformed frame, GUEST_LOST, QMP alive",
	    t_fake_garbage());
	test_report("QEMU killed: SHUTDOWN, monitor exits 0", t_kill_qemu());
	run_stop();

	/* Real QEMU with no guest; this program as qemu-guest-agent. */
	guest_kind = "qga";
	run_start(1);
	test_report("fake qemu-guest-agent: sync after stale bytes, a job "
	    "polled to its end, an answer too long and one too late each "
	    "fail their request and sync again", t_fake_qga());
	run_stop();
	guest_kind = NULL;

	/* The real guest. */
	run_start(0);
	test_report("HELLO from the monitor", t_hello());
	if (t_ready() == -1) {
		test_report("READY with the guest's os", -1);
	} else {
		test_report("READY with the guest's os", 0);
		test_report("QMP status running", t_status_running());
		test_report("monitor: VM uid, no capabilities, seccomp, "
		    "empty root", t_proc());
		test_report("exec python3 prints 4", t_exec());
		test_report("file write and read back 128 KiB", t_files());
		test_report("file text, a cut character held back",
		    t_file_text());
		test_report("file list", t_file_list());
		test_report("guest info", t_info());
		test_report("agent error relayed", t_agent_error());
		test_report("pause, paused, cont", t_pause());
		test_report("screenshot: a 720x400 PNG in the memfd",
		    t_screenshot());
		test_report("input: keys, tablet, mouse, waits; OK with the "
		    "count", t_input());
		test_report("paused: two screenshots, input refused by QEMU",
		    t_paused_display());
		test_report("serial console: the kernel's, bounded, kept "
		    "through a pause", t_serial());
		test_report("busy beyond 32 in flight, timeouts, late answers "
		    "dropped", t_busy_timeout());
		test_report("quit: SHUTDOWN, monitor exits 0", t_quit());
	}
	cleanup();
	return test_summary();
usage:
	fprintf(stderr, "usage: vmm-driver [-w workdir] builddir imagedir\n");
	return 2;
}
