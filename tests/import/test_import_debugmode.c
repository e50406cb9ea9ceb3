/*
 * test_import_debugmode.c: debugmode, PyTorch DebugMode's string dump with tensor hashes
 * (harness/import/import_debugmode.c), on tests/import/data/debugmode/ (make_fixtures.py
 * writes them as DebugMode renders them): ops with a hash read as records in order, their
 * L1 norms as statistics and their uint64 hashes as the record's hash, bit for bit; two
 * runs whose logs differ in length (an op inserted: DebugMode's own check refuses them)
 * compared anyway, the changed op found at its step and rank; bad hashes refused.
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

static int import_paths(lks_store *s, const char **paths, int n, const char *run, int64_t *id)
{
	lks_import_opts o = { .fmt = lks_import_format_find("debugmode"), .case_name = "dm",
	                      .run_name = run };
	lks_import_result res;
	int rc = lks_import_files(s, &o, paths, n, &res);

	*id = res.run_id;
	return rc;
}

static int64_t import_run(lks_store *s, const char *run)
{
	char p1[1024], p2[1024];
	const char *paths[2] = { p1, p2 };
	int64_t id;

	snprintf(p1, sizeof(p1), "%s/debugmode/%s/step_1", LKS_IMPORT_DIR, run);
	snprintf(p2, sizeof(p2), "%s/debugmode/%s/step_2", LKS_IMPORT_DIR, run);
	cr_assert_eq(import_paths(s, paths, 2, run, &id), 0, "%s", lks_errmsg());
	return id;
}

static lks_store *open_store(void)
{
	char db[512];
	lks_store *s;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "dm.db");
	cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
	return s;
}

Test(debugmode, hashed_ops_read_back_in_order)
{
	lks_store *s = open_store();
	int64_t id = import_run(s, "run_a");
	lks_stored_run r;
	const lks_tentry *e;

	cr_assert_eq(lks_stored_run_load(s, id, LKS_LOAD_TRACE, &r), 0, "%s", lks_errmsg());
	cr_assert_eq(r.W, 2, "rank_0 and rank_1");
	cr_assert_eq(r.nsteps, 3, "step_1 and step_2");
	cr_assert_eq(lks_tensor_trace_step(r.tt, 2), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_tensor_trace_rank(r.tt, 1, &e), 5, "the ops with a hash");
	cr_assert_str_eq(r.names[e[0].tensor], "aten::t");
	cr_assert_str_eq(r.names[e[1].tensor], "aten::mm");
	cr_assert_eq(e[3].tensor, e[1].tensor, "one name, two calls");
	cr_assert(e[1].has_hash);
	/* (0x9E3779B97F4A7C15 * 3 + 2000 + 1) mod 2^64, as make_fixtures.py writes it */
	cr_assert_eq(e[1].hash, 0x9E3779B97F4A7C15ull * 3 + 2001);
	cr_assert_eq(e[1].n, 1);
	cr_assert_eq(r.tt->val[e[1].first].value, 10.0 + 1.25 * 2 + 0.5 * 2 + 0.125);
	lks_stored_run_release(&r);
	lks_store_close(s);
}

Test(debugmode, logs_of_other_lengths_compared_the_changed_op_found)
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
	cr_assert_str_eq(r.tensor, "aten::mm");
	cr_assert_str_eq(r.field, "l1", "the L1 norm first, then the hash");
	cr_assert(strstr(r.note, "inserted in b (first: aten::add)"), "%s", r.note);
	lks_store_close(s);
}

Test(debugmode, a_hash_that_is_no_number_is_refused_at_its_line)
{
	lks_store *s = open_store();
	char path[512];
	const char *paths[1] = { path };
	FILE *f;
	int64_t id;

	snprintf(path, sizeof(path), "%s/rank_0.txt", tmpdir);
	cr_assert_not_null(f = fopen(path, "w"));
	fputs("aten::t(t$1: f32[2])  ->  t$3: f32[2]  # {'hash': 1.5}\n"
	      "aten::mm(t$1: f32[2])  ->  t$3: f32[2]  # {'hash': (2.5, tensor(3))}\n", f);
	fclose(f);
	cr_assert_eq(import_paths(s, paths, 1, "bad", &id), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "rank_0.txt':2") && strstr(lks_errmsg(), "no number"),
	          "%s", lks_errmsg());
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM runs"), 0);
	lks_store_close(s);
}
