// SPDX-License-Identifier: GPL-2.0
/*
 * cowlinkfs: copy-on-write hard links as a stacking filesystem.
 *
 * Breaking a cow link: the name being modified gets a complete private copy
 * of its lower inode, put in place atomically, and the cowlinkfs inode of
 * that name is re-pointed at the copy.  Modelled on overlayfs copy-up.
 */

#include <linux/error-injection.h>
#include <linux/fs.h>
#include <linux/file.h>
#include <linux/fileattr.h>
#include <linux/mount.h>
#include <linux/namei.h>
#include <linux/random.h>
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
		/*
		 * Truncated directly in the lower directory while the copy
		 * was made (through the mount, no name truncates an inode
		 * other names share): the bytes the copy was to hold are
		 * gone, which no retry finds.
		 */
		if (got == 0)
			return -EIO;

		for (off = 0; off < got;) {
			size_t run = min_t(size_t, bsize - (pos + off) % bsize,
					   got - off);
			loff_t wpos = pos + off;
			ssize_t put;

			if (!memchr_inv(buf + off, 0, run)) {
				off += run;
				continue;
			}
			/* A short write is retried: the next one says why. */
			put = __kernel_write(new, buf + off, run, &wpos);
			if (put < 0)
				return put;
			if (!put)
				return -ENOSPC;
			off += put;
		}
		pos += got;
		cond_resched();
	}
	return 0;
}

/*
 * The steps of a break are separate functions, each marked for error
 * injection (Documentation/fault-injection/fault-injection.rst,
 * fail_function), so that the tests can fail every one of them and check
 * that the name keeps its old inode.
 */

/* Step 1: the unnamed temp file, in the work directory. */
static noinline int cowlinkfs_make_tmpfile(struct super_block *sb,
					   struct dentry *work,
					   struct file **tmpfile)
{
	struct path dirpath = {
		.mnt = COWLINKFS_SB(sb)->lower_root.mnt,
		.dentry = work,
	};
	struct file *file;

	/*
	 * The work directory has no ACL (see cowlinkfs_setup_workdir()),
	 * so the copy gets none it should not have; it is created by the
	 * file's owner, see cowlinkfs_copy_creds().
	 */
	file = vfs_tmpfile_open(cowlinkfs_userns(), &dirpath, S_IFREG | 0600,
				O_WRONLY | O_LARGEFILE, current_cred());
	if (IS_ERR(file))
		return PTR_ERR(file);
	*tmpfile = file;
	return 0;
}

ALLOW_ERROR_INJECTION(cowlinkfs_make_tmpfile, ERRNO);

/* The inode flags a copy keeps; append-only and immutable files never break. */
#define COWLINKFS_COPY_XFLAGS (FS_XFLAG_SYNC | FS_XFLAG_NOATIME | \
			       FS_XFLAG_NODUMP | FS_XFLAG_NODEFRAG | \
			       FS_XFLAG_EXTSIZE | FS_XFLAG_COWEXTSIZE)

/*
 * Step 2: inode flags, the project id and the extent size hints, before
 * any data: xfs takes no extent size hint on a file that has extents, the
 * data is charged to the project it belongs to, and a copy in a directory
 * with the project-inherit flag has to have the directory's project id to
 * be renamed into it (xfs and ext4 refuse with EXDEV otherwise).
 */
static noinline int cowlinkfs_copy_fileattr(struct dentry *old,
					    struct dentry *new)
{
	struct fileattr fa = {}, cur = {};
	struct fileattr nfa;
	int err;

	err = vfs_fileattr_get(old, &fa);
	if (err == -ENOIOCTLCMD || err == -ENOTTY || err == -EOPNOTSUPP)
		return 0;
	if (!err)
		err = vfs_fileattr_get(new, &cur);
	if (err)
		return err;
	fileattr_fill_xflags(&nfa, fa.fsx_xflags & COWLINKFS_COPY_XFLAGS);
	nfa.fsx_projid = fa.fsx_projid;
	if (fa.fsx_xflags & FS_XFLAG_EXTSIZE)
		nfa.fsx_extsize = fa.fsx_extsize;
	if (fa.fsx_xflags & FS_XFLAG_COWEXTSIZE)
		nfa.fsx_cowextsize = fa.fsx_cowextsize;
	/* Exactly the original's: none the copy got from the work dir. */
	if ((cur.fsx_xflags & COWLINKFS_COPY_XFLAGS) == nfa.fsx_xflags &&
	    cur.fsx_projid == nfa.fsx_projid &&
	    cur.fsx_extsize == nfa.fsx_extsize &&
	    cur.fsx_cowextsize == nfa.fsx_cowextsize)
		return 0;
	err = vfs_fileattr_set(cowlinkfs_userns(), new, &nfa);
	return err == -ENOIOCTLCMD ? 0 : err;
}

