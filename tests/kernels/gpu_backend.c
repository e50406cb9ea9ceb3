/*
 * gpu_backend.c: every method of the cuda backend against the cpu backend, on the same
 * inputs, bit for bit: NaN, +-Inf, -0 and subnormals included. The cuda backend is the
 * registry's, as the program has it: loaded from lockstep-cuda.so (kernels/cuda/module.h)
 * at the first open. A plain program (Criterion cannot say "skipped" from main): without a
 * usable device it checks that the registry lists 'cuda' and that open fails naming why
 * (the CUDA runtime's answer, so the module was loaded), prints "no CUDA device: ...", and
 * exits with LKS_SKIP (ctest's SKIP_RETURN_CODE). Exit 1 at the first difference, naming
 * the method, the index and both values.
 *
 * One difference is allowed and counted: where float arithmetic (not a cast) meets a NaN
 * input, x86 keeps the input's payload and sign while the GPU gives its canonical NaN
 * (0x7fffffff); both are NaN, and a BF16 or FP8 output is canonical on both.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/backend.h"
#include "kernels/cpu/backend_cpu.h"

#define LKS_SKIP 77

static const lks_backend *cpu = &lks_backend_cpu, *gpu;
static void *gctx;
static int nan_payloads;

#define CHECK(cond, ...)                                                            \
	do {                                                                            \
		if (!(cond)) {                                                              \
			fprintf(stderr, "gpu_backend: FAIL %s:%d: ", __FILE__, __LINE__);     \
			fprintf(stderr, __VA_ARGS__);                                           \
			fprintf(stderr, "\n");                                                  \
			exit(1);                                                                \
		}                                                                           \
	} while (0)
#define OK(call) CHECK((call) == 0, "%s: %s", #call, lks_errmsg())

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static float bits_f32(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static uint32_t f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

/* NaNs of both signs and payloads, infinities, zeros, subnormals, extremes, BF16 ties */
static const uint32_t specials[] = {
	0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff812345u, 0x7f800000u, 0xff800000u,
	0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x00400000u, 0x7f7fffffu,
	0xff7fffffu, 0x3f808000u, 0x3f818000u, 0xbf808000u,
};
#define NSPECIALS (sizeof(specials) / sizeof(specials[0]))

/* n values in [-scale, scale), and every special every 'every' elements (0: none) */
static float *values(size_t n, float scale, size_t every)
{
	float *x = malloc(n * sizeof(float) + 1);

	CHECK(x, "out of memory");
	for (size_t i = 0; i < n; i++)
		x[i] = every && i % every == 0 ? bits_f32(specials[(i / every) % NSPECIALS])
		                              : ((float)(rng() >> 40) / 16777216.0f - 0.5f) * 2 * scale;
	return x;
}

/* a device copy of host bytes */
static void *up(const void *h, size_t bytes)
{
	void *d;

	OK(lks_be_alloc(gpu, gctx, bytes, &d));
	OK(lks_be_upload(gpu, gctx, d, h, bytes));
	return d;
}

/* the device buffer d (bytes) equals host buffer want, 4-byte words as floats */
static void same_f32(const char *what, const float *want, const void *d, size_t n)
{
	float *got = malloc(n * sizeof(float) + 1);

	CHECK(got, "out of memory");
	OK(lks_be_download(gpu, gctx, got, d, n * sizeof(float)));
	for (size_t i = 0; i < n; i++) {
		uint32_t a = f32_bits(want[i]), b = f32_bits(got[i]);

		if (a != b && isnan(want[i]) && isnan(got[i])) {
			nan_payloads++;
			continue;
		}
		CHECK(a == b, "%s[%zu]: cpu %08x (%a), cuda %08x (%a)", what, i, a, want[i], b, got[i]);
	}
	free(got);
}

static void same_bytes(const char *what, const void *want, const void *d, size_t bytes)
{
	unsigned char *got = malloc(bytes + 1);

	CHECK(got, "out of memory");
	OK(lks_be_download(gpu, gctx, got, d, bytes));
	for (size_t i = 0; i < bytes; i++)
		CHECK(got[i] == ((const unsigned char *)want)[i], "%s: byte %zu: cpu %02x, cuda %02x",
		      what, i, ((const unsigned char *)want)[i], got[i]);
	free(got);
}

