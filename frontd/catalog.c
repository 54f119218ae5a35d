/*
 * The tools as MCP clients see them: descriptions, input schemas generated
 * from common/tools.c, output schemas, annotations; the conversion of JSON
 * arguments into typed ones; and the rendering of mcvmd's answers as
 * CallToolResult objects.
 *
 * Output schemas are written below with single quotes for readability and
 * turned into JSON at startup.  They list what every result carries;
 * results may carry more.
 */
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "frontd.h"
#include "log.h"
#include "utf8.h"

#define SCHEMA_TEXT_MAX		4096

struct tool_text {
	enum tool_id	 id;
	const char	*description;
	const char	*output;	/* schema, single-quoted JSON */
};

#define VM_PROPS							\
	"'vm_id':{'type':'string'},'name':{'type':'string'},"		\
	"'state':{'type':'string','description':'creating, booting, "	\
	"running, paused, hibernated, stopped or failed'},"		\
	"'image':{'type':'string'},'memory_mib':{'type':'integer'},"	\
	"'vcpus':{'type':'integer'},'network':{'type':'string'},"	\
	"'created':{'type':'integer'},'idle_seconds':{'type':'integer'},"\
	"'idle_mode':{'type':'string'},'reason':{'type':'string'}"
#define VM_OBJECT							\
	"{'type':'object','properties':{" VM_PROPS "},"			\
	"'required':['vm_id','state']}"
#define JOB_PROPS							\
	"'vm_id':{'type':'string'},'job_id':{'type':'string'},"		\
	"'state':{'type':'string','description':'running, completed, "	\
	"failed, cancelled or timed_out'},'exit_code':{'type':["	\
	"'integer','null']},'signal':{'type':'integer'},'timed_out':"	\
	"{'type':'boolean'},'truncated':{'type':'boolean'},"		\
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
	"{'type':'boolean'},'stderr':{'type':'boolean'}}}},"		\
	"'required':[" required "]}"
#define INPUT_OUT							\
	"{'type':'object','properties':{'vm_id':{'type':'string'},"	\
	"'events':{'type':'integer'}},'required':['vm_id']}"
#define SNAPSHOTS_OUT							\
	"{'type':'object','properties':{'snapshots':{'type':'array',"	\
	"'items':{'type':'object','properties':{'tag':{'type':'string'},"\
	"'vm_size':{'type':'integer'},'date':{'type':'string'}},"	\
	"'required':['tag']}}},'required':['snapshots']}"
#define SNAPSHOT_OUT							\
	"{'type':'object','properties':{'tag':{'type':'string'}},"	\
	"'required':['tag']}"
#define IMAGE_OBJECT							\
	"{'type':'object','properties':{'name':{'type':'string'},"	\
	"'format':{'type':'string'},'virtual_size':{'type':'integer'},"	\
	"'disk_size':{'type':'integer'},'base':{'type':['string','null']},"\
	"'in_use':{'type':'boolean'},'catalog':{'type':'boolean'}},"	\
	"'required':['name']}"

