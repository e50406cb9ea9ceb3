/*
 * cuda_check.h: the one check of a CUDA runtime call, private to kernels/cuda (CUDA C++
 * only). LKS_CUDA(call, what) is 0 when call returns cudaSuccess, else -1 with lks_err
 * "cuda: WHAT: WHY (file.cu:line)". A kernel launch is checked by
 * LKS_CUDA(cudaGetLastError(), "the kernel's name") on the line after it.
 */
#ifndef LKS_KERNELS_CUDA_CUDA_CHECK_H
#define LKS_KERNELS_CUDA_CUDA_CHECK_H

#include <cuda_runtime.h>
#include <string.h>

#include "kernels/err.h"

/* file: __FILE__, shown without its folders */
static inline int lks_cuda_check_at(cudaError_t rc, const char *what, const char *file, int line)
{
	const char *base = strrchr(file, '/');

	if (rc == cudaSuccess)
		return 0;
	return lks_err("cuda: %s: %s (%s:%d)", what, cudaGetErrorString(rc), base ? base + 1 : file,
	               line);
}

#define LKS_CUDA(call, what) lks_cuda_check_at((call), (what), __FILE__, __LINE__)

#endif
