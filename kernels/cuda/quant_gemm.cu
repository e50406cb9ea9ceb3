/*
 * quant_gemm.cu: FP8 quantization and the reference GEMM on the GPU (see quant_gemm.h).
 *
 * Every value comes from the element code the CPU runs (kernels/element/cast.h), compiled
 * with -fmad=false, so that only the fmaf() written here fuses.
 *
 * Quantize, in the CPU's steps (kernels/cpu/quant.c):
 *   amax   tensorwise: a NaN-propagating max per block, then one block over the blocks;
 *          rowwise: a block per row; columnwise: a thread per column, rows ascending.
 *          A max of magnitudes is the same whatever the order (NaN wins, and all values
 *          are >= +0), so these give the CPU's amax; the block that finishes an amax
 *          writes its scale (lks_fp8_scale), unless the scales are given.
 *   cast   lks_cast_one per element, with per-thread counts summed per block (integers),
 *          the blocks' counts summed on the host: exact in any order, no atomics.
 * Reference GEMM (kernels/cpu/gemm.h): one thread per element of C; blocks of TILE x TILE
 * threads stage TILE columns of K of their A rows and B rows in shared memory, widened to
 * float32 as the CPU widens them, and every thread runs
 *   acc = 0.0f;  for k = 0 .. K-1:  acc = fmaf(a(i,k), b(j,k), acc);
 * stopping at K exactly (an extra fmaf(0, 0, acc) would turn an acc of -0 into +0); then
 * the epilogue as the CPU writes it: c = acc * ((1/scale_a) * (1/scale_b)) when an operand
 * is scaled, and the BF16 rounding of cast.h.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>

#include "kernels/element/cast.h"  /* outside extern "C": it includes <math.h> */

extern "C" {
#include "kernels/cpu/gemm.h"      /* lks_gemm_check */
#include "kernels/cpu/quant.h"     /* lks_quant_check */
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/quant_gemm.h"
#include "kernels/err.h"
}

#define LKS_QUANT_THREADS 256     /* threads of a reduction or cast block, a power of two */
#define LKS_QUANT_BLOCKS_MAX 1024 /* blocks of the tensorwise amax and of the cast */
#define LKS_GEMM_TILE 16          /* the reference GEMM's block: TILE x TILE elements of C */
#define LKS_GEMM_YBLOCKS_MAX 65535 /* gridDim.y's limit; more row blocks loop */

/* ---- quantize ---- */

/* The NaN-propagating max of every thread's v; every thread gets it. sh: blockDim.x floats. */
__device__ static float lks_block_nanmax(float v, float *sh)
{
	float m;

	sh[threadIdx.x] = v;
	__syncthreads();
	for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
		if (threadIdx.x < s)
			sh[threadIdx.x] = lks_nanmax(sh[threadIdx.x], sh[threadIdx.x + s]);
		__syncthreads();
	}
	m = sh[0];
	__syncthreads();  /* sh is free again for the next call */
	return m;
}

/* The block that finished amax m of scale slot i writes what is wanted of it. */
__device__ static void lks_amax_store(float m, size_t i, lks_fp8 fmt, int pow2, int scale_given,
                                      float *amax, float *scale)
{
	if (amax)
		amax[i] = m;
	if (!scale_given)
		scale[i] = lks_fp8_scale(m, fmt, pow2);
}

/* part[block] <- the amax of the elements the block strides over (tensorwise, first pass). */
__global__ static void lks_amax_part_kernel(const float *x, int rows, int cols, size_t ldx,
                                            float *part)
{
	__shared__ float sh[LKS_QUANT_THREADS];
	size_t n = (size_t)rows * (size_t)cols;
	float m = 0.0f;

	for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
	     e += (size_t)gridDim.x * blockDim.x)
		m = lks_nanmax(m, fabsf(x[e / (size_t)cols * ldx + e % (size_t)cols]));
	m = lks_block_nanmax(m, sh);
	if (threadIdx.x == 0)
		part[blockIdx.x] = m;
}

