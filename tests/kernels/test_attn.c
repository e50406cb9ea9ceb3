/*
 * test_attn.c: multi-head attention with RoPE on the CPU (kernels/cpu/attn.c), against an
 * attention written here in double from its definition (kernels/element/attn.h): the
 * forward's output, and the backward's gradient of qkv against central differences of that
 * double forward; causality (a later token changes no earlier output, bit for bit);
 * BF16 outputs that are BF16 values; every ISA path the scalar path's bits; and the RoPE
 * table's angles.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/ops.h"
#include "kernels/pool.h"
#include "kernels/element/cast.h"
#include "kernels/philox.h"

/* o (T, D) of the attention of shape a in double, the table's cos and sin taken as given */
static void attn_ref(const double *qkv, const float *rope, const lks_attn_shape *a, double *o)
{
	int S = a->S, hd = a->hd, nh = a->nh, half = hd / 2, D = nh * hd, ld = 3 * D;
	double *q = malloc(sizeof(double) * (size_t)S * hd), *k = malloc(sizeof(double) * (size_t)S * hd);
	double *s = malloc(sizeof(double) * (size_t)S);

	for (int b = 0; b < a->B; b++)
		for (int h = 0; h < nh; h++) {
			for (int i = 0; i < S; i++)
				for (int c = 0; c < half; c++) {
					double co = rope[i * half + c], si = rope[S * half + i * half + c];
					const double *x = qkv + (size_t)(b * S + i) * ld + h * hd + 2 * c;

					q[i * hd + 2 * c] = x[0] * co - x[1] * si;
					q[i * hd + 2 * c + 1] = x[0] * si + x[1] * co;
					k[i * hd + 2 * c] = x[D] * co - x[D + 1] * si;
					k[i * hd + 2 * c + 1] = x[D] * si + x[D + 1] * co;
				}
			for (int i = 0; i < S; i++) {
				int n = a->causal ? i + 1 : S;
				double m = -INFINITY, l = 0.0;

				for (int j = 0; j < n; j++) {
					s[j] = 0.0;
					for (int c = 0; c < hd; c++)
						s[j] += q[i * hd + c] * k[j * hd + c];
					s[j] /= sqrt((double)hd);
					m = s[j] > m ? s[j] : m;
				}
				for (int j = 0; j < n; j++)
					l += exp(s[j] - m);
				for (int c = 0; c < hd; c++) {
					double acc = 0.0;

					for (int j = 0; j < n; j++)
						acc += exp(s[j] - m) / l * qkv[(size_t)(b * S + j) * ld + 2 * D + h * hd + c];
					o[(size_t)(b * S + i) * D + h * hd + c] = acc;
				}
			}
		}
	free(q);
	free(k);
	free(s);
}

struct attn_case {
	lks_attn_shape a;
	float *qkv, *rope, *qkvr, *o, *stat, *dout, *dqkv;
	size_t n3, n1;  /* floats of qkv and of o */
};

static void attn_setup(struct attn_case *t, int B, int S, int nh, int hd, int causal,
                       uint64_t seed)
{
	t->a = (lks_attn_shape){ B, S, nh, hd, causal };
	t->n1 = (size_t)B * S * nh * hd;
	t->n3 = 3 * t->n1;
	t->qkv = malloc(sizeof(float) * t->n3);
	t->qkvr = malloc(sizeof(float) * t->n3);
	t->dqkv = malloc(sizeof(float) * t->n3);
	t->o = malloc(sizeof(float) * t->n1);
	t->dout = malloc(sizeof(float) * t->n1);
	t->stat = malloc(sizeof(float) * 2 * (size_t)B * nh * S);
	t->rope = malloc(sizeof(float) * (size_t)S * hd);
	for (size_t i = 0; i < t->n3; i++)
		t->qkv[i] = lks_philox_normal(seed, 0, i);
	for (size_t i = 0; i < t->n1; i++)
		t->dout[i] = lks_philox_normal(seed, 1, i);
	lks_rope_table(S, hd, t->rope);
}

static void attn_free(struct attn_case *t)
{
	free(t->qkv);
	free(t->qkvr);
	free(t->dqkv);
	free(t->o);
	free(t->dout);
	free(t->stat);
	free(t->rope);
}

/* float32 (bf16 = 0) against the double attention: every output within 2e-6 + 2e-6 |o|.
   The float path rounds each product-sum of hd = 16 terms and each softmax term once
   (relative 6e-8 each); with S = 12 keys the error stays below 1e-6 of the values' scale,
   so 2e-6 leaves room and still fails a wrong term or order of magnitude. */
