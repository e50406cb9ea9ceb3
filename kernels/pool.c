/*
 * pool.c: worker threads that run numbered tasks (see pool.h).
 *
 * A run publishes (fn, arg, ntasks) under the lock and bumps a generation number; workers
 * and the caller take task numbers from an atomic counter until none are left. The caller
 * waits until every worker has finished the generation before it returns.
 */
#define _GNU_SOURCE  /* sched_getaffinity, CPU_COUNT */
#include "kernels/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "kernels/err.h"

struct lks_pool {
	int nthreads;               /* including the caller */
	pthread_t *workers;         /* nthreads - 1 */
	pthread_mutex_t lock;
	pthread_cond_t wake;        /* a new generation, or shutdown */
	pthread_cond_t done;        /* a worker finished the generation */
	unsigned long generation;
	int busy;                   /* workers still in the current generation */
	int shutdown;
	lks_task_fn fn;
	void *arg;
	int ntasks;
	atomic_int next;            /* next task number to take */
};

struct lks_worker_arg {
	lks_pool *pool;
	int thread;
};

static void lks_pool_drain(lks_pool *p, int thread)
{
	int t;

	while ((t = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed)) < p->ntasks)
		p->fn(p->arg, t, thread);
}

static void *lks_pool_worker(void *v)
{
	struct lks_worker_arg wa = *(struct lks_worker_arg *)v;
	lks_pool *p = wa.pool;
	unsigned long seen = 0;

	free(v);
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (p->generation == seen && !p->shutdown)
			pthread_cond_wait(&p->wake, &p->lock);
		if (p->shutdown)
			break;
		seen = p->generation;
		pthread_mutex_unlock(&p->lock);
		lks_pool_drain(p, wa.thread);
		pthread_mutex_lock(&p->lock);
		if (--p->busy == 0)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int lks_pool_create(int nthreads, lks_pool **out)
{
	lks_pool *p;

	*out = NULL;
	if (nthreads < 1)
		return lks_err("thread count must be at least 1, not %d", nthreads);
	p = calloc(1, sizeof(*p));
	if (!p || !(p->workers = calloc((size_t)nthreads, sizeof(pthread_t)))) {
		free(p);
		return lks_err("out of memory creating %d threads", nthreads);
	}
	p->nthreads = 1;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	pthread_cond_init(&p->done, NULL);
	for (int i = 1; i < nthreads; i++) {
		struct lks_worker_arg *wa = malloc(sizeof(*wa));

		if (!wa)
			goto fail;
		wa->pool = p;
		wa->thread = i;
		if (pthread_create(&p->workers[i - 1], NULL, lks_pool_worker, wa) != 0) {
			free(wa);
			goto fail;
		}
		p->nthreads++;
	}
	*out = p;
	return 0;
fail:
	lks_pool_free(p);
	return lks_err("cannot start %d threads", nthreads);
}

void lks_pool_free(lks_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->shutdown = 1;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
	for (int i = 0; i < p->nthreads - 1; i++)
		pthread_join(p->workers[i], NULL);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->wake);
	pthread_cond_destroy(&p->done);
	free(p->workers);
	free(p);
}

int lks_pool_threads(const lks_pool *p)
{
	return p ? p->nthreads : 1;
}

void lks_pool_run(lks_pool *p, int ntasks, lks_task_fn fn, void *arg)
{
	if (!p || p->nthreads == 1 || ntasks <= 1) {
		for (int t = 0; t < ntasks; t++)
			fn(arg, t, 0);
		return;
	}
	pthread_mutex_lock(&p->lock);
	p->fn = fn;
	p->arg = arg;
	p->ntasks = ntasks;
	atomic_store(&p->next, 0);
	p->busy = p->nthreads - 1;
	p->generation++;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);

	lks_pool_drain(p, 0);

	pthread_mutex_lock(&p->lock);
	while (p->busy > 0)
		pthread_cond_wait(&p->done, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

int lks_pool_cpus(void)
{
	cpu_set_t set;
	long online;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	online = sysconf(_SC_NPROCESSORS_ONLN);
	return online > 0 ? (int)online : 1;
}
