// SPDX-License-Identifier: GPL-2.0
/*
 * cowlinkfs: copy-on-write hard links as a stacking filesystem.
 *
 * Inodes: attributes, permissions, xattrs, ACLs and inode flags, all passed
 * to the lower inode; changes go through a link break first.
 */

#include <linux/fs.h>
#include <linux/fs_stack.h>
#include <linux/fileattr.h>
#include <linux/mount.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>
#include <linux/xattr.h>
#include "cowlinkfs.h"

/**
 * cowlinkfs_copyflags - copy the inode flags the VFS checks on our inode
 * @inode: cowlinkfs inode
 * @real: its lower inode
 *
 * Append-only and immutable are checked by the VFS on our inode (may_open(),
 * notify_change(), may_delete(), vfs_link()), and so is noatime
 * (touch_atime()); each name of a COW file has an inode of its own: a flag
 * set through one name must hold through every other name too, so
 * d_revalidate refreshes them on every lookup.  Atomic, as it can run in
 * RCU walk.
 */
void cowlinkfs_copyflags(struct inode *inode, const struct inode *real)
{
	unsigned int mask = S_SYNC | S_APPEND | S_IMMUTABLE | S_NOATIME;
	unsigned int flags = READ_ONCE(real->i_flags) & mask;

	/* Lookups run this on every name: write only what changed. */
	if ((READ_ONCE(inode->i_flags) & mask) != flags)
		inode_set_flags(inode, flags, mask);
}

/**
 * cowlinkfs_copyattr - copy the attributes the VFS checks from the lower inode
 * @inode: cowlinkfs inode
 *
 * As ovl_copyattr() does, not fsstack_copy_attr_all(), which would copy
 * all of i_flags: our S_NOCMTIME (the times are the lower inode's) would
 * go, and flags that mean something else on our inode (S_NOSEC, S_DEAD,
 * S_PRIVATE, ...) would come.
 */
void cowlinkfs_copyattr(struct inode *inode)
{
	struct inode *real;

	/* A racing break may drop the old lower dentry: RCU frees it. */
	rcu_read_lock();
	real = cowlinkfs_lower_inode_rcu(inode);
	if (real) {
		inode->i_mode = real->i_mode;
		inode->i_uid = real->i_uid;
		inode->i_gid = real->i_gid;
		inode->i_rdev = real->i_rdev;
		inode->i_atime = real->i_atime;
		inode->i_mtime = real->i_mtime;
		inode->i_ctime = real->i_ctime;
		inode->i_blkbits = real->i_blkbits;
		set_nlink(inode, READ_ONCE(real->i_nlink));
		fsstack_copy_inode_size(inode, real);
		inode->i_ino = real->i_ino;
		cowlinkfs_copyflags(inode, real);
	}
	rcu_read_unlock();
}

/**
 * cowlinkfs_owner_or_capable - inode_owner_or_capable() on fresh attributes
 * @inode: cowlinkfs inode
 *
 * Our inode's owner may be stale after a chown through another name of a
 * COW file (each has an inode of its own) or in the lower directory, and
 * the VFS checked ownership on it as it was: refresh it and check again,
 * before anything is copied or changed.
 *
 * Return: true if the caller owns the file or has CAP_FOWNER.
 */
bool cowlinkfs_owner_or_capable(struct inode *inode)
{
	cowlinkfs_copyattr(inode);
	return inode_owner_or_capable(cowlinkfs_userns(), inode);
}

/*
 * iget5 callbacks, keyed by the lower dentry's inode.  The test also runs
 * on inodes still being set up (I_NEW), so the lower dentry is stored by
 * the set callback, under the hash lock, not after iget5_locked().
 */
static int cowlinkfs_inode_test(struct inode *inode, void *data)
{
	struct dentry *lower = cowlinkfs_lower_peek(inode);

	return lower && d_inode(lower) == d_inode(data);
}

static int cowlinkfs_inode_set(struct inode *inode, void *data)
{
	COWLINKFS_I(inode)->lower = data;
	return 0;
}

/**
 * cowlinkfs_shares_inode - one inode for every name of a lower inode?
 * @sb: cowlinkfs superblock
 * @lower: positive lower dentry, one name of the lower inode
 *
 * The one place that decides between the models of struct cowlinkfs_inode.
 * A COW regular file may break, which must move one name to another lower
 * inode and leave the others alone: per-name inodes.  Under cow=all every
 * regular file is COW, or becomes so the moment it gains a second link,
 * so regular files keep per-name inodes there whatever their link count:
 * a single-link file gaining a link, through the mount or in the lower
 * directory, never leaves two names on one inode.  A directory has one
 * name.  Everything else does not break, and its names must meet where
 * the VFS keeps state in the inode: a FIFO's pipe, the socket bound at a
 * name, locks, leases and watches, st_nlink and st_ctime as the VFS caches
 * them.  That includes plain regular files (no flag, cow=flag), whatever
 * their link count, so that a link made later, through the mount or
 * below, finds the inode the first name has.
 *
 * A flag that cannot be read makes a per-name inode, which is always
 * safe: a name then only keeps its locks and watches to itself.  The
 * decision may go stale (a flag set, a remount); the break path, not this
 * one, keeps a stale shared inode from breaking (cowlinkfs_break_shared()).
 *
 * Return: true if all names of the lower inode share one cowlinkfs inode.
 */
