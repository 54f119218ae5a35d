/*
 * Fast creation (ARCHITECTURE.md section 4): a template VM boots with a
 * read-only root until its agent holds on the agent port, before anything
 * is written to its disk, and is checkpointed there.  A new VM of its
 * configuration (catalogue image, memory, vCPUs, display, and whether it
 * has a NIC) starts from the checkpoint with its own fresh disk; the
 * monitor then releases it, and gives the guest its identity, the host's
 * time, fresh randomness and (with a NIC) its own MAC and address, as to
 * every guest.  The host's templates: one per run for the default
 * configuration (the first catalogue image, no NIC), made at start, and
 * one for each other configuration a vm_create asks for, made on its
 * first use, up to HTPL_MAX of them; a VM whose configuration has none
 * ready boots.
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
#define HTPL_MAX		4	/* host templates: configurations */
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
	char		 ws_name[WS_NAME_MAX + 1];	/* "" for a fork's */
	char		 id[ID_MAX + 1];	/* its directory, stored's */
	uint32_t	 slot;			/* held while the file lives */
	uint32_t	 gid;			/* its QEMU's and clones' */
	char		 host[ID_MAX + 1];	/* the host's it loaded */
	int		 ram_fd;		/* read-only: for the jails;
						   -1 unless in use */
	int		 fork;			/* a fork's (tool-fork.c) */
	unsigned int	 users;			/* clones whose QEMU runs */
	time_t		 used;			/* last chosen, or made */
	time_t		 wanted;		/* vm_now() of the last
						   vm_create of it (warm.c) */
} wtpls[WTPL_MAX];

/* A host template: its configuration, and its checkpoint once made. */
static struct htpl {
	int		 used;		/* configured */
	struct vm	*vm;		/* while it is being made */
	int		 tried;
	int		 ready;
	int		 rebuilds;	/* after a retirement */
	char		 id[ID_MAX + 1];
	char		 image[OBJ_NAME_MAX + 1];
	uint32_t	 memory_mib;
	uint32_t	 vcpus;
	uint32_t	 display;
	uint32_t	 nic;		/* its guest has a NIC */
	char		 why[320];
} htpls[HTPL_MAX];

static struct htpl *
htpl_of(const struct vm *vm)
{
	return vm->htpl > 0 && vm->htpl <= HTPL_MAX &&
	    htpls[vm->htpl - 1].used ? &htpls[vm->htpl - 1] : NULL;
}

/* The ready host template whose checkpoint is id's, or NULL. */
static struct htpl *
htpl_ready(const char *id)
{
	size_t	 i;

	for (i = 0; i < HTPL_MAX; i++)
		if (htpls[i].ready && strcmp(htpls[i].id, id) == 0)
			return &htpls[i];
	return NULL;
}

/* Whether vm's host template is ready to restore it. */
int
vm_template_ready(const struct vm *vm)
{
	const struct htpl	*t = htpl_of(vm);

	return t != NULL && t->ready;
}

/* A VM of t's configuration: its image, memory, vCPUs, display and NIC. */
static void
htpl_devices(const struct htpl *t, struct vm_row *row)
{
	(void)snprintf(row->image, sizeof(row->image), "%s", t->image);
	row->memory_mib = t->memory_mib;
	row->vcpus = t->vcpus;
	row->display = t->display;
	row->network = t->nic;	/* a NIC: network on */
}

