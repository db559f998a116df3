#!/bin/bash
# The guest kernel's linux-headers package, for DKMS in the guest: the
# kernel's own "make bindeb-pkg" on a copy of the cached build, whose
# headers package carries the build machine's host programs (fixdep,
# modpost, ...).  A cross build cannot run those in the guest, so they are
# built again for arm64 (HOSTCC=aarch64-linux-gnu-gcc, run on this machine
# through qemu-user binfmt) and put into the package in their place, as
# later kernels do (scripts/package/install-extmod-build).
# Prints the package's path; cached next to the kernel.
set -eu
. "$(dirname "$0")/lib.sh"

kdir=$(kernel_dir)
out=$COWLINKFS_CACHE/headers-$(kernel_key)
log=$COWLINKFS_LOGS/headers.log
if [ -f "$out/.done" ]; then
	ls "$out"/linux-headers-*.deb
	exit 0
fi
rm -rf "$out"
mkdir -p "$out"
mk() {
	kmake -j"$(nproc)" "$@"
}

say "headers: make bindeb-pkg on a copy of $kdir (about 1 min), log in $log" >&2
cp -a "$kdir" "$out/obj"
rm -f "$out/obj/.done"
mk O="$out/obj" bindeb-pkg >"$log" 2>&1 || {
	tail -n 20 "$log" >&2
	exit 1
}

say "headers: the host programs again, for arm64 (about 1 min)" >&2
mkdir -p "$out/hostprogs"
cp "$kdir/.config" "$out/hostprogs/"
mk O="$out/hostprogs" HOSTCC="${CROSS_COMPILE}gcc" HOSTCXX="${CROSS_COMPILE}g++" \
	olddefconfig modules_prepare >>"$log" 2>&1 || {
	tail -n 20 "$log" >&2
	exit 1
}

deb=$(ls "$out"/linux-headers-*.deb)
pkg=$out/pkg
dpkg-deb -R "$deb" "$pkg"
hdr=$(echo "$pkg"/usr/src/linux-headers-*)
n=0
while IFS= read -r f; do
	file -b "$hdr/$f" | grep -q '^ELF' || continue
	cp "$out/hostprogs/$f" "$hdr/$f"
	file -b "$hdr/$f" | grep -q 'ARM aarch64' || [ "$ARCH" != arm64 ] || {
		echo "headers: $f is not an arm64 program" >&2
		exit 1
	}
	n=$((n + 1))
done < <(cd "$hdr" && find scripts -type f -perm -u+x)
[ "$n" -gt 0 ] || { echo "headers: no host program found in $deb" >&2; exit 1; }
# The package's checksums, of the programs put in.
(cd "$pkg" && find usr -type f -print0 | sort -z | xargs -0 md5sum) >"$pkg/DEBIAN/md5sums"
dpkg-deb -b --root-owner-group "$pkg" "$deb" >>"$log" 2>&1
rm -rf "$pkg" "$out/obj" "$out/hostprogs" "$out"/linux-image-* "$out"/linux-libc-dev*
touch "$out/.done"
say "headers: $deb ($n host programs for arm64)" >&2
echo "$deb"
