/*
 * trace_store_write.c: what the trace store is given (trace_store.h): suites, runs and
 * their tensors, steps with their stat rows, events, check verdicts, probes, SQNR rows.
 *
 * Stat rows are the bulk of the data (steps x ranks x tensors): their table is WITHOUT
 * ROWID keyed (run_id, step, rank, seq), has no secondary index and no foreign key (the
 * step row written in the same transaction stands for it), so that an insert is one append
 * to the rightmost leaf of one b-tree when rows arrive in key order. They go in
 * LKS_STAT_BATCH rows per INSERT: per-statement work (cursor open, transaction checks) is
 * then shared by many rows, which measured about 1.7x the rate of one row per statement.
 * A run is inserted 'incomplete' and ended once, after its last step.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/store/trace_store_impl.h"
#include "kernels/err.h"

/* Stat rows per INSERT statement: 1 + 10 x 64 parameters. Gains flatten from 32 rows on;
   a few hundred get slower again (bigger statement journal per statement). */
#define LKS_STAT_BATCH 64

/* The parameters of one stat row after the run id: step, rank, seq, l2, amax, scale,
   nonfinite, underflow, saturated, hash. */
#define LKS_STAT_PARAMS 10

int lks_store_begin_suite(lks_store *s, const char *command, int64_t *suite_id)
{
	const lks_val v[] = { lks_val_text(command ? command : "") };

	return lks_store_put(s, LKS_Q_SUITE, v, LKS_NVALS(v), suite_id);
}

int lks_store_end_suite(lks_store *s, int64_t suite_id, int stopped)
{
	const lks_val v[] = { lks_val_int(suite_id), stopped ? lks_val_int(stopped) : lks_val_null() };

	return lks_store_put(s, LKS_Q_END_SUITE, v, LKS_NVALS(v), NULL);
}

int lks_store_begin_run(lks_store *s, const lks_run_info *info, int64_t *run_id)
{
	const lks_val v[] = {
		lks_val_id(info->suite_id), lks_val_text(info->case_name),
		lks_val_text(info->case_path), lks_val_text(info->case_text),
		lks_val_text(info->run_name), lks_val_text(info->recipe), lks_val_text(info->options),
		lks_val_text(info->backend), lks_val_int(info->world_size),
		lks_val_int((int64_t)info->seed), lks_val_int(info->steps), lks_val_text(info->combo),
		lks_val_text(info->fingerprint),
	};

	if (!info->case_name || !info->run_name || !info->recipe || !info->backend)
		return lks_err("'%s': a run needs a case name, run name, recipe and backend",
		               lks_store_path(s));
	return lks_store_put(s, LKS_Q_RUN, v, LKS_NVALS(v), run_id);
}

int lks_store_batch_end(lks_store *s, sqlite3_stmt *st, int rc)
{
	if (!rc && lks_store_exec(s, LKS_Q_COMMIT))
		rc = -1;
	/* the strings are SQLITE_STATIC: drop them before the caller's memory goes */
	sqlite3_clear_bindings(st);
	if (rc)
		lks_store_rollback(s);
	return rc;
}

int lks_store_tensors(lks_store *s, int64_t run_id, const char *const *names,
                      const lks_phase *phases, int n)
{
	sqlite3_stmt *st;
	int rc = -1;

	if (lks_store_stmt(s, LKS_Q_TENSOR, &st) || lks_store_exec(s, LKS_Q_BEGIN))
		return -1;
	for (int i = 0; i < n; i++) {
		const char *phase = lks_phase_name(phases[i]);
		const lks_val v[] = { lks_val_int(run_id), lks_val_int(i), lks_val_text(names[i]),
		                      lks_val_text(phase) };

		if (!names[i] || !phase) {
			lks_err("'%s': run %lld tensor %d has no name or a bad phase (%d)",
			        lks_store_path(s), (long long)run_id, i, (int)phases[i]);
			goto out;
		}
		lks_store_bind(st, 1, v, LKS_NVALS(v));
		if (lks_store_done(s, st))
			goto out;
	}
	rc = 0;
out:
	return lks_store_batch_end(s, st, rc);
}

/* Steps go only to a run that exists and has not ended: a step after end_run is a bug in
   the runner, and storing it would make a complete run change under a reader. */
