/*
 * The guest agent protocol, spoken over the virtio-serial port
 * org.mcvm.agent.0 between the VM monitor (host) and mcvm-guestd (guest).
 *
 * Every integer is little-endian, defined byte for byte; nothing is ever
 * cast from or to a struct on the wire.  A frame is a 16-byte header
 * followed by its payload:
 *
 *	u32 magic	AGENT_MAGIC ("MCVA")
 *	u16 type	enum agent_type; replies have AGENT_REPLY set
 *	u16 reserved	must be 0
 *	u32 id		request id, echoed in the reply
 *	u32 length	payload bytes, at most AGENT_PAYLOAD_MAX
 *
 * Payload fields are, in order, one of:
 *	u8, u32, i32, u64, i64	1, 4, 4, 8, 8 bytes
 *	str			u32 length (terminating NUL included), the
 *				bytes; the NUL is the last byte and the only
 *				one, and length is bounded per field
 *	bytes			u32 length, the bytes, bounded per field
 * and a payload must be consumed exactly: trailing bytes are an error.
 *
 * The host opens a session with AGENT_HELLO carrying the version it
 * speaks; the agent answers with its own and serves other requests only
 * after that.  A new HELLO restarts the session (after the host reconnects
 * or a snapshot is restored); jobs survive.  Every request gets exactly
 * one reply with the same id: AGENT_REPLY|type, or AGENT_ERROR.  A
 * request of a type the agent does not know is answered with
 * AGENT_ERR_UNKNOWN.  A malformed frame costs the connection: the agent
 * answers with AGENT_ERR_PROTO (id 0) and discards input until the next
 * HELLO header.  Bytes of an old connection may still sit in the guest's
 * buffers after a reconnect or a restore, so the host resends HELLO
 * (with a new id) until it is answered, ignoring replies to other ids;
 * a host that reads a malformed frame header from the guest closes the
 * socket and connects again (or, unable to, gives the channel up).
 *
 * Message payloads (requests →, replies ←):
 *
 * HELLO	→ u32 version
 *		← u32 version, str agent_version
 * PING		→ (empty)			← (empty)
 * INFO		→ (empty)
 *		← str os, str kernel, str agent_version, u64 uptime_ms,
 *		  u32 jobs_active, u32 jobs_total, u32 jobs_active_max,
 *		  u32 jobs_total_max, u8 frozen, bytes job_states
 *		  jobs_active: the jobs running, and the ended ones whose
 *		  processes live on in their cgroup (a daemon they left);
 *		  job_states: for each job kept (jobs_total of them), u32
 *		  job and u8 state (AGENT_JOB_*), AGENT_JOBSTATE_LEN bytes
 * EXEC		→ u32 flags (AGENT_EXEC_*), u32 timeout_ms (0: none),
 *		  str cwd (relative to /workspace, "" for itself),
 *		  u32 argc, str argv[argc], u32 envc, str env[envc],
 *		  bytes stdin
 *		  with AGENT_EXEC_SHELL, argc is 1 and argv[0] is the command
 *		  given to /bin/bash -c
 *		← u32 job
 * JOB_STATUS	→ u32 job			← status
 * JOB_READ	→ u32 job, u64 out_cursor, u64 err_cursor, u32 out_max,
 *		  u32 err_max, u32 wait_ms (at most AGENT_WAIT_MAX_MS)
 *		← status, u64 out_cursor, u64 out_skipped, bytes out,
 *		  u64 err_cursor, u64 err_skipped, bytes err
 *		  with wait_ms, a running job's answer waits until the job
 *		  ends or wait_ms pass; other requests are served meanwhile.
 *		  Cursors are byte offsets in the stream as the job wrote
 *		  it.  One past its stream's end (which no answer ever
 *		  gave: the end only grows) is refused with
 *		  AGENT_ERR_INVAL, the message naming the valid range
 *		  ("valid cursors are 0 to N").  The reply's cursors are
 *		  the request's; a cursor inside the gap (below) reads from
 *		  the gap's end, and *_skipped says how far on that is (0
 *		  otherwise).  A page never spans the gap.
 * JOB_CANCEL	→ u32 job			← status
 * FILE_READ	→ str path, u64 offset, u32 length
 *		← u64 offset, u64 size, u8 eof, bytes data
 * FILE_WRITE	→ str path, u32 flags (AGENT_WRITE_*), u64 offset,
 *		  u32 mode (permission bits, 0: 0644), bytes data
 *		← u64 size, u32 written
 * FILE_LIST	→ str path (a directory), u32 depth
 *		  (1..AGENT_LIST_DEPTH_MAX), u32 max (1..AGENT_LIST_MAX)
 *		← u8 truncated, u32 count (at most max), bytes entries
 *		  (AGENT_LIST_BYTES_MAX), count entries back to back, each
 *		  str name (relative to path, "/" between levels), u8 type
 *		  (AGENT_FTYPE_*), u32 mode (permission bits), u64 size,
 *		  i64 mtime (seconds); decoded one by one with
 *		  agent_dirent_next(), which agent_decode() has run over
 *		  them all.  Symlinks are listed, never followed;
 *		  truncated says entries were left out (max, the byte
 *		  bound, a name too long)
 * FREEZE	→ (empty)			← u32 jobs_frozen
 * THAW		→ (empty)			← (empty)
 * SET_TIME	→ i64 sec, u32 nsec		← (empty)
 * SEED		→ bytes seed (AGENT_SEED_LEN)	← (empty)
 *		  host randomness, credited to the guest's pool, which is
 *		  then reseeded: a VM restored from a checkpoint must not
 *		  share its random numbers with its siblings
 * IDENTITY	→ str hostname, str machine_id	← (empty)
 *		  the VM's host name (agent_valid_hostname) and machine id
 *		  (AGENT_MACHINE_ID_LEN lower-case hex digits), which the
 *		  guest takes where they differ from its own: a VM restored
 *		  from a checkpoint has its template's
 * POWEROFF	→ (empty)			← (empty), then the guest stops
 * NET_CONFIG	→ str address ("a.b.c.d/n"), str gateway ("" none: no
 *		  default route), str resolver ("" none), str mac (the
 *		  NIC's, "52:54:00:..")
 *		← (empty)
 * ERROR	← u32 code (AGENT_ERR_*), i32 errno, str message
 *
 * status is: u32 job, u8 state (AGENT_JOB_*), u8 out_eof, u8 err_eof,
 *	i32 exit_code, i32 signal, u64 out_total, u64 err_total,
 *	u64 out_gap, u64 out_dropped, u64 err_gap, u64 err_dropped,
 *	u64 runtime_ms
 * *_total counts every byte the job wrote to the stream; *_eof is set
 * once the stream is closed and fully drained.  Of each stream the agent
 * keeps the first AGENT_JOB_HEAD_MAX bytes and the last
 * AGENT_JOB_TAIL_MAX; *_dropped bytes from offset *_gap on were dropped
 * (both 0 while none were).  The gap is widened to UTF-8 character
 * boundaries (by at most 3 bytes on each side), so that text on either
 * side decodes.
 * A job the agent killed (cancelled, timed out) has signal 9 and
 * exit_code -1 from its first report in that state on.
 *
 * Jobs: ids grow from 1 for the boot and are never reused.  The agent
 * keeps AGENT_JOBS_TOTAL_MAX jobs; a new one evicts the job that ended
 * (and was reaped) first, whose id then answers AGENT_ERR_EXPIRED (an id
 * never given answers AGENT_ERR_NOJOB).  Running jobs are never evicted:
 * with every slot running, EXEC answers AGENT_ERR_LIMIT.  INFO's
 * jobs_total counts the jobs kept, jobs_total_max the slots.
 *
 * A reply the host cannot use (it does not decode, or is not of its
 * request's type) fails the request it answers and nothing else.  Error
 * messages are meant as UTF-8, cut on a character boundary; the host
 * replaces whatever is not.
 *
 * Version 5 added FILE_LIST and INFO's job_states.  Version 4 keeps each stream's head and
 * tail, with the gap between them in the status and the skip in
 * JOB_READ's reply (version 3 kept the first 256 KiB of both streams,
 * and said only "truncated").  Version 3 added AGENT_ERR_EXPIRED, the
 * eviction and the refusal of cursors past the end (version 2 echoed
 * them, and answered 256 jobs per boot).
 */
