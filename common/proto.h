/*
 * Every message exchanged between mcvm's processes, grouped per peer.
 * mcvmd is the hub: each child talks to it alone.  mcvmctl speaks the
 * control group over the control socket.
 *
 * Field layouts are the codecs' (msg_*.h), written with msg.h's typed
 * fields.  The version is checked at startup: a child whose
 * IMSG_HELLO carries another version is refused.
 */
#ifndef MCVM_PROTO_H
#define MCVM_PROTO_H

#include <stdint.h>

#define MCVM_PROTO_VERSION	3

/* The fd on which every child finds its socket to mcvmd. */
#define PROC_PARENT_SOCK_FILENO	3

#define TOKEN_HASH_LEN		32	/* SHA-256 */

/*
 * QEMU's block nodes that mcvmd names on a VM's command line and its
 * monitor looks for: a catalogue VM's disk, and beside a raw one the
 * device-less qcow2 that holds its live snapshots' RAM and devices.
 */
#define QEMU_NODE_DISK		"disk"
#define QEMU_NODE_STATE		"state"

/*
 * The guest agent's port of a VM from a workspace's own disks: the one
 * qemu-guest-agent opens, read by the VM's monitor alone (-a qga).
 */
#define QGA_PORT_NAME		"org.qemu.guest_agent.0"
/*
 * What the monitor takes of it: a line of at most QGA_MSG_MAX bytes, so
 * a job's output (both streams, in base64 in one answer) of at most
 * about QGA_OUTPUT_MAX.
 */
#define QGA_MSG_MAX		(512 * 1024)
#define QGA_OUTPUT_MAX		(QGA_MSG_MAX / 4 * 3)

/*
 * The message list: name, value, and for a request the type of the reply
 * that ends it (IMSG_NONE for what is not a request).  Other messages may
 * come before that reply (NET_FD, STORE_FD, the ENTRY and STATUS_* rows,
 * FRONT_PROGRESS), and IMSG_VMM_ERROR or IMSG_CTL_FAIL may end a request
 * of their group instead.  Each message's fields and bounds are its
 * struct's in the codec headers: msg_proc.h (HELLO, VERBOSE), msg_ctl.h,
 * msg_front.h, msg_net.h, msg_store.h, msg_vmm.h.
 */
