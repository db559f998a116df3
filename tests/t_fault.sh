# shellcheck shell=sh
# Injected faults: each step of a link break fails in turn (fail_function
# on the functions break.c marks with ALLOW_ERROR_INJECTION), and every
# allocation a break makes fails in turn (fail-nth with failslab and
# fail_page_alloc).  Whatever fails, the caller gets the step's errno,
# the name keeps its old inode and bytes, the other name is untouched and
# the work directory is empty.  fail_function fails only the tasks that
# ask for it (its task-filter, /proc/PID/make-it-fail), fail-nth only the
# task that arms it, so the tests run beside the other worker's; one at a
# time, since the knobs are global.
# lowers: ext2 ext3 ext4 xfs xfsr tmpfs
# lock: fault
# matrix: core

DBG=/sys/kernel/debug
FF=$DBG/fail_function

debugfs_up() {
	mountpoint -q $DBG || mount -t debugfs debugfs $DBG
}

# two names of one COW file: $M/a and $M/b, content "old"
fault_pair() {
	rm -f "$M/a" "$M/b"
	printf old >"$M/a"
	check_try OK setcow "$M/a" 1
	check_try OK setcow "$M" 1
	ln "$M/a" "$M/b"
}

# check_untouched INO WHAT: both names still share inode INO and "old",
# the flag is still on, and no copy is left in the work dir.
check_untouched() {
	check_eq "$(ino "$M/a")" "$1" "$2: a keeps its inode"
	check_eq "$(ino "$M/b")" "$1" "$2: b keeps its inode"
	check_eq "$(nlink "$M/a")" 2 "$2: nlink"
	check_eq "$(content "$M/a")" old "$2: a's bytes"
	check_eq "$(content "$M/b")" old "$2: b's bytes"
	check_try 1 getcow "$M/a"
	check_eq "$(ls -A "$L/.cowlinkfs-work")" "" "$2: work dir"
}

# errno NAME: its number on this architecture
errno_of() {
	case $1 in
	ENOMEM) echo 12 ;;
	EIO) echo 5 ;;
	ENOSPC) echo 28 ;;
	EDQUOT) echo 122 ;;
	*) fail "errno_of: $1" ;;
	esac
}

# fault_arm TIMES: fail_function fails the function set in its inject
# file TIMES times (-1: always), in the tasks that ask for it alone
fault_arm() {
	echo Y >$FF/task-filter
	echo 100 >$FF/probability
	echo 1 >$FF/interval
	echo "$1" >$FF/times
	echo 0 >$FF/space
	echo 0 >$FF/verbose
}

# failing COMMAND...: COMMAND in a task that fail_function may fail
failing() {
	echo 1 >/proc/self/make-it-fail
	"$@"
}

# fault_step FUNCTION ERRNO: fail FUNCTION once with ERRNO during a break
fault_step() {
	debugfs_up
	[ -d $FF ] || fail "no $FF (CONFIG_FAIL_FUNCTION)"
	fault_pair
	i=$(ino "$M/a")
	trap 'echo >$FF/inject 2>/dev/null || true' EXIT
	echo "$1" >$FF/inject || fail "$1 is not error-injectable"
	printf '%#x\n' "-$(errno_of "$2")" >"$FF/$1/retval"
	fault_arm 1
	got=$(failing try append "$M/a" x)
	left=$(cat $FF/times)
	echo >$FF/inject
	check_eq "$got" "$2" "the writer's errno when $1 fails"
	check_eq "$left" 0 "$1 was reached"
	check_untouched "$i" "$1 failed"
	# Nothing is left for the next mount to clean up, and then the
	# break works.
	umount "$M"
	mount_clfs
	check_untouched "$i" "after remount"
	check_try OK append "$M/a" x
	check_ne "$(ino "$M/a")" "$i" "the break works afterwards"
	check_eq "$(content "$M/a")" oldx "a's bytes after the break"
	check_eq "$(content "$M/b")" old "b keeps the old bytes"
}

test_fault_in_make_tmpfile_leaves_the_old_inode() {
	fault_step cowlinkfs_make_tmpfile ENOSPC
}

test_fault_in_copy_fileattr_leaves_the_old_inode() {
	fault_step cowlinkfs_copy_fileattr ENOMEM
}

test_fault_in_copy_data_leaves_the_old_inode() {
	fault_step cowlinkfs_copy_data ENOSPC
}

test_fault_in_copy_xattrs_leaves_the_old_inode() {
	fault_step cowlinkfs_copy_xattrs EDQUOT
}

