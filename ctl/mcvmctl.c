/*
 * mcvmctl: the operator's command line, over mcvmd's control socket.
 * A table of commands, each a synchronous request and its replies.
 */
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cap-ng.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "hash.h"
#include "imsg.h"
#include "msg_ctl.h"
#include "proto.h"
#include "validate.h"

#define TOKEN_BYTES		32
#define TOKEN_PREFIX		"mcvm_"
#define TOKEN_STR_MAX		(sizeof(TOKEN_PREFIX) + 2 * TOKEN_BYTES)
#define CTL_REPLY_TIMEOUT_MS	30000
#define CTL_ATTACH_TIMEOUT_MS	90000	/* past mcvmd's monitor deadline */
#define CTL_CAPS_LISTED		8	/* more are summed up, not listed */
#define CTL_WAIT_SECS		60	/* stop-vm, destroy-vm: their end */
#define CTL_WAIT_POLL_MS	250

struct ctl_cmd {
	const char	*name;
	const char	*usage;
	int		(*run)(int, char **);
};

static const char	*sockpath = MCVM_RUNDIR_DEFAULT "/" MCVM_CONTROL_SOCK;
static struct imsgbuf	 ibuf;

static int	 cmd_status(int, char **);
static int	 cmd_issue(int, char **);
static int	 cmd_rotate(int, char **);
static int	 cmd_revoke(int, char **);
static int	 cmd_list(int, char **);
static int	 cmd_list_vms(int, char **);
static int	 cmd_stop_vm(int, char **);
static int	 cmd_destroy_vm(int, char **);
static int	 cmd_set_quota(int, char **);
static int	 cmd_attach_vm(int, char **);
static int	 cmd_forget_vm(int, char **);

static int	 reply_timeout_ms = CTL_REPLY_TIMEOUT_MS;

static const struct ctl_cmd cmds[] = {
	{ "status", "status", cmd_status },
	{ "issue-token", "issue-token --workspace name --output file "
	    "[--ttl duration] [--allow-network]", cmd_issue },
	{ "rotate-token", "rotate-token --workspace name --output file "
	    "[--ttl duration]", cmd_rotate },
	{ "revoke-workspace", "revoke-workspace [--stop | --hibernate] name",
	    cmd_revoke },
	{ "list-workspaces", "list-workspaces", cmd_list },
	{ "set-quota", "set-quota --workspace name [--vms n] [--memory size] "
	    "[--vcpus n] [--storage size]", cmd_set_quota },
	{ "list-vms", "list-vms", cmd_list_vms },
	{ "stop-vm", "stop-vm [--force] id", cmd_stop_vm },
	{ "destroy-vm", "destroy-vm id", cmd_destroy_vm },
	{ "attach-vm", "attach-vm --workspace name --name name --qmp socket "
	    "[--qga socket] [--pid pid]", cmd_attach_vm },
	{ "forget-vm", "forget-vm id", cmd_forget_vm },
};
#define NCMDS	(sizeof(cmds) / sizeof(cmds[0]))

static void __attribute__((noreturn))
usage(void)
{
	size_t	 i;

	fprintf(stderr, "usage: mcvmctl [-s socket] command [arguments]\n"
	    "commands:\n");
	for (i = 0; i < NCMDS; i++)
		fprintf(stderr, "\t%s\n", cmds[i].usage);
	exit(2);
}

static void __attribute__((noreturn))
cmd_usage(const char *name)
{
	size_t	 i;

	for (i = 0; i < NCMDS; i++)
		if (strcmp(cmds[i].name, name) == 0)
			fprintf(stderr, "usage: mcvmctl %s\n", cmds[i].usage);
	exit(2);
}

static void
ctl_connect(void)
{
	struct sockaddr_un	 sun;
	int			 fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(sockpath) >= sizeof(sun.sun_path))
		errx(1, "socket path too long: %s", sockpath);
	memcpy(sun.sun_path, sockpath, strlen(sockpath) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		err(1, "socket");
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1)
		err(1, "cannot reach mcvmd at %s", sockpath);
	if (imsgbuf_init(&ibuf, fd) == -1)
		err(1, "imsgbuf_init");
}

