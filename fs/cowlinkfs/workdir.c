// SPDX-License-Identifier: GPL-2.0
/*
 * cowlinkfs: copy-on-write hard links as a stacking filesystem.
 *
 * The work directory at the top of the lower tree, where link breaks put
 * their copies: set up at mount, emptied of what a crash left there, and
 * hidden from the mount.
 */

#include <linux/ctype.h>
#include <linux/fs.h>
#include <linux/file.h>
#include <linux/fileattr.h>
#include <linux/list.h>
#include <linux/mount.h>
#include <linux/namei.h>
#include <linux/posix_acl_xattr.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/xattr.h>
#include "cowlinkfs.h"

/**
 * cowlinkfs_is_workdir_name - is this the hidden work directory?
 * @parent: cowlinkfs directory dentry the name is in
 * @name: the name
 * @len: its length
 *
 * Return: true for the work directory's name at the root of the mount; it is
 * neither shown nor reachable through cowlinkfs.
 */
bool cowlinkfs_is_workdir_name(struct dentry *parent, const char *name,
			       int len)
{
	return IS_ROOT(parent) && len == sizeof(COWLINKFS_WORKDIR) - 1 &&
	       !memcmp(name, COWLINKFS_WORKDIR, len);
}

struct cowlinkfs_name {
	struct list_head list;
	int len;
	char name[];
};

struct cowlinkfs_scan {
	struct dir_context ctx;
	struct list_head names;
	int count;
	int err;
};

/*
 * Is @name one a break gives its copy in the work directory: "#<inode
 * number>", maybe with ".<random>" (see cowlinkfs_work_entry())?
 */
static bool cowlinkfs_is_work_entry(const char *name, int len)
{
	int i = 1, digits = 0, suffix = -1;

	if (len < 2 || name[0] != '#')
		return false;
	for (; i < len; i++) {
		if (name[i] == '.' && suffix < 0 && digits) {
			suffix = 0;
			continue;
		}
		if (!isxdigit(name[i]))
			return false;
		if (suffix < 0)
			digits++;
		else
			suffix++;
	}
	return digits && (suffix < 0 || suffix == 8);
}

static bool cowlinkfs_scan_actor(struct dir_context *ctx, const char *name,
				 int len, loff_t offset, u64 ino,
				 unsigned int d_type)
{
	struct cowlinkfs_scan *scan =
		container_of(ctx, struct cowlinkfs_scan, ctx);
	struct cowlinkfs_name *n;

	/* Only a break's own names: nothing else was put here by us. */
	if (!cowlinkfs_is_work_entry(name, len))
		return true;
	n = kmalloc(struct_size(n, name, len + 1), GFP_KERNEL);
	if (!n) {
		scan->err = -ENOMEM;
		return false;
	}
	memcpy(n->name, name, len);
	n->name[len] = '\0';
	n->len = len;
	list_add_tail(&n->list, &scan->names);
	scan->count++;
	return true;
}

/**
 * cowlinkfs_clean_workdir - remove what interrupted link breaks left
 * @sb: cowlinkfs superblock, with the mounter's credentials in force and
 *	write access to the lower mount held
 * @work: the work directory
 *
 * A break links its finished copy into the work directory and renames it
 * over the broken name.  A crash between the two leaves a complete but
 * unused copy here, under a name of the break's own, which goes; nothing
 * else is touched.
 *
 * Return: 0 or a negative errno.
 */
