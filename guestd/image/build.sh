#!/bin/sh
# Builds the mcvm guest image from Debian packages only, without Docker:
#
#	vmlinuz		the Debian cloud kernel
#	initrd.img	busybox-static, the kernel's virtio modules and evdev
#	rootfs.ext4	a Debian root filesystem (mmdebstrap) with mcvm-guestd
#	manifest	SHA-256 of each of the above (sha256sum format)
#
# usage: build.sh OUTDIR CACHEDIR GUESTD_BINARY
#
# Downloads (kernel and busybox packages, the mmdebstrap tarball) are kept
# in CACHEDIR and reused while their inputs stay the same.  Must run as
# root (mmdebstrap's root mode, file ownership inside the image).
#
# Environment: MCVM_MIRROR overrides the Debian mirror (by default the
# first one in the host's apt sources); MCVM_SUITE the suite (bookworm).
set -eu

RECIPE_VERSION=2	# bump when the mmdebstrap call changes (cache key)
SUITE=${MCVM_SUITE:-bookworm}
# What an agent expects of a development machine; add a package here.
PACKAGES="bash,python3,git,gcc,make,libc6-dev,musl-tools,nodejs,ca-certificates,\
coreutils,python3-pip,python3-venv,python3-setuptools,python3-wheel,npm,g++,\
curl,wget,procps,iproute2,less,file,xxd,zip,unzip,xz-utils,jq,sqlite3,\
openssh-client,strace,vim-tiny"
# The modules the guest needs; their dependencies are added in order, and
# those built into the kernel (modules.builtin) are skipped.  virtio_input
# and evdev give the tablet and mouse as /dev/input/event*.
MODULES="virtio_pci virtio_mmio virtio_console virtio_blk virtio_net virtio-rng \
virtio_input evdev"
# Free space left in the root filesystem beyond its contents.
ROOTFS_SLACK_MIB=512
GUEST_UID=1000
# Fixed identity and time so that equal inputs give equal images.
FS_UUID=6d637660-0000-4000-8000-000000000001
FS_HASH_SEED=6d637660-0000-4000-8000-000000000002
EPOCH=1700000000

