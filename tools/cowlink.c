// SPDX-License-Identifier: GPL-2.0
/*
 * cowlink - manage copy-on-write links on a cowlinkfs mount.
 *
 *   cowlink get|set|clear [-R] PATH...
 *   cowlink clone [-v] SRC DST
 *   cowlink status [-r] [--json] PATH...
 *   cowlink break [-v] PATH...
 *
 * Exit status: 0 success, 1 an operation failed, 2 usage error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "libcowlink.h"
#include "cowlink.h"

#define COWLINK_VERSION "0.1"

static int verbose;
static int recursive;
static int json;
static int failed;

static void warn_path(const char *what, const char *path)
{
	fprintf(stderr, "cowlink: %s '%s': %s\n", what, path, strerror(errno));
	failed = 1;
}

static void usage(FILE *f)
{
	fputs("Usage: cowlink get|set|clear [-R] PATH...\n"
	      "       cowlink clone [-v] SRC DST\n"
	      "       cowlink status [-r] [--json] PATH...\n"
	      "       cowlink break [-v] PATH...\n"
	      "Manage copy-on-write links on a cowlinkfs mount.\n\n"
	      "  -R, -r, --recursive  walk directories\n"
	      "  -v, --verbose        report progress and new inode numbers\n"
	      "      --json           machine-readable status\n"
	      "  -h, --help           show this help\n"
	      "  -V, --version        show the version\n\n"
	      "Exit status: 0 success, 1 an operation failed, 2 usage error.\n"
	      "See cowlink(1).\n", f);
}

/* get / set / clear */

static enum cowlink_flag_op flag_op;

static void flag_one(const char *path)
{
	int v;

	if (flag_op == FLAG_GET) {
		v = cowlink_get(path);
		if (v < 0)
			warn_path("cannot read flag of", path);
		else
			printf("%s %s\n", v ? "cow" : "---", path);
		return;
	}
	if (cowlink_set(path, flag_op == FLAG_SET) < 0)
		warn_path("cannot set flag on", path);
}

static int flag_walk(const char *path, const struct stat *st, int type,
		     struct FTW *ftw)
{
	(void)ftw;
	/* Like chattr -R: the flag is for files and directories only. */
	if (type == FTW_F && !S_ISREG(st->st_mode))
		return 0;
	if (type == FTW_SL)
		return 0;
	if (type == FTW_DNR || type == FTW_NS) {
		errno = EACCES;
		warn_path("cannot read", path);
		return 0;
	}
	flag_one(path);
	return 0;
}

static int cmd_flag(int argc, char **argv)
{
	int i;

	for (i = 0; i < argc; i++) {
		if (recursive) {
			if (nftw(argv[i], flag_walk, 64, FTW_PHYS) < 0)
				warn_path("cannot walk", argv[i]);
		} else {
			flag_one(argv[i]);
		}
	}
	return failed;
}

/* clone */

static const char *clone_src, *clone_dst;
static unsigned long clone_count;

struct dir_time {
	char *path;
	struct timespec times[2];
};
static struct dir_time *dir_times;
static size_t n_dir_times;

static int clone_walk(const char *path, const struct stat *st, int type,
		      struct FTW *ftw)
{
	char dst[PATH_MAX], target[PATH_MAX];
	struct timespec times[2] = { st->st_atim, st->st_mtim };
	ssize_t len;

	if (snprintf(dst, sizeof(dst), "%s%s", clone_dst,
		     path + strlen(clone_src)) >= (int)sizeof(dst)) {
		errno = ENAMETOOLONG;
		warn_path("cannot clone", path);
		return 0;
	}
	if (type == FTW_DNR || type == FTW_NS) {
		errno = EACCES;
		warn_path("cannot read", path);
		return 0;
	}

