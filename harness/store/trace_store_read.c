/*
 * trace_store_read.c: what the trace store holds, read back (trace_store.h): runs, their
 * tensors, steps, stats and events, check verdicts, probes, SQNR rows. Values come back
 * exactly as they were given; a NULL comes back as the value that was stored as NULL
 * (NaN, an id of 0, an index of -1, no string). Each query's rows come through
 * lks_store_rows and one row function per record that makes it and hands it on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/store/trace_store_impl.h"
#include "kernels/err.h"

/* Where the rows of a walk go: the caller's function (one per record type) and its arg,
   or an array of at most cap rows; n counts the rows seen. */
struct lks_walk {
	union {
		int (*run)(void *arg, const lks_run_rec *run);
		int (*tensor)(void *arg, int seq, const char *name, lks_phase phase);
		int (*event)(void *arg, const lks_event_rec *ev);
		int (*check)(void *arg, const lks_check_rec *rec);
		int (*probe)(void *arg, const lks_probe_rec *rec);
	} fn;
	void *arg;
	void *rows;
	size_t cap, n;
};

/* The one integer of an aggregate query into *(int64_t *)ctx. */
static int lks_row_int64(sqlite3_stmt *st, void *ctx)
{
	*(int64_t *)ctx = sqlite3_column_int64(st, 0);
	return 0;
}

int lks_store_read_begin(lks_store *s)
{
	/* deferred: the snapshot is taken by the first read and held until the end */
	return LKS_SQL(s->db, sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL)) < 0 ? -1 : 0;
}

