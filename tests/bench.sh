#!/bin/sh
# Guest side of make bench: every workload on every configuration, side by
# side on the same lower fs, interleaved (bare, cowlinkfs cow=flag,
# cowlinkfs cow=all, overlayfs, mergerfs, cowdancer, and for the runs
# workload reflink and hardlinks; then again, for BENCH_ROUNDS rounds),
# caches dropped before each timed step (unless
# BENCH_DROP is 0: the smoke, whose figures nobody reads; the warm
# workload only syncs).  One CSV
# line per figure in results/bench.csv; one TAP line per lower, round and
# configuration in results/tap, "not ok" on any failed step (a full disk
# among them: it would make a copy look fast).  The host turns the CSV
# into ratios (tests/host/bench-report.py).
set -u
T=/t
R=$T/results
export PATH=$T/bin:/usr/sbin:/usr/bin:/sbin:/bin
# BENCH_FS BENCH_ROUNDS BENCH_FILES BENCH_SCALE BENCH_META BENCH_DATA BENCH_SIZES
# BENCH_CONFIGS BENCH_WORKLOADS BENCH_PROFILE BENCH_DROP
. $T/bench.conf
. $T/tests/lower.sh
csv=$R/bench.csv
echo "kernel,lower,workload,config,round,seconds,bytes,files,note" >$csv
: >$R/tap
kver=$(uname -r)
n=0
mkdir -p /bsrc /mnt/b /mnt/b2
if ! mount -o ro "$(blkid -L cl-bsrc)" /bsrc; then
	echo "Bail out! no bench disk" | tee $R/tap
	exit 1
fi

# make profile (BENCH_PROFILE set): the function profiler runs during each
# timed step, on the functions that say where a metadata operation spends
# its time (ours, the lower fs's, the VFS calls between them); each step's
# counts and times go to results/profile.txt, which tests/host/bench-profile.py
# sums up.  Its figures are not timings: the profiler slows every call.
TR=/sys/kernel/debug/tracing
if [ -n "$BENCH_PROFILE" ]; then
	mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug
	: >$R/profile.txt
	for f in 'cowlinkfs_*' 'ovl_*' 'ext4_lookup' 'ext4_getattr' 'ext4_xattr_get' \
		'ext4_readdir' 'ext4_link' 'xfs_vn_*' 'xfs_attr_get' 'xfs_file_readdir' \
		'lookup_one_len_unlocked' '__lookup_slow' 'd_alloc_parallel' 'new_inode' \
		'iget5_locked' 'd_splice_alias' '__vfs_getxattr' 'vfs_getattr' \
		'vfs_getattr_nosec' 'vfs_fstatat' 'do_sys_openat2' 'dentry_open' \
		'do_dentry_open' 'iterate_dir' 'do_linkat' 'vfs_link' 'ksys_read' \
		'filename_lookup' 'link_path_walk' 'path_openat' 'inode_permission' \
		'override_creds' 'revert_creds' 'dput' 'iput' 'evict' 'd_invalidate' \
		'lookup_fast' 'try_to_unlazy' 'generic_permission' 'security_inode_permission'; do
		echo "$f" >>$TR/set_ftrace_filter 2>/dev/null || true
	done
fi
prof() {
	[ -n "$BENCH_PROFILE" ] || return 0
	if [ "$1" = on ]; then
		echo 1 >$TR/function_profile_enabled
		return 0
	fi
	echo 0 >$TR/function_profile_enabled
	{ echo "## $fs $cfg $w $f"; cat $TR/trace_stat/function*; } >>$R/profile.txt
}

# bytes SIZE: 4k, 1m, 1g (and 1g-sparse) in bytes
bytes() {
	case ${1%-sparse} in
	*k) echo $((${1%%k*} * 1024)) ;;
	*m) echo $((${1%%m*} * 1048576)) ;;
	*g) echo $((${1%%g*} * 1073741824)) ;;
	*) echo "$1" ;;
	esac
}