[ $# -eq 3 ] || { echo "usage: $0 outdir cachedir guestd" >&2; exit 2; }
out=$1
cache=$2
guestd=$3
[ "$(id -u)" -eq 0 ] || { echo "$0: must run as root" >&2; exit 1; }
[ -x "$guestd" ] || { echo "$0: $guestd: not executable" >&2; exit 1; }

here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out" "$cache/debs"
out=$(cd "$out" && pwd)
cache=$(cd "$cache" && pwd)
guestd=$(cd "$(dirname "$guestd")" && pwd)/$(basename "$guestd")

log() { echo "image: $*" >&2; }
supersede() {	# supersede KEEP FILE...: removes each FILE but KEEP
	keep=$1
	shift
	for f; do
		[ "$f" = "$keep" ] || rm -f "$f"
	done
}

. "$here/mirror.sh"
MIRROR=${MCVM_MIRROR:-$(host_mirror | head -n 1)}
[ -n "$MIRROR" ] || { echo "$0: no Debian mirror found" >&2; exit 1; }

# candidate PKG: the version apt would install (lists updated once if
# they do not know the package yet).
updated=0
candidate() {
	ver=$(apt-cache policy "$1" 2>/dev/null |
	    awk '/Candidate:/ { print $2 }')
	if { [ -z "$ver" ] || [ "$ver" = "(none)" ]; } && [ $updated -eq 0 ]; then
		log "apt-get update"
		apt-get -q update >/dev/null || true
		updated=1
		ver=$(apt-cache policy "$1" 2>/dev/null |
		    awk '/Candidate:/ { print $2 }')
	fi
	echo "$ver"
}

# fetch PKG: the cached .deb of PKG's candidate version, downloaded once.
fetch() {
	ver=$(candidate "$1")
	[ -n "$ver" ] && [ "$ver" != "(none)" ] ||
	    { echo "$0: no candidate for $1 (apt-get update?)" >&2; exit 1; }
	qver=$(echo "$ver" | sed 's/:/%3a/')
	deb="$cache/debs/${1}_${qver}_amd64.deb"
	if [ ! -s "$deb" ]; then
		log "downloading $1 $ver"
		(cd "$cache/debs" && apt-get -q download "$1=$ver" \
		    >/dev/null 2>&1) ||
		    (cd "$cache/debs" && apt-get -q download "$1=$ver")
	fi
	[ -s "$deb" ] || { echo "$0: $deb missing" >&2; exit 1; }
	echo "$deb"
}

# unpack DEB: its contents, extracted once next to it.
unpack() {
	dir="${1%.deb}.d"
	if [ ! -d "$dir" ]; then
		rm -rf "$dir.tmp"
		dpkg-deb -x "$1" "$dir.tmp"
		mv "$dir.tmp" "$dir"
	fi
	echo "$dir"
}

# --- kernel
candidate linux-image-cloud-amd64 >/dev/null
kpkg=$(apt-cache depends linux-image-cloud-amd64 |
    awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
[ -n "$kpkg" ] || { echo "$0: cannot resolve the cloud kernel" >&2; exit 1; }
kdir=$(unpack "$(fetch "$kpkg")")
kver=${kpkg#linux-image-}
moddir="$kdir/lib/modules/$kver"
[ -d "$moddir" ] || { echo "$0: $moddir missing" >&2; exit 1; }

# --- initramfs
bbdir=$(unpack "$(fetch busybox-static)")
stage="$cache/initrd.stage"
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/lib/modules" "$stage/dev" "$stage/proc" \
    "$stage/sys" "$stage/newroot"
cp "$bbdir/bin/busybox" "$stage/bin/busybox"
for a in sh mount umount insmod switch_root mkdir sleep cat echo mknod; do
	ln -s busybox "$stage/bin/$a"
done

modpath() {
	f=$(find "$moddir/kernel" -name "$1.ko" -o -name "$1.ko.xz" \
	    -o -name "$1.ko.zst" | head -n 1)
	echo "$f"
}
moddeps() {
	tr '\0' '\n' < "$(modpath "$1")" |
	    sed -n 's/^depends=//p' | tr ',' ' '
}
builtin() {
	grep -q "/$1.ko\$" "$moddir/modules.builtin" 2>/dev/null
}
# Depth-first: each module after its dependencies, once.
order=""
visit() {
	case " $order " in *" $1 "*) return ;; esac
	if builtin "$1"; then return; fi
	[ -n "$(modpath "$1")" ] ||
	    { echo "$0: module $1 not found" >&2; exit 1; }
	for d in $(moddeps "$1"); do visit "$d"; done
	order="$order $1"
}
for m in $MODULES; do visit "$m"; done
for m in $order; do
	f=$(modpath "$m")
	case "$f" in
	*.ko) cp "$f" "$stage/lib/modules/$m.ko" ;;
	*) echo "$0: compressed module $f unsupported" >&2; exit 1 ;;
	esac
done
echo "$order" | tr ' ' '\n' | sed '/^$/d' > "$stage/lib/modules/order"
cp "$here/init" "$stage/init"
chmod 0755 "$stage/init"
find "$stage" -exec touch -h -d "@$EPOCH" {} +
(cd "$stage" && find . | LC_ALL=C sort |
    cpio --quiet --reproducible -o -H newc -R 0:0) | gzip -n -9 \
    > "$out/initrd.img.tmp"
mv "$out/initrd.img.tmp" "$out/initrd.img"
cp "$kdir/boot/vmlinuz-$kver" "$out/vmlinuz.tmp"
mv "$out/vmlinuz.tmp" "$out/vmlinuz"
log "kernel $kver, modules:$order"

# --- root filesystem tarball, cached by its inputs
key=$(printf '%s\n' "$RECIPE_VERSION" "$MIRROR" "$SUITE" "$PACKAGES" |
    sha256sum | cut -c1-16)
