// SPDX-License-Identifier: GPL-2.0
/*
 * cowdata: an fsx-style data checker for cow links.
 *
 *   cowdata [-s SEED] [-n OPS] [-S MAXSIZE] [-X OP,OP...] [-P] [-v] DIR
 *
 * DIR is on cowlinkfs.  cowdata flags DIR, makes DIR/f a file of random
 * bytes and gives it a second name, then runs OPS seeded random data
 * operations on f through descriptors opened every way (O_RDONLY, O_WRONLY,
 * O_RDWR, with and without O_APPEND): read, write, pwrite, mmap read and
 * shared mmap write with msync, fallocate (plain and KEEP_SIZE), punch
 * hole, zero range, ftruncate, copy_file_range and clone (FICLONERANGE)
 * from a plain file, fsync.  A shadow buffer holds what f must contain.
 *
 * Every so often the descriptor is closed and f gets another name, a
 * snapshot of its bytes: the next change through a descriptor must break
 * the link (O_RDWR at open, O_WRONLY at the first change), give f a new
 * inode and leave every earlier name its bytes, inode and one link.  A
 * refused call (EBADF, EACCES) changes and copies nothing.  An operation
 * the lower fs lacks (EOPNOTSUPP; EXDEV and EINVAL for clones) must change
 * no byte, may have cost a copy (the rst's limits), and is left out from
 * then on.
 *
 * -P (plain) is the control: DIR on any filesystem, f never gets a second
 * name and no flag is set, so only the shadow of the data is checked.
 *
 * Every read is compared with the shadow, st_size after every operation,
 * and the whole of f and of every other name every 16 operations and at
 * every reopen.  On a difference it prints the seed, the step, the last
 * operations and the first differing offset, and exits 1.  Prints
 * "cowdata: seed S: N ops, K breaks, left out: OPS, OK" and exits 0
 * otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <linux/cowlinkfs.h>

#define NSNAP	3		/* other names kept at once */
#define HIST	12		/* operations shown on a failure */
#define BLK	4096		/* clone alignment: the lowers' block size */

struct snap {
	char name[16];
	ino_t ino;
	size_t size;
	unsigned char *buf;
};

static const char *opnames[] = {
	"read", "write", "pwrite", "mmapread", "mmapwrite", "fallocate",
	"punch", "zero", "ftruncate", "copyrange", "clone", "fsync", "reopen",
};
enum { READ, WRITE, PWRITE, MREAD, MWRITE, FALLOC, PUNCH, ZERO, TRUNC,
       COPYR, CLONE, FSYNC, REOPEN, NOPS };

static unsigned long long seed = 1;
static unsigned long step, nops = 2000, breaks;
static size_t maxsize = 1 << 20;
static int verbose, plain, left_out[NOPS];
static char hist[HIST][96];

static unsigned char *cur, *src, *tmp;
static size_t size, srcsize;
static struct snap snaps[NSNAP];
static int nsnap, nextname;
static int fd = -1, srcfd, acc, append;
static int shared;		/* f shares its inode with the newest snapshot */
static ino_t f_ino;

static uint64_t rng;

static uint64_t rnd64(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static size_t rnd(size_t n)
{
	return n ? rnd64() % n : 0;
}

static void lg(const char *fmt, ...)
{
	va_list ap;
	char *h = hist[step % HIST];

	va_start(ap, fmt);
	vsnprintf(h, sizeof(hist[0]), fmt, ap);
	va_end(ap);
	if (verbose)
		fprintf(stderr, "%lu: %s\n", step, h);
}

static void __attribute__((format(printf, 1, 2), noreturn)) fail(const char *fmt, ...)
{
	unsigned long i = step >= HIST ? step - HIST + 1 : 0;
	va_list ap;

	fprintf(stderr, "cowdata: seed %llu: step %lu: ", seed, step);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\ncowdata: last operations (replay: cowdata -s %llu -n %lu):\n",
		seed, step + 1);
	for (; i <= step; i++)
		fprintf(stderr, "  %lu: %s\n", i, hist[i % HIST]);
	exit(1);
}

static void fill(unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)rnd64() | 1;	/* never a hole's zero */
}

static ino_t ino_of(const char *p)
{
	struct stat st;

	if (stat(p, &st))
		fail("stat %s: %s", p, strerror(errno));
	return st.st_ino;
}

static nlink_t nlink_of(const char *p)
{
	struct stat st;

	if (stat(p, &st))
		fail("stat %s: %s", p, strerror(errno));
	return st.st_nlink;
}

