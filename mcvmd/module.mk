# mcvmd, the root controller; see mcvmd(8).
PROGS += mcvmd
# Every mcvmd/*.c: a new file (a tool family, a concern) needs no edit
# here.  See mcvmd/vm.h and mcvmd/dispatch.h for what each holds.
mcvmd_SRCS := $(sort $(wildcard mcvmd/*.c))
mcvmd_PKGS := libevent sqlite3 libcap-ng libseccomp libcrypto jansson

UNIT_EXTRA_SRCS += mcvmd/schema.c mcvmd/qemu.c mcvmd/cgroup.c mcvmd/state.c \
	mcvmd/fsm.c

# The built image as a config fragment, included by etc/mcvm.dev.conf.
IMAGE_TARGETS += $(BUILD)/image/mcvm-image.conf
$(BUILD)/image/mcvm-image.conf: $(BUILD)/image/manifest etc/image-conf.sh
	etc/image-conf.sh $(BUILD)/image debian > $@.tmp
	mv $@.tmp $@
