/*
 * trace_store.c: the SQLite database of runs and their traces (trace_store.h, DESIGN.md
 * Trace).
 *
 * One connection per lks_store. The database is in WAL mode with synchronous=NORMAL: a
 * commit is one append to the -wal file without fsync, and a crash (kill -9, power loss
 * after the OS flushed) loses at most the last transactions, never consistency. Several
 * processes may write one file (MPI ranks, parallel CI jobs): writers take the lock up
 * front with BEGIN IMMEDIATE and wait for each other through the busy timeout.
 *
 * A file is recognised by PRAGMA application_id (LKS_STORE_APP_ID) and its schema version
 * by PRAGMA user_version. Both are read before anything is written, so a file that is not
 * ours, or ours in a later version, is refused untouched. Only a database with no tables
 * and both header fields zero (a missing or empty file) gets the schema; a file of an
 * earlier version gets the tables added since, and keeps everything it holds (an older
 * lockstep then refuses it, as it refuses any later version).
 *
 * Statements are prepared on first use and kept for the life of the store. Stat rows are
 * the bulk of the data (steps x ranks x tensors): their table is WITHOUT ROWID keyed
 * (run_id, step, rank, seq), has no secondary index and no foreign key (the step row
 * written in the same transaction stands for it), so that an insert is one append to the
 * rightmost leaf of one b-tree when rows arrive in key order. They go in LKS_STAT_BATCH
 * rows per INSERT: per-statement work (cursor open, transaction checks) is then shared by
 * many rows, which measured about 1.7x the rate of one row per statement.
 *
 * Checkpoints (copying the WAL into the database file, with two fsyncs) run on a thread of
 * the store with its own connection, woken every LKS_CKPT_FRAMES frames, so that a step
 * never waits for the disk; the closing connection does the last one. A store is used by
 * one thread at a time (the connection is opened without SQLite's mutex).
 */
#include "harness/store/trace_store.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kernels/err.h"

/* 'LKS1' in the database header: tells our files from other SQLite databases. */
#define LKS_STORE_APP_ID 0x4c4b5331

/* Writers wait this long for each other's transactions; a step transaction takes
   milliseconds, so a minute only runs out when some process holds the lock wrongly. */
#define LKS_STORE_BUSY_MS 60000

/* Stat rows per INSERT statement: 1 + 10 x 64 parameters. Gains flatten from 32 rows on;
   a few hundred get slower again (bigger statement journal per statement). */
#define LKS_STAT_BATCH 64

/* Wake the checkpointer when this many WAL frames (pages) were added since it last was:
   SQLite's own default for wal_autocheckpoint, so the WAL stays near 4 MiB. */
#define LKS_CKPT_FRAMES 1000

/* Checks the result of an SQLite call: a negative value (-1, with the message recorded
   naming the database, the error and the place in this file) on error, else the SQLite
   code itself, so that SQLITE_ROW and SQLITE_DONE stay apart. */
#define LKS_SQL(db, x) lks_sql_check((db), (x), __FILE__, __LINE__)

static int lks_sql_check(sqlite3 *db, int rc, const char *file, int line)
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

/* The schema, one part per version: part v is what version v added to version v - 1. A new
   file gets every part; a file of an earlier version gets the parts after its own, in one
   transaction, so that upgrading adds tables and never changes or drops what is stored.
   A part never changes once released. */
static const char lks_schema_v1[] =
	"CREATE TABLE suites (\n"
	"	suite_id INTEGER PRIMARY KEY,\n"
	"	command TEXT NOT NULL,\n"
	"	started TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))\n"
	");\n"
	"CREATE TABLE runs (\n"
	"	run_id INTEGER PRIMARY KEY,\n"
	"	suite_id INTEGER REFERENCES suites (suite_id),\n"
	"	case_name TEXT NOT NULL,\n"
	"	case_path TEXT,\n"
	"	case_text TEXT,\n"
	"	run_name TEXT NOT NULL,\n"
	"	recipe TEXT NOT NULL,\n"
	"	options TEXT,\n"
	"	backend TEXT NOT NULL,\n"
	"	world_size INTEGER NOT NULL,\n"
	"	seed INTEGER NOT NULL,          -- uint64 cast to int64\n"
	"	steps INTEGER NOT NULL,\n"
	"	combo TEXT,\n"
	"	fingerprint TEXT,               -- JSON object\n"
	"	status TEXT NOT NULL DEFAULT 'incomplete'\n"
	"		CHECK (status IN ('incomplete', 'complete', 'failed')),\n"
	"	started TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),\n"
	"	finished TEXT\n"
	");\n"
	"CREATE INDEX runs_by_suite ON runs (suite_id);\n"
	"CREATE TABLE tensors (\n"
	"	run_id INTEGER NOT NULL REFERENCES runs (run_id),\n"
	"	seq INTEGER NOT NULL,           -- position in execution order\n"
	"	name TEXT NOT NULL,\n"
	"	phase TEXT NOT NULL CHECK (phase IN ('forward', 'backward', 'update', 'recompute')),\n"
	"	PRIMARY KEY (run_id, seq)\n"
	") WITHOUT ROWID;\n"
	"CREATE TABLE steps (\n"
	"	run_id INTEGER NOT NULL REFERENCES runs (run_id),\n"
	"	step INTEGER NOT NULL,\n"
	"	rank INTEGER NOT NULL,\n"
	"	loss REAL,                      -- NULL: NaN\n"
	"	grad_norm REAL,\n"
	"	lr REAL,\n"
	"	step_time REAL,                 -- seconds\n"
	"	nonfinite INTEGER NOT NULL,\n"
	"	PRIMARY KEY (run_id, step, rank)\n"
	") WITHOUT ROWID;\n"
	"CREATE TABLE stats (\n"
	"	run_id INTEGER NOT NULL,        -- no foreign key: the steps row stands for it\n"
	"	step INTEGER NOT NULL,\n"
	"	rank INTEGER NOT NULL,\n"
	"	seq INTEGER NOT NULL,           -- tensors.seq\n"
	"	l2 REAL,                        -- NULL: NaN\n"
	"	amax REAL,\n"
	"	scale REAL,                     -- NULL: not quantized (NaN)\n"
	"	nonfinite INTEGER NOT NULL,\n"
	"	underflow INTEGER NOT NULL,\n"
	"	saturated INTEGER NOT NULL,\n"
	"	hash INTEGER NOT NULL,          -- XXH3-64, uint64 cast to int64\n"
	"	PRIMARY KEY (run_id, step, rank, seq)\n"
	") WITHOUT ROWID;\n"
	"CREATE TABLE events (\n"
	"	event_id INTEGER PRIMARY KEY,\n"
	"	run_id INTEGER NOT NULL REFERENCES runs (run_id),\n"
	"	step INTEGER,\n"
	"	rank INTEGER,\n"
	"	tensor TEXT,\n"
	"	kind TEXT NOT NULL,\n"
	"	message TEXT,\n"
	"	time TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))\n"
	");\n"
	"CREATE INDEX events_by_run ON events (run_id);\n";

