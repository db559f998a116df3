#!/bin/sh
# Guest: mount the lower filesystems and cowlinkfs over a tree on each, for
# the interactive shell.
set -eu
. /t/tests/lower.sh
for fs in $(cat /t/tests/lowers); do
	mkdir -p /lower/$fs /mnt/$fs
	mount_lower $fs
	mkdir -p /lower/$fs/tree
	mount -t cowlinkfs /lower/$fs/tree /mnt/$fs
done
