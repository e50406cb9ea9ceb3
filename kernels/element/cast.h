/*
 * element/cast.h: the casts and the scale of one element, shared by the CPU and CUDA.
 *
 * float32 <-> E4M3 / E5M2 / BF16, bit-exact with NVIDIA's conversions (the contract is in
 * DESIGN.md, Numerics, and checked against cuda_fp8.hpp / cuda_bf16.hpp over all 2^32
 * float32 bit patterns by tests/kernels/test_convert_exhaustive.c):
 *   - round to nearest, ties to even, subnormals of the target included;
 *   - satfinite: |x| beyond the largest finite value (and +-inf) clamps to +-max;
 *   - no saturation: E4M3 overflow gives NaN (0x7f | sign), E5M2 overflow gives +-inf;
 *   - NaN of any sign or payload gives the canonical positive NaN: 0x7f for both FP8
 *     formats (also under satfinite), 0x7fff for BF16;
 *   - a value that rounds to zero keeps its sign (-tiny gives 0x80).
 * Formats: E4M3 ("fn": bias 7, max 448, no inf, NaN only S.1111.111), E5M2 (bias 15,
 * max 57344, inf 0x7c), BF16 (the top half of a float32).
 *
 * And quantization's element steps with torchao's semantics (kernels/cpu/quant.h): the
 * NaN-propagating max of amax, the scale of one tensor, row or column from its amax, and
 * the satfinite cast of x * scale with its underflow and saturation counts.
 *
 * Every function is static inline LKS_HD (kernels/hd.h): the CPU's scalar code calls these
 * lines and the CUDA kernels run the same ones. The encoders work on the magnitude bits
 * only, with integer adds, so that the vector code in kernels/cpu/convert_avx2.c is the
 * same algorithm lane for lane.
 */
#ifndef LKS_KERNELS_ELEMENT_CAST_H
#define LKS_KERNELS_ELEMENT_CAST_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/backend_types.h"  /* lks_fp8, LKS_E4M3_MAX, LKS_E5M2_MAX */
#include "kernels/hd.h"
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

/* E4M3: overflow above 464 = 448 + half an ulp (464 itself ties to even 448); subnormal
   step 2^-9, so the magic is 2^14; smallest normal 2^-6. */
#define LKS_FP8_SPEC_E4M3 \
	{ "e4m3", LKS_E4M3_MAX, 0x43e80001u, 0x3c800000u, 20, 120u << 3, 0x46800000u, 0x7e, 0x7f }
/* E5M2: overflow from 61440 = 57344 + half an ulp (the tie goes to even, inf); subnormal
   step 2^-16, so the magic is 2^7; smallest normal 2^-14. */
#define LKS_FP8_SPEC_E5M2 \
	{ "e5m2", LKS_E5M2_MAX, 0x47700000u, 0x38800000u, 21, 112u << 2, 0x43000000u, 0x7b, 0x7c }

/* The rows as a host table, indexed by lks_fp8 (device code cannot read a host array). */
static const lks_fp8_spec lks_fp8_specs[2] = { LKS_FP8_SPEC_E4M3, LKS_FP8_SPEC_E5M2 };

/* The same rows on either side. */
static inline LKS_HD lks_fp8_spec lks_fp8_spec_of(lks_fp8 fmt)
{
	const lks_fp8_spec e4m3 = LKS_FP8_SPEC_E4M3, e5m2 = LKS_FP8_SPEC_E5M2;

	return fmt == LKS_FP8_E4M3 ? e4m3 : e5m2;
}

static inline LKS_HD uint32_t lks_f32_bits(float x)
{
#if defined(__CUDA_ARCH__)
	return __float_as_uint(x);
#else
	uint32_t u;
	memcpy(&u, &x, sizeof(u));
	return u;
#endif
}

static inline LKS_HD float lks_bits_f32(uint32_t u)
{
#if defined(__CUDA_ARCH__)
	return __uint_as_float(u);
#else
	float x;
	memcpy(&x, &u, sizeof(x));
	return x;
#endif
}

/* float32 -> FP8 of the format s describes, round to nearest even; sat != 0: satfinite. */
static inline LKS_HD uint8_t lks_fp8_encode(float x, const lks_fp8_spec *s, int sat)
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

static inline LKS_HD uint8_t lks_f32_to_fp8(float x, lks_fp8 fmt, int sat)
{
	lks_fp8_spec s = lks_fp8_spec_of(fmt);

	return lks_fp8_encode(x, &s, sat);
}

static inline LKS_HD uint8_t lks_f32_to_e4m3(float x, int sat)
{
	return lks_f32_to_fp8(x, LKS_FP8_E4M3, sat);
}

static inline LKS_HD uint8_t lks_f32_to_e5m2(float x, int sat)
{
	return lks_f32_to_fp8(x, LKS_FP8_E5M2, sat);
}

/* The value of code c in a format with ebits exponent bits and mbits mantissa bits, from
   the format's definition (ldexpf is exact for every FP8 value); NaN codes give a quiet NaN
   of the code's sign. */
