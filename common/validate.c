/*
 * Validators: see validate.h.  All return 1 when the value is acceptable
 * and 0 otherwise; none of them allocate or log.
 */
#include <string.h>

#include "validate.h"

static int
is_lower_alnum(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/*
 * Lower-case letters, digits, '.', '_' and '-', starting with a letter or
 * digit: safe in a path component, a log line and a cgroup name.
 */
static int
valid_name(const char *s, size_t max)
{
	size_t	 i, len;

	if (s == NULL || (len = strlen(s)) == 0 || len > max)
		return 0;
	if (!is_lower_alnum((unsigned char)s[0]))
		return 0;
	for (i = 1; i < len; i++) {
		if (!is_lower_alnum((unsigned char)s[i]) && s[i] != '.' &&
		    s[i] != '_' && s[i] != '-')
			return 0;
	}
	return 1;
}

int
valid_workspace_name(const char *s)
{
	return valid_name(s, WS_NAME_MAX);
}

int
valid_object_name(const char *s)
{
	return valid_name(s, OBJ_NAME_MAX);
}

/*
 * A live snapshot's tag: an object name that is not all digits, since
 * QEMU numbers its snapshots and some of its lookups take a number for
 * an id.
 */
int
valid_snapshot_tag(const char *s)
{
	if (!valid_object_name(s))
		return 0;
	return strspn(s, "0123456789") != strlen(s);
}

/* Client-chosen retry keys: printable ASCII without spaces or quotes. */
int
valid_request_id(const char *s)
{
	size_t	 i, len;

	if (s == NULL || (len = strlen(s)) == 0 || len > REQUEST_ID_MAX)
		return 0;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= ' ' || c >= 0x7f || c == '"' || c == '\'' ||
		    c == '\\')
			return 0;
	}
	return 1;
}

/* Ids mcvm issues: a prefix such as "vm-" followed by ID_HEX_LEN hex. */
int
valid_id(const char *s, const char *prefix)
{
	size_t	 i, plen = strlen(prefix);

	if (s == NULL || strlen(s) != plen + ID_HEX_LEN ||
	    strncmp(s, prefix, plen) != 0)
		return 0;
	for (i = plen; i < plen + ID_HEX_LEN; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	}
	return 1;
}

int
valid_range_u64(uint64_t v, uint64_t min, uint64_t max)
{
	return v >= min && v <= max;
}

/*
 * Well-formed UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF)
 * and no NUL.
 */
int
valid_utf8(const char *s, size_t len)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 i = 0, n, k;
	uint32_t		 cp;

	while (i < len) {
		unsigned char c = p[i];

		if (c == 0)
			return 0;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			n = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			cp = c & 0x07;
		} else
			return 0;
		if (len - i - 1 < n)
			return 0;
		for (k = 1; k <= n; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += n + 1;
	}
	return 1;
}
