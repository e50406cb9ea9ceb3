/*
 * gemm_kernel.h: the interface between the GEMM driver (gemm.c) and its per-ISA kernels
 * (gemm_scalar.c, gemm_avx2.c, gemm_avx512.c); private to kernels/cpu.
 *
 * The driver blocks the problem BLIS-style and calls, through a table of methods:
 *   pack      widen an operand block exactly to float32 into a packed panel;
 *   micro     one MR x NR tile of C over one K block, an outer product per k;
 *   epilogue  scales and the output rounding over a finished block of C.
 *
 * Packed panels. A panel of `rows` operand rows and kc columns starting at k0 is stored as
 * slivers of `step` rows (step = MR for A, NR for B); sliver s holds element (r, k) at
 *   panel[s*kc*step + k*step + r]
 * and the rows past `rows` in the last sliver are +0.0f. A microkernel reads one A sliver
 * (kc, MR) and one B sliver (kc, NR): for each k, MR broadcasts times an NR-wide vector.
 *
 * Why every path gives the same bits: for a tile element (i, j) the microkernel does
 *   acc = first ? +0.0f : c[i][j];  for k < kc: acc = fma(a[k][i], b[k][j], acc);
 * one accumulator, one fused multiply-add per k, k ascending, whatever the vector width;
 * the driver runs the K blocks in ascending order and stores acc as float32 between
 * them, which is exactly the chain of gemm.h. Padded rows only feed padded tile elements,
 * which are never written back.
 */
#ifndef LKS_KERNELS_CPU_GEMM_KERNEL_H
#define LKS_KERNELS_CPU_GEMM_KERNEL_H

#include <stddef.h>

#include "kernels/cpu/gemm.h"

/* The largest MR * NR of any kernel: the driver's scratch tile for edge tiles. */
#define LKS_GEMM_TILE_MAX 256

typedef struct lks_gemm_kernel {
	const char *name;
	int mr, nr;     /* register tile */
	int mc, kc;     /* cache blocks: an (mc, kc) A panel stays in L2, a (kc, nr) B sliver in L1 */

	/* panel (see above) <- rows [r0, r0+rows) and columns [k0, k0+kc) of an operand
	   whose element (r, k) is at data[r*ld + k], widened exactly to float32. */
	void (*pack)(lks_dtype elem, const void *data, size_t ld, int r0, int rows,
	             int k0, int kc, int step, float *panel);

	/* c (mr, nr), element (i, j) at c[i*ldc + j]: the chain of kc steps over one A sliver
	   a (kc, mr) and one B sliver b (kc, nr), starting from +0.0f when first, else from c. */
	void (*micro)(int kc, const float *a, const float *b, float *c, size_t ldc, int first);

	/* out (rows, cols) <- acc (rows, cols) with, when scaled, each element multiplied by
	   s = inva[i] * invb[j] (inva (rows): 1/scale_a of the rows, invb (cols): 1/scale_b of
	   the columns); out is float (bf16 = 0) or uint16_t BF16 rounded to nearest even (bf16
	   = 1), element (i, j) at out[i*ldout + j]. out may be acc itself (float, same ld). */
	void (*epilogue)(int rows, int cols, const float *acc, size_t ldacc, int scaled,
	                 const float *inva, const float *invb, int bf16, void *out,
	                 size_t ldout);
} lks_gemm_kernel;

extern const lks_gemm_kernel lks_gemm_kernel_scalar;
extern const lks_gemm_kernel lks_gemm_kernel_avx2;
extern const lks_gemm_kernel lks_gemm_kernel_avx512;

/* The portable packer and epilogue (gemm_scalar.c), which any path may use. */
void lks_gemm_pack_generic(lks_dtype elem, const void *data, size_t ld, int r0,
                           int rows, int k0, int kc, int step, float *panel);
void lks_gemm_epilogue_generic(int rows, int cols, const float *acc, size_t ldacc,
                               int scaled, const float *inva, const float *invb, int bf16,
                               void *out, size_t ldout);
/* The AVX2 packer (gemm_avx2.c), which the AVX2 and AVX-512 paths share; any step. */
void lks_gemm_pack_avx2(lks_dtype elem, const void *data, size_t ld, int r0, int rows,
                        int k0, int kc, int step, float *panel);

#endif
