/*
 * model_tp.c: tensor parallel on one rank (model.h, lks_par), Megatron-style.
 *
 * A tp group is tp consecutive ranks that see the same sequences. Linear layer y = x W^T:
 *   column-parallel (QKV, up): rank t holds rows of W, so its y is columns of the whole;
 *     Wqkv's rows are q, k, v, each split by heads, so rank t holds heads [t hl, (t+1) hl)
 *     of each, and its qkv is (T, 3 Dl) in the same q | k | v layout;
 *   row-parallel (proj, down): rank t holds columns of W, the columns its column-parallel
 *     partner produced, so its y is a partial sum, summed over the group (lks_tp_sum).
 * In backward the column-parallel layer's dgrad is the partial one (dx = dy W over its
 * rows); weight gradients are whole for the rank's rows or columns, and gathered.
 *
 * Every rank keeps the whole parameter vector and the update of DP (runner.c): its shards
 * of a step are sliced from it (lks_tp_weights), which costs memory, not arithmetic. The
 * group's collectives are comm.h's over the host: rank-ordered fp32 sums, all-gathers and
 * reduce-scatters (each rank's part contiguous, then put in its place). Where a shard of a
 * sum is rounded: a partial output is rounded to BF16 as the GEMM stores it, then summed in
 * fp32 in rank order and rounded again, as an all-reduce of BF16 partials in NCCL's ring
 * does for two ranks.
 *
 * FP8: the recipe's scale groups (recipe.h) say which operands' amax the group reduces;
 * those are quantized twice: once for the local amax, then with the scales of the group's
 * max (comm.h's NaN-winning max), so a sharded tensor gets the whole tensor's scales. A
 * traced tensor or FP8 operand split over the group is traced whole: each rank gathers it.
 */
#include "harness/engine/model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/fault.h"
#include "kernels/element/cast.h"
#include "kernels/err.h"

#define LKS_BE(r, op, ...) lks_be_##op((r)->be, (r)->bectx, __VA_ARGS__)

/* k: linear layer li's place in its block (LKS_LIN_*) */
static int lks_lin_k(const lks_rank *r, int li)
{
	return li % r->m->lb;
}

/* The parallel style of a block's linear layer k under tp, in a model of cfg */
static lks_par lks_tp_style_of(const lks_model_cfg *cfg, int k)
{
	if (cfg->attention)  /* qkv, proj, up, down */
		return k == 0 || k == 2 ? LKS_PAR_COL : LKS_PAR_ROW;
	return k == 0 ? LKS_PAR_COL : LKS_PAR_ROW;  /* up, down */
}

lks_par lks_tp_style(const lks_rank *r, int li)
{
	return r->tp <= 1 ? LKS_PAR_NONE : lks_tp_style_of(&r->m->cfg, lks_lin_k(r, li));
}

/* The dimension of src split by a layer of style: 0 rows, 1 cols, -1 none */
static int lks_tp_dim(lks_par style, lks_src src)
{
	if (style == LKS_PAR_COL)   /* W (N, K) by rows; dy (T, N) by columns; x whole */
		return src == LKS_SRC_W ? 0 : src == LKS_SRC_DY ? 1 : -1;
	if (style == LKS_PAR_ROW)   /* W (N, K) and x (T, K) by columns; dy whole */
		return src == LKS_SRC_DY ? -1 : 1;
	return -1;
}

int lks_tp_split(const lks_rank *r, int li, lks_src src, int *nb)
{
	lks_par style = lks_tp_style(r, li);

	*nb = style == LKS_PAR_COL && r->m->cfg.attention && lks_lin_k(r, li) == 0 ? 3 : 1;
	return lks_tp_dim(style, src);
}

/* How a GEMM operand split along dim (lks_tp_dim) is split for the GEMM, which reduces
   along its rows when transposed */
static lks_shard lks_tp_shard(int dim, int transposed)
{
	return dim < 0 ? LKS_SHARD_NONE
	     : (dim == 1) != (transposed != 0) ? LKS_SHARD_K : LKS_SHARD_MN;
}