static bool cowlinkfs_shares_inode(struct super_block *sb,
				   struct dentry *lower)
{
	umode_t mode = d_inode(lower)->i_mode;

	if (S_ISDIR(mode))
		return false;
	if (!S_ISREG(mode))
		return true;
	if (READ_ONCE(COWLINKFS_SB(sb)->cow_mode) == COWLINKFS_COW_ALL)
		return false;
	return cowlinkfs_lower_cow(lower) == 0;
}

/**
 * cowlinkfs_get_inode - the cowlinkfs inode for a lower dentry
 * @sb: cowlinkfs superblock
 * @lower: positive lower dentry; the reference is consumed
 *
 * Directories and shared inodes (see cowlinkfs_shares_inode()) are looked
 * up by their lower inode, so that one lower inode never has two of them.
 * Every other inode is new and belongs to one name only (see struct
 * cowlinkfs_inode).  A shared inode keeps the first name's lower dentry,
 * for the lower inode alone: the caller keeps the name's own in the
 * dentry (see cowlinkfs_dentry_lower()).
 *
 * Return: the inode or an ERR_PTR().
 */
struct inode *cowlinkfs_get_inode(struct super_block *sb, struct dentry *lower)
{
	struct inode *real = d_inode(lower);
	bool shared = cowlinkfs_shares_inode(sb, lower);
	umode_t mode = real->i_mode;
	struct inode *inode;

	if (S_ISDIR(mode) || shared) {
		inode = iget5_locked(sb, (unsigned long)real,
				     cowlinkfs_inode_test, cowlinkfs_inode_set,
				     lower);
		if (inode && !(inode->i_state & I_NEW)) {
			dput(lower);
			/*
			 * A new name of a cached inode: what changed below
			 * since (an owner, the link count) is what the VFS
			 * checks through it (may_linkat(), check_sticky()).
			 */
			cowlinkfs_copyattr(inode);
			return inode;
		}
	} else {
		inode = new_inode(sb);
	}
	if (!inode) {
		dput(lower);
		return ERR_PTR(-ENOMEM);
	}

	COWLINKFS_I(inode)->lower = lower;
	if (shared)
		set_bit(COWLINKFS_I_SHARED, &COWLINKFS_I(inode)->state);
	inode->i_mode = mode;
	/*
	 * Times are the lower inode's; the VFS must not keep its own, and
	 * updates the atime below: see cowlinkfs_update_time().
	 */
	inode->i_flags |= S_NOCMTIME;
	cowlinkfs_copyattr(inode);

	switch (mode & S_IFMT) {
	case S_IFREG:
		inode->i_op = &cowlinkfs_file_iops;
		inode->i_fop = &cowlinkfs_file_fops;
		break;
	case S_IFDIR:
		inode->i_op = &cowlinkfs_dir_iops;
		inode->i_fop = &cowlinkfs_dir_fops;
		break;
	case S_IFLNK:
		inode->i_op = &cowlinkfs_symlink_iops;
		break;
	default:
		inode->i_op = &cowlinkfs_special_iops;
		init_special_inode(inode, mode, real->i_rdev);
		if (S_ISFIFO(mode))
			inode->i_fop = &cowlinkfs_fifo_fops;
		break;
	}
	if (inode->i_state & I_NEW)
		unlock_new_inode(inode);
	return inode;
}

/**
 * cowlinkfs_unshare_inode - a plain regular file became COW
 * @sb: cowlinkfs superblock
 * @lower: a positive lower dentry of the file
 *
 * Takes the file's shared inode, if it has one, out of the inode hash, so
 * that the names looked up from now on get inodes of their own, as
 * cowlinkfs_shares_inode() now decides, and the names still on it are
 * looked up again (cowlinkfs_d_revalidate()).  The inode itself stays what
 * it is for the dentries and descriptors that have it: its locks, leases
 * and watches are not moved (no VFS interface moves them).
 */
void cowlinkfs_unshare_inode(struct super_block *sb, struct dentry *lower)
{
	struct inode *inode;

	inode = ilookup5(sb, (unsigned long)d_inode(lower),
			 cowlinkfs_inode_test, lower);
	if (!inode)
		return;
	if (S_ISREG(inode->i_mode) && cowlinkfs_inode_shared(inode))
		remove_inode_hash(inode);
	iput(inode);
}

