/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cowlinkfs: copy-on-write hard links as a stacking filesystem.
 *
 * Private header shared by the files of the module.
 */
#ifndef _COWLINKFS_H
#define _COWLINKFS_H

#include <linux/fs.h>
#include <linux/spinlock.h>
#include <linux/mutex.h>
#include <linux/cred.h>
#include <linux/path.h>
#include <linux/dcache.h>

#include "uapi/linux/cowlinkfs.h"

#undef pr_fmt
#define pr_fmt(fmt) "cowlinkfs: " fmt

/*
 * The lower extended attribute that holds the COW flag.  It lives in the
 * trusted namespace so that only cowlinkfs (running with the mounter's
 * credentials) and the administrator can change it directly.
 */
#define COWLINKFS_XATTR_COW	"trusted.cowlinkfs.cow"
#define COWLINKFS_XATTR_PREFIX	"trusted.cowlinkfs."
/* The mark of a work directory cowlinkfs made (see workdir.c). */
#define COWLINKFS_XATTR_WORKDIR	"trusted.cowlinkfs.workdir"

/*
 * The work directory at the top of the lower tree.  A link break puts the
 * finished copy here under a temporary name before renaming it over the
 * name being broken; whatever a crash leaves here is removed at mount time.
 */
#define COWLINKFS_WORKDIR	".cowlinkfs-work"

/* Flags a lower file is not opened with: creation and truncation were ours. */
#define COWLINKFS_OPEN_MASK	(O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | __O_TMPFILE)

/*
 * The flags of a lower file opened for one of ours: without those of
 * COWLINKFS_OPEN_MASK, and with O_NOATIME, since the atime of a file read
 * through the mount is for our mount's options to decide (see
 * cowlinkfs_update_time()).
 */
static inline int cowlinkfs_real_flags(int flags)
{
	return (flags & ~COWLINKFS_OPEN_MASK) | O_NOATIME;
}

enum cowlinkfs_cow_mode {
	COWLINKFS_COW_FLAG,	/* only files carrying the flag are COW */
	COWLINKFS_COW_ALL,	/* every regular file is COW */
};

struct cowlinkfs_sb_info {
	/*
	 * The lower directory on the caller's own mount, not a private
	 * clone as overlayfs takes: our lower files are opened on their real
	 * path (overlayfs gives its real files a fake one), and on a clone,
	 * attached nowhere, /proc/PID/maps and AppArmor would see paths cut
	 * at the lower directory.  So a later read-only remount of the
	 * lower mount makes our changes EROFS, as on the lower fs.
	 */
	struct path lower_root;
	/*
	 * A private clone of it without atime options, only to update the
	 * atime of lower inodes (cowlinkfs_update_time()); NULL if it
	 * could not be made.
	 */
	struct vfsmount *atime_mnt;
	/*
	 * NULL on a read-only lower fs.  Whoever may write the lower root
	 * may remove or rename it: a break takes it with
	 * cowlinkfs_lock_workdir(), which puts it back if need be.
	 */
	struct dentry *workdir;		/* under @lock */
	spinlock_t lock;		/* protects @workdir, @lower_wb_err */
	const struct cred *creator_cred; /* the mounter's, for private work */
	enum cowlinkfs_cow_mode cow_mode;
	/*
	 * break_sync=on (the default): a break fsyncs its copy before the
	 * copy gets a name.  Off for disposable trees: see
	 * cowlinkfs_copy_inode().  Read with READ_ONCE(), set by remount.
	 */
	bool break_sync;
	/* The lower fs's writeback errors syncfs has passed on to ours. */
	errseq_t lower_wb_err;
	/* Inodes evicted with a break to sync: see cowlinkfs_sync_evicted(). */
	atomic_long_t unsynced_evicted;
};

/* Bits of cowlinkfs_inode::state */
enum {
	COWLINKFS_I_BREAKING,		/* a link break is under way, under break_mutex */
	/*
	 * A break gave the name a copy, and no sync has made the rename (and,
	 * with break_sync=off, the copy's data) durable since: under
	 * break_mutex, see cowlinkfs_sync_break().
	 */
	COWLINKFS_I_UNSYNCED,
	/*
	 * One inode for every name of its lower inode (see struct
	 * cowlinkfs_inode): set before the inode is unlocked, never cleared.
	 */
	COWLINKFS_I_SHARED,
	/*
	 * An O_TMPFILE file's own inode, until linkat() names it: its lower
	 * dentry is unhashed without being a removed name (see
	 * cowlinkfs_name_tmpfile() and cowlinkfs_lower_shared()).
	 */
	COWLINKFS_I_UNNAMED,
};

