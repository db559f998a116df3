// SPDX-License-Identifier: GPL-2.0
/*
 * cowlinkfs: copy-on-write hard links as a stacking filesystem.
 *
 * Regular files.  Like overlayfs, every cowlinkfs file holds an open lower
 * file and hands the data path to it (read_iter, write_iter, mmap, ...), so
 * file data is cached once, in the lower inode's page cache.
 */

#include <linux/fs.h>
#include <linux/file.h>
#include <linux/fadvise.h>
#include <linux/mm.h>
#include <linux/mount.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/uaccess.h>
#include "cowlinkfs.h"

/*
 * The lower file.  It is replaced at most once (see
 * cowlinkfs_prepare_write()) and the one it replaces stays open until
 * release, so callers need neither a lock nor a reference of their own.
 */
static struct file *cowlinkfs_real(const struct file *file)
{
	return READ_ONCE(CLF(file)->real);
}

/* Flags the lower file gets: creation and truncation were done by us. */
#define COWLINKFS_OPEN_MASK (O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC)

static struct file *cowlinkfs_open_real(struct file *file)
{
	struct path lowerpath;
	struct file *real;

	cowlinkfs_lower_path(file_inode(file), &lowerpath);
	real = dentry_open(&lowerpath, file->f_flags & ~COWLINKFS_OPEN_MASK,
			   current_cred());
	path_put(&lowerpath);
	return real;
}

/**
 * cowlinkfs_prepare_write - break the link before a file is first changed
 * @file: cowlinkfs file about to be written, truncated or mapped shared
 *
 * Breaks the link of the name @file was opened through if that is still
 * needed, and moves @file onto the name's current lower inode, so that
 * every writer through the name writes to the one copy.
 *
 * Return: 0 or a negative errno; on error nothing was changed.
 */
static int cowlinkfs_prepare_write(struct file *file)
{
	struct cowlinkfs_file *cf = CLF(file);
	struct inode *inode = file_inode(file);
	struct file *real;
	int err;

	/* Pairs with the release below: a clear @pending means a final @real. */
	if (likely(!smp_load_acquire(&cf->pending)))
		return 0;
	err = cowlinkfs_break(file_dentry(file));
	if (err)
		return err;

	/*
	 * Another writer may have broken the name after open() looked up
	 * the lower inode: follow the name even if we copied nothing.
	 */
	real = NULL;
	if (file_inode(cowlinkfs_real(file)) != cowlinkfs_lower_inode(inode)) {
		real = cowlinkfs_open_real(file);
		if (IS_ERR(real))
			return PTR_ERR(real);
	}
	spin_lock(&cf->lock);
	if (cf->pending) {
		if (real && file_inode(cf->real) != file_inode(real)) {
			real->f_pos = cf->real->f_pos;
			cf->stale = cf->real;
			WRITE_ONCE(cf->real, real);
			real = NULL;
		}
		/* Pairs with the acquire above: @real is final first. */
		smp_store_release(&cf->pending, false);
	}
	spin_unlock(&cf->lock);
	if (real)
		fput(real);
	cowlinkfs_copyattr(inode);
	return 0;
}

/* Regular files and directories; only regular files break links. */
int cowlinkfs_open(struct inode *inode, struct file *file)
{
	struct cowlinkfs_file *cf;
	struct file *realfile;
	int err;

	/*
	 * The caller passed may_open() on our inode already, so a copy is
	 * made only for someone allowed to write.  O_TRUNC changes the file
	 * right away, and O_RDWR allows a shared writable mmap, whose
	 * ->mmap cannot make a copy: those break at open.  O_WRONLY opens
	 * break at their first change (see struct cowlinkfs_file).
	 */
	if ((file->f_flags & O_TRUNC) ||
	    (file->f_mode & (FMODE_READ | FMODE_WRITE)) ==
	    (FMODE_READ | FMODE_WRITE)) {
		err = cowlinkfs_break(file_dentry(file));
		if (err)
			return err;
	}

	cf = kzalloc(sizeof(*cf), GFP_KERNEL);
	if (!cf)
		return -ENOMEM;
	realfile = cowlinkfs_open_real(file);
	if (IS_ERR(realfile)) {
		kfree(cf);
		return PTR_ERR(realfile);
	}
	spin_lock_init(&cf->lock);
	cf->real = realfile;
	/*
	 * Not just when the lower inode has other links now: a racing
	 * writer may have broken the name between the lookup of the lower
	 * inode above and its link count reaching one, leaving @realfile on
	 * the inode the other names keep.  The first change checks again.
	 */
	cf->pending = (file->f_mode & FMODE_WRITE) && S_ISREG(inode->i_mode);
	file->private_data = cf;
	file->f_mode |= realfile->f_mode & FMODE_CAN_ODIRECT;
	cowlinkfs_copyattr(inode);
	return 0;
}

