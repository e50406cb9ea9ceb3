/*
 * test_check.c: the checks (harness/verify/check.h) on real traces. A tiny case is trained into
 * a store in a temporary folder; then single stored values are altered with SQL (a hash,
 * an l2, a loss, a non-finite count) and each check must name exactly that step, rank and
 * tensor, the field, the values on both sides and the errors; where two places differ,
 * the first in (step, tensor seq, rank) order. Also: expect = fail with and without the
 * expected location, an unexpected pass, skipped checks, and the verdicts stored in the
 * checks table. (The close check: test_check_close.c; the fixture: check_fixture.h; the ULP
 * distance on known values: test_walk.c.)
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_fixture.h"
#include "harness/engine/case.h"
#include "harness/verify/check.h"
#include "harness/store/trace_store.h"
#include "kernels/err.h"

/* Three replicas of one run, so that a majority can name the rank that differs. */
static const char three_ranks_text[] =
	"[case]\nsteps = 3\nseed = 7\nworld_size = 3\n"
	"[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\nseq = 4\nbatch = 1\n"
	"[run a]\nrecipe = bf16\n"
	"[check replicas]\nkind = ranks_agree\na = a\n";

/* ---- bitwise ---- */

struct seen_checks {
	int n;
	char name[16][LKS_NAME_MAX], verdict[16][32], tensor[16][128], field[16][32];
	int step[16], rank[16];
	lks_value_type type[16];
	int64_t ia[16], ib[16];
	int64_t run_a[16], run_b[16];
};

static int collect_check(void *arg, const lks_check_rec *r)
{
	struct seen_checks *s = arg;

	if (s->n < 16) {
		snprintf(s->name[s->n], LKS_NAME_MAX, "%s", r->check_name);
		snprintf(s->verdict[s->n], 32, "%s", r->verdict);
		snprintf(s->tensor[s->n], 128, "%s", r->tensor ? r->tensor : "");
		snprintf(s->field[s->n], 32, "%s", r->field ? r->field : "");
		s->step[s->n] = r->step;
		s->rank[s->n] = r->rank;
		s->type[s->n] = r->type;
		s->ia[s->n] = r->ivalue_a;
		s->ib[s->n] = r->ivalue_b;
		s->run_a[s->n] = r->run_a;
		s->run_b[s->n] = r->run_b;
		s->n++;
	}
	return 0;
}

static int find_seen(const struct seen_checks *s, const char *name)
{
	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->name[i], name))
			return i;
	cr_assert_fail("no stored verdict for '%s'", name);
	return -1;
}

Test(check, bitwise_names_an_altered_hash)
{
	struct fx f;
	lks_check_cfg k;
	lks_check_result r;
	lks_check_tally t = { 0 };
	struct seen_checks seen = { 0 };
	const char *tname = "blocks.0.mlp.up.weight.grad";
	char *out = NULL;
	size_t outlen = 0;
	FILE *mem;
	int seq, i;
	uint64_t h;

	fx_setup(&f);
	k = check_of(&f, "same");
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	cr_assert_eq(r.failed, 0);

	seq = seq_of(&f, "b", tname, "backward");
	h = stat_of(&f, "a", 1, 1, seq).hash;
	cr_assert_eq(stat_of(&f, "b", 1, 1, seq).hash, h);
	bump_hash(&f, "b", 1, 1, seq);
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	expect_at(&r, 1, 1, tname, LKS_PHASE_BACKWARD);
	cr_assert_str_eq(r.field, "hash");
	cr_assert_eq(r.value_type, LKS_VALUE_INT);
	cr_assert_eq((uint64_t)r.ia, h);
	cr_assert_eq((uint64_t)r.ib, h + 1);
	cr_assert_eq(r.ulp, -1, "a hash has no ULP distance");
	cr_assert(strstr(r.message, tname) && strstr(r.message, "step 1") && strstr(r.message, "rank 1"),
	          "%s", r.message);

	/* the whole case: printed, stored, counted */
	mem = open_memstream(&out, &outlen);
	cr_assert_not_null(mem);
	cr_assert_eq(lks_check_case(f.s, f.suite, &f.c, f.ids, NULL, mem, &t), 0, "%s", lks_errmsg());
	fclose(mem);
	cr_assert_eq(t.total, 7);
	cr_assert_eq(t.failed, 1, "%s", out);
	cr_assert_eq(t.passed, 5, "%s", out);
	cr_assert_eq(t.unsupported, 1, "%s", out);
	cr_assert_eq(t.expected_fail + t.skipped, 0);
	cr_assert_not_null(strstr(out, "unsupported"), "%s", out);
	{
		char *line = strstr(out, "same ");

		cr_assert_not_null(line, "%s", out);
		cr_assert(strstr(line, "FAIL") && strstr(line, tname) < strchr(line, '\n'), "%s", out);
	}
	cr_assert_eq(lks_store_get_checks(f.s, f.suite, collect_check, &seen), 0, "%s", lks_errmsg());
	cr_assert_eq(seen.n, 7);
	i = find_seen(&seen, "same");
	cr_assert_str_eq(seen.verdict[i], "fail");
	cr_assert_eq(seen.step[i], 1);
	cr_assert_eq(seen.rank[i], 1);
	cr_assert_str_eq(seen.tensor[i], tname);
	cr_assert_str_eq(seen.field[i], "hash");
	cr_assert_eq(seen.type[i], LKS_VALUE_INT);
	cr_assert_eq((uint64_t)seen.ia[i], h);
	cr_assert_eq((uint64_t)seen.ib[i], h + 1);
	cr_assert_eq(seen.run_a[i], id_of(&f, "a"));
	cr_assert_eq(seen.run_b[i], id_of(&f, "b"));
	i = find_seen(&seen, "sq");
	cr_assert_str_eq(seen.verdict[i], "unsupported");
	i = find_seen(&seen, "finite");
	cr_assert_str_eq(seen.verdict[i], "pass");
	cr_assert_eq(seen.step[i], -1);
	cr_assert_eq(seen.run_b[i], 0);
	free(out);
	fx_teardown(&f);
}

