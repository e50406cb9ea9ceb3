/*
 * test_trace_store.c: the SQLite trace store. The schema and its version; data read back
 * exactly as written (hashes with the top bit set, NaN as NULL); files that are not ours
 * refused and left byte for byte as they were; a failed step rolled back whole; a writer
 * killed with SIGKILL mid-run leaving an intact database in which the killed run is
 * 'incomplete' and holds only whole steps; two processes writing one file at once.
 * Every test works in its own mkdtemp folder.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <float.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/store/trace_store.h"
#include "kernels/err.h"

#define RANKS 4
#define TENSORS 150  /* more than two of the store's 64-row batches, and a tail */

/* ---- helpers ---- */

static char tmpdir[256];

static const char *mkdir_tmp(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/lks-test-store-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	return tmpdir;
}

static void rm_tmp(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *e;
	char p[512];

	if (!d)
		return;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(p, sizeof(p), "%s/%s", tmpdir, e->d_name);
			unlink(p);
		}
	closedir(d);
	rmdir(tmpdir);
}

static void path_in_tmp(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", tmpdir, name);
}

static int exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* Rows of one step, in key order, all values derived from (step, rank, seq): a hash with
   the top bit set in half the rows, NaN scales (unquantized) in a third, subnormal and
   inexact doubles. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void fill_step(int step, int ranks, int tensors, lks_step_row *steps, lks_stat_row *stats)
{
	for (int r = 0; r < ranks; r++) {
		steps[r] = (lks_step_row){ .step = step, .rank = r, .loss = 0.1 * (step + 1) + r,
		                           .grad_norm = 1.0 / 3.0 + step, .lr = 3e-4,
		                           .step_time = 0.125 * r, .nonfinite = step % 5 ? 0 : r };
		for (int t = 0; t < tensors; t++) {
			uint64_t h = mix(((uint64_t)step << 32) | ((uint64_t)r << 16) | (uint64_t)t);
			lks_stat_row *x = &stats[r * tensors + t];

			*x = (lks_stat_row){ .step = step, .rank = r, .seq = t,
			                     .l2 = t == 7 ? 4.9e-324 : (double)(h >> 11) * 0x1p-53 * 1e3,
			                     .amax = (float)(h & 0xffffff) * 0x1p-20f,
			                     .scale = t % 3 == 0 ? NAN : 0x1p-7f * (float)(1 + t % 5),
			                     .nonfinite = t == 3 ? step : 0,
			                     .underflow = (int64_t)(h >> 40),
			                     .saturated = (int64_t)(h & 0xff), .hash = h };
		}
	}
}

static lks_run_info run_info(const char *run_name, int steps)
{
	return (lks_run_info){ .case_name = "tiny", .case_path = "cases/tiny.ini",
	                       .case_text = "[case]\nsteps = 10\n", .run_name = run_name,
	                       .recipe = "fp8_rowwise", .options = "checkpoint=blocks",
	                       .backend = "cpu", .world_size = RANKS, .steps = steps,
	                       .seed = 0xfedcba9876543210ull, .combo = NULL,
	                       .fingerprint = "{\"version\":\"0.1.0\"}" };
}

static void put_tensors(lks_store *s, int64_t run, int tensors)
{
	static char names[TENSORS][48];
	const char *np[TENSORS];
	lks_phase ph[TENSORS];

	cr_assert_leq(tensors, TENSORS);
	for (int t = 0; t < tensors; t++) {
		snprintf(names[t], sizeof(names[t]), "blocks.%d.mlp.up.weight%s", t / 4,
		         t % 2 ? ".grad" : "");
		np[t] = names[t];
		ph[t] = (lks_phase)(t % 4);
	}
	cr_assert_eq(lks_store_tensors(s, run, np, ph, tensors), 0, "%s", lks_errmsg());
}

static void put_steps(lks_store *s, int64_t run, int from, int to, int tensors)
{
	lks_step_row steps[RANKS];
	static lks_stat_row stats[RANKS * TENSORS];

	for (int i = from; i < to; i++) {
		fill_step(i, RANKS, tensors, steps, stats);
		cr_assert_eq(lks_store_step(s, run, steps, RANKS, stats, (size_t)RANKS * tensors), 0,
		             "step %d: %s", i, lks_errmsg());
	}
}

static int same_double(double a, double b)
{
	return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof(a)) == 0;
}

static int same_float(float a, float b)
{
	return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof(a)) == 0;
}

