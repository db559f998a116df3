# shellcheck shell=sh
# Shared inodes (issue 26, first slice): the names of a symlink, FIFO,
# socket or device node can never break, and share one cowlinkfs inode per
# lower inode, so that what the VFS keeps in the inode (a FIFO's pipe, the
# socket bound at a name, locks, st_nlink) is the same through every name.
# lowers: ext2 ext3 ext4 xfs xfsr tmpfs

# meet WRITER READER: does a line written into the FIFO at WRITER come
# out of the one at READER?  Both ends time out, so a failure cannot hang.
meet() {
	timeout 5 sh -c 'echo hi >"$1"' sh "$1" 2>/dev/null &
	w=$!
	got=$(timeout 5 cat "$2" 2>/dev/null)
	kill $w 2>/dev/null
	wait $w 2>/dev/null
	[ "$got" = hi ]
}

# check_meet WRITER READER WHAT
check_meet() {
	meet "$1" "$2" || fail "$3: writer on $1 and reader on $2 never met"
}

# Repro 05 (../shared/repro/turn3/05-fifo-names.sh), its part through the
# mount: two hard links of one FIFO meet, both ways, and each name alone.
test_fifo_hard_links_meet() {
	mkdir $M/d
	mkfifo $M/d/p
	ln $M/d/p $M/d/q
	check_meet $M/d/p $M/d/p "one name"
	check_meet $M/d/p $M/d/q "p to q"
	check_meet $M/d/q $M/d/p "q to p"
	check_eq "$(ino $M/d/p)" "$(ino $M/d/q)" "st_ino"
	# links made in the lower directory, looked up through the mount after
	mkfifo $L/d/r
	ln $L/d/r $L/d/s
	check_meet $M/d/r $M/d/s "links made below, r to s"
	check_meet $M/d/s $M/d/r "links made below, s to r"
}

# A reader blocked on one name is met by a writer on the other, even after
# the name it opened was renamed or removed.
test_fifo_rename_and_unlink_of_one_name_leave_the_other_working() {
	mkfifo $M/p
	ln $M/p $M/q
	mv $M/q $M/r
	check_meet $M/p $M/r "after rename of q to r"
	check_meet $M/r $M/p "after rename, r to p"
	rm $M/p
	check_meet $M/r $M/r "the name left"
	check_eq "$(nlink $M/r)" 1 "links left"
	# an open end of the name removed is met by the other name's writer
	ln $M/r $M/p
	exec 3<>$M/r
	rm $M/r
	timeout 5 sh -c 'echo late >"$1"' sh $M/p || fail "writer on p timed out"
	got=$(timeout 5 head -n 1 <&3) || true
	exec 3>&-
	check_eq "$got" late "reader of a removed name met by the writer of the other"
	# renamed over by another FIFO: the name shows the new one
	mkfifo $M/x
	mv $M/x $M/p
	check_meet $M/p $M/p "renamed over"
}

# flock(2) conflicts across two names of a FIFO, as on the lower fs: both
# fds are opened read-write, which a FIFO allows without a partner.
test_flock_conflicts_across_fifo_names() {
	mkfifo $M/p
	ln $M/p $M/q
	exec 3<>$M/p
	flock -x 3 || fail "flock on p"
	exec 4<>$M/q
	if flock -n -x 4; then
		exec 3>&- 4>&-
		fail "flock through q got a lock p holds"
	fi
	exec 3>&-
	flock -n -x 4 || fail "flock through q after p's was released"
	exec 4>&-
}

# st_nlink, st_ctime and st_mode agree across names after each change made
# through another name (a link, an unlink, a chmod), for each kind of file
# that shares its inode.
test_nlink_ctime_mode_agree_across_names() {
	mkfifo $M/f
	ln -s target $M/s
	mknod $M/c c 1 3
	for n in f s c; do
		ln -P $M/$n $M/$n.2
		ln -P $M/$n.2 $M/$n.3
		check_eq "$(nlink $M/$n)" 3 "$n: links after link through another name"
		check_eq "$(stat -c %h:%Z.%z $M/$n)" "$(stat -c %h:%Z.%z $M/$n.3)" \
			"$n: nlink and ctime of two names"
		rm $M/$n.2
		check_eq "$(stat -c %h:%Z.%z $M/$n)" "$(stat -c %h:%Z.%z $M/$n.3)" \
			"$n: after unlink of a third name"
		check_eq "$(nlink $M/$n.3)" 2 "$n: links after unlink"
		check_eq "$(stat -c %h $L/$n)" 2 "$n: lower links"
	done
	sleep 1
	chmod 600 $M/f.3
	check_eq "$(mode $M/f)" 600 "chmod through another name"
	check_eq "$(stat -c %Z.%z $M/f)" "$(stat -c %Z.%z $M/f.3)" "ctime after chmod"
	check_eq "$(stat -c %Z.%z $M/f)" "$(stat -c %Z.%z $L/f)" "ctime as below"
	chmod 600 $M/c
	check_eq "$(mode $M/c.3)" 600 "chmod of a device node"
	echo x >$M/c.3 || fail "write to /dev/null's second name"
	check_eq "$(ino $M/c)" "$(ino $M/c.3)" "device node st_ino"
}

