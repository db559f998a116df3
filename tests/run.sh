#!/bin/bash
# The suite: host unit tests of tools/, then build what is missing, run
# every test in the arm64 guest, then
# the crash test (two boots: power cut during link breaks, then a check),
# and report.  This is what `make test` and CI run.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/guest/lib.sh"
rm -rf "$COWLINKFS_LOGS"/results-* "$COWLINKFS_LOGS"/guest-*.log
rc=0
say "host unit tests of tools/ (make unit)"
mkdir -p "$COWLINKFS_LOGS/results-unit"
# report.sh judges these from the TAP they leave.
make -s -C "$top" unit >"$COWLINKFS_LOGS/results-unit/tap" 2>&1 || true
grep -E '^not ok|passed,' "$COWLINKFS_LOGS/results-unit/tap" | sed 's/^/# unit: /'
bash "$top/guest/pipeline.sh" test || rc=$?
if [ "$rc" = 0 ] && [ -z "${ONLY:-}" ]; then
	say "crash test 1 of 2: power cut during six link breaks"
	bash "$top/guest/stage.sh" crash1 && bash "$top/guest/boot.sh" crash1 300 || rc=$?
	say "crash test 2 of 2: boot again and check every name"
	bash "$top/guest/stage.sh" crash2 && bash "$top/guest/boot.sh" crash2 300 || rc=$?
fi
bash "$top/tests/report.sh" || rc=1
exit "$rc"
