/*
 * SHA-256 through libcrypto, and hex for logs and ids.
 */
#include <openssl/evp.h>

#include "hash.h"

int
sha256(const void *data, size_t len, uint8_t out[SHA256_LEN])
{
	unsigned int	 n = 0;

	if (EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) != 1 ||
	    n != SHA256_LEN)
		return -1;
	return 0;
}

/* Writes 2 * len hex digits and a NUL. */
void
hex_encode(const uint8_t *p, size_t len, char *out)
{
	static const char	 digits[] = "0123456789abcdef";
	size_t			 i;

	for (i = 0; i < len; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 0xf];
	}
	out[2 * len] = '\0';
}
