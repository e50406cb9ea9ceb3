/*
 * test_lt_map.c: lockstep's GEMM descriptor as a cuBLASLt plan (kernels/cuda/lt_map.h),
 * tested on the CPU: no CUDA is needed.
 *
 * plan_computes_the_cpu_gemm reads a plan as cuBLASLt defines its arguments (column-major
 * matrices, op(A) = A^T, D(i,j) = scale_a[i] . scale_b[j] . sum_k op(A)(i,k) op(B)(k,j),
 * the scales the backend hands over being 1/lockstep's) and computes it in the CPU's
 * order: the result must equal the CPU GEMM bit for bit for every pairing of scalings.
 * A plan that swapped wrongly, kept a leading dimension on the wrong operand, forgot 1/scale
 * or a scale's broadcast would read other elements or scales and differ. The other tests
 * name each part of the mapping and each refusal.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/cpu/convert.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cuda/lt_map.h"
#include "kernels/err.h"

/* Sizes that fp8 accepts, with every leading dimension different so that one taken for
   another reads other elements: lda 48, ldb 32, ldc 16 (C^T in bf16 needs 16). */
enum { M = 5, N = 8, K = 32, LDA = 48, LDB = 32, LDC = 16 };

static _Alignas(256) uint8_t qa[M * LDA + 256];  /* and room for a copy at qa + 256 */
static _Alignas(256) uint8_t qb[N * LDB];
static _Alignas(256) float c_cpu[M * LDC];
static _Alignas(256) float c_plan[M * LDC];
static float sa[M], sb[N];

static void fill(void)
{
	/* codes 0x18..0x57 with alternating signs: normal e4m3 and e5m2 values, no NaN */
	for (int i = 0; i < M * LDA; i++)
		qa[i] = (uint8_t)(0x18 + (i * 37) % 0x40) | (uint8_t)((i % 3 == 0) << 7);
	for (int i = 0; i < N * LDB; i++)
		qb[i] = (uint8_t)(0x18 + (i * 53 + 7) % 0x40) | (uint8_t)((i % 5 == 1) << 7);
	/* scales that are not powers of two, so that 1/scale rounds and its use shows */
	for (int i = 0; i < M; i++)
		sa[i] = 3.0f + 0.37f * (float)i;
	for (int j = 0; j < N; j++)
		sb[j] = 0.7f + 1.13f * (float)j;
}

static lks_gemm fp8_gemm(lks_dtype ta, lks_scaling ka, lks_dtype tb, lks_scaling kb,
                         lks_gemm_role role)
{
	lks_gemm g = {
		.M = M, .N = N, .K = K, .role = role,
		.a = { ta, qa, LDA, ka, ka == LKS_SCALE_NONE ? NULL : sa },
		.b = { tb, qb, LDB, kb, kb == LKS_SCALE_NONE ? NULL : sb },
		.out = LKS_F32, .c = c_cpu, .ldc = LDC,
	};
	return g;
}

static float widen(lks_dtype t, const void *data, size_t i)
{
	switch (t) {
	case LKS_E4M3: return lks_fp8_to_f32(((const uint8_t *)data)[i], LKS_FP8_E4M3);
	case LKS_E5M2: return lks_fp8_to_f32(((const uint8_t *)data)[i], LKS_FP8_E5M2);
	case LKS_F32: return ((const float *)data)[i];
	default: cr_assert_fail("type %d not read by this test", (int)t);
	}
	return NAN;
}

/* The i-th value cuBLASLt reads through one scale pointer, as the backend fills it
   (1/scale where the plan says reciprocal, the scale itself where it does not). */
static float lt_scale(const lks_lt_plan *p, const lks_lt_scale *s, uint64_t i)
{
	float v;

	switch (s->mode) {
	case LKS_LT_SCALE_NONE: return 1.0f;
	case LKS_LT_SCALE_SCALAR:
		cr_assert(s->src && s->src_len == 1, "a scalar scale without its source");
		v = s->src[0];
		break;
	case LKS_LT_SCALE_OUTER_VEC:
		cr_assert_lt(i, (uint64_t)s->len);
		if (s->broadcast && !s->src)
			return 1.0f;
		i = s->broadcast ? 0 : i;
		cr_assert(s->src && i < (uint64_t)s->src_len,
		          "element %d of a vector scale of %d sources", (int)i, s->src_len);
		v = s->src[i];
		break;
	default: cr_assert_fail("scale mode %d", (int)s->mode);
	}
	return p->reciprocal ? 1.0f / v : v;
}

