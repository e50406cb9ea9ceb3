/*
 * test_trace_store.c: the SQLite trace store. The schema and its version; data read back
 * exactly as written (hashes with the top bit set, NaN as NULL); files that are not ours
 * refused and left byte for byte as they were; a failed step rolled back whole; a writer
 * killed with SIGKILL mid-run leaving an intact database in which the killed run is
 * 'incomplete' and holds only whole steps; two processes writing one file at once.
 * (Check parameters, earlier versions and opening read-only: test_store_upgrade.c.)
 * Every test works in its own mkdtemp folder (store_fixture.h).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store_fixture.h"
#include "harness/store/trace_store.h"
#include "harness/store/trace_store_impl.h"
#include "kernels/err.h"

/* ---- schema ---- */

Test(trace_store, creates_schema_with_version)
{
	static const char *const tables[] = { "suites", "runs", "tensors", "steps", "stats", "events",
	                                      "checks", "probe_sessions", "probes", "health",
	                                      "gemm_algos", "nightly", "import_blocks",
	                                      "tensor_blocks", "states", "screens" };
	char path[512], mode[16], sql[128];
	lks_store *s;

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "new.db");
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(sql_int(s, "PRAGMA user_version"), LKS_STORE_SCHEMA_VERSION);
	cr_assert_eq(LKS_STORE_SCHEMA_VERSION, 14);
	cr_assert_neq(sql_int(s, "PRAGMA application_id"), 0);
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		snprintf(sql, sizeof(sql), "SELECT count(*) FROM sqlite_master WHERE type = 'table' "
		         "AND name = '%s'", tables[i]);
		cr_assert_eq(sql_int(s, sql), 1, "no table '%s'", tables[i]);
	}
	/* an imported run's metrics: packed in its steps rows (version 7) */
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM pragma_table_info('steps') "
	                        "WHERE name = 'metrics' AND type = 'BLOB'"), 1);
	/* the bulk table has no rowid and no index of its own beyond its key */
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM sqlite_master WHERE tbl_name = 'stats' "
	                        "AND type = 'index'"), 0);
	cr_assert_eq(sql_int(s, "SELECT sql LIKE '%WITHOUT ROWID%' FROM sqlite_master "
	                        "WHERE name = 'stats'"), 1);
	sql_text(s, "PRAGMA journal_mode", mode, sizeof(mode));
	cr_assert_str_eq(mode, "wal");
	cr_assert_eq(sql_int(s, "PRAGMA foreign_keys"), 1);
	cr_assert_eq(sql_int(s, "PRAGMA synchronous"), 1);  /* NORMAL */
	cr_assert_gt(sql_int(s, "PRAGMA busy_timeout"), 0);
	/* a new file's pages: 16 KiB, not SQLite's 4 KiB (trace_store_open.c says why) */
	cr_assert_eq(sql_int(s, "PRAGMA page_size"), 16384);
	lks_store_close(s);

	/* opening again neither fails nor adds anything */
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM sqlite_master WHERE type = 'table'"),
	             (int64_t)(sizeof(tables) / sizeof(tables[0])));
	lks_store_close(s);
	rm_tmp();
}

Test(trace_store, empty_file_gets_schema)
{
	char path[512];
	lks_store *s;
	FILE *f;

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "empty.db");
	f = fopen(path, "wb");
	cr_assert_not_null(f);
	fclose(f);
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(sql_int(s, "PRAGMA user_version"), LKS_STORE_SCHEMA_VERSION);
	cr_assert_eq(sql_int(s, "PRAGMA page_size"), 16384);
	lks_store_close(s);
	rm_tmp();
}

/* An SQLite file made before, without tables: it gets the schema and keeps its page size
   (a page size is set only where no page is written yet). */
Test(trace_store, made_file_keeps_its_page_size)
{
	char path[512];
	lks_store *s;

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "made.db");
	raw_exec(path, "PRAGMA page_size = 4096; CREATE TABLE x (a); DROP TABLE x;");
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(sql_int(s, "PRAGMA user_version"), LKS_STORE_SCHEMA_VERSION);
	cr_assert_eq(sql_int(s, "PRAGMA page_size"), 4096);
	lks_store_close(s);
	rm_tmp();
}

