/*
 * test_check_close.c: the close check on real traces (check_fixture.h): its tolerances on the
 * loss and the gradient norm, on a tensor statistic (l2, amax, scale) per step, tensor and
 * rank of the tensors a filter names, a NaN that is never close, filters that compare
 * nothing, and the metric and filter validated where the case file is read.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_fixture.h"
#include "harness/engine/case.h"
#include "harness/verify/check.h"
#include "kernels/err.h"

/* ---- close ---- */

Test(check, close_tolerances)
{
	static const struct { double rtol, atol; int pass; } tol[] = {
		{ 0.06, 0.0, 1 },   /* 0.1 <= 0.12 */
		{ 0.04, 0.0, 0 },   /* 0.1 > 0.08 */
		{ 0.0, 0.11, 1 },
		{ 0.0, 0.09, 0 },
		{ 0.03, 0.05, 1 },  /* atol and rtol add: 0.05 + 0.06 */
		{ 0.02, 0.05, 0 },  /* 0.05 + 0.04 */
	};
	struct fx f;
	lks_check_cfg k;
	lks_check_result r;

	fx_setup(&f);
	k = check_of(&f, "tracks");
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "FP8 vs BF16 within 2%%: %s", r.message);

	/* b's loss 2.0 on both ranks; a's 2.0 and 2.2: a step's loss is the mean, 2.1 */
	sql(&f, "UPDATE steps SET loss = 2.0 WHERE run_id = %lld", (long long)id_of(&f, "bf"));
	sql(&f, "UPDATE steps SET loss = 2.0 + 0.2 * rank WHERE run_id = %lld", (long long)id_of(&f, "a"));
	for (size_t i = 0; i < sizeof(tol) / sizeof(tol[0]); i++) {
		k.rtol = tol[i].rtol;
		k.atol = tol[i].atol;
		r = eval(&f, &k);
		cr_assert_eq(r.verdict, tol[i].pass ? LKS_VERDICT_PASS : LKS_VERDICT_FAIL,
		             "rtol %g atol %g: %s", k.rtol, k.atol, r.message);
		if (!tol[i].pass) {
			cr_assert_eq(r.step, 0);
			cr_assert_eq(r.rank, -1);
			cr_assert_str_eq(r.field, "loss");
			/* (2.0 + 2.2) / 2 and 2.2 - 2.0 in double: off by rounding only, far below 1e-12 */
			cr_assert_float_eq(r.a, 2.1, 1e-12);
			cr_assert(r.b == 2.0);
			cr_assert_float_eq(r.abs_err, 0.1, 1e-12);
		}
	}
	/* within tolerance until step 2 */
	k.rtol = 0.06;
	k.atol = 0.0;
	cr_assert_eq(sql(&f, "UPDATE steps SET loss = 3.0 WHERE run_id = %lld AND step = 2",
	                 (long long)id_of(&f, "a")), 2);
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	cr_assert_eq(r.step, 2, "%s", r.message);
	cr_assert(r.a == 3.0 && r.b == 2.0, "%g %g", r.a, r.b);
	cr_assert(strstr(r.message, "step 2") && strstr(r.message, "a=3 ") && strstr(r.message, "bf=2 "),
	          "%s", r.message);

	/* grad_norm, global: the same on every rank */
	k = check_of(&f, "tracks");
	snprintf(k.metric, sizeof(k.metric), "grad_norm");
	snprintf(k.b, sizeof(k.b), "b");
	k.rtol = 0.0;
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "identical runs: %s", r.message);
	sql(&f, "UPDATE steps SET grad_norm = grad_norm * 1.01 WHERE run_id = %lld AND step >= 1",
	    (long long)id_of(&f, "b"));
	r = eval(&f, &k);
	cr_assert_eq(r.step, 1, "%s", r.message);
	cr_assert_str_eq(r.field, "grad_norm");
	/* grad_norm * 1.01 rounds once in SQLite: the relative error is 0.01 / 1.01 to ~1e-16 */
	cr_assert_float_eq(r.rel_err, 0.01 / 1.01, 1e-9);
	k.rtol = 0.011;
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_PASS);

	fx_teardown(&f);
}

/* close on a tensor statistic: per step, tensor and rank, of the tensors the filter names;
   the divergence as bitwise names it, with the tolerance's bound. */
