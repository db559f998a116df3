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

# leg NAME CMD...: CMD with its output's lines prefixed by NAME (for two
# legs side by side); fails as CMD does
leg() (
	name=$1
	shift
	set -o pipefail
	"$@" 2>&1 | sed -u "s/^/$name | /"
)
rc=0
# Every leg is judged, also one skipped after a failure (as "never finished").
runs=(unit "test$ARCH_SUFFIX")
if [ -z "${ONLY:-}${LOWERS:-}$KERNEL$ARCH_SUFFIX" ]; then
	runs+=(check crash2 bench)
	runs+=(fstests)
	runs+=(debug)
fi
say "host unit tests of tools/ (make unit)"
mkdir -p "$COWLINKFS_LOGS/results-unit"
# report.sh judges these from the TAP they leave.
make -s -C "$top" unit >"$COWLINKFS_LOGS/results-unit/tap" 2>&1 || true
grep -E '^not ok|passed,' "$COWLINKFS_LOGS/results-unit/tap" | sed 's/^/# unit: /'
# The debug kernel builds beside the rootfs and the suite, once the test
# kernel is built (one source tree, one build at a time), at the lowest
# priority: the guest's two workers keep both cores busy, but not every
# moment.  Its log: kernel-debug-early.log.
debug_build=
if [[ " ${runs[*]} " == *" debug "* ]] && bash "$top/guest/deps.sh" &&
	bash "$top/guest/kernel.sh"; then
	KERNEL=debug nice -n 19 bash "$top/guest/kernel.sh" \
		>"$COWLINKFS_LOGS/kernel-debug-early.log" 2>&1 &
	debug_build=$!
fi
# The legs after the suite run in two lanes of guests of one CPU each
# (two TCG guests of two CPUs on two cores slow each other down
# threefold; see Documentation/timings.md), so that the machine's two
# cores stay busy to the end:
#   lane 1: the suite (two CPUs), then the debug leg;
#   lane 2: from the suite's serial phase on, when the suite needs one
#           CPU only: make check, the two crash boots, the bench smoke
#           and the fstests smoke.
# Each leg has a run directory of its own (COWLINKFS_RUN).  A lane's
# lines carry its leg's name.  Each background lane has a process group
# of its own, which an interrupt of make test takes down with it (a
# background job of a script ignores SIGINT).
lanes=()
stop_lanes() {
	local p
	for p in "${lanes[@]}"; do
		kill -TERM -- -"$p" 2>/dev/null || true
	done
	exit 130
}
trap stop_lanes INT TERM

# crash_boot crash1|crash2: stage and boot one boot of the crash test
crash_boot() {
	bash "$top/guest/stage.sh" "$1" && bash "$top/guest/boot.sh" "$1" 300
}

# lane2: the legs that need no second CPU, one after the other; fails
# if one fails, after running the others
lane2() {
	local rc=0
	say "static checks (make check): checkpatch --strict, sparse, W=1, shellcheck"
	mkdir -p "$COWLINKFS_LOGS/results-check"
	bash "$top/guest/check.sh" >"$COWLINKFS_LOGS/results-check/tap" || rc=$?
	export COWLINKFS_SMP=1
	say "crash test 1 of 2: power cut during six link breaks, one CPU"
	COWLINKFS_RUN=crash leg crash1 crash_boot crash1 || rc=$?
	say "crash test 2 of 2: boot again and check every name"
	COWLINKFS_RUN=crash leg crash2 crash_boot crash2 || rc=$?
	# At one CPU, cowlink clone starts no link workers: the smoke's
	# clone takes the one-thread path (the suite tests the workers).
	say "bench smoke: make bench in miniature (one round, ext4, a tree of 300 files), one CPU"
	COWLINKFS_RUN=bench-smoke leg "bench smoke" bash "$top/tests/host/run-bench.sh" smoke ||
		rc=$?
	if [ -n "${FSTESTS:-}" ]; then
		say "fstests smoke: tests/fstests/smoke on ext4 through cowlinkfs, cow=all, one CPU"
		COWLINKFS_RUN=fstests-smoke leg "fstests smoke" \
			bash "$top/tests/host/run-fstests.sh" smoke || rc=$?
	else
		say "fstests smoke: not run, FSTESTS names no fstests source (README, make fstests)"
		mkdir -p "$COWLINKFS_LOGS/results-fstests"
		printf '1..1\nok 1 fstests/smoke # SKIP FSTESTS names no fstests source\n' \
			>"$COWLINKFS_LOGS/results-fstests/tap"
	fi
	return "$rc"
}

if [[ " ${runs[*]} " != *" crash2 "* ]]; then
	bash "$top/guest/pipeline.sh" test || rc=$?
else
	# The fstests build's host packages now: one apt at a time.
	[ -z "${FSTESTS:-}" ] || bash "$top/guest/deps.sh" fstests || rc=$?
	set -m
	bash "$top/guest/pipeline.sh" test </dev/null &
	suite=$!
	lanes+=("$suite")
	set +m
	# Lane 2 starts at the suite's serial phase, or at its end.
	while kill -0 "$suite" 2>/dev/null &&
		! grep -aqs '^# serial phase' "$COWLINKFS_LOGS/guest-test.log"; do
		sleep 2
	done
	set -m
	lane2 </dev/null &
	lane=$!
	lanes+=("$lane")
	set +m
	wait "$suite" || rc=$?
fi
# Where the workers' time went (read it before adding to the suite).
bash "$top/tests/host/durations.sh" >"$COWLINKFS_LOGS/durations-test$ARCH_SUFFIX.txt" 2>&1 &&
	say "suite: $(head -n 1 "$COWLINKFS_LOGS/durations-test$ARCH_SUFFIX.txt");" \
		"by file and the slowest tests in $COWLINKFS_LOGS/durations-test$ARCH_SUFFIX.txt" || true
if [[ " ${runs[*]} " == *" debug "* ]]; then
	if [ "$rc" = 0 ]; then
		# Two CPUs for the parallel writers of the model tests, one
		# worker: beside lane 2 it keeps about one core busy.
		say "debug leg: t_{${DEBUG_ONLY// /,}}.sh on ${DEBUG_LOWERS// /, }, debug kernel," \
			"one worker"
		# A failed early build is tried again, with its log, by pipeline.sh.
		[ -z "$debug_build" ] || wait "$debug_build" || true
		KERNEL=debug ONLY=$DEBUG_ONLY LOWERS=$DEBUG_LOWERS COWLINKFS_WORKERS=1 \
			leg debug bash "$top/guest/pipeline.sh" debug || rc=$?
	fi
	wait "$lane" || rc=$?
fi
trap - INT TERM
bash "$top/tests/host/report.sh" "${runs[@]}" || rc=1
exit "$rc"