#ifndef MCVM_AGENT_PROTO_H
#define MCVM_AGENT_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define AGENT_PORT_NAME		"org.mcvm.agent.0"

/*
 * The kernel command line of the project's guest image.  No ACPI: it
 * boots 1.5 s sooner under TCG, and the guest powers off by resetting,
 * which ends QEMU as mcvm runs it (-no-reboot).  Without ACPI there is no
 * MSI either: pci=nomsi spares the failed attempt and its warning.  The
 * crypto self-tests of every algorithm took 0.4 s of each boot under TCG.
 */
#define AGENT_KERNEL_APPEND	"console=ttyS0 root=/dev/vda rw panic=-1 " \
	"quiet acpi=off pci=nomsi cryptomgr.notests"
/*
 * Under TCG, QEMU finds translated code by guest virtual address: with
 * address space randomisation every exec maps ld.so and libc somewhere
 * new and QEMU translates them again (a fork+exec of /bin/true costs
 * 45-80 ms instead of 11-15 ms).  Emulated code does not speculate the
 * guest's way either, so its mitigations only cost time.  Everything in
 * the guest belongs to one workspace: the VM is the boundary mcvm relies
 * on, not these.  Under KVM the guest keeps both.
 */
#define AGENT_KERNEL_APPEND_TCG	AGENT_KERNEL_APPEND \
	" norandmaps mitigations=off"
