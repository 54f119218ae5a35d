/*
 * The VM controller: VM objects and their lifecycle.
 *
 * Every transition is written to state.db before it is acted on (state
 * and intent) and settled after, so a crash leaves a visible marker that
 * start-up reconciliation turns into "failed" rather than a guess.
 *
 * A VM runs as two processes, both in the VM's cgroup and both as the VM
 * slot's uid: QEMU in its jail (jail.c) and the VM monitor (mcvm-vmm),
 * the only process that parses what QEMU and the guest send.  mcvmd reads
 * typed imsg fields from the monitor and nothing else.
 */
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "hash.h"
#include "jail.h"
#include "netslot.h"
#include "log.h"
#include "msg.h"
#include "qemu.h"
#include "rdfile.h"
#include "vm.h"

#define VM_HOST_MEM_RESERVE	(256ULL << 20)	/* kept free for the host */
#define VM_HOST_DISK_RESERVE	(1ULL << 30)
#define STORE_TEXT_MAX		1023
#define VM_FORWARD_BIND		"127.0.0.1"
#define VM_STORE_REQ_FIRST	1
#define VM_TEMPLATE_REBUILDS	3	/* new checkpoints per run at most */
#define VM_IMAGE_WAIT		120	/* s a vm_create waits for its image */
#define VM_IMAGE_WAITS_MAX	64	/* such calls at once */

struct vm_list		 vms = TAILQ_HEAD_INITIALIZER(vms);

static struct cgroups	 cgroups;
static enum accel_choice accel;
static uint32_t		 tsc_khz;	/* TCG guests' TSC, 0 unknown */
static uint32_t		 child_req_next = VM_STORE_REQ_FIRST;
static uint32_t		 call_next = 1;
static int		 store_up;
static char		 vmsdir[PATH_MAX];	/* rundir/vms: jail roots */
static char		 store_preflight[STORE_TEXT_MAX + 1];
static char		 net_preflight[2048];

/* What stored said of each catalog image. */
static struct {
	char		 name[OBJ_NAME_MAX + 1];
	int		 ok;
	uint64_t	 bytes;
	char		 text[256];
} images[CONF_MAX_IMAGES];
static size_t		 nimages;

/*
 * vm_create calls that came while their image was being verified.  Each
 * holds its own copy of the arguments and runs again once stored reports
 * the image, or fails after VM_IMAGE_WAIT seconds.  No receipt exists
 * for one yet: the same request_id may be sent again meanwhile.
 */
struct vm_image_wait {
	TAILQ_ENTRY(vm_image_wait) entry;
	uint64_t		 peerid;
	struct ws_auth		 auth;
	struct tool_args	 args;		/* every pointer owned */
	char			 image[OBJ_NAME_MAX + 1];
	struct event		 timer;
};
static TAILQ_HEAD(, vm_image_wait) image_waits =
    TAILQ_HEAD_INITIALIZER(image_waits);
static size_t		 nimage_waits;

/*
 * Fast creation (ARCHITECTURE.md section 4): once per run, a template VM
 * of the first catalog image, in the default configuration and without
 * network, boots with a read-only root until its agent holds on the agent
 * port, before anything is written to its disk, and is checkpointed
 * there.  A new VM of that configuration starts from the checkpoint with
 * its own fresh disk; the monitor then releases it, and gives the guest
 * the host's time and fresh randomness as to every guest.  Anything else
 * boots.
 */
static struct {
	struct vm	*vm;		/* while it is being made */
	int		 tried;
	int		 ready;
	int		 rebuilds;	/* after a retirement */
	char		 id[ID_MAX + 1];
	char		 image[OBJ_NAME_MAX + 1];
	uint32_t	 memory_mib;
	uint32_t	 vcpus;
	char		 why[320];
} tpl;

static const char *const state_names[VS_NSTATES] = {
	[VS_CREATING] = "creating",
	[VS_BOOTING] = "booting",
	[VS_RUNNING] = "running",
	[VS_PAUSED] = "paused",
	[VS_STOPPING] = "stopping",
	[VS_STOPPED] = "stopped",
	[VS_FAILED] = "failed",
	[VS_DESTROYING] = "destroying",
};

static void	 vm_spawn(struct vm *);
static void	 vm_template_build(void);
static void	 vm_template_held(struct vm *);
static void	 vm_template_off(const char *);
static void	 vm_store_delete_unowned(const char *);
static int	 vm_image_find(const char *, uint64_t *, char *, size_t);
static void	 vm_image_waits_run(const char *);
static void	 vm_create_call(uint64_t, const struct ws_auth *,
		    const struct tool_args *, int);
static int	 vm_slot_alloc(uint32_t *);
static void	 vm_random_id(const char *, char *, size_t);
static void	 vm_kill(struct vm *);
static void	 vm_net_setup(struct vm *);
static void	 vm_fail(struct vm *, const char *);
static void	 vm_vmm_dispatch(int, short, void *);
static void	 vm_processes_gone(struct vm *);
static void	 vm_op_done(struct vm *, int, const char *);
static void	 vm_destroy_finish(struct vm *);
static void	 vm_close_store_fds(struct vm *);
static time_t	 vm_now(void);

const char *
vm_state_name(enum vm_state s)
{
	return s < VS_NSTATES ? state_names[s] : "unknown";
}

static enum vm_state
vm_state_parse(const char *s)
{
	int	 i;

	for (i = 0; i < VS_NSTATES; i++)
		if (strcmp(state_names[i], s) == 0)
			return i;
	return VS_FAILED;
}

/* A VM by id, visible only to its own workspace (ws 0: any). */
struct vm *
vm_find(const char *id, int64_t ws)
{
	struct vm	*vm;

	TAILQ_FOREACH(vm, &vms, entry)
		if (strcmp(vm->row.id, id) == 0 &&
		    (ws == 0 || vm->row.ws_id == ws))
			return vm;
	return NULL;
}

/*
 * A frontd call as mcvmd holds it: frontd's request id (the imsg peerid)
 * in the low 32 bits, and in the high 32 the instance of frontd it came
 * from, which counts frontd's starts.  0 stands for no caller.
 */
uint64_t
vm_front_call(uint32_t peerid)
{
	return (uint64_t)child_by_id(PROC_FRONTD)->gen << 32 | peerid;
}

/*
 * The frontd a call came from, if it still runs: an answer for an
 * earlier instance is dropped, never matched to a request of the new one
 * that happens to have the same number.
 */
static struct child *
vm_front_for(uint64_t call)
{
	struct child	*c = child_by_id(PROC_FRONTD);

	if (call == 0)
		return NULL;
	if (call >> 32 != c->gen || !c->iev_live ||
	    c->state != CHILD_RUNNING) {
		log_debug("answer to call %u of frontd instance %u dropped",
		    (uint32_t)call, (uint32_t)(call >> 32));
		return NULL;
	}
	return c;
}

/*
 * Answers a frontd call.  A result over the budget that frontd reads
 * (TOOL_RESULT_MAX) is refused for that call alone: the caller is told
 * to ask for less.
 */
void
vm_reply(uint64_t peerid, enum tool_status st, const char *text)
{
	struct child	*c;
	struct ibuf	*b;
	size_t		 len = strlen(text);
	char		 msg[TOOL_MESSAGE_MAX];

	if ((c = vm_front_for(peerid)) == NULL)
		return;
	if (len > TOOL_RESULT_MAX) {
		log_warnx("call %u: a %zu-byte result is over the budget of "
		    "%d bytes; refused", (uint32_t)peerid, len,
		    TOOL_RESULT_MAX);
		(void)snprintf(msg, sizeof(msg), "the result would be %zu "
		    "bytes, over the %d KiB one call may return; nothing was "
		    "lost: ask for less at a time", len,
		    TOOL_RESULT_MAX / 1024);
		st = TOOL_ERROR;
		text = msg;
		len = strlen(msg);
	}
	if ((b = imsg_create(&c->iev.ibuf, IMSG_FRONT_TOOL_RESULT,
	    (uint32_t)peerid, 0, len + 16)) == NULL)
		fatal("%s", __func__);
	m_add_u32(b, st);
	m_add_str(b, text);
	if (imsgev_close(&c->iev, b) == -1)
		fatal("%s", __func__);
}

/* Tells a long call's caller how far it got (MCP progress). */
static void
vm_front_progress(uint64_t call, uint64_t done, uint64_t total,
    const char *what)
{
	struct child	*c;
	struct ibuf	*b;

	if ((c = vm_front_for(call)) == NULL)
		return;
	if ((b = imsg_create(&c->iev.ibuf, IMSG_FRONT_PROGRESS,
	    (uint32_t)call, 0, 64 + strlen(what))) == NULL)
		fatal("%s", __func__);
	m_add_u64(b, done);
	m_add_u64(b, total);
	m_add_str(b, what);
	if (imsgev_close(&c->iev, b) == -1)
		fatal("%s", __func__);
}

static void
vm_progress(const struct vm *vm, uint64_t done, uint64_t total,
    const char *what)
{
	if (vm->op.pending)
		vm_front_progress(vm->op.peerid, done, total, what);
}

/*
 * Sends a JSON result mcvmd built, and frees it.  A result that cannot be
 * encoded (NULL from a failed json_pack, or text that is not UTF-8) fails
 * the call, not mcvmd.
 */
void
vm_reply_json(uint64_t peerid, json_t *j)
{
	char	*text;

	if (j == NULL || (text = json_dumps(j, JSON_COMPACT)) == NULL) {
		log_warnx("call %u: the result could not be encoded",
		    (uint32_t)peerid);
		vm_reply(peerid, TOOL_ERROR, "internal error: the result "
		    "could not be encoded; nothing was changed by it");
		json_decref(j);
		return;
	}
	vm_reply(peerid, TOOL_OK, text);
	free(text);
	json_decref(j);
}

json_t *
vm_json(const struct vm *vm)
{
	json_t	*j, *fwd;
	size_t	 i;

	j = json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:s, s:I, s:i, s:s}",
	    "vm_id", vm->row.id,
	    "name", vm->row.name,
	    "state", vm_state_name(vm->state),
	    "image", vm->row.image,
	    "memory_mib", (int)vm->row.memory_mib,
	    "vcpus", (int)vm->row.vcpus,
	    "network", vm->row.network ? "on" : "off",
	    "created", (json_int_t)vm->row.created,
	    "idle_seconds", (int)vm->row.idle_seconds,
	    "idle_mode", vm->row.idle_mode ? "pause" : "hibernate");
	if (j == NULL)
		fatalx("%s: json_pack", __func__);
	if (vm->row.reason[0] != '\0')
		json_object_set_new(j, "reason", json_string(vm->row.reason));
	if (vm->address[0] != '\0') {
		json_object_set_new(j, "address", json_string(vm->address));
		json_object_set_new(j, "gateway", json_string(vm->gateway));
		json_object_set_new(j, "mac", json_string(vm->mac));
		fwd = json_array();
		for (i = 0; i < vm->nfwd; i++)
			json_array_append_new(fwd, json_pack("{s:s, s:i, "
			    "s:i}", "host_address", VM_FORWARD_BIND,
			    "host_port", vm->fwd[i].host, "guest_port",
			    vm->fwd[i].guest));
		json_object_set_new(j, "port_forwards", fwd);
	}
	return j;
}

/* Records the new state in memory and state.db. */
void
vm_set_state(struct vm *vm, enum vm_state s, const char *reason)
{
	const char	*intent = "";

	switch (s) {
	case VS_CREATING:
		intent = "create";
		break;
	case VS_BOOTING:
		intent = "boot";
		break;
	case VS_STOPPING:
		intent = "stop";
		break;
	case VS_DESTROYING:
		intent = "destroy";
		break;
	default:
		break;
	}
	log_info("%s: %s -> %s%s%s", vm->row.id, vm_state_name(vm->state),
	    vm_state_name(s), reason != NULL ? ": " : "",
	    reason != NULL ? reason : "");
	vm->state = s;
	(void)snprintf(vm->row.state, sizeof(vm->row.state), "%s",
	    vm_state_name(s));
	if (reason != NULL)
		(void)snprintf(vm->row.reason, sizeof(vm->row.reason), "%s",
		    reason);
	else if (s == VS_RUNNING)
		vm->row.reason[0] = '\0';
	if (!vm->tpl && state_vm_set(vm->row.id, vm_state_name(s), intent,
	    s == VS_RUNNING ? "" : reason) == -1)
		log_warnx("%s: state not recorded", vm->row.id);
}

