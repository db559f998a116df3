# shellcheck shell=sh
# Copy-on-write links: the flag, its inheritance and link/rename rules, and
# breaking a link with a real copy on every kind of modification.
# lowers: ext2 ext3 ext4 xfs xfsr tmpfs

# two names of one COW file: $M/a and $M/b, content "old"
cow_pair() {
	printf old >$M/a
	chown "${2:-0:0}" $M/a
	chmod "${1:-644}" $M/a
	check_try OK setcow $M/a 1
	check_try OK setcow $M 1
	ln $M/a $M/b
	check_eq "$(nlink $M/a)" 2 "setup nlink"
}

# cow_pair of SIZE zero bytes (default empty: a copy of it fits in any
# file size limit), written in the lower dir, where both names see it
sized_cow_pair() {
	cow_pair
	head -c "${1:-0}" /dev/zero >$L/a
}

# after_break: $M/a was broken, $M/b kept the old inode $1 and content "old"
check_broken() {
	old=$1
	check_ne "$(ino $M/a)" "$old" "broken name has a new st_ino"
	check_eq "$(ino $L/a)" "$(ino $M/a)" "lower dir agrees on st_ino"
	check_eq "$(ino $M/b)" "$old" "other name keeps the old inode"
	check_eq "$(nlink $M/a)" 1 "broken name nlink"
	check_eq "$(nlink $M/b)" 1 "other name nlink dropped"
	check_eq "$(content $M/b)" old "other name keeps the old bytes"
}

test_flag_get_set_and_needs_owner() {
	touch $M/f
	check_try 0 getcow $M/f
	check_try OK setcow $M/f 1
	check_try 1 getcow $M/f
	check_try 0 getcow $M
	check_eq "$(as_user try setcow $M/f 0)" EPERM "non-owner clearing the flag"
	chown 1000 $M/f
	check_eq "$(as_user try setcow $M/f 0)" OK "owner clearing the flag"
	check_try 0 getcow $M/f
	check_try OK mkfifo $M/p
	check_try ENOTTY setcow $M/p 1
}

# lowers: ext2 ext3 ext4 xfs xfsr
# owns-lower
test_flag_is_hidden_and_persists_across_remount() {
	touch $M/f
	check_try OK setcow $M/f 1
	check_eq "$(try getxattr $L/f trusted.cowlinkfs.cow)" 1 "flag stored on the lower inode"
	check_eq "$(try listxattr $M/f)" "" "listxattr through the mount"
	check_try ENODATA getxattr $M/f trusted.cowlinkfs.cow
	check_try EPERM setxattr $M/f trusted.cowlinkfs.cow 0
	remount_lower
	check_try 1 getcow $M/f
}

test_flag_inherited_by_files_and_dirs() {
	mkdir $M/d
	check_try OK setcow $M/d 1
	touch $M/d/f
	mkdir $M/d/sub
	touch $M/d/sub/g
	mkfifo $M/d/p
	check_try 1 getcow $M/d/f
	check_try 1 getcow $M/d/sub
	check_try 1 getcow $M/d/sub/g
	check_try ENODATA getxattr $L/d/p trusted.cowlinkfs.cow
	touch $M/plain
	check_try 0 getcow $M/plain
}

test_link_with_different_flag_is_emlink() {
	mkdir $M/cow $M/plain
	check_try OK setcow $M/cow 1
	touch $M/cow/f $M/plain/g
	check_try EMLINK link $M/cow/f $M/plain/f
	check_try EMLINK link $M/plain/g $M/cow/g
	check_try OK link $M/cow/f $M/cow/f2
	check_try OK link $M/plain/g $M/plain/g2
	mkfifo $M/plain/p
	check_try OK link $M/plain/p $M/cow/p
}

test_rename_across_dirs_with_different_flags_is_emlink() {
	mkdir $M/cow $M/plain $M/cow2
	check_try OK setcow $M/cow 1
	check_try OK setcow $M/cow2 1
	touch $M/cow/f $M/plain/g
	mkdir $M/cow/sub
	mkfifo $M/cow/p
	ln -s x $M/cow/s
	check_try EMLINK rename $M/cow/f $M/plain/f
	check_try EMLINK rename $M/plain/g $M/cow/g
	check_try EMLINK rename $M/cow/sub $M/plain/sub
	check_try OK rename $M/cow/f $M/cow/f-renamed
	check_try OK rename $M/plain/g $M/plain/g-renamed
	check_try OK rename $M/cow/f-renamed $M/cow2/f
	check_try OK rename $M/cow/p $M/plain/p
	check_try OK rename $M/cow/s $M/plain/s
}

