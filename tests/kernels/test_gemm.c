/*
 * test_gemm.c: the CPU GEMM against a naive reference (gemm_ref.h), bit for bit.
 *
 * Every ISA path this CPU supports and several thread counts must give exactly the bits of
 * the reference; paths the CPU cannot run are skipped with a note.
 * reference_order_is_observable shows that these inputs tell one summation order from
 * another, so bitwise agreement means something. (Concurrent calls sharing the workspace
 * cache: test_gemm_concurrent.c.)
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_ref.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_kernel.h"
#include "kernels/err.h"

static lks_pool *pools[8];  /* by thread count; NULL for 1 */
static const int thread_counts[] = { 1, 2, 3, 7 };
#define NTHREADS (int)(sizeof(thread_counts) / sizeof(thread_counts[0]))

static void pools_init(void)
{
	for (int i = 0; i < NTHREADS; i++)
		if (thread_counts[i] > 1)
			cr_assert_eq(lks_pool_create(thread_counts[i], &pools[thread_counts[i]]), 0,
			             "%s", lks_errmsg());
}

static void pools_fini(void)
{
	for (int i = 0; i < 8; i++) {
		lks_pool_free(pools[i]);
		pools[i] = NULL;
	}
}

static int isa_usable(lks_isa isa)
{
	static int noted[LKS_ISA_COUNT];

	if (lks_isa_supported(isa))
		return 1;
	if (!noted[isa]++)
		fprintf(stderr, "test_gemm: this CPU cannot run the '%s' path; its checks are "
		        "skipped\n", lks_isa_name(isa));
	return 0;
}

/* Runs g on one path and thread count and compares C bit for bit with the reference acc,
   and the ldc padding of C with what was there. */
static void check_one(lks_gemm *g, const float *acc, lks_isa isa, int nthreads,
                      const char *what)
{
	size_t esz = lks_dtype_size(g->out), n = (size_t)g->M * g->ldc;
	unsigned char *c = malloc(n * esz + 1);
	size_t bad = 0;

	cr_assert_not_null(c);
	memset(c, 0xff, n * esz);  /* NaN everywhere: C must be written, never read first */
	g->c = c;
	cr_assert_eq(lks_gemm_run_isa(pools[nthreads], g, isa), 0, "%s: %s", what, lks_errmsg());
	for (int i = 0; i < g->M; i++)
		for (size_t j = 0; j < g->ldc; j++) {
			size_t idx = (size_t)i * g->ldc + j;
			uint32_t got = g->out == LKS_BF16 ? ((uint16_t *)c)[idx] : ((uint32_t *)c)[idx];
			uint32_t want = (int)j < g->N ? ref_out(g, acc, i, (int)j)
			                : (g->out == LKS_BF16 ? 0xffffu : 0xffffffffu);

			if (got != want && bad++ < 3)
				cr_log_error("%s: C(%d,%zu) = 0x%08x, want 0x%08x", what, i, j, got, want);
		}
	free(c);
	cr_assert_eq(bad, 0, "%s: %zu elements differ from the reference", what, bad);
}

typedef struct shape { int M, N, K, pada, padb, padc; } shape;
typedef struct types { lks_dtype a, b; } types;

static const types type_pairs[] = {
	{ LKS_F32, LKS_F32 }, { LKS_BF16, LKS_BF16 }, { LKS_E4M3, LKS_E4M3 },
	{ LKS_E5M2, LKS_E4M3 }, { LKS_E4M3, LKS_E5M2 }, { LKS_E5M2, LKS_E5M2 },
};
#define NTYPES (int)(sizeof(type_pairs) / sizeof(type_pairs[0]))

static const lks_scaling scalings[][2] = {
	{ LKS_SCALE_NONE, LKS_SCALE_NONE }, { LKS_SCALE_TENSOR, LKS_SCALE_TENSOR },
	{ LKS_SCALE_AXIS, LKS_SCALE_AXIS }, { LKS_SCALE_TENSOR, LKS_SCALE_AXIS },
	{ LKS_SCALE_NONE, LKS_SCALE_AXIS },
};
#define NSCALINGS (int)(sizeof(scalings) / sizeof(scalings[0]))

