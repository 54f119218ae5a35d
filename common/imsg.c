/*
 * imsg-style framing: see imsg.h.
 */
#include <sys/socket.h>
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "imsg.h"
#include "msg.h"

int
imsgbuf_init(struct imsgbuf *ib, int fd)
{
	memset(ib, 0, sizeof(*ib));
	if ((ib->rbuf = malloc(IMSG_MAX_SIZE)) == NULL)
		return -1;
	ib->fd = fd;
	ib->pid = getpid();
	TAILQ_INIT(&ib->wq);
	return 0;
}

static void
ibuf_free(struct ibuf *b)
{
	if (b == NULL)
		return;
	if (b->fd != -1)
		close(b->fd);
	free(b->buf);
	free(b);
}

/* Frees both queues and closes queued fds; the socket itself stays open. */
void
imsgbuf_clear(struct imsgbuf *ib)
{
	struct ibuf	*b;
	size_t		 i;

	while ((b = TAILQ_FIRST(&ib->wq)) != NULL) {
		TAILQ_REMOVE(&ib->wq, b, entry);
		ibuf_free(b);
	}
	ib->wqlen = 0;
	for (i = 0; i < ib->nfdq; i++)
		close(ib->fdq[i]);
	ib->nfdq = 0;
	free(ib->rbuf);
	ib->rbuf = NULL;
	ib->rlen = 0;
}

/*
 * Reads what the socket has.  Returns the byte count, 0 on EOF, or -1 with
 * errno set (EAGAIN when nothing was ready, EBADMSG when descriptors were
 * lost or too many arrived).
 */
ssize_t
imsgbuf_read(struct imsgbuf *ib)
{
	union {
		struct cmsghdr	 hdr;
		char		 buf[CMSG_SPACE(sizeof(int) * IMSG_MAX_FDQ)];
	} cmsgbuf;
	struct msghdr	 msg;
	struct iovec	 iov;
	struct cmsghdr	*cmsg;
	ssize_t		 n;
	size_t		 nfds, i;
	int		*fds;

	if (ib->rlen >= IMSG_MAX_SIZE) {
		errno = EBADMSG;
		return -1;
	}
	memset(&msg, 0, sizeof(msg));
	memset(&cmsgbuf, 0, sizeof(cmsgbuf));
	iov.iov_base = ib->rbuf + ib->rlen;
	iov.iov_len = IMSG_MAX_SIZE - ib->rlen;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = &cmsgbuf.buf;
	msg.msg_controllen = sizeof(cmsgbuf.buf);

	do {
		n = recvmsg(ib->fd, &msg, MSG_CMSG_CLOEXEC);
	} while (n == -1 && errno == EINTR);
	if (n == -1)
		return -1;

	for (cmsg = CMSG_FIRSTHDR(&msg); cmsg != NULL;
	    cmsg = CMSG_NXTHDR(&msg, cmsg)) {
		if (cmsg->cmsg_level != SOL_SOCKET ||
		    cmsg->cmsg_type != SCM_RIGHTS)
			continue;
		nfds = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		fds = (int *)CMSG_DATA(cmsg);
		for (i = 0; i < nfds; i++) {
			if (ib->nfdq == IMSG_MAX_FDQ) {
				close(fds[i]);
				errno = EBADMSG;
				n = -1;
				continue;
			}
			ib->fdq[ib->nfdq++] = fds[i];
		}
	}
	if (n != -1 && (msg.msg_flags & MSG_CTRUNC)) {
		errno = EBADMSG;
		return -1;
	}
	if (n > 0)
		ib->rlen += (size_t)n;
	return n;
}

/*
 * Takes one complete message off the read buffer.  Returns 1 with *imsg
 * filled, 0 when more bytes are needed, -1 with errno EBADMSG when the
 * header is impossible or a promised descriptor is missing.
 */
