// SPDX-License-Identifier: GPL-2.0
/*
 * cowfsx: model-based random tester of cowlinkfs.
 *
 *   cowfsx [-m cow|all|plain] [-s SEED] [-n OPS] [-p NPROC] [-x user|trusted]
 *          [-r -M MNT] [-L LOWERDIR] [-X OP,OP...] [-F KIND] [-k] [-v] DIR
 *
 * Builds a small tree in DIR (2 or 3 directories d0..d2, about six files
 * with one to four names each, made with link()), then runs OPS seeded
 * random operations on it and keeps a model of what every name must show:
 * its bytes, which names share an inode, st_nlink, mode, owner, mtime
 * (set by utimes, kept by everything but a change of the data, and by a
 * copy), the COW flag and the xattrs of one namespace.
 * Every operation's result (OK or the errno) is predicted by the model and
 * checked; after every step the whole tree is read back and compared.  On
 * the first difference it prints the seed, the step, the last operations
 * and the difference, and exits 1.  Runs replay exactly from the seed.
 *
 *   -m cow     DIR is on cowlinkfs mounted cow=flag (the default mode)
 *   -m all     DIR is on cowlinkfs mounted cow=all
 *   -m plain   DIR is on a plain filesystem: plain hard links, and the
 *              flag ioctls fail with ENOTTY
 *   -s SEED    seed (default 1); -n OPS operations (default 500)
 *   -p NPROC   NPROC workers, each on its own tree DIR/wN with seed SEED+N
 *   -x NS      the xattr namespace to use: user (default) or trusted
 *   -r -M MNT  remount the cowlinkfs mount MNT (DIR is inside it) between
 *              steps, at random, to cow=all or cow=flag (single process);
 *              the mount is put back in the mode of -m at the end
 *   -L LOWER   LOWER is DIR seen in the lower directory: check that st_ino
 *              and st_nlink there are the ones seen through the mount
 *   -X OPS     leave these operations out (comma-separated names, as in
 *              the log: open write pwrite lseek read ftruncate fallocate
 *              mmap truncate chmod chown utimes setxattr removexattr link
 *              unlink rename setcow dircow break dirmove special)
 *   -F KIND    debug: corrupt the model once, halfway, to show that the
 *              checks see it (data mode owner nlink ino xattr cow name
 *              mtime errno); the run must then fail
 *   -k         keep the tree at the end (it is removed after a good run)
 *   -v         log every step on stderr, and an errno census at the end
 *
 * Prints "cowfsx: seed S: N ops, K copies (breaks) seen, OK" and exits 0
 * when every step matched; 1 on a mismatch, 2 on bad usage or setup.
 * No descriptor is kept open across steps, so ETXTBSY and EBUSY cannot
 * arise, and every change is made as root.
 *
 * The model (Documentation/filesystems/cowlinkfs.rst): a regular file is
 * COW if it has the flag, or always on a cow=all mount; new files and
 * directories take their directory's flag.  A COW file with several names
 * is copied for the name it is changed through: O_RDWR and O_TRUNC opens
 * at open, O_WRONLY ones at the first write, ftruncate or fallocate;
 * truncate, utimes, chmod and chown that change something, setxattr that
 * changes the value, removexattr of an xattr that is there.  The copy has
 * a new st_ino, the bytes, mode, owner, times, xattrs and flag, and one
 * link; the other names keep the old inode.  A call refused before the
 * change (EEXIST, ENODATA, EBADF, EINVAL, and EOPNOTSUPP from fallocate
 * where the lower fs has none) copies nothing.  In cow=flag mode, link()
 * of a regular file into a directory with another flag, and rename() of a
 * regular file or directory into another such directory, fail with EMLINK
 * (checked after ENOENT and EEXIST, before the same-file case); rename()
 * between two names of one file does nothing, as POSIX says.  Only
 * permission bits are used (chown would clear set-id bits).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <linux/cowlinkfs.h>

#define CAP	65536		/* no file grows past this */
#define MAXD	3		/* directories */
#define NB	10		/* base names per directory: f0..f9 */
#define NNAMES	(MAXD * NB)
#define MAXOBJ	(NNAMES + 2)
#define NXA	2		/* xattrs: NS.a and NS.b */
#define XAMAX	16
#define NLOG	20

enum mode { M_PLAIN, M_FLAG, M_ALL };

struct obj {
	int used;
	unsigned char *data;	/* bytes past size are always zero */
	size_t size;
	mode_t mode;
	uid_t uid;
	gid_t gid;
	int cow;		/* the stored flag */
	int xset[NXA];
	size_t xlen[NXA];
	char xval[NXA][XAMAX];
	int mtime_known;	/* 0 after a data change, until the next check */
	struct timespec mtime;
	ino_t ino;		/* 0: not seen yet */
	int nnames;
	long born;		/* step it was made at, for the report */
};

/* The model */
static struct obj objs[MAXOBJ];
static int names[NNAMES];	/* object of each name, -1 if none */
static int dircow[MAXD];
static int nd;			/* directories in use */
static enum mode mode;		/* what the mount does now */

/* Options and setup */
static enum mode opt_mode = M_FLAG;
static unsigned long long opt_seed = 1;
static long opt_ops = 500;
static int opt_nproc;
static const char *opt_ns = "user";
static int opt_remount;
static const char *opt_mnt;
static const char *opt_lower;
static const char *opt_corrupt;
static int opt_keep, opt_verbose;
static char opt_exclude[512];
static const char *topdir;

#define ROOTMAX	3000		/* leaves room for what paths add to it */
static char root[ROOTMAX];	/* this worker's tree */
static char lroot[ROOTMAX];	/* the same in the lower dir, or "" */
static unsigned long long seed;
static int worker = -1;
static int falloc_ok, xchg_ok;
static uid_t myuid;
static gid_t mygid;
static int rootcow;

/* Run state */
static uint64_t rs;
static long step;
static long copies;
static int corrupt_errno;
static char curlog[1024];
static char ring[NLOG][1024];
static long ringstep[NLOG];
static int nring;
static long census[200];

static unsigned char buf[CAP + 8192];
static unsigned char wbuf[CAP];

/* ---- PRNG: xorshift64, seeded through splitmix64 ---- */

