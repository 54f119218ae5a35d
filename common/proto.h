/*
 * Every message exchanged between mcvm's processes, grouped per peer.
 * mcvmd is the hub: each child talks to it alone.  mcvmctl speaks the
 * control group over the control socket.
 *
 * Field layouts are given beside each type, in the order written with
 * msg.h's typed fields.  The version is checked at startup: a child whose
 * IMSG_HELLO carries another version is refused.
 */
#ifndef MCVM_PROTO_H
#define MCVM_PROTO_H

#include <stdint.h>

#define MCVM_PROTO_VERSION	1

/* The fd on which every child finds its socket to mcvmd. */
#define PROC_PARENT_SOCK_FILENO	3

#define TOKEN_HASH_LEN		32	/* SHA-256 */

#define IMSG_TYPES(X)							\
	/* any child <-> mcvmd */					\
	X(IMSG_HELLO,		1)	/* u32 version */		\
	X(IMSG_VERBOSE,		2)	/* u32 level */			\
									\
	/* mcvmctl <-> mcvmd, over the control socket */		\
	X(IMSG_CTL_OK,		100)	/* str message */		\
	X(IMSG_CTL_FAIL,	101)	/* str message */		\
	X(IMSG_CTL_END,		102)	/* (none) */			\
	X(IMSG_CTL_STATUS,	103)	/* (none) */			\
	X(IMSG_CTL_STATUS_PROC,	104)	/* str title, u32 pid,		\
					   u32 uid, u64 capeff,		\
					   u64 capprm, u32 seccomp,	\
					   u32 nonewprivs,		\
					   u32 restarts, str state */	\
	X(IMSG_CTL_TOKEN_ISSUE,	105)	/* str workspace, bytes hash,	\
					   u64 ttl seconds (0 none),	\
					   u32 ws flags, u32 rotate */	\
	X(IMSG_CTL_WS_REVOKE,	106)	/* str workspace */		\
	X(IMSG_CTL_WS_LIST,	107)	/* (none) */			\
	X(IMSG_CTL_STATUS_NOTE,	109)	/* str topic, str text: after	\
					   the processes, before END */	\
	X(IMSG_CTL_WS_ENTRY,	108)	/* str workspace, u32 flags,	\
					   u64 created, u64 revoked,	\
					   u32 live tokens,		\
					   u64 next expiry */		\
									\
	/* mcvm-frontd <-> mcvmd */					\
	X(IMSG_FRONT_AUTH,	200)	/* bytes hash */		\
	X(IMSG_FRONT_AUTH_RESULT, 201)	/* u32 auth status,		\
					   str workspace */		\
	X(IMSG_FRONT_TOOL,	202)	/* bytes hash, u32 tool id,	\
					   tool arguments */		\
	X(IMSG_FRONT_TOOL_RESULT, 203)	/* u32 tool status,		\
					   str json */			\
	X(IMSG_FRONT_CANCEL,	204)	/* (none): cancels peerid */	\
	X(IMSG_FRONT_PROGRESS,	205)	/* u64 progress, u64 total	\
					   (0 unknown), str message:	\
					   a step of call peerid */	\
	X(IMSG_FRONT_TOOL_RESULT_FD, 206) /* u32 tool status, str json,	\
					   u32 enum tool_result, str	\
					   mime type, u64 size; the fd	\
					   travels with it: see		\
					   msg_payload.h */		\
									\
	/* mcvm-netd <-> mcvmd; peerid is the request id */		\
	X(IMSG_NET_PREFLIGHT,	300)	/* (none) */			\
	X(IMSG_NET_PREFLIGHT_RESULT, 301) /* u32 problems, str text */	\
	X(IMSG_NET_SETUP,	302)	/* str vm id, u32 slot,		\
					   u32 network (0 off, 1 on),	\
					   u32 nforwards, then per	\
					   forward u32 host port (0:	\
					   auto), u32 guest port */	\
	X(IMSG_NET_TEARDOWN,	303)	/* str vm id, u32 slot */	\
	X(IMSG_NET_LIST,	304)	/* (none) */			\
	X(IMSG_NET_ENTRY,	305)	/* str vm id, u32 slot */	\
	X(IMSG_NET_FD,		306)	/* u32 enum net_fd_role; the	\
					   fd travels with it */	\
	X(IMSG_NET_RESULT,	307)	/* u32 status (0 ok, else	\
					   errno), str guest address	\
					   (a.b.c.d/n, "" off), str	\
					   gateway, str resolver ("" 	\
					   none), str guest MAC, u32	\
					   nforwards, then per forward	\
					   u32 host port, u32 guest	\
					   port; str text: ends every	\
					   request */			\
									\
	/* mcvm-stored <-> mcvmd; peerid is the request id */		\
	X(IMSG_STORE_PREFLIGHT,	400)	/* (none) */			\
	X(IMSG_STORE_PREFLIGHT_RESULT, 401) /* u32 reflink, str text */	\
	X(IMSG_STORE_IMAGE_STATUS, 402)	/* str image, u32 ok,		\
					   u64 disk bytes, str text:	\
					   one per catalog image, sent	\
					   unasked after the HELLO */	\
	X(IMSG_STORE_DISK_CREATE, 403)	/* str vm id, str image */	\
	X(IMSG_STORE_DISK_OPEN,	404)	/* str vm id, str image */	\
	X(IMSG_STORE_DISK_DELETE, 405)	/* str vm id */			\
	X(IMSG_STORE_DISK_LIST,	406)	/* (none) */			\
	X(IMSG_STORE_DISK_ENTRY, 407)	/* str vm id */			\
	X(IMSG_STORE_FD,	408)	/* u32 enum store_fd_role;	\
					   the fd travels with it */	\
	X(IMSG_STORE_RESULT,	409)	/* u32 status (0 ok, else	\
					   errno), u32 enum disk_format,\
					   u64 disk bytes, str text:	\
					   ends every request */	\
	X(IMSG_STORE_CHECKPOINT, 410)	/* str vm id, u32 write: the	\
					   VM's checkpoint file, made	\
					   empty (write 1) or read-only	\
					   (0) -> FD, RESULT */		\
									\
	/* VM monitor <-> mcvmd; peerid is the request id, 0 unasked */	\
	X(IMSG_VMM_READY,	500)	/* str agent version, str os,	\
					   str kernel */		\
	X(IMSG_VMM_EVENT,	501)	/* u32 enum vmm_event,		\
					   str detail */		\
	X(IMSG_VMM_ERROR,	502)	/* u32 code (AGENT_ERR_* or	\
					   VMM_ERR_*), u32 errno,	\
					   str message */		\
	X(IMSG_VMM_OK,		503)	/* u32 value */			\
	X(IMSG_VMM_QMP_STATUS,	504)	/* (none) */			\
	X(IMSG_VMM_QMP_STATE,	505)	/* str status, u32 running */	\
	X(IMSG_VMM_PAUSE,	506)	/* (none) -> OK */		\
	X(IMSG_VMM_CONT,	507)	/* (none) -> OK */		\
	X(IMSG_VMM_POWERDOWN,	508)	/* (none) -> OK: ACPI button */	\
	X(IMSG_VMM_QUIT,	509)	/* (none) -> OK: QEMU exits */	\
	X(IMSG_VMM_EXEC,	510)	/* u32 flags, u32 timeout ms,	\
					   str cwd, u32 argc, str argv	\
					   [argc], u32 envc, str env	\
					   [envc], bytes stdin -> JOB */\
	X(IMSG_VMM_JOB,		511)	/* u32 job */			\
	X(IMSG_VMM_JOB_STATUS,	512)	/* u32 job -> JOB_STATE */	\
	X(IMSG_VMM_JOB_CANCEL,	513)	/* u32 job -> JOB_STATE */	\
	X(IMSG_VMM_JOB_STATE,	514)	/* job status (below) */	\
	X(IMSG_VMM_JOB_READ,	515)	/* u32 job, u64 out cursor,	\
					   u64 err cursor, u32 out max,	\
					   u32 err max, u32 encoding	\
					   (VMM_ENC_*), u32 wait ms	\
					   -> JOB_OUTPUT */		\
	X(IMSG_VMM_JOB_OUTPUT,	516)	/* job status, u64 out next	\
					   cursor, str out, u32 out	\
					   decoding errors, u64 err	\
					   next cursor, str err, u32	\
					   err decoding errors: text	\
					   the monitor decoded */	\
	X(IMSG_VMM_FILE_READ,	517)	/* str path, u64 offset,	\
					   u32 length -> FILE_DATA */	\
	X(IMSG_VMM_FILE_DATA,	518)	/* u64 offset, u64 size,	\
					   u32 eof, bytes data */	\
	X(IMSG_VMM_FILE_WRITE,	519)	/* str path, u32 flags, u64	\
					   offset, u32 mode, bytes data	\
					   -> FILE_WRITTEN */		\
	X(IMSG_VMM_FILE_WRITTEN, 520)	/* u64 size, u32 written */	\
	X(IMSG_VMM_GUEST_INFO,	521)	/* (none) -> GUEST_INFO_RESULT */\
	X(IMSG_VMM_GUEST_INFO_RESULT, 522) /* str os, str kernel,	\
					   str agent version, u64	\
					   uptime ms, u32 jobs active,	\
					   u32 jobs total, u32 frozen */\
	X(IMSG_VMM_FREEZE,	523)	/* (none) -> OK jobs frozen */	\
	X(IMSG_VMM_THAW,	524)	/* (none) -> OK */		\
	X(IMSG_VMM_SET_TIME,	525)	/* u64 sec, u32 nsec -> OK */	\
	X(IMSG_VMM_GUEST_POWEROFF, 526)	/* (none) -> OK */		\
	X(IMSG_VMM_NET_CONFIG,	527)	/* str address (a.b.c.d/n),	\
					   str gateway, str resolver,	\
					   str mac -> OK */		\
	X(IMSG_VMM_CHECKPOINT,	528)	/* (none); the fd travels with	\
					   it -> OK once QEMU wrote its	\
					   migration stream there */

