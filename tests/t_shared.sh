# shellcheck shell=sh
# Shared inodes (issue 26): the names of a symlink, FIFO, socket or device
# node, and of a plain regular file (no flag, cow=flag), never break, and
# share one cowlinkfs inode per lower inode, so that what the VFS keeps in
# the inode (a FIFO's pipe, the socket bound at a name, locks, leases,
# watches, st_nlink) is the same through every name.  A plain file that
# becomes COW moves its names to inodes of their own, by drop and lookup.
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

# Repro 05's part across the lower directory: a FIFO opened through the
# mount opens the lower FIFO (fs/cowlinkfs/fifo.c), so a writer on one
# side meets a reader on the other, both ways, through hard links too.
test_fifo_meets_across_the_mount_and_the_lower_dir() {
	mkfifo $M/p
	check_meet $L/p $M/p "lower writer, mount reader"
	check_meet $M/p $L/p "mount writer, lower reader"
	ln $L/p $L/q
	check_meet $L/q $M/p "lower writer on another name"
	check_meet $M/q $L/p "mount writer on another name"
	check_meet $M/p $M/p "one name through the mount"
}

# What a process sees of a FIFO through the mount, step by step (try fifo:
# open rules, F_SETFL's O_NONBLOCK and packet mode, SIGIO to the owner,
# FIONREAD, poll, POLLHUP and EOF, EPIPE), is what it sees on the lower
# fs, whichever side each end is opened on.
test_fifo_behaves_as_on_the_lower_fs() {
	mkfifo $L/p
	bare=$(try fifo $L/p $L/p | head -n 1)
	case $bare in
	*sigio=1*fionread=5*bytes=hello*read-packet=3*) ;;
	*) fail "bare lower: $bare" ;;
	esac
	check_eq "$(try fifo $M/p $M/p | head -n 1)" "$bare" "through the mount"
	check_eq "$(try fifo $L/p $M/p | head -n 1)" "$bare" "reader below, writer through the mount"
	check_eq "$(try fifo $M/p $L/p | head -n 1)" "$bare" "reader through the mount, writer below"
}

# Documented limit (cowlinkfs.rst, "Limits"): a FIFO opened through the
# mount is not a pipe to the VFS (get_pipe_info() knows one by its file
# operations): F_GETPIPE_SZ gets EBADF and a splice into it EINVAL, which
# the lower fs's FIFO takes.  This checks it stays what the rst says.
test_fifo_through_the_mount_is_no_pipe_to_splice() {
	mkfifo $L/p
	bare=$(try fifo $L/p $L/p | tail -n 1)
	case $bare in
	"pipe-only: getpipe-sz="[0-9]*" splice-in=3") ;;
	*) fail "bare lower: $bare" ;;
	esac
	check_eq "$(try fifo $M/p $M/p | tail -n 1)" "pipe-only: getpipe-sz=EBADF splice-in=EINVAL" \
		"through the mount"
}

# A reader waiting in open(2) through the mount for a writer (in the
# lower fs's fifo_open()) is ended by a signal and leaves no reader on
# the lower FIFO: a non-blocking writer then gets ENXIO on both sides.
test_fifo_open_waiting_for_a_writer_ends_on_a_signal_and_leaves_no_reader() {
	mkfifo $M/p
	cat $M/p >/dev/null &
	rd=$!
	i=0
	until grep -qE 'fifo_open|wait_for_partner' /proc/$rd/wchan 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 100 ] || break
		sleep 0.1
	done
	[ $i -lt 100 ] || fail "the reader never waited in the open: $(cat /proc/$rd/wchan 2>&1)"
	kill -TERM $rd
	st=0
	wait $rd || st=$?
	check_eq "$st" 143 "the reader's exit status (SIGTERM)"
	check_eq "$(try open $L/p wn)" ENXIO "a non-blocking writer below"
	check_eq "$(try open $M/p wn)" ENXIO "a non-blocking writer through the mount"
}

# relatime decides on the times the lower FIFO has at the read: a read
# after a write updates the atime, through the mount as below (a write
# through either side sets the lower FIFO's mtime).
test_fifo_read_after_a_write_updates_the_atime_as_below() {
	mkfifo $L/p
	for side in $L $M; do
		exec 3<>$side/p
		echo a >&3
		read -r _ <&3
		a1=$(stat -c %X $L/p)
		sleep 1.1
		echo b >&3
		read -r _ <&3
		a2=$(stat -c %X $L/p)
		exec 3>&-
		[ "$a2" -gt "$a1" ] || fail "$side: the atime stayed $a1 after a read of a write"
	done
}

