/*
 * runner_update.c: a rank's update after its all-reduce (runner.c's step): the norm of its
 * summed gradient, the clip and AdamW, in tasks on the rank's threads or in one call of a
 * backend that has one (update); and delayed scaling's amax, all-reduced and rolled into
 * the histories.
 */
#include "harness/engine/runner_impl.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/element/ops.h"
#include "kernels/err.h"

/* A task's backend call failed: the first failure's message (the error of that task's
   thread, err.h) is kept for the rank. */
static void lks_task_fail(lks_rank *r)
{
	int none = 0;

	if (atomic_compare_exchange_strong(&r->task_failed, &none, 1))
		snprintf(r->task_err, sizeof(r->task_err), "%s", lks_errmsg());
}

/* The clip of a rank's summed gradient, chunk by chunk (element-wise: any thread, any
   order). */
static void lks_clip_task(void *arg, int task, int thread)
{
	lks_rank *r = arg;
	struct lks_runner *R = r->R;
	size_t i0 = (size_t)task * LKS_REDUCE_CHUNK, n = R->m.nparams;
	size_t i1 = i0 + LKS_REDUCE_CHUNK < n ? i0 + LKS_REDUCE_CHUNK : n;

	if (lks_be_clip(r->be, r->bectx, r->grads + i0, i1 - i0, r->clip_coef))
		lks_task_fail(r);
}

/* AdamW on one chunk of a rank's replica. Elements are independent, so chunks may run on
   any thread in any order. */
static void lks_update_task(void *arg, int task, int thread)
{
	lks_rank *r = arg;
	struct lks_runner *R = r->R;
	const lks_optim_cfg *o = &R->c->optim;
	size_t np = R->m.nparams, c0 = (size_t)task * LKS_REDUCE_CHUNK;
	size_t c1 = c0 + LKS_REDUCE_CHUNK < np ? c0 + LKS_REDUCE_CHUNK : np;
	float *m1 = r->m1, *m2 = r->m2;
	const float *g = r->grads;

	c0 = c0 > r->own0 ? c0 : r->own0;  /* its own parameters: all, or its FSDP shard */
	c1 = c1 < r->own1 ? c1 : r->own1;
	for (int i = 0; i < R->m.nt; i++) {
		const lks_ptensor *p = &R->m.t[i];
		size_t a = p->off > c0 ? p->off : c0, b = p->off + p->n < c1 ? p->off + p->n : c1;

		if (a < b && lks_be_adamw(r->be, r->bectx, r->params + a, g + a, m1 + a, m2 + a, b - a,
		                          R->lr, o->beta1, o->beta2, o->eps,
		                          p->decay ? o->weight_decay : 0.0f, R->bc1, R->bc2))
			lks_task_fail(r);
	}
}

/* The all-reduce max of rank index i's n amax slots (host): through its backend's memory
   where the communicator takes device memory. */
static int lks_amax_allreduce(struct lks_runner *R, lks_rank *r, float *amax, size_t n)
{
	float *d = r->damax;

	if (R->W == 1)  /* the max over one rank is its own, NaN or not */
		return 0;
	if (!d)
		return lks_comm_allreduce_max(r->comm, amax, n);
	return lks_be_upload(r->be, r->bectx, d, amax, n * sizeof(float))
	    || lks_comm_allreduce_max(r->comm, d, n)
	    || lks_be_download(r->be, r->bectx, amax, d, n * sizeof(float)) ? -1 : 0;
}

/* Delayed scaling: every slot's amax of this step all-reduced (max, NaN wins) as TE does,
   then rolled into the history and scale of rank r. */
int lks_step_delayed(struct lks_runner *R, lks_rank *r)
{
	const lks_recipe_rules *rules = lks_recipe_rules_of(R->run->recipe);
	int nslots = 3 * R->m.nlin;
	lks_amax_slot *slots = r->slots;
	float *amax = r->amax;

	if (!rules->op[LKS_ROLE_FWD][0].delayed)
		return 0;
	for (int s = 0; s < nslots; s++)
		amax[s] = slots[s].cur;
	if (lks_amax_allreduce(R, r, amax, (size_t)nslots))
		return -1;
	for (int s = 0; s < nslots; s++) {
		lks_src src = (lks_src)(s % 3);
		lks_dtype fmt = src == LKS_SRC_DY ? rules->op[LKS_ROLE_DGRAD][0].dtype
		              : rules->op[LKS_ROLE_FWD][src].dtype;

		slots[s].cur = amax[s];
		lks_amax_slot_roll(&slots[s], fmt, R->run->amax_most_recent, R->run->margin);
	}
	return 0;
}

/* The clip by the global norm (each rank's of the sum it holds: the same bits on every
   rank; element/ops.h's lks_clip_coef) and AdamW on rank's replica; one rank spreads them
   over its threads, many ranks run each their own in their thread. A NaN coefficient is
   applied too, so a NaN gradient makes every gradient NaN (and 0 * inf is NaN). */
int lks_rank_update(struct lks_runner *R, lks_rank *r, double *gnorm)
{
	const lks_optim_cfg *opt = &R->c->optim;
	int ntasks = (int)((R->m.nparams + LKS_REDUCE_CHUNK - 1) / LKS_REDUCE_CHUNK);
	lks_pool *pool = R->W > 1 ? NULL : R->pool1;
	double ss;

	if (lks_be_updates(r->be)) {  /* the same, in one call: the device's, no host between */
		lks_update u = { R->parts, R->m.nt, opt->clip, R->lr, opt->beta1, opt->beta2,
		                 opt->eps, R->bc1, R->bc2 };

		if (r->fsdp)  /* AdamW of its shard; the norm is still the whole gradient's */
			u.part = lks_fsdp_update_parts(r, &u.nparts);

		if (lks_be_update(r->be, r->bectx, r->params, r->grads, r->m1, r->m2, R->m.nparams,
		                  &u, &ss))
			return -1;
		*gnorm = sqrt(ss);
		return 0;
	}
	if (lks_be_sumsq(r->be, r->bectx, r->grads, R->m.nparams, &ss))  /* fixed order */
		return -1;
	*gnorm = sqrt(ss);
	atomic_store(&r->task_failed, 0);
	if (lks_clip_coef(*gnorm, opt->clip, &r->clip_coef))
		lks_pool_run(pool, ntasks, lks_clip_task, r);
	if (!atomic_load(&r->task_failed))
		lks_pool_run(pool, ntasks, lks_update_task, r);
	return atomic_load(&r->task_failed) ? lks_err("%s", r->task_err) : 0;
}
