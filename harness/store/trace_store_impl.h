/*
 * trace_store_impl.h: what the files of the trace store share, and nothing outside
 * harness/store/ includes (trace_store.h is the store's interface).
 *
 *   trace_store_schema.c  the schema, one part per version; reading a file's header,
 *                         upgrading an earlier version, and the later tables a read-only
 *                         store of an earlier version finds in its TEMP schema
 *   trace_store_open.c    opening (to write and to read), the WAL checkpointer, closing
 *   trace_store_sql.c     every statement's SQL, prepared on first use; the one binder of
 *                         values and the one walk over rows
 *   trace_store_write.c   suites, runs, tensors, steps and stats, events, verdicts, probes,
 *                         SQNR rows
 *   trace_store_read.c    the same read back
 *   trace_store_prune.c  retention: old suites' stat rows removed in bounded
 *                         transactions, VACUUM (prune.h)
 *   trace_store_metrics.c  an imported run in one transaction, its metrics read back
 *   trace_store_blocks.c  an imported run's records, many to a row (import_blocks), read
 *                         back as metrics and as step rows
 *   tensor_trace.c        an imported tensor trace's records (tensor_blocks), a step
 *                         of them read back
 *   trace_store_nightly.c  night-over-night verdicts written and read back
 *   report_query.c        the report's reads beside those: a suite, the trend of a case
 */
#ifndef LKS_HARNESS_STORE_TRACE_STORE_IMPL_H
#define LKS_HARNESS_STORE_TRACE_STORE_IMPL_H

#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>

#include "harness/store/trace_store.h"

/* Writers wait this long for each other's transactions; a step transaction takes
   milliseconds, so a minute only runs out when some process holds the lock wrongly. */
#define LKS_STORE_BUSY_MS 60000

/* Checks the result of an SQLite call: a negative value (-1, with the message recorded
   naming the database, the error and the place in the store's files) on error, else the
   SQLite code itself, so that SQLITE_ROW and SQLITE_DONE stay apart. */
#define LKS_SQL(db, x) lks_sql_check((db), (x), __FILE__, __LINE__)
int lks_sql_check(sqlite3 *db, int rc, const char *file, int line);

/* The statements of the store, their SQL in lks_store_sql (trace_store_sql.c). */
enum lks_q {
	LKS_Q_BEGIN,
	LKS_Q_COMMIT,
	LKS_Q_ROLLBACK,
	LKS_Q_FK_OFF,
	LKS_Q_FK_ON,
	LKS_Q_SUITE,
	LKS_Q_END_SUITE,
	LKS_Q_RUN,
	LKS_Q_TENSOR,
	LKS_Q_STEP,
	LKS_Q_STAT,
	LKS_Q_EVENT,
	LKS_Q_END_RUN,
	LKS_Q_STATUS,
	LKS_Q_GET_RUN,
	LKS_Q_GET_RUNS,
	LKS_Q_COUNT_TENSORS,
	LKS_Q_COUNT_STEPS,
	LKS_Q_COUNT_STATS,
	LKS_Q_COUNT_EVENTS,
	LKS_Q_GET_TENSORS,
	LKS_Q_GET_STEP,
	LKS_Q_GET_STEPS,
	LKS_Q_GET_STATS,
	LKS_Q_GET_EVENTS,
	LKS_Q_HEALTH,
	LKS_Q_GET_HEALTH,
	LKS_Q_GEMM_PLAN,
	LKS_Q_GET_GEMM_PLANS,
	LKS_Q_CHECK,
	LKS_Q_GET_CHECKS,
	LKS_Q_GET_ALL_CHECKS,
	LKS_Q_SESSION,
	LKS_Q_END_SESSION,
	LKS_Q_PROBE,
	LKS_Q_GET_PROBES,
	LKS_Q_GET_ALL_PROBES,
	LKS_Q_LAST_SUITE,
	LKS_Q_COMBO_SUITE,
	LKS_Q_GET_SUITE,
	LKS_Q_SUITES_BEFORE,
	LKS_Q_GET_TREND,
	LKS_Q_GET_METRICS,
	LKS_Q_BLOCK,
	LKS_Q_GET_BLOCKS_AT,
	LKS_Q_COUNT_BLOCKS,
	LKS_Q_BLOCK_UPDATE,
	LKS_Q_BLOCK_DELETE,
	LKS_Q_BLOCKS_DROP,
	LKS_Q_IMPORT_END,
	LKS_Q_IMPORT_RESTART,
	LKS_Q_NIGHTLY,
	LKS_Q_GET_NIGHTLY,
	LKS_Q_TBLOCK,
	LKS_Q_GET_TBLOCKS,
	LKS_Q_TSTEPS,
	LKS_Q_TRACE_FIND,
	LKS_Q_TRACE_TENSOR,
	LKS_Q_TRACE_TENSOR_ADD,
	LKS_Q_TRACE_STEPS,
	LKS_Q_TRACE_DONE,
	LKS_Q_STATE,
	LKS_Q_GET_STATE,
	LKS_Q_SCREEN,
	LKS_Q_GET_SCREEN,
	LKS_Q_COUNT
};

