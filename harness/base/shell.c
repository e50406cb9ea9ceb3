/* shell.c: quoting words of printed commands for a POSIX shell (see shell.h). */
#include "harness/base/shell.h"

#include <stdio.h>
#include <string.h>

static int lks_shell_plain(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')
		      || strchr("_-./,:=+@%", *s)))
			return 0;
	return 1;
}

static int lks_shell_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

const char *lks_shell_quote(const char *s, char *buf, size_t size)
{
	int dollar = lks_shell_control(s);
	size_t n = 0;

	if (size < 8) {
		if (size)
			buf[0] = 0;
		return buf;
	}
	if (lks_shell_plain(s)) {
		snprintf(buf, size, "%s", s);
		return buf;
	}
	if (dollar)
		buf[n++] = '$';
	buf[n++] = '\'';
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		char piece[8];

		if (!dollar && ch == '\'')
			snprintf(piece, sizeof(piece), "'\\''");
		else if (dollar && (ch < 0x20 || ch == 0x7f))
			snprintf(piece, sizeof(piece), "\\x%02x", ch);
		else if (dollar && (ch == '\'' || ch == '\\'))
			snprintf(piece, sizeof(piece), "\\%c", ch);
		else
			snprintf(piece, sizeof(piece), "%c", ch);
		if (n + strlen(piece) + 2 > size)  /* room for the closing quote and the NUL */
			break;
		memcpy(buf + n, piece, strlen(piece));
		n += strlen(piece);
	}
	buf[n++] = '\'';
	buf[n] = 0;
	return buf;
}
