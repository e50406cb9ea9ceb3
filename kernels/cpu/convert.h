/*
 * convert.h: float32 <-> E4M3 / E5M2 / BF16 in bulk, and the FP8 decode tables.
 *
 * The element casts, their contract (bit-exact with NVIDIA's conversions) and the formats
 * live in kernels/element/cast.h, shared with CUDA; this header adds the CPU's bulk
 * conversions, vectorized on the active ISA path (convert_avx2.c) and bit-identical to
 * those element casts, and the decode tables built from the element decoder.
 */
#ifndef LKS_KERNELS_CPU_CONVERT_H
#define LKS_KERNELS_CPU_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/element/cast.h"

/* The 256 float32 values of a format, indexed by code (NaN codes hold a quiet NaN). */
const float *lks_fp8_table(lks_fp8 fmt);

static inline float lks_fp8_to_f32(uint8_t v, lks_fp8 fmt)
{
	return lks_fp8_table(fmt)[v];
}

/* Bulk versions, vectorized on the active ISA path; bit-identical to the scalar ones. */
void lks_f32_to_bf16_n(const float *x, uint16_t *y, size_t n);
void lks_bf16_to_f32_n(const uint16_t *x, float *y, size_t n);
void lks_f32_to_fp8_n(const float *x, uint8_t *y, size_t n, lks_fp8 fmt, int sat);
void lks_fp8_to_f32_n(const uint8_t *x, float *y, size_t n, lks_fp8 fmt);

#endif
