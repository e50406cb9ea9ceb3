/*
 * check.h: the checks of a case, evaluated on the traces its runs stored (DESIGN.md,
 * Checks). Each check gets a verdict, stored in the checks table of the trace store;
 * a failing check names its divergence: the first step, then the first tensor in
 * execution order (seq: forward activations, backward gradients, updated weights), then
 * the lowest rank, with the first differing field, the values on both sides and the
 * error between them, as the walker finds it (walk.h) wherever two traces are compared.
 *
 * A numerical mismatch is a verdict, never an error: the functions here fail (-1,
 * lks_err) only when the store cannot be read or written.
 *
 * Kinds (one row each in the check-kind table, engine/check_kind.c, and one function each
 * in the table of check.c):
 *   bitwise      two runs equal in every stats field of every tensor they share by
 *                (name, phase, occurrence) and in the bits of each step's loss and grad
 *                norm; a checkpointed run's extra RECOMPUTE rows are not compared
 *   close        a metric of the table in check_kind.c within |a - b| <= atol + rtol *
 *                |b| (a NaN on either side is never close): loss (the mean over ranks) or
 *                grad_norm per step; or a tensor statistic (l2, amax, scale) per step,
 *                tensor and rank, of the tensors both runs traced whose names match the
 *                check's fnmatch pattern (tensors; all when empty). A pattern that leaves
 *                nothing to compare fails with bad_input (LKS_BAD_CASE)
 *   finite       no non-finite value: the first (step, tensor, rank) with nonfinite > 0,
 *                or a step whose loss or grad norm is not finite
 *   ranks_agree  the UPDATE rows (parameters after the optimizer step) of all ranks equal
 *                at every step. Where they differ, with three ranks or more, the ranks
 *                that disagree with the majority are named (rank: the one, when it is one);
 *                two ranks, or no majority, name no single rank (rank -1, the message
 *                names them): a golden or a clean run decides
 *   recompute    every RECOMPUTE row equals the FORWARD row of the same name (and
 *                occurrence) at the same step and rank
 *   golden       run a against its golden file <golden dir>/<class>/<case>/<run>.tsv
 *                (the golden dir: lks_check_opts)
 *                (harness/store/golden.h): bit for bit, hashes included, for class cpu; within
 *                rtol/atol, hashes ignored, for other classes. A missing golden file fails,
 *                naming the command that writes it; a bad one fails with bad_input set and
 *                "file:line: ..." as the message ('lockstep run' then exits 2)
 *   sqnr         per step and weight gradient, in the backward's order, the SQNR of a's
 *                gradient against b's (harness/verify/sqnr.h) is at least floor_db; the values
 *                are compared while 'lockstep run' makes both runs. Runs stored without
 *                SQNR rows give "unsupported", not a failure
 *
 * On imported runs (runs of other frameworks: metrics per step and rank, store/run.h),
 * bitwise and golden walk the numerics metrics, close takes any metric by name, finite
 * finds the first non-finite numerics value, ranks_agree compares the loss of every rank;
 * a divergence names the metric in res->metric (check_import.c).
 */
#ifndef LKS_HARNESS_CHECK_H
#define LKS_HARNESS_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness/engine/case.h"
#include "harness/store/trace_store.h"

typedef enum lks_verdict {
	LKS_VERDICT_PASS = 0,
	LKS_VERDICT_FAIL,             /* failed, or failed elsewhere than expected */
	LKS_VERDICT_EXPECTED_FAIL,    /* expect = fail, and it failed (where expected) */
	LKS_VERDICT_UNEXPECTED_PASS,  /* expect = fail, and it passed: a failure */
	LKS_VERDICT_UNSUPPORTED,      /* this kind cannot be evaluated yet: not a failure */
	LKS_VERDICT_SKIPPED,          /* a run it needs was not run (run --run NAME) */
} lks_verdict;

/* "pass", "fail", "expected_fail", "unexpected_pass", "unsupported", "skipped" */
const char *lks_verdict_name(lks_verdict v);

/* One check's outcome. Where a divergence was found (also for an expected failure),
   step, rank, tensor and field name it; value_type says which values are set. */
typedef struct lks_check_result {
	lks_verdict verdict;
	int failed;                   /* the check itself failed, whatever was expected */
	int step, rank;               /* -1: none (rank: a per-step value such as the loss) */
	char tensor[128];             /* "": none */
	char metric[64];              /* an imported run's metric (walk.h); "": none */
	int phase;                    /* lks_phase of the tensor; -1: none */
	const char *field;            /* l2, amax, scale, nonfinite, underflow, saturated,
	                                 hash, loss, grad_norm, ...; NULL: none */
	lks_value_type value_type;
	int value_f32;                /* LKS_VALUE_REAL values that are floats (ULP in float) */
	double a, b;                  /* LKS_VALUE_REAL */
	int64_t ia, ib;               /* LKS_VALUE_INT: counts, or hashes as their bits */
	double abs_err, rel_err;      /* NaN: none; rel_err = |a - b| / |b| */
	int64_t ulp;                  /* -1: none */
	char note[256];               /* said after the values: a bound, a missing row, ... */
	char message[512];            /* what failed, in words; for every verdict but pass */
	int bad_input;                /* an input of the check is bad: the verdict is fail,
	                                 message says file:line; exit 2. LKS_BAD_GOLDEN: a
	                                 golden file; LKS_BAD_CASE: the check's keys in the
	                                 case file (lks_check_case adds its file and line) */
} lks_check_result;

