/* attn.c: multi-head attention with RoPE on the CPU (ops.h), each value by the lines of
   kernels/element/attn.h in the order it states; the (sequence, head) pairs are tasks of
   the GEMM's pool (pool.h), which changes no bit. */
#include "kernels/cpu/ops.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/element/attn.h"
#include "kernels/pool.h"

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

static void lks_attn_fwd_task(void *arg, int task, int thread)
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

void lks_attn_fwd(lks_pool *pool, const float *qkv, const float *rope,
                  const lks_attn_shape *a, float *qkvr, float *o, float *stat, int bf16)
{
	int T = a->B * a->S, hd = a->hd, nh = a->nh;
	size_t D = (size_t)nh * (size_t)hd;
	struct lks_attn_job j = { qkvr, NULL, NULL, a, o, stat, NULL, NULL, bf16 };

	/* q and k rotated, v as it is */
	for (int t = 0; t < T; t++) {
		const float *cs = lks_rope_cos(rope, a, t % a->S), *sn = lks_rope_sin(rope, a, t % a->S);

		for (int h = 0; h < nh; h++)
			for (int part = 0; part < 2; part++)
				lks_rope_row(qkv + lks_attn_at(a, t, part, h), cs, sn, hd, 0,
				             qkvr + lks_attn_at(a, t, part, h), bf16);
		memcpy(qkvr + lks_attn_at(a, t, 2, 0), qkv + lks_attn_at(a, t, 2, 0), D * sizeof(float));
	}
	lks_pool_run(pool, a->B * nh, lks_attn_fwd_task, &j);
}

static void lks_attn_bwd_task(void *arg, int task, int thread)
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

int lks_attn_bwd(lks_pool *pool, const float *qkvr, const float *stat, const float *dout,
                 const float *rope, const lks_attn_shape *a, float *dqkv, int bf16)
{
	int S = a->S, hd = a->hd, nh = a->nh;
	/* one sequence and head at a time per thread: p_ij and dS_ij, (S, S) each */
	float *scratch = malloc(sizeof(float) * 2 * (size_t)S * (size_t)S
	                        * (size_t)lks_pool_threads(pool));
	struct lks_attn_job j = { qkvr, stat, dout, a, NULL, NULL, dqkv, scratch, bf16 };

	if (!scratch)
		return -1;
	lks_pool_run(pool, a->B * nh, lks_attn_bwd_task, &j);
	free(scratch);
	/* the rotation's gradient: dq and dk turned back, then rounded once */
	for (int t = 0; t < a->B * S; t++) {
		const float *cs = lks_rope_cos(rope, a, t % S), *sn = lks_rope_sin(rope, a, t % S);

		for (int h = 0; h < nh; h++)
			for (int part = 0; part < 2; part++) {
				float *x = dqkv + lks_attn_at(a, t, part, h);

				lks_rope_row(x, cs, sn, hd, 1, x, bf16);
			}
	}
	return 0;
}