/* Every type pair x scaling x output x path x thread count for one shape. The scalar path
   (libm fmaf, a call per multiply-add) sees every combination only when the shape is
   small; above scalar_limit multiply-adds it runs once per type pair, the scaling, output
   and thread count changing from pair to pair, to keep the test within a minute. With
   every_path, every path does so above scalar_limit; pair_step > 1 takes every
   pair_step-th type pair only. */
static void check_shape_limits(shape sh, long scalar_limit, int every_path, int pair_step)
{
	uint64_t seed = 0x1234u + (uint64_t)sh.M * 1000003u + (uint64_t)sh.N * 1009u + sh.K;
	long work = (long)sh.M * sh.N * sh.K;

	for (int tp = 0; tp < NTYPES; tp += pair_step) {
		lks_gemm g = {
			.M = sh.M, .N = sh.N, .K = sh.K,
			.a = { .dtype = type_pairs[tp].a, .ld = (size_t)sh.K + sh.pada },
			.b = { .dtype = type_pairs[tp].b, .ld = (size_t)sh.K + sh.padb },
			.ldc = (size_t)sh.N + sh.padc,
		};
		float *acc = malloc(((size_t)sh.M * sh.N + 1) * sizeof(float));
		float *sa = make_scales(sh.M, &seed), *sb = make_scales(sh.N, &seed);
		void *a = make_operand(g.a.dtype, sh.M, sh.K, g.a.ld, &seed);
		void *b = make_operand(g.b.dtype, sh.N, sh.K, g.b.ld, &seed);

		g.a.data = a;
		g.b.data = b;
		ref_acc(&g, acc);
		for (int sc = 0; sc < NSCALINGS; sc++)
			for (int out = 0; out < 2; out++)
				for (int isa = 0; isa < LKS_ISA_COUNT; isa++)
					for (int t = 0; t < NTHREADS; t++) {
						char what[160];

						if (!isa_usable((lks_isa)isa))
							continue;
						if ((isa == LKS_ISA_SCALAR || every_path) && work > scalar_limit
						    && (sc != tp % NSCALINGS || out != tp % 2
						        || t != tp % NTHREADS))
							continue;
						g.a.scaling = scalings[sc][0];
						g.b.scaling = scalings[sc][1];
						g.a.scale = g.a.scaling ? sa : NULL;
						g.b.scale = g.b.scaling ? sb : NULL;
						g.out = out ? LKS_BF16 : LKS_F32;
						snprintf(what, sizeof(what),
						         "%dx%dx%d %s.%s scaling %d/%d out %s, %s, %d threads",
						         sh.M, sh.N, sh.K, lks_dtype_name(g.a.dtype),
						         lks_dtype_name(g.b.dtype), (int)g.a.scaling,
						         (int)g.b.scaling, lks_dtype_name(g.out),
						         lks_isa_name((lks_isa)isa), thread_counts[t]);
						check_one(&g, acc, (lks_isa)isa, thread_counts[t], what);
					}
		free(a);
		free(b);
		free(sa);
		free(sb);
		free(acc);
	}
}

static void check_shape(shape sh, long scalar_limit)
{
	check_shape_limits(sh, scalar_limit, 0, 1);
}

TestSuite(gemm, .init = pools_init, .fini = pools_fini);

Test(gemm, matches_reference_small)
{
	static const shape shapes[] = {
		{ 1, 1, 1, 0, 0, 0 },
		{ 2, 3, 5, 1, 0, 2 },      /* smaller than any tile */
		{ 6, 16, 8, 0, 0, 0 },     /* exactly one AVX2 tile */
		{ 7, 13, 17, 3, 5, 1 },    /* primes, every dimension an edge */
		{ 12, 32, 64, 0, 0, 0 },   /* whole tiles on every path */
		{ 1, 100, 33, 0, 7, 0 },   /* one row */
		{ 100, 1, 33, 2, 0, 3 },   /* one column */
		{ 31, 37, 41, 0, 0, 0 },
	};

	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		check_shape(shapes[i], 1L << 40);
}

