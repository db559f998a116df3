# Guest and host: the lowers each test function of a tests/t_*.sh file
# runs on.  A "# lowers:" line directly above a test function names that
# test's own; the first one elsewhere (near the top) names the file's.
# Prints one line per test function: its name, a tab and the lowers.
/^# lowers: / {
	v = $0
	sub(/^# lowers: /, "", v)
	pending = v
	next
}
/^test_[a-z0-9_]*\(\) \{$/ {
	print substr($0, 1, index($0, "(") - 1) "\t" (pending != "" ? pending : all)
	pending = ""
	next
}
pending != "" {
	if (all == "")
		all = pending
	pending = ""
}
