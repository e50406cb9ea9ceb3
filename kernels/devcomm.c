/*
 * devcomm.c: a communicator on devices over a link's asynchronous primitives, with every
 * wait bounded by the group's abort and a deadline (see devcomm.h).
 */
#include "kernels/devcomm.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/clock.h"
#include "kernels/err.h"

/* A wait polls without sleeping for its first LKS_DEVCOMM_SPIN_S (a step's collective is
   usually done by then, and a sleep costs ~50 us at least), then sleeps between two polls,
   10 us doubled up to 1 ms: a wait on a slow rank costs little CPU and ends at most 1 ms
   late (comm_mpi.c's rule). */
#define LKS_DEVCOMM_SPIN_S 200e-6
#define LKS_DEVCOMM_NAP_MAX_NS 1000000L

struct lks_devcomm_end {
	lks_comm base;          /* first: an lks_comm * is one of these */
	lks_comm *host;         /* the rank's host end: gather, barrier, abort */
	const lks_devlink_methods *m;
	void *link;
	int mode;
	double timeout_s;
	atomic_int aborted;     /* abort was called on this end (from any thread) */
	int broken;             /* the link was aborted: it takes no more work */
};

static struct lks_devcomm_end *lks_devcomm_of(lks_comm *c)
{
	return (struct lks_devcomm_end *)c;
}

/* Waits until the link has done what was started (what: for messages). An abort of this
   end or of the process's group aborts the link; past the deadline this rank aborts the
   group, so that every other rank's wait ends too. */
static int lks_devcomm_wait(struct lks_devcomm_end *e, const char *what)
{
	double t0 = lks_now(), waited;
	long nap = 10000;

	for (;;) {
		int p = e->m->poll(e->link);

		if (p <= 0)
			return p;
		if (atomic_load(&e->aborted) || lks_comm_aborted(e->host)) {
			char why[256];

			e->m->abort(e->link);
			e->broken = 1;
			if (!lks_comm_why(e->host, why, sizeof(why)))
				snprintf(why, sizeof(why), "no cause known");
			return lks_err("%s: %s of rank %d ended: the group was aborted (%s)",
			               e->m->name, what, e->base.rank, why);
		}
		waited = lks_now() - t0;
		if (e->timeout_s > 0 && waited > e->timeout_s) {
			char why[256];

			snprintf(why, sizeof(why), "%s: %s of rank %d had no answer from the other "
			         "ranks in %g s (--timeout)", e->m->name, what, e->base.rank, e->timeout_s);
			e->m->abort(e->link);
			e->broken = 1;
			lks_comm_abort(e->host, why);
			return lks_err("%s", why);
		}
		if (waited > LKS_DEVCOMM_SPIN_S) {
			struct timespec ts = { 0, nap };

			nanosleep(&ts, NULL);
			nap = nap * 2 < LKS_DEVCOMM_NAP_MAX_NS ? nap * 2 : LKS_DEVCOMM_NAP_MAX_NS;
		}
	}
}

static int lks_devcomm_run(lks_comm *c, lks_devcomm_op op, const float *x, size_t n,
                           float *out, const char *what)
{
	struct lks_devcomm_end *e = lks_devcomm_of(c);

	if (e->broken)
		return lks_err("%s: %s of rank %d: the communicator was aborted", e->m->name, what,
		               c->rank);
	if (e->m->queue(e->link, op, x, n, out))
		return -1;
	return lks_devcomm_wait(e, what);
}

/* whether c sums with its library's own algorithm (allreduce = nccl) */
static int lks_devcomm_library(lks_comm *c)
{
	return lks_devcomm_of(c)->mode == LKS_ALLREDUCE_NCCL;
}

static int lks_devcomm_sum(lks_comm *c, float *x, size_t n)
{
	return lks_devcomm_run(c, lks_devcomm_library(c) ? LKS_DEVCOMM_LIBRARY_SUM
	                                                 : LKS_DEVCOMM_ORDERED_SUM,
	                       x, n, x, "all-reduce sum");
}

static int lks_devcomm_max(lks_comm *c, float *x, size_t n)
{
	return lks_devcomm_run(c, LKS_DEVCOMM_ORDERED_MAX, x, n, x, "all-reduce max");
}

static int lks_devcomm_all_gather(lks_comm *c, const float *x, size_t n, float *out)
{
	return lks_devcomm_run(c, LKS_DEVCOMM_ALL_GATHER, x, n, out, "all-gather");
}

static int lks_devcomm_reduce_scatter(lks_comm *c, const float *x, size_t n, float *out)
{
	return lks_devcomm_run(c, lks_devcomm_library(c) ? LKS_DEVCOMM_LIBRARY_RS
	                                                 : LKS_DEVCOMM_ORDERED_RS,
	                       x, n, out, "reduce-scatter");
}

static int lks_devcomm_gather(lks_comm *c, const void *x, size_t bytes, void **out,
                              size_t *counts)
{
	return lks_comm_gather(lks_devcomm_of(c)->host, x, bytes, out, counts);
}

static int lks_devcomm_barrier(lks_comm *c)
{
	return lks_comm_barrier(lks_devcomm_of(c)->host);
}

/* Any thread: this end's wait (if any) aborts the link; the host's abort ends the others'
   collectives and, through lks_comm_aborted, their device waits. */
static void lks_devcomm_abort(lks_comm *c, const char *why)
{
	struct lks_devcomm_end *e = lks_devcomm_of(c);

	atomic_store(&e->aborted, 1);
	lks_comm_abort(e->host, why);
}

static int lks_devcomm_aborted(lks_comm *c)
{
	struct lks_devcomm_end *e = lks_devcomm_of(c);

	return atomic_load(&e->aborted) || lks_comm_aborted(e->host);
}

