/* err.c: per-thread last error message (see err.h). */
#include "kernels/err.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char lks_errbuf[1024];

int lks_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(lks_errbuf, sizeof(lks_errbuf), fmt, ap);
	va_end(ap);
	return -1;
}

const char *lks_errmsg(void)
{
	return lks_errbuf[0] ? lks_errbuf : "unknown error";
}
