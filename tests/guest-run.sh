#!/bin/sh
# Guest: run every test function (test_*) of tests/t_*.sh on each lower
# filesystem it names, each on a fresh lower directory with cowlinkfs
# mounted on /mnt/t.  A "# fstypes:" line at the top of a file names the
# filesystems of its tests (default ext2 ext3 xfs); one directly above a
# test function names that test's own.  A test is run, and counted, only
# where it applies.  Writes TAP to /t/results/tap and to the console; the
# kernel log to /t/results/dmesg.
T=/t
R=$T/results
export PATH=$T/bin:$PATH
: >$R/tap
: >$R/dmesg
dmesg -C
echo 30 >/proc/sys/kernel/hung_task_timeout_secs
n=0
# make test ONLY="cow model" runs tests/t_cow.sh and tests/t_model.sh alone,
# LOWERS="ext4 xfsr" on those lowers alone
only=$(cat $T/only 2>/dev/null || echo '*')
# the test files: each word of $only a glob, expanded in $T/tests only
set -f
# shellcheck disable=SC2086
set -- $only
set +f
files=
for g in "$@"; do
	# shellcheck disable=SC2086 # $g is a glob
	set -- $T/tests/t_$g.sh
	if [ -e "$1" ]; then
		files="$files $*"
	else
		n=$((n + 1))
		echo "not ok $n ONLY word '$g' matches no test file" | tee -a $R/tap
	fi
done
lowers=$(cat $T/lowers 2>/dev/null || echo ext2 ext3 ext4 xfs xfsr tmpfs)
splat='WARNING:|BUG:|Oops|circular locking|possible recursive locking|INFO: task|Call trace:|lockdep|general protection|Kernel panic|KASAN|KFENCE|ODEBUG|UBSAN|kmemleak: .*new suspected'

# tests FILE FS: the test functions of FILE that apply to FS
tests() {
	awk -v fs="$2" '
	/^# fstypes: / && !all { sub(/^# fstypes: /, ""); all = " " $0 " " }
	/^# only on: / { sub(/^# only on: /, ""); own = " " $0 " "; next }
	/^test_[a-z0-9_]*\(\) \{$/ {
		t = own != "" ? own : all != "" ? all : " ext2 ext3 xfs "
		if (index(t, " " fs " "))
			print substr($0, 1, index($0, "(") - 1)
	}
	{ own = "" }' "$1"
}

. $T/tests/lower.sh

for fs in $lowers; do
	mkdir -p /lower/$fs /mnt/t
	dev=$(blkid -L cl-$fs || echo tmpfs)
	if ! mount_lower $fs; then
		n=$((n + 1))
		echo "not ok $n $fs: cannot mount the lower fs" | tee -a $R/tap
		continue
	fi
	first=$n
	for file in $files; do
		group=$(basename "$file" .sh)
		group=${group#t_}
		for fn in $(tests "$file" $fs); do
			n=$((n + 1))
			name="$fs/$group/${fn#test_}"
			root=/lower/$fs/$fn
			echo "# $n $name (at $(cut -d" " -f1 /proc/uptime) s)" >/dev/console
			rm -rf "$root"
			mkdir -p "$root/lower"
			(
				set -eu
				export FS=$fs LDEV=$dev L=$root/lower M=/mnt/t
				. $T/tests/lib.sh
				. "$file"
				cd /
				mount_clfs
				$fn
			) >/tmp/test.log 2>&1 </dev/null
			rc=$?
			cd /
			# Whatever the test left mounted goes, innermost first.
			for m in $(awk '$3 == "cowlinkfs" {print $2}' /proc/mounts | sort -r); do
				umount "$m" 2>>/tmp/test.log || { rc=1; umount -l "$m"; }
			done
			mountpoint -q /lower/$fs || mount_lower $fs
			rm -rf "$root"
			dmesg -c >/tmp/dmesg.log
			cat /tmp/dmesg.log >>$R/dmesg
			if grep -qE "$splat" /tmp/dmesg.log; then
				rc=1
				echo "kernel complained:" >>/tmp/test.log
				grep -E -A5 "$splat" /tmp/dmesg.log >>/tmp/test.log
			fi
			if [ $rc = 0 ]; then
				echo "ok $n $name" | tee -a $R/tap
			else
				echo "not ok $n $name" | tee -a $R/tap
				sed 's/^/# /' /tmp/test.log | tail -n 30 | tee -a $R/tap
			fi
		done
	done
	if [ $n = "$first" ]; then
		n=$((n + 1))
		echo "not ok $n $fs: no test ran (ONLY=$only)" | tee -a $R/tap
	fi
	umount /lower/$fs
done

# After the suite: whatever cowlinkfs allocated is freed.  On the debug
# kernel kmemleak looks for unreferenced objects allocated on a path
# through cowlinkfs; on every kernel the module must unload, which fails
# (with a BUG line) while one of its inodes is still allocated.
result() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n $2" | tee -a $R/tap
	else
		echo "not ok $n $2" | tee -a $R/tap
		sed 's/^/# /' /tmp/test.log | tail -n 30 | tee -a $R/tap
	fi
}
kl=/sys/kernel/debug/kmemleak
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug
if [ -e $kl ]; then
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
rmmod cowlinkfs >/tmp/test.log 2>&1
rc=$?
dmesg >/tmp/dmesg.log
cat /tmp/dmesg.log >>$R/dmesg
if grep -qE "$splat|still has objects" /tmp/dmesg.log; then
	rc=1
	cat /tmp/dmesg.log >>/tmp/test.log
fi
result $rc "module/unloads_with_nothing_left_allocated"
echo "1..$n" | tee -a $R/tap
