/*
 * report_query.c: the report's reads of the store that the trace store's read-back does not
 * offer (report_query.h): a suite's row, and the trend of a case over recent suites, whose
 * final loss and mean step time SQLite aggregates over the step rows (an imported run's,
 * in blocks SQLite cannot read, are aggregated here). Their SQL is in the
 * store's statement table (trace_store_sql.c) and their rows come through lks_store_rows,
 * as every other read's do: one way to report an SQL error and to read a column.
 */
#include <stdlib.h>

#include "harness/store/report_query.h"
#include "harness/store/run.h"
#include "harness/store/trace_store_impl.h"
#include "kernels/err.h"

/* Where the rows go: the caller's function and its arg. */
struct lks_query {
	lks_store *s;
	union {
		int (*suite)(void *arg, const lks_suite_rec *rec);
		int (*trend)(void *arg, const lks_trend_rec *rec);
	} fn;
	void *arg;
};

static int lks_row_suite(sqlite3_stmt *st, void *ctx)
{
	const struct lks_query *q = ctx;
	lks_suite_rec rec = {
		.suite_id = sqlite3_column_int64(st, 0),
		.command = lks_column_text(st, 1),
		.started = lks_column_text(st, 2),
		.stopped = sqlite3_column_int(st, 3),
	};

	return q->fn.suite(q->arg, &rec);
}

int lks_store_get_suite(lks_store *s, int64_t suite_id,
                        int (*fn)(void *arg, const lks_suite_rec *rec), void *arg)
{
	const lks_val v[] = { lks_val_int(suite_id) };
	struct lks_query q = { .fn.suite = fn, .arg = arg };

	return lks_store_rows(s, LKS_Q_GET_SUITE, v, LKS_NVALS(v), lks_row_suite, &q);
}

int lks_store_suites_before(lks_store *s, int64_t suite_id, int64_t *n)
{
	const lks_val v[] = { lks_val_int(suite_id) };

	return lks_store_scalar(s, LKS_Q_SUITES_BEFORE, v, LKS_NVALS(v), n);
}

/* An imported run's steps are its records (import_blocks), which SQL cannot read: the
   same aggregates over its step rows, NULL (NaN) ignored as SQL's avg does. */
static int lks_trend_of_records(lks_store *s, lks_trend_rec *rec)
{
	lks_step_row *rows;
	int n, last = -1, nloss = 0, ntime = 0;
	double loss = 0, time = 0;

	if (lks_store_get_all_steps(s, rec->run_id, &rows, &n))
		return -1;
	if (n == 0)
		return 0;
	for (int i = 0; i < n; i++) {
		last = rows[i].step > last ? rows[i].step : last;
		if (!isnan(rows[i].step_time))
			time += rows[i].step_time, ntime++;
	}
	for (int i = 0; i < n; i++)
		if (rows[i].step == last && !isnan(rows[i].loss))
			loss += rows[i].loss, nloss++;
	free(rows);
	rec->nsteps = last + 1;
	rec->final_loss = nloss ? loss / nloss : NAN;
	rec->step_time = ntime ? time / ntime : NAN;
	return 0;
}

/* A run of the trend; an aggregate of no rows (SQL NULL) is 0 steps, or NaN. */
static int lks_row_trend(sqlite3_stmt *st, void *ctx)
{
	const struct lks_query *q = ctx;
	lks_trend_rec rec = {
		.run_id = sqlite3_column_int64(st, 0),
		.suite_id = sqlite3_column_int64(st, 1),
		.run_name = lks_column_text(st, 2),
		.status = lks_column_text(st, 3),
		.nsteps = sqlite3_column_int(st, 4),
		.final_loss = lks_column_real(st, 5),
		.step_time = lks_column_real(st, 6),
		.steps = sqlite3_column_int(st, 8),
		.steps_last = lks_backend_steps_last(lks_column_text(st, 7)),
	};
	int tensor_steps = sqlite3_column_int(st, 9);

	if (rec.nsteps == 0 && lks_trend_of_records(q->s, &rec))
		return -1;
	rec.final_stored = rec.nsteps > 0;
	/* a tensor trace's steps are its records': the last of either, as run.h counts them;
	   a last step of tensor records alone stored no loss */
	if (tensor_steps > rec.nsteps) {
		rec.nsteps = tensor_steps;
		rec.final_stored = 0;
		rec.final_loss = NAN;
	}
	return q->fn.trend(q->arg, &rec);
}

int lks_store_get_trend(lks_store *s, const char *case_name, int64_t suite_id, int nsuites,
                        int (*fn)(void *arg, const lks_trend_rec *rec), void *arg)
{
	const lks_val v[] = { lks_val_text(case_name), lks_val_int(suite_id), lks_val_int(nsuites) };
	struct lks_query q = { .s = s, .fn.trend = fn, .arg = arg };

	return lks_store_rows(s, LKS_Q_GET_TREND, v, LKS_NVALS(v), lks_row_trend, &q);
}
