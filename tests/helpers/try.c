// SPDX-License-Identifier: GPL-2.0
/*
 * try: run one system call and print what it returned, so that shell tests
 * can assert exact errno values.  Prints "OK" (and a value where there is
 * one) or the errno name, e.g. "EMLINK"; exits 0 either way, 2 on misuse.
 *
 *   try open PATH FLAGS        FLAGS: r w rw, plus a(ppend) t(runc) c(reat) x(cl)
 *                              n(onblock)
 *   try write PATH OFF STRING  pwrite through O_WRONLY
 *   try append PATH STRING     write through O_WRONLY|O_APPEND
 *   try read PATH OFF LEN      pread, prints the bytes
 *   try truncate PATH LEN
 *   try link OLD NEW | rename OLD NEW [noreplace|exchange|whiteout]
 *   try unlink PATH | rmdir PATH | mkdir PATH | mkfifo PATH | symlink T PATH
 *   try chmod PATH OCTAL | chown PATH UID GID | utime PATH SECONDS
 *   try getcow PATH | setcow PATH 0|1
 *   try mmapwrite PATH OFF STRING | mmapread PATH OFF LEN
 *   try flock PATH | posixlock PATH | hold PATH SECONDS (flock + fcntl lock)
 *   try setxattr PATH NAME VALUE [create|replace] | getxattr PATH NAME
 *   try listxattr PATH | removexattr PATH NAME
 *   try fdchmod FD OCTAL | fdsetxattr FD NAME VALUE | fdsetflags FD HEX
 *   try fdsetversion FD N      FS_IOC_SETVERSION, a write ioctl
 *                              (each through an inherited descriptor FD)
 *   try listxattr_sized PATH SIZE  listxattr with a buffer of SIZE bytes,
 *                              prints the names, one a line (SIZE 0: the size)
 *   try listxattr_size PATH    prints what listxattr(PATH, NULL, 0) returns
 *   try getflags PATH | setflags PATH HEX
 *   try fallocate PATH OFF LEN | copyrange SRC DST LEN | clone SRC DST
 *   try splice PATH STRING [nonblock | eof | fault]  STRING into a
 *                              pipe, then splice(2) from it to PATH
 *                              (O_WRONLY) at offset 0 (a byte count of
 *                              4096); nonblock: with SPLICE_F_NONBLOCK,
 *                              eof: the pipe's writer closed first, fault:
 *                              as eof after a write(2) from a bad address,
 *                              which leaves an empty buffer in the pipe
 *   try statfs PATH            prints f_type in hex
 *   try extsize PATH [BYTES]   FS_IOC_FSSETXATTR with BYTES as the extent
 *                              size hint (and FS_XFLAG_EXTSIZE), then
 *                              prints the hint FS_IOC_FSGETXATTR gives
 *   try fifo READPATH WRITEPATH  a reader on READPATH and a writer on
 *                              WRITEPATH of one FIFO, step by step: a
 *                              non-blocking writer alone, a non-blocking
 *                              reader alone and then with a writer,
 *                              O_NONBLOCK cleared by F_SETFL (a read
 *                              that blocks, ended by SIGALRM), SIGIO to
 *                              the F_SETOWN owner, FIONREAD, poll, the
 *                              bytes, packet mode set by F_SETFL
 *                              (O_DIRECT), POLLHUP and EOF, EPIPE, an
 *                              O_ASYNC reader closed before a write; one
 *                              line of "step=result".  A second line has
 *                              what only a pipe takes: F_GETPIPE_SZ, and
 *                              splice(2) into the writer
 *   try holdwrite PATH SECONDS keep PATH open for writing
 *   try mount SRC DST [OPTIONS] | umount DST   mount(2) -t cowlinkfs
 *   try mmaphold PATH SECONDS STRING  map PATH MAP_SHARED|PROT_WRITE, close
 *                              the fd, print OK, sleep SECONDS, then write
 *                              STRING at offset 0 through the mapping
 *   try failnth PATH STRING N  append STRING through O_WRONLY|O_APPEND with
 *                              the N-th fault-injection point of the write
 *                              failing (/proc/thread-self/fail-nth); prints
 *                              the result and "injected" or "not-reached"
 *   try remount DST OPTIONS    mount(2) MS_REMOUNT with OPTIONS as data
 *   try fspick DST CMD KEY=VAL fspick(2) the mount at DST, run the shell
 *                              command CMD, then fsconfig(2) KEY=VAL and
 *                              reconfigure
 *   try setfl_append PATH      O_WRONLY: write "aaaa", F_SETFL |O_APPEND,
 *                              lseek to 0, write "b" (PATH exists, empty)
 *   try clearfl_append PATH    O_WRONLY|O_APPEND: write "aaaa", F_SETFL
 *                              without O_APPEND, lseek to 0, write "b"
 *   try rwf_append PATH        O_WRONLY: pwrite "aaaa" at 0, then pwritev2
 *                              "b" at offset 0 with RWF_APPEND
 *   try fdino PATH FLAGS STRING  st_ino of the fd after open and after a
 *                               write of STRING at offset 0: "INO1 INO2"
 *   try idmapmount SRC DST     bind SRC on DST as an idmapped mount (ids 0
 *                              of a new user namespace map to 1000)
 *   try tmpfile DIR NAME STRING [excl | run CMD]  open(DIR,
 *                              O_TMPFILE|O_RDWR[|O_EXCL]), write STRING,
 *                              linkat() it as NAME through /proc/self/fd,
 *                              run the shell command CMD with the file
 *                              still open, write STRING again; prints OK
 *                              or the errno of the step that failed
 *   try tmpfilerace DIR N      N times: an O_TMPFILE file in DIR written
 *                              by a child process while linkat() names
 *                              it; prints OK, or the first name whose
 *                              bytes are not the child's
 *   try fdreport FD DST        what the inherited descriptor FD says and
 *                              reads: "INO SIZE BLOCKS READ COPIED SENT":
 *                              fstat(FD), the bytes pread() gives from 0,
 *                              copy_file_range() from 0 into DST (made
 *                              anew) and sendfile() from 0 to /dev/null
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/time.h>
#include <sys/mman.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <linux/fs.h>
#include <time.h>
#include <linux/cowlinkfs.h>

static int res(long r)
{
	if (r < 0) {
		const char *name = strerrorname_np(errno);

		printf("%s\n", name ? name : "EUNKNOWN");
	} else {
		printf("OK\n");
	}
	return 0;
}

static int open_flags(const char *s)
{
	int fl = 0;

	if (!strncmp(s, "rw", 2))
		fl = O_RDWR;
	else if (s[0] == 'w')
		fl = O_WRONLY;
	else
		fl = O_RDONLY;
	if (strchr(s, 'a'))
		fl |= O_APPEND;
	if (strchr(s, 't'))
		fl |= O_TRUNC;
	if (strchr(s, 'c'))
		fl |= O_CREAT;
	if (strchr(s, 'x'))
		fl |= O_EXCL;
	if (strchr(s, 'n'))
		fl |= O_NONBLOCK;
	return fl;
}

static int usage(void)
{
	fprintf(stderr, "try: bad arguments (see the source for usage)\n");
	return 2;
}

static int do_mmap(char **a, int write)
{
	long off = atol(a[1]);
	size_t len = write ? strlen(a[2]) : (size_t)atol(a[2]);
	int fd = open(a[0], write ? O_RDWR : O_RDONLY);
	char *p;

	if (fd < 0)
		return res(-1);
	p = mmap(NULL, off + len, write ? PROT_READ | PROT_WRITE : PROT_READ,
		 MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return res(-1);
	if (write) {
		memcpy(p + off, a[2], len);
		if (msync(p, off + len, MS_SYNC))
			return res(-1);
		printf("OK\n");
	} else {
		printf("%.*s\n", (int)len, p + off);
	}
	munmap(p, off + len);
	close(fd);
	return 0;
}

/* write all of @s at the file position; a short write counts as EIO */
static int put(int fd, const char *s)
{
	ssize_t r = write(fd, s, strlen(s));

	if (r >= 0 && (size_t)r != strlen(s)) {
		errno = EIO;
		r = -1;
	}
	return r < 0 ? -1 : 0;
}

