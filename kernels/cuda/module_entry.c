/*
 * module_entry.c: what lockstep-cuda.so offers its loader (module.h): the cuda backend's
 * table and the CUDA versions the fingerprint records. Built into the module only.
 */
#include "kernels/cuda/module.h"

#include "kernels/cuda/backend_cuda.h"

const lks_cuda_module lks_cuda_module_entry = {
	.version = LKS_CUDA_MODULE_VERSION,
	.backend = &lks_backend_cuda,
	.info_get = lks_cuda_info_get,
};