Test(check, bitwise_names_field_values_and_errors)
{
	struct fx f;
	lks_check_cfg k;
	lks_check_result r;
	int seq;
	double l2, up;
	float amax, amax_up;

	fx_setup(&f);
	k = check_of(&f, "same");
	seq = seq_of(&f, "a", "head.logits", "forward");
	l2 = stat_of(&f, "b", 2, 0, seq).l2;
	up = nextafter(l2, INFINITY);
	set_stat(&f, "b", 2, 0, seq, "l2", up);
	r = eval(&f, &k);
	expect_at(&r, 2, 0, "head.logits", LKS_PHASE_FORWARD);
	cr_assert_str_eq(r.field, "l2");
	cr_assert_eq(r.value_type, LKS_VALUE_REAL);
	cr_assert_eq(r.value_f32, 0);
	cr_assert(r.a == l2 && r.b == up, "%.17g %.17g", r.a, r.b);
	cr_assert(r.abs_err == up - l2, "%g", r.abs_err);
	cr_assert(r.rel_err == (up - l2) / up, "%g", r.rel_err);
	cr_assert_eq(r.ulp, 1);

	/* a float field: the ULP distance counts floats, not doubles */
	set_stat(&f, "b", 2, 0, seq, "l2", l2);
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_PASS);
	seq = seq_of(&f, "a", "blocks.0.mlp.down.fwd.x", "forward");
	amax = stat_of(&f, "a", 0, 1, seq).amax;
	amax_up = nextafterf(nextafterf(amax, INFINITY), INFINITY);
	set_stat(&f, "a", 0, 1, seq, "amax", amax_up);
	r = eval(&f, &k);
	expect_at(&r, 0, 1, "blocks.0.mlp.down.fwd.x", LKS_PHASE_FORWARD);
	cr_assert_str_eq(r.field, "amax");
	cr_assert_eq(r.value_f32, 1);
	cr_assert(r.a == amax_up && r.b == amax);
	cr_assert_eq(r.ulp, 2);
	cr_assert(r.abs_err == (double)amax_up - amax);
	fx_teardown(&f);
}

