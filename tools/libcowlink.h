/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libcowlink: user-space side of cowlinkfs, the copy-on-write link flag.
 * See libcowlink(3).
 *
 * All functions return 0 (or the flag) on success and -1 with errno set
 * on failure.  ENOTTY means "not on a cowlinkfs mount".
 */
#ifndef LIBCOWLINK_H
#define LIBCOWLINK_H

#ifdef __cplusplus
extern "C" {
#endif

int cowlink_fget(int fd);
int cowlink_fset(int fd, int on);
int cowlink_get(const char *path);
int cowlink_set(const char *path, int on);
int cowlink_is_cowlinkfs(const char *path);
int cowlink_mount_cow_all(const char *path);
int cowlink_link(const char *src, const char *dst);

#ifdef __cplusplus
}
#endif

#endif
