/*
 * The control socket: mcvmctl's way in.  Mode 0600 (0660 with a configured
 * group).  Each connection's peer is identified by SO_PEERCRED: root, or a
 * member of the control group, is served; anyone else is told so and
 * dropped.  A malformed request costs its connection only.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hash.h"
#include "log.h"
#include "mcvmd.h"
#include "msg_ctl.h"
#include "vm.h"

#define CONTROL_BACKLOG		8
#define CONTROL_MSG_MAX		512
#define CONTROL_PEERGROUPS_MAX	64

struct ctl_conn {
	struct imsgev	 iev;
	uid_t		 uid;
	pid_t		 pid;
	int		 closing;	/* drop once the queue is flushed */
	int		 live;
};

static struct ctl_conn	 conns[CONTROL_MAX_CLIENTS];
static struct event	 ev_accept;
static int		 control_fd = -1;
static gid_t		 control_gid;
static int		 control_has_group;

static void	 control_accept(int, short, void *);
static void	 control_dispatch(int, short, void *);
static void	 control_close(struct ctl_conn *);
static void	 control_status_note(const char *, const char *, void *);

/*
 * Creates the socket.  A stale socket from an earlier run is replaced; any
 * other kind of file in its place is left alone and refused.
 */
int
control_init(const struct mcvm_config *conf)
{
	struct sockaddr_un	 sun;
	struct stat		 st;
	struct group		*gr;
	mode_t			 old;
	int			 fd;

	if (conf->control_group[0] != '\0') {
		if ((gr = getgrnam(conf->control_group)) == NULL) {
			log_warnx("control: unknown group %s",
			    conf->control_group);
			return -1;
		}
		control_gid = gr->gr_gid;
		control_has_group = 1;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	(void)snprintf(sun.sun_path, sizeof(sun.sun_path), "%s",
	    conf->control_sock);

	if (lstat(conf->control_sock, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			log_warnx("control: %s exists and is not a socket",
			    conf->control_sock);
			return -1;
		}
		if (unlink(conf->control_sock) == -1) {
			log_warn("control: unlink %s", conf->control_sock);
			return -1;
		}
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1) {
		log_warn("control: socket");
		return -1;
	}
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		umask(old);
		log_warn("control: bind %s", conf->control_sock);
		close(fd);
		return -1;
	}
	umask(old);
	if (control_has_group && (chown(conf->control_sock, 0,
	    control_gid) == -1 || chmod(conf->control_sock, 0660) == -1)) {
		log_warn("control: %s", conf->control_sock);
		(void)unlink(conf->control_sock);
		close(fd);
		return -1;
	}
	if (listen(fd, CONTROL_BACKLOG) == -1) {
		log_warn("control: listen");
		(void)unlink(conf->control_sock);
		close(fd);
		return -1;
	}
	control_fd = fd;
	return 0;
}

void
control_listen(void)
{
	event_set(&ev_accept, control_fd, EV_READ | EV_PERSIST,
	    control_accept, NULL);
	event_add(&ev_accept, NULL);
}

void
control_cleanup(const struct mcvm_config *conf)
{
	size_t	 i;

	for (i = 0; i < CONTROL_MAX_CLIENTS; i++)
		if (conns[i].live)
			control_close(&conns[i]);
	if (control_fd != -1) {
		event_del(&ev_accept);
		close(control_fd);
		control_fd = -1;
		(void)unlink(conf->control_sock);
	}
}

/* Root always; a member of the control group when one is configured. */
static int
control_peer_allowed(int fd, const struct ucred *cred)
{
	gid_t		 groups[CONTROL_PEERGROUPS_MAX];
	socklen_t	 len = sizeof(groups);
	size_t		 i;

	if (cred->uid == 0)
		return 1;
	if (!control_has_group)
		return 0;
	if (cred->gid == control_gid)
		return 1;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == -1)
		return 0;
	for (i = 0; i < len / sizeof(gid_t); i++)
		if (groups[i] == control_gid)
			return 1;
	return 0;
}

/* IMSG_CTL_OK or CTL_FAIL with text, or CTL_END (text unused). */
static void
control_reply(struct ctl_conn *c, uint32_t type, uint32_t peerid,
    const char *text)
{
	struct msg_ctl_ok	 ok;
	struct msg_ctl_fail	 fail;
	struct ibuf		*b;

	if ((b = imsg_create(&c->iev.ibuf, type, peerid, 0,
	    strlen(text) + 8)) == NULL)
		goto fail;
	if (type == IMSG_CTL_OK) {
		ok.message = text;
		msg_ctl_ok_put(b, &ok);
	} else if (type == IMSG_CTL_FAIL) {
		fail.message = text;
		msg_ctl_fail_put(b, &fail);
	}
	if (imsgev_close(&c->iev, b) == 0)
		return;
fail:
	log_warn("control: reply");
	c->closing = 1;
}