test_write_open_breaks_only_that_name() {
	cow_pair
	i=$(ino $M/a)
	echo new >$M/a
	check_eq "$(content $M/a)" new "broken name has the new bytes"
	check_broken "$i"
	check_eq "$(content $L/a)" new "lower dir has the new bytes"
}

test_write_only_open_breaks_at_first_write() {
	for how in w wa; do
		rm -f $M/a $M/b
		cow_pair
		i=$(ino $M/a)
		r=$(try fdino $M/a $how NEW)
		# vim compares fstat() after open with stat() before it (E949):
		# the break waits for the first write.
		check_eq "${r% *}" "$i" "$how: fd st_ino after open"
		check_eq "${r#* }" "$(ino $M/a)" "$how: fd st_ino after the write is the name's"
		check_broken "$i"
		grep -q NEW $M/a || fail "$how: write not in the copy: $(cat $M/a)"
	done
}

# splice(2) into a name: the write-only open copies nothing, the splice
# breaks the name first, as write() does
test_splice_into_a_cow_name_breaks_it_first() {
	cow_pair
	i=$(ino $M/a)
	check_try OK splice $M/a NE
	check_eq "$(content $M/a)" NEd "the spliced bytes, in the copy"
	check_broken "$i"
}

# A splice that writes nothing copies nothing: an empty pipe with
# SPLICE_F_NONBLOCK (EAGAIN), a pipe whose writer is gone (0 bytes), even
# with the empty buffer a faulting write(2) left in it
test_splice_of_nothing_copies_nothing() {
	cow_pair
	i=$(ino $M/a)
	check_try EAGAIN splice $M/a "" nonblock
	check_try OK splice $M/a "" eof
	check_try OK splice $M/a "" fault
	check_eq "$(ino $M/a)" "$i" "st_ino"
	check_eq "$(nlink $M/a)" 2 "st_nlink"
	check_eq "$(content $M/b)" old "the other name"
}

# A write, an append or a splice past the file size limit gets the lower
# fs's EFBIG (SIGXFSZ ignored) and copies nothing first.  The file is
# empty: a copy of it fits in any limit, so only the check before the
# break can stop one.
test_write_past_the_file_size_limit_copies_nothing() {
	sized_cow_pair
	i=$(ino $M/a)
	check_eq "$(trap '' XFSZ; ulimit -f 0; try write $M/a 0 x)" EFBIG "a write"
	check_eq "$(trap '' XFSZ; ulimit -f 0; try append $M/a x)" EFBIG "an append"
	check_eq "$(trap '' XFSZ; ulimit -f 0; try splice $M/a x)" EFBIG "a splice"
	check_eq "$(ino $M/a)" "$i" "st_ino"
	check_eq "$(nlink $M/a)" 2 "st_nlink"
	check_try OK write $M/a 0 n
	check_ne "$(ino $M/a)" "$i" "st_ino after a write within the limit"
	check_eq "$(content $M/b)" "" "the other name"
}

# A fallocate() that would grow the file past the file size limit gets
# the lower fs's EFBIG (SIGXFSZ ignored) and copies nothing first (ext2
# has no fallocate, ext3's files no extents: both refuse it anyway).  The
# file is empty, as in the test above: its copy fits in any limit.
# lowers: ext4 xfs xfsr tmpfs
test_fallocate_past_the_file_size_limit_copies_nothing() {
	sized_cow_pair
	i=$(ino $M/a)
	check_eq "$(trap '' XFSZ; ulimit -f 0; try fallocate $M/a 0 65536)" EFBIG "fallocate"
	check_eq "$(ino $M/a)" "$i" "st_ino"
	check_eq "$(nlink $M/a)" 2 "st_nlink"
	check_try OK fallocate $M/a 0 65536
	check_ne "$(ino $M/a)" "$i" "st_ino after a fallocate within the limit"
	check_eq "$(stat -c %s $M/b)" 0 "the other name"
}

