/*
 * test_store_upgrade.c: the trace store across its versions. A check's parameters stored
 * with its verdict and read back exactly (schema 4); a file of an earlier version upgraded
 * on open, keeping everything it held; opening to read only: never written, an earlier
 * version read as it is (what it lacks reads as empty or none), files that are not ours
 * refused untouched, and databases on a folder that cannot be written.
 * Every test works in its own mkdtemp folder (store_fixture.h).
 */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store_fixture.h"
#include "harness/store/import_block.h"
#include "harness/store/trace_store.h"
#include "kernels/err.h"

/* ---- check verdicts and their parameters ---- */

/* A verdict of check 'name' in case "c" with every parameter given (doubles that a
   decimal round trip would not keep, the least double as the floor, rank 0, which is not
   "none"), or with none when expect is NULL. */
static lks_check_rec verdict(const char *name, const char *expect)
{
	return (lks_check_rec){
		.case_name = "c", .check_name = name, .kind = "close", .verdict = "fail",
		.step = 2, .rank = 1, .tensor = "head.weight.grad", .field = "l2",
		.type = LKS_VALUE_REAL, .value_a = 1.5, .value_b = 2.5, .abs_err = 1.0,
		.rel_err = 0.4, .ulp = 7, .message = "beyond rtol",
		.params = { .a = "a", .b = "bf", .metric = "l2", .tensors = "blocks.*.grad",
		            .rtol = 0.1, .atol = 0x1.123456789abcdp-70, .floor_db = -DBL_MAX,
		            .expect = expect, .exp_step = 3, .exp_rank = 0,
		            .exp_tensor = "blocks.0.mlp.up.weight.grad" },
	};
}

/* The parameters as they read back when none were stored. */
static const lks_check_params no_params = { .rtol = NAN, .atol = NAN, .floor_db = NAN,
                                            .exp_step = -1, .exp_rank = -1 };

/* Parameters in words, NULL as "-", doubles exactly (%a), so that two sets are the same
   when their words are. */
static void params_text(const lks_check_params *p, char *buf, size_t n)
{
	const double d[] = { p->rtol, p->atol, p->floor_db };
	char dt[3][40];

	for (int i = 0; i < 3; i++)
		snprintf(dt[i], sizeof(dt[i]), isnan(d[i]) ? "nan" : "%a", d[i]);
	snprintf(buf, n, "a=%s b=%s metric=%s tensors=%s rtol=%s atol=%s floor=%s expect=%s "
	         "step=%d rank=%d tensor=%s", p->a ? p->a : "-", p->b ? p->b : "-",
	         p->metric ? p->metric : "-", p->tensors ? p->tensors : "-", dt[0], dt[1], dt[2],
	         p->expect ? p->expect : "-", p->exp_step, p->exp_rank,
	         p->exp_tensor ? p->exp_tensor : "-");
}

struct checks_seen {
	int n;
	char name[4][32], params[4][512], verdict[4][512];
};

/* Each verdict's name, its parameters in words, and the rest of it in words. */
static int see_check(void *arg, const lks_check_rec *r)
{
	struct checks_seen *seen = arg;
	int i = seen->n++;

	if (i >= 4)
		return 0;
	snprintf(seen->name[i], sizeof(seen->name[i]), "%s", r->check_name);
	params_text(&r->params, seen->params[i], sizeof(seen->params[i]));
	snprintf(seen->verdict[i], sizeof(seen->verdict[i]), "%s %s %s %lld %lld %d %d %s %s "
	         "%d %a %a %a %a %lld %s", r->case_name, r->kind, r->verdict, (long long)r->run_a,
	         (long long)r->run_b, r->step, r->rank, r->tensor ? r->tensor : "-",
	         r->field ? r->field : "-", (int)r->type, r->value_a, r->value_b, r->abs_err,
	         r->rel_err, (long long)r->ulp, r->message ? r->message : "-");
	return 0;
}

static void expect_params(const struct checks_seen *seen, int i, const lks_check_params *want)
{
	char text[512];

	params_text(want, text, sizeof(text));
	cr_assert_str_eq(seen->params[i], text, "verdict %d ('%s')", i, seen->name[i]);
}