#define AGENT_PROTO_VERSION	5
#define AGENT_MAGIC		0x4156434dU	/* "MCVA" */
#define AGENT_HDR_LEN		16

/* Bounds on every length in the protocol. */
#define AGENT_FILE_CHUNK_MAX	(128 * 1024)	/* bytes per file call */
#define AGENT_PAGE_MAX		(16 * 1024)	/* bytes per stream per read */
#define AGENT_STDIN_MAX		(64 * 1024)
#define AGENT_PAYLOAD_MAX	(AGENT_FILE_CHUNK_MAX + 8192)
#define AGENT_FRAME_MAX		(AGENT_HDR_LEN + AGENT_PAYLOAD_MAX)
#define AGENT_PATH_MAX		4096		/* with the NUL */
#define AGENT_ARG_MAX		(32 * 1024)	/* one argv/env string */
#define AGENT_ARGC_MAX		256
#define AGENT_ENVC_MAX		128
#define AGENT_ARGS_TOTAL_MAX	(64 * 1024)	/* all argv and env bytes */
#define AGENT_INFO_STR_MAX	256
#define AGENT_ERRMSG_MAX	256
#define AGENT_NET_STR_MAX	64		/* NET_CONFIG strings */
#define AGENT_SEED_LEN		32		/* SEED bytes */
#define AGENT_HOSTNAME_MAX	63		/* IDENTITY hostname */
#define AGENT_MACHINE_ID_LEN	32		/* IDENTITY machine_id */
#define AGENT_TIMEOUT_MAX_MS	(7U * 24 * 3600 * 1000)
#define AGENT_WAIT_MAX_MS	(60U * 1000)	/* JOB_READ wait_ms */
#define AGENT_LIST_MAX		512		/* FILE_LIST entries */
#define AGENT_LIST_DEPTH_MAX	4		/* FILE_LIST levels */
#define AGENT_LIST_BYTES_MAX	(64 * 1024)	/* FILE_LIST entries' bytes */
/* One FILE_LIST entry's bytes on the wire, for a name of n bytes. */
#define AGENT_DIRENT_LEN(n)	((size_t)(n) + 26)

/* Limits the agent enforces; the host can rely on them. */
#define AGENT_JOB_HEAD_MAX	(64 * 1024)	/* per stream: first bytes */
#define AGENT_JOB_TAIL_MAX	(64 * 1024)	/* per stream: last bytes */
#define AGENT_JOBS_ACTIVE_MAX	4
#define AGENT_JOBS_TOTAL_MAX	256		/* kept; older ones evicted */
#define AGENT_JOBSTATE_LEN	5		/* INFO: u32 job, u8 state */
#define AGENT_WORKSPACE		"/workspace"
#define AGENT_JOB_UID		1000
#define AGENT_JOB_GID		1000

#define AGENT_REPLY		0x8000

enum agent_type {
	AGENT_HELLO = 1,
	AGENT_PING,
	AGENT_INFO,
	AGENT_EXEC,
	AGENT_JOB_STATUS,
	AGENT_JOB_READ,
	AGENT_JOB_CANCEL,
	AGENT_FILE_READ,
	AGENT_FILE_WRITE,
	AGENT_FREEZE,
	AGENT_THAW,
	AGENT_SET_TIME,
	AGENT_POWEROFF,
	AGENT_NET_CONFIG,
	AGENT_SEED,
	AGENT_FILE_LIST,
	AGENT_IDENTITY,
	AGENT_TYPE_MAX,				/* not a type */
	AGENT_ERROR = AGENT_REPLY,		/* reply to anything */
};

