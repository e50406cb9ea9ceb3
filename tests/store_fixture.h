/*
 * store_fixture.h: what the trace store's tests (test_trace_store.c, test_store_upgrade.c)
 * share: a mkdtemp folder per test, runs and steps whose every row is derived from
 * (step, rank, seq) and read back field by field, SQL on the store's connection or on a
 * raw file, a file's bytes and time to show that an open left it untouched, and an import
 * killed mid-write (test_store_bulk.c, test_export.c).
 */
#ifndef LKS_TESTS_STORE_FIXTURE_H
#define LKS_TESTS_STORE_FIXTURE_H

#include <criterion/criterion.h>
#include <dirent.h>
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

#include "harness/store/import_block.h"
#include "harness/store/trace_store.h"
#include "harness/store/trace_store_impl.h"
#include "kernels/err.h"
#include "tmp_tree.h"

#define RANKS 4
#define TENSORS 150  /* more than two of the store's 64-row batches, and a tail */

static char tmpdir[256];

/* Removes the scratch folder and all under it (a test may write subfolders: goldens,
   reports, imports). */
static inline void rm_tmp(void)
{
	lks_test_rmtree(tmpdir);
}

/* Every folder this process made, removed at its exit: a test that stopped at a failed
   assertion, or never calls rm_tmp, leaves nothing behind either. Not at the exit of a
   child it forked, which inherits the handler while the test still uses the folders. */
static char tmp_made[16][sizeof(tmpdir)];
static int tmp_nmade;
static pid_t tmp_owner;

static inline void rm_tmp_made(void)
{
	for (int i = 0; getpid() == tmp_owner && i < tmp_nmade; i++)
		lks_test_rmtree(tmp_made[i]);
}

static inline const char *mkdir_tmp(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/lks-test-store-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	if (!tmp_nmade) {
		tmp_owner = getpid();
		atexit(rm_tmp_made);
	}
	if (tmp_nmade < 16)
		memcpy(tmp_made[tmp_nmade++], tmpdir, sizeof(tmpdir));
	return tmpdir;
}

static inline void path_in_tmp(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", tmpdir, name);
}

static inline int exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* Rows of one step, in key order, all values derived from (step, rank, seq): a hash with
   the top bit set in half the rows, NaN scales (unquantized) in a third, subnormal and
   inexact doubles. */
static inline uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static inline void fill_step(int step, int ranks, int tensors, lks_step_row *steps,
                             lks_stat_row *stats)
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

static inline lks_run_info run_info(const char *run_name, int steps)
{
	return (lks_run_info){ .case_name = "tiny", .case_path = "cases/tiny.ini",
	                       .case_text = "[case]\nsteps = 10\n", .run_name = run_name,
	                       .recipe = "fp8_rowwise", .options = "checkpoint=blocks",
	                       .backend = "cpu", .world_size = RANKS, .steps = steps,
	                       .seed = 0xfedcba9876543210ull, .combo = NULL,
	                       .fingerprint = "{\"version\":\"0.1.0\"}" };
}

static inline void put_tensors(lks_store *s, int64_t run, int tensors)
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

static inline void put_steps(lks_store *s, int64_t run, int from, int to, int tensors)
{
	lks_step_row steps[RANKS];
	static lks_stat_row stats[RANKS * TENSORS];

	for (int i = from; i < to; i++) {
		fill_step(i, RANKS, tensors, steps, stats);
		cr_assert_eq(lks_store_step(s, run, steps, RANKS, stats, (size_t)RANKS * tensors), 0,
		             "step %d: %s", i, lks_errmsg());
	}
}

/* A complete run of 2 steps of 10 tensors in a new database at path. */
static inline int64_t make_db(const char *path)
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

static inline int same_double(double a, double b)
{
	return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof(a)) == 0;
}

static inline int same_float(float a, float b)
{
	return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof(a)) == 0;
}

/* Every step row and stat row of steps [from, to) of a run equals what fill_step made. */
static inline void check_steps(lks_store *s, int64_t run, int from, int to, int tensors)
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
			          && same_double(a->step_time, b->step_time) && a->nonfinite == b->nonfinite
			          && a->mem_peak == b->mem_peak,
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

static inline int64_t sql_int(lks_store *s, const char *sql)
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