# t WORKLOAD BYTES FILES NOTE [cow] CMD...: time CMD once, caches dropped,
# and record it.  A failure is a failed step, recorded as "fail", unless
# this configuration is in $na (a configuration that cannot do it): then
# the figure is "n/a".  "cow DIR" marks a write that cowdancer must see: it
# runs under cow-shell started in DIR, whose multi-link files cow-shell
# lists (a scan of DIR that is part of cowdancer's cost, so DIR is the
# tree under test and no more).  fio's figure is its own runtime: its
# start-up under TCG is as long as the I/O of a small file.
na=
t() {
	w=$1 b=$2 f=$3 note=$4
	shift 4
	if [ "$1" = cow ]; then
		dir=$2
		shift 2
		if [ "$cfg" = cowdancer ]; then
			# cow-shell's daemon unlinks .ilist up to a second after
			# the command ends, maybe the next cow-shell's
			sleep 2
			set -- sh -c 'cd "$1" && shift && exec cow-shell "$@"' - "$dir" "$@"
		fi
	fi
	[ "$1" != fio ] || set -- "$@" --minimal
	if [ "$BENCH_DROP" = warm ]; then
		sync
	elif [ "$BENCH_DROP" != 0 ]; then
		sync
		echo 3 >/proc/sys/vm/drop_caches
	fi
	prof on
	timeit /tmp/secs "$@" >/tmp/out 2>&1
	rc=$?
	prof off
	if [ $rc = 0 ]; then
		# terse format: field 9 the read runtime, 50 the write runtime (ms)
		[ "$1" != fio ] || awk -F';' '{ printf "%.4f\n", ($9 + $50) / 1000 }' /tmp/out >/tmp/secs
		echo "$kver,$fs,$w,$cfg,$round,$(cat /tmp/secs),$b,$f,$note" >>$csv
		return 0
	fi
	case " $na " in
	*" $cfg "*)
		echo "$kver,$fs,$w,$cfg,$round,n/a,$b,$f,$(tr -c '[:print:]' ' ' </tmp/out | head -c 60 | tr , ';')" >>$csv
		;;
	*)
		echo "$kver,$fs,$w,$cfg,$round,fail,$b,$f,$note" >>$csv
		echo "$w: $* failed: $(tail -n 3 /tmp/out)" >>/tmp/fail
		;;
	esac
	return 1
}

# must CMD...: a step of setting up that must work, or the round fails
must() {
	"$@" >/tmp/must 2>&1 || { echo "setup: $* failed: $(tail -n 3 /tmp/must)" >>/tmp/fail; return 1; }
}

# check WHAT CONDITION...: a result that must hold
check() {
	w=$1
	shift
	"$@" || echo "$w: $*" >>/tmp/fail
}

# diff -r of $1 and $2 as a command: differences (status 1) are no failure
# shellcheck disable=SC2016
diffr='diff -r "$1" "$2" >/dev/null; [ $? -le 1 ]'

first_byte() { od -An -tx1 -N1 "$1" | tr -d ' '; }

# up: mount $cfg over the bare directory $B/x.  The workloads run in $W;
# their fixtures are made in $P, which is $W except for overlayfs, whose
# lower layer takes them before the mount (fixed remounts it).
up() {
	B=/lower/$fs/b
	rm -rf "$B"
	mkdir -p "$B/x" "$B/u" "$B/w" "$B/u2" "$B/w2"
	W=/mnt/b P=/mnt/b
	case $cfg in
	bare | cowdancer | reflink | hardlinks) W=$B/x P=$B/x ;;
	cowlinkfs-flag) must mount -t cowlinkfs -o cow=flag "$B/x" /mnt/b ;;
	cowlinkfs-all) must mount -t cowlinkfs -o cow=all "$B/x" /mnt/b ;;
	cowlinkfs-nosync) must mount -t cowlinkfs -o cow=all,break_sync=off "$B/x" /mnt/b ;;
	overlayfs)
		P=$B/x
		fixed
		;;
	mergerfs)
		must mergerfs -o link_cow=true,category.create=ff,cache.files=off,minfreespace=1M \
			"$B/x" /mnt/b
		;;
	esac
}

fixed() {
	[ "$cfg" = overlayfs ] || return 0
	! mountpoint -q /mnt/b || must umount /mnt/b
	must mount -t overlay -o "lowerdir=$B/x,upperdir=$B/u,workdir=$B/w" overlay /mnt/b
}