Test(check, bitwise_first_divergence_wins)
{
	struct fx f;
	lks_check_cfg k;
	lks_check_result r;
	int early, late;

	fx_setup(&f);
	k = check_of(&f, "same");
	early = seq_of(&f, "a", "blocks.0.norm.out", "forward");
	late = seq_of(&f, "a", "head.weight.grad", "backward");
	cr_assert_lt(early, late);
	/* an earlier step wins over an earlier tensor and a lower rank */
	bump_hash(&f, "a", 2, 0, early);
	bump_hash(&f, "a", 1, 1, late);
	r = eval(&f, &k);
	expect_at(&r, 1, 1, "head.weight.grad", LKS_PHASE_BACKWARD);
	/* same step and tensor: the lower rank */
	bump_hash(&f, "b", 1, 0, late);
	r = eval(&f, &k);
	expect_at(&r, 1, 0, "head.weight.grad", LKS_PHASE_BACKWARD);
	/* same step: the earlier tensor, though on a higher rank */
	bump_hash(&f, "b", 1, 1, early);
	r = eval(&f, &k);
	expect_at(&r, 1, 1, "blocks.0.norm.out", LKS_PHASE_FORWARD);
	cr_assert_str_eq(r.field, "hash");
	fx_teardown(&f);
}

/* ---- ranks_agree, recompute ---- */

/* Two replicas that differ: neither is named alone, both are, whichever was changed; and
   an expected rank cannot be matched by a pair. */
Test(check, ranks_agree_two_ranks_name_the_pair)
{
	struct fx f;
	lks_check_cfg k;
	lks_check_result r;
	const char *tname = "blocks.0.mlp.up.weight";
	int seq;
	uint64_t h0;

	fx_setup(&f);
	k = check_of(&f, "replicas");
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	seq = seq_of(&f, "a", tname, "update");
	h0 = stat_of(&f, "a", 1, 0, seq).hash;
	cr_assert_eq(stat_of(&f, "a", 1, 1, seq).hash, h0, "replicas differ before the change");
	bump_hash(&f, "a", 1, 1, seq);
	/* a later step on rank 1 too, and a gradient (not a parameter) at step 0 */
	bump_hash(&f, "a", 2, 1, seq_of(&f, "a", "head.weight", "update"));
	bump_hash(&f, "a", 0, 1, seq_of(&f, "a", "head.weight.grad", "backward"));
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	expect_at(&r, 1, -1, tname, LKS_PHASE_UPDATE);
	cr_assert_str_eq(r.field, "hash");
	cr_assert_eq((uint64_t)r.ia, h0);
	cr_assert_eq((uint64_t)r.ib, h0 + 1);
	cr_assert(strstr(r.message, "rank 0=") && strstr(r.message, "rank 1="), "%s", r.message);
	cr_assert_not_null(strstr(r.message, "ranks 0 and 1 disagree"), "%s", r.message);
	cr_assert_not_null(strstr(r.message, "a golden or a clean run decides"), "%s", r.message);

	/* rank 0 changed instead: the same words, no rank blamed */
	sql(&f, "UPDATE stats SET hash = (SELECT hash FROM stats WHERE run_id = %lld AND step = 1 "
	    "AND rank = 0 AND seq = %d) WHERE run_id = %lld AND step = 1 AND rank = 1 AND seq = %d",
	    (long long)id_of(&f, "a"), seq, (long long)id_of(&f, "a"), seq);
	bump_hash(&f, "a", 1, 0, seq);
	r = eval(&f, &k);
	expect_at(&r, 1, -1, tname, LKS_PHASE_UPDATE);
	cr_assert_not_null(strstr(r.message, "ranks 0 and 1 disagree"), "%s", r.message);

	/* expect = fail: at the step and tensor it is found; a rank it cannot be */
	k.expect_fail = 1;
	k.exp_step = 1;
	snprintf(k.exp_tensor, sizeof(k.exp_tensor), "%s", tname);
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_EXPECTED_FAIL);
	k.exp_rank = 0;
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", r.message);
	cr_assert_not_null(strstr(r.message, "expected to fail at step 1"), "%s", r.message);
	fx_teardown(&f);
}

/* Three replicas: the one that disagrees with the other two is named, rank 0 as well as
   any other; three different values have no majority. Stored as found. */