static void
ctl_send(struct ibuf *b)
{
	if (b == NULL || imsg_close(&ibuf, b) == -1 ||
	    imsgbuf_flush(&ibuf) == -1)
		err(1, "send to mcvmd");
}

/* Waits for the next reply.  Dies if mcvmd hangs up or breaks framing. */
static void
ctl_recv(struct imsg *imsg)
{
	struct pollfd	 pfd;
	ssize_t		 n;
	int		 rc;

	for (;;) {
		if ((rc = imsg_get(&ibuf, imsg)) == 1)
			return;
		if (rc == -1)
			errx(1, "malformed reply from mcvmd");
		pfd.fd = ibuf.fd;
		pfd.events = POLLIN;
		if ((rc = poll(&pfd, 1, reply_timeout_ms)) == -1) {
			if (errno == EINTR)
				continue;
			err(1, "poll");
		}
		if (rc == 0)
			errx(1, "no reply from mcvmd");
		if ((n = imsgbuf_read(&ibuf)) == 0)
			errx(1, "mcvmd closed the connection");
		if (n == -1 && errno != EAGAIN)
			err(1, "read from mcvmd");
	}
}

static void
ctl_bad_reply(void)
{
	errx(1, "malformed reply from mcvmd");
}

/* Handles OK/FAIL/END; returns 0 for OK or END, exits on FAIL. */
static int
ctl_result(struct imsg *imsg, int quiet)
{
	struct msg_ctl_ok	 ok;
	struct msg_ctl_fail	 fail;

	switch (imsg->hdr.type) {
	case IMSG_CTL_OK:
		if (msg_ctl_ok_get(imsg, &ok) == -1)
			ctl_bad_reply();
		if (!quiet && *ok.message != '\0')
			printf("%s\n", ok.message);
		return 0;
	case IMSG_CTL_END:
		if (msg_ctl_end_get(imsg) == -1)
			ctl_bad_reply();
		return 0;
	case IMSG_CTL_FAIL:
		if (msg_ctl_fail_get(imsg, &fail) == -1)
			ctl_bad_reply();
		errx(1, "%s", fail.message);
	default:
		errx(1, "unexpected reply %s", imsg_type_name(imsg->hdr.type));
	}
}

/* Sends request b and prints its one answer; exits if it failed. */
static void
ctl_request(struct ibuf *b)
{
	struct imsg	 imsg;

	ctl_send(b);
	ctl_recv(&imsg);
	(void)ctl_result(&imsg, 0);
	imsg_free(&imsg);
}

static void
caps_string(uint64_t caps, char *buf, size_t len)
{
	const char	*name;
	unsigned int	 cap, n = 0;
	size_t		 used = 0;

	buf[0] = '\0';
	for (cap = 0; cap < 64; cap++)
		if (caps & (1ULL << cap))
			n++;
	if (n == 0) {
		(void)snprintf(buf, len, "none");
		return;
	}
	if (n > CTL_CAPS_LISTED) {
		(void)snprintf(buf, len, "%u capabilities", n);
		return;
	}
	for (cap = 0; cap < 64; cap++) {
		if (!(caps & (1ULL << cap)))
			continue;
		if ((name = capng_capability_to_name(cap)) == NULL)
			name = "?";
		used += (size_t)snprintf(buf + used, len - used, "%s%s",
		    used > 0 ? "," : "", name);
		if (used >= len)
			break;
	}
}

/* "topic: text", continuation lines indented under it. */
static void
print_note(const char *topic, const char *text)
{
	const char	*p = text, *nl;

	printf("%s: ", topic);
	while ((nl = strchr(p, '\n')) != NULL) {
		printf("%.*s\n%*s", (int)(nl - p), p, (int)strlen(topic) + 2,
		    "");
		p = nl + 1;
	}
	printf("%s\n", p);
}