Test(gemm, matches_reference_medium, .timeout = 120)
{
	static const shape shapes[] = {
		{ 97, 101, 103, 1, 2, 3 },
		{ 20, 35, 1000, 4, 0, 1 },  /* several K blocks, the last one partial */
		{ 9, 17, 513, 0, 0, 0 },    /* two whole K blocks and one step more */
		{ 1030, 9, 7, 0, 0, 5 },    /* more rows than one task block holds */
		{ 9, 1030, 7, 0, 1, 0 },    /* more columns than one task block holds */
	};

	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		check_shape(shapes[i], 1L << 20);
}

/* Under AddressSanitizer (ci/sanitize), where this shape took 40 s, a tenth of all the
   quick tests (the reference's 70 M multiply-adds a type pair, each load checked), two
   type pairs, float32 and E5M2 x E4M3, each seen once on each path, as the scalar path
   sees every pair here: the memory a call touches is the shape's and its operands'
   widths', whatever the scaling, output or threads. */
Test(gemm, matches_reference_large, .timeout = 240)
{
#ifdef __SANITIZE_ADDRESS__
	_Static_assert(NTYPES == 6, "pairs 0 and 3: F32 x F32 and E5M2 x E4M3");
	check_shape_limits((shape){ 257, 263, 1031, 5, 3, 7 }, 0, 1, 3);
#else
	check_shape((shape){ 257, 263, 1031, 5, 3, 7 }, 0);
#endif
}

/* The same products summed in another order, or with another rounding, give other bits
   for these inputs; so a kernel that reordered the chain would fail the tests above. */
Test(gemm, reference_order_is_observable)
{
	enum { M = 8, N = 8, K = 1000 };
	uint64_t seed = 99;
	float *a = make_operand(LKS_F32, M, K, K, &seed);  /* (M, K) */
	float *b = make_operand(LKS_F32, N, K, K, &seed);  /* (N, K) */
	float c[M * N], asc[M * N];
	int rev = 0, split = 0, unfused = 0;
	lks_gemm g = {
		.M = M, .N = N, .K = K, .a = { LKS_F32, a, K, LKS_SCALE_NONE, NULL },
		.b = { LKS_F32, b, K, LKS_SCALE_NONE, NULL }, .out = LKS_F32, .c = c, .ldc = N,
	};

	ref_acc(&g, asc);
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			const float *x = a + i * K, *y = b + j * K;
			float r = 0.0f, u = 0.0f, lanes[8] = { 0 }, l = 0.0f;

			for (int k = K - 1; k >= 0; k--)
				r = fmaf(x[k], y[k], r);
			for (int k = 0; k < K; k++) {
				lanes[k % 8] = fmaf(x[k], y[k], lanes[k % 8]);  /* a k-vectorized kernel */
				u = u + x[k] * y[k];                           /* no fused multiply-add */
			}
			for (int t = 0; t < 8; t++)
				l += lanes[t];
			rev += lks_f32_bits(r) != lks_f32_bits(asc[i * N + j]);
			split += lks_f32_bits(l) != lks_f32_bits(asc[i * N + j]);
			unfused += lks_f32_bits(u) != lks_f32_bits(asc[i * N + j]);
		}
	cr_expect_gt(rev, M * N / 4, "reversed order differs in only %d of %d", rev, M * N);
	cr_expect_gt(split, M * N / 4, "8 partial sums differ in only %d of %d", split, M * N);
	cr_expect_gt(unfused, M * N / 4, "mul+add differs in only %d of %d", unfused, M * N);

	/* and by hand: 1 + 1e8 - 1e8 is 0 in this order, 1 in the reverse one */
	{
		float x[3] = { 1.0f, 1e8f, -1e8f }, y[3] = { 1.0f, 1.0f, 1.0f }, z = -1.0f;
		lks_gemm h = {
			.M = 1, .N = 1, .K = 3, .a = { LKS_F32, x, 3, LKS_SCALE_NONE, NULL },
			.b = { LKS_F32, y, 3, LKS_SCALE_NONE, NULL }, .out = LKS_F32, .c = &z, .ldc = 1,
		};

		for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
			if (!isa_usable((lks_isa)isa))
				continue;
			z = -1.0f;
			cr_assert_eq(lks_gemm_run_isa(NULL, &h, (lks_isa)isa), 0, "%s", lks_errmsg());
			cr_expect_eq(lks_f32_bits(z), 0u, "%s: 1 + 1e8 - 1e8 gave %g, want +0",
			             lks_isa_name((lks_isa)isa), (double)z);
		}
	}
	for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
		if (!isa_usable((lks_isa)isa))
			continue;
		cr_assert_eq(lks_gemm_run_isa(pools[2], &g, (lks_isa)isa), 0, "%s", lks_errmsg());
		cr_expect_eq(memcmp(c, asc, sizeof(c)), 0, "%s differs from the ascending chain",
		             lks_isa_name((lks_isa)isa));
	}
	free(a);
	free(b);
}

