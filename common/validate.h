/*
 * Validators for everything a user names.  Each is applied where the value
 * enters (frontd, mcvmctl) and again by whoever acts on it (mcvmd).
 */
#ifndef MCVM_VALIDATE_H
#define MCVM_VALIDATE_H

#include <stddef.h>
#include <stdint.h>

#define WS_NAME_MAX		64	/* workspace names */
#define OBJ_NAME_MAX		64	/* VM, image, snapshot names */
#define REQUEST_ID_MAX		128
#define ID_HEX_LEN		16	/* random part of vm/job ids */
#define ID_MAX			(8 + ID_HEX_LEN)
#define VM_ID_PREFIX		"vm-"
#define JOB_ID_PREFIX		"job-"

#define VM_MEMORY_MIN_MIB	128
#define VM_MEMORY_MAX_MIB	65536
#define VM_VCPUS_MAX		64
#define TOKEN_TTL_MAX		(10ULL * 365 * 24 * 3600)

int	 valid_workspace_name(const char *);
int	 valid_object_name(const char *);
int	 valid_snapshot_tag(const char *);
int	 valid_request_id(const char *);
int	 valid_id(const char *, const char *);
int	 valid_range_u64(uint64_t, uint64_t, uint64_t);
int	 valid_utf8(const char *, size_t);

#endif