/*
 * Lock order, outermost first, as a break (break.c) or a flag change
 * (flag.c) takes them:
 *
 *   our sb_writers (mnt_want_write_file(), or the VFS before a setattr)
 *     our i_rwsem (taken by the VFS for setattr, xattrs, rename, ...)
 *       the lower mount's sb_writers (cowlinkfs_want_write())
 *         cowlinkfs_inode.break_mutex
 *           lower i_rwsem: the work directory (I_MUTEX_PARENT), the
 *           copy made in it, then lock_rename() of the work directory
 *           and the name's lower parent, in the lower fs's own order;
 *           or, syncing a break (cowlinkfs_sync_break()), whatever the
 *           lower fs's fsync takes of the copy and of the name's parent
 *             cowlinkfs_inode.lock (a spinlock, for @lower alone)
 *
 * A write spliced into our file takes the lower mount's sb_writers, then
 * the pipe's mutex, as a splice into a lower file does, and breaks before
 * either (cowlinkfs_splice_write()).
 *
 * The lower dentry a name of a shared inode keeps in its dentry's d_fsdata
 * needs no lock: it is stored before the dentry becomes positive, follows
 * the name through renames (the lower rename moves it) and is dropped only
 * by d_release.
 *
 * A shared regular inode leaves the inode hash (remove_inode_hash(), which
 * takes inode_hash_lock, then the inode's i_lock) when its file becomes
 * COW.  That is done holding none of the locks above but, from a setattr
 * or an xattr change, our i_rwsem, and never under the superblock's
 * s_inode_list_lock, which nests inside inode_hash_lock (fs/inode.c):
 * cowlinkfs_unshare_all() takes a reference and lets the list lock go
 * first.  A shared inode takes no break_mutex for a change: it is never
 * broken (see cowlinkfs_break_shared()).  It takes it, under nothing but
 * maybe our parent directory's i_rwsem (a walk's d_revalidate), to go back
 * into the hash: cowlinkfs_reshare_inode(), which reads the flag and
 * takes inode_hash_lock under it.
 */

/**
 * struct cowlinkfs_inode - a cowlinkfs inode
 * @lower: the lower dentry this inode stands for, under @lock
 * @lock: protects @lower, which changes when a link is broken
 * @break_mutex: serialises link breaks and flag changes of this inode
 * @state: COWLINKFS_I_* bits
 * @vfs_inode: the VFS inode
 *
 * Three kinds, chosen by cowlinkfs_get_inode() alone:
 *
 * - directories are hashed by their lower inode, and @lower is their name;
 * - COW regular files (the flag set, or any regular file under cow=all):
 *   every inode stands for exactly one name (one dentry): as overlayfs
 *   does for hard links without an index, each name of a multi-link lower
 *   file gets an inode of its own, so that breaking the link of one name
 *   swaps the lower dentry beneath that one inode and leaves every other
 *   name alone;
 * - names that do not break (symlinks, FIFOs, sockets, device nodes, and
 *   plain regular files: no flag, cow=flag) share one inode per lower
 *   inode (COWLINKFS_I_SHARED), hashed as directories are, so that a
 *   FIFO's pipe, a bound socket, locks, leases and watches are the same
 *   through every name.  @lower is then one of the names, held for the
 *   lower inode it pins; where the name matters (open, unlink, rename,
 *   link, d_revalidate, attributes) each dentry's own lower dentry, in its
 *   d_fsdata, is used: see cowlinkfs_dentry_lower().  @lower of a shared
 *   inode never changes: a regular file that becomes COW leaves the hash,
 *   and a change that would break one of its names drops the name instead,
 *   which is looked up again and gets an inode of its own (see
 *   cowlinkfs_break_shared()); plain again, it goes back into the hash
 *   (cowlinkfs_reshare_inode()).
 */
struct cowlinkfs_inode {
	struct dentry *lower;
	spinlock_t lock;		/* protects @lower */
	struct mutex break_mutex;	/* one break or flag change at a time */
	unsigned long state;
	struct inode vfs_inode;
};

/* A lower file a descriptor left for its name's new inode, open until release. */
struct cowlinkfs_stale {
	struct file *file;
	struct cowlinkfs_stale *next;
};

/**
 * struct cowlinkfs_file - an open cowlinkfs file or directory
 * @real: the open lower file; for regular files it is replaced when a
 *	  link break gives this name a new lower inode: a writer's at its
 *	  first change, a reader's at its next read (a descriptor stands
 *	  for its name, see cowlinkfs_real_follow())
 * @stale: the lower files @real replaced, kept open until release so that
 *	   the data path can use @real without a reference of its own
 * @lock: serialises replacing @real
 * @pending: regular file opened for writing and not yet changed: the
 *	     first change breaks the link if needed and moves @real onto
 *	     the name's current lower inode
 * @deny_write: opened to be executed: writers of the lower inode are
 *		denied (ETXTBSY) through every name until release
 *
 * The link of a file opened write-only is broken at its first change, not
 * at open: editors such as vim open O_WRONLY, compare st_ino from fstat()
 * on the new fd with a stat() made before open() and refuse to write if
 * they differ (vim's E949).  Opening write-only and closing again copies
 * nothing.  Until its first change such a writer of a name that shares
 * a COW inode holds that inode open for reading only, so that it is not
 * a writer of the other names (which link() and the flag ioctl refuse).
 * O_RDWR and O_TRUNC opens break at open.
 */
