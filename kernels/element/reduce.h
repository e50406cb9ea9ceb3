/*
 * element/reduce.h: the all-reduces' element rules, shared by the CPU and CUDA.
 *
 * The threads communicator (kernels/comm_threads.c) folds every rank's element into rank
 * 0's in rank order, and the NCCL communicator's ordered mode (kernels/cuda/comm_nccl.cu)
 * folds the ranks' rows of an all-gather with the same lines, so both give the bits of
 * ((x_0 + x_1) + x_2) + ... and of the max whose NaN wins. Each sum is one rounded float
 * addition as written (no contraction is possible in an add alone).
 */
#ifndef LKS_KERNELS_ELEMENT_REDUCE_H
#define LKS_KERNELS_ELEMENT_REDUCE_H

#include <math.h>
#include <stddef.h>

#include "kernels/hd.h"

/* acc joined with the next rank's y by the max: a NaN y wins (so the last NaN in rank order
   is the result), else the greater; on a tie (+0 and -0 included) acc stays */
static inline LKS_HD float lks_max_nan(float acc, float y)
{
	return isnan(y) || y > acc ? y : acc;
}

/* Element i of the all-reduce of W ranks' rows (all: (W, n), row r rank r's x), in rank
   order: the sum ((x_0 + x_1) + x_2) + ..., or with max the NaN-winning max. */
static inline LKS_HD float lks_fold_ranks(const float *all, int W, size_t n, size_t i, int max)
{
	float acc = all[i];

	for (int r = 1; r < W; r++) {
		float y = all[(size_t)r * n + i];

		acc = max ? lks_max_nan(acc, y) : acc + y;
	}
	return acc;
}

#endif
