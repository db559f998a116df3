# shellcheck shell=sh
# The cowlink command on a cowlinkfs mount: each subcommand, its errors and
# its figures checked against stat and du.
# lowers: ext2 ext3 xfs
# matrix: core

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
	check_eq "$err" "cowlink: cannot read flag of '/tmp/plain': not on a cowlinkfs mount" "off cowlinkfs"
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
	check_eq "$err" "cowlink: cannot clone '/tmp/src': not on a cowlinkfs mount" "message"
	mkdir $M/s
	err=$(cowlink clone $M/s /tmp/dst 2>&1) && fail "clone to tmpfs succeeded"
	case "$err" in *"cannot clone into '/tmp/dst': not on a cowlinkfs mount"*) ;; *) fail "$err" ;; esac
}

test_clone_refuses_two_mounts() {
	mkdir $M/s $L/../other
	mkdir -p /mnt/o
	mount -t cowlinkfs $L/../other /mnt/o
	err=$(cowlink clone $M/s /mnt/o/x 2>&1) && fail "clone across mounts succeeded"
	check_eq "$err" "cowlink: '$M/s' and '/mnt/o' are not on one filesystem" "message"
	umount /mnt/o
}

# What -v reports was done goes to stdout, as for cp -v: every 1000
# entries and the total (the top directory is one).
test_clone_verbose_reports_progress() {
	mkdir $M/many
	i=0
	while [ $i -lt 1200 ]; do : >$M/many/f$i; i=$((i + 1)); done
	out=$(cowlink clone -v $M/many $M/many2 2>/tmp/err)
	check_eq "$out" "1000 entries cloned
1201 entries cloned" "report on stdout"
	check_eq "$(cat /tmp/err)" "" "nothing on stderr"
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
	out=$(cowlink status --json $M/t $M/u)
	# big: 3 names on one inode; small: broken; alone: 2 names
	big_saved=$(( ($(nlink $M/t/big) - 1) * $(blocks $M/t/big) * 512 ))
	alone_saved=$(( ($(nlink $M/t/alone) - 1) * $(blocks $M/t/alone) * 512 ))
	echo "$out" | grep -q "\"files_shared\": 2," || fail "files_shared: $out"
	echo "$out" | grep -q "\"names\": 5," || fail "names: $out"
	echo "$out" | grep -q "\"bytes_saved\": $((big_saved + alone_saved)),$" || fail "bytes_saved: $out"
	# du counts each inode once: du of both trees + bytes saved = sum of all names
	du_both=$(du -B1 -s -c $M/t $M/u | tail -n 1 | cut -f1)
	du_t=$(du -B1 -s $M/t | cut -f1)
	du_u=$(du -B1 -s $M/u | cut -f1)
	[ "$((du_t + du_u - du_both))" -le "$((big_saved + alone_saved))" ] ||
		fail "du says more is shared than status: $du_t + $du_u - $du_both"
	text=$(cowlink status $M/t | tail -n 1)
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

test_break_without_cow_flag_fails_and_copies_nothing() {
	printf data >"$M"/a
	ln "$M"/a "$M"/b
	i=$(ino "$M"/a)
	if cowlink break -v "$M"/a >/tmp/out 2>/tmp/err; then
		fail "exit 0 for a file without the flag"
	else
		check_eq $? 1 "exit status"
	fi
	check_eq "$(cat /tmp/out)" "" "no inode line on stdout"
	check_eq "$(cat /tmp/err)" "cowlink: cannot break '$M/a': not a cow link (COW flag not set)" "message"
	check_eq "$(ino "$M"/a)" "$i" "same inode"
	check_eq "$(nlink "$M"/b)" 2 "still shared"
}

test_break_on_cow_all_mount_breaks_unflagged_file() {
	umount "$M"
	mount_clfs cow=all
	printf data >"$M"/a
	ln "$M"/a "$M"/b
	check_try 0 getcow "$M"/a
	i=$(ino "$M"/a)
	out=$(cowlink break -v "$M"/a)
	check_ne "$(ino "$M"/a)" "$i" "new inode"
	check_eq "$out" "$M/a: inode $i -> $(ino "$M"/a)" "verbose report"
	check_eq "$(nlink "$M"/b)" 1 "other name"
}

test_break_single_link_is_a_note_with_exit_0() {
	cowlink set "$M"
	printf data >"$M"/a
	i=$(ino "$M"/a)
	err=$(cowlink break -v "$M"/a 2>&1 >/tmp/out) || fail "exit status $?"
	check_eq "$err" "cowlink: '$M/a': single link, nothing to break" "note"
	check_eq "$(cat /tmp/out)" "" "no inode line"
	check_eq "$(ino "$M"/a)" "$i" "same inode"
}

test_break_off_cowlinkfs_says_so() {
	mkdir -p /tmp/plain
	printf x >/tmp/plain/a
	ln -f /tmp/plain/a /tmp/plain/b
	i=$(ino /tmp/plain/a)
	err=$(cowlink break -v /tmp/plain/a 2>&1) && fail "break off cowlinkfs succeeded"
	check_eq "$err" "cowlink: cannot break '/tmp/plain/a': not on a cowlinkfs mount" "message"
	check_eq "$(ino /tmp/plain/a)" "$i" "same inode"
	mkfifo "$M"/p
	err=$(cowlink break "$M"/p 2>&1) && fail "break of a fifo succeeded"
	check_eq "$err" "cowlink: cannot break '$M/p': not a regular file" "fifo"
}

test_break_needs_read_and_write_permission_not_ownership() {
	cowlink set "$M"
	printf data >"$M"/ro
	chmod 644 "$M"/ro
	ln "$M"/ro "$M"/ro2
	printf data >"$M"/wo
	chmod 622 "$M"/wo
	ln "$M"/wo "$M"/wo2
	printf data >"$M"/rw
	chmod 666 "$M"/rw
	ln "$M"/rw "$M"/rw2
	i=$(ino "$M"/ro)
	err=$(as_user cowlink break "$M"/ro 2>&1) && fail "break without write permission"
	check_eq "$err" "cowlink: cannot break '$M/ro': Permission denied" "read-only"
	check_eq "$(ino "$M"/ro)" "$i" "read-only file not broken"
	i=$(ino "$M"/wo)
	err=$(as_user cowlink break "$M"/wo 2>&1) && fail "break without read permission"
	check_eq "$err" "cowlink: cannot break '$M/wo': Permission denied" "write-only"
	check_eq "$(ino "$M"/wo)" "$i" "write-only file not broken"
	i=$(ino "$M"/rw)
	as_user cowlink break "$M"/rw
	check_ne "$(ino "$M"/rw)" "$i" "broken by a non-owner who may write"
	check_eq "$(owner "$M"/rw)" 0:0 "copy keeps the owner"
}

test_status_walks_a_directory_without_r() {
	cowlink set "$M"
	mkdir -p "$M"/t/sub
	printf x >"$M"/t/sub/a
	ln "$M"/t/sub/a "$M"/t/b
	saved=$(($(blocks "$M"/t/b) * 512))
	check_eq "$(cowlink status "$M"/t | tail -n 1)" \
		"files shared: 1, names: 2, bytes saved: $saved" "totals of the tree"
	check_eq "$(cowlink status "$M"/t)" "$(cowlink status -r "$M"/t)" "same as -r"
}

test_usage_errors_name_the_word_and_exit_2() {
	if "$(command -v cowlink)" clone -R "$M"/x 2>/tmp/err; then
		fail "exit 0 for an option of another subcommand"
	else
		check_eq $? 2 "exit status"
	fi
	check_eq "$(cat /tmp/err)" "cowlink: invalid option '-R' for 'clone'
Try 'cowlink clone --help' for more information." "message, one prefix when run by path"
	err=$(cowlink frob 2>&1) && fail "unknown subcommand accepted"
	check_eq "$err" "cowlink: unknown subcommand 'frob'
Try 'cowlink --help' for more information." "unknown subcommand"
	err=$(cowlink clone "$M"/a 2>&1) && fail "clone with one operand accepted"
	check_eq "$err" "cowlink: missing destination operand after '$M/a'
Try 'cowlink clone --help' for more information." "missing operand"
}

test_subcommand_help_exits_0() {
	for c in get set clear clone status du break changes discard; do
		out=$(cowlink $c --help) || fail "cowlink $c --help: exit $?"
		case "$out" in
		"Usage: cowlink $c "*) ;;
		*) fail "cowlink $c --help: $out" ;;
		esac
	done
}

