#!/bin/bash
# Build fstests (xfstests-dev) for the guest's architecture, with the
# project's patches (tests/fstests/*.patch: FSTYP=cowlinkfs) applied, into
# an ext4 image the guest mounts on /fstests; prints the image's path.
# The source is $FSTESTS: a checkout or a tarball of xfstests-dev.
# Cross-built on the host against a sysroot of Debian's arm64 (or amd64)
# libraries, unpacked from their packages, so that nothing of the guest's
# architecture is installed on the host.  Cached, named after the source,
# the patches, this script and the compiler.
set -eu
. "$(dirname "$0")/lib.sh"

if [ -z "${FSTESTS:-}" ] || [ ! -e "$FSTESTS" ]; then
	echo "fstests: set FSTESTS to an xfstests-dev checkout or tarball" \
		"(where to get it: README.md, make fstests)" >&2
	exit 2
fi
FSTESTS=$(realpath "$FSTESTS")
log=$COWLINKFS_LOGS/fstests-build$ARCH_SUFFIX.log
triplet=${CROSS_COMPILE%-}
[ -n "$triplet" ] || triplet=$(gcc -dumpmachine)

# What the source is: a tarball's bytes, or a checkout's commit and changes
# (else every file's name, size and time).
source_id() {
	if [ -f "$FSTESTS" ]; then
		sha256sum <"$FSTESTS"
	elif git -C "$FSTESTS" rev-parse --show-toplevel 2>/dev/null | grep -qx "$FSTESTS"; then
		git -C "$FSTESTS" rev-parse HEAD
		git -C "$FSTESTS" diff HEAD
	else
		(cd "$FSTESTS" && find . -type f -printf '%P %s %T@\n' | sort)
	fi
}

# The sysroot's packages: what configure looks for, and the libraries the
# test programs link.
sysroot_pkgs="libacl1-dev libacl1 libattr1-dev libattr1 uuid-dev libuuid1 libaio-dev
libaio1 liburing-dev liburing2 xfslibs-dev xfsprogs libcap-dev libcap2 libgdbm-dev
libgdbm6 libgdbm-compat-dev libgdbm-compat4"

key=$({
	source_id
	cat "$COWLINKFS_TOP"/tests/fstests/*.patch "$0"
	"${CROSS_COMPILE}gcc" --version | head -n 1
	echo "$sysroot_pkgs"
} | sha256sum | cut -c1-16)
img=$COWLINKFS_CACHE/fstests$ARCH_SUFFIX-$key.img
if [ -f "$img" ]; then
	say "fstests: cached in $img" >&2
	echo "$img"
	exit 0
fi

work=$COWLINKFS_CACHE/fstests-build$ARCH_SUFFIX
sysroot=$work/sysroot
src=$work/xfstests-dev
rm -rf "$work"
mkdir -p "$sysroot" "$work/debs"
: >"$log"

say "fstests: $DEB_ARCH libraries for the build, unpacked into $sysroot" >&2
(
	cd "$work/debs"
	# shellcheck disable=SC2046 # a list of packages
	apt-get download $(for p in $sysroot_pkgs; do echo "$p:$DEB_ARCH"; done)
) >>"$log" 2>&1 || {
	tail -n 20 "$log" >&2
	exit 1
}
for d in "$work"/debs/*.deb; do
	dpkg-deb -x "$d" "$sysroot"
done
# Absolute links (libfoo.so -> /lib/...) point into the sysroot.
find "$sysroot" -type l -lname '/*' | while read -r l; do
	ln -sfn "$sysroot$(readlink "$l")" "$l"
done

say "fstests: copying the source from $FSTESTS and applying tests/fstests/*.patch" >&2
mkdir -p "$src"
# A checkout's committed and changed files, never what a native build
# left in it (x86 objects make would take as up to date).
if [ -f "$FSTESTS" ]; then
	tar -xf "$FSTESTS" -C "$src" --strip-components=1
elif git -C "$FSTESTS" rev-parse --show-toplevel 2>/dev/null | grep -qx "$FSTESTS"; then
	git -C "$FSTESTS" archive HEAD | tar -x -C "$src"
	git -C "$FSTESTS" diff HEAD | patch -d "$src" -p1 -s
else
	cp -a "$FSTESTS/." "$src/"
	make -C "$src" realclean >>"$log" 2>&1 || true
fi
for p in "$COWLINKFS_TOP"/tests/fstests/*.patch; do
	patch -d "$src" -p1 -s <"$p" >>"$log" 2>&1 || {
		echo "fstests: $p does not apply to $FSTESTS; log in $log" >&2
		exit 1
	}
done

say "fstests: configure and make for $triplet (about 2 min), log in $log" >&2
host=()
[ -z "$CROSS_COMPILE" ] || host=(--host="$triplet")
libs="$sysroot/usr/lib/$triplet:$sysroot/lib/$triplet"
(
	cd "$src"
	make configure
	CC=${CROSS_COMPILE}gcc \
		CPPFLAGS="-I$sysroot/usr/include -I$sysroot/usr/include/$triplet" \
		LDFLAGS="-L${libs//:/ -L} -Wl,-rpath-link,$libs" \
		PKG_CONFIG_LIBDIR="$sysroot/usr/lib/$triplet/pkgconfig:$sysroot/usr/share/pkgconfig" \
		PKG_CONFIG_SYSROOT_DIR="$sysroot" \
		./configure "${host[@]}" --libexecdir=/usr/lib --exec_prefix=/var/lib
	make -j"$(nproc)"
) >>"$log" 2>&1 || {
	tail -n 30 "$log" >&2
	echo "fstests: build failed, full log in $log" >&2
	exit 1
}
machine=$(file -b "$src/ltp/fsstress" 2>/dev/null) || machine=
case $ARCH:$machine in
arm64:*aarch64* | x86_64:*x86-64*) ;;
*)
	echo "fstests: ltp/fsstress is not an $ARCH program ($machine); log in $log" >&2
	exit 1
	;;
esac
size=$(($(du -sm "$src" | cut -f1) + 64))
mkfs.ext4 -q -F -L cl-fstests -d "$src" "$img.tmp" "${size}M" >>"$log" 2>&1
mv "$img.tmp" "$img"
rm -rf "$work"
say "fstests: built $img" >&2
echo "$img"
