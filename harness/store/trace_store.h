/*
 * trace_store.h: the SQLite database of runs and their traces (DESIGN.md, Trace).
 *
 * Tables (schema version in PRAGMA user_version; WAL; writes batched in transactions):
 *   suites   one invocation of lockstep over cases
 *   runs     case, run, recipe and options, backend, world size, seed, steps, status,
 *            the case text, suite, combo, fingerprint (JSON)
 *   tensors  per run: the traced tensors in execution order (seq, name, phase)
 *   steps    per run, step and rank: loss, grad norm, lr, step time, non-finite count,
 *            GPU memory high-water mark (NULL without NVML)
 *   stats    per run, step, rank and tensor seq: L2 norm, amax, non-finite count, FP8 scale,
 *            underflow and saturation counts, XXH3-64 hash
 *   events   per run: notable happenings, e.g. the first non-finite value before an
 *            all-reduce (step, rank, tensor)
 *   checks   per suite and case: each check's verdict and, for a failure, its divergence
 *            (step, rank, tensor, field, values on both sides, errors); and its parameters
 *            (the runs' names, metric, tensors, rtol, atol, floor_db, the expectation);
 *            harness/verify/check.h
 *   probe_sessions  one 'lockstep matrix|bisect|reduce': kind, command line, combos file,
 *            the result in words
 *   health   per run, 'before' and 'after' it, device and key: a GPU health reading
 *            (NVML: ECC counts, retired pages, remapped rows, throttle reasons,
 *            temperature, power, memory), or one 'absent' row saying why there is none
 *   gemm_algos  per run: how the backend's GEMM library ran its GEMMs, one row per plan
 *            (role, shape, types, scaling, fast accumulation; the algorithm's id, tile,
 *            stages, split-K and reduction scheme, or the fallback and its reason)
 *   tensor_blocks  per imported tensor trace, step and rank: its tensors' statistics in
 *            execution order, many to a row (tensor_trace.h)
 *   metrics  per imported run, step, rank and metric name: the value as written (NaN
 *            NULL), and the metric's kind, numerics or performance (harness/import/import.h)
 *   nightly  per suite: each run against the same case and run of the latest earlier suite
 *            made with the same settings (harness/verify/nightly.h): unchanged, changed
 *            (with the first divergence), new or gone, and the fingerprint keys that differ
 *   probes   per session: each child 'lockstep check' under a combo (harness/probe/probe.h): the
 *            combo, cases, outcome (good, bad, skip, crash, timeout), exit code or signal,
 *            seconds, the suite it stored, the end of its output
 * A run is inserted with status 'incomplete' and set to 'complete' only when its last step
 * is stored, so a run killed at any moment stays 'incomplete' and earlier runs are intact.
 */
#ifndef LKS_HARNESS_TRACE_STORE_H
#define LKS_HARNESS_TRACE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "harness/base/status.h"
#include "kernels/backend_types.h"

typedef struct lks_store lks_store;

typedef enum lks_phase {
	LKS_PHASE_FORWARD = 0,    /* activations in the forward pass */
	LKS_PHASE_BACKWARD = 1,   /* gradients */
	LKS_PHASE_UPDATE = 2,     /* parameters after the optimizer step */
	LKS_PHASE_RECOMPUTE = 3,  /* activations recomputed in backward (checkpointing) */
} lks_phase;

typedef struct lks_run_info {
	int64_t suite_id;
	const char *case_name, *case_path, *case_text;
	const char *run_name, *recipe, *options;  /* options: "checkpoint=blocks ..." */
	const char *backend;
	int world_size, steps;    /* steps: a trained run's count; an import's last step
	                             (lks_store_import_end) */
	uint64_t seed;
	const char *combo;        /* may be NULL */
	const char *fingerprint;  /* JSON object */
} lks_run_info;

typedef struct lks_step_row {
	int step, rank;
	double loss, grad_norm, lr, step_time;
	int64_t nonfinite;
	int64_t mem_peak;         /* the backend's memory high-water mark so far, in bytes
	                             (lks_be_mem_peak); 0: not measured (stored NULL: a CPU
	                             run, or schema before 5) */
} lks_step_row;

