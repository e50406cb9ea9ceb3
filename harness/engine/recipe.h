/*
 * recipe.h: how each GEMM operand of a linear layer is quantized, as data (DESIGN.md,
 * Numerics: the recipe table).
 *
 * A linear layer y = x W^T, x (T, in), W (out, in), runs three GEMMs of the form
 * C = A . B^T (kernels/backend_types.h):
 *   fwd    y      = x  . W^T    A = x (T, in),      B = W (out, in)       K = in
 *   dgrad  grad_x = dy . W      A = dy (T, out),    B = W^T (in, out)     K = out
 *   wgrad  grad_W = dy^T . x    A = dy^T (out, T),  B = x^T (in, T)       K = T
 * An axiswise rule scales each row of the GEMM operand, that is along the GEMM's reduction
 * dimension: per row of x for fwd, per column of W for dgrad, per column of dy and of x for
 * wgrad. The table below says, per recipe, role and operand: storage format, scaling, power-
 * of-two scales, and whether the scale comes from an amax history (delayed scaling).
 *
 * The table (recipe.c) is the one place a recipe is declared: its name in case files, its
 * line in 'lockstep list --help', its rules, and what follows from them (the runs that
 * list shows with an amax history, the faults that fit it: fault.c). Adding a recipe is a
 * value of lks_recipe and its row.
 */
#ifndef LKS_HARNESS_RECIPE_H
#define LKS_HARNESS_RECIPE_H

#include <stddef.h>

#include "kernels/backend_types.h"

typedef enum lks_recipe {
	LKS_RECIPE_BF16 = 0,
	LKS_RECIPE_FP8_TENSORWISE,
	LKS_RECIPE_FP8_ROWWISE,
	LKS_RECIPE_FP8_ROWWISE_GW_HP,
	LKS_RECIPE_FP8_DELAYED,
	LKS_RECIPE_FP32,        /* no quantization, no BF16 rounding: the exact reference */
	LKS_RECIPE_COUNT
} lks_recipe;

typedef enum lks_role { LKS_ROLE_FWD = 0, LKS_ROLE_DGRAD = 1, LKS_ROLE_WGRAD = 2 } lks_role;
typedef enum lks_src { LKS_SRC_X = 0, LKS_SRC_W = 1, LKS_SRC_DY = 2 } lks_src;

typedef struct lks_operand_rule {
	lks_dtype dtype;        /* LKS_F32, LKS_BF16, LKS_E4M3 or LKS_E5M2 */
	lks_scaling scaling;    /* NONE for BF16; TENSOR; AXIS along the reduction dimension */
	int pow2;               /* power-of-two scales */
	int delayed;            /* scale from the tensor's amax history */
} lks_operand_rule;

typedef struct lks_recipe_rules {
	const char *name;           /* in case files: recipe = NAME */
	const char *what;           /* in words, for 'lockstep list --help' */
	lks_operand_rule op[3][2];  /* [role][0: A, 1: B] */
	int f32_activations;        /* 1: activations and the LM head stay float32 (no BF16) */
} lks_recipe_rules;

/* The row of recipe r, NULL past the table's end. */
const lks_recipe_rules *lks_recipe_rules_of(lks_recipe r);

/* "fp8_rowwise", "?" past the table's end; the recipe called s, else an error (lks_err)
   that lists the names. */
const char *lks_recipe_name(lks_recipe r);
int lks_recipe_parse(const char *s, lks_recipe *out);

/* What follows from a recipe's rules. Delayed scaling: the runner keeps amax histories
   (amax_history, amax_algo, margin) when the forward's x takes its scale from one; and the
   backward's dy takes its scale from its history too (the scales stale_bwd_scale leaves
   stale). Power-of-two scales: some operand rounds its scales to a power of two. */
int lks_recipe_delayed(lks_recipe r);
int lks_recipe_delayed_dy(lks_recipe r);
int lks_recipe_pow2(lks_recipe r);

/* The names of the recipes for which has(r) is true (has NULL: all), "a, b, c", into buf. */
const char *lks_recipe_names(int (*has)(lks_recipe r), char *buf, size_t size);

/* FP8 scale groups: over which ranks an operand's amax is reduced before its scale is
   taken, so that a sharded tensor is scaled as the whole tensor would be (torchao's rule
   for a DTensor): a tensorwise scale of a sharded operand, and an axiswise scale along a
   sharded reduction dimension, over the group that holds the whole tensor; an axiswise
   scale across the split (each row whole on one rank) over none. A delayed scale comes
   from the history, whose amax is max-reduced over every rank at the step's end: none.
   The table behind it is recipe.c's lks_scale_groups. */
typedef enum lks_amax_group { LKS_GROUP_NONE = 0, LKS_GROUP_TP } lks_amax_group;
typedef enum lks_shard {
	LKS_SHARD_NONE = 0,     /* the operand is whole on every rank */
	LKS_SHARD_K,            /* split along the GEMM's reduction dimension */
	LKS_SHARD_MN,           /* split across it (rows of the GEMM operand) */
	LKS_SHARD_COUNT
} lks_shard;
lks_amax_group lks_recipe_amax_group(const lks_operand_rule *rule, lks_shard shard);
const char *lks_amax_group_name(lks_amax_group g);

/* Which tensor feeds operand (role, ab), and whether the GEMM uses its transpose. */
lks_src lks_role_src(lks_role role, int ab);
int lks_role_transposed(lks_role role, int ab);
const char *lks_role_name(lks_role role);
const char *lks_src_name(lks_src src);

#endif