ALLOW_ERROR_INJECTION(cowlinkfs_copy_fileattr, ERRNO);

static int cowlinkfs_set_attrs(struct dentry *new, struct iattr *attr)
{
	struct inode *inode = d_inode(new);
	int err;

	inode_lock(inode);
	err = notify_change(cowlinkfs_userns(), new, attr, NULL);
	inode_unlock(inode);
	return err;
}

/*
 * Step 3: the size and the data: a reflink where the lower filesystem can
 * share extents, else region by region between SEEK_DATA and SEEK_HOLE, so
 * holes are never read.  A fatal signal stops the copy.
 */
static noinline int cowlinkfs_copy_data(struct path *old, struct file *new,
					loff_t len)
{
	struct iattr attr = { .ia_valid = ATTR_SIZE, .ia_size = len };
	loff_t pos = 0, data, hole;
	struct file *oldfile;
	char *buf = NULL;
	int err;

	err = cowlinkfs_set_attrs(new->f_path.dentry, &attr);
	if (err || !len)
		return err;
	oldfile = dentry_open(old, O_RDONLY | O_LARGEFILE | O_NOATIME,
			      current_cred());
	if (IS_ERR(oldfile))
		return PTR_ERR(oldfile);
	if (do_clone_file_range(oldfile, 0, new, 0, len, 0) == len)
		goto out;

	buf = kvmalloc(COWLINKFS_COPY_CHUNK, GFP_KERNEL);
	err = -ENOMEM;
	if (!buf)
		goto out;
	err = 0;
	while (pos < len && !err) {
		data = vfs_llseek(oldfile, pos, SEEK_DATA);
		if (data == -ENXIO)
			break;			/* only a hole is left */
		if (data < 0)
			data = pos;		/* no SEEK_DATA: all data */
		hole = vfs_llseek(oldfile, data, SEEK_HOLE);
		if (hole < 0 || hole > len)
			hole = len;
		if (hole <= data)
			break;
		err = cowlinkfs_copy_region(oldfile, new, data, hole, buf);
		pos = hole;
	}
out:
	kvfree(buf);
	fput(oldfile);
	return err;
}

ALLOW_ERROR_INJECTION(cowlinkfs_copy_data, ERRNO);

/*
 * Step 4: every xattr, ACLs, security.* and our flag included, after the
 * data, whose writing would strip security.capability.  The copy ends up
 * with exactly the ACLs of the original: one it got elsewhere goes.
 */
static noinline int cowlinkfs_copy_xattrs(struct dentry *old,
					  struct dentry *new)
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
		size = vfs_getxattr(cowlinkfs_userns(), old, name, value, value_size);
		if (size == -ERANGE)
			size = vfs_getxattr(cowlinkfs_userns(), old, name, NULL, 0);
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
		err = vfs_setxattr(cowlinkfs_userns(), new, name, value, size, 0);
		if (err)
			break;
	}
	kvfree(value);
out:
	kvfree(buf);
	if (!err && IS_POSIXACL(d_inode(new)) &&
	    __vfs_getxattr(old, d_inode(old), XATTR_NAME_POSIX_ACL_ACCESS,
			   NULL, 0) == -ENODATA) {
		err = vfs_removexattr(cowlinkfs_userns(), new,
				      XATTR_NAME_POSIX_ACL_ACCESS);
		if (err == -ENODATA || err == -EOPNOTSUPP)
			err = 0;
	}
	return err;
}

ALLOW_ERROR_INJECTION(cowlinkfs_copy_xattrs, ERRNO);

/*
 * Step 5: owner, then mode (which a chown may have cleared setuid from),
 * then times.
 */
static noinline int cowlinkfs_copy_attrs(struct dentry *new,
					 struct kstat *stat)
{
	struct inode *inode = d_inode(new);
	struct iattr attr = {};
	int err;

	if (!uid_eq(inode->i_uid, stat->uid) ||
	    !gid_eq(inode->i_gid, stat->gid)) {
		attr.ia_valid = ATTR_UID | ATTR_GID;
		attr.ia_uid = stat->uid;
		attr.ia_gid = stat->gid;
		err = cowlinkfs_set_attrs(new, &attr);
		if (err)
			return err;
	}

	attr.ia_valid = ATTR_MODE;
	attr.ia_mode = stat->mode;
	err = cowlinkfs_set_attrs(new, &attr);
	if (err)
		return err;

