/*
 * comm_threads.c: the communicator of ranks that are threads of one process (see comm.h).
 *
 * A collective publishes each rank's buffer in the group, waits for every rank (a barrier),
 * works, and waits again, so that no rank returns, and changes its buffer, while another
 * still reads it. The all-reduces split the elements into chunks; rank r owns chunks r,
 * r + size, ...: it sums (or maxes) the chunk over the ranks in rank order into rank 0's
 * buffer and copies the result to every other rank's (a reduce-scatter in rank order, then
 * an all-gather), so each element is ((x_0 + x_1) + x_2) + ... whichever thread runs it,
 * and no two threads write one element (the max's rule is element/reduce.h's, which the
 * NCCL communicator's fold shares). An abort wakes every waiter with an error.
 */
#include "kernels/comm.h"
#include "kernels/element/reduce.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LKS_COMM_CHUNK 65536  /* elements of an all-reduce that one rank reduces at once */

struct lks_comm_group;

struct lks_comm_thread {
	lks_comm base;          /* first: an lks_comm * is one of these */
	struct lks_comm_group *g;
};

struct lks_comm_group {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int size;
	int arrived;            /* ranks waiting at the barrier of this generation */
	unsigned gen;           /* barriers passed */
	int aborted;
	char why[256];
	int open;               /* ranks not yet closed */
	float **x;              /* (size) the buffers of the all-reduce under way */
	const void **send;      /* (size) the blocks of the gather under way */
	size_t *bytes;          /* (size) */
	struct lks_comm_thread *ranks;  /* (size) */
};

static struct lks_comm_group *lks_group_of(lks_comm *c)
{
	return ((struct lks_comm_thread *)c)->g;
}

/* Waits until every rank arrived or the group was aborted (-1, with why). */
static int lks_threads_barrier(lks_comm *c)
{
	struct lks_comm_group *g = lks_group_of(c);
	char why[sizeof(g->why)];
	int rc = 0;

	pthread_mutex_lock(&g->lock);
	if (!g->aborted) {
		unsigned gen = g->gen;

		if (++g->arrived == g->size) {
			g->arrived = 0;
			g->gen++;
			pthread_cond_broadcast(&g->wake);
		}
		while (gen == g->gen && !g->aborted)
			pthread_cond_wait(&g->wake, &g->lock);
		rc = gen == g->gen ? -1 : 0;  /* woken by the abort, not by the last rank */
	} else {
		rc = -1;
	}
	memcpy(why, g->why, sizeof(why));
	pthread_mutex_unlock(&g->lock);
	return rc ? lks_err("%s", why) : 0;
}

static void lks_threads_abort(lks_comm *c, const char *why)
{
	struct lks_comm_group *g = lks_group_of(c);

	pthread_mutex_lock(&g->lock);
	if (!g->aborted) {
		g->aborted = 1;
		snprintf(g->why, sizeof(g->why), "rank %d aborted: %s", c->rank, why);
		pthread_cond_broadcast(&g->wake);
	}
	pthread_mutex_unlock(&g->lock);
}

static int lks_threads_aborted(lks_comm *c)
{
	struct lks_comm_group *g = lks_group_of(c);
	int aborted;

	pthread_mutex_lock(&g->lock);
	aborted = g->aborted;
	pthread_mutex_unlock(&g->lock);
	return aborted;
}

static int lks_threads_why(lks_comm *c, char *buf, size_t n)
{
	struct lks_comm_group *g = lks_group_of(c);
	int aborted;

	pthread_mutex_lock(&g->lock);
	aborted = g->aborted;
	if (aborted && n)
		snprintf(buf, n, "%s", g->why);
	pthread_mutex_unlock(&g->lock);
	return aborted;
}

