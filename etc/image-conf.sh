#!/bin/sh
# Writes the mcvm.conf image block for the image "make image" built, from
# its manifest: absolute paths, pinned by SHA-256.
#	etc/image-conf.sh IMAGE_DIR NAME > FILE
set -eu
dir=$(cd "$1" && pwd)
name=$2
sum() {
	awk -v f="$1" '$2 == f { print $1 }' "$dir/manifest"
}
for f in vmlinuz initrd.img rootfs.ext4; do
	[ -n "$(sum $f)" ] || { echo "$dir/manifest lacks $f" >&2; exit 1; }
done
cat <<EOC
# Written by etc/image-conf.sh from $dir/manifest.
image "$name" {
	kernel "$dir/vmlinuz" sha256 "$(sum vmlinuz)"
	initrd "$dir/initrd.img" sha256 "$(sum initrd.img)"
	disk "$dir/rootfs.ext4" sha256 "$(sum rootfs.ext4)"
}
EOC
