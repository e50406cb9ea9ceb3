/*
 * recipe.h: how each GEMM operand of a linear layer is quantized, as data (DESIGN.md,
 * Numerics: the recipe table).
 *
 * A linear layer y = x W^T, x (T, in), W (out, in), runs three GEMMs of the form
 * C = A . B^T (kernels/cpu/gemm.h):
 *   fwd    y      = x  . W^T    A = x (T, in),      B = W (out, in)       K = in
 *   dgrad  grad_x = dy . W      A = dy (T, out),    B = W^T (in, out)     K = out
 *   wgrad  grad_W = dy^T . x    A = dy^T (out, T),  B = x^T (in, T)       K = T
 * An axiswise rule scales each row of the GEMM operand, that is along the GEMM's reduction
 * dimension: per row of x for fwd, per column of W for dgrad, per column of dy and of x for
 * wgrad. The table below says, per recipe, role and operand: storage format, scaling, power-
 * of-two scales, and whether the scale comes from an amax history (delayed scaling).
 */
#ifndef LKS_HARNESS_RECIPE_H
#define LKS_HARNESS_RECIPE_H

#include "harness/engine/case.h"
#include "kernels/cpu/gemm.h"

typedef enum lks_role { LKS_ROLE_FWD = 0, LKS_ROLE_DGRAD = 1, LKS_ROLE_WGRAD = 2 } lks_role;
typedef enum lks_src { LKS_SRC_X = 0, LKS_SRC_W = 1, LKS_SRC_DY = 2 } lks_src;

typedef struct lks_operand_rule {
	lks_dtype dtype;        /* LKS_F32, LKS_BF16, LKS_E4M3 or LKS_E5M2 */
	lks_scaling scaling;    /* NONE for BF16; TENSOR; AXIS along the reduction dimension */
	int pow2;               /* power-of-two scales */
	int delayed;            /* scale from the tensor's amax history */
} lks_operand_rule;

typedef struct lks_recipe_rules {
	lks_operand_rule op[3][2];  /* [role][0: A, 1: B] */
	int f32_activations;        /* 1: activations and the LM head stay float32 (no BF16) */
} lks_recipe_rules;

const lks_recipe_rules *lks_recipe_rules_of(lks_recipe r);

/* Which tensor feeds operand (role, ab), and whether the GEMM uses its transpose. */
lks_src lks_role_src(lks_role role, int ab);
int lks_role_transposed(lks_role role, int ab);
const char *lks_role_name(lks_role role);
const char *lks_src_name(lks_src src);

#endif
