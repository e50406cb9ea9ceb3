/*
 * lt_map.h: lockstep's GEMM descriptor (backend_types.h) mapped onto what a cuBLASLt
 * matmul needs, in the project's own enums, so that the mapping is plain C: it builds and
 * is tested where the CUDA Toolkit is absent (tests/kernels/test_lt_map.c), and gemm_lt.cu only
 * translates the plan into cuBLASLt's attributes.
 *
 * The mapping:
 * - lockstep's row-major C(M,N) = A(M,K) . B(N,K)^T is column-major C^T = B . A^T. So
 *   cuBLASLt's A is lockstep's B (stored K x N column-major, op T) and cuBLASLt's B is
 *   lockstep's A (stored K x M column-major, op N): the "TN" layout FP8 needs, for every
 *   type. cuBLASLt's m, n, k are lockstep's N, M, K; lda, ldb, ldc are lockstep's b.ld,
 *   a.ld and ldc. The scales swap with the operands.
 * - cuBLASLt multiplies the product by its scale pointers; lockstep's scales quantize
 *   (q = x . scale, the CPU's epilogue divides: kernels/cpu/gemm.h). So the backend hands
 *   cuBLASLt 1/scale, computed on the device (plan.reciprocal).
 * - A tensor scale is a scalar (SCALAR_32F); an axiswise one a vector along the operand's
 *   outer dimension (OUTER_VEC_32F: m values for cuBLASLt's A, n for its B). Where one
 *   operand is axiswise and the other is not, both go as vectors: the other's tensor scale
 *   (or 1 where unscaled) is repeated into one (lks_lt_scale.broadcast).
 * - Fast accumulation (FP8 only) in forward, not in dgrad or wgrad, as torchao and
 *   TransformerEngine do. Compute type fp32, scale type fp32, alpha 1, beta 0, C = D.
 *
 * Shapes and layouts cuBLASLt refuses are refused here with a reason, so that the backend
 * runs its reference kernel instead and records why.
 */
#ifndef LKS_KERNELS_CUDA_LT_MAP_H
#define LKS_KERNELS_CUDA_LT_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/backend_types.h"

/* lks_lt_plan_of's answer when cuBLASLt cannot run the GEMM (not an error: the reason is in
   the plan, and the backend falls back to its reference kernel). */
#define LKS_LT_REFUSED 1

typedef enum lks_lt_op { LKS_LT_OP_N = 0, LKS_LT_OP_T = 1 } lks_lt_op;

typedef enum lks_lt_compute { LKS_LT_COMPUTE_32F = 0 } lks_lt_compute;

typedef enum lks_lt_scale_mode {
	LKS_LT_SCALE_NONE = 0,       /* no scale pointer: cuBLASLt takes 1 */
	LKS_LT_SCALE_SCALAR = 1,     /* SCALAR_32F: one float */
	LKS_LT_SCALE_OUTER_VEC = 2,  /* OUTER_VEC_32F: one float per row of op(matrix) */
} lks_lt_scale_mode;

/* The scale cuBLASLt reads for one of its operands, and where it comes from. */
typedef struct lks_lt_scale {
	lks_lt_scale_mode mode;
	const float *src;     /* lockstep's quantization scale(s) (backend memory); NULL: 1 */
	int src_len;          /* values at src: 0 (none), 1 (tensor) or the rows (axis) */
	int len;              /* values cuBLASLt reads: 0, 1 or the outer dimension */
	int broadcast;        /* 1: src (one value, or 1 when NULL) repeated into len values */
} lks_lt_scale;

/* One cuBLASLt matrix, column-major as stored (before its op). */
typedef struct lks_lt_mat {
	lks_dtype type;
	lks_lt_op op;
	uint64_t rows, cols;
	int64_t ld;           /* elements, >= rows */
	const void *data;     /* backend memory (D's is written) */
	int align;            /* bytes the address is aligned to, a power of two, at most 256 */
} lks_lt_mat;

