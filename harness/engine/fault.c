/* fault.c: planted faults (see fault.h): the table of kinds, their specs and the runs
   they fit. */
#include "harness/engine/fault.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/case.h"
#include "harness/engine/model.h"
#include "harness/engine/fault_impl.h"
#include "harness/engine/recipe.h"
#include "harness/engine/runner.h"
#include "harness/store/trace_store.h"
#include "kernels/err.h"

/* The keys each kind requires and accepts, one bit per key of lks_fault_keys. */
enum { K_STEP = 1, K_RANK = 2, K_TENSOR = 4, K_ELEMENT = 8, K_BIT = 16, K_RUN = 32,
       K_COUNT = 64 };

static const char *const lks_fault_keys[] = { "step", "rank", "tensor", "element", "bit", "run",
                                              "count" };
#define LKS_FAULT_NKEYS 7

static int lks_fault_fits_stale(const lks_fault *f, int recipe, int checkpoint, int world_size)
{
	char fit[256];  /* the recipes it fits: from the recipe table */

	(void)world_size;
	if (lks_recipe_delayed_dy(recipe) && checkpoint)
		return 0;
	return lks_err("inject: %s needs a recipe with delayed scaling of dy (%s) and "
	               "checkpoint = blocks (the scales it leaves stale exist only there)",
	               lks_fault_kind_name(f->kind),
	               lks_recipe_names(lks_recipe_delayed_dy, fit, sizeof(fit)));
}

static int lks_fault_fits_ranks(const lks_fault *f, int recipe, int checkpoint, int world_size)
{
	(void)recipe;
	(void)checkpoint;
	if (world_size >= 2)
		return 0;
	return lks_err("inject: %s needs world_size >= 2 (one rank has no all-reduce to skip)",
	               lks_fault_kind_name(f->kind));
}

static int lks_fault_fits_pow2(const lks_fault *f, int recipe, int checkpoint, int world_size)
{
	char fit[256];

	(void)checkpoint;
	(void)world_size;
	if (lks_recipe_pow2(recipe))
		return 0;
	return lks_err("inject: %s needs a recipe with power-of-two scales (%s)",
	               lks_fault_kind_name(f->kind), lks_recipe_names(lks_recipe_pow2, fit, sizeof(fit)));
}

/* a recipe with an FP8 operand whose scale comes from this step's amax (not a history):
   the operands a scale group reduces (recipe.h) */
static int lks_recipe_fp8_current(lks_recipe r)
{
	const lks_recipe_rules *rules = lks_recipe_rules_of(r);

	for (int role = 0; rules && role < 3; role++)
		for (int ab = 0; ab < 2; ab++) {
			const lks_operand_rule *o = &rules->op[role][ab];

			if ((o->dtype == LKS_E4M3 || o->dtype == LKS_E5M2) && !o->delayed)
				return 1;
		}
	return 0;
}

static int lks_fault_fits_fp8(const lks_fault *f, int recipe, int checkpoint, int world_size)
{
	char fit[256];

	(void)checkpoint;
	(void)world_size;
	if (lks_recipe_fp8_current(recipe))
		return 0;
	return lks_err("inject: %s needs a recipe whose FP8 scales come from the step's amax (%s)",
	               lks_fault_kind_name(f->kind),
	               lks_recipe_names(lks_recipe_fp8_current, fit, sizeof(fit)));
}

/* ---- what each kind does where it is planted (fault_backend.c calls these) ---- */

/* ag_stale: a shard of the step before needs a step before */
static int lks_fault_fits_later(const lks_fault *f, int recipe, int checkpoint, int world_size)
{
	(void)recipe;
	(void)checkpoint;
	(void)world_size;
	if (f->step >= 1)
		return 0;
	return lks_err("inject: %s needs step >= 1 (a shard of the step before)",
	               lks_fault_kind_name(f->kind));
}

/* bitflip and nan: the one element of the tensor aimed at, through the host (x is the
   backend's memory), in the forward, not the recompute that repeats its names */
