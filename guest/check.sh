#!/bin/bash
# Static checks of the module: checkpatch.pl --strict and sparse (C=2),
# both from the cached kernel tree.  Fails on any finding.
set -eu
. "$(dirname "$0")/lib.sh"

src=$COWLINKFS_CACHE/src/linux-source-6.1
[ -x "$src/scripts/checkpatch.pl" ] || { echo "check: run make test first (no kernel tree)" >&2; exit 1; }

rc=0
say "check: checkpatch.pl --strict fs/cowlinkfs"
# shellcheck disable=SC2046
perl "$src/scripts/checkpatch.pl" --no-tree --strict --terse --show-types \
	--ignore SPDX_LICENSE_TAG,FILE_PATH_CHANGES -f $(git -C "$COWLINKFS_TOP" ls-files 'fs/*.[ch]' | sed "s|^|$COWLINKFS_TOP/|") || rc=1

say "check: sparse (make C=2)"
out=$(module_make C=2 modules 2>&1)
if printf "%s\n" "$out" | grep -E "fs/cowlinkfs/.*(warning|error):"; then
	rc=1
fi
[ "$rc" = 0 ] && say "check: clean"
exit "$rc"
