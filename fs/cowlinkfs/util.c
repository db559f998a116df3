// SPDX-License-Identifier: GPL-2.0
/*
 * cowlinkfs: copy-on-write hard links as a stacking filesystem.
 *
 * Helpers: credentials, the lower path of an inode, and write access to
 * the lower mount around a change of a name's lower inode.
 */

#include <linux/fs.h>
#include <linux/file.h>
#include <linux/mount.h>
#include <linux/slab.h>
#include "cowlinkfs.h"

/**
 * cowlinkfs_override_creds - act with the credentials of the mounter
 * @sb: the cowlinkfs superblock
 *
 * Private work on the lower filesystem (the COW flag xattr, link breaks,
 * the work directory) is done as the task that mounted cowlinkfs, as
 * overlayfs does for copy-up: the caller's permission has been checked on
 * the cowlinkfs inode before.
 *
 * Return: the old credentials, for revert_creds().
 */
const struct cred *cowlinkfs_override_creds(struct super_block *sb)
{
	return override_creds(COWLINKFS_SB(sb)->creator_cred);
}

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
	struct cowlinkfs_inode *ci = COWLINKFS_I(inode);

	path->mnt = COWLINKFS_SB(inode->i_sb)->lower_root.mnt;
	spin_lock(&ci->lock);
	path->dentry = ci->lower;
	path_get(path);
	spin_unlock(&ci->lock);
}

/**
 * cowlinkfs_dentry_lower_path - get a reference to the lower path of a name
 * @dentry: positive cowlinkfs dentry
 * @path: filled with the name's lower dentry and mount, to be released with
 *	  path_put()
 *
 * For a name of a shared inode, the name's own lower dentry (the inode's
 * is another name's); otherwise as cowlinkfs_lower_path().
 */
void cowlinkfs_dentry_lower_path(const struct dentry *dentry, struct path *path)
{
	struct inode *inode = d_inode(dentry);

	if (!cowlinkfs_inode_shared(inode)) {
		cowlinkfs_lower_path(inode, path);
		return;
	}
	path->mnt = COWLINKFS_SB(inode->i_sb)->lower_root.mnt;
	path->dentry = dentry->d_fsdata;
	path_get(path);
}

/*
 * Open the lower file of @file, whose name may have a new lower inode
 * since @file was opened.  On the name's own lower dentry: for a shared
 * inode the inode's is another name's, maybe a removed one, which
 * /proc/PID/maps and an LSM mediating by path would see.
 */
struct file *cowlinkfs_open_real(struct file *file)
{
	struct path lowerpath;
	struct file *real;

	cowlinkfs_dentry_lower_path(file->f_path.dentry, &lowerpath);
	/* The opener's credentials, also when a later writer reopens. */
	real = dentry_open(&lowerpath, cowlinkfs_real_flags(file->f_flags),
			   file->f_cred);
	path_put(&lowerpath);
	return real;
}

/**
 * cowlinkfs_file_setup - make @real the lower file of our @file
 * @file: cowlinkfs file being opened, regular file or directory
 * @real: its open lower file
 *
 * Return: the new struct cowlinkfs_file, or NULL without memory, @real
 * then still the caller's.
 */
struct cowlinkfs_file *cowlinkfs_file_setup(struct file *file,
					    struct file *real)
{
	struct cowlinkfs_file *cf = kzalloc(sizeof(*cf), GFP_KERNEL);

	if (!cf)
		return NULL;
	spin_lock_init(&cf->lock);
	cf->real = real;
	file->private_data = cf;
	/* O_DIRECT where the lower file allows it (ext2 directories too). */
	file->f_mode |= real->f_mode & FMODE_CAN_ODIRECT;
	/*
	 * The data is cached in the lower inode's mapping: sync_file_range()
	 * and the writeback errors it reports work on f_mapping.
	 */
	file->f_mapping = real->f_mapping;
	file->f_wb_err = real->f_wb_err;
	cowlinkfs_copyattr(file_inode(file));
	return cf;
}

/**
 * cowlinkfs_file_swap - make @real the lower file of @file from now on
 * @file: cowlinkfs regular file whose name has a new lower inode
 * @real: the lower file on that inode; the reference is taken over
 * @stale: a free list entry, taken over
 *
 * The lower file replaced stays open until release, so that a racing read
 * or write can go on using it without a reference of its own.  Caller
 * holds the file's lock.
 */
