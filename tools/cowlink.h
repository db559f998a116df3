/* SPDX-License-Identifier: GPL-2.0 */
/* cowlink: command-line parsing, kept apart so it can be unit-tested. */
#ifndef COWLINK_H
#define COWLINK_H

enum cowlink_cmd { CMD_FLAG, CMD_CLONE, CMD_STATUS, CMD_BREAK };
enum cowlink_flag_op { FLAG_GET, FLAG_SET, FLAG_CLEAR };

struct cowlink_args {
	enum cowlink_cmd cmd;
	enum cowlink_flag_op flag_op;
	int recursive;
	int verbose;
	int json;
	int argc;		/* the PATH operands */
	char **argv;
	const char *error;	/* why parsing failed, or NULL */
};

int cowlink_parse(int argc, char **argv, struct cowlink_args *args);

#endif
