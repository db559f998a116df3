#!/bin/bash
# Stage a guest run: build the module, the test helpers and the tools for
# arm64, pack them with the tests into the tests disk, and make fresh lower
# filesystem images (ext2, ext3, ext4, xfs, xfs with reflink, a small ext2 for
# ENOSPC).  Usage: stage.sh test|debug|demo|shell|soak|bench|install
# (install: our Debian packages and the kernel's linux-headers instead of
# the module; see tests/install.sh).
set -eu
. "$(dirname "$0")/lib.sh"

mode=${1:?usage: stage.sh test|debug|demo|shell|soak|bench|install|crash1|crash2|fstests}
run=$(run_dir)
stage=$run/stage
log=$COWLINKFS_LOGS/stage${KERNEL:+-$KERNEL}${COWLINKFS_RUN:+-$COWLINKFS_RUN}.log
kdir=$(kernel_dir)
: >"$log"

rm -rf "$stage"
mkdir -p "$stage/results" "$stage/bin" "$run"

# The module builds in a copy of its sources kept beside the disks, one
# per kernel build (objects of another config must never be reused) and
# per checkout (a git worktree sharing the cache must never take
# another's objects).  A source is copied only when its bytes differ from
# the copy's, and then gets a new time, so Kbuild rebuilds what changed.
top_id=$(echo "$COWLINKFS_TOP" | sha256sum | cut -c1-8)
MODULE_DIR=$run/module-${kdir##*/kernel-}-$top_id
say "stage: building cowlinkfs.ko against $kdir"
mkdir -p "$MODULE_DIR/uapi/linux"
srcs=()
for f in "$COWLINKFS_TOP"/fs/cowlinkfs/*.[ch]; do
	case $f in *.mod.c) continue ;; esac
	srcs+=("${f##*/}")
done
for f in "$MODULE_DIR"/*.[ch]; do
	case " ${srcs[*]} " in *" ${f##*/} "*) ;; *) [[ $f == *.mod.c ]] || rm -f "$f" ;; esac
done
syncfile() {
	cmp -s "$1" "$2" || cp "$1" "$2"
}
for f in Makefile Kconfig "${srcs[@]}"; do
	syncfile "$COWLINKFS_TOP/fs/cowlinkfs/$f" "$MODULE_DIR/$f"
done
syncfile "$COWLINKFS_TOP/VERSION" "$MODULE_DIR/VERSION"
syncfile "$COWLINKFS_TOP/fs/cowlinkfs/uapi/linux/cowlinkfs.h" "$MODULE_DIR/uapi/linux/cowlinkfs.h"
export MODULE_DIR
module_make W=1 modules >>"$log" 2>&1 || {
	tail -n 30 "$log" >&2
	exit 1
}
if grep -q 'warning:' "$log"; then
	grep 'warning:' "$log" >&2
	echo "stage: the module must build without warnings (W=1)" >&2
	exit 1
fi
cp "$MODULE_DIR/cowlinkfs.ko" "$stage/"

