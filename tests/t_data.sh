# shellcheck shell=sh
# fsx-style data checking of a cow link: the cowdata helper runs seeded
# random reads, writes, appends, shared mmaps, fallocate, punch hole, zero
# range, ftruncate, copy_file_range and clones on a file that keeps being
# given another name and broken again, through descriptors of every open
# mode, and compares every read, st_size and, every 16 operations, all of
# the file and of every other name with a shadow copy.  Breaks copy files
# with holes, unwritten extents and shared (cloned) extents here.
# lowers: ext2 ext3 ext4 xfs xfsr tmpfs

OPS=1000

# ops the lower fs lacks, which cowdata must find out and leave out
lacking() {
	case $FS in
	ext2) echo "fallocate punch zero clone" ;;
	ext3) echo "fallocate zero clone" ;;
	ext4 | xfs) echo clone ;;
	xfsr) echo ;;
	tmpfs) echo "zero clone" ;;
	esac
}

# run_data NAME ARGS...: cowdata ARGS on a fresh directory $M/NAME; it must
# leave out exactly what the lower fs lacks, and no copy in the work dir.
run_data() {
	d=$1
	shift
	mkdir "$M/$d"
	out=$(cowdata -n "$OPS" "$@" "$M/$d") || fail "cowdata -n $OPS $* on $M/$d"
	echo "$out"
	left=$(echo "$out" | sed -n 's/.*left out:\(.*\), OK$/\1/p' | xargs)
	check_eq "$left" "$(lacking)" "operations left out by cowdata $*"
	check_eq "$(echo "$out" | sed -n 's/.* ops, \([0-9]*\) breaks.*/\1/p' |
		awk '$1 >= 10 { print "many" }')" many "breaks made by cowdata $*"
	check_eq "$(ls -A "$L/.cowlinkfs-work")" "" "work dir after cowdata $*"
}

test_random_data_ops_on_a_cow_link_match_a_shadow_copy() {
	run_data big -s 1
}

# Small files: more breaks, and clones and punches cover most of a file.
test_random_data_ops_on_a_small_cow_link_match_a_shadow_copy() {
	run_data small -s 2 -S 65536
}

# The control: the same operations on the bare lower, one name, no flag.
test_random_data_ops_on_the_bare_lower_match_a_shadow_copy() {
	mkdir "$L/plain"
	out=$(cowdata -P -n "$OPS" -s 3 "$L/plain") || fail "cowdata -P on $L/plain"
	echo "$out"
	left=$(echo "$out" | sed -n 's/.*left out:\(.*\), OK$/\1/p' | xargs)
	check_eq "$left" "$(lacking)" "operations the bare lower lacks"
}
