# shellcheck shell=bash
# Common settings for the guest/ scripts; sourced, not run.

: "${COWLINKFS_CACHE:=$HOME/.cache/cowlinkfs}"
: "${COWLINKFS_LOGS:=$COWLINKFS_CACHE/logs}"
COWLINKFS_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The guest's architecture: arm64 (the default, cross-built, under TCG) or
# x86_64 (make test ARCH=x86_64: built natively, under KVM when there is
# one).  ARCH is the kernel's name, DEB_ARCH Debian's.
: "${ARCH:=arm64}"
case $ARCH in
arm64)
	CROSS_COMPILE=aarch64-linux-gnu- DEB_ARCH=arm64
	KIMAGE=arch/arm64/boot/Image CONSOLE=ttyAMA0 ;;
x86_64)
	CROSS_COMPILE='' DEB_ARCH=amd64
	KIMAGE=arch/x86/boot/bzImage CONSOLE=ttyS0 ;;
*) echo "ARCH=$ARCH: the guest is arm64 or x86_64" >&2; exit 1 ;;
esac
# Names of cache entries and logs of the x86_64 guest say so.
ARCH_SUFFIX=
[ "$ARCH" = arm64 ] || ARCH_SUFFIX=-$ARCH
export COWLINKFS_CACHE COWLINKFS_LOGS COWLINKFS_TOP ARCH CROSS_COMPILE DEB_ARCH \
	KIMAGE CONSOLE ARCH_SUFFIX
mkdir -p "$COWLINKFS_CACHE" "$COWLINKFS_LOGS"

: "${COWLINKFS_T0:=$(date +%s)}"
export COWLINKFS_T0

# say MESSAGE: progress line with the time elapsed since the top-level start.
say() {
	printf '[%4ds] %s\n' $(($(date +%s) - COWLINKFS_T0)) "$*"
}

# guest_lock: one guest run at a time on this machine, whichever checkout
# starts it.  Every checkout stages into the same cache (run*/, logs/),
# crash2 boots on what crash1 left, and two TCG guests on two cores slow
# each other down threefold: a second run waits, and says so.  Taken once
# by the top-level command; the scripts it runs inherit it.
guest_lock() {
	[ -z "${COWLINKFS_GUEST_LOCKED:-}" ] || return 0
	exec 7>"$COWLINKFS_CACHE/guest.lock"
	if ! flock -n 7; then
		say "another guest run holds $COWLINKFS_CACHE/guest.lock: waiting for it"
		flock 7
	fi
	COWLINKFS_GUEST_LOCKED=1
	export COWLINKFS_GUEST_LOCKED
}

# key FILE...: short hash naming a cache entry after what produced it.
key() {
	cat "$@" | sha256sum | cut -c1-16
}

# KERNEL=debug (make test KERNEL=debug) selects the debug kernel: the same
# source and fragment plus guest/kernel-debug.config; KERNEL=bench the
# kernel of make bench, plus guest/kernel-bench.config.
: "${KERNEL:=}"
case $KERNEL in
"" | debug | bench) ;;
*) echo "KERNEL=$KERNEL: the kernels are the default, debug and bench" >&2; exit 1 ;;
esac
export KERNEL

# kernel_fragment: the config fragment of the selected kernel, on stdout.
kernel_fragment() {
	cat "$COWLINKFS_TOP/guest/kernel.config" "$COWLINKFS_TOP/guest/kernel-$ARCH.config"
	[ -z "$KERNEL" ] || cat "$COWLINKFS_TOP/guest/kernel-$KERNEL.config"
}

# kernel_key: the cache key of the built kernel (source package, fragment, compiler).
kernel_key() {
	{
		dpkg-query -W -f='${Version}' linux-source-6.1
		kernel_fragment
		"${CROSS_COMPILE}gcc" --version | head -n 1
	} | sha256sum | cut -c1-16
}

# kernel_dir: the kernel build directory (KDIR for module builds).
kernel_dir() {
	echo "$COWLINKFS_CACHE/kernel-$(kernel_key)"
}

# kernel_src: the linux-source-6.1 tree, extracted once into the cache, on stdout.
kernel_src() {
	local tarball=/usr/src/linux-source-6.1.tar.xz src=$COWLINKFS_CACHE/src/linux-source-6.1
	if [ ! -f "$src/.extracted" ] || [ "$src/.extracted" -ot "$tarball" ]; then
		say "extracting $tarball (about 10 s)" >&2
		rm -rf "$src"
		mkdir -p "$COWLINKFS_CACHE/src"
		tar -xJf "$tarball" -C "$COWLINKFS_CACHE/src"
		touch "$src/.extracted"
	fi
	echo "$src"
}

# kmake ARGS...: make in the kernel source for the guest's arch, with the
# compiler (through ccache) every cached kernel build is made with: another
# compiler command line would rebuild every object.
kmake() {
	local cc="${CROSS_COMPILE}gcc" src
	command -v ccache >/dev/null && cc="ccache $cc"
	src=$(kernel_src)
	CCACHE_DIR=$COWLINKFS_CACHE/ccache make -C "$src" ARCH="$ARCH" \
		CROSS_COMPILE="$CROSS_COMPILE" CC="$cc" "$@"
}

