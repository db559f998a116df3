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
#include <linux/compat.h>
#include <linux/fadvise.h>
#include <linux/falloc.h>
#include <linux/fscrypt.h>
#include <linux/fsmap.h>
#include <linux/fsnotify.h>
#include <linux/fsverity.h>
#include <linux/mm.h>
#include <linux/mount.h>
#include <linux/sched/signal.h>
#include <linux/splice.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/uaccess.h>
#include "cowlinkfs.h"

/*
 * The lower file.  It is replaced when the name gets a new lower inode
 * (see cowlinkfs_prepare_change() and cowlinkfs_real_follow()) and the
 * ones it replaces stay open until release, so callers need neither a
 * lock nor a reference of their own.
 */
static struct file *cowlinkfs_real(const struct file *file)
{
	return READ_ONCE(COWLINKFS_F(file)->real);
}

/* Is @real not, or no longer, on the lower inode the name of @inode has? */
static bool cowlinkfs_not_names(struct inode *inode, struct file *real)
{
	struct inode *cur;
	bool moved;

	/* A break may drop the old lower dentry meanwhile; RCU frees it. */
	rcu_read_lock();
	cur = cowlinkfs_lower_inode_rcu(inode);
	moved = cur && file_inode(real) != cur;
	rcu_read_unlock();
	return moved;
}

/* Is the file's lower inode no longer the one its name has? */
static bool cowlinkfs_real_moved(struct file *file)
{
	return cowlinkfs_not_names(file_inode(file), cowlinkfs_real(file));
}

/**
 * cowlinkfs_real_follow - move a reader onto its name's current inode
 * @file: cowlinkfs regular file about to be used
 *
 * A descriptor stands for the name it was opened through, as it does on
 * the lower fs: once a writer through the name gave it a copy of its
 * own, a descriptor opened for reading before reads the copy from its
 * next call on, so that fstat() (which asks the name), read(), lseek()
 * and copy_file_range() agree, and so do /proc/PID/fd/N and linkat() of
 * it.  The other names keep the old bytes, as they always do.  Writers
 * move at their first change (cowlinkfs_prepare_change()); a running
 * program's descriptor, which denies writers on its inode, stays.
 *
 * Return: 0 or a negative errno, the descriptor unchanged.
 */
static int cowlinkfs_real_follow(struct file *file)
{
	struct cowlinkfs_file *cf = COWLINKFS_F(file);
	struct cowlinkfs_stale *stale;
	struct file *real;

	if (likely((file->f_mode & FMODE_WRITE) || cf->deny_write ||
		   !cowlinkfs_real_moved(file)))
		return 0;
	real = cowlinkfs_open_real(file);
	if (IS_ERR(real))
		return PTR_ERR(real);
	stale = kmalloc(sizeof(*stale), GFP_KERNEL);
	if (!stale) {
		fput(real);
		return -ENOMEM;
	}
	spin_lock(&cf->lock);
	if (file_inode(cf->real) != file_inode(real)) {
		cowlinkfs_file_swap(file, real, stale);
		real = NULL;
		stale = NULL;
	}
	spin_unlock(&cf->lock);
	kfree(stale);
	if (real)
		fput(real);
	return 0;
}

/*
 * Must the name be broken (again) before its lower file is opened for
 * writing?  The name has other links and is COW: 1, 0 or a negative errno.
 */
static int cowlinkfs_shared_cow(struct inode *inode)
{
	/* A shared inode is never broken: see cowlinkfs_open_shared(). */
	if (!S_ISREG(inode->i_mode) || cowlinkfs_inode_shared(inode) ||
	    !cowlinkfs_lower_shared(inode))
		return 0;
	return cowlinkfs_is_cow(inode);
}

/* Is the lower file of a writer still the read-only one of its open? */
static bool cowlinkfs_real_stand_in(struct file *file)
{
	return (file->f_mode & FMODE_WRITE) &&
	       !(cowlinkfs_real(file)->f_mode & FMODE_WRITE);
}

/*
 * The lower file a writer's first change should go to, with write access:
 * its name's own inode once the name is broken (a copy, or the same inode
 * if no other name shares it), an unnamed copy if the name was removed,
 * or NULL to go on with @real.  A writer opened on a shared COW inode held
 * it read-only until now (cowlinkfs_open()).  Sets @again if the file
 * had to be given up: see cowlinkfs_prepare_change().
 */
static struct file *cowlinkfs_writer_real(struct file *file, loff_t size,
					  bool *again)
{
	int flags = cowlinkfs_real_flags(file->f_flags);
	struct inode *inode = file_inode(file);
	struct file *real;
	int err;

	err = cowlinkfs_break_writer(file_dentry(file), size);
	if (err < 0)
		return ERR_PTR(err);
	if (err) {
		/* The name was unlinked or renamed over since open(). */
		real = cowlinkfs_copy_unlinked(inode, cowlinkfs_real(file),
					       flags, file->f_cred, size);
		if (real || !cowlinkfs_real_stand_in(file))
			return real;
		/* No other name to protect: write access on the inode itself. */
		real = dentry_open(&cowlinkfs_real(file)->f_path, flags,
				   file->f_cred);
		if (IS_ERR(real))
			return real;
		/* Unless a flag set meanwhile made it COW with other names. */
		err = file_inode(real)->i_nlink ? cowlinkfs_is_cow(inode) : 0;
	} else {
		/*
		 * Another writer may have broken the name after open() looked
		 * up the lower inode: follow the name even if we copied
		 * nothing.
		 */
		if (!cowlinkfs_real_moved(file) && !cowlinkfs_real_stand_in(file))
			return NULL;
		real = cowlinkfs_open_real(file);
		if (IS_ERR(real))
			return real;
		err = cowlinkfs_shared_cow(inode);
		if (!err && cowlinkfs_not_names(inode, real))
			err = 1;
	}
	if (!err)
		return real;
	fput(real);
	if (err < 0)
		return ERR_PTR(err);
	*again = true;
	return NULL;
}

