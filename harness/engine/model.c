/*
 * model.c: forward and backward of the model on one rank (see model.h).
 *
 * Every GEMM goes through lks_linear(), which prepares both operands by the recipe's rule
 * (round to BF16, or quantize to FP8 with the rule's scaling along the GEMM's reduction
 * dimension, transposing codes where the GEMM needs the transpose) and calls the backend.
 * With checkpointing, blocks keep only their input; backward recomputes h, u, a with the
 * same code and the same scales, records them as the RECOMPUTE phase and leaves the amax
 * history alone, so the run must equal the run without checkpointing bit for bit.
 *
 * Every op of the step goes through the rank's backend (kernels/backend.h), on tensors in
 * its memory; the host reads back only a delayed-scaling amax and the loss.
 */
#include "harness/engine/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/err.h"
#include "kernels/philox.h"

static void lks_ptensor_set(lks_ptensor *p, size_t *off, const char *name, int rows, int cols,
                            int decay)
{
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->off = *off;
	p->rows = rows;
	p->cols = cols;
	p->n = (size_t)rows * (size_t)cols;
	p->decay = decay;
	*off += (p->n + 15) & ~(size_t)15;  /* 64-byte aligned tensors inside the flat vector */
}

int lks_model_init(lks_model *m, const lks_model_cfg *cfg)
{
	int L = cfg->layers, H = cfg->hidden, F = cfg->ffn, V = cfg->vocab;
	size_t off = 0;
	char name[48];

	memset(m, 0, sizeof(*m));
	m->cfg = *cfg;
	m->pb = cfg->attention ? 6 : 3;
	m->lb = cfg->attention ? 4 : 2;
	m->nlin = m->lb * L;
	m->D = cfg->attention ? cfg->heads * cfg->head_dim : 0;
	m->nt = 3 + m->pb * L;
	if (!(m->t = calloc((size_t)m->nt, sizeof(*m->t))))
		return lks_err("out of memory");
	lks_ptensor_set(&m->t[LKS_P_EMBED], &off, "embed.weight", V, H, 1);
	for (int l = 0; l < L; l++) {
		if (cfg->attention) {
			snprintf(name, sizeof(name), "blocks.%d.attn_norm.weight", l);
			lks_ptensor_set(&m->t[LKS_P_ATTN_NORM(m, l)], &off, name, 1, H, 0);
			snprintf(name, sizeof(name), "blocks.%d.attn.qkv.weight", l);
			lks_ptensor_set(&m->t[LKS_P_QKV(m, l)], &off, name, 3 * m->D, H, 1);
			snprintf(name, sizeof(name), "blocks.%d.attn.proj.weight", l);
			lks_ptensor_set(&m->t[LKS_P_PROJ(m, l)], &off, name, H, m->D, 1);
		}
		snprintf(name, sizeof(name), "blocks.%d.norm.weight", l);
		lks_ptensor_set(&m->t[LKS_P_NORM(m, l)], &off, name, 1, H, 0);
		snprintf(name, sizeof(name), "blocks.%d.mlp.up.weight", l);
		lks_ptensor_set(&m->t[LKS_P_UP(m, l)], &off, name, F, H, 1);
		snprintf(name, sizeof(name), "blocks.%d.mlp.down.weight", l);
		lks_ptensor_set(&m->t[LKS_P_DOWN(m, l)], &off, name, H, F, 1);
	}
	lks_ptensor_set(&m->t[LKS_P_FINAL_NORM(m)], &off, "final_norm.weight", 1, H, 0);
	lks_ptensor_set(&m->t[LKS_P_HEAD(m)], &off, "head.weight", V, H, 1);
	m->nparams = off;
	return 0;
}

void lks_model_release(lks_model *m)
{
	free(m->t);
	memset(m, 0, sizeof(*m));
}

void lks_model_init_params(const lks_model *m, uint64_t seed, float *params)
{
	int L = m->cfg.layers;

	memset(params, 0, m->nparams * sizeof(float));
	for (int i = 0; i < m->nt; i++) {
		const lks_ptensor *p = &m->t[i];
		/* GPT-2 style: std 0.02, the residual projections scaled by 1/sqrt(2L) */
		float std = 0.02f;

		if (p->rows == 1) {  /* norm gains start at 1 */
			for (size_t k = 0; k < p->n; k++)
				params[p->off + k] = 1.0f;
			continue;
		}
		for (int l = 0; l < L; l++)
			if (i == LKS_P_DOWN(m, l) || (m->cfg.attention && i == LKS_P_PROJ(m, l)))
				std = 0.02f / sqrtf(2.0f * (float)L);
		for (size_t k = 0; k < p->n; k++)
			params[p->off + k] = lks_philox_normal(seed, (uint32_t)i + 1, k) * std;
	}
}

/* ---- delayed scaling ---- */

