/*
 * trace_store.h: the SQLite database of runs and their traces (DESIGN.md, Trace).
 *
 * Tables (schema version in PRAGMA user_version; WAL; writes batched in transactions):
 *   suites   one invocation of lockstep over cases
 *   runs     case, run, recipe and options, backend, world size, seed, steps, status,
 *            the case text, suite, combo, fingerprint (JSON)
 *   tensors  per run: the traced tensors in execution order (seq, name, phase)
 *   steps    per run, step and rank: loss, grad norm, lr, step time, non-finite count
 *   stats    per run, step, rank and tensor seq: L2 norm, amax, non-finite count, FP8 scale,
 *            underflow and saturation counts, XXH3-64 hash
 *   events   per run: notable happenings, e.g. the first non-finite value before an
 *            all-reduce (step, rank, tensor)
 * A run is inserted with status 'incomplete' and set to 'complete' only when its last step
 * is stored, so a run killed at any moment stays 'incomplete' and earlier runs are intact.
 */
#ifndef LKS_HARNESS_TRACE_STORE_H
#define LKS_HARNESS_TRACE_STORE_H

#include <stddef.h>
#include <stdint.h>

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
	int world_size, steps;
	uint64_t seed;
	const char *combo;        /* may be NULL */
	const char *fingerprint;  /* JSON object */
} lks_run_info;

typedef struct lks_step_row {
	int step, rank;
	double loss, grad_norm, lr, step_time;
	int64_t nonfinite;
} lks_step_row;

typedef struct lks_stat_row {
	int step, rank, seq;      /* seq: the tensor's position in execution order */
	double l2;
	float amax, scale;        /* scale: NaN when the tensor is not quantized */
	int64_t nonfinite, underflow, saturated;
	uint64_t hash;
} lks_stat_row;

/* Creates the file and schema if needed; refuses (lks_err) a database of another schema
   version or a file that is not a lockstep database, touching nothing. */
int lks_store_open(const char *path, lks_store **out);
void lks_store_close(lks_store *s);

int lks_store_begin_suite(lks_store *s, const char *command, int64_t *suite_id);
int lks_store_begin_run(lks_store *s, const lks_run_info *info, int64_t *run_id);
/* The traced tensors of a run, in execution order: seq = index. */
int lks_store_tensors(lks_store *s, int64_t run_id, const char *const *names,
                      const lks_phase *phases, int n);
/* One step of all ranks, in one transaction. */
int lks_store_step(lks_store *s, int64_t run_id, const lks_step_row *steps, int nsteps,
                   const lks_stat_row *stats, size_t nstats);
int lks_store_event(lks_store *s, int64_t run_id, int step, int rank, const char *tensor,
                    const char *kind, const char *message);
/* status: "complete" or "failed". */
int lks_store_end_run(lks_store *s, int64_t run_id, const char *status);

#endif