/*
 * Whether a change through @file may still break its name's link first:
 * until then, what would refuse the change must be asked before the break.
 */
static bool cowlinkfs_break_pending(struct file *file)
{
	/* Pairs with the release in cowlinkfs_prepare_change(). */
	return smp_load_acquire(&COWLINKFS_F(file)->pending);
}

/**
 * cowlinkfs_prepare_change - break the link before a file is first changed
 * @file: cowlinkfs file about to be written, truncated or mapped shared
 * @size: the size the change leaves the file, LLONG_MAX if it keeps all
 *	  of it (see cowlinkfs_break_size())
 *
 * Breaks the link of the name @file was opened through if that is still
 * needed, and moves @file onto the name's current lower inode, so that
 * every writer through the name writes to the one copy.
 *
 * Return: 0 or a negative errno; on error nothing was changed.
 */
static int cowlinkfs_prepare_change(struct file *file, loff_t size)
{
	struct cowlinkfs_file *cf = COWLINKFS_F(file);
	struct inode *inode = file_inode(file);
	struct cowlinkfs_stale *stale = NULL;
	struct file *real;

	/* A clear @pending means a final @real (the release below). */
	if (likely(!cowlinkfs_break_pending(file)))
		return 0;
	/*
	 * Once the new lower file holds write access, link() and the flag
	 * ioctl through another name are refused; one made between the
	 * break and the open may have made the inode COW with other names
	 * again: break again, as cowlinkfs_open() does.
	 */
	for (;;) {
		bool again = false;

		real = cowlinkfs_writer_real(file, size, &again);
		if (!again)
			break;
		if (fatal_signal_pending(current))
			return -EINTR;
	}
	if (IS_ERR(real))
		return PTR_ERR(real);
	if (real) {
		stale = kmalloc(sizeof(*stale), GFP_KERNEL);
		if (!stale) {
			fput(real);
			return -ENOMEM;
		}
	}
	spin_lock(&cf->lock);
	if (cf->pending) {
		if (real && file_inode(cf->real) == file_inode(real) &&
		    cowlinkfs_real_stand_in(file)) {
			errseq_t seen = file->f_wb_err;

			/*
			 * The same inode: a writeback error since open() is
			 * this descriptor's to see, as on the lower fs.
			 */
			real->f_wb_err = cf->real->f_wb_err;
			cowlinkfs_file_swap(file, real, stale);
			file->f_wb_err = seen;
			real = NULL;
			stale = NULL;
		} else if (real && file_inode(cf->real) != file_inode(real)) {
			cowlinkfs_file_swap(file, real, stale);
			real = NULL;
			stale = NULL;
		}
		/* Pairs with the acquire above: @real is final first. */
		smp_store_release(&cf->pending, false);
	}
	spin_unlock(&cf->lock);
	kfree(stale);
	if (real)
		fput(real);
	cowlinkfs_copyattr(inode);
	return 0;
}

static int cowlinkfs_prepare_write(struct file *file)
{
	return cowlinkfs_prepare_change(file, LLONG_MAX);
}

/**
 * cowlinkfs_truncate_path - where a truncation through a file goes
 * @file: cowlinkfs file truncated by ftruncate() or open(O_TRUNC)
 * @size: the size it leaves
 * @path: set to the lower file's path, with a reference
 *
 * A truncation through a descriptor goes where its writes go: its first
 * change breaks the name's link, copying only what the truncation keeps,
 * and a descriptor of a name removed since it was opened changes only an
 * unnamed copy of its own, never the inode other names keep.
 *
 * Return: 0 or a negative errno.
 */
int cowlinkfs_truncate_path(struct file *file, loff_t size, struct path *path)
{
	int err = cowlinkfs_prepare_change(file, size);

	if (err)
		return err;
	*path = cowlinkfs_real(file)->f_path;
	path_get(path);
	return 0;
}

/*
 * The lower file of @file opened for reading only, with its other flags:
 * what a writer holds until its first change while its name shares a COW
 * inode (see cowlinkfs_open()).  Nothing is ever read through it (our
 * file is not readable), so it is opened as the mounter, as a break's
 * files are: an LSM that lets the caller write the file but not read it
 * (Landlock, an append-only SELinux domain) must not refuse the open.
 */
static struct file *cowlinkfs_open_stand_in(struct file *file)
{
	struct super_block *sb = file_inode(file)->i_sb;
	struct path lowerpath;
	struct file *real;

	cowlinkfs_dentry_lower_path(file->f_path.dentry, &lowerpath);
	real = dentry_open(&lowerpath, O_RDONLY |
			   cowlinkfs_real_flags(file->f_flags & ~O_ACCMODE),
			   COWLINKFS_SB(sb)->creator_cred);
	path_put(&lowerpath);
	return real;
}

/*
 * An O_TRUNC open for writing breaks the link with a copy of no bytes
 * before the lower file is opened.  Should that open then fail (O_DIRECT
 * where the lower fs has none), the name would have lost its bytes to a
 * call that failed: try the open on the shared inode first, without write
 * access, which a running program may deny.  (A read-only O_TRUNC open
 * breaks at the truncation, once the VFS holds write access.)
 */
static int cowlinkfs_probe_trunc(struct file *file)
{
	struct file *probe;

	if (!(file->f_flags & O_TRUNC) ||
	    cowlinkfs_shared_cow(file_inode(file)) <= 0)
		return 0;
	probe = cowlinkfs_open_stand_in(file);
	if (IS_ERR(probe))
		return PTR_ERR(probe);
	fput(probe);
	return 0;
}