down() {
	for m in /mnt/b2 /mnt/b; do
		! mountpoint -q $m || umount $m || echo "umount $m failed" >>/tmp/fail
	done
	rm -rf "$B"
}

# clone_as WORKLOAD FILES NAME: clone $W/NAME the way $cfg clones a tree;
# the clone is $C.  overlayfs clones by mounting an overlay on the tree.
clone_as() {
	C=$W/$3.clone
	case $cfg in
	cowlinkfs-flag) t "$1" 0 "$2" "cowlink clone" cowlink clone "$W/$3" "$C" ;;
	cowdancer) t "$1" 0 "$2" "cp -al" cp -al "$W/$3" "$C" ;;
	overlayfs)
		C=/mnt/b2
		! mountpoint -q $C || umount $C
		rm -rf "$B/u2" "$B/w2"
		mkdir -p "$B/u2" "$B/w2"
		t "$1" 0 "$2" "overlay mount" mount -t overlay \
			-o "lowerdir=$P/$3,upperdir=$B/u2,workdir=$B/w2" overlay $C
		;;
	*) t "$1" 0 "$2" "cp -rl" cp -rl "$W/$3" "$C" ;;
	esac
}

# discard_as WORKLOAD FILES: remove the clone $C the way $cfg would: with
# cowlink discard through cowlinkfs, rm -rf elsewhere.
discard_as() {
	case $cfg in
	cowlinkfs-*) t "$1" 0 "$2" "cowlink discard" cowlink discard "$C" ;;
	*) t "$1" 0 "$2" "rm -rf" rm -rf "$C" ;;
	esac
}

data() {
	[ "$cfg" != cowdancer ] || return 0
	b=$((BENCH_DATA * 1048576))
	set -- --name=bench "--filename=$W/data" "--size=${BENCH_DATA}m"
	t data-seq-write $b "" "psync bs=1M" fio "$@" --rw=write --bs=1M --end_fsync=1
	t data-seq-read $b "" "psync bs=1M" fio "$@" --rw=read --bs=1M
	t data-rand-read $b "" "psync bs=4k" fio "$@" --rw=randread --bs=4k
	t data-rand-write $b "" "psync bs=4k" fio "$@" --rw=randwrite --bs=4k --end_fsync=1
	# mergerfs with cache.files=off has no shared mmap and no O_DIRECT write
	na=mergerfs
	t data-mmap-read $b "" "mmap bs=4k" fio "$@" --rw=randread --bs=4k --ioengine=mmap
	t data-mmap-write $b "" "mmap bs=4k" fio "$@" --rw=randwrite --bs=4k --ioengine=mmap --end_fsync=1
	t data-direct-read $b "" "O_DIRECT bs=4k" fio "$@" --rw=randread --bs=4k --direct=1
	t data-direct-write $b "" "O_DIRECT bs=4k" fio "$@" --rw=randwrite --bs=4k --direct=1
	na=
	rm -f "$W/data"
}

meta() {
	[ "$cfg" != cowdancer ] || return 0
	must mkdir "$W/m" || return 0
	t meta-create 0 "$BENCH_META" "" metaops create "$W/m" "$BENCH_META"
	t meta-stat 0 "$BENCH_META" "" metaops stat "$W/m" "$BENCH_META"
	t meta-miss 0 "$BENCH_META" "stat missing names, twice" metaops miss "$W/m" "$BENCH_META"
	t meta-unlink 0 "$BENCH_META" "" metaops unlink "$W/m" "$BENCH_META"
	tar=/bsrc/tree-$BENCH_FILES.tar
	t meta-untar "$(stat -c %s $tar)" "$BENCH_FILES" "" tar -xf $tar -C "$W/m"
	t meta-find 0 "$BENCH_FILES" "find -ls" sh -c 'find "$1" -ls >/dev/null' - "$W/m"
	t meta-du 0 "$BENCH_FILES" "du -s" du -s "$W/m"
	t meta-rm 0 "$BENCH_FILES" "rm -rf" rm -rf "$W/m"
}

