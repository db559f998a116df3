# shellcheck shell=sh
# Hardening: refused or no-op changes make no copy, a copy gets nothing
# from the work directory and keeps what the lower fs demands (space,
# quota, project id), flags and open modes hold through every name, and
# the flag ioctl, listxattr and remount keep the VFS's rules.
# lowers: ext2 ext3 ext4 xfs xfsr tmpfs
# matrix: core

# two names of one COW file: $M/a and $M/b, root's, mode 644, content "old"
make_cow_pair() {
	printf old >"$M/a"
	chmod 644 "$M/a"
	check_try OK setcow "$M/a" 1
	check_try OK setcow "$M" 1
	ln "$M/a" "$M/b"
	check_eq "$(nlink "$M/a")" 2 "setup nlink"
}

# check_no_copy OLDINO [WHAT [DIR]]: DIR/a (default $M/a) still has the
# inode OLDINO, shared with DIR/b, and no copy is left in the work dir.
check_no_copy() {
	d=${3:-$M}
	check_eq "$(ino "$d/a")" "$1" "${2:-}: st_ino of a"
	check_eq "$(ino "$d/b")" "$1" "${2:-}: st_ino of b"
	check_eq "$(nlink "$d/a")" 2 "${2:-}: nlink of a"
	check_eq "$(nlink "$d/b")" 2 "${2:-}: nlink of b"
	check_eq "$(ls -A "$L/.cowlinkfs-work")" "" "${2:-}: work dir"
}

# check_name_broken OLDINO: $M/a has a copy of its own, $M/b kept the old
# inode OLDINO and the bytes "old"
check_name_broken() {
	check_ne "$(ino "$M/a")" "$1" "broken name has a new st_ino"
	check_eq "$(ino "$L/a")" "$(ino "$M/a")" "lower dir agrees on st_ino"
	check_eq "$(ino "$M/b")" "$1" "other name keeps the old inode"
	check_eq "$(nlink "$M/a")" 1 "broken name nlink"
	check_eq "$(nlink "$M/b")" 1 "other name nlink dropped"
	check_eq "$(content "$M/b")" old "other name keeps the old bytes"
}

# check_workdir_private WHAT: the work dir is root's, 0700, without ACLs
check_workdir_private() {
	w=$L/.cowlinkfs-work
	check_eq "$(stat -c %a:%u:%g "$w")" 700:0:0 "$1: work dir mode and owner"
	check_eq "$(getfacl -cpn "$w" | grep -c '^default:')" 0 "$1: default ACL of the work dir"
	check_eq "$(getfacl -cpn "$w" | grep -c 'user:1000')" 0 "$1: ACL entries of the work dir"
}

# lsattr_flags FILE: FILE's inode flags as lsattr letters
lsattr_flags() {
	lsattr "$1" | cut -d' ' -f1
}

# Clear append-only and immutable on the lower a and b however the test
# ends, or the runner could not remove them.
unflag_on_exit() {
	trap 'chattr -a -i "$L/a" "$L/b" 2>/dev/null || true' EXIT
}