Test(trace_store, check_parameters_read_back_exactly)
{
	lks_check_rec whole = verdict("whole", "fail"), one_run = verdict("one_run", "pass");
	lks_check_rec bare = verdict("bare", NULL), bad = verdict("bad", "maybe");
	struct checks_seen seen = { 0 }, ro = { 0 };
	char path[512];
	lks_store *s;
	int64_t suite;

	/* a one-run kind: no b, no metric, no filter, no expected place; zero tolerances */
	one_run.kind = "finite";
	one_run.params = (lks_check_params){ .a = "a", .expect = "pass", .exp_step = -1,
	                                     .exp_rank = -1 };
	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "checks.db");
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_begin_suite(s, "lockstep check", &suite), 0, "%s", lks_errmsg());
	whole.suite_id = one_run.suite_id = bare.suite_id = bad.suite_id = suite;
	cr_assert_eq(lks_store_check(s, &whole), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_check(s, &one_run), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_check(s, &bare), 0, "%s", lks_errmsg());
	cr_assert_neq(lks_store_check(s, &bad), 0, "expect = maybe was stored");
	cr_assert(strstr(lks_errmsg(), "maybe"), "%s", lks_errmsg());
	lks_store_close(s);

	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_get_checks(s, suite, see_check, &seen), 0, "%s", lks_errmsg());
	/* whole or not at all in the file too */
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM checks WHERE check_name = 'bare' AND "
	                        "coalesce(name_a, name_b, metric, tensors, rtol, atol, floor_db, "
	                        "expect, expect_step, expect_rank, expect_tensor) IS NULL"), 1);
	lks_store_close(s);
	cr_assert_eq(seen.n, 3);
	expect_params(&seen, 0, &whole.params);
	expect_params(&seen, 1, &one_run.params);
	/* no expect: none stored, whatever else the record held */
	expect_params(&seen, 2, &no_params);
	/* and the verdict beside them as it was */
	cr_assert_str_eq(seen.verdict[0], seen.verdict[2]);
	cr_assert(strstr(seen.verdict[0], "0x1.8p+0 0x1.4p+1") && strstr(seen.verdict[0], " 7 "),
	          "%s", seen.verdict[0]);

	/* the same through a read-only store */
	cr_assert_eq(lks_store_open_readonly(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_get_checks(s, 0, see_check, &ro), 0, "%s", lks_errmsg());
	lks_store_close(s);
	cr_assert_eq(ro.n, 3);
	for (int i = 0; i < 3; i++)
		cr_assert_str_eq(ro.params[i], seen.params[i]);
	rm_tmp();
}

/* ---- upgrading a file of an earlier version ---- */

/* What version 4 added: a check's parameters, columns of checks. */
static const char drop_v4[] =
	"ALTER TABLE checks DROP COLUMN name_a; ALTER TABLE checks DROP COLUMN name_b;"
	"ALTER TABLE checks DROP COLUMN metric; ALTER TABLE checks DROP COLUMN tensors;"
	"ALTER TABLE checks DROP COLUMN rtol; ALTER TABLE checks DROP COLUMN atol;"
	"ALTER TABLE checks DROP COLUMN floor_db; ALTER TABLE checks DROP COLUMN expect;"
	"ALTER TABLE checks DROP COLUMN expect_step; ALTER TABLE checks DROP COLUMN expect_rank;"
	"ALTER TABLE checks DROP COLUMN expect_tensor;";

/* A database as version 'version' of lockstep left it, holding one complete run of 2 steps
   and, from version 2 on, a verdict "old" of it: written by this build, then what later
   versions added dropped. */
/* A night-over-night verdict (version 9) of suite 1: a change at step 2, rank 1, and one
   read back as it was stored, NULLs included. */
struct nightly_seen {
	int n, step, rank, fp_equal;
	int64_t run_id, prev_run_id, prev_suite_id;
	char verdict[16], keys[64], tensor[32], field[16], message[64];
};