typedef struct lks_stat_row {
	int step, rank, seq;      /* seq: the tensor's position in execution order */
	double l2;
	float amax, scale;        /* scale: NaN when the tensor is not quantized */
	int64_t nonfinite, underflow, saturated;
	uint64_t hash;
} lks_stat_row;

/* Creates the file and schema if needed; refuses (lks_err) a database of another schema
   version or a file that is not a lockstep database, touching nothing. A store is used by
   one thread at a time (it runs a checkpoint thread of its own) and must not be carried
   across fork(): open one in the child. A refused file gives LKS_E_BAD_INPUT (bad input,
   exit 2 to a user); other failures -1. */
int lks_store_open(const char *path, lks_store **out);
/* Opens an existing database to read (diff, report, golden update): creates nothing and
   writes nothing, so it also reads a file on read-only media (where a WAL database with
   no log to fold in is opened immutable). A missing file, an empty one, one that is not a
   regular file or not a lockstep database, or a later schema version: LKS_E_BAD_INPUT,
   and the file stays as it was. An earlier version is read as it is, not upgraded: the
   tables it lacks read empty and the columns it lacks NULL, as an upgrade would leave them.
   Writing through the store fails. Where the folder can be written, SQLite's reader may
   leave the -wal and -shm files of a WAL database beside it (the next writer removes
   them); the database file itself is never written. A file beside the hot journal of a
   writer that stopped mid-transaction (an import killed) holds part of that transaction
   until a writer rolls it back, which a reader may not do: it is refused (-1, its message
   says so). */
int lks_store_open_readonly(const char *path, lks_store **out);
/* Removes the database file path and SQLite's files beside it (-wal, -shm, -journal):
   only for a database that its caller made and nobody else can have open. */
void lks_store_unlink(const char *path);
void lks_store_close(lks_store *s);
/* A read transaction: every read from lks_store_read_begin to lks_store_read_end sees the
   database as the first of them did (one WAL snapshot), whatever other processes commit
   meanwhile, so that what is read together agrees (a run's status, its suite's prune
   mark, its rows). No write between the two; end it before writing. */
int lks_store_read_begin(lks_store *s);
void lks_store_read_end(lks_store *s);

int lks_store_begin_suite(lks_store *s, const char *command, int64_t *suite_id);
/* The suite's writer ends, whatever its verdict: until then prune takes the suite as
   still being written (prune.h); a writer killed never says so. stopped: the exit code it
   ended with before the suite's end (bad input in a case, an import that failed: the cases
   after it not run), 0 where it reached its end. */
int lks_store_end_suite(lks_store *s, int64_t suite_id, int stopped);
int lks_store_begin_run(lks_store *s, const lks_run_info *info, int64_t *run_id);
/* The traced tensors of a run, in execution order: seq = index. */
int lks_store_tensors(lks_store *s, int64_t run_id, const char *const *names,
                      const lks_phase *phases, int n);
/* One step of all ranks, in one transaction. */
int lks_store_step(lks_store *s, int64_t run_id, const lks_step_row *steps, int nsteps,
                   const lks_stat_row *stats, size_t nstats);
int lks_store_event(lks_store *s, int64_t run_id, int step, int rank, const char *tensor,
                    const char *kind, const char *message);
/* A GPU health reading (harness/store/trace_store_health.c): integer, or text when text
   is not NULL. device -1: not of one device (the 'absent' row). */
typedef struct lks_health_row {
	const char *phase;        /* "before" or "after" */
	int device;
	const char *key;
	int64_t value;
	const char *text;
} lks_health_row;

/* The rows in one transaction. */
int lks_store_health(lks_store *s, int64_t run_id, const lks_health_row *rows, int n);
/* The run's health rows in the order they were stored. */
int lks_store_get_health(lks_store *s, int64_t run_id,
                         int (*fn)(void *arg, const lks_health_row *row), void *arg);
/* The GEMM plans of a run (kernels/backend_types.h; trace_store_gemm.c), in one
   transaction, seq 0, 1, ... in the order given. */
int lks_store_gemm_plans(lks_store *s, int64_t run_id, const lks_gemm_algo *plans, int n);
/* The run's plans in seq order. */
int lks_store_get_gemm_plans(lks_store *s, int64_t run_id,
                             int (*fn)(void *arg, const lks_gemm_algo *plan), void *arg);
