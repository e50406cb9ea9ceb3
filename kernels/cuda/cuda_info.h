/*
 * cuda_info.h: what the CUDA backend can say about the machine, in plain C types, so the
 * harness never includes a CUDA header. Compiled only when the CUDA Toolkit is found
 * (LKS_HAVE_CUDA); on a machine without a GPU it reports the versions it can and why no
 * device is usable.
 */
#ifndef LKS_KERNELS_CUDA_CUDA_INFO_H
#define LKS_KERNELS_CUDA_CUDA_INFO_H

#include <stddef.h>

typedef struct lks_cuda_info {
	int runtime_version;     /* cudaRuntimeGetVersion, e.g. 13000 */
	int driver_version;      /* cudaDriverGetVersion; 0 without a driver */
	size_t cublaslt_version; /* cublasLtGetVersion */
	int nccl_version;        /* ncclGetVersion, e.g. 22809; 0: built without NCCL */
	int device_count;        /* 0 when none is usable */
	char device_error[160];  /* why device_count is 0, else empty */
	char device0[256];       /* name, SM count, compute capability of device 0 */
} lks_cuda_info;

void lks_cuda_info_get(lks_cuda_info *info);

#endif