struct cowlinkfs_file {
	struct file *real;
	struct cowlinkfs_stale *stale;
	spinlock_t lock;		/* serialises replacing @real */
	bool pending;
	bool deny_write;
};

static inline struct cowlinkfs_file *COWLINKFS_F(const struct file *file)
{
	return file->private_data;
}

static inline struct cowlinkfs_sb_info *COWLINKFS_SB(const struct super_block *sb)
{
	return sb->s_fs_info;
}

static inline struct cowlinkfs_inode *COWLINKFS_I(const struct inode *inode)
{
	return container_of(inode, struct cowlinkfs_inode, vfs_inode);
}

/*
 * The lower dentry of @inode without taking a reference: only for callers
 * that cannot race with a link break (directories never break; regular
 * files are fine under break_mutex) or that only peek (RCU walk, see
 * cowlinkfs_lower_inode_rcu()).
 */
static inline struct dentry *cowlinkfs_lower_peek(const struct inode *inode)
{
	return READ_ONCE(COWLINKFS_I(inode)->lower);
}

static inline struct inode *cowlinkfs_lower_inode(const struct inode *inode)
{
	return d_inode(cowlinkfs_lower_peek(inode));
}

/**
 * cowlinkfs_lower_inode_rcu - peek at the lower inode under RCU
 * @inode: cowlinkfs inode
 *
 * A break publishes the copy's dentry in @lower, then drops the old one,
 * which __dentry_kill() may make negative while an RCU walker still looks
 * at it.  The walker then finds the new one in @lower.  NULL only for an
 * inode being evicted.  Caller holds rcu_read_lock().
 *
 * Return: the lower inode, or NULL.
 */
static inline struct inode *cowlinkfs_lower_inode_rcu(const struct inode *inode)
{
	struct dentry *lower;
	struct inode *real;
	int i;

	for (i = 0; i < 3; i++) {
		lower = cowlinkfs_lower_peek(inode);
		if (!lower)
			return NULL;
		real = d_inode_rcu(lower);
		if (real)
			return real;
		/* Pairs with the store of the new @lower before the dput(). */
		smp_rmb();
	}
	return NULL;
}

static inline bool cowlinkfs_inode_shared(const struct inode *inode)
{
	return test_bit(COWLINKFS_I_SHARED, &COWLINKFS_I(inode)->state);
}

/**
 * __cowlinkfs_dentry_lower - the lower dentry of a name, without a reference
 * @dentry: cowlinkfs dentry
 * @inode: its inode, as the caller read it (d_inode_rcu() in RCU walk)
 *
 * The name's own lower dentry: for a shared inode the one in @dentry's
 * d_fsdata, which lives as long as @dentry does (RCU frees both); for any
 * other the inode's, as cowlinkfs_lower_peek() gives it.
 *
 * Return: the lower dentry.
 */
static inline struct dentry *__cowlinkfs_dentry_lower(const struct dentry *dentry,
						      const struct inode *inode)
{
	if (cowlinkfs_inode_shared(inode))
		return READ_ONCE(dentry->d_fsdata);
	return cowlinkfs_lower_peek(inode);
}

/* The same for a positive dentry the caller holds. */
static inline struct dentry *cowlinkfs_dentry_lower(const struct dentry *dentry)
{
	return __cowlinkfs_dentry_lower(dentry, d_inode(dentry));
}

/*
 * The idmapping handed to the VFS for our inodes and the lower ones alike.
 * Neither mount is idmapped: cowlinkfs does not set FS_ALLOW_IDMAP, and
 * cowlinkfs_check_lower() refuses an idmapped lower mount, as ecryptfs
 * does.  Mapping through one would be decided here.
 */
static inline struct user_namespace *cowlinkfs_userns(void)
{
	return &init_user_ns;
}

/* util.c */
const struct cred *cowlinkfs_override_creds(struct super_block *sb);
void cowlinkfs_lower_path(const struct inode *inode, struct path *path);
void cowlinkfs_dentry_lower_path(const struct dentry *dentry, struct path *path);
struct file *cowlinkfs_open_real(struct file *file);
struct cowlinkfs_file *cowlinkfs_file_setup(struct file *file,
					    struct file *real);
void cowlinkfs_file_swap(struct file *file, struct file *real,
			 struct cowlinkfs_stale *stale);
