#!/bin/sh
# Guest (install mode): install cowlinkfs the way a Debian 12 user does, on
# the install variant of the rootfs (dkms, gcc, make): the guest kernel's
# linux-headers package, then our packages (dpkg -i), whose install has DKMS
# build the module here, natively; modprobe; a mount from an /etc/fstab line
# with mount -a; cowlink and libcowlink from the packages; a short COW check.
# Then, where make deb added the packages of an older release (old-*.deb,
# DEB_UPGRADE_FROM): those installed after a purge, a partial upgrade
# refused, the whole upgrade (DKMS builds the new module, the flag set by
# the old tools is still read after the module is reloaded), a partial
# downgrade left unconfigured and the whole downgrade; last a purge.
# Each step is one TAP line; its output goes to results/install.log.
set -u
T=/t
R=$T/results
LOG=$R/install.log
. $T/tests/lower.sh
n=0
: >$R/tap
: >$LOG
report() {
	n=$((n + 1))
	if [ "$1" = ok ]; then
		echo "ok $n install/$2" | tee -a $R/tap
	else
		echo "not ok $n install/$2" | tee -a $R/tap
		[ -z "${3:-}" ] || echo "# $3" | tee -a $R/tap
		tail -n 15 $LOG | sed 's/^/# /' | tee -a $R/tap
	fi
}
# step NAME COMMAND...: run COMMAND, logged, and report it as NAME.
step() {
	name=$1
	shift
	echo "### $name: $*" >>$LOG
	if "$@" >>$LOG 2>&1; then
		report ok "$name"
	else
		report fail "$name" "exit status $? of: $*"
	fi
}
# refused NAME COMMAND...: COMMAND must fail (dpkg refusing a package).
refused() {
	name=$1
	shift
	echo "### $name (must fail): $*" >>$LOG
	if "$@" >>$LOG 2>&1; then
		report fail "$name" "succeeded: $*"
	else
		report ok "$name"
	fi
}
# check NAME WANT GOT: report whether GOT is WANT.
check() {
	if [ "$2" = "$3" ]; then
		report ok "$1"
	else
		report fail "$1" "want '$2', got '$3'"
	fi
}

# What a booted Debian system has and our bare init does not: dkms uses
# bash process substitution (/dev/fd).
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
version=$(cat $T/VERSION)
kver=$(uname -r)
cd $T/debs || exit 1

step linux_headers_of_the_running_kernel_install dpkg -i ./linux-headers-*.deb
start=$(date +%s)
# dpkg -i, not apt install: the guest has no package lists (and no
# network), and apt 2.6 then stops at "Internal Error, Pathname to install
# is not absolute" for local files; dpkg runs the same maintainer scripts.
step dpkg_install_builds_the_module_with_dkms \
	dpkg -i ./libcowlink0_*.deb ./libcowlink-dev_*.deb ./cowlink_*.deb \
	./cowlinkfs-dkms_*.deb
echo "# dpkg -i with the DKMS build took $(($(date +%s) - start)) s" | tee -a $R/tap
check dkms_status_says_installed \
	"cowlinkfs/$version, $kver, $(uname -m): installed" \
	"$(dkms status cowlinkfs 2>&1 | grep '^cowlinkfs/')"
check module_version_is_VERSION "$version" "$(modinfo -F version cowlinkfs 2>&1)"
check module_is_built_here_for_the_running_kernel "$kver" \
	"$(modinfo -F vermagic cowlinkfs 2>&1 | cut -d' ' -f1)"
step modprobe_loads_it modprobe cowlinkfs
check filesystem_is_registered cowlinkfs \
	"$(awk '$2 == "cowlinkfs" { print $2 }' /proc/filesystems)"

mkdir -p /lower/ext4 /mnt/x
step ext4_lower_mounts mount_lower ext4
mkdir -p /lower/ext4/x
echo "/lower/ext4/x /mnt/x cowlinkfs cow=all 0 0" >>/etc/fstab
step fstab_line_mounts_with_mount_a mount -a
check mount_has_the_fstab_options "cowlinkfs cow=all" \
	"$(findmnt -n -o FSTYPE,OPTIONS /mnt/x |
		awk '$2 ~ /(^|,)cow=all(,|$)/ { print $1, "cow=all" }')"