static const struct tool_text tool_texts[] = {
	{ TOOL_VM_CREATE,
	  "Create and boot a VM in your workspace: a Debian guest with bash, "
	  "python3, git, gcc, make and node, where commands run as uid 1000 "
	  "in /workspace. Returns vm_id once the guest agent answers; use it "
	  "with vm_exec, vm_read_file and vm_write_file. request_id is "
	  "required: retrying with the same request_id and arguments returns "
	  "the first result instead of creating a second VM. Networking is "
	  "off unless you pass network=\"on\" and your workspace may use it. "
	  "The VM hibernates after idle_seconds (300) without work and wakes "
	  "by itself when you use it. Destroy it with vm_destroy when done; "
	  "workspace quotas limit VMs, memory and storage.",
	  VM_OBJECT },
	{ TOOL_VM_LIST,
	  "List the VMs of your workspace with their state. Does not wake "
	  "suspended VMs.",
	  "{'type':'object','properties':{'vms':{'type':'array','items':"
	  VM_OBJECT "}},'required':['vms']}" },
	{ TOOL_VM_STATUS,
	  "Show one VM: state, resources, network, port forwards and its "
	  "newest jobs (for reconciling after a lost connection): at most "
	  "32, newest first, each command cut to 256 bytes "
	  "(command_truncated); jobs_truncated says there are more. Does "
	  "not wake a suspended VM.",
	  "{'type':'object','properties':{" VM_PROPS ",'jobs':{'type':"
	  "'array','items':{'type':'object'}},'jobs_truncated':{'type':"
	  "'boolean'}},'required':['vm_id','state']}" },
	{ TOOL_VM_STOP,
	  "Shut a VM down: an ACPI power-button press, waiting up to "
	  "timeout_seconds (30). If the guest ignores it the call fails; "
	  "retry with force=true to power off at once. Running jobs and "
	  "unsaved guest state are lost; the disk is kept. Start it again "
	  "with vm_start.",
	  VM_OBJECT },
	{ TOOL_VM_START,
	  "Boot a stopped VM from its disk. Nothing of the previous run's "
	  "memory survives; use vm_resume for suspended VMs.",
	  VM_OBJECT },
	{ TOOL_VM_SUSPEND,
	  "Suspend a VM. mode=\"hibernate\" (the default) writes its memory "
	  "to disk and frees it; mode=\"pause\" stops its vCPUs and keeps "
	  "memory. Refused while jobs run unless force=true, which freezes "
	  "them; their timeouts do not count suspended time. Resume with "
	  "vm_resume, or just use the VM: work wakes it.",
	  VM_OBJECT },
	{ TOOL_VM_RESUME,
	  "Resume a paused or hibernated VM. The guest clock is corrected "
	  "before jobs continue.",
	  VM_OBJECT },
	{ TOOL_VM_DESTROY,
	  "Destroy a VM for good: stop it and delete its disk, checkpoints "
	  "and logs. Cannot be undone. Base images are not touched.",
	  "{'type':'object','properties':{'vm_id':{'type':'string'},"
	  "'destroyed':{'type':'boolean'}},'required':['vm_id']}" },
	{ TOOL_VM_EXEC,
	  "Start a shell command in the VM and return with its job_id; the "
	  "command runs as uid 1000 in /workspace (or cwd). Without "
	  "wait_seconds the answer is at once. With it, a command that ends "
	  "within them is answered then, with its exit code and first page "
	  "of output (stdout, stderr, next_cursor as vm_job_output gives "
	  "them), and one still running when they pass is answered so. "
	  "Read more output with vm_job_output and the state with "
	  "vm_job_status; stop it with vm_job_cancel. request_id is "
	  "required: the same id and arguments return the same job (its id "
	  "and first state) instead of running it twice. At most 4 jobs run "
	  "at once and 256 exist per VM. The job and its descendants are "
	  "killed after timeout_seconds (600).",
	  OUTPUT_OUT("'job_id','state'") },
	{ TOOL_VM_JOB_STATUS,
	  "Show a job's state, exit code, and whether it timed out or lost "
	  "output.",
	  JOB_OUT },
	{ TOOL_VM_JOB_OUTPUT,
	  "Read a job's stdout and stderr from byte offsets. Omit cursor on "
	  "the first call; then pass the whole next_cursor object back. Up "
	  "to 16 KiB per stream per call; 256 KiB are kept per job, beyond "
	  "which output is dropped and truncated=true. Reading does not "
	  "consume: repeating a cursor rereads. While the job runs, an "
	  "empty answer is not the end; once it has completed, read until "
	  "neither offset advances. encoding=\"base64\" returns exact bytes "
	  "in stdout_base64 and stderr_base64. wait_seconds waits for a "
	  "running job to end first.",
	  OUTPUT_OUT("'job_id','next_cursor','state'") },
	{ TOOL_VM_JOB_CANCEL,
	  "Cancel a running job: it and every descendant are killed. "
	  "Cancelling a finished job changes nothing.",
	  JOB_OUT },
	{ TOOL_VM_READ_FILE,
	  "Read a file under /workspace in the VM, returned as "
	  "content_base64: up to max_bytes (128 KiB) from offset. eof tells "
	  "whether the end was reached; call again with a larger offset for "
	  "the rest. Symlinks are refused.",
	  "{'type':'object','properties':{'path':{'type':'string'},"
	  "'offset':{'type':'integer'},'bytes':{'type':'integer'},"
	  "'size':{'type':'integer'},'content_base64':{'type':'string'},"
	  "'eof':{'type':'boolean'}},"
	  "'required':['path','content_base64']}" },
	{ TOOL_VM_WRITE_FILE,
	  "Write a file under /workspace in the VM from content_base64 (at "
	  "most 128 KiB decoded per call; use append=true to build larger "
	  "files in pieces). Replaces the file unless append=true. Parent "
	  "directories must exist (create them with vm_exec). Symlinks are "
	  "refused.",
	  "{'type':'object','properties':{'path':{'type':'string'},"
	  "'size':{'type':'integer'},'written':{'type':'integer'}},"
	  "'required':['path']}" },
	{ TOOL_VM_SCREENSHOT,
	  "Capture the VM's display as a PNG image. Works without guest "
	  "software. Use it to read a console or installer, and before "
	  "vm_click to find coordinates.",
	  "{'type':'object','properties':{'width':{'type':'integer'},"
	  "'height':{'type':'integer'},'mime_type':{'type':'string'},"
	  "'data_base64':{'type':'string'}},'required':['width','height']}" },
	{ TOOL_VM_SEND_KEYS,
	  "Press keys or chords on the VM's keyboard, in order: \"ret\", "
	  "\"esc\", \"f2\", \"a\", \"ctrl-alt-f2\". To type prose use "
	  "vm_type_text.",
	  INPUT_OUT },
	{ TOOL_VM_TYPE_TEXT,
	  "Type text on the VM's keyboard (US layout; printable ASCII, tab "
	  "and newline; 4096 characters at most). enter=true presses Enter "
	  "after it.",
	  INPUT_OUT },
	{ TOOL_VM_CLICK,
	  "Click at pixel (x, y) of the display, as vm_screenshot shows it. "
	  "Needs the VM's tablet device (present on mcvm VMs).",
	  INPUT_OUT },
	{ TOOL_VM_MOUSE_MOVE,
	  "Move the mouse relatively, for guests without a tablet driver: "
	  "optionally pin it to a corner with home first, then move by "
	  "dx/dy in steps of at most step pixels, then optionally click. "
	  "Check with vm_screenshot where it landed; guests may accelerate.",
	  INPUT_OUT },
	{ TOOL_VM_SERIAL_READ,
	  "Read the last tail_lines (50) lines of the VM's serial console: "
	  "boot messages and kernel logs.",
	  "{'type':'object','properties':{'lines':{'type':'array','items':"
	  "{'type':'string'}},'truncated':{'type':'boolean'}},'required':"
	  "['lines']}" },
	{ TOOL_VM_SNAPSHOT_CREATE,
	  "Save a live snapshot of a running VM (memory, devices and disk) "
	  "under tag. The VM pauses while it is written. Needs a qcow2 "
	  "disk. Restore it with vm_snapshot_restore.",
	  SNAPSHOT_OUT },
	{ TOOL_VM_SNAPSHOT_RESTORE,
	  "Roll a running VM back to snapshot tag: memory, devices and disk "
	  "revert, and everything since is lost.",
	  SNAPSHOT_OUT },
	{ TOOL_VM_SNAPSHOT_DELETE,
	  "Delete live snapshot tag of a VM. The VM keeps running.",
	  SNAPSHOT_OUT },
	{ TOOL_VM_SNAPSHOT_LIST,
	  "List the live snapshots of a VM (tag, saved memory size, date). "
	  "Restore one with vm_snapshot_restore.",
	  SNAPSHOTS_OUT },
	{ TOOL_IMAGE_LIST,
	  "List the disk images you can use: the operator's catalogue "
	  "(read-only) and your workspace's own images.",
	  "{'type':'object','properties':{'images':{'type':'array',"
	  "'items':" IMAGE_OBJECT "}},'required':['images']}" },
	{ TOOL_IMAGE_CREATE,
	  "Create a disk image in your workspace's store, size like "
	  "\"20G\". qcow2 grows on demand. With base, the image is a "
	  "copy-on-write overlay of another image, which then stays in use. "
	  "Refuses an existing name unless overwrite=true.",
	  IMAGE_OBJECT },
	{ TOOL_IMAGE_INFO,
	  "Inspect an image: format, virtual and on-disk size, snapshots, "
	  "and with backing_chain=true its whole copy-on-write chain.",
	  IMAGE_OBJECT },
	{ TOOL_IMAGE_CONVERT,
	  "Convert image source into a new image dest of another format, "
	  "flattening any backing chain. compress=true compresses qcow2.",
	  IMAGE_OBJECT },
	{ TOOL_IMAGE_RESIZE,
	  "Change an image's virtual size (\"30G\", or \"+10G\" to grow). "
	  "Shrinking destroys data past the new size and needs shrink=true; "
	  "shrink the guest filesystem first. Refused while a VM uses it.",
	  IMAGE_OBJECT },
	{ TOOL_IMAGE_DELETE,
	  "Delete one of your workspace's images. Refused while a VM or an "
	  "overlay uses it. Cannot be undone.",
	  "{'type':'object','properties':{'name':{'type':'string'},"
	  "'deleted':{'type':'boolean'}},'required':['name','deleted']}" },
	{ TOOL_IMAGE_SNAPSHOT_CREATE,
	  "Create an internal disk-only snapshot tag in an image no VM is "
	  "running from (qcow2). For running VMs use vm_snapshot_create.",
	  SNAPSHOT_OUT },
	{ TOOL_IMAGE_SNAPSHOT_APPLY,
	  "Revert an offline qcow2 image to its snapshot tag; later writes "
	  "are lost.",
	  SNAPSHOT_OUT },
	{ TOOL_IMAGE_SNAPSHOT_DELETE,
	  "Delete snapshot tag from an offline qcow2 image; the image's "
	  "current contents are kept.",
	  SNAPSHOT_OUT },
	{ TOOL_IMAGE_SNAPSHOT_LIST,
	  "List the internal snapshots of an offline qcow2 image. Apply one "
	  "with image_snapshot_apply.",
	  SNAPSHOTS_OUT },
};

