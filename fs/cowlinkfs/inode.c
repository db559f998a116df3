// SPDX-License-Identifier: GPL-2.0
/*
 * cowlinkfs: copy-on-write hard links as a stacking filesystem.
 *
 * Inodes: attributes, permissions, xattrs, ACLs and inode flags, all passed
 * to the lower inode; changes go through a link break first.
 */

#include <linux/fs.h>
#include <linux/fs_stack.h>
#include <linux/fileattr.h>
#include <linux/mount.h>
#include <linux/posix_acl.h>
#include <linux/xattr.h>
#include "cowlinkfs.h"

/**
 * cowlinkfs_lower_path - get a reference to the lower path of an inode
 * @inode: cowlinkfs inode
 * @path: filled with the lower dentry and mount, to be released with
 *	  path_put()
 *
 * The lower dentry of a regular file changes when its link is broken, so
 * callers that may race with a break take their own reference here.
 */
void cowlinkfs_lower_path(const struct inode *inode, struct path *path)
{
	struct cowlinkfs_inode *ci = CLI(inode);

	path->mnt = CLSB(inode->i_sb)->lower_mnt;
	spin_lock(&ci->lock);
	path->dentry = ci->lower;
	path_get(path);
	spin_unlock(&ci->lock);
}

/* Copy the attributes the VFS checks on our inode from the lower inode. */
void cowlinkfs_copyattr(struct inode *inode)
{
	struct inode *real = cowlinkfs_lower_inode(inode);
	unsigned int mask = S_SYNC | S_APPEND | S_IMMUTABLE;

	fsstack_copy_attr_all(inode, real);
	fsstack_copy_inode_size(inode, real);
	inode->i_ino = real->i_ino;
	inode->i_flags = (inode->i_flags & ~mask) | (real->i_flags & mask);
}

/*
 * iget5 callbacks, keyed by the lower dentry's inode.  The test also runs
 * on inodes still being set up (I_NEW), so the lower dentry is stored by
 * the set callback, under the hash lock, not after iget5_locked().
 */
static int cowlinkfs_inode_test(struct inode *inode, void *data)
{
	struct dentry *lower = cowlinkfs_lower_peek(inode);

	return lower && d_inode(lower) == d_inode(data);
}

static int cowlinkfs_inode_set(struct inode *inode, void *data)
{
	CLI(inode)->lower = data;
	return 0;
}

/**
 * cowlinkfs_get_inode - the cowlinkfs inode for a lower dentry
 * @sb: cowlinkfs superblock
 * @lower: positive lower dentry; the reference is consumed
 *
 * Directories are looked up by their lower inode, so that one lower
 * directory never has two cowlinkfs inodes.  Every other inode is new and
 * belongs to one name only (see struct cowlinkfs_inode).
 *
 * Return: the inode or an ERR_PTR().
 */
struct inode *cowlinkfs_get_inode(struct super_block *sb, struct dentry *lower)
{
	struct inode *real = d_inode(lower);
	umode_t mode = real->i_mode;
	struct inode *inode;

	if (S_ISDIR(mode)) {
		inode = iget5_locked(sb, (unsigned long)real,
				     cowlinkfs_inode_test, cowlinkfs_inode_set,
				     lower);
		if (inode && !(inode->i_state & I_NEW)) {
			dput(lower);
			return inode;
		}
	} else {
		inode = new_inode(sb);
	}
	if (!inode) {
		dput(lower);
		return ERR_PTR(-ENOMEM);
	}

	CLI(inode)->lower = lower;
	inode->i_mode = mode;
	/* Times are the lower inode's; the VFS must not keep its own. */
	inode->i_flags |= S_NOATIME | S_NOCMTIME;
	cowlinkfs_copyattr(inode);

	switch (mode & S_IFMT) {
	case S_IFREG:
		inode->i_op = &cowlinkfs_file_iops;
		inode->i_fop = &cowlinkfs_file_fops;
		break;
	case S_IFDIR:
		inode->i_op = &cowlinkfs_dir_iops;
		inode->i_fop = &cowlinkfs_dir_fops;
		break;
	case S_IFLNK:
		inode->i_op = &cowlinkfs_symlink_iops;
		break;
	default:
		inode->i_op = &cowlinkfs_special_iops;
		init_special_inode(inode, mode, real->i_rdev);
		break;
	}
	if (inode->i_state & I_NEW)
		unlock_new_inode(inode);
	return inode;
}

