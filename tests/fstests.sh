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
mkdir -p $R $F /mnt/test /mnt/scratch /lower/test /lower/scratch
# bash's process substitution reads /dev/fd/N, which the guest's
# devtmpfs does not make (generic/260 failed on it, bare or not)
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
# locktest's server and client meet on localhost, 127.0.0.1
busybox ip link set lo up 2>/dev/null || true
grep -qs localhost /etc/hosts || echo "127.0.0.1 localhost" >>/etc/hosts
mount -L cl-fstests $F || { echo "# fstests: no fstests disk"; exit 1; }
# fstests' own mkfs drops the labels: the devices are found once.
tdev=$(blkid -L cl-fsttest)
sdev=$(blkid -L cl-fstscratch)

# mkfs_on FS DEV: a fresh filesystem FS on DEV, quietly unless it fails
mkfs_on() {
	case $1 in
	xfs) mkfs.xfs -q -f "$2" ;;
	*) "mkfs.$1" -q -F "$2" ;;
	esac >/tmp/mkfs.log 2>&1 || { cat /tmp/mkfs.log; return 1; }
}

# fsck_lower FS DEV: fsck that changes nothing; fails on any finding
fsck_lower() {
	case $1 in
	xfs) xfs_repair -n "$2" ;;
	*) e2fsck -fn "$2" ;;
	esac
}

# unmount_all: whatever a section left mounted on the test paths
unmount_all() {
	for mp in /mnt/test /mnt/scratch /lower/test /lower/scratch; do
		while mountpoint -q $mp; do
			umount $mp || umount -l $mp
		done
	done
}

# section FS MODE: the config section of FS in MODE, on stdout
section() {
	if [ "$2" = bare ]; then
		echo "[$1]"
		echo "FSTYP=$1"
		echo "TEST_DEV=$tdev"
		echo "SCRATCH_DEV=$sdev"
		echo "MOUNT_OPTIONS="
		echo "TEST_FS_MOUNT_OPTS="
	else
		echo "[cowlinkfs_$1_$2]"
		echo "FSTYP=cowlinkfs"
		echo "TEST_DEV=/lower/test/d"
		echo "SCRATCH_DEV=/lower/scratch/d"
		echo "MOUNT_OPTIONS=\"-o cow=$2\""
		echo "TEST_FS_MOUNT_OPTS=\"-o cow=$2\""
	fi
	echo "TEST_DIR=/mnt/test"
	echo "SCRATCH_MNT=/mnt/scratch"
	echo "RESULT_BASE=$R/results"
	echo
}

: >$F/local.config
for fs in $lowers; do
	for m in $modes; do
		section "$fs" "$m" >>$F/local.config
	done
done
cp $F/local.config $R/local.config

cd $F || exit 1
for fs in $lowers; do
	for m in $modes; do
		sec=$fs
		[ "$m" = bare ] || sec=cowlinkfs_${fs}_$m
		echo "# fstests: section $sec: ./check -s $sec -R xunit $args" \
			"(at $(cut -d" " -f1 /proc/uptime) s)"
		unmount_all
		mkfs_on "$fs" "$tdev" && mkfs_on "$fs" "$sdev" || {
			echo "# fstests: mkfs.$fs failed"
			continue
		}
		if [ "$m" != bare ]; then
			mount "$tdev" /lower/test && mkdir /lower/test/d &&
				mount "$sdev" /lower/scratch && mkdir /lower/scratch/d || {
				echo "# fstests: the lower $fs did not mount"
				continue
			}
		fi
		# A config of this section alone: ./check -s checks the devices
		# of a config's first section whichever it runs.
		awk -v s="[$sec]" '/^\[/ { on = $0 == s } on' $R/local.config >$R/$sec.config
		# shellcheck disable=SC2086 # the arguments of ./check
		HOST_OPTIONS=$R/$sec.config timeout -s INT -k 1200 "$limit" \
			./check -s "$sec" -R xunit -E $T/fstests-skip $args 2>&1 |
			tee $R/$sec.out | sed -u "s|^|# $sec: |"
		unmount_all
		if [ "$m" != bare ]; then
			{
				fsck_lower "$fs" "$tdev" && fsck_lower "$fs" "$sdev"
			} >$R/$sec.fsck 2>&1
			echo "$?" >$R/$sec.fsck-rc
		fi
	done
done