/*
 * setfl_append (@set) and clearfl_append: write "aaaa", turn O_APPEND on
 * (or off) with F_SETFL, seek to 0 and write "b": "aaaab" with O_APPEND in
 * force for the second write, "baaa" without.
 */
static int do_setfl(const char *path, int set)
{
	int fd = open(path, set ? O_WRONLY : O_WRONLY | O_APPEND);
	int fl;

	if (fd < 0)
		return res(fd);
	if (put(fd, "aaaa"))
		return res(-1);
	fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return res(fl);
	fl = set ? fl | O_APPEND : fl & ~O_APPEND;
	if (fcntl(fd, F_SETFL, fl) < 0 || lseek(fd, 0, SEEK_SET) < 0 ||
	    put(fd, "b"))
		return res(-1);
	return res(close(fd));
}

/* Arm fail-nth for the calling thread: 0 disarms it. */
static int set_fail_nth(const char *nth)
{
	int fd = open("/proc/thread-self/fail-nth", O_RDWR);
	int ok;

	if (fd < 0)
		return -1;
	ok = write(fd, nth, strlen(nth)) == (ssize_t)strlen(nth);
	close(fd);
	return ok ? 0 : -1;
}

/*
 * The N-th call of should_fail() in this thread during one write(2) fails.
 * Everything else (the open, reading the result) runs disarmed.
 */