tarball="$cache/rootfs-$SUITE-$key.tar"
if [ ! -s "$tarball" ]; then
	log "mmdebstrap $SUITE from $MIRROR (cached as $(basename "$tarball"))"
	rm -f "$tarball.tmp"
	mmdebstrap --quiet --variant=minbase --include="$PACKAGES" \
	    --dpkgopt='path-exclude=/usr/share/man/*' \
	    --dpkgopt='path-exclude=/usr/share/doc/*' \
	    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
	    --dpkgopt='path-exclude=/usr/share/info/*' \
	    --dpkgopt='path-exclude=/usr/share/locale/*' \
	    --dpkgopt='path-include=/usr/share/locale/locale.alias' \
	    --customize-hook='rm -rf "$1"/var/lib/apt/lists/*' \
	    --customize-hook='rm -f "$1"/var/cache/apt/*.bin' \
	    --format=tar "$SUITE" "$tarball.tmp" "$MIRROR"
	mv "$tarball.tmp" "$tarball"
	supersede "$tarball" "$cache"/rootfs-*.tar
fi

# --- statically linked shells.  Every command reaches the guest as
# `bash -c`, and scripts run /bin/sh; under TCG each start of a shell is
# dear: Debian's dash spends about 5 ms of it on dynamic linking, and
# linked statically against glibc still about 4 ms more than against
# musl, whose start-up does far less.  These are Debian's dash and bash:
# the image's version of each source package, with its patches,
# configure options and hardening flags, built in the image's chroot
# against the image's musl as a static PIE.  (musl looks users up in
# /etc/passwd itself: no NSS.)  musl-gcc's specs link dynamically or as
# a fixed-address static executable; the second specs file below makes
# a static PIE instead.
MUSL_LIB=/usr/lib/x86_64-linux-musl
debflags() {	# debflags NAME: Debian's build flags, hardening included
	if [ -n "$cflags_append" ]; then
		DEB_BUILD_MAINT_OPTIONS=hardening=+all \
		    DEB_CFLAGS_MAINT_APPEND="$cflags_append" \
		    dpkg-buildflags --get "$1"
	else
		DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get "$1"
	fi
}
cflags_append=	# what a package's rules add to CFLAGS
dynamic=0	# set when the image keeps a Debian shell as is: not cached
# debsrc ROOT PKG LOG: unpacks the source of ROOT's PKG, patched, into
# ROOT/tmp/PKG with a specs file for static PIEs; fails when the mirror
# has no such source.
debsrc() {
	sr=$1
	sp=$2
	sl=$3
	sver=$(chroot "$sr" dpkg-query -W -f '${source:Version}' "$sp")
	src="$cache/$sp-src"
	rm -rf "$src"
	mkdir -p "$src/lists/partial" "$src/parts"
	chown _apt "$src" 2>/dev/null || true
	printf 'deb-src [signed-by=%s] %s %s main\n' \
	    /usr/share/keyrings/debian-archive-keyring.gpg \
	    "$MIRROR" "$SUITE" > "$src/sources.list"
	set -- -o "Dir::Etc::SourceList=$src/sources.list" \
	    -o "Dir::Etc::SourceParts=$src/parts" \
	    -o "Dir::State::Lists=$src/lists"
	# apt checks what it fetches against the signed index; the .dsc's
	# own signature needs a keyring the host may not have.
	if ! apt-get "$@" -q update >>"$sl" 2>&1 ||
	    ! (cd "$src" && apt-get "$@" -q source --download-only \
	    "$sp=$sver") >>"$sl" 2>&1; then
		rm -rf "$src"
		return 1
	fi
	dpkg-source -q --require-strong-checksums -x \
	    "$src/${sp}_${sver#*:}.dsc" "$src/$sp" >>"$sl" 2>&1 ||
	    { echo "$0: $sp source failed; see $sl" >&2; exit 1; }
	rm -rf "$sr/tmp/$sp"
	mv "$src/$sp" "$sr/tmp/$sp"
	rm -rf "$src"
	cat > "$sr/tmp/$sp/static-pie.specs" <<-EOF
	*startfile:
	$MUSL_LIB/rcrt1.o $MUSL_LIB/crti.o crtbeginS.o%s

	*link:
	-nostdlib -static -pie --no-dynamic-linker -z text
	EOF
}
# musl_build ROOT PKG LOG SCRIPT: runs SCRIPT in ROOT/tmp/PKG, in the
# chroot, with Debian's build flags and musl's compiler.
musl_build() {
	chroot "$1" env CC="gcc -specs $MUSL_LIB/musl-gcc.specs \
	    -specs /tmp/$2/static-pie.specs" \
	    CFLAGS="$(debflags CFLAGS)" \
	    CPPFLAGS="$(debflags CPPFLAGS)" LDFLAGS="$(debflags LDFLAGS)" \
	    sh -c "cd /tmp/$2 && $4" >>"$3" 2>&1 ||
	    { echo "$0: building $2 failed; see $3" >&2; exit 1; }
}