static struct vm *
vm_alloc(const struct vm_row *row)
{
	struct vm	*vm;
	int		 i;

	if ((vm = calloc(1, sizeof(*vm))) == NULL)
		fatal("%s", __func__);
	vm->row = *row;
	vm->state = vm_state_parse(row->state);
	TAILQ_INIT(&vm->calls);
	for (i = 0; i <= STORE_FD_MAX; i++)
		vm->store_fds[i] = -1;
	for (i = 0; i <= NET_FD_TAP; i++)
		vm->net_fds[i] = -1;
	TAILQ_INSERT_TAIL(&vms, vm, entry);
	return vm;
}

/* The fds stored and netd handed over for a spawn, once QEMU has them. */
static void
vm_close_store_fds(struct vm *vm)
{
	int	 i;

	for (i = 0; i <= STORE_FD_MAX; i++) {
		if (vm->store_fds[i] != -1)
			close(vm->store_fds[i]);
		vm->store_fds[i] = -1;
	}
	for (i = 0; i <= NET_FD_TAP; i++) {
		if (vm->net_fds[i] != -1)
			close(vm->net_fds[i]);
		vm->net_fds[i] = -1;
	}
}

static void
vm_timer_clear(struct vm *vm)
{
	if (vm->timer_set)
		evtimer_del(&vm->timer);
	vm->timer_set = 0;
}

static void
vm_free(struct vm *vm)
{
	struct vm_call	*c;

	vm_timer_clear(vm);
	while ((c = TAILQ_FIRST(&vm->calls)) != NULL)
		vm_call_fail(c, "the VM is gone");
	vm_close_store_fds(vm);
	TAILQ_REMOVE(&vms, vm, entry);
	free(vm);
}

/* ---- start-up and reconciliation ---------------------------------------- */

static int
vm_load_row(const struct vm_row *row, void *arg)
{
	struct vm	*vm;
	char		 why[200];

	vm = vm_alloc(row);
	switch (vm->state) {
	case VS_STOPPED:
	case VS_FAILED:
	case VS_DESTROYING:
		break;
	default:
		/* Its processes died with the old mcvmd, or are killed
		 * below: never guess that it is still fine. */
		(void)snprintf(why, sizeof(why), "mcvmd restarted while the "
		    "VM was %s (intent %s); its processes were stopped",
		    row->state, row->intent[0] != '\0' ? row->intent : "none");
		vm_set_state(vm, VS_FAILED, why);
		break;
	}
	return 0;
}

static void
vm_kill_leftover(const char *id, void *arg)
{
	log_warnx("%s: killing the processes left in its cgroup", id);
	if (cgroup_vm_kill(&cgroups, id) == -1 ||
	    cgroup_vm_destroy(&cgroups, id) == -1)
		log_warn("%s: leftover cgroup", id);
}

static void
vm_instance_name(char *out, size_t len)
{
	uint8_t	 h[SHA256_LEN];
	char	 hex[2 * SHA256_LEN + 1];

	if (sha256(env->conf.statedir, strlen(env->conf.statedir), h) == -1)
		fatalx("%s: sha256", __func__);
	hex_encode(h, 4, hex);
	hex[8] = '\0';
	if (strlen(hex) >= len)
		fatalx("%s: buffer", __func__);
	memcpy(out, hex, strlen(hex) + 1);
}

/*
 * Loads the VMs state.db knows, marks the interrupted ones failed, kills
 * whatever processes the previous mcvmd left in VM cgroups, and settles
 * receipts whose outcome is now unknown.
 */
void
vm_init(void)
{
	char	 why[256], instance[16];

	vm_instance_name(instance, sizeof(instance));
	if (cgroup_init(&cgroups, instance) == -1)
		log_warnx("VMs disabled: %s", cgroups.why);
	else
		log_info("%s", cgroups.why);
	accel = accel_choose(env->conf.accel, "", why, sizeof(why));
	log_info("accelerator %s", why);
	if (accel == ACCEL_USE_TCG && (tsc_khz = qemu_tsc_khz()) != 0)
		log_info("guests are told the host's TSC runs at %u kHz",
		    tsc_khz);
	if (snprintf(vmsdir, sizeof(vmsdir), "%s/vms", env->conf.rundir) >=
	    (int)sizeof(vmsdir))
		fatalx("run directory path too long");
	if (mkdir(vmsdir, 0755) == -1 && errno != EEXIST)
		fatal("mkdir %s", vmsdir);

	if (state_vm_each(vm_load_row, NULL) == -1)
		fatalx("cannot load VMs from state.db");
	if (cgroups.ok)
		(void)cgroup_vm_list(&cgroups, vm_kill_leftover, NULL);
	if (state_receipts_orphan() == -1)
		fatalx("cannot settle request receipts");
}

/* ---- deadlines ---------------------------------------------------------- */

static struct event	 sweep_ev;

static time_t
vm_now(void)
{
	struct timespec	 ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) == -1)
		fatal("clock_gettime");
	return ts.tv_sec;
}

/*
 * A child that misses a deadline is hung: it is killed, and its restart
 * settles what else waited for it, as after a crash.
 */
static void
vm_child_hung(enum proc_id id)
{
	struct child	*c = child_by_id(id);

	if (c->pid <= 0)
		return;
	log_warnx("%s (pid %d) missed a deadline; killing it",
	    c->desc->title, (int)c->pid);
	(void)kill(c->pid, SIGKILL);
}

static void
vm_store_late(struct vm *vm)
{
	char	 msg[128];

	vm->store_req = 0;
	vm_close_store_fds(vm);
	(void)snprintf(msg, sizeof(msg), "the storage daemon did not answer "
	    "within %d s", VM_STORE_TIMEOUT);
	if (vm->state == VS_DESTROYING)
		vm_op_done(vm, 0, "the VM's disk could not be deleted in time; "
		    "retry vm_destroy");
	else
		vm_fail(vm, msg);
}

static void
vm_net_late(struct vm *vm)
{
	char	 msg[128];

	vm->net_req = 0;
	if (vm->net_teardown) {
		/* netd's restart lists what the teardown left. */
		vm->net_teardown = 0;
		if (vm->state == VS_DESTROYING)
			vm_destroy_finish(vm);
		return;
	}
	vm_close_store_fds(vm);
	(void)snprintf(msg, sizeof(msg), "the network daemon did not answer "
	    "within %d s", VM_NET_TIMEOUT);
	vm_fail(vm, msg);
}

/*
 * Once a second: every request to stored, netd or a monitor that is past
 * its deadline fails, so that no call waits for ever on a hung process.
 */
static void
vm_sweep(int fd, short event, void *arg)
{
	struct timeval	 tv = { 1, 0 };
	struct vm	*vm, *vnext;
	struct vm_call	*c;
	time_t		 now = vm_now();
	int		 store_hung = 0, net_hung = 0;

	for (vm = TAILQ_FIRST(&vms); vm != NULL; vm = vnext) {
		vnext = TAILQ_NEXT(vm, entry);
again:
		/* What a failure does may end other calls: look again. */
		TAILQ_FOREACH(c, &vm->calls, entry) {
			if (now < c->deadline)
				continue;
			TAILQ_REMOVE(&vm->calls, c, entry);
			vm->ncalls--;
			vm_call_expired(c);
			goto again;
		}
		if (vm->store_req != 0 && now >= vm->store_deadline) {
			store_hung = 1;
			vm_store_late(vm);
		} else if (vm->net_req != 0 && now >= vm->net_deadline) {
			net_hung = 1;
			vm_net_late(vm);
		}
	}
	if (store_hung)
		vm_child_hung(PROC_STORED);
	if (net_hung)
		vm_child_hung(PROC_NETD);
	evtimer_add(&sweep_ev, &tv);
}

/* After event_init: the deadline sweep. */
void
vm_timers_init(void)
{
	struct timeval	 tv = { 1, 0 };

	evtimer_set(&sweep_ev, vm_sweep, NULL);
	evtimer_add(&sweep_ev, &tv);
}

/* A request id for stored or netd: never 0, which stands for none. */
static uint32_t
req_next(void)
{
	uint32_t	 req = child_req_next++;

	if (child_req_next == 0)
		child_req_next = VM_STORE_REQ_FIRST;
	return req;
}

/* A request to stored or netd: its message, to fill, then child_send. */
static struct ibuf *
child_msg(enum proc_id id, uint32_t type, uint32_t req)
{
	struct ibuf	*b;

	if ((b = imsg_create(&child_by_id(id)->iev.ibuf, type, req, 0,
	    128)) == NULL)
		fatal("%s", __func__);
	return b;
}

/*
 * A child that is down gets nothing: the requests of a VM that wait for
 * it are settled when it is up again (vm_store_up, vm_net_up).
 */
static void
child_send(enum proc_id id, struct ibuf *b)
{
	struct child	*c = child_by_id(id);

	if (!c->iev_live) {
		log_debug("%s is down: %s not sent", c->desc->title,
		    imsg_type_name(le32_get(b->buf)));
		imsg_discard(b);
		return;
	}
	if (imsgev_close(&c->iev, b) == -1)
		fatal("%s", __func__);
}

/* A request of vm's to stored: its message, to fill and then send. */
static struct ibuf *
vm_store_msg(struct vm *vm, uint32_t type)
{
	vm->store_req = req_next();
	vm->store_deadline = vm_now() + VM_STORE_TIMEOUT;
	vm->store_type = type;
	return child_msg(PROC_STORED, type, vm->store_req);
}

static void
vm_store_send(struct vm *vm, uint32_t type)
{
	struct ibuf	*b = vm_store_msg(vm, type);

	m_add_str(b, vm->row.id);
	if (type != IMSG_STORE_DISK_DELETE)
		m_add_str(b, vm->row.image);
	child_send(PROC_STORED, b);
}

/* stored (re)started: finish deletions a crash interrupted. */
void
vm_store_up(void)
{
	struct vm	*vm;

	store_up = 1;
	nimages = 0;
	child_send(PROC_STORED, child_msg(PROC_STORED, IMSG_STORE_PREFLIGHT,
	    req_next()));
	child_send(PROC_STORED, child_msg(PROC_STORED, IMSG_STORE_DISK_LIST,
	    req_next()));
	TAILQ_FOREACH(vm, &vms, entry) {
		if (vm->store_req != 0) {
			/* The old stored died with this request. */
			vm->store_req = 0;
			vm_close_store_fds(vm);
			if (vm->state == VS_CREATING ||
			    vm->state == VS_BOOTING) {
				vm_fail(vm, "the storage daemon restarted");
				continue;
			}
		}
		if (vm->state == VS_DESTROYING && vm->store_req == 0)
			vm_store_send(vm, IMSG_STORE_DISK_DELETE);
	}
}

static void
vm_image_status(struct imsg *imsg)
{
	struct mreader	 r;
	const char	*name, *text;
	uint64_t	 bytes;
	uint32_t	 ok;

	m_init(&r, imsg);
	if (m_get_str(&r, &name, OBJ_NAME_MAX) == -1 ||
	    m_get_u32(&r, &ok) == -1 || m_get_u64(&r, &bytes) == -1 ||
	    m_get_str(&r, &text, STORE_TEXT_MAX) == -1 || m_end(&r) == -1)
		fatalx("stored: malformed %s", imsg_type_name(imsg->hdr.type));
	if (nimages == CONF_MAX_IMAGES)
		fatalx("stored: too many images");
	(void)snprintf(images[nimages].name, sizeof(images[nimages].name),
	    "%s", name);
	images[nimages].ok = ok == 1;
	images[nimages].bytes = bytes;
	(void)snprintf(images[nimages].text, sizeof(images[nimages].text),
	    "%s", text);
	nimages++;
	if (ok == 1)
		log_info("image %s: %s", name, text);
	else
		log_warnx("image %s refused: %s", name, text);
	vm_image_waits_run(images[nimages - 1].name);
	vm_template_build();
}

static struct vm *
vm_by_store_req(uint32_t req)
{
	struct vm	*vm;

	if (req == 0)
		return NULL;
	TAILQ_FOREACH(vm, &vms, entry)
		if (vm->store_req == req)
			return vm;
	return NULL;
}