static void
control_accept(int lfd, short event, void *arg)
{
	struct ucred	 cred;
	socklen_t	 len = sizeof(cred);
	struct ctl_conn	*c = NULL;
	size_t		 i;
	int		 fd;

	if ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) ==
	    -1) {
		if (errno != EAGAIN && errno != EINTR &&
		    errno != ECONNABORTED)
			log_warn("control: accept");
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1) {
		log_warn("control: SO_PEERCRED");
		close(fd);
		return;
	}
	for (i = 0; i < CONTROL_MAX_CLIENTS; i++) {
		if (!conns[i].live) {
			c = &conns[i];
			break;
		}
	}
	if (c == NULL) {
		log_warnx("control: too many clients, dropping uid %u",
		    (unsigned int)cred.uid);
		close(fd);
		return;
	}
	memset(c, 0, sizeof(*c));
	if (imsgev_init(&c->iev, fd, "control", control_dispatch, c) == -1) {
		log_warn("control: client");
		close(fd);
		return;
	}
	c->live = 1;
	c->uid = cred.uid;
	c->pid = cred.pid;
	if (!control_peer_allowed(fd, &cred)) {
		log_warnx("control: uid %u (pid %d) refused",
		    (unsigned int)cred.uid, (int)cred.pid);
		control_reply(c, IMSG_CTL_FAIL, 0, "permission denied");
		c->closing = 1;
	}
}

static void
control_close(struct ctl_conn *c)
{
	int	 fd = c->iev.ibuf.fd;

	imsgev_clear(&c->iev);
	close(fd);
	c->live = 0;
}

/* One line of /proc/PID/status, e.g. "CapEff:\t0000...". */
static int
proc_status_field(const char *text, const char *key, char *out,
    size_t outlen)
{
	const char	*p = text, *eol;
	size_t		 klen = strlen(key), n;

	while (p != NULL && *p != '\0') {
		if (strncmp(p, key, klen) == 0 && p[klen] == ':') {
			p += klen + 1;
			p += strspn(p, " \t");
			eol = strchr(p, '\n');
			n = eol != NULL ? (size_t)(eol - p) : strlen(p);
			if (n >= outlen)
				return -1;
			memcpy(out, p, n);
			out[n] = '\0';
			return 0;
		}
		if ((p = strchr(p, '\n')) != NULL)
			p++;
	}
	return -1;
}

static void
control_status_proc(struct ctl_conn *c, uint32_t peerid, const char *title,
    pid_t pid, unsigned int restarts, const char *state)
{
	struct msg_ctl_status_proc	 m;
	char				 path[64], text[4096], val[128];
	struct ibuf			*b;
	uint64_t			 capeff = 0, capprm = 0;
	uint32_t			 uid = UINT32_MAX, seccomp = 0, nnp = 0;
	ssize_t				 n = -1;
	int				 fd;

	if (pid > 0) {
		(void)snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) != -1) {
			n = read(fd, text, sizeof(text) - 1);
			close(fd);
		}
	}
	if (n > 0) {
		text[n] = '\0';
		if (proc_status_field(text, "Uid", val, sizeof(val)) == 0)
			uid = (uint32_t)strtoul(val, NULL, 10);
		if (proc_status_field(text, "CapEff", val, sizeof(val)) == 0)
			capeff = strtoull(val, NULL, 16);
		if (proc_status_field(text, "CapPrm", val, sizeof(val)) == 0)
			capprm = strtoull(val, NULL, 16);
		if (proc_status_field(text, "Seccomp", val, sizeof(val)) == 0)
			seccomp = (uint32_t)strtoul(val, NULL, 10);
		if (proc_status_field(text, "NoNewPrivs", val,
		    sizeof(val)) == 0)
			nnp = (uint32_t)strtoul(val, NULL, 10);
	} else {
		pid = 0;
		state = "down";
	}
	if ((b = imsg_create(&c->iev.ibuf, IMSG_CTL_STATUS_PROC, peerid, 0,
	    128)) == NULL) {
		c->closing = 1;
		return;
	}
	m.title = title;
	m.pid = (uint32_t)pid;
	m.uid = uid;
	m.capeff = capeff;
	m.capprm = capprm;
	m.seccomp = seccomp;
	m.nonewprivs = nnp;
	m.restarts = restarts;
	m.state = state;
	msg_ctl_status_proc_put(b, &m);
	if (imsgev_close(&c->iev, b) == -1)
		c->closing = 1;
}

static void
control_status(struct ctl_conn *c, uint32_t peerid)
{
	static const char *const states[] = {
		[CHILD_DOWN] = "down",
		[CHILD_STARTING] = "starting",
		[CHILD_RUNNING] = "running",
	};
	struct child	*ch;
	int		 id;

	control_status_proc(c, peerid, proc_table[PROC_PARENT].title,
	    getpid(), 0, "running");
	for (id = PROC_PARENT + 1; id < PROC_MAX; id++) {
		ch = child_by_id(id);
		control_status_proc(c, peerid, ch->desc->title, ch->pid,
		    ch->restarts, states[ch->state]);
	}
	vm_status_notes(control_status_note, c);
	control_reply(c, IMSG_CTL_END, peerid, "");
}