static int lks_fault_strike_traced(struct lks_fault_plant *w, void *ctx, float *x,
                                   size_t n, const char *name, int phase)
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
static int lks_fault_round_up(struct lks_fault_plant *w, void *ctx, lks_quant *q)
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
static int lks_fault_stale_scale(struct lks_fault_plant *w, void *ctx, lks_quant *q)
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

/* The kinds, one row each (fault_impl.h): a new kind is a row here and its action. */
const lks_fault_row lks_fault_rows[LKS_FAULT_COUNT] = {
	[LKS_FAULT_NONE] = { .name = "none" },
	[LKS_FAULT_BITFLIP] = { "bitflip", K_STEP | K_RANK | K_TENSOR | K_ELEMENT | K_BIT, 0,
	                        .tensor = 1, .traced = lks_fault_strike_traced },
	[LKS_FAULT_NAN] = { "nan", K_STEP | K_RANK | K_TENSOR, K_ELEMENT, .tensor = 1,
	                    .traced = lks_fault_strike_traced },
	[LKS_FAULT_STALE_BWD_SCALE] = { "stale_bwd_scale", 0, 0, .from_step = 1,
	                                .fits = lks_fault_fits_stale,
	                                .quantize = lks_fault_stale_scale },
	[LKS_FAULT_SKIP_ALLREDUCE] = { "skip_allreduce", K_STEP | K_RANK, 0,
	                               .fits = lks_fault_fits_ranks, .comm = lks_fault_comm,
	                               .host_comm = 1, .grad_copies = 1 },
	[LKS_FAULT_SCALE_ROUND_UP] = { "scale_round_up", 0, K_STEP | K_RANK, .from_step = 1,
	                               .fits = lks_fault_fits_pow2,
	                               .quantize = lks_fault_round_up },
	[LKS_FAULT_RS_DROP_TAIL] = { "rs_drop_tail", K_STEP | K_RANK, K_COUNT,
	                             .comm = lks_fault_comm, .host_comm = 1, .gathers = 1 },
	[LKS_FAULT_AG_STALE] = { "ag_stale", K_STEP | K_RANK, 0, .fits = lks_fault_fits_later,
	                         .comm = lks_fault_comm, .host_comm = 1, .gathers = 1 },
	[LKS_FAULT_AMAX_LOCAL] = { "amax_local", K_TENSOR, K_STEP | K_RANK, .from_step = 1,
	                           .fits = lks_fault_fits_fp8, .scale_group = 1 },
	[LKS_FAULT_AMAX_GROUP] = { "amax_group", K_TENSOR, K_STEP | K_RANK, .from_step = 1,
	                           .fits = lks_fault_fits_fp8, .scale_group = 2 },
	[LKS_FAULT_BITFLIP_ALLREDUCE] = { "bitflip_allreduce", K_STEP | K_RANK | K_ELEMENT | K_BIT,
	                                  0, .fits = lks_fault_fits_ranks, .comm = lks_fault_comm,
	                                  .host_comm = 1 },
	[LKS_FAULT_BITFLIP_ALLREDUCE_OUT] = { "bitflip_allreduce_out",
	                                      K_STEP | K_RANK | K_ELEMENT | K_BIT, 0,
	                                      .fits = lks_fault_fits_ranks, .comm = lks_fault_comm,
	                                      .host_comm = 1 },
};

const char *lks_fault_kind_name(lks_fault_kind k)
{
	return k >= 0 && k < LKS_FAULT_COUNT ? lks_fault_rows[k].name : "?";
}

/* "bitflip, nan, ..." (or "a, b or c" with last "or"): the kinds' names from the table */
static const char *lks_fault_kinds(char *buf, size_t size, const char *last)
{
	size_t n = 0;

	buf[0] = 0;
	for (int k = 1; k < LKS_FAULT_COUNT && n < size; k++)
		n += (size_t)snprintf(buf + n, size - n, "%s%s", k == 1 ? ""
		                      : k + 1 == LKS_FAULT_COUNT ? last : ", ", lks_fault_rows[k].name);
	return buf;
}

