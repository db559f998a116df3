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
# ends, so that only the call under test writes pages back (the
# background threshold too: a fraction of the memory the guest has free,
# which the 16 MiB of a check crossed once, in CI of 59f75f4)
hold_writeback() {
	v=/proc/sys/vm
	wb=$(cat $v/dirty_writeback_centisecs)
	ex=$(cat $v/dirty_expire_centisecs)
	r=$(cat $v/dirty_ratio)
	br=$(cat $v/dirty_background_ratio)
	trap 'echo $wb >$v/dirty_writeback_centisecs; echo $ex >$v/dirty_expire_centisecs
		echo $r >$v/dirty_ratio; echo $br >$v/dirty_background_ratio' EXIT
	echo 0 >$v/dirty_writeback_centisecs
	echo 360000 >$v/dirty_expire_centisecs
	echo $((1 << 30)) >$v/dirty_bytes
	echo $((1 << 30)) >$v/dirty_background_bytes
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

# wb_device [MKFS.XFS-OPTIONS...]: a fresh $FS on a device-mapper linear
# device over a loop file ($loop, $sz sectors), for a round to fail or
# drop its writes
wb_device() {
	wb_cleanup
	mkdir -p "$WB_MNT/fs" "$WB_MNT/cow"
	truncate -s 320M "$WB_IMG"
	loop=$(losetup -f --show "$WB_IMG")
	sz=$(blockdev --getsz "$loop")
	dmsetup create "$WB_DM" --table "0 $sz linear $loop 0" || fail "dmsetup create"
	[ -b /dev/mapper/$WB_DM ] || dmsetup mknodes "$WB_DM"
	case $FS in
	xfs*) mkfs.xfs -q -f "$@" /dev/mapper/$WB_DM ;;
	*) mkfs.ext4 -q -F /dev/mapper/$WB_DM ;;
	esac
}