/**
 * cowlinkfs_open_shared - may a name of a shared inode be opened to change?
 * @file: cowlinkfs regular file being opened for writing or truncation
 *
 * A shared inode is never broken (cowlinkfs_break_shared()).  If its file
 * became COW since the name was looked up, the name is dropped and the
 * open returns EOPENSTALE: do_filp_open() walks the path again once, with
 * LOOKUP_REVAL, and the new lookup gives the name an inode of its own,
 * which breaks as it always did.  Asked before the lower file is opened,
 * and again once it holds write access, after which a flag set or a
 * remount to cow=all through another name is refused: one that came in
 * between is caught the second time.  A reopen through /proc/PID/fd
 * walks to the same dentry and gets ESTALE.
 *
 * Return: 0, or a negative errno.
 */
static int cowlinkfs_open_shared(struct file *file)
{
	int err = cowlinkfs_break_shared(file->f_path.dentry);

	return err == -ESTALE ? -EOPENSTALE : err;
}

/**
 * cowlinkfs_open - open a regular file
 * @inode: cowlinkfs inode
 * @file: cowlinkfs file
 *
 * The caller passed may_open() on our inode already, so a copy is made
 * only for someone allowed to write.  O_TRUNC changes the file right away,
 * and O_RDWR allows a shared writable mmap, whose ->mmap cannot make a
 * copy: those break at open.  O_WRONLY opens break at their first change
 * (see struct cowlinkfs_file) and until then hold the inode the names
 * share open for reading only.  Should the name become shared between
 * that check and the open, for one of a running program's names, which
 * denies writers on the lower inode (ETXTBSY), the writer gets its own
 * copy at once instead, as cowlinks should.
 *
 * A break at open is made before the lower file takes write access; in
 * between, link() or COWLINKFS_IOC_SETCOW through another name can make the
 * inode COW with other names again.  Once write access is held those are
 * refused (ETXTBSY), so checking again after the lower open closes the
 * window.  An exec open denies writers on the lower inode too, so that
 * the program is safe from writers through every name.  A name of a
 * shared inode (a plain file) is never broken: it is looked up again if
 * the file became COW (see cowlinkfs_open_shared()).
 *
 * Return: 0 or a negative errno.
 */
static int cowlinkfs_open(struct inode *inode, struct file *file)
{
	bool writer = S_ISREG(inode->i_mode) && (file->f_mode & FMODE_WRITE);
	bool trunc = S_ISREG(inode->i_mode) && (file->f_flags & O_TRUNC);
	bool break_now = (writer && trunc) ||
			 (file->f_mode & (FMODE_READ | FMODE_WRITE)) ==
			 (FMODE_READ | FMODE_WRITE);
	bool exec = file->f_flags & __FMODE_EXEC;
	bool shared = cowlinkfs_inode_shared(inode);
	bool unlinked = false;
	struct cowlinkfs_file *cf;
	struct file *realfile, *copy;
	int err;

	/* may_open() checked O_NOATIME on our inode, maybe a stale owner. */
	if ((file->f_flags & O_NOATIME) && !cowlinkfs_owner_or_capable(inode))
		return -EPERM;
	if (shared && (writer || trunc)) {
		err = cowlinkfs_open_shared(file);
		if (err)
			return err;
		/* Nothing to break below: the loop only opens the lower file. */
		break_now = false;
	}
	/*
	 * A shared COW file whose name cannot be given a copy (append-only,
	 * in an append-only directory, ...) can never be written through
	 * this name: say so now, with the lower fs's errno for the rename
	 * a break needs, not at the first write, where shells report any
	 * failure of `echo >>` as an I/O error.
	 */
	if ((writer || trunc) && cowlinkfs_shared_cow(inode) > 0) {
		err = cowlinkfs_may_break(inode);
		if (err)
			return err;
	}
	for (;;) {
		if (break_now && !unlinked) {
			err = cowlinkfs_probe_trunc(file);
			if (err)
				return err;
			/* O_TRUNC: nothing of the old bytes is kept. */
			err = cowlinkfs_break_writer(file_dentry(file),
						     file->f_flags & O_TRUNC ?
						     0 : LLONG_MAX);
			if (err < 0)
				return err;
			/* Removed since the lookup: see below. */
			unlinked = err;
		}
		/*
		 * A writer that will break at its first change holds no write
		 * access to the inode the other names share until then: a
		 * link() or a flag set through another name (a clone made
		 * while a tool has a log open for appending) is no reason to
		 * refuse, and a program run through another name is safe.
		 */
		realfile = cowlinkfs_open_real(file);
		if (!IS_ERR(realfile) && writer && !break_now &&
		    cowlinkfs_shared_cow(inode) > 0) {
			/*
			 * The write open above answered what the lower fs
			 * answers (EROFS, an LSM's refusal, a running
			 * program's ETXTBSY) now and not at the first write;
			 * its write access goes at once.
			 */
			fput(realfile);
			realfile = cowlinkfs_open_stand_in(file);
		}
		if (IS_ERR(realfile)) {
			err = PTR_ERR(realfile);
			if (err == -ETXTBSY && writer && !break_now &&
			    cowlinkfs_shared_cow(inode) > 0) {
				break_now = true;
				continue;
			}
			return err;
		}
		err = 0;
		if (break_now && writer && !unlinked) {
			err = cowlinkfs_shared_cow(inode);
			/*
			 * Another writer's break of this name (shared again
			 * by a link() meanwhile) may have left @realfile on
			 * the inode the other names keep: a shared mapping
			 * of it would write theirs.
			 */
			if (!err && cowlinkfs_not_names(inode, realfile))
				err = 1;
		}
		if (!err)
			break;
		fput(realfile);
		if (err < 0)
			return err;
		if (fatal_signal_pending(current))
			return -EINTR;
	}

	if (shared && (writer || trunc)) {
		err = cowlinkfs_open_shared(file);
		if (err)
			goto out_fput;
	}

	/*
	 * The name was unlinked or renamed over since it was looked up:
	 * there is no name to give a copy, so the opener gets one of its
	 * own, unnamed, if other names still share the inode.
	 */
	if (unlinked && writer) {
		copy = cowlinkfs_copy_unlinked(inode, realfile, realfile->f_flags,
					       current_cred(),
					       trunc ? 0 : LLONG_MAX);
		if (IS_ERR(copy)) {
			fput(realfile);
			return PTR_ERR(copy);
		}
		if (copy) {
			fput(realfile);
			realfile = copy;
		}
	}

	if (exec) {
		err = deny_write_access(realfile);
		if (err)
			goto out_fput;
	}
	cf = cowlinkfs_file_setup(file, realfile);
	if (!cf) {
		err = -ENOMEM;
		goto out_allow;
	}
	cf->deny_write = exec;
	/*
	 * Not just when the lower inode has other links now: a racing
	 * writer may have broken the name between the lookup of the lower
	 * inode above and its link count reaching one, leaving @realfile on
	 * the inode the other names keep.  The first change checks again.
	 */
	cf->pending = writer || trunc;
	return 0;

out_allow:
	if (exec)
		allow_write_access(realfile);
out_fput:
	fput(realfile);
	return err;
}