static void same_stats(const char *what, const lks_tensor_stats *a, const lks_tensor_stats *b)
{
	/* a NaN l2 may differ in payload (x86 passes an input's on, the GPU makes its own); the
	   store keeps any NaN as NULL */
	if (isnan(a->l2) && isnan(b->l2) && memcmp(&a->l2, &b->l2, sizeof(double)))
		nan_payloads++;
	else
		CHECK(!memcmp(&a->l2, &b->l2, sizeof(double)), "%s: l2 %a vs %a", what, a->l2, b->l2);
	CHECK(f32_bits(a->amax) == f32_bits(b->amax), "%s: amax %a vs %a", what, a->amax, b->amax);
	CHECK(f32_bits(a->scale) == f32_bits(b->scale), "%s: scale", what);
	CHECK(a->nonfinite == b->nonfinite && a->hash == b->hash && a->underflow == b->underflow
	      && a->saturated == b->saturated, "%s: counts or hash differ", what);
}

static void check_buffers(void)
{
	unsigned char h[300], back[300];
	void *a, *b;

	for (size_t i = 0; i < sizeof(h); i++)
		h[i] = (unsigned char)rng();
	a = up(h, sizeof(h));
	OK(lks_be_alloc(gpu, gctx, sizeof(h), &b));
	CHECK((uintptr_t)a % 64 == 0 && (uintptr_t)b % 64 == 0, "alloc: not 64-byte aligned");
	OK(lks_be_copy(gpu, gctx, b, a, sizeof(h)));
	OK(lks_be_sync(gpu, gctx));
	OK(lks_be_download(gpu, gctx, back, b, sizeof(h)));
	CHECK(!memcmp(h, back, sizeof(h)), "upload, copy, download: bytes differ");
	OK(lks_be_zero(gpu, gctx, (char *)b + 7, 100));
	memset(h + 7, 0, 100);
	same_bytes("zero", h, b, sizeof(h));
	lks_be_free(gpu, gctx, a);
	lks_be_free(gpu, gctx, b);
}

/* bf16 rounding and transposes */
static void check_casts(void)
{
	const int R = 37, C = 53;
	size_t n = (size_t)R * C;
	float *x = values(n, 1e3f, 7), *t = malloc(n * sizeof(float));
	uint16_t *h16 = malloc(n * 2);
	uint8_t *u8 = malloc(n), *t8 = malloc(n);
	float *dx = up(x, n * 4);
	void *dy;

	CHECK(t && h16 && u8 && t8, "out of memory");
	OK(lks_be_alloc(gpu, gctx, n * 4, &dy));
	OK(lks_be_to_bf16(cpu, NULL, x, h16, n));
	OK(lks_be_to_bf16(gpu, gctx, dx, dy, n));
	same_bytes("to_bf16", h16, dy, n * 2);
	OK(lks_be_transpose_bf16(cpu, NULL, x, R, C, h16));
	OK(lks_be_transpose_bf16(gpu, gctx, dx, R, C, dy));
	same_bytes("transpose_bf16", h16, dy, n * 2);
	OK(lks_be_transpose_f32(cpu, NULL, x, R, C, t));
	OK(lks_be_transpose_f32(gpu, gctx, dx, R, C, dy));
	same_bytes("transpose_f32", t, dy, n * 4);  /* data movement: every bit, NaNs too */
	memcpy(u8, x, n);
	lks_be_free(gpu, gctx, dx);
	dx = up(u8, n);
	OK(lks_be_transpose_u8(cpu, NULL, u8, R, C, t8));
	OK(lks_be_transpose_u8(gpu, gctx, (uint8_t *)dx, R, C, dy));
	same_bytes("transpose_u8", t8, dy, n);
	lks_be_free(gpu, gctx, dx);
	dx = up(x, n * 4);
	OK(lks_be_round_bf16(cpu, NULL, x, n));
	OK(lks_be_round_bf16(gpu, gctx, dx, n));
	same_bytes("round_bf16", x, dx, n * 4);
	lks_be_free(gpu, gctx, dx);
	lks_be_free(gpu, gctx, dy);
	free(x); free(t); free(h16); free(u8); free(t8);
}

