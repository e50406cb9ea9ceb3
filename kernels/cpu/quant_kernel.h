/*
 * quant_kernel.h: the per-ISA inner loops of quantization (private to kernels/cpu).
 *
 * quant.c walks tensors and threads; these loops touch the elements. Each ISA provides the
 * same three operations, and they give the same bits: amax is a max (no order to fix),
 * the cast is one float multiply and the encoder of kernels/element/cast.h lane for lane
 * (lks_cast_one there is the scalar cast, and every path's tail).
 */
#ifndef LKS_KERNELS_CPU_QUANT_KERNEL_H
#define LKS_KERNELS_CPU_QUANT_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/cpu/convert.h"

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

#endif
