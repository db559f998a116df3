#!/bin/sh
# Guest: mount the lower disks and cowlinkfs over a tree on each, for the
# interactive shell.
set -eu
for fs in ext2 ext3 xfs; do
	mkdir -p /lower/$fs /mnt/$fs
	mount "$(blkid -L cl-$fs)" /lower/$fs
	mkdir -p /lower/$fs/tree
	mount -t cowlinkfs /lower/$fs/tree /mnt/$fs
done
