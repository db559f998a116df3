#!/bin/bash
# Host: judge the runs named as arguments from the results they left
# (unit: the host unit tests, test: the suite, check: make check, crash1
# and crash2: the crash test's boots, debug: the debug leg, soak: make soak): one line per
# test, then "N passed, N failed".  Fails on a failed test, a missing or short plan,
# and a kernel warning, oops or lockdep report in any guest log.
set -eu
. "$(dirname "$0")/../../guest/lib.sh"

L=$COWLINKFS_LOGS
passed=0
failed=0
# What a kernel splat looks like, as guest-run.sh reads it in the guest.
splat=$(cat "$COWLINKFS_TOP/tests/splat.ere")

runs=${*:?usage: report.sh RUN...}
for run in $runs; do
	tap=$L/results-$run/tap
	p=0
	f=0
	s=0
	if [ -s "$tap" ]; then
		# A skip is not a pass: "ok N NAME # SKIP reason" counts apart.
		s=$(grep -c '^ok .* # SKIP' "$tap" || true)
		p=$(($(grep -c '^ok ' "$tap" || true) - s))
		f=$(grep -c '^not ok ' "$tap" || true)
		grep '^not ok' "$tap" | sed 's/^/# failed: /' || true
	fi
	plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$tap" 2>/dev/null | tail -n 1)
	if [ "$plan" = 0 ]; then
		echo "not ok - $run: the guest ran nothing (plan 1..0)"
		f=$((f + 1))
	elif [ -z "$plan" ]; then
		echo "not ok - $run: no plan line (the guest never got that far); see $L/guest-$run.log"
		f=$((f + 1))
	elif [ "$plan" != $((p + f + s)) ]; then
		echo "not ok - $run: the guest ran $((p + f + s)) of $plan tests"
		f=$((f + 1))
	fi
	echo "# $run: $p passed, $f failed, $s skipped (results in $L/results-$run)"
	grep -s '^# matrix: ' "$tap" | sed "s/^# /# $run: /" || true
	passed=$((passed + p))
	failed=$((failed + f))
done

logs=$(for run in $runs; do
	ls "$L/guest-$run.log" "$L/results-$run/dmesg" 2>/dev/null || true
done)
# shellcheck disable=SC2086
if [ -n "$logs" ] && grep -aqE "$splat" $logs; then
	echo "not ok - kernel warning, oops or lockdep report in a guest log:"
	# shellcheck disable=SC2086
	grep -aE -A3 "$splat" $logs | head -n 40 | sed 's/^/# /'
	failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
