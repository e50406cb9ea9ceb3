/* test_pool.c: every task runs exactly once, whatever the thread count. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "kernels/cpu/pool.h"

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

/* ---- background jobs ---- */

struct bg_job {
	atomic_int runs;
	pthread_t who;
};

static void bg_run(void *arg)
{
	struct bg_job *j = arg;

	j->who = pthread_self();
	atomic_fetch_add(&j->runs, 1);
}

Test(pool, jobs_run_once_between_and_during_runs)
{
	static const int threads[] = { 1, 2, 3 };

	for (size_t t = 0; t < sizeof(threads) / sizeof(threads[0]); t++) {
		static struct bg_job jobs[2][300];
		lks_jobs group[2] = { { 0 }, { 0 } };
		lks_pool *pool;

		memset(jobs, 0, sizeof(jobs));
		cr_assert_eq(lks_pool_create(threads[t], &pool), 0);
		/* two groups posted in turns, with task runs in between: a job that ran twice or
		   never, or a run that lost a task to a job, shows here */
		for (int i = 0; i < 300; i++) {
			static struct count_job cj;

			cr_assert_eq(lks_pool_post(pool, &group[i % 2], bg_run, &jobs[i % 2][i]), 0);
			if (i % 7 == 0) {
				memset(&cj, 0, sizeof(cj));
				cj.nthreads = threads[t];
				lks_pool_run(pool, 50, count_task, &cj);
				for (int k = 0; k < 50; k++)
					cr_assert_eq(atomic_load(&cj.runs[k]), 1);
			}
		}
		lks_pool_wait_jobs(pool, &group[0]);
		cr_assert_eq(group[0].pending, 0);
		for (int i = 0; i < 300; i += 2)
			cr_assert_eq(atomic_load(&jobs[0][i].runs), 1, "%d threads: job %d", threads[t], i);
		lks_pool_wait_jobs(pool, &group[1]);
		for (int i = 1; i < 300; i += 2)
			cr_assert_eq(atomic_load(&jobs[1][i].runs), 1, "%d threads: job %d", threads[t], i);
		lks_pool_free(pool);
	}
}

Test(pool, idle_workers_take_jobs_without_a_wait)
{
	static struct bg_job job;
	lks_jobs group = { 0 };
	lks_pool *pool;

	cr_assert_eq(lks_pool_create(2, &pool), 0);
	cr_assert_eq(lks_pool_post(pool, &group, bg_run, &job), 0);
	/* the caller never waits: only the worker can run it (5 s is ample for a wake-up) */
	for (int ms = 0; ms < 5000 && !atomic_load(&job.runs); ms++)
		usleep(1000);
	cr_assert_eq(atomic_load(&job.runs), 1, "no worker took the job");
	cr_assert(!pthread_equal(job.who, pthread_self()));
	lks_pool_wait_jobs(pool, &group);
	lks_pool_free(pool);
}

Test(pool, null_pool_runs_jobs_at_once)
{
	static struct bg_job job;
	lks_jobs group = { 0 };

	cr_assert_eq(lks_pool_post(NULL, &group, bg_run, &job), 0);
	cr_assert_eq(atomic_load(&job.runs), 1);
	cr_assert(pthread_equal(job.who, pthread_self()));
	lks_pool_wait_jobs(NULL, &group);
}