/**
 * cowlinkfs_reshare_inode - a shared regular inode's file is plain again
 * @inode: shared regular inode, out of the inode hash, held by the caller
 *
 * The flag was cleared, or the mount went back to cow=flag, since @inode
 * left the hash (cowlinkfs_unshare_inode()).  Its names may stay on it
 * (cowlinkfs_d_revalidate()) and it goes back into the hash, so that the
 * names looked up from now on share it again, with the locks, leases and
 * watches taken on it, as overlayfs hashes an inode again when it gains
 * an upper one (ovl_inode_update()).  Unless another inode of the lower
 * inode is in the hash already, looked up in between: the names then go
 * to that one.  Under @inode's break_mutex, which a flag change through
 * it holds while it writes the flag: two names of @inode never hash it
 * twice, and a flag set through it is seen here or unhashes it after.  A
 * flag set through another inode, or a remount, racing with this may
 * leave @inode hashed while its file is COW: cowlinkfs_break_shared()
 * meets that, as it meets a flag set in the lower directory.
 *
 * Return: true if @inode is in the hash, false if its names should go.
 */
bool cowlinkfs_reshare_inode(struct inode *inode)
{
	struct cowlinkfs_inode *ci = COWLINKFS_I(inode);
	struct dentry *lower = cowlinkfs_lower_peek(inode);
	struct inode *other = NULL;
	bool hashed = true;

	mutex_lock(&ci->break_mutex);
	if (inode_unhashed(inode) && cowlinkfs_is_cow(inode) == 0) {
		other = ilookup5(inode->i_sb, (unsigned long)d_inode(lower),
				 cowlinkfs_inode_test, lower);
		if (!other)
			__insert_inode_hash(inode, (unsigned long)d_inode(lower));
	}
	hashed = !inode_unhashed(inode);
	mutex_unlock(&ci->break_mutex);
	iput(other);
	return hashed;
}

/*
 * Every shared regular inode of @sb: with @unshare, those in the inode
 * hash leave it; without, those out of it go back (see
 * cowlinkfs_reshare_inode()).  Each is held while the list lock is let
 * go: both take inode_hash_lock, which nests outside s_inode_list_lock.
 */
static void cowlinkfs_rehash_all(struct super_block *sb, bool unshare)
{
	struct inode *inode, *put = NULL;

	spin_lock(&sb->s_inode_list_lock);
	list_for_each_entry(inode, &sb->s_inodes, i_sb_list) {
		spin_lock(&inode->i_lock);
		if ((inode->i_state & (I_NEW | I_FREEING | I_WILL_FREE)) ||
		    !S_ISREG(inode->i_mode) || !cowlinkfs_inode_shared(inode) ||
		    inode_unhashed(inode) == unshare) {
			spin_unlock(&inode->i_lock);
			continue;
		}
		__iget(inode);
		spin_unlock(&inode->i_lock);
		spin_unlock(&sb->s_inode_list_lock);
		/* Still on the list while we hold it: the walk goes on from it. */
		iput(put);
		if (unshare)
			remove_inode_hash(inode);
		else
			cowlinkfs_reshare_inode(inode);
		put = inode;
		cond_resched();
		spin_lock(&sb->s_inode_list_lock);
	}
	spin_unlock(&sb->s_inode_list_lock);
	iput(put);
}

/**
 * cowlinkfs_unshare_all - every regular file became COW (remount, cow=all)
 * @sb: cowlinkfs superblock
 *
 * cowlinkfs_unshare_inode() for every shared regular inode of @sb.
 */
void cowlinkfs_unshare_all(struct super_block *sb)
{
	cowlinkfs_rehash_all(sb, true);
}

/**
 * cowlinkfs_reshare_all - back to cow=flag: plain files share again
 * @sb: cowlinkfs superblock
 *
 * cowlinkfs_reshare_inode() for every shared regular inode of @sb out of
 * the hash, the mirror of cowlinkfs_unshare_all().  The remount itself
 * prunes the unused dentries (shrink_dcache_sb() in reconfigure_super()),
 * so a name that nothing holds is looked up afresh: without this it
 * would get a new inode, and the locks, leases and watches held on the
 * old one through another name would no longer meet it.
 */
void cowlinkfs_reshare_all(struct super_block *sb)
{
	cowlinkfs_rehash_all(sb, false);
}

