/*
 * The VM controller inside mcvmd: VM objects, their state machine, the
 * processes behind them (QEMU in its jail, the VM monitor), and the tools
 * that act on them.
 */
#ifndef MCVMD_VM_H
#define MCVMD_VM_H

#include <sys/queue.h>
#include <sys/types.h>

#include <event.h>
#include <jansson.h>

#include "mcvmd.h"
#include "tools.h"

#define VM_BOOT_TIMEOUT		180	/* s: QEMU start to the agent's READY */
#define VM_TERM_GRACE		5	/* s from SIGTERM to SIGKILL */
#define VM_FORWARDS_MAX		16	/* port forwards per VM */
#define VM_NET_STR_MAX		64	/* addresses and the MAC */
#define VM_CALLS_MAX		32	/* monitor requests in flight per VM */
#define VM_CALL_TIMEOUT		60	/* s the monitor has beyond a wait */
#define VM_STORE_TIMEOUT	20	/* s stored has to answer a request */
#define VM_NET_TIMEOUT		10	/* s netd has */
#define VM_RESULT_MAX		8192	/* a receipt's replayed result */
#define VM_GUEST_STR_MAX	256
#define VM_JOB_PAGE_MAX		(16 * 1024)	/* per stream per read */
#define VM_VMM_BINARY		"mcvm-vmm"

enum vm_state {
	VS_CREATING = 0,	/* disk being made */
	VS_BOOTING,		/* QEMU started, no READY yet */
	VS_RUNNING,
	VS_PAUSED,
	VS_STOPPING,
	VS_STOPPED,
	VS_FAILED,
	VS_DESTROYING,
	VS_NSTATES,
};

/* What the current lifecycle operation owes its caller. */
struct vm_op {
	int		 pending;
	uint64_t	 peerid;	/* frontd call (see vm_reply) */
	enum tool_id	 tool;
	char		 rid[REQUEST_ID_MAX + 1];	/* receipt, or "" */
	int		 timed_out;
};

struct vm;

/* A request to a VM's monitor, and what to do with its answer. */
struct vm_call {
	TAILQ_ENTRY(vm_call) entry;
	uint32_t	 id;		/* imsg peerid to the monitor */
	struct vm	*vm;
	uint64_t	 peerid;	/* frontd call, 0 for internal */
	enum tool_id	 tool;
	int		 step;		/* chained calls */
	uint32_t	 type;		/* IMSG_VMM_* sent */
	time_t		 deadline;	/* monotonic seconds */
	int		 force;
	uint32_t	 encoding;	/* vm_job_output: 0 utf-8, 1 base64 */
	uint32_t	 wait_ms;	/* for the job to end */
	char		 job_id[ID_MAX + 1];
	char		 rid[REQUEST_ID_MAX + 1];
	char		 path[TOOL_PATH_MAX];
	char		*command;	/* vm_exec, for the jobs table */
	json_t		*acc;		/* partial result of a chain */
};
TAILQ_HEAD(vm_calls, vm_call);

struct vm {
	TAILQ_ENTRY(vm)	 entry;
	struct vm_row	 row;		/* what state.db holds */
	enum vm_state	 state;
	pid_t		 qemu_pid;
	pid_t		 vmm_pid;
	int		 qemu_status;	/* wait status once reaped */
	struct imsgev	 vmm;
	int		 vmm_live;
	int		 ready;
	int		 guest_poweroff;	/* SHUTDOWN seen: not a crash */
	struct event	 timer;
	int		 timer_set;
	struct vm_op	 op;
	uint32_t	 store_req;	/* stored request in flight, 0 none */
	uint32_t	 net_req;	/* netd request in flight, 0 none */
	time_t		 store_deadline;	/* monotonic seconds */
	time_t		 net_deadline;
	int		 net_live;	/* netd holds this VM's slot */
	int		 net_teardown;	/* net_req is a teardown */
	int		 disk_gone;	/* destroying: stored deleted it */
	int		 net_fds[NET_FD_TAP + 1];
	char		 address[VM_NET_STR_MAX];	/* "" when off */
	char		 gateway[VM_NET_STR_MAX];
	char		 resolver[VM_NET_STR_MAX];
	char		 mac[VM_NET_STR_MAX];
	struct {
		uint16_t host;		/* 0: auto, until netd chose */
		uint16_t guest;
	}		 fwd[VM_FORWARDS_MAX];
	size_t		 nfwd;
	int		 store_fds[STORE_FD_MAX + 1];
	int		 tpl;		/* the template (see template_build) */
	int		 restore;	/* boots from the template's checkpoint */
	uint32_t	 store_type;	/* store_req's IMSG_STORE_* */
	enum disk_format disk_format;
	char		 os[VM_GUEST_STR_MAX];
	char		 kernel[VM_GUEST_STR_MAX];
	char		 agent[VM_GUEST_STR_MAX];
	struct vm_calls	 calls;
	unsigned int	 ncalls;
};
TAILQ_HEAD(vm_list, vm);

extern struct vm_list	 vms;

/* vm.c */
void		 vm_init(void);
void		 vm_timers_init(void);
void		 vm_store_up(void);
void		 vm_store_imsg(struct imsg *);
void		 vm_net_up(void);
void		 vm_status_notes(void (*)(const char *, const char *, void *),
		    void *);
void		 vm_net_imsg(struct imsg *);
void		 vm_net_configured(struct vm *, int);
void		 vm_checkpointed(struct vm *, int);
int		 vm_reap(pid_t, int);
void		 vm_shutdown(void);
struct vm	*vm_find(const char *, int64_t);
const char	*vm_state_name(enum vm_state);
uint64_t	 vm_front_call(uint32_t);
void		 vm_front_lost(void);
void		 vm_cancel(uint64_t);
void		 vm_reply(uint64_t, enum tool_status, const char *);
void		 vm_reply_json(uint64_t, json_t *);
int		 vm_receipt_begin(uint64_t, int64_t, const char *,
		    const struct tool_args *, const char *, const char *);
void		 vm_create(uint64_t, const struct ws_auth *,
		    const struct tool_args *);
void		 vm_start(uint64_t, struct vm *);
void		 vm_stop(uint64_t, struct vm *, int, uint32_t);
void		 vm_destroy(uint64_t, struct vm *);
void		 vm_set_state(struct vm *, enum vm_state, const char *);
void		 vm_monitor_attach(struct vm *, int);
int		 vm_call(struct vm *, struct vm_call *, struct ibuf *);
struct vm_call	*vm_call_new(struct vm *, uint64_t, enum tool_id);
void		 vm_call_free(struct vm_call *);
struct ibuf	*vm_call_msg(struct vm *, uint32_t, struct vm_call *);
json_t		*vm_json(const struct vm *);

/* vmtools.c */
int		 vm_tool(uint64_t, const struct ws_auth *,
		    const struct tool_args *);
void		 vm_call_done(struct vm_call *, struct imsg *);
void		 vm_call_expired(struct vm_call *);
void		 vm_call_fail(struct vm_call *, const char *);
const struct tool_value *vm_arg(const struct tool_args *, const char *);
int		 vm_args_hash(const struct tool_args *, uint8_t [SHA256_LEN]);

#endif