# static_shell ROOT PKG BIN APPEND REGEN BUILD [PATCH]: installs
# ROOT/usr/bin/PKG, Debian's PKG of ROOT's version built against musl,
# cached: BIN is the binary in the built tree, APPEND what the package's
# rules add to CFLAGS, REGEN what Debian's patches make its build run
# first, BUILD the configure and make, PATCH mcvm's own patch, applied
# after Debian's.  A mirror without the source leaves Debian's binary as
# it is.  (Its variables begin with sh: debsrc sets sp, sver and the
# like.)
static_shell() {
	shr=$1
	shp=$2
	shver=$(chroot "$shr" dpkg-query -W -f '${Version}' "$shp")
	shpatch=${7:-}
	shtag=$key
	[ -z "$shpatch" ] || shtag=$key-$(sha256sum < "$shpatch" | cut -c1-8)
	shbin="$cache/$shp-musl-$shver-$shtag"
	if [ ! -s "$shbin" ]; then
		log "building $shp $shver statically against musl"
		shlog="$cache/$shp-build.log"
		: > "$shlog"
		if ! debsrc "$shr" "$shp" "$shlog"; then
			log "no $shp $shver source at $MIRROR (see $shlog):" \
			    "$shp stays dynamically linked"
			dynamic=1
			return 0
		fi
		if [ -n "$shpatch" ] && ! patch -d "$shr/tmp/$shp" -p1 -s \
		    < "$shpatch" >>"$shlog" 2>&1; then
			echo "$0: $shpatch does not apply to $shp $shver;" \
			    "see $shlog" >&2
			exit 1
		fi
		(cd "$shr/tmp/$shp" && $5 >>"$shlog" 2>&1) ||
		    { echo "$0: $5 of $shp failed; see $shlog" >&2; exit 1; }
		cflags_append=$4
		musl_build "$shr" "$shp" "$shlog" "$6"
		strip -o "$shbin.tmp" "$shr/tmp/$shp/$3"
		mv "$shbin.tmp" "$shbin"
		supersede "$shbin" "$cache/$shp"-musl-*
		rm -rf "$shr/tmp/$shp" "$shlog"
	fi
	install -m 0755 "$shbin" "$shr/usr/bin/$shp"
}

# Debian's patches change dash's configure.ac and src/Makefile.am: its
# build regenerates them, and so does this one.
static_dash() {	# static_dash ROOT: installs ROOT/usr/bin/dash, cached
	static_shell "$1" dash src/dash "" "autoreconf -fi" './configure -q \
	    --disable-fnmatch --disable-lineno --disable-glob && make -s'
}

