/*
 * QEMU command lines, built from validated values only, and the choice of
 * accelerator.
 */
#ifndef MCVMD_QEMU_H
#define MCVMD_QEMU_H

#include <stddef.h>
#include <stdint.h>

#include "agent_proto.h"
#include "config.h"
#include "proto.h"

#define QEMU_BIN		"/usr/bin/qemu-system-x86_64"
#define QEMU_ARGV_MAX		128
#define QEMU_ARG_MAX		512	/* one argument, escaped */
#define QEMU_TCG_TB_MIB		64	/* TCG translation cache: bounds RSS */
#define QEMU_APPEND		AGENT_KERNEL_APPEND
#define QEMU_APPEND_TCG		AGENT_KERNEL_APPEND_TCG
#define QEMU_SERIAL_ID		"serial0"	/* the console's ring */
#define QEMU_SERIAL_RING	"256K"		/* VMM_SERIAL_RING */
#define QEMU_LINUXBOOT_ROM	"linuxboot_dma.bin"	/* what -kernel adds */

/* Fixed fds QEMU finds its resources on (see jail.c). */
#define QEMU_FD_QMP		3
#define QEMU_FD_AGENT		4
#define QEMU_FD_DISK		5
#define QEMU_FD_BASE		6
#define QEMU_FD_TAP		7
#define QEMU_FD_CHECKPOINT	QEMU_INCOMING_FD /* restored from, read-only */
#define QEMU_FD_CD		9	/* the install CD, read-only */
#define QEMU_FD_CODE		10	/* UEFI code, read-only */
#define QEMU_FD_VARS		11	/* the VM's UEFI variables */
#define QEMU_FD_DISK2		12	/* disks 2-4, each with its base */
#define QEMU_FD_STATE		(QEMU_FD_DISK2 + 2 * (VM_DISKS_MAX - 1))
					/* a raw disk's snapshot state */
#define QEMU_FD_MAX		QEMU_FD_STATE
/* Disk i (0-3) of a VM from its own disks, and its overlay's base. */
#define QEMU_FD_DISK_N(i)	((i) == 0 ? QEMU_FD_DISK :		\
				    QEMU_FD_DISK2 + 2 * ((i) - 1))
#define QEMU_FD_BASE_N(i)	((i) == 0 ? QEMU_FD_BASE :		\
				    QEMU_FD_DISK2 + 2 * ((i) - 1) + 1)
#define QEMU_MAC_LEN		17	/* "52:54:00:xx:xx:xx" */

/* Paths inside QEMU's jail root. */
#define QEMU_JAIL_KERNEL	"/kernel"
#define QEMU_JAIL_INITRD	"/initrd"
#define QEMU_JAIL_RAM		"/ram"		/* a template's RAM file */

/* Where guest RAM lives. */
enum qemu_ram {
	QEMU_RAM_ANON = 0,	/* QEMU's own memory */
	QEMU_RAM_SHARED,	/* QEMU_JAIL_RAM, shared: a template being made */
	QEMU_RAM_PRIVATE,	/* QEMU_JAIL_RAM, copy-on-write: its clone */
};

enum accel_choice {
	ACCEL_USE_TCG = 0,
	ACCEL_USE_KVM,
};

/* One disk of a VM from its own disks. */
struct qemu_disk {
	enum image_format format;	/* IMG_QCOW2 or IMG_RAW */
	int		 has_base;	/* an overlay of its base */
	enum image_format base_format;	/* IMG_QCOW2 or IMG_RAW */
};

struct qemu_spec {
	const char	*vm_id;		/* valid_id(, "vm-") */
	enum accel_choice accel;
	uint32_t	 memory_mib;
	uint32_t	 vcpus;
	enum disk_format disk_format;
	int		 has_initrd;
	const char	*mac;		/* NULL: no NIC; else on QEMU_FD_TAP */
	uint32_t	 tsc_khz;	/* TCG: the host's TSC rate, 0 unknown */
	int		 hold;		/* a template: mcvm.hold */
	int		 restore;	/* from QEMU_FD_CHECKPOINT, once the
					   monitor says (-incoming defer) */
	int		 paused;	/* -S: it stays paused once restored */
	enum qemu_ram	 ram;
	int		 display;	/* VGA, tablet and virtio mouse */
	/*
	 * A VM from its own disks (ndisks > 0): no kernel, no template;
	 * its firmware boots the CD first when cd is set, then the disks
	 * in order.
	 */
	unsigned int	 ndisks;	/* 0..VM_DISKS_MAX */
	struct qemu_disk disks[VM_DISKS_MAX];
	int		 cd;		/* on QEMU_FD_CD */
	enum vm_firmware firmware;	/* FW_UEFI: on QEMU_FD_CODE, VARS */
	enum vm_machine	 machine;
};

struct qemu_argv {
	char		*argv[QEMU_ARGV_MAX + 1];
	char		 buf[QEMU_ARGV_MAX][QEMU_ARG_MAX];
	size_t		 argc;
};

int	 qemu_escape(const char *, char *, size_t);
int	 qemu_valid_mac(const char *);
int	 qemu_build_argv(const struct qemu_spec *, struct qemu_argv *);
enum accel_choice accel_choose(enum accel_mode, const char *, char *,
	    size_t);
uint32_t qemu_tsc_khz(void);

#endif
