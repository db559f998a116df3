# shellcheck shell=sh
# Mounting: bad input gets a clear error and mounts nothing; busy mounts
# and a mounted module stay put.
# lowers: ext2 ext3 xfs

test_missing_lower_dir_is_enoent() {
	check_try ENOENT mount $L/nope /mnt
	check_eq "$(grep -c ' /mnt cowlinkfs' /proc/mounts)" 0 "nothing mounted"
}

test_lower_not_a_directory_is_enotdir() {
	touch $L/file
	check_try ENOTDIR mount $L/file /mnt
}

test_unknown_option_is_einval_and_logged() {
	mkdir $L/d
	k=$(klog_mark)
	check_try EINVAL mount $L/d /mnt bogus=1
	klog_since "$k" | grep -q "cowlinkfs: Unknown parameter 'bogus'" ||
		fail "no kernel log line naming the option: $(klog_since "$k" | tail -n 3)"
	check_try EINVAL mount $L/d /mnt cow=sometimes
}

test_refuses_proc_and_itself_as_lower() {
	check_try EINVAL mount /proc /mnt
	mkdir $M/sub
	check_try EINVAL mount $M/sub /mnt
	check_eq "$(grep -c ' /mnt cowlinkfs' /proc/mounts)" 0 "nothing mounted"
}

test_lowerdir_option_and_cow_mode_in_proc_mounts() {
	mkdir $L/d
	mkdir -p /mnt/o
	check_try OK mount none /mnt/o "lowerdir=$L/d,cow=all"
	grep -q " /mnt/o cowlinkfs rw,relatime,lowerdir=$L/d,cow=all " /proc/mounts ||
		fail "$(grep /mnt/o /proc/mounts)"
	mount -o remount,cow=flag /mnt/o
	grep -q "lowerdir=$L/d,cow=flag " /proc/mounts || fail "remount: $(grep /mnt/o /proc/mounts)"
	umount /mnt/o
}

test_umount_with_open_file_is_ebusy() {
	echo a >$M/f
	exec 3<$M/f
	check_try EBUSY umount $M
	exec 3<&-
	check_try OK umount $M
}

test_rmmod_while_mounted_is_refused() {
	if rmmod cowlinkfs 2>/dev/null; then
		insmod /t/cowlinkfs.ko
		fail "rmmod succeeded while mounted"
	fi
	grep -q '^cowlinkfs ' /proc/modules || fail "module gone"
}

# The lower mount's idmapping is not ours to follow: an idmapped lower
# mount is refused with a kernel log line saying why.
# lowers: ext4 xfs
test_idmapped_lower_mount_is_refused() {
	mkdir -p /tmp/idm /tmp/idmc
	check_try OK idmapmount $L /tmp/idm
	k=$(klog_mark)
	check_try EINVAL mount /tmp/idm /tmp/idmc
	umount /tmp/idm
	klog_since "$k" | grep -q "cowlinkfs: idmapped lower mounts are not supported" ||
		fail "no kernel log line: $(klog_since "$k" | tail -n 3)"
}

# cowlinkfs changes the lower fs through the caller's own mount of it: a
# read-only remount of that mount after cowlinkfs was mounted gives EROFS
# through cowlinkfs too, with nothing changed, and a read-write one ends
# it.
# lowers: ext2 ext3 xfs
test_lower_mount_made_read_only_later_gives_erofs() {
	mkdir -p /tmp/lb /tmp/lbc
	mount --bind $L /tmp/lb
	mount -t cowlinkfs /tmp/lb /tmp/lbc
	printf old >/tmp/lbc/f
	mount -o remount,bind,ro /tmp/lb
	check_try EROFS write /tmp/lbc/f 0 new
	check_try EROFS open /tmp/lbc/g wc
	check_eq "$(cat $L/f)" old "the lower file"
	mount -o remount,bind,rw /tmp/lb
	check_try OK write /tmp/lbc/f 0 new
	check_eq "$(cat $L/f)" new "the lower file, written"
	umount /tmp/lbc
	umount /tmp/lb
}

