/*
 * backend.h: every op of a step, as a struct of methods. The harness reaches kernels only
 * through it, so a CUDA backend (or a test's recording wrapper) plugs in without the model
 * knowing; the harness never includes CUDA headers nor, through this header, CPU ones.
 *
 * Versioned as SQLite's VFS is: version and size say which methods a backend has; methods
 * are only ever added at the end (with the version raised), so a backend built against an
 * older struct still works, its newer methods missing. Callers go through the lks_be_*
 * wrappers below, which turn a missing method (NULL, or beyond the backend's size) into an
 * error naming the backend and the op.
 *
 * Every method gets the backend itself (a wrapper finds its own state in be->app, as a
 * SQLite shim VFS in pAppData) and the context open gave (ctx). Pointers to tensors are
 * backend memory (alloc); the host reaches it through upload and download. The CPU
 * backend's memory is host memory. Element-wise ops with bf16 != 0 round their outputs to
 * BF16 as kernels/cpu/ops.h states; each op's order and bits are those of the CPU kernels.
 */
#ifndef LKS_KERNELS_BACKEND_H
#define LKS_KERNELS_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/backend_types.h"
#include "kernels/comm.h"
#include "kernels/devcomm.h"
#include "kernels/element/attn.h"
#include "kernels/err.h"

#define LKS_BACKEND_VERSION 10

typedef struct lks_backend lks_backend;

/* describe(): one fingerprint key and its value at a time */
typedef void (*lks_describe_fn)(void *arg, const char *key, const char *value);
/* gemm_plans(): one plan at a time; non-zero stops the walk and is returned */
typedef int (*lks_plan_fn)(void *arg, const lks_gemm_algo *plan);

struct lks_backend {
	int version;                /* LKS_BACKEND_VERSION it was built against */
	int size;                   /* sizeof(lks_backend) it was built against */
	const char *name;           /* "cpu", "cuda"; the run stores it, the golden class */
	void *app;                  /* a wrapper's own state */

	/* threads: the host threads it may use (CPU: its GEMM pool; 1: the caller only) */
	int (*open)(const lks_backend *be, int threads, void **ctx);
	void (*close)(const lks_backend *be, void *ctx);
	void (*describe)(const lks_backend *be, void *ctx, lks_describe_fn put, void *arg);

	/* buffers: 64-byte aligned; upload/download copy host <-> backend memory; sync waits
	   for everything queued */
	int (*alloc)(const lks_backend *be, void *ctx, size_t bytes, void **out);
	void (*free)(const lks_backend *be, void *ctx, void *p);
	int (*upload)(const lks_backend *be, void *ctx, void *dst, const void *src, size_t bytes);
	int (*download)(const lks_backend *be, void *ctx, void *dst, const void *src, size_t bytes);
	int (*sync)(const lks_backend *be, void *ctx);
	/* backend to backend memory, and zeros */
	int (*copy)(const lks_backend *be, void *ctx, void *dst, const void *src, size_t bytes);
	int (*zero)(const lks_backend *be, void *ctx, void *p, size_t bytes);

	/* C = A.B^T, fp32 accumulate; amax -> scale -> satfinite cast (amax and scales stay in
	   backend memory; the counts come back in q) */
	int (*gemm)(const lks_backend *be, void *ctx, const lks_gemm *g);
	int (*quantize)(const lks_backend *be, void *ctx, lks_quant *q);

