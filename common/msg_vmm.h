/*
 * The codecs of the monitor's messages (IMSG_VMM_*), called by mcvmd and
 * mcvm-vmm alike.  For IMSG_FOO a struct msg_foo, msg_foo_put() and
 * msg_foo_get(); a message without fields has only its getter, which
 * checks that the payload is empty.
 *
 * The rules of every codec header (msg_*.h):
 *  - A getter returns 0, or -1 with errno EBADMSG when the imsg is of
 *    another type, a field is missing or has the wrong tag, a value is
 *    out of its bound, or bytes are left over.  It checks every bound
 *    named beside the field; the sender is never trusted.
 *  - Strings and byte ranges are pointers into the imsg: they live until
 *    imsg_free() and must be copied to outlive it.  Fixed-length fields
 *    (token hashes) are arrays, copied.  Strings are NUL-terminated, and
 *    a string's bound is in bytes before the NUL.
 *  - A putter writes what it is given, after imsg_create(); only a count
 *    beyond its array sets the ibuf's error (EMSGSIZE), as does a message
 *    too large.  Check b->err, or let imsg_close() refuse it.
 *  - An fd that travels with a message is the caller's, on both sides.
 *
 * The requests describe the operation, not the agent's wire format: a
 * guest back end maps them to its own protocol.
 */
#ifndef MCVM_MSG_VMM_H
#define MCVM_MSG_VMM_H

#include <stddef.h>
#include <stdint.h>

#include "agent_proto.h"
#include "imsg.h"
#include "msg.h"
#include "utf8.h"

#define VMM_DETAIL_MAX		255	/* an event's detail */
#define VMM_QMP_STATUS_MAX	63	/* QEMU's run state name */
#define VMM_TEXT_MAX		UTF8_DECODED_MAX(AGENT_PAGE_MAX)
					/* a decoded output page */
#define VMM_NSEC_MAX		999999999U

/* IMSG_VMM_READY: the guest answered; strings < AGENT_INFO_STR_MAX */
struct msg_vmm_ready {
	const char	*agent_version;
	const char	*os;
	const char	*kernel;
};

/* IMSG_VMM_EVENT, unasked */
struct msg_vmm_event {
	uint32_t	 event;		/* enum vmm_event */
	const char	*detail;	/* VMM_DETAIL_MAX */
};

/* IMSG_VMM_ERROR: ends any request instead of its reply */
struct msg_vmm_error {
	uint32_t	 code;		/* AGENT_ERR_* or VMM_ERR_* */
	uint32_t	 sys_errno;
	const char	*message;	/* < AGENT_ERRMSG_MAX, UTF-8 */
};

/* IMSG_VMM_OK */
struct msg_vmm_ok {
	uint32_t	 value;		/* FREEZE: the jobs frozen; else 0 */
};

/* IMSG_VMM_QMP_STATE, the reply to QMP_STATUS */
struct msg_vmm_qmp_state {
	const char	*status;	/* VMM_QMP_STATUS_MAX, UTF-8 */
	uint32_t	 running;	/* 0 or 1 */
};

/* IMSG_VMM_EXEC -> JOB */
struct msg_vmm_exec {
	uint32_t	 flags;		/* AGENT_EXEC_FLAGS */
	uint32_t	 timeout_ms;	/* 0 none, AGENT_TIMEOUT_MAX_MS */
	const char	*cwd;		/* < AGENT_PATH_MAX */
	uint32_t	 argc;		/* 1..AGENT_ARGC_MAX; 1 with SHELL */
	const char	*argv[AGENT_ARGC_MAX];	/* each < AGENT_ARG_MAX */
	uint32_t	 envc;		/* AGENT_ENVC_MAX */
	const char	*env[AGENT_ENVC_MAX];	/* each < AGENT_ARG_MAX */
					/* argv and env with their NULs:
					   AGENT_ARGS_TOTAL_MAX */
	const void	*input;		/* stdin, AGENT_STDIN_MAX */
	size_t		 input_len;
};

/* IMSG_VMM_JOB, the reply to EXEC */
struct msg_vmm_job {
	uint32_t	 job;
};

