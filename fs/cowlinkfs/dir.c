// SPDX-License-Identifier: GPL-2.0
/*
 * cowlinkfs: copy-on-write hard links as a stacking filesystem.
 *
 * Directory operations: each is done on the lower directory under its own
 * lock, with a fresh lower lookup of the name, the way overlayfs works on
 * its upper layer.
 */

#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mount.h>
#include <linux/namei.h>
#include "cowlinkfs.h"

static int cowlinkfs_same_name(struct dentry *lower, struct dentry *dentry)
{
	int same;

	spin_lock(&lower->d_lock);
	same = lower->d_name.len == dentry->d_name.len &&
	       !memcmp(lower->d_name.name, dentry->d_name.name,
		       dentry->d_name.len);
	spin_unlock(&lower->d_lock);
	return same;
}

/*
 * The same in RCU walk, without the lower dentry's lock: a rename may
 * change either name under us, but an old name stays readable until a
 * grace period has passed, and the VFS checks our dentry's d_seq after.
 * Only a name short enough to sit in the dentry itself is compared, so
 * that a length read before a rename cannot take memcmp() past the end of
 * the name read after it; a longer one is left to ref-walk.
 */
static int cowlinkfs_same_name_rcu(struct dentry *lower, struct dentry *dentry)
{
	const unsigned char *lname = READ_ONCE(lower->d_name.name);
	const unsigned char *name = READ_ONCE(dentry->d_name.name);
	unsigned int len = READ_ONCE(dentry->d_name.len);

	if (READ_ONCE(lower->d_name.len) != len)
		return 0;
	if (len >= DNAME_INLINE_LEN)
		return -ECHILD;
	return !memcmp(lname, name, len);
}

static bool cowlinkfs_keep_negative(struct dentry *lower)
{
	/*
	 * Only where the lower fs keeps its negative dentries as long as we
	 * would: one it revalidates (FUSE's time out, fscrypt's no-key
	 * names) is looked up again each time, as before.
	 */
	return !(lower->d_flags & (DCACHE_OP_REVALIDATE |
				   DCACHE_OP_WEAK_REVALIDATE));
}

/*
 * A negative dentry keeps the negative lower dentry its lookup found, in
 * d_fsdata, and stays valid while that one does: still negative (a create
 * in the lower directory instantiates it), still hashed (a rename over it
 * unhashes it) and still in the lower directory of our parent.  A name that
 * does not exist is then looked up once, not once per system call, as a
 * build searching an include path asks again and again.  A negative dentry
 * without one (left by an unlink) is not kept.
 */
static int cowlinkfs_revalidate_negative(struct dentry *dentry,
					 unsigned int flags)
{
	struct dentry *lower = READ_ONCE(dentry->d_fsdata);
	struct inode *pinode;

	if (!lower)
		return 0;
	pinode = d_inode_rcu(READ_ONCE(dentry->d_parent));
	if (!pinode)
		return flags & LOOKUP_RCU ? -ECHILD : 0;
	return d_is_negative(lower) && !d_unhashed(lower) &&
	       READ_ONCE(lower->d_parent) == cowlinkfs_lower_peek(pinode);
}

/*
 * Is @dentry a name of a shared regular inode out of the inode hash (see
 * cowlinkfs_unshare_inode()), with other links?  Only such a name may
 * have to go: see cowlinkfs_stale_shared().  A single name stays: it has
 * nothing to share, and dropping it would show its open descriptors as
 * deleted in /proc.  Nor is a mountpoint dropped, which would hide its
 * mounts.
 */
static bool cowlinkfs_maybe_stale(struct dentry *dentry, struct inode *inode,
				  struct inode *real)
{
	return cowlinkfs_inode_shared(inode) && S_ISREG(inode->i_mode) &&
	       inode_unhashed(inode) && READ_ONCE(real->i_nlink) > 1 &&
	       !d_mountpoint(dentry);
}

/*
 * The same name, in ref-walk, may sleep.  If its file is COW now (a flag
 * set, a remount to cow=all, a link of a single-link COW file, the same
 * in the lower directory), the name must have an inode of its own, before
 * a change through it (which would get ESTALE, see
 * cowlinkfs_break_shared()) and before it takes a lock or a watch the
 * other names would share: it is looked up again.  If the file is plain
 * again (the flag cleared, a remount back to cow=flag), the name stays on
 * the inode, which goes back into the hash (cowlinkfs_reshare_inode()),
 * so that its locks, leases and watches still meet those of the other
 * names; unless another inode took the hash meanwhile, which the name
 * then goes to.  A flag that cannot be read drops the name: an inode of
 * its own is always safe.  Reads the flag only for names of an inode in
 * this state, which a walk leaves once it is hashed again or its names
 * are gone.
 */