loff_t cowlinkfs_llseek(struct file *file, loff_t offset, int whence)
{
	struct inode *inode = file_inode(file);
	struct file *realfile;
	loff_t ret;

	/* SEEK_END, SEEK_DATA and SEEK_HOLE ask the name's inode. */
	if (S_ISREG(inode->i_mode)) {
		ret = cowlinkfs_real_follow(file);
		if (ret)
			return ret;
	}
	realfile = cowlinkfs_real(file);
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

/* What fcntl(F_SETFL) can change after open, and the lower file must follow. */
#define COWLINKFS_SETFL_MASK (O_APPEND | O_NONBLOCK | O_NDELAY | O_DIRECT)

/**
 * cowlinkfs_real_io - the lower file, with the flags of ours
 * @file: cowlinkfs file about to be read or written
 *
 * fcntl(F_SETFL) changes the flags of our file only, but the lower fs
 * takes O_APPEND, O_DIRECT and O_NONBLOCK from its own: take them down
 * before the lower file is used, as ovl_change_flags() does.  (O_NOATIME
 * is ours alone: see cowlinkfs_file_accessed().)
 * Without this, O_APPEND set after open would be ignored and the writes
 * would overwrite data.
 *
 * Return: the lower file or an ERR_PTR().
 */
static struct file *cowlinkfs_real_io(struct file *file)
{
	unsigned int flags = READ_ONCE(file->f_flags) & COWLINKFS_SETFL_MASK;
	struct file *real;
	int err;

	err = cowlinkfs_real_follow(file);
	if (err)
		return ERR_PTR(err);
	real = cowlinkfs_real(file);
	if (likely(flags == (READ_ONCE(real->f_flags) & COWLINKFS_SETFL_MASK)))
		return real;
	/* fcntl() checked a flag set through another name on a stale inode. */
	if (!(flags & O_APPEND) && IS_APPEND(file_inode(real)))
		return ERR_PTR(-EPERM);
	if ((flags & O_DIRECT) && !(real->f_mode & FMODE_CAN_ODIRECT))
		return ERR_PTR(-EINVAL);
	if (real->f_op->check_flags) {
		err = real->f_op->check_flags(flags);
		if (err)
			return ERR_PTR(err);
	}
	spin_lock(&real->f_lock);
	real->f_flags = (real->f_flags & ~COWLINKFS_SETFL_MASK) | flags;
	real->f_iocb_flags = iocb_flags(real);
	spin_unlock(&real->f_lock);
	return real;
}

/* fsync() of the lower file or directory at @path, opened as the mounter. */
static int cowlinkfs_fsync_path(struct super_block *sb, struct path *path)
{
	const struct cred *old_cred;
	struct file *file;
	int err;

	old_cred = cowlinkfs_override_creds(sb);
	file = dentry_open(path, O_RDONLY | O_LARGEFILE, current_cred());
	revert_creds(old_cred);
	if (IS_ERR(file))
		return PTR_ERR(file);
	err = vfs_fsync(file, 0);
	fput(file);
	return err;
}

/**
 * cowlinkfs_sync_break - make the last link break of a name durable
 * @file: cowlinkfs regular file that is being synced
 * @synced: set if @file's own lower file was synced whole, fully
 *
 * A break renames its copy over the name and leaves the rename to the
 * caller's next sync: a journal commit of its own would double the cost
 * of every break, and on a journalling lower fs the fsync() of the copy
 * commits the rename with it.  But a data sync there commits only what
 * the data needs: ext4 committed the copy's creation at the break's own
 * fsync (cowlinkfs_copy_inode()) and commits nothing for the rename at an
 * fdatasync() after it, ext2 never writes the directory at fsync(), and a
 * synchronous write syncs its own range alone, not the rest of a copy
 * that break_sync=off left unwritten.  After a power cut the name would
 * hold the old bytes, or a copy without its data, although the sync had
 * returned.  So the first sync of any kind after a break syncs the whole
 * copy, then the directory the name is in.  The copy is synced through
 * @file's own lower file when it is on the copy, so that a writeback
 * error reaches the descriptor once, as on the lower fs.
 *
 * Return: 0, or a negative errno and the break still to sync.
 */
static int cowlinkfs_sync_break(struct file *file, bool *synced)
{
	struct inode *inode = file_inode(file);
	struct cowlinkfs_inode *ci = COWLINKFS_I(inode);
	struct file *real;
	struct path path, dir;
	int err;

	*synced = false;
	err = cowlinkfs_sync_evicted(inode->i_sb);
	if (err || likely(!test_bit(COWLINKFS_I_UNSYNCED, &ci->state)))
		return err;
	/* Not cleared before a sync is complete, nor while a break runs. */
	err = mutex_lock_killable(&ci->break_mutex);
	if (err)
		return err;
	if (!test_bit(COWLINKFS_I_UNSYNCED, &ci->state))
		goto out_unlock;
	cowlinkfs_lower_path(inode, &path);
	real = cowlinkfs_real(file);
	if (file_inode(real) == d_inode(path.dentry)) {
		err = vfs_fsync(real, 0);
		*synced = true;
	} else {
		/* A writer's stand-in, or a reader not moved yet. */
		err = cowlinkfs_fsync_path(inode->i_sb, &path);
	}
	if (!err) {
		dir.mnt = path.mnt;
		dir.dentry = dget_parent(path.dentry);
		err = cowlinkfs_fsync_path(inode->i_sb, &dir);
		dput(dir.dentry);
	}
	path_put(&path);
	if (!err)
		clear_bit(COWLINKFS_I_UNSYNCED, &ci->state);
out_unlock:
	mutex_unlock(&ci->break_mutex);
	return err;
}

/*
 * Whether the lower fs makes a change through @real synchronous: @dsync
 * (an O_SYNC or O_DSYNC descriptor, RWF_SYNC or RWF_DSYNC), or the sync
 * flag of the lower file or of the lower fs's mount, which our inode does
 * not carry.
 */
static bool cowlinkfs_change_is_sync(struct file *real, bool dsync)
{
	return dsync || IS_SYNC(file_inode(real));
}

/*
 * After a change through @file made on the lower file @real, with result
 * @ret: our inode takes the lower one's attributes, and when the lower fs
 * made the change synchronous, the break that gave the name its copy is
 * synced too.  Returns @ret, or the error of that sync.
 */
static ssize_t cowlinkfs_change_done(struct file *file, struct file *real,
				     bool dsync, ssize_t ret)
{
	bool synced;
	int err;

	cowlinkfs_copyattr(file_inode(file));
	if (ret < 0 || !cowlinkfs_change_is_sync(real, dsync))
		return ret;
	err = cowlinkfs_sync_break(file, &synced);
	return err ? err : ret;
}

/* Every RWF_* flag the caller gave, for the lower file's kiocb. */
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
	if (ifl & IOCB_APPEND)
		flags |= RWF_APPEND;
	return flags;
}