static int cowlinkfs_clean_workdir(struct super_block *sb, struct dentry *work)
{
	struct cowlinkfs_sb_info *sbi = COWLINKFS_SB(sb);
	struct path path = { .mnt = sbi->lower_root.mnt, .dentry = work };
	struct inode *dir = d_inode(work);
	struct cowlinkfs_scan scan = {
		.ctx.actor = cowlinkfs_scan_actor,
		.names = LIST_HEAD_INIT(scan.names),
	};
	struct cowlinkfs_name *n, *tmp;
	struct file *file;
	int removed = 0;
	int err;

	file = dentry_open(&path, O_RDONLY | O_DIRECTORY, current_cred());
	if (IS_ERR(file))
		return PTR_ERR(file);
	do {
		scan.count = 0;
		err = iterate_dir(file, &scan.ctx);
	} while (!err && !scan.err && scan.count);
	fput(file);
	err = err ?: scan.err;

	if (!err && !list_empty(&scan.names)) {
		inode_lock_nested(dir, I_MUTEX_CHILD);
		list_for_each_entry(n, &scan.names, list) {
			struct dentry *d = lookup_one_len(n->name, work,
							  n->len);

			if (IS_ERR(d)) {
				err = PTR_ERR(d);
				break;
			}
			if (d_is_positive(d) && !d_is_dir(d)) {
				err = vfs_unlink(cowlinkfs_userns(), dir, d, NULL);
				removed += !err;
			}
			dput(d);
			if (err)
				break;
		}
		inode_unlock(dir);
	}
	list_for_each_entry_safe(n, tmp, &scan.names, list)
		kfree(n);
	if (removed)
		pr_info("removed %d leftover(s) of interrupted link breaks\n",
			removed);
	return err;
}

/* The flags a new file inherits from its directory: none for a copy. */
#define COWLINKFS_WORKDIR_NOXFLAGS (FS_XFLAG_PROJINHERIT | FS_XFLAG_SYNC | \
				    FS_XFLAG_NOATIME | FS_XFLAG_NODUMP | \
				    FS_XFLAG_DAX)

/*
 * Is @dir a work directory cowlinkfs made?  It carries a trusted.* xattr,
 * which only the administrator can set: a directory someone else put at
 * the work directory's name is never taken for one.
 */
static bool cowlinkfs_workdir_marked(struct dentry *dir)
{
	char val;

	return __vfs_getxattr(dir, d_inode(dir), COWLINKFS_XATTR_WORKDIR,
			      &val, 1) == 1 && val == '1';
}

/*
 * One that cowlinkfs before 0.3 made, without the mark: the mounter's and
 * 0700, which no one else can make it.  Taken at mount only.
 */
static bool cowlinkfs_workdir_legacy(struct dentry *dir)
{
	struct inode *inode = d_inode(dir);

	return uid_eq(inode->i_uid, current_fsuid()) &&
	       (inode->i_mode & S_IALLUGO) == 0700;
}

/**
 * cowlinkfs_fix_workdir - make the work directory give a copy nothing
 * @work: the lower work directory, the mounter's credentials in force
 *
 * The work directory must be the mounter's alone and give a copy made in
 * it nothing: owned by the mounter, mode 0700, no ACL (a default ACL
 * would be inherited by every copy and could give another user access to
 * it) and no flag a new file would inherit (project-inherit, sync,
 * noatime, nodump, dax: a copy keeps its file's own).
 * One made by mkdir inherits the lower root's default ACL and flags, and
 * one of ours restored from a backup may have lost any of it; make it so,
 * as ovl_workdir_create() does, and mark it ours.
 *
 * Return: 0 or a negative errno.
 */