# warm: the metadata steps of meta and tree with the caches warm, as a
# build or a second pass over a tree finds them: each step follows the one
# that made its files, synced but not dropped, so that no writeback runs
# inside it.  What is left is the CPU each layer adds (its own dentries and
# inodes, its calls into the lower fs), which TCG magnifies; meta and tree
# give the cold figures, where the lower fs's reads weigh in too.
warm() {
	[ "$cfg" != cowdancer ] || return 0
	must mkdir "$W/w" "$W/w/m" || return 0
	tar=/bsrc/tree-$BENCH_FILES.tar
	cat $tar >/dev/null
	drop=$BENCH_DROP
	[ "$BENCH_DROP" = 0 ] || BENCH_DROP=warm
	t warm-create 0 "$BENCH_META" "" metaops create "$W/w/m" "$BENCH_META"
	t warm-stat 0 "$BENCH_META" "" metaops stat "$W/w/m" "$BENCH_META"
	t warm-miss 0 "$BENCH_META" "stat missing names, twice" metaops miss "$W/w/m" "$BENCH_META"
	t warm-unlink 0 "$BENCH_META" "" metaops unlink "$W/w/m" "$BENCH_META"
	t warm-untar "$(stat -c %s $tar)" "$BENCH_FILES" "" tar -xf $tar -C "$W/w/m"
	t warm-find 0 "$BENCH_FILES" "find -ls" sh -c 'find "$1" -ls >/dev/null' - "$W/w/m"
	t warm-du 0 "$BENCH_FILES" "du -s" du -s "$W/w/m"
	t warm-cp-a 0 "$BENCH_FILES" "cp -a" cp -a "$W/w/m" "$W/w/copy"
	t warm-cp-rl 0 "$BENCH_FILES" "cp -rl" cp -rl "$W/w/m" "$W/w/clone"
	t warm-diff-clone 0 "$BENCH_FILES" "diff -r against the clone" \
		sh -c "$diffr" - "$W/w/m" "$W/w/clone"
	t warm-rm 0 "$BENCH_FILES" "rm -rf" rm -rf "$W/w/copy"
	BENCH_DROP=$drop
	rm -rf "$W/w"
}

# brk: the break, the first write of 4 KiB to one of two names of a file of
# each size (filled with 0xab), against copying that file.  Each size has a
# directory of its own (overlayfs would keep the whiteouts of the last), a
# COW directory under cow=flag, as link() between a COW file and a plain
# directory is EMLINK.
brk() {
	for s in $BENCH_SIZES; do
		b=$(bytes "$s")
		d=brk-$s
		must mkdir "$P/$d" || continue
		[ "$cfg" != cowlinkfs-flag ] || must cowlink set "$W/$d"
		if [ "${s%-sparse}" != "$s" ]; then
			must xfs_io -f -c "truncate $b" -c "pwrite -q -S 0xab 0 4k" \
				-c "pwrite -q -S 0xab $((b - 4096)) 4k" "$P/$d/f"
		else
			must xfs_io -f -c "pwrite -q -S 0xab -b 1m 0 $b" "$P/$d/f"
		fi
		must ln "$P/$d/f" "$P/$d/g"
		fixed
		t "break-$s" "$b" "" "first write of 4 KiB" cow "$W/$d" \
			dd if=/dev/zero "of=$W/$d/f" bs=4k count=1 conv=notrunc status=none
		check "break-$s" [ "$(first_byte "$W/$d/f")" = 00 ]
		[ "$cfg" = bare ] || check "break-$s: other name kept" [ "$(first_byte "$W/$d/g")" = ab ]
		if [ "$cfg" != cowdancer ]; then
			t "break-cp-$s" "$b" "" "cp --reflink=never, synced" \
				sh -c 'cp --reflink=never "$1" "$2" && sync "$2"' - "$W/$d/g" "$W/$d/h"
		fi
		if [ "$cfg" = bare ] && [ "$fs" = xfsr ]; then
			t "break-reflink-$s" "$b" "" "cp --reflink=always, synced" \
				sh -c 'cp --reflink=always "$1" "$2" && sync "$2"' - "$W/$d/g" "$W/$d/r"
		fi
		rm -rf "${W:?}/$d"
	done
}