struct lks_store {
	sqlite3 *db;
	sqlite3_stmt *stmt[LKS_Q_COUNT];  /* prepared on first use */
	sqlite3_stmt *stat_batch;         /* LKS_STAT_BATCH rows per INSERT */

	/* the background checkpointer: its connection, and a wake-up from the WAL hook */
	sqlite3 *ckpt_db;
	pthread_t ckpt_thread;
	pthread_mutex_t ckpt_mu;
	pthread_cond_t ckpt_cv;
	int ckpt_running, ckpt_pending, ckpt_stop;  /* under ckpt_mu, but ckpt_running */
	int ckpt_frames;                  /* WAL frames at the last wake-up (writer thread only) */
	int bulk;                         /* in rollback-journal mode for a bulk write */
	int bulk_fd;                      /* 1 + a descriptor of the file in a bulk write in
	                                     rollback-journal mode (lks_store_bulk_flush); 0 */
};

/* In a bulk write in rollback-journal mode, the kernel starts writing the pages written to
   the file so far to the disk, and does not wait for it (trace_store.h); else nothing. */
void lks_store_bulk_flush(lks_store *s);

/* ---- the schema (trace_store_schema.c) ---- */

/* CREATE TABLE IF NOT EXISTS grad_sqnr: made by the first lks_store_sqnr_put. */
extern const char lks_store_sqnr_schema[];

/* CREATE INDEX IF NOT EXISTS tensors_by_name: made by every open to write, whatever the
   file's schema version (trace_store_schema.c). */
extern const char lks_store_tensor_index[];

/* NEW: a missing or empty file; OLD: ours, of an earlier schema version; OURS: current. */
enum lks_store_kind { LKS_FILE_NEW, LKS_FILE_OLD, LKS_FILE_OURS };

/* Why the file system will not let path be opened or written, in words in buf (returned),
   where SQLite says only "disk I/O error" or "unable to open database file": its file
   system mounted read-only, a -wal or -shm beside it of another user, or no space left.
   NULL where none of these is so. */
const char *lks_store_fs_why(const char *path, char *buf, size_t n);

/* What the file holds, read without writing; refuses (LKS_E_BAD_INPUT) what is not ours
   or of a later version. *version: the file's schema version (0 for a new file). */
int lks_store_inspect(sqlite3 *db, const char *path, enum lks_store_kind *kind,
                      int64_t *version);
/* Creates the schema of a new file, or adds what a file of an earlier version lacks,
   unless another process did it first: the file is inspected again under the write lock. */
int lks_store_create(sqlite3 *db, const char *path);
/* What a file of schema 'version', read without being upgraded, lacks: made in the
   connection's TEMP schema, empty, so that every read finds it as an upgrade would. */
int lks_store_temp_schema(sqlite3 *db, const char *path, int64_t version);

/* ---- statements and values (trace_store_sql.c) ---- */

/* The file's path for messages; ":memory:" for none. */
const char *lks_store_path(lks_store *s);
/* The cached statement for q, reset with its bindings kept (a hot loop rebinds only what
   changes). */
int lks_store_stmt(lks_store *s, enum lks_q q, sqlite3_stmt **out);
/* Runs a statement that returns no rows (or whose rows do not matter) and resets it. */
int lks_store_done(lks_store *s, sqlite3_stmt *st);
int lks_store_exec(lks_store *s, enum lks_q q);
/* Undoes an open transaction after an error, keeping the error already recorded: a
   failed step must leave the message that says why, not one about the rollback. */
void lks_store_rollback(lks_store *s);
/* Ends rows inserted through st after LKS_Q_BEGIN: commits when rc is 0, else rolls back
   (keeping the error); clears st's bindings either way. Returns 0 or -1. */
int lks_store_batch_end(lks_store *s, sqlite3_stmt *st, int rc);

/* One value bound to a statement's parameter: what a column gets, SQL NULL included.
   Made by the lks_val_* functions below, which hold the rules of NULL in one place. */
typedef struct lks_val {
	enum { LKS_VAL_NULL, LKS_VAL_INT, LKS_VAL_REAL, LKS_VAL_TEXT } type;
	union {
		int64_t i;
		double r;
		const char *t;
	} u;
} lks_val;

static inline lks_val lks_val_null(void)
{
	return (lks_val){ .type = LKS_VAL_NULL };
}

static inline lks_val lks_val_int(int64_t v)
{
	return (lks_val){ .type = LKS_VAL_INT, .u.i = v };
}

/* SQLite has no NaN: a NaN is stored as NULL. */
static inline lks_val lks_val_real(double v)
{
	return isnan(v) ? lks_val_null() : (lks_val){ .type = LKS_VAL_REAL, .u.r = v };
}

