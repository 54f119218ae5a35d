/*
 * VM disks under <statedir>/vms/<vm id>/: a reflink clone of the catalog
 * disk (disk.raw) where the filesystem allows, or else a qcow2 overlay
 * (disk.qcow2) whose backing is the catalog disk.  Every call works
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
#define VM_CHECKPOINT		"checkpoint"
#define VM_DIR_MODE		0700
#define VM_DISK_MODE		0600
#define VM_ID_PREFIX		"vm-"
#define DISK_DELETE_DEPTH	4	/* directories below a VM's own */
#define DISK_TEXT_MAX		512
#define QCOW2_HEADER_LEN	72	/* version 2 header fields */
#define QCOW2_BACKING_MAX	1023	/* qcow2's own limit */

struct vm_disk {
	int		 fd;			/* read-write */
	enum disk_format format;
	uint64_t	 bytes;			/* virtual size */
	char		 backing[CONF_NAME_MAX]; /* overlay: catalog image */
};

int	 disk_reflink_errno(int);
int	 disk_reflink_probe(int, int, char *, size_t);
const char *disk_fs_name(int);
int	 disk_create(int, const char *, const char *, int,
	    struct vm_disk *, int *, char *, size_t);
int	 disk_create_finish(int, const char *, const char *, uint64_t, int,
	    int, const char *, struct vm_disk *, char *, size_t);
int	 disk_open(int, const char *, struct vm_disk *, char *, size_t);
int	 disk_checkpoint(int, const char *, int, int *, char *, size_t);
int	 disk_delete(int, const char *, char *, size_t);
int	 disk_list(int, int (*)(const char *, void *), void *);
int	 qcow2_header(int, uint64_t *, char *, size_t);
int	 qcow2_header_read(int, uint64_t *, char *, size_t);

#endif
