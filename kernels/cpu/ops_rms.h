/*
 * ops_rms.h: RMSNorm forward and backward over T rows, written once (the row's arithmetic
 * is kernels/element/ops.h, shared with CUDA) and compiled twice: by ops.c
 * (baseline: fmaf is a libm call) and by ops_avx2.c (-mfma: fmaf is one instruction and
 * the gain's gradient, independent per column, vectorizes). fmaf is exact-then-rounded in
 * both, and -ffp-contract=off keeps every other product and sum as written, so both give
 * the same bits. The includer defines LKS_RMS_PREFIX and LKS_RMS_API (static, or empty for
 * functions the other file calls). Private to kernels/cpu.
 */
#if !defined(LKS_RMS_PREFIX) || !defined(LKS_RMS_API)
#error "ops_rms.h: define LKS_RMS_PREFIX and LKS_RMS_API before including it"
#endif
#include <stddef.h>

#include "kernels/element/ops.h"

#define LKS_RMS_CAT2(a, b) a##b
#define LKS_RMS_CAT(a, b) LKS_RMS_CAT2(a, b)
#define LKS_RMS(name) LKS_RMS_CAT(LKS_RMS_PREFIX, name)

LKS_RMS_API void LKS_RMS(_rmsnorm_fwd)(const float *x, const float *g, int T, int H, float *y,
                                   float *rstd, int bf16)
{
	for (int t = 0; t < T; t++)
		rstd[t] = lks_rmsnorm_row_fwd(x + (size_t)t * H, g, H, y + (size_t)t * H, bf16);
}

LKS_RMS_API void LKS_RMS(_rmsnorm_bwd)(const float *dy, const float *x, const float *g,
                                   const float *rstd, int T, int H, float *dx, float *dg,
                                   int bf16)
{
	for (int t = 0; t < T; t++)
		lks_rmsnorm_row_bwd(dy + (size_t)t * H, x + (size_t)t * H, g, rstd[t], H,
		                    dx + (size_t)t * H, bf16);
	for (int t = 0; t < T; t++)  /* per column, rows in order: vectorizes over columns */
		for (int i = 0; i < H; i++)
			dg[i] = lks_rmsnorm_dg_step(dg[i], dy[(size_t)t * H + i], x[(size_t)t * H + i],
			                            rstd[t]);
}
