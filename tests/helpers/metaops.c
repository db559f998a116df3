// SPDX-License-Identifier: GPL-2.0
/*
 * metaops: one metadata operation on N files of a directory, without a
 * process per file (tests/bench.sh):
 *
 *   metaops create DIR N   create DIR/f0 .. DIR/f(N-1), empty
 *   metaops stat DIR N     stat each of them
 *   metaops unlink DIR N   unlink each of them
 *   metaops miss DIR N     stat DIR/g0 .. DIR/g(N-1), which must not exist,
 *                          twice over, as a build searches an include path
 *
 * Stops at the first failure with its errno.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

static int op(const char *what, const char *path)
{
	struct stat st;
	int fd;

	if (!strcmp(what, "create")) {
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		return fd < 0 ? -1 : close(fd);
	}
	if (!strcmp(what, "stat"))
		return stat(path, &st);
	if (!strcmp(what, "unlink"))
		return unlink(path);
	if (!strcmp(what, "miss")) {
		if (!stat(path, &st))
			errno = EEXIST;
		return errno == ENOENT ? 0 : -1;
	}
	errno = EINVAL;
	return -1;
}

int main(int argc, char **argv)
{
	char path[4096];
	long i, n, pass, passes;

	if (argc != 4 || (n = atol(argv[3])) <= 0) {
		fprintf(stderr, "usage: metaops create|stat|unlink|miss DIR N\n");
		return 2;
	}
	passes = strcmp(argv[1], "miss") ? 1 : 2;
	for (pass = 0; pass < passes; pass++) {
		for (i = 0; i < n; i++) {
			snprintf(path, sizeof(path), "%s/%c%ld", argv[2],
				 passes == 2 ? 'g' : 'f', i);
			if (op(argv[1], path)) {
				fprintf(stderr, "metaops: %s %s: %s\n", argv[1],
					path, strerror(errno));
				return 1;
			}
		}
	}
	return 0;
}