Test(trace_store, cannot_open_in_missing_folder)
{
	lks_store *s = (lks_store *)1;

	cr_assert_eq(lks_store_open("/nonexistent-lks-dir/x/trace.db", &s), -1);
	cr_assert_null(s);
	cr_assert(strstr(lks_errmsg(), "'/nonexistent-lks-dir/x/trace.db'"), "%s", lks_errmsg());
}

/* ---- refusing files that are not ours, untouched ---- */

Test(trace_store, refuses_other_sqlite_database)
{
	char path[512];
	lks_store *s;
	struct snapshot before;

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "other.db");
	raw_exec(path, "CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('keep me');");
	before = take(path);
	cr_assert_eq(lks_store_open(path, &s), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), path) && strstr(lks_errmsg(), "not a lockstep database"),
	          "%s", lks_errmsg());
	expect_unchanged(path, before);
	rm_tmp();
}

Test(trace_store, refuses_empty_sqlite_database_of_another_program)
{
	char path[512];
	lks_store *s;
	struct snapshot before;

	/* no tables, but a header field set: somebody's database, not an empty file */
	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "other.db");
	raw_exec(path, "PRAGMA application_id = 1234; CREATE TABLE t (x); DROP TABLE t;");
	before = take(path);
	cr_assert_eq(lks_store_open(path, &s), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "not a lockstep database"), "%s", lks_errmsg());
	expect_unchanged(path, before);
	rm_tmp();
}

Test(trace_store, refuses_text_file)
{
	static const char text[] = "step,loss\n0,10.5\n1,9.75\n"
	                           "this is a CSV file that somebody named trace.db by mistake\n";
	char path[512];
	lks_store *s;
	struct snapshot before;
	FILE *f;

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "trace.db");
	f = fopen(path, "wb");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	before = take(path);
	cr_assert_eq(lks_store_open(path, &s), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), path) && strstr(lks_errmsg(), "not a lockstep database"),
	          "%s", lks_errmsg());
	expect_unchanged(path, before);
	rm_tmp();
}

/* What is not a regular file is bad input, named, before SQLite opens it: a folder, a FIFO
   and /dev/null were a "disk I/O error" or "unable to open" (exit 3), and nothing is made
   beside them. */
Test(trace_store, refuses_what_is_not_a_regular_file, .timeout = 30)
{
	char path[512], side[600];
	const char *paths[3];
	lks_store *s;

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "fifo.db");
	cr_assert_eq(mkfifo(path, 0644), 0);
	paths[0] = path;
	paths[1] = tmpdir;
	paths[2] = "/dev/null";
	for (int i = 0; i < 3; i++) {
		cr_expect_eq(lks_store_open(paths[i], &s), LKS_E_BAD_INPUT, "%s: %s", paths[i],
		             lks_errmsg());
		cr_expect(strstr(lks_errmsg(), paths[i]) && strstr(lks_errmsg(), "not a regular file"),
		          "%s", lks_errmsg());
	}
	snprintf(side, sizeof(side), "%s-journal", path);
	cr_expect(!exists(side), "'%s' made", side);
	unlink(path);
	rm_tmp();
}

Test(trace_store, refuses_other_schema_version)
{
	char path[512];
	lks_store *s;
	int64_t run;
	lks_run_info info = run_info("bf16", 2);
	struct snapshot before;

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "future.db");
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_begin_run(s, &info, &run), 0, "%s", lks_errmsg());
	lks_store_close(s);
	/* as a later lockstep would leave it */
	raw_exec(path, "PRAGMA user_version = 15");
	cr_assert_eq(LKS_STORE_SCHEMA_VERSION, 14, "make the version above a later one");
	before = take(path);
	cr_assert_eq(lks_store_open(path, &s), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), path) && strstr(lks_errmsg(), "version 15"), "%s",
	          lks_errmsg());
	expect_unchanged(path, before);
	rm_tmp();
}

struct probes_seen {
	int n;
	lks_probe_rec rec[3];
	char combo[3][32], outcome[3][16], output[3][32];
};

static int see_probe(void *arg, const lks_probe_rec *p)
{
	struct probes_seen *seen = arg;
	int i = seen->n++;

	if (i >= 3)
		return 0;
	seen->rec[i] = *p;
	snprintf(seen->combo[i], 32, "%s", p->combo);
	snprintf(seen->outcome[i], 16, "%s", p->outcome);
	snprintf(seen->output[i], 32, "%s", p->output ? p->output : "(null)");
	seen->rec[i].check_name = p->check_name ? "set" : NULL;  /* the text goes with the row */
	return 0;
}

