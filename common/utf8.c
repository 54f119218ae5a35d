/*
 * UTF-8 decoding per RFC 3629 (no overlong forms, no surrogates, nothing
 * above U+10FFFF), with the "maximal subpart" replacement practice of the
 * Unicode standard: each invalid sequence prefix becomes one U+FFFD.
 */
#include <stddef.h>
#include <stdint.h>
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
	size_t	 n;

	if (len <= max)
		return len;
	/* Back off continuation bytes to the start of the cut character. */
	for (n = max; n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80; n--)
		;
	return n;
}
