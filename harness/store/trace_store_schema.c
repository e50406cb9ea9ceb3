/*
 * trace_store_schema.c: the trace store's schema, one part per version, and what is done
 * with it: a new file gets every part, a file of an earlier version the parts after its
 * own (trace_store.h, DESIGN.md Trace).
 *
 * A file is recognised by PRAGMA application_id (LKS_STORE_APP_ID) and its schema version
 * by PRAGMA user_version. Both are read before anything is written, so a file that is not
 * ours, or ours in a later version, is refused untouched. Only a database with no tables
 * and both header fields zero (a missing or empty file) gets the schema; a file of an
 * earlier version gets the tables added since, and keeps everything it holds (an older
 * lockstep then refuses it, as it refuses any later version). A file of an earlier version
 * opened to read is not upgraded: what it lacks is made in the connection's TEMP schema.
 */
#include <stdio.h>
#include <string.h>

#include "harness/store/trace_store_impl.h"
#include "kernels/err.h"

/* 'LKS1' in the database header: tells our files from other SQLite databases. */
#define LKS_STORE_APP_ID 0x4c4b5331

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

/* A column added to a table that an earlier version made (ALTER TABLE ADD COLUMN): the
   rows already there read NULL in it. */
typedef struct lks_schema_column {
	const char *table, *name;
	const char *decl;                 /* the type and constraints */
} lks_schema_column;

/* 4: a check's parameters, the keys of its [check NAME] section (harness/engine/case.h),
   stored with its verdict so that a reader never parses the case again. A verdict of an
   earlier version has NULL in each: expect NULL says they were not stored. */
static const lks_schema_column lks_schema_v4[] = {
	{ "checks", "name_a", "TEXT" },            /* the runs' names in the case */
	{ "checks", "name_b", "TEXT" },            /* NULL: a one-run kind */
	{ "checks", "metric", "TEXT" },            /* close: what it compares; NULL: none */
	{ "checks", "tensors", "TEXT" },           /* close: an fnmatch pattern; NULL: all */
	{ "checks", "rtol", "REAL" },
	{ "checks", "atol", "REAL" },
	{ "checks", "floor_db", "REAL" },          /* sqnr: the least SQNR that passes */
	{ "checks", "expect", "TEXT CHECK (expect IN ('pass', 'fail'))" },
	{ "checks", "expect_step", "INTEGER" },    /* the divergence a failing check expects; */
	{ "checks", "expect_rank", "INTEGER" },    /* NULL: not given */
	{ "checks", "expect_tensor", "TEXT" },
};

/* 5: GPU health (kernels/nvml/nvml.h), read before and after each run: one row per
   device and reading; NVML absent is one row per phase, device NULL, key 'absent', the
   reason its value. And the step's memory high-water mark. */
static const char lks_schema_v5[] =
	"CREATE TABLE health (\n"
	"	run_id INTEGER NOT NULL REFERENCES runs (run_id),\n"
	"	phase TEXT NOT NULL CHECK (phase IN ('before', 'after')),\n"
	"	device INTEGER,                 -- NVML's index; NULL: not of a device (absent)\n"
	"	key TEXT NOT NULL,              -- ecc_corrected, ..., memory_total, name, uuid,\n"
	"	                                -- errors, absent\n"
	"	value                           -- INTEGER reading, or TEXT\n"
	");\n"
	"CREATE INDEX health_by_run ON health (run_id);\n";

static const lks_schema_column lks_schema_v5_columns[] = {
	/* bytes: the most GPU memory used in the step; NULL: not measured (no NVML) */
	{ "steps", "mem_peak", "INTEGER" },
};

/* 6: how the backend's GEMM library ran the GEMMs of a run (kernels/backend_types.h,
   lks_gemm_algo): one row per plan, in the order the backend first met it. The library's
   algorithm is NULL where the reference kernel ran them instead, fallback saying why. */
