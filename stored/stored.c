/*
 * mcvm-stored: the image store.  It runs as its own user, the owner of the
 * store, with no capabilities, in a network namespace of its own (it never
 * reaches the network).  It is not chrooted: qemu-img needs the system's
 * libraries; its seccomp policy and its uid confine it instead.  Its one
 * peer is mcvmd.
 *
 * What it does:
 *
 *  - The catalog (catalog.c).  As root, before the drop, it opens every
 *    file of every `image' block of the config (O_NOFOLLOW) and keeps the
 *    fds.  After the HELLO it hashes them in steps of STORED_HASH_BUDGET
 *    bytes from a zero timer, so requests are answered between steps, and
 *    sends one IMSG_STORE_IMAGE_STATUS per image in config order.  A
 *    file whose identity and pin are those recorded (in the store's
 *    "verified") when it was last verified is not hashed again.  An
 *    image not yet verified gets EAGAIN, a failed one EIO; the bytes
 *    served are the bytes hashed, since the fds stay open, and a file
 *    whose size, times or inode change is refused (ESTALE).
 *
 *  - VM disks (disk.c), in <statedir>/vms/<vm id>/, made by stored as
 *    root before the drop (0700, its user) and used only through a dirfd:
 *    a reflink clone (FICLONE) of the catalog disk where the filesystem
 *    can, else a qcow2 overlay whose recorded backing is only a name,
 *    "mcvm-catalog:IMAGE"; QEMU gets the base from STORE_FD_BASE.
 *
 *  - VMs from their own disks (vmdisks.c): overlays or reflink clones
 *    of a workspace's images in the VM's directory, or with persistent
 *    the images themselves, each in use while the VM exists; the
 *    install ISO, and for UEFI OVMF's code and a per-VM copy of its
 *    variables (both files opened as root at start).
 *
 *  - qemu-img (qemuimg.c).  stored's filter forbids fork and exec, so
 *    before loading it stored forks a helper with the same uid, no
 *    capabilities and only a socketpair open; the helper forks a job
 *    per qemu-img, which runs it with a time limit, bounded output, a
 *    clean environment and rlimits, under the helper's allow-list.
 *    stored never waits for a job: each answers on a socket of its own.
 *
 *  - Workspace images (images.c), in <statedir>/workspaces/<ws id>/
 *    images/: made, converted, resized, snapshotted, uploaded and
 *    downloaded at mcvmd's request, within the budget mcvmd sends.
 *
 *  - Base images in use.  stored counts, per catalog image, the VM
 *    overlays whose backing it is (found again at start-up by reading
 *    the overlays' headers).  imgcat_remove_check() refuses removal of
 *    an image while any lives; stored never writes or removes catalog
 *    files itself, and IMSG_STORE_DISK_DELETE removes only one VM's
 *    directory.
 *
 * Protocol errors from mcvmd (an unknown type, a malformed payload, an
 * invalid vm id or image name, an fd where none belongs) are fatal: mcvmd
 * validated those values, so a bad one means it is broken.  A well-formed
 * request that cannot be done gets IMSG_STORE_RESULT with an errno value.
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <sys/queue.h>

#include <errno.h>
#include <event.h>
#include <inttypes.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdarg.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"
#include "config.h"
#include "disk.h"
#include "images.h"
#include "log.h"
#include "msg.h"
#include "msg_proc.h"
#include "msg_store.h"
#include "privdrop.h"
#include "proc.h"
#include "proto.h"
#include "qemuimg.h"
#include "stored.h"
#include "validate.h"
#include "vmdisks.h"

#define STORED_USAGE	"mcvm-stored [-dhnSv] [-D macro=value] [-f file]"
#define STORE_DIR	"images"
#define RECORDS_FILE	"verified"	/* in STORE_DIR: see catalog.c */
#define VMS_DIR		"vms"
#define STORED_HASH_BUDGET	(8ULL << 20)	/* bytes hashed per step */
#define STORED_TEXT_MAX		512
#define STORED_FDS_MAX		4		/* disk, base, kernel, initrd */