# /t/bin (first in PATH) has the suite's own cowlink: name the package's.
check cowlink_comes_from_the_package "cowlink: /usr/bin/cowlink" "$(dpkg -S /usr/bin/cowlink 2>&1)"
check cowlink_version_is_VERSION "cowlink (cowlinkfs) $version" \
	"$(/usr/bin/cowlink --version 2>&1 | head -n 1)"
step man_pages_are_installed test -f /usr/share/man/man1/cowlink.1.gz \
	-a -f /usr/share/man/man5/cowlinkfs.5.gz -a -f /usr/share/man/man3/libcowlink.3.gz

# The break: the name written gets its own copy, the other keeps the bytes.
echo old >/mnt/x/a
ln /mnt/x/a /mnt/x/b
ino=$(stat -c %i /mnt/x/a)
echo new >>/mnt/x/b
check other_name_keeps_old_bytes old "$(cat /mnt/x/a)"
check written_name_has_new_bytes "old new" "$(tr '\n' ' ' </mnt/x/b | sed 's/ $//')"
check other_name_keeps_its_inode "$ino 1" "$(stat -c '%i %h' /mnt/x/a)"
if [ "$(stat -c %i /mnt/x/b)" != "$ino" ]; then
	report ok written_name_has_a_new_inode
else
	report fail written_name_has_a_new_inode "still inode $ino"
fi

# libcowlink-dev: a program built against the installed header and library.
cat >/tmp/flag.c <<'EOF'
#include <stdio.h>
#include <libcowlink.h>
int main(int argc, char **argv)
{
	if (cowlink_set(argv[1], 1) < 0 || cowlink_get(argv[1]) != 1)
		return 1;
	puts("cow");
	return argc != 2;
}
EOF
step libcowlink_dev_links_a_program gcc -o /tmp/flag /tmp/flag.c -lcowlink
check program_sets_the_flag_through_libcowlink0 cow "$(/tmp/flag /mnt/x/a 2>&1)"
check cowlink_reads_the_flag_it_set "cow /mnt/x/a" "$(/usr/bin/cowlink get /mnt/x/a 2>&1)"

step umount_and_unload umount /mnt/x
step module_unloads modprobe -r cowlinkfs

# The upgrade from the older release and the downgrade to it.
set -- ./old-cowlinkfs-dkms_*.deb
if [ ! -e "$1" ]; then
	echo "# no old-*.deb: upgrade and downgrade left out" | tee -a $R/tap
	echo "1..$n" | tee -a $R/tap
	exit 0
fi
old=$(dpkg-deb -f "$1" Version)
echo "# upgrade from $old to $version and back" | tee -a $R/tap
# The packages of a release, the module's first: across 0.2.0 each side
# Breaks the other's, so dpkg takes them together only with
# --auto-deconfigure (what apt passes it).
debs() {
	echo "./${1:-}cowlinkfs-dkms_"*.deb "./${1:-}libcowlink0_"*.deb \
		"./${1:-}libcowlink-dev_"*.deb "./${1:-}cowlink_"*.deb
}
# versions: the installed version of each package, or its dpkg status.
versions() {
	for p in cowlinkfs-dkms libcowlink0 libcowlink-dev cowlink; do
		dpkg-query -W -f '${db:Status-Abbrev}${Version} ' $p 2>&1
	done | sed 's/ *$//'
}
installed() {
	echo "ii $1 ii $1 ii $1 ii $1"
}
dkms_line() {
	dkms status cowlinkfs 2>&1 | grep '^cowlinkfs/' | paste -sd';' -
}
loaded() {
	cat /sys/module/cowlinkfs/version 2>&1
}
# A lower directory of its own, so that the old module makes its work
# directory there first, as on a system that ran the old release.
U=/mnt/up
mkdir -p /lower/ext4/up $U
mount_up() {
	mount -t cowlinkfs /lower/ext4/up $U
}
# remount: unmount, unload the module, mount again (loads the one on disk).
remount() {
	umount $U && modprobe -r cowlinkfs && mount_up
}

