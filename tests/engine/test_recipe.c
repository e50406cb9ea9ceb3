/*
 * test_recipe.c: each recipe quantizes the operands DESIGN.md names, along the named axes,
 * into the named formats. A recording backend wraps the CPU backend and keeps every
 * quantize and GEMM call of one training step of a one-block model; the expectations
 * below restate DESIGN.md's recipe table in terms of the stored tensors
 * (x (T, in), W (out, in), dy (T, out)), independently of harness/engine/recipe.c's table.
 *
 * And the table itself: every row is a recipe that the case parser takes, 'lockstep list'
 * shows and the faults know, each told from the row, so that a recipe added as one row
 * needs nothing else.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/base/name.h"
#include "harness/engine/case.h"
#include "harness/engine/runner.h"
#include "kernels/backend.h"
#include "kernels/cpu/backend_cpu.h"
#include "kernels/err.h"
#include "run_bin.h"

#define MAXCALLS 64

struct rec_q { int rows, cols; lks_fp8 fmt; lks_axis axis; int pow2, given; };
struct rec_g { int M, N, K; lks_dtype a, b; lks_scaling as, bs; int nq_before; };

static struct {
	int nq, ng;
	struct rec_q q[MAXCALLS];
	struct rec_g g[MAXCALLS];
} rec;

static int rec_quantize(const lks_backend *be, void *ctx, lks_quant *q)
{
	if (rec.nq < MAXCALLS)
		rec.q[rec.nq] = (struct rec_q){ q->rows, q->cols, q->fmt, q->axis, q->pow2, q->scale_given };
	rec.nq++;
	(void)be;
	return lks_backend_cpu.quantize(&lks_backend_cpu, ctx, q);
}

static int rec_gemm(const lks_backend *be, void *ctx, const lks_gemm *g)
{
	if (rec.ng < MAXCALLS)
		rec.g[rec.ng] = (struct rec_g){ g->M, g->N, g->K, g->a.dtype, g->b.dtype,
			g->a.scaling, g->b.scaling, rec.nq };
	rec.ng++;
	(void)be;
	return lks_backend_cpu.gemm(&lks_backend_cpu, ctx, g);
}

/* The CPU backend with gemm and quantize recorded. */
static lks_backend rec_backend_of(void)
{
	lks_backend be = lks_backend_cpu;

	be.name = "recording";
	be.gemm = rec_gemm;
	be.quantize = rec_quantize;
	return be;
}

/* What DESIGN.md says an operand is: BF16 (no scale), or FP8 with a scale per tensor, per
   row or per column of the stored tensor. */
typedef struct want_op {
	lks_dtype dtype;
	lks_axis axis;          /* of the stored tensor; ignored for BF16 */
	int pow2, delayed;
} want_op;

#define BF16 { LKS_BF16, LKS_AXIS_TENSOR, 0, 0 }

static const struct {
	const char *recipe;
	want_op op[3][2];       /* fwd (x, W), dgrad (dy, W), wgrad (dy, x) */
} design[] = {
	{ "bf16", { { BF16, BF16 }, { BF16, BF16 }, { BF16, BF16 } } },
	/* one scale per tensor; e4m3 forward, e5m2 gradients */
	{ "fp8_tensorwise", {
		{ { LKS_E4M3, LKS_AXIS_TENSOR, 0, 0 }, { LKS_E4M3, LKS_AXIS_TENSOR, 0, 0 } },
		{ { LKS_E5M2, LKS_AXIS_TENSOR, 0, 0 }, { LKS_E4M3, LKS_AXIS_TENSOR, 0, 0 } },
		{ { LKS_E5M2, LKS_AXIS_TENSOR, 0, 0 }, { LKS_E4M3, LKS_AXIS_TENSOR, 0, 0 } } } },
	/* e4m3 everywhere, pow2 scales: x per row (over K), W per row (over K); dy per row
	   (over N), W per column (over N); dy per column (over M), x per column (over M) */
	{ "fp8_rowwise", {
		{ { LKS_E4M3, LKS_AXIS_ROW, 1, 0 }, { LKS_E4M3, LKS_AXIS_ROW, 1, 0 } },
		{ { LKS_E4M3, LKS_AXIS_ROW, 1, 0 }, { LKS_E4M3, LKS_AXIS_COL, 1, 0 } },
		{ { LKS_E4M3, LKS_AXIS_COL, 1, 0 }, { LKS_E4M3, LKS_AXIS_COL, 1, 0 } } } },
	/* as rowwise forward; grad_x: dy axiswise e4m3 x W tensorwise e4m3; grad_W in bf16 */
	{ "fp8_rowwise_gw_hp", {
		{ { LKS_E4M3, LKS_AXIS_ROW, 1, 0 }, { LKS_E4M3, LKS_AXIS_ROW, 1, 0 } },
		{ { LKS_E4M3, LKS_AXIS_ROW, 1, 0 }, { LKS_E4M3, LKS_AXIS_TENSOR, 1, 0 } },
		{ BF16, BF16 } } },
	/* per-tensor scales from the amax history; e4m3 forward, e5m2 dy */
	{ "fp8_delayed", {
		{ { LKS_E4M3, LKS_AXIS_TENSOR, 0, 1 }, { LKS_E4M3, LKS_AXIS_TENSOR, 0, 1 } },
		{ { LKS_E5M2, LKS_AXIS_TENSOR, 0, 1 }, { LKS_E4M3, LKS_AXIS_TENSOR, 0, 1 } },
		{ { LKS_E5M2, LKS_AXIS_TENSOR, 0, 1 }, { LKS_E4M3, LKS_AXIS_TENSOR, 0, 1 } } } },
};