static struct mcvm_config	 conf;
static struct imsgev		 iev_parent;
static struct catalog		 cat;
static struct event		 ev_hash;
static int			 vmsfd = -1;
static char			 vmsdir[PATH_MAX];

static void
stored_send_status(struct catalog_image *img)
{
	struct msg_store_image_status	 m;
	struct ibuf			*b;

	m.image = img->conf->name;
	m.ok = img->state == CAT_OK;
	m.disk_bytes = img->disk_bytes;
	m.text = img->text;
	b = imsg_create(&iev_parent.ibuf, IMSG_STORE_IMAGE_STATUS, 0, 0,
	    64 + sizeof(img->text));
	if (b == NULL)
		fatal("%s", __func__);
	msg_store_image_status_put(b, &m);
	if (imsgev_close(&iev_parent, b) == -1)
		fatal("%s", __func__);
}

/* One step of catalog verification; re-armed until every image is done. */
static void
stored_hash(int fd, short event, void *arg)
{
	struct timeval		 now = { 0, 0 };
	struct catalog_image	*img;

	while ((img = imgcat_verify_step(&cat, STORED_HASH_BUDGET)) != NULL)
		stored_send_status(img);
	if (!imgcat_verified(&cat))
		evtimer_add(&ev_hash, &now);
	else if (cat.changed)
		(void)imgcat_records_save(&cat, AT_FDCWD, RECORDS_FILE);
}

/*
 * Duplicates the catalog fds a VM needs: base (overlays only), kernel and
 * initrd (when the image has one).  0, or an errno value with all closed.
 */
static int
stored_dup_catalog(struct catalog_image *img, int overlay, int fds[3])
{
	static const int which[3] = { CAT_DISK, CAT_KERNEL, CAT_INITRD };
	int		 i, rc;

	for (i = 0; i < 3; i++)
		fds[i] = -1;
	for (i = 0; i < 3; i++) {
		if (img->files[which[i]].fd == -1 || (i == 0 && !overlay))
			continue;
		fds[i] = fcntl(img->files[which[i]].fd, F_DUPFD_CLOEXEC, 0);
		if (fds[i] == -1) {
			rc = errno;
			while (i-- > 0)
				if (fds[i] != -1)
					close(fds[i]);
			return rc;
		}
	}
	return 0;
}

/* The fds of a VM's disk, then the result: the reply to CREATE and OPEN. */
static void
stored_send_disk(uint32_t id, struct vm_disk *vd, int fds[3],
    const char *text)
{
	static const enum store_fd_role roles[3] = {
		STORE_FD_BASE, STORE_FD_KERNEL, STORE_FD_INITRD,
	};
	int	 i;

	imsgev_send_fd(&iev_parent, IMSG_STORE_FD, id, STORE_FD_DISK, vd->fd);
	vd->fd = -1;
	if (vd->state_fd != -1)
		imsgev_send_fd(&iev_parent, IMSG_STORE_FD, id, STORE_FD_STATE,
		    vd->state_fd);
	vd->state_fd = -1;
	for (i = 0; i < 3; i++)
		if (fds[i] != -1)
			imsgev_send_fd(&iev_parent, IMSG_STORE_FD, id,
			    roles[i], fds[i]);
	stored_result(id, 0, vd->format, vd->bytes, text);
}

/* The image a request names: usable, or an error result was sent. */
static struct catalog_image *
stored_image(uint32_t id, const char *name)
{
	struct catalog_image	*img;
	char			 text[STORED_TEXT_MAX];
	int			 rc;

	if ((img = imgcat_lookup(&cat, name)) == NULL) {
		textf(text, sizeof(text), "no image %s in the "
		    "catalog", name);
		stored_result(id, ENOENT, DISK_RAW, 0, text);
		return NULL;
	}
	if ((rc = imgcat_image_usable(img, text, sizeof(text))) != 0) {
		stored_result(id, rc, DISK_RAW, 0, text);
		return NULL;
	}
	return img;
}

static void
stored_close3(int fds[3])
{
	int	 i;

	for (i = 0; i < 3; i++)
		if (fds[i] != -1) {
			close(fds[i]);
			fds[i] = -1;
		}
}