static const char lks_schema_v6[] =
	"CREATE TABLE gemm_algos (\n"
	"	run_id INTEGER NOT NULL REFERENCES runs (run_id),\n"
	"	seq INTEGER NOT NULL,           -- the order the backend met it in\n"
	"	role TEXT NOT NULL,             -- fwd, dgrad, wgrad\n"
	"	m INTEGER NOT NULL,             -- lockstep's C(M,N) = A(M,K) . B(N,K)^T\n"
	"	n INTEGER NOT NULL,\n"
	"	k INTEGER NOT NULL,\n"
	"	dtype_a TEXT NOT NULL,          -- f32, bf16, e4m3, e5m2\n"
	"	dtype_b TEXT NOT NULL,\n"
	"	dtype_c TEXT NOT NULL,          -- the output's (C = D)\n"
	"	scaling_a TEXT NOT NULL,        -- none, tensor, axis\n"
	"	scaling_b TEXT NOT NULL,\n"
	"	fast_accum INTEGER NOT NULL,\n"
	"	algo INTEGER,                   -- CUBLASLT_ALGO_CONFIG_ID; NULL: fallback\n"
	"	tile INTEGER,\n"
	"	stages INTEGER,\n"
	"	splitk INTEGER,\n"
	"	reduction INTEGER,              -- the reduction scheme (0: none)\n"
	"	fallback TEXT,                  -- why the reference kernel ran them; NULL: none\n"
	"	gemms INTEGER NOT NULL,         -- how many GEMMs of the run ran this way\n"
	"	PRIMARY KEY (run_id, seq)\n"
	") WITHOUT ROWID;\n";

/* 7: imported runs (lockstep import, harness/import/import.h): the metrics an import read
   for a (step, rank), packed in a blob in its steps row (trace_store_metrics.c), so that
   an import writes one row per log line: per metric, by name, a kind byte (0 numerics,
   1 performance), the name and a NUL, then the value as 8 bytes (IEEE 754 binary64,
   little-endian; every NaN one pattern, +-inf and -0 kept). */
static const lks_schema_column lks_schema_v7[] = {
	{ "steps", "metrics", "BLOB" },            /* NULL: not an imported run's step */
};

/* 8: retention (lockstep prune, harness/store/prune.h): a pinned suite keeps its stat rows
   whatever its age; pruned says when prune removed them. */
static const lks_schema_column lks_schema_v8[] = {
	{ "suites", "pinned", "INTEGER" },         /* 1: pinned; NULL or 0: not */
	{ "suites", "pruned", "TEXT" },            /* ISO 8601 UTC; NULL: stat rows all kept */
};

/* 9: night over night (harness/verify/nightly.h): per suite, each run compared with the
   same case and run of the latest earlier suite made with the same settings. */
static const char lks_schema_v9[] =
	"CREATE TABLE nightly (\n"
	"	suite_id INTEGER NOT NULL REFERENCES suites (suite_id),  -- tonight's\n"
	"	case_name TEXT NOT NULL,\n"
	"	run_name TEXT NOT NULL,\n"
	"	run_id INTEGER REFERENCES runs (run_id),       -- NULL: gone\n"
	"	prev_run_id INTEGER REFERENCES runs (run_id),  -- NULL: new\n"
	"	prev_suite_id INTEGER REFERENCES suites (suite_id),\n"
	"	verdict TEXT NOT NULL CHECK (verdict IN ('unchanged', 'changed', 'new', 'gone')),\n"
	"	fp_equal INTEGER NOT NULL,      -- 1: fingerprints (and case texts) equal\n"
	"	fp_keys TEXT NOT NULL,          -- the keys that differ, blank-separated\n"
	"	step INTEGER,                   -- changed: the first divergence; NULL: none\n"
	"	rank INTEGER,\n"
	"	tensor TEXT,\n"
	"	field TEXT,\n"
	"	message TEXT,                   -- changed: the divergence in words\n"
	"	time TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))\n"
	");\n"
	"CREATE INDEX nightly_by_suite ON nightly (suite_id);\n";

/* 10: an imported run's records many to a row (harness/store/import_block.h has the
   layout of data): an import writes a row per block of up to 16384 log lines, not per
   line. Imports of versions 7 to 9 stay in steps.metrics and read as before. */
static const char lks_schema_v10[] =
	"CREATE TABLE import_blocks (\n"
	"	run_id INTEGER NOT NULL REFERENCES runs (run_id),\n"
	"	seq INTEGER NOT NULL,           -- the order written, from 1\n"
	"	first_step INTEGER NOT NULL,    -- the steps of its records\n"
	"	last_step INTEGER NOT NULL,\n"
	"	records INTEGER NOT NULL,\n"
	"	data BLOB NOT NULL,\n"
	"	PRIMARY KEY (run_id, seq)\n"
	");\n";

