/*
 * UTF-8 decoding of output pages: valid text passes unchanged, invalid
 * bytes become U+FFFD with the error flag, a character cut at a page end
 * waits for the next page unless the stream ends there.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "utf8.h"

#define RC	"\xef\xbf\xbd"

static char	 out[4096];
static size_t	 outlen;
static int	 errs;

static size_t
dec(const char *in, size_t len, int final)
{
	size_t	 used;

	errs = 0;
	used = utf8_decode((const uint8_t *)in, len, final, out, &outlen,
	    &errs);
	out[outlen] = '\0';
	return used;
}

Test(utf8, ascii_and_multibyte)
{
	static const char s[] = "tab\there\nnul? \xc3\xa9\xe2\x82\xac"
	    "\xf0\x9f\x98\x80 \xef\xbf\xbd";

	cr_assert_eq(dec(s, sizeof(s) - 1, 0), sizeof(s) - 1);
	cr_assert_eq(outlen, sizeof(s) - 1);
	cr_assert_arr_eq(out, s, sizeof(s) - 1);
	cr_assert_eq(errs, 0, "a literal U+FFFD is no error");
}

Test(utf8, nul_bytes_kept)
{
	cr_assert_eq(dec("a\0b", 3, 1), 3);
	cr_assert_eq(outlen, 3);
	cr_assert_eq(out[1], '\0');
	cr_assert_eq(errs, 0);
}

Test(utf8, incomplete_at_page_end_waits)
{
	/* Every proper prefix of each multibyte character. */
	static const char *const chars[] = {
		"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
	};
	char	 page[8];
	size_t	 i, k, n;

	for (i = 0; i < 3; i++) {
		n = strlen(chars[i]);
		for (k = 1; k < n; k++) {
			page[0] = 'x';
			memcpy(page + 1, chars[i], k);
			cr_assert_eq(dec(page, 1 + k, 0), 1);
			cr_assert_str_eq(out, "x");
			cr_assert_eq(errs, 0);
			/* Resuming at the cursor with the whole character. */
			cr_assert_eq(dec(chars[i], n, 0), n);
			cr_assert_str_eq(out, chars[i]);
		}
	}
}

Test(utf8, incomplete_at_stream_end_replaced)
{
	cr_assert_eq(dec("x\xe2\x82", 3, 1), 3);
	cr_assert_str_eq(out, "x" RC);
	cr_assert_eq(errs, 1);
	cr_assert_eq(dec("\xf0", 1, 1), 1);
	cr_assert_str_eq(out, RC);
}

Test(utf8, invalid_bytes)
{
	cr_assert_eq(dec("a\xff" "b", 3, 0), 3);
	cr_assert_str_eq(out, "a" RC "b");
	cr_assert_eq(errs, 1);
	/* A lone continuation byte. */
	cr_assert_eq(dec("\x80", 1, 0), 1);
	cr_assert_str_eq(out, RC);
	/* A lead byte followed by a non-continuation: one U+FFFD, then it. */
	cr_assert_eq(dec("\xe2(x", 3, 0), 3);
	cr_assert_str_eq(out, RC "(x");
	/* Truncated sequence followed by more text: maximal subpart. */
	cr_assert_eq(dec("\xe2\x82x", 3, 0), 3);
	cr_assert_str_eq(out, RC "x");
}

Test(utf8, rfc3629_exclusions)
{
	/* Overlong forms. */
	dec("\xc0\xaf", 2, 1);
	cr_assert_str_eq(out, RC RC);
	dec("\xe0\x80\xaf", 3, 1);
	cr_assert_str_eq(out, RC RC RC);
	dec("\xf0\x80\x80\xaf", 4, 1);
	cr_assert_str_eq(out, RC RC RC RC);
	/* Surrogates. */
	dec("\xed\xa0\x80", 3, 1);
	cr_assert_str_eq(out, RC RC RC);
	cr_assert_eq(errs, 1);
	/* Above U+10FFFF, and bytes never used. */
	dec("\xf4\x90\x80\x80", 4, 1);
	cr_assert_str_eq(out, RC RC RC RC);
	dec("\xf5\xfe", 2, 1);
	cr_assert_str_eq(out, RC RC);
	/* The extremes that are valid. */
	dec("\xf4\x8f\xbf\xbf\xed\x9f\xbf\xee\x80\x80", 10, 1);
	cr_assert_eq(outlen, 10);
	cr_assert_eq(errs, 0);
}