static void put_nightly(lks_store *s, int64_t run)
{
	int64_t suite;
	lks_nightly_rec r = { .suite_id = 1, .case_name = "tiny", .run_name = "bf16",
	                      .run_id = run, .prev_run_id = 0, .prev_suite_id = 0,
	                      .verdict = "changed", .fp_equal = 0, .fp_keys = "compiler env.X",
	                      .step = 2, .rank = 1, .tensor = NULL, .field = "loss",
	                      .message = "step 2, rank 1: loss" };

	cr_assert_eq(lks_store_begin_suite(s, "lockstep run", &suite), 0, "%s", lks_errmsg());
	cr_assert_eq(suite, 1, "the old file held no suite");
	cr_assert_eq(lks_store_nightly(s, &r), 0, "%s", lks_errmsg());
}

static int see_nightly(void *arg, const lks_nightly_rec *r)
{
	struct nightly_seen *n = arg;

	n->n++;
	n->step = r->step;
	n->rank = r->rank;
	n->fp_equal = r->fp_equal;
	n->run_id = r->run_id;
	n->prev_run_id = r->prev_run_id;
	n->prev_suite_id = r->prev_suite_id;
	snprintf(n->verdict, sizeof(n->verdict), "%s", r->verdict);
	snprintf(n->keys, sizeof(n->keys), "%s", r->fp_keys);
	snprintf(n->tensor, sizeof(n->tensor), "%s", r->tensor ? r->tensor : "(null)");
	snprintf(n->field, sizeof(n->field), "%s", r->field ? r->field : "(null)");
	snprintf(n->message, sizeof(n->message), "%s", r->message ? r->message : "(null)");
	return 0;
}

static void expect_nightly(const struct nightly_seen *n, int64_t run)
{
	cr_assert_eq(n->n, 1);
	cr_assert_str_eq(n->verdict, "changed");
	cr_assert_str_eq(n->keys, "compiler env.X");
	cr_assert_eq(n->step, 2);
	cr_assert_eq(n->rank, 1);
	cr_assert_eq(n->fp_equal, 0);
	cr_assert_eq(n->run_id, run);
	cr_assert_eq(n->prev_run_id, 0);
	cr_assert_eq(n->prev_suite_id, 0);
	cr_assert_str_eq(n->tensor, "(null)");
	cr_assert_str_eq(n->field, "loss");
	cr_assert_str_eq(n->message, "step 2, rank 1: loss");
}

/* The packed metrics of step 1000 rank 0 put by hand read back as one metric: loss, NaN. */
static int see_metric(void *arg, const lks_metric_row *r)
{
	lks_metric_row *seen = arg;

	cr_assert_eq(seen->step, 0, "more than one metric read back");
	*seen = *r;
	seen->name = NULL;
	cr_assert_str_eq(r->name, "loss");
	return 0;
}

