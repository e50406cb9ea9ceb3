/*
 * lt_map.c: lockstep's GEMM descriptor as a cuBLASLt plan (see lt_map.h). Plain C, no
 * CUDA header: built and tested on every machine.
 *
 * What cuBLASLt refuses is taken from its documentation (cublasLtMatmul(), the FP8
 * requirements, and "Tensor Core Usage", whose 16-byte rules are mandatory for FP8):
 * TN only; compute and scale type fp32; no E5M2 x E5M2; fp8 with fp8 only; for fp8 the
 * pointers of A, B and C 16-byte aligned, k, lda, ldb a multiple of 16 bytes, m and ldc
 * times the size of C's element a multiple of 16 bytes. Scale pointers apply to fp8
 * operands only; f32 operands give f32 only.
 */
#include "kernels/cuda/lt_map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/gemm.h"
#include "kernels/err.h"

static int lks_is_fp8(lks_dtype t)
{
	return t == LKS_E4M3 || t == LKS_E5M2;
}

int lks_lt_align(const void *p)
{
	uintptr_t a = (uintptr_t)p;

	if (a == 0 || (a & 255) == 0)
		return 256;
	return (int)(a & (~a + 1));  /* the lowest set bit */
}

static int lks_refuse(lks_lt_plan *p, const char *why)
{
	snprintf(p->reason, sizeof(p->reason), "%s", why);
	return LKS_LT_REFUSED;
}

/* The scale cuBLASLt reads for lockstep operand op of rows rows; vec: as a vector (one of
   the two operands is axiswise, and cuBLASLt scales both the same way). */
static void lks_scale_of(const lks_operand *op, int rows, int vec, lks_lt_scale *s)
{
	memset(s, 0, sizeof(*s));
	s->src = op->scaling == LKS_SCALE_NONE ? NULL : op->scale;
	s->src_len = op->scaling == LKS_SCALE_NONE ? 0 : op->scaling == LKS_SCALE_TENSOR ? 1 : rows;
	if (vec) {
		s->mode = LKS_LT_SCALE_OUTER_VEC;
		s->len = rows;
		s->broadcast = op->scaling != LKS_SCALE_AXIS;
	} else if (op->scaling == LKS_SCALE_TENSOR) {
		s->mode = LKS_LT_SCALE_SCALAR;
		s->len = 1;
	}
}

static void lks_mat(lks_lt_mat *m, lks_dtype type, lks_lt_op op, uint64_t rows, uint64_t cols,
                    size_t ld, const void *data)
{
	m->type = type;
	m->op = op;
	m->rows = rows;
	m->cols = cols;
	m->ld = (int64_t)ld;
	m->data = data;
	m->align = lks_lt_align(data);
}

/* Why cuBLASLt cannot take these operand types and output, or NULL. */
static const char *lks_types_refused(const lks_gemm *g)
{
	int fa = lks_is_fp8(g->a.dtype), fb = lks_is_fp8(g->b.dtype);

	if (fa != fb || (!fa && g->a.dtype != g->b.dtype))
		return "mixed operand types: cuBLASLt multiplies fp8 with fp8, bf16 with bf16, "
		       "f32 with f32";
	if (g->a.dtype == LKS_E5M2 && g->b.dtype == LKS_E5M2)
		return "e5m2 x e5m2: cuBLASLt has no fp8 kernel for it";
	if (g->a.dtype == LKS_F32 && g->out != LKS_F32)
		return "f32 operands with bf16 output: cuBLASLt writes f32 from f32 only";
	if (!fa && (g->a.scaling != LKS_SCALE_NONE || g->b.scaling != LKS_SCALE_NONE))
		return "a scaled f32 or bf16 operand: cuBLASLt's scale pointers apply to fp8 only";
	return NULL;
}

/* Why cuBLASLt's fp8 kernels cannot take this plan's layout (16-byte rules), or 0. */
static int lks_fp8_refused(const lks_gemm *g, lks_lt_plan *p)
{
	size_t out = lks_dtype_size(g->out);
	const char *what = NULL;

	if (g->K % 16)
		what = "K";
	else if (g->a.ld % 16)
		what = "a's leading dimension";
	else if (g->b.ld % 16)
		what = "b's leading dimension";
	else if ((size_t)g->N * out % 16)
		what = "N times the size of c's element";
	else if (g->ldc * out % 16)
		what = "c's leading dimension times the size of its element";
	if (what) {
		snprintf(p->reason, sizeof(p->reason),
		         "fp8 needs %s a multiple of 16 bytes (M=%d N=%d K=%d, lda %zu, ldb %zu, "
		         "ldc %zu)", what, g->M, g->N, g->K, g->a.ld, g->b.ld, g->ldc);
		return LKS_LT_REFUSED;
	}
	what = p->b.align < 16 ? "a" : p->a.align < 16 ? "b" : p->d.align < 16 ? "c" : NULL;
	if (what) {
		snprintf(p->reason, sizeof(p->reason), "fp8 needs %s's address 16-byte aligned", what);
		return LKS_LT_REFUSED;
	}
	return 0;
}

