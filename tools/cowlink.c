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
 *   cowlink changes [--json] [-0] PRISTINE CLONE
 *   cowlink discard DIR...
 *
 * Exit status: 0 success, 1 an operation failed, 2 usage error.
 * Every message starts with "cowlink: ", whatever the program was called.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <pthread.h>
#include <search.h>
#include <stdint.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>
#include <linux/openat2.h>
#include <linux/cowlinkfs.h>
#include "libcowlink.h"
#include "cowlink.h"
#include "mountid.h"
#include "walk.h"

#ifndef COWLINK_VERSION
#define COWLINK_VERSION "unknown"
#endif

static struct cowlink_args args;
int failed;

void warn_path(const char *what, const char *path)
{
	fprintf(stderr, "cowlink: %s %s: %s\n", what, quote(path),
		strerror(errno));
	failed = 1;
}

/* realloc(), or exit with a message */
void *xrealloc(void *p, size_t size)
{
	p = realloc(p, size);
	if (!p) {
		fprintf(stderr, "cowlink: %s\n", strerror(ENOMEM));
		exit(1);
	}
	return p;
}

char *xstrdup(const char *s)
{
	return strcpy(xrealloc(NULL, strlen(s) + 1), s);
}

/*
 * Open a regular file the walk met, as the one lstat saw: O_NONBLOCK and
 * O_NOCTTY because another user may have put a FIFO or a device there
 * since, which the inode check then turns away.
 */
static int open_entry(const struct walk_entry *e)
{
	struct stat st;
	int fd;

	fd = openat(e->dirfd, e->name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW |
		    O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		warn_path("cannot open", e->path);
		return -1;
	}
	if (fstat(fd, &st) < 0 || !walk_same(&st, &e->st)) {
		close(fd);
		fprintf(stderr, "cowlink: %s changed during the walk, skipped\n",
			quote(e->path));
		failed = 1;
		return -1;
	}
	return fd;
}

/* The operand being worked on, from 1: what a message is "once per". */
static unsigned int operand;

static void walk_path(const char *path, const struct walk_ops *ops)
{
	operand++;
	if (walk(path, ops))
		failed = 1;
}

/*
 * What is known of each filesystem met, by st_dev: asked once, not for
 * every file of a walk.
 */
struct fsinfo {
	dev_t dev;
	int cowlinkfs;		/* f_type is cowlinkfs's */
	int cow_all_asked;
	int cow_all;		/* mounted cow=all: 1, 0, -1 unknown */
	unsigned int told;	/* the operand last told it is not usable */
	char *mode_unknown;	/* status: the path its cow=all note named */
};

static struct fsinfo *fsinfos;
static size_t n_fsinfos;

static struct fsinfo *fs_find(dev_t dev)
{
	size_t i;

	for (i = 0; i < n_fsinfos; i++)
		if (fsinfos[i].dev == dev)
			return &fsinfos[i];
	return NULL;
}

/* The filesystem of @fd, whose stat is @st: NULL with errno if unknown. */
static struct fsinfo *fs_of(int fd, const struct stat *st)
{
	struct fsinfo *fs = fs_find(st->st_dev);
	struct statfs sfs;

	if (fs)
		return fs;
	if (fstatfs(fd, &sfs) < 0)
		return NULL;
	fsinfos = xrealloc(fsinfos, ++n_fsinfos * sizeof(*fsinfos));
	fs = &fsinfos[n_fsinfos - 1];
	fs->dev = st->st_dev;
	fs->cowlinkfs = sfs.f_type == COWLINKFS_SUPER_MAGIC;
	fs->cow_all_asked = 0;
	fs->told = 0;
	fs->mode_unknown = NULL;
	return fs;
}

/*
 * Is @fs, of the open file @fd, mounted cow=all: 1, 0, or -1 with ENOENT
 * if its mountinfo line cannot be found (/proc of another namespace).
 * Asked once per filesystem, not per file.
 */
static int fs_cow_all(struct fsinfo *fs, int fd)
{
	char proc[64];

	if (!fs->cow_all_asked) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		fs->cow_all = cowlink_mount_cow_all(proc);
		fs->cow_all_asked = 1;
	}
	if (fs->cow_all < 0)
		errno = ENOENT;
	return fs->cow_all;
}

/*
 * Why the flag ioctls fail on @fs (ENOTTY): not cowlinkfs, or a module
 * that does not know them, one older than this cowlink.  Said once per
 * operand, not for every file of a walk: "cowlink: WHAT PATH: why".
 */
static void fs_refuses(struct fsinfo *fs, const char *what, const char *path)
{
	static const char old_module[] =
		"the cowlinkfs module does not know this ioctl (older than cowlink?)";

	failed = 1;
	if (fs->told == operand)
		return;
	fs->told = operand;
	fprintf(stderr, "cowlink: %s %s: %s\n", what, quote(path),
		fs->cowlinkfs ? old_module : "not on a cowlinkfs mount");
}

/*
 * The same, as a note, not an error, for status, du and changes, whose
 * figures hold on any filesystem: "cowlink: SUBCOMMAND of PATH: ...".
 */
static void fs_note(struct fsinfo *fs, const char *path)
{
	if (!fs || fs->cowlinkfs || fs->told == operand)
		return;
	fs->told = operand;
	fprintf(stderr, "cowlink: %s of %s: not on a cowlinkfs mount (no link there is copy-on-write)\n",
		args.name, quote(path));
}

/* fs_note() for an operand of changes, open as @fd, whose stat is @st. */
void note_off_cowlinkfs(int fd, const struct stat *st, const char *path)
{
	operand++;
	fs_note(fs_of(fd, st), path);
}

/*
 * Words for what has no flag, where strerror() would say "Invalid
 * argument" or "Too many levels of symbolic links".
 */
static void type_error(const char *what, const char *path, mode_t mode)
{
	fprintf(stderr, "cowlink: %s %s: %s\n", what, quote(path),
		S_ISLNK(mode) ? "is a symlink (not followed)" :
				"not a regular file or directory");
	failed = 1;
}

/* get / set / clear */

/* What failed, for a message: "cowlink: WHAT 'PATH': why". */
static const char *flag_what(enum cowlink_flag_op op)
{
	static const char *const what[] = {
		[FLAG_GET] = "cannot read flag of",
		[FLAG_SET] = "cannot set flag on",
		[FLAG_CLEAR] = "cannot clear flag of",
	};

	return what[op];
}

/* The flag ioctl of the subcommand on @fd: 0, or -1 with errno. */
static int flag_fd(int fd, const char *path)
{
	int v;

	if (args.flag_op != FLAG_GET)
		return cowlink_fset(fd, args.flag_op == FLAG_SET);
	v = cowlink_fget(fd);
	if (v >= 0)
		cowlink_put_record(stdout, v, path, args.null, args.tty);
	return v < 0 ? -1 : 0;
}

/*
 * The flag of an operand, without -R: opened as the library does (no
 * symlink followed, a device or FIFO refused before its open), but by
 * the CLI, which must know the filesystem for its message.
 */
static void flag_one(const char *path)
{
	struct fsinfo *fs;
	struct stat st, fst;
	int fd;

	operand++;
	if (lstat(path, &st) < 0) {
		warn_path(flag_what(args.flag_op), path);
		return;
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		type_error(flag_what(args.flag_op), path, st.st_mode);
		return;
	}
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY |
		  O_CLOEXEC);
	if (fd < 0) {
		warn_path(flag_what(args.flag_op), path);
		return;
	}
	if (fstat(fd, &fst) < 0 || !walk_same(&fst, &st)) {
		fprintf(stderr, "cowlink: %s changed as it was opened, skipped\n",
			quote(path));
		failed = 1;
	} else if (flag_fd(fd, path) < 0) {
		fs = errno == ENOTTY ? fs_of(fd, &fst) : NULL;
		if (fs)
			fs_refuses(fs, flag_what(args.flag_op), path);
		else
			warn_path(flag_what(args.flag_op), path);
	}
	close(fd);
}

static enum walk_action flag_visit(struct walk_entry *e)
{
	struct fsinfo *fs = fs_find(e->st.st_dev);
	int fd = e->fd;