/* relu2 both ways, add, clip, AdamW: over n values with every special */
static void check_elementwise(void)
{
	const size_t n = 1031;  /* not a multiple of 8: the CPU's AVX2 and scalar tails */
	float *u = values(n, 4.0f, 5), *dy = values(n, 2.0f, 11), *y = malloc(n * 4);
	float *p = values(n, 1.0f, 13), *m = values(n, 0.1f, 0), *v = values(n, 0.1f, 0);
	float *du = up(u, n * 4), *ddy = up(dy, n * 4), *dout, *dp, *dm, *dv;

	CHECK(y, "out of memory");
	for (size_t i = 0; i < n; i++)
		v[i] = fabsf(v[i]);
	OK(lks_be_alloc(gpu, gctx, n * 4, (void **)&dout));
	for (int bf16 = 0; bf16 < 2; bf16++) {
		OK(lks_be_relu2_fwd(cpu, NULL, u, n, y, bf16));
		OK(lks_be_relu2_fwd(gpu, gctx, du, n, dout, bf16));
		same_f32(bf16 ? "relu2_fwd bf16" : "relu2_fwd", y, dout, n);
		OK(lks_be_relu2_bwd(cpu, NULL, u, dy, n, y, bf16));
		OK(lks_be_relu2_bwd(gpu, gctx, du, ddy, n, dout, bf16));
		same_f32(bf16 ? "relu2_bwd bf16" : "relu2_bwd", y, dout, n);
		OK(lks_be_add(cpu, NULL, u, dy, n, y, bf16));
		OK(lks_be_add(gpu, gctx, du, ddy, n, dout, bf16));
		same_f32(bf16 ? "add bf16" : "add", y, dout, n);
	}
	OK(lks_be_clip(cpu, NULL, u, n, 0.37f));
	OK(lks_be_clip(gpu, gctx, du, n, 0.37f));
	same_f32("clip", u, du, n);
	dp = up(p, n * 4); dm = up(m, n * 4); dv = up(v, n * 4);
	for (int step = 1; step <= 3; step++) {
		float bc1 = 1.0f - powf(0.9f, (float)step), bc2 = 1.0f - powf(0.95f, (float)step);
		float wd = step == 2 ? 0.0f : 0.1f;

		OK(lks_be_adamw(cpu, NULL, p, dy, m, v, n, 1e-3f, 0.9f, 0.95f, 1e-8f, wd, bc1, bc2));
		OK(lks_be_adamw(gpu, gctx, dp, ddy, dm, dv, n, 1e-3f, 0.9f, 0.95f, 1e-8f, wd, bc1, bc2));
		same_f32("adamw p", p, dp, n);
		same_f32("adamw m", m, dm, n);
		same_f32("adamw v", v, dv, n);
	}
	lks_be_free(gpu, gctx, du); lks_be_free(gpu, gctx, ddy); lks_be_free(gpu, gctx, dout);
	lks_be_free(gpu, gctx, dp); lks_be_free(gpu, gctx, dm); lks_be_free(gpu, gctx, dv);
	free(u); free(dy); free(y); free(p); free(m); free(v);
}

/* RMSNorm forward and backward: T rows of odd H, one row of specials, one of subnormals */
static void check_rmsnorm(void)
{
	const int T = 9, H = 129;
	size_t n = (size_t)T * H;
	float *x = values(n, 3.0f, 0), *g = values((size_t)H, 1.5f, 0), *dy = values(n, 1.0f, 0);
	float *y = malloc(n * 4), *rstd = malloc((size_t)T * 4), *dg = values((size_t)H, 0.5f, 0);
	float *dx_, *dg_gpu, *dy_, *dout, *drstd, *dgain;

	CHECK(y && rstd, "out of memory");
	for (int i = 0; i < H; i++) {
		x[2 * H + i] = bits_f32(specials[i % NSPECIALS]);  /* row 2: specials */
		x[5 * H + i] = bits_f32(0x00000100u * (uint32_t)(i + 1));  /* row 5: subnormals */
		dy[7 * H + i] = i % 3 ? -0.0f : bits_f32(0x80000001u);
	}
	dx_ = up(x, n * 4); dgain = up(g, (size_t)H * 4); dy_ = up(dy, n * 4);
	dg_gpu = up(dg, (size_t)H * 4);
	OK(lks_be_alloc(gpu, gctx, n * 4, (void **)&dout));
	OK(lks_be_alloc(gpu, gctx, (size_t)T * 4, (void **)&drstd));
	for (int bf16 = 0; bf16 < 2; bf16++) {
		OK(lks_be_rmsnorm_fwd(cpu, NULL, x, g, T, H, y, rstd, bf16));
		OK(lks_be_rmsnorm_fwd(gpu, gctx, dx_, dgain, T, H, dout, drstd, bf16));
		same_f32("rmsnorm_fwd y", y, dout, n);
		same_f32("rmsnorm_fwd rstd", rstd, drstd, (size_t)T);
		OK(lks_be_rmsnorm_bwd(cpu, NULL, dy, x, g, rstd, T, H, y, dg, bf16));
		OK(lks_be_rmsnorm_bwd(gpu, gctx, dy_, dx_, dgain, drstd, T, H, dout, dg_gpu, bf16));
		same_f32("rmsnorm_bwd dx", y, dout, n);
		same_f32("rmsnorm_bwd dg", dg, dg_gpu, (size_t)H);
	}
	lks_be_free(gpu, gctx, dx_); lks_be_free(gpu, gctx, dgain); lks_be_free(gpu, gctx, dy_);
	lks_be_free(gpu, gctx, dg_gpu); lks_be_free(gpu, gctx, dout); lks_be_free(gpu, gctx, drstd);
	free(x); free(g); free(dy); free(y); free(rstd); free(dg);
}