# O_NOATIME is for the owner the lower FIFO has now, not the one our
# inode cached: after a chown in the lower directory the old owner is
# refused, as on the lower fs.
test_fifo_noatime_open_checks_the_owner_below() {
	mkfifo $M/p
	chown 1000:1000 $M/p
	chown 0:0 $L/p
	for p in $L/p $M/p; do
		check_eq "$(as_user perl -MFcntl=O_RDONLY,O_NONBLOCK,O_NOATIME -e \
			'print sysopen(F, $ARGV[0], O_RDONLY | O_NONBLOCK | O_NOATIME) ? "OK\n" : "$!\n"' $p)" \
			"Operation not permitted" "O_NOATIME open of $p by the old owner"
	done
}

# Documented limit (cowlinkfs.rst, "Limits"): a socket is found by the
# inode of its path (unix_find_bsd(): d_backing_inode(), which is the
# dentry's own inode in 6.1), and a stacked inode is not the lower one:
# a socket bound on one side refuses connections made on the other.
# This checks it stays what the rst says.
test_socket_across_the_lower_dir_stays_apart() {
	unixsock serve $L/sock /tmp/shared-ready >/dev/null &
	srv=$!
	wait_for_line /tmp/shared-ready ready
	check_eq "$(unixsock connect $M/sock x)" ECONNREFUSED "bound below, through the mount"
	unixsock connect $L/sock x >/dev/null
	wait $srv
	rm -f /tmp/shared-ready
	unixsock serve $M/sock2 /tmp/shared-ready >/dev/null &
	srv=$!
	wait_for_line /tmp/shared-ready ready
	check_eq "$(unixsock connect $L/sock2 x)" ECONNREFUSED "bound through the mount, below"
	unixsock connect $M/sock2 x >/dev/null
	wait $srv
	rm -f /tmp/shared-ready
}

