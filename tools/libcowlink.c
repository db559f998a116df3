// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libcowlink: get and set the cowlinkfs COW flag, and cowlink_link(), the
 * "copyfile()" the cowlinks patch listed as its user-space TODO: a copy
 * that costs a link.  See libcowlink(3).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/cowlinkfs.h>
#include "libcowlink.h"

int cowlink_fget(int fd)
{
	int v;

	if (ioctl(fd, COWLINKFS_IOC_GETCOW, &v) < 0)
		return -1;
	return v != 0;
}

int cowlink_fset(int fd, int on)
{
	int v = on != 0;

	return ioctl(fd, COWLINKFS_IOC_SETCOW, &v) < 0 ? -1 : 0;
}

/*
 * Open PATH for the flag ioctls: regular files and directories only.
 * The type is checked before the open, which a device or FIFO would
 * answer with its own side effects, and again after it, on the inode
 * opened, in case the name was swapped in between (EAGAIN: the caller
 * may try again).  A symlink is ELOOP, as open(O_NOFOLLOW) has it, so
 * that a caller can tell it from a device or FIFO (EINVAL).
 */
static int cowlink_open(const char *path)
{
	struct stat st, fst;
	int fd, err;

	if (lstat(path, &st) < 0)
		return -1;
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		errno = S_ISLNK(st.st_mode) ? ELOOP : EINVAL;
		return -1;
	}
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY |
		  O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &fst) < 0) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	if (fst.st_dev != st.st_dev || fst.st_ino != st.st_ino) {
		close(fd);
		errno = EAGAIN;
		return -1;
	}
	return fd;
}

int cowlink_get(const char *path)
{
	int fd = cowlink_open(path);
	int ret, err;

	if (fd < 0)
		return -1;
	ret = cowlink_fget(fd);
	err = errno;
	close(fd);
	errno = err;
	return ret;
}

int cowlink_set(const char *path, int on)
{
	int fd = cowlink_open(path);
	int ret, err;

	if (fd < 0)
		return -1;
	ret = cowlink_fset(fd, on);
	err = errno;
	close(fd);
	errno = err;
	return ret;
}

int cowlink_is_cowlinkfs(const char *path)
{
	struct statfs st;

	if (statfs(path, &st) < 0)
		return -1;
	return st.f_type == COWLINKFS_SUPER_MAGIC;
}

/*
 * The mode of the mount PATH is on: its super options in mountinfo end
 * in ",cow=all" or ",cow=flag" (show_options of super.c).  The mount is
 * found by st_dev, which every bind mount of one cowlinkfs superblock
 * shares, and so do the options.  seq_path() writes a comma of lowerdir
 * as \054, so a comma there always separates options.
 */
int cowlink_mount_cow_all(const char *path)
{
	unsigned int maj, min;
	char *line = NULL, *opts, *opt, *save;
	size_t size = 0;
	struct stat st;
	int ret = -1, fs;
	FILE *f;

	fs = cowlink_is_cowlinkfs(path);
	if (fs <= 0) {
		if (!fs)
			errno = ENOTTY;
		return -1;
	}
	if (stat(path, &st) < 0)
		return -1;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -1;
	while (ret < 0 && getline(&line, &size, f) > 0) {
		if (sscanf(line, "%*d %*d %u:%u", &maj, &min) != 2 ||
		    maj != major(st.st_dev) || min != minor(st.st_dev))
			continue;
		opts = strstr(line, " - cowlinkfs ");
		if (!opts)
			continue;
		opts = strchr(opts + strlen(" - cowlinkfs "), ' ');
		if (!opts)
			continue;
		opts[strcspn(opts, "\n")] = '\0';
		ret = 0;
		for (opt = strtok_r(opts + 1, ",", &save); opt;
		     opt = strtok_r(NULL, ",", &save))
			if (!strcmp(opt, "cow=all"))
				ret = 1;
	}
	free(line);
	fclose(f);
	if (ret < 0)		/* no line for it: /proc of another namespace */
		errno = ENOENT;
	return ret;
}

/*
 * cowlink_link - make DST a cow link of SRC: flag SRC, then link it.  The
 * directory of DST must carry the flag too, or link() fails with EMLINK.
 * Called copyfile() before: the library's names all start with cowlink_.
 */
int cowlink_link(const char *src, const char *dst)
{
	if (cowlink_get(src) != 1 && cowlink_set(src, 1) < 0)
		return -1;
	return link(src, dst);
}