void lks_store_read_end(lks_store *s)
{
	if (!sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
}

int lks_store_scalar(lks_store *s, enum lks_q q, const lks_val *v, int n, int64_t *out)
{
	return lks_store_rows(s, q, v, n, lks_row_int64, out);
}

static int lks_row_status(sqlite3_stmt *st, void *ctx)
{
	struct lks_walk *w = ctx;

	snprintf(w->rows, w->cap, "%s", lks_column_text(st, 0));
	w->n++;
	return 0;
}

int lks_store_run_status(lks_store *s, int64_t run_id, char *buf, size_t size)
{
	const lks_val v[] = { lks_val_int(run_id) };
	struct lks_walk w = { .rows = buf, .cap = size };

	if (lks_store_rows(s, LKS_Q_STATUS, v, LKS_NVALS(v), lks_row_status, &w))
		return -1;
	if (w.n == 0)
		return lks_err("'%s': no run %lld", lks_store_path(s), (long long)run_id);
	return 0;
}

/* A row of LKS_RUN_COLS. */
static int lks_row_run(sqlite3_stmt *st, void *ctx)
{
	struct lks_walk *w = ctx;
	lks_run_rec run = {
		.run_id = sqlite3_column_int64(st, 0),
		.info = {
			.suite_id = sqlite3_column_int64(st, 1),
			.case_name = lks_column_text(st, 2),
			.case_path = lks_column_text(st, 3),
			.case_text = lks_column_text(st, 4),
			.run_name = lks_column_text(st, 5),
			.recipe = lks_column_text(st, 6),
			.options = lks_column_text(st, 7),
			.backend = lks_column_text(st, 8),
			.world_size = sqlite3_column_int(st, 9),
			.seed = (uint64_t)sqlite3_column_int64(st, 10),
			.steps = sqlite3_column_int(st, 11),
			.combo = lks_column_text(st, 12),
			.fingerprint = lks_column_text(st, 13),
		},
		.status = lks_column_text(st, 14),
		.started = lks_column_text(st, 15),
		.finished = lks_column_text(st, 16),
	};

	w->n++;
	return w->fn.run(w->arg, &run);
}

int lks_store_get_run(lks_store *s, int64_t run_id,
                      int (*fn)(void *arg, const lks_run_rec *run), void *arg)
{
	const lks_val v[] = { lks_val_int(run_id) };
	struct lks_walk w = { .fn.run = fn, .arg = arg };
	int rc = lks_store_rows(s, LKS_Q_GET_RUN, v, LKS_NVALS(v), lks_row_run, &w);

	if (rc == 0 && w.n == 0)
		return lks_err("'%s': no run %lld", lks_store_path(s), (long long)run_id);
	return rc;
}

int lks_store_get_runs(lks_store *s, int (*fn)(void *arg, const lks_run_rec *run), void *arg)
{
	struct lks_walk w = { .fn.run = fn, .arg = arg };

	return lks_store_rows(s, LKS_Q_GET_RUNS, NULL, 0, lks_row_run, &w);
}

int lks_store_count(lks_store *s, int64_t run_id, lks_store_table table, int64_t *n)
{
	static const enum lks_q q[] = {
		[LKS_TABLE_TENSORS] = LKS_Q_COUNT_TENSORS,
		[LKS_TABLE_STEPS] = LKS_Q_COUNT_STEPS,
		[LKS_TABLE_STATS] = LKS_Q_COUNT_STATS,
		[LKS_TABLE_EVENTS] = LKS_Q_COUNT_EVENTS,
	};
	const lks_val v[] = { lks_val_int(run_id) };

	if ((int)table < 0 || (int)table >= (int)(sizeof(q) / sizeof(q[0])))
		return lks_err("lks_store_count: bad table %d", (int)table);
	return lks_store_scalar(s, q[table], v, LKS_NVALS(v), n);
}

static int lks_row_tensor(sqlite3_stmt *st, void *ctx)
{
	struct lks_walk *w = ctx;
	const char *phase = lks_column_text(st, 2);
	int p = 0;

	while (lks_phase_name((lks_phase)p) && strcmp(phase, lks_phase_name((lks_phase)p)))
		p++;
	return w->fn.tensor(w->arg, sqlite3_column_int(st, 0), lks_column_text(st, 1),
	                    (lks_phase)p);
}

int lks_store_get_tensors(lks_store *s, int64_t run_id,
                          int (*fn)(void *arg, int seq, const char *name, lks_phase phase),
                          void *arg)
{
	const lks_val v[] = { lks_val_int(run_id) };
	struct lks_walk w = { .fn.tensor = fn, .arg = arg };

	return lks_store_rows(s, LKS_Q_GET_TENSORS, v, LKS_NVALS(v), lks_row_tensor, &w);
}

/* A row of LKS_STEP_COLS into the next place of w->rows, while there is one. */
static int lks_row_step(sqlite3_stmt *st, void *ctx)
{
	struct lks_walk *w = ctx;

	if (w->n < w->cap)
		((lks_step_row *)w->rows)[w->n] = (lks_step_row){
			.step = sqlite3_column_int(st, 0),
			.rank = sqlite3_column_int(st, 1),
			.loss = lks_column_real(st, 2),
			.grad_norm = lks_column_real(st, 3),
			.lr = lks_column_real(st, 4),
			.step_time = lks_column_real(st, 5),
			.nonfinite = sqlite3_column_int64(st, 6),
			.mem_peak = sqlite3_column_int64(st, 7),  /* NULL reads 0 */
		};
	w->n++;
	return 0;
}

int lks_store_get_steps(lks_store *s, int64_t run_id, int step, lks_step_row *rows, int cap,
                        int *n)
{
	const lks_val v[] = { lks_val_int(run_id), lks_val_int(step) };
	struct lks_walk w = { .rows = rows, .cap = cap > 0 ? (size_t)cap : 0 };
	int rc = lks_store_rows(s, step < 0 ? LKS_Q_GET_STEPS : LKS_Q_GET_STEP, v,
	                        step < 0 ? 1 : 2, lks_row_step, &w);

	*n = (int)w.n;
	return rc ? rc : lks_store_block_steps(s, run_id, step, rows, cap > 0 ? cap : 0, n);
}

int lks_store_get_all_steps(lks_store *s, int64_t run_id, lks_step_row **rows, int *n)
{
	int want = 0;

	*rows = NULL;
	*n = 0;
	if (lks_store_get_steps(s, run_id, -1, NULL, 0, &want))
		return -1;
	if (want == 0)
		return 0;
	if (!(*rows = malloc((size_t)want * sizeof(**rows))))
		return lks_err("out of memory");
	if (lks_store_get_steps(s, run_id, -1, *rows, want, n)) {
		free(*rows);
		*rows = NULL;
		*n = 0;
		return -1;
	}
	if (*n > want)
		*n = want;  /* rows stored between the two reads are the next reader's */
	return 0;
}

static int lks_row_stat(sqlite3_stmt *st, void *ctx)
{
	struct lks_walk *w = ctx;

	if (w->n < w->cap)
		((lks_stat_row *)w->rows)[w->n] = (lks_stat_row){
			.step = sqlite3_column_int(st, 0),
			.rank = sqlite3_column_int(st, 1),
			.seq = sqlite3_column_int(st, 2),
			.l2 = lks_column_real(st, 3),
			/* stored from a float, so the double converts back exactly */
			.amax = (float)lks_column_real(st, 4),
			.scale = (float)lks_column_real(st, 5),
			.nonfinite = sqlite3_column_int64(st, 6),
			.underflow = sqlite3_column_int64(st, 7),
			.saturated = sqlite3_column_int64(st, 8),
			.hash = (uint64_t)sqlite3_column_int64(st, 9),
		};
	w->n++;
	return 0;
}

int lks_store_get_stats(lks_store *s, int64_t run_id, int step, int rank, lks_stat_row *rows,
                        size_t cap, size_t *n)
{
	const lks_val v[] = { lks_val_int(run_id), lks_val_int(step), lks_val_int(rank) };
	struct lks_walk w = { .rows = rows, .cap = cap };
	int rc = lks_store_rows(s, LKS_Q_GET_STATS, v, LKS_NVALS(v), lks_row_stat, &w);

	*n = w.n;
	return rc;
}

static int lks_row_event(sqlite3_stmt *st, void *ctx)
{
	struct lks_walk *w = ctx;
	lks_event_rec ev = {
		.event_id = sqlite3_column_int64(st, 0),
		.step = lks_column_index(st, 1),
		.rank = lks_column_index(st, 2),
		.tensor = lks_column_text(st, 3),
		.kind = lks_column_text(st, 4),
		.message = lks_column_text(st, 5),
		.time = lks_column_text(st, 6),
	};

	return w->fn.event(w->arg, &ev);
}

int lks_store_get_events(lks_store *s, int64_t run_id,
                         int (*fn)(void *arg, const lks_event_rec *ev), void *arg)
{
	const lks_val v[] = { lks_val_int(run_id) };
	struct lks_walk w = { .fn.event = fn, .arg = arg };

	return lks_store_rows(s, LKS_Q_GET_EVENTS, v, LKS_NVALS(v), lks_row_event, &w);
}

/* ---- check verdicts ---- */

/* A check's parameters from column i on (name_a, ..., expect_tensor); expect NULL: none
   were stored, and none are read. */
static void lks_column_params(sqlite3_stmt *st, int i, lks_check_params *p)
{
	if (sqlite3_column_type(st, i + 7) == SQLITE_NULL) {
		*p = lks_check_params_none();
		return;
	}
	*p = (lks_check_params){
		.a = lks_column_text(st, i),
		.b = lks_column_text(st, i + 1),
		.metric = lks_column_text(st, i + 2),
		.tensors = lks_column_text(st, i + 3),
		.rtol = lks_column_real(st, i + 4),
		.atol = lks_column_real(st, i + 5),
		.floor_db = lks_column_real(st, i + 6),
		.expect = lks_column_text(st, i + 7),
		.exp_step = lks_column_index(st, i + 8),
		.exp_rank = lks_column_index(st, i + 9),
		.exp_tensor = lks_column_text(st, i + 10),
	};
}

/* A row of "check_id, " LKS_CHECK_COLS. */
static int lks_row_check(sqlite3_stmt *st, void *ctx)
{
	struct lks_walk *w = ctx;
	int ta = sqlite3_column_type(st, 12), tb = sqlite3_column_type(st, 13);
	lks_check_rec c = {
		.check_id = sqlite3_column_int64(st, 0),
		.suite_id = sqlite3_column_int64(st, 1),
		.case_name = lks_column_text(st, 2),
		.check_name = lks_column_text(st, 3),
		.kind = lks_column_text(st, 4),
		.run_a = sqlite3_column_int64(st, 5),
		.run_b = sqlite3_column_int64(st, 6),
		.verdict = lks_column_text(st, 7),
		.step = lks_column_index(st, 8),
		.rank = lks_column_index(st, 9),
		.tensor = lks_column_text(st, 10),
		.field = lks_column_text(st, 11),
		.abs_err = lks_column_real(st, 14),
		.rel_err = lks_column_real(st, 15),
		.ulp = sqlite3_column_type(st, 16) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 16),
		.message = lks_column_text(st, 17),
	};

	if (ta == SQLITE_INTEGER && tb == SQLITE_INTEGER) {
		c.type = LKS_VALUE_INT;
		c.ivalue_a = sqlite3_column_int64(st, 12);
		c.ivalue_b = sqlite3_column_int64(st, 13);
	} else if (ta != SQLITE_NULL || tb != SQLITE_NULL) {
		c.type = LKS_VALUE_REAL;
		c.value_a = lks_column_real(st, 12);
		c.value_b = lks_column_real(st, 13);
	} else {
		c.value_a = c.value_b = NAN;
	}
	lks_column_params(st, 18, &c.params);
	return w->fn.check(w->arg, &c);
}

