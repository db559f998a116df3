// SPDX-License-Identifier: GPL-2.0
/*
 * cowlink: parse "SUBCOMMAND [OPTION]... OPERAND...", and the record and
 * JSON formats of its output.  Each subcommand takes only its own options.
 * A usage error is one line in args->error naming the word that is wrong,
 * as coreutils words it, for main() to print before "Try 'cowlink --help'"
 * (or "Try 'cowlink SUBCOMMAND --help'", once args->name is set).
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "cowlink.h"

/* Option bits, for the table of what each subcommand takes. */
#define O_REC	0x01
#define O_VERB	0x02
#define O_JSON	0x04
#define O_NULL	0x08
#define O_PROG	0x10
#define O_FROM	0x20

/* getopt values of the long-only options: above any byte, see below. */
enum { LONG_JSON = 256, LONG_PROGRESS, LONG_FROM };

static const char usage_main[] =
"Usage: cowlink COMMAND [OPTION]... OPERAND...\n"
"Manage copy-on-write links on a cowlinkfs mount.\n"
"\n"
"Commands:\n"
"  get [-R] [-0] PATH...            show the COW flag of each PATH\n"
"  set [-R] PATH...                 set the COW flag\n"
"  set --from=FILE [-0]             set and clear flags as 'get -R' listed them\n"
"  clear [-R] PATH...               clear the COW flag\n"
"  clone [-v] [--progress] SRC DST  clone the directory SRC as cow links\n"
"  status [--json] PATH...          list what is still shared, walking trees\n"
"  du PATH...                       bytes that deleting each PATH would free\n"
"  break [-R] [-v] FILE...          give each FILE its own copy now\n"
"  changes [--json] [-0] PRISTINE CLONE\n"
"                                   list what a clone changed, by inode\n"
"  discard DIR...                   remove each DIR, a clone, and all in it\n"
"\n"
"  -h, --help     display this help and exit\n"
"  -V, --version  output version information and exit\n"
"\n"
"'cowlink COMMAND --help' describes the options of COMMAND.\n"
"Exit status: 0 success, 1 an operation failed, 2 usage error.\n"
"Full documentation: cowlink(1), libcowlink(3), cowlinkfs(5).\n";

static const char usage_get[] =
"Usage: cowlink get [OPTION]... PATH...\n"
"Show the COW flag of each PATH: 'cow PATH' if it is set, '--- PATH' if not.\n"
"\n"
"  -R, -r, --recursive  walk directories (symlinks are not followed)\n"
"  -0, --null           end each record with NUL, not newline, and print\n"
"                       names as they are\n"
"  -h, --help           display this help and exit\n"
"\n"
"Without -0, a record whose name holds a backslash, newline or carriage\n"
"return starts with a backslash and has them as \\\\, \\n and \\r, as\n"
"sha256sum writes them.  'cowlink set --from' reads both forms back.\n"
"On a terminal, names are quoted instead, as 'cowlink status' lists them,\n"
"with -0 too.\n";

static const char usage_set[] =
"Usage: cowlink set [OPTION]... PATH...\n"
"  or:  cowlink set --from=FILE [-0]\n"
"Set the COW flag on regular files and directories (needs ownership or\n"
"CAP_FOWNER); what is created later in a flagged directory inherits it.\n"
"\n"
"  -R, -r, --recursive  walk directories (symlinks are not followed)\n"
"      --from=FILE      replay the records of 'cowlink get' read from FILE\n"
"                       ('-' for standard input): 'cow PATH' sets the flag,\n"
"                       '--- PATH' clears it\n"
"  -0, --null           the records in FILE end with NUL (get -0)\n"
"  -h, --help           display this help and exit\n";

static const char usage_clear[] =
"Usage: cowlink clear [OPTION]... PATH...\n"
"Clear the COW flag of regular files and directories (needs ownership or\n"
"CAP_FOWNER).\n"
"\n"
"  -R, -r, --recursive  walk directories (symlinks are not followed)\n"
"  -h, --help           display this help and exit\n";