/*
 * A read through the mount, as file_accessed() on the lower file would
 * note it: the lower file is opened with O_NOATIME, so that the options
 * of our mount decide (noatime, nodiratime, relatime, strictatime), on
 * the times the lower inode has now.  See cowlinkfs_update_time().
 */
void cowlinkfs_file_accessed(struct file *file)
{
	if (file->f_flags & O_NOATIME)
		return;
	cowlinkfs_copyattr(file_inode(file));
	touch_atime(&file->f_path);
}

/*
 * The size of the file a break through @file would copy: the one its name
 * has now (another writer may have given the name a copy since @file was
 * opened), or the one @file stands in for once the name is gone.  Only a
 * guess for the checks below: the lower fs's own check is the one that
 * counts.
 */
static loff_t cowlinkfs_break_size_now(struct file *file)
{
	struct inode *lower;
	loff_t size;

	rcu_read_lock();
	lower = cowlinkfs_lower_inode_rcu(file_inode(file));
	size = i_size_read(lower ?: file_inode(cowlinkfs_real(file)));
	rcu_read_unlock();
	return size;
}

/**
 * cowlinkfs_write_limits - refuse before the break what the lower fs would
 * @file: cowlinkfs file about to be written, a break still pending
 * @pos: where the write starts, unless @append
 * @append: the write goes to the end of the file
 *
 * What generic_write_check_limits() refuses in the lower fs's write, asked
 * before a break that the write would otherwise make for nothing: a
 * position at or past RLIMIT_FSIZE (with the SIGXFSZ the lower fs would
 * send), or past the largest file the lower fs, or a descriptor without
 * O_LARGEFILE, allows.  Asked only while a break may still come
 * (cowlinkfs_break_pending()): after it, the lower fs's own check is the
 * one that counts, and writes pay nothing for it.
 *
 * Return: 0 or -EFBIG.
 */
static int cowlinkfs_write_limits(struct file *file, loff_t pos, bool append)
{
	loff_t limit = rlimit(RLIMIT_FSIZE);
	loff_t max = file_inode(file)->i_sb->s_maxbytes;

	if (append)
		pos = cowlinkfs_break_size_now(file);
	if (limit != RLIM_INFINITY && pos >= limit) {
		send_sig(SIGXFSZ, current, 0);
		return -EFBIG;
	}
	if (!(file->f_flags & O_LARGEFILE))
		max = MAX_NON_LFS;
	return pos >= max ? -EFBIG : 0;
}

/*
 * What inode_newsize_ok() refuses in the lower fs's fallocate() that grows
 * the file to @size, asked before the break: a size past RLIMIT_FSIZE
 * (vfs_fallocate() checked s_maxbytes on our inode).  ext4, xfs and tmpfs
 * ask it for every mode that may grow the file; tmpfs with KEEP_SIZE too,
 * which is left to it (see "Limits" in the rst).
 */
static int cowlinkfs_grow_limit(struct file *file, int mode, loff_t size)
{
	loff_t limit = rlimit(RLIMIT_FSIZE);

	if (mode & (FALLOC_FL_KEEP_SIZE | FALLOC_FL_COLLAPSE_RANGE |
		    FALLOC_FL_INSERT_RANGE))
		return 0;
	if (limit == RLIM_INFINITY || size <= limit ||
	    size <= cowlinkfs_break_size_now(file))
		return 0;
	send_sig(SIGXFSZ, current, 0);
	return -EFBIG;
}

/*
 * Reads and writes are done synchronously on the lower file; an AIO
 * caller gets its result at once.
 */
