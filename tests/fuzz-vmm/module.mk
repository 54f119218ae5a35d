# libFuzzer target for the VM monitor's QMP decoder, with a seed corpus of
# the lines QEMU 7.2 really writes.  Built with clang whatever CC is.
FUZZ_CC ?= clang
FUZZ_QMP_SRCS := tests/fuzz-vmm/fuzz_qmp.c vmm/qmp.c

$(BUILD)/fuzz/fuzz-qmp: $(FUZZ_QMP_SRCS) vmm/qmp.h
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=gnu11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror \
	    -Ivmm $(shell $(PKG_CONFIG) --cflags jansson) \
	    -fsanitize=fuzzer,address,undefined \
	    -fno-sanitize-recover=undefined -o $@ $(FUZZ_QMP_SRCS) \
	    $(shell $(PKG_CONFIG) --libs jansson)

FUZZ_PROGS += $(BUILD)/fuzz/fuzz-qmp
CHECK_SUITES += fuzz-qmp
