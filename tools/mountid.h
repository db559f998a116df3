/* SPDX-License-Identifier: GPL-2.0 */
#ifndef MOUNTID_H
#define MOUNTID_H

/* The mount ID of PATH (statx STATX_MNT_ID), following symlinks. */
int mount_id(const char *path, unsigned long long *id);

/* Is NAME in DIRFD ("": DIRFD itself) the root of a mount: 1, 0 or -1. */
int mount_root(int dirfd, const char *name);

#endif