/* The answer to a DISK_CREATE whose disk is made, or is not. */
static void
stored_disk_made(uint32_t id, const char *vm, const char *name, int rc,
    struct vm_disk *vd, int fds[3], char *text, size_t len)
{
	if (rc == 0 && vd->format == DISK_QCOW2 &&
	    imgcat_dep_add(&cat, vm, name) == -1) {
		rc = errno;
		disk_close(vd);
		(void)disk_delete(vmsfd, vm, text, len);
		textf(text, len, "vm %s: %s", vm, strerror(rc));
	}
	if (rc != 0) {
		stored_close3(fds);
		stored_result(id, rc, DISK_RAW, 0, text);
		return;
	}
	if (vd->format == DISK_RAW && fds[0] != -1) {
		close(fds[0]);
		fds[0] = -1;
	}
	textf(text, len, "vm %s: %s of image %s", vm,
	    vd->format == DISK_RAW ? "reflink clone" : "qcow2 overlay", name);
	log_info("%s", text);
	stored_send_disk(id, vd, fds, text);
}

/* A VM disk whose overlay qemu-img makes. */
struct overlay_job {
	LIST_ENTRY(overlay_job)	 entry;
	uint32_t		 id;
	char			 vm[ID_MAX + 1];
	char			 image[OBJ_NAME_MAX + 1];
	uint64_t		 bytes;
	int			 dfd;
	int			 fds[3];
	struct qemuimg_job	*job;
};
static LIST_HEAD(, overlay_job)	 overlays = LIST_HEAD_INITIALIZER(overlays);

static void
stored_overlay_done(const struct qemuimg_result *res, void *arg)
{
	struct overlay_job	*o = arg;
	struct vm_disk		 vd;
	char			 text[STORED_TEXT_MAX];
	int			 rc;

	LIST_REMOVE(o, entry);
	rc = disk_create_finish(vmsfd, o->vm, o->image, o->bytes, o->dfd,
	    res->status, res->text, &vd, text, sizeof(text));
	stored_disk_made(o->id, o->vm, o->image, rc, &vd, o->fds, text,
	    sizeof(text));
	free(o);
}

/* A deletion overtakes the VM's creation: the creation is refused. */
static void
stored_overlay_cancel(const char *vm)
{
	struct overlay_job	*o;
	struct vm_disk		 vd;
	char			 text[STORED_TEXT_MAX];

	LIST_FOREACH(o, &overlays, entry)
		if (strcmp(o->vm, vm) == 0)
			break;
	if (o == NULL)
		return;
	LIST_REMOVE(o, entry);
	qemuimg_cancel(o->job);
	(void)disk_create_finish(vmsfd, o->vm, o->image, o->bytes, o->dfd,
	    ECANCELED, "the VM is being deleted", &vd, text, sizeof(text));
	stored_close3(o->fds);
	stored_result(o->id, ECANCELED, DISK_RAW, 0, text);
	free(o);
}

/*
 * Starts qemu-img for an overlay of image in o->dfd, its backing
 * recorded as mcvm-catalog:IMAGE and never opened (-u).  QEMU is given
 * the base as an explicit backing node from an fd, never this name.
 */
static int
stored_overlay_start(struct overlay_job *o, char *text, size_t len)
{
	struct qemuimg_spec	 spec = {
		.argv = { "qemu-img", "create", "-q", "-f", "qcow2", "-F",
		    "raw", "-b", NULL, "-u", VM_DISK_QCOW2, NULL, NULL },
		.dirfd = o->dfd, .xfd = -1, .timeout_ms = QEMUIMG_QUICK_MS,
		.fsize_max = QEMUIMG_OVERLAY_FSIZE,
	};
	char	 backing[sizeof(CATALOG_BACKING_PREFIX) + OBJ_NAME_MAX];
	char	 size[32];

	textf(backing, sizeof(backing), "%s%s", CATALOG_BACKING_PREFIX,
	    o->image);
	textf(size, sizeof(size), "%" PRIu64, o->bytes);
	spec.argv[8] = backing;
	spec.argv[11] = size;
	return qemuimg_start(&spec, stored_overlay_done, NULL, o, &o->job,
	    text, len);
}