Test(check, close_on_a_tensor_statistic)
{
	struct fx f;
	lks_check_cfg k;
	lks_check_result r;
	const char *tname = "blocks.0.mlp.up.weight.grad";
	int seq, early;
	double l2;

	fx_setup(&f);
	k = check_of(&f, "tracks");
	snprintf(k.b, sizeof(k.b), "b");
	snprintf(k.metric, sizeof(k.metric), "l2");
	snprintf(k.tensors, sizeof(k.tensors), "blocks.*.mlp.up.weight.grad");
	k.rtol = 0.05;
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "identical runs: %s", r.message);

	seq = seq_of(&f, "b", tname, "backward");
	l2 = stat_of(&f, "b", 1, 1, seq).l2;
	set_stat(&f, "b", 1, 1, seq, "l2", 1.1 * l2);
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	expect_at(&r, 1, 1, tname, LKS_PHASE_BACKWARD);
	cr_assert_str_eq(r.field, "l2");
	cr_assert(r.a == l2 && r.b == 1.1 * l2, "%.17g %.17g", r.a, r.b);
	/* |l2 - 1.1 l2| / 1.1 l2 = 0.1 / 1.1, to the rounding of three products (~1e-16) */
	cr_assert_float_eq(r.rel_err, 0.1 / 1.1, 1e-12);
	cr_assert(strstr(r.message, "step 1") && strstr(r.message, tname) && strstr(r.message, "rank 1")
	          && strstr(r.message, "a=") && strstr(r.message, "b=")
	          && strstr(r.message, "rtol 0.05"), "%s", r.message);
	k.rtol = 0.1;  /* 0.1 l2 <= 0.1 * 1.1 l2 */
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_PASS);

	/* a tensor the filter leaves out is not compared; all tensors without a filter, the
	   first (step, tensor, rank) first */
	early = seq_of(&f, "a", "blocks.0.norm.out", "forward");
	cr_assert_lt(early, seq);
	set_stat(&f, "a", 1, 1, early, "l2", 2.0 * stat_of(&f, "a", 1, 1, early).l2);
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_PASS, "filtered out");
	k.tensors[0] = 0;
	r = eval(&f, &k);
	expect_at(&r, 1, 1, "blocks.0.norm.out", LKS_PHASE_FORWARD);

	/* amax: a float, ULPs counted in float */
	snprintf(k.metric, sizeof(k.metric), "amax");
	k.rtol = 0.0;
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "amax untouched: %s", r.message);
	set_stat(&f, "a", 2, 0, seq, "amax", nextafterf(stat_of(&f, "a", 2, 0, seq).amax, INFINITY));
	r = eval(&f, &k);
	expect_at(&r, 2, 0, tname, LKS_PHASE_BACKWARD);
	cr_assert_str_eq(r.field, "amax");
	cr_assert_eq(r.value_f32, 1);
	cr_assert_eq(r.ulp, 1);
	fx_teardown(&f);
}

/* A NaN on either side is never close, however wide the tolerance: a run full of NaN fails
   every tensor statistic (it was "unsupported", a pass in effect). */
Test(check, close_nan_is_never_close)
{
	static const char *const metrics[] = { "l2", "amax", "scale" };
	struct fx f;
	lks_check_cfg k;
	lks_check_result r;
	int seq;

	fx_setup(&f);
	k = check_of(&f, "tracks");
	snprintf(k.b, sizeof(k.b), "b");
	k.rtol = 1e30;
	k.atol = 1e30;
	sql(&f, "UPDATE stats SET l2 = NULL, amax = NULL, scale = NULL, nonfinite = 1 WHERE run_id = %lld",
	    (long long)id_of(&f, "a"));
	for (size_t i = 0; i < 3; i++) {
		snprintf(k.metric, sizeof(k.metric), "%s", metrics[i]);
		r = eval(&f, &k);
		cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s: %s", metrics[i], r.message);
		cr_assert_eq(r.step, 0, "%s", metrics[i]);
		cr_assert(isnan(r.a), "%s: %g", metrics[i], r.a);
	}
	/* one NaN, on b's side, at a late step */
	sql(&f, "UPDATE stats SET l2 = (SELECT s.l2 FROM stats s WHERE s.run_id = %lld AND s.step = "
	    "stats.step AND s.rank = stats.rank AND s.seq = stats.seq), nonfinite = 0 WHERE run_id = %lld",
	    (long long)id_of(&f, "b"), (long long)id_of(&f, "a"));
	snprintf(k.metric, sizeof(k.metric), "l2");
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_PASS, "%s", eval(&f, &k).message);
	seq = seq_of(&f, "a", "head.weight", "update");
	sql(&f, "UPDATE stats SET l2 = NULL WHERE run_id = %lld AND step = 2 AND rank = 1 AND seq = %d",
	    (long long)id_of(&f, "b"), seq);
	r = eval(&f, &k);
	expect_at(&r, 2, 1, "head.weight", LKS_PHASE_UPDATE);
	cr_assert(isnan(r.b));
	fx_teardown(&f);
}

