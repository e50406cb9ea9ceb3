/*
 * bg.h: a background thread for work whose results are needed only later.
 *
 * The thread runs at the lowest priority the OS offers (Linux SCHED_IDLE, else nice 19),
 * so it takes only the cycles that no other thread of the machine wants: the gaps a run's
 * GEMM threads leave between GEMMs, for instance. Nothing it does can hold up a GEMM. A
 * caller that needs results waits for its group of jobs, running the group's queued jobs
 * itself meanwhile, and a job still running on the thread then has a core to itself.
 *
 * A job must not touch what the caller changes before it waits for the job's group.
 */
#ifndef LKS_KERNELS_BG_H
#define LKS_KERNELS_BG_H

#include <stdint.h>

typedef struct lks_bg lks_bg;
typedef void (*lks_job_fn)(void *arg);
typedef struct lks_jobs { int pending; } lks_jobs;  /* a group: posted, not yet finished */

int lks_bg_create(lks_bg **out);
/* Runs what is queued, then ends the thread. */
void lks_bg_free(lks_bg *bg);
/* Queues fn(arg) in group (zeroed by the caller before its first job). A NULL bg runs it
   at once; so does a failure to queue (no memory), which returns -1 with lks_err. */
int lks_bg_post(lks_bg *bg, lks_jobs *group, lks_job_fn fn, void *arg);
/* Returns when every job of the group posted so far has run. */
void lks_bg_wait(lks_bg *bg, lks_jobs *group);

/* What the background threads of this process did so far, for benchmarks ('bench step'):
   the CPU time the threads that have ended got (lks_bg_free ends one), the jobs they ran,
   the jobs waiters ran themselves because no thread had got to them, and the wall time
   callers spent in lks_bg_wait. Differences between two readings give one run's. */
typedef struct lks_bg_counts {
	int64_t cpu_ns, jobs_thread, jobs_waiter, wait_ns;
} lks_bg_counts;
void lks_bg_counts_get(lks_bg_counts *out);

#endif
