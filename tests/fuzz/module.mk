# libFuzzer target for the agent protocol decoder (host side), with its
# seed corpus generator.  Built with clang whatever CC is.
FUZZ_CC ?= clang
FUZZ_CFLAGS := -std=gnu11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror \
	-Icommon -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined
FUZZ_AGENT_SRCS := tests/fuzz/fuzz_agent.c common/agent.c common/utf8.c \
	common/b64.c

$(BUILD)/fuzz/fuzz-agent: $(FUZZ_AGENT_SRCS) common/agent_proto.h \
    common/utf8.h common/b64.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(FUZZ_AGENT_SRCS)

$(BUILD)/fuzz/fuzz-agent-corpus: tests/fuzz/corpus.c common/agent.c \
    common/agent_proto.h
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror -Icommon \
	    -o $@ tests/fuzz/corpus.c common/agent.c

# The guest agent's request handling, linked from guestd's own sources.
FUZZ_GUESTD_SRCS := tests/fuzz/fuzz_guestd.c guestd/channel.c \
	guestd/jobs.c guestd/outbuf.c guestd/wsfile.c guestd/gtext.c \
	guestd/netcfg.c common/agent.c common/rdfile.c

$(BUILD)/fuzz/fuzz-guestd: $(FUZZ_GUESTD_SRCS) common/agent_proto.h \
    guestd/guestd.h guestd/outbuf.h guestd/wsfile.h guestd/netcfg.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Wno-unused-parameter -Iguestd -o $@ \
	    $(FUZZ_GUESTD_SRCS)

$(BUILD)/fuzz/fuzz-guestd-corpus: tests/fuzz/corpus_guestd.c common/agent.c \
    common/agent_proto.h
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror -Icommon \
	    -o $@ tests/fuzz/corpus_guestd.c common/agent.c

FUZZ_PROGS += $(BUILD)/fuzz/fuzz-agent $(BUILD)/fuzz/fuzz-agent-corpus \
	$(BUILD)/fuzz/fuzz-guestd $(BUILD)/fuzz/fuzz-guestd-corpus
CHECK_SUITES += fuzz-smoke
