/*
 * walk.h: the divergence walker: two stored runs (harness/store/run.h) walked in the order
 * of a divergence (DESIGN.md, Checks) until the first place they part: the first step; in
 * it the first tensor in a's execution order (seq: forward activations, backward
 * gradients, updated weights), each over the ranks, lowest first; then the step rows
 * (loss, grad norm, lr), rank by rank. The place, the field, both values, the absolute
 * and relative error and the ULP distance go into a check's result (check.h).
 *
 * Every comparison of traces is this one walk with other options: the bitwise check (bit
 * for bit), close (one metric within rtol/atol), recompute (a run's recomputed
 * activations against its own forward ones), the golden comparison (golden_compare.h: bit
 * for bit, or within rtol/atol with hashes ignored) and 'lockstep diff'. ranks_agree
 * compares the ranks of one run pair by pair with lks_walk_pair, and the report's heatmap
 * pairs two runs' tensors and compares their rows with lks_walk_pairs and lks_walk_pair.
 *
 * Imported runs (run.h: metrics, nm > 0 on either side) are walked on their metrics
 * instead: step by step, each metric in the order of the import metric table (loss first,
 * then names it lacks by name), rank by rank, a's metrics then those only b has; the
 * divergence names the step, the metric (res->metric, field "value") and the rank. Only
 * numerics metrics enter unless metric_name names one: performance never enters a
 * bitwise verdict. A value one run has and the other lacks is the divergence (field
 * "row").
 *
 * Tensors pair by (name, phase, occurrence) (run.h): the k-th tensor of a name and phase
 * in a with the k-th in b, so two runs that trace different sets (a checkpointed run's
 * extra RECOMPUTE rows) are compared on what they share. Rows are compared rank by rank,
 * so runs of different world sizes never agree. Within the steps both runs stored, a row
 * that neither has is passed over and a row that one lacks is the divergence (field
 * "row"); after them, runs that stored different numbers of steps part at the first step
 * one lacks (field "steps").
 */
#ifndef LKS_HARNESS_WALK_H
#define LKS_HARNESS_WALK_H

#include <stdint.h>

#include "harness/engine/case.h"
#include "harness/store/run.h"
#include "harness/verify/check.h"

/* The fields of the step rows a walk compares (lks_walk_opts.step_fields), in this order. */
enum { LKS_WALK_LOSS = 1, LKS_WALK_GRAD_NORM = 2, LKS_WALK_LR = 4 };

typedef struct lks_walk_opts {
	/* how two values compare */
	int exact;                /* bit for bit (all NaNs alike: the store keeps no payload),
	                             counts and hashes equal */
	double rtol, atol;        /* else: |a - b| <= atol + rtol * |b|, counts as reals;
	                             non-finite counts equal; hashes not compared */
	int nan_equal;            /* with rtol/atol: a NaN equals only a NaN, an infinity only
	                             itself (a reference is met as it is); 0: the bound as
	                             written, which no NaN meets (close: a NaN is never close) */
	/* what is compared */
	const lks_metric *metric; /* one metric alone: a tensor statistic per (step, tensor,
	                             rank), a tensor without the value in both rows left out;
	                             or a per-step value (loss, grad norm) per step, rank -1.
	                             NULL: every field of the stat rows (l2, amax, scale,
	                             nonfinite, underflow, saturated, hash), then step_fields */
	unsigned step_fields;     /* LKS_WALK_LOSS | LKS_WALK_GRAD_NORM | LKS_WALK_LR; 0: none */
	const char *metric_name;  /* imported runs: this metric alone, numerics or
	                             performance; NULL: every numerics metric */
	const char *pattern;      /* a's tensors whose names match (fnmatch); NULL: all */
	int recompute;            /* pair each RECOMPUTE tensor of a with the FORWARD tensor of
	                             b of the same name and occurrence (a and b: the same run),
	                             and no other; one without is the divergence */
	const char *label_a, *label_b;  /* the runs in a note: "no stats row in LABEL" */
	int from_step;            /* the first step compared (a resumed run has none before
	                             its first); lockstep's own runs only */
	int until_step;           /* > 0: the steps below it only, and how many steps each run
	                             stored is not compared (a replay of one step) */
} lks_walk_opts;

/* What a walk paired and compared. */
typedef struct lks_walk_count {
	int nmatch;               /* a's tensors the walk would compare (pattern; recompute:
	                             the recomputed ones) */
	int nshared;              /* of them, paired with one of b */
	int64_t ncompared;        /* pairs of rows compared (metric: with the value on a side) */
} lks_walk_count;

/*
 * Walks a against b (both loaded with their trace; a and b may be one run) and puts the
 * first divergence into res: failed, step, rank, tensor, phase, field, values (a's as a),
 * errors, ULP distance, and a note where the values do not say it all (a tolerance's
 * bound, a missing row, "the runs share no traced tensor"). res is only added to: pass it
 * initialised (lks_check_result_init). cnt may be NULL. -1 (lks_err) only when a run's
 * stat rows cannot be read.
 */
int lks_walk(const lks_walk_opts *o, lks_stored_run *a, lks_stored_run *b,
             lks_check_result *res, lks_walk_count *cnt);

/* lks_walk on imported tensor traces (run.h's tt; walk_tensors.c): each (step, rank)'s
   sequences aligned by name and order (align.h), then the first pair that parts, in a's
   order over the ranks; what was inserted, removed, renamed or moved said in the note.
   With metric_name, that statistic alone (rtol, atol); exact: every statistic both hold
   and the hash. */
