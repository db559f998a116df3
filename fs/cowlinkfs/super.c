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
	bool break_sync;
	unsigned int given;	/* BIT(OPT_*) of the options given */
};

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
	kmem_cache_free(cowlinkfs_inode_cachep, COWLINKFS_I(inode));
}

static void cowlinkfs_evict_inode(struct inode *inode)
{
	struct dentry *lower = COWLINKFS_I(inode)->lower;

	if (test_bit(COWLINKFS_I_UNSYNCED, &COWLINKFS_I(inode)->state))
		atomic_long_inc(&COWLINKFS_SB(inode->i_sb)->unsynced_evicted);
	truncate_inode_pages_final(&inode->i_data);
	clear_inode(inode);
	/*
	 * A directory stays in the inode hash until after this, where
	 * find_inode() runs cowlinkfs_inode_test() on it: it must find no
	 * lower dentry, not a freed one.
	 */
	WRITE_ONCE(COWLINKFS_I(inode)->lower, NULL);
	dput(lower);
}

/**
 * cowlinkfs_sync_evicted - sync the breaks of inodes that were evicted
 * @sb: cowlinkfs superblock
 *
 * A name's mark that its last break still has to be synced (see
 * cowlinkfs_sync_break()) lives in its inode, which goes when the
 * dentry of the name is pruned; the name looked up again gets a new
 * inode, without the mark.  Rather than keep such inodes or names in
 * memory, the next sync through the mount after such an eviction syncs
 * the whole lower fs, which a break nobody synced before its inode was
 * evicted makes rare.
 *
 * Return: 0 or a negative errno, the breaks then still to sync.
 */
int cowlinkfs_sync_evicted(struct super_block *sb)
{
	struct cowlinkfs_sb_info *sbi = COWLINKFS_SB(sb);
	struct super_block *lsb = sbi->lower_root.mnt->mnt_sb;
	long n = atomic_long_read(&sbi->unsynced_evicted);
	int err;

	if (likely(!n))
		return 0;
	down_read(&lsb->s_umount);
	err = sync_filesystem(lsb);
	up_read(&lsb->s_umount);
	if (!err)
		atomic_long_sub(n, &sbi->unsynced_evicted);
	return err;
}

/**
 * cowlinkfs_sync_fs - syncfs(2) of the mount: sync the lower filesystem
 * @sb: cowlinkfs superblock
 * @wait: 0 for the first, asynchronous pass of sync_filesystem(), 1 for
 *	  the second
 *
 * Our superblock has no bdi and no dirty inodes: the data is in the lower
 * fs's page cache.  As ovl_sync_fs() does for the upper fs, sync the whole
 * lower fs (another mount of it included, as syncfs(2) of the lower would),
 * once, in the waiting pass.  sync(2) skips us (SB_I_SKIP_SYNC): it syncs
 * the lower fs itself.
 *
 * A writeback error the lower fs has met since the last call is passed on
 * to our superblock, where syncfs(2) reports it once to each descriptor
 * opened before it, as it does on the lower fs.
 *
 * Return: 0 or a negative errno.
 */
static int cowlinkfs_sync_fs(struct super_block *sb, int wait)
{
	struct cowlinkfs_sb_info *sbi = COWLINKFS_SB(sb);
	struct super_block *lsb = sbi->lower_root.mnt->mnt_sb;
	long evicted;
	int err, wb_err;

	if (!wait)
		return 0;
	evicted = atomic_long_read(&sbi->unsynced_evicted);
	down_read(&lsb->s_umount);
	err = sync_filesystem(lsb);
	up_read(&lsb->s_umount);
	if (!err && evicted)
		atomic_long_sub(evicted, &sbi->unsynced_evicted);

	/* Set before the lock goes, so that no racing syncfs misses it. */
	spin_lock(&sbi->lock);
	wb_err = errseq_check_and_advance(&lsb->s_wb_err, &sbi->lower_wb_err);
	if (wb_err)
		errseq_set(&sb->s_wb_err, wb_err);
	spin_unlock(&sbi->lock);
	return err;
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
	struct cowlinkfs_sb_info *sbi = COWLINKFS_SB(root->d_sb);

	seq_puts(m, ",lowerdir=");
	seq_path(m, &sbi->lower_root, ", \t\n\\");
	seq_printf(m, ",cow=%s",
		   sbi->cow_mode == COWLINKFS_COW_ALL ? "all" : "flag");
	/* Only the unsafe value, as overlayfs shows "volatile". */
	if (!READ_ONCE(sbi->break_sync))
		seq_puts(m, ",break_sync=off");
	return 0;
}

