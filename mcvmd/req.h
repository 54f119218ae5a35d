/*
 * The request table: every request mcvmd makes of stored, netd or a VM's
 * monitor, and what to do with its answer.
 *
 * A request has an id (the imsg peerid, never 0) and the instance of its
 * peer it went to (a child's start count, or the VM's monitor count), the
 * type of the reply it expects, a deadline, and two callbacks: done, for
 * the expected reply, and cancel, for every other end (no answer in time,
 * the peer restarted, the VM went, the monitor refused or answered out of
 * turn).  Exactly one of them runs, once; the table frees the request
 * after it unless the callback sent it again (a chain's next step).
 *
 * A request may also carry a frontd call (call) and that call's own
 * context, for the tools whose answers come from the monitor.
 *
 * A wait (req_await) is a request for which nothing is sent: a report a
 * peer makes unasked, matched by its key instead of an id (RP_IMAGE: a
 * vm_create waits for stored's IMAGE_STATUS of its image).  It ends as
 * any other, by its deadline or its caller's cancel too.
 */
#ifndef MCVMD_REQ_H
#define MCVMD_REQ_H

#include <sys/queue.h>

#include <jansson.h>

#include "vm.h"

enum req_peer {
	RP_STORED = 0,
	RP_NETD,
	RP_MONITOR,
	RP_IMAGE,		/* stored's report of an image: a wait */
	RP_NPEERS,
};

/* Why a request ends without its reply. */
enum req_end {
	REQ_EXPIRED = 1,	/* past its deadline */
	REQ_PEER_LOST,		/* stored or netd restarted */
	REQ_VM_GONE,		/* the VM is freed, or its processes ended */
	REQ_REFUSED,		/* not sent: no monitor, or too many */
	REQ_ERROR,		/* the monitor answered with an error */
	REQ_BAD_REPLY,		/* an answer of another type */
	REQ_CANCELLED,		/* its caller cancelled it, or went */
};

struct req;
typedef void	(*req_done_fn)(struct req *, struct imsg *);
typedef void	(*req_cancel_fn)(struct req *, enum req_end, const char *);

struct req {
	TAILQ_ENTRY(req) entry;
	uint32_t	 id;
	uint32_t	 gen;		/* the peer's instance */
	enum req_peer	 peer;
	struct vm	*vm;		/* NULL: no VM's */
	uint32_t	 type;		/* sent */
	uint32_t	 want;		/* the reply's type */
	time_t		 deadline;	/* monotonic seconds */
	req_done_fn	 done;
	req_cancel_fn	 cancel;
	struct ibuf	*msg;		/* to fill, until req_send */
	char		 key[OBJ_NAME_MAX + 1];	/* a wait's match */
	void		*ctx;		/* the caller's: done or cancel frees */
	int		 live;		/* in the table */
	int		 busy;		/* its callback runs */

	/* The tool call it answers, and that call's context. */
	uint64_t	 call;		/* frontd call, 0 for none */
	const char	*what;		/* the tool, for messages */
	int		 force;
	int		 hibernate;	/* vm_suspend: the mode */
	uint32_t	 encoding;	/* vm_job_output: 0 utf-8, 1 base64 */
	uint32_t	 wait_ms;	/* for the job to end */
	uint32_t	 wait_left_ms;	/* vm_exec, vm_job_output: to wait */
	uint64_t	 cursor[2];	/* their reads' stdout, stderr */
	char		 job_id[ID_MAX + 1];
	uint32_t	 guest_job;	/* the job's, once has_job */
	int		 has_job;
	char		 rid[REQUEST_ID_MAX + 1];
	char		 path[TOOL_PATH_MAX];
	char		*command;	/* vm_exec, for the jobs table */
	int		 keep_fd;	/* held till it ends, or -1 */
	uint32_t	 tail_lines;	/* vm_serial_read */
	struct {
		int64_t	 x, y;		/* pixels of the last screenshot */
		uint16_t button;	/* VMM_BTN_* */
		int	 twice;
	}		 click;		/* vm_click */
	json_t		*acc;		/* partial result of a chain */
	enum tool_id	 tool;		/* an image tool's */
	uint32_t	 image_op;	/* enum store_image_op */
	int64_t		 ws;		/* its workspace */
	char		 tag[OBJ_NAME_MAX + 1];	/* a live snapshot's */
	int64_t		 since;		/* vm_snapshot_restore: its date */
	uint64_t	 snap_size;	/* a raw disk's save: state bytes */
};

struct req	*req_new(enum req_peer, struct vm *, uint32_t, req_done_fn,
		    req_cancel_fn);
void		 req_next(struct req *, uint32_t, req_done_fn);
void		 req_next_to(struct req *, enum req_peer, uint32_t,
		    req_done_fn);
int		 req_send(struct req *);
void		 req_send_quiet(struct vm *, uint32_t);
void		 req_next_set_time(struct req *, req_done_fn);
struct req	*req_await(enum req_peer, uint32_t, const char *, req_done_fn,
		    req_cancel_fn);
struct req	*req_match(enum req_peer, uint64_t, const char *);
struct req	*req_match_front(enum req_peer);
void		 req_notice(enum req_peer, uint32_t, struct ibuf *);
struct ibuf	*req_notice_msg(enum req_peer, uint32_t, int);
struct req	*req_find(enum req_peer, const struct vm *, uint32_t);
void		 req_reply(struct req *, struct imsg *);
void		 req_end(struct req *, enum req_end, const char *);
struct req	*req_pending(const struct vm *, enum req_peer);
struct req	*req_for_call(enum req_peer, uint64_t);
unsigned int	 req_count(const struct vm *, enum req_peer);
struct req	*req_nth(const struct vm *, enum req_peer, unsigned int);
void		 req_peer_lost(enum req_peer);
void		 req_vm_gone(struct vm *, int, const char *);
void		 req_lose_caller(uint64_t);
unsigned int	 req_lose_callers(void);
void		 req_sweep(void);

#endif
