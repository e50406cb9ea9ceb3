/*
 * test_grad.c: the backward is the derivative of the forward. The model runs with the fp32
 * recipe (no quantization, no BF16 rounding); its gradients are compared with central
 * differences of a double-precision forward written here from DESIGN.md's model, at
 * parameters large enough that every layer matters: the MLP blocks, and blocks with causal
 * attention (RoPE from the model's own table, its angles a given of the model).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/data.h"
#include "harness/engine/model.h"
#include "kernels/cpu/ops.h"
#include "kernels/err.h"
#include "kernels/philox.h"
#include "kernels/cpu/backend_cpu.h"

enum { V = 16, H = 8, F = 16, L = 2, SEQ = 4, BATCH = 2, T = SEQ * BATCH };
/* with attention: 2 heads of 4 (D = H), and SEQ positions of the RoPE table */
enum { NH = 2, HD = 4, D = NH * HD };
static float rope[SEQ * HD];

/* h (T, H) = rmsnorm(x) g */
static void ref_norm(double x[T][H], const double *g, double h[T][H])
{
	const double eps = (double)LKS_RMSNORM_EPS;

	for (int t = 0; t < T; t++) {
		double ss = 0.0;

		for (int i = 0; i < H; i++)
			ss += x[t][i] * x[t][i];
		for (int i = 0; i < H; i++)
			h[t][i] = x[t][i] / sqrt(ss / H + eps) * g[i];
	}
}

/* x += attn(rmsnorm(x) ga Wqkv^T) Wo^T: causal, RoPE in pairs, softmax in double */
static void ref_attention(const lks_model *m, const double *p, int l, double x[T][H])
{
	const double *wqkv = p + m->t[LKS_P_QKV(m, l)].off, *wo = p + m->t[LKS_P_PROJ(m, l)].off;
	double h[T][H], qkv[T][3 * D], o[T][D];

	ref_norm(x, p + m->t[LKS_P_ATTN_NORM(m, l)].off, h);
	for (int t = 0; t < T; t++)
		for (int e = 0; e < 3 * D; e++) {
			qkv[t][e] = 0.0;
			for (int i = 0; i < H; i++)
				qkv[t][e] += h[t][i] * wqkv[e * H + i];
		}
	for (int t = 0; t < T; t++)  /* q and k turned by the angle of position t % SEQ */
		for (int e = 0; e < 2 * D; e += 2) {
			int c = e % HD / 2, s = t % SEQ;
			double co = rope[s * HD / 2 + c], si = rope[SEQ * HD / 2 + s * HD / 2 + c];
			double x0 = qkv[t][e], x1 = qkv[t][e + 1];

			qkv[t][e] = x0 * co - x1 * si;
			qkv[t][e + 1] = x0 * si + x1 * co;
		}
	for (int t = 0; t < T; t++)
		for (int hh = 0; hh < NH; hh++) {
			int t0 = t - t % SEQ;
			double s[SEQ], mx = -INFINITY, sum = 0.0;

			for (int j = t0; j <= t; j++) {
				s[j - t0] = 0.0;
				for (int c = 0; c < HD; c++)
					s[j - t0] += qkv[t][hh * HD + c] * qkv[j][D + hh * HD + c];
				s[j - t0] /= sqrt((double)HD);
				mx = fmax(mx, s[j - t0]);
			}
			for (int j = t0; j <= t; j++)
				sum += exp(s[j - t0] - mx);
			for (int c = 0; c < HD; c++) {
				o[t][hh * HD + c] = 0.0;
				for (int j = t0; j <= t; j++)
					o[t][hh * HD + c] += exp(s[j - t0] - mx) / sum * qkv[j][2 * D + hh * HD + c];
			}
		}
	for (int t = 0; t < T; t++)
		for (int i = 0; i < H; i++) {
			double y = 0.0;

			for (int e = 0; e < D; e++)
				y += o[t][e] * wo[i * D + e];
			x[t][i] += y;
		}
}

/* Mean cross-entropy of the model at params p (double), tokens tok, targets tgt. */
static double ref_loss(const lks_model *m, const double *p, const int32_t *tok, const int32_t *tgt)
{
	double x[T][H], h[T][H], a[T][F], z[V], loss = 0.0;

	for (int t = 0; t < T; t++)
		for (int i = 0; i < H; i++)
			x[t][i] = p[m->t[LKS_P_EMBED].off + (size_t)tok[t] * H + i];
	for (int l = 0; l <= L; l++) {
		if (l < L && m->cfg.attention)
			ref_attention(m, p, l, x);
		ref_norm(x, p + m->t[l < L ? LKS_P_NORM(m, l) : LKS_P_FINAL_NORM(m)].off, h);
		if (l == L)
			break;
		const double *w1 = p + m->t[LKS_P_UP(m, l)].off, *w2 = p + m->t[LKS_P_DOWN(m, l)].off;

		for (int t = 0; t < T; t++) {
			for (int f = 0; f < F; f++) {  /* a = relu(h W1^T)^2 */
				double u = 0.0;

				for (int i = 0; i < H; i++)
					u += h[t][i] * w1[f * H + i];
				a[t][f] = u > 0.0 ? u * u : 0.0;
			}
			for (int i = 0; i < H; i++) {  /* x += a W2^T */
				double d = 0.0;

				for (int f = 0; f < F; f++)
					d += a[t][f] * w2[i * F + f];
				x[t][i] += d;
			}
		}
	}
	for (int t = 0; t < T; t++) {  /* h is the final norm's output */
		const double *wh = p + m->t[LKS_P_HEAD(m)].off;
		double mx = -INFINITY, s = 0.0;

		for (int v = 0; v < V; v++) {
			z[v] = 0.0;
			for (int i = 0; i < H; i++)
				z[v] += h[t][i] * wh[v * H + i];
			mx = fmax(mx, z[v]);
		}
		for (int v = 0; v < V; v++)
			s += exp(z[v] - mx);
		loss += log(s) + mx - z[tgt[t]];
	}
	return loss / T;
}

