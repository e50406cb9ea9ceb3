/* stats.c: tensor statistics, the scalar path and the dispatch (see stats.h). */
#include "kernels/cpu/stats.h"

#define XXH_STATIC_LINKING_ONLY  /* XXH3_state_t on the stack */
#include <string.h>
#include <xxhash.h>

#include "kernels/cpu/convert.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/stats_acc.h"

double lks_avx2_sumsq(const float *x, size_t n);
void lks_avx2_stats_f32(const float *x, size_t n, double *l2, float *amax, int64_t *nonfinite,
                        uint64_t *hash);
uint64_t lks_avx2_hash_rows(const uint8_t *rows, int nrows, int cols, size_t ld,
                            const float *scales, size_t nscales);

void lks_avx2_fp8_stats_add(lks_fp8_stats *s, const uint8_t *q, size_t n, int fmt);

static void lks_scalar_block(const float *x, size_t n, struct lks_stats_acc *a)
{
	for (size_t i = 0; i < n; i++)
		lks_stats_acc_one(a, x[i]);
}

#define LKS_STATS_PREFIX lks_scalar
#include "kernels/cpu/stats_loop.h"

double lks_sumsq(const float *x, size_t n)
{
	return lks_isa_active() != LKS_ISA_SCALAR ? lks_avx2_sumsq(x, n) : lks_scalar_sumsq(x, n);
}

int64_t lks_nonfinite(const float *x, size_t n)
{
	int64_t bad = 0;

	for (size_t i = 0; i < n; i++) {
		uint32_t b;

		memcpy(&b, &x[i], sizeof(b));
		bad += (b & 0x7f800000u) == 0x7f800000u;
	}
	return bad;
}

void lks_stats_f32(const float *x, size_t n, double *l2, float *amax, int64_t *nonfinite,
                   uint64_t *hash)
{
	if (lks_isa_active() != LKS_ISA_SCALAR)
		lks_avx2_stats_f32(x, n, l2, amax, nonfinite, hash);
	else
		lks_scalar_stats_f32(x, n, l2, amax, nonfinite, hash);
}

uint64_t lks_hash_rows(const uint8_t *rows, int nrows, int cols, size_t ld, const float *scales,
                       size_t nscales)
{
	if (lks_isa_active() != LKS_ISA_SCALAR)
		return lks_avx2_hash_rows(rows, nrows, cols, ld, scales, nscales);
	return lks_scalar_hash_rows(rows, nrows, cols, ld, scales, nscales);
}

void lks_fp8_stats_add(lks_fp8_stats *s, const uint8_t *q, size_t n, int fmt)
{
	if (lks_isa_active() != LKS_ISA_SCALAR) {
		lks_avx2_fp8_stats_add(s, q, n, fmt);
		return;
	}
	for (size_t i = 0; i < n; i++)
		lks_fp8_stats_one(s, q[i], fmt);
}

void lks_fp8_stats_result(const lks_fp8_stats *s, int fmt, double *l2, float *amax,
                          int64_t *nonfinite)
{
	*amax = fabsf(lks_fp8_table((lks_fp8)fmt)[s->maxmag]);
	*nonfinite = s->nonfinite;
	if (s->nonfinite)
		*l2 = isnan(*amax) ? NAN : INFINITY;  /* a NaN code has the largest magnitude */
	else  /* one rounding, in the conversion; the power of two is exact */
		*l2 = sqrt(ldexp((double)s->sq, fmt ? -32 : -18));
}