# An append through a descriptor opened before another writer gave the
# name a copy of its own is held to the file size limit at the end of
# that copy, where it writes, not at the end of the file the other names
# keep (dash's ulimit -f counts 512-byte blocks: 8 is 4096 bytes).
test_append_limit_is_checked_at_the_end_of_the_name_s_file_now() {
	sized_cow_pair 8192
	exec 3>>$M/a
	: >$M/a
	r=OK
	(trap '' XFSZ; ulimit -f 8; printf x >&3) 2>/dev/null || r=refused
	exec 3>&-
	check_eq "$r" OK "an append within the limit"
	check_eq "$(content $M/a)" x "the name's own copy"
	check_eq "$(stat -c %s $M/b)" 8192 "the other name"
}

# copy_file_range() from a file whose lower fs cannot copy into the COW
# name's (a cowlinkfs mount over a tmpfs of its own) is refused with the
# lower fs's EXDEV, and copies nothing first
test_copy_file_range_refused_across_lower_filesystems_copies_nothing() {
	mkdir -p /tmp/xl /tmp/xm
	mount -t tmpfs none /tmp/xl
	mount -t cowlinkfs /tmp/xl /tmp/xm
	printf src >/tmp/xm/s
	cow_pair
	i=$(ino $M/a)
	r=$(try copyrange /tmp/xm/s $M/a 3)
	umount /tmp/xm
	umount /tmp/xl
	check_eq "$r" EXDEV "copy_file_range"
	check_eq "$(ino $M/a)" "$i" "st_ino"
	check_eq "$(nlink $M/a)" 2 "st_nlink"
	check_eq "$(content $M/a)" old "the bytes"
}

test_read_write_and_truncating_opens_break_at_open() {
	for how in rw rwa wt rwt; do
		rm -f $M/a $M/b
		cow_pair
		i=$(ino $M/a)
		r=$(try fdino $M/a $how NEW)
		check_ne "${r% *}" "$i" "$how: fd st_ino right after open"
		check_eq "${r% *}" "${r#* }" "$how: fd st_ino stays"
		check_broken "$i"
	done
	check_eq "$(content $M/a)" NEW "O_TRUNC emptied the copy"
}

test_write_only_open_without_writing_copies_nothing() {
	cow_pair
	i=$(ino $M/a)
	check_try OK open $M/a w
	check_try OK open $M/a wa
	check_eq "$(ino $M/a)" "$i" "st_ino"
	check_eq "$(nlink $M/a)" 2 "st_nlink"
}