Test(trace_store, probes_read_back_per_session)
{
	char path[512];
	lks_store *s;
	int64_t s1, s2, suite, id, last, found;
	lks_probe_rec good = { .combo = "cuda-12.4", .cases = "cases/a.ini", .outcome = "good",
		.exit_code = 0, .seconds = 1.25, .output = "ok", .started = "2024-05-01T00:00:00Z" };
	lks_probe_rec hung = { .combo = "cuda-12.5", .cases = "cases/a.ini", .check_name = "finite",
		.outcome = "timeout", .exit_code = -1, .signal = SIGKILL, .seconds = 600.5,
		.started = "2024-05-01T00:00:02Z" };

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "probes.db");
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_begin_session(s, "matrix", "lockstep matrix", "c.ini", &s1), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(lks_store_begin_session(s, "bisect", "lockstep bisect", "c.ini", &s2), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(lks_store_last_suite(s, &last), 0, "%s", lks_errmsg());
	cr_assert_eq(last, 0, "no suite yet");
	cr_assert_eq(lks_store_begin_suite(s, "lockstep check", &suite), 0, "%s", lks_errmsg());
	lks_run_info info = run_info("bf16", 2);
	info.suite_id = suite;
	info.combo = "cuda-12.4";
	cr_assert_eq(lks_store_begin_run(s, &info, &id), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_combo_suite(s, "cuda-12.4", 0, &found), 0, "%s", lks_errmsg());
	cr_assert_eq(found, suite);
	cr_assert_eq(lks_store_combo_suite(s, "cuda-12.4", suite, &found), 0, "%s", lks_errmsg());
	cr_assert_eq(found, 0, "nothing after the suite");
	cr_assert_eq(lks_store_combo_suite(s, "cuda-12.5", 0, &found), 0, "%s", lks_errmsg());
	cr_assert_eq(found, 0, "no run of that combo");

	good.session_id = s1;
	good.suite_id = suite;
	hung.session_id = s2;
	cr_assert_eq(lks_store_probe(s, &good, &id), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_probe(s, &hung, NULL), 0, "%s", lks_errmsg());
	good.outcome = "rotten";  /* not an outcome: the table refuses it */
	cr_assert_neq(lks_store_probe(s, &good, NULL), 0);
	cr_assert_eq(lks_store_end_session(s, s2, "first bad: cuda-12.5"), 0, "%s", lks_errmsg());
	lks_store_close(s);

	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	struct probes_seen one = { 0 }, all = { 0 };
	cr_assert_eq(lks_store_get_probes(s, s2, see_probe, &one), 0, "%s", lks_errmsg());
	cr_assert_eq(one.n, 1);
	cr_assert_str_eq(one.combo[0], "cuda-12.5");
	cr_assert_str_eq(one.outcome[0], "timeout");
	cr_assert(one.rec[0].exit_code == -1 && one.rec[0].signal == SIGKILL
	          && one.rec[0].seconds == 600.5 && one.rec[0].suite_id == 0
	          && one.rec[0].check_name != NULL);
	cr_assert_str_eq(one.output[0], "(null)");
	cr_assert_eq(lks_store_get_probes(s, 0, see_probe, &all), 0, "%s", lks_errmsg());
	cr_assert_eq(all.n, 2);
	cr_assert(all.rec[0].probe_id == id && all.rec[0].exit_code == 0 && all.rec[0].signal == 0
	          && all.rec[0].suite_id == suite && all.rec[0].check_name == NULL);
	cr_assert_str_eq(all.output[0], "ok");
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM probe_sessions WHERE finished IS NOT NULL "
	                        "AND result = 'first bad: cuda-12.5'"), 1);
	lks_store_close(s);
	rm_tmp();
}

/* ---- writing and reading back ---- */

struct run_seen {
	int n;
	int64_t run_id[4];
	char status[4][16];
	int ok[4];
};

