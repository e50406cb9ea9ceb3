/*
 * quant_avx2.c: the quantization loops on the AVX2 path (see quant_kernel.h).
 *
 * amax keeps NaN apart from the max: _mm256_max_ps drops a NaN in its first operand, so
 * the loops OR an "unordered" mask and return the canonical NaN at the end, as the scalar
 * loop does. The cast multiplies, encodes with convert_avx2.h and counts with movemask.
 */
#include <math.h>

#include "kernels/cpu/convert_avx2.h"
#include "kernels/cpu/quant_kernel.h"

static void lks_avx2_amax_acc(const float *x, size_t n, float *acc)
{
	const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
	size_t j = 0;

	for (; j + 8 <= n; j += 8) {
		__m256 v = _mm256_and_ps(_mm256_loadu_ps(x + j), absmask);
		__m256 a = _mm256_loadu_ps(acc + j);
		/* max(v, a) returns a when either is NaN, which keeps a NaN acc; a NaN v is put
		   back by the blend */
		__m256 m = _mm256_blendv_ps(_mm256_max_ps(v, a), v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));

		_mm256_storeu_ps(acc + j, m);
	}
	for (; j < n; j++) {
		float v = fabsf(x[j]);

		acc[j] = (isnan(acc[j]) || isnan(v)) ? NAN : (v > acc[j] ? v : acc[j]);
	}
}

static float lks_avx2_amax(const float *x, size_t n)
{
	const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
	__m256 m0 = _mm256_setzero_ps(), m1 = _mm256_setzero_ps();
	__m256 nan = _mm256_setzero_ps();
	float lanes[8], m = 0.0f;
	int has_nan;
	size_t j = 0;

	for (; j + 16 <= n; j += 16) {
		__m256 v0 = _mm256_loadu_ps(x + j), v1 = _mm256_loadu_ps(x + j + 8);

		nan = _mm256_or_ps(nan, _mm256_cmp_ps(v0, v1, _CMP_UNORD_Q));
		m0 = _mm256_max_ps(m0, _mm256_and_ps(v0, absmask));
		m1 = _mm256_max_ps(m1, _mm256_and_ps(v1, absmask));
	}
	_mm256_storeu_ps(lanes, _mm256_max_ps(m0, m1));
	has_nan = _mm256_movemask_ps(nan) != 0;
	for (int l = 0; l < 8; l++)
		m = lanes[l] > m ? lanes[l] : m;
	for (; j < n; j++) {
		float v = fabsf(x[j]);

		has_nan |= isnan(v);
		m = v > m ? v : m;
	}
	return has_nan ? NAN : m;
}

/* Sum of the eight 32-bit lanes. */
static uint64_t lks_avx2_lane_sum(__m256i v)
{
	int32_t l[8];
	uint64_t s = 0;

	_mm256_storeu_si256((__m256i *)l, v);
	for (int i = 0; i < 8; i++)
		s += (uint32_t)l[i];
	return s;
}

static void lks_avx2_cast(const float *x, size_t n, const float *scale, int per_elem,
                          const lks_fp8_spec *s, uint8_t *q, lks_cast_counts *counts)
{
	const __m256i absmask = _mm256_set1_epi32(0x7fffffff);
	const __m256i over = _mm256_set1_epi32((int)s->overflow - 1);
	const __m256i inf = _mm256_set1_epi32(0x7f800000);
	const __m256i low7 = _mm256_set1_epi32(0x7f);
	const __m256i zero = _mm256_setzero_si256();
	__m256 sc = _mm256_set1_ps(scale[0]);
	/* per-lane counts, as 0 - (number of all-ones masks); a lane sees at most n/8 < 2^31 */
	__m256i under = zero, sat = zero;
	size_t j = 0;

	for (; j + 32 <= n; j += 32) {
		__m256i c[4];

		for (int v = 0; v < 4; v++) {
			__m256 xv = _mm256_loadu_ps(x + j + 8 * v);
			__m256i u, a, nonzero_x, zero_code, big;

			if (per_elem)
				sc = _mm256_loadu_ps(scale + j + 8 * v);
			u = _mm256_castps_si256(_mm256_mul_ps(xv, sc));
			c[v] = lks_avx2_fp8_encode(u, s, 1);
			a = _mm256_and_si256(u, absmask);
			/* underflow: x != 0 (NaN counts as non-zero) and the code is +-0 */
			nonzero_x = _mm256_castps_si256(_mm256_cmp_ps(xv, _mm256_setzero_ps(), _CMP_NEQ_UQ));
			zero_code = _mm256_cmpeq_epi32(_mm256_and_si256(c[v], low7), zero);
			under = _mm256_sub_epi32(under, _mm256_and_si256(nonzero_x, zero_code));
			/* saturated: overflow <= |x*scale| <= inf */
			big = _mm256_andnot_si256(_mm256_cmpgt_epi32(a, inf), _mm256_cmpgt_epi32(a, over));
			sat = _mm256_sub_epi32(sat, big);
		}
		_mm256_storeu_si256((__m256i *)(q + j), lks_avx2_pack_bytes(c[0], c[1], c[2], c[3]));
	}
	counts->underflow += lks_avx2_lane_sum(under);
	counts->saturated += lks_avx2_lane_sum(sat);
	for (; j < n; j++)
		q[j] = lks_cast_one(x[j], scale[j * (size_t)per_elem], s, counts);
}

const lks_quant_ops lks_quant_avx2_ops = {
	lks_avx2_amax_acc, lks_avx2_amax, lks_avx2_cast,
};
