/*
 * gemm.h: the deterministic CPU GEMM, C(M,N) = A(M,K) . B(N,K)^T.
 *
 * Both operands are row-major with K contiguous (the "NT" layout of a linear layer:
 * y = x W^T with x (M,K) and W (N,K)). Operands are float32, BF16 or FP8; every operand
 * element is first widened exactly to float32.
 *
 * The order of accumulation, the same on every ISA path and for every thread count:
 *   acc = 0.0f;  for k = 0, 1, ..., K-1:  acc = fmaf(a[i][k], b[j][k], acc);
 * one fp32 accumulator per output element, one fused multiply-add per k, k ascending.
 * Blocking over K only stores and reloads acc as float32 between blocks, which does not
 * change the chain. Threads split the output into disjoint blocks.
 *
 * Then the epilogue, per element:
 *   s   = (1.0f / scale_a[i]) * (1.0f / scale_b[j])   (each factor 1.0f when unscaled)
 *   c   = acc * s                                      (skipped when both are unscaled)
 *   out = c, or lks_f32_to_bf16(c) for BF16 output.
 * scale_* are quantization scales (q = satfinite(x * scale)), so 1/scale dequantizes;
 * a tensorwise scale is one value, an axiswise one has a value per row of the operand
 * (per row of A over K, per row of B over K = per column of C).
 */
#ifndef LKS_KERNELS_CPU_GEMM_H
#define LKS_KERNELS_CPU_GEMM_H

#include <stddef.h>

#include "kernels/backend_types.h"
#include "kernels/cpu/isa.h"
#include "kernels/pool.h"

/* lks_dtype, lks_scaling, lks_operand, lks_gemm: kernels/backend_types.h */

/* 0 when g is a well-formed descriptor, else -1 (lks_err says what is wrong: negative
   sizes, an unknown dtype or scaling, ld < K, a missing pointer); the CPU's GEMM, the
   CUDA reference GEMM and the cuBLASLt mapping (kernels/cuda/lt_map.c) check with it. */
int lks_gemm_check(const lks_gemm *g);

/* C = A . B^T on the active ISA path (isa.h), tasks spread over pool (NULL: caller only). */
int lks_gemm_run(lks_pool *pool, const lks_gemm *g);
/* The same on a given path; fails (lks_err) if the CPU cannot run it. */
int lks_gemm_run_isa(lks_pool *pool, const lks_gemm *g, lks_isa isa);

#endif