/* 2: check verdicts */
static const char lks_schema_v2[] =
	"CREATE TABLE checks (\n"
	"	check_id INTEGER PRIMARY KEY,\n"
	"	suite_id INTEGER REFERENCES suites (suite_id),\n"
	"	case_name TEXT NOT NULL,\n"
	"	check_name TEXT NOT NULL,\n"
	"	kind TEXT NOT NULL,\n"
	"	run_a INTEGER REFERENCES runs (run_id),  -- NULL: not run (skipped)\n"
	"	run_b INTEGER REFERENCES runs (run_id),  -- NULL: a one-run kind, or not run\n"
	"	verdict TEXT NOT NULL CHECK (verdict IN ('pass', 'fail', 'expected_fail',\n"
	"		'unexpected_pass', 'unsupported', 'skipped')),\n"
	"	step INTEGER,                   -- the divergence; NULL: none or not per step\n"
	"	rank INTEGER,\n"
	"	tensor TEXT,\n"
	"	field TEXT,                     -- l2, amax, scale, nonfinite, ..., hash, loss\n"
	"	value_a,                        -- REAL for float fields, INTEGER for counts and\n"
	"	value_b,                        -- hashes (uint64 cast to int64); NULL: none or NaN\n"
	"	abs_err REAL,\n"
	"	rel_err REAL,                   -- |a - b| / |b|\n"
	"	ulp INTEGER,                    -- float fields only; NULL: none or a NaN side\n"
	"	message TEXT,\n"
	"	time TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))\n"
	");\n"
	"CREATE INDEX checks_by_suite ON checks (suite_id);\n";

/* 3: probes of 'lockstep matrix|bisect|reduce', each a child 'lockstep check' under a combo */
static const char lks_schema_v3[] =
	"CREATE TABLE probe_sessions (\n"
	"	session_id INTEGER PRIMARY KEY,\n"
	"	kind TEXT NOT NULL CHECK (kind IN ('matrix', 'bisect', 'reduce')),\n"
	"	command TEXT NOT NULL,          -- the command line\n"
	"	combos TEXT,                    -- the combos file\n"
	"	result TEXT,                    -- in words; NULL: none (yet)\n"
	"	started TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),\n"
	"	finished TEXT\n"
	");\n"
	"CREATE TABLE probes (\n"
	"	probe_id INTEGER PRIMARY KEY,\n"
	"	session_id INTEGER NOT NULL REFERENCES probe_sessions (session_id),\n"
	"	combo TEXT NOT NULL,            -- a combo's name, or what reduce applied\n"
	"	cases TEXT NOT NULL,            -- the case arguments, blank-separated\n"
	"	check_name TEXT,                -- NULL: every check of the cases\n"
	"	outcome TEXT NOT NULL CHECK (outcome IN ('good', 'bad', 'skip', 'crash', 'timeout')),\n"
	"	exit_code INTEGER,              -- NULL: ended by a signal\n"
	"	signal INTEGER,                 -- NULL: it exited\n"
	"	seconds REAL NOT NULL,\n"
	"	suite_id INTEGER REFERENCES suites (suite_id),  -- what it stored; NULL: nothing\n"
	"	output TEXT,                    -- the end of what it printed\n"
	"	started TEXT NOT NULL\n"
	");\n"
	"CREATE INDEX probes_by_session ON probes (session_id);\n";

static const char *const lks_store_schema[LKS_STORE_SCHEMA_VERSION + 1] = {
	[1] = lks_schema_v1, [2] = lks_schema_v2, [3] = lks_schema_v3,
};

enum lks_q {
	LKS_Q_BEGIN,
	LKS_Q_COMMIT,
	LKS_Q_ROLLBACK,
	LKS_Q_SUITE,
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
	LKS_Q_COUNT
};

#define LKS_RUN_COLS "run_id, suite_id, case_name, case_path, case_text, run_name, recipe, " \
	"options, backend, world_size, seed, steps, combo, fingerprint, status, started, finished"
#define LKS_STEP_COLS "step, rank, loss, grad_norm, lr, step_time, nonfinite"
#define LKS_CHECK_COLS "suite_id, case_name, check_name, kind, run_a, run_b, verdict, step, " \
	"rank, tensor, field, value_a, value_b, abs_err, rel_err, ulp, message"
#define LKS_PROBE_COLS "session_id, combo, cases, check_name, outcome, exit_code, signal, " \
	"seconds, suite_id, output, started"

static const char *const lks_sql[LKS_Q_COUNT] = {
	[LKS_Q_BEGIN] = "BEGIN IMMEDIATE",
	[LKS_Q_COMMIT] = "COMMIT",
	[LKS_Q_ROLLBACK] = "ROLLBACK",
	[LKS_Q_SUITE] = "INSERT INTO suites (command) VALUES (?1)",
	[LKS_Q_RUN] = "INSERT INTO runs (suite_id, case_name, case_path, case_text, run_name, "
	              "recipe, options, backend, world_size, seed, steps, combo, fingerprint) "
	              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
	[LKS_Q_TENSOR] = "INSERT INTO tensors (run_id, seq, name, phase) VALUES (?1, ?2, ?3, ?4)",
	[LKS_Q_STEP] = "INSERT INTO steps (run_id, " LKS_STEP_COLS ") "
	               "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
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
	[LKS_Q_COUNT_STEPS] = "SELECT count(*) FROM steps WHERE run_id = ?1",
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
	[LKS_Q_CHECK] = "INSERT INTO checks (" LKS_CHECK_COLS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
	                "?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
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
};

static const char *const lks_phase_names[] = { "forward", "backward", "update", "recompute" };
#define LKS_NPHASES ((int)(sizeof(lks_phase_names) / sizeof(lks_phase_names[0])))

const char *lks_phase_name(lks_phase p)
{
	return (int)p >= 0 && (int)p < LKS_NPHASES ? lks_phase_names[p] : NULL;
}

static const char *lks_store_path(lks_store *s)
{
	const char *p = sqlite3_db_filename(s->db, "main");

	return p && *p ? p : ":memory:";
}

/* The cached statement for q, reset with its bindings kept (a hot loop rebinds only what
   changes). */
static int lks_store_stmt(lks_store *s, enum lks_q q, sqlite3_stmt **out)
{
	if (!s->stmt[q] && LKS_SQL(s->db, sqlite3_prepare_v3(s->db, lks_sql[q], -1,
	                                                     SQLITE_PREPARE_PERSISTENT,
	                                                     &s->stmt[q], NULL)) < 0)
		return -1;
	*out = s->stmt[q];
	return 0;
}

/* Runs a statement that returns no rows (or whose rows do not matter) and resets it. */
static int lks_store_done(lks_store *s, sqlite3_stmt *st)
{
	int rc = LKS_SQL(s->db, sqlite3_step(st));

	sqlite3_reset(st);
	return rc < 0 ? -1 : 0;
}

static int lks_store_exec(lks_store *s, enum lks_q q)
{
	sqlite3_stmt *st;

	return lks_store_stmt(s, q, &st) ? -1 : lks_store_done(s, st);
}

/* Undoes an open transaction after an error, keeping the error already recorded: a
   failed step must leave the message that says why, not one about the rollback. */