static void
htpl_off(struct htpl *t, const char *why)
{
	t->ready = 0;
	(void)snprintf(t->why, sizeof(t->why), "off: %.300s", why);
	log_warnx("template %s", t->why);
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
vm_template_retire(const struct vm *vm, const char *why)
{
	struct htpl	*t = htpl_of(vm);
	char		 msg[400];
	size_t		 i;

	if (t == NULL || !t->ready)
		return;
	for (i = 0; i < WTPL_MAX; i++)
		if (wtpls[i].state == WT_READY && !wtpls[i].fork &&
		    strcmp(wtpls[i].host, t->id) == 0)
			wtpl_retire(&wtpls[i], "the host's template is retired");
	(void)snprintf(msg, sizeof(msg), "checkpoint %s retired: %.300s",
	    t->id, why);
	htpl_off(t, msg);
	vm_store_delete_unowned(t->id);
	t->id[0] = '\0';
	if (++t->rebuilds > VM_TEMPLATE_REBUILDS) {
		log_warnx("template: not made again (%d times this run)",
		    VM_TEMPLATE_REBUILDS);
		return;
	}
	t->tried = 0;
	vm_template_build();
}

/*
 * Starts host template t once every daemon it needs is up, as a VM of
 * its own that no workspace owns and state.db does not hold.  One with a
 * NIC has network on, which needs an uplink.
 */
static void
htpl_build(struct htpl *t)
{
	struct vm_row	 row;
	uint64_t	 disk;
	char		 err[320];

	if (t->tried || !vm_cgroups_ok() || !vm_store_is_up() ||
	    !vm_net_is_up())
		return;
	if (vm_image_find(t->image, &disk, err, sizeof(err)) == -1)
		return;		/* not verified yet */
	t->tried = 1;
	if (t->nic && env->conf.uplink[0] == '\0') {
		htpl_off(t, "a guest with a NIC needs the host's uplink");
		return;
	}
	memset(&row, 0, sizeof(row));
	if (vm_slot_alloc(&row.slot) == -1) {
		htpl_off(t, "no free VM slot");
		return;
	}
	vm_random_id("vm-", row.id, sizeof(row.id));
	row.uid = env->conf.vm_uid_first + row.slot;
	htpl_devices(t, &row);
	(void)snprintf(row.name, sizeof(row.name), "template");
	(void)snprintf(row.state, sizeof(row.state), "%s",
	    vm_state_name(VS_CREATING));
	row.disk_bytes = disk;
	row.created = (int64_t)time(NULL);
	t->vm = vm_new(&row);
	t->vm->tpl = TPL_HOST;
	t->vm->htpl = (int)(t - htpls) + 1;
	log_info("%s: template of image %s, %u MiB, %u vCPU%s%s", row.id,
	    row.image, row.memory_mib, row.vcpus, t->display ? "" :
	    ", no display", t->nic ? ", a NIC" : "");
	vm_store_disk(t->vm, IMSG_STORE_DISK_CREATE);
}

/*
 * The host's templates not made yet, once every daemon they need is up:
 * the default configuration's first.
 */
void
vm_template_build(void)
{
	struct htpl	*t = &htpls[0];
	size_t		 i;

	if (!t->used && env->conf.nimages > 0) {
		t->used = 1;
		(void)snprintf(t->image, sizeof(t->image), "%s",
		    env->conf.images[0].name);
		t->memory_mib = (uint32_t)(env->conf.vm_memory >> 20);
		t->vcpus = env->conf.vm_vcpus;
		t->display = 1;
	}
	for (i = 0; i < HTPL_MAX; i++)
		if (htpls[i].used)
			htpl_build(&htpls[i]);
}

/*
 * Whether vm, new, can restore from a host template of its configuration:
 * 1 with vm->htpl set if one is ready.  A configuration none has yet gets
 * one now, if there is room, for the VMs after this one.
 */
int
vm_template_fits(struct vm *vm)
{
	const struct vm_row	*row = &vm->row;
	struct htpl		*t, *room = NULL;
	uint32_t		 nic = vm_net_has_nic(vm) ? 1 : 0;
	size_t			 i;

	if (row->disks[0] != '\0' || !vm_catalog_image(row->image))
		return 0;
	for (i = 0; i < HTPL_MAX; i++) {
		t = &htpls[i];
		if (!t->used) {
			if (room == NULL)
				room = t;
			continue;
		}
		if (strcmp(row->image, t->image) != 0 ||
		    row->memory_mib != t->memory_mib ||
		    row->vcpus != t->vcpus || row->display != t->display ||
		    nic != t->nic)
			continue;
		if (!t->ready)
			return 0;
		vm->htpl = (int)i + 1;
		return 1;
	}
	if (room == NULL)
		return 0;
	memset(room, 0, sizeof(*room));
	room->used = 1;
	(void)snprintf(room->image, sizeof(room->image), "%s", row->image);
	room->memory_mib = row->memory_mib;
	room->vcpus = row->vcpus;
	room->display = row->display;
	room->nic = nic;
	htpl_build(room);
	return 0;
}

/* The directory whose disk a VM restored from vm's host template copies. */
const char *
vm_template_disk(const struct vm *vm)
{
	const struct htpl	*t = htpl_of(vm);

	return t != NULL ? t->id : "";
}

/* Whether directory id is a template's, which no VM owns. */
int
vm_template_owns(const char *id)
{
	size_t	 i;

	for (i = 0; i < HTPL_MAX; i++)
		if (htpls[i].used && strcmp(htpls[i].id, id) == 0)
			return 1;
	for (i = 0; i < WTPL_MAX; i++)
		if (wtpls[i].state != WT_FREE && strcmp(wtpls[i].id, id) == 0)
			return 1;
	return 0;
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
 * for it).  A fork's has its disk already; a workspace's gets a copy of
 * the host template's.
 */
static void
wtpl_start(struct wtpl *w, int64_t ws, struct vm_row *row, const char *host,
    int fork)
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
	w->wanted = vm_now();
	(void)snprintf(w->id, sizeof(w->id), "%s", row->id);
	(void)snprintf(w->host, sizeof(w->host), "%s", host);
	vm = vm_new(row);
	vm->tpl = TPL_SHARED;
	vm->wtpl = (int)(w - wtpls) + 1;
	vm->boot.restore = 1;
	log_info("%s: shared template of %s %llu", row->id,
	    fork ? "a fork in workspace" : "workspace",
	    (unsigned long long)ws);
	if (fork)
		vm_store_disk(vm, IMSG_STORE_DISK_OPEN);
	else
		vm_store_disk_copy(vm, host);
}

