/*
 * The tool catalogue: see tools.h.  Parameter names, types and bounds live
 * here, once, for frontd (which converts JSON into typed fields) and for
 * mcvmd (which decodes and re-validates them).  The JSON schemas frontd
 * advertises are generated from this table.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tools.h"
#include "validate.h"

#define PORT_MAX	65535
#define SIZE_DIGITS_MAX	15

static const char *const network_values[] = { "off", "on", NULL };
static const char *const idle_mode_values[] = { "hibernate", "pause", NULL };
static const char *const suspend_values[] = { "hibernate", "pause", NULL };
static const char *const encoding_values[] = { "utf-8", "base64", NULL };
static const char *const button_values[] = { "left", "right", "middle",
	NULL };
static const char *const corner_values[] = { "top-left", "top-right",
	"bottom-left", "bottom-right", NULL };
static const char *const format_values[] = { "qcow2", "raw", NULL };

/* Parameters used by many tools. */
#define P_VM_ID								\
	{ "vm_id", TP_STRING, TS_VM_ID, 1, 0, 0, ID_MAX, NULL, NULL,	\
	    "The VM's id (\"vm-\" and 16 hex digits), as returned by "	\
	    "vm_create or vm_list." }
#define P_JOB_ID							\
	{ "job_id", TP_STRING, TS_JOB_ID, 1, 0, 0, ID_MAX, NULL, NULL,	\
	    "The job's id, as returned by vm_exec." }
#define P_WAIT(doc)							\
	{ "wait_seconds", TP_INT, 0, 0, 0, TOOL_WAIT_MAX, 0, NULL, "0", doc }
#define P_REQUEST_ID(what)						\
	{ "request_id", TP_STRING, TS_REQUEST_ID, 1, 0, 0,		\
	    REQUEST_ID_MAX, NULL, NULL,					\
	    "Your retry key for this " what ", unique in the "		\
	    "workspace. Retrying with the same id and arguments "	\
	    "returns the first result; the same id with other "	\
	    "arguments is refused." }
#define P_TAG								\
	{ "tag", TP_STRING, TS_NAME, 1, 0, 0, OBJ_NAME_MAX, NULL, NULL,	\
	    "Snapshot name: lower-case letters, digits, '.', '_', "	\
	    "'-'." }
#define P_IMAGE(n, doc)							\
	{ n, TP_STRING, TS_NAME, 1, 0, 0, OBJ_NAME_MAX, NULL, NULL, doc }
#define P_BOOL(n, doc)							\
	{ n, TP_BOOL, 0, 0, 0, 1, 0, NULL, "false", doc }

static const struct tool_param p_vm_create[] = {
	P_REQUEST_ID("creation"),
	{ "name", TP_STRING, TS_NAME, 0, 0, 0, OBJ_NAME_MAX, NULL, NULL,
	    "A name for the VM, unique in the workspace. Default: none." },
	{ "image", TP_STRING, TS_NAME, 0, 0, 0, OBJ_NAME_MAX, NULL, NULL,
	    "Base image: an operator catalogue image or one of the "
	    "workspace's images (see image_list). Default: the operator's "
	    "default image." },
	{ "memory_mib", TP_INT, 0, 0, VM_MEMORY_MIN_MIB, VM_MEMORY_MAX_MIB,
	    0, NULL, NULL,
	    "Guest RAM in MiB. Default: the operator's setting (512)." },
	{ "vcpus", TP_INT, 0, 0, 1, VM_VCPUS_MAX, 0, NULL, NULL,
	    "Virtual CPUs. Default: the operator's setting (1)." },
	{ "network", TP_ENUM, 0, 0, 0, 0, 0, network_values, "\"off\"",
	    "\"off\": no NIC at all. \"on\": IPv4 NAT to the internet, "
	    "private and host addresses denied; needs a workspace allowed "
	    "to use the network." },
	{ "idle_seconds", TP_INT, 0, 0, 0, 7 * 24 * 3600, 0, NULL, "300",
	    "Suspend the VM after this many idle seconds; 0 disables." },
	{ "idle_mode", TP_ENUM, 0, 0, 0, 0, 0, idle_mode_values,
	    "\"hibernate\"",
	    "How to suspend when idle: \"hibernate\" frees RAM, \"pause\" "
	    "keeps it." },
	{ "port_forwards", TP_LIST, TS_FORWARD, 0, 0, 16, TOOL_FORWARD_MAX,
	    NULL, "[]",
	    "Host-to-guest TCP forwards on the host's loopback: \"auto:22\" "
	    "picks a free host port, \"2222:22\" is explicit. The result "
	    "reports the ports chosen." },
};

