#!/bin/sh
# Guest: mount the lower filesystems and cowlinkfs over a tree on each, for
# the interactive shell.
set -eu
for fs in ext2 ext3 ext4 xfs tmpfs; do
	mkdir -p /lower/$fs /mnt/$fs
	if [ $fs = tmpfs ]; then
		mount -t tmpfs -o size=512m tmpfs /lower/$fs
	else
		mount "$(blkid -L cl-$fs)" /lower/$fs
	fi
	mkdir -p /lower/$fs/tree
	mount -t cowlinkfs /lower/$fs/tree /mnt/$fs
done
