/* name.c: the name rule for cases, runs, checks and combos, and lists of names (see
   name.h). */
#include "harness/base/name.h"

#include <stdio.h>

#include "kernels/err.h"

static int lks_name_char(char ch, int first)
{
	if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')
	    || ch == '_')
		return 1;
	return !first && (ch == '-' || ch == '.' || ch == '+');
}

int lks_name_check(const char *what, const char *s, size_t len)
{
	int ok = len > 0 && len <= LKS_NAME_RULE_MAX;

	for (size_t i = 0; ok && i < len; i++)
		ok = s[i] && lks_name_char(s[i], i == 0);
	if (ok)
		return 0;
	return lks_err("bad %s name '%.*s': want 1 to %d letters, digits, '_', '-', '.' or '+', "
	               "starting with a letter, a digit or '_'", what,
	               (int)(len > 200 ? 200 : len), s, LKS_NAME_RULE_MAX);
}

const char *lks_names_join(const void *rows, size_t stride, size_t off, int n, char *buf,
                           size_t size)
{
	size_t len = 0;

	buf[0] = 0;
	for (int i = 0; n < 0 || i < n; i++) {
		const char *name = *(const char *const *)((const char *)rows + (size_t)i * stride + off);

		if (!name)
			break;
		len += (size_t)snprintf(buf + len, len < size ? size - len : 0, "%s%s", i ? ", " : "",
		                        name);
	}
	return buf;
}