static int see_run(void *arg, const lks_run_rec *r)
{
	struct run_seen *seen = arg;
	lks_run_info want = run_info(r->info.run_name, 3);
	int i = seen->n++;

	if (i >= 4)
		return 1;
	seen->run_id[i] = r->run_id;
	snprintf(seen->status[i], sizeof(seen->status[i]), "%s", r->status);
	seen->ok[i] = !strcmp(r->info.case_name, want.case_name)
	              && !strcmp(r->info.case_path, want.case_path)
	              && !strcmp(r->info.case_text, want.case_text)
	              && !strcmp(r->info.recipe, want.recipe)
	              && !strcmp(r->info.options, want.options)
	              && !strcmp(r->info.backend, want.backend)
	              && r->info.world_size == RANKS && r->info.steps == 3
	              && r->info.seed == 0xfedcba9876543210ull && r->info.combo == NULL
	              && !strcmp(r->info.fingerprint, want.fingerprint) && r->started
	              && (strcmp(r->status, "incomplete") ? r->finished != NULL : r->finished == NULL);
	return 0;
}

struct tensors_seen {
	int n, ok;
};

static int see_tensor(void *arg, int seq, const char *name, lks_phase phase)
{
	struct tensors_seen *seen = arg;
	char want[48];

	snprintf(want, sizeof(want), "blocks.%d.mlp.up.weight%s", seq / 4, seq % 2 ? ".grad" : "");
	seen->ok &= seq == seen->n && !strcmp(name, want) && phase == (lks_phase)(seq % 4);
	seen->n++;
	return 0;
}

struct events_seen {
	int n;
	lks_event_rec ev[2];
	char tensor[2][64], kind[2][32], message[2][64];
};

static int see_event(void *arg, const lks_event_rec *ev)
{
	struct events_seen *seen = arg;
	int i = seen->n++;

	if (i >= 2)
		return 0;
	seen->ev[i] = *ev;
	snprintf(seen->tensor[i], 64, "%s", ev->tensor ? ev->tensor : "(null)");
	snprintf(seen->kind[i], 32, "%s", ev->kind);
	snprintf(seen->message[i], 64, "%s", ev->message ? ev->message : "(null)");
	return 0;
}

Test(trace_store, reads_back_exactly_after_reopen)
{
	char path[512];
	lks_store *s;
	int64_t suite, run_a, run_b;
	lks_run_info a = run_info("fp8", 3), b = run_info("bf16", 3);

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "trace.db");
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_begin_suite(s, "lockstep run cases/tiny.ini", &suite), 0, "%s",
	             lks_errmsg());
	a.suite_id = b.suite_id = suite;
	cr_assert_eq(lks_store_begin_run(s, &a, &run_a), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_begin_run(s, &b, &run_b), 0, "%s", lks_errmsg());
	put_tensors(s, run_a, TENSORS);
	put_steps(s, run_a, 0, 3, TENSORS);
	cr_assert_eq(lks_store_event(s, run_a, 2, 1, "blocks.0.mlp.up.weight.grad", "nonfinite",
	                             "first inf before all-reduce"), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_event(s, run_a, -1, -1, NULL, "note", NULL), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_end_run(s, run_a, "complete"), 0, "%s", lks_errmsg());
	lks_store_close(s);

	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	struct run_seen runs = { 0 };
	cr_assert_eq(lks_store_get_runs(s, see_run, &runs), 0, "%s", lks_errmsg());
	cr_assert_eq(runs.n, 2);
	cr_assert(runs.run_id[0] == run_a && runs.run_id[1] == run_b);
	cr_assert_str_eq(runs.status[0], "complete");
	cr_assert_str_eq(runs.status[1], "incomplete");
	cr_assert(runs.ok[0] && runs.ok[1]);
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM runs WHERE suite_id = "
	                        "(SELECT max(suite_id) FROM suites)"), 2);

	struct tensors_seen ts = { 0, 1 };
	cr_assert_eq(lks_store_get_tensors(s, run_a, see_tensor, &ts), 0, "%s", lks_errmsg());
	cr_assert(ts.n == TENSORS && ts.ok);

	check_steps(s, run_a, 0, 3, TENSORS);
	cr_assert_eq(count(s, run_a, LKS_TABLE_STEPS), 3 * RANKS);
	cr_assert_eq(count(s, run_a, LKS_TABLE_STATS), 3 * RANKS * TENSORS);
	cr_assert_eq(count(s, run_a, LKS_TABLE_TENSORS), TENSORS);
	cr_assert_eq(count(s, run_b, LKS_TABLE_STATS), 0);
	/* NaN is stored as NULL, not as a number: SQL over the table sees "not quantized" */
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM stats WHERE scale IS NULL"),
	             3 * RANKS * ((TENSORS + 2) / 3));
	/* a hash with the top bit set is a negative INTEGER, not a REAL that lost bits */
	cr_assert_gt(sql_int(s, "SELECT count(*) FROM stats WHERE hash < 0 AND typeof(hash) = 'integer'"),
	             0);

	int n;
	lks_step_row all[3 * RANKS + 1];
	cr_assert_eq(lks_store_get_steps(s, run_a, -1, all, 2, &n), 0, "%s", lks_errmsg());
	cr_assert_eq(n, 3 * RANKS, "all steps: %d rows", n);
	cr_assert(all[0].step == 0 && all[0].rank == 0 && all[1].step == 0 && all[1].rank == 1);

	struct events_seen ev = { 0 };
	cr_assert_eq(lks_store_get_events(s, run_a, see_event, &ev), 0, "%s", lks_errmsg());
	cr_assert_eq(ev.n, 2);
	cr_assert(ev.ev[0].step == 2 && ev.ev[0].rank == 1);
	cr_assert_str_eq(ev.tensor[0], "blocks.0.mlp.up.weight.grad");
	cr_assert_str_eq(ev.kind[0], "nonfinite");
	cr_assert_str_eq(ev.message[0], "first inf before all-reduce");
	cr_assert(ev.ev[1].step == -1 && ev.ev[1].rank == -1);
	cr_assert_str_eq(ev.tensor[1], "(null)");
	cr_assert_str_eq(ev.message[1], "(null)");
	cr_assert_eq(count(s, run_a, LKS_TABLE_EVENTS), 2);

	/* the run that was never ended stays open for steps */
	put_steps(s, run_b, 0, 1, 10);
	cr_assert_eq(count(s, run_b, LKS_TABLE_STATS), RANKS * 10);
	lks_store_close(s);
	rm_tmp();
}

