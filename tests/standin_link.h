/*
 * standin_link.h: a stand-in for NCCL as the link of a device communicator
 * (kernels/devcomm.h), on the CPU, for the tests of what a run on one GPU cannot show: a
 * rank that fails to join, hangs in joining or in a collective, and the waits of every
 * other rank that must end within the run's timeout.
 *
 * The ranks are threads of the test; rank 0's make_id makes a fabric, and the id carries
 * its address to the other ranks (through the host end, as NCCL's unique id travels). A
 * collective copies the rank's buffer into the fabric and is done, on poll, once every rank
 * has posted it: the result is the fold in rank order of the copies (sum, or the NaN-wins
 * max of element/reduce.h; of the rank's part for a reduce-scatter, the library's as the
 * ordered one), the bits of the threads communicator, or for an all-gather the copies in
 * rank order. As NCCL's kernels would,
 * a rank whose peer never posts waits forever: only devcomm's abort or deadline ends it.
 *
 * A split makes a fabric per color, found by every rank of that color through the parent's
 * (the first to come makes it), and joined as a group is. Leaving is done once every rank
 * of the group has left, as NCCL's finalize is: ranks that close their ends one after
 * another in one thread wait forever (until the timeout).
 *
 * standin_plan says which rank fails or hangs where (-1: none). standin_backend() is the
 * cpu's methods as a backend whose memory is not the host's, with this link as its device
 * communicator and a named GPU per rank context (describe: uuid GPU-standin-<slot modulo
 * standin_devices>, ordinal, compute capability 9.0). Plain C (no Criterion): the MPI
 * test program (mpi_devices.c) uses the backend too, without the link, whose fabric is one
 * process's memory.
 */
#ifndef LKS_TESTS_STANDIN_LINK_H
#define LKS_TESTS_STANDIN_LINK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/devcomm.h"
#include "kernels/element/reduce.h"
#include "kernels/backend.h"
#include "kernels/cpu/backend_cpu.h"
#include "kernels/err.h"
#include "kernels/pool.h"

static struct standin_plan {
	int fail_join;          /* this rank's join fails at once */
	int hang_join;          /* this rank never finishes joining */
	int hang_rank, hang_op; /* this rank never posts its collective of this index */
} standin_plan = { -1, -1, -1, -1 };

static atomic_int standin_joins, standin_ops, standin_released;

#define STANDIN_MAX_OPS 8192  /* a sharded run of a few steps makes thousands */
#define STANDIN_MAX_SPLITS 4
#define STANDIN_MAX_COLORS 16

struct standin_fabric {
	pthread_mutex_t lock;
	int W, refs, joined, left;
	/* [split][color]: the sub-groups' fabrics (each freed by its own ranks) */
	struct standin_fabric *sub[STANDIN_MAX_SPLITS][STANDIN_MAX_COLORS];
	float **copy[STANDIN_MAX_OPS];  /* [op][rank]: its posted buffer */
	size_t n[STANDIN_MAX_OPS];      /* the collective's n (lks_devcomm_op) */
	int posted[STANDIN_MAX_OPS];
};

struct standin_link {
	struct standin_fabric *f;
	int rank, W;
	int state;              /* 0 idle, 1 joining, 2 a collective under way, 3 hung,
	                           4 leaving */
	int k;                  /* the index of this rank's next (or current) collective */
	int splits;             /* the splits this rank made of its group */
	lks_devcomm_op op;
	float *out;
};

static inline int standin_make_id(void *link, void *id)
{
	struct standin_link *l = link;
	struct standin_fabric *f = calloc(1, sizeof(*f));

	if (!f)
		return lks_err("out of memory");
	pthread_mutex_init(&f->lock, NULL);
	f->W = f->refs = l->W;  /* every rank that has the id releases it once */
	l->f = f;
	memcpy(id, &f, sizeof(f));
	return 0;
}

static inline int standin_join(void *link, int size, int rank, const void *id)
{
	struct standin_link *l = link;

	l->rank = rank;
	memcpy(&l->f, id, sizeof(l->f));
	if (size != l->f->W)
		return lks_err("stand-in: a group of %d ranks joined as one of %d", l->f->W, size);
	if (rank == standin_plan.fail_join)
		return lks_err("stand-in: rank %d cannot join the group", rank);
	pthread_mutex_lock(&l->f->lock);
	l->f->joined += rank != standin_plan.hang_join;
	pthread_mutex_unlock(&l->f->lock);
	l->state = rank == standin_plan.hang_join ? 3 : 1;
	atomic_fetch_add(&standin_joins, 1);
	return 0;
}

