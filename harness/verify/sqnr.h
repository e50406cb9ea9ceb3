/*
 * sqnr.h: per-tensor SQNR between two runs' gradients, for the sqnr check (DESIGN.md,
 * Checks).
 *
 *   SQNR(a vs b) = 10 log10( sum b^2 / sum (a - b)^2 )   in dB, in double, per parameter
 *
 * over the all-reduced weight gradient of each step (before clipping: the gradient the
 * backward produced), b the reference. Equal tensors give +inf, a zero reference with a
 * non-zero a gives -inf.
 *
 * The trace keeps statistics, not values, so the values are compared while the runs are
 * made: within one 'lockstep run', the first run of a pair writes its gradients to a
 * temporary file step by step, and the second compares its own with them as it goes.
 * The SQNR of every (step, tensor) is stored (lks_store_sqnr_put), so the check reads it
 * back like any other trace.
 */
#ifndef LKS_HARNESS_SQNR_H
#define LKS_HARNESS_SQNR_H

#include <stddef.h>
#include <stdint.h>

#include "harness/engine/case.h"
#include "harness/engine/runner.h"
#include "harness/store/trace_store.h"

typedef struct lks_sqnr_pairs lks_sqnr_pairs;

/* One pair per sqnr check of case c whose runs are both selected (selected[i]: run i will
   be run). *out is NULL when there is none. */
int lks_sqnr_begin(const lks_case *c, const int *selected, lks_sqnr_pairs **out);
/* One pair: run a against run b (indices as the hook and end_run get them). */
int lks_sqnr_begin_pair(int a, int b, lks_sqnr_pairs **out);
/* Before run i: points o's gradient hook at the pairs run i belongs to. */
void lks_sqnr_hook(lks_sqnr_pairs *p, int run, lks_runner_opts *o);
/* After run i, stored as run_id: stores the SQNR rows of the pairs it completes. */
int lks_sqnr_end_run(lks_sqnr_pairs *p, int run, int64_t run_id, lks_store *s);
void lks_sqnr_free(lks_sqnr_pairs *p);
/* Run failed (the suite goes on without it): its pairs compare and store nothing, and
   their sqnr checks are skipped as a run not made's. */
void lks_sqnr_drop_run(lks_sqnr_pairs *p, int run);

/* 10 log10(sum b^2 / sum (a-b)^2) over n values, in double. */
double lks_sqnr_db(const float *a, const float *b, size_t n);

#endif
