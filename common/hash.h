#ifndef MCVM_HASH_H
#define MCVM_HASH_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN	32

int	 sha256(const void *, size_t, uint8_t [SHA256_LEN]);
void	 hex_encode(const uint8_t *, size_t, char *);

#endif