/* What each string kind looks like, for the schema. */
static const char *
kind_pattern(enum tstr_kind k)
{
	switch (k) {
	case TS_NAME:
		return "^[a-z0-9][a-z0-9._-]*$";
	case TS_REQUEST_ID:
		return "^[!#-&(-\\[\\]-~]+$";
	case TS_VM_ID:
		return "^vm-[0-9a-f]{16}$";
	case TS_JOB_ID:
		return "^job-[0-9a-f]{16}$";
	case TS_SIZE:
		return "^\\+?[0-9]{1,15}[KMGT]?$";
	case TS_KEY:
		return "^[a-z0-9_]+(-[a-z0-9_]+)*$";
	case TS_FORWARD:
		return "^((auto|[0-9]{1,5}):)?[0-9]{1,5}$";
	case TS_TYPEABLE:
		return "^[\\t\\n -~]*$";
	default:
		return NULL;
	}
}

static json_t *
load_quoted(const char *text)
{
	char		 buf[SCHEMA_TEXT_MAX];
	json_error_t	 err;
	json_t		*j;
	size_t		 i, n = strlen(text);

	if (n >= sizeof(buf))
		fatalx("%s: schema too long", __func__);
	for (i = 0; i <= n; i++)
		buf[i] = text[i] == '\'' ? '"' : text[i];
	if ((j = json_loads(buf, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
	    &err)) == NULL)
		fatalx("%s: bad schema at %d: %s", __func__, err.position,
		    err.text);
	return j;
}