# wait_for_exe PID PATH: wait (up to 60 s) until process PID runs PATH
wait_for_exe() {
	k=0
	until [ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$2" ]; do
		k=$((k + 1))
		[ $k -le 600 ] || fail "process $1 does not run $2 after 60 s"
		sleep 0.1
	done
}

# start_cow_program: $M/prog, a COW copy of sleep with a second name
# $M/prog2, running as $pid (killed however the test ends); $i its inode
start_cow_program() {
	cp /bin/sleep "$M/prog"
	check_try OK setcow "$M/prog" 1
	check_try OK setcow "$M" 1
	ln "$M/prog" "$M/prog2"
	i=$(ino "$M/prog")
	"$M/prog" 60 &
	pid=$!
	trap 'kill $pid 2>/dev/null || true' EXIT
	wait_for_exe "$pid" "$M/prog"
}

# chown(-1, -1) changes nothing, and anyone may ask for it; nor does a
# chmod to the mode the file has.
test_nonowner_chown_to_same_owner_makes_no_copy() {
	make_cow_pair
	i=$(ino "$M/a")
	check_eq "$(as_user try chown "$L/b" -1 -1)" OK "non-owner chown -1 -1 on the bare lower"
	check_eq "$(as_user try chown "$M/a" -1 -1)" OK "non-owner chown -1 -1"
	check_no_copy "$i" "non-owner chown -1 -1"
	check_try OK chown "$M/a" -1 -1
	check_no_copy "$i" "root chown -1 -1"
	check_try OK chmod "$M/a" 644
	check_no_copy "$i" "chmod to the same mode"
	check_eq "$(mode "$M/b")" 644 "mode"
}

test_refused_acl_and_system_xattr_changes_make_no_copy() {
	make_cow_pair
	i=$(ino "$M/a")
	if as_user setfacl -m u:1000:rw "$M/a" 2>/dev/null; then
		fail "non-owner setfacl succeeded"
	fi
	check_no_copy "$i" "non-owner setfacl"
	check_eq "$(as_user try setxattr "$M/a" system.foo 1)" EOPNOTSUPP "non-owner system.foo"
	check_no_copy "$i" "non-owner system.foo"
	check_eq "$(as_user try removexattr "$M/a" system.posix_acl_access)" EPERM \
		"non-owner removing the access ACL"
	check_no_copy "$i" "non-owner removexattr of the ACL"
	check_try ENODATA setxattr "$M/a" "$XNS.x" 1 replace
	check_no_copy "$i" "XATTR_REPLACE of a missing xattr"
	check_try ENODATA removexattr "$M/a" "$XNS.nope"
	check_no_copy "$i" "removing a missing xattr"
	setfacl -m u:1000:r "$M/a"
	check_name_broken "$i"
	check_eq "$(getfacl -cpn "$M/a" | grep -c '^user:1000:')" 1 "ACL entry on the copy"
	check_eq "$(getfacl -cpn "$M/b" | grep -c '^user:1000:')" 0 "no ACL entry on the other name"
}

# A default ACL on the top of the lower dir must not reach the work dir,
# nor through it a copy: here it would let uid 1000 read a 0640 root file.
test_copy_does_not_inherit_work_dir_default_acl() {
	umount "$M"
	rm -rf "$L/.cowlinkfs-work"
	setfacl -d -m u:1000:rwx "$L"
	printf secret >"$L/a"
	setfacl -b "$L/a"
	chmod 640 "$L/a"
	mount_clfs
	check_try OK setcow "$M/a" 1
	check_try OK setcow "$M" 1
	ln "$M/a" "$M/b"
	check_workdir_private "new work dir"
	if as_user cat "$M/b" >/dev/null 2>&1; then
		fail "uid 1000 reads the 0640 original"
	fi
	i=$(ino "$M/a")
	echo x >>"$M/a"
	check_ne "$(ino "$M/a")" "$i" "broken"
	check_eq "$(getfacl -cpn "$M/a" | grep -c 'user:1000')" 0 "ACL entries of the copy"
	if as_user cat "$M/a" >/dev/null 2>&1; then
		fail "uid 1000 reads the 0640 copy"
	fi
	check_eq "$(mode "$M/a")" 640 "mode of the copy"
	check_eq "$(content "$M/b")" secret "other name's bytes"
}

# Ours (it carries the mark only root can set), restored with the wrong
# owner, mode and ACLs: fixed at mount.  Someone else's directory at the
# name: moved aside, untouched, and a work dir of ours made.
test_existing_work_dir_with_wrong_owner_mode_acl_is_fixed_at_mount() {
	umount "$M"
	w=$L/.cowlinkfs-work
	check_eq "$(getfattr --only-values -n trusted.cowlinkfs.workdir "$w")" 1 "the mark"
	chown 1000:1000 "$w"
	chmod 777 "$w"
	setfacl -m u:1000:rwx "$w"
	setfacl -d -m u:1000:rwx "$w"
	mount_clfs
	check_workdir_private "existing work dir"
	umount "$M"
	rm -rf "$w"
	mkdir "$w"
	echo theirs >"$w/f"
	chown -R 1000:1000 "$w"
	mount_clfs
	check_workdir_private "a work dir made beside someone else's"
	set -- "$L"/.cowlinkfs-work.*
	check_eq "$(content "$1/f")" theirs "someone else's directory, moved aside"
	check_eq "$(owner "$1")" 1000:1000 "its owner"
}

# Each name has its own cowlinkfs inode; the flag belongs to the lower
# inode they share, so no name may answer from a stale copy of it.
test_flag_set_through_one_name_is_seen_through_the_others() {
	printf old >"$M/a"
	ln "$M/a" "$M/b"
	exec 3<"$M/b"
	check_try 0 getcow "$M/b"
	i=$(ino "$M/a")
	check_try OK setcow "$M/a" 1
	check_try 1 getcow "$M/b"
	echo x >>"$M/b"
	check_eq "$(content "$M/a")" old "a keeps the old bytes"
	check_eq "$(ino "$M/a")" "$i" "a keeps its inode"
	check_ne "$(ino "$M/b")" "$i" "b has a copy of its own"
	check_eq "$(nlink "$M/a")" 1 "nlink of a"
	check_eq "$(content "$M/b")" oldx "b's bytes"
	exec 3<&-
	printf old >"$M/c"
	ln "$M/c" "$M/d"
	exec 3<"$M/c" 4<"$M/d"
	check_try 0 getcow "$M/d"
	check_try OK setcow "$M/c" 1
	check_try 1 getcow "$M/d"
	check_try OK setcow "$M/d" 0
	check_try 0 getcow "$M/c"
	exec 3<&- 4<&-
}

test_fcntl_setfl_append_and_rwf_append_reach_the_lower_file() {
	for op in setfl_append:aaaab clearfl_append:baaa rwf_append:aaaab; do
		# The bare lower first: what the kernel itself does.
		for f in "$L/lower-${op%:*}" "$M/mount-${op%:*}"; do
			: >"$f"
			check_try OK "${op%:*}" "$f"
			check_eq "$(content "$f")" "${op#*:}" "${op%:*} on $f"
		done
	done
}

# Root keeps a reserve of blocks that ordinary users cannot use; a copy
# made for uid 1000 must not dip into it.
# lowers: ext4
# owns-lower
test_break_by_user_out_of_space_is_enospc_not_reserved_blocks() {
	mkdir "$M/d"
	chown 1000:1000 "$M/d"
	as_user sh -c "yes | head -c 8M >$M/d/a"
	check_try OK setcow "$M/d/a" 1
	check_try OK setcow "$M/d" 1
	ln "$M/d/a" "$M/d/b"
	i=$(ino "$M/d/a")
	s=$(sum "$M/d/a")
	sync
	avail=$(stat -f -c '%a %S' "/lower/$FS" | awk '{print int($1 * $2 / 1024)}')
	as_user fallocate -l "$((avail - 1024))K" "$L/d/fill" ||
		fail "cannot fallocate $((avail - 1024)) KiB as uid 1000"
	as_user dd if=/dev/zero of="$L/d/fill2" bs=64k 2>/dev/null || true
	if as_user sh -c "echo x >>$L/d/fill3" 2>/dev/null; then
		fail "uid 1000 can still write"
	fi
	rsv=$(tune2fs -l "$LDEV" | awk -F: '/^Reserved block count/ {r = $2}
		/^Block size/ {b = $2} END {print int(r * b / 1048576)}')
	[ "$rsv" -ge 12 ] || fail "root's reserve of $rsv MiB cannot hold the copy"
	check_eq "$(as_user try append "$M/d/a" x)" ENOSPC "break by uid 1000"
	check_no_copy "$i" "ENOSPC" "$M/d"
	check_eq "$(sum "$M/d/a")" "$s" "bytes"
	rm -f "$L/d/fill" "$L/d/fill2" "$L/d/fill3"
}

# lowers: xfs
# owns-lower
test_break_over_user_quota_is_edquot() {
	umount "$M"
	umount "/lower/$FS"
	# Whatever happens, the later tests get a lower without quotas.
	trap 'remount_lower >/dev/null 2>&1 || true' EXIT
	mount -o uquota "$LDEV" "/lower/$FS"
	mount_clfs
	mkdir "$M/d"
	chown 1000:1000 "$M/d"
	as_user sh -c "yes | head -c 3M >$M/d/a"
	check_try OK setcow "$M/d/a" 1
	check_try OK setcow "$M/d" 1
	ln "$M/d/a" "$M/d/b"
	i=$(ino "$M/d/a")
	sync
	xfs_quota -x -c 'limit -u bhard=5m 1000' "/lower/$FS"
	check_eq "$(as_user try append "$M/d/a" x)" EDQUOT "break over uid 1000's quota"
	check_no_copy "$i" "EDQUOT" "$M/d"
	xfs_quota -x -c 'limit -u bhard=0 1000' "/lower/$FS"
	trap - EXIT
	remount_lower
}

# xfs refuses to rename a file into a project-inherit directory of
# another project (EXDEV), so a copy must carry the project id.
# lowers: xfs xfsr
test_break_in_xfs_project_inherit_dir_keeps_project_id() {
	mkdir "$M/d"
	xfs_io -c 'chproj 42' -c 'chattr +P' "$L/d"
	check_try OK setcow "$M/d" 1
	echo old >"$M/d/a"
	check_eq "$(xfs_io -c lsproj "$L/d/a")" "projid = 42" "new file's project"
	ln "$M/d/a" "$M/d/b"
	i=$(ino "$M/d/a")
	echo more >>"$M/d/a" || fail "write to a cow link in a project dir"
	check_ne "$(ino "$M/d/a")" "$i" "broken name has a new st_ino"
	check_eq "$(ino "$M/d/b")" "$i" "other name keeps the old inode"
	check_eq "$(nlink "$M/d/a")" 1 "broken name nlink"
	check_eq "$(nlink "$M/d/b")" 1 "other name nlink"
	check_eq "$(content "$M/d/b")" old "other name's bytes"
	check_eq "$(xfs_io -c lsproj "$L/d/a")" "projid = 42" "copy's project"
}

test_setcow_through_read_only_mount_is_erofs() {
	touch "$M/f"
	ro=/tmp/clfs-ro
	mkdir -p "$ro"
	mount --bind "$M" "$ro"
	mount -o remount,bind,ro "$ro"
	check_try EROFS setcow "$ro/f" 1
	check_try EROFS setcow "$ro" 1
	check_try ENODATA getxattr "$L/f" trusted.cowlinkfs.cow
	check_try 0 getcow "$M"
	umount "$ro"
	mount -o remount,ro "$M"
	check_try EROFS setcow "$M/f" 1
	check_try ENODATA getxattr "$L/f" trusted.cowlinkfs.cow
	mount -o remount,rw "$M"
	check_try OK setcow "$M/f" 1
	check_eq "$(try getxattr "$L/f" trusted.cowlinkfs.cow)" 1 "flag after remount rw"
}

# A break renames the copy over the name, which an append-only or
# immutable file forbids: refuse before copying.  chattr then changes the
# one inode all names share, as on the bare fs.
# lowers: ext2 ext3 ext4 xfs xfsr
test_append_only_cow_link_is_eperm_without_copy_and_chattr_works() {
	make_cow_pair
	i=$(ino "$M/a")
	unflag_on_exit
	chattr +a "$L/a"
	check_try EPERM append "$M/a" x
	check_no_copy "$i" "append to an append-only link"
	check_eq "$(content "$M/a")" old "bytes"
	chattr -a "$M/a" || fail "chattr -a through the mount"
	check_eq "$(lsattr_flags "$L/b" | tr -cd a)" "" "append-only flag of the shared inode"
	check_no_copy "$i" "chattr -a"
	check_try OK append "$M/a" x
	check_name_broken "$i"
}

# lowers: ext2 ext3 ext4 xfs xfsr
test_immutable_cow_link_is_eperm_without_copy_and_chattr_works() {
	make_cow_pair
	i=$(ino "$M/a")
	unflag_on_exit
	chattr +i "$L/a"
	check_try EPERM open "$M/a" w
	check_no_copy "$i" "open for write"
	check_try EPERM truncate "$M/b" 0
	check_no_copy "$i" "truncate"
	check_try EPERM chmod "$M/a" 600
	check_no_copy "$i" "chmod"
	chattr -i "$M/b" || fail "chattr -i through the mount"
	check_eq "$(lsattr_flags "$L/a" | tr -cd i)" "" "immutable flag of the shared inode"
	check_no_copy "$i" "chattr -i"
	check_try OK append "$M/a" x
	check_name_broken "$i"
}

# The flag was set through a; b's own cowlinkfs inode must not keep
# allowing what the lower inode now forbids.
# lowers: ext2 ext3 ext4 xfs xfsr
test_flag_changed_in_lower_inode_is_true_through_every_name() {
	printf old >"$M/a"
	ln "$M/a" "$M/b"
	exec 3<"$M/b"
	check_try 0 getcow "$M/b"
	unflag_on_exit
	chattr +a "$M/a"
	check_try EPERM open "$M/b" w
	check_try OK append "$M/b" x
	check_eq "$(content "$M/a")" oldx "append through b reaches the shared inode"
	exec 3<&-
	chattr -a "$M/a"
}

test_running_program_cannot_be_written_through_another_name() {
	cp /bin/sleep "$M/prog"
	ln "$M/prog" "$M/prog2"
	"$M/prog" 60 &
	pid=$!
	trap 'kill $pid 2>/dev/null || true' EXIT
	wait_for_exe "$pid" "$M/prog"
	check_try ETXTBSY open "$M/prog2" w
	check_try ETXTBSY truncate "$M/prog2" 0
	check_eq "$(sum "$M/prog2")" "$(sum /bin/sleep)" "bytes of the running program"
	stop "$pid"
}

test_running_cow_program_keeps_its_inode_when_another_name_is_written() {
	start_cow_program
	check_try OK open "$M/prog2" w
	printf x | dd of="$M/prog2" conv=notrunc bs=1 count=1 2>/dev/null ||
		fail "write to the other name of a running cow program"
	check_eq "$(ino "$M/prog")" "$i" "running program's name keeps its inode"
	check_ne "$(ino "$M/prog2")" "$i" "written name has a copy"
	check_eq "$(head -c 1 "$M/prog2")" x "written byte"
	check_eq "$(sum "$M/prog")" "$(sum /bin/sleep)" "running program's bytes"
	kill -0 "$pid" || fail "the running program died"
	stop "$pid"
}

test_listxattr_with_buffer_sized_for_visible_names() {
	touch "$M/f"
	check_try OK setcow "$M/f" 1
	check_try OK setxattr "$M/f" "$XNS.a" 1
	check_eq "$(try getxattr "$L/f" trusted.cowlinkfs.cow)" 1 "hidden flag in the lower list"
	name=$XNS.a
	size=$((${#name} + 1))
	check_try "$size" listxattr_size "$M/f"
	check_try "$name" listxattr_sized "$M/f" "$size"
	check_try ERANGE listxattr_sized "$M/f" $((size - 1))
}

# cow=all would make the open writer's later writes go to both names.
test_remount_cow_all_with_open_writer_of_shared_file_is_ebusy() {
	printf old >"$M/a"
	ln "$M/a" "$M/b"
	out=/tmp/harden-holdwrite
	: >"$out"
	try holdwrite "$M/a" 60 >"$out" &
	holder=$!
	trap 'kill $holder 2>/dev/null || true' EXIT
	wait_for_line "$out" OK
	check_try EBUSY remount "$M" cow=all
	grep -q " $M cowlinkfs .*,cow=flag " /proc/mounts ||
		fail "mode changed: $(grep " $M " /proc/mounts)"
	stop "$holder"
	check_try OK remount "$M" cow=all
	grep -q " $M cowlinkfs .*,cow=all " /proc/mounts ||
		fail "mode not changed: $(grep " $M " /proc/mounts)"
	i=$(ino "$M/a")
	echo x >>"$M/b"
	check_ne "$(ino "$M/b")" "$i" "written name has a copy"
	check_eq "$(ino "$M/a")" "$i" "other name keeps its inode"
	check_eq "$(content "$M/a")" old "other name's bytes"
}

# A break publishes the name's new lower dentry while the lower directory
# is still locked: a rename or unlink of the name through the mount racing
# with the break never finds a lower dentry that is not ours (ESTALE), and
# the other name keeps its bytes whatever wins.
test_rename_and_unlink_racing_a_break_never_get_estale() {
	check_try OK setcow "$M" 1
	k=0
	while [ $k -lt 20 ]; do
		rm -f "$M/a" "$M/b" "$M/c"
		printf old >"$M/a"
		ln "$M/a" "$M/b"
		try append "$M/a" x >/tmp/harden-race &
		w=$!
		if [ $((k % 2)) = 0 ]; then
			got=$(try rename "$M/a" "$M/c")
		else
			got=$(try unlink "$M/a")
		fi
		wait "$w"
		check_eq "$got" OK "round $k: rename/unlink racing a break"
		case $(cat /tmp/harden-race) in
		OK | ENOENT) ;;
		*) fail "round $k: the writer got $(cat /tmp/harden-race)" ;;
		esac
		check_eq "$(content "$M/b")" old "round $k: the other name's bytes"
		[ ! -e "$M/a" ] || fail "round $k: a is still there"
		k=$((k + 1))
	done
}

# xfs_setattr_size() clears ATTR_SIZE from the caller's iattr when an empty
# file is truncated to 0 with ATTR_MTIME|ATTR_CTIME (O_TRUNC, ftruncate);
# cowlinkfs_setattr() re-tests attr->ia_valid & ATTR_SIZE after
# notify_change() and skips put_write_access(): the lower inode stays
# "open for writing" for as long as it is cached.
# lowers: xfs xfsr
test_truncating_an_empty_file_leaves_no_write_access_behind() {
	: >"$M/prog"
	check_try OK open "$M/prog" wt		# O_TRUNC of an existing empty file
	truncate -s 0 "$M/prog"			# ftruncate(2)
	cat /bin/true >>"$M/prog"
	chmod 755 "$M/prog"
	"$M/prog" || fail "exec through the mount: ETXTBSY (leaked write access)"
	"$L/prog" || fail "exec on the bare lower: ETXTBSY (leaked write access)"
	ln "$M/prog" "$M/prog2"
	check_try OK setcow "$M/prog" 1
}

# Append-only set through another name (or in the lower dir) after a
# descriptor was opened: setfl() and do_sys_ftruncate() test IS_APPEND on
# our per-name inode, whose flags are refreshed only at lookup, and
# cowlinkfs_real_io() lacks ovl_change_flags()'s IS_APPEND test.
# lowers: ext2 ext3 ext4 xfs xfsr
test_append_only_set_through_another_name_binds_open_descriptors() {
	# clearfl FD: F_SETFL without O_APPEND, then write "X" at offset 0
	clearfl() {
		perl -MFcntl -MErrno -e '
			open(my $f, ">>&=", $ARGV[0]) or die "fdopen: $!\n";
			my $fl = fcntl($f, F_GETFL, 0) or die "F_GETFL: $!\n";
			if (!fcntl($f, F_SETFL, $fl & ~O_APPEND)) {
				print $!{EPERM} ? "EPERM\n" : "$!\n";
				exit 0;
			}
			sysseek($f, 0, 0);
			print defined(syswrite($f, "X")) ? "OK\n" : "$!\n";' "$1"
	}
	# ftrunc FD: ftruncate(FD, 0)
	ftrunc() {
		perl -MErrno -e '
			open(my $f, ">>&=", $ARGV[0]) or die "fdopen: $!\n";
			print truncate($f, 0) ? "OK\n" :
			    ($!{EPERM} ? "EPERM\n" : "$!\n");' "$1"
	}
	trap 'chattr -a "$L/a" "$L/b" "$L/c" 2>/dev/null || true' EXIT
	# The bare lower first: what the kernel itself does.
	printf old >"$L/c"
	exec 3>>"$L/c"
	chattr +a "$L/c"
	check_eq "$(clearfl 3)" EPERM "bare fs: F_SETFL clearing O_APPEND"
	check_eq "$(ftrunc 3)" EPERM "bare fs: ftruncate"
	exec 3>&-
	printf old >"$M/a"
	ln "$M/a" "$M/b"
	exec 3>>"$M/a"
	chattr +a "$M/b"
	check_eq "$(clearfl 3)" EPERM "F_SETFL clearing O_APPEND through a"
	check_eq "$(ftrunc 3)" EPERM "ftruncate through a"
	exec 3>&-
	check_eq "$(content "$M/b")" old "bytes of the append-only file"
}

# open(O_TRUNC) and truncate(2) to 0 of a cow link copy every byte first
# (overlayfs copies none: copy_up.c "if (flags & O_TRUNC) ctx.stat.size = 0").
# lowers: ext4 xfs xfsr tmpfs
# owns-lower
test_truncating_a_cow_link_to_zero_needs_no_space_for_its_data() {
	check_try OK setcow "$M" 1
	for f in a c; do
		head -c 8M /dev/zero | tr '\0' x >"$M/$f"
		ln "$M/$f" "$M/$f.2"
	done
	ia=$(ino "$M/a")
	sa=$(sum "$M/a.2")
	sync
	free=$(stat -f -c '%f %S' "/lower/$FS" | awk '{print int($1 * $2 / 1024)}')
	trap 'rm -f "$L/fill" "$L/fill2"' EXIT
	# Leave less free space than the 8 MiB a copy of a would take.
	fallocate -l "$((free - 16384))K" "$L/fill" || fail "cannot fill the lower fs"
	dd if=/dev/zero of="$L/fill2" bs=1M count=12 2>/dev/null || true
	sync
	# ext4 keeps a pool of clusters that no write may take: probe.
	if dd if=/dev/zero of="$L/probe" bs=1M count=8 conv=fsync 2>/dev/null; then
		fail "8 MiB still fit: $(df -k "/lower/$FS" | tail -n 1)"
	fi
	rm -f "$L/probe"
	check_try OK open "$M/a" wt
	check_eq "$(stat -c %s "$M/a")" 0 "a after open(O_TRUNC)"
	check_ne "$(ino "$M/a")" "$ia" "a has an inode of its own"
	check_eq "$(sum "$M/a.2")" "$sa" "the other name keeps its bytes"
	check_try OK truncate "$M/c" 0
	check_eq "$(stat -c %s "$M/c")" 0 "c after truncate(2)"
	check_eq "$(stat -c %s "$M/c.2")" 8388608 "the other name keeps its size"
}

# A copy keeps the inode flags the work dir passed on to the tmpfile when
# the original has none to copy (copy_fileattr returns early); only
# PROJINHERIT is cleared from the work dir.
# lowers: ext2 ext3 ext4 xfs xfsr
test_copy_gets_no_inode_flags_from_the_work_dir() {
	printf old >"$M/a"
	check_try OK setcow "$M/a" 1
	check_try OK setcow "$M" 1
	ln "$M/a" "$M/b"
	umount "$M"
	rm -rf "$L/.cowlinkfs-work"
	trap 'chattr -S -A -d "$L" 2>/dev/null || true' EXIT
	chattr +S +A +d "$L"
	mount_clfs
	chattr -S -A -d "$L"
	check_eq "$(lsattr_flags "$L/a" | tr -cd SAd)" "" "the original's flags"
	echo x >>"$M/a"
	check_ne "$(ino "$M/a")" "$(ino "$M/b")" "a has a copy of its own"
	check_eq "$(lsattr_flags "$L/a" | tr -cd SAd)" "" "the copy's flags (sync, noatime, nodump)"
}

# Lower ioctls that only read but are not in cowlinkfs_ioctl_reads_only()
# now need write access to the mount and fail on a read-only descriptor
# of a cow link (EBADF) or on a read-only mount (EROFS).
# lowers: xfs xfsr
test_read_only_lower_ioctl_through_read_only_descriptor() {
	geom() {	# XFS_IOC_FSGEOMETRY (_IOR('X', 126, 256 bytes))
		perl -e 'open(my $f, "<", $ARGV[0]) or die "$!\n";
			my $b = "\0" x 256;
			print ioctl($f, 0x8100587e, $b) ? "OK\n" : "$!\n"' "$1"
	}
	make_cow_pair
	check_eq "$(geom "$L/a")" OK "XFS_IOC_FSGEOMETRY on the bare lower"
	check_eq "$(geom "$M/a")" OK "XFS_IOC_FSGEOMETRY, O_RDONLY, cow link"
	mount -o remount,ro "$M"
	check_eq "$(geom "$M/a")" OK "XFS_IOC_FSGEOMETRY on a read-only mount"
	mount -o remount,rw "$M"
}

# A read-only descriptor opened before its name was broken still points at
# the inode the other names keep; the EBADF test looks at the name's new
# inode, so a changing ioctl goes to the other names' inode.
# lowers: ext2 ext3
test_ioctl_through_old_read_only_fd_leaves_other_name_alone() {
	setver() {	# FS_IOC_SETVERSION through fd $1
		perl -e 'open(my $f, "<&=", $ARGV[0]) or die "$!\n";
			my $v = pack("q", 4242);
			print ioctl($f, 0x40087602, $v) ? "OK\n" : "$!\n"' "$1"
	}
	make_cow_pair
	v=$(lsattr -v "$M/b" | awk '{print $1}')
	exec 3<"$M/a"
	echo x >>"$M/a"		# a gets its own copy; fd 3 stays on the old inode
	setver 3 >/dev/null
	exec 3<&-
	check_eq "$(lsattr -v "$M/b" | awk '{print $1}')" "$v" "generation of the other name's inode"
}

# d_revalidate refreshes only the flags of a name's inode; may_setattr()
# checks ATTR_TOUCH ownership on our cached i_uid before our ->setattr
# refreshes it: after a chown in the lower dir, the former owner's
# touch(1) is refused by the lower fs, but only after a copy.
test_former_owner_touch_after_chown_in_lower_makes_no_copy() {
	check_try OK setcow "$M" 1
	printf old >"$M/a"
	chown 1000:1000 "$M/a"
	ln "$M/a" "$M/b"
	exec 3<"$M/a"		# a's inode, with owner 1000, stays cached
	chown 0:0 "$L/a"	# the administrator fixes ownership in the lower dir
	i=$(ino "$L/a")
	if as_user touch -c "$M/a" 2>/dev/null; then
		fail "uid 1000 touched root's 0644 file"
	fi
	check_eq "$(ino "$L/a")" "$i" "a keeps the shared inode"
	exec 3<&-
}

# A clone into a cow link on a lower fs without reflink is refused by the
# lower fs; the refusal must come before the break, not after a copy.
# lowers: ext2 ext3 ext4 tmpfs
test_clone_into_cow_link_without_lower_reflink_makes_no_copy() {
	make_cow_pair
	printf src >"$M/src"
	i=$(ino "$M/a")
	want=$(try clone "$L/src" "$L/src2")
	check_ne "$want" OK "FICLONE on the bare lower"
	check_try "$want" clone "$M/src" "$M/a"
	check_no_copy "$i" "refused clone"
	check_eq "$(content "$M/a")" old "bytes after a refused clone"
}

# ftrunc_fd FD: ftruncate(FD, 0) on the shell's descriptor FD (write-only)
ftrunc_fd() {
	perl -MErrno -e 'open(my $f, ">>&=", $ARGV[0]) or die "fdopen: $!\n";
		print truncate($f, 0) ? "OK\n" :
		    $!{ESTALE} ? "ESTALE\n" : "$!\n"' "$1"
}

# A write-only descriptor holds the shared inode read-only until its first
# write (cowlinkfs_open()).  If by then its name and every other name are
# gone, no name is left to protect: the write goes to the unnamed inode,
# as on the lower fs, and a descriptor whose name was renamed over while
# another name lives on writes an unnamed copy of its own.
test_writer_whose_names_are_all_removed_before_its_first_write_still_writes() {
	check_try OK setcow "$M" 1
	printf old >"$M/a"
	ln "$M/a" "$M/b"
	exec 3>>"$M/a"
	rm "$M/b" "$M/a"
	echo new >&3 || fail "write through the descriptor of a removed name"
	check_eq "$(cat /proc/self/fd/3 2>&1)" oldnew "bytes through the descriptor"
	exec 3>&-
	printf old >"$M/c"
	ln "$M/c" "$M/d"
	printf other >"$M/e"
	exec 3>>"$M/c"
	mv "$M/e" "$M/c"
	echo new >&3 || fail "write through the descriptor of a name renamed over"
	exec 3>&-
	check_eq "$(content "$M/d")" old "the other name's bytes"
	check_eq "$(content "$M/c")" other "the name renamed over"
	check_eq "$(ls -A "$L/.cowlinkfs-work")" "" "work dir"
}

# A descriptor of a name that was removed since it was opened still points
# at the inode the other names keep.  write() gives it an unnamed copy
# (cowlinkfs_break_writer), but cowlinkfs_setattr() breaks with
# cowlinkfs_break_size(), which takes "one link left" for "the inode is this
# name's": ftruncate() through the descriptor, or a truncating open of
# /proc/self/fd/N, truncates the other name.  With two other names the
# break finds the name unhashed and ftruncate() fails with ESTALE, after a copy.
test_truncating_through_a_removed_names_descriptor_leaves_other_names() {
	make_cow_pair
	exec 3>>"$M/a"
	rm "$M/a"
	check_eq "$(ftrunc_fd 3)" OK "ftruncate through the descriptor of a removed name"
	exec 3>&-
	check_eq "$(content "$M/b")" old "the other name's bytes after ftruncate"

	printf old >"$M/c"
	ln "$M/c" "$M/d"
	exec 4<"$M/c"
	rm "$M/c"
	sh -c ': >/proc/self/fd/4' || fail "truncating open of /proc/self/fd/4"
	exec 4<&-
	check_eq "$(content "$M/d")" old "the other name's bytes after open(O_TRUNC)"

	printf old >"$M/e"
	ln "$M/e" "$M/f"
	ln "$M/e" "$M/g"
	exec 3>>"$M/e"
	rm "$M/e"
	check_eq "$(ftrunc_fd 3)" OK "ftruncate with two other names left"
	exec 3>&-
	check_eq "$(content "$M/f")" old "the other names' bytes"
}

# The same through a read-only descriptor and a lower ioctl that writes:
# cowlinkfs_ro_fd_shared() refuses (EBADF) only a moved descriptor or a
# shared inode, and a removed name's inode with one other name left has
# one link.  FS_IOC_SETVERSION changes the other name's inode.
# lowers: ext2 ext3
test_ioctl_through_read_only_fd_of_removed_name_leaves_other_name() {
	setver() {	# FS_IOC_SETVERSION through fd $1
		perl -e 'open(my $f, "<&=", $ARGV[0]) or die "$!\n";
			my $v = pack("q", 4242);
			print ioctl($f, 0x40087602, $v) ? "OK\n" : "$!\n"' "$1"
	}
	make_cow_pair
	v=$(lsattr -v "$M/b" | awk '{print $1}')
	exec 3<"$M/a"
	rm "$M/a"
	setver 3 >/dev/null
	exec 3<&-
	check_eq "$(lsattr -v "$M/b" | awk '{print $1}')" "$v" "generation of the other name's inode"
}

# open(O_TRUNC) breaks the link with a copy of size 0 before the lower file
# is opened; when that open then fails (O_DIRECT on tmpfs: EINVAL), the
# call fails but the name has already lost its bytes.  The bare fs fails
# the same open before truncating anything.
# lowers: tmpfs
test_failed_truncating_open_loses_no_bytes() {
	odirect_trunc() {	# open(O_RDWR|O_TRUNC|O_DIRECT): OK or the errno name
		perl -MFcntl -MErrno -e '
			if (sysopen(my $f, $ARGV[0], O_RDWR | O_TRUNC | O_DIRECT)) {
				print "OK\n";
			} else {
				print $!{EINVAL} ? "EINVAL\n" : "$!\n";
			}' "$1"
	}
	printf old >"$L/c"
	check_eq "$(odirect_trunc "$L/c")" EINVAL "bare tmpfs"
	check_eq "$(content "$L/c")" old "bare tmpfs keeps the bytes"
	make_cow_pair
	check_eq "$(odirect_trunc "$M/a")" EINVAL "through the mount"
	check_eq "$(content "$M/a")" old "bytes of the name whose open failed"
	check_eq "$(content "$M/b")" old "bytes of the other name"
}

# cowlinkfs_set_cow() checks inode_owner_or_capable() on the name's own
# cowlinkfs inode, whose i_uid is refreshed only by operations on that
# name: after root took the file over through its other name, the former
# owner sets the flag through a descriptor opened while it owned the file.
# The bare fs's chattr through an old descriptor is refused (EPERM).
test_former_owner_cannot_set_the_flag_through_an_old_descriptor() {
	printf old >"$M/a"
	chown 1000:1000 "$M/a"
	ln "$M/a" "$M/b"
	out=/tmp/review-setcow
	rm -f "$out" "$out.go"
	# shellcheck disable=SC2016
	as_user perl -MErrno -e '
		$| = 1;
		open(my $f, "<", $ARGV[0]) or die "open: $!\n";
		print "OPEN\n";
		select(undef, undef, undef, 0.1) until -e $ARGV[1];
		my $v = pack("i", 1);
		print ioctl($f, 0x4004c702, $v) ? "OK\n" :	# COWLINKFS_IOC_SETCOW
		    $!{EPERM} ? "EPERM\n" : "$!\n";' "$M/a" "$out.go" >"$out" &
	pid=$!
	trap 'kill $pid 2>/dev/null || true' EXIT
	wait_for_line "$out" OPEN
	chown 0:0 "$M/b"	# root takes the file over (no flag: no copy)
	touch "$out.go"
	wait "$pid"
	check_eq "$(sed -n 2p "$out")" EPERM "COWLINKFS_IOC_SETCOW by the former owner"
	check_try ENODATA getxattr "$L/a" trusted.cowlinkfs.cow
}

# cowlinkfs_xattr_check() tests ownership for ACL changes on the name's
# cowlinkfs inode without refreshing it (cowlinkfs_setattr() does refresh,
# see t_harden.sh's touch test): the former owner's ACL removal passes our
# check, copies the file, and only then is refused by the lower fs.
test_former_owners_acl_removal_makes_no_copy() {
	check_try OK setcow "$M" 1
	printf old >"$M/a"
	chown 1000:1000 "$M/a"
	setfacl -m u:1:r "$M/a"
	ln "$M/a" "$M/b"
	exec 3<"$M/a"		# a's inode, owned by 1000, stays in memory
	chown 0:0 "$L/a"	# ownership moves to root in the lower dir
	i=$(ino "$L/a")
	check_eq "$(as_user try removexattr "$M/a" system.posix_acl_access)" EPERM \
		"former owner removing the ACL"
	check_eq "$(ino "$L/a")" "$i" "a keeps the shared inode"
	check_eq "$(ls -A "$L/.cowlinkfs-work")" "" "work dir"
	exec 3<&-
}

# chown() always asks to kill setuid/setgid (ATTR_KILL_S*ID).  notify_change()
# turns that into ATTR_MODE from our cached i_mode; when that is stale (the
# setuid bit was set through the other name before the file became COW),
# cowlinkfs_attr_changes() sees no change and makes no copy, and the lower
# notify_change() then clears setuid on the inode the other name keeps.
test_chown_to_same_owner_keeps_setuid_of_the_other_name() {
	printf old >"$M/a"
	chmod 755 "$M/a"
	ln "$M/a" "$M/b"
	exec 3<"$M/a"			# a's inode stays in memory, mode 755
	chmod 4755 "$M/b"		# not COW yet: the shared inode, no copy
	check_try OK setcow "$M/b" 1
	i=$(ino "$L/a")
	check_try OK chown "$M/a" 0 0	# clears setuid, on a's own copy only
	exec 3<&-
	check_eq "$(mode "$M/b")" 4755 "the other name keeps its setuid bit"
	check_ne "$(ino "$M/a")" "$i" "a has a copy of its own"
	check_eq "$(mode "$M/a")" 755 "a's setuid bit is cleared"
}

# A truncation copies only what it keeps, so the copy already has the new
# size and the lower notify_change() sees none: truncate(2), which passes
# no ATTR_MTIME (the fs marks the times only when the size changes), leaves
# the old mtime.  POSIX and the bare fs mark st_mtime.
test_truncate_to_a_smaller_size_marks_mtime() {
	make_cow_pair
	touch -d @1000000000 "$L/a"
	check_try OK truncate "$M/a" 1
	check_eq "$(content "$M/a")" o "bytes after truncate(2)"
	check_ne "$(stat -c %Y "$M/a")" 1000000000 "mtime after truncate(2) to a smaller size"
	check_eq "$(stat -c %Y "$M/b")" 1000000000 "the other name's mtime"
}

# The work directory found at mount is given back to the mounter, but what
# is in it stays if it is a directory (cowlinkfs_clean_workdir() skips
# them).  cowlinkfs_install() links the copy in as "#<inode number>": a
# directory planted under that name before the mount makes the break fail
# with EEXIST.  tmpfs hands out inode numbers in sequence, so the names are
# easy to plant.
# lowers: tmpfs
test_directories_left_in_work_dir_do_not_block_breaks() {
	umount "$M"
	w=$L/.cowlinkfs-work
	touch "$L/probe"
	p=$(ino "$L/probe")
	rm "$L/probe"
	chmod 777 "$w"		# whoever could write there before the mount
	k=1
	while [ $k -le 32 ]; do
		as_user mkdir "$w/#$(printf %x $((p + 32 + k)))"
		k=$((k + 1))
	done
	mount_clfs
	make_cow_pair
	i=$(ino "$M/a")
	echo x >>"$M/a" || fail "write to a cow link"
	check_ne "$(ino "$M/a")" "$i" "a has a copy of its own"
	check_eq "$(content "$M/b")" old "the other name's bytes"
}

# Lower ioctls are taken as writing unless _IOC_DIR is _IOC_READ.  TCGETS
# (isatty(), _IOC_NONE) on a write-only descriptor breaks the link though
# nothing is written, and on a read-only descriptor of a cow link it gets
# EBADF (EROFS on a read-only mount) instead of the lower fs's ENOTTY.
test_isatty_on_a_cow_link_makes_no_copy_and_gets_enotty() {
	tcgets() {	# TCGETS through the read-only fd $1
		perl -MErrno -e 'open(my $f, "<&=", $ARGV[0]) or die "$!\n";
			my $b = "\0" x 256;
			print ioctl($f, 0x5401, $b) ? "OK\n" :
			    $!{ENOTTY} ? "ENOTTY\n" : $!{EBADF} ? "EBADF\n" : "$!\n"' "$1"
	}
	make_cow_pair
	i=$(ino "$M/a")
	exec 3>>"$M/a"
	if [ -t 3 ]; then
		fail "a regular file is a terminal"
	fi
	exec 3>&-
	check_no_copy "$i" "isatty() on a write-only descriptor"
	exec 3<"$M/a"
	check_eq "$(tcgets 3)" ENOTTY "TCGETS on a read-only descriptor"
	exec 3<&-
}

# A break writes the copy under the writer's RLIMIT_FSIZE: its first step
# (notify_change(ATTR_SIZE) on the temp file) sends SIGXFSZ, which kills a
# writer that changes one byte at offset 0 of a file larger than its limit.
# The bare fs lets that write through; the doc promises EFBIG at worst.
test_break_under_small_file_size_limit_does_not_kill_the_writer() {
	limited_write() {	# pwrite "y" at 0 of $1 with a 512 KiB (dash) limit
		sh -c 'ulimit -f 1024 && exec try write "$1" 0 y' sh "$1" 2>/dev/null || true
	}
	head -c 4M /dev/zero | tr '\0' x >"$L/c"
	check_eq "$(limited_write "$L/c")" OK "bare lower"
	check_try OK setcow "$M" 1
	head -c 4M /dev/zero | tr '\0' x >"$M/a"
	ln "$M/a" "$M/b"
	got=$(limited_write "$M/a")
	case $got in
	OK | EFBIG) ;;
	*) fail "writer under RLIMIT_FSIZE got '$got' (killed by SIGXFSZ)" ;;
	esac
	check_eq "$(head -c 1 "$M/b")" x "the other name's first byte"
}

# An xattr in a namespace the lower fs has no handler for is refused by the
# lower fs (EOPNOTSUPP) only after the break: cowlinkfs_xattr_check() lets
# every getxattr error but ENODATA through to the break ("let the lower fs
# answer").  The doc's security model: EOPNOTSUPP makes no copy.
test_xattr_the_lower_fs_has_no_namespace_for_makes_no_copy() {
	make_cow_pair
	i=$(ino "$M/a")
	printf src >"$L/src"
	check_try EOPNOTSUPP setxattr "$L/src" foo.bar 1
	check_try EOPNOTSUPP setxattr "$M/a" foo.bar 1
	check_no_copy "$i" "xattr in an unknown namespace"
}

# noatime_open PATH: open(PATH, O_RDWR|O_NOATIME) as the user tester
# (uid 1000): OK or the errno name
noatime_open() {
	# shellcheck disable=SC2016
	as_user perl -MFcntl=O_RDWR,O_NOATIME -MErrno -e '
		if (sysopen(my $f, $ARGV[0], O_RDWR | O_NOATIME)) {
			print "OK\n";
		} else {
			print $!{EPERM} ? "EPERM\n" : "$!\n";
		}' "$1"
}

# O_RDONLY|O_TRUNC takes write access only in handle_truncate(), after
# ->open: the running program's own name refuses it (ETXTBSY) with its
# bytes and inode kept, as on the bare fs; the break comes at the
# truncation, never before the refusal.
test_read_only_truncating_open_of_a_running_cow_program_loses_no_bytes() {
	cp /bin/sleep "$L/c"
	"$L/c" 60 &
	p0=$!
	trap 'kill $p0 2>/dev/null || true' EXIT
	wait_for_exe "$p0" "$L/c"
	check_try ETXTBSY open "$L/c" rt
	stop "$p0"

	start_cow_program
	check_try ETXTBSY open "$M/prog" rt
	check_eq "$(ino "$M/prog")" "$i" "the program's name keeps its inode"
	check_eq "$(sum "$M/prog")" "$(sum /bin/sleep)" "the program's name keeps its bytes"
	check_eq "$(nlink "$M/prog2")" 2 "the other name's link count"
	check_eq "$(ls -A "$L/.cowlinkfs-work")" "" "work dir"
	stop "$pid"
}

# chown() by an owner outside the file's group kills setgid even without
# group exec (setattr_should_drop_sgid(), 6.1.192): that is a change, so
# it breaks the link, and the other name keeps its setgid bit.
test_non_member_owner_chown_keeps_setgid_of_the_other_name() {
	printf old >"$L/c"
	chown 1000:0 "$L/c"
	chmod 2644 "$L/c"
	check_eq "$(as_user try chown "$L/c" -1 -1)" OK "bare fs: chown(-1, -1) by the owner"
	check_eq "$(mode "$L/c")" 644 "bare fs: a non-member's chown drops setgid"

	printf old >"$M/a"
	chown 1000:0 "$M/a"
	chmod 2644 "$M/a"
	check_try OK setcow "$M/a" 1
	check_try OK setcow "$M" 1
	ln "$M/a" "$M/b"
	i=$(ino "$M/a")
	check_eq "$(as_user try chown "$M/a" -1 -1)" OK "chown(-1, -1) by the owner"
	check_eq "$(mode "$M/b")" 2644 "the other name keeps its setgid bit"
	check_eq "$(ino "$M/b")" "$i" "the other name keeps its inode"
	check_ne "$(ino "$M/a")" "$i" "a has a copy of its own"
	check_eq "$(mode "$M/a")" 644 "a's setgid bit is cleared, as on the bare fs"
}

# may_open() tests O_NOATIME against our per-name inode, whose owner may
# be stale after a chown in the lower dir (or through another name): the
# former owner's O_RDWR|O_NOATIME open is EPERM, as on the bare fs, and
# copies nothing.
test_former_owner_noatime_open_is_eperm_and_makes_no_copy() {
	printf old >"$L/c"
	chmod 666 "$L/c"
	check_eq "$(noatime_open "$L/c" 2>&1)" EPERM "bare fs: O_NOATIME by a non-owner"

	check_try OK setcow "$M" 1
	printf old >"$M/a"
	chown 1000:1000 "$M/a"
	chmod 666 "$M/a"
	ln "$M/a" "$M/b"
	exec 3<"$M/a"		# a's inode, owned by 1000, stays in memory
	chown 0:0 "$L/a"	# ownership moves to root in the lower dir
	i=$(ino "$L/a")
	got=$(noatime_open "$M/a" 2>&1)
	exec 3<&-
	check_eq "$got" EPERM "O_NOATIME open by the former owner"
	check_eq "$(ino "$L/a")" "$i" "a keeps the shared inode"
	check_eq "$(ls -A "$L/.cowlinkfs-work")" "" "work dir"
}

# do_truncate() decides whether to kill setuid on our inode, whose mode
# may be stale (setuid set through the other name): the truncated name
# loses setuid as on the bare fs, and the other name keeps it.
test_truncate_through_a_stale_name_drops_setuid_as_the_bare_fs_does() {
	printf old >"$L/c"
	chown 1000:1000 "$L/c"
	chmod 4755 "$L/c"
	check_eq "$(as_user try truncate "$L/c" 1)" OK "bare fs: truncate by the owner"
	check_eq "$(mode "$L/c")" 755 "bare fs: truncate drops setuid"

	printf old >"$M/a"
	chown 1000:1000 "$M/a"
	chmod 755 "$M/a"
	ln "$M/a" "$M/b"
	exec 3<"$M/a"			# a's inode stays in memory, mode 755
	chmod 4755 "$M/b"		# not COW yet: the shared inode, no copy
	check_try OK setcow "$M/b" 1
	i=$(ino "$M/a")
	check_eq "$(as_user try truncate "$M/a" 1)" OK "truncate by the owner"
	exec 3<&-
	check_ne "$(ino "$M/a")" "$i" "a has a copy of its own"
	check_eq "$(mode "$M/b")" 4755 "the other name keeps its setuid bit"
	check_eq "$(mode "$M/a")" 755 "the truncated name lost setuid, as on the bare fs"
}

# A descriptor of a removed name that writes to an inode another name
# keeps would go on writing that name's bytes once cow=all made it COW:
# the remount counts it as a writer of a shared file (EBUSY), as it does
# for a file with several links.
test_remount_cow_all_with_a_removed_names_writer_open_is_ebusy() {
	printf old >"$M/a"
	ln "$M/a" "$M/b"
	exec 3>>"$M/a"
	printf x >&3		# not COW: the shared inode
	rm "$M/a"
	check_eq "$(content "$M/b")" oldx "b before the remount"
	got=$(try remount "$M" cow=all)
	printf y >&3 || true
	exec 3>&-
	check_eq "$got" EBUSY "remount to cow=all with a writer of a removed name"
	check_eq "$(awk -v m="$M" '$2 == m { print $4 }' /proc/mounts |
		tr , '\n' | grep -c '^cow=all')" 0 "the mount stays cow=flag"
	# Not COW, as before the remount: a plain hard link, written through.
	check_eq "$(content "$M/b")" oldxy "b's bytes after a write through the removed name"
}

