/*
 * trace_store_sql.c: the statements of the trace store and the values they take
 * (trace_store_impl.h). Every statement's SQL is in one table, indexed by enum lks_q;
 * statements are prepared on first use and kept for the life of the store. Every insert
 * binds its values through lks_store_bind, and every query's rows come through
 * lks_store_rows, so that the rules of NULL (a NaN, an id of 0, an index of -1, no string)
 * are kept in one place.
 */
#include <stdio.h>
#include <string.h>

#include "harness/store/trace_store_impl.h"
#include "kernels/err.h"

int lks_sql_check(sqlite3 *db, int rc, const char *file, int line)
{
	const char *path;

	if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE)
		return rc;
	path = db ? sqlite3_db_filename(db, "main") : NULL;
	if (strrchr(file, '/'))
		file = strrchr(file, '/') + 1;
	return lks_err("'%s': sqlite: %s (%s:%d)", path && *path ? path : "?",
	               db ? sqlite3_errmsg(db) : sqlite3_errstr(rc), file, line);
}

#define LKS_RUN_COLS "run_id, suite_id, case_name, case_path, case_text, run_name, recipe, " \
	"options, backend, world_size, seed, steps, combo, fingerprint, status, started, finished"
#define LKS_STEP_COLS "step, rank, loss, grad_norm, lr, step_time, nonfinite, mem_peak"
#define LKS_CHECK_COLS "suite_id, case_name, check_name, kind, run_a, run_b, verdict, step, " \
	"rank, tensor, field, value_a, value_b, abs_err, rel_err, ulp, message, name_a, name_b, " \
	"metric, tensors, rtol, atol, floor_db, expect, expect_step, expect_rank, expect_tensor"
#define LKS_NIGHTLY_COLS "suite_id, case_name, run_name, run_id, prev_run_id, prev_suite_id, " \
	"verdict, fp_equal, fp_keys, step, rank, tensor, field, message"
#define LKS_PROBE_COLS "session_id, combo, cases, check_name, outcome, exit_code, signal, " \
	"seconds, suite_id, output, started"