#define IMSG_TYPES(X)							\
	/* any child <-> mcvmd */					\
	X(IMSG_HELLO,			1,	IMSG_NONE)		\
	X(IMSG_VERBOSE,			2,	IMSG_NONE)		\
									\
	/* mcvmctl <-> mcvmd, over the control socket */		\
	X(IMSG_CTL_OK,			100,	IMSG_NONE)		\
	X(IMSG_CTL_FAIL,		101,	IMSG_NONE)		\
	X(IMSG_CTL_END,			102,	IMSG_NONE)		\
	X(IMSG_CTL_STATUS,		103,	IMSG_CTL_END)		\
	X(IMSG_CTL_STATUS_PROC,		104,	IMSG_NONE)		\
	X(IMSG_CTL_TOKEN_ISSUE,		105,	IMSG_CTL_OK)		\
	X(IMSG_CTL_WS_REVOKE,		106,	IMSG_CTL_OK)		\
	X(IMSG_CTL_WS_LIST,		107,	IMSG_CTL_END)		\
	X(IMSG_CTL_WS_ENTRY,		108,	IMSG_NONE)		\
	X(IMSG_CTL_STATUS_NOTE,		109,	IMSG_NONE)		\
	X(IMSG_CTL_STATUS_WS,		110,	IMSG_NONE)		\
	X(IMSG_CTL_VM_LIST,		111,	IMSG_CTL_END)		\
	X(IMSG_CTL_VM_ENTRY,		112,	IMSG_NONE)		\
	X(IMSG_CTL_VM_STOP,		113,	IMSG_CTL_OK)		\
	X(IMSG_CTL_VM_DESTROY,		114,	IMSG_CTL_OK)		\
	X(IMSG_CTL_QUOTA_SET,		115,	IMSG_CTL_OK)		\
	X(IMSG_CTL_VM_ATTACH,		116,	IMSG_CTL_OK)		\
	X(IMSG_CTL_VM_FORGET,		117,	IMSG_CTL_OK)		\
									\
	/* mcvm-frontd <-> mcvmd; peerid is the call */			\
	X(IMSG_FRONT_AUTH,		200,	IMSG_FRONT_AUTH_RESULT)	\
	X(IMSG_FRONT_AUTH_RESULT,	201,	IMSG_NONE)		\
	X(IMSG_FRONT_TOOL,		202,	IMSG_FRONT_TOOL_RESULT)	\
	X(IMSG_FRONT_TOOL_RESULT,	203,	IMSG_NONE)		\
	X(IMSG_FRONT_CANCEL,		204,	IMSG_NONE)		\
	X(IMSG_FRONT_PROGRESS,		205,	IMSG_NONE)		\
	X(IMSG_FRONT_TOOL_RESULT_FD,	206,	IMSG_NONE)		\
	X(IMSG_FRONT_IMAGE,		207,	IMSG_FRONT_TOOL_RESULT)	\
	X(IMSG_FRONT_IMAGE_FD,		208,	IMSG_NONE)		\
	X(IMSG_FRONT_TASK,		209,	IMSG_FRONT_TOOL_RESULT)	\
	X(IMSG_FRONT_TASK_STATUS,	210,	IMSG_FRONT_TOOL_RESULT)	\
	X(IMSG_FRONT_TASK_CANCEL,	211,	IMSG_FRONT_TOOL_RESULT)	\
	/* mcvmd -> frontd: forget the tokens accepted; peerid the turn */ \
	X(IMSG_FRONT_AUTH_FLUSH,	212,	IMSG_FRONT_AUTH_FLUSHED) \
	X(IMSG_FRONT_AUTH_FLUSHED,	213,	IMSG_NONE)		\
									\
	/* mcvm-netd <-> mcvmd; peerid is the request id */		\
	X(IMSG_NET_PREFLIGHT,		300,	IMSG_NET_PREFLIGHT_RESULT) \
	X(IMSG_NET_PREFLIGHT_RESULT,	301,	IMSG_NONE)		\
	X(IMSG_NET_SETUP,		302,	IMSG_NET_RESULT)	\
	X(IMSG_NET_TEARDOWN,		303,	IMSG_NET_RESULT)	\
	X(IMSG_NET_LIST,		304,	IMSG_NET_RESULT)	\
	X(IMSG_NET_ENTRY,		305,	IMSG_NONE)		\
	X(IMSG_NET_FD,			306,	IMSG_NONE)		\
	X(IMSG_NET_RESULT,		307,	IMSG_NONE)		\
									\
	/* mcvm-stored <-> mcvmd; peerid is the request id */		\
	X(IMSG_STORE_PREFLIGHT,		400,	IMSG_STORE_PREFLIGHT_RESULT) \
	X(IMSG_STORE_PREFLIGHT_RESULT,	401,	IMSG_NONE)		\
	X(IMSG_STORE_IMAGE_STATUS,	402,	IMSG_NONE)		\
	X(IMSG_STORE_DISK_CREATE,	403,	IMSG_STORE_RESULT)	\
	X(IMSG_STORE_DISK_OPEN,		404,	IMSG_STORE_RESULT)	\
	X(IMSG_STORE_DISK_DELETE,	405,	IMSG_STORE_RESULT)	\
	X(IMSG_STORE_DISK_LIST,		406,	IMSG_STORE_RESULT)	\
	X(IMSG_STORE_DISK_ENTRY,	407,	IMSG_NONE)		\
	X(IMSG_STORE_FD,		408,	IMSG_NONE)		\
	X(IMSG_STORE_RESULT,		409,	IMSG_NONE)		\
	X(IMSG_STORE_CHECKPOINT,	410,	IMSG_STORE_RESULT)	\
	X(IMSG_STORE_IMAGE,		411,	IMSG_STORE_RESULT)	\
	X(IMSG_STORE_IMAGE_ENTRY,	412,	IMSG_NONE)		\
	X(IMSG_STORE_IMAGE_SNAP,	413,	IMSG_NONE)		\
	X(IMSG_STORE_PROGRESS,		414,	IMSG_NONE)		\
	X(IMSG_STORE_CANCEL,		415,	IMSG_NONE)		\
	X(IMSG_STORE_VM_DISKS,		416,	IMSG_STORE_RESULT)	\
	X(IMSG_STORE_VM_DISK,		417,	IMSG_NONE)		\
	X(IMSG_STORE_VM_SNAPSHOT,	418,	IMSG_STORE_RESULT)	\
	X(IMSG_STORE_VM_RAM,		419,	IMSG_STORE_RESULT)	\
	X(IMSG_STORE_DISK_COPY,		420,	IMSG_STORE_RESULT)	\
									\
	/* VM monitor <-> mcvmd; peerid is the request id, 0 unasked */	\
	X(IMSG_VMM_READY,		500,	IMSG_NONE)		\
	X(IMSG_VMM_EVENT,		501,	IMSG_NONE)		\
	X(IMSG_VMM_ERROR,		502,	IMSG_NONE)		\
	X(IMSG_VMM_OK,			503,	IMSG_NONE)		\
	X(IMSG_VMM_QMP_STATUS,		504,	IMSG_VMM_QMP_STATE)	\
	X(IMSG_VMM_QMP_STATE,		505,	IMSG_NONE)		\
	X(IMSG_VMM_PAUSE,		506,	IMSG_VMM_OK)		\
	X(IMSG_VMM_CONT,		507,	IMSG_VMM_OK)		\
	X(IMSG_VMM_POWERDOWN,		508,	IMSG_VMM_OK)		\
	X(IMSG_VMM_QUIT,		509,	IMSG_VMM_OK)		\
	X(IMSG_VMM_EXEC,		510,	IMSG_VMM_JOB)		\
	X(IMSG_VMM_JOB,			511,	IMSG_NONE)		\
	X(IMSG_VMM_JOB_STATUS,		512,	IMSG_VMM_JOB_STATE)	\
	X(IMSG_VMM_JOB_CANCEL,		513,	IMSG_VMM_JOB_STATE)	\
	X(IMSG_VMM_JOB_STATE,		514,	IMSG_NONE)		\
	X(IMSG_VMM_JOB_READ,		515,	IMSG_VMM_JOB_OUTPUT)	\
	X(IMSG_VMM_JOB_OUTPUT,		516,	IMSG_NONE)		\
	X(IMSG_VMM_FILE_READ,		517,	IMSG_VMM_FILE_DATA)	\
	X(IMSG_VMM_FILE_DATA,		518,	IMSG_NONE)		\
	X(IMSG_VMM_FILE_WRITE,		519,	IMSG_VMM_FILE_WRITTEN)	\
	X(IMSG_VMM_FILE_WRITTEN,	520,	IMSG_NONE)		\
	X(IMSG_VMM_GUEST_INFO,		521,	IMSG_VMM_GUEST_INFO_RESULT) \
	X(IMSG_VMM_GUEST_INFO_RESULT,	522,	IMSG_NONE)		\
	X(IMSG_VMM_FREEZE,		523,	IMSG_VMM_OK)		\
	X(IMSG_VMM_THAW,		524,	IMSG_VMM_OK)		\
	X(IMSG_VMM_SET_TIME,		525,	IMSG_VMM_OK)		\
	X(IMSG_VMM_GUEST_POWEROFF,	526,	IMSG_VMM_OK)		\
	X(IMSG_VMM_NET_CONFIG,		527,	IMSG_VMM_OK)		\
	X(IMSG_VMM_CHECKPOINT,		528,	IMSG_VMM_OK)		\
	X(IMSG_VMM_FILE_LIST,		529,	IMSG_VMM_FILE_ENTRIES)	\
	X(IMSG_VMM_FILE_ENTRIES,	530,	IMSG_NONE)		\
	X(IMSG_VMM_SCREENSHOT,		531,	IMSG_VMM_SCREENSHOT_DONE) \
	X(IMSG_VMM_SCREENSHOT_DONE,	532,	IMSG_NONE)		\
	X(IMSG_VMM_INPUT,		533,	IMSG_VMM_OK)		\
	X(IMSG_VMM_SERIAL_READ,		534,	IMSG_VMM_SERIAL_DATA)	\
	X(IMSG_VMM_SERIAL_DATA,		535,	IMSG_NONE)		\
	X(IMSG_VMM_SNAPSHOT,		536,	IMSG_VMM_SNAPSHOT_DONE)	\
	X(IMSG_VMM_SNAPSHOT_DONE,	537,	IMSG_NONE)		\
	X(IMSG_VMM_INCOMING,		538,	IMSG_VMM_OK)		\
	X(IMSG_VMM_IDENTITY,		539,	IMSG_VMM_OK)

