# shellcheck shell=sh
# Passthrough: every operation through the mount reaches the lower directory
# at once, and changes in the lower directory show through the mount.
# lowers: ext2 ext3 ext4 xfs tmpfs

test_create_write_read_shows_in_lower() {
	echo hello >$M/f
	check_eq "$(content $L/f)" hello "lower content"
	check_eq "$(content $M/f)" hello "content through the mount"
	check_eq "$(ino $M/f)" "$(ino $L/f)" "st_ino"
	echo world >>$L/f
	check_eq "$(content $M/f)" "hello
world" "lower append seen through the mount"
}

test_lower_changes_show_through_mount() {
	ls $M >/dev/null
	check_try ENOENT open $M/new r
	echo x >$L/new
	check_eq "$(content $M/new)" x "file created in the lower dir"
	mv $L/new $L/renamed
	check_try ENOENT open $M/new r
	check_eq "$(content $M/renamed)" x "file renamed in the lower dir"
	rm $L/renamed
	check_try ENOENT open $M/renamed r
}

# Negative dentries are kept while the negative lower dentry they were
# found by stays negative: each way a name can appear in the lower dir
# behind the mount's back must still show at once.
test_names_missing_then_made_in_the_lower_dir_show_through_mount() {
	mkdir $M/d
	echo x >$L/src
	for n in ren lnk sym dir fifo; do
		check_try ENOENT open $M/d/$n r
		check_try ENOENT open $M/d/$n r
	done
	mv $L/src $L/d/ren
	ln $L/d/ren $L/d/lnk
	ln -s ren $L/d/sym
	mkdir $L/d/dir
	mkfifo $L/d/fifo
	check_eq "$(content $M/d/ren)" x "renamed onto a missing name"
	check_eq "$(ino $M/d/lnk)" "$(ino $L/d/ren)" "linked onto a missing name"
	check_eq "$(content $M/d/sym)" x "symlink made at a missing name"
	check_eq "$(stat -c %F $M/d/dir)" directory "mkdir at a missing name"
	check_eq "$(stat -c %F $M/d/fifo)" fifo "mkfifo at a missing name"
	# the lower directory itself replaced under a cached missing name
	check_try ENOENT open $M/d/dir/x r
	rmdir $L/d/dir
	mkdir $L/d/dir
	echo y >$L/d/dir/x
	check_eq "$(content $M/d/dir/x)" y "in a lower dir made anew"
	# made through the mount after a cached miss: the lower inode
	check_try ENOENT open $M/d/new r
	echo z >$M/d/new
	check_eq "$(ino $M/d/new)" "$(ino $L/d/new)" "created after a miss"
	rm $L/d/new
	check_try ENOENT open $M/d/new r
}

# A lower fs whose dentries go stale behind the dcache cannot be stacked
# on: FUSE (mergerfs here), whose root alone has no ->d_revalidate().
# lowers: ext4
test_fuse_lower_is_refused_at_mount() {
	umount $M
	mkdir -p $L/branch /tmp/fuse
	mergerfs -o cache.files=off $L/branch /tmp/fuse
	k=$(klog_mark)
	set +e
	mount -t cowlinkfs /tmp/fuse $M 2>/dev/null
	rc=$?
	set -e
	[ "$rc" != 0 ] || umount $M
	umount /tmp/fuse
	check_eq "$rc" 32 "mount exit status"
	check_eq "$(klog_since "$k" | grep -c 'fuse: remote and FUSE filesystems are not supported')" 1 "message"
	mount_clfs
}

# ext2 directories have address space operations, so an O_DIRECT open of
# one works on the lower fs, and so through cowlinkfs.
# lowers: ext2
test_o_direct_open_of_a_directory_works_as_on_the_lower() {
	mkdir $M/d
	dd if=$L/d iflag=directory,direct count=0 of=/dev/null 2>/dev/null ||
		fail "the bare lower refuses it"
	dd if=$M/d iflag=directory,direct count=0 of=/dev/null ||
		fail "O_DIRECT open of a directory through cowlinkfs"
}

test_mkdir_rmdir_readdir() {
	mkdir $M/d
	touch $M/d/a $M/d/b
	check_eq "$(ls $M/d | tr '\n' ' ')" "a b " "readdir"
	check_eq "$(ls $L/d | tr '\n' ' ')" "a b " "lower readdir"
	check_try ENOTEMPTY rmdir $M/d
	rm $M/d/a $M/d/b
	check_try OK rmdir $M/d
	check_try ENOENT rmdir $L/d
}

