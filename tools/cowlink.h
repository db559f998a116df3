/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cowlink: command-line parsing and the output formats, kept apart from
 * the file system work so that they can be unit-tested on any host.
 */
#ifndef COWLINK_H
#define COWLINK_H

#include <stdio.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

enum cowlink_cmd {
	CMD_NONE, CMD_FLAG, CMD_CLONE, CMD_STATUS, CMD_DU, CMD_BREAK,
	CMD_CHANGES, CMD_DISCARD,
};

enum cowlink_flag_op { FLAG_GET, FLAG_SET, FLAG_CLEAR };

struct cowlink_args {
	enum cowlink_cmd cmd;
	enum cowlink_flag_op flag_op;
	const char *name;	/* the subcommand, or NULL */
	int help;		/* -h, --help: print the usage, exit 0 */
	int version;		/* -V, --version (before a subcommand) */
	int recursive;
	int verbose;
	int json;
	int null;		/* -0: records end with NUL, no escaping */
	int tty;		/* run(): stdout is a terminal, records quote names */
	int progress;
	const char *from;	/* set --from=FILE */
	int argc;		/* the operands */
	char **argv;
	const char *error;	/* the usage error, or NULL */
	char errbuf[256];
};

int cowlink_parse(int argc, char **argv, struct cowlink_args *args);
const char *cowlink_usage(const struct cowlink_args *args);

void cowlink_put_record(FILE *f, int cow, const char *path, int null,
			int tty);
void cowlink_put_change(FILE *f, const char *tag, const char *path, int null,
			int tty);
int cowlink_parse_record(char *rec, int null, char **path);
void cowlink_json_string(FILE *f, const char *s);

const char *cowlink_quote_n(int slot, const char *s, int always);

/* changes.c: cowlink changes PRISTINE CLONE, its exit status. */
int cowlink_changes(const struct cowlink_args *args);

/* discard.c: cowlink discard DIR..., its exit status. */
int cowlink_discard(const struct cowlink_args *args);

/*
 * cowlink.c, for changes.c and discard.c too: the exit status 1 once
 * anything failed; "cowlink: WHAT 'PATH': strerror(errno)", which sets
 * it; realloc() and strdup() or exit with a message; a copy of a path
 * without its trailing slashes; the note that the operand PATH, open as
 * FD, is not on a cowlinkfs mount, as status and du give it.
 */
struct stat;
extern int failed;
void warn_path(const char *what, const char *path);
void *xrealloc(void *p, size_t size);
char *xstrdup(const char *s);
char *strip_slashes(const char *path);
void note_off_cowlinkfs(int fd, const struct stat *st, const char *path);

/* A file name in a message, as coreutils writes it: 'name'. */
static inline const char *quote(const char *s)
{
	return cowlink_quote_n(0, s, 1);
}

/* The same, for a message naming two: slots 0 and 1. */
static inline const char *quote_n(int slot, const char *s)
{
	return cowlink_quote_n(slot, s, 1);
}

/* A file name in a listing: as it is, unless it needs quotes. */
static inline const char *quote_name(const char *s)
{
	return cowlink_quote_n(2, s, 0);
}

#endif
