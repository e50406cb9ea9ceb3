/*
 * bg.c: the background thread (see bg.h). Jobs wait in a FIFO ring under one lock; the
 * thread takes them from the front, a waiter takes its own group's from anywhere.
 */
#define _GNU_SOURCE  /* SCHED_IDLE, syscall */
#include "kernels/bg.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <sys/resource.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernels/err.h"
#include "kernels/clock.h"

struct lks_job {
	lks_job_fn fn;
	void *arg;
	lks_jobs *group;
};

struct lks_bg {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;        /* a job was queued, or shutdown */
	pthread_cond_t done;        /* a job finished */
	struct lks_job *jobs;       /* ring of queued jobs */
	int head, count, cap;
	int shutdown;
	int sleeping;               /* the thread waits on wake: a post must signal */
	atomic_int queued;          /* count, for the thread to watch without the lock */
};

/* What every background thread of the process did (lks_bg_counts_get). */
static _Atomic int64_t lks_bg_cpu_ns;        /* CPU time of the threads that have ended */
static _Atomic int64_t lks_bg_jobs_thread;   /* jobs run on a background thread */
static _Atomic int64_t lks_bg_jobs_waiter;   /* jobs run by a waiter instead */
static _Atomic int64_t lks_bg_wait_ns;       /* wall time callers spent in lks_bg_wait */

/* After the queue runs empty the thread watches it this long before it sleeps: jobs come
   tens of microseconds apart in a step, and a wake-up costs the poster a system call. At
   idle priority the watching takes only cycles nobody else wants. */
#define LKS_BG_SPIN_NS 200000

/* Runs queued job i (0: the first) and removes it; called and returns with the lock held. */
static void lks_bg_run(lks_bg *bg, int i)
{
	struct lks_job j = bg->jobs[(bg->head + i) % bg->cap];

	for (; i > 0; i--)  /* close the gap: the ones before it move up one */
		bg->jobs[(bg->head + i) % bg->cap] = bg->jobs[(bg->head + i - 1) % bg->cap];
	bg->head = (bg->head + 1) % bg->cap;
	bg->count--;
	atomic_store_explicit(&bg->queued, bg->count, memory_order_relaxed);
	pthread_mutex_unlock(&bg->lock);
	j.fn(j.arg);
	pthread_mutex_lock(&bg->lock);
	j.group->pending--;
	pthread_cond_broadcast(&bg->done);
}

/* Watches the queue for LKS_BG_SPIN_NS, or until a job comes. */
static void lks_bg_watch(lks_bg *bg)
{
	int64_t t0 = lks_now_ns();

	for (int i = 1; !atomic_load_explicit(&bg->queued, memory_order_relaxed); i++) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
		if (i % 64 == 0 && lks_now_ns() - t0 > LKS_BG_SPIN_NS)
			break;
	}
}

static void *lks_bg_main(void *arg)
{
	lks_bg *bg = arg;
	struct sched_param sp = { 0 };
	struct timespec cpu;

	/* idle priority where the OS has it; else the lowest nice value of this thread */
	if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) != 0)
		(void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
	pthread_mutex_lock(&bg->lock);
	for (;;) {
		if (bg->count) {
			lks_bg_run(bg, 0);
			atomic_fetch_add_explicit(&lks_bg_jobs_thread, 1, memory_order_relaxed);
			continue;
		}
		if (bg->shutdown)
			break;
		pthread_mutex_unlock(&bg->lock);
		lks_bg_watch(bg);
		pthread_mutex_lock(&bg->lock);
		if (bg->count || bg->shutdown)
			continue;
		bg->sleeping = 1;
		pthread_cond_wait(&bg->wake, &bg->lock);
		bg->sleeping = 0;
	}
	pthread_mutex_unlock(&bg->lock);
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
		atomic_fetch_add_explicit(&lks_bg_cpu_ns, (int64_t)cpu.tv_sec * 1000000000 + cpu.tv_nsec,
		                          memory_order_relaxed);
	return NULL;
}

