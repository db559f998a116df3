#!/bin/bash
# Boot the guest (qemu-system-aarch64, or qemu-system-x86_64 for
# ARCH=x86_64) with the staged disks.
# Usage: boot.sh test|demo|shell [timeout-seconds]
# The serial console goes to the terminal (except in test mode) and to
# $COWLINKFS_LOGS/guest-MODE.log.
set -eu
. "$(dirname "$0")/lib.sh"

mode=${1:?usage: boot.sh test|demo|shell [timeout]}
timeout=${2:-1800}
run=$(run_dir)
image=$(kernel_dir)/$KIMAGE
log=$COWLINKFS_LOGS/guest-$mode$ARCH_SUFFIX.log

# The install run boots the rootfs that has dkms and a compiler.
variant=
[ "$mode" != install ] || variant=install
disks=()
[ "$mode" != bench ] || disks=("$run/bsrc.img:snap")
# fstests: its build (guest/fstests.sh), its test and scratch devices
[ "$mode" != fstests ] || disks=("$run/fstests.img:snap" "$run/fst-test.img" "$run/fst-scratch.img")
# and the second lane's (FSTESTS_JOBS=2)
[ "$mode" != fstests ] || [ ! -e "$run/fst-test2.img" ] ||
	disks+=("$run/fst-test2.img" "$run/fst-scratch2.img")
# the cross-arch runs' pristine tree, where stage.sh made its overlay
[ ! -e "$run/foreign.qcow2" ] || disks+=("$run/foreign.qcow2")
drives=()
n=0
for d in "$(rootfs_img "$variant"):snap" "$run/tests.img" "$run/ext2.img" "$run/ext3.img" \
	"$run/ext4.img" "$run/xfs.img" "$run/xfsr.img" "$run/small.img" \
	"${disks[@]}"; do
	f=${d%:snap}
	snap=off
	[ "$f" = "$d" ] || snap=on
	format=raw
	[ "${f%.qcow2}" = "$f" ] || format=qcow2
	drives+=(-drive "file=$f,if=none,id=d$n,format=$format,cache=unsafe,snapshot=$snap"
		-device "virtio-blk-pci,drive=d$n,romfile=")
	n=$((n + 1))
done

# Two test workers share the kernel log, which is not cleared per test:
# room for a whole suite.
append="console=$CONSOLE root=/dev/vda rw init=/sbin/cowlinkfs-init panic=-1 loglevel=5"
append+=" log_buf_len=8M"
# Two test workers at once, KASAN's shadow and kmemleak's object pool
# want more memory.
mem=3072
[ "$KERNEL" != debug ] || mem=4096
accel=TCG
# shellcheck disable=SC2054 # commas separate QEMU suboptions
if [ "$ARCH" = arm64 ]; then
	qemu=(qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on)
elif kvm_usable; then
	# Plain -cpu host makes QEMU abort on MSR 0x10a on some hosts.
	qemu=(qemu-system-x86_64 -M pc -enable-kvm -cpu host,arch-capabilities=off)
	accel=KVM
else
	qemu=(qemu-system-x86_64 -M pc -cpu max)
	[ ! -e /dev/kvm ] || accel="TCG (the kernel printed nothing under KVM here)"
fi
qemu+=(-smp "${COWLINKFS_SMP:-2}" -m "$mem" -nographic -no-reboot -nic none -kernel "$image"
	-append "$append" "${drives[@]}")

say "boot: ${qemu[0]} under $accel ($mode mode), serial log in $log"
if [ "$mode" = shell ]; then
	"${qemu[@]}" 2>&1 | tee "$log"
	exit 0
fi
# In test mode only the test lines are shown; the full log is in $log.
show() {
	if [ "$mode" != demo ]; then
		grep --line-buffered -aE '^(not )?ok |^# [^0-9]|^crash:' || true
	else
		cat
	fi
}
# child_cpu: the CPU seconds (user and system, in clock ticks) of this
# script's waited-for children so far: QEMU's, through timeout, once it
# has exited
child_cpu() {
	local st
	read -r -a st </proc/$$/stat
	echo $((st[15] + st[16]))
}
cpu0=$(child_cpu)
t0=$SECONDS
set +e
timeout --foreground -k 10 "$timeout" "${qemu[@]}" </dev/null 2>&1 | tee "$log" | show
rc=${PIPESTATUS[0]}
set -e
[ "$rc" = 124 ] && echo "boot: guest timed out after $timeout s" >&2
# What the guest left on the tests disk: results/tap, results/dmesg, the
# figures tests measured (tests/lib.sh measured()), ...
out=$COWLINKFS_LOGS/results-$mode$ARCH_SUFFIX
rm -rf "$out"
mkdir -p "$out"
for f in tap dmesg bench.csv profile.txt measured; do
	debugfs -R "dump /results/$f $out/$f" "$run/tests.img" >/dev/null 2>&1 || true
done
# and the whole log of each failed test
debugfs -R "rdump /results/failed $out" "$run/tests.img" >/dev/null 2>&1 || true
# How many of the machine's cores the guest kept busy: what is left for
# anything beside it (Documentation/timings.md, ninth session).
wall=$((SECONDS - t0))
cpu=$((($(child_cpu) - cpu0) / $(getconf CLK_TCK)))
say "boot: guest stopped (qemu exit $rc) after $wall s, $cpu s of CPU" \
	"($(awk -v c="$cpu" -v w="$wall" 'BEGIN { printf "%.2f", w ? c / w : 0 }') cores on average)"
exit "$rc"
