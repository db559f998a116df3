#!/bin/bash
# Build the guest kernel ($ARCH) from Debian's linux-source-6.1, out of the
# repository: the source is extracted once into the cache, the build goes to a
# directory named after the source version, config fragment and compiler.
set -eu
. "$(dirname "$0")/lib.sh"

out=$(kernel_dir)
log=$COWLINKFS_LOGS/kernel${KERNEL:+-$KERNEL}$ARCH_SUFFIX.log

if [ -f "$out/.done" ]; then
	say "kernel: cached in $out"
	exit 0
fi

mk() {
	kmake O="$out" "$@"
}

mkdir -p "$out"
fragment=$out/fragment.config
kernel_fragment >"$fragment"
say "kernel: allnoconfig + guest/kernel.config + guest/kernel-$ARCH.config${KERNEL:+ + guest/kernel-$KERNEL.config}, log in $log"
KCONFIG_ALLCONFIG=$fragment mk allnoconfig >"$log" 2>&1

# A fragment line that did not survive dependency resolution is a bug in
# the fragment.  A later fragment may set an option again (the bench kernel
# turns lockdep off): the last line of an option is the one that counts.
missing=0
while IFS= read -r line; do
	case "$line" in CONFIG_*=n | CONFIG_*=y) ;; *) continue ;; esac
	opt=${line%%=*}
	want=${line#*=}
	if { [ "$want" = y ] && ! grep -qx "$opt=y" "$out/.config"; } ||
		{ [ "$want" = n ] && grep -qx "$opt=y" "$out/.config"; }; then
		echo "kernel: $opt=$want did not take effect" >&2
		missing=1
	fi
done < <(tac "$fragment" | awk -F= '/^CONFIG_/ && !seen[$1]++')
[ "$missing" = 0 ] || exit 1

jobs=$(nproc)
say "kernel: make -j$jobs ${KIMAGE##*/} modules (about 6 min from scratch, 1 min with a warm ccache)"
start=$(date +%s)
(
	while sleep 30; do
		say "kernel: still building, $(grep -c '^  CC' "$log") objects compiled"
	done
) &
ticker=$!
trap 'kill $ticker 2>/dev/null || true' EXIT
if ! mk -j"$jobs" "${KIMAGE##*/}" modules >>"$log" 2>&1; then
	tail -n 30 "$log" >&2
	echo "kernel: build failed, full log in $log" >&2
	exit 1
fi
touch "$out/.done"
say "kernel: built $out/$KIMAGE in $(($(date +%s) - start)) s"
