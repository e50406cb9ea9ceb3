/* err.c: per-thread last error message (see err.h). */
#include "kernels/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char lks_errbuf[1024];

size_t lks_escape(char *dst, size_t size, const char *src)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;

	for (; *src; src++) {
		unsigned char ch = (unsigned char)*src;
		char esc[5] = { (char)ch, 0 };

		if (ch < 0x20 || ch == 0x7f) {
			esc[0] = '\\';
			esc[1] = 'x';
			esc[2] = hex[ch >> 4];
			esc[3] = hex[ch & 15];
		}
		for (const char *e = esc; *e; e++, n++)
			if (n + 1 < size)
				dst[n] = *e;
	}
	if (size)
		dst[n < size ? n : size - 1] = 0;
	return n;
}

int lks_err(const char *fmt, ...)
{
	char raw[sizeof(lks_errbuf)];
	va_list ap;

	/* formatted aside first: an argument may be lks_errmsg() itself, which wraps a
	   message ("run 'x': %s") */
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	lks_escape(lks_errbuf, sizeof(lks_errbuf), raw);
	return -1;
}

const char *lks_errmsg(void)
{
	return lks_errbuf[0] ? lks_errbuf : "unknown error";
}