int lks_store_get_checks(lks_store *s, int64_t suite_id,
                         int (*fn)(void *arg, const lks_check_rec *rec), void *arg)
{
	const lks_val v[] = { lks_val_int(suite_id) };
	struct lks_walk w = { .fn.check = fn, .arg = arg };

	return lks_store_rows(s, suite_id > 0 ? LKS_Q_GET_CHECKS : LKS_Q_GET_ALL_CHECKS, v,
	                      suite_id > 0 ? 1 : 0, lks_row_check, &w);
}

/* ---- probes of matrix, bisect and reduce ---- */

static int lks_row_probe(sqlite3_stmt *st, void *ctx)
{
	struct lks_walk *w = ctx;
	lks_probe_rec p = {
		.probe_id = sqlite3_column_int64(st, 0),
		.session_id = sqlite3_column_int64(st, 1),
		.combo = lks_column_text(st, 2),
		.cases = lks_column_text(st, 3),
		.check_name = lks_column_text(st, 4),
		.outcome = lks_column_text(st, 5),
		.exit_code = lks_column_index(st, 6),
		.signal = sqlite3_column_int(st, 7),
		.seconds = lks_column_real(st, 8),
		.suite_id = sqlite3_column_int64(st, 9),
		.output = lks_column_text(st, 10),
		.started = lks_column_text(st, 11),
	};

	return w->fn.probe(w->arg, &p);
}