static const char usage_clone[] =
"Usage: cowlink clone [OPTION]... SRC DST\n"
"Clone the directory SRC as the new directory DST on the same cowlinkfs\n"
"mount, as 'cp -a' would copy it: directories are made and flagged, with\n"
"the owner, mode, times, xattrs and ACLs of SRC's; regular files are\n"
"flagged and hard-linked; symlinks and special files are made again.\n"
"DST must not exist.\n"
"\n"
"  -v, --verbose   report every 1000 entries, and the total, on stdout\n"
"      --progress  show the count, rate and time left on stderr, if it is\n"
"                  a terminal\n"
"  -h, --help      display this help and exit\n";

static const char usage_status[] =
"Usage: cowlink status [OPTION]... PATH...\n"
"List the regular files that share their inode with other names, 'cow'\n"
"before a cow link and '---' before a plain hard link (not COW: a write\n"
"through one name changes every name), then the plain hard links' files\n"
"and names, then the cow links': files shared, names seen, bytes a full\n"
"copy would add.  A directory is walked whole, as du does.\n"
"\n"
"      --json           print one JSON object (its schema is in cowlink(1))\n"
"  -R, -r, --recursive  accepted for compatibility: directories are always\n"
"                       walked\n"
"  -h, --help           display this help and exit\n";

static const char usage_du[] =
"Usage: cowlink du [OPTION]... PATH...\n"
"Print the bytes that deleting each PATH would free: the space allocated\n"
"to the files and directories under it whose every name is under it.\n"
"A file that also has a name outside PATH, such as a file of a clone that\n"
"still shares its inode with the source, frees nothing.  'du -s -B1'\n"
"prints the whole, in the same format but for names, which cowlink quotes\n"
"as 'ls --quoting-style=shell-escape' does.\n"
"\n"
"  -h, --help  display this help and exit\n";

static const char usage_break[] =
"Usage: cowlink break [OPTION]... FILE...\n"
"Give each FILE, a cow link with other names, its own copy now, without\n"
"writing to it.  Needs read and write permission on FILE.\n"
"\n"
"  -R, -r, --recursive  break every cow link under each directory FILE,\n"
"                       links between two names in it too (symlinks are\n"
"                       not followed, mount points not crossed)\n"
"  -v, --verbose        print the old and the new inode number on stdout\n"
"  -h, --help           display this help and exit\n"
"\n"
"A FILE with a single link is left alone, with a note (in silence under\n"
"-R).  One not on a cowlinkfs mount, or not COW (no flag, on a cow=flag\n"
"mount), is an error.\n";

static const char usage_changes[] =
"Usage: cowlink changes [OPTION]... PRISTINE CLONE\n"
"List what differs in the tree CLONE, a clone of PRISTINE, from inode\n"
"sharing and metadata, reading the data of a regular file only if it no\n"
"longer shares the pristine name's inode and has kept its size:\n"
"\n"
"  modified  what a name holds differs: a regular file's bytes, a symlink's\n"
"            target, a device's numbers, the type\n"
"  created   a name only in CLONE (every name under a directory too)\n"
"  removed   a name only in PRISTINE (every name under a directory too)\n"
"  metadata  only the mode, owner, xattrs or mtime differ, or a regular\n"
"            file's inode alone (a link broken, nothing changed)\n"
"\n"
"A directory's mtime, which follows its names and the links broken in it,\n"
"and ctime, atime and link counts, which a clone changes, are not compared.\n"
"\n"
"One record 'CHANGE PATH' per name, PATH relative to the trees' tops\n"
"('.' for the tops themselves), sorted bytewise in each directory.\n"
"\n"
"      --json  print one JSON object (its schema is in cowlink(1))\n"
"  -0, --null  end each record with NUL, not newline, and print names as\n"
"              they are\n"
"  -h, --help  display this help and exit\n"
"\n"
"Without -0, a record whose name holds a backslash, newline or carriage\n"
"return starts with a backslash and has them as \\\\, \\n and \\r, as\n"
"'cowlink get' writes them.  On a terminal, names are quoted instead, as\n"
"'cowlink status' lists them, with -0 too.\n";

