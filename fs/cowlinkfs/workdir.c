// SPDX-License-Identifier: GPL-2.0
/*
 * cowlinkfs: copy-on-write hard links as a stacking filesystem.
 *
 * The work directory at the top of the lower tree, where link breaks put
 * their copies: set up at mount, emptied of what a crash left there, and
 * hidden from the mount.
 */

#include <linux/fs.h>
#include <linux/file.h>
#include <linux/fileattr.h>
#include <linux/list.h>
#include <linux/mount.h>
#include <linux/namei.h>
#include <linux/posix_acl_xattr.h>
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

static bool cowlinkfs_scan_actor(struct dir_context *ctx, const char *name,
				 int len, loff_t offset, u64 ino,
				 unsigned int d_type)
{
	struct cowlinkfs_scan *scan =
		container_of(ctx, struct cowlinkfs_scan, ctx);
	struct cowlinkfs_name *n;

	if (name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.')))
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
 * @sb: cowlinkfs superblock, with the mounter's credentials in force
 *
 * A break links its finished copy into the work directory and renames it
 * over the broken name.  A crash between the two leaves a complete but
 * unused copy here; nothing else ever lives here, so all of it goes.
 *
 * Return: 0 or a negative errno.
 */
static int cowlinkfs_clean_workdir(struct super_block *sb)
{
	struct cowlinkfs_sb_info *sbi = COWLINKFS_SB(sb);
	struct path path = { .mnt = sbi->lower_root.mnt, .dentry = sbi->workdir };
	struct inode *dir = d_inode(sbi->workdir);
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

	if (!err && !list_empty(&scan.names))
		err = cowlinkfs_want_write(sb);
	if (!err && !list_empty(&scan.names)) {
		inode_lock_nested(dir, I_MUTEX_PARENT);
		list_for_each_entry(n, &scan.names, list) {
			struct dentry *d = lookup_one_len(n->name, sbi->workdir,
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
		cowlinkfs_drop_write(sb);
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
 * one that was there before may be anything; make it so, as
 * ovl_workdir_create() does.
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

/* Create (or find) the work directory, fix it and empty it of crash leftovers. */
int cowlinkfs_setup_workdir(struct super_block *sb)
{
	struct cowlinkfs_sb_info *sbi = COWLINKFS_SB(sb);
	struct dentry *root = sbi->lower_root.dentry;
	struct inode *dir = d_inode(root);
	struct dentry *work;
	int err;

	if (__mnt_is_readonly(sbi->lower_root.mnt) || sb_rdonly(sbi->lower_root.mnt->mnt_sb))
		return 0;

	err = cowlinkfs_want_write(sb);
	if (err)
		return err;
	inode_lock_nested(dir, I_MUTEX_PARENT);
	work = lookup_one_len(COWLINKFS_WORKDIR, root, strlen(COWLINKFS_WORKDIR));
	if (!IS_ERR(work) && d_is_negative(work)) {
		err = vfs_mkdir(cowlinkfs_userns(), dir, work, 0700);
		if (!err && d_is_negative(work))
			err = -EIO;
	}
	inode_unlock(dir);
	cowlinkfs_drop_write(sb);
	if (IS_ERR(work))
		return PTR_ERR(work);
	if (!err && !d_is_dir(work))
		err = -ENOTDIR;
	/* A policy set on it alone would encrypt every copy. */
	if (!err && IS_ENCRYPTED(d_inode(work)) && !IS_ENCRYPTED(dir))
		err = -EPERM;
	if (!err) {
		err = cowlinkfs_want_write(sb);
		if (!err) {
			err = cowlinkfs_fix_workdir(work);
			cowlinkfs_drop_write(sb);
		}
	}
	if (err) {
		dput(work);
		pr_err("cannot set up %s in the lower directory: %d\n",
		       COWLINKFS_WORKDIR, err);
		return err;
	}
	sbi->workdir = work;
	return cowlinkfs_clean_workdir(sb);
}