static void expect_nan_loss(lks_store *s, int64_t run)
{
	lks_metric_row seen = { 0 };

	cr_assert_eq(lks_store_get_metrics(s, run, NULL, see_metric, &seen), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(seen.step, 1000);
	cr_assert_eq(seen.rank, 0);
	cr_assert_eq(seen.kind, LKS_METRIC_NUMERICS);
	cr_assert(isnan(seen.value), "%g", seen.value);
}

/* A block of step 1001 rank 0 (grad_norm 2.5) stored in the run that holds the packed
   row of step 1000 above: both read back, by step. */
static int see_two(void *arg, const lks_metric_row *r)
{
	lks_metric_row *seen = arg;
	int i = seen[0].rank++;  /* rows seen, counted in the first's rank */

	cr_assert_lt(i, 2, "more than two metrics read back");
	seen[1 + i] = *r;
	seen[1 + i].name = NULL;
	cr_assert_str_eq(r->name, i == 0 ? "loss" : "grad_norm");
	return 0;
}

static void expect_block_after_packed(lks_store *s, int64_t run)
{
	lks_metric_row row = { 1001, 0, "grad_norm", LKS_METRIC_NUMERICS, 2.5, 0 }, seen[3] = { 0 };
	lks_block *b = lks_block_new();

	cr_assert_eq(lks_block_add(b, 1001, 0, &row, 1), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_import_block(s, run, 1, b), 0, "%s", lks_errmsg());
	lks_block_free(b);
	cr_assert_eq(lks_store_get_metrics(s, run, NULL, see_two, seen), 0, "%s", lks_errmsg());
	cr_assert_eq(seen[0].rank, 2);
	cr_assert_eq(seen[1].step, 1000);
	cr_assert(isnan(seen[1].value));
	cr_assert_eq(seen[2].step, 1001);
	cr_assert_eq(seen[2].value, 2.5);
}

static void make_old_db(const char *path, int version, int64_t *run)
{
	lks_run_info info = run_info("bf16", 2);
	lks_check_rec old = verdict("old", "fail");
	lks_store *s;
	char pragma[64];

	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_begin_run(s, &info, run), 0, "%s", lks_errmsg());
	put_tensors(s, *run, 10);
	put_steps(s, *run, 0, 2, 10);
	cr_assert_eq(lks_store_end_run(s, *run, "complete"), 0, "%s", lks_errmsg());
	old.run_a = *run;
	if (version >= 2)
		cr_assert_eq(lks_store_check(s, &old), 0, "%s", lks_errmsg());
	lks_store_close(s);
	if (version < 11)
		raw_exec(path, "DROP TABLE tensor_blocks;");
	if (version < 13)
		raw_exec(path, "DROP TABLE screens;");
	if (version < 14)
		raw_exec(path, "ALTER TABLE suites DROP COLUMN finished; "
		               "ALTER TABLE suites DROP COLUMN stopped;");
	if (version < 12)
		raw_exec(path, "DROP TABLE states;");
	if (version < 10)
		raw_exec(path, "DROP TABLE import_blocks;");
	if (version < 9)
		raw_exec(path, "DROP TABLE nightly;");
	if (version < 8)
		raw_exec(path, "ALTER TABLE suites DROP COLUMN pruned; "
		               "ALTER TABLE suites DROP COLUMN pinned;");
	if (version < 7)
		raw_exec(path, "ALTER TABLE steps DROP COLUMN metrics;");
	if (version < 6)
		raw_exec(path, "DROP TABLE gemm_algos;");
	if (version < 5)
		raw_exec(path, "DROP TABLE health; ALTER TABLE steps DROP COLUMN mem_peak;");
	if (version < 4)
		raw_exec(path, drop_v4);
	if (version < 3)
		raw_exec(path, "DROP TABLE probes; DROP TABLE probe_sessions;");
	if (version < 2)
		raw_exec(path, "DROP TABLE checks;");
	snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d", version);
	raw_exec(path, pragma);
}

