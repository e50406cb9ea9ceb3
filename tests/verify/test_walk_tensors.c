/*
 * test_walk_tensors.c: imported tensor traces (issue 33; harness/store/tensor_trace.h)
 * stored and read back, and the checks on them (walk_tensors.c, check_tensors.c): two
 * dumps that differ in one tensor at one step are located at that step, rank and tensor,
 * also when one run has an op inserted before it, or a tensor renamed; close, finite and
 * ranks_agree; and bad input, which stores nothing. The dumps are tensor-jsonl written
 * here, every value derived from (step, rank, tensor), so that any one can be changed.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "run_bin.h"
#include "store_fixture.h"
#include "harness/import/import.h"
#include "harness/store/run.h"
#include "harness/store/tensor_trace.h"
#include "harness/verify/check.h"
#include "kernels/err.h"

#define STEPS 4
#define NRANKS 3
#define NT 6

static const char *const tnames[NT] = {
	"layers.0.attn.qkv.weight", "layers.0.attn.qkv.output", "layers.0.mlp.fc1.weight",
	"layers.0.mlp.fc1.output", "layers.0.mlp.fc2.output", "layers.0.mlp.fc1.weight.grad",
};

/* What a dump differs in from the plain one. */
struct plant {
	int step, rank, t;        /* one value changed: l2 of tensor t (-1: none) */
	double l2;
	int insert_before;        /* an op "layers.0.extra.output" before tensor k; -1: none */
	int rename;               /* tensor k named "...renamed" with the same values; -1 */
	int nan_t, nan_step, nan_rank;  /* amax NaN; nan_t -1: none */
	int weight_rank;          /* the weights' hash of this rank changed at step 2; -1 */
};

static const struct plant plain = { -1, -1, -1, 0, -1, -1, -1, -1, -1, -1 };

static double l2_of(int step, int rank, int t)
{
	/* weights alike on every rank (data parallel), activations per rank */
	return strstr(tnames[t], "weight") && !strstr(tnames[t], "grad")
	       ? 1.5 + 0.25 * step + 0.125 * t : 0.5 + step + 0.25 * rank + 0.125 * t;
}

static void write_dump(const char *path, const struct plant *p)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	for (int rank = 0; rank < NRANKS; rank++)
		for (int step = 0; step < STEPS; step++)
			for (int t = 0; t < NT; t++) {
				int weight = strstr(tnames[t], "weight") && !strstr(tnames[t], "grad");
				double l2 = l2_of(step, rank, t);
				unsigned long long hash = 0x1000ull * (unsigned)t
				                          + (weight ? 0 : 0x100ull * (unsigned)rank) + step;

				if (t == p->insert_before)
					fprintf(f, "{\"step\": %d, \"rank\": %d, \"tensor\": "
					        "\"layers.0.extra.output\", \"l2\": 9.5, \"hash\": \"ff\"}\n",
					        step, rank);
				if (step == p->step && rank == p->rank && t == p->t)
					l2 = p->l2;
				if (weight && rank == p->weight_rank && step == 2)
					hash ^= 1;
				fprintf(f, "{\"step\": %d, \"rank\": %d, \"phase\": \"%s\", \"tensor\": "
				        "\"%s%s\", \"l2\": %.17g, \"amax\": %s, \"nonfinite\": 0, "
				        "\"hash\": \"%llx\"}\n", step, rank,
				        strstr(tnames[t], "grad") ? "backward" : "forward", tnames[t],
				        t == p->rename ? ".renamed" : "", l2,
				        t == p->nan_t && step == p->nan_step && rank == p->nan_rank
				        ? "NaN" : "0.25", hash);
			}
	fclose(f);
}