static json_t *
param_schema(const struct tool_param *p)
{
	json_t		*s, *e;
	const char	*pat;
	size_t		 i;

	s = json_object();
	switch (p->type) {
	case TP_STRING:
		json_object_set_new(s, "type", json_string("string"));
		json_object_set_new(s, "minLength", json_integer(1));
		json_object_set_new(s, "maxLength", json_integer(
		    (json_int_t)p->maxlen));
		if ((pat = kind_pattern(p->kind)) != NULL)
			json_object_set_new(s, "pattern", json_string(pat));
		break;
	case TP_INT:
		json_object_set_new(s, "type", json_string("integer"));
		json_object_set_new(s, "minimum", json_integer(p->min));
		json_object_set_new(s, "maximum", json_integer(p->max));
		break;
	case TP_BOOL:
		json_object_set_new(s, "type", json_string("boolean"));
		break;
	case TP_ENUM:
		json_object_set_new(s, "type", json_string("string"));
		e = json_array();
		for (i = 0; p->values[i] != NULL; i++)
			json_array_append_new(e, json_string(p->values[i]));
		json_object_set_new(s, "enum", e);
		break;
	case TP_LIST:
		json_object_set_new(s, "type", json_string("array"));
		json_object_set_new(s, "minItems", json_integer(p->min));
		json_object_set_new(s, "maxItems", json_integer(p->max));
		e = json_pack("{s:s,s:i,s:I}", "type", "string", "minLength", 1,
		    "maxLength", (json_int_t)p->maxlen);
		if ((pat = kind_pattern(p->kind)) != NULL)
			json_object_set_new(e, "pattern", json_string(pat));
		json_object_set_new(s, "items", e);
		break;
	case TP_BYTES:
		json_object_set_new(s, "type", json_string("string"));
		json_object_set_new(s, "contentEncoding",
		    json_string("base64"));
		json_object_set_new(s, "maxLength", json_integer(
		    (json_int_t)((p->maxlen + 2) / 3 * 4)));
		break;
	case TP_CURSOR:
		json_decref(s);
		s = load_quoted("{'type':'object','properties':{'stdout':"
		    "{'type':'integer','minimum':0},'stderr':{'type':"
		    "'integer','minimum':0}},'additionalProperties':false}");
		break;
	}
	if (p->defval != NULL)
		json_object_set_new(s, "default", load_quoted(p->defval));
	json_object_set_new(s, "description", json_string(p->doc));
	return s;
}

