/*
 * hd.h: one qualifier for the code that runs on both sides.
 *
 * A function that the CPU kernels and the CUDA kernels share is written once, as
 * `static inline LKS_HD`, in a header that compiles as C11 and as CUDA C: under nvcc
 * LKS_HD makes it __host__ __device__, elsewhere it is nothing. The numerics of both sides
 * then follow from the same lines, given the flags that keep every operation as written:
 * -ffp-contract=off for C, -fmad=false (and IEEE division and square root, nvcc's default)
 * for CUDA.
 */
#ifndef LKS_KERNELS_HD_H
#define LKS_KERNELS_HD_H

#if defined(__CUDACC__)
#define LKS_HD __host__ __device__
#else
#define LKS_HD
#endif

#endif