# A symlink's two names both resolve; removing or renaming one leaves the
# other, and a lower change of one name shows through the mount.
test_symlink_names() {
	echo data >$M/t
	ln -s t $M/s
	ln -P $M/s $M/s2
	check_eq "$(readlink $M/s2)" t "second name's target"
	check_eq "$(content $M/s2)" data "through the second name"
	check_eq "$(stat -c %F $M/s2)" "symbolic link" "type"
	rm $M/s
	check_eq "$(content $M/s2)" data "the name left"
	mv $M/s2 $M/s3
	check_eq "$(readlink $M/s3)" t "after rename"
	ln -P $M/s3 $M/s4
	# one name replaced below by another symlink
	rm $L/s4
	ln -s other $L/s4
	check_eq "$(readlink $M/s4)" other "replaced below"
	check_eq "$(readlink $M/s3)" t "the other name kept"
	check_eq "$(nlink $M/s3)" 1 "links of the old one"
}

# A socket bound at one name through the mount accepts a connect through
# another name (a hard link) and through itself.
test_socket_bound_at_one_name_accepts_at_another() {
	unixsock serve $M/sock /tmp/shared-ready >/tmp/shared-srv &
	srv=$!
	wait_for_line /tmp/shared-ready ready
	ln $M/sock $M/sock2
	check_eq "$(unixsock connect $M/sock2 hello)" OK "connect through the second name"
	wait $srv || fail "server: $(cat /tmp/shared-srv)"
	check_eq "$(cat /tmp/shared-srv)" hello "message"
	unixsock serve $M/s3 /tmp/shared-ready >/tmp/shared-srv &
	srv=$!
	wait_for_line /tmp/shared-ready ready
	check_eq "$(unixsock connect $M/s3 again)" OK "connect through the name bound"
	wait $srv || fail "server: $(cat /tmp/shared-srv)"
	rm -f /tmp/shared-ready /tmp/shared-srv
}

# Documented limit (cowlinkfs.rst, "Limits"): a stacked inode is not the
# lower one, and the pipe of a FIFO and the socket bound at a name live in
# the inode opened or bound: a FIFO opened in the lower directory and
# through the mount are two pipes, and a socket bound on one side refuses
# connections made on the other (unix_find_bsd() looks sockets up by the
# inode).  This checks it stays what the rst says.
test_fifo_and_socket_across_the_lower_dir_stay_apart() {
	mkfifo $M/p
	! meet $L/p $M/p || fail "FIFO met across the lower dir: update the rst"
	unixsock serve $L/sock /tmp/shared-ready >/dev/null &
	srv=$!
	wait_for_line /tmp/shared-ready ready
	check_eq "$(unixsock connect $M/sock x)" ECONNREFUSED "bound below, through the mount"
	unixsock connect $L/sock x >/dev/null
	wait $srv
	rm -f /tmp/shared-ready
}

# Lookups of N names of one FIFO allocate one cowlinkfs inode, not N: the
# slab's active objects grow by far less than N.  Serial: the count is
# the whole machine's.
# lowers: ext4 xfs tmpfs
# serial
test_names_of_one_fifo_cost_one_inode() {
	mkfifo $L/p
	# one process, not 400 ln (each costs 60 ms or more under TCG)
	perl -e 'for (0 .. 399) { link($ARGV[0], "$ARGV[0]$_") or die "link: $!\n" }' $L/p
	umount $M
	mount_clfs
	before=$(awk '$1 == "cowlinkfs_inode" { print $2 }' /proc/slabinfo)
	ls -l $M >/dev/null
	after=$(awk '$1 == "cowlinkfs_inode" { print $2 }' /proc/slabinfo)
	echo "cowlinkfs_inode active: $before, after 401 names $after"
	[ $((after - before)) -lt 200 ] ||
		fail "401 names of one FIFO took $((after - before)) inodes"
	check_eq "$(stat -c %h $M/p123)" 401 "links"
}

# A name looked up for the first time while the inode is cached (another
# name of it is open) shows what changed below since, as the VFS checks
# it through our inode: protected_hardlinks refuses the old owner a link
# as the bare fs does, and the new owner may remove it in a sticky dir.
test_new_name_of_a_cached_inode_sees_an_owner_changed_below() {
	old=$(cat /proc/sys/fs/protected_hardlinks)
	trap 'exec 3>&- 4>&-; echo $old >/proc/sys/fs/protected_hardlinks' EXIT
	echo 1 >/proc/sys/fs/protected_hardlinks
	mkdir "$M/d" "$M/s"
	chmod 777 "$M/d"
	chmod 1777 "$M/s"
	mkfifo "$M/d/p" "$M/s/p"
	chown 1000:1000 "$M/d/p"
	ln "$L/d/p" "$L/d/q"
	ln "$L/s/p" "$L/s/q"
	exec 3<>"$M/d/p" 4<>"$M/s/p"
	chown 0:0 "$L/d/p"
	chown 1000:1000 "$L/s/p"
	check_eq "$(as_user try link "$L/d/q" "$L/d/r0")" EPERM "the old owner links, bare"
	check_eq "$(as_user try link "$M/d/q" "$M/d/r")" EPERM "the old owner links through a new name"
	check_eq "$(as_user try unlink "$M/s/q")" OK "the new owner unlinks in a sticky dir"
}