int lks_store_get_probes(lks_store *s, int64_t session_id,
                         int (*fn)(void *arg, const lks_probe_rec *rec), void *arg)
{
	const lks_val v[] = { lks_val_int(session_id) };
	struct lks_walk w = { .fn.probe = fn, .arg = arg };

	return lks_store_rows(s, session_id > 0 ? LKS_Q_GET_PROBES : LKS_Q_GET_ALL_PROBES, v,
	                      session_id > 0 ? 1 : 0, lks_row_probe, &w);
}

int lks_store_last_suite(lks_store *s, int64_t *suite_id)
{
	return lks_store_scalar(s, LKS_Q_LAST_SUITE, NULL, 0, suite_id);
}

int lks_store_combo_suite(lks_store *s, const char *combo, int64_t after, int64_t *suite_id)
{
	const lks_val v[] = { lks_val_text(combo), lks_val_int(after) };

	return lks_store_scalar(s, LKS_Q_COMBO_SUITE, v, LKS_NVALS(v), suite_id);
}

/* ---- gradient SQNR between two runs (harness/verify/sqnr.h) ---- */

int lks_store_sqnr_get(lks_store *s, int64_t run_a, int64_t run_b,
                       int (*fn)(void *arg, const lks_sqnr_row *row), void *arg)
{
	sqlite3_stmt *st = NULL;
	int rc = 0, r;

	if (sqlite3_prepare_v2(s->db, "SELECT step, seq, tensor, sqnr_db FROM grad_sqnr WHERE "
	                       "run_a = ?1 AND run_b = ?2 ORDER BY step, seq", -1, &st, NULL)
	    != SQLITE_OK) {
		sqlite3_finalize(st);
		return 0;  /* no table: no SQNR rows were ever stored here */
	}
	sqlite3_bind_int64(st, 1, run_a);
	sqlite3_bind_int64(st, 2, run_b);
	while (rc == 0 && (r = sqlite3_step(st)) == SQLITE_ROW) {
		lks_sqnr_row row = {
			.step = sqlite3_column_int(st, 0),
			.seq = sqlite3_column_int(st, 1),
			.db = lks_column_real(st, 3),
		};

		snprintf(row.tensor, sizeof(row.tensor), "%s", lks_column_text(st, 2));
		rc = fn(arg, &row);
	}
	if (rc == 0 && r != SQLITE_DONE)
		rc = lks_err("'%s': reading grad_sqnr: %s", lks_store_path(s), sqlite3_errmsg(s->db));
	sqlite3_finalize(st);
	return rc;
}