static bool cowlinkfs_stale_shared(struct inode *inode)
{
	if (cowlinkfs_is_cow(inode))
		return true;
	return !cowlinkfs_reshare_inode(inode);
}

/*
 * Lower directories can change behind our back, and such changes must show
 * through the mount.  Positive dentries stay valid while their lower dentry
 * still sits at the same name in the lower directory of our parent;
 * negative ones while their lower dentry is still negative.
 *
 * The lower dentries are peeked at without a reference, also in ref-walk:
 * a racing break may drop the old one, which RCU keeps until we are done.
 */
static int cowlinkfs_d_revalidate(struct dentry *dentry, unsigned int flags)
{
	struct inode *inode, *pinode, *real;
	struct dentry *lower, *parent;
	int ret;

	rcu_read_lock();
	inode = d_inode_rcu(dentry);
	if (!inode) {
		ret = cowlinkfs_revalidate_negative(dentry, flags);
		goto out;
	}
	lower = __cowlinkfs_dentry_lower(dentry, inode);
	parent = READ_ONCE(dentry->d_parent);
	pinode = d_inode_rcu(parent);
	if (!lower || !pinode) {
		ret = flags & LOOKUP_RCU ? -ECHILD : 0;
		goto out;
	}
	if (d_unhashed(lower) ||
	    READ_ONCE(lower->d_parent) != cowlinkfs_lower_peek(pinode)) {
		ret = 0;
		goto out;
	}
	/* A flag set through another name holds through this one too. */
	real = d_inode_rcu(lower);
	if (real)
		cowlinkfs_copyflags(inode, real);
	if (real && cowlinkfs_maybe_stale(dentry, inode, real)) {
		if (flags & LOOKUP_RCU) {
			ret = -ECHILD;
			goto out;
		}
		/* Ours, and the name's lower dentry with it, are held. */
		rcu_read_unlock();
		if (cowlinkfs_stale_shared(inode))
			return 0;
		rcu_read_lock();
	}
	/*
	 * A rename within the lower directory keeps the parent; so does one
	 * through the mount between two names of one file, which the lower
	 * fs leaves alone (POSIX) but the VFS follows by moving our dentry
	 * of the old name, whose lower dentry is still the old name's.
	 */
	if (flags & LOOKUP_RCU)
		ret = cowlinkfs_same_name_rcu(lower, dentry);
	else
		ret = cowlinkfs_same_name(lower, dentry);
out:
	rcu_read_unlock();
	return ret;
}

/*
 * Negative dentries without a negative lower one to check them by are not
 * kept: one made negative by an unlink may still hold the lower dentry of
 * a shared inode's name, which would pin the removed lower inode.
 */
static int cowlinkfs_d_delete(const struct dentry *dentry)
{
	struct dentry *lower = dentry->d_fsdata;

	return d_really_is_negative(dentry) && (!lower || !d_is_negative(lower));
}

static void cowlinkfs_d_release(struct dentry *dentry)
{
	dput(dentry->d_fsdata);
}

const struct dentry_operations cowlinkfs_dops = {
	.d_revalidate	= cowlinkfs_d_revalidate,
	.d_delete	= cowlinkfs_d_delete,
	.d_release	= cowlinkfs_d_release,
};

/*
 * The inode for @lower at our in-lookup (so not yet visible) @dentry.  A
 * name of a shared inode keeps its own lower dentry, in d_fsdata, set
 * before d_splice_alias() makes @dentry positive: see
 * cowlinkfs_dentry_lower().  The reference to @lower is consumed.
 */
static struct inode *cowlinkfs_lookup_inode(struct dentry *dentry,
					    struct dentry *lower)
{
	struct inode *inode = cowlinkfs_get_inode(dentry->d_sb, dget(lower));

	if (!IS_ERR(inode) && cowlinkfs_inode_shared(inode))
		dentry->d_fsdata = lower;
	else
		dput(lower);
	return inode;
}