enum imsg_type {
	IMSG_NONE = 0,
#define IMSG_ENUM(name, val)	name = val,
	IMSG_TYPES(IMSG_ENUM)
#undef IMSG_ENUM
};

const char	*imsg_type_name(uint32_t);

/* IMSG_FRONT_AUTH_RESULT status */
enum auth_status {
	AUTH_OK = 0,
	AUTH_UNKNOWN,		/* no such token: 401 */
	AUTH_EXPIRED,		/* 401 */
	AUTH_REVOKED,		/* 401 */
	AUTH_UNAVAILABLE,	/* mcvmd could not tell (database): 503 */
};

/* IMSG_FRONT_TOOL_RESULT status */
enum tool_status {
	TOOL_OK = 0,
	TOOL_ERROR,		/* a tool error: isError result, 4xx/5xx */
	TOOL_DENIED,		/* authentication failed: 401 */
	TOOL_NOT_FOUND,		/* unknown or foreign id: 404 */
	TOOL_UNAVAILABLE,	/* back end not built yet or down: 501/503 */
};

/*
 * A job status, as IMSG_VMM_JOB_STATE and IMSG_VMM_JOB_OUTPUT carry it:
 * u32 job, u32 state (AGENT_JOB_*), u32 truncated, u32 out eof,
 * u32 err eof, u32 exit code (two's complement), u32 signal,
 * u64 out total, u64 err total, u64 out retained, u64 err retained,
 * u64 runtime ms.
 */