static void lks_key_of(lks_lt_plan *p)
{
	lks_lt_key *k = &p->key;

	memset(k, 0, sizeof(*k));
	k->m = p->m;
	k->n = p->n;
	k->k = p->k;
	k->lda = p->a.ld;
	k->ldb = p->b.ld;
	k->ldd = p->d.ld;
	k->type_a = (int32_t)p->a.type;
	k->type_b = (int32_t)p->b.type;
	k->type_d = (int32_t)p->d.type;
	k->mode_a = (int32_t)p->scale_a.mode;
	k->mode_b = (int32_t)p->scale_b.mode;
	k->align_a = p->a.align;
	k->align_b = p->b.align;
	k->align_d = p->d.align;
	k->fast_accum = p->fast_accum;
}

int lks_lt_pick(const double *ms, const int *ok, int n)
{
	int best = -1;

	for (int i = 0; i < n; i++)
		if (ok[i] && ms[i] >= 0 && (best < 0 || ms[i] < ms[best]))
			best = i;
	return best;
}

int lks_lt_plan_of(const lks_gemm *g, lks_lt_plan *p)
{
	const char *why;
	int vec;

	memset(p, 0, sizeof(*p));
	if (lks_gemm_check(g))
		return -1;
	if ((unsigned)g->role > LKS_GEMM_WGRAD)
		return lks_err("gemm role %d is not forward, dgrad or wgrad", (int)g->role);
	p->role = g->role;
	/* row-major C = A.B^T is column-major C^T = B.A^T: cuBLASLt's A is lockstep's B */
	p->transa = LKS_LT_OP_T;
	p->transb = LKS_LT_OP_N;
	p->m = (uint64_t)g->N;
	p->n = (uint64_t)g->M;
	p->k = (uint64_t)g->K;
	lks_mat(&p->a, g->b.dtype, LKS_LT_OP_T, p->k, p->m, g->b.ld, g->b.data);
	lks_mat(&p->b, g->a.dtype, LKS_LT_OP_N, p->k, p->n, g->a.ld, g->a.data);
	lks_mat(&p->d, g->out, LKS_LT_OP_N, p->m, p->n, g->ldc, g->c);
	p->compute = LKS_LT_COMPUTE_32F;
	vec = g->a.scaling == LKS_SCALE_AXIS || g->b.scaling == LKS_SCALE_AXIS;
	lks_scale_of(&g->b, g->N, vec, &p->scale_a);
	lks_scale_of(&g->a, g->M, vec, &p->scale_b);
	p->reciprocal = p->scale_a.mode != LKS_LT_SCALE_NONE || p->scale_b.mode != LKS_LT_SCALE_NONE;
	p->fast_accum = lks_is_fp8(g->a.dtype) && g->role == LKS_GEMM_FWD;
	lks_key_of(p);
	p->key.timed = g->impl == LKS_GEMM_LIBRARY_TIMED;

	if (g->M == 0 || g->N == 0 || g->K == 0)
		return lks_refuse(p, "an empty gemm (M, N or K is 0): the reference kernel writes it");
	if ((why = lks_types_refused(g)))
		return lks_refuse(p, why);
	if (lks_is_fp8(g->a.dtype))
		return lks_fp8_refused(g, p);
	return 0;
}

int lks_lt_plans_note(lks_lt_plans *s, const lks_gemm *g, const lks_lt_algo *used)
{
	lks_gemm_algo p = {
		.role = g->role, .M = g->M, .N = g->N, .K = g->K,
		.a = g->a.dtype, .b = g->b.dtype, .out = g->out,
		.scaling_a = g->a.scaling, .scaling_b = g->b.scaling,
		.fast_accum = used->fast_accum, .fallback = used->fallback,
	};

	if (!used->fallback) {
		p.algo = used->id;
		p.tile = used->tile;
		p.stages = used->stages;
		p.splitk = used->splitk;
		p.reduction = used->reduction;
	} else {
		snprintf(p.reason, sizeof(p.reason), "%s", used->reason);
	}
	for (int i = 0; i < s->n; i++)
		if (lks_gemm_algo_eq(&s->v[i], &p)) {
			s->v[i].gemms++;
			return 0;
		}
	if (s->n == s->cap) {
		int cap = s->cap ? 2 * s->cap : 16;
		lks_gemm_algo *v = realloc(s->v, (size_t)cap * sizeof(*v));

		if (!v)
			return lks_err("out of memory for the gemm plans");
		s->v = v;
		s->cap = cap;
	}
	p.gemms = 1;
	s->v[s->n++] = p;
	return 0;
}

void lks_lt_plans_release(lks_lt_plans *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}
