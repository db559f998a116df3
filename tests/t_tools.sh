# shellcheck shell=sh
# The cowlink command on a cowlinkfs mount: each subcommand, its errors and
# its figures checked against stat and du.

test_get_set_clear_and_recursive() {
	mkdir -p $M/d/e/f
	touch $M/d/a $M/d/e/b $M/d/e/f/c
	mkfifo $M/d/p
	ln -s a $M/d/s
	cowlink set $M/d/a
	check_eq "$(cowlink get $M/d/a)" "cow $M/d/a" "get after set"
	cowlink set -R $M/d
	check_eq "$(cowlink get -R $M/d | grep -c '^cow ')" 6 "flagged by set -R (3 dirs, 3 files)"
	check_try 1 getcow $M/d/e/f/c
	cowlink clear -R $M/d/e
	check_eq "$(cowlink get $M/d/e/f/c)" "--- $M/d/e/f/c" "cleared below e"
	check_eq "$(cowlink get $M/d/a)" "cow $M/d/a" "untouched above e"
}

test_get_set_errors_and_exit_status() {
	touch $M/f
	err=$(cowlink get $M/missing 2>&1 >/dev/null) && fail "exit 0 for a missing file"
	check_eq "$err" "cowlink: cannot read flag of '$M/missing': No such file or directory" "message"
	err=$(as_user cowlink set $M/f 2>&1) && fail "non-owner set succeeded"
	check_eq "$err" "cowlink: cannot set flag on '$M/f': Operation not permitted" "EPERM message"
	set +e
	cowlink frob 2>/dev/null
	rc=$?
	set -e
	check_eq "$rc" 2 "usage error exit status"
	mkdir -p /tmp/plain
	err=$(cowlink get /tmp/plain 2>&1) && fail "get on tmpfs succeeded"
	check_eq "$err" "cowlink: cannot read flag of '/tmp/plain': Inappropriate ioctl for device" "off cowlinkfs"
}

test_set_recursive_on_deep_tree() {
	p=$M/deep
	for i in $(seq 1 40); do p=$p/d$i; done
	mkdir -p $p
	touch $p/leaf
	cowlink set -R $M/deep
	check_try 1 getcow $p/leaf
	check_eq "$(cowlink get -R $M/deep | grep -c '^---')" 0 "nothing unflagged"
}

test_clone_copies_tree_shape_and_metadata() {
	mkdir -p $M/src/sub
	printf one >$M/src/a
	printf two >$M/src/sub/b
	ln $M/src/a $M/src/a2
	ln -s sub/b $M/src/link
	mkfifo $M/src/fifo
	mknod $M/src/null c 1 3
	dd if=/dev/urandom of=$M/src/sparse bs=4k count=1 seek=500 2>/dev/null
	setfattr -n user.k -v v $M/src/a
	chown 1000:1000 $M/src/sub
	chmod 750 $M/src/sub
	touch -d @1000000000 $M/src/sub
	cowlink clone $M/src $M/dst
	lblocks=$(blocks $M/src/sparse)
	check_eq "$(ino $M/dst/a)" "$(ino $M/src/a)" "file linked"
	check_eq "$(ino $M/dst/a2)" "$(ino $M/dst/a)" "hard link inside the tree kept"
	check_eq "$(readlink $M/dst/link)" sub/b "symlink"
	check_eq "$(stat -c %F $M/dst/fifo)" fifo "fifo"
	check_eq "$(stat -c %t:%T $M/dst/null)" 1:3 "device"
	check_eq "$(stat -c %a:%u:%g:%Y $M/dst/sub)" 750:1000:1000:1000000000 "dir metadata"
	check_eq "$(try getxattr $M/dst/a user.k)" v "xattr (same inode)"
	check_try 1 getcow $M/dst/sub
	check_try 1 getcow $M/dst/sub/b
	echo changed >$M/dst/sub/b
	check_eq "$(content $M/src/sub/b)" two "source unchanged after editing the clone"
	check_eq "$(blocks $M/dst/sparse)" "$lblocks" "sparse file shared"
	printf X >>$M/dst/sparse
	[ "$(blocks $M/dst/sparse)" -le $((lblocks + 16)) ] || fail "broken sparse file not sparse"
}