/* What decides cuBLASLt's choice of algorithm: plans with equal keys take the same one. */
typedef struct lks_lt_key {
	uint64_t m, n, k;
	int64_t lda, ldb, ldd;
	int32_t type_a, type_b, type_d;
	int32_t mode_a, mode_b;
	int32_t align_a, align_b, align_d;
	int32_t fast_accum;
	int32_t timed;             /* the algorithm chosen by timing (LKS_GEMM_LIBRARY_TIMED) */
} lks_lt_key;

typedef struct lks_lt_plan {
	lks_gemm_role role;
	lks_lt_op transa, transb;  /* T, N */
	uint64_t m, n, k;          /* cuBLASLt's: lockstep's N, M, K */
	lks_lt_mat a, b, d;        /* a: lockstep's B; b: lockstep's A; d: C (and C = D) */
	lks_lt_compute compute;
	lks_lt_scale scale_a;      /* from lockstep's B */
	lks_lt_scale scale_b;      /* from lockstep's A */
	int reciprocal;            /* 1: the backend passes 1/scale for every scale given */
	int fast_accum;
	lks_lt_key key;
	char reason[160];          /* why cuBLASLt cannot run it; empty when it can */
} lks_lt_plan;

/* The chosen algorithm of one GEMM as stored per run, or the fallback and its reason. */
typedef struct lks_lt_algo {
	int fallback;              /* 1: the reference kernel ran, for reason */
	int32_t id;                /* CUBLASLT_ALGO_CONFIG_ID */
	uint32_t tile;             /* CUBLASLT_ALGO_CONFIG_TILE_ID (cublasLtMatmulTile_t) */
	uint32_t stages;           /* CUBLASLT_ALGO_CONFIG_STAGES_ID */
	int32_t splitk;            /* CUBLASLT_ALGO_CONFIG_SPLITK_NUM */
	uint32_t reduction;        /* CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME */
	int fast_accum;
	size_t workspace;          /* bytes the algorithm uses */
	int offered;               /* timed: the candidates the heuristic offered (0: the
	                              heuristic's first was kept untimed) */
	double ms;                 /* timed: the kept one's milliseconds a GEMM */
	char reason[160];
} lks_lt_algo;

/* p <- how cuBLASLt runs g. Returns 0 when it can, LKS_LT_REFUSED (p->reason says why)
   when it cannot, -1 (lks_err) when g itself is malformed. */
int lks_lt_plan_of(const lks_gemm *g, lks_lt_plan *p);

/* Of n candidates the heuristic offered, in its order, the one a timed choice keeps: the
   fastest of those allowed (ok[i]: no reduction scheme, its workspace fits, and ms[i] >= 0,
   its timing ran), the heuristic's order breaking a tie. -1 when none is allowed. */
int lks_lt_pick(const double *ms, const int *ok, int n);

/* The largest power of two, at most 256, that divides the address p. */
int lks_lt_align(const void *p);

/* The plans of a run (backend.h's gemm_plans): each GEMM that asked for the library is
   noted with what ran it; GEMMs alike in every field of lks_gemm_algo count in one. */
typedef struct lks_lt_plans {
	lks_gemm_algo *v;
	int n, cap;
} lks_lt_plans;

/* g ran as used says (the algorithm, or the fallback and its reason). Fails (lks_err) only
   out of memory. */
int lks_lt_plans_note(lks_lt_plans *s, const lks_gemm *g, const lks_lt_algo *used);
void lks_lt_plans_release(lks_lt_plans *s);

static inline int lks_lt_key_eq(const lks_lt_key *x, const lks_lt_key *y)
{
	return x->m == y->m && x->n == y->n && x->k == y->k && x->lda == y->lda
	       && x->ldb == y->ldb && x->ldd == y->ldd && x->type_a == y->type_a
	       && x->type_b == y->type_b && x->type_d == y->type_d && x->mode_a == y->mode_a
	       && x->mode_b == y->mode_b && x->align_a == y->align_a && x->align_b == y->align_b
	       && x->align_d == y->align_d && x->fast_accum == y->fast_accum
	       && x->timed == y->timed;
}

#endif
