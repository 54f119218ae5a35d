/*
 * The tool catalogue: see tools.h.  Each tool is one entry of tool_table:
 * its name, title, flags, parameters (names, types and bounds), target,
 * result kind and budget, its description and its output schema.  frontd
 * renders the JSON schemas, descriptions and annotations it advertises
 * from this table and holds no text of its own about any tool; mcvmd
 * decodes and re-validates arguments against the same entries.
 *
 * Descriptions say what this build does.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_proto.h"
#include "log.h"
#include "msg_front.h"
#include "msg_store.h"
#include "msg_vmm.h"
#include "tools.h"
#include "validate.h"

#define PORT_MAX	65535
#define SIZE_DIGITS_MAX	15

#define nitems(a)	(sizeof(a) / sizeof((a)[0]))

/*
 * The numbers descriptions quote as ${NAME}: each one the value of the
 * constant it is named after, so that a description cannot drift from
 * the code.
 */
struct tool_number {
	const char	*name;
	long long	 value;
};

#define NUM(c)		{ #c, (long long)(c) }
#define NUM_KIB(c)	{ #c "_KIB", (long long)(c) / 1024 }

static const struct tool_number tool_numbers[] = {
	NUM(TOOL_FILE_MAX),
	NUM(IMAGE_SNAPSHOTS_MAX),
	NUM(IMAGE_TICKET_SECS),
	NUM_KIB(TOOL_FILE_MAX),
	NUM(TOOL_WAIT_MAX),
	NUM(TOOL_TYPE_TEXT_MAX),
	NUM(TOOL_EXEC_TIMEOUT_DEFAULT),
	NUM(TOOL_STOP_TIMEOUT_DEFAULT),
	NUM(TOOL_FORWARDS_MAX),
	NUM(VM_DISKS_MAX),
	NUM(VM_STATUS_JOBS_MAX),
	NUM(VM_FORK_MAX),
	NUM(VM_STATUS_COMMAND_MAX),
	NUM(AGENT_JOB_UID),
	NUM(AGENT_JOBS_ACTIVE_MAX),
	NUM(AGENT_JOBS_TOTAL_MAX),
	NUM_KIB(AGENT_JOB_HEAD_MAX),
	NUM(AGENT_JOB_TAIL_MAX),
	NUM_KIB(AGENT_JOB_TAIL_MAX),
	NUM_KIB(AGENT_PAGE_MAX),
	NUM_KIB(AGENT_ARG_MAX),
	NUM_KIB(AGENT_STDIN_MAX),
	NUM(AGENT_LIST_MAX),
	NUM(AGENT_LIST_DEPTH_MAX),
	NUM(TOOL_INPUT_TIME_MAX),
	NUM_KIB(VMM_SCREENSHOT_MAX),
	NUM_KIB(VMM_SERIAL_RING),
	NUM_KIB(QGA_OUTPUT_MAX),
	NUM(VMM_SNAP_PER_VM_MAX),
};

/* What is quoted in KiB is a whole number of KiB. */
_Static_assert(TOOL_FILE_MAX % 1024 == 0, "TOOL_FILE_MAX in KiB");
_Static_assert(AGENT_JOB_HEAD_MAX % 1024 == 0, "kept head in KiB");
_Static_assert(AGENT_JOB_TAIL_MAX % 1024 == 0, "kept tail in KiB");
_Static_assert(AGENT_PAGE_MAX % 1024 == 0, "page in KiB");
_Static_assert(AGENT_ARG_MAX % 1024 == 0, "command in KiB");
_Static_assert(AGENT_STDIN_MAX % 1024 == 0, "stdin in KiB");
_Static_assert(VMM_SCREENSHOT_MAX % 1024 == 0, "screenshot in KiB");
_Static_assert(VMM_SERIAL_RING % 1024 == 0, "serial ring in KiB");
/* mcvmd reads at most a file call's bytes from the agent at once. */
_Static_assert(TOOL_FILE_MAX <= AGENT_FILE_CHUNK_MAX, "file call bytes");

static const char *const network_values[] = { "off", "on", NULL };
static const char *const idle_mode_values[] = { "hibernate", "pause", NULL };
/* In the order of enum vm_firmware and enum vm_machine. */
static const char *const firmware_values[] = { "bios", "uefi", NULL };
static const char *const machine_values[] = { "q35", "pc", NULL };
static const char *const suspend_values[] = { "hibernate", "pause", NULL };
static const char *const encoding_values[] = { "utf-8", "base64", NULL };
static const char *const button_values[] = { "left", "right", "middle",
	NULL };
static const char *const corner_values[] = { "top-left", "top-right",
	"bottom-left", "bottom-right", NULL };
static const char *const format_values[] = { "qcow2", "raw", NULL };
/* In enum image_format's order. */
static const char *const convert_values[] = {
	"qcow2", "raw", "vmdk", "vdi", "vhdx", NULL
};

/* Parameters used by many tools. */
#define PARAM_VM_ID							\
	{ "vm_id", TP_STRING, TS_VM_ID, 1, 0, 0, OBJ_NAME_MAX, NULL,	\
	    NULL, "The VM's id (\"vm-\" and 16 hex digits), as returned "\
	    "by vm_create or vm_list, or its name." }
#define PARAM_JOB_ID							\
	{ "job_id", TP_STRING, TS_JOB_ID, 1, 0, 0, ID_MAX, NULL, NULL,	\
	    "The job's id, as returned by vm_exec." }
#define PARAM_WAIT(doc)							\
	{ "wait_seconds", TP_INT, 0, 0, 0, TOOL_WAIT_MAX, 0, NULL, "0",	\
	    doc }
#define PARAM_REQUEST_ID(what)						\
	{ "request_id", TP_STRING, TS_REQUEST_ID, 1, 0, 0,		\
	    REQUEST_ID_MAX, NULL, NULL,					\
	    "Your retry key for this " what ", unique in the "		\
	    "workspace. Retrying with the same id and arguments "	\
	    "returns the first result; the same id with other "	\
	    "arguments is refused." }
#define PARAM_TAG							\
	{ "tag", TP_STRING, TS_NAME, 1, 0, 0, OBJ_NAME_MAX, NULL, NULL,	\
	    "Snapshot name: lower-case letters, digits, '.', '_', "	\
	    "'-'." }
#define PARAM_IMAGE(n, doc)						\
	{ n, TP_STRING, TS_NAME, 1, 0, 0, OBJ_NAME_MAX, NULL, NULL, doc }
#define PARAM_BOOL(n, doc)						\
	{ n, TP_BOOL, 0, 0, 0, 1, 0, NULL, "false", doc }
#define PARAM_PATH							\
	{ "path", TP_STRING, TS_PATH, 1, 0, 0, TOOL_PATH_MAX, NULL, NULL,\
	    "File path relative to /workspace (\"src/a.py\") or absolute "\
	    "beneath it (\"/workspace/src/a.py\"); no \"..\", and "	\
	    "symlinks are refused." }