test_readdir_hides_workdir() {
	touch $M/visible
	check_eq "$(ls -a $M | tr '\n' ' ')" ". .. visible " "ls -a of the root"
	check_eq "$(find $L -maxdepth 1 -name .cowlinkfs-work | wc -l)" 1 "work dir in the lower dir"
	check_try ENOENT open $M/.cowlinkfs-work r
	check_try ENOENT mkdir $M/.cowlinkfs-work
}

test_link_counts_and_inodes_are_lower() {
	echo a >$M/f
	check_try OK link $M/f $M/g
	check_eq "$(nlink $M/f)" 2 "nlink after link"
	check_eq "$(nlink $L/g)" 2 "lower nlink"
	check_eq "$(ino $M/g)" "$(ino $L/f)" "both names one lower inode"
	check_eq "$(ino $M/f)" "$(ino $M/g)" "st_ino of the two names"
	echo b >>$M/g
	check_eq "$(content $M/f)" "a
b" "unflagged hard links share data"
	check_try OK unlink $M/g
	check_eq "$(nlink $M/f)" 1 "nlink after unlink"
}

test_symlink_mknod() {
	check_try OK symlink target $M/s
	check_eq "$(readlink $M/s)" target "readlink"
	check_eq "$(readlink $L/s)" target "lower readlink"
	check_try OK mkfifo $M/p
	check_eq "$(stat -c %F $L/p)" fifo "lower fifo"
	check_eq "$(stat -c %F $M/p)" fifo "fifo through the mount"
	mknod $M/c c 1 3
	check_eq "$(stat -c %t:%T $L/c)" 1:3 "char device numbers"
	check_eq "$(head -c 3 $M/c | wc -c)" 0 "reading /dev/null through the mount"
}

test_rename_flags() {
	echo a >$M/a
	echo b >$M/b
	check_try EEXIST rename $M/a $M/b noreplace
	if [ $FS = ext2 ]; then
		check_try EINVAL rename $M/a $M/b exchange
		mv $M/a $M/t && mv $M/b $M/a && mv $M/t $M/b
	else
		check_try OK rename $M/a $M/b exchange
	fi
	check_eq "$(content $M/a)" b "exchange: a"
	check_eq "$(content $L/b)" a "exchange: lower b"
	check_try OK rename $M/a $M/c
	check_try ENOENT open $M/a r
	check_eq "$(content $L/c)" b "plain rename"
	mkdir $M/d
	check_try OK rename $M/c $M/d/c
	check_eq "$(content $L/d/c)" b "rename across directories"
	check_try OK rename $M/b $M/d/c
	check_eq "$(content $M/d/c)" a "rename over an existing name"
}

test_rename_whiteout_where_supported() {
	echo a >$M/a
	r=$(try rename $M/a $M/b whiteout)
	case $FS in
	ext2) check_eq "$r" EINVAL "ext2 has no RENAME_WHITEOUT" ;;
	*)
		check_eq "$r" OK "whiteout rename"
		check_eq "$(stat -c %F:%t:%T $L/a)" "character special file:0:0" "whiteout left"
		;;
	esac
}

test_truncate_fallocate_copy_range() {
	printf 0123456789 >$M/f
	check_try OK truncate $M/f 4
	check_eq "$(content $L/f)" 0123 "truncate"
	printf 0123 >$L/ref
	want=$(try fallocate $L/ref 0 65536)
	check_try "$want" fallocate $M/f 0 65536
	check_eq "$(stat -c %s $M/f)" "$(stat -c %s $L/ref)" "size after fallocate"
	check_try OK copyrange $M/f $M/g 4
	check_eq "$(content $L/g)" 0123 "copy_file_range"
	check_eq "$(sum $M/f)" "$(sum $L/f)" "checksum"
}

test_mmap_shared_write_and_read() {
	printf 'aaaaaaaaaa' >$M/f
	check_try OK mmapwrite $M/f 3 XYZ
	check_eq "$(content $L/f)" aaaXYZaaaa "lower bytes after a shared mmap write"
	printf 'Q' | dd of=$L/f bs=1 seek=9 conv=notrunc 2>/dev/null
	check_eq "$(try mmapread $M/f 0 10)" aaaXYZaaaQ "mmap read sees lower write"
}

