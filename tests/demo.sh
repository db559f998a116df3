#!/bin/sh
# Guest: the cp -rl story on an ext3 lower, told for a newcomer.
set -eu
step() { printf '\n=== %s\n' "$*"; }
ms() { date +%s%3N; }

mkdir -p /lower/ext3 /mnt/demo
mount "$(blkid -L cl-ext3)" /lower/ext3
rm -rf /lower/ext3/demo
mkdir /lower/ext3/demo
mount -t cowlinkfs /lower/ext3/demo /mnt/demo
grep cowlinkfs /proc/mounts
cd /mnt/demo

step "mark the top directory copy-on-write; everything created below inherits it"
try setcow /mnt/demo 1
echo "flag on /mnt/demo: $(try getcow /mnt/demo)"

step "a real source tree: the cowlinkfs sources and /usr/share/doc"
mkdir old
cp -a /t/demo-src/. old/
cp -a /usr/share/doc old/doc
echo "old/: $(find old -type f | wc -l) files, $(du -sh old | cut -f1)"

step "clone it: cp -rl (links) against cp -a (copies)"
t0=$(ms); cp -rl old new; t1=$(ms); cp -a old full; t2=$(ms)
echo "cp -rl: $((t1 - t0)) ms   cp -a: $((t2 - t1)) ms"
rm -rf full

f=fs/cowlinkfs/super.c
step "before editing: both names of $f are one inode"
ls -li old/$f new/$f

step "edit new/$f in place with vi (vim.tiny)"
vim.tiny -u NONE -i NONE -n -es -c '1s/$/ \/\* edited in the clone \*\//' -c wq new/$f </dev/null
ls -li old/$f new/$f

step "diff -r old new: only the edited file differs"
diff -r old new || true

step "what is still shared"
shared=$(find new -type f -links +1 | wc -l)
total=$(find new -type f | wc -l)
echo "$shared of $total files in new/ still share their inode with old/"
cd /
umount /mnt/demo
umount /lower/ext3
