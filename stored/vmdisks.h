/*
 * The disks of VMs made from their workspace's own images: see
 * vmdisks.c.
 */
#ifndef MCVM_STORED_VMDISKS_H
#define MCVM_STORED_VMDISKS_H

#include <stdint.h>

#include "msg_store.h"

#define VMDISK_USES		"uses"		/* in the VM's directory */
#define VMDISK_VARS		"vars.fd"	/* its UEFI variables */
#define VMDISK_USES_MAX		1024		/* bytes of the record */
#define OVMF_CODE_PATH		"/usr/share/OVMF/OVMF_CODE.fd"
#define OVMF_VARS_PATH		"/usr/share/OVMF/OVMF_VARS.fd"
#define OVMF_VARS_MAX		(4U << 20)	/* bytes copied at most */

struct catalog;
struct imsgev;
void	 vmdisks_firmware_open(void);
void	 vmdisks_init(int, struct catalog *, struct imsgev *);
int	 vmdisks_scan_one(const char *);
void	 vmdisks_request(uint32_t, const struct msg_store_vm_disks *);
void	 vmdisks_cancel(const char *);
void	 vmdisks_forget(const char *);
int	 vmdisks_in_use(uint64_t, const char *);

#endif