int cowlinkfs_release(struct inode *inode, struct file *file)
{
	struct cowlinkfs_file *cf = CLF(file);

	fput(cf->real);
	if (cf->stale)
		fput(cf->stale);
	kfree(cf);
	return 0;
}

loff_t cowlinkfs_llseek(struct file *file, loff_t offset, int whence)
{
	struct file *realfile = cowlinkfs_real(file);
	struct inode *inode = file_inode(file);
	loff_t ret;

	/*
	 * Keep one file position, ours; the lower file borrows it, and
	 * checks it (a directory's positions are its own cookies).
	 */
	inode_lock(inode);
	realfile->f_pos = file->f_pos;
	ret = vfs_llseek(realfile, offset, whence);
	file->f_pos = realfile->f_pos;
	inode_unlock(inode);
	return ret;
}

static rwf_t cowlinkfs_iocb_to_rwf(int ifl)
{
	rwf_t flags = 0;

	if (ifl & IOCB_NOWAIT)
		flags |= RWF_NOWAIT;
	if (ifl & IOCB_HIPRI)
		flags |= RWF_HIPRI;
	if (ifl & IOCB_DSYNC)
		flags |= RWF_DSYNC;
	if (ifl & IOCB_SYNC)
		flags |= RWF_SYNC;
	return flags;
}

/*
 * Reads and writes are done synchronously on the lower file; an AIO
 * caller gets its result at once.
 */
static ssize_t cowlinkfs_read_iter(struct kiocb *iocb, struct iov_iter *iter)
{
	if (!iov_iter_count(iter))
		return 0;
	return vfs_iter_read(cowlinkfs_real(iocb->ki_filp), iter, &iocb->ki_pos,
			     cowlinkfs_iocb_to_rwf(iocb->ki_flags));
}

static ssize_t cowlinkfs_write_iter(struct kiocb *iocb, struct iov_iter *iter)
{
	struct file *file = iocb->ki_filp;
	struct file *realfile;
	ssize_t ret;

	if (!iov_iter_count(iter))
		return 0;
	ret = cowlinkfs_prepare_write(file);
	if (ret)
		return ret;
	realfile = cowlinkfs_real(file);
	file_start_write(realfile);
	ret = vfs_iter_write(realfile, iter, &iocb->ki_pos,
			     cowlinkfs_iocb_to_rwf(iocb->ki_flags));
	file_end_write(realfile);
	cowlinkfs_copyattr(file_inode(file));
	return ret;
}

static int cowlinkfs_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct file *realfile;

	/*
	 * No break here: we hold mmap_lock, which the write path takes
	 * inside sb_writers.  None is needed either: a shared writable
	 * mapping needs O_RDWR, and O_RDWR opens break at open.
	 */
	if (WARN_ON(file != vma->vm_file))
		return -EIO;
	realfile = cowlinkfs_real(file);
	if (!realfile->f_op->mmap)
		return -ENODEV;
	/* The mapping belongs to the lower file from now on. */
	vma_set_file(vma, realfile);
	return call_mmap(vma->vm_file, vma);
}

int cowlinkfs_fsync(struct file *file, loff_t start, loff_t end,
		    int datasync)
{
	return vfs_fsync_range(cowlinkfs_real(file), start, end, datasync);
}

static int cowlinkfs_flush(struct file *file, fl_owner_t id)
{
	struct file *realfile = cowlinkfs_real(file);

	if (realfile->f_op->flush)
		return realfile->f_op->flush(realfile, id);
	return 0;
}