# module_make ARGS...: Kbuild on the module against the selected guest
# kernel (make module, stage.sh, check.sh), in fs/cowlinkfs or in
# MODULE_DIR, a copy of it.
module_make() {
	make -C "$(kernel_dir)" ARCH="$ARCH" CROSS_COMPILE="$CROSS_COMPILE" \
		M="${MODULE_DIR:-$COWLINKFS_TOP/fs/cowlinkfs}" CONFIG_COWLINK_FS=m "$@"
}

# run_dir: where stage.sh puts the disks of a guest run and boot.sh finds
# them, one per kernel (and arch), and one per COWLINKFS_RUN name, so
# that two guests can run side by side (make test's suite and debug leg
# beside the crash boots and smokes of tests/host/beside.sh).
run_dir() {
	echo "$COWLINKFS_CACHE/run${KERNEL:+-$KERNEL}${COWLINKFS_RUN:+-$COWLINKFS_RUN}$ARCH_SUFFIX"
}

# rootfs_packages [VARIANT]: the guest's packages, one per line; the
# install variant adds what DKMS needs to build the module in the guest.
rootfs_packages() {
	grep -hv '^#' "$COWLINKFS_TOP/guest/packages" \
		${1:+"$COWLINKFS_TOP/guest/packages-$1"}
}

# rootfs_img [VARIANT]: the cached guest root filesystem image (of the
# x86_64 guest: named so).
rootfs_img() {
	echo "$COWLINKFS_CACHE/rootfs$ARCH_SUFFIX${1:+-$1}-$({ rootfs_packages "${1:-}"
		cat "$COWLINKFS_TOP/guest/rootfs.sh" "$COWLINKFS_TOP/guest/inside/init"; } |
		sha256sum | cut -c1-16).img"
}

# kvm_usable: can QEMU use KVM here (the x86_64 guest on an x86_64 host)?
# A /dev/kvm QEMU opens is not enough: on some hosts (a paravirtual KVM
# without vmx) SeaBIOS runs but the 6.1 kernel hangs before its first
# console line.  So the guest kernel is booted once under KVM, without
# disks, and KVM counts only if it prints its banner within
# KVM_PROBE_SECONDS (15); the answer is kept per kernel and host kernel.
kvm_usable() {
	local image probe out pid i
	image=$(kernel_dir)/$KIMAGE
	[ "$(uname -m)" = x86_64 ] && [ -r /dev/kvm ] && [ -w /dev/kvm ] || return 1
	probe=$(kernel_dir)/.kvm-probe-$(uname -r)
	if [ ! -e "$probe" ]; then
		say "kvm: /dev/kvm is here; does the guest kernel boot under it?" \
			"(up to ${KVM_PROBE_SECONDS:-15} s)" >&2
		out=$(mktemp)
		qemu-system-x86_64 -M pc -enable-kvm -cpu host,arch-capabilities=off -m 256 \
			-nographic -no-reboot -nic none -kernel "$image" \
			-append "console=ttyS0 earlyprintk=serial,ttyS0 panic=-1" \
			</dev/null >"$out" 2>&1 &
		pid=$!
		# shellcheck disable=SC2064 # this probe's pid and file
		trap "kill $pid 2>/dev/null; rm -f '$out' '$probe.tmp'" EXIT
		echo no >"$probe.tmp"
		for ((i = 0; i < ${KVM_PROBE_SECONDS:-15} * 10; i++)); do
			if grep -aq 'Linux version' "$out"; then
				echo yes >"$probe.tmp"
				break
			fi
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		mv "$probe.tmp" "$probe"
		rm -f "$out"
		trap - EXIT
	fi
	[ "$(cat "$probe")" = yes ]
}

# foreign_arch ARCH WHY: make the host's dpkg and apt know ARCH, whose
# packages are downloaded for the guest (guest/foreign.sh, fstests.sh:
# never installed) or for make deb; only when one is about to be
foreign_arch() {
	[ "$1" != "$(dpkg --print-architecture)" ] || return 0
	dpkg --print-foreign-architectures | grep -qx "$1" && return 0
	say "deps: dpkg --add-architecture $1 ($2)" >&2
	dpkg --add-architecture "$1"
	apt-get update >"$COWLINKFS_LOGS/deps.log" 2>&1 || {
		tail -n 20 "$COWLINKFS_LOGS/deps.log" >&2
		return 1
	}
}

# leg NAME CMD...: CMD with its output's lines prefixed by NAME, for
# legs that run side by side (tests/host/run.sh); fails as CMD does
leg() (
	name=$1
	shift
	set -o pipefail
	"$@" 2>&1 | sed -u "s/^/$name | /"
)

# apt_mirror: the Debian mirror this machine's apt configuration names.
apt_mirror() {
	local uri
	uri=$(grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null |
		awk '{print $2}' | grep -v -- '-security' | head -n 1)
	[ -n "$uri" ] || uri=$(grep -hE '^deb ' /etc/apt/sources.list 2>/dev/null |
		awk '$3 !~ /security/ {print $2; exit}')
	[ -n "$uri" ] || { echo "no Debian mirror in the apt configuration" >&2; return 1; }
	echo "$uri"
}
