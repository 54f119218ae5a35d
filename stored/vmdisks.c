/*
 * VMs from their own disks.  A VM made with vm_create's disks has, in
 * its directory <statedir>/vms/<vm id>/:
 *
 *	uses		what it uses: "ws N", "persistent 0|1" and one
 *			"disk NAME" line per disk, in order
 *	dI.raw, dI.qcow2
 *			disk I (0-3): a reflink clone of image NAME (in
 *			its format), or where reflinks do not work a qcow2
 *			overlay whose backing is recorded as
 *			"mcvm-image:NAME"; none with persistent, where the
 *			image itself is the disk
 *	vars.fd		with UEFI, its own copy of OVMF's variables
 *
 * The images a VM names are in use while its directory exists: stored
 * keeps them in a list, rebuilt at start-up from the uses files, and
 * images.c refuses to change, replace or delete one (vmdisks_in_use).
 * An image attached persistent is that VM's alone.  An image a VM boots
 * has no backing of its own (image_convert flattens one), so that an
 * overlay's whole chain is one base, given to QEMU as an fd like every
 * disk.  IMSG_STORE_DISK_DELETE removes the VM's directory, never an
 * image.
 *
 * Overlays are made by qemu-img jobs, one disk after the other; the
 * event loop never waits for one.
 */
#include <sys/ioctl.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <linux/fs.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"
#include "disk.h"
#include "images.h"
#include "log.h"
#include "proc.h"
#include "qemuimg.h"
#include "stored.h"
#include "validate.h"
#include "vmdisks.h"

#define VMDISK_TEXT_MAX		512
#define VMDISK_FILE_MAX		16	/* "d3.qcow2" */

/* The images one VM uses. */
struct vm_use {
	LIST_ENTRY(vm_use)	 entry;
	char			 vm[ID_MAX + 1];
	uint64_t		 ws;
	int			 persistent;
	unsigned int		 n;
	char			 disks[VM_DISKS_MAX][OBJ_NAME_MAX + 1];
};

/* A request being answered: its disks are made one by one. */
struct vd_req {
	LIST_ENTRY(vd_req)	 entry;
	uint32_t		 id;
	struct vm_use		 use;
	int			 firmware;
	int			 made;		/* its directory, to undo */
	char			 iso[OBJ_NAME_MAX + 1];
	int			 vmdfd;		/* the VM's directory */
	int			 wsdfd;		/* the workspace's images */
	unsigned int		 next;		/* the disk to make next */
	enum image_format	 fmt[VM_DISKS_MAX];	/* its images' */
	uint64_t		 bytes[VM_DISKS_MAX];
	struct qemuimg_job	*job;
};

static LIST_HEAD(, vm_use)	 uses = LIST_HEAD_INITIALIZER(uses);
static LIST_HEAD(, vd_req)	 reqs = LIST_HEAD_INITIALIZER(reqs);
static struct imsgev		*parent;
static struct catalog		*cat;
static int			 vmsfd = -1;
static int			 code_fd = -1, vars_fd = -1;

static void	 vd_make_next(struct vd_req *);

/* OVMF's files, opened as root before the privileges go. */
void
vmdisks_firmware_open(void)
{
	if ((code_fd = open(OVMF_CODE_PATH, O_RDONLY | O_CLOEXEC)) == -1 ||
	    (vars_fd = open(OVMF_VARS_PATH, O_RDONLY | O_CLOEXEC)) == -1) {
		log_info("no UEFI firmware (%s, %s): VMs boot by BIOS only",
		    OVMF_CODE_PATH, OVMF_VARS_PATH);
		if (code_fd != -1)
			close(code_fd);
		code_fd = vars_fd = -1;
	}
}

void
vmdisks_init(int vms, struct catalog *c, struct imsgev *iev)
{
	vmsfd = vms;
	cat = c;
	parent = iev;
}

