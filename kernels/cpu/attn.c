/* attn.c: multi-head attention with RoPE on the CPU (ops.h), each value by the lines of
   kernels/element/attn.h in the order it states. */
#include "kernels/cpu/ops.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/element/attn.h"

void lks_attn_fwd(const float *qkv, const float *rope, const lks_attn_shape *a, float *qkvr,
                  float *o, float *stat, int bf16)
{
	int T = a->B * a->S, hd = a->hd, nh = a->nh;
	size_t ld = lks_attn_ld(a), D = (size_t)nh * (size_t)hd;
	float scale = lks_attn_scale(hd);

	/* q and k rotated, v as it is */
	for (int t = 0; t < T; t++) {
		const float *cs = lks_rope_cos(rope, a, t % a->S), *sn = lks_rope_sin(rope, a, t % a->S);

		for (int h = 0; h < nh; h++)
			for (int part = 0; part < 2; part++)
				lks_rope_row(qkv + lks_attn_at(a, t, part, h), cs, sn, hd, 0,
				             qkvr + lks_attn_at(a, t, part, h), bf16);
		memcpy(qkvr + lks_attn_at(a, t, 2, 0), qkv + lks_attn_at(a, t, 2, 0), D * sizeof(float));
	}
	for (int b = 0; b < a->B; b++)
		for (int h = 0; h < nh; h++)
			for (int i = 0; i < a->S; i++) {
				int t = b * a->S + i, n = lks_attn_keys(a, i);
				const float *q = qkvr + lks_attn_at(a, t, 0, h);
				const float *k = qkvr + lks_attn_at(a, b * a->S, 1, h);
				const float *v = qkvr + lks_attn_at(a, b * a->S, 2, h);
				float *st = stat + 2 * (((size_t)b * nh + h) * a->S + i);
				float *oi = o + (size_t)t * D + (size_t)h * hd;

				lks_attn_row_stat(q, k, ld, n, hd, scale, st);
				for (int c = 0; c < hd; c++)
					oi[c] = 0.0f;
				for (int j = 0; j < n; j++) {
					float p = lks_attn_p(lks_attn_score(q, k + (size_t)j * ld, hd, scale), st);
					float pb = lks_bf16_if(p, bf16);

					for (int c = 0; c < hd; c++)
						oi[c] = fmaf(pb, v[(size_t)j * ld + c], oi[c]);
				}
				for (int c = 0; c < hd; c++)
					oi[c] = lks_bf16_if(oi[c], bf16);
			}
}

int lks_attn_bwd(const float *qkvr, const float *stat, const float *dout, const float *rope,
                 const lks_attn_shape *a, float *dqkv, int bf16)
{
	int S = a->S, hd = a->hd, nh = a->nh;
	size_t ld = lks_attn_ld(a), D = (size_t)nh * (size_t)hd;
	float scale = lks_attn_scale(hd);
	/* one sequence and head at a time: p_ij and dS_ij, (S, S) each */
	float *P = malloc(sizeof(float) * 2 * (size_t)S * (size_t)S), *dS = P + (size_t)S * S;

	if (!P)
		return -1;
	for (int b = 0; b < a->B; b++)
		for (int h = 0; h < nh; h++) {
			int t0 = b * S;
			const float *q = qkvr + lks_attn_at(a, t0, 0, h);
			const float *k = qkvr + lks_attn_at(a, t0, 1, h);
			const float *v = qkvr + lks_attn_at(a, t0, 2, h);
			const float *dO = dout + (size_t)t0 * D + (size_t)h * hd;

			for (int i = 0; i < S; i++) {
				const float *st = stat + 2 * (((size_t)b * nh + h) * S + i);
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
	free(P);
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
