// SPDX-License-Identifier: GPL-2.0
/*
 * cowlink changes PRISTINE CLONE: what a run changed in a clone of a
 * pristine tree, from inode sharing and metadata, and data only where
 * they cannot tell.  A regular file of the clone that still shares the
 * pristine name's inode is unchanged, since any change to it through
 * cowlinkfs (a write, chmod, chown, utimes, an xattr) first gives it an
 * inode of its own; one that does not is read only if its size is the
 * pristine's.  Directories, symlinks and special files, which a clone
 * makes anew, are compared by their metadata.
 *
 * Both trees are walked together by directory fds, names sorted bytewise
 * in each directory, so that the output is the same for the same trees.
 * Mount points are listed, not entered.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "cowlink.h"
#include "walk.h"

enum change { CH_MODIFIED, CH_CREATED, CH_REMOVED, CH_METADATA };

static const char *const change_names[] = {
	"modified", "created", "removed", "metadata",
};

/* What differs, for --json: bits, named in this order. */
enum {
	W_INODE = 1, W_TYPE = 2, W_SIZE = 4, W_MTIME = 8, W_TARGET = 16,
	W_RDEV = 32, W_MODE = 64, W_OWNER = 128, W_XATTRS = 256,
};

static const char *const what_names[] = {
	"inode", "type", "size", "mtime", "target", "rdev", "mode", "owner",
	"xattrs",
};

static const struct cowlink_args *cargs;
static int first = 1;
static unsigned long counts[ARRAY_SIZE(change_names)];

/* A side of the comparison: the operand as given, for messages. */
static const char *root[2];

/* The path of an entry below both roots: one buffer, cut back per level. */
static char *rel;
static size_t rel_size;

static size_t rel_push(size_t len, const char *name)
{
	size_t nlen = strlen(name);

	if (len + nlen + 2 > rel_size) {
		rel_size = (len + nlen + 2) * 2;
		rel = xrealloc(rel, rel_size);
	}
	if (len)
		rel[len++] = '/';
	memcpy(rel + len, name, nlen + 1);
	return len + nlen;
}

/* The whole path of the current entry on @side, for messages. */
static const char *side_path(int side)
{
	static char *buf;
	static size_t size;
	size_t need = strlen(root[side]) + strlen(rel) + 2;

	if (need > size)
		buf = xrealloc(buf, size = need);
	snprintf(buf, size, "%s%s%s", root[side], *rel ? "/" : "", rel);
	return buf;
}

static const char *type_name(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "file";
	case S_IFDIR:
		return "directory";
	case S_IFLNK:
		return "symlink";
	case S_IFIFO:
		return "fifo";
	case S_IFSOCK:
		return "socket";
	case S_IFCHR:
		return "character device";
	case S_IFBLK:
		return "block device";
	}
	return "unknown";
}

/* One record: "CHANGE PATH", written as get's records, or JSON. */
static void report(enum change ch, mode_t mode, unsigned int what)
{
	const char *path = *rel ? rel : ".";
	const char *sep = "";
	unsigned int i;

	counts[ch]++;
	if (!cargs->json) {
		cowlink_put_change(stdout, change_names[ch], path, cargs->null,
				   cargs->tty);
		return;
	}
	printf("%s\n    {\"path\": ", first ? "" : ",");
	first = 0;
	cowlink_json_string(stdout, path);
	printf(", \"change\": \"%s\", \"type\": \"%s\", \"what\": [",
	       change_names[ch], type_name(mode));
	for (i = 0; i < ARRAY_SIZE(what_names); i++) {
		if (!(what & (1U << i)))
			continue;
		printf("%s\"%s\"", sep, what_names[i]);
		sep = ", ";
	}
	printf("]}");
}

