// SPDX-License-Identifier: GPL-2.0
/*
 * afterscall: run PROG under ptrace and, when its Nth successful SYSCALL
 * returns, stop it there and run HOOK (sh -c) before letting it go on.
 * The races of tests/t_tools.sh, won every time: another user swapping a
 * name between two system calls of cowlink.  Exits with PROG's status,
 * or 125 if the hook never ran, so that a test cannot pass without its
 * attack.
 *
 *   afterscall SYSCALL N HOOK PROG [ARG]...
 *
 * SYSCALL is one of mkdirat, newfstatat, openat, statfs.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static const struct {
	const char *name;
	long nr;
} calls[] = {
	{ "mkdirat", __NR_mkdirat },
	{ "newfstatat", __NR_newfstatat },	/* lstat, and fstat */
	{ "openat", __NR_openat },
	{ "statfs", __NR_statfs },
};

static long call_nr(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if (!strcmp(calls[i].name, name))
			return calls[i].nr;
	return -1;
}

int main(int argc, char **argv)
{
	struct __ptrace_syscall_info info;
	long nr, cur = -1;
	int n, seen = 0, hooked = 0, status, sig = 0;
	pid_t pid;

	if (argc < 5 || (nr = call_nr(argv[1])) < 0 || (n = atoi(argv[2])) < 1) {
		fprintf(stderr, "usage: afterscall mkdirat|newfstatat|openat|statfs N HOOK PROG [ARG]...\n");
		return 2;
	}
	pid = fork();
	if (pid < 0) {
		perror("afterscall: fork");
		return 125;
	}
	if (!pid) {
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		raise(SIGSTOP);
		execvp(argv[4], argv + 4);
		perror("afterscall: exec");
		_exit(127);
	}
	waitpid(pid, &status, 0);
	ptrace(PTRACE_SETOPTIONS, pid, NULL,
	       PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL);
	for (;;) {
		if (ptrace(PTRACE_SYSCALL, pid, NULL, sig) < 0) {
			perror("afterscall: ptrace");
			return 125;
		}
		sig = 0;
		if (waitpid(pid, &status, 0) < 0) {
			perror("afterscall: waitpid");
			return 125;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status))
			break;
		if (WSTOPSIG(status) != (SIGTRAP | 0x80)) {
			/* A signal for PROG, not our exec or syscall stop. */
			if (WSTOPSIG(status) != SIGTRAP)
				sig = WSTOPSIG(status);
			continue;
		}
		if (ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof(info), &info) < 0) {
			perror("afterscall: PTRACE_GET_SYSCALL_INFO");
			return 125;
		}
		if (info.op == PTRACE_SYSCALL_INFO_ENTRY) {
			cur = info.entry.nr;
		} else if (info.op == PTRACE_SYSCALL_INFO_EXIT && cur == nr &&
			   !info.exit.is_error && ++seen == n) {
			fflush(stdout);
			if (system(argv[3]) != 0)
				fprintf(stderr, "afterscall: hook failed: %s\n",
					argv[3]);
			else
				hooked = 1;
		}
	}
	if (!hooked) {
		fprintf(stderr, "afterscall: %s number %d never returned, no hook ran\n",
			argv[1], n);
		return 125;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