/* IMSG_VMM_JOB_STATUS and JOB_CANCEL -> JOB_STATE */
struct msg_vmm_job_status {
	uint32_t	 job;
};

struct msg_vmm_job_cancel {
	uint32_t	 job;
};

/* A job's status, as JOB_STATE and JOB_OUTPUT carry it. */
struct msg_job_status {
	uint32_t	 job;
	uint32_t	 state;		/* AGENT_JOB_RUNNING.._STATE_MAX - 1 */
	uint32_t	 out_eof;	/* 0 or 1 */
	uint32_t	 err_eof;
	int32_t		 exit_code;
	int32_t		 signal;
	uint64_t	 out_total;
	uint64_t	 err_total;
	uint64_t	 out_gap;	/* agent_stream_ok() with the total */
	uint64_t	 out_dropped;
	uint64_t	 err_gap;
	uint64_t	 err_dropped;
	uint64_t	 runtime_ms;
};

struct msg_vmm_job_state {
	struct msg_job_status	 st;
};

/* IMSG_VMM_JOB_READ -> JOB_OUTPUT */
struct msg_vmm_job_read {
	uint32_t	 job;
	uint64_t	 out_cursor;
	uint64_t	 err_cursor;
	uint32_t	 out_max;	/* AGENT_PAGE_MAX */
	uint32_t	 err_max;	/* AGENT_PAGE_MAX */
	uint32_t	 encoding;	/* VMM_ENC_* */
	uint32_t	 wait_ms;	/* AGENT_WAIT_MAX_MS */
};

/*
 * IMSG_VMM_JOB_OUTPUT: the pages as text the monitor decoded (UTF-8
 * or base64, as asked), each with the bytes skipped over the gap before
 * it (at most the gap's), the cursor after it (at most the stream's
 * total) and whether decoding met errors (0 or 1).
 */
struct msg_vmm_job_output {
	struct msg_job_status	 st;
	uint64_t	 out_skipped;
	uint64_t	 out_next;
	const char	*out;		/* VMM_TEXT_MAX, UTF-8 */
	uint32_t	 out_errors;
	uint64_t	 err_skipped;
	uint64_t	 err_next;
	const char	*err;		/* VMM_TEXT_MAX, UTF-8 */
	uint32_t	 err_errors;
};

/* IMSG_VMM_FILE_READ -> FILE_DATA */
struct msg_vmm_file_read {
	const char	*path;		/* < AGENT_PATH_MAX */
	uint64_t	 offset;
	uint32_t	 length;	/* AGENT_FILE_CHUNK_MAX */
	uint32_t	 encoding;	/* VMM_ENC_*: see FILE_DATA */
};

/*
 * With VMM_ENC_UTF8 asked, bytes that are UTF-8 text (without NUL) come
 * back as text: a character cut at the end of what was read is left for
 * the next read (len says what was kept, eof is then 0).  Anything else,
 * and everything with VMM_ENC_BASE64, comes back as the bytes read.
 */
struct msg_vmm_file_data {
	uint64_t	 offset;
	uint64_t	 size;		/* the file's */
	uint32_t	 eof;		/* 0 or 1 */
	uint32_t	 text;		/* 0 or 1: data is UTF-8 without NUL */
	const void	*data;		/* AGENT_FILE_CHUNK_MAX */
	size_t		 len;
};

/* IMSG_VMM_FILE_WRITE -> FILE_WRITTEN */
struct msg_vmm_file_write {
	const char	*path;		/* < AGENT_PATH_MAX */
	uint32_t	 flags;		/* AGENT_WRITE_FLAGS */
	uint64_t	 offset;
	uint32_t	 mode;		/* 07777 */
	const void	*data;		/* AGENT_FILE_CHUNK_MAX */
	size_t		 len;
};

struct msg_vmm_file_written {
	uint64_t	 size;		/* the file's */
	uint32_t	 written;	/* AGENT_FILE_CHUNK_MAX */
};

