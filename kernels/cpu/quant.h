/*
 * quant.h: FP8 quantization with torchao's semantics (DESIGN.md, Numerics).
 *
 *   amax  = max |x| over the tensor, a row or a column; NaN if any element is NaN
 *   scale = (float)(fp8_max / max((double)amax, 1e-12))       (NaN amax: NaN scale)
 *           with pow2: 2^floor(log2(scale)), i.e. the mantissa bits cleared
 *   q     = satfinite(x * scale)      (the product rounded to float32, then the cast)
 *   x'    = decode(q) * (1.0f / scale)                         (dequantize)
 *
 * Counts at each cast: underflow = non-zero x whose code is +-0; saturated = x * scale
 * beyond what rounds to a finite FP8 value (+-inf included), clamped to +-max. The element
 * steps (lks_nanmax, lks_fp8_scale, lks_cast_one) are in kernels/element/cast.h, shared
 * with CUDA.
 * amax and counts are exact whatever the reduction order, so every ISA path and thread
 * count gives the same results.
 */
#ifndef LKS_KERNELS_CPU_QUANT_H
#define LKS_KERNELS_CPU_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/backend_types.h"
#include "kernels/cpu/convert.h"
#include "kernels/pool.h"

/* lks_fp8, lks_axis, lks_quant, lks_quant_nscales: kernels/backend_types.h. lks_fp8_scale (the
   scale of an amax), lks_nanmax and LKS_POW2_UP (a planted fault's rounding) are element
   steps, in kernels/element/cast.h through convert.h. */

/* Fails (lks_err) on a descriptor no backend can run: a bad shape, format or axis, a
   missing pointer; the CUDA backend checks with it too. */
int lks_quant_check(const lks_quant *q);

/* amax of n contiguous values (NaN-propagating). */
float lks_amax(const float *x, size_t n);

/* amax -> scale -> satfinite cast, with counts; rows spread over pool. With scale_given
   the amax is still computed (when q->amax is set) but the given scales are used. */
int lks_quantize(lks_pool *pool, lks_quant *q);

/* y(rows, cols) = decode(q) * (1.0f / scale) with the scales of q's axis. */
void lks_dequantize(const lks_quant *q, float *y, size_t ldy);

#endif
