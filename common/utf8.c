/*
 * UTF-8 decoding per RFC 3629 (no overlong forms, no surrogates, nothing
 * above U+10FFFF), with the "maximal subpart" replacement practice of the
 * Unicode standard: each invalid sequence prefix becomes one U+FFFD.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "utf8.h"

static const char replacement[3] = { (char)0xef, (char)0xbf, (char)0xbd };

/*
 * For a lead byte, the sequence length and the allowed range of the
 * second byte; 0 if the byte cannot start a sequence.
 */
static size_t
utf8_lead(uint8_t c, uint8_t *lo, uint8_t *hi)
{
	*lo = 0x80;
	*hi = 0xbf;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return 2;
	if (c >= 0xe0 && c <= 0xef) {
		if (c == 0xe0)
			*lo = 0xa0;		/* overlong */
		else if (c == 0xed)
			*hi = 0x9f;		/* surrogates */
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if (c == 0xf0)
			*lo = 0x90;		/* overlong */
		else if (c == 0xf4)
			*hi = 0x8f;		/* above U+10FFFF */
		return 4;
	}
	return 0;
}

size_t
utf8_decode(const uint8_t *in, size_t len, int final, char *out,
    size_t *outlen, int *errors)
{
	size_t	 i = 0, o = 0, need, have;
	uint8_t	 lo, hi;

	while (i < len) {
		need = utf8_lead(in[i], &lo, &hi);
		if (need == 0) {
			memcpy(out + o, replacement, sizeof(replacement));
			o += sizeof(replacement);
			*errors = 1;
			i++;
			continue;
		}
		/* Count the valid continuation bytes present. */
		for (have = 1; have < need && i + have < len; have++) {
			uint8_t	 c = in[i + have];

			if (have == 1 ? (c < lo || c > hi) :
			    (c < 0x80 || c > 0xbf))
				break;
		}
		if (have == need) {
			memcpy(out + o, in + i, need);
			o += need;
			i += need;
			continue;
		}
		if (i + have == len && !final)
			break;		/* wait for the rest */
		memcpy(out + o, replacement, sizeof(replacement));
		o += sizeof(replacement);
		*errors = 1;
		i += have;
	}
	*outlen = o;
	return i;
}

size_t
utf8_prefix(const char *s, size_t len, size_t max)
{
	const uint8_t	*p = (const uint8_t *)s;
	size_t		 start = max;
	uint8_t		 lo, hi;

	if (len <= max)
		return len;
	if (max == 0)
		return 0;
	/* The start of the last character before the cut, bytes < max. */
	while (start > 0 && max - start < 4) {
		start--;
		if ((p[start] & 0xc0) != 0x80)
			break;
	}
	if ((p[start] & 0xc0) == 0x80)
		return max;		/* not UTF-8 here: a plain byte cut */
	if (utf8_lead(p[start], &lo, &hi) > max - start)
		return start;		/* the cut falls inside it */
	return max;
}

int
utf8_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	int	 n;
	size_t	 len;

	if (size == 0)
		return 0;
	if ((n = vsnprintf(buf, size, fmt, ap)) < 0) {
		buf[0] = '\0';
		return -1;
	}
	if ((size_t)n < size)
		return n;
	/* Cut: buf holds size - 1 bytes of a longer text. */
	len = utf8_prefix(buf, (size_t)n, size - 1);
	buf[len] = '\0';
	return (int)len;
}

int
utf8_snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list	 ap;
	int	 n;

	va_start(ap, fmt);
	n = utf8_vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}