/* D <- the plan, as cuBLASLt defines it, accumulated in the CPU's order (gemm.h). */
static void run_plan(const lks_lt_plan *p)
{
	cr_assert_eq(p->transa, LKS_LT_OP_T);
	cr_assert_eq(p->transb, LKS_LT_OP_N);
	cr_assert_eq(p->d.type, LKS_F32);
	for (uint64_t j = 0; j < p->n; j++)
		for (uint64_t i = 0; i < p->m; i++) {
			float acc = 0.0f;
			for (uint64_t k = 0; k < p->k; k++)
				acc = fmaf(widen(p->a.type, p->a.data, k + i * (uint64_t)p->a.ld),
				           widen(p->b.type, p->b.data, k + j * (uint64_t)p->b.ld), acc);
			float s = lt_scale(p, &p->scale_a, i) * lt_scale(p, &p->scale_b, j);
			((float *)p->d.data)[i + j * (uint64_t)p->d.ld] = acc * s;
		}
}

Test(lt_map, plan_computes_the_cpu_gemm)
{
	static const lks_scaling kinds[] = { LKS_SCALE_NONE, LKS_SCALE_TENSOR, LKS_SCALE_AXIS };
	static const lks_dtype types[][2] = { { LKS_E4M3, LKS_E4M3 }, { LKS_E4M3, LKS_E5M2 },
	                                      { LKS_E5M2, LKS_E4M3 } };
	lks_lt_plan p;

	fill();
	for (int t = 0; t < 3; t++)
		for (int x = 0; x < 3; x++)
			for (int y = 0; y < 3; y++) {
				lks_gemm g = fp8_gemm(types[t][0], kinds[x], types[t][1], kinds[y],
				                      LKS_GEMM_FWD);
				memset(c_cpu, 0, sizeof(c_cpu));
				memset(c_plan, 0, sizeof(c_plan));
				cr_assert_eq(lks_gemm_run(NULL, &g), 0, "%s", lks_errmsg());
				g.c = c_plan;
				cr_assert_eq(lks_lt_plan_of(&g, &p), 0, "%s", p.reason);
				run_plan(&p);
				for (int r = 0; r < M; r++)
					for (int c = 0; c < N; c++)
						cr_assert_eq(c_plan[r * LDC + c], c_cpu[r * LDC + c],
						             "%s x %s, scalings %d x %d: C(%d,%d) %a, cpu %a",
						             lks_dtype_name(types[t][0]), lks_dtype_name(types[t][1]),
						             x, y, r, c, (double)c_plan[r * LDC + c],
						             (double)c_cpu[r * LDC + c]);
			}
}

Test(lt_map, operands_swap_into_tn)
{
	lks_gemm g = fp8_gemm(LKS_E4M3, LKS_SCALE_TENSOR, LKS_E5M2, LKS_SCALE_TENSOR,
	                      LKS_GEMM_FWD);
	lks_lt_plan p;

	cr_assert_eq(lks_lt_plan_of(&g, &p), 0, "%s", p.reason);
	cr_assert_eq(p.transa, LKS_LT_OP_T);
	cr_assert_eq(p.transb, LKS_LT_OP_N);
	cr_assert_eq(p.m, (uint64_t)N);
	cr_assert_eq(p.n, (uint64_t)M);
	cr_assert_eq(p.k, (uint64_t)K);
	/* cuBLASLt's A: lockstep's B, stored K x N column-major */
	cr_assert_eq(p.a.data, (const void *)qb);
	cr_assert_eq(p.a.type, LKS_E5M2);
	cr_assert_eq(p.a.rows, (uint64_t)K);
	cr_assert_eq(p.a.cols, (uint64_t)N);
	cr_assert_eq(p.a.ld, LDB);
	/* cuBLASLt's B: lockstep's A, stored K x M column-major */
	cr_assert_eq(p.b.data, (const void *)qa);
	cr_assert_eq(p.b.type, LKS_E4M3);
	cr_assert_eq(p.b.rows, (uint64_t)K);
	cr_assert_eq(p.b.cols, (uint64_t)M);
	cr_assert_eq(p.b.ld, LDA);
	/* D: C^T, N x M column-major, C's leading dimension */
	cr_assert_eq(p.d.data, (const void *)c_cpu);
	cr_assert_eq(p.d.rows, (uint64_t)N);
	cr_assert_eq(p.d.cols, (uint64_t)M);
	cr_assert_eq(p.d.ld, LDC);
	cr_assert_eq(p.compute, LKS_LT_COMPUTE_32F);
	cr_assert_str_empty(p.reason);
}