test_truncate_and_metadata_changes_break() {
	for op in "truncate 1" "chmod 600" "chown 1000 1000" "utime 12345" \
		"setxattr $XNS.x y" "setflags 40"; do
		rm -f $M/a $M/b
		cow_pair
		setfattr -n $XNS.keep -v 1 $L/b
		i=$(ino $M/a)
		m=$(stat -c %a:%u:%Y:%s $M/b)
		# shellcheck disable=SC2086
		check_try OK ${op%% *} $M/a ${op#* }
		check_broken "$i"
		check_eq "$(stat -c %a:%u:%Y:%s $M/b)" "$m" "$op: other name's metadata"
		check_eq "$(try getxattr $M/b $XNS.keep)" 1 "$op: other name's xattr"
		check_eq "$(try getxattr $M/a $XNS.keep)" 1 "$op: copy's xattr"
	done
	rm -f $M/a $M/b
	cow_pair
	i=$(ino $M/a)
	setfacl -m u:1000:rw $M/a
	check_broken "$i"
	check_eq "$(getfacl -cpn $M/b | grep -c '^user:1000')" 0 "ACL only on the broken name"
}

test_reads_stat_and_private_mmap_do_not_break() {
	cow_pair
	i=$(ino $M/a)
	cat $M/a >/dev/null
	stat $M/a >/dev/null
	check_eq "$(try mmapread $M/a 0 3)" old "private read mmap"
	check_try OK open $M/a r
	getfattr -d $M/a >/dev/null 2>&1 || true
	check_eq "$(ino $M/a)" "$i" "st_ino unchanged"
	check_eq "$(nlink $M/a)" 2 "still two links"
}

test_shared_mmap_write_breaks() {
	cow_pair
	i=$(ino $M/a)
	check_try OK mmapwrite $M/a 0 NEW
	check_eq "$(content $M/a)" NEW "mmap write in the copy"
	check_broken "$i"
}

# xattrs: dump FILE's xattrs (names and values) without its path
xattrs() {
	getfattr -d -m - -e hex --absolute-names "$1" | tail -n +2
}

test_copy_keeps_owner_mode_times_xattrs() {
	cow_pair 640 1000:1000
	# Set in the lower dir: through the mount each change would break.
	setfattr -n $XNS.k -v v $L/a
	setfattr -n security.test -v s $L/a
	setfattr -n trusted.t -v t $L/a
	setfacl -m u:1000:rw,g:1000:r $L/a
	touch -d @1000000000 $L/a
	touch -a -d @1100000000 $L/a
	check_eq "$(nlink $M/a)" 2 "still linked"
	b_before=$(stat -c %a:%u:%g:%X:%Y $M/b)
	x_before=$(xattrs $M/b)
	check_eq "$(echo "$x_before" | grep -cE "^($XNS.k|security.test|trusted.t|system.posix_acl_access)=")" \
		4 "xattrs to copy"
	i=$(ino $M/b)
	# O_RDWR breaks at open; nothing is written, so the times stay.
	check_try OK open $M/a rw
	check_ne "$(ino $M/a)" "$i" "broken"
	check_eq "$(stat -c %a:%u:%g:%X:%Y $M/a)" "$b_before" "mode, owner, times of the copy"
	check_eq "$(xattrs $M/a)" "$x_before" "xattrs and ACL of the copy"
	check_eq "$(getfacl -cpn $M/a | grep -c '^user:1000:rw-')" 1 "ACL entry"
	check_eq "$(try getxattr $L/a security.test)" s "security xattr in the lower copy"
	check_eq "$(stat -c %a:%u:%g:%X:%Y $M/b)" "$b_before" "other name untouched"
	check_eq "$(xattrs $M/b)" "$x_before" "other name's xattrs"
	check_eq "$(ino $M/b)" "$i" "other name inode"
	check_try 1 getcow $M/a
}

test_setuid_mode_and_owner_survive_break() {
	cow_pair 6755 1000:1000
	i=$(ino $M/a)
	check_try OK setxattr $M/a $XNS.z 1
	check_ne "$(ino $M/a)" "$i" "broken"
	check_eq "$(stat -c %a:%u:%g $M/a)" 6755:1000:1000 "setuid copy's mode and owner"
	check_eq "$(stat -c %a:%u:%g $M/b)" 6755:1000:1000 "other name"
}

test_unflagged_links_behave_like_hard_links() {
	printf old >$M/a
	ln $M/a $M/b
	i=$(ino $M/a)
	echo new >$M/a
	check_eq "$(content $M/b)" new "both names changed"
	check_eq "$(ino $M/a)" "$i" "same inode"
	check_eq "$(nlink $M/b)" 2 "still two links"
}

test_single_link_cow_file_is_not_copied() {
	printf old >$M/a
	check_try OK setcow $M/a 1
	i=$(ino $M/a)
	echo new >$M/a
	check_eq "$(ino $M/a)" "$i" "no copy for one link"
}

test_unprivileged_eacces_makes_no_copy() {
	cow_pair 644
	i=$(ino $M/a)
	check_eq "$(as_user try open $M/a w)" EACCES "open for write"
	check_eq "$(as_user try truncate $M/a 0)" EACCES "truncate"
	check_eq "$(as_user try chmod $M/a 777)" EPERM "chmod"
	check_eq "$(ino $M/a)" "$i" "st_ino"
	check_eq "$(nlink $M/a)" 2 "st_nlink"
	check_eq "$(ls -a $L/.cowlinkfs-work | wc -l)" 2 "no temp file left"
}

test_copy_belongs_to_owner_not_caller() {
	cow_pair 666
	i=$(ino $M/a)
	check_eq "$(as_user try write $M/a 0 X)" OK "write by another user"
	check_ne "$(ino $M/a)" "$i" "broken"
	check_eq "$(owner $M/a)" 0:0 "copy owned by the file's owner"
}

test_open_fd_keeps_old_inode_across_break() {
	cow_pair
	exec 4<$M/b
	echo new >$M/a
	check_eq "$(cat <&4)" old "reader of the other name"
	exec 4<&-
}

test_file_open_for_write_cannot_gain_cow_link() {
	printf x >$M/a
	check_try OK setcow $M/a 1
	check_try OK setcow $M 1
	: >/tmp/hw
	try holdwrite $M/a 60 >/tmp/hw &
	holder=$!
	wait_for_line /tmp/hw OK
	check_try ETXTBSY link $M/a $M/b
	stop $holder
	check_try OK link $M/a $M/b
}

# A writer opened O_WRONLY through one name (a log a tool keeps open for
# appending) holds the inode the names share read-only until its first
# write: a link of another name made meanwhile (a clone of the tree while
# another run is busy) works, as on the lower fs, and so does running a
# program through another name; the write then goes to its name alone.
test_writer_that_has_not_written_stops_no_link_or_exec_of_another_name() {
	check_try OK setcow $M 1
	printf old >$M/a
	ln $M/a $M/b
	i=$(ino $M/a)
	exec 3>>$M/a
	check_try OK link $M/b $M/c
	check_eq "$(ino $M/a)" "$i" "a's inode before its writer writes"
	echo new >&3
	exec 3>&-
	check_eq "$(content $M/a)" oldnew "a after its writer's write"
	check_eq "$(content $M/b)$(content $M/c)" oldold "b and c"
	check_eq "$(ino $M/b):$(ino $M/c)" "$i:$i" "b and c keep the inode"
	check_eq "$(nlink $M/b)" 2 "b's links: b and c"
	cp /bin/true $M/p
	ln $M/p $M/q
	i=$(ino $M/p)
	exec 3>>$M/p
	$M/q || fail "running q while a writer of p has not written: $?"
	exec 3>&-
	check_eq "$(ino $M/p):$(ino $M/q)" "$i:$i" "a writer that never wrote copies nothing"
}

test_sparse_file_stays_sparse() {
	check_try OK setcow $M 1
	dd if=/dev/urandom of=$M/s bs=4096 count=1 seek=1000 2>/dev/null
	dd if=/dev/urandom of=$M/s bs=4096 count=1 seek=5000 conv=notrunc 2>/dev/null
	ln $M/s $M/t
	sum_before=$(sum $M/t)
	b=$(blocks $M/s)
	check_try OK append $M/s X
	check_eq "$(sum $M/t)" "$sum_before" "other name's bytes"
	[ "$(blocks $M/s)" -le $((b + 16)) ] || fail "copy not sparse: $(blocks $M/s) blocks, was $b"
	check_eq "$(stat -c %s $M/s)" $((5001 * 4096 + 1)) "size"
	check_eq "$(cmp -n $((5001 * 4096)) $M/s $M/t && echo same)" same "data up to the append"
}

# lowers: xfsr
test_reflink_break_shares_extents_on_xfs_reflink() {
	check_try OK setcow $M 1
	dd if=/dev/urandom of=$M/a bs=1M count=8 2>/dev/null
	ln $M/a $M/b
	sync
	check_try OK write $M/a 0 X
	sync
	xfs_io -r -c 'fiemap -v' $L/b | grep -qE '0x2[0-9a-f]{3}|shared' ||
		filefrag -v $L/b | grep -q shared ||
		fail "no shared extents: $(filefrag -v $L/b | tail -n 3)"
}

# Rounds, because the race it guards (a writer that opened the old inode
# just before another writer's break) needs luck to hit.
test_concurrent_writers_of_one_name_make_one_copy() {
	for r in 1 2 3 4 5 6; do
		rm -f $M/a $M/b
		cow_pair
		i=$(ino $M/b)
		for k in 1 2 3 4 5 6 7 8; do
			try write $M/a $((k * 4)) "w$k.." >/dev/null &
		done
		wait
		check_eq "$(ino $M/b)" "$i" "other name, round $r"
		check_eq "$(content $M/b)" old "other bytes, round $r"
		check_eq "$(nlink $M/a)" 1 "one copy, round $r"
		for k in 1 2 3 4 5 6 7 8; do
			grep -q "w$k" $M/a ||
				fail "round $r: write $k lost: $(cat $M/a)"
		done
		check_eq "$(ls -a $L/.cowlinkfs-work | wc -l)" 2 \
			"work dir empty, round $r"
	done
}

test_concurrent_breaks_of_different_names() {
	printf shared >$M/n0
	check_try OK setcow $M/n0 1
	check_try OK setcow $M 1
	for k in 1 2 3 4 5 6; do ln $M/n0 $M/n$k; done
	for k in 0 1 2 3 4 5 6; do
		try append $M/n$k "+$k" >/dev/null &
	done
	wait
	for k in 0 1 2 3 4 5 6; do
		check_eq "$(content $M/n$k)" "shared+$k" "name $k"
		check_eq "$(nlink $M/n$k)" 1 "name $k nlink"
	done
	check_eq "$(ls -i $M | awk '{print $1}' | sort -u | wc -l)" 7 "seven inodes"
}

# A crash after a break linked its finished copy into the work directory
# but before the rename over the name leaves that copy behind; the next
# mount removes it and the names are as before the break.
test_copy_left_in_work_dir_by_a_crash_is_removed_at_mount() {
	cow_pair
	i=$(ino $M/a)
	umount $M
	cp -p $L/a "$L/.cowlinkfs-work/#4d2"
	cp -p $L/a "$L/.cowlinkfs-work/#4d3"
	k=$(klog_mark)
	mount_clfs
	check_eq "$(ls -A $L/.cowlinkfs-work)" "" "work dir after mount"
	# (the other worker may mount one of its own meanwhile)
	[ "$(klog_since "$k" | grep -c "cowlinkfs: removed 2 leftover")" -ge 1 ] ||
		fail "no kernel log line for the leftovers"
	check_eq "$(ino $M/a)" "$i" "name a"
	check_eq "$(ino $M/b)" "$i" "name b"
	check_eq "$(nlink $M/a)" 2 "links"
	check_eq "$(content $M/a)" old "bytes"
}

# lowers: ext2
test_enospc_during_break_leaves_both_names() {
	umount $M
	mkdir -p /tmp/small
	mount "$(blkid -L cl-small)" /tmp/small
	mkdir -p /tmp/small/l
	mount -t cowlinkfs /tmp/small/l $M
	check_try OK setcow $M 1
	dd if=/dev/urandom of=$M/big bs=1k count=5000 2>/dev/null
	ln $M/big $M/big2
	sync
	free=$(stat -f -c %f /tmp/small)
	s=$(sum $M/big)
	i=$(ino $M/big)
	r=$(try append $M/big X)
	sync
	umount $M
	check_eq "$r" ENOSPC "open for append"
	check_eq "$(ino /tmp/small/l/big)" "$i" "name kept the old inode"
	check_eq "$(nlink /tmp/small/l/big)" 2 "links"
	check_eq "$(sum /tmp/small/l/big2)" "$s" "bytes"
	check_eq "$(ls -a /tmp/small/l/.cowlinkfs-work | wc -l)" 2 "no temp file"
	check_eq "$(stat -f -c %f /tmp/small)" "$free" "free blocks back"
	umount /tmp/small
}

test_cow_all_mount_option_needs_no_flags() {
	umount $M
	mount_clfs cow=all
	printf old >$M/a
	ln $M/a $M/b
	i=$(ino $M/a)
	echo new >$M/a
	check_broken "$i"
}

test_cp_rl_story_old_tree_stays_intact() {
	check_try OK setcow $M 1
	mkdir -p $M/old/src/sub
	for f in a b c d e f g h; do
		printf 'line one\nline two %s\n' $f >$M/old/src/$f.c
	done
	printf 'x\n' >$M/old/src/sub/untouched.c
	cp -rl $M/old $M/new
	(cd $M/old && find . -type f | sort | xargs md5sum) >/tmp/old.sums
	vim.tiny -u NONE -i NONE -n -es -c '%s/one/ONE/' -c 'wq' $M/new/src/a.c </dev/null ||
		fail "vim.tiny exited with $?"
	echo appended >>$M/new/src/b.c
	printf ZZ | dd of=$M/new/src/c.c bs=1 seek=2 conv=notrunc 2>/dev/null
	truncate -s 3 $M/new/src/d.c
	try mmapwrite $M/new/src/e.c 0 MM >/dev/null
	sed -i 's/two/TWO/' $M/new/src/f.c
	# busybox vi wants a terminal: script(1) gives it one.  Its input
	# stays open until the edit is on disk, however slow the guest is.
	(sleep 3; printf ':%%s/line/LINE/\r'; sleep 1; printf ':wq\r'
	 wait_for_line $M/new/src/g.c 'LINE two g'; sleep 1) |
		timeout 60 script -qec "busybox vi $M/new/src/g.c" /dev/null >/dev/null 2>&1 ||
		fail "busybox vi exited with $?"
	(cd $M/old && md5sum -c --quiet /tmp/old.sums) || fail "old tree changed"
	check_eq "$(ino $M/new/src/b.c)" "$(ino $L/new/src/b.c)" "lower agrees"
	grep -q ONE $M/new/src/a.c || fail "vim edit missing"
	grep -q appended $M/new/src/b.c || fail ">> missing"
	grep -q ZZ $M/new/src/c.c || fail "dd missing"
	check_eq "$(stat -c %s $M/new/src/d.c)" 3 "truncate"
	check_eq "$(head -c 2 $M/new/src/e.c)" MM "mmap"
	grep -q TWO $M/new/src/f.c || fail "sed -i missing"
	grep -q LINE $M/new/src/g.c || fail "vi edit missing"
	check_eq "$(ino $M/new/src/sub/untouched.c)" "$(ino $M/old/src/sub/untouched.c)" "untouched file shared"
	check_eq "$(ino $M/new/src/h.c)" "$(ino $M/old/src/h.c)" "untouched h.c shared"
	check_ne "$(ino $M/new/src/a.c)" "$(ino $M/old/src/a.c)" "edited file own inode"
}

# rename() between two names of one file does nothing (POSIX), but the VFS
# moves our dentry of the old name onto the new name: each name must still
# reach its own lower name, also in RCU walk and for names of one length,
# or a write through the new name breaks the old one (found by make soak:
# cowfsx -m cow -s 1001 -n 1000).
test_rename_between_two_names_of_one_cow_file_keeps_both() {
	check_try OK setcow "$M" 1
	printf old >"$M/f7"
	ln "$M/f7" "$M/f3"
	i=$(ino "$M/f3")
	check_try OK rename "$M/f3" "$M/f7"
	check_eq "$(nlink "$M/f3")" 2 "f3 after the rename"
	check_eq "$(nlink "$M/f7")" 2 "f7 after the rename"
	echo new >>"$M/f7"
	check_eq "$(content "$M/f3")" old "f3 keeps its bytes"
	check_eq "$(ino "$M/f3")" "$i" "f3 keeps the old inode"
	check_eq "$(nlink "$M/f3")" 1 "f3 has one link left"
	check_ne "$(ino "$M/f7")" "$i" "f7 has a copy of its own"
	check_eq "$(ino "$L/f7")" "$(ino "$M/f7")" "the lower dir agrees on f7"
}

# A no-op rename() between two names of one file must leave each name its
# own inode: a writer opened through one, and a writer that breaks it after
# the rename, write the same copy; no write lands in an unnamed copy.
test_writers_of_a_name_share_its_copy_after_a_noop_rename() {
	check_try OK setcow "$M" 1
	printf old >"$M/f7"
	ln "$M/f7" "$M/f3"
	exec 3>>"$M/f7"
	check_try OK rename "$M/f3" "$M/f7"
	echo w2 >>"$M/f7"
	echo w1 >&3
	exec 3>&-
	check_eq "$(content "$M/f7")" "oldw2
w1" "both writers of f7"
	check_eq "$(content "$M/f3")" old "f3 keeps its bytes"
	check_eq "$(nlink "$M/f3")" 1 "f3 after the break"
}

# Racing writers of one name (an O_RDWR shared mapping among them) and a
# linker giving the name, once broken, a new name to share: whatever the
# order, no write reaches the other name, and each write lands in a name.
# lowers: ext2 ext4 xfs xfsr tmpfs
test_racing_writers_mmap_and_linker_never_change_the_other_name() {
	check_try OK setcow "$M" 1
	for r in 1 2 3 4 5 6 7 8 9 10; do
		rm -f "$M/a" "$M/b" "$M/c"
		printf oldbytes >"$M/a"
		ln "$M/a" "$M/b"
		try mmapwrite "$M/a" 0 M >/dev/null &
		try write "$M/a" 1 W >/dev/null &
		try link "$M/a" "$M/c" >/dev/null &
		try append "$M/a" A >/dev/null &
		wait
		check_eq "$(content "$M/b")" oldbytes "the other name, round $r"
		case $(content "$M/a") in
		MWdbytesA) ;;
		*) fail "round $r: a is '$(content "$M/a")', expected every write" ;;
		esac
	done
}

