# mcvmd, the root controller; see mcvmd(8).
PROGS += mcvmd
# Every mcvmd/*.c: a new file (a tool family, a concern) needs no edit
# here.  See mcvmd/vm.h and mcvmd/dispatch.h for what each holds.
MCVMD_SRCS := $(filter-out mcvmd/main.c,$(sort $(wildcard mcvmd/*.c)))
mcvmd_SRCS := mcvmd/main.c $(MCVMD_SRCS)
mcvmd_PKGS := libevent sqlite3 libcap-ng libseccomp libcrypto jansson

# All of mcvmd but main(): the dispatch table's test sees the real table.
UNIT_EXTRA_SRCS += $(MCVMD_SRCS)

# The built image as a config fragment, included by etc/mcvm.dev.conf.
IMAGE_TARGETS += $(BUILD)/image/mcvm-image.conf
$(BUILD)/image/mcvm-image.conf: $(BUILD)/image/manifest etc/image-conf.sh
	etc/image-conf.sh $(BUILD)/image debian > $@.tmp
	mv $@.tmp $@
