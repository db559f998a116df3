// SPDX-License-Identifier: GPL-2.0
/*
 * cowlinkfs: copy-on-write hard links as a stacking filesystem.
 *
 * The COW flag: where it is stored, how new files inherit it, and the
 * link() and rename() rules that keep cow links among cow directories.
 */

#include <linux/error-injection.h>
#include <linux/fs.h>
#include <linux/mount.h>
#include <linux/xattr.h>
#include "cowlinkfs.h"

/**
 * cowlinkfs_get_cow - is the COW flag set on an inode?
 * @inode: cowlinkfs inode
 *
 * The flag belongs to the lower inode, which every unbroken name of a file
 * shares, while each name has a cowlinkfs inode of its own: a change made
 * through one name must be seen through all the others at once.  So the
 * flag is not cached here but read from the lower inode every time;
 * __vfs_getxattr() of an in-inode xattr costs little next to a link, a
 * create or a break, the only callers that need it.
 *
 * A failure to read it (ENOMEM, EIO) is an error, not "no flag": taken
 * for one, it would let a write through to every name.
 *
 * Return: 1 if set, 0 if not, or a negative errno.
 */
int cowlinkfs_get_cow(struct inode *inode)
{
	struct path lowerpath;
	int res;

	cowlinkfs_lower_path(inode, &lowerpath);
	res = cowlinkfs_lower_cow(lowerpath.dentry);
	path_put(&lowerpath);
	return res;
}

/**
 * cowlinkfs_lower_cow - is the COW flag set on a lower inode?
 * @lower: positive lower dentry
 *
 * What cowlinkfs_get_cow() reads, for a lower inode that has no cowlinkfs
 * inode yet (see cowlinkfs_shares_inode()).
 *
 * Return: 1 if set, 0 if not, or a negative errno.
 */
int cowlinkfs_lower_cow(struct dentry *lower)
{
	char val;
	ssize_t res;

	/* Not vfs_getxattr(): trusted.* is ours to read whoever asks. */
	res = __vfs_getxattr(lower, d_inode(lower), COWLINKFS_XATTR_COW,
			     &val, 1);
	if (res == -ENODATA || res == -EOPNOTSUPP || res == -ERANGE)
		return 0;
	if (res < 0)
		return res;
	return res == 1 && val == '1';
}

/**
 * cowlinkfs_is_cow - do writes to this inode break its links?
 * @inode: cowlinkfs inode
 *
 * Return: 1 for regular files that carry the flag, or for every regular
 * file on a cow=all mount, 0 for others, or a negative errno.
 */
int cowlinkfs_is_cow(struct inode *inode)
{
	if (!S_ISREG(inode->i_mode))
		return 0;
	if (READ_ONCE(COWLINKFS_SB(inode->i_sb)->cow_mode) == COWLINKFS_COW_ALL)
		return 1;
	return cowlinkfs_get_cow(inode);
}

/* Write or remove the flag on a lower dentry; mounter's creds, write access held. */
static int cowlinkfs_write_flag(struct dentry *lower, bool on)
{
	int err;

	if (on)
		return vfs_setxattr(cowlinkfs_userns(), lower, COWLINKFS_XATTR_COW,
				    "1", 1, 0);
	err = vfs_removexattr(cowlinkfs_userns(), lower, COWLINKFS_XATTR_COW);
	return err == -ENODATA ? 0 : err;
}

/**
 * cowlinkfs_set_cow - set or clear the COW flag (COWLINKFS_IOC_SETCOW)
 * @file: cowlinkfs file or directory the ioctl came through
 * @on: the new value
 *
 * Like chattr, this needs ownership or CAP_FOWNER, and write access to
 * the mount: a read-only mount or bind mount of cowlinkfs gives EROFS.  A
 * multi-link file that is open for writing cannot become COW: its writers
 * already share the one inode (ETXTBSY).  Only regular files and
 * directories have our file operations, and so this ioctl.
 *
 * A plain regular file shares one inode among its names (see struct
 * cowlinkfs_inode).  Set through any name, the flag takes that inode out
 * of the hash: the names looked up from now on get inodes of their own,
 * the names still on it are looked up again at their next path walk once
 * the file has other links (cowlinkfs_d_revalidate()), and a change
 * through one of them before that is refused with ESTALE, which path
 * calls retry (cowlinkfs_break_shared()).  Locks, leases and watches
 * taken on the shared inode stay with it and with the descriptors open
 * on it.  Cleared through a name still on that inode, it goes back into
 * the hash (cowlinkfs_reshare_inode()); the next walk of such a name does
 * the same whichever name the flag was cleared through.
 *
 * Return: 0 or a negative errno.
 */
