#!/bin/bash
# Build the pristine tree of the cross-arch runs (tests/t_crossarch.sh): a
# Debian bookworm minbase of the *other* architecture (amd64 for the arm64
# guest, arm64 for the x86_64 one), with what the runs use inside it
# (setcap, setfacl, a static busybox; cowdancer for make bench's runs done
# cowbuilder's way, whose cow-shell and library live in the chroot), packed
# with mkfs.ext4 -d into an image labelled cl-foreign, beside the guest's
# own qemu-user-static interpreter for it.  The arm64 tree of the x86_64
# guest also has gcc and libc6-dev: tier 2 of the runs builds a program
# in each (make test ARCH=x86_64); the amd64 tree of the arm64 guest,
# whose runs are in CI, stays small.  Prints the image's path.
# Cached, named after this script, the two architectures and the
# packages.
#   /tree         the pristine tree
#   /qemu/NAME    qemu-*-static for the guest's architecture, from Debian's
#                 qemu-user-static (only the one binary: the package is
#                 380 MB)
#   /qemu/binfmt  its binfmt_misc entry (Debian's magic and mask), to be
#                 written to /proc/sys/fs/binfmt_misc/register once the
#                 image is mounted on /lower/foreign: flag F, so that the
#                 interpreter is opened there and then and works in chroots
set -eu
. "$(dirname "$0")/lib.sh"

case $DEB_ARCH in
arm64) foreign=amd64 qemu=qemu-x86_64-static binfmt=qemu-x86_64 ;;
amd64) foreign=arm64 qemu=qemu-aarch64-static binfmt=qemu-aarch64 ;;
esac
include=libcap2-bin,acl,busybox-static,cowdancer
[ "$foreign" != arm64 ] || include=$include,gcc,libc6-dev
key=$({ cat "$0"; echo "$DEB_ARCH $foreign $include"; } | sha256sum | cut -c1-16)
img=$COWLINKFS_CACHE/foreign$ARCH_SUFFIX-$foreign-$key.img
log=$COWLINKFS_LOGS/foreign$ARCH_SUFFIX.log
if [ -f "$img" ]; then
	say "foreign: cached in $img" >&2
	echo "$img"
	exit 0
fi

work=$COWLINKFS_CACHE/foreign-build$ARCH_SUFFIX
rm -rf "$work"
mkdir -p "$work/top/qemu" "$work/debs"
: >"$log"

# An arm64 tree's second stage runs under the host's qemu-user, as the
# guest rootfs's does (guest/rootfs.sh).
if [ "$foreign" != "$(dpkg --print-architecture)" ]; then
	[ -e /proc/sys/fs/binfmt_misc/register ] ||
		mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
	update-binfmts --enable "$binfmt" >>"$log" 2>&1 || true
fi

say "foreign: debootstrap $foreign bookworm minbase (1 to 3 min), log in $log" >&2
if ! debootstrap --arch="$foreign" --variant=minbase --include="$include" \
	bookworm "$work/top/tree" "$(apt_mirror)" >>"$log" 2>&1; then
	tail -n 20 "$log" >&2
	echo "foreign: debootstrap failed, full log in $log" >&2
	exit 1
fi
rm -rf "$work"/top/tree/var/cache/apt/archives/*.deb "$work"/top/tree/var/lib/apt/lists/*

say "foreign: $qemu from qemu-user-static:$DEB_ARCH" >&2
# A fresh host's apt knows only the host's own architecture.
foreign_arch "$DEB_ARCH" "to download qemu-user-static:$DEB_ARCH"
(cd "$work/debs" && apt-get download "qemu-user-static:$DEB_ARCH") >>"$log" 2>&1 || {
	tail -n 20 "$log" >&2
	exit 1
}
dpkg-deb --fsys-tarfile "$work"/debs/qemu-user-static_*.deb |
	tar -x -O "./usr/bin/$qemu" >"$work/top/qemu/$qemu"
chmod 755 "$work/top/qemu/$qemu"
dpkg-deb --fsys-tarfile "$work"/debs/qemu-user-static_*.deb |
	tar -x -O "./usr/lib/binfmt.d/$binfmt.conf" |
	awk -F: -v OFS=: -v q="/lower/foreign/qemu/$qemu" '{ $7 = q; $8 = "F"; print }' \
		>"$work/top/qemu/binfmt"
grep -q "^:$binfmt:M::" "$work/top/qemu/binfmt" || {
	echo "foreign: no binfmt entry for $binfmt in qemu-user-static" >&2
	exit 1
}
size=$(($(du -sm "$work/top" | cut -f1) * 2 + 256))
mkfs.ext4 -q -F -L cl-foreign -d "$work/top" "$img.tmp" "${size}M" >>"$log" 2>&1
mv "$img.tmp" "$img"
rm -rf "$work"
say "foreign: built $img (${size} MiB)" >&2
echo "$img"
