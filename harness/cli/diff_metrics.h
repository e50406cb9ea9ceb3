/*
 * diff_metrics.h: 'lockstep diff' of imported runs (diff_metrics.c): their metrics in two
 * sections, numerics and performance.
 */
#ifndef LKS_HARNESS_DIFF_METRICS_H
#define LKS_HARNESS_DIFF_METRICS_H

#include "harness/store/run.h"

/* Prints per numerics metric of a or b the values both hold, how many differ, the first
   step that differs and the largest relative error; then per performance metric each
   run's mean and their ratio, all from one pass over the rows. a and b loaded with their
   trace (LKS_LOAD_TRACE). 0, or -1 (lks_err) out of memory, before anything is printed. */
int lks_diff_metrics(const lks_stored_run *a, const lks_stored_run *b);

#endif