Test(trace_store, earlier_version_is_upgraded_keeping_everything)
{
	for (int version = 1; version < LKS_STORE_SCHEMA_VERSION; version++) {
		lks_check_rec now = verdict("now", "pass");
		struct nightly_seen night = { 0 };
		struct checks_seen seen = { 0 };
		char path[512];
		lks_store *s;
		int64_t run, session;

		mkdir_tmp();
		path_in_tmp(path, sizeof(path), "old.db");
		make_old_db(path, version, &run);
		cr_assert_eq(lks_store_open(path, &s), 0, "version %d: %s", version, lks_errmsg());
		cr_assert_eq(sql_int(s, "PRAGMA user_version"), LKS_STORE_SCHEMA_VERSION);
		cr_assert_eq(sql_int(s, "SELECT count(*) FROM sqlite_master WHERE type = 'table' "
		                        "AND name IN ('checks', 'probe_sessions', 'probes')"), 3);
		cr_assert_eq(sql_int(s, "SELECT count(*) FROM pragma_table_info('checks') "
		                        "WHERE name IN ('name_a', 'rtol', 'expect', 'expect_tensor')"), 4);
		/* version 5: the health table, and the steps' memory high-water mark, NULL (read
		   0: not measured) in the steps stored before */
		cr_assert_eq(sql_int(s, "SELECT count(*) FROM sqlite_master WHERE type = 'table' "
		                        "AND name = 'health'"), 1);
		cr_assert_eq(sql_int(s, "SELECT count(*) FROM steps WHERE mem_peak IS NULL"),
		             2 * RANKS);
		/* version 6: the table of a run's GEMM algorithms, which takes its rows */
		cr_assert_eq(sql_int(s, "SELECT count(*) FROM sqlite_master WHERE type = 'table' "
		                        "AND name = 'gemm_algos'"), 1);
		cr_assert_eq(lks_store_gemm_plans(s, run, &(lks_gemm_algo){ .M = 4, .N = 8, .K = 16,
		             .gemms = 1 }, 1), 0, "%s", lks_errmsg());
		cr_assert_eq(sql_int(s, "SELECT count(*) FROM gemm_algos WHERE m = 4"), 1);
		expect_status(s, run, "complete");
		check_steps(s, run, 0, 2, 10);
		cr_assert_eq(lks_store_health(s, run, &(lks_health_row){ .phase = "before",
		             .device = 0, .key = "ecc_corrected", .value = 1 }, 1), 0, "%s",
		             lks_errmsg());
		cr_assert_eq(count(s, run, LKS_TABLE_TENSORS), 10);
		/* version 7: the steps' metrics, NULL in the steps stored before, and a step row
		   takes them (NaN read back) */
		cr_assert_eq(sql_int(s, "SELECT count(*) FROM steps WHERE metrics IS NULL"),
		             2 * RANKS);
		cr_assert_eq(sql_int(s, "INSERT INTO steps (run_id, step, rank, nonfinite, metrics) "
		                        "VALUES (1, 1000, 0, 1, X'006C6F737300000000000000F87F') "
		                        "RETURNING run_id"), 1);
		expect_nan_loss(s, 1);
		/* version 10: import_blocks, empty, and a block of the same run reads back after
		   the packed row */
		cr_assert_eq(sql_int(s, "SELECT count(*) FROM import_blocks"), 0);
		expect_block_after_packed(s, 1);
		/* version 11: tensor_blocks, empty, and it takes a row */
		cr_assert_eq(sql_int(s, "SELECT count(*) FROM tensor_blocks"), 0);
		cr_assert_eq(sql_int(s, "INSERT INTO tensor_blocks (run_id, step, rank, seq, records, "
		                        "data) VALUES (1, 0, 0, 0, 0, X'00') RETURNING step + 1"), 1);
		/* version 9: the nightly table, empty, and it takes a verdict that reads back */
		cr_assert_eq(sql_int(s, "SELECT count(*) FROM nightly"), 0);
		put_nightly(s, run);
		cr_assert_eq(lks_store_get_nightly(s, 1, see_nightly, &night), 0, "%s", lks_errmsg());
		expect_nightly(&night, run);
		/* version 8: a suite's pin and when its stat rows were pruned, NULL until set (the
		   suite of version 9's verdict, begun after the upgrade) */
		cr_assert_eq(sql_int(s, "SELECT (pinned IS NULL) + (pruned IS NULL) FROM suites "
		                        "WHERE suite_id = 1"), 2);
		cr_assert_eq(sql_int(s, "UPDATE suites SET pinned = 1 RETURNING pinned"), 1);
		/* and the new tables and columns take rows */
		cr_assert_eq(lks_store_begin_session(s, "bisect", "lockstep bisect", "c.ini", &session),
		             0, "%s", lks_errmsg());
		cr_assert_eq(lks_store_check(s, &now), 0, "%s", lks_errmsg());
		/* the verdict stored before: its parameters none, the rest as it was */
		cr_assert_eq(lks_store_get_checks(s, 0, see_check, &seen), 0, "%s", lks_errmsg());
		cr_assert_eq(seen.n, version >= 2 ? 2 : 1, "version %d", version);
		if (version >= 2) {
			lks_check_rec old = verdict("old", "fail");

			cr_assert_str_eq(seen.name[0], "old");
			/* stored with its parameters from version 4 on */
			expect_params(&seen, 0, version >= 4 ? &old.params : &no_params);
			cr_assert(strstr(seen.verdict[0], "head.weight.grad l2"), "%s", seen.verdict[0]);
		}
		expect_params(&seen, seen.n - 1, &now.params);
		lks_store_close(s);
		rm_tmp();
	}
}

/* ---- opening to read only ---- */

static int see_nothing_checked(void *arg, const lks_check_rec *r)
{
	(void)arg;
	cr_assert_fail("a verdict '%s' in a file of version 1", r->check_name);
	return 1;
}