/* "512M", "1.5G": bytes in the largest unit of 1024 that fits. */
static void
fmt_size(uint64_t bytes, char *buf, size_t len)
{
	static const char	 units[] = "KMGT";
	double			 v = (double)bytes;
	size_t			 u = 0;

	if (bytes < 1024) {
		(void)snprintf(buf, len, "%llu", (unsigned long long)bytes);
		return;
	}
	v /= 1024;
	while (v >= 1024 && u + 1 < sizeof(units) - 1) {
		v /= 1024;
		u++;
	}
	if (v == (double)(uint64_t)v || v >= 100)
		(void)snprintf(buf, len, "%.0f%c", v, units[u]);
	else
		(void)snprintf(buf, len, "%.1f%c", v, units[u]);
}

/* "used/limit", the limit marked when set-quota set it. */
static void
fmt_use(char *buf, size_t len, const char *used, const char *limit,
    int quota)
{
	(void)snprintf(buf, len, "%s/%s%s", used, limit, quota ? "*" : "");
}

static void
print_status_ws(const struct msg_ctl_status_ws *w, int first)
{
	char	 vms[64], mem[64], cpus[64], sto[64], a[24], b[24];

	if (first)
		printf("\n%-24s %-12s %-16s %-12s %s\n", "WORKSPACE", "VMS",
		    "MEMORY", "VCPUS", "STORAGE");
	(void)snprintf(a, sizeof(a), "%u", w->vms);
	(void)snprintf(b, sizeof(b), "%u", w->max_vms);
	fmt_use(vms, sizeof(vms), a, b, w->quota & QUOTA_VMS);
	fmt_size(w->memory, a, sizeof(a));
	fmt_size(w->max_memory, b, sizeof(b));
	fmt_use(mem, sizeof(mem), a, b, w->quota & QUOTA_MEMORY);
	(void)snprintf(a, sizeof(a), "%u", w->vcpus);
	(void)snprintf(b, sizeof(b), "%u", w->max_vcpus);
	fmt_use(cpus, sizeof(cpus), a, b, w->quota & QUOTA_VCPUS);
	fmt_size(w->storage, a, sizeof(a));
	fmt_size(w->max_storage, b, sizeof(b));
	fmt_use(sto, sizeof(sto), a, b, w->quota & QUOTA_STORAGE);
	printf("%-24s %-12s %-16s %-12s %s\n", w->workspace, vms, mem, cpus,
	    sto);
}

/* Once, after the workspaces' table, if a limit in it is marked. */
static void
quota_footnote(int *quotas)
{
	if (*quotas == 1)
		printf("* set with set-quota, in place of the config's "
		    "workspace limits\n");
	*quotas = 2;
}

static int
cmd_status(int argc, char **argv)
{
	struct imsg			 imsg;
	struct msg_ctl_status_note	 note;
	struct msg_ctl_status_proc	 p;
	struct msg_ctl_status_ws	 w;
	char				 caps[512], ubuf[16];
	int				 down = 0, notes = 0, wss = 0;
	int				 quotas = 0;

	if (argc != 1)
		cmd_usage(argv[0]);
	ctl_connect();
	ctl_send(imsg_create(&ibuf, IMSG_CTL_STATUS, 0, 0, 0));
	printf("%-8s %-8s %-8s %-8s %-4s %-9s %-9s %s\n", "PROCESS", "STATE",
	    "PID", "UID", "NNP", "SECCOMP", "RESTARTS", "CAPABILITIES");
	for (;;) {
		ctl_recv(&imsg);
		if (imsg.hdr.type == IMSG_CTL_STATUS_WS) {
			if (msg_ctl_status_ws_get(&imsg, &w) == -1)
				ctl_bad_reply();
			print_status_ws(&w, !wss++);
			if (w.quota != 0 && quotas == 0)
				quotas = 1;
			imsg_free(&imsg);
			continue;
		}
		if (imsg.hdr.type == IMSG_CTL_STATUS_NOTE) {
			if (msg_ctl_status_note_get(&imsg, &note) == -1)
				ctl_bad_reply();
			quota_footnote(&quotas);
			if (!notes++)
				printf("\n");
			print_note(note.topic, note.text);
			imsg_free(&imsg);
			continue;
		}
		if (imsg.hdr.type != IMSG_CTL_STATUS_PROC) {
			ctl_result(&imsg, 1);
			imsg_free(&imsg);
			quota_footnote(&quotas);
			break;
		}
		if (msg_ctl_status_proc_get(&imsg, &p) == -1)
			ctl_bad_reply();
		caps_string(p.capeff | p.capprm, caps, sizeof(caps));
		if (p.pid == 0)
			(void)snprintf(ubuf, sizeof(ubuf), "-");
		else
			(void)snprintf(ubuf, sizeof(ubuf), "%u", p.uid);
		printf("%-8s %-8s %-8u %-8s %-4u %-9s %-9u %s\n", p.title,
		    p.state, p.pid, ubuf, p.nonewprivs, p.seccomp == 2 ?
		    "filter" : p.seccomp == 1 ? "strict" : "off", p.restarts,
		    p.pid == 0 ? "-" : caps);
		if (strcmp(p.state, "running") != 0)
			down = 1;
		imsg_free(&imsg);
	}
	return down ? 1 : 0;
}