/* 11: an imported tensor trace's records (harness/store/tensor_trace.h), many to a row:
   one (step, rank)'s tensors in execution order, in rows seq 0, 1, ... of up to 16384
   (import_block.h's layout, keyed), so that a step of every rank is read by its key. */
static const char lks_schema_v11[] =
	"CREATE TABLE tensor_blocks (\n"
	"	run_id INTEGER NOT NULL REFERENCES runs (run_id),\n"
	"	step INTEGER NOT NULL,\n"
	"	rank INTEGER NOT NULL,\n"
	"	seq INTEGER NOT NULL,           -- the order within (step, rank), from 0\n"
	"	records INTEGER NOT NULL,\n"
	"	data BLOB NOT NULL,\n"
	"	PRIMARY KEY (run_id, step, rank, seq)\n"
	");\n";

/* 12: a run's training state after a step (harness/engine/state.h has the layout of
   data): per rank, its parameters, optimizer state and FP8 amax histories, from which a
   run resumes bit for bit ('run --resume-from', the screen's replay). */
static const char lks_schema_v12[] =
	"CREATE TABLE states (\n"
	"	run_id INTEGER NOT NULL REFERENCES runs (run_id),\n"
	"	step INTEGER NOT NULL,          -- the step it is the state after\n"
	"	rank INTEGER NOT NULL,\n"
	"	data BLOB NOT NULL,\n"
	"	PRIMARY KEY (run_id, step, rank)\n"
	");\n";

/* 13: a node's screen ('lockstep screen --db'): its JSON document whole, with what a
   reader picks it by. */
static const char lks_schema_v13[] =
	"CREATE TABLE screens (\n"
	"	screen_id INTEGER PRIMARY KEY,\n"
	"	started TEXT NOT NULL,          -- ISO 8601 UTC, as suites.started\n"
	"	host TEXT NOT NULL,\n"
	"	mode TEXT NOT NULL,             -- quick, full\n"
	"	result TEXT NOT NULL,           -- pass, fail, error\n"
	"	document TEXT NOT NULL          -- the JSON document of 'screen --json'\n"
	");\n";

/* 14: when the command that wrote a suite ended (lockstep run, check, bench detect),
   whatever its verdict: a suite without it is still being written, or its writer was
   killed, and prune leaves it alone while it may still be alive (prune.h). */
static const lks_schema_column lks_schema_v14[] = {
	{ "suites", "finished", "TEXT" },          /* ISO 8601 UTC; NULL: not (yet) ended */
	{ "suites", "stopped", "INTEGER" },        /* the exit code of a writer that stopped
	                                              before the suite's end; NULL: none */
};

/* Part v of the schema: the tables (and their indexes) version v added, and the columns it
   added to tables of earlier versions. A part never changes once released. */
static const struct lks_schema_part {
	const char *tables;               /* NULL: none */
	const lks_schema_column *columns;
	int ncolumns;
} lks_store_schema[LKS_STORE_SCHEMA_VERSION + 1] = {
	[1] = { lks_schema_v1, NULL, 0 },
	[2] = { lks_schema_v2, NULL, 0 },
	[3] = { lks_schema_v3, NULL, 0 },
	[4] = { NULL, lks_schema_v4, (int)(sizeof(lks_schema_v4) / sizeof(lks_schema_v4[0])) },
	[5] = { lks_schema_v5, lks_schema_v5_columns, 1 },
	[6] = { lks_schema_v6, NULL, 0 },
	[7] = { NULL, lks_schema_v7, 1 },
	[8] = { NULL, lks_schema_v8, (int)(sizeof(lks_schema_v8) / sizeof(lks_schema_v8[0])) },
	[9] = { lks_schema_v9, NULL, 0 },
	[10] = { lks_schema_v10, NULL, 0 },
	[11] = { lks_schema_v11, NULL, 0 },
	[12] = { lks_schema_v12, NULL, 0 },
	[13] = { lks_schema_v13, NULL, 0 },
	[14] = { NULL, lks_schema_v14, 2 },
};

/* Gradient SQNR between two runs (harness/verify/sqnr.h): the table is created when first
   written (trace_store_write.c). It holds rows only for cases with sqnr checks, and a
   database without it simply has no SQNR rows. Adding a table changes nothing a reader of
   the same schema version relies on. */