	attr.ia_valid = ATTR_ATIME | ATTR_MTIME | ATTR_ATIME_SET |
			ATTR_MTIME_SET;
	attr.ia_atime = stat->atime;
	attr.ia_mtime = stat->mtime;
	return cowlinkfs_set_attrs(new, &attr);
}

ALLOW_ERROR_INJECTION(cowlinkfs_copy_attrs, ERRNO);

/* Step 6: the copy is durable before it gets a name (break_sync=on). */
static noinline int cowlinkfs_sync_copy(struct file *new)
{
	return vfs_fsync(new, 0);
}

ALLOW_ERROR_INJECTION(cowlinkfs_sync_copy, ERRNO);

/* Step 7: a temporary name in the work directory, locked by the caller. */
static noinline int cowlinkfs_link_work(struct dentry *tmp,
					struct dentry *work, struct dentry *wd)
{
	return vfs_link(tmp, cowlinkfs_userns(), d_inode(work), wd, NULL);
}

ALLOW_ERROR_INJECTION(cowlinkfs_link_work, ERRNO);

/* Step 8: the copy replaces the name in one step; both dirs locked. */
static noinline int cowlinkfs_rename_over(struct dentry *work,
					  struct dentry *wd,
					  struct dentry *ldir,
					  struct dentry *lower)
{
	return cowlinkfs_do_rename(work, wd, ldir, lower, 0);
}

ALLOW_ERROR_INJECTION(cowlinkfs_rename_over, ERRNO);

/*
 * Make the complete copy of @old in @new, durable before it gets a name
 * unless the mount says break_sync=off.  Without the fsync a crash may
 * leave the name on a copy whose data the lower fs had not written back
 * yet; the fsync protects nothing else: the old inode is only read, the
 * other names are not touched, and on a journalling lower fs the copy's
 * metadata is committed no later than the rename that names it.  The
 * setting is read when the copy is complete (see
 * cowlinkfs_set_break_sync()).
 */
static int cowlinkfs_copy_inode(struct super_block *sb, struct path *old,
				struct file *new, struct kstat *stat)
{
	struct dentry *dnew = new->f_path.dentry;
	int err;

	err = cowlinkfs_copy_fileattr(old->dentry, dnew);
	if (!err)
		err = cowlinkfs_copy_data(old, new, stat->size);
	if (!err)
		err = cowlinkfs_copy_xattrs(old->dentry, dnew);
	if (!err)
		err = cowlinkfs_copy_attrs(dnew, stat);
	if (!err) {
		smp_mb();	/* the copy is made before the setting is read */
		if (READ_ONCE(COWLINKFS_SB(sb)->break_sync))
			err = cowlinkfs_sync_copy(new);
	}
	return err;
}

/*
 * A free name for a copy in the work directory, which the caller holds
 * locked: "#<inode number>", or with a random suffix if something that
 * the cleanup at mount could not remove (a directory planted there before
 * the mount, where inode numbers are easy to guess) has that name.
 */
static struct dentry *cowlinkfs_work_entry(struct dentry *work,
					   unsigned long ino)
{
	struct dentry *wd;
	char name[40];
	int i;

	for (i = 0; i < 16; i++) {
		if (i)
			snprintf(name, sizeof(name), "#%lx.%08x", ino,
				 get_random_u32());
		else
			snprintf(name, sizeof(name), "#%lx", ino);
		wd = lookup_one_len(name, work, strlen(name));
		if (IS_ERR(wd) || d_is_negative(wd))
			return wd;
		dput(wd);
	}
	return ERR_PTR(-EEXIST);
}

/**
 * cowlinkfs_install - put a finished copy in place of a name
 * @inode: cowlinkfs inode of the name
 * @tmp: the finished copy, unnamed
 * @ldir: the lower parent of the name
 * @lower: the lower dentry at the name
 *
 * Links @tmp into the work directory, then renames it over the name in
 * one step, and publishes the new lower dentry in @inode while the parent
 * is still locked: until then, unlink or rename of the name through the
 * mount would find a lower dentry that is not ours (ESTALE), and
 * d_revalidate would drop our dentry and give the name a second inode.
 *
 * Return: 0 when the name has an inode of its own: the copy's, or the old
 * one if the other names went away meanwhile (the copy is dropped then);
 * or a negative errno, the name untouched and the temporary name gone.
 */
static int cowlinkfs_install(struct inode *inode, struct dentry *tmp,
			     struct dentry *ldir, struct dentry *lower)
{
	struct cowlinkfs_inode *ci = COWLINKFS_I(inode);
	struct dentry *work, *wd, *trap, *oldlower = NULL;
	int err;

