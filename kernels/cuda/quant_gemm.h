/*
 * quant_gemm.h: FP8 quantization and the reference GEMM on the GPU, in plain C types, so
 * that the CUDA backend's method table (and a test) call them without a CUDA header.
 *
 * Both follow the CPU's contracts bit for bit: kernels/cpu/quant.h (amax with NaN
 * propagation, the scale of kernels/element/cast.h, the satfinite cast and its counts) and
 * kernels/cpu/gemm.h (one fp32 FMA chain per output element, k ascending, then the
 * epilogue). Every pointer inside a descriptor is device memory; stream is a cudaStream_t
 * (NULL: the default stream). Fails (lks_err, naming the op and the CUDA error) without a
 * usable device or on a bad descriptor.
 */
#ifndef LKS_KERNELS_CUDA_QUANT_GEMM_H
#define LKS_KERNELS_CUDA_QUANT_GEMM_H

#include "kernels/backend_types.h"

/* lks_quantize on the device: amax (when wanted), scales (unless q->scale_given) and the
   codes stay in device memory; q->underflow and q->saturated come back as the CPU's do,
   so the call waits for the stream (unless q->no_counts: then it does not wait). Its
   scratch is allocated on the stream and freed after. */
int lks_cuda_quantize(void *stream, lks_quant *q);
/* The same with the caller's device scratch of LKS_CUDA_QUANT_SCRATCH bytes, which work
   queued on stream later may reuse (a context's scratch: no allocation per call). */
#define LKS_CUDA_QUANT_SCRATCH (1024 * (2 * 8 + 4))
int lks_cuda_quantize_in(void *stream, lks_quant *q, void *scratch);

/* lks_gemm_run on the device, one thread per element of C; queued on stream, not waited. */
int lks_cuda_gemm_ref(void *stream, const lks_gemm *g);

#endif