int cowlinkfs_getattr(struct user_namespace *mnt_userns,
		      const struct path *path, struct kstat *stat,
		      u32 request_mask, unsigned int flags)
{
	struct inode *inode = d_inode(path->dentry);
	struct path lowerpath;
	int err;

	cowlinkfs_dentry_lower_path(path->dentry, &lowerpath);
	err = vfs_getattr(&lowerpath, stat, request_mask, flags);
	path_put(&lowerpath);
	if (err)
		return err;
	/*
	 * st_ino and st_nlink are the lower ones: the inode number changes
	 * when a link is broken, and the other names show one link less.
	 * st_dev is ours, so that (st_dev, st_ino) never mixes the two.
	 */
	stat->dev = inode->i_sb->s_dev;
	cowlinkfs_copyattr(inode);
	return 0;
}

/*
 * Would @attr, already allowed by setattr_prepare(), change what a copy
 * would keep apart from the other names?  chown(f, -1, -1) arrives as
 * ATTR_CTIME | ATTR_KILL_S*ID, chown to the current owner and chmod to the
 * current mode as ATTR_UID/ATTR_GID/ATTR_MODE with the values the inode
 * has: none of them changes anything, so none of them copies.  An
 * ATTR_KILL_S*ID that has something to kill arrives with ATTR_MODE (see
 * notify_change()), and ATTR_KILL_PRIV only if security.capability is
 * there to be removed.
 */
static bool cowlinkfs_attr_changes(const struct inode *real,
				   const struct iattr *attr)
{
	unsigned int valid = attr->ia_valid;

	/*
	 * A truncation to the size the file has may change it too: ext4
	 * marks mtime and ctime, xfs frees blocks preallocated past EOF.
	 */
	if (valid & (ATTR_SIZE | ATTR_ATIME | ATTR_MTIME | ATTR_KILL_PRIV))
		return true;
	/*
	 * notify_change() computed ATTR_MODE for ATTR_KILL_S*ID from our
	 * inode, which may be stale; the lower fs kills what the lower
	 * inode has (see cowlinkfs_setattr()), so ask the lower inode.
	 */
	if (valid & (ATTR_KILL_SUID | ATTR_KILL_SGID)) {
		if ((valid & ATTR_KILL_SUID) && (real->i_mode & S_ISUID))
			return true;
		/* Asked for, setgid goes with or without group exec. */
		if ((valid & ATTR_KILL_SGID) && (real->i_mode & S_ISGID))
			return true;
		valid &= ~ATTR_MODE;
	}
	if ((valid & ATTR_MODE) && ((attr->ia_mode ^ real->i_mode) & S_IALLUGO))
		return true;
	if ((valid & ATTR_UID) && !uid_eq(attr->ia_uid, real->i_uid))
		return true;
	if ((valid & ATTR_GID) && !gid_eq(attr->ia_gid, real->i_gid))
		return true;
	return false;
}

/**
 * cowlinkfs_setattr - change attributes, through a link break if needed
 * @mnt_userns: user namespace of the mount (always the initial one)
 * @dentry: cowlinkfs dentry
 * @attr: the change
 *
 * The caller's permission is checked on our inode first, with the
 * caller's credentials, and only a change that changes something breaks
 * the link: a refused caller and a no-op never cause a copy.
 *
 * ATTR_KILL_PRIV is not handled by our setattr_prepare(): that would
 * remove security.capability through our xattr handler, with the caller's
 * credentials (EPERM for an owner without CAP_SETFCAP, though the bare fs
 * lets its truncate succeed) and before the break, from the inode the
 * other names share.  It goes down to the lower fs's own notify_change().
 *
 * A size change takes write access to the lower inode for its duration,
 * as overlayfs does, so that truncate(2) through one name of a running
 * program gets ETXTBSY, as on the lower fs.
 *
 * Return: 0 or a negative errno.
 */
int cowlinkfs_setattr(struct user_namespace *mnt_userns, struct dentry *dentry,
		      struct iattr *attr)
{
	struct inode *inode = d_inode(dentry);
	unsigned int killpriv = attr->ia_valid & ATTR_KILL_PRIV;
	bool size = attr->ia_valid & ATTR_SIZE;
	struct path lowerpath;
	struct inode *real;
	loff_t oldsize;
	bool changes;
	int err;

	/*
	 * Our inode may be stale (an owner, mode or flag changed through
	 * another name): notify_change() checked it as it was.  Check again
	 * on fresh attributes, before anything is copied.
	 */
	cowlinkfs_copyattr(inode);
	err = may_setattr(cowlinkfs_userns(), inode, attr->ia_valid);
	if (err)
		return err;
	attr->ia_valid &= ~ATTR_KILL_PRIV;
	err = setattr_prepare(cowlinkfs_userns(), dentry, attr);
	attr->ia_valid |= killpriv;
	if (err)
		return err;
	/* Append-only holds through every name and every open descriptor. */
	if (size && IS_APPEND(inode))
		return -EPERM;
	/* do_truncate() judged setuid and setgid on a stale mode: again. */
	if (size) {
		unsigned int kill = setattr_should_drop_suidgid(cowlinkfs_userns(),
								inode);

		if (kill)
			attr->ia_valid |= kill | ATTR_FORCE;
	}