/*
 * The last step of a destroy, once the disk is deleted and netd has torn
 * the network down: the rows go (the audit log stays), and the caller is
 * told.
 */
static void
vm_destroy_finish(struct vm *vm)
{
	json_t	*j;

	if (!vm->disk_gone || vm->net_req != 0)
		return;
	if (!vm->tpl) {		/* a template has no rows */
		if (state_vm_delete(vm->row.id) == -1)
			log_warnx("%s: rows not deleted", vm->row.id);
		(void)state_audit("mcvmd", "vm-destroy", vm->row.id);
	}
	log_info("%s: destroyed", vm->row.id);
	if (vm->op.pending) {
		j = json_pack("{s:s, s:b}", "vm_id", vm->row.id, "destroyed",
		    1);
		vm->op.pending = 0;
		vm_reply_json(vm->op.peerid, j);
	}
	vm_free(vm);
}

/* Asks stored for VM id's checkpoint file, to write or to read. */
static void
vm_store_checkpoint(struct vm *vm, const char *id, int write)
{
	struct ibuf	*b = vm_store_msg(vm, IMSG_STORE_CHECKPOINT);

	m_add_str(b, id);
	m_add_u32(b, write ? 1 : 0);
	child_send(PROC_STORED, b);
}

/*
 * The checkpoint file stored opened (err NULL) or could not.  The
 * template has its monitor write it; a new VM restores from it, or boots
 * if it cannot.
 */
static void
vm_checkpoint_fd(struct vm *vm, const char *err)
{
	struct vm_call	*c;
	struct ibuf	*b;
	int		 fd = vm->store_fds[STORE_FD_CHECKPOINT];
	char		 msg[400];

	vm->store_fds[STORE_FD_CHECKPOINT] = -1;
	if (err == NULL && fd == -1)
		err = "no descriptor";
	if (err != NULL && fd != -1)
		close(fd);
	if (vm->tpl) {
		if (err != NULL) {
			(void)snprintf(msg, sizeof(msg), "no checkpoint "
			    "file: %s", err);
			vm_fail(vm, msg);
			return;
		}
		c = vm_call_new(vm, 0, TOOL_NONE);
		b = vm_call_msg(vm, IMSG_VMM_CHECKPOINT, c);
		imsg_set_fd(b, fd);
		(void)vm_call(vm, c, b);
		return;
	}
	if (err != NULL) {
		log_warnx("%s: boots instead of restoring: %s", vm->row.id,
		    err);
		vm->restore = 0;
	} else
		vm->store_fds[STORE_FD_CHECKPOINT] = fd;
	vm_net_setup(vm);
}

static void
vm_store_result(struct vm *vm, struct imsg *imsg)
{
	struct mreader	 r;
	const char	*text;
	uint64_t	 bytes;
	uint32_t	 status, format, type;
	char		 msg[320];

	m_init(&r, imsg);
	if (m_get_u32(&r, &status) == -1 || m_get_u32(&r, &format) == -1 ||
	    m_get_u64(&r, &bytes) == -1 ||
	    m_get_str(&r, &text, STORE_TEXT_MAX) == -1 ||
	    m_end(&r) == -1 || format > DISK_QCOW2)
		fatalx("stored: malformed %s", imsg_type_name(imsg->hdr.type));
	type = vm->store_type;
	vm->store_req = 0;
	vm->store_type = 0;
	if (imsg->hdr.type != IMSG_STORE_RESULT)
		fatalx("stored: unexpected %s", imsg_type_name(imsg->hdr.type));

	if (vm->state == VS_DESTROYING) {
		if (type != IMSG_STORE_DISK_DELETE) {
			/* The destroy overtook a creation: now the delete. */
			vm_close_store_fds(vm);
			vm_store_send(vm, IMSG_STORE_DISK_DELETE);
			return;
		}
		if (status != 0 && status != ENOENT) {
			log_warnx("%s: disk not deleted: %s", vm->row.id,
			    text);
			vm_op_done(vm, 0, "the VM's disk could not be deleted; "
			    "retry vm_destroy");
			return;
		}
		vm->disk_gone = 1;
		vm_destroy_finish(vm);
		return;
	}
	if (type == IMSG_STORE_CHECKPOINT) {
		vm_checkpoint_fd(vm, status == 0 ? NULL : text);
		return;
	}
	if (status != 0 || vm->store_fds[STORE_FD_DISK] == -1 ||
	    vm->store_fds[STORE_FD_KERNEL] == -1 ||
	    (format == DISK_QCOW2 && vm->store_fds[STORE_FD_BASE] == -1)) {
		(void)snprintf(msg, sizeof(msg), "the disk could not be "
		    "prepared: %s", status != 0 ? text : "descriptors missing");
		vm_close_store_fds(vm);
		vm_fail(vm, msg);
		return;
	}
	vm->disk_format = format;
	log_info("%s: disk ready (%s)", vm->row.id, text);
	vm_progress(vm, 1, 3, "disk ready");
	if (vm->restore && tpl.ready) {
		vm_store_checkpoint(vm, tpl.id, 0);
		return;
	}
	vm->restore = 0;	/* retired meanwhile: it boots */
	vm_net_setup(vm);
}

/* Whether VM disks are reflink clones or qcow2 overlays, and why. */
static void
vm_store_preflight(struct imsg *imsg)
{
	struct mreader	 r;
	const char	*text;
	uint32_t	 reflink;

	m_init(&r, imsg);
	if (m_get_u32(&r, &reflink) == -1 ||
	    m_get_str(&r, &text, STORE_TEXT_MAX) == -1 || m_end(&r) == -1)
		fatalx("stored: malformed %s", imsg_type_name(imsg->hdr.type));
	(void)snprintf(store_preflight, sizeof(store_preflight), "%s", text);
	log_info("storage: %s", text);
}

/* Deletes the disk directory of a VM that is no more (request 0). */
static void
vm_store_delete_unowned(const char *id)
{
	struct ibuf	*b = child_msg(PROC_STORED, IMSG_STORE_DISK_DELETE, 0);

	m_add_str(b, id);
	child_send(PROC_STORED, b);
}

/*
 * A disk directory stored holds: one that no VM owns (a template of an
 * earlier run, or what a crash left) is deleted.
 */
static void
vm_store_entry(struct imsg *imsg)
{
	struct mreader	 r;
	const char	*id;

	m_init(&r, imsg);
	if (m_get_str(&r, &id, ID_MAX) == -1 || m_end(&r) == -1 ||
	    !valid_id(id, "vm-"))
		fatalx("stored: malformed %s", imsg_type_name(imsg->hdr.type));
	if (vm_find(id, 0) != NULL || strcmp(id, tpl.id) == 0)
		return;
	log_info("%s: deleting the disk no VM owns", id);
	vm_store_delete_unowned(id);
}

void
vm_store_imsg(struct imsg *imsg)
{
	struct mreader	 r;
	struct vm	*vm;
	uint32_t	 role;
	int		 fd;

	switch (imsg->hdr.type) {
	case IMSG_STORE_IMAGE_STATUS:
		vm_image_status(imsg);
		return;
	case IMSG_STORE_PREFLIGHT_RESULT:
		vm_store_preflight(imsg);
		return;
	case IMSG_STORE_DISK_ENTRY:
		vm_store_entry(imsg);
		return;
	case IMSG_STORE_FD:
		m_init(&r, imsg);
		if (m_get_u32(&r, &role) == -1 || m_end(&r) == -1 ||
		    role < STORE_FD_DISK || role > STORE_FD_MAX ||
		    imsg->fd == -1)
			fatalx("stored: malformed IMSG_STORE_FD");
		fd = imsg_get_fd(imsg);
		if ((vm = vm_by_store_req(imsg->hdr.peerid)) == NULL) {
			close(fd);
			return;
		}
		if (vm->store_fds[role] != -1)
			fatalx("stored: fd role %u sent twice", role);
		vm->store_fds[role] = fd;
		return;
	case IMSG_STORE_RESULT:
		if ((vm = vm_by_store_req(imsg->hdr.peerid)) == NULL)
			return;
		vm_store_result(vm, imsg);
		return;
	default:
		fatalx("stored: unexpected %s", imsg_type_name(imsg->hdr.type));
	}
}

/* ---- network (netd) ---------------------------------------------------- */

/* Returns the request id, or 0 if netd is not there to ask. */
static uint32_t
vm_net_send_teardown(const char *id, uint32_t slot)
{
	struct child	*c = child_by_id(PROC_NETD);
	struct ibuf	*b;
	uint32_t	 req;

	if (!c->iev_live || c->state != CHILD_RUNNING)
		return 0;
	b = child_msg(PROC_NETD, IMSG_NET_TEARDOWN, req = req_next());
	m_add_str(b, id);
	m_add_u32(b, slot);
	child_send(PROC_NETD, b);
	return req;
}

/*
 * Every VM gets its own network namespace from netd; with network on, a
 * tap in it, an address and its port forwards.
 */
static void
vm_net_setup(struct vm *vm)
{
	struct child	*c = child_by_id(PROC_NETD);
	struct ibuf	*b;
	size_t		 i;

	if (!c->iev_live || c->state != CHILD_RUNNING) {
		vm_fail(vm, "the network daemon is not up");
		return;
	}
	vm->net_req = req_next();
	vm->net_deadline = vm_now() + VM_NET_TIMEOUT;
	b = child_msg(PROC_NETD, IMSG_NET_SETUP, vm->net_req);
	m_add_str(b, vm->row.id);
	m_add_u32(b, vm->row.slot);
	m_add_u32(b, vm->row.network);
	m_add_u32(b, (uint32_t)vm->nfwd);
	for (i = 0; i < vm->nfwd; i++) {
		m_add_u32(b, vm->fwd[i].host);
		m_add_u32(b, vm->fwd[i].guest);
	}
	child_send(PROC_NETD, b);
	vm->net_live = 1;
}

static struct vm *
vm_by_net_req(uint32_t req)
{
	struct vm	*vm;

	if (req == 0)
		return NULL;
	TAILQ_FOREACH(vm, &vms, entry)
		if (vm->net_req == req)
			return vm;
	return NULL;
}

static int
vm_net_str(struct mreader *r, char *dst)
{
	const char	*s;

	if (m_get_str(r, &s, VM_NET_STR_MAX - 1) == -1)
		return -1;
	memcpy(dst, s, strlen(s) + 1);
	return 0;
}

static void
vm_net_result(struct vm *vm, struct imsg *imsg)
{
	struct mreader	 r;
	const char	*text;
	uint32_t	 status, n, host, guest, i;
	char		 msg[STORE_TEXT_MAX + 64];

	m_init(&r, imsg);
	if (m_get_u32(&r, &status) == -1 || vm_net_str(&r, vm->address) ==
	    -1 || vm_net_str(&r, vm->gateway) == -1 ||
	    vm_net_str(&r, vm->resolver) == -1 || vm_net_str(&r, vm->mac) ==
	    -1 || m_get_u32(&r, &n) == -1)
		fatalx("netd: malformed IMSG_NET_RESULT");
	if (status == 0 && n != vm->nfwd)
		fatalx("netd: %u forwards for %zu asked", n, vm->nfwd);
	for (i = 0; i < n; i++) {
		if (m_get_u32(&r, &host) == -1 || m_get_u32(&r, &guest) == -1 ||
		    host == 0 || host > 65535 || guest != vm->fwd[i].guest ||
		    (vm->fwd[i].host != 0 && host != vm->fwd[i].host))
			fatalx("netd: bad forward in IMSG_NET_RESULT");
		vm->fwd[i].host = (uint16_t)host;
	}
	if (m_get_str(&r, &text, STORE_TEXT_MAX) == -1 || m_end(&r) == -1)
		fatalx("netd: malformed IMSG_NET_RESULT");
	vm->net_req = 0;
	if (vm->state == VS_DESTROYING) {
		/* Destroyed while netd worked: undo what it set up. */
		vm_close_store_fds(vm);
		vm_processes_gone(vm);
		return;
	}
	if (status != 0) {
		vm->address[0] = '\0';
		(void)snprintf(msg, sizeof(msg), "the network could not be "
		    "set up: %s", text);
		vm_close_store_fds(vm);
		vm_fail(vm, msg);
		return;
	}
	if (vm->net_fds[NET_FD_NETNS] == -1 || (vm->row.network &&
	    (vm->net_fds[NET_FD_TAP] == -1 || !qemu_valid_mac(vm->mac))))
		fatalx("netd: network set up without its fds or MAC");
	if (!vm->row.network)
		vm->address[0] = '\0';
	vm_spawn(vm);
}

