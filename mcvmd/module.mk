# mcvmd, the root controller; see mcvmd(8).
PROGS += mcvmd
# The VM controller and the tool path, by concern (see mcvmd/vm.h and
# mcvmd/dispatch.h).
MCVMD_VM_SRCS := mcvmd/vm.c mcvmd/fsm.c mcvmd/lifecycle.c mcvmd/spawn.c \
	mcvmd/store.c mcvmd/net.c mcvmd/monitor.c mcvmd/template.c \
	mcvmd/admit.c mcvmd/receipt.c mcvmd/req.c mcvmd/dispatch.c \
	mcvmd/tool-vm.c mcvmd/tool-job.c mcvmd/tool-file.c
mcvmd_SRCS := mcvmd/mcvmd.c mcvmd/control.c mcvmd/state.c mcvmd/schema.c \
	mcvmd/qemu.c mcvmd/jail.c mcvmd/cgroup.c $(MCVMD_VM_SRCS) mcvmd/front.c
mcvmd_PKGS := libevent sqlite3 libcap-ng libseccomp libcrypto jansson

UNIT_EXTRA_SRCS += mcvmd/schema.c mcvmd/qemu.c mcvmd/cgroup.c mcvmd/state.c \
	mcvmd/fsm.c

# The built image as a config fragment, included by etc/mcvm.dev.conf.
IMAGE_TARGETS += $(BUILD)/image/mcvm-image.conf
$(BUILD)/image/mcvm-image.conf: $(BUILD)/image/manifest etc/image-conf.sh
	etc/image-conf.sh $(BUILD)/image debian > $@.tmp
	mv $@.tmp $@