# Documented limit (cowlinkfs.rst, "Limits"): a lock lives on the VFS
# inode it was taken through, and a stacked inode is not the lower one:
# an flock taken in the lower directory does not exclude one through the
# mount.  This checks it stays what the rst says.
test_flock_below_and_through_the_mount_do_not_meet() {
	echo x >$L/a
	exec 3<$L/a
	flock -x 3 || fail "flock below"
	exec 4<$M/a
	if ! flock -n -x 4; then
		exec 3<&- 4<&-
		fail "an flock below excluded one through the mount: update the rst"
	fi
	exec 3<&- 4<&-
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
	measured "401 names of one FIFO, looked up: cowlinkfs_inode active objects" \
		"$before -> $after"
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

# plain_pair: two names of one plain regular file, $M/a and $M/b, content
# "old", made through the mount (cow=flag, no flag on the file or $M).
plain_pair() {
	printf old >$M/a
	ln $M/a $M/b
	check_eq "$(nlink $M/b)" 2 "setup nlink"
	check_try 0 getcow $M/a
}

# bg_start OUT CMD...: run a helper in the background, its output in OUT;
# BG is its pid.
bg_start() {
	out=$1
	shift
	: >"$out"
	"$@" >"$out" &
	BG=$!
}

# Helper locked_through HELD OTHER: while both locks are held through
# HELD, OTHER gets EAGAIN for each; the holder is stopped after
locked_through() {
	bg_start /tmp/shared-hold try hold "$1" 60
	holder=$BG
	wait_for_line /tmp/shared-hold OK
	check_try EAGAIN flock "$2"
	check_try EAGAIN posixlock "$2"
	stop $holder
}

# flock(2) and fcntl(2) locks taken through one name of a plain hard link
# conflict with those asked for through the other, both ways, and go with
# the holder.
test_plain_hard_link_locks_conflict_across_names() {
	plain_pair
	locked_through $M/a $M/b
	check_try OK flock $M/b
	locked_through $M/b $M/a
	# names made in the lower directory and looked up after, too
	ln $L/a $L/c
	locked_through $M/c $M/a
	rm -f /tmp/shared-hold
}

# Helper watched_through WATCHED OTHER: an inotify watch on WATCHED (the
# watcher's pid in $watcher, its events in /tmp/shared-watch) sees a
# write and a chmod made through OTHER.  The write is through a
# read-write descriptor, which a FIFO opens without a partner.
watched_through() {
	bg_start /tmp/shared-watch fsnote watch "$1" /tmp/shared-ready 60
	watcher=$BG
	wait_for_line /tmp/shared-ready ready
	exec 3<>"$2"
	printf x >&3
	exec 3>&-
	wait_for_line /tmp/shared-watch MODIFY
	chmod 600 "$2"
	wait_for_line /tmp/shared-watch ATTRIB
}

# flock(2) and fcntl(2) locks conflict across two names of a FIFO and of
# a device node, as across a plain hard link's (try hold opens read-write,
# which a FIFO allows without a partner, and gives the other name's
# read-only open a writer).
test_fifo_and_device_locks_conflict_across_names() {
	mkfifo $M/p
	ln $M/p $M/q
	locked_through $M/p $M/q
	locked_through $M/q $M/p
	mknod $M/c c 1 3
	ln $M/c $M/c2
	locked_through $M/c $M/c2
	rm -f /tmp/shared-hold
}

# An inotify watch on one name of a FIFO or a device node sees a write,
# an attribute change and the last unlink made through another name.
test_fifo_and_device_watch_sees_changes_through_another_name() {
	mkfifo $M/p
	ln $M/p $M/q
	mknod $M/c c 1 3
	ln $M/c $M/c2
	for n in p c; do
		o=q
		[ $n = p ] || o=c2
		watched_through $M/$n $M/$o
		rm $M/$n $M/$o
		wait_for_line /tmp/shared-watch DELETE_SELF
		wait $watcher || fail "$n: watcher: $(cat /tmp/shared-watch)"
		rm -f /tmp/shared-watch /tmp/shared-ready
	done
}

# Under cow=all too, FIFOs, symlinks and device nodes do not break: their
# names share one inode and two names of a FIFO meet.
test_special_files_share_under_cow_all() {
	umount $M
	mount_clfs cow=all
	mkfifo $M/p
	ln $M/p $M/q
	check_meet $M/p $M/q "FIFO names under cow=all"
	mknod $M/c c 1 3
	ln $M/c $M/c2
	chmod 600 $M/c2
	check_eq "$(mode $M/c)" 600 "device node chmod through another name"
	ln -s t $M/s
	ln -P $M/s $M/s2
	check_eq "$(stat -c %h $M/s)" 2 "symlink links"
}

# An inotify watch on one name sees a write, an attribute change and the
# last unlink made through another name.
test_plain_hard_link_watch_sees_changes_through_another_name() {
	plain_pair
	watched_through $M/a $M/b
	# the first unlink is no deletion: a write after it comes first
	rm $M/a
	printf y >>$M/b
	k=0
	until [ "$(grep -cx MODIFY /tmp/shared-watch)" -ge 2 ]; do
		k=$((k + 1))
		[ $k -le 600 ] || fail "no second MODIFY: $(cat /tmp/shared-watch)"
		sleep 0.1
	done
	! grep -qx DELETE_SELF /tmp/shared-watch || fail "DELETE_SELF at the first of two unlinks"
	rm $M/b
	wait_for_line /tmp/shared-watch DELETE_SELF
	wait $watcher || fail "watcher: $(cat /tmp/shared-watch)"
	rm -f /tmp/shared-watch /tmp/shared-ready
}

# A read lease taken through one name is broken by an open for writing
# through another: the holder is told, gives it up, and the open goes on.
test_plain_hard_link_lease_broken_by_open_through_another_name() {
	plain_pair
	bg_start /tmp/shared-lease fsnote lease $M/a /tmp/shared-ready 60
	holder=$BG
	wait_for_line /tmp/shared-ready ready
	check_try OK open $M/b w
	wait_for_line /tmp/shared-lease broken
	wait $holder || fail "lease holder: $(cat /tmp/shared-lease)"
	rm -f /tmp/shared-lease /tmp/shared-ready
}

# st_ino, st_nlink and st_ctime agree across the names of a plain hard
# link after each change made through another name, and with the lower.
# getattr always asks the name's lower inode, so this held with per-name
# inodes too: it checks that sharing the inode broke none of it, not the
# sharing itself (the locks, lease and watch tests above do that).
test_plain_hard_link_stat_agrees_across_names() {
	plain_pair
	ln $M/b $M/c
	for n in a b c; do
		check_eq "$(stat -c %i:%h:%Z.%z $M/$n)" "$(stat -c %i:%h:%Z.%z $L/a)" \
			"$n after a link"
	done
	sleep 1
	chmod 600 $M/c
	check_eq "$(stat -c %a:%Z.%z $M/a)" "$(stat -c %a:%Z.%z $M/c)" "after chmod"
	printf x >>$M/b
	check_eq "$(stat -c %s:%Y $M/a)" "$(stat -c %s:%Y $L/b)" "size and mtime after a write"
	rm $M/c
	check_eq "$(stat -c %h:%Z.%z $M/a)" "$(stat -c %h:%Z.%z $M/b)" "after an unlink"
	check_eq "$(nlink $M/a)" 2 "links"
	check_eq "$(content $M/a)" oldx "bytes"
}

# The flag set while a plain hard link is open, locked and watched through
# both names: each name then breaks into bytes of its own, as COW names
# always did; the locks and watches taken before stay on the inode the
# names shared (cowlinkfs.rst, "Inode numbers").  Nothing walks b before
# a breaks: b, walked first when a has broken away and the file has one
# link, keeps the shared inode, its locks and watches, and a's reader
# opened before reads b's bytes.
test_flag_set_while_plain_hard_link_open_locked_and_watched() {
	plain_pair
	i=$(ino $M/b)
	exec 3<$M/a 4<$M/b
	flock -s 3
	flock -s 4
	# the watchers must not hold the locked descriptors
	bg_start /tmp/shared-wa fsnote watch $M/a /tmp/shared-ra 60 3<&- 4<&-
	wa=$BG
	bg_start /tmp/shared-wb fsnote watch $M/b /tmp/shared-rb 60 3<&- 4<&-
	wb=$BG
	wait_for_line /tmp/shared-ra ready
	wait_for_line /tmp/shared-rb ready
	# a writer of a multi-link file still keeps the flag off
	bg_start /tmp/shared-hw try holdwrite $M/b 60
	hw=$BG
	wait_for_line /tmp/shared-hw OK
	check_try ETXTBSY setcow $M/a 1
	stop $hw
	check_try OK setcow $M/a 1
	printf A >>$M/a
	check_eq "$(content $M/a)" oldA "a's own bytes"
	check_eq "$(content $M/b)" old "b keeps the old bytes"
	check_ne "$(ino $M/a)" "$i" "a broke away"
	check_eq "$(ino $M/b)" "$i" "b keeps the inode"
	# a's write went to its own inode: no watch saw it.  A chmod of b,
	# on the shared inode still, is seen by both, and comes after.
	chmod 600 $M/b
	check_eq "$(mode $M/b)" 600 "b's mode"
	check_ne "$(mode $M/a)" 600 "a keeps its mode"
	wait_for_line /tmp/shared-wa ATTRIB
	wait_for_line /tmp/shared-wb ATTRIB
	check_eq "$(cat /tmp/shared-wa):$(cat /tmp/shared-wb)" ATTRIB:ATTRIB \
		"events before b's chmod"
	printf B >>$M/b
	check_eq "$(content $M/b)" oldB "b's bytes"
	check_eq "$(content $M/a)" oldA "a keeps its bytes"
	check_eq "$(content $L/a):$(content $L/b)" oldA:oldB "below"
	wait_for_line /tmp/shared-wa MODIFY
	# the descriptors opened before stay on the inode b kept
	check_eq "$(cat <&4)" oldB "b's old descriptor"
	check_eq "$(cat <&3)" oldB "a's old descriptor reads b's bytes"
	# a's new locks are its own; b's meet the ones taken before
	check_try OK flock $M/a
	check_try EAGAIN flock $M/b
	exec 3<&- 4<&-
	check_try OK flock $M/b
	stop $wa
	stop $wb
	rm -f /tmp/shared-wa /tmp/shared-wb /tmp/shared-ra /tmp/shared-rb /tmp/shared-hw
}

# link() of a second name to a COW file that is open, locked and watched
# (for reading: a writer makes it ETXTBSY, see t_cow.sh), and the names
# then break apart.  The file had one name, on a shared inode, when its
# flag was set: the name stays there until the file has other links.
test_link_to_an_open_cow_file() {
	printf old >$M/a
	exec 3<$M/a
	flock -s 3
	check_try OK setcow $M/a 1
	check_try OK setcow $M 1
	bg_start /tmp/shared-watch fsnote watch $M/a /tmp/shared-ready 60
	watcher=$BG
	wait_for_line /tmp/shared-ready ready
	i=$(ino $M/a)
	ln $M/a $M/b
	check_eq "$(nlink $M/a)" 2 "links"
	printf B >>$M/b
	check_eq "$(content $M/b)" oldB "b's own bytes"
	check_eq "$(content $M/a)" old "a keeps the old bytes"
	check_eq "$(ino $M/a)" "$i" "a keeps the inode"
	check_eq "$(cat <&3)" old "a's descriptor"
	ln $M/a $M/c
	printf A >>$M/a
	check_eq "$(content $M/c)" old "c keeps the old bytes"
	check_eq "$(content $M/a)" oldA "a's own bytes"
	check_try OK flock $M/c
	exec 3<&-
	# the watch is on the inode a had: it saw the first link, made
	# through a while a was still on it, and nothing made after a and
	# b went to inodes of their own (b's write, the second link, a's
	# write).  Those would come after the ATTRIB; give them time.
	wait_for_line /tmp/shared-watch ATTRIB
	sleep 1
	stop $watcher
	check_eq "$(cat /tmp/shared-watch)" ATTRIB "events on the inode a left"
	rm -f /tmp/shared-watch /tmp/shared-ready
}

# A remount to cow=all with plain hard links open (read-only) through both
# names: the names then break apart.  An open writer still makes the
# remount EBUSY.
test_remount_cow_all_with_plain_hard_links_open() {
	plain_pair
	i=$(ino $M/b)
	exec 3<$M/a 4<$M/b
	flock -s 3
	bg_start /tmp/shared-hw try holdwrite $M/a 60
	hw=$BG
	wait_for_line /tmp/shared-hw OK
	check_try EBUSY remount $M cow=all
	stop $hw
	check_try OK remount $M cow=all
	printf A >>$M/a
	check_eq "$(content $M/a):$(content $M/b)" oldA:old "a broke away"
	check_eq "$(ino $M/b)" "$i" "b keeps the inode"
	printf B >>$M/b
	check_eq "$(content $M/a):$(content $M/b)" oldA:oldB "each name's bytes"
	check_try OK flock $M/a
	exec 3<&- 4<&-
	# a single-link file cached while plain gains a link below: its name
	# goes to an inode of its own and breaks
	check_try OK remount $M cow=flag
	printf old >$M/s
	exec 3<$M/s
	flock -s 3
	check_try OK remount $M cow=all
	ln $L/s $L/t
	# the remount took the inode out of the hash: s, walked now that
	# the file has two links, goes to an inode of its own, without the
	# lock taken on the shared one (which it would meet had the remount
	# left s there)
	check_try OK flock $M/s
	printf S >>$M/s
	check_eq "$(content $M/s):$(content $M/t)" oldS:old "linked below"
	check_try OK flock $M/s
	exec 3<&-
	rm -f /tmp/shared-hw
}

# The flag set and cleared again, or a remount to cow=all and back, while
# a plain hard link is locked through one name: the names share the inode
# the lock is on again, whichever is walked first (cowlinkfs.rst, "Inode
# numbers"), and its descriptor's name does not show as deleted.
test_plain_hard_link_shares_again_after_the_flag_or_cow_all_goes() {
	plain_pair
	exec 3<$M/a
	flock -x 3
	check_try EAGAIN flock $M/b
	check_try OK remount $M cow=all
	check_try OK remount $M cow=flag
	check_try EAGAIN flock $M/b
	check_try EAGAIN flock $M/a
	ln $L/a $L/c
	check_try EAGAIN flock $M/c
	case $(readlink /proc/self/fd/3) in
	*deleted*) fail "a's descriptor after the remounts: $(readlink /proc/self/fd/3)" ;;
	esac
	# the flag set through a and cleared through a name looked up after
	check_try OK setcow $M/a 1
	check_try OK setcow $M/c 0
	check_try EAGAIN flock $M/b
	check_try EAGAIN flock $M/a
	# and cleared in the lower directory
	check_try OK setcow $M/a 1
	setfattr -x trusted.cowlinkfs.cow $L/a
	check_try EAGAIN flock $M/b
	# c moved to an inode of its own when the flag was set, and keeps it
	# until it is evicted (documented)
	check_try OK flock $M/c
	exec 3<&-
	check_try OK flock $M/b
	check_eq "$(content $M/a):$(content $M/b):$(content $M/c)" old:old:old "bytes"
}

