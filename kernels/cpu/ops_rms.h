/*
 * ops_rms.h: RMSNorm forward and backward, written once and compiled twice: by ops.c
 * (baseline: fmaf is a libm call) and by ops_avx2.c (-mfma: fmaf is one instruction and
 * the gain's gradient, independent per column, vectorizes). fmaf is exact-then-rounded in
 * both, and -ffp-contract=off keeps every other product and sum as written, so both give
 * the same bits. The includer defines LKS_RMS_PREFIX and LKS_RMS_API (static, or empty for
 * functions the other file calls). Private to kernels/cpu.
 */
#include <math.h>
#include <stdint.h>

#include "kernels/cpu/convert.h"

#define LKS_RMS_CAT2(a, b) a##b
#define LKS_RMS_CAT(a, b) LKS_RMS_CAT2(a, b)
#define LKS_RMS(name) LKS_RMS_CAT(LKS_RMS_PREFIX, name)

static inline float LKS_RMS(_maybe_bf16)(float x, int bf16)
{
	return bf16 ? lks_bf16_to_f32(lks_f32_to_bf16(x)) : x;
}

LKS_RMS_API void LKS_RMS(_rmsnorm_fwd)(const float *x, const float *g, int T, int H, float *y,
                                   float *rstd, int bf16)
{
	for (int t = 0; t < T; t++) {
		const float *xr = x + (size_t)t * H;
		float ss = 0.0f, r;

		for (int i = 0; i < H; i++)
			ss = fmaf(xr[i], xr[i], ss);
		/* sqrtf and the division are correctly rounded IEEE operations */
		r = 1.0f / sqrtf(ss / (float)H + LKS_RMSNORM_EPS);
		rstd[t] = r;
		for (int i = 0; i < H; i++)
			y[(size_t)t * H + i] = LKS_RMS(_maybe_bf16)(xr[i] * r * g[i], bf16);
	}
}

LKS_RMS_API void LKS_RMS(_rmsnorm_bwd)(const float *dy, const float *x, const float *g,
                                   const float *rstd, int T, int H, float *dx, float *dg,
                                   int bf16)
{
	for (int t = 0; t < T; t++) {
		const float *xr = x + (size_t)t * H, *dyr = dy + (size_t)t * H;
		float r = rstd[t], dot = 0.0f, c;

		/* y = x r g with r = (mean x^2 + eps)^-1/2:
		   dx = r (g dy) - x r^3 / H * sum(g dy x) */
		for (int i = 0; i < H; i++)
			dot = fmaf(g[i] * dyr[i], xr[i], dot);
		c = dot * r * r * r / (float)H;
		for (int i = 0; i < H; i++)
			dx[(size_t)t * H + i] = LKS_RMS(_maybe_bf16)(r * g[i] * dyr[i] - xr[i] * c, bf16);
	}
	for (int t = 0; t < T; t++)
		for (int i = 0; i < H; i++)
			dg[i] = fmaf(dy[(size_t)t * H + i], x[(size_t)t * H + i] * rstd[t], dg[i]);
}