enum { T = 2 * 8, H = 16, F = 32, V = 24 };  /* tokens, hidden, ffn, vocab of the case */

/* The GEMMs of one step in execution order: which linear layer and role, or the head. */
static const struct {
	int layer;              /* 0 up, 1 down, -1 LM head (always BF16) */
	int role;               /* 0 fwd, 1 dgrad, 2 wgrad */
	int M, N, K;
	int rows[2], cols[2];   /* the stored tensors quantized for A and B */
} step_gemms[] = {
	{ 0, 0, T, F, H, { T, F }, { H, H } },    /* up fwd: x = h (T, H), W1 (F, H) */
	{ 1, 0, T, H, F, { T, H }, { F, F } },    /* down fwd: x = a (T, F), W2 (H, F) */
	{ -1, 0, T, V, H, { 0, 0 }, { 0, 0 } },   /* head fwd */
	{ -1, 2, V, H, T, { 0, 0 }, { 0, 0 } },   /* head grad_W */
	{ -1, 1, T, H, V, { 0, 0 }, { 0, 0 } },   /* head grad_x */
	{ 1, 1, T, F, H, { T, H }, { H, F } },    /* down dgrad: dy (T, H), W2 (H, F) */
	{ 1, 2, H, F, T, { T, T }, { H, F } },    /* down wgrad: dy (T, H), x = a (T, F) */
	{ 0, 1, T, H, F, { T, F }, { F, H } },    /* up dgrad: dy (T, F), W1 (F, H) */
	{ 0, 2, F, H, T, { T, T }, { F, H } },    /* up wgrad: dy (T, F), x = h (T, H) */
};

static void load_case(const char *recipe, lks_case *c)
{
	char path[] = "/tmp/lks_test_recipe_XXXXXX", text[512];
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");

	snprintf(text, sizeof(text), "[case]\nsteps = 1\n[model]\nvocab = %d\nhidden = %d\n"
	         "ffn = %d\nlayers = 1\nseq = 8\nbatch = 2\n[run r]\nrecipe = %s\n", V, H, F, recipe);
	fputs(text, f);
	fclose(f);
	cr_assert_eq(lks_case_load(path, NULL, 0, c), 0, "%s", lks_errmsg());
	unlink(path);
}