/* Every step row and stat row of steps [from, to) of a run equals what fill_step made. */
static void check_steps(lks_store *s, int64_t run, int from, int to, int tensors)
{
	lks_step_row want_steps[RANKS], got_steps[RANKS];
	static lks_stat_row want[RANKS * TENSORS], got[TENSORS];

	for (int i = from; i < to; i++) {
		int n;

		fill_step(i, RANKS, tensors, want_steps, want);
		cr_assert_eq(lks_store_get_steps(s, run, i, got_steps, RANKS, &n), 0, "%s", lks_errmsg());
		cr_assert_eq(n, RANKS, "step %d has %d step rows", i, n);
		for (int r = 0; r < RANKS; r++) {
			lks_step_row *a = &want_steps[r], *b = &got_steps[r];

			cr_assert(a->step == b->step && a->rank == b->rank && same_double(a->loss, b->loss)
			          && same_double(a->grad_norm, b->grad_norm) && same_double(a->lr, b->lr)
			          && same_double(a->step_time, b->step_time) && a->nonfinite == b->nonfinite,
			          "step row %d/%d differs", i, r);
		}
		for (int r = 0; r < RANKS; r++) {
			size_t m;

			cr_assert_eq(lks_store_get_stats(s, run, i, r, got, TENSORS, &m), 0, "%s",
			             lks_errmsg());
			cr_assert_eq(m, (size_t)tensors, "step %d rank %d has %zu stat rows", i, r, m);
			for (int t = 0; t < tensors; t++) {
				lks_stat_row *a = &want[r * tensors + t], *b = &got[t];

				cr_assert(a->step == b->step && a->rank == b->rank && a->seq == b->seq
				          && same_double(a->l2, b->l2) && same_float(a->amax, b->amax)
				          && same_float(a->scale, b->scale) && a->nonfinite == b->nonfinite
				          && a->underflow == b->underflow && a->saturated == b->saturated
				          && a->hash == b->hash,
				          "stat row %d/%d/%d differs (hash %016llx vs %016llx)", i, r, t,
				          (unsigned long long)a->hash, (unsigned long long)b->hash);
			}
		}
	}
}

static int64_t sql_int(lks_store *s, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v;

	cr_assert_eq(sqlite3_prepare_v2(lks_store_db(s), sql, -1, &st, NULL), SQLITE_OK, "%s: %s",
	             sql, sqlite3_errmsg(lks_store_db(s)));
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static void sql_text(lks_store *s, const char *sql, char *buf, size_t n)
{
	sqlite3_stmt *st;

	cr_assert_eq(sqlite3_prepare_v2(lks_store_db(s), sql, -1, &st, NULL), SQLITE_OK, "%s", sql);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
	snprintf(buf, n, "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
}

static int64_t count(lks_store *s, int64_t run, lks_store_table t)
{
	int64_t n;

	cr_assert_eq(lks_store_count(s, run, t, &n), 0, "%s", lks_errmsg());
	return n;
}

static void expect_status(lks_store *s, int64_t run, const char *want)
{
	char st[32];

	cr_assert_eq(lks_store_run_status(s, run, st, sizeof(st)), 0, "%s", lks_errmsg());
	cr_assert_str_eq(st, want, "run %lld", (long long)run);
}

/* A file's bytes and modification time, to show that a refused open touched nothing. */
struct snapshot {
	char *bytes;
	size_t size;
	struct timespec mtime;
};

static struct snapshot take(const char *path)
{
	struct snapshot sn = { 0 };
	struct stat st;
	FILE *f = fopen(path, "rb");

	cr_assert_not_null(f, "cannot open '%s'", path);
	cr_assert_eq(stat(path, &st), 0);
	sn.size = (size_t)st.st_size;
	sn.mtime = st.st_mtim;
	sn.bytes = malloc(sn.size + 1);
	cr_assert_eq(fread(sn.bytes, 1, sn.size, f), sn.size);
	fclose(f);
	return sn;
}

/* The file's bytes and time as before: it was not written. */
static void expect_same_bytes(const char *path, struct snapshot before)
{
	struct snapshot after = take(path);

	cr_assert_eq(after.size, before.size, "'%s' changed size", path);
	cr_assert_eq(memcmp(after.bytes, before.bytes, before.size), 0, "'%s' changed", path);
	cr_assert(after.mtime.tv_sec == before.mtime.tv_sec
	          && after.mtime.tv_nsec == before.mtime.tv_nsec, "'%s' was written", path);
	free(after.bytes);
}

/* Not written, and nothing left beside it. Frees before. */
static void expect_unchanged(const char *path, struct snapshot before)
{
	char side[512];

	expect_same_bytes(path, before);
	snprintf(side, sizeof(side), "%s-wal", path);
	cr_assert(!exists(side), "'%s' left behind", side);
	snprintf(side, sizeof(side), "%s-journal", path);
	cr_assert(!exists(side), "'%s' left behind", side);
	free(before.bytes);
}

static void raw_exec(const char *path, const char *sql)
{
	sqlite3 *db;

	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
	cr_assert_eq(sqlite3_close(db), SQLITE_OK);
}

/* ---- schema ---- */

Test(trace_store, creates_schema_with_version)
{
	static const char *const tables[] = { "suites", "runs", "tensors", "steps", "stats", "events",
	                                      "checks", "probe_sessions", "probes" };
	char path[512], mode[16], sql[128];
	lks_store *s;

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "new.db");
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(sql_int(s, "PRAGMA user_version"), LKS_STORE_SCHEMA_VERSION);
	cr_assert_eq(LKS_STORE_SCHEMA_VERSION, 4);
	cr_assert_neq(sql_int(s, "PRAGMA application_id"), 0);
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		snprintf(sql, sizeof(sql), "SELECT count(*) FROM sqlite_master WHERE type = 'table' "
		         "AND name = '%s'", tables[i]);
		cr_assert_eq(sql_int(s, sql), 1, "no table '%s'", tables[i]);
	}
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
	lks_store_close(s);

	/* opening again neither fails nor adds anything */
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM sqlite_master WHERE type = 'table'"), 9);
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
	cr_assert_eq(lks_store_open(path, &s), LKS_STORE_BAD_FILE);
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
	cr_assert_eq(lks_store_open(path, &s), LKS_STORE_BAD_FILE);
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
	cr_assert_eq(lks_store_open(path, &s), LKS_STORE_BAD_FILE);
	cr_assert(strstr(lks_errmsg(), path) && strstr(lks_errmsg(), "not a lockstep database"),
	          "%s", lks_errmsg());
	expect_unchanged(path, before);
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
	raw_exec(path, "PRAGMA user_version = 5");
	cr_assert_eq(LKS_STORE_SCHEMA_VERSION, 4, "make the version above a later one");
	before = take(path);
	cr_assert_eq(lks_store_open(path, &s), LKS_STORE_BAD_FILE);
	cr_assert(strstr(lks_errmsg(), path) && strstr(lks_errmsg(), "version 5"), "%s",
	          lks_errmsg());
	expect_unchanged(path, before);
	rm_tmp();
}

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
	for (int version = 1; version <= 3; version++) {
		lks_check_rec now = verdict("now", "pass");
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
		expect_status(s, run, "complete");
		check_steps(s, run, 0, 2, 10);
		cr_assert_eq(count(s, run, LKS_TABLE_TENSORS), 10);
		/* and the new tables and columns take rows */
		cr_assert_eq(lks_store_begin_session(s, "bisect", "lockstep bisect", "c.ini", &session),
		             0, "%s", lks_errmsg());
		cr_assert_eq(lks_store_check(s, &now), 0, "%s", lks_errmsg());
		/* the verdict stored before: its parameters none, the rest as it was */
		cr_assert_eq(lks_store_get_checks(s, 0, see_check, &seen), 0, "%s", lks_errmsg());
		cr_assert_eq(seen.n, version >= 2 ? 2 : 1, "version %d", version);
		if (version >= 2) {
			cr_assert_str_eq(seen.name[0], "old");
			expect_params(&seen, 0, &no_params);
			cr_assert(strstr(seen.verdict[0], "head.weight.grad l2"), "%s", seen.verdict[0]);
		}
		expect_params(&seen, seen.n - 1, &now.params);
		lks_store_close(s);
		rm_tmp();
	}
}