static int cowlinkfs_fix_workdir(struct dentry *work)
{
	static const char *const acls[] = {
		XATTR_NAME_POSIX_ACL_DEFAULT, XATTR_NAME_POSIX_ACL_ACCESS,
	};
	struct inode *inode = d_inode(work);
	struct fileattr fa = {};
	struct iattr attr = {};
	int i, err;

	if (!cowlinkfs_workdir_marked(work)) {
		err = vfs_setxattr(cowlinkfs_userns(), work, COWLINKFS_XATTR_WORKDIR,
				   "1", 1, 0);
		if (err)
			return err;
	}

	for (i = 0; i < ARRAY_SIZE(acls); i++) {
		err = vfs_removexattr(cowlinkfs_userns(), work, acls[i]);
		if (err && err != -ENODATA && err != -EOPNOTSUPP)
			return err;
	}

	if (!uid_eq(inode->i_uid, current_fsuid()) ||
	    !gid_eq(inode->i_gid, current_fsgid())) {
		attr.ia_valid |= ATTR_UID | ATTR_GID;
		attr.ia_uid = current_fsuid();
		attr.ia_gid = current_fsgid();
	}
	if ((inode->i_mode & S_IALLUGO) != 0700) {
		attr.ia_valid |= ATTR_MODE;
		attr.ia_mode = S_IFDIR | 0700;
	}
	if (attr.ia_valid) {
		inode_lock(inode);
		err = notify_change(cowlinkfs_userns(), work, &attr, NULL);
		inode_unlock(inode);
		if (err)
			return err;
	}

	err = vfs_fileattr_get(work, &fa);
	if (err == -ENOIOCTLCMD || err == -ENOTTY || err == -EOPNOTSUPP)
		return 0;
	if (err || !(fa.fsx_xflags & COWLINKFS_WORKDIR_NOXFLAGS))
		return err;
	fileattr_fill_xflags(&fa, fa.fsx_xflags & FS_XFLAG_COMMON &
			     ~COWLINKFS_WORKDIR_NOXFLAGS);
	return vfs_fileattr_set(cowlinkfs_userns(), work, &fa);
}

/*
 * Is @work, the work directory we have, still the one at its name in the
 * lower root?  Whoever may write the lower root may remove it while it is
 * empty, or rename it within the root (not out of it: it is ours, 0700).
 */
static bool cowlinkfs_workdir_in_place(struct cowlinkfs_sb_info *sbi,
				       struct dentry *work)
{
	bool ok;

	spin_lock(&work->d_lock);
	ok = !d_unhashed(work) && d_is_dir(work) &&
	     work->d_parent == sbi->lower_root.dentry &&
	     work->d_name.len == sizeof(COWLINKFS_WORKDIR) - 1 &&
	     !memcmp(work->d_name.name, COWLINKFS_WORKDIR,
		     sizeof(COWLINKFS_WORKDIR) - 1) &&
	     !IS_DEADDIR(d_inode(work));
	spin_unlock(&work->d_lock);
	return ok;
}

/*
 * Was @old, the work directory we had, only renamed within the lower
 * root?  Then it is still ours and can be moved back.
 */
static bool cowlinkfs_workdir_moved(struct cowlinkfs_sb_info *sbi,
				    struct dentry *old)
{
	return old && !d_unhashed(old) && d_is_dir(old) &&
	       old->d_parent == sbi->lower_root.dentry &&
	       !IS_DEADDIR(d_inode(old));
}

/*
 * Move whatever someone else put at the work directory's name out of the
 * way, to ".cowlinkfs-work.<random>" in the lower root: nothing of theirs
 * is removed, changed or taken.  The lower root is locked.
 */
static int cowlinkfs_workdir_aside(struct dentry *root, struct dentry *other)
{
	struct dentry *aside;
	char name[40];
	int i, err = -EEXIST;

	for (i = 0; i < 16 && err == -EEXIST; i++) {
		snprintf(name, sizeof(name), "%s.%08x", COWLINKFS_WORKDIR,
			 get_random_u32());
		aside = lookup_one_len(name, root, strlen(name));
		if (IS_ERR(aside))
			return PTR_ERR(aside);
		err = cowlinkfs_do_rename(root, other, root, aside,
					  RENAME_NOREPLACE);
		dput(aside);
	}
	if (!err)
		pr_warn_ratelimited("moved something not ours from %s to %s\n",
				    COWLINKFS_WORKDIR, name);
	return err;
}

/**
 * cowlinkfs_make_workdir - put our work directory at its name in the lower root
 * @sb: cowlinkfs superblock, with the mounter's credentials in force and
 *	write access to the lower mount held
 * @old: the work directory we had, gone from its name, or NULL at mount
 * @lock: lock the work directory before the lower root is unlocked: 0,
 *	  1 shared, 2 exclusive
 *
 * Under the lower root's lock: a work directory of ours at the name (one
 * that carries our mark, or at mount one that an older cowlinkfs made) is
 * taken; anything else there is moved aside, never removed or changed;
 * then @old goes back to its name if it was only renamed within the root,
 * or a new one is made.  Ours is then made ours alone
 * (cowlinkfs_fix_workdir()), and @old, if left elsewhere, is removed if it
 * is empty.
 *
 * Return: the work directory, with a reference (and locked as asked), or
 * an ERR_PTR().
 */