/* attention, causal and full, float32 and BF16, with a row of specials in qkv (a NaN and
   infinities in one token's head) and a seq that is not a power of two */
static void check_attention(void)
{
	for (int causal = 0; causal < 2; causal++)
		for (int bf16 = 0; bf16 < 2; bf16++) {
			lks_attn_shape a = { 3, 13, 2, 16, causal };
			size_t n1 = (size_t)a.B * a.S * a.nh * a.hd, n3 = 3 * n1;
			size_t nst = 2 * (size_t)a.B * a.nh * a.S, nr = (size_t)a.S * a.hd;
			float *qkv = values(n3, 2.0f, 0), *dout = values(n1, 1.0f, 0);
			float *rope = malloc(nr * 4), *qkvr = malloc(n3 * 4), *o = malloc(n1 * 4);
			float *st = malloc(nst * 4), *dqkv = malloc(n3 * 4);
			float *dqkv_, *drope, *dqkvr, *do_, *dst, *ddout, *ddq;

			CHECK(rope && qkvr && o && st && dqkv, "out of memory");
			for (int c = 0; c < a.hd; c++)  /* token 20, head 1: specials in q, k and v */
				for (int part = 0; part < 3; part++)
					qkv[20 * 3 * 32 + part * 32 + 16 + c] = bits_f32(specials[c % NSPECIALS]);
			if (bf16)
				for (size_t i = 0; i < n3; i++)
					qkv[i] = lks_bf16_rounded(qkv[i]);
			lks_rope_table(a.S, a.hd, rope);
			dqkv_ = up(qkv, n3 * 4); drope = up(rope, nr * 4); ddout = up(dout, n1 * 4);
			OK(lks_be_alloc(gpu, gctx, n3 * 4, (void **)&dqkvr));
			OK(lks_be_alloc(gpu, gctx, n3 * 4, (void **)&ddq));
			OK(lks_be_alloc(gpu, gctx, n1 * 4, (void **)&do_));
			OK(lks_be_alloc(gpu, gctx, nst * 4, (void **)&dst));
			OK(lks_be_attn_fwd(cpu, NULL, qkv, rope, &a, qkvr, o, st, bf16));
			OK(lks_be_attn_fwd(gpu, gctx, dqkv_, drope, &a, dqkvr, do_, dst, bf16));
			same_f32("attn_fwd qkvr", qkvr, dqkvr, n3);
			same_f32("attn_fwd o", o, do_, n1);
			same_f32("attn_fwd stat", st, dst, nst);
			OK(lks_be_attn_bwd(cpu, NULL, qkvr, st, dout, rope, &a, dqkv, bf16));
			OK(lks_be_attn_bwd(gpu, gctx, dqkvr, dst, ddout, drope, &a, ddq, bf16));
			same_f32("attn_bwd dqkv", dqkv, ddq, n3);
			lks_be_free(gpu, gctx, dqkv_); lks_be_free(gpu, gctx, drope);
			lks_be_free(gpu, gctx, ddout); lks_be_free(gpu, gctx, dqkvr);
			lks_be_free(gpu, gctx, ddq); lks_be_free(gpu, gctx, do_); lks_be_free(gpu, gctx, dst);
			free(qkv); free(dout); free(rope); free(qkvr); free(o); free(st); free(dqkv);
		}
}

/* cross-entropy over logits with a row of -inf but one, a row with a NaN, ties for the max */
static void check_cross_entropy(void)
{
	const int T = 11, V = 257;
	size_t n = (size_t)T * V;
	float *z = values(n, 8.0f, 0), *dz = malloc(n * 4), *dz_gpu, *dz_d;
	int32_t tgt[11];
	double lc, lg;
	void *dt;

	CHECK(dz, "out of memory");
	for (int t = 0; t < T; t++)
		tgt[t] = (int32_t)(rng() % (uint64_t)V);
	for (int v = 0; v < V; v++)
		z[3 * V + v] = v == tgt[3] ? 1.0f : -INFINITY;
	z[6 * V + 17] = NAN;
	z[8 * V + 4] = z[8 * V + 200] = 30.0f;
	dz_gpu = up(z, n * 4);
	dt = up(tgt, sizeof(tgt));
	OK(lks_be_alloc(gpu, gctx, n * 4, (void **)&dz_d));
	OK(lks_be_cross_entropy(cpu, NULL, z, tgt, T, V, 1.0f / 4096, dz, &lc));
	OK(lks_be_cross_entropy(gpu, gctx, dz_gpu, dt, T, V, 1.0f / 4096, dz_d, &lg));
	CHECK(!memcmp(&lc, &lg, sizeof(lc)) || (isnan(lc) && isnan(lg)),
	      "cross_entropy loss: cpu %a, cuda %a", lc, lg);
	same_f32("cross_entropy dz", dz, dz_d, n);
	/* and without the NaN row, the loss is a number to compare bit for bit */
	z[6 * V + 17] = 0.5f;
	OK(lks_be_upload(gpu, gctx, dz_gpu, z, n * 4));
	OK(lks_be_cross_entropy(cpu, NULL, z, tgt, T, V, 1.0f / 4096, dz, &lc));
	OK(lks_be_cross_entropy(gpu, gctx, dz_gpu, dt, T, V, 1.0f / 4096, dz_d, &lg));
	CHECK(!isnan(lc) && !memcmp(&lc, &lg, sizeof(lc)), "cross_entropy loss: cpu %a, cuda %a",
	      lc, lg);
	same_f32("cross_entropy dz", dz, dz_d, n);
	lks_be_free(gpu, gctx, dz_gpu); lks_be_free(gpu, gctx, dt); lks_be_free(gpu, gctx, dz_d);
	free(z); free(dz);
}