static int lks_devcomm_why(lks_comm *c, char *buf, size_t n)
{
	return lks_comm_why(lks_devcomm_of(c)->host, buf, n);
}

static int lks_devcomm_device_memory(lks_comm *c)
{
	(void)c;
	return 1;
}

/* Leaving waits for every rank's (the caller closes the ends of its ranks at once), as
   any wait: bounded. After an abort a rank may be gone, so abort, which waits for none. */
static void lks_devcomm_close(lks_comm *c)
{
	struct lks_devcomm_end *e = lks_devcomm_of(c);
	int clean = !e->broken && !lks_devcomm_aborted(c);

	if (clean && (e->m->leave(e->link) || lks_devcomm_wait(e, "leaving the group")))
		clean = 0;
	if (!clean && !e->broken)
		e->m->abort(e->link);
	e->m->release(e->link);
	lks_comm_close(e->host);
	free(e);
}

static int lks_devcomm_split(lks_comm *c, int groups, int color, lks_comm **out);

static const lks_comm_methods lks_devcomm_methods = {
	.version = LKS_COMM_VERSION,
	.name = "device",
	.allreduce_sum = lks_devcomm_sum,
	.allreduce_max = lks_devcomm_max,
	.gather = lks_devcomm_gather,
	.barrier = lks_devcomm_barrier,
	.abort = lks_devcomm_abort,
	.close = lks_devcomm_close,
	.device_memory = lks_devcomm_device_memory,
	.aborted = lks_devcomm_aborted,
	.all_gather = lks_devcomm_all_gather,
	.reduce_scatter = lks_devcomm_reduce_scatter,
	.split = lks_devcomm_split,
	.why = lks_devcomm_why,
};

/* A new end over host and link */
static struct lks_devcomm_end *lks_devcomm_end_new(lks_comm *host, const lks_devlink_methods *m,
                                                   void *link, int mode, double timeout_s)
{
	struct lks_devcomm_end *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->base = (lks_comm){ &lks_devcomm_methods, host->rank, host->size };
	e->host = host;
	e->m = m;
	e->link = link;
	e->mode = mode;
	e->timeout_s = timeout_s;
	atomic_init(&e->aborted, 0);
	return e;
}

/* The host end's sub-group (comm_group.c's: gather, barrier and abort) and the link's,
   joined as a group is (polled, bounded). On an error the parent group is aborted, so that
   no rank waits for this one. */
static int lks_devcomm_split(lks_comm *c, int groups, int color, lks_comm **out)
{
	struct lks_devcomm_end *e = lks_devcomm_of(c), *s = NULL;
	lks_comm *host;
	void *sub = NULL;
	char why[512];

	*out = NULL;
	if (!e->m->split) {
		lks_err("%s: the link makes no sub-groups", e->m->name);
		lks_comm_abort(c, lks_errmsg());
		return -1;
	}
	if (lks_comm_split(e->host, groups, color, &host))
		return -1;
	if (!(s = lks_devcomm_end_new(host, e->m, NULL, e->mode, e->timeout_s)))
		lks_err("out of memory");
	else if (e->m->split(e->link, color, host->rank, host->size, &sub) == 0
	         && (s->link = sub, lks_devcomm_wait(s, "splitting the group") == 0)) {
		*out = &s->base;
		return 0;
	}
	snprintf(why, sizeof(why), "%s", lks_errmsg());
	if (sub) {
		if (!s || !s->broken)
			e->m->abort(sub);
		e->m->release(sub);
	}
	free(s);
	lks_comm_close(host);
	lks_comm_abort(c, why);
	return lks_err("%s", why);
}

/* Whether every rank of the group may have the link: the host's all-reduce max of each
   rank's "cannot" (0 or 1) makes every rank decide alike. -1 on the host's error. */
static int lks_devcomm_fits(lks_comm *host, int fits)
{
	float cannot = fits ? 0.0f : 1.0f;

	if (lks_comm_allreduce_max(host, &cannot, 1))
		return -1;
	return cannot == 0.0f;
}

int lks_devcomm(lks_comm *host, const lks_devlink_methods *m, void *link, int fits,
                const lks_devcomm_opts *o, lks_comm **out)
{
	unsigned char id[LKS_DEVCOMM_ID_BYTES];
	struct lks_devcomm_end *e;
	int rc;

	*out = NULL;
	if ((rc = lks_devcomm_fits(host, fits)) <= 0) {
		m->release(link);
		return rc;
	}
	memset(id, 0, sizeof(id));
	if (m->id_bytes > sizeof(id)) {
		m->release(link);
		lks_err("%s: an id of %zu bytes", m->name, m->id_bytes);
		lks_comm_abort(host, lks_errmsg());
		return -1;
	}
	if (host->rank == 0 && m->make_id(link, id)) {
		m->release(link);
		lks_comm_abort(host, lks_errmsg());
		return -1;
	}
	/* rank 0's id bytes to every rank, as floats in an all-reduce sum (exact in fp32) */
	if (lks_comm_bcast_bytes(host, id, m->id_bytes)) {
		m->release(link);
		return -1;
	}
	if (!(e = lks_devcomm_end_new(host, m, link, o->mode, o->timeout_s))) {
		m->release(link);
		lks_err("out of memory");
		lks_comm_abort(host, lks_errmsg());
		return -1;
	}
	if (m->join(link, host->size, host->rank, id) || lks_devcomm_wait(e, "joining the group")) {
		char why[512];

		snprintf(why, sizeof(why), "%s", lks_errmsg());
		if (!e->broken)
			m->abort(link);
		m->release(link);
		free(e);
		lks_comm_abort(host, why);  /* the others may wait for this rank to join */
		return lks_err("%s", why);
	}
	*out = &e->base;
	return 0;
}
