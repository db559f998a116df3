#!/bin/sh
# Guest: fstests (make fstests) on each lower fs of $T/fstests-lowers in
# each mode of $T/fstests-modes: "bare" is the lower fs itself on the test
# and scratch devices, "flag" and "all" are cowlinkfs (cow=flag, cow=all)
# over a directory of each, as ./check -overlay stacks overlayfs.  One
# fstests config section per lower and mode, each run as
#   ./check -s SECTION -R xunit $(cat $T/fstests-args)
# after its devices are made afresh; after a cowlinkfs section the lower
# filesystems are checked (fsck -n, xfs_repair -n).  Writes the config,
# each section's config and output, its result.xml and the lower fsck's
# verdict to /t/results/fstests/.
#
# With $T/fstests-jobs 2 (make fstests FSTESTS_JOBS=2), two lanes run at
# once, each on its own test and scratch devices and mount points, with
# its own fstests results base (./check keeps check.log and check.time
# there).  The sections are split in two halves, in order; the second
# lane runs its half backwards, so that with "bare flag all" on ext4 and
# xfs the two bare sections, whose device-mapper tests name their
# targets by test number alone, do not run side by side (with bare
# sections alone, FSTESTS_MODES=bare, they do: use one lane).  Each
# ./check has a session of its own, which fstests' _pkill keeps to.
T=/t
R=$T/results/fstests
F=/fstests
export PATH=$T/bin:/usr/sbin:/usr/bin:/sbin:/bin
lowers=$(cat $T/fstests-lowers)
modes=$(cat $T/fstests-modes)
args=$(cat $T/fstests-args)
# a section's time limit in seconds (0: none); when it is up, ./check
# gets SIGINT, lets the running test end and writes its report of the
# tests it ran, as after a Ctrl-C
limit=$(cat $T/fstests-limit 2>/dev/null || echo 0)
jobs=$(cat $T/fstests-jobs 2>/dev/null || echo 1)
case $jobs in
1 | 2) ;;
*) echo "# fstests: $jobs lanes: one or two"; exit 1 ;;
esac
mkdir -p $R $F
# bash's process substitution reads /dev/fd/N, which the guest's
# devtmpfs does not make (generic/260 failed on it, bare or not)
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
# locktest's server and client meet on localhost, 127.0.0.1
busybox ip link set lo up 2>/dev/null || true
grep -qs localhost /etc/hosts || echo "127.0.0.1 localhost" >>/etc/hosts
mount -L cl-fstests $F || { echo "# fstests: no fstests disk"; exit 1; }
# fstests' own mkfs drops the labels: the devices are found once.  Lane
# 1's have no number, so that a run of one lane keeps the names it had.
for l in $(seq "$jobs"); do
	n=${l#1}
	blkid -L cl-fsttest$n >/tmp/tdev$l
	blkid -L cl-fstscratch$n >/tmp/sdev$l
	mkdir -p /mnt/test$n /mnt/scratch$n /lower/test$n /lower/scratch$n
done

# mkfs_on FS DEV LANE: a fresh filesystem FS on DEV, quietly unless it
# fails
mkfs_on() {
	case $1 in
	xfs) mkfs.xfs -q -f "$2" ;;
	*) "mkfs.$1" -q -F "$2" ;;
	esac >/tmp/mkfs$3.log 2>&1 || { cat /tmp/mkfs$3.log; return 1; }
}

# fsck_lower FS DEV: fsck that changes nothing; fails on any finding
fsck_lower() {
	case $1 in
	xfs) xfs_repair -n "$2" ;;
	*) e2fsck -fn "$2" ;;
	esac
}

