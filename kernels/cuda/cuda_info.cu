/* cuda_info.cu: versions and device 0 of the CUDA backend (see cuda_info.h). */
extern "C" {
#include "kernels/cuda/cuda_info.h"
#ifdef LKS_HAVE_NCCL
#include "kernels/cuda/comm_nccl.h"
#endif
}

#include <cstdio>
#include <cstring>

#include <cublasLt.h>
#include <cuda_runtime.h>

extern "C" void lks_cuda_info_get(lks_cuda_info *info)
{
	cudaDeviceProp prop;
	cudaError_t rc;

	std::memset(info, 0, sizeof(*info));
	cudaRuntimeGetVersion(&info->runtime_version);
	cudaDriverGetVersion(&info->driver_version);
	info->cublaslt_version = cublasLtGetVersion();
#ifdef LKS_HAVE_NCCL
	info->nccl_version = lks_nccl_version();
#endif
	rc = cudaGetDeviceCount(&info->device_count);
	if (rc != cudaSuccess) {
		info->device_count = 0;
		std::snprintf(info->device_error, sizeof(info->device_error), "%s",
		              cudaGetErrorString(rc));
		return;
	}
	if (info->device_count > 0 && cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
		std::snprintf(info->device0, sizeof(info->device0), "%.200s, %d SMs, sm_%d%d, ECC %s",
		              prop.name, prop.multiProcessorCount, prop.major, prop.minor,
		              prop.ECCEnabled ? "on" : "off");
}
