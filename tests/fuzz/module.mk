# The libFuzzer targets and their seed corpus generators, each built by
# fuzz_rule (GNUmakefile) with clang whatever CC is: NAME_SRCS its
# sources, NAME_PKGS its pkg-config packages, NAME_CFLAGS its extra flags,
# NAME_KIND "corpus" for a plain program that writes seeds.  Seeds kept as
# files are in seeds-NAME/; tests/suites/fuzz-* run the targets.

# The agent protocol's decoder (host side) and the guest agent's request
# handling, linked from guestd's own sources (tests/fuzz/run.sh).
FUZZ_TARGETS += fuzz-agent fuzz-agent-corpus fuzz-guestd fuzz-guestd-corpus
fuzz-agent_SRCS := tests/fuzz/fuzz_agent.c common/agent.c common/utf8.c \
	common/b64.c
fuzz-agent-corpus_SRCS := tests/fuzz/corpus.c common/agent.c
fuzz-agent-corpus_KIND := corpus
fuzz-guestd_SRCS := tests/fuzz/fuzz_guestd.c guestd/channel.c \
	guestd/jobs.c common/outbuf.c guestd/wsfile.c guestd/gtext.c \
	guestd/netcfg.c common/agent.c common/rdfile.c
fuzz-guestd_CFLAGS := -Iguestd
fuzz-guestd-corpus_SRCS := tests/fuzz/corpus_guestd.c common/agent.c
fuzz-guestd-corpus_KIND := corpus

# The VM monitor's QMP decoder, seeded with the lines QEMU 7.2 writes.
FUZZ_TARGETS += fuzz-qmp
fuzz-qmp_SRCS := tests/fuzz/fuzz_qmp.c vmm/qmp.c common/b64.c
fuzz-qmp_PKGS := jansson
fuzz-qmp_CFLAGS := -Ivmm

# Its relative checkpoint's filter of QEMU's migration stream, seeded
# with a stream in QEMU 7.2's format.
FUZZ_TARGETS += fuzz-ramdiff
fuzz-ramdiff_SRCS := tests/fuzz/fuzz_ramdiff.c vmm/ramdiff.c
fuzz-ramdiff_CFLAGS := -Ivmm

# Its qemu-guest-agent decoder, seeded with the lines qemu-ga 7.2 writes.
FUZZ_TARGETS += fuzz-qga
fuzz-qga_SRCS := tests/fuzz/fuzz_qga.c vmm/qga.c vmm/qmp.c common/b64.c
fuzz-qga_PKGS := jansson
fuzz-qga_CFLAGS := -Ivmm

# mcvm-frontd's decoders of untrusted bytes (HTTP heads, JSON tool
# arguments) and mcvmd's decoder of frontd's tool calls.
FUZZ_TARGETS += fuzz-front
fuzz-front_SRCS := tests/fuzz/fuzz_front.c frontd/httpparse.c \
	frontd/catalog.c common/tools.c common/validate.c common/msg.c \
	common/msg_front.c \
	common/imsg.c common/b64.c common/log.c common/utf8.c \
	common/jschema.c
fuzz-front_PKGS := jansson libevent openssl
fuzz-front_CFLAGS := -Ifrontd

# frontd's request path: an HTTP request through request.c, mcp.c and
# api.c to its answer, with http.c's connection and mcvmd's side played
# by the target.  Every frontd source but main, the connection and the
# sandbox.
FUZZ_TARGETS += fuzz-mcp
fuzz-mcp_SRCS = tests/fuzz/fuzz_mcp.c \
	$(filter-out frontd/frontd.c frontd/http.c frontd/sandbox.c, \
	    $(mcvm-frontd_SRCS)) \
	common/tools.c common/validate.c common/msg.c common/msg_front.c \
	common/imsg.c common/b64.c common/log.c common/hash.c common/utf8.c \
	common/config.c common/jschema.c
fuzz-mcp_PKGS := jansson libevent libcrypto
fuzz-mcp_CFLAGS := -Ifrontd

# mcvmd's readers of a VM monitor's messages and of control-socket
# requests, linked from mcvmd's own sources (its main() renamed away) and
# all of libmcvm's, with a real state.db.  Its seeds' monitor messages are
# written by their codecs.
FUZZ_TARGETS += fuzz-mcvmd fuzz-mcvmd-corpus
fuzz-mcvmd_SRCS = tests/fuzz/fuzz_mcvmd.c $(mcvmd_SRCS) $(LIBMCVM_SRCS) \
	$(GEN)/parse.c
fuzz-mcvmd_PKGS = $(mcvmd_PKGS)
fuzz-mcvmd_CFLAGS := -Dmain=mcvmd_main -Imcvmd -I$(GEN)
fuzz-mcvmd-corpus_SRCS := tests/fuzz/corpus_mcvmd.c common/msg_vmm.c common/keys.c \
	common/msg_proc.c common/msg.c common/imsg.c common/proto.c \
	common/utf8.c common/validate.c common/agent.c
fuzz-mcvmd-corpus_KIND := corpus