/* "3600", "90s", "45m", "12h", "30d". */
static int
parse_duration(const char *s, uint64_t *out)
{
	char		*ep;
	unsigned long long v;
	uint64_t	 mul = 1;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &ep, 10);
	if (errno != 0)
		return -1;
	if (*ep != '\0') {
		if (ep[1] != '\0')
			return -1;
		switch (*ep) {
		case 's':
			break;
		case 'm':
			mul = 60;
			break;
		case 'h':
			mul = 3600;
			break;
		case 'd':
			mul = 86400;
			break;
		default:
			return -1;
		}
	}
	if (v == 0 || v > TOKEN_TTL_MAX / mul)
		return -1;
	*out = v * mul;
	return 0;
}

/*
 * Issues (or rotates) a token.  mcvmctl makes the token itself and writes
 * it to a new 0600 file; only its SHA-256 travels to mcvmd.  The token is
 * never printed.  If mcvmd refuses, the file is removed.
 */
static int
token_issue(int argc, char **argv, int rotate)
{
	static const struct option longopts[] = {
		{ "workspace",		required_argument, NULL, 'w' },
		{ "output",		required_argument, NULL, 'o' },
		{ "ttl",		required_argument, NULL, 't' },
		{ "allow-network",	no_argument,	   NULL, 'n' },
		{ NULL,			0,		   NULL, 0 }
	};
	struct msg_ctl_token_issue	 m;
	const char			*ws = NULL, *out = NULL;
	uint8_t				 raw[TOKEN_BYTES];
	uint8_t				 hash[TOKEN_HASH_LEN];
	char				 token[TOKEN_STR_MAX + 1];
	struct imsg			 imsg;
	struct ibuf			*b;
	uint64_t			 ttl = 0;
	uint32_t			 flags = 0;
	size_t				 len;
	int				 ch, fd;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'w':
			ws = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 't':
			if (parse_duration(optarg, &ttl) == -1)
				errx(2, "invalid --ttl %s: use seconds or a "
				    "number with s, m, h or d", optarg);
			break;
		case 'n':
			if (rotate)
				cmd_usage(argv[0]);
			flags |= WS_ALLOW_NETWORK;
			break;
		default:
			cmd_usage(argv[0]);
		}
	}
	if (ws == NULL || out == NULL || optind != argc)
		cmd_usage(argv[0]);
	if (!valid_workspace_name(ws))
		errx(2, "invalid workspace name %s: use 1 to %d of a-z, 0-9, "
		    ". _ -, starting with a letter or digit", ws, WS_NAME_MAX);

	ctl_connect();
	if (getrandom(raw, sizeof(raw), 0) != sizeof(raw))
		err(1, "getrandom");
	(void)memcpy(token, TOKEN_PREFIX, sizeof(TOKEN_PREFIX) - 1);
	hex_encode(raw, sizeof(raw), token + sizeof(TOKEN_PREFIX) - 1);
	len = strlen(token);
	explicit_bzero(raw, sizeof(raw));
	if (sha256(token, len, hash) == -1)
		errx(1, "sha256 failed");

	if ((fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600)) == -1)
		err(1, "%s%s", out, errno == EEXIST ?
		    " (will not overwrite a token file)" : "");
	if (fchmod(fd, 0600) == -1)
		goto fail;
	token[len] = '\n';
	if (write(fd, token, len + 1) != (ssize_t)(len + 1) ||
	    fsync(fd) == -1)
		goto fail;
	explicit_bzero(token, sizeof(token));
	if (close(fd) == -1) {
		fd = -1;
		goto fail;
	}
	fd = -1;

	m.workspace = ws;
	memcpy(m.hash, hash, sizeof(m.hash));
	m.ttl = ttl;
	m.flags = flags;
	m.rotate = rotate ? 1 : 0;
	if ((b = imsg_create(&ibuf, IMSG_CTL_TOKEN_ISSUE, 0, 0, 128)) != NULL)
		msg_ctl_token_issue_put(b, &m);
	ctl_send(b);
	ctl_recv(&imsg);
	if (imsg.hdr.type == IMSG_CTL_FAIL)
		(void)unlink(out);
	(void)ctl_result(&imsg, 0);
	imsg_free(&imsg);
	printf("token written to %s (mode 0600)\n", out);
	return 0;
