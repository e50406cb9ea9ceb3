/*
 * test_store_bulk.c: a bulk write (lks_store_bulk_begin/end, trace_store.h), the whole
 * import's one transaction written through a rollback journal where the connection is the
 * file's only one. The file is back in WAL after it, with what was committed; with another
 * connection open nothing changes and nobody waits; a writer killed mid-transaction, its
 * pages already in the file, leaves a hot journal that the next opening rolls back, and
 * the file is in WAL again; two processes importing into one file at once both land.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store_fixture.h"
#include "harness/store/import_block.h"
#include "harness/store/trace_store.h"
#include "kernels/err.h"

/* Records per block and blocks per import: 40 blocks of ~4 KiB, far more pages than the
   10-page cache of the killed writer holds, so that its pages reach the file. */
#define RECORDS 512
#define BLOCKS 40

/* An imported run of BLOCKS blocks of RECORDS records (rank 0, a loss and a time each),
   committed when commit is set; else the transaction is left open. */
static int64_t import_run(lks_store *s, const char *name, int commit)
{
	lks_run_info info = { .case_name = "c", .run_name = name, .recipe = "import",
	                      .backend = "import:jsonl" };
	lks_block *b = lks_block_new();
	int64_t run;

	cr_assert_not_null(b);
	cr_assert_eq(lks_store_import_begin(s, &info, &run), 0, "%s", lks_errmsg());
	for (int k = 0; k < BLOCKS; k++) {
		for (int i = 0; i < RECORDS; i++) {
			int step = k * RECORDS + i;
			lks_metric_row rows[2] = {
				{ 0, 0, "loss", LKS_METRIC_NUMERICS, 10.0 / (step + 1) },
				{ 0, 0, "iteration_time", LKS_METRIC_PERFORMANCE, 500 + step % 7 } };

			cr_assert_eq(lks_block_add(b, step, 0, rows, 2), 0, "%s", lks_errmsg());
		}
		cr_assert_eq(lks_store_import_block(s, run, k + 1, b), 0, "%s", lks_errmsg());
	}
	lks_block_free(b);
	if (commit)
		cr_assert_eq(lks_store_import_end(s, run, BLOCKS * RECORDS - 1, 1, 1), 0, "%s",
		             lks_errmsg());
	return run;
}

static void expect_mode(lks_store *s, const char *mode, int synchronous)
{
	char got[16];

	sql_text(s, "PRAGMA journal_mode", got, sizeof(got));
	cr_assert_str_eq(got, mode);
	cr_assert_eq(sql_int(s, "PRAGMA synchronous"), synchronous);
}

struct loss_count {
	int n, bad;
};

static int see(void *arg, const lks_metric_row *r)
{
	struct loss_count *c = arg;

	c->bad += r->rank != 0 || r->value != 10.0 / (r->step + 1);
	c->n++;
	return 0;
}

/* The run's loss rows, each checked against what import_run wrote. */
static int loss_rows(lks_store *s, int64_t run)
{
	struct loss_count c = { 0, 0 };

	cr_assert_eq(lks_store_get_metrics(s, run, "loss", see, &c), 0, "%s", lks_errmsg());
	cr_assert_eq(c.bad, 0, "a loss read back other than written");
	return c.n;
}

Test(store_bulk, writes_through_a_rollback_journal_and_leaves_the_file_in_wal)
{
	char path[512], journal[600];
	lks_store *s;
	int64_t run;

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "bulk.db");
	snprintf(journal, sizeof(journal), "%s-journal", path);
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	expect_mode(s, "wal", 1);
	lks_store_bulk_begin(s);
	expect_mode(s, "delete", 2);  /* FULL */
	run = import_run(s, "r", 1);
	lks_store_bulk_end(s);
	expect_mode(s, "wal", 1);
	cr_assert(!exists(journal), "the rollback journal was left behind");
	cr_assert_eq(loss_rows(s, run), BLOCKS * RECORDS);
	/* the store goes on as before: a second bulk write, and one left open at close */
	lks_store_bulk_begin(s);
	import_run(s, "r2", 1);
	lks_store_close(s);
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	expect_mode(s, "wal", 1);
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM runs WHERE status = 'complete'"), 2);
	cr_assert_eq(loss_rows(s, 2), BLOCKS * RECORDS);
	lks_store_close(s);
	rm_tmp();
}

