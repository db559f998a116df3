# Guest and host: the lowers each test function of a tests/t_*.sh file
# runs on, and whether it must run alone.  A "# lowers:" line directly
# above a test function names that test's own; the first one elsewhere
# (near the top) names the file's.  A "# serial" line directly above a
# test function makes that test run alone, one near the top the whole
# file's: tests that change state every test sees (fault injection,
# sysctls, drop_caches, device-mapper names, a memory hog, timing).
# Prints one line per test function: its name, a tab, the lowers, a tab,
# and "serial" or "parallel".
/^# lowers: / {
	v = $0
	sub(/^# lowers: /, "", v)
	pending = v
	next
}
/^# serial$/ {
	pserial = 1
	next
}
/^test_[a-z0-9_]*\(\) \{$/ {
	print substr($0, 1, index($0, "(") - 1) "\t" (pending != "" ? pending : all) \
		"\t" (pserial || fserial ? "serial" : "parallel")
	pending = ""
	pserial = 0
	seen = 1
	next
}
{
	if (pending != "" && all == "")
		all = pending
	pending = ""
	if (pserial && !seen)
		fserial = 1
	pserial = 0
}
