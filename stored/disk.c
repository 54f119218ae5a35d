/*
 * VM disks: see disk.h.
 *
 * Names come from mcvmd, which validated them; they are checked again
 * here and used only as one component below the vms directory fd, opened
 * with O_NOFOLLOW, so no name can reach outside it.  A failed creation
 * removes everything it made.
 */
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>

#include <linux/fs.h>
#include <linux/magic.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bytes.h"
#include "catalog.h"
#include "disk.h"
#include "log.h"
#include "msg_store.h"
#include "validate.h"

#define QCOW2_MAGIC	"QFI\xfb"

#ifndef XFS_SUPER_MAGIC
#define XFS_SUPER_MAGIC	0x58465342
#endif
#ifndef ZFS_SUPER_MAGIC
#define ZFS_SUPER_MAGIC	0x2fc12fc1
#endif

static int	 disk_empty_dir(int, int);

/* Whether a FICLONE failure means "not on this filesystem". */
int
disk_reflink_errno(int e)
{
	return e == EXDEV || e == EOPNOTSUPP || e == EINVAL || e == ENOTTY ||
	    e == ENOSYS;
}

const char *
disk_fs_name(int fd)
{
	struct statfs	 sf;

	if (fstatfs(fd, &sf) == -1)
		return "unknown";
	switch ((unsigned long)sf.f_type) {
	case XFS_SUPER_MAGIC:
		return "xfs";
	case BTRFS_SUPER_MAGIC:
		return "btrfs";
	case EXT4_SUPER_MAGIC:
		return "ext4";
	case TMPFS_MAGIC:
		return "tmpfs";
	case OVERLAYFS_SUPER_MAGIC:
		return "overlayfs";
	case NFS_SUPER_MAGIC:
		return "nfs";
	case F2FS_SUPER_MAGIC:
		return "f2fs";
	case ZFS_SUPER_MAGIC:
		return "zfs";
	default:
		return "unknown";
	}
}

/*
 * Tries one clone of srcfd into an unnamed file in dirfd.  Returns 1
 * when reflinks work, 0 when they do not (why says so), -1 on another
 * error (why says which).
 */
int
disk_reflink_probe(int dirfd, int srcfd, char *why, size_t len)
{
	static const char	 tmpname[] = ".reflink-probe";
	int			 fd, rc, named = 0;

	fd = openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, VM_DISK_MODE);
	if (fd == -1 && (errno == EOPNOTSUPP || errno == EISDIR ||
	    errno == EINVAL)) {
		/* No O_TMPFILE here: a named file, unlinked at once. */
		(void)unlinkat(dirfd, tmpname, 0);
		fd = openat(dirfd, tmpname, O_CREAT | O_EXCL | O_RDWR |
		    O_NOFOLLOW | O_CLOEXEC, VM_DISK_MODE);
		named = 1;
	}
	if (fd == -1) {
		(void)snprintf(why, len, "cannot create a file: %s",
		    strerror(errno));
		return -1;
	}
	rc = ioctl(fd, FICLONE, srcfd);
	if (rc == -1)
		rc = errno;
	close(fd);
	if (named)
		(void)unlinkat(dirfd, tmpname, 0);
	if (rc == 0) {
		(void)snprintf(why, len, "reflink clones (%s)",
		    disk_fs_name(dirfd));
		return 1;
	}
	if (rc == EXDEV) {
		(void)snprintf(why, len, "not on the catalog disk's "
		    "filesystem (%s)", disk_fs_name(dirfd));
		return 0;
	}
	if (disk_reflink_errno(rc)) {
		(void)snprintf(why, len, "does not support reflinks (%s)",
		    disk_fs_name(dirfd));
		return 0;
	}
	(void)snprintf(why, len, "reflink clone failed: %s", strerror(rc));
	return -1;
}

/*
 * A qcow2 header's virtual size and backing file name ("" for none),
 * which must be printable and fit len.  0, EINVAL for anything but a
 * version 2 or 3 qcow2, or the errno of a failed read.
 */
