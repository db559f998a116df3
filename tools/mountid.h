/* SPDX-License-Identifier: GPL-2.0 */
#ifndef MOUNTID_H
#define MOUNTID_H

/* The mount ID of PATH (statx STATX_MNT_ID), following symlinks. */
int mount_id(const char *path, unsigned long long *id);

#endif