/* A rank's training state after step (engine/state.h has the layout of data), kept with
   the run (replaced where one was kept); and read back into *data (malloc'd, *n bytes):
   LKS_E_MISSING (lks_err) where the run kept none of that step and rank. */
int lks_store_put_state(lks_store *s, int64_t run_id, int step, int rank, const void *data,
                        size_t n);
int lks_store_get_state(lks_store *s, int64_t run_id, int step, int rank, void **data,
                        size_t *n);

/* A node's screen ('lockstep screen --db', harness/probe/screen.h): when it started (ISO
   8601 UTC, as suites' started), the host, its mode and result ("pass", "fail", "error"),
   and its JSON document (harness/cli/screen_out.c), kept whole. */
typedef struct lks_screen_rec {
	int64_t screen_id;
	char *started, *host, *mode, *result, *document;
} lks_screen_rec;

/* Stores a screen (rec->screen_id is ignored; *id, where given, gets the new one). */
int lks_store_put_screen(lks_store *s, const lks_screen_rec *rec, int64_t *id);
/* Reads a screen into *out (its strings malloc'd: lks_screen_rec_free): screen_id > 0 that
   one; 0 the latest that started before 'before' (ISO 8601; NULL: the latest of all).
   LKS_E_MISSING (lks_err) where there is none. */
int lks_store_get_screen(lks_store *s, int64_t screen_id, const char *before,
                         lks_screen_rec *out);
void lks_screen_rec_free(lks_screen_rec *r);

/* status: "complete" or "failed". */
int lks_store_end_run(lks_store *s, int64_t run_id, const char *status);
/* The run ends failed, and why (an event of kind LKS_EVENT_RUN_FAILED, no step or rank:
   JUnit's error for the run says it). */
#define LKS_EVENT_RUN_FAILED "run_failed"
int lks_store_fail_run(lks_store *s, int64_t run_id, const char *why);

/* ---- read-back (added with the implementation; checks, diff, list and report use these) ----
 * Stored values come back exactly: doubles and floats bit for bit, uint64 seeds and hashes
 * through an int64 cast. NaN is stored as SQL NULL (SQLite has no NaN) and read back as a
 * quiet NaN: the sign and payload of a NaN are not kept. step or rank < 0 in an event is
 * stored as NULL and read back as -1. Strings handed to a callback are valid only during
 * that call; a callback must not write to the store, and returns 0 to go on or any other
 * value to stop the walk, which then returns that value. */

/* The schema version this build reads and writes (PRAGMA user_version). */
/* 2: the checks table. 3: probe_sessions and probes. 4: a check's parameters (columns of
 checks). 5: the health table and steps.mem_peak (GPU health, NVML). 6: the gemm_algos
   table (the GEMM library's algorithms of a run). 7: steps.metrics (imported runs). 8:
   suites.pinned and suites.pruned (retention, prune.h). 9: the nightly table (night over
   night). 10: import_blocks (an imported run's records, many to a row). 11:
   tensor_blocks (an imported tensor trace's records, tensor_trace.h). 12: states (a
   run's training state after a step, engine/state.h). 13: screens (a node's screen,
   'lockstep screen --db'). 14: suites.finished (when the suite's writer ended) and
   suites.stopped. A file of an earlier version is upgraded when opened: the tables and
   columns added since are created (a column NULL in the rows already there), nothing else
   changes. */
#define LKS_STORE_SCHEMA_VERSION 14

typedef struct lks_run_rec {
	int64_t run_id;
	lks_run_info info;                /* info.suite_id: 0 when the run has no suite */
	const char *status;               /* "incomplete", "complete", "failed" */
	const char *started, *finished;   /* ISO 8601 UTC; finished NULL while incomplete */
} lks_run_rec;

typedef struct lks_event_rec {
	int64_t event_id;
	int step, rank;                   /* -1: none */
	const char *tensor, *kind, *message;  /* tensor, message may be NULL */
	const char *time;                 /* ISO 8601 UTC */
} lks_event_rec;

typedef enum lks_store_table {
	LKS_TABLE_TENSORS = 0,
	LKS_TABLE_STEPS,
	LKS_TABLE_STATS,
	LKS_TABLE_EVENTS,
} lks_store_table;

