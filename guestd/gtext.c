/*
 * Text the agent puts in its messages: a client's path or command cut
 * to fit is cut on a UTF-8 character boundary, never inside a character,
 * so that the host sees valid text (as far as the client's was).
 */
#include <stddef.h>
#include <string.h>

#include "guestd.h"

/* The sequence length a lead byte announces; 0 for a continuation. */
static size_t
lead_len(unsigned char c)
{
	if ((c & 0xc0) == 0x80)
		return 0;
	if (c >= 0xf0)
		return 4;
	if (c >= 0xe0)
		return 3;
	if (c >= 0xc0)
		return 2;
	return 1;
}

/*
 * The length of the longest prefix of s of at most max bytes that does
 * not end inside a character: for "%.*s".
 */
size_t
gtext_cut(const char *s, size_t max)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 n, k;

	if ((n = strnlen(s, max)) < max || p[n] == '\0')
		return n;
	/* p[n] would be next: if it continues a character, drop that. */
	for (k = 0; k < 3 && n > 0 && (p[n] & 0xc0) == 0x80; k++)
		n--;
	if ((p[n] & 0xc0) == 0x80)	/* not UTF-8 there anyway */
		return max;
	return n;
}

/* Ends s before a character its end cuts (snprintf truncates bytes). */
void
gtext_fit(char *s)
{
	unsigned char	*p = (unsigned char *)s;
	size_t		 n = strlen(s), i, k, need;

	for (i = n, k = 0; i > 0 && k < 4; i--, k++) {
		if ((need = lead_len(p[i - 1])) == 0)
			continue;
		if (need > n - (i - 1))
			p[i - 1] = '\0';
		return;
	}
}
