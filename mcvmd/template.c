/*
 * Fast creation (ARCHITECTURE.md section 4): once per run, a template VM
 * of the first catalog image, in the default configuration and without
 * network, boots with a read-only root until its agent holds on the agent
 * port, before anything is written to its disk, and is checkpointed
 * there.  A new VM of that configuration starts from the checkpoint with
 * its own fresh disk; the monitor then releases it, and gives the guest
 * the host's time and fresh randomness as to every guest.  Anything else
 * boots.
 *
 * That checkpoint holds the template's whole RAM, which each new VM reads.
 * A workspace's first VM of that configuration also has a shared template
 * made for the workspace (TPL_SHARED): a QEMU that loads the host's
 * checkpoint, paused, into RAM mapped shared from a file of its own, and
 * checkpoints it again with x-ignore-shared, so that its stream is the
 * device state alone.  Later VMs of the workspace map that file
 * copy-on-write and load the device state: the pages they never write
 * stay the file's, in the page cache once for all of them.
 *
 * QEMU 7.2 opens the file read-write even for a copy-on-write map, so a
 * compromised clone could write it, and every later clone would run what
 * it wrote.  A shared template therefore serves one workspace: its file
 * is the group's of its QEMU and its clones' (the template's uid, whose
 * slot it holds while the file lives), and no other workspace's VM maps
 * it or can open it.  It is made afresh each run, kept while the host's
 * template is, and deleted with it once no clone's QEMU maps it.
 *
 * A fork's memory is made the same way (vm_template_fork): a shared
 * template of its own, which loads the checkpoint vm_fork saved of the
 * source into its RAM file, serves that fork's new VMs only, and is
 * retired once they all run.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "vm.h"

#define VM_TEMPLATE_REBUILDS	3	/* new checkpoints per run at most */
#define WTPL_MAX		32	/* shared templates at once */

enum wtpl_state {
	WT_FREE = 0,
	WT_BUILDING,
	WT_READY,
	WT_RETIRED,	/* no new clones; freed once none runs */
	WT_OFF,		/* could not be made: none for it this run */
};

static struct wtpl {
	enum wtpl_state	 state;
	int64_t		 ws;
	char		 id[ID_MAX + 1];	/* its directory, stored's */
	uint32_t	 slot;			/* held while the file lives */
	uint32_t	 gid;			/* its QEMU's and clones' */
	char		 host[ID_MAX + 1];	/* the host's it loaded */
	int		 ram_fd;		/* read-only: for the jails;
						   -1 unless in use */
	int		 fork;			/* a fork's (tool-fork.c) */
	unsigned int	 users;			/* clones whose QEMU runs */
	time_t		 used;			/* last chosen, or made */
} wtpls[WTPL_MAX];

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

static struct wtpl *
wtpl_of(const struct vm *vm)
{
	return vm->wtpl > 0 && vm->wtpl <= WTPL_MAX ? &wtpls[vm->wtpl - 1] :
	    NULL;
}

/* A shared template's entry while it is being made (not since reused). */
static struct wtpl *
wtpl_building(const struct vm *vm)
{
	struct wtpl	*w = wtpl_of(vm);

	return vm->tpl == TPL_SHARED && w != NULL &&
	    w->state == WT_BUILDING && strcmp(w->id, vm->row.id) == 0 ? w :
	    NULL;
}

/* Its file, directory and slot go once no clone maps the file. */
static void
wtpl_release(struct wtpl *w)
{
	if (w->users > 0 || (w->state != WT_RETIRED && w->state != WT_OFF))
		return;
	if (w->ram_fd != -1)
		close(w->ram_fd);
	w->ram_fd = -1;
	if (w->id[0] != '\0')
		vm_store_delete_unowned(w->id);
	w->id[0] = '\0';
	if (w->state == WT_RETIRED || w->fork)
		w->state = WT_FREE;	/* made again on demand */
}

static void
wtpl_retire(struct wtpl *w, const char *why)
{
	log_warnx("shared template %s of workspace %llu retired: %s", w->id,
	    (unsigned long long)w->ws, why);
	w->state = WT_RETIRED;
	wtpl_release(w);
}

