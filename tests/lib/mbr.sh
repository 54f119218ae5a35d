# An MBR, byte by byte, for the tests' bootable disks (sourced by
# tests/image-qga/build.sh on the host, and put into tests/lib/mkiso.sh's
# installer, where busybox's sh runs it): grub's boot.img (its code, the
# first 440 bytes), a zero disk signature, one partition entry (active,
# type 0x83 Linux, from PART_START to the end of the disk, its CHS fields
# 0xfe 0xff 0xff, "use the LBA ones") and the 0x55 0xaa signature.
# grub's core.img goes in sector 1: that is where boot.img's default
# kernel sector (the 8-byte LBA at offset 0x5c, 1) and core.img's default
# block list (from sector 2, as long as grub-mkimage made it) look, as on
# a floppy, so nothing needs patching.

# le32 N: N as 4 bytes, little-endian.
le32() {
	printf "\\$(printf %03o $(($1 & 255)))"
	printf "\\$(printf %03o $((($1 >> 8) & 255)))"
	printf "\\$(printf %03o $((($1 >> 16) & 255)))"
	printf "\\$(printf %03o $((($1 >> 24) & 255)))"
}

# mbr BOOT_IMG SECTORS PART_START: the 512 bytes, on stdout.
mbr() {
	dd if="$1" bs=440 count=1 2>/dev/null
	printf '\0\0\0\0\0\0'
	printf '\200\376\377\377\203\376\377\377'
	le32 "$3"
	le32 $(($2 - $3))
	dd if=/dev/zero bs=48 count=1 2>/dev/null
	printf '\125\252'
}
