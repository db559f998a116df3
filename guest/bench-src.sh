#!/bin/bash
# The bench disk: real source trees for make bench, as tar files of the
# first N regular files (in path order) of the extracted linux-source-6.1,
# one per size in BENCH_FILES and BENCH_SCALE, each with a list of 20 of
# its .c files to change (tree-N.tar, tree-N.edit), on an ext4 image
# labelled cl-bsrc.  Cached by sizes and this script.
set -eu
. "$(dirname "$0")/lib.sh"

sizes=$(printf '%s\n' $BENCH_FILES $BENCH_SCALE | sort -nu)
img=$COWLINKFS_CACHE/bench-src-$( (echo "$sizes"; dpkg-query -W -f='${Version}' linux-source-6.1; cat "$0") | key /dev/stdin).img
link() { mkdir -p "$(run_dir)" && ln -sf "$img" "$(run_dir)/bsrc.img"; }
if [ -f "$img" ]; then
	say "bench-src: cached in $img"
	link
	exit 0
fi
src=$(kernel_src)
dir=$COWLINKFS_CACHE/bench-src
rm -rf "$dir"
mkdir -p "$dir"
# path order, but Documentation/ (9,000 files without a line of C) last
(cd "$src" && find . -type f ! -name .extracted | LC_ALL=C sort |
	awk '/^\.\/Documentation\//{ d[++n] = $0; next } { print } END { for (i = 1; i <= n; i++) print d[i] }') >"$dir/.all"
total=$(wc -l <"$dir/.all")
for n in $sizes; do
	if [ "$n" -gt "$total" ]; then
		echo "bench-src: the tree has $total files, $n asked" >&2
		exit 1
	fi
	say "bench-src: tree of $n files"
	head -n "$n" "$dir/.all" >"$dir/.list"
	tar -C "$src" -cf "$dir/tree-$n.tar" -T "$dir/.list"
	step=$(($(grep -c '\.c$' "$dir/.list" || true) / 20))
	grep '\.c$' "$dir/.list" | awk -v s=$((step > 0 ? step : 1)) '(NR - 1) % s == 0' |
		head -n 20 | sed 's|^\./||' >"$dir/tree-$n.edit"
	if [ "$(wc -l <"$dir/tree-$n.edit")" != 20 ]; then
		echo "bench-src: a tree of $n files has too few .c files to change; ask for more files" >&2
		exit 1
	fi
done
rm -f "$dir/.all" "$dir/.list"
mb=$(($(du -sm "$dir" | cut -f1) * 11 / 10 + 16))
mkfs.ext4 -q -F -L cl-bsrc -d "$dir" "$img.tmp" "${mb}M"
mv "$img.tmp" "$img"
rm -rf "$dir"
say "bench-src: $img (${mb} MiB)"
link
