/*
 * fault_comm.c: a planted skip_allreduce as a communicator around the struck rank's end
 * (fault.h), as the tests wrap a backend: the rank still sends its gradient (the others'
 * sum has it, as over a link that delivers but never receives) and keeps its own, so it
 * clips its own gradient by its own norm and applies it. The model and the runner know
 * nothing of it.
 */
#include "harness/engine/fault.h"

#include <stdlib.h>
#include <string.h>

struct lks_fault_comm {
	lks_comm base;          /* first: an lks_comm * is one of these */
	lks_comm *inner;
	const lks_fault *f;
	const int *step;        /* the rank's step under way */
	float *own;             /* its gradient, kept over the sum */
};

static struct lks_fault_comm *lks_fc_of(lks_comm *c)
{
	return (struct lks_fault_comm *)c;
}

static int lks_fc_sum(lks_comm *c, float *x, size_t n)
{
	struct lks_fault_comm *w = lks_fc_of(c);

	if (*w->step != w->f->step)
		return lks_comm_allreduce_sum(w->inner, x, n);
	free(w->own);
	if (!(w->own = malloc((n ? n : 1) * sizeof(float)))) {
		lks_comm_abort(w->inner, "out of memory");
		return lks_err("out of memory");
	}
	memcpy(w->own, x, n * sizeof(float));
	if (lks_comm_allreduce_sum(w->inner, x, n))
		return -1;
	memcpy(x, w->own, n * sizeof(float));
	return 0;
}

static int lks_fc_max(lks_comm *c, float *x, size_t n)
{
	return lks_comm_allreduce_max(lks_fc_of(c)->inner, x, n);
}

static int lks_fc_gather(lks_comm *c, const void *x, size_t bytes, void **out, size_t *counts)
{
	return lks_comm_gather(lks_fc_of(c)->inner, x, bytes, out, counts);
}

static int lks_fc_barrier(lks_comm *c)
{
	return lks_comm_barrier(lks_fc_of(c)->inner);
}

static void lks_fc_abort(lks_comm *c, const char *why)
{
	lks_comm_abort(lks_fc_of(c)->inner, why);
}

static void lks_fc_close(lks_comm *c)
{
	struct lks_fault_comm *w = lks_fc_of(c);

	lks_comm_close(w->inner);
	free(w->own);
	free(w);
}

static int lks_fc_aborted(lks_comm *c)
{
	return lks_comm_aborted(lks_fc_of(c)->inner);
}

static const lks_comm_methods lks_fault_comm_methods = {
	.version = LKS_COMM_VERSION,
	.name = "skip_allreduce",
	.allreduce_sum = lks_fc_sum,
	.allreduce_max = lks_fc_max,
	.gather = lks_fc_gather,
	.barrier = lks_fc_barrier,
	.abort = lks_fc_abort,
	.close = lks_fc_close,
	.aborted = lks_fc_aborted,
};

int lks_fault_comm(const lks_fault *f, const int *step, lks_comm *inner, lks_comm **out)
{
	struct lks_fault_comm *w = calloc(1, sizeof(*w));

	if (!w)
		return lks_err("out of memory");
	*w = (struct lks_fault_comm){ { &lks_fault_comm_methods, inner->rank, inner->size },
	                              inner, f, step, NULL };
	*out = &w->base;
	return 0;
}