enum imsg_type {
	IMSG_NONE = 0,
#define IMSG_ENUM(name, val, reply)	name = val,
	IMSG_TYPES(IMSG_ENUM)
#undef IMSG_ENUM
};

const char	*imsg_type_name(uint32_t);
uint32_t	 imsg_reply_type(uint32_t);

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
 * The fd QEMU reads a checkpoint from (mcvmd places it; the monitor's
 * migrate-incoming names it).
 */
#define QEMU_INCOMING_FD	8

/*
 * The id of a VM's RAM block when QEMU maps it from a file (mcvmd's
 * memory-backend-file), the machine's own: the block a relative
 * checkpoint (the monitor's) leaves pages of out.
 */
#define QEMU_RAM_ID		"pc.ram"

/* IMSG_STORE_FD roles */
enum store_fd_role {
	STORE_FD_DISK = 1,	/* the VM's disk, read-write */
	STORE_FD_BASE,		/* an overlay's base image, read-only */
	STORE_FD_KERNEL,	/* read-only */
	STORE_FD_INITRD,	/* read-only */
	STORE_FD_CHECKPOINT,	/* a migration stream, see STORE_CHECKPOINT */
	STORE_FD_CD,		/* the install ISO, read-only */
	STORE_FD_CODE,		/* UEFI firmware code, read-only */
	STORE_FD_VARS,		/* the VM's own UEFI variables */
	STORE_FD_DISK2,		/* disks 2-4 of a VM from its own disks, */
	STORE_FD_BASE2,		/* each with its overlay's base */
	STORE_FD_DISK3,
	STORE_FD_BASE3,
	STORE_FD_DISK4,
	STORE_FD_BASE4,
	STORE_FD_STATE,		/* a raw disk's snapshot state, qcow2 */
	STORE_FD_IMAGE,		/* an image's bytes: SIO_UPLOAD, SIO_DOWNLOAD */
	STORE_FD_RAM,		/* a template's RAM file, read-only */
};
#define STORE_FD_MAX		STORE_FD_RAM
/* Disk i (0-3) of a VM from its own disks, and its base. */
#define STORE_FD_DISK_N(i)	((i) == 0 ? STORE_FD_DISK : \
				    STORE_FD_DISK2 + 2 * ((i) - 1))
