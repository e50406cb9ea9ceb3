/* recipe.c: the recipe table (see recipe.h). Adding a recipe is one row here. */
#include "harness/engine/recipe.h"

#define F32 { LKS_F32, LKS_SCALE_NONE, 0, 0 }
#define BF16 { LKS_BF16, LKS_SCALE_NONE, 0, 0 }
#define E4M3_T { LKS_E4M3, LKS_SCALE_TENSOR, 0, 0 }
#define E5M2_T { LKS_E5M2, LKS_SCALE_TENSOR, 0, 0 }
#define E4M3_AXIS_POW2 { LKS_E4M3, LKS_SCALE_AXIS, 1, 0 }
#define E4M3_T_POW2 { LKS_E4M3, LKS_SCALE_TENSOR, 1, 0 }
#define E4M3_DELAYED { LKS_E4M3, LKS_SCALE_TENSOR, 0, 1 }
#define E5M2_DELAYED { LKS_E5M2, LKS_SCALE_TENSOR, 0, 1 }

/*                      fwd: x, W                          dgrad: dy, W                      wgrad: dy, x */
static const lks_recipe_rules lks_recipes[LKS_RECIPE_COUNT] = {
	[LKS_RECIPE_BF16] = { { { BF16, BF16 }, { BF16, BF16 }, { BF16, BF16 } } },
	[LKS_RECIPE_FP8_TENSORWISE] = { { { E4M3_T, E4M3_T }, { E5M2_T, E4M3_T }, { E5M2_T, E4M3_T } } },
	[LKS_RECIPE_FP8_ROWWISE] = { { { E4M3_AXIS_POW2, E4M3_AXIS_POW2 },
	                               { E4M3_AXIS_POW2, E4M3_AXIS_POW2 },
	                               { E4M3_AXIS_POW2, E4M3_AXIS_POW2 } } },
	[LKS_RECIPE_FP8_ROWWISE_GW_HP] = { { { E4M3_AXIS_POW2, E4M3_AXIS_POW2 },
	                                     { E4M3_AXIS_POW2, E4M3_T_POW2 },
	                                     { BF16, BF16 } } },
	[LKS_RECIPE_FP8_DELAYED] = { { { E4M3_DELAYED, E4M3_DELAYED },
	                               { E5M2_DELAYED, E4M3_DELAYED },
	                               { E5M2_DELAYED, E4M3_DELAYED } } },
	/* not a training recipe: the float32 model whose gradients the tests compare with
	   finite differences */
	[LKS_RECIPE_FP32] = { { { F32, F32 }, { F32, F32 }, { F32, F32 } }, 1 },
};

const lks_recipe_rules *lks_recipe_rules_of(lks_recipe r)
{
	return (unsigned)r < LKS_RECIPE_COUNT ? &lks_recipes[r] : NULL;
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