static void
stored_disk_create(uint32_t id, const char *vm, const char *name)
{
	struct catalog_image	*img;
	struct overlay_job	*o;
	struct vm_disk		 vd;
	char			 text[STORED_TEXT_MAX];
	int			 fds[3], dfd, rc;

	if ((img = stored_image(id, name)) == NULL)
		return;
	/* Every fd the reply needs, before anything is made. */
	if ((rc = stored_dup_catalog(img, 1, fds)) != 0) {
		textf(text, sizeof(text), "cannot duplicate image "
		    "%s's files: %s", name, strerror(rc));
		stored_result(id, rc, DISK_RAW, 0, text);
		return;
	}
	rc = disk_create(vmsfd, vm, name, img->files[CAT_DISK].fd, &vd, &dfd,
	    text, sizeof(text));
	if (rc != EINPROGRESS) {
		stored_disk_made(id, vm, name, rc, &vd, fds, text,
		    sizeof(text));
		return;
	}
	if ((o = calloc(1, sizeof(*o))) == NULL) {
		rc = errno;
		textf(text, sizeof(text), "%s", strerror(rc));
	} else {
		o->id = id;
		textf(o->vm, sizeof(o->vm), "%s", vm);
		textf(o->image, sizeof(o->image), "%s", name);
		o->bytes = img->disk_bytes;
		o->dfd = dfd;
		memcpy(o->fds, fds, sizeof(o->fds));
		if ((rc = stored_overlay_start(o, text, sizeof(text))) == 0) {
			LIST_INSERT_HEAD(&overlays, o, entry);
			return;
		}
		free(o);
	}
	(void)disk_create_finish(vmsfd, vm, name, 0, dfd, rc, text, &vd,
	    text, sizeof(text));
	stored_close3(fds);
	stored_result(id, rc, DISK_RAW, 0, text);
}

static void
stored_disk_open(uint32_t id, const char *vm, const char *name)
{
	struct catalog_image	*img;
	struct vm_disk		 vd;
	char			 text[STORED_TEXT_MAX];
	int			 fds[3], rc;

	if ((img = stored_image(id, name)) == NULL)
		return;
	if ((rc = disk_open(vmsfd, vm, &vd, text, sizeof(text))) != 0) {
		stored_result(id, rc, DISK_RAW, 0, text);
		return;
	}
	if (vd.format == DISK_QCOW2 && strcmp(vd.backing, name) != 0) {
		disk_close(&vd);
		textf(text, sizeof(text), "vm %s's disk is an overlay "
		    "of image %s, not %s", vm, vd.backing, name);
		stored_result(id, EINVAL, DISK_RAW, 0, text);
		return;
	}
	if ((rc = stored_dup_catalog(img, vd.format == DISK_QCOW2,
	    fds)) != 0) {
		disk_close(&vd);
		textf(text, sizeof(text), "cannot duplicate image "
		    "%s's files: %s", name, strerror(rc));
		stored_result(id, rc, DISK_RAW, 0, text);
		return;
	}
	textf(text, sizeof(text), "vm %s: %s of image %s", vm,
	    vd.format == DISK_RAW ? "reflink clone" : "qcow2 overlay", name);
	stored_send_disk(id, &vd, fds, text);
}

static void
stored_checkpoint(uint32_t id, const struct msg_store_checkpoint *m)
{
	char	 text[STORED_TEXT_MAX];
	int	 fd, base, rc;

	if ((rc = disk_checkpoint(vmsfd, m->vm_id, m->write != 0, m->base,
	    &fd, &base, text, sizeof(text))) != 0) {
		stored_result(id, rc, DISK_RAW, 0, text);
		return;
	}
	textf(text, sizeof(text), "vm %s: checkpoint opened for %s%s",
	    m->vm_id, m->write ? "writing" : "reading",
	    m->base[0] != '\0' ? ", its base made" : base != -1 ?
	    ", with its base" : "");
	if (base != -1)
		imsgev_send_fd(&iev_parent, IMSG_STORE_FD, id, STORE_FD_RAM,
		    base);
	imsgev_send_fd(&iev_parent, IMSG_STORE_FD, id, STORE_FD_CHECKPOINT,
	    fd);
	stored_result(id, 0, DISK_RAW, 0, text);
}

