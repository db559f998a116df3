# shellcheck shell=sh
# Cross-arch test runs, the design card's third use: a pristine tree of
# another architecture (amd64 in the arm64 guest, arm64 in the x86_64 one;
# guest/foreign.sh, disk cl-foreign), flagged and cloned once per run with
# cowlink clone, each clone used by a chroot whose every process is the
# foreign binary run by qemu-user through binfmt_misc (flag F).  Tier 1,
# in both guests: four runs at once, each installing and purging packages
# with dpkg and changing files in the ways tools do (sed -i, >>, chmod,
# setfacl, a static busybox dd conv=notrunc, ln then write).  Tier 2, in
# the x86_64 guest alone (make test ARCH=x86_64, whose arm64 tree has
# gcc): rounds of 1, 4 and 8 runs at once, each installing packages with
# apt-get from a file: repository and building a program with the tree's
# gcc.  Each clone must see only its own changes, and the
# pristine tree must be exactly what it was (contents, mode, owner, mtime,
# xattrs with security.capability, device numbers; not ctime and nlink,
# which a link changes by design).  tests/crash1.sh cuts the power in the
# middle of such runs; tests/crash2.sh checks the pristine tree after.
# The tests share the disk and the binfmt_misc entry: never two at once.
# lowers: ext4
# matrix: core
# lock: foreign

. /t/tests/foreign.sh

# status_of TREE PACKAGE: the package's Status in the tree's dpkg database
# (read here: a dpkg-query in the chroot costs seconds under qemu-user)
status_of() {
	awk -v p="$2" '/^Package: / { on = $2 == p } on && /^Status: / { sub(/^Status: /, ""); print }' \
		"$1/var/lib/dpkg/status"
}

# check_debs CLONE N: cltest-conf and cltest-cap are installed in clone
# N, with cltest-conf's conffile and the capability cltest-cap's postinst
# set
check_debs() {
	check_eq "$(status_of "$1" cltest-conf)" "install ok installed" "cltest-conf in clone $2"
	check_eq "$(status_of "$1" cltest-cap)" "install ok installed" "cltest-cap in clone $2"
	check_eq "$(cat "$1/etc/cltest.conf")" "setting = 1" "conffile in clone $2"
	check_eq "$(getcap "$1/usr/bin/cltest-tool")" "$1/usr/bin/cltest-tool cap_net_raw=ep" \
		"capability set by cltest-cap's postinst in clone $2"
}

# check_run CLONE N: run N's changes (one_run), and only its, are in CLONE
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
	check_debs "$c" "$n"
	check_eq "$(status_of "$c" cltest-purge)" "" "cltest-purge in clone $n"
	[ ! -e "$c/usr/share/cltest-purge" ] || fail "cltest-purge's files in clone $n"
}

# check_apt_run CLONE N: run N's packages and program (apt_run), and only
# its, are in CLONE
check_apt_run() {
	check_debs "$1" "$2"
	check_eq "$(status_of "$1" cltest-src)" "install ok installed" "cltest-src in clone $2"
	check_eq "$(cat "$1/root/cltest-hello.out")" "run $2 $FMACHINE" \
		"the output of the program built in clone $2"
}

# pristine_begin: the pristine tree mounted and flagged, its manifest
# taken, the runs' packages built
pristine_begin() {
	foreign_setup
	make_debs
	# The foreign programs run: not the guest's own.
	check_eq "$(chroot "$P" /usr/bin/dpkg --print-architecture)" "$FOREIGN" \
		"dpkg's architecture in the pristine tree"
	cowlink set -R "$P"
	manifest "$FL/tree" >/tmp/crossarch.before
}

# pristine_end: the pristine tree is what pristine_begin found
pristine_end() {
	manifest "$FL/tree" >/tmp/crossarch.after
	diff /tmp/crossarch.before /tmp/crossarch.after >&2 ||
		fail "the pristine tree changed (diff above)"
	foreign_teardown
}

# clone_runs RUN K: K runs at once, run I (RUN CLONE I, in the background)
# started as soon as its clone $FM/runI of the pristine tree is made;
# fails with the end of the output of the first that failed
clone_runs() {
	pids=
	i=0
	while [ $i -lt "$2" ]; do
		i=$((i + 1))
		cowlink clone "$P" "$FM/run$i"
		"$1" "$FM/run$i" $i >/tmp/crossarch.run$i 2>&1 &
		pids="$pids $!"
	done
	i=0
	for p in $pids; do
		i=$((i + 1))
		wait "$p" || fail "run $i: $(tail -n 20 /tmp/crossarch.run$i)"
	done
}

# remove_clones K: clone_runs' clones, removed
remove_clones() {
	for i in $(seq "$1"); do
		rm -rf "${FM:?}/run$i"
	done
}

test_parallel_foreign_dpkg_runs_in_clones_leave_the_pristine_tree_intact() {
	pristine_begin
	clone_runs one_run 4
	for n in 1 2 3 4; do
		check_run "$FM/run$n" $n
	done
	[ ! -e "$P/usr/bin/cltest-tool" ] || fail "cltest-tool in the pristine tree"
	remove_clones 4
	pristine_end
}

# Tier 2 (apt_run): a round of 1 run, then 4, then 8 at once, each on
# fresh clones, removed after its round; the manifest is compared after
# the last.  Each round's time goes to the console.  Under TCG every
# foreign process is qemu-aarch64 inside the emulated x86_64, so that
# apt-get and gcc take tens of seconds each: the rounds are estimated at
# 15 to 20 minutes in all, beyond the default TEST_TIMEOUT.
# arch: x86_64
# timeout: 2400
test_parallel_foreign_apt_installs_and_builds_in_1_4_and_8_clones_leave_the_pristine_tree_intact() {
	pristine_begin
	make_repo
	for k in 1 4 8; do
		read -r t0 _ </proc/uptime
		clone_runs apt_run $k
		for n in $(seq $k); do
			check_apt_run "$FM/run$n" $n
		done
		remove_clones $k
		read -r t1 _ </proc/uptime
		line="# crossarch: $k apt runs at once: $((${t1%.*} - ${t0%.*})) s (clones, runs, checks, removal)"
		echo "$line"
		echo "$line" >/dev/console 2>/dev/null || true
	done
	[ ! -e "$P/usr/local/bin/cltest-hello" ] || fail "cltest-hello in the pristine tree"
	pristine_end
}