const char lks_store_sqnr_schema[] =
	"CREATE TABLE IF NOT EXISTS grad_sqnr (\n"
	"	run_a INTEGER NOT NULL,\n"
	"	run_b INTEGER NOT NULL,\n"
	"	step INTEGER NOT NULL,\n"
	"	seq INTEGER NOT NULL,     -- the gradient's place in the backward\n"
	"	tensor TEXT NOT NULL,\n"
	"	sqnr_db REAL,             -- 10 log10(sum b^2 / sum (a-b)^2); +-inf kept, NaN NULL\n"
	"	PRIMARY KEY (run_a, run_b, step, seq)\n"
	") WITHOUT ROWID";

/* The index a traced tensor's name is looked up by (lks_store_trace_tensor, inside the
   step's write transaction): without it each new name scanned every earlier name of the
   run, and a run of 30000 names held the write lock for minutes. It is not part of a
   version: every open to write makes it if the file lacks it, so files made before it get
   it too, and an index changes nothing any reader or older writer relies on. */
const char lks_store_tensor_index[] =
	"CREATE INDEX IF NOT EXISTS tensors_by_name ON tensors (run_id, name, phase)";

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

int lks_store_inspect(sqlite3 *db, const char *path, enum lks_store_kind *kind,
                      int64_t *version)
{
	int64_t app = 0, tables = 0;
	int rc;

	*version = 0;
	rc = lks_store_header(db, &app, version, &tables);
	if (rc == SQLITE_NOTADB)
		return lks_err("'%s' is not a lockstep database (not an SQLite file)", path),
		       LKS_E_BAD_INPUT;
	if ((rc & 0xff) == SQLITE_READONLY)  /* a writer's open: its write-ahead files */
		return lks_err("cannot write '%s': the file or its folder is read-only (%s)", path,
		               sqlite3_errstr(rc));
	if (rc) {  /* "disk I/O error" of a full disk, "unable to open" of read-only media */
		char buf[1024];
		const char *why = lks_store_fs_why(path, buf, sizeof(buf));

		return why ? lks_err("cannot %s '%s': %s (%s)", sqlite3_db_readonly(db, "main") == 1
		                     ? "read" : "write", path, why, sqlite3_errstr(rc))
		           : lks_err("cannot read '%s': %s", path, sqlite3_errstr(rc));
	}
	if (app == 0 && *version == 0 && tables == 0) {
		*kind = LKS_FILE_NEW;
		return 0;
	}
	if (app != LKS_STORE_APP_ID)
		return lks_err("'%s' is not a lockstep database (an SQLite database of another "
		               "program: application_id %lld, %lld schema entries)", path, (long long)app,
		               (long long)tables), LKS_E_BAD_INPUT;
	if (*version < 1 || *version > LKS_STORE_SCHEMA_VERSION)
		return lks_err("'%s' has trace schema version %lld; this lockstep reads versions 1 to "
		               "%d (a later lockstep wrote it?)", path, (long long)*version,
		               LKS_STORE_SCHEMA_VERSION), LKS_E_BAD_INPUT;
	*kind = *version < LKS_STORE_SCHEMA_VERSION ? LKS_FILE_OLD : LKS_FILE_OURS;
	return 0;
}

/* Runs sql and frees it (sqlite3_free); NULL (out of memory) fails. The message recorded is
   SQLite's, for the caller to place. */
static int lks_store_run_sql(sqlite3 *db, char *sql)
{
	char *msg = NULL;
	int rc = 0;

	if (!sql)
		return lks_err("out of memory");
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		rc = lks_err("%s", msg ? msg : sqlite3_errmsg(db));
	sqlite3_free(msg);
	sqlite3_free(sql);
	return rc;
}

/* The SQL of part v: its tables, then its columns. */
static char *lks_store_part_sql(sqlite3 *db, int64_t v)
{
	const struct lks_schema_part *part = &lks_store_schema[v];
	sqlite3_str *q = sqlite3_str_new(db);

	if (part->tables)
		sqlite3_str_appendall(q, part->tables);
	for (int i = 0; i < part->ncolumns; i++)
		sqlite3_str_appendf(q, "ALTER TABLE \"%w\" ADD COLUMN \"%w\" %s;\n",
		                    part->columns[i].table, part->columns[i].name,
		                    part->columns[i].decl);
	return sqlite3_str_finish(q);
}

