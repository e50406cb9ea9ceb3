/*
 * backend_cpu.c: the CPU reference backend behind kernels/backend.h. Each method calls the
 * CPU kernel of the same name (ops.h, gemm.h, quant.h, stats.h) or, for the embedding and
 * the residual, runs here the loop the model ran itself; the bits are the kernels'. Its
 * memory is host memory, so upload, download and copy are memcpy and sync has nothing to
 * wait for. ctx is the GEMM's lks_pool (NULL: the calling thread only).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/backend.h"
#include "kernels/cpu/backend_cpu.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/ops.h"
#include "kernels/pool.h"
#include "kernels/cpu/quant.h"
#include "kernels/cpu/stats.h"

static int lks_cpu_open(const lks_backend *be, int threads, void **ctx)
{
	lks_pool *pool = NULL;

	(void)be;
	if (threads > 1 && lks_pool_create(threads, &pool))
		return -1;
	*ctx = pool;
	return 0;
}

static void lks_cpu_close(const lks_backend *be, void *ctx)
{
	(void)be;
	lks_pool_free(ctx);
}

static void lks_cpu_describe(const lks_backend *be, void *ctx, lks_describe_fn put, void *arg)
{
	char threads[16];

	snprintf(threads, sizeof(threads), "%d", lks_pool_threads(ctx));
	put(arg, "backend", be->name);
	put(arg, "isa", lks_isa_name(lks_isa_active()));
	put(arg, "threads", threads);
}

static int lks_cpu_alloc(const lks_backend *be, void *ctx, size_t bytes, void **out)
{
	(void)be; (void)ctx;
	if (!(*out = aligned_alloc(64, (bytes + 63) & ~(size_t)63)))
		return lks_err("out of memory for %zu bytes", bytes);
	return 0;
}

static void lks_cpu_free(const lks_backend *be, void *ctx, void *p)
{
	(void)be; (void)ctx;
	free(p);
}

/* upload, download and copy alike: all of it is host memory */
static int lks_cpu_copy(const lks_backend *be, void *ctx, void *dst, const void *src,
                        size_t bytes)
{
	(void)be; (void)ctx;
	memcpy(dst, src, bytes);
	return 0;
}

static int lks_cpu_sync(const lks_backend *be, void *ctx)
{
	(void)be; (void)ctx;
	return 0;
}

static int lks_cpu_zero(const lks_backend *be, void *ctx, void *p, size_t bytes)
{
	(void)be; (void)ctx;
	memset(p, 0, bytes);
	return 0;
}

static int lks_cpu_gemm(const lks_backend *be, void *ctx, const lks_gemm *g)
{
	if (g->impl != LKS_GEMM_REFERENCE)
		return lks_err("backend '%s' has only the reference GEMM (gemm = cublaslt needs "
		               "--backend cuda)", be->name);
	return lks_gemm_run(ctx, g);
}

static int lks_cpu_quantize(const lks_backend *be, void *ctx, lks_quant *q)
{
	(void)be;
	return lks_quantize(ctx, q);
}

static int lks_cpu_round_bf16(const lks_backend *be, void *ctx, float *x, size_t n)
{
	(void)be; (void)ctx;
	lks_round_bf16(x, n);
	return 0;
}

static int lks_cpu_to_bf16(const lks_backend *be, void *ctx, const float *x, uint16_t *y,
                           size_t n)
{
	(void)be; (void)ctx;
	lks_f32_to_bf16_n(x, y, n);
	return 0;
}

static int lks_cpu_transpose_u8(const lks_backend *be, void *ctx, const uint8_t *s, int rows,
                                int cols, uint8_t *d)
{
	(void)be; (void)ctx;
	lks_transpose_u8(s, rows, cols, d);
	return 0;
}

static int lks_cpu_transpose_f32(const lks_backend *be, void *ctx, const float *s, int rows,
                                 int cols, float *d)
{
	(void)be; (void)ctx;
	lks_transpose_f32(s, rows, cols, d);
	return 0;
}

static int lks_cpu_transpose_bf16(const lks_backend *be, void *ctx, const float *s, int rows,
                                  int cols, uint16_t *d)
{
	(void)be; (void)ctx;
	lks_transpose_bf16(s, rows, cols, d);
	return 0;
}

