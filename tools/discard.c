// SPDX-License-Identifier: GPL-2.0
/*
 * cowlink discard DIR...: remove each directory DIR and everything under
 * it, as 'rm -rf --one-file-system' does, faster.  A test-run farm throws
 * a clone away after every run.
 *
 * Through cowlinkfs each unlink() looks its name up at both layers under
 * the directory's lock, so the unlinks of one directory run one at a
 * time, whoever makes them; those of two directories do not.  The walk's
 * thread reads each directory and hands its files, in batches, to two
 * workers, which unlink them while the walk reads on; a directory is
 * removed by whichever thread ends its last pending piece of work (its
 * walk, a batch of its files, a subdirectory), so that nobody waits for
 * a directory to empty.
 *
 * Every entry is reached by its parent's fd and name, never by a path
 * (see walk.h), and directories are opened O_NOFOLLOW: a name swapped for
 * a symlink meanwhile is removed as the symlink.  A directory on another
 * mount is neither entered nor removed, nor are its ancestors: it is
 * reported, as anything that could not be removed is, and the exit status
 * is 1.  The walk is a loop, not a recursion, and keeps one fd per level
 * open, as the other subcommands' walks do, and one per directory with a
 * batch queued: at most QUEUE more.
 *
 * Locking: lock guards the queue, every ->pending, ->busy and ->kept, and
 * every message (quote() has static buffers, and failed is shared).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "cowlink.h"
#include "mountid.h"
#include "walk.h"

/*
 * A directory being discarded.  It is removed, and its fd closed, once
 * @pending drops to 0: one for its walk, one for each batch of its files
 * queued, one for each subdirectory not yet removed.  A subdirectory
 * holds a piece of its parent, so every ancestor of a live ddir is live,
 * with its fd open.
 */
struct ddir {
	struct ddir *parent;	/* NULL for the operand */
	int fd;			/* open while pending */
	int pfd;		/* the parent's fd, or an O_PATH fd of the
				 * operand's parent, which this one owns */
	char *name;		/* in pfd; the operand's shown path for a top */
	const char *base;	/* the name in pfd: name, or a top's last part */
	dev_t dev;
	unsigned int pending;
	unsigned int busy;	/* workers unlinking in it */
	int kept;		/* something under it was not removed */
	/* The walk's, in its thread only: the subdirectories to go into. */
	char **subs;
	size_t n_subs, next;
};

/* The files of one directory, for a worker to unlink. */
struct batch {
	struct ddir *dir;
	unsigned int n;
	char *names[];
};

#define BATCH 64
#define QUEUE 64		/* a power of 2: head and tail wrap at 2^32 */
#define WORKERS 2

_Static_assert((QUEUE & (QUEUE - 1)) == 0, "QUEUE must be a power of 2");

