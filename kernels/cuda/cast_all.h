/*
 * cast_all.h: the element casts (kernels/element/cast.h) run on the GPU over a range of
 * float32 bit patterns, so a test can hold them against the CPU's over all 2^32 inputs
 * (issue 14: every format and saturation mode).
 */
#ifndef LKS_KERNELS_CUDA_CAST_ALL_H
#define LKS_KERNELS_CUDA_CAST_ALL_H

#include <stddef.h>
#include <stdint.h>

/* What the device made of the float32 patterns first, first + 1, ..., first + n - 1 (host
   buffers of n entries each): E4M3 and E5M2 with and without saturation, in the order
   [e4m3 non-saturating, e4m3 saturating, e5m2 non-saturating, e5m2 saturating], and BF16.
   -1 (lks_err) without a usable device. */
int lks_cuda_casts(uint32_t first, size_t n, uint8_t *fp8[4], uint16_t *bf16);

/* The device's decode of every code: 256 values per FP8 format (E4M3, then E5M2) and
   65,536 BF16 values, as float32 (host buffers). */
int lks_cuda_decodes(float *fp8[2], float *bf16);

#endif
