/*
 * guest-driver: boots the guest image under QEMU (TCG) with the agent port
 * on a unix socket, and drives mcvm-guestd through the agent protocol.
 *
 *	guest-driver [-b] [-n runs] [-w workdir] imagedir
 *
 * Without -b it runs the guest tests, one line each, ending with
 * "N passed, N failed".  With -b it measures the time from starting QEMU
 * to the agent's first answer and the exec round-trip of `true`.
 * The guest gets no NIC; QEMU is started and, if it does not power off by
 * itself, killed by the pid this program started.
 */
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agentc.h"
#include "b64.h"
#include "peer.h"
#include "utf8.h"

#define QEMU_BIN		"qemu-system-x86_64"
#define GUEST_MEM_MIB		"1024"
#define GUEST_CPUS		"2"
#define GUEST_MACHINE		"q35"
#define GUEST_APPEND		AGENT_KERNEL_APPEND_TCG
#define BOOT_TIMEOUT_MS		120000
#define CALL_TIMEOUT_MS		30000
#define JOB_TIMEOUT_MS		60000
#define SLOW_TIMEOUT_MS		300000	/* npm, pip: slow under TCG */
#define JOB_POLL_MS		20
#define SHUTDOWN_WAIT_MS	20000
#define CONSOLE_WAIT_MS		60000	/* past the shell's restart backoff */
#define BENCH_RUNS		50
#define TEXT_MAX		(2 * 1024 * 1024)

static struct agentc	 ac;
static pid_t		 qemu_pid = -1;
static char		 workdir[256];
static char		 sockpath[512];
static int		 display = 1;	/* GUEST_DISPLAY=off: 0 */

