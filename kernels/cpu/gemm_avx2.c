/*
 * gemm_avx2.c: the AVX2 + FMA GEMM kernels (see gemm_kernel.h); compiled with -mavx2 -mfma
 * -mf16c, reached only when lks_isa_supported(LKS_ISA_AVX2).
 *
 * The microkernel is a 6 x 16 outer product: twelve ymm accumulators (6 rows x 2 vectors
 * of 8 columns), and per k two loads of B, six broadcasts of A and twelve
 * _mm256_fmadd_ps. Each lane is one element's chain (gemm_kernel.h), k ascending, one
 * fused multiply-add per k; nothing is summed across lanes, so it agrees with the scalar
 * path bit for bit. Zen 3 and Haswell-class cores retire two FMAs per cycle with a latency
 * of 4 or 5, so twelve independent chains keep both pipes busy.
 */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/cpu/convert.h"
#include "kernels/cpu/gemm_kernel.h"

#define LKS_AVX2_MR 6
#define LKS_AVX2_NR 16

/* One k step of the outer product: row r of the tile += a[r] * (b0 | b1). */
#define LKS_AVX2_STEP(a, b)                                                          \
	do {                                                                         \
		__m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps((b) + 8), ar;     \
		ar = _mm256_broadcast_ss((a) + 0);                                   \
		c00 = _mm256_fmadd_ps(ar, b0, c00); c01 = _mm256_fmadd_ps(ar, b1, c01); \
		ar = _mm256_broadcast_ss((a) + 1);                                   \
		c10 = _mm256_fmadd_ps(ar, b0, c10); c11 = _mm256_fmadd_ps(ar, b1, c11); \
		ar = _mm256_broadcast_ss((a) + 2);                                   \
		c20 = _mm256_fmadd_ps(ar, b0, c20); c21 = _mm256_fmadd_ps(ar, b1, c21); \
		ar = _mm256_broadcast_ss((a) + 3);                                   \
		c30 = _mm256_fmadd_ps(ar, b0, c30); c31 = _mm256_fmadd_ps(ar, b1, c31); \
		ar = _mm256_broadcast_ss((a) + 4);                                   \
		c40 = _mm256_fmadd_ps(ar, b0, c40); c41 = _mm256_fmadd_ps(ar, b1, c41); \
		ar = _mm256_broadcast_ss((a) + 5);                                   \
		c50 = _mm256_fmadd_ps(ar, b0, c50); c51 = _mm256_fmadd_ps(ar, b1, c51); \
	} while (0)

/* a (kc, 6), b (kc, 16) 32-byte aligned packed slivers; c (6, 16) at c[i*ldc + j]. */
static void lks_micro_avx2(int kc, const float *a, const float *b, float *c, size_t ldc,
                           int first)
{
	__m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
	int k = 0;

	if (first) {
		/* +0.0f on every path: fma(-x, y, +0) of an exact -0 product gives +0 */
		c00 = c01 = c10 = c11 = c20 = c21 = _mm256_setzero_ps();
		c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
	} else {
		c00 = _mm256_loadu_ps(c + 0 * ldc); c01 = _mm256_loadu_ps(c + 0 * ldc + 8);
		c10 = _mm256_loadu_ps(c + 1 * ldc); c11 = _mm256_loadu_ps(c + 1 * ldc + 8);
		c20 = _mm256_loadu_ps(c + 2 * ldc); c21 = _mm256_loadu_ps(c + 2 * ldc + 8);
		c30 = _mm256_loadu_ps(c + 3 * ldc); c31 = _mm256_loadu_ps(c + 3 * ldc + 8);
		c40 = _mm256_loadu_ps(c + 4 * ldc); c41 = _mm256_loadu_ps(c + 4 * ldc + 8);
		c50 = _mm256_loadu_ps(c + 5 * ldc); c51 = _mm256_loadu_ps(c + 5 * ldc + 8);
	}
	for (; k + 4 <= kc; k += 4) {
		_mm_prefetch((const char *)(a + 48), _MM_HINT_T0);
		LKS_AVX2_STEP(a, b);
		LKS_AVX2_STEP(a + 6, b + 16);
		LKS_AVX2_STEP(a + 12, b + 32);
		LKS_AVX2_STEP(a + 18, b + 48);
		a += 24;
		b += 64;
	}
	for (; k < kc; k++) {
		LKS_AVX2_STEP(a, b);
		a += 6;
		b += 16;
	}
	_mm256_storeu_ps(c + 0 * ldc, c00); _mm256_storeu_ps(c + 0 * ldc + 8, c01);
	_mm256_storeu_ps(c + 1 * ldc, c10); _mm256_storeu_ps(c + 1 * ldc + 8, c11);
	_mm256_storeu_ps(c + 2 * ldc, c20); _mm256_storeu_ps(c + 2 * ldc + 8, c21);
	_mm256_storeu_ps(c + 3 * ldc, c30); _mm256_storeu_ps(c + 3 * ldc + 8, c31);
	_mm256_storeu_ps(c + 4 * ldc, c40); _mm256_storeu_ps(c + 4 * ldc + 8, c41);
	_mm256_storeu_ps(c + 5 * ldc, c50); _mm256_storeu_ps(c + 5 * ldc + 8, c51);
}