void
vm_net_imsg(struct imsg *imsg)
{
	struct mreader	 r;
	struct vm	*vm;
	const char	*id;
	uint32_t	 role, slot;
	int		 fd;

	switch (imsg->hdr.type) {
	case IMSG_NET_FD:
		m_init(&r, imsg);
		if (m_get_u32(&r, &role) == -1 || m_end(&r) == -1 ||
		    role < NET_FD_NETNS || role > NET_FD_TAP || imsg->fd == -1)
			fatalx("netd: malformed IMSG_NET_FD");
		fd = imsg_get_fd(imsg);
		if ((vm = vm_by_net_req(imsg->hdr.peerid)) == NULL) {
			close(fd);
			return;
		}
		if (vm->net_fds[role] != -1)
			fatalx("netd: fd role %u sent twice", role);
		vm->net_fds[role] = fd;
		return;
	case IMSG_NET_RESULT:
		if ((vm = vm_by_net_req(imsg->hdr.peerid)) == NULL)
			return;
		if (!vm->net_teardown) {
			vm_net_result(vm, imsg);
			return;
		}
		/* A teardown's answer: what it says is netd's to log. */
		vm->net_teardown = 0;
		vm->net_req = 0;
		if (vm->state == VS_DESTROYING)
			vm_destroy_finish(vm);
		return;
	case IMSG_NET_ENTRY:
		/* What netd holds for a VM that is not running goes. */
		m_init(&r, imsg);
		if (m_get_str(&r, &id, ID_MAX) == -1 ||
		    m_get_u32(&r, &slot) == -1 || m_end(&r) == -1)
			fatalx("netd: malformed IMSG_NET_ENTRY");
		vm = vm_find(id, 0);
		if (vm == NULL || (vm->qemu_pid <= 0 && vm->net_req == 0)) {
			log_info("%s: tearing down its leftover network", id);
			vm_net_send_teardown(id, slot);
			if (vm != NULL)
				vm->net_live = 0;
		}
		return;
	case IMSG_NET_PREFLIGHT_RESULT:
		m_init(&r, imsg);
		if (m_get_u32(&r, &slot) == -1 || m_get_str(&r, &id,
		    sizeof(net_preflight) - 1) == -1 || m_end(&r) == -1)
			fatalx("netd: malformed IMSG_NET_PREFLIGHT_RESULT");
		memcpy(net_preflight, id, strlen(id) + 1);
		if (slot > 0)
			log_warnx("network: %s", net_preflight);
		else
			log_info("network: %s", net_preflight);
		return;
	default:
		fatalx("netd: unexpected %s", imsg_type_name(imsg->hdr.type));
	}
}

/* netd (re)started: what it holds for VMs that do not run goes. */
void
vm_net_up(void)
{
	struct vm	*vm, *next;

	/* vm_destroy_finish frees: walk with the next one in hand. */
	for (vm = TAILQ_FIRST(&vms); vm != NULL; vm = next) {
		next = TAILQ_NEXT(vm, entry);
		if (vm->net_req != 0 && vm->net_teardown) {
			/* LIST below finds what the teardown left. */
			vm->net_req = 0;
			vm->net_teardown = 0;
			if (vm->state == VS_DESTROYING)
				vm_destroy_finish(vm);
		} else if (vm->net_req != 0) {
			/* The old netd died with this request. */
			vm->net_req = 0;
			vm_close_store_fds(vm);
			vm_fail(vm, "the network daemon restarted");
		} else if (vm->nfwd > 0 && vm->qemu_pid > 0 &&
		    vm->state != VS_DESTROYING && vm->state != VS_FAILED) {
			/*
			 * netd relayed its forwards itself: they are gone.
			 * Failing the VM says so; a silent half-working VM
			 * would not.
			 */
			vm_fail(vm, "its port forwards ended when the network "
			    "daemon restarted; destroy it and create it again");
		}
	}
	child_send(PROC_NETD, child_msg(PROC_NETD, IMSG_NET_LIST, req_next()));
	child_send(PROC_NETD, child_msg(PROC_NETD, IMSG_NET_PREFLIGHT,
	    req_next()));
	vm_template_build();
}

/* What mcvmctl status shows beyond the processes. */
void
vm_status_notes(void (*note)(const char *, const char *, void *), void *arg)
{
	char	 text[CONF_NAME_MAX + 320];
	size_t	 i;

	note("vms", cgroups.why, arg);
	note("storage", store_preflight[0] != '\0' ? store_preflight :
	    "not checked yet", arg);
	for (i = 0; i < nimages; i++) {
		(void)snprintf(text, sizeof(text), "%.64s: %s%.255s",
		    images[i].name, images[i].ok ? "" : "refused: ",
		    images[i].text);
		note("image", text, arg);
	}
	note("network", net_preflight[0] != '\0' ? net_preflight :
	    "not checked yet", arg);
	if (tpl.ready)
		(void)snprintf(text, sizeof(text), "ready (%s): new VMs of "
		    "image %.64s with %u MiB, %u vCPU and no network start "
		    "from its checkpoint", tpl.id, tpl.image, tpl.memory_mib,
		    tpl.vcpus);
	else
		(void)snprintf(text, sizeof(text), "%s", tpl.vm != NULL ?
		    "being made" : tpl.why[0] != '\0' ? tpl.why :
		    "not made yet");
	note("template", text, arg);
}

/* ---- the template -------------------------------------------------------- */

static void
vm_template_off(const char *why)
{
	tpl.ready = 0;
	(void)snprintf(tpl.why, sizeof(tpl.why), "off: %.300s", why);
	log_warnx("template %s", tpl.why);
}

/*
 * A VM failed while it was being restored from the checkpoint: that
 * implicates the checkpoint, which is retired and made anew (a few times
 * a run at most, in case every checkpoint fails).  Failures elsewhere (the
 * disk, the network, a cancelled creation) leave it be.
 */
static void
vm_template_retire(const char *why)
{
	char	 msg[400];

	if (!tpl.ready)
		return;
	(void)snprintf(msg, sizeof(msg), "checkpoint %s retired: %.300s",
	    tpl.id, why);
	vm_template_off(msg);
	vm_store_delete_unowned(tpl.id);
	tpl.id[0] = '\0';
	if (++tpl.rebuilds > VM_TEMPLATE_REBUILDS) {
		log_warnx("template: not made again (%d times this run)",
		    VM_TEMPLATE_REBUILDS);
		return;
	}
	tpl.tried = 0;
	vm_template_build();
}

/*
 * Starts the template once every daemon it needs is up, as a VM of its
 * own that no workspace owns and state.db does not hold.
 */
static void
vm_template_build(void)
{
	struct child	*netd = child_by_id(PROC_NETD);
	struct vm_row	 row;
	uint64_t	 disk;
	char		 err[320];

	if (tpl.tried || !cgroups.ok || !store_up || env->conf.nimages == 0 ||
	    !netd->iev_live || netd->state != CHILD_RUNNING)
		return;
	if (vm_image_find(env->conf.images[0].name, &disk, err,
	    sizeof(err)) == -1)
		return;		/* not verified yet */
	tpl.tried = 1;
	memset(&row, 0, sizeof(row));
	if (vm_slot_alloc(&row.slot) == -1) {
		vm_template_off("no free VM slot");
		return;
	}
	vm_random_id("vm-", row.id, sizeof(row.id));
	row.uid = env->conf.vm_uid_first + row.slot;
	row.memory_mib = (uint32_t)(env->conf.vm_memory >> 20);
	row.vcpus = env->conf.vm_vcpus;
	(void)snprintf(row.name, sizeof(row.name), "template");
	(void)snprintf(row.image, sizeof(row.image), "%s",
	    env->conf.images[0].name);
	(void)snprintf(row.state, sizeof(row.state), "%s",
	    vm_state_name(VS_CREATING));
	row.disk_bytes = disk;
	row.created = (int64_t)time(NULL);
	tpl.vm = vm_alloc(&row);
	tpl.vm->tpl = 1;
	log_info("%s: template of image %s", row.id, row.image);
	vm_store_send(tpl.vm, IMSG_STORE_DISK_CREATE);
}

/* The template's guest holds: its checkpoint file, then the migration. */
static void
vm_template_held(struct vm *vm)
{
	if (vm->state != VS_BOOTING)
		return;
	vm_progress(vm, 2, 3, "checkpointing");
	vm_store_checkpoint(vm, vm->row.id, 1);
}

/*
 * The monitor wrote the template's checkpoint, or could not.  A template
 * that failed meanwhile (and is being destroyed) stays so: the answer
 * came too late.
 */
void
vm_checkpointed(struct vm *vm, int ok)
{
	if (!vm->tpl)
		fatalx("%s: checkpoint of a VM that is no template", __func__);
	if (vm->state != VS_BOOTING) {
		log_warnx("%s: checkpoint answered after the template was %s",
		    vm->row.id, vm_state_name(vm->state));
		return;
	}
	if (!ok) {
		vm_fail(vm, "the checkpoint could not be written");
		return;
	}
	(void)snprintf(tpl.id, sizeof(tpl.id), "%s", vm->row.id);
	(void)snprintf(tpl.image, sizeof(tpl.image), "%s", vm->row.image);
	tpl.memory_mib = vm->row.memory_mib;
	tpl.vcpus = vm->row.vcpus;
	tpl.ready = 1;
	log_info("%s: template ready", vm->row.id);
	/* Its QEMU has nothing left to do; the checkpoint stays. */
	vm_timer_clear(vm);
	vm_set_state(vm, VS_STOPPING, NULL);
	vm_kill(vm);
}

/* Whether a new VM of this row can start from the template. */
static int
vm_template_fits(const struct vm_row *row)
{
	return tpl.ready && row->network == 0 &&
	    strcmp(row->image, tpl.image) == 0 &&
	    row->memory_mib == tpl.memory_mib && row->vcpus == tpl.vcpus;
}

/* ---- creation ----------------------------------------------------------- */

static int
vm_image_find(const char *name, uint64_t *bytes, char *err, size_t errlen)
{
	size_t	 i;

	for (i = 0; i < nimages; i++) {
		if (strcmp(images[i].name, name) != 0)
			continue;
		if (!images[i].ok) {
			(void)snprintf(err, errlen, "image %s is not usable: "
			    "%s", name, images[i].text);
			return -1;
		}
		*bytes = images[i].bytes;
		return 0;
	}
	for (i = 0; i < env->conf.nimages; i++) {
		if (strcmp(env->conf.images[i].name, name) == 0) {
			(void)snprintf(err, errlen, "image %s is still being "
			    "verified after a service start; retry in a few "
			    "seconds", name);
			return -1;
		}
	}
	(void)snprintf(err, errlen, "no image named %s", name);
	return -1;
}

/* Whether the config names the image and stored has not reported it. */
static int
vm_image_pending(const char *name)
{
	size_t	 i;

	for (i = 0; i < nimages; i++)
		if (strcmp(images[i].name, name) == 0)
			return 0;
	for (i = 0; i < env->conf.nimages; i++)
		if (strcmp(env->conf.images[i].name, name) == 0)
			return 1;
	return 0;
}

static void
vm_args_free(struct tool_args *a)
{
	size_t	 k, j;

	for (k = 0; k < TOOL_PARAMS_MAX; k++) {
		free((char *)a->v[k].s);
		free((void *)a->v[k].b);
		for (j = 0; j < a->v[k].nlist; j++)
			free((char *)a->v[k].list[j]);
	}
	memset(a, 0, sizeof(*a));
}

