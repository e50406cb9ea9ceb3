/*
 * run.h: one stored run in memory, whatever it was read from: the trace store
 * (lks_stored_run_load), a golden file (lks_golden_read, golden.h), or the rows a run hands
 * its on_step callback (lks_stored_run_add_step). Checks, the golden comparison, 'lockstep
 * diff', 'lockstep golden update', 'lockstep bench step' and the report all read this one
 * struct.
 *
 * What it holds:
 *   - what the run was: case, run, recipe, options, backend, world size (W), steps and
 *     seed as declared, status, and the fingerprint (the JSON, and the fields people read:
 *     lockstep version and commit, compiler, ISA path);
 *   - the tensors by seq, with the occurrence of each (name, phase): how many earlier
 *     tensors have the same name and phase, so that a checkpointed run's k-th recompute of
 *     an activation pairs with the k-th forward of it;
 *   - every step row, by (step, rank);
 *   - the stat rows, one step at a time (lks_stored_run_step, then lks_stored_run_row).
 *
 * Stat rows are the bulk of a trace: steps x ranks x tensors, millions for a long run. A
 * run read from the store therefore holds one step's rows at a time, read when a walk
 * reaches that step (W small queries, as many as the walk needs: a check that fails at
 * step 3 reads 4 steps); LKS_LOAD_WHOLE reads them all instead, for what needs them all
 * at once. A golden file and captured rows are held whole: they are in memory already,
 * and golden files are kept small (tens of steps). The step rows are always held whole:
 * one per step and rank.
 */
#ifndef LKS_HARNESS_RUN_H
#define LKS_HARNESS_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "harness/store/name_index.h"
#include "harness/store/trace_store.h"

typedef struct lks_stored_run {
	/* what the run was: strings owned; from the store every one ("" where the run has
	   none), from a golden file case, run, recipe, options, backend and status (the
	   others NULL) */
	int64_t id;               /* in the store; 0: not from a store */
	int64_t suite_id;         /* 0: none */
	char *case_name, *case_path, *case_text, *run_name, *recipe, *options, *backend, *combo;
	char *status;             /* "complete", "incomplete", "failed"; a golden's: complete */
	char *started, *finished; /* ISO 8601 UTC */
	char *fingerprint;        /* the JSON object */
	int W, steps;             /* ranks (world size) and runs.steps: a trained run's steps
	                             as declared, an import's last step logged (import.h) */
	uint64_t seed;
	char version[64], compiler[128], isa[32];  /* from the fingerprint, for people */

	/* the trace */
	int nt;                   /* tensors, by seq */
	char **names;             /* (nt) */
	lks_phase *phases;        /* (nt) */
	int *occ;                 /* (nt) earlier tensors of the same name and phase */
	int nsteps;               /* the last step stored + 1 */
	int nsteprows;
	lks_step_row *steprows;   /* (nsteprows) by (step, rank) */
	size_t nstats;            /* held whole: every stat row by (step, rank, seq); */
	lks_stat_row *stats;      /* else (from a store) 0 and NULL */

	/* an imported run's metrics (import_rec.h; run_metrics.c), held whole: names by index,
	   values by (step, rank, index), as written; none for lockstep's own runs */
	int nm;                   /* metric names */
	char **mnames;            /* (nm) */
	lks_metric_kind *mkinds;  /* (nm) */
	size_t nmrows;
	/* 16 bytes a value: a long log's runs are held whole, two at a time (diff, checks) */
	struct lks_mrow { double value; int step; uint16_t rank, m; } *mrows;  /* (nmrows) */
	size_t mrows_cap;
	/* per row, its precision as read (lks_metric_row.printed: 1 + decimals, 0 none said);
	   NULL: none said of any (a binary log's, a lockstep run's, a golden file's) */
	unsigned char *mprinted;
	size_t mprinted_cap;
	int mnames_cap;
	/* private: where the rows of (step, rank) begin in mrows, mfirst[step * mfirst_w +
	   rank] to the next entry (lks_stored_run_metrics_index); NULL: none made, or rows
	   added since (a binary search finds them) */
	size_t *mfirst;
	int mfirst_w, mfirst_steps;
	int mhint;                /* the metric index after the last a name was found at */
	lks_name_index mindex;    /* private: mnames by hash */

	/* an imported tensor trace (tensor_trace.h), read a step at a time from the store
	   whatever the load (the store stays open while r is read); NULL: none */
	struct lks_tensor_trace *tt;

	/* private: the stats of one step */
	lks_store *src;           /* non-NULL: stat rows are read from here step by step */
	int cur;                  /* the step lks_stored_run_row answers for; -1: none */
	const lks_stat_row **at;  /* (W, nt) its rows; NULL: none stored */
	lks_stat_row *buf;        /* (W * nt) rows read from src */
	int at_cap;               /* entries of at */
	size_t buf_cap, stats_cap;
	int names_cap, steprows_cap;
} lks_stored_run;

typedef enum lks_run_load {
	LKS_LOAD_INFO = 0,        /* what the run was, no trace */
	LKS_LOAD_TRACE,           /* and tensors and step rows; stat rows step by step */
	LKS_LOAD_WHOLE,           /* and every stat row at once (into stats) */
} lks_run_load;

/* Whether r is an import ('lockstep import', import = in a case: backend import:FMT),
   whose metrics are its own and whose steps is its last step, not a count. */
static inline int lks_stored_run_imported(const lks_stored_run *r)
{
	return r->backend && strncmp(r->backend, "import:", 7) == 0;
}

/* The backend a run traced by lockstep-trace is stored with (tensor_trace.h). */
#define LKS_TRACE_BACKEND "trace"

