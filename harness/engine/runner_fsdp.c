/*
 * runner_fsdp.c: a run's ranks as FSDP shards (fsdp = F in the run; runner_impl.h).
 *
 * The ranks form groups of F ranks (the mesh's fsdp dimension, innermost but for tp, as
 * torchtitan's dp_shard: F consecutive ranks without tp), and the world size / F / tp
 * groups replicate one another (dp). Under tp every rank of a tp group holds the group's
 * whole gradient (model_tp.c), so the ranks of each tp index form their own fsdp groups and
 * sum the same values: the same shards on every tp rank. The
 * flat parameter vector, padded to F shards of S floats, is sharded over a group: rank r
 * owns shard r mod F, the parameters it updates and AdamW's state of them.
 *   - gradients: reduce-scattered over the fsdp group in rank order, then each shard
 *     all-reduced over the dp group (none when dp = 1), then all-gathered over the fsdp
 *     group for the clip's norm, which is then the norm of DP's sum, in its order;
 *   - the update: the clip and AdamW of the rank's own shard only;
 *   - parameters: all-gathered from the shards before the next step uses them, and with
 *     reshard_after_forward again between its forward and backward, the rest dropped.
 * With dp = 1 every sum is DP's ((g_0 + g_1) + g_2) + ..., so FSDP equals DP bit for bit;
 * with dp > 1 the shard's sums are grouped ((g_0 + g_1) + (g_2 + g_3)), close to DP's.
 * The collectives are comm_group.c's, over the ranks' host ends (a device communicator is
 * refused when the case is read); a backend whose memory is not the host's is staged.
 *
 * fp8_all_gather (torchao's enable_fsdp_float8_all_gather): the forward's FP8 weight is not
 * cast from the gathered fp32 weight but made from the shards: each rank takes the amax of
 * its part of the weight, the group's max of them gives the scale (a delayed scale is the
 * history's, as every rank's), each rank casts its part (kernels/element/cast.h, the lines
 * every backend runs), and the codes are gathered. The scale is the whole weight's, so the
 * codes are those of casting it whole: DP's, bit for bit. Under tp the forward's weight is
 * the rank's tp shard: each rank casts the elements of it that its fsdp shard holds (their
 * places in the flat vector: lks_tp_weight_index), with the scale of the fsdp group's max
 * and then the tp group's (the whole weight's, as TP's scale group takes it), and the
 * fsdp group gathers the tp shard's codes: TP's, bit for bit.
 */
#include "harness/engine/runner_impl.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/element/cast.h"
#include "kernels/err.h"

struct lks_fsdp {
	lks_comm *shard, *rep;  /* this rank's fsdp group and dp group (NULL when dp = 1) */
	size_t S;               /* floats per shard: nparams / F rounded up to 16 */
	float *all;             /* (F S) host: a gathered vector */
	float *own;             /* (S) host: this rank's shard */
	float *w;               /* fp8_all_gather (nparams) host: a weight's shard on the rank */
	lks_update_part *parts; /* AdamW's parts within the shard, for a backend's update */
	int nparts;
};

/* The parts of the flat vector [a, b) that AdamW updates: R's, cut to the range. */
static int lks_fsdp_parts(struct lks_runner *R, struct lks_fsdp *f, size_t a, size_t b)
{
	if (!(f->parts = calloc((size_t)R->m.nt + 1, sizeof(*f->parts))))
		return lks_err("out of memory");
	for (int i = 0; i < R->m.nt; i++) {
		size_t lo = R->parts[i].off > a ? R->parts[i].off : a;
		size_t hi = R->parts[i].off + R->parts[i].n < b ? R->parts[i].off + R->parts[i].n : b;

		if (lo < hi)
			f->parts[f->nparts++] = (lks_update_part){ lo, hi - lo, R->parts[i].wd };
	}
	return 0;
}

/* whether rank r's fsdp shard holds element k of linear li's weight shard */
static int lks_fsdp_owns(const lks_rank *r, int li, size_t k)
{
	size_t i = lks_tp_weight_index(r, li, k);

	return i >= r->own0 && i < r->own1;
}

/* fp8_all_gather: q, the forward's operand of linear li's weight w (n floats, the rank's
   tp shard: whole when tp = 1), its codes made from the fsdp shards and gathered (the
   file's comment): each element cast by the rank that owns it in the flat vector. */
