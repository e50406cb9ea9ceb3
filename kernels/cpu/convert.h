/*
 * convert.h: float32 <-> E4M3 / E5M2 / BF16, bit-exact with NVIDIA's conversions.
 *
 * The contract (DESIGN.md, Numerics), checked against cuda_fp8.hpp / cuda_bf16.hpp over all
 * 2^32 float32 bit patterns by tests/test_convert_exhaustive.c:
 *   - round to nearest, ties to even, subnormals of the target included;
 *   - satfinite: |x| beyond the largest finite value (and +-inf) clamps to +-max;
 *   - no saturation: E4M3 overflow gives NaN (0x7f | sign), E5M2 overflow gives +-inf;
 *   - NaN of any sign or payload gives the canonical positive NaN: 0x7f for both FP8
 *     formats (also under satfinite), 0x7fff for BF16;
 *   - a value that rounds to zero keeps its sign (-tiny gives 0x80).
 *
 * Formats: E4M3 ("fn": bias 7, max 448, no inf, NaN only S.1111.111), E5M2 (bias 15,
 * max 57344, inf 0x7c), BF16 (the top half of a float32).
 *
 * The encoders work on the magnitude bits only, with integer adds, so that the scalar code
 * here and the vector code in convert_avx2.c are the same algorithm lane for lane.
 */
#ifndef LKS_KERNELS_CPU_CONVERT_H
#define LKS_KERNELS_CPU_CONVERT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/backend_types.h"

#define LKS_FP8_NAN 0x7f          /* canonical NaN code of both formats */
#define LKS_BF16_NAN 0x7fff

/* What the encoder needs to know of a format; one row per lks_fp8. */
typedef struct lks_fp8_spec {
	const char *name;
	float max;          /* largest finite value */
	uint32_t overflow;  /* float32 magnitude bits from which the cast overflows */
	uint32_t minnorm;   /* float32 bits of the smallest normal of the format */
	int shift;          /* 23 - mantissa bits: float32 bits dropped by the rounding */
	uint32_t rebias;    /* (127 - bias) << mantissa bits */
	uint32_t submagic;  /* bits of 2^(23 + e_min_subnormal): adding it rounds |x| to a
	                       subnormal step, the steps counted in its low bits */
	uint8_t maxcode;    /* code of +max */
	uint8_t ovfcode;    /* code of an unsaturated overflow: NaN (E4M3) or inf (E5M2) */
} lks_fp8_spec;

static const lks_fp8_spec lks_fp8_specs[2] = {
	/* E4M3: overflow above 464 = 448 + half an ulp (464 itself ties to even 448);
	   subnormal step 2^-9, so the magic is 2^14; smallest normal 2^-6. */
	{ "e4m3", LKS_E4M3_MAX, 0x43e80001u, 0x3c800000u, 20, 120u << 3, 0x46800000u, 0x7e, 0x7f },
	/* E5M2: overflow from 61440 = 57344 + half an ulp (the tie goes to even, inf);
	   subnormal step 2^-16, so the magic is 2^7; smallest normal 2^-14. */
	{ "e5m2", LKS_E5M2_MAX, 0x47700000u, 0x38800000u, 21, 112u << 2, 0x43000000u, 0x7b, 0x7c },
};

static inline uint32_t lks_f32_bits(float x)
{
	uint32_t u;
	memcpy(&u, &x, sizeof(u));
	return u;
}

static inline float lks_bits_f32(uint32_t u)
{
	float x;
	memcpy(&x, &u, sizeof(x));
	return x;
}

/* float32 -> FP8 of the format s describes, round to nearest even; sat != 0: satfinite. */
static inline uint8_t lks_fp8_encode(float x, const lks_fp8_spec *s, int sat)
{
	uint32_t u = lks_f32_bits(x);
	uint32_t sign = (u >> 24) & 0x80u;
	uint32_t a = u & 0x7fffffffu;
	uint32_t code;

	if (a > 0x7f800000u)
		return LKS_FP8_NAN;
	if (a >= s->overflow)
		code = sat ? s->maxcode : s->ovfcode;
	else if (a >= s->minnorm)  /* round the mantissa; a carry moves into the exponent */
		code = ((a + ((1u << (s->shift - 1)) - 1) + ((a >> s->shift) & 1u)) >> s->shift)
		       - s->rebias;
	else  /* the float add rounds to a multiple of the subnormal step, ties to even */
		code = lks_f32_bits(lks_bits_f32(a) + lks_bits_f32(s->submagic)) - s->submagic;
	return (uint8_t)(code | sign);
}

static inline uint8_t lks_f32_to_fp8(float x, lks_fp8 fmt, int sat)
{
	return lks_fp8_encode(x, &lks_fp8_specs[fmt], sat);
}

static inline uint8_t lks_f32_to_e4m3(float x, int sat) { return lks_f32_to_fp8(x, LKS_FP8_E4M3, sat); }
static inline uint8_t lks_f32_to_e5m2(float x, int sat) { return lks_f32_to_fp8(x, LKS_FP8_E5M2, sat); }

/* The 256 float32 values of a format, indexed by code (NaN codes hold a quiet NaN). */
const float *lks_fp8_table(lks_fp8 fmt);

static inline float lks_fp8_to_f32(uint8_t v, lks_fp8 fmt)
{
	return lks_fp8_table(fmt)[v];
}

/* float32 -> BF16, round to nearest even; NaN -> 0x7fff. */
static inline uint16_t lks_f32_to_bf16(float x)
{
	uint32_t u = lks_f32_bits(x);

	if ((u & 0x7fffffffu) > 0x7f800000u)
		return LKS_BF16_NAN;
	return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static inline float lks_bf16_to_f32(uint16_t h)
{
	return lks_bits_f32((uint32_t)h << 16);
}

/* Bulk versions, vectorized on the active ISA path; bit-identical to the scalar ones. */
void lks_f32_to_bf16_n(const float *x, uint16_t *y, size_t n);
void lks_bf16_to_f32_n(const uint16_t *x, float *y, size_t n);
void lks_f32_to_fp8_n(const float *x, uint8_t *y, size_t n, lks_fp8 fmt, int sat);
void lks_fp8_to_f32_n(const uint8_t *x, float *y, size_t n, lks_fp8 fmt);

#endif
