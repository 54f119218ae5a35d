/*
 * mcvmd's client of stored: the images it verified, and each VM's disk
 * (made, opened or deleted) and checkpoint file, asked for through the
 * request table.  stored is inside the suite: a malformed message from it
 * is fatal here.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dispatch.h"
#include "log.h"
#include "msg_store.h"
#include "qemu.h"
#include "req.h"
#include "vm.h"

static int		 store_up;
static char		 store_preflight[STORE_TEXT_MAX + 1];

/* What stored said of each catalog image. */
static struct {
	char		 name[OBJ_NAME_MAX + 1];
	int		 ok;
	uint64_t	 bytes;
	char		 text[256];
} images[CONF_MAX_IMAGES];
static size_t		 nimages;

static void	 store_disk_done(struct req *, struct imsg *);
static void	 store_delete_done(struct req *, struct imsg *);
static void	 store_checkpoint_done(struct req *, struct imsg *);
static void	 store_cancel(struct req *, enum req_end, const char *);
static int	 store_overtaken(struct vm *, enum vm_state);

int
vm_store_is_up(void)
{
	return store_up;
}

/*
 * The disks of a VM from its own disks, made or opened: the install CD
 * only while the install is pending.
 */
static void
vm_store_own_disks(struct vm *vm, int create)
{
	struct msg_store_vm_disks	 m;
	char				 names[VM_DISKS_MAX][OBJ_NAME_MAX + 1];
	struct req			*r;
	unsigned int			 i;

	memset(&m, 0, sizeof(m));
	m.vm_id = vm->row.id;
	m.ws = (uint64_t)vm->row.ws_id;
	m.create = create;
	m.persistent = vm->row.persistent != 0;
	m.firmware = vm->row.firmware == FW_UEFI ? FW_UEFI : FW_BIOS;
	m.iso = vm->row.install == VM_INSTALL_PENDING ? vm->row.iso : "";
	if ((m.ndisks = vm_disk_names(&vm->row, names)) == 0 ||
	    (m.iso[0] != '\0' && !valid_object_name(m.iso))) {
		vm_fail(vm, "its record of its disks is broken");
		return;
	}
	for (i = 0; i < m.ndisks; i++)
		m.disks[i] = names[i];
	memset(vm->vdisk, 0, sizeof(vm->vdisk));
	vm->nvdisk = 0;
	r = req_new(RP_STORED, vm, IMSG_STORE_VM_DISKS, store_disk_done,
	    store_cancel);
	msg_store_vm_disks_put(r->msg, &m);
	(void)req_send(r);
}

/* Asks stored to make (DISK_CREATE), open or delete vm's disk. */
void
vm_store_disk(struct vm *vm, uint32_t type)
{
	struct msg_store_disk_create	 c = { vm->row.id, vm->row.image };
	struct msg_store_disk_open	 o = { vm->row.id, vm->row.image };
	struct msg_store_disk_delete	 d = { vm->row.id };
	struct req			*r;

	if (vm_own_disks(vm) && type != IMSG_STORE_DISK_DELETE) {
		vm_store_own_disks(vm, type == IMSG_STORE_DISK_CREATE);
		return;
	}
	r = req_new(RP_STORED, vm, type, type == IMSG_STORE_DISK_DELETE ?
	    store_delete_done : store_disk_done, store_cancel);
	if (type == IMSG_STORE_DISK_CREATE)
		msg_store_disk_create_put(r->msg, &c);
	else if (type == IMSG_STORE_DISK_OPEN)
		msg_store_disk_open_put(r->msg, &o);
	else
		msg_store_disk_delete_put(r->msg, &d);
	(void)req_send(r);
}

/*
 * A new VM restored from a template's or a fork's state: its disk, a
 * copy of that one's (directory from) as it was at the checkpoint,
 * copied by stored and then opened.  A VM that would restore from a host
 * template whose directory went meanwhile boots from a fresh disk
 * instead; any other fails.
 */
