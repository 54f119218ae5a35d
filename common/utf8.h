/*
 * UTF-8 decoding of byte pages from a guest stream, for text output, and
 * truncation of text on a character boundary.  Pure functions; no
 * allocation.
 */
#ifndef MCVM_UTF8_H
#define MCVM_UTF8_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* Worst case output: every input byte replaced by U+FFFD (3 bytes). */
#define UTF8_DECODED_MAX(n)	((n) * 3)

/*
 * Decodes in[0..len) into out, which has room for UTF8_DECODED_MAX(len)
 * bytes (no NUL is added; NUL bytes in the input are kept).  Invalid
 * bytes become U+FFFD (one per maximal invalid subpart) and set *errors.
 * An incomplete character at the end of the input is left unconsumed
 * unless final is set (the stream ends there: EOF or the retention
 * limit), in which case it too becomes U+FFFD.  Returns the number of
 * input bytes consumed; *outlen is set to the output length.
 */
size_t	 utf8_decode(const uint8_t *, size_t, int, char *, size_t *, int *);

/*
 * The length of the longest prefix of s[0..len) of at most max bytes that
 * does not end inside a character: a multi-byte sequence cut by max is
 * left out whole.  Bytes that are not UTF-8 are kept as they are.
 */
size_t	 utf8_prefix(const char *, size_t, size_t);

/*
 * snprintf(3), except that output cut to fit size ends on a character
 * boundary, so that a truncated valid UTF-8 string stays valid.  Every
 * cut of text that may hold a client's characters goes through it (to
 * show at most N bytes of a string s, format s into a buffer of N + 1).
 * Returns the length written, or -1 on an encoding error (with buf "").
 */
int	 utf8_snprintf(char *, size_t, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
int	 utf8_vsnprintf(char *, size_t, const char *, va_list)
	    __attribute__((format(printf, 3, 0)));

#endif