	/* Like chattr -R: the flag is for files and directories only. */
	if (!S_ISREG(e->st.st_mode) && !S_ISDIR(e->st.st_mode)) {
		if (!e->level)
			type_error(flag_what(args.flag_op), e->path, e->st.st_mode);
		return WALK_CONTINUE;
	}
	/*
	 * On a filesystem already found not to be cowlinkfs: said once, and
	 * nothing opened, but walked into, for a cowlinkfs mounted below.
	 */
	if (fs && !fs->cowlinkfs) {
		fs_refuses(fs, flag_what(args.flag_op), e->path);
		return WALK_CONTINUE;
	}
	if (fd < 0)
		fd = open_entry(e);
	if (fd < 0)
		return WALK_CONTINUE;
	if (flag_fd(fd, e->path) < 0) {
		fs = errno == ENOTTY ? fs_of(fd, &e->st) : NULL;
		if (fs)
			fs_refuses(fs, flag_what(args.flag_op), e->path);
		else
			warn_path(flag_what(args.flag_op), e->path);
	}
	if (fd != e->fd)
		close(fd);
	return WALK_CONTINUE;
}

/*
 * Reach PATH following no symlink, not even as its last component, and
 * open nothing yet: O_PATH, so that a FIFO or device is turned away by
 * its type before any open() of it.  For names root may be given from
 * another user's tree, where a directory swapped for a symlink would
 * send the change elsewhere.  The fd, with its stat in @st, or -1 with
 * errno (ELOOP for a symlink, ENOSYS before Linux 5.6).
 */
static int open_path(const char *path, struct stat *st)
{
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int pfd, err;

	pfd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	if (pfd < 0)
		return -1;
	if (fstat(pfd, st) < 0 || S_ISLNK(st->st_mode)) {
		err = S_ISLNK(st->st_mode) ? ELOOP : errno;
		close(pfd);
		errno = err;
		return -1;
	}
	return pfd;
}

/* Open what the O_PATH fd @pfd names, that inode and no other. */
static int reopen(int pfd, int flags)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	return open(proc, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
}

/* The error of open_path() in words. */
static void open_path_error(const char *what, const char *path)
{
	if (errno == ELOOP) {
		fprintf(stderr, "cowlink: %s %s: a symlink on its path (set --from follows none)\n",
			what, quote(path));
		failed = 1;
	} else if (errno == ENOSYS) {
		fprintf(stderr, "cowlink: %s %s: needs openat2() (Linux 5.6 or later)\n",
			what, quote(path));
		failed = 1;
	} else {
		warn_path(what, path);
	}
}

/*
 * The names set --from replays may come from anyone's tree, and may be
 * replayed by root: follow no symlink on the way to them, so that a
 * directory swapped for a symlink cannot send a flag outside the tree.
 */
static void from_set(const char *path, int cow)
{
	const char *what = flag_what(cow ? FLAG_SET : FLAG_CLEAR);
	struct fsinfo *fs;
	struct stat st;
	int pfd, fd = -1;

	pfd = open_path(path, &st);
	if (pfd < 0) {
		open_path_error(what, path);
		return;
	}
	fs = fs_find(st.st_dev);
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		type_error(what, path, st.st_mode);
	} else if (fs && !fs->cowlinkfs) {
		fs_refuses(fs, what, path);
	} else {
		fd = reopen(pfd, O_RDONLY);
		if (fd >= 0 && cowlink_fset(fd, cow) == 0)
			goto out;
		fs = fd >= 0 && errno == ENOTTY ? fs_of(fd, &st) : NULL;
		if (fs)
			fs_refuses(fs, what, path);
		else
			warn_path(what, path);
	}
out:
	if (fd >= 0)
		close(fd);
	close(pfd);
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

	/* FILE is the one operand: one message per filesystem in all. */
	operand = 1;
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
				quote_name(name), lineno);
			failed = 1;
			continue;
		}
		from_set(path, cow);
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
	static const struct walk_ops flag_ops = { .pre = flag_visit };
	int i;

	if (args.from)
		return cmd_from();
	for (i = 0; i < argc; i++) {
		if (!args.recursive)
			flag_one(argv[i]);
		else
			walk_path(argv[i], &flag_ops);
	}
	return failed;
}

/* clone */

static const char *clone_src, *clone_dst;
static unsigned long clone_count, clone_total;
static int euid;
static int dst_parent_fd = -1;	/* where DST is made */
static const char *dst_base;	/* DST's name in it */
static struct stat dst_top;	/* DST once made, never to be walked */
static int dst_made;
static gid_t dst_gid;		/* the group mkdir() gives in DST */
static int acl_inherit;		/* may a new name in DST inherit an ACL */
static int clone_fast;		/* a regular file at one link() */

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
		fprintf(stderr, " (%llu%%)",
			clone_count * 100ULL / clone_total);
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

static enum walk_action count_visit(struct walk_entry *e)
{
	clone_total++;
	return S_ISDIR(e->st.st_mode) && walk_mount_point(e) ?
	       WALK_SKIP : WALK_CONTINUE;
}

/* The path in DST of what the walk met at E, for messages. */
static const char *dst_path(const struct walk_entry *e)
{
	static char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s%s", clone_dst,
		 e->path + strlen(clone_src));
	return buf;
}

/*
 * Where xattrs are read or written: an open file, or else a name in an
 * open directory, reached as /proc/self/fd/DIRFD/NAME and not followed
 * (symlinks and device nodes, which are not opened).
 */
struct xfile {
	int fd;
	char proc[64 + NAME_MAX];
	const char *shown;	/* the path for messages */
};

static void xfile_init(struct xfile *x, int fd, int dirfd, const char *name,
		       const char *shown)
{
	x->fd = fd;
	x->shown = shown;
	if (fd < 0)
		snprintf(x->proc, sizeof(x->proc), "/proc/self/fd/%d/%s",
			 dirfd, name);
}

static ssize_t x_list(const struct xfile *x, char *buf, size_t size)
{
	return x->fd >= 0 ? flistxattr(x->fd, buf, size) :
			    llistxattr(x->proc, buf, size);
}

static ssize_t x_get(const struct xfile *x, const char *name, void *buf,
		     size_t size)
{
	return x->fd >= 0 ? fgetxattr(x->fd, name, buf, size) :
			    lgetxattr(x->proc, name, buf, size);
}

static int x_set(const struct xfile *x, const char *name, const void *val,
		 size_t size)
{
	return x->fd >= 0 ? fsetxattr(x->fd, name, val, size, 0) :
			    lsetxattr(x->proc, name, val, size, 0);
}

static int x_remove(const struct xfile *x, const char *name)
{
	return x->fd >= 0 ? fremovexattr(x->fd, name) :
			    lremovexattr(x->proc, name);
}

/* The ACLs a new inode inherits from a default ACL of its directory. */
static const char *const acl_names[] = {
	"system.posix_acl_access", "system.posix_acl_default",
};

/*
 * Copy the xattrs of SRC to DST as cp -a does: ACLs (system.posix_acl_*)
 * included, and an ACL DST inherited that SRC has not removed (looked
 * for only if DST's parent has a default ACL: below it, each directory
 * gets its own ACLs after its entries are made).  trusted.*
 * is listed to CAP_SYS_ADMIN alone and the flag's own name never through
 * the mount: what the kernel refuses there is not an error.
 */
