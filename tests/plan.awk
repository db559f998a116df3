# Guest and host: the lowers each test function of a tests/t_*.sh file
# runs on, and how it may share the machine with the tests of the other
# worker.  A "# lowers:" line directly above a test function names that
# test's own; the first one elsewhere (near the top) names the file's.
# Directly above a test function (or near the top, for the whole file):
#   "# serial"      the test runs alone, after the workers: it changes
#                   state every test sees (sysctls, drop_caches, a memory
#                   hog, the dirty page counters it measures);
#   "# lock: NAME"  never at once with another test of the same lock, but
#                   beside any other (fault injection, which each fault
#                   test arms for its own tasks alone);
#   "# owns-lower"  never beside another test on the same lower fs: it
#                   fills it or mounts it again (only a run on one lower
#                   puts two workers on one lower: there, it runs alone).
#   "# matrix: core"  the test exercises cowlinkfs's own rules more than
#                   the lower fs under them: make test runs it on the core
#                   lowers (tests/lowers.core) it applies to, or on the
#                   first lower it names if none; make test FULL=1 and an
#                   explicit LOWERS run it on all of them.  Without it
#                   ("# matrix: every"), a test runs on every lower.
#   "# arch: MACHINE"  the test runs only in the guest whose uname -m is
#                   MACHINE (x86_64: make test ARCH=x86_64; aarch64): in
#                   the other, it is a SKIP line where it would run;
#   "# timeout: SECONDS"  the test may run that long before the worker
#                   kills it, instead of TEST_TIMEOUT's 600 (a larger
#                   TEST_TIMEOUT wins).
# Prints one line per test function: its name, a tab, the lowers, a tab,
# "serial", "parallel", "owns-lower" or "lock:NAME", a tab, "core" or
# "every", a tab, the machine or "any", a tab, and the seconds or "-".
/^# lowers: / {
	v = $0
	sub(/^# lowers: /, "", v)
	pending = v
	next
}
/^# matrix: (core|every)$/ {
	pmatrix = $3
	next
}
/^# (serial|owns-lower|lock: [a-z0-9-]+)$/ {
	pmode = $2 == "lock:" ? "lock:" $3 : $2
	next
}
/^# arch: [a-z0-9_]+$/ {
	parch = $3
	next
}
/^# timeout: [0-9]+$/ {
	plimit = $3
	next
}
/^test_[a-z0-9_]*\(\) \{$/ {
	print substr($0, 1, index($0, "(") - 1) "\t" (pending != "" ? pending : all) \
		"\t" (pmode != "" ? pmode : fmode != "" ? fmode : "parallel") \
		"\t" (pmatrix != "" ? pmatrix : fmatrix != "" ? fmatrix : "every") \
		"\t" (parch != "" ? parch : farch != "" ? farch : "any") \
		"\t" (plimit != "" ? plimit : flimit != "" ? flimit : "-")
	pending = ""
	pmode = ""
	pmatrix = ""
	parch = ""
	plimit = ""
	seen = 1
	next
}
{
	if (pending != "" && all == "")
		all = pending
	pending = ""
	if (pmode != "" && !seen)
		fmode = pmode
	if (pmatrix != "" && !seen)
		fmatrix = pmatrix
	if (parch != "" && !seen)
		farch = parch
	if (plimit != "" && !seen)
		flimit = plimit
	pmode = ""
	pmatrix = ""
	parch = ""
	plimit = ""
}