static ssize_t cowlinkfs_read_iter(struct kiocb *iocb, struct iov_iter *iter)
{
	struct file *realfile;
	ssize_t ret;

	if (!iov_iter_count(iter))
		return 0;
	realfile = cowlinkfs_real_io(iocb->ki_filp);
	if (IS_ERR(realfile))
		return PTR_ERR(realfile);
	ret = vfs_iter_read(realfile, iter, &iocb->ki_pos,
			    cowlinkfs_iocb_to_rwf(iocb->ki_flags & ~IOCB_APPEND));
	cowlinkfs_file_accessed(iocb->ki_filp);
	return ret;
}

static ssize_t cowlinkfs_write_iter(struct kiocb *iocb, struct iov_iter *iter)
{
	struct file *file = iocb->ki_filp;
	struct file *realfile;
	bool dsync;
	ssize_t ret;

	if (!iov_iter_count(iter))
		return 0;
	if (cowlinkfs_break_pending(file)) {
		ret = cowlinkfs_write_limits(file, iocb->ki_pos,
					     iocb->ki_flags & IOCB_APPEND);
		if (ret)
			return ret;
	}
	ret = cowlinkfs_prepare_write(file);
	if (ret)
		return ret;
	realfile = cowlinkfs_real_io(file);
	if (IS_ERR(realfile))
		return PTR_ERR(realfile);
	dsync = iocb->ki_flags & IOCB_DSYNC;
	/* Syncing a break would block. */
	if ((iocb->ki_flags & IOCB_NOWAIT) &&
	    cowlinkfs_change_is_sync(realfile, dsync) &&
	    test_bit(COWLINKFS_I_UNSYNCED, &COWLINKFS_I(file_inode(file))->state))
		return -EAGAIN;
	file_start_write(realfile);
	ret = vfs_iter_write(realfile, iter, &iocb->ki_pos,
			     cowlinkfs_iocb_to_rwf(iocb->ki_flags));
	file_end_write(realfile);
	/* The lower fs synced the range; the break is ours to sync. */
	return cowlinkfs_change_done(file, realfile, dsync, ret);
}

/* As pipe_readable() in fs/pipe.c: something to read, or no writer. */
static bool cowlinkfs_pipe_readable(const struct pipe_inode_info *pipe)
{
	unsigned int head = READ_ONCE(pipe->head);
	unsigned int tail = READ_ONCE(pipe->tail);

	return !pipe_empty(head, tail) || !READ_ONCE(pipe->writers);
}

/**
 * cowlinkfs_pipe_wait - wait for bytes to splice, as splice(2) would
 * @pipe: the pipe spliced from
 * @flags: SPLICE_F_* of the splice
 *
 * The break must come before the pipe's mutex is taken to splice (see
 * cowlinkfs_splice_write()), but only once there is something to write:
 * a splice that ends with nothing written, at the pipe's end, on an empty
 * pipe with SPLICE_F_NONBLOCK or by a signal, copies nothing.  As
 * splice_from_pipe_next() does, a signal is seen first, and the empty
 * buffers a faulting write(2) leaves in a pipe are eaten, not taken for
 * bytes.  (A second reader of the same pipe may still empty it before
 * our splice does; the copy is then made for nothing, as for a write()
 * that fails half way.)
 *
 * Return: 1 when the pipe holds bytes, 0 at its end, or the errno
 * splice_from_pipe_next() gives for an empty pipe.
 */
static int cowlinkfs_pipe_wait(struct pipe_inode_info *pipe,
			       unsigned int flags)
{
	struct pipe_buffer *buf;
	unsigned int tail;
	int ret;

	pipe_lock(pipe);
	for (;;) {
		ret = -ERESTARTSYS;
		if (signal_pending(current))
			break;
		tail = pipe->tail;
		if (!pipe_empty(pipe->head, tail)) {
			buf = &pipe->bufs[tail & (pipe->ring_size - 1)];
			ret = 1;
			if (buf->len)
				break;
			/* As eat_empty_buffer() in fs/splice.c. */
			pipe_buf_release(pipe, buf);
			pipe->tail = tail + 1;
			wake_up_interruptible(&pipe->wr_wait);
			continue;
		}
		ret = 0;
		if (!pipe->writers)
			break;
		ret = -EAGAIN;
		if (flags & SPLICE_F_NONBLOCK)
			break;
		pipe_unlock(pipe);
		wait_event_interruptible(pipe->rd_wait,
					 cowlinkfs_pipe_readable(pipe));
		pipe_lock(pipe);
	}
	pipe_unlock(pipe);
	return ret;
}

/*
 * iter_file_splice_write() on our file would take the pipe's mutex, then
 * the lower fs's sb_writers in cowlinkfs_write_iter(), the reverse of a
 * splice straight into a file of the lower fs (lockdep saw it in fstests'
 * generic/110 over xfs).  Do what cowlinkfs_write_iter() does, break
 * included, outside the pipe's mutex, and splice into the lower file
 * within its sb_writers, as ovl_splice_write() does.  The splice into the
 * lower file notifies watchers of the lower inode; ours are told here, as
 * vfs_iter_write() would have told them.
 */
static ssize_t cowlinkfs_splice_write(struct pipe_inode_info *pipe,
				      struct file *out, loff_t *ppos,
				      size_t len, unsigned int flags)
{
	struct file *realfile;
	bool dsync;
	ssize_t ret;

	if (!len)
		return 0;
	/* Once the name has its own copy, the lower fs waits and checks. */
	if (cowlinkfs_break_pending(out)) {
		ret = cowlinkfs_pipe_wait(pipe, flags);
		if (ret <= 0)
			return ret;
		ret = cowlinkfs_write_limits(out, *ppos, false);
		if (ret)
			return ret;
	}
	ret = cowlinkfs_prepare_write(out);
	if (ret)
		return ret;
	realfile = cowlinkfs_real_io(out);
	if (IS_ERR(realfile))
		return PTR_ERR(realfile);
	dsync = iocb_flags(out) & IOCB_DSYNC;
	file_start_write(realfile);
	ret = iter_file_splice_write(pipe, realfile, ppos, len, flags);
	file_end_write(realfile);
	if (ret > 0)
		fsnotify_modify(out);
	return cowlinkfs_change_done(out, realfile, dsync, ret);
}