# The flag set in the lower directory, where cowlinkfs sees nothing: names
# still on the shared inode are looked up again at their first change,
# before anything is copied (open retries with EOPENSTALE, chmod with
# ESTALE), and break as COW names do; once the other name broke away, the
# one left on the shared inode changes its own bytes.
test_flag_set_below_moves_a_shared_name_at_its_first_change() {
	plain_pair
	printf old >$M/c
	chmod 644 $M/c
	ln $M/c $M/d
	exec 3<$M/a 4<$M/c
	i=$(ino $M/a)
	setfattr -n trusted.cowlinkfs.cow -v 1 $L/a $L/c
	printf B >>$M/b
	check_eq "$(content $M/a):$(content $M/b)" old:oldB "write through b"
	check_eq "$(ino $M/a)" "$i" "a keeps the inode"
	chmod 600 $M/d
	check_eq "$(mode $M/c):$(mode $M/d)" 644:600 "chmod through d"
	check_eq "$(content $M/d)" old "d's bytes"
	check_try OK truncate $M/c 1
	check_eq "$(content $M/c):$(content $M/d)" o:old "truncate through c"
	exec 3<&- 4<&-
}

# A writer opened while the file was plain holds the inode its names
# share.  The flag set through the mount is refused while it is open
# (ETXTBSY, above); set in the lower directory it is not, and the
# writer's first write would break the name under an inode every name
# has: it fails with ESTALE instead, and no name's bytes change.  The
# name, looked up again by path, breaks as a COW name does.
test_writer_opened_while_plain_gets_estale_when_the_flag_is_set_below() {
	plain_pair
	exec 3>>$M/a
	setfattr -n trusted.cowlinkfs.cow -v 1 $L/a
	if printf x >&3 2>/dev/null; then
		exec 3>&-
		fail "a write through a descriptor of the shared inode went through"
	fi
	exec 3>&-
	check_eq "$(content $L/a):$(content $L/b)" old:old "bytes below after the refused write"
	check_eq "$(nlink $L/b)" 2 "links below"
	printf y >>$M/a
	check_eq "$(content $M/a):$(content $M/b)" oldy:old "a written by path"
	check_eq "$(nlink $M/b)" 1 "b's links"
}

