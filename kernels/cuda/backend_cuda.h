/*
 * backend_cuda.h: the CUDA backend behind kernels/backend.h, in reference mode: every
 * element-wise and row-wise op runs the CPU's lines (kernels/element/) in the CPU's order on
 * the GPU, so its bits are the CPU backend's. Plain C: the harness and the registry include
 * it without any CUDA header.
 *
 * open takes device 0, or the device LKS_CUDA_DEVICE names, and a stream of its own (threads
 * is ignored); open_rank the device lks_cuda_rank_device gives the process's rank; without a usable device it fails, naming why. Its memory is device memory;
 * upload and download go through the stream and wait for it. Methods that return a value on
 * the host (the loss, sums of squares, statistics, counts) wait for the stream; the others
 * only queue their kernels. The reductions of the statistics (sumsq, stats_f32,
 * stats_quant) download the tensor and run the CPU's code on the host: exact, the first
 * version. gemm and quantize are not in this table yet (kernels/cuda/quant_gemm.cu).
 */
#ifndef LKS_KERNELS_CUDA_BACKEND_CUDA_H
#define LKS_KERNELS_CUDA_BACKEND_CUDA_H

#ifdef __cplusplus
extern "C" {
#endif

#include "kernels/backend.h"

/* what open gives as ctx: the device and its stream (backend_cuda.cu) */
typedef struct lks_cuda_ctx lks_cuda_ctx;

extern const lks_backend lks_backend_cuda;

/* The ctx's device and its stream (a cudaStream_t, as void *), for the kernels of other
   files (the GEMM, quantization) to queue on. */
int lks_cuda_ctx_device(const lks_cuda_ctx *ctx);
void *lks_cuda_ctx_stream(const lks_cuda_ctx *ctx);

/* The device of a process's rank of index local (open_rank): base (LKS_CUDA_DEVICE, or 0)
   + local, modulo the count devices, so ranks 0..count-1 get count distinct devices and
   further ranks share them in turn. */
static inline int lks_cuda_rank_device(int base, int local, int count)
{
	return (int)(((long long)base + local) % count);
}

#ifdef __cplusplus
}
#endif

#endif