static struct batch *queue[QUEUE];
static unsigned int head, tail;		/* taken, added: mod 2^32 */
static int quit, n_workers;
static pthread_t workers[WORKERS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t room = PTHREAD_COND_INITIALIZER;
static pthread_cond_t top_done = PTHREAD_COND_INITIALIZER;
static int tops_pending;	/* operands not yet removed or kept */

/*
 * The path of @name in @d (NULL: of @d itself), for a message: the
 * operand as given, then the names down to it.  Names do not change, and
 * @d's ancestors live as long as it does.
 */
static char *entry_path(const struct ddir *d, const char *name)
{
	const struct ddir *a;
	size_t len = name ? strlen(name) : 0, at, n;
	char *path;

	for (a = d; a; a = a->parent)
		len += strlen(a->name) + (a->parent || name ? 1 : 0);
	path = xrealloc(NULL, len + 1);
	at = len;
	path[at] = '\0';
	if (name) {
		n = strlen(name);
		at -= n;
		memcpy(path + at, name, n);
		path[--at] = '/';
	}
	for (a = d; a; a = a->parent) {
		n = strlen(a->name);
		at -= n;
		memcpy(path + at, a->name, n);
		if (a->parent)
			path[--at] = '/';
	}
	return path;
}

/*
 * "cowlink: " and @fmt, whose one %s is @path quoted, then ": ERR" if
 * @err, from any thread: under lock, as quote()'s buffers and failed are
 * shared.  Every message says something failed.
 */
static void __attribute__((format(printf, 1, 0)))
say(const char *fmt, const char *path, int err)
{
	pthread_mutex_lock(&lock);
	fputs("cowlink: ", stderr);
	fprintf(stderr, fmt, quote(path));
	if (err)
		fprintf(stderr, ": %s", strerror(err));
	fputc('\n', stderr);
	failed = 1;
	pthread_mutex_unlock(&lock);
}

/* say() of @name in @d (NULL: of @d itself). */
static void say_entry(const char *fmt, const struct ddir *d,
		      const char *name, int err)
{
	char *path = entry_path(d, name);

	say(fmt, path, err);
	free(path);
}

static void ddir_free(struct ddir *d)
{
	free(d->name);
	free(d);
}

/*
 * One piece of @d's work is done (@kept: with something not removed).
 * At the last, remove @d, then go on up: its parent has one piece less.
 */
static void ddir_put(struct ddir *d, int kept)
{
	struct ddir *parent;

	while (d) {
		pthread_mutex_lock(&lock);
		d->kept |= kept;
		if (--d->pending) {
			pthread_mutex_unlock(&lock);
			return;
		}
		kept = d->kept;
		pthread_mutex_unlock(&lock);

		close(d->fd);
		/* Gone already (another operand, another process): done. */
		if (!kept && unlinkat(d->pfd, d->base, AT_REMOVEDIR) < 0 &&
		    errno != ENOENT) {
			say_entry("cannot remove %s", d, NULL, errno);
			kept = 1;
		}
		parent = d->parent;
		if (!parent) {
			close(d->pfd);
			pthread_mutex_lock(&lock);
			tops_pending--;
			pthread_cond_broadcast(&top_done);
			pthread_mutex_unlock(&lock);
		}
		ddir_free(d);
		d = parent;
	}
}

static void batch_unlink(struct batch *b)
{
	struct ddir *d = b->dir;
	int kept = 0;
	unsigned int i;

	for (i = 0; i < b->n; i++) {
		if (unlinkat(d->fd, b->names[i], 0) < 0 && errno != ENOENT) {
			say_entry("cannot remove %s", d, b->names[i], errno);
			kept = 1;
		}
		free(b->names[i]);
	}
	free(b);
	if (n_workers) {
		pthread_mutex_lock(&lock);
		d->busy--;
		pthread_mutex_unlock(&lock);
	}
	ddir_put(d, kept);
}

/*
 * The next batch for a worker, under lock: the first queued whose
 * directory no other worker is in, since two in one directory would take
 * its lock in turn; else the first.
 */
static struct batch *batch_take(void)
{
	unsigned int i;
	struct batch *b;

	for (i = head; i != tail; i++) {
		b = queue[i % QUEUE];
		if (!b->dir->busy) {
			queue[i % QUEUE] = queue[head % QUEUE];
			break;
		}
	}
	b = i == tail ? queue[head % QUEUE] : b;
	head++;
	b->dir->busy++;
	return b;
}

static void *worker(void *unused)
{
	struct batch *b;

	(void)unused;
	pthread_mutex_lock(&lock);
	for (;;) {
		while (head == tail && !quit)
			pthread_cond_wait(&work, &lock);
		if (head == tail)
			break;
		b = batch_take();
		pthread_cond_signal(&room);
		pthread_mutex_unlock(&lock);
		batch_unlink(b);
		pthread_mutex_lock(&lock);
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* Hand @b to a worker, or unlink its files here if there are none. */
static void batch_queue(struct batch *b)
{
	if (!n_workers) {
		batch_unlink(b);
		return;
	}
	pthread_mutex_lock(&lock);
	while (tail - head == QUEUE)
		pthread_cond_wait(&room, &lock);
	queue[tail++ % QUEUE] = b;
	pthread_cond_signal(&work);
	pthread_mutex_unlock(&lock);
}

/* @n more pieces of @d's work, or @kept: something under it is left. */
static void ddir_get(struct ddir *d, unsigned int n, int kept)
{
	pthread_mutex_lock(&lock);
	d->pending += n;
	d->kept |= kept;
	pthread_mutex_unlock(&lock);
}

/* Is @name in @fd, whose getdents type is @type, a directory? */
static int is_dir(int fd, const char *name, unsigned char type)
{
	struct stat st;

	if (type != DT_UNKNOWN)
		return type == DT_DIR;
	/* Else as it is now; if it cannot be told, unlink says why. */
	return fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISDIR(st.st_mode);
}

/*
 * Read @d whole: queue its files in batches, note its subdirectories in
 * d->subs (each a piece of @d's work from now on).
 */
static void discard_read(struct ddir *d)
{
	static uint64_t buf[32768 / sizeof(uint64_t)];
	struct batch *b = NULL;
	size_t cap = 0;
	long n, off;

	for (;;) {
		n = syscall(SYS_getdents64, d->fd, buf, sizeof(buf));
		if (n <= 0) {
			/* ENOENT: removed since it was opened, so empty. */
			if (n < 0 && errno != ENOENT) {
				say_entry("cannot read directory %s", d, NULL,
					  errno);
				ddir_get(d, 0, 1);
			}
			break;
		}
		for (off = 0; off < n;) {
			struct linux_dirent64 *de = (void *)((char *)buf + off);
			const char *name = de->d_name;

			off += de->d_reclen;
			if (walk_dot(name))
				continue;
			if (is_dir(d->fd, name, de->d_type)) {
				if (d->n_subs == cap) {
					cap = cap ? 2 * cap : 16;
					d->subs = xrealloc(d->subs, cap *
							   sizeof(*d->subs));
				}
				d->subs[d->n_subs++] = xstrdup(name);
				continue;
			}
			if (!b) {
				b = xrealloc(NULL, sizeof(*b) +
					     BATCH * sizeof(b->names[0]));
				b->dir = d;
				b->n = 0;
				ddir_get(d, 1, 0);
			}
			b->names[b->n++] = xstrdup(name);
			if (b->n == BATCH) {
				batch_queue(b);
				b = NULL;
			}
		}
	}
	if (b)
		batch_queue(b);
	/* The subdirectories' pieces, before any of them can end. */
	ddir_get(d, d->n_subs, 0);
}

/*
 * Open the subdirectory @name of @d to discard it, or give back the
 * piece of @d's work it held: NULL if it is gone, on another mount or
 * cannot be opened (an empty one is still removed, as rm removes it).
 */
static struct ddir *discard_open(struct ddir *d, const char *name)
{
	struct ddir *sub;
	struct stat st;
	int fd, err;

	fd = openat(d->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		if (err == ENOENT) {
			ddir_put(d, 0);
			return NULL;
		}
		/*
		 * No longer a directory: the name itself goes, never what a
		 * symlink swapped in points to.  Unreadable: maybe empty.
		 * Else the open's error.
		 */
		if (err == ENOTDIR || err == ELOOP ?
		    unlinkat(d->fd, name, 0) == 0 || errno == ENOENT :
		    unlinkat(d->fd, name, AT_REMOVEDIR) == 0) {
			ddir_put(d, 0);
			return NULL;
		}
		say_entry(err == EACCES || err == EPERM ? "cannot remove %s" :
			  "cannot open directory %s", d, name, err);
		ddir_put(d, 1);
		return NULL;
	}
	if (fstat(fd, &st) < 0) {
		say_entry("cannot stat %s", d, name, errno);
		close(fd);
		ddir_put(d, 1);
		return NULL;
	}
	if (st.st_dev != d->dev || mount_root(fd, "") == 1) {
		close(fd);
		say_entry("%s is a mount point, not discarded", d, name, 0);
		ddir_put(d, 1);
		return NULL;
	}
	sub = xrealloc(NULL, sizeof(*sub));
	memset(sub, 0, sizeof(*sub));
	sub->parent = d;
	sub->fd = fd;
	sub->pfd = d->fd;
	sub->name = xstrdup(name);
	sub->base = sub->name;
	sub->dev = st.st_dev;
	sub->pending = 1;	/* its walk */
	return sub;
}

/*
 * Walk the operand @top depth first, in a loop: each directory is read,
 * then its subdirectories are walked in turn, then its walk's piece is
 * given back, which may remove it.  Its parent, holding a piece for it,
 * is still there to go back to.
 */
static void discard_walk(struct ddir *top)
{
	struct ddir *d = top, *parent, *sub;
	char *name;

	discard_read(d);
	for (;;) {
		if (d->next < d->n_subs) {
			name = d->subs[d->next++];
			sub = discard_open(d, name);
			free(name);
			if (sub) {
				discard_read(sub);
				d = sub;
			}
			continue;
		}
		free(d->subs);
		d->subs = NULL;
		parent = d->parent;
		ddir_put(d, 0);
		if (!parent)
			break;
		d = parent;
	}
}

/* Workers, where a second CPU can run them beside the walk. */
static void workers_start(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	while (cpus > 1 && n_workers < WORKERS &&
	       !pthread_create(&workers[n_workers], NULL, worker, NULL))
		n_workers++;
}

static void workers_stop(void)
{
	int i;

	pthread_mutex_lock(&lock);
	while (tops_pending)
		pthread_cond_wait(&top_done, &lock);
	quit = 1;
	pthread_cond_broadcast(&work);
	pthread_mutex_unlock(&lock);
	for (i = 0; i < n_workers; i++)
		pthread_join(workers[i], NULL);
}

/* Refuse what rm refuses: '/', '.', '..'. */
static int refused(const char *path, const char *base, const struct stat *st)
{
	struct stat root;

	if (!strcmp(base, ".") || !strcmp(base, "..")) {
		say("refusing to discard '.' or '..' directory: skipping %s",
		    path, 0);
		return 1;
	}
	if (stat("/", &root) == 0 && walk_same(st, &root)) {
		say("it is dangerous to discard %s recursively", path, 0);
		return 1;
	}
	return 0;
}

/*
 * Discard the operand @path: check it, open it and walk it; workers may
 * still be removing it on return.  Shown in messages without its trailing
 * slashes.
 */
static void discard_operand(const char *path)
{
	char *shown, *slash, *dir;
	const char *base;
	struct stat st, fst;
	struct ddir *d;
	int pfd, fd;

	if (!*path) {
		say("cannot discard %s", path, ENOENT);
		return;
	}
	shown = strip_slashes(path);
	/* DIR/BASE: "/" is BASE "" in "/". */
	slash = strrchr(shown, '/');
	dir = slash ? strndup(shown, slash == shown ? 1 : slash - shown) :
		      xstrdup(".");
	base = slash ? slash + 1 : shown;
	pfd = dir ? open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	free(dir);
	if (pfd < 0 || fstatat(pfd, *base ? base : ".", &st,
			       AT_SYMLINK_NOFOLLOW) < 0) {
		say("cannot discard %s", shown, errno);
		goto out;
	}
	if (!S_ISDIR(st.st_mode)) {
		say(S_ISLNK(st.st_mode) ?
		    "%s is a symlink (not followed), not discarded" :
		    "%s is not a directory, not discarded", shown, 0);
		goto out;
	}
	if (refused(shown, base, &st))
		goto out;
	fd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	if (fd < 0) {
		say("cannot discard %s", shown, errno);
		goto out;
	}
	if (fstat(fd, &fst) < 0 || !walk_same(&st, &fst)) {
		close(fd);
		say("%s changed as it was opened, not discarded", shown, 0);
		goto out;
	}
	if (mount_root(fd, "") == 1) {
		close(fd);
		say("%s is a mount point, not discarded", shown, 0);
		goto out;
	}
	d = xrealloc(NULL, sizeof(*d));
	memset(d, 0, sizeof(*d));
	d->fd = fd;
	d->pfd = pfd;
	d->name = shown;
	d->base = base;
	d->dev = st.st_dev;
	d->pending = 1;		/* its walk */
	pthread_mutex_lock(&lock);
	tops_pending++;
	pthread_mutex_unlock(&lock);
	discard_walk(d);	/* d owns pfd and shown now */
	return;
out:
	if (pfd >= 0)
		close(pfd);
	free(shown);
}

/**
 * cowlink_discard() - cowlink discard DIR...
 * @args: the parsed command line
 *
 * Return: the exit status: 0 once every DIR is gone, else 1.
 */
int cowlink_discard(const struct cowlink_args *args)
{
	int i;

	walk_raise_nofile();
	workers_start();
	for (i = 0; i < args->argc; i++)
		discard_operand(args->argv[i]);
	workers_stop();
	return failed;
}
