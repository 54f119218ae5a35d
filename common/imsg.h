/*
 * imsg-style framing over SOCK_STREAM unix sockets.
 *
 * Every message starts with a fixed header; the length in the header covers
 * header and payload, and a receiver consumes exactly that many bytes.  One
 * file descriptor may travel with a message (SCM_RIGHTS); it is sent with the
 * first byte of its message, so it has always arrived by the time the
 * message is complete.
 */
#ifndef MCVM_IMSG_H
#define MCVM_IMSG_H

#include <sys/queue.h>
#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>

#define IMSG_HDR_SIZE		20
#define IMSG_MAX_PAYLOAD	(320 * 1024)
#define IMSG_MAX_SIZE		(IMSG_HDR_SIZE + IMSG_MAX_PAYLOAD)
#define IMSG_MAX_FDQ		16	/* received fds waiting for their message */

#define IMSGF_HASFD		0x1

struct imsg_hdr {
	uint32_t	 type;
	uint32_t	 len;		/* header included */
	uint32_t	 flags;
	uint32_t	 peerid;	/* request id */
	uint32_t	 pid;
};

struct imsg {
	struct imsg_hdr	 hdr;
	int		 fd;		/* -1 when none; owned until taken */
	uint8_t		*data;
	size_t		 datalen;
};

struct ibuf {
	TAILQ_ENTRY(ibuf) entry;
	uint8_t		*buf;
	size_t		 size;		/* bytes written so far */
	size_t		 cap;
	size_t		 rpos;		/* bytes already sent */
	int		 fd;
	int		 err;		/* a builder call failed */
};

struct imsgbuf {
	int		 fd;
	uint8_t		*rbuf;
	size_t		 rlen;
	int		 fdq[IMSG_MAX_FDQ];
	size_t		 nfdq;
	TAILQ_HEAD(, ibuf) wq;
	size_t		 wqlen;
	pid_t		 pid;
};

int	 imsgbuf_init(struct imsgbuf *, int);
void	 imsgbuf_clear(struct imsgbuf *);
ssize_t	 imsgbuf_read(struct imsgbuf *);
int	 imsgbuf_write(struct imsgbuf *);
int	 imsgbuf_flush(struct imsgbuf *);
int	 imsg_get(struct imsgbuf *, struct imsg *);
int	 imsg_get_fd(struct imsg *);
void	 imsg_free(struct imsg *);

struct ibuf *imsg_create(struct imsgbuf *, uint32_t, uint32_t, uint32_t,
	    size_t);
void	 imsg_add(struct ibuf *, const void *, size_t);
void	 imsg_set_fd(struct ibuf *, int);
int	 imsg_close(struct imsgbuf *, struct ibuf *);
void	 imsg_discard(struct ibuf *);
int	 imsg_compose(struct imsgbuf *, uint32_t, uint32_t, uint32_t, int,
	    const void *, size_t);

#endif
