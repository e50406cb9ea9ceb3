/* rng.cu: Philox values on the GPU (see rng.h). */
extern "C" {
#include "kernels/cuda/rng.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/err.h"
}

#include <cuda_runtime.h>

#include "kernels/philox.h"

__global__ static void lks_philox_fill_kernel(uint64_t seed, uint32_t stream, uint64_t offset,
                                              size_t n, int normal, float *out)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = normal ? lks_philox_normal(seed, stream, offset + i)
		                : lks_philox_uniform(seed, stream, offset + i);
}

extern "C" int lks_cuda_philox_fill(uint64_t seed, uint32_t stream, uint64_t offset, size_t n,
                                    lks_rng_dist dist, float *out)
{
	float *d = NULL;
	int ret;

	if (n == 0)
		return 0;
	if (LKS_CUDA(cudaMalloc(&d, n * sizeof(float)), "philox fill: cannot allocate"))
		return -1;
	lks_philox_fill_kernel<<<(unsigned)((n + 255) / 256), 256>>>(seed, stream, offset, n,
	                                                             dist == LKS_RNG_NORMAL, d);
	ret = LKS_CUDA(cudaGetLastError(), "philox fill")
	      || LKS_CUDA(cudaMemcpy(out, d, n * sizeof(float), cudaMemcpyDeviceToHost), "philox fill")
	      ? -1 : 0;
	cudaFree(d);
	return ret;
}
