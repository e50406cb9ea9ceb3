/*
 * run_trace.h: a stored run's trace as the checks and 'lockstep diff' read it: the tensors
 * by seq (with the occurrence of each name and phase, so that a checkpointed run's
 * recomputed activations pair with the forward's), every step row of every rank, and the
 * stats of all ranks at one step at a time.
 */
#ifndef LKS_HARNESS_RUN_TRACE_H
#define LKS_HARNESS_RUN_TRACE_H

#include <stdint.h>

#include "harness/store/trace_store.h"

typedef struct lks_run_trace {
	int64_t run_id;
	int nt;                   /* tensors, by seq */
	int cap;
	char **names;             /* (nt) */
	lks_phase *phases;        /* (nt) */
	int *occ;                 /* (nt) earlier tensors of the same name and phase */
	int nsteps, W;            /* steps stored (the last + 1); ranks of the run */
	lks_step_row *steps;      /* (nsteps, W) */
	unsigned char *have_step; /* (nsteps, W) */
	int cur;                  /* the step whose stats are loaded; -1: none */
	lks_stat_row *stats;      /* (W, nt) of step cur */
	unsigned char *have;      /* (W, nt) */
	lks_stat_row *buf;        /* (nt + 1) what one read returns */
} lks_run_trace;

/* Reads the run's tensors and step rows; release with lks_run_trace_release (also after a
   failure). */
int lks_run_trace_load(lks_store *s, int64_t run_id, lks_run_trace *t);
void lks_run_trace_release(lks_run_trace *t);
/* Loads the stats of every rank at step (rows by seq; have says which were stored). */
int lks_run_trace_step(lks_store *s, lks_run_trace *t, int step);
/* The stats row of (rank, seq) at the loaded step, or NULL when it was not stored. */
const lks_stat_row *lks_run_trace_row(const lks_run_trace *t, int rank, int seq);
/* The step row of (step, rank), or NULL. */
const lks_step_row *lks_run_trace_step_row(const lks_run_trace *t, int step, int rank);
/* The seq of the tensor called name in phase with occurrence occ; -1 if none. */
int lks_run_trace_find(const lks_run_trace *t, const char *name, lks_phase phase, int occ);

#endif
