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

/* ---- rs_drop_tail and ag_stale: the collectives of an FSDP run (runner_fsdp.c) ---- */

#define LKS_FC_ORDINALS 4  /* all-gathers of a step told apart (an FSDP step makes two) */

struct lks_fault_fsdp {
	lks_comm base;          /* first: an lks_comm * is one of these */
	lks_comm *inner;
	const lks_fault *f;
	const int *step;        /* the rank's step under way */
	int seen_step, ordinal; /* the step of the last all-gather, and its count there */
	float *kept[LKS_FC_ORDINALS];  /* ag_stale: this rank's shard sent by each all-gather of
	                                  the step before, and of this one */
	float *now[LKS_FC_ORDINALS];
	size_t n[LKS_FC_ORDINALS];
};

static struct lks_fault_fsdp *lks_ff_of(lks_comm *c)
{
	return (struct lks_fault_fsdp *)c;
}

static int lks_ff_sum(lks_comm *c, float *x, size_t n)
{
	return lks_comm_allreduce_sum(lks_ff_of(c)->inner, x, n);
}

static int lks_ff_max(lks_comm *c, float *x, size_t n)
{
	return lks_comm_allreduce_max(lks_ff_of(c)->inner, x, n);
}

static int lks_ff_gather(lks_comm *c, const void *x, size_t bytes, void **out, size_t *counts)
{
	return lks_comm_gather(lks_ff_of(c)->inner, x, bytes, out, counts);
}

static int lks_ff_barrier(lks_comm *c)
{
	return lks_comm_barrier(lks_ff_of(c)->inner);
}

static void lks_ff_abort(lks_comm *c, const char *why)
{
	lks_comm_abort(lks_ff_of(c)->inner, why);
}

static int lks_ff_aborted(lks_comm *c)
{
	return lks_comm_aborted(lks_ff_of(c)->inner);
}

static void lks_ff_close(lks_comm *c)
{
	struct lks_fault_fsdp *w = lks_ff_of(c);

	lks_comm_close(w->inner);
	for (int i = 0; i < LKS_FC_ORDINALS; i++) {
		free(w->kept[i]);
		free(w->now[i]);
	}
	free(w);
}

/* rs_drop_tail: at the fault's step the last count (1) elements of this rank's shard keep
   what its output buffer held, as a reduction that stops short leaves them */
static int lks_ff_reduce_scatter(lks_comm *c, const float *x, size_t n, float *out)
{
	struct lks_fault_fsdp *w = lks_ff_of(c);
	size_t lost = w->f->count > 0 ? (size_t)w->f->count : 1;
	float *sum;
	int rc;

	if (w->f->kind != LKS_FAULT_RS_DROP_TAIL || *w->step != w->f->step)
		return lks_comm_reduce_scatter(w->inner, x, n, out);
	if (!(sum = malloc((n ? n : 1) * sizeof(float)))) {
		lks_comm_abort(w->inner, "out of memory");
		return lks_err("out of memory");
	}
	lost = lost < n ? lost : n;
	if ((rc = lks_comm_reduce_scatter(w->inner, x, n, sum)) == 0)
		memcpy(out, sum, (n - lost) * sizeof(float));
	free(sum);
	return rc;
}

/* ag_stale: at the fault's step each all-gather sends, for this rank, what the same
   all-gather of the step before sent (the k-th of each step: an FSDP step gathers its
   gradient, then its parameters) */
static int lks_ff_all_gather(lks_comm *c, const float *x, size_t n, float *out)
{
	struct lks_fault_fsdp *w = lks_ff_of(c);
	int k, struck;
	float *t;

	if (w->f->kind != LKS_FAULT_AG_STALE)
		return lks_comm_all_gather(w->inner, x, n, out);
	if (*w->step != w->seen_step) {  /* a new step: this one's become the step before's */
		for (int i = 0; i < LKS_FC_ORDINALS; i++) {
			t = w->kept[i];
			w->kept[i] = w->now[i];
			w->now[i] = t;
		}
		w->seen_step = *w->step;
		w->ordinal = 0;
	}
	k = w->ordinal++;
	struck = *w->step == w->f->step && k < LKS_FC_ORDINALS && w->kept[k] && w->n[k] == n;
	if (k < LKS_FC_ORDINALS && !struck) {  /* kept for the step after */
		if (!(t = realloc(w->now[k], (n ? n : 1) * sizeof(float)))) {
			lks_comm_abort(w->inner, "out of memory");
			return lks_err("out of memory");
		}
		memcpy(t, x, n * sizeof(float));
		w->now[k] = t;
		w->n[k] = n;
	}
	return lks_comm_all_gather(w->inner, struck ? w->kept[k] : x, n, out);
}

static const lks_comm_methods lks_fault_fsdp_methods = {
	.version = LKS_COMM_VERSION,
	.name = "fsdp fault",
	.allreduce_sum = lks_ff_sum,
	.allreduce_max = lks_ff_max,
	.gather = lks_ff_gather,
	.barrier = lks_ff_barrier,
	.abort = lks_ff_abort,
	.close = lks_ff_close,
	.aborted = lks_ff_aborted,
	.all_gather = lks_ff_all_gather,
	.reduce_scatter = lks_ff_reduce_scatter,
};

int lks_fault_comm_fsdp(const lks_fault *f, const int *step, lks_comm *inner, lks_comm **out)
{
	struct lks_fault_fsdp *w = calloc(1, sizeof(*w));

	if (!w)
		return lks_err("out of memory");
	w->base = (lks_comm){ &lks_fault_fsdp_methods, inner->rank, inner->size };
	w->inner = inner;
	w->f = f;
	w->step = step;
	w->seen_step = -1;
	*out = &w->base;
	return 0;
}