test_walk_errors_report_what_failed_and_why() {
	mkdir -p "$M"/w/x "$M"/w/y
	touch "$M"/w/x/f
	chown -R 1000:1000 "$M"/w
	chmod 600 "$M"/w/x
	chmod 300 "$M"/w/y
	for c in "get -R" status; do
		# shellcheck disable=SC2086 # $c is two words
		err=$(as_user cowlink $c "$M"/w 2>&1 >/dev/null) && fail "$c: exit 0"
		echo "$err" | grep -qxF "cowlink: cannot access '$M/w/x/f': Permission denied" ||
			fail "$c: no FTW_NS message: $err"
		echo "$err" | grep -qxF "cowlink: cannot read directory '$M/w/y': Permission denied" ||
			fail "$c: no FTW_DNR message: $err"
		check_eq "$(echo "$err" | wc -l)" 2 "$c: two errors, no others"
	done
}

test_clone_copies_directory_xattrs_and_acls() {
	mkdir -p "$M"/src/sub "$M"/p
	printf x >"$M"/src/sub/f
	setfattr -n user.dir -v dv "$M"/src/sub
	setfattr -n trusted.dir -v tv "$M"/src/sub
	setfacl -m u:1000:rwx "$M"/src/sub
	setfacl -d -m u:1000:r-x "$M"/src/sub
	setfacl -d -m g:1000:r-x "$M"/src
	mknod "$M"/src/null c 1 3
	setfattr -n trusted.dev -v nv "$M"/src/null
	# a default ACL above DST: the clone must not keep what it inherits
	setfacl -d -m u:1000:rwx "$M"/p
	cowlink clone "$M"/src "$M"/p/dst
	check_eq "$(getfattr --only-values -n user.dir "$M"/p/dst/sub)" dv "user.* of a directory"
	check_eq "$(getfattr --only-values -n trusted.dir "$M"/p/dst/sub)" tv "trusted.* of a directory (root)"
	check_eq "$(getfattr --only-values -n trusted.dev "$M"/p/dst/null)" nv "trusted.* of a device"
	check_eq "$(getfacl -cpn "$M"/p/dst/sub)" "$(getfacl -cpn "$M"/src/sub)" "access and default ACL"
	check_eq "$(getfacl -cpn "$M"/p/dst)" "$(getfacl -cpn "$M"/src)" "default ACL of the top"
	check_eq "$(getfacl -cpn "$M"/p/dst | grep -c 'user:1000')" 0 "inherited ACL removed"
	check_eq "$(mode "$M"/p/dst/sub)" "$(mode "$M"/src/sub)" "mode with the ACL mask"
	check_try 1 getcow "$M"/p/dst/sub
}

test_clone_refuses_an_existing_dst() {
	mkdir "$M"/s "$M"/d
	printf x >"$M"/s/f
	err=$(cowlink clone "$M"/s "$M"/d 2>&1) && fail "clone into an existing directory succeeded"
	check_eq "$err" "cowlink: cannot create directory '$M/d': File exists" "directory"
	check_eq "$(ls -A "$M"/d)" "" "nothing cloned into it"
	: >"$M"/file
	err=$(cowlink clone "$M"/s "$M"/file 2>&1) && fail "clone over a file succeeded"
	check_eq "$err" "cowlink: cannot create directory '$M/file': File exists" "file"
	err=$(cowlink clone "$M"/s "$M"/s/inner 2>&1) && fail "clone into itself succeeded"
	check_eq "$err" "cowlink: cannot clone '$M/s' into itself, '$M/s/inner'" "into itself"
	[ ! -e "$M"/s/inner ] || fail "inner made"
	check_eq "$(nlink "$M"/s/f)" 1 "nothing linked"
}