/* compare LEN bytes read from WHAT at OFF with the expected EXP */
static void compare(const unsigned char *got, const unsigned char *exp,
		    size_t len, size_t off, const char *what)
{
	for (size_t i = 0; i < len; i++)
		if (got[i] != exp[i])
			fail("%s: byte %zu is 0x%02x, expected 0x%02x", what,
			     off + i, got[i], exp[i]);
}

/* read all of PATH and compare it with EXP (LEN bytes) */
static void check_file(const char *path, const unsigned char *exp, size_t len)
{
	int rfd = open(path, O_RDONLY);
	struct stat st;
	ssize_t r;

	if (rfd < 0 || fstat(rfd, &st))
		fail("open %s: %s", path, strerror(errno));
	if ((size_t)st.st_size != len)
		fail("%s: st_size %lld, expected %zu", path, (long long)st.st_size, len);
	r = pread(rfd, tmp, len + 1, 0);
	if (r != (ssize_t)len)
		fail("read of all of %s: %zd of %zu bytes", path, r, len);
	compare(tmp, exp, len, 0, path);
	close(rfd);
}

/* who has which inode: f a new one once broken, each snapshot its own */
static void check_names(void)
{
	ino_t now = ino_of("f");

	for (int i = 0; i < nsnap; i++) {
		struct snap *s = &snaps[i];
		int with_f = shared && i == nsnap - 1;

		check_file(s->name, s->buf, s->size);
		if (ino_of(s->name) != s->ino)
			fail("%s changed inode", s->name);
		if (nlink_of(s->name) != (nlink_t)(with_f ? 2 : 1))
			fail("%s has %lu links, expected %d", s->name,
			     (unsigned long)nlink_of(s->name), with_f ? 2 : 1);
		if (!with_f && now == s->ino)
			fail("f still has the inode of %s", s->name);
	}
	if (now != f_ino)
		fail("f has inode %lu, expected %lu", (unsigned long)now,
		     (unsigned long)f_ino);
}

static void check_all(void)
{
	check_file("f", cur, size);
	check_names();
}

static void check_size(void)
{
	struct stat st;

	if (fstat(fd, &st))
		fail("fstat: %s", strerror(errno));
	if ((size_t)st.st_size != size)
		fail("st_size %lld after %s, expected %zu", (long long)st.st_size,
		     hist[step % HIST], size);
}

/*
 * A change through the descriptor succeeded: if f shared its inode, this
 * was the first change and broke the link.  Its fstat follows the copy.
 */
static void changed(void)
{
	struct stat st;

	if (shared) {
		shared = 0;
		breaks++;
		f_ino = ino_of("f");
		if (fstat(fd, &st) || st.st_ino != f_ino)
			fail("the descriptor does not follow f to its copy");
	}
}

/*
 * A call failed.  Refused ones (EBADF, EACCES) must not have copied; an
 * operation the lower fs lacks may have, and is left out from now on.
 */
static void refused(int op, int e, int lacking)
{
	if (lacking) {
		lg("%s: %s, left out from now on", opnames[op], strerrorname_np(e));
		left_out[op] = 1;
		if (shared && ino_of("f") != f_ino) {
			/* the documented wasted copy; the descriptor follows */
			changed();
		}
	} else if (e != EBADF && e != EACCES) {
		fail("%s: %s", hist[step % HIST], strerror(e));
	}
	check_all();
}

static void set_size(size_t n)
{
	if (n > size)
		memset(cur + size, 0, n - size);
	size = n;
}

static void put(size_t off, const unsigned char *p, size_t len)
{
	if (off + len > size)
		set_size(off + len);
	memcpy(cur + off, p, len);
}

static void open_f(void)
{
	static const int modes[] = { O_RDONLY, O_WRONLY, O_RDWR, O_RDWR };
	struct stat st;

	acc = modes[rnd(4)];
	append = acc != O_RDONLY && !rnd(4) ? O_APPEND : 0;
	fd = open("f", acc | append);
	if (fd < 0)
		fail("open f: %s", strerror(errno));
	if (fstat(fd, &st))
		fail("fstat: %s", strerror(errno));
	/* O_RDWR opens break at once, for the sake of shared mmaps */
	if (acc == O_RDWR && shared)
		changed();
	else if (st.st_ino != f_ino)
		fail("open(%s) of f gave inode %lu, expected %lu",
		     acc == O_RDONLY ? "O_RDONLY" : "O_WRONLY",
		     (unsigned long)st.st_ino, (unsigned long)f_ino);
}