static const char usage_discard[] =
"Usage: cowlink discard [OPTION]... DIR...\n"
"Remove each directory DIR and everything under it, as\n"
"'rm -rf --one-file-system DIR' does, with up to two threads besides the\n"
"walk: the way to throw a clone away after a test run.  Any directory\n"
"can be given, on cowlinkfs or not; nothing is copied or broken.\n"
"\n"
"  -h, --help  display this help and exit\n"
"\n"
"A DIR that is a symlink, not a directory, a mount point, '.', '..' or\n"
"'/' is refused.\n"
"A mount point under DIR is neither entered nor removed, nor are the\n"
"directories above it; what is left is reported and the exit status is 1.\n";

static const struct {
	const char *name;
	enum cowlink_cmd cmd;
	enum cowlink_flag_op op;
	unsigned int opts;	/* O_* accepted */
	int min, max;		/* operand count; max 0 = unlimited */
	const char *usage;
} cmds[] = {
	{ "get", CMD_FLAG, FLAG_GET, O_REC | O_NULL, 1, 0, usage_get },
	{ "set", CMD_FLAG, FLAG_SET, O_REC | O_NULL | O_FROM, 1, 0, usage_set },
	{ "clear", CMD_FLAG, FLAG_CLEAR, O_REC, 1, 0, usage_clear },
	{ "clone", CMD_CLONE, FLAG_GET, O_VERB | O_PROG, 2, 2, usage_clone },
	{ "status", CMD_STATUS, FLAG_GET, O_REC | O_JSON, 1, 0, usage_status },
	{ "du", CMD_DU, FLAG_GET, 0, 1, 0, usage_du },
	{ "break", CMD_BREAK, FLAG_GET, O_REC | O_VERB, 1, 0, usage_break },
	{ "changes", CMD_CHANGES, FLAG_GET, O_JSON | O_NULL, 2, 2, usage_changes },
	{ "discard", CMD_DISCARD, FLAG_GET, 0, 1, 0, usage_discard },
};

#define N_CMDS ARRAY_SIZE(cmds)

static int usage_error(struct cowlink_args *args, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args->errbuf, sizeof(args->errbuf), fmt, ap);
	va_end(ap);
	args->error = args->errbuf;
	return -1;
}

/* The length of an option word without its "=VALUE". */
static int optlen(const char *word)
{
	return (int)strcspn(word, "=");
}

/* Is WORD a prefix of at least "--x" of LONG, as getopt_long allows? */
static int is_long(const char *word, const char *lng)
{
	size_t len = strlen(word);

	return len >= 3 && !strncmp(word, lng, len);
}

/* The options before a subcommand: --help and --version only. */
static int parse_global(char *word, struct cowlink_args *args)
{
	if (!strcmp(word, "-h") || is_long(word, "--help")) {
		args->help = 1;
		return 0;
	}
	if (!strcmp(word, "-V") || is_long(word, "--version")) {
		args->version = 1;
		return 0;
	}
	if (word[1] == '-')
		return usage_error(args, "unrecognized option '%.*s'",
				   optlen(word), word);
	return usage_error(args, "invalid option -- '%c'", word[1]);
}