	if (attr->ia_valid & ATTR_FILE) {
		/* ftruncate() and O_TRUNC: where the descriptor writes. */
		err = cowlinkfs_truncate_path(attr->ia_file, size ?
					      attr->ia_size : LLONG_MAX,
					      &lowerpath);
		if (err)
			return err;
	} else {
		cowlinkfs_dentry_lower_path(dentry, &lowerpath);
		real = d_inode(lowerpath.dentry);
		changes = cowlinkfs_attr_changes(real, attr);
		oldsize = i_size_read(real);
		path_put(&lowerpath);
		if (changes) {
			/* A truncation copies only what it keeps. */
			err = cowlinkfs_break_size(dentry, size ?
						   attr->ia_size : LLONG_MAX);
			if (err)
				return err;
		}
		/*
		 * The lower fs marks the times only when it sees the size
		 * change, which it does not when the copy was already cut
		 * to the new size.
		 */
		if (size && attr->ia_size != oldsize)
			attr->ia_valid |= ATTR_MTIME | ATTR_CTIME;
		cowlinkfs_dentry_lower_path(dentry, &lowerpath);
	}

	/* The lower file is not ours to pass on; the lower fs doesn't need it. */
	attr->ia_valid &= ~ATTR_FILE;
	/* As in overlayfs: the lower fs recomputes the mode for KILL_S*ID. */
	if (attr->ia_valid & (ATTR_KILL_SUID | ATTR_KILL_SGID))
		attr->ia_valid &= ~ATTR_MODE;

	err = cowlinkfs_want_write(inode->i_sb);
	if (err)
		goto out_put;
	real = d_inode(lowerpath.dentry);
	if (size) {
		err = get_write_access(real);
		if (err)
			goto out;
	}
	inode_lock(real);
	/* Which may clear ATTR_SIZE (xfs does, for a size it has). */
	err = notify_change(cowlinkfs_userns(), lowerpath.dentry, attr, NULL);
	inode_unlock(real);
	if (size)
		put_write_access(real);
out:
	cowlinkfs_drop_write(inode->i_sb);
out_put:
	path_put(&lowerpath);
	cowlinkfs_copyattr(inode);
	return err;
}

int cowlinkfs_permission(struct user_namespace *mnt_userns,
			 struct inode *inode, int mask)
{
	struct path lowerpath;
	struct inode *real;
	int err;

	if (mask & MAY_NOT_BLOCK) {
		/*
		 * RCU walk: the lower dentry and inode are freed after a
		 * grace period, so peeking is safe.
		 */
		real = cowlinkfs_lower_inode_rcu(inode);
		if (unlikely(!real))
			return -ECHILD;
		return inode_permission(cowlinkfs_userns(), real, mask);
	}
	/* The check may sleep (ACLs): hold the lower dentry a break may drop. */
	cowlinkfs_lower_path(inode, &lowerpath);
	err = inode_permission(cowlinkfs_userns(), d_inode(lowerpath.dentry), mask);
	path_put(&lowerpath);
	return err;
}

static const char *cowlinkfs_get_link(struct dentry *dentry,
				      struct inode *inode,
				      struct delayed_call *done)
{
	struct dentry *lower;
	const char *p;

	if (!dentry)
		return ERR_PTR(-ECHILD);
	lower = cowlinkfs_dentry_lower(dentry);
	p = vfs_get_link(lower, done);
	return p;
}

/* Our own xattrs are not visible or changeable through the mount. */
static bool cowlinkfs_is_private_xattr(const char *name)
{
	return !strncmp(name, COWLINKFS_XATTR_PREFIX,
			sizeof(COWLINKFS_XATTR_PREFIX) - 1);
}

/* Filter our private names out of @list; return the new length. */
static ssize_t cowlinkfs_filter_xattrs(char *list, ssize_t res)
{
	ssize_t len;
	char *s;

	for (s = list, len = res; len > 0;) {
		size_t slen = strnlen(s, len) + 1;

		if (WARN_ON(slen > len))
			return -EIO;
		len -= slen;
		if (cowlinkfs_is_private_xattr(s)) {
			res -= slen;
			memmove(s, s + slen, len);
		} else {
			s += slen;
		}
	}
	return res;
}

/*
 * The list is read whole and filtered before its size is compared with the
 * caller's: sized for the names the caller can see, the buffer may be too
 * small for the lower list with our private names in it.
 */