static int cowlinkfs_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct file *realfile;
	int err;

	/*
	 * No break here: we hold mmap_lock, which the write path takes
	 * inside sb_writers.  None is needed either: a shared writable
	 * mapping needs O_RDWR, and O_RDWR opens break at open.
	 */
	if (WARN_ON(file != vma->vm_file))
		return -EIO;
	/*
	 * A reader whose name was broken since its last call would map the
	 * inode the other names keep while fstat() describes the copy (a
	 * mapping sized by it faults past the old end).  It cannot follow
	 * here (opening a file under mmap_lock): ESTALE, as for a name that
	 * went away; any read() or lseek() first follows.
	 */
	if (!(file->f_mode & FMODE_WRITE) && !COWLINKFS_F(file)->deny_write &&
	    cowlinkfs_real_moved(file))
		return -ESTALE;
	realfile = cowlinkfs_real(file);
	if (!realfile->f_op->mmap)
		return -ENODEV;
	/* The mapping belongs to the lower file from now on. */
	vma_set_file(vma, realfile);
	err = call_mmap(vma->vm_file, vma);
	if (!err)
		cowlinkfs_file_accessed(file);
	return err;
}

int cowlinkfs_fsync(struct file *file, loff_t start, loff_t end,
		    int datasync)
{
	int err;

	if (S_ISREG(file_inode(file)->i_mode)) {
		bool synced;
		int sync_err;

		err = cowlinkfs_real_follow(file);
		if (err)
			return err;
		/* The caller's own range is synced whatever befell the break. */
		err = cowlinkfs_sync_break(file, &synced);
		if (synced)
			return err;
		sync_err = vfs_fsync_range(cowlinkfs_real(file), start, end,
					   datasync);
		return err ?: sync_err;
	}
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

	/* A lower fs without fallocate (ext2) refuses it: copy nothing. */
	if (!cowlinkfs_real(file)->f_op->fallocate)
		return -EOPNOTSUPP;
	if (cowlinkfs_break_pending(file)) {
		ret = cowlinkfs_grow_limit(file, mode, offset + len);
		if (ret)
			return ret;
	}
	ret = cowlinkfs_prepare_write(file);
	if (ret)
		return ret;
	realfile = cowlinkfs_real(file);
	ret = vfs_fallocate(realfile, mode, offset, len);
	return cowlinkfs_change_done(file, realfile, file->f_flags & O_DSYNC,
				     ret);
}

static int cowlinkfs_fadvise(struct file *file, loff_t offset, loff_t len,
			     int advice)
{
	int err = cowlinkfs_real_follow(file);

	if (err)
		return err;
	return vfs_fadvise(cowlinkfs_real(file), offset, len, advice);
}

/*
 * What vfs_copy_file_range() refuses for the lower files alone (two lower
 * filesystems that cannot copy between them, a lower swap file), asked
 * before the break that the copy would otherwise make for nothing.  The
 * checks that are the same on our files were made on them by the VFS,
 * which calls us only without flags (with COPY_FILE_SPLICE it splices).
 */
static int cowlinkfs_copy_range_check(struct file *realin,
				      struct file *realout)
{
	bool can_copy = file_inode(realin)->i_sb == file_inode(realout)->i_sb;

	if (realout->f_op->copy_file_range)
		can_copy = realin->f_op->copy_file_range ==
			   realout->f_op->copy_file_range;
	if (!can_copy)
		return -EXDEV;
	if (IS_SWAPFILE(file_inode(realin)))
		return -ETXTBSY;
	return 0;
}

static ssize_t cowlinkfs_copy_file_range(struct file *in, loff_t pos_in,
					 struct file *out, loff_t pos_out,
					 size_t len, unsigned int flags)
{
	struct file *realin, *realout;
	ssize_t ret;

	ret = cowlinkfs_real_follow(in);
	if (!ret)
		ret = cowlinkfs_copy_range_check(cowlinkfs_real(in),
						 cowlinkfs_real(out));
	if (!ret)
		ret = cowlinkfs_prepare_write(out);
	if (ret)
		return ret;
	realin = cowlinkfs_real(in);
	realout = cowlinkfs_real(out);
	ret = vfs_copy_file_range(realin, pos_in, realout, pos_out, len, flags);
	if (ret > 0)
		cowlinkfs_file_accessed(in);
	return cowlinkfs_change_done(out, realout, out->f_flags & O_DSYNC, ret);
}

static loff_t cowlinkfs_remap_file_range(struct file *in, loff_t pos_in,
					 struct file *out, loff_t pos_out,
					 loff_t len, unsigned int flags)
{
	struct file *realin, *realout;
	loff_t ret;

	if (flags & ~(REMAP_FILE_DEDUP | REMAP_FILE_ADVISORY))
		return -EINVAL;
	/* A lower fs without reflink (ext4, tmpfs) refuses it: copy nothing. */
	if (!cowlinkfs_real(out)->f_op->remap_file_range)
		return -EOPNOTSUPP;
	ret = cowlinkfs_real_follow(in);
	if (!ret)
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
	return cowlinkfs_change_done(out, realout, out->f_flags & O_DSYNC, ret);
}

/* XFS_IOC_GOINGDOWN and EXT4_IOC_SHUTDOWN: an _IOR that writes. */
#define COWLINKFS_IOC_SHUTDOWN	_IOR('X', 125, __u32)
/* XFS_IOC_GETBMAP, _GETBMAPA, _GETBMAPX (xfs_bmap): _IOWR, reading only. */
#define COWLINKFS_IOC_GETBMAP(nr) _IOC(_IOC_READ | _IOC_WRITE, 'X', nr, 32)