static void
wtpl_build(const struct vm_row *owner, const struct htpl *t)
{
	struct wtpl	*w;
	struct vm_row	 row;

	if ((w = wtpl_room()) == NULL)
		return;		/* none: its VMs restore as before */
	memset(&row, 0, sizeof(row));
	if (vm_slot_alloc(&row.slot) == -1)
		return;
	vm_random_id("vm-", row.id, sizeof(row.id));
	htpl_devices(t, &row);
	wtpl_start(w, owner->ws_id, &row, t->id, 0);
	(void)snprintf(w->ws_name, sizeof(w->ws_name), "%s", owner->ws);
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
	wtpl_start(w, source->ws_id, &row, dir, 1);
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
 * Shared template i (1-based) as warm.c sees it: -1 past the last; 1
 * with what tw says, if it is ready, its host template too, and no
 * fork's; else 0.
 */
int
vm_template_warm(int i, struct tpl_warm *tw)
{
	const struct wtpl	*w;
	const struct htpl	*t;

	if (i < 1 || i > WTPL_MAX)
		return -1;
	w = &wtpls[i - 1];
	if (w->state != WT_READY || w->fork || w->ram_fd == -1 ||
	    (t = htpl_ready(w->host)) == NULL)
		return 0;
	tw->ws = w->ws;
	tw->ws_name = w->ws_name;
	tw->htpl = (int)(t - htpls) + 1;
	tw->wanted = w->wanted;
	return 1;
}

/* A vm_create wanted vm's shared template: vm is of it, or its warm clone. */
void
vm_template_wanted(const struct vm *vm)
{
	struct wtpl	*w = wtpl_of(vm);

	if (w != NULL)
		w->wanted = vm_now();
}

/*
 * The devices of host template htpl (1-based), in row: its image, memory,
 * vCPUs, display and NIC (network on).  -1 if it is not ready.
 */
int
vm_template_devices(int htpl, struct vm_row *row)
{
	if (htpl < 1 || htpl > HTPL_MAX || !htpls[htpl - 1].ready)
		return -1;
	htpl_devices(&htpls[htpl - 1], row);
	return 0;
}

/*
 * vm, new, restores from the host's template: from its workspace's
 * shared one instead when that is ready, and otherwise that is made now,
 * for the workspace's next VMs.
 */
void
vm_template_share(struct vm *vm)
{
	const struct htpl	*t = htpl_of(vm);
	size_t			 i;

	if (!env->conf.shared_templates || t == NULL || !t->ready)
		return;
	for (i = 0; i < WTPL_MAX; i++) {
		if (wtpls[i].ws != vm->row.ws_id || wtpls[i].fork ||
		    wtpls[i].state == WT_FREE ||
		    strcmp(wtpls[i].host, t->id) != 0)
			continue;
		if (wtpls[i].state == WT_READY)
			vm->wtpl = (int)i + 1;
		if (wtpls[i].state != WT_RETIRED)
			return;
	}
	wtpl_build(&vm->row, t);
}

/*
 * The checkpoint vm restores from: its shared template's, whose file it
 * then uses until its QEMU is gone (vm_template_unuse), or the host's.
 */
const char *
vm_template_source(struct vm *vm)
{
	struct wtpl	*w = wtpl_of(vm);
	struct htpl	*t = htpl_of(vm);

	/* A shared template loads its source: a fork's, or the host's. */
	if (vm->tpl == TPL_SHARED)
		return w != NULL && (w->fork || htpl_ready(w->host) != NULL) ?
		    w->host : NULL;
	if (w == NULL || (w->state != WT_READY && !w->fork)) {
		vm->wtpl = 0;
		return t != NULL && t->ready ? t->id : NULL;
	}
	if (!vm->wtpl_using) {
		w->users++;
		vm->wtpl_using = 1;
	}
	w->used = time(NULL);
	return w->id;
}

/*
 * stored made the shared template's RAM file: it is kept for the clones.
 * -1 (fd closed) if vm is being made no more.
 */
int
vm_template_ram(struct vm *vm, int fd)
{
	struct wtpl	*w = wtpl_building(vm);

	if (w == NULL || w->ram_fd != -1) {
		(void)close(fd);
		return -1;
	}
	w->ram_fd = fd;
	return 0;
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

/*
 * The VM whose directory holds the RAM file vm's QEMU maps copy-on-write,
 * if it maps its template's; else NULL.
 */
const char *
vm_template_file(const struct vm *vm)
{
	const struct wtpl	*w = wtpl_of(vm);

	return w != NULL && vm->wtpl_using && vm->tpl != TPL_SHARED ? w->id :
	    NULL;
}

/* vm's QEMU is gone: it maps the template's file no more. */
void
vm_template_unuse(struct vm *vm)
{
	struct wtpl	*w = wtpl_of(vm);

	vm->ram_cow = 0;
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
	vm_store_checkpoint(vm, vm->row.id, 1, NULL);
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
	struct htpl	*t;

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
		if ((w = wtpl_building(vm)) == NULL) {
			vm_fail(vm, "its shared template's entry is gone");
			return;
		}
		w->state = WT_READY;
		log_info("%s: shared template ready", vm->row.id);
		if (w->fork)
			vm_fork_template(vm->row.id, NULL);
		/* Made from a host's template retired meanwhile: not used. */
		else if (htpl_ready(w->host) == NULL)
			wtpl_retire(w, "its source was retired meanwhile");
		goto done;
	}
	if ((t = htpl_of(vm)) == NULL) {
		vm_fail(vm, "its template's entry is gone");
		return;
	}
	(void)snprintf(t->id, sizeof(t->id), "%s", vm->row.id);
	t->ready = 1;
	log_info("%s: template ready", vm->row.id);
done:
	/* Its QEMU has nothing left to do; the checkpoint stays. */
	vm_timer_clear(vm);
	vm_fsm(vm, VE_STOP, NULL);
	vm_kill(vm);
}

/* The template failed (and is destroyed now): no checkpoint this time. */
void
vm_template_failed(struct vm *vm, const char *why)
{
	struct wtpl	*w;
	struct htpl	*t;

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
	if ((t = htpl_of(vm)) != NULL) {
		t->vm = NULL;
		htpl_off(t, why);
	}
}

/* The template's processes ended: only its directory, with the checkpoint,
 * stays. */
void
vm_template_gone(struct vm *vm)
{
	struct htpl	*t;

	if (vm->tpl == TPL_HOST && (t = htpl_of(vm)) != NULL)
		t->vm = NULL;
}

/*
 * One note per host template for mcvmctl status: "template" the default
 * configuration's, "template N" the others'.
 */
void
vm_template_notes(void (*note)(const char *, const char *, void *),
    void *arg)
{
	const struct htpl	*t;
	char			 shared[128] = "", text[CONF_NAME_MAX + 400];
	char			 topic[16];
	size_t			 i, k, len;
	unsigned int		 n, users, making;

	for (k = 0; k < HTPL_MAX; k++) {
		t = &htpls[k];
		if (!t->used)
			continue;
		shared[0] = '\0';
		n = users = making = 0;
		for (i = 0; i < WTPL_MAX; i++) {
			if (wtpls[i].fork || !t->ready ||
			    strcmp(wtpls[i].host, t->id) != 0)
				continue;
			if (wtpls[i].state == WT_BUILDING)
				making++;
			if (wtpls[i].state == WT_READY) {
				n++;
				users += wtpls[i].users;
			}
		}
		if (n > 0)
			(void)snprintf(shared, sizeof(shared), "; %u "
			    "workspace%s shared template%s, mapped by %u VM%s",
			    n, n == 1 ? "'s" : "s'", n == 1 ? "" : "s", users,
			    users == 1 ? "" : "s");
		if (making > 0) {
			len = strlen(shared);
			(void)snprintf(shared + len, sizeof(shared) - len,
			    "; %u more being made", making);
		}
		if (t->ready)
			(void)snprintf(text, sizeof(text), "ready (%s): new "
			    "VMs of image %.64s with %u MiB, %u vCPU, %s and "
			    "%s start from its checkpoint%s", t->id, t->image,
			    t->memory_mib, t->vcpus, t->display ? "a display" :
			    "no display", t->nic ? "a NIC" : "no network",
			    shared);
		else
			(void)snprintf(text, sizeof(text), "%s", t->vm != NULL ?
			    "being made" : t->why[0] != '\0' ? t->why :
			    "not made yet");
		(void)snprintf(topic, sizeof(topic), k == 0 ? "template" :
		    "template %zu", k + 1);
		note(topic, text, arg);
	}
	if (!htpls[0].used)
		note("template", "not made yet", arg);
}
