/*
 * stats_avx2.c: tensor statistics on the AVX2 path, the scalar order lane for lane: the
 * 32 sum-of-squares lanes in eight registers of four doubles, element 32q + 8v + j of a
 * block going to lane 8v + j, as in the scalar path.
 */
#include <immintrin.h>
#include <stdint.h>

/* xxHash compiled into this file, so that XXH3 runs on AVX2 here (the library Debian ships
   is built for baseline x86-64): the same hash, about three times the speed */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "kernels/cpu/stats_acc.h"

double lks_avx2_sumsq(const float *x, size_t n);
void lks_avx2_stats_f32(const float *x, size_t n, double *l2, float *amax, int64_t *nonfinite,
                        uint64_t *hash);
uint64_t lks_avx2_hash_rows(const uint8_t *rows, int nrows, int cols, size_t ld,
                            const void *tail, size_t ntail);

static void lks_avx2_s_block(const float *x, size_t n, struct lks_stats_acc *a)
{
	const __m256i abs = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
	const __m256i below_inf = _mm256_set1_epi32(0x7f7fffff);
	__m256i m = _mm256_setzero_si256(), nan = _mm256_setzero_si256(), bad = _mm256_setzero_si256();
	__m256d acc[8];
	uint32_t lm[8], ln[8];
	int32_t lb[8];
	size_t i = 0;

	/* the fast loop needs the next element to fall in lane 0; blocks keep it so */
	if (a->seen % LKS_SUMSQ_LANES != 0) {
		for (; i < n; i++)
			lks_stats_acc_one(a, x[i]);
		return;
	}
	for (int r = 0; r < 8; r++)
		acc[r] = _mm256_loadu_pd(a->lane + 4 * r);
	/* a lane counter grows by at most n/8: below 2^31 for any tensor under 16 G elements */
	for (; i + LKS_SUMSQ_LANES <= n; i += LKS_SUMSQ_LANES) {
		for (int v = 0; v < 4; v++) {
			__m256 f = _mm256_loadu_ps(x + i + 8 * v);
			__m256i b = _mm256_and_si256(_mm256_castps_si256(f), abs);
			__m256i isnan = _mm256_cmpgt_epi32(b, inf);
			__m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(f));
			__m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1));

			m = _mm256_max_epi32(m, _mm256_andnot_si256(isnan, b));  /* magnitudes < 2^31 */
			nan = _mm256_or_si256(nan, isnan);
			bad = _mm256_sub_epi32(bad, _mm256_cmpgt_epi32(b, below_inf));
			/* a product then a sum, two roundings, as the scalar path: no FMA here */
			acc[2 * v] = _mm256_add_pd(acc[2 * v], _mm256_mul_pd(lo, lo));
			acc[2 * v + 1] = _mm256_add_pd(acc[2 * v + 1], _mm256_mul_pd(hi, hi));
		}
	}
	for (int r = 0; r < 8; r++)
		_mm256_storeu_pd(a->lane + 4 * r, acc[r]);
	a->seen += i;
	_mm256_storeu_si256((__m256i *)lm, m);
	_mm256_storeu_si256((__m256i *)ln, nan);
	_mm256_storeu_si256((__m256i *)lb, bad);
	for (int l = 0; l < 8; l++) {
		a->maxbits = lm[l] > a->maxbits ? lm[l] : a->maxbits;
		a->nan |= ln[l] != 0;
		a->bad += lb[l];
	}
	for (; i < n; i++)
		lks_stats_acc_one(a, x[i]);
}

#define LKS_STATS_PREFIX lks_avx2_s
#include "kernels/cpu/stats_loop.h"

double lks_avx2_sumsq(const float *x, size_t n)
{
	return lks_avx2_s_sumsq(x, n);
}

void lks_avx2_stats_f32(const float *x, size_t n, double *l2, float *amax, int64_t *nonfinite,
                        uint64_t *hash)
{
	lks_avx2_s_stats_f32(x, n, l2, amax, nonfinite, hash);
}

uint64_t lks_avx2_hash_rows(const uint8_t *rows, int nrows, int cols, size_t ld,
                            const void *tail, size_t ntail)
{
	return lks_avx2_s_hash_rows(rows, nrows, cols, ld, tail, ntail);
}
