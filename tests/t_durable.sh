# shellcheck shell=sh
# Durability: what is durable on the lower fs is durable through the mount.
# syncfs(2) and sync_file_range(2) through the mount write the lower fs's
# dirty pages back, as measured by Dirty: in /proc/meminfo, and a writeback
# error of the lower fs comes back from syncfs(2) and fsync(2) through the
# mount as it does on the lower fs.  (tmpfs does not count its pages as
# dirty, and ext3's journal commits write ordered data back every 5 s.)
# lowers: ext2 ext4 xfs xfsr
# serial

# dirty_kb: the page cache waiting for writeback, in KiB
dirty_kb() {
	awk '/^Dirty:/ {print $2}' /proc/meminfo
}

# hold_writeback: no periodic or background writeback until the test
# ends, so that only the call under test writes pages back
hold_writeback() {
	v=/proc/sys/vm
	wb=$(cat $v/dirty_writeback_centisecs)
	ex=$(cat $v/dirty_expire_centisecs)
	trap 'echo $wb >$v/dirty_writeback_centisecs; echo $ex >$v/dirty_expire_centisecs' EXIT
	echo 0 >$v/dirty_writeback_centisecs
	echo 360000 >$v/dirty_expire_centisecs
	sync
}

# dirty16 FILE: write 16 MiB to FILE without syncing; check that they are
# counted as dirty, and print the Dirty: figure after
dirty16() {
	d=$(dirty_kb)
	dd if=/dev/zero of="$1" bs=1M count=16 conv=notrunc 2>/dev/null || fail "dd to $1"
	d1=$(dirty_kb)
	[ $((d1 - d)) -ge 12288 ] || fail "16 MiB written to $1 are not dirty: Dirty ${d}k -> ${d1}k"
	echo "$d1"
}

# check_written_back BEFORE WHAT: Dirty: fell by 12 MiB or more since BEFORE
check_written_back() {
	d=$(dirty_kb)
	[ $(($1 - d)) -ge 12288 ] || fail "$2 left the 16 MiB dirty: Dirty ${1}k -> ${d}k"
}

# check_sync_writes_back FILE WHAT CMD...: 16 MiB dirtied in FILE, then
# CMD succeeds and writes them back
check_sync_writes_back() {
	f=$1
	what=$2
	shift 2
	d=$(dirty16 "$f")
	"$@" || fail "$what failed"
	check_written_back "$d" "$what"
}

test_syncfs_through_the_mount_writes_back_the_lower_fs() {
	hold_writeback
	check_sync_writes_back "$L/ref" "syncfs(2) of the bare lower" sync -f "$L/ref"
	check_sync_writes_back "$M/f" "syncfs(2) through the mount" sync -f "$M/f"
	# A descriptor of a directory, as sync -f DIR uses
	check_sync_writes_back "$M/g" "syncfs(2) of the mount's root directory" sync -f "$M"
}

test_fsync_and_fdatasync_through_the_mount_write_back() {
	hold_writeback
	check_sync_writes_back "$M/f" "fdatasync(2) through the mount" sync -d "$M/f"
	check_sync_writes_back "$M/f" "fsync(2) through the mount" sync "$M/f"
}

# sync_file_range(2) works on the descriptor's f_mapping: it must be the
# lower inode's, where the data is cached.
test_sync_file_range_through_the_mount_writes_back() {
	hold_writeback
	check_sync_writes_back "$L/ref" "sync_file_range(2) on the bare lower" \
		xfs_io -r -c "sync_range -w 0 16m" -c "sync_range -a 0 16m" "$L/ref"
	check_sync_writes_back "$M/f" "sync_file_range(WRITE, WAIT_AFTER) through the mount" \
		xfs_io -r -c "sync_range -w 0 16m" -c "sync_range -a 0 16m" "$M/f"
}

WB_DM=clfs-wberr		# the device that fails its writes on demand
WB_IMG=/tmp/wberr.img
WB_MNT=/tmp/wberr

wb_cleanup() {
	cd /
	# Not mountpoint(1): stat() of a shut-down xfs fails.
	for m in "$WB_MNT/cow" "$WB_MNT/fs"; do
		if grep -q " $m " /proc/mounts; then
			umount "$m" || umount -l "$m" || true
		fi
	done
	if dmsetup info "$WB_DM" >/dev/null 2>&1; then
		dmsetup remove --retry "$WB_DM" || dmsetup remove --force "$WB_DM" || true
	fi
	for d in $(losetup -j "$WB_IMG" 2>/dev/null | cut -d: -f1); do
		losetup -d "$d" || true
	done
	rm -rf "$WB_IMG" "$WB_MNT"
}

# errno_of CMD...: EIO, OK or the message of a coreutils command
errno_of() {
	out=$("$@" 2>&1) && { echo OK; return; }
	case $out in
	*"Input/output error"*) echo EIO ;;
	*) echo "$out" ;;
	esac
}

# wb_error_round THROUGH: a fresh $FS on a device-mapper device; two files
# dirtied through THROUGH (bare: the fs itself; cowlinkfs: a mount over a
# directory of it), then every write of the device fails; print the
# answers of syncfs(2), then fsync(2) of the other file.
wb_error_round() {
	wb_cleanup
	mkdir -p "$WB_MNT/fs" "$WB_MNT/cow"
	truncate -s 320M "$WB_IMG"
	loop=$(losetup -f --show "$WB_IMG")
	sz=$(blockdev --getsz "$loop")
	dmsetup create "$WB_DM" --table "0 $sz linear $loop 0" || fail "dmsetup create"
	[ -b /dev/mapper/$WB_DM ] || dmsetup mknodes "$WB_DM"
	case $FS in
	xfs*) mkfs.xfs -q -f /dev/mapper/$WB_DM ;;
	*) mkfs.ext4 -q -F /dev/mapper/$WB_DM ;;
	esac
	mount /dev/mapper/$WB_DM "$WB_MNT/fs" || fail "mount $FS"
	mkdir "$WB_MNT/fs/lower"
	dir=$WB_MNT/fs/lower
	if [ "$1" = cowlinkfs ]; then
		mount -t cowlinkfs "$WB_MNT/fs/lower" "$WB_MNT/cow" || fail "mount cowlinkfs"
		dir=$WB_MNT/cow
	fi
	sync
	dd if=/dev/urandom of="$dir/f" bs=1M count=4 2>/dev/null || fail "dd f"
	dd if=/dev/urandom of="$dir/g" bs=1M count=4 2>/dev/null || fail "dd g"
	# Every write fails from now on (dm-flakey, always down, failing
	# writes, not reads); nothing in flight is flushed.
	dmsetup suspend --nolockfs --noflush "$WB_DM"
	dmsetup load "$WB_DM" --table "0 $sz flakey $loop 0 0 1 1 error_writes"
	dmsetup resume "$WB_DM"
	echo "syncfs=$(errno_of sync -f "$dir/g") fsync=$(errno_of sync "$dir/f")"
	wb_cleanup
}

# lowers: ext4 xfs
test_lower_writeback_errors_reach_syncfs_and_fsync() {
	trap wb_cleanup EXIT
	bare=$(wb_error_round bare)
	check_eq "$bare" "syncfs=EIO fsync=EIO" "writeback errors on the bare $FS"
	check_eq "$(wb_error_round cowlinkfs)" "$bare" "writeback errors through cowlinkfs"
}
