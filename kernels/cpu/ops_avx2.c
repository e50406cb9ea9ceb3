/*
 * ops_avx2.c: RMSNorm (ops_rms.h, compiled here with hardware FMA) and the optimizer on
 * the AVX2 path: AdamW is eight lanes of the scalar arithmetic, the same multiplies, adds,
 * divides and square roots (each correctly rounded in both), no FMA, so every element gets
 * the scalar path's bits.
 */
#include <immintrin.h>
#include <stddef.h>

#include "kernels/cpu/ops.h"

/* lks_avx2_rmsnorm_fwd and _bwd, called by ops.c on the AVX2 path */
#define LKS_RMS_PREFIX lks_avx2
#define LKS_RMS_API
#include "kernels/cpu/ops_rms.h"

size_t lks_avx2_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr,
                      float b1, float b2, float eps, float wd, float bc1, float bc2);

/* Updates the first n - n % 8 elements; returns how many. */
size_t lks_avx2_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr,
                      float b1, float b2, float eps, float wd, float bc1, float bc2)
{
	const __m256 vb1 = _mm256_set1_ps(b1), vb2 = _mm256_set1_ps(b2);
	const __m256 c1 = _mm256_set1_ps(1.0f - b1), c2 = _mm256_set1_ps(1.0f - b2);
	const __m256 vlr = _mm256_set1_ps(lr), veps = _mm256_set1_ps(eps), vwd = _mm256_set1_ps(wd);
	const __m256 vbc1 = _mm256_set1_ps(bc1), vbc2 = _mm256_set1_ps(bc2);
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 gi = _mm256_loadu_ps(g + i), pi = _mm256_loadu_ps(p + i);
		__m256 mi = _mm256_add_ps(_mm256_mul_ps(vb1, _mm256_loadu_ps(m + i)), _mm256_mul_ps(c1, gi));
		__m256 vi = _mm256_add_ps(_mm256_mul_ps(vb2, _mm256_loadu_ps(v + i)),
		                          _mm256_mul_ps(c2, _mm256_mul_ps(gi, gi)));
		__m256 den = _mm256_add_ps(_mm256_sqrt_ps(_mm256_div_ps(vi, vbc2)), veps);
		__m256 step = _mm256_add_ps(_mm256_mul_ps(vwd, pi), _mm256_div_ps(_mm256_div_ps(mi, vbc1), den));

		_mm256_storeu_ps(m + i, mi);
		_mm256_storeu_ps(v + i, vi);
		_mm256_storeu_ps(p + i, _mm256_sub_ps(pi, _mm256_mul_ps(vlr, step)));
	}
	return i;
}
