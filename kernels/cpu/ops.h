/*
 * ops.h: the model's element-wise and row-wise kernels on the CPU, in one fixed order.
 *
 * Each reduction (the sum of squares of an RMSNorm row, the softmax sum of a row, the
 * gradient of a gain over tokens) runs sequentially in index order, so results are the same
 * bits on every machine. Activations are float32 arrays holding BF16 values (rounded with
 * lks_f32_to_bf16) as a framework stores them; gradients of weights stay float32. The
 * arithmetic of one element or row is kernels/element/ops.h, shared with CUDA; these loop
 * over tensors and pick the ISA path.
 */
#ifndef LKS_KERNELS_CPU_OPS_H
#define LKS_KERNELS_CPU_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/element/attn.h"  /* the attention's arithmetic; lks_attn_shape */
#include "kernels/element/ops.h"  /* the per-element and per-row arithmetic; LKS_RMSNORM_EPS */

/* x[i] <- bf16(x[i]) for i < n. */
void lks_round_bf16(float *x, size_t n);

/* d (cols, rows) = s (rows, cols)^T, both contiguous: bytes (FP8 codes), floats, and floats
   rounded to BF16 on the way. Data movement only (the BF16 rounding as lks_f32_to_bf16),
   so any blocking gives the same bytes; SSE2 blocks where the CPU has SSE2. */
void lks_transpose_u8(const uint8_t *s, int rows, int cols, uint8_t *d);
void lks_transpose_f32(const float *s, int rows, int cols, float *d);
void lks_transpose_bf16(const float *s, int rows, int cols, uint16_t *d);


/* Below, bf16 = 1 rounds outputs to BF16 as stated; bf16 = 0 keeps them float32 (the exact
   reference model of the gradient tests). */

/* y (T, H) = bf16(x / rms(x) * g), rstd (T) = 1 / sqrt(mean(x^2) + eps) per row. */
void lks_rmsnorm_fwd(const float *x, const float *g, int T, int H, float *y, float *rstd,
                     int bf16);
/* dx (T, H) = d/dx of the above for dy (T, H), rounded to bf16; dg (H) += sum over rows
   (in row order) of dy * x * rstd. */
void lks_rmsnorm_bwd(const float *dy, const float *x, const float *g, const float *rstd,
                     int T, int H, float *dx, float *dg, int bf16);

/* Squared ReLU: y = bf16(max(u, 0)^2); its gradient du = bf16(2 max(u, 0) dy). */
void lks_relu2_fwd(const float *u, size_t n, float *y, int bf16);
void lks_relu2_bwd(const float *u, const float *dy, size_t n, float *du, int bf16);

/*
 * Multi-head attention with RoPE (attn.c), as kernels/element/attn.h states it: qkv (T, 3D)
 * in; qkvr (T, 3D) the queries and keys rotated, the values; o (T, D) the heads' outputs;
 * stat (B, nh, S, 2) each query's max score and sum. The backward takes dout (T, D) and
 * writes dqkv (T, 3D), the gradient of qkv; -1 where its scratch (2 S^2 floats a thread)
 * cannot be had. Each (sequence, head) is a task of pool (NULL: the caller alone): the
 * same bits whatever the pool.
 */
struct lks_pool;
void lks_attn_fwd(struct lks_pool *pool, const float *qkv, const float *rope,
                  const lks_attn_shape *a, float *qkvr, float *o, float *stat, int bf16);
int lks_attn_bwd(struct lks_pool *pool, const float *qkvr, const float *stat,
                 const float *dout, const float *rope, const lks_attn_shape *a, float *dqkv,
                 int bf16);

/*
 * Softmax cross-entropy over logits (T, V) with targets (T). Returns the sum over rows of
 * -log softmax(z)[target] (in double, row order), and writes dz (T, V) =
 * (softmax(z) - onehot(target)) * grad_scale (grad_scale = 1 / tokens of the global batch).
 */
double lks_cross_entropy(const float *z, const int32_t *target, int T, int V, float grad_scale,
                         float *dz);

/*
 * AdamW, decoupled weight decay, bias-corrected with bc1 = 1 - beta1^t, bc2 = 1 - beta2^t
 * given by the caller (kept as running products, no powf):
 *   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
 *   p = p - lr (wd p + (m / bc1) / (sqrt(v / bc2) + eps))      (wd = 0 for gains)
 */
void lks_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float b1,
               float b2, float eps, float wd, float bc1, float bc2);

#endif
