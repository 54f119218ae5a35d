/*
 * The tool table's schemas and the check of results against them (see
 * jschema.h).  Schemas are the program's own text, so a bad one is a
 * caller's bug; a result that does not match is reported with where.
 */
#include <stdio.h>
#include <string.h>

#include "jschema.h"

#define JSCHEMA_DEPTH_MAX	16

/* A schema of the table: ' stands for ".  NULL if it is not JSON. */
json_t *
jschema_load(const char *text)
{
	char		 buf[JSCHEMA_TEXT_MAX];
	json_error_t	 err;
	size_t		 i, n = strlen(text);

	if (n >= sizeof(buf))
		return NULL;
	for (i = 0; i <= n; i++)
		buf[i] = text[i] == '\'' ? '"' : text[i];
	return json_loads(buf, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &err);
}

static const char *const keywords[] = {
	"type", "properties", "required", "items", "enum",
	"additionalProperties", "minimum", "maximum", "description", NULL
};

static int
known_at(const json_t *s, int depth, char *err, size_t errlen)
{
	const char	*k;
	json_t		*v, *p;
	size_t		 i;

	if (!json_is_object(s) || depth > JSCHEMA_DEPTH_MAX) {
		(void)snprintf(err, errlen, "a schema that is not an object");
		return -1;
	}
	json_object_foreach((json_t *)s, k, v) {
		for (i = 0; keywords[i] != NULL; i++)
			if (strcmp(k, keywords[i]) == 0)
				break;
		if (keywords[i] == NULL) {
			(void)snprintf(err, errlen, "keyword %s", k);
			return -1;
		}
	}
	if ((v = json_object_get(s, "properties")) != NULL) {
		json_object_foreach(v, k, p)
			if (known_at(p, depth + 1, err, errlen) == -1)
				return -1;
	}
	if ((v = json_object_get(s, "items")) != NULL &&
	    known_at(v, depth + 1, err, errlen) == -1)
		return -1;
	if ((v = json_object_get(s, "additionalProperties")) != NULL &&
	    !json_is_boolean(v) && known_at(v, depth + 1, err, errlen) == -1)
		return -1;
	return 0;
}

/* 0 if schema uses only the keywords jschema_check knows. */
int
jschema_known(const json_t *schema, char *err, size_t errlen)
{
	return known_at(schema, 0, err, errlen);
}

static int
type_is(const char *t, const json_t *v)
{
	if (strcmp(t, "object") == 0)
		return json_is_object(v);
	if (strcmp(t, "array") == 0)
		return json_is_array(v);
	if (strcmp(t, "string") == 0)
		return json_is_string(v);
	if (strcmp(t, "integer") == 0)
		return json_is_integer(v);
	if (strcmp(t, "number") == 0)
		return json_is_number(v);
	if (strcmp(t, "boolean") == 0)
		return json_is_boolean(v);
	if (strcmp(t, "null") == 0)
		return json_is_null(v);
	return 0;
}

static int
type_ok(const json_t *t, const json_t *v)
{
	size_t	 i;
	json_t	*e;

	if (t == NULL)
		return 1;
	if (json_is_string(t))
		return type_is(json_string_value(t), v);
	json_array_foreach((json_t *)t, i, e)
		if (json_is_string(e) && type_is(json_string_value(e), v))
			return 1;
	return 0;
}

static int
fail(char *err, size_t errlen, const char *where, const char *what)
{
	(void)snprintf(err, errlen, "%s: %s", where[0] != '\0' ? where :
	    "the result", what);
	return -1;
}

static int
check_at(const json_t *s, const json_t *v, char *where, size_t wsize,
    int depth, char *err, size_t errlen)
{
	const char	*k;
	json_t		*props, *p, *e, *extra;
	size_t		 i, len = strlen(where);
	int		 found;

	if (depth > JSCHEMA_DEPTH_MAX)
		return fail(err, errlen, where, "nested too deep");
	if (!type_ok(json_object_get(s, "type"), v))
		return fail(err, errlen, where, "has the wrong type");
	if ((e = json_object_get(s, "enum")) != NULL) {
		found = 0;
		json_array_foreach(e, i, p)
			if (json_equal(p, (json_t *)v))
				found = 1;
		if (!found)
			return fail(err, errlen, where, "is none of its enum");
	}
	if ((p = json_object_get(s, "minimum")) != NULL && json_is_number(v) &&
	    json_number_value(v) < json_number_value(p))
		return fail(err, errlen, where, "is below its minimum");
	if ((p = json_object_get(s, "maximum")) != NULL && json_is_number(v) &&
	    json_number_value(v) > json_number_value(p))
		return fail(err, errlen, where, "is above its maximum");
	if (json_is_object(v)) {
		props = json_object_get(s, "properties");
		extra = json_object_get(s, "additionalProperties");
		json_array_foreach(json_object_get(s, "required"), i, p)
			if (json_is_string(p) && json_object_get(v,
			    json_string_value(p)) == NULL) {
				(void)snprintf(err, errlen, "%s: lacks the "
				    "required %s", len ? where : "the result",
				    json_string_value(p));
				return -1;
			}
		json_object_foreach((json_t *)v, k, e) {
			(void)snprintf(where + len, wsize - len, "%s%s",
			    len ? "." : "", k);
			if ((p = json_object_get(props, k)) == NULL)
				p = json_is_object(extra) ? extra : NULL;
			if (p == NULL && (props != NULL ||
			    json_is_false(extra)))
				return fail(err, errlen, where,
				    "is not in the schema");
			if (p != NULL && check_at(p, e, where, wsize,
			    depth + 1, err, errlen) == -1)
				return -1;
			where[len] = '\0';
		}
	}
	if (json_is_array(v) && (p = json_object_get(s, "items")) != NULL) {
		json_array_foreach((json_t *)v, i, e) {
			(void)snprintf(where + len, wsize - len, "[%zu]", i);
			if (check_at(p, e, where, wsize, depth + 1, err,
			    errlen) == -1)
				return -1;
			where[len] = '\0';
		}
	}
	return 0;
}

/*
 * 0 if v matches schema; otherwise -1 with where and why in err, e.g.
 * "jobs[0].state: is not in the schema".
 */
int
jschema_check(const json_t *schema, const json_t *v, char *err,
    size_t errlen)
{
	char	 where[JSCHEMA_WHERE_MAX] = "";

	return check_at(schema, v, where, sizeof(where), 0, err, errlen);
}
