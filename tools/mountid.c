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