/* Each tool's array has exactly its P_<TOOL>_COUNT entries. */
#define PARAMS_SIZE(a, t)						\
	_Static_assert(nitems(a) == P_##t##_NPARAMS, #a " and P_" #t)

/* Output schemas shared by several tools. */
#define VM_PROPS							\
	"'vm_id':{'type':'string'},'name':{'type':'string'},"		\
	"'state':{'type':'string','description':'creating, booting, "	\
	"running, paused, stopping, stopped, failed, hibernating or "	\
	"hibernated'},"							\
	"'suspension':{'type':'object','description':'paused or "	\
	"hibernated only','properties':{'mode':{'type':'string'},"	\
	"'since':{'type':'integer'},'why':{'type':'string'},"		\
	"'checkpoint_bytes':{'type':'integer'}}},"			\
	"'image':{'type':'string'},'memory_mib':{'type':'integer'},"	\
	"'vcpus':{'type':'integer'},'network':{'type':'string'},"	\
	"'display':{'type':'boolean'},"					\
	"'created':{'type':'integer'},'idle_seconds':{'type':'integer',"\
	"'description':'0: never suspended as idle'},'idle_mode':{"	\
	"'type':'string','description':'hibernate or pause'},"		\
	"'reason':{'type':'string'},"					\
	"'address':{'type':'string','description':'with a NIC only'},"	\
	"'gateway':{'type':'string','description':'network on only'},"	\
	"'mac':{'type':'string'},'port_forwards':{'type':'array',"	\
	"'items':{'type':'object','properties':{'host_address':{'type':"\
	"'string'},'host_port':{'type':'integer'},'guest_port':{'type':"\
	"'integer'}},'required':['host_address','host_port',"		\
	"'guest_port']}},"						\
	"'disks':{'type':'array','items':{'type':'string'},"		\
	"'description':'own disks only: the images it boots'},"	\
	"'persistent':{'type':'boolean'},'firmware':{'type':'string'},"	\
	"'machine':{'type':'string'},'agent':{'type':'boolean',"	\
	"'description':'own disks and attached: whether its "		\
	"qemu-guest-agent answers'},"					\
	"'attached':{'type':'boolean','description':'a QEMU the "	\
	"operator started and attached: mcvm neither stops nor "	\
	"destroys it'},"							\
	"'iso':{'type':'string'},'install':{'type':'string',"		\
	"'description':'pending: it boots the install CD (first); done'}"
#define GUEST_PROPS							\
	"'agent':{'type':'string','enum':['mcvm','qga'],'description':"\
	"'mcvm: mcvm-guestd; qga: qemu-guest-agent (own disks, "	\
	"attached)'},"							\
	"'os':{'type':'string'},'kernel':{'type':'string'},"		\
	"'agent_version':{'type':'string'}"
#define VM_OBJECT							\
	"{'type':'object','properties':{" VM_PROPS ",'guest':{'type':"	\
	"'object','properties':{" GUEST_PROPS "}}},"			\
	"'required':['vm_id','state']}"
#define JOB_LOSS							\
	"{'type':'object','properties':{'offset':{'type':'integer'},"	\
	"'dropped_bytes':{'type':'integer'}},"				\
	"'required':['offset','dropped_bytes']}"
#define JOB_PROPS							\
	"'vm_id':{'type':'string'},'job_id':{'type':'string'},"		\
	"'state':{'type':'string','description':'running, completed, "	\
	"failed, cancelled or timed_out'},'exit_code':{'type':["	\
	"'integer','null']},'signal':{'type':'integer'},'timed_out':"	\
	"{'type':'boolean'},'truncated':{'type':'object',"		\
	"'description':'present once output was dropped: for each "	\
	"stream that lost bytes, dropped_bytes of it from offset on',"	\
	"'properties':{'stdout':" JOB_LOSS ",'stderr':" JOB_LOSS "}},"	\
	"'stdout_bytes':{'type':'integer'},'stderr_bytes':{'type':"	\
	"'integer'},'runtime_ms':{'type':'integer'}"
#define JOB_OUT								\
	"{'type':'object','properties':{" JOB_PROPS "},"		\
	"'required':['job_id','state']}"
#define OUTPUT_OUT(required)						\
	"{'type':'object','properties':{" JOB_PROPS ","			\
	"'encoding':{'type':'string'},'stdout':{'type':'string'},"	\
	"'stderr':{'type':'string'},'stdout_base64':{'type':'string'},"	\
	"'stderr_base64':{'type':'string'},'next_cursor':{'type':"	\
	"'object','properties':{'stdout':{'type':'integer'},'stderr':"	\
	"{'type':'integer'}},'required':['stdout','stderr']},"		\
	"'decoding_errors':{'type':'object','properties':{'stdout':"	\
	"{'type':'boolean'},'stderr':{'type':'boolean'}}},"		\
	"'skipped_bytes':{'type':'object','description':'present when "\
	"a cursor lay in dropped output: the page starts this many "	\
	"bytes after it','properties':{'stdout':{'type':'integer'},"	\
	"'stderr':{'type':'integer'}},'required':['stdout','stderr']}},"\
	"'required':[" required "]}"
#define INPUT_OUT							\
	"{'type':'object','properties':{'vm_id':{'type':'string'},"	\
	"'events':{'type':'integer'}},'required':['vm_id']}"
#define SNAPSHOTS_OUT							\
	"{'type':'object','properties':{'snapshots':{'type':'array',"	\
	"'items':{'type':'object','properties':{'tag':{'type':'string'},"\
	"'vm_size':{'type':'integer'},'date':{'type':'string'}},"	\
	"'required':['tag']}}},'required':['snapshots']}"
#define VM_SNAPSHOT_OUT							\
	"{'type':'object','properties':{'tag':{'type':'string'},"	\
	"'vm_size':{'type':'integer'},'date':{'type':'string'},"	\
	"'deleted':{'type':'boolean'}},'required':['tag']}"
#define SNAPSHOT_OUT							\
	"{'type':'object','properties':{'tag':{'type':'string'}},"	\
	"'required':['tag']}"
#define IMAGE_OBJECT							\
	"{'type':'object','properties':{'name':{'type':'string'},"	\
	"'format':{'type':'string'},'virtual_size':{'type':'integer'},"	\
	"'disk_size':{'type':'integer'},'base':{'type':['string','null']},"\
	"'base_catalog':{'type':'boolean'},"				\
	"'in_use':{'type':'boolean'},'catalog':{'type':'boolean'},"	\
	"'digest':{'type':'string'},'default':{'type':'boolean'},"	\
	"'state':{'type':'string','enum':['ready','verifying',"		\
	"'refused']},'reason':{'type':'string'}},'required':['name']}"
#define URL_OUT								\
	"{'type':'object','properties':{'url':{'type':'string'},"	\
	"'path':{'type':'string','description':'the URL without the "	\
	"server, for a client that reaches it by another name'},"	\
	"'method':{'type':'string','enum':['PUT','GET']},"		\
	"'expires_in':{'type':'integer','description':'seconds'}},"	\
	"'required':['url','path','method','expires_in']}"
#define IMAGE_INFO_OUT							\
	"{'type':'object','properties':{'name':{'type':'string'},"	\
	"'format':{'type':'string'},'virtual_size':{'type':'integer'},"	\
	"'disk_size':{'type':'integer'},'base':{'type':['string','null']},"\
	"'base_catalog':{'type':'boolean'},'in_use':{'type':'boolean'},"\
	"'catalog':{'type':'boolean'},'snapshots':{'type':'array',"	\
	"'items':{'type':'object','properties':{'tag':{'type':'string'},"\
	"'vm_size':{'type':'integer'},'date':{'type':'string'}}}},"	\
	"'backing_chain':{'type':'array','items':" IMAGE_OBJECT "}},"	\
	"'required':['name','format']}"
#define IMAGE_SNAPSHOT_OUT						\
	"{'type':'object','properties':{'name':{'type':'string'},"	\
	"'tag':{'type':'string'},'message':{'type':'string'}},"		\
	"'required':['name','tag']}"

/* ---- the VM's lifecycle ------------------------------------------------- */

static const struct tool_param p_vm_create[] = {
	[P_VM_CREATE_REQUEST_ID] = PARAM_REQUEST_ID("creation"),
	[P_VM_CREATE_NAME] = { "name", TP_STRING, TS_NAME, 0, 0, 0,
	    OBJ_NAME_MAX, NULL, NULL,
	    "A name for the VM, unique in the workspace. Default: none." },
	[P_VM_CREATE_IMAGE] = { "image", TP_STRING, TS_NAME, 0, 0, 0,
	    OBJ_NAME_MAX, NULL, NULL,
	    "Base image: the name of an image of the operator's catalogue "
	    "(workspace images are not available in this build yet). "
	    "Default: the catalogue's first image." },
	[P_VM_CREATE_MEMORY_MIB] = { "memory_mib", TP_INT, 0, 0,
	    VM_MEMORY_MIN_MIB, VM_MEMORY_MAX_MIB, 0, NULL, NULL,
	    "Guest RAM in MiB. Default: the operator's setting." },
	[P_VM_CREATE_VCPUS] = { "vcpus", TP_INT, 0, 0, 1, VM_VCPUS_MAX, 0,
	    NULL, NULL,
	    "Virtual CPUs. Default: the operator's setting." },
	[P_VM_CREATE_NETWORK] = { "network", TP_ENUM, 0, 0, 0, 0, 0,
	    network_values, "\"off\"",
	    "\"off\": the guest reaches nothing; it has no NIC, or with "
	    "port_forwards one that carries only the forwarded connections "
	    "and their replies. \"on\": IPv4 NAT to the internet, private "
	    "and host addresses denied; needs a workspace allowed to use "
	    "the network and a host with an uplink." },
	[P_VM_CREATE_IDLE_SECONDS] = { "idle_seconds", TP_INT, 0, 0, 0,
	    7 * 24 * 3600, 0, NULL, NULL,
	    "Seconds without a call that needs the guest, and without a "
	    "running job, before the VM is suspended as idle_mode says; 0 "
	    "for never. Default: the operator's setting." },
	[P_VM_CREATE_IDLE_MODE] = { "idle_mode", TP_ENUM, 0, 0, 0, 0, 0,
	    idle_mode_values, NULL,
	    "How an idle VM is suspended: hibernate (no memory used) or "
	    "pause. The next call that needs it wakes it. Default: the "
	    "operator's setting." },
	[P_VM_CREATE_PORT_FORWARDS] = { "port_forwards", TP_LIST,
	    TS_FORWARD, 0, 0, TOOL_FORWARDS_MAX, TOOL_FORWARD_MAX, NULL,
	    "[]",
	    "Host-to-guest TCP forwards on the host's loopback: \"auto:22\" "
	    "picks a free host port, \"2222:22\" is explicit. They work "
	    "with either network: with \"off\" the guest's NIC is inbound "
	    "only, and the guest itself reaches nothing (not the host, not "
	    "other VMs, not the internet, no DNS). The result's "
	    "port_forwards reports the host ports chosen." },
	[P_VM_CREATE_DISPLAY] = { "display", TP_BOOL, 0, 0, 0, 1, 0, NULL,
	    "true",
	    "A display (VGA), a keyboard, a tablet and a mouse, for "
	    "vm_screenshot and the input tools; tty1 shows a shell. false: "
	    "none of them, a little smaller and faster." },
	[P_VM_CREATE_DISKS] = { "disks", TP_LIST, TS_NAME, 0, 0,
	    VM_DISKS_MAX, OBJ_NAME_MAX, NULL, "[]",
	    "Boot your own disks instead of a catalogue image: up to "
	    "${VM_DISKS_MAX} of your workspace's images (qcow2 or raw, "
	    "without a backing image), the first the boot disk. The VM "
	    "gets an overlay (or a reflink clone) of each, unless "
	    "persistent. Such a VM has no mcvm agent: vm_exec, the job "
	    "tools and the file tools work once qemu-guest-agent answers "
	    "in its guest (on the port org.qemu.guest_agent.0)." },
	[P_VM_CREATE_ISO] = { "iso", TP_STRING, TS_NAME, 0, 0, 0,
	    OBJ_NAME_MAX, NULL, NULL,
	    "An install CD, with disks: an image of format iso of your "
	    "workspace, or a catalogue image. The VM boots it once; when "
	    "the guest reboots or powers off, the VM starts again from the "
	    "disks alone." },
	[P_VM_CREATE_FIRMWARE] = { "firmware", TP_ENUM, 0, 0, 0, 0, 0,
	    firmware_values, "\"bios\"",
	    "With disks: \"bios\" (SeaBIOS) or \"uefi\" (OVMF, with the "
	    "VM's own variable store)." },
	[P_VM_CREATE_MACHINE] = { "machine", TP_ENUM, 0, 0, 0, 0, 0,
	    machine_values, "\"q35\"",
	    "With disks: the machine type, \"q35\" (PCIe, AHCI) or "
	    "\"pc\" (i440FX, IDE)." },
	[P_VM_CREATE_PERSISTENT] = PARAM_BOOL("persistent", "With disks: "
	    "attach the images themselves, so that the guest writes into "
	    "them (they are in use, and cannot be changed or deleted, "
	    "while the VM exists). Default: the VM writes to overlays that "
	    "vm_destroy deletes."),
};
PARAMS_SIZE(p_vm_create, VM_CREATE);

static const struct tool_param p_vm_status[] = {
	[P_VM_STATUS_VM_ID] = PARAM_VM_ID,
};
PARAMS_SIZE(p_vm_status, VM_STATUS);

static const struct tool_param p_vm_stop[] = {
	[P_VM_STOP_VM_ID] = PARAM_VM_ID,
	[P_VM_STOP_FORCE] = PARAM_BOOL("force", "End the VM's QEMU process "
	    "at once instead of asking the guest to shut down."),
	[P_VM_STOP_TIMEOUT_SECONDS] = { "timeout_seconds", TP_INT, 0, 0, 1,
	    TOOL_STOP_TIMEOUT_MAX, 0, NULL, "${TOOL_STOP_TIMEOUT_DEFAULT}",
	    "How long to wait for the guest to shut down; then the call "
	    "fails and the VM keeps running." },
};
PARAMS_SIZE(p_vm_stop, VM_STOP);

static const struct tool_param p_vm_start[] = {
	[P_VM_START_VM_ID] = PARAM_VM_ID,
};
PARAMS_SIZE(p_vm_start, VM_START);

static const struct tool_param p_vm_suspend[] = {
	[P_VM_SUSPEND_VM_ID] = PARAM_VM_ID,
	[P_VM_SUSPEND_MODE] = { "mode", TP_ENUM, 0, 0, 0, 0, 0,
	    suspend_values, NULL,
	    "\"hibernate\" (the default) writes RAM and devices to a "
	    "checkpoint and ends the VM's processes: it costs no memory. "
	    "\"pause\" stops the vCPUs and keeps RAM in use." },
	[P_VM_SUSPEND_FORCE] = PARAM_BOOL("force", "Suspend even while jobs "
	    "run; they are frozen and continue on vm_resume."),
};
PARAMS_SIZE(p_vm_suspend, VM_SUSPEND);

static const struct tool_param p_vm_resume[] = {
	[P_VM_RESUME_VM_ID] = PARAM_VM_ID,
};
PARAMS_SIZE(p_vm_resume, VM_RESUME);

static const struct tool_param p_vm_destroy[] = {
	[P_VM_DESTROY_VM_ID] = PARAM_VM_ID,
};
PARAMS_SIZE(p_vm_destroy, VM_DESTROY);

/* ---- jobs --------------------------------------------------------------- */

static const struct tool_param p_vm_exec[] = {
	[P_VM_EXEC_VM_ID] = PARAM_VM_ID,
	[P_VM_EXEC_REQUEST_ID] = PARAM_REQUEST_ID("command"),
	[P_VM_EXEC_COMMAND] = { "command", TP_STRING, TS_TEXT, 1, 0, 0,
	    TOOL_TEXT_MAX, NULL, NULL,
	    "Shell command, run by bash -c as uid ${AGENT_JOB_UID}; "
	    "under ${AGENT_ARG_MAX_KIB} KiB." },
	[P_VM_EXEC_CWD] = { "cwd", TP_STRING, TS_PATH, 0, 0, 0,
	    TOOL_PATH_MAX, NULL, "\".\"",
	    "Working directory, relative to /workspace or absolute "
	    "beneath it." },
	[P_VM_EXEC_TIMEOUT_SECONDS] = { "timeout_seconds", TP_INT, 0, 0, 1,
	    TOOL_EXEC_TIMEOUT_MAX, 0, NULL, "${TOOL_EXEC_TIMEOUT_DEFAULT}",
	    "Kill the job and all its descendants after this many "
	    "seconds of run time (time paused is not counted)." },
	[P_VM_EXEC_STDIN] = { "stdin", TP_STRING, TS_TEXT, 0, 0, 0,
	    TOOL_TEXT_MAX, NULL, NULL,
	    "Text given to the command on standard input, at most "
	    "${AGENT_STDIN_MAX_KIB} KiB. Default: empty." },
	[P_VM_EXEC_WAIT_SECONDS] = PARAM_WAIT("If the command ends within "
	    "this many seconds (at most ${TOOL_WAIT_MAX}), answer then "
	    "with its exit code and the first page of its output, as "
	    "vm_job_output gives it; 0 answers at once."),
};
PARAMS_SIZE(p_vm_exec, VM_EXEC);

static const struct tool_param p_vm_job_status[] = {
	[P_VM_JOB_STATUS_VM_ID] = PARAM_VM_ID,
	[P_VM_JOB_STATUS_JOB_ID] = PARAM_JOB_ID,
};
PARAMS_SIZE(p_vm_job_status, VM_JOB_STATUS);

static const struct tool_param p_vm_job_output[] = {
	[P_VM_JOB_OUTPUT_VM_ID] = PARAM_VM_ID,
	[P_VM_JOB_OUTPUT_JOB_ID] = PARAM_JOB_ID,
	[P_VM_JOB_OUTPUT_CURSOR] = { "cursor", TP_CURSOR, 0, 0, 0,
	    INT64_MAX, 0, NULL, NULL,
	    "Byte offsets {\"stdout\": n, \"stderr\": n} to read from: "
	    "pass the previous call's next_cursor. Omit on the first "
	    "call." },
	[P_VM_JOB_OUTPUT_ENCODING] = { "encoding", TP_ENUM, 0, 0, 0, 0, 0,
	    encoding_values, "\"utf-8\"",
	    "\"utf-8\" returns text (invalid bytes become U+FFFD); "
	    "\"base64\" returns exact bytes." },
	[P_VM_JOB_OUTPUT_WAIT_SECONDS] = PARAM_WAIT("If the job is "
	    "running, wait up to this many seconds (at most "
	    "${TOOL_WAIT_MAX}) for it to end before answering; 0 answers "
	    "at once."),
};
PARAMS_SIZE(p_vm_job_output, VM_JOB_OUTPUT);

static const struct tool_param p_vm_job_cancel[] = {
	[P_VM_JOB_CANCEL_VM_ID] = PARAM_VM_ID,
	[P_VM_JOB_CANCEL_JOB_ID] = PARAM_JOB_ID,
};
PARAMS_SIZE(p_vm_job_cancel, VM_JOB_CANCEL);

/* ---- files -------------------------------------------------------------- */

static const struct tool_param p_vm_read_file[] = {
	[P_VM_READ_FILE_VM_ID] = PARAM_VM_ID,
	[P_VM_READ_FILE_PATH] = PARAM_PATH,
	[P_VM_READ_FILE_OFFSET] = { "offset", TP_INT, 0, 0, 0, INT64_MAX, 0,
	    NULL, "0", "Byte offset to start reading at: 0, or the previous "
	    "call's next_offset." },
	[P_VM_READ_FILE_MAX_BYTES] = { "max_bytes", TP_INT, 0, 0, 1,
	    TOOL_FILE_MAX, 0, NULL, "${TOOL_FILE_MAX}",
	    "Bytes to read at most (${TOOL_FILE_MAX_KIB} KiB ceiling)." },
	[P_VM_READ_FILE_ENCODING] = { "encoding", TP_ENUM, 0, 0, 0, 0, 0,
	    encoding_values, "\"utf-8\"",
	    "\"utf-8\": content when the bytes read are UTF-8 text, "
	    "content_base64 when they are not. \"base64\": always "
	    "content_base64." },
};
PARAMS_SIZE(p_vm_read_file, VM_READ_FILE);

static const struct tool_param p_vm_write_file[] = {
	[P_VM_WRITE_FILE_VM_ID] = PARAM_VM_ID,
	[P_VM_WRITE_FILE_PATH] = PARAM_PATH,
	[P_VM_WRITE_FILE_CONTENT] = { "content", TP_STRING, TS_TEXT, 0, 0,
	    0, TOOL_FILE_MAX, NULL, NULL,
	    "File contents as UTF-8 text, ${TOOL_FILE_MAX_KIB} KiB at "
	    "most. Give content or content_base64, not both." },
	[P_VM_WRITE_FILE_CONTENT_BASE64] = { "content_base64", TP_BYTES, 0,
	    0, 0, 0, TOOL_FILE_MAX, NULL, NULL,
	    "File contents as base64, for bytes that are not text, "
	    "${TOOL_FILE_MAX_KIB} KiB at most once decoded. Give content "
	    "or content_base64, not both." },
	[P_VM_WRITE_FILE_APPEND] = PARAM_BOOL("append",
	    "Append instead of replacing the file."),
};
PARAMS_SIZE(p_vm_write_file, VM_WRITE_FILE);

static const struct tool_param p_vm_list_files[] = {
	[P_VM_LIST_FILES_VM_ID] = PARAM_VM_ID,
	[P_VM_LIST_FILES_PATH] = { "path", TP_STRING, TS_PATH, 0, 0, 0,
	    TOOL_PATH_MAX, NULL, "\".\"",
	    "Directory relative to /workspace (\"src\") or absolute "
	    "beneath it (\"/workspace/src\"); \".\" is /workspace itself. "
	    "No \"..\", and symlinks are refused." },
	[P_VM_LIST_FILES_DEPTH] = { "depth", TP_INT, 0, 0, 1,
	    AGENT_LIST_DEPTH_MAX, 0, NULL, "1",
	    "Levels to list: 1 for the directory's own entries, up to "
	    "${AGENT_LIST_DEPTH_MAX} to descend into subdirectories." },
};
PARAMS_SIZE(p_vm_list_files, VM_LIST_FILES);

static const struct tool_param p_image_upload_url[] = {
	[P_IMAGE_UPLOAD_URL_NAME] = PARAM_IMAGE("name",
	    "Name the uploaded image takes in the workspace's store."),
	[P_IMAGE_UPLOAD_URL_OVERWRITE] = PARAM_BOOL("overwrite",
	    "Replace an existing image of that name."),
};
PARAMS_SIZE(p_image_upload_url, IMAGE_UPLOAD_URL);

static const struct tool_param p_image_download_url[] = {
	[P_IMAGE_DOWNLOAD_URL_NAME] = PARAM_IMAGE("name",
	    "Image of the workspace or the catalogue."),
};
PARAMS_SIZE(p_image_download_url, IMAGE_DOWNLOAD_URL);

/* ---- display, input, console -------------------------------------------- */

static const struct tool_param p_vm_screenshot[] = {
	[P_VM_SCREENSHOT_VM_ID] = PARAM_VM_ID,
};
PARAMS_SIZE(p_vm_screenshot, VM_SCREENSHOT);

static const struct tool_param p_vm_send_keys[] = {
	[P_VM_SEND_KEYS_VM_ID] = PARAM_VM_ID,
	[P_VM_SEND_KEYS_KEYS] = { "keys", TP_LIST, TS_KEY, 1, 1,
	    TOOL_LIST_MAX, TOOL_KEY_MAX, NULL, NULL,
	    "Key presses in order, each a key (\"ret\", \"esc\", \"f2\", "
	    "\"a\") or a chord (\"ctrl-alt-f2\")." },
	[P_VM_SEND_KEYS_HOLD_MS] = { "hold_ms", TP_INT, 0, 0, 10, 2000, 0,
	    NULL, "100", "How long each press is held." },
	[P_VM_SEND_KEYS_DELAY_MS] = { "delay_ms", TP_INT, 0, 0, 0, 2000, 0,
	    NULL, "50", "Pause between presses." },
};
PARAMS_SIZE(p_vm_send_keys, VM_SEND_KEYS);

static const struct tool_param p_vm_type_text[] = {
	[P_VM_TYPE_TEXT_VM_ID] = PARAM_VM_ID,
	[P_VM_TYPE_TEXT_TEXT] = { "text", TP_STRING, TS_TYPEABLE, 1, 0, 0,
	    TOOL_TYPE_TEXT_MAX, NULL, NULL,
	    "Text to type: printable ASCII, tab and newline." },
	[P_VM_TYPE_TEXT_ENTER] = PARAM_BOOL("enter",
	    "Press Enter after the text."),
	[P_VM_TYPE_TEXT_DELAY_MS] = { "delay_ms", TP_INT, 0, 0, 0, 1000, 0,
	    NULL, "30", "Pause between characters." },
};
PARAMS_SIZE(p_vm_type_text, VM_TYPE_TEXT);

static const struct tool_param p_vm_click[] = {
	[P_VM_CLICK_VM_ID] = PARAM_VM_ID,
	[P_VM_CLICK_X] = { "x", TP_INT, 0, 1, 0, 32767, 0, NULL, NULL,
	    "Horizontal pixel, as in vm_screenshot." },
	[P_VM_CLICK_Y] = { "y", TP_INT, 0, 1, 0, 32767, 0, NULL, NULL,
	    "Vertical pixel, as in vm_screenshot." },
	[P_VM_CLICK_BUTTON] = { "button", TP_ENUM, 0, 0, 0, 0, 0,
	    button_values, "\"left\"", "Mouse button." },
	[P_VM_CLICK_DOUBLE] = PARAM_BOOL("double", "Double-click."),
};
PARAMS_SIZE(p_vm_click, VM_CLICK);

static const struct tool_param p_vm_mouse_move[] = {
	[P_VM_MOUSE_MOVE_VM_ID] = PARAM_VM_ID,
	[P_VM_MOUSE_MOVE_DX] = { "dx", TP_INT, 0, 0, -4096, 4096, 0, NULL,
	    "0", "Relative horizontal motion in pixels." },
	[P_VM_MOUSE_MOVE_DY] = { "dy", TP_INT, 0, 0, -4096, 4096, 0, NULL,
	    "0", "Relative vertical motion in pixels." },
	[P_VM_MOUSE_MOVE_HOME] = { "home", TP_ENUM, 0, 0, 0, 0, 0,
	    corner_values, NULL,
	    "Pin the cursor to this corner before moving. Default: none." },
	[P_VM_MOUSE_MOVE_CLICK] = { "click", TP_ENUM, 0, 0, 0, 0, 0,
	    button_values, NULL,
	    "Press this button after moving. Default: none." },
	[P_VM_MOUSE_MOVE_DOUBLE] = PARAM_BOOL("double",
	    "Double-click (with click)."),
	[P_VM_MOUSE_MOVE_STEP] = { "step", TP_INT, 0, 0, 1, 127, 0, NULL,
	    "32", "Largest motion per PS/2 packet." },
};
PARAMS_SIZE(p_vm_mouse_move, VM_MOUSE_MOVE);

static const struct tool_param p_vm_serial_read[] = {
	[P_VM_SERIAL_READ_VM_ID] = PARAM_VM_ID,
	[P_VM_SERIAL_READ_TAIL_LINES] = { "tail_lines", TP_INT, 0, 0, 1,
	    2000, 0, NULL, "50",
	    "Lines to return from the end of the serial log." },
};
PARAMS_SIZE(p_vm_serial_read, VM_SERIAL_READ);

/* ---- live snapshots ----------------------------------------------------- */

static const struct tool_param p_vm_snapshot_create[] = {
	[P_VM_SNAPSHOT_CREATE_VM_ID] = PARAM_VM_ID,
	[P_VM_SNAPSHOT_CREATE_TAG] = PARAM_TAG,
};
PARAMS_SIZE(p_vm_snapshot_create, VM_SNAPSHOT_CREATE);

static const struct tool_param p_vm_snapshot_restore[] = {
	[P_VM_SNAPSHOT_RESTORE_VM_ID] = PARAM_VM_ID,
	[P_VM_SNAPSHOT_RESTORE_TAG] = PARAM_TAG,
};
PARAMS_SIZE(p_vm_snapshot_restore, VM_SNAPSHOT_RESTORE);

static const struct tool_param p_vm_snapshot_delete[] = {
	[P_VM_SNAPSHOT_DELETE_VM_ID] = PARAM_VM_ID,
	[P_VM_SNAPSHOT_DELETE_TAG] = PARAM_TAG,
};
PARAMS_SIZE(p_vm_snapshot_delete, VM_SNAPSHOT_DELETE);

static const struct tool_param p_vm_snapshot_list[] = {
	[P_VM_SNAPSHOT_LIST_VM_ID] = PARAM_VM_ID,
};
PARAMS_SIZE(p_vm_snapshot_list, VM_SNAPSHOT_LIST);

/* ---- images ------------------------------------------------------------- */

static const struct tool_param p_image_create[] = {
	[P_IMAGE_CREATE_NAME] = PARAM_IMAGE("name",
	    "Name of the new image in the workspace's store."),
	[P_IMAGE_CREATE_SIZE] = { "size", TP_STRING, TS_SIZE, 0, 0, 0,
	    TOOL_SIZE_MAX, NULL, NULL,
	    "Virtual size with a K, M, G or T suffix, e.g. \"20G\". "
	    "Default: the base's size; required without a base." },
	[P_IMAGE_CREATE_FORMAT] = { "format", TP_ENUM, 0, 0, 0, 0, 0,
	    format_values, "\"qcow2\"", "Image format." },
	[P_IMAGE_CREATE_BASE] = { "base", TP_STRING, TS_NAME, 0, 0, 0,
	    OBJ_NAME_MAX, NULL, NULL,
	    "Make a copy-on-write overlay of this image: one of your "
	    "workspace's (qcow2 or raw) or of the catalogue (qcow2 only). "
	    "Default: none." },
	[P_IMAGE_CREATE_OVERWRITE] = PARAM_BOOL("overwrite",
	    "Replace an existing image of that name."),
};
PARAMS_SIZE(p_image_create, IMAGE_CREATE);

static const struct tool_param p_image_info[] = {
	[P_IMAGE_INFO_NAME] = PARAM_IMAGE("name",
	    "Image name in the workspace's store."),
	[P_IMAGE_INFO_BACKING_CHAIN] = PARAM_BOOL("backing_chain",
	    "Include the whole copy-on-write chain."),
};
PARAMS_SIZE(p_image_info, IMAGE_INFO);

static const struct tool_param p_image_convert[] = {
	[P_IMAGE_CONVERT_SOURCE] = PARAM_IMAGE("source", "Image to convert."),
	[P_IMAGE_CONVERT_DEST] = PARAM_IMAGE("dest",
	    "Name of the converted image."),
	[P_IMAGE_CONVERT_FORMAT] = { "format", TP_ENUM, 0, 0, 0, 0, 0,
	    convert_values, "\"qcow2\"", "Format of the new image." },
	[P_IMAGE_CONVERT_COMPRESS] = PARAM_BOOL("compress",
	    "Compress (qcow2 only; smaller, slower)."),
	[P_IMAGE_CONVERT_OVERWRITE] = PARAM_BOOL("overwrite",
	    "Replace an existing dest image."),
};
PARAMS_SIZE(p_image_convert, IMAGE_CONVERT);

static const struct tool_param p_image_resize[] = {
	[P_IMAGE_RESIZE_NAME] = PARAM_IMAGE("name",
	    "Image name in the workspace's store."),
	[P_IMAGE_RESIZE_SIZE] = { "size", TP_STRING, TS_SIZE, 1, 0, 0,
	    TOOL_SIZE_MAX, NULL, NULL,
	    "New virtual size (\"30G\") or growth (\"+10G\")." },
	[P_IMAGE_RESIZE_SHRINK] = PARAM_BOOL("shrink", "Allow shrinking, "
	    "which destroys data past the new size."),
};
PARAMS_SIZE(p_image_resize, IMAGE_RESIZE);

static const struct tool_param p_image_delete[] = {
	[P_IMAGE_DELETE_NAME] = PARAM_IMAGE("name",
	    "Image name in the workspace's store."),
};
PARAMS_SIZE(p_image_delete, IMAGE_DELETE);

static const struct tool_param p_image_snapshot_create[] = {
	[P_IMAGE_SNAPSHOT_CREATE_NAME] = PARAM_IMAGE("name",
	    "Image name in the workspace's store."),
	[P_IMAGE_SNAPSHOT_CREATE_TAG] = PARAM_TAG,
};
PARAMS_SIZE(p_image_snapshot_create, IMAGE_SNAPSHOT_CREATE);

static const struct tool_param p_image_snapshot_apply[] = {
	[P_IMAGE_SNAPSHOT_APPLY_NAME] = PARAM_IMAGE("name",
	    "Image name in the workspace's store."),
	[P_IMAGE_SNAPSHOT_APPLY_TAG] = PARAM_TAG,
};
PARAMS_SIZE(p_image_snapshot_apply, IMAGE_SNAPSHOT_APPLY);

static const struct tool_param p_image_snapshot_delete[] = {
	[P_IMAGE_SNAPSHOT_DELETE_NAME] = PARAM_IMAGE("name",
	    "Image name in the workspace's store."),
	[P_IMAGE_SNAPSHOT_DELETE_TAG] = PARAM_TAG,
};
PARAMS_SIZE(p_image_snapshot_delete, IMAGE_SNAPSHOT_DELETE);

static const struct tool_param p_image_snapshot_list[] = {
	[P_IMAGE_SNAPSHOT_LIST_NAME] = PARAM_IMAGE("name",
	    "Image name in the workspace's store."),
};
PARAMS_SIZE(p_image_snapshot_list, IMAGE_SNAPSHOT_LIST);

static const struct tool_param p_vm_fork[] = {
	[P_VM_FORK_VM_ID] = PARAM_VM_ID,
	[P_VM_FORK_REQUEST_ID] = PARAM_REQUEST_ID("fork"),
	[P_VM_FORK_COUNT] = { "count", TP_INT, 0, 0, 1, VM_FORK_MAX, 0,
	    NULL, "1", "How many new VMs." },
	[P_VM_FORK_NAMES] = { "names", TP_LIST, TS_NAME, 0, 1, VM_FORK_MAX,
	    OBJ_NAME_MAX, NULL, NULL,
	    "A name for each new VM, unique in the workspace, count of "
	    "them. Default: none (each is known by its id)." },
};
PARAMS_SIZE(p_vm_fork, VM_FORK);

/*
 * One tool: T(TOOL, name, title, flags, params, target, result,
 * description, output schema).  T0 is a tool without parameters.
 */
#define T(t, name, title, flags, params, target, result, desc, out)	\
	{ TOOL_##t, name, title, flags, params, P_##t##_NPARAMS, target,	\
	    result, TOOL_RESULT_MAX, desc, out }
#define TB(t, name, title, flags, params, target, result, budget,	\
    desc, out)								\
	{ TOOL_##t, name, title, flags, params, P_##t##_NPARAMS, target,	\
	    result, budget, desc, out }
