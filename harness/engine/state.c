/* state.c: a rank's training state after a step, as bytes and back (state.h). */
#include "harness/engine/state.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "harness/base/status.h"
#include "harness/engine/case.h"
#include "harness/engine/recipe.h"
#include "harness/engine/runner_impl.h"
#include "kernels/err.h"

#define LKS_STATE_MAGIC "LKSSTAT1"
#define LKS_STATE_ORDER 0x01020304u
#define LKS_STATE_HEAD 56  /* 8 + 4 + 4 + 8 + 4 + 4 + 4 + 4 + 4 + 4 + 8 */
#define LKS_STATE_HASH_AT (LKS_STATE_HEAD - 8)  /* the header's last field */

/* The header's fields, in its order. */
struct lks_state_head {
	uint32_t order, nslots;
	uint64_t nparams;
	uint32_t hlen;
	int32_t step;
	uint32_t world;         /* the run's ranks */
	uint32_t key;           /* the training's (lks_state_key); 0 in states kept before it */
	float b1pow, b2pow;
	uint64_t hash;
};

static size_t lks_state_bytes(size_t nparams, int nslots, int hlen)
{
	return LKS_STATE_HEAD + 3 * nparams * sizeof(float)
	       + (size_t)nslots * (3 + (size_t)hlen) * sizeof(float);
}

static unsigned char *lks_put(unsigned char *p, const void *v, size_t n)
{
	memcpy(p, v, n);
	return p + n;
}

static const unsigned char *lks_get(const unsigned char *p, void *v, size_t n)
{
	memcpy(v, p, n);
	return p + n;
}

/* What decides a run's training but its layout, checkpointing, backend and faults: the
   case's model, data (seed, global batch), optimizer and schedule (the steps trained, the
   warmup) and the run's recipe with its history's settings, hashed; never 0. A run resumes
   only from a state of the same: the steps after it then come out as its run's did. */
static uint32_t lks_state_key(const struct lks_runner *R)
{
	const lks_case *c = R->c;
	const lks_run_cfg *run = R->run;
	const lks_optim_cfg *o = &c->optim;
	int delayed = lks_recipe_delayed(run->recipe);
	int32_t v[] = { c->model.vocab, c->model.hidden, c->model.ffn, c->model.layers,
		            c->model.seq, c->model.attention, c->model.heads, c->model.head_dim,
		            c->model.batch * c->world_size, R->steps, R->warmup, (int32_t)run->recipe,
		            delayed ? run->amax_history : 0, delayed ? run->amax_most_recent : 0,
		            delayed ? run->margin : 0 };
	float f[] = { o->lr, o->min_lr, o->beta1, o->beta2, o->eps, o->weight_decay, o->clip };
	unsigned char b[sizeof(v) + sizeof(f)];
	uint64_t h;

	memcpy(b, v, sizeof(v));
	memcpy(b + sizeof(v), f, sizeof(f));
	h = XXH3_64bits_withSeed(b, sizeof(b), c->seed);
	return (uint32_t)(h >> 32 ^ h) ? (uint32_t)(h >> 32 ^ h) : 1;
}

/* The history length of every slot, as lks_rank_init makes them (model_rank.c): known
   also to a process of a job that hosts none of the run's ranks. */
static int lks_state_hlen(const struct lks_runner *R)
{
	return R->run->amax_history > 0 ? R->run->amax_history : 1;
}

