# shellcheck shell=sh
# Guest: assertions for the test functions.  A failed check prints what was
# expected and what came, and ends the test (the runner reports "not ok").

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# check_eq ACTUAL EXPECTED WHAT
check_eq() {
	[ "$1" = "$2" ] || fail "$3: got '$1', expected '$2'"
}

# measured WHAT: a figure the test measured, for the record: a passing
# test's output is not kept, this file is (results-MODE/measured on the
# host).
measured() {
	echo "$FS: $*" >>/t/results/measured
}

# The xattr namespace for plain xattr tests: tmpfs has no user.* xattrs
# before Linux 6.6, so there the tests (which run as root) use trusted.*.
# shellcheck disable=SC2034 # used by the t_*.sh files that source this
if [ "${FS:-}" = tmpfs ]; then
	XNS=trusted
else
	XNS=user
fi

# wait_for_line FILE LINE: wait (up to 60 s) until a background helper
# has written LINE to FILE; no fixed sleeps, TCG guests vary in speed.
wait_for_line() {
	k=0
	until grep -qx "$2" "$1" 2>/dev/null; do
		k=$((k + 1))
		[ $k -le 600 ] || fail "no '$2' in $1 after 60 s: $(cat "$1")"
		sleep 0.1
	done
}

# stop PID: end a background helper and reap it
stop() {
	kill "$1"
	wait "$1" || true
}

# check_ne ACTUAL UNEXPECTED WHAT
check_ne() {
	[ "$1" != "$2" ] || fail "$3: got '$1', expected anything else"
}

# check_try EXPECTED TRY-ARGS...: run the try helper and compare its output.
check_try() {
	want=$1
	shift
	got=$(try "$@")
	[ "$got" = "$want" ] || fail "try $*: got '$got', expected '$want'"
}

# as_user CMD...: run as the unprivileged user tester (uid 1000).
as_user() {
	setpriv --reuid=1000 --regid=1000 --clear-groups -- "$@"
}

ino() { stat -c %i "$1"; }
nlink() { stat -c %h "$1"; }
mode() { stat -c %a "$1"; }
owner() { stat -c %u:%g "$1"; }
content() { cat "$1"; }
sum() { md5sum <"$1" | cut -d' ' -f1; }
blocks() { stat -c %b "$1"; }

# mount_clfs [OPTIONS]: (re)mount cowlinkfs from $L on $M.
mount_clfs() {
	if [ $# -gt 0 ]; then
		mount -t cowlinkfs -o "$1" "$L" "$M"
	else
		mount -t cowlinkfs "$L" "$M"
	fi
}

# remount_lower: unmount cowlinkfs and the lower fs, mount both again.
remount_lower() {
	umount "$M"
	umount "/lower/$FS"
	mount "$LDEV" "/lower/$FS"
	mount_clfs "$@"
}

# klog_mark: the kernel log's length now; klog_since MARK: its lines since.
# Tests run two at a time and share the log: none clears it.
klog_mark() {
	dmesg | wc -l
}
klog_since() {
	dmesg | tail -n +$(($1 + 1))
}