void lks_amax_slot_roll(lks_amax_slot *s, lks_dtype fmt, int most_recent, int margin)
{
	float ref = 0.0f, fmax = fmt == LKS_E5M2 ? LKS_E5M2_MAX : LKS_E4M3_MAX;

	memmove(s->hist + 1, s->hist, sizeof(float) * (size_t)(s->len - 1));
	s->hist[0] = s->cur;
	s->filled += s->filled < s->len;
	s->cur = 0.0f;
	if (most_recent) {
		ref = s->hist[0];
	} else {
		for (int i = 0; i < s->filled; i++)
			ref = isnan(s->hist[i]) || s->hist[i] > ref ? s->hist[i] : ref;
	}
	/* TE: a finite positive amax gives fp8_max 2^-margin / amax, else the scale stays */
	if (isfinite(ref) && ref > 0.0f)
		s->scale = ldexpf(fmax / ref, -margin);
}

/* One op of rank r's backend, on its context: LKS_BE(r, gemm, &g) is
   lks_be_gemm(r->be, r->bectx, &g). */
#define LKS_BE(r, op, ...) lks_be_##op((r)->be, (r)->bectx, __VA_ARGS__)

/* ---- GEMM operands ---- */

/* bytes from the GEMM call's arena, or (step) from the step's */
static void *lks_arena_take(lks_rank *r, int step, size_t *used, size_t bytes)
{
	void *p = (step ? r->qarena : r->arena) + *used;

	*used += (bytes + 63) & ~(size_t)63;
	return *used <= (step ? r->qarena_size : r->arena_size) ? p : NULL;
}

/* The operand (rows', K) from src (rows, cols) float: src itself or its transpose;
   src_kind: which operand it is (x, W or dy). */
static int lks_prep_operand(lks_rank *r, const lks_operand_rule *rule, const float *src,
                            lks_src src_kind, int rows, int cols, int transposed,
                            lks_amax_slot *slot, int record, size_t *used, lks_operand *op,
                            lks_phase ph, int li, const char *tname)
{
	int orows = transposed ? cols : rows, ocols = transposed ? rows : cols;
	size_t n = (size_t)rows * (size_t)cols;

	memset(op, 0, sizeof(*op));
	op->ld = (size_t)ocols;
	op->dtype = rule->dtype;
	if (rule->dtype == LKS_F32) {
		float *d = lks_arena_take(r, 0, used, n * sizeof(float));

		if (!d)
			return lks_err("gemm operand arena too small");
		if (transposed ? LKS_BE(r, transpose_f32, src, rows, cols, d)
		               : LKS_BE(r, copy, d, src, n * sizeof(float)))
			return -1;
		op->data = d;
		return 0;
	}
	if (rule->dtype == LKS_BF16) {
		uint16_t *d = lks_arena_take(r, 0, used, n * 2);

		if (!d)
			return lks_err("gemm operand arena too small");
		if (transposed ? LKS_BE(r, transpose_bf16, src, rows, cols, d)
		               : LKS_BE(r, to_bf16, src, d, n))
			return -1;
		op->data = d;
		return 0;
	}

	int nscales = rule->scaling == LKS_SCALE_AXIS ? orows : 1;
	/* the tracer may read codes and scales until the step ends: from the step's arena */
	int kept = r->qarena != NULL;
	size_t *qu = kept ? &r->qused : used;
	uint8_t *codes = lks_arena_take(r, kept, qu, n);
	float *scale = lks_arena_take(r, kept, qu, sizeof(float) * (size_t)nscales);
	float *amax = lks_arena_take(r, kept, qu, sizeof(float) * (size_t)nscales);
	lks_quant q = {
		.x = src, .rows = rows, .cols = cols, .ldx = (size_t)cols,
		.fmt = rule->dtype == LKS_E4M3 ? LKS_FP8_E4M3 : LKS_FP8_E5M2,
		.axis = rule->scaling != LKS_SCALE_AXIS ? LKS_AXIS_TENSOR
		      : transposed ? LKS_AXIS_COL : LKS_AXIS_ROW,
		.pow2 = rule->pow2, .scale_given = rule->delayed,
		.q = codes, .ldq = (size_t)cols, .scale = scale, .amax = amax, .operand = src_kind,
		.no_counts = r->tr.off,
	};

	int done = 0;

	if (!codes || !scale || !amax)
		return lks_err("gemm operand arena too small");
	if (rule->delayed && LKS_BE(r, upload, scale, &slot->scale, sizeof(float)))
		return -1;
	/* under FSDP with fp8_all_gather the forward's weight comes as gathered FP8 codes
	   (under tp with the scale of its group's amax); else under tp its scale group may
	   reduce the amax first (model_tp.c) */
	if (r->fp8_gather && src_kind == LKS_SRC_W && !transposed) {
		if (r->fp8_gather(r, li, src, n, &q, tname))
			return -1;
		done = 1;
	}
	if (!done && r->tp > 1 && lks_tp_quantize(r, li, src_kind, transposed, &q, tname, &done))
		return -1;
	if (!done && LKS_BE(r, quantize, &q))
		return -1;
	if (rule->delayed && record) {  /* the history is the host's: one float comes back */
		float am;

		if (LKS_BE(r, download, &am, amax, sizeof(float)))
			return -1;
		slot->cur = isnan(am) || am > slot->cur ? am : slot->cur;
	}
	if (r->tp > 1 ? lks_tp_trace_quant(r, li, src_kind, ph, &q, tname)
	              : (lks_trace_quant(&r->tr, ph, &q, "%s", tname), 0))
		return -1;
	if (transposed) {  /* codes (rows, cols) -> (cols, rows); exact */
		uint8_t *t = lks_arena_take(r, 0, used, n);

		if (!t)
			return lks_err("gemm operand arena too small");
		if (LKS_BE(r, transpose_u8, codes, rows, cols, t))
			return -1;
		codes = t;
	}
	op->data = codes;
	op->scaling = rule->scaling;
	op->scale = scale;
	return 0;
}

