// SPDX-License-Identifier: GPL-2.0
/*
 * cowlink - manage copy-on-write links on a cowlinkfs mount.
 *
 *   cowlink get [-R] [-0] PATH...
 *   cowlink set|clear [-R] PATH...
 *   cowlink set --from=FILE [-0]
 *   cowlink clone [-v] [--progress] SRC DST
 *   cowlink status [--json] PATH...
 *   cowlink break [-v] FILE...
 *
 * Exit status: 0 success, 1 an operation failed, 2 usage error.
 * Every message starts with "cowlink: ", whatever the program was called.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>
#include "libcowlink.h"
#include "cowlink.h"

#ifndef COWLINK_VERSION
#define COWLINK_VERSION "unknown"
#endif

static struct cowlink_args args;
static int failed;

static void warn_path(const char *what, const char *path)
{
	fprintf(stderr, "cowlink: %s '%s': %s\n", what, path, strerror(errno));
	failed = 1;
}

static void *xrealloc(void *p, size_t size)
{
	p = realloc(p, size);
	if (!p) {
		fprintf(stderr, "cowlink: %s\n", strerror(ENOMEM));
		exit(1);
	}
	return p;
}

static char *xstrdup(const char *s)
{
	return strcpy(xrealloc(NULL, strlen(s) + 1), s);
}

/*
 * nftw() reports FTW_NS or FTW_DNR but not why: ask again, with the
 * call that failed, so that the message has the real errno (ENAMETOOLONG,
 * ELOOP, EIO...) rather than a guess.  Reported as du reports them.
 */