test_clone_progress_only_on_a_terminal() {
	mkdir "$M"/s
	touch "$M"/s/a "$M"/s/b "$M"/s/c
	err=$(cowlink clone --progress "$M"/s "$M"/d 2>&1) || fail "clone --progress: exit $?"
	check_eq "$err" "" "nothing on a non-terminal"
	check_eq "$(ino "$M"/d/a)" "$(ino "$M"/s/a)" "cloned"
	out=$(script -qec "cowlink clone --progress $M/s $M/d2" /dev/null </dev/null) ||
		fail "on a terminal: exit $?: $out"
	case "$out" in
	*"cowlink: 4/4 entries (100%), "*"/s, "*" s"*) ;;
	*) fail "no progress on a terminal: $out" ;;
	esac
	check_eq "$(ino "$M"/d2/c)" "$(ino "$M"/s/c)" "cloned on a terminal"
	# the meter on the terminal, stderr; what -v reports on stdout
	out=$(script -qec "cowlink clone --progress -v $M/s $M/d3 >/tmp/vout" /dev/null </dev/null) ||
		fail "-v with --progress: exit $?: $out"
	case "$out" in
	*"cowlink: 4/4 entries (100%), "*) ;;
	*) fail "no meter with -v: $out" ;;
	esac
	check_eq "$(cat /tmp/vout)" "4 entries cloned" "-v's report on stdout"
}

test_status_json_escapes_odd_file_names() {
	cowlink set "$M"
	mkdir "$M"/j
	printf x >"$M/j/$(printf 'bad\377')"
	ln "$M/j/$(printf 'bad\377')" "$M/j/$(printf 'q"\n\376')"
	out=$(cowlink status --json "$M"/j)
	printf '%s\n' "$out" | grep -qF -e "\"path\": \"$M/j/bad\\udcff\"" \
		-e "\"path\": \"$M/j/q\\\"\\n\\udcfe\"" || fail "escapes: $out"
	check_eq "$(printf '%s' "$out" | LC_ALL=C tr -d '\n -~' | wc -c)" 0 "ASCII only"
	printf '%s\n' "$out" | grep -q '"files_shared": 1,' || fail "files_shared: $out"
}

test_get_records_replay_with_set_from() {
	mkdir -p "$M"/t/d
	nl=$(printf 'n\nl')
	bs='b\s'
	odd=$(printf 'o\377')
	printf x >"$M"/t/a
	printf y >"$M/t/d/$nl"
	printf z >"$M/t/$bs"
	printf w >"$M/t/$odd"
	cowlink set "$M"/t/a "$M/t/$bs" "$M/t/d/$nl" "$M"/t/d
	(cd "$M"/t && cowlink get -R . >/tmp/flags && cowlink get -R -0 . >/tmp/flags0)
	grep -qxF '\cow ./b\\s' /tmp/flags || fail "backslash record: $(cat /tmp/flags)"
	grep -qxF '\cow ./d/n\nl' /tmp/flags || fail "newline record: $(cat /tmp/flags)"
	grep -qxF -e "--- ./$odd" /tmp/flags || fail "odd bytes as they are: $(cat /tmp/flags)"
	check_eq "$(wc -l </tmp/flags)" 6 "one line per name"
	# On a terminal the names are quoted as status lists them instead.
	(cd "$M"/t && script -qec "cowlink get -R ." /dev/null </dev/null) |
		tr -d '\r' >/tmp/tty
	grep -qxF -e "cow './b\\s'" /tmp/tty || fail "backslash on a terminal: $(cat /tmp/tty)"
	grep -qxF -e "cow './d/n'\$'\\n''l'" /tmp/tty || fail "newline on a terminal: $(cat /tmp/tty)"
	grep -qxF -e "--- './o'\$'\\377'" /tmp/tty || fail "odd bytes on a terminal: $(cat /tmp/tty)"
	grep -qxF -e "cow ./a" /tmp/tty || fail "plain name on a terminal: $(cat /tmp/tty)"
	cowlink clear -R "$M"/t
	(cd "$M"/t && cowlink set --from=/tmp/flags)
	(cd "$M"/t && cowlink get -R -0 .) | cmp -s - /tmp/flags0 || fail "replay of newline records"
	check_try 1 getcow "$M/t/d/$nl"
	check_try 0 getcow "$M/t/$odd"
	cowlink clear -R "$M"/t
	(cd "$M"/t && cowlink set --from=- -0 </tmp/flags0)
	(cd "$M"/t && cowlink get -R -0 .) | cmp -s - /tmp/flags0 || fail "replay of NUL records"
	printf 'cow ./a\nbogus\n' >/tmp/bad
	err=$(cd "$M"/t && cowlink set --from=/tmp/bad 2>&1) && fail "bad record accepted"
	check_eq "$err" "cowlink: /tmp/bad:2: not a 'cow PATH' or '--- PATH' record" "bad record"
}