ssize_t cowlinkfs_listxattr(struct dentry *dentry, char *list, size_t size)
{
	struct path lowerpath;
	char *buf = NULL;
	size_t bufsize;
	ssize_t res;

	cowlinkfs_dentry_lower_path(dentry, &lowerpath);
	res = vfs_listxattr(lowerpath.dentry, NULL, 0);
	if (res <= 0)
		goto out;
	bufsize = res;
	buf = kvmalloc(bufsize, GFP_KERNEL);
	res = -ENOMEM;
	if (!buf)
		goto out;
	res = vfs_listxattr(lowerpath.dentry, buf, bufsize);
	if (res <= 0)
		goto out;
	res = cowlinkfs_filter_xattrs(buf, res);
	if (res > 0 && size) {
		if (res > size)
			res = -ERANGE;
		else
			memcpy(list, buf, res);
	}
out:
	kvfree(buf);
	path_put(&lowerpath);
	return res;
}

/*
 * The lower path an xattr handler works on.  An LSM may call it without a
 * dentry, or from security_d_instantiate() with a dentry not yet
 * instantiated and the inode apart: any name of the inode will do then.
 */
static void cowlinkfs_xattr_lower_path(struct dentry *dentry,
				       struct inode *inode, struct path *path)
{
	if (dentry && d_inode(dentry) == inode)
		cowlinkfs_dentry_lower_path(dentry, path);
	else
		cowlinkfs_lower_path(inode, path);
}

static int cowlinkfs_xattr_get(const struct xattr_handler *handler,
			       struct dentry *dentry, struct inode *inode,
			       const char *name, void *buffer, size_t size)
{
	const char *full = xattr_full_name(handler, name);
	struct path lowerpath;
	ssize_t res;

	if (cowlinkfs_is_private_xattr(full))
		return -ENODATA;
	cowlinkfs_xattr_lower_path(dentry, inode, &lowerpath);
	res = vfs_getxattr(cowlinkfs_userns(), lowerpath.dentry, full, buffer, size);
	path_put(&lowerpath);
	return res;
}

/**
 * cowlinkfs_xattr_check - may this xattr change be made, and does it change?
 * @inode: cowlinkfs inode
 * @lower: its lower dentry
 * @name: full xattr name
 * @value: new value, NULL to remove
 * @size: size of @value
 * @flags: XATTR_CREATE, XATTR_REPLACE
 *
 * Runs before the link is broken, so that a caller the lower fs would
 * refuse, and a change that changes nothing, make no copy.  The VFS has
 * run xattr_permission() and the security hooks on our inode with the
 * caller's credentials, which covers user.*, trusted.* and security.*;
 * system.* names are left to the filesystem, so the rules of
 * posix_acl_xattr_set() are applied here (owner or CAP_FOWNER, a valid
 * ACL, default ACLs on directories only), and any other system.* name is
 * refused as the local filesystems we stack on refuse it.
 *
 * Return: 0 to go ahead, 1 if the change would change nothing, or a
 * negative errno.
 */
static int cowlinkfs_xattr_check(struct inode *inode, struct dentry *lower,
				 const char *name, const void *value,
				 size_t size, int flags)
{
	struct inode *real = d_inode(lower);
	bool is_acl = false;
	ssize_t len;
	void *cur;
	int ret;

	if (!strncmp(name, XATTR_SYSTEM_PREFIX, XATTR_SYSTEM_PREFIX_LEN)) {
		bool is_default = !strcmp(name, XATTR_NAME_POSIX_ACL_DEFAULT);
		struct posix_acl *acl;

		if (!is_default && strcmp(name, XATTR_NAME_POSIX_ACL_ACCESS))
			return -EOPNOTSUPP;
		if (!IS_POSIXACL(real))
			return -EOPNOTSUPP;
		if (is_default && !S_ISDIR(real->i_mode))
			return value ? -EACCES : 1;
		if (!inode_owner_or_capable(cowlinkfs_userns(), inode))
			return -EPERM;
		if (value) {
			acl = posix_acl_from_xattr(cowlinkfs_userns(), value, size);
			if (IS_ERR(acl))
				return PTR_ERR(acl);
			ret = acl ? posix_acl_valid(cowlinkfs_userns(), acl) : 0;
			posix_acl_release(acl);
			if (ret)
				return ret;
		}
		is_acl = true;
	}

	len = __vfs_getxattr(lower, real, name, NULL, 0);
	/* No handler for the name's namespace below: none to set it either. */
	if (len == -EOPNOTSUPP)
		return len;
	if (len < 0 && len != -ENODATA)
		return 0;	/* let the lower fs answer */
	if (!value) {
		/* Removing an ACL that is not there succeeds, as it does below. */
		if (len < 0)
			return is_acl ? 1 : -ENODATA;
		return 0;
	}
	/* posix_acl_xattr_set() ignores XATTR_CREATE and XATTR_REPLACE. */
	if (len >= 0 && (flags & XATTR_CREATE) && !is_acl)
		return -EEXIST;
	if (len < 0)
		return (flags & XATTR_REPLACE) && !is_acl ? -ENODATA : 0;
	if (len != size)
		return 0;
	if (!size)
		return 1;
	cur = kvmalloc(size, GFP_KERNEL);
	if (!cur)
		return -ENOMEM;
	len = __vfs_getxattr(lower, real, name, cur, size);
	ret = len == size && !memcmp(cur, value, size);
	kvfree(cur);
	return ret;
}