Test(recipe, quantizes_the_operands_design_names)
{
	for (size_t d = 0; d < sizeof(design) / sizeof(design[0]); d++) {
		lks_case c;
		lks_backend rec_backend = rec_backend_of();
		lks_runner_opts o = { .threads = 1, .backend = &rec_backend };
		lks_run_result res;
		int q = 0;

		load_case(design[d].recipe, &c);
		memset(&rec, 0, sizeof(rec));
		cr_assert_eq(lks_run(&c, &c.runs[0], NULL, &o, &res), 0, "%s", lks_errmsg());
		cr_assert_eq(rec.ng, (int)(sizeof(step_gemms) / sizeof(step_gemms[0])), "%s: %d GEMMs",
		             design[d].recipe, rec.ng);
		for (int i = 0; i < rec.ng; i++) {
			const char *what = design[d].recipe;

			cr_assert_eq(rec.g[i].M, step_gemms[i].M, "%s gemm %d M", what, i);
			cr_assert_eq(rec.g[i].N, step_gemms[i].N, "%s gemm %d N", what, i);
			cr_assert_eq(rec.g[i].K, step_gemms[i].K, "%s gemm %d K", what, i);
			for (int ab = 0; ab < 2; ab++) {
				lks_dtype dt = ab ? rec.g[i].b : rec.g[i].a;
				lks_scaling sc = ab ? rec.g[i].bs : rec.g[i].as;
				want_op w = step_gemms[i].layer < 0 ? (want_op)BF16
				          : design[d].op[step_gemms[i].role][ab];

				cr_assert_eq(dt, w.dtype, "%s gemm %d operand %d: dtype %d, want %d", what, i,
				             ab, dt, w.dtype);
				if (w.dtype == LKS_BF16) {
					cr_assert_eq(sc, LKS_SCALE_NONE);
					continue;
				}
				cr_assert_eq(sc, w.axis == LKS_AXIS_TENSOR ? LKS_SCALE_TENSOR : LKS_SCALE_AXIS,
				             "%s gemm %d operand %d scaling", what, i, ab);
				/* the quantization that made this operand, in call order */
				cr_assert_lt(q, rec.nq);
				cr_assert_eq(rec.q[q].rows, step_gemms[i].rows[ab], "%s gemm %d op %d rows", what, i, ab);
				cr_assert_eq(rec.q[q].cols, step_gemms[i].cols[ab], "%s gemm %d op %d cols", what, i, ab);
				cr_assert_eq(rec.q[q].fmt, w.dtype == LKS_E4M3 ? LKS_FP8_E4M3 : LKS_FP8_E5M2,
				             "%s gemm %d op %d format", what, i, ab);
				cr_assert_eq(rec.q[q].axis, w.axis, "%s gemm %d op %d axis %d, want %d", what, i,
				             ab, rec.q[q].axis, w.axis);
				cr_assert_eq(rec.q[q].pow2, w.pow2, "%s gemm %d op %d pow2", what, i, ab);
				cr_assert_eq(rec.q[q].given, w.delayed, "%s gemm %d op %d delayed", what, i, ab);
				q++;
			}
			cr_assert_eq(rec.g[i].nq_before, q, "%s gemm %d: quantized %d operands before it, want %d",
			             what, i, rec.g[i].nq_before, q);
		}
		cr_assert_eq(rec.nq, q, "%s: %d quantize calls, want %d", design[d].recipe, rec.nq, q);
		lks_case_release(&c);
	}
}

/* Whether some operand of row r has the property, told from the rules themselves. */
static int has_pow2(const lks_recipe_rules *r)
{
	for (int role = 0; role < 3; role++)
		for (int ab = 0; ab < 2; ab++)
			if (r->op[role][ab].pow2)
				return 1;
	return 0;
}

/* The scales stale_bwd_scale leaves stale: dy's, from a history that the runner keeps
   (when the forward's x has one). */
static int has_delayed_dy(const lks_recipe_rules *r)
{
	return r->op[LKS_ROLE_FWD][0].delayed && r->op[LKS_ROLE_DGRAD][0].delayed;
}

/* The recipes, one run each, in one case file; its path. */
static const char *write_all_recipes(char *path, size_t size)
{
	char dir[] = "/tmp/lks_test_recipe_XXXXXX";
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, size, "%s/recipes.ini", dir);
	cr_assert_not_null(f = fopen(path, "w"));
	fprintf(f, "[case]\nsteps = 2\nworld_size = 2\n[model]\nvocab = %d\nhidden = %d\n"
	        "ffn = %d\nlayers = 1\nseq = 8\nbatch = 1\n", V, H, F);
	for (int i = 0; i < LKS_RECIPE_COUNT; i++)
		fprintf(f, "[run r%d]\nrecipe = %s\n", i, lks_recipe_name((lks_recipe)i));
	fclose(f);
	return path;
}