static const char *const lks_store_sql[LKS_Q_COUNT] = {
	[LKS_Q_BEGIN] = "BEGIN IMMEDIATE",
	[LKS_Q_COMMIT] = "COMMIT",
	[LKS_Q_ROLLBACK] = "ROLLBACK",
	[LKS_Q_FK_OFF] = "PRAGMA foreign_keys = OFF",
	[LKS_Q_FK_ON] = "PRAGMA foreign_keys = ON",
	[LKS_Q_SUITE] = "INSERT INTO suites (command) VALUES (?1)",
	[LKS_Q_END_SUITE] = "UPDATE suites SET finished = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), "
	                    "stopped = ?2 WHERE suite_id = ?1",
	[LKS_Q_RUN] = "INSERT INTO runs (suite_id, case_name, case_path, case_text, run_name, "
	              "recipe, options, backend, world_size, seed, steps, combo, fingerprint) "
	              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
	[LKS_Q_TENSOR] = "INSERT INTO tensors (run_id, seq, name, phase) VALUES (?1, ?2, ?3, ?4)",
	[LKS_Q_STEP] = "INSERT INTO steps (run_id, " LKS_STEP_COLS ") "
	               "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
	[LKS_Q_STAT] = "INSERT OR ROLLBACK INTO stats (run_id, step, rank, seq, l2, amax, scale, "
	               "nonfinite, underflow, saturated, hash) "
	               "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
	[LKS_Q_EVENT] = "INSERT INTO events (run_id, step, rank, tensor, kind, message) "
	                "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
	[LKS_Q_END_RUN] = "UPDATE runs SET status = ?2, "
	                  "finished = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') "
	                  "WHERE run_id = ?1 AND status = 'incomplete'",
	[LKS_Q_STATUS] = "SELECT status FROM runs WHERE run_id = ?1",
	[LKS_Q_GET_RUN] = "SELECT " LKS_RUN_COLS " FROM runs WHERE run_id = ?1",
	[LKS_Q_GET_RUNS] = "SELECT " LKS_RUN_COLS " FROM runs ORDER BY run_id",
	[LKS_Q_COUNT_TENSORS] = "SELECT count(*) FROM tensors WHERE run_id = ?1",
	/* an imported run's step rows are its records (import_blocks) */
	[LKS_Q_COUNT_STEPS] = "SELECT (SELECT count(*) FROM steps WHERE run_id = ?1) + "
	                      "(SELECT coalesce(sum(records), 0) FROM import_blocks "
	                      "WHERE run_id = ?1)",
	[LKS_Q_COUNT_STATS] = "SELECT count(*) FROM stats WHERE run_id = ?1",
	[LKS_Q_COUNT_EVENTS] = "SELECT count(*) FROM events WHERE run_id = ?1",
	[LKS_Q_GET_TENSORS] = "SELECT seq, name, phase FROM tensors WHERE run_id = ?1 ORDER BY seq",
	[LKS_Q_GET_STEP] = "SELECT " LKS_STEP_COLS " FROM steps WHERE run_id = ?1 AND step = ?2 "
	                   "ORDER BY rank",
	[LKS_Q_GET_STEPS] = "SELECT " LKS_STEP_COLS " FROM steps WHERE run_id = ?1 "
	                    "ORDER BY step, rank",
	[LKS_Q_GET_STATS] = "SELECT step, rank, seq, l2, amax, scale, nonfinite, underflow, "
	                    "saturated, hash FROM stats "
	                    "WHERE run_id = ?1 AND step = ?2 AND rank = ?3 ORDER BY seq",
	[LKS_Q_GET_EVENTS] = "SELECT event_id, step, rank, tensor, kind, message, time "
	                     "FROM events WHERE run_id = ?1 ORDER BY event_id",
	[LKS_Q_HEALTH] = "INSERT INTO health (run_id, phase, device, key, value) "
	                 "VALUES (?1, ?2, ?3, ?4, ?5)",
	[LKS_Q_GET_HEALTH] = "SELECT phase, device, key, value FROM health WHERE run_id = ?1 "
	                     "ORDER BY rowid",
	[LKS_Q_GEMM_PLAN] = "INSERT INTO gemm_algos (run_id, seq, role, m, n, k, dtype_a, dtype_b, "
	                    "dtype_c, scaling_a, scaling_b, fast_accum, algo, tile, stages, "
	                    "splitk, reduction, fallback, gemms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
	                    "?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
	[LKS_Q_GET_GEMM_PLANS] = "SELECT role, m, n, k, dtype_a, dtype_b, dtype_c, scaling_a, "
	                         "scaling_b, fast_accum, algo, tile, stages, splitk, reduction, "
	                         "fallback, gemms FROM gemm_algos WHERE run_id = ?1 ORDER BY seq",
	[LKS_Q_CHECK] = "INSERT INTO checks (" LKS_CHECK_COLS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
	                "?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, "
	                "?22, ?23, ?24, ?25, ?26, ?27, ?28)",
	[LKS_Q_GET_CHECKS] = "SELECT check_id, " LKS_CHECK_COLS " FROM checks WHERE suite_id = ?1 "
	                     "ORDER BY check_id",
	[LKS_Q_GET_ALL_CHECKS] = "SELECT check_id, " LKS_CHECK_COLS " FROM checks "
	                         "ORDER BY check_id",
	[LKS_Q_SESSION] = "INSERT INTO probe_sessions (kind, command, combos) VALUES (?1, ?2, ?3)",
	[LKS_Q_END_SESSION] = "UPDATE probe_sessions SET result = ?2, "
	                      "finished = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') "
	                      "WHERE session_id = ?1",
	[LKS_Q_PROBE] = "INSERT INTO probes (" LKS_PROBE_COLS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
	                "?7, ?8, ?9, ?10, ?11)",
	[LKS_Q_GET_PROBES] = "SELECT probe_id, " LKS_PROBE_COLS " FROM probes WHERE session_id = ?1 "
	                     "ORDER BY probe_id",
	[LKS_Q_GET_ALL_PROBES] = "SELECT probe_id, " LKS_PROBE_COLS " FROM probes ORDER BY probe_id",
	[LKS_Q_LAST_SUITE] = "SELECT coalesce(max(suite_id), 0) FROM suites",
	[LKS_Q_COMBO_SUITE] = "SELECT coalesce(max(suite_id), 0) FROM runs "
	                      "WHERE combo = ?1 AND suite_id > ?2",
	[LKS_Q_GET_SUITE] = "SELECT suite_id, command, started, stopped FROM suites "
	                    "WHERE suite_id = ?1",
	[LKS_Q_SUITES_BEFORE] = "SELECT count(*) FROM suites WHERE suite_id < ?1",
	/* per run of case ?1 in the ?3 latest suites up to ?2 that ran it: its steps, the mean
	   loss over the ranks of its last step, its mean step time, its backend and declared
	   steps, the steps of its tensor records (report_query.h) */
	[LKS_Q_GET_TREND] = "SELECT r.run_id, r.suite_id, r.run_name, r.status,"
	                    " (SELECT max(step) + 1 FROM steps WHERE run_id = r.run_id),"
	                    /* the last step's loss, the ranks' mean: NULL (NaN) where a rank's
	                       is NaN (NULL), which avg would pass over */
	                    " (SELECT CASE WHEN count(s.loss) = count(*) THEN avg(s.loss) END"
	                    "   FROM steps s WHERE s.run_id = r.run_id"
	                    "   AND s.step = (SELECT max(step) FROM steps WHERE run_id = r.run_id)),"
	                    " (SELECT avg(step_time) FROM steps WHERE run_id = r.run_id),"
	                    " r.backend, r.steps,"
	                    " (SELECT max(step) + 1 FROM tensor_blocks WHERE run_id = r.run_id)"
	                    " FROM runs r WHERE r.case_name = ?1 AND r.suite_id IN"
	                    " (SELECT DISTINCT suite_id FROM runs WHERE case_name = ?1"
	                    "  AND suite_id <= ?2 ORDER BY suite_id DESC LIMIT ?3)"
	                    " ORDER BY r.run_name, r.suite_id, r.run_id",
	[LKS_Q_GET_METRICS] = "SELECT step, rank, metrics FROM steps "
	                      "WHERE run_id = ?1 AND metrics IS NOT NULL ORDER BY step, rank",
	[LKS_Q_BLOCK] = "INSERT INTO import_blocks (run_id, seq, first_step, last_step, records, "
	                "data) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
	/* the blocks below seq ?4 that may hold steps ?2 to ?3 */
	[LKS_Q_GET_BLOCKS_AT] = "SELECT seq, data FROM import_blocks "
	                        "WHERE run_id = ?1 AND last_step >= ?2 AND first_step <= ?3 "
	                        "AND seq < ?4 ORDER BY seq",
	[LKS_Q_BLOCKS_DROP] = "DELETE FROM import_blocks WHERE run_id = ?1 AND seq >= ?2",
	[LKS_Q_COUNT_BLOCKS] = "SELECT count(*) FROM import_blocks WHERE run_id = ?1",
	[LKS_Q_BLOCK_UPDATE] = "UPDATE import_blocks SET first_step = ?3, last_step = ?4, "
	                       "records = ?5, data = ?6 WHERE run_id = ?1 AND seq = ?2",
	[LKS_Q_BLOCK_DELETE] = "DELETE FROM import_blocks WHERE run_id = ?1 AND seq = ?2",
	[LKS_Q_IMPORT_END] = "UPDATE runs SET status = 'complete', steps = ?2, world_size = ?3, "
	                     "finished = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') "
	                     "WHERE run_id = ?1 AND status = 'incomplete'",
	[LKS_Q_IMPORT_RESTART] = "DELETE FROM steps WHERE run_id = ?1 AND rank = ?2 AND step >= ?3",
	[LKS_Q_NIGHTLY] = "INSERT INTO nightly (" LKS_NIGHTLY_COLS ") VALUES (?1, ?2, ?3, ?4, ?5, "
	                  "?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
	[LKS_Q_GET_NIGHTLY] = "SELECT " LKS_NIGHTLY_COLS " FROM nightly WHERE suite_id = ?1 "
	                      "ORDER BY rowid",
	[LKS_Q_TBLOCK] = "INSERT INTO tensor_blocks (run_id, step, rank, seq, records, data) "
	                 "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
	[LKS_Q_GET_TBLOCKS] = "SELECT rank, seq, data FROM tensor_blocks WHERE run_id = ?1 AND "
	                      "step = ?2 ORDER BY rank, seq",
	[LKS_Q_TSTEPS] = "SELECT min(step), max(step), count(*) FROM tensor_blocks "
	                 "WHERE run_id = ?1",
	/* the latest incomplete traced run of (case, run, world size, options: its launch)
	   that rank ?4 has not joined */
	[LKS_Q_TRACE_FIND] = "SELECT run_id FROM runs r WHERE case_name = ?1 AND run_name = ?2 "
	                     "AND world_size = ?3 AND backend = ?5 AND status = 'incomplete' "
	                     "AND r.options IS ?6 "
	                     "AND NOT EXISTS (SELECT 1 FROM events e WHERE e.run_id = r.run_id "
	                     "AND e.kind = 'trace_rank' AND e.rank = ?4) "
	                     "ORDER BY run_id DESC LIMIT 1",
	[LKS_Q_TRACE_TENSOR] = "SELECT seq FROM tensors WHERE run_id = ?1 AND name = ?2 AND "
	                       "phase = ?3",
	[LKS_Q_TRACE_TENSOR_ADD] = "INSERT INTO tensors (run_id, seq, name, phase) SELECT ?1, "
	                           "coalesce(max(seq) + 1, 0), ?2, ?3 FROM tensors WHERE "
	                           "run_id = ?1 RETURNING seq",
	[LKS_Q_TRACE_STEPS] = "UPDATE runs SET steps = max(steps, ?2) WHERE run_id = ?1",
	/* complete once every rank has left */
	[LKS_Q_TRACE_DONE] = "UPDATE runs SET status = 'complete', "
	                     "finished = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE run_id = ?1 "
	                     "AND status = 'incomplete' AND world_size <= (SELECT count(DISTINCT "
	                     "rank) FROM events WHERE run_id = ?1 AND kind = 'trace_rank_done')",
	[LKS_Q_STATE] = "INSERT OR REPLACE INTO states (run_id, step, rank, data) "
	                "VALUES (?1, ?2, ?3, ?4)",
	[LKS_Q_GET_STATE] = "SELECT data FROM states WHERE run_id = ?1 AND step = ?2 AND rank = ?3",
	[LKS_Q_SCREEN] = "INSERT INTO screens (started, host, mode, result, document) "
	                 "VALUES (?1, ?2, ?3, ?4, ?5)",
	/* ?1 > 0: that one; else the latest started before ?2 (NULL: of all) */
	[LKS_Q_GET_SCREEN] = "SELECT screen_id, started, host, mode, result, document FROM screens "
	                     "WHERE CASE WHEN ?1 > 0 THEN screen_id = ?1 "
	                     "ELSE ?2 IS NULL OR started < ?2 END "
	                     "ORDER BY started DESC, screen_id DESC LIMIT 1",
};