/*
 * One GEMM of linear layer li (0 .. nlin-1, LKS_LIN_*) in a role (recipe.h):
 * a (arows, acols) and b (brows, bcols) are the stored tensors (x, W or dy) before any
 * transpose; out gets (M, N) as float or BF16-rounded float per role.
 */
static int lks_linear(lks_rank *r, int li, lks_role role, const float *a, int arows, int acols,
                      const float *b, int brows, int bcols, float *out)
{
	const lks_operand_rule *rules = r->rules->op[role];
	const float *src[2] = { a, b };
	int rows[2] = { arows, brows }, cols[2] = { acols, bcols };
	lks_operand ops[2];
	size_t used = 0;
	char tname[96];
	lks_phase ph = r->recomputing ? LKS_PHASE_RECOMPUTE
	             : role == LKS_ROLE_FWD ? LKS_PHASE_FORWARD : LKS_PHASE_BACKWARD;

	for (int ab = 0; ab < 2; ab++) {
		lks_src s = lks_role_src(role, ab);
		int record = !r->recomputing && (role == LKS_ROLE_FWD
		             || (role == LKS_ROLE_DGRAD && s == LKS_SRC_DY));

		snprintf(tname, sizeof(tname), "blocks.%d.%s.%s.%s", li / r->m->lb,
		         lks_model_linear_name(&r->m->cfg, li % r->m->lb), lks_role_name(role),
		         lks_src_name(s));
		if (lks_prep_operand(r, &rules[ab], src[ab], s, rows[ab], cols[ab],
		                     lks_role_transposed(role, ab), &r->slots[li * 3 + s], record,
		                     &used, &ops[ab], ph, li, tname))
			return -1;
	}

	int tr_a = lks_role_transposed(role, 0), tr_b = lks_role_transposed(role, 1);
	lks_gemm g = {
		.M = tr_a ? acols : arows, .N = tr_b ? bcols : brows, .K = tr_a ? arows : acols,
		.role = (lks_gemm_role)role, .impl = r->gemm, .a = ops[0], .b = ops[1],
		.out = LKS_F32, .c = out,
	};
	g.ldc = (size_t)g.N;
	if (LKS_BE(r, gemm, &g))
		return -1;
	/* activations and activation gradients are stored as BF16; weight gradients fp32 */
	if (role != LKS_ROLE_WGRAD && r->bf16)
		return LKS_BE(r, round_bf16, out, (size_t)g.M * (size_t)g.N);
	return 0;
}

_Static_assert((int)LKS_GEMM_FWD == LKS_ROLE_FWD && (int)LKS_GEMM_DGRAD == LKS_ROLE_DGRAD
               && (int)LKS_GEMM_WGRAD == LKS_ROLE_WGRAD, "a recipe's role is its GEMM's");

/* The LM head's GEMMs: BF16 operands, fp32 result (no recipe, no trace of operands). */
static int lks_head_gemm(lks_rank *r, lks_gemm_role role, const float *a, int arows,
                         int acols, int tr_a, const float *b, int brows, int bcols, int tr_b,
                         float *out)
{
	static const lks_operand_rule bf16 = { LKS_BF16, LKS_SCALE_NONE, 0, 0 };
	static const lks_operand_rule f32 = { LKS_F32, LKS_SCALE_NONE, 0, 0 };
	const lks_operand_rule *rule = r->bf16 ? &bf16 : &f32;
	lks_operand ops[2];
	size_t used = 0;

	/* BF16 or F32 operands are not traced: the phase and name go unused */
	if (lks_prep_operand(r, rule, a, LKS_SRC_X, arows, acols, tr_a, NULL, 0, &used, &ops[0],
	                     LKS_PHASE_FORWARD, -1, "head")
	    || lks_prep_operand(r, rule, b, LKS_SRC_W, brows, bcols, tr_b, NULL, 0, &used, &ops[1],
	                        LKS_PHASE_FORWARD, -1, "head"))
		return -1;
	lks_gemm g = {
		.M = tr_a ? acols : arows, .N = tr_b ? bcols : brows, .K = tr_a ? arows : acols,
		.role = role, .impl = r->gemm, .a = ops[0], .b = ops[1], .out = LKS_F32, .c = out,
	};
	g.ldc = (size_t)g.N;
	return LKS_BE(r, gemm, &g);
}