	/*
	 * The work directory may have been removed since the copy was made
	 * in it (it was empty: the copy has no name yet); the copy is linked
	 * into the one at the work directory's name now, locked until it is.
	 */
	work = cowlinkfs_lock_workdir(inode->i_sb, true);
	if (IS_ERR(work))
		return PTR_ERR(work);
	wd = cowlinkfs_work_entry(work, d_inode(tmp)->i_ino);
	if (!IS_ERR(wd)) {
		err = cowlinkfs_link_work(tmp, work, wd);
		if (err)
			dput(wd);
	} else {
		err = PTR_ERR(wd);
	}
	inode_unlock(d_inode(work));
	if (err) {
		dput(work);
		return err;
	}

	trap = lock_rename(work, ldir);
	err = -ESTALE;
	/* Both names must still be where we left them. */
	if (wd == trap || lower == trap || lower->d_parent != ldir ||
	    d_unhashed(lower) || wd->d_parent != work || d_unhashed(wd) ||
	    d_inode(wd) != d_inode(tmp))
		goto out_unlink;
	if (d_inode(lower)->i_nlink <= 1) {
		/* The other names were broken or removed meanwhile. */
		err = 0;
		goto out_unlink;
	}
	err = cowlinkfs_rename_over(work, wd, ldir, lower);
	if (err)
		goto out_unlink;
	/* wd was moved to the name: it is the new lower dentry. */
	set_bit(COWLINKFS_I_UNSYNCED, &ci->state);
	spin_lock(&ci->lock);
	oldlower = ci->lower;
	WRITE_ONCE(ci->lower, dget(wd));
	spin_unlock(&ci->lock);
	unlock_rename(work, ldir);
	dput(oldlower);
	goto out;

out_unlink:
	unlock_rename(work, ldir);
	inode_lock_nested(d_inode(work), I_MUTEX_PARENT);
	if (!d_unhashed(wd) && d_is_positive(wd) && wd->d_parent == work)
		vfs_unlink(cowlinkfs_userns(), d_inode(work), wd, NULL);
	inode_unlock(d_inode(work));
out:
	dput(wd);
	dput(work);
	return err;
}

/**
 * cowlinkfs_copy_creds - the credentials a link break runs with
 * @owner: the lower inode's attributes
 *
 * The mounter's, which are in force, so that the copy can be made whatever
 * the caller may read; but with the file's owner and group as fsuid and
 * fsgid, and without CAP_SYS_RESOURCE.  The copy is thus created as,
 * charged to and limited like a write of the owner's: quotas apply, and
 * the blocks ext4 reserves (for its resuid or CAP_SYS_RESOURCE) and xfs's
 * forced quota reservations are never used for someone else's copy.
 *
 * Return: the new credentials or NULL.
 */
static struct cred *cowlinkfs_copy_creds(const struct kstat *owner)
{
	struct cred *cred = prepare_creds();

	if (!cred)
		return NULL;
	cred->fsuid = owner->uid;
	cred->fsgid = owner->gid;
	cap_lower(cred->cap_effective, CAP_SYS_RESOURCE);
	return cred;
}

/*
 * Make a complete, durable (see cowlinkfs_copy_inode()), unnamed copy of
 * @lower in the work directory, as the file's owner (the mounter's
 * credentials are in force).
 */
static int cowlinkfs_make_copy(struct super_block *sb, struct path *lower,
			       loff_t size, struct file **copy)
{
	const struct cred *old_cred;
	struct file *tmpfile;
	struct dentry *work;
	struct kstat stat;
	struct cred *cred;
	int err;

	err = vfs_getattr(lower, &stat, STATX_BASIC_STATS,
			  AT_STATX_SYNC_AS_STAT);
	if (err)
		return err;
	/* What a truncation that follows would throw away is not copied. */
	stat.size = min(stat.size, size);
	/*
	 * The copy is written under the caller's RLIMIT_FSIZE, whose
	 * SIGXFSZ would kill a caller that only meant to change a byte:
	 * refuse a copy beyond the limit with EFBIG alone.
	 */
	if (stat.size > rlimit(RLIMIT_FSIZE))
		return -EFBIG;
	cred = cowlinkfs_copy_creds(&stat);
	if (!cred)
		return -ENOMEM;
	/*
	 * Found, or put back, before anything is copied, and locked until
	 * the copy is made in it: ext4 refuses one in a removed directory.
	 */
	work = cowlinkfs_lock_workdir(sb, false);
	if (IS_ERR(work)) {
		err = PTR_ERR(work);
		goto out_put;
	}
	err = -EPERM;
	if (!IS_APPEND(d_inode(work)) && !IS_IMMUTABLE(d_inode(work))) {
		old_cred = override_creds(cred);
		err = cowlinkfs_make_tmpfile(sb, work, &tmpfile);
		revert_creds(old_cred);
	}
	cowlinkfs_unlock_workdir(work, false);
	if (!err) {
		old_cred = override_creds(cred);
		err = cowlinkfs_copy_inode(sb, lower, tmpfile, &stat);
		revert_creds(old_cred);
		if (err)
			fput(tmpfile);
		else
			*copy = tmpfile;
	}
out_put:
	put_cred(cred);
	return err;
}

