/*
 * check_impl.h: what the files of the checks share inside the verify room (check.h is the
 * interface): the state of one check's evaluation, and the kinds on imported runs
 * (check_import.c). Nothing outside check*.c includes it.
 */
#ifndef LKS_HARNESS_CHECK_IMPL_H
#define LKS_HARNESS_CHECK_IMPL_H

#include "harness/store/run.h"
#include "harness/verify/check.h"

struct lks_check_ctx {
	lks_store *s;
	const lks_check_cfg *k;
	const lks_check_opts *o;
	lks_stored_run *a, *b;    /* b: NULL for one-run kinds */
	int64_t run_a, run_b;     /* the stored runs (for kinds that read them their own way) */
	lks_check_result *res;
	const char *label_a, *label_b;  /* what the values are: run names, ranks, phases */
	char label_buf[2][32];    /* labels made by a kind (ranks) */
};

typedef int (*lks_check_fn)(struct lks_check_ctx *x);

/* The verdict as a check's line says it ("pass", "FAIL", ...) */
const char *lks_verdict_word(lks_verdict v);

/* The evaluation of kind on imported runs (runs with metrics, run.h), or NULL where the
   kind's own one serves them (bitwise and golden walk metrics as they walk tensors). */
lks_check_fn lks_check_import_fn(lks_check_kind kind);
/* The same on imported tensor traces (run.h's tt; check_tensors.c). */
lks_check_fn lks_check_tensor_fn(lks_check_kind kind);

#endif