static int cowlinkfs_xattr_set(const struct xattr_handler *handler,
			       struct user_namespace *mnt_userns,
			       struct dentry *dentry, struct inode *inode,
			       const char *name, const void *value,
			       size_t size, int flags)
{
	const char *full = xattr_full_name(handler, name);
	struct path lowerpath;
	int err;

	if (cowlinkfs_is_private_xattr(full))
		return -EPERM;
	/*
	 * The VFS checked our inode, which may be stale (an owner or mode
	 * changed through another name): check again on fresh attributes.
	 */
	cowlinkfs_copyattr(inode);
	if (!strncmp(full, XATTR_USER_PREFIX, XATTR_USER_PREFIX_LEN)) {
		err = inode_permission(cowlinkfs_userns(), inode, MAY_WRITE);
		if (err)
			return err;
	}
	cowlinkfs_xattr_lower_path(dentry, inode, &lowerpath);
	err = cowlinkfs_xattr_check(inode, lowerpath.dentry, full, value, size,
				    flags);
	path_put(&lowerpath);
	if (err)
		return err < 0 ? err : 0;
	err = cowlinkfs_change_begin(dentry, true, &lowerpath);
	if (err)
		return err;
	if (value)
		err = vfs_setxattr(cowlinkfs_userns(), lowerpath.dentry, full,
				   value, size, flags);
	else
		err = vfs_removexattr(cowlinkfs_userns(), lowerpath.dentry, full);
	cowlinkfs_change_end(dentry, &lowerpath);
	return err;
}

/* Every name, ACLs included, goes to the lower filesystem's handlers. */
static const struct xattr_handler cowlinkfs_xattr_handler = {
	.prefix	= "",
	.get	= cowlinkfs_xattr_get,
	.set	= cowlinkfs_xattr_set,
};

const struct xattr_handler *cowlinkfs_xattr_handlers[] = {
	&cowlinkfs_xattr_handler,
	NULL
};

struct posix_acl *cowlinkfs_get_acl(struct inode *inode, int type, bool rcu)
{
	struct posix_acl *acl = NULL;
	struct path lowerpath;
	struct inode *real;

	if (rcu) {
		/* In RCU walk: the lower inode is freed after a grace period. */
		real = cowlinkfs_lower_inode_rcu(inode);
		if (!real)
			return ERR_PTR(-ECHILD);
		if (!IS_POSIXACL(real))
			return NULL;
		return get_cached_acl_rcu(real, type);
	}
	/* get_acl() may sleep: hold the lower dentry a break may drop. */
	cowlinkfs_lower_path(inode, &lowerpath);
	real = d_inode(lowerpath.dentry);
	if (IS_POSIXACL(real))
		acl = get_acl(real, type);
	path_put(&lowerpath);
	return acl;
}

int cowlinkfs_fileattr_get(struct dentry *dentry, struct fileattr *fa)
{
	struct path lowerpath;
	int err;

	cowlinkfs_dentry_lower_path(dentry, &lowerpath);
	err = vfs_fileattr_get(lowerpath.dentry, fa);
	path_put(&lowerpath);
	return err;
}

/* Would @fa, complete as vfs_fileattr_set() made it, change @lower's? */
static bool cowlinkfs_fileattr_changes(struct dentry *lower,
				       const struct fileattr *fa)
{
	struct fileattr cur = {};

	if (vfs_fileattr_get(lower, &cur))
		return true;	/* let the lower fs answer */
	return fa->flags != cur.flags || fa->fsx_xflags != cur.fsx_xflags ||
	       fa->fsx_extsize != cur.fsx_extsize ||
	       fa->fsx_projid != cur.fsx_projid ||
	       fa->fsx_cowextsize != cur.fsx_cowextsize;
}

/**
 * cowlinkfs_fileattr_set - FS_IOC_SETFLAGS and FS_IOC_FSSETXATTR
 * @mnt_userns: user namespace of the mount (always the initial one)
 * @dentry: cowlinkfs dentry
 * @fa: the new attributes, merged with the current ones by the VFS
 *
 * vfs_fileattr_set() checked ownership and CAP_LINUX_IMMUTABLE on our
 * inode.  A change breaks the link first, but for two cases that change
 * the inode every name shares: a change that changes nothing, and any
 * change to an append-only or immutable inode.  Such an inode cannot be
 * broken (its name cannot be renamed over), and clearing the flag is how
 * it becomes breakable again; the flag holds through every name, so
 * clearing it does too.
 *
 * Return: 0 or a negative errno.
 */
