/*
 * A small HTTP/1.1 server on libevent bufferevents, for mcvm-frontd.
 *
 * It parses requests strictly (CRLF line ends, no obs-fold, no transfer
 * codings, one Content-Length), bounds everything by the configured limits
 * and hands complete requests to one handler.  The handler answers at once
 * or later (after a round trip to mcvmd) with http_reply() or a stream.
 * One request is served at a time per connection; pipelined requests wait
 * in the input buffer.
 */
#ifndef MCVM_FRONTD_HTTP_H
#define MCVM_FRONTD_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>
#include <openssl/ssl.h>

#define HTTP_HEADERS_MAX	64	/* header fields per request */
#define HTTP_METHOD_MAX		16
#define HTTP_CLEN_DIGITS_MAX	19	/* Content-Length digits */

struct http_conn;

struct http_header {
	const char	*name;
	const char	*value;
};

struct http_request {
	const char		*method;
	const char		*target;	/* as sent */
	const char		*path;		/* target without the query */
	const char		*query;		/* after '?', or NULL */
	int			 minor;		/* HTTP/1.minor */
	struct http_header	 h[HTTP_HEADERS_MAX];
	size_t			 nh;
	char			*hbuf;		/* the header block, owned */
	size_t			 hlen;
	char			*body;		/* NUL-terminated, owned */
	size_t			 bodylen;
};

struct http_limits {
	size_t		 body;		/* bytes */
	size_t		 header;	/* bytes, request line included */
	unsigned int	 connections;
	unsigned int	 peer_connections; /* per address or uid */
	unsigned int	 idle_timeout;	/* seconds between requests */
	unsigned int	 header_timeout; /* seconds to receive a head */
	unsigned int	 request_timeout; /* seconds to receive a request */
};

struct peer_key;

/* Called for each complete request; the handler must answer it. */
typedef void	(*http_handler_cb)(struct http_conn *, struct http_request *,
		    void *);
/*
 * Called when the server itself refuses a request (status >= 400) before
 * the handler sees it; path is NULL when the request line was unreadable.
 * It must call http_reply().
 */
typedef void	(*http_error_cb)(struct http_conn *, const char *path, int,
		    const char *, void *);

/* What the framing headers say about the body and the connection. */
struct http_framing {
	size_t		 clen;
	int		 keepalive;
	int		 expect_continue;
	int		 head_only;
};

/* httpparse.c */
int	 http_parse_head(struct http_request *, const char **);
int	 http_parse_framing(const struct http_request *, size_t,
	    struct http_framing *, const char **);

/* http.c */
int	 http_init(struct event_base *, const struct http_limits *,
	    http_handler_cb, http_error_cb, void *, SSL_CTX *);
int	 http_listen(int);
void	 http_shutdown(void);
unsigned int http_nconns(void);

const char *http_header(const struct http_request *, const char *);
size_t	 http_header_count(const struct http_request *, const char *);
const char *http_status_text(int);

void	 http_add_header(struct http_conn *, const char *, const char *);
void	 http_reply(struct http_conn *, int, const char *, const void *,
	    size_t);
void	 http_stream_start(struct http_conn *, int, const char *);
void	 http_stream_write(struct http_conn *, const void *, size_t);
void	 http_stream_end(struct http_conn *);
void	 http_stream_bodies(int (*)(const struct http_request *), uint64_t);
uint64_t http_body_length(const struct http_conn *);
int	 http_sink(struct http_conn *, int, void (*)(void *, const char *),
	    void *);
void	 http_sink_cancel(struct http_conn *);
int	 http_send_fd(struct http_conn *, int, const char *, int, uint64_t,
	    void (*)(void *, const char *), void *);
void	 http_set_abort(struct http_conn *, void (*)(void *), void *);
void	 http_set_drain(struct http_conn *, void (*)(void *), void *);
size_t	 http_pending(const struct http_conn *);
void	 http_abort(struct http_conn *);
void	 http_set_close(struct http_conn *);
void	 http_set_trusted(struct http_conn *);
const char *http_peer(const struct http_conn *);
const struct peer_key *http_peer_key(const struct http_conn *);

#endif