/* The tensor's amax from the nparts partial ones (one block), and its scale. */
__global__ static void lks_amax_tensor_kernel(const float *part, int nparts, lks_fp8 fmt,
                                              int pow2, int scale_given, float *amax,
                                              float *scale)
{
	__shared__ float sh[LKS_QUANT_THREADS];
	float m = 0.0f;

	for (int t = threadIdx.x; t < nparts; t += blockDim.x)
		m = lks_nanmax(m, part[t]);
	m = lks_block_nanmax(m, sh);
	if (threadIdx.x == 0)
		lks_amax_store(m, 0, fmt, pow2, scale_given, amax, scale);
}

/* A block per row (rows strided over the grid): amax over the row's columns, its scale. */
__global__ static void lks_amax_rows_kernel(const float *x, int rows, int cols, size_t ldx,
                                            lks_fp8 fmt, int pow2, int scale_given,
                                            float *amax, float *scale)
{
	__shared__ float sh[LKS_QUANT_THREADS];

	for (int r = blockIdx.x; r < rows; r += gridDim.x) {
		const float *xr = x + (size_t)r * ldx;  /* (cols) */
		float m = 0.0f;

		for (int c = threadIdx.x; c < cols; c += blockDim.x)
			m = lks_nanmax(m, fabsf(xr[c]));
		m = lks_block_nanmax(m, sh);
		if (threadIdx.x == 0)
			lks_amax_store(m, (size_t)r, fmt, pow2, scale_given, amax, scale);
	}
}

/* A thread per column: amax over the rows, its scale. */
__global__ static void lks_amax_cols_kernel(const float *x, int rows, int cols, size_t ldx,
                                            lks_fp8 fmt, int pow2, int scale_given,
                                            float *amax, float *scale)
{
	int c = blockIdx.x * blockDim.x + threadIdx.x;
	float m = 0.0f;

	if (c >= cols)
		return;
	for (int r = 0; r < rows; r++)
		m = lks_nanmax(m, fabsf(x[(size_t)r * ldx + c]));
	lks_amax_store(m, (size_t)c, fmt, pow2, scale_given, amax, scale);
}

/* q = satfinite(x * scale) element by element; counts[2*block], [2*block+1] <- the block's
   underflow and saturation counts. */
__global__ static void lks_cast_kernel(const float *x, int rows, int cols, size_t ldx,
                                       lks_fp8 fmt, lks_axis axis, const float *scale,
                                       uint8_t *q, size_t ldq, uint64_t *counts)
{
	__shared__ uint64_t under[LKS_QUANT_THREADS], sat[LKS_QUANT_THREADS];
	lks_fp8_spec s = lks_fp8_spec_of(fmt);
	lks_cast_counts cnt = { 0, 0 };
	size_t n = (size_t)rows * (size_t)cols;

	for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
	     e += (size_t)gridDim.x * blockDim.x) {
		size_t r = e / (size_t)cols, c = e % (size_t)cols;
		size_t k = axis == LKS_AXIS_ROW ? r : axis == LKS_AXIS_COL ? c : 0;

		q[r * ldq + c] = lks_cast_one(x[r * ldx + c], scale[k], &s, &cnt);
	}
	under[threadIdx.x] = cnt.underflow;
	sat[threadIdx.x] = cnt.saturated;
	__syncthreads();
	for (unsigned h = blockDim.x / 2; h > 0; h /= 2) {
		if (threadIdx.x < h) {
			under[threadIdx.x] += under[threadIdx.x + h];
			sat[threadIdx.x] += sat[threadIdx.x + h];
		}
		__syncthreads();
	}
	if (threadIdx.x == 0) {
		counts[2 * (size_t)blockIdx.x] = under[0];
		counts[2 * (size_t)blockIdx.x + 1] = sat[0];
	}
}