static int see_nothing(void *arg, const lks_run_rec *r)
{
	return 0;
}

Test(trace_store, run_lifecycle_rules)
{
	char path[512], st[16];
	lks_store *s;
	int64_t run;
	lks_run_info info = run_info("bf16", 1);
	lks_step_row steps[RANKS];
	lks_stat_row stats[RANKS * 4];

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "trace.db");
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_begin_run(s, &info, &run), 0, "%s", lks_errmsg());
	expect_status(s, run, "incomplete");
	cr_assert_eq(lks_store_end_run(s, run, "done"), -1, "a status other than complete/failed");
	expect_status(s, run, "incomplete");
	cr_assert_eq(lks_store_end_run(s, run, "failed"), 0, "%s", lks_errmsg());
	expect_status(s, run, "failed");
	cr_assert_eq(lks_store_end_run(s, run, "complete"), -1, "a run ends once");
	expect_status(s, run, "failed");
	fill_step(0, RANKS, 4, steps, stats);
	cr_assert_eq(lks_store_step(s, run, steps, RANKS, stats, RANKS * 4), -1,
	             "a step after the end");
	cr_assert(strstr(lks_errmsg(), "has ended"), "%s", lks_errmsg());
	cr_assert_eq(count(s, run, LKS_TABLE_STEPS), 0);
	cr_assert_eq(lks_store_step(s, run + 100, steps, RANKS, stats, RANKS * 4), -1, "no such run");
	cr_assert_eq(lks_store_run_status(s, run + 100, st, sizeof(st)), -1);
	cr_assert_eq(lks_store_get_run(s, run + 100, see_nothing, NULL), -1);
	cr_assert_eq(lks_store_get_run(s, run, see_nothing, NULL), 0, "%s", lks_errmsg());
	lks_store_close(s);
	rm_tmp();
}

/* ---- a failed step leaves nothing of itself ---- */

