/*
 * The VM controller inside mcvmd: VM objects and their state machine
 * (vm.c, fsm.c, lifecycle.c), the processes behind them (spawn.c), its
 * clients of stored, netd and the VM monitors (store.c, net.c,
 * monitor.c, all through the request table of req.h), the templates
 * (template.c) and their warm clones (warm.c), admission (admit.c) and
 * receipts (receipt.c).  The tools
 * are reached through the dispatcher (dispatch.h).
 */
#ifndef MCVMD_VM_H
#define MCVMD_VM_H

#include <sys/queue.h>
#include <sys/types.h>

#include <event.h>
#include <jansson.h>

#include "mcvmd.h"
#include "msg_store.h"
#include "msg_vmm.h"
#include "qemu.h"
#include "tools.h"

#define VM_BOOT_TIMEOUT		180	/* s: QEMU start to the agent's READY */
#define VM_TERM_GRACE		5	/* s from SIGTERM to SIGKILL */
#define VM_FORWARDS_MAX		16	/* port forwards per VM */
#define VM_NET_STR_MAX		64	/* addresses and the MAC */
#define VM_CALLS_MAX		32	/* monitor requests in flight per VM */
#define VM_CALL_TIMEOUT		60	/* s the monitor has beyond a wait */
#define VM_STORE_TIMEOUT	20	/* s stored has to answer a request */
#define VM_NET_TIMEOUT		10	/* s netd has */
#define VM_IMAGE_WAIT		120	/* s a vm_create waits for its image */
#define VM_RESULT_MAX		8192	/* a receipt's replayed result */
#define VM_GUEST_STR_MAX	256
#define VM_VMM_BINARY		"mcvm-vmm"
#define VM_FORWARD_BIND		"127.0.0.1"
#define VM_MSG_MAX		512	/* a tool's error text */
#define VM_ATTACHED_GONE	"its QEMU exited or closed its QMP socket: " \
				"the operator forgets it (forget-vm)"

/* struct vm's warm (warm.c) */
#define WARM_MAKING		1	/* a warm clone being made */
#define WARM_READY		2	/* one a vm_create may take */

/* struct vm's tpl (template.c) */
#define TPL_HOST		1	/* the host's, full-stream */
#define TPL_SHARED		2	/* a workspace's, shared RAM */

enum vm_state {
	VS_CREATING = 0,	/* disk being made */
	VS_BOOTING,		/* QEMU started, no READY yet */
	VS_RUNNING,
	VS_PAUSED,
	VS_STOPPING,
	VS_STOPPED,
	VS_FAILED,
	VS_DESTROYING,
	VS_HIBERNATING,		/* its checkpoint being written */
	VS_HIBERNATED,		/* only its files: checkpoint and disk */
	VS_NSTATES,
};

/* What moves a VM from one state to another (fsm.c). */
#define VM_EVENTS(X)							\
	X(VE_START,		"start")	/* vm_start */		\
	X(VE_DISK_READY,	"disk-ready")	/* stored made it */	\
	X(VE_NET_READY,		"net-ready")	/* netd set it up */	\
	X(VE_SPAWNED,		"spawned")	/* QEMU and monitor */	\
	X(VE_AGENT_READY,	"agent-ready")	/* the guest is up */	\
	X(VE_PAUSED,		"paused")	/* vCPUs stopped */	\
	X(VE_RESUMED,		"resumed")	/* vCPUs run again */	\
	X(VE_STOP,		"stop")		/* vm_stop */		\
	X(VE_STOP_TIMEOUT,	"stop-timeout")	/* still running */	\
	X(VE_GUEST_POWEROFF,	"guest-poweroff") /* and gone */	\
	X(VE_PROCESSES_GONE,	"processes-gone") /* both reaped */	\
	X(VE_FAIL,		"fail")					\
	X(VE_SHUTDOWN,		"shutdown")	/* mcvmd stops */	\
	X(VE_DESTROY,		"destroy")				\
	X(VE_HIBERNATE,		"hibernate")	/* vm_suspend */

enum vm_event {
#define VM_EVENT_ENUM(e, n)	e,
	VM_EVENTS(VM_EVENT_ENUM)
#undef VM_EVENT_ENUM
	VE_NEVENTS
};

/* The operation a VM is under, as state.db's intent records it. */
enum vm_opkind {
	VO_NONE = 0,
	VO_CREATE,
	VO_START,
	VO_STOP,
	VO_PAUSE,
	VO_RESUME,
	VO_DESTROY,
	VO_HIBERNATE,
};

