// SPDX-License-Identifier: GPL-2.0
/*
 * Host-side unit tests of libcowlink and of cowlink's argument parsing:
 * everything that needs no cowlinkfs mount.  TAP output, then
 * "N passed, N failed"; exit status 1 on any failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include "cowlink.h"
#include "libcowlink.h"
#include "walk.h"

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

/* Run the shell command FMT, return its wait status. */
static int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* Run ./cowlink with ARGS and REDIR, return its exit status and output. */
static int run_to(const char *args, char *err, size_t len, const char *redir)
{
	char cmd[1024];
	FILE *f;
	size_t got;
	int st;

	snprintf(cmd, sizeof(cmd), "./cowlink %s %s", args, redir);
	f = popen(cmd, "r");
	got = fread(err, 1, len - 1, f);
	err[got] = '\0';
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * Does the record of COW and PATH read WANT, and read back the same?
 * Not on a terminal (@tty), where it is for reading, not for set --from.
 */
static int record(int cow, const char *path, int null, int tty,
		  const char *want)
{
	char *buf = NULL, *back;
	size_t len = 0;
	int ok, got;
	FILE *f = open_memstream(&buf, &len);

	cowlink_put_record(f, cow, path, null, tty);
	fclose(f);
	ok = len == strlen(want) + (null ? 1 : 0) && !memcmp(buf, want, len);
	if (!ok)
		printf("# got %s\n", buf);
	buf[len - 1] = '\0';	/* the terminator, as getdelim leaves it */
	got = cowlink_parse_record(buf, null, &back);
	ok = ok && (tty || (got == cow && !strcmp(back, path)));
	free(buf);
	return ok;
}

/* Is the record of changes for TAG and PATH WANT? */
static int change(const char *tag, const char *path, int null, int tty,
		  const char *want)
{
	char *buf = NULL;
	size_t len = 0;
	int ok;
	FILE *f = open_memstream(&buf, &len);

	cowlink_put_change(f, tag, path, null, tty);
	fclose(f);
	ok = len == strlen(want) + (null ? 1 : 0) && !memcmp(buf, want, len);
	if (!ok)
		printf("# got %s\n", buf);
	free(buf);
	return ok;
}

static int unrecord(const char *rec, int null)
{
	char buf[64], *path;

	snprintf(buf, sizeof(buf), "%s", rec);
	return cowlink_parse_record(buf, null, &path);
}

/* Is S as a JSON string WANT? */
static int json(const char *s, const char *want)
{
	char *buf = NULL;
	size_t len = 0;
	int ok;
	FILE *f = open_memstream(&buf, &len);

	cowlink_json_string(f, s);
	fclose(f);
	ok = !strcmp(buf, want);
	if (!ok)
		printf("# got %s\n", buf);
	free(buf);
	return ok;
}

/* Is S quoted as WANT, as a message (ALWAYS) or a listing quotes it? */
static int quoted(const char *s, int always, const char *want)
{
	const char *got = cowlink_quote_n(0, s, always);

	if (strcmp(got, want))
		printf("# got %s\n", got);
	return !strcmp(got, want);
}

static void quote_tests(void)
{
	static const char euro[] = "\xc3\xa9\xe2\x82\xac";

	check(quoted("plain", 1, "'plain'") && quoted("plain", 0, "plain") &&
	      quoted("a-b_c.d,e+f@g:h%i{j}", 0, "a-b_c.d,e+f@g:h%i{j}"),
	      "quote_plain_names_in_messages_and_listings");
	check(quoted("a b", 0, "'a b'") && quoted("a$b", 0, "'a$b'") &&
	      quoted("a*", 0, "'a*'") && quoted("~h", 0, "'~h'") &&
	      quoted("#h", 0, "'#h'") && quoted("x~#", 0, "x~#") &&
	      quoted("", 0, "''"), "quote_shell_syntax");
	check(quoted("{", 0, "'{'") && quoted("}", 0, "'}'") &&
	      quoted("{}", 0, "{}") && quoted("a}", 0, "a}") &&
	      quoted("{a", 0, "{a"), "quote_a_brace_alone_as_gnulib_does");
	check(quoted("it's", 0, "\"it's\"") &&
	      quoted("it's $x", 0, "'it'\\''s $x'"), "quote_single_quotes");
	check(quoted("a\nb", 0, "'a'$'\\n''b'") && quoted("\n", 1, "''$'\\n'") &&
	      quoted("e\033[31m", 0, "'e'$'\\033''[31m'") &&
	      quoted("t\tb\x7f", 0, "'t'$'\\t''b'$'\\177'"),
	      "quote_newline_escape_and_controls");
	check(quoted("bad\xff\xfe", 1, "'bad'$'\\377\\376'"),
	      "quote_invalid_bytes_octal");
	if (setlocale(LC_CTYPE, "C.UTF-8") || setlocale(LC_CTYPE, "C.utf8")) {
		check(quoted(euro, 0, euro) &&
		      quoted("\xc2\x85", 0, "''$'\\302\\205'") &&
		      quoted("\xe2\x82", 0, "''$'\\342\\202'"),
		      "quote_utf8_locale_keeps_printable_characters");
	} else {
		check(1, "quote_utf8_locale_keeps_printable_characters # SKIP no C.UTF-8");
	}
	setlocale(LC_CTYPE, "C");
	check(quoted(euro, 0, "''$'\\303\\251\\342\\202\\254'"),
	      "quote_c_locale_escapes_non_ascii");
}

/* Run ./cowlink with ARGS, return its exit status and stderr. */
static int run(const char *args, char *err, size_t len)
{
	return run_to(args, err, len, "2>&1 >/dev/null");
}

/* The same, with its stdout. */
static int run_out(const char *args, char *out, size_t len)
{
	return run_to(args, out, len, "2>/dev/null");
}

/* Does ./cowlink ARGS (on DIR) exit STATUS with the messages WANT? */
static int exits_saying(const char *dir, const char *args, int status,
			const char *want)
{
	char line[1024], msg[1024], err[4096];
	int st;

	snprintf(line, sizeof(line), args, dir, dir);
	snprintf(msg, sizeof(msg), want, dir, dir);
	st = run(line, err, sizeof(err));
	if (st != status || strcmp(err, msg))
		printf("# exit %d: %s", st, err);
	return st == status && !strcmp(err, msg);
}

/* Does ./cowlink ARGS (on DIR) exit 1 with the one message WANT? */
static int says(const char *dir, const char *args, const char *want)
{
	return exits_saying(dir, args, 1, want);
}

/*
 * Off cowlinkfs the ioctls fail with ENOTTY: every subcommand says so in
 * the same words, once per operand, not once per file of a walk.
 */
static void not_cowlinkfs_tests(const char *dir)
{
	check(!sh("mkdir -p %s/n/a/b && touch %s/n/1 %s/n/a/2 %s/n/a/b/3",
		  dir, dir, dir, dir) && !sh("ln -s 1 %s/n/sl && mkfifo %s/n/p",
					   dir, dir), "setup_foreign_tree");
	check(says(dir, "get %s/f",
		   "cowlink: cannot read flag of '%s/f': not on a cowlinkfs mount\n") &&
	      says(dir, "set %s/f",
		   "cowlink: cannot set flag on '%s/f': not on a cowlinkfs mount\n") &&
	      says(dir, "clear %s",
		   "cowlink: cannot clear flag of '%s': not on a cowlinkfs mount\n"),
	      "cmd_get_set_clear_say_not_on_cowlinkfs");
	check(says(dir, "get -R %s/n",
		   "cowlink: cannot read flag of '%s/n': not on a cowlinkfs mount\n") &&
	      says(dir, "set -R %s/n",
		   "cowlink: cannot set flag on '%s/n': not on a cowlinkfs mount\n") &&
	      says(dir, "clear -R %s/n/a/2",
		   "cowlink: cannot clear flag of '%s/n/a/2': not on a cowlinkfs mount\n"),
	      "cmd_walk_says_not_on_cowlinkfs_once");
	check(says(dir, "break -R -v %s/n",
		   "cowlink: cannot break '%s/n': not on a cowlinkfs mount\n") &&
	      !sh("ln %s/n/1 %s/n/a/1b", dir, dir) &&
	      says(dir, "break -R %s/n/a/b/3",
		   "cowlink: cannot break '%s/n/a/b/3': not on a cowlinkfs mount\n") &&
	      says(dir, "break -R %s/n/p",
		   "cowlink: cannot break '%s/n/p': not a regular file\n"),
	      "cmd_break_recursive_says_not_on_cowlinkfs_once");
	check(says(dir, "break %s/n/a",
		   "cowlink: cannot break '%s/n/a': is a directory (use -R)\n"),
	      "cmd_break_directory_without_r_says_use_r");
	check(says(dir, "get -R %s/n/a %s/n",
		   "cowlink: cannot read flag of '%s/n/a': not on a cowlinkfs mount\n"
		   "cowlink: cannot read flag of '%s/n': not on a cowlinkfs mount\n"),
	      "cmd_walk_says_it_once_per_operand");
	check(says(dir, "get %s/n/sl",
		   "cowlink: cannot read flag of '%s/n/sl': is a symlink (not followed)\n") &&
	      says(dir, "set -R %s/n/sl",
		   "cowlink: cannot set flag on '%s/n/sl': is a symlink (not followed)\n") &&
	      says(dir, "clear %s/n/sl",
		   "cowlink: cannot clear flag of '%s/n/sl': is a symlink (not followed)\n") &&
	      says(dir, "break %s/n/sl",
		   "cowlink: cannot break '%s/n/sl': is a symlink (not followed)\n"),
	      "cmd_symlink_operand_not_followed_in_words");
	check(says(dir, "get %s/n/p",
		   "cowlink: cannot read flag of '%s/n/p': not a regular file or directory\n") &&
	      says(dir, "clear -R /dev/null",
		   "cowlink: cannot clear flag of '/dev/null': not a regular file or directory\n") &&
	      !sh("printf 'cow %s/n/p\\n' >%s/n/rec", dir, dir) &&
	      says(dir, "set --from=%s/n/rec",
		   "cowlink: cannot set flag on '%s/n/p': not a regular file or directory\n"),
	      "cmd_special_file_operand_in_words");
	check(!sh("printf 'cow %s/n/1\\n--- %s/n/a/2\\n' >%s/n/rec", dir, dir, dir) &&
	      says(dir, "set --from=%s/n/rec",
		   "cowlink: cannot set flag on '%s/n/1': not on a cowlinkfs mount\n"),
	      "cmd_set_from_says_not_on_cowlinkfs_once");
}

/* The stdout of the shell command @cmd in @out, and its exit status. */
static int sh_out(const char *cmd, char *out, size_t len)
{
	FILE *f = popen(cmd, "r");
	size_t got;
	int st;

	if (!f)
		return -1;
	got = fread(out, 1, len - 1, f);
	out[got] = '\0';
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * A number read from the output of the shell command FMT, or -1; its
 * messages (cowlink's notes off cowlinkfs) are checked elsewhere.
 */
static long long sh_num(const char *fmt, const char *dir)
{
	char inner[1024], cmd[1100];
	long long v = -1;
	FILE *f;

	snprintf(inner, sizeof(inner), fmt, dir, dir);
	snprintf(cmd, sizeof(cmd), "{ %s; } 2>/dev/null", inner);
	f = popen(cmd, "r");
	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		pclose(f);
	}
	return v;
}

/*
 * The stdout of the shell command @mine, run with @dir, is that of @theirs,
 * and @mine exits @status.
 */
static int run_out_is(const char *dir, const char *mine, const char *theirs,
		      int status)
{
	char cmd[1024], a[4096], b[4096];
	int st;

	snprintf(cmd, sizeof(cmd), mine, dir, dir);
	strcat(cmd, " 2>/dev/null");
	st = sh_out(cmd, a, sizeof(a));
	snprintf(cmd, sizeof(cmd), theirs, dir, dir);
	strcat(cmd, " 2>/dev/null");
	sh_out(cmd, b, sizeof(b));
	if (st != status || strcmp(a, b))
		printf("# exit %d, %s# not %s", st, a, b);
	return st == status && !strcmp(a, b);
}

/*
 * du: the bytes of the files whose every name is under the operand, with
 * du -s -B1 (which counts each inode once) for the whole.
 */
static void du_tests(const char *dir)
{
	long long whole, c, got;

	check(!sh("mkdir -p %s/d/t/sub %s/d/out", dir, dir) &&
	      !sh("head -c 10000 /dev/urandom >%s/d/t/a", dir) &&
	      !sh("head -c 20000 /dev/urandom >%s/d/t/b && ln %s/d/t/b %s/d/t/sub/b2",
		  dir, dir, dir) &&
	      !sh("head -c 30000 /dev/urandom >%s/d/t/c && ln %s/d/t/c %s/d/out/c2",
		  dir, dir, dir), "setup_du_tree_links_in_and_out");
	whole = sh_num("du -s -B1 %s/d/t", dir);
	c = sh_num("stat -c %%b %s/d/t/c", dir) * 512;
	got = sh_num("./cowlink du %s/d/t", dir);
	if (got != whole - c)
		printf("# du %lld, whole %lld, c %lld\n", got, whole, c);
	check(whole > 0 && c > 0 && got == whole - c,
	      "cmd_du_counts_what_has_no_name_outside");
	check(sh_num("./cowlink du %s/d", dir) == sh_num("du -s -B1 %s/d", dir),
	      "cmd_du_of_the_whole_is_du_s");
	check(sh_num("./cowlink du %s/d/t/sub", dir) ==
	      sh_num("stat -c %%b %s/d/t/sub", dir) * 512,
	      "cmd_du_link_with_its_other_name_outside_frees_nothing");
	check(sh_num("./cowlink du %s/d/t/c", dir) == 0 &&
	      sh_num("./cowlink du %s/d/t/a", dir) ==
	      sh_num("stat -c %%b %s/d/t/a", dir) * 512,
	      "cmd_du_of_a_file_operand");
	check(sh_num("./cowlink du %s/d/out %s/d/t | tail -n 1", dir) == whole - c,
	      "cmd_du_operands_apart_not_summed_as_du_does");
	check(run_out_is(dir, "./cowlink du %s/sl", "du -s -B1 %s/sl", 0),
	      "cmd_du_symlink_operand_counts_as_itself_as_du_s");
	/* As status says it: once per operand, not per file, exit 0. */
	check(exits_saying(dir, "du %s/d/t", 0,
			   "cowlink: du of '%s/d/t': not on a cowlinkfs mount (no link there is copy-on-write)\n") &&
	      exits_saying(dir, "du %s/sl %s/d", 0,
			   "cowlink: du of '%s/sl': not on a cowlinkfs mount (no link there is copy-on-write)\n"
			   "cowlink: du of '%s/d': not on a cowlinkfs mount (no link there is copy-on-write)\n"),
	      "cmd_du_notes_not_on_cowlinkfs_once_per_operand_exit_0");
	check(says(dir, "du %s/missing",
		   "cowlink: cannot access '%s/missing': No such file or directory\n") &&
	      run_out_is(dir, "./cowlink du %s/missing", "du -s -B1 %s/missing", 1),
	      "cmd_du_no_line_for_an_operand_not_found");
}

/* The mount points walk_mount_point() is to find, and what it found. */
static const char *const mount_names[] = { "tmp", "bind", "file" };
static unsigned int mount_found, mount_wrong;

static enum walk_action mount_visit(struct walk_entry *e)
{
	unsigned int i;

	if (!walk_mount_point(e))
		return WALK_CONTINUE;
	for (i = 0; i < ARRAY_SIZE(mount_names); i++)
		if (!strcmp(e->name, mount_names[i]))
			break;
	if (i < ARRAY_SIZE(mount_names) && e->level == 1)
		mount_found |= 1U << i;
	else
		mount_wrong++;
	return WALK_SKIP;
}

/* Write @s to the file @path: 0, or -1. */
static int put(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	return close(fd) == 0 && ok ? 0 : -1;
}

/*
 * The child of mount_point_tests(), in a user and a mount namespace of
 * its own, with every mount private: nothing it mounts reaches the
 * host's mounts, and all goes with it.  Exit 0 if the walk of @m found
 * the three mount points and nothing else, 1 if not, 77 where no such
 * namespace can be made (a build chroot, say).
 */
static void mount_point_child(const char *m)
{
	static const struct walk_ops ops = { .pre = mount_visit };
	char map[64];

	snprintf(map, sizeof(map), "0 %u 1", (unsigned int)geteuid());
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0 ||
	    put("/proc/self/setgroups", "deny") < 0 ||
	    put("/proc/self/uid_map", map) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    chdir(m) < 0 || mount("none", "tmp", "tmpfs", 0, NULL) < 0)
		_exit(77);
	if (mount("src", "bind", NULL, MS_BIND, NULL) < 0 ||
	    mount("src/f", "file", NULL, MS_BIND, NULL) < 0)
		_exit(1);
	walk(".", &ops);
	_exit(mount_found == 7 && !mount_wrong ? 0 : 1);
}

/*
 * walk_mount_point(), which clone and break -R stop at: another
 * filesystem, and a bind mount of the same one, a directory or a file,
 * whose st_dev is its parent's.
 */
static void mount_point_tests(const char *dir)
{
	char m[512];
	pid_t pid;
	int st;

	snprintf(m, sizeof(m), "%s/mp", dir);
	if (sh("mkdir -p %s/tmp %s/bind %s/src/sub %s/plain && touch %s/file %s/src/f",
	       m, m, m, m, m, m)) {
		check(0, "setup_mount_point_tree");
		return;
	}
	fflush(NULL);
	pid = fork();
	if (!pid)
		mount_point_child(m);
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
		st = 1 << 8;
	if (WEXITSTATUS(st) == 77)
		check(1, "walk_mount_point_other_fs_and_bind_mounts # SKIP no user namespace");
	else
		check(!WEXITSTATUS(st), "walk_mount_point_other_fs_and_bind_mounts");
}

/*
 * discard works on any filesystem: a tree of many directories and files,
 * hard links and symlinks out of it, removed whole by the walk and its
 * workers, and what it points to kept.
 */
static void discard_tests(const char *dir)
{
	char line[1024], err[4096], cwd[512];
	int st;

	st = sh("set -e; cd %s; mkdir -p out t; : >out/keep; "
		"for d in $(seq 1 40); do mkdir -p t/d$d/e/f; "
		"for i in $(seq 1 30); do : >t/d$d/x$i; : >t/d$d/e/f/y$i; done; "
		"ln t/d$d/x1 t/d$d/e/l; ln -s ../out t/d$d/sym; done", dir);
	check(st == 0, "setup_discard_tree");
	snprintf(line, sizeof(line), "discard %s/t", dir);
	check(run(line, err, sizeof(err)) == 0 && !*err &&
	      sh("test ! -e %s/t && test -f %s/out/keep", dir, dir) == 0,
	      "cmd_discard_removes_a_tree_and_nothing_a_symlink_in_it_names");
	snprintf(err, sizeof(err),
		 "cowlink: '%s/out/keep' is not a directory, not discarded\n",
		 dir);
	check(exits_saying(dir, "discard %s/out/keep %s/out", 1, err) &&
	      sh("test ! -e %s/out", dir) == 0,
	      "cmd_discard_refuses_a_file_and_goes_on");
	/* 1000 levels, on a stack that a recursion of them would overflow. */
	st = sh("cd %s && perl -e 'for (1..1000) { mkdir \"d\" and chdir \"d\" "
		"or die } open(F, \">f\") or die' && "
		"(ulimit -s 256 && exec %s/cowlink discard d) && test ! -e d",
		dir, getcwd(cwd, sizeof(cwd)) ? cwd : ".");
	check(st == 0, "cmd_discard_of_a_deep_tree_walks_in_a_loop");
}

/*
 * Run ./cowlink ARGS in the C locale with its stdout on a pseudo-terminal
 * (raw: no CR added before a newline) and its stderr on /dev/null: its
 * exit status and what it wrote in @out, or -2 where no pseudo-terminal
 * can be had (a build chroot without devpts, say).
 */
static int run_on_tty(const char *args, char *out, size_t len)
{
	char cmd[1100];
	struct termios t;
	size_t got = 0;
	int master, slave = -1, null, st, exited;
	ssize_t r;
	pid_t pid;

	snprintf(cmd, sizeof(cmd), "LC_ALL=C exec ./cowlink %s", args);
	master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master >= 0 && !grantpt(master) && !unlockpt(master))
		slave = open(ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave < 0 || tcgetattr(slave, &t) < 0) {
		if (master >= 0)
			close(master);
		return -2;
	}
	cfmakeraw(&t);
	tcsetattr(slave, TCSANOW, &t);
	fflush(NULL);
	pid = fork();
	if (!pid) {
		null = open("/dev/null", O_WRONLY);
		if (dup2(slave, 1) < 0 || null < 0 || dup2(null, 2) < 0)
			_exit(126);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	/*
	 * Read until the command is gone and the terminal has been quiet
	 * for a while.  Not until EIO: once the last writer closes the
	 * terminal, Linux may return EIO while lines the command wrote are
	 * still on their way to the master (the flip buffer), and they were
	 * lost.  The slave stays open here, so the master never sees EIO.
	 */
	for (exited = 0; pid > 0 && got < len - 1;) {
		struct pollfd pfd = { .fd = master, .events = POLLIN };

		if (!exited && waitpid(pid, &st, WNOHANG) == pid)
			exited = 1;
		if (poll(&pfd, 1, exited ? 200 : 50) <= 0) {
			if (exited)
				break;
			continue;
		}
		r = read(master, out + got, len - 1 - got);
		if (r <= 0)
			break;
		got += r;
	}
	out[got] = '\0';
	close(slave);
	close(master);
	if (pid < 0 || (!exited && waitpid(pid, &st, 0) < 0))
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Make the empty file @name in @dir: 0, or -1. */
static int touch_in(const char *dir, const char *name)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	return fd < 0 ? -1 : close(fd);
}

/*
 * The records of changes (and get, which writes them the same way) are
 * exact for a pipe, which a script reads, and quoted as status lists
 * names on a terminal, where an escape sequence or an invalid byte must
 * not reach the screen as it is, as ls quotes names.
 */
static void tty_tests(const char *dir)
{
	static const char quoted[] =
		"created 'bad'$'\\377'\n"
		"created 'e'$'\\033''[31m'\n"
		"created 'n'$'\\n''l'\n"
		"created plain\n";
	static const char exact[] =
		"created bad\377\n"
		"created e\033[31m\n"
		"\\created n\\nl\n"
		"created plain\n";
	char c[512], line[1024], out[4096];
	int st;

	snprintf(c, sizeof(c), "%s/tt/c", dir);
	check(!sh("mkdir -p %s/tt/p %s", dir, c) && !touch_in(c, "bad\377") &&
	      !touch_in(c, "e\033[31m") && !touch_in(c, "n\nl") &&
	      !touch_in(c, "plain"), "setup_odd_names_for_a_terminal");
	snprintf(line, sizeof(line), "changes %s/tt/p %s", dir, c);
	st = run_on_tty(line, out, sizeof(out));
	if (st == -2) {
		check(1, "cmd_changes_on_a_terminal_quotes_names # SKIP no pseudo-terminal");
	} else {
		if (st || strcmp(out, quoted))
			printf("# exit %d: %s", st, out);
		check(!st && !strcmp(out, quoted),
		      "cmd_changes_on_a_terminal_quotes_names");
	}
	st = run_out(line, out, sizeof(out));
	if (st || strcmp(out, exact))
		printf("# exit %d: %s", st, out);
	check(!st && !strcmp(out, exact), "cmd_changes_to_a_pipe_exact_records");
}

int main(void)
{
	static const char *const subcmds[] = {
		"get", "set", "clear", "clone", "status", "du", "break",
		"changes", "discard",
	};
	static const char utf8[] = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x90\x84";
	static const char utf8_json[] = "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x90\x84\"";
	static const char enoent_msg[] =
		"cowlink: cannot read flag of '/nonexistent/x': No such file or directory\n";
	char dir[] = "/tmp/cowlink-unit.XXXXXX", path[256], path2[256];
	char line[1024], want[1024], err[4096], out[4096], *p;
	struct cowlink_args a;
	int i, ok;
	FILE *f;

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
	check(parse("clone --progress a b", &a) == 0 && a.progress,
	      "parse_clone_progress");
	check(parse("clone a", &a) < 0 &&
	      !strcmp(a.error, "missing destination operand after 'a'"),
	      "parse_clone_needs_two_operands");
	check(parse("clone a b c", &a) < 0 && !strcmp(a.error, "extra operand 'c'"),
	      "parse_clone_refuses_a_third_operand");
	check(parse("frob x", &a) < 0 &&
	      !strcmp(a.error, "unknown subcommand 'frob'"),
	      "parse_unknown_subcommand_names_it");
	check(parse("clone -R x y", &a) < 0 &&
	      !strcmp(a.error, "invalid option '-R' for 'clone'"),
	      "parse_option_of_another_subcommand_names_it");
	check(parse("break --json x", &a) < 0 &&
	      !strcmp(a.error, "invalid option '--json' for 'break'"),
	      "parse_long_option_of_another_subcommand_names_it");
	check(parse("get --frob=1 x", &a) < 0 &&
	      !strcmp(a.error, "unrecognized option '--frob'"),
	      "parse_unknown_long_option");
	check(parse("get -Rx a", &a) < 0 &&
	      !strcmp(a.error, "invalid option -- 'x'"),
	      "parse_unknown_short_option");
	check(parse("status -j a", &a) < 0 &&
	      !strcmp(a.error, "invalid option -- 'j'"),
	      "parse_short_j_is_not_json");
	check(parse("status --json=yes a", &a) < 0 &&
	      !strcmp(a.error, "option '--json' doesn't allow an argument"),
	      "parse_option_with_an_argument_it_does_not_take");
	check(parse("get", &a) < 0 && !strcmp(a.error, "missing operand"),
	      "parse_get_needs_a_path");
	check(parse("", &a) < 0 && !strcmp(a.error, "missing subcommand"),
	      "parse_empty");
	check(parse("--frob", &a) < 0 &&
	      !strcmp(a.error, "unrecognized option '--frob'"),
	      "parse_unknown_global_option");
	check(parse("--vers", &a) == 0 && a.version && parse("-V", &a) == 0 &&
	      a.version, "parse_version_and_its_abbreviation");
	check(parse("--help", &a) == 0 && a.help && !a.name &&
	      !strncmp(cowlink_usage(&a), "Usage: cowlink COMMAND", 22),
	      "parse_global_help");
	check(parse("break --help", &a) == 0 && a.help &&
	      !strncmp(cowlink_usage(&a), "Usage: cowlink break [OPTION]... FILE...\n", 41),
	      "parse_subcommand_help_needs_no_operand");
	check(parse("clone a -h", &a) == 0 && a.help &&
	      strstr(cowlink_usage(&a), "DST must not exist"),
	      "parse_help_after_an_operand");
	check(parse("get a -R", &a) == 0 && a.recursive && a.argc == 1 &&
	      !strcmp(a.argv[0], "a"), "parse_option_after_operand");
	check(parse("get -- -R", &a) == 0 && !a.recursive && a.argc == 1 &&
	      !strcmp(a.argv[0], "-R"), "parse_double_dash_ends_options");
	check(parse("set --from=- -0", &a) == 0 && a.from && !strcmp(a.from, "-") &&
	      a.null && a.argc == 0, "parse_set_from_stdin_null");
	check(parse("set --from", &a) < 0 &&
	      !strcmp(a.error, "option '--from' requires an argument"),
	      "parse_from_needs_an_argument");
	check(parse("set --from f x", &a) < 0 &&
	      !strcmp(a.error, "extra operand 'x'"),
	      "parse_from_takes_no_operand");
	check(parse("set -R --from=f", &a) < 0 &&
	      !strcmp(a.error, "options '--from' and '--recursive' are mutually exclusive"),
	      "parse_from_and_recursive_exclusive");
	check(parse("set -0 x", &a) < 0 &&
	      !strcmp(a.error, "option '-0' requires '--from'"),
	      "parse_null_of_set_needs_from");
	check(parse("clear --from=f", &a) < 0 &&
	      !strcmp(a.error, "invalid option '--from' for 'clear'"),
	      "parse_from_only_for_set");
	check(parse("get -0 -R x", &a) == 0 && a.null && a.recursive,
	      "parse_get_null");
	check(parse("break -R -v x", &a) == 0 && a.cmd == CMD_BREAK &&
	      a.recursive && a.verbose, "parse_break_recursive");
	check(parse("du a b", &a) == 0 && a.cmd == CMD_DU && a.argc == 2 &&
	      parse("du -R a", &a) < 0 &&
	      !strcmp(a.error, "invalid option '-R' for 'du'"),
	      "parse_du_takes_operands_only");

	check(parse("changes --json a b", &a) == 0 && a.cmd == CMD_CHANGES &&
	      a.json && a.argc == 2 && parse("changes -0 a b", &a) == 0 &&
	      a.null, "parse_changes_json_and_null");
	check(parse("changes a", &a) < 0 && !strcmp(a.error, "missing operand") &&
	      parse("changes a b c", &a) < 0 &&
	      !strcmp(a.error, "extra operand 'c'"),
	      "parse_changes_takes_two_operands");
	check(parse("changes --json -0 a b", &a) < 0 &&
	      !strcmp(a.error, "options '--json' and '-0' are mutually exclusive") &&
	      parse("changes -R a b", &a) < 0 &&
	      !strcmp(a.error, "invalid option '-R' for 'changes'"),
	      "parse_changes_json_or_null_no_recursive");
	check(change("created", "a b", 0, 0, "created a b\n") &&
	      change("modified", "a\nb\\", 0, 0, "\\modified a\\nb\\\\\n") &&
	      change("removed", "a\nb", 1, 0, "removed a\nb"),
	      "record_change_escaped_as_get_records");

	check(record(1, "d/a", 0, 0, "cow d/a\n"), "record_plain");
	check(record(0, "d/a\nb", 0, 0, "\\--- d/a\\nb\n"), "record_newline_escaped");
	check(record(1, "a\\b\rc", 0, 0, "\\cow a\\\\b\\rc\n"),
	      "record_backslash_and_cr_escaped");
	check(record(1, "odd\xff\xfe name", 0, 0, "cow odd\xff\xfe name\n") &&
	      change("created", "e\033[31m", 0, 0, "created e\033[31m\n"),
	      "record_odd_bytes_as_they_are_not_on_a_terminal");
	check(record(0, "a\nb\\", 1, 0, "--- a\nb\\"), "record_null_not_escaped");
	/* On a terminal: quoted as status lists names, -0 or not. */
	check(record(1, "d/a", 0, 1, "cow d/a\n") &&
	      change("created", "a b", 0, 1, "created 'a b'\n"),
	      "record_on_a_terminal_plain_name_as_it_is");
	check(record(0, "d/a\nb\\", 0, 1, "--- 'd/a'$'\\n''b\\'\n") &&
	      change("modified", "e\033[31m", 0, 1, "modified 'e'$'\\033''[31m'\n") &&
	      change("removed", "bad\xff", 0, 1, "removed 'bad'$'\\377'\n"),
	      "record_on_a_terminal_quoted_as_status_lists_names");
	check(record(1, "a\nb", 1, 1, "cow 'a'$'\\n''b'") &&
	      change("created", "e\033", 1, 1, "created 'e'$'\\033'"),
	      "record_null_on_a_terminal_quoted_too");
	check(unrecord("bogus", 0) == -1 && unrecord("cow ", 0) == -1 &&
	      unrecord("\\cow a\\tb", 0) == -1 && unrecord("COW a", 0) == -1,
	      "record_invalid_ones_refused");
	check(unrecord("\\cow a", 1) == -1, "record_null_has_no_escapes");

	check(json("plain", "\"plain\""), "json_plain");
	check(json("q\"b\\n\nt\t\x01\x7f", "\"q\\\"b\\\\n\\nt\\t\\u0001\\u007f\""),
	      "json_quotes_and_controls");
	/* e acute, the euro sign and an ox: 2, 3 and 4 bytes */
	check(json(utf8, utf8_json), "json_valid_utf8_as_it_is");
	check(json("a\xff\xfe", "\"a\\udcff\\udcfe\""),
	      "json_invalid_bytes_surrogateescaped");
	check(json("\xc0\xaf", "\"\\udcc0\\udcaf\""), "json_overlong_form_escaped");
	check(json("\xed\xa0\x80", "\"\\udced\\udca0\\udc80\""),
	      "json_utf8_surrogate_escaped");
	check(json("\xf4\x90\x80\x80", "\"\\udcf4\\udc90\\udc80\\udc80\""),
	      "json_above_u10ffff_escaped");
	check(json("\xe2\x82", "\"\\udce2\\udc82\""), "json_truncated_sequence_escaped");
	quote_tests();

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
	check(cowlink_link(path, path2) == -1 && errno == ENOTTY &&
	      access(path2, F_OK) < 0, "lib_link_off_cowlinkfs_links_nothing");
	snprintf(path2, sizeof(path2), "%s/p", dir);
	mkfifo(path2, 0600);
	errno = 0;
	check(cowlink_set(path2, 1) == -1 && errno == EINVAL,
	      "lib_set_on_fifo_is_einval");

	snprintf(path2, sizeof(path2), "%s/sl", dir);
	errno = 0;
	check(symlink("f", path2) == 0 && cowlink_get(path2) == -1 &&
	      errno == ELOOP, "lib_get_on_symlink_is_eloop_not_followed");
	errno = 0;
	check(cowlink_set(path2, 1) == -1 && errno == ELOOP,
	      "lib_set_on_symlink_is_eloop");
	errno = 0;
	check(cowlink_mount_cow_all(dir) == -1 && errno == ENOTTY,
	      "lib_mount_cow_all_off_cowlinkfs_is_enotty");

	check(run("--version", err, sizeof(err)) == 0, "cmd_version_exits_0");
	check(run_out("--help", out, sizeof(out)) == 0 &&
	      !strncmp(out, "Usage: cowlink COMMAND", 22), "cmd_help_exits_0");
	for (i = 0; i < 3; i++) {
		static const char *const full[][2] = {
			{ "--help", "help" }, { "--version", "version" },
			{ "status --help", "status_help" },
		};

		ok = run_to(full[i][0], err, sizeof(err), "2>&1 >/dev/full") == 1 &&
		     !strcmp(err, "cowlink: write error: No space left on device\n");
		snprintf(want, sizeof(want), "cmd_%s_to_dev_full_is_a_write_error_exit_1",
			 full[i][1]);
		check(ok, want);
	}
	check(run("frob x", err, sizeof(err)) == 2 &&
	      !strcmp(err, "cowlink: unknown subcommand 'frob'\n"
		      "Try 'cowlink --help' for more information.\n"),
	      "cmd_usage_error_names_the_word_then_try_help_exit_2");
	check(run("get --json x", err, sizeof(err)) == 2 &&
	      !strcmp(err, "cowlink: invalid option '--json' for 'get'\n"
		      "Try 'cowlink get --help' for more information.\n"),
	      "cmd_option_of_another_subcommand_exit_2");
	check(run("clone a", err, sizeof(err)) == 2 &&
	      !strcmp(err, "cowlink: missing destination operand after 'a'\n"
		      "Try 'cowlink clone --help' for more information.\n") &&
	      run("", err, sizeof(err)) == 2 &&
	      !strcmp(err, "cowlink: missing subcommand\n"
		      "Try 'cowlink --help' for more information.\n"),
	      "cmd_usage_error_tries_the_help_of_its_subcommand");
	for (i = 0; i < (int)ARRAY_SIZE(subcmds); i++) {
		snprintf(line, sizeof(line), "%s --frob", subcmds[i]);
		ok = run(line, err, sizeof(err)) == 2 &&
		     (p = strstr(err, "\nTry 'cowlink ")) &&
		     sscanf(p, "\nTry 'cowlink %200[^']'", line) == 1;
		snprintf(want, sizeof(want), "Usage: cowlink %s ", subcmds[i]);
		ok = ok && run_out(line, out, sizeof(out)) == 0 &&
		     !strncmp(out, want, strlen(want));
		snprintf(want, sizeof(want), "cmd_%s_usage_error_help_to_try_works",
			 subcmds[i]);
		check(ok, want);
	}
	check(run("--frob", err, sizeof(err)) == 2 &&
	      !strcmp(err, "cowlink: unrecognized option '--frob'\n"
		      "Try 'cowlink --help' for more information.\n"),
	      "cmd_unknown_global_option_has_one_prefix");
	for (i = 0; i < (int)ARRAY_SIZE(subcmds); i++) {
		snprintf(line, sizeof(line), "%s --help", subcmds[i]);
		snprintf(want, sizeof(want), "Usage: cowlink %s ", subcmds[i]);
		ok = run_out(line, out, sizeof(out)) == 0 &&
		     !strncmp(out, want, strlen(want));
		snprintf(want, sizeof(want), "cmd_%s_help_on_stdout_exit_0",
			 subcmds[i]);
		check(ok, want);
	}
	check(run("get /nonexistent/x", err, sizeof(err)) == 1 &&
	      !strcmp(err, enoent_msg),
	      "cmd_missing_file_message_and_exit_1");
	snprintf(line, sizeof(line), "clone --progress %s %s/copy", dir, dir);
	snprintf(want, sizeof(want),
		 "cowlink: cannot clone '%s': not on a cowlinkfs mount\n", dir);
	check(run(line, err, sizeof(err)) == 1 && !strcmp(err, want),
	      "cmd_clone_refuses_off_cowlinkfs");
	not_cowlinkfs_tests(dir);
	discard_tests(dir);

	/* break: what it did, never "inode N -> N" */
	snprintf(path2, sizeof(path2), "%s/f2", dir);
	check(link(path, path2) == 0, "setup_two_links");
	snprintf(line, sizeof(line), "break -v %s", path);
	snprintf(want, sizeof(want),
		 "cowlink: cannot break '%s': not on a cowlinkfs mount\n", path);
	check(run(line, err, sizeof(err)) == 1 && !strcmp(err, want) &&
	      run_out(line, out, sizeof(out)) == 1 && !*out,
	      "cmd_break_off_cowlinkfs_says_so_exit_1");
	snprintf(line, sizeof(line), "break %s/p", dir);
	snprintf(want, sizeof(want),
		 "cowlink: cannot break '%s/p': not a regular file\n", dir);
	check(run(line, err, sizeof(err)) == 1 && !strcmp(err, want),
	      "cmd_break_fifo_not_a_regular_file");

	/*
	 * changes needs no cowlinkfs: a clone by cp -al, whose names are
	 * then replaced, removed, added and chmod'ed as breaks would leave
	 * them (a break gives the name a new inode with the old times).
	 */
	check(!sh("mkdir %s/ch && cd %s/ch && mkdir -p p/d/e p/gone && printf a >p/a && "
		  "printf b >p/b && printf m >p/m && printf x >p/gone/x && "
		  "printf n >'p/n l' && ln -s a p/l && cp -al p c && "
		  "cp -p c/a c/t && echo more >>c/t && mv c/t c/a && "
		  "cp -p c/m c/t && chmod 600 c/t && mv c/t c/m && "
		  "rm -r c/gone && mkdir c/new && : >c/new/f && "
		  "ln -sfn b c/l && chmod 700 c/d/e && "
		  "mv 'c/n l' 'c/n\nl'", dir, dir),
	      "setup_changes_trees");
	snprintf(line, sizeof(line), "changes %s/ch/p %s/ch/c", dir, dir);
	ok = run_out(line, out, sizeof(out)) == 0 &&
	     !strcmp(out, "modified a\nmetadata d/e\nremoved gone\n"
		     "removed gone/x\nmodified l\nmetadata m\n"
		     "\\created n\\nl\nremoved n l\ncreated new\n"
		     "created new/f\n");
	if (!ok)
		printf("# got %s", out);
	check(ok, "cmd_changes_lists_breaks_creates_removes_metadata");
	snprintf(want, sizeof(want),
		 "cowlink: changes of '%s/ch/p': not on a cowlinkfs mount (no link there is copy-on-write)\n"
		 "cowlink: changes of '%s/ch/c': not on a cowlinkfs mount (no link there is copy-on-write)\n",
		 dir, dir);
	check(run(line, err, sizeof(err)) == 0 && !strcmp(err, want),
	      "cmd_changes_notes_not_on_cowlinkfs_once_per_operand_exit_0");
	snprintf(line, sizeof(line), "changes --json %s/ch/p %s/ch/c", dir, dir);
	ok = run_out(line, out, sizeof(out)) == 0 &&
	     strstr(out, "{\"path\": \"a\", \"change\": \"modified\", "
		    "\"type\": \"file\", \"what\": [\"inode\", \"size\", \"mtime\"]}") &&
	     strstr(out, "{\"path\": \"m\", \"change\": \"metadata\", "
		    "\"type\": \"file\", \"what\": [\"inode\", \"mode\"]}") &&
	     strstr(out, "{\"path\": \"n\\nl\", \"change\": \"created\"") &&
	     strstr(out, "\"modified\": 2,\n  \"created\": 3,\n"
		    "  \"removed\": 3,\n  \"metadata\": 2\n}\n");
	if (!ok)
		printf("# got %s", out);
	check(ok, "cmd_changes_json_says_what_differs");
	/*
	 * What a name holds is modified, whatever its times say; an mtime
	 * alone is metadata, for a file, a symlink and a FIFO alike, and a
	 * directory's is not compared.  Each file of the clone is given a
	 * new inode, as a break gives one, then changed or not.
	 */
	check(!sh("mkdir -p %s/cm/p/dir && cd %s/cm && for f in same hidden touched broken; do "
		  "printf abc >p/$f; done && ln -s same p/sl && mkfifo p/fifo && "
		  "cp -al p c && for f in same hidden touched broken; do "
		  "cp -p c/$f c/t && mv c/t c/$f; done && "
		  "for f in same hidden; do printf X | dd of=c/$f bs=1 seek=1 "
		  "conv=notrunc status=none && touch -r p/$f c/$f; done && "
		  "chmod 600 c/same && touch -d @1000000000 c/touched c/dir && "
		  "rm c/sl c/fifo && ln -s same c/sl && mkfifo c/fifo && "
		  "touch -h -d @1000000000 c/sl c/fifo", dir, dir),
	      "setup_changes_of_data_and_times");
	snprintf(line, sizeof(line), "changes %s/cm/p %s/cm/c", dir, dir);
	ok = run_out(line, out, sizeof(out)) == 0 &&
	     !strcmp(out, "metadata broken\nmetadata fifo\nmodified hidden\n"
		     "modified same\nmetadata sl\nmetadata touched\n");
	if (!ok)
		printf("# got %s", out);
	check(ok, "cmd_changes_modified_by_the_bytes_mtime_alone_is_metadata");
	snprintf(line, sizeof(line), "changes --json %s/cm/p %s/cm/c", dir, dir);
	ok = run_out(line, out, sizeof(out)) == 0 &&
	     strstr(out, "{\"path\": \"same\", \"change\": \"modified\", "
		    "\"type\": \"file\", \"what\": [\"inode\", \"mode\"]}") &&
	     strstr(out, "{\"path\": \"hidden\", \"change\": \"modified\", "
		    "\"type\": \"file\", \"what\": [\"inode\"]}") &&
	     strstr(out, "{\"path\": \"broken\", \"change\": \"metadata\", "
		    "\"type\": \"file\", \"what\": [\"inode\"]}") &&
	     strstr(out, "{\"path\": \"touched\", \"change\": \"metadata\", "
		    "\"type\": \"file\", \"what\": [\"inode\", \"mtime\"]}") &&
	     strstr(out, "{\"path\": \"sl\", \"change\": \"metadata\", "
		    "\"type\": \"symlink\", \"what\": [\"mtime\"]}") &&
	     strstr(out, "{\"path\": \"fifo\", \"change\": \"metadata\", "
		    "\"type\": \"fifo\", \"what\": [\"mtime\"]}");
	if (!ok)
		printf("# got %s", out);
	check(ok, "cmd_changes_json_of_data_and_times");
	snprintf(line, sizeof(line), "changes %s/ch/p %s/nonexistent", dir, dir);
	snprintf(want, sizeof(want),
		 "cowlink: cannot compare '%s/nonexistent': No such file or directory\n",
		 dir);
	check(run(line, err, sizeof(err)) == 1 && !strcmp(err, want),
	      "cmd_changes_missing_operand_dir_exit_1");
	tty_tests(dir);

	/* status: a directory is walked without -r, as du does */
	check(!sh("mkdir -p %s/s/sub", dir) && !sh("printf x >%s/s/sub/h1", dir) &&
	      !sh("ln %s/s/sub/h1 %s/s/h2", dir, dir) &&
	      !sh("printf y >%s/s/sub/bad\xff", dir) &&
	      !sh("ln %s/s/sub/bad\xff %s/s/sub/bad2\xfe", dir, dir),
	      "setup_status_tree");
	snprintf(line, sizeof(line), "status %s/s", dir);
	check(run_out(line, out, sizeof(out)) == 0 &&
	      strstr(out, "unprotected hard links (not COW): files: 2, names: 4\n"
		     "files shared: 0, names: 0, bytes saved: 0\n"),
	      "cmd_status_walks_a_directory_without_r");
	/* Off cowlinkfs no hard link is COW: never counted as saved. */
	snprintf(want, sizeof(want),
		 "cowlink: status of '%s/s': not on a cowlinkfs mount (no link there is copy-on-write)\n",
		 dir);
	check(run(line, err, sizeof(err)) == 0 && !strcmp(err, want),
	      "cmd_status_notes_not_on_cowlinkfs_once_exit_0");
	ok = run_out(line, out, sizeof(out)) == 0 &&
	     strstr(out, "--- 2 links  ") &&
	     (strstr(out, "/sub/bad'$'\\377'\n") ||
	      strstr(out, "/sub/bad2'$'\\376'\n"));
	check(ok, "cmd_status_lists_plain_links_apart_names_quoted");
	snprintf(line, sizeof(line), "status %s/s/sub %s/s", dir, dir);
	check(run(line, err, sizeof(err)) == 0 &&
	      !strncmp(err, "cowlink: status of ", 19) &&
	      strchr(err, '\n') && strchr(strchr(err, '\n') + 1, '\n') &&
	      run_out(line, out, sizeof(out)) == 0 &&
	      strstr(out, "(not COW): files: 2, names: 4\n"),
	      "cmd_status_overlapping_operands_counted_once_noted_each");
	snprintf(line, sizeof(line), "status %s/sl", dir);
	snprintf(want, sizeof(want),
		 "cowlink: cannot walk '%s/sl': is a symlink (not followed)\n", dir);
	check(run(line, err, sizeof(err)) == 1 && !strcmp(err, want),
	      "cmd_status_symlink_operand_not_followed");
	snprintf(line, sizeof(line), "status %s/p", dir);
	snprintf(want, sizeof(want),
		 "cowlink: cannot walk '%s/p': not a regular file or directory\n",
		 dir);
	check(run(line, err, sizeof(err)) == 1 && !strcmp(err, want) &&
	      run("status /dev/null", err, sizeof(err)) == 1 &&
	      !strcmp(err, "cowlink: cannot walk '/dev/null': not a regular file or directory\n"),
	      "cmd_status_special_file_operand_in_words");
	snprintf(line, sizeof(line), "status --json %s/s", dir);
	ok = run_out(line, out, sizeof(out)) == 0 &&
	     strstr(out, "\"files_shared\": 0,") &&
	     strstr(out, "\"bytes_saved\": 0,") &&
	     strstr(out, "\"unprotected_files\": 2,\n  \"unprotected_names\": 4,\n"
		    "  \"cow_mode_unknown\": []\n}\n") &&
	     strstr(out, "\"cow\": false, \"links\": 2,") &&
	     (strstr(out, "/bad\\udcff\"") || strstr(out, "/bad2\\udcfe\""));
	for (p = out; ok && *p; p++)
		ok = (unsigned char)*p < 0x80;
	check(ok, "cmd_status_json_escapes_odd_bytes_ascii_only");

	/* set --from reads what get writes */
	snprintf(line, sizeof(line), "%s/rec", dir);
	f = fopen(line, "w");
	fprintf(f, "\\cow %s/a\\nb\n\nbogus\n--- %s/f", dir, dir);
	fclose(f);
	snprintf(line, sizeof(line), "set --from=%s/rec", dir);
	snprintf(want, sizeof(want),
		 "cowlink: cannot set flag on '%s/a'$'\\n''b': No such file or directory\n"
		 "cowlink: %s/rec:3: not a 'cow PATH' or '--- PATH' record\n"
		 "cowlink: cannot clear flag of '%s/f': not on a cowlinkfs mount\n",
		 dir, dir, dir);
	check(run(line, err, sizeof(err)) == 1 && !strcmp(err, want),
	      "cmd_set_from_unescapes_and_names_bad_records");
	snprintf(line, sizeof(line), "%s/rec0", dir);
	f = fopen(line, "w");
	fprintf(f, "cow %s/f", dir);
	fputc('\0', f);
	fclose(f);
	snprintf(line, sizeof(line), "set --from=- -0 <%s/rec0", dir);
	snprintf(want, sizeof(want),
		 "cowlink: cannot set flag on '%s/f': not on a cowlinkfs mount\n",
		 dir);
	check(run(line, err, sizeof(err)) == 1 && !strcmp(err, want),
	      "cmd_set_from_stdin_null_records");

	/* nftw's FTW_NS and FTW_DNR: the errno of the failed call */
	ok = !sh("mkdir -p %s/w/x %s/w/y", dir, dir) && !sh("touch %s/w/x/f", dir);
	if (geteuid() == 0)
		ok = ok && !sh("chmod 755 %s", dir) &&
		     !sh("chown -R 65534:65534 %s/w", dir);
	ok = ok && !sh("chmod 600 %s/w/x", dir) && !sh("chmod 300 %s/w/y", dir) &&
	     !sh("cp ./cowlink %s/cowlink", dir);
	check(ok, "setup_unreadable_tree");
	/* As root, as nobody, with a copy nobody can run wherever we are. */
	snprintf(line, sizeof(line), "%s %s/cowlink status %s/w 2>&1 >/dev/null",
		 geteuid() ? "" : "setpriv --reuid=65534 --regid=65534 --clear-groups",
		 dir, dir);
	f = popen(line, "r");
	err[fread(err, 1, sizeof(err) - 1, f)] = '\0';
	ok = WEXITSTATUS(pclose(f)) == 1;
	snprintf(want, sizeof(want),
		 "cowlink: cannot access '%s/w/x/f': Permission denied\n", dir);
	ok = ok && strstr(err, want);
	snprintf(want, sizeof(want),
		 "cowlink: cannot read directory '%s/w/y': Permission denied\n", dir);
	check(ok && strstr(err, want), "cmd_walk_errors_say_what_failed");
	/* du counts a directory it cannot read, and what it cannot stat not. */
	snprintf(line, sizeof(line), "%s %s/cowlink du %%s/w",
		 geteuid() ? "" : "setpriv --reuid=65534 --regid=65534 --clear-groups",
		 dir);
	snprintf(want, sizeof(want), "%s du -s -B1 %%s/w",
		 geteuid() ? "" : "setpriv --reuid=65534 --regid=65534 --clear-groups");
	ok = run_out_is(dir, line, want, 1);
	strcat(line, "/y");
	strcat(want, "/y");
	check(ok && run_out_is(dir, line, want, 1),
	      "cmd_du_counts_an_unreadable_directory_as_du_does");
	snprintf(line, sizeof(line), "chmod -R u+rwx %s", dir);
	if (system(line))
		fails++;

	du_tests(dir);
	mount_point_tests(dir);
	snprintf(path2, sizeof(path2), "rm -rf %s", dir);
	if (system(path2))
		fails++;
	printf("1..%d\n%d passed, %d failed\n", n, n - fails, fails);
	return fails != 0;
}
