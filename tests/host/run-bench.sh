#!/bin/bash
# make bench: boot the guest once and run every workload of tests/bench.sh
# side by side on each lower fs, then turn the figures into ratios, a
# table, JSON, CSV and plots (tests/bench-report.py) in
# $COWLINKFS_LOGS/bench.  The knobs, with their defaults:
#   BENCH_FS="ext2 ext3 ext4 xfs xfsr"  lower filesystems
#   BENCH_ROUNDS=5          rounds of every configuration, interleaved
#   BENCH_FILES=10000       files of the source tree of the article's workload
#   BENCH_SCALE="1000 10000 50000"  tree sizes of the scaling workloads
#   BENCH_META=10000        files created, stat'ed and unlinked
#   BENCH_DATA=64           MiB of the data-path file
#   BENCH_SIZES="4k 1m 64m 1g 1g-sparse"  file sizes of the break
#   BENCH_DISK=8G           size of each lower (sparse)
#   BENCH_CONFIGS="bare cowlinkfs-flag cowlinkfs-all overlayfs mergerfs cowdancer
#                  reflink hardlinks"
#                           (and on demand cowlinkfs-nosync: cow=all,break_sync=off,
#                           cow=flag,break_sync=off in the runs workload;
#                           reflink and hardlinks are ways of the runs workload only)
#   BENCH_WORKLOADS="data meta warm brk tree scale clone"  (warm: meta's steps and
#                           tree's cp -a, cp -rl and diff -r with the caches warm;
#                           and on demand edits: a break
#                           of every file of a clone, BENCH_FILES files; runs: the
#                           cross-arch runs of t_crossarch, one per round, set up and
#                           discarded each way, and whether the pristine tree stays
#                           intact: minutes per configuration and round, so not in
#                           the default list)
#   BENCH_DROP=1            sync and drop the caches before each timed step
# It runs on the bench kernel (KERNEL=bench: no lockdep, which a user's
# kernel does not have either; see guest/kernel-bench.config).
# "run-bench.sh smoke" is the one-round miniature make test runs so that the
# benchmark cannot rot, on the test kernel; its caller judges it (report.sh
# bench).  "run-bench.sh profile" (make profile) runs the metadata and tree
# workloads once on ext4, bare and through cowlinkfs and overlayfs, with the
# function profiler on, and sums up where the time goes
# (tests/bench-profile.py).
set -eu
mode=${1:-}
case $mode in
"") : "${KERNEL:=bench}" ;;
profile)
	KERNEL=bench BENCH_FS=${BENCH_FS:-ext4} BENCH_ROUNDS=1 BENCH_PROFILE=1
	BENCH_CONFIGS=${BENCH_CONFIGS:-bare cowlinkfs-all overlayfs}
	BENCH_WORKLOADS=${BENCH_WORKLOADS:-meta tree} ;;
smoke)
	BENCH_FS=ext4 BENCH_ROUNDS=1 BENCH_FILES=300 BENCH_SCALE=300 BENCH_META=200
	BENCH_DATA=4 BENCH_SIZES="4k 1m" BENCH_DISK=1G BENCH_DROP=0 ;;
*) echo "usage: run-bench.sh [smoke|profile]" >&2; exit 2 ;;
esac
export KERNEL
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/guest/lib.sh"
guest_lock
: "${BENCH_FS:=ext2 ext3 ext4 xfs xfsr}" "${BENCH_ROUNDS:=5}" "${BENCH_FILES:=10000}"
: "${BENCH_SCALE:=1000 10000 50000}" "${BENCH_META:=10000}" "${BENCH_DATA:=64}"
: "${BENCH_SIZES:=4k 1m 64m 1g 1g-sparse}" "${BENCH_DISK:=8G}"
: "${BENCH_CONFIGS:=bare cowlinkfs-flag cowlinkfs-all overlayfs mergerfs cowdancer reflink hardlinks}"
: "${BENCH_WORKLOADS:=data meta warm brk tree scale clone}" "${BENCH_PROFILE:=}" "${BENCH_DROP:=1}"
for w in $BENCH_WORKLOADS; do
	case $w in data | meta | warm | brk | tree | scale | clone | edits | runs) ;;
	*) echo "BENCH_WORKLOADS: no workload '$w'" >&2; exit 2 ;;
	esac
done
export BENCH_FS BENCH_ROUNDS BENCH_FILES BENCH_SCALE BENCH_META BENCH_DATA BENCH_SIZES \
	BENCH_DISK BENCH_CONFIGS BENCH_WORKLOADS BENCH_PROFILE BENCH_DROP
# Generous: a guest that stops early is judged by its missing plan line.
: "${COWLINKFS_TIMEOUT:=$((86400 * 2))}"
[ "$mode" != smoke ] || COWLINKFS_TIMEOUT=900
export COWLINKFS_TIMEOUT
say "bench: $BENCH_ROUNDS rounds on $BENCH_FS; tree $BENCH_FILES files, scaling $BENCH_SCALE," \
	"breaks of $BENCH_SIZES; progress in $COWLINKFS_LOGS/guest-bench.log"
case " $BENCH_WORKLOADS " in *" runs "*)
	say "bench: the runs workload (cross-arch runs under qemu-user, one per round and" \
		"configuration) takes minutes each; a line for each in $COWLINKFS_LOGS/guest-bench.log" ;;
esac
# The smoke's figures go apart, not over a real run's.
out=$COWLINKFS_LOGS/bench${mode:+-$mode}
rm -rf "$COWLINKFS_LOGS/results-bench" "$out"
mkdir -p "$out"
rc=0
bash "$top/guest/pipeline.sh" bench || rc=$?
if [ "$mode" = profile ]; then
	python3 "$top/tests/host/bench-profile.py" "$COWLINKFS_LOGS/results-bench" "$out" || rc=1
elif [ -s "$COWLINKFS_LOGS/results-bench/bench.csv" ]; then
	python3 "$top/tests/host/bench-report.py" "$COWLINKFS_LOGS/results-bench" "$out" || rc=1
fi
[ "$mode" = smoke ] || bash "$top/tests/host/report.sh" bench || rc=1
exit "$rc"
