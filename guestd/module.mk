# mcvm-guestd, PID 1 in the guest, and the guest image.
#
# The agent is linked statically against libc alone (not libmcvm), so it
# runs from any root filesystem; its unit-tested parts are also built into
# the host's unit tests.

GUESTD_SRCS := guestd/main.c guestd/port.c guestd/channel.c guestd/jobs.c \
	guestd/jobproc.c guestd/console.c guestd/gtext.c common/outbuf.c \
	guestd/wsfile.c guestd/netcfg.c common/agent.c common/rdfile.c
GUESTD_CFLAGS := -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror \
	-Wformat=2 -Wmissing-prototypes -Wstrict-prototypes -Wpointer-arith \
	-Wno-unused-parameter -fstack-protector-strong -D_FORTIFY_SOURCE=2 \
	-O2 -g -Icommon -Iguestd
GUESTD_OBJ := $(BUILD)/obj-guest

$(GUESTD_OBJ)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(GUESTD_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/mcvm-guestd: $(patsubst %.c,$(GUESTD_OBJ)/%.o,$(GUESTD_SRCS))
	$(CC) -static -o $@ $^

# Its own objects' header dependencies (the host's are read elsewhere).
-include $(shell find $(GUESTD_OBJ) -name '*.d' -type f 2>/dev/null)

UNIT_EXTRA_SRCS += guestd/wsfile.c guestd/netcfg.c \
	guestd/gtext.c

# The image: kernel, initramfs, root filesystem and their manifest.
IMAGE_DIR := $(BUILD)/image
IMAGE_CACHE := $(BUILD)/image-cache
IMAGE_TARGETS += $(IMAGE_DIR)/manifest

$(IMAGE_DIR)/manifest: $(BUILD)/mcvm-guestd guestd/image/build.sh \
    guestd/image/init guestd/image/bash-command-fd.patch
	guestd/image/build.sh $(IMAGE_DIR) $(IMAGE_CACHE) $(BUILD)/mcvm-guestd

# make builds the agent too, though only the image installs it.
all: $(BUILD)/mcvm-guestd