static int do_failnth(char **a)
{
	char left[32] = "";
	int fd, nfd, err = 0;
	ssize_t r;

	fd = open(a[0], O_WRONLY | O_APPEND);
	nfd = open("/proc/thread-self/fail-nth", O_RDWR);
	if (fd < 0 || nfd < 0)
		return res(-1);
	if (write(nfd, a[2], strlen(a[2])) != (ssize_t)strlen(a[2]))
		return res(-1);
	r = write(fd, a[1], strlen(a[1]));
	if (r < 0)
		err = errno;
	/* What is left of the count: 0 once the N-th point was reached. */
	if (pread(nfd, left, sizeof(left) - 1, 0) < 0)
		return res(-1);
	close(nfd);
	set_fail_nth("0");
	close(fd);
	errno = err;
	res(r < 0 ? -1 : 0);
	printf("%s\n", atoi(left) == 0 ? "injected" : "not-reached");
	return 0;
}

static int op_open(char **a)
{
	int fd;

	fd = open(a[0], open_flags(a[1]), 0644);
	if (fd >= 0)
		close(fd);
	return res(fd);
}

static int op_write(char **a)
{
	long r;
	int fd;

	fd = open(a[0], O_WRONLY);
	if (fd < 0)
		return res(fd);
	r = pwrite(fd, a[2], strlen(a[2]), atol(a[1]));
	close(fd);
	return res(r);
}

static int op_append(char **a)
{
	long r;
	int fd;

	fd = open(a[0], O_WRONLY | O_APPEND);
	if (fd < 0)
		return res(fd);
	r = write(fd, a[1], strlen(a[1]));
	close(fd);
	return res(r);
}

static int op_read(char **a)
{
	size_t len = atol(a[2]);
	char buf[65536];
	long r;
	int fd;

	fd = open(a[0], O_RDONLY);
	if (fd < 0 || len > sizeof(buf))
		return res(-1);
	r = pread(fd, buf, len, atol(a[1]));
	close(fd);
	if (r < 0)
		return res(r);
	printf("%.*s\n", (int)r, buf);
	return 0;
}

static int op_truncate(char **a)
{
	return res(truncate(a[0], atol(a[1])));
}

static int op_link(char **a)
{
	return res(link(a[0], a[1]));
}

static int op_rename(char **a)
{
	unsigned int fl = 0;

	if (a[2] && !strcmp(a[2], "noreplace"))
		fl = RENAME_NOREPLACE;
	else if (a[2] && !strcmp(a[2], "exchange"))
		fl = RENAME_EXCHANGE;
	else if (a[2] && !strcmp(a[2], "whiteout"))
		fl = RENAME_WHITEOUT;
	return res(renameat2(AT_FDCWD, a[0], AT_FDCWD, a[1], fl));
}

static int op_unlink(char **a)
{
	return res(unlink(a[0]));
}

static int op_rmdir(char **a)
{
	return res(rmdir(a[0]));
}

static int op_mkdir(char **a)
{
	return res(mkdir(a[0], 0755));
}

static int op_mkfifo(char **a)
{
	return res(mkfifo(a[0], 0644));
}

static int op_symlink(char **a)
{
	return res(symlink(a[0], a[1]));
}

static int op_chmod(char **a)
{
	return res(chmod(a[0], strtol(a[1], NULL, 8)));
}

static int op_chown(char **a)
{
	return res(chown(a[0], atoi(a[1]), atoi(a[2])));
}

static int op_utime(char **a)
{
	struct timespec ts[2] = { { atol(a[1]), 0 }, { atol(a[1]), 0 } };

	return res(utimensat(AT_FDCWD, a[0], ts, 0));
}

static int op_getcow(char **a)
{
	long r;
	int fd, v;

	fd = open(a[0], O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		return res(fd);
	r = ioctl(fd, COWLINKFS_IOC_GETCOW, &v);
	close(fd);
	if (r < 0)
		return res(r);
	printf("%d\n", v);
	return 0;
}

static int op_setcow(char **a)
{
	long r;
	int fd, v;

	v = atoi(a[1]);
	fd = open(a[0], O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		return res(fd);
	r = ioctl(fd, COWLINKFS_IOC_SETCOW, &v);
	close(fd);
	return res(r);
}

static int op_mmapwrite(char **a)
{
	return do_mmap(a, 1);
}

static int op_mmapread(char **a)
{
	return do_mmap(a, 0);
}

static int op_flock(char **a)
{
	int fd;

	fd = open(a[0], O_RDONLY);
	if (fd < 0)
		return res(fd);
	return res(flock(fd, LOCK_EX | LOCK_NB));
}

static int op_posixlock(char **a)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int fd;

	fd = open(a[0], O_RDWR);
	if (fd < 0)
		return res(fd);
	return res(fcntl(fd, F_SETLK, &fl));
}

static int op_hold(char **a)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int fd;

	fd = open(a[0], O_RDWR);
	if (fd < 0 || flock(fd, LOCK_EX) || fcntl(fd, F_SETLK, &fl))
		return res(-1);
	printf("OK\n");
	fflush(stdout);
	sleep(atoi(a[1]));
	return 0;
}