fail:
	warn("%s", out);
	explicit_bzero(token, sizeof(token));
	if (fd != -1)
		close(fd);
	(void)unlink(out);
	return 1;
}

static int
cmd_issue(int argc, char **argv)
{
	return token_issue(argc, argv, 0);
}

static int
cmd_rotate(int argc, char **argv)
{
	return token_issue(argc, argv, 1);
}

static int
cmd_revoke(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "stop",	no_argument,	NULL, 's' },
		{ "hibernate",	no_argument,	NULL, 'h' },
		{ NULL,		0,		NULL, 0 }
	};
	struct msg_ctl_ws_revoke	 m;
	struct ibuf			*b;
	int				 ch;

	m.vms = CTL_REVOKE_KEEP;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 's':
		case 'h':
			if (m.vms != CTL_REVOKE_KEEP)
				errx(2, "give --stop or --hibernate, not both");
			m.vms = ch == 's' ? CTL_REVOKE_STOP :
			    CTL_REVOKE_HIBERNATE;
			break;
		default:
			cmd_usage(argv[0]);
		}
	}
	if (optind != argc - 1)
		cmd_usage(argv[0]);
	if (!valid_workspace_name(argv[optind]))
		errx(2, "invalid workspace name %s", argv[optind]);
	ctl_connect();
	m.workspace = argv[optind];
	if ((b = imsg_create(&ibuf, IMSG_CTL_WS_REVOKE, 0, 0, 96)) != NULL)
		msg_ctl_ws_revoke_put(b, &m);
	ctl_request(b);
	return 0;
}