/* Tensors the step keeps go to the tracer as kept (trace.h); h, u, a are kept only
   without checkpointing, where every block has its own. */
#define LKS_TRACE_ACT(r, ...) ((r)->checkpoint ? lks_trace_f32(&(r)->tr, __VA_ARGS__) \
                                               : lks_trace_f32_kept(&(r)->tr, __VA_ARGS__))
/* The same of an activation (rows, cols) whose columns a tp group splits (in nb blocks):
   traced whole (model_tp.c). */
#define LKS_TRACE_COLS(r, ph, x, rows, cols, nb, ...) \
	lks_tp_trace((r), !(r)->checkpoint, (ph), (x), (rows), (cols), 1, (nb), __VA_ARGS__)
/* A tensor of the residual stream (T, H), whose rows sequence parallel splits (a block per
   sequence): traced whole. */
#define LKS_TRACE_RES(r, kept, ph, x, ...) \
	lks_tp_trace((r), (kept), (ph), (x), (r)->T, (r)->m->cfg.hidden, (r)->sp ? 0 : -1, \
	             (r)->T / (r)->m->cfg.seq, __VA_ARGS__)

/* RMSNorm of the residual stream x (Ts rows) with gain (parameter pi, 'NAME.weight') into
   out (NAME.out), whole (T, H): under sequence parallel the rank's rows, gathered from the
   group's (r->gtmp holds them). */
static int lks_norm_fwd(lks_rank *r, const float *x, int pi, float *rstd, float *out)
{
	const lks_ptensor *g = &r->m->t[pi];
	float *y = r->sp ? r->gtmp : out;
	char what[96];

	if (LKS_BE(r, rmsnorm_fwd, x, r->params + g->off, r->Ts, r->m->cfg.hidden, y, rstd,
	           r->bf16))
		return -1;
	snprintf(what, sizeof(what), "%.*s.out", (int)(strlen(g->name) - strlen(".weight")),
	         g->name);
	return r->sp ? lks_sp_gather(r, y, out, what) : 0;
}

/* A gradient of the residual stream (Ts rows), that of layer l's row-parallel output
   ('attn.proj' or 'mlp.down'), as the whole (T, H) a linear layer's backward takes:
   itself, or under sequence parallel gathered into r->spw; NULL on failure. */
static const float *lks_res_whole(lks_rank *r, const float *g, int l, const char *lin)
{
	char what[96];

	if (!r->sp)
		return g;
	snprintf(what, sizeof(what), "blocks.%d.%s.out.grad", l, lin);
	return lks_sp_gather(r, g, r->spw, what) ? NULL : r->spw;
}

/* Under sequence parallel a norm's gain or the embedding's gradient is a partial sum over
   the rank's rows: summed over the group (fp32, rank order). */
static int lks_sp_param_grad(lks_rank *r, int pi)
{
	const lks_ptensor *t = &r->m->t[pi];
	char what[64];

	if (!r->sp)
		return 0;
	snprintf(what, sizeof(what), "%s.grad", t->name);
	return lks_tp_sum(r, r->grads + t->off, t->n, 0, what);
}

/* A partial sum over the tp group of block l's tensor called "blocks.<l>.<what>" (the name
   of its NaN/Inf event), summed (lks_tp_reduce). */
static int lks_tp_reduce_named(lks_rank *r, float *x, int l, const char *what)
{
	char name[128];

	snprintf(name, sizeof(name), "blocks.%d.%s", l, what);
	return lks_tp_reduce(r, x, name);
}

/* The shape of the attention of rank r: its batch of sequences, the heads, causal. */
static lks_attn_shape lks_rank_attn_shape(const lks_rank *r)
{
	const lks_model_cfg *c = &r->m->cfg;
	lks_attn_shape a = { r->T / c->seq, c->seq, r->hl, c->head_dim, 1 };

	return a;
}

/* The attention of block l (set b of its buffers) from x_l into xm = x_l + attn(...) Wo^T,
   the MLP's input (forward, or recompute in backward). */
