/*
 * The HTTP/1.1 request head parser of mcvm-frontd: pure functions over a
 * buffer, apart from any socket, so that they can be fuzzed.
 *
 * Strict by design (RFC 9112): CRLF line ends only, a token method, an
 * origin-form target of visible ASCII, HTTP/1.0 or HTTP/1.1, no obs-fold,
 * no control characters in field values, no NUL anywhere.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"

const char *
http_header(const struct http_request *r, const char *name)
{
	size_t	 i;

	for (i = 0; i < r->nh; i++)
		if (strcasecmp(r->h[i].name, name) == 0)
			return r->h[i].value;
	return NULL;
}

size_t
http_header_count(const struct http_request *r, const char *name)
{
	size_t	 i, n = 0;

	for (i = 0; i < r->nh; i++)
		if (strcasecmp(r->h[i].name, name) == 0)
			n++;
	return n;
}

static int
is_tchar(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static char *
trim_ows(char *s)
{
	char	*e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		*--e = '\0';
	return s;
}

/*
 * Parses the request line and header fields in r->hbuf (CRLF CRLF removed,
 * NUL-terminated).  Returns 0 or an HTTP status with *msg set.
 */
int
http_parse_head(struct http_request *r, const char **msg)
{
	char	*line, *next, *sp, *colon, *val, *q;

	if (memchr(r->hbuf, '\0', r->hlen) != NULL) {
		*msg = "NUL byte in the request head";
		return 400;
	}
	line = r->hbuf;
	if ((next = strstr(line, "\r\n")) != NULL) {
		*next = '\0';
		next += 2;
	}
	/* method SP target SP version */
	if ((sp = strchr(line, ' ')) == NULL) {
		*msg = "malformed request line";
		return 400;
	}
	*sp = '\0';
	r->method = line;
	if (*line == '\0' || strlen(line) > HTTP_METHOD_MAX) {
		*msg = "malformed method";
		return 400;
	}
	for (q = line; *q != '\0'; q++)
		if (!is_tchar((unsigned char)*q)) {
			*msg = "malformed method";
			return 400;
		}
	r->target = sp + 1;
	if ((sp = strchr(r->target, ' ')) == NULL) {
		*msg = "malformed request line";
		return 400;
	}
	*sp = '\0';
	if (r->target[0] != '/') {
		*msg = "the request target must be an absolute path";
		return 400;
	}
	for (q = (char *)r->target; *q != '\0'; q++)
		if ((unsigned char)*q <= 0x20 || (unsigned char)*q >= 0x7f) {
			*msg = "malformed request target";
			return 400;
		}
	r->path = r->target;
	if ((q = strchr(r->target, '?')) != NULL) {
		*q = '\0';
		r->query = q + 1;
	}
	if (strcmp(sp + 1, "HTTP/1.1") == 0)
		r->minor = 1;
	else if (strcmp(sp + 1, "HTTP/1.0") == 0)
		r->minor = 0;
	else if (strncmp(sp + 1, "HTTP/", 5) == 0) {
		*msg = "only HTTP/1.0 and HTTP/1.1 are served";
		return 505;
	} else {
		*msg = "malformed request line";
		return 400;
	}

	for (line = next; line != NULL && *line != '\0'; line = next) {
		if ((next = strstr(line, "\r\n")) != NULL) {
			*next = '\0';
			next += 2;
		}
		if (*line == ' ' || *line == '\t') {
			*msg = "folded header lines are not accepted";
			return 400;
		}
		if ((colon = strchr(line, ':')) == NULL || colon == line) {
			*msg = "malformed header field";
			return 400;
		}
		*colon = '\0';
		for (q = line; *q != '\0'; q++)
			if (!is_tchar((unsigned char)*q)) {
				*msg = "malformed header field name";
				return 400;
			}
		val = trim_ows(colon + 1);
		for (q = val; *q != '\0'; q++)
			if (((unsigned char)*q < 0x20 && *q != '\t') ||
			    *q == 0x7f) {
				*msg = "control character in a header field";
				return 400;
			}
		if (r->nh >= HTTP_HEADERS_MAX) {
			*msg = "too many header fields";
			return 431;
		}
		r->h[r->nh].name = line;
		r->h[r->nh].value = val;
		r->nh++;
	}
	return 0;
}

static int
token_in_list(const char *list, const char *token)
{
	size_t	 n = strlen(token);
	const char *p = list;

	while (*p != '\0') {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (strncasecmp(p, token, n) == 0 && (p[n] == '\0' ||
		    p[n] == ',' || p[n] == ' ' || p[n] == '\t'))
			return 1;
		p += strcspn(p, ",");
	}
	return 0;
}

/*
 * Checks the framing headers of a parsed head: no transfer coding, one
 * Content-Length value within body_limit, exactly one Host on HTTP/1.1.
 * Returns 0 with *f filled in, or an HTTP status with *msg set.
 */
int
http_parse_framing(const struct http_request *r, size_t body_limit,
    struct http_framing *f, const char **msg)
{
	const char		*v, *p;
	size_t			 i, n = 0;
	unsigned long long	 len = 0, first = 0;
	int			 seen = 0;

	memset(f, 0, sizeof(*f));
	if (http_header(r, "Transfer-Encoding") != NULL) {
		*msg = "transfer codings are not accepted; send "
		    "Content-Length";
		return 501;
	}
	for (i = 0; i < r->nh; i++) {
		if (strcasecmp(r->h[i].name, "Content-Length") != 0)
			continue;
		v = r->h[i].value;
		if (*v == '\0' || strlen(v) > HTTP_CLEN_DIGITS_MAX) {
			*msg = "malformed Content-Length";
			return 400;
		}
		for (len = 0, p = v; *p != '\0'; p++) {
			if (*p < '0' || *p > '9') {
				*msg = "malformed Content-Length";
				return 400;
			}
			len = len * 10 + (unsigned long long)(*p - '0');
		}
		if (seen && len != first) {
			*msg = "conflicting Content-Length";
			return 400;
		}
		first = len;
		seen = 1;
	}
	if (seen && first > body_limit) {
		*msg = "request body too large";
		return 413;
	}
	f->clen = seen ? (size_t)first : 0;
	if (r->minor == 1 && (n = http_header_count(r, "Host")) != 1) {
		*msg = n == 0 ? "missing Host" : "more than one Host";
		return 400;
	}
	f->keepalive = r->minor == 1;
	if ((v = http_header(r, "Connection")) != NULL &&
	    token_in_list(v, "close"))
		f->keepalive = 0;
	if ((v = http_header(r, "Expect")) != NULL) {
		if (strcasecmp(v, "100-continue") != 0) {
			*msg = "unsupported expectation";
			return 417;
		}
		f->expect_continue = 1;
	}
	f->head_only = strcmp(r->method, "HEAD") == 0;
	return 0;
}
