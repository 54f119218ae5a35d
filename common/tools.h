/*
 * The tool catalogue shared by mcvm-frontd and mcvmd.  Each tool is one
 * entry of tool_table (common/tools.c): name, title, flags, parameters,
 * target, result kind and budget, description and output schema; frontd
 * renders what clients see from it, and mcvmd dispatches by it.  A
 * tool's parameters are named by index: see PARAMS_<TOOL> below.
 *
 * frontd turns a tool call's JSON arguments into a struct tool_args,
 * checks it with tool_args_check() and writes it into IMSG_FRONT_TOOL with
 * tool_args_encode().  mcvmd reads it back with tool_args_decode(), which
 * applies the same checks again: mcvmd never trusts frontd's validation.
 *
 * Arguments on the wire, after the token hash and the u32 tool id:
 *	u32 count, then per argument, in increasing parameter order:
 *	u32 parameter id (index in the tool's table + 1), then the value:
 *	TP_STRING	str
 *	TP_INT		u64 (two's complement of the signed value)
 *	TP_BOOL		u32 0 or 1
 *	TP_ENUM		u32 index into the parameter's values
 *	TP_LIST		u32 count, then count str
 *	TP_BYTES	bytes (decoded from base64 by frontd)
 *	TP_CURSOR	u64 stdout offset, u64 stderr offset
 * Absent optional parameters are not sent; defaults are applied by the
 * back end, which knows the configured values.
 */
#ifndef MCVM_TOOLS_H
#define MCVM_TOOLS_H

#include <stddef.h>
#include <stdint.h>

#include "imsg.h"
#include "msg.h"
#include "validate.h"

#define TOOL_PARAMS_MAX		16	/* parameters of one tool */
#define TOOL_LIST_MAX		64	/* entries of a list parameter */
#define TOOL_TEXT_MAX		(64 * 1024)	/* commands, stdin */
#define TOOL_PATH_MAX		4096	/* guest paths */
#define TOOL_FILE_MAX		(128 * 1024)	/* bytes per file call */
#define TOOL_WAIT_MAX		50	/* wait_seconds: under the 60 s an
					   MCP client waits by default */
#define TOOL_TYPE_TEXT_MAX	4096	/* characters per vm_type_text */
#define TOOL_INPUT_TIME_MAX	TOOL_WAIT_MAX	/* s: an input call's */
#define TOOL_KEY_MAX		32	/* one key chord */
#define TOOL_FORWARD_MAX	16	/* "auto:22", "2222:22", "22" */
#define TOOL_SIZE_MAX		24	/* "+10G" */
#define TOOL_ERR_MAX		256	/* validation messages */
#define TOOL_RESULT_MAX		(256 * 1024)	/* JSON from mcvmd */
#define TOOL_MESSAGE_MAX	1024	/* error text from mcvmd */
#define TOOL_PROGRESS_MAX	256	/* progress message text */
#define TOOL_WS_NAME_MAX	64	/* workspace name from mcvmd */

#define TOOL_DOC_MAX		4096	/* a description, once rendered */

/* Defaults and bounds the tools' descriptions quote. */
#define TOOL_EXEC_TIMEOUT_DEFAULT 600	/* s: vm_exec's timeout_seconds */
#define TOOL_EXEC_TIMEOUT_MAX	(24 * 3600)
#define TOOL_STOP_TIMEOUT_DEFAULT 30	/* s: vm_stop's timeout_seconds */
#define TOOL_STOP_TIMEOUT_MAX	600
#define TOOL_FORWARDS_MAX	16	/* port_forwards of one VM */
#define VM_STATUS_JOBS_MAX	32	/* newest jobs vm_status lists */
#define VM_STATUS_COMMAND_MAX	256	/* bytes of each one's command */
#define VM_FORK_MAX		8	/* clones of one vm_fork */