static const struct tool_param p_vm_only[] = {
	P_VM_ID,
};

static const struct tool_param p_vm_stop[] = {
	P_VM_ID,
	P_BOOL("force", "Power off at once instead of an ACPI shutdown."),
	{ "timeout_seconds", TP_INT, 0, 0, 1, 600, 0, NULL, "30",
	    "How long to wait for a graceful shutdown before failing." },
};

static const struct tool_param p_vm_suspend[] = {
	P_VM_ID,
	{ "mode", TP_ENUM, 0, 0, 0, 0, 0, suspend_values, "\"hibernate\"",
	    "\"hibernate\" checkpoints RAM to disk and stops the VM "
	    "process; \"pause\" stops the vCPUs and keeps RAM." },
	P_BOOL("force", "Suspend even while jobs run; they are frozen and "
	    "continue on resume."),
};

static const struct tool_param p_vm_exec[] = {
	P_VM_ID,
	P_REQUEST_ID("command"),
	{ "command", TP_STRING, TS_TEXT, 1, 0, 0, TOOL_TEXT_MAX, NULL, NULL,
	    "Shell command, run by /bin/sh -c as uid 1000." },
	{ "cwd", TP_STRING, TS_PATH, 0, 0, 0, TOOL_PATH_MAX, NULL, "\".\"",
	    "Working directory, relative to /workspace." },
	{ "timeout_seconds", TP_INT, 0, 0, 1, 24 * 3600, 0, NULL, "600",
	    "Kill the job and all its descendants after this many "
	    "seconds of run time (time suspended is not counted)." },
	{ "stdin", TP_STRING, TS_TEXT, 0, 0, 0, TOOL_TEXT_MAX, NULL, NULL,
	    "Text given to the command on standard input. Default: "
	    "empty." },
	P_WAIT("If the command ends within this many seconds, answer then "
	    "with its exit code and the first page of its output, as "
	    "vm_job_output gives it; 0 answers at once."),
};

static const struct tool_param p_vm_job[] = {
	P_VM_ID,
	P_JOB_ID,
};

static const struct tool_param p_vm_job_output[] = {
	P_VM_ID,
	P_JOB_ID,
	{ "cursor", TP_CURSOR, 0, 0, 0, INT64_MAX, 0, NULL, NULL,
	    "Byte offsets {\"stdout\": n, \"stderr\": n} to read from: "
	    "pass the previous call's next_cursor. Omit on the first "
	    "call." },
	{ "encoding", TP_ENUM, 0, 0, 0, 0, 0, encoding_values, "\"utf-8\"",
	    "\"utf-8\" returns text (invalid bytes become U+FFFD); "
	    "\"base64\" returns exact bytes." },
	P_WAIT("If the job is running, wait up to this many seconds for it "
	    "to end before answering; 0 answers at once."),
};

static const struct tool_param p_vm_read_file[] = {
	P_VM_ID,
	{ "path", TP_STRING, TS_PATH, 1, 0, 0, TOOL_PATH_MAX, NULL, NULL,
	    "File path relative to /workspace; symlinks are refused." },
	{ "offset", TP_INT, 0, 0, 0, INT64_MAX, 0, NULL, "0",
	    "Byte offset to start reading at." },
	{ "max_bytes", TP_INT, 0, 0, 1, TOOL_FILE_MAX, 0, NULL, "131072",
	    "Bytes to read at most (128 KiB ceiling)." },
};

static const struct tool_param p_vm_write_file[] = {
	P_VM_ID,
	{ "path", TP_STRING, TS_PATH, 1, 0, 0, TOOL_PATH_MAX, NULL, NULL,
	    "File path relative to /workspace; symlinks are refused." },
	{ "content_base64", TP_BYTES, 0, 1, 0, 0, TOOL_FILE_MAX, NULL, NULL,
	    "File contents, base64-encoded, 128 KiB at most once "
	    "decoded." },
	P_BOOL("append", "Append instead of replacing the file."),
};

