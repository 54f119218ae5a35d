/*
 * The agent port: the virtio-serial port org.mcvm.agent.0, read into and
 * written from channel.c's buffers.
 *
 * The port stays open for the life of the agent.  While no host is
 * connected the kernel reports POLLHUP continuously, so after a hangup the
 * port is left out of poll for GUESTD_PORT_RETRY_MS.  Every hangup starts
 * a new session.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "guestd.h"
#include "rdfile.h"

#define VPORT_SYSFS	"/sys/class/virtio-ports"

static int		 port_fd = -1;
static uint64_t		 port_retry_at;	/* 0: port is polled */

/* Finds the port by name; returns its fd or -1. */
int
port_open(void)
{
	char		 path[PATH_MAX], name[64];
	struct dirent	*de;
	DIR		*d;

	if ((d = opendir(VPORT_SYSFS)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), VPORT_SYSFS "/%s/name",
		    de->d_name);
		if (read_small_file(path, name, sizeof(name)) == -1)
			continue;
		name[strcspn(name, "\n")] = '\0';
		if (strcmp(name, AGENT_PORT_NAME) != 0)
			continue;
		snprintf(path, sizeof(path), "/dev/%s", de->d_name);
		closedir(d);
		port_fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC |
		    O_NOCTTY);
		if (port_fd == -1)
			glog("open %s: %s", path, strerror(errno));
		return port_fd;
	}
	closedir(d);
	errno = ENOENT;
	return -1;
}

/*
 * Fills in the port's pollfd; returns 0 if the port is not to be polled
 * now.
 */
int
port_pollfd(struct pollfd *pfd, uint64_t now)
{
	uint8_t	*p;

	if (port_fd == -1)
		return 0;
	if (port_retry_at != 0) {
		if (now < port_retry_at)
			return 0;
		port_retry_at = 0;
	}
	pfd->fd = port_fd;
	pfd->events = 0;
	if (chan_in_room(&p) > 0)
		pfd->events |= POLLIN;
	if (chan_out((const uint8_t **)&p) > 0)
		pfd->events |= POLLOUT;
	return 1;
}

uint64_t
port_retry_at_ms(void)
{
	return port_retry_at;
}

static int
flush_some(void)
{
	const uint8_t	*p;
	size_t		 len;
	ssize_t		 n;

	while ((len = chan_out(&p)) > 0) {
		n = write(port_fd, p, len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return errno == EAGAIN ? 0 : -1;
		chan_out_done((size_t)n);
	}
	return 0;
}

static void
hangup(uint64_t now)
{
	if (chan_in_pending())
		glog("host side of the agent port closed");
	chan_reset();
	port_retry_at = now + GUESTD_PORT_RETRY_MS;
}

void
port_event(short revents, uint64_t now)
{
	const uint8_t	*q;
	uint8_t		*p;
	size_t		 room;
	ssize_t		 n;

	if ((revents & POLLIN) && (room = chan_in_room(&p)) > 0) {
		n = read(port_fd, p, room);
		if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR)) {
			hangup(now);
			return;
		}
		if (n > 0)
			chan_input((size_t)n, now);
	}
	if (revents & (POLLHUP | POLLERR)) {
		hangup(now);
		return;
	}
	if (chan_out(&q) > 0 && flush_some() == -1)
		hangup(now);
	/* A full reply queue may have held requests back. */
	chan_resume(now);
}

/* Sends what was answered meanwhile (the waiting reads), now. */
void
port_send(uint64_t now)
{
	if (port_fd != -1 && flush_some() == -1)
		hangup(now);
}

/* Writes out queued replies, waiting up to timeout_ms. */
void
port_flush(int timeout_ms)
{
	const uint8_t	*p;
	struct pollfd	 pfd;
	uint64_t	 deadline = now_ms() + (uint64_t)timeout_ms;

	while (port_fd != -1 && chan_out(&p) > 0 && now_ms() < deadline) {
		if (flush_some() == -1)
			return;
		if (chan_out(&p) == 0)
			return;
		pfd.fd = port_fd;
		pfd.events = POLLOUT;
		if (poll(&pfd, 1, (int)(deadline - now_ms())) <= 0 ||
		    (pfd.revents & (POLLHUP | POLLERR)))
			return;
	}
}

/*
 * Blocks until the host writes a line on the port, reading it a byte at a
 * time so that what follows it stays for the session.  The host side may
 * come and go meanwhile (a checkpoint is taken, a restored VM's monitor
 * connects): a hangup is waited out.
 */
int
port_hold(void)
{
	struct timespec	 step = { 0, GUESTD_PORT_RETRY_MS * 1000000L };
	struct pollfd	 pfd;
	ssize_t		 n;
	char		 c;

	if (port_fd == -1)
		return -1;
	for (;;) {
		pfd.fd = port_fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, -1) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		n = read(port_fd, &c, 1);
		if (n == 1 && c == '\n')
			return 0;
		if (n == 1 || (n == -1 && (errno == EAGAIN || errno == EINTR)))
			continue;
		if (n == -1 && errno != EPIPE && errno != ENOTCONN)
			return -1;
		nanosleep(&step, NULL);		/* no host side just now */
	}
}