static inline LKS_HD float lks_fp8_value(unsigned c, int ebits, int mbits, int has_inf)
{
	int bias = (1 << (ebits - 1)) - 1;
	unsigned e = (c >> mbits) & ((1u << ebits) - 1);
	unsigned m = c & ((1u << mbits) - 1);
	float sign = (c & 0x80) ? -1.0f : 1.0f;
	unsigned emax = (1u << ebits) - 1;

	if (e == emax && has_inf)  /* IEEE-like top exponent: inf or NaN */
		return m == 0 ? sign * INFINITY : copysignf(NAN, sign);
	if (e == emax && m == (1u << mbits) - 1)  /* E4M3 "fn": only S.1111.111 is NaN */
		return copysignf(NAN, sign);
	if (e == 0)
		return sign * ldexpf((float)m, 1 - bias - mbits);
	return sign * ldexpf((float)((1u << mbits) | m), (int)e - bias - mbits);
}

/* FP8 -> float32 (the CPU reads the same values from lks_fp8_table, built by this). */
static inline LKS_HD float lks_fp8_decode(uint8_t c, lks_fp8 fmt)
{
	return fmt == LKS_FP8_E4M3 ? lks_fp8_value(c, 4, 3, 0) : lks_fp8_value(c, 5, 2, 1);
}

/* float32 -> BF16, round to nearest even; NaN -> 0x7fff. */
static inline LKS_HD uint16_t lks_f32_to_bf16(float x)
{
	uint32_t u = lks_f32_bits(x);

	if ((u & 0x7fffffffu) > 0x7f800000u)
		return LKS_BF16_NAN;
	return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static inline LKS_HD float lks_bf16_to_f32(uint16_t h)
{
	return lks_bits_f32((uint32_t)h << 16);
}

/* IEEE half's bits as the float they are (exact: every half is a float). */
static inline LKS_HD float lks_f16_to_f32(uint16_t h)
{
	uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
	float f;

	if (e == 0x1f)
		return lks_bits_f32(s | 0x7f800000u | (m << 13));
	if (e)
		return lks_bits_f32(s | ((e + 112) << 23) | (m << 13));
	f = (float)m * 0x1p-24f;  /* subnormal or 0: m x 2^-24, exact in float */
	return s ? -f : f;
}

/* x rounded to BF16 and held as a float32, as a framework stores an activation. */
static inline LKS_HD float lks_bf16_rounded(float x)
{
	return lks_bf16_to_f32(lks_f32_to_bf16(x));
}

/* ---- quantization's element steps ---- */

/* One step of amax: max(acc, v), NaN if either is NaN. */
static inline LKS_HD float lks_nanmax(float acc, float v)
{
	if (isnan(acc) || isnan(v))
		return NAN;
	return v > acc ? v : acc;
}

/* A planted fault (harness/engine/fault.h, scale_round_up): power-of-two scales rounded up, so
   amax x scale can pass fp8_max and saturate. Never used by a recipe. */
#define LKS_POW2_UP 2

/* scale = (float)(fp8_max / max((double)amax, 1e-12)), NaN for a NaN amax; pow2: the
   mantissa bits cleared (2^floor(log2(scale))), LKS_POW2_UP: rounded up instead. */
static inline LKS_HD float lks_fp8_scale(float amax, lks_fp8 fmt, int pow2)
{
	double den = (double)amax > 1e-12 ? (double)amax : 1e-12;
	float scale;

	if (isnan(amax))
		return NAN;  /* as torch.clamp: a NaN amax stays NaN */
	scale = (float)((double)lks_fp8_spec_of(fmt).max / den);
	/* scale is finite (<= 57344 / 1e-12) and either 0 (amax = inf) or a normal float
	   (>= 448 / FLT_MAX), so clearing the mantissa is exactly 2^floor(log2(scale)) */
	if (pow2 == LKS_POW2_UP && (lks_f32_bits(scale) & 0x007fffffu))
		return lks_bits_f32((lks_f32_bits(scale) & 0xff800000u) + 0x00800000u);
	if (pow2)
		scale = lks_bits_f32(lks_f32_bits(scale) & 0xff800000u);
	return scale;
}

/* What casts counted: underflow = non-zero x whose code is +-0; saturated = x * scale beyond
   what rounds to a finite FP8 value (+-inf included), clamped to +-max. */
typedef struct lks_cast_counts {
	uint64_t underflow;
	uint64_t saturated;
} lks_cast_counts;

/* The quantizing cast of one element: satfinite(x * scale), the product rounded to float32. */
static inline LKS_HD uint8_t lks_cast_one(float x, float scale, const lks_fp8_spec *s,
                                          lks_cast_counts *counts)
{
	float y = x * scale;
	uint32_t a = lks_f32_bits(y) & 0x7fffffffu;
	uint8_t code = lks_fp8_encode(y, s, 1);

	counts->underflow += (x != 0.0f) & ((code & 0x7f) == 0);
	counts->saturated += (a >= s->overflow) & (a <= 0x7f800000u);
	return code;
}

#endif