enum agent_err {
	AGENT_ERR_PROTO = 1,	/* malformed frame or payload */
	AGENT_ERR_VERSION,	/* HELLO with a version we do not speak */
	AGENT_ERR_HANDSHAKE,	/* request before HELLO */
	AGENT_ERR_UNKNOWN,	/* unknown message type */
	AGENT_ERR_INVAL,	/* a value out of range */
	AGENT_ERR_NOJOB,	/* no such job */
	AGENT_ERR_LIMIT,	/* too many jobs */
	AGENT_ERR_PATH,		/* path escapes /workspace or has a symlink */
	AGENT_ERR_NOENT,	/* no such file or directory */
	AGENT_ERR_IO,		/* system call failed; errno says which */
	AGENT_ERR_STATE,	/* not possible in the current state */
	AGENT_ERR_EXPIRED,	/* the job ended and was evicted */
	AGENT_ERR_MAX,		/* not a code */
};

enum agent_job_state {
	AGENT_JOB_RUNNING = 1,
	AGENT_JOB_COMPLETED,	/* exited; exit_code or signal set */
	AGENT_JOB_CANCELLED,
	AGENT_JOB_TIMED_OUT,
	AGENT_JOB_FAILED,	/* could not be started */
	AGENT_JOB_STATE_MAX,	/* not a state */
};

#define AGENT_EXEC_SHELL	0x1	/* argv[0] is a bash -c command */
#define AGENT_EXEC_FLAGS	AGENT_EXEC_SHELL

#define AGENT_WRITE_APPEND	0x1	/* append; not atomic */
#define AGENT_WRITE_AT_OFFSET	0x2	/* patch at offset, keep the rest */
#define AGENT_WRITE_MKDIRS	0x4	/* create missing parent dirs */
#define AGENT_WRITE_FLAGS	(AGENT_WRITE_APPEND | AGENT_WRITE_AT_OFFSET | \
	AGENT_WRITE_MKDIRS)

/* FILE_LIST entry types */
enum agent_ftype {
	AGENT_FTYPE_FILE = 1,
	AGENT_FTYPE_DIR,
	AGENT_FTYPE_SYMLINK,
	AGENT_FTYPE_OTHER,	/* device, FIFO, socket */
	AGENT_FTYPE_MAX,	/* not a type */
};

/* One FILE_LIST entry; name points into the payload. */
struct agent_dirent {
	const char	*name;		/* < AGENT_PATH_MAX with its NUL */
	uint8_t		 type;		/* AGENT_FTYPE_* */
	uint32_t	 mode;		/* 07777 */
	uint64_t	 size;
	int64_t		 mtime;
};

struct agent_hdr {
	uint16_t	 type;
	uint32_t	 id;
	uint32_t	 len;
};

struct agent_job_status {
	uint32_t	 job;
	uint8_t		 state;
	uint8_t		 out_eof;
	uint8_t		 err_eof;
	int32_t		 exit_code;
	int32_t		 signal;
	uint64_t	 out_total;
	uint64_t	 err_total;
	uint64_t	 out_gap;	/* the first byte dropped */
	uint64_t	 out_dropped;	/* 0: none */
	uint64_t	 err_gap;
	uint64_t	 err_dropped;
	uint64_t	 runtime_ms;
};

/*
 * A decoded message.  Strings and byte ranges point into the payload they
 * were decoded from; strings are NUL-terminated there.
 */