/* s is what it should be: its mode, where it reads, how many values, broadcast or not */
static void expect_scale(const lks_lt_scale *s, lks_lt_scale_mode mode, const float *src,
                         int src_len, int len, int broadcast, const char *what)
{
	cr_assert_eq(s->mode, mode, "%s: mode %d", what, (int)s->mode);
	cr_assert_eq(s->src, src, "%s: another source", what);
	cr_assert_eq(s->src_len, src_len, "%s: %d sources", what, s->src_len);
	cr_assert_eq(s->len, len, "%s: %d values", what, s->len);
	cr_assert_eq(s->broadcast, broadcast, "%s: broadcast %d", what, s->broadcast);
}

/* The plan of g, with its reciprocal flag and scales as given. */
static lks_lt_plan plan_ok(lks_dtype ta, lks_scaling ka, lks_dtype tb, lks_scaling kb,
                           int reciprocal)
{
	lks_gemm g = fp8_gemm(ta, ka, tb, kb, LKS_GEMM_FWD);
	lks_lt_plan p;

	cr_assert_eq(lks_lt_plan_of(&g, &p), 0, "%s", p.reason);
	cr_assert_eq(p.reciprocal, reciprocal);
	return p;
}

Test(lt_map, tensor_scales_are_swapped_scalars_passed_as_reciprocals)
{
	lks_lt_plan p = plan_ok(LKS_E4M3, LKS_SCALE_TENSOR, LKS_E4M3, LKS_SCALE_TENSOR, 1);

	expect_scale(&p.scale_a, LKS_LT_SCALE_SCALAR, sb, 1, 1, 0, "A (lockstep's B)");
	expect_scale(&p.scale_b, LKS_LT_SCALE_SCALAR, sa, 1, 1, 0, "B (lockstep's A)");
}

Test(lt_map, unscaled_fp8_has_no_scale_pointers)
{
	lks_lt_plan p = plan_ok(LKS_E4M3, LKS_SCALE_NONE, LKS_E4M3, LKS_SCALE_NONE, 0);

	expect_scale(&p.scale_a, LKS_LT_SCALE_NONE, NULL, 0, 0, 0, "A");
	expect_scale(&p.scale_b, LKS_LT_SCALE_NONE, NULL, 0, 0, 0, "B");
	/* one scaled: the other has none, and cuBLASLt takes 1 */
	p = plan_ok(LKS_E4M3, LKS_SCALE_TENSOR, LKS_E4M3, LKS_SCALE_NONE, 1);
	expect_scale(&p.scale_a, LKS_LT_SCALE_NONE, NULL, 0, 0, 0, "A");
	expect_scale(&p.scale_b, LKS_LT_SCALE_SCALAR, sa, 1, 1, 0, "B");
}

/* cuBLASLt's A scale has m values (one per row of op(A): lockstep's N), its B scale n
   (one per column of op(B): lockstep's M) */
Test(lt_map, rowwise_scales_are_outer_vectors_along_the_swapped_operands)
{
	lks_lt_plan p = plan_ok(LKS_E4M3, LKS_SCALE_AXIS, LKS_E4M3, LKS_SCALE_AXIS, 1);

	expect_scale(&p.scale_a, LKS_LT_SCALE_OUTER_VEC, sb, N, N, 0, "A (lockstep's B)");
	expect_scale(&p.scale_b, LKS_LT_SCALE_OUTER_VEC, sa, M, M, 0, "B (lockstep's A)");
}

