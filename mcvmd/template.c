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
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "vm.h"

#define VM_TEMPLATE_REBUILDS	3	/* new checkpoints per run at most */

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

int
vm_template_ready(void)
{
	return tpl.ready;
}

const char *
vm_template_id(void)
{
	return tpl.id;
}

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
void
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
void
vm_template_build(void)
{
	struct vm_row	 row;
	uint64_t	 disk;
	char		 err[320];

	if (tpl.tried || !vm_cgroups_ok() || !vm_store_is_up() ||
	    env->conf.nimages == 0 || !vm_net_is_up())
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
	row.display = 1;
	(void)snprintf(row.name, sizeof(row.name), "template");
	(void)snprintf(row.image, sizeof(row.image), "%s",
	    env->conf.images[0].name);
	(void)snprintf(row.state, sizeof(row.state), "%s",
	    vm_state_name(VS_CREATING));
	row.disk_bytes = disk;
	row.created = (int64_t)time(NULL);
	tpl.vm = vm_new(&row);
	tpl.vm->tpl = 1;
	log_info("%s: template of image %s", row.id, row.image);
	vm_store_disk(tpl.vm, IMSG_STORE_DISK_CREATE);
}

void
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
	vm_fsm(vm, VE_STOP, NULL);
	vm_kill(vm);
}

int
vm_template_fits(const struct vm_row *row)
{
	/* The device profile is part of what a restored VM must match. */
	return tpl.ready && row->network == 0 && row->display == 1 &&
	    row->disks[0] == '\0' &&
	    strcmp(row->image, tpl.image) == 0 &&
	    row->memory_mib == tpl.memory_mib && row->vcpus == tpl.vcpus;
}

/* The template failed (and is destroyed now): no checkpoint this time. */
void
vm_template_failed(struct vm *vm, const char *why)
{
	tpl.vm = NULL;
	vm_template_off(why);
}

/* The template's processes ended: only its directory, with the checkpoint,
 * stays. */
void
vm_template_gone(struct vm *vm)
{
	tpl.vm = NULL;
}

void
vm_template_note(char *text, size_t len)
{
	if (tpl.ready)
		(void)snprintf(text, len, "ready (%s): new VMs of image %.64s "
		    "with %u MiB, %u vCPU, a display and no network start "
		    "from its "
		    "checkpoint", tpl.id, tpl.image, tpl.memory_mib,
		    tpl.vcpus);
	else
		(void)snprintf(text, len, "%s", tpl.vm != NULL ?
		    "being made" : tpl.why[0] != '\0' ? tpl.why :
		    "not made yet");
}
