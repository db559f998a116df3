# shellcheck shell=sh
# Guest: mount_lower FS mounts the lower fs FS on /lower/FS: the disk
# labelled cl-FS, or an empty tmpfs.  Sourced by every guest script that
# mounts a lower fs.

mount_lower() {
	if [ "$1" = tmpfs ]; then
		mount -t tmpfs -o size=512m tmpfs "/lower/$1"
	else
		mount "$(blkid -L "cl-$1")" "/lower/$1"
	fi
}