Test(lt_map, a_tensor_scale_beside_an_axiswise_one_is_broadcast)
{
	lks_lt_plan p = plan_ok(LKS_E4M3, LKS_SCALE_AXIS, LKS_E4M3, LKS_SCALE_TENSOR, 1);

	expect_scale(&p.scale_a, LKS_LT_SCALE_OUTER_VEC, sb, 1, N, 1, "A, tensorwise");
	expect_scale(&p.scale_b, LKS_LT_SCALE_OUTER_VEC, sa, M, M, 0, "B, axiswise");
	p = plan_ok(LKS_E4M3, LKS_SCALE_TENSOR, LKS_E4M3, LKS_SCALE_AXIS, 1);
	expect_scale(&p.scale_a, LKS_LT_SCALE_OUTER_VEC, sb, N, N, 0, "A, axiswise");
	expect_scale(&p.scale_b, LKS_LT_SCALE_OUTER_VEC, sa, 1, M, 1, "B, tensorwise");
	/* unscaled beside axiswise: a vector of ones */
	p = plan_ok(LKS_E4M3, LKS_SCALE_NONE, LKS_E4M3, LKS_SCALE_AXIS, 1);
	expect_scale(&p.scale_b, LKS_LT_SCALE_OUTER_VEC, NULL, 0, M, 1, "B, unscaled");
}

Test(lt_map, fast_accumulation_in_forward_fp8_only)
{
	static const struct { lks_gemm_role role; int fast; } rows[] = {
		{ LKS_GEMM_FWD, 1 }, { LKS_GEMM_DGRAD, 0 }, { LKS_GEMM_WGRAD, 0 },
	};
	lks_lt_plan p;

	for (int i = 0; i < 3; i++) {
		lks_gemm g = fp8_gemm(LKS_E4M3, LKS_SCALE_TENSOR, LKS_E5M2, LKS_SCALE_TENSOR,
		                      rows[i].role);
		cr_assert_eq(lks_lt_plan_of(&g, &p), 0, "%s", p.reason);
		cr_assert_eq(p.fast_accum, rows[i].fast, "role %d", (int)rows[i].role);
		cr_assert_eq(p.role, rows[i].role);
	}
	/* bf16: an fp8 mode, never set */
	static _Alignas(256) uint16_t x[4 * 4], w[4 * 4];
	lks_gemm g = { .M = 4, .N = 4, .K = 4, .role = LKS_GEMM_FWD,
	               .a = { LKS_BF16, x, 4, LKS_SCALE_NONE, NULL },
	               .b = { LKS_BF16, w, 4, LKS_SCALE_NONE, NULL },
	               .out = LKS_BF16, .c = c_cpu, .ldc = 4 };
	cr_assert_eq(lks_lt_plan_of(&g, &p), 0, "%s", p.reason);
	cr_assert_eq(p.fast_accum, 0);
}

Test(lt_map, output_type_is_the_descriptors)
{
	lks_gemm g = fp8_gemm(LKS_E4M3, LKS_SCALE_TENSOR, LKS_E4M3, LKS_SCALE_TENSOR,
	                      LKS_GEMM_FWD);
	lks_lt_plan p;

	g.out = LKS_BF16;
	cr_assert_eq(lks_lt_plan_of(&g, &p), 0, "%s", p.reason);
	cr_assert_eq(p.d.type, LKS_BF16);
	g = fp8_gemm(LKS_E5M2, LKS_SCALE_TENSOR, LKS_E4M3, LKS_SCALE_TENSOR, LKS_GEMM_WGRAD);
	cr_assert_eq(lks_lt_plan_of(&g, &p), 0, "%s", p.reason);
	cr_assert_eq(p.d.type, LKS_F32);
	cr_assert_eq(p.fast_accum, 0);
}

Test(lt_map, bf16_and_f32_take_any_shape)
{
	static _Alignas(256) uint16_t x[3 * 9], w[5 * 7];
	static _Alignas(256) float xf[3 * 7], wf[5 * 7];
	lks_gemm g = { .M = 3, .N = 5, .K = 7, .role = LKS_GEMM_DGRAD,
	               .a = { LKS_BF16, x, 9, LKS_SCALE_NONE, NULL },
	               .b = { LKS_BF16, w, 7, LKS_SCALE_NONE, NULL },
	               .out = LKS_F32, .c = c_cpu + 1, .ldc = 5 };
	lks_lt_plan p;

	cr_assert_eq(lks_lt_plan_of(&g, &p), 0, "%s", p.reason);
	cr_assert_eq(p.d.align, 4);
	cr_assert_eq(p.a.ld, 7);
	cr_assert_eq(p.b.ld, 9);
	g.a = (lks_operand){ LKS_F32, xf, 7, LKS_SCALE_NONE, NULL };
	g.b = (lks_operand){ LKS_F32, wf, 7, LKS_SCALE_NONE, NULL };
	cr_assert_eq(lks_lt_plan_of(&g, &p), 0, "%s", p.reason);
	cr_assert_eq(p.a.type, LKS_F32);
}

