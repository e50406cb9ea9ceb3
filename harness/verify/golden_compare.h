/*
 * golden_compare.h: a run against its golden file (store/golden.h), as the 'golden' check
 * and 'lockstep golden' compare them.
 */
#ifndef LKS_HARNESS_GOLDEN_COMPARE_H
#define LKS_HARNESS_GOLDEN_COMPARE_H

#include <stddef.h>

#include "harness/store/golden.h"
#include "harness/verify/check.h"

/*
 * Compares run (a stored run read with lks_golden_from_run) with golden gold. exact: every
 * value bit for bit and every hash equal; else |run - golden| <= atol + rtol * |golden| for
 * loss, grad_norm, lr, l2, amax, scale, underflow and saturated (NaN equals only NaN),
 * non-finite counts equal, hashes ignored. The first divergence in check.h's order (step;
 * tensors by seq, then rank; then the step rows by rank) goes into res (failed, step, rank,
 * tensor, field, values with run as a, golden as b) and a sentence about it into note
 * ("" when the values say it all); header fields (world_size, steps, seed, ...) that differ
 * come first. res is only added to: pass it initialised.
 */
int lks_golden_compare(const lks_golden *run, const lks_golden *gold, int exact, double rtol,
                       double atol, lks_check_result *res, char *note, size_t note_size);

#endif