# Built into the run directory, again only where a source changed (make
# compares times: one directory per checkout, so that a git worktree
# sharing the cache never takes another's newer binaries); tools/ builds
# in place: one stage at a time.
say "stage: cross-compiling test helpers and tools"
bin=$run/bin-$top_id
flock "$COWLINKFS_CACHE/cross.lock" \
	make -C "$COWLINKFS_TOP" -s cross CROSS_OUT="$bin" >>"$log" 2>&1 || {
	tail -n 30 "$log" >&2
	exit 1
}
cp -p "$bin"/* "$stage/bin/"

if [ "$mode" = install ]; then
	# The guest's architecture, named: deb.sh builds the host's by default.
	say "stage: Debian packages (make deb DEB_ARCH=$DEB_ARCH) and the kernel's linux-headers"
	"$COWLINKFS_TOP/guest/deb.sh" "$DEB_ARCH" >>"$log"
	mkdir -p "$stage/debs"
	cp "$("$COWLINKFS_TOP/guest/headers.sh")" "$COWLINKFS_TOP"/build/deb/*.deb "$stage/debs/"
	rm -f "$stage"/debs/*-dbgsym_*.deb
	cp "$COWLINKFS_TOP/VERSION" "$stage/"
fi
cp -r "$COWLINKFS_TOP/guest" "$COWLINKFS_TOP/tests" "$stage/"
# A real source tree for the demo: the module's own sources.
mkdir -p "$stage/demo-src"
cp -r "$COWLINKFS_TOP/fs" "$COWLINKFS_TOP/Documentation" "$COWLINKFS_TOP/tools" \
	"$stage/demo-src/" 2>/dev/null || true
echo "$mode" >"$stage/mode"
[ -z "${ONLY:-}" ] || echo "$ONLY" >"$stage/only"
[ -z "${LOWERS:-}" ] || echo "$LOWERS" >"$stage/lowers"
[ "${FULL:-0}" = 0 ] || echo "$FULL" >"$stage/full"
[ -z "${TEST_TIMEOUT:-}" ] || echo "$TEST_TIMEOUT" >"$stage/timeout"
[ -z "${COWLINKFS_WORKERS:-}" ] || echo "$COWLINKFS_WORKERS" >"$stage/workers"
[ "$mode" != soak ] || echo "$SOAK $SOAK_FS" >"$stage/soak"
if [ "$mode" = fstests ]; then
	echo "${FSTESTS_LOWERS:-ext4 xfs}" >"$stage/fstests-lowers"
	echo "${FSTESTS_MODES:-bare flag all}" >"$stage/fstests-modes"
	echo "${FSTESTS_ARGS:--g quick}" >"$stage/fstests-args"
	echo "${FSTESTS_SECTION_LIMIT:-0}" >"$stage/fstests-limit"
	echo "${FSTESTS_JOBS:-1}" >"$stage/fstests-jobs"
	if [ -n "${FSTESTS_SKIP:-}" ]; then
		cp "$FSTESTS_SKIP" "$stage/fstests-skip"
	else
		: >"$stage/fstests-skip"
	fi
fi
if [ "$mode" = bench ]; then
	for v in BENCH_FS BENCH_ROUNDS BENCH_FILES BENCH_SCALE BENCH_META BENCH_DATA BENCH_SIZES \
		BENCH_CONFIGS BENCH_WORKLOADS BENCH_PROFILE BENCH_DROP; do
		echo "$v='${!v}'"
	done >"$stage/bench.conf"
fi

mkfs.ext4 -q -F -L cowtests -d "$stage" "$run/tests.img" 128M >>"$log" 2>&1

if [ "$mode" = crash2 ]; then
	say "stage: keeping the lower filesystems of the crashed boot"
	exit 0
fi
# The pristine foreign tree of the cross-arch runs (tests/t_crossarch.sh,
# the crash test, make bench's runs workload): a qcow2 overlay over the
# cached image, so that a run never changes the cache and the crash
# test's second boot sees what the first left.
rm -f "$run/foreign.qcow2"
foreign_mode=$mode
[ "$mode" != bench ] || case " $BENCH_WORKLOADS " in *" runs "*) foreign_mode=runs ;; esac
case $foreign_mode in
test | debug | demo | shell | crash1 | runs)
	foreign=$(bash "$COWLINKFS_TOP/guest/foreign.sh")
	qemu-img create -q -f qcow2 -F raw -b "$foreign" "$run/foreign.qcow2" >>"$log"
	;;
esac
# make bench copies whole trees: its lowers are BENCH_DISK (sparse) each
size=512M
[ "$mode" != bench ] || size=$BENCH_DISK
say "stage: making lower filesystems of $size (ext2, ext3, ext4, xfs, xfs-reflink) and a small ext2"
mklower() {
	local img=$run/$1.img size=$2
	shift 2
	rm -f "$img"
	truncate -s "$size" "$img"
	"$@" "$img" >>"$log" 2>&1
}
mklower ext2 "$size" mkfs.ext2 -q -F -L cl-ext2
mklower ext3 "$size" mkfs.ext3 -q -F -L cl-ext3
mklower ext4 "$size" mkfs.ext4 -q -F -L cl-ext4
mklower xfs "$size" mkfs.xfs -q -f -L cl-xfs -m reflink=0
mklower xfsr "$size" mkfs.xfs -q -f -L cl-xfsr -m reflink=1
mklower small 8M mkfs.ext2 -q -F -L cl-small -b 1024
if [ "$mode" = fstests ]; then
	# The guest makes the filesystems of each section on them; the
	# labels only say which is which.
	say "stage: fstests build and its test and scratch devices (${FSTESTS_DEV_SIZE:=6G} each)"
	img=$(bash "$COWLINKFS_TOP/guest/fstests.sh")
	ln -sf "$img" "$run/fstests.img"
	mklower fst-test "$FSTESTS_DEV_SIZE" mkfs.ext4 -q -F -L cl-fsttest
	mklower fst-scratch "$FSTESTS_DEV_SIZE" mkfs.ext4 -q -F -L cl-fstscratch
fi
# the second lane's devices (FSTESTS_JOBS=2), attached when they exist
rm -f "$run/fst-test2.img" "$run/fst-scratch2.img"
if [ "$mode" = fstests ] && [ "${FSTESTS_JOBS:-1}" = 2 ]; then
	mklower fst-test2 "$FSTESTS_DEV_SIZE" mkfs.ext4 -q -F -L cl-fsttest2
	mklower fst-scratch2 "$FSTESTS_DEV_SIZE" mkfs.ext4 -q -F -L cl-fstscratch2
fi
say "stage: ready in $run"