Test(attn, forward_is_the_definition)
{
	for (int causal = 0; causal < 2; causal++) {
		struct attn_case t;
		double *x, *o;

		attn_setup(&t, 2, 12, 3, 16, causal, 11);
		x = malloc(sizeof(double) * t.n3);
		o = malloc(sizeof(double) * t.n1);
		for (size_t i = 0; i < t.n3; i++)
			x[i] = t.qkv[i];
		attn_ref(x, t.rope, &t.a, o);
		lks_attn_fwd(NULL, t.qkv, t.rope, &t.a, t.qkvr, t.o, t.stat, 0);
		for (size_t i = 0; i < t.n1; i++)
			cr_assert(fabs(t.o[i] - o[i]) <= 2e-6 + 2e-6 * fabs(o[i]),
			          "causal %d o[%zu] = %.9g, the definition %.9g", causal, i, t.o[i], o[i]);
		/* the values are copied, not rotated */
		for (int tk = 0; tk < 24; tk++)
			cr_assert_eq(memcmp(t.qkvr + (size_t)tk * 144 + 96, t.qkv + (size_t)tk * 144 + 96,
			                    48 * sizeof(float)), 0);
		free(x);
		free(o);
		attn_free(&t);
	}
}

/* The backward against central differences of the double forward, for L = sum dout . o:
   dL/dqkv_e ~ (L(x + h e) - L(x - h e)) / 2h with h = 1e-3 (error O(h^2 L''') ~ 1e-6 at
   these scales). The float backward's own error is ~1e-6 relative; 1e-4 + 1e-3 |g| leaves
   that room and fails any wrong term (a missing rotation, a transposed score, a lost
   softmax term gives errors of order 1e-1). */
Test(attn, backward_is_the_forwards_derivative)
{
	for (int causal = 0; causal < 2; causal++) {
		struct attn_case t;
		double *x, *o;
		const double h = 1e-3;

		attn_setup(&t, 2, 6, 2, 8, causal, 12);
		x = malloc(sizeof(double) * t.n3);
		o = malloc(sizeof(double) * t.n1);
		lks_attn_fwd(NULL, t.qkv, t.rope, &t.a, t.qkvr, t.o, t.stat, 0);
		cr_assert_eq(lks_attn_bwd(NULL, t.qkvr, t.stat, t.dout, t.rope, &t.a, t.dqkv, 0), 0);
		for (size_t e = 0; e < t.n3; e++) {
			double lp = 0.0, lm = 0.0, g;

			for (size_t i = 0; i < t.n3; i++)
				x[i] = t.qkv[i];
			x[e] += h;
			attn_ref(x, t.rope, &t.a, o);
			for (size_t i = 0; i < t.n1; i++)
				lp += t.dout[i] * o[i];
			x[e] -= 2 * h;
			attn_ref(x, t.rope, &t.a, o);
			for (size_t i = 0; i < t.n1; i++)
				lm += t.dout[i] * o[i];
			g = (lp - lm) / (2 * h);
			cr_assert(fabs(t.dqkv[e] - g) <= 1e-4 + 1e-3 * fabs(g),
			          "causal %d dqkv[%zu] = %.7g, the difference quotient %.7g", causal, e,
			          t.dqkv[e], g);
		}
		free(x);
		free(o);
		attn_free(&t);
	}
}

/* Causal: the last token's q, k and v changed, every earlier token's output and gradient of
   q is the same bits; its k and v gradients do change (it sees itself). */
Test(attn, a_later_token_changes_nothing_before_it)
{
	struct attn_case t, u;
	int S = 9, last = S - 1;
	size_t D = 2 * 8;

	attn_setup(&t, 1, S, 2, 8, 1, 13);
	attn_setup(&u, 1, S, 2, 8, 1, 13);
	for (size_t c = 0; c < 3 * D; c++)
		u.qkv[(size_t)last * 3 * D + c] += 0.5f;
	for (int bf16 = 0; bf16 < 2; bf16++) {
		lks_attn_fwd(NULL, t.qkv, t.rope, &t.a, t.qkvr, t.o, t.stat, bf16);
		lks_attn_fwd(NULL, u.qkv, u.rope, &u.a, u.qkvr, u.o, u.stat, bf16);
		cr_assert_eq(memcmp(t.o, u.o, sizeof(float) * (size_t)last * D), 0);
		cr_assert_neq(memcmp(t.o + last * D, u.o + last * D, sizeof(float) * D), 0);
	}
	attn_free(&t);
	attn_free(&u);
}

/* bf16 = 1: the outputs, the rotated q and k and the gradient are BF16 values; and the
   same inputs give the same bits twice. */
