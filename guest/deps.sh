#!/bin/bash
# Install the host packages the pipeline needs, when any is missing;
# "deps.sh deb [ARCH]" those that make deb needs, "deps.sh fstests" those that
# guest/fstests.sh needs.
set -eu
. "$(dirname "$0")/lib.sh"

case ${1:-} in
deb)
	# "deps.sh deb ARCH": dpkg-buildpackage and lintian, and for a
	# foreign ARCH (make deb DEB_ARCH=...) its cross compiler and libc6,
	# which dpkg-shlibdeps of a cross build reads; only then is ARCH
	# added to the host's dpkg, never for a build of the host's own.
	deb_arch=${2:-$(dpkg --print-architecture)}
	pkgs="debhelper dh-dkms dpkg-dev fakeroot lintian make gcc libc6-dev rsync file"
	if [ "$deb_arch" != "$(dpkg --print-architecture)" ]; then
		gnu=$(dpkg-architecture -a"$deb_arch" -qDEB_HOST_GNU_TYPE 2>/dev/null)
		pkgs="$pkgs gcc-${gnu//_/-} libc6-dev-$deb_arch-cross libc6:$deb_arch"
		foreign_arch "$deb_arch" "for libc6:$deb_arch"
	fi ;;
fstests)
	# guest/fstests.sh: autotools on the host, the guest's libraries
	# downloaded (apt-get download) into a sysroot.
	pkgs="autoconf automake libtool pkg-config make patch gcc"
	[ "$ARCH" != arm64 ] || pkgs="$pkgs gcc-aarch64-linux-gnu libc6-dev-arm64-cross"
	foreign_arch "$DEB_ARCH" "to download its libraries" ;;
*)
	pkgs="linux-source-6.1 gcc-aarch64-linux-gnu libc6-dev-arm64-cross make gcc
bc bison flex libelf-dev libssl-dev cpio kmod xz-utils ccache sparse
qemu-system-arm qemu-user-static qemu-utils binfmt-support debootstrap
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