test_chmod_chown_utimes() {
	echo a >$M/f
	check_try OK chmod $M/f 4751
	check_eq "$(mode $L/f)" 4751 "lower mode"
	check_try OK chown $M/f 1000 1000
	check_eq "$(owner $L/f)" 1000:1000 "lower owner"
	check_try OK utime $M/f 1000000000
	check_eq "$(stat -c %Y $L/f)" 1000000000 "lower mtime"
	check_eq "$(stat -c %Y $M/f)" 1000000000 "mtime through the mount"
}

test_xattrs_and_acls() {
	echo a >$M/f
	check_try OK setxattr $M/f $XNS.color blue
	check_eq "$(try getxattr $L/f $XNS.color)" blue "lower $XNS xattr"
	check_try OK setxattr $M/f trusted.t 1
	check_eq "$(try getxattr $L/f trusted.t)" 1 "lower trusted xattr"
	check_eq "$(try listxattr $M/f | sort | tr '\n' ' ')" \
		"$(printf '%s\n' trusted.t $XNS.color | sort | tr '\n' ' ')" "listxattr"
	check_try OK removexattr $M/f $XNS.color
	check_try ENODATA getxattr $L/f $XNS.color
	setfacl -m u:1000:rw $M/f
	check_eq "$(getfacl -cpn $L/f 2>/dev/null | grep '^user:1000')" "user:1000:rw-" "lower ACL"
	check_eq "$(getfacl -cpn $M/f 2>/dev/null | grep '^user:1000')" "user:1000:rw-" "ACL through the mount"
	chmod 600 $M/f
	check_eq "$(as_user try open $M/f w)" EACCES "ACL mask after chmod"
	chmod 660 $M/f
	check_eq "$(as_user try open $M/f w)" OK "ACL grants write"
	mkdir $M/d
	setfacl -d -m u:1000:rwx $M/d
	touch $M/d/new
	check_eq "$(getfacl -cpn $L/d/new 2>/dev/null | grep '^user:1000')" "user:1000:rwx	#effective:rw-" "default ACL inherited"
}

# fstests knows the ACL entry limit of a few filesystems by their type
# (generic/026 is notrun through cowlinkfs): the limit through the mount
# must be the lower fs's own, whatever it is (ext2 to ext4 fit about 500
# entries in a block, xfs 5461, tmpfs as many as an xattr's 64 KiB hold).
test_acl_entry_limit_is_the_lower_fs_s() {
	echo a >$M/f
	echo a >$L/g
	for n in 25 600 6000; do
		seq 2000 $((2000 + n - 1)) | sed 's/^/u:/; s/$/:r/' >/tmp/acl
		below=OK through=OK
		setfacl -M /tmp/acl $L/g 2>/dev/null || below=refused
		setfacl -M /tmp/acl $M/f 2>/dev/null || through=refused
		check_eq "$through" "$below" "$n ACL entries"
		check_eq "$(getfacl -cpn $M/f 2>/dev/null | grep -c '^user:[0-9]')" \
			"$(getfacl -cpn $L/g 2>/dev/null | grep -c '^user:[0-9]')" \
			"entries kept of $n"
	done
}

test_inode_flags_ioctl() {
	echo a >$M/f
	check_try OK setflags $M/f 40
	check_eq "$(try getflags $L/f)" "$(try getflags $M/f)" "FS_IOC_GETFLAGS"
	case "$(lsattr -d $L/f 2>/dev/null)" in
	*d*) ;;
	*) fail "nodump flag not set on the lower file: $(lsattr $L/f)" ;;
	esac
}

test_fiemap_and_statfs() {
	dd if=/dev/zero of=$M/f bs=4096 count=4 2>/dev/null
	sync
	check_eq "$(filefrag $M/f | sed 's/.*: //')" "$(filefrag $L/f | sed 's/.*: //')" "filefrag"
	check_eq "$(try statfs $M)" 636f776c "statfs f_type"
	check_eq "$(df -P $M | awk 'NR==2 {print $2}')" "$(df -P $L | awk 'NR==2 {print $2}')" "df size"
}

test_locks_work_through_mount() {
	echo a >$M/f
	: >/tmp/hold.out
	try hold $M/f 60 >/tmp/hold.out &
	holder=$!
	wait_for_line /tmp/hold.out OK
	check_try EAGAIN flock $M/f
	check_try EAGAIN posixlock $M/f
	stop $holder
	check_try OK flock $M/f
}