static long cowlinkfs_fallocate(struct file *file, int mode, loff_t offset,
				loff_t len)
{
	struct file *realfile;
	long ret;

	ret = cowlinkfs_prepare_write(file);
	if (ret)
		return ret;
	realfile = cowlinkfs_real(file);
	ret = vfs_fallocate(realfile, mode, offset, len);
	cowlinkfs_copyattr(file_inode(file));
	return ret;
}

static int cowlinkfs_fadvise(struct file *file, loff_t offset, loff_t len,
			     int advice)
{
	return vfs_fadvise(cowlinkfs_real(file), offset, len, advice);
}

static ssize_t cowlinkfs_copy_file_range(struct file *in, loff_t pos_in,
					 struct file *out, loff_t pos_out,
					 size_t len, unsigned int flags)
{
	struct file *realin, *realout;
	ssize_t ret;

	ret = cowlinkfs_prepare_write(out);
	if (ret)
		return ret;
	realin = cowlinkfs_real(in);
	realout = cowlinkfs_real(out);
	ret = vfs_copy_file_range(realin, pos_in, realout, pos_out, len, flags);
	cowlinkfs_copyattr(file_inode(out));
	return ret;
}

static loff_t cowlinkfs_remap_file_range(struct file *in, loff_t pos_in,
					 struct file *out, loff_t pos_out,
					 loff_t len, unsigned int flags)
{
	struct file *realin, *realout;
	loff_t ret;

	if (flags & ~(REMAP_FILE_DEDUP | REMAP_FILE_ADVISORY))
		return -EINVAL;
	ret = cowlinkfs_prepare_write(out);
	if (ret)
		return ret;
	realin = cowlinkfs_real(in);
	realout = cowlinkfs_real(out);
	if (flags & REMAP_FILE_DEDUP)
		ret = vfs_dedupe_file_range_one(realin, pos_in, realout,
						pos_out, len, flags);
	else
		ret = vfs_clone_file_range(realin, pos_in, realout, pos_out,
					   len, flags);
	cowlinkfs_copyattr(file_inode(out));
	return ret;
}

/**
 * cowlinkfs_ioctl - the COW flag ioctls, and the lower file's own ones
 * @file: a cowlinkfs file or directory
 * @cmd: ioctl number
 * @arg: user pointer or value
 *
 * FS_IOC_GETFLAGS and friends never get here: the VFS calls our
 * ->fileattr_get/set.  Anything else goes to the lower file, which was
 * opened with the same access mode; a writer's link is broken first.
 *
 * Return: 0 or the ioctl's result, negative errno on failure.
 */
long cowlinkfs_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	int __user *uarg = (int __user *)arg;
	struct file *realfile;
	long ret;
	int val;

	switch (cmd) {
	case COWLINK_IOC_GETCOW:
		val = cowlinkfs_get_cow(file_inode(file));
		return put_user(val, uarg);
	case COWLINK_IOC_SETCOW:
		if (get_user(val, uarg))
			return -EFAULT;
		return cowlinkfs_set_cow(file_inode(file), val != 0);
	}
	/* The lower fs's own ioctls may change the file: break first. */
	if (file->f_mode & FMODE_WRITE) {
		ret = cowlinkfs_prepare_write(file);
		if (ret)
			return ret;
	}
	realfile = cowlinkfs_real(file);
	if (!realfile->f_op->unlocked_ioctl)
		return -ENOTTY;
	return vfs_ioctl(realfile, cmd, arg);
}

const struct file_operations cowlinkfs_file_fops = {
	.open			= cowlinkfs_open,
	.release		= cowlinkfs_release,
	.llseek			= cowlinkfs_llseek,
	.read_iter		= cowlinkfs_read_iter,
	.write_iter		= cowlinkfs_write_iter,
	.mmap			= cowlinkfs_mmap,
	.fsync			= cowlinkfs_fsync,
	.flush			= cowlinkfs_flush,
	.fallocate		= cowlinkfs_fallocate,
	.fadvise		= cowlinkfs_fadvise,
	.splice_read		= generic_file_splice_read,
	.splice_write		= iter_file_splice_write,
	.copy_file_range	= cowlinkfs_copy_file_range,
	.remap_file_range	= cowlinkfs_remap_file_range,
	.unlocked_ioctl		= cowlinkfs_ioctl,
	.compat_ioctl		= compat_ptr_ioctl,
};
