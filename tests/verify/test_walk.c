/*
 * test_walk.c: the divergence walker (harness/verify/walk.h) on stored runs built by hand
 * (harness/store/run.h), so that every difference is planted where the test says: the
 * order of a divergence (step, then tensor seq in execution order, then rank, then the
 * step rows), the tolerance as a parameter of one walk (bit for bit, rtol/atol, hashes and
 * non-finite counts), the values, errors and ULP distance it reports, NaN and infinities
 * under each tolerance, rows and steps one run lacks, tensors paired by name, phase and
 * occurrence (and a recompute with its forward), a per-step value over the ranks in rank
 * order. Also the ULP distance on known values.
 */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/case.h"
#include "harness/store/run.h"
#include "harness/verify/check.h"
#include "harness/verify/walk.h"

/* Execution order (seq) is not the order of the names, so that a walk in name order
   would be caught: "z.out" is traced first. */
static const char *const names[] = { "z.out", "b.out", "a.weight.grad", "a.weight" };
static const lks_phase phases[] = { LKS_PHASE_FORWARD, LKS_PHASE_FORWARD, LKS_PHASE_BACKWARD,
                                    LKS_PHASE_UPDATE };
enum { NT = 4, W = 3, STEPS = 4 };

/* A complete run: every (step, rank) a step row, every (step, rank, seq) a stat row with
   values that differ from row to row (so a walk that pairs wrong rows fails). */
static void build(lks_stored_run *r, int nsteps)
{
	lks_stored_run_init(r);
	r->W = W;
	r->steps = nsteps;
	for (int i = 0; i < NT; i++)
		cr_assert_eq(lks_stored_run_add_tensor(r, i, names[i], phases[i]), 0);
	for (int s = 0; s < nsteps; s++) {
		for (int k = 0; k < W; k++) {
			lks_step_row row = { .step = s, .rank = k, .loss = 5.0 - 0.25 * s,
			                     .grad_norm = 1.5 + s, .lr = 1e-3 };

			cr_assert_eq(lks_stored_run_push_steprow(r, &row), 0);
		}
		for (int k = 0; k < W; k++)
			for (int i = 0; i < NT; i++) {
				lks_stat_row row = {
					.step = s, .rank = k, .seq = i, .l2 = 1.0 + s + 0.125 * i + 0.5 * k,
					.amax = 0.75f + (float)i, .scale = i == 0 ? NAN : 64.0f * (float)(i + 1),
					.nonfinite = 0, .underflow = 10 * i, .saturated = i,
					.hash = 0x9e3779b97f4a7c15ull * (uint64_t)(1 + s * 100 + k * 10 + i) };

				cr_assert_eq(lks_stored_run_push_stat(r, &row), 0);
			}
	}
}

/* The stat row of (step, rank, seq) of a run held whole, to plant a difference in. */
static lks_stat_row *row_of(lks_stored_run *r, int step, int rank, int seq)
{
	for (size_t i = 0; i < r->nstats; i++)
		if (r->stats[i].step == step && r->stats[i].rank == rank && r->stats[i].seq == seq)
			return &r->stats[i];
	cr_assert_fail("no row %d/%d/%d", step, rank, seq);
	return NULL;
}

static lks_check_result walk(const lks_walk_opts *o, lks_stored_run *a, lks_stored_run *b)
{
	lks_check_result r;

	lks_check_result_init(&r);
	cr_assert_eq(lks_walk(o, a, b, &r, NULL), 0);
	return r;
}

static const lks_walk_opts exact = {
	.exact = 1, .step_fields = LKS_WALK_LOSS | LKS_WALK_GRAD_NORM | LKS_WALK_LR,
	.label_a = "a", .label_b = "b",
};

/* The divergence is exactly (step, rank, tensor) and field. */
static void expect_at(const lks_check_result *r, int step, int rank, int seq, const char *field)
{
	cr_assert(r->failed, "the walk found nothing");
	cr_assert_eq(r->step, step, "step %d, not %d", r->step, step);
	cr_assert_eq(r->rank, rank, "rank %d, not %d", r->rank, rank);
	if (seq >= 0) {
		cr_assert_str_eq(r->tensor, names[seq]);
		cr_assert_eq(r->phase, (int)phases[seq]);
	} else {
		cr_assert_str_eq(r->tensor, "");
	}
	cr_assert_str_eq(r->field, field);
}

/* ---- ULP distance ---- */

