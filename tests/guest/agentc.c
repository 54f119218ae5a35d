/*
 * Synchronous agent client for tests (see agentc.h).  Replies are decoded
 * with the same codec as the agent's; pointers in a decoded reply stay
 * valid until the next call.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agentc.h"

#define AC_HELLO_RETRY_MS	500

static uint64_t
ac_now(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int
ac_connect(struct agentc *ac, const char *path)
{
	struct sockaddr_un	 sun;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sun.sun_path, path);
	if ((ac->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (connect(ac->fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		close(ac->fd);
		ac->fd = -1;
		return -1;
	}
	ac->rx_len = 0;
	if (ac->next_id == 0)
		ac->next_id = 1;
	return 0;
}

void
ac_close(struct agentc *ac)
{
	if (ac->fd != -1)
		close(ac->fd);
	ac->fd = -1;
	ac->rx_len = 0;
}

int
ac_send_raw(struct agentc *ac, const void *p, size_t n)
{
	const uint8_t	*b = p;
	ssize_t		 w;

	while (n > 0) {
		w = send(ac->fd, b, n, MSG_NOSIGNAL);
		if (w == -1 && errno == EINTR)
			continue;
		if (w == -1)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Gives the message the next id and sends it. */
int
ac_send(struct agentc *ac, struct agent_msg *m)
{
	int	 n;

	m->id = ac->next_id++;
	if ((n = agent_encode(m, ac->tx, sizeof(ac->tx))) == -1)
		return -1;
	return ac_send_raw(ac, ac->tx, (size_t)n);
}

/*
 * Waits for the reply to request id (other replies are dropped: they
 * answer requests given up on).  Returns 0, or -1 with errno ETIMEDOUT,
 * EBADMSG (a malformed frame: the connection is unusable) or EPIPE.
 */
int
ac_recv(struct agentc *ac, uint32_t id, struct agent_msg *m, int timeout_ms)
{
	struct agent_hdr hdr;
	struct pollfd	 pfd;
	uint64_t	 deadline = ac_now() + (uint64_t)timeout_ms, now;
	ssize_t		 n;
	int		 rv;

	for (;;) {
		rv = agent_frame_check(ac->rx, ac->rx_len, &hdr);
		if (rv == -1) {
			errno = EBADMSG;
			return -1;
		}
		if (rv > 0) {
			memcpy(ac->cur, ac->rx, (size_t)rv);
			memmove(ac->rx, ac->rx + rv, ac->rx_len - (size_t)rv);
			ac->rx_len -= (size_t)rv;
			if (agent_decode(&hdr, ac->cur + AGENT_HDR_LEN, m) ==
			    -1) {
				errno = EBADMSG;
				return -1;
			}
			if (hdr.id == id)
				return 0;
			continue;
		}
		now = ac_now();
		if (now >= deadline) {
			errno = ETIMEDOUT;
			return -1;
		}
		pfd.fd = ac->fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, (int)(deadline - now)) == -1 &&
		    errno != EINTR)
			return -1;
		if (!(pfd.revents & (POLLIN | POLLHUP)))
			continue;
		n = recv(ac->fd, ac->rx + ac->rx_len,
		    sizeof(ac->rx) - ac->rx_len, 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			errno = EPIPE;
			return -1;
		}
		ac->rx_len += (size_t)n;
	}
}

int
ac_call(struct agentc *ac, struct agent_msg *req, struct agent_msg *rep,
    int timeout_ms)
{
	if (ac_send(ac, req) == -1)
		return -1;
	return ac_recv(ac, req->id, rep, timeout_ms);
}

/*
 * Opens a session, resending HELLO until the agent answers (it may still
 * be booting).  Returns 0 or -1.
 */
int
ac_hello(struct agentc *ac, int version, int timeout_ms)
{
	struct agent_msg req, rep;
	uint64_t	 deadline = ac_now() + (uint64_t)timeout_ms;
	for (;;) {
		memset(&req, 0, sizeof(req));
		req.type = AGENT_HELLO;
		req.u.hello.version = (uint32_t)version;
		if (ac_send(ac, &req) == -1)
			return -1;
		if (ac_recv(ac, req.id, &rep, AC_HELLO_RETRY_MS) == 0)
			break;
		if (errno != ETIMEDOUT || ac_now() >= deadline)
			return -1;
	}
	if (rep.type != (AGENT_REPLY | AGENT_HELLO)) {
		errno = EPROTO;
		return -1;
	}
	return 0;
}