static struct vm_use *
use_find(const char *vm)
{
	struct vm_use	*u;

	LIST_FOREACH(u, &uses, entry)
		if (strcmp(u->vm, vm) == 0)
			return u;
	return NULL;
}

static int
use_names(const struct vm_use *u, uint64_t ws, const char *name)
{
	unsigned int	 i;

	if (u->ws != ws)
		return 0;
	for (i = 0; i < u->n; i++)
		if (strcmp(u->disks[i], name) == 0)
			return 1;
	return 0;
}

/* Whether a VM's disks are image name of workspace ws, or overlays of it. */
int
vmdisks_in_use(uint64_t ws, const char *name)
{
	struct vm_use	*u;

	LIST_FOREACH(u, &uses, entry)
		if (use_names(u, ws, name))
			return 1;
	return 0;
}

/* The VM its images are no longer used by. */
void
vmdisks_forget(const char *vm)
{
	struct vm_use	*u;

	if ((u = use_find(vm)) == NULL)
		return;
	LIST_REMOVE(u, entry);
	free(u);
}

static int
use_add(const struct vm_use *src)
{
	struct vm_use	*u;

	if (use_find(src->vm) != NULL)
		return 0;
	if ((u = malloc(sizeof(*u))) == NULL)
		return -1;
	*u = *src;
	LIST_INSERT_HEAD(&uses, u, entry);
	return 0;
}

/* The uses record, as a text. */
static int
uses_format(const struct vm_use *u, char *buf, size_t len)
{
	size_t		 o;
	unsigned int	 i;
	int		 n;

	n = snprintf(buf, len, "ws %" PRIu64 "\npersistent %d\n", u->ws,
	    u->persistent);
	if (n < 0 || (size_t)n >= len)
		return -1;
	for (o = (size_t)n, i = 0; i < u->n; i++, o += (size_t)n) {
		n = snprintf(buf + o, len - o, "disk %s\n", u->disks[i]);
		if (n < 0 || (size_t)n >= len - o)
			return -1;
	}
	return (int)o;
}

static int
uses_write(int dfd, const struct vm_use *u)
{
	char	 buf[VMDISK_USES_MAX];
	int	 fd, n, rc = 0;

	if ((n = uses_format(u, buf, sizeof(buf))) == -1)
		return EINVAL;
	if ((fd = openat(dfd, VMDISK_USES, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, VM_DISK_MODE)) == -1)
		return errno;
	if (write(fd, buf, (size_t)n) != n || fsync(fd) == -1)
		rc = errno != 0 ? errno : EIO;
	close(fd);
	return rc;
}