Test(walk, ulp_distance)
{
	double one_up = nextafter(1.0, 2.0), min_sub = nextafter(0.0, 1.0);
	float onef_up = nextafterf(1.0f, 2.0f), min_subf = nextafterf(0.0f, 1.0f);

	cr_assert_eq(lks_ulp_f64(1.0, 1.0), 0);
	cr_assert_eq(lks_ulp_f64(1.0, one_up), 1);
	cr_assert_eq(lks_ulp_f64(one_up, 1.0), 1);
	cr_assert_eq(lks_ulp_f64(1.0, nextafter(1.0, 0.0)), 1);  /* across a binade */
	cr_assert_eq(lks_ulp_f64(1.0, 1.0 + 5 * DBL_EPSILON), 5);
	cr_assert_eq(lks_ulp_f64(0.0, -0.0), 0);
	cr_assert_eq(lks_ulp_f64(min_sub, -min_sub), 2);
	cr_assert_eq(lks_ulp_f64(0.0, -min_sub), 1);
	cr_assert_eq(lks_ulp_f64(-1.0, 1.0), 2 * 0x3ff0000000000000ull);
	cr_assert_eq(lks_ulp_f64(nextafter(DBL_MIN, 0.0), DBL_MIN), 1);  /* subnormal to normal */
	cr_assert_eq(lks_ulp_f64(DBL_MAX, INFINITY), 1);
	cr_assert_eq(lks_ulp_f64(-INFINITY, INFINITY), 2 * 0x7ff0000000000000ull);
	cr_assert_eq(lks_ulp_f64(NAN, NAN), 0);
	cr_assert_eq(lks_ulp_f64(NAN, 1.0), LKS_ULP_NAN);
	cr_assert_eq(lks_ulp_f64(1.0, NAN), LKS_ULP_NAN);

	cr_assert_eq(lks_ulp_f32(1.0f, onef_up), 1);
	cr_assert_eq(lks_ulp_f32(1.0f, 1.0f + 3 * FLT_EPSILON), 3);
	cr_assert_eq(lks_ulp_f32(-0.0f, 0.0f), 0);
	cr_assert_eq(lks_ulp_f32(min_subf, -min_subf), 2);
	cr_assert_eq(lks_ulp_f32(-1.0f, 1.0f), 2 * 0x3f800000ull);
	cr_assert_eq(lks_ulp_f32(FLT_MAX, INFINITY), 1);
	cr_assert_eq(lks_ulp_f32(-2.0f, -1.0f), 0x40000000ull - 0x3f800000ull);
	cr_assert_eq(lks_ulp_f32(NAN, 0.0f), LKS_ULP_NAN);
}

/* ---- order ---- */

/* Differences planted at several places; each walk names the first in (step, seq, rank)
   order, then the step rows of that step, and after it is taken back, the next. */
Test(walk, first_step_then_tensor_seq_then_rank)
{
	static const struct { int step, rank, seq; } planted[] = {
		{ 1, 1, 1 },   /* first: step 1, seq 1 ("b.out"), rank 1 */
		{ 1, 2, 1 },   /* the same tensor, a higher rank */
		{ 1, 0, 2 },   /* a later tensor, a lower rank */
		{ 1, 0, -1 },  /* step 1's loss on rank 0: after every tensor of step 1 */
		{ 2, 0, 0 },   /* a later step, the first tensor and rank */
	};
	enum { N = sizeof(planted) / sizeof(planted[0]) };
	lks_stored_run a, b;
	lks_check_result r;

	build(&a, STEPS);
	build(&b, STEPS);
	r = walk(&exact, &a, &b);
	cr_assert(!r.failed, "identical runs part at field %s", r.field);
	for (int i = N - 1; i >= 0; i--) {
		if (planted[i].seq >= 0)
			row_of(&b, planted[i].step, planted[i].rank, planted[i].seq)->l2 *= 2;
		else
			b.steprows[planted[i].step * W + planted[i].rank].loss += 1;
	}
	for (int i = 0; i < N; i++) {
		r = walk(&exact, &a, &b);
		expect_at(&r, planted[i].step, planted[i].rank, planted[i].seq,
		          planted[i].seq >= 0 ? "l2" : "loss");
		/* taken back: the next one is found */
		if (planted[i].seq >= 0)
			*row_of(&b, planted[i].step, planted[i].rank, planted[i].seq)
				= *row_of(&a, planted[i].step, planted[i].rank, planted[i].seq);
		else
			b.steprows[planted[i].step * W + planted[i].rank].loss
				= a.steprows[planted[i].step * W + planted[i].rank].loss;
	}
	cr_assert(!walk(&exact, &a, &b).failed);
	lks_stored_run_release(&a);
	lks_stored_run_release(&b);
}