# Biederman's worry of 2004: a backup of the lower tree as root, restored,
# is a cow tree again (hard links and the flag xattr kept).
test_tar_of_the_lower_tree_keeps_links_and_flag() {
	mkdir "$M"/t
	cowlink set "$M"/t
	printf old >"$M"/t/a
	ln "$M"/t/a "$M"/t/b
	umount "$M"
	tar --xattrs --xattrs-include='trusted.*' -C "$L" -cf /tmp/cow.tar t
	rm -rf "${L:?}"/t
	tar --xattrs --xattrs-include='trusted.*' -C "$L" -xf /tmp/cow.tar
	rm -f /tmp/cow.tar
	mount_clfs
	check_eq "$(nlink "$M"/t/b)" 2 "hard link restored"
	check_eq "$(ino "$M"/t/a)" "$(ino "$M"/t/b)" "one inode"
	check_eq "$(cowlink get "$M"/t "$M"/t/a)" "cow $M/t
cow $M/t/a" "flag of the directory and the file restored"
	printf new >>"$M"/t/b
	check_eq "$(content "$M"/t/a)" old "a write breaks the restored link"
	check_eq "$(content "$M"/t/b)" oldnew "the name written has the change"
}

# Root clones a tree whose directory d its owner keeps swapping with a
# symlink to root's secrets (tests/helpers/swapdir.c).  nftw() resolved
# each name from SRC again, so links (and the COW flag) landed on the
# secrets; a walk by directory fds only ever reaches what is inside SRC.
# A race, which the path walk lost on 106 of 300 files in one run here.
test_clone_as_root_never_reaches_outside_src_through_a_swapped_dir() {
	mkdir -p "$M"/secret "$M"/home/src/d
	chmod 700 "$M"/secret
	for i in $(seq 1 300); do
		: >"$M/secret/f$i"
		: >"$M/home/src/d/f$i"
	done
	chown -R 1000:1000 "$M"/home
	rm -f /tmp/swap-stop
	as_user swapdir "$M"/home/src/d "$M"/secret /tmp/swap-stop >/tmp/swaps &
	sleep 1
	cowlink clone "$M"/home/src "$M"/dst 2>/dev/null || :
	touch /tmp/swap-stop
	wait
	swaps=$(cat /tmp/swaps)
	[ "${swaps:-0}" -gt 100 ] || fail "the attacker swapped '$swaps' times"
	check_eq "$(find "$M"/secret -type f -links +1 | wc -l)" 0 "secrets linked"
	check_eq "$(cowlink get -R "$M"/secret | grep -c '^cow ')" 0 "secrets flagged"
	check_eq "$(find "$M"/dst -samefile "$M"/secret/f1 | wc -l)" 0 "a secret in DST"
}

test_clone_refuses_a_dst_another_user_put_in_its_place() {
	mkdir -p "$M"/src/private "$M"/pub
	printf secret >"$M"/src/private/f
	chmod 700 "$M"/src/private
	chown 1000:1000 "$M"/pub
	# The owner of DST's parent swaps DST for a directory of theirs
	# between cowlink's mkdir and its open.
	set +e
	err=$(afterscall mkdirat 1 "mv $M/pub/dst $M/pub/old && mkdir -m 777 $M/pub/dst && chown 1000:1000 $M/pub/dst" \
		cowlink clone "$M"/src "$M"/pub/dst 2>&1)
	rc=$?
	set -e
	check_eq "$rc" 1 "exit status"
	check_eq "$err" "cowlink: '$M/pub/dst' was replaced as it was made, not cloned into" "message"
	check_eq "$(ls -A "$M"/pub/dst)" "" "nothing in their directory"
	check_eq "$(nlink "$M"/src/private/f)" 1 "the private file not linked"
}

test_break_breaks_the_name_it_checked_not_one_swapped_in() {
	cowlink set "$M"
	mkdir -p "$M"/u/d "$M"/root/d
	printf mine >"$M"/u/d/f
	chown -R 1000:1000 "$M"/u
	ln "$M"/u/d/f "$M"/u/g
	# root holds a name of the same inode, as a clone by root makes
	ln "$M"/u/d/f "$M"/root/d/f
	chmod 700 "$M"/root
	i=$(ino "$M"/root/d/f)
	# The owner of u/ makes u/d a symlink into root's tree after
	# cowlink's lstat of u/d/f and before its open.
	set +e
	err=$(afterscall newfstatat 1 "mv $M/u/d $M/u/e && ln -s $M/root/d $M/u/d" \
		cowlink break "$M"/u/d/f 2>&1)
	rc=$?
	set -e
	check_eq "$rc" 0 "exit status"
	check_eq "$err" "" "messages"
	check_eq "$(ino "$M"/root/d/f)" "$i" "root's name kept its inode"
	check_eq "$(nlink "$M"/root/d/f)" 2 "root's name still shared with u/g"
	check_ne "$(ino "$M"/u/e/f)" "$i" "the name checked broken"
	check_eq "$(content "$M"/u/e/f)" mine "its bytes"
}

test_break_never_opens_a_fifo_swapped_in() {
	cowlink set "$M"
	mkdir -p "$M"/u
	printf mine >"$M"/u/f
	ln "$M"/u/f "$M"/u/g
	rm -f /tmp/fiforc
	# A reader blocked on the FIFO is let go by any open for writing.
	set +e
	err=$(afterscall newfstatat 1 "mv $M/u/f $M/u/f.old && mkfifo $M/u/f && { (timeout 5 cat $M/u/f >/dev/null; echo \$? >/tmp/fiforc) >/dev/null 2>&1 & sleep 1; }" \
		cowlink break "$M"/u/f 2>&1)
	rc=$?
	set -e
	check_eq "$rc" 1 "exit status"
	check_eq "$err" "cowlink: cannot break '$M/u/f': replaced during the break, not broken" "message"
	check_eq "$(nlink "$M"/u/g)" 2 "nothing broken"
	sleep 5
	check_eq "$(cat /tmp/fiforc)" 124 "the FIFO's reader still blocked: never opened"
}