int
imsg_get(struct imsgbuf *ib, struct imsg *imsg)
{
	struct imsg_hdr	 hdr;
	size_t		 datalen;

	memset(imsg, 0, sizeof(*imsg));
	imsg->fd = -1;
	if (ib->rlen < IMSG_HDR_SIZE)
		return 0;
	hdr.type = le32_get(ib->rbuf);
	hdr.len = le32_get(ib->rbuf + 4);
	hdr.flags = le32_get(ib->rbuf + 8);
	hdr.peerid = le32_get(ib->rbuf + 12);
	hdr.pid = le32_get(ib->rbuf + 16);
	if (hdr.len < IMSG_HDR_SIZE || hdr.len > IMSG_MAX_SIZE ||
	    (hdr.flags & ~(uint32_t)IMSGF_HASFD) != 0) {
		errno = EBADMSG;
		return -1;
	}
	if (ib->rlen < hdr.len)
		return 0;
	datalen = hdr.len - IMSG_HDR_SIZE;
	if (hdr.flags & IMSGF_HASFD) {
		if (ib->nfdq == 0) {
			errno = EBADMSG;
			return -1;
		}
		imsg->fd = ib->fdq[0];
		ib->nfdq--;
		memmove(ib->fdq, ib->fdq + 1, ib->nfdq * sizeof(int));
	}
	if (datalen > 0) {
		if ((imsg->data = malloc(datalen)) == NULL) {
			if (imsg->fd != -1)
				close(imsg->fd);
			imsg->fd = -1;
			return -1;
		}
		memcpy(imsg->data, ib->rbuf + IMSG_HDR_SIZE, datalen);
	}
	imsg->hdr = hdr;
	imsg->datalen = datalen;
	ib->rlen -= hdr.len;
	memmove(ib->rbuf, ib->rbuf + hdr.len, ib->rlen);
	return 1;
}

/* Hands the message's descriptor to the caller, who must close it. */
int
imsg_get_fd(struct imsg *imsg)
{
	int	 fd = imsg->fd;

	imsg->fd = -1;
	return fd;
}

void
imsg_free(struct imsg *imsg)
{
	if (imsg->fd != -1)
		close(imsg->fd);
	imsg->fd = -1;
	free(imsg->data);
	imsg->data = NULL;
	imsg->datalen = 0;
}

struct ibuf *
imsg_create(struct imsgbuf *ib, uint32_t type, uint32_t peerid, uint32_t pid,
    size_t hint)
{
	struct ibuf	*b;
	uint8_t		 hdr[IMSG_HDR_SIZE];

	(void)ib;
	if (hint > IMSG_MAX_PAYLOAD)
		hint = IMSG_MAX_PAYLOAD;
	if ((b = calloc(1, sizeof(*b))) == NULL)
		return NULL;
	b->cap = IMSG_HDR_SIZE + (hint > 0 ? hint : 64);
	if ((b->buf = malloc(b->cap)) == NULL) {
		free(b);
		return NULL;
	}
	b->fd = -1;
	le32_put(hdr, type);
	le32_put(hdr + 4, 0);
	le32_put(hdr + 8, 0);
	le32_put(hdr + 12, peerid);
	le32_put(hdr + 16, pid);
	memcpy(b->buf, hdr, sizeof(hdr));
	b->size = IMSG_HDR_SIZE;
	return b;
}

/* Appends payload bytes; a failure is remembered and reported by close. */
void
imsg_add(struct ibuf *b, const void *data, size_t len)
{
	uint8_t	*nbuf;
	size_t	 ncap;

	if (b->err)
		return;
	if (len > IMSG_MAX_SIZE - b->size) {
		b->err = EMSGSIZE;
		return;
	}
	if (b->size + len > b->cap) {
		ncap = b->cap;
		while (ncap < b->size + len)
			ncap *= 2;
		if (ncap > IMSG_MAX_SIZE)
			ncap = IMSG_MAX_SIZE;
		if ((nbuf = realloc(b->buf, ncap)) == NULL) {
			b->err = ENOMEM;
			return;
		}
		b->buf = nbuf;
		b->cap = ncap;
	}
	if (len > 0)
		memcpy(b->buf + b->size, data, len);
	b->size += len;
}