/* The slot a shared template holds for its file's group. */
int
vm_template_holds_slot(uint32_t slot)
{
	size_t	 i;

	for (i = 0; i < WTPL_MAX; i++)
		if ((wtpls[i].state == WT_READY ||
		    wtpls[i].state == WT_RETIRED) && wtpls[i].slot == slot)
			return 1;
	return 0;
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
	size_t	 i;

	if (!tpl.ready)
		return;
	for (i = 0; i < WTPL_MAX; i++)
		if (wtpls[i].state == WT_READY && !wtpls[i].fork)
			wtpl_retire(&wtpls[i], "the host's template is retired");
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
	tpl.vm->tpl = TPL_HOST;
	log_info("%s: template of image %s", row.id, row.image);
	vm_store_disk(tpl.vm, IMSG_STORE_DISK_CREATE);
}

/*
 * Starts workspace ws's shared template, a VM of its own like the host's
 * template (no workspace owns it, state.db does not hold it), restored
 * from the host's template into its RAM file (store.c asks stored for it).
 */
/*
 * An entry for a new shared template, or NULL: a free one, or the least
 * recently used that no clone maps (no fork's, which is in use until
 * retired).
 */
static struct wtpl *
wtpl_room(void)
{
	struct wtpl	*w = NULL;
	size_t		 i;

	for (i = 0; i < WTPL_MAX && w == NULL; i++)
		if (wtpls[i].state == WT_FREE)
			w = &wtpls[i];
	for (i = 0; i < WTPL_MAX && w == NULL; i++)
		if (!wtpls[i].fork && (wtpls[i].state == WT_OFF ||
		    (wtpls[i].state == WT_READY && wtpls[i].users == 0)) &&
		    (w == NULL || wtpls[i].used < w->used))
			w = &wtpls[i];
	if (w != NULL && w->state == WT_READY)
		wtpl_retire(w, "room for another workspace's");
	return w == NULL || w->state == WT_RETIRED ? NULL : w;
}

/*
 * Starts the template's VM for entry w of workspace ws, as row says
 * (slot, id, devices): a VM of its own like the host's template (no
 * workspace owns it, state.db does not hold it), that loads the
 * checkpoint of directory host into its RAM file (store.c asks stored
 * for it), and stored's disk op type gives it its disk.
 */
static void
wtpl_start(struct wtpl *w, int64_t ws, struct vm_row *row, const char *host,
    int fork, uint32_t type)
{
	struct vm	*vm;

	row->uid = env->conf.vm_uid_first + row->slot;
	(void)snprintf(row->name, sizeof(row->name), "template");
	(void)snprintf(row->state, sizeof(row->state), "%s",
	    vm_state_name(VS_CREATING));
	row->created = (int64_t)time(NULL);
	memset(w, 0, sizeof(*w));
	w->state = WT_BUILDING;
	w->ws = ws;
	w->fork = fork;
	w->slot = row->slot;
	w->gid = row->uid;
	w->ram_fd = -1;
	w->used = time(NULL);
	(void)snprintf(w->id, sizeof(w->id), "%s", row->id);
	(void)snprintf(w->host, sizeof(w->host), "%s", host);
	vm = vm_new(row);
	vm->tpl = TPL_SHARED;
	vm->wtpl = (int)(w - wtpls) + 1;
	vm->boot.restore = 1;
	log_info("%s: shared template of %s %llu", row->id,
	    fork ? "a fork in workspace" : "workspace",
	    (unsigned long long)ws);
	vm_store_disk(vm, type);
}

static void
wtpl_build(int64_t ws)
{
	struct wtpl	*w;
	struct vm_row	 row;

	if ((w = wtpl_room()) == NULL)
		return;		/* none: its VMs restore as before */
	memset(&row, 0, sizeof(row));
	if (vm_slot_alloc(&row.slot) == -1)
		return;
	vm_random_id("vm-", row.id, sizeof(row.id));
	row.memory_mib = tpl.memory_mib;
	row.vcpus = tpl.vcpus;
	row.display = 1;
	(void)snprintf(row.image, sizeof(row.image), "%s", tpl.image);
	wtpl_start(w, ws, &row, tpl.id, 0, IMSG_STORE_DISK_CREATE);
}

/*
 * A fork's shared template, in directory dir (a fork's, vm_fork saved
 * the source's disk and checkpoint there), with source's devices: its
 * entry (1-based), or 0 if there is no room for one (the fork's VMs then
 * load the checkpoint whole).
 */