static int lks_store_check_open_run(lks_store *s, int64_t run_id)
{
	char status[32];

	if (lks_store_run_status(s, run_id, status, sizeof(status)))
		return -1;
	if (strcmp(status, "incomplete"))
		return lks_err("'%s': run %lld has ended ('%s'); no more steps", lks_store_path(s),
		               (long long)run_id, status);
	return 0;
}

/* Adds the row that failed (or the first of n rows written together) to the message
   already recorded. */
static int lks_store_err_row(int step, int rank, int seq, int n)
{
	char msg[1024];

	snprintf(msg, sizeof(msg), "%s", lks_errmsg());
	if (seq < 0)
		return lks_err("%s, in the step row of step %d rank %d", msg, step, rank);
	if (n > 1)
		return lks_err("%s, in the %d stat rows from step %d rank %d seq %d", msg, n, step,
		               rank, seq);
	return lks_err("%s, in the stat row of step %d rank %d seq %d", msg, step, rank, seq);
}

/* The run id is bound once; reset keeps bindings, and the rest is rebound each row. */
int lks_store_step_rows(lks_store *s, int64_t run_id, const lks_step_row *steps, int nsteps)
{
	sqlite3_stmt *st;

	if (lks_store_stmt(s, LKS_Q_STEP, &st))
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	for (int i = 0; i < nsteps; i++) {
		const lks_step_row *r = &steps[i];

		lks_store_bind_step(st, 2, r);
		if (lks_store_done(s, st))
			return lks_store_err_row(r->step, r->rank, -1, 1);
	}
	return 0;
}

/* One value at a time, not an array: the hot loop of ingest (lks_store_bind1). */
static inline void lks_bind_stat(sqlite3_stmt *st, int b, const lks_stat_row *r)
{
	lks_store_bind1(st, b, lks_val_int(r->step));
	lks_store_bind1(st, b + 1, lks_val_int(r->rank));
	lks_store_bind1(st, b + 2, lks_val_int(r->seq));
	lks_store_bind1(st, b + 3, lks_val_real(r->l2));
	lks_store_bind1(st, b + 4, lks_val_real(r->amax));
	lks_store_bind1(st, b + 5, lks_val_real(r->scale));
	lks_store_bind1(st, b + 6, lks_val_int(r->nonfinite));
	lks_store_bind1(st, b + 7, lks_val_int(r->underflow));
	lks_store_bind1(st, b + 8, lks_val_int(r->saturated));
	lks_store_bind1(st, b + 9, lks_val_int((int64_t)r->hash));
}

/* INSERT of LKS_STAT_BATCH stat rows: ?1 is the run id shared by all, then ten
   parameters per row from ?2 on, in the order of lks_bind_stat(). OR ROLLBACK: a failed
   step is rolled back whole anyway, and saying so spares SQLite the statement journal it
   keeps to undo part of a multi-row statement (measured 5-10% of ingest). */
static int lks_store_stat_batch(lks_store *s, sqlite3_stmt **out)
{
	static const char head[] = "INSERT OR ROLLBACK INTO stats (run_id, step, rank, seq, l2, "
	                           "amax, scale, nonfinite, underflow, saturated, hash) VALUES ";
	char *sql;
	size_t len = sizeof(head) - 1;
	int rc;

	if (s->stat_batch) {
		*out = s->stat_batch;
		return 0;
	}
	sql = malloc(sizeof(head) + 80 * (size_t)LKS_STAT_BATCH);
	if (!sql)
		return lks_err("'%s': out of memory", lks_store_path(s));
	memcpy(sql, head, len);
	for (int j = 0; j < LKS_STAT_BATCH; j++) {
		int b = 2 + LKS_STAT_PARAMS * j;

		len += (size_t)sprintf(sql + len, "%s(?1,?%d,?%d,?%d,?%d,?%d,?%d,?%d,?%d,?%d,?%d)",
		                       j ? "," : "", b, b + 1, b + 2, b + 3, b + 4, b + 5, b + 6,
		                       b + 7, b + 8, b + 9);
	}
	rc = LKS_SQL(s->db, sqlite3_prepare_v3(s->db, sql, (int)len, SQLITE_PREPARE_PERSISTENT,
	                                       &s->stat_batch, NULL));
	free(sql);
	if (rc < 0)
		return -1;
	*out = s->stat_batch;
	return 0;
}

/* The hot loop of ingest: whole batches, then the rest one row per statement. The run id
   is bound once; reset keeps bindings, and every other parameter is rebound each row. */