static int lks_fsdp_fp8_weight(lks_rank *r, int li, const float *w, size_t n, lks_quant *q,
                               const char *name)
{
	struct lks_fsdp *f = r->fsdp;
	lks_fp8_spec spec = lks_fp8_spec_of(q->fmt);
	lks_cast_counts cnt = { 0, 0 };
	float amax = 0.0f, whole, scale, *x = f->w, *all = f->all;
	uint8_t *codes = (uint8_t *)f->all;

	if (lks_be_download(r->be, r->bectx, x, w, n * sizeof(float)))
		return -1;
	/* owned: x[k] is in the flat vector at [own0, own1); all[k] marks it (1, else -0.0)
	   until the cast below writes its code there */
	for (size_t k = 0; k < n; k++) {
		int own = lks_fsdp_owns(r, li, k);

		all[k] = own ? 1.0f : -0.0f;
		if (own)
			amax = lks_nanmax(amax, fabsf(x[k]));
	}
	/* the shard's amax (the whole weight's when tp = 1), then under tp the tp group's */
	if (lks_comm_allreduce_max(f->shard, &amax, 1))
		return -1;
	whole = amax;
	if (q->scale_given) {
		if (lks_be_download(r->be, r->bectx, &scale, q->scale, sizeof(float)))
			return -1;
	} else {
		if (r->tp > 1 && lks_tp_max(r, &whole, 1, name))
			return -1;
		scale = lks_fp8_scale(whole, q->fmt, q->pow2);
	}
	/* the gather: each rank's codes (as floats, exact) in their place, -0.0 elsewhere */
	for (size_t k = 0; k < n; k++)
		if (all[k] == 1.0f)
			all[k] = (float)lks_cast_one(x[k], scale, &spec, &cnt);
	q->underflow = cnt.underflow;
	q->saturated = cnt.saturated;
	if (lks_comm_allreduce_sum(f->shard, all, n) || lks_quant_counts_sum(f->shard, q))
		return -1;
	for (size_t i = 0; i < n; i++)  /* in place: byte i lies in float i / 4, already read */
		codes[i] = (uint8_t)all[i];
	if (lks_be_upload(r->be, r->bectx, q->q, codes, n)
	    || lks_be_upload(r->be, r->bectx, q->scale, &scale, sizeof(float)))
		return -1;
	/* the amax a cast of w alone would record: its tp shard's */
	return q->amax ? lks_be_upload(r->be, r->bectx, q->amax, &amax, sizeof(float)) : 0;
}

/* reshard_after_forward: the parameters outside the rank's shard dropped (NaN, so that a
   backward that used them unfetched would show it) and gathered again from the shards. */
static int lks_fsdp_reshard(lks_rank *r)
{
	struct lks_fsdp *f = r->fsdp;
	size_t n = r->m->nparams;

	for (size_t i = 0; i < n; i++)
		f->all[i] = NAN;
	if ((r->own0 && lks_be_upload(r->be, r->bectx, r->params, f->all,
	                              r->own0 * sizeof(float)))
	    || (r->own1 < n && lks_be_upload(r->be, r->bectx, r->params + r->own1, f->all,
	                                     (n - r->own1) * sizeof(float))))
		return -1;
	return lks_fsdp_params(r->R, r);
}

size_t lks_fsdp_shard_size(size_t n, int fsdp)
{
	return ((n + (size_t)fsdp - 1) / (size_t)fsdp + 15) & ~(size_t)15;
}

int lks_fsdp_shard_of(const lks_run_cfg *run, int rank)
{
	/* the mesh dp x fsdp x tp, tp innermost: rank = (d F + s) P + t */
	return rank / (run->tp > 1 ? run->tp : 1) % run->fsdp;
}

