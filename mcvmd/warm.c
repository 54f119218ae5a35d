/*
 * Warm clones: each workspace's shared template (template.c) keeps
 * mcvm.conf's "warm" number of its clones (default 1) restored, released
 * and running, that no workspace owns yet and state.db holds no row of.
 * A vm_create of that workspace whose devices are the template's and
 * that asks for no port forward takes one (tool-vm.c): the VM gets its
 * row, its name (the guest's host name) and the host's time, and the call
 * is answered at once.  Its slot, uid, disk, network, MAC and machine id
 * are its own since it was made.  The template makes another once
 * WARM_HOLD seconds have passed since its last vm_create, so that the
 * restore does not compete with the first commands of the VM just made.
 *
 * Why running clones rather than QEMUs that wait for their state: under
 * TCG a new QEMU translates every instruction it runs afresh, and the
 * first command of a clone restored on demand spends 60 to 100 ms of its
 * time on it, more than the restore.  A warm clone has run WARM_RUNS
 * commands (its warm-up), so a vm_create's first command runs code
 * already translated.
 *
 * A warm clone is of one workspace: it maps its workspace's template
 * file, and its QEMU runs in that template's group, as every clone of it.
 * Warm clones count against the host's limits and its free memory
 * (admit.c), never against a workspace's quota, and a creation that the
 * host could admit only without them has them destroyed.  A template that
 * no vm_create of its workspace wanted for WARM_IDLE seconds keeps none;
 * a revoked workspace keeps none; and none outlives mcvmd (without a row,
 * what a crash leaves is deleted at start-up as no VM's).  After a warm
 * clone fails, none is made for WARM_BACKOFF seconds.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "msg_vmm.h"
#include "req.h"
#include "vm.h"

#define WARM_IDLE		600	/* s a template stays warm unwanted */
#define WARM_HOLD		2	/* s after a vm_create before a refill */
#define WARM_SLOTS_SPARE	4	/* VM slots left for other creations */
#define WARM_RUNS		2	/* the warm-up's commands */
#define WARM_JOB_MS		10000	/* a warm-up command's time limit */
#define WARM_READ_WAIT_MS	5000	/* for its output */
#define WARM_COMMAND		"echo warm"
#define WARM_BACKOFF		60	/* s without new ones after a failure */

static time_t	 warm_failed;	/* vm_now() of the last failure */

static void	 warm_run(struct vm *);

static void
warm_destroy(struct vm *vm, const char *why)
{
	log_info("%s: warm clone of workspace %s destroyed: %s", vm->row.id,
	    vm->row.ws, why);
	vm_destroy(0, vm);
}

/*
 * Whether vm, a warm clone, is of a ready template of its workspace
 * still: 1 with what tw says of it.
 */
static int
warm_current(const struct vm *vm, struct tpl_warm *tw)
{
	return vm_template_warm(vm->wtpl, tw) == 1 && tw->ws == vm->warm_ws &&
	    tw->htpl == vm->htpl;
}

static unsigned int
warm_count(int wtpl)
{
	struct vm	*vm;
	unsigned int	 n = 0;

	TAILQ_FOREACH(vm, &vms, entry)
		if (vm->warm && vm->wtpl == wtpl &&
		    vm->state != VS_DESTROYING)
			n++;
	return n;
}

/*
 * A new warm clone of shared template wtpl (1-based), as tw says, if the
 * host has room for it beside what it holds and the VM slots to spare: 0
 * if it is being made.  It has no workspace's id (so that no call finds
 * it), but its workspace's name, which status shows.
 */
static int
warm_make(int wtpl, const struct tpl_warm *tw)
{
	struct vm_row	 row;
	struct vm	*vm;
	uint64_t	 disk;
	char		 err[320];

	memset(&row, 0, sizeof(row));
	if (vm_template_devices(tw->htpl, &row) == -1 ||
	    vm_image_find(row.image, &disk, err, sizeof(err)) == -1 ||
	    vm_slots_free() <= WARM_SLOTS_SPARE ||
	    vm_warm_admit(row.memory_mib, row.vcpus, disk) == -1 ||
	    vm_slot_alloc(&row.slot) == -1)
		return -1;
	vm_random_id("vm-", row.id, sizeof(row.id));
	row.uid = env->conf.vm_uid_first + row.slot;
	(void)snprintf(row.name, sizeof(row.name), "%s", row.id);
	(void)snprintf(row.ws, sizeof(row.ws), "%s", tw->ws_name);
	(void)snprintf(row.state, sizeof(row.state), "%s",
	    vm_state_name(VS_CREATING));
	row.disk_bytes = disk;
	row.created = (int64_t)time(NULL);
	vm = vm_new(&row);
	vm->warm = WARM_MAKING;
	vm->warm_ws = tw->ws;
	vm->htpl = tw->htpl;
	vm->wtpl = wtpl;
	vm->boot.restore = 1;
	log_info("%s: warm clone of workspace %s", row.id, row.ws);
	vm_store_disk_copy(vm, vm_template_disk(vm));
	return 0;
}