test_permissions_match_lower_as_user() {
	echo a >$M/f
	chmod 644 $M/f
	check_eq "$(as_user try open $M/f w)" "$(as_user try open $L/f w)" "open for write of a 644 root file"
	check_eq "$(as_user try open $M/f w)" EACCES "EACCES"
	check_eq "$(as_user try chmod $M/f 777)" EPERM "chmod of another user's file"
	check_eq "$(as_user try unlink $M/f)" EACCES "unlink in a root dir"
	mkdir $M/u
	chown 1000:1000 $M/u
	check_eq "$(as_user try mkdir $M/u/sub)" OK "mkdir in own dir"
	check_eq "$(owner $L/u/sub)" 1000:1000 "new dir belongs to the caller"
	chmod 700 $M/u
	mkdir $M/r
	chmod 700 $M/r
	check_eq "$(as_user try open $M/r/x rc)" EACCES "create in a 700 root dir"
	check_eq "$(as_user ls $M/r 2>&1 >/dev/null | grep -c 'Permission denied')" 1 "readdir of a 700 dir"
}

# lowers: ext2 ext3 ext4 xfs
# owns-lower
test_remount_keeps_everything() {
	echo a >$M/f
	ln $M/f $M/g
	mkdir $M/d
	setfattr -n $XNS.k -v v $M/d
	i=$(ino $M/f)
	remount_lower
	check_eq "$(content $M/g)" a "content"
	check_eq "$(ino $M/f)" "$i" "st_ino"
	check_eq "$(nlink $M/f)" 2 "nlink"
	check_eq "$(try getxattr $M/d $XNS.k)" v "xattr"
}

test_proc_mounts_shows_options() {
	line=$(grep " $M cowlinkfs " /proc/mounts)
	case "$line" in
	"$L $M cowlinkfs rw,relatime,lowerdir=$L,cow=flag 0 0") ;;
	*) fail "/proc/mounts line: $line" ;;
	esac
}

# atime_mount OPTS: cowlinkfs mounted again with the atime options OPTS
atime_mount() {
	umount "$M"
	mount_clfs "$1"
}

# atime_again PATH CMD...: run CMD, then after a second again, and print
# the atime of PATH (in the lower dir) after each, with nanoseconds: the
# second access comes after the first set an atime later than the mtime
# and ctime, which relatime keeps and strictatime does not
atime_again() {
	p=$1
	shift
	"$@" >/dev/null
	a=$(stat -c %x "$p")
	sleep 1
	"$@" >/dev/null
	echo "$a $(stat -c %x "$p")"
}

# same_atime "A B": A and B (as atime_again prints them) are equal
same_atime() {
	set -- $1
	[ "$1 $2 $3" = "$4 $5 $6" ]
}

# Reads through the mount update the atime by the options of our mount,
# as on a lower fs mounted with them: not those the lower dir was mounted
# with (the lower files are opened with O_NOATIME, as overlayfs does).
test_atime_follows_the_mount_options() {
	echo a >$L/f
	mkdir $L/d
	ln -s f $L/s
	atime_mount noatime
	touch -a -d '-10 min' $L/f
	t=$(stat -c %X $L/f)
	cat $M/f >/dev/null
	check_eq "$(stat -c %X $L/f)" "$t" "noatime: a read keeps an atime older than the ctime"
	atime_mount relatime
	# the touch set the ctime; a read in the same second would leave the
	# atime equal to it on a lower with second timestamps (small ext2,
	# 128-byte inodes), and relatime updates an atime not after the ctime
	sleep 1
	cat $M/f >/dev/null
	check_ne "$(stat -c %X $L/f)" "$t" "relatime: a read after a change updates"
	same_atime "$(atime_again $L/f cat $M/f)" ||
		fail "relatime: a second read within a day updated the atime"
	atime_mount strictatime
	same_atime "$(atime_again $L/f cat $M/f)" &&
		fail "strictatime: a second read kept the atime"
	check_eq "$(stat -c %x $M/f)" "$(stat -c %x $L/f)" "atime through the mount"
	same_atime "$(atime_again $L/f try mmapread $M/f 0 1)" &&
		fail "strictatime: a second mmap kept the atime"
	same_atime "$(atime_again $L/d ls $M/d)" &&
		fail "strictatime: a second readdir kept the atime"
	same_atime "$(atime_again $L/s readlink $M/s)" &&
		fail "strictatime: a second readlink kept the atime"
	atime_mount strictatime,nodiratime
	same_atime "$(atime_again $L/d ls $M/d)" ||
		fail "nodiratime: a readdir updated the atime"
	chattr +A $L/f 2>/dev/null || return 0	# tmpfs has no noatime attribute
	same_atime "$(atime_again $L/f cat $M/f)" ||
		fail "the lower file's noatime attribute: a read updated the atime"
}