int lks_state_save(struct lks_runner *R, lks_rank *r, int step, void **blob, size_t *n)
{
	size_t np = R->m.nparams, fb = np * sizeof(float);
	int nslots = 3 * R->m.nlin, hlen = lks_state_hlen(R);
	struct lks_state_head h = { LKS_STATE_ORDER, (uint32_t)nslots, np, (uint32_t)hlen, step,
	                            (uint32_t)R->W, lks_state_key(R), R->b1pow, R->b2pow, 0 };
	unsigned char *b, *p;

	*n = lks_state_bytes(np, nslots, hlen);
	if (!(b = malloc(*n)))
		return lks_err("out of memory for the state of rank %d (%zu bytes)", r->rank, *n);
	p = b + LKS_STATE_HEAD;
	if (lks_be_download(r->be, r->bectx, p, r->params, fb)
	    || lks_be_download(r->be, r->bectx, p + fb, r->m1, fb)
	    || lks_be_download(r->be, r->bectx, p + 2 * fb, r->m2, fb)) {
		free(b);
		return -1;
	}
	p += 3 * fb;
	for (int s = 0; s < nslots; s++) {
		const lks_amax_slot *sl = &r->slots[s];
		int32_t filled = sl->filled;

		p = lks_put(p, &filled, 4);
		p = lks_put(p, &sl->cur, 4);
		p = lks_put(p, &sl->scale, 4);
		p = lks_put(p, sl->hist, (size_t)hlen * sizeof(float));
	}
	h.hash = XXH3_64bits(b + LKS_STATE_HEAD, *n - LKS_STATE_HEAD);
	p = lks_put(b, LKS_STATE_MAGIC, 8);
	p = lks_put(p, &h.order, 4);
	p = lks_put(p, &h.nslots, 4);
	p = lks_put(p, &h.nparams, 8);
	p = lks_put(p, &h.hlen, 4);
	p = lks_put(p, &h.step, 4);
	p = lks_put(p, &h.world, 4);
	p = lks_put(p, &h.key, 4);
	p = lks_put(p, &h.b1pow, 4);
	p = lks_put(p, &h.b2pow, 4);
	lks_put(p, &h.hash, 8);
	*blob = b;
	return 0;
}

static int lks_state_head_read(const unsigned char *b, size_t n, struct lks_state_head *h)
{
	const unsigned char *p = b + 8;

	if (n < LKS_STATE_HEAD || memcmp(b, LKS_STATE_MAGIC, 8))
		return lks_err("not a lockstep state (%zu bytes)", n), LKS_E_BAD_INPUT;
	p = lks_get(p, &h->order, 4);
	p = lks_get(p, &h->nslots, 4);
	p = lks_get(p, &h->nparams, 8);
	p = lks_get(p, &h->hlen, 4);
	p = lks_get(p, &h->step, 4);
	p = lks_get(p, &h->world, 4);
	p = lks_get(p, &h->key, 4);
	p = lks_get(p, &h->b1pow, 4);
	p = lks_get(p, &h->b2pow, 4);
	lks_get(p, &h->hash, 8);
	if (h->order != LKS_STATE_ORDER)
		return lks_err("a state written on a machine of the other byte order"),
		       LKS_E_BAD_INPUT;
	return 0;
}

int lks_state_load(struct lks_runner *R, lks_rank *r, int step, const void *blob, size_t n)
{
	const unsigned char *b = blob, *p;
	size_t np = R->m.nparams, fb = np * sizeof(float);
	int nslots = 3 * R->m.nlin, hlen = lks_state_hlen(R), rc;
	struct lks_state_head h;

	if ((rc = lks_state_head_read(b, n, &h)) != 0)
		return rc;
	if (h.nparams != np || h.nslots != (uint32_t)nslots || h.hlen != (uint32_t)hlen)
		return lks_err("the state is of another model or recipe: %llu parameters, %u amax "
		               "slots of history %u; this run has %zu, %d of %d",
		               (unsigned long long)h.nparams, h.nslots, h.hlen, np, nslots, hlen),
		       LKS_E_BAD_INPUT;
	if (h.step != step)
		return lks_err("the state is of step %d, not %d", h.step, step), LKS_E_BAD_INPUT;
	if (h.world != (uint32_t)R->W)
		return lks_err("the state is of a run of %u ranks; this one has %d", h.world, R->W),
		       LKS_E_BAD_INPUT;
	if (h.key && h.key != lks_state_key(R))
		return lks_err("the state is of another training than this run's: the model, the "
		               "data (seed, batch), the optimizer, the steps or the recipe and its "
		               "settings differ (a run resumes from one of the same, in any layout)"),
		       LKS_E_BAD_INPUT;
	if (n != lks_state_bytes(np, nslots, hlen)
	    || XXH3_64bits(b + LKS_STATE_HEAD, n - LKS_STATE_HEAD) != h.hash)
		return lks_err("the state of rank %d is damaged (its length or its hash does not "
		               "match)", r->rank), LKS_E_BAD_INPUT;
	p = b + LKS_STATE_HEAD;
	if (lks_be_upload(r->be, r->bectx, r->params, p, fb)
	    || lks_be_upload(r->be, r->bectx, r->m1, p + fb, fb)
	    || lks_be_upload(r->be, r->bectx, r->m2, p + 2 * fb, fb))
		return -1;
	p += 3 * fb;
	for (int s = 0; s < nslots; s++) {
		lks_amax_slot *sl = &r->slots[s];
		int32_t filled;

		p = lks_get(p, &filled, 4);
		sl->filled = filled;
		p = lks_get(p, &sl->cur, 4);
		p = lks_get(p, &sl->scale, 4);
		p = lks_get(p, sl->hist, (size_t)hlen * sizeof(float));
	}
	R->b1pow = h.b1pow;
	R->b2pow = h.b2pow;
	return 0;
}

