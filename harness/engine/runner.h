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

/* The device of a rank, where the backend names one (describe's "uuid": a GPU) */
typedef struct lks_rank_device {
	int rank;               /* the run's rank */
	int first;              /* the first rank of its process: ranks of one process share it */
	int ordinal;            /* the backend's index of the device in its process (CUDA's,
	                           after CUDA_VISIBLE_DEVICES); -1: not said */
	char uuid[48];          /* "GPU-8d5e…" as nvidia-smi writes it */
	char name[48];          /* "NVIDIA H100 80GB HBM3" */
	char cc[8];             /* compute capability, "9.0": the golden class's architecture */
	char host[40];          /* the host of its process */
} lks_rank_device;

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
	   shares it where the backend's memory is the host's or the process has one rank, and
	   else it is not used: a device's context, its stream and scratch, is one rank's); a
	   wrapper can time or record every kernel call */
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
	const char *const *sets;  /* the --set overrides: those that reach the run are stored */
	int nsets;                /* with its options (lks_case_set_reaches) */
	const char *mark;         /* stored after them ("bench step"), as an override is */
	/* where this process sits on its host: the launcher's local rank (launch.h), -1 when
	   not known; with the job's rank and size it places the process's ranks on the host's
	   devices in rank order (lks_launch_rank_slot) */
	int local_rank;
	/* the longest a rank waits for the others in a device collective (joining, each
	   all-reduce, leaving) before it ends the run, every rank's: 0: LKS_RUN_TIMEOUT_S */
	double timeout_s;
	/* called in every process once its ranks have their devices, before the first step,
	   with those ranks' devices (n of them); not called where the backend names none */
	void (*on_devices)(void *arg, const lks_rank_device *d, int n);
	void *on_devices_arg;
	/* the run's training state (engine/state.h) kept in the store after a step: every
	   state_every-th ((step + 1) % state_every == 0; 0: none), and the steps of state_at
	   (nstate_at of them) */
	int state_every;
	const int *state_at;
	int nstate_at;
	/* resume_run != 0: the run starts from the state run resume_run of the store kept
	   after step resume_step, and trains the steps after it (only those are stored); in
	   a job only process 0's id is read (the others: any id but 0) */
	int64_t resume_run;
	int resume_step;
	const char *resume_name;  /* that run as the stored options name it (a case's run name,
	                             the same every night); NULL: by its id */
	int stop_at;              /* > 0: the run ends before this step, its schedule still that
	                             of all its steps (a replay of one step) */
} lks_runner_opts;

#define LKS_RUN_TIMEOUT_S 600.0

typedef struct lks_run_result {
	int64_t run_id;         /* 0 without a store */
	int steps;              /* the last step trained + 1 */
	int first_step;         /* the first trained: 0, or the one after a resumed state */
	double first_loss, last_loss;  /* global mean loss per token */
	int nonfinite_events;   /* ranks that met NaN/Inf before an all-reduce */
	double seconds;
} lks_run_result;

/* Runs one run of case c; store may be NULL (nothing recorded). A numerical problem is a
   result (events, status), never an error; errors are infrastructure failures (-1), or
   LKS_E_BAD_INPUT or LKS_E_MISSING where a resumed run's state is not there or not of
   its model (nothing is stored then). */
int lks_run(const lks_case *c, const lks_run_cfg *run, lks_store *store,
            const lks_runner_opts *opts, lks_run_result *res);
/* Run of case c stored failed without training: its backend (named backend) cannot be
   opened here, which its failure's event says (lks_store_fail_run); its checks then say
   it did not complete, as for a run that failed. Its id into *run_id; 0, or -1. */
int lks_run_store_left_out(const lks_case *c, const lks_run_cfg *run, lks_store *store,
                           const lks_runner_opts *o, const char *backend, const char *why,
                           int64_t *run_id);

/* Whether the ranks' devices d (W, in rank order) may train one run: no GPU shared by
   two processes, and one GPU class (compute capability) for all. 0, or -1 with why. */
int lks_devices_check(const lks_rank_device *d, int W, char *why, size_t n);

/* The memory lks_run takes for run of case c (every rank's replica, activations and
   operands, the optimizer state, a step's trace rows), estimated from the sizes before
   anything is allocated: a double, since sizes that do not fit are what it is for; -1
   (lks_err) when out of memory. */
double lks_run_bytes(const lks_case *c, const lks_run_cfg *run);

/* FSDP's shards of the flat vector of n floats over an fsdp group of fsdp ranks
   (runner_fsdp.c): S floats each, n / fsdp rounded up to a multiple of 16, the vector
   padded to fsdp x S; and the shard that rank of run holds (the mesh dp x fsdp x tp, tp
   innermost). */
size_t lks_fsdp_shard_size(size_t n, int fsdp);
int lks_fsdp_shard_of(const lks_run_cfg *run, int rank);

#endif
