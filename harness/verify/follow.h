/*
 * follow.h: the comparison 'lockstep import --follow' makes as each step of a live log is
 * stored: the step's records against a reference (a stored run, a log or golden values
 * file read through an importer, or a golden file of class import) held in memory by
 * (step, rank, metric).
 */
#ifndef LKS_HARNESS_VERIFY_FOLLOW_H
#define LKS_HARNESS_VERIFY_FOLLOW_H

#include "harness/import/import.h"

typedef struct lks_follow_ref lks_follow_ref;

/* The reference's metrics: stored run run_id (an imported run's metrics, a lockstep run's
   loss, grad_norm and lr), or file path read in format fmt. 0, LKS_E_BAD_INPUT (the file),
   -1 (lks_err). */
int lks_follow_ref_run(lks_store *s, int64_t run_id, lks_follow_ref **out);
int lks_follow_ref_file(const lks_import_format *fmt, const char *path, lks_follow_ref **out);
/* The reference as a golden file of class import (golden.h; what 'lockstep golden update'
   writes for an imported run): its metric rows. 0; LKS_E_BAD_INPUT (lks_err) when there is
   no such file, a bad one ("path:line: what"), or a golden of another class (it holds
   tensors, not metrics); -1 (lks_err). */
int lks_follow_ref_golden(const char *path, lks_follow_ref **out);
void lks_follow_ref_free(lks_follow_ref *ref);
/* Values held (steps x ranks x metrics). */
long lks_follow_ref_size(const lks_follow_ref *ref);

/* The first difference of a step. */
typedef struct lks_follow_div {
	int step, rank;
	char metric[LKS_IMPORT_NAME_MAX];
	double got, want;         /* the log's, the reference's */
	int missing;              /* the log's record lacks the metric (got is NaN) */
} lks_follow_div;

/* Every numerics metric the reference holds at a (step, rank) that recs hold must be in
   the record and equal: bit for bit (NaN equals NaN) when rtol and atol are 0, else
   |got - want| <= atol + rtol * |want| (infinities and NaN equal only themselves).
   Performance metrics, and what the reference does not hold, are not compared. 0 all
   equal (*compared counts the values), 1 a difference (*div: the first, in the order of
   recs and then by name). */
int lks_follow_step(const lks_follow_ref *ref, const lks_import_rec *recs, int n, double rtol,
                    double atol, long *compared, lks_follow_div *div);

#endif