Test(recipe, every_row_is_parsed_listed_and_known_to_the_faults)
{
	char path[128], out[16384], args[256], all[512], delayed[512], list[600], want[256], *dir;
	lks_case c;

	cr_assert_null(lks_recipe_rules_of(LKS_RECIPE_COUNT));
	cr_assert_str_eq(lks_recipe_name(LKS_RECIPE_COUNT), "?");
	for (int i = 0; i < LKS_RECIPE_COUNT; i++) {
		const lks_recipe_rules *r = lks_recipe_rules_of((lks_recipe)i);

		cr_assert_not_null(r);
		cr_assert_not_null(r->name, "recipe %d has no row", i);
		cr_assert_eq(lks_name_check("recipe", r->name, strlen(r->name)), 0, "%s", lks_errmsg());
		cr_assert(r->what && r->what[0], "%s: no words for 'lockstep list --help'", r->name);
		for (int j = 0; j < i; j++)
			cr_assert_str_neq(r->name, lks_recipe_name((lks_recipe)j), "two rows called %s",
			                  r->name);
		for (int role = 0; role < 3; role++)
			for (int ab = 0; ab < 2; ab++) {
				const lks_operand_rule *o = &r->op[role][ab];
				int fp8 = o->dtype == LKS_E4M3 || o->dtype == LKS_E5M2;

				cr_assert(fp8 || o->dtype == LKS_BF16 || o->dtype == LKS_F32, "%s", r->name);
				cr_assert(fp8 ? o->scaling != LKS_SCALE_NONE
				              : o->scaling == LKS_SCALE_NONE && !o->pow2 && !o->delayed,
				          "%s: %s operand %d has a scaling its format does not take", r->name,
				          lks_role_name((lks_role)role), ab);
			}
	}

	/* the case parser takes each name, and its message for a wrong one lists them all */
	write_all_recipes(path, sizeof(path));
	cr_assert_eq(lks_case_load(path, NULL, 0, &c), 0, "%s", lks_errmsg());
	cr_assert_eq(c.nruns, LKS_RECIPE_COUNT);
	for (int i = 0; i < LKS_RECIPE_COUNT; i++)
		cr_assert_eq(c.runs[i].recipe, (lks_recipe)i, "run r%d", i);
	cr_assert_neq(lks_case_override(&c, "run.r0.recipe=fp9"), 0);
	for (int i = 0; i < LKS_RECIPE_COUNT; i++)
		cr_assert_not_null(strstr(lks_errmsg(), lks_recipe_name((lks_recipe)i)), "%s",
		                   lks_errmsg());

	/* list shows each run's recipe, and the amax settings of those with delayed scaling;
	   its help has a line per row */
	snprintf(args, sizeof(args), "list '%s'", path);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	for (int i = 0; i < LKS_RECIPE_COUNT; i++) {
		const lks_recipe_rules *r = lks_recipe_rules_of((lks_recipe)i);
		char *line;

		snprintf(want, sizeof(want), "r%d  ", i);
		cr_assert_not_null(line = strstr(out, want), "no run r%d in\n%s", i, out);
		*strchr(line, '\n') = 0;
		cr_assert_not_null(strstr(line, r->name), "%s", line);
		cr_assert_eq(strstr(line, "amax history") != NULL, r->op[LKS_ROLE_FWD][0].delayed != 0,
		             "%s", line);
		line[strlen(line)] = '\n';
	}
	cr_assert_eq(lks_run_bin(NULL, "list --help", out, sizeof(out)), 0, "%s", out);
	for (int i = 0; i < LKS_RECIPE_COUNT; i++) {
		const lks_recipe_rules *r = lks_recipe_rules_of((lks_recipe)i);

		snprintf(want, sizeof(want), "  %-18s %s\n", r->name, r->what);
		cr_assert_not_null(strstr(out, want), "no line '%s' in\n%s", want, out);
	}

	/* the faults that depend on a recipe fit the rows whose rules they act on, and a
	   refusal names exactly those */
	all[0] = delayed[0] = 0;
	for (int i = 0; i < LKS_RECIPE_COUNT; i++) {
		const lks_recipe_rules *r = lks_recipe_rules_of((lks_recipe)i);

		if (has_pow2(r))
			snprintf(all + strlen(all), sizeof(all) - strlen(all), "%s%s", all[0] ? ", " : "",
			         r->name);
		if (has_delayed_dy(r))
			snprintf(delayed + strlen(delayed), sizeof(delayed) - strlen(delayed), "%s%s",
			         delayed[0] ? ", " : "(", r->name);
	}
	strcat(delayed, ")");
	for (int i = 0; i < LKS_RECIPE_COUNT; i++) {
		const lks_recipe_rules *r = lks_recipe_rules_of((lks_recipe)i);
		lks_fault f;

		cr_assert_eq(lks_fault_parse("scale_round_up", 0, &f), 0);
		cr_assert_eq(lks_fault_fits(&f, i, 0, 1, 5) == 0, has_pow2(r), "%s", r->name);
		if (!has_pow2(r)) {
			snprintf(list, sizeof(list), "power-of-two scales (%s)", all);
			cr_assert_not_null(strstr(lks_errmsg(), list), "%s", lks_errmsg());
		}
		cr_assert_eq(lks_fault_parse("stale_bwd_scale", 0, &f), 0);
		cr_assert_eq(lks_fault_fits(&f, i, 1, 1, 5) == 0, has_delayed_dy(r), "%s", r->name);
		cr_assert_neq(lks_fault_fits(&f, i, 0, 1, 5), 0, "%s without checkpointing", r->name);
		cr_assert_not_null(strstr(lks_errmsg(), delayed), "%s", lks_errmsg());
		/* the others act on any recipe */
		cr_assert_eq(lks_fault_parse("skip_allreduce step=1 rank=1", 0, &f), 0);
		cr_assert_eq(lks_fault_fits(&f, i, 0, 2, 5), 0, "%s: %s", r->name, lks_errmsg());
		cr_assert_eq(lks_fault_parse("nan step=1 rank=0 tensor=embed.out", 0, &f), 0);
		cr_assert_eq(lks_fault_fits(&f, i, 0, 2, 5), 0, "%s: %s", r->name, lks_errmsg());
	}
	lks_case_release(&c);
	unlink(path);
	dir = strrchr(path, '/');
	*dir = 0;
	rmdir(path);
}

