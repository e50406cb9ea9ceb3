/*
 * runner_impl.h: the runner's state, shared by runner.c (the steps) and runner_setup.c (a
 * run's ranks, contexts and communicators made and released). Private to the engine.
 */
#ifndef LKS_HARNESS_RUNNER_IMPL_H
#define LKS_HARNESS_RUNNER_IMPL_H

#include <stdatomic.h>
#include <stdint.h>

#include "harness/engine/data.h"
#include "harness/engine/model.h"
#include "harness/engine/runner.h"
#include "kernels/bg.h"
#include "kernels/comm.h"
#include "kernels/pool.h"

#define LKS_REDUCE_CHUNK 65536  /* elements per clip or update task */

struct lks_runner {
	const lks_case *c;
	const lks_run_cfg *run;
	lks_model m;
	lks_data data;
	int W, batch, steps;    /* ranks, sequences per rank, steps */
	int warmup;             /* the schedule's over steps (lks_case_warmup) */
	int first, L;           /* this process's ranks: first, first + 1, ..., first + L - 1 */
	lks_rank *ranks;        /* (L) each with all it owns: context, tensors, communicator end,
	                           optimizer state, staging, its failure (model.h) */
	lks_pool *rank_pool;    /* L threads, one per rank; NULL for one rank */
	lks_pool *gemm_pool;    /* the GEMM threads of a single-rank run */
	const lks_backend *be;  /* the run's backend (a rank's context is its own, or shared) */
	int opened;             /* contexts the runner opened (and closes), from rank index 0 */
	int devcomm;            /* the ends take device memory (lks_be_comm): no staging */
	char *devices;          /* every rank's device, for the run's fingerprint (the root's
	                           process, where the backend names devices); else NULL */
	/* what rank 0 gathers of every rank's step, in rank order (the root's process) */
	size_t *counts;         /* (2W) the bytes each rank sent of its two gathers */
	lks_stat_row *gathered; /* every rank's trace rows of the step */
	size_t ngathered;
	lks_step_row *rows;     /* (W) this step's step rows */
	struct lks_rank_out {   /* what a rank sends rank 0 of its step */
		lks_step_row row;
		double loss;        /* the sum over its tokens */
		int nan_tensor;     /* the step's first non-finite gradient tensor, or -1 */
		int64_t nan_count;  /* its non-finite values */
		char nan_act[96];   /* the tensor of a non-finite partial before the tp group's
		                       sum (model.h), "" where none */
		int64_t nan_act_count;
	} *outs;                /* (W) */
	lks_update_part *parts; /* (m.nt) AdamW's parts, by offset, for a backend's update */
	float lr, bc1, bc2, b1pow, b2pow;
	int step;               /* the step under way */
	int step0;              /* the run's first step: 0, or the one after a resumed state */
	const lks_runner_opts *o;
	lks_pool *pool1;        /* a single rank's threads for the optimizer */
	lks_bg *bg;             /* a single rank's background thread: tracing, the store */
	struct lks_store_job {  /* the last step's rows on their way into SQLite */
		lks_store *store;
		int64_t run_id;
		lks_step_row *rows;
		int nrows;
		lks_stat_row *stats;  /* owned: freed once written */
		size_t nstats;
		int rc;
		char err[512];
	} sj;
	lks_jobs store_jobs;
};

/* A rank's update (runner_update.c): the norm of its summed gradient into *gnorm, the clip
   and AdamW of its own parameters (all, or its FSDP shard); delayed scaling's step end. */
int lks_rank_update(struct lks_runner *R, lks_rank *r, double *gnorm);
int lks_step_delayed(struct lks_runner *R, lks_rank *r);

/* FSDP (runner_fsdp.c): a rank's shard, its groups and buffers, made in its own thread at
   its first step (the splits are collectives); its gradient reduce-scattered, reduced over
   dp and gathered (the gathered sum on the host, lks_fsdp_gathered); its parameters
   gathered from the shards after the update; AdamW's parts within its shard. */
int lks_fsdp_setup(struct lks_runner *R, lks_rank *r);
int lks_fsdp_grads(struct lks_runner *R, lks_rank *r);
int lks_fsdp_params(struct lks_runner *R, lks_rank *r);
const float *lks_fsdp_gathered(const lks_rank *r);
const lks_update_part *lks_fsdp_update_parts(const lks_rank *r, int *n);
void lks_fsdp_release(lks_rank *r);
/* Closes the rank's ends of its fsdp and dp groups (all ranks' at once where they are a
   device communicator's: leaving one waits for every rank's). */
void lks_fsdp_close_groups(lks_rank *r);

/* Everything a run needs before its first step (R is zeroed first), and all of it released
   again (also after a failed init). */
int lks_runner_init(struct lks_runner *R, const lks_case *c, const lks_run_cfg *run,
                    const lks_runner_opts *o);
void lks_runner_release(struct lks_runner *R);
/* Waits for the last step's rows on their way into the store; 0, or -1 with lks_err. */
int lks_runner_store_wait(struct lks_runner *R);

#endif