/* The bytes of one rank's state of R (every rank's are as long). */
static size_t lks_state_size(const struct lks_runner *R)
{
	int nslots = 3 * R->m.nlin;

	return lks_state_bytes(R->m.nparams, nslots, lks_state_hlen(R));
}

/* Whether this process stores: process 0 of the job, or the process alone. */
static int lks_state_root(const struct lks_runner *R)
{
	return !R->o->job || R->o->job->rank == 0;
}

/* An FSDP run's states (W of n bytes, in rank order) with AdamW's moments whole: a rank
   keeps the moments of its own shard only (runner_fsdp.c), so each rank's are completed
   from the ranks of its fsdp group that own the other shards (the same shard's moments on
   every replica and tp index), and its hash made again. Then a state resumes into any
   layout: DP's ranks need the whole moments. */
static void lks_state_whole(const struct lks_runner *R, unsigned char *all, size_t n)
{
	int F = R->run->fsdp, P = R->run->tp > 1 ? R->run->tp : 1;
	size_t np = R->m.nparams, fb = np * sizeof(float), S = lks_fsdp_shard_size(np, F);
	uint64_t hash;

	if (F <= 1)
		return;
	for (int r = 0; r < R->W; r++) {
		unsigned char *b = all + (size_t)r * n;

		for (int s = 0; s < F; s++) {
			/* the rank of replica d and tp index t that owns shard s (rank = (d F + s) P + t) */
			int o = (r / (F * P) * F + s) * P + r % P;
			size_t a = (size_t)s * S < np ? (size_t)s * S : np;
			size_t e = a + S < np ? a + S : np;
			const unsigned char *ob = all + (size_t)o * n;

			if (o == r || e == a)
				continue;
			for (size_t m = 1; m <= 2; m++)  /* m1, then m2: after the parameters */
				memcpy(b + LKS_STATE_HEAD + m * fb + a * sizeof(float),
				       ob + LKS_STATE_HEAD + m * fb + a * sizeof(float),
				       (e - a) * sizeof(float));
		}
		hash = XXH3_64bits(b + LKS_STATE_HEAD, n - LKS_STATE_HEAD);
		memcpy(b + LKS_STATE_HASH_AT, &hash, 8);
	}
}

int lks_state_keep(struct lks_runner *R, struct lks_store *store, int64_t run_id, int step)
{
	lks_comm *job = R->o->job && R->o->job->size > 1 ? R->o->job : NULL;
	size_t n = lks_state_size(R), counts[1024];
	unsigned char *mine = malloc(n * (size_t)R->L + 1), *all = NULL;  /* L may be 0 */
	int rc = -1;

	if (!mine)
		return lks_err("out of memory for the states of %d ranks", R->L);
	for (int i = 0; i < R->L; i++) {
		void *blob;
		size_t len;

		if (lks_state_save(R, &R->ranks[i], step, &blob, &len))
			goto out;
		memcpy(mine + (size_t)i * n, blob, n);
		free(blob);
	}
	/* a job's processes hold their ranks in blocks, in order: the root's gather is every
	   rank's state in rank order */
	if (job && (job->size > (int)(sizeof(counts) / sizeof(counts[0]))
	            || lks_comm_gather(job, mine, n * (size_t)R->L,
	                               lks_state_root(R) ? (void **)&all : NULL, counts)))
		goto out;
	if (!job)
		all = mine, mine = NULL;
	if (lks_state_root(R))
		lks_state_whole(R, all, n);
	rc = 0;
	for (int r = 0; lks_state_root(R) && store && !rc && r < R->W; r++)
		rc = lks_store_put_state(store, run_id, step, r, all + (size_t)r * n, n);
out:
	free(mine);
	free(all);
	return rc;
}