# tree: the article's workload on a real source tree
tree() {
	k=$BENCH_FILES
	must mkdir "$P/orig" || return 0
	must tar -xf "/bsrc/tree-$k.tar" -C "$P/orig" || return 0
	fixed
	if [ "$cfg" != cowdancer ]; then
		t tree-cp-a 0 "$k" "cp -a" cp -a "$W/orig" "$W/copy"
	fi
	clone_as tree-clone "$k" orig
	head -n 10 "/bsrc/tree-$k.edit" >/tmp/edit
	tail -n +11 "/bsrc/tree-$k.edit" >/tmp/append
	cat /tmp/edit /tmp/append | (cd "$W/orig" && xargs md5sum) >/tmp/sums
	na=cowdancer
	# vim writes a file with several names in place (backupcopy=auto)
	t tree-edit 0 10 "vim in place" cow "$C" sh -c 'cd "$1" && while read -r f; do
		vi -u NONE -i NONE -N -es -c "1s/^/edited /" -c wq "$f" || exit 1
	done </tmp/edit' - "$C"
	na=
	t tree-append 0 10 "first write: a line appended" cow "$C" sh -c 'cd "$1" && while read -r f; do
		echo edited >>"$f" || exit 1
	done </tmp/append' - "$C"
	[ "$cfg" = bare ] || check "tree-edit: original kept" sh -c 'cd "$1" && md5sum -c --quiet /tmp/sums' - "$W/orig"
	t tree-diff-clone 0 "$k" "diff -r against the clone" \
		sh -c "$diffr" - "$W/orig" "$C"
	if [ "$cfg" != cowdancer ]; then
		t tree-diff-copy 0 "$k" "diff -r against a full copy" \
			sh -c "$diffr" - "$W/orig" "$W/copy"
	fi
	t tree-du-both 0 "$k" "du -s of both" du -s "$W/orig" "$C"
	# cowdancer's cow-shell scans its directory: leave scale() its own
	! mountpoint -q /mnt/b2 || must umount /mnt/b2
	rm -rf "$W/orig" "$W/orig.clone" "$W/copy"
}

# edits: many breaks, as a test run in a clone makes them: a line
# appended to every file of a clone of the tree, each a first write to a
# file with two names; then the same on a new clone followed by syncfs, so
# that what break_sync=off only puts off is counted.  Only where a break
# is a copy (bare appends to both trees: the cost of the writes alone).
edits() {
	case $cfg in bare | cowlinkfs-all | cowlinkfs-nosync) ;; *) return 0 ;; esac
	k=$BENCH_FILES
	must mkdir "$P/e" || return 0
	must tar -xf "/bsrc/tree-$k.tar" -C "$P/e" || return 0
	# shellcheck disable=SC2016
	app='cd "$1" && find . -type f | while read -r f; do echo edited >>"$f" || exit 1; done'
	for step in append append-syncfs; do
		syncfs=
		[ "$step" = append ] || syncfs=' && sync -f .'
		clone_as edits-clone "$k" e
		t "edits-$step" 0 "$k" "a line appended to every file${syncfs:+, then syncfs}" \
			sh -c "$app$syncfs" - "$C"
		[ "$cfg" = bare ] || check "edits-$step: original kept" \
			[ "$(tail -c 7 "$W/e/Makefile")" != edited ]
		must rm -rf "$C"
	done
	rm -rf "${W:?}/e"
}

# clone: the clone of a test run and its discard, as a farm of runs does
# them: the pristine tree is flagged first under cow=flag (cowlink set -R,
# not timed), then cloned the way $cfg clones (clone-tree), then the clone
# is removed (clone-discard: rm -rf, cowlink discard through cowlinkfs, or
# the overlay unmounted and its upper removed).  Nothing else runs in
# between, so the two figures are the setup and the teardown of one run.
clone() {
	k=$BENCH_FILES
	must mkdir "$P/pristine" || return 0
	must tar -xf "/bsrc/tree-$k.tar" -C "$P/pristine" || return 0
	[ "$cfg" != cowlinkfs-flag ] || must cowlink set -R "$W/pristine" || return 0
	fixed
	clone_as clone-tree "$k" pristine
	check clone-tree [ -f "$C/$(head -n 1 "/bsrc/tree-$k.edit")" ]
	if [ "$cfg" = overlayfs ]; then
		t clone-discard 0 "$k" "umount, rm -rf of the upper" \
			sh -c 'umount "$1" && rm -rf "$2" "$3"' - "$C" "$B/u2" "$B/w2"
	else
		discard_as clone-discard "$k"
	fi
	if [ "$cfg" = overlayfs ]; then
		# the mount point stays; the overlay and its upper go
		check clone-discard sh -c '! mountpoint -q "$1" && [ ! -e "$2" ]' - "$C" "$B/u2"
	else
		check clone-discard [ ! -e "$C" ]
	fi
	rm -rf "$W/pristine"
}