static int op_holdwrite(char **a)
{
	int fd;

	fd = open(a[0], O_WRONLY);
	if (fd < 0)
		return res(fd);
	printf("OK\n");
	fflush(stdout);
	sleep(atoi(a[1]));
	return 0;
}

static int op_setxattr(char **a)
{
	int fl = 0;

	if (a[3] && !strcmp(a[3], "create"))
		fl = XATTR_CREATE;
	else if (a[3] && !strcmp(a[3], "replace"))
		fl = XATTR_REPLACE;
	else if (a[3])
		return usage();
	return res(setxattr(a[0], a[1], a[2], strlen(a[2]), fl));
}

/*
 * The fd calls, through a descriptor the shell opened before (try fdchmod
 * 3 600 after exec 3<FILE): each has no path to walk again, unlike its
 * path variant.
 */
static int op_fdchmod(char **a)
{
	return res(fchmod(atoi(a[0]), strtol(a[1], NULL, 8)));
}

static int op_fdsetxattr(char **a)
{
	return res(fsetxattr(atoi(a[0]), a[1], a[2], strlen(a[2]), 0));
}

static int op_fdsetflags(char **a)
{
	int v = strtol(a[1], NULL, 16);

	return res(ioctl(atoi(a[0]), FS_IOC_SETFLAGS, &v));
}

/* An ioctl that writes, passed on to the lower file (ext4 knows it). */
static int op_fdsetversion(char **a)
{
	int v = atoi(a[1]);

	return res(ioctl(atoi(a[0]), FS_IOC_SETVERSION, &v));
}

static int op_getxattr(char **a)
{
	char buf[65536];
	long r;

	r = getxattr(a[0], a[1], buf, sizeof(buf));
	if (r < 0)
		return res(r);
	printf("%.*s\n", (int)r, buf);
	return 0;
}

static int op_removexattr(char **a)
{
	return res(removexattr(a[0], a[1]));
}

static int op_listxattr(char **a)
{
	char *s;
	char buf[65536];
	long r;

	r = listxattr(a[0], buf, sizeof(buf));
	if (r < 0)
		return res(r);
	for (s = buf; s < buf + r; s += strlen(s) + 1)
		printf("%s\n", s);
	return 0;
}

static int op_listxattr_sized(char **a)
{
	size_t size = atol(a[1]);
	char *s;
	char buf[65536];
	long r;

	if (size > sizeof(buf))
		return usage();
	/* Whatever the kernel must not touch past SIZE stays marked. */
	memset(buf, 0x5a, sizeof(buf));
	r = listxattr(a[0], size ? buf : NULL, size);
	if (r < 0)
		return res(r);
	if (!size) {
		printf("%ld\n", r);
		return 0;
	}
	if ((size_t)r > size || (r && buf[r - 1]) ||
	    ((size_t)r < sizeof(buf) && buf[r] != 0x5a)) {
		printf("BAD LIST: %ld bytes for a buffer of %zu\n", r, size);
		return 0;
	}
	for (s = buf; s < buf + r; s += strlen(s) + 1)
		printf("%s\n", s);
	return 0;
}

static int op_listxattr_size(char **a)
{
	long r;

	r = listxattr(a[0], NULL, 0);
	if (r < 0)
		return res(r);
	printf("%ld\n", r);
	return 0;
}

static int op_getflags(char **a)
{
	long r;
	int fd, v;

	fd = open(a[0], O_RDONLY);
	if (fd < 0)
		return res(fd);
	r = ioctl(fd, FS_IOC_GETFLAGS, &v);
	close(fd);
	if (r < 0)
		return res(r);
	printf("%x\n", v);
	return 0;
}

static int op_setflags(char **a)
{
	long r;
	int fd, v;

	v = strtol(a[1], NULL, 16);
	fd = open(a[0], O_RDONLY);
	if (fd < 0)
		return res(fd);
	r = ioctl(fd, FS_IOC_SETFLAGS, &v);
	close(fd);
	return res(r);
}

