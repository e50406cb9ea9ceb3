/*
 * test_golden.c: golden files (harness/store/golden.h) and the golden check. A tiny case is
 * trained into a store in a temporary folder; its runs are written as golden files, read
 * back and compared: every field must come back bit for bit (NaN scales, hashes with the
 * top bit set, and in a synthetic trace -0, infinities, subnormals). Then the text file is
 * edited as a person would: one changed value must fail the check at exactly that step,
 * rank, tensor and field; a missing file fails naming the command that writes it; a bad
 * file (bad number, missing column, wrong header, cut short, rows out of order) is an error
 * naming file:line; an incomplete run is refused. (Writing a file safely, and the program
 * run as a user would: test_golden_update.c; the fixture: golden_fixture.h.)
 */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "golden_fixture.h"
#include "harness/verify/check.h"
#include "harness/store/golden.h"
#include "harness/verify/golden_compare.h"
#include "harness/store/trace_store.h"
#include "harness/store/trace_store_impl.h"
#include "kernels/err.h"

static const lks_check_cfg *check_of(const struct fx *f, const char *name)
{
	for (int i = 0; i < f->c.nchecks; i++)
		if (!strcmp(f->c.checks[i].name, name))
			return &f->c.checks[i];
	cr_assert_fail("no check '%s'", name);
	return NULL;
}

static lks_check_result eval(struct fx *f, const char *check)
{
	const lks_check_cfg *k = check_of(f, check);
	lks_check_result r;

	cr_assert_eq(lks_check_eval(f->s, k, &f->opts, id_of(f, k->a), 0, &r), 0, "%s",
	             lks_errmsg());
	return r;
}

static void expect_pass(lks_stored_run *run, lks_stored_run *gold)
{
	lks_check_result r;

	lks_check_result_init(&r);
	cr_assert_eq(lks_golden_compare(run, gold, 1, 0, 0, &r), 0);
	cr_assert(!r.failed, "golden compare failed: field %s, step %d: %s", r.field ? r.field : "-",
	          r.step, r.note);
}

/* ---- round trip ---- */

Test(golden, stored_runs_round_trip_exactly)
{
	struct fx f;
	char path[256];
	int nan_scales = 0, top_bit = 0;

	fx_setup(&f);
	for (int i = 0; i < f.c.nruns; i++) {
		lks_stored_run run, back;

		write_golden(&f, f.c.runs[i].name, path, sizeof(path));
		load_whole(&f, f.ids[i], &run);
		cr_assert_eq(lks_golden_read(path, &back), 0, "%s", lks_errmsg());
		cr_assert_gt(run.nstats, 0);
		cr_assert_eq(run.nsteprows, 3 * 2);
		for (size_t j = 0; j < run.nstats; j++) {
			nan_scales += isnan(run.stats[j].scale);
			top_bit += run.stats[j].hash >> 63 != 0;
		}
		expect_equal(&run, &back);
		expect_pass(&run, &back);
		cr_assert_str_eq(back.version, "0.1.0 abc");
		cr_assert_str_eq(back.isa, "avx2");
		lks_stored_run_release(&run);
		lks_stored_run_release(&back);
	}
	cr_assert_gt(nan_scales, 0, "no NaN scale was exercised");
	cr_assert_gt(top_bit, 0, "no hash with the top bit set was exercised");
	fx_teardown(&f);
}

/* Values a stored run does not give (norms and scales are >= 0 and finite in healthy runs),
   but that the format must carry: -0, infinities, subnormals, extremes, NaN, all-ones hash. */