static void lks_store_rollback(lks_store *s)
{
	sqlite3_stmt *st;

	/* some errors (SQLITE_FULL, SQLITE_IOERR, ...) have rolled back already */
	if (sqlite3_get_autocommit(s->db))
		return;
	if (!s->stmt[LKS_Q_ROLLBACK] && sqlite3_prepare_v3(s->db, lks_sql[LKS_Q_ROLLBACK], -1,
	                                                   SQLITE_PREPARE_PERSISTENT,
	                                                   &s->stmt[LKS_Q_ROLLBACK], NULL))
		return;
	st = s->stmt[LKS_Q_ROLLBACK];
	sqlite3_step(st);
	sqlite3_reset(st);
}

/* SQLite has no NaN: binding one stores NULL. Saying so here keeps the rule visible. */
static inline void lks_bind_real(sqlite3_stmt *st, int i, double v)
{
	if (isnan(v))
		sqlite3_bind_null(st, i);
	else
		sqlite3_bind_double(st, i, v);
}

static inline double lks_column_real(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static inline void lks_bind_text(sqlite3_stmt *st, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

/* ---- opening ---- */

/* The header fields and the number of schema objects, in one statement and so in one
   read transaction: a process creating the schema at that moment is seen before or
   after, never half way. Returns 0, or the SQLite error code (SQLITE_NOTADB for a file
   that is not a database at all). */
static int lks_store_header(sqlite3 *db, int64_t *app, int64_t *version, int64_t *objects)
{
	sqlite3_stmt *st = NULL;
	int rc;

	rc = sqlite3_prepare_v2(db, "SELECT (SELECT application_id FROM pragma_application_id), "
	                            "(SELECT user_version FROM pragma_user_version), "
	                            "(SELECT count(*) FROM sqlite_master)", -1, &st, NULL);
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			*app = sqlite3_column_int64(st, 0);
			*version = sqlite3_column_int64(st, 1);
			*objects = sqlite3_column_int64(st, 2);
			rc = SQLITE_OK;
		} else if (rc == SQLITE_DONE) {
			rc = SQLITE_ERROR;
		}
	}
	sqlite3_finalize(st);
	return rc;
}

/* NEW: a missing or empty file; OLD: ours, of an earlier schema version; OURS: current. */
enum lks_store_kind { LKS_FILE_NEW, LKS_FILE_OLD, LKS_FILE_OURS };

/* What the file holds, read without writing; refuses what is not ours or of a later
   version. *version: the file's schema version (0 for a new file). */
static int lks_store_inspect(sqlite3 *db, const char *path, enum lks_store_kind *kind,
                             int64_t *version)
{
	int64_t app = 0, tables = 0;
	int rc;

	*version = 0;
	rc = lks_store_header(db, &app, version, &tables);
	if (rc == SQLITE_NOTADB)
		return lks_err("'%s' is not a lockstep database (not an SQLite file)", path),
		       LKS_STORE_BAD_FILE;
	if (rc)
		return lks_err("cannot read '%s': %s", path, sqlite3_errstr(rc));
	if (app == 0 && *version == 0 && tables == 0) {
		*kind = LKS_FILE_NEW;
		return 0;
	}
	if (app != LKS_STORE_APP_ID)
		return lks_err("'%s' is not a lockstep database (an SQLite database of another "
		               "program: application_id %lld, %lld schema entries)", path, (long long)app,
		               (long long)tables), LKS_STORE_BAD_FILE;
	if (*version < 1 || *version > LKS_STORE_SCHEMA_VERSION)
		return lks_err("'%s' has trace schema version %lld; this lockstep reads versions 1 to "
		               "%d (a later lockstep wrote it?)", path, (long long)*version,
		               LKS_STORE_SCHEMA_VERSION), LKS_STORE_BAD_FILE;
	*kind = *version < LKS_STORE_SCHEMA_VERSION ? LKS_FILE_OLD : LKS_FILE_OURS;
	return 0;
}

/* The schema parts after version 'from', and the header fields saying so. */
static int lks_store_upgrade(sqlite3 *db, const char *path, int64_t from)
{
	char pragmas[128], *msg = NULL;
	int rc = 0;

	snprintf(pragmas, sizeof(pragmas), "PRAGMA application_id = %d; PRAGMA user_version = %d;",
	         LKS_STORE_APP_ID, LKS_STORE_SCHEMA_VERSION);
	for (int64_t v = from + 1; !rc && v <= LKS_STORE_SCHEMA_VERSION; v++)
		if (sqlite3_exec(db, lks_store_schema[v], NULL, NULL, &msg) != SQLITE_OK)
			rc = lks_err("cannot add schema version %lld to '%s': %s", (long long)v, path,
			             msg ? msg : "?");
	if (!rc && sqlite3_exec(db, pragmas, NULL, NULL, &msg) != SQLITE_OK)
		rc = lks_err("cannot set the schema version of '%s': %s", path, msg ? msg : "?");
	sqlite3_free(msg);
	return rc;
}

/* Creates the schema of a new file, or adds what a file of an earlier version lacks,
   unless another process did it first: the file is inspected again under the write lock. */
static int lks_store_create(sqlite3 *db, const char *path)
{
	enum lks_store_kind kind;
	int64_t version;
	int rc = -1;

	if (LKS_SQL(db, sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL)) < 0)
		return -1;
	if ((rc = lks_store_inspect(db, path, &kind, &version)) != 0)
		goto out;
	rc = -1;
	if (kind != LKS_FILE_OURS && lks_store_upgrade(db, path, version))
		goto out;
	if (LKS_SQL(db, sqlite3_exec(db, "COMMIT", NULL, NULL, NULL)) < 0)
		goto out;
	rc = 0;
out:
	if (rc && !sqlite3_get_autocommit(db))
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/* WAL: readers (report, a polling test) never block the writer, and a commit is an
   append. The mode is persistent in the file, so only the first opening after creation
   switches; the switch needs an exclusive lock, which SQLite does not wait for through
   the busy handler, hence the retries while another process reads the new file. */
static int lks_store_wal(sqlite3 *db, const char *path)
{
	sqlite3_stmt *st = NULL;
	const char *mode;
	int rc = -1, r, waited = 0;

	if (LKS_SQL(db, sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL)) < 0
	    || LKS_SQL(db, sqlite3_step(st)) != SQLITE_ROW)
		goto out;
	if (strcmp((const char *)sqlite3_column_text(st, 0), "wal") == 0) {
		rc = 0;
		goto out;
	}
	sqlite3_finalize(st);
	if (LKS_SQL(db, sqlite3_prepare_v2(db, "PRAGMA journal_mode = WAL", -1, &st, NULL)) < 0)
		goto out;
	while ((r = sqlite3_step(st)) == SQLITE_BUSY && waited < LKS_STORE_BUSY_MS) {
		sqlite3_reset(st);
		waited += sqlite3_sleep(5);
	}
	if (LKS_SQL(db, r) != SQLITE_ROW)
		goto out;
	mode = (const char *)sqlite3_column_text(st, 0);
	if (strcmp(mode, "wal") != 0) {
		lks_err("'%s': cannot use WAL journal mode (got '%s'); is it on a network file system?",
		        path, mode);
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(st);
	return rc;
}