int
vm_template_fork(const struct vm_row *source, const char *dir)
{
	struct wtpl	*w;
	struct vm_row	 row;

	if (!env->conf.shared_templates || (w = wtpl_room()) == NULL)
		return 0;
	memset(&row, 0, sizeof(row));
	if (vm_slot_alloc(&row.slot) == -1)
		return 0;
	(void)snprintf(row.id, sizeof(row.id), "%s", dir);
	row.memory_mib = source->memory_mib;
	row.vcpus = source->vcpus;
	row.display = source->display;
	row.network = source->network;	/* its NIC: the fork's devices */
	(void)snprintf(row.image, sizeof(row.image), "%s", source->image);
	wtpl_start(w, source->ws_id, &row, dir, 1, IMSG_STORE_DISK_OPEN);
	return (int)(w - wtpls) + 1;
}

/*
 * A fork is over (its new VMs run, or it failed): its template takes
 * no more users, and goes with the last of those it has.  One still
 * being made is destroyed.
 */
void
vm_template_fork_end(int idx)
{
	struct wtpl	*w;
	struct vm	*vm;

	if (idx <= 0 || idx > WTPL_MAX || !wtpls[idx - 1].fork)
		return;
	w = &wtpls[idx - 1];
	if (w->state == WT_BUILDING) {
		if ((vm = vm_find(w->id, 0)) != NULL && vm->wtpl == idx)
			vm_fail(vm, "its fork is over");
		return;
	}
	if (w->state == WT_READY)
		wtpl_retire(w, "its fork is over");
}

/*
 * vm, new, restores from the host's template: from its workspace's
 * shared one instead when that is ready, and otherwise that is made now,
 * for the workspace's next VMs.
 */
void
vm_template_share(struct vm *vm)
{
	size_t	 i;

	if (!env->conf.shared_templates || !tpl.ready)
		return;
	for (i = 0; i < WTPL_MAX; i++) {
		if (wtpls[i].ws != vm->row.ws_id || wtpls[i].fork ||
		    wtpls[i].state == WT_FREE)
			continue;
		if (wtpls[i].state == WT_READY)
			vm->wtpl = (int)i + 1;
		if (wtpls[i].state != WT_RETIRED)
			return;
	}
	wtpl_build(vm->row.ws_id);
}

/*
 * The checkpoint vm restores from: its shared template's, whose file it
 * then uses until its QEMU is gone (vm_template_unuse), or the host's.
 */
const char *
vm_template_source(struct vm *vm)
{
	struct wtpl	*w = wtpl_of(vm);

	/* A shared template loads its source: a fork's, or the host's. */
	if (vm->tpl == TPL_SHARED)
		return w != NULL && w->fork ? w->host : tpl.ready ? tpl.id :
		    NULL;
	if (w == NULL || (w->state != WT_READY && !w->fork)) {
		vm->wtpl = 0;
		return tpl.id;
	}
	if (!vm->wtpl_using) {
		w->users++;
		vm->wtpl_using = 1;
	}
	w->used = time(NULL);
	return w->id;
}

/* stored made the shared template's RAM file: it is kept for the clones. */
void
vm_template_ram(struct vm *vm, int fd)
{
	struct wtpl	*w = wtpl_building(vm);

	if (w == NULL)
		fatalx("%s: %s is no shared template", __func__, vm->row.id);
	w->ram_fd = fd;
}

/*
 * What vm's QEMU maps from a template's file, restoring: 0 with the fd
 * (mcvmd's) and the group, or -1 when it maps none.
 */
int
vm_template_use(const struct vm *vm, int *fd, uint32_t *gid,
    enum qemu_ram *ram)
{
	const struct wtpl	*w = wtpl_of(vm);

	if (w == NULL || w->ram_fd == -1 ||
	    !(vm->boot.restore || vm->boot.resume) ||
	    (vm->tpl != TPL_SHARED && !vm->wtpl_using))
		return -1;
	*fd = w->ram_fd;
	*gid = w->gid;
	*ram = vm->tpl == TPL_SHARED ? QEMU_RAM_SHARED : QEMU_RAM_PRIVATE;
	return 0;
}

/* vm's QEMU is gone: it maps the template's file no more. */
void
vm_template_unuse(struct vm *vm)
{
	struct wtpl	*w = wtpl_of(vm);

	if (w != NULL && vm->wtpl_using) {
		w->users--;
		vm->wtpl_using = 0;
		wtpl_release(w);
	}
	if (vm->tpl != TPL_SHARED)
		vm->wtpl = 0;
}