/* close f, maybe give it another name, and open it again */
static void op_reopen(void)
{
	close(fd);
	check_all();
	if (!plain && !shared && rnd(3)) {
		struct snap *s;

		if (nsnap == NSNAP) {
			if (unlink(snaps[0].name))
				fail("unlink %s: %s", snaps[0].name, strerror(errno));
			free(snaps[0].buf);
			memmove(snaps, snaps + 1, sizeof(snaps[0]) * --nsnap);
		}
		s = &snaps[nsnap++];
		snprintf(s->name, sizeof(s->name), "g%d", nextname++);
		if (link("f", s->name))
			fail("link f %s: %s", s->name, strerror(errno));
		s->ino = f_ino;
		s->size = size;
		s->buf = malloc(size + 1);
		if (!s->buf)
			fail("out of memory");
		memcpy(s->buf, cur, size);
		shared = 1;
	}
	open_f();
	lg("reopen %s%s%s", acc == O_RDONLY ? "O_RDONLY" : acc == O_WRONLY ?
	   "O_WRONLY" : "O_RDWR", append ? "|O_APPEND" : "",
	   shared ? ", f shares its inode" : "");
	check_all();
}

static void op_read(size_t off, size_t len)
{
	ssize_t r = pread(fd, tmp, len, off);
	size_t want = off >= size ? 0 : off + len > size ? size - off : len;

	if (acc == O_WRONLY) {
		if (r >= 0 || errno != EBADF)
			fail("pread through O_WRONLY: %zd", r);
		return;
	}
	if (r != (ssize_t)want)
		fail("pread %zu@%zu: %zd bytes, expected %zu", len, off, r, want);
	compare(tmp, cur + off, want, off, "pread");
}

static void op_write(int op, size_t off, size_t len)
{
	ssize_t r;

	/* O_APPEND writes at the end, whatever the offset */
	if ((append ? size : off) + len > maxsize)
		len = maxsize - (append ? size : off);
	if (!len)
		return;
	fill(tmp, len);
	if (op == WRITE) {
		if (lseek(fd, off, SEEK_SET) < 0)
			fail("lseek: %s", strerror(errno));
		r = write(fd, tmp, len);
	} else {
		r = pwrite(fd, tmp, len, off);
	}
	if (r < 0) {
		refused(op, errno, 0);
		return;
	}
	if (r != (ssize_t)len)
		fail("wrote %zd of %zu bytes", r, len);
	changed();
	put(append ? size : off, tmp, len);	/* Linux appends even pwrite */
}

static void op_mmap(int op, size_t off, size_t len)
{
	int prot = op == MWRITE ? PROT_READ | PROT_WRITE : PROT_READ;
	unsigned char *p;

	if (!size)
		return;
	if (off + len > size)
		len = size - off;
	p = mmap(NULL, size, prot, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		refused(op, errno, 0);
		return;
	}
	if (op == MREAD) {
		compare(p + off, cur + off, len, off, "mmap read");
	} else {
		changed();
		fill(tmp, len);
		memcpy(p + off, tmp, len);
		if (msync(p, size, MS_SYNC))
			fail("msync: %s", strerror(errno));
		memcpy(cur + off, tmp, len);
	}
	munmap(p, size);
}

static void op_fallocate(int op, size_t off, size_t len)
{
	int mode = op == PUNCH ? FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE :
		   op == ZERO ? FALLOC_FL_ZERO_RANGE : 0;
	size_t end = off + len;

	if (op != PUNCH && rnd(2))
		mode |= FALLOC_FL_KEEP_SIZE;
	if (fallocate(fd, mode, off, len)) {
		int e = errno;

		refused(op, e, e == EOPNOTSUPP);
		return;
	}
	changed();
	if (op != FALLOC)
		memset(cur + off, 0, off >= size ? 0 : end > size ? size - off : len);
	if (!(mode & FALLOC_FL_KEEP_SIZE) && end > size)
		set_size(end);
}

static void op_copy(int op, size_t off, size_t len)
{
	loff_t in = rnd(srcsize), out = off;
	ssize_t r;

	if (op == CLONE) {
		struct file_clone_range fcr = {
			.src_fd = srcfd,
			.src_offset = in / BLK * BLK,
			.dest_offset = off / BLK * BLK,
		};

		fcr.src_length = rnd(3) ? (len / BLK + 1) * BLK : 0;
		if (fcr.src_offset + fcr.src_length > srcsize)
			fcr.src_length = 0;	/* to the end of the source */
		if (ioctl(fd, FICLONERANGE, &fcr)) {
			int e = errno;

			refused(op, e, e == EOPNOTSUPP || e == EXDEV ||
				e == EINVAL);
			return;
		}
		changed();
		len = fcr.src_length ? fcr.src_length : srcsize - fcr.src_offset;
		put(fcr.dest_offset, src + fcr.src_offset, len);
		return;
	}
	r = copy_file_range(srcfd, &in, fd, &out, len, 0);
	if (r < 0) {
		int e = errno;

		refused(op, e, e == EOPNOTSUPP || e == EXDEV);
		return;
	}
	if (r) {
		changed();
		put(off, src + in - r, r);
	} else if (shared && ino_of("f") != f_ino) {
		changed();	/* a copy for nothing: allowed, not required */
	}
}

