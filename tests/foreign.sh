# shellcheck shell=sh
# Guest: the pristine foreign tree of the cross-arch runs (guest/foreign.sh
# built it on the disk labelled cl-foreign).  Sourced by t_crossarch.sh,
# crash1.sh and crash2.sh.
#   FL        the disk's fs, mounted on /lower/foreign (the binfmt entry
#             names its interpreter there)
#   FM        cowlinkfs over it, on /mnt/foreign
#   P         the pristine tree through cowlinkfs, $FM/tree
#   FOREIGN   the tree's Debian architecture
#   FMACHINE  its machine name (uname -m of its programs under qemu-user)
#   DEBS      where make_debs puts the runs' packages (make_repo: the
#             repository of apt_run in $DEBS/repo)

FL=/lower/foreign
FM=/mnt/foreign
# shellcheck disable=SC2034 # used by the scripts that source this
P=$FM/tree
DEBS=/tmp/crossarch-debs
# shellcheck disable=SC2034 # used by the scripts that source this
case $(uname -m) in
aarch64) FOREIGN=amd64 FMACHINE=x86_64 BINFMT=qemu-x86_64 ;;
*) FOREIGN=arm64 FMACHINE=aarch64 BINFMT=qemu-aarch64 ;;
esac

# foreign_setup: mount the disk and cowlinkfs over it, register the
# interpreter
foreign_setup() {
	mkdir -p $FL $FM
	mount "$(blkid -L cl-foreign)" $FL
	mount -t cowlinkfs $FL $FM
	[ -e /proc/sys/fs/binfmt_misc/register ] ||
		mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
	[ -e /proc/sys/fs/binfmt_misc/$BINFMT ] ||
		cat $FL/qemu/binfmt >/proc/sys/fs/binfmt_misc/register
}

# foreign_teardown: undo foreign_setup (the F flag holds the interpreter
# open, and with it the disk's fs)
foreign_teardown() {
	echo -1 >/proc/sys/fs/binfmt_misc/$BINFMT
	umount $FM
	umount $FL
}

# manifest DIR: what must not change in a pristine tree, one line per
# name, sorted: type, mode, owner, size, mtime, device numbers, contents'
# sha256 and every xattr (security.capability, ACLs, the cow flag).  Not
# ctime, nlink or atime: a clone's links change those by design.
manifest() {
	(
		cd "$1" || exit 1
		find . -xdev -exec stat -c '%n %F %a %u:%g %s %.9Y %t:%T' {} + | sort
		find . -xdev -type f -exec sha256sum {} + | sort -k 2
		getfattr -R -P -h -d -m - -e hex . 2>/dev/null |
			awk '/^# file: / { f = $0; next } NF { print f, $0 }' | sort
	)
}

# make_debs: the packages the runs install, built here (dpkg-deb is the guest's own;
# Architecture: all installs on any tree):
#   cltest-conf   a conffile, /etc/cltest.conf
#   cltest-cap    a program its postinst gives a capability with setcap
#   cltest-purge  installed, then purged
#   cltest-src    the source of a program (apt_run builds it), depends on
#                 cltest-conf
make_debs() {
	d=$DEBS
	rm -rf "$d"
	mkdir "$d"
	for p in cltest-conf cltest-cap cltest-purge cltest-src; do
		mkdir -p "$d/$p/DEBIAN" "$d/$p/usr/share/$p"
		echo "$p data" >"$d/$p/usr/share/$p/data"
		cat >"$d/$p/DEBIAN/control" <<-EOF
			Package: $p
			Version: 1.0
			Architecture: all
			Maintainer: cowlinkfs tests <tests@cowlinkfs.invalid>
			Description: cowlinkfs cross-arch test package $p
		EOF
	done
	mkdir -p "$d/cltest-conf/etc"
	echo "setting = 1" >"$d/cltest-conf/etc/cltest.conf"
	echo /etc/cltest.conf >"$d/cltest-conf/DEBIAN/conffiles"
	mkdir -p "$d/cltest-cap/usr/bin"
	printf '#!/bin/sh\necho cltest\n' >"$d/cltest-cap/usr/bin/cltest-tool"
	chmod 755 "$d/cltest-cap/usr/bin/cltest-tool"
	printf '#!/bin/sh\nset -e\nsetcap cap_net_raw+ep /usr/bin/cltest-tool\n' \
		>"$d/cltest-cap/DEBIAN/postinst"
	chmod 755 "$d/cltest-cap/DEBIAN/postinst"
	echo "Depends: cltest-conf" >>"$d/cltest-src/DEBIAN/control"
	cat >"$d/cltest-src/usr/share/cltest-src/hello.c" <<-EOF
		#include <stdio.h>
		#include <sys/utsname.h>

		int main(void)
		{
		    struct utsname u;

		    if (uname(&u))
		        return 1;
		    printf("run %d %s\n", RUN, u.machine);
		    return 0;
		}
	EOF
	for p in cltest-conf cltest-cap cltest-purge cltest-src; do
		dpkg-deb -Zgzip --root-owner-group --build "$d/$p" "$d/$p.deb" >/dev/null
	done
}