/* IMSG_VMM_FILE_LIST -> FILE_ENTRIES */
struct msg_vmm_file_list {
	const char	*path;		/* < AGENT_PATH_MAX */
	uint32_t	 depth;		/* 1..AGENT_LIST_DEPTH_MAX */
	uint32_t	 max;		/* 1..AGENT_LIST_MAX */
};

/* A listed name, as text: the guest's bytes decoded by the monitor. */
#define VMM_NAME_MAX		UTF8_DECODED_MAX(AGENT_PATH_MAX - 1)
#define VMM_NAMES_MAX		UTF8_DECODED_MAX(AGENT_LIST_BYTES_MAX)
					/* all of a listing's names */

struct msg_vmm_dirent {
	const char	*name;		/* VMM_NAME_MAX, UTF-8, not empty */
	uint32_t	 type;		/* AGENT_FTYPE_* */
	uint32_t	 mode;		/* 07777 */
	uint64_t	 size;
	int64_t		 mtime;
};

struct msg_vmm_file_entries {
	uint32_t		 truncated;	/* 0 or 1 */
	uint32_t		 count;		/* AGENT_LIST_MAX; names
						   VMM_NAMES_MAX together */
	struct msg_vmm_dirent	 ents[AGENT_LIST_MAX];
};

/* IMSG_VMM_GUEST_INFO_RESULT; strings < AGENT_INFO_STR_MAX, UTF-8 */
struct msg_vmm_guest_job {
	uint32_t	 job;		/* the guest's number, not 0 */
	uint32_t	 state;		/* AGENT_JOB_* */
};
struct msg_vmm_guest_info_result {
	const char	*os;
	const char	*kernel;
	const char	*agent_version;
	uint64_t	 uptime_ms;
	uint32_t	 jobs_active;
	uint32_t	 jobs_total;
	uint32_t	 frozen;	/* 0 or 1 */
	uint32_t	 njobs;		/* AGENT_JOBS_TOTAL_MAX */
	struct msg_vmm_guest_job jobs[AGENT_JOBS_TOTAL_MAX];
};

/* IMSG_VMM_SET_TIME -> OK */
struct msg_vmm_set_time {
	uint64_t	 sec;		/* INT64_MAX */
	uint32_t	 nsec;		/* VMM_NSEC_MAX */
};

/*
 * IMSG_VMM_IDENTITY -> OK: the VM's host name from now on, for this
 * session and the next (a warm clone's, once a vm_create took it); the
 * machine id stays.
 */
struct msg_vmm_identity {
	const char	*hostname;	/* agent_valid_hostname */
};

/* IMSG_VMM_NET_CONFIG -> OK; strings < AGENT_NET_STR_MAX */
struct msg_vmm_net_config {
	const char	*address;	/* a.b.c.d/n */
	const char	*gateway;
	const char	*resolver;
	const char	*mac;
};

void	 msg_vmm_ready_put(struct ibuf *, const struct msg_vmm_ready *);
int	 msg_vmm_ready_get(struct imsg *, struct msg_vmm_ready *);
void	 msg_vmm_event_put(struct ibuf *, const struct msg_vmm_event *);
int	 msg_vmm_event_get(struct imsg *, struct msg_vmm_event *);
void	 msg_vmm_error_put(struct ibuf *, const struct msg_vmm_error *);
int	 msg_vmm_error_get(struct imsg *, struct msg_vmm_error *);
int	 msg_vmm_error_code_valid(uint32_t);
void	 msg_vmm_ok_put(struct ibuf *, const struct msg_vmm_ok *);
int	 msg_vmm_ok_get(struct imsg *, struct msg_vmm_ok *);
int	 msg_vmm_qmp_status_get(struct imsg *);
void	 msg_vmm_qmp_state_put(struct ibuf *,
	    const struct msg_vmm_qmp_state *);