/*
 * Once a second: the warm clones that serve no one go (their template
 * retired or unwanted, or they are not running any more), and a template
 * with fewer than it keeps, none of whose vm_creates came in the last
 * WARM_HOLD seconds, gets one more, one for the whole host each second
 * at most.
 */
void
vm_warm_sweep(void)
{
	struct vm	*vm, *next;
	struct tpl_warm	 tw;
	time_t		 now = vm_now();
	int		 i, rc;

	for (vm = TAILQ_FIRST(&vms); vm != NULL; vm = next) {
		next = TAILQ_NEXT(vm, entry);
		if (!vm->warm || vm->state == VS_DESTROYING)
			continue;
		if (!warm_current(vm, &tw))
			warm_destroy(vm, "its template is retired");
		else if (env->conf.warm_clones == 0)
			warm_destroy(vm, "warm clones are off");
		else if (vm->state != VS_CREATING &&
		    vm->state != VS_BOOTING && vm->state != VS_RUNNING)
			warm_destroy(vm, vm_state_name(vm->state));
		else if (now - tw.wanted > WARM_IDLE)
			warm_destroy(vm, "no vm_create wanted its template "
			    "for a while");
	}
	if (env->conf.warm_clones == 0 ||
	    (warm_failed != 0 && now - warm_failed < WARM_BACKOFF))
		return;
	for (i = 1; (rc = vm_template_warm(i, &tw)) != -1; i++)
		if (rc == 1 && now - tw.wanted >= WARM_HOLD &&
		    now - tw.wanted <= WARM_IDLE &&
		    warm_count(i) < env->conf.warm_clones &&
		    warm_make(i, &tw) == 0)
			return;
}

static void
warm_cancel(struct req *r, enum req_end end, const char *why)
{
	if (end != REQ_VM_GONE)
		vm_fail(r->vm, why != NULL ? why : "its warm-up failed");
}

/* The warm-up command's output came, or it ended: the next, or done. */
static void
warm_read(struct req *r, struct imsg *imsg)
{
	struct vm	*vm = r->vm;

	if (vm->state != VS_RUNNING || vm->warm != WARM_MAKING)
		return;
	if (++vm->warm_runs < WARM_RUNS) {
		warm_run(vm);
		return;
	}
	vm->warm = WARM_READY;
	log_info("%s: warm clone of workspace %s ready", vm->row.id,
	    vm->row.ws);
}

static void
warm_started(struct req *r, struct imsg *imsg)
{
	struct msg_vmm_job	 j;
	struct msg_vmm_job_read	 m;

	if (msg_vmm_job_get(imsg, &j) == -1) {
		vm_fail(r->vm, "malformed JOB from the VM monitor");
		return;
	}
	memset(&m, 0, sizeof(m));
	m.job = j.job;
	m.out_max = m.err_max = 64;
	m.encoding = VMM_ENC_UTF8;
	m.wait_ms = WARM_READ_WAIT_MS;
	req_next(r, IMSG_VMM_JOB_READ, warm_read);
	msg_vmm_job_read_put(r->msg, &m);
	(void)req_send(r);
}

/* One warm-up command, as a vm_exec runs it, in the spare shell. */
static void
warm_run(struct vm *vm)
{
	struct msg_vmm_exec	 m;
	struct req		*r;

	r = req_new(RP_MONITOR, vm, IMSG_VMM_EXEC, warm_started,
	    warm_cancel);
	memset(&m, 0, sizeof(m));
	m.flags = AGENT_EXEC_SHELL;
	m.timeout_ms = WARM_JOB_MS;
	m.cwd = "";
	m.argc = 1;
	m.argv[0] = WARM_COMMAND;
	m.input = "";
	msg_vmm_exec_put(r->msg, &m);
	(void)req_send(r);
}

/*
 * A warm clone failed (vm_fail destroys it): none is made for a while,
 * so that a guest that cannot be warmed up is not restored again and
 * again.
 */
void
vm_warm_failed(struct vm *vm, const char *why)
{
	log_warnx("%s: warm clone of workspace %s failed: %s; none made for "
	    "%d s", vm->row.id, vm->row.ws, why, WARM_BACKOFF);
	warm_failed = vm_now();
}

/* A warm clone's guest is up: its warm-up begins. */
void
vm_warm_ready(struct vm *vm)
{
	vm->warm_runs = 0;
	warm_run(vm);
}

/*
 * A ready warm clone for a new VM of workspace want->ws_id with want's
 * devices, or NULL.  The caller makes it the new VM (tool-vm.c), then
 * calls vm_warm_taken() and vm_warm_give().
 */