/* Another connection on the file (a reader, another writer): the write goes through the WAL,
   at once (the timeout fails a wait for the busy timeout of 60 s). */
Test(store_bulk, another_connection_keeps_the_file_in_wal_without_waiting, .timeout = 30)
{
	char path[512];
	lks_store *s, *other;
	int64_t run;

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "shared.db");
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_open_readonly(path, &other), 0, "%s", lks_errmsg());
	cr_assert_eq(sql_int(other, "SELECT count(*) FROM runs"), 0);
	lks_store_bulk_begin(s);
	expect_mode(s, "wal", 1);
	run = import_run(s, "r", 1);
	lks_store_bulk_end(s);
	expect_mode(s, "wal", 1);
	cr_assert_eq(loss_rows(other, run), BLOCKS * RECORDS, "the reader does not see the run");
	lks_store_close(other);
	lks_store_close(s);
	rm_tmp();
}

/* SIGKILL in the middle of a bulk write whose pages reached the file: the next opening
   rolls the hot journal back, the earlier run is whole, the killed one absent, and the file
   is in WAL again. */
Test(store_bulk, killed_mid_write_rolls_back_and_reopens_in_wal, .timeout = 120)
{
	char path[512], journal[600], ok[64];
	lks_store *s;
	int64_t done;
	int status;
	pid_t pid;

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "killed.db");
	snprintf(journal, sizeof(journal), "%s-journal", path);
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	lks_store_bulk_begin(s);
	done = import_run(s, "done", 1);
	lks_store_close(s);  /* no connection may cross fork() */

	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (lks_store_open(path, &s))
			_exit(10);
		lks_store_bulk_begin(s);  /* which sets a cache of its own: this one after it */
		if (sqlite3_exec(lks_store_db(s), "PRAGMA cache_size = 10", NULL, NULL, NULL))
			_exit(10);
		import_run(s, "killed", 0);
		kill(getpid(), SIGKILL);
		_exit(11);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the writer exited (%d)",
	          WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	cr_assert(exists(journal), "no hot journal: the write was not a bulk one, or never "
	                           "reached the file");

	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	sql_text(s, "PRAGMA integrity_check", ok, sizeof(ok));
	cr_assert_str_eq(ok, "ok");
	expect_mode(s, "wal", 1);
	cr_assert(!exists(journal), "the hot journal is still there");
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM runs"), 1, "the killed run was kept");
	expect_status(s, done, "complete");
	cr_assert_eq(loss_rows(s, done), BLOCKS * RECORDS);
	lks_store_close(s);
	rm_tmp();
}

/* Two processes import into one file at once, each trying for the rollback journal: both
   runs land whole and the file ends in WAL. */
Test(store_bulk, two_processes_import_into_one_file, .timeout = 120)
{
	char path[512];
	lks_store *s;
	pid_t pid[2];
	int status;

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "two.db");
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	lks_store_close(s);
	for (int p = 0; p < 2; p++) {
		pid[p] = fork();
		cr_assert_geq(pid[p], 0);
		if (pid[p] == 0) {
			for (int k = 0; k < 5; k++) {
				char name[16];

				snprintf(name, sizeof(name), "%c%d", 'a' + p, k);
				if (lks_store_open(path, &s)) {
					fprintf(stderr, "importer %d: %s\n", p, lks_errmsg());
					_exit(10);
				}
				lks_store_bulk_begin(s);
				import_run(s, name, 1);
				lks_store_bulk_end(s);
				lks_store_close(s);
			}
			_exit(0);
		}
	}
	for (int p = 0; p < 2; p++) {
		cr_assert_eq(waitpid(pid[p], &status, 0), pid[p]);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "importer %d failed (%d)",
		          p, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	expect_mode(s, "wal", 1);
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM runs WHERE status = 'complete'"), 10);
	for (int64_t run = 1; run <= 10; run++)
		cr_assert_eq(loss_rows(s, run), BLOCKS * RECORDS, "run %lld", (long long)run);
	lks_store_close(s);
	rm_tmp();
}
