/*
 * backend.h: what the model asks of a backend. The harness reaches kernels only through
 * this struct of methods, so a CUDA backend (or a test's recording wrapper) plugs in
 * without the model knowing; the harness never includes CUDA headers.
 */
#ifndef LKS_KERNELS_BACKEND_H
#define LKS_KERNELS_BACKEND_H

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/quant.h"

typedef struct lks_backend {
	const char *name;                                    /* "cpu", "cuda" */
	int (*gemm)(void *ctx, const lks_gemm *g);           /* C = A.B^T, fp32 accumulate */
	int (*quantize)(void *ctx, lks_quant *q);            /* amax -> scale -> satfinite cast */
} lks_backend;

/* The CPU backend; its ctx is an lks_pool * (NULL: the calling thread only). */
extern const lks_backend lks_backend_cpu;

#endif
