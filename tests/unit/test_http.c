/*
 * frontd's HTTP request head parser: what it accepts, and the exact
 * status for what it refuses.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

#define LIMIT	1024

static struct http_request	 req;
static struct http_framing	 fr;
static const char		*msg;

static int
head(const char *text)
{
	int	 status;

	free(req.hbuf);
	memset(&req, 0, sizeof(req));
	req.hlen = strlen(text);
	req.hbuf = strdup(text);
	cr_assert_not_null(req.hbuf);
	if ((status = http_parse_head(&req, &msg)) != 0)
		return status;
	return http_parse_framing(&req, LIMIT, &fr, &msg);
}

static void
fini(void)
{
	free(req.hbuf);
	req.hbuf = NULL;
}

TestSuite(http, .fini = fini);

Test(http, accepts_a_plain_request)
{
	cr_assert_eq(head("POST /mcp?x=1 HTTP/1.1\r\nHost: a:1\r\n"
	    "Content-Length: 12\r\nX-Empty:\r\nAccept:  a/b ,c/d \t"), 0,
	    "%s", msg);
	cr_assert_str_eq(req.method, "POST");
	cr_assert_str_eq(req.path, "/mcp");
	cr_assert_str_eq(req.query, "x=1");
	cr_assert_eq(req.minor, 1);
	cr_assert_str_eq(http_header(&req, "accept"), "a/b ,c/d");
	cr_assert_str_eq(http_header(&req, "x-empty"), "");
	cr_assert_eq(fr.clen, 12);
	cr_assert_eq(fr.keepalive, 1);
	cr_assert_eq(head("GET / HTTP/1.0"), 0, "%s", msg);
	cr_assert_eq(fr.keepalive, 0);
	cr_assert_eq(head("GET / HTTP/1.1\r\nHost: h\r\nConnection: "
	    "keep-alive, close"), 0);
	cr_assert_eq(fr.keepalive, 0);
	cr_assert_eq(head("POST / HTTP/1.1\r\nHost: h\r\nExpect: "
	    "100-continue\r\nContent-Length: 1"), 0);
	cr_assert_eq(fr.expect_continue, 1);
}

Test(http, refuses_with_the_right_status)
{
	static const struct {
		const char	*text;
		int		 status;
	} bad[] = {
		{ "GET / HTTP/2.0\r\nHost: h", 505 },
		{ "GET / FTP/1.0\r\nHost: h", 400 },
		{ "GET /\r\nHost: h", 400 },
		{ "GET http://x/ HTTP/1.1\r\nHost: h", 400 },
		{ "G(T / HTTP/1.1\r\nHost: h", 400 },
		{ "GET /a\x01 HTTP/1.1\r\nHost: h", 400 },
		{ "GET / HTTP/1.1", 400 },
		{ "GET / HTTP/1.1\r\nHost: a\r\nHost: b", 400 },
		{ "GET / HTTP/1.1\r\nHost: h\r\n folded", 400 },
		{ "GET / HTTP/1.1\r\nHost: h\r\nNo colon", 400 },
		{ "GET / HTTP/1.1\r\nHost: h\r\nBad name: v", 400 },
		{ "GET / HTTP/1.1\r\nHost: h\r\nX: a\rb", 400 },
		{ "GET / HTTP/1.1\r\nHost: h\r\nX: a\nb", 400 },
		{ "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: -1", 400 },
		{ "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 1x", 400 },
		{ "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: ", 400 },
		{ "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: "
		    "99999999999999999999", 400 },
		{ "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n"
		    "Content-Length: 2", 400 },
		{ "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 1025", 413 },
		{ "GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked",
		    501 },
		{ "GET / HTTP/1.1\r\nHost: h\r\nExpect: magic", 417 },
	};
	size_t	 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(head(bad[i].text), bad[i].status, "%s: %s",
		    bad[i].text, msg != NULL ? msg : "accepted");
}

Test(http, refuses_nul_and_too_many_fields)
{
	char	 buf[8192];
	size_t	 n, i;

	free(req.hbuf);
	memset(&req, 0, sizeof(req));
	req.hbuf = malloc(32);
	memcpy(req.hbuf, "GET / HTTP/1.1\r\nHost: \0h", 24);
	req.hlen = 24;
	req.hbuf[24] = '\0';
	cr_assert_eq(http_parse_head(&req, &msg), 400);

	n = (size_t)snprintf(buf, sizeof(buf), "GET / HTTP/1.1\r\nHost: h");
	for (i = 0; i < HTTP_HEADERS_MAX; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "\r\nX%zu: v",
		    i);
	cr_assert_eq(head(buf), 431);
}