enum { LKS_BAD_GOLDEN = 1, LKS_BAD_CASE = 2 };

/* Verdicts of many checks (one suite). failed counts fail and unexpected_pass. */
typedef struct lks_check_tally {
	int total, passed, failed, expected_fail, unsupported, skipped;
	int bad_input;            /* of the failed: checks whose input was bad (exit 2) */
	int unplanted;            /* planted faults --steps stopped before (never acted) */
} lks_check_tally;

/* What the checks need besides the case and the store, passed down from the command line. */
typedef struct lks_check_opts {
	const char *golden_dir;   /* where golden files are (golden.h, lks_golden_dir); NULL:
	                             "golden" */
	const char *db;           /* the database, for the commands a verdict prints; NULL:
	                             the default (lockstep.db) */
} lks_check_opts;

/*
 * Evaluates check k on the stored runs run_a and run_b (0 for one-run kinds), applying
 * k->expect_fail and the expected divergence (exp_step, exp_rank, exp_tensor, each only
 * when given). A run id of 0 where the kind needs a run gives "skipped". o may be NULL
 * (the defaults).
 */
int lks_check_eval(lks_store *s, const lks_check_cfg *k, const lks_check_opts *o,
                   int64_t run_a, int64_t run_b, lks_check_result *res);
/* The same on runs a and b (NULL for one-run kinds) loaded already with their traces
   (lks_stored_run_load, LKS_LOAD_TRACE): a caller that reads the runs itself (lockstep
   diff) holds them once, not twice. An imported run's metrics are paired with the other
   run's (lks_stored_run_metrics_pair) here. */
struct lks_stored_run;
int lks_check_eval_runs(lks_store *s, const lks_check_cfg *k, const lks_check_opts *o,
                        struct lks_stored_run *a, struct lks_stored_run *b,
                        lks_check_result *res);

/*
 * Evaluates every check of case c on the runs of suite suite_id: run_ids[i] is the stored
 * run of c->runs[i], 0 if it was not run. Prints one line per check to out (NULL: none),
 * stores each verdict in the checks table and adds it to *tally.
 */
int lks_check_case(lks_store *s, int64_t suite_id, const lks_case *c, const int64_t *run_ids,
                   const lks_check_opts *o, FILE *out, lks_check_tally *tally);

/* Whether 'lockstep prune' removed stat rows of run run_id (prune.h): its suite is marked
   pruned (all, some, or a prune is under way), or it traced tensors and holds no stat
   row (a prune of an earlier lockstep). Read both this and the runs in one snapshot
   (lks_store_read_begin): a prune beside marks and removes meanwhile. */
int lks_check_run_pruned(lks_store *s, int64_t run_id, int *pruned);

/*
 * The bitwise check k (its name, a and b) on runs a and b; where pruned (one of them was,
 * lks_check_run_pruned), on what both still have: the loss, then the grad norm of every
 * step and rank, bit for bit (a close check with no tolerance; NaN is never equal).
 */
int lks_check_bitwise_kept(lks_store *s, const lks_check_cfg *k, int64_t a, int64_t b,
                           int pruned, lks_check_result *res);
/* The same on runs loaded already (lks_check_eval_runs). */
int lks_check_bitwise_kept_runs(lks_store *s, const lks_check_cfg *k, struct lks_stored_run *a,
                                struct lks_stored_run *b, int pruned, lks_check_result *res);

/* A result as lks_check_eval starts it: no verdict yet, no divergence. */
void lks_check_result_init(lks_check_result *res);
/* The field a divergence is stored and shown with: an imported run's own statistic (its
   metric, where the walk says "value") by its name; "" when none. */
static inline const char *lks_check_result_field(const lks_check_result *r)
{
	return r->metric[0] && r->field && !strcmp(r->field, "value") ? r->metric
	       : r->field ? r->field : "";
}
/* A divergence in words: "step 3, tensor 'x' (backward), rank 1: l2 A=... B=... (abs ..,
   rel .., 2 ulp); note", the runs called label_a and label_b (label_b NULL: a's value
   alone). */
void lks_check_describe(const lks_check_result *r, const char *label_a, const char *label_b,
                        char *buf, size_t n);
/* Side a (which 0) or b (1) of r's values as the verdicts print them: a real to the
   digits that give its bits back (a NaN "NaN", as the report and diff spell it), a hash in
   hex, a count. */
void lks_check_value_text(char *buf, size_t n, const lks_check_result *r, int which);

/* A majority among n values: the index of one that more than half of them equal (same(arg,
   i, j): values i and j are equal, an equivalence), or -1 when none is: two that differ,
   a tie, all different. Boyer and Moore's vote, 2n calls of same. */
int lks_majority(int n, int (*same)(void *arg, int i, int j), void *arg);

#endif