/* The schema parts after version 'from', and the header fields saying so. */
static int lks_store_upgrade(sqlite3 *db, const char *path, int64_t from)
{
	char pragmas[128], *msg = NULL;
	int rc = 0;

	snprintf(pragmas, sizeof(pragmas), "PRAGMA application_id = %d; PRAGMA user_version = %d;",
	         LKS_STORE_APP_ID, LKS_STORE_SCHEMA_VERSION);
	for (int64_t v = from + 1; !rc && v <= LKS_STORE_SCHEMA_VERSION; v++)
		if (lks_store_run_sql(db, lks_store_part_sql(db, v)))
			rc = lks_err("cannot add schema version %lld to '%s': %s", (long long)v, path,
			             lks_errmsg());
	if (!rc && sqlite3_exec(db, pragmas, NULL, NULL, &msg) != SQLITE_OK)
		rc = lks_err("cannot set the schema version of '%s': %s", path, msg ? msg : "?");
	sqlite3_free(msg);
	return rc;
}

int lks_store_create(sqlite3 *db, const char *path)
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

/* A part's tables, made in the TEMP schema. */
static char *lks_store_temp_tables(sqlite3 *db, const char *tables)
{
	sqlite3_str *q = sqlite3_str_new(db);
	const char *p = tables, *t;

	while ((t = strstr(p, "CREATE TABLE "))) {
		sqlite3_str_append(q, p, (int)(t - p));
		sqlite3_str_appendall(q, "CREATE TEMP TABLE ");
		p = t + strlen("CREATE TABLE ");
	}
	sqlite3_str_appendall(q, p);
	return sqlite3_str_finish(q);
}

/* What name is in the TEMP schema: 't' a table, 'v' a view, 0 nothing. */
static int lks_store_temp_type(sqlite3 *db, const char *name)
{
	sqlite3_stmt *st = NULL;
	int type = 0;

	if (sqlite3_prepare_v2(db, "SELECT type FROM temp.sqlite_master WHERE name = ?1", -1, &st,
	                       NULL) == SQLITE_OK) {
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		if (sqlite3_step(st) == SQLITE_ROW)
			type = lks_column_text(st, 0)[0];
	}
	sqlite3_finalize(st);
	return type;
}

/* A table of the file that versions after 'version' added columns to, read as an upgrade
   would leave it: a TEMP VIEW of the same name (which a name without a schema finds
   first), with NULL in each column added since. */
static char *lks_store_temp_view(sqlite3 *db, const char *table, int64_t version)
{
	sqlite3_str *q = sqlite3_str_new(db);

	sqlite3_str_appendf(q, "CREATE TEMP VIEW \"%w\" AS SELECT *", table);
	for (int64_t v = version + 1; v <= LKS_STORE_SCHEMA_VERSION; v++)
		for (int i = 0; i < lks_store_schema[v].ncolumns; i++)
			if (strcmp(lks_store_schema[v].columns[i].table, table) == 0)
				sqlite3_str_appendf(q, ", NULL AS \"%w\"", lks_store_schema[v].columns[i].name);
	sqlite3_str_appendf(q, " FROM main.\"%w\"", table);
	return sqlite3_str_finish(q);
}

/* A database of an earlier schema version read without being upgraded: the tables added
   since are made empty in the connection's TEMP schema, which lives in memory, and the
   columns added since to tables the file has are NULL in a TEMP VIEW over each, so every
   read finds them as the upgrade would make them and the file is not touched. */
int lks_store_temp_schema(sqlite3 *db, const char *path, int64_t version)
{
	for (int64_t v = version + 1; v <= LKS_STORE_SCHEMA_VERSION; v++) {
		const struct lks_schema_part *part = &lks_store_schema[v];
		int rc = 0;

		if (part->tables)
			rc = lks_store_run_sql(db, lks_store_temp_tables(db, part->tables));
		for (int i = 0; !rc && i < part->ncolumns; i++) {
			const lks_schema_column *c = &part->columns[i];
			int type = lks_store_temp_type(db, c->table);

			if (type == 't')  /* made above, from a part after the file's version */
				rc = lks_store_run_sql(db, sqlite3_mprintf(
					"ALTER TABLE temp.\"%w\" ADD COLUMN \"%w\" %s", c->table, c->name,
					c->decl));
			else if (type == 0)  /* the file's own: every later column at once */
				rc = lks_store_run_sql(db, lks_store_temp_view(db, c->table, version));
		}
		if (rc)
			return lks_err("cannot read '%s' (schema version %lld): %s", path,
			               (long long)version, lks_errmsg());
	}
	return 0;
}