# A walk stop ends the clone: nothing is made after it, not even the
# links of files met before it.  DST is moved into SRC/a once its first
# directory is made, so that the walk of SRC/a meets it after the files
# there; they have no flag, so their links are refused (EMLINK) and left
# to the careful way, which came after the stop and linked them all.
# The links go to clone's two link workers, which need two CPUs: on one,
# each is made where it is met, before the stop.
test_clone_makes_nothing_after_a_walk_stop() {
	[ "$(nproc)" -gt 1 ] || fail "one CPU: no link workers to test"
	mkdir -p "$M"/s/a
	cowlink set "$M"/s "$M"/s/a
	for i in 1 2 3 4 5 6 7 8; do
		printf x >"$M"/s/a/u$i
		cowlink clear "$M"/s/a/u$i
	done
	set +e
	err=$(afterscall mkdirat 2 "mv $M/d $M/s/a/zz" cowlink clone "$M"/s "$M"/d 2>&1)
	rc=$?
	set -e
	check_eq "$rc" 1 "exit status"
	check_eq "$err" "cowlink: cannot clone '$M/s' into itself, '$M/d'" "message"
	check_eq "$(ls -A "$M"/s/a/zz/a)" "" "nothing made in the clone after the stop"
	for i in 1 2 3 4 5 6 7 8; do
		check_eq "$(nlink "$M"/s/a/u$i)" 1 "u$i not linked"
		check_eq "$(cowlink get "$M"/s/a/u$i)" "--- $M/s/a/u$i" "u$i not flagged"
	done
}

test_clone_makes_a_mount_point_empty_and_says_so() {
	mkdir -p "$M"/s/mnt
	printf x >"$M"/s/a
	mount -t tmpfs none "$M"/s/mnt
	printf y >"$M"/s/mnt/other
	set +e
	out=$(cowlink clone -v "$M"/s "$M"/d 2>/tmp/err)
	rc=$?
	set -e
	umount "$M"/s/mnt
	check_eq "$rc" 1 "exit status"
	check_eq "$(cat /tmp/err)" "cowlink: '$M/s/mnt' is a mount point, its entries are not cloned" "message"
	check_eq "$out" "3 entries cloned or failed" "-v does not say all was cloned"
	check_eq "$(ls -A "$M"/d/mnt)" "" "mount point made empty"
	check_eq "$(ino "$M"/d/a)" "$(ino "$M"/s/a)" "the rest cloned"
}

test_clone_refuses_a_dst_on_a_bind_mount_of_src() {
	mkdir -p "$M"/s/sub /mnt/b
	printf x >"$M"/s/f
	mount --bind "$M"/s/sub /mnt/b
	set +e
	err=$(cowlink clone "$M"/s /mnt/b/clone 2>&1)
	rc=$?
	set -e
	umount /mnt/b
	check_eq "$rc" 1 "exit status"
	check_eq "$err" "cowlink: '$M/s' and '/mnt/b' are not on one mount (a bind mount?)" "message"
	check_eq "$(ls -A "$M"/s/sub)" "" "nothing made"
	check_eq "$(nlink "$M"/s/f)" 1 "nothing linked"
}

test_status_counts_a_name_once_when_operands_overlap() {
	cowlink set "$M"
	mkdir -p "$M"/t/sub
	printf x >"$M"/t/sub/a
	ln "$M"/t/sub/a "$M"/t/b
	check_eq "$(cowlink status "$M"/t "$M"/t/sub | tail -n 1)" \
		"files shared: 1, names: 2, bytes saved: $(( $(stat -c %b "$M"/t/b) * 512 ))" "tree then subtree"
	check_eq "$(cowlink status "$M"/t/sub "$M"/t | tail -n 1)" \
		"files shared: 1, names: 2, bytes saved: $(( $(stat -c %b "$M"/t/b) * 512 ))" "subtree then tree"
}

test_set_from_follows_no_symlink_and_opens_no_fifo() {
	mkdir -p "$M"/r/real
	: >"$M"/r/real/f
	ln -s real "$M"/r/link
	mkfifo "$M"/r/p
	cd "$M"/r
	set +e
	err=$(printf 'cow link/f\ncow p\ncow real/f\n' | cowlink set --from=- 2>&1)
	rc=$?
	set -e
	cd /
	check_eq "$rc" 1 "exit status"
	check_eq "$err" "cowlink: cannot set flag on 'link/f': a symlink on its path (set --from follows none)
cowlink: cannot set flag on 'p': not a regular file or directory" "messages"
	check_try 1 getcow "$M"/r/real/f
}

# status counts COW links apart from plain hard links, which a cow=flag
# mount does not protect; with cow=all every link is COW.
test_status_tells_cow_links_from_plain_hard_links() {
	mkdir "$M"/t
	printf x >"$M"/t/p
	ln "$M"/t/p "$M"/t/p2
	cowlink set "$M"/t
	printf y >"$M"/t/c
	ln "$M"/t/c "$M"/t/c2
	out=$(cowlink status "$M"/t 2>/tmp/err)
	check_eq "$(printf '%s\n' "$out" | tail -n 2)" "unprotected hard links (not COW): files: 1, names: 2
files shared: 1, names: 2, bytes saved: $(($(blocks "$M"/t/c) * 512))" "totals"
	check_eq "$(cat /tmp/err)" "" "no note on cowlinkfs"
	mount -o remount,cow=all "$M"
	cowlink status --json "$M"/t | grep -q '"files_shared": 2,' ||
		fail "cow=all: $(cowlink status --json "$M"/t)"
}

# du of a clone: what deleting it would free; break -R gives every
# multi-link file of a tree its own copy.
test_break_recursive_and_du_of_a_clone() {
	cowlink set "$M"
	mkdir -p "$M"/s/d
	head -c 65536 /dev/urandom >"$M"/s/a
	printf b >"$M"/s/d/b
	printf c >"$M"/s/one
	cowlink clone "$M"/s "$M"/c
	rm "$M"/s/one
	d=$((($(blocks "$M"/c) + $(blocks "$M"/c/d) + $(blocks "$M"/c/one)) * 512))
	check_eq "$(cowlink du "$M"/c | cut -f1)" "$d" "clone frees its dirs and its own file"
	out=$(cowlink break -R -v "$M"/c 2>/tmp/err) || fail "break -R: exit $?"
	check_eq "$(cat /tmp/err)" "" "single links in silence"
	check_eq "$(printf '%s\n' "$out" | wc -l)" 2 "a and d/b broken"
	check_eq "$(nlink "$M"/s/a)" 1 "source alone"
	check_eq "$(cowlink du "$M"/c | cut -f1)" "$(du -s -B1 "$M"/c | cut -f1)" "shares nothing"
}