# Memory: a tree of N files with K names each costs about N cowlinkfs
# inodes when the files are plain (cow=flag) and N*K when they are COW
# (cow=all), looked up cold.  Serial: the slab count is the machine's.
# lowers: ext4 xfs tmpfs
# serial
test_inodes_for_a_tree_of_plain_and_cow_hard_links() {
	n=100
	k=4
	mkdir $L/t
	perl -e 'my ($d, $n, $k) = @ARGV;
		for my $i (1 .. $n) {
			open(my $f, ">", "$d/f$i") or die "$d/f$i: $!\n";
			close($f);
			for my $j (2 .. $k) {
				link("$d/f$i", "$d/f$i.$j") or die "link: $!\n";
			}
		}' $L/t $n $k
	for how in flag all; do
		umount $M
		mount_clfs cow=$how
		before=$(awk '$1 == "cowlinkfs_inode" { print $2 }' /proc/slabinfo)
		ls -l $M/t >/dev/null
		after=$(awk '$1 == "cowlinkfs_inode" { print $2 }' /proc/slabinfo)
		measured "cow=$how: $n files with $k names each, looked up:" \
			"cowlinkfs_inode active objects $before -> $after"
		case $how in
		flag) plain=$((after - before)) ;;
		all) cow=$((after - before)) ;;
		esac
	done
	# a slab's count moves by whole per-CPU slabs: far apart, not exact
	[ "$plain" -lt $((n * k / 2)) ] ||
		fail "plain tree: $plain inodes for $n files"
	[ "$cow" -gt $((n * k / 2)) ] ||
		fail "COW tree: $cow inodes for $((n * k)) names"
}

