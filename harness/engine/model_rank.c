/*
 * model_rank.c: a rank's memory (see model.h): the sizes of its GEMM arenas, its tensors in
 * the backend's memory, the attention's buffers and RoPE table, and the estimate of all of
 * it made before anything is allocated (lks_rank_bytes). The step itself is model.c's.
 */
#include "harness/engine/model.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/err.h"

/* The most bytes per element one operand of a GEMM of this recipe takes in the call's
   arena: its float32 or BF16 copy, or for FP8 its codes and their transpose
   (lks_prep_operand); the LM head's operands are BF16, or float32 where activations are. */
static size_t lks_operand_width(const lks_recipe_rules *rules)
{
	size_t w = rules->f32_activations ? 4 : 2;

	for (int role = 0; role < 3; role++)
		for (int ab = 0; ab < 2; ab++) {
			lks_dtype t = rules->op[role][ab].dtype;
			size_t ow = t == LKS_E4M3 || t == LKS_E5M2 ? 2 : lks_dtype_size(t);

			w = ow > w ? ow : w;
		}
	return w;
}

/* The largest operand (elements) and dimension of the GEMMs of a model of c with T tokens:
   x, dy (T, H); a, dy (T, F); W1 (F, H) and W2; with attention qkv (T, 3D), Wqkv (3D, H),
   ao (T, D), Wo (H, D); with head the LM head's Wh (V, H) and dz (T, V). */
static void lks_gemm_extent(const lks_model_cfg *c, size_t T, int head, size_t *big,
                            size_t *maxdim)
{
	size_t H = (size_t)c->hidden, F = (size_t)c->ffn, V = (size_t)c->vocab;
	size_t D = c->attention ? (size_t)c->heads * (size_t)c->head_dim : 0, Q = 3 * D;
	size_t sizes[] = { T * H, T * F, F * H, T * Q, Q * H, T * D, H * D, V * H, T * V };
	size_t dims[] = { T, H, F, Q, V };
	int n = head ? 9 : 7;

	*big = *maxdim = 0;
	for (int i = 0; i < n; i++)
		*big = sizes[i] > *big ? sizes[i] : *big;
	for (int i = 0; i < (head ? 5 : 4); i++)
		*maxdim = dims[i] > *maxdim ? dims[i] : *maxdim;
}

/* The GEMM arena of one call: the largest operand of any GEMM, its dimensions and the
   widest operand's bytes per element (width) size it. */
static size_t lks_arena_size(const lks_model_cfg *c, size_t T, size_t width)
{
	size_t big, maxdim;

	lks_gemm_extent(c, T, 1, &big, &maxdim);
	return 2 * (width * big + 8 * maxdim + 256);
}

/* The traced FP8 operands of a whole step (lks_rank_trace_on). */
static size_t lks_qarena_size(const lks_model_cfg *c, size_t T)
{
	size_t big, maxdim, lb = c->attention ? 4 : 2;

	lks_gemm_extent(c, T, 0, &big, &maxdim);
	/* a step quantizes at most 8 operands per linear layer (2 per GEMM; forward, dgrad,
	   wgrad and the recompute), each at most the largest operand, its scales and amaxes */
	return (size_t)8 * lb * (size_t)c->layers * (big + 8 * maxdim + 3 * 64);
}

/* bytes of the rank's backend memory, or NULL (and *failed set) */
static void *lks_rank_buf(lks_rank *r, size_t bytes, int *failed)
{
	void *p = NULL;

	if (lks_be_alloc(r->be, r->bectx, bytes, &p))
		*failed = 1;
	return p;
}

/* The attention's buffers of rank r (nact sets of the block's activations) and its RoPE
   table, made here and uploaded; -1 (*failed set) when one cannot be had. */