static int cowlinkfs_do_break(struct inode *inode, loff_t size)
{
	struct path lowerpath;
	struct file *copy;
	struct dentry *ldir;
	int err;

	cowlinkfs_lower_path(inode, &lowerpath);
	ldir = dget_parent(lowerpath.dentry);
	err = cowlinkfs_make_copy(inode->i_sb, &lowerpath, size, &copy);
	if (!err) {
		err = cowlinkfs_install(inode, copy->f_path.dentry, ldir,
					lowerpath.dentry);
		fput(copy);
	}
	if (!err)
		cowlinkfs_copyattr(inode);
	dput(ldir);
	path_put(&lowerpath);
	return err;
}

/*
 * Was the name removed from the lower directory (unlinked or renamed
 * over, through the mount or directly), since it was looked up?  Its lower
 * dentry is unhashed then, while a rename only moves it.  An unlink drops
 * the link count in ->unlink() and unhashes the dentry only after, so a
 * name that is still hashed while its inode has one link is looked at
 * again under the lower parent's lock, which the unlink holds throughout.
 */
static bool cowlinkfs_lower_gone(struct dentry *lower)
{
	struct dentry *parent;
	bool gone;

	gone = d_unhashed(lower);
	if (!gone && d_inode(lower)->i_nlink <= 1) {
		parent = dget_parent(lower);
		inode_lock_nested(d_inode(parent), I_MUTEX_PARENT);
		gone = d_unhashed(lower);
		inode_unlock(d_inode(parent));
		dput(parent);
	}
	return gone;
}

static bool cowlinkfs_name_gone(struct inode *inode)
{
	struct path lowerpath;
	bool gone;

	/* An O_TMPFILE file was never a name: its writes are the file's. */
	if (test_bit(COWLINKFS_I_UNNAMED, &COWLINKFS_I(inode)->state))
		return false;
	/* Pairs with the smp_wmb() of cowlinkfs_name_tmpfile(). */
	smp_rmb();
	cowlinkfs_lower_path(inode, &lowerpath);
	gone = cowlinkfs_lower_gone(lowerpath.dentry);
	path_put(&lowerpath);
	return gone;
}

/**
 * cowlinkfs_copy_unlinked - a private copy for a writer whose name is gone
 * @inode: cowlinkfs inode of the name, which was unlinked or renamed over
 *	   through the mount after the writer looked it up
 * @real: the writer's lower file, on the inode the name had (read-only
 *	  for a writer that has not written yet, see cowlinkfs_open())
 * @flags: the writer's open flags, for its file on the copy
 * @cred: the writer's credentials, for its file on the copy
 * @size: as for cowlinkfs_break_size()
 *
 * A write-only descriptor breaks the link at its first write, and an
 * O_RDWR open breaks it at open, each some time after the name was looked
 * up (see struct cowlinkfs_file).  If the name went away in between, there
 * is no name to put a copy at, but the inode may still have other names,
 * which must keep their bytes.  The writer gets an unnamed copy of its
 * own, which goes away at its last close, as the unlinked name would have.
 *
 * Return: the writer's new lower file, NULL if it may go on with @real
 * (no other name is left to protect, or the file is not COW), or an
 * ERR_PTR().
 */
struct file *cowlinkfs_copy_unlinked(struct inode *inode, struct file *real,
				     int flags, const struct cred *cred,
				     loff_t size)
{
	struct cowlinkfs_inode *ci = COWLINKFS_I(inode);
	struct super_block *sb = inode->i_sb;
	struct inode *rinode = file_inode(real);
	const struct cred *old_cred;
	struct file *copy, *file;
	int err;

	if (rinode->i_nlink == 0)
		return NULL;
	err = cowlinkfs_is_cow(inode);
	if (err <= 0)
		return ERR_PTR(err);
	/* An unnamed copy is renamed nowhere: only the file itself counts. */
	if (IS_APPEND(rinode) || IS_IMMUTABLE(rinode) || IS_VERITY(rinode))
		return ERR_PTR(-EPERM);
	if (IS_ENCRYPTED(rinode))
		return ERR_PTR(-EXDEV);

	err = cowlinkfs_want_write(sb);
	if (err)
		return ERR_PTR(err);
	err = mutex_lock_killable(&ci->break_mutex);
	if (err)
		goto out_drop;
	old_cred = cowlinkfs_override_creds(sb);
	err = cowlinkfs_make_copy(sb, &real->f_path, size, &copy);
	revert_creds(old_cred);
	mutex_unlock(&ci->break_mutex);
	if (err)
		goto out_drop;
	/* The writer's own access, on the copy. */
	file = dentry_open(&copy->f_path, flags, cred);
	fput(copy);
	cowlinkfs_drop_write(sb);
	return file;

out_drop:
	cowlinkfs_drop_write(sb);
	return ERR_PTR(err);
}