/* Per-connection settings, applied once the file is known to be ours. */
static int lks_store_configure(sqlite3 *db, const char *path)
{
	if (lks_store_wal(db, path))
		return -1;
	/* synchronous=NORMAL in WAL: commits are durable against a process crash, and
	   consistent (not durable) against power loss; fsync only at checkpoints.
	   cache_size: 64 MiB, so that ingest keeps the right edge of the stats b-tree and
	   the WAL index pages in memory. */
	if (LKS_SQL(db, sqlite3_exec(db, "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;"
	                                 "PRAGMA cache_size = -65536; PRAGMA temp_store = MEMORY;",
	                             NULL, NULL, NULL)) < 0)
		return -1;
	return 0;
}

/* ---- the background checkpointer ---- */

static void *lks_store_ckpt_main(void *arg)
{
	lks_store *s = arg;

	pthread_mutex_lock(&s->ckpt_mu);
	for (;;) {
		while (!s->ckpt_pending && !s->ckpt_stop)
			pthread_cond_wait(&s->ckpt_cv, &s->ckpt_mu);
		if (s->ckpt_stop)
			break;
		s->ckpt_pending = 0;
		pthread_mutex_unlock(&s->ckpt_mu);
		/* PASSIVE: copies what no reader needs, never blocks the writer; a failure only
		   leaves the WAL longer, and the closing connection checkpoints anyway */
		sqlite3_wal_checkpoint_v2(s->ckpt_db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
		pthread_mutex_lock(&s->ckpt_mu);
	}
	pthread_mutex_unlock(&s->ckpt_mu);
	return NULL;
}

/* Called by SQLite after each commit of the writer with the WAL's length in frames. */
static int lks_store_wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	lks_store *s = arg;

	if (frames < s->ckpt_frames)  /* the WAL restarted from its beginning */
		s->ckpt_frames = 0;
	if (frames - s->ckpt_frames >= LKS_CKPT_FRAMES) {
		s->ckpt_frames = frames;
		pthread_mutex_lock(&s->ckpt_mu);
		s->ckpt_pending = 1;
		pthread_cond_signal(&s->ckpt_cv);
		pthread_mutex_unlock(&s->ckpt_mu);
	}
	return SQLITE_OK;
}

/* Starts the checkpointer; without it (no thread, no second connection) SQLite's own
   automatic checkpoint in the writer's commits does the work, only slower. */
static void lks_store_ckpt_start(lks_store *s, const char *path)
{
	if (sqlite3_open_v2(path, &s->ckpt_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL)
	        != SQLITE_OK
	    || sqlite3_exec(s->ckpt_db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL)
	        != SQLITE_OK)
		goto fallback;
	if (pthread_mutex_init(&s->ckpt_mu, NULL))
		goto fallback;
	if (pthread_cond_init(&s->ckpt_cv, NULL)) {
		pthread_mutex_destroy(&s->ckpt_mu);
		goto fallback;
	}
	if (pthread_create(&s->ckpt_thread, NULL, lks_store_ckpt_main, s)) {
		pthread_cond_destroy(&s->ckpt_cv);
		pthread_mutex_destroy(&s->ckpt_mu);
		goto fallback;
	}
	s->ckpt_running = 1;
	/* replaces the automatic checkpoint, which is itself a WAL hook */
	sqlite3_wal_hook(s->db, lks_store_wal_hook, s);
	return;
fallback:
	sqlite3_close_v2(s->ckpt_db);
	s->ckpt_db = NULL;
	sqlite3_wal_autocheckpoint(s->db, LKS_CKPT_FRAMES);
}

static void lks_store_ckpt_stop(lks_store *s)
{
	if (!s->ckpt_running)
		return;
	sqlite3_wal_hook(s->db, NULL, NULL);
	pthread_mutex_lock(&s->ckpt_mu);
	s->ckpt_stop = 1;
	pthread_cond_signal(&s->ckpt_cv);
	pthread_mutex_unlock(&s->ckpt_mu);
	pthread_join(s->ckpt_thread, NULL);
	pthread_cond_destroy(&s->ckpt_cv);
	pthread_mutex_destroy(&s->ckpt_mu);
	sqlite3_close_v2(s->ckpt_db);
	s->ckpt_db = NULL;
	s->ckpt_running = 0;
}

int lks_store_open(const char *path, lks_store **out)
{
	lks_store *s = NULL;
	sqlite3 *db = NULL;
	enum lks_store_kind kind;
	int64_t version;
	int rc = -1;

	*out = NULL;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
	                    | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		lks_err("cannot open '%s': %s", path, db ? sqlite3_errmsg(db) : "out of memory");
		goto out;
	}
	sqlite3_extended_result_codes(db, 0);
	sqlite3_busy_timeout(db, LKS_STORE_BUSY_MS);
	/* read first: nothing may be written to a file we will refuse */
	if ((rc = lks_store_inspect(db, path, &kind, &version)) != 0)
		goto out;
	if (kind != LKS_FILE_OURS && (rc = lks_store_create(db, path)) != 0)
		goto out;
	rc = -1;
	if (lks_store_configure(db, path))
		goto out;
	s = calloc(1, sizeof(*s));
	if (!s) {
		lks_err("cannot open '%s': out of memory", path);
		goto out;
	}
	s->db = db;
	db = NULL;
	lks_store_ckpt_start(s, path);
	*out = s;
	rc = 0;
out:
	sqlite3_close_v2(db);
	return rc;
}

/* ---- opening to read only ---- */

/* "file:PATH?mode=ro[&immutable=1]": the URI of a file, '?', '#', '%' and control
   characters percent-encoded (sqlite3_free). An absolute path gets an empty authority. */
static char *lks_store_uri(const char *path, int immutable)
{
	sqlite3_str *u = sqlite3_str_new(NULL);

	sqlite3_str_appendall(u, path[0] == '/' ? "file://" : "file:");
	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		if (*p == '?' || *p == '#' || *p == '%' || *p < 0x20 || *p == 0x7f)
			sqlite3_str_appendf(u, "%%%02X", *p);
		else
			sqlite3_str_appendchar(u, 1, (char)*p);
	sqlite3_str_appendall(u, immutable ? "?mode=ro&immutable=1" : "?mode=ro");
	return sqlite3_str_finish(u);
}

/* Opens path read-only and reads its header (lks_store_inspect). *db is set whatever
   happens; the SQLite code of a read that failed (SQLITE_READONLY where the -shm of a WAL
   database cannot be made) comes back in *sql_rc, with rc -1. */
/* A database of an earlier schema version read without being upgraded: the tables added
   since are made empty in the connection's TEMP schema, which lives in memory, so every
   read finds them (as the upgrade would make them: empty) and the file is not touched. */
static int lks_store_temp_tables(sqlite3 *db, const char *path, int64_t version)
{
	for (int64_t v = version + 1; v <= LKS_STORE_SCHEMA_VERSION; v++) {
		sqlite3_str *q = sqlite3_str_new(db);
		const char *p = lks_store_schema[v], *t;
		char *sql;
		int rc;

		while ((t = strstr(p, "CREATE TABLE "))) {
			sqlite3_str_append(q, p, (int)(t - p));
			sqlite3_str_appendall(q, "CREATE TEMP TABLE ");
			p = t + strlen("CREATE TABLE ");
		}
		sqlite3_str_appendall(q, p);
		if (!(sql = sqlite3_str_finish(q)))
			return lks_err("cannot read '%s': out of memory", path);
		rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
		sqlite3_free(sql);
		if (rc != SQLITE_OK)
			return lks_err("cannot read '%s' (schema version %lld): %s", path,
			               (long long)version, sqlite3_errmsg(db));
	}
	return 0;
}