/* Within a row, the first field in l2, amax, scale, nonfinite, underflow, saturated, hash. */
Test(walk, first_field_of_a_row)
{
	lks_stored_run a, b;
	lks_stat_row *x;
	lks_check_result r;

	build(&a, 2);
	build(&b, 2);
	x = row_of(&b, 0, 0, 2);
	x->hash ^= 1;
	x->saturated++;
	x->amax = nextafterf(x->amax, INFINITY);
	r = walk(&exact, &a, &b);
	expect_at(&r, 0, 0, 2, "amax");
	x->amax = row_of(&a, 0, 0, 2)->amax;
	expect_at((r = walk(&exact, &a, &b), &r), 0, 0, 2, "saturated");
	x->saturated--;
	r = walk(&exact, &a, &b);
	expect_at(&r, 0, 0, 2, "hash");
	cr_assert_eq(r.value_type, LKS_VALUE_INT);
	cr_assert_eq((uint64_t)r.ib, row_of(&a, 0, 0, 2)->hash ^ 1);
	cr_assert_eq(r.ulp, -1, "a hash has no ULP distance");
	cr_assert(isnan(r.abs_err), "a hash has no error");
	lks_stored_run_release(&a);
	lks_stored_run_release(&b);
}

/* ---- values, errors, ULP ---- */

Test(walk, values_errors_and_ulp)
{
	lks_stored_run a, b;
	lks_check_result r;
	double l2;
	float amax;

	build(&a, 2);
	build(&b, 2);
	l2 = row_of(&a, 1, 2, 3)->l2;
	row_of(&b, 1, 2, 3)->l2 = nextafter(nextafter(nextafter(l2, 10.0), 10.0), 10.0);
	r = walk(&exact, &a, &b);
	expect_at(&r, 1, 2, 3, "l2");
	cr_assert_eq(r.value_type, LKS_VALUE_REAL);
	cr_assert_eq(r.value_f32, 0);
	cr_assert(r.a == l2 && r.b == row_of(&b, 1, 2, 3)->l2);
	cr_assert_eq(r.ulp, 3);
	cr_assert(r.abs_err == fabs(r.a - r.b) && r.rel_err == r.abs_err / fabs(r.b));
	row_of(&b, 1, 2, 3)->l2 = l2;

	/* a float: ULPs counted in float, not in double */
	amax = row_of(&a, 0, 1, 0)->amax;
	row_of(&b, 0, 1, 0)->amax = nextafterf(amax, 0.0f);
	r = walk(&exact, &a, &b);
	expect_at(&r, 0, 1, 0, "amax");
	cr_assert_eq(r.value_f32, 1);
	cr_assert_eq(r.ulp, 1);
	cr_assert_eq((float)r.b, nextafterf(amax, 0.0f));
	lks_stored_run_release(&a);
	lks_stored_run_release(&b);
}

/* ---- the tolerance is a parameter ---- */

Test(walk, tolerance_is_a_parameter)
{
	lks_walk_opts tol = exact;
	lks_stored_run a, b;
	lks_check_result r;
	lks_stat_row *x;

	build(&a, 3);
	build(&b, 3);
	x = row_of(&b, 2, 1, 1);
	x->l2 *= 1 + 1e-6;  /* relative 1e-6, within 1e-5, beyond 1e-7 */
	x->hash ^= 0xff;
	r = walk(&exact, &a, &b);
	expect_at(&r, 2, 1, 1, "l2");
	cr_assert_gt(r.ulp, 0);

	tol.exact = 0;
	tol.nan_equal = 1;
	tol.rtol = 1e-5;
	r = walk(&tol, &a, &b);
	cr_assert(!r.failed, "within rtol 1e-5, hash ignored: %s at step %d", r.field, r.step);
	tol.rtol = 1e-7;
	r = walk(&tol, &a, &b);
	expect_at(&r, 2, 1, 1, "l2");
	cr_assert_not_null(strstr(r.note, "rtol 1e-07"), "%s", r.note);
	cr_assert_not_null(strstr(r.note, "|a - b| > atol 0"), "%s", r.note);
	/* atol alone: 1e-6 relative of an l2 near 4 is ~4e-6 */
	tol.rtol = 0;
	tol.atol = 1e-5;
	cr_assert(!walk(&tol, &a, &b).failed);
	tol.atol = 1e-6;
	expect_at((r = walk(&tol, &a, &b), &r), 2, 1, 1, "l2");

	/* counts within the tolerance too, but a non-finite count exactly */
	tol.rtol = 0.5;
	x->l2 = row_of(&a, 2, 1, 1)->l2;
	x->underflow += 2;  /* 12 against 10: within 50% */
	cr_assert(!walk(&tol, &a, &b).failed);
	x->nonfinite = 1;
	r = walk(&tol, &a, &b);
	expect_at(&r, 2, 1, 1, "nonfinite");
	cr_assert_str_eq(r.note, "", "an exact count has no bound: %s", r.note);
	lks_stored_run_release(&a);
	lks_stored_run_release(&b);
}

