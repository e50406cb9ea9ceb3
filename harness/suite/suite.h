/*
 * suite.h: one suite: every selected run of each case trained (or imported) and stored,
 * then the case's checks evaluated on them and their verdicts stored, then the runs
 * compared night over night with the latest earlier suite. What 'lockstep run' and
 * 'lockstep check' do between their options and their exit code; what it shows goes
 * through an observer, so a command (or a benchmark) chooses what is printed.
 *
 * All case files are parsed and validated before the database is opened, so a bad case
 * file stops the suite (exit 2, file:line) with nothing written. A failing check is a
 * verdict: the suite goes on with the next case and ends with exit 1. Under mpirun or
 * srun every process of the job calls it (suite/job.h): each trains its ranks, process 0
 * owns the database, the checks and the observer's lines.
 */
#ifndef LKS_HARNESS_SUITE_SUITE_H
#define LKS_HARNESS_SUITE_SUITE_H

#include <stdint.h>
#include <stdio.h>

#include "harness/base/opt.h"
#include "harness/verify/check.h"
#include "kernels/backend.h"

struct lks_store;

/* What the suite runs, as the command line gave it. */
typedef struct lks_suite_opts {
	const char *db;           /* the database (created if missing) */
	const char *command;      /* the command line, stored with the suite */
	const char *golden;       /* where golden files are; NULL: lks_golden_dir's default */
	const char *combo;        /* the runs' combo name; NULL: none */
	const lks_backend *backend;  /* NULL: the default (cpu) */
	int gemm;                 /* an lks_gemm_impl for the runs that name none; -1: theirs */
	int steps, threads;       /* 0: the case's steps, all cores */
	int timeout;              /* seconds a rank waits for the others */
	int same_fp_warn;         /* a silent change (same fingerprint) only warns */
	int state_every;          /* every run keeps its state after every N-th step; 0: none */
	int64_t resume_run;       /* > 0: the one run selected starts from the state this run */
	int resume_step;          /* kept after this step */
	lks_opt_list inputs;      /* CASE|DIR */
	lks_opt_list sets;        /* S.K=V overrides */
	lks_opt_list only;        /* run names; none: every run (or --check's) */
	lks_opt_list checks;      /* check names; none: every check */
} lks_suite_opts;

/* A run stored: trained (imported 0) or imported from its log. */
typedef struct lks_suite_line {
	const char *case_name, *run_name;
	const char *what;         /* the recipe's name, or the import format's */
	int imported;             /* 1: a log's metrics; 2: a tensor trace */
	int world_size, steps;
	int first_step;           /* trained: 0, or the step after the state it resumed from */
	double first_loss, last_loss, seconds;  /* trained */
	int nonfinite_events;     /* trained: ranks that met NaN/Inf before an all-reduce */
	long records, ignored;    /* imported: metric lines, other lines */
} lks_suite_line;

/* Where a suite says what it does (process 0; the others say nothing). */
typedef struct lks_suite_observer {
	void *arg;
	FILE *progress;           /* each run's step progress; NULL: none */
	int progress_tty;         /* progress is a terminal: one line redrawn */
	FILE *verdicts;           /* the checks' verdicts, night over night, the counts */
	void (*on_run)(void *arg, const lks_suite_line *run);  /* NULL: nothing */
	/* The suite is stored and its verdicts counted (the exit code is not decided yet), or
	   it stopped before its end with exit code stopped (else 0), which the store may not
	   hold (a full disk): e.g. JUnit written. 0, or -1 (lks_err): an infrastructure
	   failure. NULL: nothing. */
	int (*on_stored)(void *arg, struct lks_store *store, int64_t suite_id, int stopped);
} lks_suite_observer;

/* The run line 'lockstep run' prints. */
void lks_suite_print_run(FILE *out, const lks_suite_line *run);

/* A suite that stopped before its end with exit code stopped: said on stderr (in case
   case_name, failed runs before it; what db holds) and told to obs's on_stored. */
void lks_suite_say_stopped(const lks_suite_observer *obs, struct lks_store *store,
                           int64_t suite_id, int stopped, const char *case_name, int failed,
                           const char *db);

/*
 * Runs the suite o; the verdicts counted into *tally (also after a failure: what was
 * counted so far). Returns the exit code (DESIGN.md, Interfaces): 0 every run finished and
 * every check passed (or failed as expected); 1 a check failed, or a run changed silently
 * (same fingerprint) and not same_fp_warn; 2 bad usage, a bad case file (nothing written)
 * or a bad golden file; 3 an infrastructure failure, or a run's backend cannot be opened
 * here (that run left out, its checks skipped).
 */
int lks_suite_run(const lks_suite_opts *o, const lks_suite_observer *obs,
                  lks_check_tally *tally);

#endif
