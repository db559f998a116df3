// SPDX-License-Identifier: GPL-2.0
/*
 * Host-side unit tests of libcowlink and of cowlink's argument parsing:
 * everything that needs no cowlinkfs mount.  TAP output, then
 * "N passed, N failed"; exit status 1 on any failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cowlink.h"
#include "libcowlink.h"

static int n, fails;

static void check(int ok, const char *name)
{
	n++;
	if (!ok)
		fails++;
	printf("%sok %d %s\n", ok ? "" : "not ", n, name);
}

static int parse(const char *line, struct cowlink_args *a)
{
	static char buf[256];
	static char *argv[16];
	int argc = 0;
	char *tok;

	snprintf(buf, sizeof(buf), "%s", line);
	for (tok = strtok(buf, " "); tok && argc < 15; tok = strtok(NULL, " "))
		argv[argc++] = tok;
	argv[argc] = NULL;
	return cowlink_parse(argc, argv, a);
}

/* Run ./cowlink with ARGS, return its exit status and stderr. */
static int run(const char *args, char *err, size_t len)
{
	char cmd[512];
	FILE *f;
	size_t got;
	int st;

	snprintf(cmd, sizeof(cmd), "./cowlink %s 2>&1 >/dev/null", args);
	f = popen(cmd, "r");
	got = fread(err, 1, len - 1, f);
	err[got] = '\0';
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(void)
{
	char dir[] = "/tmp/cowlink-unit.XXXXXX", path[256], path2[256], err[512];
	struct cowlink_args a;

	check(parse("get -R a b", &a) == 0 && a.cmd == CMD_FLAG &&
	      a.flag_op == FLAG_GET && a.recursive && a.argc == 2 &&
	      !strcmp(a.argv[1], "b"), "parse_get_recursive_two_paths");
	check(parse("set x", &a) == 0 && a.flag_op == FLAG_SET && !a.recursive,
	      "parse_set");
	check(parse("clear --recursive x", &a) == 0 && a.flag_op == FLAG_CLEAR &&
	      a.recursive, "parse_clear_long_option");
	check(parse("status --json -r x", &a) == 0 && a.cmd == CMD_STATUS &&
	      a.json && a.recursive, "parse_status_json_recursive");
	check(parse("clone -v a b", &a) == 0 && a.cmd == CMD_CLONE && a.verbose &&
	      a.argc == 2, "parse_clone_verbose");
	check(parse("clone a", &a) < 0 && !strcmp(a.error, "missing operand"),
	      "parse_clone_needs_two_operands");
	check(parse("clone a b c", &a) < 0 && !strcmp(a.error, "extra operand"),
	      "parse_clone_refuses_a_third_operand");
	check(parse("frob x", &a) < 0 && !strcmp(a.error, "unknown subcommand"),
	      "parse_unknown_subcommand");
	check(parse("break -R x", &a) < 0, "parse_option_of_another_subcommand");
	check(parse("get", &a) < 0 && !strcmp(a.error, "missing operand"),
	      "parse_get_needs_a_path");
	check(parse("", &a) < 0 && !strcmp(a.error, "missing subcommand"),
	      "parse_empty");

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/f", dir);
	snprintf(path2, sizeof(path2), "%s/g", dir);
	fclose(fopen(path, "w"));
	errno = 0;
	check(cowlink_get(path) == -1 && errno == ENOTTY,
	      "lib_get_off_cowlinkfs_is_enotty");
	errno = 0;
	check(cowlink_set(path, 1) == -1 && errno == ENOTTY,
	      "lib_set_off_cowlinkfs_is_enotty");
	errno = 0;
	check(cowlink_get("/nonexistent/x") == -1 && errno == ENOENT,
	      "lib_get_missing_path_is_enoent");
	check(cowlink_is_cowlinkfs(dir) == 0, "lib_tmp_is_not_cowlinkfs");
	errno = 0;
	check(copyfile(path, path2) == -1 && errno == ENOTTY &&
	      access(path2, F_OK) < 0, "lib_copyfile_off_cowlinkfs_links_nothing");
	snprintf(path2, sizeof(path2), "%s/p", dir);
	mkfifo(path2, 0600);
	errno = 0;
	check(cowlink_set(path2, 1) == -1 && errno == EINVAL,
	      "lib_set_on_fifo_is_einval");

	check(run("--version", err, sizeof(err)) == 0, "cmd_version_exits_0");
	check(run("--help", err, sizeof(err)) == 0, "cmd_help_exits_0");
	check(run("frob x", err, sizeof(err)) == 2 &&
	      strstr(err, "cowlink: unknown subcommand"), "cmd_bad_usage_exits_2");
	check(run("get /nonexistent/x", err, sizeof(err)) == 1 &&
	      !strcmp(err, "cowlink: cannot read flag of '/nonexistent/x': No such file or directory\n"),
	      "cmd_missing_file_message_and_exit_1");
	snprintf(path2, sizeof(path2), "clone %s %s/copy", dir, dir);
	check(run(path2, err, sizeof(err)) == 1 &&
	      strstr(err, "must both be on a cowlinkfs mount"),
	      "cmd_clone_refuses_off_cowlinkfs");

	snprintf(path2, sizeof(path2), "rm -rf %s", dir);
	if (system(path2))
		fails++;
	printf("1..%d\n%d passed, %d failed\n", n, n - fails, fails);
	return fails != 0;
}
