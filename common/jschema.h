/*
 * The tool table's JSON schemas (common/tools.c writes them with ' for "),
 * loaded, and a check of a result against its tool's output schema.
 *
 * The check knows the keywords the table uses and no others: type (one
 * or a list), properties, required, items, enum, additionalProperties
 * (false or a schema), minimum, and description.  It is stricter than
 * JSON Schema in one way: an object whose schema lists properties may
 * carry no property the schema does not list, so that a schema says
 * everything a result carries.
 */
#ifndef MCVM_JSCHEMA_H
#define MCVM_JSCHEMA_H

#include <stddef.h>

#include <jansson.h>

#define JSCHEMA_TEXT_MAX	4096	/* a schema's text */
#define JSCHEMA_WHERE_MAX	256	/* what jschema_check reports */

json_t	*jschema_load(const char *);
int	 jschema_known(const json_t *, char *, size_t);
int	 jschema_check(const json_t *, const json_t *, char *, size_t);

#endif