# scale: clone, diff -r and one break on trees of each size
scale() {
	for k in $BENCH_SCALE; do
		must mkdir "$P/s$k" || continue
		must tar -xf "/bsrc/tree-$k.tar" -C "$P/s$k" || continue
		fixed
		clone_as "scale-clone@$k" "$k" "s$k"
		t "scale-diff@$k" 0 "$k" "diff -r against the clone" \
			sh -c "$diffr" - "$W/s$k" "$C"
		# not $f: t() sets it
		e=$(head -n 1 "/bsrc/tree-$k.edit")
		sum=$(md5sum <"$W/s$k/$e")
		t "scale-break@$k" 0 "$k" "first write of 4 KiB" cow "$C" \
			dd if=/dev/zero "of=$C/$e" bs=4k count=1 conv=notrunc status=none
		[ "$cfg" = bare ] || check "scale-break@$k: original kept" [ "$(md5sum <"$W/s$k/$e")" = "$sum" ]
		! mountpoint -q /mnt/b2 || must umount /mnt/b2
		rm -rf "$W/s$k.clone" "$W/s$k"
	done
}

# runs: tier 3 of the cross-arch runs (issue 25), the runs of
# tests/t_crossarch.sh (dpkg, sed -i, >>, chmod, setfacl, a static busybox
# dd, ln then write, all in a chroot of the amd64 tree under qemu-user) done
# the ways people do them without cowlinkfs, side by side with cowlink
# clone.  Each configuration gets its own copy of the pristine tree on the
# lower (made in its first round, its manifest taken then), one run per
# round: setup (runs-setup), the run (runs-run), the disk it took
# (runs-disk: df after setup and run, less before; no seconds), its
# discard (runs-discard); after the last round, whether the pristine
# tree's manifest is what it was (runs-intact: files is the count of
# names changed, the note names them).  The ways:
#   bare            cp -a --reflink=never of the tree per run (a copy)
#   reflink         cp -a --reflink=always (xfsr only)
#   overlayfs       an overlay over the tree, a fresh upper per run
#   cowdancer       cowbuilder's: cp -al, the ilist made by cow-shell in the
#                   chroot, then every command as "chroot RUN cow-shell CMD"
#                   (COWDANCER_REUSE=yes), the foreign libcowdancer preloaded
#   hardlinks       cp -al and nothing else: the reference that must change
#                   the pristine tree, or the manifest proves nothing
#   cowlinkfs-flag  cowlink clone of the tree, flagged once (cowlink set -R)
#   cowlinkfs-nosync  the same on a cow=flag,break_sync=off mount: what a
#                   break's fsync costs a run
# Others have no way here.  A changed pristine tree fails the round, but
# for cowdancer (a finding, either way) and hardlinks (which must change it).
FL=/lower/foreign
BINFMT=$(. $T/tests/foreign.sh && echo "$BINFMT")
RM=/mnt/runs
RC=/mnt/run

# foreign CMD...: CMD with tests/foreign.sh's names and functions, in a
# subshell (its P is a name of ours; one_run and make_debs set c, n, d, p)
foreign() {
	(. $T/tests/foreign.sh && "$@")
}