static struct dentry *cowlinkfs_make_workdir(struct super_block *sb,
					     struct dentry *old, int lock)
{
	struct cowlinkfs_sb_info *sbi = COWLINKFS_SB(sb);
	struct dentry *root = sbi->lower_root.dentry;
	struct inode *dir = d_inode(root);
	struct dentry *work;
	int err = 0;

	inode_lock_nested(dir, I_MUTEX_PARENT);
	work = lookup_one_len(COWLINKFS_WORKDIR, root, strlen(COWLINKFS_WORKDIR));
	if (IS_ERR(work))
		goto out_unlock;
	if (d_is_positive(work) &&
	    !(d_is_dir(work) && (cowlinkfs_workdir_marked(work) ||
				 (!old && cowlinkfs_workdir_legacy(work))))) {
		err = cowlinkfs_workdir_aside(root, work);
		dput(work);
		work = err ? ERR_PTR(err) :
		       lookup_one_len(COWLINKFS_WORKDIR, root,
				      strlen(COWLINKFS_WORKDIR));
		if (IS_ERR(work))
			goto out_unlock;
	}
	/* Failing that, a new one is made. */
	if (d_is_negative(work) && cowlinkfs_workdir_moved(sbi, old) &&
	    !cowlinkfs_do_rename(root, old, root, work, RENAME_NOREPLACE)) {
		dput(work);
		work = dget(old);
	}
	if (d_is_negative(work)) {
		err = vfs_mkdir(cowlinkfs_userns(), dir, work, 0700);
		/* Some filesystems leave the dentry unhashed after mkdir. */
		if (!err && (d_unhashed(work) || d_is_negative(work))) {
			dput(work);
			work = lookup_one_len(COWLINKFS_WORKDIR, root,
					      strlen(COWLINKFS_WORKDIR));
			if (!IS_ERR(work) && d_is_negative(work))
				err = -ENOENT;
		}
	}
	if (!err && !IS_ERR(work) && !d_is_dir(work))
		err = -ENOTDIR;
	/* A policy set on it alone would encrypt every copy. */
	if (!err && !IS_ERR(work) && IS_ENCRYPTED(d_inode(work)) &&
	    !IS_ENCRYPTED(dir))
		err = -EPERM;
	if (!err && !IS_ERR(work))
		err = cowlinkfs_fix_workdir(work);
	/* Ours, renamed aside and left there: remove it if it is empty. */
	if (!err && !IS_ERR(work) && work != old &&
	    cowlinkfs_workdir_moved(sbi, old))
		vfs_rmdir(cowlinkfs_userns(), dir, old);
	if (!err && !IS_ERR(work) && lock == 1)
		inode_lock_shared_nested(d_inode(work), I_MUTEX_CHILD);
	else if (!err && !IS_ERR(work) && lock == 2)
		inode_lock_nested(d_inode(work), I_MUTEX_CHILD);
out_unlock:
	inode_unlock(dir);
	if (err && !IS_ERR(work)) {
		dput(work);
		work = ERR_PTR(err);
	}
	return work;
}

static void cowlinkfs_workdir_lock(struct dentry *work, bool excl)
{
	if (excl)
		inode_lock_nested(d_inode(work), I_MUTEX_CHILD);
	else
		inode_lock_shared_nested(d_inode(work), I_MUTEX_CHILD);
}

/**
 * cowlinkfs_unlock_workdir - undo cowlinkfs_lock_workdir()
 * @work: the work directory it returned
 * @excl: as given to it
 */
void cowlinkfs_unlock_workdir(struct dentry *work, bool excl)
{
	if (excl)
		inode_unlock(d_inode(work));
	else
		inode_unlock_shared(d_inode(work));
	dput(work);
}

