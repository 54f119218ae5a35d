/*
 * mcvm-vmm, the VM monitor: one per VM, as the VM's own uid, chrooted to
 * the empty directory, no capabilities, seccomp.  It is the only process
 * that reads bytes from QEMU (QMP, qmp.h) or from the guest (guest.h),
 * and it relays typed results to mcvmd.
 *
 * Its files:
 *	main.c		start: options, fds, privileges, the event loop
 *	vmm.c		mcvmd's side: the op table's dispatcher, requests in
 *			flight and their answers, the byte channels
 *	ops.c		the op table, and the ops of one step
 *	qmp_chan.c	the QMP session: greeting, commands, replies, events
 *	checkpoint.c	the checkpoint: an op of several QMP steps
 *	screenshot.c	the display as PNG, through a buffer of the monitor's
 *	input.c		keyboard and mouse events, in batches and waits
 *	serial.c	the serial console, kept in the monitor's own ring
 *	snapshot.c	live snapshots: QEMU's snapshot jobs, polled
 *	guest.h		the guest side, an interface ...
 *	guest_agent.c	... its implementation for mcvm-guestd's agent
 *	agent_relay.c	that implementation's conversions
 *	guest_qga.c	... and for qemu-guest-agent
 *	qga.c		its lines and returns, decoded
 *
 * An op of several QMP steps is one file like checkpoint.c: its start
 * (the op table's start column) sends the first command with
 * vmm_qmp_send (or vmm_qmp_send_fd, when an fd goes with it), naming the
 * continuation its reply calls; each continuation sends the next, waits
 * with vmm_req_after, or answers with vmm_ok, vmm_fail or
 * vmm_answer_begin/end.  A QMP error, the deadline and the loss of QEMU
 * answer for it.  Its state is the request's (an fd in r->fd, anything
 * else in r->state, released by the entry's end).
 */
#ifndef MCVM_VMM_H
#define MCVM_VMM_H

#include <sys/queue.h>

#include <event.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "agent_proto.h"
#include "imsg.h"
#include "linkset.h"
#include "msg_vmm.h"
#include "proc.h"
#include "proto.h"

/* The fds mcvmd gives the monitor, beside its imsg socket on fd 3. */
#define VMM_QMP_FILENO		4	/* to QEMU's QMP monitor */
#define VMM_AGENT_FILENO	5	/* connected to the agent chardev */
#define VMM_RAM_FILENO		6	/* -R: the RAM file QEMU maps
					   copy-on-write, read-only */

#define VMM_REQ_MAX		32	/* in flight, then VMM_ERR_BUSY */
#define VMM_REQ_TIMEOUT_MS	30000	/* -> VMM_ERR_TIMEOUT */
#define VMM_HELLO_RETRY_MS	100	/* while the guest boots */
#define VMM_READ_MAX		(16 * 1024)	/* bytes per read(2) */
#define VMM_AGENT_WQ_MAX	(4 * AGENT_FRAME_MAX)	/* unsent bytes */

/*
 * A template's guest agent holds once it is up, before its root filesystem
 * is writable, reading the agent port (mcvm.hold): -m hold says nothing to
 * it and reports VMM_EV_HELD once the port is open, and the VM is then
 * checkpointed.  A VM restored from that checkpoint is released by one
 * newline (-m restore), and its agent serves on.
 */
enum vmm_mode {
	VMM_MODE_BOOT,
	VMM_MODE_HOLD,
	VMM_MODE_RESTORE,
};

/* The channel an op speaks on. */
enum vmm_chan {
	VMM_CHAN_QMP = 1,
	VMM_CHAN_GUEST,
};

struct vmm_req;
struct qmp_msg;

/* A request's fields, as its op's get read them (msg_vmm.h). */
union vmm_args {
	struct msg_vmm_exec		 exec;
	struct msg_vmm_job_status	 job_status;
	struct msg_vmm_job_cancel	 job_cancel;
	struct msg_vmm_job_read		 job_read;
	struct msg_vmm_file_read	 file_read;
	struct msg_vmm_file_write	 file_write;
	struct msg_vmm_file_list	 file_list;
	struct msg_vmm_set_time		 set_time;
	struct msg_vmm_identity		 identity;
	struct msg_vmm_net_config	 net_config;
	struct msg_vmm_input		 input;
	struct msg_vmm_snapshot		 snapshot;
	struct msg_vmm_checkpoint	 checkpoint;
	struct msg_vmm_incoming		 incoming;
};

