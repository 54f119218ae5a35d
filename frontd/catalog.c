/*
 * The tools as MCP clients see them, rendered from common/tools.c's table
 * at startup: descriptions and parameter docs with their numbers filled
 * in, input schemas, output schemas (written there with single quotes,
 * turned into JSON here; they list what every result carries, results may
 * carry more) and annotations.  Also the conversion of JSON arguments into
 * typed ones, and the rendering of mcvmd's answers as CallToolResult
 * objects.  No text about any one tool lives here.
 */
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "frontd.h"
#include "jschema.h"
#include "log.h"
#include "utf8.h"

/* What each string kind looks like, for the schema. */
static const char *
kind_pattern(enum tstr_kind k)
{
	switch (k) {
	case TS_NAME:
	case TS_VM_ID:		/* an id, or a name; ids are names too */
		return "^[a-z0-9][a-z0-9._-]*$";
	case TS_REQUEST_ID:
		return "^[!#-&(-\\[\\]-~]+$";
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
	case TS_PATH:		/* valid_guest_path() in common/tools.c */
		return "^(?!/(?!workspace(/|$)))(?!(.*/)?\\.\\.(/|$))"
		    "[^\\u0000-\\u001f\\u007f]+$";
	default:
		return NULL;
	}
}

/* A text of the table with its numbers filled in; fatal if it is bad. */
static json_t *
rendered(const char *what, const char *text)
{
	char	 buf[TOOL_DOC_MAX];

	if (text == NULL || tool_render(text, buf, sizeof(buf)) == -1)
		fatalx("%s: %s: cannot be rendered", __func__, what);
	return json_string(buf);
}

/* A schema or value of the table, written with ' for ". */
static json_t *
load_quoted(const char *text)
{
	json_t	*j;

	if ((j = jschema_load(text)) == NULL)
		fatalx("%s: a bad schema: %.60s", __func__, text);
	return j;
}

static json_t *
param_schema(const struct tool_param *p)
{
	json_t		*s, *e, *d;
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
	if (p->defval != NULL) {
		d = rendered(p->name, p->defval);
		json_object_set_new(s, "default",
		    load_quoted(json_string_value(d)));
		json_decref(d);
	}
	json_object_set_new(s, "description", rendered(p->name, p->doc));
	return s;
}

static json_t *
tool_json(const struct tool_desc *t)
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
	if (t->output == NULL)
		fatalx("%s: %s has no output schema", __func__, t->name);
	return json_pack("{s:s,s:s,s:o,s:o,s:o,s:o}", "name", t->name,
	    "title", t->title, "description", rendered(t->name,
	    t->description), "inputSchema", in, "outputSchema",
	    load_quoted(t->output), "annotations", ann);
}

int
catalog_init(void)
{
	json_t	*tools;
	size_t	 i;

	tools = json_array();
	for (i = 0; i < TOOL_COUNT; i++) {
		if (tool_table[i].id != (enum tool_id)(i + 1)) {
			log_warnx("%s: %s out of order", __func__,
			    tool_table[i].name);
			json_decref(tools);
			return -1;
		}
		json_array_append_new(tools, tool_json(&tool_table[i]));
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
