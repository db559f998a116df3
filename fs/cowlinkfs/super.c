// SPDX-License-Identifier: GPL-2.0
/*
 * cowlinkfs: copy-on-write hard links as a stacking filesystem.
 *
 * Superblock, mount options and module glue.
 */

#include <linux/module.h>
#include <linux/fs.h>
#include <linux/fileattr.h>
#include <linux/fs_context.h>
#include <linux/fs_parser.h>
#include <linux/mount.h>
#include <linux/namei.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/statfs.h>
#include <linux/posix_acl_xattr.h>
#include <linux/xattr.h>
#include "cowlinkfs.h"

static struct kmem_cache *cowlinkfs_inode_cachep;

struct cowlinkfs_fs_context {
	char *lowerdir;
	enum cowlinkfs_cow_mode cow_mode;
};

/**
 * cowlinkfs_override_creds - act with the credentials of the mounter
 * @sb: the cowlinkfs superblock
 *
 * Private work on the lower filesystem (the COW flag xattr, link breaks,
 * the work directory) is done as the task that mounted cowlinkfs, as
 * overlayfs does for copy-up: the caller's permission has been checked on
 * the cowlinkfs inode before.
 *
 * Return: the old credentials, for revert_creds().
 */
const struct cred *cowlinkfs_override_creds(struct super_block *sb)
{
	return override_creds(CLSB(sb)->creator_cred);
}

static struct inode *cowlinkfs_alloc_inode(struct super_block *sb)
{
	struct cowlinkfs_inode *ci;

	ci = alloc_inode_sb(sb, cowlinkfs_inode_cachep, GFP_KERNEL);
	if (!ci)
		return NULL;
	ci->lower = NULL;
	ci->state = 0;
	return &ci->vfs_inode;
}

static void cowlinkfs_free_inode(struct inode *inode)
{
	kmem_cache_free(cowlinkfs_inode_cachep, CLI(inode));
}

static void cowlinkfs_evict_inode(struct inode *inode)
{
	truncate_inode_pages_final(&inode->i_data);
	clear_inode(inode);
	dput(CLI(inode)->lower);
}

static int cowlinkfs_statfs(struct dentry *dentry, struct kstatfs *buf)
{
	struct path lowerpath;
	int err;

	cowlinkfs_lower_path(d_inode(dentry), &lowerpath);
	err = vfs_statfs(&lowerpath, buf);
	path_put(&lowerpath);
	if (!err)
		buf->f_type = COWLINKFS_SUPER_MAGIC;
	return err;
}

static int cowlinkfs_show_options(struct seq_file *m, struct dentry *root)
{
	struct cowlinkfs_sb_info *sbi = CLSB(root->d_sb);

	seq_puts(m, ",lowerdir=");
	seq_path(m, &sbi->lower_root, ", \t\n\\");
	seq_printf(m, ",cow=%s",
		   sbi->cow_mode == COWLINKFS_COW_ALL ? "all" : "flag");
	return 0;
}

static void cowlinkfs_free_sbi(struct super_block *sb)
{
	struct cowlinkfs_sb_info *sbi = CLSB(sb);

	if (!sbi)
		return;
	dput(sbi->workdir);
	path_put(&sbi->lower_root);
	if (sbi->creator_cred)
		put_cred(sbi->creator_cred);
	kfree(sbi);
	sb->s_fs_info = NULL;
}

static const struct super_operations cowlinkfs_sops = {
	.alloc_inode	= cowlinkfs_alloc_inode,
	.free_inode	= cowlinkfs_free_inode,
	.evict_inode	= cowlinkfs_evict_inode,
	.drop_inode	= generic_delete_inode,
	.statfs		= cowlinkfs_statfs,
	.show_options	= cowlinkfs_show_options,
};

enum { OPT_LOWERDIR, OPT_COW };

static const struct constant_table cowlinkfs_param_cow[] = {
	{ "flag",	COWLINKFS_COW_FLAG },
	{ "all",	COWLINKFS_COW_ALL },
	{}
};

static const struct fs_parameter_spec cowlinkfs_param_spec[] = {
	fsparam_string("lowerdir", OPT_LOWERDIR),
	fsparam_enum("cow", OPT_COW, cowlinkfs_param_cow),
	{}
};

