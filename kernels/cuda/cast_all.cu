/* cast_all.cu: the element casts over ranges of float32 patterns on the GPU (cast_all.h). */
extern "C" {
#include "kernels/cuda/cast_all.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/err.h"
}

#include <cuda_runtime.h>

#include "kernels/element/cast.h"

__global__ static void lks_casts_kernel(uint32_t first, size_t n, uint8_t *e4, uint8_t *e4s,
                                        uint8_t *e5, uint8_t *e5s, uint16_t *bf)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	float x = lks_bits_f32(first + (uint32_t)i);

	e4[i] = lks_f32_to_fp8(x, LKS_FP8_E4M3, 0);
	e4s[i] = lks_f32_to_fp8(x, LKS_FP8_E4M3, 1);
	e5[i] = lks_f32_to_fp8(x, LKS_FP8_E5M2, 0);
	e5s[i] = lks_f32_to_fp8(x, LKS_FP8_E5M2, 1);
	bf[i] = lks_f32_to_bf16(x);
}

__global__ static void lks_decodes_kernel(float *e4, float *e5, float *bf)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < 256) {
		e4[i] = lks_fp8_decode((uint8_t)i, LKS_FP8_E4M3);
		e5[i] = lks_fp8_decode((uint8_t)i, LKS_FP8_E5M2);
	}
	if (i < 65536)
		bf[i] = lks_bf16_to_f32((uint16_t)i);
}

extern "C" int lks_cuda_casts(uint32_t first, size_t n, uint8_t *fp8[4], uint16_t *bf16)
{
	uint8_t *d8 = NULL;
	uint16_t *d16 = NULL;
	int ret = -1;

	if (n == 0)
		return 0;
	if (LKS_CUDA(cudaMalloc(&d8, 4 * n), "cannot allocate the casts' outputs")
	    || LKS_CUDA(cudaMalloc(&d16, n * sizeof(uint16_t)), "cannot allocate the casts' outputs"))
		goto out;
	lks_casts_kernel<<<(unsigned)((n + 255) / 256), 256>>>(first, n, d8, d8 + n, d8 + 2 * n,
	                                                        d8 + 3 * n, d16);
	if (LKS_CUDA(cudaGetLastError(), "the casts' kernel"))
		goto out;
	for (int k = 0; k < 4; k++)
		if (LKS_CUDA(cudaMemcpy(fp8[k], d8 + (size_t)k * n, n, cudaMemcpyDeviceToHost),
		             "download of the casts"))
			goto out;
	if (LKS_CUDA(cudaMemcpy(bf16, d16, n * sizeof(uint16_t), cudaMemcpyDeviceToHost),
	             "download of the casts"))
		goto out;
	ret = 0;
out:
	cudaFree(d8);
	cudaFree(d16);
	return ret;
}

extern "C" int lks_cuda_decodes(float *fp8[2], float *bf16)
{
	float *d = NULL;
	int ret = -1;

	if (LKS_CUDA(cudaMalloc(&d, (512 + 65536) * sizeof(float)), "cannot allocate the decodes"))
		goto out;
	lks_decodes_kernel<<<256, 256>>>(d, d + 256, d + 512);
	if (LKS_CUDA(cudaGetLastError(), "the decodes")
	    || LKS_CUDA(cudaMemcpy(fp8[0], d, 256 * sizeof(float), cudaMemcpyDeviceToHost),
	                "the decodes")
	    || LKS_CUDA(cudaMemcpy(fp8[1], d + 256, 256 * sizeof(float), cudaMemcpyDeviceToHost),
	                "the decodes")
	    || LKS_CUDA(cudaMemcpy(bf16, d + 512, 65536 * sizeof(float), cudaMemcpyDeviceToHost),
	                "the decodes")) {
		goto out;
	}
	ret = 0;
out:
	cudaFree(d);
	return ret;
}