int
qcow2_header(int fd, uint64_t *size, char *backing, size_t len)
{
	uint8_t		 h[QCOW2_HEADER_LEN];
	uint64_t	 boff;
	uint32_t	 blen, version, i;
	ssize_t		 n;

	if ((n = pread(fd, h, sizeof(h), 0)) == -1)
		return errno;
	if ((size_t)n != sizeof(h) || memcmp(h, QCOW2_MAGIC, 4) != 0)
		return EINVAL;
	version = be32_get(h + 4);
	boff = be64_get(h + 8);
	blen = be32_get(h + 16);
	*size = be64_get(h + 24);
	if (version < 2 || version > 3)
		return EINVAL;
	backing[0] = '\0';
	if (boff == 0)
		return 0;
	if (blen == 0 || blen > QCOW2_BACKING_MAX || blen >= len ||
	    boff > INT64_MAX)
		return EINVAL;
	if ((n = pread(fd, backing, blen, (off_t)boff)) == -1)
		return errno;
	if ((size_t)n != blen)
		return EINVAL;
	backing[blen] = '\0';
	for (i = 0; i < blen; i++)
		if ((unsigned char)backing[i] <= ' ' ||
		    (unsigned char)backing[i] >= 0x7f)
			return EINVAL;
	return 0;
}

/* A VM overlay's size and catalog image, the only backing it may have. */
int
qcow2_header_read(int fd, uint64_t *size, char *image, size_t len)
{
	char		 name[QCOW2_BACKING_MAX + 1];
	const size_t	 plen = sizeof(CATALOG_BACKING_PREFIX) - 1;
	int		 rc;

	if ((rc = qcow2_header(fd, size, name, sizeof(name))) != 0)
		return rc;
	image[0] = '\0';
	if (name[0] == '\0')
		return 0;
	if (strncmp(name, CATALOG_BACKING_PREFIX, plen) != 0 ||
	    !valid_object_name(name + plen) || strlen(name + plen) >= len)
		return EINVAL;
	(void)snprintf(image, len, "%s", name + plen);
	return 0;
}

static void
put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static void
put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, v >> 32);
	put_be32(p + 4, (uint32_t)v);
}

/* len bytes at off, whole: 0, or an errno value (EIO for a short one). */
static int
write_at(int fd, const void *buf, size_t len, uint64_t off)
{
	ssize_t	 n;

	if ((n = pwrite(fd, buf, len, (off_t)off)) == -1)
		return errno;
	return (size_t)n == len ? 0 : EIO;
}

/*
 * Writes an empty version 2 qcow2 of QCOW2_STATE_BYTES into the empty
 * file fd, as qemu-img create -o compat=0.10 lays it out: the header in
 * cluster 0, the refcount table in 1, its one refcount block in 2 (the
 * four clusters in use, once each), and the one-entry L1 table in 3.
 * No backing file, no snapshots.  0 or an errno value.
 */
int
disk_state_write(int fd)
{
	const uint64_t	 cl = 65536;
	uint8_t		 h[QCOW2_HEADER_LEN], rt[8], rb[8], l1[8];
	unsigned int	 i;
	int		 rc;

	memset(h, 0, sizeof(h));
	memcpy(h, QCOW2_MAGIC, 4);
	put_be32(h + 4, 2);			/* version */
	put_be32(h + 20, 16);			/* cluster_bits */
	put_be64(h + 24, QCOW2_STATE_BYTES);	/* size */
	put_be32(h + 36, 1);			/* l1_size */
	put_be64(h + 40, 3 * cl);		/* l1_table_offset */
	put_be64(h + 48, cl);			/* refcount_table_offset */
	put_be32(h + 56, 1);			/* refcount_table_clusters */
	put_be64(rt, 2 * cl);
	for (i = 0; i < 4; i++) {
		rb[2 * i] = 0;
		rb[2 * i + 1] = 1;
	}
	memset(l1, 0, sizeof(l1));
	if ((rc = write_at(fd, h, sizeof(h), 0)) != 0 ||
	    (rc = write_at(fd, rt, sizeof(rt), cl)) != 0 ||
	    (rc = write_at(fd, rb, sizeof(rb), 2 * cl)) != 0)
		return rc;
	return write_at(fd, l1, sizeof(l1), 3 * cl);
}

/*
 * The state file of a raw disk in dfd, made empty if it is not there
 * (a VM from before state files, or a new one): an fd, or -1 with text.
 * stored never reads what QEMU writes there; QEMU opens it with no
 * backing whatever its header says.
 */
