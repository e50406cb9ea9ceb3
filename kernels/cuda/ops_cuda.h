/*
 * ops_cuda.h: what the CUDA backend's files share, private to kernels/cuda (CUDA C++ only).
 * backend_cuda.cu holds the context, the buffers and the table; ops.cu the methods that
 * launch the element-wise and row-wise kernels, each named as the backend.h method it is.
 */
#ifndef LKS_KERNELS_CUDA_OPS_CUDA_H
#define LKS_KERNELS_CUDA_OPS_CUDA_H

#include <cuda_runtime.h>

#include "kernels/cuda/backend_cuda.h"
#include "kernels/cuda/cuda_check.h"

/* Makes ctx's device current on the calling thread (a rank may call from a thread other
   than open's) and returns its stream. */
cudaStream_t lks_cuda_enter(void *ctx);
/* Device scratch of at least bytes, owned by ctx (grows, kept until close); valid until the
   next call on ctx. */
int lks_cuda_scratch(void *ctx, size_t bytes, void **p);
/* *buf (device memory of *cap bytes) grown to at least bytes, after st's queued work,
   which may still read the old buffer; what names it in an error. */
int lks_cuda_grow(cudaStream_t st, size_t bytes, void **buf, size_t *cap, const char *what);

/* ---- launching a kernel over n items (ops.cu, update.cu) ---- */

#define LKS_CUDA_THREADS 256
#define LKS_CUDA_MAX_BLOCKS 65535u

/* The blocks of LKS_CUDA_THREADS for n items (at least one; a grid-stride loop does the
   rest). */
static inline unsigned lks_cuda_blocks(size_t n)
{
	size_t b = (n + LKS_CUDA_THREADS - 1) / LKS_CUDA_THREADS;

	return b == 0 ? 1u : b > LKS_CUDA_MAX_BLOCKS ? LKS_CUDA_MAX_BLOCKS : (unsigned)b;
}

#define LKS_FOR_EACH(i, n)                                                             \
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);            \
	     i += (size_t)gridDim.x * blockDim.x)

/* Launches kernel over n items on ctx's stream and checks the launch. */
#define LKS_CUDA_LAUNCH(name, kernel, n, ...)                                          \
	do {                                                                               \
		cudaStream_t st_ = lks_cuda_enter(ctx);                                        \
                                                                                       \
		(void)be;                                                                      \
		if ((n) == 0)                                                                  \
			return 0;                                                                  \
		kernel<<<lks_cuda_blocks(n), LKS_CUDA_THREADS, 0, st_>>>(__VA_ARGS__);         \
		return LKS_CUDA(cudaGetLastError(), name);                                     \
	} while (0)

#define LKS_CUDA_OP(name, ...) int lks_cuda_##name(const lks_backend *be, void *ctx, __VA_ARGS__)

LKS_CUDA_OP(round_bf16, float *x, size_t n);
LKS_CUDA_OP(to_bf16, const float *x, uint16_t *y, size_t n);
LKS_CUDA_OP(transpose_u8, const uint8_t *s, int rows, int cols, uint8_t *d);
LKS_CUDA_OP(transpose_f32, const float *s, int rows, int cols, float *d);
LKS_CUDA_OP(transpose_bf16, const float *s, int rows, int cols, uint16_t *d);
LKS_CUDA_OP(rmsnorm_fwd, const float *x, const float *g, int T, int H, float *y, float *rstd,
            int bf16);
LKS_CUDA_OP(rmsnorm_bwd, const float *dy, const float *x, const float *g, const float *rstd,
            int T, int H, float *dx, float *dg, int bf16);
LKS_CUDA_OP(relu2_fwd, const float *u, size_t n, float *y, int bf16);
LKS_CUDA_OP(relu2_bwd, const float *u, const float *dy, size_t n, float *du, int bf16);
/* attn.cu */
LKS_CUDA_OP(attn_fwd, const float *qkv, const float *rope, const lks_attn_shape *a,
            float *qkvr, float *o, float *stat, int bf16);
LKS_CUDA_OP(attn_bwd, const float *qkvr, const float *stat, const float *dout,
            const float *rope, const lks_attn_shape *a, float *dqkv, int bf16);
LKS_CUDA_OP(cross_entropy, const float *z, const int32_t *target, int T, int V,
            float grad_scale, float *dz, double *loss);
LKS_CUDA_OP(embed_gather, const float *table, const int32_t *tok, int T, int H, float *y);
LKS_CUDA_OP(embed_scatter_add, const float *dy, const int32_t *tok, int T, int H,
            float *table_grad);
LKS_CUDA_OP(add, const float *a, const float *b, size_t n, float *y, int bf16);
LKS_CUDA_OP(adamw, float *p, const float *g, float *m, float *v, size_t n, float lr, float b1,
            float b2, float eps, float wd, float bc1, float bc2);
LKS_CUDA_OP(clip, float *g, size_t n, float coef);
LKS_CUDA_OP(nonfinite, const float *x, size_t n, int64_t *out);
/* 1 (the default): statistics, the sum of squares and the optimizer step made on the
   device (devstats.cu, update.cu); 0 with LKS_CUDA_DEVICE_PATHS=0: on the host from a
   download, with the CPU's code (backend_cuda.cu). The same bits either way. */
int lks_cuda_device_paths(void);
/* the CPU's sum of squares of x (device), downloaded */
int lks_cuda_sumsq_host(void *ctx, const float *x, size_t n, double *out);
/* update.cu: the sum of squares in the CPU's order on the device; the optimizer step */
LKS_CUDA_OP(sumsq, const float *x, size_t n, double *out);
LKS_CUDA_OP(update, float *p, float *g, float *m, float *v, size_t n, const lks_update *u,
            double *ss);
/* what update.cu keeps in a context (made at its first use): ctx's pointer to it; freed
   at close */
struct lks_cuda_upd **lks_cuda_ctx_upd(void *ctx);
void lks_cuda_upd_free(struct lks_cuda_upd *u);
/* queues on st: *ss (device) = the sum of squares of x (n floats, device) in the CPU's order */
void lks_cuda_sumsq_launch(cudaStream_t st, const float *x, size_t n, double *ss);
/* devstats.cu: stats_f32 made on the device, the CPU's bits; one download. In parts: the
   device scratch of n floats' statistics (their record first, LKS_CUDA_DEVSTAT_REC bytes);
   the kernels queued on st; the record (a host copy) to the statistics. */
#define LKS_CUDA_DEVSTAT_REC 64
LKS_CUDA_OP(stats_f32, const float *x, size_t n, lks_tensor_stats *s);
size_t lks_cuda_devstat_scratch(size_t n);
int lks_cuda_devstat_queue(cudaStream_t st, const float *x, size_t n, void *scratch);
void lks_cuda_devstat_fill(const void *rec, lks_tensor_stats *s);
/* the same of a quantized tensor's codes (q->q, contiguous: lks_cuda_devstat_quant_ok) and
   scales, wherever they are (codes, scales); the counts are q's, from its quantize */
int lks_cuda_devstat_quant_ok(const lks_quant *q);
size_t lks_cuda_devstat_scratch_q(const lks_quant *q);
int lks_cuda_devstat_queue_q(cudaStream_t st, const uint8_t *codes, const float *scales,
                             const lks_quant *q, void *scratch);
void lks_cuda_devstat_fill_q(const void *rec, const lks_quant *q, lks_tensor_stats *s);
int lks_cuda_stats_quant_dev(void *ctx, const lks_quant *q, lks_tensor_stats *s);

#endif
