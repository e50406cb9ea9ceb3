/* stats_acc.h: the running state of stats.h's statistics; private to kernels/cpu. */
#ifndef LKS_KERNELS_CPU_STATS_ACC_H
#define LKS_KERNELS_CPU_STATS_ACC_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/cpu/stats.h"
#include "kernels/element/fp8_sq.h"

struct lks_stats_acc {
	double lane[LKS_SUMSQ_LANES];  /* lane l: the sum of x[i]^2 for i = l mod 32 */
	uint32_t maxbits;              /* the largest |x| that is not NaN, as bits */
	uint32_t nan;                  /* a NaN was seen */
	int64_t bad;                   /* non-finite elements */
	size_t seen;                   /* elements so far: where the next one's lane is */
};

static inline void lks_stats_acc_init(struct lks_stats_acc *a)
{
	memset(a, 0, sizeof(*a));
}

/* The lanes as a balanced binary tree: pairs, then pairs of pairs. */
static inline double lks_stats_acc_sumsq(const struct lks_stats_acc *a)
{
	double t[LKS_SUMSQ_LANES];

	memcpy(t, a->lane, sizeof(t));
	for (int w = LKS_SUMSQ_LANES / 2; w >= 1; w /= 2)
		for (int l = 0; l < w; l++)
			t[l] = t[2 * l] + t[2 * l + 1];
	return t[0];
}

static inline float lks_stats_acc_amax(const struct lks_stats_acc *a)
{
	float f;

	memcpy(&f, &a->maxbits, sizeof(f));
	return a->nan ? NAN : f;
}

/* amax, NaN and the non-finite count of one element, all but its square. */
static inline void lks_stats_acc_bits(struct lks_stats_acc *a, float x)
{
	uint32_t b;

	memcpy(&b, &x, sizeof(b));
	b &= 0x7fffffffu;
	/* as integers, finite magnitudes and inf order as their values */
	a->maxbits = b > a->maxbits && b <= 0x7f800000u ? b : a->maxbits;
	a->nan |= b > 0x7f800000u;
	a->bad += b >= 0x7f800000u;
}

/* One element, as the scalar path and every path's tail take it. */
static inline void lks_stats_acc_one(struct lks_stats_acc *a, float x)
{
	a->lane[a->seen++ % LKS_SUMSQ_LANES] += (double)x * (double)x;
	lks_stats_acc_bits(a, x);
}

/* One code, as the scalar path and every path's tail take it. */
static inline void lks_fp8_stats_one(lks_fp8_stats *s, uint8_t code, int fmt)
{
	uint32_t mag = code & 0x7fu;

	s->maxmag = mag > s->maxmag ? mag : s->maxmag;
	if (mag >= lks_fp8_first_nonfinite(fmt))
		s->nonfinite++;
	else
		s->sq += lks_fp8_sq_units(mag, fmt);
}

#endif
