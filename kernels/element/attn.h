/*
 * element/attn.h: multi-head attention with RoPE, one value at a time, shared by the CPU and
 * CUDA (DESIGN.md, The model; kernels/README.md, The numerics contract).
 *
 * The layout: B sequences of S tokens, token t = b S + s; qkv (T, 3D) holds per token the
 * heads' queries, then keys, then values (D = nh hd, head h at columns h hd .. h hd + hd - 1
 * of each third). A head's row of q or k is rotated by RoPE as torchtitan does, in pairs
 * (2c, 2c + 1) by the angle s theta_c, theta_c = 10000^(-2c / hd), from a table made on the
 * host (lks_rope_table) so that no cos or sin of a library enters.
 *
 * Forward, per sequence b, head h and query i (keys j = 0 .. i when causal, else 0 .. S-1):
 *   s_ij = dot(q_i, k_j) * scale          dot: fmaf over the hd columns in order; scale =
 *                                          1 / sqrtf(hd) in float
 *   m_i = max_j s_ij (a NaN wins), l_i = sum_j e_ij in j order, e_ij = (float)exp(s_ij - m_i)
 *   p_ij = e_ij / l_i;  o_i = sum_j bf16(p_ij) v_j   (fmaf in j order, per column; o_i then
 *                                          rounded to BF16)
 * exp is kernels/mathf.h's lks_exp, in double, rounded to float once. m_i and l_i are kept
 * (the row's stat) so that the backward makes the same p_ij.
 *
 * Backward, for dO (the output's gradient):
 *   dP_ij = dot(dO_i, v_j);  D_i = sum_j p_ij dP_ij (fmaf in j order)
 *   dS_ij = bf16(p_ij (dP_ij - D_i) scale)
 *   dq_i = sum_j dS_ij k_j (j ascending);  dk_j = sum_i dS_ij q_i (i ascending);
 *   dv_j = sum_i bf16(p_ij) dO_i (i ascending), each an fmaf per column
 * then dq and dk rotated back (the rotation's transpose) and rounded to BF16 once. The
 * attention's GEMMs have BF16 inputs (q, k, v, p and dS rounded; a float32 run rounds
 * nothing) and float32 sums, and the softmax is float32, as PyTorch's SDPA in these recipes.
 * Every product and sum is as written: -ffp-contract=off (C) and -fmad=false (CUDA).
 */
#ifndef LKS_KERNELS_ELEMENT_ATTN_H
#define LKS_KERNELS_ELEMENT_ATTN_H

#include <math.h>
#include <stddef.h>

#include "kernels/element/ops.h"
#include "kernels/hd.h"
#include "kernels/mathf.h"

/* RoPE's base, as Llama and torchtitan's default */
#define LKS_ROPE_BASE 10000.0

/* The shape of one attention call: B sequences of S tokens, nh heads of hd columns (hd
   even), causal or not. */
typedef struct lks_attn_shape {
	int B, S, nh, hd;
	int causal;
} lks_attn_shape;

/* columns of a token's row in qkv: 3 nh hd */
static inline LKS_HD size_t lks_attn_ld(const lks_attn_shape *a)
{
	return (size_t)3 * (size_t)a->nh * (size_t)a->hd;
}

/* The row of head h of token t in a (T, 3D) buffer: part 0 q, 1 k, 2 v. */
static inline LKS_HD size_t lks_attn_at(const lks_attn_shape *a, int t, int part, int h)
{
	size_t D = (size_t)a->nh * (size_t)a->hd;

	return (size_t)t * lks_attn_ld(a) + (size_t)part * D + (size_t)h * (size_t)a->hd;
}

/* The rows of the RoPE table (lks_rope_table) at position s: cosines, sines. */
static inline LKS_HD const float *lks_rope_cos(const float *rope, const lks_attn_shape *a, int s)
{
	return rope + (size_t)s * (size_t)(a->hd / 2);
}

static inline LKS_HD const float *lks_rope_sin(const float *rope, const lks_attn_shape *a, int s)
{
	return rope + ((size_t)a->S + (size_t)s) * (size_t)(a->hd / 2);
}

