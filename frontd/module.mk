# mcvm-frontd: HTTP, MCP and the JSON tool API; see mcvm-frontd(8).
PROGS += mcvm-frontd
mcvm-frontd_SRCS := frontd/frontd.c frontd/http.c frontd/httpparse.c \
	frontd/request.c frontd/mcp.c frontd/api.c frontd/session.c \
	frontd/catalog.c frontd/sandbox.c frontd/peer.c frontd/authcache.c \
	frontd/payload.c frontd/image.c frontd/task.c frontd/stateless.c
mcvm-frontd_PKGS := libevent libevent_openssl jansson libseccomp \
	libcap-ng libcrypto libssl
MANPAGES += man/mcvm-frontd.8

# Unit tests reach the parser, the argument conversion and the session
# table directly.
UNIT_EXTRA_SRCS += frontd/catalog.c frontd/session.c frontd/httpparse.c \
	frontd/peer.c frontd/authcache.c frontd/http.c frontd/payload.c
