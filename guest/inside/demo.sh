#!/bin/sh
# Guest: the cp -rl story on an ext3 lower, told for a newcomer.
set -eu
step() { printf '\n=== %s\n' "$*"; }
ms() { date +%s%3N; }

. /t/tests/lower.sh
mkdir -p /lower/ext3 /mnt/demo
mount_lower ext3
rm -rf /lower/ext3/demo
mkdir /lower/ext3/demo
mount -t cowlinkfs /lower/ext3/demo /mnt/demo
grep cowlinkfs /proc/mounts
cd /mnt/demo

step "mark the top directory copy-on-write; everything created below inherits it"
cowlink set /mnt/demo
cowlink get /mnt/demo

step "a real source tree: the cowlinkfs sources and /usr/share/doc"
mkdir old
cp -a /t/demo-src/. old/
cp -a /usr/share/doc old/doc
echo "old/: $(find old -type f | wc -l) files, $(du -sh old | cut -f1)"

step "clone it three ways: cowlink clone and cp -rl (cow links) against cp -a (copies)"
t0=$(ms); cowlink clone old new; t1=$(ms); cp -rl old new2; t2=$(ms); cp -a old full; t3=$(ms)
echo "cowlink clone: $((t1 - t0)) ms   cp -rl: $((t2 - t1)) ms   cp -a: $((t3 - t2)) ms"
echo "disk used by all four trees: $(du -sh /mnt/demo | cut -f1) (cp -a alone: $(du -sh full | cut -f1))"
rm -rf full new2

f=fs/cowlinkfs/super.c
step "before editing: both names of $f are one inode"
ls -li old/$f new/$f

step "edit new/$f in place with vi (vim.tiny)"
vim.tiny -u NONE -i NONE -n -es -c '1s/$/ \/\* edited in the clone \*\//' -c wq new/$f </dev/null
ls -li old/$f new/$f

step "diff -r old new: only the edited file differs"
diff -r old new || true

step "what is still shared: cowlink status"
cowlink status new | tail -n 1
echo "($(find new -type f | wc -l) files in new/; du counts shared inodes once: $(du -sh old new | tr '\n' ' '))"
cd /
umount /mnt/demo
umount /lower/ext3