/* What the current lifecycle operation owes its caller. */
struct vm_op {
	int		 pending;
	uint64_t	 peerid;	/* frontd call (see call_reply) */
	enum vm_opkind	 kind;
	char		 rid[REQUEST_ID_MAX + 1];	/* receipt, or "" */
	int		 disk_gone;	/* destroy: stored deleted it */
};

/* What one boot of the VM knows, from its spawn to its processes' end. */
struct vm_boot {
	int		 restore;	/* from the template's checkpoint */
	int		 resume;	/* from its own (hibernated) */
	int		 checkpointed;	/* hibernating: its checkpoint is
					   written and durable */
	int		 agent;		/* the guest agent answers */
	int		 poweroff;	/* the guest powered off: no crash */
	int		 guest_end;	/* QMP: the guest reset or shut down */
	int		 guest_ended;	/* and mcvmd ends QEMU (own disks) */
	uint32_t	 shot_w;	/* the last screenshot's size, 0: */
	uint32_t	 shot_h;	/* none yet */
};

/*
 * The end of a VM's serial console, kept from its stop to its next start:
 * the monitor's answer, its data a copy that follows it.
 */
struct vm_console {
	struct msg_vmm_serial_data m;
	char		 data[];
};

struct vm_wake;

struct vm {
	TAILQ_ENTRY(vm)	 entry;
	struct vm_row	 row;		/* what state.db holds */
	enum vm_state	 state;
	pid_t		 qemu_pid;
	pid_t		 vmm_pid;
	int		 qemu_status;	/* wait status once reaped */
	time_t		 started;	/* vm_now() at its QEMU's fork */
	struct imsgev	 vmm;		/* the monitor's channel ... */
	int		 vmm_live;	/* ... while it is open */
	uint32_t	 vmm_gen;	/* counts the monitors attached */
	struct event	 timer;		/* boot, stop or SIGTERM grace */
	struct vm_op	 op;
	struct vm_boot	 boot;
	int		 tpl;		/* a template: TPL_HOST, TPL_SHARED */
	int		 htpl;		/* the host template it restores
					   from, or is; 1-based */
	int		 wtpl;		/* its shared template's, 1-based */
	int		 wtpl_using;	/* its QEMU maps that one's RAM file */
	int		 ram_cow;	/* its QEMU maps a RAM file copy-on-
					   write, that one's or its base:
					   it hibernates relative to it */
	int		 hib_paused;	/* hibernating: it was paused */
	int		 warm;		/* a warm clone: WARM_*, 0 none */
	int64_t		 warm_ws;	/* the workspace it waits for */
	unsigned int	 warm_runs;	/* its warm-up's commands run */
	int		 fork;		/* a fork makes it: its entry's,
					   1-based (tool-fork.c) */
	int		 fork_reading;	/* and it is yet to open the
					   fork's checkpoint */
	int		 forking;	/* a fork saves its state */
	int		 freezing;	/* to hibernate: its jobs freeze */
	const char	*freeze_why;	/* then the hibernation's reason */
	TAILQ_HEAD(, vm_wake) wakes;	/* calls waiting for it (wake.c) */
	unsigned int	 nwakes;
	int		 waking;	/* a resume for them is under way */
	time_t		 idle_since;	/* a call last needed it (idle.c) */
	int		 idle_asking;	/* its jobs are being counted */
	int		 net_live;	/* netd holds this VM's slot */
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
	enum disk_format disk_format;
	/* A VM from its own disks: what stored said of each, this boot. */
	struct msg_store_vm_disk vdisk[VM_DISKS_MAX];
	unsigned int	 nvdisk;
	char		 os[VM_GUEST_STR_MAX];
	char		 kernel[VM_GUEST_STR_MAX];
	char		 agent[VM_GUEST_STR_MAX];
	struct vm_console *console;	/* NULL: none kept */
	struct ctl_ticket ctl;		/* attach-vm's, until it settles */
};
TAILQ_HEAD(vm_list, vm);

extern struct vm_list	 vms;

/* vm.c: objects and views */
void		 vm_init(void);
struct vm	*vm_new(const struct vm_row *);
void		 vm_free(struct vm *);
struct vm	*vm_find(const char *, int64_t);
struct vm	*vm_find_name(const char *, int64_t);
struct vm	*vm_find_ref(const char *, int64_t);
int		 vm_live(const struct vm *);
int		 vm_unowned(const struct vm *);
int		 vm_own_disks(const struct vm *);
unsigned int	 vm_disk_names(const struct vm_row *,
		    char [VM_DISKS_MAX][OBJ_NAME_MAX + 1]);
