/*
 * stats.h: what the tracer measures of a float32 tensor, on the active ISA path.
 *
 * Sum of squares in double in one fixed order that vectorizes: eight lanes, element i
 * into lane i mod 8 in index order, then the lanes as ((0+1)+(2+3))+((4+5)+(6+7)); the
 * AVX2 path keeps lanes 0-3 and 4-7 in two registers, so every path gives the same bits
 * (a single sequential chain would be latency-bound). amax and the non-finite count work
 * on the bits and are exact whatever the order.
 */
#ifndef LKS_KERNELS_CPU_STATS_H
#define LKS_KERNELS_CPU_STATS_H

#include <stddef.h>
#include <stdint.h>

double lks_sumsq(const float *x, size_t n);

/* The same in pieces: lane (8 doubles, zero at the start) accumulates x (n a multiple of 8,
   except for the last piece); lks_sumsq_lanes_total() then gives what lks_sumsq() gives
   for the whole. For one pass over memory with other per-block work. */
void lks_sumsq_lanes(const float *x, size_t n, double lane[8]);
double lks_sumsq_lanes_total(const double lane[8]);

/*
 * All of it in one pass over memory, block by block while each block is in L1: L2 norm
 * (sqrt of lks_sumsq), amax (NaN if any NaN), non-finite count, and XXH3-64 of the float32
 * bytes (the same hash on every path: XXH3 is defined by its output, and the AVX2 path
 * only computes it with wider instructions).
 */
void lks_stats_f32(const float *x, size_t n, double *l2, float *amax, int64_t *nonfinite,
                   uint64_t *hash);

/* XXH3-64 of the bytes of rows (rows, cols) with leading dimension ld, row after row,
   followed by the bytes of tail (ntail bytes): a quantized tensor's codes and scales. */
uint64_t lks_hash_rows(const uint8_t *rows, int nrows, int cols, size_t ld, const void *tail,
                       size_t ntail);

/* max |x| (NaN if any element is NaN) and the number of non-finite elements. */
void lks_amax_nonfinite(const float *x, size_t n, float *amax, int64_t *nonfinite);

#endif
