// SPDX-License-Identifier: GPL-2.0
/*
 * timeit: run a command and write the wall-clock seconds it took to a file
 * (tests/bench.sh).  A fork of date(1) before and after would put two
 * process start-ups inside the interval; under TCG that is milliseconds,
 * the size of the shortest workloads.
 *
 *   timeit FILE CMD [ARG]...   runs CMD, writes "%.4f\n" to FILE, exits
 *                              with CMD's status (128 + signal if killed)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

int main(int argc, char **argv)
{
	struct timespec t0, t1;
	int status;
	FILE *out;
	pid_t pid;

	if (argc < 3) {
		fprintf(stderr, "usage: timeit FILE CMD [ARG]...\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	if (pid < 0) {
		perror("timeit: fork");
		return 2;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		perror(argv[2]);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0) {
		perror("timeit: waitpid");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	out = fopen(argv[1], "w");
	if (!out) {
		perror(argv[1]);
		return 2;
	}
	fprintf(out, "%.4f\n", (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	if (fclose(out)) {
		perror(argv[1]);
		return 2;
	}
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
