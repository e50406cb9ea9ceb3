/*
 * rng.h: Philox values generated on the GPU, for the CUDA backend's data and weights.
 * The same kernels/philox.h runs on both sides, so out[i] equals the CPU's value of
 * (seed, stream, offset + i) bit for bit; tests/kernels/test_cuda.c checks it on a device.
 */
#ifndef LKS_KERNELS_CUDA_RNG_H
#define LKS_KERNELS_CUDA_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef enum lks_rng_dist { LKS_RNG_UNIFORM = 0, LKS_RNG_NORMAL = 1 } lks_rng_dist;

/* out (n floats, host memory) <- values of indices offset .. offset+n-1 computed on the
   current device. Fails (lks_err) without a usable device. */
int lks_cuda_philox_fill(uint64_t seed, uint32_t stream, uint64_t offset, size_t n,
                         lks_rng_dist dist, float *out);

#endif
