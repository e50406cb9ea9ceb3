/*
 * check_tensors.c: the check kinds on imported tensor traces (harness/store/tensor_trace.h;
 * run.h's tt). bitwise needs nothing here: the walker aligns and walks tensor
 * traces (walk_tensors.c). close compares one statistic by name within rtol/atol (the
 * case's metric: l2, amax, ...; its tensors pattern too); finite finds the first tensor,
 * in execution order over the ranks, with a statistic not finite or a count of non-finite
 * values above 0; ranks_agree compares each rank's tensors with rank 0's, bit for bit
 * (hashes and statistics), those the case's tensors pattern matches, by default the
 * weights of the forward phase, which every rank of a data-parallel job holds alike.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness/import/import.h"
#include "harness/store/tensor_trace.h"
#include "harness/verify/check_impl.h"
#include "harness/verify/walk.h"
#include "kernels/err.h"

/* The tensors ranks_agree compares when the case names none: the weights. */
#define LKS_REPLICATED_DEFAULT "*weight*"

static int lks_tensor_close(struct lks_check_ctx *x)
{
	lks_walk_opts o = { .rtol = x->k->rtol, .atol = x->k->atol, .metric_name = x->k->metric,
	                    .pattern = x->k->tensors[0] ? x->k->tensors : NULL, .label_a = x->label_a,
	                    .label_b = x->label_b };
	lks_walk_count n;

	if (lks_walk(&o, x->a, x->b, x->res, &n))
		return -1;
	if (!x->res->failed && !n.ncompared) {
		lks_check_result_init(x->res);
		x->res->verdict = LKS_VERDICT_FAIL;
		x->res->failed = 1;
		x->res->bad_input = LKS_BAD_CASE;
		snprintf(x->res->message, sizeof(x->res->message), "metric = %s%s%s: no tensor of "
		         "runs '%s' and '%s' holds that statistic on both sides ('lockstep diff' "
		         "lists them)", x->k->metric, x->k->tensors[0] ? ", tensors = " : "",
		         x->k->tensors, x->k->a, x->k->b);
	}
	return 0;
}

/* Whether statistic k's value v says a non-finite value: itself not finite, or a count of
   them above 0. */
static int lks_says_nonfinite(const lks_tensor_trace *t, int k, double v)
{
	const char *name = t->stats[k];

	if (!isfinite(v))
		return 1;
	return v > 0 && (!strcmp(name, "nonfinite") || !strcmp(name, "nan_count")
	                 || !strcmp(name, "inf_count"));
}

static int lks_tensor_finite(struct lks_check_ctx *x)
{
	lks_stored_run *a = x->a;
	lks_tensor_trace *t = a->tt;

	for (int step = 0; step < a->nsteps; step++) {
		size_t best = SIZE_MAX;

		if (lks_tensor_trace_step(t, step))
			return -1;
		for (int rank = 0; rank < t->nranks; rank++) {
			const lks_tentry *e;
			size_t n = lks_tensor_trace_rank(t, rank, &e);

			for (size_t i = 0; i < n && i < best; i++)
				for (int j = 0; j < e[i].n; j++) {
					const lks_tval *v = &t->val[e[i].first + j];
					char buf[LKS_IMPORT_NAME_MAX];
					const char *f;

					if (!lks_says_nonfinite(t, v->stat, v->value))
						continue;
					best = i;
					lks_check_result_init(x->res);
					lks_walk_at(x->res, a, step, rank, e[i].tensor);
					f = lks_tensor_stat_name(t->stats[v->stat], strlen(t->stats[v->stat]),
					                         buf);
					if (f == buf || !f) {
						snprintf(x->res->metric, sizeof(x->res->metric), "%s",
						         t->stats[v->stat]);
						f = "value";
					}
					lks_walk_real(x->res, f, v->value, NAN, 0);
					break;
				}
		}
		if (best != SIZE_MAX)
			return 0;
	}
	return 0;
}

static int lks_tensor_ranks_agree(struct lks_check_ctx *x)
{
	lks_walk_opts o = { .exact = 1, .pattern = x->k->tensors[0] ? x->k->tensors
	                                                             : LKS_REPLICATED_DEFAULT,
	                    .label_a = "a rank", .label_b = "rank 0" };
	lks_walk_count n;

	/* by default the weights as the forward reads them: their gradients differ per rank
	   until they are reduced */
	if (lks_walk_tensor_ranks(&o, x->a, !x->k->tensors[0], x->res, &n))
		return -1;
	if (!x->res->failed && !n.nmatch) {  /* it passed, comparing nothing */
		x->res->verdict = LKS_VERDICT_UNSUPPORTED;
		snprintf(x->res->message, sizeof(x->res->message), "no tensor matched '%s' on two "
		         "ranks: nothing compared (tensors = PATTERN chooses others); not counted as "
		         "a failure", o.pattern);
	}
	return 0;
}

lks_check_fn lks_check_tensor_fn(lks_check_kind kind)
{
	switch (kind) {
	case LKS_CHECK_CLOSE: return lks_tensor_close;
	case LKS_CHECK_FINITE: return lks_tensor_finite;
	case LKS_CHECK_RANKS_AGREE: return lks_tensor_ranks_agree;
	default: return NULL;
	}
}