/* An exact -0 product starts the chain at +0 on every path: fma(-1, 0, +0) = +0. */
Test(gemm, negative_zero_products)
{
	float x[2] = { -1.0f, 0.0f }, y[2] = { 0.0f, -0.0f }, z;
	lks_gemm g = {
		.M = 1, .N = 1, .K = 2, .a = { LKS_F32, x, 2, LKS_SCALE_NONE, NULL },
		.b = { LKS_F32, y, 2, LKS_SCALE_NONE, NULL }, .out = LKS_F32, .c = &z, .ldc = 1,
	};

	for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
		if (!isa_usable((lks_isa)isa))
			continue;
		z = 1.0f;
		cr_assert_eq(lks_gemm_run_isa(NULL, &g, (lks_isa)isa), 0, "%s", lks_errmsg());
		cr_expect_eq(lks_f32_bits(z), 0u, "%s: got 0x%08x, want +0", lks_isa_name((lks_isa)isa),
		             lks_f32_bits(z));
	}
}

static void expect_fail(lks_gemm g, lks_isa isa, const char *needle)
{
	int rc = lks_gemm_run_isa(NULL, &g, isa);

	cr_expect_neq(rc, 0, "expected a failure mentioning '%s'", needle);
	if (rc)
		cr_expect_not_null(strstr(lks_errmsg(), needle), "message '%s' lacks '%s'",
		                   lks_errmsg(), needle);
}

Test(gemm, bad_arguments)
{
	float a[12] = { 0 }, b[12] = { 0 }, c[16], one = 1.0f;
	lks_gemm ok = {
		.M = 3, .N = 3, .K = 4, .a = { LKS_F32, a, 4, LKS_SCALE_NONE, NULL },
		.b = { LKS_F32, b, 4, LKS_SCALE_NONE, NULL }, .out = LKS_F32, .c = c, .ldc = 3,
	};
	lks_gemm g;

	cr_assert_eq(lks_gemm_run_isa(NULL, &ok, LKS_ISA_SCALAR), 0, "%s", lks_errmsg());
	cr_expect_neq(lks_gemm_run(NULL, NULL), 0);
	g = ok; g.M = -1; expect_fail(g, LKS_ISA_SCALAR, "negative");
	g = ok; g.K = -2; expect_fail(g, LKS_ISA_SCALAR, "negative");
	g = ok; g.a.ld = 3; expect_fail(g, LKS_ISA_SCALAR, "ld");
	g = ok; g.b.ld = 2; expect_fail(g, LKS_ISA_SCALAR, "ld");
	g = ok; g.ldc = 2; expect_fail(g, LKS_ISA_SCALAR, "ldc");
	g = ok; g.a.dtype = (lks_dtype)9; expect_fail(g, LKS_ISA_SCALAR, "dtype");
	g = ok; g.out = LKS_E4M3; expect_fail(g, LKS_ISA_SCALAR, "e4m3");
	g = ok; g.a.data = NULL; expect_fail(g, LKS_ISA_SCALAR, "NULL");
	g = ok; g.b.data = NULL; expect_fail(g, LKS_ISA_SCALAR, "NULL");
	g = ok; g.c = NULL; expect_fail(g, LKS_ISA_SCALAR, "NULL");
	g = ok; g.a.scaling = LKS_SCALE_AXIS; expect_fail(g, LKS_ISA_SCALAR, "scale");
	g = ok; g.b.scaling = (lks_scaling)7; expect_fail(g, LKS_ISA_SCALAR, "scaling");
	g = ok; g.b.scaling = LKS_SCALE_TENSOR; g.b.scale = &one;
	cr_expect_eq(lks_gemm_run_isa(NULL, &g, LKS_ISA_SCALAR), 0, "%s", lks_errmsg());
	expect_fail(ok, (lks_isa)LKS_ISA_COUNT, "ISA");
	for (int isa = 0; isa < LKS_ISA_COUNT; isa++)
		if (!lks_isa_supported((lks_isa)isa))
			expect_fail(ok, (lks_isa)isa, lks_isa_name((lks_isa)isa));
}