/* "forward", "backward", "update", "recompute"; NULL for a value out of range. */
const char *lks_phase_name(lks_phase p);

/* The run's status into buf ("incomplete", "complete", "failed"); fails if there is none. */
int lks_store_run_status(lks_store *s, int64_t run_id, char *buf, size_t size);
/* One run (fails if there is none), or all runs in the order they began. */
int lks_store_get_run(lks_store *s, int64_t run_id,
                      int (*fn)(void *arg, const lks_run_rec *run), void *arg);
int lks_store_get_runs(lks_store *s, int (*fn)(void *arg, const lks_run_rec *run), void *arg);
/* Rows of one run in a table. */
int lks_store_count(lks_store *s, int64_t run_id, lks_store_table table, int64_t *n);
/* The run's tensors by seq. */
int lks_store_get_tensors(lks_store *s, int64_t run_id,
                          int (*fn)(void *arg, int seq, const char *name, lks_phase phase),
                          void *arg);
/* Step rows of one step (all ranks), or of every step when step < 0, by (step, rank).
   Fills at most cap rows; *n is the number of rows stored, which may be more than cap. */
/* Every step row of the run, by (step, rank), in a new array (*rows, free it; NULL when
   *n is 0). */
int lks_store_get_all_steps(lks_store *s, int64_t run_id, lks_step_row **rows, int *n);
int lks_store_get_steps(lks_store *s, int64_t run_id, int step, lks_step_row *rows, int cap,
                        int *n);
/* Stat rows of (run, step, rank) by seq; at most cap filled, *n as above. */
int lks_store_get_stats(lks_store *s, int64_t run_id, int step, int rank, lks_stat_row *rows,
                        size_t cap, size_t *n);
/* The run's events in the order they were stored. */
int lks_store_get_events(lks_store *s, int64_t run_id,
                         int (*fn)(void *arg, const lks_event_rec *ev), void *arg);
/* ---- check verdicts (harness/verify/check.c writes them; report and tests read them) ---- */

typedef enum lks_value_type {
	LKS_VALUE_NONE = 0,       /* the verdict has no values */
	LKS_VALUE_REAL,           /* value_a, value_b: floats and doubles (floats exactly) */
	LKS_VALUE_INT,            /* ivalue_a, ivalue_b: counts, or hashes as their bits */
} lks_value_type;

/* A check's parameters: the keys of its [check NAME] section (harness/engine/case.h,
   lks_check_cfg), stored with its verdict so that a reader (report, diff) need not parse
   the case again. Stored whole or not at all: expect NULL stores none of them, and a
   verdict stored so, or by schema version 3 or earlier, reads back with expect, the names
   and the tensors NULL, the doubles NaN and the expected step and rank -1. */
typedef struct lks_check_params {
	const char *a, *b;        /* the runs' names in the case; b NULL for a one-run kind */
	const char *metric;       /* close: the metric compared; NULL: none */
	const char *tensors;      /* close on a tensor statistic: an fnmatch pattern of the
	                             names compared; NULL: all */
	double rtol, atol, floor_db;  /* as the case has them, its defaults included */
	const char *expect;       /* "pass" or "fail"; NULL: not stored */
	int exp_step, exp_rank;   /* the divergence a failing check expects; -1: not given */
	const char *exp_tensor;   /* NULL: not given */
} lks_check_params;

typedef struct lks_check_rec {
	int64_t check_id;         /* read-back only */
	int64_t suite_id;         /* 0: none */
	const char *case_name, *check_name, *kind;
	int64_t run_a, run_b;     /* 0: none (one-run kind, or not run) */
	const char *verdict;      /* pass, fail, expected_fail, unexpected_pass, unsupported,
	                             skipped */
	int step, rank;           /* the divergence; -1: none */
	const char *tensor, *field;  /* NULL: none */
	lks_value_type type;
	double value_a, value_b;  /* LKS_VALUE_REAL; a NaN is stored as NULL */
	int64_t ivalue_a, ivalue_b;  /* LKS_VALUE_INT */
	double abs_err, rel_err;  /* NaN: none */
	int64_t ulp;              /* -1: none */
	const char *message;      /* may be NULL */
	lks_check_params params;
} lks_check_rec;

