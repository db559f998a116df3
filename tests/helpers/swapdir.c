// SPDX-License-Identifier: GPL-2.0
/*
 * swapdir: the attacker of a tree walk by path (tests/t_tools.sh).  Makes
 * DIR.lnk a symlink to TARGET, then swaps DIR and DIR.lnk atomically
 * (renameat2 RENAME_EXCHANGE) as fast as it can, until STOPFILE exists:
 * half of the time DIR is a symlink out of the tree, and never missing.
 *
 *   swapdir DIR TARGET STOPFILE
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	unsigned long n = 0;
	char lnk[4096];

	if (argc != 4) {
		fprintf(stderr, "usage: swapdir DIR TARGET STOPFILE\n");
		return 2;
	}
	snprintf(lnk, sizeof(lnk), "%s.lnk", argv[1]);
	if (symlink(argv[2], lnk) < 0) {
		perror("swapdir: symlink");
		return 1;
	}
	while (n % 64 || access(argv[3], F_OK) < 0) {
		if (renameat2(AT_FDCWD, argv[1], AT_FDCWD, lnk,
			      RENAME_EXCHANGE) < 0) {
			perror("swapdir: renameat2");
			return 1;
		}
		n++;
	}
	/* Leave the tree as it was: DIR the directory. */
	if (n % 2)
		renameat2(AT_FDCWD, argv[1], AT_FDCWD, lnk, RENAME_EXCHANGE);
	printf("%lu\n", n);
	return 0;
}