static int cowlinkfs_parse_param(struct fs_context *fc,
				 struct fs_parameter *param)
{
	struct cowlinkfs_fs_context *ctx = fc->fs_private;
	struct fs_parse_result result;
	int opt;

	/* "source" is the lower directory given as the device. */
	if (!strcmp(param->key, "source"))
		return vfs_parse_fs_param_source(fc, param);

	opt = fs_parse(fc, cowlinkfs_param_spec, param, &result);
	if (opt < 0)
		return opt;

	switch (opt) {
	case OPT_LOWERDIR:
		kfree(ctx->lowerdir);
		ctx->lowerdir = param->string;
		param->string = NULL;
		break;
	case OPT_COW:
		ctx->cow_mode = result.uint_32;
		break;
	}
	return 0;
}

/*
 * Refuse lower directories that cannot carry cowlinkfs: ones that do not
 * support hard links or extended attributes (procfs, sysfs, ...), remote
 * filesystems whose dentries need revalidation, and stacks that would get
 * too deep (cowlinkfs on cowlinkfs counts as one, as in overlayfs).
 */
static int cowlinkfs_check_lower(struct fs_context *fc, const struct path *p)
{
	struct super_block *lsb = p->mnt->mnt_sb;
	struct inode *dir = d_inode(p->dentry);

	if (lsb->s_magic == COWLINKFS_SUPER_MAGIC)
		return invalfc(fc, "cannot stack cowlinkfs on cowlinkfs");
	if (lsb->s_stack_depth >= FILESYSTEM_MAX_STACK_DEPTH)
		return invalfc(fc, "maximum fs stacking depth exceeded");
	if (!dir->i_op->link || !(dir->i_opflags & IOP_XATTR))
		return invalfc(fc, "%s: no hard links or xattrs, cannot stack",
			       lsb->s_type->name);
	/*
	 * Nor one whose dentries can go stale behind the dcache (network
	 * filesystems, FUSE): ours are valid while the lower ones are
	 * hashed and in place.  FUSE gives its root no ->d_revalidate(),
	 * but every other dentry of its superblock one.
	 */
	if ((p->dentry->d_flags & (DCACHE_OP_REVALIDATE |
				   DCACHE_OP_WEAK_REVALIDATE)) ||
	    (lsb->s_d_op && (lsb->s_d_op->d_revalidate ||
			     lsb->s_d_op->d_weak_revalidate)))
		return invalfc(fc, "%s: remote and FUSE filesystems are not supported",
			       lsb->s_type->name);
	return 0;
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
		err = vfs_removexattr(&init_user_ns, work, acls[i]);
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
		err = notify_change(&init_user_ns, work, &attr, NULL);
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
	return vfs_fileattr_set(&init_user_ns, work, &fa);
}

