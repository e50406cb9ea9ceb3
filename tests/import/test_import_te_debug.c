/*
 * test_import_te_debug.c: te-debug, TransformerEngine's debug API statistics as
 * nvidia-dlfw-inspect logs them (harness/import/import_te_debug.c), on the fixtures of
 * tests/import/data/te_debug/ (make_fixtures.py writes them as the logger does): every
 * statistic read back with its printed decimals, names split at the tensor's word, phases,
 * ranks from the file names; two runs, the second with a layer inserted and one value
 * changed, located at exactly that step, rank and tensor; logs nvidia-dlfw-inspect wrote
 * itself (te_debug/nvdlfw/), given as its log folder; bad lines refused, nothing stored.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "store_fixture.h"
#include "harness/import/import.h"
#include "harness/store/run.h"
#include "harness/store/tensor_trace.h"
#include "harness/verify/check.h"
#include "kernels/err.h"

static int import_te(lks_store *s, const char *path, const char *run, int64_t *id)
{
	const char *paths[1] = { path };
	lks_import_opts o = { .fmt = lks_import_format_find("te-debug"), .case_name = "te",
	                      .run_name = run };
	lks_import_result res;
	int rc = lks_import_files(s, &o, paths, 1, &res);

	*id = res.run_id;
	return rc;
}

static int64_t import_run(lks_store *s, const char *run)
{
	char path[1024];
	int64_t id;

	snprintf(path, sizeof(path), "%s/te_debug/%s/nvdlfw_inspect_statistics_logs",
	         LKS_IMPORT_DIR, run);
	cr_assert_eq(import_te(s, path, run, &id), 0, "%s", lks_errmsg());
	return id;
}

static lks_store *open_store(void)
{
	char db[512];
	lks_store *s;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "te.db");
	cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
	return s;
}

Test(te_debug, statistics_read_back_as_the_logger_printed_them)
{
	lks_store *s = open_store();
	int64_t id = import_run(s, "run_a");
	lks_stored_run r;
	const lks_tentry *e;
	const lks_tval *v;
	int l2;

	cr_assert_eq(lks_stored_run_load(s, id, LKS_LOAD_TRACE, &r), 0, "%s", lks_errmsg());
	cr_assert_eq(r.W, 2, "globalrank-0 and -1");
	cr_assert_eq(r.nsteps, 4, "iterations 1 to 3");
	cr_assert_eq(lks_tensor_trace_step(r.tt, 2), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_tensor_trace_rank(r.tt, 1, &e), 10, "9 tensors and fc1's FP8 record");
	cr_assert_str_eq(r.names[e[0].tensor], "decoder.1.self_attention.linear_qkv.activation");
	cr_assert_eq(r.phases[e[0].tensor], LKS_PHASE_FORWARD);
	cr_assert_str_eq(r.names[e[5].tensor], "decoder.1.mlp.fc1.gradient");
	cr_assert_eq(r.phases[e[5].tensor], LKS_PHASE_BACKWARD);
	cr_assert_eq(r.phases[e[6].tensor], LKS_PHASE_BACKWARD, "wgrad");
	cr_assert_eq(e[5].n, 8, "min ... dynamic_range");
	l2 = lks_tensor_trace_stat(r.tt, "l2");
	cr_assert(l2 >= 0, "l2_norm is lockstep's l2");
	cr_assert(lks_tensor_trace_stat(r.tt, "amax") >= 0, "cur_amax is amax");
	v = &r.tt->val[e[5].first + 5];
	cr_assert_eq(v->stat, l2);
	cr_assert_eq(v->value, 5.2812, "as printed");
	cr_assert_eq(v->printed, 5, "4 decimals");
	/* the FP8 statistic of a recipe simulated, after the high-precision ones */
	cr_assert_str_eq(r.names[e[7].tensor], "decoder.1.mlp.fc1.activation");
	cr_assert_eq(e[7].n, 1);
	cr_assert_str_eq(r.tt->stats[r.tt->val[e[7].first].stat], "mxfp8_underflows_pct");
	cr_assert_eq(r.tt->val[e[7].first].value, 2.5);
	lks_stored_run_release(&r);
	lks_store_close(s);
}