/* Queues the amax (and scale) kernels of q's axis; part: LKS_QUANT_BLOCKS_MAX floats. */
static void lks_cuda_amax(cudaStream_t st, const lks_quant *q, int nblocks, float *part)
{
	const int T = LKS_QUANT_THREADS;

	switch (q->axis) {
	case LKS_AXIS_TENSOR:
		lks_amax_part_kernel<<<nblocks, T, 0, st>>>(q->x, q->rows, q->cols, q->ldx, part);
		lks_amax_tensor_kernel<<<1, T, 0, st>>>(part, nblocks, q->fmt, q->pow2,
		                                        q->scale_given, q->amax, q->scale);
		break;
	case LKS_AXIS_ROW:
		if (q->rows > 0)
			lks_amax_rows_kernel<<<q->rows, T, 0, st>>>(q->x, q->rows, q->cols, q->ldx,
			                                            q->fmt, q->pow2, q->scale_given,
			                                            q->amax, q->scale);
		break;
	case LKS_AXIS_COL:
		if (q->cols > 0)
			lks_amax_cols_kernel<<<(q->cols + T - 1) / T, T, 0, st>>>(
				q->x, q->rows, q->cols, q->ldx, q->fmt, q->pow2, q->scale_given, q->amax,
				q->scale);
		break;
	}
}

static_assert(LKS_CUDA_QUANT_SCRATCH >= LKS_QUANT_BLOCKS_MAX * (2 * sizeof(uint64_t) +
                                                               sizeof(float)),
              "quantize's scratch");

extern "C" int lks_cuda_quantize(void *stream, lks_quant *q)
{
	return lks_cuda_quantize_in(stream, q, NULL);
}

extern "C" int lks_cuda_quantize_in(void *stream, lks_quant *q, void *given)
{
	cudaStream_t st = (cudaStream_t)stream;
	size_t n, blocks;
	int nblocks;
	char *scratch = (char *)given;  /* counts (2 per block), then part (a float per block) */
	uint64_t *counts_d, *counts = NULL;
	float *part;
	int rc = -1;

	if (!q)
		return lks_err("cuda: quantize: descriptor is NULL");
	if (lks_quant_check(q))
		return -1;
	n = (size_t)q->rows * (size_t)q->cols;
	blocks = (n + LKS_QUANT_THREADS - 1) / LKS_QUANT_THREADS;
	nblocks = blocks == 0 ? 1 : blocks > LKS_QUANT_BLOCKS_MAX ? LKS_QUANT_BLOCKS_MAX
	                                                        : (int)blocks;
	counts = (uint64_t *)malloc(2 * sizeof(uint64_t) * (size_t)nblocks);
	if (!counts) {
		lks_err("cuda: quantize: out of memory");
		goto out;
	}
	if (!given && LKS_CUDA(cudaMallocAsync((void **)&scratch,
	                                       (2 * sizeof(uint64_t) + sizeof(float)) * nblocks,
	                                       st), "quantize: scratch")) {
		scratch = NULL;
		goto out;
	}
	counts_d = (uint64_t *)scratch;
	part = (float *)(scratch + 2 * sizeof(uint64_t) * (size_t)nblocks);

	/* as the CPU: the amax is skipped only when the scales are given and no amax is wanted */
	if (!q->scale_given || q->amax)
		lks_cuda_amax(st, q, nblocks, part);
	q->underflow = q->saturated = 0;
	if (n > 0) {
		lks_cast_kernel<<<nblocks, LKS_QUANT_THREADS, 0, st>>>(
			q->x, q->rows, q->cols, q->ldx, q->fmt, q->axis, q->scale, q->q, q->ldq, counts_d);
		if (LKS_CUDA(cudaGetLastError(), "quantize")
		    || (!q->no_counts
		        && LKS_CUDA(cudaMemcpyAsync(counts, counts_d,
		                                    2 * sizeof(uint64_t) * (size_t)nblocks,
		                                    cudaMemcpyDeviceToHost, st), "quantize")))
			goto out;
	}
	if (LKS_CUDA(cudaGetLastError(), "quantize")
	    || (!q->no_counts && LKS_CUDA(cudaStreamSynchronize(st), "quantize")))
		goto out;
	for (int b = 0; n > 0 && !q->no_counts && b < nblocks; b++) {
		q->underflow += counts[2 * b];
		q->saturated += counts[2 * b + 1];
	}
	rc = 0;
out:
	if (!given && scratch && rc == 0)
		rc = LKS_CUDA(cudaFreeAsync(scratch, st), "quantize: scratch");
	else if (!given && scratch)
		cudaFreeAsync(scratch, st);  /* the first error is the one said */
	free(counts);
	return rc;
}

/* ---- the reference GEMM ---- */