static const struct tool_param p_vm_send_keys[] = {
	P_VM_ID,
	{ "keys", TP_LIST, TS_KEY, 1, 1, TOOL_LIST_MAX, TOOL_KEY_MAX, NULL,
	    NULL,
	    "Key presses in order, each a key (\"ret\", \"esc\", \"f2\", "
	    "\"a\") or a chord (\"ctrl-alt-f2\")." },
	{ "hold_ms", TP_INT, 0, 0, 10, 2000, 0, NULL, "100",
	    "How long each press is held." },
	{ "delay_ms", TP_INT, 0, 0, 0, 2000, 0, NULL, "50",
	    "Pause between presses." },
};

static const struct tool_param p_vm_type_text[] = {
	P_VM_ID,
	{ "text", TP_STRING, TS_TYPEABLE, 1, 0, 0, TOOL_TYPE_TEXT_MAX, NULL,
	    NULL, "Text to type: printable ASCII, tab and newline." },
	P_BOOL("enter", "Press Enter after the text."),
	{ "delay_ms", TP_INT, 0, 0, 0, 1000, 0, NULL, "30",
	    "Pause between characters." },
};

static const struct tool_param p_vm_click[] = {
	P_VM_ID,
	{ "x", TP_INT, 0, 1, 0, 32767, 0, NULL, NULL,
	    "Horizontal pixel, as in vm_screenshot." },
	{ "y", TP_INT, 0, 1, 0, 32767, 0, NULL, NULL,
	    "Vertical pixel, as in vm_screenshot." },
	{ "button", TP_ENUM, 0, 0, 0, 0, 0, button_values, "\"left\"",
	    "Mouse button." },
	P_BOOL("double", "Double-click."),
};

static const struct tool_param p_vm_mouse_move[] = {
	P_VM_ID,
	{ "dx", TP_INT, 0, 0, -4096, 4096, 0, NULL, "0",
	    "Relative horizontal motion in pixels." },
	{ "dy", TP_INT, 0, 0, -4096, 4096, 0, NULL, "0",
	    "Relative vertical motion in pixels." },
	{ "home", TP_ENUM, 0, 0, 0, 0, 0, corner_values, NULL,
	    "Pin the cursor to this corner before moving. Default: none." },
	{ "click", TP_ENUM, 0, 0, 0, 0, 0, button_values, NULL,
	    "Press this button after moving. Default: none." },
	P_BOOL("double", "Double-click (with click)."),
	{ "step", TP_INT, 0, 0, 1, 127, 0, NULL, "32",
	    "Largest motion per PS/2 packet." },
};

static const struct tool_param p_vm_serial_read[] = {
	P_VM_ID,
	{ "tail_lines", TP_INT, 0, 0, 1, 2000, 0, NULL, "50",
	    "Lines to return from the end of the serial log." },
};

static const struct tool_param p_vm_snapshot[] = {
	P_VM_ID,
	P_TAG,
};

static const struct tool_param p_image_create[] = {
	P_IMAGE("name", "Name of the new image in the workspace's store."),
	{ "size", TP_STRING, TS_SIZE, 1, 0, 0, TOOL_SIZE_MAX, NULL, NULL,
	    "Virtual size with a K, M, G or T suffix, e.g. \"20G\"." },
	{ "format", TP_ENUM, 0, 0, 0, 0, 0, format_values, "\"qcow2\"",
	    "Image format." },
	{ "base", TP_STRING, TS_NAME, 0, 0, 0, OBJ_NAME_MAX, NULL, NULL,
	    "Make a copy-on-write overlay of this image (qcow2 only). "
	    "Default: none." },
	P_BOOL("overwrite", "Replace an existing image of that name."),
};

static const struct tool_param p_image_only[] = {
	P_IMAGE("name", "Image name in the workspace's store."),
};

static const struct tool_param p_image_info[] = {
	P_IMAGE("name", "Image name in the workspace's store."),
	P_BOOL("backing_chain", "Include the whole copy-on-write chain."),
};

static const struct tool_param p_image_convert[] = {
	P_IMAGE("source", "Image to convert."),
	P_IMAGE("dest", "Name of the converted image."),
	{ "format", TP_ENUM, 0, 0, 0, 0, 0, format_values, "\"qcow2\"",
	    "Format of the new image." },
	P_BOOL("compress", "Compress (qcow2 only; smaller, slower)."),
	P_BOOL("overwrite", "Replace an existing dest image."),
};

