/*
 * backend_types.h: the types a caller of a backend (backend.h) hands it, and nothing of
 * how any backend runs them: element types, the GEMM and quantize descriptors, the
 * statistics of a traced tensor. The CPU kernels' headers include this one; the harness
 * needs no other to describe an op.
 *
 * Pointers inside a descriptor are backend memory (host memory for the CPU backend).
 */
#ifndef LKS_KERNELS_BACKEND_TYPES_H
#define LKS_KERNELS_BACKEND_TYPES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum lks_dtype {
	LKS_F32 = 0,
	LKS_BF16 = 1,  /* uint16_t storage */
	LKS_E4M3 = 2,  /* uint8_t storage */
	LKS_E5M2 = 3,  /* uint8_t storage */
} lks_dtype;

static inline const char *lks_dtype_name(lks_dtype t)
{
	switch (t) {
	case LKS_F32: return "f32";
	case LKS_BF16: return "bf16";
	case LKS_E4M3: return "e4m3";
	case LKS_E5M2: return "e5m2";
	}
	return "unknown";
}

static inline size_t lks_dtype_size(lks_dtype t)
{
	switch (t) {
	case LKS_F32: return 4;
	case LKS_BF16: return 2;
	case LKS_E4M3: return 1;
	case LKS_E5M2: return 1;
	}
	return 0;
}

/* ---- GEMM: C(M,N) = A(M,K) . B(N,K)^T (the contract: kernels/cpu/gemm.h) ---- */

typedef enum lks_scaling {
	LKS_SCALE_NONE = 0,
	LKS_SCALE_TENSOR = 1,  /* scale[0] */
	LKS_SCALE_AXIS = 2,    /* scale[row], one per row of the operand */
} lks_scaling;

typedef struct lks_operand {
	lks_dtype dtype;
	const void *data;     /* (rows, K) row-major, element (r, k) at data[r*ld + k] */
	size_t ld;            /* leading dimension in elements, >= K */
	lks_scaling scaling;
	const float *scale;   /* quantization scale(s); NULL when scaling is NONE */
} lks_operand;

/* What a GEMM computes in training: a backend may choose by it (a production GEMM
   accumulates fast in forward only, as torchao and TransformerEngine do); the CPU's bits
   do not depend on it. */
typedef enum lks_gemm_role {
	LKS_GEMM_FWD = 0,     /* y = x . W^T */
	LKS_GEMM_DGRAD = 1,   /* dx = dy . W */
	LKS_GEMM_WGRAD = 2,   /* dW = dy^T . x */
} lks_gemm_role;

/* Which GEMM a run asks for (a run's 'gemm' key): the reference, the CPU's documented
   order, which every backend has; or the library's (cuBLASLt on cuda), as frameworks run
   it, compared within tolerances. The library's algorithm is its heuristic's first for the
   shape, the same on every rerun on a GPU class and library; LIBRARY_TIMED (bench gemm's)
   times the candidates the heuristic offers, once per shape, and keeps the fastest: what
   the library can do, but a rerun's timing may keep another, with other bits, so a run
   never asks for it. */
typedef enum lks_gemm_impl {
	LKS_GEMM_REFERENCE = 0,
	LKS_GEMM_LIBRARY = 1,
	LKS_GEMM_LIBRARY_TIMED = 2,
} lks_gemm_impl;

typedef struct lks_gemm {
	int M, N, K;          /* any sizes >= 0; K = 0 gives C = 0 */
	lks_gemm_role role;
	lks_gemm_impl impl;
	lks_operand a;        /* (M, K) */
	lks_operand b;        /* (N, K) */
	lks_dtype out;        /* LKS_F32 (float) or LKS_BF16 (uint16_t) */
	void *c;              /* (M, N) row-major */
	size_t ldc;           /* leading dimension of C in elements, >= N */
} lks_gemm;

static inline const char *lks_gemm_role_name(lks_gemm_role r)
{
	switch (r) {
	case LKS_GEMM_FWD: return "fwd";
	case LKS_GEMM_DGRAD: return "dgrad";
	case LKS_GEMM_WGRAD: return "wgrad";
	}
	return "unknown";
}

static inline const char *lks_scaling_name(lks_scaling k)
{
	switch (k) {
	case LKS_SCALE_NONE: return "none";
	case LKS_SCALE_TENSOR: return "tensor";
	case LKS_SCALE_AXIS: return "axis";
	}
	return "unknown";
}

/* One way a backend's library ran GEMMs of a run (backend.h's gemm_plans; stored per run,
   harness/store/trace_store.h): what the GEMMs were, and the algorithm the library chose
   for them, or the reference kernel that ran them instead and why. GEMMs that differ in
   none of these fields count in one plan. */