lks_amax_group lks_tp_operand_group(const lks_model_cfg *cfg, const lks_run_cfg *run,
                                    const char *name, const char **why)
{
	const lks_operand_rule *rule;
	lks_shard sh;
	lks_role role;
	int k, ab;

	*why = "it is no FP8 operand of the model";
	if (!lks_model_fp8_operand(cfg, name, &k, &role, &ab))
		return LKS_GROUP_NONE;
	rule = &lks_recipe_rules_of(run->recipe)->op[role][ab];
	sh = lks_tp_shard(lks_tp_dim(lks_tp_style_of(cfg, k), lks_role_src(role, ab)),
	                  lks_role_transposed(role, ab));
	if (rule->dtype != LKS_E4M3 && rule->dtype != LKS_E5M2)
		*why = "the recipe keeps it in BF16";
	else if (run->fp8_all_gather && role == LKS_ROLE_FWD && lks_role_src(role, ab) == LKS_SRC_W)
		*why = "fp8_all_gather = on casts it from the fsdp shards, with the scale of the fsdp "
		       "and tp groups' amax";
	else if (rule->delayed)
		*why = "its scale is delayed, from the amax history every rank shares";
	else if (sh == LKS_SHARD_NONE)
		*why = "it is whole on every rank of the tp group";
	else if (lks_recipe_amax_group(rule, sh) == LKS_GROUP_NONE)
		*why = "its scales are per row or column across the split, each whole on one rank";
	else
		return LKS_GROUP_TP;
	return LKS_GROUP_NONE;
}

/* The parameter tensor of linear layer li. */
static const lks_ptensor *lks_lin_weight(const lks_rank *r, int li)
{
	const lks_model *m = r->m;
	int l = li / m->lb, k = lks_lin_k(r, li);
	int qkv[4] = { LKS_P_QKV(m, l), LKS_P_PROJ(m, l), LKS_P_UP(m, l), LKS_P_DOWN(m, l) };
	int mlp[2] = { LKS_P_UP(m, l), LKS_P_DOWN(m, l) };

	return &m->t[m->cfg.attention ? qkv[k] : mlp[k]];
}

/* Along a split dimension of nl local entries in nb blocks: local index k's whole index. */
static size_t lks_tp_at(size_t k, size_t nl, int nb, int tp, int t)
{
	size_t bl = nl / (size_t)nb;

	return (k / bl) * bl * (size_t)tp + (size_t)t * bl + k % bl;
}

/* Between whole (rows, cols) and rank t's shard local, split along dim in nb blocks:
   to_whole puts local in its place, else local is taken from whole. */
static void lks_tp_map(float *whole, float *local, int rows, int cols, int dim, int nb,
                       int tp, int t, int to_whole)
{
	size_t lr = dim == 0 ? (size_t)rows / tp : (size_t)rows;
	size_t lc = dim == 1 ? (size_t)cols / tp : (size_t)cols;

	for (size_t i = 0; i < lr; i++) {
		size_t I = dim == 0 ? lks_tp_at(i, lr, nb, tp, t) : i;
		float *w = whole + I * (size_t)cols, *l = local + i * lc;

		if (dim != 1) {
			if (to_whole)
				memcpy(w, l, lc * sizeof(float));
			else
				memcpy(l, w, lc * sizeof(float));
			continue;
		}
		for (size_t j = 0; j < lc; j++) {
			size_t J = lks_tp_at(j, lc, nb, tp, t);

			if (to_whole)
				w[J] = l[j];
			else
				l[j] = w[J];
		}
	}
}