/* Stores one check's verdict (check_id is ignored), with its parameters when
   params.expect is given ("pass" or "fail"). */
int lks_store_check(lks_store *s, const lks_check_rec *rec);
/* The verdicts of a suite (all suites when suite_id <= 0) in the order they were stored.
   A read-back LKS_VALUE_REAL value that was NaN comes back as NaN; both values NULL read
   back as LKS_VALUE_NONE. */
int lks_store_get_checks(lks_store *s, int64_t suite_id,
                         int (*fn)(void *arg, const lks_check_rec *rec), void *arg);

/* ---- probes (lockstep matrix, bisect, reduce; harness/probe/probe.h) ---- */

typedef struct lks_probe_rec {
	int64_t probe_id;         /* read-back only */
	int64_t session_id;
	const char *combo;        /* a combo's name, or what reduce applied to one */
	const char *cases;        /* the case arguments, blank-separated */
	const char *check_name;   /* NULL: every check */
	const char *outcome;      /* good, bad, skip, crash, timeout */
	int exit_code;            /* -1: none (ended by a signal) */
	int signal;               /* 0: none (it exited) */
	double seconds;
	int64_t suite_id;         /* the suite the probe stored; 0: none */
	const char *output;       /* the end of what it printed; may be NULL */
	const char *started;      /* ISO 8601 UTC */
} lks_probe_rec;

/* kind: "matrix", "bisect" or "reduce"; command: the command line; combos: the file. */
int lks_store_begin_session(lks_store *s, const char *kind, const char *command,
                            const char *combos, int64_t *session_id);
/* The session's result in words (NULL: none) and its end time. */
int lks_store_end_session(lks_store *s, int64_t session_id, const char *result);
/* Stores one probe (probe_id is ignored); *probe_id may be NULL. */
int lks_store_probe(lks_store *s, const lks_probe_rec *rec, int64_t *probe_id);
/* The probes of a session (all sessions when session_id <= 0) in the order they were stored. */
int lks_store_get_probes(lks_store *s, int64_t session_id,
                         int (*fn)(void *arg, const lks_probe_rec *rec), void *arg);
/* The latest suite (0: none), and the latest suite after 'after' with a run of combo (0:
   none): the suite a probe stored, as the probe's process does not say. */
int lks_store_last_suite(lks_store *s, int64_t *suite_id);
int lks_store_combo_suite(lks_store *s, const char *combo, int64_t after, int64_t *suite_id);

/* The SQNR (dB) of run a's gradient of one tensor against run b's at one step
   (harness/verify/sqnr.h); seq orders the gradients as the backward produces them. */
typedef struct lks_sqnr_row {
	int step, seq;
	char tensor[64];
	double db;
} lks_sqnr_row;

/* Stores the rows of the pair (run_a, run_b) in one transaction. */
int lks_store_sqnr_put(lks_store *s, int64_t run_a, int64_t run_b, const lks_sqnr_row *rows,
                       size_t n);
/* The pair's rows in (step, seq) order; none when none were stored. */
int lks_store_sqnr_get(lks_store *s, int64_t run_a, int64_t run_b,
                       int (*fn)(void *arg, const lks_sqnr_row *row), void *arg);

/* ---- imported runs (lockstep import; harness/import/import.h parses the logs) ---- */

/* Numerics (loss, grad norm, lr, ...) enter verdicts; performance (time, throughput,
   memory) never enters a bitwise one. */
typedef enum lks_metric_kind {
	LKS_METRIC_NUMERICS = 0,
	LKS_METRIC_PERFORMANCE = 1,
} lks_metric_kind;

/* "numerics", "performance"; NULL for a value out of range. */
const char *lks_metric_kind_name(lks_metric_kind k);

/* Metrics of one (step, rank) at most, and the longest name, with its NUL. */
#define LKS_METRICS_MAX 32
#define LKS_METRIC_NAME_MAX 64

typedef struct lks_metric_row {
	int step, rank;
	const char *name;         /* canonical (import_metric.c) or as the log wrote it */
	lks_metric_kind kind;
	double value;             /* as written, exactly; NaN stored NULL, +-inf kept */
	int printed;              /* 1 + the decimals the log wrote it with (text: "10.3745"
	                             is 5), its precision as read; 0 none said: a binary
	                             value (an event file's float), a lockstep run's, text
	                             beyond the short form (16 digits and more), or a whole
	                             number ("1511": a count, exact) */
} lks_metric_row;

