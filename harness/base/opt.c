/*
 * opt.c: usage messages and option values (opt.h).
 */
#include "harness/base/opt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/cpu/isa.h"
#include "kernels/err.h"

int lks_usage(const char *fmt, ...)
{
	char raw[2048], msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	lks_escape(msg, sizeof(msg), raw);  /* as lks_err: no raw control characters */
	fprintf(stderr, "lockstep: %s\n", msg);
	return LKS_EXIT_USAGE;
}

int lks_opt_int(const char *who, const char *opt, const char *val, int lo, int hi, int *out)
{
	char *end;
	long v;

	if (!val)
		return lks_usage("%s: %s needs a value", who, opt);
	v = strtol(val, &end, 10);
	if (end == val || *end || v < lo || v > hi)
		return lks_usage("%s: %s wants an integer in [%d, %d], not '%s'", who, opt, lo, hi, val);
	*out = (int)v;
	return 0;
}

int lks_opt_double(const char *who, const char *opt, const char *val, double lo, double hi,
                   double *out)
{
	char *end;
	double v;

	if (!val)
		return lks_usage("%s: %s needs a value", who, opt);
	v = strtod(val, &end);
	if (end == val || *end || !(v >= lo && v <= hi))
		return lks_usage("%s: %s wants a number in [%g, %g], not '%s'", who, opt, lo, hi, val);
	*out = v;
	return 0;
}

int lks_opt_path(const char *who, const char *opt, const char *val, const char **out)
{
	if (!val)
		return lks_usage("%s: %s needs a value", who, opt);
	if (!*val)
		return lks_usage("%s: %s wants a path, not ''", who, opt);
	*out = val;
	return 0;
}

int lks_opt_isa(const char *who, const char *val)
{
	lks_isa isa;

	if (!val)
		return lks_usage("%s: --isa needs a value", who);
	if (lks_isa_parse(val, &isa) || lks_isa_force(isa))
		return lks_usage("%s: %s", who, lks_errmsg());
	return 0;
}
