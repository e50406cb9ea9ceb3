/*
 * pool.h: a fixed set of worker threads that run numbered tasks (host threads, not a CPU
 * kernel: the CPU kernels and the runner use it whatever the backend).
 *
 * Kernels split their output into independent tasks; a task never shares an accumulator
 * with another, so which thread runs which task, and in which order, cannot change a bit
 * of the result. That is what makes results independent of the thread count.
 */
#ifndef LKS_KERNELS_POOL_H
#define LKS_KERNELS_POOL_H

typedef struct lks_pool lks_pool;

/* fn(arg, task, thread): task in [0, ntasks), thread in [0, lks_pool_threads()). */
typedef void (*lks_task_fn)(void *arg, int task, int thread);

/* nthreads >= 1 counts the calling thread, which works too. */
int lks_pool_create(int nthreads, lks_pool **out);
void lks_pool_free(lks_pool *pool);
/* 1 for a NULL pool. */
int lks_pool_threads(const lks_pool *pool);
/* The CPUs this process may run on (its affinity, as nproc counts them: taskset, a cgroup's
   cpuset, or mpirun binding a process to a core), at least 1: the default thread count. */
int lks_pool_cpus(void);
/* Runs all tasks and returns when they are done. A NULL pool runs them in the caller. */
void lks_pool_run(lks_pool *pool, int ntasks, lks_task_fn fn, void *arg);

#endif