static int lks_block_attn(lks_rank *r, int l, int b)
{
	const lks_model *m = r->m;
	int T = r->T, H = m->cfg.hidden, D = m->D, Dl = r->Dl;
	size_t th = (size_t)T * H, td = (size_t)T * D;
	const float *x = r->xs + (size_t)l * th;
	float *ha = r->ha + b * th, *qkv = r->qkv + b * 3 * td, *qkvr = r->qkvr + b * 3 * td;
	float *ao = r->ao + b * td, *pr = r->pr + b * th, *xm = r->xm + b * th;
	float *ast = r->ast + (size_t)b * 2 * T * m->cfg.heads;
	lks_attn_shape a = lks_rank_attn_shape(r);
	lks_phase ph = r->recomputing ? LKS_PHASE_RECOMPUTE : LKS_PHASE_FORWARD;

	if (lks_norm_fwd(r, x, LKS_P_ATTN_NORM(m, l), r->rstda + (size_t)l * T, ha))
		return -1;
	LKS_TRACE_ACT(r, ph, ha, th, "blocks.%d.attn_norm.out", l);
	if (lks_linear(r, LKS_LIN_QKV(m, l), LKS_ROLE_FWD, ha, T, H,
	               lks_tp_weight(r, LKS_LIN_QKV(m, l)), 3 * Dl, H, qkv))
		return -1;
	LKS_TRACE_COLS(r, ph, qkv, T, 3 * D, 3, "blocks.%d.attn.qkv.out", l);
	if (LKS_BE(r, attn_fwd, qkv, r->rope, &a, qkvr, ao, ast, r->bf16))
		return -1;
	LKS_TRACE_COLS(r, ph, ao, T, D, 1, "blocks.%d.attn.core.out", l);
	if (lks_linear(r, LKS_LIN_PROJ(m, l), LKS_ROLE_FWD, ao, T, Dl,
	               lks_tp_weight(r, LKS_LIN_PROJ(m, l)), H, Dl, pr)
	    || (r->tp > 1 && lks_tp_reduce_named(r, pr, l, "attn.proj.out")))
		return -1;
	LKS_TRACE_RES(r, !r->checkpoint, ph, pr, "blocks.%d.attn.proj.out", l);
	if (LKS_BE(r, add, x, pr, (size_t)r->Ts * H, xm, r->bf16))
		return -1;
	LKS_TRACE_RES(r, !r->checkpoint, ph, xm, "blocks.%d.attn.out", l);
	return 0;
}

/* The MLP's input of block l: x_l, or with attention xm. */
static const float *lks_block_mlp_in(const lks_rank *r, int l)
{
	size_t th = (size_t)r->T * (size_t)r->m->cfg.hidden;

	return r->m->cfg.attention ? r->xm + (r->checkpoint ? 0 : l) * th : r->xs + l * th;
}

/* [attention,] h, u, a of block l from x_l (forward, or recompute in backward). */
static int lks_block_inner(lks_rank *r, int l)
{
	const lks_model *m = r->m;
	const lks_model_cfg *c = &m->cfg;
	int T = r->T, H = c->hidden, F = c->ffn, b = r->checkpoint ? 0 : l;
	const float *x;
	float *h = r->h + (size_t)b * T * H, *u = r->u + (size_t)b * T * F, *a = r->a + (size_t)b * T * F;
	lks_phase ph = r->recomputing ? LKS_PHASE_RECOMPUTE : LKS_PHASE_FORWARD;

	if (c->attention && lks_block_attn(r, l, b))
		return -1;
	x = lks_block_mlp_in(r, l);
	if (lks_norm_fwd(r, x, LKS_P_NORM(m, l), r->rstd + (size_t)l * T, h))
		return -1;
	LKS_TRACE_ACT(r, ph, h, (size_t)T * H, "blocks.%d.norm.out", l);
	if (lks_linear(r, LKS_LIN_UP(m, l), LKS_ROLE_FWD, h, T, H, lks_tp_weight(r, LKS_LIN_UP(m, l)),
	               r->Fl, H, u))
		return -1;
	LKS_TRACE_COLS(r, ph, u, T, F, 1, "blocks.%d.mlp.up.out", l);
	if (LKS_BE(r, relu2_fwd, u, (size_t)T * r->Fl, a, r->bf16))
		return -1;
	LKS_TRACE_COLS(r, ph, a, T, F, 1, "blocks.%d.mlp.act.out", l);
	return 0;
}

