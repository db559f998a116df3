/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * cowlinkfs user interface: the copy-on-write link flag.
 *
 * These ioctls are the stacking-filesystem form of the F_GETCOW/F_SETCOW
 * fcntls of Jörn Engel's cowlinks patch (2004).  They work on any file or
 * directory opened through a cowlinkfs mount (O_RDONLY is enough).
 */
#ifndef _UAPI_LINUX_COWLINKFS_H
#define _UAPI_LINUX_COWLINKFS_H

#include <linux/ioctl.h>

#define COWLINKFS_SUPER_MAGIC	0x636f776c	/* "cowl" */

/* Read the flag: *arg becomes 1 if set, 0 if not. */
#define COWLINK_IOC_GETCOW	_IOR('f', 0xc0, int)
/* Set (*arg != 0) or clear (*arg == 0) the flag; owner or CAP_FOWNER. */
#define COWLINK_IOC_SETCOW	_IOW('f', 0xc1, int)

#endif /* _UAPI_LINUX_COWLINKFS_H */