Test(check, ranks_agree_names_the_rank_against_the_majority)
{
	struct fx f;
	lks_check_cfg k;
	lks_check_result r;
	lks_check_tally t = { 0 };
	struct seen_checks seen = { 0 };
	const char *tname = "blocks.0.mlp.down.weight";
	int seq, i;
	double l2;

	fx_setup_text(&f, three_ranks_text);
	k = check_of(&f, "replicas");
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	seq = seq_of(&f, "a", tname, "update");
	l2 = stat_of(&f, "a", 1, 0, seq).l2;

	/* rank 0 is the faulty one: comparing with rank 0 would blame rank 1 */
	set_stat(&f, "a", 1, 0, seq, "l2", 2.0 * l2);
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	expect_at(&r, 1, 0, tname, LKS_PHASE_UPDATE);
	cr_assert_str_eq(r.field, "l2");
	cr_assert(r.a == 2.0 * l2 && r.b == l2, "%.17g %.17g", r.a, r.b);
	cr_assert(strstr(r.message, "rank 0=") && strstr(r.message, "majority="), "%s", r.message);
	cr_assert_not_null(strstr(r.message, "rank 0 disagrees with the other 2 of 3 ranks"), "%s",
	                   r.message);
	k.expect_fail = 1;
	k.exp_step = 1;
	k.exp_rank = 0;
	snprintf(k.exp_tensor, sizeof(k.exp_tensor), "%s", tname);
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_EXPECTED_FAIL, "%s", eval(&f, &k).message);
	k.exp_rank = 1;
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_FAIL);

	/* stored with its rank: rank 0, not "none" */
	cr_assert_eq(lks_check_case(f.s, f.suite, &f.c, f.ids, NULL, NULL, &t), 0, "%s", lks_errmsg());
	cr_assert_eq(t.failed, 1);
	cr_assert_eq(lks_store_get_checks(f.s, f.suite, collect_check, &seen), 0, "%s", lks_errmsg());
	i = find_seen(&seen, "replicas");
	cr_assert_str_eq(seen.verdict[i], "fail");
	cr_assert_eq(seen.step[i], 1);
	cr_assert_eq(seen.rank[i], 0);
	cr_assert_str_eq(seen.tensor[i], tname);

	/* rank 2 alone */
	set_stat(&f, "a", 1, 0, seq, "l2", l2);
	set_stat(&f, "a", 1, 2, seq, "l2", 3.0 * l2);
	k.exp_rank = -1;
	r = eval(&f, &k);
	expect_at(&r, 1, 2, tname, LKS_PHASE_UPDATE);
	cr_assert(r.a == 3.0 * l2 && r.b == l2);

	/* three different values: no majority, no rank, all three named */
	set_stat(&f, "a", 1, 1, seq, "l2", 2.0 * l2);
	r = eval(&f, &k);
	expect_at(&r, 1, -1, tname, LKS_PHASE_UPDATE);
	cr_assert_not_null(strstr(r.message, "no majority among ranks 0 to 2"), "%s", r.message);
	cr_assert(strstr(r.message, "rank 0=") && strstr(r.message, "rank 1="), "%s", r.message);
	fx_teardown(&f);
}

struct ints {
	const int *v;
	int calls;
};

static int same_int(void *arg, int i, int j)
{
	struct ints *x = arg;

	x->calls++;
	return x->v[i] == x->v[j];
}

/* The vote on its own: a value held by more than half, wherever it stands, else -1. */
Test(check, majority_vote)
{
	static const struct { int n, v[7], winner; } cases[] = {
		{ 1, { 5 }, 5 },
		{ 2, { 4, 4 }, 4 },
		{ 2, { 1, 2 }, -1 },              /* a pair that differs has no majority */
		{ 3, { 9, 2, 2 }, 2 },            /* the first is the odd one */
		{ 3, { 2, 9, 2 }, 2 },
		{ 3, { 2, 2, 9 }, 2 },
		{ 3, { 1, 2, 3 }, -1 },
		{ 4, { 1, 1, 2, 2 }, -1 },        /* a tie */
		{ 4, { 1, 2, 2, 2 }, 2 },
		{ 5, { 3, 1, 3, 2, 3 }, 3 },      /* the most common, and more than half */
		{ 5, { 1, 2, 1, 2, 3 }, -1 },     /* the most common, but not more than half */
		{ 7, { 8, 8, 8, 1, 2, 3, 4 }, -1 },
		{ 7, { 1, 8, 2, 8, 3, 8, 8 }, 8 },
	};

	cr_assert_eq(lks_majority(0, same_int, &(struct ints){ NULL, 0 }), -1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ints x = { cases[i].v, 0 };
		int m = lks_majority(cases[i].n, same_int, &x);

		if (cases[i].winner < 0) {
			cr_assert_eq(m, -1, "case %zu: %d", i, m);
		} else {
			cr_assert(m >= 0 && m < cases[i].n, "case %zu: %d", i, m);
			cr_assert_eq(cases[i].v[m], cases[i].winner, "case %zu", i);
		}
		cr_assert_leq(x.calls, 2 * cases[i].n, "case %zu: %d comparisons", i, x.calls);
	}
}