static struct dentry *cowlinkfs_lookup(struct inode *dir, struct dentry *dentry,
				       unsigned int flags)
{
	struct dentry *lowerdir = cowlinkfs_lower_peek(dir);
	struct inode *inode = NULL;
	struct dentry *lower;

	if (cowlinkfs_is_workdir_name(dentry->d_parent, dentry->d_name.name,
				      dentry->d_name.len))
		return ERR_PTR(-ENOENT);

	lower = lookup_one_len_unlocked(dentry->d_name.name, lowerdir,
					dentry->d_name.len);
	if (IS_ERR(lower))
		return ERR_CAST(lower);
	if (d_is_negative(lower) && cowlinkfs_keep_negative(lower))
		dentry->d_fsdata = lower;	/* see cowlinkfs_revalidate_negative() */
	else if (d_is_negative(lower))
		dput(lower);
	else
		inode = cowlinkfs_lookup_inode(dentry, lower);
	return d_splice_alias(inode, dentry);
}

/*
 * Lock the lower directory of @dir and look up @dentry's name in it.
 * Return the lower dentry (positive or not) with the directory locked and
 * write access to the lower mount taken, or an ERR_PTR() with neither.
 */
static struct dentry *cowlinkfs_lock_lookup(struct inode *dir,
					    struct dentry *dentry)
{
	struct dentry *lowerdir = cowlinkfs_lower_peek(dir);
	struct dentry *lower;
	int err;

	err = cowlinkfs_want_write(dir->i_sb);
	if (err)
		return ERR_PTR(err);
	inode_lock_nested(d_inode(lowerdir), I_MUTEX_PARENT);
	lower = lookup_one_len(dentry->d_name.name, lowerdir,
			       dentry->d_name.len);
	if (IS_ERR(lower)) {
		inode_unlock(d_inode(lowerdir));
		cowlinkfs_drop_write(dir->i_sb);
	}
	return lower;
}

static void cowlinkfs_unlock(struct inode *dir, struct dentry *lower)
{
	dput(lower);
	inode_unlock(d_inode(cowlinkfs_lower_peek(dir)));
	cowlinkfs_drop_write(dir->i_sb);
	cowlinkfs_copyattr(dir);
}

/* Give the new lower object @lower a cowlinkfs inode at @dentry. */
static int cowlinkfs_instantiate(struct inode *dir, struct dentry *dentry,
				 struct dentry *lower)
{
	struct dentry *negative;
	struct inode *inode;

	/* Some filesystems leave the dentry unhashed after mkdir. */
	if (d_unhashed(lower) || d_is_negative(lower)) {
		lower = lookup_one_len(dentry->d_name.name, lower->d_parent,
				       dentry->d_name.len);
		if (IS_ERR(lower))
			return PTR_ERR(lower);
		if (d_is_negative(lower)) {
			dput(lower);
			return -ENOENT;
		}
	} else {
		dget(lower);
	}
	inode = cowlinkfs_get_inode(dir->i_sb, dget(lower));
	if (IS_ERR(inode)) {
		dput(lower);
		return PTR_ERR(inode);
	}
	negative = dentry->d_fsdata;
	if (cowlinkfs_inode_shared(inode)) {
		/* Before it is positive: never a shared name without its own. */
		WRITE_ONCE(dentry->d_fsdata, lower);
		d_instantiate(dentry, inode);
	} else {
		d_instantiate(dentry, inode);
		/* Only now: never a negative dentry without its lower one. */
		WRITE_ONCE(dentry->d_fsdata, NULL);
		dput(lower);
	}
	dput(negative);
	return 0;
}

static int cowlinkfs_create_object(struct inode *dir, struct dentry *dentry,
				   umode_t mode, dev_t rdev, const char *link)
{
	struct inode *ldir = d_inode(cowlinkfs_lower_peek(dir));
	struct dentry *lower;
	int err;

	lower = cowlinkfs_lock_lookup(dir, dentry);
	if (IS_ERR(lower))
		return PTR_ERR(lower);

	switch (mode & S_IFMT) {
	case S_IFREG:
		err = vfs_create(cowlinkfs_userns(), ldir, lower, mode, true);
		break;
	case S_IFDIR:
		err = vfs_mkdir(cowlinkfs_userns(), ldir, lower, mode);
		break;
	case S_IFLNK:
		err = vfs_symlink(cowlinkfs_userns(), ldir, lower, link);
		break;
	default:
		err = vfs_mknod(cowlinkfs_userns(), ldir, lower, mode, rdev);
		break;
	}
	if (!err && (S_ISREG(mode) || S_ISDIR(mode))) {
		err = cowlinkfs_inherit_cow(dir, lower);
		/*
		 * An object without the flag its directory gives must not
		 * stay behind a failed create(2), nor make a retry EEXIST.
		 */
		if (err && S_ISDIR(mode))
			vfs_rmdir(cowlinkfs_userns(), ldir, lower);
		else if (err)
			vfs_unlink(cowlinkfs_userns(), ldir, lower, NULL);
	}
	if (!err)
		err = cowlinkfs_instantiate(dir, dentry, lower);
	cowlinkfs_unlock(dir, lower);
	return err;
}

