// SPDX-License-Identifier: GPL-2.0
/*
 * fsnote: an inotify watch or a lease held on one name, for the tests of
 * names that share one inode (tests/t_shared.sh; the guest has neither
 * inotify-tools nor python).
 *
 *   fsnote watch PATH READYFILE SECONDS
 *	watch PATH for IN_MODIFY, IN_ATTRIB and IN_DELETE_SELF, write
 *	"ready" to READYFILE, then print each event's name (MODIFY, ATTRIB,
 *	DELETE_SELF, IGNORED) on a line of its own as it comes, until
 *	IN_IGNORED or SECONDS
 *   fsnote lease PATH READYFILE SECONDS
 *	open PATH read-only, take a read lease (F_SETLEASE F_RDLCK), write
 *	"ready" to READYFILE, wait up to SECONDS for the lease to be broken,
 *	print "broken" (or "timeout") and give the lease up, which lets the
 *	opener that broke it go on; a lease refused prints the errno's name
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

static int ready(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs("ready\n", f) < 0 || fclose(f)) {
		perror(path);
		return -1;
	}
	return 0;
}

static void event(uint32_t mask)
{
	if (mask & IN_MODIFY)
		printf("MODIFY\n");
	if (mask & IN_ATTRIB)
		printf("ATTRIB\n");
	if (mask & IN_DELETE_SELF)
		printf("DELETE_SELF\n");
	if (mask & IN_IGNORED)
		printf("IGNORED\n");
	fflush(stdout);
}

static int watch(const char *path, const char *readyfile, int seconds)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct pollfd pfd;
	time_t end = time(NULL) + seconds;
	int fd;

	fd = inotify_init1(IN_CLOEXEC);
	if (fd < 0 ||
	    inotify_add_watch(fd, path, IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF) < 0) {
		printf("%s\n", strerrorname_np(errno));
		return 1;
	}
	if (ready(readyfile))
		return 2;
	pfd.fd = fd;
	pfd.events = POLLIN;
	while (time(NULL) < end) {
		ssize_t n, off;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			return 1;
		for (off = 0; off < n;) {
			struct inotify_event *ev = (struct inotify_event *)(buf + off);

			event(ev->mask);
			if (ev->mask & IN_IGNORED)
				return 0;
			off += sizeof(*ev) + ev->len;
		}
	}
	return 0;
}

static int lease(const char *path, const char *readyfile, int seconds)
{
	struct timespec ts = { .tv_sec = seconds };
	sigset_t set;
	int fd, sig;

	sigemptyset(&set);
	sigaddset(&set, SIGIO);
	sigprocmask(SIG_BLOCK, &set, NULL);
	fd = open(path, O_RDONLY);
	if (fd < 0 || fcntl(fd, F_SETLEASE, F_RDLCK) < 0) {
		printf("%s\n", strerrorname_np(errno));
		return 1;
	}
	if (ready(readyfile))
		return 2;
	sig = sigtimedwait(&set, NULL, &ts);
	printf("%s\n", sig == SIGIO ? "broken" : "timeout");
	fflush(stdout);
	if (fcntl(fd, F_SETLEASE, F_UNLCK) < 0) {
		printf("%s\n", strerrorname_np(errno));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "watch"))
		return watch(argv[2], argv[3], atoi(argv[4]));
	if (argc == 5 && !strcmp(argv[1], "lease"))
		return lease(argv[2], argv[3], atoi(argv[4]));
	fprintf(stderr, "usage: fsnote watch|lease PATH READYFILE SECONDS\n");
	return 2;
}