void cowlinkfs_file_swap(struct file *file, struct file *real,
			 struct cowlinkfs_stale *stale)
{
	struct cowlinkfs_file *cf = COWLINKFS_F(file);

	lockdep_assert_held(&cf->lock);
	real->f_pos = cf->real->f_pos;
	stale->file = cf->real;
	stale->next = cf->stale;
	cf->stale = stale;
	/*
	 * Not under an O_RDWR file: mmap_region() counts a shared writable
	 * mapping on f_mapping before ->mmap and uncounts it after, which
	 * must be one mapping.  Such a file is on the name's inode from its
	 * open on (cowlinkfs_open() checks), and moves only in a race.
	 */
	if (!(file->f_mode & FMODE_READ) || !(file->f_mode & FMODE_WRITE)) {
		WRITE_ONCE(file->f_mapping, real->f_mapping);
		file->f_wb_err = real->f_wb_err;
	}
	WRITE_ONCE(cf->real, real);
}

/* ->release of regular files and directories */
int cowlinkfs_release(struct inode *inode, struct file *file)
{
	struct cowlinkfs_file *cf = COWLINKFS_F(file);
	struct cowlinkfs_stale *stale, *next;

	if (cf->deny_write)
		allow_write_access(cf->real);
	fput(cf->real);
	for (stale = cf->stale; stale; stale = next) {
		next = stale->next;
		fput(stale->file);
		kfree(stale);
	}
	kfree(cf);
	return 0;
}

/**
 * cowlinkfs_do_rename - rename in the lower fs
 * @olddir: lower directory of @old
 * @old: lower dentry to move
 * @newdir: lower directory of @new
 * @new: lower dentry to replace or fill
 * @flags: RENAME_* flags
 *
 * Both directories are locked with lock_rename() and write access to the
 * lower mount is held.
 *
 * Return: 0 or a negative errno.
 */
int cowlinkfs_do_rename(struct dentry *olddir, struct dentry *old,
			struct dentry *newdir, struct dentry *new,
			unsigned int flags)
{
	struct renamedata rd = {
		.old_mnt_userns	= cowlinkfs_userns(),
		.old_dir	= d_inode(olddir),
		.old_dentry	= old,
		.new_mnt_userns	= cowlinkfs_userns(),
		.new_dir	= d_inode(newdir),
		.new_dentry	= new,
		.flags		= flags,
	};

	return vfs_rename(&rd);
}

/*
 * Write access to the lower mount for a change of the lower fs, as
 * ovl_want_write() takes it on the upper mount.  It comes before
 * break_mutex and any lower i_rwsem (see the lock order in cowlinkfs.h).
 */
int cowlinkfs_want_write(struct super_block *sb)
{
	return mnt_want_write(COWLINKFS_SB(sb)->lower_root.mnt);
}

void cowlinkfs_drop_write(struct super_block *sb)
{
	mnt_drop_write(COWLINKFS_SB(sb)->lower_root.mnt);
}

/**
 * cowlinkfs_change_begin - get ready to change the lower inode of a name
 * @dentry: cowlinkfs dentry of the name
 * @need_break: give the name its own copy first, if it shares a COW inode
 * @lowerpath: filled with the lower path to change
 *
 * For a change of attributes, xattrs or inode flags whose permission the
 * caller has checked (a refused caller never causes a copy): breaks the
 * name's link if asked, takes write access to the lower mount and returns
 * the name's lower path, the copy's after a break.  Undone by
 * cowlinkfs_change_end().
 *
 * Return: 0, or a negative errno with nothing held.
 */
int cowlinkfs_change_begin(struct dentry *dentry, bool need_break,
			   struct path *lowerpath)
{
	struct inode *inode = d_inode(dentry);
	int err;

	if (need_break) {
		err = cowlinkfs_break(dentry);
		if (err)
			return err;
	}
	err = cowlinkfs_want_write(inode->i_sb);
	if (err)
		return err;
	cowlinkfs_dentry_lower_path(dentry, lowerpath);
	return 0;
}

/* Drop what cowlinkfs_change_begin() took; the lower inode has changed. */
void cowlinkfs_change_end(struct dentry *dentry, struct path *lowerpath)
{
	struct inode *inode = d_inode(dentry);

	path_put(lowerpath);
	cowlinkfs_drop_write(inode->i_sb);
	cowlinkfs_copyattr(inode);
}
