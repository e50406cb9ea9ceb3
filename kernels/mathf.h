/*
 * mathf.h: exp, log and cos(pi x) with one fixed sequence of IEEE operations.
 *
 * libm's expf/logf/cos may differ in the last bit between library versions, between the
 * FMA and non-FMA variants glibc picks at run time, and between CPU and GPU. lockstep's
 * reference must not, so the few transcendental functions the model needs are written
 * here with range reduction and polynomials in double using only +, -, *, / and exact
 * scaling (no fma, no contraction: -ffp-contract=off), which every IEEE machine evaluates
 * identically. Accuracy is near double precision (a few ulp of double), far more than the
 * float32 results need. Compiles as CUDA C too.
 */
#ifndef LKS_KERNELS_MATHF_H
#define LKS_KERNELS_MATHF_H

#include <math.h>
#include <stdint.h>

#include "kernels/hd.h"

/* e^x for |x| < 700; e^x rounds to 0 below -700 and the caller never goes above. */
static inline LKS_HD double lks_exp(double x)
{
	const double ln2_hi = 6.93147180369123816490e-01;  /* ln 2 with trailing zeros */
	const double ln2_lo = 1.90821492927058770002e-10;
	double n, r, p;

	if (x < -700.0)
		return 0.0;
	n = floor(x * 1.44269504088896338700 + 0.5);  /* nearest integer to x / ln 2 */
	r = (x - n * ln2_hi) - n * ln2_lo;           /* |r| <= 0.35 */
	/* Taylor series to r^13: the next term is below 0.35^14 / 14! ~ 5e-18 */
	p = 1.0 / 6227020800.0;
	p = p * r + 1.0 / 479001600.0;
	p = p * r + 1.0 / 39916800.0;
	p = p * r + 1.0 / 3628800.0;
	p = p * r + 1.0 / 362880.0;
	p = p * r + 1.0 / 40320.0;
	p = p * r + 1.0 / 5040.0;
	p = p * r + 1.0 / 720.0;
	p = p * r + 1.0 / 120.0;
	p = p * r + 1.0 / 24.0;
	p = p * r + 1.0 / 6.0;
	p = p * r + 0.5;
	p = p * r + 1.0;
	p = p * r + 1.0;
	/* times 2^n, built from its bits (n >= -1010, so 2^n is normal): a correctly rounded
	   multiply, exact unless the result is subnormal, and then rounded as ldexp would */
	union { uint64_t u; double d; } two_n = { (uint64_t)((int64_t)n + 1023) << 52 };
	return p * two_n.d;
}

/* ln x for finite x > 0. */
static inline LKS_HD double lks_log(double x)
{
	const double ln2 = 6.93147180559945286227e-01;
	int e;
	double m = frexp(x, &e);  /* x = m 2^e, m in [0.5, 1): exact */
	double s, s2, p;

	if (m < 0.70710678118654752440) {  /* m in [sqrt(1/2), sqrt(2)) */
		m *= 2.0;
		e -= 1;
	}
	/* ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172: the series to s^23 leaves
	   less than 0.172^25 ~ 1e-19 */
	s = (m - 1.0) / (m + 1.0);
	s2 = s * s;
	p = 1.0 / 23.0;
	p = p * s2 + 1.0 / 21.0;
	p = p * s2 + 1.0 / 19.0;
	p = p * s2 + 1.0 / 17.0;
	p = p * s2 + 1.0 / 15.0;
	p = p * s2 + 1.0 / 13.0;
	p = p * s2 + 1.0 / 11.0;
	p = p * s2 + 1.0 / 9.0;
	p = p * s2 + 1.0 / 7.0;
	p = p * s2 + 1.0 / 5.0;
	p = p * s2 + 1.0 / 3.0;
	p = p * s2 + 1.0;
	return 2.0 * s * p + (double)e * ln2;
}

/* cos(pi t) for t in [0, 1], for the cosine learning-rate schedule. */
static inline LKS_HD double lks_cospi(double t)
{
	const double pi = 3.14159265358979311600;
	double sign = 1.0, x, x2, p;

	if (t > 0.5) {  /* cos(pi t) = -cos(pi (1 - t)) */
		t = 1.0 - t;
		sign = -1.0;
	}
	x = pi * t;  /* [0, pi/2]: the series to x^20 leaves (pi/2)^22 / 22! ~ 2e-17 */
	x2 = x * x;
	p = 1.0 / 2432902008176640000.0;
	p = -p * x2 + 1.0 / 6402373705728000.0;
	p = -p * x2 + 1.0 / 20922789888000.0;
	p = -p * x2 + 1.0 / 87178291200.0;
	p = -p * x2 + 1.0 / 479001600.0;
	p = -p * x2 + 1.0 / 3628800.0;
	p = -p * x2 + 1.0 / 40320.0;
	p = -p * x2 + 1.0 / 720.0;
	p = -p * x2 + 1.0 / 24.0;
	p = -p * x2 + 1.0 / 2.0;
	p = -p * x2 + 1.0;
	return sign * p;
}

#endif