/* A scale of 0 (amax = inf), NaN (amax = NaN) or below 0 is not an error: the product
   of the epilogue carries it into C, where the run's non-finite checks find it. Every
   element of A.B^T here is 4 (ones over K = 4), so C = 4 * (1/scale_a) exactly. */
Test(gemm, nonfinite_scales_propagate)
{
	float a[8] = { 1, 1, 1, 1, 1, 1, 1, 1 }, b[8] = { 1, 1, 1, 1, 1, 1, 1, 1 }, c[4];
	float sa[2] = { 0.0f, NAN }, sb = -0.5f;

	for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
		lks_gemm g = {
			.M = 2, .N = 2, .K = 4, .a = { LKS_F32, a, 4, LKS_SCALE_AXIS, sa },
			.b = { LKS_F32, b, 4, LKS_SCALE_TENSOR, &sb }, .out = LKS_F32, .c = c, .ldc = 2,
		};

		if (!lks_isa_supported((lks_isa)isa))
			continue;
		cr_assert_eq(lks_gemm_run_isa(NULL, &g, (lks_isa)isa), 0, "%s", lks_errmsg());
		/* row 0: 4 * (inf * -2) = -inf; row 1: NaN */
		cr_expect(isinf(c[0]) && c[0] < 0 && isinf(c[1]) && c[1] < 0, "%s: %g %g",
		          lks_isa_name((lks_isa)isa), (double)c[0], (double)c[1]);
		cr_expect(isnan(c[2]) && isnan(c[3]), "%s: %g %g", lks_isa_name((lks_isa)isa),
		          (double)c[2], (double)c[3]);
	}
}

