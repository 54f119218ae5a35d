# The test guest with qemu-guest-agent and no mcvm agent, for the tests of
# VMs from a workspace's own disks (tests/node/vm/qga.test.js), from the
# guest image's kernel and initramfs and Debian packages, cached beside
# make image's downloads.
QGA_IMAGE_DIR := $(BUILD)/image-qga
IMAGE_TARGETS += $(QGA_IMAGE_DIR)/qga.qcow2

$(QGA_IMAGE_DIR)/qga.qcow2: $(IMAGE_DIR)/manifest tests/image-qga/build.sh \
    tests/lib/mbr.sh guestd/image/mirror.sh
	tests/image-qga/build.sh $(QGA_IMAGE_DIR) $(IMAGE_CACHE) $(IMAGE_DIR)