static int lks_store_open_ro_db(const char *path, int immutable, sqlite3 **db, int *sql_rc)
{
	char *uri = lks_store_uri(path, immutable);
	enum lks_store_kind kind;
	int64_t version;
	int rc;

	*db = NULL;
	*sql_rc = SQLITE_NOMEM;
	if (!uri)
		return lks_err("cannot open '%s': out of memory", path);
	*sql_rc = sqlite3_open_v2(uri, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI
	                          | SQLITE_OPEN_NOMUTEX, NULL);
	sqlite3_free(uri);
	if (*sql_rc != SQLITE_OK)
		return lks_err("cannot open '%s': %s", path, *db ? sqlite3_errmsg(*db) : "out of memory");
	sqlite3_extended_result_codes(*db, 0);
	sqlite3_busy_timeout(*db, LKS_STORE_BUSY_MS);
	if ((rc = lks_store_inspect(*db, path, &kind, &version)) != 0) {
		*sql_rc = sqlite3_errcode(*db);
		return rc;
	}
	*sql_rc = SQLITE_OK;
	if (kind == LKS_FILE_NEW)
		return lks_err("'%s' is not a lockstep database (an SQLite database without tables)",
		               path), LKS_STORE_BAD_FILE;
	/* before the TEMP tables: changing temp_store drops every TEMP table there is */
	if (LKS_SQL(*db, sqlite3_exec(*db, "PRAGMA temp_store = MEMORY;", NULL, NULL, NULL)) < 0)
		return -1;
	return lks_store_temp_tables(*db, path, version);
}

/* The size of path's write-ahead log, 0 when there is none. */
static off_t lks_store_wal_size(const char *path)
{
	char *wal = sqlite3_mprintf("%s-wal", path);
	struct stat st;
	off_t n = wal && stat(wal, &st) == 0 ? st.st_size : 0;

	sqlite3_free(wal);
	return n;
}

