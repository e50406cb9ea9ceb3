/* stats_avx2.c: tensor statistics on the AVX2 path, the scalar order lane for lane. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* xxHash compiled into this file, so that XXH3 runs on AVX2 here (the library Debian ships
   is built for baseline x86-64); same hash, about three times the speed */
#define XXH_INLINE_ALL
#include <xxhash.h>

void lks_avx2_sumsq_lanes(const float *x, size_t n, double lane[8]);
void lks_avx2_amax_nonfinite(const float *x, size_t n, uint32_t *maxbits, uint32_t *nan,
                             int64_t *nonfinite);
void lks_avx2_stats_f32(const float *x, size_t n, double *l2, float *amax, int64_t *nonfinite,
                        uint64_t *hash);
uint64_t lks_avx2_hash_rows(const uint8_t *rows, int nrows, int cols, size_t ld,
                            const void *tail, size_t ntail);

uint64_t lks_avx2_hash_rows(const uint8_t *rows, int nrows, int cols, size_t ld,
                            const void *tail, size_t ntail)
{
	XXH3_state_t st;

	XXH3_64bits_reset(&st);
	for (int r = 0; r < nrows; r++)
		XXH3_64bits_update(&st, rows + (size_t)r * ld, (size_t)cols);
	XXH3_64bits_update(&st, tail, ntail);
	return XXH3_64bits_digest(&st);
}

void lks_avx2_sumsq_lanes(const float *x, size_t n, double lane[8])
{
	__m256d lo = _mm256_loadu_pd(lane), hi = _mm256_loadu_pd(lane + 4);  /* lanes 0-3, 4-7 */
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(x + i);
		__m256d a = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
		__m256d b = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));

		/* a product then a sum, two roundings, as the scalar path: no FMA here */
		lo = _mm256_add_pd(lo, _mm256_mul_pd(a, a));
		hi = _mm256_add_pd(hi, _mm256_mul_pd(b, b));
	}
	_mm256_storeu_pd(lane, lo);
	_mm256_storeu_pd(lane + 4, hi);
	for (int l = 0; i < n; i++, l++)
		lane[l] += (double)x[i] * (double)x[i];
}

void lks_avx2_amax_nonfinite(const float *x, size_t n, uint32_t *maxbits, uint32_t *nan,
                             int64_t *nonfinite)
{
	const __m256i abs = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
	const __m256i below_inf = _mm256_set1_epi32(0x7f7fffff);
	__m256i m = _mm256_setzero_si256(), nanv = _mm256_setzero_si256(), bad = _mm256_setzero_si256();
	uint32_t lm[8], ln[8], m_out = 0, n_out = 0;
	int32_t lb[8];
	int64_t b_out = 0;
	size_t i = 0;

	while (i + 8 <= n) {
		/* lane counters stay below 2^31: drained every 2^28 vectors */
		size_t end = n - i > ((size_t)8 << 28) ? i + ((size_t)8 << 28) : n;

		for (; i + 8 <= end; i += 8) {
			__m256i a = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(x + i)), abs);
			__m256i nonfin = _mm256_cmpgt_epi32(a, below_inf);  /* a >= inf */
			__m256i isnan = _mm256_cmpgt_epi32(a, inf);

			m = _mm256_max_epi32(m, _mm256_andnot_si256(isnan, a));  /* magnitudes < 2^31 */
			nanv = _mm256_or_si256(nanv, isnan);
			bad = _mm256_sub_epi32(bad, nonfin);
		}
		_mm256_storeu_si256((__m256i *)lb, bad);
		for (int l = 0; l < 8; l++)
			b_out += lb[l];
		bad = _mm256_setzero_si256();
	}
	_mm256_storeu_si256((__m256i *)lm, m);
	_mm256_storeu_si256((__m256i *)ln, nanv);
	for (int l = 0; l < 8; l++) {
		m_out = lm[l] > m_out ? lm[l] : m_out;
		n_out |= ln[l];
	}
	for (; i < n; i++) {
		uint32_t a;

		memcpy(&a, x + i, 4);
		a &= 0x7fffffffu;
		m_out = a > m_out && a <= 0x7f800000u ? a : m_out;
		n_out |= a > 0x7f800000u;
		b_out += a >= 0x7f800000u;
	}
	*maxbits = m_out;
	*nan = n_out != 0;
	*nonfinite = b_out;
}

/* lks_stats_f32 of stats.c, block for block, on this path's loops and hash */
void lks_avx2_stats_f32(const float *x, size_t n, double *l2, float *amax, int64_t *nonfinite,
                        uint64_t *hash)
{
	enum { BLOCK = 4096 };
	double lane[8] = { 0 };
	XXH3_state_t st;
	uint32_t m = 0, nan = 0;
	int64_t bad = 0;

	XXH3_64bits_reset(&st);
	for (size_t i = 0; i < n; i += BLOCK) {
		size_t k = n - i < BLOCK ? n - i : BLOCK;
		uint32_t bm, bn;
		int64_t bb;

		lks_avx2_amax_nonfinite(x + i, k, &bm, &bn, &bb);
		m = bm > m ? bm : m;  /* finite and inf magnitudes order as integers */
		nan |= bn;
		bad += bb;
		lks_avx2_sumsq_lanes(x + i, k, lane);
		XXH3_64bits_update(&st, x + i, k * sizeof(float));
	}
	*l2 = sqrt(((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7])));
	if (nan) {
		*amax = NAN;
	} else {
		float f;

		memcpy(&f, &m, sizeof(f));
		*amax = f;
	}
	*nonfinite = bad;
	*hash = XXH3_64bits_digest(&st);
}
