#!/bin/bash
# The legs of make test that need no second CPU, one after the other:
# make check, the crash test (two boots: a power cut during link breaks
# and cross-arch runs, then a check of every name), a miniature make bench
# and fstests' smoke list through cowlinkfs (tests/fstests/smoke; when
# FSTESTS names the fstests source, as .ci/run does).  tests/host/run.sh
# starts it beside the suite's serial phase and the debug leg, in guests
# of one CPU, each leg in a run directory of its own (COWLINKFS_RUN) and
# its lines prefixed by its name.  Fails if a leg failed, after running
# the others; report.sh judges each from the results it left.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/guest/lib.sh"
guest_lock
export COWLINKFS_SMP=1
rc=0

say "static checks (make check): checkpatch --strict, sparse, W=1, shellcheck"
mkdir -p "$COWLINKFS_LOGS/results-check"
bash "$top/guest/check.sh" >"$COWLINKFS_LOGS/results-check/tap" \
	2> >(sed -u 's/^/check | /' >&2) || rc=1

# crash BOOT: stage and boot one boot of the crash test.  Its first boot
# leaves no results of its own (the power goes): its TAP line says
# whether the guest got to the cut (boot.sh: QEMU ended by the guest's
# sysrq, not by the timeout).  600 s: on one CPU it takes some 300.
crash() {
	local r=0
	COWLINKFS_RUN=crash bash "$top/guest/stage.sh" "$1" &&
		COWLINKFS_RUN=crash bash "$top/guest/boot.sh" "$1" 600 || r=$?
	if [ "$1" = crash1 ]; then
		mkdir -p "$COWLINKFS_LOGS/results-crash1"
		printf '1..1\n%s 1 crash1/power_cut_during_breaks_and_runs\n' \
			"$([ "$r" = 0 ] && echo ok || echo "not ok")" >"$COWLINKFS_LOGS/results-crash1/tap"
	fi
	return "$r"
}
say "crash test 1 of 2: power cut during six link breaks and four cross-arch runs, one CPU"
leg crash1 crash crash1 || rc=1
say "crash test 2 of 2: boot again and check every name"
leg crash2 crash crash2 || rc=1

# At one CPU, cowlink clone starts no link workers: the smoke's clone
# takes the one-thread path (the suite tests the workers).
say "bench smoke: make bench in miniature (one round, ext4, a tree of 300 files), one CPU"
COWLINKFS_RUN=bench-smoke leg "bench smoke" bash "$top/tests/host/run-bench.sh" smoke || rc=1

if [ -n "${FSTESTS:-}" ]; then
	say "fstests smoke: tests/fstests/smoke on ext4 through cowlinkfs, cow=all, one CPU"
	COWLINKFS_RUN=fstests-smoke leg "fstests smoke" \
		bash "$top/tests/host/run-fstests.sh" smoke || rc=1
else
	say "fstests smoke: not run, FSTESTS names no fstests source (README, make fstests)"
	mkdir -p "$COWLINKFS_LOGS/results-fstests"
	printf '1..1\nok 1 fstests/smoke # SKIP FSTESTS names no fstests source\n' \
		>"$COWLINKFS_LOGS/results-fstests/tap"
fi
exit "$rc"