# A multi-link file status cannot open to read its flag is an error, not
# a guess.
test_status_unreadable_file_is_an_error() {
	cowlink set "$M"
	printf x >"$M"/u
	chmod 600 "$M"/u
	ln "$M"/u "$M"/u2
	err=$(as_user cowlink status "$M" 2>&1 >/dev/null) && fail "exit 0"
	case $err in
	*"cannot open '$M/u"*"Permission denied"*) ;;
	*) fail "$err" ;;
	esac
}

# status where /proc/self/mountinfo cannot be read, on a cow=all mount:
# counted by the flag (unprotected), said once per filesystem.
test_status_without_mountinfo_counts_by_the_flag() {
	umount "$M"
	mount_clfs cow=all
	mkdir -p "$M"/t/u
	printf x >"$M"/t/a
	ln "$M"/t/a "$M"/t/u/a2
	printf y >"$M"/t/u/b
	ln "$M"/t/u/b "$M"/t/b2
	# shellcheck disable=SC2016 # $1 is the inner shell's
	out=$(unshare -m --propagation private sh -c \
		'umount -l /proc && cowlink status --json "$1"' sh "$M"/t 2>/tmp/err) ||
		fail "exit status $?"
	case $(cat /tmp/err) in
	"cowlink: cannot tell whether '$M/t/"*"' is mounted cow=all (/proc/self/mountinfo: No such file or directory): counted by the flag") ;;
	*) fail "note: $(cat /tmp/err)" ;;
	esac
	check_eq "$(wc -l </tmp/err)" 1 "one note for the filesystem"
	printf '%s\n' "$out" | grep -q '"unprotected_files": 2,' || fail "$out"
	printf '%s\n' "$out" | grep -q '"files_shared": 0,' || fail "$out"
	printf '%s\n' "$out" | grep -q "\"cow_mode_unknown\": \[\"$M/t/" || fail "$out"
	out=$(cowlink status --json "$M"/t 2>/tmp/err)
	check_eq "$(cat /tmp/err)" "" "no note with /proc"
	printf '%s\n' "$out" | grep -q '"files_shared": 2,' || fail "$out"
	printf '%s\n' "$out" | grep -q '"cow_mode_unknown": \[\]' || fail "$out"
}

# break -R stays on the operand's mount, as clone does: another
# filesystem and a bind mount of this one are named once and left alone.
test_break_recursive_does_not_cross_mount_points() {
	cowlink set "$M"
	mkdir -p "$M"/s/tmp "$M"/s/bind "$M"/o
	printf a >"$M"/s/a
	ln "$M"/s/a "$M"/a2
	printf o >"$M"/o/f
	ln "$M"/o/f "$M"/o/f2
	mount -t tmpfs none "$M"/s/tmp
	mount --bind "$M"/o "$M"/s/bind
	set +e
	err=$(cowlink break -R "$M"/s 2>&1 >/dev/null)
	rc=$?
	set -e
	umount "$M"/s/bind
	umount "$M"/s/tmp
	check_eq "$rc" 1 "exit status"
	check_eq "$(printf '%s\n' "$err" | sort)" "cowlink: not crossing into mount point '$M/s/bind'
cowlink: not crossing into mount point '$M/s/tmp'" "messages"
	check_eq "$(nlink "$M"/s/a)" 1 "the tree's own link broken"
	check_eq "$(nlink "$M"/o/f)" 2 "the bind mount's files untouched"
}

# clone stops at a bind mount of the same cowlinkfs too (same st_dev).
test_clone_makes_a_bind_mount_point_empty() {
	mkdir -p "$M"/s/b "$M"/o
	printf x >"$M"/s/a
	printf y >"$M"/o/f
	mount --bind "$M"/o "$M"/s/b
	set +e
	err=$(cowlink clone "$M"/s "$M"/d 2>&1)
	rc=$?
	set -e
	umount "$M"/s/b
	check_eq "$rc" 1 "exit status"
	check_eq "$err" "cowlink: '$M/s/b' is a mount point, its entries are not cloned" "message"
	check_eq "$(ls -A "$M"/d/b)" "" "mount point made empty"
	check_eq "$(nlink "$M"/o/f)" 1 "nothing linked from the bind mount"
}

# A flagged tree is cloned at one link() per file; one without the flag
# (and a cow=all mount, whose link() checks none) the careful way: every
# file of the clone shares its inode and has the flag either way.
test_clone_of_flagged_and_unflagged_files_and_on_cow_all() {
	mkdir -p "$M"/s/d/e
	printf a >"$M"/s/a
	printf b >"$M"/s/d/b
	printf c >"$M"/s/d/e/c
	cowlink set -R "$M"/s
	printf u >"$M"/s/d/unflagged
	cowlink clear "$M"/s/d/unflagged
	out=$(cowlink clone -v "$M"/s "$M"/c 2>/tmp/err) || fail "clone: $(cat /tmp/err)"
	check_eq "$out" "7 entries cloned" "count"
	check_eq "$(cat /tmp/err)" "" "no message"
	for f in a d/b d/e/c d/unflagged; do
		check_eq "$(ino "$M"/c/$f)" "$(ino "$M"/s/$f)" "$f linked"
		check_try 1 getcow "$M"/c/$f
	done
	check_eq "$(cowlink get -R "$M"/c | grep -c '^---')" 0 "every name flagged"
	umount "$M"
	mount_clfs cow=all
	printf n >"$M"/s/new
	cowlink clear "$M"/s/new
	cowlink clone "$M"/s "$M"/c2 || fail "clone on cow=all"
	check_eq "$(ino "$M"/c2/new)" "$(ino "$M"/s/new)" "cow=all: linked"
	check_try 1 getcow "$M"/c2/new
	printf x >>"$M"/c2/d/b
	check_eq "$(content "$M"/s/d/b)" b "pristine kept"
}

