#!/bin/sh
# Builds OUTDIR/install.iso, a small installer ISO for the tests of
# installing an operating system from an ISO:
#
#	install.iso	bootable by BIOS (grub i386-pc) and by UEFI (grub
#			x86_64-efi): grub boots at once (timeout 0) the
#			guest image's kernel with an installer initramfs
#
# The installer (its /init below) partitions the empty disk /dev/vda
# (one Linux partition from sector 2048), makes an ext2 filesystem on it,
# writes the marker /mcvm-installed, puts grub's i386-pc boot sector and
# core image on the disk and a kernel, an initramfs and a grub.cfg in
# /boot, prints "mcvm-install: done" on the serial console and powers
# off.  The installed disk then boots alone: its initramfs prints
# "mcvm-marker: " and the marker's contents, then powers off.  Each
# failure prints "mcvm-install: failed: ..." or "mcvm-marker: failed:
# ..." and powers off.
#
# usage: mkiso.sh OUTDIR
#
# The kernel and its virtio modules are the guest image's, from
# build/image (make image), or from the directory MCVM_IMAGE names;
# busybox is the host's busybox-static, grub the host's grub-pc-bin and
# grub-efi-amd64-bin, the ISO made by grub-mkrescue with xorriso and
# mtools (make deps installs them all).  Everything is made in OUTDIR,
# each run anew; no root needed.
set -eu

MARKER="mcvm installed this disk"
# The disk's partition starts at 1 MiB; grub's core image lives in the
# sectors before it.
PART_START=2048