static void cowlinkfs_free_sbi(struct super_block *sb)
{
	struct cowlinkfs_sb_info *sbi = COWLINKFS_SB(sb);

	if (!sbi)
		return;
	dput(sbi->workdir);
	if (sbi->atime_mnt)
		kern_unmount(sbi->atime_mnt);
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
	.sync_fs	= cowlinkfs_sync_fs,
	.statfs		= cowlinkfs_statfs,
	.show_options	= cowlinkfs_show_options,
};

enum { OPT_LOWERDIR, OPT_COW, OPT_BREAK_SYNC };

static const struct constant_table cowlinkfs_param_cow[] = {
	{ "flag",	COWLINKFS_COW_FLAG },
	{ "all",	COWLINKFS_COW_ALL },
	{}
};

/* on|off, as overlayfs spells its switches; nothing else is taken. */
static const struct constant_table cowlinkfs_param_onoff[] = {
	{ "on",		true },
	{ "off",	false },
	{}
};

static const struct fs_parameter_spec cowlinkfs_param_spec[] = {
	fsparam_string("lowerdir", OPT_LOWERDIR),
	fsparam_enum("cow", OPT_COW, cowlinkfs_param_cow),
	fsparam_enum("break_sync", OPT_BREAK_SYNC, cowlinkfs_param_onoff),
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

	ctx->given |= BIT(opt);
	switch (opt) {
	case OPT_LOWERDIR:
		kfree(ctx->lowerdir);
		ctx->lowerdir = param->string;
		param->string = NULL;
		break;
	case OPT_COW:
		ctx->cow_mode = result.uint_32;
		break;
	case OPT_BREAK_SYNC:
		ctx->break_sync = result.uint_32;
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

	if (is_idmapped_mnt(p->mnt))
		return invalfc(fc, "idmapped lower mounts are not supported");
	if (lsb->s_magic == COWLINKFS_SUPER_MAGIC)
		return invalfc(fc, "cannot stack cowlinkfs on cowlinkfs");
	if (lsb->s_stack_depth >= FILESYSTEM_MAX_STACK_DEPTH)
		return invalfc(fc, "maximum fs stacking depth exceeded");
	/*
	 * The work directory is hidden at the root by its exact bytes: in a
	 * case-insensitive directory other spellings would reach it.  ext4
	 * and f2fs fold case per directory (and give every dentry of such a
	 * fs hash operations, folding only in those); xfs's ascii-ci, with no
	 * flag to see, is found by cowlinkfs_setup_workdir().
	 */
	if (IS_CASEFOLDED(dir))
		return invalfc(fc, "%s: case-insensitive lower directories are not supported",
			       lsb->s_type->name);
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

/*
 * The mount cowlinkfs_update_time() updates lower atimes on: a private
 * clone of the lower mount without its atime options, as overlayfs takes
 * of its upper layer, since those of our mount decide.  Nor does it keep
 * the lower mount's read-only flag of the moment: whether the lower mount
 * is read-only is asked of the lower mount at each update.  Without a
 * clone (clone_private_mount() refuses an unbindable lower mount, or one
 * in another mount namespace), the lower mount's options apply after ours.
 */
static struct vfsmount *cowlinkfs_atime_mnt(const struct path *lower)
{
	struct vfsmount *mnt = clone_private_mount(lower);

	if (IS_ERR(mnt))
		return NULL;
	mnt->mnt_flags &= ~(MNT_NOATIME | MNT_NODIRATIME | MNT_RELATIME |
			    MNT_READONLY);
	return mnt;
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
	spin_lock_init(&sbi->lock);
	sbi->cow_mode = ctx->cow_mode;
	sbi->break_sync = ctx->break_sync;

	err = kern_path(name, LOOKUP_FOLLOW | LOOKUP_DIRECTORY, &sbi->lower_root);
	if (err) {
		errorfc(fc, "lower directory '%s': error %d", name, err);
		return err;
	}
	err = cowlinkfs_check_lower(fc, &sbi->lower_root);
	if (err)
		return err;

	sbi->creator_cred = prepare_creds();
	if (!sbi->creator_cred)
		return -ENOMEM;
	sbi->atime_mnt = cowlinkfs_atime_mnt(&sbi->lower_root);

	lsb = sbi->lower_root.mnt->mnt_sb;
	sbi->lower_wb_err = errseq_sample(&lsb->s_wb_err);
	sb->s_stack_depth = lsb->s_stack_depth + 1;
	/* sync(2) syncs the lower fs itself; see cowlinkfs_sync_fs(). */
	sb->s_iflags |= SB_I_SKIP_SYNC;
	sb->s_magic = COWLINKFS_SUPER_MAGIC;
	sb->s_op = &cowlinkfs_sops;
	sb->s_xattr = cowlinkfs_xattr_handlers;
	sb->s_d_op = &cowlinkfs_dops;
	sb->s_maxbytes = lsb->s_maxbytes;
	sb->s_time_gran = lsb->s_time_gran;
	sb->s_blocksize = lsb->s_blocksize;
	sb->s_blocksize_bits = lsb->s_blocksize_bits;
	sb->s_flags |= lsb->s_flags & SB_POSIXACL;
	if (__mnt_is_readonly(sbi->lower_root.mnt))
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
	struct inode *inode, *real;
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
		real = cowlinkfs_lower_inode_rcu(inode);
		busy = real && cowlinkfs_lower_shared(inode) &&
		       (atomic_read(&inode->i_writecount) > 0 ||
			inode_is_open_for_write(real));
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
 * The names of a plain file that shared one inode move to inodes of their
 * own as cowlinkfs_set_cow() describes; descriptors, locks and watches
 * on the shared inode stay with it.  Back to cow=flag, per-name inodes
 * live until evicted and new lookups of plain files share again: a plain
 * file's shared inode goes back into the hash at the next walk of a name
 * still on it (cowlinkfs_reshare_inode()).
 */
static int cowlinkfs_set_cow_mode(struct fs_context *fc,
				  enum cowlinkfs_cow_mode mode)
{
	struct super_block *sb = fc->root->d_sb;
	struct cowlinkfs_sb_info *sbi = COWLINKFS_SB(sb);
	enum cowlinkfs_cow_mode old = sbi->cow_mode;

	if (mode == old)
		return 0;
	WRITE_ONCE(sbi->cow_mode, mode);
	if (mode != COWLINKFS_COW_ALL) {
		/* Plain files again: the names they had share their inode. */
		cowlinkfs_reshare_all(sb);
		return 0;
	}
	smp_mb();	/* the mode is set before the writers are counted */
	if (cowlinkfs_shared_writers(sb)) {
		WRITE_ONCE(sbi->cow_mode, old);
		errorfc(fc, "cow=all: a file with several links is open for writing");
		return -EBUSY;
	}
	/* Plain files become COW: their names go to inodes of their own. */
	cowlinkfs_unshare_all(sb);
	return 0;
}

/*
 * break_sync may change either way by remount.  Back on, the lower fs is
 * synced once, so that when the remount returns the copies made while it
 * was off are as durable as those made after.  A break reads the setting
 * when its copy is complete (cowlinkfs_copy_inode()): one that read it
 * off had its copy in the lower fs's page cache and journal before, which
 * the sync below writes back.
 */
static void cowlinkfs_set_break_sync(struct super_block *sb, bool on)
{
	struct cowlinkfs_sb_info *sbi = COWLINKFS_SB(sb);
	struct super_block *lsb = sbi->lower_root.mnt->mnt_sb;
	bool was = READ_ONCE(sbi->break_sync);

	WRITE_ONCE(sbi->break_sync, on);
	if (!on || was)
		return;
	smp_mb();	/* the setting is seen on before the sync starts */
	down_read(&lsb->s_umount);
	sync_filesystem(lsb);
	up_read(&lsb->s_umount);
}

static int cowlinkfs_reconfigure(struct fs_context *fc)
{
	struct cowlinkfs_fs_context *ctx = fc->fs_private;
	struct cowlinkfs_sb_info *sbi = COWLINKFS_SB(fc->root->d_sb);
	struct path path;
	bool same;
	int err;

	/*
	 * mount(8) repeats the current options on remount: allow that.  A
	 * mount over its own lower directory (mount -t cowlinkfs /x /x) hides
	 * it: the path now leads to our root, which stands for it.
	 */
	if (ctx->lowerdir) {
		err = kern_path(ctx->lowerdir, LOOKUP_FOLLOW, &path);
		if (err)
			return invalfc(fc, "lowerdir '%s': error %d", ctx->lowerdir, err);
		same = path_equal(&path, &sbi->lower_root) ||
		       path.dentry == fc->root;
		path_put(&path);
		if (!same)
			return invalfc(fc, "lowerdir cannot be changed by remount");
	}
	/*
	 * Only what is given changes: a context made by fspick() may be
	 * older than a remount that changed the other settings.
	 */
	if (ctx->given & BIT(OPT_COW)) {
		err = cowlinkfs_set_cow_mode(fc, ctx->cow_mode);
		if (err)
			return err;
	}
	if (ctx->given & BIT(OPT_BREAK_SYNC))
		cowlinkfs_set_break_sync(fc->root->d_sb, ctx->break_sync);
	return 0;
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
	/* The defaults of a new mount; a remount changes only what it gives. */
	ctx->cow_mode = COWLINKFS_COW_FLAG;
	ctx->break_sync = true;
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
	/* cowlinkfs_rename() moves the dentries, unless the rename was a no-op. */
	.fs_flags		= FS_RENAME_DOES_D_MOVE,
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