static void op_ftruncate(size_t len)
{
	if (ftruncate(fd, len)) {
		/* ftruncate of a read-only descriptor is EINVAL */
		refused(TRUNC, errno == EINVAL && acc == O_RDONLY ?
			EBADF : errno, 0);
		return;
	}
	changed();
	set_size(len);
}

static void one_step(void)
{
	int op;
	size_t off, len;

	do
		op = rnd(NOPS);
	while (left_out[op]);
	len = 1 + rnd(rnd(4) ? 4096 : 65536);
	off = rnd(size + 1 < maxsize / 2 ? size + 1 + size / 4 : maxsize / 2);
	if (op != READ && op != MREAD && off + len > maxsize)
		len = maxsize - off;
	lg("%s %zu@%zu", opnames[op], len, off);
	switch (op) {
	case READ: op_read(off, len); break;
	case WRITE: case PWRITE: op_write(op, off, len); break;
	case MREAD: case MWRITE: op_mmap(op, off < size ? off : 0, len); break;
	case FALLOC: case PUNCH: case ZERO: op_fallocate(op, off, len); break;
	case TRUNC: op_ftruncate(rnd(4) ? off : rnd(size + 1)); break;
	case COPYR: case CLONE: op_copy(op, off, len); break;
	case FSYNC:
		if ((rnd(2) ? fsync(fd) : fdatasync(fd)))
			fail("fsync: %s", strerror(errno));
		break;
	case REOPEN: op_reopen(); break;
	}
	check_size();
	if (step % 16 == 15)
		check_all();
}

static void setup(void)
{
	int on = 1, dfd = open(".", O_RDONLY | O_DIRECTORY);

	if (dfd < 0 || (!plain && ioctl(dfd, COWLINKFS_IOC_SETCOW, &on)))
		fail("set the flag on the directory: %s", strerror(errno));
	close(dfd);
	cur = malloc(maxsize + 1);
	tmp = malloc(maxsize + 65536 + 1);
	src = malloc(maxsize);
	if (!cur || !tmp || !src)
		fail("out of memory");

	srcsize = maxsize / 2;
	fill(src, srcsize);
	srcfd = open("src", O_RDWR | O_CREAT | O_EXCL, 0644);
	if (srcfd < 0 || pwrite(srcfd, src, srcsize, 0) != (ssize_t)srcsize)
		fail("make src: %s", strerror(errno));

	fd = open("f", O_RDWR | O_CREAT | O_EXCL, 0644);
	size = rnd(maxsize / 2);
	fill(cur, size);
	if (fd < 0 || pwrite(fd, cur, size, 0) != (ssize_t)size)
		fail("make f: %s", strerror(errno));
	f_ino = ino_of("f");
	/* the first reopen gives f its first second name */
	op_reopen();
	while (!plain && !shared)
		op_reopen();
}

static int usage(void)
{
	fprintf(stderr, "usage: cowdata [-s SEED] [-n OPS] [-S MAXSIZE] [-X OP,...] [-P] [-v] DIR\n");
	return 2;
}

int main(int argc, char **argv)
{
	char *tok;
	int c;

	while ((c = getopt(argc, argv, "s:n:S:X:Pv")) != -1) {
		switch (c) {
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'n': nops = strtoul(optarg, NULL, 0); break;
		case 'S': maxsize = strtoul(optarg, NULL, 0); break;
		case 'v': verbose = 1; break;
		case 'P': plain = 1; break;
		case 'X':
			for (tok = strtok(optarg, ","); tok; tok = strtok(NULL, ",")) {
				int i;

				for (i = 0; i < NOPS && strcmp(tok, opnames[i]); i++)
					;
				if (i == NOPS || i == REOPEN)
					return usage();
				left_out[i] = 1;
			}
			break;
		default: return usage();
		}
	}
	if (optind != argc - 1 || maxsize < 2 * BLK || chdir(argv[optind]))
		return usage();
	rng = seed * 0x9e3779b97f4a7c15ULL + 1;
	setup();
	for (step = 0; step < nops; step++)
		one_step();
	close(fd);
	check_all();
	printf("cowdata: seed %llu: %lu ops, %lu breaks, left out:", seed, nops,
	       breaks);
	for (c = 0; c < NOPS; c++)
		if (left_out[c])
			printf(" %s", opnames[c]);
	printf(", OK\n");
	return 0;
}