static int op_fallocate(char **a)
{
	long r;
	int fd;

	fd = open(a[0], O_WRONLY);
	if (fd < 0)
		return res(fd);
	r = fallocate(fd, 0, atol(a[1]), atol(a[2]));
	close(fd);
	return res(r);
}

static int op_copyrange(char **a)
{
	long r;
	int fd, fd2;

	fd = open(a[0], O_RDONLY);
	fd2 = open(a[1], O_WRONLY | O_CREAT, 0644);
	if (fd < 0 || fd2 < 0)
		return res(-1);
	r = copy_file_range(fd, NULL, fd2, NULL, atol(a[2]), 0);
	return res(r);
}

static int op_clone(char **a)
{
	int fd, fd2;

	fd = open(a[0], O_RDONLY);
	fd2 = open(a[1], O_WRONLY | O_CREAT, 0644);
	if (fd < 0 || fd2 < 0)
		return res(-1);
	return res(ioctl(fd2, FICLONE, fd));
}

static int op_splice(char **a)
{
	const char *how = a[2] ? a[2] : "";
	size_t len = strlen(a[1]);
	loff_t off = 0;
	int p[2], fd;

	fd = open(a[0], O_WRONLY);
	if (fd < 0 || pipe(p) || write(p[1], a[1], len) != (ssize_t)len)
		return res(-1);
	/* The pipe keeps the buffer it made for the bytes it could not copy. */
	if (!strcmp(how, "fault") &&
	    write(p[1], mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			     -1, 0), 16) != -1)
		return printf("NOFAULT\n"), 0;
	if (!strcmp(how, "eof") || !strcmp(how, "fault"))
		close(p[1]);
	return res(splice(p[0], NULL, fd, &off, 4096,
			  !strcmp(how, "nonblock") ? SPLICE_F_NONBLOCK : 0));
}

static int op_extsize(char **a)
{
	struct fsxattr fsx;
	int fd = open(a[0], O_RDONLY);

	if (fd < 0 || ioctl(fd, FS_IOC_FSGETXATTR, &fsx))
		return res(-1);
	if (a[1]) {
		fsx.fsx_extsize = atoi(a[1]);
		fsx.fsx_xflags |= FS_XFLAG_EXTSIZE;
		if (ioctl(fd, FS_IOC_FSSETXATTR, &fsx) ||
		    ioctl(fd, FS_IOC_FSGETXATTR, &fsx))
			return res(-1);
	}
	printf("%u\n", fsx.fsx_extsize);
	return 0;
}

static volatile sig_atomic_t fifo_sigio;

static void fifo_signal(int sig)
{
	if (sig == SIGIO)
		fifo_sigio = 1;
}

/* Print "STEP=" and what R (a count, or -1 with errno) says. */
static void fifo_step(const char *step, long r)
{
	const char *name = r < 0 ? strerrorname_np(errno) : NULL;

	if (r < 0)
		printf(" %s=%s", step, name ? name : "EUNKNOWN");
	else
		printf(" %s=%ld", step, r);
}