/* the embedding: tokens repeated, so scatter-add's order within an element shows */
static void check_embedding(void)
{
	const int V = 7, T = 40, H = 33;
	float *table = values((size_t)V * H, 1.0f, 9), *y = malloc((size_t)T * H * 4);
	float *dy = values((size_t)T * H, 1e4f, 0), *grad = values((size_t)V * H, 1.0f, 0);
	float *dtable, *dyd, *dgrad, *dout;
	int32_t tok[40];
	void *dtok;

	CHECK(y, "out of memory");
	for (int t = 0; t < T; t++)
		tok[t] = (int32_t)(rng() % 3);  /* rows 0..2 only, each many times */
	tok[5] = V - 1;
	dtable = up(table, (size_t)V * H * 4); dyd = up(dy, (size_t)T * H * 4);
	dgrad = up(grad, (size_t)V * H * 4); dtok = up(tok, sizeof(tok));
	OK(lks_be_alloc(gpu, gctx, (size_t)T * H * 4, (void **)&dout));
	OK(lks_be_embed_gather(cpu, NULL, table, tok, T, H, y));
	OK(lks_be_embed_gather(gpu, gctx, dtable, dtok, T, H, dout));
	same_bytes("embed_gather", y, dout, (size_t)T * H * 4);
	OK(lks_be_embed_scatter_add(cpu, NULL, dy, tok, T, H, grad));
	OK(lks_be_embed_scatter_add(gpu, gctx, dyd, dtok, T, H, dgrad));
	same_f32("embed_scatter_add", grad, dgrad, (size_t)V * H);
	lks_be_free(gpu, gctx, dtable); lks_be_free(gpu, gctx, dyd); lks_be_free(gpu, gctx, dgrad);
	lks_be_free(gpu, gctx, dtok); lks_be_free(gpu, gctx, dout);
	free(table); free(y); free(dy); free(grad);
}

/* sumsq, stats_f32, nonfinite, and stats_quant of codes quantized on the host */
static void check_stats(void)
{
	const int R = 19, C = 70;
	size_t n = (size_t)R * C;
	float *x = values(n, 100.0f, 0), *scale = malloc((size_t)R * 4), *dx, *dscale;
	uint8_t *codes = malloc(n);
	lks_tensor_stats a, b;
	lks_quant q = { 0 };
	int64_t ca, cb;
	double sa, sb;
	void *dcodes;

	CHECK(scale && codes, "out of memory");
	for (int pass = 0; pass < 2; pass++) {  /* finite, then with every special */
		if (pass)
			for (size_t i = 0; i < n; i += 29)
				x[i] = bits_f32(specials[(i / 29) % NSPECIALS]);
		dx = up(x, n * 4);
		OK(lks_be_sumsq(cpu, NULL, x, n, &sa));
		OK(lks_be_sumsq(gpu, gctx, dx, n, &sb));
		CHECK(!memcmp(&sa, &sb, sizeof(sa)) || (isnan(sa) && isnan(sb)), "sumsq: %a vs %a",
		      sa, sb);
		OK(lks_be_nonfinite(cpu, NULL, x, n, &ca));
		OK(lks_be_nonfinite(gpu, gctx, dx, n, &cb));
		CHECK(ca == cb && (pass || ca == 0), "nonfinite: cpu %lld, cuda %lld", (long long)ca,
		      (long long)cb);
		OK(lks_be_stats_f32(cpu, NULL, x, n, &a));
		OK(lks_be_stats_f32(gpu, gctx, dx, n, &b));
		same_stats("stats_f32", &a, &b);
		q.x = x; q.rows = R; q.cols = C; q.ldx = C; q.fmt = (lks_fp8)pass;
		q.axis = LKS_AXIS_ROW; q.q = codes; q.ldq = C; q.scale = scale;
		OK(lks_be_quantize(cpu, NULL, &q));
		OK(lks_be_stats_quant(cpu, NULL, &q, &a));
		dcodes = up(codes, n);
		dscale = up(scale, (size_t)R * 4);
		q.x = dx; q.q = dcodes; q.scale = dscale;
		OK(lks_be_stats_quant(gpu, gctx, &q, &b));
		same_stats("stats_quant", &a, &b);
		lks_be_free(gpu, gctx, dx); lks_be_free(gpu, gctx, dcodes);
		lks_be_free(gpu, gctx, dscale);
	}
	free(x); free(scale); free(codes);
}