static double
now_us(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void
sleep_ms(int ms)
{
	struct timespec	 ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static void
qemu_start(const char *image)
{
	char	 kernel[512], initrd[512], drive[600], chardev[600];
	char	 serial[600], append[1024];
	const char *machine, *extra, *av[64];
	size_t	 n;

	snprintf(kernel, sizeof(kernel), "%s/vmlinuz", image);
	snprintf(initrd, sizeof(initrd), "%s/initrd.img", image);
	snprintf(drive, sizeof(drive), "file=%s/rootfs.ext4,format=raw,"
	    "if=none,id=root,snapshot=on,cache=unsafe", image);
	snprintf(chardev, sizeof(chardev), "socket,id=agent,path=%s,"
	    "server=on,wait=off", sockpath);
	snprintf(serial, sizeof(serial), "file:%s/serial.log", workdir);
	/*
	 * For experiments: GUEST_MACHINE, GUEST_APPEND (kernel args),
	 * GUEST_DISPLAY=off (no VGA, no virtio input devices).
	 */
	if ((machine = getenv("GUEST_MACHINE")) == NULL)
		machine = GUEST_MACHINE;
	if ((extra = getenv("GUEST_APPEND")) == NULL)
		extra = "";
	snprintf(append, sizeof(append), "%s %s", GUEST_APPEND, extra);

	/* As mcvmd's VMs with a display: VGA, a tablet and a mouse. */
	if ((extra = getenv("GUEST_DISPLAY")) != NULL &&
	    strcmp(extra, "off") == 0)
		display = 0;
	n = 0;
	av[n++] = QEMU_BIN;
	av[n++] = "-nodefaults";
	av[n++] = "-no-user-config";
	av[n++] = "-accel";
	av[n++] = "tcg";
	av[n++] = "-machine";
	av[n++] = machine;
	av[n++] = "-cpu";
	av[n++] = "qemu64";
	av[n++] = "-m";
	av[n++] = GUEST_MEM_MIB;
	av[n++] = "-smp";
	av[n++] = GUEST_CPUS;
	av[n++] = "-display";
	av[n++] = "none";
	av[n++] = "-no-reboot";
	av[n++] = "-nic";
	av[n++] = "none";
	av[n++] = "-kernel";
	av[n++] = kernel;
	av[n++] = "-initrd";
	av[n++] = initrd;
	av[n++] = "-append";
	av[n++] = append;
	av[n++] = "-drive";
	av[n++] = drive;
	av[n++] = "-device";
	av[n++] = "virtio-blk-pci,drive=root";
	av[n++] = "-device";
	av[n++] = "virtio-serial-pci";
	av[n++] = "-chardev";
	av[n++] = chardev;
	av[n++] = "-device";
	av[n++] = "virtserialport,chardev=agent,name=" AGENT_PORT_NAME;
	av[n++] = "-device";
	av[n++] = "virtio-rng-pci";
	if (display) {
		av[n++] = "-device";
		av[n++] = "VGA";
		av[n++] = "-device";
		av[n++] = "virtio-tablet-pci";
		av[n++] = "-device";
		av[n++] = "virtio-mouse-pci";
	}
	av[n++] = "-serial";
	av[n++] = serial;
	av[n] = NULL;

	if ((qemu_pid = fork()) == -1) {
		perror("fork");
		exit(1);
	}
	if (qemu_pid == 0) {
		int	 null = open("/dev/null", O_RDWR);

		if (null != -1) {
			dup2(null, 0);
			dup2(null, 1);
		}
		execvp(QEMU_BIN, (char **)av);
		perror("exec " QEMU_BIN);
		_exit(127);
	}
}

/* Waits for QEMU to exit; kills it (by its pid) if it does not. */
static int
qemu_stop(int wait_ms)
{
	uint64_t	 deadline = test_now_ms() + (uint64_t)wait_ms;
	int		 status;
	pid_t		 pid;

	if (qemu_pid == -1)
		return 0;
	for (;;) {
		pid = waitpid(qemu_pid, &status, WNOHANG);
		if (pid == qemu_pid) {
			qemu_pid = -1;
			return 0;
		}
		if (test_now_ms() >= deadline)
			break;
		sleep_ms(50);
	}
	kill(qemu_pid, SIGKILL);
	waitpid(qemu_pid, &status, 0);
	qemu_pid = -1;
	return -1;
}

static int
agent_connect(int timeout_ms)
{
	uint64_t	 deadline = test_now_ms() + (uint64_t)timeout_ms;

	while (ac_connect(&ac, sockpath) == -1) {
		if (test_now_ms() >= deadline)
			return -1;
		sleep_ms(10);
	}
	return 0;
}

static int
call(struct agent_msg *req, struct agent_msg *rep)
{
	if (ac_call(&ac, req, rep, CALL_TIMEOUT_MS) == -1)
		return test_fail("%s: %s", agent_type_name(req->type),
		    strerror(errno));
	if (rep->type == AGENT_ERROR)
		return test_fail("%s: error %u (%s): %s",
		    agent_type_name(req->type), rep->u.error.code,
		    agent_err_name(rep->u.error.code), rep->u.error.message);
	if (rep->type != (AGENT_REPLY | req->type))
		return test_fail("%s: reply of type %s",
		    agent_type_name(req->type), agent_type_name(rep->type));
	return 0;
}

/* A request expected to fail with code; 0 if it did. */
static int
call_err(struct agent_msg *req, uint32_t code)
{
	struct agent_msg	 rep;

	if (ac_call(&ac, req, &rep, CALL_TIMEOUT_MS) == -1)
		return test_fail("%s: %s", agent_type_name(req->type),
		    strerror(errno));
	if (rep.type != AGENT_ERROR)
		return test_fail("%s succeeded; expected %s",
		    agent_type_name(req->type), agent_err_name(code));
	if (rep.u.error.code != code)
		return test_fail("%s: error %s (%s); expected %s",
		    agent_type_name(req->type),
		    agent_err_name(rep.u.error.code), rep.u.error.message,
		    agent_err_name(code));
	return 0;
}

static int
exec_start(const char *cmd, int shell, const char *stdin_data,
    uint32_t timeout_ms, uint32_t *job)
{
	struct agent_msg	 req, rep;

	memset(&req, 0, sizeof(req));
	req.type = AGENT_EXEC;
	req.u.exec.flags = shell ? AGENT_EXEC_SHELL : 0;
	req.u.exec.timeout_ms = timeout_ms;
	req.u.exec.cwd = "";
	req.u.exec.argc = 1;
	req.u.exec.argv[0] = cmd;
	if (stdin_data != NULL) {
		req.u.exec.stdin_data = (const uint8_t *)stdin_data;
		req.u.exec.stdin_len = (uint32_t)strlen(stdin_data);
	}
	if (call(&req, &rep) == -1)
		return -1;
	*job = rep.u.job.job;
	return 0;
}

static int
job_status(uint32_t job, struct agent_job_status *st)
{
	struct agent_msg	 req, rep;

	memset(&req, 0, sizeof(req));
	req.type = AGENT_JOB_STATUS;
	req.u.job.job = job;
	if (call(&req, &rep) == -1)
		return -1;
	*st = rep.u.status.st;
	return 0;
}

static int
job_wait(uint32_t job, struct agent_job_status *st, int timeout_ms)
{
	uint64_t	 deadline = test_now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		if (job_status(job, st) == -1)
			return -1;
		if (st->state != AGENT_JOB_RUNNING)
			return 0;
		if (test_now_ms() >= deadline)
			return test_fail("job %u still running", job);
		sleep_ms(JOB_POLL_MS);
	}
}

struct collected {
	char		 text[2][TEXT_MAX];	/* decoded, NUL-terminated */
	size_t		 len[2];
	uint64_t	 cursor[2];
	uint64_t	 skipped[2];	/* over the gap */
	int		 gaps[2];	/* pages that skipped */
	int		 errors[2];
	int		 pages;
	struct agent_job_status st;
};

static struct collected	 col;

/*
 * Reads a finished job's output the way the host service does: pages of
 * at most page bytes per stream by byte cursor, decoded as UTF-8 (an
 * incomplete character at a page end waits for the next page), over
 * the gap where it skips, until neither cursor advances.
 */
static int
job_collect(uint32_t job, uint32_t page)
{
	struct agent_msg	 req, rep;
	const uint8_t		*data;
	uint32_t		 len;
	uint64_t		 skipped;
	size_t			 used, outlen;
	int			 s, advanced, errs;

	memset(&col, 0, sizeof(col));
	do {
		memset(&req, 0, sizeof(req));
		req.type = AGENT_JOB_READ;
		req.u.job_read.job = job;
		req.u.job_read.out_cursor = col.cursor[0];
		req.u.job_read.err_cursor = col.cursor[1];
		req.u.job_read.out_max = page;
		req.u.job_read.err_max = page;
		if (call(&req, &rep) == -1)
			return -1;
		col.st = rep.u.output.st;
		col.pages++;
		advanced = 0;
		for (s = 0; s < 2; s++) {
			data = s == 0 ? rep.u.output.out : rep.u.output.err;
			len = s == 0 ? rep.u.output.out_len :
			    rep.u.output.err_len;
			if (len > page)
				return test_fail("page of %u bytes > %u", len,
				    page);
			skipped = s == 0 ? rep.u.output.out_skipped :
			    rep.u.output.err_skipped;
			if (skipped > 0) {
				col.skipped[s] += skipped;
				col.gaps[s]++;
				col.cursor[s] += skipped;
				advanced = 1;
			}
			if (UTF8_DECODED_MAX(len) > TEXT_MAX - 1 - col.len[s])
				return test_fail("output too long");
			errs = 0;
			used = utf8_decode(data, len,
			    agent_page_final(&rep.u.output.st, s,
			    col.cursor[s], len), col.text[s] + col.len[s],
			    &outlen, &errs);
			col.len[s] += outlen;
			col.text[s][col.len[s]] = '\0';
			col.errors[s] |= errs;
			if (used > 0)
				advanced = 1;
			col.cursor[s] += used;
		}
	} while (advanced);
	return 0;
}

/* Runs a command to completion and collects its output. */
static int
run(const char *cmd, int shell, const char *stdin_data)
{
	struct agent_job_status	 st;
	uint32_t		 job;

	if (exec_start(cmd, shell, stdin_data, 0, &job) == -1)
		return -1;
	if (job_wait(job, &st, JOB_TIMEOUT_MS) == -1)
		return -1;
	return job_collect(job, AGENT_PAGE_MAX);
}

/* Runs an EXEC request as built, to its end; its output into col. */
static int
run_req(struct agent_msg *req, struct agent_job_status *st)
{
	struct agent_msg	 rep;

	if (call(req, &rep) == -1)
		return -1;
	if (job_wait(rep.u.job.job, st, JOB_TIMEOUT_MS) == -1)
		return -1;
	return job_collect(rep.u.job.job, AGENT_PAGE_MAX);
}

static int
expect_output(const char *out, const char *err, int code)
{
	if (col.st.state != AGENT_JOB_COMPLETED)
		return test_fail("state %s (stderr: %.200s)",
		    agent_job_state_name(col.st.state), col.text[1]);
	if (col.st.exit_code != code)
		return test_fail("exit code %d, expected %d (stderr: %.200s)",
		    col.st.exit_code, code, col.text[1]);
	if (out != NULL && strcmp(col.text[0], out) != 0)
		return test_fail("stdout \"%.200s\", expected \"%s\"",
		    col.text[0], out);
	if (err != NULL && strcmp(col.text[1], err) != 0)
		return test_fail("stderr \"%.200s\", expected \"%s\"",
		    col.text[1], err);
	return 0;
}

static int
file_write(const char *path, uint32_t flags, uint64_t off, const void *data,
    size_t len, uint64_t *size)
{
	struct agent_msg	 req, rep;

	memset(&req, 0, sizeof(req));
	req.type = AGENT_FILE_WRITE;
	req.u.file_write.path = path;
	req.u.file_write.flags = flags;
	req.u.file_write.offset = off;
	req.u.file_write.data = data;
	req.u.file_write.len = (uint32_t)len;
	if (call(&req, &rep) == -1)
		return -1;
	if (size != NULL)
		*size = rep.u.file_written.size;
	return 0;
}

/* Reads a whole (small) file into buf; returns its length or -1. */
static long
file_read(const char *path, uint8_t *buf, size_t cap)
{
	struct agent_msg	 req, rep;
	uint64_t		 off = 0;

	for (;;) {
		memset(&req, 0, sizeof(req));
		req.type = AGENT_FILE_READ;
		req.u.file_read.path = path;
		req.u.file_read.offset = off;
		req.u.file_read.length = AGENT_FILE_CHUNK_MAX;
		if (call(&req, &rep) == -1)
			return -1;
		if (rep.u.file_data.len > cap - off)
			return test_fail("file larger than %zu", cap);
		memcpy(buf + off, rep.u.file_data.data, rep.u.file_data.len);
		off += rep.u.file_data.len;
		if (rep.u.file_data.eof || rep.u.file_data.len == 0)
			return (long)off;
	}
}

/* --- the tests */

static int
t_info(void)
{
	struct agent_msg	 req, rep;

	memset(&req, 0, sizeof(req));
	req.type = AGENT_PING;
	if (call(&req, &rep) == -1)
		return -1;
	req.type = AGENT_INFO;
	if (call(&req, &rep) == -1)
		return -1;
	if (strstr(rep.u.info.os, "Debian") == NULL)
		return test_fail("os \"%s\"", rep.u.info.os);
	if (strncmp(rep.u.info.kernel, "Linux ", 6) != 0)
		return test_fail("kernel \"%s\"", rep.u.info.kernel);
	if (rep.u.info.jobs_active_max != AGENT_JOBS_ACTIVE_MAX ||
	    rep.u.info.jobs_total_max != AGENT_JOBS_TOTAL_MAX)
		return test_fail("job limits %u/%u", rep.u.info.jobs_active_max,
		    rep.u.info.jobs_total_max);
	printf("# %s, %s, agent %s, up %llu ms\n", rep.u.info.os,
	    rep.u.info.kernel, rep.u.info.agent_version,
	    (unsigned long long)rep.u.info.uptime_ms);
	return 0;
}

static int
t_python(void)
{
	if (run("python3 -c 'print(2+2)'", 1, NULL) == -1)
		return -1;
	return expect_output("4\n", "", 0);
}

static int
t_argv_identity(void)
{
	char		 want[64];
	unsigned long	 id;

	if (run("id", 0, NULL) == -1)
		return -1;
	if (expect_output(NULL, "", 0) == -1)
		return -1;
	if (strncmp(col.text[0], "uid=1000(", 9) != 0 ||
	    strstr(col.text[0], "gid=1000(") == NULL)
		return test_fail("id: %s", col.text[0]);
	if (run("pwd; echo $HOME", 1, NULL) == -1)
		return -1;
	if (expect_output("/workspace\n/workspace\n", "", 0) == -1)
		return -1;
	/* In its own cgroup, which the agent names after the job. */
	if (run("cat /proc/self/cgroup", 1, NULL) == -1)
		return -1;
	if (expect_output(NULL, "", 0) == -1)
		return -1;
	if (strncmp(col.text[0], "0::/mcvm-jobs/job-", 18) != 0)
		return test_fail("cgroup: %s", col.text[0]);
	/* Once that job ended its cgroup is gone; the next one has its own. */
	id = strtoul(col.text[0] + 18, NULL, 10);
	if (run("cd /sys/fs/cgroup/mcvm-jobs && echo job-*", 1, NULL) == -1 ||
	    expect_output(NULL, "", 0) == -1)
		return -1;
	snprintf(want, sizeof(want), "job-%lu\n", id + 1);
	if (strcmp(col.text[0], want) != 0)
		return test_fail("job cgroups after job %lu: %s", id,
		    col.text[0]);
	return 0;
}

static int
t_system(void)
{
	if (run("hostname; stat -f -c %T /sys/fs/cgroup /tmp; "
	    "touch /tmp/x && echo tmp writable; python3 -c \""
	    "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); "
	    "s.listen(); c = socket.create_connection(s.getsockname()); "
	    "print('loopback up')\"", 1, NULL) == -1)
		return -1;
	return expect_output("mcvm\ncgroup2fs\ntmpfs\ntmp writable\n"
	    "loopback up\n", "", 0);
}

static int
t_fibonacci(void)
{
	static const char script[] =
	    "def fib(n):\n"
	    "    a, b = 0, 1\n"
	    "    for _ in range(n):\n"
	    "        yield a\n"
	    "        a, b = b, a + b\n"
	    "print(', '.join(str(x) for x in fib(10)))\n";

	if (file_write("fib.py", 0, 0, script, strlen(script), NULL) == -1)
		return -1;
	if (run("python3 fib.py", 1, NULL) == -1)
		return -1;
	return expect_output("0, 1, 1, 2, 3, 5, 8, 13, 21, 34\n", "", 0);
}

static int
t_toolchain(void)
{
	static const char prog[] =
	    "#include <stdio.h>\nint main(void) { puts(\"built\"); }\n";

	if (file_write("hello.c", 0, 0, prog, strlen(prog), NULL) == -1)
		return -1;
	if (run("node -e 'console.log(6*7)' && git --version >/dev/null && "
	    "make --version >/dev/null && gcc -o hello hello.c && ./hello && "
	    "test -s /etc/ssl/certs/ca-certificates.crt && bash -c 'echo ok'",
	    1, NULL) == -1)
		return -1;
	return expect_output("42\nbuilt\nok\n", "", 0);
}

/*
 * Commands run under the image's bash, and scripts' /bin/sh is its dash:
 * both static PIEs linked against musl (no program interpreter,
 * position-independent); Debian's patches (dash's printf \e); users
 * found in /etc/passwd by both.
 */
static int
t_shell(void)
{
	if (run("readelf -lW /bin/sh /bin/bash | grep -c INTERP; "
	    "readelf -hW /bin/sh /bin/bash | grep -c 'Type: *DYN'; "
	    "echo $BASH_VERSION; sh -c \"printf 'a\\\\eb'\" | od -An -tx1; "
	    "echo ~user ~root; sh -c 'echo ~user ~root'", 1, NULL) == -1)
		return -1;
	return expect_output("0\n2\n5.2.15(1)-release\n 61 1b 62\n"
	    "/workspace /root\n/workspace /root\n", "", 0);
}

/*
 * What bash has and dash has not, through a shell command; and the
 * shell is not interactive, not a login shell, and reads no startup
 * file (not even ~/.bashrc, which an interactive bash would).
 */
static int
t_bash(void)
{
	static const char rc[] = "echo bashrc read\n";
	static const char lib[] = "greet() { echo \"hi $1\"; }\n";

	if (file_write(".bashrc", 0, 0, rc, strlen(rc), NULL) == -1 ||
	    file_write("lib.sh", 0, 0, lib, strlen(lib), NULL) == -1)
		return -1;
	if (run("[[ 1 == 1 && abc == a* ]] && echo test; echo {1..3}; "
	    "set -o pipefail; false | true; echo pipefail $?; "
	    "a=(x y z); a+=(w); echo ${#a[@]} ${a[2]} ${a[@]: -1}; "
	    "declare -A m=([k]=v); echo ${m[k]}; "
	    "printf %s $'a\\tb\\x41' | od -An -c | tr -s ' '; "
	    "source lib.sh; greet you; . ./lib.sh && greet again; "
	    "cat <(echo substituted); x=abcdef; echo ${x:1:3} ${x^^}; "
	    "(( n = 6 * 7 )); echo $n; [[ $- == *i* ]] || echo "
	    "non-interactive; shopt -q login_shell || echo non-login; "
	    "rm .bashrc lib.sh", 1, NULL) == -1)
		return -1;
	return expect_output("test\n1 2 3\npipefail 1\n4 z w\nv\n"
	    " a \\t b A\nhi you\nhi again\nsubstituted\nbcd ABCDEF\n42\n"
	    "non-interactive\nnon-login\n", "", 0);
}

/*
 * The commands an agent reaches for run in the image: each line is one
 * command, and the job prints "ok" for it or what failed.
 */
static int
t_image_tools(void)
{
	static const char *const cmds[] = {
		"ps -p $$ -o comm=",
		"top -b -n 1 | head -n 1",
		"free -m",
		"/bin/kill -l",
		"curl --version",
		"wget --version",
		"ip -V && ip -o link show lo",
		"less --version",
		"file --version && file /bin/bash | grep -q 'static-pie'",
		"printf hi | xxd -p | grep -qx 6869",
		"zip -v",
		"unzip -v",
		"xz --version && echo x | xz | xz -d | grep -qx x",
		"jq --version && echo '{\"a\":[1,2]}' | jq -e '.a[1] == 2'",
		"sqlite3 --version && test \"$(sqlite3 :memory: "
		    "'select 6*7')\" = 42",
		"g++ --version && printf '#include <iostream>\\nint main() "
		    "{ std::cout << 42; }\\n' | g++ -x c++ -o /tmp/cxx - && "
		    "test \"$(/tmp/cxx)\" = 42",
		"ssh -V",
		"strace -V",
		"vi --version",
		"npm --version",
		"pip --version && python3 -m pip --version",
		"python3 -m venv -h",
	};
	struct agent_job_status	 st;
	char			 script[8192], want[256];
	size_t			 i, n = sizeof(cmds) / sizeof(cmds[0]);
	uint32_t		 job;
	int			 len, off = 0;

	for (i = 0; i < n; i++) {
		len = snprintf(script + off, sizeof(script) - off,
		    "if o=$( { %s; } 2>&1); then echo ok; else "
		    "echo \"failed: %zu: ${o: -120}\"; fi; ", cmds[i], i);
		if (len < 0 || (size_t)len >= sizeof(script) - off)
			return test_fail("script too long");
		off += len;
	}
	if (n * 3 >= sizeof(want))
		return test_fail("too many commands");
	for (i = 0; i < n; i++)
		memcpy(want + i * 3, "ok\n", 3);
	want[n * 3] = '\0';
	if (exec_start(script, 1, NULL, 0, &job) == -1 ||
	    job_wait(job, &st, SLOW_TIMEOUT_MS) == -1 ||
	    job_collect(job, AGENT_PAGE_MAX) == -1)
		return -1;
	return expect_output(want, "", 0);
}

/*
 * A virtual environment and pip with the network off (this guest has no
 * NIC): a wheel built in the guest from a package the test writes, with
 * Debian's setuptools and wheel, installed with --no-index and imported.
 */
static int
t_venv_offline(void)
{
	static const char setup[] =
	    "from setuptools import setup\n"
	    "setup(name='tinypkg', version='0.1', packages=['tinypkg'])\n";
	static const char init[] =
	    "def hello():\n    return 'hello from tinypkg'\n";
	struct agent_job_status	 st;
	uint32_t		 job;

	if (file_write("pkg/setup.py", AGENT_WRITE_MKDIRS, 0, setup,
	    strlen(setup), NULL) == -1 ||
	    file_write("pkg/tinypkg/__init__.py", AGENT_WRITE_MKDIRS, 0, init,
	    strlen(init), NULL) == -1)
		return -1;
	if (exec_start("set -e; ip -o link | grep -vc ': lo:' || true; "
	    "python3 -m venv venv; cd pkg; "
	    "python3 -m pip wheel -q --no-index --no-build-isolation "
	    "--no-deps -w ../dist . >/dev/null; cd ..; "
	    "venv/bin/pip install -q --no-index dist/tinypkg-0.1-*.whl; "
	    "venv/bin/python -c 'import tinypkg, sys; print(tinypkg.hello(), "
	    "sys.prefix)'; rm -rf pkg dist venv", 1, NULL, 0, &job) == -1 ||
	    job_wait(job, &st, SLOW_TIMEOUT_MS) == -1 ||
	    job_collect(job, AGENT_PAGE_MAX) == -1)
		return -1;
	return expect_output("0\nhello from tinypkg /workspace/venv\n", "", 0);
}

/*
 * A job's streams end with its main process, unless a process it left
 * holds them: that one's output still arrives, and the streams end when
 * it exits.
 */
static int
t_streams_end(void)
{
	struct agent_job_status	 st;
	uint64_t		 deadline;
	uint32_t		 job;

	if (run("echo out; echo err >&2", 1, NULL) == -1 ||
	    expect_output("out\n", "err\n", 0) == -1)
		return -1;
	if (!col.st.out_eof || !col.st.err_eof)
		return test_fail("streams open after the exit: eof %d %d",
		    col.st.out_eof, col.st.err_eof);
	if (exec_start("(sleep 2; echo late) & echo early", 1, NULL, 0,
	    &job) == -1 || job_wait(job, &st, JOB_TIMEOUT_MS) == -1)
		return -1;
	if (st.state != AGENT_JOB_COMPLETED || st.out_eof || st.err_eof)
		return test_fail("with a process left: %s, eof %d %d",
		    agent_job_state_name(st.state), st.out_eof, st.err_eof);
	deadline = test_now_ms() + JOB_TIMEOUT_MS;
	while (!st.out_eof || !st.err_eof) {
		if (test_now_ms() >= deadline)
			return test_fail("the process left never ended its "
			    "streams");
		sleep_ms(JOB_POLL_MS);
		if (job_status(job, &st) == -1)
			return -1;
	}
	if (job_collect(job, AGENT_PAGE_MAX) == -1)
		return -1;
	return expect_output("early\nlate\n", "", 0);
}

static int
t_cwd_env(void)
{
	struct agent_msg	 req;
	struct agent_job_status	 st;

	memset(&req, 0, sizeof(req));
	req.type = AGENT_EXEC;
	req.u.exec.cwd = "/workspace/dir";
	req.u.exec.argc = 3;
	req.u.exec.argv[0] = "sh";
	req.u.exec.argv[1] = "-c";
	req.u.exec.argv[2] = "pwd; echo \"$GREETING|$LANG|$HOME\"";
	req.u.exec.envc = 2;
	req.u.exec.env[0] = "GREETING=hi there";
	req.u.exec.env[1] = "LANG=C";
	if (file_write("dir/keep", AGENT_WRITE_MKDIRS, 0, "", 0, NULL) == -1)
		return -1;
	if (run_req(&req, &st) == -1)
		return -1;
	if (expect_output("/workspace/dir\nhi there|C|/workspace\n", "", 0) ==
	    -1)
		return -1;
	/* A command is looked up in the job's PATH, not the agent's. */
	req.u.exec.argc = 1;
	req.u.exec.argv[0] = "pwd";
	req.u.exec.envc = 1;
	req.u.exec.env[0] = "PATH=/nonexistent";
	if (run_req(&req, &st) == -1)
		return -1;
	if (st.state != AGENT_JOB_FAILED ||
	    strstr(col.text[1], "pwd: No such file") == NULL)
		return test_fail("pwd with PATH=/nonexistent: %s, "
		    "stderr %.200s", agent_job_state_name(st.state),
		    col.text[1]);
	req.u.exec.env[0] = "=bad";
	if (call_err(&req, AGENT_ERR_INVAL) == -1)
		return -1;
	req.u.exec.envc = 0;
	req.u.exec.cwd = "missing";
	return call_err(&req, AGENT_ERR_NOENT);
}

static int
t_streams(void)
{
	if (run("echo out; echo err >&2; echo out2; exit 3", 1, NULL) == -1)
		return -1;
	return expect_output("out\nout2\n", "err\n", 3);
}

static int
t_stdin(void)
{
	if (run("tr a-z A-Z", 1, "hello stdin\n") == -1)
		return -1;
	return expect_output("HELLO STDIN\n", "", 0);
}

static int
t_truncated(void)
{
	const uint64_t	 kept = AGENT_JOB_HEAD_MAX + AGENT_JOB_TAIL_MAX;
	size_t		 i;

	/* A flood on stdout: the error on stderr is all there. */
	if (run("python3 -c \"import sys; sys.stdout.write('x' * 1048576)\"; "
	    "echo 'error: it broke' >&2", 1, NULL) == -1)
		return -1;
	if (expect_output(NULL, "error: it broke\n", 0) == -1)
		return -1;
	if (col.st.out_total != 1048576 || col.st.out_gap !=
	    AGENT_JOB_HEAD_MAX || col.st.out_dropped != 1048576 - kept ||
	    col.st.err_dropped != 0)
		return test_fail("out_total %llu, gap %llu, dropped %llu, "
		    "stderr dropped %llu", (unsigned long long)
		    col.st.out_total, (unsigned long long)col.st.out_gap,
		    (unsigned long long)col.st.out_dropped,
		    (unsigned long long)col.st.err_dropped);
	/* Its head and its tail, with the gap skipped once, in full. */
	if (col.len[0] != kept || col.cursor[0] != 1048576 ||
	    col.gaps[0] != 1 || col.skipped[0] != col.st.out_dropped)
		return test_fail("read %zu bytes to %llu, %d gaps skipping "
		    "%llu", col.len[0], (unsigned long long)col.cursor[0],
		    col.gaps[0], (unsigned long long)col.skipped[0]);
	for (i = 0; i < col.len[0]; i++)
		if (col.text[0][i] != 'x')
			return test_fail("byte %zu is %#x", i, col.text[0][i]);
	if (col.pages < (int)(kept / AGENT_PAGE_MAX))
		return test_fail("only %d pages", col.pages);

	/* Each stream keeps its own head and tail. */
	if (run("head -c 200000 /dev/zero | tr '\\0' o; "
	    "head -c 200000 /dev/zero | tr '\\0' e >&2", 1, NULL) == -1)
		return -1;
	if (col.len[0] != kept || col.len[1] != kept ||
	    col.st.out_dropped != 200000 - kept ||
	    col.st.err_dropped != 200000 - kept)
		return test_fail("two streams: kept %zu + %zu, dropped %llu + "
		    "%llu", col.len[0], col.len[1], (unsigned long long)
		    col.st.out_dropped, (unsigned long long)
		    col.st.err_dropped);

	/* Characters cut by the gap on both sides go with it. */
	if (run("python3 -c \"import sys; sys.stdout.write('a' + "
	    "'\\u00e9' * 300000 + 'z')\"", 1, NULL) == -1)
		return -1;
	if (col.errors[0] || strchr(col.text[0], '\xef') != NULL)
		return test_fail("the gap made invalid text");
	if (col.st.out_gap != AGENT_JOB_HEAD_MAX - 1 ||
	    col.st.out_dropped != 600002 - 2 * (kept / 2 - 1) ||
	    col.len[0] != kept - 2 || col.text[0][col.len[0] - 1] != 'z')
		return test_fail("gap %llu, dropped %llu, kept %zu",
		    (unsigned long long)col.st.out_gap,
		    (unsigned long long)col.st.out_dropped, col.len[0]);
	return 0;
}

static int
t_utf8(void)
{
	struct agent_msg	 req, rep;
	char			 expect[64];
	uint32_t		 job;
	size_t			 i;

	/* A 3-byte character across the first page boundary. */
	if (run("python3 -c \"import sys; sys.stdout.write('a' * 16383 + "
	    "'\\u20ac' * 3 + '\\u00e9')\"", 1, NULL) == -1)
		return -1;
	if (expect_output(NULL, "", 0) == -1)
		return -1;
	if (col.len[0] != 16383 + 9 + 2 || col.errors[0])
		return test_fail("decoded %zu bytes, errors %d", col.len[0],
		    col.errors[0]);
	for (i = 0; i < 16383; i++)
		if (col.text[0][i] != 'a')
			return test_fail("byte %zu", i);
	if (strcmp(col.text[0] + 16383, "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac"
	    "\xc3\xa9") != 0)
		return test_fail("tail \"%s\"", col.text[0] + 16383);

	/* The first page alone stops before the cut character. */
	if (exec_start("printf 'ab\\342\\202\\254'", 1, NULL, 0, &job) == -1 ||
	    job_wait(job, &col.st, JOB_TIMEOUT_MS) == -1)
		return -1;
	memset(&req, 0, sizeof(req));
	req.type = AGENT_JOB_READ;
	req.u.job_read.job = job;
	req.u.job_read.out_max = 4;
	if (call(&req, &rep) == -1)
		return -1;
	{
		char	 out[UTF8_DECODED_MAX(4)];
		size_t	 olen, used;
		int	 errs = 0;

		used = utf8_decode(rep.u.output.out, rep.u.output.out_len,
		    agent_page_final(&rep.u.output.st, 0, 0,
		    rep.u.output.out_len), out, &olen, &errs);
		if (used != 2 || olen != 2 || errs)
			return test_fail("page of 4: used %zu, errors %d", used,
			    errs);
	}

	/* Invalid bytes and a character cut by EOF become U+FFFD. */
	if (run("printf 'ok\\377x\\342\\202'", 1, NULL) == -1)
		return -1;
	snprintf(expect, sizeof(expect), "ok\xef\xbf\xbdx\xef\xbf\xbd");
	if (strcmp(col.text[0], expect) != 0 || !col.errors[0])
		return test_fail("invalid bytes decoded as \"%s\", errors %d",
		    col.text[0], col.errors[0]);
	/* A literal U+FFFD is not an error. */
	if (run("printf '\\357\\277\\275'", 1, NULL) == -1)
		return -1;
	if (strcmp(col.text[0], "\xef\xbf\xbd") != 0 || col.errors[0])
		return test_fail("literal U+FFFD: errors %d", col.errors[0]);
	return 0;
}

static int
t_base64(void)
{
	struct agent_msg	 req, rep;
	static const uint8_t	 want[] = {
		0x00, 0x01, 0xfe, 0xff, 0x80, 0x0a,
	};
	char			 enc[B64_ENCODED_LEN(sizeof(want)) + 1];
	uint8_t			 dec[sizeof(want)];
	uint32_t		 job;
	struct agent_job_status	 st;

	if (exec_start("printf '\\000\\001\\376\\377\\200\\n'", 1, NULL, 0,
	    &job) == -1 || job_wait(job, &st, JOB_TIMEOUT_MS) == -1)
		return -1;
	memset(&req, 0, sizeof(req));
	req.type = AGENT_JOB_READ;
	req.u.job_read.job = job;
	req.u.job_read.out_max = AGENT_PAGE_MAX;
	if (call(&req, &rep) == -1)
		return -1;
	if (rep.u.output.out_len != sizeof(want))
		return test_fail("%u bytes", rep.u.output.out_len);
	b64_encode(rep.u.output.out, rep.u.output.out_len, enc);
	if (strcmp(enc, "AAH+/4AK") != 0)
		return test_fail("base64 \"%s\"", enc);
	if (b64_decode(enc, strlen(enc), dec) != (long)sizeof(want) ||
	    memcmp(dec, want, sizeof(want)) != 0)
		return test_fail("base64 round trip");
	return 0;
}

/* Whether a pid is alive in the guest, asked through a job. */
static int
guest_pid_alive(long pid)
{
	char	 cmd[128];

	snprintf(cmd, sizeof(cmd), "test -e /proc/%ld && "
	    "! grep -q '^State:.*Z' /proc/%ld/status", pid, pid);
	if (run(cmd, 1, NULL) == -1)
		return -1;
	return col.st.exit_code == 0;
}

static int
t_cancel_setsid(void)
{
	struct agent_msg	 req, rep;
	struct agent_job_status	 st;
	uint8_t			 buf[64];
	uint32_t		 job;
	long			 n, gc, sh;
	int			 i;

	if (exec_start("setsid sh -c 'echo $$ > gc.pid; exec sleep 1000' "
	    "</dev/null >/dev/null 2>&1 & echo $$ > sh.pid; sleep 1000", 1,
	    NULL, 0, &job) == -1)
		return -1;
	for (i = 0; i < 200; i++) {
		if ((n = file_read("gc.pid", buf, sizeof(buf) - 1)) > 0)
			break;
		sleep_ms(50);
	}
	if (n <= 0)
		return test_fail("grandchild did not start");
	buf[n] = '\0';
	gc = strtol((char *)buf, NULL, 10);
	if ((n = file_read("sh.pid", buf, sizeof(buf) - 1)) <= 0)
		return -1;
	buf[n] = '\0';
	sh = strtol((char *)buf, NULL, 10);
	if (guest_pid_alive(gc) != 1 || guest_pid_alive(sh) != 1)
		return test_fail("processes %ld, %ld not running", sh, gc);

	memset(&req, 0, sizeof(req));
	req.type = AGENT_JOB_CANCEL;
	req.u.job.job = job;
	if (call(&req, &rep) == -1)
		return -1;
	if (rep.u.status.st.state != AGENT_JOB_CANCELLED)
		return test_fail("state %s after cancel",
		    agent_job_state_name(rep.u.status.st.state));
	for (i = 0; i < 100; i++) {
		if (job_status(job, &st) == -1)
			return -1;
		if (st.signal == SIGKILL)
			break;
		sleep_ms(50);
	}
	if (st.state != AGENT_JOB_CANCELLED || st.signal != SIGKILL)
		return test_fail("state %s, signal %d",
		    agent_job_state_name(st.state), st.signal);
	for (i = 0; i < 50; i++) {
		if (guest_pid_alive(gc) == 0 && guest_pid_alive(sh) == 0)
			return 0;
		sleep_ms(100);
	}
	return test_fail("setsid grandchild %ld survived the cancel", gc);
}

/* Sends a JOB_READ that waits up to wait_ms for its job; *id is its id. */
static int
read_waiting(uint32_t job, uint32_t wait_ms, uint32_t *id)
{
	struct agent_msg	 req;

	memset(&req, 0, sizeof(req));
	req.type = AGENT_JOB_READ;
	req.u.job_read.job = job;
	req.u.job_read.out_max = AGENT_PAGE_MAX;
	req.u.job_read.err_max = AGENT_PAGE_MAX;
	req.u.job_read.wait_ms = wait_ms;
	if (ac_send(&ac, &req) == -1)
		return test_fail("job_read: %s", strerror(errno));
	*id = req.id;
	return 0;
}

/*
 * JOB_READ with wait_ms answers when the job ends, and the agent serves
 * other requests meanwhile; a job that does not end is answered running
 * once the wait is over.
 */
static int
t_job_wait(void)
{
	struct agent_msg	 req, rep;
	struct agent_job_status	 st;
	uint32_t		 job, id;

	if (exec_start("while [ ! -e go ]; do sleep 0.05; done; echo done", 1,
	    NULL, 0, &job) == -1 || read_waiting(job, 60000, &id) == -1)
		return -1;
	memset(&req, 0, sizeof(req));
	req.type = AGENT_PING;
	if (call(&req, &rep) == -1 || job_status(job, &st) == -1)
		return -1;
	if (st.state != AGENT_JOB_RUNNING)
		return test_fail("the job ended before it was let go");
	if (file_write("go", 0, 0, "", 0, NULL) == -1)
		return -1;
	if (ac_recv(&ac, id, &rep, CALL_TIMEOUT_MS) == -1)
		return test_fail("waiting job_read: %s", strerror(errno));
	if (rep.type != (AGENT_REPLY | AGENT_JOB_READ))
		return test_fail("waiting job_read: reply %s",
		    agent_type_name(rep.type));
	if (rep.u.output.st.state != AGENT_JOB_COMPLETED ||
	    rep.u.output.out_len != 5 ||
	    memcmp(rep.u.output.out, "done\n", 5) != 0)
		return test_fail("answered %s with %u bytes",
		    agent_job_state_name(rep.u.output.st.state),
		    rep.u.output.out_len);

	if (exec_start("sleep 600", 1, NULL, 0, &job) == -1 ||
	    read_waiting(job, 200, &id) == -1)
		return -1;
	if (ac_recv(&ac, id, &rep, CALL_TIMEOUT_MS) == -1)
		return test_fail("short wait: %s", strerror(errno));
	if (rep.type != (AGENT_REPLY | AGENT_JOB_READ) ||
	    rep.u.output.st.state != AGENT_JOB_RUNNING)
		return test_fail("short wait answered %s",
		    rep.type == AGENT_ERROR ? rep.u.error.message :
		    agent_job_state_name(rep.u.output.st.state));
	memset(&req, 0, sizeof(req));
	req.type = AGENT_JOB_CANCEL;
	req.u.job.job = job;
	return call(&req, &rep);
}

static int
t_files(void)
{
	static uint8_t		 big[AGENT_FILE_CHUNK_MAX], back[2 *
	    AGENT_FILE_CHUNK_MAX];
	uint64_t		 size;
	long			 n;
	size_t			 i;

	if (file_write("dir/sub/note.txt", AGENT_WRITE_MKDIRS, 0,
	    "hello\n", 6, &size) == -1)
		return -1;
	if (file_write("dir/sub/note.txt", AGENT_WRITE_APPEND, 0,
	    "world\n", 6, &size) == -1)
		return -1;
	if (file_write("dir/sub/note.txt", AGENT_WRITE_AT_OFFSET, 0,
	    "J", 1, &size) == -1)
		return -1;
	if ((n = file_read("/workspace/dir/sub/note.txt", back,
	    sizeof(back))) == -1)
		return -1;
	if (n != 12 || memcmp(back, "Jello\nworld\n", 12) != 0 || size != 12)
		return test_fail("read back %ld bytes \"%.*s\"", n, (int)n,
		    back);
	for (i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7 + 3);
	if (file_write("big.bin", 0, 0, big, sizeof(big), &size) == -1)
		return -1;
	if ((n = file_read("big.bin", back, sizeof(back))) == -1)
		return -1;
	if ((size_t)n != sizeof(big) || memcmp(back, big, sizeof(big)) != 0)
		return test_fail("128 KiB round trip: %ld bytes", n);
	/* Files belong to the workspace user. */
	if (run("stat -c %u:%g dir/sub/note.txt big.bin dir/sub", 1, NULL) ==
	    -1)
		return -1;
	return expect_output("1000:1000\n1000:1000\n1000:1000\n", "", 0);
}

/* A listing of path; count and entries in rep, 0 or -1. */
static int
file_list(const char *path, uint32_t depth, uint32_t max,
    struct agent_msg *rep)
{
	struct agent_msg	 req;

	memset(&req, 0, sizeof(req));
	req.type = AGENT_FILE_LIST;
	req.u.file_list.path = path;
	req.u.file_list.depth = depth;
	req.u.file_list.max = max;
	return call(&req, rep);
}

static int
t_file_size_at_offset(void)
{
	struct agent_msg	 req, rep;
	static const uint64_t	 offs[] = { 0, 4, 10, 1000 };
	size_t			 i;

	if (file_write("sized.txt", 0, 0, "0123456789", 10, NULL) == -1)
		return -1;
	for (i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		memset(&req, 0, sizeof(req));
		req.type = AGENT_FILE_READ;
		req.u.file_read.path = "sized.txt";
		req.u.file_read.offset = offs[i];
		req.u.file_read.length = 2;
		if (call(&req, &rep) == -1)
			return -1;
		if (rep.u.file_data.size != 10)
			return test_fail("size %llu read at %llu",
			    (unsigned long long)rep.u.file_data.size,
			    (unsigned long long)offs[i]);
		if (rep.u.file_data.len != (offs[i] < 10 ? 2 : 0) ||
		    rep.u.file_data.eof != (offs[i] >= 8))
			return test_fail("at %llu: %u bytes, eof %u",
			    (unsigned long long)offs[i], rep.u.file_data.len,
			    rep.u.file_data.eof);
	}
	return 0;
}

/* Parents are made beneath /workspace, as the user, never through a link. */
static int
t_file_mkdirs(void)
{
	struct agent_msg	 req;

	if (file_write("/workspace/made/a/b/c.txt", AGENT_WRITE_MKDIRS, 0,
	    "c", 1, NULL) == -1)
		return -1;
	if (run("stat -c %u:%g:%a made made/a/b made/a/b/c.txt", 1, NULL) ==
	    -1 || expect_output("1000:1000:755\n1000:1000:755\n"
	    "1000:1000:644\n", "", 0) == -1)
		return -1;
	if (run("ln -sfn /tmp ltmp && mkdir -p made/d && ln -sfn .. made/d/up",
	    1, NULL) == -1 || expect_output("", "", 0) == -1)
		return -1;
	memset(&req, 0, sizeof(req));
	req.type = AGENT_FILE_WRITE;
	req.u.file_write.flags = AGENT_WRITE_MKDIRS;
	req.u.file_write.data = (const uint8_t *)"x";
	req.u.file_write.len = 1;
	req.u.file_write.path = "ltmp/evil/x";
	if (call_err(&req, AGENT_ERR_PATH) == -1)
		return -1;
	req.u.file_write.path = "made/d/up/up/evil/x";
	if (call_err(&req, AGENT_ERR_PATH) == -1)
		return -1;
	req.u.file_write.path = "/workspace/../tmp/evil/x";
	if (call_err(&req, AGENT_ERR_PATH) == -1)
		return -1;
	if (run("test -e /tmp/evil || test -e made/evil || test -e evil || "
	    "echo clean", 1, NULL) == -1)
		return -1;
	return expect_output("clean\n", "", 0);
}

static int
t_file_list(void)
{
	static const struct {
		const char	*name;
		uint8_t		 type;
		uint32_t	 mode;
	} want[] = {
		{ "a", AGENT_FTYPE_DIR, 0755 },
		{ "a/b", AGENT_FTYPE_DIR, 0755 },
		{ "a/b/c", AGENT_FTYPE_DIR, 0755 },
		{ "a/b/c/d", AGENT_FTYPE_DIR, 0755 },
		{ "a/g", AGENT_FTYPE_FILE, 0644 },
		{ "etc", AGENT_FTYPE_SYMLINK, 0777 },
		{ "f", AGENT_FTYPE_FILE, 0600 },
		{ "p", AGENT_FTYPE_OTHER, 0644 },
	};
	struct agent_msg	 rep, req;
	struct agent_dirent	 d;
	const uint8_t		*p;
	size_t			 left, i;

	if (run("umask 022 && mkdir -p lst/a/b/c/d/e && : > lst/a/g && "
	    "printf 12345 > lst/f && chmod 600 lst/f && ln -s /etc lst/etc && "
	    "mkfifo lst/p", 1, NULL) == -1 || expect_output("", "", 0) == -1)
		return -1;
	if (file_list("/workspace/lst", AGENT_LIST_DEPTH_MAX, AGENT_LIST_MAX,
	    &rep) == -1)
		return -1;
	if (rep.u.file_entries.count != sizeof(want) / sizeof(want[0]) ||
	    rep.u.file_entries.truncated)
		return test_fail("%u entries, truncated %u",
		    rep.u.file_entries.count, rep.u.file_entries.truncated);
	p = rep.u.file_entries.entries;
	left = rep.u.file_entries.len;
	for (i = 0; i < rep.u.file_entries.count; i++) {
		if (agent_dirent_next(&p, &left, &d) == -1)
			return test_fail("entry %zu malformed", i);
		if (strcmp(d.name, want[i].name) != 0 ||
		    d.type != want[i].type || d.mode != want[i].mode)
			return test_fail("entry %zu: %s type %u mode %o; "
			    "expected %s", i, d.name, d.type, d.mode,
			    want[i].name);
		if (strcmp(d.name, "f") == 0 && d.size != 5)
			return test_fail("f: size %llu",
			    (unsigned long long)d.size);
		if (d.mtime < 1000000000)
			return test_fail("%s: mtime %lld", d.name,
			    (long long)d.mtime);
	}
	/* One level, by default of the host. */
	if (file_list("lst", 1, AGENT_LIST_MAX, &rep) == -1)
		return -1;
	if (rep.u.file_entries.count != 4)
		return test_fail("depth 1: %u entries",
		    rep.u.file_entries.count);
	/* Not through a symlink, not a file, not outside. */
	memset(&req, 0, sizeof(req));
	req.type = AGENT_FILE_LIST;
	req.u.file_list.depth = 1;
	req.u.file_list.max = 1;
	req.u.file_list.path = "lst/etc";
	if (call_err(&req, AGENT_ERR_PATH) == -1)
		return -1;
	req.u.file_list.path = "/etc";
	if (call_err(&req, AGENT_ERR_PATH) == -1)
		return -1;
	req.u.file_list.path = "lst/f";
	if (call_err(&req, AGENT_ERR_INVAL) == -1)
		return -1;
	req.u.file_list.path = "lst/none";
	if (call_err(&req, AGENT_ERR_NOENT) == -1)
		return -1;

	/* A directory of more than the bound: cut, and says so. */
	if (run("mkdir many && cd many && i=0; while [ $i -lt 600 ]; do "
	    ": > file-$i; i=$((i + 1)); done", 1, NULL) == -1 ||
	    expect_output("", "", 0) == -1)
		return -1;
	if (file_list("many", 1, AGENT_LIST_MAX, &rep) == -1)
		return -1;
	if (rep.u.file_entries.count != AGENT_LIST_MAX ||
	    !rep.u.file_entries.truncated)
		return test_fail("many: %u entries, truncated %u",
		    rep.u.file_entries.count, rep.u.file_entries.truncated);
	return 0;
}

static int
t_escape(void)
{
	struct agent_msg	 req;
	static const char *const bad[] = {
		"link/passwd", "../etc/passwd", "/etc/passwd",
		"dir/../../etc/passwd", "flink",
	};
	size_t			 i;

	if (run("ln -sfn /etc link && ln -sf /etc/passwd flink", 1, NULL) ==
	    -1 || expect_output("", "", 0) == -1)
		return -1;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&req, 0, sizeof(req));
		req.type = AGENT_FILE_READ;
		req.u.file_read.path = bad[i];
		req.u.file_read.length = 100;
		if (call_err(&req, AGENT_ERR_PATH) == -1)
			return test_fail("read %s: %s", bad[i], test_why());
	}
	memset(&req, 0, sizeof(req));
	req.type = AGENT_FILE_WRITE;
	req.u.file_write.path = "link/evil";
	req.u.file_write.data = (const uint8_t *)"x";
	req.u.file_write.len = 1;
	if (call_err(&req, AGENT_ERR_PATH) == -1)
		return -1;
	req.u.file_write.path = "flink";
	if (call_err(&req, AGENT_ERR_PATH) == -1)
		return -1;
	req.u.file_write.flags = AGENT_WRITE_APPEND;
	if (call_err(&req, AGENT_ERR_PATH) == -1)
		return -1;
	/* cwd is resolved the same way. */
	memset(&req, 0, sizeof(req));
	req.type = AGENT_EXEC;
	req.u.exec.cwd = "link";
	req.u.exec.argc = 1;
	req.u.exec.argv[0] = "true";
	if (call_err(&req, AGENT_ERR_PATH) == -1)
		return -1;
	if (run("test -f /etc/evil || echo clean", 1, NULL) == -1)
		return -1;
	return expect_output("clean\n", "", 0);
}