static void
control_status_note(const char *topic, const char *text, void *arg)
{
	struct msg_ctl_status_note	 m;
	struct ctl_conn			*c = arg;
	struct ibuf			*b;

	m.topic = topic;
	m.text = text;
	if ((b = imsg_create(&c->iev.ibuf, IMSG_CTL_STATUS_NOTE, 0, 0,
	    strlen(topic) + strlen(text) + 16)) == NULL) {
		c->closing = 1;
		return;
	}
	msg_ctl_status_note_put(b, &m);
	if (imsgev_close(&c->iev, b) == -1)
		c->closing = 1;
}

static int
control_ws_entry(const struct ws_entry *e, void *arg)
{
	struct msg_ctl_ws_entry	 m;
	struct ctl_conn		*c = arg;
	struct ibuf		*b;

	m.workspace = e->name;
	m.flags = e->flags;
	m.created = (uint64_t)e->created;
	m.revoked = (uint64_t)e->revoked;
	m.live_tokens = e->live_tokens;
	m.next_expiry = (uint64_t)e->next_expiry;
	if ((b = imsg_create(&c->iev.ibuf, IMSG_CTL_WS_ENTRY, 0, 0,
	    128)) == NULL)
		return -1;
	msg_ctl_ws_entry_put(b, &m);
	return imsgev_close(&c->iev, b);
}

/* Returns -1 when the request was malformed. */
static int
control_request(struct ctl_conn *c, struct imsg *imsg)
{
	struct msg_ctl_token_issue	 ti;
	struct msg_ctl_ws_revoke	 wr;
	const char			*ws;
	uint32_t			 id = imsg->hdr.peerid;
	char				 msg[CONTROL_MSG_MAX];
	int				 rc;

	switch (imsg->hdr.type) {
	case IMSG_CTL_STATUS:
		if (msg_ctl_status_get(imsg) == -1)
			return -1;
		control_status(c, id);
		return 0;
	case IMSG_CTL_TOKEN_ISSUE:
		if (msg_ctl_token_issue_get(imsg, &ti) == -1)
			return -1;
		ws = ti.workspace;
		if (!valid_workspace_name(ws)) {
			control_reply(c, IMSG_CTL_FAIL, id,
			    "invalid workspace name");
			return 0;
		}
		if (ti.ttl > TOKEN_TTL_MAX ||
		    (ti.flags & ~WS_ALLOW_NETWORK) != 0 || ti.rotate > 1) {
			control_reply(c, IMSG_CTL_FAIL, id,
			    "invalid ttl or flags");
			return 0;
		}
		rc = state_token_issue(ws, ti.hash, ti.ttl, ti.flags,
		    (int)ti.rotate, c->uid, msg, sizeof(msg));
		if (rc == 0)
			log_info("control: uid %u: %s", (unsigned int)c->uid,
			    msg);
		control_reply(c, rc == 0 ? IMSG_CTL_OK : IMSG_CTL_FAIL, id,
		    rc == -1 ? "state database error" : msg);
		return 0;
	case IMSG_CTL_WS_REVOKE:
		if (msg_ctl_ws_revoke_get(imsg, &wr) == -1)
			return -1;
		ws = wr.workspace;
		if (!valid_workspace_name(ws)) {
			control_reply(c, IMSG_CTL_FAIL, id,
			    "invalid workspace name");
			return 0;
		}
		rc = state_ws_revoke(ws, c->uid, msg, sizeof(msg));
		if (rc == 0)
			log_info("control: uid %u: %s", (unsigned int)c->uid,
			    msg);
		control_reply(c, rc == 0 ? IMSG_CTL_OK : IMSG_CTL_FAIL, id,
		    rc == -1 ? "state database error" : msg);
		return 0;
	case IMSG_CTL_WS_LIST:
		if (msg_ctl_ws_list_get(imsg) == -1)
			return -1;
		if (state_ws_list(control_ws_entry, c) == -1)
			control_reply(c, IMSG_CTL_FAIL, id,
			    "state database error");
		else
			control_reply(c, IMSG_CTL_END, id, "");
		return 0;
	default:
		return -1;
	}
}

static void
control_dispatch(int fd, short event, void *arg)
{
	struct imsgev	*iev = arg;
	struct ctl_conn	*c = iev->data;
	struct imsg	 imsg;
	int		 n;

	if (imsgev_read(iev, event) == -1) {
		control_close(c);
		return;
	}
	while (!c->closing) {
		if ((n = imsg_get(&iev->ibuf, &imsg)) == -1) {
			log_warnx("control: uid %u: bad framing, dropped",
			    (unsigned int)c->uid);
			control_close(c);
			return;
		}
		if (n == 0)
			break;
		if (control_request(c, &imsg) == -1) {
			log_warnx("control: uid %u: malformed %s, dropped",
			    (unsigned int)c->uid,
			    imsg_type_name(imsg.hdr.type));
			control_reply(c, IMSG_CTL_FAIL, imsg.hdr.peerid,
			    "malformed request");
			c->closing = 1;
		}
		imsg_free(&imsg);
	}
	if (c->closing && iev->ibuf.wqlen == 0)
		control_close(c);
}
