/*
 * VM disks under <statedir>/vms/<vm id>/: a reflink clone of the catalog
 * disk (disk.raw) where the filesystem allows, or else a qcow2 overlay
 * (disk.qcow2) whose backing is the catalog disk.  A raw disk has a
 * state file beside it (state.qcow2, an empty qcow2 with no backing),
 * where QEMU keeps its live snapshots' RAM and devices, and a reflink
 * clone per snapshot of the disk (snap-TAG.raw).  Every call works
 * relative to the vms directory's fd and checks the id again.
 */
#ifndef MCVM_STORED_DISK_H
#define MCVM_STORED_DISK_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "proto.h"

#define VM_DISK_RAW		"disk.raw"
#define VM_DISK_QCOW2		"disk.qcow2"
#define VM_DISK_STATE		"state.qcow2"
#define VM_SNAP_PREFIX		"snap-"		/* snap-TAG.raw */
#define VM_SNAP_SUFFIX		".raw"
#define VM_CHECKPOINT		"checkpoint"
#define VM_RAM			"ram"		/* a template's RAM file */
#define VM_RAM_MODE		0660		/* its group: the template's */
#define VM_BASE			"base"		/* a link of a template's RAM
						   file: a relative checkpoint's */
#define VM_DIR_MODE		0700
#define VM_DISK_MODE		0600
#define VM_ID_PREFIX		"vm-"
#define DISK_DELETE_DEPTH	4	/* directories below a VM's own */
#define DISK_TEXT_MAX		512
#define QCOW2_HEADER_LEN	72	/* version 2 header fields */
#define QCOW2_BACKING_MAX	1023	/* qcow2's own limit */
#define QCOW2_STATE_BYTES	65536	/* an empty state file's virtual size */

struct vm_disk {
	int		 fd;			/* read-write */
	int		 state_fd;		/* raw: VM_DISK_STATE, or -1 */
	enum disk_format format;
	uint64_t	 bytes;			/* virtual size */
	char		 backing[CONF_NAME_MAX]; /* overlay: catalog image */
};

/* A fork's disk being copied (disk_copy_start). */
struct disk_copy {
	int		 dfd;		/* the new VM's directory */
	int		 src;		/* the source's disk, read-only */
	int		 dst;		/* its copy */
	uint64_t	 off;		/* copied up to here */
	uint64_t	 size;
	int		 made;		/* the directory is its own */
	enum disk_format format;
};

int	 disk_reflink_errno(int);
int	 disk_reflink_probe(int, int, char *, size_t);
const char *disk_fs_name(int);
int	 disk_create(int, const char *, const char *, int,
	    struct vm_disk *, int *, char *, size_t);
int	 disk_create_finish(int, const char *, const char *, uint64_t, int,
	    int, const char *, struct vm_disk *, char *, size_t);
int	 disk_open(int, const char *, struct vm_disk *, char *, size_t);
void	 disk_close(struct vm_disk *);
int	 disk_snapshot(int, const char *, uint32_t, const char *, char *,
	    size_t);
int	 disk_state_write(int);
int	 disk_checkpoint(int, const char *, int, const char *, int *, int *,
	    char *, size_t);
int	 disk_ram(int, const char *, uint32_t, int *, char *, size_t);
int	 disk_delete(int, const char *, char *, size_t);
int	 disk_copy_start(int, const char *, const char *, struct disk_copy *,
	    char *, size_t);
int	 disk_copy_step(struct disk_copy *, uint64_t, char *, size_t);
void	 disk_copy_end(int, const char *, struct disk_copy *, int);
int	 disk_list(int, int (*)(const char *, void *), void *);
int	 qcow2_header(int, uint64_t *, char *, size_t);
int	 qcow2_header_read(int, uint64_t *, char *, size_t);

#endif