int cowlinkfs_fileattr_set(struct user_namespace *mnt_userns,
			   struct dentry *dentry, struct fileattr *fa)
{
	struct inode *inode = d_inode(dentry);
	struct path lowerpath;
	struct inode *real;
	bool need_break;
	int err;

	/* vfs_fileattr_set() checked a maybe stale owner. */
	if (!cowlinkfs_owner_or_capable(inode))
		return -EPERM;
	cowlinkfs_dentry_lower_path(dentry, &lowerpath);
	real = d_inode(lowerpath.dentry);
	need_break = !IS_APPEND(real) && !IS_IMMUTABLE(real) &&
		     cowlinkfs_fileattr_changes(lowerpath.dentry, fa);
	path_put(&lowerpath);
	err = cowlinkfs_change_begin(dentry, need_break, &lowerpath);
	if (err)
		return err;
	err = vfs_fileattr_set(cowlinkfs_userns(), lowerpath.dentry, fa);
	cowlinkfs_change_end(dentry, &lowerpath);
	return err;
}

static int cowlinkfs_fiemap(struct inode *inode,
			    struct fiemap_extent_info *fieinfo,
			    u64 start, u64 len)
{
	struct path lowerpath;
	struct inode *real;
	int err = -EOPNOTSUPP;

	/* Hold the lower dentry a racing break may drop. */
	cowlinkfs_lower_path(inode, &lowerpath);
	real = d_inode(lowerpath.dentry);
	if (real->i_op->fiemap)
		err = real->i_op->fiemap(real, fieinfo, start, len);
	path_put(&lowerpath);
	return err;
}

/**
 * cowlinkfs_update_time - update the atime of the lower inode
 * @inode: cowlinkfs inode read through the mount
 * @ts: the time (touch_atime() takes its own)
 * @flags: S_ATIME; S_CTIME and S_MTIME never come (S_NOCMTIME)
 *
 * touch_atime() calls this when the options of our mount (noatime,
 * nodiratime, relatime, strictatime) say that a read through it updates
 * the atime; the lower files are opened with O_NOATIME, so that those of
 * the lower mount do not decide instead.  The lower inode is touched on a
 * private clone of the lower mount without atime options (as
 * ovl_update_time() touches the upper inode), where its own noatime
 * attribute and a read-only or frozen lower fs still count.
 *
 * Return: 0, as for touch_atime(), whose callers ignore a failure.
 */
int cowlinkfs_update_time(struct inode *inode, struct timespec64 *ts,
			  int flags)
{
	struct cowlinkfs_sb_info *sbi = COWLINKFS_SB(inode->i_sb);
	struct path lowerpath;

	if (!(flags & S_ATIME))
		return 0;
	cowlinkfs_lower_path(inode, &lowerpath);
	if (!sbi->atime_mnt) {
		touch_atime(&lowerpath);
	} else if (!__mnt_is_readonly(lowerpath.mnt)) {
		/* A later read-only remount of the lower mount still holds. */
		struct path atimepath = {
			.mnt = sbi->atime_mnt,
			.dentry = lowerpath.dentry,
		};

		touch_atime(&atimepath);
	}
	inode->i_atime = d_inode(lowerpath.dentry)->i_atime;
	path_put(&lowerpath);
	return 0;
}

const struct inode_operations cowlinkfs_file_iops = {
	.permission	= cowlinkfs_permission,
	.getattr	= cowlinkfs_getattr,
	.setattr	= cowlinkfs_setattr,
	.listxattr	= cowlinkfs_listxattr,
	.get_acl	= cowlinkfs_get_acl,
	.fiemap		= cowlinkfs_fiemap,
	.fileattr_get	= cowlinkfs_fileattr_get,
	.fileattr_set	= cowlinkfs_fileattr_set,
	.update_time	= cowlinkfs_update_time,
};

const struct inode_operations cowlinkfs_symlink_iops = {
	.get_link	= cowlinkfs_get_link,
	.getattr	= cowlinkfs_getattr,
	.setattr	= cowlinkfs_setattr,
	.listxattr	= cowlinkfs_listxattr,
	.update_time	= cowlinkfs_update_time,
};

const struct inode_operations cowlinkfs_special_iops = {
	.permission	= cowlinkfs_permission,
	.getattr	= cowlinkfs_getattr,
	.setattr	= cowlinkfs_setattr,
	.listxattr	= cowlinkfs_listxattr,
	.get_acl	= cowlinkfs_get_acl,
	.update_time	= cowlinkfs_update_time,
};
