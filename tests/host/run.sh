#!/bin/bash
# The suite, as `make test` and CI run it: host unit tests of tools/, then
# build what is missing and run every test in the arm64 guest, then the
# static checks of make check, then the crash test (two boots: power cut
# during link breaks, then a check), then side by side a miniature make
# bench and fstests' smoke list through cowlinkfs (tests/fstests/smoke;
# when FSTESTS names the fstests source, as .ci/run does), then the debug leg (t_cow
# and t_model on the debug kernel, see DEBUG_* below), and report.  ONLY, LOWERS, KERNEL or
# ARCH=x86_64 runs the guest suite alone.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/guest/lib.sh"
guest_lock
# The debug leg: what of the suite CI can afford on the debug kernel
# (KASAN, kmemleak, ...), which runs it some 3 times slower: t_cow.sh and
# the model tests of cow=all and of parallel writers on ext4, every other
# test on each worker (381 s of guest time with inline KASAN; the other
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
bash "$top/guest/pipeline.sh" test || rc=$?
# Where the workers' time went (read it before adding to the suite).
bash "$top/tests/host/durations.sh" >"$COWLINKFS_LOGS/durations-test$ARCH_SUFFIX.txt" 2>&1 &&
	say "suite: $(head -n 1 "$COWLINKFS_LOGS/durations-test$ARCH_SUFFIX.txt");" \
		"by file and the slowest tests in $COWLINKFS_LOGS/durations-test$ARCH_SUFFIX.txt" || true
if [ "$rc" = 0 ] && [ -z "${ONLY:-}${LOWERS:-}$KERNEL$ARCH_SUFFIX" ]; then
	say "static checks (make check): checkpatch --strict, sparse, W=1, shellcheck"
	mkdir -p "$COWLINKFS_LOGS/results-check"
	bash "$top/guest/check.sh" >"$COWLINKFS_LOGS/results-check/tap" || rc=$?
	say "crash test 1 of 2: power cut during six link breaks"
	bash "$top/guest/stage.sh" crash1 && bash "$top/guest/boot.sh" crash1 300 || rc=$?
	say "crash test 2 of 2: boot again and check every name"
	bash "$top/guest/stage.sh" crash2 && bash "$top/guest/boot.sh" crash2 300 || rc=$?
	# The two smokes keep about one core busy each (1.1 cores measured
	# for the bench smoke): side by side, in guests of one CPU and run
	# directories of their own, they take the time of the longer one.
	# Their lines carry the leg's name.  The fstests build's host
	# packages come first: one apt at a time.
	# At one CPU, cowlink clone starts no link workers: the smoke's clone
	# takes the one-thread path (the suite tests the workers).  The leg
	# has a process group of its own, which an interrupt of make test
	# takes down with it (a background job of a script ignores SIGINT).
	[ -z "${FSTESTS:-}" ] || bash "$top/guest/deps.sh" fstests || rc=$?
	say "bench smoke: make bench in miniature (one round, ext4, a tree of 300 files)," \
		"one CPU${FSTESTS:+, beside the fstests smoke}"
	set -m
	COWLINKFS_SMP=1 COWLINKFS_RUN=bench-smoke \
		leg "bench smoke" bash "$top/tests/host/run-bench.sh" smoke </dev/null &
	bench=$!
	set +m
	trap 'kill -TERM -- -"$bench" 2>/dev/null; exit 130' INT TERM
	if [ -n "${FSTESTS:-}" ]; then
		say "fstests smoke: tests/fstests/smoke on ext4 through cowlinkfs, cow=all, one CPU"
		COWLINKFS_SMP=1 COWLINKFS_RUN=fstests-smoke \
			leg "fstests smoke" bash "$top/tests/host/run-fstests.sh" smoke || rc=$?
	else
		say "fstests smoke: not run, FSTESTS names no fstests source (README, make fstests)"
		mkdir -p "$COWLINKFS_LOGS/results-fstests"
		printf '1..1\nok 1 fstests/smoke # SKIP FSTESTS names no fstests source\n' \
			>"$COWLINKFS_LOGS/results-fstests/tap"
	fi
	wait "$bench" || rc=$?
	trap - INT TERM
	# After the others, not beside them: it keeps 1.7 cores busy, and two
	# guests of two CPUs each on two cores took three times as long each
	# (see Documentation/timings.md).
	say "debug leg: t_{${DEBUG_ONLY// /,}}.sh on ${DEBUG_LOWERS// /, }, debug kernel"
	# A failed early build is tried again, with its log, by pipeline.sh.
	[ -z "$debug_build" ] || wait "$debug_build" || true
	KERNEL=debug ONLY=$DEBUG_ONLY LOWERS=$DEBUG_LOWERS \
		bash "$top/guest/pipeline.sh" debug || rc=$?
fi
bash "$top/tests/host/report.sh" "${runs[@]}" || rc=1
exit "$rc"
