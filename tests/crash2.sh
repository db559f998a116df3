#!/bin/sh
# Guest, second boot of the crash test: every name holds the old bytes or
# the complete new ones, link counts agree, no temp file is left over.
R=/t/results
. /t/tests/lower.sh
n=0
report() {
	n=$((n + 1))
	if [ "$1" = ok ]; then
		echo "ok $n $2" | tee -a $R/tap
	else
		echo "not ok $n $2" | tee -a $R/tap
		echo "# $3" | tee -a $R/tap
	fi
}
: >$R/tap
for fs in ext3 xfs; do
	mkdir -p /lower/$fs /mnt/$fs
	mount_lower $fs
	[ $fs = ext3 ] && echo "# the first boot cut the power with $(cat /lower/ext3/crash-busy) of 6 breaks running" | tee -a $R/tap
	mount -t cowlinkfs /lower/$fs/crash /mnt/$fs
	for k in 1 2 3; do
		old=$(cat /lower/$fs/crash-$k.old)
		b=$(md5sum </mnt/$fs/big$k | cut -d' ' -f1)
		o=$(md5sum </mnt/$fs/other$k | cut -d' ' -f1)
		hb=$(head -c 60000000 /mnt/$fs/big$k | md5sum | cut -d' ' -f1)
		tail=$(tail -c 1 /mnt/$fs/big$k)
		size=$(stat -c %s /mnt/$fs/big$k)
		if [ "$o" != "$old" ]; then
			report fail "$fs/crash/other_name_keeps_old_bytes_$k" "other$k changed"
		else
			report ok "$fs/crash/other_name_keeps_old_bytes_$k"
		fi
		# Old inode, or a complete copy (its append may be lost: it was
		# never fsynced), never a partial one.
		if [ "$b" = "$old" ] && [ "$(stat -c %i /mnt/$fs/big$k)" = "$(stat -c %i /mnt/$fs/other$k)" ]; then
			report ok "$fs/crash/broken_name_holds_old_or_whole_new_$k"
		elif [ "$hb" = "$old" ] && [ "$(stat -c %h /mnt/$fs/big$k)" = 1 ] &&
			{ [ "$size" = 60000000 ] || { [ "$size" = 60000001 ] && [ "$tail" = X ]; }; }; then
			report ok "$fs/crash/broken_name_holds_old_or_whole_new_$k"
		else
			report fail "$fs/crash/broken_name_holds_old_or_whole_new_$k" \
				"big$k: size $size, neither the old inode nor a complete copy"
		fi
		if [ "$(stat -c %h /mnt/$fs/other$k)" = "$(stat -c %h /lower/$fs/crash/other$k)" ]; then
			report ok "$fs/crash/link_counts_agree_$k"
		else
			report fail "$fs/crash/link_counts_agree_$k" "nlink differs"
		fi
	done
	if [ "$(try getcow /mnt/$fs/other1)" = 1 ] && [ "$(try getcow /mnt/$fs)" = 1 ]; then
		report ok "$fs/crash/cow_flag_survives_reboot"
	else
		report fail "$fs/crash/cow_flag_survives_reboot" "flag lost"
	fi
	left=$(ls -A /lower/$fs/crash/.cowlinkfs-work | wc -l)
	if [ "$left" = 0 ] && [ -z "$(find /mnt/$fs -maxdepth 1 -name '*cowlinkfs*')" ]; then
		report ok "$fs/crash/nothing_stray_after_mount"
	else
		report fail "$fs/crash/nothing_stray_after_mount" "$left entries in the work dir"
	fi
	umount /mnt/$fs
	umount /lower/$fs
done
. /t/tests/foreign.sh
foreign_setup
echo "# the first boot cut the power with $(cat $FL/crash-busy) of 4 cross-arch runs running" | tee -a $R/tap
manifest $FL/tree >/tmp/manifest.after
if diff $FL/manifest.before /tmp/manifest.after >/tmp/manifest.diff; then
	report ok foreign/crash/pristine_tree_intact_after_a_power_cut_mid_run
else
	report fail foreign/crash/pristine_tree_intact_after_a_power_cut_mid_run \
		"manifest differs: $(head -n 6 /tmp/manifest.diff | tr '\n' ' ')"
fi
if [ -z "$(ls -A $FL/.cowlinkfs-work)" ]; then
	report ok foreign/crash/nothing_stray_after_mount
else
	report fail foreign/crash/nothing_stray_after_mount "$(ls -A $FL/.cowlinkfs-work | wc -l) entries in the work dir"
fi
foreign_teardown
dmesg | grep -E 'cowlinkfs: removed' | sed 's/^/# /' | tee -a $R/tap
echo "1..$n" | tee -a $R/tap