static int
t_freeze(void)
{
	struct agent_msg	 req, rep;
	struct agent_job_status	 st, st2;
	uint64_t		 t0, wall;
	uint32_t		 job;

	t0 = test_now_ms();
	if (exec_start("while :; do echo tick; sleep 0.1; done", 1, NULL,
	    4000, &job) == -1)
		return -1;
	sleep_ms(1000);
	memset(&req, 0, sizeof(req));
	req.type = AGENT_FREEZE;
	if (call(&req, &rep) == -1)
		return -1;
	if (rep.u.frozen.jobs_frozen != 1)
		return test_fail("%u jobs frozen", rep.u.frozen.jobs_frozen);
	/* No new jobs while frozen. */
	memset(&req, 0, sizeof(req));
	req.type = AGENT_EXEC;
	req.u.exec.cwd = "";
	req.u.exec.argc = 1;
	req.u.exec.argv[0] = "true";
	if (call_err(&req, AGENT_ERR_STATE) == -1)
		return -1;
	if (job_status(job, &st) == -1)
		return -1;
	sleep_ms(2500);
	if (job_status(job, &st2) == -1)
		return -1;
	if (st2.state != AGENT_JOB_RUNNING)
		return test_fail("frozen job %s",
		    agent_job_state_name(st2.state));
	if (st2.out_total != st.out_total)
		return test_fail("output grew while frozen: %llu -> %llu",
		    (unsigned long long)st.out_total,
		    (unsigned long long)st2.out_total);
	memset(&req, 0, sizeof(req));
	req.type = AGENT_INFO;
	if (call(&req, &rep) == -1 || !rep.u.info.frozen)
		return test_fail("info does not say frozen");
	memset(&req, 0, sizeof(req));
	req.type = AGENT_THAW;
	if (call(&req, &rep) == -1)
		return -1;
	sleep_ms(1000);
	if (job_status(job, &st2) == -1)
		return -1;
	if (st2.out_total <= st.out_total)
		return test_fail("no output after thaw");
	/* The 4 s timeout counts only unfrozen time. */
	if (job_wait(job, &st2, JOB_TIMEOUT_MS) == -1)
		return -1;
	wall = test_now_ms() - t0;
	if (st2.state != AGENT_JOB_TIMED_OUT)
		return test_fail("state %s", agent_job_state_name(st2.state));
	if (wall < 4000 + 2000 || st2.runtime_ms < 3900 ||
	    st2.runtime_ms > 5500)
		return test_fail("timed out after %llu ms of %llu ms wall",
		    (unsigned long long)st2.runtime_ms,
		    (unsigned long long)wall);
	return 0;
}