static int cowlinkfs_create(struct user_namespace *mnt_userns, struct inode *dir,
			    struct dentry *dentry, umode_t mode, bool excl)
{
	return cowlinkfs_create_object(dir, dentry, (mode & 07777) | S_IFREG,
				       0, NULL);
}

static int cowlinkfs_mkdir(struct user_namespace *mnt_userns, struct inode *dir,
			   struct dentry *dentry, umode_t mode)
{
	return cowlinkfs_create_object(dir, dentry, (mode & 07777) | S_IFDIR,
				       0, NULL);
}

static int cowlinkfs_mknod(struct user_namespace *mnt_userns, struct inode *dir,
			   struct dentry *dentry, umode_t mode, dev_t rdev)
{
	return cowlinkfs_create_object(dir, dentry, mode, rdev, NULL);
}

static int cowlinkfs_symlink(struct user_namespace *mnt_userns,
			     struct inode *dir, struct dentry *dentry,
			     const char *link)
{
	return cowlinkfs_create_object(dir, dentry, S_IFLNK, 0, link);
}

/**
 * cowlinkfs_tmpfile - O_TMPFILE: an unnamed file made in the lower directory
 * @mnt_userns: the user namespace of our mount
 * @dir: cowlinkfs directory
 * @file: the file being opened, its dentry ours and still negative
 * @mode: mode of the new file
 *
 * The lower fs makes the file (vfs_tmpfile_open(), with the caller's
 * credentials, as a create), which gets the directory's flag as a create
 * would; our inode stands for it, and our file is opened on it as on any
 * name.  linkat() then names it through cowlinkfs_link(), where the lower
 * inode is linkable unless the caller gave O_EXCL.
 *
 * Return: 0 or a negative errno.
 */
static int cowlinkfs_tmpfile(struct user_namespace *mnt_userns,
			     struct inode *dir, struct file *file, umode_t mode)
{
	struct path lowerdir;
	struct file *realfile;
	struct inode *inode;
	int err;

	err = cowlinkfs_want_write(dir->i_sb);
	if (err)
		return err;
	cowlinkfs_lower_path(dir, &lowerdir);
	/* O_EXCL: the lower file is not linkable either. */
	realfile = vfs_tmpfile_open(cowlinkfs_userns(), &lowerdir, mode,
				    cowlinkfs_real_flags(file->f_flags) |
				    (file->f_flags & O_EXCL), current_cred());
	path_put(&lowerdir);
	err = PTR_ERR_OR_ZERO(realfile);
	if (err)
		goto out_drop;
	err = cowlinkfs_inherit_cow(dir, realfile->f_path.dentry);
	if (err)
		goto out_fput;
	inode = cowlinkfs_get_inode(dir->i_sb, dget(realfile->f_path.dentry));
	err = PTR_ERR_OR_ZERO(inode);
	if (err)
		goto out_fput;
	/* Before it is positive, as in cowlinkfs_instantiate(). */
	if (cowlinkfs_inode_shared(inode))
		WRITE_ONCE(file->f_path.dentry->d_fsdata,
			   dget(realfile->f_path.dentry));
	else
		set_bit(COWLINKFS_I_UNNAMED, &COWLINKFS_I(inode)->state);
	/* d_tmpfile() takes the one link a new inode has. */
	set_nlink(inode, 1);
	d_tmpfile(file, inode);
	err = finish_open_simple(file, 0);
out_fput:
	fput(realfile);
out_drop:
	cowlinkfs_drop_write(dir->i_sb);
	return err;
}

/*
 * linkat() of an O_TMPFILE file (per-name inodes): its inode, which no
 * name had, is the new name's, as on the lower fs, and stands for the
 * lower name from now on.  Its descriptors write to the file of that
 * name then, not to a name removed from under them; until then,
 * COWLINKFS_I_UNNAMED tells its lower dentry from a removed name's.
 */
static void cowlinkfs_name_tmpfile(struct inode *inode, struct dentry *dentry,
				   struct dentry *lower)
{
	struct cowlinkfs_inode *ci = COWLINKFS_I(inode);
	struct dentry *unnamed, *negative = dentry->d_fsdata;

