// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libcowlink: get and set the cowlinkfs COW flag, and copyfile(), the
 * library call the cowlinks patch listed as its user-space TODO.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include "cowlinkfs.h"
#include "libcowlink.h"

int cowlink_fget(int fd)
{
	int v;

	if (ioctl(fd, COWLINK_IOC_GETCOW, &v) < 0)
		return -1;
	return v != 0;
}

int cowlink_fset(int fd, int on)
{
	int v = on != 0;

	return ioctl(fd, COWLINK_IOC_SETCOW, &v) < 0 ? -1 : 0;
}

/* Open PATH for the flag ioctls: regular files and directories only. */
static int cowlink_open(const char *path)
{
	struct stat st;
	int fd, err;

	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		close(fd);
		errno = EINVAL;
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
 * copyfile - make DST a cow link of SRC: flag SRC, then link it.  The
 * directory of DST must carry the flag too, or link() fails with EMLINK.
 */
int copyfile(const char *src, const char *dst)
{
	if (cowlink_get(src) != 1 && cowlink_set(src, 1) < 0)
		return -1;
	return link(src, dst);
}
