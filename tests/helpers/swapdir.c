// SPDX-License-Identifier: GPL-2.0
/*
 * swapdir: the attacker of a tree walk by path (tests/t_tools.sh).  Makes
 * DIR.lnk a symlink to TARGET, then swaps DIR and DIR.lnk atomically
 * (renameat2 RENAME_EXCHANGE) as fast as it can, until STOPFILE exists:
 * half of the time DIR is a symlink out of the tree, and never missing.
 * Where the filesystem has no RENAME_EXCHANGE (ext2) it swaps with three
 * plain renames through DIR.tmp instead, DIR then missing for a moment.
 * Once DIR or DIR.lnk is gone (a discard of the tree removed it), it stops
 * there: its count is what the walk met.
 *
 *   swapdir DIR TARGET STOPFILE
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char lnk[4096], tmp[4096];

/* Swap @dir and lnk: atomically where the filesystem can, else by renames. */
static int swap(const char *dir)
{
	static int plain;

	if (!plain) {
		if (!renameat2(AT_FDCWD, dir, AT_FDCWD, lnk, RENAME_EXCHANGE))
			return 0;
		if (errno != EINVAL)
			return -1;
		plain = 1;
	}
	if (rename(dir, tmp) < 0 || rename(lnk, dir) < 0 ||
	    rename(tmp, lnk) < 0)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long n = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: swapdir DIR TARGET STOPFILE\n");
		return 2;
	}
	snprintf(lnk, sizeof(lnk), "%s.lnk", argv[1]);
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
	if (symlink(argv[2], lnk) < 0) {
		perror("swapdir: symlink");
		return 1;
	}
	while (n % 64 || access(argv[3], F_OK) < 0) {
		if (swap(argv[1]) < 0) {
			if (errno == ENOENT) {
				printf("%lu\n", n);
				return 0;
			}
			perror("swapdir: rename");
			return 1;
		}
		n++;
	}
	/* Leave the tree as it was: DIR the directory. */
	if (n % 2 && swap(argv[1]) < 0) {
		perror("swapdir: rename");
		return 1;
	}
	printf("%lu\n", n);
	return 0;
}
