#!/bin/sh
# Guest, first boot of the crash test: start breaking a large cow link on
# each journalling lower fs, then cut the power (sysrq b) in the middle.
set -eu
. /t/tests/lower.sh
for fs in ext3 xfs; do
	mkdir -p /lower/$fs /mnt/$fs
	mount_lower $fs
	mkdir /lower/$fs/crash
	mount -t cowlinkfs /lower/$fs/crash /mnt/$fs
	try setcow /mnt/$fs 1 >/dev/null
	for k in 1 2 3; do
		head -c 60000000 /dev/urandom >/mnt/$fs/big$k 2>/dev/null ||
			dd if=/dev/urandom of=/mnt/$fs/big$k bs=1M count=57 2>/dev/null
		ln /mnt/$fs/big$k /mnt/$fs/other$k
		md5sum </mnt/$fs/big$k | cut -d' ' -f1 >/lower/$fs/crash-$k.old
	done
done
sync
pids=
# Each append breaks a link: 6 copies of 60 MB in flight.
for fs in ext3 xfs; do
	for k in 1 2 3; do
		try append /mnt/$fs/big$k X >/dev/null &
		pids="$pids $!"
	done
done
sleep 0.4
busy=0
for p in $pids; do kill -0 "$p" 2>/dev/null && busy=$((busy + 1)); done
echo "crash: $busy of 6 breaks still running when the power goes" >/dev/console
echo "$busy" >/lower/ext3/crash-busy
sync -f /lower/ext3/crash-busy
echo b >/proc/sysrq-trigger