struct agent_msg {
	uint16_t	 type;
	uint32_t	 id;
	union {
		struct {
			uint32_t	 version;
			const char	*agent_version;	/* reply */
		} hello;
		struct {
			const char	*os;
			const char	*kernel;
			const char	*agent_version;
			uint64_t	 uptime_ms;
			uint32_t	 jobs_active;
			uint32_t	 jobs_total;
			uint32_t	 jobs_active_max;
			uint32_t	 jobs_total_max;
			uint8_t		 frozen;
			const uint8_t	*job_states;	/* jobs_total records */
		} info;
		struct {
			uint32_t	 flags;
			uint32_t	 timeout_ms;
			const char	*cwd;
			uint32_t	 argc;
			const char	*argv[AGENT_ARGC_MAX];
			uint32_t	 envc;
			const char	*env[AGENT_ENVC_MAX];
			const uint8_t	*stdin_data;
			uint32_t	 stdin_len;
		} exec;
		struct {
			uint32_t	 job;
		} job;		/* EXEC reply, JOB_STATUS, JOB_CANCEL */
		struct {
			uint32_t	 job;
			uint64_t	 out_cursor;
			uint64_t	 err_cursor;
			uint32_t	 out_max;
			uint32_t	 err_max;
			uint32_t	 wait_ms;
		} job_read;
		struct {
			struct agent_job_status st;
		} status;	/* JOB_STATUS and JOB_CANCEL replies */
		struct {
			struct agent_job_status st;
			uint64_t	 out_cursor;
			uint64_t	 out_skipped;
			const uint8_t	*out;
			uint32_t	 out_len;
			uint64_t	 err_cursor;
			uint64_t	 err_skipped;
			const uint8_t	*err;
			uint32_t	 err_len;
		} output;	/* JOB_READ reply */
		struct {
			const char	*path;
			uint64_t	 offset;
			uint32_t	 length;
		} file_read;
		struct {
			uint64_t	 offset;
			uint64_t	 size;
			uint8_t		 eof;
			const uint8_t	*data;
			uint32_t	 len;
		} file_data;	/* FILE_READ reply */
		struct {
			const char	*path;
			uint32_t	 flags;
			uint64_t	 offset;
			uint32_t	 mode;
			const uint8_t	*data;
			uint32_t	 len;
		} file_write;
		struct {
			uint64_t	 size;
			uint32_t	 written;
		} file_written;	/* FILE_WRITE reply */
		struct {
			const char	*path;
			uint32_t	 depth;
			uint32_t	 max;
		} file_list;
		struct {
			uint8_t		 truncated;
			uint32_t	 count;
			const uint8_t	*entries;	/* agent_dirent_next */
			uint32_t	 len;
		} file_entries;	/* FILE_LIST reply */
		struct {
			uint32_t	 jobs_frozen;
		} frozen;	/* FREEZE reply */
		struct {
			int64_t		 sec;
			uint32_t	 nsec;
		} set_time;
		struct {
			const uint8_t	*data;	/* AGENT_SEED_LEN bytes */
		} seed;
		struct {
			const char	*hostname;
			const char	*machine_id;
		} identity;
		struct {
			const char	*address;
			const char	*gateway;
			const char	*resolver;
			const char	*mac;
		} net_config;
		struct {
			uint32_t	 code;
			int32_t		 sys_errno;
			const char	*message;
		} error;
	} u;
};

/* Frame header. */
void	 agent_hdr_put(uint8_t *, uint16_t, uint32_t, uint32_t);
int	 agent_frame_check(const uint8_t *, size_t, struct agent_hdr *);

/*
 * Encodes msg as one frame into buf (at most AGENT_FRAME_MAX bytes).
 * Returns the frame length, or -1 with errno EINVAL or EMSGSIZE if a
 * value is out of bounds.
 */
int	 agent_encode(const struct agent_msg *, uint8_t *, size_t);

/*
 * Decodes the payload of a frame whose header was checked.  Returns 0, or
 * -1 with errno EBADMSG (malformed payload) or ENOTSUP (unknown type).
 */
int	 agent_decode(const struct agent_hdr *, const uint8_t *,
	    struct agent_msg *);

/*
 * Whether a stream's counts are consistent: the gap within the stream,
 * at most AGENT_JOB_HEAD_MAX in, and no more kept than the agent keeps.
 */
int	 agent_stream_ok(uint64_t, uint64_t, uint64_t);

/* INFO's job_states: record i of a checked list, or one to write. */
void	 agent_jobstate_get(const uint8_t *, uint32_t, uint32_t *,
	    uint8_t *);
void	 agent_jobstate_put(uint8_t *, uint32_t, uint32_t, uint8_t);

/*
 * FILE_LIST entries.  agent_dirent_put() appends one to buf[*len..cap)
 * and advances *len; it returns -1 with errno EMSGSIZE when it does not
 * fit, EINVAL when a value is out of bounds.  agent_dirent_next() reads
 * the one at *p (left bytes remain) and advances both; -1 when malformed.
 */
int	 agent_dirent_put(uint8_t *, size_t, size_t *,
	    const struct agent_dirent *);
int	 agent_dirent_next(const uint8_t **, size_t *, struct agent_dirent *);

/*
 * FILE_LIST's order of names: bytewise, but '/' before every other byte,
 * so that a directory's entries follow it.
 */
int	 agent_name_cmp(const char *, const char *);

/*
 * Whether a page of a stream, starting at offset start, ends where what
 * is kept ends for good (the stream closed and drained, or the gap
 * begins), so that a text decoder must not wait for the rest of a
 * character.  stream is 0 for stdout, 1 for stderr.
 */
int	 agent_page_final(const struct agent_job_status *, int, uint64_t,
	    uint32_t);

const char	*agent_type_name(uint16_t);
int		 agent_valid_hostname(const char *);
int		 agent_valid_machine_id(const char *);
void		 agent_hostname_from(const char *, const char *, char *);
const char	*agent_err_name(uint32_t);
const char	*agent_job_state_name(uint8_t);

#endif
