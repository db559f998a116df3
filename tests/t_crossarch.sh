# shellcheck shell=sh
# Cross-arch test runs, the design card's third use: a pristine tree of
# another architecture (amd64 in the arm64 guest, arm64 in the x86_64 one;
# guest/foreign.sh, disk cl-foreign), flagged and cloned once per run with
# cowlink clone, each clone used by a chroot whose every process is the
# foreign binary run by qemu-user through binfmt_misc (flag F).  Each run
# installs and purges packages with dpkg and changes files in the ways
# tools do (sed -i, >>, chmod, setfacl, a static busybox dd conv=notrunc,
# ln then write).  Each clone must see only its own changes, and the
# pristine tree must be exactly what it was (contents, mode, owner, mtime,
# xattrs with security.capability, device numbers; not ctime and nlink,
# which a link changes by design).  tests/crash1.sh cuts the power in the
# middle of such runs; tests/crash2.sh checks the pristine tree after.
# lowers: ext4
# matrix: core

. /t/tests/foreign.sh

# status_of TREE PACKAGE: the package's Status in the tree's dpkg database
# (read here: a dpkg-query in the chroot costs seconds under qemu-user)
status_of() {
	awk -v p="$2" '/^Package: / { on = $2 == p } on && /^Status: / { sub(/^Status: /, ""); print }' \
		"$1/var/lib/dpkg/status"
}

# check_run CLONE N: run N's changes, and only its, are in CLONE
check_run() {
	c=$1
	n=$2
	check_eq "$(tail -n 1 "$c/etc/motd")" "run$n" "last line of the motd of clone $n"
	check_eq "$(grep -c '^run' "$c/etc/motd")" 1 "run lines in the motd of clone $n"
	check_eq "$(grep '^UMASK' "$c/etc/login.defs")" "UMASK 02$n" "UMASK in clone $n"
	check_eq "$(stat -c %a "$c/usr/bin/env")" 700 "mode of env in clone $n"
	check_eq "$(getfacl -cpn "$c/etc/issue" | grep '^user:[0-9]')" "user:100$n:r--" \
		"ACL of issue in clone $n"
	check_eq "$(head -c 4 "$c/etc/issue.net")" "RUN$n" "issue.net in clone $n"
	check_eq "$(tail -n 1 "$c/etc/host.conf.run")" "run$n" "host.conf.run in clone $n"
	check_eq "$(sum "$c/etc/host.conf")" "$(sum "$P/etc/host.conf")" \
		"host.conf in clone $n, linked then written through its other name"
	check_eq "$(status_of "$c" cltest-conf)" "install ok installed" "cltest-conf in clone $n"
	check_eq "$(status_of "$c" cltest-cap)" "install ok installed" "cltest-cap in clone $n"
	check_eq "$(status_of "$c" cltest-purge)" "" "cltest-purge in clone $n"
	[ ! -e "$c/usr/share/cltest-purge" ] || fail "cltest-purge's files in clone $n"
	check_eq "$(cat "$c/etc/cltest.conf")" "setting = 1" "conffile in clone $n"
	check_eq "$(getcap "$c/usr/bin/cltest-tool")" "$c/usr/bin/cltest-tool cap_net_raw=ep" \
		"capability set by cltest-cap's postinst in clone $n"
}

test_parallel_foreign_dpkg_runs_in_clones_leave_the_pristine_tree_intact() {
	foreign_setup
	make_debs
	# The foreign programs run: not the guest's own.
	check_eq "$(chroot "$P" /usr/bin/dpkg --print-architecture)" "$FOREIGN" \
		"dpkg's architecture in the pristine tree"
	cowlink set -R "$P"
	manifest "$FL/tree" >/tmp/crossarch.before
	pids=
	for n in 1 2 3 4; do
		cowlink clone "$P" "$FM/run$n"
		one_run "$FM/run$n" $n >/tmp/crossarch.run$n 2>&1 &
		pids="$pids $!"
	done
	n=0
	for p in $pids; do
		n=$((n + 1))
		wait "$p" || fail "run $n: $(tail -n 20 /tmp/crossarch.run$n)"
	done
	for n in 1 2 3 4; do
		check_run "$FM/run$n" $n
	done
	manifest "$FL/tree" >/tmp/crossarch.after
	diff /tmp/crossarch.before /tmp/crossarch.after >&2 ||
		fail "the pristine tree changed (diff above)"
	[ ! -e "$P/usr/bin/cltest-tool" ] || fail "cltest-tool in the pristine tree"
	for n in 1 2 3 4; do
		rm -rf "${FM:?}/run$n"
	done
	foreign_teardown
}
