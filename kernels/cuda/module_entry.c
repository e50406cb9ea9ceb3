/*
 * module_entry.c: what lockstep-cuda.so offers its loader (module.h): the cuda backend's
 * table, the CUDA versions the fingerprint records, and lockstep-trace's device measuring.
 * Built into the module only.
 */
#include "kernels/cuda/module.h"

#include "kernels/cuda/backend_cuda.h"
#include "kernels/cuda/trace_dev.h"

const lks_cuda_module lks_cuda_module_entry = {
	.version = LKS_CUDA_MODULE_VERSION,
	.backend = &lks_backend_cuda,
	.info_get = lks_cuda_info_get,
	.trace_measure = lks_cuda_trace_measure,
	.trace_collect = lks_cuda_trace_collect,
	.trace_close = lks_cuda_trace_close,
};