/* Create (or find) the work directory, fix it and empty it of crash leftovers. */
static int cowlinkfs_setup_workdir(struct super_block *sb)
{
	struct cowlinkfs_sb_info *sbi = CLSB(sb);
	struct dentry *root = sbi->lower_root.dentry;
	struct inode *dir = d_inode(root);
	struct dentry *work;
	int err;

	if (__mnt_is_readonly(sbi->lower_mnt) || sb_rdonly(sbi->lower_mnt->mnt_sb))
		return 0;

	err = mnt_want_write(sbi->lower_mnt);
	if (err)
		return err;
	inode_lock_nested(dir, I_MUTEX_PARENT);
	work = lookup_one_len(COWLINKFS_WORKDIR, root, strlen(COWLINKFS_WORKDIR));
	if (!IS_ERR(work) && d_is_negative(work)) {
		err = vfs_mkdir(&init_user_ns, dir, work, 0700);
		if (!err && d_is_negative(work))
			err = -EIO;
	}
	inode_unlock(dir);
	mnt_drop_write(sbi->lower_mnt);
	if (IS_ERR(work))
		return PTR_ERR(work);
	if (!err && !d_is_dir(work))
		err = -ENOTDIR;
	/* A policy set on it alone would encrypt every copy. */
	if (!err && IS_ENCRYPTED(d_inode(work)) && !IS_ENCRYPTED(dir))
		err = -EPERM;
	if (!err) {
		err = mnt_want_write(sbi->lower_mnt);
		if (!err) {
			err = cowlinkfs_fix_workdir(work);
			mnt_drop_write(sbi->lower_mnt);
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

static int cowlinkfs_fill_super(struct super_block *sb, struct fs_context *fc)
{
	struct cowlinkfs_fs_context *ctx = fc->fs_private;
	const char *name = ctx->lowerdir ?: fc->source;
	struct cowlinkfs_sb_info *sbi;
	struct super_block *lsb;
	const struct cred *old_cred;
	struct inode *inode;
	int err;

	if (!name)
		return invalfc(fc, "no lower directory given");

	sbi = kzalloc(sizeof(*sbi), GFP_KERNEL);
	if (!sbi)
		return -ENOMEM;
	sb->s_fs_info = sbi;
	sbi->cow_mode = ctx->cow_mode;

	err = kern_path(name, LOOKUP_FOLLOW | LOOKUP_DIRECTORY, &sbi->lower_root);
	if (err) {
		errorfc(fc, "lower directory '%s': error %d", name, err);
		return err;
	}
	err = cowlinkfs_check_lower(fc, &sbi->lower_root);
	if (err)
		return err;

	sbi->lower_mnt = sbi->lower_root.mnt;
	sbi->creator_cred = prepare_creds();
	if (!sbi->creator_cred)
		return -ENOMEM;

	lsb = sbi->lower_mnt->mnt_sb;
	sb->s_stack_depth = lsb->s_stack_depth + 1;
	sb->s_magic = COWLINKFS_SUPER_MAGIC;
	sb->s_op = &cowlinkfs_sops;
	sb->s_xattr = cowlinkfs_xattr_handlers;
	sb->s_d_op = &cowlinkfs_dops;
	sb->s_maxbytes = lsb->s_maxbytes;
	sb->s_time_gran = lsb->s_time_gran;
	sb->s_blocksize = lsb->s_blocksize;
	sb->s_blocksize_bits = lsb->s_blocksize_bits;
	sb->s_flags |= lsb->s_flags & SB_POSIXACL;
	if (__mnt_is_readonly(sbi->lower_mnt))
		sb->s_flags |= SB_RDONLY;

	old_cred = cowlinkfs_override_creds(sb);
	err = cowlinkfs_setup_workdir(sb);
	revert_creds(old_cred);
	if (err)
		return err;

	inode = cowlinkfs_get_inode(sb, dget(sbi->lower_root.dentry));
	if (IS_ERR(inode))
		return PTR_ERR(inode);
	sb->s_root = d_make_root(inode);
	if (!sb->s_root)
		return -ENOMEM;
	return 0;
}

static int cowlinkfs_get_tree(struct fs_context *fc)
{
	return get_tree_nodev(fc, cowlinkfs_fill_super);
}

/*
 * Is a regular file with other links open for writing through this
 * mount?  Its writers write to the inode every name shares.
 */
static bool cowlinkfs_shared_writers(struct super_block *sb)
{
	struct dentry *lower;
	struct inode *inode;
	bool busy = false;

	spin_lock(&sb->s_inode_list_lock);
	list_for_each_entry(inode, &sb->s_inodes, i_sb_list) {
		if (!S_ISREG(inode->i_mode))
			continue;
		/*
		 * Our inode counts open descriptors, the lower one also
		 * shared writable mappings whose descriptor was closed.
		 */
		rcu_read_lock();
		lower = cowlinkfs_lower_peek(inode);
		busy = lower && cowlinkfs_lower_shared(inode) &&
		       (atomic_read(&inode->i_writecount) > 0 ||
			inode_is_open_for_write(d_inode(lower)));
		rcu_read_unlock();
		if (busy)
			break;
	}
	spin_unlock(&sb->s_inode_list_lock);
	return busy;
}

/*
 * cow=all makes every multi-link file COW at once, but a descriptor
 * already open for writing on one would go on writing every name; so the
 * change is refused (EBUSY) while there is one.  An open racing with the
 * remount either sees the new mode (and breaks) or is seen by the scan:
 * the VFS takes write access on our inode before ->open reads the mode.
 */
static int cowlinkfs_set_cow_mode(struct fs_context *fc,
				  enum cowlinkfs_cow_mode mode)
{
	struct super_block *sb = fc->root->d_sb;
	struct cowlinkfs_sb_info *sbi = CLSB(sb);
	enum cowlinkfs_cow_mode old = sbi->cow_mode;

	if (mode == old)
		return 0;
	WRITE_ONCE(sbi->cow_mode, mode);
	if (mode != COWLINKFS_COW_ALL)
		return 0;
	smp_mb();	/* the mode is set before the writers are counted */
	if (cowlinkfs_shared_writers(sb)) {
		WRITE_ONCE(sbi->cow_mode, old);
		errorfc(fc, "cow=all: a file with several links is open for writing");
		return -EBUSY;
	}
	return 0;
}

static int cowlinkfs_reconfigure(struct fs_context *fc)
{
	struct cowlinkfs_fs_context *ctx = fc->fs_private;
	struct cowlinkfs_sb_info *sbi = CLSB(fc->root->d_sb);
	struct path path;
	bool same;
	int err;

	/* mount(8) repeats the current options on remount: allow that. */
	if (ctx->lowerdir) {
		err = kern_path(ctx->lowerdir, LOOKUP_FOLLOW, &path);
		if (err)
			return invalfc(fc, "lowerdir '%s': error %d", ctx->lowerdir, err);
		same = path_equal(&path, &sbi->lower_root);
		path_put(&path);
		if (!same)
			return invalfc(fc, "lowerdir cannot be changed by remount");
	}
	return cowlinkfs_set_cow_mode(fc, ctx->cow_mode);
}

static void cowlinkfs_free_fc(struct fs_context *fc)
{
	struct cowlinkfs_fs_context *ctx = fc->fs_private;

	kfree(ctx->lowerdir);
	kfree(ctx);
}

static const struct fs_context_operations cowlinkfs_context_ops = {
	.parse_param	= cowlinkfs_parse_param,
	.get_tree	= cowlinkfs_get_tree,
	.reconfigure	= cowlinkfs_reconfigure,
	.free		= cowlinkfs_free_fc,
};

static int cowlinkfs_init_fs_context(struct fs_context *fc)
{
	struct cowlinkfs_fs_context *ctx;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	/* A remount keeps the mode unless cow= is given again. */
	if (fc->root)
		ctx->cow_mode = CLSB(fc->root->d_sb)->cow_mode;
	fc->fs_private = ctx;
	fc->ops = &cowlinkfs_context_ops;
	return 0;
}

static void cowlinkfs_kill_sb(struct super_block *sb)
{
	kill_anon_super(sb);
	cowlinkfs_free_sbi(sb);
}

static struct file_system_type cowlinkfs_fs_type = {
	.owner			= THIS_MODULE,
	.name			= "cowlinkfs",
	.init_fs_context	= cowlinkfs_init_fs_context,
	.parameters		= cowlinkfs_param_spec,
	.kill_sb		= cowlinkfs_kill_sb,
};
MODULE_ALIAS_FS("cowlinkfs");

static void cowlinkfs_inode_init_once(void *foo)
{
	struct cowlinkfs_inode *ci = foo;

	spin_lock_init(&ci->lock);
	mutex_init(&ci->break_mutex);
	inode_init_once(&ci->vfs_inode);
}

static int __init cowlinkfs_init(void)
{
	int err;

	cowlinkfs_inode_cachep = kmem_cache_create("cowlinkfs_inode",
						   sizeof(struct cowlinkfs_inode), 0,
						   SLAB_RECLAIM_ACCOUNT | SLAB_ACCOUNT,
						   cowlinkfs_inode_init_once);
	if (!cowlinkfs_inode_cachep)
		return -ENOMEM;
	err = register_filesystem(&cowlinkfs_fs_type);
	if (err)
		kmem_cache_destroy(cowlinkfs_inode_cachep);
	return err;
}

static void __exit cowlinkfs_exit(void)
{
	unregister_filesystem(&cowlinkfs_fs_type);
	rcu_barrier();
	kmem_cache_destroy(cowlinkfs_inode_cachep);
}

module_init(cowlinkfs_init);
module_exit(cowlinkfs_exit);

MODULE_DESCRIPTION("Copy-on-write hard links (stacking filesystem)");
MODULE_AUTHOR("The cowlinkfs developers");
MODULE_LICENSE("GPL");
MODULE_VERSION(COWLINKFS_VERSION);
