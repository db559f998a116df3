#!/bin/bash
# The suite: build what is missing, run every test in the arm64 guest and
# report.  This is what `make test` and CI run.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
rc=0
bash "$top/guest/pipeline.sh" test || rc=$?
bash "$top/tests/report.sh" || rc=1
exit "$rc"
