#!/bin/bash
# The suite, as `make test` and CI run it: host unit tests of tools/, then
# build what is missing and run every test in the arm64 guest, then the
# debug leg (t_cow and t_model on the debug kernel, see DEBUG_* below);
# beside them, from the suite's serial phase on, the static checks of
# make check, the crash test (two boots: power cut during link breaks,
# then a check), a miniature make bench and fstests' smoke list through
# cowlinkfs (tests/fstests/smoke; when FSTESTS names the fstests source,
# as .ci/run does); then the report.  ONLY, LOWERS, KERNEL or ARCH=x86_64
# runs the guest suite alone.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/guest/lib.sh"
guest_lock
# The debug leg: what of the suite CI can afford on the debug kernel
# (KASAN, kmemleak, ...), which runs it some 3 times slower: t_cow.sh and
# the model tests of cow=all and of parallel writers on ext4, on one
# worker (381 s of guest time on two workers with inline KASAN; the other
# four model tests, which the test kernel runs, would add a few minutes).
DEBUG_ONLY="cow model:*cow_all model:*in_parallel*"
DEBUG_LOWERS=ext4
rm -rf "$COWLINKFS_LOGS"/results-* "$COWLINKFS_LOGS"/guest-*.log

# The x86_64 guest runs under TCG here and has tier 2 of the cross-arch
# runs (t_crossarch.sh, up to 40 minutes on one worker): more than the
# hour a guest run gets by default.
[ -z "$ARCH_SUFFIX" ] || : "${COWLINKFS_TIMEOUT:=7200}"
export COWLINKFS_TIMEOUT

rc=0
# Every leg is judged, also one skipped after a failure (as "never finished").
runs=(unit "test$ARCH_SUFFIX")
whole=
if [ -z "${ONLY:-}${LOWERS:-}$KERNEL$ARCH_SUFFIX" ]; then
	whole=yes
	runs+=(check crash1 crash2 bench fstests debug)
fi
say "host unit tests of tools/ (make unit)"
mkdir -p "$COWLINKFS_LOGS/results-unit"
# report.sh judges these from the TAP they leave.
make -s -C "$top" unit >"$COWLINKFS_LOGS/results-unit/tap" 2>&1 || true
grep -E '^not ok|passed,' "$COWLINKFS_LOGS/results-unit/tap" | sed 's/^/# unit: /'
# The legs run in two lanes, so that the machine's two cores stay busy
# to the end:
#   1. the suite (a guest of two CPUs), then the debug leg (two CPUs, one
#      worker: its parallel writers still meet on two CPUs, and it keeps
#      about one core busy);
#   2. from the suite's serial phase on, when the suite needs one CPU
#      only: tests/host/beside.sh, in guests of one CPU.
# Two TCG guests of two busy CPUs each on two cores slow each other down
# threefold (Documentation/timings.md); a guest whose second CPU idles
# beside a guest of one CPU do not.  Each background job runs in a
# session of its own (start_job), which an interrupt, a hangup or a
# terminate signal of make test takes down with it, and which ends
# itself if make test is killed outright.
jobs_started=()
# start_job CMD...: CMD in the background in a session of its own (its
# pid is its process group, in jobs_started; no terminal stops it for
# writing), whose process group is ended if this shell dies (SIGKILL)
start_job() {
	# shellcheck disable=SC2016 # expanded by the inner shell
	setsid bash -c '
		parent=$1
		shift
		{
			while kill -0 "$parent"; do sleep 5; done
			kill -TERM 0
		} </dev/null >/dev/null 2>&1 &
		watch=$!
		"$@"
		rc=$?
		kill "$watch" 2>/dev/null
		exit "$rc"' - "$$" "$@" &
	jobs_started+=("$!")
}
stop_jobs() {
	local p
	trap - INT TERM HUP
	for p in "${jobs_started[@]}"; do
		kill -TERM -- -"$p" 2>/dev/null || true
	done
	exit 130
}
trap stop_jobs INT TERM HUP

# The debug kernel builds beside the rootfs and the suite, once the test
# kernel is built (one source tree, one build at a time), at the lowest
# priority: the guest's two workers keep both cores busy, but not every
# moment.  Its log: kernel-debug-early.log.
debug_build=
if [ -n "$whole" ] && bash "$top/guest/deps.sh" && bash "$top/guest/kernel.sh"; then
	KERNEL=debug start_job nice -n 19 bash "$top/guest/kernel.sh" \
		>"$COWLINKFS_LOGS/kernel-debug-early.log" 2>&1
	debug_build=$!
fi
if [ -z "$whole" ]; then
	bash "$top/guest/pipeline.sh" test || rc=$?
else
	# The fstests build's host packages now: one apt at a time.
	[ -z "${FSTESTS:-}" ] || bash "$top/guest/deps.sh" fstests || rc=$?
	start_job bash "$top/guest/pipeline.sh" test </dev/null
	suite=$!
	# The second lane starts at the suite's serial phase, or at its end
	# if it passed without one; a suite that failed before its serial
	# phase leaves the lane nothing to add.
	while kill -0 "$suite" 2>/dev/null &&
		! grep -aqs '^# serial phase' "$COWLINKFS_LOGS/guest-test.log"; do
		sleep 2
	done
	suite_rc=0
	if ! kill -0 "$suite" 2>/dev/null; then
		wait "$suite" || suite_rc=$?
		suite=
	fi
	beside=
	if [ "$suite_rc" = 0 ]; then
		start_job bash "$top/tests/host/beside.sh" </dev/null
		beside=$!
	else
		say "make check, crash test, bench and fstests smokes: not run, the suite failed"
	fi
	[ -z "$suite" ] || wait "$suite" || suite_rc=$?
	[ "$suite_rc" = 0 ] || rc=$suite_rc
fi
# Where the workers' time went (read it before adding to the suite).
bash "$top/tests/host/durations.sh" >"$COWLINKFS_LOGS/durations-test$ARCH_SUFFIX.txt" 2>&1 &&
	say "suite: $(head -n 1 "$COWLINKFS_LOGS/durations-test$ARCH_SUFFIX.txt");" \
		"by file and the slowest tests in $COWLINKFS_LOGS/durations-test$ARCH_SUFFIX.txt" || true
if [ -n "$whole" ] && [ "$rc" = 0 ]; then
	say "debug leg: t_{${DEBUG_ONLY// /,}}.sh on ${DEBUG_LOWERS// /, }, debug kernel," \
		"one worker"
	# A failed early build is tried again, with its log, by pipeline.sh.
	[ -z "$debug_build" ] || wait "$debug_build" || true
	# In the background, waited for: a signal is handled at once.
	KERNEL=debug ONLY=$DEBUG_ONLY LOWERS=$DEBUG_LOWERS COWLINKFS_WORKERS=1 \
		start_job bash "$top/guest/pipeline.sh" debug </dev/null \
		> >(sed -u 's/^/debug | /') 2>&1
	wait "$!" || rc=$?
fi
[ -z "${beside:-}" ] || wait "$beside" || rc=$?
trap - INT TERM HUP
bash "$top/tests/host/report.sh" "${runs[@]}" || rc=1
exit "$rc"
