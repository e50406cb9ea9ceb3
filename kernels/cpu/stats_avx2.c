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
void lks_avx2_fp8_stats_add(lks_fp8_stats *s, const uint8_t *q, size_t n, int fmt);
uint64_t lks_avx2_hash_rows(const uint8_t *rows, int nrows, int cols, size_t ld,
                            const float *scales, size_t nscales);

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

void lks_avx2_fp8_stats_add(lks_fp8_stats *s, const uint8_t *q, size_t n, int fmt);
uint64_t lks_avx2_hash_rows(const uint8_t *rows, int nrows, int cols, size_t ld,
                            const float *scales, size_t nscales)
{
	return lks_avx2_s_hash_rows(rows, nrows, cols, ld, scales, nscales);
}

/*
 * FP8 code statistics (stats.h). A magnitude code shifted into a half float decodes
 * exactly: E5M2 codes are the top byte of binary16, and E4M3 codes shifted by 7 are
 * binary16 with the value times 2^-8 (subnormals included, as both formats keep the same
 * subnormal structure). F16C widens them to float; N = |v| 2^k is then an exact integer
 * below 2^18 (k = 9 for E4M3; for E5M2 k = 16 below 1 and k = 2 from 1 up, the squares of
 * the second class weighing 2^28), and N^2 < 2^36 is summed in 64-bit lanes.
 */
#define LKS_FP8_CHUNK (1u << 24)  /* codes per flush: a lane sums at most 2^22 squares < 2^36 */

static inline __attribute__((always_inline)) void
lks_avx2_fp8_sq8(__m128i h, int e5, __m256i *acc_s, __m256i *acc_b)
{
	__m256 f = _mm256_cvtph_ps(h);
	__m256i n, nb;

	if (!e5) {
		n = _mm256_cvttps_epi32(_mm256_mul_ps(f, _mm256_set1_ps(131072.0f)));  /* 2^-8 2^17 */
	} else {
		__m256 big = _mm256_cmp_ps(f, _mm256_set1_ps(1.0f), _CMP_GE_OQ);

		n = _mm256_cvttps_epi32(_mm256_mul_ps(_mm256_andnot_ps(big, f), _mm256_set1_ps(65536.0f)));
		nb = _mm256_cvttps_epi32(_mm256_mul_ps(_mm256_and_ps(big, f), _mm256_set1_ps(4.0f)));
		*acc_b = _mm256_add_epi64(*acc_b, _mm256_mul_epu32(nb, nb));
		nb = _mm256_srli_epi64(nb, 32);
		*acc_b = _mm256_add_epi64(*acc_b, _mm256_mul_epu32(nb, nb));
	}
	*acc_s = _mm256_add_epi64(*acc_s, _mm256_mul_epu32(n, n));
	n = _mm256_srli_epi64(n, 32);
	*acc_s = _mm256_add_epi64(*acc_s, _mm256_mul_epu32(n, n));
}

static inline __attribute__((always_inline)) void
lks_avx2_fp8_chunk(lks_fp8_stats *s, const uint8_t *q, size_t n, int e5)
{
	const __m256i m7f = _mm256_set1_epi8(0x7f);
	__m256i vmax = _mm256_setzero_si256(), acc_s = vmax, acc_b = vmax;
	uint64_t ls[4], lb[4];
	uint8_t lm[32];
	uint32_t top = 0;
	size_t i = 0;

	for (; i + 32 <= n; i += 32) {
		__m256i c = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(q + i)), m7f);

		vmax = _mm256_max_epu8(vmax, c);
		for (int h = 0; h < 2; h++) {
			__m256i w = _mm256_cvtepu8_epi16(h ? _mm256_extracti128_si256(c, 1)
			                                   : _mm256_castsi256_si128(c));

			w = e5 ? _mm256_slli_epi16(w, 8) : _mm256_slli_epi16(w, 7);
			lks_avx2_fp8_sq8(_mm256_castsi256_si128(w), e5, &acc_s, &acc_b);
			lks_avx2_fp8_sq8(_mm256_extracti128_si256(w, 1), e5, &acc_s, &acc_b);
		}
	}
	_mm256_storeu_si256((__m256i *)ls, acc_s);
	_mm256_storeu_si256((__m256i *)lb, acc_b);
	_mm256_storeu_si256((__m256i *)lm, vmax);
	for (int l = 0; l < 32; l++)
		top = lm[l] > top ? lm[l] : top;
	if (top < lks_fp8_first_nonfinite(e5)) {
		for (int l = 0; l < 4; l++)
			s->sq += (unsigned __int128)ls[l] + ((unsigned __int128)lb[l] << 28);
		s->maxmag = top > s->maxmag ? top : s->maxmag;
	} else {  /* a non-finite code (rare) made garbage of its lane: the chunk once more */
		i = 0;
	}
	for (; i < n; i++)
		lks_fp8_stats_one(s, q[i], e5);
}

void lks_avx2_fp8_stats_add(lks_fp8_stats *s, const uint8_t *q, size_t n, int fmt)
{
	for (size_t i = 0; i < n; i += LKS_FP8_CHUNK) {
		size_t k = n - i < LKS_FP8_CHUNK ? n - i : LKS_FP8_CHUNK;

		if (fmt)
			lks_avx2_fp8_chunk(s, q + i, k, 1);
		else
			lks_avx2_fp8_chunk(s, q + i, k, 0);
	}
}