#define TOOL_LIST(X)							\
	X(TOOL_VM_CREATE,		1,  "vm_create")		\
	X(TOOL_VM_LIST,			2,  "vm_list")			\
	X(TOOL_VM_STATUS,		3,  "vm_status")		\
	X(TOOL_VM_STOP,			4,  "vm_stop")			\
	X(TOOL_VM_START,		5,  "vm_start")			\
	X(TOOL_VM_SUSPEND,		6,  "vm_suspend")		\
	X(TOOL_VM_RESUME,		7,  "vm_resume")		\
	X(TOOL_VM_DESTROY,		8,  "vm_destroy")		\
	X(TOOL_VM_EXEC,			9,  "vm_exec")			\
	X(TOOL_VM_JOB_STATUS,		10, "vm_job_status")		\
	X(TOOL_VM_JOB_OUTPUT,		11, "vm_job_output")		\
	X(TOOL_VM_JOB_CANCEL,		12, "vm_job_cancel")		\
	X(TOOL_VM_READ_FILE,		13, "vm_read_file")		\
	X(TOOL_VM_WRITE_FILE,		14, "vm_write_file")		\
	X(TOOL_VM_SCREENSHOT,		15, "vm_screenshot")		\
	X(TOOL_VM_SEND_KEYS,		16, "vm_send_keys")		\
	X(TOOL_VM_TYPE_TEXT,		17, "vm_type_text")		\
	X(TOOL_VM_CLICK,		18, "vm_click")			\
	X(TOOL_VM_MOUSE_MOVE,		19, "vm_mouse_move")		\
	X(TOOL_VM_SERIAL_READ,		20, "vm_serial_read")		\
	X(TOOL_VM_SNAPSHOT_CREATE,	21, "vm_snapshot_create")	\
	X(TOOL_VM_SNAPSHOT_RESTORE,	22, "vm_snapshot_restore")	\
	X(TOOL_VM_SNAPSHOT_DELETE,	23, "vm_snapshot_delete")	\
	X(TOOL_VM_SNAPSHOT_LIST,	24, "vm_snapshot_list")		\
	X(TOOL_IMAGE_LIST,		25, "image_list")		\
	X(TOOL_IMAGE_CREATE,		26, "image_create")		\
	X(TOOL_IMAGE_INFO,		27, "image_info")		\
	X(TOOL_IMAGE_CONVERT,		28, "image_convert")		\
	X(TOOL_IMAGE_RESIZE,		29, "image_resize")		\
	X(TOOL_IMAGE_DELETE,		30, "image_delete")		\
	X(TOOL_IMAGE_SNAPSHOT_CREATE,	31, "image_snapshot_create")	\
	X(TOOL_IMAGE_SNAPSHOT_APPLY,	32, "image_snapshot_apply")	\
	X(TOOL_IMAGE_SNAPSHOT_DELETE,	33, "image_snapshot_delete")	\
	X(TOOL_IMAGE_SNAPSHOT_LIST,	34, "image_snapshot_list")	\
	X(TOOL_VM_LIST_FILES,		35, "vm_list_files")		\
	X(TOOL_IMAGE_UPLOAD_URL,	36, "image_upload_url")		\
	X(TOOL_IMAGE_DOWNLOAD_URL,	37, "image_download_url")	\
	X(TOOL_VM_FORK,			38, "vm_fork")

enum tool_id {
	TOOL_NONE = 0,
#define TOOL_ENUM(e, v, n)	e = v,
	TOOL_LIST(TOOL_ENUM)
#undef TOOL_ENUM
	TOOL_ID_END
};
#define TOOL_COUNT		(TOOL_ID_END - 1)

/*
 * Each tool's parameters, in their order in the tool's table (and on the
 * wire).  PARAMS_<TOOL>(M, t) calls M(t, NAME) once per parameter, NAME
 * being the parameter's name in upper case; TOOL_PARAMS(M) calls
 * M(<TOOL>) once per tool, in TOOL_LIST order.  From them come one enum
 * per tool of the parameters' indices:
 *
 *	P_<TOOL>_<NAME>		index of parameter <name> of tool <tool>,
 *				e.g. P_VM_EXEC_COMMAND
 *	P_<TOOL>_NPARAMS		how many parameters the tool has
 *
 * so that code names a parameter by index, checked by the compiler:
 *
 *	args->v[P_VM_EXEC_COMMAND]		the struct tool_value
 *	TOOL_ARG(args, VM_EXEC, COMMAND)	the value, NULL if absent
 *	TOOL_STR(args, VM_EXEC, COMMAND)	the string, NULL if absent
 *	TOOL_INT(args, VM_EXEC, TIMEOUT_SECONDS, dflt)
 *						the integer (TP_INT, TP_BOOL,
 *						TP_ENUM), dflt if absent
 *
 * The macros also check at run time that args are that tool's (else
 * fatalx).  common/tools.c fills each tool's array by these indices, and
 * asserts at compile time that its size is P_<TOOL>_NPARAMS.  The lookup by
 * name (tool_param_index) remains for frontd's JSON conversion.
 *
 * The target's parameters come first: P_TARGET is vm_id for the VM and job
 * targets and the image's name for TT_IMAGE; P_TARGET_SUB is job_id for
 * TT_JOB and tag for TT_SNAPSHOT (whose P_TARGET is vm_id or name).
 */