static int op_fifo(char **a)
{
	struct sigaction sa = { .sa_handler = fifo_signal };
	struct itimerval tick = { { 0, 200000 }, { 0, 200000 } };
	struct pollfd pfd = { .events = POLLIN };
	char buf[64];
	int r, w, n, p[2];

	sigaction(SIGIO, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);	/* no SA_RESTART: EINTR */
	signal(SIGPIPE, SIG_IGN);
	printf("fifo:");
	fifo_step("nbwriter-alone", open(a[1], O_WRONLY | O_NONBLOCK));
	r = open(a[0], O_RDONLY | O_NONBLOCK);
	if (r < 0)
		return res(-1);
	fifo_step("read-no-writer", read(r, buf, sizeof(buf)));
	/* A reader below that a writer here never meets: EINTR, no hang. */
	setitimer(ITIMER_REAL, &tick, NULL);
	w = open(a[1], O_WRONLY);
	setitimer(ITIMER_REAL, &(struct itimerval){ 0 }, NULL);
	if (w < 0)
		return res(-1);
	fifo_step("read-empty", read(r, buf, sizeof(buf)));
	fifo_step("clear-nonblock", fcntl(r, F_SETFL, 0));
	/* Again and again: one that came before the read would not end it. */
	setitimer(ITIMER_REAL, &tick, NULL);
	fifo_step("read-blocks", read(r, buf, sizeof(buf)));
	setitimer(ITIMER_REAL, &(struct itimerval){ 0 }, NULL);
	fifo_step("setown", fcntl(r, F_SETOWN, getpid()));
	fifo_step("async", fcntl(r, F_SETFL, O_ASYNC | O_NONBLOCK));
	fifo_step("write", write(w, "hello", 5));
	fifo_step("sigio", fifo_sigio);
	fifo_step("fionread", ioctl(r, FIONREAD, &n) ? -1 : n);
	pfd.fd = r;
	fifo_step("poll", poll(&pfd, 1, 0) < 0 ? -1 : pfd.revents);
	n = read(r, buf, sizeof(buf));
	fifo_step("read", n);
	printf(" bytes=%.*s", n > 0 ? n : 0, buf);
	fifo_step("packet-mode", fcntl(w, F_SETFL, O_DIRECT));
	if (write(w, "abc", 3) != 3 || write(w, "de", 2) != 2)
		return res(-1);
	fifo_step("read-packet", read(r, buf, sizeof(buf)));
	fifo_step("read-packet", read(r, buf, sizeof(buf)));
	close(w);
	fifo_step("poll-closed", poll(&pfd, 1, 0) < 0 ? -1 : pfd.revents);
	fifo_step("read-closed", read(r, buf, sizeof(buf)));
	w = open(a[1], O_WRONLY | O_NONBLOCK);
	close(r);
	fifo_step("write-no-reader", write(w, "x", 1));
	close(w);
	/*
	 * An O_ASYNC reader closed while another reader and a writer stay:
	 * the write and the last writer's close signal the pipe's readers,
	 * the one closed no longer among them.
	 */
	r = open(a[0], O_RDONLY | O_NONBLOCK);
	n = open(a[1], O_RDONLY | O_NONBLOCK);
	w = open(a[1], O_WRONLY | O_NONBLOCK);
	if (r < 0 || n < 0 || w < 0 || fcntl(r, F_SETOWN, getpid()) ||
	    fcntl(r, F_SETFL, O_ASYNC | O_NONBLOCK))
		return res(-1);
	close(r);
	fifo_sigio = 0;
	fifo_step("write-after-async-close", write(w, "z", 1));
	close(w);
	fifo_step("sigio-after-close", fifo_sigio);
	fifo_step("other-reader", read(n, buf, sizeof(buf)));
	close(n);
	printf("\npipe-only:");
	r = open(a[0], O_RDONLY | O_NONBLOCK);
	w = open(a[1], O_WRONLY | O_NONBLOCK);
	if (r < 0 || w < 0 || pipe(p) || write(p[1], "spl", 3) != 3)
		return res(-1);
	fifo_step("getpipe-sz", fcntl(w, F_GETPIPE_SZ));
	fifo_step("splice-in", splice(p[0], NULL, w, NULL, 3, 0));
	printf("\n");
	return 0;
}

static int op_statfs(char **a)
{
	struct statfs st;

	if (statfs(a[0], &st) < 0)
		return res(-1);
	printf("%lx\n", (unsigned long)st.f_type);
	return 0;
}

static int op_fdino(char **a)
{
	struct stat st1, st2;
	int fd;

	fd = open(a[0], open_flags(a[1]));
	if (fd < 0 || fstat(fd, &st1))
		return res(-1);
	if (pwrite(fd, a[2], strlen(a[2]), 0) < 0 || fstat(fd, &st2))
		return res(-1);
	close(fd);
	printf("%lu %lu\n", (unsigned long)st1.st_ino,
	       (unsigned long)st2.st_ino);
	return 0;
}

static int op_tmpfile(char **a)
{
	int fl = O_TMPFILE | O_RDWR | (a[3] && !strcmp(a[3], "excl") ? O_EXCL : 0);
	size_t len = strlen(a[2]);
	char proc[64];
	int fd;

	fd = open(a[0], fl, 0644);
	if (fd < 0 || write(fd, a[2], len) != (ssize_t)len)
		return res(-1);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, AT_FDCWD, a[1], AT_SYMLINK_FOLLOW))
		return res(-1);
	if (a[3] && !strcmp(a[3], "run") && a[4]) {
		fflush(stdout);
		if (system(a[4]) != 0)
			return printf("CMDFAILED\n"), 0;
	}
	if (write(fd, a[2], len) != (ssize_t)len)
		return res(-1);
	return res(close(fd));
}

static int op_tmpfilerace(char **a)
{
	int i, n = atoi(a[1]), fd;
	char proc[64], name[4096], buf[8];
	ssize_t got;
	pid_t pid;

	for (i = 0; i < n; i++) {
		fd = open(a[0], O_TMPFILE | O_RDWR, 0644);
		if (fd < 0)
			return res(-1);
		pid = fork();
		if (pid < 0)
			return res(-1);
		if (!pid)
			_exit(write(fd, "X", 1) == 1 ? 0 : 1);
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		snprintf(name, sizeof(name), "%s/race%d", a[0], i);
		if (linkat(AT_FDCWD, proc, AT_FDCWD, name, AT_SYMLINK_FOLLOW))
			return res(-1);
		waitpid(pid, NULL, 0);
		close(fd);
		fd = open(name, O_RDONLY);
		got = fd < 0 ? -1 : read(fd, buf, sizeof(buf));
		if (fd >= 0)
			close(fd);
		if (got != 1 || buf[0] != 'X')
			return printf("BAD %s %zd\n", name, got), 0;
		unlink(name);
	}
	return res(0);
}