int cowlinkfs_getattr(struct user_namespace *mnt_userns,
		      const struct path *path, struct kstat *stat,
		      u32 request_mask, unsigned int flags)
{
	struct inode *inode = d_inode(path->dentry);
	struct path lowerpath;
	int err;

	cowlinkfs_lower_path(inode, &lowerpath);
	err = vfs_getattr(&lowerpath, stat, request_mask, flags);
	path_put(&lowerpath);
	if (err)
		return err;
	/*
	 * st_ino and st_nlink are the lower ones: the inode number changes
	 * when a link is broken, and the other names show one link less.
	 * st_dev is ours, so that (st_dev, st_ino) never mixes the two.
	 */
	stat->dev = inode->i_sb->s_dev;
	cowlinkfs_copyattr(inode);
	return 0;
}

/* Would this change to @inode through its name need a private copy first? */
static bool cowlinkfs_attr_needs_break(struct iattr *attr)
{
	return attr->ia_valid & (ATTR_MODE | ATTR_UID | ATTR_GID | ATTR_SIZE |
				 ATTR_ATIME | ATTR_MTIME | ATTR_CTIME |
				 ATTR_KILL_SUID | ATTR_KILL_SGID);
}

int cowlinkfs_setattr(struct user_namespace *mnt_userns, struct dentry *dentry,
		      struct iattr *attr)
{
	struct inode *inode = d_inode(dentry);
	struct cowlinkfs_sb_info *sbi = CLSB(inode->i_sb);
	struct path lowerpath;
	struct inode *real;
	int err;

	/* Check permission on our inode before anything is copied. */
	cowlinkfs_copyattr(inode);
	err = setattr_prepare(&init_user_ns, dentry, attr);
	if (err)
		return err;

	if (cowlinkfs_attr_needs_break(attr)) {
		err = cowlinkfs_break(dentry);
		if (err)
			return err;
	}

	/* The lower file is not ours to pass on; the lower fs doesn't need it. */
	attr->ia_valid &= ~ATTR_FILE;
	/* As in overlayfs: the lower fs recomputes the mode for KILL_S*ID. */
	if (attr->ia_valid & (ATTR_KILL_SUID | ATTR_KILL_SGID))
		attr->ia_valid &= ~ATTR_MODE;

	err = mnt_want_write(sbi->lower_mnt);
	if (err)
		return err;
	cowlinkfs_lower_path(inode, &lowerpath);
	real = d_inode(lowerpath.dentry);
	inode_lock(real);
	err = notify_change(&init_user_ns, lowerpath.dentry, attr, NULL);
	inode_unlock(real);
	path_put(&lowerpath);
	mnt_drop_write(sbi->lower_mnt);
	cowlinkfs_copyattr(inode);
	return err;
}

int cowlinkfs_permission(struct user_namespace *mnt_userns,
			 struct inode *inode, int mask)
{
	/*
	 * May be called in RCU walk: the lower dentry and inode are freed
	 * after a grace period, so peeking is safe.
	 */
	struct dentry *lower = cowlinkfs_lower_peek(inode);

	if (unlikely(!lower))
		return -ECHILD;
	return inode_permission(&init_user_ns, d_inode(lower), mask);
}

static const char *cowlinkfs_get_link(struct dentry *dentry,
				      struct inode *inode,
				      struct delayed_call *done)
{
	struct dentry *lower;
	const char *p;

	if (!dentry)
		return ERR_PTR(-ECHILD);
	lower = cowlinkfs_lower_peek(inode);
	p = vfs_get_link(lower, done);
	return p;
}

/* Our own xattrs are not visible or changeable through the mount. */
static bool cowlinkfs_is_private_xattr(const char *name)
{
	return !strncmp(name, COWLINKFS_XATTR_PREFIX,
			sizeof(COWLINKFS_XATTR_PREFIX) - 1);
}

ssize_t cowlinkfs_listxattr(struct dentry *dentry, char *list, size_t size)
{
	struct path lowerpath;
	ssize_t res, len;
	char *s;

	cowlinkfs_lower_path(d_inode(dentry), &lowerpath);
	res = vfs_listxattr(lowerpath.dentry, list, size);
	path_put(&lowerpath);
	if (res <= 0 || !size)
		return res;

	/* Filter out our private names; the buffer shrinks in place. */
	for (s = list, len = res; len > 0;) {
		size_t slen = strnlen(s, len) + 1;

		if (WARN_ON(slen > len))
			return -EIO;
		len -= slen;
		if (cowlinkfs_is_private_xattr(s)) {
			res -= slen;
			memmove(s, s + slen, len);
		} else {
			s += slen;
		}
	}
	return res;
}

static int cowlinkfs_xattr_get(const struct xattr_handler *handler,
			       struct dentry *dentry, struct inode *inode,
			       const char *name, void *buffer, size_t size)
{
	const char *full = xattr_full_name(handler, name);
	struct path lowerpath;
	ssize_t res;

	if (cowlinkfs_is_private_xattr(full))
		return -ENODATA;
	cowlinkfs_lower_path(inode, &lowerpath);
	res = vfs_getxattr(&init_user_ns, lowerpath.dentry, full, buffer, size);
	path_put(&lowerpath);
	return res;
}