static void
store_copy_done(struct req *r, struct imsg *imsg)
{
	struct vm		*vm = r->vm;
	struct msg_store_result	 m;
	char			 msg[320];

	vm_store_result(imsg, &m);
	if (store_overtaken(vm, VS_CREATING))
		return;
	if (m.status == 0) {
		vm_store_disk(vm, IMSG_STORE_DISK_OPEN);
		return;
	}
	if (vm->boot.restore && !vm->tpl) {
		log_warnx("%s: boots instead of restoring: %s", vm->row.id,
		    m.text);
		vm->boot.restore = 0;
		vm_template_unuse(vm);
		vm_store_disk(vm, IMSG_STORE_DISK_CREATE);
		return;
	}
	(void)snprintf(msg, sizeof(msg), "its disk could not be copied: %s",
	    m.text);
	vm_fail(vm, msg);
}

void
vm_store_disk_copy(struct vm *vm, const char *from)
{
	struct msg_store_disk_copy	 m = { vm->row.id, from };
	struct req			*r;

	r = req_new(RP_STORED, vm, IMSG_STORE_DISK_COPY, store_copy_done,
	    store_cancel);
	msg_store_disk_copy_put(r->msg, &m);
	(void)req_send(r);
}

/*
 * Asks for VM id's checkpoint file, to write or to read; writing, after
 * the RAM file of VM base (not NULL) becomes its base.
 */
void
vm_store_checkpoint(struct vm *vm, const char *id, int write,
    const char *base)
{
	struct msg_store_checkpoint	 m = { id, write ? 1 : 0, base };
	struct req			*r;

	r = req_new(RP_STORED, vm, IMSG_STORE_CHECKPOINT,
	    store_checkpoint_done, store_cancel);
	msg_store_checkpoint_put(r->msg, &m);
	(void)req_send(r);
}

/* Deletes the disk directory of a VM that is no more (request 0). */
void
vm_store_delete_unowned(const char *id)
{
	struct msg_store_disk_delete	 m = { id };
	struct ibuf			*b;

	b = req_notice_msg(RP_STORED, IMSG_STORE_DISK_DELETE, 0);
	msg_store_disk_delete_put(b, &m);
	req_notice(RP_STORED, IMSG_STORE_DISK_DELETE, b);
}

/*
 * stored's request ended without its answer: late (stored is killed as
 * hung, see req_sweep), or stored restarted.
 */
static void
store_cancel(struct req *r, enum req_end why, const char *text)
{
	struct vm	*vm = r->vm;
	char		 msg[128];

	if (why == REQ_VM_GONE)
		return;
	vm_close_store_fds(vm);
	if (why == REQ_PEER_LOST) {
		/* The old stored died with this request. */
		if (vm->state == VS_CREATING || vm->state == VS_BOOTING)
			vm_fail(vm, "the storage daemon restarted");
		return;
	}
	(void)snprintf(msg, sizeof(msg), "the storage daemon did not answer "
	    "within %d s", VM_STORE_TIMEOUT);
	if (vm->state == VS_DESTROYING)
		vm_op_done(vm, 0, "the VM's disk could not be deleted in time; "
		    "retry vm_destroy");
	else
		vm_fail(vm, msg);
}

/* stored (re)started: finish deletions a crash interrupted. */
void
vm_store_up(void)
{
	struct vm	*vm;

	store_up = 1;
	nimages = 0;
	req_peer_lost(RP_STORED);
	req_notice(RP_STORED, IMSG_STORE_PREFLIGHT,
	    req_notice_msg(RP_STORED, IMSG_STORE_PREFLIGHT, 1));
	req_notice(RP_STORED, IMSG_STORE_DISK_LIST,
	    req_notice_msg(RP_STORED, IMSG_STORE_DISK_LIST, 1));
	TAILQ_FOREACH(vm, &vms, entry)
		if (vm->state == VS_DESTROYING &&
		    req_pending(vm, RP_STORED) == NULL)
			vm_store_disk(vm, IMSG_STORE_DISK_DELETE);
}

/* stored's answer to a request: fatal if malformed. */
void
vm_store_result(struct imsg *imsg, struct msg_store_result *m)
{
	if (msg_store_result_get(imsg, m) == -1)
		fatalx("stored: malformed %s", imsg_type_name(imsg->hdr.type));
}

/*
 * The destroy overtook a creation: now the delete.  A VM that is no
 * longer in the state that asked (it failed meanwhile) takes nothing
 * either.
 */