/* The names of a directory, sorted, with their d_type. */
struct names {
	char **v;
	size_t n;
};

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_free(struct names *ns)
{
	size_t i;

	for (i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
	ns->v = NULL;
	ns->n = 0;
}

/* Read the directory @fd into @ns: 0, or -1 said (on @side). */
static int names_read(int fd, int side, struct names *ns)
{
	static char buf[32768];
	struct linux_dirent64 *d;
	size_t cap = 0, len;
	long n, off;

	ns->v = NULL;
	ns->n = 0;
	for (;;) {
		n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
		if (n < 0) {
			warn_path("cannot read directory", side_path(side));
			names_free(ns);
			return -1;
		}
		if (!n)
			break;
		for (off = 0; off < n; off += d->d_reclen) {
			d = (struct linux_dirent64 *)(buf + off);
			if (walk_dot(d->d_name))
				continue;
			if (ns->n == cap)
				ns->v = xrealloc(ns->v, (cap = cap ? cap * 2 : 64) *
						sizeof(*ns->v));
			len = strlen(d->d_name) + 1;
			ns->v[ns->n] = memcpy(xrealloc(NULL, len), d->d_name, len);
			ns->n++;
		}
	}
	qsort(ns->v, ns->n, sizeof(*ns->v), name_cmp);
	return 0;
}

/*
 * The xattrs of NAME in DIRFD, not followed, as one block of sorted
 * "name\0value-length:value" items, for comparison; NULL with *len 0 if
 * it has none or they cannot be listed (ENOTSUP).  Reached by
 * /proc/self/fd/DIRFD/NAME, which opens nothing: a FIFO or device too.
 */
struct xattrs {
	char *buf;
	size_t len;
};

static int xitem_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int xattrs_read(int dirfd, const char *name, int side,
		       struct xattrs *x)
{
	char proc[64 + NAME_MAX], *list = NULL, **items = NULL, *p, *val = NULL;
	ssize_t len = 0, vlen;
	size_t n = 0, i, vsize = 0;

	x->buf = NULL;
	x->len = 0;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d/%s", dirfd, name);
	for (;;) {
		len = llistxattr(proc, NULL, 0);
		if (len <= 0)
			break;
		list = xrealloc(list, len);
		len = llistxattr(proc, list, len);
		if (len >= 0 || errno != ERANGE)
			break;
	}
	if (len < 0) {
		free(list);
		if (errno == ENOTSUP)
			return 0;
		warn_path("cannot list xattrs of", side_path(side));
		return -1;
	}
	for (p = list; p < list + len; p += strlen(p) + 1) {
		items = xrealloc(items, (n + 1) * sizeof(*items));
		items[n++] = p;
	}
	qsort(items, n, sizeof(*items), xitem_cmp);
	for (i = 0; i < n; i++) {
		vlen = lgetxattr(proc, items[i], NULL, 0);
		if (vlen >= 0 && (size_t)vlen > vsize)
			val = xrealloc(val, vsize = vlen);
		if (vlen > 0)
			vlen = lgetxattr(proc, items[i], val, vlen);
		if (vlen < 0) {
			if (errno == ENODATA)
				continue;	/* removed meanwhile */
			warn_path("cannot read xattrs of", side_path(side));
			break;
		}
		/* "name", NUL, "length:", value: no two sets alike. */
		x->buf = xrealloc(x->buf, x->len + strlen(items[i]) + 32 + vlen);
		x->len += strlen(strcpy(x->buf + x->len, items[i])) + 1;
		x->len += sprintf(x->buf + x->len, "%zd:", vlen);
		if (vlen)
			memcpy(x->buf + x->len, val, vlen);
		x->len += vlen;
	}
	free(val);
	free(items);
	free(list);
	return i < n ? -1 : 0;
}

/* Do the xattrs of the entry differ between the two sides? */
static int xattrs_differ(int pfd, int cfd, const char *name)
{
	struct xattrs a, b;
	int differ = 0;

	if (xattrs_read(pfd, name, 0, &a) == 0 &&
	    xattrs_read(cfd, name, 1, &b) == 0) {
		differ = a.len != b.len || (a.len && memcmp(a.buf, b.buf, a.len));
		free(b.buf);
	}
	free(a.buf);
	return differ;
}

/* The metadata of the two sides that is not the data: mode, owner, xattrs. */
static unsigned int meta_differ(int pfd, int cfd, const char *name,
				const struct stat *ps, const struct stat *cs)
{
	unsigned int what = 0;

	if ((ps->st_mode & 07777) != (cs->st_mode & 07777))
		what |= W_MODE;
	if (ps->st_uid != cs->st_uid || ps->st_gid != cs->st_gid)
		what |= W_OWNER;
	if (xattrs_differ(pfd, cfd, name))
		what |= W_XATTRS;
	return what;
}

static int same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/*
 * Open the regular file NAME of DIRFD, the one @st says, to read it: -1
 * if not (said).  O_NOATIME where the caller may, so that the pristine
 * tree's atimes stay as they were; O_NONBLOCK and O_NOCTTY for a FIFO
 * or device swapped in, which the inode check then turns away.
 */
static int open_file(int dirfd, const char *name, const struct stat *st,
		     int side)
{
	int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
	struct stat fst;
	int fd;

	fd = openat(dirfd, name, flags | O_NOATIME);
	if (fd < 0 && errno == EPERM)
		fd = openat(dirfd, name, flags);
	if (fd < 0) {
		warn_path("cannot read", side_path(side));
		return -1;
	}
	if (fstat(fd, &fst) < 0 || !walk_same(&fst, st)) {
		close(fd);
		fprintf(stderr, "cowlink: %s changed during the walk, not compared\n",
			quote(side_path(side)));
		failed = 1;
		return -1;
	}
	return fd;
}

/* Read up to @size bytes: fewer only at the end of the file; -1 on error. */
static ssize_t read_full(int fd, char *buf, size_t size)
{
	size_t got = 0;
	ssize_t n;

	while (got < size) {
		n = read(fd, buf + got, size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (!n)
			break;
		got += n;
	}
	return got;
}

#define DATA_BUF 65536

/*
 * Do the bytes of two regular files of one size differ: 1, 0, or -1 if
 * they could not be compared (said).  Read to the first difference, as
 * cmp(1) reads.
 */
static int data_differs(int pfd, int cfd, const char *name,
			const struct stat *ps, const struct stat *cs)
{
	static char *buf[2];
	int fd[2], ret = -1, side;
	ssize_t len[2];

	if (!buf[0]) {
		buf[0] = xrealloc(NULL, DATA_BUF);
		buf[1] = xrealloc(NULL, DATA_BUF);
	}
	fd[0] = open_file(pfd, name, ps, 0);
	if (fd[0] < 0)
		return -1;
	fd[1] = open_file(cfd, name, cs, 1);
	while (fd[1] >= 0) {
		for (side = 0; side < 2; side++) {
			len[side] = read_full(fd[side], buf[side], DATA_BUF);
			if (len[side] < 0)
				break;
		}
		if (side < 2) {
			warn_path("cannot read", side_path(side));
			break;
		}
		if (len[0] != len[1] || memcmp(buf[0], buf[1], len[0])) {
			ret = 1;
			break;
		}
		if (!len[0]) {
			ret = 0;
			break;
		}
	}
	if (fd[1] >= 0)
		close(fd[1]);
	close(fd[0]);
	return ret;
}

/* Do two symlinks point to different places? */
static int target_differs(int pfd, int cfd, const char *name)
{
	char a[PATH_MAX], b[PATH_MAX];
	ssize_t la, lb;

	la = readlinkat(pfd, name, a, sizeof(a));
	if (la < 0) {
		warn_path("cannot read symlink", side_path(0));
		return 0;
	}
	lb = readlinkat(cfd, name, b, sizeof(b));
	if (lb < 0) {
		warn_path("cannot read symlink", side_path(1));
		return 0;
	}
	return la != lb || memcmp(a, b, la);
}

static void compare_dirs(int pfd, int cfd, const struct stat *pst,
			 const struct stat *cst);

/* Open the directory NAME of DIRFD, the one @st says: -1 if not (said). */
static int open_dir(int dirfd, const char *name, const struct stat *st,
		    int side)
{
	struct stat fst;
	int fd;

	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		warn_path("cannot read directory", side_path(side));
		return -1;
	}
	if (fstat(fd, &fst) < 0 || !walk_same(&fst, st)) {
		close(fd);
		fprintf(stderr, "cowlink: %s changed during the walk, not entered\n",
			quote(side_path(side)));
		failed = 1;
		return -1;
	}
	return fd;
}

/*
 * Every name under the directory NAME of DIRFD, whose stat is @st, is
 * @ch (created or removed): a tree only on one side is listed whole.
 */
static void one_side_tree(int dirfd, const char *name, const struct stat *st,
			  int side, enum change ch)
{
	struct names ns;
	struct stat cst;
	size_t len = strlen(rel), i;
	int fd;

	fd = open_dir(dirfd, name, st, side);
	if (fd < 0)
		return;
	if (names_read(fd, side, &ns) < 0) {
		close(fd);
		return;
	}
	for (i = 0; i < ns.n; i++) {
		rel_push(len, ns.v[i]);
		if (fstatat(fd, ns.v[i], &cst, AT_SYMLINK_NOFOLLOW) < 0) {
			warn_path("cannot access", side_path(side));
		} else {
			report(ch, cst.st_mode, 0);
			if (S_ISDIR(cst.st_mode) && cst.st_dev == st->st_dev)
				one_side_tree(fd, ns.v[i], &cst, side, ch);
		}
		rel[len] = '\0';
	}
	names_free(&ns);
	close(fd);
}

/* A name on one side only, of the directory @dirfd whose stat is @dst. */
static void one_side(int dirfd, const char *name, const struct stat *dst,
		     int side)
{
	enum change ch = side ? CH_CREATED : CH_REMOVED;
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		warn_path("cannot access", side_path(side));
		return;
	}
	report(ch, st.st_mode, 0);
	if (S_ISDIR(st.st_mode) && st.st_dev == dst->st_dev)
		one_side_tree(dirfd, name, &st, side, ch);
}