# wb_error_round THROUGH: a fresh $FS on a device-mapper device; two files
# dirtied through THROUGH (bare: the fs itself; cowlinkfs: a mount over a
# directory of it), then every write of the device fails; print the
# answers of syncfs(2), then fsync(2) of the other file.
wb_error_round() {
	wb_device
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

# break_sync=off: a break skips its fsync (step 6, cowlinkfs_sync_copy)
# and nothing else.  fail_function fails that step once: with break_sync=on
# the append gets EIO and the step was reached (the control: the probe
# works); with off the append works, the step was never reached, and the
# names hold the right bytes.  The fail_function knobs are global: the
# test shares t_fault's lock, and runs beside the other worker's tests.
FF=/sys/kernel/debug/fail_function

# sync_copy_fails_once: arm fail_function on cowlinkfs_sync_copy (EIO,
# once, for the tasks that ask for it)
sync_copy_fails_once() {
	mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug
	[ -d $FF ] || fail "no $FF (CONFIG_FAIL_FUNCTION)"
	echo >$FF/inject
	echo cowlinkfs_sync_copy >$FF/inject || fail "cowlinkfs_sync_copy is not error-injectable"
	printf '%#x\n' -5 >$FF/cowlinkfs_sync_copy/retval
	echo Y >$FF/task-filter
	echo 100 >$FF/probability
	echo 1 >$FF/interval
	echo 1 >$FF/times
	echo 0 >$FF/space
	echo 0 >$FF/verbose
}

# append_failing FILE: append "x" in a task fail_function may fail; print
# the errno and how many failures were left unused
append_failing() {
	got=$(sh -c 'echo 1 >/proc/self/make-it-fail && exec try append "$1" x' - "$1")
	echo "$got left=$(cat $FF/times)"
}

# pair_of NAME: $M/NAME and $M/NAME.2, one COW inode holding "old"
pair_of() {
	printf old >"$M/$1"
	ln "$M/$1" "$M/$1.2"
}

# lock: fault
test_break_sync_off_skips_only_the_fsync_of_the_break() {
	trap 'echo >$FF/inject 2>/dev/null || true' EXIT
	mount -o remount,cow=all "$M" || fail "remount,cow=all"
	pair_of a
	i=$(ino "$M/a")
	sync_copy_fails_once
	check_eq "$(append_failing "$M/a")" "EIO left=0" "break_sync=on: the fsync step"
	check_eq "$(ino "$M/a")" "$i" "break_sync=on: the failed break left the inode"
	mount -o remount,break_sync=off "$M" || fail "remount,break_sync=off"
	pair_of c
	i=$(ino "$M/c")
	sync_copy_fails_once
	check_eq "$(append_failing "$M/c")" "OK left=1" "break_sync=off: the fsync step"
	echo >$FF/inject
	check_ne "$(ino "$M/c")" "$i" "break_sync=off: the name was broken"
	check_eq "$(ino "$M/c.2")" "$i" "the other name keeps the inode"
	check_eq "$(content "$M/c")" oldx "the broken name's bytes"
	check_eq "$(content "$M/c.2")" old "the other name's bytes"
	check_eq "$(ls -A "$L/.cowlinkfs-work")" "" "the work dir"
	mount -o remount,break_sync=on "$M" || fail "remount,break_sync=on"
}

# What the skipped fsync means on the lower fs: the copy's 16 MiB stay in
# the page cache, dirty, after the break; with break_sync=on the break
# writes them back.  Periodic writeback is held off.  ext4 starts writing
# a file back when it is renamed over another (auto_da_alloc, its
# default): the lower is remounted noauto_da_alloc for the test.
# xfsr clones the data (no dirty page either way); tmpfs has no Dirty.
# lowers: ext2 ext4 xfs
test_break_sync_off_leaves_the_copy_dirty() {
	hold_writeback
	if [ "$FS" = ext4 ]; then
		mount -o remount,noauto_da_alloc "/lower/$FS" || fail "remount noauto_da_alloc"
		trap 'echo $wb >$v/dirty_writeback_centisecs; echo $ex >$v/dirty_expire_centisecs
			mount -o remount,auto_da_alloc "/lower/$FS"' EXIT
	fi
	mount -o remount,cow=all "$M" || fail "remount,cow=all"
	for s in on off; do
		mount -o remount,break_sync=$s "$M" || fail "remount,break_sync=$s"
		xfs_io -f -c "pwrite -q -S 0xab -b 1m 0 16m" "$M/$s" || fail "pwrite $s"
		ln "$M/$s" "$M/$s.2"
		sync
		d=$(dirty_kb)
		printf x >>"$M/$s" || fail "append to $s"
		d1=$(dirty_kb)
		echo "break_sync=$s: Dirty ${d}k -> ${d1}k"
		eval "grew_$s=$((d1 - d))"
		check_eq "$(stat -c %s "$M/$s")" 16777217 "break_sync=$s: the broken name's size"
		check_eq "$(od -An -tx1 -N1 -j 16777215 "$M/$s.2" | tr -d ' ')" ab "break_sync=$s: the other name"
	done
	# shellcheck disable=SC2154 # set by eval
	[ "$grew_on" -lt 4096 ] || fail "break_sync=on left ${grew_on}k dirty"
	# shellcheck disable=SC2154
	[ "$grew_off" -ge 12288 ] || fail "break_sync=off left only ${grew_off}k dirty: the copy was written back"
	mount -o remount,break_sync=on "$M" || fail "remount,break_sync=on"
	check_written_back "$d1" "remount,break_sync=on"
}

# power_cut: nothing written from now on reaches the device (dm-flakey);
# then both mounts go, the device comes back, the fs is mounted once to
# recover its log, fsck must find it clean, and it is mounted again at
# $WB_MNT/fs.
power_cut() {
	dmsetup suspend --nolockfs --noflush "$WB_DM"
	dmsetup load "$WB_DM" --table "0 $sz flakey $loop 0 0 1 1 drop_writes"
	dmsetup resume "$WB_DM"
	umount "$WB_MNT/cow"
	umount "$WB_MNT/fs"
	# Nothing the kernel cached of the device before the cut is read back.
	blockdev --flushbufs /dev/mapper/$WB_DM
	dmsetup suspend "$WB_DM"
	dmsetup load "$WB_DM" --table "0 $sz linear $loop 0"
	dmsetup resume "$WB_DM"
	case $FS in
	xfs*) fsck="xfs_repair -n" ;;
	*) fsck="e2fsck -fn" ;;
	esac
	mount /dev/mapper/$WB_DM "$WB_MNT/fs" || fail "mount after the power cut"
	umount "$WB_MNT/fs"
	$fsck /dev/mapper/$WB_DM >/tmp/crash-fsck 2>&1 ||
		fail "$fsck after the power cut: $(tail -n 5 /tmp/crash-fsck)"
	mount /dev/mapper/$WB_DM "$WB_MNT/fs" || fail "mount after fsck"
}

