/*
 * gemm_avx512.c: the AVX-512 GEMM kernels (see gemm_kernel.h); compiled with -mavx512f
 * -mavx512bw -mavx512vl -mavx512dq -mfma, reached only when
 * lks_isa_supported(LKS_ISA_AVX512).
 *
 * The microkernel is a 6 x 32 outer product, the AVX2 kernel at twice the width: twelve
 * zmm accumulators, per k two loads of B, six broadcasts of A, twelve _mm512_fmadd_ps.
 * Each lane is one element's chain, k ascending, one fused multiply-add per k; no lane is
 * ever summed with another, so the bits are those of the scalar path.
 */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/cpu/convert.h"
#include "kernels/cpu/gemm_kernel.h"

#define LKS_AVX512_MR 6
#define LKS_AVX512_NR 32

#define LKS_AVX512_STEP(a, b)                                                        \
	do {                                                                         \
		__m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps((b) + 16), ar;    \
		ar = _mm512_set1_ps((a)[0]);                                         \
		c00 = _mm512_fmadd_ps(ar, b0, c00); c01 = _mm512_fmadd_ps(ar, b1, c01); \
		ar = _mm512_set1_ps((a)[1]);                                         \
		c10 = _mm512_fmadd_ps(ar, b0, c10); c11 = _mm512_fmadd_ps(ar, b1, c11); \
		ar = _mm512_set1_ps((a)[2]);                                         \
		c20 = _mm512_fmadd_ps(ar, b0, c20); c21 = _mm512_fmadd_ps(ar, b1, c21); \
		ar = _mm512_set1_ps((a)[3]);                                         \
		c30 = _mm512_fmadd_ps(ar, b0, c30); c31 = _mm512_fmadd_ps(ar, b1, c31); \
		ar = _mm512_set1_ps((a)[4]);                                         \
		c40 = _mm512_fmadd_ps(ar, b0, c40); c41 = _mm512_fmadd_ps(ar, b1, c41); \
		ar = _mm512_set1_ps((a)[5]);                                         \
		c50 = _mm512_fmadd_ps(ar, b0, c50); c51 = _mm512_fmadd_ps(ar, b1, c51); \
	} while (0)

/* a (kc, 6), b (kc, 32) 64-byte aligned packed slivers; c (6, 32) at c[i*ldc + j]. */
static void lks_micro_avx512(int kc, const float *a, const float *b, float *c, size_t ldc,
                             int first)
{
	__m512 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
	int k = 0;

	if (first) {
		/* +0.0f on every path (see gemm_avx2.c) */
		c00 = c01 = c10 = c11 = c20 = c21 = _mm512_setzero_ps();
		c30 = c31 = c40 = c41 = c50 = c51 = _mm512_setzero_ps();
	} else {
		c00 = _mm512_loadu_ps(c + 0 * ldc); c01 = _mm512_loadu_ps(c + 0 * ldc + 16);
		c10 = _mm512_loadu_ps(c + 1 * ldc); c11 = _mm512_loadu_ps(c + 1 * ldc + 16);
		c20 = _mm512_loadu_ps(c + 2 * ldc); c21 = _mm512_loadu_ps(c + 2 * ldc + 16);
		c30 = _mm512_loadu_ps(c + 3 * ldc); c31 = _mm512_loadu_ps(c + 3 * ldc + 16);
		c40 = _mm512_loadu_ps(c + 4 * ldc); c41 = _mm512_loadu_ps(c + 4 * ldc + 16);
		c50 = _mm512_loadu_ps(c + 5 * ldc); c51 = _mm512_loadu_ps(c + 5 * ldc + 16);
	}
	for (; k + 4 <= kc; k += 4) {
		_mm_prefetch((const char *)(a + 48), _MM_HINT_T0);
		LKS_AVX512_STEP(a, b);
		LKS_AVX512_STEP(a + 6, b + 32);
		LKS_AVX512_STEP(a + 12, b + 64);
		LKS_AVX512_STEP(a + 18, b + 96);
		a += 24;
		b += 128;
	}
	for (; k < kc; k++) {
		LKS_AVX512_STEP(a, b);
		a += 6;
		b += 32;
	}
	_mm512_storeu_ps(c + 0 * ldc, c00); _mm512_storeu_ps(c + 0 * ldc + 16, c01);
	_mm512_storeu_ps(c + 1 * ldc, c10); _mm512_storeu_ps(c + 1 * ldc + 16, c11);
	_mm512_storeu_ps(c + 2 * ldc, c20); _mm512_storeu_ps(c + 2 * ldc + 16, c21);
	_mm512_storeu_ps(c + 3 * ldc, c30); _mm512_storeu_ps(c + 3 * ldc + 16, c31);
	_mm512_storeu_ps(c + 4 * ldc, c40); _mm512_storeu_ps(c + 4 * ldc + 16, c41);
	_mm512_storeu_ps(c + 5 * ldc, c50); _mm512_storeu_ps(c + 5 * ldc + 16, c51);
}

/* lks_f32_to_bf16 of convert.h on 16 lanes: the same integer steps, NaN to 0x7fff. */
static __m256i lks_avx512_bf16x16(__m512 x)
{
	__m512i u = _mm512_castps_si512(x);
	__m512i mag = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
	__mmask16 nan = _mm512_cmpgt_epu32_mask(mag, _mm512_set1_epi32(0x7f800000));
	__m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
	__m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));

	r = _mm512_srli_epi32(r, 16);
	r = _mm512_mask_mov_epi32(r, nan, _mm512_set1_epi32(LKS_BF16_NAN));
	return _mm512_cvtepi32_epi16(r);  /* lanes are <= 0xffff: truncation is exact */
}

static void lks_epilogue_avx512(int rows, int cols, const float *acc, size_t ldacc,
                                int scaled, const float *inva, const float *invb, int bf16,
                                void *out, size_t ldout)
{
	for (int i = 0; i < rows; i++) {
		const float *a = acc + (size_t)i * ldacc;  /* (cols) */
		__m512 ia = _mm512_set1_ps(inva[i]);

		for (int j = 0; j < cols; j += 16) {
			__mmask16 m = cols - j >= 16 ? (__mmask16)0xffff
			                             : (__mmask16)((1u << (cols - j)) - 1);
			__m512 c = _mm512_maskz_loadu_ps(m, a + j);

			/* the same two roundings as the scalar path: s = inva*invb, then acc*s */
			if (scaled)
				c = _mm512_mul_ps(c, _mm512_mul_ps(ia, _mm512_maskz_loadu_ps(m, invb + j)));
			if (bf16)
				_mm256_mask_storeu_epi16((uint16_t *)out + (size_t)i * ldout + j, m,
				                         lks_avx512_bf16x16(c));
			else
				_mm512_mask_storeu_ps((float *)out + (size_t)i * ldout + j, m, c);
		}
	}
}

const lks_gemm_kernel lks_gemm_kernel_avx512 = {
	.name = "avx512",
	.mr = LKS_AVX512_MR,
	.nr = LKS_AVX512_NR,
	.mc = 144,
	.kc = 256,
	.pack = lks_gemm_pack_avx2,  /* AVX-512 machines have AVX2 */
	.micro = lks_micro_avx512,
	.epilogue = lks_epilogue_avx512,
};
