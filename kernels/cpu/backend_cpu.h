/*
 * backend_cpu.h: the CPU backend (kernels/backend.h), the bit-exact reference. Only the
 * registry (kernels/backend.c), the benchmarks and the tests name it; the harness gets it
 * from the registry (lks_backend_find, lks_backend_default).
 */
#ifndef LKS_KERNELS_CPU_BACKEND_CPU_H
#define LKS_KERNELS_CPU_BACKEND_CPU_H

#include "kernels/backend.h"

/* Its ctx is an lks_pool * (NULL: the calling thread only). */
extern const lks_backend lks_backend_cpu;

#endif