/* the floats of x a rank posts for op */
static inline size_t standin_in(const struct standin_link *l, lks_devcomm_op op, size_t n)
{
	return op == LKS_DEVCOMM_ORDERED_RS || op == LKS_DEVCOMM_LIBRARY_RS ? (size_t)l->W * n : n;
}

static inline int standin_queue(void *link, lks_devcomm_op op, const float *x, size_t n,
                                float *out)
{
	struct standin_link *l = link;
	struct standin_fabric *f = l->f;
	size_t nin = standin_in(l, op, n);
	float *c;
	int ok;

	if (l->k >= STANDIN_MAX_OPS)
		return lks_err("stand-in: more than %d collectives", STANDIN_MAX_OPS);
	l->op = op;
	l->out = out;
	atomic_fetch_add(&standin_ops, 1);
	if (l->rank == standin_plan.hang_rank && l->k == standin_plan.hang_op) {
		l->state = 3;       /* its kernel never starts: its peers wait for it */
		return 0;
	}
	if (!(c = malloc((nin ? nin : 1) * sizeof(float))))
		return lks_err("out of memory");
	memcpy(c, x, nin * sizeof(float));
	pthread_mutex_lock(&f->lock);
	if (!f->copy[l->k])
		f->copy[l->k] = calloc((size_t)f->W, sizeof(float *));
	if ((ok = f->copy[l->k] != NULL)) {
		f->copy[l->k][l->rank] = c;
		f->n[l->k] = n;
		f->posted[l->k]++;
	}
	pthread_mutex_unlock(&f->lock);
	if (!ok) {
		free(c);
		return lks_err("out of memory");
	}
	l->state = 2;
	return 0;
}

static inline int standin_poll(void *link)
{
	struct standin_link *l = link;
	struct standin_fabric *f = l->f;
	int done = 0;

	if (l->state == 0)
		return 0;
	if (l->state == 3)
		return 1;
	pthread_mutex_lock(&f->lock);
	if (l->state == 1) {
		done = f->joined == f->W;
	} else if (l->state == 4) {
		done = f->left == f->W;
	} else if (f->posted[l->k] == f->W) {
		float **c = f->copy[l->k];
		size_t n = f->n[l->k];
		/* a reduce-scatter folds this rank's rows of each copy */
		size_t at = standin_in(l, l->op, 1) > 1 ? (size_t)l->rank * n : 0;

		for (size_t i = 0; i < n; i++) {
			float acc = c[0][at + i];

			if (l->op == LKS_DEVCOMM_ALL_GATHER) {
				for (int r = 0; r < f->W; r++)
					l->out[(size_t)r * n + i] = c[r][i];
				continue;
			}
			for (int r = 1; r < f->W; r++)
				acc = l->op == LKS_DEVCOMM_ORDERED_MAX ? lks_max_nan(acc, c[r][at + i])
				                                       : acc + c[r][at + i];
			l->out[i] = acc;
		}
		l->k++;
		done = 1;
	}
	pthread_mutex_unlock(&f->lock);
	if (done)
		l->state = 0;
	return !done;
}

static inline int standin_leave(void *link)
{
	struct standin_link *l = link;

	pthread_mutex_lock(&l->f->lock);
	l->f->left++;
	pthread_mutex_unlock(&l->f->lock);
	l->state = 4;
	return 0;
}

static inline void standin_abort(void *link)
{
	((struct standin_link *)link)->state = 0;
}

static inline void standin_release(void *link)
{
	struct standin_link *l = link;
	struct standin_fabric *f = l->f;
	int last = 0;

	atomic_fetch_add(&standin_released, 1);
	if (f) {
		pthread_mutex_lock(&f->lock);
		last = --f->refs == 0;
		pthread_mutex_unlock(&f->lock);
	}
	if (last) {
		for (int k = 0; k < STANDIN_MAX_OPS; k++) {
			for (int r = 0; f->copy[k] && r < f->W; r++)
				free(f->copy[k][r]);
			free(f->copy[k]);
		}
		pthread_mutex_destroy(&f->lock);
		free(f);
	}
	free(l);
}

/* the sub-group's fabric of this split and color, made by the first rank to come, and
   this rank's link to it, joining */