/* ---- NaN and infinities ---- */

Test(walk, nan_under_each_tolerance)
{
	lks_walk_opts reference = exact, never = exact;
	lks_stored_run a, b;
	lks_check_result r;

	reference.exact = never.exact = 0;
	reference.nan_equal = 1;
	reference.rtol = never.rtol = 1e30;  /* as wide as can be: only NaN can fail */
	never.metric = lks_metric_find("l2");  /* as close does (the scale of seq 0 is NaN) */
	build(&a, 2);
	build(&b, 2);
	/* both NaN: equal bit for bit (no payload is kept) and under nan_equal */
	row_of(&a, 1, 0, 2)->l2 = NAN;
	row_of(&b, 1, 0, 2)->l2 = -NAN;
	cr_assert(!walk(&exact, &a, &b).failed);
	cr_assert(!walk(&reference, &a, &b).failed);
	/* ... but never close without it, however wide the bound */
	r = walk(&never, &a, &b);
	expect_at(&r, 1, 0, 2, "l2");
	cr_assert(isnan(r.a) && isnan(r.b));
	cr_assert_eq(r.ulp, -1, "no ULP distance to a NaN");
	/* one NaN: a divergence under every tolerance */
	row_of(&b, 1, 0, 2)->l2 = 3.0;
	expect_at((r = walk(&exact, &a, &b), &r), 1, 0, 2, "l2");
	expect_at((r = walk(&reference, &a, &b), &r), 1, 0, 2, "l2");
	cr_assert(isnan(r.a) && r.b == 3.0 && isnan(r.abs_err));
	/* infinities: equal to themselves under nan_equal, never near without */
	row_of(&a, 1, 0, 2)->l2 = INFINITY;
	row_of(&b, 1, 0, 2)->l2 = INFINITY;
	cr_assert(!walk(&exact, &a, &b).failed);
	cr_assert(!walk(&reference, &a, &b).failed);
	expect_at((r = walk(&never, &a, &b), &r), 1, 0, 2, "l2");
	row_of(&b, 1, 0, 2)->l2 = -INFINITY;
	expect_at((r = walk(&reference, &a, &b), &r), 1, 0, 2, "l2");
	lks_stored_run_release(&a);
	lks_stored_run_release(&b);
}

/* One metric alone: a scale that neither run has (NaN, nothing non-finite) is left out,
   not counted; a scale one run lost is the divergence. */
Test(walk, a_metric_absent_on_both_sides_is_left_out)
{
	lks_walk_opts o = exact;
	lks_walk_count n;
	lks_stored_run a, b;
	lks_check_result r;

	o.exact = 0;
	o.metric = lks_metric_find("scale");
	cr_assert_not_null(o.metric);
	build(&a, 2);
	build(&b, 2);
	lks_check_result_init(&r);
	cr_assert_eq(lks_walk(&o, &a, &b, &r, &n), 0);
	cr_assert(!r.failed, "seq 0 has no scale in either run: %s", r.field);
	cr_assert_eq(n.nshared, NT);
	cr_assert_eq(n.ncompared, 2 * W * (NT - 1), "%lld pairs", (long long)n.ncompared);
	row_of(&b, 1, 2, 3)->scale = NAN;
	r = walk(&o, &a, &b);
	expect_at(&r, 1, 2, 3, "scale");
	cr_assert_eq(r.value_f32, 1);
	/* the pattern chooses the tensors: only "a.*" are compared */
	o.pattern = "a.*";
	lks_check_result_init(&r);
	cr_assert_eq(lks_walk(&o, &a, &b, &r, &n), 0);
	cr_assert_eq(n.nmatch, 2);
	expect_at(&r, 1, 2, 3, "scale");
	o.pattern = "z.*";
	cr_assert(!walk(&o, &a, &b).failed, "z.out has no scale in either run");
	lks_stored_run_release(&a);
	lks_stored_run_release(&b);
}