static int64_t import_dump(lks_store *s, const char *name, const struct plant *p)
{
	char path[512];
	const char *paths[1] = { path };
	lks_import_opts o = { .fmt = lks_import_format_find("tensor-jsonl"), .case_name = "c",
	                      .run_name = name };
	lks_import_result res;

	snprintf(path, sizeof(path), "%s/%s.jsonl", tmpdir, name);
	write_dump(path, p);
	cr_assert_eq(lks_import_files(s, &o, paths, 1, &res), 0, "%s", lks_errmsg());
	return res.run_id;
}

static void check(lks_store *s, lks_check_kind kind, int64_t a, int64_t b, const char *metric,
                  double rtol, lks_check_result *r)
{
	lks_check_cfg k = { .name = "k", .kind = kind, .a = "a", .b = "b", .rtol = rtol,
	                    .exp_step = -1, .exp_rank = -1 };

	snprintf(k.metric, sizeof(k.metric), "%s", metric ? metric : "");
	cr_assert_eq(lks_check_eval(s, &k, NULL, a, b, r), 0, "%s", lks_errmsg());
}

static lks_store *open_store(void)
{
	char db[512];
	lks_store *s;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "t.db");
	cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
	return s;
}

Test(tensor_trace, a_dump_reads_back_as_written)
{
	lks_store *s = open_store();
	int64_t id = import_dump(s, "a", &plain);
	lks_stored_run r;
	const lks_tentry *e;
	size_t n;
	int l2, amax;

	cr_assert_eq(lks_stored_run_load(s, id, LKS_LOAD_TRACE, &r), 0, "%s", lks_errmsg());
	cr_assert_not_null(r.tt);
	cr_assert_eq(r.W, NRANKS);
	cr_assert_eq(r.nsteps, STEPS);
	cr_assert_eq(r.nt, NT, "one tensor per (name, phase)");
	cr_assert_str_eq(r.names[5], tnames[5]);
	cr_assert_eq(r.phases[5], LKS_PHASE_BACKWARD);
	cr_assert_eq(lks_tensor_trace_step(r.tt, 2), 0, "%s", lks_errmsg());
	l2 = lks_tensor_trace_stat(r.tt, "l2");
	amax = lks_tensor_trace_stat(r.tt, "amax");
	cr_assert(l2 >= 0 && amax >= 0);
	for (int rank = 0; rank < NRANKS; rank++) {
		n = lks_tensor_trace_rank(r.tt, rank, &e);
		cr_assert_eq(n, NT);
		for (int t = 0; t < NT; t++) {
			const lks_tval *v = &r.tt->val[e[t].first];

			cr_assert_eq(e[t].tensor, t, "in the order read");
			cr_assert_eq(e[t].micro, -1);
			cr_assert(e[t].has_hash);
			cr_assert_eq(e[t].n, 3);
			cr_assert_eq(v[0].stat, l2);
			cr_assert_eq(v[0].value, l2_of(2, rank, t), "bit for bit");
			cr_assert_eq(v[1].value, 0.25);
			cr_assert_eq(v[1].printed, 3, "0.25: 2 decimals, its shortest form");
		}
	}
	cr_assert_eq(lks_tensor_trace_rank(r.tt, NRANKS, &e), 0);
	lks_stored_run_release(&r);
	lks_store_close(s);
}