static void
fmt_time(int64_t t, char *buf, size_t len)
{
	struct tm	 tm;
	time_t		 tt = (time_t)t;

	if (t == 0 || gmtime_r(&tt, &tm) == NULL ||
	    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		(void)snprintf(buf, len, "-");
}

static int
cmd_list(int argc, char **argv)
{
	struct imsg		 imsg;
	struct msg_ctl_ws_entry	 e;
	char			 c[32], x[32];

	if (argc != 1)
		cmd_usage(argv[0]);
	ctl_connect();
	ctl_send(imsg_create(&ibuf, IMSG_CTL_WS_LIST, 0, 0, 0));
	printf("%-24s %-8s %-8s %-6s %-20s %s\n", "WORKSPACE", "STATE",
	    "NETWORK", "TOKENS", "CREATED", "NEXT-EXPIRY");
	for (;;) {
		ctl_recv(&imsg);
		if (imsg.hdr.type != IMSG_CTL_WS_ENTRY) {
			ctl_result(&imsg, 1);
			imsg_free(&imsg);
			return 0;
		}
		if (msg_ctl_ws_entry_get(&imsg, &e) == -1)
			ctl_bad_reply();
		fmt_time((int64_t)e.created, c, sizeof(c));
		fmt_time((int64_t)e.next_expiry, x, sizeof(x));
		printf("%-24s %-8s %-8s %-6u %-20s %s\n", e.workspace,
		    e.revoked ? "revoked" : "live",
		    (e.flags & WS_ALLOW_NETWORK) ? "allowed" : "off",
		    e.live_tokens, c, x);
		imsg_free(&imsg);
	}
}

static int
cmd_set_quota(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "workspace",	required_argument, NULL, 'w' },
		{ "vms",	required_argument, NULL, 'n' },
		{ "memory",	required_argument, NULL, 'm' },
		{ "vcpus",	required_argument, NULL, 'c' },
		{ "storage",	required_argument, NULL, 's' },
		{ NULL,		0,		   NULL, 0 }
	};
	struct msg_ctl_quota_set	 m;
	struct ibuf			*b;
	enum limit_field		 f;
	const char			*opt;
	uint64_t			 v;
	uint32_t			 bit;
	char				 why[160];
	int				 ch;

	memset(&m, 0, sizeof(m));
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'w':
			m.workspace = optarg;
			continue;
		case 'n':
			f = LIMIT_VMS;
			bit = QUOTA_VMS;
			opt = "vms";
			break;
		case 'm':
			f = LIMIT_MEMORY;
			bit = QUOTA_MEMORY;
			opt = "memory";
			break;
		case 'c':
			f = LIMIT_VCPUS;
			bit = QUOTA_VCPUS;
			opt = "vcpus";
			break;
		case 's':
			f = LIMIT_STORAGE;
			bit = QUOTA_STORAGE;
			opt = "storage";
			break;
		default:
			cmd_usage(argv[0]);
		}
		if (limit_parse(f, optarg, &v, why, sizeof(why)) == -1)
			errx(2, "--%s: %s", opt, why);
		m.set |= bit;
		switch (f) {
		case LIMIT_VMS:
			m.vms = (uint32_t)v;
			break;
		case LIMIT_MEMORY:
			m.memory = v;
			break;
		case LIMIT_VCPUS:
			m.vcpus = (uint32_t)v;
			break;
		case LIMIT_STORAGE:
			m.storage = v;
			break;
		}
	}
	if (m.workspace == NULL || m.set == 0 || optind != argc)
		cmd_usage(argv[0]);
	if (!valid_workspace_name(m.workspace))
		errx(2, "invalid workspace name %s", m.workspace);
	ctl_connect();
	if ((b = imsg_create(&ibuf, IMSG_CTL_QUOTA_SET, 0, 0, 128)) != NULL)
		msg_ctl_quota_set_put(b, &m);
	ctl_request(b);
	return 0;
}

/* "42s", "5m07s", "3h12m", "2d04h". */
static void
fmt_uptime(uint64_t s, char *buf, size_t len)
{
	if (s == 0)
		(void)snprintf(buf, len, "-");
	else if (s < 60)
		(void)snprintf(buf, len, "%llus", (unsigned long long)s);
	else if (s < 3600)
		(void)snprintf(buf, len, "%llum%02llus",
		    (unsigned long long)(s / 60), (unsigned long long)(s % 60));
	else if (s < 86400)
		(void)snprintf(buf, len, "%lluh%02llum",
		    (unsigned long long)(s / 3600),
		    (unsigned long long)(s % 3600 / 60));
	else
		(void)snprintf(buf, len, "%llud%02lluh",
		    (unsigned long long)(s / 86400),
		    (unsigned long long)(s % 86400 / 3600));
}

/*
 * Asks for every VM; with id, prints nothing and returns whether that
 * VM is listed, its state in state.
 */
