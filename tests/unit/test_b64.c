/*
 * Base64: the RFC 4648 test vectors both ways, binary round trips of
 * every length, and a strict decoder.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "b64.h"

Test(b64, rfc4648_vectors)
{
	static const char *const plain[] = {
		"", "f", "fo", "foo", "foob", "fooba", "foobar",
	};
	static const char *const coded[] = {
		"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy",
	};
	char	 enc[32];
	uint8_t	 dec[32];
	size_t	 i, n;

	for (i = 0; i < 7; i++) {
		n = strlen(plain[i]);
		cr_assert_eq(b64_encode((const uint8_t *)plain[i], n, enc),
		    strlen(coded[i]));
		cr_assert_str_eq(enc, coded[i]);
		cr_assert_eq(b64_decode(coded[i], strlen(coded[i]), dec),
		    (long)n);
		cr_assert_arr_eq(dec, plain[i], n);
	}
}

Test(b64, binary_roundtrip)
{
	uint8_t	 in[300], dec[300];
	char	 enc[B64_ENCODED_LEN(300) + 1];
	size_t	 len, i, n;

	for (i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(255 - i * 13);
	for (len = 0; len <= sizeof(in); len++) {
		n = b64_encode(in, len, enc);
		cr_assert_eq(n, B64_ENCODED_LEN(len));
		cr_assert_eq(b64_decode(enc, n, dec), (long)len);
		cr_assert_arr_eq(dec, in, len);
	}
}

Test(b64, strict_decoder)
{
	static const char *const bad[] = {
		"Zg=", "Zg", "Z===", "====", "Zg==Zg==", "Zm9v\n", "Zm 9",
		"Zh==",		/* unused bits set */
		"Zm9=",		/* unused bits set */
		"Zm=v", "-_==", "Zm9vY*==",
	};
	uint8_t	 dec[16];
	size_t	 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(b64_decode(bad[i], strlen(bad[i]), dec), -1,
		    "accepted \"%s\"", bad[i]);
}
