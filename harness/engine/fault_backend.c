/*
 * fault_backend.c: a fault planted in a rank's seams (fault.h, lks_fault_plant_rank): a
 * backend around the run's for the kinds that act on the rank's data (bitflip and nan where the
 * tracer measures their tensor, scale_round_up and stale_bwd_scale in a cast), and the
 * communicator around the rank's end for those that act in a collective (fault_comm.c).
 * Every other method is the run's backend's own; the model, the tracer and the runner
 * know nothing of it.
 */
#include "harness/engine/fault_impl.h"

#include <stdlib.h>
#include <string.h>

#include "harness/engine/recipe.h"
#include "harness/store/trace_store.h"
#include "kernels/err.h"

static int lks_fault_be_traced(const lks_backend *be, void *ctx, float *x, size_t n,
                               const char *name, int phase)
{
	struct lks_fault_plant *w = be->app;
	const lks_fault_row *row = &lks_fault_rows[w->f->kind];

	if (row->traced && row->traced(w, ctx, x, n, name, phase))
		return -1;
	return lks_be_traced(w->inner, ctx, x, n, name, phase);
}

static int lks_fault_be_quantize(const lks_backend *be, void *ctx, lks_quant *q)
{
	struct lks_fault_plant *w = be->app;
	const lks_fault_row *row = &lks_fault_rows[w->f->kind];

	if (row->quantize && row->quantize(w, ctx, q))
		return -1;
	return lks_be_quantize(w->inner, ctx, q);
}

/* bitflip and nan: the one element of the tensor aimed at, through the host (x is the
   backend's memory), in the forward, not the recompute that repeats its names */
int lks_fault_strike_traced(struct lks_fault_plant *w, void *ctx, float *x, size_t n,
                            const char *name, int phase)
{
	size_t at = 0;
	int hit;
	float v;

	if (phase == LKS_PHASE_RECOMPUTE)
		return 0;
	w->seen |= *w->step == w->f->step;
	if ((hit = lks_fault_aim(w->f, *w->step, w->rank, name, n, &at)) <= 0)
		return hit;
	if (lks_be_download(w->inner, ctx, &v, x + at, sizeof(v)))
		return -1;
	lks_fault_strike(w->f, &v);
	if (lks_be_upload(w->inner, ctx, x + at, &v, sizeof(v)))
		return -1;
	w->hits++;
	return 0;
}

/* scale_round_up: a power-of-two scale rounded up instead of down, where it acts */
int lks_fault_round_up(struct lks_fault_plant *w, void *ctx, lks_quant *q)
{
	(void)ctx;
	if (q->pow2 && lks_fault_here(w->f, w->f->kind, *w->step, w->rank))
		q->pow2 = LKS_POW2_UP;
	return 0;
}

/* stale_bwd_scale: every cast of dy with a given scale (delayed scaling) takes the scale
   the same cast of the first step was given, as when TransformerEngine skipped the
   backward scales' update: the amax history goes on, the scale stays. The casts of a step
   come in the same order every step, so the count of the cast within its step names it. */
int lks_fault_stale_scale(struct lks_fault_plant *w, void *ctx, lks_quant *q)
{
	size_t ns = lks_quant_nscales(q), bytes = ns * sizeof(float);
	int k;

	if (!q->scale_given || q->operand != LKS_SRC_DY)
		return 0;
	if (*w->step != w->last_step) {
		w->last_step = *w->step;
		w->ordinal = 0;
	}
	k = w->ordinal;
	w->ordinal += (int)ns;
	if (k < w->nkept)  /* kept: the first step's, over the one given now */
		return k + (int)ns <= w->nkept ? lks_be_upload(w->inner, ctx, q->scale, w->kept + k, bytes)
		                             : lks_err("stale_bwd_scale: the casts of dy changed");
	if (k + (int)ns > w->capkept) {
		int cap = 2 * (k + (int)ns);
		float *nk = realloc(w->kept, (size_t)cap * sizeof(float));

		if (!nk)
			return lks_err("out of memory");
		w->kept = nk;
		w->capkept = cap;
	}
	w->nkept = k + (int)ns;
	return lks_be_download(w->inner, ctx, w->kept + k, q->scale, bytes);
}

int lks_fault_plant_rank(const lks_fault *f, int rank, const int *step, const lks_backend **be,
                    lks_comm **comm, lks_fault_plant **out)
{
	const lks_fault_row *row = &lks_fault_rows[f->kind];
	struct lks_fault_plant *w;
	size_t size;

	*out = NULL;
	if (f->kind == LKS_FAULT_NONE || (f->rank >= 0 && f->rank != rank))
		return 0;
	if (row->comm && row->comm(f, step, *comm, comm))
		return -1;
	if (!row->traced && !row->quantize)
		return 0;
	if (!(w = calloc(1, sizeof(*w))))
		return lks_err("out of memory");
	/* the inner's methods as far as its struct goes, ours beyond (none) */
	size = (size_t)(*be)->size < sizeof(w->be) ? (size_t)(*be)->size : sizeof(w->be);
	memcpy(&w->be, *be, size);
	w->be.version = LKS_BACKEND_VERSION;
	w->be.size = (int)sizeof(w->be);
	w->be.app = w;
	w->be.traced = lks_fault_be_traced;
	w->be.quantize = LKS_BE_HAS(*be, quantize) ? lks_fault_be_quantize : NULL;
	w->inner = *be;
	w->f = f;
	w->rank = rank;
	w->step = step;
	w->last_step = -1;
	*be = &w->be;
	*out = w;
	return 0;
}

int lks_fault_plant_check(const lks_fault_plant *w)
{
	if (!w || !lks_fault_rows[w->f->kind].tensor || !w->seen || w->hits)
		return 0;
	return lks_err("inject: no tensor '%s' is traced (float tensors only, not FP8 operands; "
	               "lockstep diff or the report lists them)", w->f->tensor);
}

void lks_fault_unplant(lks_fault_plant *w)
{
	if (!w)
		return;
	free(w->kept);
	free(w);
}