static int lks_fault_int(const char *key, const char *val, long long hi, long long *out)
{
	char *end;

	errno = 0;
	*out = strtoll(val, &end, 10);
	if (!(*val >= '0' && *val <= '9') || *end || errno || *out > hi)
		return lks_err("inject: bad %s '%s': want an integer in [0, %lld]", key, val, hi);
	return 0;
}

/* One "key=value" token into f; seen collects the keys given. */
static int lks_fault_key(lks_fault *f, char *tok, int allow_run, unsigned *seen)
{
	char *eq = strchr(tok, '=');
	long long v;
	int k;

	if (!eq)
		return lks_err("inject: '%s' is not key=value", tok);
	*eq = 0;
	for (k = 0; k < LKS_FAULT_NKEYS && strcmp(tok, lks_fault_keys[k]); k++)
		;
	if (k == LKS_FAULT_NKEYS || (k == 5 && !allow_run))
		return lks_err("inject: unknown key '%s' (step, rank, tensor, element, bit, count%s)",
		               tok, allow_run ? ", run" : "");
	if (*seen & (1u << k))
		return lks_err("inject: key '%s' given twice", tok);
	*seen |= 1u << k;
	switch (k) {
	case 2:
	case 5:
		if (!eq[1] || strlen(eq + 1) >= (k == 2 ? sizeof(f->tensor) : sizeof(f->run)))
			return lks_err("inject: empty or too long %s '%s'", tok, eq + 1);
		strcpy(k == 2 ? f->tensor : f->run, eq + 1);
		return 0;
	case 4:
		if (lks_fault_int(tok, eq + 1, 31, &v))
			return -1;
		f->bit = (int)v;
		return 0;
	default:
		if (lks_fault_int(tok, eq + 1, k == 3 || k == 6 ? INT64_MAX : 1 << 30, &v))
			return -1;
		if (k == 0)
			f->step = (int)v;
		else if (k == 1)
			f->rank = (int)v;
		else if (k == 6)
			f->count = v;
		else
			f->element = v;
		return 0;
	}
}

int lks_fault_parse(const char *spec, int allow_run, lks_fault *out)
{
	char buf[512], kinds[256], *save = NULL, *tok;
	unsigned seen = 0, need, allow;
	lks_fault f = { .step = -1, .rank = -1 };
	int k;

	if (strlen(spec) >= sizeof(buf))
		return lks_err("inject: longer than %zu characters", sizeof(buf) - 1);
	strcpy(buf, spec);
	if (!(tok = strtok_r(buf, " \t", &save)))
		return lks_err("inject: empty (want %s, then key=value ...)",
		               lks_fault_kinds(kinds, sizeof(kinds), " or "));
	for (k = 1; k < LKS_FAULT_COUNT && strcmp(tok, lks_fault_rows[k].name); k++)
		;
	if (k == LKS_FAULT_COUNT)
		return lks_err("inject: unknown fault '%s' (%s)", tok,
		               lks_fault_kinds(kinds, sizeof(kinds), ", "));
	f.kind = (lks_fault_kind)k;
	while ((tok = strtok_r(NULL, " \t", &save)))
		if (lks_fault_key(&f, tok, allow_run, &seen))
			return -1;
	need = lks_fault_rows[k].need;
	allow = need | lks_fault_rows[k].allow | K_RUN;
	for (int i = 0; i < LKS_FAULT_NKEYS; i++) {
		if ((need & (1u << i)) && !(seen & (1u << i)))
			return lks_err("inject: %s needs %s=", lks_fault_rows[k].name, lks_fault_keys[i]);
		if ((seen & (1u << i)) && !(allow & (1u << i)))
			return lks_err("inject: %s takes no %s=", lks_fault_rows[k].name, lks_fault_keys[i]);
	}
	*out = f;
	return 0;
}

