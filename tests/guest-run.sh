#!/bin/sh
# Guest: run every test function (test_*) of tests/t_*.sh on each lower
# filesystem, each on a fresh lower directory with cowlinkfs mounted on
# /mnt/t, and print KTAP as kselftest does: the version line and the plan
# first, then one line per test and lower, "# SKIP" for a test that does
# not apply to that lower (tests/plan.awk reads the "# lowers:" and
# "# serial" lines).  Two workers (tests/worker.sh) run the tests at once,
# each on every other lower, then the serial ones run alone.  Each test
# has TEST_TIMEOUT seconds (600; make test TEST_TIMEOUT=N).  A failed
# test's whole output and kernel log go to /t/results/failed/.  Writes
# /t/results/tap (the console sees each result as it comes; the file ends
# up in plan order), the kernel log to /t/results/dmesg.
T=/t
R=$T/results
export PATH=$T/bin:$PATH
: >$R/tap
: >$R/dmesg
rm -rf $R/res
mkdir -p $R/failed
dmesg -C
echo 30 >/proc/sys/kernel/hung_task_timeout_secs
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug
kl=/sys/kernel/debug/kmemleak
# make test ONLY="cow model" runs tests/t_cow.sh and tests/t_model.sh alone,
# LOWERS="ext4 xfsr" on those lowers alone
only=$(cat $T/only 2>/dev/null || echo '*')
# The lowers asked for (LOWERS), else all of tests/lowers; what a kernel
# splat looks like in dmesg is tests/splat.ere, as report.sh reads it.
lowers=$(cat $T/lowers 2>/dev/null || cat $T/tests/lowers)
splat=$(cat $T/tests/splat.ere)

# The plan, before anything runs, numbered as KTAP will number it:
# "N FS FILE FUNCTION PHASE STATE" per line (STATE "run" or the lowers
# the test is for, PHASE "parallel" or "serial"), "N - ONLY-WORD" for a
# word of ONLY that matches no file, "N FS -" for a lower on which
# nothing would run.
plan=/tmp/plan
: >$plan
files=
set -f
# shellcheck disable=SC2086
set -- $only
set +f
for g in "$@"; do
	# shellcheck disable=SC2086 # $g is a glob
	set -- $T/tests/t_$g.sh
	if [ -e "$1" ]; then
		files="$files $*"
	else
		echo "- $g" >>$plan
	fi
done
for fs in $lowers; do
	before=$(grep -c " run$" $plan)
	for file in $files; do
		awk -f $T/tests/plan.awk "$file" |
		while IFS="	" read -r fn on ph; do
			case " $on " in
			*" $fs "*) echo "$fs $file $fn $ph run" ;;
			*) echo "$fs $file $fn $ph $on" ;;
			esac
		done >>$plan
	done
	[ "$(grep -c " run$" $plan)" != "$before" ] || echo "$fs -" >>$plan
done
awk '{ print NR, $0 }' $plan >$R/plan
n=$(wc -l <$plan)
total=$((n + 1))
[ ! -e $kl ] || total=$((total + 1))
echo "KTAP version 1" | tee -a $R/tap
echo "1..$total" | tee -a $R/tap
mkdir -p $R/res
: >$R/tap.lock

# result N RC NAME: a result that needs no worker (see tests/worker.sh)
result() {
	if [ "$2" = 0 ]; then
		echo "ok $1 $3"
	else
		echo "not ok $1 $3"
		sed 's/^/# /' /tmp/test.log
	fi >$R/res/$1
	cat $R/res/$1 >>$R/tap
	cat $R/res/$1
}

awk '$2 == "-"' $R/plan | while read -r k _ g; do
	echo "ONLY word '$g' matches no test file" >/tmp/test.log
	result "$k" 1 "only/$g"
done
awk '$3 == "-"' $R/plan | while read -r k fs _; do
	echo "no test applies to $fs (ONLY=$only)" >/tmp/test.log
	result "$k" 1 "$fs/no_test_ran"
done

# Two workers, each with every other lower and a mount namespace of its
# own, run the tests that may share the machine; then one runs the tests
# marked "# serial" (tests/plan.awk), lower by lower.
set -- $lowers
w0=''
w1=''
while [ $# -gt 0 ]; do
	w0="$w0 $1"
	[ $# -lt 2 ] || w1="$w1 $2"
	shift
	[ $# -eq 0 ] || shift
done
for w in "$w0" "$w1"; do
	[ -n "$w" ] || continue
	# shellcheck disable=SC2086 # a list of lowers
	unshare -m --propagation private sh $T/tests/worker.sh parallel $w &
done
wait
# shellcheck disable=SC2086 # a list of lowers
sh $T/tests/worker.sh serial $lowers

# After the suite: whatever cowlinkfs allocated is freed.  On the debug
# kernel kmemleak looks for unreferenced objects allocated on a path
# through cowlinkfs; on every kernel the module must unload, which fails
# (with a BUG line) while one of its inodes is still allocated.
dmesg >$R/dmesg
if [ -e $kl ]; then
	: >/tmp/dmesg.log
	# Twice, past kmemleak's minimum object age, as its docs advise.
	{ echo scan >$kl && sleep 6 && echo scan >$kl && cat $kl >$R/kmemleak; } 2>/tmp/test.log ||
		echo "kmemleak did not scan" >>/tmp/test.log
	awk '/^unreferenced object/ { o = $0 } /cowlinkfs/ && o { print o; o = "" }' \
		$R/kmemleak >>/tmp/test.log
	[ ! -s /tmp/test.log ] || grep -B2 -A20 cowlinkfs $R/kmemleak >>/tmp/test.log
	# a kmemleak that gave up (pool exhausted) scans nothing
	{ cat $R/dmesg; dmesg; } | grep 'kmemleak: .*disabled' >>/tmp/test.log
	n=$((n + 1))
	result $n "$([ -s /tmp/test.log ] && echo 1 || echo 0)" "kmemleak/no_leak_from_cowlinkfs"
fi
dmesg -C
: >/tmp/dmesg.log
rmmod cowlinkfs >/tmp/test.log 2>&1
rc=$?
dmesg >/tmp/dmesg.log
cat /tmp/dmesg.log >>$R/dmesg
if grep -qE "$splat|still has objects" /tmp/dmesg.log; then
	rc=1
	cat /tmp/dmesg.log >>/tmp/test.log
fi
n=$((n + 1))
result $n $rc "module/unloads_with_nothing_left_allocated"

# The results in the order of the plan, as one KTAP stream.
{
	echo "KTAP version 1"
	echo "1..$total"
	k=1
	while [ $k -le "$n" ]; do
		cat $R/res/$k 2>/dev/null
		k=$((k + 1))
	done
} >$R/tap.sorted
mv $R/tap.sorted $R/tap