# splice(2) into a file through the mount writes what a splice into the
# lower file writes, taking the lower fs's sb_writers before the pipe's
# mutex as that splice does: the test kernel's lockdep reports the
# reverse order, once both were seen, as a circular dependency (fstests'
# generic/110 found it over xfs)
test_splice_writes_in_the_lower_fs_lock_order() {
	printf xxxxxx >$L/l
	check_try OK splice $L/l abc
	check_eq "$(content $L/l)" abcxxx "a splice into the lower file"
	printf xxxxxx >$M/f
	check_try OK splice $M/f abc
	check_eq "$(content $M/f)" abcxxx "a splice through the mount"
	check_eq "$(content $L/f)" abcxxx "the lower file"
	check_try OK splice $L/l def
	check_eq "$(content $L/l)" defxxx "a splice into the lower file after ours"
}

# An inotify watch on a file sees a splice through the mount, as it sees
# a write (the splice into the lower file tells the lower inode's)
test_splice_through_the_mount_is_seen_by_a_watch() {
	printf xxxxxx >$M/f
	rm -f /tmp/pt-ready
	fsnote watch $M/f /tmp/pt-ready 60 >/tmp/pt-watch &
	w=$!
	wait_for_line /tmp/pt-ready ready
	check_try OK splice $M/f abc
	wait_for_line /tmp/pt-watch MODIFY
	kill $w
	wait $w || true
	rm -f /tmp/pt-ready /tmp/pt-watch
}

# O_TMPFILE, then linkat() through /proc/self/fd, as on the lower fs: the
# bytes written before and after the link are the named file's; with
# O_EXCL the file cannot be named (ENOENT from the VFS).
test_o_tmpfile_is_named_by_linkat() {
	check_try OK tmpfile $M $M/t abc
	check_eq "$(content $M/t)" abcabc "the bytes written before and after linkat"
	check_eq "$(content $L/t)" abcabc "the lower file"
	check_eq "$(nlink $M/t)" 1 "st_nlink"
	check_eq "$(ino $M/t)" "$(ino $L/t)" "st_ino"
	check_try ENOENT tmpfile $M $M/u abc excl
	check_try ENOENT open $M/u r
	mkdir $M/d
	chmod 0555 $M/d
	check_eq "$(as_user try tmpfile $M/d $M/d/v abc)" EACCES "a directory the user may not write"
}

# fstests knows the timestamp range of a filesystem by its type, not of
# one stacked on another (generic/402 does not run): the range through
# the mount is the lower fs's.  A time far past 2038 and one before 1970
# set through the mount read back as the same times set on the lower fs.
test_timestamp_range_is_the_lower_fs_s() {
	for t in 2500-01-01 1901-12-14 1960-06-01; do
		touch -d "$t UTC" $M/f $L/g
		check_eq "$(stat -c %Y $M/f)" "$(stat -c %Y $L/g)" "$t: mtime through the mount"
		check_eq "$(stat -c %Y $L/f)" "$(stat -c %Y $L/g)" "$t: mtime below"
	done
}

# An xfs extent size hint (FS_IOC_FSSETXATTR) set through the mount is
# the lower file's, as set below.  xfs_io refuses its xfs commands on a
# file of another filesystem type ("foreign file active, extsize command
# is for XFS filesystems only", -F or not), so generic/367 does not run
# through cowlinkfs; the ioctl itself gets through.
# lowers: xfs xfsr
test_xfs_extent_size_hint_is_the_lower_file_s() {
	: >$M/f
	: >$L/g
	check_eq "$(try extsize $L/g 16384)" 16384 "the hint set on the bare lower"
	check_eq "$(try extsize $M/f 16384)" 16384 "the hint set through the mount"
	check_eq "$(xfs_io -c extsize $L/f)" "[16384] $L/f" "the hint below"
}