static int lks_cpu_rmsnorm_fwd(const lks_backend *be, void *ctx, const float *x,
                               const float *g, int T, int H, float *y, float *rstd, int bf16)
{
	(void)be; (void)ctx;
	lks_rmsnorm_fwd(x, g, T, H, y, rstd, bf16);
	return 0;
}

static int lks_cpu_rmsnorm_bwd(const lks_backend *be, void *ctx, const float *dy,
                               const float *x, const float *g, const float *rstd, int T, int H,
                               float *dx, float *dg, int bf16)
{
	(void)be; (void)ctx;
	lks_rmsnorm_bwd(dy, x, g, rstd, T, H, dx, dg, bf16);
	return 0;
}

static int lks_cpu_relu2_fwd(const lks_backend *be, void *ctx, const float *u, size_t n,
                             float *y, int bf16)
{
	(void)be; (void)ctx;
	lks_relu2_fwd(u, n, y, bf16);
	return 0;
}

static int lks_cpu_relu2_bwd(const lks_backend *be, void *ctx, const float *u,
                             const float *dy, size_t n, float *du, int bf16)
{
	(void)be; (void)ctx;
	lks_relu2_bwd(u, dy, n, du, bf16);
	return 0;
}

static int lks_cpu_attn_fwd(const lks_backend *be, void *ctx, const float *qkv,
                            const float *rope, const lks_attn_shape *a, float *qkvr, float *o,
                            float *stat, int bf16)
{
	(void)be;
	lks_attn_fwd(ctx, qkv, rope, a, qkvr, o, stat, bf16);
	return 0;
}

static int lks_cpu_attn_bwd(const lks_backend *be, void *ctx, const float *qkvr,
                            const float *stat, const float *dout, const float *rope,
                            const lks_attn_shape *a, float *dqkv, int bf16)
{
	(void)be;
	return lks_attn_bwd(ctx, qkvr, stat, dout, rope, a, dqkv, bf16)
	       ? lks_err("out of memory for the attention's backward") : 0;
}

static int lks_cpu_cross_entropy(const lks_backend *be, void *ctx, const float *z,
                                 const int32_t *target, int T, int V, float grad_scale,
                                 float *dz, double *loss)
{
	(void)be; (void)ctx;
	*loss = lks_cross_entropy(z, target, T, V, grad_scale, dz);
	return 0;
}

static int lks_cpu_embed_gather(const lks_backend *be, void *ctx, const float *table,
                                const int32_t *tok, int T, int H, float *y)
{
	(void)be; (void)ctx;
	for (int t = 0; t < T; t++)
		memcpy(y + (size_t)t * H, table + (size_t)tok[t] * H, sizeof(float) * (size_t)H);
	return 0;
}

/* rows added in token order: a token seen twice adds its rows in that order */
static int lks_cpu_embed_scatter_add(const lks_backend *be, void *ctx, const float *dy,
                                     const int32_t *tok, int T, int H, float *table_grad)
{
	(void)be; (void)ctx;
	for (int t = 0; t < T; t++) {
		float *ge = table_grad + (size_t)tok[t] * H;

		for (int i = 0; i < H; i++)
			ge[i] += dy[(size_t)t * H + i];
	}
	return 0;
}

static int lks_cpu_add(const lks_backend *be, void *ctx, const float *a, const float *b,
                       size_t n, float *y, int bf16)
{
	(void)be; (void)ctx;
	for (size_t i = 0; i < n; i++)
		y[i] = a[i] + b[i];
	if (bf16)
		lks_round_bf16(y, n);
	return 0;
}

static int lks_cpu_adamw(const lks_backend *be, void *ctx, float *p, const float *g, float *m,
                         float *v, size_t n, float lr, float b1, float b2, float eps, float wd,
                         float bc1, float bc2)
{
	(void)be; (void)ctx;
	lks_adamw(p, g, m, v, n, lr, b1, b2, eps, wd, bc1, bc2);
	return 0;
}

static int lks_cpu_sumsq(const lks_backend *be, void *ctx, const float *x, size_t n,
                         double *out)
{
	(void)be; (void)ctx;
	*out = lks_sumsq(x, n);
	return 0;
}

static int lks_cpu_nonfinite(const lks_backend *be, void *ctx, const float *x, size_t n,
                             int64_t *out)
{
	(void)be; (void)ctx;
	*out = lks_nonfinite(x, n);
	return 0;
}

static int lks_cpu_host_memory(const lks_backend *be)
{
	(void)be;
	return 1;
}

