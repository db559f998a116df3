#!/bin/sh
# Guest: the random testers for as long as asked (make soak).  For each
# lower fs in turn, for SOAK seconds, alternate cowfsx runs (cow=flag,
# cow=all, two workers, remounts) and cowdata runs on fresh directories,
# each with a new seed.  One TAP line per run; a failing run keeps its
# output, which names the seed and the step to replay.
set -u
T=/t
R=$T/results
export PATH="$T/bin:$PATH"
read -r secs fstypes <$T/soak
: >$R/tap
n=0
# shellcheck source=tests/lower.sh
. $T/tests/lower.sh

# run NAME CMD...: one run, one TAP line
run() {
	name=$1
	shift
	n=$((n + 1))
	if "$@" >/tmp/soak.log 2>&1; then
		echo "ok $n $name: $(tail -n 1 /tmp/soak.log)" | tee -a $R/tap
	else
		echo "not ok $n $name" | tee -a $R/tap
		tail -n 30 /tmp/soak.log | sed 's/^/# /' | tee -a $R/tap
	fi
}

for fs in $fstypes; do
	mkdir -p "/lower/$fs" /mnt/t
	if ! mount_lower "$fs"; then
		n=$((n + 1))
		echo "not ok $n $fs: cannot mount the lower fs" | tee -a $R/tap
		continue
	fi
	L=/lower/$fs/soak M=/mnt/t
	xns=user
	[ "$fs" != tmpfs ] || xns=trusted
	x=
	[ "$fs" != ext3 ] || x="-X fallocate"
	end=$(($(cut -d. -f1 /proc/uptime) + secs))
	seed=1000
	while [ "$(cut -d. -f1 /proc/uptime)" -lt $end ]; do
		seed=$((seed + 1))
		for opt in "" all; do
			rm -rf "$L"
			mkdir -p "$L"
			mount -t cowlinkfs ${opt:+-o cow=$opt} "$L" "$M"
			mkdir "$M/x" "$M/y"
			case $((seed % 3)) in
			0) more="-p 2" ;;
			1) more="-r -M $M" ;;
			*) more= ;;
			esac
			# shellcheck disable=SC2086
			run "$fs/cowfsx -m ${opt:-cow} -s $seed $more $x" \
				cowfsx -m "${opt:-cow}" -x $xns $x -n 1000 -s $seed \
				-L "$L/x" $more "$M/x"
			run "$fs/cowdata -s $seed" cowdata -n 3000 -s $seed "$M/y"
			umount "$M"
		done
	done
	rm -rf "/lower/$fs/soak"
	umount "/lower/$fs"
done
dmesg >>$R/dmesg
echo "1..$n" | tee -a $R/tap
