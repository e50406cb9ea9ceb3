/* test_pool.c: every task runs exactly once, whatever the thread count; the default thread
   count is the process's CPUs. */
#define _GNU_SOURCE  /* sched_setaffinity, CPU_COUNT */
#include <criterion/criterion.h>
#include <sched.h>
#include <stdatomic.h>

#include "kernels/pool.h"

struct count_job {
	atomic_int runs[1000];
	atomic_int bad_thread;
	int nthreads;
};

static void count_task(void *arg, int task, int thread)
{
	struct count_job *job = arg;

	atomic_fetch_add(&job->runs[task], 1);
	if (thread < 0 || thread >= job->nthreads)
		atomic_store(&job->bad_thread, 1);
}

Test(pool, every_task_runs_once)
{
	static const int threads[] = { 1, 2, 3, 8 };

	for (size_t t = 0; t < sizeof(threads) / sizeof(threads[0]); t++) {
		lks_pool *pool;

		cr_assert_eq(lks_pool_create(threads[t], &pool), 0);
		cr_assert_eq(lks_pool_threads(pool), threads[t]);
		/* many runs on one pool: a worker that missed or repeated a generation shows here */
		for (int rep = 0; rep < 200; rep++) {
			static struct count_job job;
			int ntasks = 1 + (rep * 37) % 1000;

			memset(&job, 0, sizeof(job));
			job.nthreads = threads[t];
			lks_pool_run(pool, ntasks, count_task, &job);
			for (int i = 0; i < 1000; i++)
				cr_assert_eq(atomic_load(&job.runs[i]), i < ntasks,
				             "threads %d rep %d task %d ran %d times", threads[t], rep, i,
				             atomic_load(&job.runs[i]));
			cr_assert_eq(atomic_load(&job.bad_thread), 0);
		}
		lks_pool_free(pool);
	}
}

Test(pool, null_pool_runs_in_caller)
{
	static struct count_job job;

	job.nthreads = 1;
	cr_assert_eq(lks_pool_threads(NULL), 1);
	lks_pool_run(NULL, 10, count_task, &job);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(atomic_load(&job.runs[i]), 1);
}

Test(pool, rejects_zero_threads)
{
	lks_pool *pool = (lks_pool *)1;

	cr_assert_neq(lks_pool_create(0, &pool), 0);
	cr_assert_null(pool);
}

/* The default thread count is the CPUs the process may run on, as nproc counts them: bound
   to one CPU (as mpirun binds a process to a core), one, whatever the machine has. */
Test(pool, cpus_are_the_affinity)
{
	cpu_set_t set, one;
	int first = -1;

	cr_assert_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	cr_assert_eq(lks_pool_cpus(), CPU_COUNT(&set));
	for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
		if (CPU_ISSET(c, &set))
			first = c;
	CPU_ZERO(&one);
	CPU_SET(first, &one);
	cr_assert_eq(sched_setaffinity(0, sizeof(one), &one), 0);
	cr_assert_eq(lks_pool_cpus(), 1);
}