/*
 * A name on both sides.  A regular file is unchanged while it shares the
 * pristine's inode.  One that does not is modified if its bytes differ:
 * its size, or else its data, read.  Whatever else differs (the mode,
 * owner, xattrs, mtime, or the inode alone) is metadata.  So it is for
 * every type: modified is a change of what the name holds (bytes, a
 * symlink's target, a device's numbers, the type), an mtime alone is
 * metadata.  A directory's mtime is not compared: it changes with the
 * names in it, which are listed themselves, and with every link broken
 * in it (the copy is renamed over the name).
 */
static void both_sides(int pfd, int cfd, const char *name,
		       const struct stat *pdst, const struct stat *cdst)
{
	struct stat ps, cs;
	unsigned int what = 0;
	int mnt;

	if (fstatat(pfd, name, &ps, AT_SYMLINK_NOFOLLOW) < 0) {
		warn_path("cannot access", side_path(0));
		return;
	}
	if (fstatat(cfd, name, &cs, AT_SYMLINK_NOFOLLOW) < 0) {
		warn_path("cannot access", side_path(1));
		return;
	}
	if ((ps.st_mode & S_IFMT) != (cs.st_mode & S_IFMT)) {
		report(CH_MODIFIED, cs.st_mode, W_TYPE);
		if (S_ISDIR(ps.st_mode) && ps.st_dev == pdst->st_dev)
			one_side_tree(pfd, name, &ps, 0, CH_REMOVED);
		if (S_ISDIR(cs.st_mode) && cs.st_dev == cdst->st_dev)
			one_side_tree(cfd, name, &cs, 1, CH_CREATED);
		return;
	}
	if (S_ISREG(cs.st_mode)) {
		if (walk_same(&ps, &cs))
			return;
		what = W_INODE | meta_differ(pfd, cfd, name, &ps, &cs);
		if (ps.st_size != cs.st_size)
			what |= W_SIZE;
		if (!same_time(&ps.st_mtim, &cs.st_mtim))
			what |= W_MTIME;
		/* Not compared (said): listed as modified, never hidden. */
		report(what & W_SIZE || data_differs(pfd, cfd, name, &ps, &cs) ?
		       CH_MODIFIED : CH_METADATA, cs.st_mode, what);
		return;
	}
	what = meta_differ(pfd, cfd, name, &ps, &cs);
	if (!S_ISDIR(cs.st_mode) && !same_time(&ps.st_mtim, &cs.st_mtim))
		what |= W_MTIME;
	if (S_ISLNK(cs.st_mode) && target_differs(pfd, cfd, name))
		what |= W_TARGET;
	if ((S_ISCHR(cs.st_mode) || S_ISBLK(cs.st_mode)) &&
	    ps.st_rdev != cs.st_rdev)
		what |= W_RDEV;
	if (what)
		report(what & (W_TARGET | W_RDEV) ? CH_MODIFIED : CH_METADATA,
		       cs.st_mode, what);
	if (!S_ISDIR(cs.st_mode))
		return;
	/* A mount point is listed as what it is, not entered. */
	mnt = ps.st_dev != pdst->st_dev || cs.st_dev != cdst->st_dev;
	if (!mnt) {
		int p = open_dir(pfd, name, &ps, 0), c = -1;

		if (p >= 0)
			c = open_dir(cfd, name, &cs, 1);
		if (c >= 0)
			compare_dirs(p, c, &ps, &cs);
		if (c >= 0)
			close(c);
		if (p >= 0)
			close(p);
	}
}

