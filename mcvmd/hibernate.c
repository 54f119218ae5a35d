/*
 * Hibernation: a VM's memory and devices go to a checkpoint file of its
 * own, and its processes and network go, so that it is only files until
 * it resumes.  The steps, each a request to the VM's monitor or stored:
 *
 *	vm_hibernate	running, its jobs frozen (tool-vm.c): VE_HIBERNATE
 *			PAUSE			-> hib_paused
 *			paused already: hib_checkpoint
 *	hib_checkpoint	stored: the checkpoint file, made empty
 *			(store.c, then the monitor's CHECKPOINT: QEMU
 *			migrates to it, the monitor fsyncs it)
 *	vm_hibernated	written: SIGTERM to QEMU; once both processes
 *			are gone (vm_processes_gone) and netd released the
 *			network, the state is hibernated.  Not written: the
 *			VM runs on as it was, its jobs thawed.
 *
 * A SIGTERM of mcvmd hibernates every running or paused VM with the
 * agent, jobs frozen, before mcvmd stops (vm_hibernate_all): at its next
 * start they are hibernated, and work wakes them.
 *
 * vm_hibernate_resume starts the VM as vm_start does, but QEMU loads its
 * own checkpoint (-incoming) instead of booting, and its monitor starts
 * a new session with the guest agent, which sets the guest's clock;
 * then its jobs thaw.  A resume that fails marks the VM failed: the
 * checkpoint is never restored over a disk that ran since, as only the
 * hibernated state leads to it.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <event.h>

#include "dispatch.h"
#include "hash.h"
#include "log.h"
#include "msg_vmm.h"
#include "qemu.h"
#include "req.h"
#include "vm.h"

/*
 * QEMU's SHA-256, in hex: worked out again whenever the binary's inode,
 * size or time changed.  0, or -1 if it cannot be read.
 */