static inline LKS_HD float lks_attn_scale(int hd)
{
	return 1.0f / sqrtf((float)hd);
}

/* the keys query i sees: i + 1 when causal, else S */
static inline LKS_HD int lks_attn_keys(const lks_attn_shape *a, int i)
{
	return a->causal ? i + 1 : a->S;
}

/* cos(pi t) for any finite t, by cos's period and symmetry into lks_cospi's [0, 1]: each
   step exact but the division by 2, which rounds t / 2 as written */
static inline LKS_HD double lks_cospi_any(double t)
{
	t = fabs(t);
	t = t - 2.0 * floor(t / 2.0);  /* [0, 2) */
	if (t > 1.0)
		t = 2.0 - t;
	return lks_cospi(t);
}

/* The RoPE table of S positions and hd columns: cs (S, hd / 2) the cosines, then sn (S,
   hd / 2) the sines, of the angle s theta_c in float (2 S (hd / 2) floats in all). Made
   on the host in double with mathf.h's lines, so the same on every machine. */
static inline LKS_HD void lks_rope_table(int S, int hd, float *table)
{
	const double pi = 3.14159265358979311600;
	int half = hd / 2;
	float *cs = table, *sn = table + (size_t)S * (size_t)half;

	for (int c = 0; c < half; c++) {
		double theta = lks_exp(-(2.0 * c / hd) * lks_log(LKS_ROPE_BASE));

		for (int s = 0; s < S; s++) {
			double t = (double)s * theta / pi;  /* the angle in half turns */

			cs[(size_t)s * half + c] = (float)lks_cospi_any(t);
			sn[(size_t)s * half + c] = (float)lks_cospi_any(t - 0.5);
		}
	}
}

/* One head's row x (hd values) rotated into y (y may be x) at the position whose cosines
   and sines are cs and sn (hd / 2 each); inverse: by the opposite angle (the backward). */
static inline LKS_HD void lks_rope_row(const float *x, const float *cs, const float *sn, int hd,
                                       int inverse, float *y, int bf16)
{
	for (int c = 0; c < hd / 2; c++) {
		float x0 = x[2 * c], x1 = x[2 * c + 1], co = cs[c], si = inverse ? -sn[c] : sn[c];

		y[2 * c] = lks_bf16_if(x0 * co - x1 * si, bf16);
		y[2 * c + 1] = lks_bf16_if(x0 * si + x1 * co, bf16);
	}
}

/* sum of a[c] b[c] over n columns, fmaf in column order */
static inline LKS_HD float lks_attn_dot(const float *a, const float *b, int n)
{
	float s = 0.0f;

	for (int c = 0; c < n; c++)
		s = fmaf(a[c], b[c], s);
	return s;
}

/* The score of query row q against key row k. */
static inline LKS_HD float lks_attn_score(const float *q, const float *k, int hd, float scale)
{
	return lks_attn_dot(q, k, hd) * scale;
}

/* The row statistics of query q over its n keys (rows of k, ld apart): stat[0] = m, the
   max score (a NaN wins), stat[1] = l, the sum of exp(s - m) in key order. */
static inline LKS_HD void lks_attn_row_stat(const float *q, const float *k, size_t ld, int n,
                                            int hd, float scale, float *stat)
{
	float m = -INFINITY, l = 0.0f;

	for (int j = 0; j < n; j++) {
		float s = lks_attn_score(q, k + (size_t)j * ld, hd, scale);

		m = isnan(s) || s > m ? s : m;
	}
	for (int j = 0; j < n; j++)
		l += (float)lks_exp((double)(lks_attn_score(q, k + (size_t)j * ld, hd, scale) - m));
	stat[0] = m;
	stat[1] = l;
}

/* p_ij from the score s and its row's stat. */
static inline LKS_HD float lks_attn_p(float s, const float *stat)
{
	return (float)lks_exp((double)(s - stat[0])) / stat[1];
}

/* dS_ij from p_ij, dP_ij and the row's D_i. */
static inline LKS_HD float lks_attn_ds(float p, float dp, float d, float scale, int bf16)
{
	return lks_bf16_if(p * (dp - d) * scale, bf16);
}

#endif