/**
 * cowlinkfs_lock_workdir - the work directory, locked, for a link break
 * @sb: cowlinkfs superblock, with the mounter's credentials in force and
 *	write access to the lower mount held
 * @excl: lock it exclusively (to give a copy a name in it), else shared
 *	  (to make a copy in it)
 *
 * A break checks that the work directory is still at its name before it
 * copies anything, and puts one there again if a writer of the lower root
 * removed, renamed or replaced it (cowlinkfs_make_workdir()), so that no
 * one but the mounter can stop or litter breaks.  Locked, it cannot be
 * removed until the caller is done with it.
 *
 * Return: the work directory, with a reference, locked; or an ERR_PTR():
 * EROFS on a read-only lower fs.
 */
struct dentry *cowlinkfs_lock_workdir(struct super_block *sb, bool excl)
{
	struct cowlinkfs_sb_info *sbi = COWLINKFS_SB(sb);
	struct dentry *work, *old, *drop = NULL;

	spin_lock(&sbi->lock);
	work = dget(sbi->workdir);
	spin_unlock(&sbi->lock);
	if (!work)
		return ERR_PTR(-EROFS);
	cowlinkfs_workdir_lock(work, excl);
	if (likely(cowlinkfs_workdir_in_place(sbi, work)))
		return work;
	if (excl)
		inode_unlock(d_inode(work));
	else
		inode_unlock_shared(d_inode(work));

	/* Another break may have put one there meanwhile: that one is taken. */
	old = work;
	work = cowlinkfs_make_workdir(sb, old, excl ? 2 : 1);
	if (IS_ERR(work)) {
		dput(old);
		return work;
	}
	spin_lock(&sbi->lock);
	if (sbi->workdir == old) {
		drop = old;	/* the reference sbi had */
		sbi->workdir = dget(work);
	}
	spin_unlock(&sbi->lock);
	dput(drop);
	dput(old);
	return work;
}

/*
 * The work directory is hidden by its exact name.  Does another spelling
 * reach it?  ext4 and f2fs fold case per directory (checked on the lower
 * root at mount), but xfs's ascii-ci folds it in every directory with no
 * flag to see: ask the lower fs.
 */
static int cowlinkfs_check_workdir_case(struct dentry *root,
					struct dentry *work)
{
	static const char upper[] = ".COWLINKFS-WORK";
	struct dentry *other;
	int err = 0;

	BUILD_BUG_ON(sizeof(upper) != sizeof(COWLINKFS_WORKDIR));
	other = lookup_one_len_unlocked(upper, root, sizeof(upper) - 1);
	if (IS_ERR(other))
		return PTR_ERR(other);
	if (d_inode(other) == d_inode(work)) {
		pr_err("the lower directory is case-insensitive: cannot hide %s\n",
		       COWLINKFS_WORKDIR);
		err = -EINVAL;
	}
	dput(other);
	return err;
}

/* Create (or find) the work directory, fix it and empty it of crash leftovers. */
int cowlinkfs_setup_workdir(struct super_block *sb)
{
	struct cowlinkfs_sb_info *sbi = COWLINKFS_SB(sb);
	struct dentry *work;
	int err;

	if (__mnt_is_readonly(sbi->lower_root.mnt) || sb_rdonly(sbi->lower_root.mnt->mnt_sb))
		return 0;

	err = cowlinkfs_want_write(sb);
	if (err)
		return err;
	work = cowlinkfs_make_workdir(sb, NULL, 0);
	if (IS_ERR(work)) {
		cowlinkfs_drop_write(sb);
		pr_err("cannot set up %s in the lower directory: %ld\n",
		       COWLINKFS_WORKDIR, PTR_ERR(work));
		return PTR_ERR(work);
	}
	sbi->workdir = work;
	err = cowlinkfs_check_workdir_case(sbi->lower_root.dentry, work);
	if (!err)
		err = cowlinkfs_clean_workdir(sb, work);
	cowlinkfs_drop_write(sb);
	return err;
}