	/* x <- bf16(x); y = bf16(x) as uint16_t; d (cols, rows) = s (rows, cols)^T of bytes,
	   floats, and floats rounded to BF16 on the way */
	int (*round_bf16)(const lks_backend *be, void *ctx, float *x, size_t n);
	int (*to_bf16)(const lks_backend *be, void *ctx, const float *x, uint16_t *y, size_t n);
	int (*transpose_u8)(const lks_backend *be, void *ctx, const uint8_t *s, int rows,
	                    int cols, uint8_t *d);
	int (*transpose_f32)(const lks_backend *be, void *ctx, const float *s, int rows, int cols,
	                     float *d);
	int (*transpose_bf16)(const lks_backend *be, void *ctx, const float *s, int rows,
	                      int cols, uint16_t *d);
	/* the model's layers (kernels/cpu/ops.h states each) */
	int (*rmsnorm_fwd)(const lks_backend *be, void *ctx, const float *x, const float *g,
	                   int T, int H, float *y, float *rstd, int bf16);
	int (*rmsnorm_bwd)(const lks_backend *be, void *ctx, const float *dy, const float *x,
	                   const float *g, const float *rstd, int T, int H, float *dx, float *dg,
	                   int bf16);
	int (*relu2_fwd)(const lks_backend *be, void *ctx, const float *u, size_t n, float *y,
	                 int bf16);
	int (*relu2_bwd)(const lks_backend *be, void *ctx, const float *u, const float *dy,
	                 size_t n, float *du, int bf16);
	/* *loss (host) = the sum over rows of -log softmax(z)[target], in double, row order */
	int (*cross_entropy)(const lks_backend *be, void *ctx, const float *z,
	                     const int32_t *target, int T, int V, float grad_scale, float *dz,
	                     double *loss);
	/* y (T, H) = rows tok[t] of table (., H); table_grad rows tok[t] += dy row t, t
	   ascending */
	int (*embed_gather)(const lks_backend *be, void *ctx, const float *table,
	                    const int32_t *tok, int T, int H, float *y);
	int (*embed_scatter_add)(const lks_backend *be, void *ctx, const float *dy,
	                         const int32_t *tok, int T, int H, float *table_grad);
	/* the residual: y = a + b, then rounded to BF16 when bf16 */
	int (*add)(const lks_backend *be, void *ctx, const float *a, const float *b, size_t n,
	           float *y, int bf16);

	/* the optimizer (kernels/cpu/ops.h's lks_adamw); *out (host) = the sum of squares in
	   stats.h's fixed order; g *= coef */
	int (*adamw)(const lks_backend *be, void *ctx, float *p, const float *g, float *m,
	             float *v, size_t n, float lr, float b1, float b2, float eps, float wd,
	             float bc1, float bc2);
	int (*sumsq)(const lks_backend *be, void *ctx, const float *x, size_t n, double *out);
	int (*clip)(const lks_backend *be, void *ctx, float *g, size_t n, float coef);

	/* the statistics of one traced tensor into *s (host): float32 values, or a quantized
	   tensor's codes and scales as quantize left them */
	int (*stats_f32)(const lks_backend *be, void *ctx, const float *x, size_t n,
	                 lks_tensor_stats *s);
	int (*stats_quant)(const lks_backend *be, void *ctx, const lks_quant *q,
	                   lks_tensor_stats *s);

	/* -- version 2 -- */
	/* *out (host) = the values of x that are NaN or Inf (every exponent bit set): the
	   check of a gradient before its all-reduce, traced or not */
	int (*nonfinite)(const lks_backend *be, void *ctx, const float *x, size_t n,
	                 int64_t *out);

	/* -- version 3 -- */
	/* 1: the backend's memory is the host's, so a communicator (kernels/comm.h, host
	   buffers) may work on it in place; missing or 0: the caller stages through the host */
	int (*host_memory)(const lks_backend *be);

	/* -- version 4 -- */
	/* *bytes (host) = the most bytes its alloc had handed out at once since open (a
	   high-water mark, never reset); missing: not measured */
	int (*mem_peak)(const lks_backend *be, void *ctx, int64_t *bytes);