# crash_round SETTING: a fresh $FS on a device-mapper device; four
# two-name files (256 KiB of 0xab) made and synced; each broken through
# cowlinkfs with break_sync=SETTING (a byte appended); the lower directory
# fsynced, which makes the renames durable as the next journal commit
# would; then a power cut (every later write dropped, dm-flakey), and the
# fs mounted again, recovered.  Checks that every other name is whole
# (bytes and mtime) and that fsck finds the fs clean; prints what each
# broken name holds: "old" (the old inode), "whole", "whole+x" (the copy,
# with the append), "zeros", "empty" or "partial" (the copy, its data
# lost).
crash_round() {
	# Without reflink: a clone is metadata only, and durable with its log.
	wb_device -m reflink=0
	mount /dev/mapper/$WB_DM "$WB_MNT/fs" || fail "mount $FS"
	lo=$WB_MNT/fs/lower
	mkdir "$lo"
	for i in 1 2 3 4; do
		xfs_io -f -c "pwrite -q -S 0xab 0 256k" "$lo/p$i" || fail "pwrite p$i"
		ln "$lo/p$i" "$lo/q$i"
	done
	old=$(md5sum <"$lo/q1")
	oldx=$({ cat "$lo/q1"; printf x; } | md5sum)
	zeros=$(head -c 262144 /dev/zero | md5sum)
	sync
	mtimes=$(stat -c '%n %Y.%y' "$lo"/q?)
	mount -t cowlinkfs -o "cow=all,break_sync=$1" "$lo" "$WB_MNT/cow" || fail "mount cowlinkfs"
	for i in 1 2 3 4; do
		printf x >>"$WB_MNT/cow/p$i" || fail "append to p$i"
	done
	sync "$lo" || fail "fsync of the lower directory"
	power_cut
	check_eq "$(stat -c '%n %Y.%y' "$lo"/q?)" "$mtimes" "break_sync=$1: the other names' mtimes"
	states=
	for i in 1 2 3 4; do
		check_eq "$(md5sum <"$lo/q$i")" "$old" "break_sync=$1: the other name q$i"
		f=$lo/p$i
		sum=$(md5sum <"$f")
		if [ "$(ino "$f")" = "$(ino "$lo/q$i")" ]; then
			s=old
		elif [ "$sum" = "$old" ]; then
			s=whole
		elif [ "$sum" = "$oldx" ]; then
			s=whole+x
		elif [ ! -s "$f" ]; then
			s=empty
		elif [ "$sum" = "$zeros" ] || ! tr -d '\0' <"$f" | grep -q .; then
			s=zeros
		else
			s=partial
		fi
		states="$states $s"
	done
	mount -t cowlinkfs "$lo" "$WB_MNT/cow" || fail "mount cowlinkfs after the power cut"
	check_eq "$(ls -A "$lo/.cowlinkfs-work")" "" "break_sync=$1: the work dir after the next mount"
	echo "${states# }"
	wb_cleanup
}

