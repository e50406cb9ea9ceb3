/*
 * import_number.c: numbers as logs write them (import.h): Clinger's fast path where it reads
 * a decimal exactly, with the decimal kept for the block codec, else strtod; a step; why a
 * number no double holds is refused.
 */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness/import/import.h"

size_t lks_import_number_prefix(const char *s, size_t n, int commas, double *out)
{
	int64_t dec;

	return lks_import_decimal_prefix(s, n, commas, out, &dec);
}

size_t lks_import_decimal_prefix(const char *s, size_t n, int commas, double *out,
                                 int64_t *dec)
{
	uint64_t m = 0;
	int e = 0, digits = 0, ex = 0, exneg = 0;
	size_t i = n > 0 && s[0] == '-';

#if FLT_EVAL_METHOD != 0
	return 0;  /* the product or quotient might be rounded twice */
#endif
	for (; i < n; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (d < 10) {
			m = m * 10 + d;
			digits++;
		} else if (!(commas && s[i] == ',' && digits && i + 1 < n
		             && (unsigned)(s[i + 1] - '0') < 10)) {
			break;
		}
	}
	if (i < n && s[i] == '.')
		for (i++; i < n && (unsigned)(s[i] - '0') < 10; i++, digits++, e--)
			m = m * 10 + (uint64_t)(s[i] - '0');
	if (digits == 0 || digits > 15)  /* 15 digits: m < 10^15 < 2^53 */
		return 0;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		size_t d;

		if (++i < n && (s[i] == '+' || s[i] == '-'))
			exneg = s[i++] == '-';
		for (d = i; i < n && (unsigned)(s[i] - '0') < 10 && ex < 1000; i++)
			ex = ex * 10 + (s[i] - '0');
		if (i == d)
			return 0;
		e += exneg ? -ex : ex;
	}
	if (e < -22 || e > 22)
		return 0;
	*out = e < 0 ? (double)m / lks_import_pow10[-e] : (double)m * lks_import_pow10[e];
	/* the layout's m / 10^d is this one division (d 0: m itself); -m / 10^d is exactly
	   its negation, rounding to nearest being symmetric */
	*dec = e <= 0 && e >= -14 && !(m == 0 && s[0] == '-')
	       ? (int64_t)((uint64_t)(s[0] == '-' ? -(int64_t)m : (int64_t)m) << 4) | -e
	       : LKS_IMPORT_NO_DEC;
	if (s[0] == '-')
		*out = -*out;
	return i;
}

int64_t lks_import_shortest_dec(double v)
{
	const double limit = 1e15;  /* 15 digits, as the decimals a text's reader keeps */

	if (!(fabs(v) < limit) || (v == 0 && signbit(v)))
		return LKS_IMPORT_NO_DEC;
	for (int d = 0; d <= 14; d++) {
		double r = nearbyint(v * lks_import_pow10[d]);

		if (fabs(r) >= limit)
			break;
		if ((d ? r / lks_import_pow10[d] : r) == v)
			return (int64_t)((uint64_t)(int64_t)r << 4) | d;
	}
	return LKS_IMPORT_NO_DEC;
}

int64_t lks_import_dec_widen(int64_t dec, int frac)
{
	int have = (int)(dec & 15);
	int64_t m = dec >> 4;  /* arithmetic: the mantissa's sign kept */

	if (dec == LKS_IMPORT_NO_DEC || frac <= have || frac > 14)
		return dec;
	for (; have < frac; have++) {
		if (m > 99999999999999 || m < -99999999999999)  /* a 16th digit */
			return dec;
		m *= 10;
	}
	return (int64_t)((uint64_t)m << 4) | frac;
}

int64_t lks_import_dec_sig(int64_t dec, double v, int sig)
{
	double a = fabs(v);
	int e = 0;  /* floor(log10 |v|), by steps of ten: exact for the few a log prints */

	/* a whole number with no point: written whole (NeMo prints a whole float as an int) */
	if (dec == LKS_IMPORT_NO_DEC || (dec & 15) == 0 || a == 0 || !isfinite(a))
		return dec;
	for (; a >= 10 && e < 400; a /= 10)
		e++;
	for (; a < 1 && e > -400; a *= 10)
		e--;
	return sig - 1 - e > 0 ? lks_import_dec_widen(dec, sig - 1 - e) : dec;
}

int lks_import_number(const char *s, size_t len, int commas, double *out)
{
	int64_t dec;

	return lks_import_number_dec(s, len, commas, out, &dec);
}

int lks_import_number_dec(const char *s, size_t len, int commas, double *out, int64_t *dec)
{
	char small[128], *buf = small, *end;  /* a number of any length: jsonl's are */
	size_t n = 0;
	int rc = -1;

	*dec = LKS_IMPORT_NO_DEC;
	if (len == 0)
		return -1;
	if (lks_import_decimal_prefix(s, len, commas, out, dec) == len)
		return 0;
	*dec = LKS_IMPORT_NO_DEC;
	if (len >= sizeof(small) && !(buf = malloc(len + 1)))
		return -1;
	for (size_t i = 0; i < len; i++) {
		/* a separator only between digits: 3,502 but not ,3 or 3, */
		if (commas && s[i] == ',' && i > 0 && i + 1 < len && isdigit((unsigned char)s[i - 1])
		    && isdigit((unsigned char)s[i + 1]))
			continue;
		buf[n++] = s[i];
	}
	buf[n] = 0;
	/* strtod also takes hex floats and leading blanks; neither is a log's number */
	if (isspace((unsigned char)buf[0]) || strchr(buf, 'x') || strchr(buf, 'X'))
		goto out;
	errno = 0;
	*out = strtod(buf, &end);
	if (end != buf + n)
		goto out;
	/* ERANGE: an overflow (+-inf) or an underflow to 0 is refused (import.h); an underflow
	   to a subnormal is a double's value as its shortest form prints it ("5e-324") */
	rc = errno != ERANGE ? 0 : *out > 1 || *out < -1 ? LKS_IMPORT_NUMBER_OVER
	     : *out == 0 ? LKS_IMPORT_NUMBER_UNDER : 0;
out:
	if (buf != small)
		free(buf);
	return rc;
}

const char *lks_import_number_why(int answer)
{
	if (answer == LKS_IMPORT_NUMBER_OVER)
		return ": over the largest double (1.8e+308), it would read as an infinity, which a "
		       "logged double prints as 'inf'";
	if (answer == LKS_IMPORT_NUMBER_UNDER)
		return ": not 0 but nearer 0 than the least double (4.9e-324), it would read as 0, "
		       "which a logged double prints as '0'";
	return "";
}

int lks_import_step(const char *s, size_t len, int *step)
{
	int64_t v = 0;

	if (len == 0)
		return -1;
	for (size_t i = 0; i < len; i++)
		if (!isdigit((unsigned char)s[i]))
			return -1;
	for (size_t i = 0; i < len; i++)
		if ((v = v * 10 + (s[i] - '0')) > LKS_IMPORT_MAX_STEP)
			return LKS_IMPORT_NUMBER_OVER;  /* no further: v stays under 2^35 */
	*step = (int)v;
	return 0;
}