void		 vm_no_agent_text(const struct vm *, char *, size_t);
int		 vm_speaks_qga(const struct vm *);
const char	*vm_agent_kind(const struct vm *);
json_t		*vm_json(const struct vm *);
void		 vm_random_id(const char *, char *, size_t);
void		 vm_status_notes(void (*)(const char *, const char *, void *),
		    void *);
void		 vm_timers_init(void);

/* fsm.c: the state machine */
const char	*vm_state_name(enum vm_state);
enum vm_state	 vm_state_parse(const char *);
const char	*vm_event_name(enum vm_event);
const char	*vm_op_name(enum vm_opkind);
int		 vm_fsm_next(enum vm_state, enum vm_event, enum vm_state *);
void		 vm_fsm(struct vm *, enum vm_event, const char *);
void		 vm_intent(struct vm *, enum vm_opkind);

/* tool-fork.c: the VMs a fork makes */
const char	*vm_fork_dir(struct vm *);
void		 vm_fork_template(const char *, const char *);
void		 vm_fork_read(struct vm *);
int		 vm_fork_owns(const char *);
void		 vm_fork_done(struct vm *, int, const char *);
void		 vm_fork_gone(struct vm *);

/* lifecycle.c: the operations */
void		 vm_op_begin(struct vm *, uint64_t, enum vm_opkind,
		    const char *);
void		 vm_op_done(struct vm *, int, const char *);
void		 vm_progress(const struct vm *, uint64_t, uint64_t,
		    const char *);
void		 vm_fail(struct vm *, const char *);
void		 vm_start(uint64_t, struct vm *);
void		 vm_stop(uint64_t, struct vm *, int, uint32_t);
int		 vm_stop_request(uint64_t, struct vm *, int, uint32_t);
void		 vm_qemu_term(struct vm *);
void		 vm_hibernate(uint64_t, struct vm *, const char *);
void		 vm_hibernated(struct vm *, int, uint32_t, const char *);
int		 vm_hibernate_resume(uint64_t, struct vm *, char *, size_t);
void		 vm_hibernate_resumed(struct vm *);
int		 vm_admit_state(const struct vm *, const char *, char *,
		    size_t);
int		 vm_hibernate_all(void);
int		 vm_hibernate_freeze(struct vm *, const char *, char *,
		    size_t);
int		 vm_draining(void);
void		 vm_drain_check(void);
void		 vm_resume_paused(uint64_t, struct vm *);
struct tool_call;
int		 vm_call_needs_guest(const struct tool_call *);
int		 vm_wake_call(struct tool_call *);
void		 vm_wake_settle(struct vm *, int);
void		 vm_wake_check(struct vm *);
void		 vm_wake_forget(uint64_t);
void		 vm_wake_drop(struct vm *);
void		 vm_idle_touch(struct vm *);
void		 vm_idle_sweep(void);
void		 vm_destroy(uint64_t, struct vm *);
void		 vm_destroy_finish(struct vm *);
void		 vm_guest_ready(struct vm *);
void		 vm_guest_end(struct vm *);
void		 vm_timer_start(struct vm *, int,
		    void (*)(int, short, void *));
void		 vm_timer_clear(struct vm *);
time_t		 vm_now(void);

/* spawn.c: the processes */
void		 vm_spawn_init(void);
void		 vm_spawn_leftovers(void);
int		 vm_cgroups_ok(void);
const char	*vm_cgroups_why(void);
void		 vm_spawn(struct vm *);
void		 vm_kill(struct vm *);
int		 vm_reap(pid_t, int);
void		 vm_processes_gone(struct vm *);
void		 vm_qemu_log_note(const struct vm *);
uint64_t	 vm_memory_charged(const struct vm *);
int		 vm_spawn_monitor(struct vm *, int, int, char *, size_t);

/* warm.c: warm clones */
void		 vm_warm_sweep(void);
void		 vm_warm_ready(struct vm *);
void		 vm_warm_failed(struct vm *, const char *);
struct vm	*vm_warm_take(const struct vm_row *);
void		 vm_warm_taken(struct vm *);
void		 vm_warm_give(struct vm *);
void		 vm_warm_usage(uint32_t *, uint64_t *, uint64_t *,
		    uint64_t *);
void		 vm_warm_drain(int64_t, const char *);
void		 vm_warm_notes(void (*)(const char *, const char *, void *),
		    void *);

/* attach.c: VMs of QEMUs the operator started */
int		 vm_attached(const struct vm *);
struct vm	*vm_attach(const struct msg_ctl_vm_attach *, int64_t, char *,
		    size_t);
void		 vm_attach_reload(void);
void		 vm_attached_refusal(const struct vm *, const char *, char *,
		    size_t);
void		 vm_attach_settle(struct vm *, int, const char *);
void		 vm_shutdown(void);
void		 vm_close_store_fds(struct vm *);