/* Reads and checks VM vm's uses record: 0, ENOENT (none), or EINVAL. */
static int
uses_read(int dfd, const char *vm, struct vm_use *u)
{
	char		 buf[VMDISK_USES_MAX + 1], *line, *next, *end;
	ssize_t		 n;
	int		 fd, rc;

	memset(u, 0, sizeof(*u));
	textf(u->vm, sizeof(u->vm), "%s", vm);
	if ((fd = openat(dfd, VMDISK_USES, O_RDONLY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return errno == ENOENT ? ENOENT : EINVAL;
	n = read(fd, buf, sizeof(buf));
	rc = errno;
	close(fd);
	if (n <= 0 || (size_t)n > VMDISK_USES_MAX)
		return n == -1 ? rc : EINVAL;
	buf[n] = '\0';
	if (strlen(buf) != (size_t)n || buf[n - 1] != '\n')
		return EINVAL;
	u->persistent = -1;
	for (line = buf; *line != '\0'; line = next) {
		next = strchr(line, '\n');
		*next++ = '\0';
		if (strncmp(line, "ws ", 3) == 0 && u->ws == 0) {
			u->ws = strtoull(line + 3, &end, 10);
			if (*end != '\0' || u->ws == 0)
				return EINVAL;
		} else if (strcmp(line, "persistent 0") == 0 &&
		    u->persistent == -1)
			u->persistent = 0;
		else if (strcmp(line, "persistent 1") == 0 &&
		    u->persistent == -1)
			u->persistent = 1;
		else if (strncmp(line, "disk ", 5) == 0 &&
		    u->n < VM_DISKS_MAX && valid_object_name(line + 5))
			textf(u->disks[u->n++], sizeof(u->disks[0]), "%s",
			    line + 5);
		else
			return EINVAL;
	}
	if (u->ws == 0 || u->persistent == -1 || u->n == 0)
		return EINVAL;
	return 0;
}

/*
 * At start-up, for each VM directory: whether it is a VM from its own
 * disks (1, its images then in use) or not (0).
 */
int
vmdisks_scan_one(const char *vm)
{
	struct vm_use	 u;
	int		 dfd, rc;

	if ((dfd = openat(vmsfd, vm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return 0;
	rc = uses_read(dfd, vm, &u);
	close(dfd);
	if (rc == ENOENT)
		return 0;
	if (rc != 0)
		log_warnx("vm %s: its record of the images it uses is "
		    "broken: %s", vm, strerror(rc));
	else if (use_add(&u) == -1)
		fatal("%s", __func__);
	return 1;
}

/*
 * Opens image name of the store dfd as a VM's disk, read-write or not:
 * qcow2 or raw, without a backing.  0 with *fdp, its format and virtual
 * size, or an errno value with text saying what to do.
 */
static int
image_open(int dfd, const char *name, int rw, int *fdp,
    enum image_format *fmt, uint64_t *bytes, char *text, size_t len)
{
	static const enum image_format	 bootable[] = { IMG_QCOW2, IMG_RAW };
	char				 file[OBJ_NAME_MAX + 16];
	char				 backing[QCOW2_BACKING_MAX + 1];
	struct stat			 st;
	size_t				 i;
	int				 fd = -1, rc, f;

	*fdp = -1;
	for (i = 0; i < sizeof(bootable) / sizeof(bootable[0]); i++) {
		textf(file, sizeof(file), "%s.%s", name,
		    image_format_name(bootable[i]));
		fd = openat(dfd, file, (rw ? O_RDWR : O_RDONLY) | O_NOFOLLOW |
		    O_CLOEXEC);
		if (fd != -1 || errno != ENOENT)
			break;
	}
	if (fd == -1 && errno != ENOENT) {
		rc = errno;
		textf(text, len, "image %s: %s", name, strerror(rc));
		return rc;
	}
	if (fd == -1) {
		for (f = 0; f < IMG_NFORMATS; f++) {
			textf(file, sizeof(file), "%s.%s", name,
			    image_format_name((enum image_format)f));
			if (fstatat(dfd, file, &st, AT_SYMLINK_NOFOLLOW) == 0)
				break;
		}
		if (f == IMG_ISO)
			textf(text, len, "image %s is an ISO: pass it as iso, "
			    "and an empty disk (image_create) in disks", name);
		else if (f < IMG_NFORMATS)
			textf(text, len, "image %s is %s: a VM boots qcow2 and "
			    "raw images; image_convert it to qcow2 first",
			    name, image_format_name((enum image_format)f));
		else
			textf(text, len, "no image %s in your workspace (see "
			    "image_list)", name);
		return f < IMG_NFORMATS ? EINVAL : ENOENT;
	}
	*fmt = bootable[i];
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		close(fd);
		textf(text, len, "image %s is not a regular file", name);
		return EINVAL;
	}
	*bytes = (uint64_t)st.st_size;
	if (*fmt == IMG_QCOW2 && ((rc = qcow2_header(fd, bytes, backing,
	    sizeof(backing))) != 0 || backing[0] != '\0')) {
		close(fd);
		if (rc != 0)
			textf(text, len, "image %s is not a qcow2 stored can "
			    "read", name);
		else
			textf(text, len, "image %s has a backing image: a "
			    "VM's disk cannot; image_convert it into a flat "
			    "qcow2 first", name);
		return EINVAL;
	}
	*fdp = fd;
	return 0;
}

/* Whether VM vm may use image name (persistent: alone). */
static int
use_conflict(const struct vm_use *want, const char *name, char *text,
    size_t len)
{
	struct vm_use	*u;

	LIST_FOREACH(u, &uses, entry) {
		if (strcmp(u->vm, want->vm) == 0 ||
		    !use_names(u, want->ws, name))
			continue;
		if (u->persistent)
			textf(text, len, "image %s is the persistent disk of "
			    "vm %s: no other VM may use it while it exists",
			    name, u->vm);
		else if (want->persistent)
			textf(text, len, "image %s is the base of vm %s's "
			    "disk: it cannot be a persistent disk while that "
			    "VM exists", name, u->vm);
		else
			continue;
		return EBUSY;
	}
	return 0;
}

static void
close_fds(int *fds, size_t n)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (fds[i] != -1) {
			close(fds[i]);
			fds[i] = -1;
		}
}

/* The install CD: an ISO of the workspace, or a catalog image. */
static int
iso_open(struct vd_req *r, int *fdp, char *text, size_t len)
{
	struct catalog_image	*img;
	char			 file[OBJ_NAME_MAX + 16];
	int			 rc;

	textf(file, sizeof(file), "%s.%s", r->iso, image_format_name(IMG_ISO));
	if ((*fdp = openat(r->wsdfd, file, O_RDONLY | O_NOFOLLOW |
	    O_CLOEXEC)) != -1)
		return 0;
	if (errno != ENOENT) {
		rc = errno;
		textf(text, len, "iso %s: %s", r->iso, strerror(rc));
		return rc;
	}
	if ((img = imgcat_lookup(cat, r->iso)) == NULL) {
		textf(text, len, "no image %s of format iso in your workspace "
		    "nor in the catalogue (see image_list)", r->iso);
		return ENOENT;
	}
	if ((rc = imgcat_image_usable(img, text, len)) != 0)
		return rc;
	if ((*fdp = fcntl(img->files[CAT_DISK].fd, F_DUPFD_CLOEXEC, 0)) ==
	    -1) {
		rc = errno;
		textf(text, len, "iso %s: %s", r->iso, strerror(rc));
		return rc;
	}
	return 0;
}

/* Disk i in the VM's directory: 0 with its fd and what it is. */
static int
disk_file_open(struct vd_req *r, unsigned int i, int *fdp, int *basefdp,
    struct msg_store_vm_disk *d, uint64_t *size, char *text, size_t len)
{
	struct stat	 st;
	const char	*name = r->use.disks[i];
	char		 file[VMDISK_FILE_MAX], backing[QCOW2_BACKING_MAX + 1];
	char		 want[sizeof(IMAGE_BACKING_PREFIX) + OBJ_NAME_MAX];
	enum image_format bf;
	uint64_t	 bbytes;
	int		 rc;

	d->format = IMG_RAW;
	textf(file, sizeof(file), "d%u.raw", i);
	*fdp = openat(r->vmdfd, file, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (*fdp == -1 && errno == ENOENT) {
		d->format = IMG_QCOW2;
		textf(file, sizeof(file), "d%u.qcow2", i);
		*fdp = openat(r->vmdfd, file, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	}
	if (*fdp == -1) {
		rc = errno;
		textf(text, len, "vm %s: disk %u (%s): %s", r->use.vm, i, name,
		    strerror(rc));
		return rc;
	}
	if (fstat(*fdp, &st) == -1 || !S_ISREG(st.st_mode)) {
		textf(text, len, "vm %s: %s is not a regular file", r->use.vm,
		    file);
		return EINVAL;
	}
	*size = (uint64_t)st.st_size;
	if (d->format == IMG_RAW)
		return 0;
	if ((rc = qcow2_header(*fdp, size, backing, sizeof(backing))) != 0) {
		textf(text, len, "vm %s: %s is not an overlay stored made",
		    r->use.vm, file);
		return rc == 0 ? EINVAL : rc;
	}
	if (backing[0] == '\0')
		return 0;	/* a clone of a flat qcow2 */
	textf(want, sizeof(want), "%s%s", IMAGE_BACKING_PREFIX, name);
	if (strcmp(backing, want) != 0) {
		textf(text, len, "vm %s: %s is not an overlay of image %s",
		    r->use.vm, file, name);
		return EINVAL;
	}
	if ((rc = image_open(r->wsdfd, name, 0, basefdp, &bf, &bbytes, text,
	    len)) != 0)
		return rc;
	d->has_base = 1;
	d->base_format = bf;
	return 0;
}

/* Every fd of the VM's boot, then the result. */
static void
vd_send(struct vd_req *r)
{
	struct msg_store_vm_disk	 d[VM_DISKS_MAX];
	char				 text[VMDISK_TEXT_MAX], file[32];
	int				 fds[2 * VM_DISKS_MAX + 3];
	enum image_format		 f;
	uint64_t			 bytes, total = 0;
	unsigned int			 i;
	struct ibuf			*b;
	int				 rc = 0, cd = 2 * VM_DISKS_MAX;

	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		fds[i] = -1;
	memset(d, 0, sizeof(d));
	for (i = 0; i < r->use.n && rc == 0; i++) {
		d[i].index = i;
		d[i].base_format = IMG_RAW;
		if (r->use.persistent) {
			rc = image_open(r->wsdfd, r->use.disks[i], 1,
			    &fds[2 * i], &f, &bytes, text, sizeof(text));
			d[i].format = f;
		} else {
			/* What its own copy may grow to: the quota's. */
			rc = disk_file_open(r, i, &fds[2 * i], &fds[2 * i + 1],
			    &d[i], &bytes, text, sizeof(text));
			total += bytes;
		}
	}
	if (rc == 0 && r->iso[0] != '\0')
		rc = iso_open(r, &fds[cd], text, sizeof(text));
	if (rc == 0 && r->firmware == FW_UEFI) {
		if ((fds[cd + 1] = fcntl(code_fd, F_DUPFD_CLOEXEC, 0)) == -1 ||
		    (fds[cd + 2] = openat(r->vmdfd, VMDISK_VARS, O_RDWR |
		    O_NOFOLLOW | O_CLOEXEC)) == -1) {
			rc = errno;
			textf(text, sizeof(text), "vm %s: UEFI variables: %s",
			    r->use.vm, strerror(rc));
		}
	}
	if (rc != 0) {
		close_fds(fds, sizeof(fds) / sizeof(fds[0]));
		stored_result(r->id, rc, DISK_RAW, 0, text);
		return;
	}
	for (i = 0; i < r->use.n; i++) {
		if ((b = imsg_create(&parent->ibuf, IMSG_STORE_VM_DISK, r->id,
		    0, 32)) == NULL)
			fatal("%s", __func__);
		msg_store_vm_disk_put(b, &d[i]);
		if (imsgev_close(parent, b) == -1)
			fatal("%s", __func__);
		imsgev_send_fd(parent, IMSG_STORE_FD, r->id, STORE_FD_DISK_N(i),
		    fds[2 * i]);
		if (fds[2 * i + 1] != -1)
			imsgev_send_fd(parent, IMSG_STORE_FD, r->id,
			    STORE_FD_BASE_N(i), fds[2 * i + 1]);
	}
	if (fds[cd] != -1)
		imsgev_send_fd(parent, IMSG_STORE_FD, r->id, STORE_FD_CD,
		    fds[cd]);
	if (fds[cd + 1] != -1) {
		imsgev_send_fd(parent, IMSG_STORE_FD, r->id, STORE_FD_CODE,
		    fds[cd + 1]);
		imsgev_send_fd(parent, IMSG_STORE_FD, r->id, STORE_FD_VARS,
		    fds[cd + 2]);
	}
	textf(file, sizeof(file), "%u disk%s", r->use.n,
	    r->use.n == 1 ? "" : "s");
	textf(text, sizeof(text), "vm %s: %s (%s)%s%s", r->use.vm, file,
	    r->use.persistent ? "persistent" : "its own copies",
	    r->iso[0] != '\0' ? ", install CD " : "", r->iso);
	stored_result(r->id, 0, DISK_RAW, total, text);
}

static void
vd_free(struct vd_req *r)
{
	LIST_REMOVE(r, entry);
	if (r->vmdfd != -1)
		close(r->vmdfd);
	if (r->wsdfd != -1)
		close(r->wsdfd);
	free(r);
}

/* A creation failed: nothing of it stays. */
static void
vd_undo(struct vd_req *r, int rc, const char *why)
{
	char	 text[VMDISK_TEXT_MAX];

	vmdisks_forget(r->use.vm);
	if (disk_delete(vmsfd, r->use.vm, text, sizeof(text)) != 0)
		log_warnx("%s", text);
	stored_result(r->id, rc, DISK_RAW, 0, why);
	vd_free(r);
}

static void
vd_overlay_done(const struct qemuimg_result *res, void *arg)
{
	struct vd_req	*r = arg;
	char		 text[VMDISK_TEXT_MAX];

	r->job = NULL;
	if (res->status != 0) {
		textf(text, sizeof(text), "vm %s: qcow2 overlay of image %s: "
		    "%s", r->use.vm, r->use.disks[r->next], res->text);
		vd_undo(r, res->status, text);
		return;
	}
	r->next++;
	vd_make_next(r);
}

/* A VARS copy of OVMF's own, for this VM alone. */
static int
vars_copy(struct vd_req *r, char *text, size_t len)
{
	char	 buf[64 * 1024];
	off_t	 off = 0;
	ssize_t	 n;
	int	 fd, rc = 0;

	if ((fd = openat(r->vmdfd, VMDISK_VARS, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, VM_DISK_MODE)) == -1) {
		rc = errno;
		textf(text, len, "vm %s: %s: %s", r->use.vm, VMDISK_VARS,
		    strerror(rc));
		return rc;
	}
	while ((n = pread(vars_fd, buf, sizeof(buf), off)) > 0) {
		if (off + n > OVMF_VARS_MAX || write(fd, buf, (size_t)n) != n) {
			rc = off + n > OVMF_VARS_MAX ? EFBIG : errno;
			break;
		}
		off += n;
	}
	if (rc == 0 && (n == -1 || fsync(fd) == -1))
		rc = errno;
	close(fd);
	if (rc != 0)
		textf(text, len, "vm %s: copying %s: %s", r->use.vm,
		    OVMF_VARS_PATH, strerror(rc));
	return rc;
}

/*
 * Disk r->next: a reflink clone of its image where the filesystem can,
 * else a qcow2 overlay made by a job, which calls this again.  Once all
 * are made, the answer.
 */
static void
vd_make_next(struct vd_req *r)
{
	struct qemuimg_spec	 spec = {
		.argv = { "qemu-img", "create", "-q", "-f", "qcow2", "-F",
		    NULL, "-b", NULL, "-u", NULL, NULL, NULL },
		.xfd = -1, .timeout_ms = QEMUIMG_QUICK_MS,
		.fsize_max = QEMUIMG_OVERLAY_FSIZE,
	};
	char		 text[VMDISK_TEXT_MAX], file[VMDISK_FILE_MAX];
	char		 backing[sizeof(IMAGE_BACKING_PREFIX) + OBJ_NAME_MAX];
	char		 size[32];
	enum image_format f;
	uint64_t	 bytes;
	unsigned int	 i;
	int		 src, fd, rc;

	for (; r->next < r->use.n; r->next++) {
		i = r->next;
		if ((rc = image_open(r->wsdfd, r->use.disks[i], 0, &src, &f,
		    &bytes, text, sizeof(text))) != 0) {
			vd_undo(r, rc, text);
			return;
		}
		textf(file, sizeof(file), "d%u.%s", i, image_format_name(f));
		if ((fd = openat(r->vmdfd, file, O_RDWR | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_CLOEXEC, VM_DISK_MODE)) == -1) {
			rc = errno;
			close(src);
			textf(text, sizeof(text), "vm %s: %s: %s", r->use.vm,
			    file, strerror(rc));
			vd_undo(r, rc, text);
			return;
		}
		rc = ioctl(fd, FICLONE, src) == 0 ? 0 : errno;
		if (rc == 0 && fsync(fd) == -1)
			rc = errno;
		close(fd);
		close(src);
		if (rc == 0) {
			log_info("vm %s: disk %u is a reflink clone of image "
			    "%s", r->use.vm, i, r->use.disks[i]);
			continue;
		}
		(void)unlinkat(r->vmdfd, file, 0);
		if (!disk_reflink_errno(rc)) {
			textf(text, sizeof(text), "vm %s: reflink clone of "
			    "image %s: %s", r->use.vm, r->use.disks[i],
			    strerror(rc));
			vd_undo(r, rc, text);
			return;
		}
		textf(backing, sizeof(backing), "%s%s", IMAGE_BACKING_PREFIX,
		    r->use.disks[i]);
		textf(file, sizeof(file), "d%u.qcow2", i);
		textf(size, sizeof(size), "%" PRIu64, bytes);
		spec.argv[6] = image_format_name(f);
		spec.argv[8] = backing;
		spec.argv[10] = file;
		spec.argv[11] = size;
		spec.dirfd = r->vmdfd;
		if ((rc = qemuimg_start(&spec, vd_overlay_done, NULL, r,
		    &r->job, text, sizeof(text))) != 0) {
			vd_undo(r, rc, text);
			return;
		}
		log_info("vm %s: disk %u is a qcow2 overlay of image %s",
		    r->use.vm, i, r->use.disks[i]);
		return;
	}
	if (fsync(r->vmdfd) == -1)
		log_warn("vm %s: fsync", r->use.vm);
	vd_send(r);
	vd_free(r);
}

/* The checks of a creation, and its directory with the uses record. */
static int
vd_create(struct vd_req *r, char *text, size_t len)
{
	enum image_format	 f;
	uint64_t		 bytes;
	unsigned int		 i;
	int			 fd, rc;

	for (i = 0; i < r->use.n; i++) {
		if ((rc = images_vm_check(r->use.ws, r->wsdfd,
		    r->use.disks[i], r->use.persistent, text, len)) != 0 ||
		    (rc = use_conflict(&r->use, r->use.disks[i], text,
		    len)) != 0 || (rc = image_open(r->wsdfd, r->use.disks[i],
		    r->use.persistent, &fd, &f, &bytes, text, len)) != 0)
			return rc;
		close(fd);
	}
	if (mkdirat(vmsfd, r->use.vm, VM_DIR_MODE) == -1) {
		rc = errno;
		textf(text, len, "vm %s: mkdir: %s", r->use.vm, strerror(rc));
		return rc;
	}
	r->made = 1;
	if (use_add(&r->use) == -1)
		fatal("%s", __func__);
	if ((r->vmdfd = openat(vmsfd, r->use.vm, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) == -1 ||
	    (rc = uses_write(r->vmdfd, &r->use)) != 0) {
		rc = r->vmdfd == -1 ? errno : rc;
		textf(text, len, "vm %s: %s: %s", r->use.vm, VMDISK_USES,
		    strerror(rc));
		return rc;
	}
	if (r->firmware == FW_UEFI)
		return vars_copy(r, text, len);
	return 0;
}

void
vmdisks_request(uint32_t id, const struct msg_store_vm_disks *m)
{
	struct vd_req	*r;
	struct vm_use	 have;
	char		 text[VMDISK_TEXT_MAX];
	unsigned int	 i;
	int		 rc;

	if ((r = calloc(1, sizeof(*r))) == NULL) {
		stored_result(id, ENOMEM, DISK_RAW, 0, "out of memory");
		return;
	}
	r->id = id;
	r->vmdfd = r->wsdfd = -1;
	textf(r->use.vm, sizeof(r->use.vm), "%s", m->vm_id);
	r->use.ws = m->ws;
	r->use.persistent = m->persistent != 0;
	r->use.n = m->ndisks;
	for (i = 0; i < m->ndisks; i++)
		textf(r->use.disks[i], sizeof(r->use.disks[i]), "%s",
		    m->disks[i]);
	textf(r->iso, sizeof(r->iso), "%s", m->iso);
	r->firmware = (int)m->firmware;
	LIST_INSERT_HEAD(&reqs, r, entry);

	if (r->firmware == FW_UEFI && code_fd == -1) {
		stored_result(id, ENOENT, DISK_RAW, 0, "this host has no UEFI "
		    "firmware (OVMF): use firmware \"bios\", or ask the "
		    "operator to install it");
		vd_free(r);
		return;
	}
	if ((r->wsdfd = images_ws_dir(r->use.ws, text, sizeof(text))) == -1) {
		stored_result(id, errno, DISK_RAW, 0, text);
		vd_free(r);
		return;
	}
	if (m->create) {
		if ((rc = vd_create(r, text, sizeof(text))) != 0) {
			if (r->made)
				vd_undo(r, rc, text);
			else {
				stored_result(id, rc, DISK_RAW, 0, text);
				vd_free(r);
			}
			return;
		}
		if (r->use.persistent)
			r->next = r->use.n;
		vd_make_next(r);
		return;
	}
	if ((r->vmdfd = openat(vmsfd, r->use.vm, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) == -1)
		rc = errno;
	else
		rc = uses_read(r->vmdfd, r->use.vm, &have);
	if (rc != 0) {
		textf(text, sizeof(text), "vm %s has no disks stored made: %s",
		    r->use.vm, strerror(rc));
		stored_result(id, rc, DISK_RAW, 0, text);
		vd_free(r);
		return;
	}
	if (have.ws != r->use.ws || have.persistent != r->use.persistent ||
	    have.n != r->use.n) {
		textf(text, sizeof(text), "vm %s's disks are not those asked "
		    "for", r->use.vm);
		stored_result(id, EINVAL, DISK_RAW, 0, text);
		vd_free(r);
		return;
	}
	for (i = 0; i < have.n; i++)
		if (strcmp(have.disks[i], r->use.disks[i]) != 0) {
			textf(text, sizeof(text), "vm %s's disk %u is image "
			    "%s, not %s", r->use.vm, i, have.disks[i],
			    r->use.disks[i]);
			stored_result(id, EINVAL, DISK_RAW, 0, text);
			vd_free(r);
			return;
		}
	vd_send(r);
	vd_free(r);
}

/* A deletion overtakes the VM's creation: the creation is refused. */
void
vmdisks_cancel(const char *vm)
{
	struct vd_req	*r;

	LIST_FOREACH(r, &reqs, entry)
		if (strcmp(r->use.vm, vm) == 0)
			break;
	if (r == NULL)
		return;
	if (r->job != NULL)
		qemuimg_cancel(r->job);
	r->job = NULL;
	stored_result(r->id, ECANCELED, DISK_RAW, 0, "the VM is being deleted");
	vd_free(r);
}