static int
store_overtaken(struct vm *vm, enum vm_state asked)
{
	if (vm->state == asked)
		return 0;
	vm_close_store_fds(vm);
	if (vm->state == VS_DESTROYING)
		vm_store_disk(vm, IMSG_STORE_DISK_DELETE);
	return 1;
}

static void
store_delete_done(struct req *r, struct imsg *imsg)
{
	struct vm		*vm = r->vm;
	struct msg_store_result	 m;

	vm_store_result(imsg, &m);
	if (vm->state != VS_DESTROYING)
		return;
	if (m.status != 0 && m.status != ENOENT) {
		log_warnx("%s: disk not deleted: %s", vm->row.id, m.text);
		vm_op_done(vm, 0, "the VM's disk could not be deleted; "
		    "retry vm_destroy");
		return;
	}
	vm->op.disk_gone = 1;
	vm_destroy_finish(vm);
}

/* Whether stored sent every fd a VM from its own disks boots with. */
static const char *
own_disks_missing(const struct vm *vm)
{
	char		 names[VM_DISKS_MAX][OBJ_NAME_MAX + 1];
	unsigned int	 i, n = vm_disk_names(&vm->row, names);

	if (vm->nvdisk != n)
		return "disks missing";
	for (i = 0; i < n; i++)
		if (vm->store_fds[STORE_FD_DISK_N(i)] == -1 ||
		    (vm->vdisk[i].has_base &&
		    vm->store_fds[STORE_FD_BASE_N(i)] == -1))
			return "disk descriptors missing";
	if (vm->row.install == VM_INSTALL_PENDING &&
	    vm->store_fds[STORE_FD_CD] == -1)
		return "the install CD's descriptor missing";
	if (vm->row.firmware == FW_UEFI &&
	    (vm->store_fds[STORE_FD_CODE] == -1 ||
	    vm->store_fds[STORE_FD_VARS] == -1))
		return "the firmware's descriptors missing";
	return NULL;
}

static void
store_own_disks_done(struct vm *vm, const struct msg_store_result *m)
{
	const char	*missing = NULL;
	char		 msg[320];

	if (m->status != 0 || (missing = own_disks_missing(vm)) != NULL) {
		(void)snprintf(msg, sizeof(msg), "its disks could not be "
		    "prepared: %s", m->status != 0 ? m->text : missing);
		vm_close_store_fds(vm);
		vm_fail(vm, msg);
		return;
	}
	/* Made: what its own copies may grow to counts from now on. */
	if (vm->state == VS_CREATING && vm->op.pending &&
	    vm->op.kind == VO_CREATE && m->disk_bytes > 0) {
		if (vm_admit_storage(vm->row.ws_id, m->disk_bytes, msg,
		    sizeof(msg)) == -1) {
			vm_close_store_fds(vm);
			vm_fail(vm, msg);
			return;
		}
		vm->row.disk_bytes = m->disk_bytes;
		if (state_vm_disk_bytes_set(vm->row.id, m->disk_bytes) == -1)
			log_warnx("%s: disk size not recorded", vm->row.id);
	}
	log_info("%s: disks ready (%s)", vm->row.id, m->text);
	vm_fsm(vm, VE_DISK_READY, NULL);
	vm_progress(vm, 1, 3, "disks ready");
	vm->boot.restore = 0;
	vm_net_setup(vm);
}

/* stored's IMSG_STORE_VM_DISK: what one disk of a request is. */
static void
vm_store_vm_disk(struct imsg *imsg)
{
	struct msg_store_vm_disk	 m;
	struct req			*q;

	if (msg_store_vm_disk_get(imsg, &m) == -1)
		fatalx("stored: malformed %s", imsg_type_name(imsg->hdr.type));
	if ((q = req_find(RP_STORED, NULL, imsg->hdr.peerid)) == NULL ||
	    q->vm == NULL)
		return;
	if (m.index != q->vm->nvdisk)
		fatalx("stored: disk %u out of order", m.index);
	q->vm->vdisk[q->vm->nvdisk++] = m;
}

