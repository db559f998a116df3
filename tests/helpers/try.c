// SPDX-License-Identifier: GPL-2.0
/*
 * try: run one system call and print what it returned, so that shell tests
 * can assert exact errno values.  Prints "OK" (and a value where there is
 * one) or the errno name, e.g. "EMLINK"; exits 0 either way, 2 on misuse.
 *
 *   try open PATH FLAGS        FLAGS: r w rw, plus a(ppend) t(runc) c(reat) x(cl)
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
 *   try listxattr_sized PATH SIZE  listxattr with a buffer of SIZE bytes,
 *                              prints the names, one a line (SIZE 0: the size)
 *   try listxattr_size PATH    prints what listxattr(PATH, NULL, 0) returns
 *   try getflags PATH | setflags PATH HEX
 *   try fallocate PATH OFF LEN | copyrange SRC DST LEN | clone SRC DST
 *   try statfs PATH            prints f_type in hex
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
 *   try setfl_append PATH      O_WRONLY: write "aaaa", F_SETFL |O_APPEND,
 *                              lseek to 0, write "b" (PATH exists, empty)
 *   try clearfl_append PATH    O_WRONLY|O_APPEND: write "aaaa", F_SETFL
 *                              without O_APPEND, lseek to 0, write "b"
 *   try rwf_append PATH        O_WRONLY: pwrite "aaaa" at 0, then pwritev2
 *                              "b" at offset 0 with RWF_APPEND
 *   try fdino PATH FLAGS STRING  st_ino of the fd after open and after a
 *                               write of STRING at offset 0: "INO1 INO2"
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <linux/fs.h>
#include <time.h>
#include "cowlinkfs.h"

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

int main(int argc, char **argv)
{
	char buf[65536];
	char **a = argv + 2;
	const char *op;
	int n = argc - 2;
	int fd, fd2, v;
	long r;

	if (argc < 3)
		return usage();
	op = argv[1];

	if (!strcmp(op, "open") && n == 2) {
		fd = open(a[0], open_flags(a[1]), 0644);
		if (fd >= 0)
			close(fd);
		return res(fd);
	}
	if (!strcmp(op, "write") && n == 3) {
		fd = open(a[0], O_WRONLY);
		if (fd < 0)
			return res(fd);
		r = pwrite(fd, a[2], strlen(a[2]), atol(a[1]));
		close(fd);
		return res(r);
	}
	if (!strcmp(op, "append") && n == 2) {
		fd = open(a[0], O_WRONLY | O_APPEND);
		if (fd < 0)
			return res(fd);
		r = write(fd, a[1], strlen(a[1]));
		close(fd);
		return res(r);
	}
	if (!strcmp(op, "read") && n == 3) {
		size_t len = atol(a[2]);

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
	if (!strcmp(op, "truncate") && n == 2)
		return res(truncate(a[0], atol(a[1])));
	if (!strcmp(op, "link") && n == 2)
		return res(link(a[0], a[1]));
	if (!strcmp(op, "rename") && (n == 2 || n == 3)) {
		unsigned int fl = 0;

		if (n == 3 && !strcmp(a[2], "noreplace"))
			fl = RENAME_NOREPLACE;
		else if (n == 3 && !strcmp(a[2], "exchange"))
			fl = RENAME_EXCHANGE;
		else if (n == 3 && !strcmp(a[2], "whiteout"))
			fl = RENAME_WHITEOUT;
		return res(renameat2(AT_FDCWD, a[0], AT_FDCWD, a[1], fl));
	}
	if (!strcmp(op, "unlink") && n == 1)
		return res(unlink(a[0]));
	if (!strcmp(op, "rmdir") && n == 1)
		return res(rmdir(a[0]));
	if (!strcmp(op, "mkdir") && n == 1)
		return res(mkdir(a[0], 0755));
	if (!strcmp(op, "mkfifo") && n == 1)
		return res(mkfifo(a[0], 0644));
	if (!strcmp(op, "symlink") && n == 2)
		return res(symlink(a[0], a[1]));
	if (!strcmp(op, "chmod") && n == 2)
		return res(chmod(a[0], strtol(a[1], NULL, 8)));
	if (!strcmp(op, "chown") && n == 3)
		return res(chown(a[0], atoi(a[1]), atoi(a[2])));
	if (!strcmp(op, "utime") && n == 2) {
		struct timespec ts[2] = { { atol(a[1]), 0 }, { atol(a[1]), 0 } };

		return res(utimensat(AT_FDCWD, a[0], ts, 0));
	}
	if (!strcmp(op, "getcow") && n == 1) {
		fd = open(a[0], O_RDONLY | O_NONBLOCK);
		if (fd < 0)
			return res(fd);
		r = ioctl(fd, COWLINK_IOC_GETCOW, &v);
		close(fd);
		if (r < 0)
			return res(r);
		printf("%d\n", v);
		return 0;
	}
	if (!strcmp(op, "setcow") && n == 2) {
		v = atoi(a[1]);
		fd = open(a[0], O_RDONLY | O_NONBLOCK);
		if (fd < 0)
			return res(fd);
		r = ioctl(fd, COWLINK_IOC_SETCOW, &v);
		close(fd);
		return res(r);
	}
	if (!strcmp(op, "mmapwrite") && n == 3)
		return do_mmap(a, 1);
	if (!strcmp(op, "mmapread") && n == 3)
		return do_mmap(a, 0);
	if (!strcmp(op, "flock") && n == 1) {
		fd = open(a[0], O_RDONLY);
		if (fd < 0)
			return res(fd);
		return res(flock(fd, LOCK_EX | LOCK_NB));
	}
	if (!strcmp(op, "posixlock") && n == 1) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

		fd = open(a[0], O_RDWR);
		if (fd < 0)
			return res(fd);
		return res(fcntl(fd, F_SETLK, &fl));
	}
	if (!strcmp(op, "hold") && n == 2) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

		fd = open(a[0], O_RDWR);
		if (fd < 0 || flock(fd, LOCK_EX) || fcntl(fd, F_SETLK, &fl))
			return res(-1);
		printf("OK\n");
		fflush(stdout);
		sleep(atoi(a[1]));
		return 0;
	}
	if (!strcmp(op, "holdwrite") && n == 2) {
		fd = open(a[0], O_WRONLY);
		if (fd < 0)
			return res(fd);
		printf("OK\n");
		fflush(stdout);
		sleep(atoi(a[1]));
		return 0;
	}
	if (!strcmp(op, "setxattr") && (n == 3 || n == 4)) {
		int fl = 0;

		if (n == 4 && !strcmp(a[3], "create"))
			fl = XATTR_CREATE;
		else if (n == 4 && !strcmp(a[3], "replace"))
			fl = XATTR_REPLACE;
		else if (n == 4)
			return usage();
		return res(setxattr(a[0], a[1], a[2], strlen(a[2]), fl));
	}
	if (!strcmp(op, "getxattr") && n == 2) {
		r = getxattr(a[0], a[1], buf, sizeof(buf));
		if (r < 0)
			return res(r);
		printf("%.*s\n", (int)r, buf);
		return 0;
	}
	if (!strcmp(op, "removexattr") && n == 2)
		return res(removexattr(a[0], a[1]));
	if (!strcmp(op, "listxattr") && n == 1) {
		char *s;

		r = listxattr(a[0], buf, sizeof(buf));
		if (r < 0)
			return res(r);
		for (s = buf; s < buf + r; s += strlen(s) + 1)
			printf("%s\n", s);
		return 0;
	}
	if (!strcmp(op, "listxattr_sized") && n == 2) {
		size_t size = atol(a[1]);
		char *s;

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
	if (!strcmp(op, "listxattr_size") && n == 1) {
		r = listxattr(a[0], NULL, 0);
		if (r < 0)
			return res(r);
		printf("%ld\n", r);
		return 0;
	}
	if (!strcmp(op, "getflags") && n == 1) {
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
	if (!strcmp(op, "setflags") && n == 2) {
		v = strtol(a[1], NULL, 16);
		fd = open(a[0], O_RDONLY);
		if (fd < 0)
			return res(fd);
		r = ioctl(fd, FS_IOC_SETFLAGS, &v);
		close(fd);
		return res(r);
	}
	if (!strcmp(op, "fallocate") && n == 3) {
		fd = open(a[0], O_WRONLY);
		if (fd < 0)
			return res(fd);
		r = fallocate(fd, 0, atol(a[1]), atol(a[2]));
		close(fd);
		return res(r);
	}
	if (!strcmp(op, "copyrange") && n == 3) {
		fd = open(a[0], O_RDONLY);
		fd2 = open(a[1], O_WRONLY | O_CREAT, 0644);
		if (fd < 0 || fd2 < 0)
			return res(-1);
		r = copy_file_range(fd, NULL, fd2, NULL, atol(a[2]), 0);
		return res(r);
	}
	if (!strcmp(op, "clone") && n == 2) {
		fd = open(a[0], O_RDONLY);
		fd2 = open(a[1], O_WRONLY | O_CREAT, 0644);
		if (fd < 0 || fd2 < 0)
			return res(-1);
		return res(ioctl(fd2, FICLONE, fd));
	}
	if (!strcmp(op, "statfs") && n == 1) {
		struct statfs st;

		if (statfs(a[0], &st) < 0)
			return res(-1);
		printf("%lx\n", (unsigned long)st.f_type);
		return 0;
	}
	if (!strcmp(op, "fdino") && n == 3) {
		struct stat st1, st2;

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
	if (!strcmp(op, "mount") && (n == 2 || n == 3))
		return res(mount(a[0], a[1], "cowlinkfs", 0, n == 3 ? a[2] : NULL));
	if (!strcmp(op, "umount") && n == 1)
		return res(umount(a[0]));
	if (!strcmp(op, "mmaphold") && n == 3) {
		size_t len = strlen(a[2]);
		char *p;

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
	if (!strcmp(op, "failnth") && n == 3)
		return do_failnth(a);
	if (!strcmp(op, "remount") && n == 2)
		return res(mount("none", a[0], NULL, MS_REMOUNT, a[1]));
	if (!strcmp(op, "setfl_append") && n == 1)
		return do_setfl(a[0], 1);
	if (!strcmp(op, "clearfl_append") && n == 1)
		return do_setfl(a[0], 0);
	if (!strcmp(op, "rwf_append") && n == 1) {
		char b[] = "b";
		struct iovec iov = { .iov_base = b, .iov_len = 1 };

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
	return usage();
}
