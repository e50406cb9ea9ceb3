/*
 * tensor_trace.h: per-tensor traces of imported runs (DESIGN.md, Imported runs and tensor
 * traces): what a framework's numerics dump says of each tensor at each (step, rank), in
 * the order the run met them.
 *
 * A record is one tensor at one (step, microbatch, rank): its name (the module and the
 * tensor, "decoder.layers.0.mlp.fc1.activation"), its phase (lockstep's: forward for
 * activations and weights as read, backward for gradients), its statistics as named
 * values (the names of lockstep's own stat rows where the format has them: l2, amax,
 * scale, nonfinite, underflow, saturated; else the format's, made names: min, max, mean,
 * std, l1, dynamic_range, ...), each with the decimals it was written with, and its
 * content hash where the format has one. The records of one (step, rank), in the order
 * read, are its sequence: two runs' sequences are aligned before they are compared
 * (harness/verify/align.h), since two runs of different code rarely log the same ops.
 *
 * Stored (schema 11, table tensor_blocks): a (step, rank)'s records as keyed blocks of the
 * import block layout (import_block.h, version 3), rows seq 0, 1, ...; a tensor's name and
 * phase once in the run's tensors table (seq, as lockstep's own runs name theirs), the
 * record keyed by that seq. A step of every rank is one indexed read, so a check reads a
 * long trace step by step and its memory is one step's.
 */
#ifndef LKS_HARNESS_STORE_TENSOR_TRACE_H
#define LKS_HARNESS_STORE_TENSOR_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "harness/store/import_block.h"
#include "harness/store/import_rec.h"
#include "harness/store/name_index.h"
#include "harness/store/run.h"
#include "harness/store/trace_store.h"

/* The longest tensor name stored, with its NUL: a longer one is bad input. */
#define LKS_TENSOR_NAME_MAX 256
/* Tensors (name, phase) in one trace, at most: a model's modules and ops by the thousands,
   a dump with more is not one run's (the names are held in memory while it is read). */
#define LKS_TENSOR_MAX_NAMES (1 << 20)

/* What a parser found of one tensor (the statistics as rec's metrics, each name once, kind
   numerics; rec.line, rec.step, rec.rank as for a step's record). */
typedef struct lks_tensor_rec {
	lks_import_rec rec;
	char name[LKS_TENSOR_NAME_MAX];
	lks_phase phase;
	int micro;                /* the microbatch; -1: none said */
	int has_hash;
	uint64_t hash;            /* the content hash, as the format has it */
} lks_tensor_rec;

/* A run's tensors by (name, phase), each with its seq, found by hash: what an import and a
   traced rank keep of the names they have met. */
typedef struct lks_tensor_map {
	char **keys;              /* (n) the phase's digit, then the name */
	lks_phase *phases;        /* (n) */
	char **names;             /* (n) each into its key */
	int *seqs;                /* (n) */
	int n, cap;
	lks_name_index index;
} lks_tensor_map;

/* The seq of (name, phase), or -1 when it was not added. */
int lks_tensor_map_find(const lks_tensor_map *m, const char *name, lks_phase phase);
/* (name, phase) added with seq (not there yet). 0, or -1 (lks_err: out of memory). */
int lks_tensor_map_add(lks_tensor_map *m, const char *name, lks_phase phase, int seq);
void lks_tensor_map_release(lks_tensor_map *m);

/* The records of one (step, rank) in the keyed block b (import_block.h), part seq (0, 1,
   ... in order) of them, stored as one row; b is emptied. 0, or -1 (lks_err). */
int lks_store_tensor_block(lks_store *s, int64_t run_id, int step, int rank, int seq,
                           lks_block *b);

/* The trace's tensors, seq 0 .. n - 1 (names[i], phases[i]), into the run's tensors table
   inside the caller's transaction (an import's). 0, or -1 (lks_err). */
int lks_store_tensor_names(lks_store *s, int64_t run_id, char *const *names,
                           const lks_phase *phases, int n);