# A mapping of a file through cowlinkfs is of the lower file, and
# /proc/PID/maps names it by its whole path (perf, gdb and lsof read it),
# not by a path cut at the lower directory, which could name another file.
# lowers: ext2 ext3 xfs
test_mapped_file_shows_its_whole_lower_path_in_proc_maps() {
	printf xxxx >$M/f
	try mmaphold $M/f 30 y >/tmp/maps.out &
	pid=$!
	wait_for_line /tmp/maps.out OK
	grep -q " $L/f\$" /proc/$pid/maps ||
		fail "no $L/f in /proc/$pid/maps: $(grep -v ' /lib\| /usr\|\[' /proc/$pid/maps)"
	kill $pid
	wait $pid || true
}

test_read_only_lower_mount_makes_read_only_fs() {
	mkdir -p /tmp/ro
	mount --bind $L /tmp/ro
	mount -o remount,bind,ro /tmp/ro
	mkdir -p /mnt/ro
	check_try OK mount /tmp/ro /mnt/ro
	check_try EROFS open /mnt/ro/x wc
	umount /mnt/ro
	umount /tmp/ro
}

# mount(8) repeats lowerdir from mountinfo on remount; mounted over its own
# lower directory, that path leads to the mount itself.
test_remount_of_a_mount_over_its_own_lower_dir() {
	mkdir "$L/x"
	echo data >"$L/x/f"
	mount -t cowlinkfs "$L/x" "$L/x" || fail "mount over the lower dir"
	trap 'umount "$L/x" 2>/dev/null || true' EXIT
	opts() { awk -v m="$L/x" '$2 == m && $3 == "cowlinkfs" { print $4 }' /proc/mounts; }
	mount -o remount,cow=all "$L/x" || fail "remount,cow=all"
	case $(opts) in *cow=all*) ;; *) fail "cow=all not in effect: $(opts)" ;; esac
	mount -o remount,ro "$L/x" || fail "remount,ro"
	case $(opts) in ro,*) ;; *) fail "not read-only: $(opts)" ;; esac
	check_try EROFS open "$L/x/f" w
	mount -o remount,rw,cow=flag "$L/x" || fail "remount,rw,cow=flag"
	case $(opts) in rw,*cow=flag*) ;; *) fail "not rw,cow=flag: $(opts)" ;; esac
	check_eq "$(content "$L/x/f")" data "the file through the mount"
	check_try EINVAL remount "$L/x" "lowerdir=$L"
	umount "$L/x"
}

# The work dir is hidden by its exact bytes: a case-insensitive lower
# directory (ext4 casefold, xfs ascii-ci) is refused.
# lowers: ext4
test_case_insensitive_lower_dirs_are_refused() {
	ci=/tmp/ci
	trap 'umount $ci/m 2>/dev/null || true; umount $ci/fs 2>/dev/null || true; rm -rf $ci' EXIT
	mkdir -p $ci/fs $ci/m
	truncate -s 320M $ci/ext4.img
	mkfs.ext4 -q -F -O casefold $ci/ext4.img || fail "mkfs.ext4 -O casefold"
	mount -o loop $ci/ext4.img $ci/fs || fail "mount the casefold ext4"
	mkdir $ci/fs/folded $ci/fs/plain
	chattr +F $ci/fs/folded || fail "chattr +F"
	check_try EINVAL mount $ci/fs/folded $ci/m
	check_try OK mount $ci/fs/plain $ci/m
	umount $ci/m
	umount $ci/fs
	truncate -s 320M $ci/xfs.img
	mkfs.xfs -q -f -n version=ci $ci/xfs.img || fail "mkfs.xfs -n version=ci"
	mount -o loop $ci/xfs.img $ci/fs || fail "mount the ascii-ci xfs"
	mkdir $ci/fs/d
	check_try EINVAL mount $ci/fs/d $ci/m
	umount $ci/fs
}