static void copy_xattrs(const struct xfile *src, const struct xfile *dst)
{
	char *names = NULL, *name, *val = NULL;
	ssize_t len = 0, vlen;
	size_t vsize = 0, i;

	for (;;) {
		len = x_list(src, NULL, 0);
		if (len <= 0)
			break;
		names = xrealloc(names, len);
		len = x_list(src, names, len);
		if (len >= 0 || errno != ERANGE)
			break;
	}
	if (len < 0 && errno != ENOTSUP) {
		warn_path("cannot list xattrs of", src->shown);
		len = 0;
	}
	for (name = names; len > 0 && name < names + len;
	     name += strlen(name) + 1) {
		vlen = x_get(src, name, NULL, 0);
		if (vlen >= 0) {
			if ((size_t)vlen + 1 > vsize)
				val = xrealloc(val, vsize = vlen + 1);
			vlen = x_get(src, name, val, vlen);
		}
		if (vlen < 0) {
			if (errno != ENODATA)
				warn_path("cannot read xattrs of", src->shown);
			continue;
		}
		if (x_set(dst, name, val, vlen) == 0)
			continue;
		if (errno == ENOTSUP ||
		    (errno == EPERM && !strncmp(name, "trusted.", 8)))
			continue;
		fprintf(stderr, "cowlink: cannot set xattr %s of %s: %s\n",
			quote_n(0, name), quote_n(1, dst->shown), strerror(errno));
		failed = 1;
	}
	for (i = 0; acl_inherit && i < ARRAY_SIZE(acl_names); i++) {
		for (name = names; len > 0 && name < names + len;
		     name += strlen(name) + 1)
			if (!strcmp(name, acl_names[i]))
				break;
		if ((len <= 0 || name >= names + len) &&
		    x_remove(dst, acl_names[i]) < 0 &&
		    errno != ENODATA && errno != ENOTSUP)
			warn_path("cannot remove inherited ACL of", dst->shown);
	}
	free(names);
	free(val);
}

/*
 * Owner as cp -a sets it: a user who may not give the file away keeps it
 * and tries the group alone, silently, as cp does for non-root.  NAME in
 * DIRFD, not followed, or DIRFD itself for an empty NAME.
 */
static int copy_owner(int dirfd, const char *name, const struct stat *st)
{
	int flags = *name ? AT_SYMLINK_NOFOLLOW : AT_EMPTY_PATH;

	if (fchownat(dirfd, name, st->st_uid, st->st_gid, flags) == 0)
		return 0;
	if (euid != 0 && (errno == EPERM || errno == EINVAL)) {
		/* Not ours to give away: no error, as for cp -a. */
		int unused = fchownat(dirfd, name, -1, st->st_gid, flags);

		(void)unused;
		return 0;
	}
	return -1;
}

/*
 * The files of the clone that link() refused with EMLINK: at the lower
 * filesystem's limit of links per file (65,000 on ext4), where every
 * other file of a tree cloned as often is too.  Said once for the clone,
 * at its end, with the first and a count, not once per file.
 */
static unsigned long emlink_count;
static char *emlink_first;

static void clone_emlink(const struct walk_entry *e)
{
	failed = 1;
	if (!emlink_count++)
		emlink_first = xstrdup(dst_path(e));
}

static void clone_emlink_report(void)
{
	if (!emlink_count)
		return;
	fprintf(stderr, "cowlink: cannot link %s", quote(emlink_first));
	if (emlink_count > 1)
		fprintf(stderr, " and %lu other files", emlink_count - 1);
	fprintf(stderr, ": %s\n", strerror(EMLINK));
	free(emlink_first);
}

/*
 * A regular file: flag it and link it, both by its directory's fd, and
 * check that the link made is the inode flagged.  If another user swapped
 * the name in between, the link is taken back.
 */
static void clone_file(struct walk_entry *e, int pfd, const char *name)
{
	struct stat st;
	int fd = open_entry(e);

	if (fd < 0)
		return;
	if (cowlink_fget(fd) != 1 && cowlink_fset(fd, 1) < 0) {
		warn_path(flag_what(FLAG_SET), e->path);
	} else if (linkat(e->dirfd, e->name, pfd, name, 0) < 0) {
		if (errno == EMLINK)
			clone_emlink(e);
		else
			warn_path("cannot link", dst_path(e));
	} else if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		   !walk_same(&st, &e->st)) {
		unlinkat(pfd, name, 0);
		fprintf(stderr, "cowlink: %s changed during the walk, skipped\n",
			quote(e->path));
		failed = 1;
	}
	close(fd);
}

/* Symlinks and special files are made anew, with what cp -a keeps. */
static void clone_other(struct walk_entry *e, int pfd, const char *name)
{
	struct timespec times[2] = { e->st.st_atim, e->st.st_mtim };
	char target[PATH_MAX];
	struct xfile xs, xd;
	ssize_t len = 0;
	int err;

	if (S_ISLNK(e->st.st_mode)) {
		len = readlinkat(e->dirfd, e->name, target, sizeof(target) - 1);
		if (len >= 0)
			target[len] = '\0';
		err = len < 0 ? -1 : symlinkat(target, pfd, name);
	} else {
		err = mknodat(pfd, name, e->st.st_mode, e->st.st_rdev);
	}
	if (err < 0) {
		warn_path("cannot create", dst_path(e));
		return;
	}
	xfile_init(&xs, -1, e->dirfd, e->name, e->path);
	xfile_init(&xd, -1, pfd, name, dst_path(e));
	if (copy_owner(pfd, name, &e->st) < 0)
		warn_path("cannot set owner of", dst_path(e));
	copy_xattrs(&xs, &xd);
	if ((!S_ISLNK(e->st.st_mode) &&
	     fchmodat(pfd, name, e->st.st_mode & 07777,
		      AT_SYMLINK_NOFOLLOW) < 0) ||
	    utimensat(pfd, name, times, AT_SYMLINK_NOFOLLOW) < 0)
		warn_path("cannot set mode or times of", dst_path(e));
}

/*
 * Owner, xattrs, mode and times of a cloned directory, once its entries
 * are made: making them changes the times, and a mode or ACL without
 * write permission would keep a non-root caller out.  Owner first, as
 * cp does, since a chown may clear the set-id bits the mode then puts
 * back.  Closes the directory's fd in DST.
 *
 * Below the top the clone is an O_PATH fd, set by its name in its parent
 * (DST is 0700 and ours until its own turn, the last: no one else can
 * reach a name in it); the top, in a parent others may write, by an fd
 * of the directory made.  The owner mkdir() gave is not given again, and
 * an ACL is looked for in the clone only if one can have been inherited.
 */