/* scale: only tensors that were quantized have one; a filter that leaves nothing to compare
   is bad input of the case, never a pass. */
Test(check, close_scale_and_filters_that_compare_nothing)
{
	struct fx f;
	lks_check_cfg k;
	lks_check_result r;
	const char *tname = "blocks.0.mlp.up.fwd.x";
	int seq;
	float sc;

	fx_setup(&f);
	k = check_of(&f, "tracks");
	snprintf(k.b, sizeof(k.b), "b");
	snprintf(k.metric, sizeof(k.metric), "scale");
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "tensors without a scale are left out: %s",
	             r.message);
	seq = seq_of(&f, "a", tname, "forward");
	sc = stat_of(&f, "a", 0, 1, seq).scale;
	cr_assert(isfinite(sc) && sc > 0.0f, "%g", sc);
	set_stat(&f, "b", 0, 1, seq, "scale", 2.0 * sc);
	r = eval(&f, &k);
	expect_at(&r, 0, 1, tname, LKS_PHASE_FORWARD);
	cr_assert_str_eq(r.field, "scale");
	cr_assert(r.a == sc && r.b == 2.0f * sc);
	/* a scale lost on one side (NaN where the other run quantized) is a divergence */
	set_stat(&f, "b", 0, 1, seq, "scale", sc);
	sql(&f, "UPDATE stats SET scale = NULL WHERE run_id = %lld AND step = 1 AND rank = 0 AND seq = %d",
	    (long long)id_of(&f, "a"), seq);
	r = eval(&f, &k);
	expect_at(&r, 1, 0, tname, LKS_PHASE_FORWARD);

	/* weight gradients have no scale: nothing to compare */
	snprintf(k.tensors, sizeof(k.tensors), "*.weight.grad");
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	cr_assert_eq(r.bad_input, LKS_BAD_CASE);
	cr_assert_not_null(strstr(r.message, "no tensor with a scale"), "%s", r.message);

	/* a pattern that names no tensor, or only tensors b does not have */
	snprintf(k.metric, sizeof(k.metric), "l2");
	snprintf(k.tensors, sizeof(k.tensors), "blocks.9.*");
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	cr_assert_eq(r.bad_input, LKS_BAD_CASE, "%s", r.message);
	cr_assert_not_null(strstr(r.message, "tensors = blocks.9.* names none of the"), "%s", r.message);
	k.expect_fail = 1;  /* whatever is expected: nothing was compared */
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_FAIL);
	k.expect_fail = 0;
	snprintf(k.b, sizeof(k.b), "bf");
	snprintf(k.tensors, sizeof(k.tensors), "*.fwd.x");
	r = eval(&f, &k);
	cr_assert_eq(r.bad_input, LKS_BAD_CASE);
	cr_assert_not_null(strstr(r.message, "none of which run 'bf' traced"), "%s", r.message);
	/* runs that part before any tensor is reached (other world sizes): that divergence,
	   not the pattern blamed for matching nothing (exit 2 where the runs differ) */
	snprintf(k.b, sizeof(k.b), "b");
	snprintf(k.tensors, sizeof(k.tensors), "blocks.0.*");
	sql(&f, "UPDATE runs SET world_size = 1 WHERE run_id = %lld", (long long)id_of(&f, "b"));
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	cr_assert_eq(r.bad_input, 0, "%s", r.message);
	cr_assert_not_null(strstr(r.message, "world_size"), "%s", r.message);
	fx_teardown(&f);
}