static int
t_set_time(void)
{
	struct agent_msg	 req, rep;
	struct timespec		 ts;
	long			 t;
	const long		 when = 1893456000;	/* 2030-01-01 */

	memset(&req, 0, sizeof(req));
	req.type = AGENT_SET_TIME;
	req.u.set_time.sec = when;
	if (call(&req, &rep) == -1)
		return -1;
	if (run("date +%s", 1, NULL) == -1 || expect_output(NULL, "", 0) == -1)
		return -1;
	t = strtol(col.text[0], NULL, 10);
	clock_gettime(CLOCK_REALTIME, &ts);
	req.u.set_time.sec = ts.tv_sec;
	req.u.set_time.nsec = (uint32_t)ts.tv_nsec;
	if (call(&req, &rep) == -1)
		return -1;
	if (t < when || t > when + 60)
		return test_fail("guest time %ld", t);
	return 0;
}

static int
t_limits(void)
{
	struct agent_msg	 req, rep;
	struct agent_job_status	 st;
	uint32_t		 jobs[AGENT_JOBS_ACTIVE_MAX], extra;
	int			 i, rv = 0, polls = 0;

	for (i = 0; i < AGENT_JOBS_ACTIVE_MAX; i++)
		if (exec_start("sleep 60", 1, NULL, 0, &jobs[i]) == -1)
			return -1;
	memset(&req, 0, sizeof(req));
	req.type = AGENT_EXEC;
	req.u.exec.cwd = "";
	req.u.exec.argc = 1;
	req.u.exec.argv[0] = "true";
	if (call_err(&req, AGENT_ERR_LIMIT) == -1)
		rv = -1;
	/* Cancelled while frozen: they die once thawed, if not before. */
	memset(&req, 0, sizeof(req));
	req.type = AGENT_FREEZE;
	if (call(&req, &rep) == -1)
		return -1;
	for (i = 0; i < AGENT_JOBS_ACTIVE_MAX; i++) {
		memset(&req, 0, sizeof(req));
		req.type = AGENT_JOB_CANCEL;
		req.u.job.job = jobs[i];
		if (call(&req, &rep) == -1)
			return -1;
	}
	memset(&req, 0, sizeof(req));
	req.type = AGENT_THAW;
	if (call(&req, &rep) == -1)
		return -1;
	for (i = 0; i < AGENT_JOBS_ACTIVE_MAX; i++) {
		if (job_wait(jobs[i], &st, JOB_TIMEOUT_MS) == -1)
			return -1;
		while (st.signal == 0 && st.state == AGENT_JOB_CANCELLED) {
			sleep_ms(JOB_POLL_MS);
			if (job_status(jobs[i], &st) == -1)
				return -1;
			if (++polls > 500)
				return test_fail("job %u not reaped", jobs[i]);
		}
		if (st.state != AGENT_JOB_CANCELLED || st.signal != SIGKILL)
			return test_fail("job %u: %s, signal %d", jobs[i],
			    agent_job_state_name(st.state), st.signal);
	}
	if (rv == 0 && exec_start("true", 0, NULL, 0, &extra) == -1)
		return -1;
	return rv;
}