static uint64_t rnd64(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static unsigned int rnd(unsigned int n)
{
	return n ? (unsigned int)(rnd64() % n) : 0;
}

static int chance(unsigned int pct)
{
	return rnd(100) < pct;
}

static void seed_rng(unsigned long long s)
{
	uint64_t z = s + 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	rs = z ^ (z >> 31);
	if (!rs)
		rs = 1;
}

/* ---- logging and failure ---- */

static const char *ename(int e)
{
	const char *s;

	if (!e)
		return "OK";
	s = strerrorname_np(e);
	return s ? s : "E?";
}

static void lg(const char *fmt, ...)
{
	size_t len = strlen(curlog);
	va_list ap;

	if (len >= sizeof(curlog) - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(curlog + len, sizeof(curlog) - len, fmt, ap);
	va_end(ap);
}

static void push_log(void)
{
	if (opt_verbose)
		fprintf(stderr, "cowfsx[%llu] %ld: %s\n", seed, step, curlog);
	snprintf(ring[nring % NLOG], sizeof(ring[0]), "%s", curlog);
	ringstep[nring % NLOG] = step;
	nring++;
	curlog[0] = 0;
}

static const char *nm(int n)
{
	static char s[4][16];
	static int k;

	k = (k + 1) % 4;
	snprintf(s[k], sizeof(s[k]), "d%d/f%d", n / NB, n % NB);
	return s[k];
}

static char out[65536];
static size_t outlen;

static void outf(const char *fmt, ...)
{
	va_list ap;

	if (outlen >= sizeof(out) - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(out + outlen, sizeof(out) - outlen, fmt, ap);
	va_end(ap);
	outlen += strlen(out + outlen);
}

static const char *mode_name(enum mode m)
{
	return m == M_PLAIN ? "plain" : m == M_FLAG ? "cow" : "all";
}

static void dump_obj(int o)
{
	struct obj *ob = &objs[o];
	int n;

	outf("  obj %d (made at step %ld): size %zu mode %o uid %u gid %u cow %d ino %lu mtime %s%ld names:",
	     o, ob->born, ob->size, (unsigned int)ob->mode, (unsigned int)ob->uid,
	     (unsigned int)ob->gid, ob->cow, (unsigned long)ob->ino,
	     ob->mtime_known ? "" : "?", ob->mtime_known ? (long)ob->mtime.tv_sec : 0L);
	for (n = 0; n < NNAMES; n++)
		if (names[n] == o)
			outf(" %s", nm(n));
	outf("\n");
}

/* Print what led here and the mismatch, exit 1. */
static void __attribute__((format(printf, 1, 2), noreturn)) fail(const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	int i, o;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	outlen = 0;
	if (worker >= 0)
		outf("cowfsx: worker %d, %s:\n", worker, root);
	outf("cowfsx: seed %llu: step %ld: MISMATCH (details below)\n", seed, step);
	outf("cowfsx: the model (mount mode %s, dir flags", mode_name(mode));
	for (i = 0; i < nd; i++)
		outf(" d%d=%d", i, dircow[i]);
	outf("):\n");
	for (o = 0; o < MAXOBJ; o++)
		if (objs[o].used)
			dump_obj(o);
	outf("cowfsx: the last operations%s:\n", worker >= 0 ? " of this worker" : "");
	for (i = nring > NLOG ? nring - NLOG : 0; i < nring; i++)
		outf("  %ld: %s\n", ringstep[i % NLOG], ring[i % NLOG]);
	if (curlog[0])
		outf("  %ld: %s\n", step, curlog);
	outf("cowfsx: seed %llu: step %ld: MISMATCH: %s\n", seed, step, msg);
	outf("cowfsx: replay: cowfsx -m %s -s %llu -n %ld -x %s%s%s%s%s DIR (a fresh one)\n",
	     mode_name(opt_mode), seed, opt_ops, opt_ns,
	     opt_remount ? " -r -M " : "", opt_remount ? opt_mnt : "",
	     opt_exclude[0] ? " -X " : "", opt_exclude);
	fflush(stdout);
	if (write(2, out, outlen) < 0)
		exit(1);
	exit(1);
}

static void __attribute__((format(printf, 1, 2), noreturn)) die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "cowfsx: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(2);
}

/*
 * expect - compare a system call's result with the model's prediction
 * @r: what the call returned (negative: failed, errno says why)
 * @want: 0 for success, or the errno the model predicts
 * Logs the result; a mismatch ends the run.
 */
static void expect(long r, int want, const char *what)
{
	int e = r < 0 ? errno : 0;

	if (corrupt_errno) {
		corrupt_errno = 0;
		want = want ? 0 : EPERM;
	}
	lg(" -> %s", ename(e));
	if (e >= 0 && e < (int)(sizeof(census) / sizeof(census[0])))
		census[e]++;
	if (e != want)
		fail("%s: got %s, the model expects %s", what, ename(e), ename(want));
}

/* ---- paths ---- */

static void path_of(int n, char *p)
{
	snprintf(p, PATH_MAX, "%s/d%d/f%d", root, n / NB, n % NB);
}

static void dpath(int d, char *p)
{
	snprintf(p, PATH_MAX, "%s/d%d", root, d);
}

/* ---- the model ---- */

static int excluded(const char *op)
{
	const char *p = opt_exclude;
	size_t len = strlen(op);

	while ((p = strstr(p, op))) {
		if ((p == opt_exclude || p[-1] == ',') && (p[len] == ',' || !p[len]))
			return 1;
		p += len;
	}
	return 0;
}

static int effcow(const struct obj *o)
{
	return mode == M_ALL ? 1 : mode == M_FLAG ? o->cow : 0;
}

static int alloc_obj(void)
{
	int o;

	for (o = 0; o < MAXOBJ; o++) {
		if (!objs[o].used) {
			unsigned char *d = objs[o].data;

			memset(&objs[o], 0, sizeof(objs[o]));
			objs[o].data = d;
			memset(d, 0, CAP);
			objs[o].used = 1;
			objs[o].born = step;
			return o;
		}
	}
	die("model: out of objects");
}

static void drop_name(int n)
{
	int o = names[n];

	names[n] = -1;
	if (--objs[o].nnames == 0)
		objs[o].used = 0;
}

static void add_name(int n, int o)
{
	names[n] = o;
	objs[o].nnames++;
}

/* The model of a break: name @n gets a copy of its own if it needs one. */
static void break_name(int n)
{
	int o = names[n], c;
	struct obj *a, *b;
	unsigned char *d;

	if (!effcow(&objs[o]) || objs[o].nnames < 2)
		return;
	c = alloc_obj();
	a = &objs[o];
	b = &objs[c];
	d = b->data;
	*b = *a;
	b->data = d;
	memcpy(d, a->data, a->size);
	b->ino = 0;
	b->nnames = 1;
	b->born = step;
	a->nnames--;
	names[n] = c;
	copies++;
	lg(" (copy)");
}

static void m_write(struct obj *o, size_t off, const unsigned char *p, size_t len)
{
	memcpy(o->data + off, p, len);
	if (off + len > o->size)
		o->size = off + len;
	o->mtime_known = 0;
}

static void m_truncate(struct obj *o, size_t len)
{
	if (len < o->size)
		memset(o->data + len, 0, o->size - len);
	o->size = len;
	o->mtime_known = 0;
}

/* ---- picking ---- */

static int count_names(void)
{
	int n, k = 0;

	for (n = 0; n < nd * NB; n++)
		k += names[n] >= 0;
	return k;
}

/* An existing name (pct %), else any name of the pool. */
static int pick_name(unsigned int pct)
{
	int n, k = count_names(), i;

	if (k && chance(pct)) {
		i = rnd(k);
		for (n = 0; n < nd * NB; n++)
			if (names[n] >= 0 && i-- == 0)
				return n;
	}
	return rnd(nd * NB);
}

/* A name of a file with several names (half the time), else as pick_name(). */
static int pick_target(void)
{
	int n, k = 0, i;

	for (n = 0; n < nd * NB; n++)
		k += names[n] >= 0 && objs[names[n]].nnames > 1;
	if (k && chance(50)) {
		i = rnd(k);
		for (n = 0; n < nd * NB; n++)
			if (names[n] >= 0 && objs[names[n]].nnames > 1 && i-- == 0)
				return n;
	}
	return pick_name(92);
}

/* A free name (pct %), else any name of the pool. */
static int pick_free(unsigned int pct)
{
	int n, k = nd * NB - count_names(), i;

	if (k && chance(pct)) {
		i = rnd(k);
		for (n = 0; n < nd * NB; n++)
			if (names[n] < 0 && i-- == 0)
				return n;
	}
	return rnd(nd * NB);
}

/* A free name in a directory of flag @cow (flag mode: where links go). */
static int pick_free_in(int cow)
{
	int n, k = 0, i;

	for (n = 0; n < nd * NB; n++)
		k += names[n] < 0 && (mode != M_FLAG || dircow[n / NB] == cow);
	if (!k)
		return -1;
	i = rnd(k);
	for (n = 0; n < nd * NB; n++)
		if (names[n] < 0 && (mode != M_FLAG || dircow[n / NB] == cow) && i-- == 0)
			return n;
	return -1;
}

/* A write length: mostly small, sometimes a few KiB. */
static size_t pick_len(void)
{
	unsigned int r = rnd(100);

	if (r < 50)
		return 1 + rnd(64);
	if (r < 85)
		return 1 + rnd(1024);
	return 1 + rnd(8192);
}

/* An offset for a write of @len into a file of @size: inside, at, or past EOF. */
static size_t pick_off(size_t size, size_t len)
{
	size_t off;
	unsigned int r = rnd(100);

	if (r < 60)
		off = rnd(size + 1);
	else if (r < 75)
		off = size;
	else
		off = size + rnd(16384);	/* leaves a hole */
	if (off + len > CAP)
		off = len > CAP ? 0 : CAP - len;
	return off;
}

static size_t pick_size(size_t size)
{
	unsigned int r = rnd(100);
	size_t s;

	if (r < 10)
		s = 0;
	else if (r < 20)
		s = size;
	else if (r < 60)
		s = rnd(size + 1);
	else
		s = size + 1 + rnd(r < 90 ? 4096 : 32768);
	return s > CAP ? CAP : s;
}

static void fill(unsigned char *p, size_t len)
{
	size_t i;
	uint64_t v = 0;

	for (i = 0; i < len; i++) {
		if (!(i % 8))
			v = rnd64();
		p[i] = 'a' + (v & 0xff) % 26;
		v >>= 8;
	}
}

static const char *xname(int i, char *s)
{
	snprintf(s, 64, "%s.%c", opt_ns, 'a' + i);
	return s;
}

/* ---- the checks ---- */

static int ioc_getcow(int fd, int *v)
{
	*v = -1;
	return ioctl(fd, COWLINKFS_IOC_GETCOW, v);
}

static void check_flag(int fd, int want, const char *what)
{
	int v;
	int r = ioc_getcow(fd, &v);
	int e = r < 0 ? errno : 0;

	if (mode == M_PLAIN) {
		if (e != ENOTTY)
			fail("%s: GETCOW gave %s (%d), plain mode expects ENOTTY", what, ename(e), v);
		return;
	}
	if (e)
		fail("%s: GETCOW failed: %s", what, ename(e));
	if (v != want)
		fail("%s: COW flag is %d, the model says %d", what, v, want);
}

/* Which other object's model has these bytes?  For the report. */
static const char *who_has(const unsigned char *p, size_t len, int self)
{
	static char s[128];
	int o;

	for (o = 0; o < MAXOBJ; o++)
		if (o != self && objs[o].used && objs[o].size == len &&
		    !memcmp(objs[o].data, p, len)) {
			snprintf(s, sizeof(s), " (they are the bytes of obj %d)", o);
			return s;
		}
	return "";
}

static void check_xattrs(int n, int fd, const struct obj *o)
{
	char xn[64], v[256], list[4096];
	ssize_t r;
	int i, seen[NXA] = { 0 };
	char *s;

	for (i = 0; i < NXA; i++) {
		r = fgetxattr(fd, xname(i, xn), v, sizeof(v));
		if (r < 0 && errno != ENODATA)
			fail("%s: getxattr %s: %s", nm(n), xn, ename(errno));
		if (!o->xset[i] && r >= 0)
			fail("%s: xattr %s is there ('%.*s'), the model has none",
			     nm(n), xn, (int)r, v);
		if (o->xset[i] && r < 0)
			fail("%s: xattr %s is missing, the model has '%.*s'", nm(n), xn,
			     (int)o->xlen[i], o->xval[i]);
		if (o->xset[i] && ((size_t)r != o->xlen[i] || memcmp(v, o->xval[i], r)))
			fail("%s: xattr %s is '%.*s', the model has '%.*s'", nm(n), xn,
			     (int)r, v, (int)o->xlen[i], o->xval[i]);
	}
	r = flistxattr(fd, list, sizeof(list));
	if (r < 0)
		fail("%s: listxattr: %s", nm(n), ename(errno));
	for (s = list; s < list + r; s += strlen(s) + 1) {
		size_t pl = strlen(opt_ns);

		if (strncmp(s, opt_ns, pl) || s[pl] != '.')
			continue;
		for (i = 0; i < NXA; i++)
			if (!strcmp(s, xname(i, xn)))
				break;
		if (i == NXA)
			fail("%s: listxattr shows %s, which the model does not have", nm(n), s);
		if (!o->xset[i])
			fail("%s: listxattr shows %s, the model has none", nm(n), s);
		if (seen[i]++)
			fail("%s: listxattr shows %s twice", nm(n), s);
	}
	for (i = 0; i < NXA; i++)
		if (o->xset[i] && !seen[i])
			fail("%s: listxattr misses %s", nm(n), xname(i, xn));
}

static void check_dirs(void)
{
	char p[PATH_MAX];
	int d, n, fd;

	for (d = 0; d < nd; d++) {
		int seen[NB] = { 0 };
		struct dirent *de;
		DIR *dh;

		dpath(d, p);
		dh = opendir(p);
		if (!dh)
			fail("opendir d%d: %s", d, ename(errno));
		while ((de = readdir(dh))) {
			char *end;
			long j;

			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			j = de->d_name[0] == 'f' ? strtol(de->d_name + 1, &end, 10) : -1;
			if (j < 0 || j >= NB || *end || de->d_name[1] == 0)
				fail("readdir d%d: unexpected entry '%s'", d, de->d_name);
			if (seen[j]++)
				fail("readdir d%d: '%s' listed twice", d, de->d_name);
			if (names[d * NB + j] < 0)
				fail("readdir d%d: lists '%s', which the model does not have",
				     d, de->d_name);
		}
		closedir(dh);
		for (n = 0; n < NB; n++)
			if (names[d * NB + n] >= 0 && !seen[n])
				fail("readdir d%d: misses f%d", d, n);
		fd = open(p, O_RDONLY | O_DIRECTORY);
		if (fd < 0)
			fail("open d%d: %s", d, ename(errno));
		check_flag(fd, dircow[d], p + strlen(root) + 1);
		close(fd);
	}
}

static void check_all(void)
{
	ino_t seen_ino[MAXOBJ] = { 0 };
	int first[MAXOBJ] = { 0 };
	char p[PATH_MAX], lp[PATH_MAX];
	struct stat st, fst, lst;
	int n, o, o2, fd;
	ssize_t r;

	check_dirs();
	for (n = 0; n < nd * NB; n++) {
		struct obj *ob;

		path_of(n, p);
		o = names[n];
		if (lstat(p, &st) < 0) {
			if (errno != ENOENT)
				fail("lstat %s: %s", nm(n), ename(errno));
			if (o >= 0)
				fail("%s: lstat says ENOENT, the model has obj %d", nm(n), o);
			if (lroot[0]) {
				snprintf(lp, sizeof(lp), "%s/d%d/f%d", lroot, n / NB, n % NB);
				if (lstat(lp, &lst) == 0 || errno != ENOENT)
					fail("%s: gone through the mount, not in the lower dir", nm(n));
			}
			continue;
		}
		if (o < 0)
			fail("%s: exists (ino %lu), the model has no such name", nm(n),
			     (unsigned long)st.st_ino);
		ob = &objs[o];
		if (!S_ISREG(st.st_mode))
			fail("%s: not a regular file (mode %o)", nm(n), (unsigned int)st.st_mode);
		if ((st.st_mode & 07777) != ob->mode)
			fail("%s: mode %o, the model says %o", nm(n),
			     (unsigned int)(st.st_mode & 07777), (unsigned int)ob->mode);
		if (st.st_uid != ob->uid || st.st_gid != ob->gid)
			fail("%s: owner %u:%u, the model says %u:%u", nm(n),
			     (unsigned int)st.st_uid, (unsigned int)st.st_gid,
			     (unsigned int)ob->uid, (unsigned int)ob->gid);
		if (st.st_nlink != (nlink_t)ob->nnames)
			fail("%s: st_nlink %lu, the model has %d names", nm(n),
			     (unsigned long)st.st_nlink, ob->nnames);
		if ((size_t)st.st_size != ob->size)
			fail("%s: size %lld, the model says %zu", nm(n),
			     (long long)st.st_size, ob->size);
		if (ob->mtime_known && (st.st_mtim.tv_sec != ob->mtime.tv_sec ||
					st.st_mtim.tv_nsec != ob->mtime.tv_nsec))
			fail("%s: mtime %lld.%09ld, the model says %lld.%09ld", nm(n),
			     (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
			     (long long)ob->mtime.tv_sec, ob->mtime.tv_nsec);
		/* Learnt after a data change; from now on nothing else changes it. */
		ob->mtime_known = 1;
		ob->mtime = st.st_mtim;
		if (!seen_ino[o]) {
			seen_ino[o] = st.st_ino;
			first[o] = n;
			if (ob->ino && ob->ino != st.st_ino)
				fail("%s: st_ino changed from %lu to %lu, the model made no copy",
				     nm(n), (unsigned long)ob->ino, (unsigned long)st.st_ino);
		} else if (seen_ino[o] != st.st_ino) {
			fail("%s (ino %lu) and %s (ino %lu) are one file in the model",
			     nm(first[o]), (unsigned long)seen_ino[o], nm(n),
			     (unsigned long)st.st_ino);
		}

		fd = open(p, O_RDONLY | O_NOFOLLOW);
		if (fd < 0)
			fail("open %s O_RDONLY: %s", nm(n), ename(errno));
		if (fstat(fd, &fst) < 0 || fst.st_ino != st.st_ino)
			fail("%s: fstat st_ino %lu, lstat %lu", nm(n),
			     (unsigned long)fst.st_ino, (unsigned long)st.st_ino);
		{
			size_t got = 0;

			while ((r = read(fd, buf + got, sizeof(buf) - got)) > 0)
				got += r;
			if (r < 0)
				fail("read %s: %s", nm(n), ename(errno));
			if (got != ob->size || memcmp(buf, ob->data, got)) {
				size_t i = 0;

				while (i < got && i < ob->size && buf[i] == ob->data[i])
					i++;
				fail("%s: %zu bytes read, the model has %zu; first difference at %zu: %s%s",
				     nm(n), got, ob->size, i,
				     i < got && i < ob->size ? "bytes differ" : "length",
				     who_has(buf, got, o));
			}
		}
		check_flag(fd, ob->cow, nm(n));
		check_xattrs(n, fd, ob);
		close(fd);
		if (lroot[0]) {
			snprintf(lp, sizeof(lp), "%s/d%d/f%d", lroot, n / NB, n % NB);
			if (lstat(lp, &lst) < 0)
				fail("%s: lower name: %s", nm(n), ename(errno));
			if (lst.st_ino != st.st_ino || lst.st_nlink != st.st_nlink)
				fail("%s: ino %lu nlink %lu through the mount, %lu %lu in the lower dir",
				     nm(n), (unsigned long)st.st_ino, (unsigned long)st.st_nlink,
				     (unsigned long)lst.st_ino, (unsigned long)lst.st_nlink);
		}
	}
	for (o = 0; o < MAXOBJ; o++) {
		if (!objs[o].used)
			continue;
		if (!seen_ino[o])
			fail("obj %d has no name left but is in the model", o);
		for (o2 = o + 1; o2 < MAXOBJ; o2++)
			if (objs[o2].used && seen_ino[o2] == seen_ino[o])
				fail("%s and %s share st_ino %lu, the model has two files (obj %d, %d)",
				     nm(first[o]), nm(first[o2]), (unsigned long)seen_ino[o], o, o2);
		objs[o].ino = seen_ino[o];
	}
}

/* ---- operations ---- */

static const char *oflags_str(int fl)
{
	static char s[80];
	int acc = fl & O_ACCMODE;

	snprintf(s, sizeof(s), "%s%s%s%s%s",
		 acc == O_RDONLY ? "O_RDONLY" : acc == O_WRONLY ? "O_WRONLY" : "O_RDWR",
		 fl & O_APPEND ? "|O_APPEND" : "", fl & O_TRUNC ? "|O_TRUNC" : "",
		 fl & O_CREAT ? "|O_CREAT" : "", fl & O_EXCL ? "|O_EXCL" : "");
	return s;
}

/* Before a mapping: a file shorter than the model would raise SIGBUS. */
static void check_fd_size(int fd, size_t size, const char *what)
{
	struct stat st;

	if (fstat(fd, &st) < 0 || (size_t)st.st_size != size)
		fail("%s: fstat size %lld, the model says %zu", what,
		     (long long)st.st_size, size);
}

static const mode_t modes[] = { 0644, 0600, 0640, 0755, 0700, 0444, 0400, 0666, 0, 0777 };

/*
 * A new object for name @n, as made by open(O_CREAT) with @cmode: root's,
 * with the flag of its directory.
 */
static int new_obj(int n, mode_t cmode)
{
	int o = alloc_obj();

	objs[o].mode = cmode;
	objs[o].uid = myuid;
	objs[o].gid = mygid;
	objs[o].cow = mode == M_PLAIN ? 0 : dircow[n / NB];
	add_name(n, o);
	return o;
}

/*
 * The first change through a descriptor of a name opened without a break
 * breaks it (in the model as in cowlinkfs): the object to change now.
 */
static struct obj *first_change(int n, int *pending)
{
	if (*pending) {
		break_name(n);
		*pending = 0;
	}
	return &objs[names[n]];
}

/* A write through a read-only descriptor gets EBADF; others write all. */
static int write_refused(int acc, long ret, size_t len, const char *what)
{
	if (acc == O_RDONLY) {
		expect(ret, EBADF, what);
		return 1;
	}
	expect(ret, 0, what);
	if ((size_t)ret != len)
		fail("%s: wrote %ld of %zu bytes", what, ret, len);
	return 0;
}

/*
 * The descriptor part of op_open: what is done through one open file.
 * @n: the name, @fl: open flags, @pending: a write-only open, whose
 * break waits for the first change.
 */
static void fd_actions(int fd, int n, int fl, int pending)
{
	int acc = fl & O_ACCMODE, k = rnd(4), i;
	size_t pos = 0;
	char what[160];

	for (i = 0; i < k; i++) {
		struct obj *o = &objs[names[n]];
		unsigned int r = rnd(100);
		size_t len, off;
		long ret;

		if (r < 30 && !excluded("write")) {
			/* write() at the file position, or at EOF with O_APPEND */
			len = pick_len();
			off = fl & O_APPEND ? o->size : pos;
			if (off + len > CAP)
				len = off >= CAP ? 0 : CAP - off;
			if (!len)
				continue;
			fill(wbuf, len);
			lg("; write %zu%s", len, fl & O_APPEND ? " (append)" : "");
			ret = write(fd, wbuf, len);
			snprintf(what, sizeof(what), "write %zu to %s", len, nm(n));
			if (write_refused(acc, ret, len, what))
				continue;
			o = first_change(n, &pending);
			m_write(o, off, wbuf, len);
			pos = off + len;
		} else if (r < 50 && !excluded("pwrite")) {
			len = pick_len();
			off = pick_off(o->size, len);
			if (fl & O_APPEND) {
				/* Linux: pwrite on an O_APPEND fd appends */
				off = o->size;
				if (off + len > CAP)
					len = off >= CAP ? 0 : CAP - off;
				if (!len)
					continue;
			}
			fill(wbuf, len);
			lg("; pwrite %zu@%zu", len, off);
			ret = pwrite(fd, wbuf, len, off);
			snprintf(what, sizeof(what), "pwrite %zu@%zu to %s", len, off, nm(n));
			if (write_refused(acc, ret, len, what))
				continue;
			o = first_change(n, &pending);
			m_write(o, off, wbuf, len);
		} else if (r < 58 && !excluded("lseek")) {
			off = chance(70) ? rnd(o->size + 1) : o->size + rnd(8192);
			if (off > CAP)
				off = CAP;
			lg("; lseek %zu", off);
			ret = lseek(fd, off, SEEK_SET);
			expect(ret, 0, "lseek");
			if ((size_t)ret != off)
				fail("lseek to %zu gave %ld", off, ret);
			pos = off;
		} else if (r < 70 && !excluded("read")) {
			off = rnd(o->size + 16);
			len = 1 + rnd(4096);
			lg("; pread %zu@%zu", len, off);
			ret = pread(fd, buf, len, off);
			snprintf(what, sizeof(what), "pread %zu@%zu from %s", len, off, nm(n));
			if (acc == O_WRONLY) {
				expect(ret, EBADF, what);
				continue;
			}
			expect(ret, 0, what);
			{
				size_t want = off >= o->size ? 0 :
					      (o->size - off < len ? o->size - off : len);

				if ((size_t)ret != want || memcmp(buf, o->data + off, want))
					fail("%s: %ld bytes, the model has %zu%s", what, ret, want,
					     (size_t)ret == want ? " (bytes differ)" : "");
			}
		} else if (r < 80 && !excluded("ftruncate")) {
			len = pick_size(o->size);
			lg("; ftruncate %zu", len);
			ret = ftruncate(fd, len);
			snprintf(what, sizeof(what), "ftruncate %s to %zu", nm(n), len);
			if (acc == O_RDONLY) {
				expect(ret, EINVAL, what);
				continue;
			}
			expect(ret, 0, what);
			o = first_change(n, &pending);
			m_truncate(o, len);
		} else if (r < 90 && !excluded("fallocate")) {
			int keep = chance(30) ? FALLOC_FL_KEEP_SIZE : 0;

			len = 1 + rnd(8192);
			off = rnd(o->size + 4096);
			if (off + len > CAP)
				off = CAP - len;
			lg("; fallocate%s %zu@%zu", keep ? " keep_size" : "", len, off);
			ret = fallocate(fd, keep, off, len);
			snprintf(what, sizeof(what), "fallocate %s %zu@%zu", nm(n), len, off);
			if (acc == O_RDONLY) {
				expect(ret, EBADF, what);
				continue;
			}
			/*
			 * A refused change makes no copy (EOPNOTSUPP on ext2,
			 * ext3); newer ext4 drivers touch mtime before they
			 * refuse, so that is left open.
			 */
			if (!falloc_ok) {
				expect(ret, EOPNOTSUPP, what);
				o->mtime_known = 0;
				continue;
			}
			expect(ret, 0, what);
			o = first_change(n, &pending);
			if (!keep && off + len > o->size)
				o->size = off + len;
			o->mtime_known = 0;
		} else if (!excluded("mmap")) {
			unsigned char *m;
			size_t mlen = o->size ? o->size : 4096;

			if (acc != O_RDWR) {
				lg("; mmap shared rw");
				m = mmap(NULL, mlen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
				expect(m == MAP_FAILED ? -1 : 0, EACCES, "mmap of a fd not O_RDWR");
				if (m != MAP_FAILED)
					munmap(m, mlen);
				continue;
			}
			if (!o->size)
				continue;
			off = rnd(o->size);
			len = 1 + rnd(o->size - off < 512 ? o->size - off : 512);
			fill(wbuf, len);
			lg("; mmap write %zu@%zu", len, off);
			snprintf(what, sizeof(what), "mmap MAP_SHARED %s", nm(n));
			check_fd_size(fd, o->size, what);
			m = mmap(NULL, mlen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			expect(m == MAP_FAILED ? -1 : 0, 0, what);
			if (memcmp(m, o->data, o->size))
				fail("%s: the mapping does not show the model's bytes", what);
			memcpy(m + off, wbuf, len);
			lg("; msync");
			expect(msync(m, mlen, MS_SYNC), 0, "msync");
			munmap(m, mlen);
			/* O_RDWR broke the name at open: pending is 0 here. */
			m_write(o, off, wbuf, len);
		}
	}
}

static const int open_flags[] = {
	O_RDONLY, O_WRONLY, O_RDWR, O_WRONLY | O_APPEND, O_RDWR | O_APPEND,
	O_WRONLY | O_TRUNC, O_RDWR | O_TRUNC, O_WRONLY | O_APPEND | O_TRUNC,
	O_WRONLY | O_CREAT, O_RDWR | O_CREAT, O_WRONLY | O_CREAT | O_TRUNC,
	O_WRONLY | O_CREAT | O_EXCL, O_RDWR | O_CREAT | O_EXCL,
	O_WRONLY | O_APPEND | O_CREAT | O_EXCL, O_RDONLY | O_TRUNC,
};

static void op_open(void)
{
	char p[PATH_MAX], what[160];
	int fl = open_flags[rnd(sizeof(open_flags) / sizeof(open_flags[0]))];
	int n, exists, want, fd, acc;
	mode_t cmode = modes[rnd(4)];

	if (fl == (O_RDONLY | O_TRUNC) && !chance(30))
		fl = O_RDONLY;
	/* Enough names: mostly open existing ones. */
	if ((fl & O_CREAT) && count_names() > nd * NB / 2 && chance(80))
		fl &= ~(O_CREAT | O_EXCL);
	n = (fl & O_EXCL) ? pick_free(85) : (fl & O_CREAT) ? pick_name(70) : pick_target();
	exists = names[n] >= 0;
	path_of(n, p);
	acc = fl & O_ACCMODE;
	if ((fl & O_EXCL) && exists)
		want = EEXIST;
	else if (!(fl & O_CREAT) && !exists)
		want = ENOENT;
	else
		want = 0;
	lg("open %s %s", nm(n), oflags_str(fl));
	if (fl & O_CREAT)
		lg(" %o", (unsigned int)cmode);
	fd = open(p, fl, cmode);
	snprintf(what, sizeof(what), "open %s %s", nm(n), oflags_str(fl));
	expect(fd, want, what);
	if (fd < 0)
		return;
	if (!exists) {
		new_obj(n, cmode);
	} else {
		if ((fl & O_TRUNC) || acc == O_RDWR)
			break_name(n);
		if (fl & O_TRUNC)
			m_truncate(&objs[names[n]], 0);
	}
	fd_actions(fd, n, fl, acc == O_WRONLY && !(fl & O_TRUNC));
	lg("; close");
	expect(close(fd), 0, "close");
}

static void op_truncate(void)
{
	char p[PATH_MAX];
	int n = pick_target();
	size_t len = pick_size(names[n] >= 0 ? objs[names[n]].size : 0);

	path_of(n, p);
	lg("truncate %s %zu", nm(n), len);
	expect(truncate(p, len), names[n] >= 0 ? 0 : ENOENT, "truncate");
	if (names[n] < 0)
		return;
	break_name(n);
	m_truncate(&objs[names[n]], len);
}

static void op_chmod(void)
{
	char p[PATH_MAX];
	int n = pick_target();
	mode_t m = modes[rnd(sizeof(modes) / sizeof(modes[0]))];

	if (names[n] >= 0 && chance(30))
		m = objs[names[n]].mode;
	path_of(n, p);
	lg("chmod %s %o", nm(n), (unsigned int)m);
	expect(chmod(p, m), names[n] >= 0 ? 0 : ENOENT, "chmod");
	if (names[n] < 0)
		return;
	if (objs[names[n]].mode != m)
		break_name(n);
	objs[names[n]].mode = m;
}

static void op_chown(void)
{
	static const int ids[] = { 0, 1000, -1 };
	char p[PATH_MAX];
	int n = pick_target();
	int u = ids[rnd(3)], g = ids[rnd(3)];
	struct obj *o;

	if (names[n] >= 0 && chance(30)) {
		u = objs[names[n]].uid;
		g = chance(50) ? (int)objs[names[n]].gid : -1;
	}
	path_of(n, p);
	lg("chown %s %d:%d", nm(n), u, g);
	expect(chown(p, u, g), names[n] >= 0 ? 0 : ENOENT, "chown");
	if (names[n] < 0)
		return;
	o = &objs[names[n]];
	if ((u != -1 && (uid_t)u != o->uid) || (g != -1 && (gid_t)g != o->gid))
		break_name(n);
	o = &objs[names[n]];
	if (u != -1)
		o->uid = u;
	if (g != -1)
		o->gid = g;
}

static void op_utimes(void)
{
	char p[PATH_MAX];
	int n = pick_target();
	struct timespec ts[2];

	ts[0].tv_sec = 1000000000 + rnd(900000000);
	ts[0].tv_nsec = 0;
	/* whole seconds, before 2038: every lower fs keeps them exactly */
	ts[1].tv_sec = 1000000000 + rnd(900000000);
	ts[1].tv_nsec = 0;
	path_of(n, p);
	lg("utimes %s %ld", nm(n), (long)ts[1].tv_sec);
	expect(utimensat(AT_FDCWD, p, ts, 0), names[n] >= 0 ? 0 : ENOENT, "utimensat");
	if (names[n] < 0)
		return;
	break_name(n);
	objs[names[n]].mtime_known = 1;
	objs[names[n]].mtime = ts[1];
}

static void op_setxattr(void)
{
	char p[PATH_MAX], xn[64], v[XAMAX];
	int n = pick_target(), i = rnd(NXA), want = 0, same = 0;
	int fl = chance(70) ? 0 : chance(50) ? XATTR_CREATE : XATTR_REPLACE;
	size_t len = 1 + rnd(8);
	struct obj *o = names[n] >= 0 ? &objs[names[n]] : NULL;

	fill((unsigned char *)v, len);
	if (o && o->xset[i] && chance(25)) {
		len = o->xlen[i];
		memcpy(v, o->xval[i], len);
	}
	path_of(n, p);
	xname(i, xn);
	lg("setxattr %s %s=%.*s%s", nm(n), xn, (int)len, v,
	   fl == XATTR_CREATE ? " create" : fl == XATTR_REPLACE ? " replace" : "");
	if (!o)
		want = ENOENT;
	else if (fl == XATTR_CREATE && o->xset[i])
		want = EEXIST;
	else if (fl == XATTR_REPLACE && !o->xset[i])
		want = ENODATA;
	else
		same = o->xset[i] && o->xlen[i] == len && !memcmp(o->xval[i], v, len);
	expect(setxattr(p, xn, v, len, fl), want, "setxattr");
	if (want)
		return;
	/* Setting the value it has changes nothing: no copy. */
	if (!same)
		break_name(n);
	o = &objs[names[n]];
	o->xset[i] = 1;
	o->xlen[i] = len;
	memcpy(o->xval[i], v, len);
}

static void op_removexattr(void)
{
	char p[PATH_MAX], xn[64];
	int n = pick_target(), i = rnd(NXA), want = 0;

	path_of(n, p);
	xname(i, xn);
	lg("removexattr %s %s", nm(n), xn);
	if (names[n] < 0)
		want = ENOENT;
	else if (!objs[names[n]].xset[i])
		want = ENODATA;
	expect(removexattr(p, xn), want, "removexattr");
	if (want)
		return;
	break_name(n);
	objs[names[n]].xset[i] = 0;
}

static void op_link(void)
{
	char p[PATH_MAX], q[PATH_MAX];
	int a = pick_name(95), b = pick_free(85), want = 0;

	/* In flag mode, mostly a link the rules allow. */
	if (names[a] >= 0 && mode == M_FLAG && chance(80)) {
		int c = pick_free_in(objs[names[a]].cow);

		if (c >= 0)
			b = c;
	}
	path_of(a, p);
	path_of(b, q);
	lg("link %s %s", nm(a), nm(b));
	if (names[a] < 0)
		want = ENOENT;
	else if (names[b] >= 0)
		want = EEXIST;
	else if (mode == M_FLAG && objs[names[a]].cow != dircow[b / NB])
		want = EMLINK;
	expect(link(p, q), want, "link");
	if (!want)
		add_name(b, names[a]);
}

static void op_unlink(void)
{
	char p[PATH_MAX];
	int n = pick_name(92);

	path_of(n, p);
	lg("unlink %s", nm(n));
	expect(unlink(p), names[n] >= 0 ? 0 : ENOENT, "unlink");
	if (names[n] >= 0)
		drop_name(n);
}

static void op_rename(void)
{
	char p[PATH_MAX], q[PATH_MAX];
	int a = pick_name(95), b, want = 0, same_obj;
	unsigned int fl = 0, r = rnd(100);
	int da, db;

	if (r < 15)
		fl = RENAME_NOREPLACE;
	else if (r < 25)
		fl = RENAME_EXCHANGE;
	/* over an existing name (often one of the same file), or to a free one */
	if (chance(fl == RENAME_EXCHANGE ? 90 : 40)) {
		b = pick_name(95);
		if (names[a] >= 0 && chance(25)) {
			int n;

			for (n = 0; n < nd * NB; n++)
				if (names[n] == names[a] && n != a && chance(50)) {
					b = n;
					break;
				}
		}
	} else {
		b = pick_free(90);
	}
	if (chance(3))
		b = a;
	da = a / NB;
	db = b / NB;
	path_of(a, p);
	path_of(b, q);
	lg("rename %s %s%s", nm(a), nm(b), fl == RENAME_NOREPLACE ? " noreplace" :
	   fl == RENAME_EXCHANGE ? " exchange" : "");
	same_obj = names[a] >= 0 && names[a] == names[b];
	if (names[a] < 0)
		want = ENOENT;
	else if (fl == RENAME_NOREPLACE && names[b] >= 0)
		want = EEXIST;
	else if (fl == RENAME_EXCHANGE && names[b] < 0)
		want = ENOENT;
	else if (a == b)
		want = 0;
	else if (mode == M_FLAG && da != db &&
		 (objs[names[a]].cow != dircow[db] ||
		  (fl == RENAME_EXCHANGE && objs[names[b]].cow != dircow[da])))
		want = EMLINK;
	else if (fl == RENAME_EXCHANGE && !xchg_ok && !same_obj)
		want = EINVAL;
	expect(renameat2(AT_FDCWD, p, AT_FDCWD, q, fl), want, "rename");
	if (want || a == b || same_obj) {
		/* POSIX: two names of one file, nothing happens */
		return;
	}
	if (fl == RENAME_EXCHANGE) {
		int t = names[a];

		names[a] = names[b];
		names[b] = t;
		return;
	}
	if (names[b] >= 0)
		drop_name(b);
	names[b] = names[a];
	names[a] = -1;
}

static int ioc_setcow(const char *p, int v, int dir)
{
	int fd = open(p, O_RDONLY | O_NONBLOCK | (dir ? O_DIRECTORY : 0));
	int r, e;

	if (fd < 0)
		return -1;
	r = ioctl(fd, COWLINKFS_IOC_SETCOW, &v);
	e = errno;
	close(fd);
	errno = e;
	return r;
}

static void op_setcow(void)
{
	char p[PATH_MAX];
	int n = pick_name(95), v = chance(65), want = 0;

	path_of(n, p);
	lg("setcow %s %d", nm(n), v);
	if (names[n] < 0)
		want = ENOENT;
	else if (mode == M_PLAIN)
		want = ENOTTY;
	expect(ioc_setcow(p, v, 0), want, "SETCOW");
	if (!want)
		objs[names[n]].cow = v;
}

static void op_dircow(void)
{
	char p[PATH_MAX];
	int d = rnd(nd), v = rnd(2);

	dpath(d, p);
	lg("setcow d%d %d", d, v);
	expect(ioc_setcow(p, v, 1), mode == M_PLAIN ? ENOTTY : 0, "SETCOW on a directory");
	if (mode != M_PLAIN)
		dircow[d] = v;
}

static void op_break(void)
{
	char p[PATH_MAX];
	int n = pick_target(), fd;

	path_of(n, p);
	lg("break %s: open O_RDWR", nm(n));
	fd = open(p, O_RDWR);
	expect(fd, names[n] >= 0 ? 0 : ENOENT, "open O_RDWR");
	if (fd < 0)
		return;
	break_name(n);
	lg("; close");
	expect(close(fd), 0, "close");
}

static void op_mmap(void)
{
	char p[PATH_MAX];
	int n = pick_target(), fd;

	path_of(n, p);
	lg("mmap %s: open O_RDWR", nm(n));
	fd = open(p, O_RDWR);
	expect(fd, names[n] >= 0 ? 0 : ENOENT, "open O_RDWR");
	if (fd < 0)
		return;
	break_name(n);
	{
		struct obj *o = &objs[names[n]];
		size_t off, len;
		unsigned char *m;

		if (o->size) {
			off = rnd(o->size);
			len = 1 + rnd(o->size - off < 2048 ? o->size - off : 2048);
			fill(wbuf, len);
			lg("; mmap write %zu@%zu", len, off);
			check_fd_size(fd, o->size, "mmap MAP_SHARED");
			m = mmap(NULL, o->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			expect(m == MAP_FAILED ? -1 : 0, 0, "mmap MAP_SHARED");
			memcpy(m + off, wbuf, len);
			lg("; msync");
			expect(msync(m, o->size, MS_SYNC), 0, "msync");
			munmap(m, o->size);
			m_write(o, off, wbuf, len);
		}
	}
	lg("; close");
	expect(close(fd), 0, "close");
}

/* The flag of what GETCOW says on @p must be @want (-1: cannot open). */
static void check_flag_at(const char *p, int want, const char *what)
{
	int fd = open(p, O_RDONLY | O_NONBLOCK);

	if (fd < 0)
		fail("%s: open: %s", what, ename(errno));
	check_flag(fd, want, what);
	close(fd);
}

/*
 * A directory made in one directory (it takes that one's flag, and so
 * does a file made in it), maybe flagged differently, moved to another:
 * EMLINK in flag mode where the flags differ.  Removed again.
 */
static void op_dirmove(void)
{
	char a[PATH_MAX], b[PATH_MAX], f[PATH_MAX];
	int da = rnd(nd), db = rnd(nd), cow, want = 0, fd, file = chance(50);
	const char *at;

	snprintf(a, sizeof(a), "%s/d%d/m", root, da);
	snprintf(b, sizeof(b), "%s/d%d/m", root, db);
	lg("mkdir d%d/m", da);
	expect(mkdir(a, 0755), 0, "mkdir");
	cow = mode == M_PLAIN ? 0 : dircow[da];
	check_flag_at(a, cow, "new directory");
	if (file) {
		snprintf(f, sizeof(f), "%s/d%d/m/x", root, da);
		lg("; create m/x");
		fd = open(f, O_WRONLY | O_CREAT | O_EXCL, 0644);
		expect(fd, 0, "create in the new directory");
		close(fd);
		check_flag_at(f, cow, "file made in the new directory");
	}
	if (chance(50)) {
		int v = rnd(2);

		lg("; setcow m %d", v);
		expect(ioc_setcow(a, v, 1), mode == M_PLAIN ? ENOTTY : 0, "SETCOW");
		if (mode != M_PLAIN)
			cow = v;
	}
	lg("; rename to d%d/m", db);
	if (mode == M_FLAG && da != db && cow != dircow[db])
		want = EMLINK;
	expect(rename(a, b), want, "rename of a directory");
	at = want ? a : b;
	lg("; remove");
	if (file) {
		snprintf(f, sizeof(f), "%s/d%d/m/x", root, want ? da : db);
		expect(unlink(f), 0, "unlink m/x");
	}
	expect(rmdir(at), 0, "rmdir m");
	if (!want && da != db && rmdir(a) == 0)
		fail("rename of a directory: the old name is still there");
}

/* Special files and symlinks move and link freely, whatever the flags. */
static void op_special(void)
{
	char p[PATH_MAX], q[PATH_MAX], s[PATH_MAX], t[PATH_MAX];
	int da = rnd(nd), db = rnd(nd);
	struct stat st;

	snprintf(p, sizeof(p), "%s/d%d/p", root, da);
	snprintf(q, sizeof(q), "%s/d%d/q", root, db);
	lg("mkfifo d%d/p", da);
	expect(mkfifo(p, 0644), 0, "mkfifo");
	lg("; link to d%d/q", db);
	expect(link(p, q), 0, "link of a fifo");
	if (lstat(q, &st) < 0 || !S_ISFIFO(st.st_mode) || st.st_nlink != 2)
		fail("linked fifo: %s, nlink %lu", ename(errno), (unsigned long)st.st_nlink);
	snprintf(s, sizeof(s), "%s/d%d/s", root, da);
	snprintf(t, sizeof(t), "%s/d%d/s", root, db);
	lg("; symlink d%d/s", da);
	expect(symlink("target", s), 0, "symlink");
	lg("; rename to d%d/s", db);
	expect(rename(s, t), 0, "rename of a symlink");
	lg("; rename d%d/q to d%d/q", db, da);
	snprintf(s, sizeof(s), "%s/d%d/q", root, da);
	expect(rename(q, s), 0, "rename of a fifo");
	lg("; unlink all");
	expect(unlink(t), 0, "unlink symlink");
	expect(unlink(p), 0, "unlink fifo");
	expect(unlink(s), 0, "unlink fifo link");
}

static void remount(enum mode m)
{
	const char *opts = m == M_ALL ? "cow=all" : "cow=flag";

	lg("remount %s", opts);
	expect(mount(NULL, opt_mnt, NULL, MS_REMOUNT, opts), 0, "remount");
	mode = m;
}

/* ---- debug: corrupt the model ---- */

static void corrupt(void)
{
	const char *k = opt_corrupt;
	int n, o = -1;

	for (n = 0; n < nd * NB; n++)
		if (names[n] >= 0) {
			o = names[n];
			break;
		}
	fprintf(stderr, "cowfsx: -F %s: corrupting the model at step %ld\n", k, step);
	if (!strcmp(k, "errno")) {
		corrupt_errno = 1;
		return;
	}
	if (o < 0)
		die("-F: no file left to corrupt");
	if (!strcmp(k, "data")) {
		if (!objs[o].size)
			objs[o].size = 1;
		objs[o].data[0] ^= 1;
	} else if (!strcmp(k, "mode")) {
		objs[o].mode ^= 1;
	} else if (!strcmp(k, "owner")) {
		objs[o].uid ^= 1;
	} else if (!strcmp(k, "nlink")) {
		objs[o].nnames++;
	} else if (!strcmp(k, "ino")) {
		/* pretend a name was broken, or the file has another inode */
		if (objs[o].nnames > 1) {
			int c = alloc_obj();
			unsigned char *d = objs[c].data;

			objs[c] = objs[o];
			objs[c].data = d;
			memcpy(d, objs[o].data, CAP);
			objs[c].nnames = 1;
			objs[c].ino = 0;
			objs[o].nnames--;
			names[n] = c;
		} else {
			objs[o].ino ^= 1;
		}
	} else if (!strcmp(k, "xattr")) {
		objs[o].xset[0] = !objs[o].xset[0];
		objs[o].xlen[0] = 1;
		objs[o].xval[0][0] = 'Z';
	} else if (!strcmp(k, "cow")) {
		if (mode == M_PLAIN)
			mode = M_FLAG;	/* the model now thinks GETCOW works */
		objs[o].cow = !objs[o].cow;
	} else if (!strcmp(k, "name")) {
		drop_name(n);
	} else if (!strcmp(k, "mtime")) {
		objs[o].mtime_known = 1;
		objs[o].mtime.tv_sec = 12345;
		objs[o].mtime.tv_nsec = 0;
	} else {
		die("-F: unknown kind %s", k);
	}
}

/* ---- setup and the run ---- */

static void probe(void)
{
	char p[PATH_MAX], q[PATH_MAX], xn[64];
	struct statfs sfs;
	int fd;

	if (statfs(root, &sfs) < 0)
		die("statfs %s: %s", root, strerror(errno));
	if (mode != M_PLAIN && sfs.f_type != COWLINKFS_SUPER_MAGIC)
		die("%s is not on cowlinkfs (f_type %lx); use -m plain", root,
		    (unsigned long)sfs.f_type);
	if (mode == M_PLAIN && sfs.f_type == COWLINKFS_SUPER_MAGIC)
		die("%s is on cowlinkfs: -m plain is for plain filesystems", root);
	snprintf(p, sizeof(p), "%s/.probe1", root);
	snprintf(q, sizeof(q), "%s/.probe2", root);
	unlink(p);
	unlink(q);
	fd = open(p, O_RDWR | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		die("create %s: %s", p, strerror(errno));
	if (fsetxattr(fd, xname(0, xn), "1", 1, 0) < 0)
		die("%s: setxattr %s: %s (try -x trusted)", root, xn, strerror(errno));
	falloc_ok = fallocate(fd, 0, 0, 4096) == 0;
	if (!falloc_ok && errno != EOPNOTSUPP)
		die("fallocate probe: %s", strerror(errno));
	close(fd);
	fd = open(q, O_RDWR | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		die("create %s: %s", q, strerror(errno));
	close(fd);
	xchg_ok = renameat2(AT_FDCWD, p, AT_FDCWD, q, RENAME_EXCHANGE) == 0;
	if (!xchg_ok && errno != EINVAL)
		die("RENAME_EXCHANGE probe: %s", strerror(errno));
	if (unlink(p) || unlink(q))
		die("unlink probe files: %s", strerror(errno));
	if (mode != M_PLAIN) {
		fd = open(root, O_RDONLY | O_DIRECTORY);
		if (fd < 0 || ioc_getcow(fd, &rootcow) < 0)
			die("GETCOW on %s: %s", root, strerror(errno));
		close(fd);
	}
	if (opt_verbose)
		fprintf(stderr, "cowfsx[%llu]: fallocate %s, RENAME_EXCHANGE %s\n", seed,
			falloc_ok ? "works" : "unsupported", xchg_ok ? "works" : "unsupported");
}

static void setup(void)
{
	char p[PATH_MAX], q[PATH_MAX];
	int d, i, k, nobj;

	nd = 2 + rnd(2);
	for (d = 0; d < nd; d++) {
		int v = d == 0 ? 1 : d == 1 ? 0 : (int)rnd(2);

		dpath(d, p);
		lg("mkdir d%d", d);
		if (mkdir(p, 0755))
			die("mkdir %s: %s (DIR must not have d0, d1, d2)", p, strerror(errno));
		lg(" -> OK");
		dircow[d] = rootcow;
		lg("; setcow d%d %d", d, v);
		expect(ioc_setcow(p, v, 1), mode == M_PLAIN ? ENOTTY : 0, "SETCOW on a directory");
		if (mode != M_PLAIN)
			dircow[d] = v;
		push_log();
	}
	nobj = 5 + rnd(3);
	for (i = 0; i < nobj; i++) {
		int n = pick_free(100), o, fd;
		mode_t m = modes[rnd(4)];
		size_t len = chance(20) ? 0 : 1 + rnd(chance(20) ? 32768 : 4096);

		path_of(n, p);
		lg("create %s %o, %zu bytes", nm(n), (unsigned int)m, len);
		fd = open(p, O_WRONLY | O_CREAT | O_EXCL, m);
		expect(fd, 0, "create");
		o = new_obj(n, m);
		if (len) {
			fill(wbuf, len);
			if (write(fd, wbuf, len) != (ssize_t)len)
				fail("initial write of %s: %s", nm(n), ename(errno));
			m_write(&objs[o], 0, wbuf, len);
		}
		close(fd);
		k = rnd(4);
		while (k--) {
			int b = pick_free_in(objs[o].cow);

			if (b < 0 || count_names() >= nd * NB * 3 / 5)
				break;
			path_of(b, q);
			lg("; link %s", nm(b));
			expect(link(p, q), 0, "link");
			add_name(b, o);
		}
		push_log();
	}
	check_all();
}

static void cleanup(void)
{
	char p[PATH_MAX];
	int n, d;

	for (n = 0; n < nd * NB; n++) {
		if (names[n] < 0)
			continue;
		path_of(n, p);
		if (unlink(p))
			fail("cleanup: unlink %s: %s", nm(n), ename(errno));
	}
	for (d = 0; d < nd; d++) {
		dpath(d, p);
		if (rmdir(p))
			fail("cleanup: rmdir d%d: %s", d, ename(errno));
	}
}

struct opdef {
	const char *name;
	void (*fn)(void);
	int weight;
};

static struct opdef ops[] = {
	{ "open", op_open, 30 },
	{ "truncate", op_truncate, 5 },
	{ "chmod", op_chmod, 5 },
	{ "chown", op_chown, 5 },
	{ "utimes", op_utimes, 4 },
	{ "setxattr", op_setxattr, 5 },
	{ "removexattr", op_removexattr, 2 },
	{ "link", op_link, 12 },
	{ "unlink", op_unlink, 5 },
	{ "rename", op_rename, 9 },
	{ "setcow", op_setcow, 6 },
	{ "dircow", op_dircow, 2 },
	{ "break", op_break, 4 },
	{ "mmap", op_mmap, 3 },
	{ "dirmove", op_dirmove, 2 },
	{ "special", op_special, 1 },
};

#define NOPS (int)(sizeof(ops) / sizeof(ops[0]))

static void one_step(void)
{
	int w[NOPS], total = 0, i, k = count_names(), shared = 0, n;
	unsigned int r;

	for (n = 0; n < nd * NB; n++)
		shared += names[n] >= 0 && objs[names[n]].nnames > 1;

	for (i = 0; i < NOPS; i++) {
		w[i] = excluded(ops[i].name) ? 0 : ops[i].weight;
		/* keep between about a third and three fifths of the pool used */
		if (k < nd * NB / 3 && ops[i].fn == op_unlink && w[i])
			w[i] = 1;
		if (k < nd * NB / 3 && (ops[i].fn == op_link || ops[i].fn == op_open))
			w[i] *= 2;
		if (k > nd * NB * 3 / 5 && ops[i].fn == op_unlink)
			w[i] *= 4;
		/* most names should share their file with others */
		if (shared * 2 < k && ops[i].fn == op_link)
			w[i] *= 3;
		total += w[i];
	}
	if (!total)
		die("-X left no operation");
	r = rnd(total);
	for (i = 0; i < NOPS; i++) {
		if (r < (unsigned int)w[i])
			break;
		r -= w[i];
	}
	ops[i].fn();
}

/* The whole run on @root: setup, @opt_ops steps, each checked, cleanup. */
static void run(void)
{
	enum mode other;
	long half = opt_ops / 2;

	seed_rng(seed);
	mode = opt_mode;
	myuid = geteuid();
	mygid = getegid();
	for (int n = 0; n < NNAMES; n++)
		names[n] = -1;
	for (int o = 0; o < MAXOBJ; o++) {
		objs[o].data = malloc(CAP);
		if (!objs[o].data)
			die("out of memory");
	}
	probe();
	step = 0;
	setup();
	for (step = 1; step <= opt_ops; step++) {
		if (opt_remount && chance(4)) {
			other = mode == M_ALL ? M_FLAG : M_ALL;
			remount(other);
			lg("; ");
		}
		if (opt_corrupt && step == half + 1 && !strcmp(opt_corrupt, "errno"))
			corrupt();
		one_step();
		if (opt_corrupt && step == half + 1 && strcmp(opt_corrupt, "errno"))
			corrupt();
		check_all();
		push_log();
	}
	step = opt_ops;
	if (opt_remount && mode != opt_mode) {
		remount(opt_mode);
		push_log();
	}
	if (!opt_keep)
		cleanup();
	if (opt_verbose) {
		int e;

		fprintf(stderr, "cowfsx[%llu]: results:", seed);
		for (e = 0; e < (int)(sizeof(census) / sizeof(census[0])); e++)
			if (census[e])
				fprintf(stderr, " %s %ld", ename(e), census[e]);
		fprintf(stderr, "\n");
	}
}

static int usage(void)
{
	fprintf(stderr,
		"usage: cowfsx [-m cow|all|plain] [-s SEED] [-n OPS] [-p NPROC] [-x user|trusted]\n"
		"              [-r -M MNT] [-L LOWERDIR] [-X OP,...] [-F KIND] [-k] [-v] DIR\n");
	return 2;
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)f;
	return flag == FTW_DP ? rmdir(p) : unlink(p);
}

int main(int argc, char **argv)
{
	struct { long ops, copies; } *res;
	int c, i, bad = 0;
	long tops = 0, tcopies = 0;

	while ((c = getopt(argc, argv, "m:s:n:p:x:rM:L:X:F:kv")) != -1) {
		switch (c) {
		case 'm':
			if (!strcmp(optarg, "cow") || !strcmp(optarg, "flag"))
				opt_mode = M_FLAG;
			else if (!strcmp(optarg, "all"))
				opt_mode = M_ALL;
			else if (!strcmp(optarg, "plain"))
				opt_mode = M_PLAIN;
			else
				return usage();
			break;
		case 's':
			opt_seed = strtoull(optarg, NULL, 0);
			break;
		case 'n':
			opt_ops = atol(optarg);
			break;
		case 'p':
			opt_nproc = atoi(optarg);
			break;
		case 'x':
			if (strcmp(optarg, "user") && strcmp(optarg, "trusted"))
				return usage();
			opt_ns = optarg;
			break;
		case 'r':
			opt_remount = 1;
			break;
		case 'M':
			opt_mnt = optarg;
			break;
		case 'L':
			opt_lower = optarg;
			break;
		case 'X':
			snprintf(opt_exclude, sizeof(opt_exclude), "%s", optarg);
			break;
		case 'F':
			opt_corrupt = optarg;
			break;
		case 'k':
			opt_keep = 1;
			break;
		case 'v':
			opt_verbose = 1;
			break;
		default:
			return usage();
		}
	}
	if (optind != argc - 1 || opt_ops < 0 || opt_nproc < 0 || opt_nproc > 64)
		return usage();
	if (opt_remount && (!opt_mnt || opt_nproc || opt_mode == M_PLAIN)) {
		fprintf(stderr, "cowfsx: -r needs -M MNT, a cowlinkfs mode and one process\n");
		return 2;
	}
	topdir = argv[optind];
	if (strlen(topdir) > ROOTMAX - 16 || (opt_lower && strlen(opt_lower) > ROOTMAX - 16))
		die("DIR or LOWERDIR is too long");
	umask(0);
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (!opt_nproc) {
		seed = opt_seed;
		snprintf(root, sizeof(root), "%s", topdir);
		if (opt_lower)
			snprintf(lroot, sizeof(lroot), "%s", opt_lower);
		run();
		printf("cowfsx: seed %llu: %ld ops, %ld copies (breaks) seen, OK\n",
		       seed, opt_ops, copies);
		return 0;
	}

	res = mmap(NULL, sizeof(*res) * opt_nproc, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	for (i = 0; i < opt_nproc; i++) {
		char d[ROOTMAX];
		pid_t pid;

		snprintf(d, sizeof(d), "%s/w%d", topdir, i);
		if (mkdir(d, 0755))
			die("mkdir %s: %s", d, strerror(errno));
		fflush(NULL);
		pid = fork();
		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (pid == 0) {
			worker = i;
			seed = opt_seed + i;
			memcpy(root, d, sizeof(root));
			if (opt_lower)
				snprintf(lroot, sizeof(lroot), "%s/w%d", opt_lower, i);
			run();
			res[i].ops = opt_ops;
			res[i].copies = copies;
			if (opt_verbose)
				fprintf(stderr, "cowfsx: worker %d: seed %llu: %ld ops, %ld copies, OK\n",
					i, seed, opt_ops, copies);
			exit(0);
		}
	}
	for (i = 0; i < opt_nproc; i++) {
		int st;
		pid_t pid = wait(&st);

		if (pid < 0)
			die("wait: %s", strerror(errno));
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "cowfsx: a worker (pid %d) failed: %s %d\n", (int)pid,
				WIFEXITED(st) ? "exit" : "signal",
				WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			bad = 1;
		}
	}
	if (bad) {
		fprintf(stderr, "cowfsx: seed %llu (workers %llu..%llu): FAILED\n", opt_seed,
			opt_seed, opt_seed + opt_nproc - 1);
		return 1;
	}
	for (i = 0; i < opt_nproc; i++) {
		char d[PATH_MAX];

		tops += res[i].ops;
		tcopies += res[i].copies;
		snprintf(d, sizeof(d), "%s/w%d", topdir, i);
		if (!opt_keep && nftw(d, rm_entry, 16, FTW_DEPTH | FTW_PHYS))
			die("remove %s: %s", d, strerror(errno));
	}
	printf("cowfsx: seed %llu: %ld ops, %ld copies (breaks) seen, OK\n",
	       opt_seed, tops, tcopies);
	return 0;
}
