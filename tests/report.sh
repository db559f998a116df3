#!/bin/bash
# Host: read the guest's results from the tests disk and judge the run:
# one line per test, then "N passed, N failed".  Fails on any failed test,
# a missing or short plan, and a kernel splat anywhere in the guest's log.
set -eu
. "$(dirname "$0")/../guest/lib.sh"

img=$COWLINKFS_CACHE/run/tests.img
log=$COWLINKFS_LOGS/guest-test.log
out=$COWLINKFS_LOGS/results
rm -rf "$out"
mkdir -p "$out"
for f in tap dmesg; do
	debugfs -R "dump /results/$f $out/$f" "$img" >/dev/null 2>&1 || true
done

tap=$out/tap
passed=0
failed=0
if [ -s "$tap" ]; then
	passed=$(grep -c '^ok ' "$tap" || true)
	failed=$(grep -c '^not ok ' "$tap" || true)
fi
plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$tap" 2>/dev/null | tail -n 1)
splat='WARNING:|BUG:|Oops|circular locking|possible recursive locking|INFO: task .* blocked|Call trace:|general protection|Kernel panic'

echo "# results in $out, serial log in $log"
if [ -z "$plan" ]; then
	echo "not ok - the guest never finished the suite (no plan line); see $log"
	failed=$((failed + 1))
elif [ "$plan" != $((passed + failed)) ]; then
	echo "not ok - the guest ran $((passed + failed)) of $plan tests"
	failed=$((failed + 1))
fi
if grep -aqE "$splat" "$log" "$out/dmesg" 2>/dev/null; then
	echo "not ok - kernel warning, oops or lockdep report in the guest:"
	grep -ahE -A3 "$splat" "$log" "$out/dmesg" | head -n 40 | sed 's/^/# /'
	failed=$((failed + 1))
fi
grep '^not ok' "$tap" 2>/dev/null | sed 's/^/# failed: /' || true
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