/* The disk was made or opened (the fds came before), or not. */
static void
store_disk_done(struct req *r, struct imsg *imsg)
{
	struct vm		*vm = r->vm;
	struct msg_store_result	 m;
	char			 msg[320];

	vm_store_result(imsg, &m);
	if (store_overtaken(vm, VS_CREATING))
		return;
	if (vm_own_disks(vm)) {
		store_own_disks_done(vm, &m);
		return;
	}
	if (m.status != 0 || vm->store_fds[STORE_FD_DISK] == -1 ||
	    vm->store_fds[STORE_FD_KERNEL] == -1 ||
	    (m.format == DISK_QCOW2 && vm->store_fds[STORE_FD_BASE] == -1) ||
	    (m.format == DISK_RAW && vm->store_fds[STORE_FD_STATE] == -1)) {
		(void)snprintf(msg, sizeof(msg), "the disk could not be "
		    "prepared: %s", m.status != 0 ? m.text :
		    "descriptors missing");
		vm_close_store_fds(vm);
		vm_fail(vm, msg);
		return;
	}
	vm->disk_format = m.format;
	log_info("%s: disk ready (%s)", vm->row.id, m.text);
	vm_fsm(vm, VE_DISK_READY, NULL);
	vm_progress(vm, 1, 3, "disk ready");
	if (vm->boot.resume) {
		vm_store_checkpoint(vm, vm_fork_dir(vm), 0, NULL);
		return;
	}
	if (vm->tpl == TPL_SHARED) {
		vm_store_ram(vm);
		return;
	}
	if (vm->boot.restore && vm_template_ready(vm)) {
		vm_store_checkpoint(vm, vm_template_source(vm), 0, NULL);
		return;
	}
	vm->boot.restore = 0;	/* retired meanwhile: it boots */
	vm_net_setup(vm);
}

/*
 * The checkpoint file stored opened (status 0) or could not.  The
 * template has its monitor write it; a new VM restores from it, or boots
 * if it cannot.
 */
static void
store_checkpoint_done(struct req *r, struct imsg *imsg)
{
	struct vm		*vm = r->vm;
	struct msg_store_result	 m;
	const char		*err = NULL;
	int			 fd;
	char			 msg[400];

	vm_store_result(imsg, &m);
	/*
	 * The templates ask to write once they hold (the host's) or have
	 * loaded the host's (a shared one), a hibernating VM once paused;
	 * a new or resumed VM, or a shared template, to read before it
	 * boots.
	 */
	if (store_overtaken(vm, vm->state == VS_HIBERNATING ||
	    (vm->tpl && vm->state == VS_BOOTING) ? vm->state : VS_CREATING))
		return;
	fd = vm->store_fds[STORE_FD_CHECKPOINT];
	vm->store_fds[STORE_FD_CHECKPOINT] = -1;
	if (m.status != 0)
		err = m.text;
	else if (fd == -1)
		err = "no descriptor";
	if (err != NULL && fd != -1)
		close(fd);
	if (vm->state == VS_BOOTING || vm->state == VS_HIBERNATING) {
		if (err != NULL) {
			(void)snprintf(msg, sizeof(msg), "no checkpoint "
			    "file: %s", err);
			if (vm->tpl)
				vm_fail(vm, msg);
			else
				vm_hibernated(vm, 0, 0, msg);
			return;
		}
		vm_checkpoint_write(vm, fd);
		return;
	}
	vm_fork_read(vm);
	if (err != NULL && (vm->boot.resume || vm->tpl)) {
		(void)snprintf(msg, sizeof(msg), "its checkpoint cannot be "
		    "read: %s", err);
		vm_fail(vm, msg);
		return;
	}
	if (err != NULL) {
		log_warnx("%s: boots instead of restoring: %s", vm->row.id,
		    err);
		vm->boot.restore = 0;
		vm_template_unuse(vm);
	} else
		vm->store_fds[STORE_FD_CHECKPOINT] = fd;
	vm_net_setup(vm);
}

/*
 * A shared template's RAM file, made by stored (the fd came before): kept
 * for its clones; then the host's template's checkpoint, which it loads.
 */
