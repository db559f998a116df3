#!/bin/sh
# Guest: one worker of guest-run.sh.  Takes plans (files of lines of
# $R/plan: "N FS FILE FUNCTION MODE LIMIT STATE", LIMIT the seconds of the
# test's "# timeout:" line or "-", STATE "run", the lowers the test is
# for, or "arch:MACHINE", the guest it is for) from the file QUEUE, one at
# a time, first come first served, until none is left, and runs the tests
# of each in order, each on a fresh lower directory with cowlinkfs
# mounted on /mnt/t:
#   worker.sh PHASE QUEUE
# PHASE "parallel" runs in a mount namespace of its own (guest-run.sh
# starts it under unshare -m), with /tmp and /mnt its own, so that two
# workers' tests never meet there; PHASE "serial" runs alone, for tests
# that change what every test sees.  A test whose MODE is "lock:NAME"
# holds $R/lock.NAME while it runs.  Each result is a block in
# $R/res/N (guest-run.sh puts them in order), also appended to $R/tap as
# it comes, and the console; a failed test's whole log and kernel log
# go to $R/failed/.
T=/t
R=$T/results
TEST_TIMEOUT=$(cat $T/timeout 2>/dev/null || echo 600)
export PATH=$T/bin:$PATH
splat=$(cat $T/tests/splat.ere)
phase=$1
queue=$2
if [ "$phase" = parallel ]; then
	mount -t tmpfs -o mode=1777 tmpfs /tmp
	mount -t tmpfs tmpfs /mnt
fi
mkdir -p /mnt/t
. $T/tests/lower.sh

# Under TCG every process costs 60 to 100 ms: the steps around a test
# use shell builtins where they can (a test is some twenty processes
# fewer than it was, a second less each).

# result N RC NAME [DIRECTIVE]: one KTAP line; a failure's log follows as
# "#" lines and is kept whole in $R/failed/
result() {
	if [ "$2" = 0 ]; then
		line="ok $1 $3${4:+ # $4}"
		echo "$line" >"$R/res/$1"
		# one short write with O_APPEND: lines of two workers never mix
		echo "$line" >>$R/tap
		echo "$line"
		return
	fi
	b=/tmp/result.$1
	echo "not ok $1 $3${4:+ # $4}" >$b
	sed 's/^/# /' /tmp/test.log | tail -n 30 >>$b
	{
		cat /tmp/test.log
		echo "--- the kernel log of the test ---"
		cat /tmp/dmesg.log
	} >"$R/failed/$(echo "$3" | tr / _).log" 2>&1
	cp $b "$R/res/$1"
	flock $R/tap.lock sh -c 'cat "$1" >>"$2"' sh $b $R/tap
	cat $b
	rm -f $b
}

# kernel_log T0 T1: the kernel log lines stamped between T0 and T1 (two
# workers share the log, so neither clears it) into /tmp/dmesg.log; fails
# when one of them is a splat
kernel_log() {
	dmesg | re=$splat awk -v a="$1" -v b="$2" '{
		t = substr($0, 2, index($0, "]") - 2) + 0
		if (t >= a && t <= b) {
			print
			if ($0 ~ ENVIRON["re"])
				bad = 1
		}
	}
	END { exit bad }' >/tmp/dmesg.log
}