# Bash as Debian's rules configure it (its own readline, no bash malloc),
# with two differences.  Line editing finds terminals through bash's own
# termcap library, which reads /etc/termcap: the image writes one from
# the terminfo entries of the terminals a console or terminal emulator
# is likely to be, where Debian's bash links ncurses' libtinfo, which
# has no musl build.  And `enable -f` cannot load builtins: a static
# executable has no dynamic loader.  The chroot mounts neither /proc nor
# /dev, so configure is told what the guest has: /dev/fd and /dev/stdin
# (mcvm-guestd makes both), which Debian's build requires.  And mcvm's
# patch adds --command-fd, which mcvm-guestd's spare shell starts with.
TERMS="linux vt100 vt220 xterm xterm-256color screen screen-256color tmux \
tmux-256color dumb"
static_bash() {	# static_bash ROOT: installs ROOT/usr/bin/bash, cached
	# Debian's patch for musl changes an m4 file of configure's (its
	# strtoimax test); without configure made again, the static link
	# finds strtoimax twice.
	static_shell "$1" bash bash -Wall "autoconf -f" \
	    'bash_cv_termcap_lib=gnutermcap bash_cv_dev_fd=standard \
	    bash_cv_dev_stdin=present ./configure -q --prefix=/usr \
	    --infodir=/usr/share/info --mandir=/usr/share/man \
	    --enable-largefile --without-bash-malloc \
	    --build x86_64-linux-gnu &&
	    grep -q "define HAVE_DEV_STDIN 1" config.h && make -s -j2' \
	    "$here/bash-command-fd.patch"
	for t in $TERMS; do
		chroot "$1" infocmp -C "$t" ||
		    { echo "$0: no terminfo entry $t" >&2; exit 1; }
	done > "$1/etc/termcap"
}

# --- root filesystem image, cached by everything that goes into it, so
# that equal inputs give the very same image (mkfs.ext4 -d records the
# staging tree's inode times, which differ between unpackings).
gsum=$(sha256sum "$guestd" | cut -c1-16)
rsum=$(cat "$0" | sha256sum | cut -c1-16)
rootimg="$cache/rootfs-$key-$gsum-$rsum.ext4"
if [ ! -s "$rootimg" ]; then
	root="$cache/rootfs.stage"
	rm -rf "$root"
	mkdir -p "$root"
	tar -C "$root" -xpf "$tarball"
	echo "user:x:$GUEST_UID:$GUEST_UID:mcvm user:/workspace:/bin/bash" \
	    >> "$root/etc/passwd"
	echo "user:x:$GUEST_UID:" >> "$root/etc/group"
	echo "user:*:19000:0:99999:7:::" >> "$root/etc/shadow"
	mkdir -p "$root/workspace"
	chown "$GUEST_UID:$GUEST_UID" "$root/workspace"
	chmod 0755 "$root/workspace"
	install -m 0755 "$guestd" "$root/sbin/mcvm-guestd"
	static_dash "$root"
	static_bash "$root"
	# The VM's identity, which mcvm-guestd writes into /run/mcvm at each
	# start (its own name, its own machine id).
	for f in hostname hosts machine-id; do
		rm -f "$root/etc/$f"
		ln -s "/run/mcvm/$f" "$root/etc/$f"
	done
	printf 'mcvm guest image recipe %s, kernel %s\n' "$RECIPE_VERSION" \
	    "$kver" > "$root/etc/mcvm-image"
	find "$root" -newermt "@$EPOCH" -exec touch -h -d "@$EPOCH" {} + \
	    2>/dev/null || true
	used=$(du -sm "$root" | cut -f1)
	size=$((used + used / 4 + ROOTFS_SLACK_MIB))
	# Old images of this cache are superseded.
	rm -f "$cache"/rootfs-*.ext4 "$rootimg.tmp"
	E2FSPROGS_FAKE_TIME=$EPOCH mkfs.ext4 -q -F -L mcvmroot -U "$FS_UUID" \
	    -E "hash_seed=$FS_HASH_SEED,root_owner=0:0" -m 0 -I 256 \
	    -d "$root" "$rootimg.tmp" "${size}M" >/dev/null
	mv "$rootimg.tmp" "$rootimg"
	rm -rf "$root"
	log "rootfs ${size} MiB (${used} MiB used)"
else
	log "rootfs unchanged ($(basename "$rootimg"))"
fi
rm -f "$out/rootfs.ext4.tmp"
cp --sparse=always --reflink=auto "$rootimg" "$out/rootfs.ext4.tmp"
mv "$out/rootfs.ext4.tmp" "$out/rootfs.ext4"
[ "$dynamic" -eq 0 ] || rm -f "$rootimg"	# the next build retries
rm -rf "$stage"

(cd "$out" && sha256sum vmlinuz initrd.img rootfs.ext4) > "$out/manifest.tmp"
mv "$out/manifest.tmp" "$out/manifest"
log "manifest:"
cat "$out/manifest" >&2
