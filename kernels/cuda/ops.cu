/*
 * ops.cu: the CUDA backend's element-wise and row-wise methods (ops_cuda.h), in reference
 * mode: each element runs the CPU's lines (kernels/element/, kernels/mathf.h) and each
 * reduction the CPU's order, so every output has the CPU backend's bits (kernels/cpu/ops.c,
 * backend_cpu.c).
 *
 * Element-wise kernels: one element per thread step, in a grid-stride loop. A row reduced
 * by the CPU in index order (an RMSNorm row, a softmax row) is one thread walking it in that
 * order; a sum over rows (the gain's gradient, the embedding's scatter-add) is one thread per
 * column walking the rows in order. No float atomics anywhere; the non-finite count (an
 * integer, exact in any order) adds per-block counts with an integer atomic.
 * Simple rather than fast: it is the reference the production kernels are compared with.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "kernels/cuda/ops_cuda.h"
#include "kernels/element/cast.h"
#include "kernels/element/ops.h"
#include "kernels/mathf.h"

/* ---- element-wise ---- */

__global__ static void lks_round_bf16_kernel(float *x, size_t n)
{
	LKS_FOR_EACH(i, n)
		x[i] = lks_bf16_rounded(x[i]);
}

__global__ static void lks_to_bf16_kernel(const float *x, uint16_t *y, size_t n)
{
	LKS_FOR_EACH(i, n)
		y[i] = lks_f32_to_bf16(x[i]);
}

__global__ static void lks_relu2_fwd_kernel(const float *u, size_t n, float *y, int bf16)
{
	LKS_FOR_EACH(i, n)
		y[i] = lks_bf16_if(lks_relu2(u[i]), bf16);
}

__global__ static void lks_relu2_bwd_kernel(const float *u, const float *dy, size_t n,
                                            float *du, int bf16)
{
	LKS_FOR_EACH(i, n)
		du[i] = lks_bf16_if(lks_relu2_grad(u[i], dy[i]), bf16);
}

/* backend_cpu.c's residual: y = a + b, then the BF16 rounding */
__global__ static void lks_add_kernel(const float *a, const float *b, size_t n, float *y,
                                      int bf16)
{
	LKS_FOR_EACH(i, n)
		y[i] = lks_bf16_if(a[i] + b[i], bf16);
}

__global__ static void lks_clip_kernel(float *g, size_t n, float coef)
{
	LKS_FOR_EACH(i, n)
		g[i] *= coef;
}

__global__ static void lks_adamw_kernel(float *p, const float *g, float *m, float *v, size_t n,
                                        float lr, float b1, float b2, float eps, float wd,
                                        float bc1, float bc2)
{
	LKS_FOR_EACH(i, n)
		lks_adamw_one(&p[i], g[i], &m[i], &v[i], lr, b1, b2, eps, wd, bc1, bc2);
}

/* d (cols, rows) = s (rows, cols)^T, one element of s per step: d[k rows + i] = s[i cols + k] */
template <typename S, typename D, D (*conv)(S)>
__global__ static void lks_transpose_kernel(const S *s, int rows, int cols, D *d)
{
	size_t n = (size_t)rows * (size_t)cols;

	LKS_FOR_EACH(e, n) {
		size_t i = e / (size_t)cols, k = e % (size_t)cols;

		d[k * (size_t)rows + i] = conv(s[e]);
	}
}

template <typename T> __device__ static T lks_same(T x) { return x; }
__device__ static uint16_t lks_to_bf16_dev(float x) { return lks_f32_to_bf16(x); }

/* ---- rows ---- */

__global__ static void lks_rmsnorm_fwd_kernel(const float *x, const float *g, int T, int H,
                                              float *y, float *rstd, int bf16)
{
	LKS_FOR_EACH(t, (size_t)T)
		rstd[t] = lks_rmsnorm_row_fwd(x + t * H, g, H, y + t * H, bf16);
}