Test(check, recompute_names_the_row)
{
	struct fx f;
	lks_check_cfg k, neutral;
	lks_check_result r;
	const char *tname = "blocks.0.mlp.act.out";
	int rseq, fseq;
	double l2;

	fx_setup(&f);
	k = check_of(&f, "recomputed");
	neutral = check_of(&f, "ac_neutral");
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	r = eval(&f, &neutral);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "checkpointed vs plain: %s", r.message);

	rseq = seq_of(&f, "ac", tname, "recompute");
	fseq = seq_of(&f, "ac", tname, "forward");
	cr_assert_gt(rseq, fseq);
	l2 = stat_of(&f, "ac", 2, 1, rseq).l2;
	set_stat(&f, "ac", 2, 1, rseq, "l2", 2.0 * l2);
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	expect_at(&r, 2, 1, tname, LKS_PHASE_RECOMPUTE);
	cr_assert_str_eq(r.field, "l2");
	cr_assert(r.a == 2.0 * l2 && r.b == stat_of(&f, "ac", 2, 1, fseq).l2);
	cr_assert(strstr(r.message, "recompute=") && strstr(r.message, "forward="), "%s", r.message);
	/* bitwise leaves recompute rows alone: the plain run has none to hold them against */
	r = eval(&f, &neutral);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	/* a forward row changed: both checks see it */
	set_stat(&f, "ac", 2, 1, rseq, "l2", l2);
	bump_hash(&f, "ac", 1, 0, fseq);
	r = eval(&f, &k);
	expect_at(&r, 1, 0, tname, LKS_PHASE_RECOMPUTE);
	r = eval(&f, &neutral);
	expect_at(&r, 1, 0, tname, LKS_PHASE_FORWARD);
	fx_teardown(&f);
}

/* ---- finite ---- */

Test(check, finite_names_the_first_nonfinite)
{
	struct fx f;
	lks_check_cfg k;
	lks_check_result r;
	const char *tname = "blocks.0.mlp.up.out.grad";
	int seq;

	fx_setup(&f);
	k = check_of(&f, "finite");
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	seq = seq_of(&f, "a", tname, "backward");
	cr_assert_eq(sql(&f, "UPDATE stats SET nonfinite = 3 WHERE run_id = %lld AND step = 1 "
	                 "AND rank = 1 AND seq = %d", (long long)id_of(&f, "a"), seq), 1);
	sql(&f, "UPDATE stats SET nonfinite = 1 WHERE run_id = %lld AND step = 2 AND seq = 0",
	    (long long)id_of(&f, "a"));
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	expect_at(&r, 1, 1, tname, LKS_PHASE_BACKWARD);
	cr_assert_str_eq(r.field, "nonfinite");
	cr_assert_eq(r.ia, 3);
	cr_assert_not_null(strstr(r.message, "nonfinite 3"), "%s", r.message);

	/* a NaN loss (stored as NULL) with every tensor finite */
	sql(&f, "UPDATE stats SET nonfinite = 0 WHERE run_id = %lld", (long long)id_of(&f, "a"));
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_PASS);
	sql(&f, "UPDATE steps SET loss = NULL WHERE run_id = %lld AND step = 2 AND rank = 1",
	    (long long)id_of(&f, "a"));
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	cr_assert_eq(r.step, 2);
	cr_assert_eq(r.rank, 1);
	cr_assert_str_eq(r.tensor, "");
	cr_assert_str_eq(r.field, "loss");
	cr_assert(isnan(r.a));
	fx_teardown(&f);
}

/* ---- expect = fail, unexpected pass, skipped ---- */

