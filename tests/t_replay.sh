# shellcheck shell=sh
# Crash consistency of a link break at every point where a power cut could
# leave the disk.  The test makes its own small filesystem of type $FS on a
# dm-log-writes device (Documentation/admin-guide/device-mapper/
# log-writes.rst in the kernel), which logs each write once it is on stable
# storage (a plain write when a later flush covers it, a FUA write at once)
# and every flush.  Three cow pairs are set up, the mark
# "setup" is logged, and each pair is broken through cowlinkfs: an append,
# a 4 KiB overwrite in place, a truncate.  The log is then replayed
# (tests/helpers/replaylog.c) onto zeroes up to every flush or FUA after the
# mark, and also up to just before the last write preceding each (a point
# where the disk promised nothing, but the journal must still make it
# consistent), and each image is checked: recovery by mount, fsck, then
# every name, then the next cowlinkfs mount.  On ext2 (no journal) the same
# points are measured and reported; only fsck -y repairing them to a
# mountable fs with the untouched names intact is asserted.  $M and $L are
# not used.  make test replays the two journals, jbd2 on ext4 and the xfs
# log on xfsr (FULL=1 adds ext3 and xfs, whose journals are the same code).
# lowers: ext2 ext3 ext4 xfs xfsr
# matrix: core

# The other worker may replay on another lower at the same time, with a
# /tmp of its own but the same loop and device-mapper devices: every name
# says the lower (losetup -j finds a loop device by its file's path).
RD=/tmp/replay-$FS-data		# the disk the filesystem is made on
RL=/tmp/replay-$FS-log		# the log of its writes
RI=/tmp/replay-$FS-img		# a replayed image
RM=/tmp/replay-$FS-mnt		# the filesystem (recorded or replayed)
RC=/tmp/replay-$FS-cow		# cowlinkfs over $RM/tree
RS=/tmp/replay-$FS-states	# one line per name and point: POINT NAME STATE
RF=/tmp/replay-$FS-fsck		# the output of the last fsck
LW=clfs-lw-$FS			# the log-writes device
RLOOP=

# replay_cleanup: unmount, remove and detach whatever the test made; also
# run first, for anything a killed run left.  Never fails (an EXIT trap).
replay_cleanup() {
	cd /
	for m in "$RC" "$RM"; do
		if mountpoint -q "$m"; then
			umount "$m" 2>/dev/null || umount -l "$m" || true
		fi
	done
	if dmsetup info "$LW" >/dev/null 2>&1; then
		dmsetup remove --retry "$LW" || dmsetup remove --force "$LW" || true
	fi
	for f in "$RD" "$RL" "$RI"; do
		for d in $(losetup -j "$f" 2>/dev/null | cut -d: -f1); do
			losetup -d "$d" || true
		done
	done
	rm -f "$RD" "$RL" "$RL.list" "$RI" "$RS" "$RF" /tmp/replay-points
	rmdir "$RM" "$RC" 2>/dev/null || true
}

# replay_say LINE: to the test log and the guest console
replay_say() {
	echo "$1"
	echo "# replay $FS: $1" >/dev/console 2>/dev/null || true
}

# replay_sizes: $RSIZE and $LSIZE in MiB.  mkfs.xfs (6.1) refuses a fs
# under 300 MiB and writes its whole 64 MiB log, more than a 64 MiB log of
# writes holds, unless it sees the three variables fstests sets (it then
# makes a 64 MiB fs with a 5 MiB log); without them: 300 MiB, log 192 MiB.
replay_sizes() {
	RSIZE=64
	LSIZE=64
	case $FS in
	xfs | xfsr)
		truncate -s 64M "$RI"
		if ! TEST_DIR=/tmp TEST_DEV="$RI" QA_CHECK_FS=1 \
			mkfs.xfs -q -f -K "$RI" >/dev/null 2>&1; then
			RSIZE=300
			LSIZE=192
		fi
		rm -f "$RI"
		;;
	esac
}

