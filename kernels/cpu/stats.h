/*
 * stats.h: what the tracer measures of a float32 tensor, on the active ISA path.
 *
 * The sum of squares is taken in double in one fixed order that vectorizes: 32 lanes,
 * element i added to lane i mod 32 in index order, then the lanes summed pairwise as a
 * balanced binary tree ((0+1)+(2+3))+... . The AVX2 path keeps the 32 lanes in eight
 * registers, so every path gives the same bits, and 32 independent chains keep the adder
 * busy where one chain would wait on its latency. amax and the non-finite count work on
 * the bits and are exact in any order.
 */
#ifndef LKS_KERNELS_CPU_STATS_H
#define LKS_KERNELS_CPU_STATS_H

#include <stddef.h>
#include <stdint.h>

#define LKS_SUMSQ_LANES 32

double lks_sumsq(const float *x, size_t n);

/* The values of x that are NaN or Inf (every exponent bit set). */
int64_t lks_nonfinite(const float *x, size_t n);

/*
 * The hash sees every float32 NaN as this one pattern (the quiet NaN that C's NAN and
 * PyTorch's float('nan') give). A NaN's sign and payload are not numerics, and machines make
 * them differently: x86 passes an operand's payload on and makes 0xffc00000 for an invalid
 * operation, NVIDIA GPUs make 0x7fffffff. So a tensor hashes the same wherever it was
 * computed, and two hashes differ only where values do (NaN and inf stay apart). The FP8
 * and BF16 casts give one NaN already (kernels/element/cast.h).
 */
#define LKS_HASH_NAN 0x7fc00000u

/*
 * All of it in one pass over memory, block by block while each block is in L1: L2 norm
 * (the square root of lks_sumsq), amax (NaN if any element is NaN), non-finite count, and
 * XXH3-64 of the float32 bytes with NaN as LKS_HASH_NAN (the same hash on every path: XXH3
 * is defined by its output, the AVX2 path only computes it with wider instructions).
 */
void lks_stats_f32(const float *x, size_t n, double *l2, float *amax, int64_t *nonfinite,
                   uint64_t *hash);

/*
 * Statistics of FP8 codes as the values they decode to: amax, non-finite count and the L2
 * norm with an exact sum of squares. The square of every finite E4M3 value is an integer
 * multiple of 2^-18 below 2^36 of them, of every E5M2 value one of 2^-32 below 2^64, so the
 * squares are summed as 128-bit integers in those units and rounded to double once, at the
 * end: the result is the correctly rounded sum, whatever the order, ISA path or split of
 * the codes into calls. With a non-finite code the L2 norm is NaN (a NaN code) or inf.
 */
typedef struct lks_fp8_stats {
	unsigned __int128 sq;  /* squares of the finite values, in units of 2^-18 or 2^-32 */
	uint32_t maxmag;       /* the largest code & 0x7f: magnitudes order as their codes */
	int64_t nonfinite;
} lks_fp8_stats;

/* Adds n contiguous codes of format fmt (0 = E4M3, 1 = E5M2, as lks_fp8) to s, which
   starts zeroed. */
void lks_fp8_stats_add(lks_fp8_stats *s, const uint8_t *q, size_t n, int fmt);
void lks_fp8_stats_result(const lks_fp8_stats *s, int fmt, double *l2, float *amax,
                          int64_t *nonfinite);

/* XXH3-64 of the bytes of rows (rows, cols) with leading dimension ld, row after row,
   followed by the float32 bytes of scales[0..nscales), NaN as LKS_HASH_NAN: a quantized
   tensor's codes and scales. */
uint64_t lks_hash_rows(const uint8_t *rows, int nrows, int cols, size_t ld, const float *scales,
                       size_t nscales);

#endif
