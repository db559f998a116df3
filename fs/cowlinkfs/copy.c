// SPDX-License-Identifier: GPL-2.0
/*
 * cowlinkfs: copy-on-write hard links as a stacking filesystem.
 *
 * Breaking a cow link: the name being modified gets a complete private copy
 * of its lower inode, put in place atomically, and the cowlinkfs inode of
 * that name is re-pointed at the copy.  Modelled on overlayfs copy-up.
 */

#include <linux/fs.h>
#include <linux/file.h>
#include <linux/fileattr.h>
#include <linux/mount.h>
#include <linux/namei.h>
#include <linux/rcupdate.h>
#include <linux/sched/signal.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/xattr.h>
#include "cowlinkfs.h"

#define COWLINKFS_COPY_CHUNK	SZ_1M

/*
 * Copy one data region [pos, end) through @buf, leaving a hole wherever a
 * whole block reads as zeroes, as cp --sparse=always does: this keeps
 * sparse files sparse on filesystems without SEEK_DATA (ext2), and in the
 * zero tail of a chunk that SEEK_DATA reported as data.
 */
static int cowlinkfs_copy_region(struct file *old, struct file *new,
				 loff_t pos, loff_t end, char *buf)
{
	unsigned int bsize = file_inode(new)->i_sb->s_blocksize;

	while (pos < end) {
		size_t len = min_t(loff_t, COWLINKFS_COPY_CHUNK, end - pos);
		loff_t rpos = pos;
		ssize_t got;
		size_t off;

		if (fatal_signal_pending(current))
			return -EINTR;
		got = kernel_read(old, buf, len, &rpos);
		if (got < 0)
			return got;
		if (got == 0)
			return -EIO;	/* the file shrank under us */

		for (off = 0; off < got;) {
			size_t run = min_t(size_t, bsize - (pos + off) % bsize,
					   got - off);
			loff_t wpos = pos + off;
			ssize_t put;

			if (!memchr_inv(buf + off, 0, run)) {
				off += run;
				continue;
			}
			put = __kernel_write(new, buf + off, run, &wpos);
			if (put < 0)
				return put;
			if (put != run)
				return -EIO;
			off += run;
		}
		pos += got;
		cond_resched();
	}
	return 0;
}

/*
 * Copy @len bytes of data: a reflink where the lower filesystem can share
 * extents, else region by region between SEEK_DATA and SEEK_HOLE, so holes
 * are never read.  The new file already has its final size.  A fatal
 * signal stops the copy.
 */