	spin_lock(&ci->lock);
	unnamed = ci->lower;
	WRITE_ONCE(ci->lower, dget(lower));
	spin_unlock(&ci->lock);
	/* Pairs with the smp_rmb() of cowlinkfs_lower_shared(). */
	smp_wmb();
	clear_bit(COWLINKFS_I_UNNAMED, &ci->state);
	dput(unnamed);
	ihold(inode);
	d_instantiate(dentry, inode);
	WRITE_ONCE(dentry->d_fsdata, NULL);
	dput(negative);
}

static int cowlinkfs_link(struct dentry *old, struct inode *dir,
			  struct dentry *new)
{
	struct inode *inode = d_inode(old);
	struct path lowerold;
	struct dentry *lower;
	bool unnamed;
	int err;

	err = cowlinkfs_check_link(inode, dir);
	if (err)
		return err;

	lower = cowlinkfs_lock_lookup(dir, new);
	if (IS_ERR(lower))
		return PTR_ERR(lower);
	/* This name's: another name of a shared inode may be gone below. */
	cowlinkfs_dentry_lower_path(old, &lowerold);
	unnamed = !d_inode(lowerold.dentry)->i_nlink;
	err = vfs_link(lowerold.dentry, cowlinkfs_userns(),
		       d_inode(cowlinkfs_lower_peek(dir)), lower, NULL);
	path_put(&lowerold);
	if (!err && unnamed && !cowlinkfs_inode_shared(inode) &&
	    d_is_positive(lower) && !d_unhashed(lower)) {
		cowlinkfs_name_tmpfile(inode, new, lower);
	} else if (!err) {
		err = cowlinkfs_instantiate(dir, new, lower);
		/*
		 * A shared inode's O_TMPFILE dentry now stands for the new
		 * name, not for a removed one (cowlinkfs_removed_alias()).
		 */
		if (!err && unnamed && cowlinkfs_inode_shared(inode) &&
		    d_is_positive(lower) && !d_unhashed(lower))
			dput(xchg(&old->d_fsdata, dget(lower)));
	}
	cowlinkfs_unlock(dir, lower);
	/*
	 * A COW file left on a shared inode (its flag set in the lower
	 * directory, or a single name under cow=all) is multi-link now: the
	 * new name got an inode of its own, the old names go to theirs.
	 */
	if (!err && S_ISREG(inode->i_mode) && cowlinkfs_inode_shared(inode) &&
	    d_inode(new) != inode)
		remove_inode_hash(inode);
	cowlinkfs_copyattr(inode);
	return err;
}

/*
 * The lower dentry at @dentry's name must still be the one our inode stands
 * for; if the lower directory was changed behind our back, say so rather
 * than remove something else.
 */
static int cowlinkfs_check_victim(struct dentry *dentry, struct dentry *lower)
{
	if (d_is_negative(lower))
		return -ENOENT;
	if (lower != cowlinkfs_dentry_lower(dentry))
		return -ESTALE;
	return 0;
}

static int cowlinkfs_remove(struct inode *dir, struct dentry *dentry, bool is_dir)
{
	struct inode *ldir = d_inode(cowlinkfs_lower_peek(dir));
	struct inode *inode = d_inode(dentry);
	struct dentry *lower;
	int err;

	lower = cowlinkfs_lock_lookup(dir, dentry);
	if (IS_ERR(lower))
		return PTR_ERR(lower);
	err = cowlinkfs_check_victim(dentry, lower);
	if (!err) {
		if (is_dir)
			err = vfs_rmdir(cowlinkfs_userns(), ldir, lower);
		else
			err = vfs_unlink(cowlinkfs_userns(), ldir, lower, NULL);
	}
	cowlinkfs_unlock(dir, lower);
	cowlinkfs_copyattr(inode);
	return err;
}

static int cowlinkfs_unlink(struct inode *dir, struct dentry *dentry)
{
	return cowlinkfs_remove(dir, dentry, false);
}

static int cowlinkfs_rmdir(struct inode *dir, struct dentry *dentry)
{
	return cowlinkfs_remove(dir, dentry, true);
}

/*
 * d_exchange(), which is not exported: @old goes to @new's name, and @new,
 * left unhashed there, to @old's, through a stand-in dentry with that
 * name.  So each name keeps the dentry, and the inode, its lower dentry
 * went with, as the VFS does it.
 */