static int lks_rank_attention(lks_rank *r, int nact, int *failed)
{
	const lks_model_cfg *c = &r->m->cfg;
	size_t f = sizeof(float), T = (size_t)r->T, H = (size_t)c->hidden, D = (size_t)r->m->D;
	size_t L = (size_t)c->layers, nr = (size_t)c->seq * (size_t)c->head_dim;
	float *table = malloc(nr * f);

	r->rope = lks_rank_buf(r, nr * f, failed);
	r->ha = lks_rank_buf(r, f * (size_t)nact * T * H, failed);
	r->qkv = lks_rank_buf(r, f * (size_t)nact * T * 3 * D, failed);
	r->qkvr = lks_rank_buf(r, f * (size_t)nact * T * 3 * D, failed);
	r->ao = lks_rank_buf(r, f * (size_t)nact * T * D, failed);
	r->ast = lks_rank_buf(r, f * (size_t)nact * 2 * T * (size_t)c->heads, failed);
	r->pr = lks_rank_buf(r, f * (size_t)nact * T * H, failed);
	r->xm = lks_rank_buf(r, f * (size_t)nact * T * H, failed);
	r->rstda = lks_rank_buf(r, f * L * T, failed);
	r->gm = lks_rank_buf(r, f * L * T * H, failed);
	r->go = lks_rank_buf(r, f * L * T * D, failed);
	r->gqkv = lks_rank_buf(r, f * L * T * 3 * D, failed);
	r->gha = lks_rank_buf(r, f * L * T * H, failed);
	if (!table || *failed) {
		free(table);
		*failed = 1;
		return -1;
	}
	lks_rope_table(c->seq, c->head_dim, table);
	*failed = lks_be_upload(r->be, r->bectx, r->rope, table, nr * f) != 0;
	free(table);
	return *failed ? -1 : 0;
}

int lks_rank_init(lks_rank *r, int rank, const lks_model *m, const lks_run_cfg *run,
                  int tokens_per_rank, int global_tokens, const lks_backend *be, void *bectx)
{
	const lks_model_cfg *c = &m->cfg;
	int L = c->layers, H = c->hidden, F = c->ffn, V = c->vocab, T = tokens_per_rank;
	int nact = run->checkpoint ? 1 : L, failed = 0;
	size_t f = sizeof(float);

	r->rank = rank;
	r->m = m;
	r->be = be;
	r->bectx = bectx;
	r->rules = lks_recipe_rules_of(run->recipe);
	r->checkpoint = run->checkpoint;
	r->gemm = (lks_gemm_impl)run->gemm;
	r->bf16 = !r->rules->f32_activations;
	r->T = T;
	r->grad_scale = 1.0f / (float)global_tokens;
	lks_tracer_init(&r->tr, rank, be, bectx);

	r->arena_size = lks_arena_size(c, (size_t)T, lks_operand_width(r->rules));

	/* the tensors live in the backend's memory; the amax histories are the host's */
	r->slots = calloc((size_t)(3 * m->nlin), sizeof(*r->slots));
	r->params = lks_rank_buf(r, m->nparams * f, &failed);
	r->grads = lks_rank_buf(r, m->nparams * f, &failed);
	r->tok = lks_rank_buf(r, sizeof(int32_t) * (size_t)T, &failed);
	r->tgt = lks_rank_buf(r, sizeof(int32_t) * (size_t)T, &failed);
	r->xs = lks_rank_buf(r, f * (size_t)(L + 1) * T * H, &failed);
	r->rstd = lks_rank_buf(r, f * (size_t)(L + 1) * T, &failed);
	r->h = lks_rank_buf(r, f * (size_t)nact * T * H, &failed);
	r->u = lks_rank_buf(r, f * (size_t)nact * T * F, &failed);
	r->a = lks_rank_buf(r, f * (size_t)nact * T * F, &failed);
	r->dn = lks_rank_buf(r, f * (size_t)L * T * H, &failed);
	r->hf = lks_rank_buf(r, f * (size_t)T * H, &failed);
	r->logits = lks_rank_buf(r, f * (size_t)T * V, &failed);
	r->dz = lks_rank_buf(r, f * (size_t)T * V, &failed);
	r->gx = lks_rank_buf(r, f * (size_t)(L + 1) * T * H, &failed);
	r->gh = lks_rank_buf(r, f * (size_t)L * T * H, &failed);
	r->gtmp = lks_rank_buf(r, f * (size_t)T * H, &failed);
	r->ga = lks_rank_buf(r, f * (size_t)L * T * F, &failed);
	r->gu = lks_rank_buf(r, f * (size_t)L * T * F, &failed);
	r->arena = lks_rank_buf(r, r->arena_size, &failed);
	if (c->attention && lks_rank_attention(r, nact, &failed))
		goto oom;
	if (lks_tp_init(r, run)) {
		lks_rank_release(r);
		return -1;
	}
	if (failed || !r->slots || lks_be_zero(be, bectx, r->grads, m->nparams * f))
		goto oom;
	for (int i = 0; i < 3 * m->nlin; i++) {
		lks_amax_slot *s = &r->slots[i];

		s->len = run->amax_history > 0 ? run->amax_history : 1;
		s->scale = 1.0f;  /* TE's initial scale, before any amax is known */
		if (!(s->hist = calloc((size_t)s->len, sizeof(float))))
			goto oom;
	}
	return 0;
oom:
	lks_rank_release(r);
	return lks_err("out of memory for rank %d", rank);
}