static void
stored_vm_ram(uint32_t id, const char *vm, uint32_t mib)
{
	char	 text[STORED_TEXT_MAX];
	int	 fd, rc;

	if ((rc = disk_ram(vmsfd, vm, mib, &fd, text, sizeof(text))) != 0) {
		stored_result(id, rc, DISK_RAW, 0, text);
		return;
	}
	textf(text, sizeof(text), "vm %s: RAM file of %u MiB made", vm, mib);
	imsgev_send_fd(&iev_parent, IMSG_STORE_FD, id, STORE_FD_RAM, fd);
	stored_result(id, 0, DISK_RAW, 0, text);
}

/* The disk half of a raw disk's live snapshot (disk_snapshot). */
static void
stored_vm_snapshot(uint32_t id, const struct msg_store_vm_snapshot *m)
{
	char	 text[STORED_TEXT_MAX];
	int	 rc;

	if ((rc = disk_snapshot(vmsfd, m->vm_id, m->op, m->tag, text,
	    sizeof(text))) != 0)
		log_warnx("%s", text);
	else
		log_debug("%s", text);
	stored_result(id, rc, DISK_RAW, 0, text);
}

/*
 * Forks' disk copies under way: each copies DISK_COPY_STEP bytes a turn
 * of the event loop, so that other requests are served between.
 */
#define DISK_COPY_STEP	(32ULL << 20)

struct copy_job {
	LIST_ENTRY(copy_job)	 entry;
	uint32_t		 id;
	char			 vm[ID_MAX + 1];
	struct disk_copy	 cp;
};
static LIST_HEAD(, copy_job)	 copies = LIST_HEAD_INITIALIZER(copies);
static struct event		 copy_ev;

/*
 * The end of a copy (rc): a qcow2 overlay's copy depends on its image,
 * as the overlay does; then the answer.
 */
static void
stored_copy_end(struct copy_job *j, int rc, char *text, size_t len)
{
	char		 backing[CONF_NAME_MAX];
	uint64_t	 bytes;

	if (rc == 0 && j->cp.format == DISK_QCOW2 &&
	    ((rc = qcow2_header_read(j->cp.dst, &bytes, backing,
	    sizeof(backing))) != 0 || imgcat_dep_add(&cat, j->vm,
	    backing) == -1)) {
		if (rc == 0)
			rc = errno;
		textf(text, len, "vm %s: its disk's copy: %s", j->vm,
		    strerror(rc));
	}
	disk_copy_end(vmsfd, j->vm, &j->cp, rc);
	if (rc == 0) {
		textf(text, len, "vm %s: its disk copied", j->vm);
		log_info("%s", text);
	} else
		log_warnx("%s", text);
	stored_result(j->id, rc, DISK_RAW, 0, text);
}

static void
stored_copy_turn(int fd, short event, void *arg)
{
	struct copy_job	*j, *next;
	char		 text[STORED_TEXT_MAX];
	int		 rc;

	for (j = LIST_FIRST(&copies); j != NULL; j = next) {
		next = LIST_NEXT(j, entry);
		if ((rc = disk_copy_step(&j->cp, DISK_COPY_STEP, text,
		    sizeof(text))) == EINPROGRESS)
			continue;
		LIST_REMOVE(j, entry);
		stored_copy_end(j, rc, text, sizeof(text));
		free(j);
	}
	if (!LIST_EMPTY(&copies))
		event_active(&copy_ev, EV_TIMEOUT, 0);
}

