# mcvmd, the root controller; see mcvmd(8).
PROGS += mcvmd
mcvmd_SRCS := mcvmd/mcvmd.c mcvmd/control.c mcvmd/state.c mcvmd/schema.c \
	mcvmd/qemu.c mcvmd/jail.c mcvmd/cgroup.c mcvmd/vm.c mcvmd/vmtools.c \
	mcvmd/front.c mcvmd/payload.c
mcvmd_PKGS := libevent sqlite3 libcap-ng libseccomp libcrypto jansson

UNIT_EXTRA_SRCS += mcvmd/schema.c mcvmd/qemu.c mcvmd/cgroup.c mcvmd/state.c

# The built image as a config fragment, included by etc/mcvm.dev.conf.
IMAGE_TARGETS += $(BUILD)/image/mcvm-image.conf
$(BUILD)/image/mcvm-image.conf: $(BUILD)/image/manifest etc/image-conf.sh
	etc/image-conf.sh $(BUILD)/image debian > $@.tmp
	mv $@.tmp $@
