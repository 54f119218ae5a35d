/*
 * The codecs of stored's messages (IMSG_STORE_*), called by mcvmd and
 * mcvm-stored; the rules are msg_vmm.h's.  peerid is the request id.
 */
#ifndef MCVM_MSG_STORE_H
#define MCVM_MSG_STORE_H

#include <stdint.h>

#include "imsg.h"
#include "proto.h"

#define STORE_TEXT_MAX		1023	/* a result's or status's text */
#define IMAGE_SNAPSHOTS_MAX	32	/* internal snapshots of one image */

/* IMSG_STORE_PREFLIGHT -> PREFLIGHT_RESULT */
struct msg_store_preflight_result {
	uint32_t	 reflink;	/* 0 or 1: disks are reflink clones */
	const char	*text;		/* STORE_TEXT_MAX */
};

/* IMSG_STORE_IMAGE_STATUS: one per catalog image, unasked */
struct msg_store_image_status {
	const char	*image;		/* OBJ_NAME_MAX */
	uint32_t	 ok;		/* 0 or 1 */
	uint64_t	 disk_bytes;
	const char	*text;		/* STORE_TEXT_MAX */
};

/*
 * IMSG_STORE_DISK_CREATE and DISK_OPEN -> STORE_FD (disk; base, kernel,
 * initrd), RESULT.  vm_id is a VM id and image an object name.
 */
struct msg_store_disk_create {
	const char	*vm_id;		/* ID_MAX */
	const char	*image;		/* OBJ_NAME_MAX */
};

struct msg_store_disk_open {
	const char	*vm_id;
	const char	*image;
};

/* IMSG_STORE_DISK_DELETE -> RESULT */
struct msg_store_disk_delete {
	const char	*vm_id;		/* a VM id, ID_MAX */
};

/* IMSG_STORE_DISK_LIST -> DISK_ENTRY per disk, RESULT */
struct msg_store_disk_entry {
	const char	*vm_id;		/* a VM id, ID_MAX */
};

/* IMSG_STORE_FD; the fd travels with it */
struct msg_store_fd {
	uint32_t	 role;		/* enum store_fd_role */
};

/* IMSG_STORE_RESULT ends every request */
struct msg_store_result {
	uint32_t	 status;	/* 0 ok, else an errno value */
	uint32_t	 format;	/* enum disk_format */
	uint64_t	 disk_bytes;
	const char	*text;		/* STORE_TEXT_MAX */
};

/*
 * IMSG_STORE_CHECKPOINT -> STORE_FD, RESULT: the VM's checkpoint file,
 * made empty to write (1) or read-only (0).  Writing with base, a VM id:
 * that VM's RAM file (a shared template's) becomes this VM's base first,
 * a link of the same file, which a relative checkpoint needs to load
 * (msg_vmm.h).  Reading: the base, if the VM has one, comes too, as
 * STORE_FD_RAM, before the checkpoint.
 */
struct msg_store_checkpoint {
	const char	*vm_id;		/* a VM id, ID_MAX */
	uint32_t	 write;		/* 0 or 1 */
	const char	*base;		/* a VM id, or "": none */
};

/*
 * IMSG_STORE_VM_RAM -> STORE_FD (STORE_FD_RAM), RESULT: VM vm_id's RAM
 * file, made empty and mib MiB long, mode 0660; the fd is read-only.
 */
struct msg_store_vm_ram {
	const char	*vm_id;		/* a VM id, ID_MAX */
	uint32_t	 mib;		/* VM_MEMORY_MIN_MIB..MAX_MIB */
};

/*
 * IMSG_STORE_DISK_COPY -> RESULT: a new directory vm_id with a copy of
 * VM from's disk as it is now (a reflink clone, or the qcow2 overlay's
 * bytes), for a fork; IMSG_STORE_DISK_OPEN then opens it.
 */
struct msg_store_disk_copy {
	const char	*vm_id;		/* a VM id, ID_MAX: made */
	const char	*from;		/* a VM id, ID_MAX: its disk */
};