# A file at the lower filesystem's link limit cannot be linked into a
# clone: one message for the clone, naming the first, with the count.
# SRC holds N names of one file, more than half the limit (32,000 links
# on ext2, 65,000 on ext4), so that the clone links some and not others.
# ext2 only: the message does not depend on the lower fs, and 65,000
# links on ext4 take 105 s of a worker in the guest.
# lowers: ext2
test_clone_at_the_link_limit_says_so_once_with_a_count() {
	case $FS in
	ext2) k=20 ;;
	*) k=40 ;;
	esac
	n=$((k * 1000 + 1))
	mkdir "$M"/s
	printf x >"$M"/s/f
	cowlink set "$M"/s "$M"/s/f
	# shellcheck disable=SC2016 # perl's variables
	perl -e 'for $d (1 .. $ARGV[1]) {
		mkdir("$ARGV[0]/d$d") or die "mkdir: $!\n";
		for $i (1 .. 1000) { link("$ARGV[0]/f", "$ARGV[0]/d$d/$i") or die "link: $!\n" }
	}' "$M"/s "$k"
	check_eq "$(nlink "$M"/s/f)" "$n" "names in SRC"
	set +e
	out=$(cowlink clone -v "$M"/s "$M"/c 2>/tmp/err)
	rc=$?
	set -e
	limit=$(nlink "$M"/s/f)
	left=$((2 * n - limit))
	[ "$left" -gt 1 ] && [ "$left" -lt "$n" ] || fail "limit $limit, $left names left out"
	check_eq "$rc" 1 "exit status"
	check_eq "$(find "$M"/c -type f | wc -l)" $((limit - n)) "the names that fit, linked"
	case $(cat /tmp/err) in
	"cowlink: cannot link '$M/c/"*"' and $((left - 1)) other files: Too many links") ;;
	*) fail "not one message with the count: $(head -c 2000 /tmp/err)" ;;
	esac
	check_eq "$(wc -l </tmp/err)" 1 "one line"
	check_eq "$(printf '%s\n' "$out" | tail -n 1)" "$((n + k + 1)) entries cloned or failed" "-v's total"
}

# cowlink changes after what a test run does in a clone: writes (>>,
# dd conv=notrunc), creates, unlinks, chmod and setfattr (which break a
# link as writes do), a rename, a new directory, names with spaces and
# newlines; the pristine tree itself never changes.
test_changes_lists_what_a_run_did_in_a_clone() {
	nl='
'
	mkdir -p "$M"/p/etc "$M"/p/usr/bin "$M"/p/var/gone
	for f in etc/conf etc/keep usr/bin/tool "usr/bin/two words" "etc/new${nl}line" \
		etc/mode etc/attr var/gone/x etc/moved; do
		printf 'data %s\n' "$f" >"$M/p/$f"
	done
	ln -s tool "$M"/p/usr/bin/alias
	# An old mtime, so that a change shows one also on ext2, whose
	# timestamps count whole seconds.
	find "$M"/p -exec touch -h -d @1000000000 {} +
	cowlink set -R "$M"/p
	cowlink clone "$M"/p "$M"/c
	before=$(cd "$M"/p && find . -printf '%p %i %m %s %T@\n' | sort)
	echo more >>"$M"/c/etc/conf
	printf X | dd of="$M/c/usr/bin/two words" bs=1 seek=2 conv=notrunc status=none
	printf Y | dd of="$M/c/etc/new${nl}line" bs=1 seek=3 conv=notrunc status=none
	chmod 600 "$M"/c/etc/mode
	setfattr -n user.run -v 1 "$M"/c/etc/attr
	rm -r "$M"/c/var/gone
	mv "$M"/c/etc/moved "$M/c/etc/moved here"
	mkdir "$M"/c/opt
	printf new >"$M/c/opt/a b"
	ln -sfn two "$M"/c/usr/bin/alias
	chmod 700 "$M"/c/usr
	out=$(cowlink changes "$M"/p "$M"/c) || fail "changes: exit $?"
	check_eq "$out" "metadata etc/attr
modified etc/conf
metadata etc/mode
removed etc/moved
created etc/moved here
\\modified etc/new\\nline
created opt
created opt/a b
metadata usr
modified usr/bin/alias
modified usr/bin/two words
removed var/gone
removed var/gone/x" "records"
	cowlink changes -0 "$M"/p "$M"/c | tr '\0' '|' >/tmp/z
	grep -qF "|modified etc/new${nl}line|" /tmp/z || fail "-0: $(cat /tmp/z)"
	json=$(cowlink changes --json "$M"/p "$M"/c)
	for rec in '{"path": "etc/attr", "change": "metadata", "type": "file", "what": ["inode", "xattrs"]}' \
		'{"path": "etc/conf", "change": "modified", "type": "file", "what": ["inode", "size", "mtime"]}' \
		'{"path": "etc/new\nline", "change": "modified", "type": "file", "what": ["inode", "mtime"]}' \
		'{"path": "usr", "change": "metadata", "type": "directory", "what": ["mode"]}' \
		'"modified": 4,' '"created": 3,' '"removed": 3,' '"metadata": 3'; do
		case "$json" in *"$rec"*) ;; *) fail "no $rec in $json" ;; esac
	done
	check_eq "$(cd "$M"/p && find . -printf '%p %i %m %s %T@\n' | sort)" "$before" "pristine unchanged"
	check_eq "$(cowlink changes "$M"/p "$M"/p 2>&1)" \
		"cowlink: '$M/p' and '$M/p' are the same directory" "same tree"
	out=$(cowlink clone "$M"/p "$M"/c2 && cowlink changes "$M"/p "$M"/c2) || fail "fresh clone"
	check_eq "$out" "" "a fresh clone has no changes"
}

