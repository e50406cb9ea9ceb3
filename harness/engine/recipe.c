/*
 * recipe.c: the recipe table (see recipe.h). Adding a recipe is one row here and its value
 * of lks_recipe: its name, the line 'lockstep list --help' shows, and its rules; the case
 * parser, 'lockstep list' and the faults (fault.c) read them from here.
 */
#include "harness/engine/recipe.h"

#include <stdio.h>
#include <string.h>

#include "harness/base/name.h"
#include "kernels/err.h"

#define F32 { LKS_F32, LKS_SCALE_NONE, 0, 0 }
#define BF16 { LKS_BF16, LKS_SCALE_NONE, 0, 0 }
#define E4M3_T { LKS_E4M3, LKS_SCALE_TENSOR, 0, 0 }
#define E5M2_T { LKS_E5M2, LKS_SCALE_TENSOR, 0, 0 }
#define E4M3_AXIS_POW2 { LKS_E4M3, LKS_SCALE_AXIS, 1, 0 }
#define E4M3_T_POW2 { LKS_E4M3, LKS_SCALE_TENSOR, 1, 0 }
#define E4M3_DELAYED { LKS_E4M3, LKS_SCALE_TENSOR, 0, 1 }
#define E5M2_DELAYED { LKS_E5M2, LKS_SCALE_TENSOR, 0, 1 }

/*                      fwd: x, W                          dgrad: dy, W                      wgrad: dy, x */
static const lks_recipe_rules lks_recipes[] = {
	[LKS_RECIPE_BF16] = { "bf16", "BF16 operands and activations: the reference of the FP8 "
	                      "recipes",
	                      { { BF16, BF16 }, { BF16, BF16 }, { BF16, BF16 } } },
	[LKS_RECIPE_FP8_TENSORWISE] = { "fp8_tensorwise", "one scale per tensor: e4m3 operands, "
	                                "e5m2 gradients (dy)",
	                                { { E4M3_T, E4M3_T }, { E5M2_T, E4M3_T }, { E5M2_T, E4M3_T } } },
	[LKS_RECIPE_FP8_ROWWISE] = { "fp8_rowwise", "e4m3, a power-of-two scale per row along each "
	                             "GEMM's reduction",
	                             { { E4M3_AXIS_POW2, E4M3_AXIS_POW2 },
	                               { E4M3_AXIS_POW2, E4M3_AXIS_POW2 },
	                               { E4M3_AXIS_POW2, E4M3_AXIS_POW2 } } },
	[LKS_RECIPE_FP8_ROWWISE_GW_HP] = { "fp8_rowwise_gw_hp", "fp8_rowwise, but dgrad's W scaled per "
	                                   "tensor and wgrad in BF16",
	                                   { { E4M3_AXIS_POW2, E4M3_AXIS_POW2 },
	                                     { E4M3_AXIS_POW2, E4M3_T_POW2 },
	                                     { BF16, BF16 } } },
	[LKS_RECIPE_FP8_DELAYED] = { "fp8_delayed", "per-tensor scales from amax histories: e4m3, "
	                             "e5m2 gradients (dy)",
	                             { { E4M3_DELAYED, E4M3_DELAYED },
	                               { E5M2_DELAYED, E4M3_DELAYED },
	                               { E5M2_DELAYED, E4M3_DELAYED } } },
	/* not a training recipe: the float32 model whose gradients the tests compare with
	   finite differences */
	[LKS_RECIPE_FP32] = { "fp32", "float32, no rounding: the exact model of the gradient "
	                      "tests",
	                      { { F32, F32 }, { F32, F32 }, { F32, F32 } }, 1 },
};

_Static_assert(sizeof(lks_recipes) / sizeof(lks_recipes[0]) == LKS_RECIPE_COUNT,
               "one row per lks_recipe");

const lks_recipe_rules *lks_recipe_rules_of(lks_recipe r)
{
	return (unsigned)r < LKS_RECIPE_COUNT ? &lks_recipes[r] : NULL;
}

