#!/bin/sh
# Guest (install mode): install cowlinkfs the way a Debian 12 user does, on
# the install variant of the rootfs (dkms, gcc, make): the guest kernel's
# linux-headers package, then our packages (dpkg -i), whose install has DKMS
# build the module here, natively; modprobe; a mount from an /etc/fstab line
# with mount -a; cowlink and libcowlink from the packages; a short COW check.
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
echo "1..$n" | tee -a $R/tap