int cowlink_parse(int argc, char **argv, struct cowlink_args *args)
{
	static const struct option opts[] = {
		{ "recursive", no_argument, NULL, 'R' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "null", no_argument, NULL, '0' },
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, LONG_JSON },
		{ "progress", no_argument, NULL, LONG_PROGRESS },
		{ "from", required_argument, NULL, LONG_FROM },
		{}
	};
	static const char shortopts[] = ":Rrv0h";
	unsigned int i, bit;
	int c, n, li;
	char word[64], null_word[64] = "";

	memset(args, 0, sizeof(*args));
	if (argc < 1)
		return usage_error(args, "missing subcommand");
	if (argv[0][0] == '-' && argv[0][1])
		return parse_global(argv[0], args);
	for (i = 0; i < N_CMDS; i++)
		if (!strcmp(argv[0], cmds[i].name))
			break;
	if (i == N_CMDS)
		return usage_error(args, "unknown subcommand %s",
				   quote(argv[0]));
	args->cmd = cmds[i].cmd;
	args->flag_op = cmds[i].op;
	args->name = cmds[i].name;

	/*
	 * Options may follow operands, as in coreutils ("--" ends them).
	 * optind = 0 restarts getopt on the subcommand's words; it takes
	 * argv[0], the subcommand, for the program name.
	 */
	optind = 0;
	opterr = 0;
	for (;;) {
		li = -1;
		c = getopt_long(argc, argv, shortopts, opts, &li);
		if (c == -1)
			break;
		if (li >= 0)
			snprintf(word, sizeof(word), "--%s", opts[li].name);
		else
			snprintf(word, sizeof(word), "-%c", c);
		switch (c) {
		case 'h':
			args->help = 1;
			return 0;
		case 'R':
		case 'r':
			bit = O_REC;
			args->recursive = 1;
			break;
		case 'v':
			bit = O_VERB;
			args->verbose = 1;
			break;
		case '0':
			bit = O_NULL;
			args->null = 1;
			strcpy(null_word, word);
			break;
		case LONG_JSON:
			bit = O_JSON;
			args->json = 1;
			break;
		case LONG_PROGRESS:
			bit = O_PROG;
			args->progress = 1;
			break;
		case LONG_FROM:
			bit = O_FROM;
			args->from = optarg;
			break;
		case ':':
			return usage_error(args, "option '%.*s' requires an argument",
					   optlen(argv[optind - 1]),
					   argv[optind - 1]);
		default:
			/*
			 * optopt is 0 for an unknown long option, the option's
			 * value for "--json=x", and the byte for an unknown
			 * short option: the long-only values are above any
			 * byte so that "-j" is not taken for "--json=x".
			 */
			if (!optopt)
				return usage_error(args, "unrecognized option '%.*s'",
						   optlen(argv[optind - 1]),
						   argv[optind - 1]);
			if (optopt > 255 || strchr(shortopts + 1, optopt))
				return usage_error(args, "option '%.*s' doesn't allow an argument",
						   optlen(argv[optind - 1]),
						   argv[optind - 1]);
			return usage_error(args, "invalid option -- '%c'", optopt);
		}
		if (!(cmds[i].opts & bit))
			return usage_error(args, "invalid option '%s' for '%s'",
					   word, cmds[i].name);
	}
	n = argc - optind;
	args->argc = n;
	args->argv = argv + optind;
	if (args->from) {
		if (args->recursive)
			return usage_error(args,
				"options '--from' and '--recursive' are mutually exclusive");
		if (n > 0)
			return usage_error(args, "extra operand %s",
					    quote(args->argv[0]));
		return 0;
	}
	if (args->null && args->json)
		return usage_error(args,
			"options '--json' and '%s' are mutually exclusive",
			null_word);
	if (args->null && args->flag_op == FLAG_SET)
		return usage_error(args, "option '%s' requires '--from'",
				   null_word);
	if (n < cmds[i].min) {
		if (n == 1 && args->cmd == CMD_CLONE)
			return usage_error(args, "missing destination operand after %s",
					   quote(args->argv[0]));
		return usage_error(args, "missing operand");
	}
	if (cmds[i].max && n > cmds[i].max)
		return usage_error(args, "extra operand %s",
				   quote(args->argv[cmds[i].max]));
	return 0;
}

/* The help of the subcommand ARGS names, or of cowlink itself. */
const char *cowlink_usage(const struct cowlink_args *args)
{
	unsigned int i;

	for (i = 0; args->name && i < N_CMDS; i++)
		if (!strcmp(args->name, cmds[i].name))
			return cmds[i].usage;
	return usage_main;
}