/* A copy of a call's arguments that owns its strings: 0, or -1. */
static int
vm_args_copy(struct tool_args *dst, const struct tool_args *src)
{
	const struct tool_value	*sv;
	struct tool_value	*dv;
	size_t			 k, j;

	memset(dst, 0, sizeof(*dst));
	dst->tool = src->tool;
	for (k = 0; k < src->tool->nparams && k < TOOL_PARAMS_MAX; k++) {
		sv = &src->v[k];
		dv = &dst->v[k];
		dv->present = sv->present;
		dv->i = sv->i;
		memcpy(dv->cursor, sv->cursor, sizeof(dv->cursor));
		if (sv->s != NULL && (dv->s = strdup(sv->s)) == NULL)
			goto fail;
		if (sv->b != NULL) {
			if ((dv->b = malloc(sv->blen > 0 ? sv->blen : 1)) ==
			    NULL)
				goto fail;
			memcpy((void *)dv->b, sv->b, sv->blen);
			dv->blen = sv->blen;
		}
		for (j = 0; j < sv->nlist && j < TOOL_LIST_MAX; j++) {
			if ((dv->list[j] = strdup(sv->list[j])) == NULL)
				goto fail;
			dv->nlist = j + 1;
		}
	}
	return 0;
fail:
	vm_args_free(dst);
	return -1;
}

static void
vm_image_wait_free(struct vm_image_wait *w)
{
	TAILQ_REMOVE(&image_waits, w, entry);
	nimage_waits--;
	evtimer_del(&w->timer);
	vm_args_free(&w->args);
	free(w);
}

static void
vm_image_wait_timeout(int fd, short event, void *arg)
{
	struct vm_image_wait	*w = arg;
	char			 msg[256];

	(void)snprintf(msg, sizeof(msg), "image %s is still being verified "
	    "after %d s; nothing was done: retry later", w->image,
	    VM_IMAGE_WAIT);
	vm_reply(w->peerid, TOOL_ERROR, msg);
	vm_image_wait_free(w);
}

/* Tells the caller what it waits for, as the creation's step 0 of 3. */
static void
vm_image_wait_progress(const struct vm_image_wait *w)
{
	char	 what[128];

	(void)snprintf(what, sizeof(what), "waiting for image %s to be "
	    "verified", w->image);
	vm_front_progress(w->peerid, 0, 3, what);
}

/* Holds a vm_create until its image is reported, or refuses it now. */
static void
vm_image_wait(uint64_t peerid, const struct ws_auth *auth,
    const struct tool_args *args, const char *image)
{
	struct vm_image_wait	*w;
	struct timeval		 tv = { VM_IMAGE_WAIT, 0 };
	char			 msg[256];

	if (nimage_waits >= VM_IMAGE_WAITS_MAX ||
	    (w = calloc(1, sizeof(*w))) == NULL) {
		(void)snprintf(msg, sizeof(msg), "image %s is still being "
		    "verified after a service start; retry in a few seconds",
		    image);
		vm_reply(peerid, TOOL_ERROR, msg);
		return;
	}
	if (vm_args_copy(&w->args, args) == -1) {
		free(w);
		vm_reply(peerid, TOOL_UNAVAILABLE, "out of memory; retry");
		return;
	}
	w->peerid = peerid;
	w->auth = *auth;
	(void)snprintf(w->image, sizeof(w->image), "%s", image);
	evtimer_set(&w->timer, vm_image_wait_timeout, w);
	evtimer_add(&w->timer, &tv);
	TAILQ_INSERT_TAIL(&image_waits, w, entry);
	nimage_waits++;
	log_debug("workspace %s: vm_create waits for image %s", auth->name,
	    image);
	vm_image_wait_progress(w);
}

/* stored reported image: the calls that waited for it run now. */
static void
vm_image_waits_run(const char *image)
{
	struct vm_image_wait	*w, *next;

	for (w = TAILQ_FIRST(&image_waits); w != NULL; w = next) {
		next = TAILQ_NEXT(w, entry);
		if (strcmp(w->image, image) != 0)
			continue;
		/* It cannot wait again, so the list stays as it is. */
		vm_create_call(w->peerid, &w->auth, &w->args, 0);
		vm_image_wait_free(w);
	}
}

static int
vm_slot_alloc(uint32_t *slot)
{
	uint32_t	 n = env->conf.vm_uid_last - env->conf.vm_uid_first + 1;
	uint32_t	 s;

	/* A slot is a uid and, in netd, a network: the fewer bounds. */
	if (n > slot_count(&env->conf))
		n = slot_count(&env->conf);
	struct vm	*vm;
	int		 used;

	for (s = 0; s < n; s++) {
		used = 0;
		TAILQ_FOREACH(vm, &vms, entry)
			if (vm->row.slot == s)
				used = 1;
		if (!used) {
			*slot = s;
			return 0;
		}
	}
	return -1;
}

static uint64_t
host_mem_available(void)
{
	char		 buf[8192], *p;

	if (read_small_file("/proc/meminfo", buf, sizeof(buf)) == -1 ||
	    (p = strstr(buf, "MemAvailable:")) == NULL)
		return 0;
	return strtoull(p + strlen("MemAvailable:"), NULL, 10) << 10;
}

/*
 * The most vCPUs one VM may have: the config's "vcpus limit", else the
 * CPUs this process may run on (what the host really has for it).
 */
static uint32_t
vm_vcpus_limit(int *configured)
{
	cpu_set_t	 set;
	long		 n;

	*configured = env->conf.vm_vcpus_limit != 0;
	if (*configured)
		return env->conf.vm_vcpus_limit;
	if (sched_getaffinity(0, sizeof(set), &set) == 0 &&
	    (n = CPU_COUNT(&set)) > 0)
		return (uint32_t)n;
	if ((n = sysconf(_SC_NPROCESSORS_ONLN)) > 0)
		return (uint32_t)n;
	return 1;
}

/* Quotas per workspace and per host, then what the host has free. */
static int
vm_admit(int64_t ws, uint32_t mem_mib, uint32_t vcpus, uint64_t disk,
    char *err, size_t errlen)
{
	const struct limits	*w = &env->conf.ws_limits;
	const struct limits	*h = &env->conf.host_limits;
	struct statvfs		 sv;
	uint64_t		 mem, dsk, avail, cpus;
	uint32_t		 n;

	if (state_usage(ws, &n, &mem, &dsk, &cpus) == -1)
		goto dberr;
	if (n + 1 > w->max_vms) {
		(void)snprintf(err, errlen, "the workspace has %u VMs, its "
		    "limit: destroy one first", n);
		return -1;
	}
	if ((mem + mem_mib) << 20 > w->max_memory) {
		(void)snprintf(err, errlen, "the workspace's VMs would have "
		    "%llu MiB of memory, over its limit of %llu MiB",
		    (unsigned long long)(mem + mem_mib),
		    (unsigned long long)(w->max_memory >> 20));
		return -1;
	}
	if (cpus + vcpus > w->max_vcpus) {
		(void)snprintf(err, errlen, "the workspace's VMs would have "
		    "%llu vCPUs, over its limit of %u: use fewer vcpus or "
		    "destroy a VM first", (unsigned long long)(cpus + vcpus),
		    w->max_vcpus);
		return -1;
	}
	if (dsk + disk > w->max_storage) {
		(void)snprintf(err, errlen, "the workspace's disks would "
		    "exceed its storage limit of %llu MiB",
		    (unsigned long long)(w->max_storage >> 20));
		return -1;
	}
	if (state_usage(0, &n, &mem, &dsk, &cpus) == -1)
		goto dberr;
	if (n + 1 > h->max_vms || (mem + mem_mib) << 20 > h->max_memory ||
	    dsk + disk > h->max_storage || cpus + vcpus > h->max_vcpus) {
		(void)snprintf(err, errlen, "the host is at its VM, memory, "
		    "vCPU or storage limit; try again later");
		return -1;
	}
	if (statvfs(env->conf.statedir, &sv) == 0 &&
	    (uint64_t)sv.f_bavail * sv.f_frsize < disk + VM_HOST_DISK_RESERVE) {
		(void)snprintf(err, errlen, "the host has %llu MiB of disk "
		    "free, not enough for another %llu MiB disk; try later",
		    (unsigned long long)((uint64_t)sv.f_bavail *
		    sv.f_frsize >> 20), (unsigned long long)(disk >> 20));
		return -1;
	}
	avail = host_mem_available();
	if (avail < ((uint64_t)mem_mib << 20) + CG_MEM_OVERHEAD +
	    VM_HOST_MEM_RESERVE) {
		(void)snprintf(err, errlen, "the host has %llu MiB of memory "
		    "available, not enough for %u MiB; try a smaller VM or "
		    "later", (unsigned long long)(avail >> 20), mem_mib);
		return -1;
	}
	return 0;
dberr:
	(void)snprintf(err, errlen, "state database error");
	return -1;
}

static void
vm_random_id(const char *prefix, char *out, size_t len)
{
	uint8_t	 raw[ID_HEX_LEN / 2];
	char	 hex[ID_HEX_LEN + 1];

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		fatal("getrandom");
	hex_encode(raw, sizeof(raw), hex);
	(void)snprintf(out, len, "%s%s", prefix, hex);
}

/*
 * Looks the request's receipt up.  Returns 0 when the call is new (and now
 * pending): go ahead.  Otherwise the caller was answered (the first
 * result, or why not) and 1 is returned.  check names the tool that shows
 * what an interrupted call left.
 */
int
vm_receipt_begin(uint64_t peerid, int64_t ws, const char *rid,
    const struct tool_args *args, const char *vm, const char *check)
{
	uint8_t	 hash[SHA256_LEN];
	char	 result[VM_RESULT_MAX];

	if (vm_args_hash(args, hash) == -1)
		fatalx("%s: hash", __func__);
	switch (state_receipt_begin(ws, rid, args->tool->name, hash, vm,
	    result, sizeof(result))) {
	case RECEIPT_NEW:
		return 0;
	case RECEIPT_DONE:
		vm_reply(peerid, TOOL_OK, result);
		break;
	case RECEIPT_FAILED:
		vm_reply(peerid, TOOL_ERROR, result);
		break;
	case RECEIPT_PENDING:
		vm_reply(peerid, TOOL_ERROR, "this request_id is still in "
		    "progress; retry the same call in a few seconds");
		break;
	case RECEIPT_UNKNOWN:
		(void)snprintf(result, sizeof(result), "this request_id was "
		    "interrupted by a service restart and its outcome is "
		    "unknown; it is not run again: check %s, and use a new "
		    "request_id", check);
		vm_reply(peerid, TOOL_ERROR, result);
		break;
	case RECEIPT_CONFLICT:
		vm_reply(peerid, TOOL_ERROR, "this request_id was already "
		    "used with other arguments; use a new request_id");
		break;
	case RECEIPT_ERROR:
		vm_reply(peerid, TOOL_ERROR, "state database error");
		break;
	}
	return 1;
}

/* A receipt's error, replayed as it was first answered. */
static void
vm_receipt_fail(int64_t ws, const char *rid, uint64_t peerid,
    enum tool_status st, const char *msg)
{
	if (rid[0] != '\0' && state_receipt_end(ws, rid, 0, "", msg) == -1)
		log_warnx("receipt %s not settled", rid);
	vm_reply(peerid, st, msg);
}

void
vm_create(uint64_t peerid, const struct ws_auth *auth,
    const struct tool_args *args)
{
	vm_create_call(peerid, auth, args, 1);
}

