#!/bin/bash
# Build the guest root filesystem: debootstrap bookworm for $ARCH (minbase plus
# guest/packages) from the mirror in this machine's apt configuration, second
# stage in a chroot under qemu-user-static, packed with mkfs.ext4 -d.
# Usage: rootfs.sh [install]: the install variant adds guest/packages-install.
set -eu
. "$(dirname "$0")/lib.sh"

variant=${1:-}
img=$(rootfs_img "$variant")
dir=$COWLINKFS_CACHE/rootfs-dir
log=$COWLINKFS_LOGS/rootfs.log

if [ -f "$img" ]; then
	say "rootfs: cached in $img"
	exit 0
fi

# The second stage of an arm64 rootfs runs arm64 binaries through
# binfmt_misc + qemu-user-static.
if [ "$ARCH" = arm64 ]; then
	if [ ! -e /proc/sys/fs/binfmt_misc/register ]; then
		mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
	fi
	update-binfmts --enable qemu-aarch64 >>"$log" 2>&1 || true
	if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
		echo "rootfs: binfmt_misc has no qemu-aarch64 entry (is qemu-user-static installed?)" >&2
		exit 1
	fi
fi

mirror=$(apt_mirror)
include=$(rootfs_packages "$variant" | paste -sd, -)
rm -rf "$dir"
say "rootfs: debootstrap $DEB_ARCH bookworm, both stages (about 4 min), log in $log"
(
	while sleep 30; do
		say "rootfs: still running: $(grep -cE '^I: (Unpacking|Configuring)' "$log") packages unpacked/configured"
	done
) &
ticker=$!
trap 'kill $ticker 2>/dev/null || true' EXIT
if ! debootstrap --arch="$DEB_ARCH" --variant=minbase --include="$include" \
	bookworm "$dir" "$mirror" >>"$log" 2>&1; then
	tail -n 20 "$log" >&2
	echo "rootfs: debootstrap failed, full log in $log" >&2
	exit 1
fi

say "rootfs: configuring"
chroot "$dir" useradd -m -u 1000 -s /bin/bash tester
# the users fstests' _require_user and _require_group ask for
for u in fsgqa fsgqa2 123456-fsgqa; do
	chroot "$dir" useradd -m -s /bin/bash "$u"
done
echo cowguest >"$dir/etc/hostname"
rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
install -m 755 "$COWLINKFS_TOP/guest/inside/init" "$dir/sbin/cowlinkfs-init"
mkdir -p "$dir/t" "$dir/lower" "$dir/mnt"

size=$(($(du -sm "$dir" | cut -f1) + 384))
mkfs.ext4 -q -F -L cowroot -d "$dir" "$img.tmp" "${size}M" >>"$log" 2>&1
mv "$img.tmp" "$img"
rm -rf "$dir"
say "rootfs: built $img (${size} MiB)"
