#!/bin/bash
# make deb: the Debian packages (cowlinkfs-dkms, cowlink, libcowlink0,
# libcowlink-dev) built from a clean export of the tree with
# dpkg-buildpackage for ARCH, then checked with lintian.  Packages in
# build/deb/, log in $COWLINKFS_LOGS/deb.log.  ARCH is Debian's name of an
# architecture (make deb DEB_ARCH=...): by default this machine's, so that
# the packages install here; a foreign one is cross-built, and only then
# does deps.sh add it to dpkg.  make installcheck passes the guest's
# (guest/stage.sh: arm64, or amd64 with ARCH=x86_64).
#
# DEB_UPGRADE_FROM=TAG (make installcheck sets v0.1.0): the packages of
# that release as well, for tests/install.sh's upgrade and downgrade.  They
# are built from "git archive" of the release (release_commit) once per
# commit and architecture, kept in
# $COWLINKFS_CACHE/deb-TAG-COMMIT-ARCH/, and copied to build/deb/ as
# old-NAME.deb, a name no "./cowlink_*.deb" of the README matches.
set -eu
. "$(dirname "$0")/lib.sh"

arch=${1:-$(dpkg --print-architecture)}
out=$COWLINKFS_TOP/build/deb
log=$COWLINKFS_LOGS/deb.log
version=$(cat "$COWLINKFS_TOP/VERSION")
changelog=$(dpkg-parsechangelog -l "$COWLINKFS_TOP/debian/changelog" -S Version)
if [ "$changelog" != "$version" ]; then
	echo "deb: debian/changelog says $changelog, VERSION says $version" >&2
	exit 1
fi
"$COWLINKFS_TOP/guest/deps.sh" deb "$arch"

rm -rf "$out"
mkdir -p "$out/src"
say "deb: dpkg-buildpackage -a$arch -b for $version, log in $log"
git -C "$COWLINKFS_TOP" ls-files -z | (cd "$COWLINKFS_TOP" && xargs -0 cp --parents -t "$out/src")
# The unit tests run on the build machine: not in a cross build.
opts=
[ "$arch" = "$(dpkg --print-architecture)" ] || opts="-Pcross,nocheck"
(cd "$out/src" && DEB_BUILD_OPTIONS=${opts:+nocheck} \
	dpkg-buildpackage -a"$arch" $opts -b -us -uc) >"$log" 2>&1 || {
	tail -n 30 "$log" >&2
	echo "deb: build failed, full log in $log" >&2
	exit 1
}
rm -rf "$out/src"

# The releases made before the repository kept its tags (a clone need not
# carry tags, and this history lost them): the commit each one's packages
# are built from, its last.  0.1.0's VERSION outlived it by one commit,
# c75344c, which already had 0.2.0's ioctl numbers; the commit that set
# 0.1.0, 33c2069, has a symbols file that dpkg-gensymbols refuses.
RELEASES="v0.1.0=e462c35c v0.2.0=eb8f344c"

# release_commit TAG: the commit of release TAG: its tag where the clone
# has it, else the table above.
release_commit() {
	local r c
	if c=$(git -C "$COWLINKFS_TOP" rev-parse -q --verify "$1^{commit}"); then
		echo "$c"
		return
	fi
	for r in $RELEASES; do
		if [ "${r%%=*}" = "$1" ] &&
			c=$(git -C "$COWLINKFS_TOP" rev-parse -q --verify "${r#*=}^{commit}"); then
			echo "$c"
			return
		fi
	done
	if [ "$(git -C "$COWLINKFS_TOP" rev-parse --is-shallow-repository)" = true ]; then
		echo "deb: no tag $1 in this shallow clone (git fetch --unshallow," \
			"or DEB_UPGRADE_FROM=)" >&2
	else
		echo "deb: no tag $1 here, nor a commit for it in RELEASES (DEB_UPGRADE_FROM=)" >&2
	fi
	return 1
}

# old_debs TAG: the packages of release TAG into $out as old-*.deb.
old_debs() {
	local commit dir
	commit=$(release_commit "$1") || exit 1
	dir=$COWLINKFS_CACHE/deb-$1-${commit:0:12}-$arch
	if [ ! -d "$dir" ]; then
		say "deb: the packages of $1 for the upgrade test, cached in $dir"
		rm -rf "$dir.tmp"
		mkdir -p "$dir.tmp/src"
		git -C "$COWLINKFS_TOP" archive "$commit" | tar -x -C "$dir.tmp/src"
		(cd "$dir.tmp/src" && DEB_BUILD_OPTIONS=nocheck \
			dpkg-buildpackage -a"$arch" -Pnocheck${opts:+,cross} -b -us -uc) >>"$log" 2>&1 || {
			tail -n 30 "$log" >&2
			echo "deb: the build of $1 failed, full log in $log" >&2
			exit 1
		}
		rm -rf "$dir.tmp/src" "$dir.tmp"/*-dbgsym_*.deb
		mv "$dir.tmp" "$dir"
	fi
	for f in "$dir"/*.deb; do
		cp "$f" "$out/old-${f##*/}"
	done
}
[ -z "${DEB_UPGRADE_FROM:-}" ] || old_debs "$DEB_UPGRADE_FROM"

say "deb: lintian"
# The one tag let through: the project has no mail address of its own yet
# (Maintainer is cowlinkfs@localhost); whoever distributes the packages
# puts theirs into debian/control and debian/changelog.
rc=0
lintian --fail-on error,warning --pedantic -I \
	--suppress-tags bogus-mail-host,bogus-mail-host-in-debian-changelog \
	"$out"/*.changes >"$out/lintian.txt" 2>&1 || rc=$?
grep -v 'running with root privileges' "$out/lintian.txt" || true
[ "$rc" = 0 ] || { echo "deb: lintian found errors or warnings" >&2; exit 1; }
ls "$out"/*.deb