#define STORE_FD_BASE_N(i)	((i) == 0 ? STORE_FD_BASE : \
				    STORE_FD_BASE2 + 2 * ((i) - 1))
#define VM_DISKS_MAX		4	/* disks of a VM from its own disks */

/* A VM's firmware and machine (vm_create's firmware and machine). */
enum vm_firmware {
	FW_BIOS = 0,
	FW_UEFI,
};
enum vm_machine {
	MACH_Q35 = 0,
	MACH_PC,
};

/* IMSG_NET_FD roles */
enum net_fd_role {
	NET_FD_NETNS = 1,	/* the VM's network namespace */
	NET_FD_TAP,		/* the tap in it, for -netdev tap,fd= */
};

enum disk_format {
	DISK_RAW = 0,		/* a reflink clone of a raw base */
	DISK_QCOW2,		/* a qcow2 overlay on STORE_FD_BASE */
};

/* A workspace image's format: its file's suffix in the store. */
enum image_format {
	IMG_QCOW2 = 0,
	IMG_RAW,
	IMG_VMDK,
	IMG_VDI,
	IMG_VHDX,
	IMG_ISO,		/* an ISO 9660 image, read as raw */
	IMG_NFORMATS,
};

/* IMSG_STORE_IMAGE operations */
enum store_image_op {
	SIO_LIST = 0,		/* every image of the workspace */
	SIO_CREATE,		/* name, format, bytes, base */
	SIO_INFO,		/* name; SIF_CHAIN: and its backing chain */
	SIO_CONVERT,		/* name into dest of format */
	SIO_RESIZE,		/* name to bytes */
	SIO_DELETE,		/* name */
	SIO_SNAP_CREATE,	/* name, tag */
	SIO_SNAP_APPLY,
	SIO_SNAP_DELETE,
	SIO_SNAP_LIST,		/* name */
	SIO_UPLOAD,		/* name, bytes: STORE_FD (a pipe to fill) */
	SIO_DOWNLOAD,		/* name: STORE_FD (the image, read-only) */
	SIO_NOPS,
};
#define SIF_OVERWRITE		0x01	/* create, convert: replace dest */
#define SIF_SHRINK		0x02	/* resize: may shrink */
#define SIF_GROW		0x04	/* resize: bytes is added */
#define SIF_COMPRESS		0x08	/* convert */
#define SIF_CHAIN		0x10	/* info */
#define SIF_BASE_CATALOG	0x20	/* create: base is a catalog image */
#define SIF_ALL			0x3f

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

/* A workspace's limits that mcvmctl set-quota set, over the config's. */
#define QUOTA_VMS		0x1
#define QUOTA_MEMORY		0x2
#define QUOTA_VCPUS		0x4
#define QUOTA_STORAGE		0x8
#define QUOTA_ALL		0xf

#endif