#define T0(t, name, title, flags, target, result, desc, out)		\
	{ TOOL_##t, name, title, flags, NULL, P_##t##_NPARAMS, target,	\
	    result, TOOL_RESULT_MAX, desc, out }

#define RO	(TF_READONLY | TF_IDEMPOTENT)

const struct tool_desc tool_table[TOOL_COUNT] = {
	T(VM_CREATE, "vm_create", "Create a VM",
	    TF_IDEMPOTENT | TF_LONG, p_vm_create, TT_NONE, TR_JSON,
	    "Create and boot a VM in your workspace, from a catalogue "
	    "image (mcvm's own is a Debian guest with bash, python3, git, "
	    "gcc, make and node), where commands run as uid "
	    "${AGENT_JOB_UID} in /workspace. Returns vm_id once the guest "
	    "agent answers; use it with vm_exec, vm_read_file and "
	    "vm_write_file. request_id is required: retrying with the same "
	    "request_id and arguments returns the first result instead of "
	    "creating a second VM. Networking is off unless you pass "
	    "network=\"on\" and your workspace may use it; port_forwards "
	    "reach a guest's servers either way. A VM idle for "
	    "idle_seconds (no call needing it, no job running) is "
	    "suspended, and woken by the next such call. With disks, "
	    "the VM boots your own images instead (and iso installs onto "
	    "them): it is running once QEMU runs, and has no agent, so "
	    "only the display, serial, snapshot and lifecycle tools work "
	    "on it. Destroy it "
	    "with vm_destroy when done; workspace quotas limit VMs, memory, "
	    "vCPUs and storage.",
	    VM_OBJECT),
	T0(VM_LIST, "vm_list", "List VMs", RO, TT_NONE, TR_JSON,
	    "List the VMs of your workspace with their state and "
	    "settings.",
	    "{'type':'object','properties':{'vms':{'type':'array','items':"
	    VM_OBJECT "}},'required':['vms']}"),
	T(VM_STATUS, "vm_status", "VM status", RO, p_vm_status, TT_VM,
	    TR_JSON,
	    "Show one VM: state, resources, network and port forwards; "
	    "while QEMU runs, its view (qmp), and while the guest agent "
	    "answers, the guest's (guest); and its newest jobs, for "
	    "reconciling after a lost connection: at most "
	    "${VM_STATUS_JOBS_MAX}, newest first, each command cut to "
	    "${VM_STATUS_COMMAND_MAX} bytes (command_truncated), each with "
	    "its state while the agent answers (expired: the guest no "
	    "longer keeps it); "
	    "jobs_truncated says there are more. A paused VM stays paused.",
	    "{'type':'object','properties':{" VM_PROPS ",'qmp':{'type':"
	    "'object','properties':{'status':{'type':'string'},'running':{"
	    "'type':'boolean'}}},'guest':{'type':'object','properties':{"
	    GUEST_PROPS ",'uptime_ms':{'type':'integer'},'jobs_active':{"
	    "'type':'integer','description':'jobs running, or ended with "
	    "processes left in their cgroup'},'jobs_total':{'type':"
	    "'integer'},'frozen':{"
	    "'type':'boolean'}}},'jobs':{'type':'array','items':{'type':"
	    "'object','properties':{'job_id':{'type':'string'},'command':{"
	    "'type':'string'},'command_truncated':{'type':'boolean'},"
	    "'created':{'type':'integer'},'state':{'type':'string',"
	    "'enum':['running','completed','cancelled','timed_out',"
	    "'failed','expired'],'description':'while the guest agent "
	    "answers'}}}},'jobs_truncated':{'type':"
	    "'boolean'}},'required':['vm_id','state']}"),
	T(VM_STOP, "vm_stop", "Stop a VM",
	    TF_DESTRUCTIVE | TF_IDEMPOTENT | TF_LONG, p_vm_stop, TT_VM,
	    TR_JSON,
	    "Stop a VM. The guest agent is asked to shut the guest down: "
	    "it kills the running jobs, syncs the disk and ends the VM. "
	    "The call waits up to timeout_seconds "
	    "(${TOOL_STOP_TIMEOUT_DEFAULT} by default); if the VM has not "
	    "stopped by then the call fails and the VM keeps running: "
	    "retry with force=true. With force=true, and for a paused VM "
	    "or one whose guest agent has not answered yet, QEMU is "
	    "terminated at once instead, like pulling the plug. Running "
	    "jobs and memory are lost; the disk is kept. A hibernated VM "
	    "stops at once, its checkpoint discarded. Start it again with "
	    "vm_start.",
	    VM_OBJECT),
	T(VM_START, "vm_start", "Start a stopped VM",
	    TF_IDEMPOTENT | TF_LONG, p_vm_start, TT_VM, TR_JSON,
	    "Boot a stopped or failed VM from its disk. Nothing of the "
	    "previous run's memory survives; a paused VM is resumed with "
	    "vm_resume instead, and a hibernated one is resumed as by "
	    "vm_resume. Starting a running VM changes nothing.",
	    VM_OBJECT),
	T(VM_SUSPEND, "vm_suspend", "Suspend a VM",
	    TF_IDEMPOTENT | TF_LONG, p_vm_suspend, TT_VM, TR_JSON,
	    "Suspend a running VM. mode=\"hibernate\" (the default): its "
	    "jobs are frozen, its vCPUs stop, RAM and devices go to a "
	    "checkpoint file, and its QEMU, monitor and network end, so "
	    "that it uses no memory (state hibernated; a paused VM can "
	    "hibernate too). mode=\"pause\": jobs frozen and vCPUs "
	    "stopped, memory kept. Refused while jobs run unless "
	    "force=true; frozen jobs' timeouts do not count the suspended "
	    "time. A suspended VM resumes on vm_resume, or on the first "
	    "call that needs its guest (vm_exec, the file tools, "
	    "vm_job_output, vm_job_cancel), which then runs; vm_status, "
	    "vm_list and vm_job_status leave it suspended. A VM from your "
	    "own disks can only pause.",
	    VM_OBJECT),
	T(VM_RESUME, "vm_resume", "Resume a suspended VM",
	    TF_IDEMPOTENT | TF_LONG, p_vm_resume, TT_VM, TR_JSON,
	    "Resume a paused or hibernated VM: a hibernated one's QEMU "
	    "loads its checkpoint and its network comes back; its vCPUs "
	    "run again, the guest clock is set to the host's, and then its "
	    "jobs continue. Resuming a running VM changes nothing.",
	    VM_OBJECT),
	T(VM_DESTROY, "vm_destroy", "Destroy a VM",
	    TF_DESTRUCTIVE | TF_IDEMPOTENT, p_vm_destroy, TT_VM, TR_JSON,
	    "Destroy a VM for good: its processes are killed at once, and "
	    "its disk, its files on the host and its records are deleted. "
	    "Cannot be undone. Base images are not touched.",
	    "{'type':'object','properties':{'vm_id':{'type':'string'},"
	    "'destroyed':{'type':'boolean'}},'required':['vm_id']}"),
	T(VM_EXEC, "vm_exec", "Run a command",
	    TF_DESTRUCTIVE | TF_IDEMPOTENT | TF_OPENWORLD | TF_LONG,
	    p_vm_exec, TT_VM_RUNNING, TR_JSON,
	    "Start a shell command in a running VM and return with its "
	    "job_id; bash -c runs it as uid ${AGENT_JOB_UID} in "
	    "/workspace (or cwd). In a VM from your own disks, "
	    "qemu-guest-agent runs it with /bin/sh -c as its own user, "
	    "its output comes only once it has ended, and more than about "
	    "${QGA_OUTPUT_MAX_KIB} KiB of it fails the job. Without "
	    "wait_seconds the answer is at once. With it, a command that "
	    "ends within them is answered then, with its exit code and "
	    "first page of output (stdout, stderr, next_cursor as "
	    "vm_job_output gives them), and one still running when they "
	    "pass is answered so; with a "
	    "progressToken, progress (bytes of output so far) is sent "
	    "meanwhile. Read more output "
	    "with vm_job_output and the state with vm_job_status; stop it "
	    "with vm_job_cancel. request_id is required: the same id and "
	    "arguments return the same job (its id and first state) "
	    "instead of running it twice. At most ${AGENT_JOBS_ACTIVE_MAX} "
	    "jobs run at once; the guest keeps the last "
	    "${AGENT_JOBS_TOTAL_MAX}. The command must be under "
	    "${AGENT_ARG_MAX_KIB} KiB and stdin at most "
	    "${AGENT_STDIN_MAX_KIB} KiB: write longer scripts with "
	    "vm_write_file. The job and its descendants are killed after "
	    "timeout_seconds (${TOOL_EXEC_TIMEOUT_DEFAULT} by default) of "
	    "run time.",
	    OUTPUT_OUT("'job_id','state'")),
	T(VM_JOB_STATUS, "vm_job_status", "Job status", RO, p_vm_job_status,
	    TT_JOB, TR_JSON,
	    "Show a job's state, exit code, and whether it timed out or lost "
	    "output: of each stream the first ${AGENT_JOB_HEAD_MAX_KIB} KiB "
	    "and the last ${AGENT_JOB_TAIL_MAX_KIB} KiB are kept, and "
	    "truncated says what was dropped between them. The VM must be "
	    "running.",
	    JOB_OUT),
	T(VM_JOB_OUTPUT, "vm_job_output", "Read job output",
	    RO | TF_LONG, p_vm_job_output, TT_JOB, TR_JSON,
	    "Read a job's stdout and stderr from byte offsets. Omit cursor "
	    "on the first call; then pass the whole next_cursor object "
	    "back. Up to ${AGENT_PAGE_MAX_KIB} KiB per stream per call. Of "
	    "each stream the first ${AGENT_JOB_HEAD_MAX_KIB} KiB and the "
	    "last ${AGENT_JOB_TAIL_MAX_KIB} KiB are kept; what lies between "
	    "is dropped, and truncated gives each such stream's offset and "
	    "dropped_bytes. A page never spans the gap: read at a cursor in "
	    "it, it starts after the gap, skipped_bytes says how far, and "
	    "its text begins with a line \"[mcvm: N bytes dropped here]\". "
	    "To jump to a stream's tail, give it the cursor stdout_bytes "
	    "(or stderr_bytes) minus ${AGENT_JOB_TAIL_MAX}. "
	    "Reading does not consume: repeating a cursor rereads. While "
	    "the job runs, an empty answer is not the end; once it has "
	    "completed, read until neither offset advances. "
	    "encoding=\"base64\" returns exact bytes in stdout_base64 and "
	    "stderr_base64 (no mark in them). wait_seconds waits for a "
	    "running job to end first; with a progressToken, progress "
	    "(bytes of output so far) is sent meanwhile. The VM must be "
	    "running.",
	    OUTPUT_OUT("'job_id','next_cursor','state'")),
	T(VM_JOB_CANCEL, "vm_job_cancel", "Cancel a job",
	    TF_DESTRUCTIVE | TF_IDEMPOTENT, p_vm_job_cancel, TT_JOB, TR_JSON,
	    "Cancel a running job: it and every descendant are killed. "
	    "Cancelling a finished job changes nothing.",
	    JOB_OUT),
	T(VM_READ_FILE, "vm_read_file", "Read a guest file", RO,
	    p_vm_read_file, TT_VM_RUNNING, TR_JSON,
	    "Read a file under /workspace in a running VM (path relative "
	    "to /workspace or absolute beneath it): up to max_bytes (at "
	    "most ${TOOL_FILE_MAX_KIB} KiB) from offset. Text comes back "
	    "as content, other bytes as content_base64 (encoding="
	    "\"base64\" asks for base64 always); encoding says which. A "
	    "character cut by max_bytes is left for the next call: bytes "
	    "counts what was returned, and you continue from next_offset "
	    "(offset + bytes) until eof is true. size is the whole file's "
	    "size, whatever the offset. Symlinks are refused.",
	    "{'type':'object','properties':{'path':{'type':'string'},"
	    "'offset':{'type':'integer'},'bytes':{'type':'integer',"
	    "'description':'bytes of the file returned'},"
	    "'next_offset':{'type':'integer','description':'offset + "
	    "bytes: where the next call continues'},"
	    "'size':{'type':'integer','description':'the size of the "
	    "whole file'},"
	    "'eof':{'type':'boolean','description':'the end of the file "
	    "was returned'},'encoding':{'type':'string','enum':['utf-8',"
	    "'base64'],'description':'which of content and content_base64 "
	    "is there'},'content':{'type':'string'},"
	    "'content_base64':{'type':'string'}},"
	    "'required':['path','offset','bytes','next_offset','size',"
	    "'eof','encoding']}"),
	T(VM_WRITE_FILE, "vm_write_file", "Write a guest file",
	    TF_DESTRUCTIVE, p_vm_write_file, TT_VM_RUNNING, TR_JSON,
	    "Write a file under /workspace in a running VM (path relative "
	    "to /workspace or absolute beneath it) from content (text) or "
	    "content_base64 (bytes): exactly one of the two, at "
	    "most ${TOOL_FILE_MAX_KIB} KiB per call. Replaces the file "
	    "unless append=true, which adds to its end (build larger files "
	    "in pieces so). Missing parent directories are created. "
	    "Symlinks are refused, on the way too. The file belongs to uid "
	    "${AGENT_JOB_UID}, as the commands that run there.",
	    "{'type':'object','properties':{'path':{'type':'string'},"
	    "'size':{'type':'integer','description':'the size of the file "
	    "after the write'},'written':{'type':'integer',"
	    "'description':'bytes written by this call'}},"
	    "'required':['path','size','written']}"),
	TB(VM_SCREENSHOT, "vm_screenshot", "Screenshot the display", RO,
	    p_vm_screenshot, TT_VM_LIVE, TR_IMAGE, VMM_SCREENSHOT_MAX,
	    "A PNG of the VM's display as it is now, running or paused, as "
	    "an image content block, with its width and height in pixels "
	    "(mcvm's guest shows its text console, with a shell on tty1). "
	    "At most ${VMM_SCREENSHOT_MAX_KIB} KiB. vm_click takes "
	    "pixels of the last screenshot.",
	    "{'type':'object','properties':{'width':{'type':'integer'},"
	    "'height':{'type':'integer'},'bytes':{'type':'integer'}},"
	    "'required':['width','height','bytes']}"),
	T(VM_SEND_KEYS, "vm_send_keys", "Press keys",
	    TF_DESTRUCTIVE, p_vm_send_keys, TT_VM_RUNNING, TR_JSON,
	    "Press keys on the VM's keyboard, in order, no guest software "
	    "needed: each entry is one press of a key (\"ret\", \"esc\", "
	    "\"f2\", \"a\", \"up\") or a chord of keys held together "
	    "(\"ctrl-c\", \"ctrl-alt-f2\"); aliases: enter, space, escape, "
	    "tab, backspace, del, pageup, pagedown. An unknown name is "
	    "refused with the list of valid ones. Text is easier with "
	    "vm_type_text.",
	    INPUT_OUT),
	T(VM_TYPE_TEXT, "vm_type_text", "Type text",
	    TF_DESTRUCTIVE, p_vm_type_text, TT_VM_RUNNING, TR_JSON,
	    "Type text on the VM's keyboard as a US keyboard would (printable "
	    "ASCII, tab and newline; ${TOOL_TYPE_TEXT_MAX} characters at "
	    "most, and at most ${TOOL_INPUT_TIME_MAX} s of typing a call), "
	    "with enter=true pressing Enter after it. On mcvm's guest, tty1 "
	    "runs a shell, so typed commands run there.",
	    INPUT_OUT),
	T(VM_CLICK, "vm_click", "Click on the display",
	    TF_DESTRUCTIVE, p_vm_click, TT_VM_RUNNING, TR_JSON,
	    "Click at pixel (x, y) of the display, as the VM's last "
	    "vm_screenshot shows it (one is taken first if there is none), "
	    "with the absolute tablet; double=true clicks twice. A point "
	    "outside the screen is refused.",
	    INPUT_OUT),
	T(VM_MOUSE_MOVE, "vm_mouse_move", "Move the mouse",
	    TF_DESTRUCTIVE, p_vm_mouse_move, TT_VM_RUNNING, TR_JSON,
	    "Move the relative mouse: optionally pin it to a corner with "
	    "home first, then move by dx/dy pixels in steps of at most step, "
	    "then optionally press a button (click; double=true twice). The "
	    "guest's pointer acceleration may scale the motion.",
	    INPUT_OUT),
	T(VM_SERIAL_READ, "vm_serial_read", "Read the serial console",
	    RO, p_vm_serial_read, TT_VM, TR_JSON,
	    "The last tail_lines lines of what the VM, running or paused, "
	    "wrote to its serial console (the kernel's messages and the "
	    "agent's log on mcvm's guest): the last ${VMM_SERIAL_RING_KIB} "
	    "KiB are kept, the oldest dropped, so a chatty guest never "
	    "waits. A VM stopped by vm_stop keeps what it had written until "
	    "it starts again; a VM from your own disks keeps it when its "
	    "guest powers off, and shows its install CD's boot before the "
	    "boot from its disks. truncated: older lines exist; replaced: "
	    "bytes that were not valid text became the replacement "
	    "character.",
	    "{'type':'object','properties':{'lines':{'type':'array',"
	    "'items':{'type':'string'}},'truncated':{'type':'boolean'},"
	    "'replaced':{'type':'boolean'},'total_bytes':{'type':'integer',"
	    "'description':'bytes the console wrote since the VM started'}},"
	    "'required':['lines','truncated']}"),
	T(VM_SNAPSHOT_CREATE, "vm_snapshot_create", "Take a live snapshot",
	    TF_LONG, p_vm_snapshot_create, TT_VM_RUNNING, TR_JSON,
	    "Save a live snapshot of a running VM under tag: its memory, "
	    "devices and disk at one instant, kept with the VM's disk. "
	    "The VM pauses while QEMU writes the state, then runs on. "
	    "Answers tag, vm_size (bytes of state saved) and date (UTC, "
	    "as \"2026-12-01T21:30:00Z\"). A VM keeps at most "
	    "${VMM_SNAP_PER_VM_MAX} snapshots; they count against the "
	    "workspace's storage limit (a save may take up to the VM's "
	    "memory), stay across vm_stop and vm_start, and are deleted "
	    "with the VM. Refused: a tag the VM has already (delete it "
	    "first or choose another), a tag of digits only, a VM from "
	    "your own disks with a raw one (its snapshots live in qcow2 "
	    "disks).",
	    VM_SNAPSHOT_OUT),
	T(VM_SNAPSHOT_RESTORE, "vm_snapshot_restore",
	    "Restore a live snapshot",
	    TF_DESTRUCTIVE | TF_IDEMPOTENT | TF_LONG, p_vm_snapshot_restore,
	    TT_VM_RUNNING, TR_JSON,
	    "Roll a running VM back to its snapshot tag: memory, devices "
	    "and disk, losing everything since (processes resume where "
	    "they were; the guest's clock is set to now afterwards, and "
	    "jobs started after the snapshot are forgotten). The snapshot "
	    "is kept. A tag the VM has no snapshot of is refused, and the "
	    "VM runs on untouched; see vm_snapshot_list.",
	    VM_SNAPSHOT_OUT),
	T(VM_SNAPSHOT_DELETE, "vm_snapshot_delete", "Delete a live snapshot",
	    TF_DESTRUCTIVE | TF_IDEMPOTENT, p_vm_snapshot_delete,
	    TT_VM_LIVE, TR_JSON,
	    "Delete live snapshot tag of a running or paused VM, freeing "
	    "its storage; the VM's current state is untouched. A tag the "
	    "VM has no snapshot of is refused as not found.",
	    VM_SNAPSHOT_OUT),
	T(VM_SNAPSHOT_LIST, "vm_snapshot_list", "List live snapshots", RO,
	    p_vm_snapshot_list, TT_VM, TR_JSON,
	    "List the live snapshots of a VM in any state, oldest first: "
	    "tag, vm_size (bytes of state saved) and date (UTC, as "
	    "\"2026-12-01T21:30:00Z\").",
	    SNAPSHOTS_OUT),
	T0(IMAGE_LIST, "image_list", "List images", RO, TT_NONE, TR_JSON,
	    "List the disk images vm_create can boot: the operator's "
	    "catalogue, which every workspace uses read-only (catalog: "
	    "true). Each has its name (vm_create's image), its digest, its "
	    "size once verified and its state: ready, verifying (after a "
	    "service start; retry in a few seconds) or refused (with the "
	    "reason). default: true marks the one vm_create uses without "
	    "an image. Then your workspace's own images (catalog: false), "
	    "with format, virtual_size and disk_size in bytes, base (the "
	    "image it is an overlay of, or null) and in_use (another "
	    "image's base, so it cannot change).",
	    "{'type':'object','properties':{'images':{'type':'array',"
	    "'items':" IMAGE_OBJECT "}},'required':['images']}"),
	T(IMAGE_CREATE, "image_create", "Create a disk image",
	    TF_DESTRUCTIVE | TF_LONG, p_image_create, TT_NONE, TR_JSON,
	    "Create a disk image in your workspace's store: qcow2 (the "
	    "default) or raw, of size, or a copy-on-write qcow2 overlay of "
	    "base. Refused when the name is taken (overwrite=true replaces "
	    "an image no other image is based on), is a catalogue image's, "
	    "or when the workspace's storage quota (which counts each "
	    "image's virtual size) or image count would be exceeded. Returns "
	    "the image.",
	    IMAGE_OBJECT),
	T(IMAGE_INFO, "image_info", "Inspect a disk image", RO,
	    p_image_info, TT_IMAGE, TR_JSON,
	    "Show an image of your workspace or the catalogue: format, "
	    "virtual_size and disk_size (bytes), base, in_use, its internal "
	    "snapshots, and with backing_chain=true every image below it "
	    "(backing_chain, nearest first, down to a catalogue image).",
	    IMAGE_INFO_OUT),
	T(IMAGE_CONVERT, "image_convert", "Convert a disk image",
	    TF_DESTRUCTIVE | TF_LONG, p_image_convert, TT_IMAGE, TR_JSON,
	    "Convert image source (yours or a catalogue image) into a new "
	    "image dest of format qcow2, raw, vmdk, vdi or vhdx, reading "
	    "through its whole backing chain, so dest stands alone. "
	    "compress=true makes a compressed qcow2. Progress is reported "
	    "as it runs; a cancelled call stops it and leaves no dest. "
	    "Refused like image_create when dest exists or the quota is "
	    "full.",
	    IMAGE_OBJECT),
	T(IMAGE_RESIZE, "image_resize", "Resize a disk image",
	    TF_DESTRUCTIVE, p_image_resize, TT_IMAGE, TR_JSON,
	    "Change an image's virtual size: \"30G\", or \"+10G\" to grow "
	    "it. Shrinking destroys the data past the new size, so it needs "
	    "shrink=true. qcow2 and raw images only; refused for an image "
	    "another image is based on, and over the storage quota.",
	    IMAGE_OBJECT),
	T(IMAGE_DELETE, "image_delete", "Delete a disk image",
	    TF_DESTRUCTIVE | TF_IDEMPOTENT, p_image_delete, TT_IMAGE,
	    TR_JSON,
	    "Delete one of your workspace's images. Refused while another "
	    "image is based on it; catalogue images are read-only.",
	    "{'type':'object','properties':{'name':{'type':'string'},"
	    "'deleted':{'type':'boolean'}},'required':['name','deleted']}"),
	T(IMAGE_SNAPSHOT_CREATE, "image_snapshot_create",
	    "Snapshot an offline image", 0, p_image_snapshot_create,
	    TT_IMAGE, TR_JSON,
	    "Create internal snapshot tag (disk only) in one of your qcow2 "
	    "images. Refused when the tag exists, when the image has "
	    "${IMAGE_SNAPSHOTS_MAX} snapshots, or when another image is "
	    "based on it.",
	    IMAGE_SNAPSHOT_OUT),
	T(IMAGE_SNAPSHOT_APPLY, "image_snapshot_apply",
	    "Revert an offline image", TF_DESTRUCTIVE | TF_IDEMPOTENT,
	    p_image_snapshot_apply, TT_IMAGE, TR_JSON,
	    "Revert one of your qcow2 images to its snapshot tag, losing "
	    "the writes since. A missing tag changes nothing and says so.",
	    IMAGE_SNAPSHOT_OUT),
	T(IMAGE_SNAPSHOT_DELETE, "image_snapshot_delete",
	    "Delete an image snapshot", TF_DESTRUCTIVE | TF_IDEMPOTENT,
	    p_image_snapshot_delete, TT_IMAGE, TR_JSON,
	    "Delete snapshot tag from one of your qcow2 images, keeping "
	    "its current contents.",
	    IMAGE_SNAPSHOT_OUT),
	T(IMAGE_SNAPSHOT_LIST, "image_snapshot_list", "List image snapshots",
	    RO, p_image_snapshot_list, TT_IMAGE, TR_JSON,
	    "List the internal snapshots of one of your qcow2 images: tag, "
	    "vm_size (saved VM state in bytes, none for disk-only) and date.",
	    SNAPSHOTS_OUT),
	T(VM_LIST_FILES, "vm_list_files", "List guest files", RO,
	    p_vm_list_files, TT_VM_RUNNING, TR_JSON,
	    "List a directory under /workspace in a running VM (path "
	    "relative to /workspace or absolute beneath it; by default "
	    "/workspace itself), sorted by name: each entry's name "
	    "(relative to path, '/' between levels), type (file, dir, "
	    "symlink or other), size in bytes, mode (permission bits, in "
	    "octal) and mtime (seconds since the epoch). depth (at most "
	    "${AGENT_LIST_DEPTH_MAX}) descends into subdirectories, level "
	    "by level, from the directory's own entries (the default); "
	    "symlinks are listed, never followed. At most "
	    "${AGENT_LIST_MAX} entries: truncated=true says some were left "
	    "out (list a subdirectory, or less deep). In a VM from your "
	    "own disks the guest's find lists it, through "
	    "qemu-guest-agent.",
	    "{'type':'object','properties':{'path':{'type':'string'},"
	    "'entries':{'type':'array','items':{'type':'object',"
	    "'properties':{'name':{'type':'string'},'type':{'type':"
	    "'string','enum':['file','dir','symlink','other']},'size':{"
	    "'type':'integer'},'mode':{'type':'string','description':"
	    "'permission bits in octal, e.g. 0644'},'mtime':{'type':"
	    "'integer','description':'seconds since the epoch'}},'required':["
	    "'name','type','size','mode','mtime']}},'truncated':{'type':"
	    "'boolean','description':'entries were left out'}},"
	    "'required':['path','entries','truncated']}"),
	T(IMAGE_UPLOAD_URL, "image_upload_url", "Get an upload URL",
	    0, p_image_upload_url, TT_NONE, TR_JSON,
	    "A URL to PUT an image or ISO to, once, within "
	    "${IMAGE_TICKET_SECS} s: the request's body is the file, with "
	    "Content-Length (curl -T FILE URL). It needs no token: the URL "
	    "is the permission, for this name in your workspace only. The "
	    "storage quota is checked before the body is read; the format "
	    "(qcow2, raw, iso, vdi, vhdx) is found from the bytes, and a "
	    "qcow2 with a backing file is refused. The PUT answers with "
	    "the image, as image_info does.",
	    URL_OUT),
	T(IMAGE_DOWNLOAD_URL, "image_download_url", "Get a download URL",
	    RO, p_image_download_url, TT_IMAGE, TR_JSON,
	    "A URL to GET an image's file from (yours, or a catalogue "
	    "image), once, within ${IMAGE_TICKET_SECS} s; it needs no "
	    "token. The image is not checked to exist until then.",
	    URL_OUT),
	T(VM_FORK, "vm_fork", "Fork a running VM",
	    TF_IDEMPOTENT | TF_LONG, p_vm_fork, TT_VM_RUNNING, TR_JSON,
	    "Make count new VMs (at most ${VM_FORK_MAX}) from a running VM's "
	    "state at one instant: its memory and processes, its devices "
	    "and its disk. The source is paused only while that state is "
	    "saved (paused_ms) and then runs on. Each new VM has its own "
	    "id, name, host name, machine id and fresh randomness, and "
	    "from then on its own disk and memory: what one writes, no "
	    "other sees. Processes running at the fork run on in every "
	    "new VM, and so do their jobs, under the same job_id. Returns "
	    "once every new VM answers, with them in the source's place "
	    "(vms). Each counts against your workspace's quotas like a "
	    "vm_create; the source must run the guest agent from a "
	    "catalogue image. With network \"on\", each new VM has its own "
	    "address and MAC, and none has the source's port_forwards; a VM "
	    "whose NIC carries port forwards alone is refused. request_id "
	    "is required: a retry with it returns the first result.",
	    "{'type':'object','properties':{'source_vm_id':{'type':"
	    "'string'},'paused_ms':{'type':'integer'},'vms':{'type':"
	    "'array','items':" VM_OBJECT "}},'required':['source_vm_id',"
	    "'vms']}"),
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

/*
 * A path relative to /workspace, or absolute beneath it: no ".."
 * component, no control characters.
 */
static int
valid_guest_path(const char *s, size_t len)
{
	const char	*c, *end = s + len;
	size_t		 clen, wlen = strlen(AGENT_WORKSPACE);

	if (len == 0)
		return 0;
	if (s[0] == '/' && (strncmp(s, AGENT_WORKSPACE, wlen) != 0 ||
	    (s[wlen] != '/' && s[wlen] != '\0')))
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

/* The character index of s's first untypeable character, or -1. */
static long
untypeable_at(const char *s)
{
	long	 chars = 0;

	for (; *s != '\0'; s++) {
		if ((*s & 0xc0) == 0x80)
			continue;	/* a continuation byte */
		if (!((*s >= 0x20 && *s < 0x7f) || *s == '\t' || *s == '\n'))
			return chars;
		chars++;
	}
	return -1;
}

static int
valid_typeable(const char *s)
{
	return untypeable_at(s) == -1;
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
		return valid_id(s, VM_ID_PREFIX) || valid_object_name(s) ?
		    NULL : "is neither a VM id (\"vm-\" and 16 hex digits) "
		    "nor a VM name (lower-case letters, digits, '.', '_', "
		    "'-'): see vm_list";
	case TS_JOB_ID:
		return valid_id(s, JOB_ID_PREFIX) ? NULL :
		    "is not a job id (\"job-\" and 16 hex digits)";
	case TS_PATH:
		return valid_guest_path(s, len) ? NULL : "must be a path "
		    "relative to /workspace (\"src/a.py\") or absolute "
		    "beneath it (\"/workspace/src/a.py\"), without \"..\" "
		    "components or control characters";
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
		if (why != NULL && p->kind == TS_TYPEABLE &&
		    valid_utf8(v->s, strlen(v->s)) &&
		    strlen(v->s) <= p->maxlen) {
			snprintf(err, errlen, "%s: character %ld (from 0) cannot be "
			    "typed; %s %s (a US keyboard): put other text in "
			    "a file with vm_write_file", p->name,
			    untypeable_at(v->s), p->name, why);
			return -1;
		}
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

/*
 * The value of parameter i of tool id in a, or NULL if absent.  Arguments
 * of another tool, or an index out of its range, are a bug in the caller.
 */
const struct tool_value *
tool_value_at(const struct tool_args *a, enum tool_id id, int i)
{
	if (a->tool == NULL || a->tool->id != id || i < 0 ||
	    (size_t)i >= a->tool->nparams)
		fatalx("%s: parameter %d of tool %d asked of %s", __func__, i,
		    (int)id, a->tool != NULL ? a->tool->name : "no tool");
	return a->v[i].present ? &a->v[i] : NULL;
}

const char *
tool_str_at(const struct tool_args *a, enum tool_id id, int i)
{
	const struct tool_value	*v = tool_value_at(a, id, i);

	if (a->tool->params[i].type != TP_STRING)
		fatalx("%s: %s of %s is not a string", __func__,
		    a->tool->params[i].name, a->tool->name);
	return v != NULL ? v->s : NULL;
}

int64_t
tool_int_at(const struct tool_args *a, enum tool_id id, int i, int64_t dflt)
{
	const struct tool_value	*v = tool_value_at(a, id, i);

	switch (a->tool->params[i].type) {
	case TP_INT:
	case TP_BOOL:
	case TP_ENUM:
		break;
	default:
		fatalx("%s: %s of %s is not an integer", __func__,
		    a->tool->params[i].name, a->tool->name);
	}
	return v != NULL ? v->i : dflt;
}

static const struct tool_number *
tool_number(const char *name, size_t len)
{
	size_t	 i;

	for (i = 0; i < nitems(tool_numbers); i++)
		if (strlen(tool_numbers[i].name) == len &&
		    strncmp(tool_numbers[i].name, name, len) == 0)
			return &tool_numbers[i];
	return NULL;
}

/*
 * Writes text into buf (len bytes) with each ${NAME} replaced by the
 * number of that name.  Returns 0, or -1 with errno EINVAL for an unknown
 * or unterminated placeholder and ENAMETOOLONG when buf is too small.
 */
int
tool_render(const char *text, char *buf, size_t len)
{
	const struct tool_number	*n;
	const char			*p = text, *end;
	size_t				 o = 0, k;
	int				 w;

	if (len == 0) {
		errno = ENAMETOOLONG;
		return -1;
	}
	while (*p != '\0') {
		if (p[0] != '$' || p[1] != '{') {
			if (o + 1 >= len)
				goto toolong;
			buf[o++] = *p++;
			continue;
		}
		p += 2;
		if ((end = strchr(p, '}')) == NULL)
			goto invalid;
		k = (size_t)(end - p);
		if ((n = tool_number(p, k)) == NULL)
			goto invalid;
		w = snprintf(buf + o, len - o, "%lld", n->value);
		if (w < 0 || (size_t)w >= len - o)
			goto toolong;
		o += (size_t)w;
		p = end + 1;
	}
	buf[o] = '\0';
	return 0;
invalid:
	buf[0] = '\0';
	errno = EINVAL;
	return -1;
toolong:
	buf[0] = '\0';
	errno = ENAMETOOLONG;
	return -1;
}