step purge_of_every_package dpkg -P cowlinkfs-dkms libcowlink-dev cowlink libcowlink0
check purge_leaves_no_dkms_module "" "$(dkms_line)"
# shellcheck disable=SC2046
step install_of_the_old_release dpkg -i $(debs old-)
check old_release_installed "$(installed "$old")" "$(versions)"
check dkms_builds_the_old_module "cowlinkfs/$old, $kver, $(uname -m): installed" "$(dkms_line)"
step old_module_mounts mount_up
check old_module_is_loaded "$old" "$(loaded)"
echo kept >$U/old
step old_cowlink_sets_the_flag /usr/bin/cowlink set $U/old
check old_cowlink_reads_it "cow $U/old" "$(/usr/bin/cowlink get $U/old 2>&1)"

# A partial upgrade: each new package alone is refused by the Breaks.
for p in cowlink libcowlink0 cowlinkfs-dkms; do
	refused "partial_upgrade_of_${p}_refused" dpkg -i ./${p}_*.deb
done
check partial_upgrades_changed_nothing "$(installed "$old")" "$(versions)"
check dpkg_audit_is_empty_after_refusals "" "$(dpkg --audit 2>&1)"

# The whole upgrade: DKMS removes the old module and builds the new one.
# shellcheck disable=SC2046
step upgrade_of_every_package dpkg -i --auto-deconfigure $(debs)
check upgraded "$(installed "$version")" "$(versions)"
check dkms_has_only_the_new_module "cowlinkfs/$version, $kver, $(uname -m): installed" \
	"$(dkms_line)"
check module_on_disk_is_the_new_one "$version" "$(modinfo -F version cowlinkfs 2>&1)"
check upgrade_removes_the_old_header_path "" "$(ls /usr/include/linux/cowlinkfs.h 2>/dev/null)"
# Until it is reloaded the old module is loaded, and cowlink says so.
check loaded_module_is_still_the_old_one "$old" "$(loaded)"
check new_cowlink_names_the_old_module "does not know this ioctl (older than cowlink?)" \
	"$(/usr/bin/cowlink get $U/old 2>&1 | grep -o 'does not know.*')"
step reload_loads_the_new_module remount
check new_module_is_loaded "$version" "$(loaded)"
check flag_set_by_the_old_tools_is_read "cow $U/old" "$(/usr/bin/cowlink get $U/old 2>&1)"
# The old module's work directory is taken as it is, not moved aside.
check new_module_takes_the_old_work_directory "" \
	"$(find /lower/ext4/up -maxdepth 1 -name '.cowlinkfs-work.*'; dmesg | grep 'not ours')"
echo new >$U/new
step new_cowlink_sets_the_flag /usr/bin/cowlink set $U/new
check new_cowlink_reads_it "cow $U/new" "$(/usr/bin/cowlink get $U/new 2>&1)"
check program_built_on_the_new_library_works cow "$(/tmp/flag $U/new 2>&1)"

# A partial downgrade: dpkg unpacks the old cowlink but will not configure
# it beside the new module; the whole downgrade then goes through.
refused partial_downgrade_of_cowlink_not_configured dpkg -i ./old-cowlink_*.deb
check partial_downgrade_leaves_cowlink_unpacked "iU $old" \
	"$(dpkg-query -W -f '${db:Status-Abbrev}${Version}' cowlink | tr -s ' ')"
# shellcheck disable=SC2046
step downgrade_of_every_package dpkg -i --auto-deconfigure $(debs old-)
check downgraded "$(installed "$old")" "$(versions)"
check dkms_has_only_the_old_module "cowlinkfs/$old, $kver, $(uname -m): installed" "$(dkms_line)"
check dpkg_audit_is_empty_after_the_downgrade "" "$(dpkg --audit 2>&1)"
step reload_loads_the_old_module remount
check old_module_is_loaded_again "$old" "$(loaded)"
check old_cowlink_reads_the_new_flag "cow $U/new" "$(/usr/bin/cowlink get $U/new 2>&1)"

step umount_at_the_end umount $U
step module_unloads_at_the_end modprobe -r cowlinkfs
step purge_at_the_end dpkg -P cowlinkfs-dkms libcowlink-dev cowlink libcowlink0
check purge_removes_the_dkms_module "" "$(dkms_line)"
echo "1..$n" | tee -a $R/tap