static void clone_dir_fix(struct walk_entry *e)
{
	struct timespec times[2] = { e->st.st_atim, e->st.st_mtim };
	const char *shown = dst_path(e);
	int pfd = e->level ? e->parent->data : -1;
	struct xfile xs, xd;
	int xfd = e->data;

	if ((e->st.st_uid != (uid_t)euid || e->st.st_gid != dst_gid) &&
	    copy_owner(e->data, "", &e->st) < 0)
		warn_path("cannot set owner of", shown);
	/* An O_PATH fd has no xattrs: the directory opened, if need be. */
	if (e->level && (acl_inherit || flistxattr(e->fd, NULL, 0) != 0))
		xfd = openat(e->data, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (xfd < 0) {
		warn_path("cannot open directory", shown);
	} else if (xfd != e->data || !e->level) {
		xfile_init(&xs, e->fd, -1, "", e->path);
		xfile_init(&xd, xfd, -1, "", shown);
		copy_xattrs(&xs, &xd);
		if (xfd != e->data)
			close(xfd);
	}
	if (e->level ? fchmodat(pfd, e->name, e->st.st_mode & 07777, 0) < 0 :
		       fchmod(e->data, e->st.st_mode & 07777) < 0)
		warn_path("cannot set mode of", shown);
	if (e->level ? utimensat(pfd, e->name, times, AT_SYMLINK_NOFOLLOW) < 0 :
		       futimens(e->data, times) < 0)
		warn_path("cannot set times of", shown);
	close(e->data);
	e->data = -1;
}

/*
 * Make the clone of the directory @e, whose stat is known, in @pfd as
 * @name, and open it as e->data.  WALK_CONTINUE to clone its entries,
 * WALK_SKIP to leave it empty, WALK_STOP to end the clone.
 */
static enum walk_action clone_mkdir(struct walk_entry *e, int pfd,
				    const char *name, int mnt_root)
{
	struct stat pst;
	int fd;

	if (!e->level && (fstat(pfd, &pst) < 0 ||
			  pst.st_dev != e->st.st_dev)) {
		fprintf(stderr, "cowlink: %s and %s are not on one filesystem\n",
			quote_n(0, clone_src), quote_n(1, clone_dst));
		failed = 1;
		return WALK_STOP;
	}
	/* DST inside SRC, seen however it was reached (a bind mount, say). */
	if (dst_made && walk_same(&e->st, &dst_top)) {
		fprintf(stderr, "cowlink: cannot clone %s into itself, %s\n",
			quote_n(0, clone_src), quote_n(1, clone_dst));
		failed = 1;
		return WALK_STOP;
	}
	if (mkdirat(pfd, name, 0700) < 0) {
		warn_path("cannot create directory", dst_path(e));
		/* Never clone into a DST made by someone else meanwhile. */
		return e->level ? WALK_SKIP : WALK_STOP;
	}
	fd = openat(pfd, name, (e->level ? O_PATH : O_RDONLY) | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		warn_path("cannot open directory", dst_path(e));
		return e->level ? WALK_SKIP : WALK_STOP;
	}
	e->data = fd;
	/*
	 * DST's parent may be writable by others, who could have put their
	 * own directory in the place of the one just made: clone only into
	 * ours, still closed to them.  The flag goes on it before the
	 * entries, as link() into it needs it; every directory made below
	 * inherits it from there.
	 */
	if (!e->level) {
		dst_made = fstat(fd, &dst_top) == 0;
		if (!dst_made || dst_top.st_uid != (uid_t)euid ||
		    (dst_top.st_mode & 077)) {
			fprintf(stderr, "cowlink: %s was replaced as it was made, not cloned into\n",
				quote(clone_dst));
			failed = 1;
			close(fd);
			e->data = -1;
			return WALK_STOP;
		}
		dst_gid = dst_top.st_gid;
		if (cowlink_fset(fd, 1) < 0)
			warn_path(flag_what(FLAG_SET), dst_path(e));
	}
	/* Links cannot leave SRC's mount: cp -x makes the directory. */
	if (mnt_root) {
		fprintf(stderr, "cowlink: %s is a mount point, its entries are not cloned\n",
			quote(e->path));
		failed = 1;
		clone_dir_fix(e);
		return WALK_SKIP;
	}
	return WALK_CONTINUE;
}

/*
 * May regular files be cloned at one link() each (clone_link()): on a
 * cow=flag mount, the only one whose link() checks the flag.  Asked once,
 * of the top directory @e.
 */
static int clone_fast_link(const struct walk_entry *e)
{
	struct fsinfo *fs = fs_of(e->fd, &e->st);

	return fs && fs->cowlinkfs && fs_cow_all(fs, e->fd) == 0;
}

/*
 * The path of what the clone is at, for messages: one buffer, which each
 * level extends by a name and cuts back to its own length.
 */
static char *cpath;
static size_t cpath_size;

static size_t cpath_push(size_t len, const char *name)
{
	size_t nlen = strlen(name);

	if (len + nlen + 2 > cpath_size) {
		cpath_size = (len + nlen + 2) * 2;
		cpath = xrealloc(cpath, cpath_size);
	}
	if (len && cpath[len - 1] != '/')
		cpath[len++] = '/';
	memcpy(cpath + len, name, nlen + 1);
	return len + nlen;
}

/* A getdents64() buffer for each level, kept for the next directory. */
static char **cbufs;
static int n_cbufs;
#define CLONE_BUF 32768

/*
 * Set when the clone must end (WALK_STOP): from then on no directory is
 * made and no link, not even one already queued or one that failed and
 * would be made the careful way.  Written by the walk's thread under
 * link_lock, which the workers read it under.
 */
static int clone_stopped;

/*
 * The links of a directory's regular files, made by worker threads while
 * the walk goes on: each link() looks up its source name before it takes
 * the lock of the directory it links into, and that lookup, a read of
 * the inode from disk and a cowlinkfs inode for it, is most of its cost.
 * Two workers overlap those lookups, and the walk's own system calls.
 * The workers call linkat() and nothing else: what fails is handed back
 * to the walk, which says why or takes the careful way, in order, once
 * every link of the directory is made and before its times are set
 * (a link changes the directory's mtime).
 */
struct link_dir {
	int sfd, dfd;		/* the source directory, its clone */
	unsigned int pending;	/* links queued, not made yet */
	struct link_fail *fails;
};

struct link_fail {
	struct link_fail *next;
	int err;
	char name[];
};

struct link_job {
	struct link_dir *dir;
	char name[NAME_MAX + 1];
};

#define LINK_QUEUE 256
#define LINK_WORKERS 2

static struct link_job link_queue[LINK_QUEUE];
static unsigned int link_head, link_tail;	/* taken, added: mod 2^32 */
static int link_quit, n_link_workers;
static pthread_t link_workers[LINK_WORKERS];
static pthread_mutex_t link_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t link_work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t link_room = PTHREAD_COND_INITIALIZER;
static pthread_cond_t link_done = PTHREAD_COND_INITIALIZER;

static void *link_worker(void *unused)
{
	struct link_fail *f;
	struct link_job job;
	int err, stopped;

	(void)unused;
	pthread_mutex_lock(&link_lock);
	for (;;) {
		while (link_head == link_tail && !link_quit)
			pthread_cond_wait(&link_work, &link_lock);
		if (link_head == link_tail)
			break;
		job = link_queue[link_head++ % LINK_QUEUE];
		pthread_cond_signal(&link_room);
		stopped = clone_stopped;
		pthread_mutex_unlock(&link_lock);
		err = !stopped && linkat(job.dir->sfd, job.name, job.dir->dfd,
					 job.name, 0) ? errno : 0;
		f = NULL;
		if (err) {
			/* No message here: the walk's thread says why. */
			f = xrealloc(NULL, sizeof(*f) + strlen(job.name) + 1);
			f->err = err;
			strcpy(f->name, job.name);
		}
		pthread_mutex_lock(&link_lock);
		if (f) {
			f->next = job.dir->fails;
			job.dir->fails = f;
		}
		if (!--job.dir->pending)
			pthread_cond_broadcast(&link_done);
	}
	pthread_mutex_unlock(&link_lock);
	return NULL;
}

/*
 * Workers, on a machine of more than one CPU, where they can run beside
 * the walk: none otherwise, and each link is made where it is met.
 */
static void link_start(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	while (cpus > 1 && n_link_workers < LINK_WORKERS &&
	       !pthread_create(&link_workers[n_link_workers], NULL,
			       link_worker, NULL))
		n_link_workers++;
}

/* End the clone: see clone_stopped. */
static void clone_stop(void)
{
	pthread_mutex_lock(&link_lock);
	clone_stopped = 1;
	pthread_mutex_unlock(&link_lock);
}

static void link_stop(void)
{
	int i;

	pthread_mutex_lock(&link_lock);
	link_quit = 1;
	pthread_cond_broadcast(&link_work);
	pthread_mutex_unlock(&link_lock);
	for (i = 0; i < n_link_workers; i++)
		pthread_join(link_workers[i], NULL);
}

/* Queue the link of @name in @d: 0, or -1 to make it here and now. */
static int link_queue_add(struct link_dir *d, const char *name)
{
	if (!n_link_workers || strlen(name) > NAME_MAX)
		return -1;
	pthread_mutex_lock(&link_lock);
	while (link_tail - link_head == LINK_QUEUE)
		pthread_cond_wait(&link_room, &link_lock);
	link_queue[link_tail % LINK_QUEUE].dir = d;
	strcpy(link_queue[link_tail++ % LINK_QUEUE].name, name);
	d->pending++;
	pthread_cond_signal(&link_work);
	pthread_mutex_unlock(&link_lock);
	return 0;
}

static void clone_entry(struct walk_entry *e, unsigned char type);
static void clone_by_stat(struct walk_entry *e, int dir_ok);
static void clone_counted(void);

/*
 * Once every queued link of @ld is made, what failed, in the order it was
 * queued: said, or cloned the careful way (see clone_link()).
 */
static void link_wait(struct link_dir *ld, struct walk_entry *child,
		      size_t len)
{
	struct link_fail *f, *rev = NULL, *next;

	pthread_mutex_lock(&link_lock);
	while (ld->pending)
		pthread_cond_wait(&link_done, &link_lock);
	pthread_mutex_unlock(&link_lock);
	for (f = ld->fails; f; f = next) {
		next = f->next;
		f->next = rev;
		rev = f;
	}
	for (f = rev; f; f = next) {
		next = f->next;
		if (clone_stopped) {
			free(f);
			continue;
		}
		cpath_push(len, f->name);
		child->name = f->name;
		child->path = cpath;
		child->fd = -1;
		child->data = -1;
		if (f->err == EMLINK || f->err == EPERM || f->err == ENOENT) {
			clone_by_stat(child, 1);
		} else {
			errno = f->err;
			warn_path("cannot link", dst_path(child));
		}
		cpath[len] = '\0';
		free(f);
	}
	ld->fails = NULL;
}

/* Clone the entries of the directory @e, open as e->fd, into e->data. */
static void clone_entries(struct walk_entry *e)
{
	struct walk_entry child = { .parent = e, .dirfd = e->fd,
				    .level = e->level + 1 };
	struct link_dir ld = { .sfd = e->fd, .dfd = e->data };
	size_t len = strlen(e->path);
	struct linux_dirent64 *d;
	char *buf;
	long n, off;

	if (e->level >= n_cbufs) {
		cbufs = xrealloc(cbufs, (e->level + 1) * sizeof(*cbufs));
		while (n_cbufs <= e->level)
			cbufs[n_cbufs++] = xrealloc(NULL, CLONE_BUF);
	}
	buf = cbufs[e->level];
	while (!clone_stopped) {
		n = syscall(SYS_getdents64, e->fd, buf, CLONE_BUF);
		if (n < 0) {
			warn_path("cannot read directory", e->path);
			break;
		}
		if (!n)
			break;
		for (off = 0; off < n && !clone_stopped; off += d->d_reclen) {
			d = (struct linux_dirent64 *)(buf + off);
			if (walk_dot(d->d_name))
				continue;
			clone_counted();
			if (d->d_type == DT_REG && clone_fast &&
			    !link_queue_add(&ld, d->d_name))
				continue;
			cpath_push(len, d->d_name);
			child.name = d->d_name;
			child.path = cpath;
			clone_entry(&child, d->d_type);
			/* Names below grew the buffer, which may have moved. */
			cpath[len] = '\0';
			e->path = cpath;
		}
	}
	link_wait(&ld, &child, len);
	e->path = cpath;
}

/*
 * Clone the directory @e names, open it first and stat what was opened,
 * so that no check stands between a stat and an open: O_NOFOLLOW turns a
 * symlink swapped in away (ELOOP), O_DIRECTORY a file (ENOTDIR); either
 * is then cloned as what it has become.  statx() says whether it is a
 * mount point, of a bind mount of the same filesystem too.
 */
static void clone_subdir(struct walk_entry *e)
{
	const char *name = e->level ? e->name : dst_base;
	int pfd = e->level ? e->parent->data : dst_parent_fd;
	enum walk_action act;
	struct statx stx;
	int mnt_root;

	if (clone_stopped)
		return;
	e->fd = openat(e->dirfd, e->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		       O_NOCTTY | O_CLOEXEC);
	if (e->fd < 0) {
		if (e->level && (errno == ENOTDIR || errno == ELOOP))
			clone_by_stat(e, 0);
		else
			warn_path("cannot read directory", e->path);
		return;
	}
	if (statx(e->fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW,
		  STATX_BASIC_STATS, &stx) < 0) {
		warn_path("cannot access", e->path);
		goto out;
	}
	memset(&e->st, 0, sizeof(e->st));
	e->st.st_dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	e->st.st_ino = stx.stx_ino;
	e->st.st_mode = stx.stx_mode;
	e->st.st_nlink = stx.stx_nlink;
	e->st.st_uid = stx.stx_uid;
	e->st.st_gid = stx.stx_gid;
	e->st.st_atim.tv_sec = stx.stx_atime.tv_sec;
	e->st.st_atim.tv_nsec = stx.stx_atime.tv_nsec;
	e->st.st_mtim.tv_sec = stx.stx_mtime.tv_sec;
	e->st.st_mtim.tv_nsec = stx.stx_mtime.tv_nsec;
	/* Before Linux 5.8 st_dev alone tells. */
	mnt_root = e->level && (e->st.st_dev != e->parent->st.st_dev ||
				(stx.stx_attributes & STATX_ATTR_MOUNT_ROOT));
	if (!e->level && (clone_fast = clone_fast_link(e)))
		link_start();
	act = clone_mkdir(e, pfd, name, mnt_root);
	if (act == WALK_STOP)
		clone_stop();
	if (act == WALK_CONTINUE) {
		clone_entries(e);
		clone_dir_fix(e);
	}
out:
	close(e->fd);
	e->fd = -1;
}

/*
 * A regular file, at one system call: link() it into the clone of its
 * directory, which has the flag.  On a cow=flag mount cowlinkfs links
 * only a flagged file there (EMLINK otherwise), so the kernel checks
 * what the walk would: what is linked is a flagged file of that
 * directory of SRC, whatever name another user swaps in meanwhile.  A
 * symlink swapped in is linked as it is, as cp -rl would.  0 if it is
 * done (or failed, said), -1 if the careful way must do it: no flag yet
 * (EMLINK), a cow=all mount (where link() checks no flag, and cowlink
 * must set it), or no longer a regular file.
 */
static int clone_link(struct walk_entry *e)
{
	if (!clone_fast)
		return -1;
	if (linkat(e->dirfd, e->name, e->parent->data, e->name, 0) == 0)
		return 0;
	if (errno == EMLINK || errno == EPERM || errno == ENOENT)
		return -1;
	warn_path("cannot link", dst_path(e));
	return 0;
}

/*
 * What -v reports, on stdout as cp -v reports: a report of what was
 * done, not a message (those, and --progress's meter, go to stderr).
 * Entries that failed were counted too, and the line says so.
 */
static void clone_report(void)
{
	printf("%lu entries cloned%s\n", clone_count,
	       failed ? " or failed" : "");
}

/* One more entry: what -v and --progress count. */
static void clone_counted(void)
{
	clone_count++;
	if (args.verbose && clone_count % 1000 == 0) {
		/* The meter's line first, where both share one terminal. */
		if (args.progress && isatty(STDOUT_FILENO)) {
			fputs("\r\033[K", stderr);
			progress_last = 0;
		}
		clone_report();
	}
	if (args.progress)
		show_progress(0);
}

/*
 * Clone @e by its lstat, where its d_type said nothing (DT_UNKNOWN) or
 * the way it said failed: a directory only if @dir_ok, which it is not
 * when the directory's open was turned back.
 */
static void clone_by_stat(struct walk_entry *e, int dir_ok)
{
	if (clone_stopped)
		return;
	if (fstatat(e->dirfd, e->name, &e->st, AT_SYMLINK_NOFOLLOW) < 0) {
		warn_path("cannot access", e->path);
	} else if (S_ISDIR(e->st.st_mode)) {
		if (dir_ok) {
			clone_subdir(e);
			return;
		}
		fprintf(stderr, "cowlink: %s changed during the walk, not entered\n",
			quote(e->path));
		failed = 1;
	} else if (S_ISREG(e->st.st_mode)) {
		clone_file(e, e->parent->data, e->name);
	} else {
		clone_other(e, e->parent->data, e->name);
	}
}

/*
 * Clone the entry @e of a directory by its d_type @type: a directory and
 * a regular file by what that says, anything else by its lstat.
 */
static void clone_entry(struct walk_entry *e, unsigned char type)
{
	e->fd = -1;
	e->data = -1;
	if (clone_stopped)
		return;
	if (type == DT_DIR)
		clone_subdir(e);
	else if (type != DT_REG || clone_link(e) < 0)
		clone_by_stat(e, 1);
}

/* A copy of PATH without its trailing slashes ("/" stays "/"). */
char *strip_slashes(const char *path)
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

/*
 * The checks that need no walk, each with its own message; the walk
 * checks again what another user could change meanwhile.
 */
static int clone_check(const char *src, const char *dst, const char *parent)
{
	unsigned long long sm, dm;
	char *rsrc, *rparent;
	struct stat ss, ds;
	int ret = -1;

	/* Like cp -a: a symlink SRC is not followed, and is not a tree. */
	if (lstat(src, &ss) < 0) {
		warn_path("cannot clone", src);
		return -1;
	}
	if (!S_ISDIR(ss.st_mode)) {
		errno = ENOTDIR;
		warn_path("cannot clone", src);
		return -1;
	}
	/* The words every subcommand has for it; a missing parent is ENOENT. */
	if (cowlink_is_cowlinkfs(src) != 1) {
		fprintf(stderr, "cowlink: cannot clone %s: not on a cowlinkfs mount\n",
			quote(src));
		return -1;
	}
	switch (cowlink_is_cowlinkfs(parent)) {
	case -1:
		warn_path("cannot access", parent);
		return -1;
	case 0:
		fprintf(stderr, "cowlink: cannot clone into %s: not on a cowlinkfs mount\n",
			quote(dst));
		return -1;
	}
	if (stat(parent, &ds) < 0) {
		warn_path("cannot clone into", parent);
		return -1;
	}
	if (ss.st_dev != ds.st_dev) {
		fprintf(stderr, "cowlink: %s and %s are not on one filesystem\n",
			quote_n(0, src), quote_n(1, parent));
		return -1;
	}
	/* link() needs one mount: say so once, not EXDEV for every file. */
	if (mount_id(src, &sm) == 0 && mount_id(parent, &dm) == 0 && sm != dm) {
		fprintf(stderr, "cowlink: %s and %s are not on one mount (a bind mount?)\n",
			quote_n(0, src), quote_n(1, parent));
		return -1;
	}
	/* DST is made new, never merged into: see cowlink(1). */
	if (lstat(dst, &ds) == 0) {
		errno = EEXIST;
		warn_path("cannot create directory", dst);
		return -1;
	}
	rsrc = realpath(src, NULL);
	rparent = realpath(parent, NULL);
	if (rsrc && rparent && path_within(rparent, rsrc))
		fprintf(stderr, "cowlink: cannot clone %s into itself, %s\n",
			quote_n(0, src), quote_n(1, dst));
	else
		ret = 0;
	free(rsrc);
	free(rparent);
	return ret;
}

/*
 * The clone walks SRC by its own loop, not walk(): getdents64() and the
 * d_type of each entry, a regular file at one link() (clone_link()), a
 * directory opened and then stat'ed, so that a tree costs about the
 * system calls cp -rl makes, fewer per file.
 */
static int cmd_clone(char **argv)
{
	static const struct walk_ops count_ops = { .pre = count_visit };
	struct walk_entry top = { .dirfd = AT_FDCWD, .fd = -1, .data = -1 };
	char *src, *dst, *parent, *slash;

	euid = geteuid();
	clone_src = src = strip_slashes(argv[0]);
	clone_dst = dst = strip_slashes(argv[1]);
	parent = xstrdup(dst);
	slash = strrchr(parent, '/');
	dst_base = slash ? dst + (slash - parent) + 1 : dst;
	if (!slash)
		strcpy(parent, ".");
	else if (slash == parent)
		parent[1] = '\0';
	else
		*slash = '\0';
	if (clone_check(src, dst, parent) < 0) {
		failed = 1;
		goto out;
	}
	dst_parent_fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dst_parent_fd < 0) {
		warn_path("cannot clone into", parent);
		goto out;
	}
	acl_inherit = fgetxattr(dst_parent_fd, acl_names[1], NULL, 0) >= 0 ||
		      (errno != ENODATA && errno != ENOTSUP);
	args.progress = args.progress && isatty(STDERR_FILENO);
	if (args.progress) {
		fputs("cowlink: counting entries...", stderr);
		walk(src, &count_ops);
		progress_start = now();
	}
	walk_raise_nofile();
	cpath_push(0, src);
	top.name = src;
	top.path = cpath;
	clone_counted();
	clone_subdir(&top);
	link_stop();
	if (args.progress)
		show_progress(1);
	clone_emlink_report();
	if (args.verbose)
		clone_report();
	close(dst_parent_fd);
out:
	free(parent);
	free(src);
	free(dst);
	return failed;
}

