// SPDX-License-Identifier: GPL-2.0
/*
 * cowlink: parse "SUBCOMMAND [OPTIONS] OPERANDS...".  Each subcommand takes
 * only its own options; errors are reported through args->error.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <string.h>
#include "cowlink.h"

static const struct {
	const char *name;
	enum cowlink_cmd cmd;
	enum cowlink_flag_op op;
	const char *shortopts;	/* accepted options */
	int min, max;		/* operand count; max 0 = unlimited */
} cmds[] = {
	{ "get", CMD_FLAG, FLAG_GET, "Rr", 1, 0 },
	{ "set", CMD_FLAG, FLAG_SET, "Rr", 1, 0 },
	{ "clear", CMD_FLAG, FLAG_CLEAR, "Rr", 1, 0 },
	{ "clone", CMD_CLONE, FLAG_GET, "v", 2, 2 },
	{ "status", CMD_STATUS, FLAG_GET, "Rrj", 1, 0 },
	{ "break", CMD_BREAK, FLAG_GET, "v", 1, 0 },
};

int cowlink_parse(int argc, char **argv, struct cowlink_args *args)
{
	static const struct option opts[] = {
		{ "recursive", no_argument, NULL, 'R' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "json", no_argument, NULL, 'j' },
		{}
	};
	unsigned int i;
	int c, n;

	memset(args, 0, sizeof(*args));
	if (argc < 1) {
		args->error = "missing subcommand";
		return -1;
	}
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[0], cmds[i].name))
			break;
	if (i == sizeof(cmds) / sizeof(cmds[0])) {
		args->error = "unknown subcommand";
		return -1;
	}
	args->cmd = cmds[i].cmd;
	args->flag_op = cmds[i].op;

	optind = 0;		/* restart getopt on the subcommand's words */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+Rrvj", opts, NULL)) != -1) {
		if (c == '?' || !strchr(cmds[i].shortopts, c)) {
			args->error = "option not valid for this subcommand";
			return -1;
		}
		if (c == 'R' || c == 'r')
			args->recursive = 1;
		else if (c == 'v')
			args->verbose = 1;
		else
			args->json = 1;
	}
	n = argc - optind;
	if (n < cmds[i].min || (cmds[i].max && n > cmds[i].max)) {
		args->error = n < cmds[i].min ? "missing operand" : "extra operand";
		return -1;
	}
	args->argc = n;
	args->argv = argv + optind;
	return 0;
}