#define P_TARGET		0
#define P_TARGET_SUB		1

#define PARAMS_VM_CREATE(M, t)						\
	M(t, REQUEST_ID) M(t, NAME) M(t, IMAGE) M(t, MEMORY_MIB)	\
	M(t, VCPUS) M(t, NETWORK) M(t, IDLE_SECONDS) M(t, IDLE_MODE)	\
	M(t, PORT_FORWARDS) M(t, DISPLAY) M(t, DISKS) M(t, ISO)		\
	M(t, FIRMWARE) M(t, MACHINE) M(t, PERSISTENT)
#define PARAMS_VM_LIST(M, t)
#define PARAMS_VM_STATUS(M, t)		M(t, VM_ID)
#define PARAMS_VM_STOP(M, t)						\
	M(t, VM_ID) M(t, FORCE) M(t, TIMEOUT_SECONDS)
#define PARAMS_VM_START(M, t)		M(t, VM_ID)
#define PARAMS_VM_SUSPEND(M, t)		M(t, VM_ID) M(t, MODE) M(t, FORCE)
#define PARAMS_VM_RESUME(M, t)		M(t, VM_ID)
#define PARAMS_VM_DESTROY(M, t)		M(t, VM_ID)
#define PARAMS_VM_EXEC(M, t)						\
	M(t, VM_ID) M(t, REQUEST_ID) M(t, COMMAND) M(t, CWD)		\
	M(t, TIMEOUT_SECONDS) M(t, STDIN) M(t, WAIT_SECONDS)
#define PARAMS_VM_JOB_STATUS(M, t)	M(t, VM_ID) M(t, JOB_ID)
#define PARAMS_VM_JOB_OUTPUT(M, t)					\
	M(t, VM_ID) M(t, JOB_ID) M(t, CURSOR) M(t, ENCODING)		\
	M(t, WAIT_SECONDS)
#define PARAMS_VM_JOB_CANCEL(M, t)	M(t, VM_ID) M(t, JOB_ID)
#define PARAMS_VM_READ_FILE(M, t)					\
	M(t, VM_ID) M(t, PATH) M(t, OFFSET) M(t, MAX_BYTES) M(t, ENCODING)
#define PARAMS_VM_WRITE_FILE(M, t)					\
	M(t, VM_ID) M(t, PATH) M(t, CONTENT) M(t, CONTENT_BASE64)	\
	M(t, APPEND)
#define PARAMS_VM_LIST_FILES(M, t)	M(t, VM_ID) M(t, PATH) M(t, DEPTH)
#define PARAMS_IMAGE_UPLOAD_URL(M, t)	M(t, NAME) M(t, OVERWRITE)
#define PARAMS_IMAGE_DOWNLOAD_URL(M, t)	M(t, NAME)
#define PARAMS_VM_SCREENSHOT(M, t)	M(t, VM_ID)
#define PARAMS_VM_SEND_KEYS(M, t)					\
	M(t, VM_ID) M(t, KEYS) M(t, HOLD_MS) M(t, DELAY_MS)
#define PARAMS_VM_TYPE_TEXT(M, t)					\
	M(t, VM_ID) M(t, TEXT) M(t, ENTER) M(t, DELAY_MS)
#define PARAMS_VM_CLICK(M, t)						\
	M(t, VM_ID) M(t, X) M(t, Y) M(t, BUTTON) M(t, DOUBLE)
#define PARAMS_VM_MOUSE_MOVE(M, t)					\
	M(t, VM_ID) M(t, DX) M(t, DY) M(t, HOME) M(t, CLICK)		\
	M(t, DOUBLE) M(t, STEP)
#define PARAMS_VM_SERIAL_READ(M, t)	M(t, VM_ID) M(t, TAIL_LINES)
#define PARAMS_VM_SNAPSHOT_CREATE(M, t)	M(t, VM_ID) M(t, TAG)
#define PARAMS_VM_SNAPSHOT_RESTORE(M, t) M(t, VM_ID) M(t, TAG)
#define PARAMS_VM_SNAPSHOT_DELETE(M, t)	M(t, VM_ID) M(t, TAG)
#define PARAMS_VM_SNAPSHOT_LIST(M, t)	M(t, VM_ID)
#define PARAMS_IMAGE_LIST(M, t)
#define PARAMS_IMAGE_CREATE(M, t)					\
	M(t, NAME) M(t, SIZE) M(t, FORMAT) M(t, BASE) M(t, OVERWRITE)