static int lks_forward(lks_rank *r)
{
	const lks_model *m = r->m;
	const lks_model_cfg *c = &m->cfg;
	int T = r->T, H = c->hidden, F = c->ffn, V = c->vocab, L = c->layers;
	const float *p = r->params;

	size_t tsh = (size_t)r->Ts * H;  /* the residual stream's (the rank's rows under sp) */

	if (LKS_BE(r, embed_gather, p + m->t[LKS_P_EMBED].off, r->sp ? r->tsp : r->tok, r->Ts, H,
	           r->xs)
	    || (r->bf16 && LKS_BE(r, round_bf16, r->xs, tsh)))
		return -1;
	LKS_TRACE_RES(r, 1, LKS_PHASE_FORWARD, r->xs, "embed.out");
	for (int l = 0; l < L; l++) {
		int b = r->checkpoint ? 0 : l;
		const float *x;
		float *xn = r->xs + (size_t)(l + 1) * T * H, *dn = r->dn + (size_t)l * T * H;

		if (lks_block_inner(r, l))
			return -1;
		x = lks_block_mlp_in(r, l);
		if (lks_linear(r, LKS_LIN_DOWN(m, l), LKS_ROLE_FWD, r->a + (size_t)b * T * F, T, r->Fl,
		               lks_tp_weight(r, LKS_LIN_DOWN(m, l)), H, r->Fl, dn)
		    || (r->tp > 1 && lks_tp_reduce_named(r, dn, l, "mlp.down.out")))
			return -1;
		LKS_TRACE_RES(r, 1, LKS_PHASE_FORWARD, dn, "blocks.%d.mlp.down.out", l);
		if (LKS_BE(r, add, x, dn, tsh, xn, r->bf16))
			return -1;
		LKS_TRACE_RES(r, 1, LKS_PHASE_FORWARD, xn, "blocks.%d.out", l);
	}
	if (lks_norm_fwd(r, r->xs + (size_t)L * T * H, LKS_P_FINAL_NORM(m), r->rstd + (size_t)L * T,
	                 r->hf))
		return -1;
	lks_trace_f32_kept(&r->tr, LKS_PHASE_FORWARD, r->hf, (size_t)T * H, "final_norm.out");
	if (lks_head_gemm(r, LKS_GEMM_FWD, r->hf, T, H, 0, p + m->t[LKS_P_HEAD(m)].off, V, H, 0,
	                  r->logits))
		return -1;
	lks_trace_f32_kept(&r->tr, LKS_PHASE_FORWARD, r->logits, (size_t)T * V, "head.logits");
	return LKS_BE(r, cross_entropy, r->logits, r->tgt, T, V, r->grad_scale, r->dz, &r->loss);
}

/* The backward of linear layer li of block l, weight W (N, K) parameter tensor pi: din (T,
   K) = dy . W and dW (N, K) = dy^T . x for dy (T, N) and its input x (T, K), both traced. */
static int lks_linear_bwd(lks_rank *r, int l, int li, int pi, const float *dy, int N,
                          const float *x, int K, float *din)
{
	const lks_ptensor *w = &r->m->t[pi];
	float *dw = r->tp > 1 ? r->tpw : r->grads + w->off;
	int T = r->T, nb, dim = lks_tp_split(r, li, LKS_SRC_W, &nb);
	lks_par style = lks_tp_style(r, li);

	if (lks_linear(r, li, LKS_ROLE_DGRAD, dy, T, N, lks_tp_weight(r, li), N, K, din)
	    || lks_linear(r, li, LKS_ROLE_WGRAD, dy, T, N, x, T, K, dw))
		return -1;
	char what[96];

	/* under tp: the shard of dW gathered whole; a column-parallel din is a partial sum */
	snprintf(what, sizeof(what), "%s.grad", w->name);
	if (r->tp > 1 && lks_tp_gather(r, dw, w->rows, w->cols, dim, nb, r->grads + w->off, what))
		return -1;
	if (style == LKS_PAR_COL) {
		snprintf(what, sizeof(what), "%s.in.grad",
		         lks_model_linear_name(&r->m->cfg, li % r->m->lb));
		if (lks_tp_reduce_named(r, din, l, what))
			return -1;
	}
	lks_trace_f32_kept(&r->tr, LKS_PHASE_BACKWARD, r->grads + w->off, w->n, "%s.grad", w->name);
	/* a row-parallel din is the columns of its input's split; a column-parallel one (K =
	   H) the residual stream's gradient */
	if (style == LKS_PAR_ROW)
		lks_tp_trace(r, 1, LKS_PHASE_BACKWARD, din, T, K * r->tp, 1, 1, "blocks.%d.%s.in.grad",
		             l, lks_model_linear_name(&r->m->cfg, li % r->m->lb));
	else if (style == LKS_PAR_COL)
		LKS_TRACE_RES(r, 1, LKS_PHASE_BACKWARD, din, "blocks.%d.%s.in.grad", l,
		              lks_model_linear_name(&r->m->cfg, li % r->m->lb));
	else
		lks_trace_f32_kept(&r->tr, LKS_PHASE_BACKWARD, din, (size_t)T * K, "blocks.%d.%s.in.grad",
		                   l, lks_model_linear_name(&r->m->cfg, li % r->m->lb));
	return 0;
}

/* The attention's backward of block l: gm (Ts, H), the gradient at xm, through the
   projection, the attention and the QKV projection, to gx at the block's input. */