/* A per-step metric: the loss is the mean over ranks, its divergence has no rank. */
Test(walk, a_step_metric_per_step)
{
	lks_walk_opts o = exact;
	lks_stored_run a, b;
	lks_check_result r;

	o.exact = 0;
	o.rtol = 0.01;
	o.metric = lks_metric_find("loss");
	build(&a, 3);
	build(&b, 3);
	b.steprows[1 * W + 2].loss *= 1.06;  /* the mean moves 2%: beyond 1% */
	r = walk(&o, &a, &b);
	expect_at(&r, 1, -1, -1, "loss");
	cr_assert_float_eq(r.b, a.steprows[W].loss * (1 + 0.06 / 3), 1e-12);
	o.rtol = 0.03;
	cr_assert(!walk(&o, &a, &b).failed);
	lks_stored_run_release(&a);
	lks_stored_run_release(&b);
}

/* A per-step value as the checks and the report's plots and tables take it: the loss
   summed over the ranks that stored the step in rank order, then divided by their number
   (an order that matters: 2^54 + 1 rounds to 2^54, so summed the other way round the mean
   below is 0); the grad norm the lowest rank's; NaN where no rank stored the step. */
Test(walk, step_value_in_rank_order)
{
	const double big = 0x1p54, loss[3] = { big, -big, 1.0 }, gn[3] = { 2.5, 3.5, 4.5 };
	const lks_metric *ml = lks_metric_find("loss"), *mg = lks_metric_find("grad_norm");
	lks_stored_run r;

	cr_assert(ml && mg);
	lks_stored_run_init(&r);
	r.W = 3;
	for (int s = 0; s < 3; s++)
		for (int k = 0; k < 3; k++) {
			lks_step_row row = { .step = s, .rank = k, .loss = loss[k], .grad_norm = gn[k] };

			if (s == 2 && k == 0)
				continue;  /* step 2: rank 0 stored none */
			if (s != 1)
				cr_assert_eq(lks_stored_run_push_steprow(&r, &row), 0);
		}
	cr_assert_eq(lks_walk_step_value(&r, 0, ml), 1.0 / 3, "summed out of rank order");
	cr_assert_eq(lks_walk_step_value(&r, 0, mg), 2.5);
	cr_assert(isnan(lks_walk_step_value(&r, 1, ml)) && isnan(lks_walk_step_value(&r, 1, mg)),
	          "a step no rank stored");
	cr_assert_eq(lks_walk_step_value(&r, 2, ml), (-big + 1.0) / 2);
	cr_assert_eq(lks_walk_step_value(&r, 2, mg), 3.5, "the lowest rank that stored the step");
	lks_stored_run_release(&r);
}

/* ---- what one run lacks ---- */

Test(walk, rows_and_steps_one_run_lacks)
{
	lks_stored_run a, b, c, d;
	lks_check_result r;

	build(&a, 3);
	build(&b, 3);
	build(&c, 2);
	/* a row b lacks: its place, field "row", and which run lacks it */
	row_of(&b, 1, 1, 2)->seq = 99;  /* no longer the row of seq 2 */
	r = walk(&exact, &a, &b);
	expect_at(&r, 1, 1, 2, "row");
	cr_assert_str_eq(r.note, "no stats row in b");
	/* the same rows, one run shorter: the first step it lacks */
	r = walk(&exact, &a, &c);
	expect_at(&r, 2, -1, -1, "steps");
	cr_assert(r.ia == 3 && r.ib == 2);
	/* the last steps, not counts: an import's steps 1 to 3 are 4 "steps" to nsteps */
	cr_assert_str_eq(r.note, "the runs end at different steps (the last stored: 2 and 1)");
	/* ranks are compared rank by rank */
	build(&d, 3);
	d.W = 2;
	r = walk(&exact, &a, &d);
	expect_at(&r, -1, -1, -1, "world_size");
	lks_stored_run_release(&a);
	lks_stored_run_release(&b);
	lks_stored_run_release(&c);
	lks_stored_run_release(&d);
}

/* ---- pairing ---- */

