/*
 * runner.h: one run of a case: W data-parallel ranks (threads, or processes x threads)
 * trained step by step in lockstep, gradients all-reduced in fixed rank order through a
 * communicator (kernels/comm.h), AdamW on every replica, every step traced into the store
 * (DESIGN.md, Ranks and the distributed engine).
 */
#ifndef LKS_HARNESS_RUNNER_H
#define LKS_HARNESS_RUNNER_H

#include <stdint.h>
#include <stdio.h>

#include "harness/engine/case.h"
#include "harness/store/trace_store.h"

struct lks_model;

typedef struct lks_runner_opts {
	int steps;              /* 0: the case's */
	int threads;            /* CPU threads for the GEMMs of a single-rank run; 0: cores */
	FILE *progress;         /* NULL: silent */
	int progress_tty;       /* rewrite one line instead of printing lines */
	int64_t suite_id;
	const char *fingerprint;  /* JSON, stored with the run */
	const char *combo;
	/* called after every step with all ranks' rows (names: the run's tensors by seq) */
	void (*on_step)(void *arg, const lks_step_row *steps, int nsteps,
	                const lks_stat_row *stats, size_t nstats, char *const *names, int nnames);
	void *on_step_arg;
	/* called after every step's all-reduce, before clipping, with the summed gradient
	   (m->nparams floats, laid out as m->t), in rank 0's thread */
	void (*on_grads)(void *arg, int step, const float *g, const struct lks_model *m);
	void *on_grads_arg;
	/* the backend of the ranks (NULL: the registry's default, cpu, on the runner's GEMM
	   pool) and its context (NULL: the runner opens the backend once per rank of the
	   process, lks_be_open_rank, with a rank's threads, and closes them; given: every rank
	   shares it); a wrapper can time or record every kernel call */
	const struct lks_backend *backend;
	void *backend_ctx;
	/* with a backend: a single rank's threads for the optimizer, tracing and the store,
	   best the backend's own, so that no more threads run than cores (NULL: the rank's
	   thread does all of it) */
	struct lks_pool *pool;
	int no_trace;           /* skip per-tensor stats and hashes (benchmarks only) */
	/* this process's end of a job of processes (kernels/comm.h; NULL: this process alone):
	   every process calls lks_run for the same runs in the same order, and the run's ranks
	   are laid out over them (lks_comm_group); only rank 0's process gets a store, results
	   and callbacks. A failure ends the job (lks_comm_abort). */
	struct lks_comm *job;
	const char *overrides;  /* the --set overrides, stored with the run's options */
} lks_runner_opts;

typedef struct lks_run_result {
	int64_t run_id;         /* 0 without a store */
	int steps;
	double first_loss, last_loss;  /* global mean loss per token */
	int nonfinite_events;   /* ranks that met NaN/Inf before an all-reduce */
	double seconds;
} lks_run_result;

/* Runs one run of case c; store may be NULL (nothing recorded). A numerical problem is a
   result (events, status), never an error; errors are infrastructure failures. */
int lks_run(const lks_case *c, const lks_run_cfg *run, lks_store *store,
            const lks_runner_opts *opts, lks_run_result *res);

/* The memory lks_run takes for run of case c (every rank's replica, activations and
   operands, the optimizer state, a step's trace rows), estimated from the sizes before
   anything is allocated: a double, since sizes that do not fit are what it is for; -1
   (lks_err) when out of memory. */
double lks_run_bytes(const lks_case *c, const lks_run_cfg *run);

#endif