__global__ static void lks_rmsnorm_bwd_kernel(const float *dy, const float *x, const float *g,
                                              const float *rstd, int T, int H, float *dx,
                                              int bf16)
{
	LKS_FOR_EACH(t, (size_t)T)
		lks_rmsnorm_row_bwd(dy + t * H, x + t * H, g, rstd[t], H, dx + t * H, bf16);
}

/* the gain's gradient: column i, rows in order (ops_rms.h) */
__global__ static void lks_rmsnorm_dg_kernel(const float *dy, const float *x, const float *rstd,
                                             int T, int H, float *dg)
{
	LKS_FOR_EACH(i, (size_t)H) {
		float acc = dg[i];

		for (int t = 0; t < T; t++)
			acc = lks_rmsnorm_dg_step(acc, dy[(size_t)t * H + i], x[(size_t)t * H + i],
			                          rstd[t]);
		dg[i] = acc;
	}
}

/*
 * Cross-entropy, ops.c's lks_cross_entropy split in two: a thread per row computes the
 * row's max m, sum of exp in double (index order) and loss, log(sum) + m - z[target]; then a
 * thread per element computes dz from the same exp (recomputed: lks_exp is a function of
 * its argument). The host sums the row losses in row order.
 */
__global__ static void lks_ce_rows_kernel(const float *z, const int32_t *target, int T, int V,
                                          float *rmax, double *rsum, double *rloss)
{
	LKS_FOR_EACH(t, (size_t)T) {
		const float *zr = z + t * V;
		float m = zr[0];
		double sum = 0.0;

		for (int v = 1; v < V; v++)
			m = zr[v] > m ? zr[v] : m;
		for (int v = 0; v < V; v++)
			sum += lks_exp((double)zr[v] - m);
		rmax[t] = m;
		rsum[t] = sum;
		rloss[t] = lks_log(sum) + m - zr[target[t]];
	}
}

__global__ static void lks_ce_grad_kernel(const float *z, const int32_t *target, int T, int V,
                                          float grad_scale, const float *rmax,
                                          const double *rsum, float *dz)
{
	LKS_FOR_EACH(e, (size_t)T * V) {
		size_t t = e / (size_t)V;
		int v = (int)(e % (size_t)V);
		double ev = lks_exp((double)z[e] - rmax[t]);

		dz[e] = (float)((ev / rsum[t] - (v == target[t])) * grad_scale);
	}
}

/* ---- the embedding ---- */

__global__ static void lks_embed_gather_kernel(const float *table, const int32_t *tok, int T,
                                               int H, float *y)
{
	LKS_FOR_EACH(e, (size_t)T * H) {
		size_t t = e / (size_t)H, i = e % (size_t)H;

		y[e] = table[(size_t)tok[t] * H + i];
	}
}

/* column i of every row tok[t] gets dy row t added, t ascending (backend_cpu.c's order for
   each element of the table, a token seen twice included); columns are independent */
__global__ static void lks_embed_scatter_kernel(const float *dy, const int32_t *tok, int T,
                                                int H, float *table_grad)
{
	LKS_FOR_EACH(i, (size_t)H)
		for (int t = 0; t < T; t++)
			table_grad[(size_t)tok[t] * H + i] += dy[(size_t)t * H + i];
}

/* ---- the non-finite count: per thread, per block in shared memory, then one integer atomic
   per block ---- */

__global__ static void lks_nonfinite_kernel(const float *x, size_t n, unsigned long long *out)
{
	__shared__ unsigned long long part[LKS_CUDA_THREADS];
	unsigned long long bad = 0;

	LKS_FOR_EACH(i, n)
		bad += (lks_f32_bits(x[i]) & 0x7f800000u) == 0x7f800000u;
	part[threadIdx.x] = bad;
	__syncthreads();
	for (unsigned s = LKS_CUDA_THREADS / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s)
			part[threadIdx.x] += part[threadIdx.x + s];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicAdd(out, part[0]);
}