int	 msg_vmm_qmp_state_get(struct imsg *, struct msg_vmm_qmp_state *);
int	 msg_vmm_pause_get(struct imsg *);
int	 msg_vmm_cont_get(struct imsg *);
int	 msg_vmm_powerdown_get(struct imsg *);
int	 msg_vmm_quit_get(struct imsg *);
void	 msg_vmm_exec_put(struct ibuf *, const struct msg_vmm_exec *);
int	 msg_vmm_exec_get(struct imsg *, struct msg_vmm_exec *);
void	 msg_vmm_job_put(struct ibuf *, const struct msg_vmm_job *);
int	 msg_vmm_job_get(struct imsg *, struct msg_vmm_job *);
void	 msg_vmm_job_status_put(struct ibuf *,
	    const struct msg_vmm_job_status *);
int	 msg_vmm_job_status_get(struct imsg *, struct msg_vmm_job_status *);
void	 msg_vmm_job_cancel_put(struct ibuf *,
	    const struct msg_vmm_job_cancel *);
int	 msg_vmm_job_cancel_get(struct imsg *, struct msg_vmm_job_cancel *);
void	 msg_vmm_job_state_put(struct ibuf *,
	    const struct msg_vmm_job_state *);
int	 msg_vmm_job_state_get(struct imsg *, struct msg_vmm_job_state *);
void	 msg_vmm_job_read_put(struct ibuf *, const struct msg_vmm_job_read *);
int	 msg_vmm_job_read_get(struct imsg *, struct msg_vmm_job_read *);
void	 msg_vmm_job_output_put(struct ibuf *,
	    const struct msg_vmm_job_output *);
int	 msg_vmm_job_output_get(struct imsg *, struct msg_vmm_job_output *);
void	 msg_vmm_file_read_put(struct ibuf *,
	    const struct msg_vmm_file_read *);
int	 msg_vmm_file_read_get(struct imsg *, struct msg_vmm_file_read *);
void	 msg_vmm_file_data_put(struct ibuf *,
	    const struct msg_vmm_file_data *);
int	 msg_vmm_file_data_get(struct imsg *, struct msg_vmm_file_data *);
void	 msg_vmm_file_write_put(struct ibuf *,
	    const struct msg_vmm_file_write *);
int	 msg_vmm_file_write_get(struct imsg *, struct msg_vmm_file_write *);
void	 msg_vmm_file_written_put(struct ibuf *,
	    const struct msg_vmm_file_written *);
int	 msg_vmm_file_written_get(struct imsg *,
	    struct msg_vmm_file_written *);
void	 msg_vmm_file_list_put(struct ibuf *,
	    const struct msg_vmm_file_list *);
int	 msg_vmm_file_list_get(struct imsg *, struct msg_vmm_file_list *);
void	 msg_vmm_file_entries_put(struct ibuf *,
	    const struct msg_vmm_file_entries *);
int	 msg_vmm_file_entries_get(struct imsg *,
	    struct msg_vmm_file_entries *);
int	 msg_vmm_guest_info_get(struct imsg *);
void	 msg_vmm_guest_info_result_put(struct ibuf *,
	    const struct msg_vmm_guest_info_result *);
int	 msg_vmm_guest_info_result_get(struct imsg *,
	    struct msg_vmm_guest_info_result *);
int	 msg_vmm_freeze_get(struct imsg *);
int	 msg_vmm_thaw_get(struct imsg *);
void	 msg_vmm_set_time_put(struct ibuf *, const struct msg_vmm_set_time *);
int	 msg_vmm_set_time_get(struct imsg *, struct msg_vmm_set_time *);
void	 msg_vmm_identity_put(struct ibuf *, const struct msg_vmm_identity *);
int	 msg_vmm_identity_get(struct imsg *, struct msg_vmm_identity *);
int	 msg_vmm_guest_poweroff_get(struct imsg *);
void	 msg_vmm_net_config_put(struct ibuf *,
	    const struct msg_vmm_net_config *);
int	 msg_vmm_net_config_get(struct imsg *, struct msg_vmm_net_config *);
/*
 * IMSG_VMM_CHECKPOINT (the stream's fd with it) and IMSG_VMM_INCOMING ->
 * OK: a checkpoint written, or loaded.  shared: with x-ignore-shared, as
 * a shared template's is (the RAM it maps shared from a file is not in
 * it); both ends of one checkpoint say the same.  durable: fsynced before
 * the answer (a hibernation's; a fork's lives only as long as its run).
 * relative: without the pages that hold what the RAM file QEMU maps
 * copy-on-write holds (vmm/ramdiff.h), for a QEMU that maps the same file
 * to load; the monitor must have that file (VMM_RAM_FILENO).
 */
