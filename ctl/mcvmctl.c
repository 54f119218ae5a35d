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
#define CTL_CAPS_LISTED		8	/* more are summed up, not listed */

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

static const struct ctl_cmd cmds[] = {
	{ "status", "status", cmd_status },
	{ "issue-token", "issue-token --workspace name --output file "
	    "[--ttl duration] [--allow-network]", cmd_issue },
	{ "rotate-token", "rotate-token --workspace name --output file "
	    "[--ttl duration]", cmd_rotate },
	{ "revoke-workspace", "revoke-workspace name", cmd_revoke },
	{ "list-workspaces", "list-workspaces", cmd_list },
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
		if ((rc = poll(&pfd, 1, CTL_REPLY_TIMEOUT_MS)) == -1) {
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

static int
cmd_status(int argc, char **argv)
{
	struct imsg			 imsg;
	struct msg_ctl_status_note	 note;
	struct msg_ctl_status_proc	 p;
	char				 caps[512], ubuf[16];
	int				 down = 0, notes = 0;

	if (argc != 1)
		cmd_usage(argv[0]);
	ctl_connect();
	ctl_send(imsg_create(&ibuf, IMSG_CTL_STATUS, 0, 0, 0));
	printf("%-8s %-8s %-8s %-8s %-4s %-9s %-9s %s\n", "PROCESS", "STATE",
	    "PID", "UID", "NNP", "SECCOMP", "RESTARTS", "CAPABILITIES");
	for (;;) {
		ctl_recv(&imsg);
		if (imsg.hdr.type == IMSG_CTL_STATUS_NOTE) {
			if (msg_ctl_status_note_get(&imsg, &note) == -1)
				ctl_bad_reply();
			if (!notes++)
				printf("\n");
			print_note(note.topic, note.text);
			imsg_free(&imsg);
			continue;
		}
		if (imsg.hdr.type != IMSG_CTL_STATUS_PROC) {
			ctl_result(&imsg, 1);
			imsg_free(&imsg);
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
	struct msg_ctl_ws_revoke	 m;
	struct imsg			 imsg;
	struct ibuf			*b;

	if (argc != 2)
		cmd_usage(argv[0]);
	if (!valid_workspace_name(argv[1]))
		errx(2, "invalid workspace name %s", argv[1]);
	ctl_connect();
	m.workspace = argv[1];
	if ((b = imsg_create(&ibuf, IMSG_CTL_WS_REVOKE, 0, 0, 80)) != NULL)
		msg_ctl_ws_revoke_put(b, &m);
	ctl_send(b);
	ctl_recv(&imsg);
	(void)ctl_result(&imsg, 0);
	imsg_free(&imsg);
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