# A writer that wrote while the file was plain is not asked again when the
# flag is set in the lower directory: it goes on writing every name, with
# per-name inodes as with shared ones (cowlinkfs.rst, "Limits").  The flag
# set through the mount on a single-link file is allowed while a writer
# has it open, which then keeps link() off (ETXTBSY).
test_writer_that_wrote_while_plain_is_a_documented_limit() {
	plain_pair
	exec 3>>$M/a
	printf x >&3 || fail "first write"
	setfattr -n trusted.cowlinkfs.cow -v 1 $L/a
	printf y >&3 || fail "a writer that wrote before the flag: update the rst"
	exec 3>&-
	check_eq "$(content $L/a):$(content $L/b)" oldxy:oldxy \
		"both names written (update the rst if this changes)"
	mkdir $M/d
	printf old >$M/d/s
	exec 3>>$M/d/s
	check_try OK setcow $M/d/s 1
	check_try OK setcow $M/d 1
	check_try ETXTBSY link $M/d/s $M/d/t
	exec 3>&-
	check_try OK link $M/d/s $M/d/t
	printf T >>$M/d/t
	check_eq "$(content $M/d/s):$(content $M/d/t)" old:oldT "s and t broke apart"
}

# A change through a read-only descriptor opened while the file was plain,
# once the flag is set through the other name: fchmod, fsetxattr,
# FS_IOC_SETFLAGS and a write ioctl have no path to walk again and get
# ESTALE; neither name changes.
test_fd_changes_through_a_descriptor_opened_while_plain_get_estale() {
	plain_pair
	chmod 644 $M/a
	exec 3<$M/a
	check_try OK setcow $M/b 1
	flags=$(try getflags $M/b)
	check_try ESTALE fdchmod 3 600
	check_try ESTALE fdsetxattr 3 $XNS.k v
	case $flags in
	E*) ;;	# no inode flags on this lower fs
	*) check_try ESTALE fdsetflags 3 40 ;;
	esac
	check_try ESTALE fdsetversion 3 7
	exec 3<&-
	check_eq "$(mode $M/a):$(mode $M/b)" 644:644 "modes"
	check_eq "$(mode $L/a)" 644 "mode below"
	check_try ENODATA getxattr $M/a $XNS.k
	check_try ENODATA getxattr $M/b $XNS.k
	check_eq "$(try getflags $M/b)" "$flags" "flags"
	check_eq "$(content $M/a):$(content $M/b)" old:old "bytes"
	check_eq "$(nlink $L/a)" 2 "links below"
}

