/*
 * bench_step.h: what the parts of 'lockstep bench step' (bench_step.c) share: runs of a case
 * timed step by step, through a backend wrapper that times every gemm(), quantize() and
 * attention call, and the sides of a comparison run in rounds (bench_stats.c), with the lines that
 * print them. Inside the bench room only.
 */
#ifndef LKS_HARNESS_BENCH_STEP_H
#define LKS_HARNESS_BENCH_STEP_H

#include <stddef.h>
#include <stdint.h>

#include "harness/engine/case.h"
#include "harness/engine/runner.h"
#include "harness/store/run.h"
#include "harness/store/trace_store.h"
#include "kernels/backend.h"
#include "kernels/bg.h"
#include "kernels/pool.h"

/* The kernels part 3 times: gemm(), quantize(), and attn_fwd() with attn_bwd(). */
enum { LKS_STEP_GEMM, LKS_STEP_QUANT, LKS_STEP_ATTN, LKS_STEP_NK };

/* The backend wrapper of part 3: the CPU backend, with the time of every call summed.
   Nanoseconds in atomics, so ranks running as threads could share it (part 3 uses one). */
struct lks_step_timer {
	lks_backend be;         /* the CPU backend's methods, the kernels timed; app: this */
	int64_t ns[LKS_STEP_NK];
};

/* What on_step sees of one run: per-step wall time and loss, the kernel time of each step
   when a timer is attached, and (when capture is set) every stat and step row. */
struct lks_step_rec {
	int cap, n;             /* steps allotted, steps seen */
	double t_prev;          /* lks_now() at the previous on_step, or before lks_run */
	double *dt, *loss;      /* (cap) seconds of the step, mean loss over ranks */
	double *kt[LKS_STEP_NK];  /* (cap) seconds inside each timed kernel during the step */
	struct lks_step_timer *timer;
	int64_t prev[LKS_STEP_NK];
	size_t nstat_rows;      /* stat rows of the last step */
	int nranks;
	int capture;            /* 1: capture the rows; -1: out of memory capturing them */
	lks_stored_run rows;    /* the captured rows, held whole (harness/store/run.h) */
};

/* One side: a run of a case in one configuration, and what its timed rounds measured. */
struct lks_step_side {
	const char *label;
	const lks_case *c;
	const lks_run_cfg *run;
	int no_trace;
	lks_store *store;           /* NULL: nothing stored */
	int threads;                /* the runner's threads option (0: cores); more than one
	                               gives a single rank its background thread */
	const lks_backend *be;      /* a device backend (--backend) opened once, and its */
	void *bectx;                /* context; NULL: the default (cpu) */
	int wrap;                   /* through the timing backend with its own pool ... */
	int gemm_threads;           /* ... of this many GEMM threads */
	lks_pool *pool;
	struct lks_step_timer timer;
	struct lks_step_rec rec;
	lks_bg_counts bg;           /* the background threads' work, summed over timed rounds */
	double wall;                /* s: every step's time (step 0 too), summed likewise */
	int steps;                  /* steps in wall */
	double final_loss;
};

struct lks_step_sides {
	struct lks_step_side *side;
	int n, steps, rounds;
	double *t;                  /* (rounds, n) s: mean step time of a run */
	double *kt[LKS_STEP_NK];    /* (rounds, n) s per step inside each timed kernel */
};

/* A record of up to steps steps; capture: keep every row of the next run (in rows). */
int lks_step_rec_init(struct lks_step_rec *r, int steps, int capture);
void lks_step_rec_release(struct lks_step_rec *r);
/* One run of c, recorded in rec; fails if it stopped early. */
int lks_step_run(const lks_case *c, const lks_run_cfg *run, lks_store *store,
                 lks_runner_opts o, struct lks_step_rec *rec, lks_run_result *res);

/* n sides of steps-step runs, timed in rounds; side capture (-1: none) keeps its rows. */
int lks_step_sides_init(struct lks_step_sides *S, struct lks_step_side *side, int n,
                        int steps, int rounds, int capture);
void lks_step_sides_release(struct lks_step_sides *S);
/* The rounds, after warmup untimed ones, into S->t and S->kt. */
int lks_step_sides_time(struct lks_step_sides *S, int warmup);
/* The median over rounds of num / the step time of side k, both (rounds, n). */
double lks_step_share(const struct lks_step_sides *S, const double *num, int k);

/* The command's arguments (bench_step.c), as the parts read them. */
struct lks_step_args {
	const char *case_path, *run_name, *base;
	const char *backend;    /* --backend; NULL: the cpu, every part */
	const lks_backend *be;  /* opened, with bectx, for part 1 when backend is given */
	void *bectx;
	const char **sets;      /* (argc) the --set overrides */
	int nsets, steps, steps_given, reps, threads, keep;
	int reps1, reps3, reps5; /* rounds of parts 1, 3 and 5 */
	unsigned parts;          /* --parts: bit k for part k (2 comes with 1); 0: all */
};

/* Whether part k runs. */
#define LKS_STEP_PART(a, k) (!(a)->parts || ((a)->parts >> (k) & 1))

/* Parts 4, 5 and 6 (bench_step_parts.c): the loss gap of every run of c to its BF16 run;
   the background thread against the GEMM threads, run on one rank (its sides into S, then
   printed); FSDP against DP on the case's ranks (the cases it loads into dp and fsdp,
   *have of them, for the caller to release). */
int lks_step_gap(const struct lks_step_args *a, const lks_case *c);
int lks_step_bg(const struct lks_step_args *a, const lks_case *c, const lks_run_cfg *run,
                struct lks_step_side *side, struct lks_step_sides *S);
void lks_step_print_bg_part(const struct lks_step_sides *S);
int lks_step_fsdp(const struct lks_step_args *a, const lks_case *c, const char *name,
                  lks_case *dp, lks_case *fsdp, int *have);
/* Part 7: tensor parallel against DP on the case's ranks, each untraced and traced. */
int lks_step_tp(const struct lks_step_args *a, const lks_case *c, const char *name);

/* The column heads; the median step time of side k and, for k other than base, the change
   per round against it (median, interquartile range, min-max, rounds); what the
   background thread did in a side's timed runs. */
void lks_step_print_head(int width, const char *vs);
void lks_step_print_side(const struct lks_step_sides *S, int k, int base, int width);
void lks_step_print_bg(const struct lks_step_side *s);

#endif