static json_t *
tool_json(const struct tool_desc *t, const struct tool_text *tt)
{
	json_t	*props, *req, *in, *ann;
	size_t	 i;

	props = json_object();
	req = json_array();
	for (i = 0; i < t->nparams; i++) {
		json_object_set_new(props, t->params[i].name,
		    param_schema(&t->params[i]));
		if (t->params[i].required)
			json_array_append_new(req,
			    json_string(t->params[i].name));
	}
	in = json_pack("{s:s,s:o,s:o,s:b}", "type", "object", "properties",
	    props, "required", req, "additionalProperties", 0);
	ann = json_pack("{s:s,s:b,s:b,s:b,s:b}", "title", t->title,
	    "readOnlyHint", (t->flags & TF_READONLY) != 0,
	    "destructiveHint", (t->flags & TF_DESTRUCTIVE) != 0,
	    "idempotentHint", (t->flags & TF_IDEMPOTENT) != 0,
	    "openWorldHint", (t->flags & TF_OPENWORLD) != 0);
	return json_pack("{s:s,s:s,s:s,s:o,s:o,s:o}", "name", t->name,
	    "title", t->title, "description", tt->description,
	    "inputSchema", in, "outputSchema", load_quoted(tt->output),
	    "annotations", ann);
}

int
catalog_init(void)
{
	json_t	*tools;
	size_t	 i, k;

	tools = json_array();
	for (i = 0; i < TOOL_COUNT; i++) {
		for (k = 0; k < sizeof(tool_texts) / sizeof(tool_texts[0]); k++)
			if (tool_texts[k].id == tool_table[i].id)
				break;
		if (k == sizeof(tool_texts) / sizeof(tool_texts[0]) ||
		    tool_table[i].id != (enum tool_id)(i + 1)) {
			log_warnx("%s: no text for %s", __func__,
			    tool_table[i].name);
			json_decref(tools);
			return -1;
		}
		json_array_append_new(tools, tool_json(&tool_table[i],
		    &tool_texts[k]));
	}
	if ((fenv->tools_list = json_pack("{s:o}", "tools", tools)) == NULL)
		return -1;
	/* Served on every listing: serialized once. */
	if ((fenv->tools_list_text = json_dumps(fenv->tools_list,
	    JSON_COMPACT)) == NULL)
		return -1;
	fenv->tools_list_len = strlen(fenv->tools_list_text);
	return 0;
}