# What a crash leaves, either way: the other names are whole and fsck
# finds nothing; each broken name is the old inode or the whole copy with
# break_sync=on, and may hold a copy without its data with off.  On xfs,
# whose log does not wait for data, it does: the risk is real.  (ext4's
# auto_da_alloc writes the copy back when it is renamed over the name,
# and its journal commit waits for that.)
# lowers: ext4 xfs
test_break_sync_off_crash_keeps_the_other_names_whole() {
	hold_writeback
	trap 'wb_cleanup; echo $wb >$v/dirty_writeback_centisecs; echo $ex >$v/dirty_expire_centisecs' EXIT
	for s in on off; do
		got=$(crash_round $s) || exit 1
		echo "break_sync=$s: the broken names after a power cut: $got"
		for st in $got; do
			case $s:$st in
			on:old | on:whole | on:whole+x | off:*) ;;
			*) fail "break_sync=$s left a broken name $st" ;;
			esac
		done
		eval "states_$s=\$got"
	done
	# shellcheck disable=SC2154 # set by eval
	case $FS:$states_off in
	xfs*:*zeros* | xfs*:*empty* | xfs*:*partial* | ext4:*) ;;
	*) fail "xfs, break_sync=off: every copy survived the power cut ($states_off): was the fsync skipped?" ;;
	esac
}

# sync_round HOW SETTING: a fresh $FS on a device-mapper device (ext4 with
# a journal commit every 10 minutes, so that only the calls under test
# commit); two two-name files (64 KiB of 0xab) made and synced; through
# cowlinkfs with break_sync=SETTING, the first 4 KiB of each first name
# overwritten with 0xcd, which breaks its link, and made durable as HOW
# says: "fdatasync" (a write, then fdatasync(2)), "dsync" (an O_DSYNC
# write), "copy_range" (copy_file_range(2) into an O_SYNC descriptor) or
# "evicted" (a write, the descriptor closed, the dentry cache dropped,
# which evicts our inode, then fdatasync(2) through a new descriptor);
# nothing else syncs; then a power cut.  Checks that the other names hold
# the old bytes; prints what each first name holds: "new" (every byte of
# the copy with the synced write), "old" (the old bytes) or "lost"
# (anything else).
sync_round() {
	wb_device -m reflink=0
	case $FS in
	xfs*) opts= ;;
	*) opts=-ocommit=600 ;;
	esac
	mount $opts /dev/mapper/$WB_DM "$WB_MNT/fs" || fail "mount $FS"
	lo=$WB_MNT/fs/lower
	mkdir "$lo"
	for i in 1 2; do
		xfs_io -f -c "pwrite -q -S 0xab 0 64k" "$lo/p$i" || fail "pwrite p$i"
		ln "$lo/p$i" "$lo/q$i"
	done
	xfs_io -f -c "pwrite -q -S 0xcd 0 4k" "$lo/src" || fail "pwrite src"
	old=$(md5sum <"$lo/q1")
	new=$(xfs_io -f -c "pwrite -q -S 0xab 0 64k" -c "pwrite -q -S 0xcd 0 4k" \
		/tmp/sync-round-new >/dev/null && md5sum </tmp/sync-round-new)
	rm -f /tmp/sync-round-new
	sync
	mount -t cowlinkfs -o "cow=all,break_sync=$2" "$lo" "$WB_MNT/cow" || fail "mount cowlinkfs"
	for i in 1 2; do
		f=$WB_MNT/cow/p$i
		case $1 in
		fdatasync)
			xfs_io -c "pwrite -q -S 0xcd 0 4k" -c fdatasync "$f" ;;
		dsync)
			head -c 4096 /dev/zero | tr '\0' '\315' |
				dd of="$f" bs=4k conv=notrunc oflag=dsync status=none ;;
		copy_range)
			xfs_io -s -c "copy_range -l 4096 $WB_MNT/cow/src" "$f" ;;
		evicted)
			xfs_io -c "pwrite -q -S 0xcd 0 4k" "$f" &&
				echo 2 >/proc/sys/vm/drop_caches &&
				xfs_io -r -c fdatasync "$f" ;;
		esac || fail "$1 of p$i"
	done
	power_cut
	states=
	for i in 1 2; do
		check_eq "$(md5sum <"$lo/q$i")" "$old" "$1, break_sync=$2: the other name q$i"
		case $(md5sum <"$lo/p$i") in
		"$new") s=new ;;
		"$old") s=old ;;
		*) s=lost ;;
		esac
		states="$states $s"
	done
	echo "${states# }"
	wb_cleanup
}