typedef struct lks_gemm_algo {
	lks_gemm_role role;
	int M, N, K;          /* lockstep's (the library's may be swapped) */
	lks_dtype a, b, out;  /* out: C's, which is D's */
	lks_scaling scaling_a, scaling_b;
	int fast_accum;
	int fallback;         /* 1: the reference kernel ran them, for reason */
	int32_t algo;         /* the library's algorithm id, tile, stages, split-K and */
	uint32_t tile;        /* reduction scheme (cuBLASLt's CUBLASLT_ALGO_CONFIG_*); */
	uint32_t stages;      /* 0 in a fallback */
	int32_t splitk;
	uint32_t reduction;
	int64_t gemms;        /* how many GEMMs ran this way */
	char reason[160];     /* empty unless fallback */
} lks_gemm_algo;

/* whether GEMMs of x and of y count in one plan: every field equal but the count */
static inline int lks_gemm_algo_eq(const lks_gemm_algo *x, const lks_gemm_algo *y)
{
	return x->role == y->role && x->M == y->M && x->N == y->N && x->K == y->K
	       && x->a == y->a && x->b == y->b && x->out == y->out
	       && x->scaling_a == y->scaling_a && x->scaling_b == y->scaling_b
	       && x->fast_accum == y->fast_accum && x->fallback == y->fallback
	       && x->algo == y->algo && x->tile == y->tile && x->stages == y->stages
	       && x->splitk == y->splitk && x->reduction == y->reduction
	       && strcmp(x->reason, y->reason) == 0;
}

/* ---- FP8 quantization (the contract: kernels/cpu/quant.h) ---- */

typedef enum lks_fp8 { LKS_FP8_E4M3 = 0, LKS_FP8_E5M2 = 1 } lks_fp8;

#define LKS_E4M3_MAX 448.0f
#define LKS_E5M2_MAX 57344.0f

typedef enum lks_axis {
	LKS_AXIS_TENSOR = 0,  /* one scale */
	LKS_AXIS_ROW = 1,     /* a scale per row, amax over the columns */
	LKS_AXIS_COL = 2,     /* a scale per column, amax over the rows */
} lks_axis;

/* A planted fault (harness/engine/fault.h, scale_round_up, through a wrapper of the
   backend): power-of-two scales rounded up, so amax x scale can pass fp8_max and saturate.
   Never used by a recipe. */
#define LKS_POW2_UP 2

typedef struct lks_quant {
	/* in */
	const float *x;       /* (rows, cols) row-major, element (r, c) at x[r*ldx + c] */
	int rows, cols;
	size_t ldx;
	lks_fp8 fmt;
	lks_axis axis;
	int pow2;             /* round scales down to powers of two; LKS_POW2_UP: up */
	int scale_given;      /* 1: *scale is an input (delayed scaling), not derived from amax */
	/* out */
	uint8_t *q;           /* (rows, cols) codes, element (r, c) at q[r*ldq + c] */
	size_t ldq;
	float *scale;         /* 1, rows or cols values, by axis (an input if scale_given) */
	float *amax;          /* as scale; may be NULL */
	uint64_t underflow;
	uint64_t saturated;
	/* in, for a wrapper of the backend (kernels ignore it): which operand of its GEMM this
	   is, as the recipe names them (0 x, 1 W, 2 dy) */
	int operand;
	/* in: 1: nothing reads underflow and saturated (an untraced step): a backend may leave
	   them 0 rather than wait for them */
	int no_counts;
} lks_quant;

/* The number of scales an axis needs: 1, rows or cols. */
static inline size_t lks_quant_nscales(const lks_quant *q)
{
	switch (q->axis) {
	case LKS_AXIS_ROW: return (size_t)q->rows;
	case LKS_AXIS_COL: return (size_t)q->cols;
	default: return 1;
	}
}

/* ---- what the tracer measures of one tensor (DESIGN.md, Trace) ---- */

typedef struct lks_tensor_stats {
	double l2;            /* L2 norm, the sum of squares in the fixed order (stats.h) */
	float amax;           /* NaN if any element is NaN */
	int64_t nonfinite;
	uint64_t hash;        /* XXH3-64 of the bits (a quantized tensor: codes, then scales) */
	/* a quantized tensor only (else NaN and 0): the smallest scale, the cast's counts */
	float scale;
	int64_t underflow, saturated;
} lks_tensor_stats;

/* ---- one rank's optimizer step (backend.h's update) ---- */

/* A part of the flat parameter vector that AdamW updates alike: elements [off, off + n),
   with weight decay wd (0: none) */
typedef struct lks_update_part {
	size_t off, n;
	float wd;
} lks_update_part;

/* The step's clip and AdamW: parts sorted by off and apart (elements in no part are
   clipped but not updated); clip <= 0: no clip; lr, the betas, eps and the bias
   corrections as lks_adamw takes them */
typedef struct lks_update {
	const lks_update_part *part;
	int nparts;
	float clip, lr, b1, b2, eps, bc1, bc2;
} lks_update;

#endif