json_t *
catalog_tools(void)
{
	return fenv->tools_list;
}

static int
arg_fail(char *err, size_t errlen, const char *name, const char *why)
{
	snprintf(err, errlen, "%s %s", name, why);
	return -1;
}

/* One JSON value into a typed value, by the parameter's type. */
static int
arg_convert(const struct tool_param *p, json_t *j, struct tool_value *v,
    void **scratch, char *err, size_t errlen)
{
	json_t		*e;
	const char	*key;
	size_t		 i, slen;
	long		 dlen;
	int		 idx;
	uint8_t		*bytes;

	switch (p->type) {
	case TP_STRING:
		if (!json_is_string(j))
			return arg_fail(err, errlen, p->name,
			    "must be a string");
		v->s = json_string_value(j);
		if (json_string_length(j) != strlen(v->s))
			return arg_fail(err, errlen, p->name,
			    "must not contain NUL");
		break;
	case TP_INT:
		if (!json_is_integer(j))
			return arg_fail(err, errlen, p->name,
			    "must be an integer");
		v->i = json_integer_value(j);
		break;
	case TP_BOOL:
		if (!json_is_boolean(j))
			return arg_fail(err, errlen, p->name,
			    "must be true or false");
		v->i = json_is_true(j);
		break;
	case TP_ENUM:
		if (!json_is_string(j) ||
		    (idx = tool_enum_index(p, json_string_value(j))) == -1) {
			snprintf(err, errlen, "%s must be one of", p->name);
			for (i = 0; p->values[i] != NULL; i++) {
				slen = strlen(err);
				snprintf(err + slen, errlen - slen, "%s \"%s\"",
				    i == 0 ? "" : ",", p->values[i]);
			}
			return -1;
		}
		v->i = idx;
		break;
	case TP_LIST:
		if (!json_is_array(j))
			return arg_fail(err, errlen, p->name,
			    "must be an array of strings");
		if (json_array_size(j) > TOOL_LIST_MAX ||
		    (int64_t)json_array_size(j) > p->max) {
			snprintf(err, errlen, "%s has more than %lld entries",
			    p->name, (long long)p->max);
			return -1;
		}
		json_array_foreach(j, i, e) {
			if (!json_is_string(e) ||
			    json_string_length(e) != strlen(
			    json_string_value(e)))
				return arg_fail(err, errlen, p->name,
				    "must be an array of strings");
			v->list[i] = json_string_value(e);
		}
		v->nlist = json_array_size(j);
		break;
	case TP_BYTES:
		if (!json_is_string(j))
			return arg_fail(err, errlen, p->name,
			    "must be a base64 string");
		if (json_string_length(j) > (p->maxlen + 2) / 3 * 4) {
			snprintf(err, errlen, "%s holds more than %zu bytes",
			    p->name, p->maxlen);
			return -1;
		}
		if (*scratch != NULL)
			return arg_fail(err, errlen, p->name,
			    "is a second byte parameter");
		slen = json_string_length(j);
		if ((bytes = malloc(B64_DECODED_MAX(slen) + 1)) == NULL)
			return arg_fail(err, errlen, p->name,
			    "could not be decoded: out of memory");
		*scratch = bytes;
		if ((dlen = b64_decode(json_string_value(j), slen,
		    bytes)) < 0)
			return arg_fail(err, errlen, p->name,
			    "is not valid padded base64");
		v->b = bytes;
		v->blen = (size_t)dlen;
		break;
	case TP_CURSOR:
		if (!json_is_object(j))
			return arg_fail(err, errlen, p->name,
			    "must be an object {\"stdout\": n, \"stderr\": n}");
		json_object_foreach(j, key, e) {
			if (strcmp(key, "stdout") == 0)
				i = 0;
			else if (strcmp(key, "stderr") == 0)
				i = 1;
			else
				return arg_fail(err, errlen, p->name,
				    "may hold only stdout and stderr");
			if (!json_is_integer(e) || json_integer_value(e) < 0)
				return arg_fail(err, errlen, p->name,
				    "offsets must be integers >= 0");
			v->cursor[i] = (uint64_t)json_integer_value(e);
		}
		break;
	}
	return 0;
}

