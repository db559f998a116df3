// SPDX-License-Identifier: GPL-2.0
/*
 * mount_id: which mount a path is on.  st_dev tells the filesystem only,
 * and link() also needs one mount (EXDEV across two bind mounts of one
 * filesystem).  glibc's struct statx hides stx_mnt_id, so this file uses
 * the kernel's, and includes nothing that declares glibc's.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/stat.h>
#include "mountid.h"

#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT	0x00002000	/* Linux 5.8 */
#endif

int mount_id(const char *path, unsigned long long *id)
{
	struct statx stx;

	if (syscall(SYS_statx, AT_FDCWD, path, 0, STATX_MNT_ID, &stx) < 0)
		return -1;
	if (!(stx.stx_mask & STATX_MNT_ID)) {	/* before Linux 5.8 */
		errno = ENOSYS;
		return -1;
	}
	*id = stx.stx_mnt_id;
	return 0;
}

/*
 * A bind mount of a filesystem onto a name of the same one keeps st_dev,
 * which is the superblock's: only the mount knows it is a mount point.
 * A symlink NAME is not followed; a mount on NAME is, as any lookup does.
 * -1 with ENOSYS before Linux 5.8, whose statx() does not say.
 */
int mount_root(int dirfd, const char *name)
{
	int flags = AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT;
	struct statx stx;

	if (!*name)
		flags |= AT_EMPTY_PATH;
	if (syscall(SYS_statx, dirfd, name, flags, 0, &stx) < 0)
		return -1;
	if (!(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)) {
		errno = ENOSYS;
		return -1;
	}
	return (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
}