static void
stored_disk_copy(uint32_t id, const char *vm, const char *from)
{
	struct copy_job	*j;
	char		 text[STORED_TEXT_MAX];
	int		 rc;

	if ((j = calloc(1, sizeof(*j))) == NULL) {
		rc = errno;
		textf(text, sizeof(text), "%s", strerror(rc));
		stored_result(id, rc, DISK_RAW, 0, text);
		return;
	}
	j->id = id;
	textf(j->vm, sizeof(j->vm), "%s", vm);
	if ((rc = disk_copy_start(vmsfd, vm, from, &j->cp, text,
	    sizeof(text))) != EINPROGRESS) {
		stored_copy_end(j, rc, text, sizeof(text));
		free(j);
		return;
	}
	if (LIST_EMPTY(&copies)) {
		evtimer_set(&copy_ev, stored_copy_turn, NULL);
		event_active(&copy_ev, EV_TIMEOUT, 0);
	}
	LIST_INSERT_HEAD(&copies, j, entry);
}

/* A deletion overtakes a copy into the VM's directory: it fails. */
static void
stored_copy_cancel(const char *vm)
{
	struct copy_job	*j, *next;
	char		 text[STORED_TEXT_MAX];

	for (j = LIST_FIRST(&copies); j != NULL; j = next) {
		next = LIST_NEXT(j, entry);
		if (strcmp(j->vm, vm) == 0) {
			LIST_REMOVE(j, entry);
			textf(text, sizeof(text), "vm %s: the VM is being "
			    "deleted", vm);
			stored_copy_end(j, ECANCELED, text, sizeof(text));
			free(j);
		}
	}
}

static void
stored_disk_delete(uint32_t id, const char *vm)
{
	char	 text[STORED_TEXT_MAX];
	int	 rc;

	stored_overlay_cancel(vm);
	stored_copy_cancel(vm);
	vmdisks_cancel(vm);
	rc = disk_delete(vmsfd, vm, text, sizeof(text));
	if (rc == 0 || rc == ENOENT)
		vmdisks_forget(vm);
	if (rc == 0) {
		imgcat_dep_del(&cat, vm);
		log_info("%s", text);
	}
	stored_result(id, rc, DISK_RAW, 0, text);
}

static int
stored_list_one(const char *vm, void *arg)
{
	struct msg_store_disk_entry	 m;
	uint32_t			*id = arg;
	struct ibuf			*b;

	m.vm_id = vm;
	if ((b = imsg_create(&iev_parent.ibuf, IMSG_STORE_DISK_ENTRY, *id, 0,
	    32)) == NULL)
		fatal("%s", __func__);
	msg_store_disk_entry_put(b, &m);
	if (imsgev_close(&iev_parent, b) == -1)
		fatal("%s", __func__);
	return 0;
}

static void
stored_disk_list(uint32_t id)
{
	char	 text[STORED_TEXT_MAX];
	int	 n;

	if ((n = disk_list(vmsfd, stored_list_one, &id)) == -1) {
		textf(text, sizeof(text), "%s: %s", vmsdir,
		    strerror(errno));
		stored_result(id, errno, DISK_RAW, 0, text);
		return;
	}
	textf(text, sizeof(text), "%d vm disk%s", n,
	    n == 1 ? "" : "s");
	stored_result(id, 0, DISK_RAW, 0, text);
}

/* Whether the vms directory can take reflinks of every catalog disk. */
static void
stored_preflight(uint32_t id)
{
	struct msg_store_preflight_result	 m;
	struct ibuf				*b;
	char					 why[DISK_TEXT_MAX];
	char					 text[STORED_TEXT_MAX];
	size_t					 i;
	int					 reflink = -1, r;

	textf(text, sizeof(text), "vm disks: qcow2 overlays: no "
	    "catalog disk to clone");
	for (i = 0; i < cat.n && reflink != 0; i++) {
		if (cat.images[i].files[CAT_DISK].fd == -1)
			continue;
		r = disk_reflink_probe(vmsfd, cat.images[i].files[CAT_DISK].fd,
		    why, sizeof(why));
		if (r == 1) {
			reflink = 1;
			textf(text, sizeof(text), "vm disks: %s",
			    why);
		} else {
			reflink = 0;
			textf(text, sizeof(text), "vm disks: qcow2 "
			    "overlays: %s %s (image %s)", vmsdir, why,
			    cat.images[i].conf->name);
		}
	}
	if ((b = imsg_create(&iev_parent.ibuf, IMSG_STORE_PREFLIGHT_RESULT,
	    id, 0, 64 + strlen(text))) == NULL)
		fatal("%s", __func__);
	m.reflink = reflink == 1;
	m.text = text;
	msg_store_preflight_result_put(b, &m);
	if (imsgev_close(&iev_parent, b) == -1)
		fatal("%s", __func__);
}