# COWLINKFS_IOC_SETCOW on a name whose inode a removed name's descriptor
# still writes: that writer would go on writing the flagged file.
test_setcow_with_a_removed_names_writer_open_is_etxtbsy() {
	printf old >"$M/a"
	ln "$M/a" "$M/b"
	exec 3>>"$M/a"
	rm "$M/a"
	check_try ETXTBSY setcow "$M/b" 1
	exec 3>&-
	check_try OK setcow "$M/b" 1
}

# The numbers the flag ioctls had in 0.1.0 ('f' 0xc0 and 0xc1) mean
# nothing now: ENOTTY, and a write-only descriptor of a cow link that
# sends them does not break the link (a refused call copies nothing).
test_old_flag_ioctl_numbers_are_enotty_and_break_nothing() {
	check_try OK setcow "$M" 1
	printf old >"$M/a"
	ln "$M/a" "$M/b"
	ino=$(ino "$M/a")
	# shellcheck disable=SC2016
	got=$(perl -MErrno -e '
		open(my $f, ">>", $ARGV[0]) or die "open: $!\n";
		for my $cmd (0x400466c1, 0x800466c0) {
			my $v = pack("i", 1);
			print ioctl($f, $cmd, $v) ? "OK " :
			    $!{ENOTTY} ? "ENOTTY " : "$! ";
		}' "$M/a")
	check_eq "$got" "ENOTTY ENOTTY " "the old SETCOW and GETCOW numbers"
	check_eq "$(ino "$M/a")" "$ino" "a's inode"
	check_eq "$(nlink "$M/b")" 2 "b's link count"
}

# --- the third review: the work dir, refusals before copying, descriptors

# group_shared_root: the lower root is a group-shared tree (2775, group
# 1000), so that uid 1000 may remove and rename what is in it
group_shared_root() {
	chgrp 1000 "$L"
	chmod 2775 "$L"
}

# work_dir_attack NAME CMD: with a fresh COW pair $M/NAME.a, $M/NAME.b,
# uid 1000, a group writer of the lower root, runs CMD in $L; a write
# through NAME.a then breaks the link as if nothing had happened, and the
# work dir is back at its name, root's, 0700, without ACLs, and empty.
work_dir_attack() {
	printf old >"$M/$1.a"
	ln "$M/$1.a" "$M/$1.b"
	i=$(ino "$M/$1.a")
	(cd "$L" && as_user sh -c "$2") || fail "$1: uid 1000 could not: $2"
	echo new >>"$M/$1.a" || fail "$1: a write after: $2"
	check_ne "$(ino "$M/$1.a")" "$i" "$1: the written name got a copy"
	check_eq "$(ino "$L/$1.a")" "$(ino "$M/$1.a")" "$1: the lower dir agrees"
	check_eq "$(content "$M/$1.b")" old "$1: the other name keeps its bytes"
	check_workdir_private "$1"
	check_eq "$(ls -A "$L/.cowlinkfs-work")" "" "$1: work dir empty"
	[ ! -e "$M/.cowlinkfs-work" ] || fail "$1: the work dir shows through the mount"
}

# Whoever may write the lower root may remove the (empty) work dir, rename
# it within the root or put something else at its name; none of it may
# stop or litter a break.
test_group_writer_of_lower_root_cannot_stop_or_litter_breaks() {
	group_shared_root
	check_try OK setcow "$M" 1
	W=.cowlinkfs-work
	work_dir_attack rmdir "rmdir $W"
	work_dir_attack rename "mv $W stolen"
	[ ! -e "$L/stolen" ] || fail "the renamed work dir did not go back"
	work_dir_attack file "rmdir $W && echo mine >$W"
	work_dir_attack symlink "rmdir $W && ln -s /etc $W"
	work_dir_attack dir "rmdir $W && mkdir $W && echo mine >$W/f"
	work_dir_attack aside "mv $W aside && mkdir $W && chmod 777 $W"
	[ ! -e "$L/aside" ] || fail "our old work dir, moved aside, is still there"
	# Whatever they put at the name is theirs, moved aside, unchanged.
	n=0
	for f in "$L"/.cowlinkfs-work.*; do
		n=$((n + 1))
		check_eq "$(stat -c %u:%g "$f")" 1000:1000 "$f: owner"
		if [ -f "$f" ] && [ ! -L "$f" ]; then
			check_eq "$(content "$f")" mine "$f: content"
		elif [ -d "$f" ] && [ -e "$f/f" ]; then
			check_eq "$(content "$f/f")" mine "$f/f: content"
		fi
	done
	check_eq "$n" 4 "what uid 1000 put at the name, moved aside"
}

# Renamed within one directory, a directory needs no write permission of
# its own: a group writer of the lower root can put another user's
# directory at the work dir's name.  It must not be taken, changed or
# emptied.
test_another_users_directory_at_the_work_dir_name_is_left_alone() {
	group_shared_root
	check_try OK setcow "$M" 1
	mkdir "$L/alice"
	echo notes >"$L/alice/notes"
	chown -R 1001:1001 "$L/alice"
	m=$(mode "$L/alice")
	printf old >"$M/a"
	ln "$M/a" "$M/b"
	(cd "$L" && as_user sh -c 'mv .cowlinkfs-work aside && mv alice .cowlinkfs-work') ||
		fail "uid 1000 could not move the directories"
	echo new >>"$M/a" || fail "a write after the swap"
	check_workdir_private "after the swap"
	set -- "$L"/.cowlinkfs-work.*
	check_eq "$(content "$1/notes")" notes "alice's file"
	check_eq "$(owner "$1")" 1001:1001 "alice's directory's owner"
	check_eq "$(mode "$1")" "$m" "alice's directory's mode"
	check_eq "$(content "$M/b")" old "the other name"
	[ ! -e "$L/aside" ] || fail "our work dir, moved aside, did not go back"
}

# A COW link in an append-only directory cannot be broken (its name
# cannot be renamed over): every change is refused with the lower fs's
# EPERM before anything is copied, at open for the shell's >>.
# lowers: ext2 ext3 ext4 xfs xfsr
test_cow_link_in_append_only_dir_is_eperm_before_any_copy() {
	mkdir "$M/d"
	check_try OK setcow "$M/d" 1
	printf old >"$M/d/a"
	ln "$M/d/a" "$M/d/b"
	i=$(ino "$M/d/a")
	trap 'chattr -a -i "$L/d" 2>/dev/null || true' EXIT
	for f in +a +i; do
		chattr $f "$L/d"
		w0=$(stat -c %y "$L/.cowlinkfs-work")
		err=$(sh -c 'echo x >>"$1"' sh "$M/d/a" 2>&1) && fail "chattr $f dir: >> worked"
		case $err in
		*"Operation not permitted"*) ;;
		*) fail "chattr $f dir: the shell's >> said '$err', expected EPERM" ;;
		esac
		check_try EPERM open "$M/d/a" w
		check_try EPERM open "$M/d/a" rw
		check_try EPERM open "$M/d/a" wa
		check_try EPERM truncate "$M/d/a" 1
		check_try EPERM chmod "$M/d/a" 600
		check_try EPERM setxattr "$M/d/a" "$XNS.k" v
		check_eq "$(try mmapwrite "$M/d/a" 0 X)" EPERM "chattr $f dir: shared mmap write"
		check_no_copy "$i" "chattr $f dir" "$M/d"
		check_eq "$(stat -c %y "$L/.cowlinkfs-work")" "$w0" "chattr $f dir: work dir untouched"
		check_eq "$(content "$M/d/a")" old "chattr $f dir: bytes"
		chattr "-${f#+}" "$L/d"
	done
	check_try OK append "$M/d/a" x
	check_ne "$(ino "$M/d/a")" "$i" "the flag cleared, the name breaks"
	check_eq "$(content "$M/d/b")" old "the other name"
}