static int
t_errors(void)
{
	struct agent_msg	 req, rep;
	uint8_t			 frame[AGENT_HDR_LEN + 4];
	struct agent_job_status	 st;
	uint32_t		 job;

	/* An unknown type is answered, and the session goes on. */
	agent_hdr_put(frame, 99, 4242, 0);
	if (ac_send_raw(&ac, frame, AGENT_HDR_LEN) == -1 ||
	    ac_recv(&ac, 4242, &rep, CALL_TIMEOUT_MS) == -1)
		return test_fail("unknown type: %s", strerror(errno));
	if (rep.type != AGENT_ERROR || rep.u.error.code != AGENT_ERR_UNKNOWN)
		return test_fail("unknown type answered with %s",
		    agent_type_name(rep.type));
	/* A known type with a short payload. */
	agent_hdr_put(frame, AGENT_JOB_STATUS, 4243, 2);
	frame[AGENT_HDR_LEN] = frame[AGENT_HDR_LEN + 1] = 0;
	if (ac_send_raw(&ac, frame, AGENT_HDR_LEN + 2) == -1 ||
	    ac_recv(&ac, 4243, &rep, CALL_TIMEOUT_MS) == -1)
		return test_fail("short payload: %s", strerror(errno));
	if (rep.type != AGENT_ERROR || rep.u.error.code != AGENT_ERR_PROTO)
		return test_fail("short payload answered with %s",
		    agent_type_name(rep.type));
	memset(&req, 0, sizeof(req));
	req.type = AGENT_JOB_STATUS;
	req.u.job.job = 100000;
	if (call_err(&req, AGENT_ERR_NOJOB) == -1)
		return -1;
	/* A command that cannot be executed: a failed job. */
	if (exec_start("/nonexistent/cmd", 0, NULL, 0, &job) == -1 ||
	    job_wait(job, &st, JOB_TIMEOUT_MS) == -1)
		return -1;
	if (st.state != AGENT_JOB_FAILED)
		return test_fail("missing command: %s",
		    agent_job_state_name(st.state));
	/* Garbage costs the session; a new HELLO restores it. */
	memset(frame, 0xa5, sizeof(frame));
	if (ac_send_raw(&ac, frame, sizeof(frame)) == -1 ||
	    ac_recv(&ac, 0, &rep, CALL_TIMEOUT_MS) == -1)
		return test_fail("garbage: %s", strerror(errno));
	if (rep.type != AGENT_ERROR || rep.u.error.code != AGENT_ERR_PROTO)
		return test_fail("garbage answered with %s",
		    agent_type_name(rep.type));
	if (ac_hello(&ac, AGENT_PROTO_VERSION, CALL_TIMEOUT_MS) == -1)
		return test_fail("hello after garbage: %s", strerror(errno));
	/* A version the agent does not speak. */
	memset(&req, 0, sizeof(req));
	req.type = AGENT_HELLO;
	req.u.hello.version = AGENT_PROTO_VERSION + 100;
	if (call_err(&req, AGENT_ERR_VERSION) == -1)
		return -1;
	return ac_hello(&ac, AGENT_PROTO_VERSION, CALL_TIMEOUT_MS);
}