struct msg_vmm_checkpoint {
	uint32_t	 shared;	/* 0 or 1 */
	uint32_t	 durable;	/* 0 or 1 */
	uint32_t	 relative;	/* 0 or 1 */
};
struct msg_vmm_incoming {
	uint32_t	 shared;	/* 0 or 1 */
};
void	 msg_vmm_checkpoint_put(struct ibuf *,
	    const struct msg_vmm_checkpoint *);
int	 msg_vmm_checkpoint_get(struct imsg *, struct msg_vmm_checkpoint *);
void	 msg_vmm_incoming_put(struct ibuf *, const struct msg_vmm_incoming *);
int	 msg_vmm_incoming_get(struct imsg *, struct msg_vmm_incoming *);

/*
 * IMSG_VMM_SCREENSHOT -> SCREENSHOT_DONE.  The request has no fields; a
 * memfd travels with it, into which the monitor copies the PNG QEMU
 * writes (never QEMU itself: it writes a pipe the monitor reads), checked
 * and within VMM_SCREENSHOT_MAX.  The answer says what it holds.
 */
#define VMM_SCREENSHOT_MAX	(4 * 1024 * 1024)	/* PNG bytes */
#define VMM_DISPLAY_MAX		16384	/* pixels of a side */
struct msg_vmm_screenshot_done {
	uint32_t	 width;		/* 1..VMM_DISPLAY_MAX */
	uint32_t	 height;	/* 1..VMM_DISPLAY_MAX */
	uint64_t	 bytes;		/* 1..VMM_SCREENSHOT_MAX */
};

/*
 * IMSG_VMM_INPUT -> OK: input events for QEMU to send the guest, in
 * order.  The events between two waits go to QEMU at once (one
 * input-send-event), at most VMM_INPUT_FRAME_MAX of them; a wait ends
 * that batch and pauses for its value in ms (0: no pause).  Keys are
 * indexes of key_names[] (keys.h), buttons VMM_BTN_*, axes VMM_AXIS_*.
 */
#define VMM_INPUT_MAX		24576	/* events of one request */
#define VMM_INPUT_FRAME_MAX	16	/* events sent at once */
#define VMM_INPUT_WAIT_MAX	2000	/* ms of one wait */
#define VMM_INPUT_TIME_MAX	120000	/* ms of all waits */
#define VMM_ABS_MAX		32767	/* the tablet's range: 0..this */
#define VMM_REL_MAX		127	/* one relative motion, either way */
#define VMM_INPUT_LEN		8	/* bytes of one event on the wire */
enum vmm_input_kind {
	VMM_IN_KEY = 1,
	VMM_IN_BTN,
	VMM_IN_ABS,
	VMM_IN_REL,
	VMM_IN_WAIT,
};
enum { VMM_BTN_LEFT, VMM_BTN_RIGHT, VMM_BTN_MIDDLE, VMM_BTN_COUNT };
enum { VMM_AXIS_X, VMM_AXIS_Y };
struct vmm_input {
	uint8_t		 kind;		/* enum vmm_input_kind */
	uint8_t		 down;		/* KEY, BTN: 1 pressed, 0 released */
	uint16_t	 code;		/* KEY: key; BTN: button; ABS, REL:
					   axis */
	int32_t		 value;		/* ABS: 0..VMM_ABS_MAX; REL:
					   -VMM_REL_MAX..VMM_REL_MAX; WAIT:
					   ms */
};
struct msg_vmm_input {
	const void	*wire;		/* n events, msg_vmm_input_pack()ed */
	size_t		 n;		/* 1..VMM_INPUT_MAX */
	uint32_t	 wait_ms;	/* get: the waits' sum */
};