/* The operand data of a type: the fp8 codes, or bf16 / f32 buffers as large */
static const void *data_of(lks_dtype t, int b)
{
	static _Alignas(256) uint16_t h[2][N * LDA];
	static _Alignas(256) float f[2][N * LDA];

	if (t == LKS_BF16)
		return h[b];
	if (t == LKS_F32)
		return f[b];
	return b ? (const void *)qb : (const void *)qa;
}

Test(lt_map, what_cublaslt_cannot_run_is_refused_with_a_reason)
{
	static const struct {
		lks_dtype ta; lks_scaling ka; lks_dtype tb; lks_scaling kb; lks_dtype out;
		int m, n, k, lda, ldb, ldc, aoff, boff, coff;  /* offsets in bytes */
		const char *why;
	} rows[] = {
#define E4 LKS_E4M3, LKS_SCALE_TENSOR
#define E5 LKS_E5M2, LKS_SCALE_TENSOR
		{ E4, E4, LKS_F32, M, N, 24, LDA, LDB, LDC, 0, 0, 0, "fp8 needs K a multiple of 16" },
		{ E4, E4, LKS_F32, M, N, K, 40, LDB, LDC, 0, 0, 0, "a's leading dimension" },
		{ E4, E4, LKS_F32, M, N, K, LDA, 36, LDC, 0, 0, 0, "b's leading dimension" },
		/* 12 bytes per column of C^T */
		{ E4, E4, LKS_BF16, M, 6, K, LDA, LDB, LDC, 0, 0, 0, "N times the size of c's" },
		{ E4, E4, LKS_F32, M, N, K, LDA, LDB, 9, 0, 0, 0, "c's leading dimension" },
		{ E4, E4, LKS_F32, M, N, K, LDA, LDB, LDC, 8, 0, 0, "a's address 16-byte aligned" },
		{ E4, E4, LKS_F32, M, N, K, LDA, LDB, LDC, 0, 20, 0, "b's address" },
		{ E4, E4, LKS_F32, M, N, K, LDA, LDB, LDC, 0, 0, 8, "c's address" },
		{ E5, E5, LKS_F32, M, N, K, LDA, LDB, LDC, 0, 0, 0, "e5m2 x e5m2" },
		{ E4, LKS_BF16, LKS_SCALE_NONE, LKS_F32, M, N, K, LDA, LDB, LDC, 0, 0, 0,
		  "mixed operand types" },
		{ LKS_F32, LKS_SCALE_NONE, LKS_BF16, LKS_SCALE_NONE, LKS_F32, M, N, K, LDA, LDB, LDC,
		  0, 0, 0, "mixed operand types" },
		{ LKS_F32, LKS_SCALE_NONE, LKS_F32, LKS_SCALE_NONE, LKS_BF16, M, N, K, LDA, LDB, LDC,
		  0, 0, 0, "f32 operands with bf16 output" },
		{ LKS_BF16, LKS_SCALE_TENSOR, LKS_BF16, LKS_SCALE_NONE, LKS_F32, M, N, K, LDA, LDB,
		  LDC, 0, 0, 0, "scale pointers apply to fp8 only" },
		{ E4, E4, LKS_F32, M, N, 0, LDA, LDB, LDC, 0, 0, 0, "an empty gemm" },
		{ E4, E4, LKS_F32, 0, N, K, LDA, LDB, LDC, 0, 0, 0, "an empty gemm" },
#undef E4
#undef E5
	};
	lks_lt_plan p;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		lks_gemm g = fp8_gemm(rows[i].ta, rows[i].ka, rows[i].tb, rows[i].kb, LKS_GEMM_FWD);
		g.M = rows[i].m;
		g.N = rows[i].n;
		g.K = rows[i].k;
		g.a.ld = (size_t)rows[i].lda;
		g.b.ld = (size_t)rows[i].ldb;
		g.ldc = (size_t)rows[i].ldc;
		g.out = rows[i].out;
		g.a.data = (const char *)data_of(rows[i].ta, 0) + rows[i].aoff;
		g.b.data = (const char *)data_of(rows[i].tb, 1) + rows[i].boff;
		g.c = (char *)c_cpu + rows[i].coff;
		cr_assert_eq(lks_lt_plan_of(&g, &p), LKS_LT_REFUSED, "row %zu not refused: %s", i,
		             rows[i].why);
		cr_assert(strstr(p.reason, rows[i].why), "row %zu: reason '%s' lacks '%s'", i,
		          p.reason, rows[i].why);
	}
}