static void expect_failed_step(lks_store *s, int64_t run, const lks_step_row *steps,
                               const lks_stat_row *stats, size_t nstats, const char *why)
{
	int64_t nsteps = count(s, run, LKS_TABLE_STEPS), nstats0 = count(s, run, LKS_TABLE_STATS);

	cr_assert_eq(lks_store_step(s, run, steps, RANKS, stats, nstats), -1, "%s", why);
	cr_assert(strstr(lks_errmsg(), "UNIQUE constraint failed") && strstr(lks_errmsg(), "step"),
	          "%s: %s", why, lks_errmsg());
	cr_assert_eq(count(s, run, LKS_TABLE_STEPS), nsteps, "%s: step rows stayed", why);
	cr_assert_eq(count(s, run, LKS_TABLE_STATS), nstats0, "%s: stat rows stayed", why);
	cr_assert(sqlite3_get_autocommit(lks_store_db(s)), "%s: a transaction is left open", why);
}

Test(trace_store, failed_step_rolls_back)
{
	char path[512];
	lks_store *s;
	int64_t run;
	lks_run_info info = run_info("fp8", 5);
	lks_step_row steps[RANKS];
	static lks_stat_row stats[RANKS * TENSORS];
	size_t n = (size_t)RANKS * TENSORS;

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "trace.db");
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_begin_run(s, &info, &run), 0, "%s", lks_errmsg());
	put_steps(s, run, 0, 2, TENSORS);

	/* the same step again: its step rows collide first */
	fill_step(1, RANKS, TENSORS, steps, stats);
	expect_failed_step(s, run, steps, stats, n, "step 1 twice");

	/* a duplicate stat row inside a 64-row batch, late in the step */
	fill_step(2, RANKS, TENSORS, steps, stats);
	stats[3 * TENSORS + 10].seq = 9;
	expect_failed_step(s, run, steps, stats, n, "duplicate in a batch");

	/* a duplicate in the rows after the last whole batch */
	fill_step(2, RANKS, TENSORS, steps, stats);
	stats[n - 1] = stats[n - 2];
	expect_failed_step(s, run, steps, stats, n, "duplicate in the tail");

	/* earlier steps intact, and the store still takes the step written right */
	check_steps(s, run, 0, 2, TENSORS);
	put_steps(s, run, 2, 3, TENSORS);
	check_steps(s, run, 0, 3, TENSORS);
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM stats"), 3 * RANKS * TENSORS);
	lks_store_close(s);
	rm_tmp();
}

/* ---- crash safety ---- */

/* Whole steps only: each stored step of the run has its RANKS step rows and
   RANKS x tensors stat rows, the steps are 0..k-1, and no stat row lacks its step. */
static int64_t expect_whole_steps(lks_store *s, int64_t run, int tensors)
{
	char sql[512];
	int64_t nsteps;

	snprintf(sql, sizeof(sql), "SELECT count(DISTINCT step) FROM steps WHERE run_id = %lld",
	         (long long)run);
	nsteps = sql_int(s, sql);
	snprintf(sql, sizeof(sql), "SELECT coalesce(max(step), -1) + 1 FROM steps WHERE run_id = %lld",
	         (long long)run);
	cr_assert_eq(sql_int(s, sql), nsteps, "steps are not 0..%lld", (long long)nsteps - 1);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM (SELECT step FROM steps WHERE run_id = %lld "
	         "GROUP BY step HAVING count(*) != %d)", (long long)run, RANKS);
	cr_assert_eq(sql_int(s, sql), 0, "a step without all its ranks' step rows");
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM (SELECT step FROM stats WHERE run_id = %lld "
	         "GROUP BY step HAVING count(*) != %d)", (long long)run, RANKS * tensors);
	cr_assert_eq(sql_int(s, sql), 0, "a step without all its stat rows");
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM stats WHERE run_id = %lld AND step NOT IN "
	         "(SELECT step FROM steps WHERE run_id = %lld)", (long long)run, (long long)run);
	cr_assert_eq(sql_int(s, sql), 0, "stat rows of a step that has no step rows");
	cr_assert_eq(count(s, run, LKS_TABLE_STATS), nsteps * RANKS * tensors);
	return nsteps;
}

/* The child of the kill test: a run that writes steps until it is killed. */
static void write_forever(const char *path)
{
	lks_store *s;
	int64_t run;
	lks_run_info info = run_info("killed", 1000000);
	lks_step_row steps[RANKS];
	static lks_stat_row stats[RANKS * TENSORS];

	if (lks_store_open(path, &s) || lks_store_begin_run(s, &info, &run))
		_exit(10);
	for (int i = 0; i < 1000000; i++) {
		fill_step(i, RANKS, TENSORS, steps, stats);
		if (lks_store_step(s, run, steps, RANKS, stats, (size_t)RANKS * TENSORS))
			_exit(11);
	}
	_exit(12);
}

