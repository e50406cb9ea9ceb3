/*
 * trace_dev.h: lockstep-trace's device tensors measured on their GPU (trace_dev.cu), in
 * the module (module.h's trace_* members). Plain C.
 */
#ifndef LKS_KERNELS_CUDA_TRACE_DEV_H
#define LKS_KERNELS_CUDA_TRACE_DEV_H

#include <stddef.h>

#include "kernels/backend_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Queues the measuring of n float32 values (n > 0) at device pointer x, after the work
   queued on stream (a cudaStream_t; NULL: the legacy default stream), which then waits for
   it; *ctx (NULL at first) is the trace's context, made on x's GPU. *slot: the record's
   place in the next collect. 0, or -1 with why. */
int lks_cuda_trace_measure(void **ctx, const void *x, size_t n, void *stream, size_t *slot,
                           char *why, size_t wsize);
/* Waits for every tensor queued since the last collect (n of them) and fills out[0..n) as
   the cuda backend's stats_f32 would. 0, or -1 with why. */
int lks_cuda_trace_collect(void *ctx, lks_tensor_stats *out, size_t n, char *why,
                           size_t wsize);
void lks_cuda_trace_close(void *ctx);

#ifdef __cplusplus
}
#endif

#endif