# Breaks, renames and reads while the kernel reclaims dentries and inodes
# (drop_caches and a memory hog): the lower dentries a break drops are
# peeked at under RCU meanwhile.  On the debug kernel, KASAN watches.
# Forty rounds, or as many as fit in the hog's minute but at least ten
# (the debug kernel takes six seconds a round).
# serial
# matrix: core
# lowers: ext2 ext4 xfs tmpfs
test_breaks_and_renames_under_memory_pressure() {
	check_try OK setcow "$M" 1
	mkdir "$M/d"
	stress-ng --vm 1 --vm-bytes 25% --timeout 60 --quiet >/dev/null 2>&1 &
	hog=$!
	( while :; do echo 3 >/proc/sys/vm/drop_caches; sleep 0.2; done ) &
	dropper=$!
	trap 'kill $hog $dropper 2>/dev/null || true' EXIT
	t0=$(date +%s)
	for r in $(seq 1 40); do
		printf "v$r" >"$M/d/f$r"
		ln "$M/d/f$r" "$M/d/g$r"
		cat "$M/d/f$r" >/dev/null &
		p1=$!
		stat "$M/d/g$r" >/dev/null &
		p2=$!
		echo x >>"$M/d/f$r"
		mv "$M/d/f$r" "$M/d/h$r"
		wait $p1 $p2 || true
		check_eq "$(content "$M/d/g$r")" "v$r" "the other name, round $r"
		check_eq "$(content "$M/d/h$r")" "v${r}x" "the broken name, renamed, round $r"
		[ "$r" -lt 10 ] || [ $(($(date +%s) - t0)) -lt 60 ] || break
	done
	kill $hog $dropper 2>/dev/null || true
}