# The shell's >> opens O_WRONLY|O_CREAT|O_APPEND; dash reports any failed
# write of echo as "I/O error", so the refusal must come at open.
# lowers: ext2 ext3 ext4 xfs xfsr
test_shell_append_to_append_only_cow_link_is_eperm_at_open() {
	make_cow_pair
	i=$(ino "$M/a")
	unflag_on_exit
	chattr +a "$L/a"
	err=$(sh -c 'echo x >>"$1"' sh "$M/a" 2>&1) && fail ">> to an append-only cow link worked"
	case $err in
	*"Operation not permitted"*) ;;
	*) fail "the shell's >> said '$err', expected EPERM" ;;
	esac
	check_try EPERM append "$M/a" x
	check_try EPERM open "$M/b" wa
	check_no_copy "$i" "append-only"
}

# An append-only or immutable work dir (root's doing) refuses breaks
# before anything is copied.
# lowers: ext2 ext3 ext4 xfs xfsr
test_append_only_or_immutable_work_dir_refuses_breaks_before_copying() {
	make_cow_pair
	i=$(ino "$M/a")
	W=$L/.cowlinkfs-work
	trap 'chattr -a -i "$W" 2>/dev/null || true' EXIT
	for f in a i; do
		chattr +$f "$W"
		check_try EPERM append "$M/a" x
		check_try EPERM chmod "$M/a" 600
		check_try EPERM open "$M/a" rw
		chattr -$f "$W"
		check_no_copy "$i" "chattr +$f work dir"
	done
	check_try OK append "$M/a" x
	check_name_broken "$i"
}

