/*
 * gemm_ref.h: the GEMM tests' (test_gemm.c, test_gemm_concurrent.c) naive reference and
 * their inputs. The reference is gemm.h read literally: widen each operand element to
 * float32 (with a decoder written here, not the library's tables), acc = fmaf(a, b, acc)
 * over k ascending from +0.0f, then s = (1/sa) * (1/sb), c = acc * s, and round to BF16 if
 * asked. The inputs are regenerated from a seed (splitmix64).
 */
#ifndef LKS_TESTS_GEMM_REF_H
#define LKS_TESTS_GEMM_REF_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/convert.h"
#include "kernels/cpu/gemm.h"

/* ---- deterministic inputs ---- */

static inline uint64_t rng_next(uint64_t *s)  /* splitmix64 */
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A float32 of either sign over 2^-8 .. 2^8 with a full mantissa, or (1 in 10) an exact 0. */
static inline float rand_f32(uint64_t *s)
{
	uint64_t r = rng_next(s);
	uint32_t sign = (uint32_t)(r & 1) << 31;
	uint32_t exp = 127 - 8 + (uint32_t)((r >> 1) % 17);
	uint32_t mant = (uint32_t)(r >> 8) & 0x7fffff;

	if ((r >> 40) % 10 == 0)
		return 0.0f;
	return lks_bits_f32(sign | exp << 23 | mant);
}

/* A random FP8 code, never NaN (nor inf for E5M2): NaN propagation is not tested here,
   its payload is not part of the contract. 1 in 10 is +-0. */
static inline uint8_t rand_fp8(uint64_t *s, lks_dtype t)
{
	for (;;) {
		uint64_t r = rng_next(s);
		uint8_t c = (uint8_t)r;

		if ((r >> 32) % 10 == 0)
			return c & 0x80;
		if (t == LKS_E4M3 && (c & 0x7f) != 0x7f)
			return c;
		if (t == LKS_E5M2 && (c & 0x7f) < 0x7c)
			return c;
	}
}

/* ---- the reference ---- */

static inline float ref_fp8(uint8_t c, int ebits, int mbits)
{
	int bias = (1 << (ebits - 1)) - 1;
	int e = (c >> mbits) & ((1 << ebits) - 1);
	int m = c & ((1 << mbits) - 1);
	float v = e == 0 ? ldexpf((float)m, 1 - bias - mbits)
	                 : ldexpf((float)((1 << mbits) + m), e - bias - mbits);

	return (c & 0x80) ? -v : v;
}

static inline float ref_elem(const lks_operand *op, int r, int k)
{
	size_t i = (size_t)r * op->ld + (size_t)k;

	switch (op->dtype) {
	case LKS_F32: return ((const float *)op->data)[i];
	case LKS_BF16: return lks_bits_f32((uint32_t)((const uint16_t *)op->data)[i] << 16);
	case LKS_E4M3: return ref_fp8(((const uint8_t *)op->data)[i], 4, 3);
	case LKS_E5M2: return ref_fp8(((const uint8_t *)op->data)[i], 5, 2);
	}
	return NAN;
}

/* Round to nearest even by cases (not the library's add-and-shift). */
static inline uint16_t ref_bf16(float x)
{
	uint32_t u = lks_f32_bits(x), hi = u >> 16, lo = u & 0xffff;

	if (isnan(x))
		return 0x7fff;
	if (lo > 0x8000 || (lo == 0x8000 && (hi & 1)))
		hi++;
	return (uint16_t)hi;
}

/* acc (M, N): the chain of gemm.h. */
static inline void ref_acc(const lks_gemm *g, float *acc)
{
	for (int i = 0; i < g->M; i++)
		for (int j = 0; j < g->N; j++) {
			float s = 0.0f;

			for (int k = 0; k < g->K; k++)
				s = fmaf(ref_elem(&g->a, i, k), ref_elem(&g->b, j, k), s);
			acc[(size_t)i * g->N + j] = s;
		}
}

static inline float ref_inv(const lks_operand *op, int r)
{
	if (op->scaling == LKS_SCALE_NONE)
		return 1.0f;
	return 1.0f / op->scale[op->scaling == LKS_SCALE_AXIS ? r : 0];
}

/* The expected bits of C(i, j), as uint32 (BF16 in the low half). */
static inline uint32_t ref_out(const lks_gemm *g, const float *acc, int i, int j)
{
	float c = acc[(size_t)i * g->N + j];

	if (g->a.scaling != LKS_SCALE_NONE || g->b.scaling != LKS_SCALE_NONE)
		c = c * (ref_inv(&g->a, i) * ref_inv(&g->b, j));
	return g->out == LKS_BF16 ? ref_bf16(c) : lks_f32_bits(c);
}

/* ---- fixtures ---- */

/* An operand (rows, K) with ld = K + pad; the padding holds NaN, so reading past K shows. */
static inline void *make_operand(lks_dtype t, int rows, int K, size_t ld, uint64_t *s)
{
	size_t n = (size_t)rows * ld;
	void *p = malloc(n * lks_dtype_size(t) + 1);

	cr_assert_not_null(p);
	for (size_t idx = 0; idx < n; idx++) {
		int pad = (int)(idx % ld) >= K;

		switch (t) {
		case LKS_F32:
			((float *)p)[idx] = pad ? lks_bits_f32(0x7fc0beefu) : rand_f32(s);
			break;
		case LKS_BF16:
			((uint16_t *)p)[idx] = pad ? 0x7fc1 : (uint16_t)(lks_f32_bits(rand_f32(s)) >> 16);
			break;
		default:
			((uint8_t *)p)[idx] = pad ? 0x7f : rand_fp8(s, t);
			break;
		}
	}
	return p;
}

/* Scales for `rows` rows: arbitrary positive values (their reciprocals round), and some
   powers of two as the rowwise recipes use. */
static inline float *make_scales(int rows, uint64_t *s)
{
	float *sc = malloc(((size_t)rows + 1) * sizeof(float));

	cr_assert_not_null(sc);
	for (int i = 0; i <= rows; i++) {
		uint64_t r = rng_next(s);

		sc[i] = r % 4 == 0 ? ldexpf(1.0f, (int)((r >> 8) % 15) - 7)
		                   : 0.01f + (float)((r >> 16) % 100000) * 0.001f;
	}
	return sc;
}

#endif