int lks_store_open_readonly(const char *path, lks_store **out)
{
	lks_store *s = NULL;
	sqlite3 *db = NULL;
	struct stat st;
	int rc, sql_rc;

	*out = NULL;
	if (stat(path, &st) != 0)
		return errno == ENOENT ? (lks_err("no database '%s'", path), LKS_STORE_BAD_FILE)
		                       : lks_err("cannot open '%s': %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode) || st.st_size == 0)
		return lks_err("'%s' is not a lockstep database (%s)", path, S_ISREG(st.st_mode)
		               ? "an empty file" : "not a regular file"), LKS_STORE_BAD_FILE;
	rc = lks_store_open_ro_db(path, 0, &db, &sql_rc);
	/* A WAL database needs its -shm (the WAL index), which a reader makes where it can.
	   Where it cannot (a read-only folder or medium), a database without a WAL to read is
	   opened immutable: no locks, no -shm; nobody can be writing it there. */
	if (rc == -1 && (sql_rc == SQLITE_READONLY || sql_rc == SQLITE_CANTOPEN)) {
		if (lks_store_wal_size(path) > 0) {
			lks_err("cannot read '%s': its write-ahead log '%s-wal' needs the index '%s-shm', "
			        "which cannot be made here (a read-only folder?): open it once with write "
			        "access to fold the log in", path, path, path);
			goto out;
		}
		sqlite3_close_v2(db);
		rc = lks_store_open_ro_db(path, 1, &db, &sql_rc);
	}
	if (rc)
		goto out;
	rc = -1;
	if (!(s = calloc(1, sizeof(*s)))) {
		lks_err("cannot open '%s': out of memory", path);
		goto out;
	}
	/* per-connection settings only: the file's journal mode is left as it is */
	if (LKS_SQL(db, sqlite3_exec(db, "PRAGMA foreign_keys = ON; PRAGMA cache_size = -65536;",
	                             NULL, NULL, NULL)) < 0) {
		free(s);
		goto out;
	}
	s->db = db;
	db = NULL;
	*out = s;
	rc = 0;
out:
	sqlite3_close_v2(db);
	return rc;
}

void lks_store_close(lks_store *s)
{
	if (!s)
		return;
	lks_store_ckpt_stop(s);
	for (int i = 0; i < LKS_Q_COUNT; i++)
		sqlite3_finalize(s->stmt[i]);
	sqlite3_finalize(s->stat_batch);
	/* the last connection to close checkpoints the WAL into the database file */
	sqlite3_close_v2(s->db);
	free(s);
}

struct sqlite3 *lks_store_db(lks_store *s)
{
	return s->db;
}

/* ---- writing ---- */

int lks_store_begin_suite(lks_store *s, const char *command, int64_t *suite_id)
{
	sqlite3_stmt *st;

	if (lks_store_stmt(s, LKS_Q_SUITE, &st))
		return -1;
	lks_bind_text(st, 1, command ? command : "");
	if (lks_store_done(s, st))
		return -1;
	*suite_id = sqlite3_last_insert_rowid(s->db);
	return 0;
}

int lks_store_begin_run(lks_store *s, const lks_run_info *info, int64_t *run_id)
{
	sqlite3_stmt *st;

	if (!info->case_name || !info->run_name || !info->recipe || !info->backend)
		return lks_err("'%s': a run needs a case name, run name, recipe and backend",
		               lks_store_path(s));
	if (lks_store_stmt(s, LKS_Q_RUN, &st))
		return -1;
	if (info->suite_id > 0)
		sqlite3_bind_int64(st, 1, info->suite_id);
	else
		sqlite3_bind_null(st, 1);
	lks_bind_text(st, 2, info->case_name);
	lks_bind_text(st, 3, info->case_path);
	lks_bind_text(st, 4, info->case_text);
	lks_bind_text(st, 5, info->run_name);
	lks_bind_text(st, 6, info->recipe);
	lks_bind_text(st, 7, info->options);
	lks_bind_text(st, 8, info->backend);
	sqlite3_bind_int(st, 9, info->world_size);
	sqlite3_bind_int64(st, 10, (sqlite3_int64)info->seed);
	sqlite3_bind_int(st, 11, info->steps);
	lks_bind_text(st, 12, info->combo);
	lks_bind_text(st, 13, info->fingerprint);
	/* the strings are SQLITE_STATIC: drop them before the caller's memory goes */
	int rc = lks_store_done(s, st);

	sqlite3_clear_bindings(st);
	if (rc)
		return -1;
	*run_id = sqlite3_last_insert_rowid(s->db);
	return 0;
}

int lks_store_tensors(lks_store *s, int64_t run_id, const char *const *names,
                      const lks_phase *phases, int n)
{
	sqlite3_stmt *st;
	int rc = -1;

	if (lks_store_stmt(s, LKS_Q_TENSOR, &st) || lks_store_exec(s, LKS_Q_BEGIN))
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	for (int i = 0; i < n; i++) {
		const char *phase = lks_phase_name(phases[i]);

		if (!names[i] || !phase) {
			lks_err("'%s': run %lld tensor %d has no name or a bad phase (%d)",
			        lks_store_path(s), (long long)run_id, i, (int)phases[i]);
			goto out;
		}
		sqlite3_bind_int(st, 2, i);
		lks_bind_text(st, 3, names[i]);
		lks_bind_text(st, 4, phase);
		if (lks_store_done(s, st))
			goto out;
	}
	if (lks_store_exec(s, LKS_Q_COMMIT))
		goto out;
	rc = 0;
out:
	sqlite3_clear_bindings(st);
	if (rc)
		lks_store_rollback(s);
	return rc;
}

/* Steps go only to a run that exists and has not ended: a step after end_run is a bug in
   the runner, and storing it would make a complete run change under a reader. */
static int lks_store_check_open_run(lks_store *s, int64_t run_id)
{
	sqlite3_stmt *st;
	int rc = -1, r;

	if (lks_store_stmt(s, LKS_Q_STATUS, &st))
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	r = LKS_SQL(s->db, sqlite3_step(st));
	if (r == SQLITE_DONE)
		lks_err("'%s': no run %lld", lks_store_path(s), (long long)run_id);
	else if (r == SQLITE_ROW && strcmp((const char *)sqlite3_column_text(st, 0), "incomplete"))
		lks_err("'%s': run %lld has ended ('%s'); no more steps", lks_store_path(s),
		        (long long)run_id, (const char *)sqlite3_column_text(st, 0));
	else if (r == SQLITE_ROW)
		rc = 0;
	sqlite3_reset(st);
	return rc;
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

static int lks_store_step_rows(lks_store *s, int64_t run_id, const lks_step_row *steps,
                               int nsteps)
{
	sqlite3_stmt *st;

	if (lks_store_stmt(s, LKS_Q_STEP, &st))
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	for (int i = 0; i < nsteps; i++) {
		const lks_step_row *r = &steps[i];

		sqlite3_bind_int(st, 2, r->step);
		sqlite3_bind_int(st, 3, r->rank);
		lks_bind_real(st, 4, r->loss);
		lks_bind_real(st, 5, r->grad_norm);
		lks_bind_real(st, 6, r->lr);
		lks_bind_real(st, 7, r->step_time);
		sqlite3_bind_int64(st, 8, r->nonfinite);
		if (lks_store_done(s, st))
			return lks_store_err_row(r->step, r->rank, -1, 1);
	}
	return 0;
}

static inline void lks_bind_stat(sqlite3_stmt *st, int b, const lks_stat_row *r)
{
	sqlite3_bind_int(st, b, r->step);
	sqlite3_bind_int(st, b + 1, r->rank);
	sqlite3_bind_int(st, b + 2, r->seq);
	lks_bind_real(st, b + 3, r->l2);
	lks_bind_real(st, b + 4, r->amax);
	lks_bind_real(st, b + 5, r->scale);
	sqlite3_bind_int64(st, b + 6, r->nonfinite);
	sqlite3_bind_int64(st, b + 7, r->underflow);
	sqlite3_bind_int64(st, b + 8, r->saturated);
	sqlite3_bind_int64(st, b + 9, (sqlite3_int64)r->hash);
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
		int b = 2 + 10 * j;

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
			lks_bind_stat(batch, 2 + 10 * j, &r[j]);
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
	sqlite3_stmt *st;
	int rc;

	if (!kind)
		return lks_err("'%s': an event needs a kind", lks_store_path(s));
	if (lks_store_stmt(s, LKS_Q_EVENT, &st))
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	if (step >= 0)
		sqlite3_bind_int(st, 2, step);
	else
		sqlite3_bind_null(st, 2);
	if (rank >= 0)
		sqlite3_bind_int(st, 3, rank);
	else
		sqlite3_bind_null(st, 3);
	lks_bind_text(st, 4, tensor);
	lks_bind_text(st, 5, kind);
	lks_bind_text(st, 6, message);
	rc = lks_store_done(s, st);
	sqlite3_clear_bindings(st);
	return rc;
}

int lks_store_end_run(lks_store *s, int64_t run_id, const char *status)
{
	sqlite3_stmt *st;

	if (!status || (strcmp(status, "complete") && strcmp(status, "failed")))
		return lks_err("'%s': run %lld cannot end as '%s' (complete or failed)",
		               lks_store_path(s), (long long)run_id, status ? status : "(null)");
	if (lks_store_stmt(s, LKS_Q_END_RUN, &st))
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	sqlite3_bind_text(st, 2, status, -1, SQLITE_STATIC);
	if (lks_store_done(s, st))
		return -1;
	if (sqlite3_changes(s->db) != 1)
		return lks_err("'%s': no run %lld that is still incomplete", lks_store_path(s),
		               (long long)run_id);
	return 0;
}

/* ---- reading ---- */

int lks_store_run_status(lks_store *s, int64_t run_id, char *buf, size_t size)
{
	sqlite3_stmt *st;
	int rc = -1, r;

	if (lks_store_stmt(s, LKS_Q_STATUS, &st))
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	r = LKS_SQL(s->db, sqlite3_step(st));
	if (r == SQLITE_ROW) {
		snprintf(buf, size, "%s", (const char *)sqlite3_column_text(st, 0));
		rc = 0;
	} else if (r == SQLITE_DONE) {
		lks_err("'%s': no run %lld", lks_store_path(s), (long long)run_id);
	}
	sqlite3_reset(st);
	return rc;
}

static const char *lks_column_text(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
}

/* Walks the rows of a run query (LKS_RUN_COLS) through fn; *nrows counts them. */
static int lks_store_walk_runs(lks_store *s, sqlite3_stmt *st,
                               int (*fn)(void *arg, const lks_run_rec *run), void *arg,
                               int *nrows)
{
	int rc = 0, r;

	*nrows = 0;
	while (rc == 0 && (r = LKS_SQL(s->db, sqlite3_step(st))) == SQLITE_ROW) {
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

		(*nrows)++;
		rc = fn(arg, &run);
	}
	if (rc == 0 && r < 0)
		rc = -1;
	sqlite3_reset(st);
	return rc;
}

int lks_store_get_run(lks_store *s, int64_t run_id,
                      int (*fn)(void *arg, const lks_run_rec *run), void *arg)
{
	sqlite3_stmt *st;
	int rc, n;

	if (lks_store_stmt(s, LKS_Q_GET_RUN, &st))
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	rc = lks_store_walk_runs(s, st, fn, arg, &n);
	if (rc == 0 && n == 0)
		return lks_err("'%s': no run %lld", lks_store_path(s), (long long)run_id);
	return rc;
}

int lks_store_get_runs(lks_store *s, int (*fn)(void *arg, const lks_run_rec *run), void *arg)
{
	sqlite3_stmt *st;
	int n;

	if (lks_store_stmt(s, LKS_Q_GET_RUNS, &st))
		return -1;
	return lks_store_walk_runs(s, st, fn, arg, &n);
}

int lks_store_count(lks_store *s, int64_t run_id, lks_store_table table, int64_t *n)
{
	static const enum lks_q q[] = {
		[LKS_TABLE_TENSORS] = LKS_Q_COUNT_TENSORS,
		[LKS_TABLE_STEPS] = LKS_Q_COUNT_STEPS,
		[LKS_TABLE_STATS] = LKS_Q_COUNT_STATS,
		[LKS_TABLE_EVENTS] = LKS_Q_COUNT_EVENTS,
	};
	sqlite3_stmt *st;
	int rc = -1;

	if ((int)table < 0 || (int)table >= (int)(sizeof(q) / sizeof(q[0])))
		return lks_err("lks_store_count: bad table %d", (int)table);
	if (lks_store_stmt(s, q[table], &st))
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	if (LKS_SQL(s->db, sqlite3_step(st)) == SQLITE_ROW) {
		*n = sqlite3_column_int64(st, 0);
		rc = 0;
	}
	sqlite3_reset(st);
	return rc;
}

int lks_store_get_tensors(lks_store *s, int64_t run_id,
                          int (*fn)(void *arg, int seq, const char *name, lks_phase phase),
                          void *arg)
{
	sqlite3_stmt *st;
	int rc = 0, r;

	if (lks_store_stmt(s, LKS_Q_GET_TENSORS, &st))
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	while (rc == 0 && (r = LKS_SQL(s->db, sqlite3_step(st))) == SQLITE_ROW) {
		const char *phase = lks_column_text(st, 2);
		int p = 0;

		while (p < LKS_NPHASES && strcmp(phase, lks_phase_names[p]))
			p++;
		rc = fn(arg, sqlite3_column_int(st, 0), lks_column_text(st, 1), (lks_phase)p);
	}
	if (rc == 0 && r < 0)
		rc = -1;
	sqlite3_reset(st);
	return rc;
}

int lks_store_get_steps(lks_store *s, int64_t run_id, int step, lks_step_row *rows, int cap,
                        int *n)
{
	sqlite3_stmt *st;
	int r;

	*n = 0;
	if (lks_store_stmt(s, step < 0 ? LKS_Q_GET_STEPS : LKS_Q_GET_STEP, &st))
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	if (step >= 0)
		sqlite3_bind_int(st, 2, step);
	while ((r = LKS_SQL(s->db, sqlite3_step(st))) == SQLITE_ROW) {
		if (*n < cap)
			rows[*n] = (lks_step_row){
				.step = sqlite3_column_int(st, 0),
				.rank = sqlite3_column_int(st, 1),
				.loss = lks_column_real(st, 2),
				.grad_norm = lks_column_real(st, 3),
				.lr = lks_column_real(st, 4),
				.step_time = lks_column_real(st, 5),
				.nonfinite = sqlite3_column_int64(st, 6),
			};
		(*n)++;
	}
	sqlite3_reset(st);
	return r < 0 ? -1 : 0;
}

int lks_store_get_stats(lks_store *s, int64_t run_id, int step, int rank, lks_stat_row *rows,
                        size_t cap, size_t *n)
{
	sqlite3_stmt *st;
	int r;

	*n = 0;
	if (lks_store_stmt(s, LKS_Q_GET_STATS, &st))
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	sqlite3_bind_int(st, 2, step);
	sqlite3_bind_int(st, 3, rank);
	while ((r = LKS_SQL(s->db, sqlite3_step(st))) == SQLITE_ROW) {
		if (*n < cap)
			rows[*n] = (lks_stat_row){
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
		(*n)++;
	}
	sqlite3_reset(st);
	return r < 0 ? -1 : 0;
}

int lks_store_get_events(lks_store *s, int64_t run_id,
                         int (*fn)(void *arg, const lks_event_rec *ev), void *arg)
{
	sqlite3_stmt *st;
	int rc = 0, r;

	if (lks_store_stmt(s, LKS_Q_GET_EVENTS, &st))
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	while (rc == 0 && (r = LKS_SQL(s->db, sqlite3_step(st))) == SQLITE_ROW) {
		lks_event_rec ev = {
			.event_id = sqlite3_column_int64(st, 0),
			.step = sqlite3_column_type(st, 1) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 1),
			.rank = sqlite3_column_type(st, 2) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 2),
			.tensor = lks_column_text(st, 3),
			.kind = lks_column_text(st, 4),
			.message = lks_column_text(st, 5),
			.time = lks_column_text(st, 6),
		};

		rc = fn(arg, &ev);
	}
	if (rc == 0 && r < 0)
		rc = -1;
	sqlite3_reset(st);
	return rc;
}

/* ---- check verdicts ---- */

static inline void lks_bind_id(sqlite3_stmt *st, int i, int64_t id)
{
	if (id > 0)
		sqlite3_bind_int64(st, i, id);
	else
		sqlite3_bind_null(st, i);
}

static inline void lks_bind_index(sqlite3_stmt *st, int i, int v)
{
	if (v >= 0)
		sqlite3_bind_int(st, i, v);
	else
		sqlite3_bind_null(st, i);
}

int lks_store_check(lks_store *s, const lks_check_rec *r)
{
	sqlite3_stmt *st;
	int rc;

	if (!r->case_name || !r->check_name || !r->kind || !r->verdict)
		return lks_err("'%s': a check verdict needs a case, a check name, a kind and a verdict",
		               lks_store_path(s));
	if (lks_store_stmt(s, LKS_Q_CHECK, &st))
		return -1;
	lks_bind_id(st, 1, r->suite_id);
	lks_bind_text(st, 2, r->case_name);
	lks_bind_text(st, 3, r->check_name);
	lks_bind_text(st, 4, r->kind);
	lks_bind_id(st, 5, r->run_a);
	lks_bind_id(st, 6, r->run_b);
	lks_bind_text(st, 7, r->verdict);
	lks_bind_index(st, 8, r->step);
	lks_bind_index(st, 9, r->rank);
	lks_bind_text(st, 10, r->tensor);
	lks_bind_text(st, 11, r->field);
	if (r->type == LKS_VALUE_REAL) {
		lks_bind_real(st, 12, r->value_a);
		lks_bind_real(st, 13, r->value_b);
	} else if (r->type == LKS_VALUE_INT) {
		sqlite3_bind_int64(st, 12, r->ivalue_a);
		sqlite3_bind_int64(st, 13, r->ivalue_b);
	} else {
		sqlite3_bind_null(st, 12);
		sqlite3_bind_null(st, 13);
	}
	lks_bind_real(st, 14, r->abs_err);
	lks_bind_real(st, 15, r->rel_err);
	if (r->ulp >= 0)
		sqlite3_bind_int64(st, 16, r->ulp);
	else
		sqlite3_bind_null(st, 16);
	lks_bind_text(st, 17, r->message);
	rc = lks_store_done(s, st);
	/* the strings are SQLITE_STATIC: drop them before the caller's memory goes */
	sqlite3_clear_bindings(st);
	return rc;
}

static int lks_column_index(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int(st, i);
}

int lks_store_get_checks(lks_store *s, int64_t suite_id,
                         int (*fn)(void *arg, const lks_check_rec *rec), void *arg)
{
	sqlite3_stmt *st;
	int rc = 0, r;

	if (lks_store_stmt(s, suite_id > 0 ? LKS_Q_GET_CHECKS : LKS_Q_GET_ALL_CHECKS, &st))
		return -1;
	if (suite_id > 0)
		sqlite3_bind_int64(st, 1, suite_id);
	while (rc == 0 && (r = LKS_SQL(s->db, sqlite3_step(st))) == SQLITE_ROW) {
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
			.ulp = sqlite3_column_type(st, 16) == SQLITE_NULL ? -1
			     : sqlite3_column_int64(st, 16),
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
		rc = fn(arg, &c);
	}
	if (rc == 0 && r < 0)
		rc = -1;
	sqlite3_reset(st);
	return rc;
}

/* ---- probes of matrix, bisect and reduce ---- */

int lks_store_begin_session(lks_store *s, const char *kind, const char *command,
                            const char *combos, int64_t *session_id)
{
	sqlite3_stmt *st;
	int rc;

	if (lks_store_stmt(s, LKS_Q_SESSION, &st))
		return -1;
	lks_bind_text(st, 1, kind);
	lks_bind_text(st, 2, command ? command : "");
	lks_bind_text(st, 3, combos);
	rc = lks_store_done(s, st);
	sqlite3_clear_bindings(st);
	if (rc)
		return -1;
	*session_id = sqlite3_last_insert_rowid(s->db);
	return 0;
}

int lks_store_end_session(lks_store *s, int64_t session_id, const char *result)
{
	sqlite3_stmt *st;
	int rc;

	if (lks_store_stmt(s, LKS_Q_END_SESSION, &st))
		return -1;
	sqlite3_bind_int64(st, 1, session_id);
	lks_bind_text(st, 2, result);
	rc = lks_store_done(s, st);
	sqlite3_clear_bindings(st);
	return rc;
}

int lks_store_probe(lks_store *s, const lks_probe_rec *r, int64_t *probe_id)
{
	sqlite3_stmt *st;
	int rc;

	if (!r->combo || !r->cases || !r->outcome || !r->started)
		return lks_err("'%s': a probe needs a combo, cases, an outcome and a start time",
		               lks_store_path(s));
	if (lks_store_stmt(s, LKS_Q_PROBE, &st))
		return -1;
	sqlite3_bind_int64(st, 1, r->session_id);
	lks_bind_text(st, 2, r->combo);
	lks_bind_text(st, 3, r->cases);
	lks_bind_text(st, 4, r->check_name);
	lks_bind_text(st, 5, r->outcome);
	lks_bind_index(st, 6, r->exit_code);
	if (r->signal > 0)
		sqlite3_bind_int(st, 7, r->signal);
	else
		sqlite3_bind_null(st, 7);
	lks_bind_real(st, 8, r->seconds);
	lks_bind_id(st, 9, r->suite_id);
	lks_bind_text(st, 10, r->output);
	lks_bind_text(st, 11, r->started);
	rc = lks_store_done(s, st);
	/* the strings are SQLITE_STATIC: drop them before the caller's memory goes */
	sqlite3_clear_bindings(st);
	if (!rc && probe_id)
		*probe_id = sqlite3_last_insert_rowid(s->db);
	return rc;
}

int lks_store_get_probes(lks_store *s, int64_t session_id,
                         int (*fn)(void *arg, const lks_probe_rec *rec), void *arg)
{
	sqlite3_stmt *st;
	int rc = 0, r;

	if (lks_store_stmt(s, session_id > 0 ? LKS_Q_GET_PROBES : LKS_Q_GET_ALL_PROBES, &st))
		return -1;
	if (session_id > 0)
		sqlite3_bind_int64(st, 1, session_id);
	while (rc == 0 && (r = LKS_SQL(s->db, sqlite3_step(st))) == SQLITE_ROW) {
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

		rc = fn(arg, &p);
	}
	if (rc == 0 && r < 0)
		rc = -1;
	sqlite3_reset(st);
	return rc;
}

/* The one integer a query returns. */
static int lks_store_scalar(lks_store *s, sqlite3_stmt *st, int64_t *out)
{
	int r = LKS_SQL(s->db, sqlite3_step(st));

	if (r == SQLITE_ROW)
		*out = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return r == SQLITE_ROW ? 0 : -1;
}

int lks_store_last_suite(lks_store *s, int64_t *suite_id)
{
	sqlite3_stmt *st;

	return lks_store_stmt(s, LKS_Q_LAST_SUITE, &st) ? -1 : lks_store_scalar(s, st, suite_id);
}

int lks_store_combo_suite(lks_store *s, const char *combo, int64_t after, int64_t *suite_id)
{
	sqlite3_stmt *st;
	int rc;

	if (lks_store_stmt(s, LKS_Q_COMBO_SUITE, &st))
		return -1;
	lks_bind_text(st, 1, combo);
	sqlite3_bind_int64(st, 2, after);
	rc = lks_store_scalar(s, st, suite_id);
	sqlite3_clear_bindings(st);
	return rc;
}

/* ---- gradient SQNR between two runs (harness/verify/sqnr.h) ----
 * The table is created when first written: it holds rows only for cases with sqnr
 * checks, and a database without it simply has no SQNR rows. Adding a table changes
 * nothing a reader of the same schema version relies on. */

static const char lks_sqnr_schema[] =
	"CREATE TABLE IF NOT EXISTS grad_sqnr (\n"
	"	run_a INTEGER NOT NULL,\n"
	"	run_b INTEGER NOT NULL,\n"
	"	step INTEGER NOT NULL,\n"
	"	seq INTEGER NOT NULL,     -- the gradient's place in the backward\n"
	"	tensor TEXT NOT NULL,\n"
	"	sqnr_db REAL,             -- 10 log10(sum b^2 / sum (a-b)^2); +-inf kept, NaN NULL\n"
	"	PRIMARY KEY (run_a, run_b, step, seq)\n"
	") WITHOUT ROWID";

int lks_store_sqnr_put(lks_store *s, int64_t run_a, int64_t run_b, const lks_sqnr_row *rows,
                       size_t n)
{
	sqlite3_stmt *st = NULL;
	int rc = -1;

	if (LKS_SQL(s->db, sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL)) < 0)
		return -1;
	if (LKS_SQL(s->db, sqlite3_exec(s->db, lks_sqnr_schema, NULL, NULL, NULL)) < 0
	    || LKS_SQL(s->db, sqlite3_prepare_v2(s->db, "INSERT INTO grad_sqnr VALUES (?1, ?2, ?3, "
	                                         "?4, ?5, ?6)", -1, &st, NULL)) < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		sqlite3_bind_int64(st, 1, run_a);
		sqlite3_bind_int64(st, 2, run_b);
		sqlite3_bind_int(st, 3, rows[i].step);
		sqlite3_bind_int(st, 4, rows[i].seq);
		sqlite3_bind_text(st, 5, rows[i].tensor, -1, SQLITE_STATIC);
		if (isnan(rows[i].db))
			sqlite3_bind_null(st, 6);
		else
			sqlite3_bind_double(st, 6, rows[i].db);
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
			.db = sqlite3_column_type(st, 3) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 3),
		};

		snprintf(row.tensor, sizeof(row.tensor), "%s", (const char *)sqlite3_column_text(st, 2));
		rc = fn(arg, &row);
	}
	if (rc == 0 && r != SQLITE_DONE)
		rc = lks_err("'%s': reading grad_sqnr: %s", lks_store_path(s), sqlite3_errmsg(s->db));
	sqlite3_finalize(st);
	return rc;
}