static int
t_reconnect(void)
{
	struct agent_msg	 req;
	struct agent_job_status	 st;
	uint32_t		 job;

	if (exec_start("echo before", 1, NULL, 0, &job) == -1)
		return -1;
	/* Half a request, then the host goes away. */
	memset(&req, 0, sizeof(req));
	req.type = AGENT_PING;
	if (ac_send_raw(&ac, "MCVA\x02", 5) == -1)
		return -1;
	ac_close(&ac);
	sleep_ms(300);
	if (agent_connect(CALL_TIMEOUT_MS) == -1)
		return test_fail("reconnect: %s", strerror(errno));
	/* Before HELLO, requests are refused. */
	memset(&req, 0, sizeof(req));
	req.type = AGENT_PING;
	if (ac_hello(&ac, AGENT_PROTO_VERSION, CALL_TIMEOUT_MS) == -1)
		return test_fail("hello after reconnect: %s", strerror(errno));
	if (job_wait(job, &st, JOB_TIMEOUT_MS) == -1 ||
	    job_collect(job, AGENT_PAGE_MAX) == -1)
		return -1;
	return expect_output("before\n", "", 0);
}

/*
 * More jobs than the table holds: each new one evicts the job that ended
 * first, whose id then answers "expired"; the newest are still read.
 */
static int
t_total_limit(void)
{
	struct agent_msg	 req, rep;
	struct agent_job_status	 st;
	uint32_t		 job, first = 0, i;

	for (i = 0; i < AGENT_JOBS_TOTAL_MAX + 8; i++) {
		if (exec_start("echo $$", 1, NULL, 0, &job) == -1)
			return -1;
		if (first == 0)
			first = job;
		if (job_wait(job, &st, JOB_TIMEOUT_MS) == -1)
			return -1;
	}
	if (job_collect(job, AGENT_PAGE_MAX) == -1 ||
	    expect_output(NULL, "", 0) == -1)
		return -1;
	memset(&req, 0, sizeof(req));
	req.type = AGENT_INFO;
	if (call(&req, &rep) == -1)
		return -1;
	if (rep.u.info.jobs_total > AGENT_JOBS_TOTAL_MAX)
		return test_fail("%u jobs kept", rep.u.info.jobs_total);
	/* The oldest ones are gone, told apart from ids never given. */
	memset(&req, 0, sizeof(req));
	req.type = AGENT_JOB_STATUS;
	req.u.job.job = 1;
	if (call_err(&req, AGENT_ERR_EXPIRED) == -1)
		return -1;
	req.u.job.job = first;
	if (call_err(&req, AGENT_ERR_EXPIRED) == -1)
		return -1;
	req.u.job.job = job + 1;
	if (call_err(&req, AGENT_ERR_NOJOB) == -1)
		return -1;
	/* The newest AGENT_JOBS_TOTAL_MAX are kept. */
	if (job_status(job - AGENT_JOBS_TOTAL_MAX + 1, &st) == -1)
		return -1;
	return 0;
}

/* A cursor past the retained end is refused, naming the valid range. */
static int
t_cursor_past_end(void)
{
	struct agent_msg	 req, rep;
	struct agent_job_status	 st;
	uint32_t		 job;

	if (exec_start("printf hello!", 1, NULL, 0, &job) == -1 ||
	    job_wait(job, &st, JOB_TIMEOUT_MS) == -1)
		return -1;
	memset(&req, 0, sizeof(req));
	req.type = AGENT_JOB_READ;
	req.u.job_read.job = job;
	req.u.job_read.out_cursor = 1000;
	req.u.job_read.out_max = AGENT_PAGE_MAX;
	if (ac_call(&ac, &req, &rep, CALL_TIMEOUT_MS) == -1)
		return test_fail("job_read at 1000: %s", strerror(errno));
	if (rep.type != AGENT_ERROR || rep.u.error.code != AGENT_ERR_INVAL)
		return test_fail("job_read at 1000 answered with %s",
		    agent_type_name(rep.type));
	if (strstr(rep.u.error.message, "0 to 6") == NULL)
		return test_fail("message \"%s\"", rep.u.error.message);
	/* Also while waiting, on stderr, and at UINT64_MAX. */
	req.u.job_read.out_cursor = 6;
	req.u.job_read.err_cursor = UINT64_MAX;
	req.u.job_read.wait_ms = 1000;
	if (call_err(&req, AGENT_ERR_INVAL) == -1)
		return -1;
	/* The end itself is a cursor, and the session goes on. */
	req.u.job_read.err_cursor = 0;
	if (call(&req, &rep) == -1)
		return -1;
	if (rep.u.output.out_len != 0 || rep.u.output.out_cursor != 6)
		return test_fail("read at the end: %u bytes",
		    rep.u.output.out_len);
	memset(&req, 0, sizeof(req));
	req.type = AGENT_PING;
	return call(&req, &rep);
}

/* A killed job says so from its first report on: SIGKILL, no exit code. */
static int
t_killed_state(void)
{
	struct agent_msg	 req, rep;
	struct agent_job_status	 st;
	uint32_t		 job;
	int			 i;

	if (exec_start("sleep 100", 1, NULL, 0, &job) == -1)
		return -1;
	memset(&req, 0, sizeof(req));
	req.type = AGENT_JOB_CANCEL;
	req.u.job.job = job;
	if (call(&req, &rep) == -1)
		return -1;
	st = rep.u.status.st;
	if (st.state != AGENT_JOB_CANCELLED || st.signal != SIGKILL ||
	    st.exit_code != -1)
		return test_fail("cancel answered %s, exit %d, signal %d",
		    agent_job_state_name(st.state), st.exit_code, st.signal);
	/* A timeout: its first report after running is the final one. */
	if (exec_start("sleep 100", 1, NULL, 200, &job) == -1)
		return -1;
	for (i = 0; i < 1000; i++) {
		if (job_status(job, &st) == -1)
			return -1;
		if (st.state != AGENT_JOB_RUNNING)
			break;
		sleep_ms(JOB_POLL_MS);
	}
	if (st.state != AGENT_JOB_TIMED_OUT || st.signal != SIGKILL ||
	    st.exit_code != -1)
		return test_fail("timeout reported %s, exit %d, signal %d",
		    agent_job_state_name(st.state), st.exit_code, st.signal);
	/* After the reap, still the same. */
	sleep_ms(300);
	if (job_status(job, &st) == -1)
		return -1;
	if (st.state != AGENT_JOB_TIMED_OUT || st.signal != SIGKILL ||
	    st.exit_code != -1)
		return test_fail("after the reap %s, exit %d, signal %d",
		    agent_job_state_name(st.state), st.exit_code, st.signal);
	return 0;
}

/* An error naming a client's non-ASCII path is valid UTF-8. */
static int
t_error_utf8(void)
{
	struct agent_msg	 req, rep;
	char			 path[512], text[UTF8_DECODED_MAX(512)];
	size_t			 i, n = 0, tlen;
	int			 errs = 0;

	/* Components of 100 bytes; byte 200 is inside a character. */
	path[n++] = 'a';
	path[n++] = 'b';
	for (i = 0; i < 150; i++) {
		if (i > 0 && i % 50 == 0)
			path[n++] = '/';
		path[n++] = (char)0xc3;
		path[n++] = (char)0xa9;		/* é */
	}
	path[n] = '\0';
	memset(&req, 0, sizeof(req));
	req.type = AGENT_FILE_READ;
	req.u.file_read.path = path;
	req.u.file_read.length = 16;
	if (ac_call(&ac, &req, &rep, CALL_TIMEOUT_MS) == -1)
		return test_fail("file_read: %s", strerror(errno));
	if (rep.type != AGENT_ERROR || rep.u.error.code != AGENT_ERR_NOENT)
		return test_fail("answered with %s %s: %s",
		    agent_type_name(rep.type), agent_err_name(rep.u.error.code),
		    rep.u.error.message);
	n = strlen(rep.u.error.message);
	(void)utf8_decode((const uint8_t *)rep.u.error.message, n, 1, text,
	    &tlen, &errs);
	if (errs)
		return test_fail("message is not UTF-8: %s",
		    rep.u.error.message);
	if (strncmp(rep.u.error.message, "ab\xc3\xa9", 4) != 0 ||
	    strstr(rep.u.error.message, "no such file") == NULL)
		return test_fail("message \"%s\"", rep.u.error.message);
	/* A cwd too. */
	memset(&req, 0, sizeof(req));
	req.type = AGENT_EXEC;
	req.u.exec.cwd = path;
	req.u.exec.argc = 1;
	req.u.exec.argv[0] = "true";
	if (ac_call(&ac, &req, &rep, CALL_TIMEOUT_MS) == -1)
		return test_fail("exec: %s", strerror(errno));
	if (rep.type != AGENT_ERROR)
		return test_fail("exec in a missing cwd: %s",
		    agent_type_name(rep.type));
	errs = 0;
	(void)utf8_decode((const uint8_t *)rep.u.error.message,
	    strlen(rep.u.error.message), 1, text, &tlen, &errs);
	if (errs)
		return test_fail("cwd message is not UTF-8: %s",
		    rep.u.error.message);
	return 0;
}

/* The job's user can reopen its own stdout and stderr. */
static int
t_dev_stdout(void)
{
	if (run("echo hi > /dev/stdout; echo err | tee /dev/stderr "
	    ">/dev/null; cat /dev/stdin", 1, "in\n") == -1)
		return -1;
	return expect_output("hi\nin\n", "err\n", 0);
}

/*
 * The pid of the login shell on tty1, polled for until deadline: 0 and
 * the output of the last look if there is none.
 */
static long
console_pid(uint64_t deadline, long not)
{
	long	 pid;
	char	 cmd[256];

	snprintf(cmd, sizeof(cmd), "ps -o pid=,args= -t tty1 | "
	    "awk '$2 == \"-bash\" && $1 != %ld { print $1 }'", not);
	for (;;) {
		if (run(cmd, 1, NULL) == -1 || expect_output(NULL, "", 0) == -1)
			return -1;
		if ((pid = strtol(col.text[0], NULL, 10)) > 0)
			return pid;
		if (test_now_ms() >= deadline)
			return 0;
		sleep_ms(200);
	}
}

/* Whether the serial log holds s; -1 if it cannot be read. */
static int
serial_has(const char *s)
{
	char	 path[600], *buf;
	size_t	 cap = 16 << 20, len = 0;
	ssize_t	 n;
	int	 fd, found;

	snprintf(path, sizeof(path), "%s/serial.log", workdir);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	if ((buf = malloc(cap)) == NULL) {
		close(fd);
		return -1;
	}
	while (len < cap && (n = read(fd, buf + len, cap - len)) > 0)
		len += (size_t)n;
	close(fd);
	found = memmem(buf, len, s, strlen(s)) != NULL;
	free(buf);
	return found;
}