/* stats_f32 made on the device (devstats.cu) against the CPU's, and measure_begin/end (on
   the meter's streams, and on the host): sizes on both sides of
   XXH3's short paths (240 bytes), its 1 KiB blocks and the warp's 1024-float blocks, up to
   16 MiB; finite, then with every special every 37 values */
static void check_stats_sizes(void)
{
	static const size_t ns[] = { 0, 1, 2, 3, 4, 15, 16, 17, 59, 60, 61, 255, 256, 257, 1000,
	                             1024, 1025, 4097, 65536 + 3, (4u << 20) + 1 };
	char what[64];

	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++)
		for (int specials = 0; specials < 2; specials++) {
			size_t n = ns[k];
			float *x = values(n, 50.0f, specials ? 37 : 0), *dx = up(x, n * 4);
			lks_tensor_stats a, b;

			snprintf(what, sizeof(what), "stats_f32 of %zu floats%s", n,
			         specials ? " with specials" : "");
			OK(lks_be_stats_f32(cpu, NULL, x, n, &a));
			OK(lks_be_stats_f32(gpu, gctx, dx, n, &b));
			same_stats(what, &a, &b);
			/* the tracer's path: measured on the meter's streams (and, without
			   LKS_CUDA_DEVICE_PATHS=0, downloaded and measured on the host), the tensor
			   overwritten at once after measure_begin, as the step goes on */
			for (int host = 0; host < 2; host++) {
				void *job;

				setenv("LKS_CUDA_DEVICE_PATHS", host ? "0" : "1", 1);
				OK(lks_be_measure_begin(gpu, gctx, dx, n, NULL, &job));
				OK(lks_be_zero(gpu, gctx, dx, n * 4));
				OK(lks_be_measure_end(gpu, gctx, job, &b));
				same_stats(what, &a, &b);
				OK(lks_be_upload(gpu, gctx, dx, x, n * 4));
			}
			setenv("LKS_CUDA_DEVICE_PATHS", "1", 1);
			lks_be_free(gpu, gctx, dx);
			free(x);
		}
}

/* a quantized tensor's statistics made on the device (devstats.cu: the 128-bit sum of
   squares, the largest magnitude, the non-finite codes, the smallest scale, XXH3 of codes
   then scales) against the CPU's, through stats_quant and through measure_begin/end (on the
   device and, with LKS_CUDA_DEVICE_PATHS=0, on the host): shapes across XXH3's short paths and
   blocks, both formats, each axis, finite and with specials */
static void check_quant_sizes(void)
{
	static const int shapes[][2] = { { 1, 1 }, { 3, 50 }, { 19, 70 }, { 64, 4096 } };
	char what[96];

	for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++)
		for (int v = 0; v < 4; v++) {
			int R = shapes[k][0], C = shapes[k][1];
			size_t n = (size_t)R * C, ns;
			float *x = values(n, v & 2 ? 1e5f : 3.0f, v & 2 ? 41 : 0);
			float *scale = malloc((size_t)(R > C ? R : C) * 4 + 4);
			uint8_t *codes = malloc(n + 1);
			lks_quant q = { .x = x, .rows = R, .cols = C, .ldx = (size_t)C,
			                .fmt = (lks_fp8)(v & 1), .axis = v & 2 ? LKS_AXIS_COL
			                                                      : LKS_AXIS_ROW,
			                .q = codes, .ldq = (size_t)C, .scale = scale };
			lks_tensor_stats a, b;
			void *dcodes, *dscale;

			CHECK(scale && codes, "out of memory");
			OK(lks_be_quantize(cpu, NULL, &q));
			OK(lks_be_stats_quant(cpu, NULL, &q, &a));
			ns = lks_quant_nscales(&q);
			dcodes = up(codes, n);
			dscale = up(scale, ns * 4);
			q.x = NULL;
			q.q = dcodes;
			q.scale = dscale;
			snprintf(what, sizeof(what), "stats_quant %dx%d fmt %d axis %d", R, C, v & 1,
			         (int)q.axis);
			OK(lks_be_stats_quant(gpu, gctx, &q, &b));
			same_stats(what, &a, &b);
			for (int host = 0; host < 2; host++) {
				void *job;

				setenv("LKS_CUDA_DEVICE_PATHS", host ? "0" : "1", 1);
				OK(lks_be_measure_begin(gpu, gctx, NULL, 0, &q, &job));
				OK(lks_be_zero(gpu, gctx, dcodes, n));
				OK(lks_be_measure_end(gpu, gctx, job, &b));
				same_stats(what, &a, &b);
				OK(lks_be_upload(gpu, gctx, dcodes, codes, n));
			}
			setenv("LKS_CUDA_DEVICE_PATHS", "1", 1);
			lks_be_free(gpu, gctx, dcodes);
			lks_be_free(gpu, gctx, dscale);
			free(x); free(scale); free(codes);
		}
}