test_clone_refuses_other_filesystems() {
	mkdir -p /tmp/src
	err=$(cowlink clone /tmp/src $M/x 2>&1) && fail "clone from tmpfs succeeded"
	check_eq "$err" "cowlink: '/tmp/src' and '$M' must both be on a cowlinkfs mount" "message"
	mkdir $M/s
	err=$(cowlink clone $M/s /tmp/dst 2>&1) && fail "clone to tmpfs succeeded"
	case "$err" in *"must both be on a cowlinkfs mount"*) ;; *) fail "$err" ;; esac
}

test_clone_refuses_two_mounts() {
	mkdir $M/s $L/../other
	mkdir -p /mnt/o
	mount -t cowlinkfs $L/../other /mnt/o
	err=$(cowlink clone $M/s /mnt/o/x 2>&1) && fail "clone across mounts succeeded"
	check_eq "$err" "cowlink: '$M/s' and '/mnt/o' are not on one filesystem" "message"
	umount /mnt/o
}

test_clone_verbose_reports_progress() {
	mkdir $M/many
	i=0
	while [ $i -lt 1200 ]; do : >$M/many/f$i; i=$((i + 1)); done
	out=$(cowlink clone -v $M/many $M/many2 2>&1)
	case "$out" in *"1000 entries cloned"*) ;; *) fail "no progress: $out" ;; esac
	check_eq "$(ls $M/many2 | wc -l)" 1200 "all files"
}

test_status_figures_match_stat_and_du() {
	cowlink set $M
	mkdir $M/t
	dd if=/dev/urandom of=$M/t/big bs=64k count=4 2>/dev/null
	printf small >$M/t/small
	printf alone >$M/t/alone
	cowlink clone $M/t $M/u
	ln $M/t/big $M/t/big3
	echo edit >>$M/u/small
	out=$(cowlink status -r --json $M/t $M/u)
	# big: 3 names on one inode; small: broken; alone: 2 names
	big_saved=$(( ($(nlink $M/t/big) - 1) * $(blocks $M/t/big) * 512 ))
	alone_saved=$(( ($(nlink $M/t/alone) - 1) * $(blocks $M/t/alone) * 512 ))
	echo "$out" | grep -q "\"files_shared\": 2," || fail "files_shared: $out"
	echo "$out" | grep -q "\"names\": 5," || fail "names: $out"
	echo "$out" | grep -q "\"bytes_saved\": $((big_saved + alone_saved))$" || fail "bytes_saved: $out"
	# du counts each inode once: du of both trees + bytes saved = sum of all names
	du_both=$(du -B1 -s -c $M/t $M/u | tail -n 1 | cut -f1)
	du_t=$(du -B1 -s $M/t | cut -f1)
	du_u=$(du -B1 -s $M/u | cut -f1)
	[ "$((du_t + du_u - du_both))" -le "$((big_saved + alone_saved))" ] ||
		fail "du says more is shared than status: $du_t + $du_u - $du_both"
	text=$(cowlink status -r $M/t | tail -n 1)
	check_eq "$text" "files shared: 2, names: 3, bytes saved: $((big_saved + alone_saved))" "text totals"
}

test_break_gives_own_copy_now() {
	cowlink set $M
	printf data >$M/a
	ln $M/a $M/b
	i=$(ino $M/a)
	out=$(cowlink break -v $M/a)
	check_eq "$out" "$M/a: inode $i -> $(ino $M/a)" "verbose report"
	check_ne "$(ino $M/a)" "$i" "new inode"
	check_eq "$(nlink $M/b)" 1 "other name"
	check_eq "$(content $M/a)" data "bytes"
	err=$(cowlink break $M/nope 2>&1) && fail "break of a missing file succeeded"
	check_eq "$err" "cowlink: cannot break '$M/nope': No such file or directory" "message"
}