# run_prog NAME: run a copy of sleep at NAME in the background, PROG its
# pid, and wait until it runs the program (its exe is NAME).
run_prog() {
	"$1" 60 &
	PROG=$!
	k=0
	until case $(readlink /proc/$PROG/exe) in */"${1##*/}") true ;; *) false ;; esac; do
		k=$((k + 1))
		[ $k -le 600 ] || fail "$1 never ran"
		sleep 0.1
	done
}

# A program run through one name of a plain hard link denies writers
# through the other (ETXTBSY), as on the lower fs: one inode, one
# i_writecount.
test_exec_denies_writers_across_plain_hard_link_names() {
	bin=$(command -v sleep)
	cp "$bin" $M/a
	ln $M/a $M/b
	run_prog $M/b
	check_try ETXTBSY open $M/a w
	check_try ETXTBSY open $M/a rw
	check_try ETXTBSY open $M/b w
	check_try ETXTBSY open $L/a w
	stop $PROG
	check_try OK open $M/a w
	check_eq "$(sum $M/a)" "$(sum "$bin")" "bytes"
}

# The flag set while a program runs through one name of a plain hard link:
# through the mount, the other name moves to an inode of its own and a
# write open through it gets a copy.  Set in the lower directory, both
# names are still on one inode, whose writers the VFS denies before
# cowlinkfs is asked: ETXTBSY, as on the lower fs (cowlinkfs.rst,
# "Limits").
test_flag_set_while_a_plain_hard_link_runs() {
	bin=$(command -v sleep)
	cp "$bin" $M/a
	ln $M/a $M/b
	cp "$bin" $M/c
	ln $M/c $M/d
	run_prog $M/b
	check_try OK setcow $M/a 1
	check_try OK append $M/a A
	check_eq "$(sum $M/b)" "$(sum "$bin")" "the running name's bytes"
	check_ne "$(sum $M/a)" "$(sum "$bin")" "a's own copy"
	stop $PROG
	run_prog $M/d
	setfattr -n trusted.cowlinkfs.cow -v 1 $L/c
	check_try ETXTBSY open $M/c w
	check_eq "$(sum $M/c):$(sum $M/d)" "$(sum "$bin"):$(sum "$bin")" "bytes"
	stop $PROG
	check_try OK append $M/c C
	check_eq "$(sum $M/d)" "$(sum "$bin")" "d after the program ended"
	check_ne "$(sum $M/c)" "$(sum "$bin")" "c's own copy"
}