/*
 * IMSG_STORE_VM_SNAPSHOT -> RESULT: the disk half of a live snapshot of
 * a VM whose disk is a raw reflink clone, taken while its vCPUs are
 * stopped (the RAM half is in its state file, STORE_FD_STATE): a clone
 * of the disk kept as the snapshot's, that clone put back as the disk,
 * or the clone deleted (none is no error).
 */
enum store_vm_snap_op {
	SVS_SAVE = 1,
	SVS_RESTORE,
	SVS_DELETE,
};
struct msg_store_vm_snapshot {
	const char	*vm_id;		/* a VM id, ID_MAX */
	uint32_t	 op;		/* enum store_vm_snap_op */
	const char	*tag;		/* valid_snapshot_tag() */
};

/*
 * IMSG_STORE_IMAGE -> IMAGE_ENTRY*, IMAGE_SNAP*, PROGRESS*, RESULT: one
 * operation on a workspace's image store (enum store_image_op).  Names
 * are object names or "" where the operation takes none.  budget is
 * what the workspace's images may hold in all, in bytes (its storage
 * quota less its VMs' disks), max_images their number.  The RESULT's
 * disk_bytes is what the workspace's images hold after it.
 */
struct msg_store_image {
	uint32_t	 op;		/* enum store_image_op */
	uint64_t	 ws;		/* workspace id, > 0 */
	const char	*name;
	const char	*dest;		/* convert */
	const char	*base;		/* create: its backing, or "" */
	const char	*tag;		/* snapshots: OBJ_NAME_MAX */
	uint32_t	 format;	/* enum image_format */
	uint32_t	 flags;		/* SIF_* */
	uint64_t	 bytes;		/* create, resize */
	uint64_t	 budget;
	uint32_t	 max_images;
};

/* IMSG_STORE_IMAGE_ENTRY: one image (or, in a chain, a catalog base). */
struct msg_store_image_entry {
	const char	*name;
	uint32_t	 format;	/* enum image_format */
	uint32_t	 catalog;	/* 0 or 1: an operator's image */
	uint64_t	 virtual_bytes;
	uint64_t	 disk_bytes;	/* allocated */
	const char	*backing;	/* "" for none */
	uint32_t	 backing_catalog; /* 0 or 1 */
	uint32_t	 users;		/* images whose backing it is; in a
					   list, one more while VMs use it */
	uint32_t	 snapshots;
};

/* IMSG_STORE_IMAGE_SNAP: one internal snapshot of an image. */
struct msg_store_image_snap {
	const char	*tag;		/* OBJ_NAME_MAX; qemu-img's, checked */
	uint64_t	 vm_bytes;	/* saved VM state, 0 for disk-only */
	uint64_t	 date;		/* seconds since the epoch */
};

/* IMSG_STORE_PROGRESS: how far a long request is. */
struct msg_store_progress {
	uint32_t	 permille;	/* 0..1000 */
};

/*
 * IMSG_STORE_VM_DISKS -> VM_DISK per disk, STORE_FD*, RESULT: the disks
 * of a VM from its own disks, made (create 1) or opened again.  disks
 * are images of workspace ws, the first the boot disk: each an overlay
 * or a reflink clone of it in the VM's directory, or with persistent
 * the image itself.  iso, when not "", is the install CD: an image of
 * format iso of the workspace or a catalog image.  firmware FW_UEFI:
 * the firmware's code and the VM's own variables come too.  The
 * RESULT's disk_bytes is what the VM's own copies may grow to: the sum
 * of their virtual sizes (0 with persistent).
 */
struct msg_store_vm_disks {
	const char	*vm_id;		/* ID_MAX */
	uint64_t	 ws;		/* > 0 */
	uint32_t	 create;	/* 0 or 1 */
	uint32_t	 persistent;	/* 0 or 1 */
	uint32_t	 firmware;	/* enum vm_firmware */
	uint32_t	 ndisks;	/* 1..VM_DISKS_MAX */
	const char	*disks[VM_DISKS_MAX];	/* object names, distinct */
	const char	*iso;		/* an object name, or "" */
};

/* IMSG_STORE_VM_DISK: what disk index is (STORE_FD_DISK_N(index)). */
struct msg_store_vm_disk {
	uint32_t	 index;		/* < VM_DISKS_MAX */
	uint32_t	 format;	/* IMG_QCOW2 or IMG_RAW */
	uint32_t	 has_base;	/* 0 or 1: on STORE_FD_BASE_N(index) */
	uint32_t	 base_format;	/* IMG_QCOW2 or IMG_RAW */
};