# break_sync=off changes when a copy reaches the disk, nothing a caller
# sees: every kind of break gives the broken name its own inode with the
# change, and the other name the old inode, bytes, owner and mode.
# matrix: core
test_breaks_under_break_sync_off_keep_both_names_right() {
	mount -o remount,break_sync=off "$M" || fail "remount,break_sync=off"
	grep -q " $M cowlinkfs .*,break_sync=off " /proc/mounts || fail "not break_sync=off"
	for how in append write mmapwrite truncate chmod setxattr; do
		rm -f "$M/a" "$M/b"
		cow_pair 640
		old=$(ino "$M/a")
		case $how in
		append) check_try OK append "$M/a" x; want=oldx ;;
		write) check_try OK write "$M/a" 1 W; want=oWd ;;
		mmapwrite) check_try OK mmapwrite "$M/a" 0 M; want=Mld ;;
		truncate) check_try OK truncate "$M/a" 1; want=o ;;
		chmod) check_try OK chmod "$M/a" 600; want=old ;;
		setxattr) check_try OK setxattr "$M/a" "$XNS.k" v; want=old ;;
		esac
		check_broken "$old"
		check_eq "$(content "$M/a")" "$want" "$how: the broken name's bytes"
		check_eq "$(mode "$M/b")" 640 "$how: the other name's mode"
		check_try 1 getcow "$M/a"
	done
	check_eq "$(mode "$M/a")" 640 "setxattr: the copy's mode"
	check_eq "$(ls -A "$L/.cowlinkfs-work")" "" "the work dir"
}