Test(trace_store, kill9_leaves_whole_steps, .timeout = 120)
{
	char path[512], ok[64];
	lks_store *s;
	int64_t done_run, killed_run = -1, nsteps = 0;
	lks_run_info info = run_info("fp8", 6);
	int status;
	pid_t pid;

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "trace.db");
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_begin_run(s, &info, &done_run), 0, "%s", lks_errmsg());
	put_tensors(s, done_run, TENSORS);
	put_steps(s, done_run, 0, 6, TENSORS);
	cr_assert_eq(lks_store_end_run(s, done_run, "complete"), 0, "%s", lks_errmsg());
	/* no connection may cross fork() */
	lks_store_close(s);

	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		write_forever(path);

	/* watch the steps arrive through a second connection, then kill mid-run: with
	   ~600 rows a step, the kill most often lands inside a transaction */
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	for (int tries = 0; tries < 6000; tries++) {
		killed_run = sql_int(s, "SELECT max(run_id) FROM runs");
		if (killed_run != done_run && count(s, killed_run, LKS_TABLE_STEPS) >= 40 * RANKS)
			break;
		cr_assert_eq(waitpid(pid, &status, WNOHANG), 0, "the writer stopped by itself (%d)",
		             WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		usleep(10000);
	}
	cr_assert_neq(killed_run, done_run, "the writer never began its run");
	cr_assert_eq(kill(pid, SIGKILL), 0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the writer exited (%d)",
	          WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	lks_store_close(s);

	/* a fresh open recovers from the WAL the killed process left */
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	sql_text(s, "PRAGMA integrity_check", ok, sizeof(ok));
	cr_assert_str_eq(ok, "ok");
	expect_status(s, done_run, "complete");
	cr_assert_eq(expect_whole_steps(s, done_run, TENSORS), 6);
	check_steps(s, done_run, 0, 6, TENSORS);
	expect_status(s, killed_run, "incomplete");
	nsteps = expect_whole_steps(s, killed_run, TENSORS);
	cr_assert_geq(nsteps, 40);
	check_steps(s, killed_run, (int)nsteps - 2, (int)nsteps, TENSORS);
	lks_store_close(s);
	rm_tmp();
}

/* Two processes create and fill one database at once: the schema is made once, and
   neither writer fails on the other's lock. */
Test(trace_store, two_processes_write_one_file, .timeout = 120)
{
	char path[512];
	lks_store *s;
	pid_t pid[2];
	int status;

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "shared.db");
	for (int p = 0; p < 2; p++) {
		pid[p] = fork();
		cr_assert_geq(pid[p], 0);
		if (pid[p] == 0) {
			lks_run_info info = run_info(p ? "b" : "a", 30);
			lks_step_row steps[RANKS];
			static lks_stat_row stats[RANKS * TENSORS];
			int64_t run;

			if (lks_store_open(path, &s)) {
				fprintf(stderr, "writer %d: %s\n", p, lks_errmsg());
				_exit(10);
			}
			if (lks_store_begin_run(s, &info, &run))
				_exit(11);
			for (int i = 0; i < 30; i++) {
				fill_step(i, RANKS, TENSORS, steps, stats);
				if (lks_store_step(s, run, steps, RANKS, stats, (size_t)RANKS * TENSORS)) {
					fprintf(stderr, "writer %d: %s\n", p, lks_errmsg());
					_exit(12);
				}
			}
			if (lks_store_end_run(s, run, "complete"))
				_exit(13);
			lks_store_close(s);
			_exit(0);
		}
	}
	for (int p = 0; p < 2; p++) {
		cr_assert_eq(waitpid(pid[p], &status, 0), pid[p]);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer %d failed (%d)", p,
		          WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM runs WHERE status = 'complete'"), 2);
	for (int64_t run = 1; run <= 2; run++) {
		cr_assert_eq(expect_whole_steps(s, run, TENSORS), 30);
		check_steps(s, run, 28, 30, TENSORS);
	}
	lks_store_close(s);
	rm_tmp();
}
