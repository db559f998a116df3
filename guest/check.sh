#!/bin/bash
# Static checks, as make check and the suite run them: checkpatch.pl
# --strict and sparse (C=2, with W=1) on the module, from the cached
# kernel tree, shellcheck (warnings and errors) on every tracked shell
# script, and the directives of the tests (tests/plan.awk: "# lowers:",
# "# arch:" and the others).  Prints TAP on stdout, findings as "#"
# lines; fails on any.
set -eu
. "$(dirname "$0")/lib.sh"

src=$COWLINKFS_CACHE/src/linux-source-6.1
[ -x "$src/scripts/checkpatch.pl" ] || { echo "check: run make test first (no kernel tree)" >&2; exit 1; }
top=$COWLINKFS_TOP
n=0
rc=0

# report NAME OUTPUT: ok when OUTPUT is empty
report() {
	n=$((n + 1))
	if [ -z "$2" ]; then
		echo "ok $n check/$1"
	else
		echo "not ok $n check/$1"
		printf "%s\n" "$2" | head -n 40 | sed 's/^/# /'
		rc=1
	fi
}

echo "1..4"
say "check: checkpatch.pl --strict fs/cowlinkfs" >&2
# shellcheck disable=SC2046
out=$(perl "$src/scripts/checkpatch.pl" --no-tree --strict --terse --show-types \
	--ignore SPDX_LICENSE_TAG,FILE_PATH_CHANGES \
	-f $(git -C "$top" ls-files 'fs/*.[ch]' | sed "s|^|$top/|") 2>&1) || true
report checkpatch_strict_finds_nothing_in_the_module "$out"

say "check: sparse and W=1 (make C=2 W=1)" >&2
out=$(module_make C=2 W=1 modules 2>&1 | grep -E "fs/cowlinkfs/.*(warning|error):" || true)
report sparse_and_w1_find_nothing_in_the_module "$out"

say "check: shellcheck -S warning on the shell scripts" >&2
# shellcheck disable=SC2046
out=$(cd "$top" && shellcheck -S warning -f gcc $(git ls-files '*.sh' guest/inside/init .ci/run \
	debian/tests/unit debian/tests/installed debian/tests/dkms-build) 2>&1) || true
report shellcheck_finds_no_warning_in_the_scripts "$out"

say "check: every test function runs on some lower, and only on known ones" >&2
known=" $(cat "$top/tests/lowers") "
out=$(for f in "$top"/tests/t_*.sh; do
	# a directive plan.awk does not take would be dropped without a word
	grep -nE '^# (lowers|serial|lock|owns|matrix|arch|timeout)' "$f" |
		grep -vE '^[0-9]+:# (lowers: [a-z0-9 ]+|serial|owns-lower|lock: [a-z0-9-]+|matrix: (core|every)|arch: (aarch64|x86_64)|timeout: [1-9][0-9]*)$' |
		sed "s|^|${f##*/}: malformed directive at line |"
	awk -f "$top/tests/plan.awk" "$f" | while IFS="	" read -r fn on _; do
		[ -n "$on" ] || echo "${f##*/}: $fn runs on no lower"
		for w in $on; do
			case $known in
			*" $w "*) ;;
			*) echo "${f##*/}: $fn: '$w' is not in tests/lowers" ;;
			esac
		done
	done
done)
report every_test_function_runs_on_known_lowers "$out"

[ "$rc" != 0 ] || say "check: clean" >&2
exit "$rc"