/* store.c: the stored client */
int		 vm_store_is_up(void);
void		 vm_store_up(void);
void		 vm_store_imsg(struct imsg *);
void		 vm_store_disk(struct vm *, uint32_t);
void		 vm_store_disk_copy(struct vm *, const char *);
void		 vm_store_checkpoint(struct vm *, const char *, int,
		    const char *);
void		 vm_store_ram(struct vm *);
struct msg_store_result;
void		 vm_store_result(struct imsg *, struct msg_store_result *);
void		 vm_store_delete_unowned(const char *);
int		 vm_image_find(const char *, uint64_t *, char *, size_t);
int		 vm_image_pending(const char *);
int		 vm_catalog_image(const char *);
void		 vm_store_image_part(struct imsg *);
void		 image_front(struct imsg *);
void		 vm_image_names(char *, size_t);
json_t		*vm_images_json(void);
void		 vm_store_notes(void (*)(const char *, const char *, void *),
		    void *);

/* net.c: the netd client */
void		 vm_net_up(void);
void		 vm_net_imsg(struct imsg *);
void		 vm_net_setup(struct vm *);
void		 vm_net_teardown(struct vm *);
int		 vm_net_is_up(void);
int		 vm_net_has_nic(const struct vm *);
const char	*vm_net_preflight(void);

/* monitor.c: the monitor's channel */
void		 vm_monitor_attach(struct vm *, int);
void		 vm_monitor_close(struct vm *);
void		 vm_checkpoint_write(struct vm *, int);
void		 vm_incoming(struct vm *);

/* dispatch.c (see dispatch.h): frontd went */
void		 vm_front_lost(void);

/* tool-vm.c */

/* lifecycle.c: the console kept across a stop */
void		 vm_console_keep(struct vm *,
		    const struct msg_vmm_serial_data *);
void		 vm_console_forget(struct vm *);

/* template.c */
void		 vm_template_build(void);
void		 vm_template_held(struct vm *);
void		 vm_checkpointed(struct vm *, int);
void		 vm_template_failed(struct vm *, const char *);
void		 vm_template_gone(struct vm *);
void		 vm_template_retire(const struct vm *, const char *);
int		 vm_template_fits(struct vm *);
int		 vm_template_ready(const struct vm *);
int		 vm_template_owns(const char *);
const char	*vm_template_disk(const struct vm *);
void		 vm_template_notes(void (*)(const char *, const char *,
		    void *), void *);
void		 vm_template_share(struct vm *);
const char	*vm_template_source(struct vm *);
int		 vm_template_ram(struct vm *, int);
int		 vm_template_use(const struct vm *, int *, uint32_t *,
		    enum qemu_ram *);
void		 vm_template_unuse(struct vm *);
const char	*vm_template_file(const struct vm *);
void		 vm_template_retire_shared(struct vm *, const char *);
void		 vm_template_loaded(struct vm *);
int		 vm_template_holds_slot(uint32_t);
int		 vm_template_fork(const struct vm_row *, const char *);
void		 vm_template_fork_end(int);
/* A shared template, as warm.c sees it (vm_template_warm). */
struct tpl_warm {
	int64_t		 ws;		/* its workspace */
	const char	*ws_name;
	int		 htpl;		/* its host template's, 1-based */
	time_t		 wanted;	/* vm_now() of its last vm_create */
};
int		 vm_template_warm(int, struct tpl_warm *);
void		 vm_template_wanted(const struct vm *);
int		 vm_template_devices(int, struct vm_row *);

/* admit.c: admission and quotas */
int		 vm_slot_alloc(uint32_t *);
uint32_t	 vm_slots_free(void);
int		 vm_warm_admit(uint32_t, uint32_t, uint64_t);
uint32_t	 vm_vcpus_limit(int *);
int		 vm_ws_limits(int64_t, struct limits *, uint32_t *);
int		 vm_usage(int64_t, uint32_t *, uint64_t *, uint64_t *,
		    uint64_t *);
int		 vm_admit(int64_t, uint32_t, uint32_t, uint64_t, char *,
		    size_t);
int		 vm_admit_storage(int64_t, uint64_t, char *, size_t);

/* receipt.c */
int		 vm_args_hash(const struct tool_args *, uint8_t [SHA256_LEN]);
int		 receipt_begin(uint64_t, int64_t, const char *,
		    const struct tool_args *, const char *, const char *);
void		 receipt_fail(int64_t, const char *, const char *, uint64_t,
		    enum tool_status, const char *);
void		 receipt_done(int64_t, const char *, const char *,
		    const char *);

#endif