/* Anything malformed from mcvmd means it is broken. */
static void __attribute__((noreturn))
stored_bad(struct imsg *imsg)
{
	fatalx("malformed %s from mcvmd", imsg_type_name(imsg->hdr.type));
}

static void
stored_imsg(struct imsg *imsg)
{
	union {
		struct msg_verbose		 verbose;
		struct msg_store_disk_create	 create;
		struct msg_store_disk_open	 open;
		struct msg_store_disk_delete	 delete;
		struct msg_store_checkpoint	 checkpoint;
		struct msg_store_image		 image;
		struct msg_store_vm_disks	 vmdisks;
		struct msg_store_vm_snapshot	 snap;
		struct msg_store_vm_ram		 ram;
		struct msg_store_disk_copy	 copy;
	} m;
	uint32_t	 id = imsg->hdr.peerid;

	if (imsg->fd != -1)
		fatalx("unexpected fd with %s from mcvmd",
		    imsg_type_name(imsg->hdr.type));
	switch (imsg->hdr.type) {
	case IMSG_VERBOSE:
		if (msg_verbose_get(imsg, &m.verbose) == -1)
			stored_bad(imsg);
		log_setverbose((int)m.verbose.level);
		break;
	case IMSG_STORE_PREFLIGHT:
		if (msg_store_preflight_get(imsg) == -1)
			stored_bad(imsg);
		stored_preflight(id);
		break;
	case IMSG_STORE_DISK_CREATE:
		if (msg_store_disk_create_get(imsg, &m.create) == -1)
			stored_bad(imsg);
		stored_disk_create(id, m.create.vm_id, m.create.image);
		break;
	case IMSG_STORE_DISK_OPEN:
		if (msg_store_disk_open_get(imsg, &m.open) == -1)
			stored_bad(imsg);
		stored_disk_open(id, m.open.vm_id, m.open.image);
		break;
	case IMSG_STORE_DISK_DELETE:
		if (msg_store_disk_delete_get(imsg, &m.delete) == -1)
			stored_bad(imsg);
		stored_disk_delete(id, m.delete.vm_id);
		break;
	case IMSG_STORE_DISK_LIST:
		if (msg_store_disk_list_get(imsg) == -1)
			stored_bad(imsg);
		stored_disk_list(id);
		break;
	case IMSG_STORE_CHECKPOINT:
		if (msg_store_checkpoint_get(imsg, &m.checkpoint) == -1)
			stored_bad(imsg);
		stored_checkpoint(id, &m.checkpoint);
		break;
	case IMSG_STORE_IMAGE:
		if (msg_store_image_get(imsg, &m.image) == -1)
			stored_bad(imsg);
		images_request(id, &m.image);
		break;
	case IMSG_STORE_VM_DISKS:
		if (msg_store_vm_disks_get(imsg, &m.vmdisks) == -1)
			stored_bad(imsg);
		vmdisks_request(id, &m.vmdisks);
		break;
	case IMSG_STORE_VM_RAM:
		if (msg_store_vm_ram_get(imsg, &m.ram) == -1)
			stored_bad(imsg);
		stored_vm_ram(id, m.ram.vm_id, m.ram.mib);
		break;
	case IMSG_STORE_DISK_COPY:
		if (msg_store_disk_copy_get(imsg, &m.copy) == -1)
			stored_bad(imsg);
		stored_disk_copy(id, m.copy.vm_id, m.copy.from);
		break;
	case IMSG_STORE_VM_SNAPSHOT:
		if (msg_store_vm_snapshot_get(imsg, &m.snap) == -1)
			stored_bad(imsg);
		stored_vm_snapshot(id, &m.snap);
		break;
	case IMSG_STORE_CANCEL:
		if (msg_store_cancel_get(imsg) == -1)
			stored_bad(imsg);
		images_cancel(id);
		break;
	default:
		fatalx("unexpected %s from mcvmd",
		    imsg_type_name(imsg->hdr.type));
	}
}

