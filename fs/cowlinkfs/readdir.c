// SPDX-License-Identifier: GPL-2.0
/*
 * cowlinkfs: copy-on-write hard links as a stacking filesystem.
 *
 * Directory files: readdir of the lower directory, less the work directory.
 */

#include <linux/fs.h>
#include <linux/file.h>
#include <linux/slab.h>
#include "cowlinkfs.h"

struct cowlinkfs_readdir {
	struct dir_context ctx;
	struct dir_context *caller;
	struct dentry *dentry;
};

static bool cowlinkfs_filldir(struct dir_context *ctx, const char *name,
			      int len, loff_t offset, u64 ino,
			      unsigned int d_type)
{
	struct cowlinkfs_readdir *rd =
		container_of(ctx, struct cowlinkfs_readdir, ctx);

	if (cowlinkfs_is_workdir_name(rd->dentry, name, len))
		return true;
	rd->caller->pos = ctx->pos;
	return rd->caller->actor(rd->caller, name, len, offset, ino, d_type);
}

static int cowlinkfs_iterate(struct file *file, struct dir_context *ctx)
{
	struct file *realfile = CLF(file)->real;
	struct cowlinkfs_readdir rd = {
		.ctx.actor = cowlinkfs_filldir,
		.ctx.pos = ctx->pos,
		.caller = ctx,
		.dentry = file_dentry(file),
	};
	int err;

	realfile->f_pos = ctx->pos;
	err = iterate_dir(realfile, &rd.ctx);
	ctx->pos = rd.ctx.pos;
	cowlinkfs_copyattr(file_inode(file));
	return err;
}

static int cowlinkfs_dir_open(struct inode *inode, struct file *file)
{
	struct cowlinkfs_file *cf;
	struct path lowerpath;
	struct file *realfile;

	cf = kzalloc(sizeof(*cf), GFP_KERNEL);
	if (!cf)
		return -ENOMEM;
	cowlinkfs_lower_path(inode, &lowerpath);
	realfile = dentry_open(&lowerpath, file->f_flags, current_cred());
	path_put(&lowerpath);
	if (IS_ERR(realfile)) {
		kfree(cf);
		return PTR_ERR(realfile);
	}
	/* A directory's lower file never changes. */
	spin_lock_init(&cf->lock);
	cf->real = realfile;
	file->private_data = cf;
	return 0;
}

static int cowlinkfs_dir_release(struct inode *inode, struct file *file)
{
	fput(CLF(file)->real);
	kfree(CLF(file));
	return 0;
}

static loff_t cowlinkfs_dir_llseek(struct file *file, loff_t offset,
				   int whence)
{
	struct file *realfile = CLF(file)->real;
	loff_t ret;

	/* Positions are the lower directory's cookies: let it check them. */
	inode_lock(file_inode(file));
	realfile->f_pos = file->f_pos;
	ret = vfs_llseek(realfile, offset, whence);
	file->f_pos = realfile->f_pos;
	inode_unlock(file_inode(file));
	return ret;
}

static int cowlinkfs_dir_fsync(struct file *file, loff_t start, loff_t end,
			       int datasync)
{
	return vfs_fsync_range(CLF(file)->real, start, end, datasync);
}

const struct file_operations cowlinkfs_dir_fops = {
	.open		= cowlinkfs_dir_open,
	.release	= cowlinkfs_dir_release,
	.read		= generic_read_dir,
	.iterate_shared	= cowlinkfs_iterate,
	.llseek		= cowlinkfs_dir_llseek,
	.fsync		= cowlinkfs_dir_fsync,
	.unlocked_ioctl	= cowlinkfs_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
};
