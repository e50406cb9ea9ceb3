/*
 * element/ops.h: the model's per-element and per-row arithmetic, shared by the CPU and CUDA.
 *
 * The RMSNorm of one row (forward, backward, and one step of the gain's gradient), squared
 * ReLU of one element and its gradient, and the AdamW update of one element, each
 * static inline LKS_HD (kernels/hd.h): kernels/cpu/ops.c and ops_rms.h call these lines,
 * and a CUDA kernel runs the same ones. Sums run in index order with fmaf where written
 * (exact, then rounded once, on both sides); every other product and sum is as written, which
 * -ffp-contract=off (C) and -fmad=false (CUDA) keep. sqrtf and divisions are the correctly
 * rounded IEEE operations on both sides (nvcc's default -prec-sqrt=true -prec-div=true).
 */
#ifndef LKS_KERNELS_ELEMENT_OPS_H
#define LKS_KERNELS_ELEMENT_OPS_H

#include <math.h>
#include <stdint.h>

#include "kernels/element/cast.h"
#include "kernels/hd.h"

#define LKS_RMSNORM_EPS 1e-6f

/* x, rounded to BF16 when bf16 is set (the model's activations), else kept float32. */
static inline LKS_HD float lks_bf16_if(float x, int bf16)
{
	return bf16 ? lks_bf16_rounded(x) : x;
}

/* RMSNorm forward of one row: y (H) = bf16(x r g), with r = 1 / sqrt(mean(x^2) + eps) over
   the row, summed in index order; returns r (the row's rstd). */
static inline LKS_HD float lks_rmsnorm_row_fwd(const float *x, const float *g, int H, float *y,
                                               int bf16)
{
	float ss = 0.0f, r;

	for (int i = 0; i < H; i++)
		ss = fmaf(x[i], x[i], ss);
	r = 1.0f / sqrtf(ss / (float)H + LKS_RMSNORM_EPS);
	for (int i = 0; i < H; i++)
		y[i] = lks_bf16_if(x[i] * r * g[i], bf16);
	return r;
}

/* RMSNorm backward of one row with rstd r: y = x r g with r = (mean x^2 + eps)^-1/2 gives
   dx = r (g dy) - x r^3 / H * sum(g dy x), the sum in index order. */
static inline LKS_HD void lks_rmsnorm_row_bwd(const float *dy, const float *x, const float *g,
                                              float r, int H, float *dx, int bf16)
{
	float dot = 0.0f, c;

	for (int i = 0; i < H; i++)
		dot = fmaf(g[i] * dy[i], x[i], dot);
	c = dot * r * r * r / (float)H;
	for (int i = 0; i < H; i++)
		dx[i] = lks_bf16_if(r * g[i] * dy[i] - x[i] * c, bf16);
}

/* One row's term of the gain's gradient: dg + dy x r; dg (H) sums the rows in row order. */
static inline LKS_HD float lks_rmsnorm_dg_step(float dg, float dy, float x, float r)
{
	return fmaf(dy, x * r, dg);
}

/*
 * max(u, 0) that lets a NaN through, as torch.relu does, so a NaN is not hidden; -0 gives
 * +0. On the bits: a float compare in the loop would keep the compiler from vectorizing
 * (it may trap), an integer select does not.
 */
static inline LKS_HD float lks_relu(float u)
{
	uint32_t b = lks_f32_bits(u);
	uint32_t keep = (b >> 31 == 0) | ((b & 0x7fffffffu) > 0x7f800000u);

	return lks_bits_f32(b & (0u - keep));  /* all ones or zero: no branch */
}

/* Squared ReLU, max(u, 0)^2 (before any BF16 rounding). */
static inline LKS_HD float lks_relu2(float u)
{
	float r = lks_relu(u);

	return r * r;
}

/* Its gradient for dy: 2 max(u, 0) dy (before any BF16 rounding). */
static inline LKS_HD float lks_relu2_grad(float u, float dy)
{
	return 2.0f * lks_relu(u) * dy;
}

/* The clip of a gradient of L2 norm norm to at most clip (0: none), as PyTorch's
   clip_grad_norm_: 1 and *coef = clip / (norm + 1e-6) in double, rounded to float, where
   clip > 0 and !(norm <= clip) (a NaN norm gives a NaN coefficient, an infinite one 0);
   else 0: the gradient stays as it is (PyTorch would scale a norm less than 1e-6 below
   clip by a hair under 1; the goldens keep their bits). The runner's and the cuda
   backend's update decide with these lines. */
static inline LKS_HD int lks_clip_coef(double norm, float clip, float *coef)
{
	if (!(clip > 0.0f && !(norm <= (double)clip)))
		return 0;
	*coef = (float)((double)clip / (norm + 1e-6));
	return 1;
}

/*
 * AdamW of one element, decoupled weight decay, bias-corrected by bc1 = 1 - beta1^t and
 * bc2 = 1 - beta2^t (the caller's running products):
 *   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
 *   p = p - lr (wd p + (m / bc1) / (sqrt(v / bc2) + eps))      (wd = 0 for gains)
 */
static inline LKS_HD void lks_adamw_one(float *p, float g, float *m, float *v, float lr,
                                        float b1, float b2, float eps, float wd, float bc1,
                                        float bc2)
{
	float mi = b1 * *m + (1.0f - b1) * g;
	float vi = b2 * *v + (1.0f - b2) * (g * g);

	*m = mi;
	*v = vi;
	*p = *p - lr * (wd * *p + (mi / bc1) / (sqrtf(vi / bc2) + eps));
}

#endif