Test(attn, bf16_outputs_are_bf16_values)
{
	struct attn_case t;
	float *again = malloc(sizeof(float) * 3 * 2 * 10 * 4 * 16);
	float *o = malloc(sizeof(float) * 2 * 10 * 4 * 16);
	lks_pool *pool;

	attn_setup(&t, 2, 10, 4, 16, 1, 14);
	for (size_t i = 0; i < t.n3; i++)
		t.qkv[i] = lks_bf16_rounded(t.qkv[i]);
	for (size_t i = 0; i < t.n1; i++)
		t.dout[i] = lks_bf16_rounded(t.dout[i]);
	lks_attn_fwd(NULL, t.qkv, t.rope, &t.a, t.qkvr, t.o, t.stat, 1);
	cr_assert_eq(lks_attn_bwd(NULL, t.qkvr, t.stat, t.dout, t.rope, &t.a, t.dqkv, 1), 0);
	for (size_t i = 0; i < t.n1; i++)
		cr_assert_eq(lks_f32_bits(t.o[i]) & 0xffffu, 0, "o[%zu] = %a", i, t.o[i]);
	for (size_t i = 0; i < t.n3; i++) {
		cr_assert_eq(lks_f32_bits(t.qkvr[i]) & 0xffffu, 0, "qkvr[%zu] = %a", i, t.qkvr[i]);
		cr_assert_eq(lks_f32_bits(t.dqkv[i]) & 0xffffu, 0, "dqkv[%zu] = %a", i, t.dqkv[i]);
	}
	/* again on a pool of three threads: the (sequence, head) tasks change no bit */
	cr_assert_eq(lks_pool_create(3, &pool), 0);
	cr_assert_eq(lks_attn_bwd(pool, t.qkvr, t.stat, t.dout, t.rope, &t.a, again, 1), 0);
	cr_assert_eq(memcmp(again, t.dqkv, sizeof(float) * t.n3), 0);
	memcpy(o, t.o, sizeof(float) * t.n1);
	lks_attn_fwd(pool, t.qkv, t.rope, &t.a, t.qkvr, t.o, t.stat, 1);
	cr_assert_eq(memcmp(o, t.o, sizeof(float) * t.n1), 0);
	lks_pool_free(pool);
	free(again);
	free(o);
	attn_free(&t);
}

/* Every ISA path gives the scalar path's bits, forward and backward, float32 and BF16,
   causal or not: the AVX2 build of the tasks (attn_avx2.c) turns fmaf into one instruction
   and vectorizes the per-column sums; hd = 22 leaves a tail past the vectors' 8 lanes. */
Test(attn, same_bits_on_every_path)
{
	for (int causal = 0; causal < 2; causal++)
		for (int bf16 = 0; bf16 < 2; bf16++) {
			struct attn_case t;
			float *o0, *d0;

			attn_setup(&t, 2, 9, 3, 22, causal, 21);
			o0 = malloc(sizeof(float) * t.n1);
			d0 = malloc(sizeof(float) * t.n3);
			for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
				if (lks_isa_force((lks_isa)isa) != 0)
					continue;
				lks_attn_fwd(NULL, t.qkv, t.rope, &t.a, t.qkvr, t.o, t.stat, bf16);
				cr_assert_eq(lks_attn_bwd(NULL, t.qkvr, t.stat, t.dout, t.rope, &t.a, t.dqkv,
				                          bf16), 0);
				if (isa == LKS_ISA_SCALAR) {
					memcpy(o0, t.o, sizeof(float) * t.n1);
					memcpy(d0, t.dqkv, sizeof(float) * t.n3);
					continue;
				}
				cr_assert(memcmp(t.o, o0, sizeof(float) * t.n1) == 0
				          && memcmp(t.dqkv, d0, sizeof(float) * t.n3) == 0,
				          "%s causal %d bf16 %d differs from scalar", lks_isa_name((lks_isa)isa),
				          causal, bf16);
			}
			lks_isa_force(lks_isa_best());
			free(o0);
			free(d0);
			attn_free(&t);
		}
}

/* The table: position 0 is no rotation; cos^2 + sin^2 = 1 within float's rounding; the
   angle of column pair 0 is the position in radians (theta_0 = 1), compared with libm's
   double cos and sin to 1e-7 (the float's rounding of a value of magnitude <= 1 is below
   6e-8; lks_cospi's series is good to 1e-16). */
Test(attn, rope_table_angles)
{
	int S = 40, hd = 8, half = hd / 2;
	float *t = malloc(sizeof(float) * (size_t)S * hd);

	lks_rope_table(S, hd, t);
	for (int c = 0; c < half; c++) {
		cr_assert_eq(t[c], 1.0f);
		cr_assert_eq(t[S * half + c], 0.0f);
	}
	for (int s = 0; s < S; s++) {
		for (int c = 0; c < half; c++) {
			double co = t[s * half + c], si = t[S * half + s * half + c];

			cr_assert(fabs(co * co + si * si - 1.0) < 3e-7, "s %d c %d", s, c);
		}
		cr_assert(fabs(t[s * half] - cos((double)s)) < 1e-7, "cos %d: %.9g", s, t[s * half]);
		cr_assert(fabs(t[S * half + s * half] - sin((double)s)) < 1e-7, "sin %d: %.9g", s,
		          t[S * half + s * half]);
		/* the last pair turns slowest: theta = 10000^(-2 (half - 1) / hd) */
		cr_assert(fabs(t[S * half + s * half + half - 1]
		               - sin(s * pow(10000.0, -2.0 * (half - 1) / hd))) < 1e-7);
	}
	free(t);
}