/*
 * The op table: one entry per IMSG_VMM_* request mcvmd may send, and
 * nothing else.  Each op's file holds its entry, VMM_OP(): ops.c those of
 * one step, checkpoint.c its own; the entries form one table, a linker
 * set (common/linkset.h), so a new op is a new file and nothing else.  For each request the dispatcher (vmm.c) reads its
 * fields with get, the message's codec; a malformed request is fatal.  It
 * then checks what the entry asks for, answering an error itself when the
 * channel is not there, the guest not up or every slot taken; it takes
 * the fd (VMM_OP_FD), arms the timeout, and calls start.  start, or the
 * continuations it names, answer the request exactly once.  end, if the
 * op has one, releases the op's own state (r->state) when the request
 * ends, however it ends: answered, timed out, or its channel lost.
 */
struct vmm_op {
	uint32_t	 type;		/* the IMSG_VMM_* request */
	const char	*name;		/* in logs and errors */
	enum vmm_chan	 chan;
	unsigned int	 flags;
#define VMM_OP_GUEST_UP	0x01	/* the guest's session must be up */
#define VMM_OP_QMP_UP	0x02	/* QMP must be negotiated already */
#define VMM_OP_FD	0x04	/* an fd travels with the request */
#define VMM_OP_ONE	0x08	/* one at a time */
#define VMM_OP_EXITS	0x10	/* QEMU's exit is its success */
#define VMM_OP_QUEUE	0x20	/* one at a time, the others waiting their
				   turn in order (an op without arguments) */
	uint32_t	 timeout_ms;	/* for its answer */
	int		(*get)(struct imsg *, union vmm_args *);
	void		(*start)(struct vmm_req *, const union vmm_args *);
	void		(*end)(struct vmm_req *);	/* or NULL */
};

