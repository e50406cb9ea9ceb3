/*
 * report_query.c: the report's reads of the store that the trace store's read-back does not
 * offer (report_query.h): a suite's row, and the trend of a case over recent suites, whose
 * final loss and mean step time SQLite aggregates over the step rows. Plain statements
 * through the store's connection, prepared per call: a report makes a few of them.
 */
#include <math.h>
#include <sqlite3.h>

#include "harness/store/report_query.h"
#include "kernels/err.h"

/* The message of a failed read, naming the database and SQLite's error. */
static int lks_query_err(sqlite3 *db, const char *what)
{
	const char *path = sqlite3_db_filename(db, "main");

	return lks_err("'%s': cannot read %s: %s", path && *path ? path : "?", what,
	               sqlite3_errmsg(db));
}

/* A REAL column; SQL NULL (a NaN stored, or an aggregate of no rows) is NaN. */
static double lks_query_real(sqlite3_stmt *st, int col)
{
	return sqlite3_column_type(st, col) == SQLITE_NULL ? NAN : sqlite3_column_double(st, col);
}

int lks_store_get_suite(lks_store *s, int64_t suite_id,
                        int (*fn)(void *arg, const lks_suite_rec *rec), void *arg)
{
	sqlite3 *db = lks_store_db(s);
	sqlite3_stmt *st = NULL;
	int r, rc = -1;

	if (sqlite3_prepare_v2(db, "SELECT suite_id, command, started FROM suites "
	                           "WHERE suite_id = ?1", -1, &st, NULL) != SQLITE_OK)
		return lks_query_err(db, "the suites");
	sqlite3_bind_int64(st, 1, suite_id);
	if ((r = sqlite3_step(st)) == SQLITE_ROW) {
		lks_suite_rec rec = {
			.suite_id = sqlite3_column_int64(st, 0),
			.command = (const char *)sqlite3_column_text(st, 1),
			.started = (const char *)sqlite3_column_text(st, 2),
		};

		rc = fn(arg, &rec);
	} else if (r == SQLITE_DONE) {
		rc = 0;
	} else {
		lks_query_err(db, "the suites");
	}
	sqlite3_finalize(st);
	return rc;
}

/* Per run: the mean loss over the ranks of its last step, its steps, its mean step time. */
static const char lks_trend_sql[] =
	"SELECT r.run_id, r.suite_id, r.run_name, r.status,"
	" (SELECT max(step) + 1 FROM steps WHERE run_id = r.run_id),"
	" (SELECT avg(s.loss) FROM steps s WHERE s.run_id = r.run_id"
	"   AND s.step = (SELECT max(step) FROM steps WHERE run_id = r.run_id)),"
	" (SELECT avg(step_time) FROM steps WHERE run_id = r.run_id)"
	" FROM runs r WHERE r.case_name = ?1 AND r.suite_id IN"
	" (SELECT DISTINCT suite_id FROM runs WHERE case_name = ?1 AND suite_id <= ?2"
	"  ORDER BY suite_id DESC LIMIT ?3)"
	" ORDER BY r.run_name, r.suite_id, r.run_id";

int lks_store_get_trend(lks_store *s, const char *case_name, int64_t suite_id, int nsuites,
                        int (*fn)(void *arg, const lks_trend_rec *rec), void *arg)
{
	sqlite3 *db = lks_store_db(s);
	sqlite3_stmt *st = NULL;
	int r = SQLITE_DONE, rc = 0;

	if (sqlite3_prepare_v2(db, lks_trend_sql, -1, &st, NULL) != SQLITE_OK)
		return lks_query_err(db, "the trend");
	sqlite3_bind_text(st, 1, case_name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, suite_id);
	sqlite3_bind_int(st, 3, nsuites);
	while (rc == 0 && (r = sqlite3_step(st)) == SQLITE_ROW) {
		lks_trend_rec rec = {
			.run_id = sqlite3_column_int64(st, 0),
			.suite_id = sqlite3_column_int64(st, 1),
			.run_name = (const char *)sqlite3_column_text(st, 2),
			.status = (const char *)sqlite3_column_text(st, 3),
			.nsteps = sqlite3_column_int(st, 4),
			.final_loss = lks_query_real(st, 5),
			.step_time = lks_query_real(st, 6),
		};

		rc = fn(arg, &rec);
	}
	if (rc == 0 && r != SQLITE_DONE)
		rc = lks_query_err(db, "the trend");
	sqlite3_finalize(st);
	return rc;
}