# An O_TMPFILE file gets its directory's flag, as a created one: linkat()
# names it in a directory of the same flag only (EMLINK), and under
# cow=all it is named although it is open for writing (ETXTBSY is for a
# writer of a file with other names), and its writer writes the named file.
test_o_tmpfile_gets_the_flag_and_links_by_its_rules() {
	mkdir $M/c
	check_try OK setcow $M/c 1
	check_try OK tmpfile $M/c $M/c/t abc
	check_eq "$(try getcow $M/c/t)" 1 "the flag of a named O_TMPFILE"
	check_eq "$(content $M/c/t)" abcabc "its bytes"
	check_try EMLINK tmpfile $M/c $M/p abc
	# named and still open: a single-link file, which may get the flag
	check_eq "$(try tmpfile $M $M/s ab run "try setcow $M/s 1")" "OK
OK" "the flag set on a named O_TMPFILE file still open"
	check_eq "$(content $M/s)" abab "its bytes"
	umount $M
	mount_clfs cow=all
	# a write racing with the linkat() that names the file is the file's
	check_try OK tmpfilerace $M 200
	check_try OK tmpfile $M $M/a xy
	check_eq "$(content $M/a)" xyxy "cow=all: the bytes written before and after linkat"
	check_eq "$(ino $M/a)" "$(ino $L/a)" "cow=all: st_ino"
	ln $M/a $M/b
	echo z >>$M/b
	check_eq "$(content $M/a)" xyxy "cow=all: a link of it then breaks as any"
}