#define PARAMS_IMAGE_INFO(M, t)		M(t, NAME) M(t, BACKING_CHAIN)
#define PARAMS_IMAGE_CONVERT(M, t)					\
	M(t, SOURCE) M(t, DEST) M(t, FORMAT) M(t, COMPRESS)		\
	M(t, OVERWRITE)
#define PARAMS_IMAGE_RESIZE(M, t)	M(t, NAME) M(t, SIZE) M(t, SHRINK)
#define PARAMS_IMAGE_DELETE(M, t)	M(t, NAME)
#define PARAMS_IMAGE_SNAPSHOT_CREATE(M, t) M(t, NAME) M(t, TAG)
#define PARAMS_IMAGE_SNAPSHOT_APPLY(M, t) M(t, NAME) M(t, TAG)
#define PARAMS_IMAGE_SNAPSHOT_DELETE(M, t) M(t, NAME) M(t, TAG)
#define PARAMS_IMAGE_SNAPSHOT_LIST(M, t) M(t, NAME)
#define PARAMS_VM_FORK(M, t)						\
	M(t, VM_ID) M(t, REQUEST_ID) M(t, COUNT) M(t, NAMES)

#define TOOL_PARAMS(M)							\
	M(VM_CREATE) M(VM_LIST) M(VM_STATUS) M(VM_STOP) M(VM_START)	\
	M(VM_SUSPEND) M(VM_RESUME) M(VM_DESTROY) M(VM_EXEC)		\
	M(VM_JOB_STATUS) M(VM_JOB_OUTPUT) M(VM_JOB_CANCEL)		\
	M(VM_READ_FILE) M(VM_WRITE_FILE) M(VM_SCREENSHOT)		\
	M(VM_SEND_KEYS) M(VM_TYPE_TEXT) M(VM_CLICK) M(VM_MOUSE_MOVE)	\
	M(VM_SERIAL_READ) M(VM_SNAPSHOT_CREATE) M(VM_SNAPSHOT_RESTORE)	\
	M(VM_SNAPSHOT_DELETE) M(VM_SNAPSHOT_LIST) M(IMAGE_LIST)		\
	M(IMAGE_CREATE) M(IMAGE_INFO) M(IMAGE_CONVERT) M(IMAGE_RESIZE)	\
	M(IMAGE_DELETE) M(IMAGE_SNAPSHOT_CREATE)			\
	M(IMAGE_SNAPSHOT_APPLY) M(IMAGE_SNAPSHOT_DELETE)		\
	M(IMAGE_SNAPSHOT_LIST) M(VM_LIST_FILES) M(IMAGE_UPLOAD_URL)	\
	M(IMAGE_DOWNLOAD_URL) M(VM_FORK)

