/*
 * printed.c: a value's precision as printed, and agreement at it (printed.h). Digits are
 * compared as printf writes them ("%.*f" rounds the exact binary value correctly on glibc,
 * as Python's format does), never through a tolerance: "agree at 4 decimals" means the
 * same 4-decimal text.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/verify/printed.h"

int lks_printed_common(int pa, int pb)
{
	if (pa && pb)
		return (pa < pb ? pa : pb) - 1;
	return pa ? pa - 1 : pb ? pb - 1 : -1;
}

/* v's text at d decimals into buf, a negative zero written as zero ("-0.0000" is the
   text of a tiny negative value, and it agrees with "0.0000"). */
static void lks_text_at(char *buf, size_t size, double v, int d)
{
	const char *p;

	snprintf(buf, size, "%.*f", d, v);
	for (p = buf + (*buf == '-'); *p == '0' || *p == '.'; p++)
		;
	if (*buf == '-' && !*p)
		memmove(buf, buf + 1, strlen(buf));
}

/* The digits of v's d-decimal text as an integer (a printed value has at most 15, the
   short form's: it fits), its sign kept. */
static int64_t lks_digits_at(double v, int d)
{
	char buf[64], *q = buf;

	snprintf(buf, sizeof(buf), "%.*f", d, v);
	for (const char *p = buf; *p; p++)
		if (*p != '.')
			*q++ = *p;
	*q = 0;
	return strtoll(buf, NULL, 10);
}

int lks_printed_agree(double a, int pa, double b, int pb)
{
	int d = lks_printed_common(pa, pb), pf, pc;
	double fine, coarse;
	char ta[400], tb[400];

	if (!isfinite(a) || !isfinite(b) || d < 0)
		return isnan(a) ? isnan(b) : !memcmp(&a, &b, sizeof(a));
	/* the coarser side is one printed with d decimals; the other, fine, is finer or alike */
	if (pa && pa - 1 == d) {
		coarse = a, pc = pa, fine = b, pf = pb;
	} else {
		coarse = b, pc = pb, fine = a, pf = pa;
	}
	if (!pf || pf == pc) {  /* full precision, or the same decimals: the text at d */
		lks_text_at(ta, sizeof(ta), fine, d);
		lks_text_at(tb, sizeof(tb), coarse, d);
		return !strcmp(ta, tb);
	}
	{
		int64_t mf = lks_digits_at(fine, pf - 1), mc = lks_digits_at(coarse, d), q = 1;
		int64_t sign = mf < 0 ? -1 : 1, lo = (mf < 0 ? -mf : mf), rem;

		for (int k = d; k < pf - 1; k++)
			q *= 10;
		rem = lo % q;
		lo /= q;
		/* the fine digits rounded to d, by magnitude, with fine's sign (a zero has none) */
		return 2 * rem < q ? mc == sign * lo : 2 * rem > q ? mc == sign * (lo + 1)
		       : mc == sign * lo || mc == sign * (lo + 1);
	}
}

void lks_printed_words(char *buf, size_t size, int dmin, int dmax)
{
	if (dmin == dmax)
		snprintf(buf, size, "%d decimal%s", dmin, dmin == 1 ? "" : "s");
	else
		snprintf(buf, size, "%d to %d decimals", dmin, dmax);
}

void lks_printed_side(char *buf, size_t size, int printed)
{
	char w[32];

	if (!printed) {
		snprintf(buf, size, "at full precision");
		return;
	}
	lks_printed_words(w, sizeof(w), printed - 1, printed - 1);
	snprintf(buf, size, "printed to %s", w);
}
