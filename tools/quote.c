// SPDX-License-Identifier: GPL-2.0
/*
 * File names as coreutils shows them (gnulib's quotearg, shell-escape
 * styles): a name is bytes, and one holding a newline, an escape sequence
 * or bytes that are no character of the locale must neither split a line
 * nor reach the terminal as it is.  The result can be pasted into a shell:
 *
 *	plain		plain ('plain' in a message)
 *	a b		'a b'
 *	it's		"it's"
 *	a<NL>b		'a'$'\n''b'
 *	bad<0xff>	'bad'$'\377'
 *
 * Characters the locale (LC_CTYPE) calls printable are kept: in a UTF-8
 * locale "é" is written as it is, in the C locale as $'\303\251'.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <wctype.h>
#include "cowlink.h"

struct qbuf {
	char *s;
	size_t len, size;
};

static void qput(struct qbuf *q, const char *p, size_t n)
{
	if (q->len + n + 1 > q->size) {
		q->size = (q->len + n + 1) * 2;
		q->s = realloc(q->s, q->size);
		if (!q->s)
			abort();	/* a message cannot be made: no way on */
	}
	memcpy(q->s + q->len, p, n);
	q->len += n;
	q->s[q->len] = '\0';
}

static void qputs(struct qbuf *q, const char *p)
{
	qput(q, p, strlen(p));
}

/* The length of the character at S, and if it is printable in *PRINT. */
static size_t char_at(const char *s, int *print)
{
	mbstate_t ps;
	wchar_t wc;
	size_t len;

	memset(&ps, 0, sizeof(ps));
	len = mbrtowc(&wc, s, strnlen(s, MB_LEN_MAX), &ps);
	if (len == (size_t)-1 || len == (size_t)-2 || len == 0) {
		*print = 0;		/* a byte that is no character */
		return 1;
	}
	*print = iswprint(wc);
	return len;
}

/* A character the shell would take for syntax, anywhere in a word. */
static int shell_special(char c)
{
	return c && strchr(" !\"$&'()*;<=>?[\\^`|", c);
}

/* Does S need quotes to be read back as one word by a shell? */
static int needs_quotes(const char *s)
{
	size_t len;
	int print;

	if (!*s || *s == '#' || *s == '~')
		return 1;
	/* A brace alone is a reserved word, as gnulib's quotearg has it. */
	if ((*s == '{' || *s == '}') && !s[1])
		return 1;
	for (; *s; s += len) {
		len = char_at(s, &print);
		if (!print || shell_special(*s))
			return 1;
	}
	return 0;
}

/* Can S go between double quotes as it is, as "it's" does? */
static int double_quotable(const char *s)
{
	size_t len;
	int print;

	if (!strchr(s, '\''))
		return 0;
	for (; *s; s += len) {
		len = char_at(s, &print);
		if (!print || strchr("\"$`\\!", *s))
			return 0;
	}
	return 1;
}

/* One byte of a character that is not printable, inside $'...'. */
static void put_escape(struct qbuf *q, unsigned char c)
{
	static const char letters[] = "\aa\bb\ff\nn\rr\tt\vv";
	const char *l = c ? memchr(letters, c, sizeof(letters) - 1) : NULL;
	char buf[8];

	if (l && (l - letters) % 2 == 0) {
		buf[0] = '\\';
		buf[1] = l[1];
		buf[2] = '\0';
	} else {
		buf[0] = '\\';
		buf[1] = '0' + (c >> 6);
		buf[2] = '0' + ((c >> 3) & 7);
		buf[3] = '0' + (c & 7);
		buf[4] = '\0';
	}
	qputs(q, buf);
}

/*
 * 'S', with each run of characters that are not printable closed out of
 * the single quotes as $'...', and each ' as '\''.
 */
static void single_quote(struct qbuf *q, const char *s)
{
	int in_dollar = 0, print;
	size_t len, i;

	qputs(q, "'");
	for (; *s; s += len) {
		len = char_at(s, &print);
		if (!print) {
			if (!in_dollar)
				qputs(q, "'$'");
			in_dollar = 1;
			for (i = 0; i < len; i++)
				put_escape(q, s[i]);
			continue;
		}
		if (in_dollar)
			qputs(q, "''");
		in_dollar = 0;
		if (*s == '\'')
			qputs(q, "'\\''");
		else
			qput(q, s, len);
	}
	qputs(q, "'");
}

/*
 * S quoted in buffer SLOT (0 to 3), which the next call with that slot
 * reuses: as a message names a file (ALWAYS, shell-escape-always), or as
 * a listing does (shell-escape: plain names are left as they are).
 */
const char *cowlink_quote_n(int slot, const char *s, int always)
{
	static struct qbuf bufs[4];
	struct qbuf *q = &bufs[slot & 3];

	q->len = 0;
	qput(q, "", 0);
	if (!always && !needs_quotes(s)) {
		qputs(q, s);
	} else if (double_quotable(s)) {
		qputs(q, "\"");
		qputs(q, s);
		qputs(q, "\"");
	} else {
		single_quote(q, s);
	}
	return q->s;
}