	if (S_ISDIR(st->st_mode)) {
		if (mkdir(dst, 0700) < 0 && !(errno == EEXIST && ftw->level == 0)) {
			warn_path("cannot create directory", dst);
			return FTW_SKIP_SUBTREE;
		}
		if (cowlink_set(dst, 1) < 0)
			warn_path("cannot set flag on", dst);
		if (lchown(dst, st->st_uid, st->st_gid) < 0 ||
		    chmod(dst, st->st_mode & 07777) < 0)
			warn_path("cannot set owner or mode of", dst);
		/* Times last: creating the entries changes them. */
		dir_times = realloc(dir_times, (n_dir_times + 1) * sizeof(*dir_times));
		if (!dir_times) {
			perror("cowlink");
			exit(1);
		}
		dir_times[n_dir_times].path = strdup(dst);
		memcpy(dir_times[n_dir_times].times, times, sizeof(times));
		n_dir_times++;
	} else if (S_ISREG(st->st_mode)) {
		if (copyfile(path, dst) < 0)
			warn_path("cannot link", dst);
	} else if (S_ISLNK(st->st_mode)) {
		len = readlink(path, target, sizeof(target) - 1);
		if (len < 0 || (target[len] = '\0', symlink(target, dst)) < 0) {
			warn_path("cannot copy symlink", dst);
			return 0;
		}
		if (lchown(dst, st->st_uid, st->st_gid) < 0 ||
		    utimensat(AT_FDCWD, dst, times, AT_SYMLINK_NOFOLLOW) < 0)
			warn_path("cannot set owner or times of", dst);
	} else {
		if (mknod(dst, st->st_mode, st->st_rdev) < 0) {
			warn_path("cannot create", dst);
			return 0;
		}
		if (lchown(dst, st->st_uid, st->st_gid) < 0 ||
		    chmod(dst, st->st_mode & 07777) < 0 ||
		    utimensat(AT_FDCWD, dst, times, 0) < 0)
			warn_path("cannot set owner, mode or times of", dst);
	}
	if (verbose && ++clone_count % 1000 == 0)
		fprintf(stderr, "cowlink: %lu entries cloned\n", clone_count);
	return 0;
}

static int cmd_clone(int argc, char **argv)
{
	struct stat ss, ds;
	char parent[PATH_MAX], *slash;
	size_t i;

	if (argc != 2) {
		usage(stderr);
		return 2;
	}
	clone_src = argv[0];
	clone_dst = argv[1];
	if (stat(clone_src, &ss) < 0) {
		warn_path("cannot clone", clone_src);
		return 1;
	}
	if (!S_ISDIR(ss.st_mode)) {
		errno = ENOTDIR;
		warn_path("cannot clone", clone_src);
		return 1;
	}
	snprintf(parent, sizeof(parent), "%s", clone_dst);
	slash = strrchr(parent, '/');
	if (!slash)
		strcpy(parent, ".");
	else if (slash == parent)
		parent[1] = '\0';
	else
		*slash = '\0';
	if (cowlink_is_cowlinkfs(clone_src) != 1 ||
	    cowlink_is_cowlinkfs(parent) != 1) {
		fprintf(stderr, "cowlink: '%s' and '%s' must both be on a cowlinkfs mount\n",
			clone_src, parent);
		return 1;
	}
	if (stat(parent, &ds) < 0) {
		warn_path("cannot clone into", parent);
		return 1;
	}
	if (ss.st_dev != ds.st_dev) {
		fprintf(stderr, "cowlink: '%s' and '%s' are not on one filesystem\n",
			clone_src, parent);
		return 1;
	}
	if (nftw(clone_src, clone_walk, 64, FTW_PHYS | FTW_MOUNT |
		 FTW_ACTIONRETVAL) < 0)
		warn_path("cannot walk", clone_src);
	for (i = n_dir_times; i-- > 0;) {
		if (utimensat(AT_FDCWD, dir_times[i].path, dir_times[i].times, 0) < 0)
			warn_path("cannot set times of", dir_times[i].path);
		free(dir_times[i].path);
	}
	free(dir_times);
	if (verbose)
		fprintf(stderr, "cowlink: %lu entries cloned\n", clone_count);
	return failed;
}

/* status */

struct seen {
	dev_t dev;
	ino_t ino;
};
static void *seen_root;
static unsigned long st_files, st_names;
static unsigned long long st_saved;
static int st_first = 1;