/* Element (r, k) of an operand widened exactly to float32, as the CPU's packer does. */
__device__ static float lks_widen(lks_dtype t, const void *data, size_t ld, int r, int k)
{
	size_t i = (size_t)r * ld + (size_t)k;

	switch (t) {
	case LKS_F32: return ((const float *)data)[i];
	case LKS_BF16: return lks_bf16_to_f32(((const uint16_t *)data)[i]);
	case LKS_E4M3: return lks_fp8_decode(((const uint8_t *)data)[i], LKS_FP8_E4M3);
	case LKS_E5M2: return lks_fp8_decode(((const uint8_t *)data)[i], LKS_FP8_E5M2);
	}
	return 0.0f;
}

/* 1/scale of operand row r, or 1.0f unscaled (gemm.c's lks_inv_scales). */
__device__ static float lks_inv_scale(const lks_operand *op, int r)
{
	if (op->scaling == LKS_SCALE_AXIS)
		return 1.0f / op->scale[r];
	if (op->scaling == LKS_SCALE_TENSOR)
		return 1.0f / op->scale[0];
	return 1.0f;
}

__global__ static void lks_gemm_ref_kernel(lks_gemm g)
{
	__shared__ float as[LKS_GEMM_TILE][LKS_GEMM_TILE];  /* (i, k) of the tile's A rows */
	__shared__ float bs[LKS_GEMM_TILE][LKS_GEMM_TILE];  /* (j, k) of the tile's B rows */
	const int T = LKS_GEMM_TILE, tx = threadIdx.x, ty = threadIdx.y;
	int j = blockIdx.x * T + tx;
	int scaled = g.a.scaling != LKS_SCALE_NONE || g.b.scaling != LKS_SCALE_NONE;

	for (int i0 = blockIdx.y * T; i0 < g.M; i0 += gridDim.y * T) {  /* uniform per block */
		int i = i0 + ty;
		float acc = 0.0f;

		for (int k0 = 0; k0 < g.K; k0 += T) {
			int kc = g.K - k0 < T ? g.K - k0 : T;
			int ar = i0 + ty, br = blockIdx.x * T + ty;  /* rows loaded by this thread */

			/* thread (ty, tx) loads A(i0+ty, k0+tx) and B(j0+ty, k0+tx); outside the
			   operands +0.0f, which feeds only elements never stored */
			as[ty][tx] = ar < g.M && tx < kc ? lks_widen(g.a.dtype, g.a.data, g.a.ld, ar,
			                                             k0 + tx) : 0.0f;
			bs[ty][tx] = br < g.N && tx < kc ? lks_widen(g.b.dtype, g.b.data, g.b.ld, br,
			                                             k0 + tx) : 0.0f;
			__syncthreads();
			for (int k = 0; k < kc; k++)
				acc = fmaf(as[ty][k], bs[tx][k], acc);
			__syncthreads();
		}
		if (i < g.M && j < g.N) {
			float c = scaled ? acc * (lks_inv_scale(&g.a, i) * lks_inv_scale(&g.b, j)) : acc;
			size_t o = (size_t)i * g.ldc + (size_t)j;

			if (g.out == LKS_BF16)
				((uint16_t *)g.c)[o] = lks_f32_to_bf16(c);
			else
				((float *)g.c)[o] = c;
		}
	}
}

extern "C" int lks_cuda_gemm_ref(void *stream, const lks_gemm *g)
{
	cudaStream_t st = (cudaStream_t)stream;
	const int T = LKS_GEMM_TILE;
	unsigned gx, gy;

	if (lks_gemm_check(g))  /* the CPU's checks; none reads device memory */
		return -1;
	if (g->M == 0 || g->N == 0)
		return 0;
	gx = (unsigned)((g->N + T - 1) / T);
	gy = (unsigned)((g->M + T - 1) / T);
	if (gy > LKS_GEMM_YBLOCKS_MAX)
		gy = LKS_GEMM_YBLOCKS_MAX;
	lks_gemm_ref_kernel<<<dim3(gx, gy), dim3(T, T), 0, st>>>(*g);
	return LKS_CUDA(cudaGetLastError(), "gemm (reference)");
}
