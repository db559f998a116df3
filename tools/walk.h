/* SPDX-License-Identifier: GPL-2.0 */
/*
 * walk: a tree walk by directory file descriptors.
 *
 * nftw() hands its callback a path, and every call made with that path
 * resolves it again from the top.  A user who owns a directory inside the
 * tree can rename it away and put a symlink in its place between two such
 * calls, and a walk run by root then works on files outside the tree.
 * Here each entry is reached as (parent directory fd, name): a directory
 * is opened with O_NOFOLLOW and checked to be the one lstat saw, and the
 * callback is expected to use the *at() calls on e->dirfd.
 */
#ifndef WALK_H
#define WALK_H

#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

/* What getdents64() returns, which glibc's headers do not declare. */
struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* "." or "..", which a walk skips. */
static inline int walk_dot(const char *name)
{
	return name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]));
}

enum walk_action {
	WALK_CONTINUE,		/* go on (into a directory, too) */
	WALK_SKIP,		/* do not enter this directory */
	WALK_STOP,		/* end the whole walk */
};

struct walk_entry {
	struct walk_entry *parent;	/* NULL for the operand itself */
	int dirfd;		/* the parent's fd, or AT_FDCWD */
	const char *name;	/* the name in dirfd */
	const char *path;	/* the whole path, for messages */
	struct stat st;		/* lstat of the entry */
	int fd;			/* a directory's own fd, else -1 */
	int level;		/* 0 for the operand */
	int data;		/* the callback's own, e.g. a second fd */
};

/*
 * pre is called for every entry, before a directory's entries; post (if
 * not NULL) after them, for a directory pre let in.  pre may return a
 * walk_action.  unread (if not NULL) is called instead of pre for a
 * directory that could not be opened, its error reported: its lstat is
 * still right, and du counts it.  Errors of the walk itself are reported
 * as "cowlink: ..." and counted; walk() returns their number, or -1 after
 * WALK_STOP.
 */
struct walk_ops {
	enum walk_action (*pre)(struct walk_entry *e);
	void (*post)(struct walk_entry *e);
	void (*unread)(struct walk_entry *e);
};

int walk(const char *path, const struct walk_ops *ops);
int walk_mount_point(const struct walk_entry *e);
void walk_raise_nofile(void);

/* Same file: for an fd that must still be what lstat saw. */
static inline int walk_same(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

#endif