const char *lks_recipe_name(lks_recipe r)
{
	return (unsigned)r < LKS_RECIPE_COUNT ? lks_recipes[r].name : "?";
}

const char *lks_recipe_names(int (*has)(lks_recipe r), char *buf, size_t size)
{
	const char *names[LKS_RECIPE_COUNT];
	int n = 0;

	for (int i = 0; i < LKS_RECIPE_COUNT; i++)
		if (!has || has((lks_recipe)i))
			names[n++] = lks_recipes[i].name;
	return lks_names_join(names, sizeof(names[0]), 0, n, buf, size);
}

int lks_recipe_parse(const char *s, lks_recipe *out)
{
	char list[256];

	for (int i = 0; i < LKS_RECIPE_COUNT; i++)
		if (strcmp(s, lks_recipes[i].name) == 0) {
			*out = (lks_recipe)i;
			return 0;
		}
	return lks_err("unknown recipe '%s' (%s)", s, lks_recipe_names(NULL, list, sizeof(list)));
}

/* as the runner decides whether to keep amax histories (runner.c, lks_step_delayed) */
int lks_recipe_delayed(lks_recipe r)
{
	return lks_recipe_rules_of(r) && lks_recipes[r].op[LKS_ROLE_FWD][0].delayed;
}

int lks_recipe_delayed_dy(lks_recipe r)
{
	return lks_recipe_delayed(r) && lks_recipes[r].op[LKS_ROLE_DGRAD][0].delayed;
}

int lks_recipe_pow2(lks_recipe r)
{
	for (int role = 0; lks_recipe_rules_of(r) && role < 3; role++)
		for (int ab = 0; ab < 2; ab++)
			if (lks_recipes[r].op[role][ab].pow2)
				return 1;
	return 0;
}

lks_src lks_role_src(lks_role role, int ab)
{
	static const lks_src src[3][2] = {
		{ LKS_SRC_X, LKS_SRC_W }, { LKS_SRC_DY, LKS_SRC_W }, { LKS_SRC_DY, LKS_SRC_X },
	};
	return src[role][ab];
}

int lks_role_transposed(lks_role role, int ab)
{
	/* fwd uses x and W as stored; dgrad uses W^T; wgrad uses dy^T and x^T */
	static const int tr[3][2] = { { 0, 0 }, { 0, 1 }, { 1, 1 } };
	return tr[role][ab];
}

const char *lks_role_name(lks_role role)
{
	static const char *const names[3] = { "fwd", "dgrad", "wgrad" };
	return names[role];
}

const char *lks_src_name(lks_src src)
{
	static const char *const names[3] = { "x", "w", "dy" };
	return names[src];
}

/* The scale groups (recipe.h), by an operand's scaling and how it is split. */
static const lks_amax_group lks_scale_groups[3][LKS_SHARD_COUNT] = {
	/*                      whole           split along K   split across K */
	[LKS_SCALE_NONE] =   { LKS_GROUP_NONE, LKS_GROUP_NONE, LKS_GROUP_NONE },
	[LKS_SCALE_TENSOR] = { LKS_GROUP_NONE, LKS_GROUP_TP,   LKS_GROUP_TP },
	[LKS_SCALE_AXIS] =   { LKS_GROUP_NONE, LKS_GROUP_TP,   LKS_GROUP_NONE },
};

lks_amax_group lks_recipe_amax_group(const lks_operand_rule *rule, lks_shard shard)
{
	if (rule->delayed || rule->scaling < 0 || rule->scaling > LKS_SCALE_AXIS
	    || shard < 0 || shard >= LKS_SHARD_COUNT)
		return LKS_GROUP_NONE;
	return lks_scale_groups[rule->scaling][shard];
}

const char *lks_amax_group_name(lks_amax_group g)
{
	return g == LKS_GROUP_TP ? "tp" : "none";
}