static const struct tool_param p_image_resize[] = {
	P_IMAGE("name", "Image name in the workspace's store."),
	{ "size", TP_STRING, TS_SIZE, 1, 0, 0, TOOL_SIZE_MAX, NULL, NULL,
	    "New virtual size (\"30G\") or growth (\"+10G\")." },
	P_BOOL("shrink", "Allow shrinking, which destroys data past the "
	    "new size."),
};

static const struct tool_param p_image_snapshot[] = {
	P_IMAGE("name", "Image name in the workspace's store."),
	P_TAG,
};

#define T(id, name, title, flags, params, target, result)		\
	{ id, name, title, flags, params,				\
	    sizeof(params) / sizeof((params)[0]), target, result,	\
	    TOOL_RESULT_MAX }
#define T0(id, name, title, flags)					\
	{ id, name, title, flags, NULL, 0, TT_NONE, TR_JSON,		\
	    TOOL_RESULT_MAX }

#define RO	(TF_READONLY | TF_IDEMPOTENT)

const struct tool_desc tool_table[TOOL_COUNT] = {
	T(TOOL_VM_CREATE, "vm_create", "Create a VM",
	    TF_IDEMPOTENT | TF_LONG, p_vm_create, TT_NONE, TR_JSON),
	T0(TOOL_VM_LIST, "vm_list", "List VMs", RO),
	T(TOOL_VM_STATUS, "vm_status", "VM status", RO, p_vm_only,
	    TT_VM, TR_JSON),
	T(TOOL_VM_STOP, "vm_stop", "Stop a VM",
	    TF_DESTRUCTIVE | TF_IDEMPOTENT | TF_LONG, p_vm_stop,
	    TT_VM, TR_JSON),
	T(TOOL_VM_START, "vm_start", "Start a stopped VM",
	    TF_IDEMPOTENT | TF_LONG, p_vm_only, TT_VM, TR_JSON),
	T(TOOL_VM_SUSPEND, "vm_suspend", "Pause or hibernate a VM",
	    TF_IDEMPOTENT | TF_LONG, p_vm_suspend, TT_VM, TR_JSON),
	T(TOOL_VM_RESUME, "vm_resume", "Resume a suspended VM",
	    TF_IDEMPOTENT | TF_LONG, p_vm_only, TT_VM, TR_JSON),
	T(TOOL_VM_DESTROY, "vm_destroy", "Destroy a VM",
	    TF_DESTRUCTIVE | TF_IDEMPOTENT, p_vm_only, TT_VM, TR_JSON),
	T(TOOL_VM_EXEC, "vm_exec", "Run a command",
	    TF_DESTRUCTIVE | TF_IDEMPOTENT | TF_OPENWORLD, p_vm_exec,
	    TT_VM_RUNNING, TR_JSON),
	T(TOOL_VM_JOB_STATUS, "vm_job_status", "Job status", RO, p_vm_job,
	    TT_JOB, TR_JSON),
	T(TOOL_VM_JOB_OUTPUT, "vm_job_output", "Read job output", RO,
	    p_vm_job_output, TT_JOB, TR_JSON),
	T(TOOL_VM_JOB_CANCEL, "vm_job_cancel", "Cancel a job",
	    TF_DESTRUCTIVE | TF_IDEMPOTENT, p_vm_job, TT_JOB, TR_JSON),
	T(TOOL_VM_READ_FILE, "vm_read_file", "Read a guest file", RO,
	    p_vm_read_file, TT_VM_RUNNING, TR_JSON),
	T(TOOL_VM_WRITE_FILE, "vm_write_file", "Write a guest file",
	    TF_DESTRUCTIVE, p_vm_write_file, TT_VM_RUNNING, TR_JSON),
	T(TOOL_VM_SCREENSHOT, "vm_screenshot", "Screenshot the display", RO,
	    p_vm_only, TT_VM_RUNNING, TR_IMAGE),
	T(TOOL_VM_SEND_KEYS, "vm_send_keys", "Press keys",
	    TF_DESTRUCTIVE, p_vm_send_keys, TT_VM_RUNNING, TR_JSON),
	T(TOOL_VM_TYPE_TEXT, "vm_type_text", "Type text",
	    TF_DESTRUCTIVE, p_vm_type_text, TT_VM_RUNNING, TR_JSON),
	T(TOOL_VM_CLICK, "vm_click", "Click on the display",
	    TF_DESTRUCTIVE, p_vm_click, TT_VM_RUNNING, TR_JSON),
	T(TOOL_VM_MOUSE_MOVE, "vm_mouse_move", "Move the mouse",
	    TF_DESTRUCTIVE, p_vm_mouse_move, TT_VM_RUNNING, TR_JSON),
	T(TOOL_VM_SERIAL_READ, "vm_serial_read", "Read the serial console",
	    RO, p_vm_serial_read, TT_VM, TR_TEXT),
	T(TOOL_VM_SNAPSHOT_CREATE, "vm_snapshot_create",
	    "Take a live snapshot", TF_LONG, p_vm_snapshot,
	    TT_VM_RUNNING, TR_JSON),
	T(TOOL_VM_SNAPSHOT_RESTORE, "vm_snapshot_restore",
	    "Restore a live snapshot",
	    TF_DESTRUCTIVE | TF_IDEMPOTENT | TF_LONG, p_vm_snapshot,
	    TT_SNAPSHOT, TR_JSON),
	T(TOOL_VM_SNAPSHOT_DELETE, "vm_snapshot_delete",
	    "Delete a live snapshot", TF_DESTRUCTIVE | TF_IDEMPOTENT,
	    p_vm_snapshot, TT_SNAPSHOT, TR_JSON),
	T(TOOL_VM_SNAPSHOT_LIST, "vm_snapshot_list", "List live snapshots",
	    RO, p_vm_only, TT_VM, TR_JSON),
	T0(TOOL_IMAGE_LIST, "image_list", "List images", RO),
	T(TOOL_IMAGE_CREATE, "image_create", "Create a disk image",
	    TF_DESTRUCTIVE | TF_LONG, p_image_create, TT_NONE, TR_JSON),
	T(TOOL_IMAGE_INFO, "image_info", "Inspect a disk image", RO,
	    p_image_info, TT_IMAGE, TR_JSON),
	T(TOOL_IMAGE_CONVERT, "image_convert", "Convert a disk image",
	    TF_DESTRUCTIVE | TF_LONG, p_image_convert, TT_IMAGE, TR_JSON),
	T(TOOL_IMAGE_RESIZE, "image_resize", "Resize a disk image",
	    TF_DESTRUCTIVE, p_image_resize, TT_IMAGE, TR_JSON),
	T(TOOL_IMAGE_DELETE, "image_delete", "Delete a disk image",
	    TF_DESTRUCTIVE | TF_IDEMPOTENT, p_image_only, TT_IMAGE, TR_JSON),
	T(TOOL_IMAGE_SNAPSHOT_CREATE, "image_snapshot_create",
	    "Snapshot an offline image", 0, p_image_snapshot,
	    TT_IMAGE, TR_JSON),
	T(TOOL_IMAGE_SNAPSHOT_APPLY, "image_snapshot_apply",
	    "Revert an offline image", TF_DESTRUCTIVE | TF_IDEMPOTENT,
	    p_image_snapshot, TT_SNAPSHOT, TR_JSON),
	T(TOOL_IMAGE_SNAPSHOT_DELETE, "image_snapshot_delete",
	    "Delete an image snapshot", TF_DESTRUCTIVE | TF_IDEMPOTENT,
	    p_image_snapshot, TT_SNAPSHOT, TR_JSON),
	T(TOOL_IMAGE_SNAPSHOT_LIST, "image_snapshot_list",
	    "List image snapshots", RO, p_image_only, TT_IMAGE, TR_JSON),
};