/* The serial log holds s by deadline. */
static int
serial_wait(const char *s, uint64_t deadline)
{
	int	 r;

	while ((r = serial_has(s)) == 0 && test_now_ms() < deadline)
		sleep_ms(100);
	if (r == -1)
		return test_fail("serial log: %s", strerror(errno));
	if (r == 0)
		return test_fail("\"%s\" not in the serial log", s);
	return 0;
}

/* Without a display the agent says so and starts no shell on tty1. */
static int
t_console_none(void)
{
	if (serial_wait("mcvm-guestd: console: no display",
	    test_now_ms()) == -1)
		return -1;
	if (run("ps -o pid=,args= -t tty1", 1, NULL) == -1)
		return -1;
	return expect_output("", "", 1);
}

/*
 * With a display the agent starts a login shell on tty1: the workspace
 * user's, in /workspace, in the console's cgroup beneath the jobs', a
 * session leader with tty1 its terminal.  It is no job.
 */
static int
t_console_shell(void)
{
	struct agent_msg	 req, rep;
	char			 cmd[512], want[256];
	long			 pid;

	if (!display)
		return t_console_none();
	pid = console_pid(test_now_ms() + CONSOLE_WAIT_MS, 0);
	if (pid <= 0)
		return pid == 0 ? test_fail("no -bash on tty1: %s",
		    col.text[0]) : -1;
	snprintf(cmd, sizeof(cmd), "p=%ld; ps -o uid=,tty=,args= -p $p | "
	    "awk '{ print $1, $2, $3 }'; readlink /proc/$p/cwd; "
	    "cat /proc/$p/cgroup; awk '{ print ($1 == $6) }' /proc/$p/stat; "
	    "awk '$1 == \"Groups:\" { print NF - 1 }' /proc/$p/status; "
	    "tr '\\0' '\\n' < /proc/$p/environ | grep -E "
	    "'^(TERM|HOME|USER|LOGNAME|SHELL)=' | sort", pid);
	if (run(cmd, 1, NULL) == -1 || expect_output(NULL, "", 0) == -1)
		return -1;
	snprintf(want, sizeof(want), "1000 tty1 -bash\n/workspace\n"
	    "0::/mcvm-jobs/console\n1\n0\nHOME=/workspace\nLOGNAME=user\n"
	    "SHELL=/bin/bash\nTERM=linux\nUSER=user\n");
	if (strcmp(col.text[0], want) != 0)
		return test_fail("the shell, pid %ld: \"%s\"", pid,
		    col.text[0]);
	memset(&req, 0, sizeof(req));
	req.type = AGENT_INFO;
	if (call(&req, &rep) == -1)
		return -1;
	if (rep.u.info.jobs_active != 0)
		return test_fail("%u jobs active", rep.u.info.jobs_active);
	return 0;
}

/*
 * tty1, ttyS0 and the input event devices (the tablet's, the mouse's,
 * the PS/2 keyboard's) are the workspace user's, mode 0600.
 */
static int
t_console_devices(void)
{
	const char	 want[] = "/dev/tty1 1000:1000 600 character special "
	    "file\n/dev/ttyS0 1000:1000 600 character special file\n";
	size_t		 n;
	long		 events;
	int		 mouse, tablet;

	if (run("stat -c '%n %u:%g %a %F' /dev/tty1 /dev/ttyS0; n=0; "
	    "for e in /dev/input/event*; do "
	    "[ \"$(stat -c '%u:%g %a' $e)\" = '1000:1000 600' ] || "
	    "stat -c '%n %u:%g %a' $e; "
	    "exec 3< $e && exec 3<&- && n=$((n + 1)); done; echo $n; "
	    "cat /sys/class/input/event*/device/name | sort", 1, NULL) == -1)
		return -1;
	if (expect_output(NULL, "", 0) == -1)
		return -1;
	n = strlen(want);
	if (strncmp(col.text[0], want, n) != 0 ||
	    (events = strtol(col.text[0] + n, NULL, 10)) < 0)
		return test_fail("devices: %s", col.text[0]);
	mouse = strstr(col.text[0], "\nQEMU Virtio Mouse\n") != NULL;
	tablet = strstr(col.text[0], "\nQEMU Virtio Tablet\n") != NULL;
	if (display && (events < 2 || !mouse || !tablet))
		return test_fail("input devices: %s", col.text[0] + n);
	if (!display && (mouse || tablet))
		return test_fail("no display, yet: %s", col.text[0] + n);
	return 0;
}

/*
 * The agent's log is on the serial console, and a job can write a line
 * to it.  Opened for reading too, ttyS0 becomes the terminal of the job's
 * session, which hangs it up as it ends.
 */
static int
t_serial(void)
{
	char	 line[128], cmd[256];

	if (serial_wait("mcvm-guestd: ready", test_now_ms()) == -1)
		return -1;
	snprintf(line, sizeof(line), "serial line %ld.%.0f", (long)getpid(),
	    now_us());
	snprintf(cmd, sizeof(cmd), "echo '%s' 1<> /dev/ttyS0", line);
	if (run(cmd, 1, NULL) == -1 || expect_output("", "", 0) == -1)
		return -1;
	return serial_wait(line, test_now_ms() + CONSOLE_WAIT_MS);
}

/*
 * The shell on tty1, killed, starts again; the agent says so on the
 * serial console, which it still reaches after t_serial's hangup.
 */
static int
t_console_restart(void)
{
	char	 cmd[64], line[128];
	long	 pid, again;

	if (!display) {
		printf("# no display: no shell to kill\n");
		return 0;
	}
	if ((pid = console_pid(test_now_ms() + CONSOLE_WAIT_MS, 0)) <= 0)
		return pid == 0 ? test_fail("no -bash on tty1: %s",
		    col.text[0]) : -1;
	snprintf(cmd, sizeof(cmd), "kill -9 %ld", pid);
	if (run(cmd, 1, NULL) == -1 || expect_output("", "", 0) == -1)
		return -1;
	again = console_pid(test_now_ms() + CONSOLE_WAIT_MS, pid);
	if (again <= 0)
		return again == 0 ? test_fail("no new -bash on tty1: %s",
		    col.text[0]) : -1;
	snprintf(line, sizeof(line), "mcvm-guestd: console: the shell on "
	    "/dev/tty1 was killed by signal 9");
	return serial_wait(line, test_now_ms() + CONSOLE_WAIT_MS);
}

/* Threads and processes count: a job stops at pids.max, told why. */
static int
t_pids_limit(void)
{
	unsigned long	 n;

	if (run("python3 -c '\n"
	    "import sys, threading, time\n"
	    "n = 0\n"
	    "try:\n"
	    "    while n < 5000:\n"
	    "        threading.Thread(target=time.sleep, args=(30,),\n"
	    "            daemon=True).start()\n"
	    "        n += 1\n"
	    "except RuntimeError as e:\n"
	    "    print(e, file=sys.stderr)\n"
	    "print(n, flush=True)\n"
	    "import os; os._exit(0)'", 1, NULL) == -1)
		return -1;
	if (col.st.state != AGENT_JOB_COMPLETED || col.st.exit_code != 0)
		return test_fail("state %s, exit %d: %.200s",
		    agent_job_state_name(col.st.state), col.st.exit_code,
		    col.text[1]);
	n = strtoul(col.text[0], NULL, 10);
	if (n < 1000 || n >= 4096)
		return test_fail("%lu threads started: %.200s", n, col.text[1]);
	if (strstr(col.text[1], "limit of 4096 processes") == NULL)
		return test_fail("stderr \"%.200s\"", col.text[1]);
	return 0;
}

/* A job that takes all memory is killed, whole; the agent goes on. */
static int
t_memory_limit(void)
{
	struct agent_msg	 req, rep;

	if (run("python3 -c '\n"
	    "a = []\n"
	    "while True:\n"
	    "    a.append(bytearray(8 << 20))\n'", 1, NULL) == -1)
		return -1;
	if (col.st.state != AGENT_JOB_COMPLETED ||
	    col.st.signal != SIGKILL)
		return test_fail("state %s, signal %d: %.200s",
		    agent_job_state_name(col.st.state), col.st.signal,
		    col.text[1]);
	if (strstr(col.text[1], "ran out of memory") == NULL)
		return test_fail("stderr \"%.200s\"", col.text[1]);
	memset(&req, 0, sizeof(req));
	req.type = AGENT_PING;
	if (call(&req, &rep) == -1)
		return -1;
	if (run("echo after", 1, NULL) == -1)
		return -1;
	return expect_output("after\n", "", 0);
}

/* While a fork bomb runs, the agent answers and other jobs run. */
static int
t_fork_bomb(void)
{
	struct agent_msg	 req, rep;
	struct agent_job_status	 st;
	uint32_t		 bomb;

	if (exec_start("b() { b | b & }; b; sleep 100", 1, NULL, 20000,
	    &bomb) == -1)
		return -1;
	sleep_ms(3000);
	memset(&req, 0, sizeof(req));
	req.type = AGENT_PING;
	if (call(&req, &rep) == -1)
		return -1;
	if (run("echo alive", 1, NULL) == -1 ||
	    expect_output("alive\n", "", 0) == -1)
		return -1;
	memset(&req, 0, sizeof(req));
	req.type = AGENT_JOB_CANCEL;
	req.u.job.job = bomb;
	if (call(&req, &rep) == -1)
		return -1;
	if (job_wait(bomb, &st, JOB_TIMEOUT_MS) == -1)
		return -1;
	if (st.state == AGENT_JOB_RUNNING || st.signal != SIGKILL)
		return test_fail("bomb %s, signal %d",
		    agent_job_state_name(st.state), st.signal);
	if (run("echo after", 1, NULL) == -1)
		return -1;
	return expect_output("after\n", "", 0);
}

static int
t_poweroff(void)
{
	struct agent_msg	 req, rep;

	memset(&req, 0, sizeof(req));
	req.type = AGENT_POWEROFF;
	if (call(&req, &rep) == -1)
		return -1;
	if (qemu_stop(SHUTDOWN_WAIT_MS) == -1)
		return test_fail("QEMU did not exit; killed it");
	return 0;
}

/*
 * A plain command runs in the spare shell (bash --command-fd), started
 * half a second into the job before, in the next job's cgroup, with
 * $SECONDS counted from its command and $BASH_EXECUTION_STRING that
 * command, execing its last command as -c does.  A job of another kind
 * moves the spare out of its cgroup, and the next plain command takes
 * it back.  A job that kills the spare leaves the next commands working,
 * and a spare is made again.
 */
#define NEXT_PROCS	"/sys/fs/cgroup/mcvm-jobs/job-$(($(sed 's/.*-//' " \
			"/proc/self/cgroup) + 1))/cgroup.procs"
#define SPARE_PROCS	"/sys/fs/cgroup/mcvm-jobs/spare/cgroup.procs"

/* The spare's pid, read by a job from the cgroup the spare waits in. */
static int
spare_pid(const char *procs, char *pid, size_t len)
{
	char	 cmd[256];
	size_t	 n;

	(void)snprintf(cmd, sizeof(cmd), "sleep 1.2; cat %s", procs);
	if (run(cmd, 1, NULL) == -1 || expect_output(NULL, "", 0) == -1)
		return -1;
	n = strspn(col.text[0], "0123456789");
	if (n == 0 || n >= len || strcmp(col.text[0] + n, "\n") != 0)
		return test_fail("the spare's cgroup holds \"%.100s\"",
		    col.text[0]);
	memcpy(pid, col.text[0], n);
	pid[n] = '\0';
	return 0;
}