static void walk_error(const char *path, int type)
{
	struct stat st;
	int err = errno, fd;

	if (type == FTW_NS) {
		if (lstat(path, &st) < 0)
			err = errno;
		errno = err ? err : EIO;
		warn_path("cannot access", path);
		return;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		err = errno;
	else
		close(fd);
	errno = err ? err : EIO;
	warn_path("cannot read directory", path);
}

/* nftw() itself failed: its root is missing or unreadable, say so. */
static void walk_failed(const char *path)
{
	struct stat st;

	if (lstat(path, &st) == 0)
		warn_path("cannot walk", path);
	else
		warn_path("cannot access", path);
}

/* get / set / clear */

static void flag_one(const char *path)
{
	int v;

	if (args.flag_op == FLAG_GET) {
		v = cowlink_get(path);
		if (v < 0)
			warn_path("cannot read flag of", path);
		else
			cowlink_put_record(stdout, v, path, args.null);
		return;
	}
	if (cowlink_set(path, args.flag_op == FLAG_SET) < 0)
		warn_path("cannot set flag on", path);
}

static int flag_walk(const char *path, const struct stat *st, int type,
		     struct FTW *ftw)
{
	(void)ftw;
	if (type == FTW_NS || type == FTW_DNR) {
		walk_error(path, type);
		return 0;
	}
	/* Like chattr -R: the flag is for files and directories only. */
	if (type == FTW_SL || (type == FTW_F && !S_ISREG(st->st_mode)))
		return 0;
	flag_one(path);
	return 0;
}

/*
 * set --from: replay the records of get, so that a tree restored through
 * the mount (where the flag's xattr is hidden) gets its flags back.
 */
static int cmd_from(void)
{
	const char *name = strcmp(args.from, "-") ? args.from : "standard input";
	int sep = args.null ? '\0' : '\n';
	char *rec = NULL, *path;
	unsigned long lineno = 0;
	size_t size = 0;
	ssize_t len;
	FILE *f;
	int cow;

	f = strcmp(args.from, "-") ? fopen(args.from, "re") : stdin;
	if (!f) {
		warn_path("cannot open", args.from);
		return 1;
	}
	errno = 0;
	while ((len = getdelim(&rec, &size, sep, f)) > 0) {
		lineno++;
		if (rec[len - 1] == sep)
			rec[--len] = '\0';
		if (!len)
			continue;
		/* A NUL inside a newline record is no name of ours. */
		cow = memchr(rec, '\0', len) ? -1 :
		      cowlink_parse_record(rec, args.null, &path);
		if (cow < 0) {
			fprintf(stderr, "cowlink: %s:%lu: not a 'cow PATH' or '--- PATH' record\n",
				name, lineno);
			failed = 1;
			continue;
		}
		if (cowlink_set(path, cow) < 0)
			warn_path("cannot set flag on", path);
		errno = 0;
	}
	/* getdelim() left the read's own errno (EISDIR, EIO, ...). */
	if (ferror(f)) {
		if (!errno)
			errno = EIO;
		warn_path("cannot read", args.from);
	}
	free(rec);
	if (f != stdin)
		fclose(f);
	return failed;
}

static int cmd_flag(int argc, char **argv)
{
	int i;

	if (args.from)
		return cmd_from();
	for (i = 0; i < argc; i++) {
		if (!args.recursive)
			flag_one(argv[i]);
		else if (nftw(argv[i], flag_walk, 64, FTW_PHYS) < 0)
			walk_failed(argv[i]);
	}
	if (fflush(stdout) == EOF) {
		fprintf(stderr, "cowlink: write error: %s\n", strerror(errno));
		failed = 1;
	}
	return failed;
}

/* clone */

static char *clone_src, *clone_dst;
static unsigned long clone_count, clone_total;
static int euid;

/* What is set on a cloned directory after its entries are made. */
struct dir_fix {
	char *src, *dst;
	struct stat st;
};

static struct dir_fix *dir_fixes;
static size_t n_dir_fixes;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double progress_start, progress_last;

static void show_progress(int done)
{
	double t = now(), rate;
	unsigned long left;

	if (!done && t - progress_last < 0.2)
		return;
	progress_last = t;
	rate = t > progress_start ? clone_count / (t - progress_start) : 0;
	fprintf(stderr, "\rcowlink: %lu/%lu entries", clone_count, clone_total);
	if (clone_total)
		fprintf(stderr, " (%lu%%)", clone_count * 100 / clone_total);
	fprintf(stderr, ", %.0f/s", rate);
	if (done) {
		fprintf(stderr, ", %.1f s\033[K\n", t - progress_start);
		return;
	}
	if (rate > 0 && clone_total > clone_count) {
		left = (clone_total - clone_count) / rate + 1;
		fprintf(stderr, ", about %lu:%02lu left", left / 60, left % 60);
	}
	fputs("\033[K", stderr);
}

static int count_walk(const char *path, const struct stat *st, int type,
		      struct FTW *ftw)
{
	(void)path, (void)st, (void)type, (void)ftw;
	clone_total++;
	return 0;
}

/* The ACLs a new inode inherits from a default ACL of its directory. */
static const char *const acl_names[] = {
	"system.posix_acl_access", "system.posix_acl_default",
};

/*
 * Copy the xattrs of SRC to DST as cp -a does: ACLs (system.posix_acl_*)
 * included, and an ACL DST inherited that SRC has not removed.  trusted.*
 * is listed to CAP_SYS_ADMIN alone and the flag's own name never through
 * the mount: what the kernel refuses there is not an error.
 */
static void copy_xattrs(const char *src, const char *dst)
{
	char *names = NULL, *name, *val = NULL;
	ssize_t len = 0, vlen;
	size_t vsize = 0, i;

	for (;;) {
		len = llistxattr(src, NULL, 0);
		if (len <= 0)
			break;
		names = xrealloc(names, len);
		len = llistxattr(src, names, len);
		if (len >= 0 || errno != ERANGE)
			break;
	}
	if (len < 0 && errno != ENOTSUP) {
		warn_path("cannot list xattrs of", src);
		len = 0;
	}
	for (name = names; len > 0 && name < names + len;
	     name += strlen(name) + 1) {
		vlen = lgetxattr(src, name, NULL, 0);
		if (vlen >= 0) {
			if ((size_t)vlen + 1 > vsize)
				val = xrealloc(val, vsize = vlen + 1);
			vlen = lgetxattr(src, name, val, vlen);
		}
		if (vlen < 0) {
			if (errno != ENODATA)
				warn_path("cannot read xattrs of", src);
			continue;
		}
		if (lsetxattr(dst, name, val, vlen, 0) == 0)
			continue;
		if (errno == ENOTSUP ||
		    (errno == EPERM && !strncmp(name, "trusted.", 8)))
			continue;
		fprintf(stderr, "cowlink: cannot set xattr '%s' of '%s': %s\n",
			name, dst, strerror(errno));
		failed = 1;
	}
	for (i = 0; i < ARRAY_SIZE(acl_names); i++) {
		for (name = names; len > 0 && name < names + len;
		     name += strlen(name) + 1)
			if (!strcmp(name, acl_names[i]))
				break;
		if ((len <= 0 || name >= names + len) &&
		    lremovexattr(dst, acl_names[i]) < 0 &&
		    errno != ENODATA && errno != ENOTSUP)
			warn_path("cannot remove inherited ACL of", dst);
	}
	free(names);
	free(val);
}

/*
 * Owner as cp -a sets it: a user who may not give the file away keeps it
 * and tries the group alone, silently, as cp does for non-root.
 */
static int copy_owner(const char *dst, const struct stat *st)
{
	if (lchown(dst, st->st_uid, st->st_gid) == 0)
		return 0;
	if (euid != 0 && (errno == EPERM || errno == EINVAL)) {
		/* Not ours to give away: no error, as for cp -a. */
		int unused = lchown(dst, -1, st->st_gid);

		(void)unused;
		return 0;
	}
	return -1;
}

static int clone_walk(const char *path, const struct stat *st, int type,
		      struct FTW *ftw)
{
	char dst[PATH_MAX], target[PATH_MAX];
	struct timespec times[2] = { st->st_atim, st->st_mtim };
	struct dir_fix *fix;
	ssize_t len;

	clone_count++;
	if (args.progress)
		show_progress(0);
	else if (args.verbose && clone_count % 1000 == 0)
		fprintf(stderr, "cowlink: %lu entries cloned\n", clone_count);
	if (type == FTW_NS || type == FTW_DNR) {
		walk_error(path, type);
		if (type == FTW_NS)
			return 0;
	}
	if (snprintf(dst, sizeof(dst), "%s%s", clone_dst,
		     path + strlen(clone_src)) >= (int)sizeof(dst)) {
		errno = ENAMETOOLONG;
		warn_path("cannot clone", path);
		return S_ISDIR(st->st_mode) ? FTW_SKIP_SUBTREE : FTW_CONTINUE;
	}

	if (S_ISDIR(st->st_mode)) {
		if (mkdir(dst, 0700) < 0) {
			warn_path("cannot create directory", dst);
			/* Never clone into a DST made by someone else meanwhile. */
			return ftw->level ? FTW_SKIP_SUBTREE : FTW_STOP;
		}
		/* Before the entries: link() into it needs the flag. */
		if (cowlink_set(dst, 1) < 0)
			warn_path("cannot set flag on", dst);
		/*
		 * Owner, mode, xattrs and times after the entries: making
		 * them changes the times, and a mode or ACL without write
		 * permission would keep a non-root caller out.
		 */
		dir_fixes = xrealloc(dir_fixes, (n_dir_fixes + 1) *
				     sizeof(*dir_fixes));
		fix = &dir_fixes[n_dir_fixes++];
		fix->src = xstrdup(path);
		fix->dst = xstrdup(dst);
		fix->st = *st;
	} else if (S_ISREG(st->st_mode)) {
		if (cowlink_link(path, dst) < 0)
			warn_path("cannot link", dst);
	} else if (S_ISLNK(st->st_mode)) {
		len = readlink(path, target, sizeof(target) - 1);
		if (len >= 0)
			target[len] = '\0';
		if (len < 0 || symlink(target, dst) < 0) {
			warn_path("cannot copy symlink", dst);
			return 0;
		}
		copy_xattrs(path, dst);
		if (copy_owner(dst, st) < 0 ||
		    utimensat(AT_FDCWD, dst, times, AT_SYMLINK_NOFOLLOW) < 0)
			warn_path("cannot set owner or times of", dst);
	} else {
		if (mknod(dst, st->st_mode, st->st_rdev) < 0) {
			warn_path("cannot create", dst);
			return 0;
		}
		copy_xattrs(path, dst);
		if (copy_owner(dst, st) < 0 ||
		    chmod(dst, st->st_mode & 07777) < 0 ||
		    utimensat(AT_FDCWD, dst, times, 0) < 0)
			warn_path("cannot set owner, mode or times of", dst);
	}
	return 0;
}

/* A copy of PATH without its trailing slashes ("/" stays "/"). */
static char *strip_slashes(const char *path)
{
	char *s = xstrdup(path);
	size_t len = strlen(s);

	while (len > 1 && s[len - 1] == '/')
		s[--len] = '\0';
	return s;
}

/* Is the directory INNER (a real path) OUTER or below it? */
static int path_within(const char *inner, const char *outer)
{
	size_t len = strlen(outer);

	if (!strcmp(outer, "/"))
		return 1;
	return !strncmp(inner, outer, len) &&
	       (inner[len] == '/' || inner[len] == '\0');
}

static int cmd_clone(char **argv)
{
	char *parent, *slash, *rsrc = NULL, *rparent = NULL;
	struct stat ss, ds;
	size_t i;
	int ret = 1;

	euid = geteuid();
	clone_src = strip_slashes(argv[0]);
	clone_dst = strip_slashes(argv[1]);
	parent = xstrdup(clone_dst);
	/* Like cp -a: a symlink SRC is not followed, and is not a tree. */
	if (lstat(clone_src, &ss) < 0) {
		warn_path("cannot clone", clone_src);
		goto out;
	}
	if (!S_ISDIR(ss.st_mode)) {
		errno = ENOTDIR;
		warn_path("cannot clone", clone_src);
		goto out;
	}
	slash = strrchr(parent, '/');
	if (!slash)
		strcpy(parent, ".");
	else if (slash == parent)
		parent[1] = '\0';
	else
		*slash = '\0';
	/* A missing parent is ENOENT, not "not on cowlinkfs". */
	if (cowlink_is_cowlinkfs(clone_src) == 1 &&
	    cowlink_is_cowlinkfs(parent) < 0) {
		warn_path("cannot access", parent);
		goto out;
	}
	if (cowlink_is_cowlinkfs(clone_src) != 1 ||
	    cowlink_is_cowlinkfs(parent) != 1) {
		fprintf(stderr, "cowlink: '%s' and '%s' must both be on a cowlinkfs mount\n",
			clone_src, parent);
		goto out;
	}
	if (stat(parent, &ds) < 0) {
		warn_path("cannot clone into", parent);
		goto out;
	}
	if (ss.st_dev != ds.st_dev) {
		fprintf(stderr, "cowlink: '%s' and '%s' are not on one filesystem\n",
			clone_src, parent);
		goto out;
	}
	/* DST is made new, never merged into: see cowlink(1). */
	if (lstat(clone_dst, &ds) == 0) {
		errno = EEXIST;
		warn_path("cannot create directory", clone_dst);
		goto out;
	}
	rsrc = realpath(clone_src, NULL);
	rparent = realpath(parent, NULL);
	if (rsrc && rparent && path_within(rparent, rsrc)) {
		fprintf(stderr, "cowlink: cannot clone '%s' into itself, '%s'\n",
			clone_src, clone_dst);
		goto out;
	}
	args.progress = args.progress && isatty(STDERR_FILENO);
	if (args.progress) {
		fputs("cowlink: counting entries...", stderr);
		nftw(clone_src, count_walk, 64, FTW_PHYS | FTW_MOUNT);
		progress_start = now();
	}
	if (nftw(clone_src, clone_walk, 64, FTW_PHYS | FTW_MOUNT |
		 FTW_ACTIONRETVAL) < 0)
		walk_failed(clone_src);
	if (args.progress)
		show_progress(1);
	/* Deepest first: a parent made unsearchable keeps no one out. */
	for (i = n_dir_fixes; i-- > 0;) {
		struct dir_fix *fix = &dir_fixes[i];
		struct timespec times[2] = { fix->st.st_atim, fix->st.st_mtim };

		copy_xattrs(fix->src, fix->dst);
		if (copy_owner(fix->dst, &fix->st) < 0 ||
		    chmod(fix->dst, fix->st.st_mode & 07777) < 0)
			warn_path("cannot set owner or mode of", fix->dst);
		if (utimensat(AT_FDCWD, fix->dst, times, 0) < 0)
			warn_path("cannot set times of", fix->dst);
		free(fix->src);
		free(fix->dst);
	}
	free(dir_fixes);
	if (args.verbose)
		fprintf(stderr, "cowlink: %lu entries cloned\n", clone_count);
	ret = failed;
out:
	free(rsrc);
	free(rparent);
	free(parent);
	free(clone_src);
	free(clone_dst);
	return ret;
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

static void status_one(const char *path, const struct stat *st)
{
	struct seen key = { st->st_dev, st->st_ino }, *n;

	if (!S_ISREG(st->st_mode) || st->st_nlink < 2)
		return;
	st_names++;
	if (tfind(&key, &seen_root, seen_cmp))
		return;
	n = xrealloc(NULL, sizeof(*n));
	*n = key;
	if (!tsearch(n, &seen_root, seen_cmp)) {
		fprintf(stderr, "cowlink: %s\n", strerror(ENOMEM));
		exit(1);
	}
	st_files++;
	/* A full copy would store these bytes once per link. */
	st_saved += (unsigned long long)(st->st_nlink - 1) * st->st_blocks * 512;
	if (args.json) {
		printf("%s\n    {\"path\": ", st_first ? "" : ",");
		cowlink_json_string(stdout, path);
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
	if (type == FTW_NS || type == FTW_DNR) {
		walk_error(path, type);
		return 0;
	}
	status_one(path, st);
	return 0;
}

/*
 * A directory operand is walked whole, with or without -r, as du does:
 * the totals of a tree are the point, and zeros for a full tree would
 * be a wrong answer, not a short one.
 */
static int cmd_status(int argc, char **argv)
{
	int i;

	if (args.json)
		printf("{\n  \"shared\": [");
	for (i = 0; i < argc; i++)
		if (nftw(argv[i], status_walk, 64, FTW_PHYS) < 0)
			walk_failed(argv[i]);
	if (args.json)
		printf("%s],\n  \"files_shared\": %lu,\n  \"names\": %lu,\n"
		       "  \"bytes_saved\": %llu\n}\n", st_first ? "" : "\n  ",
		       st_files, st_names, st_saved);
	else
		printf("files shared: %lu, names: %lu, bytes saved: %llu\n",
		       st_files, st_names, st_saved);
	if (fflush(stdout) == EOF) {
		fprintf(stderr, "cowlink: write error: %s\n", strerror(errno));
		failed = 1;
	}
	return failed;
}

/* break */

static void break_error(const char *path, const char *why)
{
	fprintf(stderr, "cowlink: cannot break '%s': %s\n", path, why);
	failed = 1;
}

/*
 * Is a write through PATH copy-on-write: the flag, or a cow=all mount?
 * 1, 0, or -1 with errno.
 */
static int break_is_cow(const char *path)
{
	int cow = cowlink_get(path);

	if (cow != 0)
		return cow;
	return cowlink_mount_cow_all(path);
}

/*
 * Say what happened to each name, never "inode N -> N": cowlinkfs
 * breaks the link of an O_RDWR open at open, and of nothing else here.
 */
static void break_one(const char *path)
{
	struct stat before, after;
	int fd, cow;

	if (lstat(path, &before) < 0) {
		warn_path("cannot break", path);
		return;
	}
	if (!S_ISREG(before.st_mode)) {
		break_error(path, "not a regular file");
		return;
	}
	cow = cowlink_is_cowlinkfs(path);
	if (cow <= 0) {
		if (cow < 0)
			warn_path("cannot break", path);
		else
			break_error(path, "not on a cowlinkfs mount");
		return;
	}
	if (before.st_nlink < 2) {
		fprintf(stderr, "cowlink: '%s': single link, nothing to break\n",
			path);
		return;
	}
	cow = break_is_cow(path);
	if (cow < 0 && errno != ENOENT) {
		warn_path("cannot break", path);
		return;
	}
	if (cow == 0) {
		break_error(path, "not a cow link (COW flag not set)");
		return;
	}
	fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &after) < 0) {
		warn_path("cannot break", path);
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	if (after.st_ino != before.st_ino) {
		if (args.verbose)
			printf("%s: inode %lu -> %lu\n", path,
			       (unsigned long)before.st_ino,
			       (unsigned long)after.st_ino);
	} else if (after.st_nlink < 2) {
		/* Its other names went away since the lstat(). */
		fprintf(stderr, "cowlink: '%s': single link, nothing to break\n",
			path);
	} else {
		/* cow < 0: the mount's mode was unknown, and is "flag". */
		break_error(path, cow < 0 ? "not a cow link (COW flag not set)" :
			    "link not broken");
	}
}

static int cmd_break(int argc, char **argv)
{
	int i;

	for (i = 0; i < argc; i++)
		break_one(argv[i]);
	return failed;
}

int main(int argc, char **argv)
{
	if (cowlink_parse(argc - 1, argv + 1, &args) < 0) {
		fprintf(stderr, "cowlink: %s\n"
			"Try 'cowlink --help' for more information.\n",
			args.error);
		return 2;
	}
	if (args.help) {
		fputs(cowlink_usage(&args), stdout);
		return 0;
	}
	if (args.version) {
		printf("cowlink (cowlinkfs) " COWLINK_VERSION "\n");
		return 0;
	}

	switch (args.cmd) {
	case CMD_FLAG:
		return cmd_flag(args.argc, args.argv);
	case CMD_CLONE:
		return cmd_clone(args.argv);
	case CMD_STATUS:
		return cmd_status(args.argc, args.argv);
	case CMD_BREAK:
		return cmd_break(args.argc, args.argv);
	case CMD_NONE:
		break;
	}
	return 2;
}
