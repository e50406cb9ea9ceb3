/* test_pool.c: every task runs exactly once, whatever the thread count. */
#include <criterion/criterion.h>
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