static int
disk_state_open(int dfd, const char *vm, char *text, size_t len)
{
	static const char	 tmp[] = "." VM_DISK_STATE ".new";
	int			 fd, rc;

	fd = openat(dfd, VM_DISK_STATE, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd != -1 || errno != ENOENT)
		goto out;
	(void)unlinkat(dfd, tmp, 0);
	if ((fd = openat(dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, VM_DISK_MODE)) == -1)
		goto out;
	if ((rc = disk_state_write(fd)) == 0 && fsync(fd) == -1)
		rc = errno;
	if (rc == 0 && renameat(dfd, tmp, dfd, VM_DISK_STATE) == -1)
		rc = errno;
	if (rc == 0 && fsync(dfd) == -1)
		rc = errno;
	if (rc != 0) {
		close(fd);
		(void)unlinkat(dfd, tmp, 0);
		errno = rc;
		fd = -1;
	}
out:
	if (fd == -1) {
		rc = errno;
		(void)snprintf(text, len, "vm %s: %s: %s", vm, VM_DISK_STATE,
		    rc == ELOOP ? "is a symbolic link" : strerror(rc));
		errno = rc;
	}
	return fd;
}

/* Closes what a vm_disk holds. */
void
disk_close(struct vm_disk *vd)
{
	if (vd->fd != -1)
		close(vd->fd);
	if (vd->state_fd != -1)
		close(vd->state_fd);
	vd->fd = vd->state_fd = -1;
}

/* Removes a VM's directory and what it holds, without following links. */
static int
disk_remove_dir(int vmsfd, const char *vm)
{
	int	 dfd, rc;

	dfd = openat(vmsfd, vm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (dfd == -1)
		return errno;
	rc = disk_empty_dir(dfd, DISK_DELETE_DEPTH);
	close(dfd);
	if (rc != 0)
		return rc;
	if (unlinkat(vmsfd, vm, AT_REMOVEDIR) == -1)
		return errno;
	return 0;
}

static int
disk_empty_dir(int dfd, int depth)
{
	struct dirent	*de;
	DIR		*d;
	int		 fd, sub, rc = 0;

	if ((fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0)) == -1)
		return errno;
	if ((d = fdopendir(fd)) == NULL) {
		rc = errno;
		close(fd);
		return rc;
	}
	rewinddir(d);
	while (rc == 0 && (errno = 0, de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (unlinkat(dfd, de->d_name, 0) == 0)
			continue;
		if (errno != EISDIR) {
			rc = errno;
			break;
		}
		if (depth == 0) {
			rc = ELOOP;
			break;
		}
		sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC);
		if (sub == -1) {
			rc = errno;
			break;
		}
		rc = disk_empty_dir(sub, depth - 1);
		close(sub);
		if (rc == 0 && unlinkat(dfd, de->d_name, AT_REMOVEDIR) == -1)
			rc = errno;
	}
	if (rc == 0 && errno != 0)
		rc = errno;
	closedir(d);
	return rc;
}