int lks_walk_tensor_trace(const lks_walk_opts *o, lks_stored_run *a, lks_stored_run *b,
                          lks_check_result *res, lks_walk_count *cnt);

/* ranks_agree on a tensor trace: at each step each rank's tensors (those o->pattern
   matches, of the forward phase only with forward_only; o->exact) against rank 0's, aligned as lks_walk_tensor_trace aligns two runs; a
   rank that logged nothing at a step disagrees with no one. The divergence names the
   rank that differs: rank 0 where it differs from all others (three ranks or more), -1
   between two. */
int lks_walk_tensor_ranks(const lks_walk_opts *o, lks_stored_run *a, int forward_only,
                          lks_check_result *res, lks_walk_count *cnt);

/* One step of two tensor traces as 'lockstep diff' shows it: the tensors aligned (as
   lks_walk_tensor_trace aligns them, rank by rank) and what differs among the pairs. */
typedef struct lks_tensor_step_diff {
	long pairs, inserted, removed, renamed, moved;
	long nhash;               /* pairs whose hashes differ (both hold one) */
	long nvalue;              /* pairs with a statistic or hash not bit for bit */
	double l2_rel;            /* the largest |a - b| / |b| of l2 among the pairs (inf: a
	                             NaN on one side); NaN: no pair holds l2 */
	int l2_seq, l2_rank;      /* where: a's tensor and the rank; -1 none */
} lks_tensor_step_diff;
/* Each pair of the step, rank by rank in a's order: its rank, its place in a's sequence of
   that rank, a's tensor seq, whether it differs (a statistic or the hash, bit for bit),
   and the l2 of each side (NaN: none held); 0 to go on, else the walk stops and returns
   that. fn may be NULL. */
typedef int (*lks_tensor_pair_fn)(void *arg, int rank, int pos, int seq, int differs,
                                  double l2_a, double l2_b);
int lks_walk_tensor_step_pairs(lks_stored_run *a, lks_stored_run *b, int step,
                               lks_tensor_pair_fn fn, void *arg, lks_tensor_step_diff *d);

/* The pairing of lks_walk: map[seq of a] = seq of b, or -1; counts into cnt. */
void lks_walk_pairs(const lks_walk_opts *o, const lks_stored_run *a, const lks_stored_run *b,
                    int *map, lks_walk_count *cnt);

/* Two stat rows of tensor seq of a at (step, rank), either possibly NULL (not stored):
   1 and the divergence in res when they part under o, 0 when they agree or neither was
   stored. */
int lks_walk_pair(const lks_walk_opts *o, const lks_stored_run *a, const lks_stat_row *ra,
                  const lks_stat_row *rb, int step, int rank, int seq, lks_check_result *res);

/* Metric m of a at (step, ra) against metric mb of b at (step, rb) (either value possibly
   not stored): 1 and the divergence in res (its rank: ra) when they part under o, 0
   when they agree or neither was stored. ranks_agree on an imported run compares its
   ranks with it. */
int lks_walk_metric_pair(const lks_walk_opts *o, const lks_stored_run *a, int m, int ra,
                         const lks_stored_run *b, int mb, int rb, int step,
                         lks_check_result *res);

/* A per-step metric of r (o->metric's scope): the mean over the ranks that stored the
   step (the loss), or the lowest rank's (the grad norm, the same on every rank); NaN when
   no rank did. */
double lks_walk_step_value(const lks_stored_run *r, int step, const lks_metric *m);
/* Whether some rank of r stored a step row at step: a NaN of lks_walk_step_value is then
   a value (a NaN loss), else none. */
int lks_walk_step_stored(const lks_stored_run *r, int step);

/* The divergence's place (seq of run a; -1: no tensor) and its values into res: reals
   (f32: floats, ULP counted in float) with their errors, or integers (is_hash: bits, no
   error). */
void lks_walk_at(lks_check_result *res, const lks_stored_run *a, int step, int rank, int seq);
void lks_walk_real(lks_check_result *res, const char *field, double a, double b, int f32);
void lks_walk_int(lks_check_result *res, const char *field, int64_t a, int64_t b, int is_hash);

/*
 * ULP distance: how many representable values lie between a and b, counting one of
 * them. Each value is mapped to an integer that orders it among all values of its
 * format (positive: its bits; negative: minus the bits of its magnitude), and the
 * distance is the difference of the two integers. So equal values give 0, +0 and -0
 * give 0 (they are equal), neighbours give 1, the largest subnormal and the smallest
 * normal give 1, a value and inf of the same sign are finite apart, and across signs the
 * distance is the sum of both magnitudes' distances from zero (-min_subnormal vs
 * +min_subnormal: 2). Both NaN: 0; one NaN: LKS_ULP_NAN.
 */
#define LKS_ULP_NAN UINT64_MAX
uint64_t lks_ulp_f64(double a, double b);
uint64_t lks_ulp_f32(float a, float b);
/* A run's tensor-parallel size: its options' "tp=N" (lockstep's own runs), 1 without. Two
   runs of different world sizes but the same replicas (world size / tp) are walked
   replica by replica: the first rank of each tp group, which traces whole tensors. */
int lks_stored_run_tp(const lks_stored_run *r);
/* Whether its tp groups traced each rank's own shards (options "trace=shards"). */
int lks_stored_run_shards(const lks_stored_run *r);

#endif
