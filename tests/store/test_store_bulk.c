/*
 * test_store_bulk.c: a bulk write (lks_store_bulk_begin/end, trace_store.h), the whole
 * import's one transaction written through a rollback journal where the connection is the
 * file's only one. The file is back in WAL after it, with what was committed; with another
 * connection open nothing changes and nobody waits; a writer killed mid-transaction, its
 * pages already in the file, leaves a hot journal that the next opening rolls back, and
 * the file is in WAL again, while a reader's opening refuses it untouched; two processes
 * importing into one file at once both land.
 */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store_fixture.h"
#include "harness/store/import_block.h"
#include "harness/store/trace_store.h"
#include "kernels/err.h"

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
	run = bulk_import_run(s, "r", 1);
	lks_store_bulk_end(s);
	expect_mode(s, "wal", 1);
	cr_assert(!exists(journal), "the rollback journal was left behind");
	cr_assert_eq(loss_rows(s, run), BULK_BLOCKS * BULK_RECORDS);
	/* the store goes on as before: a second bulk write, and one left open at close */
	lks_store_bulk_begin(s);
	bulk_import_run(s, "r2", 1);
	lks_store_close(s);
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	expect_mode(s, "wal", 1);
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM runs WHERE status = 'complete'"), 2);
	cr_assert_eq(loss_rows(s, 2), BULK_BLOCKS * BULK_RECORDS);
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
	run = bulk_import_run(s, "r", 1);
	lks_store_bulk_end(s);
	expect_mode(s, "wal", 1);
	cr_assert_eq(loss_rows(other, run), BULK_BLOCKS * BULK_RECORDS,
	             "the reader does not see the run");
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

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "killed.db");
	snprintf(journal, sizeof(journal), "%s-journal", path);
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	lks_store_bulk_begin(s);
	done = bulk_import_run(s, "done", 1);
	lks_store_close(s);  /* no connection may cross fork() */

	kill_mid_import(path, "killed");

	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	sql_text(s, "PRAGMA integrity_check", ok, sizeof(ok));
	cr_assert_str_eq(ok, "ok");
	expect_mode(s, "wal", 1);
	cr_assert(!exists(journal), "the hot journal is still there");
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM runs"), 1, "the killed run was kept");
	expect_status(s, done, "complete");
	cr_assert_eq(loss_rows(s, done), BULK_BLOCKS * BULK_RECORDS);
	lks_store_close(s);
	rm_tmp();
}

/* A reader of a file whose writer was killed mid-import: the file holds the killed
   transaction's pages, which only the hot journal undoes, and a reader may not roll it
   back. It is refused (-1: not bad input, the file is whole once rolled back), saying so
   and what does it, and leaves file and journal as they were; it read the killed run as
   stored when it fell back to an immutable open. A writer's opening rolls it back. */
Test(store_bulk, a_reader_refuses_a_killed_imports_journal_that_a_writer_rolls_back,
     .timeout = 120)
{
	char path[512], journal[600];
	struct snapshot file, jrnl;
	lks_store *s;

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "ghost.db");
	snprintf(journal, sizeof(journal), "%s-journal", path);
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	lks_store_bulk_begin(s);
	bulk_import_run(s, "done", 1);
	lks_store_close(s);
	kill_mid_import(path, "ghost");
	file = take(path);
	jrnl = take(journal);

	cr_assert_eq(lks_store_open_readonly(path, &s), -1, "opened: %lld runs",
	             s ? (long long)sql_int(s, "SELECT count(*) FROM runs") : -1LL);
	cr_assert(strstr(lks_errmsg(), path) && strstr(lks_errmsg(), "ghost.db-journal")
	          && strstr(lks_errmsg(), "rolls it back"), "%s", lks_errmsg());
	expect_same_bytes(path, file);
	expect_same_bytes(journal, jrnl);
	free(file.bytes);
	free(jrnl.bytes);

	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	lks_store_close(s);
	cr_assert(!exists(journal), "the hot journal is still there");
	cr_assert_eq(lks_store_open_readonly(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM runs"), 1, "the killed run was kept");
	cr_assert_eq(loss_rows(s, 1), BULK_BLOCKS * BULK_RECORDS);
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
				bulk_import_run(s, name, 1);
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
		cr_assert_eq(loss_rows(s, run), BULK_BLOCKS * BULK_RECORDS, "run %lld", (long long)run);
	lks_store_close(s);
	rm_tmp();
}