Test(trace_store, readonly_reads_and_never_writes)
{
	char path[512];
	lks_store *s;
	int64_t run, suite;
	struct snapshot before;

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "ro.db");
	run = make_db(path);
	before = take(path);
	cr_assert_eq(lks_store_open_readonly(path, &s), 0, "%s", lks_errmsg());
	expect_status(s, run, "complete");
	check_steps(s, run, 0, 2, 10);
	cr_assert_neq(lks_store_begin_suite(s, "lockstep run", &suite), 0, "a read-only store wrote");
	lks_store_close(s);
	/* SQLite's reader may leave the -wal and -shm of a WAL database beside it, not more */
	expect_same_bytes(path, before);
	free(before.bytes);

	/* an earlier version is read as it is: not upgraded; the tables added since read as
	   empty, as an upgrade would make them (a report reads the checks of version 2) */
	path_in_tmp(path, sizeof(path), "old.db");
	make_old_db(path, 1, &run);
	before = take(path);
	cr_assert_eq(lks_store_open_readonly(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(sql_int(s, "PRAGMA user_version"), 1);
	expect_status(s, run, "complete");
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM checks"), 0);
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM checks WHERE expect IS NOT NULL"), 0,
	             "the columns of version 4, on the TEMP table of version 2");
	cr_assert_eq(lks_store_get_checks(s, 0, see_nothing_checked, NULL), 0, "%s", lks_errmsg());
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM probes"), 0);
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM main.sqlite_master WHERE name = 'checks'"), 0);
	lks_store_close(s);
	expect_same_bytes(path, before);
	free(before.bytes);
	rm_tmp();
}

/* A file of version 2 or 3 read as it is: its checks table lacks the parameters, which
   read back as none (a TEMP VIEW in the store's connection), and the file is not touched;
   the report and diff of an old database read its verdicts so. */
Test(trace_store, readonly_reads_earlier_verdicts_without_parameters)
{
	for (int version = 2; version <= 3; version++) {
		struct checks_seen seen = { 0 };
		struct snapshot before;
		lks_metric_row none = { 0 };
		char path[512];
		lks_store *s;
		int64_t run;

		mkdir_tmp();
		path_in_tmp(path, sizeof(path), "old.db");
		make_old_db(path, version, &run);
		before = take(path);
		cr_assert_eq(lks_store_open_readonly(path, &s), 0, "version %d: %s", version,
		             lks_errmsg());
		cr_assert_eq(sql_int(s, "PRAGMA user_version"), version);
		cr_assert_eq(sql_int(s, "SELECT count(*) FROM pragma_table_info('checks', 'main') "
		                        "WHERE name = 'rtol'"), 0, "the file was upgraded");
		cr_assert_eq(lks_store_get_checks(s, 0, see_check, &seen), 0, "version %d: %s",
		             version, lks_errmsg());
		cr_assert_eq(seen.n, 1);
		cr_assert_str_eq(seen.name[0], "old");
		expect_params(&seen, 0, &no_params);
		cr_assert(strstr(seen.verdict[0], "fail") && strstr(seen.verdict[0], "beyond rtol"),
		          "%s", seen.verdict[0]);
		cr_assert_eq(sql_int(s, "SELECT count(*) FROM probes"), 0);
		/* version 5's table empty, its column NULL, as an upgrade would make them; and
		   version 6's table empty */
		cr_assert_eq(sql_int(s, "SELECT count(*) FROM health"), 0);
		cr_assert_eq(sql_int(s, "SELECT count(*) FROM gemm_algos"), 0);
		/* version 7's column NULL: the run has steps, and no metrics read back */
		cr_assert_eq(sql_int(s, "SELECT count(*) FROM steps WHERE metrics IS NOT NULL"), 0);
		cr_assert_eq(lks_store_get_metrics(s, run, NULL, see_metric, &none), 0,
		             "version %d: %s", version, lks_errmsg());
		cr_assert_eq(none.step, 0, "version %d: a metric read back", version);
		/* version 8's columns NULL */
		cr_assert_eq(sql_int(s, "SELECT count(*) FROM pragma_table_info('suites', 'main') WHERE "
		                        "name IN ('pinned', 'pruned')"), 0, "a column in the file");
		cr_assert_eq(sql_int(s, "SELECT count(*) FROM suites WHERE pinned IS NOT NULL OR "
		                        "pruned IS NOT NULL"), 0);
		cr_assert_eq(sql_int(s, "SELECT count(*) FROM nightly"), 0);  /* version 9's */
		cr_assert_eq(sql_int(s, "SELECT count(*) FROM import_blocks"), 0);  /* 10's */
		cr_assert_eq(sql_int(s, "SELECT count(*) FROM tensor_blocks"), 0);  /* 11's */
		cr_assert_eq(sql_int(s, "SELECT count(*) FROM screens"), 0);  /* 13's */
		cr_assert_eq(sql_int(s, "SELECT count(*) FROM suites WHERE finished IS NOT NULL"),
		             0);  /* 14's */
		cr_assert_eq(sql_int(s, "SELECT count(*) FROM steps WHERE mem_peak IS NULL"),
		             2 * RANKS);
		check_steps(s, run, 0, 2, 10);
		lks_store_close(s);
		expect_same_bytes(path, before);
		free(before.bytes);
		rm_tmp();
	}
}