/* An import is one transaction: begin inserts the run (status incomplete) inside BEGIN
   IMMEDIATE; its blocks of records follow in it; end commits with the run complete and
   its steps and world size set, or (ok 0) rolls everything back, so that a bad log stores
   nothing. Nothing else may use the store between begin and end. */
int lks_store_import_begin(lks_store *s, const lks_run_info *info, int64_t *run_id);
/* A bulk write (a whole import: one large transaction) around begin and end. SQLite's WAL
   writes every page of a transaction twice, into the -wal file and at the checkpoint into
   the database; in rollback-journal mode a page appended to the file is written once and
   needs no journal. So where this connection is the only one on the file, bulk_begin puts
   it in rollback-journal mode (synchronous=FULL) and bulk_end back in WAL; where another
   connection has it open, nothing changes (the write goes through the WAL) and nobody
   waits. A reader that comes meanwhile reads the file as it was, or waits through the busy
   timeout while the pages are written; a connection opened to write waits for the commit. A
   crash in between leaves a hot journal, rolled back by the next opening, which also
   puts the file back in WAL, as does the next opening where bulk_end could not (busy
   for the whole timeout); lks_store_close ends a bulk write left open. Neither call may
   be made inside a transaction. In rollback-journal mode the pages of the write do not
   wait in memory for the commit: the connection keeps 1 MiB of them, the rest are written
   to the file as they come, and each import block stored has the kernel start sending
   what was written to the disk (sync_file_range), so that the commit's fsync has little
   left to wait for. */
void lks_store_bulk_begin(lks_store *s);
void lks_store_bulk_end(lks_store *s);
/* The records of b (harness/store/import_block.h), as the run's block seq (unique in the
   run; blocks are read back in seq order); b is then empty. A (step, rank) must not be
   stored twice (lks_store_import_restart drops one). */
struct lks_block;
int lks_store_import_block(lks_store *s, int64_t run_id, int64_t seq, struct lks_block *b);
/* The run's blocks from seq on, deleted (a speculative read thrown away). */
int lks_store_import_unblock(lks_store *s, int64_t run_id, int64_t seq);
int lks_store_import_end(lks_store *s, int64_t run_id, int steps, int world_size, int ok);
/* Inside the import: rank's rows from step on are dropped (a run restarted from a
   checkpoint logs them again), in the blocks below seq_below. */
int lks_store_import_restart(lks_store *s, int64_t run_id, int rank, int step,
                             int64_t seq_below);
/* Commits what the import stored so far and begins the next transaction (a followed log:
   one transaction per step). On failure nothing is open any more: -1. */
int lks_store_import_commit(lks_store *s);
/* The run's metric rows (of one name, or all when name is NULL) by (step, rank, name):
   of its blocks, and of its steps rows (the imports of schema versions 7 to 9). */
int lks_store_get_metrics(lks_store *s, int64_t run_id, const char *name,
                          int (*fn)(void *arg, const lks_metric_row *row), void *arg);

/* ---- night over night (harness/verify/nightly.h compares; report and JUnit read) ---- */

typedef struct lks_nightly_rec {
	int64_t suite_id;         /* tonight's */
	const char *case_name, *run_name;
	int64_t run_id;           /* tonight's run; 0: gone */
	int64_t prev_run_id;      /* the earlier run; 0: new */
	int64_t prev_suite_id;    /* its suite; 0: new */
	const char *verdict;      /* unchanged, changed, new, gone */
	int fp_equal;             /* 1: the fingerprints and case texts are equal */
	const char *fp_keys;      /* the keys that differ, blank-separated; "" none */
	int step, rank;           /* changed: the first divergence; -1: none */
	const char *tensor, *field;  /* NULL: none */
	const char *message;      /* changed: the divergence in words; may be NULL */
} lks_nightly_rec;

int lks_store_nightly(lks_store *s, const lks_nightly_rec *rec);
/* The verdicts of a suite in the order they were stored. */
int lks_store_get_nightly(lks_store *s, int64_t suite_id,
                          int (*fn)(void *arg, const lks_nightly_rec *rec), void *arg);

#endif
