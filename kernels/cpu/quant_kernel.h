/*
 * quant_kernel.h: the per-ISA inner loops of quantization (private to kernels/cpu).
 *
 * quant.c walks tensors and threads; these loops touch the elements. Each ISA provides the
 * same three operations, and they give the same bits: amax is a max (no order to fix),
 * the cast is one float multiply and the encoder of convert.h lane for lane.
 */
#ifndef LKS_KERNELS_CPU_QUANT_KERNEL_H
#define LKS_KERNELS_CPU_QUANT_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/cpu/convert.h"

/* What one cast counted (see quant.h). */
typedef struct lks_cast_counts {
	uint64_t underflow;
	uint64_t saturated;
} lks_cast_counts;

typedef struct lks_quant_ops {
	/* acc[j] = max(acc[j], |x[j]|) for j < n; a NaN in either side makes acc[j] NaN */
	void (*amax_acc)(const float *x, size_t n, float *acc);
	/* max |x[j]| for j < n, or NaN if any x[j] is NaN; 0 for n = 0 */
	float (*amax)(const float *x, size_t n);
	/* q[j] = satfinite(x[j] * scale[j * per_elem]) and counts */
	void (*cast)(const float *x, size_t n, const float *scale, int per_elem,
	             const lks_fp8_spec *s, uint8_t *q, lks_cast_counts *counts);
} lks_quant_ops;

extern const lks_quant_ops lks_quant_scalar_ops;
extern const lks_quant_ops lks_quant_avx2_ops;

/* The scalar cast of one element, shared by every path's tail. */
static inline uint8_t lks_cast_one(float x, float scale, const lks_fp8_spec *s,
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
