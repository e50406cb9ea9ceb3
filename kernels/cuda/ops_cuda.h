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

#endif