/* vm_create; with may_wait, a call for an image being verified waits. */
static void
vm_create_call(uint64_t peerid, const struct ws_auth *auth,
    const struct tool_args *args, int may_wait)
{
	const struct tool_value	*v;
	struct vm_row		 row;
	struct vm		*vm;
	const char		*rid, *name, *image;
	struct fwd_spec		 fwd[VM_FORWARDS_MAX];
	char			 err[320];
	uint64_t		 disk = 0;
	uint32_t		 vlimit;
	int64_t			 i, j;
	int			 configured;

	rid = tool_arg_str(args, "request_id");
	memset(&row, 0, sizeof(row));
	row.ws_id = auth->id;
	(void)snprintf(row.ws, sizeof(row.ws), "%s", auth->name);
	row.memory_mib = (uint32_t)(env->conf.vm_memory >> 20);
	row.vcpus = env->conf.vm_vcpus;
	row.idle_seconds = env->conf.vm_idle_seconds;
	row.idle_mode = env->conf.vm_idle_mode;
	if (tool_arg_int(args, "memory_mib", &i) == 0)
		row.memory_mib = (uint32_t)i;
	if (tool_arg_int(args, "vcpus", &i) == 0)
		row.vcpus = (uint32_t)i;
	if (tool_arg_int(args, "idle_seconds", &i) == 0)
		row.idle_seconds = (uint32_t)i;
	if (tool_arg_int(args, "idle_mode", &i) == 0)
		row.idle_mode = (uint32_t)i;
	if (tool_arg_int(args, "network", &i) == 0)
		row.network = (uint32_t)i;
	name = tool_arg_str(args, "name");
	image = tool_arg_str(args, "image");
	if (image == NULL && env->conf.nimages > 0)
		image = env->conf.images[0].name;

	/* Re-validate what frontd checked: mcvmd trusts no peer. */
	if (rid == NULL || !valid_request_id(rid) ||
	    (name != NULL && !valid_object_name(name)) ||
	    !valid_range_u64(row.memory_mib, VM_MEMORY_MIN_MIB,
	    VM_MEMORY_MAX_MIB) || !valid_range_u64(row.vcpus, 1, VM_VCPUS_MAX))
		fatalx("frontd: vm_create arguments out of range");

	if (may_wait && image != NULL && vm_image_pending(image)) {
		vm_image_wait(peerid, auth, args, image);
		return;
	}
	if (vm_receipt_begin(peerid, auth->id, rid, args, "", "vm_list") != 0)
		return;

	if (row.vcpus > (vlimit = vm_vcpus_limit(&configured))) {
		(void)snprintf(err, sizeof(err), "vcpus %u is over this "
		    "host's limit of %u per VM (%s); ask for fewer", row.vcpus,
		    vlimit, configured ? "its vcpus limit" : "its CPU count");
		vm_receipt_fail(auth->id, rid, peerid, TOOL_ERROR, err);
		return;
	}
	if (row.network != 0 && !(auth->flags & WS_ALLOW_NETWORK)) {
		vm_receipt_fail(auth->id, rid, peerid, TOOL_ERROR,
		    "this workspace may not use the network: create the VM "
		    "with network \"off\", or ask the operator for a workspace "
		    "with network access");
		return;
	}
	if ((v = vm_arg(args, "port_forwards")) != NULL && v->nlist > 0 &&
	    row.network == 0) {
		vm_receipt_fail(auth->id, rid, peerid, TOOL_ERROR,
		    "port_forwards need network \"on\": without it the guest "
		    "has no NIC");
		return;
	}
	if (v != NULL && v->nlist > VM_FORWARDS_MAX)
		fatalx("frontd: %zu port forwards", v->nlist);
	for (i = 0; v != NULL && (size_t)i < v->nlist; i++) {
		if (fwd_spec_parse(v->list[i], &fwd[i]) == -1)
			fatalx("frontd: bad port forward %s", v->list[i]);
		for (j = 0; j < i; j++)
			if (fwd[i].host != 0 && fwd[j].host == fwd[i].host) {
				(void)snprintf(err, sizeof(err), "host port "
				    "%u is forwarded twice", fwd[i].host);
				vm_receipt_fail(auth->id, rid, peerid,
				    TOOL_ERROR, err);
				return;
			}
	}
	if (!cgroups.ok) {
		vm_receipt_fail(auth->id, rid, peerid, TOOL_UNAVAILABLE,
		    "this host cannot confine VMs with cgroups: the operator "
		    "must fix it (mcvmd's log says why)");
		return;
	}
	if (image == NULL) {
		vm_receipt_fail(auth->id, rid, peerid, TOOL_ERROR,
		    "no image is configured on this host");
		return;
	}
	if (vm_image_find(image, &disk, err, sizeof(err)) == -1 ||
	    vm_admit(auth->id, row.memory_mib, row.vcpus, disk, err,
	    sizeof(err)) == -1) {
		vm_receipt_fail(auth->id, rid, peerid, TOOL_ERROR, err);
		return;
	}
	if (name != NULL) {
		TAILQ_FOREACH(vm, &vms, entry) {
			if (vm->row.ws_id == auth->id &&
			    strcmp(vm->row.name, name) == 0) {
				(void)snprintf(err, sizeof(err), "the "
				    "workspace already has a VM named %s (%s)",
				    name, vm->row.id);
				vm_receipt_fail(auth->id, rid, peerid,
				    TOOL_ERROR, err);
				return;
			}
		}
	}
	if (vm_slot_alloc(&row.slot) == -1) {
		vm_receipt_fail(auth->id, rid, peerid, TOOL_ERROR,
		    "every VM slot on this host is taken; try again later");
		return;
	}
	vm_random_id("vm-", row.id, sizeof(row.id));
	row.uid = env->conf.vm_uid_first + row.slot;
	(void)snprintf(row.name, sizeof(row.name), "%s",
	    name != NULL ? name : row.id);
	(void)snprintf(row.image, sizeof(row.image), "%s", image);
	(void)snprintf(row.state, sizeof(row.state), "%s",
	    vm_state_name(VS_CREATING));
	(void)snprintf(row.intent, sizeof(row.intent), "create");
	row.disk_bytes = disk;
	row.created = (int64_t)time(NULL);
	if (state_vm_insert(&row) == -1) {
		vm_receipt_fail(auth->id, rid, peerid, TOOL_ERROR,
		    "state database error");
		return;
	}
	vm = vm_alloc(&row);
	vm->restore = vm_template_fits(&row);
	for (i = 0; v != NULL && (size_t)i < v->nlist; i++) {
		vm->fwd[i].host = fwd[i].host;
		vm->fwd[i].guest = fwd[i].guest;
	}
	vm->nfwd = v != NULL ? v->nlist : 0;
	vm->op.pending = 1;
	vm->op.peerid = peerid;
	vm->op.tool = TOOL_VM_CREATE;
	(void)snprintf(vm->op.rid, sizeof(vm->op.rid), "%s", rid);
	(void)snprintf(err, sizeof(err), "workspace %s: vm %s (%s, %u MiB)",
	    auth->name, vm->row.id, image, row.memory_mib);
	(void)state_audit("mcvmd", "vm-create", err);
	vm_store_send(vm, IMSG_STORE_DISK_CREATE);
}

/* ---- processes ---------------------------------------------------------- */

static void
vm_boot_timeout(int fd, short event, void *arg)
{
	struct vm	*vm = arg;
	char		 msg[128];

	vm->timer_set = 0;
	(void)snprintf(msg, sizeof(msg), "the guest agent did not answer "
	    "within %d s of QEMU starting", VM_BOOT_TIMEOUT);
	vm_fail(vm, msg);
}

static void
vm_timer_start(struct vm *vm, int seconds, void (*cb)(int, short, void *))
{
	struct timeval	 tv = { seconds, 0 };

	vm_timer_clear(vm);
	evtimer_set(&vm->timer, cb, vm);
	evtimer_add(&vm->timer, &tv);
	vm->timer_set = 1;
}

static int
vm_jail_dir(const struct vm *vm, char *path, size_t len)
{
	return snprintf(path, len, "%s/%s", vmsdir, vm->row.id) >= (int)len ?
	    -1 : 0;
}

static pid_t
vm_fork_monitor(struct vm *vm, char procs[][PATH_MAX], size_t nprocs,
    int sp, int qmp, int agent)
{
	char		 path[PATH_MAX], uid[16], gid[16], *argv[CHILD_ARGV_MAX];
	int		 argc, i, fd, fds[3] = { sp, qmp, agent };
	size_t		 d;
	pid_t		 pid;

	if (snprintf(path, sizeof(path), "%s/%s", env->bindir,
	    VM_VMM_BINARY) >= (int)sizeof(path))
		return -1;
	(void)snprintf(uid, sizeof(uid), "%u", vm->row.uid);
	(void)snprintf(gid, sizeof(gid), "%u", vm->row.uid);
	argc = child_argv(VM_VMM_BINARY, argv);
	if (vm->tpl || vm->restore) {
		argv[argc++] = "-m";
		argv[argc++] = vm->tpl ? "hold" : "restore";
	}
	argv[argc++] = "-i";
	argv[argc++] = vm->row.id;
	argv[argc++] = "-u";
	argv[argc++] = uid;
	argv[argc++] = "-g";
	argv[argc++] = gid;
	argv[argc] = NULL;

	if ((pid = fork()) != 0)
		return pid;
	for (d = 0; d < nprocs; d++) {
		if ((fd = open(procs[d], O_WRONLY | O_CLOEXEC)) == -1 ||
		    write(fd, "0", 1) != 1)
			_exit(127);
		close(fd);
	}
	/* 3: mcvmd, 4: QMP, 5: agent; via high numbers to avoid clashes. */
	for (i = 0; i < 3; i++)
		if ((fds[i] = fcntl(fds[i], F_DUPFD, 64)) == -1)
			_exit(127);
	for (i = 0; i < 3; i++)
		if (dup2(fds[i], PROC_PARENT_SOCK_FILENO + i) == -1)
			_exit(127);
	if (close_range(PROC_PARENT_SOCK_FILENO + 3, ~0U, 0) == -1)
		_exit(127);
	execve(path, argv, child_envp);
	_exit(127);
}

/* QEMU's stdout and stderr, for the operator; never read by mcvmd. */
static int
vm_qemu_log(const struct vm *vm)
{
	char	 path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/%s.log", vmsdir, vm->row.id) >=
	    (int)sizeof(path))
		return -1;
	return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
	    O_NOFOLLOW, 0600);
}

static void
vm_qemu_log_remove(const struct vm *vm)
{
	char	 path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/%s.log", vmsdir, vm->row.id) <
	    (int)sizeof(path))
		(void)unlink(path);
}

/*
 * Starts the VM's processes: its cgroups, QEMU in the jail and the
 * monitor, connected by socketpairs that mcvmd makes and hands out.
 */
static void
vm_spawn(struct vm *vm)
{
	struct qemu_argv	*qa;
	struct qemu_spec	 spec;
	struct jail		 jail;
	char			 root[PATH_MAX];
	char			 procs[JAIL_CGROUPS_MAX][PATH_MAX];
	size_t			 nprocs = 0, i;
	int			 qmp[2] = { -1, -1 }, agent[2] = { -1, -1 };
	int			 sp[2] = { -1, -1 }, log = -1;
	const char		*why = NULL;

	memset(&spec, 0, sizeof(spec));
	spec.vm_id = vm->row.id;
	spec.accel = accel;
	spec.tsc_khz = tsc_khz;
	spec.memory_mib = vm->row.memory_mib;
	spec.vcpus = vm->row.vcpus;
	spec.disk_format = vm->disk_format;
	spec.has_initrd = vm->store_fds[STORE_FD_INITRD] != -1;
	spec.mac = vm->row.network ? vm->mac : NULL;
	spec.hold = vm->tpl;
	spec.restore = vm->restore;
	if ((qa = calloc(1, sizeof(*qa))) == NULL)
		fatal("%s", __func__);
	if (qemu_build_argv(&spec, qa) == -1) {
		why = "internal error building QEMU's command line";
		goto fail;
	}
	if (vm_jail_dir(vm, root, sizeof(root)) == -1 ||
	    (mkdir(root, 0755) == -1 && errno != EEXIST)) {
		why = "cannot make the jail directory";
		goto fail;
	}
	if (cgroup_vm_create(&cgroups, vm->row.id,
	    (uint64_t)vm->row.memory_mib << 20, vm->row.vcpus, procs,
	    &nprocs) == -1) {
		why = "cannot create the VM's cgroups";
		goto fail;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, qmp) == -1 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, agent) == -1 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == -1 ||
	    (log = vm_qemu_log(vm)) == -1) {
		why = "cannot create the VM's channels";
		goto fail;
	}

	memset(&jail, 0, sizeof(jail));
	jail.root = root;
	jail.uid = vm->row.uid;
	jail.gid = vm->row.uid;
	jail.kvm = accel == ACCEL_USE_KVM;
	/* A restored guest has its kernel in the checkpoint. */
	jail.kernel_fd = vm->restore ? -1 : vm->store_fds[STORE_FD_KERNEL];
	jail.initrd_fd = vm->restore ? -1 : vm->store_fds[STORE_FD_INITRD];
	jail.log_fd = log;
	jail.netns_fd = vm->net_fds[NET_FD_NETNS];
	for (i = 0; i <= QEMU_FD_MAX; i++)
		jail.fds[i] = -1;
	jail.fds[QEMU_FD_TAP] = vm->net_fds[NET_FD_TAP];
	jail.fds[QEMU_FD_QMP] = qmp[0];
	jail.fds[QEMU_FD_AGENT] = agent[0];
	jail.fds[QEMU_FD_DISK] = vm->store_fds[STORE_FD_DISK];
	jail.fds[QEMU_FD_CHECKPOINT] = vm->store_fds[STORE_FD_CHECKPOINT];
	if (vm->disk_format == DISK_QCOW2)
		jail.fds[QEMU_FD_BASE] = vm->store_fds[STORE_FD_BASE];
	for (i = 0; i < nprocs; i++)
		jail.cgroup_procs[i] = procs[i];
	jail.ncgroups = nprocs;
	jail.parent = getpid();

	switch (vm->qemu_pid = fork()) {
	case -1:
		why = "cannot fork QEMU";
		goto fail;
	case 0:
		jail_exec(&jail, qa->argv);
	}
	vm->qemu_status = 0;
	if ((vm->vmm_pid = vm_fork_monitor(vm, procs, nprocs, sp[1], qmp[1],
	    agent[1])) == -1) {
		why = "cannot start the VM monitor";
		goto fail;
	}
	close(qmp[0]);
	close(qmp[1]);
	close(agent[0]);
	close(agent[1]);
	close(sp[1]);
	close(log);
	vm_close_store_fds(vm);
	free(qa);
	vm_monitor_attach(vm, sp[0]);
	/* A new boot: the jobs of the last one are gone with it. */
	if (state_jobs_forget(vm->row.id) == -1)
		log_warnx("%s: old jobs not forgotten", vm->row.id);
	vm_set_state(vm, VS_BOOTING, NULL);
	vm_progress(vm, 2, 3, "booting");
	vm_timer_start(vm, VM_BOOT_TIMEOUT, vm_boot_timeout);
	log_info("%s: qemu pid %d, monitor pid %d, uid %u", vm->row.id,
	    (int)vm->qemu_pid, (int)vm->vmm_pid, vm->row.uid);
	return;
