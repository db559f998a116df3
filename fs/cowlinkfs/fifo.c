// SPDX-License-Identifier: GPL-2.0
/*
 * cowlinkfs: copy-on-write hard links as a stacking filesystem.
 *
 * FIFOs.  A FIFO's pipe lives in the VFS inode it is opened on:
 * fifo_open() keeps it in i_pipe and counts its files under that inode's
 * i_lock.  A FIFO opened on our inode would get a pipe of its own, which a
 * reader or writer that opens the same FIFO in the lower directory never
 * meets.  So a FIFO opened through the mount opens the lower FIFO, as the
 * opener, and every call on it goes to that lower file: readers and
 * writers meet whichever side they open it on, and the lower fs's
 * open-time rules (a reader waiting for a writer, ENXIO for a
 * non-blocking writer without a reader) are the lower FIFO's own.
 *
 * What a stacked FIFO cannot be is a pipe to the VFS: get_pipe_info()
 * knows a pipe by its file operations, so splice(2) and tee(2) to or from
 * the file and sendfile(2) into it get EINVAL, and vmsplice(2),
 * F_GETPIPE_SZ and F_SETPIPE_SZ EBADF, where the lower fs's FIFO takes
 * them.  A splice into it could be forwarded, but
 * iter_file_splice_write() would take the lower pipe's mutex under the
 * source pipe's, two locks of one class and subclass.
 */

#include <linux/fs.h>
#include <linux/file.h>
#include <linux/pipe_fs_i.h>
#include <linux/poll.h>
#include <linux/uio.h>
#include "cowlinkfs.h"

/*
 * The flags fcntl(F_SETFL) may change that a pipe reads from its file on
 * each call: non-blocking, and packet mode (O_DIRECT).
 */
#define COWLINKFS_FIFO_FLAGS	(O_NONBLOCK | O_DIRECT)

static int cowlinkfs_fifo_open(struct inode *inode, struct file *file)
{
	struct file *real;

	/* may_open() checked O_NOATIME on our inode, maybe a stale owner. */
	if ((file->f_flags & O_NOATIME) && !cowlinkfs_owner_or_capable(inode))
		return -EPERM;
	/*
	 * May block, in the lower fs's fifo_open(), until the other end is
	 * opened (a signal ends the wait): no lock of ours is held.
	 */
	real = cowlinkfs_open_real(file);
	if (IS_ERR(real))
		return PTR_ERR(real);
	file->private_data = real;
	stream_open(inode, file);
	return 0;
}

static int cowlinkfs_fifo_release(struct inode *inode, struct file *file)
{
	fput(file->private_data);
	return 0;
}

/*
 * Give the lower file the flags fcntl(F_SETFL) has set on ours since: read
 * and written under our f_lock, which setfl() writes ours under, so that
 * of two racing calls neither stores flags older than the other's.  A
 * call already waiting in the lower pipe sees a change at its next call,
 * not at once as on the lower fs.
 */
static struct file *cowlinkfs_fifo_real(struct file *file)
{
	struct file *real = file->private_data;
	unsigned int flags = READ_ONCE(file->f_flags) & COWLINKFS_FIFO_FLAGS;

	if ((READ_ONCE(real->f_flags) & COWLINKFS_FIFO_FLAGS) == flags)
		return real;
	spin_lock(&file->f_lock);
	flags = file->f_flags & COWLINKFS_FIFO_FLAGS;
	spin_lock_nested(&real->f_lock, SINGLE_DEPTH_NESTING);
	real->f_flags = (real->f_flags & ~COWLINKFS_FIFO_FLAGS) | flags;
	spin_unlock(&real->f_lock);
	spin_unlock(&file->f_lock);
	return real;
}

/*
 * Through vfs_iter_read() and vfs_iter_write(), which tell watchers of the
 * lower FIFO, as a read or write in the lower directory would (and of a
 * read at the end of the FIFO too, which the lower fs does not); ours are
 * told by the VFS.  A FIFO has no position.  A write sets the lower
 * FIFO's times itself (pipe_write()), on the lower mount: through a
 * read-only cowlinkfs mount too.
 */
static ssize_t cowlinkfs_fifo_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct file *file = iocb->ki_filp;
	loff_t pos = 0;
	ssize_t ret;

	/* As pipe_read(), which vfs_iter_read() would note as an access. */
	if (!iov_iter_count(to))
		return 0;
	ret = vfs_iter_read(cowlinkfs_fifo_real(file), to, &pos, 0);
	/*
	 * The lower file is O_NOATIME: the atime is our mount's to decide,
	 * on the times the lower FIFO has now (a write sets them below).
	 */
	if (ret > 0)
		cowlinkfs_file_accessed(file);
	return ret;
}

static ssize_t cowlinkfs_fifo_write_iter(struct kiocb *iocb,
					 struct iov_iter *from)
{
	loff_t pos = 0;

	return vfs_iter_write(cowlinkfs_fifo_real(iocb->ki_filp), from, &pos, 0);
}

static __poll_t cowlinkfs_fifo_poll(struct file *file, poll_table *wait)
{
	/* The wait queues are the lower pipe's, which lives as long as @file. */
	return vfs_poll(file->private_data, wait);
}

static long cowlinkfs_fifo_ioctl(struct file *file, unsigned int cmd,
				 unsigned long arg)
{
	return vfs_ioctl(file->private_data, cmd, arg);
}

/*
 * pipe_fasync() with @file, not the lower file, on the lower pipe's lists:
 * kill_fasync() signals the owner F_SETOWN gave @file, whenever it was
 * given.  __fput() calls this to take @file off before it releases it.
 * The lower file of a FIFO keeps its pipe in private_data (fifo_open();
 * get_pipe_info(), which says so, is not exported).
 */
static int cowlinkfs_fifo_fasync(int fd, struct file *file, int on)
{
	struct file *real = file->private_data;
	struct pipe_inode_info *pipe = real->private_data;
	int ret = 0;

	if (WARN_ON_ONCE(!pipe || pipe != file_inode(real)->i_pipe))
		return -EINVAL;
	pipe_lock(pipe);
	if (file->f_mode & FMODE_READ)
		ret = fasync_helper(fd, file, on, &pipe->fasync_readers);
	if ((file->f_mode & FMODE_WRITE) && ret >= 0) {
		int read_ret = ret;

		ret = fasync_helper(fd, file, on, &pipe->fasync_writers);
		if (ret < 0 && read_ret > 0)
			fasync_helper(-1, file, 0, &pipe->fasync_readers);
	}
	pipe_unlock(pipe);
	return ret;
}

const struct file_operations cowlinkfs_fifo_fops = {
	.open		= cowlinkfs_fifo_open,
	.release	= cowlinkfs_fifo_release,
	.llseek		= no_llseek,
	.read_iter	= cowlinkfs_fifo_read_iter,
	.write_iter	= cowlinkfs_fifo_write_iter,
	.poll		= cowlinkfs_fifo_poll,
	.unlocked_ioctl	= cowlinkfs_fifo_ioctl,
	.fasync		= cowlinkfs_fifo_fasync,
};