[ $# -eq 1 ] || { echo "usage: $0 outdir" >&2; exit 2; }
here=$(cd "$(dirname "$0")/../.." && pwd)
image=${MCVM_IMAGE:-$here/build/image}
mkdir -p "$1"
out=$(cd "$1" && pwd)
log() { echo "mkiso: $*" >&2; }
die() { echo "$0: $*" >&2; exit 1; }

for f in "$image/vmlinuz" "$image/initrd.img"; do
	[ -s "$f" ] || die "$f missing (make image)"
done
for d in /usr/lib/grub/i386-pc /usr/lib/grub/x86_64-efi; do
	[ -d "$d" ] || die "$d missing (make deps)"
done
for c in grub-mkrescue grub-mkimage xorriso mformat cpio gzip; do
	command -v "$c" >/dev/null || die "no $c (make deps)"
done
[ -x /bin/busybox ] || die "no /bin/busybox (busybox-static)"

work="$out/work"
rm -rf "$work"
mkdir -p "$work"

# --- the modules the guest image's initramfs loads, in its order: the
# kernel is the image's, so are they (virtio_blk among them).
mkdir -p "$work/image-initrd"
gzip -dc "$image/initrd.img" | (cd "$work/image-initrd" && cpio --quiet -idm)
[ -s "$work/image-initrd/lib/modules/order" ] ||
    die "$image/initrd.img has no lib/modules/order"

# What both initramfs' /init do first, as /lib/early.sh: busybox's
# applets, /dev, /proc, /sys, the modules, and waiting for a block
# device.  PREFIX names the init in its messages; fail() prints the
# failure and powers off (with -no-reboot a reboot ends QEMU as well).
cat > "$work/early.sh" <<'EOF'
/bin/busybox --install -s /bin
export PATH=/bin
mount -t devtmpfs devtmpfs /dev
mount -t proc proc /proc
mount -t sysfs sysfs /sys
fail() {
	echo "$PREFIX: failed: $*"
	sync
	poweroff -f
	reboot -f
}
while read -r m; do
	insmod "/lib/modules/$m.ko" || echo "$PREFIX: insmod $m failed"
done < /lib/modules/order
# waitdev DEV: until the block device DEV appears, at most 30 s (devices
# appear asynchronously after their driver loads; TCG is slow).
waitdev() {
	i=0
	while [ ! -b "$1" ]; do
		[ $i -lt 300 ] || fail "no $1"
		sleep 0.1
		i=$((i + 1))
	done
}
EOF

# The installed disk's /init: print the marker, power off.
cat > "$work/disk.init" <<'EOF'
#!/bin/sh
PREFIX=mcvm-marker
. /lib/early.sh
waitdev /dev/vda1
mkdir -p /mnt
mount -t ext2 -o ro /dev/vda1 /mnt || fail "cannot mount /dev/vda1"
[ -f /mnt/mcvm-installed ] || fail "no /mcvm-installed"
echo "mcvm-marker: $(cat /mnt/mcvm-installed)"
umount /mnt
poweroff -f
reboot -f
EOF

# The installer's /init: the MBR (tests/lib/mbr.sh), grub's core.img in
# the sectors after it, then the partition's filesystem and its files.
cat > "$work/install.init" <<EOF
#!/bin/sh
PREFIX=mcvm-install
PART_START=$PART_START
MARKER="$MARKER"
EOF
cat "$here/tests/lib/mbr.sh" >> "$work/install.init"
cat >> "$work/install.init" <<'EOF'
. /lib/early.sh
waitdev /dev/vda
size=$(cat /sys/block/vda/size)
core=$(($(wc -c < /payload/core.img) / 512))
[ "$size" -gt $((PART_START + 2048)) ] || fail "/dev/vda too small"
[ "$core" -lt "$PART_START" ] || fail "core.img too large"
dd if=/dev/zero of=/dev/vda bs=512 count="$PART_START" 2>/dev/null ||
    fail "cannot write /dev/vda"
mbr /payload/boot.img "$size" "$PART_START" > /mbr
[ "$(wc -c < /mbr)" -eq 512 ] || fail "MBR of $(wc -c < /mbr) bytes"
dd if=/mbr of=/dev/vda conv=notrunc 2>/dev/null || fail "cannot write MBR"
dd if=/payload/core.img of=/dev/vda bs=512 seek=1 conv=notrunc 2>/dev/null ||
    fail "cannot write core.img"
sync
blockdev --rereadpt /dev/vda || fail "cannot reread the partition table"
waitdev /dev/vda1
mke2fs -q -L mcvmroot /dev/vda1 >/dev/null || fail "mke2fs failed"
mkdir -p /mnt
mount -t ext2 /dev/vda1 /mnt || fail "cannot mount /dev/vda1"
mkdir -p /mnt/boot/grub
cp /payload/vmlinuz /payload/initrd.img /mnt/boot/ &&
    cp /payload/grub.cfg /mnt/boot/grub/ || fail "cannot copy /boot"
echo "$MARKER" > /mnt/mcvm-installed || fail "cannot write the marker"
umount /mnt || fail "cannot unmount /dev/vda1"
sync
echo "mcvm-install: done"
poweroff -f
reboot -f
EOF

# mkinitrd DIR INIT OUT: DIR as an initramfs (cpio newc, gzip) with
# busybox, the image's modules, /lib/early.sh and INIT as /init.
mkinitrd() {
	mkdir -p "$1/bin" "$1/lib/modules" "$1/dev" "$1/proc" "$1/sys"
	cp /bin/busybox "$1/bin/busybox"
	ln -s busybox "$1/bin/sh"
	cp "$work/image-initrd/lib/modules/"* "$1/lib/modules/"
	cp "$work/early.sh" "$1/lib/early.sh"
	cp "$2" "$1/init"
	chmod 0755 "$1/init"
	(cd "$1" && find . | LC_ALL=C sort |
	    cpio --quiet -o -H newc -R 0:0) | gzip -n -6 > "$3"
}

# The kernel command line, in both grub.cfg: the serial console, and a
# panic ends QEMU (with -no-reboot) rather than hanging until a timeout.
CMDLINE="console=ttyS0 panic=1"

# --- what the installer puts on the disk: grub's boot sector, a core
# image (grub's kernel with the modules to read an ext2 filesystem on an
# MBR partition through the BIOS and to boot Linux) that reads its
# grub.cfg from the first partition, the kernel, the disk's initramfs
# and that grub.cfg.  They travel in the installer's initramfs, as
# /payload, so that the installer needs no CD-ROM driver to read them.
payload="$work/install/payload"
mkdir -p "$payload"
mkinitrd "$work/disk" "$work/disk.init" "$payload/initrd.img"
cp /usr/lib/grub/i386-pc/boot.img "$payload/boot.img"
grub-mkimage -O i386-pc -p '(hd0,msdos1)/boot/grub' \
    -o "$payload/core.img" biosdisk part_msdos ext2 normal linux \
    serial terminal
cp "$image/vmlinuz" "$payload/vmlinuz"
cat > "$payload/grub.cfg" <<EOF
set default=0
set timeout=0
serial --unit=0 --speed=115200
terminal_output serial console
menuentry "mcvm installed disk" {
	linux /boot/vmlinuz $CMDLINE
	initrd /boot/initrd.img
}
EOF
# Check what the install relies on: boot.img reads core.img from LBA 1,
# and core.img's first block list reads the rest of it from sector 2 on.
[ "$(od -An -tx1 -j 92 -N 8 "$payload/boot.img" | tr -d ' \n')" = \
    0100000000000000 ] || die "boot.img's kernel sector is not 1"
[ "$(od -An -tx1 -j 500 -N 8 "$payload/core.img" | tr -d ' \n')" = \
    0200000000000000 ] || die "core.img's block list does not start at 2"

# --- the ISO: grub, the kernel and the installer's initramfs.
mkinitrd "$work/install" "$work/install.init" "$work/install.img"
iso="$work/iso"
mkdir -p "$iso/boot/grub"
cp "$image/vmlinuz" "$iso/boot/vmlinuz"
mv "$work/install.img" "$iso/boot/install.img"
cat > "$iso/boot/grub/grub.cfg" <<EOF
set default=0
set timeout=0
serial --unit=0 --speed=115200
terminal_output serial console
menuentry "mcvm install" {
	linux /boot/vmlinuz $CMDLINE
	initrd /boot/install.img
}
EOF
grub-mkrescue -o "$work/install.iso" --fonts= --themes= --locales= "$iso" \
    >"$work/mkrescue.log" 2>&1 ||
    { cat "$work/mkrescue.log" >&2; die "grub-mkrescue failed"; }
mv "$work/install.iso" "$out/install.iso"
rm -rf "$work"
log "$out/install.iso ($(($(wc -c < "$out/install.iso") / 1024)) KiB)"