/* IMSG_STORE_FD roles */
enum store_fd_role {
	STORE_FD_DISK = 1,	/* the VM's disk, read-write */
	STORE_FD_BASE,		/* an overlay's base image, read-only */
	STORE_FD_KERNEL,	/* read-only */
	STORE_FD_INITRD,	/* read-only */
	STORE_FD_CHECKPOINT,	/* a migration stream, see STORE_CHECKPOINT */
};
#define STORE_FD_MAX		STORE_FD_CHECKPOINT

/* IMSG_NET_FD roles */
enum net_fd_role {
	NET_FD_NETNS = 1,	/* the VM's network namespace */
	NET_FD_TAP,		/* the tap in it, for -netdev tap,fd= */
};

enum disk_format {
	DISK_RAW = 0,		/* a reflink clone of a raw base */
	DISK_QCOW2,		/* a qcow2 overlay on STORE_FD_BASE */
};

/*
 * IMSG_VMM_JOB_READ encodings.  The monitor decodes the guest's bytes, so
 * that mcvmd never parses them: UTF-8 text (an incomplete character at the
 * end of a page waits for the next read, unless the stream ends there;
 * invalid bytes become U+FFFD and count as decoding errors), or base64.
 * The next cursor is the input consumed.
 */
#define VMM_ENC_UTF8		0
#define VMM_ENC_BASE64		1

/* IMSG_VMM_EVENT */
enum vmm_event {
	VMM_EV_STOP = 1,	/* vCPUs stopped */
	VMM_EV_RESUME,		/* vCPUs running */
	VMM_EV_SHUTDOWN,	/* the guest powered off; QEMU is exiting */
	VMM_EV_RESET,
	VMM_EV_GUEST_LOST,	/* the agent channel closed */
	VMM_EV_GUEST_BACK,	/* the agent answered HELLO again */
	VMM_EV_HELD,		/* a template's guest holds (mcvm-vmm -m) */
};

/* IMSG_VMM_ERROR codes beyond the agent's own (AGENT_ERR_*) */
enum vmm_err {
	VMM_ERR_GUEST_DOWN = 100,	/* the agent is not connected */
	VMM_ERR_QMP,			/* QEMU refused or failed */
	VMM_ERR_TIMEOUT,		/* no answer in time */
	VMM_ERR_BUSY,			/* too many requests in flight */
};

/* workspace flags */
#define WS_ALLOW_NETWORK	0x1

#endif