static int op_fdreport(char **a)
{
	long long rd = 0, cp = 0, sn = 0;
	static char buf[65536];
	loff_t in = 0;
	off_t pos = 0;
	struct stat st;
	int fd = atoi(a[0]), out, nul;
	ssize_t n;

	if (fstat(fd, &st))
		return res(-1);
	while ((n = pread(fd, buf, sizeof(buf), rd)) > 0)
		rd += n;
	if (n < 0)
		return res(-1);
	out = open(a[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out < 0)
		return res(-1);
	while ((n = copy_file_range(fd, &in, out, NULL, 1 << 20, 0)) > 0)
		cp += n;
	close(out);
	if (n < 0)
		return res(-1);
	nul = open("/dev/null", O_WRONLY);
	if (nul < 0)
		return res(-1);
	while ((n = sendfile(nul, fd, &pos, 1 << 20)) > 0)
		sn += n;
	close(nul);
	if (n < 0)
		return res(-1);
	printf("%lu %lld %lld %lld %lld %lld\n", (unsigned long)st.st_ino,
	       (long long)st.st_size, (long long)st.st_blocks, rd, cp, sn);
	return 0;
}

static int op_mount(char **a)
{
	return res(mount(a[0], a[1], "cowlinkfs", 0, a[2]));
}

static int op_umount(char **a)
{
	return res(umount(a[0]));
}

static int op_mmaphold(char **a)
{
	size_t len = strlen(a[2]);
	char *p;
	int fd;

	fd = open(a[0], O_RDWR);
	if (fd < 0)
		return res(fd);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return res(-1);
	close(fd);		/* only the mapping holds the file now */
	printf("OK\n");
	fflush(stdout);
	sleep(atoi(a[1]));
	memcpy(p, a[2], len);
	return res(msync(p, len, MS_SYNC));
}

static int op_failnth(char **a)
{
	return do_failnth(a);
}

static int op_remount(char **a)
{
	return res(mount("none", a[0], NULL, MS_REMOUNT, a[1]));
}

static int op_fspick(char **a)
{
	char *key = a[2], *val = strchr(a[2], '=');
	int fd, r;

	if (!val) {
		fprintf(stderr, "try: fspick: %s is not KEY=VALUE\n", a[2]);
		exit(2);
	}
	*val++ = '\0';
	fd = fspick(AT_FDCWD, a[0], FSPICK_CLOEXEC);
	if (fd < 0)
		return res(fd);
	if (system(a[1]) != 0) {
		fprintf(stderr, "try: fspick: '%s' failed\n", a[1]);
		exit(2);
	}
	r = fsconfig(fd, FSCONFIG_SET_STRING, key, val, 0);
	if (!r)
		r = fsconfig(fd, FSCONFIG_CMD_RECONFIGURE, NULL, NULL, 0);
	r = res(r);
	close(fd);
	return r;
}

static int op_setfl_append(char **a)
{
	return do_setfl(a[0], 1);
}

static int op_clearfl_append(char **a)
{
	return do_setfl(a[0], 0);
}

static int op_rwf_append(char **a)
{
	char b[] = "b";
	struct iovec iov = { .iov_base = b, .iov_len = 1 };
	long r;
	int fd;

	fd = open(a[0], O_WRONLY);
	if (fd < 0)
		return res(fd);
	errno = 0;
	r = pwrite(fd, "aaaa", 4, 0);
	if (r == 4)
		r = pwritev2(fd, &iov, 1, 0, RWF_APPEND) == 1 ? 0 : -1;
	else
		r = -1;
	if (r && !errno)
		errno = EIO;	/* a short write */
	close(fd);
	return res(r);
}

/* Write @s to /proc/PID/@file. */
static int write_proc(pid_t pid, const char *file, const char *s)
{
	char path[64];
	int fd, ok;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok ? 0 : -1;
}

/*
 * An idmapped bind mount of a[0] on a[1]: a child unshares a user
 * namespace, whose uid and gid 0 we map to 1000; its namespace is the
 * mount's idmapping (open_tree(), mount_setattr(), move_mount()).
 */
static int op_idmapmount(char **a)
{
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_IDMAP };
	int ready[2], done[2], tree = -1, ns = -1, r = -1, err = 0;
	char path[64], c;
	pid_t pid;

	if (pipe(ready) || pipe(done))
		return res(-1);
	pid = fork();
	if (pid < 0)
		return res(-1);
	if (!pid) {
		c = unshare(CLONE_NEWUSER) ? 'n' : 'y';
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		close(done[1]);
		while (read(done[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(done[0]);
	if (read(ready[0], &c, 1) == 1 && c == 'y' &&
	    !write_proc(pid, "uid_map", "0 1000 1\n") &&
	    !write_proc(pid, "gid_map", "0 1000 1\n")) {
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
		ns = open(path, O_RDONLY | O_CLOEXEC);
		tree = syscall(SYS_open_tree, AT_FDCWD, a[0],
			       OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		attr.userns_fd = ns;
		if (ns >= 0 && tree >= 0 &&
		    !syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH,
			     &attr, sizeof(attr)))
			r = syscall(SYS_move_mount, tree, "", AT_FDCWD, a[1],
				    MOVE_MOUNT_F_EMPTY_PATH);
	}
	if (r < 0)
		err = errno;
	close(done[1]);
	waitpid(pid, NULL, 0);
	errno = err;
	return res(r);
}

struct op {
	const char *name;
	int min_args, max_args;
	int (*run)(char **a);
};

static const struct op ops[] = {
	{ "open", 2, 2, op_open },
	{ "write", 3, 3, op_write },
	{ "append", 2, 2, op_append },
	{ "read", 3, 3, op_read },
	{ "truncate", 2, 2, op_truncate },
	{ "link", 2, 2, op_link },
	{ "rename", 2, 3, op_rename },
	{ "unlink", 1, 1, op_unlink },
	{ "rmdir", 1, 1, op_rmdir },
	{ "mkdir", 1, 1, op_mkdir },
	{ "mkfifo", 1, 1, op_mkfifo },
	{ "symlink", 2, 2, op_symlink },
	{ "chmod", 2, 2, op_chmod },
	{ "chown", 3, 3, op_chown },
	{ "utime", 2, 2, op_utime },
	{ "getcow", 1, 1, op_getcow },
	{ "setcow", 2, 2, op_setcow },
	{ "mmapwrite", 3, 3, op_mmapwrite },
	{ "mmapread", 3, 3, op_mmapread },
	{ "flock", 1, 1, op_flock },
	{ "posixlock", 1, 1, op_posixlock },
	{ "hold", 2, 2, op_hold },
	{ "holdwrite", 2, 2, op_holdwrite },
	{ "setxattr", 3, 4, op_setxattr },
	{ "getxattr", 2, 2, op_getxattr },
	{ "fdchmod", 2, 2, op_fdchmod },
	{ "fdsetxattr", 3, 3, op_fdsetxattr },
	{ "fdsetflags", 2, 2, op_fdsetflags },
	{ "fdsetversion", 2, 2, op_fdsetversion },
	{ "removexattr", 2, 2, op_removexattr },
	{ "listxattr", 1, 1, op_listxattr },
	{ "listxattr_sized", 2, 2, op_listxattr_sized },
	{ "listxattr_size", 1, 1, op_listxattr_size },
	{ "getflags", 1, 1, op_getflags },
	{ "setflags", 2, 2, op_setflags },
	{ "fallocate", 3, 3, op_fallocate },
	{ "copyrange", 3, 3, op_copyrange },
	{ "clone", 2, 2, op_clone },
	{ "splice", 2, 3, op_splice },
	{ "statfs", 1, 1, op_statfs },
	{ "fifo", 2, 2, op_fifo },
	{ "extsize", 1, 2, op_extsize },
	{ "fdino", 3, 3, op_fdino },
	{ "fdreport", 2, 2, op_fdreport },
	{ "tmpfile", 3, 5, op_tmpfile },
	{ "tmpfilerace", 2, 2, op_tmpfilerace },
	{ "idmapmount", 2, 2, op_idmapmount },
	{ "mount", 2, 3, op_mount },
	{ "umount", 1, 1, op_umount },
	{ "mmaphold", 3, 3, op_mmaphold },
	{ "failnth", 3, 3, op_failnth },
	{ "remount", 2, 2, op_remount },
	{ "fspick", 3, 3, op_fspick },
	{ "setfl_append", 1, 1, op_setfl_append },
	{ "clearfl_append", 1, 1, op_clearfl_append },
	{ "rwf_append", 1, 1, op_rwf_append },
};

int main(int argc, char **argv)
{
	int n = argc - 2;
	size_t i;

	for (i = 0; argc >= 3 && i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(argv[1], ops[i].name) && n >= ops[i].min_args &&
		    n <= ops[i].max_args)
			return ops[i].run(argv + 2);
	return usage();
}