int lks_tp_init(lks_rank *r, const lks_run_cfg *run)
{
	const lks_model *m = r->m;
	const lks_model_cfg *c = &m->cfg;
	size_t T = (size_t)r->T, H = (size_t)c->hidden, off = 0, big;
	int tp = run->tp > 1 ? run->tp : 1, failed = 0;

	r->tp = tp;
	r->tpr = r->rank % tp;
	r->Fl = c->ffn / tp;
	r->hl = c->attention ? c->heads / tp : 0;
	r->Dl = r->hl * c->head_dim;
	r->sp = tp > 1 && run->sp;
	r->shards = tp > 1 && run->trace_shards;
	r->Ts = r->sp ? r->T / tp : r->T;
	if (tp == 1)
		return 0;
	if (!(r->wloff = calloc((size_t)m->nlin, sizeof(size_t))))
		return lks_err("out of memory");
	for (int li = 0; li < m->nlin; li++) {
		r->wloff[li] = off;
		off += (lks_lin_weight(r, li)->n / (size_t)tp + 15) & ~(size_t)15;
	}
	/* the largest whole tensor gathered or summed: activations (T, H), (T, F), (T, 3D),
	   weights (F, H), (3D, H) */
	big = T * H;
	/* ... and under sequence parallel the embedding's gradient (V, H), summed */
	size_t sizes[] = { T * (size_t)c->ffn, T * 3 * (size_t)m->D, (size_t)c->ffn * H,
	                   3 * (size_t)m->D * H, r->sp ? (size_t)c->vocab * H : 0 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		big = sizes[i] > big ? sizes[i] : big;
	r->tpn = big + 16;
	if (lks_be_alloc(r->be, r->bectx, off * sizeof(float), (void **)&r->wl)
	    || lks_be_alloc(r->be, r->bectx, r->tpn * sizeof(float), (void **)&r->tpw))
		failed = 1;
	if (r->sp && (lks_be_alloc(r->be, r->bectx, T * H * sizeof(float), (void **)&r->spw)
	              || lks_be_alloc(r->be, r->bectx, T * sizeof(int32_t), (void **)&r->tsp)
	              || !(r->htok = malloc(T * sizeof(int32_t)))))
		failed = 1;
	if (failed || !(r->tph = malloc(3 * r->tpn * sizeof(float))))
		return lks_err("out of memory for rank %d's tensor-parallel buffers", r->rank);
	return 0;
}

void lks_tp_release(lks_rank *r)
{
	if (r->be) {
		lks_be_free(r->be, r->bectx, r->wl);
		lks_be_free(r->be, r->bectx, r->tpw);
		lks_be_free(r->be, r->bectx, r->spw);
		lks_be_free(r->be, r->bectx, r->tsp);
	}
	free(r->tph);
	free(r->wloff);
	free(r->htok);
	r->wl = r->tpw = r->tph = r->spw = NULL;
	r->wloff = NULL;
	r->tsp = r->htok = NULL;
}

int lks_tp_weights(lks_rank *r)
{
	for (int li = 0; li < r->m->nlin; li++) {
		const lks_ptensor *w = lks_lin_weight(r, li);
		int nb, dim = lks_tp_split(r, li, LKS_SRC_W, &nb);
		float *whole = r->tph, *local = r->tph + r->tpn;

		if (LKS_BE(r, download, whole, r->params + w->off, w->n * sizeof(float)))
			return -1;
		lks_tp_map(whole, local, w->rows, w->cols, dim, nb, r->tp, r->tpr, 0);
		if (LKS_BE(r, upload, r->wl + r->wloff[li], local, w->n / r->tp * sizeof(float)))
			return -1;
	}
	return 0;
}

const float *lks_tp_weight(const lks_rank *r, int li)
{
	return r->tp > 1 ? r->wl + r->wloff[li] : r->params + lks_lin_weight(r, li)->off;
}

size_t lks_tp_weight_index(const lks_rank *r, int li, size_t k)
{
	const lks_ptensor *w = lks_lin_weight(r, li);
	int nb, dim = lks_tp_split(r, li, LKS_SRC_W, &nb);
	size_t lr = dim == 0 ? (size_t)w->rows / r->tp : (size_t)w->rows;
	size_t lc = dim == 1 ? (size_t)w->cols / r->tp : (size_t)w->cols;
	size_t i = k / lc, j = k % lc;

	if (dim == 0)
		i = lks_tp_at(i, lr, nb, r->tp, r->tpr);
	else if (dim == 1)
		j = lks_tp_at(j, lc, nb, r->tp, r->tpr);
	return w->off + i * (size_t)w->cols + j;
}

int lks_tp_traced_split(const char *name)
{
	static const char *const split[] = { ".attn.qkv.out", ".attn.core.out", ".mlp.up.out",
	                                     ".mlp.act.out", ".mlp.up.out.grad",
	                                     ".attn.qkv.out.grad", ".attn.proj.in.grad",
	                                     ".mlp.down.in.grad" };
	size_t len = strlen(name);

	for (size_t i = 0; i < sizeof(split) / sizeof(split[0]); i++) {
		size_t k = strlen(split[i]);

		if (len > k && !strcmp(name + len - k, split[i]))
			return 1;
	}
	return 0;
}

static int64_t lks_count_nonfinite(const float *h, size_t n)
{
	int64_t bad = 0;

	for (size_t i = 0; i < n; i++)
		bad += !isfinite(h[i]);
	return bad;
}

/* The rank's share (host, n floats: a partial sum, or an amax) before the group's
   collective takes it: its first NaN/Inf */
static void lks_tp_scan(lks_rank *r, const float *h, size_t n, const char *what)
{
	int64_t bad;

	if (r->nan_act_seen || !(bad = lks_count_nonfinite(h, n)))
		return;
	snprintf(r->nan_act, sizeof(r->nan_act), "%s", what);
	r->nan_act_count = bad;
	r->nan_act_seen = 1;
}

/* What the group's collective gave the rank (host, n floats): a NaN/Inf that came from
   another rank's share, so that the rank's own shares after it are not named as where
   it began (the first offending rank is the one whose share held it). */
static void lks_tp_heard(lks_rank *r, const float *h, size_t n)
{
	if (!r->nan_act_seen && lks_count_nonfinite(h, n))
		r->nan_act_seen = 1;
}

int lks_tp_max(lks_rank *r, float *h, size_t n, const char *what)
{
	lks_tp_scan(r, h, n, what);
	if (lks_comm_allreduce_max(r->tpc, h, n))
		return -1;
	lks_tp_heard(r, h, n);
	return 0;
}

int lks_tp_sum(lks_rank *r, float *x, size_t n, int round, const char *what)
{
	if (LKS_BE(r, download, r->tph, x, n * sizeof(float)))
		return -1;
	lks_tp_scan(r, r->tph, n, what);
	if (lks_comm_allreduce_sum(r->tpc, r->tph, n))
		return -1;
	lks_tp_heard(r, r->tph, n);
	if (LKS_BE(r, upload, x, r->tph, n * sizeof(float)))
		return -1;
	return round && r->bf16 ? LKS_BE(r, round_bf16, x, n) : 0;
}

/* The sequence shards of a (T, H) tensor: rows, in a block per sequence. */
#define LKS_SP_SHAPE(r) (r)->T, (r)->m->cfg.hidden, 0, (r)->T / (r)->m->cfg.seq

/* The rank's rows (Ts, H) of whole (T, H) on the host (r->tph) into x. */
static int lks_sp_put_rows(lks_rank *r, float *x)
{
	size_t n = (size_t)r->Ts * (size_t)r->m->cfg.hidden;

	lks_tp_map(r->tph, r->tph + r->tpn, LKS_SP_SHAPE(r), r->tp, r->tpr, 0);
	return LKS_BE(r, upload, x, r->tph + r->tpn, n * sizeof(float));
}

int lks_tp_reduce(lks_rank *r, float *x, const char *what)
{
	size_t n = (size_t)r->T * (size_t)r->m->cfg.hidden;

	size_t nl = n / (size_t)r->tp;
	float *ranked = r->tph + r->tpn, *mine = r->tph + 2 * r->tpn;

	if (!r->sp)
		return lks_tp_sum(r, x, n, 1, what);
	/* the reduce-scatter of the group's rank-ordered sums: each rank's rows made
	   contiguous, rank by rank, so that rank t's are the t-th n / tp */
	if (LKS_BE(r, download, r->tph, x, n * sizeof(float)))
		return -1;
	lks_tp_scan(r, r->tph, n, what);
	for (int t = 0; t < r->tp; t++)
		lks_tp_map(r->tph, ranked + (size_t)t * nl, LKS_SP_SHAPE(r), r->tp, t, 0);
	if (lks_comm_reduce_scatter(r->tpc, ranked, nl, mine))
		return -1;
	lks_tp_heard(r, mine, nl);
	if (LKS_BE(r, upload, x, mine, nl * sizeof(float)))
		return -1;
	return r->bf16 ? LKS_BE(r, round_bf16, x, nl) : 0;
}

int lks_sp_slice(lks_rank *r, float *x)
{
	size_t n = (size_t)r->T * (size_t)r->m->cfg.hidden;

	if (LKS_BE(r, download, r->tph, x, n * sizeof(float)))
		return -1;
	return lks_sp_put_rows(r, x);
}

int lks_sp_tokens(lks_rank *r)
{
	int S = r->m->cfg.seq, Ss = S / r->tp;

	if (LKS_BE(r, download, r->htok, r->tok, (size_t)r->T * sizeof(int32_t)))
		return -1;
	for (int b = 0; b < r->T / S; b++)  /* in place: a row moves only towards the start */
		memmove(r->htok + (size_t)b * Ss, r->htok + (size_t)b * S + (size_t)r->tpr * Ss,
		        (size_t)Ss * sizeof(int32_t));
	return LKS_BE(r, upload, r->tsp, r->htok, (size_t)r->Ts * sizeof(int32_t));
}

/* The whole (rows, cols) on the host (r->tph) from each rank's local shard (host): the
   group's all-gather, then each rank's shard in its place. flow: the model's data (not a
   trace's copy), where a NaN/Inf heard from another rank counts. */
static int lks_tp_gather_host(lks_rank *r, float *local, int rows, int cols, int dim, int nb,
                              int flow)
{
	size_t nl = (size_t)rows * (size_t)cols / (size_t)r->tp;
	float *all = r->tph + 2 * r->tpn;
	int rc;

	if (!flow)  /* the trace's copy: no fault of the run's collectives strikes it */
		lks_fault_copy(1);
	rc = lks_comm_all_gather(r->tpc, local, nl, all);
	if (!flow)
		lks_fault_copy(0);
	if (rc)
		return -1;
	if (flow)
		lks_tp_heard(r, all, nl * (size_t)r->tp);
	for (int t = 0; t < r->tp; t++)
		lks_tp_map(r->tph, all + (size_t)t * nl, rows, cols, dim, nb, r->tp, t, 1);
	return 0;
}

int lks_sp_gather(lks_rank *r, const float *local, float *whole, const char *what)
{
	return lks_tp_gather(r, local, LKS_SP_SHAPE(r), whole, what);
}

static int lks_tp_gather_to(lks_rank *r, const float *x, int rows, int cols, int dim, int nb,
                            float *whole, const char *what, int flow)
{
	size_t n = (size_t)rows * (size_t)cols;
	float *local = r->tph + r->tpn;

	if (LKS_BE(r, download, local, x, n / (size_t)r->tp * sizeof(float)))
		return -1;
	if (what)
		lks_tp_scan(r, local, n / (size_t)r->tp, what);
	if (lks_tp_gather_host(r, local, rows, cols, dim, nb, flow))
		return -1;
	return LKS_BE(r, upload, whole, r->tph, n * sizeof(float));
}

int lks_tp_gather(lks_rank *r, const float *x, int rows, int cols, int dim, int nb,
                  float *whole, const char *what)
{
	return lks_tp_gather_to(r, x, rows, cols, dim, nb, whole, what, 1);
}

void lks_tp_trace(lks_rank *r, int kept, lks_phase ph, float *x, int rows, int cols, int dim,
                  int nb, const char *fmt, ...)
{
	char name[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	if (r->tp == 1 || dim < 0 || r->shards) {
		size_t n = (size_t)rows * (size_t)cols / (r->tp > 1 && dim >= 0 ? (size_t)r->tp : 1);

		if (kept)
			lks_trace_f32_kept(&r->tr, ph, x, n, "%s", name);
		else
			lks_trace_f32(&r->tr, ph, x, n, "%s", name);
		return;
	}
	if (r->tr.off)
		return;
	if (lks_tp_gather_to(r, x, rows, cols, dim, nb, r->tpw, NULL, 0)) {
		r->tr.failed = 1;
		return;
	}
	lks_trace_f32(&r->tr, ph, r->tpw, (size_t)rows * (size_t)cols, "%s", name);
}

int lks_tp_quantize(lks_rank *r, int li, lks_src src, int transposed, lks_quant *q,
                    const char *name, int *done)
{
	int nb, dim = lks_tp_split(r, li, src, &nb);
	size_t ns = lks_quant_nscales(q);
	float *h = r->tph, *mine = r->tph + r->tpn;
	lks_shard sh = lks_tp_shard(dim, transposed);
	lks_operand_rule as = { 0 };

	/* the operand's rule, as far as the group needs it: its scaling and delay */
	as.scaling = q->axis == LKS_AXIS_TENSOR ? LKS_SCALE_TENSOR : LKS_SCALE_AXIS;
	as.delayed = q->scale_given;
	*done = 0;
	if (lks_recipe_amax_group(&as, sh) != LKS_GROUP_TP)
		return 0;
	if (LKS_BE(r, quantize, q) || LKS_BE(r, download, h, q->amax, ns * sizeof(float)))
		return -1;
	memcpy(mine, h, ns * sizeof(float));
	if (lks_tp_max(r, h, ns, name))  /* a NaN amax would spread to the group's scales */
		return -1;
	if (lks_fault_amax_local(r->plant, name))  /* the group's amax, or (a fault) its own */
		memcpy(h, mine, ns * sizeof(float));
	/* a fault: every rank reduces over the dp group too; the struck take that */
	if (r->dpc && lks_fault_amax_group(r->amax_fault, r->tr.step, name)) {
		if (lks_comm_allreduce_max(r->dpc, mine, ns))
			return -1;
		if (lks_fault_amax_group_here(r->plant, name))
			memcpy(h, mine, ns * sizeof(float));
	}
	for (size_t i = 0; i < ns; i++)
		h[i] = lks_fp8_scale(h[i], q->fmt, q->pow2);
	if (LKS_BE(r, upload, q->scale, h, ns * sizeof(float)))
		return -1;
	q->scale_given = 1;
	if (LKS_BE(r, quantize, q))
		return -1;
	q->scale_given = 0;
	*done = 1;
	return 0;
}

int lks_quant_counts_sum(lks_comm *c, lks_quant *q)
{
	/* in 16-bit parts, each sum exact in float (below 2^24): a part is below 2^16 and a
	   count below 2^31 (a tensor's elements), so up to 256 ranks sum exactly */
	float p[4] = { (float)(q->underflow >> 16), (float)(q->underflow & 0xffff),
	               (float)(q->saturated >> 16), (float)(q->saturated & 0xffff) };

	if (lks_comm_allreduce_sum(c, p, 4))
		return -1;
	q->underflow = ((uint64_t)p[0] << 16) + (uint64_t)p[1];
	q->saturated = ((uint64_t)p[2] << 16) + (uint64_t)p[3];
	return 0;
}

int lks_tp_trace_quant(lks_rank *r, int li, lks_src src, lks_phase ph, const lks_quant *q,
                       const char *name)
{
	int nb, dim = lks_tp_split(r, li, src, &nb), tp = r->tp;
	lks_quant w = *q;
	size_t nl, n, ns = lks_quant_nscales(q), used;
	uint8_t *bytes;
	float *local = r->tph + r->tpn;
	int per_split = (q->axis == LKS_AXIS_ROW && dim == 0) || (q->axis == LKS_AXIS_COL && dim == 1);

	if (dim < 0 || r->shards) {
		lks_trace_quant(&r->tr, ph, q, "%s", name);
		return 0;
	}
	if (r->tr.off)
		return 0;
	w.rows = q->rows * (dim == 0 ? tp : 1);
	w.cols = q->cols * (dim == 1 ? tp : 1);
	w.ldx = w.ldq = (size_t)w.cols;
	nl = (size_t)q->rows * (size_t)q->cols;
	n = nl * (size_t)tp;
	/* whole codes and scales: kept until the step's tracer syncs (the step's arena) where
	   the tracer measures in the background, else measured now (the gathered tensor's
	   scratch, which holds n codes and their scales: n <= tpn) */
	used = r->qarena ? r->qused : 0;
	w.q = (uint8_t *)(r->qarena ? (void *)r->qarena : (void *)r->tpw) + used;
	used += (n + 63) & ~(size_t)63;
	w.scale = (float *)(void *)((uint8_t *)(r->qarena ? (void *)r->qarena : (void *)r->tpw) + used);
	used += (sizeof(float) * ns * (size_t)tp + 63) & ~(size_t)63;
	if (used > (r->qarena ? r->qarena_size : r->tpn * sizeof(float)))
		return lks_err("the traced operands' arena is too small for %s", name);
	if (r->qarena)
		r->qused = used;
	if (!(bytes = malloc(n ? n : 1)))
		return lks_err("out of memory");
	/* the codes, as floats (exact: 0 to 255) */
	if (LKS_BE(r, download, bytes, q->q, nl))
		goto fail;
	for (size_t i = 0; i < nl; i++)
		local[i] = (float)bytes[i];
	if (lks_tp_gather_host(r, local, w.rows, w.cols, dim, nb, 0))
		goto fail;
	for (size_t i = 0; i < n; i++)
		bytes[i] = (uint8_t)r->tph[i];
	if (LKS_BE(r, upload, w.q, bytes, n))
		goto fail;
	free(bytes);
	bytes = NULL;
	/* the scales: one per row (or column) split over the group gathered as the codes'
	   rows (columns); else the same on every rank (the group's, or whole rows') */
	if (per_split) {
		int sr = dim == 0 ? (int)ns * tp : 1, sc = dim == 1 ? (int)ns * tp : 1;

		if (lks_tp_gather_to(r, q->scale, sr, sc, dim, nb, w.scale, NULL, 0))
			return -1;
	} else if (LKS_BE(r, copy, w.scale, q->scale, ns * sizeof(float))) {
		return -1;
	}
	if (lks_quant_counts_sum(r->tpc, &w))
		return -1;
	lks_trace_quant(&r->tr, ph, &w, "%s", name);
	return 0;
fail:
	free(bytes);
	return -1;
}