/* ---- opening to read only ---- */

/* A complete run of 2 steps of 10 tensors in a new database at path. */
static int64_t make_db(const char *path)
{
	lks_run_info info = run_info("bf16", 2);
	lks_store *s;
	int64_t run;

	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_begin_run(s, &info, &run), 0, "%s", lks_errmsg());
	put_tensors(s, run, 10);
	put_steps(s, run, 0, 2, 10);
	cr_assert_eq(lks_store_end_run(s, run, "complete"), 0, "%s", lks_errmsg());
	lks_store_close(s);
	return run;
}

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
		lks_store_close(s);
		expect_same_bytes(path, before);
		free(before.bytes);
		rm_tmp();
	}
}

/* Refused, LKS_STORE_BAD_FILE with the reason, and left as it was. */
static void expect_refused(const char *path, const char *why)
{
	lks_store *s = (lks_store *)1;

	cr_assert_eq(lks_store_open_readonly(path, &s), LKS_STORE_BAD_FILE, "'%s': %s", path,
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
	raw_exec(path, "PRAGMA user_version = 5");
	before = take(path);
	expect_refused(path, "version 5");
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
   without its index cannot be read, and the message says why. */
Test(trace_store, readonly_on_a_read_only_folder)
{
	char path[512], msg[1024], cmd[600];
	struct snapshot before[3];
	static const char *const names[] = { "clean.db", "log.db", "lost.db" };

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), names[0]);
	make_db(path);
	path_in_tmp(path, sizeof(path), names[1]);
	killed_writer(path, 1);
	path_in_tmp(path, sizeof(path), names[2]);
	killed_writer(path, 0);
	for (int i = 0; i < 3; i++) {
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

	snprintf(cmd, sizeof(cmd), "chmod -R u+w '%s'", tmpdir);
	cr_assert_eq(system(cmd), 0);
	for (int i = 0; i < 3; i++) {
		path_in_tmp(path, sizeof(path), names[i]);
		expect_same_bytes(path, before[i]);
		free(before[i].bytes);
	}
	path_in_tmp(path, sizeof(path), "clean.db-shm");
	cr_expect(!exists(path), "a -shm appeared");
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