static int cowlinkfs_d_exchange(struct dentry *old, struct dentry *new)
{
	struct dentry *stand_in;

	stand_in = d_alloc(old->d_parent, &old->d_name);
	if (!stand_in) {
		/* Both are looked up again; the exchange itself was made. */
		d_drop(old);
		d_drop(new);
		return 0;
	}
	d_move(old, new);
	d_move(new, stand_in);
	dput(stand_in);
	return 0;
}

static int cowlinkfs_rename(struct user_namespace *mnt_userns,
			    struct inode *olddir, struct dentry *old,
			    struct inode *newdir, struct dentry *new,
			    unsigned int flags)
{
	struct dentry *lolddir = cowlinkfs_lower_peek(olddir);
	struct dentry *lnewdir = cowlinkfs_lower_peek(newdir);
	/* Its link count drops: another name, or inotify, may look at it. */
	struct inode *victim = flags & RENAME_EXCHANGE ? NULL : d_inode(new);
	struct dentry *lold, *lnew, *trap;
	int err;

	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT))
		return -EINVAL;

	err = cowlinkfs_check_rename(olddir, d_inode(old), newdir);
	if (!err && (flags & RENAME_EXCHANGE))
		err = cowlinkfs_check_rename(newdir, d_inode(new), olddir);
	if (err)
		return err;

	err = cowlinkfs_want_write(olddir->i_sb);
	if (err)
		return err;
	trap = lock_rename(lnewdir, lolddir);
	lold = lookup_one_len(old->d_name.name, lolddir, old->d_name.len);
	err = PTR_ERR(lold);
	if (IS_ERR(lold))
		goto out_unlock;
	err = cowlinkfs_check_victim(old, lold);
	if (err)
		goto out_dput_old;
	err = -EINVAL;
	if (lold == trap)
		goto out_dput_old;

	lnew = lookup_one_len(new->d_name.name, lnewdir, new->d_name.len);
	err = PTR_ERR(lnew);
	if (IS_ERR(lnew))
		goto out_dput_old;
	if (d_really_is_positive(new)) {
		err = cowlinkfs_check_victim(new, lnew);
		if (err)
			goto out_dput_new;
	} else if (d_is_positive(lnew)) {
		/* Created in the lower directory since our lookup. */
		err = -ESTALE;
		goto out_dput_new;
	}
	err = -ENOTEMPTY;
	if (lnew == trap)
		goto out_dput_new;

	/*
	 * Two names of one file: the lower fs does nothing (POSIX), and
	 * neither do we.  Each name keeps its dentry and its inode; moving
	 * ours, as the VFS would, would give the old name a second inode
	 * for one lower name (see FS_RENAME_DOES_D_MOVE below).  Names of
	 * a shared inode never get here: vfs_rename() sees one inode.
	 */
	if (d_inode(lnew) == d_inode(lold)) {
		/* The VFS still detaches mounts of the target after. */
		err = d_mountpoint(old) || d_mountpoint(new) ? -EBUSY : 0;
		goto out_dput_new;
	}
	err = cowlinkfs_do_rename(lolddir, lold, lnewdir, lnew, flags);
	if (err)
		goto out_dput_new;
	if (flags & RENAME_EXCHANGE) {
		err = cowlinkfs_d_exchange(old, new);
	} else {
		d_move(old, new);
		if (victim)
			cowlinkfs_copyattr(victim);
	}

out_dput_new:
	dput(lnew);
out_dput_old:
	dput(lold);
out_unlock:
	unlock_rename(lnewdir, lolddir);
	cowlinkfs_drop_write(olddir->i_sb);
	cowlinkfs_copyattr(olddir);
	cowlinkfs_copyattr(newdir);
	return err;
}

const struct inode_operations cowlinkfs_dir_iops = {
	.lookup		= cowlinkfs_lookup,
	.create		= cowlinkfs_create,
	.mkdir		= cowlinkfs_mkdir,
	.mknod		= cowlinkfs_mknod,
	.symlink	= cowlinkfs_symlink,
	.link		= cowlinkfs_link,
	.tmpfile	= cowlinkfs_tmpfile,
	.unlink		= cowlinkfs_unlink,
	.rmdir		= cowlinkfs_rmdir,
	.rename		= cowlinkfs_rename,
	.permission	= cowlinkfs_permission,
	.getattr	= cowlinkfs_getattr,
	.setattr	= cowlinkfs_setattr,
	.listxattr	= cowlinkfs_listxattr,
	.get_acl	= cowlinkfs_get_acl,
	.fileattr_get	= cowlinkfs_fileattr_get,
	.fileattr_set	= cowlinkfs_fileattr_set,
	.update_time	= cowlinkfs_update_time,
};
