/*
 * gemm_lt.h: the production GEMM of the CUDA backend (gemm = cublaslt), C(M,N) =
 * A(M,K) . B(N,K)^T through cuBLASLt, as frameworks run it: FP8 E4M3/E5M2 with tensor
 * scales (scale pointers) or rowwise ones (OUTER_VEC_32F), BF16, fast accumulation in
 * forward only. The mapping of the descriptor is lt_map.h's plan, tested on the CPU; this
 * file's code runs it. No CUDA header is needed to include it: the stream is CUDA's own
 * struct CUstream_st * (what cudaStream_t names).
 *
 * Not bit for bit with the CPU: cuBLASLt's order of accumulation is its own (and with fast
 * accumulation FP8 products are not promoted to fp32 at every step). It is the same on a
 * rerun with the same algorithm on the same GPU and library: the algorithm is chosen once
 * per shape, without split-K reduction schemes (REDUCTION_SCHEME_MASK = NONE), and recorded
 * (lks_lt_algo, lt_map.h). It is the heuristic's first; LKS_GEMM_LIBRARY_TIMED (bench gemm
 * only) times up to 8 of its candidates on the GEMM's own operands and keeps the fastest.
 */
#ifndef LKS_KERNELS_CUDA_GEMM_LT_H
#define LKS_KERNELS_CUDA_GEMM_LT_H

#include <stddef.h>

#include "kernels/backend_types.h"
#include "kernels/cuda/lt_map.h"

struct CUstream_st;

/* A cuBLASLt handle, its workspace, a scratch buffer for 1/scale, and the algorithms
   chosen so far (one per plan key). One per device and stream: not for concurrent use. */
typedef struct lks_lt_ctx lks_lt_ctx;

/* The workspace cuBLASLt may use, as NVIDIA recommends for Hopper and Blackwell. */
#define LKS_LT_WORKSPACE ((size_t)32 << 20)

/* *out <- a context on the current device with workspace bytes of workspace (0: the
   default above). Fails (lks_err) without a usable device or cuBLASLt. */
int lks_lt_ctx_create(size_t workspace, lks_lt_ctx **out);
void lks_lt_ctx_destroy(lks_lt_ctx *ctx);

/* C = A . B^T of g (device memory, the scales too) through cuBLASLt on stream s; used <-
   the algorithm it ran (id, tile, stages, split-K, fast accumulation). Returns 0 when it
   ran; LKS_LT_REFUSED when cuBLASLt cannot run g (used->fallback = 1 and used->reason say
   why: the caller runs its reference kernel and records it); -1 (lks_err naming the
   cuBLASLt status) on failure. */
int lks_cuda_gemm_lt(lks_lt_ctx *ctx, struct CUstream_st *s, const lks_gemm *g,
                     lks_lt_algo *used);

#endif