void lks_fault_format(const lks_fault *f, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s", lks_fault_kind_name(f->kind));

#define LKS_APPEND(...) \
	do { \
		if (n >= 0 && (size_t)n < size) \
			n += snprintf(buf + n, size - (size_t)n, __VA_ARGS__); \
	} while (0)
	if (f->step >= 0)
		LKS_APPEND(" step=%d", f->step);
	if (f->rank >= 0)
		LKS_APPEND(" rank=%d", f->rank);
	if (f->tensor[0])
		LKS_APPEND(" tensor=%s", f->tensor);
	if ((lks_fault_rows[f->kind].need & K_ELEMENT) || f->element)
		LKS_APPEND(" element=%lld", (long long)f->element);
	if (lks_fault_rows[f->kind].need & K_BIT)
		LKS_APPEND(" bit=%d", f->bit);
	if (f->count)
		LKS_APPEND(" count=%lld", (long long)f->count);
	if (f->run[0])
		LKS_APPEND(" run=%s", f->run);
#undef LKS_APPEND
}

int lks_fault_fits(const lks_fault *f, int recipe, int checkpoint, int world_size, int steps)
{
	const lks_fault_row *row = &lks_fault_rows[f->kind];

	if (f->kind == LKS_FAULT_NONE)
		return 0;
	if (f->step >= steps)
		return lks_err("inject: step %d is past the run's %d steps", f->step, steps);
	if (f->rank >= world_size)
		return lks_err("inject: rank %d is past the run's %d ranks", f->rank, world_size);
	return row->fits ? row->fits(f, recipe, checkpoint, world_size) : 0;
}

int lks_fault_fits_mesh(const lks_fault *f, const lks_run_cfg *r)
{
	const lks_fault_row *row = &lks_fault_rows[f->kind];
	int world_size = r->world_size, fsdp = r->fsdp, tp = r->tp, sp = r->sp;

	if (row->scale_group && tp < 2)
		return lks_err("inject: %s acts where a tensor-parallel group reduces an FP8 "
		               "operand's amax: it needs tp > 1", row->name);
	if (row->scale_group == 2 && world_size == tp)
		return lks_err("inject: %s reduces an amax over the dp group: it needs world_size "
		               "> tp (%d)", row->name, tp);
	if (row->tensor && tp > 1 && !r->trace_shards && (sp || lks_tp_traced_split(f->tensor)))
		return lks_err("inject: %s strikes a tensor where it is traced, and under tp%s '%s' "
		               "is traced whole, gathered from the group's shards (a copy): strike a "
		               "tensor each rank holds whole (blocks.0.attn_norm.out, a weight's "
		               "gradient, ...)%s, or trace = shards", row->name,
		               sp ? " with sequence parallel" : "", f->tensor,
		               sp ? ", with sequence_parallel = off" : "");
	if (f->kind != LKS_FAULT_NONE && !row->scale_group && !row->tensor && !row->gathers
	    && !row->quantize && tp > 1)
		return lks_err("inject: %s is not built for tensor-parallel runs yet (tp = 1; every "
		               "other kind is)", row->name);
	if (row->gathers && fsdp < 2 && tp < 2)
		return lks_err("inject: %s acts in a reduce-scatter or all-gather of a sharded "
		               "run: it needs fsdp > 1 or tp > 1", row->name);
	if (f->kind == LKS_FAULT_RS_DROP_TAIL && fsdp < 2 && !sp)
		return lks_err("inject: %s under tp needs sequence_parallel = on (the reduce-scatter "
		               "after each row-parallel layer; without it the partial sums are "
		               "all-reduced), or fsdp > 1", row->name);
	if (row->comm && !row->gathers && fsdp > 1)
		return lks_err("inject: %s needs fsdp = 1 (an FSDP run reduce-scatters its "
		               "gradients)", row->name);
	return 0;
}

/* bitflip_allreduce(_out): its element a place of the flat gradient that a parameter's
   gradient holds, not the padding that starts each tensor at a multiple of 16 floats (no
   parameter's gradient: only the norm, summed over the whole vector, would see a flip) */