/* Whether a run of that backend has for steps its last step, not a count: an import's, and
   a traced run's. */
static inline int lks_backend_steps_last(const char *backend)
{
	return backend && (strncmp(backend, "import:", 7) == 0
	                   || strcmp(backend, LKS_TRACE_BACKEND) == 0);
}

/* Whether r's steps is its last step, not a count: an import's, and a traced run's. */
static inline int lks_stored_run_steps_last(const lks_stored_run *r)
{
	return lks_backend_steps_last(r->backend);
}

/* An empty run (no info, no trace, cur -1), to fill by hand or with the add functions. */
void lks_stored_run_init(lks_stored_run *r);
/* Frees what r holds and empties it; also after a failed load. */
void lks_stored_run_release(lks_stored_run *r);

/* The run run_id of store s, as deep as how. With LKS_LOAD_TRACE, s must stay open while
   r is read. Fails (-1, lks_err) when there is no such run. */
int lks_stored_run_load(lks_store *s, int64_t run_id, lks_run_load how, lks_stored_run *r);
/* What the run was, from a row of the runs table (lks_store_get_run(s)'s callback). */
int lks_stored_run_set_info(lks_stored_run *r, const lks_run_rec *rec);

/* Adds tensor seq (name, phase): seq must be nt (the next one), or a known seq of the same
   name and phase (then nothing changes). 1 when it is neither (the caller words it), -1
   when out of memory. */
int lks_stored_run_add_tensor(lks_stored_run *r, int seq, const char *name, lks_phase phase);
/* Appends a step row or a stat row to a run held whole; rows come in order ((step, rank),
   (step, rank, seq)), which the caller has checked. */
int lks_stored_run_push_steprow(lks_stored_run *r, const lks_step_row *row);
int lks_stored_run_push_stat(lks_stored_run *r, const lks_stat_row *row);
/* Appends one step of every rank as the runner hands it to on_step: nsteps step rows by
   rank, nstats stat rows by (rank, seq). */
int lks_stored_run_add_step(lks_stored_run *r, const lks_step_row *steps, int nsteps,
                            const lks_stat_row *stats, size_t nstats);

/* The stat rows of step, by (rank, seq): in stats for a run held whole, else read into a
   buffer of r, valid until the next call for r. */
int lks_stored_run_stats(lks_stored_run *r, int step, const lks_stat_row **rows, size_t *n);
/* Makes step the one lks_stored_run_row answers for (nothing to do if it is already). */
int lks_stored_run_step(lks_stored_run *r, int step);
/* The stat row of (rank, seq) at that step, or NULL when none was stored. */
const lks_stat_row *lks_stored_run_row(const lks_stored_run *r, int rank, int seq);
/* The step row of (step, rank), or NULL. */
const lks_step_row *lks_stored_run_step_row(const lks_stored_run *r, int step, int rank);
/* ---- an imported run's metrics (run_metrics.c) ---- */

/* Reads the metric rows of an imported run (backend import:FMT; else none, nm 0);
   lks_stored_run_load calls it. */
int lks_stored_run_load_metrics(lks_store *s, lks_stored_run *r);
/* Appends a value of metric name (kind) at (step, rank), printed with printed - 1
   decimals (lks_metric_row.printed; 0: none said): rows come by (step, rank), which the
   caller has checked; a name seen again keeps its first kind. */
int lks_stored_run_add_metric(lks_stored_run *r, int step, int rank, const char *name,
                              lks_metric_kind kind, double value, int printed);
/* The printed (as above) of the value v, which lks_stored_run_metric or a row gave. */
int lks_stored_run_printed(const lks_stored_run *r, const double *v);
/* The index of metric name, or -1. */
int lks_stored_run_metric_find(const lks_stored_run *r, const char *name);
/* The value of metric m at (step, rank), or NULL when none was stored. */
const double *lks_stored_run_metric(const lks_stored_run *r, int step, int rank, int m);
/* The rows of (step, rank), *rows to the first, in the order they came; how many (0:
   none). A walk over a step visits only what was logged there. */
size_t lks_stored_run_metric_rows(const lks_stored_run *r, int step, int rank,
                                  const struct lks_mrow **rows);
/* After the rows are all in, by (step, rank): an index that makes each lookup of
   lks_stored_run_metric one read where the (step, rank) pairs are dense (a log's steps of
   every rank; not made for sparse ones, or out of memory: a binary search then). */
void lks_stored_run_metrics_index(lks_stored_run *r);
/* Two runs to compare, one imported and one lockstep's own: gives the lockstep run its
   loss, grad_norm and lr per step and rank as metrics (the three lockstep export writes),
   so a case may hold a log against a run it trains. Nothing when both or neither hold
   metrics. */
int lks_stored_run_metrics_pair(lks_stored_run *a, lks_stored_run *b);
/* Frees the metrics (lks_stored_run_release calls it). */
void lks_stored_run_metrics_release(lks_stored_run *r);

/* The seq of the tensor called name in phase with occurrence occ; -1 if none. */
int lks_stored_run_find(const lks_stored_run *r, const char *name, lks_phase phase, int occ);

/* Room for n + 1 elements of size in *p (capacity *cap elements, doubled as needed). */
int lks_room_for(void **p, size_t *cap, size_t n, size_t size);

/* The metric rows of stored run run_id by (step, rank, name) (run_metrics.c): an imported
   run's metrics table, or a lockstep run's loss, grad_norm and lr per step and rank (its
   step rows). fn returns 0 to go on; 0, -1 (lks_err), or what fn returned. */
int lks_run_metrics(lks_store *s, int64_t run_id,
                    int (*fn)(void *arg, const lks_metric_row *row), void *arg);

#endif