	/* -- version 5 -- */
	/* A traced tensor's statistics in two halves, so that a device goes on while its
	   tensors are measured: measure_begin takes what it needs of x (n floats) or, x NULL,
	   of q, as the work queued so far leaves them, and returns at once (*job: the
	   backend's); work queued after it may overwrite the tensor. measure_end (any one
	   thread, once per job that began) fills *s as stats_f32 / stats_quant would, and
	   releases the job, also when it fails. Missing: the tracer calls the stats methods. */
	int (*measure_begin)(const lks_backend *be, void *ctx, const float *x, size_t n,
	                     const lks_quant *q, void **job);
	int (*measure_end)(const lks_backend *be, void *ctx, void *job, lks_tensor_stats *s);

	/* -- version 6 -- */
	/* put(arg, plan) for each way its library ran GEMMs since open (lks_gemm_algo), in the
	   order first met; missing: it has no library GEMM (the cpu's), no plans */
	int (*gemm_plans)(const lks_backend *be, void *ctx, lks_plan_fn put, void *arg);

	/* -- version 7 -- */
	/* open for the process's rank of index local (0, 1, ...): a context of its own, so no
	   two ranks share a stream or a scratch buffer (cuda: on device (LKS_CUDA_DEVICE or 0)
	   + local, modulo the devices); missing: open */
	int (*open_rank)(const lks_backend *be, int threads, int local, void **ctx);
	/* A communicator whose all-reduces take this context's memory, built on host, this
	   rank's end of the group (the threads' or MPI's, which keeps gather, barrier and
	   abort); o: the ranks of this process, lks_allreduce_mode and the timeout of every
	   wait (devcomm.h). Called by every rank of the group at once, each in its own
	   thread. *out takes host over (closing *out closes host), or is NULL, host untouched,
	   where the group declined (every rank alike: e.g. more ranks than devices on a
	   process), and the caller stages through the host; missing: declined everywhere. */
	int (*comm)(const lks_backend *be, void *ctx, lks_comm *host, const lks_devcomm_opts *o,
	            lks_comm **out);

	/* -- version 8 -- */
	/* A wrapper's window on the trace (a planted fault, a recorder; no backend has one):
	   the tracer names each float tensor it is about to measure, x (n floats) as the model
	   goes on with it, in execution order; phase: the trace's (lks_phase). A wrapper may
	   change x (a planted bitflip or NaN), and the model then goes on with what is
	   measured. Missing: nothing is done. */
	int (*traced)(const lks_backend *be, void *ctx, float *x, size_t n, const char *name,
	              int phase);

	/* -- version 9 -- */
	/* One rank's optimizer step, as sumsq, clip and adamw make it, with no host between
	   them: *ss (host) = the sum of squares of g (n floats, stats.h's fixed order); where
	   u->clip > 0 and !(sqrt(ss) <= u->clip), g *= (float)(u->clip / (sqrt(ss) + 1e-6));
	   then AdamW on each of u's parts of p, g, m, v. The same bits as those three methods.
	   Missing: the runner calls them. */
	int (*update)(const lks_backend *be, void *ctx, float *p, float *g, float *m, float *v,
	              size_t n, const lks_update *u, double *ss);

	/* -- version 10 -- */
	/* Multi-head attention with RoPE of shape a (kernels/element/attn.h states each
	   value): qkv (T, 3D) in, rope the table of lks_rope_table (S, hd); qkvr (T, 3D) the
	   rotated queries and keys and the values, o (T, D), stat (B, nh, S, 2). The backward
	   takes what the forward left and dout (T, D), and writes dqkv (T, 3D). */
	int (*attn_fwd)(const lks_backend *be, void *ctx, const float *qkv, const float *rope,
	                const lks_attn_shape *a, float *qkvr, float *o, float *stat, int bf16);
	int (*attn_bwd)(const lks_backend *be, void *ctx, const float *qkvr, const float *stat,
	                const float *dout, const float *rope, const lks_attn_shape *a,
	                float *dqkv, int bf16);
};

/* The registry (backend.c, the one library that links the backends' kernels): the backend
   called name, or NULL (lks_err lists the known names); the default, cpu (its ctx is an
   lks_pool *, NULL: the calling thread only); the known names, "cpu, cuda", into buf. */
