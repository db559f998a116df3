// SPDX-License-Identifier: GPL-2.0
/*
 * unixsock: a UNIX stream socket at a path, for tests/t_shared.sh (the
 * guest has neither socat nor python).
 *
 *   unixsock serve PATH READYFILE   bind PATH, listen, write "ready" to
 *                                   READYFILE, accept one connection and
 *                                   print the line it sends; gives up
 *                                   after 20 s
 *   unixsock connect PATH MSG       connect to PATH and send MSG; prints
 *                                   "OK", or the errno's name and fails
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int addr(struct sockaddr_un *sun, const char *path)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun->sun_path)) {
		fprintf(stderr, "unixsock: path too long: %s\n", path);
		return -1;
	}
	strcpy(sun->sun_path, path);
	return 0;
}

static int serve(const char *path, const char *ready)
{
	struct sockaddr_un sun;
	char buf[256];
	ssize_t n;
	FILE *f;
	int s, c;

	if (addr(&sun, path))
		return 2;
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    listen(s, 1) < 0) {
		printf("%s\n", strerrorname_np(errno));
		return 1;
	}
	f = fopen(ready, "w");
	if (!f || fputs("ready\n", f) < 0 || fclose(f)) {
		perror(ready);
		return 2;
	}
	alarm(20);
	c = accept(s, NULL, NULL);
	if (c < 0) {
		printf("%s\n", strerrorname_np(errno));
		return 1;
	}
	n = read(c, buf, sizeof(buf) - 1);
	if (n < 0) {
		printf("%s\n", strerrorname_np(errno));
		return 1;
	}
	buf[n] = 0;
	printf("%s\n", buf);
	return 0;
}

static int connect_to(const char *path, const char *msg)
{
	struct sockaddr_un sun;
	int s;

	if (addr(&sun, path))
		return 2;
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    write(s, msg, strlen(msg)) != (ssize_t)strlen(msg)) {
		printf("%s\n", strerrorname_np(errno));
		return 1;
	}
	printf("OK\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "serve"))
		return serve(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "connect"))
		return connect_to(argv[2], argv[3]);
	fprintf(stderr, "usage: unixsock serve PATH READYFILE | connect PATH MSG\n");
	return 2;
}