int lks_bg_create(lks_bg **out)
{
	lks_bg *bg = calloc(1, sizeof(*bg));

	*out = NULL;
	if (!bg)
		return lks_err("out of memory");
	pthread_mutex_init(&bg->lock, NULL);
	pthread_cond_init(&bg->wake, NULL);
	pthread_cond_init(&bg->done, NULL);
	if (pthread_create(&bg->thread, NULL, lks_bg_main, bg) != 0) {
		pthread_mutex_destroy(&bg->lock);
		pthread_cond_destroy(&bg->wake);
		pthread_cond_destroy(&bg->done);
		free(bg);
		return lks_err("cannot start the background thread");
	}
	*out = bg;
	return 0;
}

void lks_bg_free(lks_bg *bg)
{
	if (!bg)
		return;
	pthread_mutex_lock(&bg->lock);
	bg->shutdown = 1;
	atomic_store(&bg->queued, 1);  /* ends a watch */
	pthread_cond_signal(&bg->wake);
	while (bg->count)  /* what is queued runs, here or there, before the thread ends */
		lks_bg_run(bg, 0);
	pthread_mutex_unlock(&bg->lock);
	pthread_join(bg->thread, NULL);
	pthread_mutex_destroy(&bg->lock);
	pthread_cond_destroy(&bg->wake);
	pthread_cond_destroy(&bg->done);
	free(bg->jobs);
	free(bg);
}

int lks_bg_post(lks_bg *bg, lks_jobs *group, lks_job_fn fn, void *arg)
{
	if (!bg) {
		fn(arg);
		return 0;
	}
	pthread_mutex_lock(&bg->lock);
	if (bg->count == bg->cap) {  /* grow the ring, unrolled into the new array */
		int cap = bg->cap ? 2 * bg->cap : 64;
		struct lks_job *nj = malloc(sizeof(*nj) * (size_t)cap);

		if (!nj) {
			pthread_mutex_unlock(&bg->lock);
			fn(arg);
			return lks_err("out of memory queueing a background job");
		}
		for (int i = 0; i < bg->count; i++)
			nj[i] = bg->jobs[(bg->head + i) % bg->cap];
		free(bg->jobs);
		bg->jobs = nj;
		bg->head = 0;
		bg->cap = cap;
	}
	bg->jobs[(bg->head + bg->count++) % bg->cap] = (struct lks_job){ fn, arg, group };
	atomic_store_explicit(&bg->queued, bg->count, memory_order_relaxed);
	group->pending++;
	if (bg->sleeping)
		pthread_cond_signal(&bg->wake);
	pthread_mutex_unlock(&bg->lock);
	return 0;
}

void lks_bg_wait(lks_bg *bg, lks_jobs *group)
{
	int64_t t0;

	if (!bg)
		return;
	t0 = lks_now_ns();
	pthread_mutex_lock(&bg->lock);
	while (group->pending) {
		int i = 0;

		while (i < bg->count && bg->jobs[(bg->head + i) % bg->cap].group != group)
			i++;
		if (i < bg->count) {  /* one of ours still queued: run it here */
			lks_bg_run(bg, i);
			atomic_fetch_add_explicit(&lks_bg_jobs_waiter, 1, memory_order_relaxed);
		} else {              /* ours is running on the thread */
			pthread_cond_wait(&bg->done, &bg->lock);
		}
	}
	pthread_mutex_unlock(&bg->lock);
	atomic_fetch_add_explicit(&lks_bg_wait_ns, lks_now_ns() - t0, memory_order_relaxed);
}

void lks_bg_counts_get(lks_bg_counts *out)
{
	out->cpu_ns = atomic_load(&lks_bg_cpu_ns);
	out->jobs_thread = atomic_load(&lks_bg_jobs_thread);
	out->jobs_waiter = atomic_load(&lks_bg_jobs_waiter);
	out->wait_ns = atomic_load(&lks_bg_wait_ns);
}
