# mcvm-vmm, the VM monitor (one per VM); see mcvm-vmm(8).
PROGS += mcvm-vmm
# Every vmm/*.c: a new op of several steps needs no edit here.
VMM_SRCS := $(filter-out vmm/main.c,$(sort $(wildcard vmm/*.c)))
mcvm-vmm_SRCS := vmm/main.c $(VMM_SRCS)
mcvm-vmm_PKGS := libevent jansson libseccomp libcap-ng
# All of the monitor but main(): the op table's test sees the real table.
UNIT_EXTRA_SRCS += $(VMM_SRCS)

# Plays mcvmd to the real binary, with a real QEMU, for tests/suites/vmm.
TESTPROGS += vmm-driver
vmm-driver_SRCS := tests/vmm/driver.c tests/lib/peer.c
vmm-driver_PKGS := libevent
$(OBJ)/tests/vmm/%.o: EXTRA_CFLAGS := -Ivmm -Itests/lib
