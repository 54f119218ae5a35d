# libFuzzer target for mcvmd's readers of a VM monitor's messages and of
# control-socket requests, linked from mcvmd's own sources (mcvmd.c's
# main() renamed away) with a real state.db, and its seed corpus
# generator.  Built with clang whatever CC is.
FUZZ_MCVMD_SRCS := tests/fuzz-mcvmd/fuzz_mcvmd.c mcvmd/mcvmd.c \
	mcvmd/control.c mcvmd/state.c mcvmd/schema.c mcvmd/qemu.c mcvmd/jail.c \
	mcvmd/cgroup.c $(MCVMD_VM_SRCS) mcvmd/front.c common/vmm_relay.c \
	common/netslot.c common/log.c common/imsg.c common/msg.c \
	common/proto.c common/proc.c common/privdrop.c common/sandbox.c \
	common/validate.c common/config.c common/hash.c common/rdfile.c \
	common/tools.c common/utf8.c common/b64.c common/agent.c
FUZZ_MCVMD_PKGS := libevent sqlite3 libcap-ng libseccomp libcrypto jansson

$(BUILD)/fuzz/fuzz-mcvmd: $(FUZZ_MCVMD_SRCS) $(GEN)/parse.c mcvmd/mcvmd.h \
    mcvmd/vm.h mcvmd/req.h mcvmd/dispatch.h common/vmm_relay.h \
    common/tools.h common/proto.h
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=gnu11 -D_GNU_SOURCE -Dmain=mcvmd_main -g -O1 -Wall \
	    -Wextra -Werror -Wno-unused-parameter -Icommon -Imcvmd \
	    -I$(GEN) $(shell $(PKG_CONFIG) --cflags $(FUZZ_MCVMD_PKGS)) \
	    -fsanitize=fuzzer,address,undefined \
	    -fno-sanitize-recover=undefined -o $@ $(FUZZ_MCVMD_SRCS) \
	    $(GEN)/parse.c \
	    $(shell $(PKG_CONFIG) --libs $(FUZZ_MCVMD_PKGS))

$(BUILD)/fuzz/fuzz-mcvmd-corpus: tests/fuzz-mcvmd/corpus_mcvmd.c
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror -o $@ \
	    tests/fuzz-mcvmd/corpus_mcvmd.c

FUZZ_PROGS += $(BUILD)/fuzz/fuzz-mcvmd $(BUILD)/fuzz/fuzz-mcvmd-corpus
CHECK_SUITES += fuzz-mcvmd