static int
vm_list(const char *id, char *state, size_t len)
{
	struct imsg		 imsg;
	struct msg_ctl_vm_entry	 e;
	char			 pid[16], up[32], mem[24];
	int			 found = 0;

	ctl_send(imsg_create(&ibuf, IMSG_CTL_VM_LIST, 0, 0, 0));
	if (id == NULL)
		printf("%-19s %-20s %-16s %-11s %-7s %-7s %-6s %-5s %s\n",
		    "ID", "NAME", "WORKSPACE", "STATE", "UID", "PID",
		    "MEMORY", "VCPUS", "UPTIME");
	for (;;) {
		ctl_recv(&imsg);
		if (imsg.hdr.type != IMSG_CTL_VM_ENTRY) {
			ctl_result(&imsg, 1);
			imsg_free(&imsg);
			return found;
		}
		if (msg_ctl_vm_entry_get(&imsg, &e) == -1)
			ctl_bad_reply();
		if (id != NULL) {
			if (strcmp(e.id, id) == 0) {
				(void)snprintf(state, len, "%s", e.state);
				found = 1;
			}
			imsg_free(&imsg);
			continue;
		}
		if (e.qemu_pid == 0)
			(void)snprintf(pid, sizeof(pid), "-");
		else
			(void)snprintf(pid, sizeof(pid), "%u", e.qemu_pid);
		fmt_uptime(e.uptime, up, sizeof(up));
		fmt_size((uint64_t)e.memory_mib << 20, mem, sizeof(mem));
		printf("%-19s %-20s %-16s %-11s %-7u %-7s %-6s %-5u %s\n", e.id,
		    e.name, e.workspace, e.state, e.uid, pid, mem, e.vcpus, up);
		imsg_free(&imsg);
	}
}

static int
cmd_list_vms(int argc, char **argv)
{
	if (argc != 1)
		cmd_usage(argv[0]);
	ctl_connect();
	(void)vm_list(NULL, NULL, 0);
	return 0;
}

/*
 * Waits for VM id to end what it began: gone (a destroy), or stopped
 * or failed (a stop).  Any other state than the operation's own means
 * it did not: a guest that did not power off in time runs on.
 */
static int
vm_wait(const char *id, int gone)
{
	struct timespec	 ts = { 0, CTL_WAIT_POLL_MS * 1000000L };
	char		 state[CTL_STATE_MAX + 1] = "";
	unsigned int	 i;

	for (i = 0; i < CTL_WAIT_SECS * 1000 / CTL_WAIT_POLL_MS; i++) {
		if (!vm_list(id, state, sizeof(state))) {
			if (gone)
				return 0;
			warnx("%s is gone", id);
			return 1;
		}
		if (!gone && (strcmp(state, "stopped") == 0 ||
		    strcmp(state, "failed") == 0)) {
			printf("%s is %s\n", id, state);
			return 0;
		}
		if (strcmp(state, gone ? "destroying" : "stopping") != 0) {
			warnx("%s is %s: the %s did not finish%s", id, state,
			    gone ? "destroy" : "stop", gone ? "" : " (its "
			    "guest did not power off in time: use stop-vm "
			    "--force)");
			return 1;
		}
		(void)nanosleep(&ts, NULL);
	}
	warnx("%s is still %s after %d s: see list-vms", id, state,
	    CTL_WAIT_SECS);
	return 1;
}

/*
 * Sends a stop, destroy or forget; returns once the VM is stopped or
 * gone.
 */
static int
vm_act(uint32_t type, const char *id, int force)
{
	struct msg_ctl_vm_stop		 st;
	struct msg_ctl_vm_destroy	 de;
	struct msg_ctl_vm_forget	 fo;
	struct ibuf			*b;

	if (!valid_id(id, VM_ID_PREFIX))
		errx(2, "invalid VM id %s: use an id list-vms shows", id);
	ctl_connect();
	if ((b = imsg_create(&ibuf, type, 0, 0, 64)) != NULL) {
		if (type == IMSG_CTL_VM_STOP) {
			st.id = id;
			st.force = force ? 1 : 0;
			msg_ctl_vm_stop_put(b, &st);
		} else if (type == IMSG_CTL_VM_FORGET) {
			fo.id = id;
			msg_ctl_vm_forget_put(b, &fo);
		} else {
			de.id = id;
			msg_ctl_vm_destroy_put(b, &de);
		}
	}
	ctl_request(b);
	return vm_wait(id, type != IMSG_CTL_VM_STOP);
}

static int
cmd_stop_vm(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "force",	no_argument,	NULL, 'f' },
		{ NULL,		0,		NULL, 0 }
	};
	int	 ch, force = 0;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'f':
			force = 1;
			break;
		default:
			cmd_usage(argv[0]);
		}
	}
	if (optind != argc - 1)
		cmd_usage(argv[0]);
	return vm_act(IMSG_CTL_VM_STOP, argv[optind], force);
}