Test(tensor_trace, one_changed_value_is_located_at_its_step_rank_and_tensor)
{
	lks_store *s = open_store();
	struct plant p = plain;
	int64_t a = import_dump(s, "a", &plain), b, same;
	lks_check_result r;

	p.step = 2, p.rank = 1, p.t = 3, p.l2 = 7.25;
	b = import_dump(s, "b", &p);
	same = import_dump(s, "same", &plain);
	check(s, LKS_CHECK_BITWISE, a, same, NULL, 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	check(s, LKS_CHECK_BITWISE, a, b, NULL, 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", r.message);
	cr_assert_eq(r.step, 2);
	cr_assert_eq(r.rank, 1);
	cr_assert_str_eq(r.tensor, tnames[3]);
	cr_assert_str_eq(r.field, "l2");
	cr_assert_eq(r.a, l2_of(2, 1, 3));
	cr_assert_eq(r.b, 7.25);
}

Test(tensor_trace, an_op_inserted_before_it_changes_nothing_of_where)
{
	lks_store *s = open_store();
	struct plant p = plain, q = plain;
	int64_t a = import_dump(s, "a", &plain), b, c;
	lks_check_result r;

	p.step = 2, p.rank = 1, p.t = 3, p.l2 = 7.25, p.insert_before = 2;
	b = import_dump(s, "b", &p);
	check(s, LKS_CHECK_BITWISE, a, b, NULL, 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", r.message);
	cr_assert_eq(r.step, 2);
	cr_assert_eq(r.rank, 1);
	cr_assert_str_eq(r.tensor, tnames[3], "%s", r.message);
	cr_assert_str_eq(r.field, "l2");
	cr_assert(strstr(r.note, "inserted in b") && strstr(r.note, "layers.0.extra.output"),
	          "%s", r.note);
	/* the inserted op alone: no divergence, and the note says what was aligned */
	q.insert_before = 0;
	c = import_dump(s, "c", &q);
	check(s, LKS_CHECK_BITWISE, a, c, NULL, 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	/* and the other way round: removed */
	check(s, LKS_CHECK_BITWISE, c, a, NULL, 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
}

Test(tensor_trace, a_renamed_tensor_with_its_values_is_paired)
{
	lks_store *s = open_store();
	struct plant p = plain;
	int64_t a = import_dump(s, "a", &plain), b;
	lks_check_result r;

	p.rename = 4;
	p.step = 3, p.rank = 2, p.t = 5, p.l2 = 1e-3;  /* and a later tensor differs */
	b = import_dump(s, "b", &p);
	check(s, LKS_CHECK_BITWISE, a, b, NULL, 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", r.message);
	cr_assert_eq(r.step, 3);
	cr_assert_eq(r.rank, 2);
	cr_assert_str_eq(r.tensor, tnames[5]);
	cr_assert(strstr(r.note, "1 renamed") || strstr(r.note, "renamed (first: "),
	          "%s", r.note);
	cr_assert(strstr(r.note, "layers.0.mlp.fc2.output as layers.0.mlp.fc2.output.renamed"),
	          "%s", r.note);
}

Test(tensor_trace, close_holds_one_statistic_to_its_tolerance)
{
	lks_store *s = open_store();
	struct plant p = plain;
	int64_t a = import_dump(s, "a", &plain), b;
	lks_check_result r;

	p.step = 1, p.rank = 0, p.t = 1, p.l2 = l2_of(1, 0, 1) * (1 + 1e-3);
	b = import_dump(s, "b", &p);
	/* the value planted is 1e-3 off: 1e-2 holds it, 1e-4 does not (no rounding of the
	   17 digits written comes near either bound) */
	check(s, LKS_CHECK_CLOSE, a, b, "l2", 1e-2, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	check(s, LKS_CHECK_CLOSE, a, b, "l2", 1e-4, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", r.message);
	cr_assert_eq(r.step, 1);
	cr_assert_eq(r.rank, 0);
	cr_assert_str_eq(r.tensor, tnames[1]);
	/* a statistic neither holds: the case is wrong */
	check(s, LKS_CHECK_CLOSE, a, b, "mse", 1e-2, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	cr_assert_eq(r.bad_input, LKS_BAD_CASE, "%s", r.message);
}

Test(tensor_trace, finite_finds_the_first_nan_in_execution_order)
{
	lks_store *s = open_store();
	struct plant p = plain;
	int64_t a = import_dump(s, "a", &plain), b;
	lks_check_result r;

	check(s, LKS_CHECK_FINITE, a, 0, NULL, 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	p.nan_t = 4, p.nan_step = 2, p.nan_rank = 2;
	b = import_dump(s, "b", &p);
	check(s, LKS_CHECK_FINITE, b, 0, NULL, 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", r.message);
	cr_assert_eq(r.step, 2);
	cr_assert_eq(r.rank, 2);
	cr_assert_str_eq(r.tensor, tnames[4]);
	cr_assert_str_eq(r.field, "amax");
}

Test(tensor_trace, ranks_agree_names_the_rank_whose_weights_differ)
{
	lks_store *s = open_store();
	struct plant p = plain;
	int64_t a = import_dump(s, "a", &plain), b;
	lks_check_result r;

	check(s, LKS_CHECK_RANKS_AGREE, a, 0, NULL, 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "activations differ per rank: %s", r.message);
	p.weight_rank = 2;
	b = import_dump(s, "b", &p);
	check(s, LKS_CHECK_RANKS_AGREE, b, 0, NULL, 0, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", r.message);
	cr_assert_eq(r.step, 2);
	cr_assert_eq(r.rank, 2);
	cr_assert_str_eq(r.tensor, tnames[0]);
	cr_assert_str_eq(r.field, "hash");
}

/* tensors = chooses what ranks_agree compares on a trace: activations, which differ per
   rank, fail; a pattern that matches nothing compared nothing and passed: unsupported. */
Test(tensor_trace, ranks_agree_compares_the_tensors_named)
{
	lks_store *s = open_store();
	int64_t a = import_dump(s, "a", &plain);
	lks_check_cfg k = { .name = "k", .kind = LKS_CHECK_RANKS_AGREE, .a = "a", .exp_step = -1,
	                    .exp_rank = -1 };
	lks_check_result r;

	snprintf(k.tensors, sizeof(k.tensors), "*output*");
	cr_assert_eq(lks_check_eval(s, &k, NULL, a, 0, &r), 0, "%s", lks_errmsg());
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", r.message);
	cr_assert(strstr(r.tensor, "output"), "%s", r.tensor);
	snprintf(k.tensors, sizeof(k.tensors), "nosuch*");
	cr_assert_eq(lks_check_eval(s, &k, NULL, a, 0, &r), 0, "%s", lks_errmsg());
	cr_assert_eq(r.verdict, LKS_VERDICT_UNSUPPORTED, "%s", r.message);
	cr_assert(strstr(r.message, "nothing compared"), "%s", r.message);
}

/* Bad input: exit 2 naming the file and line, and nothing stored. */
static void expect_bad(const char *text, const char *why, long line)
{
	lks_store *s = open_store();
	char path[512], at[64];
	const char *paths[1] = { path };
	lks_import_opts o = { .fmt = lks_import_format_find("tensor-jsonl"), .case_name = "c",
	                      .run_name = "bad" };
	lks_import_result res;
	FILE *f;
	int64_t n = -1;

	snprintf(path, sizeof(path), "%s/bad.jsonl", tmpdir);
	cr_assert_not_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
	cr_assert_eq(lks_import_files(s, &o, paths, 1, &res), LKS_E_BAD_INPUT, "%s", text);
	snprintf(at, sizeof(at), "bad.jsonl':%ld", line);
	cr_assert(strstr(lks_errmsg(), why) && (line < 0 || strstr(lks_errmsg(), at)), "%s",
	          lks_errmsg());
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM runs"), 0);
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM tensor_blocks"), 0);
	(void)n;
	lks_store_close(s);
}

Test(tensor_trace, bad_input_names_the_line_and_stores_nothing)
{
	expect_bad("{\"step\": 1, \"tensor\": \"x\", \"l2\": 1}\n"
	           "{\"step\": 0, \"tensor\": \"x\", \"l2\": 1}\n", "after its step 1", 2);
	expect_bad("{\"step\": 0, \"tensor\": \"x\", \"l2\": 1}\n"
	           "{\"step\": 1, \"tensor\": \"x\", \"l2\": 1}\n"
	           "{\"step\": 0, \"tensor\": \"y\", \"l2\": 1}\n", "after its step 1", 3);
	expect_bad("{\"step\": 0, \"tensor\": \"x\", \"l2_norm\": 1, \"l2\": 2}\n",
	           "statistic 'l2' twice", 1);
	expect_bad("{\"step\": 0, \"tensor\": \"x\", \"hash\": \"xyz\"}\n", "hex digits", 1);
	expect_bad("{\"step\": 0, \"l2\": 1}\n", "\"tensor\"", 1);
	expect_bad("{\"step\": 0, \"tensor\": \"x\", \"phase\": \"sideways\"}\n", "\"phase\"", 1);
	expect_bad("{\"step\": 0, \"tensor\": \"x\", \"l2\": \"big\"}\n", "bad value", 1);
	expect_bad("{\"step\": 0, \"tensor\": \"x\"\n", "not JSON", 1);
	expect_bad("{\"step\": 0, \"rank\": 1, \"tensor\": \"x\", \"l2\": 1}\n",
	           "rank 0 holds no tensor", -1);
	expect_bad("\n\n", "no tensor's statistics", -1);
}

/* The runnable example of cases/README.md (tests/import/data/tensor_traces.ini) as a user
   runs it: the expected divergence found, the report's heatmap drawn, diff per step, and
   an export that imports back bit for bit. */
Test(tensor_trace, the_example_case_runs_reports_diffs_and_exports)
{
	char db[512], args[4096], out[16384], path[600];

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "cli.db");
	snprintf(args, sizeof(args), "run --db '%s' '%s/tensor_traces.ini'", db, LKS_IMPORT_DIR);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "ws 2  steps up to 3  imported, 56 tensor records"), "%s", out);
	cr_assert(strstr(out, "expected failure: step 2, tensor 'layers.0.mlp.fc1.output' "
	                      "(forward), rank 1: l2 a=3.125"), "%s", out);
	cr_assert(strstr(out, "inserted in b (first: layers.0.mlp.norm.output)"), "%s", out);
	snprintf(args, sizeof(args), "report --db '%s' -o '%s/rep'", db, tmpdir);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(path, sizeof(path), "%s/rep/tensor_traces=heatmap=a=b.svg", tmpdir);
	cr_assert_eq(access(path, R_OK), 0, "no heatmap");
	snprintf(path, sizeof(path), "%s/rep/report.md", tmpdir);
	cr_assert_eq(lks_run_sh(strcat(strcpy(args, "grep -c 'First divergence (circled.*step 2, "
	                                      "tensor layers.0.mlp.fc1.output, rank 1' '"),
	                               strcat(path, "'")), out, sizeof(out)), 0, "%s", out);
	snprintf(args, sizeof(args), "diff --db '%s' tensor_traces/a tensor_traces/b", db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 1, "%s", out);
	cr_assert(strstr(out, "    2  12       2        0        0        1        0        "
	                      "3.2e-05    layers.0.mlp.fc1.output (forward), rank 1"), "%s", out);
	snprintf(args, sizeof(args), "export --db '%s' --format tensor-jsonl tensor_traces/b -o "
	         "'%s/b.jsonl' && %s import --db '%s' --format tensor-jsonl --case tensor_traces "
	         "--run b2 '%s/b.jsonl' && %s diff --db '%s' tensor_traces/b tensor_traces/b2",
	         db, tmpdir, LKS_BIN, db, tmpdir, LKS_BIN, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "identical: bit for bit in every statistic and hash"), "%s", out);
	/* no golden file of a tensor trace (it would hold nothing, and pass anything) */
	snprintf(args, sizeof(args), "golden update --db '%s' --golden '%s/golden' '%s/"
	         "tensor_traces.ini' --run a", db, tmpdir, LKS_IMPORT_DIR);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "is a tensor trace"), "%s", out);
}
