/*
 * element/fp8_sq.h: an FP8 code's part in the exact statistics of kernels/cpu/stats.h
 * (lks_fp8_stats): which magnitude codes are not finite, and a finite one's square as an
 * integer in the format's units. Shared by the CPU and CUDA (cuda/devstats.cu).
 */
#ifndef LKS_KERNELS_ELEMENT_FP8_SQ_H
#define LKS_KERNELS_ELEMENT_FP8_SQ_H

#include <stdint.h>

#include "kernels/hd.h"

/* The first non-finite magnitude code: E4M3's NaN, E5M2's inf (NaNs above it). */
static inline LKS_HD uint32_t lks_fp8_first_nonfinite(int fmt)
{
	return fmt ? 0x7cu : 0x7fu;
}

/* The square of the finite value of magnitude code mag, in the units of lks_fp8_stats,
   from the code's bits: |v| = M 2^(e' - bias - mbits) with e' = max(e, 1) and M the
   significand as an integer (the implicit bit when e > 0), so N = M 2^(e' - 1) is |v| 2^9
   (E4M3, below 2^18) or |v| 2^16 (E5M2, below 2^32) and N^2 fits in 64 bits. */
static inline LKS_HD uint64_t lks_fp8_sq_units(uint32_t mag, int fmt)
{
	int mbits = fmt ? 2 : 3, e = (int)(mag >> mbits), ep = e > 0 ? e : 1;
	uint64_t N = ((mag & ((1u << mbits) - 1)) + (e > 0 ? 1u << mbits : 0)) << (ep - 1);

	return N * N;
}

#endif