# A break renames its copy over the name and does not sync the rename (a
# journal commit of its own for every break); the caller's sync does.  But
# fdatasync(2) and an O_DSYNC write sync only what the data needs: ext4
# committed the copy's creation at the break's own fsync and would not
# commit the rename after it, and a synchronous write syncs only its own
# range, not the rest of a copy that break_sync=off did not write back.
# The first such sync after a break syncs the copy and the rename
# (cowlinkfs_sync_break()): the bytes the caller synced survive a power
# cut under the name they were written through.  It does not mind a sync
# of another test (it could only hide the bug), so it runs beside the
# other worker's tests, one lower at a time: the device is one.
# lowers: ext4 xfs
# lock: wb-device
test_fdatasync_and_dsync_after_a_break_survive_a_power_cut() {
	trap wb_cleanup EXIT
	for r in "fdatasync on" "dsync on" "dsync off" "copy_range off"; do
		# shellcheck disable=SC2086 # two words
		got=$(sync_round $r) || exit 1
		check_eq "$got" "new new" "$r: the synced names after a power cut"
	done
}

# The mark that a break is still to be synced lives in our inode, which
# goes when the dentry of its name is pruned (drop_caches here, memory
# pressure on a real machine): the next sync then syncs the lower fs
# (cowlinkfs_sync_evicted()).  drop_caches changes what every test has
# cached: the test runs alone.
# lowers: ext4 xfs
# serial
test_fdatasync_after_the_broken_inode_was_evicted_survives_a_power_cut() {
	trap wb_cleanup EXIT
	got=$(sync_round evicted on) || exit 1
	check_eq "$got" "new new" "fdatasync after eviction: the synced names after a power cut"
}

# A writeback error is reported once to each descriptor, as on the lower
# fs, also by the sync that syncs a break: the error met by writeback the
# caller started (sync_file_range(2), which waits for nothing) comes back
# from its first fsync(2) and not from the second, bare and through the
# mount.
# lowers: ext4
# lock: wb-device
test_writeback_error_after_a_break_is_reported_once_per_descriptor() {
	trap wb_cleanup EXIT
	wb_device
	mount -o commit=600 /dev/mapper/$WB_DM "$WB_MNT/fs" || fail "mount $FS"
	lo=$WB_MNT/fs/lower
	mkdir "$lo"
	xfs_io -f -c "pwrite -q -S 0xab 0 64k" "$lo/p1" || fail "pwrite p1"
	ln "$lo/p1" "$lo/q1"
	xfs_io -f -c "pwrite -q -S 0xab 0 64k" "$lo/bare" || fail "pwrite bare"
	sync
	mount -t cowlinkfs -o cow=all "$lo" "$WB_MNT/cow" || fail "mount cowlinkfs"
	for f in "$WB_MNT/cow/p1" "$lo/bare"; do
		xfs_io -c "pwrite -q -S 0xcd 0 4k" "$f" || fail "pwrite $f"
	done
	dmsetup suspend --nolockfs --noflush "$WB_DM"
	dmsetup load "$WB_DM" --table "0 $sz flakey $loop 0 0 1 1 error_writes"
	dmsetup resume "$WB_DM"
	for f in "$WB_MNT/cow/p1" "$lo/bare"; do
		xfs_io -r -c "sync_range -w 0 4k" "$f" || fail "sync_range $f"
	done
	sleep 2
	dmsetup suspend --nolockfs --noflush "$WB_DM"
	dmsetup load "$WB_DM" --table "0 $sz linear $loop 0"
	dmsetup resume "$WB_DM"
	bare=$(xfs_io -r -c fsync -c fsync "$lo/bare" 2>&1 | grep -c 'Input/output')
	check_eq "$bare" 1 "EIO reports of two fsyncs of one descriptor, bare"
	check_eq "$(xfs_io -r -c fsync -c fsync "$WB_MNT/cow/p1" 2>&1 | grep -c 'Input/output')" "$bare" \
		"EIO reports of two fsyncs of one descriptor, through the mount after a break"
}