test_fault_in_copy_attrs_leaves_the_old_inode() {
	fault_step cowlinkfs_copy_attrs ENOMEM
}

test_fault_in_sync_copy_leaves_the_old_inode() {
	fault_step cowlinkfs_sync_copy EIO
}

test_fault_in_link_work_leaves_the_old_inode() {
	fault_step cowlinkfs_link_work ENOSPC
}

test_fault_in_rename_over_leaves_the_old_inode() {
	fault_step cowlinkfs_rename_over ENOSPC
}

# A create or mkdir in a COW directory that cannot give the new object
# the flag fails, and leaves nothing behind: a retry works.
test_fault_in_inherit_cow_leaves_no_object_behind() {
	debugfs_up
	mkdir "$M/d"
	check_try OK setcow "$M/d" 1
	trap 'echo >$FF/inject 2>/dev/null || true' EXIT
	echo cowlinkfs_inherit_cow >$FF/inject ||
		fail "cowlinkfs_inherit_cow is not error-injectable"
	printf '%#x\n' -12 >$FF/cowlinkfs_inherit_cow/retval
	fault_arm -1
	f=$(failing try open "$M/d/f" wc)
	m=$(failing try mkdir "$M/d/sub")
	echo >$FF/inject
	check_eq "$f" ENOMEM "create when the flag cannot be set"
	check_eq "$m" ENOMEM "mkdir when the flag cannot be set"
	[ ! -e "$L/d/f" ] || fail "the failed create left d/f behind"
	[ ! -e "$L/d/sub" ] || fail "the failed mkdir left d/sub behind"
	check_try OK open "$M/d/f" wc
	check_try OK mkdir "$M/d/sub"
	check_try 1 getcow "$M/d/f"
	check_try 1 getcow "$M/d/sub"
}

# Every kmalloc and page allocation of a break fails in turn (the n-th
# fault-injection point of the write, n = 1, 2, ...), until one run gets
# through without reaching the n-th point.  Each run either fails with a
# clear errno, writes nothing and leaves the name on the old inode or on
# a complete copy of it, or succeeds with a complete break.
test_every_allocation_failure_in_a_break_leaves_a_consistent_name() {
	debugfs_up
	for f in failslab fail_page_alloc; do
		echo N >$DBG/$f/ignore-gfp-wait
		echo 0 >$DBG/$f/probability
		echo 0 >$DBG/$f/verbose
	done
	echo 0 >$DBG/fail_page_alloc/min-order
	trap 'for f in failslab fail_page_alloc; do echo Y >$DBG/$f/ignore-gfp-wait; echo 2 >$DBG/$f/verbose; done' EXIT
	n=1
	failed=0
	while :; do
		fault_pair
		i=$(ino "$M/a")
		# shellcheck disable=SC2046
		set -- $(try failnth "$M/a" x $n)
		[ "$2" = injected ] || break
		case $1 in
		OK)
			check_ne "$(ino "$M/a")" "$i" "point $n: a broke"
			check_eq "$(content "$M/a")" oldx "point $n: a's bytes"
			check_eq "$(content "$M/b")" old "point $n: b's bytes"
			check_eq "$(nlink "$M/b")" 1 "point $n: b's nlink"
			check_eq "$(ls -A "$L/.cowlinkfs-work")" "" "point $n: work dir"
			;;
		ENOMEM | ENOSPC | EINTR)
			failed=$((failed + 1))
			# Not written; the name either kept the old inode
			# or already has a complete copy of it.
			if [ "$(ino "$M/a")" = "$i" ]; then
				check_untouched "$i" "point $n failed with $1"
			else
				check_eq "$(nlink "$M/a")" 1 "point $n: broken a's nlink"
				check_eq "$(content "$M/a")" old "point $n: a's bytes"
				check_eq "$(ino "$M/b")" "$i" "point $n: b's inode"
				check_eq "$(content "$M/b")" old "point $n: b's bytes"
				check_eq "$(ls -A "$L/.cowlinkfs-work")" "" "point $n: work dir"
			fi
			;;
		*)
			fail "point $n: the writer got $1"
			;;
		esac
		n=$((n + 1))
		[ $n -le 400 ] || fail "more than 400 fault points in one break"
	done
	check_eq "$1" OK "the write with no fault reached"
	[ $n -gt 5 ] || fail "only $((n - 1)) fault points: is fail-nth armed?"
	[ $failed -gt 0 ] || fail "no injected failure reached the writer"
	echo "$FS: $((n - 1)) fault points, $failed failed the write"
}