/* status */

struct seen {
	dev_t dev;
	ino_t ino;
	int cow;	/* status: 1, 0, or -1 if it could not be read */
};

/* Names and files of shared inodes, COW or not, met by status. */
struct shared_count {
	unsigned long files, names;
};

static void *seen_root;
static struct shared_count st_cow, st_plain;
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

/*
 * Each directory is walked once, however many operands reach it (a tree
 * and its subtree, a bind mount): its names are counted once.
 */
static void *seen_dirs;

/* The node of (@dev, @ino) in @root; *@first if it was just made. */
static struct seen *seen_get(void **root, dev_t dev, ino_t ino, int *first)
{
	struct seen key = { dev, ino, -1 }, *n, **found;

	found = tfind(&key, root, seen_cmp);
	*first = !found;
	if (found)
		return *found;
	n = xrealloc(NULL, sizeof(*n));
	*n = key;
	if (!tsearch(n, root, seen_cmp)) {
		fprintf(stderr, "cowlink: %s\n", strerror(ENOMEM));
		exit(1);
	}
	return n;
}

static int seen_first(void **root, dev_t dev, ino_t ino)
{
	int first;

	seen_get(root, dev, ino, &first);
	return first;
}

/*
 * The filesystem of what the walk met at @e, as fs_of(): for a directory
 * by its fd, for another entry on a filesystem not met yet (an operand,
 * a file bind-mounted) by an O_PATH fd, which opens nothing.
 */
