/* test_bg.c: background jobs run once each, in the thread without a wait, per group. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "kernels/bg.h"

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

Test(bg, jobs_run_once_per_group)
{
	static struct bg_job jobs[300];
	lks_jobs group[2] = { { 0 }, { 0 } };
	lks_bg *bg;

	cr_assert_eq(lks_bg_create(&bg), 0);
	for (int i = 0; i < 300; i++)  /* past the ring's first size: it grows while in use */
		cr_assert_eq(lks_bg_post(bg, &group[i % 2], bg_run, &jobs[i]), 0);
	lks_bg_wait(bg, &group[0]);
	cr_assert_eq(group[0].pending, 0);
	for (int i = 0; i < 300; i += 2)
		cr_assert_eq(atomic_load(&jobs[i].runs), 1, "job %d ran %d times", i,
		             atomic_load(&jobs[i].runs));
	lks_bg_wait(bg, &group[1]);
	for (int i = 1; i < 300; i += 2)
		cr_assert_eq(atomic_load(&jobs[i].runs), 1, "job %d ran %d times", i,
		             atomic_load(&jobs[i].runs));
	lks_bg_free(bg);
	for (int i = 0; i < 300; i++)  /* nothing ran again on the way out */
		cr_assert_eq(atomic_load(&jobs[i].runs), 1);
}

Test(bg, the_thread_takes_jobs_without_a_wait)
{
	static struct bg_job job;
	lks_jobs group = { 0 };
	lks_bg *bg;

	cr_assert_eq(lks_bg_create(&bg), 0);
	cr_assert_eq(lks_bg_post(bg, &group, bg_run, &job), 0);
	/* the caller never waits (it sleeps, so even an idle-priority thread gets a core):
	   only the thread can run it; 5 s is ample for a wake-up */
	for (int ms = 0; ms < 5000 && !atomic_load(&job.runs); ms++)
		usleep(1000);
	cr_assert_eq(atomic_load(&job.runs), 1, "the thread never took the job");
	cr_assert(!pthread_equal(job.who, pthread_self()));
	lks_bg_wait(bg, &group);
	lks_bg_free(bg);
}

Test(bg, free_runs_what_is_queued)
{
	static struct bg_job jobs[100];
	lks_jobs group = { 0 };
	lks_bg *bg;

	cr_assert_eq(lks_bg_create(&bg), 0);
	for (int i = 0; i < 100; i++)
		lks_bg_post(bg, &group, bg_run, &jobs[i]);
	lks_bg_free(bg);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(atomic_load(&jobs[i].runs), 1);
}

Test(bg, null_runs_jobs_at_once)
{
	static struct bg_job job;
	lks_jobs group = { 0 };

	cr_assert_eq(lks_bg_post(NULL, &group, bg_run, &job), 0);
	cr_assert_eq(atomic_load(&job.runs), 1);
	cr_assert(pthread_equal(job.who, pthread_self()));
	lks_bg_wait(NULL, &group);
}

/* The counts 'bench step' reads: every job is counted once, on the thread or on the waiter
   that ran it (whichever did: that depends on scheduling), and the thread's CPU time is
   added when it ends. */
Test(bg, counts_every_job_once_and_the_threads_cpu_time)
{
	static struct bg_job jobs[100];
	lks_jobs group = { 0 };
	lks_bg_counts a, b;
	lks_bg *bg;
	int on_waiter = 0;

	lks_bg_counts_get(&a);
	cr_assert_eq(lks_bg_create(&bg), 0);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(lks_bg_post(bg, &group, bg_run, &jobs[i]), 0);
	lks_bg_wait(bg, &group);
	for (int i = 0; i < 100; i++)
		on_waiter += pthread_equal(jobs[i].who, pthread_self()) != 0;
	lks_bg_free(bg);
	lks_bg_counts_get(&b);
	cr_assert_eq(b.jobs_thread - a.jobs_thread, 100 - on_waiter);
	cr_assert_eq(b.jobs_waiter - a.jobs_waiter, on_waiter);
	cr_assert_gt(b.cpu_ns, a.cpu_ns, "a thread that ran has used some CPU time");
}