# replay_mkfs DEV: the filesystem $FS on DEV.  4 KiB blocks, so that the
# 4 KiB overwrite of c is one write (a bio is replayed whole or not at
# all); no discards and no lazy init, so that mkfs writes everything once.
replay_mkfs() {
	case $FS in
	ext2) mkfs.ext2 -q -F -b 4096 -I 256 -E nodiscard,lazy_itable_init=0 "$1" ;;
	ext3 | ext4)
		mkfs."$FS" -q -F -b 4096 -I 256 \
			-E nodiscard,lazy_itable_init=0,lazy_journal_init=0 "$1"
		;;
	xfs | xfsr)
		rl=0
		[ "$FS" = xfs ] || rl=1
		if [ "$RSIZE" = 64 ]; then
			TEST_DIR=/tmp TEST_DEV="$1" QA_CHECK_FS=1 \
				mkfs.xfs -q -f -K -m reflink=$rl "$1"
		else
			mkfs.xfs -q -f -K -m reflink=$rl "$1"
		fi
		;;
	*) fail "no replay test for $FS" ;;
	esac
}

# replay_record: make the fs on a log-writes device, three cow pairs
# (a/b "old", c/d 200 KiB of random bytes, e/f "old"), the mark "setup",
# then break a, c and e through cowlinkfs.  Leaves the log in $RL, its
# listing in $RL.list, the index of the mark in $SETUP, the old inode
# numbers and the old and new checksums in OLD_x, SUM_OLD_x, SUM_NEW_x.
replay_record() {
	case $FS in
	xfs | xfsr) need="mkfs.xfs xfs_repair" ;;
	*) need="mkfs.$FS e2fsck" ;;
	esac
	for c in dmsetup losetup blockdev mountpoint replaylog try md5sum $need; do
		command -v "$c" >/dev/null || fail "the replay test needs $c"
	done
	replay_cleanup
	trap replay_cleanup EXIT
	mkdir -p "$RM" "$RC"
	replay_sizes
	truncate -s "${RSIZE}M" "$RD"
	truncate -s "${LSIZE}M" "$RL"
	dl=$(losetup -f --show "$RD")
	ll=$(losetup -f --show "$RL")
	dmsetup create "$LW" --table "0 $(blockdev --getsz "$dl") log-writes $dl $ll"
	[ -b /dev/mapper/$LW ] || dmsetup mknodes "$LW"
	replay_mkfs /dev/mapper/$LW >/dev/null
	mount /dev/mapper/$LW "$RM"
	mkdir "$RM/tree"
	mount -t cowlinkfs "$RM/tree" "$RC"
	check_try OK setcow "$RC" 1
	printf old >"$RC/a"
	dd if=/dev/urandom of="$RC/c" bs=4k count=50 2>/dev/null
	printf old >"$RC/e"
	for p in "a b" "c d" "e f"; do
		# shellcheck disable=SC2086
		set -- $p
		check_try OK setcow "$RC/$1" 1
		ln "$RC/$1" "$RC/$2"
		check_eq "$(nlink "$RC/$1")" 2 "setup: nlink of $1"
	done
	umount "$RC"
	sync
	OLD_a=$(ino "$RM/tree/a")
	OLD_c=$(ino "$RM/tree/c")
	OLD_e=$(ino "$RM/tree/e")
	SUM_OLD_a=$(sum "$RM/tree/a")
	SUM_OLD_c=$(sum "$RM/tree/c")
	SUM_OLD_e=$SUM_OLD_a
	# fsync(2) of the device is a flush: every write of the setup is
	# logged before the mark (ext2's sync issues none).
	sync /dev/mapper/$LW
	dmsetup message "$LW" 0 mark setup
	# The mount empties the work dir; then the three breaks.
	mount -t cowlinkfs "$RM/tree" "$RC"
	echo x >>"$RC/a"
	dd if=/dev/urandom of="$RC/c" bs=4k count=1 conv=notrunc 2>/dev/null
	truncate -s 0 "$RC/e"
	SUM_NEW_a=$(printf 'oldx\n' | md5sum | cut -d' ' -f1)
	SUM_NEW_c=$(sum "$RC/c")
	SUM_NEW_e=$(md5sum </dev/null | cut -d' ' -f1)
	# A copy whose append is not on disk yet may have the new size with
	# zeroes (ext4 journals the size of an append into an allocated block
	# before the data is written): an unsynced append, no partial copy.
	SUM_ZERO_a=$({ printf old; head -c 2 /dev/zero; } | md5sum | cut -d' ' -f1)
	for x in a c e; do
		pair_vars $x
		check_ne "$(ino "$RC/$x")" "$ps_old" "live: $x was broken"
		check_eq "$(sum "$RC/$x")" "$ps_sn" "live: new bytes of $x"
	done
	check_eq "$(ino "$RC/b")" "$OLD_a" "live: b keeps the old inode"
	umount "$RC"
	umount "$RM"
	sync /dev/mapper/$LW
	dmsetup message "$LW" 0 mark "done"
	st=$(dmsetup status "$LW")
	case $st in
	*logging_disabled*) fail "the log of writes overflowed $LSIZE MiB: $st" ;;
	esac
	dmsetup remove --retry "$LW"
	losetup -d "$dl"
	losetup -d "$ll"
	rm -f "$RD"
	replaylog list "$RL" >"$RL.list"
	SETUP=$(replaylog find "$RL" setup)
	replaylog find "$RL" dm-log-writes-end >/dev/null ||
		fail "the log does not end with the target's end mark"
	: >"$RS"
}

