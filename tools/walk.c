// SPDX-License-Identifier: GPL-2.0
/*
 * walk: a tree walk by directory file descriptors; see walk.h for why.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "cowlink.h"
#include "mountid.h"
#include "walk.h"

static int walk_errors, walk_stopped;

static void walk_warn(const char *what, const char *path, int err)
{
	fprintf(stderr, "cowlink: %s %s: %s\n", what, quote(path), strerror(err));
	walk_errors++;
}

static char *walk_join(const char *dir, const char *name)
{
	size_t len = strlen(dir);
	char *s = malloc(len + strlen(name) + 2);

	if (!s) {
		fprintf(stderr, "cowlink: %s\n", strerror(ENOMEM));
		exit(1);
	}
	sprintf(s, "%s%s%s", dir, len && dir[len - 1] == '/' ? "" : "/", name);
	return s;
}

/*
 * Open the directory E names, and make sure it is the one lstat saw: a
 * symlink put in its place fails O_NOFOLLOW, another directory renamed
 * there fails the inode check.  -1 if it could not be opened, -2 if it
 * is no longer what lstat saw.
 */
static int walk_open_dir(struct walk_entry *e)
{
	struct stat st;
	int fd;

	fd = openat(e->dirfd, e->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		walk_warn("cannot read directory", e->path, errno);
		return -1;
	}
	if (fstat(fd, &st) < 0 || !walk_same(&st, &e->st)) {
		close(fd);
		fprintf(stderr, "cowlink: %s changed during the walk, not entered\n",
			quote(e->path));
		walk_errors++;
		return -2;
	}
	return fd;
}

static void walk_one(struct walk_entry *e, const struct walk_ops *ops);

static void walk_dir(struct walk_entry *e, const struct walk_ops *ops)
{
	struct walk_entry child = { .parent = e, .dirfd = e->fd,
				    .level = e->level + 1 };
	struct dirent *de;
	char *path;
	DIR *d;
	int fd;

	/* closedir() closes its own fd: e->fd stays the callbacks'. */
	fd = dup(e->fd);
	d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		walk_warn("cannot read directory", e->path, errno);
		if (fd >= 0)
			close(fd);
		return;
	}
	while (!walk_stopped) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno)
				walk_warn("cannot read directory", e->path,
					  errno);
			break;
		}
		if (walk_dot(de->d_name))
			continue;
		path = walk_join(e->path, de->d_name);
		child.name = de->d_name;
		child.path = path;
		walk_one(&child, ops);
		free(path);
	}
	closedir(d);
}

static void walk_one(struct walk_entry *e, const struct walk_ops *ops)
{
	enum walk_action act;

	e->fd = -1;
	e->data = -1;
	if (fstatat(e->dirfd, e->name, &e->st, AT_SYMLINK_NOFOLLOW) < 0) {
		walk_warn("cannot access", e->path, errno);
		return;
	}
	if (S_ISDIR(e->st.st_mode)) {
		e->fd = walk_open_dir(e);
		if (e->fd == -1 && ops->unread)
			ops->unread(e);
		if (e->fd < 0) {
			e->fd = -1;
			return;
		}
	}
	act = ops->pre(e);
	if (act == WALK_STOP)
		walk_stopped = 1;
	if (e->fd >= 0) {
		if (act == WALK_CONTINUE) {
			walk_dir(e, ops);
			if (ops->post)
				ops->post(e);
		}
		close(e->fd);
	}
}

/* One fd per level: let a deep tree have what the hard limit allows. */
void walk_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/*
 * Is @e, below the operand, a mount point: another filesystem, or a bind
 * mount, of the same filesystem too, whose st_dev is the same.  Links do
 * not cross a mount (EXDEV), and a walk that changes files stays on the
 * operand's mount, as cp -x does.  Before Linux 5.8 st_dev alone tells.
 */
int walk_mount_point(const struct walk_entry *e)
{
	if (!e->level)
		return 0;
	if (e->st.st_dev != e->parent->st.st_dev)
		return 1;
	if (e->fd >= 0)
		return mount_root(e->fd, "") == 1;
	return mount_root(e->dirfd, e->name) == 1;
}

int walk(const char *path, const struct walk_ops *ops)
{
	struct walk_entry e = { .dirfd = AT_FDCWD, .name = path,
				.path = path };

	walk_raise_nofile();
	walk_errors = 0;
	walk_stopped = 0;
	walk_one(&e, ops);
	return walk_stopped ? -1 : walk_errors;
}