/* The metric's name is checked where it is written; the filter only where it can act. */
Test(check, close_metric_and_filter_validated_at_parse_time)
{
	static const struct { const char *keys, *says; } bad[] = {
		{ "metric = lsos\n", ":17: unknown metric 'lsos' in [check c] (loss, grad_norm, l2, "
		  "amax, scale; an imported run's: any name)" },
		{ "metric = loss\ntensors = blocks.*\n", ":13: check 'c': tensors = blocks.* chooses the "
		  "tensors of a close check on a tensor statistic, not of close on loss" },
		/* a filter that no name of the model matches (up, not upp; one layer, block 0) */
		{ "metric = l2\ntensors = blocks.*.mlp.upp.*\n", ":13: check 'c': tensors = "
		  "blocks.*.mlp.upp.* names no tensor the model traces" },
		{ "metric = l2\ntensors = blocks.1.*\n", ":13: check 'c': tensors = blocks.1.* names "
		  "no tensor the model traces" },
		/* an expected divergence at a tensor the model does not have */
		{ "metric = l2\nexpect = fail\ntensor = blocks.0.mlp.up.outt\n", ":13: check 'c': "
		  "tensor = blocks.0.mlp.up.outt is no tensor the model traces" },
	};
	static const char head[] =
		"[case]\nsteps = 2\nworld_size = 2\n"
		"[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\nseq = 4\nbatch = 1\n";
	char dir[] = "/tmp/lks-test-metric-XXXXXX", path[128], text[1024];
	const char *sets[1];
	lks_case c;
	FILE *cf;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/m.ini", dir);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "%s[run a]\nrecipe = bf16\n[check c]\nkind = close\n"
		         "a = a\nb = a2\n%s[run a2]\nrecipe = bf16\n", head, bad[i].keys);
		cf = fopen(path, "w");
		cr_assert_not_null(cf);
		fputs(text, cf);
		fclose(cf);
		cr_assert_eq(lks_case_load(path, NULL, 0, &c), -1, "%s", bad[i].keys);
		cr_assert_not_null(strstr(lks_errmsg(), bad[i].says), "%s", lks_errmsg());
	}
	/* a good file, then a misspelt metric by --set, and rank on a 2-rank ranks_agree */
	/* filters that name what the model traces: parameters, FP8 operands (traced by FP8
	   runs), gradients, and trace_optimizer's sums and moments (as tensor = takes them) */
	static const char *const good[] = { "*.weight", "blocks.0.mlp.down.fwd.?",
	                                    "blocks.0.mlp.up.weight.grad", "*.adam_v",
	                                    "*.grad_sum", "blocks.0.mlp.up.weight.adam_m" };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {

		snprintf(text, sizeof(text), "%s[run a]\nrecipe = bf16\n[check c]\nkind = close\n"
		         "a = a\nb = a2\nmetric = l2\ntensors = %s\n[run a2]\nrecipe = fp8_rowwise\n",
		         head, good[i]);
		cf = fopen(path, "w");
		cr_assert_not_null(cf);
		fputs(text, cf);
		fclose(cf);
		cr_assert_eq(lks_case_load(path, NULL, 0, &c), 0, "%s: %s", good[i], lks_errmsg());
		lks_case_release(&c);
	}
	snprintf(text, sizeof(text), "%s[run a]\nrecipe = bf16\n[run a2]\nrecipe = bf16\n"
	         "[check c]\nkind = close\na = a\nb = a2\nmetric = amax\ntensors = *.weight\n"
	         "[check r]\nkind = ranks_agree\na = a\nexpect = fail\n", head);
	cf = fopen(path, "w");
	cr_assert_not_null(cf);
	fputs(text, cf);
	fclose(cf);
	cr_assert_eq(lks_case_load(path, NULL, 0, &c), 0, "%s", lks_errmsg());
	cr_assert_str_eq(c.checks[0].tensors, "*.weight");
	lks_case_release(&c);
	sets[0] = "check.c.metric=l2x";
	cr_assert_eq(lks_case_load(path, sets, 1, &c), -1);
	cr_assert_not_null(strstr(lks_errmsg(), "unknown metric 'l2x'"), "%s", lks_errmsg());
	sets[0] = "check.r.rank=0";
	cr_assert_eq(lks_case_load(path, sets, 1, &c), -1);
	cr_assert_not_null(strstr(lks_errmsg(), "ranks_agree on 2 ranks names no single rank"), "%s",
	                   lks_errmsg());
	unlink(path);
	rmdir(dir);
}