static struct fsinfo *fs_of_entry(const struct walk_entry *e)
{
	struct fsinfo *fs = fs_find(e->st.st_dev);
	struct stat st;
	int fd;

	if (fs || e->fd >= 0)
		return fs ? fs : fs_of(e->fd, &e->st);
	fd = openat(e->dirfd, e->name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && walk_same(&st, &e->st))
		fs = fs_of(fd, &e->st);
	close(fd);
	return fs;
}

/*
 * The mode of @fs could not be read: it is taken for cow=flag, so that a
 * file without the flag is reported as not protected, never the other way
 * round.  On a cow=all mount that miscounts every such link: say so, once
 * per filesystem, naming the file @path that asked, and keep it for
 * --json.
 */
static void fs_mode_unknown(struct fsinfo *fs, const char *path)
{
	static const char mountinfo[] = "/proc/self/mountinfo";
	char why[128];

	if (fs->mode_unknown)
		return;
	fs->mode_unknown = xstrdup(path);
	if (access(mountinfo, R_OK) < 0)
		snprintf(why, sizeof(why), "%s: %s", mountinfo, strerror(errno));
	else
		snprintf(why, sizeof(why), "no line for it in %s", mountinfo);
	fprintf(stderr, "cowlink: cannot tell whether %s is mounted cow=all (%s): counted by the flag\n",
		quote(path), why);
}

/*
 * Is a write through the open file @fd, named @path, copy-on-write:
 * cowlinkfs, and a cow=all mount or the flag?  1, 0, or -1 with errno.
 */
static int fd_is_cow(int fd, struct fsinfo *fs, const char *path)
{
	int all;

	if (!fs->cowlinkfs)
		return 0;
	all = fs_cow_all(fs, fd);
	if (all < 0)
		fs_mode_unknown(fs, path);
	return all == 1 ? 1 : cowlink_fget(fd);
}

/* The same for the regular file @e: after a message if it is -1. */
static int entry_is_cow(struct walk_entry *e)
{
	struct fsinfo *fs = fs_find(e->st.st_dev);
	int fd, cow;

	if (fs && (!fs->cowlinkfs || (fs->cow_all_asked && fs->cow_all == 1)))
		return fs->cowlinkfs;
	fd = open_entry(e);
	if (fd < 0)
		return -1;
	fs = fs_of(fd, &e->st);
	cow = fs ? fd_is_cow(fd, fs, e->path) : -1;
	if (cow < 0 && fs && errno == ENOTTY)
		fs_refuses(fs, flag_what(FLAG_GET), e->path);
	else if (cow < 0)
		warn_path(flag_what(FLAG_GET), e->path);
	close(fd);
	return cow;
}

/*
 * A name of a shared inode, counted as COW or not by the inode's flag: a
 * plain hard link shares its data too, but a write through one name
 * changes them all, and it must never be reported as a saving.
 */