static int
cmd_destroy_vm(int argc, char **argv)
{
	if (argc != 2)
		cmd_usage(argv[0]);
	return vm_act(IMSG_CTL_VM_DESTROY, argv[1], 0);
}

/*
 * A socket path for mcvmd, which runs elsewhere: absolute, a relative
 * one taken from the current directory (links are not resolved: mcvmd
 * refuses a link).
 */
static const char *
sock_path(const char *opt, const char *arg, char *buf, size_t len)
{
	char	 cwd[PATH_MAX];
	int	 n;

	if (arg[0] == '/')
		n = snprintf(buf, len, "%s", arg);
	else if (getcwd(cwd, sizeof(cwd)) == NULL)
		err(1, "getcwd");
	else
		n = snprintf(buf, len, "%s/%s", cwd, arg);
	if (n < 0 || (size_t)n >= len || n > CTL_SOCK_PATH_MAX)
		errx(2, "%s %s: a socket path is at most %d bytes", opt, arg,
		    CTL_SOCK_PATH_MAX);
	return buf;
}

static int
cmd_attach_vm(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "workspace",	required_argument,	NULL, 'w' },
		{ "name",	required_argument,	NULL, 'n' },
		{ "qmp",	required_argument,	NULL, 'q' },
		{ "qga",	required_argument,	NULL, 'g' },
		{ "pid",	required_argument,	NULL, 'p' },
		{ NULL,		0,			NULL, 0 }
	};
	struct msg_ctl_vm_attach	 m;
	struct ibuf			*b;
	char				 qmp[PATH_MAX], qga[PATH_MAX], *end;
	unsigned long			 pid;
	int				 ch;

	memset(&m, 0, sizeof(m));
	m.qga = "";
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'w':
			m.workspace = optarg;
			break;
		case 'n':
			m.name = optarg;
			break;
		case 'q':
			m.qmp = sock_path("--qmp", optarg, qmp, sizeof(qmp));
			break;
		case 'g':
			m.qga = sock_path("--qga", optarg, qga, sizeof(qga));
			break;
		case 'p':
			errno = 0;
			pid = strtoul(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || pid == 0 ||
			    pid > INT32_MAX)
				errx(2, "--pid %s: give QEMU's process id",
				    optarg);
			m.pid = (uint32_t)pid;
			break;
		default:
			cmd_usage(argv[0]);
		}
	}
	if (optind != argc || m.workspace == NULL || m.name == NULL ||
	    m.qmp == NULL)
		cmd_usage(argv[0]);
	if (!valid_workspace_name(m.workspace))
		errx(2, "invalid workspace name %s", m.workspace);
	if (!valid_object_name(m.name) || valid_id(m.name, VM_ID_PREFIX))
		errx(2, "invalid VM name %s: 1-%d letters, digits, '.', '_' "
		    "or '-', not the form of a VM id", m.name, OBJ_NAME_MAX);
	ctl_connect();
	reply_timeout_ms = CTL_ATTACH_TIMEOUT_MS;
	if ((b = imsg_create(&ibuf, IMSG_CTL_VM_ATTACH, 0, 0, 512)) != NULL)
		msg_ctl_vm_attach_put(b, &m);
	ctl_request(b);
	return 0;
}

static int
cmd_forget_vm(int argc, char **argv)
{
	if (argc != 2)
		cmd_usage(argv[0]);
	return vm_act(IMSG_CTL_VM_FORGET, argv[1], 0);
}

int
main(int argc, char *argv[])
{
	size_t	 i;
	int	 ch;

	while ((ch = getopt(argc, argv, "+hs:")) != -1) {
		switch (ch) {
		case 's':
			sockpath = optarg;
			break;
		case 'h':
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage();
	for (i = 0; i < NCMDS; i++) {
		if (strcmp(argv[0], cmds[i].name) == 0)
			return cmds[i].run(argc, argv);
	}
	warnx("unknown command %s", argv[0]);
	usage();
}