fail:
	free(qa);
	for (i = 0; i < 2; i++) {
		if (qmp[i] != -1)
			close(qmp[i]);
		if (agent[i] != -1)
			close(agent[i]);
		if (sp[i] != -1)
			close(sp[i]);
	}
	if (log != -1)
		close(log);
	vm_close_store_fds(vm);
	vm_fail(vm, why);
}

/*
 * Tells the caller of the pending lifecycle operation how it ended, and
 * settles its receipt.
 */
static void
vm_op_done(struct vm *vm, int ok, const char *msg)
{
	char	*text;
	json_t	*j;

	if (!vm->op.pending)
		return;
	vm->op.pending = 0;
	if (!ok) {
		vm_receipt_fail(vm->row.ws_id, vm->op.rid, vm->op.peerid,
		    TOOL_ERROR, msg);
		return;
	}
	j = vm_json(vm);
	if (vm->os[0] != '\0')
		json_object_set_new(j, "guest", json_pack("{s:s, s:s, s:s}",
		    "os", vm->os, "kernel", vm->kernel, "agent_version",
		    vm->agent));
	if ((text = json_dumps(j, JSON_COMPACT)) == NULL)
		fatalx("%s: json_dumps", __func__);
	json_decref(j);
	if (vm->op.rid[0] != '\0' && state_receipt_end(vm->row.ws_id,
	    vm->op.rid, 1, vm->row.id, text) == -1)
		log_warnx("%s: receipt not settled", vm->row.id);
	vm_reply(vm->op.peerid, TOOL_OK, text);
	free(text);
}

/* Kills whatever runs in the VM's cgroup. */
static void
vm_kill(struct vm *vm)
{
	if (vm->qemu_pid > 0)
		(void)kill(vm->qemu_pid, SIGKILL);
	if (vm->vmm_pid > 0)
		(void)kill(vm->vmm_pid, SIGKILL);
	if (cgroups.ok && cgroup_vm_kill(&cgroups, vm->row.id) == -1)
		log_warn("%s: cgroup kill", vm->row.id);
}

/*
 * The VM failed: its processes are killed, the state says why, and the
 * pending operation fails.  A VM that failed while being created is
 * removed again, so that nothing of it stays behind.
 */
static void
vm_fail(struct vm *vm, const char *why)
{
	int	 creating = vm->op.pending && vm->op.tool == TOOL_VM_CREATE;
	char	 msg[400];

	vm_timer_clear(vm);
	vm_kill(vm);
	if (vm->state == VS_DESTROYING)
		return;
	if (vm->restore && vm->state == VS_BOOTING) {
		/* QEMU ran from the checkpoint, and the guest never
		 * answered. */
		(void)snprintf(msg, sizeof(msg), "%s, restored from it, "
		    "failed: %s", vm->row.id, why);
		vm_template_retire(msg);
	}
	if (vm->tpl) {
		tpl.vm = NULL;
		vm_template_off(why);
		vm_destroy(0, vm);
		return;
	}
	vm_set_state(vm, VS_FAILED, why);
	if (creating) {
		(void)snprintf(msg, sizeof(msg), "the VM could not be "
		    "created: %s. Nothing was kept.", why);
		vm_op_done(vm, 0, msg);
		vm_destroy(0, vm);
		return;
	}
	vm_op_done(vm, 0, why);
	if (vm->qemu_pid <= 0 && vm->vmm_pid <= 0)
		vm_processes_gone(vm);
}

/* Both processes have exited: release what they held. */
static void
vm_processes_gone(struct vm *vm)
{
	char	 root[PATH_MAX];

	if (vm->vmm_live) {
		int fd = vm->vmm.ibuf.fd;

		imsgev_clear(&vm->vmm);
		close(fd);
		vm->vmm_live = 0;
	}
	vm->ready = 0;
	while (!TAILQ_EMPTY(&vm->calls))
		vm_call_fail(TAILQ_FIRST(&vm->calls), "the VM stopped");
	if (cgroups.ok && cgroup_vm_exists(&cgroups, vm->row.id) &&
	    (cgroup_vm_kill(&cgroups, vm->row.id) == -1 ||
	    cgroup_vm_destroy(&cgroups, vm->row.id) == -1))
		log_warn("%s: cgroup not removed", vm->row.id);
	if (vm_jail_dir(vm, root, sizeof(root)) == 0)
		(void)rmdir(root);
	vm_timer_clear(vm);
	if (vm->state == VS_DESTROYING)
		vm_qemu_log_remove(vm);
	if (vm->net_live && vm->net_req == 0) {
		vm->net_req = vm_net_send_teardown(vm->row.id, vm->row.slot);
		vm->net_deadline = vm_now() + VM_NET_TIMEOUT;
		vm->net_teardown = vm->net_req != 0;
		vm->net_live = 0;
	}

	switch (vm->state) {
	case VS_STOPPING:
		if (vm->tpl) {
			/* Only its directory, with the checkpoint, stays. */
			tpl.vm = NULL;
			vm_qemu_log_remove(vm);
			vm_free(vm);
			return;
		}
		vm_set_state(vm, VS_STOPPED, NULL);
		vm_op_done(vm, 1, NULL);
		break;
	case VS_DESTROYING:
		if (vm->store_req == 0 && store_up)
			vm_store_send(vm, IMSG_STORE_DISK_DELETE);
		break;
	case VS_FAILED:
	case VS_STOPPED:
		break;
	default:
		if (vm->guest_poweroff) {
			vm_set_state(vm, VS_STOPPED, "the guest powered off");
			vm_op_done(vm, 0, "the guest powered off");
		} else
			vm_fail(vm, "QEMU exited unexpectedly");
		break;
	}
}

/* SIGCHLD: is it one of ours?  1 if it was a VM's process. */
int
vm_reap(pid_t pid, int status)
{
	struct vm	*vm;

	TAILQ_FOREACH(vm, &vms, entry) {
		if (pid == vm->qemu_pid) {
			vm->qemu_pid = 0;
			vm->qemu_status = status;
			log_info("%s: qemu exited (%s %d); its output is in "
			    "%s/%s.log", vm->row.id,
			    WIFSIGNALED(status) ? "signal" : "status",
			    WIFSIGNALED(status) ? WTERMSIG(status) :
			    WEXITSTATUS(status), vmsdir, vm->row.id);
		} else if (pid == vm->vmm_pid) {
			vm->vmm_pid = 0;
			if (vm->qemu_pid > 0 && vm->state != VS_STOPPING &&
			    vm->state != VS_DESTROYING &&
			    vm->state != VS_FAILED)
				vm_fail(vm, "the VM monitor died");
			else
				log_info("%s: monitor exited", vm->row.id);
		} else
			continue;
		if (vm->qemu_pid <= 0 && vm->vmm_pid <= 0)
			vm_processes_gone(vm);
		return 1;
	}
	return 0;
}

/* ---- the monitor's messages --------------------------------------------- */

static struct vm_call *
vm_call_find(struct vm *vm, uint32_t id)
{
	struct vm_call	*c;

	TAILQ_FOREACH(c, &vm->calls, entry)
		if (c->id == id)
			return c;
	return NULL;
}

/* The guest took its network configuration (or not): booting is over. */
void
vm_net_configured(struct vm *vm, int ok)
{
	if (vm->state != VS_BOOTING)
		return;
	if (!ok) {
		vm_fail(vm, "the guest did not take its network configuration");
		return;
	}
	vm_timer_clear(vm);
	vm_set_state(vm, VS_RUNNING, NULL);
	vm_op_done(vm, 1, NULL);
}

static void
vm_vmm_ready(struct vm *vm, struct imsg *imsg)
{
	struct vm_call	*c;
	struct ibuf	*b;
	struct mreader	 r;
	const char	*agent, *os, *kernel;

	m_init(&r, imsg);
	if (m_get_str(&r, &agent, VM_GUEST_STR_MAX - 1) == -1 ||
	    m_get_str(&r, &os, VM_GUEST_STR_MAX - 1) == -1 ||
	    m_get_str(&r, &kernel, VM_GUEST_STR_MAX - 1) == -1 ||
	    m_end(&r) == -1) {
		vm_fail(vm, "malformed READY from the VM monitor");
		return;
	}
	(void)snprintf(vm->agent, sizeof(vm->agent), "%s", agent);
	(void)snprintf(vm->os, sizeof(vm->os), "%s", os);
	(void)snprintf(vm->kernel, sizeof(vm->kernel), "%s", kernel);
	vm->ready = 1;
	if (vm->state != VS_BOOTING)
		return;
	vm->restore = 0;	/* a later start boots */
	if (vm->row.network) {
		/* The creator is answered once the guest has its address. */
		c = vm_call_new(vm, 0, TOOL_NONE);
		b = vm_call_msg(vm, IMSG_VMM_NET_CONFIG, c);
		m_add_str(b, vm->address);
		m_add_str(b, vm->gateway);
		m_add_str(b, vm->resolver);
		m_add_str(b, vm->mac);
		(void)vm_call(vm, c, b);
		return;
	}
	vm_timer_clear(vm);
	vm_set_state(vm, VS_RUNNING, NULL);
	vm_op_done(vm, 1, NULL);
}

static void
vm_vmm_event(struct vm *vm, struct imsg *imsg)
{
	struct mreader	 r;
	const char	*detail;
	uint32_t	 ev;

	m_init(&r, imsg);
	if (m_get_u32(&r, &ev) == -1 || m_get_str(&r, &detail, 255) == -1 ||
	    m_end(&r) == -1) {
		vm_fail(vm, "malformed event from the VM monitor");
		return;
	}
	log_debug("%s: event %u (%s)", vm->row.id, ev, detail);
	switch (ev) {
	case VMM_EV_SHUTDOWN:
		/* A guest-initiated power-off is a stop, not a crash. */
		vm->guest_poweroff = 1;
		break;
	case VMM_EV_GUEST_LOST:
		vm->ready = 0;
		log_warnx("%s: guest agent lost: %s", vm->row.id, detail);
		break;
	case VMM_EV_GUEST_BACK:
		vm->ready = 1;
		break;
	case VMM_EV_HELD:
		if (!vm->tpl) {
			vm_fail(vm, "the VM monitor reported a hold");
			return;
		}
		vm_template_held(vm);
		break;
	default:
		break;
	}
}

