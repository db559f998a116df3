#!/bin/sh
# Guest side of a run, started by /sbin/cowlinkfs-init with the tests disk
# on /t: load the module, then run the suite, the demo or a shell.
T=/t
mode=$(cat $T/mode)
export PATH=$T/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=${TERM:-vt100}
mkdir -p /dev/pts && mount -t devpts devpts /dev/pts
echo "# cowlinkfs guest: kernel $(uname -r), mode $mode"
# The install run loads the module DKMS builds in the guest instead.
if [ "$mode" != install ] && ! insmod $T/cowlinkfs.ko; then
	echo "not ok 1 insmod cowlinkfs.ko"
	echo "Bail out! insmod failed" >$T/results/tap
	exit 1
fi
case $mode in
test | debug)
	sh $T/tests/guest-run.sh
	;;
soak)
	sh $T/tests/soak.sh
	;;
bench)
	sh $T/tests/bench.sh
	;;
fstests)
	sh $T/tests/fstests.sh
	;;
install)
	sh $T/tests/install.sh
	;;
crash1 | crash2)
	sh $T/tests/$mode.sh
	;;
demo)
	sh $T/guest/inside/demo.sh </dev/null
	;;
shell)
	sh $T/guest/inside/mount-all.sh
	echo "cowlinkfs is mounted on /mnt/FS for FS in: $(cat $T/tests/lowers) (lowers in /lower); exit to power off"
	tty=/dev/$(cat /sys/class/tty/console/active)
	setsid sh -c "exec bash -i <>$tty >&0 2>&1"
	;;
esac
dmesg >>$T/results/dmesg