/* Refused, LKS_E_BAD_INPUT with the reason, and left as it was. */
static void expect_refused(const char *path, const char *why)
{
	lks_store *s = (lks_store *)1;

	cr_assert_eq(lks_store_open_readonly(path, &s), LKS_E_BAD_INPUT, "'%s': %s", path,
	             lks_errmsg());
	cr_assert_null(s);
	cr_assert(strstr(lks_errmsg(), path) && strstr(lks_errmsg(), why), "%s", lks_errmsg());
}

Test(trace_store, readonly_refuses_what_is_not_ours_untouched)
{
	static const struct {
		const char *name, *sql, *text, *why;
	} files[] = {
		{ "empty.db", NULL, "", "an empty file" },
		{ "notes.csv", NULL, "step,loss\n0,10.5\n", "not an SQLite file" },
		{ "other.db", "CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('keep me');", NULL,
		  "another program" },
		{ "bare.db", "CREATE TABLE t (x); DROP TABLE t;", NULL, "without tables" },
	};
	char path[512];
	struct snapshot before;
	FILE *f;

	mkdir_tmp();
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		path_in_tmp(path, sizeof(path), files[i].name);
		if (files[i].sql) {
			raw_exec(path, files[i].sql);
		} else {
			cr_assert_not_null(f = fopen(path, "wb"));
			fputs(files[i].text, f);
			fclose(f);
		}
		before = take(path);
		expect_refused(path, files[i].why);
		expect_unchanged(path, before);
	}
	/* missing: not created */
	path_in_tmp(path, sizeof(path), "none.db");
	expect_refused(path, "no database");
	cr_assert(!exists(path), "a missing database was created");
	/* not a regular file: a folder, and a FIFO (opening it would wait for a writer) */
	path_in_tmp(path, sizeof(path), "dir.db");
	cr_assert_eq(mkdir(path, 0777), 0);
	expect_refused(path, "not a regular file");
	rmdir(path);
	path_in_tmp(path, sizeof(path), "fifo.db");
	cr_assert_eq(mkfifo(path, 0666), 0);
	expect_refused(path, "not a regular file");
	/* ours, but of a later version */
	path_in_tmp(path, sizeof(path), "future.db");
	make_db(path);
	raw_exec(path, "PRAGMA user_version = 15");
	before = take(path);
	expect_refused(path, "version 15");
	expect_same_bytes(path, before);
	free(before.bytes);
	rm_tmp();
}

/* In a child that cannot write to the folder (chmod a-w; root, whom that does not stop,
   becomes nobody), opens path read-only and counts its suites; the count, or -1 with the
   message in msg, or -2 when the child could not give up root. */
