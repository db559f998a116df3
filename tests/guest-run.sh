#!/bin/sh
# Guest: run every test function (test_*) of tests/t_*.sh on each lower
# filesystem, each on a fresh lower directory with cowlinkfs mounted on
# /mnt/t, and print KTAP as kselftest does: the version line and the plan
# first, then one line per test and lower, "# SKIP" for a test that does
# not apply to that lower or to this guest's architecture (tests/plan.awk
# reads the "# lowers:", "# serial", "# lock:", "# owns-lower",
# "# matrix:", "# arch:" and "# timeout:" lines).  A
# worker per CPU (tests/worker.sh; two in make test) runs the tests at
# once, then the serial ones run alone.  Each test has TEST_TIMEOUT seconds (600; make test
# TEST_TIMEOUT=N), or what its "# timeout:" line gives, if more.  A failed
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
# The matrix: a "# matrix: core" test runs on the core lowers it applies
# to (or the first lower it names, if none), unless make test FULL=1 or
# LOWERS asked for the whole matrix.
core=$(cat $T/tests/lowers.core)
full=no
[ ! -e $T/full ] && [ ! -e $T/lowers ] || full=yes
# A test whose "# arch:" line names another machine is a SKIP line.
machine=$(uname -m)

# in_matrix FS ON: whether a "# matrix: core" test for the lowers ON runs
# on FS
in_matrix() {
	case " $core " in
	*" $1 "*) return 0 ;;
	esac
	for w in $2; do
		case " $core " in
		*" $w "*) return 1 ;;
		esac
	done
	[ "$1" = "${2%% *}" ]
}

# The plan, before anything runs, numbered as KTAP will number it:
# "N FS FILE FUNCTION MODE LIMIT STATE" per line (MODE and LIMIT, the
# seconds of its "# timeout:" line or "-", as tests/plan.awk prints them,
# STATE "run", the lowers the test is for, or "arch:MACHINE" where it
# would run but this guest is not MACHINE), "N - ONLY-WORD" for a
# word of ONLY that matches no file, "N FS -" for a lower on which
# nothing would run.  A word of ONLY is a glob of file names, or
# FILE:FUNCTION (globs both: "cow:*mmap*" runs the tests of t_cow.sh whose
# names have mmap in them).
plan=/tmp/plan
: >$plan
: >/tmp/left
: >/tmp/idle
words=
set -f
# shellcheck disable=SC2086
set -- $only
set +f
for g in "$@"; do
	fglob=${g%%:*}
	tglob='*'
	[ "$fglob" = "$g" ] || tglob=${g#*:}
	# shellcheck disable=SC2086 # $fglob is a glob
	set -- $T/tests/t_$fglob.sh
	if [ -e "$1" ]; then
		for f in "$@"; do
			words="$words $f:$tglob"
		done
	else
		echo "- $g" >>$plan
	fi
done
for fs in $lowers; do
	before=$(grep -c " run$" $plan)
	left=$(wc -l </tmp/left)
	for w in $words; do
		file=${w%%:*}
		tglob=${w#*:}
		awk -f $T/tests/plan.awk "$file" |
		while IFS="	" read -r fn on mode matrix arch limit; do
			# shellcheck disable=SC2254 # a glob of ONLY
			case ${fn#test_} in
			$tglob) ;;
			*) continue ;;
			esac
			state=run
			[ "$arch" = any ] || [ "$arch" = "$machine" ] || state=arch:$arch
			if [ "$matrix" = core ] && [ $full = no ] && ! in_matrix "$fs" "$on"; then
				# a run FULL=1 would make (not a SKIP line)
				case " $on " in
				*" $fs "*) [ $state != run ] || echo "$fs $file $fn" >>/tmp/left ;;
				esac
				continue
			fi
			case " $on " in
			*" $fs "*) echo "$fs $file $fn $mode $limit $state" ;;
			*) echo "$fs $file $fn $mode $limit $on" ;;
			esac
		done >>$plan
	done
	[ "$(grep -c " run$" $plan)" != "$before" ] ||
		[ "$(wc -l </tmp/left)" != "$left" ] || echo "$fs" >>/tmp/idle
done
# A lower on which nothing would run fails the run when LOWERS named it,
# or when nothing runs at all (ONLY=tools runs on no core lower: fine).
if [ -e $T/lowers ] || { ! grep -q " run$" $plan && [ ! -s /tmp/left ]; }; then
	sed 's/$/ -/' /tmp/idle >>$plan
fi
# ONLY words may overlap ("cow cow:*mmap*"): each test once.
awk '!seen[$1 " " $2 " " $3]++' $plan >$plan.once
mv $plan.once $plan
awk '{ print NR, $0 }' $plan >$R/plan
n=$(wc -l <$plan)
total=$((n + 1))
[ ! -e $kl ] || total=$((total + 1))
echo "KTAP version 1" | tee -a $R/tap
echo "1..$total" | tee -a $R/tap
left=$(awk '!seen[$0]++' /tmp/left | wc -l)
[ "$left" = 0 ] ||
	echo "# matrix: $left runs of core-matrix tests on other lowers left to make test FULL=1" |
	tee -a $R/tap
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

# A worker per CPU, each in a mount namespace of its own, runs the tests
# that may share the machine; then one runs the "# serial" tests alone.
# The workers take plans from a queue, one at a time, the one with the
# most tests first, so that they end close together whatever each plan
# weighs.  With two lowers or more there is a plan per lower (a lower's
# tests stay on one worker, which mounts it once); with one, a plan per
# worker of every Nth test, and the tests that own their lower fs run in
# the serial phase.
awk '$3 != "-" && $2 != "-"' $R/plan >$R/plan.all
nfs=$(awk '{ print $2 }' $R/plan.all | sort -u | wc -l)
rm -rf $R/plans
mkdir $R/plans
# One per CPU, unless the host asked for fewer (COWLINKFS_WORKERS: the
# debug leg keeps a second CPU for its parallel writers and a second
# guest beside it, see tests/host/run.sh).
workers=$(cat $T/workers 2>/dev/null || nproc)
awk -v nfs="$nfs" -v w="$workers" -v R=$R '
	$5 == "serial" || ($5 == "owns-lower" && nfs == 1) {
		print >(R "/plans/serial")
		next
	}
	{ print >(R "/plans/" (nfs > 1 ? $2 : "w" NR % w)) }' $R/plan.all
for p in $R/plans/*; do
	[ -e "$p" ] && [ "${p##*/}" != serial ] || continue
	echo "$(grep -c ' run$' "$p") $p"
done | sort -rn | cut -d" " -f2 >$R/queue
w=0
while [ $w -lt "$workers" ]; do
	w=$((w + 1))
	unshare -m --propagation private sh $T/tests/worker.sh parallel $R/queue &
done
wait
if [ -s $R/plans/serial ]; then
	# The host starts its next guest at this line (tests/host/run.sh):
	# from here one CPU is enough.
	echo "# serial phase: $(grep -c ' run$' $R/plans/serial) tests run alone" >/dev/console
	echo $R/plans/serial >$R/queue
	sh $T/tests/worker.sh serial $R/queue
fi

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
	grep '^# matrix: ' $R/tap || true
	k=1
	while [ $k -le "$n" ]; do
		cat $R/res/$k 2>/dev/null
		k=$((k + 1))
	done
} >$R/tap.sorted
mv $R/tap.sorted $R/tap
