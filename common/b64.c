/*
 * Base64 encoder and strict decoder (RFC 4648 section 4).
 */
#include <stddef.h>
#include <stdint.h>

#include "b64.h"

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t
b64_encode(const uint8_t *in, size_t len, char *out)
{
	size_t	 i, o = 0;
	uint32_t v;

	for (i = 0; i + 3 <= len; i += 3) {
		v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 |
		    in[i + 2];
		out[o++] = b64_alphabet[(v >> 18) & 0x3f];
		out[o++] = b64_alphabet[(v >> 12) & 0x3f];
		out[o++] = b64_alphabet[(v >> 6) & 0x3f];
		out[o++] = b64_alphabet[v & 0x3f];
	}
	if (len - i == 1) {
		v = (uint32_t)in[i] << 16;
		out[o++] = b64_alphabet[(v >> 18) & 0x3f];
		out[o++] = b64_alphabet[(v >> 12) & 0x3f];
		out[o++] = '=';
		out[o++] = '=';
	} else if (len - i == 2) {
		v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
		out[o++] = b64_alphabet[(v >> 18) & 0x3f];
		out[o++] = b64_alphabet[(v >> 12) & 0x3f];
		out[o++] = b64_alphabet[(v >> 6) & 0x3f];
		out[o++] = '=';
	}
	out[o] = '\0';
	return o;
}

static int
b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

long
b64_decode(const char *in, size_t len, uint8_t *out)
{
	size_t	 i, o = 0, pad = 0;
	uint32_t v;
	int	 k, d;

	if (len % 4 != 0)
		return -1;
	if (len > 0 && in[len - 1] == '=')
		pad = (len > 1 && in[len - 2] == '=') ? 2 : 1;
	for (i = 0; i < len; i += 4) {
		v = 0;
		for (k = 0; k < 4; k++) {
			if (i + 4 == len && k >= 4 - (int)pad) {
				if (in[i + k] != '=')
					return -1;
				v <<= 6;
				continue;
			}
			if ((d = b64_value(in[i + k])) < 0)
				return -1;
			v = v << 6 | (uint32_t)d;
		}
		out[o++] = (uint8_t)(v >> 16);
		if (i + 4 == len && pad == 2) {
			if (v & 0xffff)
				return -1;
			break;
		}
		out[o++] = (uint8_t)(v >> 8);
		if (i + 4 == len && pad == 1) {
			if (v & 0xff)
				return -1;
			break;
		}
		out[o++] = (uint8_t)v;
	}
	return (long)o;
}
