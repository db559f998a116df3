// SPDX-License-Identifier: GPL-2.0
/*
 * cowlinkfs: copy-on-write hard links as a stacking filesystem.
 *
 * Directory files: open and release, and readdir of the lower directory,
 * less the work directory.
 */

#include <linux/fs.h>
#include <linux/file.h>
#include "cowlinkfs.h"

static int cowlinkfs_dir_open(struct inode *inode, struct file *file)
{
	struct file *realfile;

	/* may_open() checked O_NOATIME on our inode, maybe a stale owner. */
	if ((file->f_flags & O_NOATIME) && !cowlinkfs_owner_or_capable(inode))
		return -EPERM;
	realfile = cowlinkfs_open_real(file);
	if (IS_ERR(realfile))
		return PTR_ERR(realfile);
	if (!cowlinkfs_file_setup(file, realfile)) {
		fput(realfile);
		return -ENOMEM;
	}
	return 0;
}

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
	struct file *realfile = COWLINKFS_F(file)->real;
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

const struct file_operations cowlinkfs_dir_fops = {
	.open		= cowlinkfs_dir_open,
	.release	= cowlinkfs_release,
	.read		= generic_read_dir,
	.iterate_shared	= cowlinkfs_iterate,
	.llseek		= cowlinkfs_llseek,
	.fsync		= cowlinkfs_fsync,
	.unlocked_ioctl	= cowlinkfs_ioctl,
	.compat_ioctl	= cowlinkfs_compat_ioctl,
};
