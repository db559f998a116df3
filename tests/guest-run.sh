#!/bin/sh
# Guest: run every test function (test_*) of tests/t_*.sh on each lower
# filesystem, each on a fresh lower directory with cowlinkfs mounted on
# /mnt/t, and print KTAP as kselftest does: the version line and the plan
# first, then one line per test and lower, "# SKIP" for a test that does
# not apply to that lower (tests/plan.awk reads the "# lowers:" lines).
# Each test has TEST_TIMEOUT seconds (600; make test TEST_TIMEOUT=N).  A
# failed test's whole output and kernel log go to /t/results/failed/.
# Writes /t/results/tap (and the console), the kernel log to
# /t/results/dmesg.
T=/t
R=$T/results
TEST_TIMEOUT=$(cat $T/timeout 2>/dev/null || echo 600)
export PATH=$T/bin:$PATH
: >$R/tap
: >$R/dmesg
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

# The plan, before anything runs: "FS FILE FUNCTION LOWERS..." per line,
# "- ONLY-WORD" for a word of ONLY that matches no file, "FS -" for a
# lower on which nothing would run.
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
		while IFS="	" read -r fn on; do
			case " $on " in
			*" $fs "*) echo "$fs $file $fn run" ;;
			*) echo "$fs $file $fn $on" ;;
			esac
		done >>$plan
	done
	[ "$(grep -c " run$" $plan)" != "$before" ] || echo "$fs -" >>$plan
done
n=0
total=$(($(wc -l <$plan) + 1))
[ ! -e $kl ] || total=$((total + 1))
echo "KTAP version 1" | tee -a $R/tap
echo "1..$total" | tee -a $R/tap

# result RC NAME [DIRECTIVE]: one KTAP line; a failure's log follows as
# "#" lines and is kept whole in results/failed/
result() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n $2${3:+ # $3}" | tee -a $R/tap
	else
		echo "not ok $n $2${3:+ # $3}" | tee -a $R/tap
		sed 's/^/# /' /tmp/test.log | tail -n 30 | tee -a $R/tap
		{
			cat /tmp/test.log
			echo "--- the kernel log of the test ---"
			cat /tmp/dmesg.log
		} >"$R/failed/$(echo "$2" | tr / _).log" 2>&1
	fi
}

. $T/tests/lower.sh

# run_test FS FILE FUNCTION: one test on a fresh lower directory
run_test() {
	root=/lower/$1/$3
	rm -rf "$root"
	mkdir -p "$root/lower"
	FS=$1 LDEV=$dev L=$root/lower M=/mnt/t \
		timeout -k 10 $TEST_TIMEOUT sh $T/tests/run-one.sh "$2" "$3" \
		>/tmp/test.log 2>&1 </dev/null
	rc=$?
	[ $rc != 124 ] ||
		echo "TIMEOUT: still running after $TEST_TIMEOUT s, killed" >>/tmp/test.log
	cd /
	# Whatever the test left mounted goes, innermost first.
	for m in $(awk '$3 == "cowlinkfs" {print $2}' /proc/mounts | sort -r); do
		umount "$m" 2>>/tmp/test.log || { rc=1; umount -l "$m"; }
	done
	mountpoint -q /lower/$1 || mount_lower $1
	rm -rf "$root"
	dmesg -c >/tmp/dmesg.log
	cat /tmp/dmesg.log >>$R/dmesg
	if grep -qE "$splat" /tmp/dmesg.log; then
		rc=1
		echo "kernel complained:" >>/tmp/test.log
		grep -E -A5 "$splat" /tmp/dmesg.log >>/tmp/test.log
	fi
	return $rc
}

grep "^- " $plan | while read -r _ g; do
	echo "ONLY word '$g' matches no test file" >/tmp/test.log
	: >/tmp/dmesg.log
	result 1 "only/$g"
done
n=$(grep -c "^- " $plan)
for fs in $lowers; do
	mkdir -p /lower/$fs /mnt/t
	dev=$(blkid -L cl-$fs || echo tmpfs)
	mounted=true
	if ! mount_lower $fs >/tmp/test.log 2>&1; then
		mounted=false
	fi
	grep "^$fs " $plan >/tmp/plan.fs
	while read -r _ file fn on; do
		: >/tmp/dmesg.log
		if [ "$file" = - ]; then
			echo "no test applies to $fs (ONLY=$only)" >/tmp/test.log
			result 1 "$fs/no_test_ran"
			continue
		fi
		group=$(basename "$file" .sh)
		name="$fs/${group#t_}/${fn#test_}"
		if [ "$on" != run ]; then
			result 0 "$name" "SKIP only on $on"
		elif ! $mounted; then
			result 1 "$name" "the lower fs did not mount"
		else
			echo "# $((n + 1)) $name (at $(cut -d" " -f1 /proc/uptime) s)" >/dev/console
			run_test $fs "$file" "$fn" </dev/null
			result $? "$name"
		fi
	done </tmp/plan.fs
	! $mounted || umount /lower/$fs
done

# After the suite: whatever cowlinkfs allocated is freed.  On the debug
# kernel kmemleak looks for unreferenced objects allocated on a path
# through cowlinkfs; on every kernel the module must unload, which fails
# (with a BUG line) while one of its inodes is still allocated.
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
	result "$([ -s /tmp/test.log ] && echo 1 || echo 0)" "kmemleak/no_leak_from_cowlinkfs"
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
result $rc "module/unloads_with_nothing_left_allocated"
