/*
 * convert_avx2.c: bulk conversions on the AVX2 path (see convert.h, convert_avx2.h).
 * Tails shorter than a vector go through the scalar encoders, which give the same bits.
 */
#include "kernels/cpu/convert_avx2.h"

void lks_avx2_f32_to_bf16_n(const float *x, uint16_t *y, size_t n);
void lks_avx2_bf16_to_f32_n(const uint16_t *x, float *y, size_t n);
void lks_avx2_f32_to_fp8_n(const float *x, uint8_t *y, size_t n, lks_fp8 fmt, int sat);

void lks_avx2_f32_to_bf16_n(const float *x, uint16_t *y, size_t n)
{
	size_t i = 0;

	for (; i + 16 <= n; i += 16) {
		__m256i h0 = lks_avx2_bf16_encode(_mm256_loadu_si256((const __m256i *)(x + i)));
		__m256i h1 = lks_avx2_bf16_encode(_mm256_loadu_si256((const __m256i *)(x + i + 8)));
		/* in-lane pack, then put the 64-bit groups back in order */
		__m256i w = _mm256_permute4x64_epi64(_mm256_packus_epi32(h0, h1), 0xd8);

		_mm256_storeu_si256((__m256i *)(y + i), w);
	}
	for (; i < n; i++)
		y[i] = lks_f32_to_bf16(x[i]);
}

void lks_avx2_bf16_to_f32_n(const uint16_t *x, float *y, size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(x + i)));

		_mm256_storeu_si256((__m256i *)(y + i), _mm256_slli_epi32(w, 16));
	}
	for (; i < n; i++)
		y[i] = lks_bf16_to_f32(x[i]);
}

void lks_avx2_f32_to_fp8_n(const float *x, uint8_t *y, size_t n, lks_fp8 fmt, int sat)
{
	const lks_fp8_spec *s = &lks_fp8_specs[fmt];
	size_t i = 0;

	for (; i + 32 <= n; i += 32) {
		__m256i c[4];

		for (int v = 0; v < 4; v++)
			c[v] = lks_avx2_fp8_encode(
				_mm256_loadu_si256((const __m256i *)(x + i + 8 * v)), s, sat);
		_mm256_storeu_si256((__m256i *)(y + i), lks_avx2_pack_bytes(c[0], c[1], c[2], c[3]));
	}
	for (; i < n; i++)
		y[i] = lks_f32_to_fp8(x[i], fmt, sat);
}