static int lks_fault_fits_element(const lks_fault *f, const lks_model *m)
{
	size_t i = (size_t)f->element, n = 0;
	int k, pad;

	for (k = 0; k < m->nt; k++)
		n += m->t[k].n;
	k = lks_model_param_at(m, i, &pad);
	if (i >= m->nparams)
		return lks_err("inject: element %lld is out of range: the flat gradient has %zu "
		               "places, its %zu parameters' and the padding that starts each tensor "
		               "at a multiple of 16 floats", (long long)f->element, m->nparams, n);
	if (pad) {
		char next[128] = ", the last tensor";

		if (k + 1 < m->nt)
			snprintf(next, sizeof(next), " and '%s' (from %zu)", m->t[k + 1].name,
			         m->t[k + 1].off);
		return lks_err("inject: element %lld lies in the padding %s '%s' (places %zu to "
		               "%zu)%s, which holds no parameter's gradient", (long long)f->element,
		               k + 1 < m->nt ? "between" : "after", m->t[k].name, m->t[k].off,
		               m->t[k].off + m->t[k].n - 1, next);
	}
	return 0;
}

/* rs_drop_tail in an FSDP run: the last count (1) places of rank R's shard of the flat
   gradient (runner.h) hold a parameter's, not only the padding between tensors or after
   the last, whose sum is the 0 the rank's buffer held there */
static int lks_fault_fits_shard(const lks_fault *f, const lks_model *m, const lks_run_cfg *r)
{
	size_t S = lks_fsdp_shard_size(m->nparams, r->fsdp);
	size_t a = (size_t)lks_fsdp_shard_of(r, f->rank) * S, b = a + S, last;
	size_t lost = f->count > 0 ? (size_t)f->count : 1;
	int pad, k = lks_model_param_at(m, b - 1, &pad);

	last = pad ? m->t[k].off + m->t[k].n - 1 : b - 1;  /* the shard's last parameter place */
	if (last < a)
		return lks_err("inject: rank %d's shard (places %zu to %zu of the flat gradient) is "
		               "all padding, no parameter's: %s never acts there", f->rank, a, b - 1,
		               lks_fault_kind_name(f->kind));
	if (lost < b - last)
		return lks_err("inject: %s drops the last %zu place%s of rank %d's shard (to %zu of "
		               "the flat gradient), padding after '%s', no parameter's: count=%zu is "
		               "the smallest that reaches one on that rank", lks_fault_kind_name(f->kind),
		               lost, lost == 1 ? "" : "s", f->rank, b - 1, m->t[k].name, b - last);
	return 0;
}

/* The faults that strike places of the flat gradient (bitflip_allreduce(_out); rs_drop_tail
   in an FSDP run): whether a parameter's gradient holds them. */
static int lks_fault_fits_places(const lks_fault *f, const lks_run_cfg *r,
                                 const lks_model_cfg *cfg)
{
	lks_model m;
	int rc;

	if (lks_model_init(&m, cfg))
		return -1;
	rc = f->kind == LKS_FAULT_RS_DROP_TAIL ? lks_fault_fits_shard(f, &m, r)
	   : lks_fault_fits_element(f, &m);
	lks_model_release(&m);
	return rc;
}