static void status_one(struct walk_entry *e)
{
	const struct stat *st = &e->st;
	struct shared_count *c;
	struct seen *n;
	int first;

	if (!S_ISREG(st->st_mode) || st->st_nlink < 2)
		return;
	n = seen_get(&seen_root, st->st_dev, st->st_ino, &first);
	if (first)
		n->cow = entry_is_cow(e);
	if (n->cow < 0)
		return;
	c = n->cow ? &st_cow : &st_plain;
	c->names++;
	if (!first)
		return;
	c->files++;
	/* A full copy would store these bytes once per link. */
	if (n->cow)
		st_saved += (unsigned long long)(st->st_nlink - 1) *
			    st->st_blocks * 512;
	if (args.json) {
		printf("%s\n    {\"path\": ", st_first ? "" : ",");
		cowlink_json_string(stdout, e->path);
		printf(", \"cow\": %s, \"links\": %ju, \"inode\": %ju, \"size\": %jd}",
		       n->cow ? "true" : "false", (uintmax_t)st->st_nlink,
		       (uintmax_t)st->st_ino, (intmax_t)st->st_size);
		st_first = 0;
	} else {
		printf("%s %ju links  %s\n", n->cow ? "cow" : "---",
		       (uintmax_t)st->st_nlink, quote_name(e->path));
	}
}

/*
 * status takes what it is given, but does not follow a symlink operand,
 * as du does not, and a FIFO, device or socket has no link to list: say
 * so in the words of get, where it would otherwise count as nothing in
 * silence, or be called not on cowlinkfs.
 */
static int walk_refuses(const struct walk_entry *e)
{
	if (e->level || S_ISREG(e->st.st_mode) || S_ISDIR(e->st.st_mode))
		return 0;
	type_error("cannot walk", e->path, e->st.st_mode);
	return 1;
}

static enum walk_action status_visit(struct walk_entry *e)
{
	if (walk_refuses(e))
		return WALK_CONTINUE;
	/* A note, not an error: the figures are right, and none is COW. */
	fs_note(fs_of_entry(e), e->path);
	if (S_ISDIR(e->st.st_mode))
		return seen_first(&seen_dirs, e->st.st_dev, e->st.st_ino) ?
		       WALK_CONTINUE : WALK_SKIP;
	status_one(e);
	return WALK_CONTINUE;
}

/* The filesystems whose cow=all note was given, by the path it named. */
static void json_mode_unknown(void)
{
	const char *sep = "";
	size_t i;

	printf("  \"cow_mode_unknown\": [");
	for (i = 0; i < n_fsinfos; i++) {
		if (!fsinfos[i].mode_unknown)
			continue;
		fputs(sep, stdout);
		cowlink_json_string(stdout, fsinfos[i].mode_unknown);
		sep = ", ";
	}
	printf("]\n}\n");
}

/*
 * A directory operand is walked whole, with or without -r, as du does:
 * the totals of a tree are the point, and zeros for a full tree would
 * be a wrong answer, not a short one.  The last line is the COW links'
 * own, as it was before plain hard links were told apart.
 */
static int cmd_status(int argc, char **argv)
{
	static const struct walk_ops status_ops = { .pre = status_visit };
	int i;

	if (args.json)
		printf("{\n  \"shared\": [");
	for (i = 0; i < argc; i++)
		walk_path(argv[i], &status_ops);
	if (args.json) {
		printf("%s],\n  \"files_shared\": %lu,\n  \"names\": %lu,\n"
		       "  \"bytes_saved\": %llu,\n  \"unprotected_files\": %lu,\n"
		       "  \"unprotected_names\": %lu,\n", st_first ? "" : "\n  ",
		       st_cow.files, st_cow.names, st_saved, st_plain.files,
		       st_plain.names);
		json_mode_unknown();
		return failed;
	}
	printf("unprotected hard links (not COW): files: %lu, names: %lu\n",
	       st_plain.files, st_plain.names);
	printf("files shared: %lu, names: %lu, bytes saved: %llu\n",
	       st_cow.files, st_cow.names, st_saved);
	return failed;
}

/* du */

/* The names met of a multi-link inode, until they are all its names. */
struct du_inode {
	dev_t dev;
	ino_t ino;
	nlink_t met;
};

static void *du_inodes;
static unsigned long long du_bytes;
static int du_found;		/* the operand's lstat succeeded */

static int du_cmp(const void *a, const void *b)
{
	const struct du_inode *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return 0;
}

/*
 * Count @e's space once its last name is met: a directory and a file of
 * one name at once, a file of several names when the walk has met them
 * all.  A directory met twice (a bind mount inside the tree) counts once.
 * A symlink operand is not followed, and counts as itself, as in du -s.
 */
static enum walk_action du_visit(struct walk_entry *e)
{
	struct du_inode key = { e->st.st_dev, e->st.st_ino, 0 }, *n, **found;
	int dir = S_ISDIR(e->st.st_mode);

	if (!e->level)
		du_found = 1;
	/* The bytes freed are the same anywhere, but no link there is COW. */
	fs_note(fs_of_entry(e), e->path);
	if (!dir && e->st.st_nlink < 2) {
		du_bytes += (unsigned long long)e->st.st_blocks * 512;
		return WALK_CONTINUE;
	}
	found = tfind(&key, &du_inodes, du_cmp);
	if (found && dir)
		return WALK_SKIP;
	n = found ? *found : xrealloc(NULL, sizeof(*n));
	if (!found) {
		*n = key;
		if (!tsearch(n, &du_inodes, du_cmp)) {
			fprintf(stderr, "cowlink: %s\n", strerror(ENOMEM));
			exit(1);
		}
	}
	if (dir || ++n->met == e->st.st_nlink)
		du_bytes += (unsigned long long)e->st.st_blocks * 512;
	return WALK_CONTINUE;
}

/*
 * A directory that cannot be read: an error already, but its own blocks
 * are known, and du counts them too.
 */
static void du_unread(struct walk_entry *e)
{
	du_visit(e);
}

/*
 * One line per operand, "BYTES<TAB>PATH", as du -s -B1 writes it (with
 * the name quoted): none for an operand that could not be examined.
 */
static int cmd_du(int argc, char **argv)
{
	static const struct walk_ops du_ops = {
		.pre = du_visit, .unread = du_unread,
	};
	int i;

	for (i = 0; i < argc; i++) {
		du_bytes = 0;
		du_found = 0;
		walk_path(argv[i], &du_ops);
		if (du_found)
			printf("%llu\t%s\n", du_bytes, quote_name(argv[i]));
		tdestroy(du_inodes, free);
		du_inodes = NULL;
	}
	return failed;
}

/* break */

static void break_error(const char *path, const char *why)
{
	fprintf(stderr, "cowlink: cannot break %s: %s\n", quote(path), why);
	failed = 1;
}

/*
 * A name to break, reached once: its directory by path (following
 * symlinks, as any tool given a path does) or by the walk of -R, then the
 * name by that directory's fd, and the file by an O_PATH fd of the inode
 * checked.  Another user who swaps a directory on the path meanwhile
 * changes nothing: the directory is already open.
 */
struct break_name {
	const char *path;	/* as given or walked, for messages */
	int dfd;		/* its directory */
	const char *base;	/* its name there */
	int pfd;		/* O_PATH fd of the file checked */
	struct stat st;		/* what was checked */
};

/*
 * Open the file @b names with @flags, through /proc/self/fd: that inode
 * and no other.  Without /proc (a bare chroot) there is no such open, and
 * one by name would break or open whatever was swapped in: -1 with ENOSYS.
 */
static int break_open(const struct break_name *b, int flags)
{
	int fd = reopen(b->pfd, flags);

	if (fd < 0 && errno == ENOENT && access("/proc/self/fd", F_OK) < 0)
		errno = ENOSYS;
	return fd;
}

/* What a failed open, or other system call, of the break tells the user. */
static void break_fail(const char *path)
{
	if (errno == ENOSYS)
		break_error(path, "/proc is not mounted, which opening only the file checked needs");
	else
		warn_path("cannot break", path);
}

/*
 * Is a write through @b copy-on-write: the flag, or a cow=all mount?
 * 1, 0, or -1 with errno (ENOENT: the mount's mode is unknown).
 */