static const char *const lks_phase_names[] = { "forward", "backward", "update", "recompute" };

const char *lks_phase_name(lks_phase p)
{
	int n = (int)(sizeof(lks_phase_names) / sizeof(lks_phase_names[0]));

	return (int)p >= 0 && (int)p < n ? lks_phase_names[p] : NULL;
}

const char *lks_store_path(lks_store *s)
{
	const char *p = sqlite3_db_filename(s->db, "main");

	return p && *p ? p : ":memory:";
}

int lks_store_stmt(lks_store *s, enum lks_q q, sqlite3_stmt **out)
{
	if (!s->stmt[q] && LKS_SQL(s->db, sqlite3_prepare_v3(s->db, lks_store_sql[q], -1,
	                                                     SQLITE_PREPARE_PERSISTENT,
	                                                     &s->stmt[q], NULL)) < 0)
		return -1;
	*out = s->stmt[q];
	return 0;
}

int lks_store_done(lks_store *s, sqlite3_stmt *st)
{
	int rc = LKS_SQL(s->db, sqlite3_step(st));

	sqlite3_reset(st);
	return rc < 0 ? -1 : 0;
}

int lks_store_exec(lks_store *s, enum lks_q q)
{
	sqlite3_stmt *st;

	return lks_store_stmt(s, q, &st) ? -1 : lks_store_done(s, st);
}