# one_run CLONE N: what run N does in its clone, every command in the
# chroot (so, a foreign program under qemu-user), and under $RUN_SHELL
# there when it is set: tests/bench.sh sets cow-shell, as cowbuilder runs
# each of pbuilder's commands ("chroot BUILDPLACE cow-shell CMD")
one_run() {
	c=$1
	n=$2
	mkdir "$c/tmp/debs"
	cp "$DEBS"/*.deb "$c/tmp/debs/"
	in_run dpkg -i /tmp/debs/cltest-conf.deb /tmp/debs/cltest-cap.deb \
		/tmp/debs/cltest-purge.deb
	in_run dpkg --purge cltest-purge
	in_run sed -i "s/^UMASK.*/UMASK 02$n/" /etc/login.defs
	in_run sh -c "echo run$n >>/etc/motd"
	in_run chmod 700 /usr/bin/env
	in_run setfacl -m "u:100$n:r" /etc/issue
	printf 'RUN%s' "$n" | in_run busybox dd of=/etc/issue.net conv=notrunc 2>/dev/null
	in_run ln /etc/host.conf /etc/host.conf.run
	in_run sh -c "echo run$n >>/etc/host.conf.run"
}

# make_repo: a file: repository of make_debs' packages in $DEBS/repo, for
# apt in a run's chroot, where apt_run copies it to /tmp/repo: Packages
# and Release written here (neither the guest nor the tree has
# dpkg-scanpackages or apt-ftparchive), unsigned, hence trusted=yes in
# its sources.list, and apt.conf, which points apt at that list alone
# (not the tree's own sources, which need the network), keeps dpkg off a
# pty (no devpts is mounted in the chroot) and clears debconf's
# preconfigure hook (a perl run per install, for packages that have no
# templates)
make_repo() {
	r=$DEBS/repo
	mkdir "$r"
	for p in cltest-conf cltest-cap cltest-src; do
		cp "$DEBS/$p.deb" "$r/"
		dpkg-deb -f "$r/$p.deb"
		echo "Filename: ./$p.deb"
		echo "Size: $(stat -c %s "$r/$p.deb")"
		echo "SHA256: $(sha256sum <"$r/$p.deb" | cut -d' ' -f1)"
		echo
	done >"$r/Packages"
	printf 'Date: %s\nSHA256:\n %s %s Packages\n' "$(LC_ALL=C date -u -R)" \
		"$(sha256sum <"$r/Packages" | cut -d' ' -f1)" "$(stat -c %s "$r/Packages")" \
		>"$r/Release"
	echo "deb [trusted=yes] file:/tmp/repo ./" >"$r/sources.list"
	cat >"$r/apt.conf" <<-EOF
		Dir::Etc::SourceList "/tmp/repo/sources.list";
		Dir::Etc::SourceParts "-";
		Dir::Cache::pkgcache "";
		Dir::Cache::srcpkgcache "";
		Dpkg::Use-Pty "false";
		#clear DPkg::Pre-Install-Pkgs;
	EOF
}

# apt_run CLONE N: what run N of tier 2 (t_crossarch.sh, in the x86_64
# guest) does in its clone, every command in the chroot as in one_run:
# apt-get update against make_repo's repository, apt-get install of
# cltest-src and cltest-cap (cltest-conf comes as a dependency), then the
# tree's gcc builds cltest-src's program with the run's number in it, and
# the program runs, its output in /root/cltest-hello.out
apt_run() {
	c=$1
	n=$2
	cp -r "$DEBS/repo" "$c/tmp/repo"
	in_run apt-get -c /tmp/repo/apt.conf update
	in_run apt-get -c /tmp/repo/apt.conf -y install cltest-src cltest-cap
	in_run gcc -DRUN="$n" -o /usr/local/bin/cltest-hello /usr/share/cltest-src/hello.c
	in_run /usr/local/bin/cltest-hello >"$c/root/cltest-hello.out"
}

# in_run CMD...: CMD in the chroot $c of one_run or apt_run
in_run() {
	chroot "$c" ${RUN_SHELL:+"$RUN_SHELL"} "$@"
}