static int lks_store_stat_rows(lks_store *s, int64_t run_id, const lks_stat_row *stats,
                               size_t nstats)
{
	sqlite3_stmt *st = NULL, *batch = NULL;
	size_t i = 0;

	if (lks_store_stmt(s, LKS_Q_STAT, &st) || lks_store_stat_batch(s, &batch))
		return -1;
	sqlite3_bind_int64(batch, 1, run_id);
	for (; i + LKS_STAT_BATCH <= nstats; i += LKS_STAT_BATCH) {
		const lks_stat_row *r = &stats[i];

		for (int j = 0; j < LKS_STAT_BATCH; j++)
			lks_bind_stat(batch, 2 + LKS_STAT_PARAMS * j, &r[j]);
		if (sqlite3_step(batch) != SQLITE_DONE) {
			LKS_SQL(s->db, sqlite3_reset(batch));
			return lks_store_err_row(r->step, r->rank, r->seq, LKS_STAT_BATCH);
		}
		sqlite3_reset(batch);
	}
	sqlite3_bind_int64(st, 1, run_id);
	for (; i < nstats; i++) {
		lks_bind_stat(st, 2, &stats[i]);
		if (sqlite3_step(st) != SQLITE_DONE) {
			LKS_SQL(s->db, sqlite3_reset(st));
			return lks_store_err_row(stats[i].step, stats[i].rank, stats[i].seq, 1);
		}
		sqlite3_reset(st);
	}
	return 0;
}

int lks_store_step(lks_store *s, int64_t run_id, const lks_step_row *steps, int nsteps,
                   const lks_stat_row *stats, size_t nstats)
{
	int rc = -1;

	if (lks_store_exec(s, LKS_Q_BEGIN))
		return -1;
	if (lks_store_check_open_run(s, run_id)
	    || lks_store_step_rows(s, run_id, steps, nsteps)
	    || lks_store_stat_rows(s, run_id, stats, nstats)
	    || lks_store_exec(s, LKS_Q_COMMIT))
		goto out;
	rc = 0;
out:
	if (rc)
		lks_store_rollback(s);
	return rc;
}

int lks_store_event(lks_store *s, int64_t run_id, int step, int rank, const char *tensor,
                    const char *kind, const char *message)
{
	const lks_val v[] = { lks_val_int(run_id), lks_val_index(step), lks_val_index(rank),
	                      lks_val_text(tensor), lks_val_text(kind), lks_val_text(message) };

	if (!kind)
		return lks_err("'%s': an event needs a kind", lks_store_path(s));
	return lks_store_put(s, LKS_Q_EVENT, v, LKS_NVALS(v), NULL);
}

int lks_store_end_run(lks_store *s, int64_t run_id, const char *status)
{
	const lks_val v[] = { lks_val_int(run_id), lks_val_text(status) };

	if (!status || (strcmp(status, "complete") && strcmp(status, "failed")))
		return lks_err("'%s': run %lld cannot end as '%s' (complete or failed)",
		               lks_store_path(s), (long long)run_id, status ? status : "(null)");
	if (lks_store_put(s, LKS_Q_END_RUN, v, LKS_NVALS(v), NULL))
		return -1;
	if (sqlite3_changes(s->db) != 1)
		return lks_err("'%s': no run %lld that is still incomplete", lks_store_path(s),
		               (long long)run_id);
	return 0;
}

int lks_store_fail_run(lks_store *s, int64_t run_id, const char *why)
{
	char msg[1024];  /* why may be lks_errmsg()'s, which a failing call overwrites */
	int rc;

	snprintf(msg, sizeof(msg), "%s", why && *why ? why : "failed");
	rc = lks_store_end_run(s, run_id, "failed");
	return lks_store_event(s, run_id, -1, -1, NULL, LKS_EVENT_RUN_FAILED, msg) || rc ? -1 : 0;
}

/* ---- check verdicts ---- */

/* Value a (which 0) or b of a verdict, as its type says. */
static lks_val lks_check_value(const lks_check_rec *r, int which)
{
	if (r->type == LKS_VALUE_REAL)
		return lks_val_real(which ? r->value_b : r->value_a);
	if (r->type == LKS_VALUE_INT)
		return lks_val_int(which ? r->ivalue_b : r->ivalue_a);
	return lks_val_null();
}