/* Every rank's state that run from_run kept after step, in rank order, read by the root
   and sent to every process of a job; 0, or the root's error (the others': bad input). */
static int lks_state_fetch(struct lks_runner *R, struct lks_store *store, int64_t from_run,
                           int step, unsigned char *all, size_t n)
{
	lks_comm *job = R->o->job && R->o->job->size > 1 ? R->o->job : NULL;
	unsigned char ok = 1;
	int rc = 0;

	for (int r = 0; lks_state_root(R) && !rc && r < R->W; r++) {
		void *blob;
		size_t len;

		if ((rc = lks_store_get_state(store, from_run, step, r, &blob, &len)) == 0) {
			if (len != n)
				rc = (lks_err("run %lld after step %d, rank %d: the state is of another "
				              "model or recipe (%zu bytes, not %zu)", (long long)from_run,
				              step, r, len, n), LKS_E_BAD_INPUT);
			else
				memcpy(all + (size_t)r * n, blob, n);
			free(blob);
		}
	}
	ok = rc == 0;
	if (!job)
		return rc;
	if (lks_comm_bcast_bytes(job, &ok, 1))
		return -1;
	if (!ok)
		return rc ? rc : (lks_err("process 0 could not read the state to resume from"),
		                  LKS_E_BAD_INPUT);
	return lks_comm_bcast_bytes(job, all, n * (size_t)R->W);
}

int lks_state_resume(struct lks_runner *R, struct lks_store *store, int64_t from_run, int step)
{
	size_t n = lks_state_size(R);
	unsigned char *all = malloc(n * (size_t)R->W);
	int rc;

	if (!all)
		return lks_err("out of memory for the states of %d ranks", R->W);
	rc = lks_state_fetch(R, store, from_run, step, all, n);
	for (int i = 0; !rc && i < R->L; i++) {
		const lks_rank *k = &R->ranks[i];

		if ((rc = lks_state_load(R, &R->ranks[i], step, all + (size_t)k->rank * n, n)))
			lks_err("run %lld after step %d, rank %d: %s", (long long)from_run, step,
			        k->rank, lks_errmsg());
	}
	free(all);
	return rc;
}

/* Whether the run keeps its state after step (opts' state_every and state_at). */
int lks_state_wanted(const lks_runner_opts *o, int step)
{
	for (int i = 0; i < o->nstate_at; i++)
		if (o->state_at[i] == step)
			return 1;
	return o->state_every > 0 && (step + 1) % o->state_every == 0;
}

/* A resumed run: from a stored state (process 0's store) of a step before its last; R's
   ranks are set to it. */
int lks_state_start(struct lks_runner *R, struct lks_store *store, const lks_runner_opts *o)
{
	R->o = o;
	if (!o->resume_run)
		return 0;
	if (!store && (!o->job || o->job->rank == 0))
		return lks_err("run '%s': a resumed run needs the store its state is in",
		               R->run->name);
	if (o->resume_step < 0 || o->resume_step + 1 >= R->steps)
		return lks_err("run '%s': resuming after step %d leaves no step of its %d to "
		               "train", R->run->name, o->resume_step, R->steps), LKS_E_BAD_INPUT;
	R->step0 = o->resume_step + 1;
	return lks_state_resume(R, store, o->resume_run, o->resume_step);
}

/* A process that hosts none of the run's ranks takes part in the job's collectives of
   its states: the resumed state sent out, each kept state gathered. */
int lks_state_idle(struct lks_runner *R, const lks_runner_opts *o)
{
	int end = o->stop_at > 0 && o->stop_at < R->steps ? o->stop_at : R->steps;  /* as lks_run */

	if (lks_state_start(R, NULL, o))
		return -1;
	for (int step = R->step0; step < end; step++)
		if (lks_state_wanted(o, step) && lks_state_keep(R, NULL, 0, step))
			return -1;
	return 0;
}