# replay_points EXTRA: the points to check, one "COUNT KIND" a line, COUNT
# the number of entries replayed: the mark "setup", every flush or FUA
# after it (KIND: its flags), with EXTRA=1 the state without the last write
# before each of them (KIND "before"; beyond the first 20 of more than 40
# flushes, none), and the end.  Points that give the same disk (no write
# between them) are checked once.
replay_points() {
	awk -v setup="$SETUP" -v extra="$1" '
	function emit(c, kind) {
		if (dc[c] in seen)
			return
		seen[dc[c]] = 1
		print c, kind
	}
	{ fl[$1] = $2; nr[$1] = $4; n = $1 + 1 }
	END {
		d = 0
		for (i = 0; i < n; i++) {
			dc[i] = d
			if (nr[i] > 0)
				d++
		}
		dc[n] = d
		for (i = setup + 1; i < n; i++)
			if (fl[i] ~ /flush|fua/)
				nf++
		emit(setup + 1, "setup")
		last = -1
		for (i = setup + 1; i < n; i++) {
			if (nr[i] > 0)
				last = i
			if (fl[i] !~ /flush|fua/)
				continue
			k++
			if (extra && last > setup && (nf <= 40 || k <= 20))
				emit(last, "before")
			emit(i + 1, fl[i])
		}
		emit(n, "final")
	}' "$RL.list"
}

# replay_mount: mount $RI on $RM through a loop device of its own
replay_mount() {
	RLOOP=$(losetup -f --show "$RI") || return 1
	if ! mount "$RLOOP" "$RM"; then
		losetup -d "$RLOOP"
		return 1
	fi
}

replay_umount() {
	umount "$RM"
	losetup -d "$RLOOP"
}

# replay_fsck -n|-y: fsck of $RI (not mounted), output in $RF
replay_fsck() {
	case $FS in
	xfs | xfsr) xfs_repair "$1" -f "$RI" >"$RF" 2>&1 ;;
	*) e2fsck -f "$1" "$RI" >"$RF" 2>&1 ;;
	esac
}

# pair_vars X: for the name X (a, c or e) the old inode number $ps_old,
# the checksums of the old and new bytes $ps_so and $ps_sn, and $ps_sz
# that of a copy whose write is not on disk yet, other than the old bytes
pair_vars() {
	case $1 in
	a) ps_old=$OLD_a ps_so=$SUM_OLD_a ps_sn=$SUM_NEW_a ps_sz=$SUM_ZERO_a ;;
	c) ps_old=$OLD_c ps_so=$SUM_OLD_c ps_sn=$SUM_NEW_c ps_sz=$SUM_OLD_c ;;
	e) ps_old=$OLD_e ps_so=$SUM_OLD_e ps_sn=$SUM_NEW_e ps_sz=$SUM_OLD_e ;;
	esac
}