static int seen_cmp(const void *a, const void *b)
{
	const struct seen *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return 0;
}

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void status_one(const char *path, const struct stat *st)
{
	struct seen key = { st->st_dev, st->st_ino }, *n;

	if (!S_ISREG(st->st_mode) || st->st_nlink < 2)
		return;
	st_names++;
	if (tfind(&key, &seen_root, seen_cmp))
		return;
	n = malloc(sizeof(*n));
	if (!n) {
		perror("cowlink");
		exit(1);
	}
	*n = key;
	tsearch(n, &seen_root, seen_cmp);
	st_files++;
	/* A full copy would store these bytes once per link. */
	st_saved += (unsigned long long)(st->st_nlink - 1) * st->st_blocks * 512;
	if (json) {
		printf("%s\n    {\"path\": ", st_first ? "" : ",");
		json_string(path);
		printf(", \"links\": %lu, \"inode\": %lu, \"size\": %lld}",
		       (unsigned long)st->st_nlink, (unsigned long)st->st_ino,
		       (long long)st->st_size);
		st_first = 0;
	} else {
		printf("%lu links  %s\n", (unsigned long)st->st_nlink, path);
	}
}

static int status_walk(const char *path, const struct stat *st, int type,
		       struct FTW *ftw)
{
	(void)ftw;
	if (type == FTW_DNR || type == FTW_NS) {
		errno = EACCES;
		warn_path("cannot read", path);
		return 0;
	}
	status_one(path, st);
	return 0;
}

static int cmd_status(int argc, char **argv)
{
	struct stat st;
	int i;

	if (json)
		printf("{\n  \"shared\": [");
	for (i = 0; i < argc; i++) {
		if (recursive) {
			if (nftw(argv[i], status_walk, 64, FTW_PHYS) < 0)
				warn_path("cannot walk", argv[i]);
		} else if (lstat(argv[i], &st) < 0) {
			warn_path("cannot stat", argv[i]);
		} else {
			status_one(argv[i], &st);
		}
	}
	if (json)
		printf("\n  ],\n  \"files_shared\": %lu,\n  \"names\": %lu,\n"
		       "  \"bytes_saved\": %llu\n}\n", st_files, st_names, st_saved);
	else
		printf("files shared: %lu, names: %lu, bytes saved: %llu\n",
		       st_files, st_names, st_saved);
	return failed;
}

/* break */

static int cmd_break(int argc, char **argv)
{
	struct stat before, after;
	int i, fd;

	for (i = 0; i < argc; i++) {
		if (lstat(argv[i], &before) < 0) {
			warn_path("cannot break", argv[i]);
			continue;
		}
		if (!S_ISREG(before.st_mode)) {
			errno = EINVAL;
			warn_path("cannot break", argv[i]);
			continue;
		}
		/* cowlinkfs breaks the link of O_RDWR opens at open. */
		fd = open(argv[i], O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &after) < 0) {
			warn_path("cannot break", argv[i]);
			if (fd >= 0)
				close(fd);
			continue;
		}
		close(fd);
		if (verbose)
			printf("%s: inode %lu -> %lu\n", argv[i],
			       (unsigned long)before.st_ino,
			       (unsigned long)after.st_ino);
	}
	return failed;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "recursive", no_argument, NULL, 'R' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{}
	};
	struct cowlink_args args;
	int c;

	while ((c = getopt_long(argc, argv, "+hV", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("cowlink " COWLINK_VERSION "\n");
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (cowlink_parse(argc - optind, argv + optind, &args) < 0) {
		if (args.error)
			fprintf(stderr, "cowlink: %s\n", args.error);
		usage(stderr);
		return 2;
	}
	recursive = args.recursive;
	verbose = args.verbose;
	json = args.json;
	flag_op = args.flag_op;
	argc = args.argc;
	argv = args.argv;

	switch (args.cmd) {
	case CMD_FLAG:
		return cmd_flag(argc, argv);
	case CMD_CLONE:
		return cmd_clone(argc, argv);
	case CMD_STATUS:
		return cmd_status(argc, argv);
	case CMD_BREAK:
		return cmd_break(argc, argv);
	}
	return 2;
}
