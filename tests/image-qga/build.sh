#!/bin/sh
# Builds OUTDIR/qga.qcow2, a test guest with qemu-guest-agent and no mcvm
# agent, for the tests of VMs from a workspace's own disks (uploaded there
# as a workspace image):
#
#	qga.qcow2	a bootable disk, compressed: an MBR with grub's boot
#			sector and core image (i386-pc, tests/lib/mbr.sh), one
#			ext2 partition holding a Debian root filesystem made
#			by mmdebstrap --variant=apt with qemu-guest-agent and
#			mount, and in /boot the guest image's kernel and
#			initramfs (make image) and grub.cfg
#
# The initramfs mounts the partition and runs /sbin/qga-init (mcvm.init=),
# which mounts what the guest needs, makes /workspace, starts qemu-ga on
# its virtio-serial port (found by name in sysfs: there is no udev) and
# reaps orphans.  /sbin/shutdown, which guest-shutdown runs, syncs and
# powers the guest off through sysrq: the kernel's ACPI does the rest.
#
# usage: build.sh OUTDIR CACHEDIR IMAGEDIR
#
# The mmdebstrap tarball is kept in CACHEDIR (make image's) and the disk
# rebuilt only when its inputs change, as make image does.  Must run as
# root (mmdebstrap's root mode, file ownership inside the disk).
set -eu

RECIPE_VERSION=1	# bump when the mmdebstrap call changes (cache key)
SUITE=${MCVM_SUITE:-bookworm}
PACKAGES="qemu-guest-agent,mount"
PART_START=2048		# sectors: the partition starts at 1 MiB
SLACK_MIB=64		# free space in the filesystem
CMDLINE="console=ttyS0 root=/dev/vda1 rootfstype=ext4 rw panic=1 \
mcvm.init=/sbin/qga-init"

[ $# -eq 3 ] || { echo "usage: $0 outdir cachedir imagedir" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "$0: must run as root" >&2; exit 1; }
here=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$1" "$2"
out=$(cd "$1" && pwd)
cache=$(cd "$2" && pwd)
image=$(cd "$3" && pwd)
log() { echo "image-qga: $*" >&2; }
die() { echo "$0: $*" >&2; exit 1; }

for f in "$image/vmlinuz" "$image/initrd.img"; do
	[ -s "$f" ] || die "$f missing (make image)"
done
[ -d /usr/lib/grub/i386-pc ] || die "/usr/lib/grub/i386-pc missing (make deps)"
for c in mmdebstrap grub-mkimage mke2fs qemu-img; do
	command -v "$c" >/dev/null || die "no $c (make deps)"
done
. "$here/tests/lib/mbr.sh"

# The host's Debian mirror, as make image finds it.
. "$here/guestd/image/mirror.sh"
MIRROR=${MCVM_MIRROR:-$(host_mirror | head -n 1)}
[ -n "$MIRROR" ] || die "no Debian mirror found"

# --- the root filesystem, cached by its inputs
key=$(printf '%s\n' "$RECIPE_VERSION" "$MIRROR" "$SUITE" "$PACKAGES" |
    sha256sum | cut -c1-16)
tarball="$cache/qga-rootfs-$SUITE-$key.tar"
if [ ! -s "$tarball" ]; then
	log "mmdebstrap $SUITE from $MIRROR (cached as $(basename "$tarball"))"
	rm -f "$tarball.tmp"
	mmdebstrap --quiet --variant=apt --include="$PACKAGES" \
	    --dpkgopt='path-exclude=/usr/share/man/*' \
	    --dpkgopt='path-exclude=/usr/share/doc/*' \
	    --dpkgopt='path-exclude=/usr/share/locale/*' \
	    --customize-hook='rm -rf "$1"/var/lib/apt/lists/*' \
	    --customize-hook='rm -f "$1"/var/cache/apt/*.bin' \
	    --format=tar "$SUITE" "$tarball.tmp" "$MIRROR"
	mv "$tarball.tmp" "$tarball"
	for f in "$cache"/qga-rootfs-*.tar; do
		[ "$f" = "$tarball" ] || rm -f "$f"
	done
fi

# --- the disk, cached by everything that goes into it
sum=$(cat "$0" "$here/tests/lib/mbr.sh" "$image/vmlinuz" "$image/initrd.img" |
    sha256sum | cut -c1-16)-$key
disk="$cache/qga-$sum.qcow2"
if [ -s "$disk" ]; then
	log "unchanged ($(basename "$disk"))"
	cp --reflink=auto "$disk" "$out/qga.qcow2.tmp"
	mv "$out/qga.qcow2.tmp" "$out/qga.qcow2"
	exit 0
fi

work="$cache/qga.stage"
rm -rf "$work"
mkdir -p "$work/root"
trap 'rm -rf "$work"' EXIT
root="$work/root"
tar -C "$root" -xpf "$tarball"
mkdir -p "$root/workspace" "$root/boot/grub"
cp "$image/vmlinuz" "$image/initrd.img" "$root/boot/"
echo qga-guest > "$root/etc/hostname"

cat > "$root/sbin/qga-init" <<'EOF'
#!/bin/sh
# PID 1 of the test guest: what qemu-guest-agent needs, then the agent,
# and orphans reaped (the shell's wait reaps any child).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t tmpfs tmpfs /tmp
cat /etc/hostname > /proc/sys/kernel/hostname
port=
i=0
while [ -z "$port" ] && [ $i -lt 300 ]; do
	for p in /sys/class/virtio-ports/*; do
		[ "$(cat "$p/name" 2>/dev/null)" = org.qemu.guest_agent.0 ] &&
		    port=/dev/${p##*/}
	done
	[ -n "$port" ] || sleep 0.1
	i=$((i + 1))