# reap PGID: the processes left in process group PGID are killed, and
# waited for (5 s at most: one in D state dies when its I/O ends)
reap() {
	kill -KILL -"$1" 2>/dev/null || return 0
	echo "the test left processes running: killed" >>/tmp/test.log
	i=0
	while kill -0 -"$1" 2>/dev/null && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

# run_test FS FILE FUNCTION: one test on a fresh lower directory ($n,
# $name and $secs, its time limit, are run_plan's)
run_test() {
	root=/lower/$1/$3
	[ ! -e "$root" ] || rm -rf "$root"
	mkdir -p "$root/lower"
	read -r t0 _ </proc/uptime
	# start and end on the console, for tests/host/durations.sh (after
	# any lock is taken: the wait is not the test's)
	echo "# $n $name (at $t0 s)" >/dev/console
	# timeout makes a process group of the test: what the test leaves
	# running (the background writer of a test that failed half way) is
	# killed before the unmount, or it keeps the mount busy and fails
	# the tests after it
	FS=$1 LDEV=$dev L=$root/lower M=/mnt/t \
		timeout -k 10 "$secs" sh $T/tests/run-one.sh "$2" "$3" \
		>/tmp/test.log 2>&1 </dev/null &
	pg=$!
	wait $pg
	rc=$?
	reap $pg
	[ $rc != 124 ] ||
		echo "TIMEOUT: still running after $secs s, killed" >>/tmp/test.log
	cd /
	# Whatever the test left mounted goes, innermost (listed last) first;
	# the lower fs is mounted again if the test unmounted it.
	clfs=
	lower=no
	while read -r _ mp type _; do
		[ "$type" != cowlinkfs ] || clfs="$mp $clfs"
		[ "$mp" != "/lower/$1" ] || lower=yes
	done </proc/mounts
	for m in $clfs; do
		umount "$m" 2>>/tmp/test.log || { rc=1; umount -l "$m"; }
	done
	[ $lower = yes ] || mount_lower "$1"
	rm -rf "$root"
	read -r t1 _ </proc/uptime
	echo "# $n $name (ended at $t1 s)" >/dev/console
	if ! kernel_log "$t0" "$t1"; then
		rc=1
		echo "kernel complained:" >>/tmp/test.log
		grep -E -A5 "$splat" /tmp/dmesg.log >>/tmp/test.log
	fi
	return $rc
}

# run_locked FS FILE FUNCTION MODE WAIT: run_test, holding the lock that
# MODE "lock:NAME" names (the test itself does not see its descriptor).
# With WAIT "no", a lock the other worker holds is not waited for: the
# test is not run, and run_locked sets deferred=yes.
run_locked() {
	deferred=no
	case $4 in
	lock:*)
		exec 9>"$R/lock.${4#lock:}"
		if ! flock -n 9; then
			if [ "$5" = no ]; then
				exec 9>&-
				deferred=yes
				return 0
			fi
			flock 9
		fi
		run_test "$1" "$2" "$3" 9>&-
		rc=$?
		flock -u 9
		exec 9>&-
		return $rc
		;;
	esac
	run_test "$1" "$2" "$3"
}

# run_plan PLAN WAIT: every test of PLAN; with WAIT "no", those whose lock
# is busy go to /tmp/deferred instead
cur=
mounted=false
run_plan() {
	while read -r n fs file fn mode limit on; do
		if [ "$fs" != "$cur" ]; then
			! $mounted || umount "/lower/$cur"
			cur=$fs
			mkdir -p "/lower/$fs"
			dev=$(blkid -L "cl-$fs" || echo tmpfs)
			mounted=true
			mount_lower "$fs" >/tmp/test.log 2>&1 || mounted=false
		fi
		: >/tmp/dmesg.log
		group=${file##*/}
		group=${group%.sh}
		name="$fs/${group#t_}/${fn#test_}"
		if [ "$on" != run ]; then
			case $on in
			arch:*) result "$n" 0 "$name" "SKIP only in an ${on#arch:} guest" ;;
			*) result "$n" 0 "$name" "SKIP only on $on" ;;
			esac
		elif ! $mounted; then
			result "$n" 1 "$name" "the lower fs did not mount"
		else
			secs=$TEST_TIMEOUT
			[ "$limit" = - ] || [ "$limit" -le "$secs" ] || secs=$limit
			run_locked "$fs" "$file" "$fn" "$mode" "$2" </dev/null
			rc=$?
			if [ $deferred = yes ]; then
				echo "$n $fs $file $fn $mode $limit $on" >>/tmp/deferred
				echo "# $n $name: the other worker holds ${mode#lock:}, later" >/dev/console
			else
				result "$n" $rc "$name"
			fi
		fi
	done <"$1"
}

# next_plan: the first plan of the queue, taken off it
next_plan() {
	flock "$queue.lock" sh -c 'head -n 1 "$1" && sed -i 1d "$1"' sh "$queue"
}

# A test whose lock the other worker holds waits until this worker has run
# everything else.
: >/tmp/deferred
while plan=$(next_plan) && [ -n "$plan" ]; do
	run_plan "$plan" no
done
run_plan /tmp/deferred yes
! $mounted || umount "/lower/$cur"
