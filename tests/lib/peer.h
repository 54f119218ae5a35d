/*
 * The harness of the C drivers that play mcvmd to a real peer (netd,
 * stored, a monitor): the peer's start with its channel on
 * PROC_PARENT_SOCK_FILENO, its HELLO, a request and the messages up to
 * its reply within a deadline, its end; and the counting of tests with
 * the final "N passed, N failed" line, which a driver of another
 * protocol (the agent's) uses alone.
 *
 * A function that can fail returns -1 and records why (test_fail());
 * test_why() tells it.
 */
#ifndef MCVM_TEST_PEER_H
#define MCVM_TEST_PEER_H

#include <sys/types.h>
#include <stdint.h>

#include "imsg.h"

/*
 * peer_start() fills it; a driver that starts its peer itself (a monitor
 * has three fds) sets ib with imsgbuf_init(), pid, next_id 1 and the rest.
 */
struct peer {
	struct imsgbuf	 ib;
	pid_t		 pid;		/* -1 once reaped */
	uint32_t	 next_id;	/* of the next request, from 1 */
	int		 timeout_ms;	/* a request's deadline */
	uint32_t	 error_type;	/* ends any request too, or IMSG_NONE */
	int		 late_ok;	/* skip replies to earlier requests */
	/* A message with peerid 0: 0, or -1 (test_fail()). */
	int		(*unasked)(struct peer *, struct imsg *);
};

/* A request on its way: what peer_wait() needs. */
struct peer_call {
	uint32_t	 id;
	uint32_t	 type;
	uint32_t	 reply;		/* imsg_reply_type(type) */
	uint64_t	 deadline;	/* ms, CLOCK_MONOTONIC */
	int		 timeout_ms;	/* what the deadline allows */
};

void	 peer_start(struct peer *, const char *, const char *const []);
void	 peer_run(struct peer *, int, char *[], const char *,
	    void (*)(void), int *);
int	 peer_next(struct peer *, uint64_t, struct imsg *);
int	 peer_hello(struct peer *);
struct ibuf *peer_request(struct peer *, uint32_t, struct peer_call *);
int	 peer_send(struct peer *, struct ibuf *, struct peer_call *);
void	 peer_rearm(struct peer_call *, int);
int	 peer_wait(struct peer *, struct peer_call *, struct imsg *);
int	 peer_call(struct peer *, struct ibuf *, struct peer_call *,
	    int (*)(struct imsg *, void *), void *, struct imsg *);
int	 peer_pump(struct peer *, int);
int	 peer_drain(struct peer *);
void	 peer_reap(struct peer *);
void	 peer_finish(struct peer *);
void	 peer_die(struct peer *, const char *) __attribute__((noreturn));
int	 peer_fds(const struct peer *);

uint64_t test_now_ms(void);
int	 test_fail(const char *, ...) __attribute__((format(printf, 1, 2)));
const char *test_why(void);
void	 test_report(const char *, int);
int	 test_failures(void);
int	 test_summary(void);
const char *test_errname(uint32_t);

#endif
