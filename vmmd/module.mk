PROGS += mcvmd
mcvmd_SRCS := vmmd/mcvmd.c vmmd/control.c vmmd/state.c vmmd/schema.c \
	vmmd/qemu.c vmmd/jail.c vmmd/cgroup.c vmmd/vm.c vmmd/vmtools.c \
	vmmd/vmm_relay.c netd/addr.c \
	vmmd/front.c
mcvmd_PKGS := libevent sqlite3 libcap-ng libseccomp libcrypto jansson

UNIT_EXTRA_SRCS += vmmd/schema.c vmmd/qemu.c vmmd/cgroup.c vmmd/state.c
CHECK_SUITES += daemons
E2E_SUITES += vms startup hostile
BENCH_SUITES += vms

# The built image as a config fragment, included by etc/mcvm.dev.conf.
IMAGE_TARGETS += $(BUILD)/image/mcvm-image.conf
$(BUILD)/image/mcvm-image.conf: $(BUILD)/image/manifest etc/image-conf.sh
	etc/image-conf.sh $(BUILD)/image debian > $@.tmp
	mv $@.tmp $@

# --- mcvm-vmm, the VM monitor (one per VM) ---------------------------------
PROGS += mcvm-vmm
mcvm-vmm_SRCS := vmmd/vmm.c vmmd/qmp.c vmmd/vmm_relay.c vmmd/vmm_sandbox.c
mcvm-vmm_PKGS := libevent jansson libseccomp libcap-ng
UNIT_EXTRA_SRCS += vmmd/qmp.c vmmd/vmm_relay.c vmmd/vmm_sandbox.c
TESTPROGS += vmm-driver
vmm-driver_SRCS := tests/vmm/driver.c vmmd/vmm_relay.c
vmm-driver_PKGS := libevent
$(OBJ)/tests/vmm/%.o: EXTRA_CFLAGS := -Ivmmd
CHECK_SUITES += vmm
# --- end of mcvm-vmm -------------------------------------------------------

# mcvmd re-reads port forward specs with netd's own parser.
$(OBJ)/vmmd/vm.o: EXTRA_CFLAGS := -Inetd