int lks_rank_trace_on(lks_rank *r, lks_bg *bg)
{
	int failed = 0;

	/* under tp an operand split over the group is also kept whole, gathered for its trace
	   (model_tp.c): at most the whole beside each shard */
	r->qarena_size = lks_qarena_size(&r->m->cfg, (size_t)r->T) * (r->tp > 1 ? 2 : 1);
	if (!(r->qarena = lks_rank_buf(r, r->qarena_size, &failed)))
		return lks_err("out of memory for rank %d's traced operands", r->rank);
	r->tr.bg = bg;
	return 0;
}

void lks_rank_release(lks_rank *r)
{
	lks_tracer_sync(&r->tr);  /* no job may outlive the buffers it reads */
	if (r->be) {
		float **bufs[] = { &r->params, &r->grads, &r->xs, &r->rstd, &r->h, &r->u, &r->a,
		                   &r->dn, &r->hf, &r->logits, &r->dz, &r->gx, &r->gh, &r->gtmp,
		                   &r->ga, &r->gu, &r->rope, &r->ha, &r->qkv, &r->qkvr, &r->ao,
		                   &r->ast, &r->pr, &r->xm, &r->rstda, &r->gm, &r->go, &r->gqkv,
		                   &r->gha };

		for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) {
			lks_be_free(r->be, r->bectx, *bufs[i]);
			*bufs[i] = NULL;
		}
		lks_be_free(r->be, r->bectx, r->qarena);
		lks_be_free(r->be, r->bectx, r->arena);
		lks_be_free(r->be, r->bectx, r->tok);
		lks_be_free(r->be, r->bectx, r->tgt);
		r->qarena = r->arena = NULL;
		r->tok = r->tgt = NULL;
	}
	lks_tp_release(r);
	if (r->slots)
		for (int i = 0; i < 3 * r->m->nlin; i++)
			free(r->slots[i].hist);
	free(r->slots);
	r->slots = NULL;
	lks_tracer_release(&r->tr);
}

double lks_rank_bytes(const lks_model *m, const lks_run_cfg *run, long long tokens_per_rank,
                      int traced)
{
	const lks_model_cfg *c = &m->cfg;
	double L = c->layers, H = c->hidden, F = c->ffn, V = c->vocab, T = (double)tokens_per_rank;
	double nact = run->checkpoint ? 1 : L, f = sizeof(float);
	/* as lks_rank_init allocates them: params and grads; xs, gx (L+1, T, H); dn, gh
	   (L, T, H); h (nact, T, H); u, a (nact, T, F); ga, gu (L, T, F); hf, gtmp (T, H);
	   logits, dz (T, V); rstd (L+1, T); tok, tgt (T); the slots' histories */
	double floats = 2.0 * (double)m->nparams + T * H * (2 * (L + 1) + 2 * L + nact + 2)
	              + T * F * (2 * nact + 2 * L) + 2 * T * V + (L + 1) * T + 2 * T
	              + 3 * m->nlin * (run->amax_history > 0 ? run->amax_history : 1);
	double bytes, D = m->D, nr = (double)c->seq * c->head_dim;

	/* the attention's (lks_rank_attention): the table; ha, pr, xm (nact, T, H); qkv, qkvr
	   (nact, T, 3D); ao (nact, T, D), ast (nact, 2 T heads); rstda (L, T); gm, gha (L, T,
	   H), go (L, T, D), gqkv (L, T, 3D) */
	if (c->attention)
		floats += nr + nact * T * (3 * H + 7 * D + 2.0 * c->heads) + L * T
		        + L * T * (2 * H + 4 * D);
	/* tensor parallel's (lks_tp_init): the weights' shards, the gathered tensor (backend)
	   and the host's two buffers, each the largest whole tensor */
	if (run->tp > 1) {
		double big = T * H, q = 3 * D;
		double sizes[] = { T * F, T * q, F * H, q * H };

		for (int i = 0; i < 4; i++)
			big = sizes[i] > big ? sizes[i] : big;
		floats += L * (q * H + H * D + 2 * F * H) / run->tp + 3 * big;
	}
	bytes = floats * f + 3 * m->nlin * sizeof(lks_amax_slot);

	/* the arenas are sized in size_t: only where that cannot overflow (beyond, the rest
	   is already far past any machine's memory) */
	if (T * (H + F + V) * L * 64 < 1e18) {
		size_t width = lks_operand_width(lks_recipe_rules_of(run->recipe));

		bytes += (double)lks_arena_size(c, (size_t)T, width);
		if (traced)
			bytes += (double)lks_qarena_size(c, (size_t)T) * (run->tp > 1 ? 2 : 1);
	}
	return bytes;
}