/* ---- the methods ---- */

LKS_CUDA_OP(round_bf16, float *x, size_t n)
{
	LKS_CUDA_LAUNCH("round_bf16", lks_round_bf16_kernel, n, x, n);
}

LKS_CUDA_OP(to_bf16, const float *x, uint16_t *y, size_t n)
{
	LKS_CUDA_LAUNCH("to_bf16", lks_to_bf16_kernel, n, x, y, n);
}

LKS_CUDA_OP(transpose_u8, const uint8_t *s, int rows, int cols, uint8_t *d)
{
	LKS_CUDA_LAUNCH("transpose_u8", (lks_transpose_kernel<uint8_t, uint8_t, lks_same<uint8_t> >),
	                (size_t)rows * (size_t)cols, s, rows, cols, d);
}

LKS_CUDA_OP(transpose_f32, const float *s, int rows, int cols, float *d)
{
	LKS_CUDA_LAUNCH("transpose_f32", (lks_transpose_kernel<float, float, lks_same<float> >),
	                (size_t)rows * (size_t)cols, s, rows, cols, d);
}

LKS_CUDA_OP(transpose_bf16, const float *s, int rows, int cols, uint16_t *d)
{
	LKS_CUDA_LAUNCH("transpose_bf16", (lks_transpose_kernel<float, uint16_t, lks_to_bf16_dev>),
	                (size_t)rows * (size_t)cols, s, rows, cols, d);
}

LKS_CUDA_OP(rmsnorm_fwd, const float *x, const float *g, int T, int H, float *y, float *rstd,
            int bf16)
{
	LKS_CUDA_LAUNCH("rmsnorm_fwd", lks_rmsnorm_fwd_kernel, (size_t)T, x, g, T, H, y, rstd,
	                bf16);
}

LKS_CUDA_OP(rmsnorm_bwd, const float *dy, const float *x, const float *g, const float *rstd,
            int T, int H, float *dx, float *dg, int bf16)
{
	cudaStream_t st = lks_cuda_enter(ctx);

	(void)be;
	if (T > 0) {
		lks_rmsnorm_bwd_kernel<<<lks_cuda_blocks((size_t)T), LKS_CUDA_THREADS, 0, st>>>(
			dy, x, g, rstd, T, H, dx, bf16);
		if (LKS_CUDA(cudaGetLastError(), "rmsnorm_bwd"))
			return -1;
	}
	if (H <= 0)
		return 0;
	lks_rmsnorm_dg_kernel<<<lks_cuda_blocks((size_t)H), LKS_CUDA_THREADS, 0, st>>>(
		dy, x, rstd, T, H, dg);
	return LKS_CUDA(cudaGetLastError(), "rmsnorm_bwd (gain)");
}

LKS_CUDA_OP(relu2_fwd, const float *u, size_t n, float *y, int bf16)
{
	LKS_CUDA_LAUNCH("relu2_fwd", lks_relu2_fwd_kernel, n, u, n, y, bf16);
}

LKS_CUDA_OP(relu2_bwd, const float *u, const float *dy, size_t n, float *du, int bf16)
{
	LKS_CUDA_LAUNCH("relu2_bwd", lks_relu2_bwd_kernel, n, u, dy, n, du, bf16);
}