int cowlinkfs_set_cow(struct file *file, bool on)
{
	struct inode *inode = file_inode(file);
	struct cowlinkfs_inode *ci = COWLINKFS_I(inode);
	const struct cred *old_cred;
	struct path lowerpath;
	struct inode *real;
	int err;

	if (!cowlinkfs_owner_or_capable(inode))
		return -EPERM;

	err = mnt_want_write_file(file);
	if (err)
		return err;
	err = cowlinkfs_want_write(inode->i_sb);
	if (err)
		goto out_drop_file;
	mutex_lock(&ci->break_mutex);
	cowlinkfs_lower_path(inode, &lowerpath);
	real = d_inode(lowerpath.dentry);
	/*
	 * Writers through other names, or through a removed one whose
	 * inode this name now has alone, would write every name.  A shared
	 * inode counts the writers of every name, a removed one's too.
	 */
	if (on && S_ISREG(real->i_mode) && inode_is_open_for_write(real) &&
	    (real->i_nlink > 1 || atomic_read(&real->i_writecount) >
	     atomic_read(&inode->i_writecount) ||
	     (cowlinkfs_inode_shared(inode) &&
	      cowlinkfs_lower_shared(inode)))) {
		err = -ETXTBSY;
	} else {
		old_cred = cowlinkfs_override_creds(inode->i_sb);
		err = cowlinkfs_write_flag(lowerpath.dentry, on);
		revert_creds(old_cred);
	}
	mutex_unlock(&ci->break_mutex);
	cowlinkfs_drop_write(inode->i_sb);
	/*
	 * Once the flag is written: a lookup that read it clear before
	 * and hashes a shared inode after is met by the break path.
	 */
	if (!err && on && S_ISREG(real->i_mode))
		cowlinkfs_unshare_inode(inode->i_sb, lowerpath.dentry);
	else if (!err && S_ISREG(real->i_mode) && cowlinkfs_inode_shared(inode))
		cowlinkfs_reshare_inode(inode);
	path_put(&lowerpath);
out_drop_file:
	mnt_drop_write_file(file);
	cowlinkfs_copyattr(inode);
	return err;
}

/**
 * cowlinkfs_inherit_cow - give a new file or directory its parent's flag
 * @dir: cowlinkfs parent directory
 * @lower: the new lower dentry, its directory locked, write access held
 *
 * Return: 0 or a negative errno.
 */
noinline int cowlinkfs_inherit_cow(struct inode *dir, struct dentry *lower)
{
	const struct cred *old_cred;
	int err;

	err = cowlinkfs_get_cow(dir);
	if (err <= 0)
		return err;
	old_cred = cowlinkfs_override_creds(dir->i_sb);
	err = cowlinkfs_write_flag(lower, true);
	revert_creds(old_cred);
	return err;
}

ALLOW_ERROR_INJECTION(cowlinkfs_inherit_cow, ERRNO);

/**
 * cowlinkfs_check_link - may @inode get a new name in @dir?
 * @inode: cowlinkfs inode being linked
 * @dir: the directory of the new name
 *
 * A regular file whose flag differs from the target directory's cannot
 * be linked there (EMLINK): a cow link stays in
 * cow directories.  A COW file that is open for writing cannot gain a name
 * either (ETXTBSY), since its writers would write to both names; unless
 * it has none (an O_TMPFILE file), which its writers then write to alone.
 *
 * Return: 0 or a negative errno.
 */
int cowlinkfs_check_link(struct inode *inode, struct inode *dir)
{
	int cow, dcow;
	bool busy;

	if (!S_ISREG(inode->i_mode))
		return 0;
	cow = cowlinkfs_is_cow(inode);
	if (cow < 0)
		return cow;
	if (READ_ONCE(COWLINKFS_SB(inode->i_sb)->cow_mode) == COWLINKFS_COW_FLAG) {
		dcow = cowlinkfs_get_cow(dir);
		if (dcow < 0)
			return dcow;
		if (cow != dcow)
			return -EMLINK;
	}
	if (cow) {
		struct inode *real;

		/* A racing break may drop the old lower dentry: RCU frees it. */
		rcu_read_lock();
		real = cowlinkfs_lower_inode_rcu(inode);
		busy = !real || (real->i_nlink && inode_is_open_for_write(real));
		rcu_read_unlock();
		if (busy)
			return -ETXTBSY;
	}
	return 0;
}

/**
 * cowlinkfs_check_rename - may @inode move from @old_dir to @new_dir?
 * @old_dir: source directory
 * @inode: the inode being moved (may be NULL)
 * @new_dir: target directory
 *
 * A rename within one directory always works; across directories, a
 * regular file or directory whose flag differs from the target
 * directory's is refused with EMLINK; special files and symlinks move
 * freely.
 *
 * Return: 0, -EMLINK or another negative errno.
 */
int cowlinkfs_check_rename(struct inode *old_dir, struct inode *inode,
			   struct inode *new_dir)
{
	int cow, dcow;

	if (!inode || old_dir == new_dir)
		return 0;
	if (!S_ISREG(inode->i_mode) && !S_ISDIR(inode->i_mode))
		return 0;
	if (READ_ONCE(COWLINKFS_SB(inode->i_sb)->cow_mode) == COWLINKFS_COW_ALL)
		return 0;
	cow = cowlinkfs_get_cow(inode);
	if (cow < 0)
		return cow;
	dcow = cowlinkfs_get_cow(new_dir);
	if (dcow < 0)
		return dcow;
	return cow == dcow ? 0 : -EMLINK;
}
