#!/bin/bash
# Everything from a bare machine to a guest run, in five steps, each cached:
# host packages, kernel, rootfs, staging, boot.  Usage: pipeline.sh test|debug|demo|shell|soak|bench|install
set -eu
. "$(dirname "$0")/lib.sh"
guest_lock

mode=${1:?usage: pipeline.sh test|debug|demo|shell|soak|bench|install|fstests}
g=$COWLINKFS_TOP/guest
say "step 1 of 5: host packages";            "$g/deps.sh"
say "step 2 of 5: $ARCH kernel";            "$g/kernel.sh"
variant=
[ "$mode" != install ] || variant=install
say "step 3 of 5: debootstrap guest rootfs"; "$g/rootfs.sh" $variant
say "step 4 of 5: module, helpers, disks";   "$g/stage.sh" "$mode"
[ "$mode" != bench ] || "$g/bench-src.sh"
say "step 5 of 5: guest run ($mode)";        "$g/boot.sh" "$mode" "${COWLINKFS_TIMEOUT:-3600}"