static inline void sql_text(lks_store *s, const char *sql, char *buf, size_t n)
{
	sqlite3_stmt *st;

	cr_assert_eq(sqlite3_prepare_v2(lks_store_db(s), sql, -1, &st, NULL), SQLITE_OK, "%s", sql);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
	snprintf(buf, n, "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
}

static inline int64_t count(lks_store *s, int64_t run, lks_store_table t)
{
	int64_t n;

	cr_assert_eq(lks_store_count(s, run, t, &n), 0, "%s", lks_errmsg());
	return n;
}

static inline void expect_status(lks_store *s, int64_t run, const char *want)
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

static inline struct snapshot take(const char *path)
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
static inline void expect_same_bytes(const char *path, struct snapshot before)
{
	struct snapshot after = take(path);

	cr_assert_eq(after.size, before.size, "'%s' changed size", path);
	cr_assert_eq(memcmp(after.bytes, before.bytes, before.size), 0, "'%s' changed", path);
	cr_assert(after.mtime.tv_sec == before.mtime.tv_sec
	          && after.mtime.tv_nsec == before.mtime.tv_nsec, "'%s' was written", path);
	free(after.bytes);
}

/* Not written, and nothing left beside it. Frees before. */
static inline void expect_unchanged(const char *path, struct snapshot before)
{
	char side[600];  /* a path of 512 and "-journal" */

	expect_same_bytes(path, before);
	snprintf(side, sizeof(side), "%s-wal", path);
	cr_assert(!exists(side), "'%s' left behind", side);
	snprintf(side, sizeof(side), "%s-journal", path);
	cr_assert(!exists(side), "'%s' left behind", side);
	free(before.bytes);
}

static inline void raw_exec(const char *path, const char *sql)
{
	sqlite3 *db;

	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
	cr_assert_eq(sqlite3_close(db), SQLITE_OK);
}

/* The one integer of sql on a raw connection to the file path (no store opened). */
static inline int64_t sql_int_path(const char *path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int64_t v;

	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql,
	             sqlite3_errmsg(db));
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	cr_assert_eq(sqlite3_close(db), SQLITE_OK);
	return v;
}

/* Records per block and blocks per bulk import: 40 blocks of ~4 KiB, far more pages than
   the 10-page cache of kill_mid_import's writer holds, so that its pages reach the file. */
#define BULK_RECORDS 512
#define BULK_BLOCKS 40

/* An imported run of BULK_BLOCKS blocks of BULK_RECORDS records (rank 0, a loss of
   10 / (step + 1) and a time each), committed when commit is set; else the transaction is
   left open. */
static inline int64_t bulk_import_run(lks_store *s, const char *name, int commit)
{
	lks_run_info info = { .case_name = "c", .run_name = name, .recipe = "import",
	                      .backend = "import:jsonl" };
	lks_block *b = lks_block_new();
	int64_t run;

	cr_assert_not_null(b);
	cr_assert_eq(lks_store_import_begin(s, &info, &run), 0, "%s", lks_errmsg());
	for (int k = 0; k < BULK_BLOCKS; k++) {
		for (int i = 0; i < BULK_RECORDS; i++) {
			int step = k * BULK_RECORDS + i;
			lks_metric_row rows[2] = {
				{ 0, 0, "loss", LKS_METRIC_NUMERICS, 10.0 / (step + 1), 0 },
				{ 0, 0, "iteration_time", LKS_METRIC_PERFORMANCE, 500 + step % 7, 0 } };

			cr_assert_eq(lks_block_add(b, step, 0, rows, 2), 0, "%s", lks_errmsg());
		}
		cr_assert_eq(lks_store_import_block(s, run, k + 1, b), 0, "%s", lks_errmsg());
	}
	lks_block_free(b);
	if (commit)
		cr_assert_eq(lks_store_import_end(s, run, BULK_BLOCKS * BULK_RECORDS - 1, 1, 1),
		             0, "%s", lks_errmsg());
	return run;
}

/* A child process opens path (no store may be open on it here: none crosses fork()),
   begins a bulk import of a run named name, writes it without committing and is killed
   (SIGKILL): its pages are in the file, and its hot journal beside it. */
static inline void kill_mid_import(const char *path, const char *name)
{
	char journal[600];
	lks_store *s;
	int status;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (lks_store_open(path, &s))
			_exit(10);
		lks_store_bulk_begin(s);  /* which sets a cache of its own: this one after it */
		if (sqlite3_exec(lks_store_db(s), "PRAGMA cache_size = 10", NULL, NULL, NULL))
			_exit(10);
		bulk_import_run(s, name, 0);
		kill(getpid(), SIGKILL);
		_exit(11);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the writer exited (%d)",
	          WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	snprintf(journal, sizeof(journal), "%s-journal", path);
	cr_assert(exists(journal), "no hot journal: the write was not a bulk one, or never "
	                           "reached the file");
}

#endif