/*
 * IMSG_VMM_SERIAL_READ -> SERIAL_DATA.  The request has no fields.  The
 * answer is the end of what the guest wrote to its serial console, as
 * far as the monitor keeps it (VMM_SERIAL_RING bytes), at most
 * VMM_SERIAL_OUT_MAX of it, decoded (invalid UTF-8 replaced).
 */
#define VMM_SERIAL_RING		(256 * 1024)
#define VMM_SERIAL_OUT_MAX	(64 * 1024)
struct msg_vmm_serial_data {
	uint64_t	 total;		/* bytes the console wrote, seen */
	uint32_t	 whole;		/* 1: data begins where a line does */
	uint32_t	 replaced;	/* 1: invalid UTF-8 was replaced */
	const void	*data;		/* VMM_SERIAL_OUT_MAX, UTF-8; up
					   to 3 bytes per byte seen */
	size_t		 len;
};

int	 msg_vmm_screenshot_get(struct imsg *);
void	 msg_vmm_screenshot_done_put(struct ibuf *,
	    const struct msg_vmm_screenshot_done *);
int	 msg_vmm_screenshot_done_get(struct imsg *,
	    struct msg_vmm_screenshot_done *);
void	 msg_vmm_input_put(struct ibuf *, const struct msg_vmm_input *);
int	 msg_vmm_input_get(struct imsg *, struct msg_vmm_input *);
void	 msg_vmm_input_pack(const struct vmm_input *, uint8_t *);
void	 msg_vmm_input_event(const struct msg_vmm_input *, size_t,
	    struct vmm_input *);
int	 msg_vmm_serial_read_get(struct imsg *);
void	 msg_vmm_serial_data_put(struct ibuf *,
	    const struct msg_vmm_serial_data *);
int	 msg_vmm_serial_data_get(struct imsg *,
	    struct msg_vmm_serial_data *);

/*
 * IMSG_VMM_SNAPSHOT -> SNAPSHOT_DONE: a live snapshot of the VM's RAM,
 * devices and disk, internal to a qcow2 node (QEMU's snapshot-save,
 * snapshot-load and snapshot-delete jobs): its overlay, or for a raw
 * disk the device-less state node beside it, whose disk half mcvmd has
 * stored clone (STORE_VM_SNAPSHOT).  A save answers the bytes of state
 * it wrote, the others 0; found says whether the tag was on the node (a
 * delete of one that is not is done at once).  hold: the vCPUs are
 * stopped first and, once the save or load is done, left stopped for
 * the disk's clone (mcvmd sends CONT); a failure that changed nothing
 * leaves them as they were.
 */
enum vmm_snap_op {
	VMM_SNAP_SAVE = 1,
	VMM_SNAP_LOAD,
	VMM_SNAP_DELETE,
};
#define VMM_SNAP_TIMEOUT_MS	180000	/* a job, start to dismissal */
#define VMM_SNAP_SIZE_MAX	INT64_MAX
#define VMM_SNAP_PER_VM_MAX	16	/* live snapshots a VM keeps (mcvmd) */
struct msg_vmm_snapshot {
	uint32_t	 op;		/* VMM_SNAP_* */
	const char	*tag;		/* valid_snapshot_tag() */
	uint32_t	 hold;		/* 0 or 1 */
};
struct msg_vmm_snapshot_done {
	uint64_t	 vm_size;	/* VMM_SNAP_SIZE_MAX */
	uint32_t	 found;		/* 0 or 1 */
};
void	 msg_vmm_snapshot_put(struct ibuf *, const struct msg_vmm_snapshot *);
int	 msg_vmm_snapshot_get(struct imsg *, struct msg_vmm_snapshot *);
void	 msg_vmm_snapshot_done_put(struct ibuf *,
	    const struct msg_vmm_snapshot_done *);
int	 msg_vmm_snapshot_done_get(struct imsg *,
	    struct msg_vmm_snapshot_done *);

/* The job status fields alone, for codecs that embed them. */
void	 msg_job_status_put(struct ibuf *, const struct msg_job_status *);
int	 msg_job_status_get(struct mreader *, struct msg_job_status *);

#endif
