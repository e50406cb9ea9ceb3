/* backend_cpu.c: the CPU reference backend behind kernels/backend.h. */
#include "kernels/backend.h"

static int lks_cpu_gemm(void *ctx, const lks_gemm *g)
{
	return lks_gemm_run(ctx, g);
}

static int lks_cpu_quantize(void *ctx, lks_quant *q)
{
	return lks_quantize(ctx, q);
}

const lks_backend lks_backend_cpu = { "cpu", lks_cpu_gemm, lks_cpu_quantize };
