/*
 * case.h: a declared case, parsed from an INI file in cases/ (DESIGN.md, A case file).
 *
 *   [case]   description, steps, seed, world_size
 *   [model]  vocab, hidden, ffn, layers, seq, batch (per rank at the case's world_size)
 *   [optim]  lr, min_lr, warmup, beta1, beta2, eps, weight_decay, clip (0: no clipping)
 *   [run NAME]    recipe, checkpoint = none|blocks, gemm = reference|cublaslt,
 *                 backend = cpu|cuda (a name of the backend registry, kernels/backend.h;
 *                 not given: the invocation's --backend), world_size (keeps the global batch),
 *                 amax_history, amax_algo = max|most_recent (fp8_delayed), margin,
 *                 inject (a planted fault, fault.h)
 *   [check NAME]  kind, a, b, metric, tensors, rtol, atol, floor_db, expect = pass|fail,
 *                 step, rank, tensor (the divergence a failing check is expected to name)
 *
 * A run's recipe is a row of the recipe table (recipe.h), a check's kind a row of the
 * check-kind table (check_kind.h): their names and what each takes come from there.
 *
 * The global batch of a step is model.batch x case.world_size sequences; a run with its own
 * world_size takes global / world_size per rank (it must divide), so runs of one case see
 * the same data whatever their world size.
 */
#ifndef LKS_HARNESS_CASE_H
#define LKS_HARNESS_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "harness/engine/check_kind.h"
#include "harness/engine/fault.h"
#include "harness/engine/recipe.h"

#define LKS_NAME_MAX 64
/* The most steps a case may train: [case] steps, --set case.steps and run --steps alike. */
#define LKS_CASE_STEPS_MAX 10000000

typedef struct lks_model_cfg {
	int vocab, hidden, ffn, layers, seq;
	int batch;              /* sequences per rank at the case's world_size */
	int attention;          /* 0 none (MLP blocks only), 1 causal (model.h) */
	int heads, head_dim;    /* the attention's; head_dim defaults to hidden / heads */
} lks_model_cfg;

typedef struct lks_optim_cfg {
	float lr;               /* peak learning rate */
	float min_lr;           /* the cosine schedule ends here */
	int warmup;             /* steps of linear warmup */
	int warmup_given;       /* written in the case; else it follows the steps trained
	                           (lks_case_warmup) */
	float beta1, beta2, eps, weight_decay;
	float clip;             /* global grad-norm clip; 0 = none */
} lks_optim_cfg;

typedef struct lks_run_cfg {
	char name[LKS_NAME_MAX];
	lks_recipe recipe;
	int checkpoint;         /* 0 none, 1 blocks */
	int gemm;               /* lks_gemm_impl: 0 reference, 1 the library's (cublaslt) */
	int gemm_given;         /* gemm was written (or --set): run --gemm leaves it */
	char backend[16];       /* a name of the backend registry; "": the invocation's */
	int allreduce;          /* lks_allreduce_mode: 0 ordered, 1 NCCL's own (nccl) */
	int world_size;         /* ranks of this run */
	int fsdp;               /* ranks an FSDP group shards the parameters over (1: DP);
	                           the world size / fsdp groups replicate one another */
	int tp;                 /* ranks a tensor-parallel group splits each block over (1:
	                           none): innermost, so a group is tp consecutive ranks */
	int sp;                 /* sequence_parallel: 1 on (tp > 1): norms and residuals on
	                           the group's sequence shards */
	int fp8_all_gather;     /* 1 on (fsdp > 1): each rank casts its shard of a weight to
	                           FP8 with the group's amax and the codes are gathered */
	int reshard;            /* reshard_after_forward: 1 on (fsdp > 1): the parameters are
	                           dropped to the shard after the forward, gathered again */
	int trace_shards;       /* trace = shards: under tp each rank traces its own shard of
	                           a split tensor; 0 (whole): the group's gathered tensor */
	int trace_optim;        /* trace_optimizer = on: each parameter's all-reduced gradient
	                           before the update, and AdamW's moments after it, are traced
	                           too: the whole state a step hands the next */
	int amax_history;       /* fp8_delayed: history length */
	int amax_most_recent;   /* fp8_delayed: 1 most_recent, 0 max */
	int margin;             /* fp8_delayed: scale = fp8_max * 2^-margin / amax */
	lks_fault inject;       /* a planted fault; kind LKS_FAULT_NONE: none */
	char import_fmt[24];    /* import = FMT:PATH: a run of another framework, imported from
	                           its log (store/import.h) instead of trained; "": trained */
	char import_path[512];  /* PATH as written: relative to the case file's folder when
	                           not absolute (lks_case_import_path) */
	char import_ranks[256]; /* import_ranks = 0,8: the ranks a log of some ranks only holds
	                           (store/import.h); "": every rank from 0 */
	char import_tag_map[1024];  /* import_tag_map = LABEL=NAME,...: the log's own labels
	                               (import/import.h); "@FILE" relative to the case file's
	                               folder; "": none */
	/* resume_from = NAME@STEP: the run starts from the state run NAME (an earlier run of
	   the case, which then keeps it) reached after step STEP, and trains the steps after
	   it (engine/state.h); "": from step 0 */
	char resume_from[LKS_NAME_MAX];
	int resume_step;
	int line;               /* line of the [run NAME] header */
} lks_run_cfg;