void lks_store_rollback(lks_store *s)
{
	sqlite3_stmt *st;

	/* some errors (SQLITE_FULL, SQLITE_IOERR, ...) have rolled back already */
	if (sqlite3_get_autocommit(s->db))
		return;
	if (!s->stmt[LKS_Q_ROLLBACK] && sqlite3_prepare_v3(s->db, lks_store_sql[LKS_Q_ROLLBACK], -1,
	                                                   SQLITE_PREPARE_PERSISTENT,
	                                                   &s->stmt[LKS_Q_ROLLBACK], NULL))
		return;
	st = s->stmt[LKS_Q_ROLLBACK];
	sqlite3_step(st);
	sqlite3_reset(st);
}

int lks_store_put(lks_store *s, enum lks_q q, const lks_val *v, int n, int64_t *rowid)
{
	sqlite3_stmt *st;
	int rc;

	if (lks_store_stmt(s, q, &st))
		return -1;
	lks_store_bind(st, 1, v, n);
	rc = lks_store_done(s, st);
	/* the strings are SQLITE_STATIC: drop them before the caller's memory goes */
	sqlite3_clear_bindings(st);
	if (!rc && rowid)
		*rowid = sqlite3_last_insert_rowid(s->db);
	return rc;
}

int lks_store_rows(lks_store *s, enum lks_q q, const lks_val *v, int n,
                   int (*row)(sqlite3_stmt *st, void *ctx), void *ctx)
{
	sqlite3_stmt *st;
	int rc = 0, r;

	if (lks_store_stmt(s, q, &st))
		return -1;
	lks_store_bind(st, 1, v, n);
	while (rc == 0 && (r = LKS_SQL(s->db, sqlite3_step(st))) == SQLITE_ROW)
		rc = row(st, ctx);
	if (rc == 0 && r < 0)
		rc = -1;
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc;
}