done
if [ -z "$port" ]; then
	echo "qga-init: no org.qemu.guest_agent.0 port"
else
	echo "qga-init: qemu-ga on $port"
	qemu-ga -m virtio-serial -p "$port" &
fi
while :; do
	wait
	sleep 1
done
EOF
cat > "$root/sbin/shutdown" <<'EOF'
#!/bin/sh
# What qemu-guest-agent's guest-shutdown runs ("-h -P +0 ..."): the guest
# has no init system to ask, so it powers off at once, after a sync.
sync
case " $* " in
*" -r "*) echo b > /proc/sysrq-trigger ;;
*) echo o > /proc/sysrq-trigger ;;
esac
EOF
chmod 0755 "$root/sbin/qga-init" "$root/sbin/shutdown"

cat > "$root/boot/grub/grub.cfg" <<EOF
set default=0
set timeout=0
serial --unit=0 --speed=115200
terminal_output serial console
menuentry "mcvm qemu-guest-agent test guest" {
	linux /boot/vmlinuz $CMDLINE
	initrd /boot/initrd.img
}
EOF
grub-mkimage -O i386-pc -p '(hd0,msdos1)/boot/grub' -o "$work/core.img" \
    biosdisk part_msdos ext2 normal linux serial terminal
[ $(($(wc -c < "$work/core.img") / 512)) -lt "$PART_START" ] ||
    die "core.img too large"

used=$(du -sm "$root" | cut -f1)
fs_mib=$((used + used / 4 + SLACK_MIB))
sectors=$((PART_START + fs_mib * 2048))
raw="$work/qga.raw"
truncate -s $((sectors * 512)) "$raw"
mke2fs -q -F -t ext2 -L qgaroot -m 0 -E offset=$((PART_START * 512)) \
    -d "$root" "$raw" "${fs_mib}M" >/dev/null
mbr /usr/lib/grub/i386-pc/boot.img "$sectors" "$PART_START" > "$work/mbr"
[ "$(wc -c < "$work/mbr")" -eq 512 ] || die "MBR of $(wc -c < "$work/mbr")"
dd if="$work/mbr" of="$raw" conv=notrunc 2>/dev/null
dd if="$work/core.img" of="$raw" bs=512 seek=1 conv=notrunc 2>/dev/null
qemu-img convert -c -f raw -O qcow2 "$raw" "$disk.tmp"
mv "$disk.tmp" "$disk"
for f in "$cache"/qga-*.qcow2; do
	[ "$f" = "$disk" ] || rm -f "$f"
done
cp --reflink=auto "$disk" "$out/qga.qcow2.tmp"
mv "$out/qga.qcow2.tmp" "$out/qga.qcow2"
log "$out/qga.qcow2: $(($(wc -c < "$out/qga.qcow2") / 1048576)) MiB, a \
${fs_mib} MiB filesystem (${used} MiB used)"