# pair_state X Y: the state of the pair broken through X, in $RM/tree:
#   old       X is still the old inode, shared with Y (nlink 2, old bytes)
#   copy      X is a complete copy with the new bytes, nlink 1 for both
#   unsynced  X is a complete copy, the write after the break is not on
#             disk yet (the old bytes; for a, also "old" and two zeroes)
#   BAD: ...  anything else; and always BAD if Y is not the old inode
#             with the old bytes, or a name lacks the cow flag
pair_state() {
	pair_vars "$1"
	for ps_n in "$1" "$2"; do
		[ -f "$RM/tree/$ps_n" ] || { echo "BAD: $ps_n is missing"; return; }
		ps_f=$(try getxattr "$RM/tree/$ps_n" trusted.cowlinkfs.cow)
		[ "$ps_f" = 1 ] || { echo "BAD: cow flag of $ps_n: $ps_f"; return; }
	done
	ps_xi=$(ino "$RM/tree/$1")
	ps_xn=$(nlink "$RM/tree/$1")
	ps_yi=$(ino "$RM/tree/$2")
	ps_yn=$(nlink "$RM/tree/$2")
	[ "$ps_yi" = "$ps_old" ] ||
		{ echo "BAD: $2 is inode $ps_yi, not the old $ps_old"; return; }
	[ "$(sum "$RM/tree/$2")" = "$ps_so" ] ||
		{ echo "BAD: $2 lost the old bytes"; return; }
	ps_xs=$(sum "$RM/tree/$1")
	if [ "$ps_xi" = "$ps_old" ]; then
		if [ "$ps_xn" != 2 ] || [ "$ps_yn" != 2 ]; then
			echo "BAD: $1 and $2 share the old inode, nlink $ps_xn"
		elif [ "$ps_xs" != "$ps_so" ]; then
			echo "BAD: the old inode has other bytes"
		else
			echo old
		fi
		return
	fi
	if [ "$ps_xn" != 1 ] || [ "$ps_yn" != 1 ]; then
		echo "BAD: $1 is a copy, but nlink $ps_xn for $1 and $ps_yn for $2"
	elif [ "$ps_xs" = "$ps_sn" ]; then
		echo copy
	elif [ "$ps_xs" = "$ps_so" ] || [ "$ps_xs" = "$ps_sz" ]; then
		echo unsynced
	else
		echo "BAD: $1 is a copy (inode $ps_xi, $(stat -c %s "$RM/tree/$1") bytes) with neither the old nor the new bytes"
	fi
}

# replay_names: the states of a, c and e on $RM, into $RS (for point
# $POINT) and $STATES ("a STATE, c STATE, e STATE"); $BAD: the first BAD
# state, or empty
replay_names() {
	BAD=
	STATES=
	for p in "a b" "c d" "e f"; do
		# shellcheck disable=SC2086
		set -- $p
		s=$(pair_state "$1" "$2")
		case $s in
		BAD*)
			[ -n "$BAD" ] || BAD=$s
			echo "$POINT $1 broken" >>"$RS"
			;;
		*) echo "$POINT $1 $s" >>"$RS" ;;
		esac
		STATES="$STATES${STATES:+, }$1 $s"
	done
}

# replay_summary: per name, how many points showed each state
replay_summary() {
	awk '{ n[$2 " " $3]++ } END {
		for (x = 0; x < 3; x++) {
			name = substr("ace", x + 1, 1)
			s = ""
			split("old copy unsynced broken", st, " ")
			for (i = 1; i <= 4; i++)
				if (n[name " " st[i]])
					s = s (s == "" ? "" : " ") n[name " " st[i]] " " st[i]
			out = out (x ? "; " : "") name ": " s
		}
		print out
	}' "$RS"
}

# replay_work_dir: entries in the work dir of the fs on $RM
replay_work_dir() {
	[ -d "$RM/tree/.cowlinkfs-work" ] || { echo none; return; }
	find "$RM/tree/.cowlinkfs-work" -mindepth 1 -maxdepth 1 | wc -l
}

# replay_point_journal COUNT KIND: replay COUNT entries and check them
replay_point_journal() {
	what="point $1 ($2: entries 0..$(($1 - 1)) replayed, the last: $(sed -n "$1p" "$RL.list"))"
	POINT=$1
	: >"$RI"
	truncate -s "${RSIZE}M" "$RI"
	replaylog replay "$RL" "$RI" "$1" >/dev/null
	# The mount recovers the journal, as after a power cut; fsck -n then
	# checks what the recovery left (before it, e2fsck -n would only see
	# a journal that needs recovery, xfs_repair -n a dirty log).
	replay_mount || { dmesg | tail -n 5; fail "$what: the replayed fs does not mount"; }
	replay_umount
	rc=0
	replay_fsck -n || rc=$?
	if [ $rc != 0 ]; then
		head -n 25 "$RF"
		fail "$what: fsck -n of the recovered fs exits $rc"
	fi
	replay_mount || fail "$what: the fs does not mount after fsck"
	replay_names
	[ -z "$BAD" ] || fail "$what: $BAD"
	left=$(replay_work_dir)
	[ "$left" != none ] || fail "$what: no work dir in the recovered fs"
	[ "$left" = 0 ] || LEFT=$((LEFT + 1))
	mount -t cowlinkfs "$RM/tree" "$RC" ||
		fail "$what: cowlinkfs does not mount on the recovered fs"
	check_eq "$(ls -A "$RM/tree/.cowlinkfs-work")" "" \
		"$what: work dir after the next mount ($left entries before it)"
	check_eq "$(sum "$RC/b")" "$SUM_OLD_a" "$what: b through cowlinkfs"
	umount "$RC"
	replay_umount
	echo "$what: $STATES; work dir $left"
}