int cowlinkfs_release(struct inode *inode, struct file *file);
int cowlinkfs_do_rename(struct dentry *olddir, struct dentry *old,
			struct dentry *newdir, struct dentry *new,
			unsigned int flags);
int cowlinkfs_want_write(struct super_block *sb);
void cowlinkfs_drop_write(struct super_block *sb);
int cowlinkfs_change_begin(struct dentry *dentry, bool need_break,
			   struct path *lowerpath);
void cowlinkfs_change_end(struct dentry *dentry, struct path *lowerpath);

/* workdir.c */
int cowlinkfs_setup_workdir(struct super_block *sb);
struct dentry *cowlinkfs_lock_workdir(struct super_block *sb, bool excl);
void cowlinkfs_unlock_workdir(struct dentry *work, bool excl);
bool cowlinkfs_is_workdir_name(struct dentry *parent, const char *name,
			       int len);

/* inode.c */
struct inode *cowlinkfs_get_inode(struct super_block *sb, struct dentry *lower);
void cowlinkfs_unshare_inode(struct super_block *sb, struct dentry *lower);
bool cowlinkfs_reshare_inode(struct inode *inode);
void cowlinkfs_unshare_all(struct super_block *sb);
void cowlinkfs_reshare_all(struct super_block *sb);
void cowlinkfs_copyflags(struct inode *inode, const struct inode *real);
void cowlinkfs_copyattr(struct inode *inode);
int cowlinkfs_update_time(struct inode *inode, struct timespec64 *ts,
			  int flags);
bool cowlinkfs_owner_or_capable(struct inode *inode);
int cowlinkfs_getattr(struct user_namespace *mnt_userns,
		      const struct path *path, struct kstat *stat,
		      u32 request_mask, unsigned int flags);
int cowlinkfs_setattr(struct user_namespace *mnt_userns, struct dentry *dentry,
		      struct iattr *attr);
int cowlinkfs_permission(struct user_namespace *mnt_userns,
			 struct inode *inode, int mask);
ssize_t cowlinkfs_listxattr(struct dentry *dentry, char *list, size_t size);
struct posix_acl *cowlinkfs_get_acl(struct inode *inode, int type, bool rcu);
int cowlinkfs_fileattr_get(struct dentry *dentry, struct fileattr *fa);
int cowlinkfs_fileattr_set(struct user_namespace *mnt_userns,
			   struct dentry *dentry, struct fileattr *fa);
extern const struct xattr_handler *cowlinkfs_xattr_handlers[];
extern const struct inode_operations cowlinkfs_file_iops;
extern const struct inode_operations cowlinkfs_symlink_iops;
extern const struct inode_operations cowlinkfs_special_iops;

/* dir.c */
extern const struct inode_operations cowlinkfs_dir_iops;
extern const struct dentry_operations cowlinkfs_dops;

/* file.c */
extern const struct file_operations cowlinkfs_file_fops;
int cowlinkfs_truncate_path(struct file *file, loff_t size, struct path *path);
loff_t cowlinkfs_llseek(struct file *file, loff_t offset, int whence);
int cowlinkfs_fsync(struct file *file, loff_t start, loff_t end, int datasync);
int cowlinkfs_sync_evicted(struct super_block *sb);
void cowlinkfs_file_accessed(struct file *file);
long cowlinkfs_ioctl(struct file *file, unsigned int cmd, unsigned long arg);
long cowlinkfs_compat_ioctl(struct file *file, unsigned int cmd,
			    unsigned long arg);

/* fifo.c */
extern const struct file_operations cowlinkfs_fifo_fops;

/* readdir.c */
extern const struct file_operations cowlinkfs_dir_fops;

/* flag.c */
int cowlinkfs_lower_cow(struct dentry *lower);
int cowlinkfs_get_cow(struct inode *inode);
int cowlinkfs_is_cow(struct inode *inode);
int cowlinkfs_set_cow(struct file *file, bool on);
int cowlinkfs_inherit_cow(struct inode *dir, struct dentry *lower);
int cowlinkfs_check_link(struct inode *inode, struct inode *dir);
int cowlinkfs_check_rename(struct inode *old_dir, struct inode *inode,
			   struct inode *new_dir);

/* break.c */
int cowlinkfs_break_size(struct dentry *dentry, loff_t size);
int cowlinkfs_break(struct dentry *dentry);
int cowlinkfs_break_shared(struct dentry *dentry);
bool cowlinkfs_lower_shared(struct inode *inode);
int cowlinkfs_may_break(struct inode *inode);
int cowlinkfs_break_writer(struct dentry *dentry, loff_t size);
struct file *cowlinkfs_copy_unlinked(struct inode *inode, struct file *real,
				     int flags, const struct cred *cred,
				     loff_t size);

#endif /* _COWLINKFS_H */