/* lks_f32_to_bf16 of convert.h on 8 lanes: the same integer steps, NaN to 0x7fff. */
static __m128i lks_avx2_bf16x8(__m256 x)
{
	__m256i u = _mm256_castps_si256(x);
	__m256i mag = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
	__m256i nan = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7f800000));
	__m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
	__m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));

	r = _mm256_srli_epi32(r, 16);
	r = _mm256_blendv_epi8(r, _mm256_set1_epi32(LKS_BF16_NAN), nan);
	/* every lane is <= 0xffff, so the saturating pack is exact; it packs within 128-bit
	   halves, so gather quadwords 0 and 2 */
	r = _mm256_packus_epi32(r, r);
	r = _mm256_permute4x64_epi64(r, 0x08);
	return _mm256_castsi256_si128(r);
}

static void lks_epilogue_avx2(int rows, int cols, const float *acc, size_t ldacc, int scaled,
                              const float *inva, const float *invb, int bf16, void *out,
                              size_t ldout)
{
	int j8 = cols / 8 * 8;

	for (int i = 0; i < rows; i++) {
		const float *a = acc + (size_t)i * ldacc;  /* (cols) */
		__m256 ia = _mm256_set1_ps(inva[i]);

		for (int j = 0; j < j8; j += 8) {
			__m256 c = _mm256_loadu_ps(a + j);

			/* the same two roundings as the scalar path: s = inva*invb, then acc*s */
			if (scaled)
				c = _mm256_mul_ps(c, _mm256_mul_ps(ia, _mm256_loadu_ps(invb + j)));
			if (bf16)
				_mm_storeu_si128((__m128i *)((uint16_t *)out + (size_t)i * ldout + j),
				                 lks_avx2_bf16x8(c));
			else
				_mm256_storeu_ps((float *)out + (size_t)i * ldout + j, c);
		}
		if (j8 < cols)
			lks_gemm_epilogue_generic(1, cols - j8, a + j8, ldacc, scaled, inva + i,
			                          invb + j8, bf16,
			                          bf16 ? (void *)((uint16_t *)out + (size_t)i * ldout + j8)
			                               : (void *)((float *)out + (size_t)i * ldout + j8),
			                          ldout);
	}
}

const lks_gemm_kernel lks_gemm_kernel_avx2 = {
	.name = "avx2",
	.mr = LKS_AVX2_MR,
	.nr = LKS_AVX2_NR,
	.mc = 144,
	.kc = 256,
	.pack = lks_gemm_pack_generic,
	.micro = lks_micro_avx2,
	.epilogue = lks_epilogue_avx2,
};