/* Tensors pair by (name, phase, occurrence), not by seq: b traces an extra tensor first
   and the k-th recompute of a name pairs with the k-th forward of it. */
Test(walk, pairs_by_name_phase_and_occurrence)
{
	lks_walk_opts o = exact;
	lks_stored_run a, b;
	lks_check_result r;
	int map[8];
	lks_walk_count n;

	lks_stored_run_init(&a);
	lks_stored_run_init(&b);
	a.W = b.W = 1;
	/* a: x (fwd), x (fwd) again, x (recompute) twice; b: y (fwd), then the same */
	cr_assert_eq(lks_stored_run_add_tensor(&a, 0, "x", LKS_PHASE_FORWARD), 0);
	cr_assert_eq(lks_stored_run_add_tensor(&a, 1, "x", LKS_PHASE_FORWARD), 0);
	cr_assert_eq(lks_stored_run_add_tensor(&a, 2, "x", LKS_PHASE_RECOMPUTE), 0);
	cr_assert_eq(lks_stored_run_add_tensor(&a, 3, "x", LKS_PHASE_RECOMPUTE), 0);
	cr_assert_eq(lks_stored_run_add_tensor(&a, 1, "y", LKS_PHASE_FORWARD), 1, "seq 1 is x");
	cr_assert_eq(lks_stored_run_add_tensor(&a, 5, "y", LKS_PHASE_FORWARD), 1, "seq 4 first");
	cr_assert(a.occ[0] == 0 && a.occ[1] == 1 && a.occ[2] == 0 && a.occ[3] == 1);
	cr_assert_eq(lks_stored_run_add_tensor(&b, 0, "y", LKS_PHASE_FORWARD), 0);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(lks_stored_run_add_tensor(&b, i + 1, a.names[i], a.phases[i]), 0);
	lks_walk_pairs(&o, &a, &b, map, &n);
	cr_assert(map[0] == 1 && map[1] == 2 && map[2] == 3 && map[3] == 4);
	cr_assert(n.nmatch == 4 && n.nshared == 4);
	o.recompute = 1;
	lks_walk_pairs(&o, &a, &a, map, &n);
	cr_assert(map[0] == -1 && map[1] == -1 && map[2] == 0 && map[3] == 1);
	cr_assert(n.nmatch == 2 && n.nshared == 2);

	/* one step of rows: the second recompute differs from the second forward */
	for (int i = 0; i < 4; i++) {
		lks_stat_row row = { .seq = i, .l2 = i == 3 ? 2.0 : 1.0, .hash = 7 };

		cr_assert_eq(lks_stored_run_push_stat(&a, &row), 0);
	}
	r = walk(&o, &a, &a);
	cr_assert(r.failed);
	cr_assert(r.step == 0 && r.rank == 0 && r.phase == LKS_PHASE_RECOMPUTE);
	cr_assert_str_eq(r.field, "l2");
	cr_assert(r.a == 2.0 && r.b == 1.0, "recompute %g against forward %g", r.a, r.b);
	lks_stored_run_release(&a);
	lks_stored_run_release(&b);
}

/* Runs that share no tensor say so; a recompute without its forward is the divergence. */
Test(walk, nothing_shared)
{
	lks_walk_opts o = exact;
	lks_stored_run a, b;
	lks_check_result r;

	build(&a, 2);
	lks_stored_run_init(&b);
	b.W = W;
	cr_assert_eq(lks_stored_run_add_tensor(&b, 0, "other", LKS_PHASE_FORWARD), 0);
	r = walk(&o, &a, &b);
	cr_assert(r.failed && r.step == -1);
	cr_assert_str_eq(r.note, "the runs share no traced tensor");
	lks_stored_run_release(&b);

	lks_stored_run_init(&b);
	b.W = 1;
	cr_assert_eq(lks_stored_run_add_tensor(&b, 0, "h", LKS_PHASE_RECOMPUTE), 0);
	{
		lks_stat_row row = { .seq = 0 };

		cr_assert_eq(lks_stored_run_push_stat(&b, &row), 0);
	}
	o.recompute = 1;
	r = walk(&o, &b, &b);
	cr_assert(r.failed && r.step == 0 && r.rank == -1);
	cr_assert_str_eq(r.tensor, "h");
	cr_assert_not_null(strstr(r.note, "no forward tensor"), "%s", r.note);
	lks_stored_run_release(&a);
	lks_stored_run_release(&b);
}