static int count_suites_read_only(const char *path, char *msg, size_t size)
{
	int fds[2], st;
	pid_t pid;
	ssize_t n;

	cr_assert_eq(pipe(fds), 0);
	cr_assert_geq(pid = fork(), 0);
	if (pid == 0) {
		lks_store *s;
		int rc;

		close(fds[0]);
		if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
			_exit(102);
		if (access(tmpdir, W_OK) == 0)
			_exit(102);
		if ((rc = lks_store_open_readonly(path, &s)) != 0) {
			if (write(fds[1], lks_errmsg(), strlen(lks_errmsg())) < 0)
				_exit(103);
			_exit(101);
		}
		rc = (int)sql_int(s, "SELECT count(*) FROM suites");
		lks_store_close(s);
		_exit(rc < 100 ? rc : 100);
	}
	close(fds[1]);
	n = read(fds[0], msg, size - 1);
	msg[n > 0 ? n : 0] = 0;
	close(fds[0]);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "the reader died");
	return WEXITSTATUS(st) == 101 ? -1 : WEXITSTATUS(st) == 102 ? -2 : WEXITSTATUS(st);
}

/* A database with one suite in the write-ahead log of a writer killed before it folded the
   log in; without its -shm when shm is 0. */
static void killed_writer(const char *path, int shm)
{
	char side[600];
	pid_t pid;
	int st;

	make_db(path);
	cr_assert_geq(pid = fork(), 0);
	if (pid == 0) {
		lks_store *s;
		int64_t suite;

		if (lks_store_open(path, &s) || lks_store_begin_suite(s, "killed", &suite))
			_exit(1);
		_exit(0);  /* no close: the log stays */
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	snprintf(side, sizeof(side), "%s-wal", path);
	cr_assert(exists(side));
	snprintf(side, sizeof(side), "%s-shm", path);
	if (!shm)
		cr_assert_eq(unlink(side), 0);
}

/* Read-only media: a WAL database whose folder cannot be written has no -shm to make. One
   without a log is read immutable; one with a log and its -shm is read whole; a log
   without its index cannot be read, and the message says why; nor can a file beside the
   hot journal of a writer killed mid-import (read immutable, the file showed its run). */
Test(trace_store, readonly_on_a_read_only_folder)
{
	char path[512], msg[1024], cmd[600];
	struct snapshot before[4];
	static const char *const names[] = { "clean.db", "log.db", "lost.db", "ghost.db" };

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), names[0]);
	make_db(path);
	path_in_tmp(path, sizeof(path), names[1]);
	killed_writer(path, 1);
	path_in_tmp(path, sizeof(path), names[2]);
	killed_writer(path, 0);
	path_in_tmp(path, sizeof(path), names[3]);
	make_db(path);
	kill_mid_import(path, "ghost");
	for (int i = 0; i < 4; i++) {
		path_in_tmp(path, sizeof(path), names[i]);
		before[i] = take(path);
	}
	snprintf(cmd, sizeof(cmd), "chmod -R a-w,a+rX '%s'", tmpdir);
	cr_assert_eq(system(cmd), 0);

	path_in_tmp(path, sizeof(path), names[0]);
	if (count_suites_read_only(path, msg, sizeof(msg)) == -2)
		cr_skip_test("cannot open '%s' as a user who cannot write there", path);
	cr_expect_eq(count_suites_read_only(path, msg, sizeof(msg)), 0, "%s", msg);
	path_in_tmp(path, sizeof(path), names[1]);
	cr_expect_eq(count_suites_read_only(path, msg, sizeof(msg)), 1, "the suite in the log: %s",
	             msg);
	path_in_tmp(path, sizeof(path), names[2]);
	cr_expect_eq(count_suites_read_only(path, msg, sizeof(msg)), -1);
	cr_expect(strstr(msg, "lost.db-wal") && strstr(msg, "lost.db-shm"), "%s", msg);
	path_in_tmp(path, sizeof(path), names[3]);
	cr_expect_eq(count_suites_read_only(path, msg, sizeof(msg)), -1, "the killed import read");
	cr_expect(strstr(msg, "ghost.db-journal"), "%s", msg);

	snprintf(cmd, sizeof(cmd), "chmod -R u+w '%s'", tmpdir);
	cr_assert_eq(system(cmd), 0);
	for (int i = 0; i < 4; i++) {
		path_in_tmp(path, sizeof(path), names[i]);
		expect_same_bytes(path, before[i]);
		free(before[i].bytes);
	}
	path_in_tmp(path, sizeof(path), "clean.db-shm");
	cr_expect(!exists(path), "a -shm appeared");
	rm_tmp();
}