Test(gemm, empty_sizes)
{
	float a[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, sa[3] = { 2, 4, 8 }, sb = 0.5f;
	float c[3 * 5];
	uint16_t h[3 * 5];
	uint32_t sentinel = 0x7fc0abcdu;

	for (int isa = 0; isa < LKS_ISA_COUNT; isa++) {
		lks_gemm g = {
			.M = 3, .N = 4, .K = 0, .a = { LKS_E4M3, NULL, 0, LKS_SCALE_AXIS, sa },
			.b = { LKS_BF16, NULL, 0, LKS_SCALE_TENSOR, &sb }, .out = LKS_F32, .c = c,
			.ldc = 5,
		};

		if (!isa_usable((lks_isa)isa))
			continue;
		/* K = 0: C = 0 * s = +0 everywhere, the padding column untouched */
		for (int t = 0; t < NTHREADS; t++) {
			for (int i = 0; i < 15; i++)
				c[i] = lks_bits_f32(sentinel);
			cr_assert_eq(lks_gemm_run_isa(pools[thread_counts[t]], &g, (lks_isa)isa), 0, "%s",
			             lks_errmsg());
			for (int i = 0; i < 15; i++)
				cr_expect_eq(lks_f32_bits(c[i]), i % 5 == 4 ? sentinel : 0u,
				             "%s: K=0 C[%d] = 0x%08x", lks_isa_name((lks_isa)isa), i,
				             lks_f32_bits(c[i]));
		}
		g.out = LKS_BF16;
		g.c = h;
		memset(h, 0xee, sizeof(h));
		cr_assert_eq(lks_gemm_run_isa(pools[3], &g, (lks_isa)isa), 0, "%s", lks_errmsg());
		for (int i = 0; i < 15; i++)
			cr_expect_eq(h[i], i % 5 == 4 ? 0xeeee : 0, "%s: K=0 bf16 C[%d] = 0x%04x",
			             lks_isa_name((lks_isa)isa), i, h[i]);

		/* M = 0 or N = 0: nothing to do, nothing written, NULL pointers allowed */
		c[0] = lks_bits_f32(sentinel);
		g = (lks_gemm){ .M = 0, .N = 4, .K = 2, .a = { LKS_F32, NULL, 2, LKS_SCALE_NONE, NULL },
		                .b = { LKS_F32, a, 2, LKS_SCALE_NONE, NULL }, .out = LKS_F32,
		                .c = NULL, .ldc = 4 };
		cr_expect_eq(lks_gemm_run_isa(pools[2], &g, (lks_isa)isa), 0, "%s", lks_errmsg());
		g = (lks_gemm){ .M = 4, .N = 0, .K = 2, .a = { LKS_F32, a, 2, LKS_SCALE_NONE, NULL },
		                .b = { LKS_F32, NULL, 2, LKS_SCALE_NONE, NULL }, .out = LKS_F32,
		                .c = c, .ldc = 0 };
		cr_expect_eq(lks_gemm_run_isa(pools[2], &g, (lks_isa)isa), 0, "%s", lks_errmsg());
		cr_expect_eq(lks_f32_bits(c[0]), sentinel, "N = 0 wrote to C");
	}
}

/* The AVX2 packer against the portable one, for every sliver width a kernel uses: 6 and 16
   (AVX2), 32 (AVX-512, which shares this packer and which this CPU may not run), 4
   (scalar, which the AVX2 packer hands to the portable one), with a partial last sliver
   and a k count that is not a multiple of 8. */
Test(gemm, packers_agree)
{
	static const int steps[] = { 4, 6, 16, 32 };
	static const lks_dtype dts[] = { LKS_F32, LKS_BF16, LKS_E4M3, LKS_E5M2 };
	enum { ROWS = 45, K = 70, LD = 75, R0 = 3, K0 = 2, KC = 61 };
	uint64_t seed = 5;

	if (!isa_usable(LKS_ISA_AVX2))
		return;
	for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
		void *x = make_operand(dts[d], R0 + ROWS, K, LD, &seed);

		for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
			int step = steps[s], rows = ROWS - (int)s;  /* rows % step != 0 somewhere */
			size_t n = (size_t)(rows + step - 1) / step * step * KC;
			float *want = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));

			cr_assert(want && got);
			memset(got, 0xff, n * sizeof(float));
			lks_gemm_pack_generic(dts[d], x, LD, R0, rows, K0, KC, step, want);
			lks_gemm_pack_avx2(dts[d], x, LD, R0, rows, K0, KC, step, got);
			cr_expect_eq(memcmp(want, got, n * sizeof(float)), 0,
			             "%s, step %d: the AVX2 panel differs", lks_dtype_name(dts[d]), step);
			/* and the portable panel is the operand, widened, where the layout says,
			   with +0.0f in the padding rows */
			for (int r = 0; r < (rows + step - 1) / step * step; r++)
				for (int k = 0; k < KC; k++) {
					lks_operand op = { .dtype = dts[d], .data = x, .ld = LD };
					float v = want[(size_t)(r / step) * KC * step + (size_t)k * step + r % step];
					float e = r < rows ? ref_elem(&op, R0 + r, K0 + k) : 0.0f;

					cr_assert_eq(lks_f32_bits(v), lks_f32_bits(e), "%s, step %d: panel (%d, %d)",
					             lks_dtype_name(dts[d]), step, r, k);
				}
			free(want);
			free(got);
		}
		free(x);
	}
}

Test(gemm, dtype_names)
{
	cr_expect_str_eq(lks_dtype_name(LKS_F32), "f32");
	cr_expect_str_eq(lks_dtype_name(LKS_BF16), "bf16");
	cr_expect_str_eq(lks_dtype_name(LKS_E4M3), "e4m3");
	cr_expect_str_eq(lks_dtype_name(LKS_E5M2), "e5m2");
	cr_expect_eq(lks_dtype_size(LKS_F32), 4);
	cr_expect_eq(lks_dtype_size(LKS_BF16), 2);
	cr_expect_eq(lks_dtype_size(LKS_E4M3), 1);
	cr_expect_eq(lks_dtype_size(LKS_E5M2), 1);
}