/*
 * Arguments of tool t from a JSON object.  Unknown names, wrong types and
 * values out of bounds are refused; null stands for an omitted optional
 * parameter.  *scratch receives memory to free after sending.
 */
int
catalog_args(const struct tool_desc *t, json_t *obj, struct tool_args *a,
    void **scratch, char *err, size_t errlen)
{
	const char	*key;
	json_t		*j;
	int		 i;
	char		 shown[SHOWN_MAX + 1];

	memset(a, 0, sizeof(*a));
	a->tool = t;
	*scratch = NULL;
	if (!json_is_object(obj)) {
		snprintf(err, errlen, "arguments must be an object");
		return -1;
	}
	json_object_foreach(obj, key, j) {
		if ((i = tool_param_index(t, key)) == -1) {
			utf8_snprintf(shown, sizeof(shown), "%s", key);
			utf8_snprintf(err, errlen, "unknown parameter \"%s\"",
			    shown);
			return -1;
		}
		if (json_is_null(j) && !t->params[i].required)
			continue;
		if (arg_convert(&t->params[i], j, &a->v[i], scratch, err,
		    errlen) == -1)
			return -1;
		a->v[i].present = 1;
	}
	return tool_args_check(a, err, errlen);
}

/*
 * mcvmd's answer as a CallToolResult.  On success the JSON it built is
 * the structured content, and its text the text rendering; otherwise
 * the message is the text of an error result.
 */
json_t *
catalog_result(uint32_t status, const char *text)
{
	json_error_t	 err;
	json_t		*obj;
	char		 msg[TOOL_MESSAGE_MAX + 1];

	if (status == TOOL_OK) {
		obj = json_loads(text, JSON_REJECT_DUPLICATES, &err);
		if (obj != NULL && json_is_object(obj))
			return json_pack("{s:[{s:s,s:s}],s:o,s:b}", "content",
			    "type", "text", "text", text,
			    "structuredContent", obj, "isError", 0);
		json_decref(obj);
		log_warnx("%s: mcvmd sent a result that is not a JSON object",
		    __func__);
		text = "internal error: the service produced an invalid "
		    "result";
		status = TOOL_ERROR;
	}
	/*
	 * mcvmd writes the message for the model: pass it on as is, cut on
	 * a character boundary; one that is not UTF-8 is not passed on.
	 */
	utf8_snprintf(msg, sizeof(msg), "%s", text);
	if (!valid_utf8(msg, strlen(msg))) {
		log_warnx("%s: mcvmd sent a message that is not UTF-8",
		    __func__);
		utf8_snprintf(msg, sizeof(msg), "internal error: the service "
		    "produced an invalid message");
	}
	return json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text",
	    "text", msg, "isError", 1);
}