static int lks_block_attn_bwd(lks_rank *r, int l, const float *gm, float *gx)
{
	const lks_model *m = r->m;
	const lks_ptensor *pt = m->t;
	int T = r->T, H = m->cfg.hidden, D = m->D, Dl = r->Dl, b = r->checkpoint ? 0 : l;
	size_t th = (size_t)T * H, td = (size_t)T * D;
	const float *x = r->xs + (size_t)l * th, *p = r->params;
	const float *ha = r->ha + b * th, *qkvr = r->qkvr + b * 3 * td, *ao = r->ao + b * td;
	const float *ast = r->ast + (size_t)b * 2 * T * m->cfg.heads;
	float *go = r->go + l * td, *gqkv = r->gqkv + l * 3 * td, *gha = r->gha + l * th;
	float *g = r->grads;
	lks_attn_shape a = lks_rank_attn_shape(r);
	lks_phase bw = LKS_PHASE_BACKWARD;

	const float *gmw = lks_res_whole(r, gm, l, "attn.proj");

	/* the projection: go (T, D) = gm . Wo;  dWo (H, D) = gm^T . ao */
	if (!gmw || lks_linear_bwd(r, l, LKS_LIN_PROJ(m, l), LKS_P_PROJ(m, l), gmw, H, ao, Dl, go))
		return -1;
	if (LKS_BE(r, attn_bwd, qkvr, ast, go, r->rope, &a, gqkv, r->bf16))
		return -1;
	lks_tp_trace(r, 1, bw, gqkv, T, 3 * D, 1, 3, "blocks.%d.attn.qkv.out.grad", l);
	/* QKV: gha (T, H) = gqkv . Wqkv;  dWqkv (3D, H) = gqkv^T . ha */
	if (lks_linear_bwd(r, l, LKS_LIN_QKV(m, l), LKS_P_QKV(m, l), gqkv, 3 * Dl, ha, H, gha))
		return -1;
	if (LKS_BE(r, rmsnorm_bwd, gha, x, p + pt[LKS_P_ATTN_NORM(m, l)].off,
	           r->rstda + (size_t)l * T, r->Ts, H, r->gtmp, g + pt[LKS_P_ATTN_NORM(m, l)].off,
	           r->bf16)
	    || lks_sp_param_grad(r, LKS_P_ATTN_NORM(m, l)))
		return -1;
	lks_trace_f32_kept(&r->tr, bw, g + pt[LKS_P_ATTN_NORM(m, l)].off, (size_t)H,
	                   "blocks.%d.attn_norm.weight.grad", l);
	/* the residual adds the branch */
	return LKS_BE(r, add, gm, r->gtmp, (size_t)r->Ts * H, gx, r->bf16);
}