Test(te_debug, a_changed_value_is_located_despite_a_layer_inserted_before_it)
{
	lks_store *s = open_store();
	int64_t a = import_run(s, "run_a"), b = import_run(s, "run_b");
	lks_check_cfg k = { .name = "k", .kind = LKS_CHECK_BITWISE, .a = "a", .b = "b",
	                    .exp_step = -1, .exp_rank = -1 };
	lks_check_result r;

	cr_assert_eq(lks_check_eval(s, &k, NULL, a, b, &r), 0, "%s", lks_errmsg());
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", r.message);
	cr_assert_eq(r.step, 2);
	cr_assert_eq(r.rank, 1);
	cr_assert_str_eq(r.tensor, "decoder.1.mlp.fc1.gradient");
	cr_assert_str_eq(r.field, "l2");
	cr_assert_eq(r.a, 5.2812);
	cr_assert_eq(r.b, 5.2813);
	cr_assert(strstr(r.note, "inserted in b (first: decoder.1.mlp.norm.output)"), "%s",
	          r.note);
	lks_store_close(s);
}

/* Logs nvidia-dlfw-inspect 0.2.2 wrote itself (te_debug/nvdlfw/, make_nvdlfw.py), each
   given as the log_dir a user gave debug_api.initialize: its statistics read, not the
   messages beside them in nvdlfw_inspect_logs/ (files of the same name); fc1's output moved
   at step 3 is found there, in the mean (4 decimals) before the l2 norm. */
Test(te_debug, nvdlfw_inspects_own_log_folders_locate_the_moved_activation)
{
	lks_store *s = open_store();
	char path[1024];
	int64_t id[2];
	lks_check_cfg k = { .name = "k", .kind = LKS_CHECK_BITWISE, .a = "a", .b = "b",
	                    .exp_step = -1, .exp_rank = -1 };
	lks_check_result r;
	lks_stored_run run;

	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/te_debug/nvdlfw/%s", LKS_IMPORT_DIR,
		         i ? "plant" : "clean");
		cr_assert_eq(import_te(s, path, i ? "plant" : "clean", &id[i]), 0, "%s",
		             lks_errmsg());
	}
	cr_assert_eq(lks_stored_run_load(s, id[0], LKS_LOAD_TRACE, &run), 0, "%s", lks_errmsg());
	cr_assert_eq(run.nsteps, 5, "iterations 0 to 4");
	lks_stored_run_release(&run);
	cr_assert_eq(lks_check_eval(s, &k, NULL, id[0], id[1], &r), 0, "%s", lks_errmsg());
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", r.message);
	cr_assert_eq(r.step, 3);
	cr_assert_eq(r.rank, 0);
	cr_assert_str_eq(r.tensor, "model.fc1.activation");
	cr_assert_str_eq(r.field, "mean");
	lks_store_close(s);
}

static void expect_bad(const char *text, const char *why, long line)
{
	lks_store *s = open_store();
	char path[512], at[96];
	FILE *f;
	int64_t id;

	snprintf(path, sizeof(path), "%s/nvdlfw_inspect_globalrank-0.log", tmpdir);
	cr_assert_not_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
	cr_assert_eq(import_te(s, path, "bad", &id), LKS_E_BAD_INPUT, "%s", text);
	snprintf(at, sizeof(at), "globalrank-0.log':%ld", line);
	cr_assert(strstr(lks_errmsg(), why) && strstr(lks_errmsg(), at), "%s", lks_errmsg());
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM runs"), 0);
	lks_store_close(s);
}

#define L(name, it, v) "2025-06-02 10:00:00,000 - INFO - " name " \t\t\t\t iteration=" it \
	" \t\t\t\t value=" v "\n"

Test(te_debug, bad_lines_are_refused_at_their_line)
{
	expect_bad(L("fc1_gradient_l2_norm", "000001", "1.0000") L("fc1_grad_l2_norm", "000001",
	           "2.0000"), "names no tensor", 2);
	expect_bad(L("fc1_gradient_l2_norm", "000001", "x1.0"), "value", 1);
	expect_bad(L("fc1_gradient_l2_norm", "000002", "1.0000") L("fc1_gradient_l2_norm",
	           "000001", "1.0000"), "after its step 2", 2);
	expect_bad(L("fc1_gradient_l2_norm", "", "1.0000"), "iteration", 1);
}
