/* err.c: per-thread last error message (see err.h). */
#include "kernels/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char lks_errbuf[1024];

int lks_err(const char *fmt, ...)
{
	char msg[sizeof(lks_errbuf)];
	va_list ap;

	/* formatted aside first: an argument may be lks_errmsg() itself, which wraps a
	   message ("run 'x': %s") */
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	memcpy(lks_errbuf, msg, sizeof(msg));
	return -1;
}

const char *lks_errmsg(void)
{
	return lks_errbuf[0] ? lks_errbuf : "unknown error";
}
