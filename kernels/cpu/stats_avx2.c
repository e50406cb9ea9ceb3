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
	const __m256i abs = _mm256_set1_epi32(0x7fffffff);
	__m256i m = _mm256_setzero_si256();
	__m256d acc[8];
	uint32_t lm[8], top = 0;
	size_t i = 0;

	/* the fast loop needs the next element to fall in lane 0; blocks keep it so */
	if (a->seen % LKS_SUMSQ_LANES != 0) {
		for (; i < n; i++)
			lks_stats_acc_one(a, x[i]);
		return;
	}
	for (int r = 0; r < 8; r++)
		acc[r] = _mm256_loadu_pd(a->lane + 4 * r);
	/* The loop keeps only the largest magnitude as bits (NaN and inf included: as
	   integers they order above every finite value) and the squares; a block whose
	   largest bits reach inf holds a non-finite value, and only such a block is read again
	   for the exact NaN / non-finite bookkeeping. */
	for (; i + LKS_SUMSQ_LANES <= n; i += LKS_SUMSQ_LANES) {
		for (int v = 0; v < 4; v++) {
			__m256i b = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(x + i + 8 * v)), abs);
			__m256d lo = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 8 * v));
			__m256d hi = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 8 * v + 4));

			m = _mm256_max_epi32(m, b);  /* magnitudes < 2^31: signed order is right */
			/* the square of a float is exact in double (48 significant bits), so the
			   scalar path's product-then-sum rounds once, at the sum, as an FMA does */
			acc[2 * v] = _mm256_fmadd_pd(lo, lo, acc[2 * v]);
			acc[2 * v + 1] = _mm256_fmadd_pd(hi, hi, acc[2 * v + 1]);
		}
	}
	for (int r = 0; r < 8; r++)
		_mm256_storeu_pd(a->lane + 4 * r, acc[r]);
	_mm256_storeu_si256((__m256i *)lm, m);
	for (int l = 0; l < 8; l++)
		top = lm[l] > top ? lm[l] : top;
	if (top < 0x7f800000u) {  /* all finite: the largest magnitude is the amax */
		a->maxbits = top > a->maxbits ? top : a->maxbits;
	} else {
		for (size_t k = 0; k < i; k++)
			lks_stats_acc_bits(a, x[k]);
	}
	a->seen += i;
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