Test(golden, extreme_values_round_trip_exactly)
{
	char dir[] = "/tmp/lks-test-golden-x-XXXXXX", path[128], cmd[160];
	char *names[] = { "w", "w.grad" };
	lks_phase phases[] = { LKS_PHASE_FORWARD, LKS_PHASE_BACKWARD };
	double d[] = { -0.0, 0.0, INFINITY, -INFINITY, NAN, DBL_MIN / 4, DBL_MAX, 0.1, -1e-300 };
	float fl[] = { -0.0f, FLT_TRUE_MIN, FLT_MAX, INFINITY, NAN, 0.1f, 448.0f, 3e-41f, 1.0f };
	enum { N = sizeof(d) / sizeof(d[0]) };
	lks_stored_run g, back;

	cr_assert_not_null(mkdtemp(dir));
	lks_stored_run_init(&g);
	g.case_name = strdup("c");
	g.run_name = strdup("r");
	g.recipe = strdup("bf16");
	g.backend = strdup("cpu");
	g.options = strdup("");
	g.status = strdup("complete");
	g.W = 1;
	g.steps = N;
	g.seed = UINT64_MAX;
	for (int s = 0; s < 2; s++)
		cr_assert_eq(lks_stored_run_add_tensor(&g, s, names[s], phases[s]), 0);
	for (int i = 0; i < N; i++) {
		lks_step_row step = { .step = i, .loss = d[i], .grad_norm = d[(i + 1) % N],
		                      .lr = d[(i + 2) % N] };

		cr_assert_eq(lks_stored_run_push_steprow(&g, &step), 0);
		for (int s = 0; s < 2; s++) {
			lks_stat_row stat = {
				.step = i, .seq = s, .l2 = d[(i + s) % N], .amax = fl[i], .scale = fl[(i + 4) % N],
				.nonfinite = i, .underflow = INT64_MAX - i, .saturated = s,
				.hash = s ? UINT64_MAX - (uint64_t)i : (uint64_t)i << 60 };

			cr_assert_eq(lks_stored_run_push_stat(&g, &stat), 0);
		}
	}
	snprintf(path, sizeof(path), "%s/cpu/c/r.tsv", dir);
	cr_assert_eq(lks_golden_write(&g, path), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_golden_read(path, &back), 0, "%s", lks_errmsg());
	expect_equal(&g, &back);
	expect_pass(&g, &back);
	cr_assert(signbit(back.steprows[0].loss) && back.steprows[0].loss == 0, "-0 lost");
	cr_assert(signbit(back.stats[0].amax), "-0f lost");
	lks_stored_run_release(&back);
	lks_stored_run_release(&g);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

/* What the store gives back for -0 decides whether it can reach a golden file: SQLite
   (3.40) keeps a REAL with no fraction as an integer, so -0 comes back +0. Whatever it gives,
   the golden of that run must read back equal. */
Test(golden, negative_zero_from_the_store)
{
	struct fx f;
	char path[256];
	lks_stored_run run, back;
	sqlite3_stmt *st;

	fx_setup(&f);
	cr_assert_eq(sqlite3_prepare_v2(lks_store_db(f.s), "UPDATE steps SET lr = ?1 WHERE run_id = ?2 "
	                                "AND step = 1 AND rank = 0", -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_double(st, 1, -0.0);
	sqlite3_bind_int64(st, 2, id_of(&f, "a"));
	cr_assert_eq(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	write_golden(&f, "a", path, sizeof(path));
	load_whole(&f, id_of(&f, "a"), &run);
	cr_assert_eq(lks_golden_read(path, &back), 0, "%s", lks_errmsg());
	cr_assert_eq(run.steprows[2].lr, 0.0);  /* step 1, rank 0 */
	cr_assert_eq(!!signbit(back.steprows[2].lr), !!signbit(run.steprows[2].lr));
	expect_equal(&run, &back);
	lks_stored_run_release(&run);
	lks_stored_run_release(&back);
	fx_teardown(&f);
}

/* ---- the check ---- */

Test(golden, check_passes_on_its_own_run)
{
	struct fx f;
	char path[256];
	lks_check_result r;

	fx_setup(&f);
	write_golden(&f, "a", path, sizeof(path));
	write_golden(&f, "bf", path, sizeof(path));
	r = eval(&f, "gold");
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	r = eval(&f, "gold_bf");
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	fx_teardown(&f);
}

/* One value changed in the text: the check fails there, with both values and the field. */
Test(golden, an_edited_value_fails_at_exactly_that_place)
{
	struct fx f;
	char path[256], prefix[64], buf[64], name[128];
	struct text t;
	lks_check_result r;
	lks_stored_run run;
	int seq = 3, i;
	float amax;

	fx_setup(&f);
	write_golden(&f, "a", path, sizeof(path));
	load_whole(&f, id_of(&f, "a"), &run);
	cr_assert_gt(run.nt, seq);
	snprintf(name, sizeof(name), "%s", run.names[seq]);
	text_read(&t, path);

	/* amax of step 1, rank 1, seq 3: one ULP up */
	snprintf(prefix, sizeof(prefix), "1\t1\t%d\t", seq);
	i = text_find(&t, prefix);
	amax = strtof(text_col(&t, i, 6, buf, sizeof(buf)), NULL);
	snprintf(buf, sizeof(buf), "%.9g", (double)nextafterf(amax, INFINITY));
	text_set(&t, i, 6, buf);
	text_write(&t, path, t.n, -1);
	r = eval(&f, "gold");
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	cr_assert_eq(r.step, 1, "%s", r.message);
	cr_assert_eq(r.rank, 1, "%s", r.message);
	cr_assert_str_eq(r.tensor, name, "%s", r.message);
	cr_assert_str_eq(r.field, "amax", "%s", r.message);
	cr_assert_eq((float)r.a, amax);
	cr_assert_eq((float)r.b, nextafterf(amax, INFINITY));
	cr_assert_eq(r.ulp, 1, "%s", r.message);
	cr_assert_not_null(strstr(r.message, "golden="), "%s", r.message);

	/* also the loss of step 0, rank 1: an earlier step wins */
	i = text_find(&t, "0\t1\t");
	text_set(&t, i, 2, "1.5");
	text_write(&t, path, t.n, -1);
	r = eval(&f, "gold");
	cr_assert_eq(r.step, 0, "%s", r.message);
	cr_assert_eq(r.rank, 1, "%s", r.message);
	cr_assert_str_eq(r.tensor, "", "%s", r.message);
	cr_assert_str_eq(r.field, "loss", "%s", r.message);
	cr_assert_eq(r.b, 1.5);
	text_free(&t);

	/* a hash alone, at step 2, rank 0, the last tensor */
	write_golden(&f, "a", path, sizeof(path));
	text_read(&t, path);
	snprintf(prefix, sizeof(prefix), "2\t0\t%d\t", run.nt - 1);
	i = text_find(&t, prefix);
	text_set(&t, i, 11, "ffffffffffffffff");
	text_write(&t, path, t.n, -1);
	r = eval(&f, "gold");
	cr_assert_eq(r.step, 2, "%s", r.message);
	cr_assert_eq(r.rank, 0, "%s", r.message);
	cr_assert_str_eq(r.tensor, run.names[run.nt - 1], "%s", r.message);
	cr_assert_str_eq(r.field, "hash", "%s", r.message);
	cr_assert_eq((uint64_t)r.ib, UINT64_MAX);
	text_free(&t);
	lks_stored_run_release(&run);
	fx_teardown(&f);
}

/* A golden that stored fewer steps than the run (its last step's rows cut, the counts
   kept true): the walk parts at the first step the golden lacks, as two runs of different
   lengths part, and says so. */
Test(golden, a_shorter_golden_parts_at_the_step_it_lacks)
{
	struct fx f;
	char path[256], end[64];
	struct text t, u = { .n = 0 };
	lks_check_result r;
	int section = 0, rows[3] = { 0 };

	fx_setup(&f);
	write_golden(&f, "a", path, sizeof(path));
	text_read(&t, path);
	for (int i = 0; i < t.n; i++) {
		section += !strncmp(t.line[i], "step\t", 5);  /* 1: step rows, 2: stats rows */
		if (!strncmp(t.line[i], "2\t", 2))
			continue;  /* a row of step 2 */
		rows[section] += t.line[i][0] >= '0' && t.line[i][0] <= '9';
		if (!strncmp(t.line[i], "# end\t", 6)) {
			snprintf(end, sizeof(end), "# end\t%d\t%d\n", rows[1], rows[2]);
			u.line[u.n++] = strdup(end);
		} else {
			u.line[u.n++] = strdup(t.line[i]);
		}
	}
	text_write(&u, path, u.n, -1);
	r = eval(&f, "gold");
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", r.message);
	cr_assert_eq(r.step, 2, "%s", r.message);
	cr_assert_eq(r.rank, -1, "%s", r.message);
	cr_assert_str_eq(r.field, "steps", "%s", r.message);
	cr_assert(r.ia == 3 && r.ib == 2, "%s", r.message);
	cr_assert_not_null(strstr(r.message, "the runs end at different steps (the last stored: 2 "
	                              "and 1)"), "%s", r.message);
	text_free(&t);
	text_free(&u);
	fx_teardown(&f);
}

/* On a class other than cpu the values are compared within rtol/atol, hashes not. */
Test(golden, tolerance_on_other_classes)
{
	struct fx f;
	lks_stored_run run, gold;
	lks_check_result r;

	fx_setup(&f);
	load_whole(&f, id_of(&f, "a"), &run);
	load_whole(&f, id_of(&f, "a"), &gold);
	gold.stats[5].hash ^= 1;
	gold.stats[5].l2 *= 1 + 1e-6;
	lks_check_result_init(&r);
	lks_golden_compare(&run, &gold, 0, 1e-5, 0, &r);
	cr_assert(!r.failed, "%s %s", r.field, r.note);
	lks_check_result_init(&r);
	lks_golden_compare(&run, &gold, 0, 1e-7, 0, &r);
	cr_assert(r.failed);
	cr_assert_str_eq(r.field, "l2");
	cr_assert_eq(r.step, gold.stats[5].step);
	cr_assert_not_null(strstr(r.note, "rtol"), "%s", r.note);
	lks_check_result_init(&r);
	lks_golden_compare(&run, &gold, 1, 0, 0, &r);
	cr_assert_str_eq(r.field, "l2");  /* bit for bit, l2 comes before hash */
	lks_stored_run_release(&run);
	lks_stored_run_release(&gold);
	fx_teardown(&f);
}

/* The folder travels from the command line: --golden DIR, else $LKS_GOLDEN_DIR, else
   "golden"; an empty value counts as not given. */
Test(golden, the_folder_given_then_the_environment_then_golden)
{
	const char *old = getenv("LKS_GOLDEN_DIR");
	char *keep = old ? strdup(old) : NULL;

	cr_assert_eq(unsetenv("LKS_GOLDEN_DIR"), 0);
	cr_assert_str_eq(lks_golden_dir(NULL), "golden");
	cr_assert_str_eq(lks_golden_dir(""), "golden");
	cr_assert_str_eq(lks_golden_dir("g2"), "g2");
	cr_assert_eq(setenv("LKS_GOLDEN_DIR", "from-env", 1), 0);
	cr_assert_str_eq(lks_golden_dir(NULL), "from-env");
	cr_assert_str_eq(lks_golden_dir("g2"), "g2", "the command line wins");
	cr_assert_eq(setenv("LKS_GOLDEN_DIR", "", 1), 0);
	cr_assert_str_eq(lks_golden_dir(NULL), "golden");
	if (keep)
		setenv("LKS_GOLDEN_DIR", keep, 1);
	else
		unsetenv("LKS_GOLDEN_DIR");
	free(keep);
}

Test(golden, missing_golden_fails_with_the_update_command)
{
	struct fx f;
	lks_check_result r;

	fx_setup(&f);
	r = eval(&f, "gold");
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	cr_assert(!r.bad_input);
	cr_assert_not_null(strstr(r.message, "golden/cpu/tiny/a.tsv"), "%s", r.message);
	cr_assert_not_null(strstr(r.message, "lockstep golden update "), "%s", r.message);
	cr_assert_not_null(strstr(r.message, "tiny.ini --run a"), "%s", r.message);
	fx_teardown(&f);
}

/* Rewrites the golden of run a with one defect; expects the error at file:line. */
static void expect_corrupt(struct fx *f, const char *what, void (*edit)(struct text *, int *),
                           int want_line)
{
	char path[256], want[300];
	struct text t;
	lks_stored_run g;
	lks_check_result r;
	int nlines;

	write_golden(f, "a", path, sizeof(path));
	text_read(&t, path);
	nlines = t.n;
	edit(&t, &nlines);
	if (want_line < 0)
		want_line = nlines + want_line + 1;  /* counted from the end */
	text_write(&t, path, nlines, -1);
	text_free(&t);
	snprintf(want, sizeof(want), "%s:%d: ", path, want_line);
	cr_assert_eq(lks_golden_read(path, &g), LKS_E_BAD_INPUT, "%s: read passed", what);
	cr_assert(!strncmp(lks_errmsg(), want, strlen(want)), "%s: '%s' does not start with '%s'",
	          what, lks_errmsg(), want);
	lks_stored_run_release(&g);
	r = eval(f, "gold");
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", what);
	cr_assert(r.bad_input, "%s", what);
	cr_assert_not_null(strstr(r.message, want), "%s: %s", what, r.message);
}

static int first_stat_line(struct text *t)
{
	return text_find(t, "step\trank\tseq") + 1;
}

static void bad_number(struct text *t, int *n)
{
	text_set(t, first_stat_line(t) + 2, 5, "0.1x");
}

static void missing_column(struct text *t, int *n)
{
	int i = text_find(t, "step\trank\tloss") + 2;
	char *tab = strrchr(t->line[i], '\t');

	strcpy(tab, "\n");
}

static void wrong_header(struct text *t, int *n)
{
	free(t->line[0]);
	t->line[0] = strdup("# lockstep golden 2\n");
}

static void not_golden(struct text *t, int *n)
{
	free(t->line[0]);
	t->line[0] = strdup("step\trank\tloss\n");
}

static void truncated_mid_line(struct text *t, int *n)
{
	*n = first_stat_line(t) + 10;
	t->line[*n - 1][5] = 0;  /* the last line cut after 5 characters, no newline */
}

static void truncated_at_line(struct text *t, int *n)
{
	*n = first_stat_line(t) + 10;  /* whole lines, but no end line */
}

/* the last two stats rows swapped (the tensor table is complete by then) */
static void out_of_order(struct text *t, int *n)
{
	int i = t->n - 3;
	char *tmp = t->line[i];

	t->line[i] = t->line[i + 1];
	t->line[i + 1] = tmp;
}

static void no_seed(struct text *t, int *n)
{
	int i = text_find(t, "# seed: ");

	free(t->line[i]);
	t->line[i] = strdup("# sed: 7\n");
}

static void bad_count(struct text *t, int *n)
{
	int i = text_find(t, "# end\t");

	free(t->line[i]);
	t->line[i] = strdup("# end\t6\t1\n");
}

Test(golden, corrupt_golden_names_file_and_line)
{
	struct fx f;
	struct text t;
	char path[256];
	int stat0, step0, steph, endl;

	fx_setup(&f);
	write_golden(&f, "a", path, sizeof(path));
	text_read(&t, path);
	stat0 = first_stat_line(&t) + 1;  /* line numbers from 1 */
	step0 = text_find(&t, "step\trank\tloss") + 2;
	steph = step0 - 1;
	endl = t.n;
	text_free(&t);
	expect_corrupt(&f, "bad number", bad_number, stat0 + 2);
	expect_corrupt(&f, "missing column", missing_column, step0 + 1);
	expect_corrupt(&f, "wrong version", wrong_header, 1);
	expect_corrupt(&f, "not a golden file", not_golden, 1);
	expect_corrupt(&f, "cut mid-line", truncated_mid_line, stat0 + 9);
	expect_corrupt(&f, "cut at a line", truncated_at_line, stat0 + 10);
	expect_corrupt(&f, "rows out of order", out_of_order, -2);
	expect_corrupt(&f, "a required key missing", no_seed, steph);
	expect_corrupt(&f, "end line counts", bad_count, endl);
	fx_teardown(&f);
}

/* A bad golden is bad input for the whole suite: counted in the tally. */
Test(golden, corrupt_golden_is_counted_as_bad_input)
{
	struct fx f;
	char path[256];
	struct text t;
	lks_check_tally tally = { 0 };
	int64_t suite;

	fx_setup(&f);
	write_golden(&f, "a", path, sizeof(path));
	write_golden(&f, "bf", path, sizeof(path));
	text_read(&t, path);
	text_set(&t, first_stat_line(&t), 6, "zz");
	text_write(&t, path, t.n, -1);
	text_free(&t);
	cr_assert_eq(lks_store_begin_suite(f.s, "test", &suite), 0);
	cr_assert_eq(lks_check_case(f.s, suite, &f.c, f.ids, &f.opts, NULL, &tally), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(tally.total, 2);
	cr_assert_eq(tally.passed, 1);
	cr_assert_eq(tally.failed, 1);
	cr_assert_eq(tally.bad_input, 1);
	fx_teardown(&f);
}

Test(golden, incomplete_run_is_refused)
{
	struct fx f;
	lks_stored_run g;
	char q[128], path[256];

	fx_setup(&f);
	snprintf(q, sizeof(q), "UPDATE runs SET status = 'incomplete' WHERE run_id = %lld",
	         (long long)id_of(&f, "a"));
	cr_assert_eq(sqlite3_exec(lks_store_db(f.s), q, NULL, NULL, NULL), SQLITE_OK);
	/* comparing may read it: the missing steps would be the divergence */
	cr_assert_eq(lks_stored_run_load(f.s, id_of(&f, "a"), LKS_LOAD_TRACE, &g), 0);
	cr_assert_eq(lks_golden_path(f.golden, g.backend, g.case_name, g.run_name, path,
	                             sizeof(path)), 0);
	cr_assert_eq(lks_golden_write(&g, path), LKS_E_BAD_INPUT);
	cr_assert_not_null(strstr(lks_errmsg(), "incomplete"), "%s", lks_errmsg());
	cr_assert_eq(access(path, F_OK), -1, "a golden was written from an incomplete run");
	lks_stored_run_release(&g);
	fx_teardown(&f);
}