/* The all-reduce of every rank's x (n floats); max: the NaN-propagating max, else the sum. */
static int lks_threads_allreduce(lks_comm *c, float *x, size_t n, int max)
{
	struct lks_comm_group *g = lks_group_of(c);
	size_t nchunks = (n + LKS_COMM_CHUNK - 1) / LKS_COMM_CHUNK;

	g->x[c->rank] = x;
	if (lks_threads_barrier(c))
		return -1;
	for (size_t k = (size_t)c->rank; k < nchunks; k += (size_t)g->size) {
		size_t i0 = k * LKS_COMM_CHUNK, i1 = i0 + LKS_COMM_CHUNK < n ? i0 + LKS_COMM_CHUNK : n;
		float *acc = g->x[0];

		for (int r = 1; r < g->size; r++) {
			const float *y = g->x[r];

			if (max)
				for (size_t i = i0; i < i1; i++)
					acc[i] = lks_max_nan(acc[i], y[i]);
			else
				for (size_t i = i0; i < i1; i++)
					acc[i] += y[i];
		}
		for (int r = 1; r < g->size; r++)
			memcpy(g->x[r] + i0, acc + i0, (i1 - i0) * sizeof(float));
	}
	return lks_threads_barrier(c);
}

static int lks_threads_sum(lks_comm *c, float *x, size_t n)
{
	return lks_threads_allreduce(c, x, n, 0);
}

static int lks_threads_max(lks_comm *c, float *x, size_t n)
{
	return lks_threads_allreduce(c, x, n, 1);
}

static int lks_threads_gather(lks_comm *c, const void *x, size_t bytes, void **out,
                              size_t *counts)
{
	struct lks_comm_group *g = lks_group_of(c);
	size_t total = 0;
	char *buf;

	g->send[c->rank] = x;
	g->bytes[c->rank] = bytes;
	if (lks_threads_barrier(c))
		return -1;
	if (c->rank == LKS_COMM_ROOT) {
		for (int r = 0; r < g->size; r++)
			total += g->bytes[r];
		if (!(buf = malloc(total ? total : 1))) {
			lks_threads_abort(c, "out of memory");
			return lks_err("out of memory");
		}
		*out = buf;
		for (int r = 0; r < g->size; r++) {
			if (g->bytes[r])
				memcpy(buf, g->send[r], g->bytes[r]);
			buf += g->bytes[r];
			counts[r] = g->bytes[r];
		}
	}
	return lks_threads_barrier(c);
}

static void lks_threads_close(lks_comm *c)
{
	struct lks_comm_group *g = lks_group_of(c);
	int last;

	pthread_mutex_lock(&g->lock);
	last = --g->open == 0;
	pthread_mutex_unlock(&g->lock);
	if (!last)
		return;
	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->wake);
	free(g->x);
	free(g->send);
	free(g->bytes);
	free(g->ranks);
	free(g);
}

static const lks_comm_methods lks_comm_threads_methods = {
	.version = LKS_COMM_VERSION,
	.name = "threads",
	.allreduce_sum = lks_threads_sum,
	.allreduce_max = lks_threads_max,
	.gather = lks_threads_gather,
	.barrier = lks_threads_barrier,
	.abort = lks_threads_abort,
	.close = lks_threads_close,
	.aborted = lks_threads_aborted,
	.why = lks_threads_why,
};

int lks_comm_threads(int size, lks_comm **out)
{
	struct lks_comm_group *g = calloc(1, sizeof(*g));

	if (size < 1) {
		free(g);
		return lks_err("a communicator of %d ranks", size);
	}
	if (!g || !(g->x = calloc((size_t)size, sizeof(*g->x)))
	    || !(g->send = calloc((size_t)size, sizeof(*g->send)))
	    || !(g->bytes = calloc((size_t)size, sizeof(*g->bytes)))
	    || !(g->ranks = calloc((size_t)size, sizeof(*g->ranks)))) {
		if (g) {
			free(g->x);
			free(g->send);
			free(g->bytes);
		}
		free(g);
		return lks_err("out of memory");
	}
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->wake, NULL);
	g->size = g->open = size;
	for (int r = 0; r < size; r++) {
		g->ranks[r] = (struct lks_comm_thread){ { &lks_comm_threads_methods, r, size }, g };
		out[r] = &g->ranks[r].base;
	}
	return 0;
}