#define VMM_OP(sym, ...)						\
	static const struct vmm_op vmm_op_##sym = { __VA_ARGS__ };	\
	LINKSET_ADD(vmm_ops, const struct vmm_op, vmm_op_##sym)
LINKSET_DECLARE(vmm_ops, const struct vmm_op);
const struct vmm_op	*vmm_op_find(uint32_t);

/* An entry's get: the request's codec, with its fields or none. */
#define VMM_GET_ARGS(name)						\
static int								\
get_##name(struct imsg *imsg, union vmm_args *a)			\
{									\
	return msg_vmm_##name##_get(imsg, &a->name);			\
}
#define VMM_GET_NONE(name)						\
static int								\
get_##name(struct imsg *imsg, union vmm_args *a)			\
{									\
	return msg_vmm_##name##_get(imsg);				\
}

/* What a QMP reply continues with: a QMP error has been answered. */
typedef void	(*vmm_qmp_cont)(struct vmm_req *, const struct qmp_msg *);

/* A later step, after a delay (vmm_req_after). */
typedef void	(*vmm_req_cont)(struct vmm_req *);

struct vmm_outbuf;

/* One request from mcvmd, in flight. */
struct vmm_req {
	int			 used;
	const struct vmm_op	*op;
	uint32_t		 peerid;	/* mcvmd's request id */
	uint32_t		 wire_id;	/* QMP or guest id awaited */
	int			 fd;		/* VMM_OP_FD: ours till given */
	void			*state;		/* the op's own, freed by end */
	uint32_t		 flag;		/* the op's own: a checkpoint
						   made durable */
	int			 queued;	/* VMM_OP_QUEUE: waits its turn */
	uint64_t		 seq;		/* its arrival, for the turns */
	struct event		 timer;		/* the op's deadline */

	/* QMP: the reply awaited, and a command held until negotiation */
	vmm_qmp_cont		 qmp_cont;
	const char		*qmp_held_cmd;
	json_t			*qmp_held_args;

	/* a step after a delay; polling: one an event may hurry */
	struct event		 after;
	vmm_req_cont		 after_cont;
	int			 polling;

	/* the guest implementation's, while the guest answers */
	uint32_t		 g_kind;	/* what it asked */
	uint32_t		 g_enc;		/* JOB_READ, FILE_READ:
						   VMM_ENC_* */
	struct vmm_outbuf	*out;		/* its bytes, while queued */
};

#define VMM_TEXT_IN_MAX		1024	/* a text's bytes looked at */

/* Answers to mcvmd: each ends the request. */
void	 vmm_fail(struct vmm_req *, uint32_t, uint32_t, const char *);
void	 vmm_ok(struct vmm_req *, uint32_t);
struct ibuf *vmm_answer_begin(struct vmm_req *, uint32_t);
void	 vmm_answer_end(struct vmm_req *, struct ibuf *);

/* Any text for mcvmd, a guest's first: valid UTF-8, cut to fit. */
void	 vmm_text(const char *, char *, size_t);

/* Messages nobody asked for. */
void	 vmm_event(enum vmm_event, const char *);
void	 vmm_error_unasked(uint32_t, uint32_t, const char *);
void	 vmm_check_ready(void);
void	 vmm_guest_up(const char *, const char *, const char *);

/* Requests in flight. */
uint32_t vmm_wire_id(void);
void	 vmm_req_arm(struct vmm_req *, uint32_t);
void	 vmm_req_after(struct vmm_req *, uint32_t, vmm_req_cont);
void	 vmm_req_poll(struct vmm_req *, uint32_t, vmm_req_cont);
void	 vmm_req_hurry(void);
void	 vmm_req_free(struct vmm_req *);
struct vmm_req *vmm_req_find(enum vmm_chan, uint32_t);
struct vmm_req *vmm_req_next(struct vmm_req *);
void	 vmm_req_fail_all(enum vmm_chan, uint32_t, uint32_t, const char *);
void	 vmm_exit_qemu_gone(const char *) __attribute__((noreturn));

/* A byte channel to QEMU (QMP, or the guest's port). */
struct vmm_outbuf {
	TAILQ_ENTRY(vmm_outbuf)	 entry;
	struct vmm_req		*owner;	/* NULL: nobody waits on it */
	size_t			 len;
	size_t			 off;
	uint8_t			 data[];
};
TAILQ_HEAD(vmm_outq, vmm_outbuf);

struct vmm_io {
	const char	*name;
	int		 fd;
	struct event	 rev;
	struct event	 wev;
	int		 reading;
	int		 writing;
	struct vmm_outq	 wq;
	size_t		 wqlen;
};

void	 vmm_io_init(struct vmm_io *, const char *, int,
	    void (*)(int, short, void *), void (*)(int, short, void *));
void	 vmm_io_queue(struct vmm_io *, const void *, size_t,
	    struct vmm_req *);
void	 vmm_io_unqueue(struct vmm_io *, struct vmm_req *);
int	 vmm_io_flush(struct vmm_io *);
void	 vmm_io_drop_queue(struct vmm_io *);
void	 vmm_io_stop_reading(struct vmm_io *);

/* mcvmd's side (vmm.c). */
void	 vmm_parent_init(void);
void	 vmm_dispatch(struct imsg *);

/* The QMP session (qmp_chan.c). */
enum vmm_qmp_state {
	VMM_QMP_GREETING,	/* waiting for QEMU's greeting */
	VMM_QMP_CAPS,		/* qmp_capabilities sent */
	VMM_QMP_READY,
	VMM_QMP_BROKEN,		/* protocol error: bytes are discarded */
};

void	 vmm_qmp_init(int, enum vmm_mode);
enum vmm_qmp_state vmm_qmp_state(void);
int	 vmm_qmp_idle(void);
json_t	*vmm_qmp_args(const char *, ...);
void	 vmm_qmp_send(struct vmm_req *, const char *, json_t *, vmm_qmp_cont);
int	 vmm_qmp_send_fd(struct vmm_req *, const char *, json_t *, int,
	    vmm_qmp_cont);
void	 vmm_qmp_forget(struct vmm_req *);

/* The ops' pure parts, and the screenshot buffer made at start. */
void	 vmm_screenshot_init(void);
int	 vmm_png_size(const uint8_t *, size_t, uint32_t *, uint32_t *);
json_t	*vmm_input_batch(const struct vmm_input *, size_t);
size_t	 vmm_serial_tail(const uint8_t *, size_t, int, char *, size_t,
	    uint32_t *, uint32_t *);

/* The RAM file relative checkpoints compare with (checkpoint.c). */
void	 vmm_ram_init(int);

/* The seccomp policy (vmm_sandbox.c). */
void	 vmm_sandbox(int);

#endif
