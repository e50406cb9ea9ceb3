/*
 * element_check.cu: every shared element function, compiled as device code.
 *
 * The per-element code of kernels/element/, kernels/mathf.h and kernels/philox.h is
 * static inline LKS_HD, so a header that stops compiling as CUDA C (a host-only call, a
 * host table read on the device) would go unnoticed until a CUDA kernel first called it.
 * These kernels call each function, so building lks_cuda is the check. They are external
 * (not static), so nvcc emits their device code whether or not anything launches them;
 * nothing here launches them yet: the CUDA backend's kernels (the next issue) will call
 * the same functions, and its tests will compare their bits with the CPU's.
 */
#include <stddef.h>
#include <stdint.h>

#include "kernels/element/cast.h"
#include "kernels/element/ops.h"
#include "kernels/mathf.h"
#include "kernels/philox.h"

/* Casts and decodes of x[i] into each format; counts summed per thread (not reduced). */
__global__ void lks_element_cast_kernel(const float *x, size_t n, int sat, uint8_t *e4m3,
                                        uint8_t *e5m2, uint16_t *bf16, float *back)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	e4m3[i] = lks_f32_to_e4m3(x[i], sat);
	e5m2[i] = lks_f32_to_e5m2(x[i], sat);
	bf16[i] = lks_f32_to_bf16(x[i]);
	back[i] = lks_fp8_decode(e4m3[i], LKS_FP8_E4M3) + lks_fp8_decode(e5m2[i], LKS_FP8_E5M2)
	          + lks_bf16_to_f32(bf16[i]) + lks_bf16_rounded(x[i]);
}

/* One amax over x (one thread, in order), its scale, and the quantizing casts with counts. */
__global__ void lks_element_quant_kernel(const float *x, size_t n, lks_fp8 fmt, int pow2,
                                         float *scale, uint8_t *q, lks_cast_counts *counts)
{
	lks_fp8_spec s = lks_fp8_spec_of(fmt);
	lks_cast_counts c = { 0, 0 };
	float amax = 0.0f;

	for (size_t i = 0; i < n; i++)
		amax = lks_nanmax(amax, fabsf(x[i]));
	*scale = lks_fp8_scale(amax, fmt, pow2);
	for (size_t i = 0; i < n; i++)
		q[i] = lks_cast_one(x[i], *scale, &s, &c);
	*counts = c;
}

/* RMSNorm of T rows of H, one thread per row, then the gain's gradient one thread per column. */
__global__ void lks_element_rmsnorm_kernel(const float *x, const float *g, const float *dy,
                                           int T, int H, int bf16, float *y, float *rstd,
                                           float *dx, float *dg)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;

	if (t < T) {
		rstd[t] = lks_rmsnorm_row_fwd(x + (size_t)t * H, g, H, y + (size_t)t * H, bf16);
		lks_rmsnorm_row_bwd(dy + (size_t)t * H, x + (size_t)t * H, g, rstd[t], H,
		                    dx + (size_t)t * H, bf16);
	}
	if (t < H)  /* reads rstd of every row: a real kernel runs this after the rows */
		for (int r = 0; r < T; r++)
			dg[t] = lks_rmsnorm_dg_step(dg[t], dy[(size_t)r * H + t], x[(size_t)r * H + t],
			                            rstd[r]);
}

/* Squared ReLU and its gradient, rounded to BF16 as the model stores them. */
__global__ void lks_element_relu2_kernel(const float *u, const float *dy, size_t n, int bf16,
                                         float *y, float *du)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n) {
		y[i] = lks_bf16_if(lks_relu2(u[i]), bf16);
		du[i] = lks_bf16_if(lks_relu2_grad(u[i], dy[i]), bf16);
	}
}

__global__ void lks_element_adamw_kernel(float *p, const float *g, float *m, float *v, size_t n,
                                         float lr, float b1, float b2, float eps, float wd,
                                         float bc1, float bc2)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		lks_adamw_one(&p[i], g[i], &m[i], &v[i], lr, b1, b2, eps, wd, bc1, bc2);
}

/* The transcendentals of mathf.h and the Philox values of (seed, stream, offset + i). */
__global__ void lks_element_math_rng_kernel(const double *x, size_t n, uint64_t seed,
                                            uint32_t stream, uint64_t offset, double *exp_log,
                                            double *cospi, uint32_t *u32, float *uniform,
                                            float *normal)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	exp_log[i] = lks_exp(x[i]) + lks_log(fabs(x[i]) + 1.0);
	cospi[i] = lks_cospi(fmin(fabs(x[i]), 1.0));
	u32[i] = lks_philox_u32(seed, stream, offset + i);
	uniform[i] = lks_philox_uniform(seed, stream, offset + i);
	normal[i] = lks_philox_normal(seed, stream, offset + i);
}
