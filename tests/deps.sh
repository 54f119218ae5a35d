#!/bin/sh
# Installs the Debian 12 packages mcvm's build, image recipe and tests
# need, and the users its daemons run as.  Idempotent; run as root.
set -eu
cd "$(dirname "$0")/.."

PKGS="build-essential pkg-config bison clang libclang-rt-14-dev
	libevent-dev libjansson-dev libsqlite3-dev sqlite3 libseccomp-dev
	libcap-ng-dev libnl-3-dev libnl-route-3-dev libnftables-dev
	libssl-dev libcriterion-dev mandoc qemu-system-x86 qemu-utils
	mmdebstrap busybox-static autoconf automake patch e2fsprogs cpio xfsprogs
	btrfs-progs iproute2 nftables socat wrk curl ca-certificates nginx
	grub-common grub-pc-bin grub-efi-amd64-bin xorriso mtools ovmf"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
	    grep -q '^install ok installed$' || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "installing:$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	# shellcheck disable=SC2086
	apt-get install -y -q --no-install-recommends $missing
fi
# The MCP SDK tests need Node.js 20 and npm; a node that is already there
# (from any source) is kept.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	apt-get install -y -q --no-install-recommends nodejs npm
fi
etc/mcvm-users.sh
# The MCP SDK and conformance suite, pinned by tests/node/package-lock.json.
if [ -f tests/node/package-lock.json ] && ! [ \
    tests/node/node_modules/.package-lock.json -nt \
    tests/node/package-lock.json ]; then
	(cd tests/node && npm ci --no-audit --no-fund)
fi
# The next conformance release, for protocol 2026-07-28, needs Node.js
# 22: tests/node/next pins it as the npm package "node", which ships the
# binary, so the system's node is left as it is.
if [ -f tests/node/next/package-lock.json ] && ! [ \
    tests/node/next/node_modules/.package-lock.json -nt \
    tests/node/next/package-lock.json ]; then
	(cd tests/node/next && npm ci --no-audit --no-fund)
fi