/*
 * Is a name of a shared inode removed (unlinked or renamed over, through
 * the mount or below) while its dentry lives on, held by a descriptor?
 * Such a descriptor reaches the lower inode the names left have, as a
 * removed name's descriptor does on a per-name inode.  Each alias keeps
 * its lower dentry in d_fsdata until d_release, after it left the list.
 */
static bool cowlinkfs_removed_alias(struct inode *inode)
{
	struct dentry *alias, *lower;
	bool ret = false;

	spin_lock(&inode->i_lock);
	hlist_for_each_entry(alias, &inode->i_dentry, d_u.d_alias) {
		lower = READ_ONCE(alias->d_fsdata);
		if (lower && d_unhashed(lower)) {
			ret = true;
			break;
		}
	}
	spin_unlock(&inode->i_lock);
	return ret;
}

/**
 * cowlinkfs_lower_shared - may other names see a change of the name's inode?
 * @inode: cowlinkfs inode of a name
 *
 * They may if the lower inode has more than one link, and also if it has
 * one that is not this name's: the name was removed (unlinked or renamed
 * over) since it was looked up, and a descriptor or a /proc/self/fd link
 * still reaches it.  The inode lives on under the other name then, which
 * must not see a change made through this one.  Peeks at the lower dentry
 * under RCU, since a break may drop it; an unlink racing with the peek can
 * be caught only under the lower parent's lock (cowlinkfs_name_gone()).
 * For a shared inode, which has all the names, a removed one among them
 * counts (cowlinkfs_removed_alias()).
 *
 * Return: true if other names share the inode.
 */
bool cowlinkfs_lower_shared(struct inode *inode)
{
	struct inode *real;
	struct dentry *lower;
	unsigned int nlink;
	bool ret, unnamed;

	/*
	 * An O_TMPFILE file being named: one link, no name removed.  The bit
	 * is cleared after the name's lower dentry is in place.
	 */
	unnamed = test_bit(COWLINKFS_I_UNNAMED, &COWLINKFS_I(inode)->state);
	/* Pairs with the smp_wmb() of cowlinkfs_name_tmpfile(). */
	smp_rmb();
	rcu_read_lock();
	lower = cowlinkfs_lower_peek(inode);
	real = lower ? d_inode_rcu(lower) : NULL;
	/* Killed by a break of this name just now: ask under break_mutex. */
	nlink = real ? READ_ONCE(real->i_nlink) : 2;
	if (!cowlinkfs_inode_shared(inode)) {
		ret = nlink > 1 ||
		      (nlink == 1 && d_unhashed(lower) && !unnamed);
	} else {
		/* Its @lower is any of its names: ask each name's own. */
		ret = nlink > 1 || (nlink == 1 &&
				    cowlinkfs_removed_alias(inode));
	}
	rcu_read_unlock();
	return ret;
}

/**
 * cowlinkfs_may_break - could the name be given a copy of its own?
 * @inode: cowlinkfs inode of a name that shares a COW inode
 *
 * A break renames its copy over the name, out of the work directory.  The
 * lower fs refuses that rename for an append-only or immutable file, one
 * in an append-only or immutable directory, and out of an append-only or
 * immutable work directory: such a change is refused before anything is
 * copied, with the lower fs's errno (EPERM), never the EIO of a copy that
 * could not be put in place.  Nor is a change of an encrypted file made:
 * the work directory is not encrypted, a copy made there would write the
 * file's plaintext and could not be renamed back (EXDEV).  A swap file
 * is not written (ETXTBSY), nor an fs-verity file, whose copy would not
 * be verified (EPERM, what the lower fs answers for writing one).  Only
 * peeks at the work directory: a break puts it back if need be
 * (cowlinkfs_lock_workdir()).
 *
 * Return: 0 or a negative errno.
 */