const lks_backend *lks_backend_find(const char *name);
const lks_backend *lks_backend_default(void);
const char *lks_backend_names(char *buf, size_t size);

/* ---- the wrappers: a missing method is an error, never a crash ---- */

/* Whether be has method m: within the struct it was built with, and set. */
#define LKS_BE_HAS(be, m) \
	(offsetof(lks_backend, m) + sizeof((be)->m) <= (size_t)(be)->size && (be)->m != NULL)

static inline int lks_be_unsupported(const lks_backend *be, const char *op)
{
	return lks_err("backend '%s' does not support %s", be->name ? be->name : "?", op);
}

#define LKS_BE_CALL(be, m, ...) \
	(LKS_BE_HAS(be, m) ? (be)->m((be), __VA_ARGS__) : lks_be_unsupported((be), #m))

static inline int lks_be_open(const lks_backend *be, int threads, void **ctx)
{ *ctx = NULL; return LKS_BE_CALL(be, open, threads, ctx); }
static inline void lks_be_close(const lks_backend *be, void *ctx)
{ if (LKS_BE_HAS(be, close)) be->close(be, ctx); }
static inline int lks_be_describe(const lks_backend *be, void *ctx, lks_describe_fn put, void *arg)
{ if (!LKS_BE_HAS(be, describe)) return lks_be_unsupported(be, "describe");
  be->describe(be, ctx, put, arg); return 0; }

static inline int lks_be_alloc(const lks_backend *be, void *ctx, size_t bytes, void **out)
{ *out = NULL; return LKS_BE_CALL(be, alloc, ctx, bytes, out); }
static inline void lks_be_free(const lks_backend *be, void *ctx, void *p)
{ if (p && LKS_BE_HAS(be, free)) be->free(be, ctx, p); }
static inline int lks_be_upload(const lks_backend *be, void *ctx,
                                void *dst, const void *src, size_t bytes)
{ return LKS_BE_CALL(be, upload, ctx, dst, src, bytes); }
static inline int lks_be_download(const lks_backend *be, void *ctx,
                                  void *dst, const void *src, size_t bytes)
{ return LKS_BE_CALL(be, download, ctx, dst, src, bytes); }
static inline int lks_be_sync(const lks_backend *be, void *ctx)
{ return LKS_BE_CALL(be, sync, ctx); }
static inline int lks_be_copy(const lks_backend *be, void *ctx,
                              void *dst, const void *src, size_t bytes)
{ return LKS_BE_CALL(be, copy, ctx, dst, src, bytes); }
static inline int lks_be_zero(const lks_backend *be, void *ctx, void *p, size_t bytes)
{ return LKS_BE_CALL(be, zero, ctx, p, bytes); }

static inline int lks_be_gemm(const lks_backend *be, void *ctx, const lks_gemm *g)
{ return LKS_BE_CALL(be, gemm, ctx, g); }
static inline int lks_be_quantize(const lks_backend *be, void *ctx, lks_quant *q)
{ return LKS_BE_CALL(be, quantize, ctx, q); }

static inline int lks_be_round_bf16(const lks_backend *be, void *ctx, float *x, size_t n)
{ return LKS_BE_CALL(be, round_bf16, ctx, x, n); }
static inline int lks_be_to_bf16(const lks_backend *be, void *ctx,
                                 const float *x, uint16_t *y, size_t n)
{ return LKS_BE_CALL(be, to_bf16, ctx, x, y, n); }
static inline int lks_be_transpose_u8(const lks_backend *be, void *ctx,
                                      const uint8_t *s, int rows, int cols, uint8_t *d)
{ return LKS_BE_CALL(be, transpose_u8, ctx, s, rows, cols, d); }
static inline int lks_be_transpose_f32(const lks_backend *be, void *ctx,
                                       const float *s, int rows, int cols, float *d)
{ return LKS_BE_CALL(be, transpose_f32, ctx, s, rows, cols, d); }
static inline int lks_be_transpose_bf16(const lks_backend *be, void *ctx,
                                        const float *s, int rows, int cols, uint16_t *d)
{ return LKS_BE_CALL(be, transpose_bf16, ctx, s, rows, cols, d); }

static inline int lks_be_rmsnorm_fwd(const lks_backend *be, void *ctx,
                                     const float *x, const float *g,
                                     int T, int H, float *y, float *rstd, int bf16)
{ return LKS_BE_CALL(be, rmsnorm_fwd, ctx, x, g, T, H, y, rstd, bf16); }
static inline int lks_be_rmsnorm_bwd(const lks_backend *be, void *ctx,
                                     const float *dy, const float *x,
                                     const float *g, const float *rstd, int T, int H, float *dx,
                                     float *dg, int bf16)
{ return LKS_BE_CALL(be, rmsnorm_bwd, ctx, dy, x, g, rstd, T, H, dx, dg, bf16); }
static inline int lks_be_relu2_fwd(const lks_backend *be, void *ctx,
                                   const float *u, size_t n, float *y, int bf16)
{ return LKS_BE_CALL(be, relu2_fwd, ctx, u, n, y, bf16); }
static inline int lks_be_relu2_bwd(const lks_backend *be, void *ctx,
                                   const float *u, const float *dy,
                                   size_t n, float *du, int bf16)
{ return LKS_BE_CALL(be, relu2_bwd, ctx, u, dy, n, du, bf16); }
static inline int lks_be_cross_entropy(const lks_backend *be, void *ctx, const float *z,
                                       const int32_t *target, int T, int V, float grad_scale,
                                       float *dz, double *loss)
{ return LKS_BE_CALL(be, cross_entropy, ctx, z, target, T, V, grad_scale, dz, loss); }
static inline int lks_be_embed_gather(const lks_backend *be, void *ctx, const float *table,
                                      const int32_t *tok, int T, int H, float *y)
{ return LKS_BE_CALL(be, embed_gather, ctx, table, tok, T, H, y); }
static inline int lks_be_embed_scatter_add(const lks_backend *be, void *ctx, const float *dy,
                                           const int32_t *tok, int T, int H, float *table_grad)
{ return LKS_BE_CALL(be, embed_scatter_add, ctx, dy, tok, T, H, table_grad); }
static inline int lks_be_add(const lks_backend *be, void *ctx, const float *a, const float *b,
                             size_t n, float *y, int bf16)
{ return LKS_BE_CALL(be, add, ctx, a, b, n, y, bf16); }

static inline int lks_be_attn_fwd(const lks_backend *be, void *ctx, const float *qkv,
                                  const float *rope, const lks_attn_shape *a, float *qkvr,
                                  float *o, float *stat, int bf16)
{ return LKS_BE_CALL(be, attn_fwd, ctx, qkv, rope, a, qkvr, o, stat, bf16); }
static inline int lks_be_attn_bwd(const lks_backend *be, void *ctx, const float *qkvr,
                                  const float *stat, const float *dout, const float *rope,
                                  const lks_attn_shape *a, float *dqkv, int bf16)
{ return LKS_BE_CALL(be, attn_bwd, ctx, qkvr, stat, dout, rope, a, dqkv, bf16); }

static inline int lks_be_adamw(const lks_backend *be, void *ctx, float *p, const float *g, float *m,
                               float *v, size_t n, float lr, float b1, float b2, float eps,
                               float wd, float bc1, float bc2)
{ return LKS_BE_CALL(be, adamw, ctx, p, g, m, v, n, lr, b1, b2, eps, wd, bc1, bc2); }
static inline int lks_be_sumsq(const lks_backend *be, void *ctx,
                               const float *x, size_t n, double *out)
{ return LKS_BE_CALL(be, sumsq, ctx, x, n, out); }
static inline int lks_be_clip(const lks_backend *be, void *ctx, float *g, size_t n, float coef)
{ return LKS_BE_CALL(be, clip, ctx, g, n, coef); }

static inline int lks_be_stats_f32(const lks_backend *be, void *ctx, const float *x, size_t n,
                                   lks_tensor_stats *s)
{ return LKS_BE_CALL(be, stats_f32, ctx, x, n, s); }
static inline int lks_be_stats_quant(const lks_backend *be, void *ctx, const lks_quant *q,
                                     lks_tensor_stats *s)
{ return LKS_BE_CALL(be, stats_quant, ctx, q, s); }
/* the high-water mark of mem_peak, or 0 where the backend does not measure it */
static inline int64_t lks_be_mem_peak(const lks_backend *be, void *ctx)
{
	int64_t bytes = 0;

	if (!LKS_BE_HAS(be, mem_peak) || be->mem_peak(be, ctx, &bytes))
		return 0;
	return bytes;
}
/* 1: be measures in two halves (measure_begin, measure_end) */
static inline int lks_be_measures_later(const lks_backend *be)
{ return LKS_BE_HAS(be, measure_begin) && LKS_BE_HAS(be, measure_end); }
static inline int lks_be_measure_begin(const lks_backend *be, void *ctx, const float *x,
                                       size_t n, const lks_quant *q, void **job)
{ *job = NULL; return LKS_BE_CALL(be, measure_begin, ctx, x, n, q, job); }
static inline int lks_be_measure_end(const lks_backend *be, void *ctx, void *job,
                                     lks_tensor_stats *s)
{ return LKS_BE_CALL(be, measure_end, ctx, job, s); }
/* the plans of gemm_plans, none where the backend has no such method */
static inline int lks_be_gemm_plans(const lks_backend *be, void *ctx, lks_plan_fn put,
                                    void *arg)
{ return LKS_BE_HAS(be, gemm_plans) ? be->gemm_plans(be, ctx, put, arg) : 0; }
static inline int lks_be_open_rank(const lks_backend *be, int threads, int local, void **ctx)
{
	*ctx = NULL;
	return LKS_BE_HAS(be, open_rank) ? be->open_rank(be, threads, local, ctx)
	     : lks_be_open(be, threads, ctx);
}
static inline int lks_be_comm(const lks_backend *be, void *ctx, lks_comm *host,
                              const lks_devcomm_opts *o, lks_comm **out)
{
	*out = NULL;
	return LKS_BE_HAS(be, comm) ? be->comm(be, ctx, host, o, out) : 0;
}
/* *out: a host-memory view of dev, a device communicator (lks_be_comm's) on the memory of
   be's context ctx: each collective takes host buffers, which it uploads into a scratch
   there, runs on dev and downloads (kernels/comm_staged.c); split splits dev (the sub-group
   seen so too). Closing *out closes dev where owns says so. */
int lks_comm_staged(lks_comm *dev, const lks_backend *be, void *ctx, int owns, lks_comm **out);
static inline int lks_be_traced(const lks_backend *be, void *ctx, float *x, size_t n,
                                const char *name, int phase)
{ return LKS_BE_HAS(be, traced) ? be->traced(be, ctx, x, n, name, phase) : 0; }
/* 1: be makes the optimizer step in one call (update) */
static inline int lks_be_updates(const lks_backend *be)
{ return LKS_BE_HAS(be, update); }
static inline int lks_be_update(const lks_backend *be, void *ctx, float *p, float *g, float *m,
                                float *v, size_t n, const lks_update *u, double *ss)
{ return LKS_BE_CALL(be, update, ctx, p, g, m, v, n, u, ss); }
static inline int lks_be_host_memory(const lks_backend *be)
{ return LKS_BE_HAS(be, host_memory) && be->host_memory(be); }
static inline int lks_be_nonfinite(const lks_backend *be, void *ctx, const float *x, size_t n,
                                   int64_t *out)
{ return LKS_BE_CALL(be, nonfinite, ctx, x, n, out); }

#endif