static int
t_spare(void)
{
	char	 pid[32], want[128];

	if (spare_pid(NEXT_PROCS, pid, sizeof(pid)) == -1)
		return -1;
	sleep_ms(2200);		/* its $SECONDS would say 2 */
	if (run("echo $$ $SECONDS $0; [[ $BASH_EXECUTION_STRING == 'echo $$'* ]]"
	    " && echo its command; sed 's/job-[0-9]*$/job-N/' /proc/self/cgroup;"
	    " /bin/sh -c 'echo $$'", 1, NULL) == -1)
		return -1;
	/* As with -c, the last command replaced the shell. */
	(void)snprintf(want, sizeof(want), "%s 0 /bin/bash\nits command\n"
	    "0::/mcvm-jobs/job-N\n%s\n", pid, pid);
	if (expect_output(want, "", 0) == -1)
		return -1;
	/* A command with stdin starts its own shell, the spare moved out. */
	if (spare_pid(NEXT_PROCS, pid, sizeof(pid)) == -1 ||
	    run("read x; echo $x; cat " SPARE_PROCS, 1, "own\n") == -1)
		return -1;
	(void)snprintf(want, sizeof(want), "own\n%s\n", pid);
	if (expect_output(want, "", 0) == -1 || run("echo $$; sed "
	    "'s/job-[0-9]*$/job-N/' /proc/self/cgroup", 1, NULL) == -1)
		return -1;
	(void)snprintf(want, sizeof(want), "%s\n0::/mcvm-jobs/job-N\n", pid);
	if (expect_output(want, "", 0) == -1)
		return -1;
	if (run("sleep 1.2; kill -9 $(cat " NEXT_PROCS ")", 1, NULL) == -1 ||
	    expect_output("", "", 0) == -1)
		return -1;
	if (run("echo still; sleep 1.2; grep -c . " NEXT_PROCS, 1,
	    NULL) == -1)
		return -1;
	return expect_output("still\n1\n", "", 0);
}

static const struct {
	const char	*name;
	int		(*fn)(void);
} tests[] = {
	{ "ping and info", t_info },
	{ "python3 prints 4", t_python },
	{ "argv exec as uid 1000 in /workspace, in its cgroup",
	    t_argv_identity },
	{ "hostname, mounts, loopback", t_system },
	{ "fibonacci script", t_fibonacci },
	{ "node, git, make, gcc, bash, CA certificates", t_toolchain },
	{ "the shells: Debian's bash and dash, static PIEs on musl",
	    t_shell },
	{ "commands run in bash: its features, no startup files", t_bash },
	{ "plain commands run in the spare shell, in their own cgroup",
	    t_spare },
	{ "the image's tools run", t_image_tools },
	{ "python3 -m venv and pip install of a wheel, network off",
	    t_venv_offline },
	{ "streams end with the job, or with what it left", t_streams_end },
	{ "stdout and stderr separate, exit code", t_streams },
	{ "stdin bytes", t_stdin },
	{ "cwd and environment, the job's PATH", t_cwd_env },
	{ "1 MiB output keeps each stream's head and tail", t_truncated },
	{ "utf-8 cut mid-character across pages", t_utf8 },
	{ "binary output in base64", t_base64 },
	{ "cancel kills a setsid grandchild", t_cancel_setsid },
	{ "job_read waits for the job to end", t_job_wait },
	{ "file write and read back", t_files },
	{ "a read's size is the file's at any offset", t_file_size_at_offset },
	{ "writes make parents, never through a symlink", t_file_mkdirs },
	{ "a listing: depth, types, modes, bounds", t_file_list },
	{ "symlink and .. escapes refused", t_escape },
	{ "freeze and thaw, timeout excludes frozen time", t_freeze },
	{ "set the clock", t_set_time },
	{ "at most 4 active jobs; cancel while frozen", t_limits },
	{ "bad requests answered with errors", t_errors },
	{ "host reconnects, session restarts", t_reconnect },
	{ "a cursor past the end is refused", t_cursor_past_end },
	{ "a killed job reports SIGKILL at once", t_killed_state },
	{ "errors naming non-ASCII paths are UTF-8", t_error_utf8 },
	{ "jobs open /dev/stdout, /dev/stderr, /dev/stdin", t_dev_stdout },
	{ "console: a login shell on tty1, uid 1000, /workspace, own cgroup",
	    t_console_shell },
	{ "console: tty1, ttyS0 and the input devices are the user's",
	    t_console_devices },
	{ "console: the agent logs to ttyS0; a job writes a line to it",
	    t_serial },
	{ "console: the shell on tty1, killed, starts again",
	    t_console_restart },
	{ "a job stops at 4096 processes and threads", t_pids_limit },
	{ "a memory hog is killed; the agent answers", t_memory_limit },
	{ "a fork bomb is contained; the agent answers", t_fork_bomb },
	{ "ended jobs are evicted past 256; their ids expire",
	    t_total_limit },
};

static int
cmp_double(const void *a, const void *b)
{
	double	 x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * Runs an exec of argv (a command given to the shell when shell is set)
 * to its end; its round-trip in *us.
 */
static int
bench_exec(const char *const *argv, int shell, double *us)
{
	struct agent_msg	 req, rep;
	double			 t;
	uint32_t		 id;
	int			 n;

	memset(&req, 0, sizeof(req));
	req.type = AGENT_EXEC;
	req.u.exec.flags = shell ? AGENT_EXEC_SHELL : 0;
	req.u.exec.cwd = "";
	for (n = 0; argv[n] != NULL; n++)
		req.u.exec.argv[n] = argv[n];
	req.u.exec.argc = (uint32_t)n;
	*us = 0;
	t = now_us();
	if (call(&req, &rep) == -1 ||
	    read_waiting(rep.u.job.job, AGENT_WAIT_MAX_MS, &id) == -1)
		return -1;
	if (ac_recv(&ac, id, &rep, CALL_TIMEOUT_MS) == -1)
		return test_fail("job_read: %s", strerror(errno));
	*us = now_us() - t;
	if (rep.type != (AGENT_REPLY | AGENT_JOB_READ) ||
	    rep.u.output.st.state != AGENT_JOB_COMPLETED ||
	    rep.u.output.st.exit_code != 0)
		return test_fail("%s did not complete", argv[0]);
	return 0;
}

#define BENCH_PAUSE_MS	50

/*
 * The exec round-trips: `true` on its own, each shell's `-c true` (the
 * shells' start-ups side by side), and a shell command as vm_exec sends
 * it (bash -c).
 */
static int
bench(int runs, double boot_ms)
{
	static const char *const true_argv[] = { "true", NULL };
	static const char *const bash_argv[] = { "/bin/bash", "-c", "true",
	    NULL };
	static const char *const dash_argv[] = { "/bin/dash", "-c", "true",
	    NULL };
	static const struct {
		const char		*name;
		const char *const	*argv;
		int			 shell;
	} execs[] = {
		{ "exec_true_roundtrip_ms", true_argv, 0 },
		{ "exec_bash_c_true_roundtrip_ms", bash_argv, 0 },
		{ "exec_dash_c_true_roundtrip_ms", dash_argv, 0 },
		{ "exec_shell_command_true_roundtrip_ms", true_argv, 1 },
	};
#define NEXECS	(sizeof(execs) / sizeof(execs[0]))
	struct agent_msg	 req, rep;
	double			*exec_us[NEXECS], *ping_us, t;
	size_t			 e;
	int			 i;

	ping_us = calloc((size_t)runs, sizeof(double));
	if (ping_us == NULL)
		return test_fail("calloc");
	for (e = 0; e < NEXECS; e++)
		if ((exec_us[e] = calloc((size_t)runs, sizeof(double))) ==
		    NULL)
			return test_fail("calloc");
	for (i = 0; i < runs; i++) {
		t = now_us();
		memset(&req, 0, sizeof(req));
		req.type = AGENT_PING;
		if (call(&req, &rep) == -1)
			return -1;
		ping_us[i] = now_us() - t;
	}
	qsort(ping_us, (size_t)runs, sizeof(double), cmp_double);
	printf("boot_to_first_answer_ms %.0f\n", boot_ms);
	printf("ping_roundtrip_ms p50 %.2f p99 %.2f\n",
	    ping_us[runs / 2] / 1000, ping_us[(runs * 99) / 100] / 1000);
	/*
	 * Taken in turns, so that each sees the same load; each once first,
	 * to warm the page cache.  Each after BENCH_PAUSE_MS, as an agent's
	 * calls come: the spare shell is started 10 ms after a job's end.
	 */
	for (i = -1; i < runs; i++)
		for (e = 0; e < NEXECS; e++) {
			sleep_ms(BENCH_PAUSE_MS);
			if (bench_exec(execs[e].argv, execs[e].shell, &t) == -1)
				return -1;
			if (i >= 0)
				exec_us[e][i] = t;
		}
	for (e = 0; e < NEXECS; e++) {
		qsort(exec_us[e], (size_t)runs, sizeof(double), cmp_double);
		printf("%s p50 %.2f p99 %.2f (runs %d, %d ms apart, exec, "
		    "then a read that waits for the end)\n", execs[e].name,
		    exec_us[e][runs / 2] / 1000,
		    exec_us[e][(runs * 99) / 100] / 1000, runs,
		    BENCH_PAUSE_MS);
		free(exec_us[e]);
	}
	free(ping_us);
#undef NEXECS
	return 0;
}

static void
cleanup(void)
{
	char	 path[600];

	if (qemu_pid != -1) {
		kill(qemu_pid, SIGKILL);
		waitpid(qemu_pid, NULL, 0);
		qemu_pid = -1;
	}
	unlink(sockpath);
	snprintf(path, sizeof(path), "%s/serial.log", workdir);
	if (getenv("GUEST_KEEP_LOG") == NULL)
		unlink(path);
	rmdir(workdir);
}

static void
on_signal(int sig)
{
	if (qemu_pid > 0)
		kill(qemu_pid, SIGKILL);
	_exit(128 + sig);
}

static void
usage(void)
{
	fprintf(stderr, "usage: guest-driver [-b] [-n runs] [-w workdir] "
	    "imagedir\n");
	exit(2);
}

int
main(int argc, char *argv[])
{
	const char	*image, *wd = NULL, *only;
	char		 name[128];
	double		 t0, boot_ms;
	int		 ch, benchmark = 0, runs = BENCH_RUNS;
	size_t		 i;

	while ((ch = getopt(argc, argv, "bn:w:")) != -1) {
		switch (ch) {
		case 'b':
			benchmark = 1;
			break;
		case 'n':
			runs = atoi(optarg);
			if (runs < 1 || runs > 100000)
				usage();
			break;
		case 'w':
			wd = optarg;
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 1)
		usage();
	image = argv[optind];
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* For experiments: GUEST_ONLY runs the tests whose names hold it. */
	only = getenv("GUEST_ONLY");

	snprintf(workdir, sizeof(workdir), "%s/mcvm-guest.XXXXXX",
	    wd != NULL ? wd : "/tmp");
	if (mkdtemp(workdir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(sockpath, sizeof(sockpath), "%s/agent.sock", workdir);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	ac.fd = -1;

	t0 = now_us();
	qemu_start(image);
	if (agent_connect(BOOT_TIMEOUT_MS) == -1 ||
	    ac_hello(&ac, AGENT_PROTO_VERSION, BOOT_TIMEOUT_MS) == -1) {
		test_report("boot", test_fail("no answer from the agent: %s "
		    "(serial log %s/serial.log)", strerror(errno), workdir));
		setenv("GUEST_KEEP_LOG", "1", 1);
		qemu_stop(0);
		cleanup();
		return test_summary();
	}
	boot_ms = (now_us() - t0) / 1000;
	snprintf(name, sizeof(name), "boot: agent answered %.0f ms after "
	    "QEMU started", boot_ms);
	test_report(name, 0);

	if (benchmark) {
		test_report("bench", bench(runs, boot_ms));
	} else {
		for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
			if (only == NULL || strstr(tests[i].name, only) != NULL)
				test_report(tests[i].name, tests[i].fn());
	}
	test_report("poweroff, QEMU exits", t_poweroff());
	if (test_failures()) {
		setenv("GUEST_KEEP_LOG", "1", 1);
		printf("# serial log kept in %s/serial.log\n", workdir);
	}
	cleanup();
	return test_summary();
}