/* IMSG_STORE_CANCEL: request peerid is to end now (its RESULT follows,
 * ECANCELED), or has ended. */

int	 msg_store_preflight_get(struct imsg *);
void	 msg_store_preflight_result_put(struct ibuf *,
	    const struct msg_store_preflight_result *);
int	 msg_store_preflight_result_get(struct imsg *,
	    struct msg_store_preflight_result *);
void	 msg_store_image_status_put(struct ibuf *,
	    const struct msg_store_image_status *);
int	 msg_store_image_status_get(struct imsg *,
	    struct msg_store_image_status *);
void	 msg_store_disk_create_put(struct ibuf *,
	    const struct msg_store_disk_create *);
int	 msg_store_disk_create_get(struct imsg *,
	    struct msg_store_disk_create *);
void	 msg_store_disk_open_put(struct ibuf *,
	    const struct msg_store_disk_open *);
int	 msg_store_disk_open_get(struct imsg *, struct msg_store_disk_open *);
void	 msg_store_disk_delete_put(struct ibuf *,
	    const struct msg_store_disk_delete *);
int	 msg_store_disk_delete_get(struct imsg *,
	    struct msg_store_disk_delete *);
int	 msg_store_disk_list_get(struct imsg *);
void	 msg_store_disk_entry_put(struct ibuf *,
	    const struct msg_store_disk_entry *);
int	 msg_store_disk_entry_get(struct imsg *,
	    struct msg_store_disk_entry *);
void	 msg_store_fd_put(struct ibuf *, const struct msg_store_fd *);
int	 msg_store_fd_get(struct imsg *, struct msg_store_fd *);
void	 msg_store_result_put(struct ibuf *, const struct msg_store_result *);
int	 msg_store_result_get(struct imsg *, struct msg_store_result *);
void	 msg_store_vm_snapshot_put(struct ibuf *,
	    const struct msg_store_vm_snapshot *);
int	 msg_store_vm_snapshot_get(struct imsg *,
	    struct msg_store_vm_snapshot *);
void	 msg_store_vm_ram_put(struct ibuf *, const struct msg_store_vm_ram *);
void	 msg_store_disk_copy_put(struct ibuf *,
	    const struct msg_store_disk_copy *);
int	 msg_store_disk_copy_get(struct imsg *, struct msg_store_disk_copy *);
int	 msg_store_vm_ram_get(struct imsg *, struct msg_store_vm_ram *);
void	 msg_store_checkpoint_put(struct ibuf *,
	    const struct msg_store_checkpoint *);
int	 msg_store_checkpoint_get(struct imsg *,
	    struct msg_store_checkpoint *);

void	 msg_store_image_put(struct ibuf *, const struct msg_store_image *);
int	 msg_store_image_get(struct imsg *, struct msg_store_image *);
void	 msg_store_image_entry_put(struct ibuf *,
	    const struct msg_store_image_entry *);
int	 msg_store_image_entry_get(struct imsg *,
	    struct msg_store_image_entry *);
void	 msg_store_image_snap_put(struct ibuf *,
	    const struct msg_store_image_snap *);
int	 msg_store_image_snap_get(struct imsg *,
	    struct msg_store_image_snap *);
void	 msg_store_progress_put(struct ibuf *,
	    const struct msg_store_progress *);
int	 msg_store_progress_get(struct imsg *, struct msg_store_progress *);
int	 msg_store_cancel_get(struct imsg *);
void	 msg_store_vm_disks_put(struct ibuf *,
	    const struct msg_store_vm_disks *);
int	 msg_store_vm_disks_get(struct imsg *, struct msg_store_vm_disks *);
void	 msg_store_vm_disk_put(struct ibuf *,
	    const struct msg_store_vm_disk *);
int	 msg_store_vm_disk_get(struct imsg *, struct msg_store_vm_disk *);
const char *image_format_name(enum image_format);
const char *image_format_driver(enum image_format);
int	 image_format_parse(const char *);

#endif