Test(lt_map, a_malformed_descriptor_is_an_error)
{
	lks_gemm g = fp8_gemm(LKS_E4M3, LKS_SCALE_AXIS, LKS_E4M3, LKS_SCALE_TENSOR, LKS_GEMM_FWD);
	lks_lt_plan p;

	g.a.scale = NULL;
	cr_assert_eq(lks_lt_plan_of(&g, &p), -1);
	cr_assert(strstr(lks_errmsg(), "scale is NULL"), "%s", lks_errmsg());
	g = fp8_gemm(LKS_E4M3, LKS_SCALE_TENSOR, LKS_E4M3, LKS_SCALE_TENSOR, LKS_GEMM_FWD);
	g.b.ld = 16;  /* < K */
	cr_assert_eq(lks_lt_plan_of(&g, &p), -1);
	cr_assert(strstr(lks_errmsg(), "ld 16 < K 32"), "%s", lks_errmsg());
	g = fp8_gemm(LKS_E4M3, LKS_SCALE_TENSOR, LKS_E4M3, LKS_SCALE_TENSOR, (lks_gemm_role)7);
	cr_assert_eq(lks_lt_plan_of(&g, &p), -1);
	cr_assert(strstr(lks_errmsg(), "role 7"), "%s", lks_errmsg());
}

Test(lt_map, the_key_tells_what_the_algorithm_depends_on)
{
	lks_gemm g = fp8_gemm(LKS_E4M3, LKS_SCALE_TENSOR, LKS_E4M3, LKS_SCALE_TENSOR,
	                      LKS_GEMM_FWD);
	lks_lt_plan p, q;

	cr_assert_eq(lks_lt_plan_of(&g, &p), 0, "%s", p.reason);
	g.a.data = qa + 256;  /* another tensor, as aligned: the same choice */
	g.c = c_plan;
	cr_assert_eq(lks_lt_plan_of(&g, &q), 0, "%s", q.reason);
	cr_assert(lks_lt_key_eq(&p.key, &q.key));
	g.role = LKS_GEMM_DGRAD;  /* no fast accumulation */
	cr_assert_eq(lks_lt_plan_of(&g, &q), 0, "%s", q.reason);
	cr_assert_not(lks_lt_key_eq(&p.key, &q.key));
	g.role = LKS_GEMM_FWD;
	g.a.data = qa + 16;  /* less aligned */
	cr_assert_eq(lks_lt_plan_of(&g, &q), 0, "%s", q.reason);
	cr_assert_not(lks_lt_key_eq(&p.key, &q.key));
	g.a.data = qa;
	g.a.scaling = LKS_SCALE_AXIS;
	cr_assert_eq(lks_lt_plan_of(&g, &q), 0, "%s", q.reason);
	cr_assert_not(lks_lt_key_eq(&p.key, &q.key));
	g.a.scaling = LKS_SCALE_TENSOR;
	g.M = 4;
	cr_assert_eq(lks_lt_plan_of(&g, &q), 0, "%s", q.reason);
	cr_assert_not(lks_lt_key_eq(&p.key, &q.key));
	g.M = M;
	g.impl = LKS_GEMM_LIBRARY_TIMED;  /* chosen by timing: not the heuristic's entry */
	cr_assert_eq(lks_lt_plan_of(&g, &q), 0, "%s", q.reason);
	cr_assert_not(lks_lt_key_eq(&p.key, &q.key));
	cr_assert(q.key.timed && !p.key.timed);
}

/* A timed choice keeps the fastest candidate that may run, the heuristic's order
   breaking a tie; one with a reduction scheme (ok 0) or whose timing did not run (ms < 0,
   or NaN) is passed over, however fast; none allowed: -1. */