static int lks_backward(lks_rank *r)
{
	const lks_model *m = r->m;
	const lks_model_cfg *c = &m->cfg;
	int T = r->T, H = c->hidden, F = c->ffn, V = c->vocab, L = c->layers;
	const float *p = r->params;
	float *g = r->grads;
	const lks_ptensor *pt = m->t;
	lks_phase bw = LKS_PHASE_BACKWARD;

	lks_trace_f32_kept(&r->tr, bw, r->dz, (size_t)T * V, "head.logits.grad");
	/* head: dWh (V, H) = dz^T . hf;  dhf (T, H) = dz . Wh, both BF16 operands */
	if (lks_head_gemm(r, LKS_GEMM_WGRAD, r->dz, T, V, 1, r->hf, T, H, 1,
	                  g + pt[LKS_P_HEAD(m)].off)
	    || lks_head_gemm(r, LKS_GEMM_DGRAD, r->dz, T, V, 0, p + pt[LKS_P_HEAD(m)].off, V, H, 1,
	                     r->gtmp))
		return -1;
	/* every rank of a tp group computes the whole dhf: under sequence parallel it keeps its
	   rows (the backward of the gather before the head) */
	if ((r->bf16 && LKS_BE(r, round_bf16, r->gtmp, (size_t)T * H))
	    || (r->sp && lks_sp_slice(r, r->gtmp)))
		return -1;
	lks_trace_f32_kept(&r->tr, bw, g + pt[LKS_P_HEAD(m)].off, pt[LKS_P_HEAD(m)].n, "head.weight.grad");
	if (LKS_BE(r, rmsnorm_bwd, r->gtmp, r->xs + (size_t)L * T * H,
	           p + pt[LKS_P_FINAL_NORM(m)].off, r->rstd + (size_t)L * T, r->Ts, H,
	           r->gx + (size_t)L * T * H, g + pt[LKS_P_FINAL_NORM(m)].off, r->bf16)
	    || lks_sp_param_grad(r, LKS_P_FINAL_NORM(m)))
		return -1;
	lks_trace_f32_kept(&r->tr, bw, g + pt[LKS_P_FINAL_NORM(m)].off, (size_t)H, "final_norm.weight.grad");
	LKS_TRACE_RES(r, 1, bw, r->gx + (size_t)L * T * H, "final_norm.in.grad");

	for (int l = L - 1; l >= 0; l--) {
		int b = r->checkpoint ? 0 : l;
		const float *x = lks_block_mlp_in(r, l);
		float *h = r->h + (size_t)b * T * H, *u = r->u + (size_t)b * T * F;
		float *a = r->a + (size_t)b * T * F;
		/* the gradient at the block's output (gy) and input (gx), and inside it; with
		   attention the MLP's residual ends at xm, whose gradient (gm) the attention's
		   backward takes on to gx */
		const float *gy = r->gx + (size_t)(l + 1) * T * H, *gyw;
		float *gx = r->gx + (size_t)l * T * H, *gh = r->gh + (size_t)l * T * H;
		float *gmlp = m->cfg.attention ? r->gm + (size_t)l * T * H : gx;
		float *ga = r->ga + (size_t)l * T * F, *gu = r->gu + (size_t)l * T * F;

		if (r->checkpoint) {
			r->recomputing = 1;
			if (lks_block_inner(r, l))
				return -1;
			r->recomputing = 0;
		}
		/* down: ga (T, F) = gy . W2;  dW2 (H, F) = gy^T . a (gy whole) */
		if (!(gyw = lks_res_whole(r, gy, l, "mlp.down"))
		    || lks_linear_bwd(r, l, LKS_LIN_DOWN(m, l), LKS_P_DOWN(m, l), gyw, H, a, r->Fl, ga))
			return -1;
		if (LKS_BE(r, relu2_bwd, u, ga, (size_t)T * r->Fl, gu, r->bf16))
			return -1;
		lks_tp_trace(r, 1, bw, gu, T, F, 1, 1, "blocks.%d.mlp.up.out.grad", l);
		/* up: gh (T, H) = gu . W1;  dW1 (F, H) = gu^T . h */
		if (lks_linear_bwd(r, l, LKS_LIN_UP(m, l), LKS_P_UP(m, l), gu, r->Fl, h, H, gh))
			return -1;
		if (LKS_BE(r, rmsnorm_bwd, gh, x, p + pt[LKS_P_NORM(m, l)].off, r->rstd + (size_t)l * T,
		           r->Ts, H, r->gtmp, g + pt[LKS_P_NORM(m, l)].off, r->bf16)
		    || lks_sp_param_grad(r, LKS_P_NORM(m, l)))
			return -1;
		lks_trace_f32_kept(&r->tr, bw, g + pt[LKS_P_NORM(m, l)].off, (size_t)H,
		                   "blocks.%d.norm.weight.grad", l);
		/* the residual adds the branch */
		if (LKS_BE(r, add, gy, r->gtmp, (size_t)r->Ts * H, gmlp, r->bf16))
			return -1;
		if (m->cfg.attention) {
			LKS_TRACE_RES(r, 1, bw, gmlp, "blocks.%d.attn.out.grad", l);
			if (lks_block_attn_bwd(r, l, gmlp, gx))
				return -1;
		}
		LKS_TRACE_RES(r, 1, bw, gx, "blocks.%d.in.grad", l);
	}
	/* the embedding: rows of the gradient added in token order (the rank's rows under
	   sequence parallel, then summed over the group) */
	if (LKS_BE(r, embed_scatter_add, r->gx, r->sp ? r->tsp : r->tok, r->Ts, H,
	           g + pt[LKS_P_EMBED].off)
	    || lks_sp_param_grad(r, LKS_P_EMBED))
		return -1;
	lks_trace_f32_kept(&r->tr, bw, g + pt[LKS_P_EMBED].off, pt[LKS_P_EMBED].n, "embed.weight.grad");
	return 0;
}

int lks_rank_step(lks_rank *r)
{
	lks_tracer_sync(&r->tr);  /* the last step's jobs read nothing of this one's */
	r->qused = 0;
	/* the GEMMs write their weight gradients whole; the embedding's and the norm gains'
	   are sums, started here (the padding between tensors stays the zeros of init) */
	for (int i = 0; i < r->m->nt; i++) {
		const lks_ptensor *p = &r->m->t[i];

		if ((i == LKS_P_EMBED || p->rows == 1)
		    && LKS_BE(r, zero, r->grads + p->off, p->n * sizeof(float)))
			return -1;
	}
	if ((r->tp > 1 && lks_tp_weights(r)) || (r->sp && lks_sp_tokens(r)) || lks_forward(r)
	    || (r->after_forward && r->after_forward(r)) || lks_backward(r))
		return -1;
	if (r->tr.failed)
		return -1;
	if (r->tr.broken)
		return lks_err("rank %d step %d traced other tensors than step 0", r->rank, r->tr.step);
	return 0;
}