# unmount_all LANE: whatever a section left mounted on the lane's paths
unmount_all() {
	n=${1#1}
	for mp in /mnt/test$n /mnt/scratch$n /lower/test$n /lower/scratch$n; do
		while mountpoint -q $mp; do
			umount $mp || umount -l $mp
		done
	done
}

# name FS MODE: the section's name
name() {
	if [ "$2" = bare ]; then echo "$1"; else echo "cowlinkfs_$1_$2"; fi
}

# section FS MODE LANE: the config section of FS in MODE on LANE's
# devices, on stdout
section() {
	n=${3#1}
	tdev=$(cat /tmp/tdev$3) sdev=$(cat /tmp/sdev$3)
	echo "[$(name "$1" "$2")]"
	if [ "$2" = bare ]; then
		echo "FSTYP=$1"
		echo "TEST_DEV=$tdev"
		echo "SCRATCH_DEV=$sdev"
		echo "MOUNT_OPTIONS="
		echo "TEST_FS_MOUNT_OPTS="
	else
		echo "FSTYP=cowlinkfs"
		echo "TEST_DEV=/lower/test$n/d"
		echo "SCRATCH_DEV=/lower/scratch$n/d"
		echo "MOUNT_OPTIONS=\"-o cow=$2\""
		echo "TEST_FS_MOUNT_OPTS=\"-o cow=$2\""
	fi
	echo "TEST_DIR=/mnt/test$n"
	echo "SCRATCH_MNT=/mnt/scratch$n"
	echo "RESULT_BASE=$R/lane$3"
	echo
}

# The sections, "FS MODE" a line, in order, and each lane's share.
for fs in $lowers; do
	for m in $modes; do
		echo "$fs $m"
	done
done >/tmp/sections
total=$(wc -l </tmp/sections)
half=$(((total + 1) / 2))
if [ "$jobs" = 1 ]; then
	cp /tmp/sections /tmp/lane1
else
	head -n "$half" /tmp/sections >/tmp/lane1
	tail -n +"$((half + 1))" /tmp/sections | tac >/tmp/lane2
fi
: >$F/local.config
for l in $(seq "$jobs"); do
	while read -r fs m; do
		section "$fs" "$m" "$l" >>$F/local.config
	done </tmp/lane$l
done
cp $F/local.config $R/local.config

# run_section FS MODE LANE: the section on the lane's devices, made
# afresh; its results moved to $R/results/SECTION
run_section() {
	sec=$(name "$1" "$2")
	n=${3#1}
	tdev=$(cat /tmp/tdev$3) sdev=$(cat /tmp/sdev$3)
	echo "# fstests: section $sec: ./check -s $sec -R xunit $args" \
		"(lane $3, at $(cut -d" " -f1 /proc/uptime) s)"
	unmount_all "$3"
	mkfs_on "$1" "$tdev" "$3" && mkfs_on "$1" "$sdev" "$3" || {
		echo "# fstests: mkfs.$1 failed"
		return
	}
	if [ "$2" != bare ]; then
		mount "$tdev" /lower/test$n && mkdir /lower/test$n/d &&
			mount "$sdev" /lower/scratch$n && mkdir /lower/scratch$n/d || {
			echo "# fstests: the lower $1 did not mount"
			return
		}
	fi
	# A config of this section alone: ./check -s checks the devices of a
	# config's first section whichever it runs.
	awk -v s="[$sec]" '/^\[/ { on = $0 == s } on' $R/local.config >$R/$sec.config
	# In a session of its own: a test's _pkill (tests/fstests/0002-*)
	# kills in its own session only, never the other lane's fsstress.
	# timeout signals its process group, ./check and the running test,
	# both inside the session.
	# shellcheck disable=SC2086 # the arguments of ./check
	HOST_OPTIONS=$R/$sec.config setsid -w timeout -s INT -k 1200 "$limit" \
		./check -s "$sec" -R xunit -E $T/fstests-skip $args 2>&1 |
		tee $R/$sec.out | sed -u "s|^|# $sec: |"
	unmount_all "$3"
	mkdir -p $R/results
	rm -rf "$R/results/$sec"
	[ ! -d "$R/lane$3/$sec" ] || mv "$R/lane$3/$sec" "$R/results/$sec"
	if [ "$2" != bare ]; then
		{
			fsck_lower "$1" "$tdev" && fsck_lower "$1" "$sdev"
		} >$R/$sec.fsck 2>&1
		echo "$?" >$R/$sec.fsck-rc
	fi
}

cd $F || exit 1
for l in $(seq "$jobs"); do
	while read -r fs m; do
		run_section "$fs" "$m" "$l" </dev/null
	done </tmp/lane$l &
done
wait
