/*
 * attn.cu: the CUDA backend's attention (backend.h attn_fwd, attn_bwd), in reference mode:
 * every value by kernels/element/attn.h's lines in the order it states, as
 * kernels/cpu/attn.c makes it, so the bits are the CPU backend's.
 *
 * One thread per row: a token's head to rotate; a query's statistics, output, D_i and dq_i
 * over its keys in order; a key's dk_j and dv_j over the queries that see it, in order. The
 * CPU keeps p_ij and dS_ij of a sequence and head in a table; here each thread makes again
 * the ones it needs, by the same lines from the same inputs, so they are the same values.
 * Simple rather than fast: the reference that production kernels are compared with.
 */
#include <stddef.h>
#include <stdint.h>

#include "kernels/cuda/ops_cuda.h"
#include "kernels/element/attn.h"

/* item (t, h, part): q and k rotated, v copied */
__global__ static void lks_attn_rope_kernel(const float *qkv, const float *rope,
                                            const lks_attn_shape a, float *qkvr, int bf16)
{
	size_t n = (size_t)a.B * a.S * a.nh * 3;

	LKS_FOR_EACH(e, n) {
		int part = (int)(e % 3), h = (int)(e / 3 % (size_t)a.nh), t = (int)(e / 3 / a.nh);
		size_t at = lks_attn_at(&a, t, part, h);

		if (part < 2) {
			lks_rope_row(qkv + at, lks_rope_cos(rope, &a, t % a.S), lks_rope_sin(rope, &a, t % a.S),
			             a.hd, 0, qkvr + at, bf16);
		} else {
			for (int c = 0; c < a.hd; c++)
				qkvr[at + c] = qkv[at + c];
		}
	}
}

/* the row (b, h, i) of item e: i fastest */
__device__ static void lks_attn_row_of(const lks_attn_shape a, size_t e, int *b, int *h, int *i)
{
	*i = (int)(e % (size_t)a.S);
	*h = (int)(e / a.S % (size_t)a.nh);
	*b = (int)(e / a.S / a.nh);
}

__global__ static void lks_attn_fwd_kernel(const float *qkvr, const lks_attn_shape a, float *o,
                                           float *stat, int bf16)
{
	size_t ld = lks_attn_ld(&a), D = (size_t)a.nh * (size_t)a.hd;
	float scale = lks_attn_scale(a.hd);

	LKS_FOR_EACH(e, (size_t)a.B * a.nh * a.S) {
		int b, h, i;

		lks_attn_row_of(a, e, &b, &h, &i);

		int t = b * a.S + i, n = lks_attn_keys(&a, i);
		const float *q = qkvr + lks_attn_at(&a, t, 0, h);
		const float *k = qkvr + lks_attn_at(&a, b * a.S, 1, h);
		const float *v = qkvr + lks_attn_at(&a, b * a.S, 2, h);
		float *st = stat + 2 * e;
		float *oi = o + (size_t)t * D + (size_t)h * a.hd;

		lks_attn_row_stat(q, k, ld, n, a.hd, scale, st);
		for (int c = 0; c < a.hd; c++)
			oi[c] = 0.0f;
		for (int j = 0; j < n; j++) {
			float p = lks_attn_p(lks_attn_score(q, k + (size_t)j * ld, a.hd, scale), st);
			float pb = lks_bf16_if(p, bf16);

			for (int c = 0; c < a.hd; c++)
				oi[c] = fmaf(pb, v[(size_t)j * ld + c], oi[c]);
		}
		for (int c = 0; c < a.hd; c++)
			oi[c] = lks_bf16_if(oi[c], bf16);
	}
}

/* p_ij and dP_ij of query row i and key row j of sequence b, head h */
__device__ static void lks_attn_pdp(const float *qkvr, const float *stat, const float *dout,
                                    const lks_attn_shape a, int b, int h, int i, int j,
                                    float *p, float *dp)
{
	size_t D = (size_t)a.nh * (size_t)a.hd;
	const float *st = stat + 2 * (((size_t)b * a.nh + h) * a.S + i);
	int ti = b * a.S + i, tj = b * a.S + j;

	*p = lks_attn_p(lks_attn_score(qkvr + lks_attn_at(&a, ti, 0, h),
	                               qkvr + lks_attn_at(&a, tj, 1, h), a.hd,
	                               lks_attn_scale(a.hd)), st);
	*dp = lks_attn_dot(dout + (size_t)ti * D + (size_t)h * a.hd,
	                   qkvr + lks_attn_at(&a, tj, 2, h), a.hd);
}