struct vm *
vm_warm_take(const struct vm_row *want)
{
	struct vm	*vm;
	struct tpl_warm	 tw;

	if (want->disks[0] != '\0')
		return NULL;
	TAILQ_FOREACH(vm, &vms, entry) {
		if (vm->warm != WARM_READY || vm->warm_ws != want->ws_id ||
		    vm->state != VS_RUNNING || !vm->vmm_live ||
		    !vm->boot.agent || vm->op.pending ||
		    !warm_current(vm, &tw) ||
		    strcmp(vm->row.image, want->image) != 0 ||
		    vm->row.memory_mib != want->memory_mib ||
		    vm->row.vcpus != want->vcpus ||
		    vm->row.display != want->display ||
		    vm->row.network != want->network)
			continue;
		return vm;
	}
	return NULL;
}

/* vm, a warm clone, is a workspace's VM now. */
void
vm_warm_taken(struct vm *vm)
{
	log_info("%s: warm clone of workspace %s taken: %s", vm->row.id,
	    vm->row.ws, vm->row.name);
	vm->warm = 0;
	vm_template_wanted(vm);
}

static void
give_cancel(struct req *r, enum req_end end, const char *why)
{
	if (end != REQ_VM_GONE)
		vm_fail(r->vm, why != NULL ? why : "the guest did not take "
		    "its name and time");
}

static void
give_time_set(struct req *r, struct imsg *imsg)
{
	vm_op_done(r->vm, 1, NULL);
}

static void
give_named(struct req *r, struct imsg *imsg)
{
	req_next_set_time(r, give_time_set);
	(void)req_send(r);
}

/*
 * vm, a warm clone just taken, is the new VM of its creation (its op):
 * the guest takes its name and the host's time, then the creation is
 * answered.  Anything that fails fails the creation, which destroys it.
 */
void
vm_warm_give(struct vm *vm)
{
	struct msg_vmm_identity	 m;
	struct req		*r;
	char			 host[AGENT_HOSTNAME_MAX + 1];

	agent_hostname_from(vm->row.name, vm->row.id, host);
	r = req_new(RP_MONITOR, vm, IMSG_VMM_IDENTITY, give_named,
	    give_cancel);
	m.hostname = host;
	msg_vmm_identity_put(r->msg, &m);
	(void)req_send(r);
}

/*
 * What the warm clones hold: their number, their guests' memory (MiB),
 * their vCPUs, and the memory their cgroups are charged (bytes).
 */
void
vm_warm_usage(uint32_t *n, uint64_t *mem_mib, uint64_t *vcpus,
    uint64_t *charged)
{
	const struct vm	*vm;

	*n = 0;
	*mem_mib = *vcpus = *charged = 0;
	TAILQ_FOREACH(vm, &vms, entry) {
		if (!vm->warm || vm->state == VS_DESTROYING)
			continue;
		(*n)++;
		*mem_mib += vm->row.memory_mib;
		*vcpus += vm->row.vcpus;
		*charged += vm_memory_charged(vm);
	}
}

/* Every warm clone goes, or (ws not 0) those of workspace ws. */
void
vm_warm_drain(int64_t ws, const char *why)
{
	struct vm	*vm, *next;

	for (vm = TAILQ_FIRST(&vms); vm != NULL; vm = next) {
		next = TAILQ_NEXT(vm, entry);
		if (vm->warm && vm->state != VS_DESTROYING &&
		    (ws == 0 || vm->warm_ws == ws))
			warm_destroy(vm, why);
	}
}

/* For mcvmctl status: how many, then each with its workspace and slot. */
void
vm_warm_notes(void (*note)(const char *, const char *, void *), void *arg)
{
	const struct vm	*vm;
	unsigned int	 ready = 0, making = 0;
	char		 text[160];

	TAILQ_FOREACH(vm, &vms, entry) {
		if (vm->warm == WARM_READY && vm->state == VS_RUNNING)
			ready++;
		else if (vm->warm && vm->state != VS_DESTROYING)
			making++;
	}
	if (env->conf.warm_clones == 0 || !env->conf.shared_templates)
		(void)snprintf(text, sizeof(text), "off (%s)",
		    env->conf.warm_clones == 0 ? "warm 0" : "templates stream");
	else
		(void)snprintf(text, sizeof(text), "%u ready, %u being made "
		    "(%u per workspace's shared template)", ready, making,
		    env->conf.warm_clones);
	note("warm clones", text, arg);
	TAILQ_FOREACH(vm, &vms, entry) {
		if (!vm->warm || vm->state == VS_DESTROYING)
			continue;
		(void)snprintf(text, sizeof(text), "%s of workspace %s, slot "
		    "%u, %s", vm->row.id, vm->row.ws, vm->row.slot,
		    vm->warm == WARM_READY ? "ready" : "being made");
		note("warm clone", text, arg);
	}
}