Test(utf8, an_invalid_prefix_does_not_wait)
{
	/* \xe0\x80 can never become valid: no reason to wait for more. */
	cr_assert_eq(dec("\xe0\x80", 2, 0), 2);
	cr_assert_str_eq(out, RC RC);
}

Test(utf8, worst_case_fits)
{
	static uint8_t	 in[1000];
	static char	 big[UTF8_DECODED_MAX(1000)];
	size_t		 used, n;
	int		 e = 0;

	memset(in, 0xff, sizeof(in));
	used = utf8_decode(in, sizeof(in), 1, big, &n, &e);
	cr_assert_eq(used, sizeof(in));
	cr_assert_eq(n, sizeof(big));
}

/* Pages of every size give the same text as one decode. */
Test(utf8, any_page_size)
{
	static const char s[] = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z\xff"
	    "\xe2\x82\xac";
	char	 whole[256], acc[256];
	size_t	 wlen, alen, cur, page, n, used, olen;
	int	 e;

	e = 0;
	utf8_decode((const uint8_t *)s, sizeof(s) - 1, 1, whole, &wlen, &e);
	for (page = 1; page <= 8; page++) {
		alen = 0;
		cur = 0;
		for (;;) {
			n = sizeof(s) - 1 - cur;
			if (n > page)
				n = page;
			used = utf8_decode((const uint8_t *)s + cur, n,
			    cur + n == sizeof(s) - 1, acc + alen, &olen, &e);
			alen += olen;
			cur += used;
			if (cur == sizeof(s) - 1)
				break;
			if (used == 0) {
				/* The host then asks for a longer page. */
				n = page + 4 < sizeof(s) - 1 - cur ? page + 4 :
				    sizeof(s) - 1 - cur;
				used = utf8_decode((const uint8_t *)s + cur, n,
				    cur + n == sizeof(s) - 1, acc + alen,
				    &olen, &e);
				cr_assert_gt(used, 0);
				alen += olen;
				cur += used;
				if (cur == sizeof(s) - 1)
					break;
			}
		}
		cr_assert_eq(alen, wlen, "page %zu", page);
		cr_assert_arr_eq(acc, whole, wlen);
	}
}

/* Cuts of text on a character boundary. */
Test(utf8, prefix_never_splits_a_character)
{
	static const char s[] = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z";
	static const size_t want[] = { 0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10, 11 };
	size_t	 max;

	for (max = 0; max < sizeof(want) / sizeof(want[0]); max++)
		cr_assert_eq(utf8_prefix(s, sizeof(s) - 1, max), want[max],
		    "max %zu", max);
	cr_assert_eq(utf8_prefix(s, sizeof(s) - 1, 100), sizeof(s) - 1);
	/* Bytes that are not UTF-8 are cut where asked. */
	cr_assert_eq(utf8_prefix("\x80\x80\x80\x80\x80", 5, 4), 4);
	cr_assert_eq(utf8_prefix("ab\xff\xfe", 4, 3), 3);
}

Test(utf8, snprintf_cut_stays_valid)
{
	char	 buf[65], name[82];
	size_t	 i;
	int	 n;

	name[0] = 'a';
	for (i = 0; i < 40; i++)
		memcpy(name + 1 + 2 * i, "\xc3\xa9", 2);
	name[81] = '\0';
	n = utf8_snprintf(buf, sizeof(buf), "%s", name);
	cr_assert_eq(n, 63, "the 32nd character does not fit whole");
	cr_assert_eq(strlen(buf), 63);
	cr_assert_arr_eq(buf, name, 63);
	n = utf8_snprintf(buf, sizeof(buf), "short %d", 5);
	cr_assert_eq(n, 7);
	cr_assert_str_eq(buf, "short 5");
	cr_assert_eq(utf8_snprintf(buf, 0, "x"), 0);
}
