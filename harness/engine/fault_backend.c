/*
 * fault_backend.c: a fault planted in a rank's seams (fault.h, lks_fault_plant_rank): a
 * backend around the run's for the kinds that act on the rank's data (bitflip and nan where
 * the tracer measures their tensor, scale_round_up and stale_bwd_scale in a cast), which
 * calls its kind's action (fault.c's table) before the run's backend's method, and the
 * communicator around the rank's end for those that act in a collective (fault_comm.c).
 * Every other method is the run's backend's own; the model, the tracer and the runner
 * know nothing of it.
 */
#include "harness/engine/fault_impl.h"

#include <stdlib.h>
#include <string.h>

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
	if (!row->traced && !row->quantize && !row->scale_group)
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

/* A scale-group fault of kind on w's rank now, for operand name: struck (counted), or not */
static int lks_fault_scale_group_hit(lks_fault_plant *w, lks_fault_kind kind, const char *name)
{
	if (!w || !lks_fault_here(w->f, kind, *w->step, w->rank))
		return 0;
	w->seen = 1;
	if (strcmp(name, w->f->tensor))
		return 0;
	w->hits++;
	return 1;
}

int lks_fault_amax_local(lks_fault_plant *w, const char *name)
{
	return lks_fault_scale_group_hit(w, LKS_FAULT_AMAX_LOCAL, name);
}

int lks_fault_amax_group(const lks_fault *f, int step, const char *name)
{
	return f->kind == LKS_FAULT_AMAX_GROUP && step >= f->step && !strcmp(name, f->tensor);
}

int lks_fault_amax_group_here(lks_fault_plant *w, const char *name)
{
	return lks_fault_scale_group_hit(w, LKS_FAULT_AMAX_GROUP, name);
}

int lks_fault_plant_check(const lks_fault_plant *w)
{
	/* a scale-group fault whose steps the run reached (--steps may stop before them: a
	   fault said not to be planted) and that never met its operand there; the case's
	   reading refuses an operand it cannot act on (lks_fault_fits_model): a safety net */
	if (w && lks_fault_rows[w->f->kind].scale_group && !w->hits && *w->step >= w->f->step)
		return lks_err("inject: %s struck nothing: no tensor-parallel group reduces the amax "
		               "of operand '%s' in this run (its recipe's scale group for it is none: "
		               "whole on every rank, scaled across the split, or a delayed scale)",
		               lks_fault_kind_name(w->f->kind), w->f->tensor);
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
