#!/bin/sh
# Guest: run one test function, as guest-run.sh does for each:
#   run-one.sh FILE FUNCTION
# with FS, LDEV, L (a fresh lower directory) and M (its mount point) in
# the environment; cowlinkfs is mounted from $L on $M first.
set -eu
. /t/tests/lib.sh
# shellcheck source=/dev/null
. "$1"
cd /
mount_clfs
"$2"
