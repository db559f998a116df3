#!/bin/sh
# Guest, first boot of the crash test: start breaking a large cow link on
# each journalling lower fs, then cut the power (sysrq b) in the middle.
set -eu
. /t/tests/lower.sh
. /t/tests/foreign.sh
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
# Four cross-arch runs (tests/t_crossarch.sh) in clones of the pristine
# foreign tree, cut with the rest once the last has begun to unpack:
# crash2.sh compares the tree's manifest.
foreign_setup
make_debs
cowlink set -R "$P"
manifest $FL/tree >$FL/manifest.before
sync
runs=
for n in 1 2 3 4; do
	cowlink clone "$P" "$FM/run$n"
	one_run "$FM/run$n" $n >/tmp/crash-run$n 2>&1 &
	runs="$runs $!"
done
k=0
until grep -q '^Unpacking' /tmp/crash-run4 || [ $k = 300 ]; do
	sleep 0.2
	k=$((k + 1))
done
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
busy=0
for p in $runs; do kill -0 "$p" 2>/dev/null && busy=$((busy + 1)); done
echo "crash: $busy of 4 cross-arch runs still running when the power goes" >/dev/console
echo "$busy" >$FL/crash-busy
sync -f $FL/crash-busy
sync -f /lower/ext3/crash-busy
echo b >/proc/sysrq-trigger
