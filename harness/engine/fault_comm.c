/*
 * fault_comm.c: the planted faults that act in a collective, as a communicator around the
 * struck rank's end (fault.h), as the tests wrap a backend; the model and the runner know
 * nothing of them.
 *   skip_allreduce: the rank still sends its gradient (the others' sum has it, as over a
 *     link that delivers but never receives) and keeps its own, so it clips its own
 *     gradient by its own norm and applies it;
 *   bitflip_allreduce: one bit of the rank's gradient flips in the buffer it sends (every
 *     rank's sum has it); bitflip_allreduce_out: in the sum it receives (its own only);
 *   rs_drop_tail, ag_stale: a sharded run's reduce-scatter and all-gathers: the fsdp
 *     group's (runner_fsdp.c) where fsdp > 1, else the tp group's (model_tp.c: sequence
 *     parallel's, and the gathers of split weight gradients; not a trace's copies); the
 *     wrapper is the rank's end of that group (lks_fault_group), or of the world where the
 *     group is the world.
 */
#include "harness/engine/fault.h"

#include <stdlib.h>
#include <string.h>

#include "harness/engine/case.h"
#include "harness/engine/fault_impl.h"

#define LKS_FC_ORDINALS 4  /* all-gathers of a step told apart (an FSDP step makes two) */

static __thread int lks_fc_copy;  /* a trace's copy is being gathered (lks_fault_copy) */

void lks_fault_copy(int on)
{
	lks_fc_copy = on;
}

struct lks_fault_comm {
	lks_comm base;          /* first: an lks_comm * is one of these */
	lks_comm *inner;
	const lks_fault *f;
	const int *step;        /* the rank's step under way */
	float *own;             /* skip_allreduce: its gradient, kept over the sum */
	int seen_step, ordinal; /* ag_stale: the step of the last all-gather, its count there, */
	float *kept[LKS_FC_ORDINALS];  /* this rank's shard sent by each all-gather of the step
	                                  before, and of this one */
	float *now[LKS_FC_ORDINALS];
	size_t n[LKS_FC_ORDINALS];
};

static struct lks_fault_comm *lks_fc_of(lks_comm *c)
{
	return (struct lks_fault_comm *)c;
}

/* whether the fault of kind strikes the wrapper's rank now */
static int lks_fc_now(const struct lks_fault_comm *w, lks_fault_kind kind)
{
	return w->f->kind == kind && *w->step == w->f->step;
}

static float *lks_fc_alloc(struct lks_fault_comm *w, float *p, size_t n)
{
	float *q = realloc(p, (n ? n : 1) * sizeof(float));

	if (!q) {
		lks_comm_abort(w->inner, "out of memory");
		lks_err("out of memory");
	}
	return q;
}

static int lks_fc_sum(lks_comm *c, float *x, size_t n)
{
	struct lks_fault_comm *w = lks_fc_of(c);
	float *own;

	if (lks_fc_now(w, LKS_FAULT_BITFLIP_ALLREDUCE) && (size_t)w->f->element < n)
		lks_fault_strike(w->f, &x[w->f->element]);  /* the buffer as it is sent */
	if (lks_fc_now(w, LKS_FAULT_BITFLIP_ALLREDUCE_OUT) && (size_t)w->f->element < n) {
		if (lks_comm_allreduce_sum(w->inner, x, n))
			return -1;
		lks_fault_strike(w->f, &x[w->f->element]);  /* the sum as it arrives */
		return 0;
	}
	if (!lks_fc_now(w, LKS_FAULT_SKIP_ALLREDUCE))
		return lks_comm_allreduce_sum(w->inner, x, n);
	if (!(own = lks_fc_alloc(w, w->own, n)))
		return -1;
	w->own = own;
	memcpy(w->own, x, n * sizeof(float));
	if (lks_comm_allreduce_sum(w->inner, x, n))
		return -1;
	memcpy(x, w->own, n * sizeof(float));
	return 0;
}