static inline int standin_split(void *link, int color, int key, int size, void **sub)
{
	struct standin_link *l = link, *s;
	struct standin_fabric *f = l->f, *g;

	*sub = NULL;
	if (l->splits >= STANDIN_MAX_SPLITS || color < 0 || color >= STANDIN_MAX_COLORS)
		return lks_err("stand-in: split %d of color %d", l->splits, color);
	if (!(s = calloc(1, sizeof(*s))))
		return lks_err("out of memory");
	pthread_mutex_lock(&f->lock);
	if (!(g = f->sub[l->splits][color]) && (g = calloc(1, sizeof(*g)))) {
		pthread_mutex_init(&g->lock, NULL);
		g->W = g->refs = size;
		f->sub[l->splits][color] = g;
	}
	pthread_mutex_unlock(&f->lock);
	l->splits++;
	if (!g) {
		free(s);
		return lks_err("out of memory");
	}
	*s = (struct standin_link){ .f = g, .rank = key, .W = size, .state = 1 };
	pthread_mutex_lock(&g->lock);
	g->joined++;
	pthread_mutex_unlock(&g->lock);
	*sub = s;
	return 0;
}

static const lks_devlink_methods standin_methods = {
	.name = "stand-in", .id_bytes = sizeof(void *), .make_id = standin_make_id,
	.join = standin_join, .queue = standin_queue, .poll = standin_poll,
	.leave = standin_leave, .abort = standin_abort, .release = standin_release,
	.split = standin_split,
};

/* The backend's comm method: every rank's device end over a stand-in link */
static inline int standin_comm(const lks_backend *be, void *ctx, lks_comm *host,
                               const lks_devcomm_opts *o, lks_comm **out)
{
	struct standin_link *l = calloc(1, sizeof(*l));

	(void)be; (void)ctx;
	*out = NULL;
	if (!l) {
		lks_comm_abort(host, "out of memory");
		return lks_err("out of memory");
	}
	l->W = host->size;
	return lks_devcomm(host, &standin_methods, l, 1, o, out);
}

/* the slot each rank context was opened for (the device index it would take) */
static struct { void *ctx; int slot; } standin_ctx[64];
static int standin_nctx;
static pthread_mutex_t standin_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static int standin_devices = 8;  /* GPUs of the stand-in machine: slot modulo this */

/* a pool of its own per rank context (one thread: the caller's, as the cpu's NULL would
   be), so that each context is a pointer of its own that describe can tell apart */
static inline int standin_open_rank(const lks_backend *be, int threads, int local, void **ctx)
{
	(void)be;
	if (lks_pool_create(threads > 1 ? threads : 1, (lks_pool **)ctx))
		return -1;
	pthread_mutex_lock(&standin_ctx_lock);
	if (standin_nctx < 64) {
		standin_ctx[standin_nctx].ctx = *ctx;
		standin_ctx[standin_nctx++].slot = local;
	}
	pthread_mutex_unlock(&standin_ctx_lock);
	return 0;
}

static inline void standin_describe(const lks_backend *be, void *ctx, lks_describe_fn put,
                                    void *arg)
{
	int slot = -1;
	char buf[48];

	lks_backend_cpu.describe(be, ctx, put, arg);
	pthread_mutex_lock(&standin_ctx_lock);
	for (int i = standin_nctx - 1; i >= 0 && slot < 0; i--)
		if (standin_ctx[i].ctx == ctx)
			slot = standin_ctx[i].slot;
	pthread_mutex_unlock(&standin_ctx_lock);
	if (slot < 0)
		return;
	snprintf(buf, sizeof(buf), "%d", slot % standin_devices);
	put(arg, "ordinal", buf);
	snprintf(buf, sizeof(buf), "GPU-standin-%d", slot % standin_devices);
	put(arg, "uuid", buf);
	put(arg, "device", "stand-in GPU");
	put(arg, "compute_capability", "9.0");
}

static inline lks_backend standin_backend(void)
{
	lks_backend be = lks_backend_cpu;

	be.name = "standin";
	be.host_memory = NULL;  /* not the host's: the runner stages or asks for comm */
	be.comm = standin_comm;
	be.open_rank = standin_open_rank;
	be.describe = standin_describe;
	return be;
}

static inline void standin_reset(void)
{
	standin_plan = (struct standin_plan){ -1, -1, -1, -1 };
	atomic_store(&standin_joins, 0);
	atomic_store(&standin_ops, 0);
	atomic_store(&standin_released, 0);
	pthread_mutex_lock(&standin_ctx_lock);
	standin_nctx = 0;
	pthread_mutex_unlock(&standin_ctx_lock);
	standin_devices = 8;
}

#endif