/* The message takes ownership of fd. */
void
imsg_set_fd(struct ibuf *b, int fd)
{
	if (b->fd != -1) {
		close(fd);
		b->err = EBADF;
		return;
	}
	b->fd = fd;
}

/* Queues a built message; on any earlier builder error, drops it. */
int
imsg_close(struct imsgbuf *ib, struct ibuf *b)
{
	if (b->err) {
		errno = b->err;
		ibuf_free(b);
		return -1;
	}
	le32_put(b->buf + 4, (uint32_t)b->size);
	le32_put(b->buf + 8, b->fd != -1 ? IMSGF_HASFD : 0);
	TAILQ_INSERT_TAIL(&ib->wq, b, entry);
	ib->wqlen++;
	return 0;
}

/* Drops a message that was built but will not be sent. */
void
imsg_discard(struct ibuf *b)
{
	ibuf_free(b);
}

int
imsg_compose(struct imsgbuf *ib, uint32_t type, uint32_t peerid,
    uint32_t pid, int fd, const void *data, size_t len)
{
	struct ibuf	*b;

	if ((b = imsg_create(ib, type, peerid, pid, len)) == NULL) {
		if (fd != -1)
			close(fd);
		return -1;
	}
	imsg_add(b, data, len);
	if (fd != -1)
		imsg_set_fd(b, fd);
	return imsg_close(ib, b);
}

/*
 * Sends queued messages until the queue is empty or the socket is full.
 * Returns 0 (EAGAIN is not an error) or -1 with errno set.
 */
int
imsgbuf_write(struct imsgbuf *ib)
{
	union {
		struct cmsghdr	 hdr;
		char		 buf[CMSG_SPACE(sizeof(int))];
	} cmsgbuf;
	struct msghdr	 msg;
	struct iovec	 iov;
	struct cmsghdr	*cmsg;
	struct ibuf	*b;
	ssize_t		 n;

	while ((b = TAILQ_FIRST(&ib->wq)) != NULL) {
		memset(&msg, 0, sizeof(msg));
		iov.iov_base = b->buf + b->rpos;
		iov.iov_len = b->size - b->rpos;
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		if (b->rpos == 0 && b->fd != -1) {
			memset(&cmsgbuf, 0, sizeof(cmsgbuf));
			msg.msg_control = &cmsgbuf.buf;
			msg.msg_controllen = sizeof(cmsgbuf.buf);
			cmsg = CMSG_FIRSTHDR(&msg);
			cmsg->cmsg_len = CMSG_LEN(sizeof(int));
			cmsg->cmsg_level = SOL_SOCKET;
			cmsg->cmsg_type = SCM_RIGHTS;
			memcpy(CMSG_DATA(cmsg), &b->fd, sizeof(int));
		}
		do {
			n = sendmsg(ib->fd, &msg, MSG_NOSIGNAL);
		} while (n == -1 && errno == EINTR);
		if (n == -1)
			return (errno == EAGAIN || errno == ENOBUFS) ? 0 : -1;
		if (b->rpos == 0 && b->fd != -1) {
			close(b->fd);
			b->fd = -1;
		}
		b->rpos += (size_t)n;
		if (b->rpos < b->size)
			return 0;
		TAILQ_REMOVE(&ib->wq, b, entry);
		ib->wqlen--;
		ibuf_free(b);
	}
	return 0;
}

/* Blocks until every queued message has been sent. */
int
imsgbuf_flush(struct imsgbuf *ib)
{
	struct pollfd	 pfd;

	while (ib->wqlen > 0) {
		if (imsgbuf_write(ib) == -1)
			return -1;
		if (ib->wqlen == 0)
			break;
		pfd.fd = ib->fd;
		pfd.events = POLLOUT;
		if (poll(&pfd, 1, -1) == -1 && errno != EINTR)
			return -1;
	}
	return 0;
}
