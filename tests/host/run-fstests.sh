#!/bin/bash
# make fstests: fstests in the guest on the bare lower filesystems and
# through cowlinkfs over them (cow=flag and cow=all), side by side in one
# run, then the comparison (tests/host/fstests-report.py) in
# $COWLINKFS_LOGS/fstests.  The knobs, with their defaults:
#   FSTESTS=...                an xfstests-dev checkout or tarball (required)
#   FSTESTS_LOWERS="ext4 xfs"  lower filesystems
#   FSTESTS_MODES="bare flag all"
#   FSTESTS_GROUP=quick        the group to run (FSTESTS_ARGS: any ./check
#                              arguments instead, e.g. "generic/001 generic/013")
#   FSTESTS_DEV_SIZE=6G        the test and scratch devices (sparse)
#   FSTESTS_SECTION_LIMIT=0    seconds per section, then ./check is
#                              interrupted and reports the tests it ran
#   FSTESTS_SKIP=FILE          tests not to run (one per line, as
#                              generic/001): those an earlier part ran
#   FSTESTS_PARTS=DIR[:DIR...] the results of earlier parts (copies of
#                              results-fstests/fstests), reported with
#                              this run's as one
#   FSTESTS_JOBS=1             2: two sections at once, each on its own
#                              devices (tests/fstests.sh says which)
# "run-fstests.sh smoke" is make test's leg: the tests of
# tests/fstests/smoke on ext4 through cowlinkfs with cow=all, each
# expected to pass (no bare section: they were chosen among tests that
# pass there; one section, since a section costs two minutes around its
# tests under TCG); its TAP goes to results-fstests/tap, which make test's
# report judges.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/guest/lib.sh"
guest_lock
mode=${1:-}
if [ -z "${FSTESTS:-}" ]; then
	echo "make fstests: set FSTESTS to an xfstests-dev checkout or tarball" \
		"(where to get it: README.md, make fstests)" >&2
	exit 2
fi
case $mode in
"") ;;
smoke)
	FSTESTS_ARGS=$(awk '!/^#/ && NF { printf "%s ", $1 }' "$top/tests/fstests/smoke")
	FSTESTS_LOWERS=ext4 FSTESTS_MODES=all FSTESTS_JOBS=1 ;;
*) echo "usage: run-fstests.sh [smoke]" >&2; exit 2 ;;
esac
: "${FSTESTS_ARGS:=-g ${FSTESTS_GROUP:-quick}}"
[ -z "${FSTESTS_SKIP:-}" ] || FSTESTS_SKIP=$(realpath "$FSTESTS_SKIP")
case ${FSTESTS_JOBS:=1} in
1 | 2) ;;
*) echo "make fstests: FSTESTS_JOBS=$FSTESTS_JOBS: one lane or two" >&2; exit 2 ;;
esac
export FSTESTS FSTESTS_ARGS FSTESTS_LOWERS FSTESTS_MODES FSTESTS_DEV_SIZE FSTESTS_SECTION_LIMIT \
	FSTESTS_SKIP FSTESTS_JOBS
out=$COWLINKFS_LOGS/fstests${mode:+-$mode}
rm -rf "$out" "$COWLINKFS_LOGS/results-fstests"
mkdir -p "$out"
[ "$mode" != smoke ] || : "${COWLINKFS_TIMEOUT:=1800}"
: "${COWLINKFS_TIMEOUT:=$((86400 * 2))}"
export COWLINKFS_TIMEOUT
say "fstests: ./check $FSTESTS_ARGS on ${FSTESTS_LOWERS:-ext4 xfs}, each" \
	"${FSTESTS_MODES:-bare flag all}; progress in $COWLINKFS_LOGS/guest-fstests$ARCH_SUFFIX.log"
bash "$top/guest/deps.sh" fstests
rc=0
bash "$top/guest/pipeline.sh" fstests || rc=$?
res=$COWLINKFS_LOGS/results-fstests$ARCH_SUFFIX
mkdir -p "$res"
debugfs -R "rdump /results/fstests $res" "$(run_dir)/tests.img" >/dev/null 2>&1 || true
# The next run of any kind replaces the logs: a group run in parts needs
# each part's results for FSTESTS_PARTS.
if [ "$mode" != smoke ] && [ -d "$res/fstests" ]; then
	keep=$COWLINKFS_CACHE/fstests-parts/$(date -u +%Y%m%dT%H%M%SZ)
	mkdir -p "$keep"
	cp -a "$res/fstests/." "$keep/"
	say "fstests: results kept in $keep (FSTESTS_PARTS=$keep adds them to a later part's report)"
fi
expect=()
[ "$mode" != smoke ] || expect=("$top/tests/fstests/smoke")
python3 "$top/tests/host/fstests-report.py" "${FSTESTS_PARTS:+$FSTESTS_PARTS:}$res/fstests" \
	"$top/tests/fstests/known" "$out" \
	"$res/tap" "${expect[@]}" || rc=1
say "fstests: report in $out/report.txt, per test in $out/report.csv"
exit "$rc"