static void
store_ram_done(struct req *r, struct imsg *imsg)
{
	struct vm		*vm = r->vm;
	struct msg_store_result	 m;
	const char		*src = NULL;
	char			 msg[320];
	int			 fd;

	vm_store_result(imsg, &m);
	if (store_overtaken(vm, VS_CREATING))
		return;
	fd = vm->store_fds[STORE_FD_RAM];
	vm->store_fds[STORE_FD_RAM] = -1;
	if (m.status != 0 || fd == -1 || (src = vm_template_source(vm)) ==
	    NULL) {
		if (fd != -1)
			close(fd);
		(void)snprintf(msg, sizeof(msg), "no RAM file: %s",
		    m.status != 0 ? m.text : fd == -1 ? "no descriptor" :
		    "the host's template was retired");
		vm_fail(vm, msg);
		return;
	}
	if (vm_template_ram(vm, fd) == -1) {
		vm_fail(vm, "a RAM file for no shared template being made");
		return;
	}
	vm_store_checkpoint(vm, src, 0, NULL);
}

/* Asks stored for a shared template's RAM file, made anew. */
void
vm_store_ram(struct vm *vm)
{
	struct msg_store_vm_ram	 m = { vm->row.id, vm->row.memory_mib };
	struct req		*r;

	r = req_new(RP_STORED, vm, IMSG_STORE_VM_RAM, store_ram_done,
	    store_cancel);
	msg_store_vm_ram_put(r->msg, &m);
	(void)req_send(r);
}

/* stored's report of an image, unasked: it ends the waits for it. */
static void
vm_image_status(struct imsg *imsg)
{
	struct msg_store_image_status	 m;
	struct req			*r;

	if (msg_store_image_status_get(imsg, &m) == -1)
		fatalx("stored: malformed %s", imsg_type_name(imsg->hdr.type));
	if (nimages == CONF_MAX_IMAGES)
		fatalx("stored: too many images");
	(void)snprintf(images[nimages].name, sizeof(images[nimages].name),
	    "%s", m.image);
	images[nimages].ok = m.ok;
	images[nimages].bytes = m.disk_bytes;
	(void)snprintf(images[nimages].text, sizeof(images[nimages].text),
	    "%s", m.text);
	nimages++;
	if (m.ok)
		log_info("image %s: %s", m.image, m.text);
	else
		log_warnx("image %s refused: %s", m.image, m.text);
	while ((r = req_match(RP_IMAGE, 0, images[nimages - 1].name)) != NULL)
		req_reply(r, imsg);
	vm_template_build();
}

static void
vm_store_preflight(struct imsg *imsg)
{
	struct msg_store_preflight_result	 m;

	if (msg_store_preflight_result_get(imsg, &m) == -1)
		fatalx("stored: malformed %s", imsg_type_name(imsg->hdr.type));
	(void)snprintf(store_preflight, sizeof(store_preflight), "%s",
	    m.text);
	log_info("storage: %s", m.text);
}

/*
 * A disk directory stored holds: one that no VM owns (a template of an
 * earlier run, or what a crash left) is deleted.
 */
static void
vm_store_entry(struct imsg *imsg)
{
	struct msg_store_disk_entry	 m;

	if (msg_store_disk_entry_get(imsg, &m) == -1)
		fatalx("stored: malformed %s", imsg_type_name(imsg->hdr.type));
	if (vm_find(m.vm_id, 0) != NULL || vm_template_owns(m.vm_id) ||
	    vm_fork_owns(m.vm_id))
		return;
	log_info("%s: deleting the disk no VM owns", m.vm_id);
	vm_store_delete_unowned(m.vm_id);
}

int
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
	(void)snprintf(err, errlen, "no image named %s; ", name);
	vm_image_names(err, errlen);
	return -1;
}

/* Appends to buf, as far as it fits, the names an image may have. */
void
vm_image_names(char *buf, size_t size)
{
	size_t	 i, len = strlen(buf);

	if (env->conf.nimages == 0) {
		(void)snprintf(buf + len, size - len, "this host offers no "
		    "images: ask its operator");
		return;
	}
	for (i = 0; i < env->conf.nimages && len < size; i++) {
		(void)snprintf(buf + len, size - len, "%s%s",
		    i == 0 ? "the images are " : ", ",
		    env->conf.images[i].name);
		len = strlen(buf);
	}
	if (len < size)
		(void)snprintf(buf + len, size - len, " (see image_list)");
}