static int break_is_cow(const struct break_name *b, struct fsinfo *fs)
{
	int fd, cow;

	fd = break_open(b, O_RDONLY);
	if (fd < 0)
		return -1;
	cow = cowlink_fget(fd);
	if (cow == 0)
		cow = fs_cow_all(fs, fd);
	close(fd);
	return cow;
}

/* Reach @path as struct break_name says: 0, or -1 with errno. */
static int break_reach(struct break_name *b, const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;

	b->path = path;
	b->pfd = -1;
	b->dfd = AT_FDCWD;
	b->base = path;
	if (slash && slash[1]) {
		dir = slash == path ? xstrdup("/") : strndup(path, slash - path);
		if (!dir)
			return -1;
		b->dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		free(dir);
		if (b->dfd < 0)
			return -1;
		b->base = slash + 1;
	}
	if (fstatat(b->dfd, b->base, &b->st, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	if (!S_ISREG(b->st.st_mode))
		return 0;
	b->pfd = openat(b->dfd, b->base, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	return b->pfd < 0 ? -1 : 0;
}

/* The open that breaks the link, and what it did. */
static void break_now(const struct break_name *b, int cow)
{
	struct stat after;
	int fd;

	fd = break_open(b, O_RDWR);
	if (fd < 0 || fstat(fd, &after) < 0) {
		break_fail(b->path);
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	if (after.st_ino != b->st.st_ino) {
		if (args.verbose)
			printf("%s: inode %ju -> %ju\n", quote_name(b->path),
			       (uintmax_t)b->st.st_ino,
			       (uintmax_t)after.st_ino);
	} else if (after.st_nlink < 2) {
		/* Its other names went away since the fstatat(). */
		fprintf(stderr, "cowlink: %s: single link, nothing to break\n",
			quote(b->path));
	} else {
		/* cow < 0: the mount's mode was unknown, and is "flag". */
		break_error(b->path, cow < 0 ? "not a cow link (COW flag not set)" :
			    "link not broken");
	}
}

/*
 * Break the regular file @b: say what happened to each name, never
 * "inode N -> N": cowlinkfs breaks the link of an O_RDWR open at open,
 * and of nothing else here.  A file of one name is a note for an
 * operand, and no news in a walk (@walked).
 */
static void break_file(const struct break_name *b, int walked)
{
	struct fsinfo *fs;
	struct stat after;
	int cow;

	/* Only the inode fstatat() saw, never one swapped in since. */
	if (fstat(b->pfd, &after) < 0 || !walk_same(&after, &b->st)) {
		break_error(b->path, "replaced during the break, not broken");
		return;
	}
	fs = fs_of(b->pfd, &b->st);
	if (!fs) {
		warn_path("cannot break", b->path);
		return;
	}
	if (!fs->cowlinkfs) {
		fs_refuses(fs, "cannot break", b->path);
		return;
	}
	if (b->st.st_nlink < 2) {
		if (!walked)
			fprintf(stderr, "cowlink: %s: single link, nothing to break\n",
				quote(b->path));
		return;
	}
	cow = break_is_cow(b, fs);
	if (cow < 0 && errno != ENOENT)
		break_fail(b->path);
	else if (cow == 0)
		break_error(b->path, "not a cow link (COW flag not set)");
	else
		break_now(b, cow);
}

/* Why what @mode says is no file to break, in words strerror() lacks. */
static const char *not_breakable(mode_t mode)
{
	if (S_ISDIR(mode))
		return "is a directory (use -R)";
	return S_ISLNK(mode) ? "is a symlink (not followed)" :
			       "not a regular file";
}

static void break_one(const char *path)
{
	struct break_name b;

	operand++;
	if (break_reach(&b, path) < 0)
		warn_path("cannot break", path);
	else if (!S_ISREG(b.st.st_mode))
		break_error(path, not_breakable(b.st.st_mode));
	else
		break_file(&b, 0);
	if (b.pfd >= 0)
		close(b.pfd);
	if (b.dfd >= 0)
		close(b.dfd);
}

/*
 * break -R: every cow link under a directory, by the walk's directory
 * fds.  Hard links between two names inside the tree are broken too:
 * each name gets its own copy, which is what -R asks for.  The walk
 * stays on the operand's mount, as clone's does: a copy made through a
 * mount point, a bind mount of another tree say, would be one of a name
 * outside the tree.
 */
static enum walk_action break_visit(struct walk_entry *e)
{
	struct break_name b = {
		.path = e->path, .dfd = e->dirfd, .base = e->name,
		.st = e->st, .pfd = -1,
	};
	struct fsinfo *fs;

	if (!e->level && !S_ISREG(e->st.st_mode) && !S_ISDIR(e->st.st_mode)) {
		break_error(e->path, not_breakable(e->st.st_mode));
		return WALK_CONTINUE;
	}
	/* What -R passes over in silence, without a system call. */
	if (e->level && !S_ISDIR(e->st.st_mode) &&
	    !(S_ISREG(e->st.st_mode) && e->st.st_nlink > 1))
		return WALK_CONTINUE;
	if (walk_mount_point(e)) {
		fprintf(stderr, "cowlink: not crossing into mount point %s\n",
			quote(e->path));
		failed = 1;
		return WALK_SKIP;
	}
	/*
	 * Said once, and not walked: what is below it is on the same
	 * filesystem, since the walk crosses no mount point.
	 */
	fs = fs_of_entry(e);
	if (fs && !fs->cowlinkfs) {
		fs_refuses(fs, "cannot break", e->path);
		return WALK_SKIP;
	}
	if (!S_ISREG(e->st.st_mode))
		return WALK_CONTINUE;
	b.pfd = openat(e->dirfd, e->name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (b.pfd < 0) {
		warn_path("cannot break", e->path);
		return WALK_CONTINUE;
	}
	break_file(&b, e->level > 0);
	close(b.pfd);
	return WALK_CONTINUE;
}

static int cmd_break(int argc, char **argv)
{
	static const struct walk_ops break_ops = { .pre = break_visit };
	int i;

	for (i = 0; i < argc; i++) {
		if (args.recursive)
			walk_path(argv[i], &break_ops);
		else
			break_one(argv[i]);
	}
	return failed;
}

static int run(int argc, char **argv)
{
	/*
	 * As coreutils' multi-command tools do: the help to try is that of
	 * the subcommand, once the word naming it was read.
	 */
	if (cowlink_parse(argc - 1, argv + 1, &args) < 0) {
		fprintf(stderr, "cowlink: %s\n"
			"Try 'cowlink %s%s--help' for more information.\n",
			args.error, args.name ? args.name : "",
			args.name ? " " : "");
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

	/* The records of get and changes: for a terminal, or exact. */
	args.tty = isatty(STDOUT_FILENO);
	switch (args.cmd) {
	case CMD_FLAG:
		return cmd_flag(args.argc, args.argv);
	case CMD_CLONE:
		return cmd_clone(args.argv);
	case CMD_STATUS:
		return cmd_status(args.argc, args.argv);
	case CMD_DU:
		return cmd_du(args.argc, args.argv);
	case CMD_BREAK:
		return cmd_break(args.argc, args.argv);
	case CMD_CHANGES:
		return cowlink_changes(&args);
	case CMD_DISCARD:
		return cowlink_discard(&args);
	case CMD_NONE:
		break;
	}
	return 2;
}

/*
 * Did what went to stdout get there?  As coreutils' close_stdout() asks:
 * "cowlink --help >/dev/full" must fail, and a write error that stdio met
 * early, then kept to itself, must not be lost.  Output never written to
 * a closed stdout is no error.
 */
static int close_stdout(void)
{
	int pending = __fpending(stdout) != 0;
	int prev_fail = ferror(stdout);
	int fclose_fail = fclose(stdout) != 0;

	if (!prev_fail && !(fclose_fail && (pending || errno != EBADF)))
		return 0;
	if (fclose_fail)
		fprintf(stderr, "cowlink: write error: %s\n", strerror(errno));
	else
		fputs("cowlink: write error\n", stderr);
	return -1;
}

int main(int argc, char **argv)
{
	int ret;

	/* Which bytes of a name are printable characters: see quote.c. */
	setlocale(LC_CTYPE, "");
	ret = run(argc, argv);
	if (close_stdout() < 0 && !ret)
		ret = 1;
	return ret;
}