int lks_fault_fits_model(const lks_fault *f, const lks_run_cfg *r, const lks_model_cfg *m,
                         long long tokens)
{
	const char *name = lks_fault_kind_name(f->kind);
	size_t n = 0;
	int kind;

	if (f->kind == LKS_FAULT_BITFLIP_ALLREDUCE || f->kind == LKS_FAULT_BITFLIP_ALLREDUCE_OUT
	    || (f->kind == LKS_FAULT_RS_DROP_TAIL && r->fsdp > 1))
		return lks_fault_fits_places(f, r, m);
	if (!lks_fault_rows[f->kind].tensor && !lks_fault_rows[f->kind].scale_group)
		return 0;
	if ((kind = lks_model_tensor(m, tokens, f->tensor, &n)) < 0)
		return -1;
	if (lks_fault_rows[f->kind].scale_group) {  /* an FP8 operand's */
		const char *why;

		if (kind == LKS_TENSOR_FP8 && r->tp > 1
		    && lks_tp_operand_group(m, r, f->tensor, &why) != LKS_GROUP_TP)
			return lks_err("inject: %s never acts on '%s' in this run: no tensor-parallel "
			               "group reduces its amax (%s's scale group for it is none: %s)",
			               name, f->tensor, lks_recipe_name(r->recipe), why);
		if (kind == LKS_TENSOR_FP8)
			return 0;
		return lks_err("inject: '%s' is not an FP8 operand of the model: %s acts on one, "
		               "named as the trace names it (blocks.0.mlp.up.fwd.w: layer, GEMM, "
		               "operand x, w or dy; blocks 0 to %d)", f->tensor, name, m->layers - 1);
	}
	if (kind == LKS_TENSOR_FP8) {
		/* blocks.0.mlp.up.fwd.x: the layer's output is blocks.0.mlp.up.out */
		int layer = (int)(strrchr(f->tensor, '.') - f->tensor);

		while (layer > 0 && f->tensor[--layer] != '.')
			;
		return lks_err("inject: '%s' is an FP8 operand (codes and scales): %s acts on float "
		               "tensors, such as the layer's output '%.*s.out'", f->tensor, name, layer,
		               f->tensor);
	}
	if (kind == LKS_TENSOR_NONE)
		return lks_err("inject: the model has no tensor '%s' (float tensors are named as "
		               "the trace names them: embed.out, blocks.0.mlp.up.out, head.logits, "
		               "blocks.0.mlp.up.weight.grad, ...; blocks 0 to %d)", f->tensor,
		               m->layers - 1);
	if ((uint64_t)f->element >= n)
		return lks_err("inject: element %lld is out of range: '%s' has %zu elements on a rank",
		               (long long)f->element, f->tensor, n);
	return 0;
}

int lks_fault_here(const lks_fault *f, lks_fault_kind kind, int step, int rank)
{
	if (f->kind != kind)
		return 0;
	if (lks_fault_rows[kind].from_step)  /* from step on, on every rank or one */
		return step >= f->step && (f->rank < 0 || rank == f->rank);
	return step == f->step && rank == f->rank;
}

int lks_fault_aim(const lks_fault *f, int step, int rank, const char *name, size_t n,
                  size_t *at)
{
	if (!lks_fault_rows[f->kind].tensor || !lks_fault_here(f, f->kind, step, rank) || strcmp(name, f->tensor))
		return 0;
	if (f->element < 0 || (uint64_t)f->element >= n)
		return lks_err("inject: element %lld is past tensor %s's %zu elements",
		               (long long)f->element, name, n);
	*at = (size_t)f->element;
	return 1;
}

void lks_fault_strike(const lks_fault *f, float *v)
{
	uint32_t bits;

	if (f->kind == LKS_FAULT_NAN) {
		*v = NAN;
		return;
	}
	memcpy(&bits, v, sizeof(bits));
	bits ^= 1u << f->bit;
	memcpy(v, &bits, sizeof(bits));
}

int lks_fault_keeps_state(lks_fault_kind k)
{
	return k == LKS_FAULT_STALE_BWD_SCALE || k == LKS_FAULT_AG_STALE;
}

int lks_fault_fits_resumed(const lks_fault *f, int resume_step)
{
	const char *name = lks_fault_kind_name(f->kind);

	if (lks_fault_keeps_state(f->kind))
		return lks_err("inject: %s keeps what the steps before the resumed one did, so it "
		               "cannot be planted in a resumed run", name);
	if (f->kind != LKS_FAULT_NONE && !lks_fault_rows[f->kind].from_step && f->step >= 0
	    && f->step <= resume_step)
		return lks_err("inject: %s at step %d never acts: the run resumes after step %d and "
		               "trains only the steps after it", name, f->step, resume_step);
	return 0;
}

int lks_fault_host_comm(const lks_fault *f)
{
	return lks_fault_rows[f->kind].host_comm;
}

double lks_fault_bytes(const lks_fault *f, size_t nparams)
{
	return (double)lks_fault_rows[f->kind].grad_copies * (double)nparams * sizeof(float);
}

int lks_fault_tensor(const lks_fault *f, int step, int rank, const char *name, float *x,
                     size_t n)
{
	size_t at = 0;
	int rc = lks_fault_aim(f, step, rank, name, n, &at);

	if (rc == 1)
		lks_fault_strike(f, &x[at]);
	return rc;
}