static int cowlinkfs_xattr_set(const struct xattr_handler *handler,
			       struct user_namespace *mnt_userns,
			       struct dentry *dentry, struct inode *inode,
			       const char *name, const void *value,
			       size_t size, int flags)
{
	const char *full = xattr_full_name(handler, name);
	struct cowlinkfs_sb_info *sbi = CLSB(inode->i_sb);
	struct path lowerpath;
	int err;

	if (cowlinkfs_is_private_xattr(full))
		return -EPERM;
	/* The VFS checked xattr_permission() on our inode already. */
	err = cowlinkfs_break(dentry);
	if (err)
		return err;
	err = mnt_want_write(sbi->lower_mnt);
	if (err)
		return err;
	cowlinkfs_lower_path(inode, &lowerpath);
	if (value)
		err = vfs_setxattr(&init_user_ns, lowerpath.dentry, full,
				   value, size, flags);
	else
		err = vfs_removexattr(&init_user_ns, lowerpath.dentry, full);
	path_put(&lowerpath);
	mnt_drop_write(sbi->lower_mnt);
	cowlinkfs_copyattr(inode);
	return err;
}

/* Every name, ACLs included, goes to the lower filesystem's handlers. */
static const struct xattr_handler cowlinkfs_xattr_handler = {
	.prefix	= "",
	.get	= cowlinkfs_xattr_get,
	.set	= cowlinkfs_xattr_set,
};

const struct xattr_handler *cowlinkfs_xattr_handlers[] = {
	&cowlinkfs_xattr_handler,
	NULL
};

struct posix_acl *cowlinkfs_get_acl(struct inode *inode, int type, bool rcu)
{
	struct inode *real = cowlinkfs_lower_inode(inode);

	if (!IS_POSIXACL(real))
		return NULL;
	if (rcu)
		return get_cached_acl_rcu(real, type);
	return get_acl(real, type);
}

int cowlinkfs_fileattr_get(struct dentry *dentry, struct fileattr *fa)
{
	struct path lowerpath;
	int err;

	cowlinkfs_lower_path(d_inode(dentry), &lowerpath);
	err = vfs_fileattr_get(lowerpath.dentry, fa);
	path_put(&lowerpath);
	return err;
}

int cowlinkfs_fileattr_set(struct user_namespace *mnt_userns,
			   struct dentry *dentry, struct fileattr *fa)
{
	struct inode *inode = d_inode(dentry);
	struct cowlinkfs_sb_info *sbi = CLSB(inode->i_sb);
	struct path lowerpath;
	int err;

	/* vfs_fileattr_set() checked ownership on our inode. */
	err = cowlinkfs_break(dentry);
	if (err)
		return err;
	err = mnt_want_write(sbi->lower_mnt);
	if (err)
		return err;
	cowlinkfs_lower_path(inode, &lowerpath);
	err = vfs_fileattr_set(&init_user_ns, lowerpath.dentry, fa);
	path_put(&lowerpath);
	mnt_drop_write(sbi->lower_mnt);
	cowlinkfs_copyattr(inode);
	return err;
}

static int cowlinkfs_fiemap(struct inode *inode,
			    struct fiemap_extent_info *fieinfo,
			    u64 start, u64 len)
{
	struct inode *real = cowlinkfs_lower_inode(inode);

	if (!real->i_op->fiemap)
		return -EOPNOTSUPP;
	return real->i_op->fiemap(real, fieinfo, start, len);
}

const struct inode_operations cowlinkfs_file_iops = {
	.permission	= cowlinkfs_permission,
	.getattr	= cowlinkfs_getattr,
	.setattr	= cowlinkfs_setattr,
	.listxattr	= cowlinkfs_listxattr,
	.get_acl	= cowlinkfs_get_acl,
	.fiemap		= cowlinkfs_fiemap,
	.fileattr_get	= cowlinkfs_fileattr_get,
	.fileattr_set	= cowlinkfs_fileattr_set,
};

const struct inode_operations cowlinkfs_symlink_iops = {
	.get_link	= cowlinkfs_get_link,
	.getattr	= cowlinkfs_getattr,
	.setattr	= cowlinkfs_setattr,
	.listxattr	= cowlinkfs_listxattr,
};

const struct inode_operations cowlinkfs_special_iops = {
	.permission	= cowlinkfs_permission,
	.getattr	= cowlinkfs_getattr,
	.setattr	= cowlinkfs_setattr,
	.listxattr	= cowlinkfs_listxattr,
	.get_acl	= cowlinkfs_get_acl,
};