#define TOOL_PARAM_ENUM(t, p)	P_##t##_##p,
#define TOOL_PARAMS_ENUM(t)						\
	enum { PARAMS_##t(TOOL_PARAM_ENUM, t) P_##t##_NPARAMS };
TOOL_PARAMS(TOOL_PARAMS_ENUM)
#undef TOOL_PARAMS_ENUM
#undef TOOL_PARAM_ENUM

enum tparam_type {
	TP_STRING = 1,
	TP_INT,
	TP_BOOL,
	TP_ENUM,
	TP_LIST,
	TP_BYTES,
	TP_CURSOR,
};

/* What a string (or each entry of a list) must look like. */
enum tstr_kind {
	TS_TEXT = 1,	/* UTF-8, any character but NUL */
	TS_NAME,	/* VM, image, snapshot names: valid_object_name() */
	TS_REQUEST_ID,	/* client retry keys: valid_request_id() */
	TS_VM_ID,	/* "vm-" and 16 hex digits, or a VM's name */
	TS_JOB_ID,	/* "job-" and 16 hex digits */
	TS_PATH,	/* guest path relative to /workspace or absolute
			   beneath it, no ".." component */
	TS_SIZE,	/* [+]digits[KMGT] */
	TS_KEY,		/* key or chord: [a-z0-9_]+ joined by '-' */
	TS_FORWARD,	/* "auto:G", "H:G" or "G", ports 1-65535 */
	TS_TYPEABLE,	/* printable ASCII, tab and newline */
};

/* Tool flags: the MCP annotations, and whether progress is reported. */
#define TF_READONLY	0x01
#define TF_DESTRUCTIVE	0x02
#define TF_IDEMPOTENT	0x04
#define TF_OPENWORLD	0x08
#define TF_LONG		0x10	/* may run for long: progress over SSE */

struct tool_param {
	const char		*name;
	enum tparam_type	 type;
	enum tstr_kind		 kind;		/* TP_STRING, TP_LIST */
	int			 required;
	int64_t			 min;	/* TP_INT value, TP_LIST count */
	int64_t			 max;
	size_t			 maxlen;	/* string, entry or bytes */
	const char *const	*values;	/* TP_ENUM, NULL-terminated */
	const char		*defval;	/* default, as JSON text */
	const char		*doc;		/* one line for the schema */
};

/*
 * What a tool acts on.  mcvmd's dispatcher resolves it, with its owner,
 * before the tool runs: a foreign object answers as a missing one.
 */
enum tool_target {
	TT_NONE = 0,		/* the workspace itself */
	TT_VM,			/* vm_id: a VM in any state */
	TT_VM_LIVE,		/* vm_id: running or paused, its monitor up */
	TT_VM_RUNNING,		/* vm_id: a running VM (its monitor up) */
	TT_VM_AGENT,		/* vm_id: running, its guest agent answered */
	TT_JOB,			/* vm_id and job_id: a job of a running VM */
	TT_IMAGE,		/* name: an image of the workspace's store */
	TT_SNAPSHOT,		/* vm_id or name, and tag */
};

/* What a tool's result carries beside its JSON object. */
enum tool_result {
	TR_JSON = 0,		/* structured content only */
	TR_IMAGE,		/* an image content block (PNG) */
	TR_TEXT,		/* a text content block */
};

struct tool_desc {
	enum tool_id		 id;
	const char		*name;
	const char		*title;
	uint32_t		 flags;
	const struct tool_param	*params;
	size_t			 nparams;
	enum tool_target	 target;
	enum tool_result	 result;
	size_t			 budget;	/* result bytes at most */
	const char		*description;	/* for the model, see below */
	const char		*output;	/* schema, single-quoted JSON */
};

/*
 * Descriptions, parameter docs and default values may quote constants as
 * ${NAME}, NAME one of the numbers common/tools.c lists (a constant's own
 * name, or with _KIB its value in KiB).  tool_render() writes text into
 * buf with each one replaced by its value; it fails on an unknown or
 * unterminated placeholder or a text that does not fit.  Output schemas
 * are JSON with ' for ", which frontd turns into JSON.
 */

struct tool_value {
	int			 present;
	int64_t			 i;		/* TP_INT, TP_BOOL, TP_ENUM */
	const char		*s;		/* TP_STRING */
	const void		*b;		/* TP_BYTES */
	size_t			 blen;
	const char		*list[TOOL_LIST_MAX];	/* TP_LIST */
	size_t			 nlist;
	uint64_t		 cursor[2];	/* TP_CURSOR: stdout, stderr */
};

struct tool_args {
	const struct tool_desc	*tool;
	struct tool_value	 v[TOOL_PARAMS_MAX];
};

extern const struct tool_desc	tool_table[TOOL_COUNT];

const struct tool_desc	*tool_by_id(uint32_t);
const struct tool_desc	*tool_by_name(const char *);
int	 tool_param_index(const struct tool_desc *, const char *);
int	 tool_enum_index(const struct tool_param *, const char *);

int	 tool_value_check(const struct tool_param *, const struct tool_value *,
	    char *, size_t);
int	 tool_args_check(const struct tool_args *, char *, size_t);
void	 tool_args_encode(struct ibuf *, const struct tool_args *);
int	 tool_args_decode(struct mreader *, const struct tool_desc *,
	    struct tool_args *, char *, size_t);

int	 tool_render(const char *, char *, size_t);

/*
 * Readers for the back end, after a successful decode, by index (see the
 * parameter lists above).
 */
#define TOOL_ARG(a, t, p)	tool_value_at((a), TOOL_##t, P_##t##_##p)
#define TOOL_STR(a, t, p)	tool_str_at((a), TOOL_##t, P_##t##_##p)
#define TOOL_INT(a, t, p, d)	tool_int_at((a), TOOL_##t, P_##t##_##p, (d))
const struct tool_value	*tool_value_at(const struct tool_args *,
			    enum tool_id, int);
const char	*tool_str_at(const struct tool_args *, enum tool_id, int);
int64_t		 tool_int_at(const struct tool_args *, enum tool_id, int,
		    int64_t);

#endif