/* rs_drop_tail: at the fault's step the last count (1) elements of this rank's shard keep
   what its output buffer held, as a reduction that stops short leaves them */
static int lks_fc_reduce_scatter(lks_comm *c, const float *x, size_t n, float *out)
{
	struct lks_fault_comm *w = lks_fc_of(c);
	size_t lost = w->f->count > 0 ? (size_t)w->f->count : 1;
	float *sum;
	int rc;

	if (!lks_fc_now(w, LKS_FAULT_RS_DROP_TAIL))
		return lks_comm_reduce_scatter(w->inner, x, n, out);
	if (!(sum = lks_fc_alloc(w, NULL, n)))
		return -1;
	lost = lost < n ? lost : n;
	if ((rc = lks_comm_reduce_scatter(w->inner, x, n, sum)) == 0)
		memcpy(out, sum, (n - lost) * sizeof(float));
	free(sum);
	return rc;
}

/* ag_stale: at the fault's step each all-gather sends, for this rank, what the same
   all-gather of the step before sent (the k-th of each step: an FSDP step gathers its
   gradient, then its parameters); a trace's copy is none of them */
static int lks_fc_all_gather(lks_comm *c, const float *x, size_t n, float *out)
{
	struct lks_fault_comm *w = lks_fc_of(c);
	int k, struck;
	float *t;

	if (w->f->kind != LKS_FAULT_AG_STALE || lks_fc_copy)
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
	struck = lks_fc_now(w, LKS_FAULT_AG_STALE) && k < LKS_FC_ORDINALS && w->kept[k]
	      && w->n[k] == n;
	if (k < LKS_FC_ORDINALS && !struck) {  /* kept for the step after */
		if (!(t = lks_fc_alloc(w, w->now[k], n)))
			return -1;
		memcpy(t, x, n * sizeof(float));
		w->now[k] = t;
		w->n[k] = n;
	}
	return lks_comm_all_gather(w->inner, struck ? w->kept[k] : x, n, out);
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
	for (int i = 0; i < LKS_FC_ORDINALS; i++) {
		free(w->kept[i]);
		free(w->now[i]);
	}
	free(w);
}

static int lks_fc_aborted(lks_comm *c)
{
	return lks_comm_aborted(lks_fc_of(c)->inner);
}

static int lks_fc_why(lks_comm *c, char *buf, size_t n)
{
	return lks_comm_why(lks_fc_of(c)->inner, buf, n);
}

static const lks_comm_methods lks_fault_comm_methods = {
	.version = LKS_COMM_VERSION,
	.name = "fault",
	.allreduce_sum = lks_fc_sum,
	.allreduce_max = lks_fc_max,
	.gather = lks_fc_gather,
	.barrier = lks_fc_barrier,
	.abort = lks_fc_abort,
	.close = lks_fc_close,
	.aborted = lks_fc_aborted,
	.all_gather = lks_fc_all_gather,
	.reduce_scatter = lks_fc_reduce_scatter,
	.why = lks_fc_why,
};

int lks_fault_comm(const lks_fault *f, const int *step, lks_comm *inner, lks_comm **out)
{
	struct lks_fault_comm *w = calloc(1, sizeof(*w));

	if (!w)
		return lks_err("out of memory");
	w->base = (lks_comm){ &lks_fault_comm_methods, inner->rank, inner->size };
	w->inner = inner;
	w->f = f;
	w->step = step;
	w->seen_step = -1;
	*out = &w->base;
	return 0;
}

int lks_fault_group(const lks_fault *f, const struct lks_run_cfg *r, int rank,
                    const int *step, int fsdp_group, lks_comm **c)
{
	if (!lks_fault_rows[f->kind].gathers || f->rank != rank || fsdp_group != (r->fsdp > 1))
		return 0;
	return lks_fault_comm(f, step, *c, c);
}
