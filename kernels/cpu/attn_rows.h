/*
 * attn_rows.h: the attention's tasks, a (sequence, head) each, written once (each value by
 * the lines of kernels/element/attn.h) and compiled twice, as ops_rms.h is: by attn.c
 * (baseline: fmaf is a libm call) and by attn_avx2.c (-mfma: fmaf is one instruction, and
 * the per-column sums over keys or queries, independent per column, vectorize). fmaf is
 * exact-then-rounded in both, and -ffp-contract=off keeps every other product and sum as
 * written, so both give the same bits. The includer defines LKS_ATTN_PREFIX and
 * LKS_ATTN_API (static, or empty for the functions attn.c calls). Private to kernels/cpu.
 */
#if !defined(LKS_ATTN_PREFIX) || !defined(LKS_ATTN_API)
#error "attn_rows.h: define LKS_ATTN_PREFIX and LKS_ATTN_API before including it"
#endif
#include <math.h>
#include <stddef.h>

#include "kernels/element/attn.h"

/* The work of a call, split into a task per (sequence b, head h) = task / nh, task % nh:
   each task writes only its own rows of o and stat (forward), or of dqkv's head h in
   sequence b (backward), with the same lines in the same order as a single thread, so the
   bits do not depend on the pool. */
struct lks_attn_job {
	const float *qkvr, *stat, *dout;
	const lks_attn_shape *a;
	float *o, *st, *dqkv;
	float *scratch;             /* backward: per thread, p_ij and dS_ij (2 S^2 floats) */
	int bf16;
};

#define LKS_ATTN_CAT2(a, b) a##b
#define LKS_ATTN_CAT(a, b) LKS_ATTN_CAT2(a, b)
#define LKS_ATTN(name) LKS_ATTN_CAT(LKS_ATTN_PREFIX, name)

LKS_ATTN_API void LKS_ATTN(_attn_fwd_task)(void *arg, int task, int thread)
{
	const struct lks_attn_job *j = arg;
	const lks_attn_shape *a = j->a;
	int nh = a->nh, hd = a->hd, b = task / nh, h = task % nh, bf16 = j->bf16;
	size_t ld = lks_attn_ld(a), D = (size_t)nh * (size_t)hd;
	float scale = lks_attn_scale(hd);
	const float *k = j->qkvr + lks_attn_at(a, b * a->S, 1, h);
	const float *v = j->qkvr + lks_attn_at(a, b * a->S, 2, h);

	(void)thread;
	for (int i = 0; i < a->S; i++) {
		int t = b * a->S + i, n = lks_attn_keys(a, i);
		const float *q = j->qkvr + lks_attn_at(a, t, 0, h);
		float *st = j->st + 2 * (((size_t)b * nh + h) * a->S + i);
		float *oi = j->o + (size_t)t * D + (size_t)h * hd;

		lks_attn_row_stat(q, k, ld, n, hd, scale, st);
		for (int c = 0; c < hd; c++)
			oi[c] = 0.0f;
		for (int jj = 0; jj < n; jj++) {
			float p = lks_attn_p(lks_attn_score(q, k + (size_t)jj * ld, hd, scale), st);
			float pb = lks_bf16_if(p, bf16);

			for (int c = 0; c < hd; c++)
				oi[c] = fmaf(pb, v[(size_t)jj * ld + c], oi[c]);
		}
		for (int c = 0; c < hd; c++)
			oi[c] = lks_bf16_if(oi[c], bf16);
	}
}

LKS_ATTN_API void LKS_ATTN(_attn_bwd_task)(void *arg, int task, int thread)
{
	const struct lks_attn_job *jb = arg;
	const lks_attn_shape *a = jb->a;
	int S = a->S, hd = a->hd, nh = a->nh, b = task / nh, h = task % nh, bf16 = jb->bf16;
	size_t ld = lks_attn_ld(a), D = (size_t)nh * (size_t)hd;
	float scale = lks_attn_scale(hd);
	float *P = jb->scratch + (size_t)thread * 2 * (size_t)S * (size_t)S, *dS = P + (size_t)S * S;
	int t0 = b * S;
	const float *q = jb->qkvr + lks_attn_at(a, t0, 0, h);
	const float *k = jb->qkvr + lks_attn_at(a, t0, 1, h);
	const float *v = jb->qkvr + lks_attn_at(a, t0, 2, h);
	const float *dO = jb->dout + (size_t)t0 * D + (size_t)h * hd;
	float *dqkv = jb->dqkv;

	for (int i = 0; i < S; i++) {
		const float *st = jb->stat + 2 * (((size_t)b * nh + h) * S + i);
		float d = 0.0f;
		int n = lks_attn_keys(a, i);

		for (int j = 0; j < n; j++) {
			float p = lks_attn_p(lks_attn_score(q + (size_t)i * ld, k + (size_t)j * ld,
			                                    hd, scale), st);
			float dp = lks_attn_dot(dO + (size_t)i * D, v + (size_t)j * ld, hd);

			P[(size_t)i * S + j] = p;
			dS[(size_t)i * S + j] = dp;
			d = fmaf(p, dp, d);
		}
		for (int j = 0; j < n; j++)
			dS[(size_t)i * S + j] = lks_attn_ds(P[(size_t)i * S + j],
			                                    dS[(size_t)i * S + j], d, scale, bf16);
	}
	/* dq_i over its keys j; dk_j and dv_j over the queries i that see key j */
	for (int i = 0; i < S; i++) {
		float *dq = dqkv + lks_attn_at(a, t0 + i, 0, h);

		for (int c = 0; c < hd; c++)
			dq[c] = 0.0f;
		for (int j = 0; j < lks_attn_keys(a, i); j++)
			for (int c = 0; c < hd; c++)
				dq[c] = fmaf(dS[(size_t)i * S + j], k[(size_t)j * ld + c], dq[c]);
	}
	for (int j = 0; j < S; j++) {
		float *dk = dqkv + lks_attn_at(a, t0 + j, 1, h);
		float *dv = dqkv + lks_attn_at(a, t0 + j, 2, h);

		for (int c = 0; c < hd; c++)
			dk[c] = dv[c] = 0.0f;
		for (int i = a->causal ? j : 0; i < S; i++) {
			float ds = dS[(size_t)i * S + j], pb = lks_bf16_if(P[(size_t)i * S + j], bf16);

			for (int c = 0; c < hd; c++) {
				dk[c] = fmaf(ds, q[(size_t)i * ld + c], dk[c]);
				dv[c] = fmaf(pb, dO[(size_t)i * D + c], dv[c]);
			}
		}
		for (int c = 0; c < hd; c++)
			dv[c] = lks_bf16_if(dv[c], bf16);
	}
}