LKS_CUDA_OP(cross_entropy, const float *z, const int32_t *target, int T, int V,
            float grad_scale, float *dz, double *loss)
{
	cudaStream_t st = lks_cuda_enter(ctx);
	size_t nt = T > 0 ? (size_t)T : 0;
	double *rsum, *rloss, *host = NULL, total = 0.0;
	float *rmax;
	void *scratch;
	int rc = -1;

	(void)be;
	*loss = 0.0;
	if (nt == 0)
		return 0;
	if (lks_cuda_scratch(ctx, nt * (2 * sizeof(double) + sizeof(float)), &scratch))
		return -1;
	rsum = (double *)scratch;
	rloss = rsum + nt;
	rmax = (float *)(rloss + nt);
	if (!(host = (double *)malloc(nt * sizeof(double))))
		return lks_err("out of memory for %zu row losses", nt);
	lks_ce_rows_kernel<<<lks_cuda_blocks(nt), LKS_CUDA_THREADS, 0, st>>>(z, target, T, V, rmax,
	                                                                       rsum, rloss);
	if (LKS_CUDA(cudaGetLastError(), "cross_entropy (rows)"))
		goto out;
	lks_ce_grad_kernel<<<lks_cuda_blocks(nt * (size_t)V), LKS_CUDA_THREADS, 0, st>>>(
		z, target, T, V, grad_scale, rmax, rsum, dz);
	if (LKS_CUDA(cudaGetLastError(), "cross_entropy (gradient)")
	    || LKS_CUDA(cudaMemcpyAsync(host, rloss, nt * sizeof(double),
	                                cudaMemcpyDeviceToHost, st), "cross_entropy (loss)")
	    || LKS_CUDA(cudaStreamSynchronize(st), "cross_entropy"))
		goto out;
	for (size_t t = 0; t < nt; t++)  /* ops.c's total, in row order */
		total += host[t];
	*loss = total;
	rc = 0;
out:
	free(host);
	return rc;
}

LKS_CUDA_OP(embed_gather, const float *table, const int32_t *tok, int T, int H, float *y)
{
	LKS_CUDA_LAUNCH("embed_gather", lks_embed_gather_kernel,
	                T > 0 && H > 0 ? (size_t)T * (size_t)H : 0, table, tok, T, H, y);
}

LKS_CUDA_OP(embed_scatter_add, const float *dy, const int32_t *tok, int T, int H,
            float *table_grad)
{
	LKS_CUDA_LAUNCH("embed_scatter_add", lks_embed_scatter_kernel,
	                T > 0 && H > 0 ? (size_t)H : 0, dy, tok, T, H, table_grad);
}

LKS_CUDA_OP(add, const float *a, const float *b, size_t n, float *y, int bf16)
{
	LKS_CUDA_LAUNCH("add", lks_add_kernel, n, a, b, n, y, bf16);
}

LKS_CUDA_OP(adamw, float *p, const float *g, float *m, float *v, size_t n, float lr, float b1,
            float b2, float eps, float wd, float bc1, float bc2)
{
	LKS_CUDA_LAUNCH("adamw", lks_adamw_kernel, n, p, g, m, v, n, lr, b1, b2, eps, wd, bc1, bc2);
}

LKS_CUDA_OP(clip, float *g, size_t n, float coef)
{
	LKS_CUDA_LAUNCH("clip", lks_clip_kernel, n, g, n, coef);
}

LKS_CUDA_OP(nonfinite, const float *x, size_t n, int64_t *out)
{
	cudaStream_t st = lks_cuda_enter(ctx);
	unsigned long long count = 0;
	void *d;

	(void)be;
	*out = 0;
	if (n == 0)
		return 0;
	if (lks_cuda_scratch(ctx, sizeof(count), &d)
	    || LKS_CUDA(cudaMemsetAsync(d, 0, sizeof(count), st), "nonfinite"))
		return -1;
	lks_nonfinite_kernel<<<lks_cuda_blocks(n), LKS_CUDA_THREADS, 0, st>>>(
		x, n, (unsigned long long *)d);
	if (LKS_CUDA(cudaGetLastError(), "nonfinite")
	    || LKS_CUDA(cudaMemcpyAsync(&count, d, sizeof(count), cudaMemcpyDeviceToHost, st),
	                "nonfinite")
	    || LKS_CUDA(cudaStreamSynchronize(st), "nonfinite"))
		return -1;
	*out = (int64_t)count;
	return 0;
}