/* ---- a run traced by lockstep-trace (kernels/trace/lockstep_trace.h): its ranks'
   processes write one run, each its own rows ---- */

/* The backend a traced run is stored with: LKS_TRACE_BACKEND, run.h. */

/* Joins rank to a run of info's case and run names (recipe, backend and world size
   info's): the latest incomplete one of that world size, backend and options (a launch's
   key, or NULL) whose rank has not joined yet, else a new one; one transaction, so that
   ranks opening at once find one another's run. The join is an event of the run (kind 'trace_rank'). 0, or -1 (lks_err). */
int lks_store_trace_join(lks_store *s, const lks_run_info *info, int rank, int64_t *run_id);
/* The seq of (name, phase) in the run's tensors, added after the last when new (another
   rank may have added it already): inside the caller's transaction. 0, or -1. */
int lks_store_trace_tensor(lks_store *s, int64_t run_id, const char *name, lks_phase phase,
                           int *seq);
/* A transaction around a step's writes (BEGIN IMMEDIATE: ranks' processes take turns);
   rollback keeps the error recorded. */
int lks_store_trace_begin(lks_store *s);
int lks_store_trace_commit(lks_store *s);
void lks_store_trace_rollback(lks_store *s);
/* Rank has closed the run, having stored steps to last_step (-1: none): an event of the
   run ('trace_rank_done'); the run's steps raised to it; once every rank has, the run is
   complete. With failed (the training failed; why: NULL or a message) the event is
   'trace_rank_failed' and the run is failed at once, if no rank failed it before. 0, or -1. */
int lks_store_trace_leave(lks_store *s, int64_t run_id, int rank, int last_step, int failed,
                          const char *why);

/* ---- a trace read back, a step at a time ---- */

/* One tensor of a step's sequence: its statistics are vals[first .. first + n). */
typedef struct lks_tentry {
	int tensor;               /* its seq in the run's tensors (name, phase) */
	int micro;                /* -1: none said */
	int has_hash;
	uint64_t hash;
	uint32_t first;
	int n;
} lks_tentry;

typedef struct lks_tval {
	double value;             /* as written; NaN where it was NaN */
	int stat;                 /* its name: stats[stat] */
	int printed;              /* lks_metric_row.printed */
} lks_tval;

typedef struct lks_tensor_trace {
	lks_store *src;
	int64_t run_id;
	int first_step, last_step;  /* the steps stored; last_step -1: none */
	int64_t nblocks;
	/* the statistics' names, run-wide, in the order first read */
	int nstats;
	char **stats;
	int stats_cap;
	lks_name_index sindex;
	/* the step held: -1 none */
	int step;
	int nranks;               /* ranks 0 .. nranks - 1 of it: rank r's entries are
	                             ent[rfirst[r] .. rfirst[r + 1]) */
	size_t *rfirst;
	size_t rfirst_cap;
	lks_tentry *ent;
	size_t nent, ent_cap;
	lks_tval *val;
	size_t nval, val_cap;
} lks_tensor_trace;

/* The tensor trace of run_id (s stays open while it is read): *out NULL when the run holds
   none (lockstep's own runs, loss-level imports). 0, or -1 (lks_err). */
int lks_tensor_trace_open(lks_store *s, int64_t run_id, lks_tensor_trace **out);
void lks_tensor_trace_free(lks_tensor_trace *t);
/* Makes step the one held (nothing to do if it is already; a step not stored holds no
   entries). 0, or -1 (lks_err: the store, a damaged block). */
int lks_tensor_trace_step(lks_tensor_trace *t, int step);
/* Rank's entries of the step held (*e to the first): how many. */
size_t lks_tensor_trace_rank(const lks_tensor_trace *t, int rank, const lks_tentry **e);
/* The index of statistic name, or -1. */
int lks_tensor_trace_stat(const lks_tensor_trace *t, const char *name);

#endif