# replay_point_ext2 COUNT KIND: replay, e2fsck -fy, then report
replay_point_ext2() {
	what="point $1 ($2: entries 0..$(($1 - 1)) replayed, the last: $(sed -n "$1p" "$RL.list"))"
	POINT=$1
	: >"$RI"
	truncate -s "${RSIZE}M" "$RI"
	replaylog replay "$RL" "$RI" "$1" >/dev/null
	rc=0
	replay_fsck -y || rc=$?
	if [ $rc -ge 4 ]; then
		head -n 25 "$RF"
		fail "$what: e2fsck -fy left errors (exit $rc)"
	fi
	[ $rc = 0 ] || REPAIRED=$((REPAIRED + 1))
	replay_mount || { dmesg | tail -n 5; fail "$what: no mount after e2fsck -fy"; }
	for x in b d f; do
		[ -f "$RM/tree/$x" ] || fail "$what: $x is gone after e2fsck -fy"
	done
	check_eq "$(sum "$RM/tree/b")" "$SUM_OLD_a" "$what: old bytes of b"
	check_eq "$(sum "$RM/tree/d")" "$SUM_OLD_c" "$what: old bytes of d"
	check_eq "$(sum "$RM/tree/f")" "$SUM_OLD_e" "$what: old bytes of f"
	replay_names
	left=$(replay_work_dir)
	after=
	if mount -t cowlinkfs "$RM/tree" "$RC" 2>/dev/null; then
		[ -z "$(ls -A "$RM/tree/.cowlinkfs-work")" ] || after=", NOT emptied by the mount"
		umount "$RC"
	else
		after=", cowlinkfs does not mount"
	fi
	replay_umount
	# The first thing e2fsck fixed, in lower case: the console log is
	# searched for kernel splats (WARNING: and the like).
	fsck=clean
	[ $rc = 0 ] || fsck="exit $rc, first: $(grep -v -e '^Pass ' -e '^e2fsck ' \
		-e '^$' -e '^/tmp/' "$RF" | head -n 1 | tr '[:upper:]' '[:lower:]')"
	replay_say "$what: e2fsck $fsck; $STATES; work dir $left$after"
}

# replay_all journal|ext2: check every point
replay_all() {
	start=$(date +%s)
	replay_points 1 >/tmp/replay-points
	POINTS=0 LEFT=0 REPAIRED=0
	while read -r count kind <&3; do
		POINTS=$((POINTS + 1))
		"replay_point_$1" "$count" "$kind"
	done 3</tmp/replay-points
	kinds=$(awk '{ n[$2 ~ /flush|fua/ ? "flush/fua" : $2]++ }
		END {
			split("setup flush/fua before final", k, " ")
			for (i = 1; i <= 4; i++)
				if (n[k[i]])
					s = s (s ? ", " : "") n[k[i]] " " k[i]
			print s
		}' /tmp/replay-points)
	flushes=$(awk -v s="$SETUP" '$1 > s && $2 ~ /flush|fua/' "$RL.list" | wc -l)
	t=$(($(date +%s) - start))
	if [ "$1" = journal ]; then
		replay_say "$POINTS points checked in $t s ($kinds; $flushes flushes and FUAs after the mark, of $(wc -l <"$RL.list") entries): $(replay_summary); work dir not empty before the mount at $LEFT points, empty after it at all"
	else
		replay_say "$POINTS points in $t s ($kinds): e2fsck -fy repaired $REPAIRED; $(replay_summary)"
	fi
}

# lowers: ext3 ext4 xfs xfsr
test_every_flush_point_of_a_break_leaves_old_inode_or_complete_copy() {
	replay_record
	replay_all journal
}

# ext2 has no journal: after a power cut, fsck.  Asserted: e2fsck -fy
# repairs every point to a mountable fs whose untouched names b, d and f
# have the old bytes; what the broken names show is reported.
# lowers: ext2
test_ext2_flush_points_measured() {
	replay_record
	replay_all ext2
}