/* sumsq and update (update.cu: the CPU's lane order on one warp, clip and AdamW in one
   launch) against the CPU's sumsq, clip and adamw: sizes around the warp's 32 lanes and
   its 1024-float blocks, past its 8 blocks in flight, at an aligned and a misaligned
   start; the clip off, not reached and taken; parts with a gap and two weight decays;
   finite values, then specials (a NaN or infinite norm) */
/* one case of check_update: n values at an offset of shift floats, on the host's path or
   the device's (LKS_CUDA_DEVICE_PATHS 0, 1) */
static void check_update_case(size_t n, int shift, float clip, int special, int dev)
{
	size_t all = n + 1, cut = n / 3, gap = n / 3 + n / 7;
	lks_update_part part[2] = { { 0, cut, 0.1f }, { gap, n - gap, 0.0f } };
	lks_update u = { part, 2, clip, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.05f };
	float *g = values(all, 3.0f, special ? 97 : 0), *p = values(all, 1.0f, 0);
	float *m = values(all, 0.1f, 0), *v = values(all, 0.1f, 0);
	float *dg = up(g, all * 4), *dp = up(p, all * 4), *dm, *dv;
	double sa, sb, norm;
	char what[96];

	for (size_t i = 0; i < all; i++)
		v[i] = fabsf(v[i]);
	dm = up(m, all * 4);
	dv = up(v, all * 4);
	setenv("LKS_CUDA_DEVICE_PATHS", dev ? "1" : "0", 1);
	snprintf(what, sizeof(what), "update n=%zu at +%d, clip %g%s, %s", n, shift, clip,
	         special ? ", specials" : "", dev ? "device" : "host");
	OK(lks_be_sumsq(cpu, NULL, g + shift, n, &sa));
	OK(lks_be_sumsq(gpu, gctx, dg + shift, n, &sb));
	CHECK(!memcmp(&sa, &sb, sizeof(sa)) || (isnan(sa) && isnan(sb)), "%s: sumsq %a vs %a",
	      what, sa, sb);
	norm = sqrt(sa);
	if (u.clip > 0.0f && !(norm <= u.clip))
		OK(lks_be_clip(cpu, NULL, g + shift, n, (float)(u.clip / (norm + 1e-6))));
	for (int i = 0; i < 2; i++)
		OK(lks_be_adamw(cpu, NULL, p + shift + part[i].off, g + shift + part[i].off,
		                m + shift + part[i].off, v + shift + part[i].off, part[i].n, u.lr, u.b1,
		                u.b2, u.eps, part[i].wd, u.bc1, u.bc2));
	OK(lks_be_update(gpu, gctx, dp + shift, dg + shift, dm + shift, dv + shift, n, &u, &sb));
	CHECK(!memcmp(&sa, &sb, sizeof(sa)) || (isnan(sa) && isnan(sb)),
	      "%s: the sum of squares %a vs %a", what, sa, sb);
	same_f32(what, g, dg, all);
	same_f32(what, p, dp, all);
	same_f32(what, m, dm, all);
	same_f32(what, v, dv, all);
	lks_be_free(gpu, gctx, dg); lks_be_free(gpu, gctx, dp);
	lks_be_free(gpu, gctx, dm); lks_be_free(gpu, gctx, dv);
	free(g); free(p); free(m); free(v);
}