# A run's clone thrown away: every name of it gone, nothing copied on the
# way, and the pristine tree as it was, each file back to its one link.
test_discard_removes_a_clone_and_nothing_of_the_pristine_tree() {
	for d in a a/b a/b/c e; do
		mkdir -p "$M/p/$d"
		for i in $(seq 1 70); do printf '%s %s\n' "$d" "$i" >"$M/p/$d/f$i"; done
	done
	ln -s f1 "$M"/p/a/sym
	mkfifo "$M"/p/e/fifo
	cowlink set -R "$M"/p
	before=$(cd "$M"/p && find . -printf '%p %i %n %m %s %T@\n' | sort)
	cowlink clone "$M"/p "$M"/c
	echo run >>"$M"/c/a/b/f7
	mkdir "$M"/c/new
	: >"$M"/c/new/out
	check_eq "$(nlink "$M"/p/a/f1)" 2 "linked before the discard"
	out=$(cowlink discard "$M"/c 2>&1) || fail "discard: exit $?: $out"
	check_eq "$out" "" "nothing said"
	[ ! -e "$M"/c ] || fail "the clone is still there: $(find "$M"/c | head)"
	check_eq "$(cd "$M"/p && find . -printf '%p %i %n %m %s %T@\n' | sort)" "$before" \
		"pristine tree: names, inodes, links, modes, sizes, mtimes"
	check_eq "$(content "$M"/p/a/b/f7)" "a/b 7" "pristine bytes"
	[ ! -e "$L"/c ] || fail "the clone is still in the lower directory"
}

# What rm -rf refuses, refused, and a missing or non-directory operand an
# error that does not stop the other operands.
test_discard_refuses_root_dot_symlink_and_non_directory() {
	mkdir -p "$M"/d "$M"/e
	: >"$M"/f
	ln -s d "$M"/s
	for op in / "$M"/d/. "$M"/s "$M"/f "$M"/missing; do
		set +e
		err=$(cowlink discard "$op" "$M"/e 2>&1)
		rc=$?
		set -e
		check_eq "$rc" 1 "exit status for $op"
		case "$op" in
		/) want="cowlink: it is dangerous to discard '/' recursively" ;;
		*/.) want="cowlink: refusing to discard '.' or '..' directory: skipping '$op'" ;;
		*/s) want="cowlink: '$op' is a symlink (not followed), not discarded" ;;
		*/f) want="cowlink: '$op' is not a directory, not discarded" ;;
		*) want="cowlink: cannot discard '$op': No such file or directory" ;;
		esac
		check_eq "$err" "$want" "message for $op"
		[ ! -e "$M"/e ] || fail "the other operand was left after $op"
		mkdir "$M"/e
	done
	[ -d "$M"/d ] && [ -L "$M"/s ] && [ -f "$M"/f ] || fail "a refused operand was touched"
}

# A mount point below DIR is neither entered nor removed, nor are the
# directories above it; the rest goes.
test_discard_leaves_a_mount_point_and_the_directories_above_it() {
	mkdir -p "$M"/c/keep/m "$M"/c/gone "$M"/o
	: >"$M"/c/keep/f
	: >"$M"/c/gone/f
	printf y >"$M"/o/f
	mount --bind "$M"/o "$M"/c/keep/m
	set +e
	err=$(cowlink discard "$M"/c 2>&1)
	rc=$?
	set -e
	umount "$M"/c/keep/m
	check_eq "$rc" 1 "exit status"
	check_eq "$err" "cowlink: '$M/c/keep/m' is a mount point, not discarded" "message"
	check_eq "$(cd "$M"/c && find . | sort | tr '\n' ' ')" ". ./keep ./keep/m " "what is left"
	check_eq "$(content "$M"/o/f)" y "the bind mount's file"
}

# Run by root on a tree a user can change, discard never removes a file
# outside it, whatever the user swaps in while it walks.
test_discard_as_root_never_reaches_outside_through_a_swapped_dir() {
	mkdir -p "$M"/secret "$M"/home/c/d
	chmod 700 "$M"/secret
	for i in $(seq 1 300); do
		: >"$M/secret/f$i"
		: >"$M/home/c/d/f$i"
	done
	chown -R 1000:1000 "$M"/home
	rm -f /tmp/swap-stop
	as_user swapdir "$M"/home/c/d "$M"/secret /tmp/swap-stop >/tmp/swaps &
	sleep 1
	cowlink discard "$M"/home/c 2>/dev/null || :
	touch /tmp/swap-stop
	wait
	swaps=$(cat /tmp/swaps)
	[ "${swaps:-0}" -gt 100 ] || fail "the attacker swapped '$swaps' times"
	check_eq "$(ls "$M"/secret | wc -l)" 300 "secrets left"
}

# A user discards what a user may remove, and is told what not.
test_discard_as_a_user_removes_what_rm_would_and_says_what_not() {
	mkdir -p "$M"/c/ro "$M"/c/rw
	: >"$M"/c/ro/f
	: >"$M"/c/rw/f
	chown -R 1000:1000 "$M"/c
	chown 0:0 "$M"/c/ro
	chmod 755 "$M"/c/ro
	set +e
	err=$(as_user cowlink discard "$M"/c 2>&1)
	rc=$?
	set -e
	check_eq "$rc" 1 "exit status"
	check_eq "$err" "cowlink: cannot remove '$M/c/ro/f': Permission denied" "message"
	check_eq "$(cd "$M"/c && find . | sort | tr '\n' ' ')" ". ./ro ./ro/f " "what is left"
}
