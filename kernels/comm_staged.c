/*
 * comm_staged.c: a host-memory view of a device communicator (backend.h,
 * lks_comm_staged). Code that stages its collectives through the host (model_tp.c,
 * runner_fsdp.c: their buffers are the host's, where they also check and lay out what
 * they send) reaches a device communicator through it: each collective uploads its host
 * buffer into a scratch of the rank's backend context, runs there on the device
 * communicator (NCCL's collectives, ordered or the library's own), and downloads the result.
 * The bits are the device communicator's; the cost is two transfers a collective, which
 * code that keeps its data on the device would not pay.
 */
#include "kernels/backend.h"

#include <stdlib.h>

struct lks_comm_staged {
	lks_comm base;          /* first: an lks_comm * is one of these */
	lks_comm *dev;
	const lks_backend *be;
	void *ctx;
	float *scratch;         /* the backend's memory, cap floats */
	size_t cap;
	int owns;               /* closing this closes dev */
};

static struct lks_comm_staged *lks_staged_of(lks_comm *c)
{
	return (struct lks_comm_staged *)c;
}

/* the scratch, n floats at least */
static float *lks_staged_room(struct lks_comm_staged *s, size_t n)
{
	void *p;

	if (n <= s->cap)
		return s->scratch;
	if (lks_be_alloc(s->be, s->ctx, (n ? n : 1) * sizeof(float), &p)) {
		lks_comm_abort(s->dev, lks_errmsg());
		return NULL;
	}
	lks_be_free(s->be, s->ctx, s->scratch);
	s->scratch = p;
	s->cap = n;
	return p;
}

/* x (nin floats, host) up into the scratch, op from there into the scratch at nin (nout
   floats, the device's part of the result), down to out */
enum lks_staged_op { LKS_STAGED_SUM, LKS_STAGED_MAX, LKS_STAGED_AG, LKS_STAGED_RS };

static int lks_staged_run(lks_comm *c, enum lks_staged_op op, const float *x, size_t nin,
                          size_t n, float *out, size_t nout)
{
	struct lks_comm_staged *s = lks_staged_of(c);
	int in_place = op == LKS_STAGED_SUM || op == LKS_STAGED_MAX;
	float *d = lks_staged_room(s, in_place ? nin : nin + nout), *r;
	int rc;

	if (!d)
		return -1;
	r = in_place ? d : d + nin;
	if (lks_be_upload(s->be, s->ctx, d, x, nin * sizeof(float))) {
		lks_comm_abort(s->dev, lks_errmsg());
		return -1;
	}
	switch (op) {
	case LKS_STAGED_SUM: rc = lks_comm_allreduce_sum(s->dev, d, n); break;
	case LKS_STAGED_MAX: rc = lks_comm_allreduce_max(s->dev, d, n); break;
	case LKS_STAGED_AG: rc = lks_comm_all_gather(s->dev, d, n, r); break;
	default: rc = lks_comm_reduce_scatter(s->dev, d, n, r); break;
	}
	if (rc == 0 && lks_be_download(s->be, s->ctx, out, r, nout * sizeof(float))) {
		lks_comm_abort(s->dev, lks_errmsg());
		return -1;
	}
	return rc;
}

static int lks_staged_sum(lks_comm *c, float *x, size_t n)
{
	return lks_staged_run(c, LKS_STAGED_SUM, x, n, n, x, n);
}

static int lks_staged_max(lks_comm *c, float *x, size_t n)
{
	return lks_staged_run(c, LKS_STAGED_MAX, x, n, n, x, n);
}

static int lks_staged_all_gather(lks_comm *c, const float *x, size_t n, float *out)
{
	return lks_staged_run(c, LKS_STAGED_AG, x, n, n, out, (size_t)c->size * n);
}

static int lks_staged_reduce_scatter(lks_comm *c, const float *x, size_t n, float *out)
{
	return lks_staged_run(c, LKS_STAGED_RS, x, (size_t)c->size * n, n, out, n);
}

static int lks_staged_gather(lks_comm *c, const void *x, size_t bytes, void **out,
                             size_t *counts)
{
	return lks_comm_gather(lks_staged_of(c)->dev, x, bytes, out, counts);
}

static int lks_staged_barrier(lks_comm *c)
{
	return lks_comm_barrier(lks_staged_of(c)->dev);
}

static void lks_staged_abort(lks_comm *c, const char *why)
{
	lks_comm_abort(lks_staged_of(c)->dev, why);
}

static int lks_staged_aborted(lks_comm *c)
{
	return lks_comm_aborted(lks_staged_of(c)->dev);
}

static int lks_staged_why(lks_comm *c, char *buf, size_t n)
{
	return lks_comm_why(lks_staged_of(c)->dev, buf, n);
}

static void lks_staged_close(lks_comm *c)
{
	struct lks_comm_staged *s = lks_staged_of(c);

	lks_be_free(s->be, s->ctx, s->scratch);
	if (s->owns)
		lks_comm_close(s->dev);
	free(s);
}

/* the device communicator's sub-group, seen from the host as this is */
static int lks_staged_split(lks_comm *c, int groups, int color, lks_comm **out)
{
	struct lks_comm_staged *s = lks_staged_of(c);
	lks_comm *dev;

	*out = NULL;
	if (lks_comm_split(s->dev, groups, color, &dev))
		return -1;
	if (lks_comm_staged(dev, s->be, s->ctx, 1, out)) {
		lks_comm_close(dev);
		return -1;
	}
	return 0;
}

static const lks_comm_methods lks_comm_staged_methods = {
	.version = LKS_COMM_VERSION,
	.name = "staged",
	.allreduce_sum = lks_staged_sum,
	.allreduce_max = lks_staged_max,
	.gather = lks_staged_gather,
	.barrier = lks_staged_barrier,
	.abort = lks_staged_abort,
	.close = lks_staged_close,
	.aborted = lks_staged_aborted,
	.all_gather = lks_staged_all_gather,
	.reduce_scatter = lks_staged_reduce_scatter,
	.split = lks_staged_split,
	.why = lks_staged_why,
};

int lks_comm_staged(lks_comm *dev, const lks_backend *be, void *ctx, int owns, lks_comm **out)
{
	struct lks_comm_staged *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s) {
		lks_comm_abort(dev, "out of memory");
		return lks_err("out of memory");
	}
	*s = (struct lks_comm_staged){ { &lks_comm_staged_methods, dev->rank, dev->size }, dev, be,
	                               ctx, NULL, 0, owns };
	*out = &s->base;
	return 0;
}