static void
stored_dispatch(int fd, short event, void *arg)
{
	proc_child_dispatch(arg, event, stored_imsg);
}

/*
 * Creates (as root) a directory of the store, owned by the store user
 * and by no one else, and returns an fd to it.
 */
static int
stored_open_dir(const char *dir, const struct passwd *pw)
{
	struct stat	 st;
	int		 fd;

	if (mkdir(dir, 0700) == -1 && errno != EEXIST)
		fatal("mkdir %s", dir);
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		fatal("%s", dir);
	if (fstat(fd, &st) == -1)
		fatal("%s", dir);
	if ((st.st_uid != pw->pw_uid || st.st_gid != pw->pw_gid) &&
	    fchown(fd, pw->pw_uid, pw->pw_gid) == -1)
		fatal("chown %s", dir);
	if ((st.st_mode & 07777) != 0700 && fchmod(fd, 0700) == -1)
		fatal("chmod %s", dir);
	return fd;
}

static int
stored_scan_one(const char *vm, void *arg)
{
	struct vm_disk	 vd;
	char		 text[STORED_TEXT_MAX];

	if (vmdisks_scan_one(vm))
		return 0;
	if (disk_open(vmsfd, vm, &vd, text, sizeof(text)) != 0) {
		log_warnx("%s", text);
		return 0;
	}
	disk_close(&vd);
	if (vd.format == DISK_QCOW2 &&
	    imgcat_dep_add(&cat, vm, vd.backing) == -1)
		log_warnx("vm %s: overlay of image %s, which is not in the "
		    "catalog", vm, vd.backing);
	return 0;
}

static void
stored_path(char *dst, const char *sub)
{
	if (snprintf(dst, PATH_MAX, "%s/%s", conf.statedir, sub) >= PATH_MAX)
		fatalx("state directory path too long");
}

int
main(int argc, char *argv[])
{
	struct proc_opts	 opts;
	struct passwd		*pw;
	struct timeval		 now = { 0, 0 };
	char			 store[PATH_MAX], wsdir[PATH_MAX];
	int			 storefd, wsfd, helper_sock;

	proc_child_setup(argc, argv, "stored", STORED_USAGE, &opts, &conf);
	(void)umask(077);
	if ((pw = getpwnam(conf.stored_user)) == NULL)
		fatalx("unknown user %s", conf.stored_user);
	stored_path(store, STORE_DIR);
	stored_path(vmsdir, VMS_DIR);
	storefd = stored_open_dir(store, pw);
	if (fchdir(storefd) == -1)
		fatal("chdir %s", store);
	close(storefd);
	vmsfd = stored_open_dir(vmsdir, pw);
	stored_path(wsdir, WS_DIR);
	wsfd = stored_open_dir(wsdir, pw);
	imgcat_open(&cat, &conf);
	vmdisks_firmware_open();
	vmdisks_init(vmsfd, &cat, &iev_parent);
	if (unshare(CLONE_NEWNET) == -1)
		fatal("unshare(CLONE_NEWNET)");

	privdrop(&(struct privdrop){ .user = conf.stored_user });
	if (disk_list(vmsfd, stored_scan_one, NULL) == -1)
		fatal("%s", vmsdir);
	(void)imgcat_records_load(&cat, AT_FDCWD, RECORDS_FILE);
	(void)qemuimg_helper_start(&helper_sock, stored_helper_sandbox);
	stored_sandbox(opts.sandbox_debug);
	qemuimg_init(helper_sock);
	stored_reply_init(&iev_parent);
	images_init(wsfd, &cat, &iev_parent);

	/* Verification starts once the loop runs, after the HELLO. */
	evtimer_set(&ev_hash, stored_hash, NULL);
	evtimer_add(&ev_hash, &now);
	proc_child_run(&iev_parent, stored_dispatch);
	return 1;
}
