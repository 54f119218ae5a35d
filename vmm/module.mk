# mcvm-vmm, the VM monitor (one per VM); see mcvm-vmm(8).
PROGS += mcvm-vmm
mcvm-vmm_SRCS := vmm/vmm.c vmm/qmp.c vmm/vmm_sandbox.c
mcvm-vmm_PKGS := libevent jansson libseccomp libcap-ng
UNIT_EXTRA_SRCS += vmm/qmp.c vmm/vmm_sandbox.c

# Plays mcvmd to the real binary, with a real QEMU, for tests/suites/vmm.
TESTPROGS += vmm-driver
vmm-driver_SRCS := tests/vmm/driver.c
vmm-driver_PKGS := libevent
$(OBJ)/tests/vmm/%.o: EXTRA_CFLAGS := -Ivmm
