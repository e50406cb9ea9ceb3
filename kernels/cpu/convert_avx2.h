/*
 * convert_avx2.h: the encoders of convert.h, eight lanes at a time (AVX2).
 *
 * Included only by translation units compiled with -mavx2 -mfma. Each function is the scalar
 * algorithm of convert.h written lane for lane (same integer adds, same float add for the
 * subnormal rounding), so the results are the same bits; the exhaustive test checks it.
 */
#ifndef LKS_KERNELS_CPU_CONVERT_AVX2_H
#define LKS_KERNELS_CPU_CONVERT_AVX2_H

#include <immintrin.h>

#include "kernels/cpu/convert.h"

/* float32 bits -> FP8 codes, one per 32-bit lane. */
static inline __m256i lks_avx2_fp8_encode(__m256i u, const lks_fp8_spec *s, int sat)
{
	const __m256i absmask = _mm256_set1_epi32(0x7fffffff);
	__m256i a = _mm256_and_si256(u, absmask);
	__m256i sign = _mm256_and_si256(_mm256_srli_epi32(u, 24), _mm256_set1_epi32(0x80));
	__m128i shift = _mm_cvtsi32_si128(s->shift);
	/* normal: round the mantissa to nearest even with an integer add */
	__m256i odd = _mm256_and_si256(_mm256_srl_epi32(a, shift), _mm256_set1_epi32(1));
	__m256i bias = _mm256_add_epi32(_mm256_set1_epi32((1 << (s->shift - 1)) - 1), odd);
	__m256i normal = _mm256_sub_epi32(_mm256_srl_epi32(_mm256_add_epi32(a, bias), shift),
	                                  _mm256_set1_epi32((int)s->rebias));
	/* subnormal: the float add rounds to a multiple of the subnormal step */
	__m256i magic = _mm256_set1_epi32((int)s->submagic);
	__m256 sum = _mm256_add_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(magic));
	__m256i sub = _mm256_sub_epi32(_mm256_castps_si256(sum), magic);
	/* magnitudes are below 2^31, so signed compares order them correctly */
	__m256i is_normal = _mm256_cmpgt_epi32(a, _mm256_set1_epi32((int)s->minnorm - 1));
	__m256i is_over = _mm256_cmpgt_epi32(a, _mm256_set1_epi32((int)s->overflow - 1));
	__m256i is_nan = _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7f800000));
	__m256i code = _mm256_blendv_epi8(sub, normal, is_normal);

	code = _mm256_blendv_epi8(code, _mm256_set1_epi32(sat ? s->maxcode : s->ovfcode), is_over);
	code = _mm256_or_si256(code, sign);
	return _mm256_blendv_epi8(code, _mm256_set1_epi32(LKS_FP8_NAN), is_nan);
}

/* Four vectors of 32-bit codes (lanes 0..31 in order) -> 32 bytes in order. */
static inline __m256i lks_avx2_pack_bytes(__m256i c0, __m256i c1, __m256i c2, __m256i c3)
{
	/* packs work within 128-bit halves: the words come out as (c0lo c1lo c0hi c1hi), the
	   bytes as (c0lo c1lo c2lo c3lo c0hi c1hi c2hi c3hi) in 4-byte groups; one permute of
	   32-bit groups puts them back in order. */
	__m256i w01 = _mm256_packus_epi32(c0, c1);
	__m256i w23 = _mm256_packus_epi32(c2, c3);
	__m256i b = _mm256_packus_epi16(w01, w23);

	return _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* float32 -> BF16 bits, one per 32-bit lane. */
static inline __m256i lks_avx2_bf16_encode(__m256i u)
{
	__m256i a = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
	__m256i is_nan = _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7f800000));
	__m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
	__m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(odd,
	                                  _mm256_set1_epi32(0x7fff))), 16);

	return _mm256_blendv_epi8(r, _mm256_set1_epi32(LKS_BF16_NAN), is_nan);
}

#endif