# runs_foreign: the pristine tree's disk, read-only, its interpreter
# registered, the runs' packages built; once per boot
runs_foreign() {
	! mountpoint -q $FL || return 0
	mkdir -p $FL $RM $RC
	dev=$(blkid -L cl-foreign) || { echo "runs: no disk labelled cl-foreign" >>/tmp/fail; return 1; }
	must mount -o ro "$dev" $FL || return 1
	[ -e /proc/sys/fs/binfmt_misc/register ] ||
		must mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || return 1
	# shellcheck disable=SC2016
	[ -e "/proc/sys/fs/binfmt_misc/$BINFMT" ] ||
		must sh -c 'cat "$1" >/proc/sys/fs/binfmt_misc/register' - $FL/qemu/binfmt || return 1
	must foreign make_debs
}

# used: bytes in use on the lower, written back first
used() {
	sync
	df -B1 --output=used "/lower/$fs" | tail -n 1
}

runs() {
	case $cfg in
	bare | reflink | overlayfs | cowdancer | hardlinks | cowlinkfs-flag | cowlinkfs-nosync) ;;
	*) return 0 ;;
	esac
	runs_foreign || return 0
	D=/lower/$fs/runs-$cfg
	new=
	if [ "$round" = 1 ] || [ ! -d "$D/pristine" ]; then
		rm -rf "$D"
		mkdir -p "$D"
		must cp -a $FL/tree "$D/pristine" || return 0
		new=1
	fi
	# through cowlinkfs the tree and the runs are in one mount, cow=flag
	T0=$D/pristine C=$D/run
	case $cfg in
	cowlinkfs-flag) o=cow=flag ;;
	cowlinkfs-nosync) o=cow=flag,break_sync=off ;;
	*) o= ;;
	esac
	if [ -n "$o" ]; then
		must mount -t cowlinkfs -o "$o" "$D" $RM || return 0
		T0=$RM/pristine C=$RM/run
		[ -z "$new" ] || must cowlink set -R "$T0" || { umount $RM; return 0; }
	fi
	if [ -n "$new" ]; then
		foreign manifest "$D/pristine" >"/tmp/runs-$fs-$cfg.before"
		find "$D/pristine" | wc -l >"/tmp/runs-$fs-$cfg.files"
	fi
	k=$(cat "/tmp/runs-$fs-$cfg.files")
	u0=$(used)
	ok=1
	# shellcheck disable=SC2016
	case $cfg in
	# a copy: coreutils 9's cp -a makes reflinks where the lower can
	bare) t runs-setup 0 "$k" "cp -a --reflink=never" cp -a --reflink=never "$T0" "$C" || ok= ;;
	reflink) t runs-setup 0 "$k" "cp -a --reflink=always" cp -a --reflink=always "$T0" "$C" || ok= ;;
	hardlinks) t runs-setup 0 "$k" "cp -al" cp -al "$T0" "$C" || ok= ;;
	cowdancer)
		# cowbuilder's: cp -al, then the list of shared inodes, made by
		# the chroot's own cow-shell (emulated) and kept for the run
		t runs-setup 0 "$k" "cp -al; ilist by cow-shell in the chroot" \
			sh -c 'cp -al "$1" "$2" && COWDANCER_REUSE=yes chroot "$2" cow-shell true' \
			- "$T0" "$C" || ok=
		;;
	overlayfs)
		C=$RC
		t runs-setup 0 "$k" "mkdir upper work; mount -t overlay" \
			sh -c 'mkdir "$1/upper" "$1/work" &&
				mount -t overlay -o "lowerdir=$2,upperdir=$1/upper,workdir=$1/work" overlay "$3"' \
			- "$D" "$T0" "$C" || ok=
		;;
	cowlinkfs-*) t runs-setup 0 "$k" "cowlink clone" cowlink clone "$T0" "$C" || ok= ;;
	esac
	if [ -n "$ok" ]; then
		shell=
		[ "$cfg" != cowdancer ] || shell=cow-shell
		# shellcheck disable=SC2016
		t runs-run 0 "$k" "one_run of t_crossarch${shell:+ under $shell}" \
			env RUN_SHELL="$shell" COWDANCER_REUSE=yes \
			sh -c '. /t/tests/foreign.sh && one_run "$1" "$2"' - "$C" "$round" &&
			check runs-run [ "$(tail -n 1 "$C/etc/motd")" = "run$round" ]
		echo "$kver,$fs,runs-disk,$cfg,$round,,$(($(used) - u0)),$k,df after setup and run less before" >>$csv
		# shellcheck disable=SC2016
		if [ "$cfg" = overlayfs ]; then
			t runs-discard 0 "$k" "umount; rm -rf upper work" \
				sh -c 'umount "$2" && rm -rf "$1/upper" "$1/work"' - "$D" "$C"
		else
			discard_as runs-discard "$k"
		fi
	fi
	# what a failed step left
	if [ "$cfg" = overlayfs ]; then
		! mountpoint -q $RC || umount $RC
		rm -rf "$D/upper" "$D/work"
	else
		rm -rf "$C"
	fi
	! mountpoint -q $RM || umount $RM
	if [ "$round" = "$BENCH_ROUNDS" ]; then
		runs_intact "$D/pristine"
		rm -rf "$D"
	fi
}

