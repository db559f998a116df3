#!/bin/bash
# make soak: the random testers (cowfsx and cowdata) in the guest for SOAK
# seconds per lower fs (default 600), on the lowers in SOAK_FS (default all
# six), each run with a new seed; then the report.  KERNEL=debug runs them
# on the debug kernel.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/guest/lib.sh"
guest_lock
: "${SOAK:=600}" "${SOAK_FS:=$(cat "$top/tests/lowers")}"
export SOAK SOAK_FS
nfs=$(wc -w <<<"$SOAK_FS")
# The last run on each lower may start just before its time is up.
export COWLINKFS_TIMEOUT=$((SOAK * nfs + 300 * nfs + 300))
say "soak: $SOAK s on each of: $SOAK_FS (guest timeout $COWLINKFS_TIMEOUT s)"
rm -rf "$COWLINKFS_LOGS/results-soak"
rc=0
bash "$top/guest/pipeline.sh" soak || rc=$?
bash "$top/tests/host/report.sh" soak || rc=1
exit "$rc"