static int
qemu_digest(char hex[2 * SHA256_LEN + 1])
{
	static struct stat	 seen;
	static char		 cached[2 * SHA256_LEN + 1];
	struct stat		 st;
	uint8_t			 d[SHA256_LEN];
	void			*p;
	int			 fd, rc = -1;

	if ((fd = open(QEMU_BIN, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	if (fstat(fd, &st) == -1 || st.st_size <= 0)
		goto out;
	if (cached[0] != '\0' && st.st_ino == seen.st_ino &&
	    st.st_dev == seen.st_dev && st.st_size == seen.st_size &&
	    st.st_mtim.tv_sec == seen.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == seen.st_mtim.tv_nsec) {
		rc = 0;
		goto out;
	}
	if ((p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd,
	    0)) == MAP_FAILED)
		goto out;
	rc = sha256(p, (size_t)st.st_size, d);
	(void)munmap(p, (size_t)st.st_size);
	if (rc == 0) {
		hex_encode(d, sizeof(d), cached);
		seen = st;
	}
out:
	close(fd);
	if (rc == 0)
		(void)snprintf(hex, 2 * SHA256_LEN + 1, "%s", cached);
	return rc;
}

/*
 * What vm's checkpoint may be restored by: the QEMU that wrote it, and
 * the devices its command line gives the VM (its NIC's address is its
 * slot's; its disk's format is its own for its life).  0, or -1.
 */
static int
vm_profile(const struct vm *vm, char *buf, size_t len)
{
	char	 hex[2 * SHA256_LEN + 1];
	int	 n;

	if (qemu_digest(hex) == -1)
		return -1;
	n = snprintf(buf, len, "qemu=%s mem=%u cpus=%u display=%u net=%u "
	    "slot=%u", hex, vm->row.memory_mib, vm->row.vcpus,
	    vm->row.display, vm->row.network, vm->row.slot);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/*
 * The vCPUs are stopped: the checkpoint next.  A VM whose QEMU maps its
 * template's RAM file copy-on-write keeps a link of that file (its base)
 * for the checkpoint, which holds only the pages it changed: its
 * template may be gone before it resumes.  One that maps its base
 * already keeps it.
 */
static void
hib_checkpoint(struct vm *vm)
{
	vm_progress(vm, 1, 3, "writing the checkpoint");
	vm_store_checkpoint(vm, vm->row.id, 1, vm_template_file(vm));
}

static void
hib_paused(struct req *r, struct imsg *imsg)
{
	if (r->vm->state == VS_HIBERNATING)
		hib_checkpoint(r->vm);
}

static void
hib_pause_cancel(struct req *r, enum req_end end, const char *why)
{
	if (end != REQ_VM_GONE && r->vm->state == VS_HIBERNATING)
		vm_hibernated(r->vm, 0, 0, why != NULL ? why :
		    "the VM could not be paused");
}

/*
 * Hibernates vm, running or paused, whose jobs are frozen or none: why
 * says for vm_status who asked (the agent, idleness, mcvmd's stop).
 */
void
vm_hibernate(uint64_t call, struct vm *vm, const char *why)
{
	struct req	*r;
	int		 paused = vm->state == VS_PAUSED;

	vm_op_begin(vm, call, VO_HIBERNATE, NULL);
	vm->hib_paused = paused;
	vm_fsm(vm, VE_HIBERNATE, why);
	if (paused) {
		hib_checkpoint(vm);
		return;
	}
	r = req_new(RP_MONITOR, vm, IMSG_VMM_PAUSE, hib_paused,
	    hib_pause_cancel);
	(void)req_send(r);
}

/*
 * The monitor wrote the checkpoint (mib of it, fsynced) or could not
 * (why).  Written: QEMU ends, and vm_processes_gone finishes.  Not: the
 * VM goes back to what it was.
 */
void
vm_hibernated(struct vm *vm, int ok, uint32_t mib, const char *why)
{
	char	 msg[VM_MSG_MAX];

	if (vm->state != VS_HIBERNATING) {
		log_warnx("%s: checkpoint answered while %s", vm->row.id,
		    vm_state_name(vm->state));
		return;
	}
	/* What may restore it is on disk before the VM is hibernated. */
	if (ok && (vm_profile(vm, vm->row.checkpoint_profile,
	    sizeof(vm->row.checkpoint_profile)) == -1 ||
	    state_vm_checkpoint(vm->row.id, (uint64_t)mib << 20,
	    vm->row.checkpoint_profile) == -1)) {
		ok = 0;
		why = "its profile could not be recorded";
	}
	if (ok) {
		vm->boot.checkpointed = 1;
		vm->row.checkpoint_bytes = (uint64_t)mib << 20;
		log_info("%s: checkpoint written (%u MiB)", vm->row.id, mib);
		vm_progress(vm, 2, 3, "stopping QEMU");
		vm_qemu_term(vm);
		return;
	}
	(void)snprintf(msg, sizeof(msg), "the checkpoint could not be "
	    "written (%s): nothing was hibernated, and the VM is %s as it "
	    "was", why, vm->hib_paused ? "paused" : "running");
	log_warnx("%s: %s", vm->row.id, msg);
	if (vm->hib_paused)
		vm_fsm(vm, VE_PAUSED, NULL);
	else {
		req_send_quiet(vm, IMSG_VMM_CONT);
		if (vm->boot.agent)
			req_send_quiet(vm, IMSG_VMM_THAW);
		vm_fsm(vm, VE_RESUMED, NULL);
	}
	vm_op_done(vm, 0, msg);
}

/*
 * Resumes a hibernated VM from its checkpoint, as vm_start starts one:
 * 0, or -1 with why when the checkpoint is not this QEMU's and these
 * devices' (the VM stays hibernated).
 */
int
vm_hibernate_resume(uint64_t call, struct vm *vm, char *why, size_t len)
{
	char	 now[VM_PROFILE_MAX];

	if (vm_profile(vm, now, sizeof(now)) == -1 ||
	    strcmp(now, vm->row.checkpoint_profile) != 0) {
		(void)snprintf(why, len, "%s's checkpoint was written by "
		    "another QEMU, or for other devices, than this host has "
		    "now: nothing was done. vm_stop it to discard the "
		    "checkpoint, then vm_start it afresh", vm->row.id);
		log_warnx("%s: checkpoint profile \"%s\" is not \"%s\"",
		    vm->row.id, vm->row.checkpoint_profile, now);
		return -1;
	}
	vm->boot.resume = 1;
	vm_start(call, vm);
	return 0;
}

static void
resume_thawed(struct req *r, struct imsg *imsg)
{
	struct vm	*vm = r->vm;

	if (vm->state != VS_BOOTING)
		return;
	vm->row.checkpoint_bytes = 0;
	vm->row.checkpoint_profile[0] = '\0';
	if (state_vm_checkpoint(vm->row.id, 0, "") == -1)
		log_warnx("%s: checkpoint not recorded as used", vm->row.id);
	vm_guest_ready(vm);
}

static void
resume_thaw_cancel(struct req *r, enum req_end end, const char *why)
{
	if (end != REQ_VM_GONE && r->vm->state == VS_BOOTING)
		vm_fail(r->vm, why != NULL ? why : "its jobs did not thaw");
}

/*
 * The guest of a resumed VM is back (and has its clock): its jobs, which
 * hibernation froze, thaw before the VM counts as running.
 */
void
vm_hibernate_resumed(struct vm *vm)
{
	struct req	*r;

	vm->boot.resume = 0;
	r = req_new(RP_MONITOR, vm, IMSG_VMM_THAW, resume_thawed,
	    resume_thaw_cancel);
	(void)req_send(r);
}

/* ---- mcvmd's stop ------------------------------------------------------- */

#define VM_DRAIN_SECS	120	/* for every VM's checkpoint, at most */

static struct event	 drain_ev;
static int		 draining;

static void
drain_over(int fd, short event, void *arg)
{
	log_info("%s: stopping", arg != NULL ? "hibernation took too long" :
	    "the VMs are hibernated");
	mcvmd_shutdown(0);
}

/* Whether mcvmd waits for VMs to hibernate before it stops. */
int
vm_draining(void)
{
	return draining;
}

/* A VM moved: once none hibernates, mcvmd stops (from the loop). */
void
vm_drain_check(void)
{
	struct timeval	 now = { 0, 0 };
	struct vm	*vm;

	if (!draining)
		return;
	TAILQ_FOREACH(vm, &vms, entry)
		if (vm->state == VS_HIBERNATING || vm->freezing)
			return;
	evtimer_del(&drain_ev);
	evtimer_set(&drain_ev, drain_over, NULL);
	evtimer_add(&drain_ev, &now);
}

static void
hib_frozen(struct req *r, struct imsg *imsg)
{
	struct vm	*vm = r->vm;

	vm->freezing = 0;
	if (vm->state == VS_RUNNING && !vm->op.pending)
		vm_hibernate(0, vm, vm->freeze_why);
	vm_drain_check();
}

static void
hib_freeze_cancel(struct req *r, enum req_end end, const char *why)
{
	/* Not frozen: its jobs' clocks run on while it is hibernated. */
	if (end != REQ_VM_GONE)
		hib_frozen(r, NULL);
	else {
		r->vm->freezing = 0;
		vm_drain_check();
	}
}

/*
 * Hibernates vm, running or paused, of a catalogue image and its agent
 * up, with its jobs frozen first: for mcvmd's stop and a revocation
 * (why, a literal, says which).  Returns -1, and why not in msg, if it
 * cannot now; it is left as it is.
 */
int
vm_hibernate_freeze(struct vm *vm, const char *why, char *msg, size_t len)
{
	struct req	*r;

	if (vm_unowned(vm) || vm_own_disks(vm) || vm_attached(vm) ||
	    !vm->vmm_live || !vm->boot.agent || vm->op.pending ||
	    (vm->state != VS_RUNNING && vm->state != VS_PAUSED)) {
		(void)snprintf(msg, len, "it is %s%s", vm_state_name(vm->state),
		    vm_own_disks(vm) ? ", from its own disks" :
		    vm_attached(vm) ? ", attached" :
		    !vm->boot.agent ? ", its agent down" :
		    vm->op.pending ? ", under another operation" : "");
		return -1;
	}
	if (vm_admit_state(vm, "a checkpoint", msg, len) == -1)
		return -1;
	if (vm->state == VS_PAUSED) {
		vm_hibernate(0, vm, why);
		return 0;
	}
	vm->freezing = 1;
	vm->freeze_why = why;
	r = req_new(RP_MONITOR, vm, IMSG_VMM_FREEZE, hib_frozen,
	    hib_freeze_cancel);
	(void)req_send(r);
	return 0;
}

/*
 * SIGTERM: every running or paused VM of a catalogue image, its agent
 * up, hibernates (its jobs frozen first); mcvmd stops once they all did,
 * or after VM_DRAIN_SECS.  Returns how many hibernate: 0, stop now.
 */
int
vm_hibernate_all(void)
{
	struct timeval	 tv = { VM_DRAIN_SECS, 0 };
	struct vm	*vm;
	char		 why[VM_MSG_MAX];
	int		 n = 0;

	TAILQ_FOREACH(vm, &vms, entry) {
		if (vm_unowned(vm) || vm_attached(vm) || !vm->vmm_live ||
		    (vm->state != VS_RUNNING && vm->state != VS_PAUSED))
			continue;
		if (vm_hibernate_freeze(vm, "hibernated as mcvmd stopped",
		    why, sizeof(why)) == -1) {
			log_warnx("%s: stopped, not hibernated: %s",
			    vm->row.id, why);
			continue;
		}
		n++;
	}
	if (n == 0)
		return 0;
	draining = 1;
	log_info("hibernating %d VM%s before stopping", n, n == 1 ? "" : "s");
	evtimer_set(&drain_ev, drain_over, &drain_ev);
	evtimer_add(&drain_ev, &tv);
	vm_drain_check();
	return n;
}