int cowlinkfs_may_break(struct inode *inode)
{
	struct cowlinkfs_sb_info *sbi = COWLINKFS_SB(inode->i_sb);
	struct dentry *parent, *work;
	struct path lowerpath;
	struct inode *real;
	int err = 0;

	cowlinkfs_lower_path(inode, &lowerpath);
	real = d_inode(lowerpath.dentry);
	if (IS_APPEND(real) || IS_IMMUTABLE(real) || IS_VERITY(real))
		err = -EPERM;
	else if (IS_SWAPFILE(real))
		err = -ETXTBSY;
	else if (IS_ENCRYPTED(real))
		err = -EXDEV;
	if (!err && !d_unhashed(lowerpath.dentry)) {
		parent = dget_parent(lowerpath.dentry);
		if (IS_APPEND(d_inode(parent)) || IS_IMMUTABLE(d_inode(parent)))
			err = -EPERM;
		dput(parent);
	}
	path_put(&lowerpath);
	if (err)
		return err;

	spin_lock(&sbi->lock);
	work = dget(sbi->workdir);
	spin_unlock(&sbi->lock);
	if (!work)
		return -EROFS;
	if (d_inode(work) &&
	    (IS_APPEND(d_inode(work)) || IS_IMMUTABLE(d_inode(work))))
		err = -EPERM;
	dput(work);
	return err;
}

/*
 * Does the name need a break now?  Under break_mutex.  A name that cannot
 * be broken refuses the change (see cowlinkfs_may_break()).
 */
static int cowlinkfs_needs_break(struct inode *inode)
{
	int cow;

	if (!cowlinkfs_lower_shared(inode))
		return 0;
	cow = cowlinkfs_is_cow(inode);
	if (cow <= 0)
		return cow;
	/* No name to put a copy at: the caller decides (see break_writer). */
	if (cowlinkfs_name_gone(inode))
		return -ESTALE;
	return cowlinkfs_may_break(inode) ?: 1;
}

/**
 * cowlinkfs_break_shared - a change through a name of a shared inode
 * @dentry: cowlinkfs dentry of a shared inode, about to be changed
 *
 * A shared inode stands for every name of its lower inode, and its
 * @lower, its locks, leases, watches and i_writecount for all of them: a
 * break cannot swap the lower inode beneath it (every name would move to
 * the copy), nor move the state of one name off it (no VFS interface
 * does).  It is the inode of a regular file only while the file is not
 * COW; a file that became COW since (a flag set, a remount to cow=all, a
 * flag or a link made in the lower directory) may have to break this
 * name.  Then the name is dropped, so that a new lookup gives it an inode
 * of its own (cowlinkfs_shares_inode() now says so), and ESTALE returned
 * before anything is copied: truncate(2), chmod(2), chown(2), utimes(2)
 * and the path xattr calls retry the walk once (retry_estale()), and open
 * does with EOPENSTALE (see cowlinkfs_open()).  A descriptor or an fd call
 * (fchmod, fsetxattr, FS_IOC_SETFLAGS) is bound to the shared inode and
 * gets ESTALE, as NFS answers for a file whose handle went stale, rather
 * than a break of its own name: its file would move to the copy while
 * its locks and watches stayed on the inode the other names share, and
 * writes under a lock taken through it would not exclude the other
 * holders of the name.  Such a writer exists only if it was opened while
 * the file became COW: a flag set, a remount to cow=all and a link() of
 * a COW file are refused while a multi-link file is open for writing.
 * A mountpoint is not dropped (its mounts would be hidden): EBUSY.
 *
 * Return: 0 if the change may go to the shared lower inode, or a negative
 * errno, nothing changed.
 */
int cowlinkfs_break_shared(struct dentry *dentry)
{
	struct inode *inode = d_inode(dentry);
	struct dentry *lower = cowlinkfs_dentry_lower(dentry);
	unsigned int nlink;
	int cow;

	if (!S_ISREG(inode->i_mode))
		return 0;
	/*
	 * First what cowlinkfs_lower_shared() asks of a name's own inode,
	 * without a lock: other links, or a link that is not this name's
	 * (it was removed, another name keeps the inode).  A single name
	 * has nothing to break, whatever the flag: its change (every write
	 * open, chmod, utimes, ...) reads no xattr.  An unlink of this name
	 * racing with the test is taken as made after the change, as the
	 * fast path of cowlinkfs_break_size() takes it; so is one of another
	 * name, which at worst makes this change retry.
	 */
	nlink = READ_ONCE(d_inode(lower)->i_nlink);
	if (!nlink || (nlink == 1 && !d_unhashed(lower)))
		return 0;
	cow = cowlinkfs_is_cow(inode);
	if (cow <= 0)
		return cow;
	remove_inode_hash(inode);
	if (d_mountpoint(dentry))
		return -EBUSY;
	d_drop(dentry);
	return -ESTALE;
}