Test(check, expect_fail_verdicts)
{
	struct fx f;
	lks_check_cfg k;
	lks_check_result r;
	lks_check_tally t = { 0 };
	struct seen_checks seen = { 0 };
	const char *tname = "final_norm.in.grad";
	int64_t ids[8];
	int seq;

	fx_setup(&f);
	seq = seq_of(&f, "a", tname, "backward");
	bump_hash(&f, "b", 1, 1, seq);
	k = check_of(&f, "same");
	k.expect_fail = 1;
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_EXPECTED_FAIL, "no location given: %s", r.message);
	expect_at(&r, 1, 1, tname, LKS_PHASE_BACKWARD);
	k.exp_step = 1;
	k.exp_rank = 1;
	snprintf(k.exp_tensor, sizeof(k.exp_tensor), "%s", tname);
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_EXPECTED_FAIL);
	k.exp_step = 2;
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "wrong step");
	cr_assert(strstr(r.message, "expected") && strstr(r.message, "step 2"), "%s", r.message);
	k.exp_step = 1;
	k.exp_rank = 0;
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_FAIL, "wrong rank");
	k.exp_rank = -1;
	snprintf(k.exp_tensor, sizeof(k.exp_tensor), "head.weight.grad");
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_FAIL, "wrong tensor");
	snprintf(k.exp_tensor, sizeof(k.exp_tensor), "%s", tname);
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_EXPECTED_FAIL, "step and tensor only");

	k = check_of(&f, "ac_neutral");
	k.expect_fail = 1;
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_UNEXPECTED_PASS);
	cr_assert_eq(r.failed, 0);

	/* counted over a case: expected failure apart, unexpected pass as a failure */
	for (int i = 0; i < f.c.nchecks; i++) {
		lks_check_cfg *c = &f.c.checks[i];

		if (!strcmp(c->name, "same")) {
			c->expect_fail = 1;
			c->exp_step = 1;
			snprintf(c->exp_tensor, sizeof(c->exp_tensor), "%s", tname);
		} else if (!strcmp(c->name, "replicas")) {
			c->expect_fail = 1;
		}
	}
	cr_assert_eq(lks_check_case(f.s, f.suite, &f.c, f.ids, NULL, NULL, &t), 0, "%s", lks_errmsg());
	cr_assert_eq(t.total, 7);
	cr_assert_eq(t.expected_fail, 1);
	cr_assert_eq(t.failed, 1);
	cr_assert_eq(t.passed, 4);
	cr_assert_eq(t.unsupported, 1);
	cr_assert_eq(lks_store_get_checks(f.s, f.suite, collect_check, &seen), 0);
	cr_assert_str_eq(seen.verdict[find_seen(&seen, "same")], "expected_fail");
	cr_assert_eq(seen.step[find_seen(&seen, "same")], 1);
	cr_assert_str_eq(seen.verdict[find_seen(&seen, "replicas")], "unexpected_pass");

	/* run b not run: the checks that need it are skipped, the others evaluated */
	memcpy(ids, f.ids, sizeof(ids));
	ids[lks_case_run(&f.c, "b") - f.c.runs] = 0;
	memset(&t, 0, sizeof(t));
	cr_assert_eq(lks_check_case(f.s, f.suite, &f.c, ids, NULL, NULL, &t), 0, "%s", lks_errmsg());
	cr_assert_eq(t.skipped, 1);
	cr_assert_eq(t.total, 7);
	cr_assert_eq(t.failed, 1, "the unexpected pass of 'replicas' again");
	fx_teardown(&f);
}

/* A string read back into a check's field: NULL is none, which the case keeps as "";
   "" itself is never stored. */
static void put_text(char *dst, size_t size, const char *stored, const char *what)
{
	cr_assert(!stored || stored[0], "%s: \"\" stored for none", what);
	snprintf(dst, size, "%s", stored ? stored : "");
}

struct params_seen {
	int n;
	lks_check_cfg k[8];       /* each verdict's parameters, put back into a check */
};

static int collect_params(void *arg, const lks_check_rec *r)
{
	struct params_seen *s = arg;
	lks_check_cfg *k = &s->k[s->n++];

	cr_assert_lt(s->n, 8);
	cr_assert_not_null(r->params.expect, "'%s' stored without its parameters", r->check_name);
	snprintf(k->name, sizeof(k->name), "%s", r->check_name);
	cr_assert_eq(lks_check_kind_parse(r->kind, &k->kind), 0, "%s", r->kind);
	put_text(k->a, sizeof(k->a), r->params.a, "a");
	put_text(k->b, sizeof(k->b), r->params.b, "b");
	put_text(k->metric, sizeof(k->metric), r->params.metric, "metric");
	put_text(k->tensors, sizeof(k->tensors), r->params.tensors, "tensors");
	put_text(k->exp_tensor, sizeof(k->exp_tensor), r->params.exp_tensor, "tensor");
	k->rtol = r->params.rtol;
	k->atol = r->params.atol;
	k->floor_db = r->params.floor_db;
	k->expect_fail = strcmp(r->params.expect, "fail") == 0;
	k->exp_step = r->params.exp_step;
	k->exp_rank = r->params.exp_rank;
	return 0;
}