static void check_gradients(const lks_model_cfg *cfg_)
{
	lks_model_cfg cfg = *cfg_;
	lks_run_cfg run = { .name = "fp32", .recipe = LKS_RECIPE_FP32, .world_size = 1, .amax_history = 1 };
	lks_model m;
	lks_rank r = { 0 };
	lks_data d;
	double *p, worst = 0.0;
	int checked = 0;

	cr_assert_eq(lks_model_init(&m, &cfg), 0);
	cr_assert_eq(lks_rank_init(&r, 0, &m, &run, T, T, &lks_backend_cpu, NULL), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_data_init(&d, 3, V, SEQ), 0);
	for (int b = 0; b < BATCH; b++)
		lks_data_sequence(&d, (uint64_t)b, r.tok + b * SEQ, r.tgt + b * SEQ);
	/* weights of order 0.5 and gains near 1, so no layer is negligible */
	memset(r.params, 0, m.nparams * sizeof(float));
	for (int i = 0; i < m.nt; i++)
		for (size_t k = 0; k < m.t[i].n; k++)
			r.params[m.t[i].off + k] = m.t[i].rows == 1
				? 1.0f + 0.2f * lks_philox_normal(11, (uint32_t)i, k)
				: 0.5f * lks_philox_normal(11, (uint32_t)i, k);
	lks_tracer_begin_step(&r.tr, 0);
	cr_assert_eq(lks_rank_step(&r), 0, "%s", lks_errmsg());

	p = malloc(m.nparams * sizeof(double));
	for (size_t k = 0; k < m.nparams; k++)
		p[k] = r.params[k];
	double l0 = ref_loss(&m, p, r.tok, r.tgt);
	/* the same function: float32 against double, a few ulp of float over a short chain */
	cr_assert_lt(fabs(r.loss / T - l0) / l0, 1e-5, "loss %.9g vs reference %.9g", r.loss / T, l0);

	for (int i = 0; i < m.nt; i++) {
		double gmax = 0.0;

		for (size_t k = 0; k < m.t[i].n; k++)
			gmax = fmax(gmax, fabs(r.grads[m.t[i].off + k]));
		for (int s = 0; s < 12; s++) {
			size_t k = m.t[i].off + lks_philox_u32(5, (uint32_t)i, (uint64_t)s) % m.t[i].n;
			double keep = p[k], step = 1e-4, up, down, fd, err;

			p[k] = keep + step;
			up = ref_loss(&m, p, r.tok, r.tgt);
			p[k] = keep - step;
			down = ref_loss(&m, p, r.tok, r.tgt);
			p[k] = keep;
			fd = (up - down) / (2 * step);
			/* central differences in double with step 1e-4 are good to ~1e-9 here
			   (step^2 times the third derivative); the float32 backward to a few 1e-7
			   relative to the tensor's largest gradient (measured: 6.2e-7 at worst, 1.9e-6
			   with attention, whose softmax and sums over keys round more). 1e-5 is 5
			   times that, and far below what a wrong term of the backward does. */
			err = fabs(r.grads[k] - fd) / fmax(gmax, 1e-12);
			worst = fmax(worst, err);
			cr_assert_lt(err, 1e-5, "%s[%zu]: backward %.9g, central difference %.9g", m.t[i].name,
			             k - m.t[i].off, (double)r.grads[k], fd);
			checked++;
		}
		cr_assert_gt(gmax, 0.0, "%s has no gradient at all", m.t[i].name);
	}
	printf("grad%s: %d gradients against central differences, worst error %.3g of the "
	       "tensor's largest\n", cfg.attention ? " (attention)" : "", checked, worst);
	free(p);
	lks_data_release(&d);
	lks_rank_release(&r);
	lks_model_release(&m);
}

Test(grad, backward_matches_central_differences)
{
	lks_model_cfg cfg = { V, H, F, L, SEQ, BATCH, 0, 0, 0 };

	check_gradients(&cfg);
}

Test(grad, attention_backward_matches_central_differences)
{
	lks_model_cfg cfg = { V, H, F, L, SEQ, BATCH, 1, NH, HD };

	lks_rope_table(SEQ, HD, rope);
	check_gradients(&cfg);
}