static void check_update(void)
{
	static const size_t sizes[] = { 0, 1, 31, 32, 33, 1023, 1024, 1025, 7 * 1024 + 5,
	                                9 * 8 * 1024 + 77, 300001 };
	static const float clips[] = { 0.0f, 1e30f, 0.5f };

	for (int dev = 0; dev < 2; dev++)  /* the host's path, then the device's */
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
			for (int shift = 0; shift < 2; shift++)
				for (int c = 0; c < 3; c++)
					check_update_case(sizes[k], shift, clips[c], c == 2 && k % 2, dev);
	/* parts that overlap are refused, naming the part */
	{
		lks_update_part bad[2] = { { 0, 10, 0.0f }, { 5, 10, 0.0f } };
		lks_update u = { bad, 2, 0.0f, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.05f };
		float *d;
		double ss;

		OK(lks_be_alloc(gpu, gctx, 64 * 4, (void **)&d));
		CHECK(lks_be_update(gpu, gctx, d, d, d, d, 64, &u, &ss) != 0
		      && strstr(lks_errmsg(), "part 1"), "overlapping parts: %s", lks_errmsg());
		lks_be_free(gpu, gctx, d);
	}
}

/* more elements than one grid covers (65535 blocks of 256: ops.cu's grid-stride loops) */
static void check_grid_stride(void)
{
	const size_t n = (size_t)65535 * 256 * 2 + 1001;
	float *a = values(n, 10.0f, 997), *b = values(n, 10.0f, 0), *y = malloc(n * 4);
	float *da = up(a, n * 4), *db = up(b, n * 4);
	int64_t ca, cb;

	CHECK(y, "out of memory");
	OK(lks_be_add(cpu, NULL, a, b, n, y, 1));
	OK(lks_be_add(gpu, gctx, da, db, n, db, 1));  /* in place, as y = a + y */
	same_f32("add over a strided grid", y, db, n);
	OK(lks_be_nonfinite(cpu, NULL, a, n, &ca));
	OK(lks_be_nonfinite(gpu, gctx, da, n, &cb));
	CHECK(ca == cb && ca > 0, "nonfinite over a strided grid: cpu %lld, cuda %lld",
	      (long long)ca, (long long)cb);
	lks_be_free(gpu, gctx, da); lks_be_free(gpu, gctx, db);
	free(a); free(b); free(y);
}

/* LKS_CUDA_DEVICE naming no device of this machine: open fails naming it */
static void check_device_choice(void)
{
	void *other = NULL;

	setenv("LKS_CUDA_DEVICE", "4096", 1);
	CHECK(lks_be_open(gpu, 1, &other) != 0 && strstr(lks_errmsg(), "LKS_CUDA_DEVICE='4096'"),
	      "open with LKS_CUDA_DEVICE=4096: %s", lks_errmsg());
	setenv("LKS_CUDA_DEVICE", "0", 1);
	OK(lks_be_open(gpu, 1, &other));
	lks_be_close(gpu, other);
	unsetenv("LKS_CUDA_DEVICE");
}

static void put(void *arg, const char *key, const char *value)
{
	int *seen = arg;

	printf("gpu_backend: describe %s = %s\n", key, value);
	*seen |= !strcmp(key, "backend") && !strcmp(value, "cuda");
	*seen |= (!strcmp(key, "device") && *value) << 1;
	*seen |= (!strncmp(key, "uuid", 4) && !strncmp(value, "GPU-", 4)) << 2;
}

int main(void)
{
	char names[64];
	int seen = 0;

	/* the device's paths (update.cu, devstats.cu) unless a check says otherwise */
	setenv("LKS_CUDA_DEVICE_PATHS", "1", 1);
	CHECK((gpu = lks_backend_find("cuda")) != NULL, "the registry has no 'cuda'");
	CHECK(!strcmp(lks_backend_names(names, sizeof(names)), "cpu, cuda"), "names: %s", names);
	if (lks_be_open(gpu, 1, &gctx)) {
		/* the reason, from the driver, after what failed */
		CHECK(!strncmp(lks_errmsg(), "cuda: no usable CUDA device: ", 29)
		      && strlen(lks_errmsg()) > 29, "open: %s", lks_errmsg());
		printf("no CUDA device: %s\n", lks_errmsg());
		return LKS_SKIP;
	}
	/* in the table since 2d84d05; gpu_quant_gemm compares their kernels with the cpu's */
	CHECK(gpu->gemm != NULL && gpu->quantize != NULL, "gemm and quantize missing");
	OK(lks_be_describe(gpu, gctx, put, &seen));
	CHECK(seen == 7, "describe: backend, device or uuid missing (%d)", seen);
	check_buffers();
	check_casts();
	check_elementwise();
	check_rmsnorm();
	check_attention();
	check_cross_entropy();
	check_embedding();
	check_stats();
	check_stats_sizes();
	check_quant_sizes();
	check_update();
	check_grid_stride();
	check_device_choice();
	lks_be_close(gpu, gctx);
	printf("gpu_backend: every method equals the cpu's bit for bit (%d NaN payloads differ, "
	       "both NaN)\n", nan_payloads);
	return 0;
}
