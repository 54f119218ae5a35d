/*
 * Base64 (RFC 4648, standard alphabet, padded).  Pure functions.
 */
#ifndef MCVM_B64_H
#define MCVM_B64_H

#include <stddef.h>
#include <stdint.h>

#define B64_ENCODED_LEN(n)	((((n) + 2) / 3) * 4)
#define B64_DECODED_MAX(n)	(((n) / 4) * 3)

/* Writes B64_ENCODED_LEN(len) bytes and a NUL; returns the length. */
size_t	 b64_encode(const uint8_t *, size_t, char *);

/*
 * Strict decoding: length a multiple of 4, padding only at the end, no
 * whitespace, unused bits zero.  out has room for B64_DECODED_MAX(len).
 * Returns the decoded length, or -1 if the input is not canonical base64.
 */
long	 b64_decode(const char *, size_t, uint8_t *);

#endif