# truncate(2) to the size the file has still changes it on ext3 and ext4
# (ext4_truncate() marks mtime and ctime): it breaks the link, and the
# other name keeps its times.
# lowers: ext3 ext4
test_truncate_to_the_current_size_breaks_and_keeps_the_other_names_times() {
	make_cow_pair
	touch -d @1000000000 "$L/a"
	printf old >"$L/ref"
	touch -d @1000000000 "$L/ref"
	check_try OK truncate "$L/ref" 3
	check_ne "$(stat -c %Y "$L/ref")" 1000000000 "the bare lower marks mtime"
	i=$(ino "$M/a")
	check_try OK truncate "$M/a" 3
	check_name_broken "$i"
	check_eq "$(stat -c %Y "$M/b")" 1000000000 "the other name's mtime"
}

# A descriptor stands for the name it was opened through: a reader opened
# before a break of its name reads the copy from then on, and everything
# it says agrees with what it reads (fstat, copy_file_range, sendfile,
# /proc/PID/fd/N, linkat).  The other name keeps the old bytes.
test_reader_descriptor_reports_the_inode_it_reads_after_a_break() {
	make_cow_pair
	exec 3<"$M/a"
	echo appended >>"$M/a"
	n=$(stat -c %s "$M/a")
	b1=$(blocks "$M/a")
	# shellcheck disable=SC2046 # six numbers
	set -- $(try fdreport 3 "$M/copy")
	# (xfs trims its speculative preallocation when it likes)
	b2=$(blocks "$M/a")
	check_eq "$1" "$(ino "$M/a")" "st_ino of fstat(fd)"
	check_eq "$2" "$n" "st_size of fstat(fd)"
	[ "$3" = "$b1" ] || [ "$3" = "$b2" ] ||
		fail "st_blocks of fstat(fd): $3, the name's $b1, then $b2"
	check_eq "$4" "$n" "bytes read through fd"
	check_eq "$5" "$n" "bytes copy_file_range() copied from fd"
	check_eq "$6" "$n" "bytes sendfile() sent from fd"
	check_eq "$(content "$M/copy")" "$(content "$M/a")" "what copy_file_range() copied"
	check_eq "$(cat /proc/$$/fd/3)" "$(content "$M/a")" "a reopen of /proc/PID/fd/N"
	ln -L /proc/$$/fd/3 "$M/c" || fail "linkat() of /proc/PID/fd/N"
	check_eq "$(ino "$M/c")" "$(ino "$M/a")" "the new name of the descriptor's inode"
	# A change through the descriptor is a change of its name.
	perl -e 'chmod(0600, \*STDIN) or die "fchmod: $!\n"' <&3 || fail "fchmod"
	check_eq "$(mode "$M/a")" 600 "fchmod through the reader"
	check_eq "$(mode "$M/b")" 644 "the other name's mode"
	check_eq "$(content "$M/b")" old "the other name's bytes"
	exec 3<&-
}

# A broken name larger than 2 GiB syncs like any other: the copy and its
# directory are opened with O_LARGEFILE to sync them.
# lowers: ext4 xfs
# matrix: every
test_sync_after_a_break_of_a_file_over_2_gib_works() {
	mount -o remount,cow=all "$M" || fail "remount,cow=all"
	xfs_io -f -c "truncate 2200m" -c "pwrite -q 0 4k" "$M/big" || fail "a sparse 2.2 GB file"
	ln "$M/big" "$M/big.2"
	ln "$M/big" "$M/big.3"
	check_eq "$(xfs_io -c "pwrite -q -S 0xcd 0 4k" -c fdatasync -c fsync "$M/big" 2>&1)" "" \
		"a break, fdatasync and fsync"
	check_eq "$(head -c 4096 /dev/zero |
		dd of="$M/big.2" bs=4k conv=notrunc oflag=dsync status=none 2>&1)" "" \
		"a break by an O_DSYNC write"
	check_eq "$(xfs_io -r -c fsync "$M/big" 2>&1)" "" "fsync once synced"
	check_ne "$(ino "$M/big")" "$(ino "$M/big.3")" "the first break"
	check_ne "$(ino "$M/big.2")" "$(ino "$M/big.3")" "the second break"
}