/*
 * One record of "cowlink get": "cow PATH" or "--- PATH".  A name holding
 * a backslash, newline or carriage return would make the line ambiguous,
 * so, as sha256sum does, the record then starts with a backslash and has
 * them as \\, \n and \r.  With -0 records end with NUL and names are
 * printed as they are: nothing else can be in a name.
 *
 * That is the form for scripts, and set --from.  On a terminal (@tty),
 * where an escape sequence or a byte that is no character would reach
 * the screen as it is, the name is quoted as status lists names, with -0
 * too: as ls quotes names on a terminal and not in a pipe.
 */
void cowlink_put_record(FILE *f, int cow, const char *path, int null, int tty)
{
	cowlink_put_change(f, cow ? "cow" : "---", path, null, tty);
}

/* A record "TAG PATH" of any listing, as cowlink_put_record() writes it. */
void cowlink_put_change(FILE *f, const char *tag, const char *path, int null,
			int tty)
{
	if (tty) {
		fprintf(f, "%s %s%c", tag, quote_name(path), null ? '\0' : '\n');
		return;
	}
	if (null || !strpbrk(path, "\\\n\r")) {
		fprintf(f, "%s %s%c", tag, path, null ? '\0' : '\n');
		return;
	}
	fprintf(f, "\\%s ", tag);
	for (; *path; path++) {
		if (*path == '\\')
			fputs("\\\\", f);
		else if (*path == '\n')
			fputs("\\n", f);
		else if (*path == '\r')
			fputs("\\r", f);
		else
			fputc(*path, f);
	}
	fputc('\n', f);
}

/*
 * Read back one record (without its terminator) in place: 1 for "cow",
 * 0 for "---", -1 if it is neither or its escapes are not ours.  *PATH
 * points into REC.
 */
int cowlink_parse_record(char *rec, int null, char **path)
{
	char *r, *w;
	int cow;

	if (!null && rec[0] == '\\') {
		for (r = w = ++rec; *r; r++, w++) {
			if (*r != '\\') {
				*w = *r;
				continue;
			}
			switch (*++r) {
			case '\\':
				*w = '\\';
				break;
			case 'n':
				*w = '\n';
				break;
			case 'r':
				*w = '\r';
				break;
			default:
				return -1;
			}
		}
		*w = '\0';
	}
	if (!strncmp(rec, "cow ", 4))
		cow = 1;
	else if (!strncmp(rec, "--- ", 4))
		cow = 0;
	else
		return -1;
	if (!rec[4])
		return -1;
	*path = rec + 4;
	return cow;
}

/*
 * The length of the well-formed UTF-8 sequence at S (RFC 3629: no
 * overlong forms, no surrogates, nothing above U+10FFFF), or 0.  A NUL
 * is never a continuation byte, so this does not read past the string.
 */
static int utf8_len(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		if (s[0] == 0xe0)
			lo = 0xa0;
		if (s[0] == 0xed)
			hi = 0x9f;
		return s[1] >= lo && s[1] <= hi &&
		       (s[2] & 0xc0) == 0x80 ? 3 : 0;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		if (s[0] == 0xf0)
			lo = 0x90;
		if (s[0] == 0xf4)
			hi = 0x8f;
		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 &&
		       (s[3] & 0xc0) == 0x80 ? 4 : 0;
	}
	return 0;
}

/*
 * S as a JSON string.  File names are bytes, JSON text is UTF-8: a byte
 * that is not part of well-formed UTF-8 is written as \udcXX, the lone
 * surrogate of Python's "surrogateescape" (PEP 383), so the output stays
 * valid UTF-8 and the name can be recovered exactly (os.fsencode()).
 */
void cowlink_json_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int len;

	fputc('"', f);
	while (*p) {
		len = utf8_len(p);
		if (!len)
			fprintf(f, "\\udc%02x", *p);
		else if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p == '\t')
			fputs("\\t", f);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else
			fwrite(p, 1, len, f);
		p += len ? len : 1;
	}
	fputc('"', f);
}
