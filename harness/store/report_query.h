/*
 * report_query.h: what a report reads of the store beside the runs, steps, stats and check
 * verdicts (trace_store.h): one suite (its command line and when it began), and a case's
 * runs over recent suites with their final loss and mean step time (the trend). Reads
 * only; a read-only store will do. As in trace_store.h, the strings handed to a callback
 * are valid only during that call, and a callback returns 0 to go on or any other value to
 * stop the walk, which then returns that value.
 */
#ifndef LKS_HARNESS_STORE_REPORT_QUERY_H
#define LKS_HARNESS_STORE_REPORT_QUERY_H

#include <stdint.h>

#include "harness/store/trace_store.h"

typedef struct lks_suite_rec {
	int64_t suite_id;
	const char *command;      /* the command line that stored the suite */
	const char *started;      /* ISO 8601 UTC */
	int stopped;              /* the exit code its writer stopped with before its end; 0 */
} lks_suite_rec;

/* The suite suite_id: fn is called once, or not at all when there is no such suite. */
int lks_store_get_suite(lks_store *s, int64_t suite_id,
                        int (*fn)(void *arg, const lks_suite_rec *rec), void *arg);

/* How many suites the database holds before suite_id. */
int lks_store_suites_before(lks_store *s, int64_t suite_id, int64_t *n);

/* A run of the trend. */
typedef struct lks_trend_rec {
	int64_t run_id, suite_id;
	const char *run_name, *status;
	int nsteps;               /* the last step stored + 1, of its step rows and its tensor
	                             records (a tensor trace's), as a stored run's (run.h);
	                             0: no step stored */
	int steps;                /* runs.steps: a trained run's steps as declared, else (an
	                             import's, a traced run's: steps_last) its last step */
	int steps_last;           /* lks_backend_steps_last (run.h): its steps are its log's */
	double final_loss;        /* the loss of the last step stored, mean over its ranks;
	                             NaN: no step, or no finite loss at it */
	int final_stored;         /* 1: a step row at the last step (final_loss its loss, NaN
	                             where it went NaN); 0: none (no step, or the last step's
	                             are tensor records alone) */
	double step_time;         /* seconds, mean over every step row stored; NaN: none */
} lks_trend_rec;

/* The runs of case case_name in the nsuites latest suites up to suite_id (by id) that hold
   a run of that case, ordered by run name, then suite, then run id. */
int lks_store_get_trend(lks_store *s, const char *case_name, int64_t suite_id, int nsuites,
                        int (*fn)(void *arg, const lks_trend_rec *rec), void *arg);

#endif
