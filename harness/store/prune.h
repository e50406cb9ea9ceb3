/*
 * prune.h: retention of the trace store ('lockstep prune'). The latest suites are kept
 * whole; an older suite keeps its runs, steps, events, checks and verdicts and loses its
 * per-tensor stat rows (the bulk of the file) and the states its runs kept to resume
 * from, unless it is pinned. The rows go in bounded
 * transactions, so that a reader (WAL: never blocked) and a writer (blocked at most one
 * batch) go on meanwhile; then VACUUM gives the space back to the file system.
 */
#ifndef LKS_HARNESS_STORE_PRUNE_H
#define LKS_HARNESS_STORE_PRUNE_H

#include <stdint.h>

#include "harness/store/trace_store.h"

/* A suite whose writer has not ended is kept while its latest sign of life (it began, a
   run began or ended, a verdict) is this recent: a night's run or check takes hours, not
   a day, and a writer killed leaves its suite prunable a day later. */
#define LKS_PRUNE_ALIVE_DAYS 1.0

/* Stat rows deleted per transaction: a few milliseconds of writing each. */
#define LKS_PRUNE_BATCH 4000

typedef struct lks_prune_opts {
	int keep;                 /* the latest suites (by id) kept whole; < 0: not by count */
	double keep_days;         /* suites begun within this many days kept whole; < 0: not
	                             by age. Both given: a suite either keeps is kept. */
	int batch;                /* rows per transaction; 0: LKS_PRUNE_BATCH */
} lks_prune_opts;

typedef struct lks_prune_result {
	int suites;               /* suites whose stat rows were removed (now or before) */
	int64_t rows;             /* stat rows removed now */
	int64_t transactions;     /* the transactions that removed them */
} lks_prune_result;

/* Pins (pin 1) or unpins (0) a suite; fails (LKS_E_BAD_INPUT) when there is none. */
int lks_store_pin(lks_store *s, int64_t suite_id, int pin);
/* Removes the stat rows of the suites that o does not keep and that are not pinned, but
   never of the latest suite holding a run (the next suite is compared with it), nor of a
   suite still being written (LKS_PRUNE_ALIVE_DAYS), and
   marks each such suite pruned, in the transaction that removes its first rows. Stops at
   the first error: what was removed stays removed, every transaction whole, its suite
   marked. */
int lks_store_prune(lks_store *s, const lks_prune_opts *o, lks_prune_result *res);
/* Whether the run's suite is marked pruned: its stat rows are gone, or some of them (a
   prune stopped part way, and the next one finishes), or rows came after the prune (a
   writer still running then). Such a run is compared on its step rows alone, and no
   golden is written from it; a run whose suite is not marked lost no stat row. */
int lks_store_run_pruned(lks_store *s, int64_t run_id, int *pruned);
/* VACUUM, then a checkpoint that does not wait for readers: the file shrinks now, or when
   the last reader of an older snapshot is done. */
int lks_store_vacuum(lks_store *s);

#endif