/* A clone failed while it was restored: its template is implicated. */
void
vm_template_retire_shared(struct vm *vm, const char *why)
{
	struct wtpl	*w = wtpl_of(vm);

	if (w != NULL && w->state == WT_READY)
		wtpl_retire(w, why);
}

/*
 * A template is ready to be checkpointed: the host's holds, a shared one
 * loaded the host's checkpoint.  Others ignore it.
 */
static void
tpl_checkpoint(struct vm *vm, int kind)
{
	if (vm->tpl != kind || vm->state != VS_BOOTING)
		return;
	vm_progress(vm, 2, 3, "checkpointing");
	vm_store_checkpoint(vm, vm->row.id, 1);
}

void
vm_template_loaded(struct vm *vm)
{
	tpl_checkpoint(vm, TPL_SHARED);
}

void
vm_template_held(struct vm *vm)
{
	tpl_checkpoint(vm, TPL_HOST);
}

/*
 * The monitor wrote the template's checkpoint, or could not.  A template
 * that failed meanwhile (and is being destroyed) stays so: the answer
 * came too late.
 */
void
vm_checkpointed(struct vm *vm, int ok)
{
	struct wtpl	*w;

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
	if (vm->tpl == TPL_SHARED) {
		if ((w = wtpl_building(vm)) == NULL)
			fatalx("%s: %s has no entry", __func__, vm->row.id);
		w->state = WT_READY;
		log_info("%s: shared template ready", vm->row.id);
		if (w->fork)
			vm_fork_template(vm->row.id, NULL);
		/* Made from a host's template retired meanwhile: not used. */
		else if (!tpl.ready || strcmp(w->host, tpl.id) != 0)
			wtpl_retire(w, "its source was retired meanwhile");
		goto done;
	}
	(void)snprintf(tpl.id, sizeof(tpl.id), "%s", vm->row.id);
	(void)snprintf(tpl.image, sizeof(tpl.image), "%s", vm->row.image);
	tpl.memory_mib = vm->row.memory_mib;
	tpl.vcpus = vm->row.vcpus;
	tpl.ready = 1;
	log_info("%s: template ready", vm->row.id);
done:
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
	struct wtpl	*w;

	if (vm->tpl == TPL_SHARED) {
		if ((w = wtpl_building(vm)) != NULL && w->fork) {
			w->state = WT_RETIRED;
			w->id[0] = '\0';	/* its destruction deletes it */
			wtpl_release(w);
			vm_fork_template(vm->row.id, why);
		} else if (w != NULL) {
			log_warnx("shared template %s: off for workspace %llu "
			    "this run: %s", w->id, (unsigned long long)w->ws,
			    why);
			w->state = WT_OFF;
			/* The VM's destruction deletes its directory. */
			w->id[0] = '\0';
			wtpl_release(w);
		}
		return;
	}
	tpl.vm = NULL;
	vm_template_off(why);
}

/* The template's processes ended: only its directory, with the checkpoint,
 * stays. */
void
vm_template_gone(struct vm *vm)
{
	if (vm->tpl != TPL_SHARED)
		tpl.vm = NULL;
}

void
vm_template_note(char *text, size_t len)
{
	char		 shared[96] = "";
	size_t		 i;
	unsigned int	 n = 0, users = 0;

	for (i = 0; i < WTPL_MAX; i++)
		if (wtpls[i].state == WT_READY && !wtpls[i].fork) {
			n++;
			users += wtpls[i].users;
		}
	if (n > 0)
		(void)snprintf(shared, sizeof(shared), "; %u workspace%s "
		    "shared template%s, mapped by %u VM%s", n,
		    n == 1 ? "'s" : "s'", n == 1 ? "" : "s", users,
		    users == 1 ? "" : "s");
	if (tpl.ready)
		(void)snprintf(text, len, "ready (%s): new VMs of image %.64s "
		    "with %u MiB, %u vCPU, a display and no network start "
		    "from its checkpoint%s", tpl.id, tpl.image,
		    tpl.memory_mib, tpl.vcpus, shared);
	else
		(void)snprintf(text, len, "%s", tpl.vm != NULL ?
		    "being made" : tpl.why[0] != '\0' ? tpl.why :
		    "not made yet");
}
