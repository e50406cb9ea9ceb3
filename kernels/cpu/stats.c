/* stats.c: tensor statistics, scalar path and dispatch (see stats.h). */
#include "kernels/cpu/stats.h"

#include <math.h>

#define XXH_STATIC_LINKING_ONLY  /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "kernels/cpu/convert.h"
#include "kernels/cpu/isa.h"

void lks_avx2_sumsq_lanes(const float *x, size_t n, double lane[8]);
void lks_avx2_amax_nonfinite(const float *x, size_t n, uint32_t *maxbits, uint32_t *nan,
                             int64_t *nonfinite);
void lks_avx2_stats_f32(const float *x, size_t n, double *l2, float *amax, int64_t *nonfinite,
                        uint64_t *hash);
uint64_t lks_avx2_hash_rows(const uint8_t *rows, int nrows, int cols, size_t ld,
                            const void *tail, size_t ntail);

uint64_t lks_hash_rows(const uint8_t *rows, int nrows, int cols, size_t ld, const void *tail,
                       size_t ntail)
{
	XXH3_state_t st;

	if (lks_isa_active() != LKS_ISA_SCALAR)
		return lks_avx2_hash_rows(rows, nrows, cols, ld, tail, ntail);
	XXH3_64bits_reset(&st);
	for (int r = 0; r < nrows; r++)
		XXH3_64bits_update(&st, rows + (size_t)r * ld, (size_t)cols);
	XXH3_64bits_update(&st, tail, ntail);
	return XXH3_64bits_digest(&st);
}

void lks_sumsq_lanes(const float *x, size_t n, double lane[8])
{
	size_t i = 0;

	if (lks_isa_active() != LKS_ISA_SCALAR) {
		lks_avx2_sumsq_lanes(x, n, lane);
		return;
	}
	for (; i + 8 <= n; i += 8)
		for (int l = 0; l < 8; l++)
			lane[l] += (double)x[i + l] * (double)x[i + l];
	for (int l = 0; i < n; i++, l++)
		lane[l] += (double)x[i] * (double)x[i];
}

double lks_sumsq_lanes_total(const double lane[8])
{
	return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

double lks_sumsq(const float *x, size_t n)
{
	double lane[8] = { 0 };

	lks_sumsq_lanes(x, n, lane);
	return lks_sumsq_lanes_total(lane);
}

void lks_amax_nonfinite(const float *x, size_t n, float *amax, int64_t *nonfinite)
{
	uint32_t m = 0, nan = 0;
	int64_t bad = 0;

	if (lks_isa_active() != LKS_ISA_SCALAR) {
		lks_avx2_amax_nonfinite(x, n, &m, &nan, &bad);
	} else {
		for (size_t i = 0; i < n; i++) {
			uint32_t a = lks_f32_bits(x[i]) & 0x7fffffffu;

			/* as integers, finite magnitudes and inf order as their values */
			m = a > m && a <= 0x7f800000u ? a : m;
			nan |= a > 0x7f800000u;
			bad += a >= 0x7f800000u;
		}
	}
	*amax = nan ? NAN : lks_bits_f32(m);
	*nonfinite = bad;
}

void lks_stats_f32(const float *x, size_t n, double *l2, float *amax, int64_t *nonfinite,
                   uint64_t *hash)
{
	enum { BLOCK = 4096 };  /* floats; a multiple of 8 keeps lks_sumsq's lane order */
	double lane[8] = { 0 };
	XXH3_state_t st;
	float m = 0.0f;
	int64_t bad = 0;

	if (lks_isa_active() != LKS_ISA_SCALAR) {
		lks_avx2_stats_f32(x, n, l2, amax, nonfinite, hash);
		return;
	}
	XXH3_64bits_reset(&st);
	for (size_t i = 0; i < n; i += BLOCK) {
		size_t k = n - i < BLOCK ? n - i : BLOCK;
		float bm;
		int64_t bb;

		lks_amax_nonfinite(x + i, k, &bm, &bb);
		if (!isnan(m) && (isnan(bm) || bm > m))  /* a NaN, once seen, stays */
			m = bm;
		bad += bb;
		lks_sumsq_lanes(x + i, k, lane);
		XXH3_64bits_update(&st, x + i, k * sizeof(float));
	}
	*l2 = sqrt(lks_sumsq_lanes_total(lane));
	*amax = m;
	*nonfinite = bad;
	*hash = XXH3_64bits_digest(&st);
}
