#!/bin/bash
# Install the host packages the pipeline needs, when any is missing;
# "deps.sh deb" those that make deb needs, "deps.sh fstests" those that
# guest/fstests.sh needs.
set -eu
. "$(dirname "$0")/lib.sh"

case ${1:-} in
deb)
	# dpkg-shlibdeps of a cross build reads the target's libc6 package.
	pkgs="debhelper dh-dkms dpkg-dev fakeroot lintian gcc-aarch64-linux-gnu
libc6-dev-arm64-cross make libc6:arm64 rsync file"
	dpkg --print-foreign-architectures | grep -qx arm64 || {
		say "deps: dpkg --add-architecture arm64 (for libc6:arm64)"
		dpkg --add-architecture arm64
		apt-get update >"$COWLINKFS_LOGS/deps.log" 2>&1
	} ;;
fstests)
	# guest/fstests.sh: autotools on the host, the guest's libraries
	# downloaded (apt-get download) into a sysroot.
	pkgs="autoconf automake libtool pkg-config make patch gcc"
	[ "$ARCH" != arm64 ] || pkgs="$pkgs gcc-aarch64-linux-gnu libc6-dev-arm64-cross"
	if [ "$DEB_ARCH" != "$(dpkg --print-architecture)" ] &&
		! dpkg --print-foreign-architectures | grep -qx "$DEB_ARCH"; then
		say "deps: dpkg --add-architecture $DEB_ARCH (to download its libraries)"
		dpkg --add-architecture "$DEB_ARCH"
		apt-get update >"$COWLINKFS_LOGS/deps.log" 2>&1
	fi ;;
*)
	pkgs="linux-source-6.1 gcc-aarch64-linux-gnu libc6-dev-arm64-cross make gcc
bc bison flex libelf-dev libssl-dev cpio kmod xz-utils ccache sparse
qemu-system-arm qemu-user-static binfmt-support debootstrap
e2fsprogs xfsprogs man-db groff-base python3 gnuplot-nox shellcheck"
	[ "$ARCH" != x86_64 ] || pkgs="$pkgs qemu-system-x86" ;;
esac

missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing="$missing $p"
done
if [ -z "$missing" ]; then
	say "deps: all host packages present"
	exit 0
fi
log=$COWLINKFS_LOGS/deps.log
say "deps: installing$missing (about 2 min), log in $log"
export DEBIAN_FRONTEND=noninteractive
apt-get update >"$log" 2>&1
# shellcheck disable=SC2086
apt-get install -y --no-install-recommends $missing >>"$log" 2>&1 || {
	tail -n 20 "$log" >&2
	exit 1
}
say "deps: done"