/*
 * The catalogue's images as image_list shows them, in the config's order
 * (the first is vm_create's default), each with what stored found: its
 * size once verified, or why it cannot be used.
 */
json_t *
vm_images_json(void)
{
	const struct image_conf	*ic;
	const struct vm		*vm;
	json_t			*a, *j;
	size_t			 i, k;
	int			 in_use;

	if ((a = json_array()) == NULL)
		return NULL;
	for (i = 0; i < env->conf.nimages; i++) {
		ic = &env->conf.images[i];
		in_use = 0;
		TAILQ_FOREACH(vm, &vms, entry)
			if (!vm->tpl && strcmp(vm->row.image, ic->name) == 0)
				in_use = 1;
		j = json_pack("{s:s, s:s, s:s+, s:b, s:b, s:b, s:s}", "name",
		    ic->name, "format", "raw", "digest", "sha256:",
		    ic->disk_sha256, "default", i == 0, "catalog", 1,
		    "in_use", in_use, "state", "verifying");
		if (j == NULL || json_array_append_new(a, j) == -1) {
			json_decref(a);
			return NULL;
		}
		for (k = 0; k < nimages; k++) {
			if (strcmp(images[k].name, ic->name) != 0)
				continue;
			if (images[k].ok) {
				json_object_set_new(j, "state",
				    json_string("ready"));
				json_object_set_new(j, "disk_size",
				    json_integer((json_int_t)images[k].bytes));
			} else {
				json_object_set_new(j, "state",
				    json_string("refused"));
				json_object_set_new(j, "reason",
				    json_string(images[k].text));
			}
		}
	}
	return a;
}

/* Whether name is one of the operator's catalogue. */
int
vm_catalog_image(const char *name)
{
	size_t	 i;

	for (i = 0; i < env->conf.nimages; i++)
		if (strcmp(env->conf.images[i].name, name) == 0)
			return 1;
	return 0;
}

int
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

void
vm_store_imsg(struct imsg *imsg)
{
	struct msg_store_fd	 m;
	struct req		*q;
	int			 fd;

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
	case IMSG_STORE_VM_DISK:
		vm_store_vm_disk(imsg);
		return;
	case IMSG_STORE_IMAGE_ENTRY:
	case IMSG_STORE_IMAGE_SNAP:
	case IMSG_STORE_PROGRESS:
		vm_store_image_part(imsg);
		return;
	case IMSG_STORE_FD:
		if (msg_store_fd_get(imsg, &m) == -1 || imsg->fd == -1)
			fatalx("stored: malformed IMSG_STORE_FD");
		fd = imsg_get_fd(imsg);
		if ((q = req_find(RP_STORED, NULL, imsg->hdr.peerid)) ==
		    NULL || (q->vm == NULL && m.role != STORE_FD_IMAGE)) {
			close(fd);
			return;
		}
		/* An image's bytes: frontd's to move, not mcvmd's. */
		if (q->vm == NULL) {
			call_send_fd(q->call, IMSG_FRONT_IMAGE_FD, fd);
			return;
		}
		if (m.role == STORE_FD_IMAGE)
			fatalx("stored: an image descriptor for a VM");
		if (q->vm->store_fds[m.role] != -1)
			fatalx("stored: fd role %u sent twice", m.role);
		q->vm->store_fds[m.role] = fd;
		return;
	case IMSG_STORE_RESULT:
		if ((q = req_find(RP_STORED, NULL, imsg->hdr.peerid)) == NULL)
			return;
		req_reply(q, imsg);
		return;
	default:
		fatalx("stored: unexpected %s", imsg_type_name(imsg->hdr.type));
	}
}

/* What mcvmctl status shows of storage and the images. */
void
vm_store_notes(void (*note)(const char *, const char *, void *), void *arg)
{
	char	 text[CONF_NAME_MAX + 320];
	size_t	 i;

	note("storage", store_preflight[0] != '\0' ? store_preflight :
	    "not checked yet", arg);
	for (i = 0; i < nimages; i++) {
		(void)snprintf(text, sizeof(text), "%.64s: %s%.255s",
		    images[i].name, images[i].ok ? "" : "refused: ",
		    images[i].text);
		note("image", text, arg);
	}
}