int lks_fsdp_setup(struct lks_runner *R, lks_rank *r)
{
	int F = R->run->fsdp, P = R->run->tp > 1 ? R->run->tp : 1, D = R->W / F / P;
	struct lks_fsdp *f = calloc(1, sizeof(*f));

	if (!f)
		return lks_err("out of memory");
	r->fsdp = f;
	f->S = lks_fsdp_shard_size(R->m.nparams, F);
	r->own0 = (size_t)lks_fsdp_shard_of(R->run, r->rank) * f->S;
	r->own1 = r->own0 + f->S < R->m.nparams ? r->own0 + f->S : R->m.nparams;
	r->own0 = r->own0 < R->m.nparams ? r->own0 : R->m.nparams;
	if (!(f->all = calloc((size_t)F * f->S, sizeof(float)))
	    || !(f->own = calloc(f->S, sizeof(float))))
		return lks_err("out of memory");
	if (lks_fsdp_parts(R, f, r->own0, r->own1))
		return -1;
	if (R->run->fp8_all_gather) {
		if (!(f->w = malloc(R->m.nparams * sizeof(float))))
			return lks_err("out of memory");
		r->fp8_gather = lks_fsdp_fp8_weight;
	}
	if (R->run->reshard)
		r->after_forward = lks_fsdp_reshard;
	/* every rank splits, in the same order: the fsdp groups (one per replica d and tp
	   index t), then the dp groups (one per shard s and t) */
	if (F == R->W) {
		f->shard = r->hcomm;
		return 0;
	}
	if (lks_comm_split(r->hcomm, D * P, r->rank / (F * P) * P + r->rank % P, &f->shard)
	    || lks_fault_group(&R->run->inject, R->run, r->rank, &R->step, 1, &f->shard)
	    || (D > 1 && lks_comm_split(r->hcomm, F * P, r->rank % (F * P), &f->rep)))
		return -1;
	return 0;
}

void lks_fsdp_close_groups(lks_rank *r)
{
	struct lks_fsdp *f = r->fsdp;

	if (!f)
		return;
	if (f->shard && f->shard != r->hcomm)
		lks_comm_close(f->shard);
	if (f->rep)
		lks_comm_close(f->rep);
	f->shard = f->rep = NULL;
}

void lks_fsdp_release(lks_rank *r)
{
	struct lks_fsdp *f = r->fsdp;

	if (!f)
		return;
	lks_fsdp_close_groups(r);
	free(f->all);
	free(f->own);
	free(f->w);
	free(f->parts);
	free(f);
	r->fsdp = NULL;
	r->fp8_gather = NULL;
	r->after_forward = NULL;
}

const float *lks_fsdp_gathered(const lks_rank *r)
{
	return r->fsdp->all;
}

const lks_update_part *lks_fsdp_update_parts(const lks_rank *r, int *n)
{
	*n = r->fsdp->nparts;
	return r->fsdp->parts;
}

/* x (nparams floats, the rank's backend memory) into f->all, the padding zero */
static int lks_fsdp_take(struct lks_runner *R, lks_rank *r, const float *x)
{
	struct lks_fsdp *f = r->fsdp;

	memset(f->all + R->m.nparams, 0,
	       ((size_t)R->run->fsdp * f->S - R->m.nparams) * sizeof(float));
	return lks_be_download(r->be, r->bectx, f->all, x, R->m.nparams * sizeof(float));
}

int lks_fsdp_grads(struct lks_runner *R, lks_rank *r)
{
	struct lks_fsdp *f = r->fsdp;
	size_t bytes = R->m.nparams * sizeof(float);

	if (lks_fsdp_take(R, r, r->grads)
	    || lks_comm_reduce_scatter(f->shard, f->all, f->S, f->own)
	    || (f->rep && lks_comm_allreduce_sum(f->rep, f->own, f->S))
	    || lks_comm_all_gather(f->shard, f->own, f->S, f->all))
		return -1;
	return lks_be_upload(r->be, r->bectx, r->grads, f->all, bytes);
}

int lks_fsdp_params(struct lks_runner *R, lks_rank *r)
{
	struct lks_fsdp *f = r->fsdp;

	memset(f->own, 0, f->S * sizeof(float));
	if (r->own1 > r->own0
	    && lks_be_download(r->be, r->bectx, f->own, r->params + r->own0,
	                       (r->own1 - r->own0) * sizeof(float)))
		return -1;
	if (lks_comm_all_gather(f->shard, f->own, f->S, f->all))
		return -1;
	return lks_be_upload(r->be, r->bectx, r->params, f->all, R->m.nparams * sizeof(float));
}