/**
 * cowlinkfs_break_size - give a name its own copy before it is modified
 * @dentry: cowlinkfs dentry about to be written to or changed
 * @size: the size the change leaves the file (a truncation), LLONG_MAX if
 *	  it keeps all of it: only that much is copied
 *
 * Called after the caller's permission to make the change was checked, so
 * a refused caller never causes a copy.  Costs nothing for files that are
 * not COW or have a single link.  The copy is made with the mounter's
 * credentials, as the file's owner (see cowlinkfs_copy_creds()), and given
 * the file's owner, mode, times, xattrs and flags.  Racing breaks of one
 * name are serialised and make a single copy; the other names of the file
 * keep the old inode.  On any error (ENOSPC, EDQUOT, EIO, a fatal signal)
 * the name still holds the old inode and the unnamed temp file just goes
 * away.  A name that was removed while its inode lives on under another
 * name cannot be broken: ESTALE, before anything is copied.  Nor can a
 * name of a shared inode (cowlinkfs_break_shared()).
 *
 * Return: 0 or a negative errno.
 */
int cowlinkfs_break_size(struct dentry *dentry, loff_t size)
{
	struct inode *inode = d_inode(dentry);
	struct cowlinkfs_inode *ci = COWLINKFS_I(inode);
	const struct cred *old_cred;
	int tries = 0;
	int err;

	if (!S_ISREG(inode->i_mode))
		return 0;
	if (cowlinkfs_inode_shared(inode))
		return cowlinkfs_break_shared(dentry);
	if (!cowlinkfs_lower_shared(inode)) {
		/*
		 * A break of this name may have renamed the copy over the
		 * name without having published it in ci->lower yet: the
		 * old inode already lost the name's link then.  Pairs with
		 * the barrier after set_bit() below.
		 */
		smp_rmb();
		if (likely(!test_bit_acquire(COWLINKFS_I_BREAKING, &ci->state)))
			return 0;
	} else {
		err = cowlinkfs_is_cow(inode);
		if (err <= 0)
			return err;
	}

	err = cowlinkfs_want_write(inode->i_sb);
	if (err)
		return err;
	err = mutex_lock_killable(&ci->break_mutex);
	if (err)
		goto out_drop;
	/* Someone else may have broken this name while we waited. */
	err = cowlinkfs_needs_break(inode);
	if (err > 0) {
		set_bit(COWLINKFS_I_BREAKING, &ci->state);
		/* Set before the rename drops the old inode's link count. */
		smp_mb__after_atomic();
		old_cred = cowlinkfs_override_creds(inode->i_sb);
		/*
		 * A rename of the name through the mount may move it to
		 * another directory while the copy is made: make it again
		 * for the new place.  If the name was removed, there is
		 * nothing to put the copy at: ESTALE, and the callers
		 * that have a file give it an unnamed copy instead.
		 */
		do {
			err = cowlinkfs_do_break(inode, size);
		} while (err == -ESTALE && !cowlinkfs_name_gone(inode) &&
			 ++tries < 3);
		revert_creds(old_cred);
		/* Release: the new ci->lower is seen before the clear bit. */
		clear_bit_unlock(COWLINKFS_I_BREAKING, &ci->state);
	}
	mutex_unlock(&ci->break_mutex);
out_drop:
	cowlinkfs_drop_write(inode->i_sb);
	return err;
}

/* cowlinkfs_break_size() for a change that keeps all of the file. */
int cowlinkfs_break(struct dentry *dentry)
{
	return cowlinkfs_break_size(dentry, LLONG_MAX);
}

/**
 * cowlinkfs_break_writer - break the link of a name a file is written through
 * @dentry: cowlinkfs dentry the file was opened through
 * @size: as for cowlinkfs_break_size()
 *
 * A writer holds a lower file on the inode its name had when it was
 * looked up.  If the name was removed since, a break has nothing to put a
 * copy at, or finds nothing to do because the inode has one link left,
 * which is another name's; either way the writer must not write to it.
 *
 * Return: 0 when the name's lower inode is the writer's to write, 1 when
 * the name is gone (the caller gives the writer an unnamed copy, see
 * cowlinkfs_copy_unlinked()), or a negative errno.
 */
int cowlinkfs_break_writer(struct dentry *dentry, loff_t size)
{
	struct inode *inode = d_inode(dentry);
	int err = cowlinkfs_break_size(dentry, size);

	/* Never broken, nor given a copy: see cowlinkfs_break_shared(). */
	if (cowlinkfs_inode_shared(inode))
		return err;
	if (!err) {
		/* Writes to a file that is not COW reach every name anyway. */
		err = cowlinkfs_is_cow(inode);
		if (err <= 0)
			return err;
		err = 0;
	} else if (err != -ESTALE) {
		return err;
	}
	return cowlinkfs_name_gone(inode) ? 1 : err;
}
