/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * cowlinkfs user interface: the copy-on-write link flag.
 *
 * The ioctls work on any file or directory opened through a cowlinkfs
 * mount (O_RDONLY is enough).  Every other ioctl goes to the lower
 * filesystem, so ours must not be one of its numbers: they use a type
 * byte that Documentation/userspace-api/ioctl/ioctl-number.rst leaves
 * free, not the 'f' range of the FS_IOC_* ioctls.
 */
#ifndef _UAPI_LINUX_COWLINKFS_H
#define _UAPI_LINUX_COWLINKFS_H

#include <linux/ioctl.h>

#define COWLINKFS_SUPER_MAGIC	0x636f776c	/* "cowl" */

#define COWLINKFS_IOC_MAGIC	0xC7

/* Read the flag: *arg becomes 1 if set, 0 if not. */
#define COWLINKFS_IOC_GETCOW	_IOR(COWLINKFS_IOC_MAGIC, 0x01, int)
/* Set (*arg != 0) or clear (*arg == 0) the flag; owner or CAP_FOWNER. */
#define COWLINKFS_IOC_SETCOW	_IOW(COWLINKFS_IOC_MAGIC, 0x02, int)

#endif /* _UAPI_LINUX_COWLINKFS_H */