/*
 * The monitor is a process of mcvm's, but it runs as the VM's uid next to
 * QEMU: a message it should not send costs that VM, not mcvmd.
 */
static void
vm_vmm_dispatch(int fd, short event, void *arg)
{
	struct imsgev	*iev = arg;
	struct vm	*vm = iev->data;
	struct vm_call	*c;
	struct imsg	 imsg;
	struct mreader	 r;
	uint32_t	 version;
	int		 n;

	if (imsgev_read(iev, event) == -1) {
		imsgev_clear(&vm->vmm);
		close(fd);
		vm->vmm_live = 0;
		if (vm->state == VS_BOOTING || vm->state == VS_RUNNING ||
		    vm->state == VS_PAUSED)
			vm_fail(vm, "the VM monitor closed its channel");
		return;
	}
	for (;;) {
		if ((n = imsg_get(&iev->ibuf, &imsg)) == -1) {
			vm_fail(vm, "bad framing from the VM monitor");
			return;
		}
		if (n == 0)
			break;
		switch (imsg.hdr.type) {
		case IMSG_HELLO:
			m_init(&r, &imsg);
			if (m_get_u32(&r, &version) == -1 || m_end(&r) == -1 ||
			    version != MCVM_PROTO_VERSION)
				vm_fail(vm, "the VM monitor speaks another "
				    "protocol version");
			break;
		case IMSG_VMM_READY:
			vm_vmm_ready(vm, &imsg);
			break;
		case IMSG_VMM_EVENT:
			vm_vmm_event(vm, &imsg);
			break;
		default:
			if ((c = vm_call_find(vm, imsg.hdr.peerid)) == NULL) {
				log_warnx("%s: %s for no request", vm->row.id,
				    imsg_type_name(imsg.hdr.type));
				break;
			}
			TAILQ_REMOVE(&vm->calls, c, entry);
			vm->ncalls--;
			vm_call_done(c, &imsg);
			break;
		}
		imsg_free(&imsg);
		if (!vm->vmm_live)
			return;
	}
}

/*
 * fd is mcvmd's end of a new monitor's channel: from now on the monitor's
 * messages are read by vm_vmm_dispatch.  The guest is not ready until the
 * monitor says so.
 */
void
vm_monitor_attach(struct vm *vm, int fd)
{
	if (fcntl(fd, F_SETFL, O_NONBLOCK) == -1 ||
	    imsgev_init(&vm->vmm, fd, vm->row.id, vm_vmm_dispatch, vm) == -1)
		fatal("%s", __func__);
	vm->vmm_live = 1;
	vm->ready = 0;
	vm->guest_poweroff = 0;
}

/* ---- requests to the monitor -------------------------------------------- */

struct vm_call *
vm_call_new(struct vm *vm, uint64_t peerid, enum tool_id tool)
{
	struct vm_call	*c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		fatal("%s", __func__);
	c->vm = vm;
	c->peerid = peerid;
	c->tool = tool;
	return c;
}

void
vm_call_free(struct vm_call *c)
{
	if (c->acc != NULL)
		json_decref(c->acc);
	free(c->command);
	free(c);
}

/* Starts a message of type for call c (its id becomes the peerid). */
struct ibuf *
vm_call_msg(struct vm *vm, uint32_t type, struct vm_call *c)
{
	struct ibuf	*b;

	c->id = call_next++;
	if (call_next == 0)
		call_next = 1;
	c->type = type;
	if ((b = imsg_create(&vm->vmm.ibuf, type, c->id, 0, 256)) == NULL)
		fatal("%s", __func__);
	return b;
}

/*
 * Sends the message and remembers the call.  On failure (no monitor, too
 * many in flight) the call fails at once, and -1 is returned.
 */
int
vm_call(struct vm *vm, struct vm_call *c, struct ibuf *b)
{
	if (!vm->vmm_live || vm->ncalls >= VM_CALLS_MAX) {
		imsg_discard(b);
		vm_call_fail(c, vm->vmm_live ? "too many requests to this VM "
		    "at once; retry" : "the VM is not running");
		return -1;
	}
	if (imsgev_close(&vm->vmm, b) == -1)
		fatal("%s", __func__);
	c->deadline = vm_now() + c->wait_ms / 1000 + VM_CALL_TIMEOUT;
	TAILQ_INSERT_TAIL(&vm->calls, c, entry);
	vm->ncalls++;
	return 0;
}

/* ---- stop, start, destroy, shutdown ------------------------------------- */

static void
vm_stop_timeout(int fd, short event, void *arg)
{
	struct vm	*vm = arg;
	char		 msg[160];

	vm->timer_set = 0;
	if (vm->state != VS_STOPPING)
		return;
	(void)snprintf(msg, sizeof(msg), "the guest did not shut down in "
	    "time; it keeps running: retry vm_stop with force=true to power "
	    "it off at once");
	vm_set_state(vm, VS_RUNNING, NULL);
	vm_op_done(vm, 0, msg);
}

static void
vm_term_timeout(int fd, short event, void *arg)
{
	struct vm	*vm = arg;

	vm->timer_set = 0;
	if (vm->qemu_pid > 0 || vm->vmm_pid > 0) {
		log_warnx("%s: QEMU did not exit on SIGTERM; killing it",
		    vm->row.id);
		vm_kill(vm);
	}
}

/* Asks the guest's agent to power off, or stops QEMU. */
void
vm_stop(uint64_t peerid, struct vm *vm, int force, uint32_t timeout)
{
	struct vm_call	*c;
	struct ibuf	*b;

	vm->op.pending = 1;
	vm->op.peerid = peerid;
	vm->op.tool = TOOL_VM_STOP;
	vm->op.rid[0] = '\0';
	vm_set_state(vm, VS_STOPPING, NULL);
	/*
	 * Forced, or without the agent (the guest has no ACPI, see
	 * AGENT_KERNEL_APPEND): SIGTERM to QEMU, and SIGKILL to what is
	 * left in the cgroup after VM_TERM_GRACE.
	 */
	if (force || !vm->vmm_live || !vm->ready) {
		if (vm->qemu_pid > 0)
			(void)kill(vm->qemu_pid, SIGTERM);
		vm_timer_start(vm, VM_TERM_GRACE, vm_term_timeout);
		if (vm->qemu_pid <= 0 && vm->vmm_pid <= 0)
			vm_processes_gone(vm);
		return;
	}
	c = vm_call_new(vm, 0, TOOL_VM_STOP);
	b = vm_call_msg(vm, IMSG_VMM_GUEST_POWEROFF, c);
	(void)vm_call(vm, c, b);
	vm_timer_start(vm, (int)timeout, vm_stop_timeout);
}

void
vm_start(uint64_t peerid, struct vm *vm)
{
	vm->op.pending = 1;
	vm->op.peerid = peerid;
	vm->op.tool = TOOL_VM_START;
	vm->op.rid[0] = '\0';
	vm_set_state(vm, VS_CREATING, NULL);
	if (!store_up) {
		vm_fail(vm, "the storage daemon is not up");
		return;
	}
	vm_store_send(vm, IMSG_STORE_DISK_OPEN);
}

/*
 * Removes every trace: processes, cgroups, the jail directory, the disk
 * (through stored) and the rows, except the audit log.  peerid 0: no one
 * waits for the answer.
 */
void
vm_destroy(uint64_t peerid, struct vm *vm)
{
	if (vm->op.pending && vm->op.peerid != peerid)
		vm_op_done(vm, 0, "the VM was destroyed");
	vm->op.pending = peerid != 0;
	vm->op.peerid = peerid;
	vm->op.tool = TOOL_VM_DESTROY;
	vm->op.rid[0] = '\0';
	vm_set_state(vm, VS_DESTROYING, NULL);
	vm_kill(vm);
	if (vm->qemu_pid <= 0 && vm->vmm_pid <= 0)
		vm_processes_gone(vm);
}

/*
 * frontd died: its calls have lost their caller.  Their work goes on (a
 * creation finishes, and its receipt lets a retry find it), but nothing
 * is answered for them, on this frontd or the next.
 */
void
vm_front_lost(void)
{
	struct vm_image_wait	*w;
	struct vm		*vm;
	struct vm_call		*c;
	unsigned int		 n = 0;

	/* A creation that waits for its image has done nothing yet. */
	while ((w = TAILQ_FIRST(&image_waits)) != NULL) {
		vm_image_wait_free(w);
		n++;
	}
	TAILQ_FOREACH(vm, &vms, entry) {
		if (vm->op.pending && vm->op.peerid != 0)
			n++;
		vm->op.peerid = 0;
		TAILQ_FOREACH(c, &vm->calls, entry)
			if (c->peerid != 0) {
				c->peerid = 0;
				n++;
			}
	}
	if (n > 0)
		log_info("frontd's calls in flight lost their caller: %u", n);
}

/*
 * The caller cancelled a call (MCP notifications/cancelled, or it went
 * away).  A creation still under way is undone, as if it had never been
 * asked for: its receipt goes too, so that the same request_id may be
 * sent again.  Other calls only lose their caller: what they started
 * (a job, a write) has been done or goes on, and the tools that show it
 * still do.
 */
void
vm_cancel(uint64_t call)
{
	struct vm_image_wait	*w;
	struct vm		*vm;
	struct vm_call		*c;
	char			 msg[160];

	TAILQ_FOREACH(w, &image_waits, entry)
		if (w->peerid == call) {
			log_info("workspace %s: vm_create cancelled while it "
			    "waited for image %s", w->auth.name, w->image);
			vm_image_wait_free(w);
			return;
		}
	TAILQ_FOREACH(vm, &vms, entry) {
		TAILQ_FOREACH(c, &vm->calls, entry)
			if (c->peerid == call)
				c->peerid = 0;
		if (!vm->op.pending || vm->op.peerid != call)
			continue;
		vm->op.peerid = 0;
		if (vm->op.tool != TOOL_VM_CREATE || vm->state == VS_RUNNING)
			continue;
		vm->op.pending = 0;
		if (state_receipt_forget(vm->row.ws_id, vm->op.rid) == -1)
			log_warnx("%s: receipt %s not removed", vm->row.id,
			    vm->op.rid);
		(void)snprintf(msg, sizeof(msg), "workspace %s: vm %s",
		    vm->row.ws, vm->row.id);
		(void)state_audit("mcvmd", "vm-create-cancelled", msg);
		log_info("%s: creation cancelled by its caller; undoing it",
		    vm->row.id);
		vm_destroy(0, vm);
		return;
	}
}

/*
 * mcvmd is stopping: every VM's processes are killed and the VM is marked
 * stopped (its disk stays), so that vm_start boots it again later.
 */
void
vm_shutdown(void)
{
	struct vm	*vm;
	int		 status;

	struct timespec	 step = { 0, 50 * 1000 * 1000 };
	int		 tries, left;

	/* SIGTERM to every QEMU, a grace period, then SIGKILL. */
	TAILQ_FOREACH(vm, &vms, entry)
		if (vm->qemu_pid > 0)
			(void)kill(vm->qemu_pid, SIGTERM);
	for (tries = 0; tries < VM_TERM_GRACE * 20; tries++) {
		left = 0;
		TAILQ_FOREACH(vm, &vms, entry) {
			if (vm->qemu_pid > 0 && waitpid(vm->qemu_pid, &status,
			    WNOHANG) == vm->qemu_pid)
				vm->qemu_pid = 0;
			if (vm->qemu_pid > 0)
				left++;
		}
		if (left == 0)
			break;
		(void)nanosleep(&step, NULL);
	}
	TAILQ_FOREACH(vm, &vms, entry) {
		if (vm->qemu_pid <= 0 && vm->vmm_pid <= 0 &&
		    !cgroup_vm_exists(&cgroups, vm->row.id))
			continue;
		vm_kill(vm);
		if (vm->qemu_pid > 0)
			(void)waitpid(vm->qemu_pid, &status, 0);
		if (vm->vmm_pid > 0)
			(void)waitpid(vm->vmm_pid, &status, 0);
		vm->qemu_pid = vm->vmm_pid = 0;
		if (vm->state != VS_DESTROYING && vm->state != VS_FAILED)
			vm_set_state(vm, VS_STOPPED, "mcvmd stopped");
		if (cgroups.ok)
			(void)cgroup_vm_destroy(&cgroups, vm->row.id);
	}
	cgroup_fini(&cgroups);
}
