/*
 * Big-endian integers read from bytes of untrusted origin (QEMU's
 * migration stream, qcow2 headers, PNG chunks): the caller has checked
 * that the bytes are there.
 */
#ifndef MCVM_BYTES_H
#define MCVM_BYTES_H

#include <stdint.h>

static inline uint32_t
be32_get(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline uint64_t
be64_get(const uint8_t *p)
{
	return (uint64_t)be32_get(p) << 32 | be32_get(p + 4);
}

#endif
