# libFuzzer target for mcvm-frontd's decoders of untrusted bytes (HTTP
# heads, JSON tool arguments) and for mcvmd's decoder of frontd's tool
# calls.  Built with clang whatever CC is.
FUZZ_CC ?= clang
FUZZ_FRONT_SRCS := tests/fuzz-frontd/fuzz_front.c frontd/httpparse.c \
	frontd/catalog.c common/tools.c common/validate.c common/msg.c \
	common/imsg.c common/b64.c common/log.c common/utf8.c
FUZZ_FRONT_PKGS := jansson libevent openssl

$(BUILD)/fuzz/fuzz-front: $(FUZZ_FRONT_SRCS) frontd/frontd.h frontd/http.h \
    common/tools.h
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=gnu11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror \
	    -Wno-unused-parameter -Icommon -Ifrontd \
	    $(shell $(PKG_CONFIG) --cflags $(FUZZ_FRONT_PKGS)) \
	    -fsanitize=fuzzer,address,undefined \
	    -fno-sanitize-recover=undefined -o $@ $(FUZZ_FRONT_SRCS) \
	    $(shell $(PKG_CONFIG) --libs $(FUZZ_FRONT_PKGS))

FUZZ_PROGS += $(BUILD)/fuzz/fuzz-front
CHECK_SUITES += fuzz-front

# libFuzzer target for frontd's request path: an HTTP request through
# request.c, mcp.c and api.c to its answer, with http.c's connection and
# mcvmd's side played by the target (tests/fuzz-frontd/fuzz_mcp.c).
FUZZ_MCP_SRCS := tests/fuzz-frontd/fuzz_mcp.c frontd/request.c \
	frontd/mcp.c frontd/api.c frontd/session.c frontd/catalog.c \
	frontd/peer.c frontd/authcache.c frontd/httpparse.c common/tools.c \
	common/validate.c common/msg.c common/msg_front.c common/imsg.c \
	common/b64.c common/log.c common/hash.c common/utf8.c common/config.c
FUZZ_MCP_PKGS := jansson libevent libcrypto

$(BUILD)/fuzz/fuzz-mcp: $(FUZZ_MCP_SRCS) frontd/frontd.h frontd/http.h \
    frontd/peer.h common/tools.h common/utf8.h
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=gnu11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror \
	    -Wno-unused-parameter -Icommon -Ifrontd \
	    $(shell $(PKG_CONFIG) --cflags $(FUZZ_MCP_PKGS)) \
	    -fsanitize=fuzzer,address,undefined \
	    -fno-sanitize-recover=undefined -o $@ $(FUZZ_MCP_SRCS) \
	    $(shell $(PKG_CONFIG) --libs $(FUZZ_MCP_PKGS))

FUZZ_PROGS += $(BUILD)/fuzz/fuzz-mcp
CHECK_SUITES += fuzz-mcp