typedef struct lks_check_cfg {
	char name[LKS_NAME_MAX];
	lks_check_kind kind;
	char a[LKS_NAME_MAX], b[LKS_NAME_MAX];  /* run names; b empty for one-run kinds */
	char metric[LKS_NAME_MAX];              /* close: a name of the metric table */
	char tensors[128];                      /* close on a tensor statistic: an fnmatch
	                                           pattern of the names compared; "": all */
	double rtol, atol, floor_db;
	int expect_fail;
	int exp_step, exp_rank;                 /* -1: not given */
	char exp_tensor[128];
	int line;
	int metric_line;                        /* of its metric key; 0: not in the file */
} lks_check_cfg;

typedef struct lks_case {
	char path[512];
	char name[LKS_NAME_MAX];  /* the file name without directory and .ini */
	char *text;               /* the whole file, stored with every run */
	char description[256];
	int steps;
	uint64_t seed;
	int world_size;
	lks_model_cfg model;
	lks_optim_cfg optim;
	lks_run_cfg *runs;
	int nruns;
	lks_check_cfg *checks;
	int nchecks;
} lks_case;

/*
 * Parses and validates the case at path, then applies the overrides sets[0..nsets) of the
 * form "section.key=value" ("model.hidden=512", "run.fp8.recipe=fp8_tensorwise",
 * "case.steps=10"). Errors (lks_err) name the file and line: "cases/x.ini:12: unknown key
 * 'hiden' in [model]"; an override's error names the override.
 */
int lks_case_load(const char *path, const char *const *sets, int nsets, lks_case *out);
/* The same of a case's text as a run stored it (runs.case_text), no override: path names
   the case (its name is path's, as lks_case_load's) and its errors. */
int lks_case_load_text(const char *path, const char *text, lks_case *out);

/* The tokens one rank of run r trains on per step (its slice of the case's global batch:
   batch x world_size sequences of seq tokens, over the run's replicas: ranks / tp). */
long long lks_case_run_tokens(const lks_case *c, const lks_run_cfg *r);
void lks_case_release(lks_case *c);

/* Applies one override ("section.key=value", as lks_case_load takes them) to a loaded case
   without validating the whole case again: to tell which of several overrides a case
   refuses (an unknown key, a bad value), each on its own. Errors as lks_case_load's. */
int lks_case_override(lks_case *c, const char *set);
/* Whether the override set reaches run: a key of the case, the model or the optimizer, or
   run.NAME.key with NAME run or '*'; not a check's, nor another run's. */
int lks_case_set_reaches(const char *set, const char *run);

/* The run called name, or NULL. */
const lks_run_cfg *lks_case_run(const lks_case *c, const char *name);

/* The first of names[0..n) that no case of cases[0..ncases) has as a run (checks 0) or as
   a check (checks 1), or NULL: what --run and --check are checked with, since a name that
   selects nothing would run nothing and pass. */
const char *lks_cases_unknown(const lks_case *cases, int ncases, const char *const *names,
                              int n, int checks);

/*
 * Expands the arguments of 'lockstep list|run CASE|DIR...' into case paths: a file stays
 * as given, a directory gives its *.ini entries sorted by name ("dir/a.ini"), also one
 * that is no regular file (loading it is the error that names it). A missing path or a
 * directory without cases is an error. Free the result with
 * lks_case_paths_free (also safe on NULL, 0).
 */
int lks_case_paths(const char *const *args, int nargs, char ***paths, int *npaths);
void lks_case_paths_free(char **paths, int npaths);

/* Every case of args (files and directories, as lks_case_paths), each loaded with the
   overrides sets; stops at the first bad one (lks_err names file and line). *cases has
   *ncases loaded cases also after a failure; release with lks_cases_release. */
int lks_cases_load(const char *const *args, int nargs, const char *const *sets, int nsets,
                   lks_case **cases, int *ncases);
void lks_cases_release(lks_case *cases, int ncases);

/* The warmup of c's schedule over steps steps: the case's warmup where it wrote one, else
   5% of steps (at least 1 when steps > 1, 0 when steps = 1), so that 'run --steps N'
   trains the schedule the case with steps = N trains. */
int lks_case_warmup(const lks_case *c, int steps);

/* The file an imported run (r->import_fmt set) reads: its PATH, relative to the folder of
   c's file unless absolute, into buf; an error when it does not fit. */
int lks_case_import_path(const lks_case *c, const lks_run_cfg *r, char *buf, size_t size);

/* Whether run r can train on backend be: the default (cpu) has only the reference GEMM and
   the host's communicators, so gemm = cublaslt (r->gemm_given 0: from run --gemm) and
   allreduce = nccl need another; an error (lks_err, naming the run) where not. The case's
   validation asks it of a run that names its backend, the suite of every run it trains. */
struct lks_backend;
int lks_run_backend_fits(const lks_run_cfg *r, const struct lks_backend *be);

/* Whether fault f can act on run r of case c: its recipe, ranks and steps, and the tensor
   it names. */
int lks_run_fault_fits(const lks_case *c, const lks_run_cfg *r, const lks_fault *f);

/* Plants the fault of the environment variable LOCKSTEP_INJECT (fault.h), if set, into the
   run it names with run=NAME (in place of a fault of the run's own), else into every run it
   fits (its recipe, checkpointing, ranks and steps) that has no fault of its own; an error
   when it is malformed, or (need) fits no run. lks_cases_load calls it with need;
   'lockstep list' case by case without. */
int lks_cases_inject_env(lks_case *cases, int ncases, int need);

#endif