/* every rank's context alike: the CPU has no device to choose */
static int lks_cpu_open_rank(const lks_backend *be, int threads, int local, void **ctx)
{
	(void)local;
	return lks_cpu_open(be, threads, ctx);
}

static int lks_cpu_clip(const lks_backend *be, void *ctx, float *g, size_t n, float coef)
{
	(void)be; (void)ctx;
	for (size_t i = 0; i < n; i++)
		g[i] *= coef;
	return 0;
}

static int lks_cpu_stats_f32(const lks_backend *be, void *ctx, const float *x, size_t n,
                             lks_tensor_stats *s)
{
	(void)be; (void)ctx;
	memset(s, 0, sizeof(*s));
	s->scale = NAN;
	lks_stats_f32(x, n, &s->l2, &s->amax, &s->nonfinite, &s->hash);
	return 0;
}

/* l2 and amax of the decoded codes (in scaled units: exact, so the same whatever the
   shape), the smallest scale, the cast's counts, a hash of codes and scales */
static int lks_cpu_stats_quant(const lks_backend *be, void *ctx, const lks_quant *q,
                               lks_tensor_stats *s)
{
	size_t ns = lks_quant_nscales(q);
	lks_fp8_stats st = { 0 };
	float smin = INFINITY;

	(void)be; (void)ctx;
	memset(s, 0, sizeof(*s));
	if (q->ldq == (size_t)q->cols)
		lks_fp8_stats_add(&st, q->q, (size_t)q->rows * (size_t)q->cols, q->fmt);
	else
		for (int r = 0; r < q->rows; r++)
			lks_fp8_stats_add(&st, q->q + (size_t)r * q->ldq, (size_t)q->cols, q->fmt);
	lks_fp8_stats_result(&st, q->fmt, &s->l2, &s->amax, &s->nonfinite);
	s->hash = lks_hash_rows(q->q, q->rows, q->cols, q->ldq, q->scale, ns);
	for (size_t i = 0; i < ns; i++)
		smin = q->scale[i] < smin || isnan(q->scale[i]) ? q->scale[i] : smin;
	s->scale = smin;
	s->underflow = (int64_t)q->underflow;
	s->saturated = (int64_t)q->saturated;
	return 0;
}

const lks_backend lks_backend_cpu = {
	.version = LKS_BACKEND_VERSION,
	.size = (int)sizeof(lks_backend),
	.name = "cpu",
	.open = lks_cpu_open,
	.close = lks_cpu_close,
	.describe = lks_cpu_describe,
	.alloc = lks_cpu_alloc,
	.free = lks_cpu_free,
	.upload = lks_cpu_copy,
	.download = lks_cpu_copy,
	.sync = lks_cpu_sync,
	.copy = lks_cpu_copy,
	.zero = lks_cpu_zero,
	.gemm = lks_cpu_gemm,
	.quantize = lks_cpu_quantize,
	.round_bf16 = lks_cpu_round_bf16,
	.to_bf16 = lks_cpu_to_bf16,
	.transpose_u8 = lks_cpu_transpose_u8,
	.transpose_f32 = lks_cpu_transpose_f32,
	.transpose_bf16 = lks_cpu_transpose_bf16,
	.rmsnorm_fwd = lks_cpu_rmsnorm_fwd,
	.rmsnorm_bwd = lks_cpu_rmsnorm_bwd,
	.relu2_fwd = lks_cpu_relu2_fwd,
	.relu2_bwd = lks_cpu_relu2_bwd,
	.attn_fwd = lks_cpu_attn_fwd,
	.attn_bwd = lks_cpu_attn_bwd,
	.cross_entropy = lks_cpu_cross_entropy,
	.embed_gather = lks_cpu_embed_gather,
	.embed_scatter_add = lks_cpu_embed_scatter_add,
	.add = lks_cpu_add,
	.adamw = lks_cpu_adamw,
	.sumsq = lks_cpu_sumsq,
	.clip = lks_cpu_clip,
	.stats_f32 = lks_cpu_stats_f32,
	.stats_quant = lks_cpu_stats_quant,
	.nonfinite = lks_cpu_nonfinite,
	.host_memory = lks_cpu_host_memory,
	.open_rank = lks_cpu_open_rank,
	/* .comm: none, its memory is the host's, which the host communicators sum in place */
};