# break_sync=off shows in /proc/mounts, on (the default) does not, as
# overlayfs shows only "volatile"; a remount changes it either way and
# one that does not give it keeps it.
test_break_sync_option_in_proc_mounts_and_remount() {
	mkdir $L/d
	mkdir -p /mnt/o
	trap 'umount /mnt/o 2>/dev/null || true' EXIT
	# what cowlinkfs shows, not the mount flags before it
	opts() { awk '$2 == "/mnt/o" && $3 == "cowlinkfs" { sub(/^.*,lowerdir=/, "lowerdir=", $4); print $4 }' /proc/mounts; }
	check_try OK mount $L/d /mnt/o break_sync=off
	check_eq "$(opts)" "lowerdir=$L/d,cow=flag,break_sync=off" "mounted break_sync=off"
	check_try OK remount /mnt/o cow=all
	check_eq "$(opts)" "lowerdir=$L/d,cow=all,break_sync=off" "a remount without it keeps it"
	check_try OK remount /mnt/o break_sync=on
	check_eq "$(opts)" "lowerdir=$L/d,cow=all" "remounted break_sync=on"
	check_try OK remount /mnt/o break_sync=off
	check_eq "$(opts)" "lowerdir=$L/d,cow=all,break_sync=off" "remounted break_sync=off"
	umount /mnt/o
	check_try OK mount $L/d /mnt/o cow=flag,break_sync=on
	check_eq "$(opts)" "lowerdir=$L/d,cow=flag" "mounted break_sync=on"
	umount /mnt/o
}

# A remount changes the settings it gives and no other, also when its
# context was picked (fspick(2)) before another remount changed them: it
# must not put back what it saw then.
test_fspick_remount_changes_only_what_it_gives() {
	mkdir $L/d
	mkdir -p /mnt/o
	trap 'umount /mnt/o 2>/dev/null || true' EXIT
	opts() { awk '$2 == "/mnt/o" && $3 == "cowlinkfs" { sub(/^.*,lowerdir=/, "lowerdir=", $4); print $4 }' /proc/mounts; }
	check_try OK mount $L/d /mnt/o
	check_eq "$(try fspick /mnt/o "try remount /mnt/o break_sync=off >/dev/null" cow=all)" OK \
		"fspick, a remount to break_sync=off, then cow=all"
	check_eq "$(opts)" "lowerdir=$L/d,cow=all,break_sync=off" "the other remount's break_sync stays"
	check_eq "$(try fspick /mnt/o "try remount /mnt/o cow=flag >/dev/null" break_sync=on)" OK \
		"fspick, a remount to cow=flag, then break_sync=on"
	check_eq "$(opts)" "lowerdir=$L/d,cow=flag" "the other remount's cow stays"
	check_eq "$(try fspick /mnt/o true cow=sometimes)" EINVAL "a bad value through fsconfig"
	check_eq "$(opts)" "lowerdir=$L/d,cow=flag" "nothing changed by the bad value"
	umount /mnt/o
}

# break_sync takes on or off and nothing else, at mount and at remount,
# with a kernel log line naming it; a refused remount changes nothing.
test_bad_break_sync_value_is_einval_and_logged() {
	mkdir $L/d
	for v in break_sync=maybe break_sync=yes break_sync=1 break_sync= break_sync; do
		k=$(klog_mark)
		check_try EINVAL mount $L/d /mnt "$v"
		klog_since "$k" | grep -q "cowlinkfs: Bad value for 'break_sync'" ||
			fail "$v: no kernel log line naming the option: $(klog_since "$k" | tail -n 3)"
	done
	check_eq "$(grep -c ' /mnt cowlinkfs' /proc/mounts)" 0 "nothing mounted"
	check_try EINVAL remount $M break_sync=nope
	check_try OK remount $M break_sync=off
	check_try EINVAL remount $M break_sync=never
	grep -q " $M cowlinkfs .*,break_sync=off " /proc/mounts ||
		fail "a refused remount changed it: $(grep " $M " /proc/mounts)"
}