/* The string is bound without a copy: it must live until the bindings are cleared. */
static inline lks_val lks_val_text(const char *v)
{
	return v ? (lks_val){ .type = LKS_VAL_TEXT, .u.t = v } : lks_val_null();
}

/* An id (suite, run, session): NULL unless > 0. */
static inline lks_val lks_val_id(int64_t v)
{
	return v > 0 ? lks_val_int(v) : lks_val_null();
}

/* A step, rank, exit code or ULP distance: NULL unless >= 0 (-1 says none). */
static inline lks_val lks_val_index(int64_t v)
{
	return v >= 0 ? lks_val_int(v) : lks_val_null();
}

#define LKS_NVALS(v) ((int)(sizeof(v) / sizeof((v)[0])))

/* Binds v to the parameter i of st. Inline: where the value is made in the same function
   (a stat row), the compiler knows its type and the switch goes, so that the hot loop of
   ingest costs what binding each value by hand did. */
static inline void lks_store_bind1(sqlite3_stmt *st, int i, lks_val v)
{
	switch (v.type) {
	case LKS_VAL_INT:
		sqlite3_bind_int64(st, i, v.u.i);
		break;
	case LKS_VAL_REAL:
		sqlite3_bind_double(st, i, v.u.r);
		break;
	case LKS_VAL_TEXT:
		sqlite3_bind_text(st, i, v.u.t, -1, SQLITE_STATIC);
		break;
	default:
		sqlite3_bind_null(st, i);
		break;
	}
}

/* Binds v[0..n) to the parameters first, first + 1, ... of st. */
static inline void lks_store_bind(sqlite3_stmt *st, int first, const lks_val *v, int n)
{
	for (int i = 0; i < n; i++)
		lks_store_bind1(st, first + i, v[i]);
}

/* Binds a steps row to the parameters first, ... first + 7 of st (LKS_STEP_COLS). */
static inline void lks_store_bind_step(sqlite3_stmt *st, int first, const lks_step_row *r)
{
	const lks_val v[] = { lks_val_int(r->step), lks_val_int(r->rank), lks_val_real(r->loss),
	                      lks_val_real(r->grad_norm), lks_val_real(r->lr),
	                      lks_val_real(r->step_time), lks_val_int(r->nonfinite),
	                      lks_val_id(r->mem_peak) };

	lks_store_bind(st, first, v, LKS_NVALS(v));
}

/* Runs q with v[0..n) bound to ?1..?n, a statement that returns no rows, then clears the
   bindings (the strings are the caller's). *rowid: the row inserted, when not NULL. */
int lks_store_put(lks_store *s, enum lks_q q, const lks_val *v, int n, int64_t *rowid);
/* Binds v[0..n) to ?1..?n of q and steps through its rows, calling row(st, ctx) on each
   until it returns other than 0, which is then returned (-1 when a step fails). */
int lks_store_rows(lks_store *s, enum lks_q q, const lks_val *v, int n,
                   int (*row)(sqlite3_stmt *st, void *ctx), void *ctx);

/* The one integer q's first row holds (trace_store_read.c). */
int lks_store_scalar(lks_store *s, enum lks_q q, const lks_val *v, int n, int64_t *out);
/* An imported run's metrics packed in its steps rows (schema versions 7 to 9;
   trace_store_metrics.c), by (step, rank, name). */
int lks_store_get_packed_metrics(lks_store *s, int64_t run_id, const char *name,
                                 int (*fn)(void *arg, const lks_metric_row *row), void *arg);
/* The step rows of run_id's import blocks (of step, or every step when step < 0) after
   the *n rows already in rows (cap in all): rows[0..min(*n, cap)) are then sorted by
   (step, rank), and *n counts every row, those past cap too (trace_store_blocks.c). */
int lks_store_block_steps(lks_store *s, int64_t run_id, int step, lks_step_row *rows, int cap,
                          int *n);

/* The step rows of one step (no transaction of their own; trace_store_write.c). */
int lks_store_step_rows(lks_store *s, int64_t run_id, const lks_step_row *steps, int nsteps);

/* A verdict's parameters when none were stored (trace_store.h, lks_check_params). */
static inline lks_check_params lks_check_params_none(void)
{
	return (lks_check_params){ .rtol = NAN, .atol = NAN, .floor_db = NAN, .exp_step = -1,
	                           .exp_rank = -1 };
}

static inline double lks_column_real(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static inline const char *lks_column_text(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
}

/* An index stored as NULL for none (lks_val_index) read back: -1. */
static inline int lks_column_index(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int(st, i);
}

/* The connection, owned by the store: for the store's own files, and for tests that tamper
   with a database by hand. No other room reaches the database but through trace_store.h. */
sqlite3 *lks_store_db(lks_store *s);

#endif
