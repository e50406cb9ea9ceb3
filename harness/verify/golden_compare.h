/*
 * golden_compare.h: a run against its golden file (store/golden.h), as the 'golden' check
 * compares them.
 */
#ifndef LKS_HARNESS_GOLDEN_COMPARE_H
#define LKS_HARNESS_GOLDEN_COMPARE_H

#include "harness/store/run.h"
#include "harness/verify/check.h"

/*
 * Compares run (a stored run, its stat rows read step by step) with golden gold (read with
 * lks_golden_read). Header fields come first: a run of other settings (case, run, recipe,
 * options but a planted fault, world size, steps, seed) or of other tensors is not the
 * golden's run. Then the walk (walk.h) over every value of both traces: exact, every value
 * bit for bit and every hash equal; else |run - golden| <= atol + rtol * |golden| for loss,
 * grad_norm, lr, l2, amax, scale, underflow and saturated (NaN equals only NaN, an infinity
 * only itself), non-finite counts equal, hashes ignored. The first divergence goes into res
 * (failed, step, rank, tensor, field, values with run as a, golden as b, and res->note
 * where the values do not say it all). res is only added to: pass it initialised.
 */
int lks_golden_compare(lks_stored_run *run, lks_stored_run *gold, int exact, double rtol,
                       double atol, lks_check_result *res);

/* As lks_golden_compare, the header fields first, then only the loss and the grad norm of
   every step within |run - golden| <= atol + rtol * |golden| (the loss the mean over the
   ranks, walk.h): how a run of a class that is not bit for bit (cuBLASLt's GEMMs, whose
   tensors differ in every bit) meets its golden, with the tolerance of its recipe. */
int lks_golden_compare_steps(lks_stored_run *run, lks_stored_run *gold, double rtol,
                             double atol, lks_check_result *res);

#endif