/* A check's parameters are stored with its verdict, as the case has them (its defaults
   included), so that the report and diff read them back instead of parsing the case; a
   check not run (skipped) keeps them too. */
Test(check, verdicts_stored_with_their_parameters)
{
	static const char text[] =
		"[case]\nsteps = 3\nseed = 7\nworld_size = 2\n"
		"[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\nseq = 4\nbatch = 2\n"
		"[run a]\nrecipe = fp8_rowwise\n"
		"[run b]\nrecipe = bf16\n"
		"[check tracks]\nkind = close\na = a\nb = b\nmetric = l2\n"
		"tensors = blocks.*.mlp.up.weight.grad\nrtol = 0.05\natol = 1e-7\n"
		"[check loss]\nkind = close\na = a\nb = b\n"
		"[check same]\nkind = bitwise\na = a\nb = b\nexpect = fail\nstep = 1\nrank = 1\n"
		"tensor = final_norm.in.grad\n"
		"[check sq]\nkind = sqnr\na = a\nb = b\nfloor_db = 20.5\n"
		"[check finite]\nkind = finite\na = a\n";
	char dir[] = "/tmp/lks-test-check-XXXXXX", path[128], cmd[160];
	int64_t ids[2] = { 0, 0 }, suite;
	struct params_seen seen = { 0 };
	lks_check_tally t = { 0 };
	lks_store *s;
	lks_case c;
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/params.ini", dir);
	cr_assert_not_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
	cr_assert_eq(lks_case_load(path, NULL, 0, &c), 0, "%s", lks_errmsg());
	snprintf(path, sizeof(path), "%s/t.db", dir);
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_begin_suite(s, "test", &suite), 0, "%s", lks_errmsg());
	/* no run stored: every check is skipped, and stored with its parameters */
	cr_assert_eq(lks_check_case(s, suite, &c, ids, NULL, NULL, &t), 0, "%s", lks_errmsg());
	cr_assert_eq(t.skipped, c.nchecks);
	cr_assert_eq(lks_store_get_checks(s, suite, collect_params, &seen), 0, "%s", lks_errmsg());
	cr_assert_eq(seen.n, c.nchecks);
	for (int i = 0; i < c.nchecks; i++) {
		const lks_check_cfg *want = &c.checks[i], *got = &seen.k[i];

		cr_assert_str_eq(got->name, want->name);
		cr_assert_eq(got->kind, want->kind, "%s", want->name);
		cr_assert_str_eq(got->a, want->a, "%s", want->name);
		cr_assert_str_eq(got->b, want->b, "%s", want->name);
		cr_assert_str_eq(got->metric, want->metric, "%s", want->name);
		cr_assert_str_eq(got->tensors, want->tensors, "%s", want->name);
		cr_assert_str_eq(got->exp_tensor, want->exp_tensor, "%s", want->name);
		/* bit for bit: a tolerance read back is the one the check used */
		cr_assert_eq(memcmp(&got->rtol, &want->rtol, sizeof(double)), 0, "%s", want->name);
		cr_assert_eq(memcmp(&got->atol, &want->atol, sizeof(double)), 0, "%s", want->name);
		cr_assert_eq(memcmp(&got->floor_db, &want->floor_db, sizeof(double)), 0, "%s",
		             want->name);
		cr_assert_eq(got->expect_fail, want->expect_fail, "%s", want->name);
		cr_assert_eq(got->exp_step, want->exp_step, "%s", want->name);
		cr_assert_eq(got->exp_rank, want->exp_rank, "%s", want->name);
	}
	/* what the case gave, seen through the comparison above: not all defaults */
	cr_assert_str_eq(seen.k[1].metric, "loss", "the default metric of close");
	cr_assert(seen.k[2].expect_fail && seen.k[2].exp_rank == 1 && seen.k[0].rtol == 0.05
	          && seen.k[3].floor_db == 20.5);
	lks_store_close(s);
	lks_case_release(&c);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}