/* Compare two open directories, their names merged in sorted order. */
static void compare_dirs(int pfd, int cfd, const struct stat *pst,
			 const struct stat *cst)
{
	struct names pn, cn;
	size_t len = strlen(rel), i = 0, j = 0;
	int c;

	if (names_read(pfd, 0, &pn) < 0)
		return;
	if (names_read(cfd, 1, &cn) < 0) {
		names_free(&pn);
		return;
	}
	while (i < pn.n || j < cn.n) {
		if (i == pn.n)
			c = 1;
		else if (j == cn.n)
			c = -1;
		else
			c = strcmp(pn.v[i], cn.v[j]);
		if (c < 0) {
			rel_push(len, pn.v[i]);
			one_side(pfd, pn.v[i++], pst, 0);
		} else if (c > 0) {
			rel_push(len, cn.v[j]);
			one_side(cfd, cn.v[j++], cst, 1);
		} else {
			rel_push(len, pn.v[i]);
			both_sides(pfd, cfd, pn.v[i], pst, cst);
			i++;
			j++;
		}
		rel[len] = '\0';
	}
	names_free(&pn);
	names_free(&cn);
}

/* Open an operand, a directory (a symlink to one is followed): fd or -1. */
static int open_root(int side, struct stat *st)
{
	int fd = open(root[side], O_RDONLY | O_DIRECTORY | O_NOCTTY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, st) < 0) {
		warn_path("cannot compare", root[side]);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

int cowlink_changes(const struct cowlink_args *args)
{
	struct stat pst, cst;
	unsigned int what;
	int pfd, cfd = -1;
	size_t i;

	cargs = args;
	root[0] = args->argv[0];
	root[1] = args->argv[1];
	rel_push(0, "");
	walk_raise_nofile();
	pfd = open_root(0, &pst);
	if (pfd >= 0)
		cfd = open_root(1, &cst);
	if (cfd < 0) {
		if (pfd >= 0)
			close(pfd);
		return 1;
	}
	if (walk_same(&pst, &cst)) {
		fprintf(stderr, "cowlink: %s and %s are the same directory\n",
			quote_n(0, root[0]), quote_n(1, root[1]));
		close(pfd);
		close(cfd);
		return 1;
	}
	/*
	 * Off cowlinkfs a shared inode is no proof that a name is unchanged:
	 * a write through it changed both trees alike, which then agree.
	 */
	note_off_cowlinkfs(pfd, &pst, root[0]);
	note_off_cowlinkfs(cfd, &cst, root[1]);
	if (args->json)
		printf("{\n  \"changes\": [");
	/* The tops themselves: by their metadata, as any directory. */
	what = meta_differ(pfd, cfd, ".", &pst, &cst);
	if (what)
		report(CH_METADATA, cst.st_mode, what);
	compare_dirs(pfd, cfd, &pst, &cst);
	close(pfd);
	close(cfd);
	if (args->json) {
		printf("%s]", first ? "" : "\n  ");
		for (i = 0; i < ARRAY_SIZE(change_names); i++)
			printf(",\n  \"%s\": %lu", change_names[i], counts[i]);
		printf("\n}\n");
	}
	free(rel);
	return failed;
}
