/*
 * runner_fsdp.c: a run's ranks as FSDP shards (fsdp = F in the run; runner_impl.h).
 *
 * The ranks form groups of F consecutive ranks (the mesh's fsdp dimension, innermost, as
 * torchtitan's dp_shard), and the world size / F groups replicate one another (dp). The
 * flat parameter vector, padded to F shards of S floats, is sharded over a group: rank r
 * owns shard r mod F, the parameters it updates and AdamW's state of them.
 *   - gradients: reduce-scattered over the fsdp group in rank order, then each shard
 *     all-reduced over the dp group (none when dp = 1), then all-gathered over the fsdp
 *     group for the clip's norm, which is then the norm of DP's sum, in its order;
 *   - the update: the clip and AdamW of the rank's own shard only;
 *   - parameters: all-gathered from the shards before the next step uses them.
 * With dp = 1 every sum is DP's ((g_0 + g_1) + g_2) + ..., so FSDP equals DP bit for bit;
 * with dp > 1 the shard's sums are grouped ((g_0 + g_1) + (g_2 + g_3)), close to DP's.
 * The collectives are comm_group.c's, over the ranks' host ends (a device communicator is
 * refused when the case is read); a backend whose memory is not the host's is staged.
 */
#include "harness/engine/runner_impl.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/err.h"

struct lks_fsdp {
	lks_comm *shard, *rep;  /* this rank's fsdp group and dp group (NULL when dp = 1) */
	size_t S;               /* floats per shard: nparams / F rounded up to 16 */
	float *all;             /* (F S) host: a gathered vector */
	float *own;             /* (S) host: this rank's shard */
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

int lks_fsdp_setup(struct lks_runner *R, lks_rank *r)
{
	int F = R->run->fsdp, D = R->W / F;
	struct lks_fsdp *f = calloc(1, sizeof(*f));

	if (!f)
		return lks_err("out of memory");
	r->fsdp = f;
	f->S = ((R->m.nparams + (size_t)F - 1) / (size_t)F + 15) & ~(size_t)15;
	r->own0 = (size_t)(r->rank % F) * f->S;
	r->own1 = r->own0 + f->S < R->m.nparams ? r->own0 + f->S : R->m.nparams;
	r->own0 = r->own0 < R->m.nparams ? r->own0 : R->m.nparams;
	if (!(f->all = calloc((size_t)F * f->S, sizeof(float)))
	    || !(f->own = calloc(f->S, sizeof(float))))
		return lks_err("out of memory");
	if (lks_fsdp_parts(R, f, r->own0, r->own1))
		return -1;
	/* every rank splits, in the same order: the fsdp groups, then the dp groups */
	if (F == R->W) {
		f->shard = r->comm;
		return 0;
	}
	if (lks_comm_split(r->comm, D, r->rank / F, &f->shard)
	    || lks_comm_split(r->comm, F, r->rank % F, &f->rep))
		return -1;
	return 0;
}

void lks_fsdp_release(lks_rank *r)
{
	struct lks_fsdp *f = r->fsdp;

	if (!f)
		return;
	if (f->shard && f->shard != r->comm)
		lks_comm_close(f->shard);
	if (f->rep)
		lks_comm_close(f->rep);
	free(f->all);
	free(f->own);
	free(f->parts);
	free(f);
	r->fsdp = NULL;
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