Test(lt_map, a_timed_choice_keeps_the_fastest_allowed_candidate)
{
	double ms[] = { 0.30, 0.21, 0.05, 0.21, -1.0, 0.25 };
	int ok[] = { 1, 1, 0, 1, 1, 1 };
	double nan_first[] = { NAN, 0.4 };
	int both[] = { 1, 1 }, none[] = { 0, 0 };

	cr_assert_eq(lks_lt_pick(ms, ok, 6), 1, "not the fastest allowed, the first of a tie");
	cr_assert_eq(lks_lt_pick(ms, ok, 1), 0);
	ok[1] = 0;
	cr_assert_eq(lks_lt_pick(ms, ok, 6), 3);
	cr_assert_eq(lks_lt_pick(nan_first, both, 2), 1);
	cr_assert_eq(lks_lt_pick(nan_first, none, 2), -1);
	cr_assert_eq(lks_lt_pick(ms, ok, 0), -1);
}

Test(lt_map, alignment_is_the_lowest_set_bit_up_to_256)
{
	static _Alignas(256) uint8_t buf[1024];

	cr_assert_eq(lks_lt_align(buf), 256);
	cr_assert_eq(lks_lt_align(buf + 512), 256);
	cr_assert_eq(lks_lt_align(buf + 128), 128);
	cr_assert_eq(lks_lt_align(buf + 48), 16);
	cr_assert_eq(lks_lt_align(buf + 8), 8);
	cr_assert_eq(lks_lt_align(buf + 1), 1);
}

/* The plans of a run: a GEMM alike in every field with one noted counts in it; one that
   differs in any field (role, shape, type, scaling, algorithm, fallback) is a plan of its
   own, in the order first met; a fallback keeps its reason and no algorithm. */
Test(lt_map, plans_count_alike_gemms_once_each)
{
	lks_gemm g = fp8_gemm(LKS_E4M3, LKS_SCALE_AXIS, LKS_E4M3, LKS_SCALE_AXIS, LKS_GEMM_FWD);
	lks_lt_algo lib = { .id = 21, .tile = 15, .stages = 8, .splitk = 1, .fast_accum = 1 };
	lks_lt_algo refused = { .fallback = 1, .id = 99, .reason = "k is not a multiple of 16" };
	lks_lt_plans s = { 0 };

	for (int i = 0; i < 3; i++)
		cr_assert_eq(lks_lt_plans_note(&s, &g, &lib), 0, "%s", lks_errmsg());
	cr_assert_eq(s.n, 1);
	cr_expect_eq(s.v[0].gemms, 3);
	cr_expect(s.v[0].role == LKS_GEMM_FWD && s.v[0].M == M && s.v[0].N == N && s.v[0].K == K);
	cr_expect(s.v[0].a == LKS_E4M3 && s.v[0].b == LKS_E4M3 && s.v[0].out == LKS_F32);
	cr_expect(s.v[0].scaling_a == LKS_SCALE_AXIS && s.v[0].scaling_b == LKS_SCALE_AXIS);
	cr_expect(s.v[0].algo == 21 && s.v[0].tile == 15 && s.v[0].stages == 8
	          && s.v[0].splitk == 1 && s.v[0].fast_accum == 1 && !s.v[0].fallback);
	cr_expect_str_eq(s.v[0].reason, "");

	g.role = LKS_GEMM_DGRAD;                      /* another role */
	cr_assert_eq(lks_lt_plans_note(&s, &g, &lib), 0);
	g.b.scaling = LKS_SCALE_TENSOR;               /* another scaling */
	cr_assert_eq(lks_lt_plans_note(&s, &g, &lib), 0);
	lib.tile = 16;                                /* another algorithm for the same */
	cr_assert_eq(lks_lt_plans_note(&s, &g, &lib), 0);
	g.K = 64;                                     /* another shape, refused */
	cr_assert_eq(lks_lt_plans_note(&s, &g, &refused), 0);
	cr_assert_eq(lks_lt_plans_note(&s, &g, &refused), 0);
	cr_assert_eq(s.n, 5);
	cr_expect(s.v[1].role == LKS_GEMM_DGRAD && s.v[1].scaling_b == LKS_SCALE_AXIS);
	cr_expect(s.v[2].scaling_b == LKS_SCALE_TENSOR && s.v[2].tile == 15);
	cr_expect_eq(s.v[3].tile, 16);
	cr_expect(s.v[4].fallback && s.v[4].K == 64 && s.v[4].gemms == 2);
	cr_expect_eq(s.v[4].algo, 0, "a fallback ran no algorithm");
	cr_expect_str_eq(s.v[4].reason, "k is not a multiple of 16");
	lks_lt_plans_release(&s);
	cr_expect(s.v == NULL && s.n == 0);
}