/* The scale groups (recipe.h): an operand's amax is reduced over the tp group exactly when
   its scale would otherwise see part of the tensor it scales: a tensorwise scale of any
   split operand, an axiswise scale along a split reduction dimension; never for an
   axiswise scale across the split (each row whole on its rank), a delayed scale (its
   history's amax is reduced over every rank) or an unscaled operand. */
Test(recipe, scale_groups_follow_the_split)
{
	const lks_operand_rule tensor = { LKS_E4M3, LKS_SCALE_TENSOR, 0, 0 };
	const lks_operand_rule axis = { LKS_E4M3, LKS_SCALE_AXIS, 1, 0 };
	const lks_operand_rule delayed = { LKS_E4M3, LKS_SCALE_TENSOR, 0, 1 };
	const lks_operand_rule bf16 = { LKS_BF16, LKS_SCALE_NONE, 0, 0 };

	for (int sh = 0; sh < LKS_SHARD_COUNT; sh++) {
		cr_assert_eq(lks_recipe_amax_group(&tensor, sh),
		             sh == LKS_SHARD_NONE ? LKS_GROUP_NONE : LKS_GROUP_TP, "shard %d", sh);
		cr_assert_eq(lks_recipe_amax_group(&axis, sh),
		             sh == LKS_SHARD_K ? LKS_GROUP_TP : LKS_GROUP_NONE, "shard %d", sh);
		cr_assert_eq(lks_recipe_amax_group(&delayed, sh), LKS_GROUP_NONE);
		cr_assert_eq(lks_recipe_amax_group(&bf16, sh), LKS_GROUP_NONE);
	}
	cr_assert_str_eq(lks_amax_group_name(LKS_GROUP_TP), "tp");
	cr_assert_str_eq(lks_amax_group_name(LKS_GROUP_NONE), "none");
}

/* 'lockstep list' shows a run's mesh, dp x fsdp x tp, and sequence parallel. */
Test(recipe, list_shows_the_mesh)
{
	char args[700], out[16384];
	const char *line;

	snprintf(args, sizeof(args), "list '%s/cases/tp.ini' '%s/cases/fsdp.ini'", LKS_SRC,
	         LKS_SRC);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "4 ranks, dp 2 x tp 2, sequence parallel"), "%s", out);
	cr_assert_not_null(strstr(out, "2 ranks, dp 1 x tp 2, checkpoint blocks"), "%s", out);
	cr_assert_not_null(strstr(out, "4 ranks, dp 2 x fsdp 2"), "%s", out);
	cr_assert_not_null(strstr(out, "2 ranks, dp 1 x tp 2, traced by shard"), "%s", out);
	cr_assert_not_null(strstr(out, "4 ranks, dp 1 x fsdp 4, fp8 all-gather"), "%s", out);
	cr_assert_not_null(strstr(out, "4 ranks, dp 1 x fsdp 4, resharded after forward"), "%s",
	                   out);
	/* a 3-D mesh: its ranks are the product, not two meshes of their own */
	cr_assert_not_null(line = strstr(out, "    fsdp2_tp2_rowwise "), "%s", out);
	cr_assert_eq(strncmp(strstr(line, "4 ranks"), "4 ranks, dp 1 x fsdp 2 x tp 2\n", 30), 0,
	             "%s", line);
	cr_assert_null(strstr(out, " x dp "), "%s", out);
}