/* per query row: D_i, then dq_i over its keys, turned back and rounded */
__global__ static void lks_attn_dq_kernel(const float *qkvr, const float *stat,
                                          const float *dout, const float *rope,
                                          const lks_attn_shape a, float *drow, float *dqkv,
                                          int bf16)
{
	float scale = lks_attn_scale(a.hd);

	LKS_FOR_EACH(e, (size_t)a.B * a.nh * a.S) {
		int b, h, i;

		lks_attn_row_of(a, e, &b, &h, &i);

		int n = lks_attn_keys(&a, i), t = b * a.S + i;
		float d = 0.0f, p, dp;
		float *dq = dqkv + lks_attn_at(&a, t, 0, h);

		for (int j = 0; j < n; j++) {
			lks_attn_pdp(qkvr, stat, dout, a, b, h, i, j, &p, &dp);
			d = fmaf(p, dp, d);
		}
		drow[e] = d;
		for (int c = 0; c < a.hd; c++)
			dq[c] = 0.0f;
		for (int j = 0; j < n; j++) {
			const float *k = qkvr + lks_attn_at(&a, b * a.S + j, 1, h);
			float ds;

			lks_attn_pdp(qkvr, stat, dout, a, b, h, i, j, &p, &dp);
			ds = lks_attn_ds(p, dp, d, scale, bf16);
			for (int c = 0; c < a.hd; c++)
				dq[c] = fmaf(ds, k[c], dq[c]);
		}
		lks_rope_row(dq, lks_rope_cos(rope, &a, i), lks_rope_sin(rope, &a, i), a.hd, 1, dq, bf16);
	}
}

/* per key row j: dk_j and dv_j over the queries that see it (D_i from lks_attn_dq_kernel) */
__global__ static void lks_attn_dkv_kernel(const float *qkvr, const float *stat,
                                           const float *dout, const float *rope,
                                           const lks_attn_shape a, const float *drow,
                                           float *dqkv, int bf16)
{
	size_t D = (size_t)a.nh * (size_t)a.hd;
	float scale = lks_attn_scale(a.hd);

	LKS_FOR_EACH(e, (size_t)a.B * a.nh * a.S) {
		int b, h, j;

		lks_attn_row_of(a, e, &b, &h, &j);

		int t = b * a.S + j;
		float *dk = dqkv + lks_attn_at(&a, t, 1, h), *dv = dqkv + lks_attn_at(&a, t, 2, h);

		for (int c = 0; c < a.hd; c++)
			dk[c] = dv[c] = 0.0f;
		for (int i = a.causal ? j : 0; i < a.S; i++) {
			const float *q = qkvr + lks_attn_at(&a, b * a.S + i, 0, h);
			const float *dO = dout + (size_t)(b * a.S + i) * D + (size_t)h * a.hd;
			size_t row = ((size_t)b * a.nh + h) * a.S + i;
			float p, dp, ds, pb;

			lks_attn_pdp(qkvr, stat, dout, a, b, h, i, j, &p, &dp);
			ds = lks_attn_ds(p, dp, drow[row], scale, bf16);
			pb = lks_bf16_if(p, bf16);
			for (int c = 0; c < a.hd; c++) {
				dk[c] = fmaf(ds, q[c], dk[c]);
				dv[c] = fmaf(pb, dO[c], dv[c]);
			}
		}
		for (int c = 0; c < a.hd; c++)
			dv[c] = lks_bf16_if(dv[c], bf16);
		lks_rope_row(dk, lks_rope_cos(rope, &a, j), lks_rope_sin(rope, &a, j), a.hd, 1, dk, bf16);
	}
}

LKS_CUDA_OP(attn_fwd, const float *qkv, const float *rope, const lks_attn_shape *a,
            float *qkvr, float *o, float *stat, int bf16)
{
	cudaStream_t st = lks_cuda_enter(ctx);
	size_t rows = (size_t)a->B * a->nh * a->S;

	(void)be;
	if (rows == 0)
		return 0;
	lks_attn_rope_kernel<<<lks_cuda_blocks(rows * 3), LKS_CUDA_THREADS, 0, st>>>(
		qkv, rope, *a, qkvr, bf16);
	if (LKS_CUDA(cudaGetLastError(), "attn_fwd (rope)"))
		return -1;
	lks_attn_fwd_kernel<<<lks_cuda_blocks(rows), LKS_CUDA_THREADS, 0, st>>>(qkvr, *a, o, stat,
	                                                                        bf16);
	return LKS_CUDA(cudaGetLastError(), "attn_fwd");
}

LKS_CUDA_OP(attn_bwd, const float *qkvr, const float *stat, const float *dout,
            const float *rope, const lks_attn_shape *a, float *dqkv, int bf16)
{
	cudaStream_t st = lks_cuda_enter(ctx);
	size_t rows = (size_t)a->B * a->nh * a->S;
	void *drow;

	(void)be;
	if (rows == 0)
		return 0;
	if (lks_cuda_scratch(ctx, rows * sizeof(float), &drow))
		return -1;
	lks_attn_dq_kernel<<<lks_cuda_blocks(rows), LKS_CUDA_THREADS, 0, st>>>(
		qkvr, stat, dout, rope, *a, (float *)drow, dqkv, bf16);
	if (LKS_CUDA(cudaGetLastError(), "attn_bwd (dq)"))
		return -1;
	lks_attn_dkv_kernel<<<lks_cuda_blocks(rows), LKS_CUDA_THREADS, 0, st>>>(
		qkvr, stat, dout, rope, *a, (const float *)drow, dqkv, bf16);
	return LKS_CUDA(cudaGetLastError(), "attn_bwd (dk, dv)");
}