const struct tool_desc *
tool_by_id(uint32_t id)
{
	if (id == TOOL_NONE || id >= TOOL_ID_END)
		return NULL;
	return &tool_table[id - 1];
}

const struct tool_desc *
tool_by_name(const char *name)
{
	size_t	 i;

	for (i = 0; i < TOOL_COUNT; i++)
		if (strcmp(tool_table[i].name, name) == 0)
			return &tool_table[i];
	return NULL;
}

int
tool_param_index(const struct tool_desc *t, const char *name)
{
	size_t	 i;

	for (i = 0; i < t->nparams; i++)
		if (strcmp(t->params[i].name, name) == 0)
			return (int)i;
	return -1;
}

int
tool_enum_index(const struct tool_param *p, const char *s)
{
	int	 i;

	for (i = 0; p->values != NULL && p->values[i] != NULL; i++)
		if (strcmp(p->values[i], s) == 0)
			return i;
	return -1;
}

static size_t
tool_enum_count(const struct tool_param *p)
{
	size_t	 n = 0;

	while (p->values != NULL && p->values[n] != NULL)
		n++;
	return n;
}

static int
is_digit(int c)
{
	return c >= '0' && c <= '9';
}

/* A relative path without empty-named tricks: no "..", no control chars. */
static int
valid_guest_path(const char *s, size_t len)
{
	const char	*c, *end = s + len;
	size_t		 clen;

	if (len == 0 || s[0] == '/')
		return 0;
	for (c = s; c < end; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return 0;
	for (c = s; c < end; c += clen + 1) {
		clen = strcspn(c, "/");
		if (clen == 2 && c[0] == '.' && c[1] == '.')
			return 0;
		if (c + clen >= end)
			break;
	}
	return 1;
}

static int
valid_size(const char *s)
{
	size_t	 n = 0;

	if (*s == '+')
		s++;
	while (is_digit((unsigned char)s[n]))
		n++;
	if (n == 0 || n > SIZE_DIGITS_MAX)
		return 0;
	s += n;
	if (*s == '\0')
		return 1;
	return strchr("KMGT", *s) != NULL && s[1] == '\0';
}

static int
valid_key(const char *s)
{
	size_t	 n;

	for (;;) {
		n = 0;
		while ((s[n] >= 'a' && s[n] <= 'z') || is_digit(s[n]) ||
		    s[n] == '_')
			n++;
		if (n == 0)
			return 0;
		s += n;
		if (*s == '\0')
			return 1;
		if (*s++ != '-')
			return 0;
	}
}

static int
valid_port(const char *s, size_t n)
{
	unsigned long	 v = 0;
	size_t		 i;

	if (n == 0 || n > 5)
		return 0;
	for (i = 0; i < n; i++) {
		if (!is_digit((unsigned char)s[i]))
			return 0;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	return v >= 1 && v <= PORT_MAX;
}

static int
valid_forward(const char *s)
{
	const char	*colon = strchr(s, ':');

	if (colon == NULL)
		return valid_port(s, strlen(s));
	if (!(colon - s == 4 && strncmp(s, "auto", 4) == 0) &&
	    !valid_port(s, (size_t)(colon - s)))
		return 0;
	return valid_port(colon + 1, strlen(colon + 1));
}

static int
valid_typeable(const char *s)
{
	for (; *s != '\0'; s++)
		if (!((*s >= 0x20 && *s < 0x7f) || *s == '\t' || *s == '\n'))
			return 0;
	return 1;
}

/* Returns NULL when s is acceptable, or what is wrong with it. */
static const char *
tool_string_problem(enum tstr_kind kind, const char *s, size_t maxlen)
{
	size_t	 len = strlen(s);

	if (!valid_utf8(s, len))
		return "is not valid UTF-8";
	if (len > maxlen)
		return "is too long";
	switch (kind) {
	case TS_TEXT:
		return NULL;
	case TS_NAME:
		return valid_object_name(s) ? NULL : "must be 1-64 "
		    "lower-case letters, digits, '.', '_' or '-', starting "
		    "with a letter or digit";
	case TS_REQUEST_ID:
		return valid_request_id(s) ? NULL : "must be 1-128 "
		    "printable ASCII characters without spaces or quotes";
	case TS_VM_ID:
		return valid_id(s, VM_ID_PREFIX) ? NULL :
		    "is not a VM id (\"vm-\" and 16 hex digits)";
	case TS_JOB_ID:
		return valid_id(s, JOB_ID_PREFIX) ? NULL :
		    "is not a job id (\"job-\" and 16 hex digits)";
	case TS_PATH:
		return valid_guest_path(s, len) ? NULL : "must be a relative "
		    "path without \"..\" components or control characters";
	case TS_SIZE:
		return valid_size(s) ? NULL : "must be digits with an "
		    "optional K, M, G or T suffix, e.g. \"20G\"";
	case TS_KEY:
		return valid_key(s) ? NULL : "must be a key name or chord "
		    "such as \"ret\" or \"ctrl-alt-f2\"";
	case TS_FORWARD:
		return valid_forward(s) ? NULL : "must be \"auto:GUEST\", "
		    "\"HOST:GUEST\" or \"GUEST\" with ports 1-65535";
	case TS_TYPEABLE:
		return valid_typeable(s) ? NULL : "may hold printable ASCII, "
		    "tab and newline only";
	}
	return "has an unknown kind";
}

/*
 * Checks one present value against its parameter.  Returns 0, or -1 with a
 * message naming the parameter in err.
 */
int
tool_value_check(const struct tool_param *p, const struct tool_value *v,
    char *err, size_t errlen)
{
	const char	*why = NULL;
	size_t		 i;

	switch (p->type) {
	case TP_STRING:
		if (v->s == NULL)
			why = "is missing";
		else
			why = tool_string_problem(p->kind, v->s, p->maxlen);
		break;
	case TP_INT:
		if (v->i < p->min || v->i > p->max) {
			snprintf(err, errlen, "%s must be between %lld and "
			    "%lld", p->name, (long long)p->min,
			    (long long)p->max);
			return -1;
		}
		break;
	case TP_BOOL:
		if (v->i != 0 && v->i != 1)
			why = "must be true or false";
		break;
	case TP_ENUM:
		if (v->i < 0 || (size_t)v->i >= tool_enum_count(p))
			why = "is not one of the allowed values";
		break;
	case TP_LIST:
		if ((int64_t)v->nlist < p->min ||
		    (int64_t)v->nlist > p->max) {
			snprintf(err, errlen, "%s must have %lld to %lld "
			    "entries", p->name, (long long)p->min,
			    (long long)p->max);
			return -1;
		}
		for (i = 0; i < v->nlist && why == NULL; i++) {
			if (v->list[i] == NULL)
				why = "has a missing entry";
			else
				why = tool_string_problem(p->kind, v->list[i],
				    p->maxlen);
		}
		if (why != NULL) {
			snprintf(err, errlen, "%s[%zu] %s", p->name, i - 1,
			    why);
			return -1;
		}
		break;
	case TP_BYTES:
		if (v->blen > p->maxlen) {
			snprintf(err, errlen, "%s holds more than %zu bytes",
			    p->name, p->maxlen);
			return -1;
		}
		if (v->b == NULL && v->blen != 0)
			why = "is missing";
		break;
	case TP_CURSOR:
		if (v->cursor[0] > (uint64_t)p->max ||
		    v->cursor[1] > (uint64_t)p->max)
			why = "holds an offset out of range";
		break;
	default:
		why = "has an unknown type";
		break;
	}
	if (why != NULL) {
		snprintf(err, errlen, "%s %s", p->name, why);
		return -1;
	}
	return 0;
}

int
tool_args_check(const struct tool_args *a, char *err, size_t errlen)
{
	const struct tool_desc	*t = a->tool;
	size_t			 i;

	if (t == NULL || t->nparams > TOOL_PARAMS_MAX) {
		snprintf(err, errlen, "unknown tool");
		return -1;
	}
	for (i = 0; i < t->nparams; i++) {
		if (!a->v[i].present) {
			if (t->params[i].required) {
				snprintf(err, errlen, "%s is required",
				    t->params[i].name);
				return -1;
			}
			continue;
		}
		if (tool_value_check(&t->params[i], &a->v[i], err,
		    errlen) == -1)
			return -1;
	}
	return 0;
}

void
tool_args_encode(struct ibuf *b, const struct tool_args *a)
{
	const struct tool_desc	*t = a->tool;
	const struct tool_value	*v;
	uint32_t		 n = 0;
	size_t			 i, k;

	for (i = 0; i < t->nparams; i++)
		if (a->v[i].present)
			n++;
	m_add_u32(b, n);
	for (i = 0; i < t->nparams; i++) {
		v = &a->v[i];
		if (!v->present)
			continue;
		m_add_u32(b, (uint32_t)i + 1);
		switch (t->params[i].type) {
		case TP_STRING:
			m_add_str(b, v->s);
			break;
		case TP_INT:
			m_add_u64(b, (uint64_t)v->i);
			break;
		case TP_BOOL:
		case TP_ENUM:
			m_add_u32(b, (uint32_t)v->i);
			break;
		case TP_LIST:
			m_add_u32(b, (uint32_t)v->nlist);
			for (k = 0; k < v->nlist; k++)
				m_add_str(b, v->list[k]);
			break;
		case TP_BYTES:
			m_add_bytes(b, v->b, v->blen);
			break;
		case TP_CURSOR:
			m_add_u64(b, v->cursor[0]);
			m_add_u64(b, v->cursor[1]);
			break;
		}
	}
}

static int
decode_fail(char *err, size_t errlen, const char *what, size_t i)
{
	snprintf(err, errlen, "argument %zu: %s", i, what);
	errno = EBADMSG;
	return -1;
}

/*
 * Reads the arguments of tool t up to the end of the message and checks
 * them as frontd did.  Strings point into the message.  Any deviation
 * (unknown or repeated parameter, wrong tag, trailing bytes, a value out of
 * bounds, a missing required parameter) is an error.
 */
int
tool_args_decode(struct mreader *r, const struct tool_desc *t,
    struct tool_args *a, char *err, size_t errlen)
{
	const struct tool_param	*p;
	struct tool_value	*v;
	uint32_t		 n, id, u, cnt;
	uint64_t		 q;
	uint32_t		 last = 0;
	size_t			 i, k;

	memset(a, 0, sizeof(*a));
	a->tool = t;
	if (t == NULL || t->nparams > TOOL_PARAMS_MAX)
		return decode_fail(err, errlen, "unknown tool", 0);
	if (m_get_u32(r, &n) == -1 || n > t->nparams)
		return decode_fail(err, errlen, "bad count", 0);
	for (i = 0; i < n; i++) {
		if (m_get_u32(r, &id) == -1 || id == 0 || id > t->nparams ||
		    id <= last)
			return decode_fail(err, errlen, "bad parameter id", i);
		last = id;
		p = &t->params[id - 1];
		v = &a->v[id - 1];
		v->present = 1;
		switch (p->type) {
		case TP_STRING:
			if (m_get_str(r, &v->s, p->maxlen) == -1)
				return decode_fail(err, errlen, "bad string",
				    i);
			break;
		case TP_INT:
			if (m_get_u64(r, &q) == -1)
				return decode_fail(err, errlen, "bad integer",
				    i);
			v->i = (int64_t)q;
			break;
		case TP_BOOL:
		case TP_ENUM:
			if (m_get_u32(r, &u) == -1)
				return decode_fail(err, errlen, "bad value", i);
			v->i = u;
			break;
		case TP_LIST:
			if (m_get_u32(r, &cnt) == -1 || cnt > TOOL_LIST_MAX)
				return decode_fail(err, errlen, "bad list", i);
			v->nlist = cnt;
			for (k = 0; k < cnt; k++)
				if (m_get_str(r, &v->list[k], p->maxlen) == -1)
					return decode_fail(err, errlen,
					    "bad list entry", i);
			break;
		case TP_BYTES:
			if (m_get_bytes(r, &v->b, &v->blen, p->maxlen) == -1)
				return decode_fail(err, errlen, "bad bytes", i);
			break;
		case TP_CURSOR:
			if (m_get_u64(r, &v->cursor[0]) == -1 ||
			    m_get_u64(r, &v->cursor[1]) == -1)
				return decode_fail(err, errlen, "bad cursor",
				    i);
			break;
		default:
			return decode_fail(err, errlen, "bad type", i);
		}
	}
	if (m_end(r) == -1)
		return decode_fail(err, errlen, "trailing bytes", n);
	if (tool_args_check(a, err, errlen) == -1) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

const char *
tool_arg_str(const struct tool_args *a, const char *name)
{
	int	 i = tool_param_index(a->tool, name);

	if (i == -1 || !a->v[i].present || a->tool->params[i].type !=
	    TP_STRING)
		return NULL;
	return a->v[i].s;
}

int
tool_arg_int(const struct tool_args *a, const char *name, int64_t *out)
{
	int	 i = tool_param_index(a->tool, name);

	if (i == -1 || !a->v[i].present)
		return -1;
	*out = a->v[i].i;
	return 0;
}