# runs_intact TREE: the pristine tree's manifest against the one of its
# first round: a runs-intact line naming what changed
runs_intact() {
	b=/tmp/runs-$fs-$cfg.before
	[ -s "$b" ] || { echo "runs-intact: no manifest of the first round" >>/tmp/fail; return; }
	foreign manifest "$1" >/tmp/runs.after
	# a name from each kind of line: stat's (name first), sha256sum's
	# (name second), getfattr's ("# file: NAME attr=value")
	diff "$b" /tmp/runs.after | sed -n 's/^[<>] //p' |
		awk '/^# file: / { print $3; next }
			length($1) == 64 && $1 ~ /^[0-9a-f]+$/ { print $2; next } { print $1 }' |
		sed 's|^\./||' | sort -u >/tmp/runs.changed
	c=$(wc -l </tmp/runs.changed)
	if [ "$c" = 0 ]; then
		note=intact
	else
		note="changed: $(head -n 8 /tmp/runs.changed | tr '\n,' ' ;')"
		[ "$c" -le 8 ] || note="$note(and $((c - 8)) more)"
	fi
	echo "$kver,$fs,runs-intact,$cfg,$round,,0,$c,$note" >>$csv
	# how, in the TAP output: which of content, mode, owner, mtime, xattrs
	diff "$b" /tmp/runs.after | grep '^[<>]' | head -n 30 | sed "s/^/# $fs $cfg: /" >>$R/tap
	case $cfg in
	cowdancer) ;;
	hardlinks) check "runs-intact: cp -al changes the pristine tree" [ "$c" != 0 ] ;;
	*) check "runs-intact: $note" [ "$c" = 0 ] ;;
	esac
}

for fs in $BENCH_FS; do
	mkdir -p "/lower/$fs"
	if ! mount_lower "$fs"; then
		n=$((n + 1))
		echo "not ok $n $fs: cannot mount the lower fs" | tee -a $R/tap
		continue
	fi
	round=1
	while [ $round -le "$BENCH_ROUNDS" ]; do
		for cfg in $BENCH_CONFIGS; do
			# reflink and hardlinks are ways of the runs workload only,
			# reflink on a lower that shares extents
			case $cfg in
			reflink | hardlinks)
				case " $BENCH_WORKLOADS " in *" runs "*) ;; *) continue ;; esac
				[ "$cfg" != reflink ] || [ "$fs" = xfsr ] || continue
				;;
			esac
			: >/tmp/fail
			echo "# $fs round $round $cfg (at $(cut -d' ' -f1 /proc/uptime) s)" >/dev/console
			if up; then
				for wl in $BENCH_WORKLOADS; do
					case $cfg in reflink | hardlinks) [ "$wl" = runs ] || continue ;; esac
					$wl
				done
			fi
			down
			n=$((n + 1))
			if [ -s /tmp/fail ]; then
				echo "not ok $n $fs/$round/$cfg" | tee -a $R/tap
				sed 's/^/# /' /tmp/fail | tail -n 20 | tee -a $R/tap
			else
				echo "ok $n $fs/$round/$cfg" | tee -a $R/tap
			fi
		done
		round=$((round + 1))
	done
	umount "/lower/$fs"
done
if mountpoint -q $FL; then
	echo -1 >"/proc/sys/fs/binfmt_misc/$BINFMT"
	umount $FL
fi
echo "1..$n" | tee -a $R/tap