/* The disk file a VM's directory holds, opened read-write. */
static int
disk_open_file(int dfd, const char *vm, struct vm_disk *vd, char *text,
    size_t len)
{
	struct stat	 st;
	int		 fd, rc;

	vd->backing[0] = '\0';
	vd->format = DISK_RAW;
	vd->state_fd = -1;
	fd = openat(dfd, VM_DISK_RAW, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1 && errno == ENOENT) {
		vd->format = DISK_QCOW2;
		fd = openat(dfd, VM_DISK_QCOW2,
		    O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd == -1) {
		rc = errno;
		(void)snprintf(text, len, "vm %s: %s: %s", vm,
		    vd->format == DISK_RAW ? VM_DISK_RAW : VM_DISK_QCOW2,
		    rc == ELOOP ? "is a symbolic link" : strerror(rc));
		return rc;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		close(fd);
		(void)snprintf(text, len, "vm %s: its disk is not a regular "
		    "file", vm);
		return EINVAL;
	}
	if (vd->format == DISK_RAW) {
		vd->bytes = (uint64_t)st.st_size;
		if ((vd->state_fd = disk_state_open(dfd, vm, text,
		    len)) == -1) {
			rc = errno;
			close(fd);
			return rc;
		}
	} else if ((rc = qcow2_header_read(fd, &vd->bytes, vd->backing,
	    sizeof(vd->backing))) != 0) {
		close(fd);
		(void)snprintf(text, len, "vm %s: %s: %s", vm, VM_DISK_QCOW2,
		    rc == EINVAL ? "not an overlay stored made" :
		    strerror(rc));
		return rc;
	}
	vd->fd = fd;
	return 0;
}

/*
 * Creates VM vm's directory and its disk from the catalog disk basefd of
 * image: a reflink clone when the filesystem allows (0, with vd
 * filled).  Where it does not, EINPROGRESS with *dfdp the VM's
 * directory, where the caller makes the overlay VM_DISK_QCOW2 and then
 * calls disk_create_finish.  Otherwise an errno value with text saying
 * what to do, and nothing left behind.
 */
int
disk_create(int vmsfd, const char *vm, const char *image, int basefd,
    struct vm_disk *vd, int *dfdp, char *text, size_t len)
{
	int	 dfd = -1, fd = -1, rc;

	vd->fd = vd->state_fd = -1;
	*dfdp = -1;
	if (!valid_id(vm, VM_ID_PREFIX) || !valid_object_name(image)) {
		(void)snprintf(text, len, "invalid vm id or image name");
		return EINVAL;
	}
	if (mkdirat(vmsfd, vm, VM_DIR_MODE) == -1) {
		rc = errno;
		if (rc == EEXIST)
			(void)snprintf(text, len, "vm %s already has a disk "
			    "directory; delete it first", vm);
		else
			(void)snprintf(text, len, "vm %s: mkdir: %s", vm,
			    strerror(rc));
		return rc;
	}
	dfd = openat(vmsfd, vm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (dfd == -1) {
		rc = errno;
		(void)snprintf(text, len, "vm %s: open: %s", vm, strerror(rc));
		goto fail;
	}
	fd = openat(dfd, VM_DISK_RAW, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, VM_DISK_MODE);
	if (fd == -1) {
		rc = errno;
		(void)snprintf(text, len, "vm %s: create %s: %s", vm,
		    VM_DISK_RAW, strerror(rc));
		goto fail;
	}
	if (ioctl(fd, FICLONE, basefd) == 0) {
		if (fsync(fd) == -1 || fsync(dfd) == -1) {
			rc = errno;
			(void)snprintf(text, len, "vm %s: fsync: %s", vm,
			    strerror(rc));
			goto fail;
		}
		close(fd);
		fd = -1;
		if ((rc = disk_open_file(dfd, vm, vd, text, len)) != 0)
			goto fail;
		close(dfd);
		return 0;
	}
	rc = errno;
	close(fd);
	fd = -1;
	if (!disk_reflink_errno(rc)) {
		(void)snprintf(text, len, "vm %s: reflink clone of image %s: "
		    "%s", vm, image, strerror(rc));
		goto fail;
	}
	if (unlinkat(dfd, VM_DISK_RAW, 0) == -1) {
		rc = errno;
		(void)snprintf(text, len, "vm %s: unlink: %s", vm,
		    strerror(rc));
		goto fail;
	}
	*dfdp = dfd;
	return EINPROGRESS;

fail:
	if (fd != -1)
		close(fd);
	if (dfd != -1)
		close(dfd);
	if (disk_remove_dir(vmsfd, vm) != 0)
		log_warn("%s: cannot remove what it made for vm %s", __func__,
		    vm);
	return rc;
}

/*
 * The second half of an overlay's creation: made is what making it in
 * dfd (which this closes) returned, with why.  0 with vd filled when the
 * overlay is image's (bytes long), or an errno value with text, and
 * nothing left behind.
 */
int
disk_create_finish(int vmsfd, const char *vm, const char *image,
    uint64_t bytes, int dfd, int made, const char *why, struct vm_disk *vd,
    char *text, size_t len)
{
	int	 rc = made;

	vd->fd = vd->state_fd = -1;
	if (rc != 0)
		(void)snprintf(text, len, "vm %s: qcow2 overlay of image %s: "
		    "%s", vm, image, why[0] != '\0' ? why : strerror(rc));
	else if ((rc = disk_open_file(dfd, vm, vd, text, len)) == 0 &&
	    (vd->format != DISK_QCOW2 || vd->bytes != bytes ||
	    strcmp(vd->backing, image) != 0)) {
		disk_close(vd);
		rc = EIO;
		(void)snprintf(text, len, "vm %s: the new overlay does not "
		    "match image %s", vm, image);
	}
	close(dfd);
	if (rc != 0 && disk_remove_dir(vmsfd, vm) != 0)
		log_warn("%s: cannot remove what it made for vm %s", __func__,
		    vm);
	return rc;
}

/* The directory of an existing VM: an fd, or -1 with *rc and text set. */
static int
disk_vm_dir(int vmsfd, const char *vm, int *rc, char *text, size_t len)
{
	int	 dfd;

	if (!valid_id(vm, VM_ID_PREFIX)) {
		(void)snprintf(text, len, "invalid vm id");
		*rc = EINVAL;
		return -1;
	}
	dfd = openat(vmsfd, vm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (dfd == -1) {
		*rc = errno;
		if (*rc == ENOENT)
			(void)snprintf(text, len, "vm %s has no disk", vm);
		else
			(void)snprintf(text, len, "vm %s: %s", vm,
			    *rc == ELOOP ? "not a directory" : strerror(*rc));
	}
	return dfd;
}

/* Opens an existing VM disk: 0 with vd filled, or an errno value. */
int
disk_open(int vmsfd, const char *vm, struct vm_disk *vd, char *text,
    size_t len)
{
	int	 dfd, rc;

	vd->fd = vd->state_fd = -1;
	if ((dfd = disk_vm_dir(vmsfd, vm, &rc, text, len)) == -1)
		return rc;
	rc = disk_open_file(dfd, vm, vd, text, len);
	close(dfd);
	return rc;
}

/*
 * Makes VM vm's RAM file (VM_RAM) empty and mib MiB long, for a template
 * QEMU maps it from: sparse, mode VM_RAM_MODE, as the group of the
 * template's QEMU (which mcvmd makes it) may write it.  Returns 0 with
 * *fdp a read-only fd to it, or an errno value.
 */
int
disk_ram(int vmsfd, const char *vm, uint32_t mib, int *fdp, char *text,
    size_t len)
{
	int	 dfd, fd, rc = 0;

	*fdp = -1;
	if ((dfd = disk_vm_dir(vmsfd, vm, &rc, text, len)) == -1)
		return rc;
	if ((fd = openat(dfd, VM_RAM, O_RDWR | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC, VM_RAM_MODE)) == -1 || fchmod(fd, VM_RAM_MODE) == -1 ||
	    ftruncate(fd, 0) == -1 || ftruncate(fd, (off_t)mib << 20) == -1) {
		rc = errno;
		(void)snprintf(text, len, "vm %s: %s: %s", vm, VM_RAM,
		    rc == ELOOP ? "is a symbolic link" : strerror(rc));
	} else if ((*fdp = openat(dfd, VM_RAM, O_RDONLY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		rc = errno;
		(void)snprintf(text, len, "vm %s: reopen %s: %s", vm, VM_RAM,
		    strerror(rc));
	}
	if (fd != -1)
		close(fd);
	close(dfd);
	return rc;
}

/*
 * VM vm's base: a link of VM from's RAM file (a shared template's, whose
 * file its QEMU maps), put in place of any base it had, durably.  0 or an
 * errno value.  The link is the file, its mode and group (the
 * template's) with it: the QEMU restoring the VM maps the same pages.
 */
static int
disk_base(int vmsfd, int dfd, const char *vm, const char *from, char *text,
    size_t len)
{
	static const char	 tmp[] = VM_BASE ".new";
	int			 sdfd, rc = 0;

	if ((sdfd = disk_vm_dir(vmsfd, from, &rc, text, len)) == -1)
		return rc;
	(void)unlinkat(dfd, tmp, 0);
	if (linkat(sdfd, VM_RAM, dfd, tmp, 0) == -1 ||
	    renameat(dfd, tmp, dfd, VM_BASE) == -1 || fsync(dfd) == -1) {
		rc = errno;
		(void)unlinkat(dfd, tmp, 0);
		(void)snprintf(text, len, "vm %s: its base from %s: %s", vm,
		    from, strerror(rc));
	}
	close(sdfd);
	return rc;
}

/*
 * Opens VM vm's checkpoint file (a QEMU migration stream): made empty for
 * writing, after its base is made from VM base's RAM file if base is not
 * empty (disk_base), or read-only, with its base read-only in *basep if
 * it has one (else -1).  0 with *fdp set, or an errno value.
 */
int
disk_checkpoint(int vmsfd, const char *vm, int write, const char *base,
    int *fdp, int *basep, char *text, size_t len)
{
	int	 dfd, fd, rc = 0;

	*fdp = *basep = -1;
	if ((dfd = disk_vm_dir(vmsfd, vm, &rc, text, len)) == -1)
		return rc;
	if (write && base[0] != '\0' &&
	    (rc = disk_base(vmsfd, dfd, vm, base, text, len)) != 0) {
		close(dfd);
		return rc;
	}
	if (write)
		fd = openat(dfd, VM_CHECKPOINT, O_RDWR | O_CREAT | O_TRUNC |
		    O_NOFOLLOW | O_CLOEXEC, VM_DISK_MODE);
	else {
		fd = openat(dfd, VM_CHECKPOINT, O_RDONLY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (fd != -1 && (*basep = openat(dfd, VM_BASE, O_RDONLY |
		    O_NOFOLLOW | O_CLOEXEC)) == -1 && errno != ENOENT) {
			rc = errno;
			close(fd);
			fd = -1;
			errno = rc;
		}
	}
	if (fd == -1) {
		rc = errno;
		(void)snprintf(text, len, "vm %s: %s: %s", vm, VM_CHECKPOINT,
		    rc == ELOOP ? "is a symbolic link" : strerror(rc));
	} else
		*fdp = fd;
	close(dfd);
	return rc;
}

/*
 * A reflink clone of file from in dfd into file to (opened with flags
 * beside O_RDWR: O_CREAT | O_EXCL makes it), made durable.  0 or an
 * errno value.
 */
static int
disk_clone(int dfd, const char *from, const char *to, int flags)
{
	int	 src, dst = -1, rc = 0;

	if ((src = openat(dfd, from, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) ==
	    -1 || (dst = openat(dfd, to, O_RDWR | O_NOFOLLOW | O_CLOEXEC |
	    flags, VM_DISK_MODE)) == -1 || ioctl(dst, FICLONE, src) == -1 ||
	    fsync(dst) == -1)
		rc = errno;
	if (src != -1)
		close(src);
	if (dst != -1)
		close(dst);
	return rc;
}

/*
 * A fork's disk: a new directory vm with a copy of VM from's disk as it
 * is now (the caller knows it is not being written).  A raw disk is a
 * reflink clone, as every raw disk is, so its filesystem makes them:
 * done, 0.  A qcow2 overlay's bytes are copied by disk_copy_step, a
 * bounded step at a time so that a large one never holds stored up:
 * EINPROGRESS.  Otherwise an errno value with text.  The caller ends
 * every start with disk_copy_end.
 */
int
disk_copy_start(int vmsfd, const char *vm, const char *from,
    struct disk_copy *cp, char *text, size_t len)
{
	struct stat	 st;
	const char	*name = VM_DISK_RAW;
	int		 sdfd, rc = 0;

	memset(cp, 0, sizeof(*cp));
	cp->dfd = cp->src = cp->dst = -1;
	cp->format = DISK_RAW;
	if (!valid_id(vm, VM_ID_PREFIX) || !valid_id(from, VM_ID_PREFIX)) {
		(void)snprintf(text, len, "invalid vm id");
		return EINVAL;
	}
	if ((sdfd = disk_vm_dir(vmsfd, from, &rc, text, len)) == -1)
		return rc;
	cp->src = openat(sdfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (cp->src == -1 && errno == ENOENT) {
		name = VM_DISK_QCOW2;
		cp->format = DISK_QCOW2;
		cp->src = openat(sdfd, name, O_RDONLY | O_NOFOLLOW |
		    O_CLOEXEC);
	}
	if (cp->src == -1 || fstat(cp->src, &st) == -1 ||
	    !S_ISREG(st.st_mode)) {
		rc = cp->src == -1 ? errno : EINVAL;
		(void)snprintf(text, len, "vm %s: no disk to copy: %s", from,
		    strerror(rc));
		close(sdfd);
		return rc;
	}
	close(sdfd);
	if (mkdirat(vmsfd, vm, VM_DIR_MODE) == -1) {
		rc = errno;
		(void)snprintf(text, len, "vm %s: mkdir: %s", vm,
		    strerror(rc));
		return rc;
	}
	cp->made = 1;
	if ((cp->dfd = openat(vmsfd, vm, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) == -1 || (cp->dst = openat(cp->dfd,
	    name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    VM_DISK_MODE)) == -1) {
		rc = errno;
		(void)snprintf(text, len, "vm %s: create %s: %s", vm, name,
		    strerror(rc));
		return rc;
	}
	if (cp->format == DISK_RAW) {
		if (ioctl(cp->dst, FICLONE, cp->src) == -1) {
			rc = errno;
			(void)snprintf(text, len, "vm %s: reflink clone of vm "
			    "%s's disk: %s", vm, from, strerror(rc));
			return rc;
		}
		cp->off = cp->size = (uint64_t)st.st_size;
		return disk_copy_step(cp, 0, text, len);
	}
	cp->size = (uint64_t)st.st_size;
	if (ftruncate(cp->dst, st.st_size) == -1) {
		rc = errno;
		(void)snprintf(text, len, "vm %s: %s: %s", vm, name,
		    strerror(rc));
		return rc;
	}
	return EINPROGRESS;
}

/*
 * Copies up to budget bytes more of the data the source holds (holes
 * stay holes).  0 once all is copied and durable, EINPROGRESS while
 * more is left, or an errno value with text.
 */
int
disk_copy_step(struct disk_copy *cp, uint64_t budget, char *text,
    size_t len)
{
	off_t	 data, hole, in, out;
	ssize_t	 n;
	uint64_t chunk;

	while (cp->off < cp->size && budget > 0) {
		if ((data = lseek(cp->src, (off_t)cp->off, SEEK_DATA)) == -1 &&
		    errno == ENXIO) {
			cp->off = cp->size;	/* a hole to the end */
			break;
		}
		if (data == -1 || (hole = lseek(cp->src, data,
		    SEEK_HOLE)) == -1)
			goto fail;
		if ((uint64_t)hole > cp->size)
			hole = (off_t)cp->size;
		if (hole <= data) {
			cp->off = cp->size;
			break;
		}
		chunk = (uint64_t)(hole - data);
		if (chunk > budget)
			chunk = budget;
		in = out = data;
		if ((n = copy_file_range(cp->src, &in, cp->dst, &out,
		    (size_t)chunk, 0)) == -1)
			goto fail;
		if (n == 0) {
			errno = EIO;	/* it shrank meanwhile */
			goto fail;
		}
		cp->off = (uint64_t)data + (uint64_t)n;
		budget -= (uint64_t)n;
	}
	if (cp->off < cp->size)
		return EINPROGRESS;
	if (fsync(cp->dst) == -1 || fsync(cp->dfd) == -1)
		goto fail;
	return 0;
fail:
	(void)snprintf(text, len, "disk copy at byte %llu: %s",
	    (unsigned long long)cp->off, strerror(errno));
	return errno;
}

/* Closes what a copy holds; one that failed (rc) leaves nothing. */
void
disk_copy_end(int vmsfd, const char *vm, struct disk_copy *cp, int rc)
{
	if (cp->src != -1)
		close(cp->src);
	if (cp->dst != -1)
		close(cp->dst);
	if (cp->dfd != -1)
		close(cp->dfd);
	cp->dfd = cp->src = cp->dst = -1;
	if (rc != 0 && cp->made && disk_remove_dir(vmsfd, vm) != 0)
		log_warnx("%s: cannot remove what it made for vm %s", __func__,
		    vm);
}

/*
 * The disk half of a live snapshot of VM vm's raw disk, taken while its
 * vCPUs are stopped (msg_store.h): SVS_SAVE clones the disk to
 * snap-TAG.raw (through a new file renamed in place), SVS_RESTORE clones
 * that back over the disk QEMU has open (a reflink replaces the extents
 * and drops the page cache of what it replaced), SVS_DELETE removes it.
 * 0 or an errno value, with text.
 */
int
disk_snapshot(int vmsfd, const char *vm, uint32_t op, const char *tag,
    char *text, size_t len)
{
	char		 name[sizeof(VM_SNAP_PREFIX VM_SNAP_SUFFIX) +
			    OBJ_NAME_MAX], tmp[sizeof(name) + 5];
	const char	*what;
	int		 dfd, rc = 0;

	if (!valid_snapshot_tag(tag)) {
		(void)snprintf(text, len, "invalid snapshot tag");
		return EINVAL;
	}
	if ((dfd = disk_vm_dir(vmsfd, vm, &rc, text, len)) == -1)
		return rc;
	(void)snprintf(name, sizeof(name), VM_SNAP_PREFIX "%s" VM_SNAP_SUFFIX,
	    tag);
	(void)snprintf(tmp, sizeof(tmp), ".%s.new", name);
	switch (op) {
	case SVS_SAVE:
		what = "save";
		(void)unlinkat(dfd, tmp, 0);
		if ((rc = disk_clone(dfd, VM_DISK_RAW, tmp, O_CREAT |
		    O_EXCL)) == 0 && renameat(dfd, tmp, dfd, name) == -1)
			rc = errno;
		if (rc == 0 && fsync(dfd) == -1)
			rc = errno;
		if (rc != 0)
			(void)unlinkat(dfd, tmp, 0);
		break;
	case SVS_RESTORE:
		what = "restore";
		rc = disk_clone(dfd, name, VM_DISK_RAW, 0);
		break;
	default:
		what = "delete";
		if ((unlinkat(dfd, name, 0) == -1 && errno != ENOENT) ||
		    fsync(dfd) == -1)
			rc = errno;
		break;
	}
	close(dfd);
	if (rc != 0)
		(void)snprintf(text, len, "vm %s: %s of snapshot %s's disk: %s",
		    vm, what, tag, rc == ENOENT ? "its clone is missing" :
		    strerror(rc));
	else
		(void)snprintf(text, len, "vm %s: snapshot %s's disk: %s done",
		    vm, tag, what);
	return rc;
}

/* Removes VM vm's directory and everything in it: 0 or an errno value. */
int
disk_delete(int vmsfd, const char *vm, char *text, size_t len)
{
	int	 rc;

	if (!valid_id(vm, VM_ID_PREFIX)) {
		(void)snprintf(text, len, "invalid vm id");
		return EINVAL;
	}
	if ((rc = disk_remove_dir(vmsfd, vm)) != 0) {
		if (rc == ENOENT)
			(void)snprintf(text, len, "vm %s has no disk", vm);
		else
			(void)snprintf(text, len, "vm %s: delete: %s", vm,
			    rc == ELOOP || rc == ENOTDIR ?
			    "not a directory stored made" : strerror(rc));
		return rc;
	}
	(void)snprintf(text, len, "vm %s: disk deleted", vm);
	return 0;
}

/*
 * Calls cb for each VM directory (a directory named as a VM id); other
 * entries are skipped.  Returns the number of VMs, or -1 (errno set); a
 * callback returning -1 stops the walk with that.
 */
int
disk_list(int vmsfd, int (*cb)(const char *, void *), void *arg)
{
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;
	int		 fd, n = 0, saved;

	if ((fd = fcntl(vmsfd, F_DUPFD_CLOEXEC, 0)) == -1)
		return -1;
	if ((d = fdopendir(fd)) == NULL) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	rewinddir(d);
	for (;;) {
		errno = 0;
		if ((de = readdir(d)) == NULL)
			break;
		if (!valid_id(de->d_name, VM_ID_PREFIX))
			continue;
		if (de->d_type == DT_UNKNOWN) {
			if (fstatat(vmsfd, de->d_name, &st,
			    AT_SYMLINK_NOFOLLOW) == -1 || !S_ISDIR(st.st_mode))
				continue;
		} else if (de->d_type != DT_DIR)
			continue;
		if (cb(de->d_name, arg) == -1) {
			n = -1;
			break;
		}
		n++;
	}
	saved = errno;
	closedir(d);
	errno = saved;
	return saved != 0 ? -1 : n;
}