/*
 * Lower ioctls that only read: by convention those that only copy data
 * out (_IOC_READ), and a few known ones that copy in their arguments.  Any
 * other one may change the file.
 */
static bool cowlinkfs_ioctl_reads_only(unsigned int cmd)
{
	switch (cmd) {
	case COWLINKFS_IOC_SHUTDOWN:
		return false;
	case COWLINKFS_IOC_GETBMAP(38):
	case COWLINKFS_IOC_GETBMAP(44):
	case COWLINKFS_IOC_GETBMAP(56):
	case FS_IOC_GETFSMAP:
	case FS_IOC_GET_ENCRYPTION_POLICY:
	case FS_IOC_GET_ENCRYPTION_POLICY_EX:
	case FS_IOC_GET_ENCRYPTION_KEY_STATUS:
	case FS_IOC_MEASURE_VERITY:
	case FS_IOC_READ_VERITY_METADATA:
		return true;
	}
	return _IOC_DIR(cmd) == _IOC_READ;
}

/*
 * A read-only descriptor is not given a copy by an ioctl that changes the
 * file: a change through it must not reach an inode another name has.
 * Its inode is the one the name has now, shared if COW with other links,
 * or, until its next call follows the name, one the name left when it
 * was broken, which belongs to the other names.
 */
static int cowlinkfs_ro_fd_shared(struct file *file)
{
	int ret;

	/* One inode for every name: a change reaches them all, unless COW. */
	if (cowlinkfs_inode_shared(file_inode(file)))
		return cowlinkfs_break_shared(file->f_path.dentry);
	ret = cowlinkfs_real_moved(file) ? 1 :
	      cowlinkfs_shared_cow(file_inode(file));
	return ret > 0 ? -EBADF : ret;
}

/*
 * The lower file's own ioctl.  One that may change the file needs write
 * access to our mount (EROFS on a read-only mount or bind mount, whatever
 * the lower mount allows), and is made on the name's own copy: a writer's
 * link is broken first, and one through a read-only descriptor of a COW
 * name with other links, which cannot be moved to a copy, gets EBADF.
 */
static long cowlinkfs_lower_ioctl(struct file *file, unsigned int cmd,
				  unsigned long arg, bool compat)
{
	bool writes = !cowlinkfs_ioctl_reads_only(cmd);
	struct inode *inode = file_inode(file);
	struct file *realfile;
	long ret;

	/*
	 * Terminal ioctls (isatty()'s TCGETS, which Python's open() sends)
	 * mean nothing to a regular file: no break, no EBADF, ENOTTY.
	 */
	if (_IOC_TYPE(cmd) == 'T')
		return -ENOTTY;
	/*
	 * Nor do unknown numbers of our own type byte, or the numbers the
	 * flag ioctls had in the 'f' range in 0.1.0, which a program built
	 * against it still sends: ENOTTY, without a break.
	 */
	if (_IOC_TYPE(cmd) == COWLINKFS_IOC_MAGIC ||
	    cmd == _IOR('f', 0xc0, int) || cmd == _IOW('f', 0xc1, int))
		return -ENOTTY;
	ret = cowlinkfs_real_follow(file);
	if (ret)
		return ret;
	if (writes) {
		ret = mnt_want_write_file(file);
		if (ret)
			return ret;
		if (file->f_mode & FMODE_WRITE)
			ret = cowlinkfs_prepare_write(file);
		else
			ret = cowlinkfs_ro_fd_shared(file);
		if (ret)
			goto out;
	}
	realfile = cowlinkfs_real(file);
	ret = -ENOIOCTLCMD;
	if (compat && realfile->f_op->compat_ioctl)
		ret = realfile->f_op->compat_ioctl(realfile, cmd, arg);
	else if (!compat && realfile->f_op->unlocked_ioctl)
		ret = vfs_ioctl(realfile, cmd, arg);
	if (ret == -ENOIOCTLCMD)
		ret = -ENOTTY;
out:
	if (writes)
		mnt_drop_write_file(file);
	cowlinkfs_copyattr(inode);
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
 * opened with the same access mode, but for a writer that has not changed
 * the file yet, whose ioctls that may write make it change first (see
 * cowlinkfs_lower_ioctl()).
 *
 * Return: 0 or the ioctl's result, negative errno on failure.
 */
long cowlinkfs_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	int __user *uarg = (int __user *)arg;
	int val;

	switch (cmd) {
	case COWLINKFS_IOC_GETCOW:
		val = cowlinkfs_get_cow(file_inode(file));
		if (val < 0)
			return val;
		return put_user(val, uarg);
	case COWLINKFS_IOC_SETCOW:
		if (get_user(val, uarg))
			return -EFAULT;
		return cowlinkfs_set_cow(file, val != 0);
	}
	return cowlinkfs_lower_ioctl(file, cmd, arg, false);
}

/*
 * 32-bit callers: our ioctls take a pointer to int, the same in both ABIs;
 * the lower file's go to its own compat_ioctl, which knows their layout.
 */
long cowlinkfs_compat_ioctl(struct file *file, unsigned int cmd,
			    unsigned long arg)
{
	switch (cmd) {
	case COWLINKFS_IOC_GETCOW:
	case COWLINKFS_IOC_SETCOW:
		return cowlinkfs_ioctl(file, cmd, (unsigned long)compat_ptr(arg));
	}
	return cowlinkfs_lower_ioctl(file, cmd, arg, true);
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
	.splice_write		= cowlinkfs_splice_write,
	.copy_file_range	= cowlinkfs_copy_file_range,
	.remap_file_range	= cowlinkfs_remap_file_range,
	.unlocked_ioctl		= cowlinkfs_ioctl,
	.compat_ioctl		= cowlinkfs_compat_ioctl,
};