static int cowlinkfs_copy_data(struct file *old, struct file *new, loff_t len)
{
	loff_t pos = 0, data, hole;
	char *buf;
	int err = 0;

	if (!len)
		return 0;
	if (do_clone_file_range(old, 0, new, 0, len, 0) == len)
		return 0;

	buf = kvmalloc(COWLINKFS_COPY_CHUNK, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	while (pos < len && !err) {
		data = vfs_llseek(old, pos, SEEK_DATA);
		if (data == -ENXIO)
			break;			/* only a hole is left */
		if (data < 0)
			data = pos;		/* no SEEK_DATA: all data */
		hole = vfs_llseek(old, data, SEEK_HOLE);
		if (hole < 0 || hole > len)
			hole = len;
		if (hole <= data)
			break;
		err = cowlinkfs_copy_region(old, new, data, hole, buf);
		pos = hole;
	}
	kvfree(buf);
	return err;
}

/* Copy every xattr, ACLs, security.* and our flag included. */
static int cowlinkfs_copy_xattrs(struct dentry *old, struct dentry *new)
{
	ssize_t list_size, size;
	char *buf, *name, *value = NULL;
	size_t value_size = 0;
	int err = 0;

	if (!(d_inode(old)->i_opflags & IOP_XATTR))
		return 0;
	list_size = vfs_listxattr(old, NULL, 0);
	if (list_size <= 0)
		return list_size == -EOPNOTSUPP ? 0 : list_size;
	buf = kvzalloc(list_size, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	list_size = vfs_listxattr(old, buf, list_size);
	if (list_size <= 0) {
		err = list_size;
		goto out;
	}

	for (name = buf; list_size > 0; name += strlen(name) + 1) {
		list_size -= strlen(name) + 1;
retry:
		size = vfs_getxattr(&init_user_ns, old, name, value, value_size);
		if (size == -ERANGE)
			size = vfs_getxattr(&init_user_ns, old, name, NULL, 0);
		if (size < 0) {
			err = size;
			break;
		}
		if (size > value_size) {
			kvfree(value);
			value = kvmalloc(size, GFP_KERNEL);
			if (!value) {
				err = -ENOMEM;
				break;
			}
			value_size = size;
			goto retry;
		}
		err = vfs_setxattr(&init_user_ns, new, name, value, size, 0);
		if (err)
			break;
	}
	kvfree(value);
out:
	kvfree(buf);
	return err;
}

static int cowlinkfs_set_attrs(struct dentry *new, struct iattr *attr)
{
	struct inode *inode = d_inode(new);
	int err;

	inode_lock(inode);
	err = notify_change(&init_user_ns, new, attr, NULL);
	inode_unlock(inode);
	return err;
}

/* The inode flags a copy keeps; append-only and immutable files never break. */
#define COWLINKFS_COPY_FL (FS_SYNC_FL | FS_NOATIME_FL | FS_NODUMP_FL)

static int cowlinkfs_copy_fileattr(struct dentry *old, struct dentry *new)
{
	struct fileattr fa = {};
	struct fileattr nfa;
	int err;

	err = vfs_fileattr_get(old, &fa);
	if (err == -ENOIOCTLCMD || err == -ENOTTY || err == -EOPNOTSUPP)
		return 0;
	if (err || !(fa.flags & COWLINKFS_COPY_FL))
		return err;
	fileattr_fill_flags(&nfa, fa.flags & COWLINKFS_COPY_FL);
	err = vfs_fileattr_set(&init_user_ns, new, &nfa);
	return err == -ENOIOCTLCMD ? 0 : err;
}

/*
 * Make the complete copy: data first, then xattrs (writing data would
 * strip security.capability), then owner, mode (which a chown may have
 * cleared setuid from) and times, then inode flags; and make it durable
 * before it gets a name.
 */
static int cowlinkfs_copy_inode(struct path *old, struct file *new,
				struct kstat *stat)
{
	struct dentry *dnew = new->f_path.dentry;
	struct iattr attr = {};
	struct file *oldfile;
	int err;

	oldfile = dentry_open(old, O_RDONLY | O_LARGEFILE | O_NOATIME,
			      current_cred());
	if (IS_ERR(oldfile))
		return PTR_ERR(oldfile);

	attr.ia_valid = ATTR_SIZE;
	attr.ia_size = stat->size;
	err = cowlinkfs_set_attrs(dnew, &attr);
	if (!err)
		err = cowlinkfs_copy_data(oldfile, new, stat->size);
	fput(oldfile);
	if (err)
		return err;

	err = cowlinkfs_copy_xattrs(old->dentry, dnew);
	if (err)
		return err;

	attr.ia_valid = ATTR_UID | ATTR_GID;
	attr.ia_uid = stat->uid;
	attr.ia_gid = stat->gid;
	err = cowlinkfs_set_attrs(dnew, &attr);
	if (err)
		return err;

	attr.ia_valid = ATTR_MODE;
	attr.ia_mode = stat->mode;
	err = cowlinkfs_set_attrs(dnew, &attr);
	if (err)
		return err;

	err = cowlinkfs_copy_fileattr(old->dentry, dnew);
	if (err)
		return err;

	attr.ia_valid = ATTR_ATIME | ATTR_MTIME | ATTR_ATIME_SET |
			ATTR_MTIME_SET;
	attr.ia_atime = stat->atime;
	attr.ia_mtime = stat->mtime;
	err = cowlinkfs_set_attrs(dnew, &attr);
	if (err)
		return err;

	return vfs_fsync(new, 0);
}

/*
 * Put the finished copy @tmp in place of @lower (at its name in @ldir):
 * link it into the work directory, then rename it over the name in one
 * step.  On success the dentry that now sits at the name is returned
 * (referenced) through @newlower; a dentry of 1 means the break became
 * unnecessary because the other names went away meanwhile.
 */
static int cowlinkfs_install(struct super_block *sb, struct dentry *tmp,
			     struct dentry *ldir, struct dentry *lower,
			     struct dentry **newlower)
{
	struct cowlinkfs_sb_info *sbi = CLSB(sb);
	struct dentry *work = sbi->workdir;
	struct renamedata rd = {};
	struct dentry *wd, *trap;
	char name[24];
	int err;

	snprintf(name, sizeof(name), "#%lx", d_inode(tmp)->i_ino);
	inode_lock_nested(d_inode(work), I_MUTEX_PARENT);
	wd = lookup_one_len(name, work, strlen(name));
	if (IS_ERR(wd)) {
		inode_unlock(d_inode(work));
		return PTR_ERR(wd);
	}
	err = vfs_link(tmp, &init_user_ns, d_inode(work), wd, NULL);
	inode_unlock(d_inode(work));
	if (err)
		goto out;

	trap = lock_rename(work, ldir);
	err = -ESTALE;
	if (wd == trap || lower == trap || lower->d_parent != ldir ||
	    d_unhashed(lower))
		goto out_unlink;
	if (d_inode(lower)->i_nlink <= 1) {
		/* The other names were broken or removed meanwhile. */
		err = 1;
		goto out_unlink;
	}
	rd.old_mnt_userns = &init_user_ns;
	rd.old_dir = d_inode(work);
	rd.old_dentry = wd;
	rd.new_mnt_userns = &init_user_ns;
	rd.new_dir = d_inode(ldir);
	rd.new_dentry = lower;
	err = vfs_rename(&rd);
	if (!err) {
		/* wd was moved to the name: it is the new lower dentry. */
		*newlower = dget(wd);
	}
	unlock_rename(work, ldir);
	goto out;

out_unlink:
	unlock_rename(work, ldir);
	inode_lock_nested(d_inode(work), I_MUTEX_PARENT);
	if (!d_unhashed(wd) && d_is_positive(wd) && wd->d_parent == work)
		vfs_unlink(&init_user_ns, d_inode(work), wd, NULL);
	inode_unlock(d_inode(work));
out:
	dput(wd);
	return err;
}

static int cowlinkfs_do_break(struct inode *inode)
{
	struct super_block *sb = inode->i_sb;
	struct cowlinkfs_sb_info *sbi = CLSB(sb);
	struct cowlinkfs_inode *ci = CLI(inode);
	struct dentry *ldir, *newlower = NULL, *oldlower;
	struct path lowerpath, dirpath;
	struct file *tmpfile;
	struct kstat stat;
	int err;

	if (!sbi->workdir)
		return -EROFS;

	cowlinkfs_lower_path(inode, &lowerpath);
	ldir = dget_parent(lowerpath.dentry);
	err = vfs_getattr(&lowerpath, &stat, STATX_BASIC_STATS,
			  AT_STATX_SYNC_AS_STAT);
	if (err)
		goto out;

	/*
	 * The unnamed temp file is made in the work directory: it has no
	 * default ACL to give the copy, and it is where the copy gets its
	 * temporary name.
	 */
	dirpath.mnt = sbi->lower_mnt;
	dirpath.dentry = sbi->workdir;
	tmpfile = vfs_tmpfile_open(&init_user_ns, &dirpath, S_IFREG | 0600,
				   O_WRONLY | O_LARGEFILE, current_cred());
	if (IS_ERR(tmpfile)) {
		err = PTR_ERR(tmpfile);
		goto out;
	}

	err = cowlinkfs_copy_inode(&lowerpath, tmpfile, &stat);
	if (!err)
		err = cowlinkfs_install(sb, tmpfile->f_path.dentry, ldir,
					lowerpath.dentry, &newlower);
	fput(tmpfile);
	if (err == 1) {
		err = 0;
		goto out;
	}
	if (err)
		goto out;

	spin_lock(&ci->lock);
	oldlower = ci->lower;
	WRITE_ONCE(ci->lower, newlower);
	spin_unlock(&ci->lock);
	dput(oldlower);
	cowlinkfs_copyattr(inode);
out:
	dput(ldir);
	path_put(&lowerpath);
	return err;
}

/* Has the name's lower inode a single link?  Peeks at the lower dentry. */
static bool cowlinkfs_single_link(struct inode *inode)
{
	bool ret;

	/* A break may drop the old lower dentry meanwhile; it is freed by RCU. */
	rcu_read_lock();
	ret = READ_ONCE(cowlinkfs_lower_inode(inode)->i_nlink) <= 1;
	rcu_read_unlock();
	return ret;
}

/**
 * cowlinkfs_break - give a name its own copy before it is modified
 * @dentry: cowlinkfs dentry about to be written to or changed
 *
 * Called after the caller's permission to make the change was checked, so
 * a refused caller never causes a copy.  Costs nothing for files that are
 * not COW or have a single link.  The copy is made with the mounter's
 * credentials and given the file's owner, mode, times, xattrs and flags.
 * Racing breaks of one name are serialised and make a single copy; the
 * other names of the file keep the old inode.  On any error (ENOSPC,
 * EDQUOT, EIO, a fatal signal) the name still holds the old inode and the
 * unnamed temp file just goes away.
 *
 * Return: 0 or a negative errno.
 */
int cowlinkfs_break(struct dentry *dentry)
{
	struct inode *inode = d_inode(dentry);
	struct cowlinkfs_inode *ci = CLI(inode);
	struct vfsmount *mnt = CLSB(inode->i_sb)->lower_mnt;
	const struct cred *old_cred;
	int err;

	if (!S_ISREG(inode->i_mode))
		return 0;
	if (cowlinkfs_single_link(inode)) {
		/*
		 * A break of this name may have renamed the copy over the
		 * name without having published it in ci->lower yet: the
		 * old inode already lost the name's link then.  Pairs with
		 * the barrier after set_bit() below.
		 */
		smp_rmb();
		if (likely(!test_bit_acquire(CLI_BREAKING, &ci->state)))
			return 0;
	} else if (!cowlinkfs_is_cow(inode)) {
		return 0;
	}

	err = mnt_want_write(mnt);
	if (err)
		return err;
	mutex_lock(&ci->break_mutex);
	/* Someone else may have broken this name while we waited. */
	if (cowlinkfs_lower_inode(inode)->i_nlink > 1 &&
	    cowlinkfs_is_cow(inode)) {
		set_bit(CLI_BREAKING, &ci->state);
		/* Set before the rename drops the old inode's link count. */
		smp_mb__after_atomic();
		old_cred = cowlinkfs_override_creds(inode->i_sb);
		err = cowlinkfs_do_break(inode);
		revert_creds(old_cred);
		/* Release: the new ci->lower is seen before the clear bit. */
		clear_bit_unlock(CLI_BREAKING, &ci->state);
	}
	mutex_unlock(&ci->break_mutex);
	mnt_drop_write(mnt);
	return err;
}