int lks_store_check(lks_store *s, const lks_check_rec *r)
{
	/* stored whole or not at all */
	const lks_check_params p = r->params.expect ? r->params : lks_check_params_none();
	const lks_val v[] = {
		lks_val_id(r->suite_id), lks_val_text(r->case_name), lks_val_text(r->check_name),
		lks_val_text(r->kind), lks_val_id(r->run_a), lks_val_id(r->run_b),
		lks_val_text(r->verdict), lks_val_index(r->step), lks_val_index(r->rank),
		lks_val_text(r->tensor), lks_val_text(r->field), lks_check_value(r, 0),
		lks_check_value(r, 1), lks_val_real(r->abs_err), lks_val_real(r->rel_err),
		lks_val_index(r->ulp), lks_val_text(r->message),
		lks_val_text(p.a), lks_val_text(p.b), lks_val_text(p.metric), lks_val_text(p.tensors),
		lks_val_real(p.rtol), lks_val_real(p.atol), lks_val_real(p.floor_db),
		lks_val_text(p.expect), lks_val_index(p.exp_step), lks_val_index(p.exp_rank),
		lks_val_text(p.exp_tensor),
	};

	if (!r->case_name || !r->check_name || !r->kind || !r->verdict)
		return lks_err("'%s': a check verdict needs a case, a check name, a kind and a verdict",
		               lks_store_path(s));
	if (p.expect && strcmp(p.expect, "pass") && strcmp(p.expect, "fail"))
		return lks_err("'%s': check '%s' expects '%s' (pass or fail)", lks_store_path(s),
		               r->check_name, p.expect);
	return lks_store_put(s, LKS_Q_CHECK, v, LKS_NVALS(v), NULL);
}

/* ---- probes of matrix, bisect and reduce ---- */

int lks_store_begin_session(lks_store *s, const char *kind, const char *command,
                            const char *combos, int64_t *session_id)
{
	const lks_val v[] = { lks_val_text(kind), lks_val_text(command ? command : ""),
	                      lks_val_text(combos) };

	return lks_store_put(s, LKS_Q_SESSION, v, LKS_NVALS(v), session_id);
}

int lks_store_end_session(lks_store *s, int64_t session_id, const char *result)
{
	const lks_val v[] = { lks_val_int(session_id), lks_val_text(result) };

	return lks_store_put(s, LKS_Q_END_SESSION, v, LKS_NVALS(v), NULL);
}

int lks_store_probe(lks_store *s, const lks_probe_rec *r, int64_t *probe_id)
{
	const lks_val v[] = {
		lks_val_int(r->session_id), lks_val_text(r->combo), lks_val_text(r->cases),
		lks_val_text(r->check_name), lks_val_text(r->outcome), lks_val_index(r->exit_code),
		lks_val_id(r->signal), lks_val_real(r->seconds), lks_val_id(r->suite_id),
		lks_val_text(r->output), lks_val_text(r->started),
	};

	if (!r->combo || !r->cases || !r->outcome || !r->started)
		return lks_err("'%s': a probe needs a combo, cases, an outcome and a start time",
		               lks_store_path(s));
	return lks_store_put(s, LKS_Q_PROBE, v, LKS_NVALS(v), probe_id);
}

/* ---- gradient SQNR between two runs (harness/verify/sqnr.h) ---- */

int lks_store_sqnr_put(lks_store *s, int64_t run_a, int64_t run_b, const lks_sqnr_row *rows,
                       size_t n)
{
	sqlite3_stmt *st = NULL;
	int rc = -1;

	if (LKS_SQL(s->db, sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL)) < 0)
		return -1;
	if (LKS_SQL(s->db, sqlite3_exec(s->db, lks_store_sqnr_schema, NULL, NULL, NULL)) < 0
	    || LKS_SQL(s->db, sqlite3_prepare_v2(s->db, "INSERT INTO grad_sqnr VALUES (?1, ?2, ?3, "
	                                         "?4, ?5, ?6)", -1, &st, NULL)) < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const lks_val v[] = { lks_val_int(run_a), lks_val_int(run_b),
		                      lks_val_int(rows[i].step), lks_val_int(rows[i].seq),
		                      lks_val_text(rows[i].tensor), lks_val_real(rows[i].db) };

		lks_store_bind(st, 1, v, LKS_NVALS(v));
		if (LKS_SQL(s->db, sqlite3_step(st)) < 0)
			goto out;
		sqlite3_reset(st);
	}
	rc = LKS_SQL(s->db, sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL)) < 0 ? -1 : 0;
out:
	sqlite3_finalize(st);
	if (rc && !sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}
