#!/bin/bash
# Host: where a guest run's worker time went, from the start and end lines
# worker.sh writes to the console ("# N FS/FILE/TEST (at T s)" and
# "# N FS/FILE/TEST (ended at T s)"): the seconds of each test file on
# each lower, then the slowest tests, and any test that started and never
# ended (the guest timed out or died in it).  Usage: durations.sh
# [GUEST-LOG [TOP]] (default: the suite's log, 25 tests).  make test
# writes it to $COWLINKFS_LOGS/durations-test.txt (-x86_64 for that
# guest); it is what to read before adding to the suite or balancing the
# workers' plans.
set -eu
. "$(dirname "$0")/../../guest/lib.sh"
log=${1:-$COWLINKFS_LOGS/guest-test$ARCH_SUFFIX.log}
top=${2:-25}
awk -v top="$top" '
/^# [0-9]+ [^ ]+ \(at [0-9.]+ s\)/ {
	t0[$2] = $(NF - 1) + 0
	started[$2] = $3
	next
}
/^# [0-9]+ [^ ]+ \(ended at [0-9.]+ s\)/ {
	if (!($2 in t0))
		next
	d = $(NF - 1) - t0[$2]
	delete started[$2]
	split($3, p, "/")
	file[p[2] " " p[1]] += d
	bygroup[p[2]] += d
	lowers[p[1]] = 1
	total += d
	test[$3] = d
	n++
}
END {
	if (!n) {
		print "no test start and end lines in the log"
		exit 1
	}
	printf "%d tests, %.0f worker seconds\n\nseconds by test file and lower:\n", n, total
	# the lowers in name order, the same in every line
	nl = 0
	for (f in lowers)
		order[++nl] = f
	for (i = 2; i <= nl; i++)
		for (j = i; j > 1 && order[j - 1] > order[j]; j--) {
			f = order[j]
			order[j] = order[j - 1]
			order[j - 1] = f
		}
	for (g in bygroup) {
		line = sprintf("%8.1f  %-12s", bygroup[g], g)
		for (i = 1; i <= nl; i++)
			if ((g " " order[i]) in file)
				line = line sprintf(" %s %.0f", order[i], file[g " " order[i]])
		print line | "sort -rn"
	}
	close("sort -rn")
	for (k in started)
		printf "\nstarted and never ended: %s (test %s)\n", started[k], k
	printf "\nthe %d slowest tests, seconds:\n", top
	for (t in test)
		printf "%8.1f  %s\n", test[t], t | ("sort -rn | head -n " top)
}' "$log"
